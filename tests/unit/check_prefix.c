/* check_prefix.c - longest-prefix match, by hand and against a brute-force
 * reference on random tables. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefix.h"

#include "testutil.h"

/* Values are only compared, never dereferenced. */
#define V(n) ((void *)(uintptr_t)(n))

/* "ADDR/LEN" -> struct ipprefix, without util.c so the reference stays
 * independent of the code under test. */
static struct ipprefix
pfx(const char *s)
{
	struct ipprefix p;
	char buf[64];
	char *slash;

	memset(&p, 0, sizeof(p));
	ck_assert_uint_lt(strlen(s), sizeof(buf));
	strcpy(buf, s);
	slash = strchr(buf, '/');
	ck_assert_ptr_nonnull(slash);
	*slash = '\0';
	p.len = (uint8_t)atoi(slash + 1);
	if (strchr(buf, ':') != NULL) {
		p.addr.family = AF_INET6;
		ck_assert_int_eq(inet_pton(AF_INET6, buf, p.addr.b), 1);
	} else {
		p.addr.family = AF_INET;
		ck_assert_int_eq(inet_pton(AF_INET, buf, p.addr.b), 1);
	}
	return p;
}

static void
ins(struct prefix_table *t, const char *s, void *v)
{
	struct ipprefix p = pfx(s);

	ck_assert_msg(prefix_insert(t, &p, v) == 0, "insert %s", s);
}

static void *
look(const struct prefix_table *t, const char *addr)
{
	uint8_t b[16];

	if (strchr(addr, ':') != NULL) {
		ck_assert_int_eq(inet_pton(AF_INET6, addr, b), 1);
		return prefix_lookup(t, AF_INET6, b);
	}
	ck_assert_int_eq(inet_pton(AF_INET, addr, b), 1);
	return prefix_lookup(t, AF_INET, b);
}

static struct prefix_table *
table(void)
{
	struct prefix_table *t = prefix_table_new();

	ck_assert_ptr_nonnull(t);
	return t;
}

/* ---- basic cases ---- */

START_TEST(test_empty)
{
	struct prefix_table *t = table();
	struct ipprefix p = pfx("10.0.0.0/8");

	ck_assert_uint_eq(prefix_count(t), 0);
	ck_assert_ptr_null(look(t, "10.0.0.1"));
	ck_assert_ptr_null(look(t, "0.0.0.0"));
	ck_assert_ptr_null(look(t, "::"));
	ck_assert_ptr_null(look(t, "fd00::1"));
	ck_assert_ptr_null(prefix_get(t, &p));
	ck_assert_int_eq(prefix_remove(t, &p), -ENOENT);
	prefix_remove_value(t, V(1));
	ck_assert_uint_eq(prefix_count(t), 0);
	prefix_table_free(t);
	prefix_table_free(NULL);
}
END_TEST

START_TEST(test_default_route)
{
	struct prefix_table *t = table();
	struct ipprefix p;

	ins(t, "0.0.0.0/0", V(1));
	ck_assert_ptr_eq(look(t, "0.0.0.0"), V(1));
	ck_assert_ptr_eq(look(t, "255.255.255.255"), V(1));
	ck_assert_ptr_eq(look(t, "10.77.0.2"), V(1));
	/* Families do not mix. */
	ck_assert_ptr_null(look(t, "::"));
	ck_assert_ptr_null(look(t, "::ffff:10.77.0.2"));

	ins(t, "::/0", V(2));
	ck_assert_ptr_eq(look(t, "::"), V(2));
	ck_assert_ptr_eq(look(t, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), V(2));
	ck_assert_ptr_eq(look(t, "10.0.0.1"), V(1));
	ck_assert_uint_eq(prefix_count(t), 2);

	/* Host bits of a /0 are ignored. */
	p = pfx("1.2.3.4/0");
	ck_assert_int_eq(prefix_insert(t, &p, V(3)), -EEXIST);
	ck_assert_ptr_eq(prefix_get(t, &p), V(1));

	p = pfx("0.0.0.0/0");
	ck_assert_int_eq(prefix_remove(t, &p), 0);
	ck_assert_ptr_null(look(t, "10.0.0.1"));
	ck_assert_ptr_eq(look(t, "::1"), V(2));
	ck_assert_uint_eq(prefix_count(t), 1);
	prefix_table_free(t);
}
END_TEST

