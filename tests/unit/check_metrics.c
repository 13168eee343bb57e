/* check_metrics.c - `touctl metrics`: the escaping of label values and help
 * text, and the shape of the whole text (each family once, its # HELP and
 * # TYPE first, then only its own samples), on a daemon state built by hand
 * and a fixed clock.  tests/e2e/t45-metrics.sh reads the text of a live
 * daemon with Prometheus' own parser. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "conf.h"
#include "drop.h"
#include "events.h"
#include "metrics.h"
#include "metrics_req.h"
#include "ctx.h"
#include "peer.h"
#include "peer_endpoint.h"
#include "session.h"
#include "util.h"

#include "testutil.h"
#include "testutil_peer.h"

/* The evbuffer's text, NUL-terminated and malloc'd; the buffer is freed. */
static char *
take_text(struct evbuffer *b)
{
	size_t len = evbuffer_get_length(b);
	char *s = malloc(len + 1);

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(evbuffer_remove(b, s, len), (int)len);
	s[len] = '\0';
	evbuffer_free(b);
	return s;
}

static char *
escaped(const char *in, bool label)
{
	struct evbuffer *b = evbuffer_new();

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(metrics_escape(b, in, label), 0);
	return take_text(b);
}

START_TEST(escape)
{
	static const struct { const char *in, *label, *help; } cases[] = {
		{ "", "", "" },
		{ "plain 1.2.3.4:6080 [fd20::1]:6080", "plain 1.2.3.4:6080 [fd20::1]:6080",
		  "plain 1.2.3.4:6080 [fd20::1]:6080" },
		/* the three escapes of the format; help text keeps its quotes */
		{ "a\"b\\c\nd", "a\\\"b\\\\c\\nd", "a\"b\\\\c\\nd" },
		{ "\\n", "\\\\n", "\\\\n" },
		{ "\"\"", "\\\"\\\"", "\"\"" },
		/* UTF-8 passes; other bytes become U+FFFD one by one */
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91",
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91" },
		{ "x\xffy", "x\xef\xbf\xbdy", "x\xef\xbf\xbdy" },
		{ "\xc3\x28", "\xef\xbf\xbd(", "\xef\xbf\xbd(" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "end\xe2\x82", "end\xef\xbf\xbd\xef\xbf\xbd", "end\xef\xbf\xbd\xef\xbf\xbd" },
		/* other control bytes are UTF-8 and the format lets them be */
		{ "t\tr\r", "t\tr\r", "t\tr\r" },
	};
	size_t i;
	char *s;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		s = escaped(cases[i].in, true);
		ck_assert_msg(strcmp(s, cases[i].label) == 0, "label %zu: got '%s'", i, s);
		free(s);
		s = escaped(cases[i].in, false);
		ck_assert_msg(strcmp(s, cases[i].help) == 0, "help %zu: got '%s'", i, s);
		free(s);
	}
}
END_TEST

static const char conf_text[] =
    "[interface]\n"
    "name = tou3\n"
    "address = 10.77.0.1/24\n"
    "encryption = none\n"
    "\n"
    "[peer bob]\n"
    "endpoint = 192.0.2.7:6080\n"
    "address = 10.77.0.2\n"
    "\n"
    "[peer carol]\n"
    "endpoint = [2001:db8::7]:6081\n"
    "address = 10.77.0.3\n";

#define NOW_MS 500000ULL                /* monotonic */
#define WALL_MS 1796500000250ULL        /* unix */

struct fixture {
	struct toud t;
	struct session_table sessions;
	struct peer peer[2];
	struct peer *peers[2];
	struct peer_paths bob_paths;
};

/* bob: up, traffic, a drop and events, heard from 12.5 s ago; carol:
 * dead, a handshake error that holds every character to escape, the next
 * attempt due in 4 s. */
