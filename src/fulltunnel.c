/* fulltunnel.c - the table, rules and socket mark of a full tunnel (see
 * fulltunnel.h).  The routes themselves are the peers' (peer_install()),
 * placed by conf_route_table(). */
#include <errno.h>
#include <string.h>

#include "conf.h"
#include "ctx.h"
#include "fulltunnel.h"
#include "log.h"
#include "rtnl.h"
#include "tcp.h"
#include "udp.h"
#include "xfrm.h"

/* How many tables table = auto tries from CONF_TABLE_AUTO_FIRST up. */
#define FULLTUNNEL_TABLE_TRIES 1000
/* Stale rule pairs removed at most per family and start. */
#define FULLTUNNEL_STALE_MAX 16
#define FULLTUNNEL_DNS_PORT 53
/* The xfrm policies' priorities (xfrm.h): the allowing ones first. */
#define FULLTUNNEL_XFRM_ALLOW 116
#define FULLTUNNEL_XFRM_BLOCK 117
/* The loopback device's index, in every network namespace. */
#define FULLTUNNEL_LOOPBACK 1

void
fulltunnel_rules(int family, uint32_t table, uint32_t fwmark, struct rtnl_rule out[2])
{
	memset(out, 0, 2 * sizeof(*out));
	out[0].family = family;
	out[0].table = table;
	out[0].fwmark = fwmark;
	out[0].invert = true;
	out[0].suppress_prefixlen = -1;
	out[1].family = family;
	out[1].table = CONF_TABLE_MAIN;
	out[1].suppress_prefixlen = 0;
}

void
fulltunnel_dns_rules(int family, uint32_t table, uint32_t fwmark, struct rtnl_rule out[2])
{
	memset(out, 0, 2 * sizeof(*out));
	out[0].family = family;
	out[0].table = table;
	out[0].suppress_prefixlen = -1;
	out[0].dport = FULLTUNNEL_DNS_PORT;
	out[1] = out[0];
	out[1].table = CONF_TABLE_MAIN;
	out[1].fwmark = fwmark;
}

int
fulltunnel_prepare(struct toud *t, const struct conf *c)
{
	uint32_t table;
	int rc;

	if (!conf_full_tunnel(c, AF_INET) && !conf_full_tunnel(c, AF_INET6))
		return 0;
	if (c->iface.fwmark) {
		t->full_table = c->iface.fwmark;
		return 0;
	}
	if (t->full_table)
		return 0;
	if (!t->rtnl) {                 /* no kernel (unit tests) */
		t->full_table = CONF_TABLE_AUTO_FIRST;
		return 0;
	}
	for (table = CONF_TABLE_AUTO_FIRST;
	    table < CONF_TABLE_AUTO_FIRST + FULLTUNNEL_TABLE_TRIES; table++) {
		if ((rc = rtnl_table_used(table)) < 0) {
			(t->starting ? log_errx : log_warnx)("full tunnel: cannot list the routes of table %u: %s", table,
			    strerror(-rc));
			return rc;
		}
		if (rc == 0) {
			t->full_table = table;
			return 0;
		}
	}
	(t->starting ? log_errx : log_warnx)("full tunnel: tables %u to %u all hold routes; set 'fwmark' in [interface] "
	    "to choose the table", CONF_TABLE_AUTO_FIRST,
	    CONF_TABLE_AUTO_FIRST + FULLTUNNEL_TABLE_TRIES - 1);
	return -EBUSY;
}

static int
fulltunnel_mark(struct toud *t, uint32_t mark)
{
	int rc;

	if (mark == t->fwmark || !t->udp)
		return 0;
	if ((rc = udp_set_mark(t->udp, mark)) < 0) {
		(t->starting ? log_errx : log_warnx)("udp sockets: cannot set fwmark 0x%x: %s%s", mark, strerror(-rc),
		    rc == -EPERM ? " (SO_MARK needs CAP_NET_ADMIN)" : "");
		return rc;
	}
	/* The TCP transport's too: a full tunnel on TCP would carry itself. */
	if ((rc = tcp_set_mark(t, mark)) < 0) {
		(t->starting ? log_errx : log_warnx)("tcp listener: cannot set fwmark 0x%x: %s",
		    mark, strerror(-rc));
		(void)udp_set_mark(t->udp, t->fwmark);
		return rc;
	}
	t->fwmark = mark;
	return 0;
}

/* At start a failure is fatal (err); on reload it is not. */
#define FULLTUNNEL_SAY(t) \
	void (*say)(const char *, ...) __attribute__((format(printf, 1, 2))) = \
	    (t)->starting ? log_errx : log_warnx

