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
#include "udp.h"

/* How many tables table = auto tries from CONF_TABLE_AUTO_FIRST up. */
#define FULLTUNNEL_TABLE_TRIES 1000

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
	t->fwmark = mark;
	return 0;
}

/* Add or remove the rules of one family. */
static int
fulltunnel_family(struct toud *t, int family, bool want, bool *have)
{
	struct rtnl_rule rules[2];
	char buf[96];
	int rc = 0, i;

	/* At start a failure is fatal (err); on reload it is not. */
	void (*say)(const char *, ...) __attribute__((format(printf, 1, 2))) =
	    t->starting ? log_errx : log_warnx;

	if (want == *have || !t->rtnl)
		return 0;
	fulltunnel_rules(family, t->full_table, t->fwmark, rules);
	if (!want) {
		for (i = 1; i >= 0; i--)
			if ((rc = rtnl_rule_del(t->rtnl, &rules[i])) < 0)
				log_warnx("full tunnel: cannot remove the %s: %s",
				    rtnl_rule_fmt(&rules[i], buf, sizeof(buf)), strerror(-rc));
		*have = false;
		log_info("full tunnel: %s rules removed", family == AF_INET ? "IPv4" : "IPv6");
		return 0;
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
	*have = true;
	log_info("full tunnel: %s default route in table %u, rules for fwmark 0x%x added",
	    family == AF_INET ? "IPv4" : "IPv6", t->full_table, t->fwmark);
	return 0;
}

int
fulltunnel_apply(struct toud *t)
{
	uint32_t mark = conf_effective_fwmark(t->conf, t->full_table);
	int rc, rc6;

	/* Marked before the rules send everything else into the tunnel. */
	if (mark && (rc = fulltunnel_mark(t, mark)) < 0)
		return rc;
	rc = fulltunnel_family(t, AF_INET, conf_full_tunnel(t->conf, AF_INET), &t->full4);
	rc6 = fulltunnel_family(t, AF_INET6, conf_full_tunnel(t->conf, AF_INET6), &t->full6);
	if (rc == 0)
		rc = rc6;
	if (!mark && !t->full4 && !t->full6 && (rc6 = fulltunnel_mark(t, 0)) < 0 && rc == 0)
		rc = rc6;
	return rc;
}
