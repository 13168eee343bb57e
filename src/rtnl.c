/* rtnl.c - a minimal rtnetlink client.  Every request carries NLM_F_ACK and
 * its own sequence number and is answered synchronously, so the caller gets
 * the kernel's verdict as 0 or -errno.  What this handle adds is remembered,
 * so that exactly that can be removed again, and nothing the administrator
 * or another program installed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/fib_rules.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_addr.h>
#include <net/if.h>

#include "log.h"
#include "rtnl.h"

/* Our routes show as "proto 116" in `ip route` ('t' for toud). */
#define RTNL_PROTO_TOUD 0x74

/* The metric of a full tunnel's drop route: behind every other route. */
#define RTNL_DROP_METRIC UINT32_MAX

/* How long to wait for the kernel's answer to one request. */
#define RTNL_TIMEOUT_S 5

#define RTNL_ATTRBUF 128

enum rtnl_kind { RTNL_ADDR, RTNL_ROUTE, RTNL_RULE };

/* Something this handle installed; the list is newest first. */
struct rtnl_entry {
	struct rtnl_entry *next;
	enum rtnl_kind kind;
	int ifindex;
	struct ipprefix p;        /* routes: masked */
	uint32_t table;           /* routes */
	struct rtnl_rule rule;    /* rules */
};

struct rtnl {
	int fd;
	uint32_t seq;
	struct rtnl_entry *entries;
};

/* One request: header, family message and room for a few attributes. */
struct rtnl_req {
	struct nlmsghdr n;
	union {
		struct ifinfomsg ifi;
		struct ifaddrmsg ifa;
		struct rtmsg rtm;
		struct fib_rule_hdr frh;
	};
	uint8_t attrs[RTNL_ATTRBUF];
};

int
rtnl_socket(int protocol)
{
	struct sockaddr_nl sa;
	struct timeval tv = { .tv_sec = RTNL_TIMEOUT_S };
	int fd, one = 1, saved;

	if ((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol)) < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		goto fail;
	/* Acks need not echo the whole request back; an old kernel without
	 * the option just sends longer acks. */
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	return fd;

fail:
	saved = errno;
	close(fd);
	return -saved;
}

struct rtnl *
rtnl_open(void)
{
	struct rtnl *r;
	int fd;

	if ((fd = rtnl_socket(NETLINK_ROUTE)) < 0) {
		errno = -fd;
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	r->fd = fd;
	/* Distinct start values keep a stale answer from matching a request. */
	r->seq = (uint32_t)util_now_ms();
	return r;
}

static void
rtnl_entries_free(struct rtnl *r)
{
	struct rtnl_entry *e, *next;

	for (e = r->entries; e != NULL; e = next) {
		next = e->next;
		free(e);
	}
	r->entries = NULL;
}

void
rtnl_close(struct rtnl *r)
{
	if (r == NULL)
		return;
	rtnl_entries_free(r);
	close(r->fd);
	free(r);
}

static void
rtnl_req_init(struct rtnl_req *q, uint16_t type, uint16_t flags, size_t msglen)
{
	memset(q, 0, sizeof(*q));
	q->n.nlmsg_len = (uint32_t)NLMSG_LENGTH(msglen);
	q->n.nlmsg_type = type;
	q->n.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | NLM_F_ACK | flags);
}

static int
rtnl_attr_put(struct rtnl_req *q, uint16_t type, const void *data, size_t len)
{
	size_t off = NLMSG_ALIGN(q->n.nlmsg_len);
	struct rtattr *rta;

	if (off + RTA_SPACE(len) > sizeof(*q))
		return -EMSGSIZE;
	rta = (struct rtattr *)((uint8_t *)q + off);
	rta->rta_type = type;
	rta->rta_len = (uint16_t)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	q->n.nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
	return 0;
}

static int
rtnl_attr_put_u32(struct rtnl_req *q, uint16_t type, uint32_t v)
{
	return rtnl_attr_put(q, type, &v, sizeof(v));
}

/* Look for the answer to seq in one datagram: 1 when found (*err set). */
static int
rtnl_parse_ack(const uint8_t *buf, size_t len, uint32_t seq, int *err)
{
	const struct nlmsghdr *h;
	const struct nlmsgerr *e;
	size_t rem = len;

	for (h = (const struct nlmsghdr *)buf; NLMSG_OK(h, rem);
	    h = NLMSG_NEXT(h, rem)) {
		if (h->nlmsg_seq != seq || h->nlmsg_type != NLMSG_ERROR)
			continue;
		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e))) {
			*err = -EBADMSG;
			return 1;
		}
		e = NLMSG_DATA(h);
		/* error is 0 for an ack or a negative errno. */
		*err = e->error > 0 ? -EPROTO : e->error;
		return 1;
	}
	return 0;
}