static const char *
family_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

/* Add or remove the drop route of family (rtnl.h).  Only the add fails. */
static int
fulltunnel_drop(struct toud *t, int family, bool want)
{
	FULLTUNNEL_SAY(t);
	int rc;

	if (!want) {
		if ((rc = rtnl_drop_del(t->rtnl, family, t->full_table)) < 0)
			log_warnx("full tunnel: cannot remove the %s drop route of table %u: %s",
			    family_name(family), t->full_table, strerror(-rc));
		return 0;
	}
	if ((rc = rtnl_drop_add(t->rtnl, family, t->full_table)) < 0)
		say("full tunnel: cannot add the %s drop route to table %u: %s",
		    family_name(family), t->full_table, strerror(-rc));
	else if (rc == 2)
		log_info("full tunnel: the %s drop route in table %u, left by a toud that "
		    "did not stop cleanly, is taken over", family_name(family), t->full_table);
	return rc < 0 ? rc : 0;
}

/* Remove the rules equal to rules[] that the kernel held before ours were
 * added (their priorities in stale[]): a toud that was killed left them.
 * For each such "not fwmark" rule one suppressing rule goes too, the one
 * just above it when there is one (they were added as a pair). */
static void
fulltunnel_unstale(struct toud *t, const struct rtnl_rule rules[2],
    const uint32_t *inv, int n_inv, uint32_t *sup, int n_sup)
{
	struct rtnl_rule r;
	char buf[96];
	int i, j, rc;

	for (i = 0; i < n_inv; i++) {
		r = rules[0];
		r.priority = inv[i];
		if ((rc = rtnl_rule_del(t->rtnl, &r)) < 0 && rc != -ENOENT)
			log_warnx("full tunnel: cannot remove the stale %s (priority %u): %s",
			    rtnl_rule_fmt(&r, buf, sizeof(buf)), (unsigned)r.priority, strerror(-rc));
		for (j = 0; j < n_sup && sup[j] != inv[i] - 1; j++)
			;
		if (j == n_sup)
			for (j = 0; j < n_sup && !sup[j]; j++)
				;
		if (j == n_sup)
			continue;
		r = rules[1];
		r.priority = sup[j];
		sup[j] = 0;             /* used */
		if ((rc = rtnl_rule_del(t->rtnl, &r)) < 0 && rc != -ENOENT)
			log_warnx("full tunnel: cannot remove the stale %s (priority %u): %s",
			    rtnl_rule_fmt(&r, buf, sizeof(buf)), (unsigned)r.priority, strerror(-rc));
	}
	if (n_inv > 0)
		log_info("full tunnel: %d stale %s rule pair%s for table %u removed", n_inv,
		    family_name(rules[0].family), n_inv == 1 ? "" : "s", t->full_table);
}

/* Add the rules of one family; earlier copies for the same table go once
 * ours are in place, so the table is never without rules. */
static int
fulltunnel_rules_add(struct toud *t, int family)
{
	struct rtnl_rule rules[2];
	uint32_t inv[FULLTUNNEL_STALE_MAX], sup[FULLTUNNEL_STALE_MAX];
	int n_inv, n_sup, rc, i;
	char buf[96];
	FULLTUNNEL_SAY(t);

	fulltunnel_rules(family, t->full_table, t->fwmark, rules);
	n_inv = rtnl_rule_find(&rules[0], inv, FULLTUNNEL_STALE_MAX);
	n_sup = rtnl_rule_find(&rules[1], sup, FULLTUNNEL_STALE_MAX);
	if (n_inv < 0 || n_sup < 0) {
		log_warnx("full tunnel: cannot list the %s rules: %s", family_name(family),
		    strerror(n_inv < 0 ? -n_inv : -n_sup));
		n_inv = n_sup = 0;
	}
	for (i = 0; i < 2; i++) {
		if ((rc = rtnl_rule_add(t->rtnl, &rules[i])) < 0) {
			say("full tunnel: cannot add the %s: %s",
			    rtnl_rule_fmt(&rules[i], buf, sizeof(buf)), strerror(-rc));
			if (i == 1)
				rtnl_rule_del(t->rtnl, &rules[0]);
			return rc;
		}
	}
	fulltunnel_unstale(t, rules, inv, n_inv < FULLTUNNEL_STALE_MAX ? n_inv : FULLTUNNEL_STALE_MAX,
	    sup, n_sup < FULLTUNNEL_STALE_MAX ? n_sup : FULLTUNNEL_STALE_MAX);
	log_info("full tunnel: %s default route in table %u, rules for fwmark 0x%x added",
	    family_name(family), t->full_table, t->fwmark);
	return 0;
}

