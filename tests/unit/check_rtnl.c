/* check_rtnl.c - argument checks and the request/ack round trip of the
 * rtnetlink client.  Nothing here needs privileges or changes the system:
 * requests name an interface index that does not exist, so the kernel
 * answers ENODEV (or EPERM without CAP_NET_ADMIN).  Installing addresses
 * and routes for real is left to the namespace tests.
 * The monitor's parser is fed hand-built messages, well- and ill-formed. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
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

/* --- the monitor parser -------------------------------------------------- */

#define TUN_IFINDEX 9

struct seen {
	unsigned n;
	struct rtnl_event ev[8];
};

static void
record(void *arg, const struct rtnl_event *ev)
{
	struct seen *s = arg;

	ck_assert_uint_lt(s->n, 8);
	s->ev[s->n++] = *ev;
}

/* Append a message to buf at *off: header, body, then attributes given as
 * (type, len, data) triples ending with type 0xffff. */
static struct nlmsghdr *
msg(uint8_t *buf, size_t *off, uint16_t type, const void *body, size_t blen)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(buf + *off);

	memset(h, 0, NLMSG_SPACE(blen));
	h->nlmsg_type = type;
	h->nlmsg_len = (uint32_t)NLMSG_LENGTH(blen);
	memcpy(NLMSG_DATA(h), body, blen);
	return h;
}

