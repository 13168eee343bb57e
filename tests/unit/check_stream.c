/* check_stream.c - the TCP transport's framing (stream.c): headers, frames
 * in pieces of every size, zero and oversize lengths, garbage. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

#include "testutil.h"

#define MAX 1500

/* A stream of n frames of lengths lens[i], frame i filled with byte i+1;
 * its length. */
static size_t
make_stream(uint8_t *out, const size_t *lens, unsigned n)
{
	size_t off = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(stream_frame_header(out + off, lens[i], MAX), 0);
		off += STREAM_HDR_LEN;
		memset(out + off, (int)(i + 1), lens[i]);
		off += lens[i];
	}
	return off;
}

/* Feed buf in pieces of at most step bytes; the frames must come out as
 * make_stream() made them. */
static void
read_in_steps(const uint8_t *buf, size_t len, size_t step, const size_t *lens, unsigned n)
{
	static uint8_t dst[MAX];
	struct stream_rx s;
	size_t off = 0, used, flen;
	unsigned got = 0;

	stream_rx_init(&s, MAX);
	while (off < len) {
		size_t piece = len - off < step ? len - off : step, at = 0;

		while (at < piece) {
			enum stream_status st = stream_rx_feed(&s, buf + off + at, piece - at, &used,
			    dst, &flen);

			ck_assert(used <= piece - at);
			at += used;
			if (st == STREAM_MORE) {
				ck_assert_uint_eq(at, piece);
				continue;
			}
			ck_assert_int_eq(st, STREAM_FRAME);
			ck_assert_uint_lt(got, n);
			ck_assert_uint_eq(flen, lens[got]);
			for (size_t k = 0; k < flen; k++)
				ck_assert_uint_eq(dst[k], got + 1);
			got++;
		}
		off += piece;
	}
	ck_assert_uint_eq(got, n);
	ck_assert_uint_eq(stream_rx_partial(&s), 0);
}

START_TEST(test_header)
{
	uint8_t h[STREAM_HDR_LEN];

	ck_assert_int_eq(stream_frame_header(h, 1, MAX), 0);
	ck_assert(h[0] == 0 && h[1] == 1);
	ck_assert_int_eq(stream_frame_header(h, 0x1234, 0xffff), 0);
	ck_assert(h[0] == 0x12 && h[1] == 0x34);
	ck_assert_int_eq(stream_frame_header(h, 0, MAX), -1);
	ck_assert_int_eq(stream_frame_header(h, MAX + 1, MAX), -1);
	ck_assert_int_eq(stream_frame_header(h, 0x10000, 0x20000), -1);
}
END_TEST

START_TEST(test_whole)
{
	static uint8_t buf[4 * (MAX + 2)];
	size_t lens[] = { 1, 40, MAX, 2 };
	size_t len = make_stream(buf, lens, 4);

	read_in_steps(buf, len, len, lens, 4);
}
END_TEST

/* Every split point of a stream of three frames, and every piece size. */
START_TEST(test_split_every_byte)
{
	static uint8_t buf[3 * (MAX + 2)];
	size_t lens[] = { 3, 17, 1 };
	size_t len = make_stream(buf, lens, 3), step;

	for (step = 1; step <= len; step++)
		read_in_steps(buf, len, step, lens, 3);
}
END_TEST

/* One frame split in two at every byte: the gathered part survives. */
START_TEST(test_split_two_pieces)
{
	static uint8_t buf[MAX + 2], dst[MAX];
	size_t lens[] = { 300 };
	size_t len = make_stream(buf, lens, 1), cut, used, flen;
	struct stream_rx s;

	for (cut = 0; cut <= len; cut++) {
		stream_rx_init(&s, MAX);
		memset(dst, 0, sizeof(dst));
		ck_assert_int_eq(stream_rx_feed(&s, buf, cut, &used, dst, &flen),
		    cut == len ? STREAM_FRAME : STREAM_MORE);
		ck_assert_uint_eq(used, cut);
		if (cut == len)
			continue;
		ck_assert_uint_eq(stream_rx_partial(&s), cut > 2 ? cut - 2 : 0);
		ck_assert_int_eq(stream_rx_feed(&s, buf + cut, len - cut, &used, dst, &flen),
		    STREAM_FRAME);
		ck_assert_uint_eq(used, len - cut);
		ck_assert_uint_eq(flen, 300);
		ck_assert_uint_eq(dst[0], 1);
		ck_assert_uint_eq(dst[299], 1);
	}
}
END_TEST

