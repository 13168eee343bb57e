/* check_tunout.c - the TUN's writer with and without its thread, through
 * the TUN sink: packets reach the TUN whole and in order; a lone packet
 * is written on the main loop at once, bulk goes to the thread; what a
 * write did (a failure, a refused merged packet) is accounted on the main
 * loop to the right peer, or to nobody once the peer is gone; a refused
 * merged packet stops the coalescer's merging. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "ctx.h"
#include "offload.h"
#include "peer.h"
#include "tun.h"
#include "tunout.h"

#include "testutil.h"

#define WRITES_MAX 4096

/* What the sink saw, in order.  Written by whichever thread writes. */
static struct {
	uint32_t seq;                   /* the packet's first four bytes */
	size_t len;
	bool intact;                    /* every byte after them as sent */
	bool on_main;
} writes[WRITES_MAX];
static _Atomic unsigned n_writes;
static pthread_t main_thread;
static atomic_bool hold;                /* the sink waits while set */
static unsigned fail_every;             /* fail packets whose seq % this == 0 */

static struct toud T;
static struct tun TUN;
static struct peer P;
static struct peer_slot slot_p;         /* P's in T's table of live peers */
static struct event_base *base;

static uint8_t
fill_byte(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 7 + i);
}

static int
sink(struct toud *t, const struct offload_vnet *vh, const uint8_t *pkt, size_t len)
{
	unsigned n = atomic_load(&n_writes);
	uint32_t seq;
	size_t i;

	(void)t;
	while (atomic_load(&hold)) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
	if (vh->gso_type != OFFLOAD_GSO_NONE)
		return -EINVAL;         /* a kernel without the offload */
	if (n >= WRITES_MAX || len < 4)
		return -ENOSPC;
	memcpy(&seq, pkt, 4);
	writes[n].seq = seq;
	writes[n].len = len;
	writes[n].intact = true;
	for (i = 4; i < len; i++)
		if (pkt[i] != fill_byte(seq, i))
			writes[n].intact = false;
	writes[n].on_main = pthread_equal(pthread_self(), main_thread);
	atomic_store(&n_writes, n + 1);
	return fail_every && seq % fail_every == 0 ? -EIO : 0;
}

static void
setup(void)
{
	memset(&T, 0, sizeof(T));
	memset(&TUN, 0, sizeof(TUN));
	memset(&P, 0, sizeof(P));
	strcpy(TUN.name, "tou-test");
	base = event_base_new();
	T.base = base;
	T.tun = &TUN;
	T.tun_sink = sink;
	/* P is the one live peer: batches name it by reference. */
	slot_p = (struct peer_slot){ &P, 1 };
	T.peer_slots = (struct peer_slots){ .slot = &slot_p, .n = 1, .used = 1, .gen = 1 };
	P.ref = (struct peer_ref){ 0, 1 };
	main_thread = pthread_self();
	atomic_store(&n_writes, 0);
	atomic_store(&hold, false);
	fail_every = 0;
}

static void
teardown(void)
{
	event_base_free(base);
}

/* Packet seq of len bytes (len >= 4), as the sink checks it. */
static size_t
packet(uint8_t *buf, uint32_t seq, size_t len)
{
	size_t i;

	memcpy(buf, &seq, 4);
	for (i = 4; i < len; i++)
		buf[i] = fill_byte(seq, i);
	return len;
}

static size_t
size_of(uint32_t seq)
{
	return 60 + (seq * 389) % 1400;
}

static void
assert_written_in_order(unsigned count)
{
	unsigned i;

	ck_assert_uint_eq(atomic_load(&n_writes), count);
	for (i = 0; i < count; i++) {
		ck_assert_uint_eq(writes[i].seq, i);
		ck_assert_uint_eq(writes[i].len, size_of(i));
		ck_assert_msg(writes[i].intact, "packet %u changed on its way", i);
	}
}

static unsigned
written_by_thread(void)
{
	unsigned i, n = 0;

	for (i = 0; i < atomic_load(&n_writes); i++)
		n += !writes[i].on_main;
	return n;
}

/* Without the thread every packet is written before the call returns,
 * and a failure is the caller's to see and counted on the peer. */
START_TEST(at_once_without_thread)
{
	struct tunout *o = tunout_new(&T, NULL);
	uint8_t buf[2048];

	ck_assert_ptr_nonnull(o);
	ck_assert(!tunout_threaded(o));
	fail_every = 2;
	ck_assert_int_eq(tunout_packet(o, &P, NULL, buf, packet(buf, 1, size_of(1))), 0);
	ck_assert_uint_eq(atomic_load(&n_writes), 1);
	ck_assert_int_eq(tunout_packet(o, &P, NULL, buf, packet(buf, 2, size_of(2))), -EIO);
	ck_assert_uint_eq(P.drops[DROP_TUN_WRITE], 1);
	tunout_local(o, buf, packet(buf, 4, size_of(4)));
	ck_assert_uint_eq(T.drops[DROP_TUN_WRITE], 1);
	ck_assert_uint_eq(written_by_thread(), 0);
	tunout_free(o);
}
END_TEST