int
rtnl_fd_talk(int fd, struct nlmsghdr *n, uint32_t seq)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	union {
		uint8_t b[8192];
		struct nlmsghdr align;
	} buf;
	struct iovec iov;
	struct msghdr msg;
	ssize_t got;
	int err;

	n->nlmsg_seq = seq;
	do
		got = sendto(fd, n, n->nlmsg_len, 0, (struct sockaddr *)&sa,
		    sizeof(sa));
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	if ((size_t)got != n->nlmsg_len)
		return -EIO;

	for (;;) {
		iov.iov_base = buf.b;
		iov.iov_len = sizeof(buf.b);
		memset(&msg, 0, sizeof(msg));
		msg.msg_name = &sa;
		msg.msg_namelen = sizeof(sa);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		got = recvmsg(fd, &msg, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -ETIMEDOUT;
			return -errno;
		}
		/* Only the kernel speaks to us; a truncated datagram cannot
		 * be an ack this small buffer would not hold. */
		if (sa.nl_pid != 0 || (msg.msg_flags & MSG_TRUNC))
			continue;
		if (rtnl_parse_ack(buf.b, (size_t)got, seq, &err))
			return err;
	}
}

/* Send one request and wait for its ack or error. */
static int
rtnl_talk(struct rtnl *r, struct rtnl_req *q)
{
	return rtnl_fd_talk(r->fd, &q->n, ++r->seq);
}

static bool
rtnl_prefix_valid(const struct ipprefix *p)
{
	size_t alen = util_addr_len(p->addr.family);

	return alen != 0 && p->len <= alen * 8;
}

static bool
rtnl_rule_equal(const struct rtnl_rule *a, const struct rtnl_rule *b)
{
	return a->family == b->family && a->table == b->table && a->fwmark == b->fwmark &&
	    a->invert == b->invert && a->suppress_prefixlen == b->suppress_prefixlen &&
	    a->dport == b->dport && a->priority == b->priority;
}

/* Rules are matched by rule (ifindex and p unused), the others by ifindex,
 * prefix and, for routes, table (ifindex 0: a drop route). */
static struct rtnl_entry **
rtnl_entry_find(struct rtnl *r, enum rtnl_kind kind, int ifindex,
    const struct ipprefix *p, uint32_t table, const struct rtnl_rule *rule)
{
	struct rtnl_entry **ep;

	for (ep = &r->entries; *ep != NULL; ep = &(*ep)->next) {
		struct rtnl_entry *e = *ep;

		if (e->kind != kind)
			continue;
		if (kind == RTNL_RULE) {
			if (rtnl_rule_equal(&e->rule, rule))
				return ep;
			continue;
		}
		if (e->ifindex == ifindex && (kind != RTNL_ROUTE || e->table == table) &&
		    e->p.len == p->len && util_addr_equal(&e->p.addr, &p->addr))
			return ep;
	}
	return NULL;
}

static void
rtnl_entry_forget(struct rtnl *r, enum rtnl_kind kind, int ifindex,
    const struct ipprefix *p, uint32_t table, const struct rtnl_rule *rule)
{
	struct rtnl_entry **ep, *e;

	if ((ep = rtnl_entry_find(r, kind, ifindex, p, table, rule)) == NULL)
		return;
	e = *ep;
	*ep = e->next;
	free(e);
}

/* The kernel's ways of saying "not there (any more)". */
static bool
rtnl_gone(int err)
{
	return err == -ENOENT || err == -ENODEV || err == -ESRCH ||
	    err == -EADDRNOTAVAIL;
}

int
rtnl_link_set(struct rtnl *r, int ifindex, unsigned mtu, bool up)
{
	struct rtnl_req q;
	int err;

	if (ifindex <= 0)
		return -EINVAL;
	rtnl_req_init(&q, RTM_NEWLINK, 0, sizeof(q.ifi));
	q.ifi.ifi_family = AF_UNSPEC;
	q.ifi.ifi_index = ifindex;
	q.ifi.ifi_flags = up ? IFF_UP : 0;
	q.ifi.ifi_change = IFF_UP;
	/* An MTU of 0 leaves the MTU as it is. */
	if (mtu != 0 && (err = rtnl_attr_put_u32(&q, IFLA_MTU, mtu)) < 0)
		return err;
	return rtnl_talk(r, &q);
}

