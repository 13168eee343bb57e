/* http_connect.c - the HTTP CONNECT request and response (http_connect.h).
 * Pure. */
#include <stdio.h>
#include <string.h>

#include "http_connect.h"

/* Bytes a host name or address literal may hold in a request target:
 * printable, no space, and none of the characters that would end or
 * redirect the authority. */
static int
host_ok(const char *host)
{
	const unsigned char *p = (const unsigned char *)host;

	if (*p == '\0')
		return 0;
	for (; *p != '\0'; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == '/' || *p == '@' || *p == '?' ||
		    *p == '#' || *p == '[' || *p == ']')
			return 0;
	return 1;
}

/* base64 (RFC 4648 alphabet, padded): what a Basic token may hold. */
static int
token_ok(const char *t)
{
	if (*t == '\0')
		return 0;
	for (; *t != '\0'; t++)
		if (!((*t >= 'A' && *t <= 'Z') || (*t >= 'a' && *t <= 'z') ||
		    (*t >= '0' && *t <= '9') || *t == '+' || *t == '/' || *t == '='))
			return 0;
	return 1;
}

int
http_connect_request(char *buf, size_t size, const char *host, uint16_t port,
    const char *basic)
{
	const char *open = "", *close = "";
	int n;

	if (host == NULL || !host_ok(host) || port == 0 || (basic && !token_ok(basic)))
		return -1;
	if (strchr(host, ':') != NULL) {
		open = "[";
		close = "]";
	}
	n = snprintf(buf, size, "CONNECT %s%s%s:%u HTTP/1.1\r\nHost: %s%s%s:%u\r\n"
	    "%s%s%s\r\n", open, host, close, (unsigned)port, open, host, close,
	    (unsigned)port, basic ? "Proxy-Authorization: Basic " : "", basic ? basic : "",
	    basic ? "\r\n" : "");
	if (n < 0 || (size_t)n >= size)
		return -1;
	return n;
}

/* A line of buf starting at off: its end (the offset of its LF) and its
 * length without the line ending.  0 if no LF yet; -1 if a CR stands
 * anywhere but before the LF or a control byte other than TAB appears. */
static int
line_end(const uint8_t *buf, size_t len, size_t off, size_t *lf, size_t *text)
{
	size_t i;

	for (i = off; i < len; i++) {
		uint8_t c = buf[i];

		if (c == '\n') {
			*lf = i;
			*text = i - off;
			if (i > off && buf[i - 1] == '\r')
				(*text)--;
			return 1;
		}
		if (c == '\r') {
			if (i + 1 < len && buf[i + 1] != '\n')
				return -1;
		} else if ((c < 0x20 && c != '\t') || c == 0x7f) {
			return -1;
		}
	}
	return 0;
}

/* "HTTP/1.x SSS[ reason]", text bytes long (reason may be empty); the
 * status, or -1. */
static int
status_line(const uint8_t *p, size_t text)
{
	static const char proto[] = "HTTP/1.";
	size_t plen = sizeof(proto) - 1;
	int s;

	if (text < plen + 5 || memcmp(p, proto, plen) != 0 ||
	    (p[plen] != '0' && p[plen] != '1') || p[plen + 1] != ' ')
		return -1;
	p += plen + 2;
	text -= plen + 2;
	if (text < 3 || p[0] < '1' || p[0] > '5' || p[1] < '0' || p[1] > '9' ||
	    p[2] < '0' || p[2] > '9' || (text > 3 && p[3] != ' '))
		return -1;
	s = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
	return s;
}

/* A prefix of a status line that cannot become a valid one: what we got
 * so far does not start like "HTTP/1.0 " or "HTTP/1.1 ". */
static int
bad_start(const uint8_t *buf, size_t len)
{
	static const char proto[] = "HTTP/1.";
	size_t n = len < sizeof(proto) - 1 ? len : sizeof(proto) - 1;

	if (memcmp(buf, proto, n) != 0)
		return 1;
	if (len > n && buf[n] != '0' && buf[n] != '1')
		return 1;
	return len > n + 1 && buf[n + 1] != ' ';
}

/* A header field line: "name: value" with a token name, or a folded
 * continuation (starting with SP or TAB). */
static int
field_ok(const uint8_t *p, size_t text)
{
	size_t i;

	if (p[0] == ' ' || p[0] == '\t')
		return 1;
	for (i = 0; i < text && p[i] != ':'; i++)
		if (p[i] <= 0x20 || p[i] >= 0x7f)
			return 0;
	return i > 0 && i < text;
}

enum http_connect_result
http_connect_response(const uint8_t *buf, size_t len, size_t *consumed, int *status)
{
	size_t lim = len < HTTP_CONNECT_MAX_HEADER ? len : HTTP_CONNECT_MAX_HEADER;
	size_t off, lf, text;
	int r, s;

	if (bad_start(buf, lim))
		return HC_BAD;
	r = line_end(buf, lim, 0, &lf, &text);
	if (r < 0)
		return HC_BAD;
	if (r == 0)
		return len >= HTTP_CONNECT_MAX_HEADER ? HC_BAD : HC_MORE;
	s = status_line(buf, text);
	if (s < 0)
		return HC_BAD;
	if (s < 200 || s > 299) {
		*status = s;
		return HC_REFUSED;
	}
	for (off = lf + 1;; off = lf + 1) {
		r = line_end(buf, lim, off, &lf, &text);
		if (r < 0)
			return HC_BAD;
		if (r == 0)
			return len >= HTTP_CONNECT_MAX_HEADER ? HC_BAD : HC_MORE;
		if (text == 0) {
			*consumed = lf + 1;
			*status = s;
			return HC_OK;
		}
		if (!field_ok(buf + off, text))
			return HC_BAD;
	}
}

const char *
http_connect_result_name(enum http_connect_result r)
{
	switch (r) {
	case HC_MORE:
		return "more";
	case HC_OK:
		return "ok";
	case HC_REFUSED:
		return "refused";
	case HC_BAD:
		return "bad";
	}
	return "?";
}

void
http_connect_refusal(int status, bool sent_credentials, uint16_t port, char *buf, size_t len)
{
	switch (status) {
	case 407:
		snprintf(buf, len, sent_credentials ? "the proxy refused the credentials of "
		    "proxy-credentials (407 Proxy Authentication Required): check the user "
		    "and password in that file" : "the proxy asks for credentials (407 Proxy "
		    "Authentication Required): put user:password into a file only root and "
		    "toud may read, and name it with proxy-credentials");
		break;
	case 403:
		snprintf(buf, len, "the proxy does not allow a connection to port %u (403 "
		    "Forbidden): proxies mostly allow only 443; ask for 443 (the server's "
		    "listen-tcp, this endpoint-tcp) or for port %u to be allowed",
		    (unsigned)port, (unsigned)port);
		break;
	default:
		snprintf(buf, len, "the proxy refused with status %d", status);
		break;
	}
}
