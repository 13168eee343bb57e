/* check_conf.c - tou.conf parser, validator, loader and printer.
 *
 * Fixtures live in $TOUD_TESTDATA/conf (default tests/unit/data/conf):
 * good-*.conf must load with the key files checked; every bad-*.conf must
 * fail with exactly the line in bad-*.expect.  An .expect line starts with
 * "@DIR@/", which stands for the fixture directory as the test passes it to
 * conf_load() (made absolute here, as `toud -t -c` gets it from
 * tests/cli/configtest.sh), so messages carry the path exactly as given. */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "conf_diff.h"
#include "log.h"
#include "psk.h"
#include "util.h"

#include "testutil.h"

#define FP_A2 "a2aeb6b88ebbc7413e33ccaf26b44c6152219d0e9a845fe0eef401b3e5d78f8a"
#define FP_5E "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"

/* The minimal valid head used by the inline cases: lines 1..4. */
#define HEAD "[interface]\naddress = 10.77.0.1/24\nprivate-key = /k\ncertificate = /c\n"

static char conf_dir[4096];
static char **bad_names;
static size_t n_bad;

/* $TOUD_TESTDATA/conf, absolute; fixed before any test changes directory. */
static const char *
testdata_conf(void)
{
	if (!conf_dir[0])
		check_data_path(conf_dir, sizeof(conf_dir), "conf");
	return conf_dir;
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "cannot create %s", path);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static const char *
fmt_err(const struct conf_error *e)
{
	static char buf[600];

	return conf_error_fmt(e, buf, sizeof(buf));
}

/* Parse text that must be accepted by conf_parse() and conf_validate(). */
static struct conf *
good(const char *text)
{
	struct conf_error err;
	struct conf *c = NULL;

	memset(&err, 0, sizeof(err));
	ck_assert_msg(conf_parse("t.conf", text, strlen(text), &c, &err) == 0,
	    "rejected: %s\n%s", fmt_err(&err), text);
	ck_assert_ptr_nonnull(c);
	ck_assert_msg(conf_validate(c, &err) == 0, "invalid: %s\n%s", fmt_err(&err),
	    text);
	return c;
}

/* Text that conf_parse() or conf_validate() rejects with exactly `want`. */
static void
bad(const char *text, const char *want)
{
	struct conf_error err;
	struct conf *c = (struct conf *)1;
	int r;

	memset(&err, 0, sizeof(err));
	r = conf_parse("t.conf", text, strlen(text), &c, &err);
	if (r == 0) {
		ck_assert_ptr_nonnull(c);
		r = conf_validate(c, &err);
		conf_free(c);
	} else {
		ck_assert_ptr_null(c);
	}
	ck_assert_msg(r == -EINVAL, "accepted (%d): %s", r, text);
	ck_assert_str_eq(fmt_err(&err), want);
}

/* print -> parse -> conf_equal, and print -> parse -> print is the same text. */
static void
roundtrip(const struct conf *c, const char *what)
{
	struct conf_error err;
	struct conf *c2 = NULL, *c3 = NULL;
	char *t1, *t2;

	t1 = conf_print(c);
	ck_assert_ptr_nonnull(t1);
	ck_assert_msg(conf_parse("printed", t1, strlen(t1), &c2, &err) == 0,
	    "%s: printed form rejected: %s\n%s", what, fmt_err(&err), t1);
	ck_assert_msg(conf_equal(c, c2), "%s: printed form differs\n%s", what, t1);
	ck_assert_msg(conf_equal(c2, c), "%s: conf_equal not symmetric", what);
	ck_assert_int_eq(conf_validate(c2, &err), conf_validate(c, &err));
	t2 = conf_print(c2);
	ck_assert_ptr_nonnull(t2);
	ck_assert_str_eq(t1, t2);
	ck_assert_int_eq(conf_parse("printed", t2, strlen(t2), &c3, &err), 0);
	ck_assert(conf_equal(c2, c3));
	free(t1);
	free(t2);
	conf_free(c2);
	conf_free(c3);
}

static struct conf *
load_fixture(const char *name, bool check_files)
{
	struct conf_error err;
	struct conf *c = NULL;
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", testdata_conf(), name);
	ck_assert_msg(conf_load(path, check_files, &c, &err, NULL, NULL) == 0,
	    "%s", fmt_err(&err));
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->file, path);
	return c;
}

static const char *
pfx_str(const struct conf_prefix *p)
{
	static char buf[4][UTIL_ADDRSTRLEN + 8];
	static int i;

	i = (i + 1) % 4;
	return util_prefix_fmt(&p->p, buf[i], sizeof(buf[i]));
}

static const char *
fixture_path(const char *name)
{
	static char buf[4200];

	snprintf(buf, sizeof(buf), "%s/%s", testdata_conf(), name);
	return buf;
}

START_TEST(test_defaults)
{
	struct conf *c = load_fixture("good-minimal.conf", true);
	const struct conf_iface *i = &c->iface;

	ck_assert_str_eq(i->name, CONF_DEFAULT_NAME);
	ck_assert_str_eq(i->name, "tou0");
	ck_assert_uint_eq(i->n_address, 1);
	ck_assert_str_eq(pfx_str(&i->address[0]), "10.77.0.1/24");
	ck_assert_int_eq(i->address[0].line, 3);
	ck_assert(!i->has_listen_addr);
	ck_assert_uint_eq(i->listen_port, 6080);
	ck_assert_str_eq(i->private_key, fixture_path("key.pem"));
	ck_assert_int_eq(i->private_key_line, 4);
	ck_assert_str_eq(i->certificate, fixture_path("cert.pem"));
	ck_assert_int_eq(i->certificate_line, 5);
	ck_assert_ptr_null(i->keylog_file);
	ck_assert_uint_eq(i->mtu, 0);
	ck_assert_uint_eq(i->path_mtu, 1500);
	ck_assert_ptr_null(i->user);
	ck_assert_int_eq(i->encryption, CONF_ENC_DTLS);
	ck_assert_int_eq(i->offload, CONF_OFFLOAD_AUTO);
	ck_assert_int_eq(i->threads, CONF_THREADS_AUTO);
	ck_assert_int_eq(i->log_level, LOG_LEVEL_INFO);
	ck_assert_str_eq(i->control, "/run/toud/toud.sock");
	ck_assert_uint_eq(i->rekey_seconds, 3600);
	ck_assert_uint_eq(i->rekey_bytes, 64ULL << 30);
	ck_assert_uint_eq(i->rekey_records, 1ULL << 24);
	ck_assert_int_eq(i->line, 2);
	ck_assert_uint_eq(c->n_peers, 0);
	/* 1500 - 40 (IPv6 worst case) - 8 - 16 - 37 + 16 */
	ck_assert_uint_eq(conf_tun_mtu(c), 1415);
	conf_free(c);

	c = good("[peer p]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 10.9.0.0/16\n"
	    "[interface]\naddress = 10.77.0.1/24\nprivate-key = /k\ncertificate = /c\n");
	ck_assert_uint_eq(c->peers[0].keepalive, 0);
	ck_assert_ptr_null(c->peers[0].endpoint_host);
	ck_assert_ptr_null(c->peers[0].ca);
	ck_assert_ptr_null(c->peers[0].cert_name);
	ck_assert_uint_eq(c->peers[0].n_address, 0);
	ck_assert_int_eq(c->peers[0].line, 1);
	ck_assert_int_eq(c->iface.line, 4);
	ck_assert_str_eq(c->iface.private_key, "/k");
	conf_free(c);
}
END_TEST

START_TEST(test_full)
{
	struct conf *c = load_fixture("good-full.conf", true);
	const struct conf_iface *i = &c->iface;
	const struct conf_peer *p;
	char a[UTIL_ADDRSTRLEN], hex[65];

	ck_assert_str_eq(i->name, "tou7");
	ck_assert_uint_eq(i->n_address, 3);
	ck_assert_str_eq(pfx_str(&i->address[0]), "10.77.0.1/24");
	ck_assert_str_eq(pfx_str(&i->address[1]), "fd77::1/64");
	ck_assert_str_eq(pfx_str(&i->address[2]), "10.78.0.1/16");
	ck_assert_int_eq(i->address[1].line, 4);
	ck_assert_int_eq(i->address[2].line, 5);
	ck_assert(i->has_listen_addr);
	ck_assert_str_eq(util_addr_fmt(&i->listen_addr, a, sizeof(a)), "192.0.2.10");
	ck_assert_uint_eq(i->listen_port, 7000);
	ck_assert_str_eq(i->keylog_file, "/var/tmp/toud-keys.log");
	ck_assert_uint_eq(i->mtu, 1400);
	ck_assert_uint_eq(conf_tun_mtu(c), 1400);
	ck_assert_uint_eq(i->path_mtu, 9000);
	ck_assert_str_eq(i->user, "toud");
	ck_assert_int_eq(i->encryption, CONF_ENC_DTLS);
	ck_assert_int_eq(i->offload, CONF_OFFLOAD_OFF);
	ck_assert_int_eq(i->threads, CONF_THREADS_ON);
	ck_assert_int_eq(i->log_level, LOG_LEVEL_DEBUG);
	ck_assert_str_eq(i->control, "/run/toud/tou7.sock");
	ck_assert_uint_eq(i->rekey_seconds, 600);
	ck_assert_uint_eq(i->rekey_bytes, 512ULL << 20);
	ck_assert_uint_eq(i->rekey_records, 3000000);
	ck_assert_uint_eq(i->fwmark, 0x51);
	ck_assert_int_eq(i->table, CONF_TABLE_NUMBER);
	ck_assert_uint_eq(i->table_number, 1000);
	ck_assert_uint_eq(c->n_peers, 3);

	p = &c->peers[0];
	ck_assert_str_eq(p->name, "bob");
	ck_assert_int_eq(p->line, 24);
	ck_assert(p->has_fingerprint);
	util_hex(p->fingerprint, sizeof(p->fingerprint), hex);
	ck_assert_str_eq(hex, FP_A2);
	ck_assert_str_eq(p->endpoint_host, "bob.example.net");
	ck_assert_uint_eq(p->endpoint_port, 6081);
	ck_assert_int_eq(p->endpoint_line, 26);
	ck_assert_uint_eq(p->n_address, 2);
	ck_assert_str_eq(pfx_str(&p->address[0]), "10.77.0.2/32");
	ck_assert_str_eq(pfx_str(&p->address[1]), "fd77::2/128");
	ck_assert_uint_eq(p->n_allowed_ips, 3);
	ck_assert_str_eq(pfx_str(&p->allowed_ips[0]), "192.168.50.0/24");
	ck_assert_str_eq(pfx_str(&p->allowed_ips[1]), "2001:db8:50::/48");
	ck_assert_str_eq(pfx_str(&p->allowed_ips[2]), "10.200.0.0/16");
	ck_assert_int_eq(p->allowed_ips[2].line, 29);
	ck_assert_uint_eq(p->keepalive, 25);

	p = &c->peers[1];
	ck_assert_str_eq(p->name, "carol");
	ck_assert(!p->has_fingerprint);
	ck_assert_str_eq(p->ca, fixture_path("ca.pem"));
	ck_assert_int_eq(p->ca_line, 33);
	ck_assert_str_eq(p->cert_name, "carol.example.net");
	ck_assert_str_eq(p->endpoint_host, "2001:db8::7");
	ck_assert_uint_eq(p->endpoint_port, 6080);
	ck_assert_uint_eq(p->n_address, 2);
	ck_assert_str_eq(pfx_str(&p->address[0]), "10.78.0.3/32");
	ck_assert_str_eq(pfx_str(&p->address[1]), "fd77::3/128");
	ck_assert_uint_eq(p->keepalive, 0);

	p = &c->peers[2];
	ck_assert_str_eq(p->name, "dave-01.x_y");
	ck_assert_str_eq(p->endpoint_host, "198.51.100.4");
	ck_assert_uint_eq(p->n_address, 0);
	ck_assert_uint_eq(p->n_allowed_ips, 1);
	ck_assert_str_eq(pfx_str(&p->allowed_ips[0]), "172.16.0.0/12");
	conf_free(c);
}
END_TEST

START_TEST(test_none_and_case)
{
	struct conf *c = load_fixture("good-none.conf", true);
	char a[UTIL_ADDRSTRLEN];

	ck_assert_int_eq(c->iface.encryption, CONF_ENC_NONE);
	ck_assert_ptr_null(c->iface.private_key);
	ck_assert_ptr_null(c->iface.certificate);
	ck_assert(c->iface.has_listen_addr);
	ck_assert_int_eq(c->iface.listen_addr.family, AF_INET6);
	ck_assert_str_eq(util_addr_fmt(&c->iface.listen_addr, a, sizeof(a)), "::");
	ck_assert_uint_eq(c->iface.listen_port, 6090);
	ck_assert(!c->peers[0].has_fingerprint);
	ck_assert_str_eq(c->peers[1].endpoint_host, "carol.example.net");
	/* 1500 - 40 - 8 + 16: no outer GUE, no DTLS */
	ck_assert_uint_eq(conf_tun_mtu(c), 1468);
	conf_free(c);

	c = load_fixture("good-case.conf", true);
	ck_assert_uint_eq(c->iface.n_address, 1);
	ck_assert_int_eq(c->iface.line, 4);
	ck_assert_str_eq(c->iface.certificate, fixture_path("cert.pem"));
	ck_assert_uint_eq(c->iface.mtu, 0);
	ck_assert_int_eq(c->iface.log_level, LOG_LEVEL_WARN);
	ck_assert_uint_eq(c->iface.rekey_bytes, 2ULL << 30);
	ck_assert_uint_eq(c->n_peers, 1);
	ck_assert_str_eq(c->peers[0].name, "bob");
	ck_assert(c->peers[0].has_fingerprint);
	ck_assert_uint_eq(c->peers[0].n_allowed_ips, 2);
	ck_assert_str_eq(pfx_str(&c->peers[0].allowed_ips[1]), "10.98.0.0/16");
	ck_assert_uint_eq(c->peers[0].keepalive, 10);
	ck_assert_int_eq(c->peers[0].allowed_ips[1].line, 16);
	conf_free(c);

	c = load_fixture("good-peers-first.conf", true);
	ck_assert_uint_eq(c->n_peers, 2);
	ck_assert_str_eq(c->peers[0].name, "bob");
	ck_assert_str_eq(c->peers[1].name, "alice");
	ck_assert_str_eq(c->peers[1].cert_name, "alice");
	ck_assert_int_eq(c->iface.line, 11);
	ck_assert_int_eq(c->iface.listen_addr.family, AF_INET6);
	ck_assert_uint_eq(c->iface.listen_port, 443);
	conf_free(c);
}
END_TEST

