/* check_http_connect.c - the HTTP CONNECT request and the reading of the
 * proxy's response: every response split at every byte gives the same
 * verdict, whatever the line endings; refusals carry their status;
 * malformed and oversize headers are refused; the stream's first bytes
 * after the header are left to the caller. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_connect.h"
#include "proxy_auth.h"

#include "testutil.h"

START_TEST(request_names)
{
	char buf[256];
	const char *want = "CONNECT vpn.example.org:443 HTTP/1.1\r\n"
	    "Host: vpn.example.org:443\r\n\r\n";

	ck_assert_int_eq(http_connect_request(buf, sizeof(buf), "vpn.example.org", 443, NULL),
	    (int)strlen(want));
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(http_connect_request(buf, sizeof(buf), "192.0.2.1", 8443, NULL), 57);
	ck_assert_str_eq(buf, "CONNECT 192.0.2.1:8443 HTTP/1.1\r\nHost: 192.0.2.1:8443\r\n\r\n");
}
END_TEST

START_TEST(request_ipv6_brackets)
{
	char buf[256];

	ck_assert_int_gt(http_connect_request(buf, sizeof(buf), "2001:db8::1", 443, NULL), 0);
	ck_assert_str_eq(buf, "CONNECT [2001:db8::1]:443 HTTP/1.1\r\n"
	    "Host: [2001:db8::1]:443\r\n\r\n");
}
END_TEST

START_TEST(request_fits_exactly)
{
	char buf[256];
	int n = http_connect_request(buf, sizeof(buf), "h", 1, NULL);

	ck_assert_int_eq(n, (int)strlen("CONNECT h:1 HTTP/1.1\r\nHost: h:1\r\n\r\n"));
	/* n bytes and the NUL fit; one byte less does not. */
	ck_assert_int_eq(http_connect_request(buf, (size_t)n + 1, "h", 1, NULL), n);
	ck_assert_int_eq(http_connect_request(buf, (size_t)n, "h", 1, NULL), -1);
	ck_assert_int_eq(http_connect_request(buf, 0, "h", 1, NULL), -1);
}
END_TEST

START_TEST(request_refuses_bad_hosts)
{
	char buf[256];
	static const char *const bad[] = {
		"", "a b", "a\r\nX-Injected: 1", "a/b", "user@host", "[::1]", "a\tb", "h?x",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(http_connect_request(buf, sizeof(buf), bad[i], 443, NULL) == -1,
		    "host \"%s\" accepted", bad[i]);
	ck_assert_int_eq(http_connect_request(buf, sizeof(buf), "h", 0, NULL), -1);
	ck_assert_int_eq(http_connect_request(buf, sizeof(buf), NULL, 443, NULL), -1);
}
END_TEST

/* Basic credentials: the header line, after Host; a token that is not
 * base64 (a line break would inject a header) is refused. */
START_TEST(request_basic)
{
	char buf[256], *tok = NULL, err[120];

	/* RFC 7617's example */
	ck_assert_int_eq(proxy_auth_encode("Aladdin:open sesame\n", 20, &tok, err, sizeof(err)), 0);
	ck_assert_str_eq(tok, "QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
	ck_assert_int_gt(http_connect_request(buf, sizeof(buf), "vpn.example.org", 443, tok), 0);
	ck_assert_str_eq(buf, "CONNECT vpn.example.org:443 HTTP/1.1\r\nHost: vpn.example.org:443\r\n"
	    "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n");
	free(tok);
	ck_assert_int_eq(http_connect_request(buf, sizeof(buf), "h", 443, "abc\r\nX: 1"), -1);
	ck_assert_int_eq(http_connect_request(buf, sizeof(buf), "h", 443, ""), -1);
	ck_assert_int_eq(http_connect_request(buf, 60, "h", 443, "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="), -1);
}
END_TEST

/* What a credentials file may hold: one line user:password (CRLF or LF
 * or none at its end); the reason otherwise, never the password. */
START_TEST(credentials_file_text)
{
	static const char *const bad[] = {
		"nocolon\n", ":pw\n", "u:p\nsecond:line\n", "u:p\tq\n", "",
	};
	char err[120], *tok = NULL, big[PROXY_AUTH_MAX + 2];
	size_t i;

	ck_assert_int_eq(proxy_auth_encode("u:p\r\n", 5, &tok, err, sizeof(err)), 0);
	ck_assert_str_eq(tok, "dTpw");
	free(tok);
	ck_assert_int_eq(proxy_auth_encode("u:", 2, &tok, err, sizeof(err)), 0);
	ck_assert_str_eq(tok, "dTo=");
	free(tok);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tok = NULL;
		ck_assert_msg(proxy_auth_encode(bad[i], strlen(bad[i]), &tok, err, sizeof(err)) ==
		    -EINVAL && !tok, "'%s' accepted", bad[i]);
		ck_assert_ptr_null(strstr(err, "pw"));
	}
	memset(big, 'a', sizeof(big));
	big[1] = ':';
	ck_assert_int_eq(proxy_auth_encode(big, sizeof(big), &tok, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "longer than 255 bytes");
}
END_TEST

/* The refusals an operator meets: 407 without and with credentials, 403
 * naming the port and 443, and any other status as it is. */
START_TEST(refusal_messages)
{
	char buf[320];

	http_connect_refusal(407, false, 8443, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "asks for credentials (407 Proxy Authentication Required)") &&
	    strstr(buf, "proxy-credentials"), "%s", buf);
	http_connect_refusal(407, true, 8443, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "refused the credentials of proxy-credentials (407"), "%s", buf);
	http_connect_refusal(403, false, 8443, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "does not allow a connection to port 8443 (403 Forbidden)") &&
	    strstr(buf, "ask for 443"), "%s", buf);
	http_connect_refusal(502, false, 443, buf, sizeof(buf));
	ck_assert_str_eq(buf, "the proxy refused with status 502");
}
END_TEST

