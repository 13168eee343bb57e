/* check_worker.c - the output thread and its ring: batches are worked and
 * handed back in the order submitted, each exactly once; a slot handed to
 * the main loop is never one the thread still has; a full ring waits for
 * the thread; the main loop learns of finished batches from its event
 * loop; ending the worker finishes everything submitted first; the
 * hand-off rule: a batch is worked at once on the main loop without a
 * thread, or while the thread is idle and the batch not bulk, and goes to
 * the thread otherwise. */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "worker.h"

#include "testutil.h"

#define SLOTS_MAX 8
#define LOG_MAX 4096

enum slot_state { SLOT_FREE, SLOT_FILLED, SLOT_WORKED };

struct slot {
	enum slot_state state;
	unsigned seq;
};

struct fixture {
	struct slot slots[SLOTS_MAX];
	void *ptrs[SLOTS_MAX];
	/* Written by the thread only, read by the test once it has taken
	 * the batch back. */
	unsigned worked[LOG_MAX];
	unsigned n_worked;
	unsigned bad_work;              /* work() saw a slot not filled */
	unsigned slow_us;               /* work() takes this long */
	atomic_bool hold;               /* work() waits while set */
	/* The main loop's */
	unsigned done[LOG_MAX];
	unsigned n_done;
	unsigned bad_done;              /* done() saw a slot not worked */
};

static void
work(void *slot, void *arg)
{
	struct fixture *f = arg;
	struct slot *s = slot;

	if (s->state != SLOT_FILLED)
		f->bad_work++;
	if (f->n_worked < LOG_MAX)
		f->worked[f->n_worked++] = s->seq;
	if (f->slow_us) {
		struct timespec ts = { 0, (long)f->slow_us * 1000 };

		nanosleep(&ts, NULL);
	}
	while (atomic_load(&f->hold)) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
	s->state = SLOT_WORKED;
}

static void
done(void *slot, void *arg)
{
	struct fixture *f = arg;
	struct slot *s = slot;

	if (s->state != SLOT_WORKED)
		f->bad_done++;
	if (f->n_done < LOG_MAX)
		f->done[f->n_done++] = s->seq;
	s->state = SLOT_FREE;
}

static struct worker *
start(struct fixture *f, struct event_base *base, unsigned n)
{
	struct worker *w;
	unsigned i;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < n; i++)
		f->ptrs[i] = &f->slots[i];
	w = worker_new(base, "check-worker", f->ptrs, n, work, done, f);
	ck_assert_ptr_nonnull(w);
	return w;
}

/* Submit count batches numbered from first; every slot handed back for
 * filling must be free. */
static void
submit(struct fixture *f, struct worker *w, unsigned first, unsigned count)
{
	struct slot *s = worker_slot(w);
	unsigned i;

	for (i = 0; i < count; i++) {
		ck_assert_int_eq(s->state, SLOT_FREE);
		s->state = SLOT_FILLED;
		s->seq = first + i;
		s = worker_submit(w);
	}
	ck_assert_int_eq(s->state, SLOT_FREE);
	(void)f;
}

static void
assert_in_order(const unsigned *log, unsigned n, unsigned count)
{
	unsigned i;

	ck_assert_uint_eq(n, count);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(log[i], i);
}

START_TEST(in_order_exactly_once)
{
	struct event_base *base = event_base_new();
	struct fixture f;
	struct worker *w = start(&f, base, 4);

	submit(&f, w, 0, 3000);
	worker_free(w);
	ck_assert_uint_eq(f.bad_work, 0);
	ck_assert_uint_eq(f.bad_done, 0);
	assert_in_order(f.worked, f.n_worked, 3000);
	assert_in_order(f.done, f.n_done, 3000);
	event_base_free(base);
}
END_TEST

/* A slow thread and two slots: every submit after the first waits for
 * the thread, and takes its batch back itself. */
START_TEST(full_ring_waits)
{
	struct event_base *base = event_base_new();
	struct fixture f;
	struct worker *w = start(&f, base, 2);

	f.slow_us = 2000;
	submit(&f, w, 0, 20);
	/* Twenty submits through two slots: at least 19 were taken back
	 * before the last submit returned. */
	ck_assert_uint_ge(f.n_done, 19);
	worker_free(w);
	ck_assert_uint_eq(f.bad_work, 0);
	ck_assert_uint_eq(f.bad_done, 0);
	assert_in_order(f.done, f.n_done, 20);
	event_base_free(base);
}
END_TEST

/* The main loop hears of a finished batch through its event base; until
 * done() has run, worker_reap() says something is in flight. */