/* Every good fixture and the shipped example survive print -> parse. */
START_TEST(test_roundtrip_files)
{
	char path[4200], *text;
	struct conf_error err;
	struct conf *c;
	struct dirent *de;
	size_t len;
	int n = 0;
	DIR *d;

	d = opendir(testdata_conf());
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (strncmp(de->d_name, "good-", 5) != 0 || l < 5 ||
		    strcmp(de->d_name + l - 5, ".conf") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", testdata_conf(), de->d_name);
		text = slurp(path, &len);
		ck_assert_msg(conf_parse(path, text, len, &c, &err) == 0, "%s",
		    fmt_err(&err));
		ck_assert_msg(conf_validate(c, &err) == 0, "%s", fmt_err(&err));
		roundtrip(c, de->d_name);
		conf_free(c);
		free(text);
		/* and as loaded: with the key paths made absolute */
		c = load_fixture(de->d_name, true);
		roundtrip(c, de->d_name);
		conf_free(c);
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 5);

	d = NULL;
	snprintf(path, sizeof(path), "%s/../../../../conf/tou.conf.example",
	    testdata_conf());
	if (getenv("TOUD_SRCDIR"))
		snprintf(path, sizeof(path), "%s/conf/tou.conf.example",
		    getenv("TOUD_SRCDIR"));
	ck_assert_msg(conf_load(path, false, &c, &err, NULL, NULL) == 0, "%s",
	    fmt_err(&err));
	ck_assert_uint_eq(c->n_peers, 2);
	ck_assert_str_eq(c->peers[1].cert_name, "carol.example.net");
	ck_assert_str_eq(c->iface.user, "toud");
	ck_assert_uint_eq(conf_tun_mtu(c), 1415);
	roundtrip(c, "tou.conf.example");
	conf_free(c);
}
END_TEST

