/* check_conf_diff.c - conf_diff_iface(), conf_diff_peer() and their key
 * names: one bit for each key that differs, none for an equal section, and
 * the one rule for the order of address lists. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "conf_diff.h"
#include "util.h"

#include "testutil.h"

#define FP_A2 "a2aeb6b88ebbc7413e33ccaf26b44c6152219d0e9a845fe0eef401b3e5d78f8a"
#define FP_5E "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"

#define IFACE "[interface]\naddress = 10.77.0.1/24, fd77::1/64\nprivate-key = /k\n" \
	"certificate = /c\n"
#define PEER_KEYS "endpoint = a.example:6080\naddress = 10.77.0.2, fd77::2\n" \
	"allowed-ips = 192.168.50.0/24, fd50::/64\nkeepalive = 25\n"
#define PEER "[peer p]\nfingerprint = sha256:" FP_A2 "\n" PEER_KEYS

/* Parsed only: a diff does not need a valid file, and some variants (an
 * address outside every prefix) would not be. */
static struct conf *
parse(const char *text)
{
	struct conf_error err;
	struct conf *c = NULL;
	char buf[600];

	ck_assert_msg(conf_parse("t.conf", text, strlen(text), &c, &err) == 0, "rejected: %s\n%s",
	    conf_error_fmt(&err, buf, sizeof(buf)), text);
	return c;
}

static uint32_t
iface_diff(const char *a_text, const char *b_text)
{
	struct conf *a = parse(a_text), *b = parse(b_text);
	uint32_t d = conf_diff_iface(&a->iface, &b->iface);

	ck_assert_uint_eq(conf_diff_iface(&b->iface, &a->iface), d);
	conf_free(a);
	conf_free(b);
	return d;
}

/* The diff of the first peers of two files ([interface] IFACE). */
static uint32_t
peer_diff(const char *a_peer, const char *b_peer)
{
	char ta[1024], tb[1024];
	struct conf *a, *b;
	uint32_t d;

	snprintf(ta, sizeof(ta), IFACE "%s", a_peer);
	snprintf(tb, sizeof(tb), IFACE "%s", b_peer);
	a = parse(ta);
	b = parse(tb);
	ck_assert_uint_ge(a->n_peers, 1);
	ck_assert_uint_ge(b->n_peers, 1);
	d = conf_diff_peer(&a->peers[0], &b->peers[0]);
	ck_assert_uint_eq(conf_diff_peer(&b->peers[0], &a->peers[0]), d);
	conf_free(a);
	conf_free(b);
	return d;
}

/* "key = value\n": is the name of the bit the key before " ="? */
static void
assert_names_key(const char *name, const char *line)
{
	size_t n = strlen(name);

	ck_assert_msg(strncmp(line, name, n) == 0 && line[n] == ' ', "bit named %s for %s",
	    name, line);
}

/* Another spelling, other lines, defaults written out, peers in another
 * order: nothing differs. */
START_TEST(test_unchanged)
{
	struct conf *a, *b;
	char buf[256];
	size_t x;

	a = parse(IFACE PEER "[peer q]\nca = /ca\nname = q\naddress = 10.77.0.3\n");
	b = parse("# the same\n\n[peer q]\nCA = /ca\nname = q\naddress = 10.77.0.3/32\n"
	    "[interface]\nADDRESS = 10.77.0.1/24\naddress = fd77::1/64\ncertificate = /c\n"
	    "private-key = /k\nmtu = auto\nlisten = 6080\nrekey-bytes = 65536M\n"
	    "fwmark = off\ntable = auto\n"
	    "[peer p]\nfingerprint = SHA256:" FP_A2 "\nkeepalive = 25\n"
	    "allowed-ips = 192.168.50.0/24\nallowed-ips = fd50::/64\n"
	    "address = 10.77.0.2\naddress = fd77::2\nendpoint = a.example:6080\n");
	ck_assert_uint_eq(conf_diff_iface(&a->iface, &b->iface), 0);
	ck_assert_uint_eq(conf_diff_peer(&a->peers[0], &b->peers[1]), 0);
	ck_assert_uint_eq(conf_diff_peer(&a->peers[1], &b->peers[0]), 0);
	ck_assert(conf_equal(a, b));
	ck_assert(conf_equal(b, a));
	/* Against itself. */
	ck_assert_uint_eq(conf_diff_iface(&a->iface, &a->iface), 0);
	for (x = 0; x < a->n_peers; x++)
		ck_assert_uint_eq(conf_diff_peer(&a->peers[x], &a->peers[x]), 0);
	ck_assert_str_eq(conf_diff_peer_fmt(0, buf, sizeof(buf)), "");
	ck_assert_str_eq(conf_diff_iface_fmt(0, buf, sizeof(buf)), "");
	conf_free(a);
	conf_free(b);
}
END_TEST

