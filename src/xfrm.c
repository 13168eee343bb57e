/* xfrm.c - the policies of xfrm.h over a NETLINK_XFRM socket. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/xfrm.h>

#include "rtnl.h"
#include "xfrm.h"

struct xfrm {
	int fd;
	uint32_t seq;
};

/* A request: header, the policy or its id, and the mark. */
struct xfrm_req {
	struct nlmsghdr n;
	union {
		struct xfrm_userpolicy_info info;
		struct xfrm_userpolicy_id id;
	};
	uint8_t attrs[64];
};

struct xfrm *
xfrm_open(void)
{
	struct xfrm *x;
	int fd;

	if ((fd = rtnl_socket(NETLINK_XFRM)) < 0) {
		errno = -fd;
		return NULL;
	}
	if ((x = calloc(1, sizeof(*x))) == NULL) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	x->fd = fd;
	x->seq = (uint32_t)util_now_ms();
	return x;
}

void
xfrm_close(struct xfrm *x)
{
	if (!x)
		return;
	close(x->fd);
	free(x);
}

static void
xfrm_selector(const struct xfrm_pol *p, struct xfrm_selector *sel)
{
	memset(sel, 0, sizeof(*sel));
	sel->family = (uint16_t)p->family;
	sel->proto = p->proto;
	sel->dport = htons(p->dport);
	sel->dport_mask = p->dport ? 0xffff : 0;
	sel->ifindex = p->ifindex;
	if (p->src.family) {
		memcpy(&sel->saddr, p->src.b, util_addr_len(p->src.family));
		sel->prefixlen_s = (uint8_t)(util_addr_len(p->src.family) * 8);
	}
}

/* The request of type with the body of blen bytes already in q, and the
 * mark attribute when the policy has one. */
static int
xfrm_talk(struct xfrm *x, struct xfrm_req *q, uint16_t type, size_t blen,
    const struct xfrm_pol *p)
{
	struct xfrm_mark mark = { .v = p->fwmark, .m = 0xffffffff };
	struct nlattr *a;

	q->n.nlmsg_len = (uint32_t)NLMSG_LENGTH(blen);
	q->n.nlmsg_type = type;
	q->n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	if (p->fwmark) {
		a = (struct nlattr *)((uint8_t *)q + NLMSG_ALIGN(q->n.nlmsg_len));
		a->nla_type = XFRMA_MARK;
		a->nla_len = (uint16_t)NLA_HDRLEN + sizeof(mark);
		memcpy((uint8_t *)a + NLA_HDRLEN, &mark, sizeof(mark));
		q->n.nlmsg_len = NLMSG_ALIGN(q->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
	}
	return rtnl_fd_talk(x->fd, &q->n, ++x->seq);
}

int
xfrm_policy_put(struct xfrm *x, const struct xfrm_pol *p)
{
	struct xfrm_req q;

	memset(&q, 0, sizeof(q));
	xfrm_selector(p, &q.info.sel);
	q.info.lft.soft_byte_limit = XFRM_INF;
	q.info.lft.hard_byte_limit = XFRM_INF;
	q.info.lft.soft_packet_limit = XFRM_INF;
	q.info.lft.hard_packet_limit = XFRM_INF;
	q.info.priority = p->priority;
	q.info.dir = XFRM_POLICY_OUT;
	q.info.action = p->block ? XFRM_POLICY_BLOCK : XFRM_POLICY_ALLOW;
	q.info.share = XFRM_SHARE_ANY;
	return xfrm_talk(x, &q, XFRM_MSG_UPDPOLICY, sizeof(q.info), p);
}

int
xfrm_policy_del(struct xfrm *x, const struct xfrm_pol *p)
{
	struct xfrm_req q;

	memset(&q, 0, sizeof(q));
	xfrm_selector(p, &q.id.sel);
	q.id.dir = XFRM_POLICY_OUT;
	return xfrm_talk(x, &q, XFRM_MSG_DELPOLICY, sizeof(q.id), p);
}

const char *
xfrm_pol_fmt(const struct xfrm_pol *p, char *buf, size_t len)
{
	char mark[24] = "", src[UTIL_ADDRSTRLEN + 8] = "", dev[24] = "", a[UTIL_ADDRSTRLEN];

	if (p->fwmark)
		snprintf(mark, sizeof(mark), " mark 0x%x", (unsigned)p->fwmark);
	if (p->src.family)
		snprintf(src, sizeof(src), " from %s", util_addr_fmt(&p->src, a, sizeof(a)));
	if (p->ifindex)
		snprintf(dev, sizeof(dev), " dev %d", p->ifindex);
	snprintf(buf, len, "xfrm policy out %s %s dport %u%s%s%s priority %u",
	    p->block ? "block" : "allow", p->proto == IPPROTO_TCP ? "tcp" : "udp",
	    (unsigned)p->dport, mark, src, dev, (unsigned)p->priority);
	return buf;
}