START_TEST(test_zero)
{
	uint8_t buf[] = { 0, 0, 0, 1, 0x45 }, dst[MAX];
	struct stream_rx s;
	size_t used, flen;

	stream_rx_init(&s, MAX);
	ck_assert_int_eq(stream_rx_feed(&s, buf, sizeof(buf), &used, dst, &flen), STREAM_ZERO);
	ck_assert_uint_eq(used, 2);
	/* The stream is bad from there on: nothing more is read. */
	ck_assert_int_ne(stream_rx_feed(&s, buf + 2, 3, &used, dst, &flen), STREAM_FRAME);
	ck_assert_uint_eq(used, 0);
}
END_TEST

START_TEST(test_oversize)
{
	uint8_t buf[] = { (MAX + 1) >> 8, (MAX + 1) & 0xff, 1, 2, 3 }, dst[MAX];
	uint8_t big[] = { 0xff, 0xff };
	struct stream_rx s;
	size_t used, flen;

	stream_rx_init(&s, MAX);
	/* Refused at the header, before a byte of it is gathered. */
	ck_assert_int_eq(stream_rx_feed(&s, buf, 1, &used, dst, &flen), STREAM_MORE);
	ck_assert_int_eq(stream_rx_feed(&s, buf + 1, 4, &used, dst, &flen), STREAM_OVERSIZE);
	ck_assert_uint_eq(used, 1);
	stream_rx_init(&s, MAX);
	ck_assert_int_eq(stream_rx_feed(&s, big, 2, &used, dst, &flen), STREAM_OVERSIZE);
	/* The largest accepted length is max, and max is capped at 65535. */
	stream_rx_init(&s, 100000);
	ck_assert_uint_eq(s.max, 0xffff);
}
END_TEST

/* Random bytes: every call consumes within bounds, every frame fits, and
 * the reader ends bad or with every byte accounted for. */
START_TEST(test_garbage)
{
	static uint8_t buf[8192], dst[MAX];
	struct stream_rx s;
	unsigned round;

	srand(22);
	for (round = 0; round < 200; round++) {
		size_t len = (size_t)(rand() % (int)sizeof(buf)), off = 0, used, flen;
		enum stream_status st = STREAM_MORE;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rand();
		stream_rx_init(&s, MAX);
		while (off < len) {
			size_t piece = 1 + (size_t)(rand() % 700);

			if (piece > len - off)
				piece = len - off;
			st = stream_rx_feed(&s, buf + off, piece, &used, dst, &flen);
			ck_assert_uint_le(used, piece);
			if (st == STREAM_FRAME)
				ck_assert(flen >= 1 && flen <= MAX);
			if (st == STREAM_ZERO || st == STREAM_OVERSIZE)
				break;
			off += used;
		}
		ck_assert(off == len || st == STREAM_ZERO || st == STREAM_OVERSIZE);
	}
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(stream_status_name(STREAM_ZERO), "a frame of length 0");
	ck_assert_str_eq(stream_status_name((enum stream_status)99), "unknown");
}
END_TEST

static Suite *
stream_suite(void)
{
	Suite *s = suite_create("stream");
	TCase *tc = tcase_create("framing");

	tcase_add_test(tc, test_header);
	tcase_add_test(tc, test_whole);
	tcase_add_test(tc, test_split_every_byte);
	tcase_add_test(tc, test_split_two_pieces);
	tcase_add_test(tc, test_zero);
	tcase_add_test(tc, test_oversize);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(stream_suite());
}
