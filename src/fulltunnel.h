/* fulltunnel.h - routing all of a host's traffic through the tunnel, the
 * way wg-quick does: with table = auto, a prefix of length 0 (0.0.0.0/0,
 * ::/0) is routed in a table of its own, the UDP sockets carry a fwmark,
 * and two rules per family send everything without that mark to the table
 * while the main table keeps its more specific routes:
 *
 *     lookup main suppress_prefixlength 0
 *     not fwmark MARK lookup TABLE
 *
 * The tunnel's own datagrams carry the mark, skip the table and leave by
 * the host's default route.  TABLE is the fwmark when one is set, else the
 * first table from 51820 up that holds no route; the fwmark is then the
 * table number. */
#ifndef TOUD_FULLTUNNEL_H
#define TOUD_FULLTUNNEL_H

#include <stdint.h>

#include "rtnl.h"

struct conf;
struct conf_prefix;
struct toud;
struct xfrm_pol;

/* Before routes of c are installed (start, reload): choose the table of
 * the full tunnel if c needs one and none is chosen yet.  0 or -errno
 * (logged). */
int fulltunnel_prepare(struct toud *t, const struct conf *c);
/* Make the socket mark and the rules match t->conf: the mark before rules
 * are added, after they are removed.  0 or -errno (logged). */
int fulltunnel_apply(struct toud *t);
/* The two rules of a full tunnel of family, in the order they are added
 * (pure).  They carry no priority: like `ip rule add`, the kernel gives
 * each the priority one below that of the rule after "local" (32765, then
 * 32764 on a host with only the default rules), so the second added is
 * consulted first. */
void fulltunnel_rules(int family, uint32_t table, uint32_t fwmark, struct rtnl_rule out[2]);
/* Two more rules, of a full tunnel that fails closed and has name servers
 * (dns), in the order they are added: every packet to port 53 to the
 * tunnel's table, except those with the mark (toud's own, should a peer
 * listen on port 53), which keep to the main table:
 *
 *     fwmark MARK dport 53 lookup main
 *     dport 53 lookup TABLE
 *
 * Added after the two, they are consulted before "lookup main suppress_
 * prefixlength 0": a name server on the local network is reached through
 * the tunnel, not by the main table's on-link route, and while toud is
 * dead (SIGKILL) a query meets the table's drop route instead of leaving
 * in the clear.  ("not fwmark MARK dport 53" would not do: the kernel's
 * "not" inverts the whole rule, so it would match every other port.)
 * Pure. */
void fulltunnel_dns_rules(int family, uint32_t table, uint32_t fwmark, struct rtnl_rule out[2]);
/* The xfrm policies (xfrm.h) that come with the DNS rules, for what the
 * rules cannot hold: a socket bound to a device (SO_BINDTODEVICE,
 * IP_UNICAST_IF, as systemd-resolved binds its queries to another link's
 * name servers) whose route lookup fails is sent on that device anyway,
 * so while toud is dead the drop route would not stop it.  For UDP and
 * then TCP: port 53 is allowed with the mark, through the loopback device
 * and from the tunnel's addresses of family (addr: [interface] address;
 * the first FULLTUNNEL_XFRM_ADDRS), and blocked otherwise.  Written into
 * out up to cap; the number there are.  Pure. */
#define FULLTUNNEL_XFRM_ADDRS 4
#define FULLTUNNEL_XFRM_MAX (2 * (3 + FULLTUNNEL_XFRM_ADDRS))
size_t fulltunnel_dns_policies(int family, uint32_t fwmark, const struct conf_prefix *addr,
    size_t n_addr, struct xfrm_pol *out, size_t cap);
/* At exit, before the rules go: remove the xfrm policies. */
void fulltunnel_release(struct toud *t);

#endif
