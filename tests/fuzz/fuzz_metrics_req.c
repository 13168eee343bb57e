/* fuzz_metrics_req.c - libFuzzer harness for the reading of a request to
 * the metrics endpoint (metrics_req.c): the bytes any local user, or any
 * host that reaches the address, sends.  The head is copied to a buffer of
 * exactly its size, so that a read past it is caught; every status is one
 * of those promised, and a 200 never gives the whole text without the
 * token. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
	if (!cond)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char token[] = "0123456789abcdef0123";
	char out[METRICS_TOKEN_MAX + 1];
	struct metrics_req r;
	char *buf;
	int s;

	if (!(buf = malloc(size ? size : 1)))
		return 0;
	memcpy(buf, data, size);
	s = metrics_req_check(buf, size, size & 1, (size & 2) ? token : NULL, &r);
	check(s == 200 || s == 400 || s == 401 || s == 403 || s == 404 || s == 501);
	if (s == 200 && !(size & 2))
		check(!r.full);
	if (metrics_token_parse(buf, size, out) == 0)
		check(strlen(out) >= METRICS_TOKEN_MIN && strlen(out) <= METRICS_TOKEN_MAX);
	free(buf);
	return 0;
}