static int
rtnl_addr_req(struct rtnl *r, uint16_t type, uint16_t flags, int ifindex,
    const struct ipprefix *p)
{
	struct rtnl_req q;
	size_t alen = util_addr_len(p->addr.family);
	uint32_t ifa_flags = 0;
	int err;

	rtnl_req_init(&q, type, flags, sizeof(q.ifa));
	q.ifa.ifa_family = (uint8_t)p->addr.family;
	q.ifa.ifa_prefixlen = p->len;
	q.ifa.ifa_scope = RT_SCOPE_UNIVERSE;
	q.ifa.ifa_index = (uint32_t)ifindex;
	/* Without DAD an IPv6 address is usable at once, not "tentative". */
	if (p->addr.family == AF_INET6)
		ifa_flags = IFA_F_NODAD;
	q.ifa.ifa_flags = (uint8_t)ifa_flags;
	if (p->addr.family == AF_INET &&
	    (err = rtnl_attr_put(&q, IFA_LOCAL, p->addr.b, alen)) < 0)
		return err;
	if ((err = rtnl_attr_put(&q, IFA_ADDRESS, p->addr.b, alen)) < 0)
		return err;
	if (type == RTM_NEWADDR &&
	    (err = rtnl_attr_put_u32(&q, IFA_FLAGS, ifa_flags)) < 0)
		return err;
	return rtnl_talk(r, &q);
}

int
rtnl_addr_add(struct rtnl *r, int ifindex, const struct ipprefix *p)
{
	struct rtnl_entry *e;
	int err;

	if (ifindex <= 0 || !rtnl_prefix_valid(p))
		return -EINVAL;
	/* Allocate first: an address we could not remember is not added. */
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return -ENOMEM;
	err = rtnl_addr_req(r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, ifindex, p);
	if (err < 0) {
		free(e);
		return err;
	}
	e->kind = RTNL_ADDR;
	e->ifindex = ifindex;
	e->p = *p;
	e->next = r->entries;
	r->entries = e;
	return 0;
}

int
rtnl_addr_del(struct rtnl *r, int ifindex, const struct ipprefix *p)
{
	int err;

	if (ifindex <= 0 || !rtnl_prefix_valid(p))
		return -EINVAL;
	err = rtnl_addr_req(r, RTM_DELADDR, 0, ifindex, p);
	if (err == 0 || rtnl_gone(err))
		rtnl_entry_forget(r, RTNL_ADDR, ifindex, p, 0, NULL);
	return err;
}

static int
rtnl_route_req(struct rtnl *r, uint16_t type, uint16_t flags, int ifindex,
    const struct ipprefix *m, uint32_t table)
{
	struct rtnl_req q;
	int err;

	rtnl_req_init(&q, type, flags, sizeof(q.rtm));
	q.rtm.rtm_family = (uint8_t)m->addr.family;
	q.rtm.rtm_dst_len = m->len;
	/* The header has 8 bits; RTA_TABLE carries any number. */
	q.rtm.rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
	/* Deletion matches the protocol too, so it never removes a route
	 * that someone else installed for the same prefix. */
	q.rtm.rtm_protocol = RTNL_PROTO_TOUD;
	q.rtm.rtm_scope = RT_SCOPE_LINK;
	q.rtm.rtm_type = RTN_UNICAST;
	if (m->len > 0 && (err = rtnl_attr_put(&q, RTA_DST, m->addr.b,
	    util_addr_len(m->addr.family))) < 0)
		return err;
	if (ifindex == 0) {
		/* The drop route: no device, the highest metric; deletion
		 * matches it by type, metric and protocol. */
		q.rtm.rtm_scope = type == RTM_DELROUTE ? RT_SCOPE_NOWHERE : RT_SCOPE_UNIVERSE;
		q.rtm.rtm_type = RTN_UNREACHABLE;
		err = rtnl_attr_put_u32(&q, RTA_PRIORITY, RTNL_DROP_METRIC);
	} else {
		err = rtnl_attr_put_u32(&q, RTA_OIF, (uint32_t)ifindex);
	}
	if (err < 0 || (err = rtnl_attr_put_u32(&q, RTA_TABLE, table)) < 0)
		return err;
	return rtnl_talk(r, &q);
}

static bool
rtnl_table_valid(uint32_t table)
{
	return table != RT_TABLE_UNSPEC && table != RT_TABLE_LOCAL;
}

/* Add a route (ifindex 0: the drop route) and remember it; with adopt, one
 * that exists already is taken as this handle's. */