/* One bad fixture per loop iteration: exactly the message of its .expect. */
START_TEST(test_bad_fixture)
{
	char path[4200], want[1200], *exp, *nl, *at;
	struct conf_error err;
	struct conf *c = (struct conf *)1;
	const char *name = bad_names[_i];
	size_t l = strlen(name), used = 0;
	int w;

	snprintf(path, sizeof(path), "%s/%.*s.expect", testdata_conf(), (int)(l - 5),
	    name);
	exp = slurp(path, NULL);
	nl = strchr(exp, '\n');
	ck_assert_msg(nl && nl[1] == '\0', "%s: not exactly one line", path);
	*nl = '\0';
	/* substitute every @DIR@; a message that does not fit fails (a cut
	 * one could match a cut result) */
	for (at = exp; (nl = strstr(at, "@DIR@")); at = nl + 5) {
		w = snprintf(want + used, sizeof(want) - used, "%.*s%s", (int)(nl - at), at,
		    testdata_conf());
		ck_assert_msg(w >= 0 && (size_t)w < sizeof(want) - used, "%s: too long", path);
		used += (size_t)w;
	}
	w = snprintf(want + used, sizeof(want) - used, "%s", at);
	ck_assert_msg(w >= 0 && (size_t)w < sizeof(want) - used, "%s: too long", path);
	ck_assert_msg(strncmp(exp, "@DIR@/", 6) == 0, "%s: must start with @DIR@/",
	    path);

	snprintf(path, sizeof(path), "%s/%s", testdata_conf(), name);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(conf_load(path, true, &c, &err, NULL, NULL), -EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_str_eq(fmt_err(&err), want);
	free(exp);
}
END_TEST

/* preshared-key = FILE: psk_load_conf() reads what touctl genpsk writes;
 * a key file others may read, or one that holds no key, is refused with
 * the file, the line and the peer named. */
static void
psk_write(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static int
psk_try(const char *dir, const char *psk_text, mode_t mode, struct conf_error *err,
    struct conf **out)
{
	char conf_path[4200], psk_path[4200], text[8400];
	struct conf *c = NULL;
	int r;

	snprintf(psk_path, sizeof(psk_path), "%s/b.psk", dir);
	snprintf(conf_path, sizeof(conf_path), "%s/psk.conf", dir);
	unlink(psk_path);
	psk_write(psk_path, psk_text, mode);
	snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
	    "encryption = none\n\n[peer b]\nendpoint = 10.0.0.2:6080\n"
	    "address = 10.77.0.2\npreshared-key = b.psk\n");
	psk_write(conf_path, text, 0644);
	ck_assert_int_eq(conf_load(conf_path, false, &c, err, NULL, NULL), 0);
	r = psk_load_conf(c, err);
	*out = c;
	return r;
}

START_TEST(test_preshared_key)
{
	char dir[] = "/tmp/check_conf_psk.XXXXXX", gen[PSK_B64_LEN + 2], gen2[sizeof(gen)];
	char path[4200];
	struct conf_error err;
	struct conf *c;
	struct stat st;
	uint8_t k[PSK_LEN];
	size_t i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(psk_generate(gen), 0);
	ck_assert_int_eq(psk_generate(gen2), 0);
	ck_assert_uint_eq(strlen(gen), PSK_B64_LEN + 1);
	ck_assert(strcmp(gen, gen2) != 0);
	/* the base64 of 32 bytes 0..31 */
	ck_assert_int_eq(psk_try(dir, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", 0600, &err,
	    &c), 0);
	ck_assert(c->peers[0].has_psk);
	for (i = 0; i < PSK_LEN; i++)
		k[i] = (uint8_t)i;
	ck_assert_mem_eq(c->peers[0].psk, k, PSK_LEN);
	conf_free(c);
	ck_assert_int_eq(psk_try(dir, gen, 0640, &err, &c), 0);
	ck_assert(c->peers[0].has_psk);
	conf_free(c);
	ck_assert_int_eq(psk_try(dir, gen, 0604, &err, &c), -EPERM);
	ck_assert_int_eq(err.line, 8);
	ck_assert_ptr_nonnull(strstr(err.msg, "peer \"b\""));
	ck_assert_ptr_nonnull(strstr(err.msg, "/b.psk"));
	ck_assert_ptr_nonnull(strstr(err.msg, "others"));
	conf_free(c);
	ck_assert_int_eq(psk_try(dir, "c2hvcnQ=\n", 0600, &err, &c), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a preshared key"));
	conf_free(c);
	ck_assert_int_eq(psk_try(dir, "", 0600, &err, &c), -EINVAL);
	conf_free(c);
	/* genpsk FILE: a new file, 0600, never over an existing one */
	snprintf(path, sizeof(path), "%s/new.psk", dir);
	ck_assert_int_eq(psk_write_file(path, gen, err.msg, sizeof(err.msg)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(psk_write_file(path, gen2, err.msg, sizeof(err.msg)), -EEXIST);
	ck_assert_int_eq(psk_read(path, (uid_t)-1, k, err.msg, sizeof(err.msg)), 0);
	/* owned by another user: only if that is the user toud runs as */
	if (geteuid() == 0 && chown(path, 65534, 65534) == 0) {
		ck_assert_int_eq(psk_read(path, (uid_t)-1, k, err.msg, sizeof(err.msg)), -EPERM);
		ck_assert_ptr_nonnull(strstr(err.msg, "owned by another user"));
		ck_assert_int_eq(psk_read(path, 65534, k, err.msg, sizeof(err.msg)), 0);
	}
	unlink(path);
	snprintf(path, sizeof(path), "%s/b.psk", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/psk.conf", dir);
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_bad_count)
{
	/* syntax, every key, duplicates, conflicts, missing keys and files */
	ck_assert_uint_ge(n_bad, 25);
}
END_TEST

START_TEST(test_syntax)
{
	struct conf *c;

	/* comments, blank lines, whitespace, case, no final newline */
	c = good("  # comment\n\n\t[INTERFACE]   # here too\nAddress=10.77.0.1/24#x\n"
	    "PRIVATE-KEY = /k\n  certificate\t=\t/c  \nMtu = Auto");
	ck_assert_uint_eq(c->iface.mtu, 0);
	ck_assert_str_eq(c->iface.certificate, "/c");
	ck_assert_int_eq(c->iface.line, 3);
	conf_free(c);
	/* values keep inner blanks; '=' after the first belongs to the value */
	c = good(HEAD "[peer b]\nca = /etc/tou/my ca.pem\nname = CN=a b\n"
	    "address = 10.77.0.2\n");
	ck_assert_str_eq(c->peers[0].ca, "/etc/tou/my ca.pem");
	ck_assert_str_eq(c->peers[0].cert_name, "CN=a b");
	conf_free(c);

	/* a byte order mark before line 1; ';' comment lines (not mid-line:
	 * a value may contain ';') */
	c = good("\xef\xbb\xbf[interface]\n; a comment\n  ;another\naddress = 10.77.0.1/24\n"
	    "private-key = /k;1\ncertificate = /c\n");
	ck_assert_int_eq(c->iface.line, 1);
	ck_assert_str_eq(c->iface.private_key, "/k;1");
	conf_free(c);
	bad("\xef\xbb\xbf\xef\xbb\xbf[interface]\n", "t.conf:1: missing '=' (expected 'key = value')");
	bad(HEAD "\xef\xbb\xbfmtu = 1400\n",
	    "t.conf:5: unknown key '\xef\xbb\xbfmtu' in [interface]");

	bad("", "t.conf: missing section [interface]");
	bad("# only a comment\n", "t.conf: missing section [interface]");
	bad("[interface]\n", "t.conf:1: missing key 'address' in [interface]");
	bad(HEAD "[peer b]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n"
	    "fingerprint = sha256:" FP_A2 "\n",
	    "t.conf:8: duplicate key 'fingerprint' in [peer b]");
	bad(HEAD "ADDRESS =\n", "t.conf:5: address: empty value");
	bad(HEAD "address = ,\n", "t.conf:5: address: empty element in list");
	bad(HEAD "address = 10.1.0.1/16,\n", "t.conf:5: address: empty element in list");
	bad(HEAD "[peer]\n", "t.conf:5: missing peer name in [peer]");
	bad(HEAD "[peer a/b]\n",
	    "t.conf:5: invalid peer name 'a/b' (1..32 of A-Z a-z 0-9 . _ -)");
	bad(HEAD "[]\n", "t.conf:5: unknown section '[]'");
	bad(HEAD "[\n", "t.conf:5: section header does not end with ']'");
	bad(HEAD "[peer b] x\n", "t.conf:5: section header does not end with ']'");
	bad(HEAD "mtu\n", "t.conf:5: missing '=' (expected 'key = value')");
	bad(HEAD "private key = /k\n", "t.conf:5: unknown key 'private key' in [interface]; did you mean private-key?");
	/* hints: WireGuard's names, the other section's keys, near misses */
	bad(HEAD "[peer p]\nAllowedIPs = 10.0.0.0/8\n", "t.conf:6: unknown key 'AllowedIPs' "
	    "in [peer p]; did you mean allowed-ips?");
	bad(HEAD "[peer p]\nPublicKey = abc=\n", "t.conf:6: unknown key 'PublicKey' in [peer p]; "
	    "toud pins a peer by its certificate's fingerprint: fingerprint = sha256:... (touctl "
	    "fingerprint, touctl export)");
	bad(HEAD "[peer p]\nPersistentKeepalive = 25\n", "t.conf:6: unknown key "
	    "'PersistentKeepalive' in [peer p]; did you mean keepalive?");
	bad(HEAD "ListenPort = 51820\n", "t.conf:5: unknown key 'ListenPort' in [interface]; "
	    "did you mean listen?");
	bad(HEAD "[peer p]\nListenPort = 51820\n", "t.conf:6: unknown key 'ListenPort' in "
	    "[peer p]; did you mean listen? it belongs in [interface]");
	bad(HEAD "[peer p]\nlisten-tcp = 443\n", "t.conf:6: unknown key 'listen-tcp' in [peer p]; "
	    "listen-tcp belongs in [interface]");
	bad(HEAD "endpoint-tcp = h:443\n", "t.conf:5: unknown key 'endpoint-tcp' in [interface]; "
	    "endpoint-tcp belongs in [peer NAME]");
	bad(HEAD "[peer p]\nkeeplive = 5\n", "t.conf:6: unknown key 'keeplive' in [peer p]; "
	    "did you mean keepalive?");
	bad(HEAD "[peer p]\nfoo = 5\n", "t.conf:6: unknown key 'foo' in [peer p]");
	bad(HEAD "x\x7f = 1\n", "t.conf:5: control character 0x7f in line");
	bad(HEAD "user = a\rb\n", "t.conf:5: control character 0x0d in line");
	bad(HEAD "user = a\vb\n", "t.conf:5: control character 0x0b in line");
	/* a long unknown key is shortened in the message */
	bad(HEAD "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 1\n",
	    "t.conf:5: unknown key 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' "
	    "in [interface]");
}
END_TEST

/* The text need not be NUL-terminated; CRLF is fine; len is respected. */
START_TEST(test_buffer)
{
	const char *text = HEAD "mtu = 1400\nGARBAGE";
	size_t len = strlen(HEAD "mtu = 1400\n");
	struct conf_error err;
	struct conf *c;
	char *heap;

	heap = malloc(len);
	ck_assert_ptr_nonnull(heap);
	memcpy(heap, text, len);
	ck_assert_int_eq(conf_parse("t.conf", heap, len, &c, &err), 0);
	ck_assert_uint_eq(c->iface.mtu, 1400);
	conf_free(c);
	/* cut inside the value: "mtu = 14" */
	ck_assert_int_eq(conf_parse("t.conf", heap, len - 3, &c, &err), -EINVAL);
	ck_assert_str_eq(fmt_err(&err), "t.conf:5: mtu: '14' out of range (576..65535 or auto)");
	free(heap);
	text = "[interface]\r\naddress = fd77::1/64\r\nmtu = 1280\r\nprivate-key = /k\r\n";
	ck_assert_int_eq(conf_parse("t.conf", text, strlen(text), &c, &err), 0);
	ck_assert_uint_eq(c->iface.mtu, 1280);
	conf_free(c);
	/* a NUL inside len is an error even at the very end */
	ck_assert_int_eq(conf_parse("t.conf", HEAD "\0", sizeof(HEAD), &c, &err), -EINVAL);
	ck_assert_str_eq(fmt_err(&err), "t.conf:5: NUL byte in line");
	/* err may be NULL */
	ck_assert_int_eq(conf_parse("t.conf", "x", 1, &c, NULL), -EINVAL);
	ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_line_length)
{
	char text[2200];
	struct conf *c;

	/* exactly 1024 characters is fine, 1025 is not (CR does not count) */
	snprintf(text, sizeof(text), HEAD "#%01023d\r\n", 0);
	ck_assert_uint_eq(strlen(text), strlen(HEAD) + 1026);
	c = good(text);
	conf_free(c);
	snprintf(text, sizeof(text), HEAD "#%01024d\n", 0);
	bad(text, "t.conf:5: line longer than 1024 characters");
}
END_TEST

START_TEST(test_iface_values)
{
	struct conf *c;
	char a[UTIL_ADDRSTRLEN];

	c = good(HEAD "mtu = 576\npath-mtu = 1280\nrekey-time = 60\nrekey-bytes = 1M\n"
	    "name = a.b_c-012345678\nlog-level = error\nuser = _toud.x-1\n");
	ck_assert_uint_eq(c->iface.mtu, 576);
	ck_assert_uint_eq(c->iface.path_mtu, 1280);
	ck_assert_uint_eq(c->iface.rekey_seconds, 60);
	ck_assert_uint_eq(c->iface.rekey_bytes, 1ULL << 20);
	ck_assert_str_eq(c->iface.name, "a.b_c-012345678");
	ck_assert_int_eq(c->iface.log_level, LOG_LEVEL_ERR);
	ck_assert_str_eq(c->iface.user, "_toud.x-1");
	conf_free(c);
	c = good(HEAD "mtu = 65535\npath-mtu = 65535\nrekey-time = 86400\n"
	    "rekey-bytes = 4294967296G\nlog-level = Info\n");
	ck_assert_uint_eq(c->iface.mtu, 65535);
	ck_assert_uint_eq(c->iface.path_mtu, 65535);
	ck_assert_uint_eq(c->iface.rekey_seconds, 86400);
	ck_assert_uint_eq(c->iface.rekey_bytes, 1ULL << 62);
	roundtrip(c, "maxima");
	conf_free(c);
	c = good(HEAD "server-id = 255\n");
	ck_assert_uint_eq(c->iface.server_id, 255);
	roundtrip(c, "server-id");
	conf_free(c);
	c = good(HEAD "server-id = 1\n");
	ck_assert_uint_eq(c->iface.server_id, 1);
	conf_free(c);
	c = good(HEAD "rekey-bytes = 1048576\n");
	ck_assert_uint_eq(c->iface.rekey_bytes, 1ULL << 20);
	conf_free(c);
	c = good(HEAD "rekey-bytes = 4611686018427387904\n");
	ck_assert_uint_eq(c->iface.rekey_bytes, 1ULL << 62);
	conf_free(c);
	c = good(HEAD "rekey-bytes = 1536k\n");
	ck_assert_uint_eq(c->iface.rekey_bytes, 1536ULL << 10);
	roundtrip(c, "1536K");
	conf_free(c);
	c = good(HEAD "rekey-bytes = 1048577\n");
	roundtrip(c, "odd size");
	conf_free(c);
	c = good(HEAD "rekey-records = 1K\n");
	ck_assert_uint_eq(c->iface.rekey_records, 1024);
	roundtrip(c, "rekey-records minimum");
	conf_free(c);
	c = good(HEAD "rekey-records = 131072g\n");
	ck_assert_uint_eq(c->iface.rekey_records, 1ULL << 47);
	roundtrip(c, "rekey-records maximum");
	conf_free(c);
	c = good(HEAD "rekey-records = 23000001\n");
	ck_assert_uint_eq(c->iface.rekey_records, 23000001);
	roundtrip(c, "rekey-records odd");
	conf_free(c);
	c = good(HEAD "listen = 65535\n");
	ck_assert_uint_eq(c->iface.listen_port, 65535);
	ck_assert(!c->iface.has_listen_addr);
	conf_free(c);
	c = good(HEAD "listen = [FD00::0001]:1\n");
	ck_assert_uint_eq(c->iface.listen_port, 1);
	ck_assert_str_eq(util_addr_fmt(&c->iface.listen_addr, a, sizeof(a)), "fd00::1");
	/* listen on IPv6 only: outer IPv6 */
	ck_assert_uint_eq(conf_tun_mtu(c), 1415);
	roundtrip(c, "listen v6");
	conf_free(c);
	c = good(HEAD "listen = 0.0.0.0:6080\npath-mtu = 9000\n");
	ck_assert_int_eq(c->iface.listen_addr.family, AF_INET);
	/* 9000 - 20 - 8 - 16 - 37 + 16 */
	ck_assert_uint_eq(conf_tun_mtu(c), 8935);
	conf_free(c);
	c = good("[interface]\naddress = 10.77.0.1/24\nencryption = None\n"
	    "listen = 192.0.2.1:6080\n");
	ck_assert_uint_eq(conf_tun_mtu(c), 1488);
	conf_free(c);
	c = good("[interface]\naddress = 10.0.0.1/8, 10.77.0.1/32, ::ffff:10.1.1.1/128,"
	    " 2001:db8::1/1\n encryption = none\n");
	ck_assert_uint_eq(c->iface.n_address, 4);
	ck_assert_int_eq(c->iface.address[2].p.addr.family, AF_INET6);
	roundtrip(c, "addresses");
	conf_free(c);

	bad(HEAD "listen = 65536\n", "t.conf:5: listen: '65536' out of range (port 1..65535)");
	bad(HEAD "listen = +80\n", "t.conf:5: listen: '+80' is not a number (port 1..65535)");
	bad(HEAD "listen = 1.2.3.4:\n", "t.conf:5: listen: '' is not a number (port 1..65535)");
	bad(HEAD "listen = [::1]\n", "t.conf:5: listen: '[::1]' is not PORT, ADDR:PORT or [ADDR]:PORT");
	bad(HEAD "listen = [1.2.3.4]:80\n", "t.conf:5: listen: '1.2.3.4' is not an IP address");
	bad(HEAD "listen = ::\n", "t.conf:5: listen: an IPv6 address needs brackets in '::' ([ADDR]:PORT)");
	bad(HEAD "mtu = 0\n", "t.conf:5: mtu: '0' out of range (576..65535 or auto)");
	bad(HEAD "mtu = 1400 bytes\n", "t.conf:5: mtu: '1400 bytes' is not a number (576..65535 or auto)");
	bad(HEAD "mtu = 99999999999999999999999\n",
	    "t.conf:5: mtu: '99999999999999999999999' out of range (576..65535 or auto)");
	bad(HEAD "path-mtu = 65536\n", "t.conf:5: path-mtu: '65536' out of range (1280..65535)");
	bad(HEAD "path-mtu = auto\n", "t.conf:5: path-mtu: 'auto' is not a number (1280..65535)");
	bad(HEAD "rekey-time = 86401\n", "t.conf:5: rekey-time: '86401' out of range (60..86400 seconds)");
	bad(HEAD "rekey-time = 1h\n", "t.conf:5: rekey-time: '1h' is not a number (60..86400 seconds)");
	bad(HEAD "rekey-records = 1023\n",
	    "t.conf:5: rekey-records: '1023' out of range (1K..2^47 records, suffix K, M or G)");
	bad(HEAD "rekey-records = 140737488355329\n",
	    "t.conf:5: rekey-records: '140737488355329' out of range (1K..2^47 records, suffix K, M or G)");
	bad(HEAD "rekey-records = 16T\n",
	    "t.conf:5: rekey-records: '16T' is not a number (1K..2^47 records, suffix K, M or G)");
	bad(HEAD "rekey-records = -1\n",
	    "t.conf:5: rekey-records: '-1' is not a number (1K..2^47 records, suffix K, M or G)");
	bad(HEAD "rekey-bytes = 1048575\n",
	    "t.conf:5: rekey-bytes: '1048575' out of range (1M..2^62 bytes, suffix K, M or G)");
	bad(HEAD "rekey-bytes = 4611686018427387905\n",
	    "t.conf:5: rekey-bytes: '4611686018427387905' out of range (1M..2^62 bytes, suffix K, M or G)");
	bad(HEAD "rekey-bytes = 18446744073709551616G\n",
	    "t.conf:5: rekey-bytes: '18446744073709551616G' out of range (1M..2^62 bytes, suffix K, M or G)");
	bad(HEAD "rekey-bytes = G\n",
	    "t.conf:5: rekey-bytes: 'G' is not a number (1M..2^62 bytes, suffix K, M or G)");
	bad(HEAD "rekey-bytes = 0G\n",
	    "t.conf:5: rekey-bytes: '0G' out of range (1M..2^62 bytes, suffix K, M or G)");
	bad(HEAD "name = .\n",
	    "t.conf:5: name: '.' is not a valid interface name (1..15 of A-Z a-z 0-9 . _ -)");
	bad(HEAD "name = tou 0\n",
	    "t.conf:5: name: 'tou 0' is not a valid interface name (1..15 of A-Z a-z 0-9 . _ -)");
	bad(HEAD "user = root:0\n", "t.conf:5: user: 'root:0' is not a valid user name");
	bad(HEAD "user = abcdefghijklmnopqrstuvwxyz0123456\n",
	    "t.conf:5: user: 'abcdefghijklmnopqrstuvwxyz0123456' is not a valid user name");
	bad(HEAD "log-level = warn\n",
	    "t.conf:5: log-level: unknown value 'warn' (error, warning, info or debug)");
	bad(HEAD "encryption = DTLS1.2\n", "t.conf:5: encryption: unknown value 'DTLS1.2' (dtls or none)");
	bad(HEAD "offload = yes\n", "t.conf:5: offload: unknown value 'yes' (auto or off)");
	bad(HEAD "threads = 2\n", "t.conf:5: threads: unknown value '2' (auto, on or off)");
	bad(HEAD "address = 10.77.0.1/-1\n", "t.conf:5: address: bad prefix length in '10.77.0.1/-1'");
	bad(HEAD "address = 10.77.0.1/\n", "t.conf:5: address: bad prefix length in '10.77.0.1/'");
	bad(HEAD "address = 10.77.0.9/0\n", "t.conf:5: address: prefix length 0 in '10.77.0.9/0'");
	bad(HEAD "address = fe80::1%eth0/64\n", "t.conf:5: address: 'fe80::1%eth0/64' is not an IP address");
	bad(HEAD "address = 010.77.0.1/24\n", "t.conf:5: address: '010.77.0.1/24' is not an IP address");
	bad(HEAD "control = /run/" "0123456789012345678901234567890123456789"
	    "0123456789012345678901234567890123456789012345678901234567890123456\n",
	    "t.conf:5: control: path longer than 107 characters");
}
END_TEST

START_TEST(test_peer_values)
{
	struct conf *c;
	char hex[65];

	c = good(HEAD "[peer x]\nfingerprint = SHA256:" FP_A2 "\naddress = 10.77.0.2/32\n"
	    "endpoint = [::FFFF:192.0.2.1]:1\nkeepalive = 3600\n"
	    "[peer y]\nfingerprint = sha256:" "5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E"
	    "\naddress = 10.77.0.3\nallowed-ips = 198.51.100.0/24, ::/0\n"
	    "endpoint = xn--bcher-kva.example.:65535\n");
	util_hex(c->peers[0].fingerprint, 32, hex);
	ck_assert_str_eq(hex, FP_A2);
	ck_assert_str_eq(c->peers[0].endpoint_host, "::ffff:192.0.2.1");
	ck_assert_uint_eq(c->peers[0].endpoint_port, 1);
	ck_assert_uint_eq(c->peers[0].keepalive, 3600);
	ck_assert_uint_eq(c->peers[1].n_allowed_ips, 2);
	ck_assert_uint_eq(c->peers[1].allowed_ips[1].p.len, 0);
	ck_assert_str_eq(c->peers[1].endpoint_host, "xn--bcher-kva.example.");
	ck_assert_uint_eq(c->peers[1].endpoint_port, 65535);
	roundtrip(c, "peers");
	conf_free(c);
	c = good(HEAD "[peer x]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n"
	    "endpoint = [FE80::0:2%ul0]:6080\n[peer y]\nfingerprint = sha256:"
	    "5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E5E\naddress = 10.77.0.3\nendpoint = [febf::3%17]:7\n");
	ck_assert_str_eq(c->peers[0].endpoint_host, "fe80::2%ul0");
	ck_assert_uint_eq(c->peers[0].endpoint_port, 6080);
	ck_assert_str_eq(c->peers[1].endpoint_host, "febf::3%17");
	roundtrip(c, "link-local endpoints");
	conf_free(c);
	/* allowed-ips without a length is one host; a list mixes families */
	c = good(HEAD "[peer x]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 192.0.2.7 ,"
	    "2001:db8::/32\nendpoint = 192.0.2.7:6080\n");
	ck_assert_str_eq(pfx_str(&c->peers[0].allowed_ips[0]), "192.0.2.7/32");
	ck_assert_str_eq(pfx_str(&c->peers[0].allowed_ips[1]), "2001:db8::/32");
	roundtrip(c, "allowed host");
	conf_free(c);

#define PEER HEAD "[peer x]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n"
	bad(PEER "keepalive = -1\n", "t.conf:8: keepalive: '-1' is not a number (0..3600 seconds)");
	bad(PEER "keepalive = 3601\n", "t.conf:8: keepalive: '3601' out of range (0..3600 seconds)");
	bad(PEER "endpoint = :80\n", "t.conf:8: endpoint: '' is not a host name or IP address");
	bad(PEER "endpoint = host:0\n", "t.conf:8: endpoint: '0' out of range (port 1..65535)");
	bad(PEER "endpoint = host:http\n", "t.conf:8: endpoint: 'http' is not a number (port 1..65535)");
	bad(PEER "endpoint = -host:1\n", "t.conf:8: endpoint: '-host' is not a host name or IP address");
	bad(PEER "endpoint = ho st:1\n", "t.conf:8: endpoint: 'ho st' is not a host name or IP address");
	bad(PEER "endpoint = .:1\n", "t.conf:8: endpoint: '.' is not a host name or IP address");
	bad(PEER "endpoint = 10.1:1\n", "t.conf:8: endpoint: '10.1' is not a host name or IP address");
	bad(PEER "endpoint = [bob.example.net]:1\n",
	    "t.conf:8: endpoint: 'bob.example.net' is not an IPv6 address");
	/* A link-local endpoint with its link (RFC 4007 zone). */
	bad(PEER "endpoint = [fd00::2%eth0]:1\n", "t.conf:8: endpoint: 'fd00::2%eth0': a scope "
	    "(%INTERFACE) goes only with an IPv6 link-local address (fe80::/10)");
	bad(PEER "endpoint = [fe80::2%]:1\n", "t.conf:8: endpoint: 'fe80::2%': the scope is not "
	    "an interface name or index (1..15 of A-Z a-z 0-9 . _ -)");
	bad(PEER "endpoint = [fe80::2%eth/0]:1\n", "t.conf:8: endpoint: 'fe80::2%eth/0': the "
	    "scope is not an interface name or index (1..15 of A-Z a-z 0-9 . _ -)");
	bad(PEER "endpoint = [fe80::2%a234567890123456]:1\n", "t.conf:8: endpoint: "
	    "'fe80::2%a234567890123456': the scope is not an interface name or index (1..15 of "
	    "A-Z a-z 0-9 . _ -)");
	bad(PEER "endpoint = [fe80::zz%eth0]:1\n",
	    "t.conf:8: endpoint: 'fe80::zz%eth0' is not an IPv6 address");
	bad(PEER "endpoint = fe80::2%eth0:1\n",
	    "t.conf:8: endpoint: 'fe80::2%eth0:1' is not HOST:PORT or [ADDR]:PORT");
	bad(PEER "endpoint = a:b:80\n", "t.conf:8: endpoint: 'a:b:80' is not HOST:PORT or [ADDR]:PORT");
	bad(PEER "endpoint = 2001:db8:0:0:0:0:0:1:6080\n", "t.conf:8: endpoint: an IPv6 "
	    "address needs brackets in '2001:db8:0:0:0:0:0:1:6080' ([ADDR]:PORT)");
	bad(PEER "endpoint = [::1]80\n", "t.conf:8: endpoint: '[::1]80' is not HOST:PORT or [ADDR]:PORT");
	bad(PEER "address = fd77::5/64\n",
	    "t.conf:8: address: 'fd77::5/64' is not a host address (/32 or /128; use allowed-ips for prefixes)");
	bad(PEER "address = host\n", "t.conf:8: address: 'host' is not an IP address");
	bad(PEER "allowed-ips = 2001:db8::1/64\n", "t.conf:8: allowed-ips: host bits set in '2001:db8::1/64'");
	bad(PEER "allowed-ips = 10.0.0.0/8/8\n", "t.conf:8: allowed-ips: bad prefix length in '10.0.0.0/8/8'");
	bad(PEER "name = n\nca = /ca\nca = /ca2\n", "t.conf:10: duplicate key 'ca' in [peer x]");
	bad(PEER "mtu = 1400\n", "t.conf:8: unknown key 'mtu' in [peer x]; mtu belongs in [interface]");
	bad(HEAD "[peer x]\nfingerprint = sha256: " FP_A2 "\n",
	    "t.conf:6: fingerprint: 'sha256: a2aeb6b88ebbc7413e33ccaf26b44c6152219...' is not sha256:<64 hex digits>");
	bad(HEAD "[peer x]\nfingerprint = " FP_A2 "\n",
	    "t.conf:6: fingerprint: 'a2aeb6b88ebbc7413e33ccaf26b44c6152219d0e9a845...' is not sha256:<64 hex digits>");
	bad(HEAD "[peer x]\nfingerprint = sha256:" FP_A2 "00\n",
	    "t.conf:6: fingerprint: 'sha256:a2aeb6b88ebbc7413e33ccaf26b44c6152219d...' is not sha256:<64 hex digits>");
#undef PEER
}
END_TEST

START_TEST(test_limits)
{
	size_t cap = 8 * 1024 * 1024, n = 0, x;
	char *text = malloc(cap);
	struct conf_error err;
	struct conf *c;

	ck_assert_ptr_nonnull(text);
	n += (size_t)snprintf(text + n, cap - n, "[interface]\n");
	for (x = 0; x < CONF_MAX_VALUES; x++)
		n += (size_t)snprintf(text + n, cap - n, "address = 10.%zu.%zu.1/24\n",
		    x / 256, x % 256);
	n += (size_t)snprintf(text + n, cap - n, "encryption = none\n");
	ck_assert_int_eq(conf_parse("t.conf", text, n, &c, &err), 0);
	ck_assert_uint_eq(c->iface.n_address, CONF_MAX_VALUES);
	conf_free(c);
	n += (size_t)snprintf(text + n, cap - n, "address = 10.99.0.1/24\n");
	ck_assert_int_eq(conf_parse("t.conf", text, n, &c, &err), -EINVAL);
	ck_assert_str_eq(fmt_err(&err),
	    "t.conf:259: address: too many values in [interface] (more than 256)");

	n = (size_t)snprintf(text, cap, "[interface]\naddress = fd77::1/64\nencryption = none\n");
	ck_assert_uint_eq(CONF_MAX_PEERS, 65536);
	for (x = 0; x < CONF_MAX_PEERS; x++)
		n += (size_t)snprintf(text + n, cap - n,
		    "[peer p%zu]\nendpoint = 192.0.2.1:%zu\naddress = fd77::%zx:%zx\n",
		    x, x % 60000 + 1, (x + 2) >> 16, (x + 2) & 0xffff);
	ck_assert_uint_lt(n, cap);
	ck_assert_int_eq(conf_parse("t.conf", text, n, &c, &err), 0);
	ck_assert_uint_eq(c->n_peers, CONF_MAX_PEERS);
	ck_assert_int_eq(conf_validate(c, &err), 0);
	roundtrip(c, "65536 peers");
	conf_free(c);
	n += (size_t)snprintf(text + n, cap - n, "[peer last]\n");
	ck_assert_int_eq(conf_parse("t.conf", text, n, &c, &err), -EINVAL);
	ck_assert_str_eq(fmt_err(&err), "t.conf:196612: too many peers (more than 65536)");
	free(text);
}
END_TEST

START_TEST(test_validate)
{
	struct conf *c;

	/* overlapping prefixes inside one peer are fine, so are the interface
	 * prefix and a peer's allowed-ips over it */
	c = good(HEAD "[peer a]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n"
	    "allowed-ips = 10.0.0.0/8, 10.1.0.0/16, 10.77.0.0/24\n");
	conf_free(c);
	/* different families never collide */
	c = good("[interface]\naddress = 10.77.0.1/24, fd77::1/64\nencryption = none\n"
	    "[peer a]\nendpoint = a.example:1\nallowed-ips = ::/0\n"
	    "[peer b]\nendpoint = b.example:1\nallowed-ips = 0.0.0.0/0\n");
	conf_free(c);
	/* the claim with the later line is named, whatever the peer order */
	bad(HEAD "[peer a]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 10.8.0.0/16\n"
	    "[peer b]\nca = /ca\nname = b\nallowed-ips = 10.0.0.0/8\n",
	    "t.conf:11: peer 'b': allowed-ips 10.0.0.0/8 overlaps 10.8.0.0/16 of peer 'a' (line 7)");
	bad(HEAD "[peer a]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n"
	    "allowed-ips = 10.9.0.0/16\naddress = 10.77.0.9\n"
	    "[peer b]\nca = /ca\nname = b\naddress = 10.77.0.9\n",
	    "t.conf:13: peer 'b': address 10.77.0.9 is also claimed by peer 'a' (line 9)");
	/* exact repeat inside one peer, as the same key */
	bad(HEAD "[peer a]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 10.9.0.0/16\n"
	    "allowed-ips = 10.9.0.0/16\n",
	    "t.conf:8: peer 'a': allowed-ips 10.9.0.0/16 is listed twice (first at line 7)");
	bad("[interface]\naddress = 10.77.0.1/24\nencryption = none\n[peer a]\n"
	    "endpoint = a:1\naddress = 10.77.0.2\nname = x\n",
	    "t.conf:4: key 'name' without 'ca' in [peer a]");
	/* the same CA for two peers is fine; the same fingerprint is not */
	c = good(HEAD "[peer a]\nca = /ca\nname = a\naddress = 10.77.0.2\n"
	    "[peer b]\nca = /ca\nname = b\naddress = 10.77.0.3\n");
	conf_free(c);
	/* encryption none: fingerprints may stay; private key not needed */
	c = good("[interface]\naddress = 10.77.0.1/24\nencryption = none\n[peer a]\n"
	    "endpoint = a:1\naddress = 10.77.0.2\nfingerprint = sha256:" FP_A2 "\n");
	conf_free(c);
}
END_TEST

/* conf_validate() also guards configs that were not parsed from text. */
START_TEST(test_validate_struct)
{
	struct conf_error err;
	struct conf *c = good(HEAD);
	struct conf_prefix *saved = c->iface.address;

	c->iface.address = NULL;
	c->iface.n_address = 0;
	ck_assert_int_eq(conf_validate(c, &err), -EINVAL);
	ck_assert_str_eq(fmt_err(&err), "t.conf:1: missing key 'address' in [interface]");
	c->iface.address = saved;
	c->iface.n_address = 1;
	c->iface.line = 0;
	free(c->iface.private_key);
	c->iface.private_key = NULL;
	ck_assert_int_eq(conf_validate(c, &err), -EINVAL);
	ck_assert_str_eq(fmt_err(&err),
	    "t.conf: missing key 'private-key' in [interface] (required with encryption dtls)");
	ck_assert_int_eq(conf_validate(c, NULL), -EINVAL);
	c->iface.encryption = CONF_ENC_NONE;
	ck_assert_int_eq(conf_validate(c, &err), 0);
	conf_free(c);
	conf_free(NULL);
}
END_TEST

START_TEST(test_equal)
{
	struct conf *a, *b;
	static const char *const variants[] = {
		"name = tou1\n", "address = 10.77.0.9/24\n", "listen = 6081\n",
		"listen = 0.0.0.0:6080\n", "keylog-file = /kl\n", "mtu = 1400\n",
		"path-mtu = 1501\n", "user = toud\n", "log-level = debug\n",
		"control = /run/x.sock\n", "rekey-time = 61\n", "rekey-bytes = 65G\n",
		"rekey-records = 1M\n", "fwmark = 1\n", "table = off\n", "table = 254\n",
		"fail-open = yes\n", "dns = 10.77.0.53\n",
	};
	static const char *const peer_variants[] = {
		"keepalive = 1\n", "endpoint = a.example:1\n", "address = 10.77.0.3\n",
		"allowed-ips = 10.9.0.0/16\n",
	};
	char text[1024];
	size_t x;

	a = good(HEAD "[peer p]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n");
	/* other file, other lines, other spelling: equal */
	b = good("\n\n# x\n[peer p]\nADDRESS = 10.77.0.2/32\nfingerprint = SHA256:"
	    FP_A2 "\n[interface]\ncertificate = /c\nprivate-key = /k\nmtu = auto\n"
	    "address = 10.77.0.1/24\nlisten = 6080\nrekey-bytes = 65536M\n");
	ck_assert(conf_equal(a, b));
	ck_assert(!conf_diff_peer(&a->peers[0], &b->peers[0]));
	conf_free(b);
	for (x = 0; x < ARRAY_SIZE(variants); x++) {
		snprintf(text, sizeof(text), HEAD "%s[peer p]\nfingerprint = sha256:"
		    FP_A2 "\naddress = 10.77.0.2\n", variants[x]);
		b = good(text);
		ck_assert_msg(!conf_equal(a, b), "equal despite %s", variants[x]);
		ck_assert_msg(!conf_equal(b, a), "equal despite %s", variants[x]);
		ck_assert(!conf_diff_peer(&a->peers[0], &b->peers[0]));
		conf_free(b);
	}
	for (x = 0; x < ARRAY_SIZE(peer_variants); x++) {
		snprintf(text, sizeof(text), HEAD "[peer p]\nfingerprint = sha256:"
		    FP_A2 "\naddress = 10.77.0.2\n%s", peer_variants[x]);
		b = good(text);
		ck_assert_msg(conf_diff_peer(&a->peers[0], &b->peers[0]),
		    "equal despite %s", peer_variants[x]);
		ck_assert(!conf_equal(a, b));
		conf_free(b);
	}
	b = good(HEAD "[peer p]\nca = /ca\nname = p\naddress = 10.77.0.2\n");
	ck_assert(conf_diff_peer(&a->peers[0], &b->peers[0]));
	conf_free(b);
	b = good(HEAD "[peer q]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n");
	ck_assert(conf_diff_peer(&a->peers[0], &b->peers[0]));
	ck_assert(!conf_equal(a, b));
	conf_free(b);
	b = good(HEAD "[peer p]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n"
	    "[peer q]\nfingerprint = sha256:" FP_5E "\naddress = 10.77.0.3\n");
	ck_assert(!conf_equal(a, b));
	ck_assert(!conf_equal(b, a));
	conf_free(b);
	b = good("[interface]\naddress = 10.77.0.1/24\nencryption = none\n[peer p]\n"
	    "address = 10.77.0.2\nendpoint = a:1\n");
	ck_assert(!conf_equal(a, b));
	conf_free(b);
	conf_free(a);

	/* the order of families in a list and of the peers does not matter */
	a = good(HEAD "address = fd77::1/64\n[peer p]\nca = /ca\nname = p\n"
	    "address = 10.77.0.2, fd77::2\n[peer q]\nca = /ca\nname = q\naddress = 10.77.0.3\n");
	b = good("[interface]\naddress = fd77::1/64, 10.77.0.1/24\nprivate-key = /k\n"
	    "certificate = /c\n[peer q]\nca = /ca\nname = q\naddress = 10.77.0.3\n"
	    "[peer p]\nca = /ca\nname = p\naddress = fd77::2\naddress = 10.77.0.2\n");
	ck_assert(conf_equal(a, b));
	ck_assert(conf_equal(b, a));
	ck_assert(!conf_diff_peer(&a->peers[0], &b->peers[1]));
	ck_assert(conf_diff_peer(&a->peers[0], &b->peers[0]));
	conf_free(a);
	conf_free(b);
}
END_TEST

/* fwmark and table: values, the canonical form, and what they decide. */
START_TEST(test_routing)
{
	struct ipprefix p4, p6, def4, def6;
	struct conf *c;
	char *t;

	ck_assert_int_eq(util_prefix_parse("192.168.50.0/24", &p4), 0);
	ck_assert_int_eq(util_prefix_parse("fd50::/64", &p6), 0);
	ck_assert_int_eq(util_prefix_parse("0.0.0.0/0", &def4), 0);
	ck_assert_int_eq(util_prefix_parse("::/0", &def6), 0);

	/* the defaults: table auto, no mark; no full tunnel without a /0 */
	c = good(HEAD "[peer p]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 192.168.50.0/24\n");
	ck_assert_uint_eq(c->iface.fwmark, 0);
	ck_assert_int_eq(c->iface.table, CONF_TABLE_AUTO);
	ck_assert(!conf_full_tunnel(c, AF_INET));
	ck_assert(!conf_full_tunnel(c, AF_INET6));
	ck_assert_uint_eq(conf_route_table(&c->iface, &p4, 51820), CONF_TABLE_MAIN);
	ck_assert_uint_eq(conf_route_table(&c->iface, &def4, 51820), 51820);
	ck_assert_uint_eq(conf_effective_fwmark(c, 51820), 0);
	conf_free(c);
	/* inside an interface prefix: the connected route covers it */
	c = good("[interface]\naddress = 10.77.0.1/24\naddress = 10.78.0.1/32\n"
	    "address = fd77::1/64\nprivate-key = /k\ncertificate = /c\n");
	{
		static const struct { const char *p; bool covered; } v[] = {
			{ "10.77.0.2/32", true }, { "10.77.0.128/25", true },
			{ "10.77.0.0/24", true }, { "10.77.0.0/23", false },
			{ "10.77.1.2/32", false }, { "10.78.0.2/32", false },
			{ "fd77::2/128", true }, { "fd77:0:0:1::2/128", false },
			{ "0.0.0.0/0", false }, { "::/0", false },
		};
		struct ipprefix q;
		size_t k;

		for (k = 0; k < ARRAY_SIZE(v); k++) {
			ck_assert_int_eq(util_prefix_parse(v[k].p, &q), 0);
			ck_assert_msg(conf_iface_covers(&c->iface, &q) == v[k].covered, "%s", v[k].p);
		}
	}
	conf_free(c);

	/* table = auto with 0.0.0.0/0: a full tunnel of IPv4 only; the mark
	 * is the table's number unless fwmark says otherwise */
	c = good(HEAD "table = AUTO\n[peer p]\nfingerprint = sha256:" FP_A2
	    "\nallowed-ips = 0.0.0.0/0, fd50::/64\n");
	ck_assert(conf_full_tunnel(c, AF_INET));
	ck_assert(!conf_full_tunnel(c, AF_INET6));
	ck_assert_uint_eq(conf_route_table(&c->iface, &def4, 51821), 51821);
	ck_assert_uint_eq(conf_route_table(&c->iface, &p6, 51821), CONF_TABLE_MAIN);
	ck_assert_uint_eq(conf_effective_fwmark(c, 51821), 51821);
	conf_free(c);
	c = good(HEAD "fwmark = 0x1234\n[peer p]\nfingerprint = sha256:" FP_A2
	    "\nallowed-ips = ::/0\n");
	ck_assert_uint_eq(c->iface.fwmark, 0x1234);
	ck_assert(conf_full_tunnel(c, AF_INET6));
	ck_assert(!conf_full_tunnel(c, AF_INET));
	ck_assert_uint_eq(conf_effective_fwmark(c, 0x1234), 0x1234);
	roundtrip(c, "fwmark hex");
	t = conf_print(c);
	ck_assert_ptr_nonnull(strstr(t, "\nfwmark      = 0x1234\ntable       = auto\n"));
	free(t);
	conf_free(c);

	/* table = off: no routes, no full tunnel, a mark only if set */
	c = good(HEAD "table = Off\nfwmark = 51820\n[peer p]\nfingerprint = sha256:" FP_A2
	    "\nallowed-ips = 0.0.0.0/0\n");
	ck_assert_int_eq(c->iface.table, CONF_TABLE_OFF);
	ck_assert_uint_eq(c->iface.fwmark, 51820);
	ck_assert(!conf_full_tunnel(c, AF_INET));
	ck_assert_uint_eq(conf_route_table(&c->iface, &def4, 7), 0);
	ck_assert_uint_eq(conf_route_table(&c->iface, &p4, 7), 0);
	ck_assert_uint_eq(conf_effective_fwmark(c, 7), 51820);
	roundtrip(c, "table off");
	t = conf_print(c);
	ck_assert_ptr_nonnull(strstr(t, "\nfwmark      = 0xca6c\ntable       = off\n"));
	free(t);
	conf_free(c);

	/* table = NUMBER: every route there, default or not */
	c = good(HEAD "table = 4294967295\nfwmark = off\n[peer p]\nfingerprint = sha256:" FP_A2
	    "\nallowed-ips = 0.0.0.0/0\n");
	ck_assert_int_eq(c->iface.table, CONF_TABLE_NUMBER);
	ck_assert_uint_eq(c->iface.table_number, 4294967295u);
	ck_assert(!conf_full_tunnel(c, AF_INET));
	ck_assert_uint_eq(conf_route_table(&c->iface, &def4, 7), 4294967295u);
	ck_assert_uint_eq(conf_route_table(&c->iface, &p6, 7), 4294967295u);
	ck_assert_uint_eq(conf_effective_fwmark(c, 7), 0);
	roundtrip(c, "table number");
	t = conf_print(c);
	ck_assert_ptr_nonnull(strstr(t, "\nfwmark      = off\ntable       = 4294967295\n"));
	free(t);
	conf_free(c);
	/* table = 254 is the main table by number; fwmark 0 is off */
	c = good(HEAD "table = 254\nfwmark = 0\n");
	ck_assert_uint_eq(conf_route_table(&c->iface, &def4, 7), CONF_TABLE_MAIN);
	ck_assert_uint_eq(c->iface.fwmark, 0);
	t = conf_print(c);
	ck_assert_ptr_nonnull(strstr(t, "\nfwmark      = off\ntable       = 254\n"));
	free(t);
	conf_free(c);
	/* fail-open: no unless yes */
	c = good(HEAD "[peer p]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 0.0.0.0/0\n");
	ck_assert(!c->iface.fail_open);
	conf_free(c);
	c = good(HEAD "fail-open = YES\n[peer p]\nfingerprint = sha256:" FP_A2
	    "\nallowed-ips = 0.0.0.0/0\n");
	ck_assert(c->iface.fail_open);
	roundtrip(c, "fail-open");
	t = conf_print(c);
	ck_assert_ptr_nonnull(strstr(t, "\ntable       = auto\nfail-open   = yes\n"));
	free(t);
	conf_free(c);
	c = good(HEAD "fail-open = no\n");
	ck_assert(!c->iface.fail_open);
	conf_free(c);
}
END_TEST

START_TEST(test_routing_bad)
{
	/* values */
	bad(HEAD "fwmark = 0x\n",
	    "t.conf:5: fwmark: '0x' is not a number (0..0xffffffff, decimal or 0x hexadecimal, or off)");
	bad(HEAD "fwmark = 0xg1\n",
	    "t.conf:5: fwmark: '0xg1' is not a number (0..0xffffffff, decimal or 0x hexadecimal, or off)");
	bad(HEAD "fwmark = -1\n",
	    "t.conf:5: fwmark: '-1' is not a number (0..0xffffffff, decimal or 0x hexadecimal, or off)");
	bad(HEAD "fwmark = on\n",
	    "t.conf:5: fwmark: 'on' is not a number (0..0xffffffff, decimal or 0x hexadecimal, or off)");
	bad(HEAD "fwmark = 0x100000000\n",
	    "t.conf:5: fwmark: '0x100000000' out of range (0..0xffffffff, or off)");
	bad(HEAD "fwmark = 4294967296\n",
	    "t.conf:5: fwmark: '4294967296' out of range (0..0xffffffff, or off)");
	bad(HEAD "fwmark = 0x1ffffffffffffffffffff\n",
	    "t.conf:5: fwmark: '0x1ffffffffffffffffffff' out of range (0..0xffffffff, or off)");
	bad(HEAD "table = 0\n", "t.conf:5: table: '0' out of range (1..4294967295, auto or off)");
	bad(HEAD "table = 4294967296\n",
	    "t.conf:5: table: '4294967296' out of range (1..4294967295, auto or off)");
	bad(HEAD "table = main\n", "t.conf:5: table: 'main' is not a number (1..4294967295, auto or off)");
	bad(HEAD "table = 255\n", "t.conf:5: table: '255' is the kernel's local table");
	bad(HEAD "fail-open = on\n", "t.conf:5: fail-open: unknown value 'on' (yes or no)");
	bad(HEAD "table = 0x10\n", "t.conf:5: table: '0x10' is not a number (1..4294967295, auto or off)");
	bad(HEAD "table = auto\ntable = off\n", "t.conf:6: duplicate key 'table' in [interface]");
	bad(HEAD "fwmark = 1\nfwmark = 1\n", "t.conf:6: duplicate key 'fwmark' in [interface]");
	bad(HEAD "[peer p]\nfingerprint = sha256:" FP_A2 "\ntable = auto\n",
	    "t.conf:7: unknown key 'table' in [peer p]; table belongs in [interface]");
	/* a full tunnel numbers its table by the fwmark: not one of the
	 * kernel's own; without a default route the mark is free */
	bad(HEAD "fwmark = 0xfe\n[peer p]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = ::/0\n",
	    "t.conf:5: fwmark: 254 is the number of one of the kernel's own routing tables, and "
	    "with table = auto and a prefix of length 0 the fwmark also numbers the tunnel's "
	    "table; choose another fwmark");
	bad(HEAD "fwmark = 253\n[peer p]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 0.0.0.0/0\n",
	    "t.conf:5: fwmark: 253 is the number of one of the kernel's own routing tables, and "
	    "with table = auto and a prefix of length 0 the fwmark also numbers the tunnel's "
	    "table; choose another fwmark");
	conf_free(good(HEAD "fwmark = 255\n[peer p]\nfingerprint = sha256:" FP_A2
	    "\nallowed-ips = 0.0.0.0/1\n"));
	conf_free(good(HEAD "fwmark = 255\ntable = 100\n[peer p]\nfingerprint = sha256:" FP_A2
	    "\nallowed-ips = 0.0.0.0/0\n"));
	conf_free(good(HEAD "fwmark = 252\n[peer p]\nfingerprint = sha256:" FP_A2
	    "\nallowed-ips = 0.0.0.0/0\n"));
}
END_TEST

START_TEST(test_print)
{
	struct conf *c;
	char *t;

	c = good("[peer bob]\naddress = fd77::2, 10.77.0.2\nfingerprint = sha256:" FP_A2
	    "\nendpoint = [2001:DB8::1]:6080\nallowed-ips = 192.168.50.0/24\n"
	    "[interface]\nAddress = 10.77.0.1/24, fd77::1/64\nprivate-key = /k\ncertificate = /c\n"
	    "listen = [::1]:99\nrekey-bytes = 1025M\n"
	    "[peer carol]\nname = carol\nca = /ca\nendpoint = Carol.Example:1\naddress = 10.77.0.3\n");
	t = conf_print(c);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t,
	    "[interface]\n"
	    "name        = tou0\n"
	    "address     = 10.77.0.1/24\n"
	    "address     = fd77::1/64\n"
	    "listen      = [::1]:99\n"
	    "private-key = /k\n"
	    "certificate = /c\n"
	    "mtu         = auto\n"
	    "path-mtu    = 1500\n"
	    "encryption  = dtls\n"
	    "offload     = auto\n"
	    "threads     = auto\n"
	    "log-level   = info\n"
	    "control     = /run/toud/toud.sock\n"
	    "rekey-time  = 3600\n"
	    "rekey-bytes = 1025M\n"
	    "rekey-records = 16M\n"
	    "fwmark      = off\n"
	    "table       = auto\n"
	    "fail-open   = no\n"
	    "\n"
	    "[peer bob]\n"
	    "fingerprint = sha256:" FP_A2 "\n"
	    "endpoint    = [2001:db8::1]:6080\n"
	    "address     = fd77::2\n"
	    "address     = 10.77.0.2\n"
	    "allowed-ips = 192.168.50.0/24\n"
	    "keepalive   = 0\n"
	    "\n"
	    "[peer carol]\n"
	    "ca          = /ca\n"
	    "name        = carol\n"
	    "endpoint    = carol.example:1\n"
	    "address     = 10.77.0.3\n"
	    "keepalive   = 0\n");
	free(t);
	conf_free(c);
}
END_TEST

struct warnings {
	int n;
	char last[600];
};

static void
collect(const struct conf_error *w, void *arg)
{
	struct warnings *ws = arg;

	ws->n++;
	conf_error_fmt(w, ws->last, sizeof(ws->last));
}

/* include = PATTERN: peers one file each.  Files in glob order after the
 * main file's peers; their relative paths relative to their own
 * directory; messages name the included file and its line, also where a
 * check spans two files; [interface] only in the main file; a pattern
 * that matches nothing adds nothing, a directory that does not exist is
 * an error; conf_print() shows the peers, not the pattern. */
START_TEST(test_include)
{
	char dir[] = "/tmp/check_conf.XXXXXX", path[64], sub[64], f[128], want[1024];
	char text[1024], *printed;
	struct conf_error err;
	struct conf *c, *c2;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tou.conf", dir);
	snprintf(sub, sizeof(sub), "%s/peers.d", dir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
	    "certificate = cert.pem\nprivate-key = key.pem\ninclude = peers.d/*.conf\n"
	    "[peer main]\nca = peers.d/ca.pem\nname = main\naddress = 10.77.0.2\n");
	write_file(path, text, 0644);
	snprintf(f, sizeof(f), "%s/b.conf", sub);
	write_file(f, "[peer b]\nca = /etc/ca-b.pem\nname = b\naddress = 10.77.0.4\n", 0644);
	snprintf(f, sizeof(f), "%s/a.conf", sub);
	write_file(f, "# peer a\n[peer a]\nca = a-ca.pem\nname = a\naddress = 10.77.0.3\n"
	    "preshared-key = a.psk\n", 0644);
	snprintf(f, sizeof(f), "%s/0-empty.conf", sub);
	write_file(f, "", 0644);
	snprintf(f, sizeof(f), "%s/notes.txt", sub);
	write_file(f, "not a configuration\n", 0644);
	ck_assert_msg(conf_load(path, false, &c, &err, NULL, NULL) == 0, "%s", fmt_err(&err));
	ck_assert_uint_eq(c->n_peers, 3);
	ck_assert_str_eq(c->peers[0].name, "main");
	ck_assert_str_eq(c->peers[1].name, "a");
	ck_assert_str_eq(c->peers[2].name, "b");
	snprintf(want, sizeof(want), "%s/ca.pem", sub);
	ck_assert_str_eq(c->peers[0].ca, want);
	snprintf(want, sizeof(want), "%s/a-ca.pem", sub);
	ck_assert_str_eq(c->peers[1].ca, want);
	snprintf(want, sizeof(want), "%s/a.psk", sub);
	ck_assert_str_eq(c->peers[1].psk_file, want);
	ck_assert_str_eq(c->peers[2].ca, "/etc/ca-b.pem");
	/* the effective configuration: the peers, no pattern */
	ck_assert_ptr_nonnull(printed = conf_print(c));
	ck_assert_ptr_null(strstr(printed, "include"));
	ck_assert_ptr_nonnull(strstr(printed, "[peer a]"));
	ck_assert_int_eq(conf_parse("p.conf", printed, strlen(printed), &c2, &err), 0);
	ck_assert(conf_equal(c, c2));
	conf_free(c2);
	free(printed);
	conf_free(c);

	/* a mistake in an included file: that file, its line */
	snprintf(f, sizeof(f), "%s/c.conf", sub);
	write_file(f, "[peer c]\nname = c\nbogus = 1\n", 0644);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: unknown key 'bogus' in [peer c]", f);
	ck_assert_str_eq(fmt_err(&err), want);
	/* a check across two files names both */
	write_file(f, "\n\n[peer c]\nca = c.pem\nname = c\naddress = 10.77.0.3\n", 0644);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:6: peer 'c': address 10.77.0.3 is also claimed "
	    "by peer 'a' (%s/a.conf:5)", f, sub);
	ck_assert_str_eq(fmt_err(&err), want);
	write_file(f, "[peer a]\nca = c.pem\nname = c\naddress = 10.77.0.5\n", 0644);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:1: duplicate peer name 'a' (first at %s/a.conf:2)",
	    f, sub);
	ck_assert_str_eq(fmt_err(&err), want);
	write_file(f, "[peer main2]\nca = c.pem\nname = c\naddress = 10.77.0.2\n", 0644);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:4: peer 'main2': address 10.77.0.2 is also "
	    "claimed by peer 'main' (line 9)", f);
	ck_assert_str_eq(fmt_err(&err), want);
	write_file(f, "[peer c]\nca = ca.pem\nname = main\naddress = 10.77.0.5\n", 0644);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:1: peer 'c': same ca and name as peer 'main' (line 6)",
	    f);
	ck_assert_str_eq(fmt_err(&err), want);
	write_file(f, "[interface]\naddress = 10.77.0.9/24\n", 0644);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:1: [interface] belongs in the main file %s, not in "
	    "an included one (only [peer] sections)", f, path);
	ck_assert_str_eq(fmt_err(&err), want);
	write_file(f, "include = x\n", 0644);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:1: key 'include' outside of any section", f);
	ck_assert_str_eq(fmt_err(&err), want);
	unlink(f);

	/* nothing matches: no peers from there; no such directory: an error */
	snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
	    "certificate = cert.pem\nprivate-key = key.pem\ninclude = peers.d/*.peer, %s/*.conf\n",
	    sub);
	write_file(path, text, 0644);
	ck_assert_msg(conf_load(path, false, &c, &err, NULL, NULL) == 0, "%s", fmt_err(&err));
	ck_assert_uint_eq(c->n_peers, 2);
	conf_free(c);
	snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
	    "certificate = cert.pem\nprivate-key = key.pem\ninclude = missing/*.conf\n");
	write_file(path, text, 0644);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:5: include: cannot read %s/missing: "
	    "No such file or directory", path, dir);
	ck_assert_str_eq(fmt_err(&err), want);
	/* no wildcard to match there: nothing matches, nothing added */
	snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
	    "certificate = cert.pem\nprivate-key = key.pem\ninclude = missing/dave.conf\n");
	write_file(path, text, 0644);
	ck_assert_msg(conf_load(path, false, &c, &err, NULL, NULL) == 0, "%s", fmt_err(&err));
	ck_assert_uint_eq(c->n_peers, 0);
	conf_free(c);

	snprintf(f, sizeof(f), "%s/a.conf", sub);
	unlink(f);
	snprintf(f, sizeof(f), "%s/b.conf", sub);
	unlink(f);
	snprintf(f, sizeof(f), "%s/notes.txt", sub);
	unlink(f);
	snprintf(f, sizeof(f), "%s/0-empty.conf", sub);
	unlink(f);
	rmdir(sub);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* include reads regular files only, from places no one but root and
 * toud's user can change: a world- or group-writable directory or file,
 * a FIFO (refused at once, not waited on), a directory, a symbolic link
 * (unless include-follow-symlinks = yes, and then its target's place is
 * checked) are each refused, naming the include line, the path and the
 * fix. */
