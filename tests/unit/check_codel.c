/* check_codel.c - the send queue's drop decision on a fake clock: short
 * waits and small queues never drop; a standing queue above the target
 * drops after an interval, then at interval/sqrt(n), counted from when
 * each drop was due; a queue that drains stops dropping; one that builds
 * again soon resumes near its pace, as RFC 8289 counts it; a
 * stuck queue goes on dropping; the fifo of arrival times (which byte
 * came when, more arrivals than marks, a time passed on from one fifo to
 * the next). */
#include <check.h>
#include <stdint.h>

#include "codel.h"

#include "testutil.h"

#define MS 1000ull
#define T0 (1000 * 1000 * MS)

static struct codel_fifo F;

/* A queue fed `in` bytes and drained `out` bytes each millisecond, from
 * *t for ms milliseconds, its waits noted as tcp.c notes them; the times
 * codel_drop() said yes go to drops[] (at most max), their number is
 * returned. */
static unsigned
run(struct codel *q, uint64_t *t, unsigned ms, size_t in, size_t out, uint64_t *drops,
    unsigned max)
{
	unsigned n = 0;
	uint64_t at;

	for (unsigned i = 0; i < ms; i++, *t += MS) {
		if (codel_drop(q, *t) && n < max)
			drops[n++] = *t;
		codel_fifo_add(&F, in, *t);
		if ((at = codel_fifo_take(&F, out)))
			codel_note(q, *t - at, codel_fifo_len(&F), *t);
	}
	return n;
}

/* Bytes already waiting at t. */
static void
prefill(struct codel *q, size_t bytes, uint64_t t)
{
	codel_init(q);
	codel_fifo_init(&F);
	codel_fifo_add(&F, bytes, t);
}

START_TEST(short_waits_never_drop)
{
	struct codel q;
	uint64_t t = T0, d[4];

	/* 1 ms of standing queue, well under the 5 ms target, for 10 s. */
	prefill(&q, 32768, t);
	ck_assert_uint_eq(run(&q, &t, 10000, 32768, 32768, d, 4), 0);
	ck_assert(!q.dropping);
}
END_TEST

START_TEST(small_backlog_never_drops)
{
	struct codel q;
	uint64_t t = T0, d[4];

	/* One packet's worth waiting, however long each byte waits. */
	prefill(&q, 1000, t);
	t += 50 * MS;
	ck_assert_uint_eq(run(&q, &t, 5000, 100, 100, d, 4), 0);
	ck_assert(!q.dropping);
}
END_TEST

START_TEST(standing_queue_drops_at_the_control_law)
{
	struct codel q;
	uint64_t t = T0, start, d[8];
	/* interval / sqrt(n) for n = 1..4: 100, 70.7, 57.7, 50 ms. */
	static const uint64_t gap_ms[] = { 100, 70, 57, 50 };
	unsigned n;

	/* 160 KiB standing at 16 KiB a millisecond: each byte waits 10 ms. */
	prefill(&q, 10 * 16384, t);
	start = t;
	n = run(&q, &t, 105, 16384, 16384, d, 8);
	ck_assert_uint_eq(n, 0);                /* above target, not yet an interval */
	ck_assert(!q.dropping);
	n = run(&q, &t, 400, 16384, 16384, d, 8);
	ck_assert_uint_ge(n, 5);
	/* The prefill's bytes have waited 5 ms by the sixth millisecond; an
	 * interval later the next arrival is dropped. */
	ck_assert_uint_ge(d[0], start + 105 * MS);
	ck_assert_uint_le(d[0], start + 107 * MS);
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_uint_ge(d[i + 1] - d[i], gap_ms[i] * MS);
		ck_assert_uint_le(d[i + 1] - d[i], (gap_ms[i] + 1) * MS);
	}
	ck_assert(q.dropping);
}
END_TEST

START_TEST(draining_stops_dropping)
{
	struct codel q;
	uint64_t t = T0, d[64];

	prefill(&q, 10 * 16384, t);
	ck_assert_uint_gt(run(&q, &t, 300, 16384, 16384, d, 64), 0);
	ck_assert(q.dropping);
	/* Drain faster than it fills: the wait falls below the target. */
	run(&q, &t, 20, 16384, 32768, d, 64);
	ck_assert(!q.dropping);
	ck_assert_uint_eq(run(&q, &t, 1000, 16384, 16384, d, 64), 0);
}
END_TEST

