/* check_fpindex.c - peers by key fingerprint: 100,000 keys found by
 * binary search, absent keys not, a key two entries share reported with
 * both in the order they were added, and an empty index. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "fpindex.h"

#include "testutil.h"

#define N 100000

/* A spread of keys: entry i's bytes come from a fixed mix of i. */
static void
key_of(size_t i, uint8_t fp[FPINDEX_FP_LEN])
{
	uint64_t x = i * UINT64_C(0x9e3779b97f4a7c15) + 1;
	size_t k;

	for (k = 0; k < FPINDEX_FP_LEN; k++) {
		x ^= x >> 29;
		x *= UINT64_C(0xbf58476d1ce4e5b9);
		fp[k] = (uint8_t)(x >> 56);
	}
}

static int objs[N];

START_TEST(hundred_thousand)
{
	struct fpindex *ix = fpindex_new(N);
	uint8_t fp[FPINDEX_FP_LEN];
	void *other;
	size_t i;

	ck_assert_ptr_nonnull(ix);
	for (i = 0; i < N; i++) {
		key_of(i, fp);
		ck_assert_int_eq(fpindex_add(ix, fp, &objs[i]), 0);
	}
	ck_assert_int_lt(fpindex_add(ix, fp, &objs[0]), 0);     /* full */
	fpindex_sort(ix);
	ck_assert_uint_eq(fpindex_count(ix), N);
	for (i = 0; i < N; i++) {
		key_of(i, fp);
		ck_assert_ptr_eq(fpindex_find(ix, fp, &other), &objs[i]);
		ck_assert_ptr_null(other);
	}
	key_of(N, fp);
	ck_assert_ptr_null(fpindex_find(ix, fp, &other));
	memset(fp, 0, sizeof(fp));
	ck_assert_ptr_null(fpindex_find(ix, fp, NULL));
	memset(fp, 0xff, sizeof(fp));
	ck_assert_ptr_null(fpindex_find(ix, fp, NULL));
	fpindex_free(ix);
}
END_TEST

START_TEST(shared_key)
{
	struct fpindex *ix = fpindex_new(4);
	uint8_t a[FPINDEX_FP_LEN], b[FPINDEX_FP_LEN];
	int x, y, z;
	void *other;

	key_of(1, a);
	key_of(2, b);
	ck_assert_int_eq(fpindex_add(ix, b, &z), 0);
	ck_assert_int_eq(fpindex_add(ix, a, &x), 0);
	ck_assert_int_eq(fpindex_add(ix, a, &y), 0);
	fpindex_sort(ix);
	ck_assert_ptr_eq(fpindex_find(ix, a, &other), &x);
	ck_assert_ptr_eq(other, &y);
	ck_assert_ptr_eq(fpindex_find(ix, b, &other), &z);
	ck_assert_ptr_null(other);
	fpindex_free(ix);
}
END_TEST

START_TEST(empty)
{
	struct fpindex *ix = fpindex_new(0);
	uint8_t a[FPINDEX_FP_LEN];
	void *other = &other;

	key_of(1, a);
	ck_assert_ptr_nonnull(ix);
	fpindex_sort(ix);
	ck_assert_ptr_null(fpindex_find(ix, a, &other));
	ck_assert_ptr_null(other);
	ck_assert_ptr_null(fpindex_find(NULL, a, NULL));
	ck_assert_uint_eq(fpindex_count(NULL), 0);
	fpindex_free(ix);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fpindex");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, hundred_thousand);
	tcase_add_test(tc, shared_key);
	tcase_add_test(tc, empty);
	suite_add_tcase(s, tc);
	return check_run(s);
}