static void
fulltunnel_rules_del(struct toud *t, int family)
{
	struct rtnl_rule rules[2];
	char buf[96];
	int rc, i;

	fulltunnel_rules(family, t->full_table, t->fwmark, rules);
	for (i = 1; i >= 0; i--)
		if ((rc = rtnl_rule_del(t->rtnl, &rules[i])) < 0)
			log_warnx("full tunnel: cannot remove the %s: %s",
			    rtnl_rule_fmt(&rules[i], buf, sizeof(buf)), strerror(-rc));
	log_info("full tunnel: %s rules removed", family_name(family));
}

size_t
fulltunnel_dns_policies(int family, uint32_t fwmark, const struct conf_prefix *addr, size_t n_addr,
    struct xfrm_pol *out, size_t cap)
{
	static const uint8_t protos[] = { IPPROTO_UDP, IPPROTO_TCP };
	struct xfrm_pol base;
	size_t n = 0, i, k, a;

	for (k = 0; k < ARRAY_SIZE(protos); k++) {
		memset(&base, 0, sizeof(base));
		base.family = family;
		base.proto = protos[k];
		base.dport = FULLTUNNEL_DNS_PORT;
		base.priority = FULLTUNNEL_XFRM_ALLOW;
		if (n < cap) {                          /* toud's own */
			out[n] = base;
			out[n].fwmark = fwmark;
		}
		n++;
		if (n < cap) {                          /* a resolver on this host */
			out[n] = base;
			out[n].ifindex = FULLTUNNEL_LOOPBACK;
		}
		n++;
		for (i = 0, a = 0; i < n_addr && a < FULLTUNNEL_XFRM_ADDRS; i++) {
			if (addr[i].p.addr.family != family)
				continue;
			if (n < cap) {                  /* into the tunnel */
				out[n] = base;
				out[n].src = addr[i].p.addr;
			}
			n++;
			a++;
		}
		if (n < cap) {                          /* anything else */
			out[n] = base;
			out[n].priority = FULLTUNNEL_XFRM_BLOCK;
			out[n].block = true;
		}
		n++;
	}
	return n;
}

/* Put (want) or remove the xfrm policies of family's DNS rules; a failed
 * put is logged and returned, with the ones it put removed again (nothing
 * else would: the caller does not count them in), a failed removal
 * logged. */
static int
fulltunnel_dns_xfrm(struct toud *t, int family, bool want)
{
	struct xfrm_pol pol[FULLTUNNEL_XFRM_MAX];
	size_t n, i;
	char buf[160];
	int rc;
	FULLTUNNEL_SAY(t);

	n = fulltunnel_dns_policies(family, t->fwmark, t->conf->iface.address,
	    t->conf->iface.n_address, pol, ARRAY_SIZE(pol));
	if (!t->xfrm && !(t->xfrm = xfrm_open())) {
		rc = -errno;
		if (want)
			say("full tunnel: cannot open the xfrm netlink socket: %s", strerror(-rc));
		return want ? rc : 0;
	}
	/* The allowing ones before the blocking ones go in, after them out. */
	for (i = 0; i < n; i++) {
		const struct xfrm_pol *p = &pol[want ? i : n - 1 - i];

		if (!want) {
			if ((rc = xfrm_policy_del(t->xfrm, p)) < 0 && rc != -ENOENT)
				log_warnx("full tunnel: cannot remove the %s: %s",
				    xfrm_pol_fmt(p, buf, sizeof(buf)), strerror(-rc));
		} else if ((rc = xfrm_policy_put(t->xfrm, p)) < 0) {
			say("full tunnel: cannot add the %s: %s", xfrm_pol_fmt(p, buf, sizeof(buf)),
			    strerror(-rc));
			while (i-- > 0)
				(void)xfrm_policy_del(t->xfrm, &pol[i]);
			return rc;
		}
	}
	return 0;
}

/* Add or remove the DNS rules of family (fulltunnel.h); earlier copies,
 * left by a toud that was killed, go once ours are in place. */