START_TEST(test_host_routes)
{
	struct prefix_table *t = table();
	struct ipprefix p;

	ins(t, "10.77.0.2/32", V(1));
	ins(t, "10.77.0.3/32", V(2));
	ins(t, "fd77::2/128", V(3));
	ins(t, "fd77::3/128", V(4));
	ck_assert_ptr_eq(look(t, "10.77.0.2"), V(1));
	ck_assert_ptr_eq(look(t, "10.77.0.3"), V(2));
	ck_assert_ptr_null(look(t, "10.77.0.1"));
	ck_assert_ptr_null(look(t, "10.77.0.4"));
	ck_assert_ptr_null(look(t, "138.77.0.2"));
	ck_assert_ptr_eq(look(t, "fd77::2"), V(3));
	ck_assert_ptr_eq(look(t, "fd77::3"), V(4));
	ck_assert_ptr_null(look(t, "fd77::1"));
	ck_assert_ptr_null(look(t, "fd77::2:0"));
	ck_assert_ptr_null(look(t, "fd77::"));
	ins(t, "255.255.255.255/32", V(5));
	ins(t, "0.0.0.0/32", V(6));
	ck_assert_ptr_eq(look(t, "255.255.255.255"), V(5));
	ck_assert_ptr_eq(look(t, "0.0.0.0"), V(6));
	ck_assert_ptr_null(look(t, "255.255.255.254"));
	ck_assert_ptr_null(look(t, "0.0.0.1"));
	p = pfx("fd77::3/128");
	ck_assert_ptr_eq(prefix_get(t, &p), V(4));
	ck_assert_uint_eq(prefix_count(t), 6);
	prefix_table_free(t);
}
END_TEST

START_TEST(test_nested)
{
	struct prefix_table *t = table();
	struct ipprefix p;

	ins(t, "10.0.0.0/8", V(1));
	ins(t, "10.1.0.0/16", V(2));
	ins(t, "10.1.2.0/24", V(3));
	ins(t, "10.1.2.3/32", V(4));
	ins(t, "10.1.2.128/25", V(5));
	ck_assert_ptr_eq(look(t, "10.9.9.9"), V(1));
	ck_assert_ptr_eq(look(t, "10.1.9.9"), V(2));
	ck_assert_ptr_eq(look(t, "10.1.2.4"), V(3));
	ck_assert_ptr_eq(look(t, "10.1.2.3"), V(4));
	ck_assert_ptr_eq(look(t, "10.1.2.200"), V(5));
	ck_assert_ptr_eq(look(t, "10.1.2.127"), V(3));
	ck_assert_ptr_null(look(t, "11.1.2.3"));
	ck_assert_ptr_null(look(t, "9.255.255.255"));

	/* Removing a middle level falls back to the shorter prefix. */
	p = pfx("10.1.0.0/16");
	ck_assert_int_eq(prefix_remove(t, &p), 0);
	ck_assert_ptr_eq(look(t, "10.1.9.9"), V(1));
	ck_assert_ptr_eq(look(t, "10.1.2.4"), V(3));
	ck_assert_ptr_eq(look(t, "10.1.2.3"), V(4));
	p = pfx("10.1.2.3/32");
	ck_assert_int_eq(prefix_remove(t, &p), 0);
	ck_assert_ptr_eq(look(t, "10.1.2.3"), V(3));
	p = pfx("10.0.0.0/8");
	ck_assert_int_eq(prefix_remove(t, &p), 0);
	ck_assert_ptr_null(look(t, "10.9.9.9"));
	ck_assert_ptr_eq(look(t, "10.1.2.3"), V(3));
	ck_assert_uint_eq(prefix_count(t), 2);

	ins(t, "fd00::/8", V(11));
	ins(t, "fd77::/16", V(12));
	ins(t, "fd77::/64", V(13));
	ins(t, "fd77::8000:0:0:0/65", V(14));
	ck_assert_ptr_eq(look(t, "fd01::1"), V(11));
	ck_assert_ptr_eq(look(t, "fd77:1::1"), V(12));
	ck_assert_ptr_eq(look(t, "fd77::1"), V(13));
	ck_assert_ptr_eq(look(t, "fd77::8000:0:0:1"), V(14));
	ck_assert_ptr_eq(look(t, "fd77::7fff:0:0:1"), V(13));
	ck_assert_ptr_null(look(t, "fe77::1"));
	prefix_table_free(t);
}
END_TEST

