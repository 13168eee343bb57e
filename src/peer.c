/* peer.c - peers: creation from the configuration, lookup, accounting, the
 * roaming rule (DESIGN 5), what a change of the host's addresses means for
 * them, and state changes: peer_event() is the only writer of p->state,
 * applying the table in peer_fsm.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "conf.h"
#include "conf_diff.h"
#include "ctx.h"
#include "dtls.h"
#include "handshake.h"
#include "keys.h"
#include "log.h"
#include "notify.h"
#include "peer.h"
#include "peer_endpoint.h"
#include "peer_ref.h"
#include "peer_timers.h"
#include "prefix.h"
#include "resolve.h"
#include "rtnl.h"
#include "session.h"
#include "tun.h"
#include "tunout.h"
#include "tx.h"
#include "udp.h"

/* Roams are logged at most once per this interval per peer. */
#define ROAM_LOG_MS 1000

static int peer_routes_add(struct peer *p);
static void peer_routes_del(struct peer *p);

/* Point p at its (new) configuration and take what derives from it. */
static void
peer_take_conf(struct peer *p, const struct conf_peer *cf)
{
	size_t i;

	p->cf = cf;
	p->name = cf->name;
	handshake_peers_changed(p->toud);
	/* The CA is read here, once per configuration (and file, when the
	 * configuration is being set up), never during a handshake: that
	 * would cost a file read and parse per attempt and CA peer. */
	keys_ca_free(p->ca_store);
	p->ca_store = NULL;
	if (cf->ca && !(p->ca_store = p->toud->ca_cache ?
	    keys_ca_cache_load(p->toud->ca_cache, cf->ca) : keys_ca_load(cf->ca)))
		log_warnx("peer \"%s\": cannot load CA file %s: handshakes will fail", cf->name,
		    cf->ca);
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
	uint32_t what = conf_diff_peer(p->cf, cf);
	char keys[128];
	int rc = 0;

	if (!what) {
		peer_take_conf(p, cf);         /* same values, new owner */
		return 0;
	}
	log_info("peer \"%s\": changed (%s)", p->name, conf_diff_peer_fmt(what, keys,
	    sizeof(keys)));
	peer_uninstall(p);
	peer_take_conf(p, cf);
	if (what & CONF_PEER_DIFF_AUTH) {
		p->error_kept = false;          /* the keys that disagreed may agree now */
		/* The key that authenticated the sessions may be revoked: end
		 * them; the next packet starts a handshake under the new rules.
		 * A new preshared key or post-quantum policy is used at once: a
		 * peer that was up handshakes again now. */
		if (p->cur && (what & (CONF_PEER_DIFF_PRESHARED_KEY | CONF_PEER_DIFF_POST_QUANTUM)))
			p->reconnect = true;
		if (p->cur)
			session_end(p->cur);
		while (p->next || p->prev)
			session_free(p->next ? p->next : p->prev);
		peer_timers_reset(p);
		peer_event(p, PEER_EV_RESET);
	}
	if (what & CONF_PEER_DIFF_ENDPOINT) {
		/* A live session keeps the address it authenticated from. */
		if (!p->cur)
			p->has_endpoint = false;
		resolve_peer(p);
	}
	rc = peer_install(p);
	peer_timers_reconfigure(p);
	if (what & (CONF_PEER_DIFF_AUTH | CONF_PEER_DIFF_ENDPOINT))
		peer_timers_auth_changed(p);
	return rc;
}

/* One path for each transport the interface registered (daemon.c), in
 * its order: the first is the preferred one, and where traffic starts. */
static int
peer_paths_new(struct peer *p)
{
	const struct toud *t = p->toud;
	unsigned i;

	if (!(p->paths = calloc(1, sizeof(*p->paths))))
		return -ENOMEM;
	for (i = 0; i < t->n_transports && i < TRANSPORT_MAX; i++)
		p->paths->path[p->paths->n++].ops = t->transports[i];
	return 0;
}

