/* http_connect.h - the HTTP CONNECT exchange that opens a tunnel through a
 * web proxy (RFC 9110 9.3.6): the request toud sends, and the reading of
 * the proxy's response.  After a 2xx response the connection carries the
 * TLS stream; the bytes after the response header already belong to it.
 * Pure: no I/O. */
#ifndef TOUD_HTTP_CONNECT_H
#define TOUD_HTTP_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest response header read before giving up on the proxy. */
#define HTTP_CONNECT_MAX_HEADER 8192

/* Writes "CONNECT host:port HTTP/1.1\r\nHost: host:port\r\n\r\n" into buf
 * (an IPv6 literal host in brackets), with basic (the base64 of
 * "user:password", proxy_auth.h) a "Proxy-Authorization: Basic basic"
 * line before the empty one; NUL-terminated.  The length without the NUL,
 * or -1 if it does not fit, host is empty or holds a byte that cannot
 * stand in a request line (control, space, '/', '@'), basic is not base64,
 * or port is 0. */
int http_connect_request(char *buf, size_t size, const char *host, uint16_t port,
    const char *basic);

enum http_connect_result { HC_MORE, HC_OK, HC_REFUSED, HC_BAD };

/* The proxy's response so far, buf[0..len).  HC_MORE: read more.  HC_OK
 * (2xx, whole header read): *consumed = header length, the stream starts
 * at buf + *consumed, and *status set too.  HC_REFUSED (any other status, decided as soon as
 * the status line is complete): *status set.  HC_BAD: malformed, or no
 * end of header within HTTP_CONNECT_MAX_HEADER bytes.  Lines end in CRLF
 * or a bare LF; HTTP/1.0 and HTTP/1.1 are accepted. */
enum http_connect_result http_connect_response(const uint8_t *buf, size_t len,
    size_t *consumed, int *status);

/* What a refusal with status means to the operator, and what to do: 407
 * (no credentials sent, or the wrong ones), 403 (the proxy does not allow
 * port), else the bare status.  Never the credentials themselves. */
void http_connect_refusal(int status, bool sent_credentials, uint16_t port, char *buf,
    size_t len);

/* "more", "ok", "refused", "bad". */
const char *http_connect_result_name(enum http_connect_result r);

#endif
