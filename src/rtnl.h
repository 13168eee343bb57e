/* rtnl.h - the little rtnetlink toud needs: link up and MTU, addresses on
 * the TUN, routes via the TUN, the policy rules of a full tunnel, and
 * removal of exactly what it installed. */
#ifndef TOUD_RTNL_H
#define TOUD_RTNL_H

#include <sys/types.h>

#include "util.h"

/* A routing policy rule: "[not] [fwmark M] lookup TABLE
 * [suppress_prefixlength N]", as `ip rule` writes it. */
struct rtnl_rule {
	int family;                     /* AF_INET or AF_INET6 */
	uint32_t table;
	uint32_t fwmark;                /* 0: the rule matches any mark */
	bool invert;                    /* "not": needs a fwmark */
	int suppress_prefixlen;         /* -1: none */
	uint16_t dport;                 /* a destination port (any protocol); 0: any */
	uint32_t priority;              /* 0: none (add: the kernel's choice; delete: the first) */
};

struct rtnl;

struct rtnl *rtnl_open(void);                     /* NULL with errno */
/* A netlink socket of protocol (NETLINK_ROUTE, NETLINK_XFRM), bound, with
 * rtnl's receive timeout: the fd or -errno. */
int rtnl_socket(int protocol);
struct nlmsghdr;
/* Send the request n (NLM_F_ACK set) on a socket of rtnl_socket() with
 * sequence number seq and wait for its ack: 0 or the kernel's -errno. */
int rtnl_fd_talk(int fd, struct nlmsghdr *n, uint32_t seq);
void rtnl_close(struct rtnl *r);                  /* does not undo anything */
int rtnl_link_set(struct rtnl *r, int ifindex, unsigned mtu, bool up);
/* Add an address with its prefix length (IPv6 without DAD). */
int rtnl_addr_add(struct rtnl *r, int ifindex, const struct ipprefix *p);
int rtnl_addr_del(struct rtnl *r, int ifindex, const struct ipprefix *p);
/* Add a route for p via ifindex in routing table `table` (254 is main);
 * -EEXIST when a route for p exists there already (ours or not: the caller
 * names it).  Each route added is remembered. */
int rtnl_route_add(struct rtnl *r, int ifindex, const struct ipprefix *p, uint32_t table);
int rtnl_route_del(struct rtnl *r, int ifindex, const struct ipprefix *p, uint32_t table);
/* Whose is the route to the masked prefix m in the table, in words for a
 * message ("another toud's (dev tou1)", "not toud's (dev eth0, proto 4)"). */
const char *rtnl_route_owner(const struct ipprefix *m, uint32_t table, char *buf, size_t len);
/* Whether any route of any family is in the table: 1, 0 or -errno.  The
 * drop routes of toud's below do not count: a toud that was killed left
 * them, and the table is free for the next one, which adopts them. */
int rtnl_table_used(uint32_t table);
/* The drop route of a full tunnel in table: "unreachable default proto 116
 * metric 4294967295".  Tied to no device, it outlives the TUN, so that
 * when toud dies traffic the rules send to the table is refused instead of
 * leaving by the main table.  The highest metric puts it behind any route
 * for the same prefix.  Add: 1 when added, 2 when one was there already
 * and is now this handle's (a killed toud's), 0 when this handle has it,
 * or -errno; remembered either way.  Delete: 0 (nothing to do when this
 * handle has none) or -errno. */
int rtnl_drop_add(struct rtnl *r, int family, uint32_t table);
int rtnl_drop_del(struct rtnl *r, int family, uint32_t table);
/* Add (without NLM_F_EXCL: the same rule may serve two tunnels, and each
 * removes its own copy) or remove a rule of protocol 116.  Each rule added
 * is remembered. */
int rtnl_rule_add(struct rtnl *r, const struct rtnl_rule *rule);
/* With a priority, exactly that rule is removed (not one this handle
 * added: those carry none). */
int rtnl_rule_del(struct rtnl *r, const struct rtnl_rule *rule);
/* The rules of protocol 116 in the kernel equal to rule but for priority:
 * their count (at most cap priorities go to prio), or -errno. */
int rtnl_rule_find(const struct rtnl_rule *rule, uint32_t *prio, size_t cap);
/* The request rtnl_rule_add() (add) or rtnl_rule_del() sends, into buf
 * (pure): its length, -EINVAL for a rule that makes no sense, -EMSGSIZE
 * when cap is too small. */
ssize_t rtnl_rule_msg(void *buf, size_t cap, bool add, const struct rtnl_rule *rule);
/* "IPv4 rule not fwmark 0xca6c lookup 51820" for messages. */
const char *rtnl_rule_fmt(const struct rtnl_rule *rule, char *buf, size_t len);
/* Remove every rule, route and address this handle added, in reverse
 * order. */
void rtnl_undo_all(struct rtnl *r);

/* Changes of the host that can move the local address our sockets use: a
 * netlink socket (non-blocking) subscribed to address and route events,
 * and a parser that reports
 *   - a global-scope address added or removed (not on ignore_ifindex, our
 *     own TUN; link-local and host addresses are never a tunnel's source);
 *   - a default route added or removed by someone other than toud.
 * Link events are not reported: a link that matters changes an address or
 * a route.  Every message's length is checked against its type, and every
 * attribute against the message, before use. */
enum rtnl_ev_kind {
	RTNL_EV_ADDR_NEW,
	RTNL_EV_ADDR_DEL,
	RTNL_EV_DEFAULT_ROUTE,
};
struct rtnl_event {
	enum rtnl_ev_kind kind;
	int family;                     /* AF_INET or AF_INET6 */
	int ifindex;
	struct ipaddr addr;             /* address events */
};
typedef void rtnl_event_fn(void *arg, const struct rtnl_event *ev);

int rtnl_monitor_open(void);                        /* fd or -errno */
/* Parse one datagram of rtnetlink messages (pure).  Returns how many
 * messages were malformed and skipped; parsing stops at a header that does
 * not fit. */
unsigned rtnl_monitor_parse(const void *buf, size_t len, int ignore_ifindex,
    rtnl_event_fn *fn, void *arg);
/* Drain the socket through rtnl_monitor_parse().  Returns true when the
 * kernel dropped events (ENOBUFS): then anything may have changed. */
bool rtnl_monitor_read(int fd, int ignore_ifindex, rtnl_event_fn *fn, void *arg);

#endif
