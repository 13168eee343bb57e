/* check_util.c - address, number and hex helpers; handing files to the
 * service user without following symlinks (priv_give). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "priv.h"
#include "util.h"

#include "testutil.h"

START_TEST(addr_parse)
{
	struct ipaddr a;
	char buf[UTIL_ADDRSTRLEN];

	ck_assert_int_eq(util_addr_parse("10.77.0.1", &a), 0);
	ck_assert_int_eq(a.family, AF_INET);
	ck_assert_str_eq(util_addr_fmt(&a, buf, sizeof(buf)), "10.77.0.1");
	ck_assert_int_eq(util_addr_parse("fd77::1", &a), 0);
	ck_assert_int_eq(a.family, AF_INET6);
	ck_assert_str_eq(util_addr_fmt(&a, buf, sizeof(buf)), "fd77::1");
	ck_assert_int_eq(util_addr_parse("10.77.0.256", &a), -EINVAL);
	ck_assert_int_eq(util_addr_parse("", &a), -EINVAL);
	ck_assert_int_eq(util_addr_parse("fd77::1/64", &a), -EINVAL);
}
END_TEST

START_TEST(prefix_parse)
{
	struct ipprefix p, m;
	struct ipaddr a;
	char buf[UTIL_ADDRSTRLEN];

	ck_assert_int_eq(util_prefix_parse("10.77.0.1/24", &p), 0);
	ck_assert_int_eq(p.len, 24);
	util_prefix_masked(&p, &m);
	ck_assert_str_eq(util_prefix_fmt(&m, buf, sizeof(buf)), "10.77.0.0/24");
	ck_assert_int_eq(util_prefix_parse("10.77.0.1", &p), 0);
	ck_assert_int_eq(p.len, 32);
	ck_assert_int_eq(util_prefix_parse("fd77::1/64", &p), 0);
	ck_assert_int_eq(p.len, 64);
	ck_assert_int_eq(util_prefix_parse("fd77::1/129", &p), -EINVAL);
	ck_assert_int_eq(util_prefix_parse("10.0.0.0/33", &p), -EINVAL);
	ck_assert_int_eq(util_prefix_parse("10.0.0.0/", &p), -EINVAL);
	ck_assert_int_eq(util_prefix_parse("10.0.0.0/-1", &p), -EINVAL);
	ck_assert_int_eq(util_prefix_parse("10.0.0.0/ 8", &p), -EINVAL);

	util_prefix_parse("10.77.0.0/23", &p);
	util_addr_parse("10.77.1.200", &a);
	ck_assert(util_prefix_contains(&p, &a));
	util_addr_parse("10.77.2.1", &a);
	ck_assert(!util_prefix_contains(&p, &a));
	util_addr_parse("fd77::1", &a);
	ck_assert(!util_prefix_contains(&p, &a));
	util_prefix_parse("0.0.0.0/0", &p);
	util_addr_parse("192.0.2.1", &a);
	ck_assert(util_prefix_contains(&p, &a));
	util_prefix_parse("fd77::/17", &p);
	util_prefix_parse("fd77:7fff::/32", &m);
	ck_assert(util_prefix_overlap(&p, &m));
	ck_assert(util_prefix_overlap(&m, &p));
	util_prefix_parse("fd77:8000::/32", &m);
	ck_assert(!util_prefix_overlap(&p, &m));
}
END_TEST

START_TEST(sockaddr)
{
	union sockaddr_union sa, sb;
	struct ipaddr a, back;
	uint16_t port;
	char buf[UTIL_ADDRSTRLEN];

	util_addr_parse("fd00::2", &a);
	ck_assert_int_eq(util_sa_from_addr(&sa, &a, 6080), 0);
	ck_assert_str_eq(util_sa_fmt(&sa, buf, sizeof(buf)), "[fd00::2]:6080");
	ck_assert_uint_eq(util_sa_len(&sa), sizeof(struct sockaddr_in6));
	util_sa_to_addr(&sa, &back, &port);
	ck_assert(util_addr_equal(&a, &back));
	ck_assert_uint_eq(port, 6080);
	util_addr_parse("192.0.2.7", &a);
	util_sa_from_addr(&sb, &a, 1);
	ck_assert_str_eq(util_sa_fmt(&sb, buf, sizeof(buf)), "192.0.2.7:1");
	ck_assert(!util_sa_equal(&sa, &sb));
	sa = sb;
	ck_assert(util_sa_equal(&sa, &sb));
	sa.in.sin_port = htons(2);
	ck_assert(!util_sa_equal(&sa, &sb));
	util_addr_parse("::ffff:192.0.2.7", &a);
	util_sa_from_addr(&sa, &a, 9);
	ck_assert_str_eq(util_sa_fmt(&sa, buf, sizeof(buf)), "192.0.2.7:9");
	/* What a dual-stack socket reports for an IPv4 host is that host. */
	util_sa_to_addr(&sa, &back, NULL);
	util_addr_unmap(&back);
	util_addr_parse("192.0.2.7", &a);
	ck_assert(util_addr_equal(&a, &back));
	util_addr_parse("fd00::ffff:c000:207", &a);
	back = a;
	util_addr_unmap(&back);
	ck_assert(util_addr_equal(&a, &back));
	a.family = 0;
	ck_assert_int_eq(util_sa_from_addr(&sa, &a, 9), -EAFNOSUPPORT);
}
END_TEST