static void
fixture_init(struct fixture *f)
{
	struct conf_error err;
	struct ipaddr a;

	memset(f, 0, sizeof(*f));
	ck_assert_msg(conf_parse("m.conf", conf_text, strlen(conf_text), &f->t.conf,
	    &err) == 0, "%d: %s", err.line, err.msg);
	f->t.tun_mtu = 1420;
	f->sessions.n_half_open = 2;
	f->t.sessions = &f->sessions;
	f->t.drops[DROP_NO_PEER] = 5;
	f->t.drops[DROP_NOT_UNICAST] = 7;       /* counted, but no loss */
	f->t.events[EVENT_COOKIE_REQUESTED] = 4;
	check_peers_link(&f->t, f->peer, f->peers, 2);
	/* bob is reached over TCP (UDP is down), after three moves. */
	check_peer_on_tcp(&f->peer[0], &f->bob_paths, 3);

	f->peer[0].state = PEER_UP;
	a = check_addr("192.0.2.7");
	ck_assert_int_eq(util_sa_from_addr(&f->peer[0].endpoint, &a, 6080), 0);
	f->peer[0].has_endpoint = true;
	f->peer[0].rx_bytes = 2101248;
	f->peer[0].tx_bytes = 40961;
	f->peer[0].rx_packets = 1455;
	f->peer[0].tx_packets = 18446744073709551615ULL;
	f->peer[0].drops[DROP_SOURCE] = 3;
	f->peer[0].events[EVENT_HANDSHAKE_COMPLETED] = 1;
	f->peer[0].last_handshake = 1796499000;
	f->peer[0].last_rx_ms = NOW_MS - 12500;
	f->peer[0].endpoint_changes = 2;

	f->peer[1].state = PEER_DEAD;
	f->peer[1].last_error = (char *)"handshake failed: its certificate name \"c\\\\d\nx\xff\" is not pinned";   /* a fake peer: never freed */
	f->peer[1].last_error_reason = PEER_ERR_HANDSHAKE_FAILED;
	f->peer[1].next_attempt_ms = NOW_MS + 4000;
}

static char *
render(struct fixture *f)
{
	struct evbuffer *b = evbuffer_new();

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(metrics_render(b, &f->t, NOW_MS, WALL_MS), 0);
	return take_text(b);
}

/* A label value up to its closing quote: only \\ \" \n inside. */
static const char *
skip_value(const char *p)
{
	for (; *p != '"'; p++) {
		ck_assert_msg(*p != '\0' && *p != '\n', "unterminated label value");
		if (*p == '\\') {
			p++;
			ck_assert_msg(*p == '\\' || *p == '"' || *p == 'n', "bad escape \\%c", *p);
		}
	}
	return p + 1;
}

/* Every line is # HELP, # TYPE or a sample of the family named last, each
 * family's two lines come once and in that order, labels are well
 * formed, values are numbers.  The number of samples. */
static int
check_shape(const char *text)
{
	char seen[64][80], family[80] = "", name[80], type[16];
	const char *p = text, *nl;
	int n_families = 0, samples = 0, k;

	while (*p) {
		ck_assert_ptr_nonnull(nl = strchr(p, '\n'));
		if (strncmp(p, "# HELP ", 7) == 0) {
			ck_assert_int_eq(sscanf(p + 7, "%79[a-z_]", family), 1);
			for (k = 0; k < n_families; k++)
				ck_assert_msg(strcmp(seen[k], family) != 0, "%s twice", family);
			ck_assert_int_lt(n_families, 64);
			strcpy(seen[n_families++], family);
			ck_assert_int_eq(sscanf(nl + 1, "# TYPE %79s %15s", name, type), 2);
			ck_assert_str_eq(name, family);
			ck_assert_msg(strcmp(type, "gauge") == 0 || (strcmp(type, "counter") == 0 &&
			    strlen(name) > 6 && strcmp(name + strlen(name) - 6, "_total") == 0),
			    "%s %s", name, type);
			p = strchr(nl + 1, '\n') + 1;
			continue;
		}
		ck_assert_msg(family[0] && strncmp(p, family, strlen(family)) == 0 &&
		    p[strlen(family)] == '{', "sample outside its family: %.60s", p);
		for (p += strlen(family) + 1; *p != '}'; ) {
			while ((*p >= 'a' && *p <= 'z') || *p == '_')
				p++;
			ck_assert_msg(p[0] == '=' && p[1] == '"', "bad label at %.30s", p);
			p = skip_value(p + 2);
			if (*p == ',')
				p++;
		}
		ck_assert_msg(p[1] == ' ' && strspn(p + 2, "0123456789.") == (size_t)(nl - p - 2),
		    "bad value: %.*s", (int)(nl - p), p);
		samples++;
		p = nl + 1;
	}
	return samples;
}