/* Each [interface] key flags its own bit and no other, named after it;
 * the keys a reload applies are exactly the reloadable ones. */
START_TEST(test_iface_each_key)
{
	static const struct {
		const char *line;
		uint32_t bit;
	} v[] = {
		{ "name = tou1\n", CONF_IFACE_DIFF_NAME },
		{ "address = 10.77.0.9/24\n", CONF_IFACE_DIFF_ADDRESS },
		{ "listen = 6081\n", CONF_IFACE_DIFF_LISTEN },
		{ "listen = 0.0.0.0:6080\n", CONF_IFACE_DIFF_LISTEN },
		{ "private-key = /k2\n", CONF_IFACE_DIFF_PRIVATE_KEY },
		{ "certificate = /c2\n", CONF_IFACE_DIFF_CERTIFICATE },
		{ "keylog-file = /kl\n", CONF_IFACE_DIFF_KEYLOG_FILE },
		{ "mtu = 1400\n", CONF_IFACE_DIFF_MTU },
		{ "path-mtu = 1501\n", CONF_IFACE_DIFF_PATH_MTU },
		{ "user = toud\n", CONF_IFACE_DIFF_USER },
		{ "encryption = none\n", CONF_IFACE_DIFF_ENCRYPTION },
		{ "offload = off\n", CONF_IFACE_DIFF_OFFLOAD },
		{ "threads = on\n", CONF_IFACE_DIFF_THREADS },
		{ "log-level = debug\n", CONF_IFACE_DIFF_LOG_LEVEL },
		{ "control = /run/x.sock\n", CONF_IFACE_DIFF_CONTROL },
		{ "rekey-time = 61\n", CONF_IFACE_DIFF_REKEY_TIME },
		{ "session-max-age = 7201\n", CONF_IFACE_DIFF_SESSION_MAX_AGE },
		{ "rekey-bytes = 65G\n", CONF_IFACE_DIFF_REKEY_BYTES },
		{ "rekey-records = 1M\n", CONF_IFACE_DIFF_REKEY_RECORDS },
		{ "fwmark = 1\n", CONF_IFACE_DIFF_FWMARK },
		{ "table = off\n", CONF_IFACE_DIFF_TABLE },
		{ "table = 254\n", CONF_IFACE_DIFF_TABLE },
		{ "table = 100\n", CONF_IFACE_DIFF_TABLE },
		{ "fail-open = yes\n", CONF_IFACE_DIFF_FAIL_OPEN },
		{ "metrics = 127.0.0.1:9586\n", CONF_IFACE_DIFF_METRICS },
		{ "metrics-allow-remote = yes\n", CONF_IFACE_DIFF_METRICS_ALLOW_REMOTE },
		{ "server-id = 2\n", CONF_IFACE_DIFF_SERVER_ID },
		{ "dns = 10.77.0.53\n", CONF_IFACE_DIFF_DNS },
		{ "dns-search = example.com\n", CONF_IFACE_DIFF_DNS_SEARCH },
		{ "listen-tcp = 443\n", CONF_IFACE_DIFF_LISTEN_TCP },
		{ "metrics-token-file = /t\n", CONF_IFACE_DIFF_METRICS_TOKEN_FILE },
	};
	const char *base = "[interface]\naddress = 10.77.0.1/24\n";
	uint32_t all = 0, reloadable = CONF_IFACE_DIFF_LOG_LEVEL | CONF_IFACE_DIFF_REKEY_TIME |
	    CONF_IFACE_DIFF_SESSION_MAX_AGE | CONF_IFACE_DIFF_REKEY_BYTES |
	    CONF_IFACE_DIFF_REKEY_RECORDS | CONF_IFACE_DIFF_FAIL_OPEN |
	    CONF_IFACE_DIFF_METRICS | CONF_IFACE_DIFF_METRICS_ALLOW_REMOTE |
	    CONF_IFACE_DIFF_METRICS_TOKEN_FILE | CONF_IFACE_DIFF_DNS | CONF_IFACE_DIFF_DNS_SEARCH |
	    CONF_IFACE_DIFF_LISTEN_TCP;
	char text[512], name[64];
	size_t x;

	for (x = 0; x < ARRAY_SIZE(v); x++) {
		/* The address variant replaces the base's address. */
		if (v[x].bit == CONF_IFACE_DIFF_ADDRESS)
			snprintf(text, sizeof(text), "[interface]\n%s", v[x].line);
		else
			snprintf(text, sizeof(text), "%s%s", base, v[x].line);
		ck_assert_msg(iface_diff(base, text) == v[x].bit, "%s: got 0x%x", v[x].line,
		    (unsigned)iface_diff(base, text));
		assert_names_key(conf_diff_iface_fmt(v[x].bit, name, sizeof(name)), v[x].line);
		all |= v[x].bit;
	}
	/* Every bit has a variant: a new key needs one here. */
	ck_assert_uint_eq(all, (CONF_IFACE_DIFF_METRICS_TOKEN_FILE << 1) - 1);
	ck_assert_uint_eq(CONF_IFACE_DIFF_RELOADABLE, reloadable);
	/* Several at once, named in key order. */
	ck_assert_uint_eq(iface_diff(base, "[interface]\naddress = 10.77.0.1/24\n"
	    "table = off\nmtu = 1400\n"), CONF_IFACE_DIFF_MTU | CONF_IFACE_DIFF_TABLE);
	ck_assert_str_eq(conf_diff_iface_fmt(CONF_IFACE_DIFF_MTU | CONF_IFACE_DIFF_TABLE, name,
	    sizeof(name)), "mtu, table");
}
END_TEST