static int
rtnl_route_put(struct rtnl *r, int ifindex, const struct ipprefix *m, uint32_t table, bool adopt)
{
	struct rtnl_entry *e;
	int err;

	if ((e = calloc(1, sizeof(*e))) == NULL)
		return -ENOMEM;
	err = rtnl_route_req(r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, ifindex, m, table);
	if (err < 0 && !(adopt && err == -EEXIST)) {
		free(e);
		return err;
	}
	e->kind = RTNL_ROUTE;
	e->ifindex = ifindex;
	e->p = *m;
	e->table = table;
	e->next = r->entries;
	r->entries = e;
	return err;
}

int
rtnl_route_add(struct rtnl *r, int ifindex, const struct ipprefix *p, uint32_t table)
{
	struct ipprefix m;

	if (ifindex <= 0 || !rtnl_prefix_valid(p) || !rtnl_table_valid(table))
		return -EINVAL;
	util_prefix_masked(p, &m);
	return rtnl_route_put(r, ifindex, &m, table, false);
}

static void
rtnl_default_prefix(int family, struct ipprefix *m)
{
	memset(m, 0, sizeof(*m));
	m->addr.family = family;
}

int
rtnl_drop_add(struct rtnl *r, int family, uint32_t table)
{
	struct ipprefix m;
	int err;

	if ((family != AF_INET && family != AF_INET6) || !rtnl_table_valid(table))
		return -EINVAL;
	rtnl_default_prefix(family, &m);
	if (rtnl_entry_find(r, RTNL_ROUTE, 0, &m, table, NULL))
		return 0;
	err = rtnl_route_put(r, 0, &m, table, true);
	return err == -EEXIST ? 2 : err < 0 ? err : 1;
}

int
rtnl_drop_del(struct rtnl *r, int family, uint32_t table)
{
	struct ipprefix m;
	int err;

	if ((family != AF_INET && family != AF_INET6) || !rtnl_table_valid(table))
		return -EINVAL;
	rtnl_default_prefix(family, &m);
	if (!rtnl_entry_find(r, RTNL_ROUTE, 0, &m, table, NULL))
		return 0;
	err = rtnl_route_req(r, RTM_DELROUTE, 0, 0, &m, table);
	if (err == 0 || rtnl_gone(err)) {
		rtnl_entry_forget(r, RTNL_ROUTE, 0, &m, table, NULL);
		return 0;
	}
	return err;
}

int
rtnl_route_del(struct rtnl *r, int ifindex, const struct ipprefix *p, uint32_t table)
{
	struct ipprefix m;
	int err;

	if (ifindex <= 0 || !rtnl_prefix_valid(p) || !rtnl_table_valid(table))
		return -EINVAL;
	util_prefix_masked(p, &m);
	err = rtnl_route_req(r, RTM_DELROUTE, 0, ifindex, &m, table);
	if (err == 0 || rtnl_gone(err))
		rtnl_entry_forget(r, RTNL_ROUTE, ifindex, &m, table, NULL);
	return err;
}

/* One rule request into q (pure).  Every rule of toud's carries protocol
 * 116, so deletion, which matches on it, never removes someone else's. */
static int
rtnl_rule_req(struct rtnl_req *q, uint16_t type, uint16_t flags, const struct rtnl_rule *rule)
{
	uint8_t proto = RTNL_PROTO_TOUD;
	int err;

	if ((rule->family != AF_INET && rule->family != AF_INET6) ||
	    !rtnl_table_valid(rule->table) || (rule->invert && !rule->fwmark) ||
	    rule->suppress_prefixlen < -1 ||
	    rule->suppress_prefixlen > (int)util_addr_len(rule->family) * 8)
		return -EINVAL;
	rtnl_req_init(q, type, flags, sizeof(q->frh));
	q->frh.family = (uint8_t)rule->family;
	q->frh.table = rule->table < 256 ? (uint8_t)rule->table : RT_TABLE_UNSPEC;
	q->frh.action = FR_ACT_TO_TBL;
	q->frh.flags = rule->invert ? FIB_RULE_INVERT : 0;
	if ((err = rtnl_attr_put_u32(q, FRA_TABLE, rule->table)) < 0 ||
	    (err = rtnl_attr_put(q, FRA_PROTOCOL, &proto, sizeof(proto))) < 0)
		return err;
	if (rule->fwmark && ((err = rtnl_attr_put_u32(q, FRA_FWMARK, rule->fwmark)) < 0 ||
	    (err = rtnl_attr_put_u32(q, FRA_FWMASK, UINT32_MAX)) < 0))
		return err;
	if (rule->suppress_prefixlen >= 0 && (err = rtnl_attr_put_u32(q,
	    FRA_SUPPRESS_PREFIXLEN, (uint32_t)rule->suppress_prefixlen)) < 0)
		return err;
	if (rule->dport) {
		struct fib_rule_port_range pr = { rule->dport, rule->dport };

		if ((err = rtnl_attr_put(q, FRA_DPORT_RANGE, &pr, sizeof(pr))) < 0)
			return err;
	}
	if (rule->priority && (err = rtnl_attr_put_u32(q, FRA_PRIORITY, rule->priority)) < 0)
		return err;
	return 0;
}

