/* check_show.c - `touctl show` output: JSON (a stable interface, compared
 * with golden files and checked to parse) and text. */
#include <check.h>
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf.h"
#include "control.h"
#include "ctx.h"
#include "drop.h"
#include "peer.h"
#include "show.h"
#include "tun.h"
#include "udp.h"
#include "util.h"

#include "testutil.h"
#include "testutil_peer.h"

static char *
testdata_read(const char *name)
{
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	check_data_path(path, sizeof(path), "show/%s", name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Valid JSON (jansson, strict: duplicate keys refused) whose top level is
 * an object.  Counters are unsigned 64-bit, beyond jansson's integers:
 * numbers are read as reals, which checks their syntax all the same. */
static bool
json_valid(const char *s)
{
	json_error_t err;
	json_t *j;
	bool ok;

	if (!(j = json_loads(s, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &err))) {
		fprintf(stderr, "not JSON: %s (line %d, column %d)\n", err.text,
		    err.line, err.column);
		return false;
	}
	ok = json_is_object(j);
	json_decref(j);
	return ok;
}

static const char conf_text[] =
    "[interface]\n"
    "name = tou0\n"
    "address = 10.77.0.1/24\n"
    "address = fd77::1/64\n"
    "listen = 6080\n"
    "encryption = none\n"
    "\n"
    "[peer bob]\n"
    "endpoint = 192.0.2.7:6080\n"
    "address = 10.77.0.2\n"
    "allowed-ips = 192.168.50.0/24, fd50::/64\n"
    "keepalive = 25\n"
    "fingerprint = sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"
    "\n"
    "[peer carol]\n"
    "address = 10.77.0.3\n"
    "ca = /etc/tou/ca.pem\n"
    "name = carol.example.net\n"
    "\n"
    "[peer dave]\n"
    "endpoint = [2001:db8::7]:6081\n"
    "address = fd77::4\n";

struct fixture {
	struct toud t;
	struct tun tun;
	struct udp udp;
	struct peer peer[3];
	struct peer *peers[3];
	struct peer_paths bob_paths;
};

static void
set_endpoint(struct peer *p, const char *addr, uint16_t port)
{
	struct ipaddr a = check_addr(addr);

	ck_assert_int_eq(util_sa_from_addr(&p->endpoint, &a, port), 0);
	p->has_endpoint = true;
}

/* bob: up, counters, drops, heard from 12 s ago; carol: idle, nothing yet;
 * dave: dead, IPv6 endpoint, large counters, heard from 3 s ago.  (Ages are
 * monotonic time, which starts at boot: keep them small.) */
static void
fixture_init(struct fixture *f)
{
	struct conf_error err;
	uint64_t now;

	memset(f, 0, sizeof(*f));
	ck_assert_msg(conf_parse("test.conf", conf_text, strlen(conf_text), &f->t.conf,
	    &err) == 0, "%d: %s", err.line, err.msg);
	ck_assert_uint_eq(f->t.conf->n_peers, 3);
	/* as psk_load_conf() leaves a peer with a preshared key */
	f->t.conf->peers[0].has_psk = true;
	f->t.tun_mtu = 1415;
	/* UDP GSO on the IPv6 socket only; TUN offloads accepted but not
	 * TCP segmentation; no GRO. */
	f->tun.vnet = true;
	f->tun.offloads = 0x01;
	f->udp.gso6 = true;
	f->t.tun = &f->tun;
	f->t.udp = &f->udp;
	f->t.drops[DROP_NO_PEER] = 5;
	f->t.drops[DROP_GUE + GUE_ERR_TRUNCATED] = 2;
	f->t.host_changes = 12;
	f->t.events[EVENT_COOKIE_REQUESTED] = 4;
	check_peers_link(&f->t, f->peer, f->peers, 3);
	/* bob is reached over TCP (UDP is down), after three moves. */
	check_peer_on_tcp(&f->peer[0], &f->bob_paths, 3);

	f->peer[0].state = PEER_UP;
	set_endpoint(&f->peer[0], "192.0.2.7", 6080);
	f->peer[0].rx_bytes = 1268777;
	f->peer[0].tx_bytes = 3482;
	f->peer[0].rx_packets = 900;
	f->peer[0].tx_packets = 40;
	f->peer[0].drops[DROP_SOURCE] = 3;
	f->peer[0].drops[drop_gue(GUE_ERR_VARIANT)] = 1;
	f->peer[0].events[EVENT_HANDSHAKE_COMPLETED] = 1;

	f->peer[1].state = PEER_IDLE;

	f->peer[2].state = PEER_DEAD;
	set_endpoint(&f->peer[2], "2001:db8::7", 6081);
	f->peer[2].rx_bytes = 5ULL << 30;
	f->peer[2].tx_bytes = 1023;
	f->peer[2].rx_packets = 18446744073709551615ULL;
	f->peer[2].tx_packets = 1;
	f->peer[2].drops[DROP_TUN_WRITE] = 7;
	f->peer[2].last_error = (char *)"handshake failed: retransmissions exhausted";  /* never freed */

	/* Well inside the second, so the rendering sees the same count. */
	now = util_now_ms();
	f->peer[0].last_rx_ms = now - 12000 - 100;
	f->peer[2].last_rx_ms = now - 3000 - 100;
	f->peer[2].next_attempt_ms = now + 4500;
}

static void
fixture_free(struct fixture *f)
{
	conf_free(f->t.conf);
}

/* The heap figure is the process's own: zero it where it is printed. */
static void
mask_heap(char *s)
{
	static const char *const marks[] = { "\"heap_used\": ", "heap: " };
	size_t k;

	for (k = 0; k < sizeof(marks) / sizeof(marks[0]); k++) {
		char *p = strstr(s, marks[k]), *d;

		if (!p)
			continue;
		p += strlen(marks[k]);
		for (d = p; *d >= '0' && *d <= '9'; d++)
			;
		if (d > p) {
			*p = '0';
			memmove(p + 1, d, strlen(d) + 1);
		}
	}
}

/* CHECK_SHOW_WRITE=1 rewrites the golden files from what is rendered
 * (review the diff before committing it). */
static void
check_golden(char *got, const char *file)
{
	char *want;

	mask_heap(got);
	if (getenv("CHECK_SHOW_WRITE")) {
		char path[4096];
		FILE *f;

		check_data_path(path, sizeof(path), "show/%s", file);
		ck_assert_ptr_nonnull(f = fopen(path, "w"));
		ck_assert_int_ge(fputs(got, f), 0);
		ck_assert_int_eq(fclose(f), 0);
	}
	want = testdata_read(file);

	ck_assert_msg(strcmp(got, want) == 0, "%s differs; got:\n%s", file, got);
	free(want);
}

/* The wall-clock fields that depend on the second the test runs in
 * ("*_unix" of a relative time, "*_age_s" of a wall-clock one) read "N",
 * so that golden files can hold them; time_fields checks their values. */
static void
mask_clock(char *s)
{
	static const char *const keys[] = { "\"last_handshake_age_s\": ",
	    "\"last_rx_unix\": ", "\"next_attempt_unix\": " };
	size_t k;
	char *p, *e;

	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (p = s; (p = strstr(p, keys[k])); ) {
			p += strlen(keys[k]);
			for (e = p; *e >= '0' && *e <= '9'; e++)
				;
			if (e > p) {
				*p++ = 'N';
				memmove(p, e, strlen(e) + 1);
			}
		}
}

/* --- tests ------------------------------------------------------------------ */

START_TEST(json_all)
{
	struct fixture f;
	char *s;

	fixture_init(&f);
	s = show_render(&f.t, NULL, true);
	ck_assert_ptr_nonnull(s);
	ck_assert(json_valid(s));
	mask_clock(s);
	check_golden(s, "all.json");
	free(s);
	fixture_free(&f);
}
END_TEST

START_TEST(json_one_peer)
{
	struct fixture f;
	char *s;

	fixture_init(&f);
	s = show_render(&f.t, "bob", true);
	ck_assert_ptr_nonnull(s);
	ck_assert(json_valid(s));
	mask_clock(s);
	check_golden(s, "bob.json");
	free(s);
	s = show_render(&f.t, "carol", true);
	ck_assert_ptr_nonnull(s);
	ck_assert(json_valid(s));
	ck_assert_ptr_nonnull(strstr(s, "\"name\": \"carol\""));
	ck_assert_ptr_nonnull(strstr(s, "\"endpoint\": null"));
	ck_assert_ptr_nonnull(strstr(s, "\"last_rx\": null"));
	ck_assert_ptr_nonnull(strstr(s, "\"drops\": {}"));
	ck_assert_ptr_null(strstr(s, "bob"));
	ck_assert_ptr_null(strstr(s, "dave"));
	free(s);
	fixture_free(&f);
}
END_TEST

START_TEST(text_all)
{
	struct fixture f;
	char *s;

	fixture_init(&f);
	s = show_render(&f.t, NULL, false);
	ck_assert_ptr_nonnull(s);
	check_golden(s, "all.txt");
	free(s);
	fixture_free(&f);
}
END_TEST

START_TEST(text_one_peer)
{
	struct fixture f;
	char *s;

	fixture_init(&f);
	s = show_render(&f.t, "dave", false);
	ck_assert_ptr_nonnull(s);
	check_golden(s, "dave.txt");
	free(s);
	fixture_free(&f);
}
END_TEST

START_TEST(unknown_peer)
{
	struct fixture f;

	fixture_init(&f);
	errno = 0;
	ck_assert_ptr_null(show_render(&f.t, "mallory", true));
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_ptr_null(show_render(&f.t, "mallory", false));
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_ptr_null(show_render(&f.t, "", true));
	ck_assert_int_eq(errno, ENOENT);
	/* Names match exactly. */
	ck_assert_ptr_null(show_render(&f.t, "Bob", true));
	ck_assert_ptr_null(show_render(&f.t, "bo", true));
	fixture_free(&f);
}
END_TEST

/* A peer field of the rendered JSON as a number; -1 for null. */
static double
peer_num(json_t *root, size_t i, const char *key)
{
	json_t *v = json_object_get(json_array_get(json_object_get(root, "peers"), i), key);

	ck_assert_msg(v != NULL, "no field %s in peer %zu", key, i);
	return json_is_null(v) ? -1 : json_number_value(v);
}

/* Each time both ways: *_unix wall clock, *_age_s ago, *_in_s ahead, the
 * first fields (last_handshake, last_rx, next_attempt) unchanged; and
 * "losses", the drops less cookie requests and the kernel's chatter. */
START_TEST(time_fields)
{
	struct fixture f;
	json_error_t err;
	json_t *root;
	double now;
	char *s;

	fixture_init(&f);
	f.peer[0].last_handshake = (uint64_t)time(NULL) - 42;
	f.t.drops[DROP_HS_COOKIE] = 6;
	f.t.drops[DROP_NOT_UNICAST] = 3;
	f.t.drops[DROP_NO_PEER] = 2;
	f.peer[0].drops[DROP_HS_COOKIE] = 1;
	now = (double)time(NULL);
	ck_assert_ptr_nonnull(s = show_render(&f.t, NULL, true));
	root = json_loads(s, JSON_DECODE_INT_AS_REAL, &err);
	ck_assert_ptr_nonnull(root);
	ck_assert_double_eq(peer_num(root, 0, "last_handshake_unix"),
	    peer_num(root, 0, "last_handshake"));
	ck_assert_double_ge(peer_num(root, 0, "last_handshake_age_s"), 42);
	ck_assert_double_le(peer_num(root, 0, "last_handshake_age_s"), 44);
	ck_assert_double_eq(peer_num(root, 0, "last_rx_age_s"), peer_num(root, 0, "last_rx"));
	ck_assert_double_eq(peer_num(root, 0, "last_rx_age_s"), 12);
	ck_assert_double_ge(peer_num(root, 0, "last_rx_unix"), now - 13);
	ck_assert_double_le(peer_num(root, 0, "last_rx_unix"), now - 10);
	ck_assert_double_eq(peer_num(root, 0, "next_attempt_in_s"), -1);
	ck_assert_double_eq(peer_num(root, 0, "next_attempt_unix"), -1);
	ck_assert_double_eq(peer_num(root, 2, "next_attempt_in_s"),
	    peer_num(root, 2, "next_attempt"));
	ck_assert_double_ge(peer_num(root, 2, "next_attempt_unix"), now + 4);
	ck_assert_double_le(peer_num(root, 2, "next_attempt_unix"), now + 7);
	ck_assert_double_eq(peer_num(root, 1, "last_handshake_unix"), -1);
	ck_assert_double_eq(peer_num(root, 1, "last_handshake_age_s"), -1);
	ck_assert_double_eq(peer_num(root, 1, "last_rx_unix"), -1);
	ck_assert_double_eq(json_number_value(json_object_get(json_object_get(root, "interface"),
	    "losses")), 4);   /* no_peer 2, gue_truncated 2 */
	ck_assert_double_eq(peer_num(root, 0, "losses"), 4);   /* source 3, gue 1 */
	ck_assert_double_eq(peer_num(root, 2, "losses"), 7);
	json_decref(root);
	free(s);
	/* The text: the losses under "drops", the rest apart. */
	ck_assert_ptr_nonnull(s = show_render(&f.t, NULL, false));
	ck_assert_ptr_nonnull(strstr(s, "  drops: gue_truncated 2, no_peer 2\n"
	    "  other: not_unicast 3, cookie_requested 6 (not losses)\n"));
	free(s);
	fixture_free(&f);
}
END_TEST

START_TEST(no_peers_no_drops)
{
	struct fixture f;
	char *s;

	fixture_init(&f);
	f.t.n_peers = 0;
	memset(f.t.drops, 0, sizeof(f.t.drops));
	memset(f.t.events, 0, sizeof(f.t.events));
	f.t.conf->iface.encryption = CONF_ENC_DTLS;
	f.t.conf->iface.listen_port = 7000;
	f.t.tun_mtu = 1380;
	f.tun.offloads = 0x07;
	f.udp.gso6 = false;
	f.udp.gro4 = true;
	s = show_render(&f.t, NULL, true);
	ck_assert_ptr_nonnull(s);
	ck_assert(json_valid(s));
	mask_heap(s);
	ck_assert_str_eq(s,
	    "{\n"
	    "  \"interface\": {\n"
	    "    \"name\": \"tou0\",\n"
	    "    \"mtu\": 1380,\n"
	    "    \"listen_port\": 7000,\n"
	    "    \"encryption\": \"dtls\",\n"
	    "    \"offload\": {\"tun_tso\": true, \"udp_gso\": false, \"udp_gro\": true, "
	    "\"tun_coalesce\": false},\n"
	    "    \"threads\": {\"udp_send\": false, \"tun_write\": false, \"record_open\": false},\n"
	    "    \"drops\": {},\n"
	    "    \"events\": {},\n"
	    "    \"sessions\": 0,\n"
	    "    \"half_open\": 0,\n"
	    "    \"peer_count\": 0,\n"
	    "    \"heap_used\": 0,\n"
	    "    \"tcp_listen\": null,\n"
	    "    \"tcp_connections\": 0,\n"
	    "    \"fingerprint\": null,\n"
	    "    \"server_id\": null,\n"
	    "    \"dns\": \"none\",\n"
	    "    \"dns_error\": null,\n"
	    "    \"fwmark\": 0,\n"
	    "    \"table\": 254,\n"
	    "    \"losses\": 0,\n"
	    "    \"host_changes\": 12,\n"
	    "    \"host_change_pending\": false\n"
	    "  },\n"
	    "  \"peers\": []\n"
	    "}\n");
	free(s);
	s = show_render(&f.t, NULL, false);
	ck_assert_ptr_nonnull(s);
	mask_heap(s);
	ck_assert_str_eq(s,
	    "interface: tou0\n"
	    "  listen port: 7000\n"
	    "  mtu: 1380\n"
	    "  encryption: dtls\n"
	    "  offload: tun-tso on, udp-gso off, udp-gro on, tun-coalesce off\n"
	    "  threads: udp-send off, tun-write off, record-open off\n"
	    "  peers: 0, sessions: 0, heap: 0 KiB\n");
	free(s);
	ck_assert_ptr_null(show_render(&f.t, "bob", false));
	ck_assert_int_eq(errno, ENOENT);
	fixture_free(&f);
}
END_TEST

/* fwmark and table: in the JSON always (0 = no mark, table 0 = off, 254 =
 * main), in the text only when they are not the plain default. */
START_TEST(routing)
{
	static const char *const full4 = "  fwmark: 0xca6c\n  table: 51820 (default routes; "
	    "the others in main)\n";
	struct fixture f;
	char *s;

	fixture_init(&f);
	f.t.conf->iface.table = CONF_TABLE_NUMBER;
	f.t.conf->iface.table_number = 100;
	f.t.conf->iface.fwmark = 0x51;
	f.t.fwmark = 0x51;
	s = show_render(&f.t, "bob", true);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(strstr(s, "\"fwmark\": 81,\n    \"table\": 100,\n") != NULL, "%s", s);
	free(s);
	s = show_render(&f.t, "bob", false);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(strstr(s, "\n  fwmark: 0x51\n  table: 100\n") != NULL, "%s", s);
	free(s);

	f.t.conf->iface.table = CONF_TABLE_OFF;
	f.t.conf->iface.fwmark = 0;
	f.t.fwmark = 0;
	s = show_render(&f.t, "bob", true);
	ck_assert_msg(strstr(s, "\"fwmark\": 0,\n    \"table\": 0,\n") != NULL, "%s", s);
	free(s);
	s = show_render(&f.t, "bob", false);
	ck_assert_msg(strstr(s, "\n  table: off (no routes installed)\n") != NULL, "%s", s);
	ck_assert_msg(strstr(s, "fwmark") == NULL, "%s", s);
	free(s);

	/* table = auto: main until a peer has a prefix of length 0 */
	f.t.conf->iface.table = CONF_TABLE_AUTO;
	f.t.full_table = 51820;
	s = show_render(&f.t, "bob", false);
	ck_assert_msg(strstr(s, "table") == NULL, "%s", s);
	free(s);
	ck_assert_uint_ge(f.t.conf->peers[0].n_allowed_ips, 1);
	ck_assert_int_eq(util_prefix_parse("0.0.0.0/0", &f.t.conf->peers[0].allowed_ips[0].p), 0);
	f.t.fwmark = 51820;
	s = show_render(&f.t, "bob", true);
	ck_assert_msg(strstr(s, "\"fwmark\": 51820,\n    \"table\": 51820,\n") != NULL, "%s", s);
	ck_assert(json_valid(s));
	free(s);
	s = show_render(&f.t, "bob", false);
	ck_assert_msg(strstr(s, full4) != NULL, "%s", s);
	free(s);
	fixture_free(&f);
}
END_TEST

START_TEST(states)
{
	static const struct { enum peer_state s; const char *json; } cases[] = {
		{ PEER_IDLE, "\"state\": \"idle\"" },
		{ PEER_HANDSHAKING, "\"state\": \"handshaking\"" },
		{ PEER_UP, "\"state\": \"up\"" },
		{ PEER_DEAD, "\"state\": \"dead\"" },
	};
	struct fixture f;
	size_t i;
	char *s;

	fixture_init(&f);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		f.peer[1].state = cases[i].s;
		s = show_render(&f.t, "carol", true);
		ck_assert_ptr_nonnull(s);
		ck_assert_msg(strstr(s, cases[i].json) != NULL, "%s", s);
		free(s);
	}
	fixture_free(&f);
}
END_TEST

/* Interface and peer names are restricted by the parser, but the output
 * must stay valid JSON and harmless on a terminal whatever they hold. */
START_TEST(escaping)
{
	struct fixture f;
	char *s;

	fixture_init(&f);
	memcpy(f.t.conf->iface.name, "t\"\\\n\x01\x7f\xc3\xa9\xff", 10);
	f.peer[0].name = "a/b\t\r\b\f\x1f\xe2\x82\xac\xc3\x28\xed\xa0\x80z";
	s = show_render(&f.t, NULL, true);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(json_valid(s), "%s", s);
	ck_assert_ptr_nonnull(strstr(s,
	    "\"name\": \"t\\\"\\\\\\n\\u0001\\u007f\xc3\xa9\\ufffd\","));
	ck_assert_ptr_nonnull(strstr(s,
	    "\"name\": \"a/b\\t\\r\\b\\f\\u001f\xe2\x82\xac\\ufffd(\\ufffd\\ufffd\\ufffdz\","));
	free(s);

	s = show_render(&f.t, NULL, false);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(strstr(s,
	    "interface: t\"\\x5c\\x0a\\x01\\x7f\xc3\xa9\xff\n"));
	ck_assert_ptr_nonnull(strstr(s, "peer: a/b\\x09\\x0d\\x08\\x0c\\x1f"));
	ck_assert_ptr_null(strchr(s, '\x1f'));
	ck_assert_ptr_null(strchr(s, '\r'));
	free(s);
	fixture_free(&f);
}
END_TEST

START_TEST(text_units)
{
	static const struct { uint64_t rx, tx; const char *line; } cases[] = {
		{ 0, 1, "  transfer: 0 B received, 1 B sent\n" },
		{ 1023, 1024, "  transfer: 1023 B received, 1.00 KiB sent\n" },
		{ 1536, 1048576, "  transfer: 1.50 KiB received, 1.00 MiB sent\n" },
		{ 3ULL << 40, 18446744073709551615ULL,
		  "  transfer: 3.00 TiB received, 16.00 EiB sent\n" },
	};
	static const struct { uint64_t secs; const char *line; } ago[] = {
		{ 1, "  latest receive: 1 second ago\n" },
		{ 59, "  latest receive: 59 seconds ago\n" },
		{ 60, "  latest receive: 1 minute ago\n" },
		{ 61, "  latest receive: 1 minute, 1 second ago\n" },
		{ 3725, "  latest receive: 1 hour, 2 minutes, 5 seconds ago\n" },
		{ 90061, "  latest receive: 1 day, 1 hour, 1 minute, 1 second ago\n" },
		{ 2 * 86400 + 7200, "  latest receive: 2 days, 2 hours ago\n" },
	};
	struct fixture f;
	size_t i;
	char *s;

	fixture_init(&f);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		f.peer[1].rx_bytes = cases[i].rx;
		f.peer[1].tx_bytes = cases[i].tx;
		s = show_render(&f.t, "carol", false);
		ck_assert_ptr_nonnull(s);
		ck_assert_msg(strstr(s, cases[i].line) != NULL, "%s", s);
		free(s);
	}
	for (i = 0; i < ARRAY_SIZE(ago); i++) {
		uint64_t now = util_now_ms();

		/* The clock counts from boot: an age older than that cannot
		 * be expressed (rare, on a machine that just started). */
		if (now <= ago[i].secs * 1000 + 1000)
			continue;
		f.peer[1].last_rx_ms = now - ago[i].secs * 1000 - 100;
		s = show_render(&f.t, "carol", false);
		ck_assert_ptr_nonnull(s);
		ck_assert_msg(strstr(s, ago[i].line) != NULL, "%s", s);
		free(s);
	}
	/* The monotonic clock never runs backwards, but a stale stamp must not
	 * turn into a huge number. */
	f.peer[1].last_rx_ms = util_now_ms() + 5000;
	s = show_render(&f.t, "carol", false);
	ck_assert_ptr_nonnull(strstr(s, "  latest receive: now\n"));
	free(s);
	s = show_render(&f.t, "carol", true);
	ck_assert_ptr_nonnull(strstr(s, "\"last_rx\": 0,\n"));
	free(s);
	fixture_free(&f);
}
END_TEST