START_TEST(test_exists)
{
	struct prefix_table *t = table();
	struct ipprefix p;

	ins(t, "192.168.50.0/24", V(1));
	p = pfx("192.168.50.0/24");
	ck_assert_int_eq(prefix_insert(t, &p, V(2)), -EEXIST);
	/* Same prefix with host bits set. */
	p = pfx("192.168.50.77/24");
	ck_assert_int_eq(prefix_insert(t, &p, V(2)), -EEXIST);
	ck_assert_ptr_eq(prefix_get(t, &p), V(1));
	ck_assert_ptr_eq(look(t, "192.168.50.1"), V(1));
	ck_assert_uint_eq(prefix_count(t), 1);
	/* A different length is a different prefix. */
	p = pfx("192.168.50.0/25");
	ck_assert_int_eq(prefix_insert(t, &p, V(2)), 0);
	ck_assert_uint_eq(prefix_count(t), 2);

	ins(t, "fd77::/64", V(3));
	p = pfx("fd77::1:2:3:4/64");
	ck_assert_int_eq(prefix_insert(t, &p, V(4)), -EEXIST);
	ck_assert_ptr_eq(prefix_get(t, &p), V(3));
	ck_assert_uint_eq(prefix_count(t), 3);

	/* prefix_get is exact, not longest match. */
	p = pfx("192.168.50.0/26");
	ck_assert_ptr_null(prefix_get(t, &p));
	p = pfx("192.168.0.0/16");
	ck_assert_ptr_null(prefix_get(t, &p));
	prefix_table_free(t);
}
END_TEST

START_TEST(test_bad_args)
{
	struct prefix_table *t = table();
	struct ipprefix p;
	uint8_t a[16] = { 0 };

	p = pfx("10.0.0.0/8");
	p.len = 33;
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), -EINVAL);
	ck_assert_ptr_null(prefix_get(t, &p));
	ck_assert_int_eq(prefix_remove(t, &p), -ENOENT);
	p.len = 255;
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), -EINVAL);

	p = pfx("fd00::/8");
	p.len = 129;
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), -EINVAL);
	ck_assert_ptr_null(prefix_get(t, &p));
	p.len = 200;
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), -EINVAL);

	p = pfx("10.0.0.0/8");
	p.addr.family = AF_UNIX;
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), -EINVAL);
	p.addr.family = AF_UNSPEC;
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), -EINVAL);
	p.len = 0;
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), -EINVAL);
	ck_assert_uint_eq(prefix_count(t), 0);

	/* Longest valid lengths are fine. */
	p = pfx("10.0.0.1/32");
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), 0);
	p = pfx("fd00::1/128");
	ck_assert_int_eq(prefix_insert(t, &p, V(1)), 0);

	ck_assert_ptr_null(prefix_lookup(t, AF_UNSPEC, a));
	ck_assert_ptr_null(prefix_lookup(t, AF_UNIX, a));
	ck_assert_uint_eq(prefix_count(t), 2);
	prefix_table_free(t);
}
END_TEST