ssize_t
rtnl_rule_msg(void *buf, size_t cap, bool add, const struct rtnl_rule *rule)
{
	struct rtnl_req q;
	int err;

	/* Without NLM_F_EXCL: two tunnels may each want the same rule
	 * ("lookup main suppress_prefixlength 0"), and each removes its own. */
	err = rtnl_rule_req(&q, add ? RTM_NEWRULE : RTM_DELRULE, add ? NLM_F_CREATE : 0, rule);
	if (err < 0)
		return err;
	if (q.n.nlmsg_len > cap)
		return -EMSGSIZE;
	memcpy(buf, &q, q.n.nlmsg_len);
	return (ssize_t)q.n.nlmsg_len;
}

/* Build and send one rule request. */
static int
rtnl_rule_talk(struct rtnl *r, uint16_t type, uint16_t flags, const struct rtnl_rule *rule)
{
	struct rtnl_req q;
	int err;

	if ((err = rtnl_rule_req(&q, type, flags, rule)) < 0)
		return err;
	return rtnl_talk(r, &q);
}

int
rtnl_rule_add(struct rtnl *r, const struct rtnl_rule *rule)
{
	struct rtnl_entry *e;
	struct rtnl_req q;
	int err;

	if ((err = rtnl_rule_req(&q, RTM_NEWRULE, NLM_F_CREATE, rule)) < 0)
		return err;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return -ENOMEM;
	if ((err = rtnl_talk(r, &q)) < 0) {
		free(e);
		return err;
	}
	e->kind = RTNL_RULE;
	e->rule = *rule;
	e->next = r->entries;
	r->entries = e;
	return 0;
}

int
rtnl_rule_del(struct rtnl *r, const struct rtnl_rule *rule)
{
	int err = rtnl_rule_talk(r, RTM_DELRULE, 0, rule);

	if (err == 0 || rtnl_gone(err))
		rtnl_entry_forget(r, RTNL_RULE, 0, NULL, 0, rule);
	return err;
}

const char *
rtnl_rule_fmt(const struct rtnl_rule *rule, char *buf, size_t len)
{
	char mark[40] = "", sup[40] = "", port[16] = "";

	if (rule->dport)
		snprintf(port, sizeof(port), "dport %u ", (unsigned)rule->dport);
	if (rule->fwmark)
		snprintf(mark, sizeof(mark), "%sfwmark 0x%x ", rule->invert ? "not " : "",
		    (unsigned)rule->fwmark);
	if (rule->suppress_prefixlen >= 0)
		snprintf(sup, sizeof(sup), " suppress_prefixlength %d", rule->suppress_prefixlen);
	snprintf(buf, len, "%s rule %s%slookup %u%s", rule->family == AF_INET6 ? "IPv6" : "IPv4",
	    mark, port, (unsigned)rule->table, sup);
	return buf;
}

static void
rtnl_undo_kind(struct rtnl *r, enum rtnl_kind kind)
{
	char buf[UTIL_ADDRSTRLEN + 64];
	struct rtnl_entry *e;
	int err;

	/* The list is newest first: this walks in reverse order of adding. */
	for (e = r->entries; e != NULL; e = e->next) {
		if (e->kind != kind)
			continue;
		if (kind == RTNL_ROUTE)
			err = rtnl_route_req(r, RTM_DELROUTE, 0, e->ifindex, &e->p, e->table);
		else if (kind == RTNL_RULE)
			err = rtnl_rule_talk(r, RTM_DELRULE, 0, &e->rule);
		else
			err = rtnl_addr_req(r, RTM_DELADDR, 0, e->ifindex, &e->p);
		/* The device may be gone already, and with it the entry. */
		if (err < 0 && !rtnl_gone(err)) {
			errno = -err;
			if (kind == RTNL_RULE)
				log_warn("rtnl: cannot remove %s",
				    rtnl_rule_fmt(&e->rule, buf, sizeof(buf)));
			else
				log_warn("rtnl: cannot remove %s %s",
				    kind == RTNL_ROUTE ? "route" : "address",
				    util_prefix_fmt(&e->p, buf, sizeof(buf)));
		}
	}
}