/* Whatever p's paths hold closes with it. */
static void
peer_paths_free(struct peer *p)
{
	unsigned i;

	if (!p->paths)
		return;
	for (i = 0; i < p->paths->n; i++)
		if (p->paths->path[i].ops->close)
			p->paths->path[i].ops->close(p, &p->paths->path[i]);
	free(p->paths);
	p->paths = NULL;
}

struct peer *
peer_new(struct toud *t, const struct conf_peer *cf)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->toud = t;
	if (peer_slot_take(p) < 0) {
		free(p);
		return NULL;
	}
	p->state = PEER_IDLE;
	peer_take_conf(p, cf);
	if (peer_paths_new(p) < 0 || peer_timers_init(p) < 0) {
		peer_free(p);
		return NULL;
	}
	resolve_peer(p);
	return p;
}

void
peer_free(struct peer *p)
{
	if (!p)
		return;
	resolve_cancel(p);
	peer_ping_done(p, false);
	peer_paths_free(p);
	while (p->cur || p->next || p->prev)
		session_free(p->cur ? p->cur : p->next ? p->next : p->prev);
	/* Its datagrams and TUN packets still on their way now resolve to
	 * nobody (worker.h). */
	peer_slot_release(p);
	handshake_peers_changed(p->toud);
	if (p->state == PEER_UP && p->toud->n_peers_up)
		p->toud->n_peers_up--;
	peer_timers_free(p);
	keys_ca_free(p->ca_store);
	free(p->pending_mem);
	free(p->pending);
	free(p->last_error);
	free(p);
}

/* The i-th prefix of p: addresses first, then allowed-ips. */
static const struct ipprefix *
peer_prefix(const struct conf_peer *cf, size_t i)
{
	return i < cf->n_address ? &cf->address[i].p : &cf->allowed_ips[i - cf->n_address].p;
}

/* The routing table of prefix m (masked) of p's, 0 for none.  A prefix
 * inside one of the interface's own needs no route in the main table: the
 * kernel's connected route takes it into the TUN, so thousands of peers
 * inside the interface prefix cost no route each. */
static uint32_t
peer_route_table(const struct peer *p, const struct ipprefix *m)
{
	const struct conf_iface *ifc = &p->toud->conf->iface;
	uint32_t table = conf_route_table(ifc, m, p->toud->full_table);

	return table == CONF_TABLE_MAIN && conf_iface_covers(ifc, m) ? 0 : table;
}

/* A route of ours could not be added because one exists: say whose, and
 * what to change. */
static void
peer_route_clash(const struct peer *p, const struct ipprefix *m, uint32_t table,
    void (*say)(const char *, ...) __attribute__((format(printf, 1, 2))))
{
	char buf[UTIL_ADDRSTRLEN], who[64];

	util_prefix_fmt(m, buf, sizeof(buf));
	rtnl_route_owner(m, table, who, sizeof(who));
	if (m->len == 0 && table == CONF_TABLE_MAIN)
		/* The host's own default route: removing it would take the
		 * tunnel's datagrams into the tunnel. */
		say("peer \"%s\": %s: the main table has a default route already, %s; to send "
		    "all traffic through the tunnel set 'table = auto' in [interface], which "
		    "routes %s in a table of its own", p->name, buf, who, buf);
	else if (table != CONF_TABLE_MAIN)
		say("peer \"%s\": a route to %s exists already in table %u and is %s; remove "
		    "it or choose another 'table'", p->name, buf, table, who);
	else
		say("peer \"%s\": a route to %s exists already and is %s; remove it or change "
		    "the configuration", p->name, buf, who);
}