START_TEST(render_all)
{
	static const char *const want[] = {
		"toud_info{interface=\"tou3\",version=\"", "\",encryption=\"none\",fingerprint=\"\"} 1\n",
		"\ntoud_tun_mtu_bytes{interface=\"tou3\"} 1420\n",
		"\ntoud_half_open_handshakes{interface=\"tou3\"} 2\n",
		"\ntoud_peers{interface=\"tou3\",state=\"idle\"} 0\n"
		"toud_peers{interface=\"tou3\",state=\"handshaking\"} 0\n"
		"toud_peers{interface=\"tou3\",state=\"up\"} 1\n"
		"toud_peers{interface=\"tou3\",state=\"dead\"} 1\n",
		"\ntoud_drops_total{interface=\"tou3\",reason=\"no_peer\"} 5\n"
		"toud_drops_total{interface=\"tou3\",reason=\"not_unicast\"} 7\n#",
		"\ntoud_losses_total{interface=\"tou3\"} 5\n#",
		"\ntoud_peer_losses_total{interface=\"tou3\",peer=\"bob\"} 3\n"
		"toud_peer_losses_total{interface=\"tou3\",peer=\"carol\"} 0\n#",
		"\ntoud_events_total{interface=\"tou3\",event=\"cookie_requested\"} 4\n#",
		"\ntoud_peer_info{interface=\"tou3\",peer=\"bob\",endpoint=\"192.0.2.7:6080\","
		"cipher=\"TLS_AES_256_GCM_SHA384\"} 1\n"
		"toud_peer_info{interface=\"tou3\",peer=\"carol\",endpoint=\"\",cipher=\"\"} 1\n",
		"\ntoud_peer_up{interface=\"tou3\",peer=\"bob\"} 1\n"
		"toud_peer_up{interface=\"tou3\",peer=\"carol\"} 0\n",
		"\ntoud_peer_state{interface=\"tou3\",peer=\"carol\",state=\"up\"} 0\n"
		"toud_peer_state{interface=\"tou3\",peer=\"carol\",state=\"dead\"} 1\n",
		"\ntoud_peer_receive_bytes_total{interface=\"tou3\",peer=\"bob\"} 2101248\n",
		"\ntoud_peer_transmit_bytes_total{interface=\"tou3\",peer=\"bob\"} 40961\n",
		"\ntoud_peer_transport{interface=\"tou3\",peer=\"bob\",transport=\"udp\"} 0\n"
		"toud_peer_transport{interface=\"tou3\",peer=\"bob\",transport=\"tcp\"} 1\n#",
		"\ntoud_peer_path_up{interface=\"tou3\",peer=\"bob\",transport=\"udp\"} 0\n"
		"toud_peer_path_up{interface=\"tou3\",peer=\"bob\",transport=\"tcp\"} 1\n#",
		"\ntoud_peer_post_quantum{interface=\"tou3\",peer=\"bob\",transport=\"udp\"} 0\n"
		"toud_peer_post_quantum{interface=\"tou3\",peer=\"bob\",transport=\"tcp\"} 1\n#",
		"\ntoud_peer_transport_moves_total{interface=\"tou3\",peer=\"bob\"} 3\n"
		"toud_peer_transport_moves_total{interface=\"tou3\",peer=\"carol\"} 0\n#",
		"\ntoud_peer_receive_packets_total{interface=\"tou3\",peer=\"bob\"} 1455\n",
		"\ntoud_peer_transmit_packets_total{interface=\"tou3\",peer=\"bob\"} "
		"18446744073709551615\n",
		"\ntoud_peer_drops_total{interface=\"tou3\",peer=\"bob\",reason=\"source_not_allowed\"} 3\n#",
		"\ntoud_peer_events_total{interface=\"tou3\",peer=\"bob\",event=\"handshake_completed\"} 1\n#",
		"\ntoud_peer_last_handshake_timestamp_seconds{interface=\"tou3\",peer=\"bob\"} "
		"1796499000.000\n#",
		/* 12.5 s before the wall clock's 1796500000.250 */
		"\ntoud_peer_last_receive_timestamp_seconds{interface=\"tou3\",peer=\"bob\"} "
		"1796499987.750\n#",
		"\ntoud_peer_next_attempt_timestamp_seconds{interface=\"tou3\",peer=\"carol\"} "
		"1796500004.250\n#",
		"\ntoud_peer_last_error_info{interface=\"tou3\",peer=\"carol\",error=\"handshake "
		"failed: its certificate name \\\"c\\\\\\\\d\\nx\xef\xbf\xbd\\\" is not pinned\"} 1\n",
		"\ntoud_peer_last_error{interface=\"tou3\",peer=\"carol\",reason=\"handshake_failed\"} 1\n",
		"\ntoud_peer_endpoint_changes_total{interface=\"tou3\",peer=\"bob\"} 2\n"
		"toud_peer_endpoint_changes_total{interface=\"tou3\",peer=\"carol\"} 0\n",
	};
	struct fixture f;
	size_t i;
	char *s;

	fixture_init(&f);
	s = render(&f);
	for (i = 0; i < ARRAY_SIZE(want); i++)
		ck_assert_msg(strstr(s, want[i]) != NULL, "missing:\n%s\nin:\n%s", want[i], s);
	/* 1 + 1 + 1 + 1 + 4 + 2 + 1 + 1 + 2 + 2 + 8 + 4 * 2 + 1 + 2 + 1 + 1 + 1 + 1 + 1,
	 * and bob's two paths three times (transport, path_up,
	 * post_quantum) and both peers' moves; carol's last_error as its
	 * reason, both peers' endpoint changes. */
	ck_assert_int_eq(check_shape(s), 51);
	ck_assert_msg(strstr(s, "# HELP toud_peer_last_error_info ") != NULL, "%s", s);
	/* what did not happen is absent, not 0 */
	ck_assert_ptr_null(strstr(s, "last_handshake_timestamp_seconds{interface=\"tou3\",peer=\"carol\""));
	ck_assert_ptr_null(strstr(s, "last_receive_timestamp_seconds{interface=\"tou3\",peer=\"carol\""));
	ck_assert_ptr_null(strstr(s, "last_error_info{interface=\"tou3\",peer=\"bob\""));
	ck_assert_ptr_null(strstr(s, "last_error{interface=\"tou3\",peer=\"bob\""));
	free(s);
	conf_free(f.t.conf);
}
END_TEST