void
rtnl_undo_all(struct rtnl *r)
{
	if (r == NULL)
		return;
	rtnl_undo_kind(r, RTNL_RULE);
	rtnl_undo_kind(r, RTNL_ROUTE);
	rtnl_undo_kind(r, RTNL_ADDR);
	rtnl_entries_free(r);
}

int
rtnl_monitor_open(void)
{
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
		    RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE,
	};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* The address of an RTM_NEWADDR/DELADDR body (blen bytes, at least an
 * ifaddrmsg): IFA_LOCAL, else IFA_ADDRESS.  False if malformed. */
static bool
monitor_addr(const uint8_t *body, size_t blen, const struct ifaddrmsg *ifa, struct ipaddr *a)
{
	size_t off = NLMSG_ALIGN(sizeof(*ifa)), alen = util_addr_len(ifa->ifa_family);
	bool have_local = false, have_any = false;

	memset(a, 0, sizeof(*a));
	while (off + sizeof(struct rtattr) <= blen) {
		struct rtattr rta;

		memcpy(&rta, body + off, sizeof(rta));
		if (rta.rta_len < sizeof(rta) || rta.rta_len > blen - off)
			return false;
		if ((rta.rta_type == IFA_LOCAL || (rta.rta_type == IFA_ADDRESS && !have_local))) {
			if (rta.rta_len - RTA_LENGTH(0) != alen)
				return false;
			memcpy(a->b, body + off + RTA_LENGTH(0), alen);
			have_any = true;
			have_local |= rta.rta_type == IFA_LOCAL;
		}
		off += RTA_ALIGN(rta.rta_len);
	}
	if (!have_any)
		return false;
	a->family = ifa->ifa_family;
	return true;
}

unsigned
rtnl_monitor_parse(const void *buf, size_t len, int ignore_ifindex, rtnl_event_fn *fn, void *arg)
{
	const uint8_t *b = buf;
	unsigned bad = 0;
	size_t off = 0;

	while (len - off >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr h;
		const uint8_t *body;
		size_t blen;
		struct rtnl_event ev;

		memcpy(&h, b + off, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len - off) {
			bad++;
			break;
		}
		body = b + off + NLMSG_HDRLEN;
		blen = h.nlmsg_len - NLMSG_HDRLEN;
		memset(&ev, 0, sizeof(ev));
		switch (h.nlmsg_type) {
		case RTM_NEWADDR:
		case RTM_DELADDR: {
			struct ifaddrmsg ifa;

			if (blen < sizeof(ifa)) {
				bad++;
				break;
			}
			memcpy(&ifa, body, sizeof(ifa));
			if ((ifa.ifa_family != AF_INET && ifa.ifa_family != AF_INET6) ||
			    (int)ifa.ifa_index == ignore_ifindex ||
			    ifa.ifa_scope != RT_SCOPE_UNIVERSE)
				break;
			if (!monitor_addr(body, blen, &ifa, &ev.addr)) {
				bad++;
				break;
			}
			ev.kind = h.nlmsg_type == RTM_NEWADDR ? RTNL_EV_ADDR_NEW : RTNL_EV_ADDR_DEL;
			ev.family = ifa.ifa_family;
			ev.ifindex = (int)ifa.ifa_index;
			fn(arg, &ev);
			break;
		}
		case RTM_NEWROUTE:
		case RTM_DELROUTE: {
			struct rtmsg rtm;

			if (blen < sizeof(rtm)) {
				bad++;
				break;
			}
			memcpy(&rtm, body, sizeof(rtm));
			/* A default route is what decides our path. */
			if ((rtm.rtm_family != AF_INET && rtm.rtm_family != AF_INET6) ||
			    rtm.rtm_dst_len != 0 || rtm.rtm_protocol == RTNL_PROTO_TOUD ||
			    rtm.rtm_type != RTN_UNICAST || rtm.rtm_table == RT_TABLE_LOCAL)
				break;
			ev.kind = RTNL_EV_DEFAULT_ROUTE;
			ev.family = rtm.rtm_family;
			fn(arg, &ev);
			break;
		}
		default:
			break;
		}
		if (NLMSG_ALIGN(h.nlmsg_len) >= len - off)
			break;
		off += NLMSG_ALIGN(h.nlmsg_len);
	}
	return bad;
}