START_TEST(done_through_the_loop)
{
	struct event_base *base = event_base_new();
	struct fixture f;
	struct worker *w = start(&f, base, 4);
	struct timeval tick = { 0, 10000 };
	unsigned rounds;

	ck_assert(worker_reap(w));
	atomic_store(&f.hold, true);
	submit(&f, w, 0, 1);
	ck_assert(!worker_reap(w));         /* the thread is held in it */
	ck_assert_uint_eq(f.n_done, 0);
	atomic_store(&f.hold, false);
	for (rounds = 0; f.n_done == 0 && rounds < 500; rounds++) {
		event_base_loopexit(base, &tick);
		event_base_dispatch(base);
	}
	ck_assert_uint_eq(f.n_done, 1);
	ck_assert(worker_reap(w));
	worker_free(w);
	ck_assert_uint_eq(f.n_done, 1);
	ck_assert_uint_eq(f.bad_done, 0);
	event_base_free(base);
}
END_TEST

/* Ending the worker right after a burst: nothing submitted is lost. */
START_TEST(free_finishes_everything)
{
	unsigned round;

	for (round = 0; round < 200; round++) {
		struct event_base *base = event_base_new();
		struct fixture f;
		struct worker *w = start(&f, base, 3);

		submit(&f, w, 0, round % 7 + 1);
		worker_free(w);
		assert_in_order(f.worked, f.n_worked, round % 7 + 1);
		assert_in_order(f.done, f.n_done, round % 7 + 1);
		event_base_free(base);
	}
}
END_TEST

/* Fill the current slot as batch seq and let it go by the rule; true
 * when it went to the thread. */
static bool
flush(struct fixture *f, struct worker *w, unsigned seq, bool bulk)
{
	struct slot *s = worker_slot(w);

	(void)f;
	ck_assert_int_eq(s->state, SLOT_FREE);
	s->state = SLOT_FILLED;
	s->seq = seq;
	return worker_flush(w, bulk);
}

START_TEST(flush_rule)
{
	struct event_base *base = event_base_new();
	struct fixture f;
	struct worker *w;
	unsigned i;

	memset(&f, 0, sizeof(f));
	for (i = 0; i < 4; i++)
		f.ptrs[i] = &f.slots[i];
	/* No thread: every batch, bulk or not, is worked here, at once, in
	 * the same slot. */
	ck_assert_ptr_nonnull(w = worker_ring(f.ptrs, 4, work, done, &f));
	ck_assert(!worker_threaded(w));
	ck_assert(!flush(&f, w, 0, false));
	ck_assert(!flush(&f, w, 1, true));
	ck_assert_ptr_eq(worker_slot(w), f.ptrs[0]);
	ck_assert_uint_eq(f.n_done, 2);
	/* With the thread: a batch that is not bulk finds it idle and is
	 * worked here; a bulk one goes to it. */
	ck_assert_int_eq(worker_start(w, base, "check-worker"), 0);
	ck_assert(worker_threaded(w));
	ck_assert(!flush(&f, w, 2, false));
	ck_assert_uint_eq(f.n_done, 3);
	atomic_store(&f.hold, true);
	ck_assert(flush(&f, w, 3, true));
	ck_assert_ptr_eq(worker_slot(w), f.ptrs[1]);
	/* While it has one, any batch goes to it: nothing overtakes. */
	ck_assert(flush(&f, w, 4, false));
	ck_assert_uint_eq(f.n_done, 3);
	atomic_store(&f.hold, false);
	/* Stopped, the ring works every batch here again, from where the
	 * thread left it. */
	worker_stop(w);
	ck_assert(!worker_threaded(w));
	ck_assert_uint_eq(f.n_done, 5);
	ck_assert(!flush(&f, w, 5, true));
	ck_assert_ptr_eq(worker_slot(w), f.ptrs[2]);
	worker_free(w);
	ck_assert_uint_eq(f.bad_work, 0);
	ck_assert_uint_eq(f.bad_done, 0);
	assert_in_order(f.worked, f.n_worked, 6);
	assert_in_order(f.done, f.n_done, 6);
	event_base_free(base);
}
END_TEST

START_TEST(too_few_slots)
{
	struct event_base *base = event_base_new();
	struct fixture f;

	memset(&f, 0, sizeof(f));
	f.ptrs[0] = &f.slots[0];
	ck_assert_ptr_null(worker_new(base, "check-worker", f.ptrs, 1, work, done, &f));
	event_base_free(base);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("worker");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, in_order_exactly_once);
	tcase_add_test(tc, full_ring_waits);
	tcase_add_test(tc, done_through_the_loop);
	tcase_add_test(tc, free_finishes_everything);
	tcase_add_test(tc, too_few_slots);
	tcase_add_test(tc, flush_rule);
	suite_add_tcase(s, tc);
	return check_run(s);
}