/* The checker must itself reject what is not JSON (with the strictness the
 * tests above rely on), or they would prove nothing. */
START_TEST(checker_rejects)
{
	static const char *const bad[] = {
		"", "{", "{}{}", "[]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}",
		"{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":\"\x01\"}",
		"{\"a\":\"\\x41\"}", "{\"a\":\"\\u12g4\"}", "{\"a\":\"\xff\"}",
		"{\"a\":\"\xc3\x28\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":nul}",
		"{\"a\":[1,]}", "{\"a\":\"x}", "{\"a\":1} x", "{\"a\":1,\"a\":2}",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ck_assert_msg(!json_valid(bad[i]), "accepted: %s", bad[i]);
	ck_assert(json_valid(" {\"a\": [1, -2.5e3, true, false, null, \"\\u00e9\xc3\xa9\", {}]}\n"));
}
END_TEST

/* --- streaming: show_stream gives what show_render gives -------------------- */

/* A daemon of n peers p0, p1, ..., in various states with some traffic, on
 * the fixture's interface. */
struct many {
	struct fixture f;
	struct conf *fixture_conf;
	struct peer *peer;
	struct peer **peers;
};

static void
many_init(struct many *m, size_t n)
{
	struct conf_error err;
	char *text = NULL;
	size_t len, i;
	FILE *b;

	fixture_init(&m->f);
	ck_assert_ptr_nonnull(b = open_memstream(&text, &len));
	fputs("[interface]\nname = tou0\naddress = 10.77.0.1/16\nlisten = 6080\n"
	    "encryption = none\n", b);
	for (i = 0; i < n; i++)
		fprintf(b, "\n[peer p%zu]\naddress = 10.77.%zu.%zu\n%s", i, (i + 2) >> 8,
		    (i + 2) & 255, i % 5 == 0 ? "keepalive = 25\n" : "");
	ck_assert_int_eq(fclose(b), 0);
	m->fixture_conf = m->f.t.conf;
	ck_assert_msg(conf_parse("many.conf", text, len, &m->f.t.conf, &err) == 0, "%d: %s",
	    err.line, err.msg);
	free(text);
	ck_assert_ptr_nonnull(m->peer = calloc(n + 1, sizeof(*m->peer)));
	ck_assert_ptr_nonnull(m->peers = calloc(n + 1, sizeof(*m->peers)));
	check_peers_link(&m->f.t, m->peer, m->peers, n);
	for (i = 0; i < n; i++) {
		m->peer[i].state = i % 3 == 0 ? PEER_UP : i % 3 == 1 ? PEER_IDLE : PEER_DEAD;
		m->peer[i].rx_bytes = i * 1000;
		m->peer[i].tx_packets = i;
		m->peer[i].drops[DROP_NO_PEER] = i % 7;
		if (i % 2)
			set_endpoint(&m->peer[i], "192.0.2.7", (uint16_t)(1000 + i));
	}
}

