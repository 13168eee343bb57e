/* peer.c - peers: creation from the configuration, lookup, accounting and
 * state changes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "dtls.h"
#include "log.h"
#include "notify.h"
#include "peer.h"
#include "prefix.h"
#include "resolve.h"
#include "rtnl.h"
#include "tx.h"
#include "session.h"
#include "toud.h"
#include "tun.h"

static const char *const state_names[] = {
	[PEER_IDLE] = "idle",
	[PEER_HANDSHAKING] = "handshaking",
	[PEER_UP] = "up",
	[PEER_DEAD] = "dead",
};

const char *
peer_state_name(enum peer_state s)
{
	return (unsigned)s < ARRAY_SIZE(state_names) ? state_names[s] : "unknown";
}

/* Point p at its (new) configuration and take what derives from it. */
static void
peer_take_conf(struct peer *p, const struct conf_peer *cf)
{
	size_t i;

	p->cf = cf;
	p->name = cf->name;
	memset(&p->addr4, 0, sizeof(p->addr4));
	memset(&p->addr6, 0, sizeof(p->addr6));
	for (i = 0; i < cf->n_address; i++) {
		const struct ipaddr *a = &cf->address[i].p.addr;
		if (a->family == AF_INET && !p->addr4.family)
			p->addr4 = *a;
		else if (a->family == AF_INET6 && !p->addr6.family)
			p->addr6 = *a;
	}
}

int
peer_reconfigure(struct peer *p, const struct conf_peer *cf)
{
	bool changed = !conf_peer_equal(p->cf, cf);
	bool endpoint_changed = changed && (!p->cf->endpoint_host != !cf->endpoint_host ||
	    (cf->endpoint_host && (strcmp(p->cf->endpoint_host, cf->endpoint_host) != 0 ||
	    p->cf->endpoint_port != cf->endpoint_port)));
	int rc = 0;

	if (!changed) {
		peer_take_conf(p, cf);         /* same values, new owner */
		return 0;
	}
	bool auth_changed = p->cf->has_fingerprint != cf->has_fingerprint ||
	    memcmp(p->cf->fingerprint, cf->fingerprint, sizeof(cf->fingerprint)) != 0 ||
	    (!p->cf->ca != !cf->ca) || (cf->ca && strcmp(p->cf->ca, cf->ca) != 0) ||
	    (!p->cf->cert_name != !cf->cert_name) ||
	    (cf->cert_name && strcmp(p->cf->cert_name, cf->cert_name) != 0);

	peer_uninstall(p);
	peer_take_conf(p, cf);
	if (auth_changed) {
		/* The key that authenticated the sessions may be revoked: end
		 * them; the next packet starts a handshake under the new rules. */
		if (p->cur)
			dtls_sess_close(p->cur->dtls);
		tx_flush_records(p->toud);
		while (p->cur || p->next || p->prev)
			session_free(p->cur ? p->cur : p->next ? p->next : p->prev);
		peer_set_state(p, PEER_IDLE);
	}
	if (endpoint_changed) {
		/* A live session keeps the address it authenticated from. */
		if (!p->cur)
			p->has_endpoint = false;
		resolve_peer(p);
	}
	rc = peer_install(p);
	peer_timers_reconfigure(p);
	log_info("peer \"%s\": configuration changed", p->name);
	return rc;
}

