/* metrics_req.h - the request of a scraper of the metrics endpoint
 * (metrics_http.c): what to answer it.  Pure: no I/O. */
#ifndef TOUD_METRICS_REQ_H
#define TOUD_METRICS_REQ_H

#include <stdbool.h>
#include <stddef.h>

/* The longest bearer token of metrics-token-file, and the shortest. */
#define METRICS_TOKEN_MAX 128
#define METRICS_TOKEN_MIN 16

struct metrics_req {
	bool head;              /* HEAD: the headers only */
	bool full;              /* the token was shown: the peers' series too */
};

/* The HTTP status to answer the request head in buf (len bytes, up to its
 * blank line) with, and *r for a 200:
 *   400  not an HTTP/1.x request, two Host headers, no Host in HTTP/1.1;
 *   501  a method other than GET and HEAD;
 *   403  loopback (the endpoint listens on a loopback address) and a Host
 *        that names no loopback address nor localhost: a web page whose
 *        name was rebound to 127.0.0.1 (DNS rebinding);
 *   404  a path other than /metrics (a query string is ignored);
 *   401  token set and no "Authorization: Bearer TOKEN" with it. */
int metrics_req_check(const char *buf, size_t len, bool loopback, const char *token,
    struct metrics_req *r);

/* The token in text (n bytes: RFC 6750 b64token characters, then at most
 * a line feed) copied into out (METRICS_TOKEN_MAX + 1 bytes); 0 or
 * -EINVAL. */
int metrics_token_parse(const char *text, size_t n, char *out);

#endif
