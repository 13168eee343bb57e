/* check_tun.c - what can be checked of the TUN wrapper without privileges
 * and without creating a device: the name check and the read/write return
 * conventions, exercised on a non-blocking pipe standing in for the device.
 * Real devices are left to the namespace tests. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tun.h"

#include "testutil.h"

START_TEST(test_name_too_long)
{
	char name[IFNAMSIZ + 1];

	memset(name, 'x', IFNAMSIZ);
	name[IFNAMSIZ] = '\0';
	errno = 0;
	ck_assert_ptr_null(tun_open(name));
	ck_assert_int_eq(errno, ENAMETOOLONG);
	tun_close(NULL);
}
END_TEST

START_TEST(test_read_write_conventions)
{
	struct tun rd = { .name = "pipe" }, wr = { .name = "pipe" };
	int p[2];
	char buf[64];

	ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	rd.fd = p[0];
	wr.fd = p[1];

	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), -EAGAIN);
	ck_assert_int_eq(tun_write(&wr, "packet", 6), 0);
	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), 6);
	ck_assert_mem_eq(buf, "packet", 6);
	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), -EAGAIN);
	/* Wrong direction: the errno comes back negated. */
	ck_assert_int_eq(tun_write(&rd, "x", 1), -EBADF);
	ck_assert_int_eq(tun_read(&wr, buf, sizeof(buf)), -EBADF);

	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), -EBADF);
}
END_TEST

static Suite *
tun_suite(void)
{
	Suite *s = suite_create("tun");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_name_too_long);
	tcase_add_test(tc, test_read_write_conventions);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(tun_suite());
}