START_TEST(soon_again_resumes_its_pace)
{
	struct codel q;
	uint64_t t = T0, d[64];
	uint32_t reached;

	prefill(&q, 10 * 16384, t);
	run(&q, &t, 1000, 16384, 16384, d, 64);
	reached = q.count;
	ck_assert_uint_gt(reached, 5);
	run(&q, &t, 20, 16384, 32768, d, 64);
	ck_assert(!q.dropping);
	/* Builds again within 16 intervals: the count starts from the drops
	 * of the last state, not from 1. */
	codel_fifo_add(&F, 10 * 16384, t);
	run(&q, &t, 300, 16384, 16384, d, 64);
	ck_assert(q.dropping);
	ck_assert_uint_gt(q.lastcount, 1);
	ck_assert_uint_le(q.lastcount, reached);
}
END_TEST

/* Into the dropping state by hand: a 10 ms wait at t, and again an
 * interval later. */
static void
enter(struct codel *q, uint64_t t)
{
	codel_note(q, 10 * MS, 100000, t);
	ck_assert(!q->dropping);
	codel_note(q, 10 * MS, 100000, t + 100 * MS);
	ck_assert(q->dropping);
}

/* A fresh queue, in its dropping state from the time it returns. */
static uint64_t
fresh_dropping(struct codel *q)
{
	codel_init(q);
	enter(q, T0);
	return T0 + 100 * MS;
}

START_TEST(resumes_as_the_rfc_counts)
{
	struct codel q;
	uint64_t t = fresh_dropping(&q);

	/* Three drops: at once, then 100 and 70.7 ms on. */
	ck_assert(codel_drop(&q, t));
	ck_assert(!codel_drop(&q, t + 99 * MS));
	ck_assert(codel_drop(&q, t + 100 * MS));
	ck_assert(!codel_drop(&q, t + 170 * MS));
	ck_assert(codel_drop(&q, t + 171 * MS));
	ck_assert_uint_eq(q.count, 3);
	/* Out, and in again within 16 intervals: RFC 8289 resumes at
	 * count - lastcount = 2, so the second drop comes 70.7 ms after the
	 * first, not 100. */
	codel_note(&q, 1 * MS, 100000, t + 200 * MS);
	ck_assert(!q.dropping);
	t += 300 * MS;
	enter(&q, t);
	t += 100 * MS;
	ck_assert_uint_eq(q.lastcount, 2);
	ck_assert(codel_drop(&q, t));
	ck_assert(!codel_drop(&q, t + 70 * MS));
	ck_assert(codel_drop(&q, t + 71 * MS));
	/* After only two drops (delta 1), it starts over from 1. */
	codel_note(&q, 1 * MS, 100000, t + 100 * MS);
	t += 200 * MS;
	enter(&q, t);
	ck_assert_uint_eq(q.lastcount, 1);
}
END_TEST

START_TEST(law_counts_from_when_the_drop_was_due)
{
	struct codel q;
	uint64_t t = fresh_dropping(&q);

	ck_assert(codel_drop(&q, t));                   /* the next due at t + 100 */
	/* No packet until t + 130: that one is dropped, and the one after
	 * is due 70.7 ms after t + 100, not after t + 130. */
	ck_assert(codel_drop(&q, t + 130 * MS));
	ck_assert(codel_drop(&q, t + 171 * MS));
	/* A pause of more than an interval: the law starts from the arrival,
	 * so the drops that fell due in the pause do not come in a row. */
	ck_assert(codel_drop(&q, t + 400 * MS));
	ck_assert(!codel_drop(&q, t + 401 * MS));
}
END_TEST