/* A megabyte and a half in rounds of 64 packets (48 KB): the bulk goes through the
 * thread, and every packet arrives whole, once, in order. */
START_TEST(bulk_in_order_through_thread)
{
	struct tunout *o = tunout_new(&T, NULL);
	uint8_t buf[2048];
	uint32_t seq;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(tunout_start_thread(o), 0);
	ck_assert(tunout_threaded(o));
	fail_every = 10;
	for (seq = 0; seq < 2000; seq++) {
		ck_assert_int_eq(tunout_packet(o, &P, NULL, buf, packet(buf, seq, size_of(seq))), 0);
		if (seq % 64 == 63)
			tunout_flush(o);
	}
	tunout_flush(o);
	tunout_free(o);                 /* waits for the thread, accounts */
	assert_written_in_order(2000);
	ck_assert_uint_gt(written_by_thread(), 1000);
	ck_assert_uint_eq(P.drops[DROP_TUN_WRITE], 200);
	ck_assert_uint_eq(T.drops[DROP_TUN_WRITE], 0);
}
END_TEST

/* A lone small packet finds the thread idle: written on the main loop. */
START_TEST(lone_packet_on_main_loop)
{
	struct tunout *o = tunout_new(&T, NULL);
	uint8_t buf[2048];

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(tunout_start_thread(o), 0);
	ck_assert_int_eq(tunout_packet(o, &P, NULL, buf, packet(buf, 0, size_of(0))), 0);
	tunout_flush(o);
	ck_assert_uint_eq(atomic_load(&n_writes), 1);
	ck_assert(writes[0].on_main);
	tunout_free(o);
}
END_TEST

/* A peer that goes away while the thread writes its packets: nothing
 * reaches into the batches, its reference resolves to nobody, and their
 * failures count on the interface, not on the freed peer. */
START_TEST(forgotten_peer)
{
	struct tunout *o = tunout_new(&T, NULL);
	uint8_t buf[2048];
	uint32_t seq;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(tunout_start_thread(o), 0);
	fail_every = 1;                 /* every write fails */
	atomic_store(&hold, true);
	for (seq = 0; seq < 300; seq++)
		tunout_packet(o, &P, NULL, buf, packet(buf, seq, size_of(seq)));
	tunout_flush(o);                /* the rest: the thread is busy */
	slot_p = (struct peer_slot){ NULL, 0 };     /* what peer_free() does */
	atomic_store(&hold, false);
	tunout_free(o);
	assert_written_in_order(300);
	ck_assert_uint_eq(P.drops[DROP_TUN_WRITE], 0);
	ck_assert_uint_eq(T.drops[DROP_TUN_WRITE], 300);
}
END_TEST

/* Merged packets the TUN refuses, written by the thread: the main loop
 * counts each, drops what could not be cut again (here: not a packet at
 * all), and stops the coalescer's merging. */
START_TEST(refused_merge_stops_coalescing)
{
	struct offload_coal coal;
	struct offload_vnet merged = { .gso_type = OFFLOAD_GSO_TCPV4, .gso_size = 100 };
	struct tunout *o;
	uint8_t buf[2048];
	uint32_t seq;

	memset(&coal, 0, sizeof(coal));
	ck_assert_ptr_nonnull(o = tunout_new(&T, &coal));
	ck_assert_int_eq(tunout_start_thread(o), 0);
	atomic_store(&hold, true);
	for (seq = 0; seq < 600; seq++)
		tunout_packet(o, &P, seq % 100 == 50 ? &merged : NULL, buf,
		    packet(buf, seq, size_of(seq)));
	ck_assert(!coal.no_merge);      /* nothing has come back yet */
	atomic_store(&hold, false);
	tunout_flush(o);
	tunout_free(o);
	ck_assert(coal.no_merge);
	ck_assert_uint_eq(T.events[EVENT_TUN_GSO_REFUSED], 6);
	ck_assert_uint_eq(P.drops[DROP_TUN_WRITE], 6);
	ck_assert_uint_eq(atomic_load(&n_writes), 594);
	ck_assert_uint_gt(written_by_thread(), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("tunout");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, at_once_without_thread);
	tcase_add_test(tc, bulk_in_order_through_thread);
	tcase_add_test(tc, lone_packet_on_main_loop);
	tcase_add_test(tc, forgotten_peer);
	tcase_add_test(tc, refused_merge_stops_coalescing);
	suite_add_tcase(s, tc);
	return check_run(s);
}