/* The verdict on the whole of resp, and on every prefix of it: a prefix
 * shorter than where the verdict can be reached says HC_MORE, never
 * anything else, and once reached the verdict stays. */
static void
split_everywhere(const char *resp, size_t len, enum http_connect_result want,
    size_t want_consumed, int want_status)
{
	const uint8_t *b = (const uint8_t *)resp;
	enum http_connect_result r = HC_MORE;
	size_t cut, consumed;
	int status;
	int decided = 0;

	for (cut = 0; cut <= len; cut++) {
		consumed = 12345;
		status = -7;
		r = http_connect_response(b, cut, &consumed, &status);
		if (!decided && r == HC_MORE)
			continue;
		ck_assert_msg(r == want, "\"%s\" cut at %zu: %s, want %s", resp, cut,
		    http_connect_result_name(r), http_connect_result_name(want));
		decided = 1;
		if (want == HC_OK) {
			ck_assert_uint_eq(consumed, want_consumed);
			ck_assert_int_eq(status, want_status);
		}
		if (want == HC_REFUSED)
			ck_assert_int_eq(status, want_status);
	}
	ck_assert_msg(decided, "\"%s\": never decided", resp);
}

#define SPLIT(s, want, consumed, status) \
	split_everywhere(s, sizeof(s) - 1, want, consumed, status)

