/* check_rxopen.c - batch opening of records, with and without the opening
 * thread: every record comes back once, in order, opened in place (or
 * refused when forged); a lone record is opened at once on the main loop,
 * bulk goes to the thread; a record queued before its receiving direction
 * was freed is still opened (the batch keeps the opener); a record larger
 * than the batches take is refused; records not handed back at the end
 * are dropped without a call. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include <event2/event.h>

#include "bytes.h"
#include "record.h"
#include "rxopen.h"
#include "udp.h"

#include "testutil.h"

#define MAX_LEN 1500
#define HEADROOM 64
#define PLAIN 200
#define BACK_MAX 4096

static struct event_base *base;
static struct record_keys keys;
static struct record_tx tx;
static struct record_rx rx;
static struct rxopen *o;
static uint64_t thread_batches;

/* What came back, in order. */
static struct {
	uint64_t seq;
	enum record_status status;
	uint32_t tag;                   /* the plaintext's first four bytes */
	bool intact;
} back[BACK_MAX];
static unsigned n_back, n_end;

static void
fn(void *arg, struct rxopen_rec *r)
{
	const uint8_t *plain = r->m.buf + r->off + record_prefix(keys.cipher);
	unsigned i;

	(void)arg;
	ck_assert_uint_lt(n_back, BACK_MAX);
	ck_assert_uint_eq(r->m.len - r->off, PLAIN + record_overhead(keys.cipher));
	back[n_back].seq = r->seq;
	back[n_back].status = r->status;
	back[n_back].tag = bytes_get32(plain);
	back[n_back].intact = true;
	for (i = 4; i < PLAIN; i++)
		if (plain[i] != (uint8_t)(plain[0] + i))
			back[n_back].intact = false;
	n_back++;
}

static void
end(void *arg)
{
	(void)arg;
	n_end++;
}

static void
setup(void)
{
	unsigned i;

	memset(&keys, 0, sizeof(keys));
	keys.cipher = RECORD_AES128_GCM;
	keys.key_len = 16;
	keys.iv_len = 4;
	for (i = 0; i < 16; i++)
		keys.key[i] = (uint8_t)(7 * i + 1);
	memcpy(keys.iv, "salt", 4);
	ck_assert_int_eq(record_tx_init(&tx, &keys, 1, RECORD_SEQ_START, 1), 0);
	ck_assert_int_eq(record_rx_init(&rx, &keys, 1), 0);
	ck_assert_ptr_nonnull(base = event_base_new());
	thread_batches = n_back = n_end = 0;
	ck_assert_ptr_nonnull(o = rxopen_new(base, MAX_LEN, HEADROOM, &thread_batches, fn, end,
	    NULL));
}

static void
teardown(void)
{
	rxopen_free(o);
	record_tx_free(&tx);
	record_rx_free(&rx);
	event_base_free(base);
}

/* Seal record number `tag` as a datagram (8 bytes in front of the record,
 * standing for the outer header) and queue it; forged: one tag bit flipped. */
static void
add(uint32_t tag, bool forged)
{
	uint8_t plain[PLAIN], dgram[8 + PLAIN + 64];
	struct record_msg m = { .in = plain, .in_len = PLAIN, .out = dgram + 8,
	    .out_cap = sizeof(dgram) - 8 };
	struct udp_msg u = { .buf = dgram };
	uint64_t seq;
	unsigned i;

	bytes_put32(plain, tag);
	for (i = 4; i < PLAIN; i++)
		plain[i] = (uint8_t)(plain[0] + i);
	ck_assert_uint_eq(record_seal(&tx, &m, 1), 1);
	if (forged)
		dgram[8 + m.out_len - 1] ^= 1;
	u.len = 8 + m.out_len;
	ck_assert_int_eq(record_check(&rx, dgram + 8, m.out_len, &seq), RECORD_OK);
	ck_assert(rxopen_add(o, &u, 8, rx.opener, 42, 3, seq));
}

static void
check_back(unsigned from, unsigned n, uint32_t first_tag)
{
	unsigned i;

	ck_assert_uint_eq(n_back, from + n);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(back[from + i].status, RECORD_OK);
		ck_assert_uint_eq(back[from + i].tag, first_tag + i);
		ck_assert(back[from + i].intact);
	}
}

START_TEST(inline_in_order)
{
	unsigned i;

	for (i = 0; i < 10; i++)
		add(100 + i, i == 4);
	ck_assert_uint_eq(n_back, 0);
	rxopen_flush(o);
	ck_assert_uint_eq(n_back, 10);
	ck_assert_uint_eq(n_end, 1);
	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(back[i].status, i == 4 ? RECORD_ERR_AUTH : RECORD_OK);
		ck_assert_uint_eq(back[i].seq, (uint64_t)1 << 48 | (RECORD_SEQ_START + i));
		if (i != 4) {
			ck_assert_uint_eq(back[i].tag, 100 + i);
			ck_assert(back[i].intact);
		}
	}
	ck_assert_uint_eq(thread_batches, 0);
	/* opening counts nothing: accepting does (rx.c) */
	ck_assert_uint_eq(rx.opened + rx.failed, 0);
}
END_TEST

/* The direction is freed while its records wait: the batch's references
 * keep the opener, and the records still open. */
START_TEST(opener_outlives_direction)
{
	unsigned i;

	for (i = 0; i < 5; i++)
		add(200 + i, false);
	record_rx_free(&rx);
	rxopen_flush(o);
	check_back(0, 5, 200);
	ck_assert_int_eq(record_rx_init(&rx, &keys, 1), 0);      /* for teardown */
}
END_TEST

START_TEST(thread_bulk_and_lone)
{
	unsigned round, i;

	ck_assert_int_eq(rxopen_start_thread(o), 0);
	ck_assert(rxopen_threaded(o));
	/* 1200 records in rounds of 100: bulk, to the thread */
	for (round = 0; round < 12; round++) {
		for (i = 0; i < 100; i++)
			add(1000 + round * 100 + i, false);
		rxopen_flush(o);
	}
	rxopen_drain(o);
	check_back(0, 1200, 1000);
	ck_assert_uint_ge(thread_batches, 12);
	ck_assert_uint_ge(n_end, 12);
	/* a lone record, the thread idle: opened at once, on the main loop */
	add(5000, false);
	rxopen_flush(o);
	check_back(1200, 1, 5000);
	ck_assert_uint_ge(thread_batches, 12);
	ck_assert_uint_le(thread_batches, 12 + 12);
}
END_TEST

START_TEST(too_large)
{
	static uint8_t big[MAX_LEN + 1];
	struct udp_msg u = { .buf = big, .len = sizeof(big) };

	ck_assert(!rxopen_add(o, &u, 8, rx.opener, 42, 3, 1));
	rxopen_flush(o);
	ck_assert_uint_eq(n_back, 0);
}
END_TEST

/* Records still queued when the batcher goes are dropped: no call. */
START_TEST(free_drops)
{
	unsigned i;

	ck_assert_int_eq(rxopen_start_thread(o), 0);
	for (i = 0; i < 300; i++)
		add(i, false);
	rxopen_free(o);
	o = NULL;
	ck_assert_uint_le(n_back, 300);
	ck_assert_uint_eq(n_back % 256, 0);     /* whole batches, if any */
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("rxopen");
	TCase *tc = tcase_create("rxopen");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, inline_in_order);
	tcase_add_test(tc, opener_outlives_direction);
	tcase_add_test(tc, thread_bulk_and_lone);
	tcase_add_test(tc, too_large);
	tcase_add_test(tc, free_drops);
	suite_add_tcase(s, tc);
	return check_run(s);
}
