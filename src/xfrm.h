/* xfrm.h - outgoing-flow policies of the kernel's IPsec layer (NETLINK_XFRM)
 * used as a filter, without any IPsec: a "block" policy refuses the flows
 * its selector matches (the sender gets EPERM), an "allow" one of a
 * smaller priority number lets some of them through.  The kernel consults
 * them after routing, with the output device known, so they also hold
 * for sockets bound to a device, which a failed route lookup would send
 * on that device anyway; and they stay when toud is killed. */
#ifndef TOUD_XFRM_H
#define TOUD_XFRM_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* One policy on outgoing flows of family to port dport of protocol proto
 * (IPPROTO_UDP, IPPROTO_TCP); it matches only flows with mark fwmark (0:
 * any), from src (family 0: any), leaving by ifindex (0: any). */
struct xfrm_pol {
	int family;
	uint8_t proto;
	uint16_t dport;
	uint32_t fwmark;
	struct ipaddr src;
	int ifindex;
	uint32_t priority;              /* the smaller, the earlier consulted */
	bool block;                     /* else allow */
};

struct xfrm;

struct xfrm *xfrm_open(void);                     /* NULL with errno */
void xfrm_close(struct xfrm *x);
/* Add the policy, or replace the one with the same selector and mark: 0 or
 * -errno. */
int xfrm_policy_put(struct xfrm *x, const struct xfrm_pol *p);
/* Remove it: 0, -ENOENT when there is none, or -errno. */
int xfrm_policy_del(struct xfrm *x, const struct xfrm_pol *p);
/* "block udp dport 53 mark 0xca6c from 10.77.0.1 dev 1 priority 116" */
const char *xfrm_pol_fmt(const struct xfrm_pol *p, char *buf, size_t len);

#endif