/* The endpoint's changes count moves from one address or port to
 * another, not the first endpoint nor the same one again; each kind of
 * last_error has a name of the fixed set. */
START_TEST(endpoint_changes_and_reasons)
{
	union sockaddr_union ep;
	struct ipaddr a = check_addr("192.0.2.7");
	struct fixture f;
	const char *name;
	unsigned r, k;
	char *s;

	fixture_init(&f);
	f.peer[1].has_endpoint = false;
	ck_assert_int_eq(util_sa_from_addr(&ep, &a, 6080), 0);
	peer_endpoint_set(&f.peer[1], &ep);             /* the first: no change */
	peer_endpoint_set(&f.peer[1], &ep);             /* the same: none */
	ck_assert_int_eq(f.peer[1].endpoint_changes, 0);
	ck_assert_int_eq(util_sa_from_addr(&ep, &a, 6081), 0);
	peer_endpoint_set(&f.peer[1], &ep);             /* a new NAT port */
	a = check_addr("198.51.100.1");
	ck_assert_int_eq(util_sa_from_addr(&ep, &a, 6081), 0);
	peer_endpoint_set(&f.peer[1], &ep);             /* a new address */
	ck_assert_int_eq(f.peer[1].endpoint_changes, 2);
	s = render(&f);
	ck_assert_msg(strstr(s, "\ntoud_peer_endpoint_changes_total{interface=\"tou3\",peer=\"carol\"} 2\n")
	    != NULL, "%s", s);
	free(s);
	for (r = 0; r < PEER_ERR__MAX; r++) {
		name = peer_error_reason_name((enum peer_error_reason)r);
		ck_assert_str_ne(name, "unknown");
		ck_assert_msg(strspn(name, "abcdefghijklmnopqrstuvwxyz_") == strlen(name), "%s", name);
		for (k = 0; k < r; k++)
			ck_assert_str_ne(name, peer_error_reason_name((enum peer_error_reason)k));
	}
	conf_free(f.t.conf);
}
END_TEST

/* Without peers every family is still there, with the interface's samples
 * only. */