/* The preshared key read from the file counts, not only its name: the
 * same file may hold a new key at a reload. */
START_TEST(test_peer_psk_content)
{
	struct conf_peer a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.psk_file = b.psk_file = (char *)"/etc/tou/b.psk";
	ck_assert_uint_eq(conf_diff_peer(&a, &b), 0);
	a.has_psk = b.has_psk = true;
	memset(a.psk, 1, sizeof(a.psk));
	memset(b.psk, 1, sizeof(b.psk));
	ck_assert_uint_eq(conf_diff_peer(&a, &b), 0);
	b.psk[31] = 2;
	ck_assert_uint_eq(conf_diff_peer(&a, &b), CONF_PEER_DIFF_PRESHARED_KEY);
	b.has_psk = false;
	ck_assert_uint_eq(conf_diff_peer(&a, &b), CONF_PEER_DIFF_PRESHARED_KEY);
}
END_TEST

/* Each [peer] key flags its own bit and no other, named after it. */
START_TEST(test_peer_each_key)
{
	static const struct {
		const char *peer;
		const char *key;
		uint32_t bit;
	} v[] = {
		{ "[peer q]\nfingerprint = sha256:" FP_A2 "\n" PEER_KEYS, NULL,
		    CONF_PEER_DIFF_SECTION },
		{ "[peer p]\nfingerprint = sha256:" FP_5E "\n" PEER_KEYS, "fingerprint",
		    CONF_PEER_DIFF_FINGERPRINT },
		{ "[peer p]\nfingerprint = sha256:" FP_A2 "\nca = /ca\n" PEER_KEYS, "ca",
		    CONF_PEER_DIFF_CA },
		{ "[peer p]\nfingerprint = sha256:" FP_A2 "\nname = p\n" PEER_KEYS, "name",
		    CONF_PEER_DIFF_NAME },
		{ "[peer p]\nfingerprint = sha256:" FP_A2 "\nendpoint = b.example:6080\n"
		    "address = 10.77.0.2, fd77::2\nallowed-ips = 192.168.50.0/24, fd50::/64\n"
		    "keepalive = 25\n", "endpoint", CONF_PEER_DIFF_ENDPOINT },
		{ "[peer p]\nfingerprint = sha256:" FP_A2 "\nendpoint = a.example:6081\n"
		    "address = 10.77.0.2, fd77::2\nallowed-ips = 192.168.50.0/24, fd50::/64\n"
		    "keepalive = 25\n", "endpoint", CONF_PEER_DIFF_ENDPOINT },
		{ "[peer p]\nfingerprint = sha256:" FP_A2 "\n"
		    "address = 10.77.0.2, fd77::2\nallowed-ips = 192.168.50.0/24, fd50::/64\n"
		    "keepalive = 25\n", "endpoint", CONF_PEER_DIFF_ENDPOINT },
		{ PEER "address = 10.77.0.9\n", "address", CONF_PEER_DIFF_ADDRESS },
		{ PEER "allowed-ips = 192.168.51.0/24\n", "allowed-ips",
		    CONF_PEER_DIFF_ALLOWED_IPS },
		{ "[peer p]\nfingerprint = sha256:" FP_A2 "\nendpoint = a.example:6080\n"
		    "address = 10.77.0.2, fd77::2\nallowed-ips = 192.168.50.0/24, fd50::/64\n"
		    "keepalive = 26\n", "keepalive", CONF_PEER_DIFF_KEEPALIVE },
		{ PEER "preshared-key = /etc/tou/b.psk\n", "preshared-key",
		    CONF_PEER_DIFF_PRESHARED_KEY },
		{ PEER "endpoint-tcp = b.example:443\n", "endpoint-tcp",
		    CONF_PEER_DIFF_ENDPOINT_TCP },
		{ PEER "post-quantum = required\n", "post-quantum",
		    CONF_PEER_DIFF_POST_QUANTUM },
	};
	uint32_t all = 0, auth = CONF_PEER_DIFF_FINGERPRINT | CONF_PEER_DIFF_CA |
	    CONF_PEER_DIFF_NAME | CONF_PEER_DIFF_PRESHARED_KEY | CONF_PEER_DIFF_POST_QUANTUM;
	char name[64], line[64];
	size_t x;

	for (x = 0; x < ARRAY_SIZE(v); x++) {
		uint32_t d = peer_diff(PEER, v[x].peer);

		ck_assert_msg(d == v[x].bit, "variant %zu: got 0x%x, want 0x%x", x, (unsigned)d,
		    (unsigned)v[x].bit);
		conf_diff_peer_fmt(v[x].bit, name, sizeof(name));
		if (v[x].key) {
			snprintf(line, sizeof(line), "%s = ", v[x].key);
			assert_names_key(name, line);
		} else {
			ck_assert_str_eq(name, "[peer NAME]");
		}
		all |= v[x].bit;
	}
	/* A proxy needs an endpoint-tcp on both sides of the comparison. */
	ck_assert_uint_eq(peer_diff(PEER "endpoint-tcp = b.example:443\n",
	    PEER "endpoint-tcp = b.example:443\nproxy = http://192.0.2.8:3128\n"),
	    CONF_PEER_DIFF_PROXY);
	all |= CONF_PEER_DIFF_PROXY;
	/* So does a server name. */
	ck_assert_uint_eq(peer_diff(PEER "endpoint-tcp = b.example:443\n",
	    PEER "endpoint-tcp = b.example:443\nsni = cdn.example\n"), CONF_PEER_DIFF_SNI);
	all |= CONF_PEER_DIFF_SNI;
	/* Credentials need a proxy. */
	ck_assert_uint_eq(peer_diff(PEER "endpoint-tcp = b.example:443\nproxy = http://p:3128\n",
	    PEER "endpoint-tcp = b.example:443\nproxy = http://p:3128\nproxy-credentials = /pw\n"),
	    CONF_PEER_DIFF_PROXY_CREDENTIALS);
	all |= CONF_PEER_DIFF_PROXY_CREDENTIALS;
	ck_assert_uint_eq(all, (CONF_PEER_DIFF_POST_QUANTUM << 1) - 1);
	ck_assert_uint_eq(CONF_PEER_DIFF_AUTH, auth);
	/* A pinned key swapped for a CA and a name: three keys, all of them auth. */
	ck_assert_uint_eq(peer_diff(PEER, "[peer p]\nca = /ca\nname = p\n" PEER_KEYS),
	    CONF_PEER_DIFF_FINGERPRINT | CONF_PEER_DIFF_CA | CONF_PEER_DIFF_NAME);
	ck_assert_uint_eq(peer_diff("[peer p]\nca = /ca\nname = p\n",
	    "[peer p]\nca = /ca2\nname = p\n"), CONF_PEER_DIFF_CA);
	ck_assert_uint_eq(peer_diff("[peer p]\nca = /ca\nname = p\n",
	    "[peer p]\nca = /ca\nname = p2\n"), CONF_PEER_DIFF_NAME);
	ck_assert_str_eq(conf_diff_peer_fmt(CONF_PEER_DIFF_KEEPALIVE | CONF_PEER_DIFF_ENDPOINT,
	    name, sizeof(name)), "endpoint, keepalive");
}
END_TEST

