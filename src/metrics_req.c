/* metrics_req.c - what to answer a scraper of the metrics endpoint
 * (metrics_req.h).  The request head is read as HTTP/1.1 (RFC 9112) reads
 * it, but only what the answer depends on: the request line, Host and
 * Authorization; other headers are skipped. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "metrics_req.h"

/* RFC 6750 b64token: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/",
 * then "=" padding. */
static bool
metrics_token_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || (ch && strchr("-._~+/", ch));
}

/* A b64token of n bytes at s. */
static bool
metrics_token_ok(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && metrics_token_char(s[i]))
		i++;
	if (i == 0)
		return false;
	while (i < n && s[i] == '=')
		i++;
	return i == n;
}

int
metrics_token_parse(const char *text, size_t n, char *out)
{
	if (n > 0 && text[n - 1] == '\n')
		n--;
	if (n < METRICS_TOKEN_MIN || n > METRICS_TOKEN_MAX || !metrics_token_ok(text, n))
		return -EINVAL;
	memcpy(out, text, n);
	out[n] = '\0';
	return 0;
}

/* Host (n bytes at h, its port, if any, included) names this host's
 * loopback: localhost, 127.0.0.0/8 or [::1]. */
static bool
metrics_host_loopback(const char *h, size_t n)
{
	char name[64];
	const char *end;
	struct in_addr a4;
	struct in6_addr a6;
	size_t k;

	if (n > 0 && h[0] == '[') {
		if (!(end = memchr(h, ']', n)) || (size_t)(end - h) - 1 >= sizeof(name))
			return false;
		k = (size_t)(end - h) - 1;
		memcpy(name, h + 1, k);
		name[k] = '\0';
		if (end + 1 != h + n && end[1] != ':')
			return false;
		return inet_pton(AF_INET6, name, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	end = memchr(h, ':', n);
	k = end ? (size_t)(end - h) : n;
	if (k == 0 || k >= sizeof(name))
		return false;
	memcpy(name, h, k);
	name[k] = '\0';
	if (strcasecmp(name, "localhost") == 0 || strcasecmp(name, "localhost.") == 0)
		return true;
	return inet_pton(AF_INET, name, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

/* The line at *p (up to end) without its CR LF, in *line and *n; *p moves
 * past it.  false at the end. */
static bool
metrics_next_line(const char **p, const char *end, const char **line, size_t *n)
{
	const char *lf;

	if (*p >= end)
		return false;
	if (!(lf = memchr(*p, '\n', (size_t)(end - *p))))
		lf = end;
	*line = *p;
	*n = (size_t)(lf - *p);
	if (*n > 0 && (*p)[*n - 1] == '\r')
		(*n)--;
	*p = lf < end ? lf + 1 : end;
	return true;
}

/* value of a header line "name: value" whose name is want, trimmed. */
static bool
metrics_header(const char *line, size_t n, const char *want, const char **v, size_t *vn)
{
	size_t w = strlen(want);

	if (n <= w || line[w] != ':' || strncasecmp(line, want, w) != 0)
		return false;
	line += w + 1;
	n -= w + 1;
	while (n > 0 && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	*v = line;
	*vn = n;
	return true;
}

int
metrics_req_check(const char *buf, size_t len, bool loopback, const char *token,
    struct metrics_req *r)
{
	const char *p = buf, *end = buf + len, *line, *sp1, *sp2, *target, *q;
	const char *host = NULL, *auth = NULL, *v;
	size_t n, tn, hn = 0, an = 0, vn, k;
	bool http11, head, get;

	memset(r, 0, sizeof(*r));
	if (!metrics_next_line(&p, end, &line, &n))
		return 400;
	/* METHOD SP TARGET SP HTTP/1.x */
	if (!(sp1 = memchr(line, ' ', n)) ||
	    !(sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line))))
		return 400;
	if ((size_t)(line + n - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return 400;
	http11 = sp2[8] == '1';
	target = sp1 + 1;
	tn = (size_t)(sp2 - target);
	if (tn == 0 || target[0] != '/' || memchr(target, ' ', tn))
		return 400;
	head = (size_t)(sp1 - line) == 4 && memcmp(line, "HEAD", 4) == 0;
	get = (size_t)(sp1 - line) == 3 && memcmp(line, "GET", 3) == 0;
	while (metrics_next_line(&p, end, &line, &n) && n > 0) {
		if (line[0] == ' ' || line[0] == '\t' || !memchr(line, ':', n))
			return 400;     /* obsolete line folding, or no header */
		if (metrics_header(line, n, "Host", &v, &vn)) {
			if (host)
				return 400;
			host = v;
			hn = vn;
		} else if (metrics_header(line, n, "Authorization", &v, &vn)) {
			if (auth)
				return 400;
			auth = v;
			an = vn;
		}
	}
	if (!host && http11)
		return 400;
	if (!head && !get)
		return 501;
	if (loopback && host && !metrics_host_loopback(host, hn))
		return 403;
	q = memchr(target, '?', tn);
	k = q ? (size_t)(q - target) : tn;
	if (k != strlen("/metrics") || memcmp(target, "/metrics", k) != 0)
		return 404;
	r->head = head;
	if (!token)
		return 200;
	/* Authorization: Bearer TOKEN (the scheme in any case) */
	if (!auth || an < 7 || strncasecmp(auth, "Bearer ", 7) != 0)
		return 401;
	auth += 7;
	an -= 7;
	while (an > 0 && *auth == ' ')
		auth++, an--;
	if (an != strlen(token) || CRYPTO_memcmp(auth, token, an) != 0)
		return 401;
	r->full = true;
	return 200;
}