START_TEST(render_no_peers)
{
	struct fixture f;
	char *s;

	fixture_init(&f);
	f.t.n_peers = 0;
	memset(f.t.drops, 0, sizeof(f.t.drops));
	memset(f.t.events, 0, sizeof(f.t.events));
	s = render(&f);
	ck_assert_int_eq(check_shape(s), 1 + 1 + 1 + 1 + 4 + 1);
	ck_assert_msg(strstr(s, "# TYPE toud_peer_last_error_info gauge\n") != NULL, "%s", s);
	ck_assert_ptr_null(strstr(s, "peer=\""));
	ck_assert_msg(strstr(s, "toud_peers{interface=\"tou3\",state=\"up\"} 0\n") != NULL, "%s", s);
	free(s);
	conf_free(f.t.conf);
}
END_TEST

/* In batches of 1, 2 or 7 peers, the text is the text at once; the public
 * text (no full) is the interface's families only, without the key
 * fingerprint: no peer's name, address nor error. */
START_TEST(render_batches)
{
	static const size_t sizes[] = { 1, 2, 7 };
	struct metrics_cursor cur;
	struct fixture f;
	char *whole, *s;
	size_t i, parts;
	int r;

	fixture_init(&f);
	whole = render(&f);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct evbuffer *b = evbuffer_new();

		memset(&cur, 0, sizeof(cur));
		cur.full = true;
		parts = 0;
		while ((r = metrics_render_next(b, &f.t, &cur, sizes[i], NOW_MS, WALL_MS)) > 0)
			parts++;
		ck_assert_int_eq(r, 0);
		/* 14 families of 2 peers, at most sizes[i] peers a part */
		ck_assert_uint_ge(parts + 1, (14 * 2 + sizes[i] - 1) / sizes[i]);
		s = take_text(b);
		ck_assert_str_eq(s, whole);
		free(s);
	}
	free(whole);

	{
		struct evbuffer *b = evbuffer_new();

		memset(&cur, 0, sizeof(cur));
		ck_assert_int_eq(metrics_render_next(b, &f.t, &cur, 1, NOW_MS, WALL_MS), 0);
		s = take_text(b);
	}
	ck_assert_int_eq(check_shape(s), 1 + 1 + 1 + 1 + 4 + 2 + 1 + 1);
	ck_assert_msg(strstr(s, "toud_info{interface=\"tou3\",version=\"") != NULL, "%s", s);
	ck_assert_msg(strstr(s, "\",encryption=\"none\"} 1\n") != NULL, "%s", s);
	ck_assert_msg(strstr(s, "toud_peers{interface=\"tou3\",state=\"up\"} 1\n") != NULL, "%s", s);
	ck_assert_ptr_null(strstr(s, "fingerprint="));
	ck_assert_ptr_null(strstr(s, "peer="));
	ck_assert_ptr_null(strstr(s, "bob"));
	ck_assert_ptr_null(strstr(s, "192.0.2.7"));
	ck_assert_ptr_null(strstr(s, "handshake failed"));
	free(s);
	conf_free(f.t.conf);
}
END_TEST

static int
count(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)) != NULL; s++)
		n++;
	return n;
}

#define LAST_FAMILY "# TYPE toud_peer_endpoint_changes_total counter\n"

/* The list of peers shrinks between two parts (a reload removed them):
 * the rest of the text names only the peers left, and ends, also when it
 * shrinks in the middle of a family; it grows: the rest names them all. */
