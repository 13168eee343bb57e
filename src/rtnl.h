/* rtnl.h - the little rtnetlink toud needs: link up and MTU, addresses on
 * the TUN, routes via the TUN, and removal of exactly what it installed. */
#ifndef TOUD_RTNL_H
#define TOUD_RTNL_H

#include "util.h"

struct rtnl;

struct rtnl *rtnl_open(void);                     /* NULL with errno */
void rtnl_close(struct rtnl *r);                  /* does not undo anything */
int rtnl_link_set(struct rtnl *r, int ifindex, unsigned mtu, bool up);
/* Add an address with its prefix length (IPv6 without DAD). */
int rtnl_addr_add(struct rtnl *r, int ifindex, const struct ipprefix *p);
int rtnl_addr_del(struct rtnl *r, int ifindex, const struct ipprefix *p);
/* Add a route for p via ifindex; -EEXIST when a route for p exists already
 * (ours or not: the caller names it).  Each route added is remembered. */
int rtnl_route_add(struct rtnl *r, int ifindex, const struct ipprefix *p);
int rtnl_route_del(struct rtnl *r, int ifindex, const struct ipprefix *p);
/* Remove every route and address this handle added, in reverse order. */
void rtnl_undo_all(struct rtnl *r);

/* Link, address and default-route changes of the host: a netlink socket
 * (non-blocking) subscribed to them, and a reader that drains it and says
 * what changed (events about ignore_ifindex, our own TUN, are left out). */
#define RTNL_EV_ADDR 1u
#define RTNL_EV_ROUTE 2u
#define RTNL_EV_LINK 4u
int rtnl_monitor_open(void);                        /* fd or -errno */
unsigned rtnl_monitor_read(int fd, int ignore_ifindex);

#endif
