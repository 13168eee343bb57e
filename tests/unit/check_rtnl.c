/* check_rtnl.c - argument checks and the request/ack round trip of the
 * rtnetlink client.  Nothing here needs privileges or changes the system:
 * requests name an interface index that does not exist, so the kernel
 * answers ENODEV (or EPERM without CAP_NET_ADMIN).  Installing addresses
 * and routes for real is left to the namespace tests. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rtnl.h"

#include "testutil.h"

/* No real system gets this close to INT_MAX interfaces. */
#define NO_IFINDEX 0x7ffffff0

static struct ipprefix
pfx(const char *s)
{
	struct ipprefix p;

	ck_assert_int_eq(util_prefix_parse(s, &p), 0);
	return p;
}

static bool
refused(int err)
{
	return err == -ENODEV || err == -EPERM;
}

START_TEST(test_open_close)
{
	struct rtnl *r = rtnl_open();

	ck_assert_ptr_nonnull(r);
	rtnl_undo_all(r);       /* nothing added: nothing to do */
	rtnl_close(r);
	rtnl_undo_all(NULL);
	rtnl_close(NULL);
}
END_TEST

START_TEST(test_bad_ifindex)
{
	struct rtnl *r = rtnl_open();
	struct ipprefix p = pfx("10.99.0.1/24");

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rtnl_link_set(r, 0, 1400, true), -EINVAL);
	ck_assert_int_eq(rtnl_link_set(r, -1, 1400, true), -EINVAL);
	ck_assert_int_eq(rtnl_addr_add(r, 0, &p), -EINVAL);
	ck_assert_int_eq(rtnl_addr_del(r, -3, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_add(r, 0, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_del(r, -1, &p), -EINVAL);
	rtnl_close(r);
}
END_TEST

START_TEST(test_bad_prefix)
{
	struct rtnl *r = rtnl_open();
	struct ipprefix v4 = pfx("10.99.0.1/24"), v6 = pfx("fd99::1/64"), p;

	ck_assert_ptr_nonnull(r);
	p = v4;
	p.len = 33;
	ck_assert_int_eq(rtnl_addr_add(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_add(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_addr_del(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_del(r, NO_IFINDEX, &p), -EINVAL);
	p = v6;
	p.len = 129;
	ck_assert_int_eq(rtnl_addr_add(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_add(r, NO_IFINDEX, &p), -EINVAL);
	p = v4;
	p.addr.family = AF_UNIX;
	ck_assert_int_eq(rtnl_addr_add(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_add(r, NO_IFINDEX, &p), -EINVAL);
	p.addr.family = 0;
	ck_assert_int_eq(rtnl_addr_del(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_del(r, NO_IFINDEX, &p), -EINVAL);
	rtnl_close(r);
}
END_TEST

/* The kernel's answer comes back as -errno, request after request. */
START_TEST(test_kernel_refusal)
{
	struct rtnl *r = rtnl_open();
	struct ipprefix v4 = pfx("10.99.0.1/24"), v6 = pfx("fd99::1/64");
	int i;

	ck_assert_ptr_nonnull(r);
	for (i = 0; i < 3; i++) {
		ck_assert(refused(rtnl_link_set(r, NO_IFINDEX, 1400, true)));
		ck_assert(refused(rtnl_link_set(r, NO_IFINDEX, 0, false)));
		ck_assert(refused(rtnl_addr_add(r, NO_IFINDEX, &v4)));
		ck_assert(refused(rtnl_addr_add(r, NO_IFINDEX, &v6)));
		ck_assert(refused(rtnl_route_add(r, NO_IFINDEX, &v4)));
		ck_assert(refused(rtnl_route_add(r, NO_IFINDEX, &v6)));
	}
	/* Nothing was added, so nothing is left to undo. */
	rtnl_undo_all(r);
	rtnl_close(r);
}
END_TEST

static Suite *
rtnl_suite(void)
{
	Suite *s = suite_create("rtnl");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_open_close);
	tcase_add_test(tc, test_bad_ifindex);
	tcase_add_test(tc, test_bad_prefix);
	tcase_add_test(tc, test_kernel_refusal);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(rtnl_suite());
}