START_TEST(render_list_changes)
{
	struct metrics_cursor cur = { .full = true };
	struct evbuffer *b = evbuffer_new();
	struct fixture f;
	size_t parts = 0;
	char *s;
	int r;

	fixture_init(&f);
	/* the interface's families and the first peer of the first family */
	ck_assert_int_eq(metrics_render_next(b, &f.t, &cur, 1, NOW_MS, WALL_MS), 1);
	ck_assert_uint_eq(cur.step, 1);
	ck_assert_uint_eq(cur.peer, 1);
	f.t.n_peers = 0;
	while ((r = metrics_render_next(b, &f.t, &cur, 1, NOW_MS, WALL_MS)) > 0)
		ck_assert_uint_le(++parts, 64);
	ck_assert_int_eq(r, 0);
	s = take_text(b);
	ck_assert_msg(strstr(s, LAST_FAMILY) != NULL, "%s", s);
	ck_assert_ptr_null(strstr(s, "toud_peer_up{"));
	free(s);

	/* one peer, then both from the third family on */
	b = evbuffer_new();
	memset(&cur, 0, sizeof(cur));
	cur.full = true;
	f.t.n_peers = 1;
	parts = 0;
	while ((r = metrics_render_next(b, &f.t, &cur, 1, NOW_MS, WALL_MS)) > 0) {
		ck_assert_uint_le(++parts, 64);
		if (evbuffer_search(b, "# TYPE toud_peer_up ", 20, NULL).pos >= 0)
			f.t.n_peers = 2;
	}
	ck_assert_int_eq(r, 0);
	s = take_text(b);
	ck_assert_int_eq(count(s, "toud_peer_up{"), 1);
	ck_assert_int_eq(count(s, "toud_peer_endpoint_changes_total{"), 2);
	free(s);

	/* both, then one in the middle of the last family */
	b = evbuffer_new();
	memset(&cur, 0, sizeof(cur));
	cur.full = true;
	parts = 0;
	while ((r = metrics_render_next(b, &f.t, &cur, 1, NOW_MS, WALL_MS)) > 0) {
		ck_assert_uint_le(++parts, 64);
		if (evbuffer_search(b, LAST_FAMILY, strlen(LAST_FAMILY), NULL).pos >= 0)
			f.t.n_peers = 1;
	}
	ck_assert_int_eq(r, 0);
	s = take_text(b);
	ck_assert_int_eq(count(s, "toud_peer_up{"), 2);
	ck_assert_int_eq(count(s, "toud_peer_endpoint_changes_total{"), 1);
	free(s);
	conf_free(f.t.conf);
}
END_TEST

#define TOKEN "0123456789abcdef0123456789abcdef"

static int
req(const char *text, bool loopback, const char *token, struct metrics_req *r)
{
	return metrics_req_check(text, strlen(text), loopback, token, r);
}

/* What a scraper's request gets: the status, HEAD, and whether the token
 * opened the whole text. */
START_TEST(request_check)
{
	struct metrics_req r;

	/* Prometheus' own request, without and with a token set */
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9680\r\n"
	    "User-Agent: Prometheus/2.45\r\nAccept: text/plain\r\n\r\n", true, NULL, &r), 200);
	ck_assert(!r.full && !r.head);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9680\r\n"
	    "Authorization: Bearer " TOKEN "\r\n\r\n", true, TOKEN, &r), 200);
	ck_assert(r.full);
	ck_assert_int_eq(req("GET /metrics?x=1 HTTP/1.1\nhost:localhost\nauthorization: "
	    "bearer  " TOKEN " \n\n", true, TOKEN, &r), 200);
	ck_assert(r.full);
	ck_assert_int_eq(req("HEAD /metrics HTTP/1.1\r\nHost: [::1]:9680\r\n\r\n", true, NULL,
	    &r), 200);
	ck_assert(r.head);
	ck_assert_int_eq(req("GET /metrics HTTP/1.0\r\n\r\n", true, NULL, &r), 200);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: 127.8.9.10\r\n\r\n", true, NULL,
	    &r), 200);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: LOCALHOST.:80\r\n\r\n", true, NULL,
	    &r), 200);
	/* the token: missing, wrong, a prefix of it, another scheme */
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n", true, TOKEN,
	    &r), 401);
	ck_assert(!r.full);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: "
	    "Bearer 0123456789abcdef0123456789abcdeX\r\n\r\n", true, TOKEN, &r), 401);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: "
	    "Bearer 0123456789abcdef\r\n\r\n", true, TOKEN, &r), 401);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: "
	    "Basic " TOKEN "\r\n\r\n", true, TOKEN, &r), 401);
	/* DNS rebinding: a name that is not loopback's, on a loopback endpoint */
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: evil.example:9680\r\n\r\n", true,
	    NULL, &r), 403);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1.evil.example\r\n\r\n",
	    true, NULL, &r), 403);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: [::2]:9680\r\n\r\n", true, NULL,
	    &r), 403);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: localhost.evil\r\n\r\n", true,
	    TOKEN, &r), 403);
	/* ...which a remote endpoint cannot know: its token is the guard */
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: tunnel.example:9680\r\n\r\n",
	    false, NULL, &r), 200);
	/* malformed */
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\n\r\n", true, NULL, &r), 400);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false, NULL,
	    &r), 400);
	ck_assert_int_eq(req("GET /metrics HTTP/2.0\r\nHost: a\r\n\r\n", false, NULL, &r), 400);
	ck_assert_int_eq(req("GET metrics HTTP/1.1\r\nHost: a\r\n\r\n", false, NULL, &r), 400);
	ck_assert_int_eq(req("GET /metrics\r\n\r\n", false, NULL, &r), 400);
	ck_assert_int_eq(req("", false, NULL, &r), 400);
	ck_assert_int_eq(req("GET /metrics HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", false,
	    NULL, &r), 400);
	/* method and path */
	ck_assert_int_eq(req("POST /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n", true, NULL,
	    &r), 501);
	ck_assert_int_eq(req("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", true, NULL, &r), 404);
	ck_assert_int_eq(req("GET /metrics/x HTTP/1.1\r\nHost: localhost\r\n\r\n", true, NULL,
	    &r), 404);
	ck_assert_int_eq(req("GET /metricsx HTTP/1.1\r\nHost: localhost\r\n\r\n", true, NULL,
	    &r), 404);
}
END_TEST