int
peer_install(struct peer *p)
{
	const struct conf_peer *cf = p->cf;
	struct toud *t = p->toud;
	char buf[UTIL_ADDRSTRLEN];
	size_t i, n = cf->n_address + cf->n_allowed_ips;
	int rc;

	/* At start a failure here is fatal (err); on reload it is not. */
	void (*say)(const char *, ...) __attribute__((format(printf, 1, 2))) =
	    t->starting ? log_errx : log_warnx;

	if ((rc = peer_routes_add(p)) < 0) {
		say("peer \"%s\": %s", p->name, strerror(-rc));
		return rc;
	}
	if (!t->rtnl)
		return 0;               /* no kernel (unit tests) */
	for (i = 0; i < n; i++) {
		struct ipprefix m;
		uint32_t table;

		util_prefix_masked(peer_prefix(cf, i), &m);
		if (!(table = peer_route_table(p, &m)))
			continue;       /* table = off */
		rc = rtnl_route_add(t->rtnl, t->tun->ifindex, &m, table);
		if (rc == -EEXIST)
			peer_route_clash(p, &m, table, say);
		else if (rc < 0)
			say("peer \"%s\": route %s: %s", p->name,
			    util_prefix_fmt(&m, buf, sizeof(buf)), strerror(-rc));
		if (rc < 0) {
			while (i-- > 0) {
				util_prefix_masked(peer_prefix(cf, i), &m);
				if ((table = peer_route_table(p, &m)))
					rtnl_route_del(t->rtnl, t->tun->ifindex, &m, table);
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

	for (i = 0; t->rtnl && i < n; i++) {
		struct ipprefix m;
		uint32_t table;

		util_prefix_masked(peer_prefix(cf, i), &m);
		if ((table = peer_route_table(p, &m)))
			rtnl_route_del(t->rtnl, t->tun->ifindex, &m, table);
	}
	peer_routes_del(p);
}

static int
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

static void
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

#define PEER_UNREACHABLE_LOG_MS 60000

const char *
peer_unreachable_fmt(const struct peer *p, char *buf, size_t len)
{
	char a[UTIL_ADDRSTRLEN];
	struct ipaddr addr;
	uint16_t port;

	util_sa_to_addr(&p->endpoint, &addr, &port);
	snprintf(buf, len, "nothing listens on UDP %u at %s", port,
	    util_addr_fmt(&addr, a, sizeof(a)));
	return buf;
}

void
peer_unreachable(struct toud *t, const union sockaddr_union *dest, uint64_t now)
{
	struct peer *p = peer_find_by_endpoint(t, dest);
	char buf[UTIL_ADDRSTRLEN], what[PEER_UNREACHABLE_MAX];
	struct ipaddr a;
	uint16_t port;
	bool log;

	util_sa_to_addr(dest, &a, &port);
	if (!p) {
		log_debug_rl("nothing listens on UDP %u at %s (ICMP port unreachable), the "
		    "endpoint of no peer", port, util_addr_fmt(&a, buf, sizeof(buf)));
		return;
	}
	log = !p->unreachable_ms || now - p->unreachable_ms >= PEER_UNREACHABLE_LOG_MS;
	p->unreachable_ms = now;
	peer_unreachable_fmt(p, what, sizeof(what));       /* dest is its endpoint */
	if (!p->cur && !strstr(peer_error(p), what))
		peer_error_set(p, PEER_ERR_PORT_UNREACHABLE, "%s (ICMP port unreachable)", what);
	if (log)
		log_warnx("peer \"%s\": %s (ICMP port unreachable)", p->name, what);
	else
		log_debug_rl("peer \"%s\": %s (ICMP port unreachable)", p->name, what);
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
peer_event(struct peer *p, enum peer_event e)
{
	enum peer_state s = peer_fsm_next(p->state, e);
	char buf[UTIL_ADDRSTRLEN];

	if (p->state == s)
		return;
	log_info("peer \"%s\" (%s): %s -> %s (%s)", p->name,
	    p->has_endpoint ? util_sa_fmt(&p->endpoint, buf, sizeof(buf)) : "no endpoint",
	    peer_state_name(p->state), peer_state_name(s), peer_event_name(e));
	if (p->state == PEER_UP)
		p->toud->n_peers_up--;
	if (s == PEER_UP)
		p->toud->n_peers_up++;
	p->state = s;
	peer_report_status(p->toud);
}

/* STATUS= for the service manager: how many peers are up. */
void
peer_report_status(struct toud *t)
{
	/* Counted as states change: a walk of every peer on each change
	 * made a handshake O(peers). */
	notify_status("%zu of %zu peer%s up", t->n_peers_up, t->n_peers,
	    t->n_peers == 1 ? "" : "s");
}

void
peer_rx(struct peer *p, size_t bytes, uint64_t now_ms)
{
	p->rx_bytes += bytes;
	p->rx_packets++;
	p->last_rx_ms = now_ms;
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
		p->pending = calloc(PEER_PENDING_MAX, sizeof(*p->pending));
		if (!p->pending_mem || !p->pending) {
			free(p->pending_mem);
			free(p->pending);
			p->pending_mem = NULL;
			p->pending = NULL;
			return -ENOMEM;
		}
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

bool
peer_pending_pop(struct peer *p, const uint8_t **payload, size_t *len, uint8_t *tos)
{
	unsigned slot = p->pending_head;

	if (!p->pending_n)
		return false;
	p->pending_head = (p->pending_head + 1) % PEER_PENDING_MAX;
	p->pending_n--;
	*payload = p->pending_mem + slot * p->pending_size;
	*len = p->pending[slot].len;
	*tos = p->pending[slot].tos;
	return true;
}

void
peer_authenticated_rx(struct peer *p, struct session *s, const union sockaddr_union *from,
    const struct ipaddr *local, uint64_t seq, uint32_t index, size_t wire_len, uint64_t now)
{
	struct path_probe *pp = &p->probe;
	uint8_t token[PATH_TOKEN_LEN];
	char a[UTIL_ADDRSTRLEN], b[UTIL_ADDRSTRLEN];
	uint32_t wire_index;

	session_ids_received(s, index);
	/* The peer moved to a newer ID on this path: follow it, even on a
	 * record that arrived late (a challenge overtaken by data), or the
	 * peer's next path may find no fresh ID left.  (The outer ID is not
	 * authenticated: an on-path attacker can make both ends move, within
	 * the window, as it could drop their traffic.) */
	if (index > s->tx_index && util_sa_equal(&s->addr, from))
		session_ids_use(s, index);
	if (seq <= s->max_seq && s->max_seq)
		return;
	s->max_seq = seq;
	if (util_sa_equal(&s->addr, from)) {
		if (local && local->family)
			s->local = *local;
		if (path_probing_for(pp, s->id))
			path_old_newest(pp);
		return;
	}
	/* No one is at port 0, and a challenge there would fail to send. */
	if (util_sa_port(from) == 0)
		return;
	/* Only the session we send on moves, and only to an address that
	 * answers a challenge: a source rewritten on the way must not
	 * point our traffic at someone else. */
	if (s != p->cur)
		return;
	if (path_probing_for(pp, s->id) && util_sa_equal(&pp->addr, from)) {
		path_received(pp, wire_len);
		return;
	}
	/* The new path gets an ID of its own: the peer's if it already
	 * moved to one nobody used, else the next unused one of ours (kept
	 * from then on, answered or not).  None left in the peer's window
	 * (ours went to addresses that did not answer): the address waits
	 * until the peer uses a newer ID, as any other would send one ID to
	 * two addresses. */
	wire_index = index > s->tx_max_index ? index : session_ids_fresh(s);
	if (!wire_index) {
		p->events[EVENT_PATH_NO_ID]++;
		log_debug_rl("peer \"%s\": records from %s: no unused session ID left, not validating yet",
		    p->name, util_sa_fmt(from, b, sizeof(b)));
		return;
	}
	if (RAND_bytes(token, sizeof(token)) != 1)
		return;
	if (now - p->roam_log_ms >= ROAM_LOG_MS) {
		log_info("peer \"%s\": records from %s (endpoint %s): validating the new address",
		    p->name, util_sa_fmt(from, b, sizeof(b)), util_sa_fmt(&s->addr, a, sizeof(a)));
		p->roam_log_ms = now;
	}
	path_start(pp, s->id, from, local, token, wire_len);
	pp->wire_index = wire_index;
	session_ids_begin(s, wire_index);
	peer_timers_path_due(p, now);
}

void
peer_ping_done(struct peer *p, bool answered)
{
	peer_ping_fn *fn = p->ping_fn;
	void *arg = p->ping_arg;

	peer_ping_cancel(p);
	if (fn)
		fn(arg, answered);
}

void
peer_ping_cancel(struct peer *p)
{
	p->ping_fn = NULL;
	p->ping_arg = NULL;
	peer_timers_ping_done(p);
}

void
peer_path_response(struct peer *p, struct session *s, const uint8_t *token, uint64_t now)
{
	struct path_probe *pp = &p->probe;
	char a[UTIL_ADDRSTRLEN], b[UTIL_ADDRSTRLEN];

	/* The policy's probe of UDP (peer_timers.c). */
	if (p->paths && s == p->cur &&
	    peer_timers_probe_answered(p, peer_path_udp(p), token, now))
		return;
	if (p->ping_fn && s == p->cur && memcmp(token, p->ping_token, PATH_TOKEN_LEN) == 0) {
		peer_ping_done(p, true);
		return;
	}
	if (s != p->cur || pp->session_id != s->id || !path_answered(pp, token)) {
		p->events[EVENT_PATH_RESPONSE_STALE]++;
		return;
	}
	p->events[EVENT_PATH_VALIDATED]++;
	log_info("peer \"%s\": endpoint %s -> %s", p->name, util_sa_fmt(&s->addr, a, sizeof(a)),
	    util_sa_fmt(&pp->addr, b, sizeof(b)));
	s->addr = pp->addr;
	s->local = pp->local;
	dtls_sess_set_peer_addr(s->dtls, &pp->addr);
	peer_endpoint_set(p, &pp->addr);
	session_ids_use(s, pp->wire_index);
	path_reset(pp);
	peer_timers_path_due(p, now);   /* nothing due: disarms */
}

const char *
peer_error_reason_name(enum peer_error_reason r)
{
	static const char *const names[PEER_ERR__MAX] = {
		[PEER_ERR_HANDSHAKE_FAILED] = "handshake_failed",
		[PEER_ERR_HANDSHAKE_REFUSED] = "handshake_refused",
		[PEER_ERR_PSK_MISMATCH] = "psk_mismatch",
		[PEER_ERR_KEY_REJECTED] = "key_rejected",
		[PEER_ERR_CLOSED_BY_PEER] = "closed_by_peer",
		[PEER_ERR_MAX_AGE] = "max_age",
		[PEER_ERR_PORT_UNREACHABLE] = "port_unreachable",
		[PEER_ERR_PATH_DOWN] = "path_down",
		[PEER_ERR_PQ_REFUSED] = "pq_refused",
	};

	return (unsigned)r < PEER_ERR__MAX ? names[r] : "unknown";
}

void
peer_path_move(struct peer *p, struct peer_path *ph, const char *why)
{
	unsigned i = (unsigned)(ph - p->paths->path);

	if (p->paths->active == i)
		return;
	p->paths->active = i;
	p->transport_switches++;
	p->events[ph->ops->moved_event]++;
	log_info("peer \"%s\": traffic moves to %s (%s)", p->name, ph->ops->name, why);
}

const char *
peer_transport_name(const struct peer *p)
{
	return p->paths ? peer_path_active(p)->ops->name : "udp";
}

const char *
peer_cipher(const struct peer *p)
{
	struct peer_path *ph;

	if (!p->paths)
		return p->cur && p->cur->dtls ? dtls_sess_cipher(p->cur->dtls) : "";
	ph = peer_path_active(p);
	return ph->ops->cipher(p, ph);
}

const char *
peer_key_exchange(const struct peer *p)
{
	struct peer_path *ph;

	if (!p->paths)
		return p->cur && p->cur->dtls ? dtls_sess_key_exchange(p->cur->dtls) : "";
	ph = peer_path_active(p);
	return transport_key_exchange(p, ph);
}

/* The local address p is reached at: its session's in DTLS mode, its own
 * with encryption = none. */
static const struct ipaddr *
peer_local_of(const struct peer *p)
{
	return p->cur ? &p->cur->local : &p->local;
}

static bool
family_used(const struct toud *t, int family)
{
	if (!t->udp)
		return false;
	return family == AF_INET ? t->udp->fd4 >= 0 : family == AF_INET6 && t->udp->fd6 >= 0;
}

/* Whether p has a path to keep: a session (without encryption: contact
 * made), or a reason to make one (keepalive, packets waiting, a
 * reconnect, a handshake that failed).  A peer configured but never
 * needed has none: a host change tells it nothing, and a keepalive would
 * only start a handshake nobody asked for. */
static bool
peer_has_path(const struct peer *p)
{
	return p->cur || p->state != PEER_IDLE || p->cf->keepalive || p->pending_n ||
	    p->reconnect;
}

bool
peer_netchange_note(struct toud *t, const struct rtnl_event *ev)
{
	struct toud_netchange *nc = &t->netchange;
	size_t i;

	if (!family_used(t, ev->family))
		return false;
	switch (ev->kind) {
	case RTNL_EV_DEFAULT_ROUTE:
		if (ev->family == AF_INET)
			nc->route4 = true;
		else
			nc->route6 = true;
		return true;
	case RTNL_EV_ADDR_NEW:
		/* Only a peer that has no local address yet may want it. */
		for (i = 0; i < t->n_peers; i++) {
			const struct peer *p = t->peers[i];

			if (p->has_endpoint && !peer_local_of(p)->family &&
			    p->endpoint.sa.sa_family == ev->family && peer_has_path(p)) {
				if (ev->family == AF_INET)
					nc->added4 = true;
				else
					nc->added6 = true;
				return true;
			}
		}
		return false;
	case RTNL_EV_ADDR_DEL:
		for (i = 0; i < t->n_peers; i++) {
			if (util_addr_equal(peer_local_of(t->peers[i]), &ev->addr))
				break;
		}
		if (i == t->n_peers)
			return false;           /* no peer reaches us there */
		for (i = 0; i < nc->n_gone; i++)
			if (util_addr_equal(&nc->gone[i], &ev->addr))
				return true;
		if (nc->n_gone == TOUD_NETCHANGE_GONE)
			nc->all = true;
		else
			nc->gone[nc->n_gone++] = ev->addr;
		return true;
	}
	return false;
}

void
peer_netchange_lost(struct toud *t)
{
	t->netchange.all = true;
}

bool
peer_netchange_affects(const struct toud_netchange *nc, const struct peer *p)
{
	int fam = p->endpoint.sa.sa_family;
	unsigned i;

	if (!p->has_endpoint || !peer_has_path(p))
		return false;
	if (nc->all || (fam == AF_INET ? nc->route4 : nc->route6))
		return true;
	if (!peer_local_of(p)->family)
		return fam == AF_INET ? nc->added4 : nc->added6;
	for (i = 0; i < nc->n_gone; i++)
		if (util_addr_equal(&nc->gone[i], peer_local_of(p)))
			return true;
	return false;
}

/* The host's addresses or default route changed: the path to every peer
 * may be new.  Forget the source addresses learnt so far (one may be gone)
 * and send each peer a keepalive at once, so it learns our new endpoint
 * without waiting for a timer (in DTLS mode it authenticates, so the peer
 * roams to it; without a session it starts a handshake). */
void
peer_netchange_apply(struct toud *t)
{
	struct toud_netchange nc = t->netchange;
	size_t i, n = 0;

	memset(&t->netchange, 0, sizeof(t->netchange));
	for (i = 0; i < t->n_peers; i++) {
		struct peer *p = t->peers[i];

		if (!peer_netchange_affects(&nc, p))
			continue;
		n++;
		memset(&p->local, 0, sizeof(p->local));
		/* A new path: a new session ID on it (sessid.h). */
		if (p->cur) {
			memset(&p->cur->local, 0, sizeof(p->cur->local));
			if (p->cur->established)
				session_ids_use(p->cur, session_ids_fresh(p->cur));  /* 0: stays */
		}
		if (p->next)
			memset(&p->next->local, 0, sizeof(p->next->local));
		if (p->prev)
			memset(&p->prev->local, 0, sizeof(p->prev->local));
		peer_timers_path_changed(p);
	}
	if (n)
		log_info("local addresses or routes changed: telling %zu peer%s", n,
		    n == 1 ? "" : "s");
	else
		log_debug("local addresses or routes changed: no peer concerned");
}