START_TEST(test_remove)
{
	struct prefix_table *t = table();
	struct ipprefix p;

	ins(t, "10.0.0.0/8", V(1));
	ins(t, "10.0.0.0/9", V(2));
	ins(t, "fd77::/16", V(3));

	p = pfx("10.0.0.0/16");
	ck_assert_int_eq(prefix_remove(t, &p), -ENOENT);    /* on the path */
	p = pfx("11.0.0.0/8");
	ck_assert_int_eq(prefix_remove(t, &p), -ENOENT);    /* off the path */
	p = pfx("10.0.0.0/32");
	ck_assert_int_eq(prefix_remove(t, &p), -ENOENT);    /* below a leaf */
	p = pfx("10.0.0.0/9");
	ck_assert_int_eq(prefix_remove(t, &p), 0);
	ck_assert_int_eq(prefix_remove(t, &p), -ENOENT);
	ck_assert_ptr_null(prefix_get(t, &p));
	ck_assert_ptr_eq(look(t, "10.0.0.1"), V(1));
	ck_assert_uint_eq(prefix_count(t), 2);

	/* Host bits ignored on removal too. */
	p = pfx("10.1.2.3/8");
	ck_assert_int_eq(prefix_remove(t, &p), 0);
	ck_assert_ptr_null(look(t, "10.0.0.1"));
	ck_assert_uint_eq(prefix_count(t), 1);

	/* A removed prefix can come back with another value. */
	ins(t, "10.0.0.0/9", V(4));
	ck_assert_ptr_eq(look(t, "10.0.0.1"), V(4));
	ck_assert_ptr_null(look(t, "10.128.0.1"));

	p = pfx("fd77::/16");
	ck_assert_int_eq(prefix_remove(t, &p), 0);
	ck_assert_ptr_null(look(t, "fd77::1"));
	ck_assert_uint_eq(prefix_count(t), 1);
	prefix_table_free(t);
}
END_TEST

START_TEST(test_remove_value)
{
	struct prefix_table *t = table();
	struct ipprefix p;

	ins(t, "10.77.0.2/32", V(1));
	ins(t, "192.168.50.0/24", V(1));
	ins(t, "192.168.0.0/16", V(2));
	ins(t, "192.168.50.128/25", V(1));
	ins(t, "fd77::2/128", V(1));
	ins(t, "fd77::/64", V(2));
	ins(t, "::/0", V(1));
	ck_assert_uint_eq(prefix_count(t), 7);

	prefix_remove_value(t, V(1));
	ck_assert_uint_eq(prefix_count(t), 2);
	ck_assert_ptr_null(look(t, "10.77.0.2"));
	ck_assert_ptr_eq(look(t, "192.168.50.1"), V(2));
	ck_assert_ptr_eq(look(t, "192.168.50.200"), V(2));
	ck_assert_ptr_eq(look(t, "fd77::2"), V(2));
	ck_assert_ptr_null(look(t, "fd78::2"));
	p = pfx("192.168.50.0/24");
	ck_assert_ptr_null(prefix_get(t, &p));
	ck_assert_int_eq(prefix_remove(t, &p), -ENOENT);

	/* A value nobody holds changes nothing. */
	prefix_remove_value(t, V(9));
	ck_assert_uint_eq(prefix_count(t), 2);

	prefix_remove_value(t, V(2));
	ck_assert_uint_eq(prefix_count(t), 0);
	ck_assert_ptr_null(look(t, "192.168.50.1"));
	ck_assert_ptr_null(look(t, "fd77::2"));

	/* The table is still usable after being emptied. */
	ins(t, "192.168.50.0/24", V(3));
	ck_assert_ptr_eq(look(t, "192.168.50.1"), V(3));
	prefix_table_free(t);
}
END_TEST

/* ---- randomized comparison with a brute-force reference ---- */

#define RAND_PREFIXES 3000
#define RAND_LOOKUPS 20000
#define RAND_VALUES 40
#define RAND_BASES 12
#define RAND_SEED_DEFAULT 0x746f7564u   /* "toud" */

struct rng {
	uint64_t s;
};

/* splitmix64: small, good enough, identical on every platform. */
static uint64_t
rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned int
rng_below(struct rng *r, unsigned int n)
{
	return (unsigned int)(rng_next(r) % n);
}

static uint64_t
rand_seed(void)
{
	const char *s = getenv("TOUD_TEST_SEED");

	if (s != NULL && *s != '\0')
		return strtoull(s, NULL, 0);
	return RAND_SEED_DEFAULT;
}

