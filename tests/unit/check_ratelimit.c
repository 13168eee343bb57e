/* check_ratelimit.c - the per-source token buckets on a fake clock: burst,
 * refill, refunds, eviction by age, the global cap, sources that share a hash chain,
 * IPv6 keyed by /64 and IPv4-mapped IPv6 by its IPv4 address, and SipHash-2-4 against the reference vector. */
#include <arpa/inet.h>
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "ratelimit.h"

#include "testutil.h"

static const uint8_t secret[RATELIMIT_SECRET_LEN] = "0123456789abcdef";

static struct ipaddr
A(const char *s)
{
	struct ipaddr a;

	memset(&a, 0, sizeof(a));
	if (strchr(s, ':')) {
		a.family = AF_INET6;
		ck_assert_int_eq(inet_pton(AF_INET6, s, a.b), 1);
	} else {
		a.family = AF_INET;
		ck_assert_int_eq(inet_pton(AF_INET, s, a.b), 1);
	}
	return a;
}

/* How many of n attempts at time now pass. */
static unsigned
take(struct ratelimit *rl, const struct ipaddr *a, unsigned n, uint64_t now)
{
	unsigned ok = 0;

	while (n--)
		ok += ratelimit_allow(rl, a, now);
	return ok;
}

START_TEST(siphash_vector)
{
	/* The SipHash paper, appendix A: key 00..0f, message 00..0e. */
	uint8_t key[16], msg[15];
	unsigned i;

	for (i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	ck_assert_uint_eq(ratelimit_siphash(key, msg, 15), 0xa129ca6149be45e5ull);
}
END_TEST

START_TEST(burst_then_refill)
{
	struct ratelimit *rl = ratelimit_new(16, 10, 20, secret);
	struct ipaddr a = A("192.0.2.1");
	uint64_t now = 1000000;

	ck_assert_ptr_nonnull(rl);
	ck_assert_uint_eq(take(rl, &a, 25, now), 20);
	/* 10 per second: one token per 100 ms, none before. */
	ck_assert_uint_eq(take(rl, &a, 1, now + 99), 0);
	ck_assert_uint_eq(take(rl, &a, 2, now + 100), 1);
	ck_assert_uint_eq(take(rl, &a, 10, now + 600), 5);
	/* Refill never exceeds the burst. */
	ck_assert_uint_eq(take(rl, &a, 30, now + 600 + 500000), 20);
	ratelimit_free(rl);
}
END_TEST

/* A refunded token can be taken again at once; refunds stay within the
 * burst, and a source without an entry gets nothing. */
START_TEST(refund)
{
	struct ratelimit *rl = ratelimit_new(16, 10, 5, secret);
	struct ipaddr a = A("192.0.2.1"), b = A("192.0.2.2");
	uint64_t now = 1000000;
	int i;

	ck_assert_uint_eq(take(rl, &a, 5, now), 5);
	ck_assert_uint_eq(take(rl, &a, 1, now), 0);
	ratelimit_refund(rl, &a);
	ratelimit_refund(rl, &a);
	ck_assert_uint_eq(take(rl, &a, 5, now), 2);
	for (i = 0; i < 50; i++)
		ratelimit_refund(rl, &a);
	ck_assert_uint_eq(take(rl, &a, 50, now), 5);
	ratelimit_refund(rl, &b);
	ck_assert_uint_eq(ratelimit_entries(rl), 1);
	ratelimit_free(rl);
}
END_TEST

START_TEST(sources_are_independent)
{
	struct ratelimit *rl = ratelimit_new(16, 10, 5, secret);
	struct ipaddr a = A("192.0.2.1"), b = A("192.0.2.2");

	ck_assert_uint_eq(take(rl, &a, 10, 5000), 5);
	ck_assert_uint_eq(take(rl, &b, 10, 5000), 5);
	ck_assert_uint_eq(ratelimit_entries(rl), 2);
	ratelimit_free(rl);
}
END_TEST

START_TEST(collision_does_not_reset)
{
	/* Four entries make one hash chain: every source collides.  The old
	 * limiter keyed a slot by a 32-bit hash and reset it for any other
	 * key, so a colliding source refilled (or emptied) a victim's bucket;
	 * here entries are told apart by the whole address. */
	struct ratelimit *rl = ratelimit_new(4, 1, 3, secret);
	struct ipaddr a = A("198.51.100.7"), b = A("203.0.113.9"), c = A("2001:db8::1");
	uint64_t now = 10000;

	ck_assert_uint_eq(take(rl, &a, 3, now), 3);
	ck_assert_uint_eq(take(rl, &a, 1, now), 0);
	ck_assert_uint_eq(take(rl, &b, 1, now + 1), 1);
	ck_assert_uint_eq(take(rl, &c, 1, now + 2), 1);
	/* a is still empty: the others did not reset it. */
	ck_assert_uint_eq(take(rl, &a, 1, now + 3), 0);
	/* and emptying a left b's bucket alone. */
	ck_assert_uint_eq(take(rl, &b, 5, now + 4), 2);
	ratelimit_free(rl);
}
END_TEST

START_TEST(ipv6_by_prefix)
{
	/* One host owns its /64: all of it shares one bucket; the next /64
	 * does not. */
	struct ratelimit *rl = ratelimit_new(16, 1, 2, secret);
	struct ipaddr a = A("2001:db8:1:2::1"), b = A("2001:db8:1:2:ffff::9"),
	    c = A("2001:db8:1:3::1");

	ck_assert_uint_eq(take(rl, &a, 2, 0), 2);
	ck_assert_uint_eq(take(rl, &b, 1, 0), 0);
	ck_assert_uint_eq(take(rl, &c, 1, 0), 1);
	ratelimit_free(rl);
}
END_TEST

START_TEST(v4_mapped_by_address)
{
	/* A dual-stack listener sees IPv4 hosts as ::ffff:a.b.c.d, whose
	 * /64 is all zero: each is still its own source, and the same as
	 * when it comes in over IPv4. */
	struct ratelimit *rl = ratelimit_new(16, 1, 2, secret);
	struct ipaddr a = A("::ffff:192.0.2.1"), b = A("::ffff:192.0.2.2"),
	    a4 = A("192.0.2.1");

	ck_assert_uint_eq(take(rl, &a, 3, 0), 2);
	ck_assert_uint_eq(take(rl, &b, 1, 0), 1);
	ck_assert_uint_eq(take(rl, &a4, 1, 0), 0);
	ratelimit_refund(rl, &a4);
	ck_assert_uint_eq(take(rl, &a, 1, 0), 1);
	ratelimit_free(rl);
}
END_TEST

START_TEST(global_cap)
{
	struct ratelimit *rl = ratelimit_new(8, 10, 2, secret);
	struct ipaddr a;
	char buf[32];
	unsigned i, ok = 0;

	for (i = 0; i < 20; i++) {
		snprintf(buf, sizeof(buf), "10.0.0.%u", i + 1);
		a = A(buf);
		ok += take(rl, &a, 1, 100);
	}
	/* Eight sources got an entry, the other twelve were refused. */
	ck_assert_uint_eq(ok, 8);
	ck_assert_uint_eq(ratelimit_entries(rl), 8);
	/* A known source still uses its own entry while the table is full. */
	a = A("10.0.0.1");
	ck_assert_uint_eq(take(rl, &a, 1, 100), 1);
	ratelimit_free(rl);
}
END_TEST

START_TEST(eviction_by_age)
{
	/* burst 2 at 10/s: an idle entry is full again after 200 ms. */
	struct ratelimit *rl = ratelimit_new(8, 10, 2, secret);
	struct ipaddr a, busy = A("10.9.9.9");
	char buf[32];
	unsigned i;
	uint64_t now = 50000;

	for (i = 0; i < 7; i++) {
		snprintf(buf, sizeof(buf), "10.0.0.%u", i + 1);
		a = A(buf);
		ck_assert(ratelimit_allow(rl, &a, now));
	}
	ck_assert(ratelimit_allow(rl, &busy, now));
	ck_assert_uint_eq(ratelimit_entries(rl), 8);
	/* Before they are full again nothing is evicted. */
	ratelimit_gc(rl, now + 100);
	ck_assert_uint_eq(ratelimit_entries(rl), 8);
	/* busy keeps draining its bucket, so it stays; the idle ones go. */
	ck_assert_uint_eq(take(rl, &busy, 3, now + 150), 2);
	ratelimit_gc(rl, now + 250);
	ck_assert_uint_eq(ratelimit_entries(rl), 1);
	/* busy was not reset by the sweep: at +250 it has one token back. */
	ck_assert_uint_eq(take(rl, &busy, 3, now + 250), 1);
	/* The freed entries serve new sources; the sweep also runs by itself
	 * from ratelimit_allow once a second. */
	a = A("10.1.1.1");
	ck_assert(ratelimit_allow(rl, &a, now + 260));
	ck_assert_uint_eq(ratelimit_entries(rl), 2);
	ck_assert(ratelimit_allow(rl, &busy, now + 5000));
	ck_assert_uint_eq(ratelimit_entries(rl), 1);
	ratelimit_free(rl);
}
END_TEST

START_TEST(clock_backwards)
{
	struct ratelimit *rl = ratelimit_new(8, 1, 1, secret);
	struct ipaddr a = A("192.0.2.1");

	ck_assert(ratelimit_allow(rl, &a, 100000));
	ck_assert(!ratelimit_allow(rl, &a, 100000));
	/* A clock that steps back must not wedge the entry for ever. */
	ck_assert(ratelimit_allow(rl, &a, 5));
	ratelimit_free(rl);
}
END_TEST

START_TEST(bad_arguments)
{
	ck_assert_ptr_null(ratelimit_new(0, 1, 1, secret));
	ck_assert_ptr_null(ratelimit_new(1, 0, 1, secret));
	ck_assert_ptr_null(ratelimit_new(1, 1, 0, secret));
	ratelimit_free(NULL);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("ratelimit");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, siphash_vector);
	tcase_add_test(tc, burst_then_refill);
	tcase_add_test(tc, refund);
	tcase_add_test(tc, sources_are_independent);
	tcase_add_test(tc, collision_does_not_reset);
	tcase_add_test(tc, ipv6_by_prefix);
	tcase_add_test(tc, v4_mapped_by_address);
	tcase_add_test(tc, global_cap);
	tcase_add_test(tc, eviction_by_age);
	tcase_add_test(tc, clock_backwards);
	tcase_add_test(tc, bad_arguments);
	suite_add_tcase(s, tc);
	return check_run(s);
}
