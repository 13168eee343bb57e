/* check_sessid.c - the derived session IDs: both ends agree, every index
 * gives its own nonzero ID, another seed gives others. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sessid.h"

#include "testutil.h"

static int
cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

START_TEST(derivation)
{
	uint8_t seed[SESSID_SEED_LEN], copy[SESSID_SEED_LEN], other[SESSID_SEED_LEN];
	static uint64_t seen[2000];
	uint32_t i, j;

	for (i = 0; i < SESSID_SEED_LEN; i++)
		seed[i] = (uint8_t)(i * 7 + 1);
	memcpy(copy, seed, sizeof(copy));
	memcpy(other, seed, sizeof(other));
	other[31] ^= 0x80;
	for (i = 1; i <= 1000; i++) {
		uint64_t id = sessid_derive(seed, i);

		ck_assert_uint_ne(id, 0);
		ck_assert_uint_eq(id, sessid_derive(copy, i));          /* the other end */
		seen[i - 1] = id;
		seen[999 + i] = sessid_derive(other, i);
	}
	qsort(seen, 2000, sizeof(seen[0]), cmp64);
	for (j = 1; j < 2000; j++)
		ck_assert_uint_ne(seen[j - 1], seen[j]);
}
END_TEST

/* HMAC-SHA256(seed = 32 zero bytes, 00 00 00 01), first 8 bytes, computed
 * with `openssl mac -digest SHA256 -macopt hexkey:00..00 HMAC` on the
 * 4-byte message. */
START_TEST(known_answer)
{
	static const uint8_t zero[SESSID_SEED_LEN];

	ck_assert_uint_eq(sessid_derive(zero, 1), UINT64_C(0xf7ce0b653d2d72a4));
}
END_TEST

/* A deterministic seed for sample n (a session's secret). */
static void
sample_seed(uint8_t seed[SESSID_SEED_LEN], uint32_t n)
{
	uint32_t i;

	for (i = 0; i < SESSID_SEED_LEN; i++)
		seed[i] = (uint8_t)((n * 2654435761u) >> (i % 4 * 8) ^ i * 151 ^ n >> 3);
}

/* server-id: the two top bits of the first byte clear and the server ID
 * in the second byte, in every derived ID; the other bits as derived.
 * ID 0 of a first handshake has the top bits set (unroutable), a
 * rekey's routes to its server; neither is ever 0. */
START_TEST(server_id_layout)
{
	const uint64_t rest = ~(SESSID_UNROUTED | UINT64_C(0xff) << SESSID_SERVER_SHIFT);
	uint8_t seed[SESSID_SEED_LEN];
	unsigned sid;
	uint32_t i;

	for (sid = 1; sid <= 255; sid++) {
		sample_seed(seed, sid);
		for (i = 1; i <= 16; i++) {
			uint64_t d = sessid_derive(seed, i), id = sessid_route(d, (uint8_t)sid);

			ck_assert_uint_eq(id >> 62, 0);
			ck_assert_uint_eq((id >> 48) & 0xff, sid);
			ck_assert_uint_eq(sessid_server(id), sid);
			ck_assert_uint_eq(id & rest, d & rest);
			ck_assert_uint_eq(sessid_route(d, 0), d);
		}
	}
	ck_assert_uint_eq(sessid_route(UINT64_MAX, 7), UINT64_C(0x3f07ffffffffffff));
	ck_assert_uint_eq(sessid_first(0, 0), UINT64_C(0xc000000000000000));
	ck_assert_uint_eq(sessid_first(UINT64_C(0x0123456789abcdef), 0),
	    UINT64_C(0xc123456789abcdef));
	ck_assert_uint_eq(sessid_server(sessid_first(UINT64_C(0x0123456789abcdef), 0)), 0);
	ck_assert_uint_eq(sessid_first(0, 200), UINT64_C(0x00c8000000000000));
	ck_assert_uint_eq(sessid_first(UINT64_MAX, 1), UINT64_C(0x3f01ffffffffffff));
}
END_TEST

/* Unlinkable but for the server byte: across the IDs of one session,
 * every other byte position matches between two IDs no more often than
 * chance says (1/64 for the first byte's six bits, 1/256 for the rest),
 * and in N sessions none has a byte other than the server's common to all
 * of its IDs. */
#define UNLINK_SESSIONS 400
#define UNLINK_IDS 8
START_TEST(server_id_unlinkable)
{
	unsigned same[8] = { 0 }, pairs = 0, n, a, b, k;
	uint8_t seed[SESSID_SEED_LEN];

	for (n = 0; n < UNLINK_SESSIONS; n++) {
		uint64_t id[UNLINK_IDS];
		unsigned common = 0xff;

		sample_seed(seed, 1000 + n);
		for (a = 0; a < UNLINK_IDS; a++)
			id[a] = sessid_route(sessid_derive(seed, a + 1), (uint8_t)(n % 255 + 1));
		for (a = 0; a < UNLINK_IDS; a++) {
			for (b = a + 1; b < UNLINK_IDS; b++) {
				pairs++;
				for (k = 0; k < 8; k++) {
					bool eq = (uint8_t)(id[a] >> (56 - 8 * k)) ==
					    (uint8_t)(id[b] >> (56 - 8 * k));

					same[k] += eq;
					if (!eq)
						common &= ~(1u << k);
				}
			}
		}
		ck_assert_msg(common == 1u << 1, "session %u: bytes 0x%02x common to all IDs",
		    n, common);
	}
	ck_assert_uint_eq(same[1], pairs);
	/* 11200 pairs: about 175 expected at 1/64, 44 at 1/256 */
	ck_assert_msg(same[0] < pairs / 64 * 2, "first byte equal in %u of %u", same[0], pairs);
	for (k = 2; k < 8; k++)
		ck_assert_msg(same[k] < pairs / 256 * 2, "byte %u equal in %u of %u", k, same[k],
		    pairs);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("sessid");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, derivation);
	tcase_add_test(tc, known_answer);
	tcase_add_test(tc, server_id_layout);
	tcase_add_test(tc, server_id_unlinkable);
	suite_add_tcase(s, tc);
	return check_run(s);
}