/* An address list is a set, but its first address of each family is the
 * one in use; allowed-ips are a set. */
START_TEST(test_address_order)
{
	const char *tail = "private-key = /k\ncertificate = /c\n";
	char a[256], b[256];

	/* [interface]: the families interleaved differently: equal. */
	snprintf(a, sizeof(a), "[interface]\naddress = 10.77.0.1/24, fd77::1/64, 10.78.0.1/24\n%s",
	    tail);
	snprintf(b, sizeof(b), "[interface]\naddress = fd77::1/64, 10.77.0.1/24\n"
	    "address = 10.78.0.1/24\n%s", tail);
	ck_assert_uint_eq(iface_diff(a, b), 0);
	/* Another first IPv4 address: differs, though the set is the same. */
	snprintf(b, sizeof(b), "[interface]\naddress = 10.78.0.1/24, fd77::1/64, 10.77.0.1/24\n%s",
	    tail);
	ck_assert_uint_eq(iface_diff(a, b), CONF_IFACE_DIFF_ADDRESS);
	/* Another first IPv6 address. */
	snprintf(a, sizeof(a), "[interface]\naddress = fd77::1/64, fd78::1/64\n%s", tail);
	snprintf(b, sizeof(b), "[interface]\naddress = fd78::1/64, fd77::1/64\n%s", tail);
	ck_assert_uint_eq(iface_diff(a, b), CONF_IFACE_DIFF_ADDRESS);
	/* The same address, another prefix length. */
	snprintf(b, sizeof(b), "[interface]\naddress = fd77::1/48, fd78::1/64\n%s", tail);
	ck_assert_uint_eq(iface_diff(a, b), CONF_IFACE_DIFF_ADDRESS);
	/* One more, or one fewer, address. */
	snprintf(b, sizeof(b), "[interface]\naddress = fd77::1/64, fd78::1/64, 10.77.0.1/24\n%s",
	    tail);
	ck_assert_uint_eq(iface_diff(a, b), CONF_IFACE_DIFF_ADDRESS);
	snprintf(b, sizeof(b), "[interface]\naddress = fd77::1/64\n%s", tail);
	ck_assert_uint_eq(iface_diff(a, b), CONF_IFACE_DIFF_ADDRESS);

	/* [peer]: the same rule for address. */
	ck_assert_uint_eq(peer_diff("[peer p]\naddress = 10.77.0.2, fd77::2, 10.77.0.5\n",
	    "[peer p]\naddress = fd77::2, 10.77.0.2\naddress = 10.77.0.5\n"), 0);
	ck_assert_uint_eq(peer_diff("[peer p]\naddress = 10.77.0.2, fd77::2, 10.77.0.5\n",
	    "[peer p]\naddress = 10.77.0.5, fd77::2, 10.77.0.2\n"), CONF_PEER_DIFF_ADDRESS);
	ck_assert_uint_eq(peer_diff("[peer p]\naddress = fd77::2, fd77::5\n",
	    "[peer p]\naddress = fd77::5, fd77::2\n"), CONF_PEER_DIFF_ADDRESS);
	/* allowed-ips: any order. */
	ck_assert_uint_eq(peer_diff("[peer p]\nallowed-ips = 10.1.0.0/16, 10.2.0.0/16, fd50::/64\n",
	    "[peer p]\nallowed-ips = fd50::/64, 10.2.0.0/16\nallowed-ips = 10.1.0.0/16\n"), 0);
	ck_assert_uint_eq(peer_diff("[peer p]\nallowed-ips = 10.1.0.0/16, 10.2.0.0/16\n",
	    "[peer p]\nallowed-ips = 10.1.0.0/16, 10.2.0.0/24\n"), CONF_PEER_DIFF_ALLOWED_IPS);
	/* conf_equal() follows the same rule. */
	{
		struct conf *ca = parse(IFACE "[peer p]\naddress = 10.77.0.2, 10.77.0.5\n");
		struct conf *cb = parse(IFACE "[peer p]\naddress = 10.77.0.5, 10.77.0.2\n");

		ck_assert(!conf_equal(ca, cb));
		conf_free(cb);
		cb = parse("[interface]\naddress = fd77::1/64, 10.77.0.1/24\nprivate-key = /k\n"
		    "certificate = /c\n[peer p]\naddress = 10.77.0.2\naddress = 10.77.0.5\n");
		ck_assert(conf_equal(ca, cb));
		conf_free(ca);
		conf_free(cb);
	}
}
END_TEST

/* Key names never overrun the buffer they are written into. */
START_TEST(test_fmt_short_buffer)
{
	char buf[8];

	memset(buf, 'x', sizeof(buf));
	conf_diff_peer_fmt(CONF_PEER_DIFF_ENDPOINT | CONF_PEER_DIFF_ALLOWED_IPS |
	    CONF_PEER_DIFF_KEEPALIVE, buf, sizeof(buf));
	ck_assert_uint_lt(strlen(buf), sizeof(buf));
	ck_assert_str_eq(buf, "endpoin");
	conf_diff_iface_fmt(UINT32_MAX, buf, sizeof(buf));
	ck_assert_str_eq(buf, "name, a");
	conf_diff_iface_fmt(CONF_IFACE_DIFF_NAME, buf, 0);
}
END_TEST

static Suite *
conf_diff_suite(void)
{
	Suite *s = suite_create("conf_diff");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_unchanged);
	tcase_add_test(tc, test_iface_each_key);
	tcase_add_test(tc, test_peer_each_key);
	tcase_add_test(tc, test_peer_psk_content);
	tcase_add_test(tc, test_address_order);
	tcase_add_test(tc, test_fmt_short_buffer);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(conf_diff_suite());
}