/* Reference entry: the address as two big-endian 64-bit halves (IPv4 in
 * the top 32 bits of hi), masked, with the mask. */
struct ref {
	struct ipprefix p;
	uint64_t hi, lo, mhi, mlo;
	void *value;
	bool live;
};

static uint64_t
load_be64(const uint8_t *b)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static void
addr_halves(int family, const uint8_t *b, uint64_t *hi, uint64_t *lo)
{
	if (family == AF_INET) {
		*hi = (uint64_t)b[0] << 56 | (uint64_t)b[1] << 48 |
		    (uint64_t)b[2] << 40 | (uint64_t)b[3] << 32;
		*lo = 0;
	} else {
		*hi = load_be64(b);
		*lo = load_be64(b + 8);
	}
}

static void
len_masks(unsigned int len, uint64_t *mhi, uint64_t *mlo)
{
	*mhi = len == 0 ? 0 : len >= 64 ? UINT64_MAX : UINT64_MAX << (64 - len);
	*mlo = len <= 64 ? 0 : len >= 128 ? UINT64_MAX : UINT64_MAX << (128 - len);
}

static void *
ref_lookup(const struct ref *refs, size_t n, int family, const uint8_t *a)
{
	uint64_t hi, lo;
	void *best = NULL;
	int best_len = -1;
	size_t i;

	addr_halves(family, a, &hi, &lo);
	for (i = 0; i < n; i++) {
		if (!refs[i].live || refs[i].p.len <= best_len)
			continue;
		if ((hi & refs[i].mhi) == refs[i].hi &&
		    (lo & refs[i].mlo) == refs[i].lo) {
			best = refs[i].value;
			best_len = refs[i].p.len;
		}
	}
	return best;
}

static bool
ref_same(const struct ref *a, const struct ref *b)
{
	return a->p.len == b->p.len && a->hi == b->hi && a->lo == b->lo;
}

static void
rand_bytes(struct rng *r, uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)rng_next(r);
}

/* Flip a random subset of the bits from position `from` on. */
static void
rand_tail(struct rng *r, uint8_t *b, unsigned int from, unsigned int bits)
{
	unsigned int i;

	for (i = from; i < bits; i++)
		if (rng_next(r) & 1)
			b[i / 8] ^= 1u << (7 - i % 8);
}

/* Lengths cluster on a few common values so prefixes nest and collide.
 * Short ones are rare, or they would cover the whole space and no lookup
 * would ever miss. */
static unsigned int
rand_len(struct rng *r, unsigned int bits)
{
	static const unsigned int common4[] = { 8, 12, 16, 20, 24, 28, 30, 32 };
	static const unsigned int common6[] = {
		16, 32, 48, 56, 60, 64, 96, 112, 120, 127, 128,
	};

	/* No /0 here: it would turn every miss into a hit.  It gets its own
	 * stage in random_family(). */
	if (rng_below(r, 1000) == 0)
		return 1 + rng_below(r, 7);
	if (rng_below(r, 4) == 0)
		return 8 + rng_below(r, bits - 7);
	if (bits == 32)
		return common4[rng_below(r, sizeof(common4) / sizeof(common4[0]))];
	return common6[rng_below(r, sizeof(common6) / sizeof(common6[0]))];
}

/* An address to look up: random, near a base, or inside (or just outside)
 * an inserted prefix. */
static void
rand_lookup_addr(struct rng *r, const struct ref *refs, size_t n,
    uint8_t bases[][16], unsigned int bits, uint8_t *a)
{
	const struct ref *e;
	unsigned int k = rng_below(r, 8);

	if (k == 0) {
		rand_bytes(r, a, bits / 8);
	} else if (k == 1) {
		memcpy(a, bases[rng_below(r, RAND_BASES)], 16);
		rand_tail(r, a, rng_below(r, bits + 1), bits);
	} else {
		e = &refs[rng_below(r, (unsigned int)n)];
		memcpy(a, e->p.addr.b, 16);
		rand_tail(r, a, e->p.len, bits);
		/* Sometimes step out through the last prefix bit. */
		if (k == 7 && e->p.len > 0)
			a[(e->p.len - 1) / 8] ^= 1u << (7 - (e->p.len - 1) % 8);
	}
}