/* A token file's text: 16 to 128 b64token characters, one line. */
START_TEST(token_parse)
{
	char out[METRICS_TOKEN_MAX + 1];
	char big[METRICS_TOKEN_MAX + 2];

	ck_assert_int_eq(metrics_token_parse(TOKEN "\n", strlen(TOKEN) + 1, out), 0);
	ck_assert_str_eq(out, TOKEN);
	ck_assert_int_eq(metrics_token_parse("abcDEF0123-._~+/==", 18, out), 0);
	ck_assert_str_eq(out, "abcDEF0123-._~+/==");
	ck_assert_int_eq(metrics_token_parse("short", 5, out), -EINVAL);
	ck_assert_int_eq(metrics_token_parse(TOKEN " x", strlen(TOKEN) + 2, out), -EINVAL);
	ck_assert_int_eq(metrics_token_parse(TOKEN "\n\n", strlen(TOKEN) + 2, out), -EINVAL);
	ck_assert_int_eq(metrics_token_parse("==" TOKEN, strlen(TOKEN) + 2, out), -EINVAL);
	ck_assert_int_eq(metrics_token_parse("0123456789abcdef=x", 18, out), -EINVAL);
	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(metrics_token_parse(big, METRICS_TOKEN_MAX, out), 0);
	ck_assert_int_eq(metrics_token_parse(big, METRICS_TOKEN_MAX + 1, out), -EINVAL);
}
END_TEST

/* A stamp later than the clock (never, but not a huge number either) and
 * the first instants after the epoch stay in range. */
START_TEST(render_clock_edges)
{
	struct fixture f;
	struct evbuffer *b;
	char *s;

	fixture_init(&f);
	f.peer[0].last_rx_ms = NOW_MS + 1500;
	s = render(&f);
	ck_assert_msg(strstr(s, "last_receive_timestamp_seconds{interface=\"tou3\",peer=\"bob\"} "
	    "1796500001.750\n") != NULL, "%s", s);
	free(s);
	f.peer[0].last_rx_ms = 1;
	ck_assert_ptr_nonnull(b = evbuffer_new());
	ck_assert_int_eq(metrics_render(b, &f.t, NOW_MS, 1000), 0);
	s = take_text(b);
	ck_assert_msg(strstr(s, "last_receive_timestamp_seconds{interface=\"tou3\",peer=\"bob\"} "
	    "0.000\n") != NULL, "%s", s);
	free(s);
	conf_free(f.t.conf);
}
END_TEST

static Suite *
metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("metrics");

	tcase_add_test(tc, escape);
	tcase_add_test(tc, render_all);
	tcase_add_test(tc, endpoint_changes_and_reasons);
	tcase_add_test(tc, render_no_peers);
	tcase_add_test(tc, render_clock_edges);
	tcase_add_test(tc, render_batches);
	tcase_add_test(tc, render_list_changes);
	tcase_add_test(tc, request_check);
	tcase_add_test(tc, token_parse);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(metrics_suite());
}