static int
fulltunnel_dns(struct toud *t, int family, bool want, bool *have)
{
	uint32_t stale[2][FULLTUNNEL_STALE_MAX];
	struct rtnl_rule rules[2], old;
	int n[2], i, k, rc;
	char buf[96];
	FULLTUNNEL_SAY(t);

	if (want == *have)
		return 0;
	fulltunnel_dns_rules(family, t->full_table, t->fwmark, rules);
	if (!want) {
		for (i = 1; i >= 0; i--)
			if ((rc = rtnl_rule_del(t->rtnl, &rules[i])) < 0)
				log_warnx("full tunnel: cannot remove the %s: %s",
				    rtnl_rule_fmt(&rules[i], buf, sizeof(buf)), strerror(-rc));
		fulltunnel_dns_xfrm(t, family, false);
		log_info("full tunnel: %s DNS rules and xfrm policies removed", family_name(family));
		*have = false;
		return 0;
	}
	for (i = 0; i < 2; i++)
		if ((n[i] = rtnl_rule_find(&rules[i], stale[i], FULLTUNNEL_STALE_MAX)) < 0)
			n[i] = 0;
	for (i = 0; i < 2; i++) {
		if ((rc = rtnl_rule_add(t->rtnl, &rules[i])) < 0) {
			say("full tunnel: cannot add the %s: %s", rtnl_rule_fmt(&rules[i], buf,
			    sizeof(buf)), strerror(-rc));
			if (i == 1)
				rtnl_rule_del(t->rtnl, &rules[0]);
			return rc;
		}
	}
	/* xfrm policies replace those left by a toud that was killed. */
	if ((rc = fulltunnel_dns_xfrm(t, family, true)) < 0) {
		for (i = 1; i >= 0; i--)
			rtnl_rule_del(t->rtnl, &rules[i]);
		return rc;
	}
	*have = true;
	for (i = 0; i < 2; i++)
		for (k = 0; k < n[i] && k < FULLTUNNEL_STALE_MAX; k++) {
			old = rules[i];
			old.priority = stale[i][k];
			if ((rc = rtnl_rule_del(t->rtnl, &old)) < 0 && rc != -ENOENT)
				log_warnx("full tunnel: cannot remove the stale %s (priority %u): "
				    "%s", rtnl_rule_fmt(&old, buf, sizeof(buf)),
				    (unsigned)old.priority, strerror(-rc));
		}
	log_info("full tunnel: %s DNS rules added: port %d goes to table %u unless marked "
	    "0x%x, and leaves by no other device than the tunnel's%s", family_name(family),
	    FULLTUNNEL_DNS_PORT, t->full_table, t->fwmark,
	    n[0] + n[1] > 0 ? " (stale copies removed)" : "");
	return 0;
}

/* Make the rules and the drop route of one family match want: the drop
 * route goes in before the rules and out after them, so the rules never
 * send traffic to a table that would let it fall through to the main
 * table. */
static int
fulltunnel_family(struct toud *t, int family, bool want, bool *have, bool *have_dns)
{
	bool drop = want && !t->conf->iface.fail_open;
	int rc = 0;

	if (!t->rtnl)
		return 0;
	if (drop && (rc = fulltunnel_drop(t, family, true)) < 0)
		return rc;
	/* the DNS rules out before the two, in after them */
	if (!(drop && t->conf->iface.n_dns))
		fulltunnel_dns(t, family, false, have_dns);
	if (want && !*have) {
		if ((rc = fulltunnel_rules_add(t, family)) < 0)
			return rc;
		*have = true;
	} else if (!want && *have) {
		fulltunnel_rules_del(t, family);
		*have = false;
	}
	if (drop && t->conf->iface.n_dns && (rc = fulltunnel_dns(t, family, true, have_dns)) < 0)
		return rc;
	if (!drop && t->full_table)
		fulltunnel_drop(t, family, false);
	return 0;
}

void
fulltunnel_release(struct toud *t)
{
	if (t->full_dns4 && t->conf)
		fulltunnel_dns_xfrm(t, AF_INET, false);
	if (t->full_dns6 && t->conf)
		fulltunnel_dns_xfrm(t, AF_INET6, false);
	xfrm_close(t->xfrm);
	t->xfrm = NULL;
}

int
fulltunnel_apply(struct toud *t)
{
	uint32_t mark = conf_effective_fwmark(t->conf, t->full_table);
	int rc, rc6;

	/* Marked before the rules send everything else into the tunnel. */
	if (mark && (rc = fulltunnel_mark(t, mark)) < 0)
		return rc;
	rc = fulltunnel_family(t, AF_INET, conf_full_tunnel(t->conf, AF_INET), &t->full4,
	    &t->full_dns4);
	rc6 = fulltunnel_family(t, AF_INET6, conf_full_tunnel(t->conf, AF_INET6), &t->full6,
	    &t->full_dns6);
	if (rc == 0)
		rc = rc6;
	if (!mark && !t->full4 && !t->full6 && (rc6 = fulltunnel_mark(t, 0)) < 0 && rc == 0)
		rc = rc6;
	return rc;
}
