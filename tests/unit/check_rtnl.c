/* check_rtnl.c - argument checks and the request/ack round trip of the
 * rtnetlink client, and the rule requests byte by byte.  Nothing here needs privileges or changes the system:
 * requests name an interface index that does not exist, so the kernel
 * answers ENODEV (or EPERM without CAP_NET_ADMIN).  Installing addresses
 * and routes for real is left to the namespace tests.
 * The monitor's parser is fed hand-built messages, well- and ill-formed. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>

#include "fulltunnel.h"
#include "conf.h"
#include "rtnl.h"
#include "xfrm.h"

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
	ck_assert_int_eq(rtnl_route_add(r, 0, &p, RT_TABLE_MAIN), -EINVAL);
	ck_assert_int_eq(rtnl_route_del(r, -1, &p, RT_TABLE_MAIN), -EINVAL);
	/* the unspecified and the local table are never toud's */
	ck_assert_int_eq(rtnl_route_add(r, NO_IFINDEX, &p, 0), -EINVAL);
	ck_assert_int_eq(rtnl_route_add(r, NO_IFINDEX, &p, RT_TABLE_LOCAL), -EINVAL);
	ck_assert_int_eq(rtnl_route_del(r, NO_IFINDEX, &p, RT_TABLE_LOCAL), -EINVAL);
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
	ck_assert_int_eq(rtnl_route_add(r, NO_IFINDEX, &p, RT_TABLE_MAIN), -EINVAL);
	ck_assert_int_eq(rtnl_addr_del(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_del(r, NO_IFINDEX, &p, RT_TABLE_MAIN), -EINVAL);
	p = v6;
	p.len = 129;
	ck_assert_int_eq(rtnl_addr_add(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_add(r, NO_IFINDEX, &p, RT_TABLE_MAIN), -EINVAL);
	p = v4;
	p.addr.family = AF_UNIX;
	ck_assert_int_eq(rtnl_addr_add(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_add(r, NO_IFINDEX, &p, RT_TABLE_MAIN), -EINVAL);
	p.addr.family = 0;
	ck_assert_int_eq(rtnl_addr_del(r, NO_IFINDEX, &p), -EINVAL);
	ck_assert_int_eq(rtnl_route_del(r, NO_IFINDEX, &p, RT_TABLE_MAIN), -EINVAL);
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
		ck_assert(refused(rtnl_route_add(r, NO_IFINDEX, &v4, RT_TABLE_MAIN)));
		ck_assert(refused(rtnl_route_add(r, NO_IFINDEX, &v6, RT_TABLE_MAIN)));
		ck_assert(refused(rtnl_route_add(r, NO_IFINDEX, &v4, 51820)));
	}
	/* Nothing was added, so nothing is left to undo. */
	rtnl_undo_all(r);
	rtnl_close(r);
}
END_TEST

/* --- rules --------------------------------------------------------------- */

/* The attributes of one rule request, as the kernel will read them. */
struct rule_seen {
	struct fib_rule_hdr frh;
	uint16_t type, flags;
	bool has_table, has_mark, has_mask, has_suppress, has_proto, has_prio, has_dport;
	uint32_t table, mark, mask, suppress, prio;
	struct fib_rule_port_range dport;
	uint8_t proto;
};

static struct rule_seen
rule_parse(const uint8_t *buf, ssize_t len)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	struct rule_seen r;
	const struct rtattr *a;
	size_t left;

	memset(&r, 0, sizeof(r));
	ck_assert_int_gt(len, 0);
	ck_assert_uint_eq(h->nlmsg_len, (size_t)len);
	ck_assert_uint_ge(h->nlmsg_len, NLMSG_LENGTH(sizeof(r.frh)));
	r.type = h->nlmsg_type;
	r.flags = h->nlmsg_flags;
	memcpy(&r.frh, NLMSG_DATA(h), sizeof(r.frh));
	left = h->nlmsg_len - NLMSG_LENGTH(sizeof(r.frh));
	for (a = (const struct rtattr *)((const uint8_t *)NLMSG_DATA(h) +
	    NLMSG_ALIGN(sizeof(r.frh))); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		switch (a->rta_type) {
		case FRA_TABLE:
			ck_assert_uint_eq(RTA_PAYLOAD(a), 4);
			memcpy(&r.table, RTA_DATA(a), 4);
			r.has_table = true;
			break;
		case FRA_FWMARK:
			ck_assert_uint_eq(RTA_PAYLOAD(a), 4);
			memcpy(&r.mark, RTA_DATA(a), 4);
			r.has_mark = true;
			break;
		case FRA_FWMASK:
			ck_assert_uint_eq(RTA_PAYLOAD(a), 4);
			memcpy(&r.mask, RTA_DATA(a), 4);
			r.has_mask = true;
			break;
		case FRA_SUPPRESS_PREFIXLEN:
			ck_assert_uint_eq(RTA_PAYLOAD(a), 4);
			memcpy(&r.suppress, RTA_DATA(a), 4);
			r.has_suppress = true;
			break;
		case FRA_PROTOCOL:
			ck_assert_uint_eq(RTA_PAYLOAD(a), 1);
			r.proto = *(const uint8_t *)RTA_DATA(a);
			r.has_proto = true;
			break;
		case FRA_PRIORITY:
			ck_assert_uint_eq(RTA_PAYLOAD(a), 4);
			memcpy(&r.prio, RTA_DATA(a), 4);
			r.has_prio = true;
			break;
		case FRA_DPORT_RANGE:
			ck_assert_uint_eq(RTA_PAYLOAD(a), sizeof(r.dport));
			memcpy(&r.dport, RTA_DATA(a), sizeof(r.dport));
			r.has_dport = true;
			break;
		default:
			ck_abort_msg("unexpected rule attribute %u", a->rta_type);
		}
	}
	ck_assert_uint_eq(left, 0);
	return r;
}