static void
many_free(struct many *m)
{
	conf_free(m->f.t.conf);
	m->f.t.conf = m->fixture_conf;
	fixture_free(&m->f);
	free(m->peer);
	free(m->peers);
}

/* The whole stream, max peers a call; checks that it took as many calls. */
static char *
stream_all(struct toud *t, bool json, size_t max)
{
	struct show_stream *st;
	size_t len, calls = 0, n = t->n_peers;
	char *out = NULL;
	FILE *b;
	int r;

	ck_assert_ptr_nonnull(st = show_stream_new(t, json));
	ck_assert_ptr_nonnull(b = open_memstream(&out, &len));
	do {
		r = show_stream_next(st, b, max);
		calls++;
	} while (r > 0);
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(calls, n ? (n + max - 1) / max : 1);
	ck_assert_int_eq(fclose(b), 0);
	show_stream_free(st);
	return out;
}

START_TEST(stream_equals_render)
{
	static const size_t sizes[] = { 0, 1, 1000 }, batches[] = { 1, 7, 128, 5000 };
	struct many m;
	size_t k, b;
	char *whole, *part;
	int json;

	for (k = 0; k < ARRAY_SIZE(sizes); k++) {
		many_init(&m, sizes[k]);
		for (json = 0; json < 2; json++) {
			ck_assert_ptr_nonnull(whole = show_render(&m.f.t, NULL, json));
			mask_heap(whole);
			if (json)
				ck_assert(json_valid(whole));
			for (b = 0; b < ARRAY_SIZE(batches); b++) {
				part = stream_all(&m.f.t, json, batches[b]);
				mask_heap(part);
				ck_assert_msg(strcmp(whole, part) == 0,
				    "%zu peers, %s, %zu a batch: the stream differs",
				    sizes[k], json ? "json" : "text", batches[b]);
				free(part);
			}
			free(whole);
		}
		many_free(&m);
	}
}
END_TEST