static void
compare_all(const struct prefix_table *t, const struct ref *refs, size_t n,
    uint8_t bases[][16], int family, unsigned int bits, struct rng *r,
    const char *stage, uint64_t seed)
{
	/* The cache lives across stages: the table changes under it. */
	static struct prefix_cache cache;
	static uint8_t last[16];
	uint8_t a[16];
	void *got, *want;
	size_t i;

	if (cache.gen && cache.family == family) {
		got = prefix_lookup_cached(t, &cache, family, last);
		want = ref_lookup(refs, n, family, last);
		ck_assert_msg(got == want, "%s: family %d: a cached lookup from before the change: "
		    "got %p want %p (seed %" PRIu64 ")", stage, family, got, want, seed);
	}
	for (i = 0; i < n; i++) {
		got = prefix_get(t, &refs[i].p);
		want = refs[i].live ? refs[i].value : NULL;
		ck_assert_msg(got == want,
		    "%s: family %d get #%zu: got %p want %p (seed %" PRIu64 ")",
		    stage, family, i, got, want, seed);
	}
	for (i = 0; i < RAND_LOOKUPS; i++) {
		memset(a, 0, sizeof(a));
		rand_lookup_addr(r, refs, n, bases, bits, a);
		got = prefix_lookup(t, family, a);
		want = ref_lookup(refs, n, family, a);
		ck_assert_msg(got == want,
		    "%s: family %d lookup #%zu: got %p want %p (seed %" PRIu64 ")",
		    stage, family, i, got, want, seed);
		/* Filled, then (usually) the same address again. */
		if (rng_below(r, 4) == 0)
			memcpy(last, a, sizeof(last));
		ck_assert_ptr_eq(prefix_lookup_cached(t, &cache, family, last),
		    ref_lookup(refs, n, family, last));
		ck_assert_ptr_eq(prefix_lookup_cached(t, &cache, family, a), want);
		ck_assert_ptr_eq(prefix_lookup_cached(t, &cache, family, a), want);
	}
}

static size_t
count_live(const struct ref *refs, size_t n)
{
	size_t i, live = 0;

	for (i = 0; i < n; i++)
		live += refs[i].live;
	return live;
}