START_TEST(test_rule_msg)
{
	uint8_t buf[256] __attribute__((aligned(8)));
	struct rtnl_rule not_mark = { .family = AF_INET, .table = 51820, .fwmark = 51820,
	    .invert = true, .suppress_prefixlen = -1 };
	struct rtnl_rule suppress = { .family = AF_INET6, .table = RT_TABLE_MAIN,
	    .suppress_prefixlen = 0 };
	struct rule_seen r;
	char fmt[96];
	ssize_t n;

	/* "not fwmark 51820 lookup 51820": a table above 255 only as FRA_TABLE */
	n = rtnl_rule_msg(buf, sizeof(buf), true, &not_mark);
	r = rule_parse(buf, n);
	ck_assert_uint_eq(r.type, RTM_NEWRULE);
	ck_assert_uint_eq(r.flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE);
	ck_assert_uint_eq(r.frh.family, AF_INET);
	ck_assert_uint_eq(r.frh.action, FR_ACT_TO_TBL);
	ck_assert_uint_eq(r.frh.flags, FIB_RULE_INVERT);
	ck_assert_uint_eq(r.frh.table, RT_TABLE_UNSPEC);
	ck_assert(r.has_table && r.table == 51820);
	ck_assert(r.has_mark && r.mark == 51820);
	ck_assert(r.has_mask && r.mask == 0xffffffffu);
	ck_assert(!r.has_suppress);
	ck_assert(r.has_proto && r.proto == 116);
	ck_assert(!r.has_prio);         /* the kernel places it, as `ip rule add` */
	ck_assert_str_eq(rtnl_rule_fmt(&not_mark, fmt, sizeof(fmt)),
	    "IPv4 rule not fwmark 0xca6c lookup 51820");

	/* "lookup main suppress_prefixlength 0", deleted */
	n = rtnl_rule_msg(buf, sizeof(buf), false, &suppress);
	r = rule_parse(buf, n);
	ck_assert_uint_eq(r.type, RTM_DELRULE);
	ck_assert_uint_eq(r.flags, NLM_F_REQUEST | NLM_F_ACK);
	ck_assert_uint_eq(r.frh.family, AF_INET6);
	ck_assert_uint_eq(r.frh.flags, 0);
	ck_assert_uint_eq(r.frh.table, RT_TABLE_MAIN);
	ck_assert(r.has_table && r.table == RT_TABLE_MAIN);
	ck_assert(!r.has_mark && !r.has_mask);
	ck_assert(r.has_suppress && r.suppress == 0);
	ck_assert(r.has_proto && r.proto == 116);
	ck_assert_str_eq(rtnl_rule_fmt(&suppress, fmt, sizeof(fmt)),
	    "IPv6 rule lookup 254 suppress_prefixlength 0");

	/* a stale copy is deleted by its priority */
	suppress.priority = 32764;
	n = rtnl_rule_msg(buf, sizeof(buf), false, &suppress);
	r = rule_parse(buf, n);
	ck_assert(r.has_prio && r.prio == 32764);
	suppress.priority = 0;

	/* too small a buffer, and rules that make no sense */
	ck_assert_int_eq(rtnl_rule_msg(buf, 20, true, &not_mark), -EMSGSIZE);
	suppress.family = AF_UNIX;
	ck_assert_int_eq(rtnl_rule_msg(buf, sizeof(buf), true, &suppress), -EINVAL);
	suppress.family = AF_INET;
	suppress.suppress_prefixlen = 33;
	ck_assert_int_eq(rtnl_rule_msg(buf, sizeof(buf), true, &suppress), -EINVAL);
	suppress.suppress_prefixlen = -1;
	suppress.table = RT_TABLE_LOCAL;
	ck_assert_int_eq(rtnl_rule_msg(buf, sizeof(buf), true, &suppress), -EINVAL);
	suppress.table = 0;
	ck_assert_int_eq(rtnl_rule_msg(buf, sizeof(buf), true, &suppress), -EINVAL);
	not_mark.fwmark = 0;            /* "not" needs a mark */
	ck_assert_int_eq(rtnl_rule_msg(buf, sizeof(buf), true, &not_mark), -EINVAL);
}
END_TEST