struct peer *
peer_new(struct toud *t, const struct conf_peer *cf)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->toud = t;
	p->state = PEER_IDLE;
	peer_take_conf(p, cf);
	resolve_peer(p);
	if (peer_timers_init(p) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

void
peer_free(struct peer *p)
{
	if (!p)
		return;
	resolve_cancel(p);
	while (p->cur || p->next || p->prev)
		session_free(p->cur ? p->cur : p->next ? p->next : p->prev);
	peer_timers_free(p);
	free(p->pending_mem);
	free(p);
}

/* The i-th prefix of p: addresses first, then allowed-ips. */
static const struct ipprefix *
peer_prefix(const struct conf_peer *cf, size_t i)
{
	return i < cf->n_address ? &cf->address[i].p : &cf->allowed_ips[i - cf->n_address].p;
}

int
peer_install(struct peer *p)
{
	const struct conf_peer *cf = p->cf;
	struct toud *t = p->toud;
	char buf[UTIL_ADDRSTRLEN];
	size_t i, n = cf->n_address + cf->n_allowed_ips;
	int rc;

	if ((rc = peer_routes_add(p)) < 0) {
		log_warnx("peer \"%s\": %s", p->name, strerror(-rc));
		return rc;
	}
	for (i = 0; i < n; i++) {
		struct ipprefix m;

		util_prefix_masked(peer_prefix(cf, i), &m);
		rc = rtnl_route_add(t->rtnl, t->tun->ifindex, &m);
		if (rc == -EEXIST)
			log_warnx("peer \"%s\": a route to %s exists already and is not toud's; "
			    "remove it or change the configuration", p->name,
			    util_prefix_fmt(&m, buf, sizeof(buf)));
		else if (rc < 0)
			log_warnx("peer \"%s\": route %s: %s", p->name,
			    util_prefix_fmt(&m, buf, sizeof(buf)), strerror(-rc));
		if (rc < 0) {
			while (i-- > 0) {
				util_prefix_masked(peer_prefix(cf, i), &m);
				rtnl_route_del(t->rtnl, t->tun->ifindex, &m);
			}
			peer_routes_del(p);
			return rc;
		}
	}
	return 0;
}

void
peer_uninstall(struct peer *p)
{
	const struct conf_peer *cf = p->cf;
	struct toud *t = p->toud;
	size_t i, n = cf->n_address + cf->n_allowed_ips;

	for (i = 0; i < n; i++) {
		struct ipprefix m;

		util_prefix_masked(peer_prefix(cf, i), &m);
		rtnl_route_del(t->rtnl, t->tun->ifindex, &m);
	}
	peer_routes_del(p);
}

int
peer_routes_add(struct peer *p)
{
	const struct conf_peer *cf = p->cf;
	size_t i;
	int rc;

	for (i = 0; i < cf->n_address; i++)
		if ((rc = prefix_insert(p->toud->routes, &cf->address[i].p, p)) < 0)
			goto err;
	for (i = 0; i < cf->n_allowed_ips; i++)
		if ((rc = prefix_insert(p->toud->routes, &cf->allowed_ips[i].p, p)) < 0)
			goto err;
	return 0;
err:
	prefix_remove_value(p->toud->routes, p);
	return rc;
}

void
peer_routes_del(struct peer *p)
{
	prefix_remove_value(p->toud->routes, p);
}

struct peer *
peer_find_by_endpoint(struct toud *t, const union sockaddr_union *sa)
{
	size_t i;

	/* A linear scan: toud serves tens of peers in this mode, and
	 * encrypted sessions are found by session ID instead. */
	for (i = 0; i < t->n_peers; i++)
		if (t->peers[i]->has_endpoint && util_sa_equal(&t->peers[i]->endpoint, sa))
			return t->peers[i];
	return NULL;
}

struct peer *
peer_find_by_name(struct toud *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n_peers; i++)
		if (strcmp(t->peers[i]->name, name) == 0)
			return t->peers[i];
	return NULL;
}

void
peer_set_state(struct peer *p, enum peer_state s)
{
	char buf[UTIL_ADDRSTRLEN];

	if (p->state == s)
		return;
	log_info("peer \"%s\" (%s): %s -> %s", p->name,
	    p->has_endpoint ? util_sa_fmt(&p->endpoint, buf, sizeof(buf)) : "no endpoint",
	    peer_state_name(p->state), peer_state_name(s));
	p->state = s;
	peer_report_status(p->toud);
}

/* STATUS= for the service manager: how many peers are up. */
void
peer_report_status(struct toud *t)
{
	size_t i, up = 0;

	for (i = 0; i < t->n_peers; i++)
		up += t->peers[i]->state == PEER_UP;
	notify_status("%zu of %zu peer%s up", up, t->n_peers, t->n_peers == 1 ? "" : "s");
}

void
peer_rx(struct peer *p, size_t bytes, uint64_t now_ms)
{
	p->rx_bytes += bytes;
	p->rx_packets++;
	p->last_rx_ms = now_ms;
	if (p->state != PEER_UP)
		peer_timers_on_rx(p);
}

void
peer_tx(struct peer *p, size_t bytes, uint64_t now_ms)
{
	p->tx_bytes += bytes;
	p->tx_packets++;
	p->last_tx_ms = now_ms;
}

int
peer_pending_push(struct peer *p, const uint8_t *payload, size_t len, uint8_t tos)
{
	unsigned slot;
	int rc = 0;

	if (!p->pending_mem) {
		/* Once per peer, the first time it has to wait for a handshake. */
		p->pending_size = p->toud->tun_mtu + 64;
		p->pending_mem = malloc(p->pending_size * PEER_PENDING_MAX);
		if (!p->pending_mem)
			return -ENOMEM;
	}
	if (len > p->pending_size)
		return -EMSGSIZE;
	if (p->pending_n == PEER_PENDING_MAX) {
		/* Full: the oldest goes (the caller counts it). */
		p->pending_head = (p->pending_head + 1) % PEER_PENDING_MAX;
		p->pending_n--;
		rc = -ENOBUFS;
	}
	slot = (p->pending_head + p->pending_n) % PEER_PENDING_MAX;
	memcpy(p->pending_mem + slot * p->pending_size, payload, len);
	p->pending[slot].len = len;
	p->pending[slot].tos = tos;
	p->pending_n++;
	return rc;
}

void
peer_pending_flush(struct peer *p)
{
	while (p->pending_n && p->cur) {
		unsigned slot = p->pending_head;

		p->pending_head = (p->pending_head + 1) % PEER_PENDING_MAX;
		p->pending_n--;
		session_send(p, p->pending_mem + slot * p->pending_size, p->pending[slot].len,
		    p->pending[slot].tos);
	}
}
