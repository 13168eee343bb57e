/* check_sessid.c - the derived session IDs: both ends agree, every index
 * gives its own nonzero ID, another seed gives others. */
#include <check.h>
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

int
main(void)
{
	Suite *s = suite_create("sessid");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, derivation);
	tcase_add_test(tc, known_answer);
	suite_add_tcase(s, tc);
	return check_run(s);
}