/* The full tunnel's pair: the suppressing rule is added second, so the
 * kernel numbers it lower and consults it first. */
START_TEST(test_fulltunnel_rules)
{
	struct rtnl_rule r[2];

	fulltunnel_rules(AF_INET6, 51821, 0x1234, r);
	ck_assert_int_eq(r[0].family, AF_INET6);
	ck_assert_uint_eq(r[0].table, 51821);
	ck_assert_uint_eq(r[0].fwmark, 0x1234);
	ck_assert(r[0].invert);
	ck_assert_int_eq(r[0].suppress_prefixlen, -1);
	ck_assert_int_eq(r[1].family, AF_INET6);
	ck_assert_uint_eq(r[1].table, RT_TABLE_MAIN);
	ck_assert_uint_eq(r[1].fwmark, 0);
	ck_assert(!r[1].invert);
	ck_assert_int_eq(r[1].suppress_prefixlen, 0);
	ck_assert_uint_eq(r[0].dport, 0);
	ck_assert_uint_eq(r[1].dport, 0);
}
END_TEST

/* The DNS rules: port 53 to the tunnel's table, marked port 53 to main
 * (added second, consulted first), each with one FRA_DPORT_RANGE of
 * 53..53 (any protocol: UDP and TCP) and no "not". */
START_TEST(test_fulltunnel_dns_rules)
{
	uint8_t buf[256] __attribute__((aligned(8)));
	struct rtnl_rule d[2];
	struct rule_seen s;
	char fmt[96];

	fulltunnel_dns_rules(AF_INET, 51820, 0xca6c, d);
	ck_assert_int_eq(d[0].family, AF_INET);
	ck_assert_uint_eq(d[0].table, 51820);
	ck_assert_uint_eq(d[0].fwmark, 0);
	ck_assert(!d[0].invert && !d[1].invert);
	ck_assert_int_eq(d[0].suppress_prefixlen, -1);
	ck_assert_uint_eq(d[0].dport, 53);
	ck_assert_uint_eq(d[1].table, RT_TABLE_MAIN);
	ck_assert_uint_eq(d[1].fwmark, 0xca6c);
	ck_assert_uint_eq(d[1].dport, 53);
	s = rule_parse(buf, rtnl_rule_msg(buf, sizeof(buf), true, &d[0]));
	ck_assert(s.has_dport && s.dport.start == 53 && s.dport.end == 53);
	ck_assert(!s.has_mark && s.frh.flags == 0);
	ck_assert(s.has_table && s.table == 51820);
	ck_assert_str_eq(rtnl_rule_fmt(&d[0], fmt, sizeof(fmt)),
	    "IPv4 rule dport 53 lookup 51820");
	s = rule_parse(buf, rtnl_rule_msg(buf, sizeof(buf), true, &d[1]));
	ck_assert(s.has_dport && s.has_mark && s.mark == 0xca6c && s.frh.flags == 0);
	ck_assert_str_eq(rtnl_rule_fmt(&d[1], fmt, sizeof(fmt)),
	    "IPv4 rule fwmark 0xca6c dport 53 lookup 254");
	/* the pair's rules carry no port */
	d[0].dport = 0;
	s = rule_parse(buf, rtnl_rule_msg(buf, sizeof(buf), true, &d[0]));
	ck_assert(!s.has_dport);
}
END_TEST

/* The DNS rules' xfrm policies, for each of UDP and TCP: port 53 allowed
 * with the mark, through the loopback device and from the family's tunnel
 * addresses (the first four), then blocked; nothing of the other family. */