bool
rtnl_monitor_read(int fd, int ignore_ifindex, rtnl_event_fn *fn, void *arg)
{
	uint8_t buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0 || (n < 0 && errno == EINTR)) {
		if (n > 0 && rtnl_monitor_parse(buf, (size_t)n, ignore_ifindex, fn, arg))
			log_debug_rl("rtnetlink monitor: malformed message skipped");
	}
	return n < 0 && errno == ENOBUFS;
}

/* Dump the objects of type (RTM_GETROUTE, RTM_GETRULE) of family
 * (AF_UNSPEC: all) on a socket of its own and call fn for each message
 * until it returns nonzero; that value is returned, 0 at the end of the
 * dump, or -errno. */
typedef int rtnl_msg_fn(void *arg, const struct nlmsghdr *h);

static int
rtnl_dump(int family, uint16_t type, rtnl_msg_fn *fn, void *arg)
{
	/* rtmsg and fib_rule_hdr alike start with the family. */
	struct {
		struct nlmsghdr n;
		struct rtmsg rtm;
	} q = {
		.n = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
		    .nlmsg_type = type, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		    .nlmsg_seq = 1 },
		.rtm = { .rtm_family = (uint8_t)family },
	};
	struct timeval tv = { RTNL_TIMEOUT_S, 0 };
	union {
		uint8_t b[32768];
		struct nlmsghdr align;
	} rbuf;
	int fd, rc = 0;
	ssize_t n;

	if ((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, &q, q.n.nlmsg_len, 0) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	for (;;) {
		size_t left;
		struct nlmsghdr *h;

		if ((n = recv(fd, rbuf.b, sizeof(rbuf.b), 0)) <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		left = (size_t)n;
		for (h = &rbuf.align; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == NLMSG_ERROR) {
				rc = -EIO;
				goto out;
			}
			if ((rc = fn(arg, h)) != 0)
				goto out;
		}
	}
out:
	close(fd);
	return rc;
}

/* One route of a dump. */
struct rtnl_route_info {
	const struct rtmsg *rtm;
	uint32_t table;
	const uint8_t *dst;             /* NULL for a default route */
	size_t dst_len;                 /* bytes at dst */
	uint32_t oif;
};
typedef int rtnl_route_fn(void *arg, const struct rtnl_route_info *ri);

struct rtnl_route_walk {
	rtnl_route_fn *fn;
	void *arg;
};

static int
rtnl_route_msg(void *arg, const struct nlmsghdr *h)
{
	const struct rtnl_route_walk *w = arg;
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct rtnl_route_info ri = { .rtm = rtm };
	const struct rtattr *a;
	size_t alen_left;

	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return 0;
	ri.table = rtm->rtm_table;
	alen_left = h->nlmsg_len - NLMSG_LENGTH(sizeof(*rtm));
	for (a = RTM_RTA(rtm); RTA_OK(a, alen_left); a = RTA_NEXT(a, alen_left)) {
		if (a->rta_type == RTA_DST) {
			ri.dst = RTA_DATA(a);
			ri.dst_len = RTA_PAYLOAD(a);
		} else if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) == 4) {
			memcpy(&ri.oif, RTA_DATA(a), 4);
		} else if (a->rta_type == RTA_TABLE && RTA_PAYLOAD(a) == 4) {
			memcpy(&ri.table, RTA_DATA(a), 4);
		}
	}
	return w->fn(w->arg, &ri);
}

/* Dump the routes of family (AF_UNSPEC: all) through fn (as rtnl_dump). */
static int
rtnl_route_dump(int family, rtnl_route_fn *fn, void *arg)
{
	struct rtnl_route_walk w = { fn, arg };

	return rtnl_dump(family, RTM_GETROUTE, rtnl_route_msg, &w);
}

/* A rule of a dump into *rule and its protocol: false if it is not a
 * "lookup TABLE" rule or is malformed. */
