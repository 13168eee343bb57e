/* check_path.c - the path-validation rules on a fake clock: the
 * amplification budget, the challenge schedule and verdict, and which
 * responses count. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "path.h"

#include "testutil.h"

static const uint8_t token[PATH_TOKEN_LEN] = { 9, 8, 7, 6, 5, 4, 3, 2 };

static void
start(struct path_probe *pp, size_t rx)
{
	union sockaddr_union a;
	struct ipaddr ip;

	ck_assert_int_eq(util_addr_parse("198.51.100.7", &ip), 0);
	util_sa_from_addr(&a, &ip, 7000);
	path_reset(pp);
	ck_assert_int_eq(pp->state, PATH_VALIDATED);
	path_start(pp, 42, &a, NULL, token, rx);
	ck_assert_int_eq(pp->state, PATH_PROBING);
	ck_assert_uint_eq(pp->session_id, 42);
	ck_assert(path_probing_for(pp, 42));
	ck_assert(!path_probing_for(pp, 43));
}

/* Never more than three times what the address sent, at the edge too. */
START_TEST(budget)
{
	struct path_probe pp;

	start(&pp, 60);
	ck_assert(path_may_send(&pp, 180));
	ck_assert(!path_may_send(&pp, 181));
	path_sent(&pp, 120, 0);
	ck_assert(path_may_send(&pp, 60));
	ck_assert(!path_may_send(&pp, 61));
	path_received(&pp, 10);
	ck_assert(path_may_send(&pp, 90));
	ck_assert(!path_may_send(&pp, 91));
	path_charge(&pp, 40);           /* data and responses count too */
	ck_assert(path_may_send(&pp, 50));
	ck_assert(!path_may_send(&pp, 51));
	ck_assert_uint_eq(pp.tries, 1); /* without counting as a challenge */
	path_reset(&pp);
	ck_assert(!path_may_send(&pp, 1));      /* nothing to send when not probing */
	path_received(&pp, 1000);
	ck_assert_uint_eq(pp.rx_bytes, 0);
}
END_TEST

/* A challenge at once, then after 250, 500 and 1000 ms; the verdict
 * 2000 ms after the last. */
START_TEST(schedule)
{
	static const uint64_t at[] = { 1000, 1250, 1750, 2750 };
	struct path_probe pp;
	unsigned i;

	start(&pp, 1000);
	for (i = 0; i < 4; i++) {
		if (i > 0)
			ck_assert_int_eq(path_due(&pp, at[i] - 1), PATH_DUE_NOTHING);
		ck_assert_int_eq(path_due(&pp, at[i]), PATH_DUE_CHALLENGE);
		path_sent(&pp, 65, at[i]);
	}
	ck_assert_int_eq(path_due(&pp, 4749), PATH_DUE_NOTHING);
	ck_assert_int_eq(path_due(&pp, 4750), PATH_DUE_FAILED);
	ck_assert_uint_eq(pp.tries, PATH_TRIES);
}
END_TEST

/* Which address the newest record came from decides where data may go. */
START_TEST(newest)
{
	struct path_probe pp;

	start(&pp, 100);
	ck_assert(pp.newest);
	path_old_newest(&pp);
	ck_assert(!pp.newest);
	path_received(&pp, 50);
	ck_assert(pp.newest);
	ck_assert_uint_eq(pp.rx_bytes, 150);
}
END_TEST

/* Only the running probe's token answers it, and only after a challenge
 * went out; an answer ends the probe and a second one finds nothing. */
START_TEST(answers)
{
	uint8_t other[PATH_TOKEN_LEN];
	struct path_probe pp;

	start(&pp, 100);
	ck_assert(!path_answered(&pp, token));          /* nothing was asked yet */
	path_sent(&pp, 65, 0);
	memcpy(other, token, sizeof(other));
	other[7] ^= 1;
	ck_assert(!path_answered(&pp, other));
	ck_assert_int_eq(pp.state, PATH_PROBING);
	ck_assert(path_answered(&pp, token));
	ck_assert_int_eq(pp.state, PATH_VALIDATED);
	ck_assert(!path_answered(&pp, token));
	ck_assert_str_eq(path_state_name(PATH_VALIDATED), "validated");
	ck_assert_str_eq(path_state_name(PATH_PROBING), "probing");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("path");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, budget);
	tcase_add_test(tc, schedule);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, newest);
	suite_add_tcase(s, tc);
	return check_run(s);
}