START_TEST(test_fulltunnel_dns_policies)
{
	static const char *const addrs[] = { "10.77.0.1", "fd77::1", "10.77.1.1", "10.77.2.1",
		"10.77.3.1", "10.77.4.1" };
	struct conf_prefix a[ARRAY_SIZE(addrs)];
	struct xfrm_pol p[FULLTUNNEL_XFRM_MAX + 2];
	char fmt[160];
	size_t n, i;

	memset(a, 0, sizeof(a));
	for (i = 0; i < ARRAY_SIZE(addrs); i++)
		a[i].p.addr = check_addr(addrs[i]);
	n = fulltunnel_dns_policies(AF_INET6, 0xca6c, a, 2, p, ARRAY_SIZE(p));
	ck_assert_uint_eq(n, 8);
	ck_assert_str_eq(xfrm_pol_fmt(&p[0], fmt, sizeof(fmt)),
	    "xfrm policy out allow udp dport 53 mark 0xca6c priority 116");
	ck_assert_str_eq(xfrm_pol_fmt(&p[1], fmt, sizeof(fmt)),
	    "xfrm policy out allow udp dport 53 dev 1 priority 116");
	ck_assert_str_eq(xfrm_pol_fmt(&p[2], fmt, sizeof(fmt)),
	    "xfrm policy out allow udp dport 53 from fd77::1 priority 116");
	ck_assert_str_eq(xfrm_pol_fmt(&p[3], fmt, sizeof(fmt)),
	    "xfrm policy out block udp dport 53 priority 117");
	ck_assert_str_eq(xfrm_pol_fmt(&p[7], fmt, sizeof(fmt)),
	    "xfrm policy out block tcp dport 53 priority 117");
	for (i = 0; i < n; i++)
		ck_assert_int_eq(p[i].family, AF_INET6);
	/* five IPv4 addresses: the first four are allowed */
	n = fulltunnel_dns_policies(AF_INET, 0xca6c, a, ARRAY_SIZE(a), p, ARRAY_SIZE(p));
	ck_assert_uint_eq(n, FULLTUNNEL_XFRM_MAX);
	ck_assert_str_eq(xfrm_pol_fmt(&p[5], fmt, sizeof(fmt)),
	    "xfrm policy out allow udp dport 53 from 10.77.3.1 priority 116");
	ck_assert(p[6].block && p[13].block && p[13].proto == IPPROTO_TCP);
	/* a short array: the number there would be, nothing written beyond */
	memset(p, 0, sizeof(p));
	ck_assert_uint_eq(fulltunnel_dns_policies(AF_INET, 1, a, 1, p, 3), 8);
	ck_assert_int_eq(p[3].family, 0);
}
END_TEST

/* A rule the kernel refuses is not remembered: nothing to undo after. */
START_TEST(test_rule_refusal)
{
	struct rtnl *r = rtnl_open();
	struct rtnl_rule bad = { .family = AF_INET, .table = 51820,
	    .suppress_prefixlen = -1 };

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rtnl_rule_add(r, &(struct rtnl_rule){ .family = AF_INET }), -EINVAL);
	bad.invert = true;
	ck_assert_int_eq(rtnl_rule_add(r, &bad), -EINVAL);
	ck_assert_int_eq(rtnl_rule_del(r, &bad), -EINVAL);
	rtnl_undo_all(r);
	rtnl_close(r);
	/* a table nobody uses, and no rule of ours for it */
	ck_assert_int_eq(rtnl_table_used(0xfffffff0u), 0);
	bad.fwmark = 0xfffffff0u;
	ck_assert_int_eq(rtnl_rule_find(&bad, NULL, 0), 0);
}
END_TEST

/* The drop route: a family and a table it can be in; deleting one this
 * handle does not have asks nothing of the kernel. */
START_TEST(test_drop_route_args)
{
	struct rtnl *r = rtnl_open();

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rtnl_drop_add(r, AF_UNIX, 51820), -EINVAL);
	ck_assert_int_eq(rtnl_drop_add(r, AF_INET, RT_TABLE_LOCAL), -EINVAL);
	ck_assert_int_eq(rtnl_drop_add(r, AF_INET6, 0), -EINVAL);
	ck_assert_int_eq(rtnl_drop_del(r, AF_INET, 0), -EINVAL);
	ck_assert_int_eq(rtnl_drop_del(r, AF_INET, 51820), 0);
	ck_assert_int_eq(rtnl_drop_del(r, AF_INET6, 51820), 0);
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
	tcase_add_test(tc, test_rule_msg);
	tcase_add_test(tc, test_fulltunnel_rules);
	tcase_add_test(tc, test_fulltunnel_dns_rules);
	tcase_add_test(tc, test_fulltunnel_dns_policies);
	tcase_add_test(tc, test_rule_refusal);
	tcase_add_test(tc, test_drop_route_args);
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
