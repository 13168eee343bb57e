/* fuzz_http_connect.c - libFuzzer harness for the reading of an HTTP
 * proxy's CONNECT response: the first bytes a proxy (or whatever answers
 * in its place) sends.  Every verdict is checked against its promise, a
 * verdict, once reached, must not change as more bytes arrive, and a
 * header that does not end within the limit is never waited on. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_connect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
	if (!cond)
		abort();
}

/* The header really ends at consumed: an empty line just before it, and
 * the response starts with a 2xx status line. */
static void
check_ok(const uint8_t *data, size_t size, size_t consumed, int status)
{
	check(consumed >= 2 && consumed <= size && consumed <= HTTP_CONNECT_MAX_HEADER);
	check(data[consumed - 1] == '\n');
	check(data[consumed - 2] == '\n' ||
	    (consumed >= 3 && data[consumed - 2] == '\r' && data[consumed - 3] == '\n'));
	check(status >= 200 && status <= 299);
	check(memcmp(data, "HTTP/1.", 7) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum http_connect_result whole, part;
	size_t consumed = 0, c2 = 0, cut;
	int status = 0, s2 = 0;
	char req[300];
	char host[64];

	whole = http_connect_response(data, size, &consumed, &status);
	check(http_connect_result_name(whole)[0] != '?');
	if (whole == HC_OK)
		check_ok(data, size, consumed, status);
	if (whole == HC_REFUSED)
		check(status >= 100 && status <= 599 && (status < 200 || status > 299));
	if (whole == HC_MORE)
		check(size < HTTP_CONNECT_MAX_HEADER);

	/* A few prefixes: each says more, or already the final verdict. */
	for (cut = 0; cut < size; cut += 1 + cut / 3) {
		part = http_connect_response(data, cut, &c2, &s2);
		check(part == HC_MORE || part == whole);
		if (part == HC_OK)
			check(c2 == consumed && s2 == status);
		if (part == HC_REFUSED)
			check(s2 == status);
	}

	/* No end of the header within HTTP_CONNECT_MAX_HEADER bytes: the
	 * input, still wanting more, followed by header lines to past the
	 * limit, is refused (its status line may have been completed by
	 * them) or bad, never more. */
	if (whole == HC_MORE) {
		static const char pad[] = "X-Pad: 0123456789abcdef\r\n";
		static uint8_t big[HTTP_CONNECT_MAX_HEADER + 64];
		size_t n = size;

		memcpy(big, data, size);
		while (n + sizeof(pad) - 1 <= sizeof(big)) {
			memcpy(big + n, pad, sizeof(pad) - 1);
			n += sizeof(pad) - 1;
		}
		part = http_connect_response(big, n, &c2, &s2);
		check(part == HC_BAD || part == HC_REFUSED);
		if (part == HC_REFUSED)
			check(s2 >= 100 && s2 <= 599 && (s2 < 200 || s2 > 299));
	}

	/* The request with the input as host: it either is refused or is
	 * exactly one request line and one Host line. */
	if (size < sizeof(host)) {
		int n;

		memcpy(host, data, size);
		host[size] = '\0';
		n = http_connect_request(req, sizeof(req), host, (uint16_t)(size + 1), NULL);
		if (n >= 0) {
			check((size_t)n == strlen(req));
			check(memcmp(req, "CONNECT ", 8) == 0);
			check(strstr(req, "\r\n\r\n") == req + n - 4);
			check(strchr(req, '\n') < strstr(req, "Host: "));
		}
	}
	return 0;
}