START_TEST(test_include_unsafe)
{
	char dir[] = "/tmp/check_conf.XXXXXX", path[64], sub[64], f[128], g[128];
	char other[64], want[1024], text[512];
	const char *head = "[interface]\naddress = 10.77.0.1/24\ncertificate = cert.pem\n"
	    "private-key = key.pem\ninclude = peers.d/*.conf\n";
	struct conf_error err;
	struct conf *c;
	time_t t0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tou.conf", dir);
	snprintf(sub, sizeof(sub), "%s/peers.d", dir);
	snprintf(other, sizeof(other), "%s/elsewhere", dir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_int_eq(mkdir(other, 0755), 0);
	write_file(path, head, 0644);
	snprintf(f, sizeof(f), "%s/a.conf", sub);
	write_file(f, "[peer a]\nca = ca.pem\nname = a\naddress = 10.77.0.3\n", 0644);
	ck_assert_msg(conf_load(path, false, &c, &err, NULL, NULL) == 0, "%s", fmt_err(&err));
	ck_assert_uint_eq(c->n_peers, 1);
	conf_free(c);

	/* a directory anyone may write: refused, whatever is in it */
	ck_assert_int_eq(chmod(sub, 0777), 0);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:5: include: directory '%s' is writable by its "
	    "group or others; refused: 'chmod go-w %s'", path, sub, sub);
	ck_assert_str_eq(fmt_err(&err), want);
	/* even sticky: a stranger could still add a file that matches */
	ck_assert_int_eq(chmod(sub, 01777), 0);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	ck_assert_str_eq(fmt_err(&err), want);
	/* a directory above, writable without the sticky bit, likewise */
	ck_assert_int_eq(chmod(sub, 0755), 0);
	ck_assert_int_eq(chmod(dir, 0773), 0);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:5: include: directory '%s' is writable by its "
	    "group or others; refused: 'chmod go-w %s'", path, dir, dir);
	ck_assert_str_eq(fmt_err(&err), want);
	ck_assert_int_eq(chmod(dir, 0700), 0);

	/* a file its group may write */
	ck_assert_int_eq(chmod(f, 0664), 0);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:5: include: '%s' is writable by its group or "
	    "others; refused: 'chmod go-w %s'", path, f, f);
	ck_assert_str_eq(fmt_err(&err), want);
	ck_assert_int_eq(chmod(f, 0644), 0);

	/* a FIFO no one writes to: refused at once, not waited on */
	snprintf(g, sizeof(g), "%s/b.conf", sub);
	ck_assert_int_eq(mkfifo(g, 0644), 0);
	t0 = time(NULL);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	ck_assert_int_le(time(NULL) - t0, 2);
	snprintf(want, sizeof(want), "%s:5: include: '%s' is not a regular file (a FIFO); "
	    "refused", path, g);
	ck_assert_str_eq(fmt_err(&err), want);
	ck_assert_int_eq(unlink(g), 0);
	/* a directory the pattern matches */
	ck_assert_int_eq(mkdir(g, 0755), 0);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:5: include: '%s' is not a regular file (a "
	    "directory); refused", path, g);
	ck_assert_str_eq(fmt_err(&err), want);
	ck_assert_int_eq(rmdir(g), 0);

	/* a symbolic link: refused unless the file says to follow links */
	snprintf(text, sizeof(text), "%s/b.real", other);
	write_file(text, "[peer b]\nca = ca.pem\nname = b\naddress = 10.77.0.4\n", 0644);
	ck_assert_int_eq(symlink(text, g), 0);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:5: include: '%s' is a symbolic link; refused: "
	    "include the file it points to, or set include-follow-symlinks = yes", path, g);
	ck_assert_str_eq(fmt_err(&err), want);
	snprintf(want, sizeof(want), "%sinclude-follow-symlinks = yes\n", head);
	write_file(path, want, 0644);
	ck_assert_msg(conf_load(path, false, &c, &err, NULL, NULL) == 0, "%s", fmt_err(&err));
	ck_assert_uint_eq(c->n_peers, 2);
	ck_assert_str_eq(c->peers[1].name, "b");
	/* the relative paths of a linked file: from the link's directory */
	snprintf(want, sizeof(want), "%s/ca.pem", sub);
	ck_assert_str_eq(c->peers[1].ca, want);
	conf_free(c);
	/* followed, the target's own directory is what is checked */
	ck_assert_int_eq(chmod(other, 0777), 0);
	ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:5: include: directory '%s' is writable by its "
	    "group or others; refused: 'chmod go-w %s'", path, other, other);
	ck_assert_str_eq(fmt_err(&err), want);
	ck_assert_int_eq(chmod(other, 0755), 0);
	unlink(g);

	/* a file of another user (only root can make one) */
	if (geteuid() == 0) {
		ck_assert_int_eq(chown(f, 65534, 65534), 0);
		ck_assert_int_eq(conf_load(path, false, &c, &err, NULL, NULL), -EINVAL);
		snprintf(want, sizeof(want), "%s:5: include: '%s' belongs to another user "
		    "(it must be root's or toud's own); refused: 'chown root: %s'", path, f, f);
		ck_assert_str_eq(fmt_err(&err), want);
		/* ...unless that user is the one toud runs as */
		snprintf(want, sizeof(want), "%suser = nobody\n", head);
		write_file(path, want, 0644);
		ck_assert_msg(conf_load(path, false, &c, &err, NULL, NULL) == 0, "%s",
		    fmt_err(&err));
		conf_free(c);
	}

	unlink(text);
	unlink(f);
	rmdir(sub);
	rmdir(other);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Key files: checked only with check_files; the key's mode is warned about. */