static void
attr(struct nlmsghdr *h, uint16_t type, const void *data, size_t len)
{
	struct rtattr *rta = (struct rtattr *)((uint8_t *)h + NLMSG_ALIGN(h->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = (uint16_t)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	h->nlmsg_len = (uint32_t)(NLMSG_ALIGN(h->nlmsg_len) + RTA_SPACE(len));
}

static void
done(size_t *off, const struct nlmsghdr *h)
{
	*off += NLMSG_ALIGN(h->nlmsg_len);
}

static struct nlmsghdr *
addr_msg(uint8_t *buf, size_t *off, uint16_t type, int family, uint8_t scope, int ifindex,
    const char *a)
{
	struct ifaddrmsg ifa = { .ifa_family = (uint8_t)family, .ifa_scope = scope,
	    .ifa_index = (uint32_t)ifindex, .ifa_prefixlen = family == AF_INET ? 24 : 64 };
	struct nlmsghdr *h = msg(buf, off, type, &ifa, sizeof(ifa));
	uint8_t b[16];

	ck_assert_int_eq(inet_pton(family, a, b), 1);
	attr(h, IFA_ADDRESS, b, family == AF_INET ? 4 : 16);
	return h;
}

START_TEST(test_monitor_parse)
{
	uint8_t buf[4096] __attribute__((aligned(8)));
	struct rtmsg rtm = { .rtm_family = AF_INET, .rtm_dst_len = 0,
	    .rtm_protocol = RTPROT_BOOT, .rtm_type = RTN_UNICAST, .rtm_table = RT_TABLE_MAIN };
	struct ifinfomsg ifi = { .ifi_index = 4, .ifi_change = 0xffffffff };
	struct ipaddr want = check_addr("192.0.2.7");
	struct nlmsghdr *h;
	struct seen s = { 0 };
	size_t off = 0;

	h = addr_msg(buf, &off, RTM_NEWADDR, AF_INET, RT_SCOPE_UNIVERSE, 3, "192.0.2.7");
	done(&off, h);
	/* A veth appearing: its link and its IPv6 link-local address. */
	h = msg(buf, &off, RTM_NEWLINK, &ifi, sizeof(ifi));
	done(&off, h);
	h = addr_msg(buf, &off, RTM_NEWADDR, AF_INET6, RT_SCOPE_LINK, 4, "fe80::1");
	done(&off, h);
	/* Our own TUN's address. */
	h = addr_msg(buf, &off, RTM_NEWADDR, AF_INET, RT_SCOPE_UNIVERSE, TUN_IFINDEX, "10.77.0.1");
	done(&off, h);
	h = msg(buf, &off, RTM_NEWROUTE, &rtm, sizeof(rtm));
	done(&off, h);
	/* Routes that are not a default route, or are toud's own. */
	rtm.rtm_dst_len = 24;
	h = msg(buf, &off, RTM_NEWROUTE, &rtm, sizeof(rtm));
	done(&off, h);
	rtm.rtm_dst_len = 0;
	rtm.rtm_protocol = 0x74;
	h = msg(buf, &off, RTM_DELROUTE, &rtm, sizeof(rtm));
	done(&off, h);
	h = addr_msg(buf, &off, RTM_DELADDR, AF_INET6, RT_SCOPE_UNIVERSE, 3, "2001:db8::5");
	done(&off, h);

	ck_assert_uint_eq(rtnl_monitor_parse(buf, off, TUN_IFINDEX, record, &s), 0);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_int_eq(s.ev[0].kind, RTNL_EV_ADDR_NEW);
	ck_assert_int_eq(s.ev[0].family, AF_INET);
	ck_assert_int_eq(s.ev[0].ifindex, 3);
	ck_assert(util_addr_equal(&s.ev[0].addr, &want));
	ck_assert_int_eq(s.ev[1].kind, RTNL_EV_DEFAULT_ROUTE);
	ck_assert_int_eq(s.ev[1].family, AF_INET);
	ck_assert_int_eq(s.ev[2].kind, RTNL_EV_ADDR_DEL);
	want = check_addr("2001:db8::5");
	ck_assert(util_addr_equal(&s.ev[2].addr, &want));

	/* IFA_LOCAL wins over IFA_ADDRESS (the peer address of a p2p link). */
	off = 0;
	s.n = 0;
	h = addr_msg(buf, &off, RTM_NEWADDR, AF_INET, RT_SCOPE_UNIVERSE, 3, "192.0.2.1");
	{
		uint8_t l[4] = { 198, 51, 100, 1 };

		attr(h, IFA_LOCAL, l, 4);
	}
	done(&off, h);
	ck_assert_uint_eq(rtnl_monitor_parse(buf, off, TUN_IFINDEX, record, &s), 0);
	ck_assert_uint_eq(s.n, 1);
	want = check_addr("198.51.100.1");
	ck_assert(util_addr_equal(&s.ev[0].addr, &want));
}
END_TEST

START_TEST(test_monitor_malformed)
{
	uint8_t buf[4096] __attribute__((aligned(8)));
	struct rtmsg rtm = { .rtm_family = AF_INET, .rtm_type = RTN_UNICAST,
	    .rtm_table = RT_TABLE_MAIN };
	struct ifaddrmsg ifa = { .ifa_family = AF_INET };
	struct nlmsghdr *h;
	struct rtattr *rta;
	struct seen s = { 0 };
	size_t off = 0;

	/* Bodies shorter than their type's header: skipped, counted, and the
	 * next message is still read. */
	h = msg(buf, &off, RTM_NEWADDR, &ifa, 4);
	done(&off, h);
	h = msg(buf, &off, RTM_NEWROUTE, &rtm, 6);
	done(&off, h);
	h = msg(buf, &off, RTM_NEWLINK, &ifa, 2);
	done(&off, h);
	h = addr_msg(buf, &off, RTM_NEWADDR, AF_INET, RT_SCOPE_UNIVERSE, 3, "192.0.2.7");
	done(&off, h);
	ck_assert_uint_eq(rtnl_monitor_parse(buf, off, TUN_IFINDEX, record, &s), 2);
	ck_assert_uint_eq(s.n, 1);

	/* An attribute running past its message; an address of the wrong
	 * size; no address at all. */
	off = 0;
	s.n = 0;
	h = addr_msg(buf, &off, RTM_NEWADDR, AF_INET, RT_SCOPE_UNIVERSE, 3, "192.0.2.7");
	rta = (struct rtattr *)((uint8_t *)NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(ifa)));
	rta->rta_len = 200;
	done(&off, h);
	h = addr_msg(buf, &off, RTM_NEWADDR, AF_INET, RT_SCOPE_UNIVERSE, 3, "192.0.2.7");
	rta = (struct rtattr *)((uint8_t *)NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(ifa)));
	rta->rta_len = RTA_LENGTH(3);
	done(&off, h);
	h = msg(buf, &off, RTM_DELADDR, &ifa, sizeof(ifa));
	done(&off, h);
	ck_assert_uint_eq(rtnl_monitor_parse(buf, off, TUN_IFINDEX, record, &s), 3);
	ck_assert_uint_eq(s.n, 0);

	/* A header claiming more than was received, or less than itself:
	 * parsing stops there. */
	off = 0;
	h = addr_msg(buf, &off, RTM_NEWADDR, AF_INET, RT_SCOPE_UNIVERSE, 3, "192.0.2.7");
	done(&off, h);
	ck_assert_uint_eq(rtnl_monitor_parse(buf, off - 1, TUN_IFINDEX, record, &s), 1);
	h->nlmsg_len = 8;
	ck_assert_uint_eq(rtnl_monitor_parse(buf, off, TUN_IFINDEX, record, &s), 1);
	ck_assert_uint_eq(s.n, 0);
	/* Less than a header: nothing. */
	ck_assert_uint_eq(rtnl_monitor_parse(buf, 15, TUN_IFINDEX, record, &s), 0);
	ck_assert_uint_eq(rtnl_monitor_parse(buf, 0, TUN_IFINDEX, record, &s), 0);
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
	tcase_add_test(tc, test_monitor_parse);
	tcase_add_test(tc, test_monitor_malformed);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(rtnl_suite());
}