static bool
rtnl_rule_parse(const struct nlmsghdr *h, struct rtnl_rule *rule, uint8_t *proto)
{
	const struct fib_rule_hdr *frh = NLMSG_DATA(h);
	const struct rtattr *a;
	bool range = false;
	size_t left;

	if (h->nlmsg_type != RTM_NEWRULE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*frh)) ||
	    frh->action != FR_ACT_TO_TBL)
		return false;
	memset(rule, 0, sizeof(*rule));
	rule->family = frh->family;
	rule->table = frh->table;
	rule->invert = (frh->flags & FIB_RULE_INVERT) != 0;
	rule->suppress_prefixlen = -1;
	*proto = 0;
	left = h->nlmsg_len - NLMSG_LENGTH(sizeof(*frh));
	for (a = (const struct rtattr *)((const uint8_t *)frh + NLMSG_ALIGN(sizeof(*frh)));
	    RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		uint32_t v = 0;

		if (a->rta_type == FRA_PROTOCOL && RTA_PAYLOAD(a) == 1) {
			*proto = *(const uint8_t *)RTA_DATA(a);
			continue;
		}
		if (a->rta_type == FRA_DPORT_RANGE &&
		    RTA_PAYLOAD(a) == sizeof(struct fib_rule_port_range)) {
			const struct fib_rule_port_range *pr = RTA_DATA(a);

			rule->dport = pr->start;
			if (pr->start != pr->end)
				range = true;   /* none of toud's */
			continue;
		}
		if (RTA_PAYLOAD(a) != 4)
			continue;
		memcpy(&v, RTA_DATA(a), 4);
		if (a->rta_type == FRA_TABLE)
			rule->table = v;
		else if (a->rta_type == FRA_FWMARK)
			rule->fwmark = v;
		else if (a->rta_type == FRA_PRIORITY)
			rule->priority = v;
		else if (a->rta_type == FRA_SUPPRESS_PREFIXLEN)
			rule->suppress_prefixlen = (int)v;
	}
	return !range;
}

struct rtnl_find_arg {
	struct rtnl_rule want;          /* priority 0 */
	uint32_t *prio;
	size_t cap, n;
};

static int
rtnl_rule_find_fn(void *arg, const struct nlmsghdr *h)
{
	struct rtnl_find_arg *f = arg;
	struct rtnl_rule rule;
	uint32_t prio;
	uint8_t proto;

	if (!rtnl_rule_parse(h, &rule, &proto) || proto != RTNL_PROTO_TOUD)
		return 0;
	prio = rule.priority;
	rule.priority = 0;
	if (!rtnl_rule_equal(&rule, &f->want))
		return 0;
	if (f->n < f->cap)
		f->prio[f->n] = prio;
	f->n++;
	return 0;
}

int
rtnl_rule_find(const struct rtnl_rule *rule, uint32_t *prio, size_t cap)
{
	struct rtnl_find_arg f = { .want = *rule, .prio = prio, .cap = cap };
	int rc;

	f.want.priority = 0;
	if ((rc = rtnl_dump(rule->family, RTM_GETRULE, rtnl_rule_find_fn, &f)) < 0)
		return rc;
	return f.n > INT32_MAX ? INT32_MAX : (int)f.n;
}

struct rtnl_owner_arg {
	const struct ipprefix *m;
	uint32_t table;
	char *buf;
	size_t len;
};

static int
rtnl_owner_fn(void *arg, const struct rtnl_route_info *ri)
{
	struct rtnl_owner_arg *o = arg;
	size_t alen = util_addr_len(o->m->addr.family);
	char ifname[IF_NAMESIZE];

	if (ri->rtm->rtm_dst_len != o->m->len || ri->table != o->table ||
	    (o->m->len > 0 && (!ri->dst || ri->dst_len != alen ||
	    memcmp(ri->dst, o->m->addr.b, alen) != 0)))
		return 0;
	if (!ri->oif || !if_indextoname(ri->oif, ifname))
		snprintf(ifname, sizeof(ifname), "?");
	if (ri->rtm->rtm_protocol == RTNL_PROTO_TOUD)
		snprintf(o->buf, o->len, "another toud's (dev %s)", ifname);
	else
		snprintf(o->buf, o->len, "not toud's (dev %s, proto %u)", ifname,
		    ri->rtm->rtm_protocol);
	return 1;
}

/* Who holds the route to m (masked) in the table, for the message when
 * ours cannot be added: "another toud's (dev tou1)" for a route of
 * protocol 116 that is not this handle's, else "not toud's (dev eth0,
 * proto 4)". */
const char *
rtnl_route_owner(const struct ipprefix *m, uint32_t table, char *buf, size_t len)
{
	struct rtnl_owner_arg o = { m, table, buf, len };

	snprintf(buf, len, "not toud's");
	(void)rtnl_route_dump(m->addr.family, rtnl_owner_fn, &o);
	return buf;
}

static int
rtnl_table_fn(void *arg, const struct rtnl_route_info *ri)
{
	/* A drop route of toud's: left by one that was killed. */
	if (ri->rtm->rtm_protocol == RTNL_PROTO_TOUD && ri->rtm->rtm_type == RTN_UNREACHABLE)
		return 0;
	return ri->table == *(const uint32_t *)arg;
}

int
rtnl_table_used(uint32_t table)
{
	return rtnl_route_dump(AF_UNSPEC, rtnl_table_fn, &table);
}