START_TEST(test_key_files)
{
	char dir[] = "/tmp/check_conf.XXXXXX", path[256], key[256], cert[256], text[1024];
	char want[1024];
	struct warnings ws = { 0, "" };
	struct conf_error err;
	struct conf *c;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tou.conf", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
	    "certificate = cert.pem\nprivate-key = %s\n", key);
	write_file(path, text, 0644);

	/* without check_files the missing files are not noticed */
	ck_assert_int_eq(conf_load(path, false, &c, &err, collect, &ws), 0);
	ck_assert_str_eq(c->iface.certificate, cert);
	conf_free(c);
	ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), -EINVAL);
	/* Beside the file (a relative path): the node's pair is elsewhere,
	 * most likely, and a new one is a new identity. */
	snprintf(want, sizeof(want), "%s:4: private-key: cannot open '%s': "
	    "No such file or directory; point it at this node's key pair, or copy the pair "
	    "there ('touctl genkey %s' makes a new identity, which every peer must pin anew)",
	    path, key, dir);
	ck_assert_str_eq(fmt_err(&err), want);

	write_file(key, "key\n", 0644);
	ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: certificate: cannot open '%s': "
	    "No such file or directory; point it at this node's key pair, or copy the pair "
	    "there ('touctl genkey %s' makes a new identity, which every peer must pin anew)",
	    path, cert, dir);
	ck_assert_str_eq(fmt_err(&err), want);
	ck_assert_int_eq(ws.n, 0);

	write_file(cert, "cert\n", 0644);
	ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), 0);
	conf_free(c);
	ck_assert_int_eq(ws.n, 1);
	snprintf(want, sizeof(want), "%s:4: private key '%s' is readable by group or "
	    "others; chmod 600 it", path, key);
	ck_assert_str_eq(ws.last, want);
	/* no callback: no crash */
	ck_assert_int_eq(conf_load(path, true, &c, &err, NULL, NULL), 0);
	conf_free(c);

	ck_assert_int_eq(chmod(key, 0640), 0);
	ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), 0);
	conf_free(c);
	ck_assert_int_eq(ws.n, 2);
	ck_assert_int_eq(chmod(key, 0600), 0);
	ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), 0);
	conf_free(c);
	ck_assert_int_eq(ws.n, 2);

	/* a peer's CA file */
	snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
	    "certificate = cert.pem\nprivate-key = key.pem\n[peer a]\nca = ca.pem\n"
	    "name = a\naddress = 10.77.0.2\n");
	write_file(path, text, 0600);
	ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), -EINVAL);
	snprintf(want, sizeof(want), "%s:6: ca: cannot open '%s/ca.pem': "
	    "No such file or directory", path, dir);
	ck_assert_str_eq(fmt_err(&err), want);
	snprintf(want, sizeof(want), "%s/ca.pem", dir);
	write_file(want, "ca\n", 0644);
	ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), 0);
	ck_assert_str_eq(c->peers[0].ca, want);
	conf_free(c);
	unlink(want);

	/* a directory is not a key file */
	snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
	    "certificate = .\nprivate-key = key.pem\n");
	write_file(path, text, 0600);
	ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: certificate: '%s/.' is not a regular file",
	    path, dir);
	ck_assert_str_eq(fmt_err(&err), want);

	if (geteuid() != 0) {
		/* unreadable for us (root reads anything) */
		ck_assert_int_eq(chmod(key, 0), 0);
		snprintf(text, sizeof(text), "[interface]\naddress = 10.77.0.1/24\n"
		    "certificate = cert.pem\nprivate-key = key.pem\n");
		write_file(path, text, 0600);
		ck_assert_int_eq(conf_load(path, true, &c, &err, collect, &ws), -EINVAL);
		snprintf(want, sizeof(want), "%s:4: private-key: cannot open '%s': "
		    "Permission denied", path, key);
		ck_assert_str_eq(fmt_err(&err), want);
	}
	unlink(key);
	unlink(cert);
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A relative configuration path: key paths become absolute through the cwd. */
START_TEST(test_relative_path)
{
	char dir[] = "/tmp/check_conf.XXXXXX", old[2048], want[2200];
	struct conf_error err;
	struct conf *c;

	ck_assert_ptr_nonnull(getcwd(old, sizeof(old)));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chdir(dir), 0);
	ck_assert_int_eq(mkdir("sub", 0700), 0);
	write_file("sub/t.conf", "[interface]\naddress = 10.77.0.1/24\n"
	    "private-key = key.pem\ncertificate = ../cert.pem\nkeylog-file = kl\n", 0600);
	write_file("t.conf", "[interface]\naddress = 10.77.0.1/24\n"
	    "private-key = sub/key.pem\ncertificate = /c\n", 0600);
	ck_assert_int_eq(conf_load("sub/t.conf", false, &c, &err, NULL, NULL), 0);
	snprintf(want, sizeof(want), "%s/sub/key.pem", dir);
	ck_assert_str_eq(c->iface.private_key, want);
	snprintf(want, sizeof(want), "%s/sub/../cert.pem", dir);
	ck_assert_str_eq(c->iface.certificate, want);
	snprintf(want, sizeof(want), "%s/sub/kl", dir);
	ck_assert_str_eq(c->iface.keylog_file, want);
	ck_assert_str_eq(c->file, "sub/t.conf");
	conf_free(c);
	ck_assert_int_eq(conf_load("t.conf", false, &c, &err, NULL, NULL), 0);
	snprintf(want, sizeof(want), "%s/sub/key.pem", dir);
	ck_assert_str_eq(c->iface.private_key, want);
	ck_assert_str_eq(c->iface.certificate, "/c");
	conf_free(c);
	ck_assert_int_eq(conf_load("sub/t.conf", true, &c, &err, NULL, NULL), -EINVAL);
	snprintf(want, sizeof(want), "sub/t.conf:3: private-key: cannot open "
	    "'%s/sub/key.pem': No such file or directory; create the key pair with "
	    "'touctl genkey %s/sub'", dir, dir);
	ck_assert_str_eq(fmt_err(&err), want);
	unlink("sub/t.conf");
	unlink("t.conf");
	rmdir("sub");
	ck_assert_int_eq(chdir(old), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* The checks that compare every peer with every earlier one sort instead:
 * still the first clash in file order is reported, with the first earlier
 * claim it clashes with, also among many peers. */
START_TEST(test_clash_order)
{
	size_t cap = 4 * 1024 * 1024, n, x;
	char *text = malloc(cap), want[200];

	ck_assert_ptr_nonnull(text);
	/* Sorted, 10.9.1.0/24 against 10.9.0.0/16 comes first; in file
	 * order the repeat of 10.77.0.5 does. */
	bad(HEAD "[peer p0]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 10.9.0.0/16\n"
	    "[peer p1]\nfingerprint = sha256:" FP_5E "\naddress = 10.77.0.5\n"
	    "[peer p2]\nca = /ca\nname = p2\naddress = 10.77.0.5\n"
	    "[peer p3]\nca = /ca\nname = p3\nallowed-ips = 10.9.1.0/24\n"
	    "[peer p4]\nca = /ca\nname = p4\naddress = 10.77.0.5\n",
	    "t.conf:14: peer 'p2': address 10.77.0.5 is also claimed by peer 'p1' (line 10)");
	bad(HEAD "[peer p0]\nfingerprint = sha256:" FP_A2 "\nallowed-ips = 10.9.0.0/16\n"
	    "[peer p1]\nfingerprint = sha256:" FP_5E "\nallowed-ips = 10.9.1.0/24, 10.9.0.0/16\n",
	    "t.conf:10: peer 'p1': allowed-ips 10.9.1.0/24 overlaps 10.9.0.0/16 of peer 'p0' "
	    "(line 7)");
	/* 40,000 peers; the last repeats the address of the sixth, then the
	 * name and the key of the third. */
	n = (size_t)snprintf(text, cap, "[interface]\naddress = fd77::1/64\nencryption = none\n");
	for (x = 0; x < 40000; x++)
		n += (size_t)snprintf(text + n, cap - n,
		    "[peer p%zu]\nendpoint = 192.0.2.1:1\naddress = fd77::%zx\n", x, x + 2);
	ck_assert_uint_lt(n + 200, cap);
	snprintf(text + n, cap - n, "[peer last]\nendpoint = 192.0.2.1:1\naddress = fd77::7\n");
	snprintf(want, sizeof(want), "t.conf:%d: peer 'last': address fd77::7 is also claimed by "
	    "peer 'p5' (line 21)", 3 + 3 * 40000 + 3);
	bad(text, want);
	snprintf(text + n, cap - n, "[peer p2]\nendpoint = 192.0.2.1:1\naddress = fd77::1:0\n");
	snprintf(want, sizeof(want), "t.conf:%d: duplicate peer name 'p2' (first at line 10)",
	    3 + 3 * 40000 + 1);
	bad(text, want);
	free(text);
}
END_TEST

START_TEST(test_load_errors)
{
	char dir[] = "/tmp/check_conf.XXXXXX", path[256], want[512];
	struct conf_error err;
	struct conf *c = (struct conf *)1;
	size_t size = 64 * 1024 * 1024, n;
	char *text;

	ck_assert_int_eq(conf_load("/nonexistent/tou.conf", true, &c, &err, NULL, NULL),
	    -ENOENT);
	ck_assert_ptr_null(c);
	ck_assert_str_eq(fmt_err(&err),
	    "/nonexistent/tou.conf: cannot open: No such file or directory");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(conf_load(dir, true, &c, &err, NULL, NULL), -EISDIR);
	snprintf(want, sizeof(want), "%s: cannot read: Is a directory", dir);
	ck_assert_str_eq(fmt_err(&err), want);

	/* exactly 64 MiB is read; one byte more is refused */
	text = malloc(size + 2);
	ck_assert_ptr_nonnull(text);
	n = (size_t)snprintf(text, size, "[interface]\naddress = 10.77.0.1/24\n"
	    "encryption = none\n");
	memset(text + n, '#', size - n);
	for (; n + 100 < size; n += 100)
		text[n] = '\n';
	text[size] = '\0';
	snprintf(path, sizeof(path), "%s/big.conf", dir);
	write_file(path, text, 0600);
	ck_assert_int_eq(conf_load(path, true, &c, &err, NULL, NULL), 0);
	conf_free(c);
	text[size] = '\n';
	text[size + 1] = '\0';
	write_file(path, text, 0600);
	ck_assert_int_eq(conf_load(path, true, &c, &err, NULL, NULL), -EFBIG);
	snprintf(want, sizeof(want), "%s: file larger than 64 MiB", path);
	ck_assert_str_eq(fmt_err(&err), want);
	free(text);
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* listen-tcp, endpoint-tcp, proxy and sni: the forms, the canonical form, the
 * differences, and what they need. */
START_TEST(test_tcp_keys)
{
#define TPEER "[peer x]\nfingerprint = sha256:" FP_A2 "\naddress = 10.77.0.2\n"
	struct conf *c, *c2;
	char *t;

	c = good(HEAD "listen-tcp = 443\n" TPEER "endpoint-tcp = vpn.example.net:443\n"
	    "proxy = http://[2001:db8::8]:3128/\nsni = CDN.Example.com\n");
	ck_assert(c->iface.has_listen_tcp && !c->iface.has_listen_tcp_addr);
	ck_assert_uint_eq(c->iface.listen_tcp_port, 443);
	ck_assert_str_eq(c->peers[0].endpoint_tcp_host, "vpn.example.net");
	ck_assert_uint_eq(c->peers[0].endpoint_tcp_port, 443);
	ck_assert_str_eq(c->peers[0].proxy_host, "2001:db8::8");
	ck_assert_uint_eq(c->peers[0].proxy_port, 3128);
	ck_assert_str_eq(c->peers[0].sni, "cdn.example.com");
	roundtrip(c, "tcp keys");
	t = conf_print(c);
	ck_assert_msg(strstr(t, "\nlisten-tcp  = 443\n") && strstr(t,
	    "\nendpoint-tcp = vpn.example.net:443\n") && strstr(t,
	    "\nproxy       = http://[2001:db8::8]:3128\n") &&
	    strstr(t, "\nsni         = cdn.example.com\n"), "%s", t);
	free(t);
	c2 = good(HEAD "listen-tcp = 10.0.0.1:443\n" TPEER "endpoint-tcp = 192.0.2.1:443\n");
	ck_assert(c2->iface.has_listen_tcp_addr);
	ck_assert_uint_eq(conf_diff_iface(&c->iface, &c2->iface), CONF_IFACE_DIFF_LISTEN_TCP);
	ck_assert_uint_eq(conf_diff_peer(&c->peers[0], &c2->peers[0]),
	    CONF_PEER_DIFF_ENDPOINT_TCP | CONF_PEER_DIFF_PROXY | CONF_PEER_DIFF_SNI);
	ck_assert(c2->peers[0].sni == NULL);
	roundtrip(c2, "tcp keys with addresses");
	conf_free(c2);
	conf_free(c);

	bad(HEAD "listen-tcp = 0\n", "t.conf:5: listen-tcp: '0' out of range (port 1..65535)");
	bad(HEAD "listen-tcp = 10.0.0.1\n", "t.conf:5: listen-tcp: missing port in '10.0.0.1' "
	    "(ADDR:PORT)");
	bad(HEAD TPEER "endpoint-tcp = host\n", "t.conf:8: endpoint-tcp: 'host' is not HOST:PORT or "
	    "[ADDR]:PORT");
	bad(HEAD TPEER "proxy = 192.0.2.1:8080\nendpoint-tcp = h:443\n", "t.conf:8: proxy: "
	    "'192.0.2.1:8080' is not http://HOST:PORT");
	bad(HEAD TPEER "proxy = https://p:8080\nendpoint-tcp = h:443\n", "t.conf:8: proxy: "
	    "'https://p:8080' is not http://HOST:PORT");
	bad(HEAD TPEER "proxy = http://p:8080\n", "t.conf:8: proxy: without 'endpoint-tcp' in "
	    "[peer x] (the proxy reaches the TCP transport)");
	/* Credentials in the proxy's URL: refused without quoting them. */
	bad(HEAD TPEER "endpoint-tcp = h:443\nproxy = http://jo:s3cret@p:3128\n", "t.conf:9: "
	    "proxy: credentials do not belong in the configuration (readable by all, and "
	    "printed by toud -T): write 'user:password' into a file only root and toud may "
	    "read, name it with proxy-credentials = FILE, and leave proxy = http://HOST:PORT");
	bad(HEAD TPEER "proxy-credentials = /etc/tou/proxy.pw\n", "t.conf:8: proxy-credentials: "
	    "without 'proxy' in [peer x] (they are the proxy's)");
	c = good(HEAD TPEER "endpoint-tcp = h:443\nproxy = http://p:3128\n"
	    "proxy-credentials = /etc/tou/proxy.pw\n");
	ck_assert_str_eq(c->peers[0].proxy_auth_file, "/etc/tou/proxy.pw");
	ck_assert_ptr_null(c->peers[0].proxy_auth);     /* read by proxy_auth_load_conf() */
	t = conf_print(c);
	ck_assert_msg(strstr(t, "\nproxy-credentials = /etc/tou/proxy.pw\n"), "%s", t);
	free(t);
	conf_free(c);
	/* post-quantum: three words, auto unwritten. */
	c = good(HEAD TPEER "post-quantum = required\n");
	ck_assert_int_eq(c->peers[0].post_quantum, CONF_PQ_REQUIRED);
	t = conf_print(c);
	ck_assert_msg(strstr(t, "\npost-quantum = required\n"), "%s", t);
	free(t);
	roundtrip(c, "post-quantum");
	conf_free(c);
	c = good(HEAD TPEER);
	ck_assert_int_eq(c->peers[0].post_quantum, CONF_PQ_AUTO);
	t = conf_print(c);
	ck_assert_msg(!strstr(t, "post-quantum"), "%s", t);
	free(t);
	conf_free(c);
	c = good(HEAD TPEER "post-quantum = off\n");
	ck_assert_int_eq(c->peers[0].post_quantum, CONF_PQ_OFF);
	conf_free(c);
	bad(HEAD TPEER "post-quantum = yes\n", "t.conf:8: post-quantum: unknown value 'yes' "
	    "(auto, required or off)");
	bad(HEAD TPEER "sni = a.example\n", "t.conf:8: sni: without 'endpoint-tcp' in "
	    "[peer x] (the name is sent when connecting there)");
	bad(HEAD TPEER "endpoint-tcp = h:443\nsni = 192.0.2.1\n", "t.conf:9: sni: '192.0.2.1' is "
	    "not a host name (an address or a final dot is not sent as a server name)");
	bad(HEAD TPEER "endpoint-tcp = h:443\nsni = 2001:db8::1\n", "t.conf:9: sni: "
	    "'2001:db8::1' is not a host name (an address or a final dot is not sent as a "
	    "server name)");
	bad(HEAD TPEER "endpoint-tcp = h:443\nsni = a.example.\n", "t.conf:9: sni: 'a.example.' "
	    "is not a host name (an address or a final dot is not sent as a server name)");
	bad(HEAD TPEER "endpoint-tcp = h:443\nsni = a..example\n", "t.conf:9: sni: "
	    "'a..example' is not a host name (an address or a final dot is not sent as a "
	    "server name)");
	bad("[interface]\naddress = 10.77.0.1/24\nencryption = none\nlisten-tcp = 443\n",
	    "t.conf:4: listen-tcp: needs encryption dtls (the TCP transport is TLS)");
#undef TPEER
}
END_TEST

/* metrics and metrics-allow-remote: the forms, the loopback rule (in
 * either order of the keys), the canonical form. */
START_TEST(test_metrics)
{
	static const char *const loopback[] = {
		"127.0.0.1:9680", "[::1]:9680", "127.254.0.9:1", "[::ffff:127.0.0.1]:65535",
	};
	static const char remote[] = "is not a loopback address, and the endpoint has no "
	    "authentication: use 127.0.0.1 or [::1] (and a proxy or an SSH tunnel), or set "
	    "metrics-allow-remote = yes";
	char text[512], want[512], a[UTIL_ADDRSTRLEN];
	struct conf *c, *c2;
	size_t i;
	char *t;

	c = good(HEAD);
	ck_assert(!c->iface.has_metrics);
	ck_assert(!c->iface.metrics_allow_remote);
	t = conf_print(c);
	ck_assert_msg(strstr(t, "metrics") == NULL, "%s", t);
	free(t);
	conf_free(c);

	for (i = 0; i < ARRAY_SIZE(loopback); i++) {
		snprintf(text, sizeof(text), HEAD "metrics = %s\n", loopback[i]);
		c = good(text);
		ck_assert(c->iface.has_metrics);
		ck_assert_int_eq(c->iface.metrics_line, 5);
		roundtrip(c, loopback[i]);
		t = conf_print(c);
		snprintf(want, sizeof(want), "\nmetrics     = %s\nmetrics-allow-remote = no\n",
		    loopback[i]);
		ck_assert_msg(strstr(t, want) != NULL, "%s", t);
		free(t);
		conf_free(c);
	}
	c = good(HEAD "metrics = [::1]:9680\n");
	ck_assert_int_eq(c->iface.metrics_addr.family, AF_INET6);
	ck_assert_uint_eq(c->iface.metrics_port, 9680);
	c2 = good(HEAD "metrics = [::1]:9681\n");
	ck_assert(!conf_equal(c, c2));
	conf_free(c2);
	c2 = good(HEAD "metrics = 127.0.0.1:9680\n");
	ck_assert(!conf_equal(c, c2));
	conf_free(c2);
	conf_free(c);

	/* elsewhere only when the file says so, before or after */
	c = good(HEAD "metrics-allow-remote = YES\nmetrics = 0.0.0.0:9680\n");
	ck_assert(c->iface.metrics_allow_remote);
	ck_assert_str_eq(util_addr_fmt(&c->iface.metrics_addr, a, sizeof(a)), "0.0.0.0");
	roundtrip(c, "allow-remote first");
	conf_free(c);
	c = good(HEAD "metrics = [2001:db8::1]:9680\nmetrics-allow-remote = yes\n");
	roundtrip(c, "remote v6");
	conf_free(c);
	/* off, and allow-remote alone, are kept as they are */
	c = good(HEAD "metrics = 127.0.0.1:1\nmetrics-allow-remote = no\n");
	c2 = good(HEAD "metrics = off\nmetrics-allow-remote = yes\n");
	ck_assert(!c2->iface.has_metrics);
	ck_assert(!conf_equal(c, c2));
	roundtrip(c2, "allow-remote alone");
	t = conf_print(c2);
	ck_assert_msg(strstr(t, "\nmetrics-allow-remote = yes\n") != NULL && !strstr(t, "\nmetrics "),
	    "%s", t);
	free(t);
	conf_free(c2);
	conf_free(c);

	bad(HEAD "metrics = 192.0.2.1:9680\n", "t.conf:5: metrics: 192.0.2.1:9680 is not a "
	    "loopback address, and the endpoint has no authentication: use 127.0.0.1 or [::1] "
	    "(and a proxy or an SSH tunnel), or set metrics-allow-remote = yes");
	snprintf(want, sizeof(want), "t.conf:6: metrics: [::]:9680 %s", remote);
	bad(HEAD "metrics-allow-remote = no\nmetrics = [::]:9680\n", want);
	snprintf(want, sizeof(want), "t.conf:5: metrics: 10.77.0.1:9680 %s", remote);
	bad(HEAD "metrics = 10.77.0.1:9680\n", want);
	bad(HEAD "metrics = 9680\n", "t.conf:5: metrics: '9680' is not ADDR:PORT or [ADDR]:PORT "
	    "(e.g. 127.0.0.1:9680), or off");
	bad(HEAD "metrics = 127.0.0.1\n", "t.conf:5: metrics: '127.0.0.1' is not ADDR:PORT or "
	    "[ADDR]:PORT (e.g. 127.0.0.1:9680), or off");
	bad(HEAD "metrics = [::1]\n", "t.conf:5: metrics: '[::1]' is not ADDR:PORT or [ADDR]:PORT");
	bad(HEAD "metrics = fd00::1:9680\n", "t.conf:5: metrics: 'fd00::1:9680' is not ADDR:PORT "
	    "or [ADDR]:PORT (e.g. 127.0.0.1:9680), or off");
	bad(HEAD "metrics = localhost:9680\n", "t.conf:5: metrics: 'localhost' is not an IP "
	    "address");
	bad(HEAD "metrics = 127.0.0.1:0\n", "t.conf:5: metrics: '0' out of range (port 1..65535)");
	bad(HEAD "metrics-allow-remote = maybe\n", "t.conf:5: metrics-allow-remote: unknown value "
	    "'maybe' (yes or no)");
	bad(HEAD "metrics = 127.0.0.1:1\nmetrics = 127.0.0.1:2\n", "t.conf:6: duplicate key "
	    "'metrics' in [interface]");
	bad(HEAD "[peer p]\nmetrics = 127.0.0.1:1\n", "t.conf:6: unknown key 'metrics' in [peer p]; metrics belongs in [interface]");
}
END_TEST

/* dns and dns-search: values, order, the canonical form, what reload sees. */
START_TEST(test_dns)
{
	char a[UTIL_ADDRSTRLEN], *t;
	struct conf *c, *c2;

	c = good(HEAD);
	ck_assert_uint_eq(c->iface.n_dns, 0);
	ck_assert_uint_eq(c->iface.n_dns_search, 0);
	t = conf_print(c);
	ck_assert_msg(strstr(t, "dns") == NULL, "%s", t);
	free(t);
	conf_free(c);

	c = good(HEAD "dns = 10.77.0.53, fd77::53\ndns-search = Corp.Example., ~lab.example\n"
	    "dns = 192.0.2.53\ndns-search = ~.\n");
	ck_assert_uint_eq(c->iface.n_dns, 3);
	ck_assert_str_eq(util_addr_fmt(&c->iface.dns[1].p.addr, a, sizeof(a)), "fd77::53");
	ck_assert_int_eq(c->iface.dns[2].line, 7);
	ck_assert_uint_eq(c->iface.n_dns_search, 3);
	ck_assert_str_eq(c->iface.dns_search[0], "corp.example");
	ck_assert_str_eq(c->iface.dns_search[1], "~lab.example");
	ck_assert_str_eq(c->iface.dns_search[2], "~.");
	ck_assert_int_eq(c->iface.dns_search_line, 6);
	roundtrip(c, "dns");
	t = conf_print(c);
	ck_assert_msg(strstr(t, "\ndns         = 10.77.0.53\ndns         = fd77::53\n"
	    "dns         = 192.0.2.53\ndns-search  = corp.example\ndns-search  = ~lab.example\n"
	    "dns-search  = ~.\n") != NULL, "%s", t);
	free(t);

	/* the same, written otherwise: equal; another order: a change */
	c2 = good(HEAD "dns-search = corp.example, ~LAB.example., ~.\n"
	    "dns = 10.77.0.53\ndns = fd77::53, 192.0.2.53\n");
	ck_assert_uint_eq(conf_diff_iface(&c->iface, &c2->iface), 0);
	conf_free(c2);
	c2 = good(HEAD "dns = fd77::53, 10.77.0.53, 192.0.2.53\n"
	    "dns-search = corp.example, ~lab.example, ~.\n");
	ck_assert_uint_eq(conf_diff_iface(&c->iface, &c2->iface), CONF_IFACE_DIFF_DNS);
	conf_free(c2);
	c2 = good(HEAD "dns = 10.77.0.53, fd77::53, 192.0.2.53\n"
	    "dns-search = ~lab.example, corp.example, ~.\n");
	ck_assert_uint_eq(conf_diff_iface(&c->iface, &c2->iface), CONF_IFACE_DIFF_DNS_SEARCH);
	/* a reload applies both */
	ck_assert_uint_eq(CONF_IFACE_DIFF_DNS_SEARCH & ~CONF_IFACE_DIFF_RELOADABLE, 0);
	ck_assert_uint_eq(CONF_IFACE_DIFF_DNS & ~CONF_IFACE_DIFF_RELOADABLE, 0);
	conf_free(c2);
	conf_free(c);

	bad(HEAD "dns = 10.77.0.53/32\n", "t.conf:5: dns: '10.77.0.53/32' is not an IP address "
	    "(no prefix length)");
	bad(HEAD "dns = ns.example\n", "t.conf:5: dns: 'ns.example' is not an IP address");
	bad(HEAD "dns = 10.77.0.53:53\n", "t.conf:5: dns: '10.77.0.53:53' is not an IP address");
	bad(HEAD "dns = 10.77.0.53,\n", "t.conf:5: dns: empty element in list");
	bad(HEAD "dns-search = example.com\n", "t.conf:5: dns-search: needs dns, the name "
	    "servers that answer for the domains");
	bad(HEAD "dns = 10.77.0.53\ndns-search = exa mple.com\n", "t.conf:6: dns-search: "
	    "'exa mple.com' is not a domain name (DOMAIN, or ~DOMAIN for a routing-only domain)");
	bad(HEAD "dns = 10.77.0.53\ndns-search = .\n", "t.conf:6: dns-search: '.' is not a "
	    "domain name (DOMAIN, or ~DOMAIN for a routing-only domain)");
	bad(HEAD "dns = 10.77.0.53\ndns-search = ~\n", "t.conf:6: dns-search: '~' is not a "
	    "domain name (DOMAIN, or ~DOMAIN for a routing-only domain)");
	bad(HEAD "dns = 10.77.0.53\ndns-search = a..\n", "t.conf:6: dns-search: 'a..' is not "
	    "a domain name (DOMAIN, or ~DOMAIN for a routing-only domain)");
	bad(HEAD "dns = 10.77.0.53\ndns-search = a..b\n", "t.conf:6: dns-search: 'a..b' is not "
	    "a domain name (DOMAIN, or ~DOMAIN for a routing-only domain)");
	bad(HEAD "[peer p]\ndns = 10.77.0.53\n", "t.conf:6: unknown key 'dns' in [peer p]; dns belongs in [interface]");
}
END_TEST

START_TEST(test_error_fmt)
{
	struct conf_error e;
	char buf[16];

	memset(&e, 0, sizeof(e));
	strcpy(e.file, "/etc/tou.conf");
	e.line = 7;
	strcpy(e.msg, "unknown key 'adress' in [peer bob]");
	ck_assert_str_eq(fmt_err(&e), "/etc/tou.conf:7: unknown key 'adress' in [peer bob]");
	e.line = 0;
	ck_assert_str_eq(fmt_err(&e), "/etc/tou.conf: unknown key 'adress' in [peer bob]");
	ck_assert_str_eq(conf_error_fmt(&e, buf, sizeof(buf)), "/etc/tou.conf: ");
	ck_assert_ptr_eq(conf_error_fmt(&e, buf, sizeof(buf)), buf);
}
END_TEST

static void
scan_bad_fixtures(void)
{
	struct dirent **list;
	int n, x;

	n = scandir(testdata_conf(), &list, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "check_conf: cannot read %s: %s\n", testdata_conf(),
		    strerror(errno));
		return;
	}
	bad_names = calloc((size_t)n, sizeof(*bad_names));
	for (x = 0; x < n; x++) {
		size_t l = strlen(list[x]->d_name);

		if (bad_names && strncmp(list[x]->d_name, "bad-", 4) == 0 && l > 5 &&
		    strcmp(list[x]->d_name + l - 5, ".conf") == 0)
			bad_names[n_bad++] = strdup(list[x]->d_name);
		free(list[x]);
	}
	free(list);
}

static Suite *
conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_none_and_case);
	tcase_add_test(tc, test_roundtrip_files);
	tcase_add_test(tc, test_syntax);
	tcase_add_test(tc, test_buffer);
	tcase_add_test(tc, test_line_length);
	tcase_add_test(tc, test_iface_values);
	tcase_add_test(tc, test_peer_values);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_validate);
	tcase_add_test(tc, test_validate_struct);
	tcase_add_test(tc, test_clash_order);
	tcase_add_test(tc, test_equal);
	tcase_add_test(tc, test_print);
	tcase_add_test(tc, test_routing);
	tcase_add_test(tc, test_routing_bad);
	tcase_add_test(tc, test_metrics);
	tcase_add_test(tc, test_dns);
	tcase_add_test(tc, test_tcp_keys);
	tcase_add_test(tc, test_error_fmt);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("fixtures");
	tcase_add_test(tc, test_bad_count);
	tcase_add_loop_test(tc, test_bad_fixture, 0, (int)n_bad);
	suite_add_tcase(s, tc);

	tc = tcase_create("load");
	tcase_add_test(tc, test_key_files);
	tcase_add_test(tc, test_relative_path);
	tcase_add_test(tc, test_load_errors);
	tcase_add_test(tc, test_preshared_key);
	tcase_add_test(tc, test_include);
	tcase_add_test(tc, test_include_unsafe);
	tcase_set_timeout(tc, 60);             /* the largest file is 64 MiB */
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	testdata_conf();
	scan_bad_fixtures();
	return check_run(conf_suite());
}