START_TEST(ok_200)
{
	static const char r[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	SPLIT(r, HC_OK, sizeof(r) - 1, 200);
}
END_TEST

START_TEST(ok_with_fields)
{
	static const char r[] = "HTTP/1.1 200 OK\r\nProxy-agent: tinyproxy/1.11.1\r\n"
	    "Via: 1.1 router\r\n\r\n";

	SPLIT(r, HC_OK, sizeof(r) - 1, 200);
}
END_TEST

START_TEST(ok_http10_no_reason)
{
	static const char r[] = "HTTP/1.0 200\r\n\r\n";
	static const char r2[] = "HTTP/1.0 204 \r\n\r\n";

	SPLIT(r, HC_OK, sizeof(r) - 1, 200);
	SPLIT(r2, HC_OK, sizeof(r2) - 1, 204);
}
END_TEST

START_TEST(ok_lf_only)
{
	static const char r[] = "HTTP/1.1 200 OK\nProxy-agent: x\n\n";
	static const char mixed[] = "HTTP/1.1 200 OK\r\nProxy-agent: x\n\r\n";

	SPLIT(r, HC_OK, sizeof(r) - 1, 200);
	SPLIT(mixed, HC_OK, sizeof(mixed) - 1, 200);
}
END_TEST

START_TEST(refused_407_502)
{
	static const char r407[] = "HTTP/1.1 407 Proxy Authentication Required\r\n"
	    "Proxy-Authenticate: Basic realm=\"x\"\r\n\r\n";
	static const char r502[] = "HTTP/1.0 502 Bad Gateway\r\n\r\n<html></html>";
	static const char r403[] = "HTTP/1.1 403 Access violation\n";
	static const char r101[] = "HTTP/1.1 101 Switching Protocols\r\n\r\n";

	SPLIT(r407, HC_REFUSED, 0, 407);
	SPLIT(r502, HC_REFUSED, 0, 502);
	SPLIT(r403, HC_REFUSED, 0, 403);
	SPLIT(r101, HC_REFUSED, 0, 101);
}
END_TEST

START_TEST(bytes_after_header)
{
	/* A TLS ServerHello's first bytes right behind the header. */
	static const char r[] = "HTTP/1.1 200 OK\r\n\r\n\x16\x03\x03\x00\x7a\x02";
	const uint8_t *b = (const uint8_t *)r;
	size_t consumed = 0;
	int status = 0;

	ck_assert_int_eq(http_connect_response(b, sizeof(r) - 1, &consumed, &status), HC_OK);
	ck_assert_uint_eq(consumed, 19);
	ck_assert_uint_eq(b[consumed], 0x16);
	/* Even bytes that look like another response stay the stream's. */
	SPLIT("HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 407 no\r\n\r\n", HC_OK, 19, 200);
}
END_TEST

START_TEST(malformed)
{
	static const char *const bad[] = {
		"HTTP/1.1\r\n\r\n",            /* no status */
		"HTTP/1.1 \r\n\r\n",
		"HTTP/1.1 20\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 abc OK\r\n\r\n",
		"HTTP/1.1 600 Huh\r\n\r\n",
		"HTTP/1.1 099 Huh\r\n\r\n",
		"HTTP/1.1  200 OK\r\n\r\n",
		"HTTP/2 200\r\n\r\n",
		"HTTP/1.2 200 OK\r\n\r\n",
		"http/1.1 200 OK\r\n\r\n",
		"SSH-2.0-OpenSSH\r\n",
		"\r\n",
		"\x16\x03\x01\x02\x00",
		"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
		"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad name: x\r\n\r\n",
		"HTTP/1.1 200 OK\rX: y\r\n\r\n",  /* a bare CR */
		"HTTP/1.1 200 OK\r\nX: a\x01z\r\n\r\n",
	};
	size_t i, consumed;
	int status;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		split_everywhere(bad[i], strlen(bad[i]), HC_BAD, 0, 0);
	/* A NUL in the status line. */
	ck_assert_int_eq(http_connect_response((const uint8_t *)"HTTP/1.1 200 O\0K\r\n\r\n",
	    20, &consumed, &status), HC_BAD);
}
END_TEST

START_TEST(oversize_header)
{
	static uint8_t b[HTTP_CONNECT_MAX_HEADER + 64];
	static const char head[] = "HTTP/1.1 200 OK\r\n";
	size_t off, consumed = 0;
	int status = 0;

	/* One long field that never ends. */
	memcpy(b, head, sizeof(head) - 1);
	memcpy(b + sizeof(head) - 1, "X-Pad: ", 7);
	memset(b + sizeof(head) - 1 + 7, 'a', sizeof(b) - (sizeof(head) - 1 + 7));
	/* Short of the limit: more, however much is there. */
	ck_assert_int_eq(http_connect_response(b, HTTP_CONNECT_MAX_HEADER - 1, &consumed,
	    &status), HC_MORE);
	ck_assert_int_eq(http_connect_response(b, HTTP_CONNECT_MAX_HEADER, &consumed,
	    &status), HC_BAD);
	ck_assert_int_eq(http_connect_response(b, sizeof(b), &consumed, &status), HC_BAD);

	/* A header that ends exactly at the limit is read; one byte more is not. */
	off = HTTP_CONNECT_MAX_HEADER - 1;
	b[off - 1] = '\n';
	b[off] = '\n';
	ck_assert_int_eq(http_connect_response(b, sizeof(b), &consumed, &status), HC_OK);
	ck_assert_uint_eq(consumed, HTTP_CONNECT_MAX_HEADER);
	b[off - 1] = 'a';
	b[off + 1] = '\n';
	ck_assert_int_eq(http_connect_response(b, sizeof(b), &consumed, &status), HC_BAD);

	/* A status line that never ends. */
	memset(b, 'H', sizeof(b));
	memcpy(b, "HTTP/1.1 200 ", 13);
	ck_assert_int_eq(http_connect_response(b, sizeof(b), &consumed, &status), HC_BAD);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("http_connect");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, request_names);
	tcase_add_test(tc, request_ipv6_brackets);
	tcase_add_test(tc, request_fits_exactly);
	tcase_add_test(tc, request_refuses_bad_hosts);
	tcase_add_test(tc, request_basic);
	tcase_add_test(tc, credentials_file_text);
	tcase_add_test(tc, refusal_messages);
	tcase_add_test(tc, ok_200);
	tcase_add_test(tc, ok_with_fields);
	tcase_add_test(tc, ok_http10_no_reason);
	tcase_add_test(tc, ok_lf_only);
	tcase_add_test(tc, refused_407_502);
	tcase_add_test(tc, bytes_after_header);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, oversize_header);
	suite_add_tcase(s, tc);
	return check_run(s);
}