static void
random_family(int family, uint64_t seed)
{
	static struct ref refs[RAND_PREFIXES + 1];
	uint8_t bases[RAND_BASES][16];
	unsigned int bits = family == AF_INET ? 32 : 128;
	struct prefix_table *t = table();
	struct rng r = { seed ^ (uint64_t)family };
	struct ref *e;
	size_t i, j, n = 0, live;
	int rc, want;
	bool dup;

	memset(bases, 0, sizeof(bases));
	for (i = 0; i < RAND_BASES; i++)
		rand_bytes(&r, bases[i], bits / 8);

	for (i = 0; i < RAND_PREFIXES; i++) {
		e = &refs[n];
		memset(e, 0, sizeof(*e));
		e->p.addr.family = family;
		memcpy(e->p.addr.b, bases[rng_below(&r, RAND_BASES)], 16);
		e->p.len = (uint8_t)rand_len(&r, bits);
		/* Host bits are random: the table must ignore them. */
		rand_tail(&r, e->p.addr.b, rng_below(&r, bits + 1), bits);
		if (rng_below(&r, 16) == 0)
			rand_bytes(&r, e->p.addr.b, bits / 8);
		e->value = V(1 + rng_below(&r, RAND_VALUES));
		addr_halves(family, e->p.addr.b, &e->hi, &e->lo);
		len_masks(e->p.len, &e->mhi, &e->mlo);
		e->hi &= e->mhi;
		e->lo &= e->mlo;
		e->live = true;

		dup = false;
		for (j = 0; j < n && !dup; j++)
			dup = ref_same(&refs[j], e);
		want = dup ? -EEXIST : 0;
		rc = prefix_insert(t, &e->p, e->value);
		ck_assert_msg(rc == want,
		    "family %d insert #%zu len %u: rc %d want %d (seed %" PRIu64 ")",
		    family, i, e->p.len, rc, want, seed);
		if (!dup)
			n++;
	}
	ck_assert_uint_eq(prefix_count(t), n);
	/* The length bias must actually produce nesting and duplicates. */
	ck_assert_uint_lt(n, RAND_PREFIXES);
	ck_assert_uint_gt(n, RAND_PREFIXES / 2);
	compare_all(t, refs, n, bases, family, bits, &r, "full", seed);

	/* Remove about half, with host bits scrambled again. */
	for (i = 0; i < n; i++) {
		struct ipprefix p;

		if (rng_below(&r, 2) == 0)
			continue;
		p = refs[i].p;
		rand_tail(&r, p.addr.b, p.len, bits);
		ck_assert_int_eq(prefix_remove(t, &p), 0);
		ck_assert_int_eq(prefix_remove(t, &p), -ENOENT);
		refs[i].live = false;
	}
	live = count_live(refs, n);
	ck_assert_uint_eq(prefix_count(t), live);
	compare_all(t, refs, n, bases, family, bits, &r, "half", seed);

	/* Drop a few values wholesale, as when peers go away. */
	for (i = 1; i <= RAND_VALUES; i += 3) {
		prefix_remove_value(t, V(i));
		for (j = 0; j < n; j++)
			if (refs[j].value == V(i))
				refs[j].live = false;
	}
	live = count_live(refs, n);
	ck_assert_uint_eq(prefix_count(t), live);
	compare_all(t, refs, n, bases, family, bits, &r, "values", seed);

	/* Put the removed ones back: the pruned trie must grow again. */
	for (i = 0; i < n; i++) {
		if (refs[i].live)
			continue;
		ck_assert_int_eq(prefix_insert(t, &refs[i].p, refs[i].value), 0);
		refs[i].live = true;
	}
	ck_assert_uint_eq(prefix_count(t), n);
	compare_all(t, refs, n, bases, family, bits, &r, "refill", seed);

	/* A default route under all of it. */
	e = &refs[n];
	memset(e, 0, sizeof(*e));
	e->p.addr.family = family;
	rand_bytes(&r, e->p.addr.b, bits / 8);
	e->value = V(RAND_VALUES + 1);
	e->live = true;
	ck_assert_int_eq(prefix_insert(t, &e->p, e->value), 0);
	n++;
	compare_all(t, refs, n, bases, family, bits, &r, "default", seed);
	n--;
	ck_assert_int_eq(prefix_remove(t, &e->p), 0);
	compare_all(t, refs, n, bases, family, bits, &r, "nodefault", seed);

	/* Empty it completely. */
	for (i = 0; i < n; i++)
		ck_assert_int_eq(prefix_remove(t, &refs[i].p), 0);
	ck_assert_uint_eq(prefix_count(t), 0);
	memset(bases[0], 0, sizeof(bases[0]));
	ck_assert_ptr_null(prefix_lookup(t, family, bases[0]));
	prefix_table_free(t);
}

START_TEST(test_random_v4)
{
	uint64_t seed = rand_seed();

	printf("check_prefix: random v4, seed %" PRIu64
	    " (set TOUD_TEST_SEED to change)\n", seed);
	random_family(AF_INET, seed);
}
END_TEST

START_TEST(test_random_v6)
{
	uint64_t seed = rand_seed();

	printf("check_prefix: random v6, seed %" PRIu64
	    " (set TOUD_TEST_SEED to change)\n", seed);
	random_family(AF_INET6, seed);
}
END_TEST

static Suite *
prefix_suite(void)
{
	Suite *s;
	TCase *tc;

	s = suite_create("prefix");

	tc = tcase_create("basic");
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_default_route);
	tcase_add_test(tc, test_host_routes);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_exists);
	tcase_add_test(tc, test_bad_args);
	tcase_add_test(tc, test_remove);
	tcase_add_test(tc, test_remove_value);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	/* Brute force is quadratic; leave room for sanitizers and valgrind. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_random_v4);
	tcase_add_test(tc, test_random_v6);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	return check_run(prefix_suite());
}