START_TEST(numbers)
{
	long long v;

	ck_assert_int_eq(util_strtonum("25", 0, 3600, &v), 0);
	ck_assert_int_eq(v, 25);
	ck_assert_int_eq(util_strtonum("3601", 0, 3600, &v), -ERANGE);
	ck_assert_int_eq(util_strtonum("-1", 0, 3600, &v), -ERANGE);
	ck_assert_int_eq(util_strtonum("12x", 0, 3600, &v), -EINVAL);
	ck_assert_int_eq(util_strtonum("", 0, 3600, &v), -EINVAL);
	ck_assert_int_eq(util_strtonum(" 1", 0, 3600, &v), -EINVAL);
	ck_assert_int_eq(util_strtonum("99999999999999999999", 0, 3600, &v), -ERANGE);
}
END_TEST

START_TEST(strings_and_hex)
{
	char buf[8], hex[9];
	uint8_t in[4] = { 0xde, 0xad, 0x00, 0x0f }, out[4];

	ck_assert_uint_eq(util_strlcpy(buf, "abcdefghij", sizeof(buf)), 10);
	ck_assert_str_eq(buf, "abcdefg");
	util_hex(in, 4, hex);
	ck_assert_str_eq(hex, "dead000f");
	ck_assert_int_eq(util_unhex("DEAD000F", out, 4), 0);
	ck_assert_mem_eq(in, out, 4);
	ck_assert_int_eq(util_unhex("dead000", out, 4), -EINVAL);
	ck_assert_int_eq(util_unhex("dead000g", out, 4), -EINVAL);
}
END_TEST

START_TEST(log_levels)
{
	enum log_level l;

	ck_assert_int_eq(log_level_parse("DEBUG", &l), 0);
	ck_assert_int_eq(l, LOG_LEVEL_DEBUG);
	ck_assert_int_eq(log_level_parse("warning", &l), 0);
	ck_assert_int_eq(l, LOG_LEVEL_WARN);
	ck_assert_int_eq(log_level_parse("loud", &l), -EINVAL);
	ck_assert_str_eq(log_level_name(LOG_LEVEL_ERR), "error");
}
END_TEST

/* A symlink planted where the control socket was: priv_give changes the
 * link, never its target.  Even a chown to the same owner touches the
 * target's ctime if it follows, so this holds without root too; as root
 * the link really changes owner and the target keeps root's. */
START_TEST(give_never_follows)
{
	char dir[] = "/tmp/check_util.XXXXXX", victim[64], link[64];
	const char *paths[] = { link, NULL };
	uid_t uid = geteuid() == 0 ? 65534 : geteuid();
	gid_t gid = geteuid() == 0 ? 65534 : getegid();
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	struct stat before, after, ls;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s/toud.sock", dir);
	ck_assert_int_ge(fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600), 0);
	close(fd);
	ck_assert_int_eq(symlink(victim, link), 0);
	ck_assert_int_eq(stat(victim, &before), 0);
	nanosleep(&nap, NULL);
	ck_assert_int_eq(priv_give(paths, uid, gid), 0);
	ck_assert_int_eq(stat(victim, &after), 0);
	ck_assert_int_eq(lstat(link, &ls), 0);
	ck_assert_uint_eq(after.st_uid, before.st_uid);
	ck_assert_uint_eq(after.st_gid, before.st_gid);
	ck_assert_uint_eq(after.st_mode, before.st_mode);
	ck_assert(after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
	    after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
	ck_assert_uint_eq(ls.st_uid, uid);
	ck_assert_int_eq(unlink(link), 0);
	ck_assert_int_eq(unlink(victim), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("util");

	tcase_add_test(tc, addr_parse);
	tcase_add_test(tc, prefix_parse);
	tcase_add_test(tc, sockaddr);
	tcase_add_test(tc, numbers);
	tcase_add_test(tc, strings_and_hex);
	tcase_add_test(tc, log_levels);
	tcase_add_test(tc, give_never_follows);
	suite_add_tcase(s, tc);
	return check_run(s);
}