START_TEST(fifo_says_when_the_last_byte_came)
{
	struct codel_fifo f;

	codel_fifo_init(&f);
	ck_assert_uint_eq(codel_fifo_take(&f, 100), 0);         /* nothing queued */
	codel_fifo_add(&f, 100, 10);
	codel_fifo_add(&f, 100, 20);
	codel_fifo_add(&f, 100, 30);
	ck_assert_uint_eq(codel_fifo_len(&f), 300);
	ck_assert_uint_eq(codel_fifo_take(&f, 0), 0);
	ck_assert_uint_eq(codel_fifo_take(&f, 50), 10);         /* within the first */
	ck_assert_uint_eq(codel_fifo_take(&f, 50), 10);         /* its last byte */
	ck_assert_uint_eq(codel_fifo_take(&f, 1), 20);
	ck_assert_uint_eq(codel_fifo_take(&f, 199), 30);        /* across two */
	ck_assert_uint_eq(codel_fifo_len(&f), 0);
	ck_assert_uint_eq(codel_fifo_take(&f, 1), 0);
	/* More taken than queued empties it. */
	codel_fifo_add(&f, 10, 40);
	ck_assert_uint_eq(codel_fifo_take(&f, 1000), 40);
	ck_assert_uint_eq(codel_fifo_len(&f), 0);
	/* Cleared, it forgets. */
	codel_fifo_add(&f, 10, 50);
	codel_fifo_clear(&f);
	ck_assert_uint_eq(codel_fifo_len(&f), 0);
	ck_assert_uint_eq(codel_fifo_take(&f, 10), 0);
}
END_TEST

START_TEST(fifo_more_arrivals_than_marks)
{
	struct codel_fifo f;
	uint64_t t = T0;

	codel_fifo_init(&f);
	for (unsigned i = 0; i < 3 * CODEL_MARKS; i++, t += MS)
		codel_fifo_add(&f, 1000, t);
	ck_assert_uint_eq(f.n, CODEL_MARKS);
	ck_assert_uint_eq(codel_fifo_len(&f), 3 * CODEL_MARKS * 1000);
	/* The arrivals beyond the marks joined the last: they count from
	 * its time, the longer wait. */
	ck_assert_uint_eq(codel_fifo_take(&f, 3 * CODEL_MARKS * 1000),
	    T0 + (CODEL_MARKS - 1) * MS);
	ck_assert_uint_eq(f.n, 0);
	/* Arrivals of one moment share a mark. */
	codel_fifo_add(&f, 10, t);
	codel_fifo_add(&f, 10, t);
	ck_assert_uint_eq(f.n, 1);
	codel_fifo_add(&f, 0, t + MS);
	ck_assert_uint_eq(f.n, 1);
}
END_TEST

START_TEST(fifo_passes_the_time_on)
{
	struct codel_fifo plain, sealed;

	/* Plaintext that came at 1 and 2 ms is sealed at 5 ms into records
	 * a little longer: the records carry the plaintext's time. */
	codel_fifo_init(&plain);
	codel_fifo_init(&sealed);
	codel_fifo_add(&plain, 1000, 1 * MS);
	codel_fifo_add(&plain, 1000, 2 * MS);
	codel_fifo_add(&sealed, 1022, codel_fifo_take(&plain, 1000));
	codel_fifo_add(&sealed, 1022, codel_fifo_take(&plain, 1000));
	ck_assert_uint_eq(codel_fifo_take(&sealed, 1022), 1 * MS);
	ck_assert_uint_eq(codel_fifo_take(&sealed, 1022), 2 * MS);
}
END_TEST

START_TEST(a_stuck_queue_goes_on_dropping)
{
	struct codel q;
	uint64_t t = T0, d[64];
	unsigned n = 0;

	prefill(&q, 10 * 16384, t);
	run(&q, &t, 200, 16384, 16384, d, 64);
	ck_assert(q.dropping);
	/* Nothing leaves (the socket is full): nothing is measured, and
	 * arrivals go on being dropped at the law's pace. */
	for (unsigned i = 0; i < 1000; i++, t += MS)
		n += codel_drop(&q, t);
	ck_assert_uint_ge(n, 10);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("codel");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, short_waits_never_drop);
	tcase_add_test(tc, small_backlog_never_drops);
	tcase_add_test(tc, standing_queue_drops_at_the_control_law);
	tcase_add_test(tc, draining_stops_dropping);
	tcase_add_test(tc, soon_again_resumes_its_pace);
	tcase_add_test(tc, resumes_as_the_rfc_counts);
	tcase_add_test(tc, law_counts_from_when_the_drop_was_due);
	tcase_add_test(tc, fifo_says_when_the_last_byte_came);
	tcase_add_test(tc, fifo_more_arrivals_than_marks);
	tcase_add_test(tc, fifo_passes_the_time_on);
	tcase_add_test(tc, a_stuck_queue_goes_on_dropping);
	suite_add_tcase(s, tc);
	return check_run(s);
}