/* A stream goes on over changes to the peers, not to their list: it stops
 * with ESTALE, and never looks at a peer of the list that replaced its own. */
START_TEST(stream_list_changed)
{
	struct show_stream *st;
	struct many m;
	char *out = NULL;
	size_t len;
	FILE *b;

	many_init(&m, 10);
	ck_assert_ptr_nonnull(b = open_memstream(&out, &len));
	ck_assert_ptr_nonnull(st = show_stream_new(&m.f.t, true));
	ck_assert_int_eq(show_stream_next(st, b, 4), 1);
	m.peer[5].rx_bytes = 42;                /* a peer changes: fine */
	ck_assert_int_eq(show_stream_next(st, b, 4), 1);
	m.f.t.peers_gen++;                      /* the list changes: no more */
	m.f.t.peers = NULL;
	errno = 0;
	ck_assert_int_eq(show_stream_next(st, b, 4), -1);
	ck_assert_int_eq(errno, ESTALE);
	ck_assert_int_eq(show_stream_next(st, b, 4), -1);
	show_stream_free(st);
	m.f.t.peers = m.peers;
	ck_assert_int_eq(fclose(b), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"rx_bytes\": 42,"));
	ck_assert_ptr_null(strstr(out, "\"p8\""));
	free(out);
	many_free(&m);
}
END_TEST

static Suite *
show_suite(void)
{
	Suite *s = suite_create("show");
	TCase *tc = tcase_create("show");

	tcase_add_test(tc, json_all);
	tcase_add_test(tc, time_fields);
	tcase_add_test(tc, json_one_peer);
	tcase_add_test(tc, text_all);
	tcase_add_test(tc, text_one_peer);
	tcase_add_test(tc, unknown_peer);
	tcase_add_test(tc, no_peers_no_drops);
	tcase_add_test(tc, states);
	tcase_add_test(tc, routing);
	tcase_add_test(tc, escaping);
	tcase_add_test(tc, text_units);
	tcase_add_test(tc, checker_rejects);
	tcase_add_test(tc, stream_equals_render);
	tcase_add_test(tc, stream_list_changed);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(show_suite());
}
