/* peer_timers.c - every per-peer timer lives here, armed and disarmed from
 * hooks named after what happened (data sent, authenticated packet
 * received, handshake started / done / failed, closed by the peer).
 *
 * keepalive: with `keepalive = N`, a keepalive control message goes out
 *   after N seconds without outgoing traffic, so NAT mappings stay open for
 *   traffic the other side starts.
 * liveness: a peer is "up" while something arrived from it within the
 *   liveness window (twice the keepalive interval, or PEER_IDLE_WINDOW_MS
 *   without keepalive).  After that it is "dead" if it should have sent
 *   keepalives, else "idle" (a quiet peer is not a broken one).
 * dead: whatever keepalive says, when we have sent the peer data (not
 *   control messages) and nothing authenticated came back for the
 *   dead-peer interval (twice the keepalive interval, or PEER_DEAD_MS),
 *   the peer is "dead".  A peer that receives data answers it by itself:
 *   at once with a keepalive if it has sent nothing for
 *   PEER_PASSIVE_KEEPALIVE_MS, else when that long has passed since the
 *   data and nothing went out after it (passive).  So neither a one-way
 *   stream nor the last ACK of a closed connection makes it look dead.
 * retry: after a failed handshake, the next one waits 1, 2, 4 ... 60 s
 *   (with jitter from the system's random source); then it starts if
 *   packets are waiting, keepalive is on, or the peer closed our session
 *   (reconnect: 1 s after the close).
 * rekey: rekey-time after a session we initiated came up, a new handshake
 *   (rekey-bytes and rekey-records are checked on the send path).
 * ping: touctl ping's challenge, and its deadline PEER_PING_TIMEOUT_MS
 *   after it.
 * path changed: the host's addresses or routes changed under the path to
 *   the peer (peer_netchange_apply): a keepalive at once.
 * path: while a new address of the peer is validated (path.h), the next
 *   path challenge after 250, 500, 1000 ms, then the verdict; a challenge
 *   the amplification budget does not allow is skipped (counted).
 *
 * transport: the path policy (path_policy.h, pure) is fed here and its
 *   decisions carried out (move through peer_path_move(), probe, open,
 *   close).  Events: a path up or down (transport_core's, and UDP's from
 *   handshakes and ended sessions), a probe answered, the host's
 *   addresses changed, a record on a path that does not carry the
 *   traffic (at once: a follower follows it), and at the tick the stamps
 *   the data path keeps per path (records received, data unanswered).
 *   A leader (endpoint-tcp) ticks each PEER_TRANSPORT_TICK_MS, or sooner
 *   when the policy asks; a follower only when it asks.  It reaches the
 *   paths only through their transport ops.
 *
 * Session timers (handshake retransmission, drain) belong to handshake.c
 * and session.c.  None of these is touched per packet: each fires,
 * compares the time stamps the data path keeps, and re-arms for the
 * remainder. */
#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>
#include <event2/util.h>
#include <openssl/rand.h>

#include "conf.h"
#include "ctx.h"
#include "dtls.h"
#include "gue.h"
#include "handshake.h"
#include "log.h"
#include "peer.h"
#include "peer_timers.h"
#include "resolve.h"
#include "session.h"
#include "timer.h"
#include "transport.h"
#include "tx.h"

#define PEER_IDLE_WINDOW_MS 120000
#define PEER_DEAD_MS 15000
#define PEER_PASSIVE_KEEPALIVE_MS 5000
#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 60000
#define RECONNECT_MS 1000               /* a restarting peer is usually back by then */
#define PEER_TRANSPORT_TICK_MS 500

static void keepalive_cb(evutil_socket_t, short, void *);
static void liveness_cb(evutil_socket_t, short, void *);
static void retry_cb(evutil_socket_t, short, void *);
static void rekey_cb(evutil_socket_t, short, void *);
static void dead_cb(evutil_socket_t, short, void *);
static void passive_cb(evutil_socket_t, short, void *);
static void path_cb(evutil_socket_t, short, void *);
static void ping_cb(evutil_socket_t, short, void *);
static void transport_cb(evutil_socket_t, short, void *);
static void udp_sync(struct peer *, uint64_t);
static void pol_feed(struct peer *, enum pol_event, int, uint32_t, uint64_t);
static struct peer_path *path_of(struct peer *, int);

/* Arm the timer in *ev, made the first time it is needed: a configured
 * peer that nothing happens to keeps none (tens of thousands of idle
 * peers cost no timers).  -ENOMEM, said, if it cannot be made. */
static int
timer_arm(struct peer *p, struct event **ev, event_callback_fn cb, uint64_t ms)
{
	if (!*ev && !(*ev = evtimer_new(p->toud->base, cb, p))) {
		log_err("peer \"%s\": no memory for a timer", p->name);
		return -ENOMEM;
	}
	timer_arm_ms(*ev, ms);
	return 0;
}

/* ARM(p, keepalive, ms): p->ev_keepalive, with keepalive_cb. */
#define ARM(p, name, ms) timer_arm((p), &(p)->ev_##name, name##_cb, (ms))

static void
timer_disarm(struct event *ev)
{
	if (ev)
		evtimer_del(ev);
}

static bool
timer_pending(const struct event *ev)
{
	return ev && evtimer_pending(ev, NULL);
}

static uint64_t
liveness_ms(const struct peer *p)
{
	return p->cf->keepalive ? 2000ULL * p->cf->keepalive : PEER_IDLE_WINDOW_MS;
}

uint64_t
peer_timers_dead_ms(const struct peer *p)
{
	return p->cf->keepalive ? 2000ULL * p->cf->keepalive : PEER_DEAD_MS;
}

static void
keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	uint64_t interval = 1000ULL * p->cf->keepalive, now = toud_now(p->toud);

	(void)fd;
	(void)what;
	if (p->has_endpoint && now - p->last_tx_ms >= interval) {
		if (tx_control(p->toud, p, GUE_CTYPE_KEEPALIVE, NULL, 0) < 0)
			log_debug_rl("peer \"%s\": keepalive not sent", p->name);
		ARM(p, keepalive, interval);
		return;
	}
	ARM(p, keepalive, p->has_endpoint ? p->last_tx_ms + interval - now : interval);
}

static void
liveness_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	uint64_t window = liveness_ms(p), now = toud_now(p->toud);

	(void)fd;
	(void)what;
	if (now - p->last_rx_ms < window) {
		ARM(p, liveness, p->last_rx_ms + window - now);
		return;
	}
	if (p->toud->dtls && p->cur && !p->cf->keepalive) {
		/* A quiet peer with a session is still up. */
		ARM(p, liveness, window);
		return;
	}
	peer_event(p, p->cf->keepalive ? PEER_EV_DEAD : PEER_EV_QUIET);
	if (p->toud->dtls && p->cf->keepalive)
		handshake_initiate(p, now);
}

static void
dead_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	uint64_t now = toud_now(p->toud);

	(void)fd;
	(void)what;
	if (!p->unanswered_ms || peer_timers_check_dead(p, now))
		return;
	ARM(p, dead, p->unanswered_ms + peer_timers_dead_ms(p) - now);
}

void
peer_timers_data_sent(struct peer *p, uint64_t now)
{
	/* Also stamped when the datagram leaves (peer_tx); this one counts at
	 * once, so one batch does not answer a burst many times. */
	p->last_tx_ms = now;
	if (p->unanswered_ms)
		return;
	p->unanswered_ms = now;
	if (!timer_pending(p->ev_dead))
		ARM(p, dead, peer_timers_dead_ms(p));
}

void
peer_timers_authenticated_rx(struct peer *p, uint64_t now)
{
	(void)now;
	p->unanswered_ms = 0;
	if (p->state != PEER_UP) {
		/* The first packet in a while. */
		peer_event(p, PEER_EV_UP);
		ARM(p, liveness, liveness_ms(p));
	}
}

void
peer_timers_data_received(struct peer *p, uint64_t now)
{
	/* Answer a peer that sends data and never hears from us, so its
	 * dead-peer rule sees us alive (rx.c echoes keepalives itself). */
	p->last_data_rx_ms = now;
	if (p->has_endpoint && now - p->last_tx_ms >= PEER_PASSIVE_KEEPALIVE_MS) {
		tx_control(p->toud, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
		return;
	}
	if (!timer_pending(p->ev_passive))
		ARM(p, passive, PEER_PASSIVE_KEEPALIVE_MS);
}

bool
peer_timers_passive_keepalive(struct peer *p)
{
	/* Sent in the same millisecond as the data arrived counts as not
	 * after it: one spare keepalive rather than a missed answer. */
	if (!p->has_endpoint || !p->last_data_rx_ms || p->last_tx_ms > p->last_data_rx_ms)
		return false;
	if (tx_control(p->toud, p, GUE_CTYPE_KEEPALIVE, NULL, 0) < 0) {
		log_debug_rl("peer \"%s\": passive keepalive not sent", p->name);
		return false;
	}
	return true;
}

static void
passive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	peer_timers_passive_keepalive(p);
}

bool
peer_timers_check_dead(struct peer *p, uint64_t now)
{
	uint64_t window = peer_timers_dead_ms(p);

	if (!p->unanswered_ms || now - p->unanswered_ms < window)
		return false;
	peer_event(p, PEER_EV_DEAD);
	return true;
}

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	p->next_attempt_ms = 0;
	if (!p->cur && (p->pending_n || p->cf->keepalive || p->reconnect))
		handshake_initiate(p, toud_now(p->toud));
}

int
peer_timers_wanted(struct peer *p)
{
	if (!p->toud->dtls)
		return -EOPNOTSUPP;
	if (p->cur)
		return 0;
	if (!p->has_endpoint)
		return p->cf->endpoint_host ? -EAGAIN : -EDESTADDRREQ;
	/* Like a reconnect: retry, with back-off, until a session is up. */
	p->reconnect = true;
	p->hs_retry_ms = 0;
	return handshake_initiate(p, toud_now(p->toud));
}

void
peer_timers_auth_changed(struct peer *p)
{
	p->hs_failures = 0;
	p->hs_retry_ms = 0;
	p->next_attempt_ms = 0;
	timer_disarm(p->ev_retry);
	if (!p->cur && (p->pending_n || p->cf->keepalive || p->reconnect))
		handshake_initiate(p, toud_now(p->toud));
}

void
peer_timers_closed_by_peer(struct peer *p)
{
	p->toud->events[EVENT_SESSION_CLOSED]++;
	if (p->cur)
		return;
	peer_event(p, PEER_EV_CLOSED);
	/* Said until a session is up again, so `show` tells why it went. */
	peer_error_set(p, PEER_ERR_CLOSED_BY_PEER, "closed by the peer");
	if (p->next)
		peer_event(p, PEER_EV_HANDSHAKE_STARTED);
	/* It is going away, probably to restart.  Where we know its address
	 * we reconnect, so it can reach us again even if it does not know
	 * ours. */
	if (!p->cf->endpoint_host)
		return;
	p->reconnect = true;
	p->hs_retry_ms = 0;
	p->next_attempt_ms = toud_now(p->toud) + RECONNECT_MS;
	ARM(p, retry, RECONNECT_MS);
}

void
peer_timers_handshake_started(struct peer *p)
{
	if (!p->cur)
		peer_event(p, PEER_EV_HANDSHAKE_STARTED);
}

/* Jitter from the system's random source: every node and every restart
 * retries on its own schedule. */
static uint64_t
jitter(uint64_t max)
{
	uint32_t r;

	evutil_secure_rng_get_bytes(&r, sizeof(r));
	return max ? r % (max + 1) : 0;
}

void
peer_timers_handshake_failed(struct peer *p, const char *why)
{
	uint64_t delay = RETRY_MIN_MS << (p->hs_failures < 6 ? p->hs_failures : 6);
	uint64_t now = toud_now(p->toud);

	if (delay > RETRY_MAX_MS)
		delay = RETRY_MAX_MS;
	delay += jitter(delay / 4);
	p->hs_failures++;
	p->hs_retry_ms = now + delay;
	/* On another path that carries, this was a probe of UDP: nothing
	 * wrong with the peer (handshake.c says it at debug only). */
	if (why && !*peer_error(p) && !peer_on_fallback(p))
		peer_error_set(p, PEER_ERR_HANDSHAKE_FAILED, "handshake failed: %s", why);
	/* The retry starts a handshake only if there is a reason to. */
	p->next_attempt_ms = p->pending_n || p->cf->keepalive || p->reconnect ? p->hs_retry_ms : 0;
	resolve_peer(p);                /* the name may point elsewhere now */
	if (!p->cur && !peer_on_fallback(p))
		peer_event(p, PEER_EV_HANDSHAKE_FAILED);
	ARM(p, retry, delay);
}

uint64_t
peer_timers_rekey_delay(uint64_t established_ms, uint64_t rekey_ms, uint64_t now)
{
	uint64_t deadline = established_ms + rekey_ms;

	/* Past the deadline with a handshake running (it was not the time to
	 * start one): look again shortly, rather than after an underflowed
	 * delay that would lose the rekey. */
	return deadline > now ? deadline - now : RETRY_MIN_MS;
}

/* The next look at p's session: its rekey time (initiator), its maximum
 * age, or the end of the grace after it. */
static uint64_t
rekey_next(const struct peer *p, uint64_t now)
{
	uint64_t est = p->cur->established_ms, age = handshake_max_age_ms(p->toud), d;

	d = peer_timers_rekey_delay(est, now - est >= age ? age + SESSION_HANDSHAKE_MS : age, now);
	if (p->cur->initiator) {
		uint64_t r = peer_timers_rekey_delay(est, 1000ULL * p->toud->conf->iface.rekey_seconds,
		    now);

		if (r < d)
			d = r;
	}
	return d;
}

/* We ended sessions of p ourselves, for the reason e says: with none left
 * to send on, the peer is idle (dead stays dead), or handshaking if a new
 * handshake already runs. */
static void
sessions_ended(struct peer *p, enum peer_event e)
{
	if (p->cur)
		return;
	if (!p->next)
		peer_timers_reset(p);
	peer_event(p, e);
	if (p->next)
		peer_event(p, PEER_EV_HANDSHAKE_STARTED);
	if (p->paths)
		udp_sync(p, toud_now(p->toud));     /* a follower's UDP is down */
}

static void
rekey_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	uint64_t now = toud_now(p->toud);

	(void)fd;
	(void)what;
	if (p->cur && now - p->cur->established_ms >= handshake_max_age_ms(p->toud) +
	    SESSION_HANDSHAKE_MS) {
		/* Past its maximum age and no replacement came up: end it. */
		log_warnx("peer \"%s\": session %016llx ended at its maximum age", p->name,
		    (unsigned long long)p->cur->id);
		peer_error_set(p, PEER_ERR_MAX_AGE, "session reached its maximum age");
		session_end(p->cur);
		sessions_ended(p, PEER_EV_SESSIONS_ENDED);
		return;
	}
	if (handshake_needs_rekey(p, now))
		handshake_initiate(p, now);
	if (p->cur)
		ARM(p, rekey, rekey_next(p, now));
}

void
peer_timers_handshake_done(struct peer *p)
{
	p->hs_failures = 0;
	p->hs_retry_ms = 0;
	p->reconnect = false;
	p->next_attempt_ms = 0;
	peer_error_clear(p);
	p->unanswered_ms = 0;
	peer_event(p, PEER_EV_UP);
	ARM(p, liveness, liveness_ms(p));
	ARM(p, rekey, rekey_next(p, toud_now(p->toud)));
	timer_disarm(p->ev_retry);
	/* UDP is up (a follower's), and answered: a handshake is UDP's probe
	 * without a session (its RTT, when one was in flight). */
	if (p->paths) {
		struct peer_path *ph = path_of(p, 0);
		uint64_t now = toud_now(p->toud);
		uint64_t rtt = ph->probe_ms && now > ph->probe_ms ? now - ph->probe_ms : 0;

		ph->probe_ms = 0;
		pol_feed(p, POL_EV_PROBE_ANSWERED, 0, rtt > UINT32_MAX ? 0 : (uint32_t)rtt, now);
	}
}

void
peer_timers_sessions_ended(struct peer *p)
{
	sessions_ended(p, PEER_EV_RESET);
}

void
peer_timers_reset(struct peer *p)
{
	timer_disarm(p->ev_rekey);
	timer_disarm(p->ev_dead);
	p->unanswered_ms = 0;
}

static void
path_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	peer_timers_path_due(p, toud_now(p->toud));
}

void
peer_timers_path_due(struct peer *p, uint64_t now)
{
	struct path_probe *pp = &p->probe;
	struct session *s = p->cur;
	char a[UTIL_ADDRSTRLEN], b[UTIL_ADDRSTRLEN];

	if (pp->state == PATH_PROBING && (!s || !path_probing_for(pp, s->id)))
		path_reset(pp);         /* the session it was for is gone */
	switch (path_due(pp, now)) {
	case PATH_DUE_NOTHING:
		break;
	case PATH_DUE_CHALLENGE:
		if (!path_may_send(pp, TX_PATH_WIRE_MAX)) {
			p->events[EVENT_PATH_BUDGET_BLOCKED]++;
			path_sent(pp, 0, now);
		} else if (tx_path_message(s, GUE_CTYPE_CHALLENGE, pp->token, &pp->addr,
		    &pp->local, session_ids_wire(s, pp->wire_index)) == 0) {
			p->events[EVENT_PATH_CHALLENGE_SENT]++;
			path_sent(pp, TX_PATH_WIRE_MAX, now);
		} else {
			p->drops[DROP_SEAL]++;
			path_sent(pp, 0, now);
		}
		break;
	case PATH_DUE_FAILED:
		p->events[EVENT_PATH_FAILED]++;
		log_warnx("peer \"%s\": %s did not answer %u path challenges: the endpoint stays %s",
		    p->name, util_sa_fmt(&pp->addr, a, sizeof(a)), pp->tries,
		    util_sa_fmt(&s->addr, b, sizeof(b)));
		path_reset(pp);
		break;
	}
	if (pp->state == PATH_PROBING)
		ARM(p, path, pp->next_ms > now ? pp->next_ms - now : 0);
	else
		timer_disarm(p->ev_path);
}

/* --- the path policy --------------------------------------------------- */

/* The node that has endpoint-tcp leads (opens and chooses paths); the
 * other follows its peer (path_policy.h). */
static bool
leads(const struct peer *p)
{
	return p->cf->endpoint_tcp_host != NULL;
}

static struct peer_path *
path_of(struct peer *p, int i)
{
	return &p->paths->path[i];
}

static int
path_index(const struct peer *p, const struct peer_path *ph)
{
	return (int)(ph - p->paths->path);
}

/* The policy's clock: monotonic, never 0, and never behind what it was
 * fed (stamps fed at the tick are older than events fed at once). */
static uint64_t
pol_clock(struct peer *p, uint64_t at)
{
	if (at < p->paths->pol_ms)
		at = p->paths->pol_ms;
	if (!at)
		at = 1;
	return p->paths->pol_ms = at;
}

/* Probe path i (path_policy.h: what a probe is belongs to the transport).
 * UDP with DTLS: a path challenge on the session, or without one (and
 * each fourth probe in a row missed: the peer may have lost it) a
 * handshake, whose completion is the answer.  Otherwise a challenge on
 * the path itself (in the TCP stream), answered on it. */
static void
probe(struct peer *p, int i, uint64_t now)
{
	struct peer_path *ph = path_of(p, i);
	struct session *s = p->cur;

	ph->probe_ms = now;
	if (RAND_bytes(ph->token, sizeof(ph->token)) != 1)
		return;                 /* missed, as a lost one is */
	if (i != 0 || !p->toud->dtls) {
		tx_control_on(p->toud, p, ph, GUE_CTYPE_CHALLENGE, ph->token, sizeof(ph->token));
		return;
	}
	if (s && s->established && (p->paths->pol.path[i].reprobes % 4 != 3 || p->next)) {
		tx_path_message(s, GUE_CTYPE_CHALLENGE, ph->token, &s->addr, &s->local, 0);
	} else if (p->has_endpoint && !p->next) {
		p->hs_retry_ms = 0;
		handshake_initiate(p, now);
	}
}

/* Carry out the policy's answer: move, probe, open, close, and arm its
 * tick.  A leader also looks each PEER_TRANSPORT_TICK_MS, to feed the
 * stamps the data path keeps (transport.h). */
static void
pol_apply(struct peer *p, const struct pol_out *o, uint64_t now)
{
	struct peer_paths *pp = p->paths;
	bool moved = false;
	uint64_t d = 0;
	bool arm = leads(p);
	unsigned k;

	if (o->send != POL_NONE && (unsigned)o->send != pp->active) {
		peer_path_move(p, path_of(p, o->send), o->why ? o->why : "a path came up");
		moved = true;
	} else if (o->send == POL_NONE && pp->active != 0) {
		/* No path carries: what is sent waits on the preferred one
		 * (UDP holds it for a handshake), and show says so. */
		peer_path_move(p, path_of(p, 0), "the path in use went down");
	}
	for (k = 0; k < o->n; k++) {
		int i = (int)o->act[k].path;
		struct peer_path *ph = path_of(p, i);

		log_debug("peer \"%s\": path policy: %s %s", p->name, pol_do_name(o->act[k].what),
		    ph->ops->name);
		switch (o->act[k].what) {
		case POL_DO_PROBE:
			probe(p, i, now);
			break;
		case POL_DO_OPEN:
			if (!ph->ops->open || ph->ops->open(p, ph) < 0)
				pol_feed(p, POL_EV_OPEN_FAILED, i, 0, now);
			break;
		case POL_DO_CLOSE:
			ph->probe_ms = 0;
			if (ph->ops->close)
				ph->ops->close(p, ph);
			break;
		}
	}
	if (moved) {
		/* The peer follows what it receives: tell it at once, and
		 * what waited for a path goes. */
		tx_control(p->toud, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
		tx_send_staged(p);
	}
	if (arm)
		d = PEER_TRANSPORT_TICK_MS;
	if (o->next_tick_ms) {
		uint64_t n = o->next_tick_ms > now ? o->next_tick_ms - now : 0;

		if (!arm || n < d)
			d = n;
		arm = true;
	}
	if (arm)
		ARM(p, transport, d);
}

/* Whether UDP can carry p's traffic: the leader's while p has an endpoint
 * (a handshake is its probe), a follower's while it has a session (with
 * encryption = none, an endpoint). */
static bool
udp_usable(const struct peer *p)
{
	return p->has_endpoint && (!p->toud->dtls || leads(p) || p->cur);
}

/* Feeds one event; the policy first learns whether UDP is up, which
 * changes without an event of its own (an endpoint resolved or lost). */
static void
pol_feed(struct peer *p, enum pol_event ev, int i, uint32_t arg, uint64_t at)
{
	struct path_policy *pol = &p->paths->pol;
	struct pol_out o;
	uint64_t now = pol_clock(p, at);
	bool udp = udp_usable(p);

	if (pol->n && udp != pol->path[0].up && !(i == 0 && (ev == POL_EV_UP ||
	    ev == POL_EV_DOWN))) {
		path_policy_event(pol, udp ? POL_EV_UP : POL_EV_DOWN, 0, 0, now, &o);
		pol_apply(p, &o, now);
	}
	path_policy_event(pol, ev, i, arg, now, &o);
	pol_apply(p, &o, now);
}

static void
udp_sync(struct peer *p, uint64_t now)
{
	pol_feed(p, POL_EV_TICK, POL_NONE, 0, now);
}

/* The tick: what the data path stamped since (records received, data
 * unanswered), then the policy's own look. */
static void
pol_tick(struct peer *p, uint64_t now)
{
	unsigned i;

	for (i = 0; i < p->paths->n; i++) {
		struct peer_path *ph = path_of(p, (int)i);

		if (ph->rx_ms > p->paths->pol.path[i].rx_ms)
			pol_feed(p, POL_EV_RX, (int)i, 0, ph->rx_ms);
		if (ph->tx_ms)
			pol_feed(p, POL_EV_TX, (int)i, 0, ph->tx_ms);
	}
	pol_feed(p, POL_EV_TICK, POL_NONE, 0, now);
}

static void
transport_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	if (p->paths)
		pol_tick(p, toud_now(p->toud));
}

void
peer_timers_path_rx_other(struct peer *p, struct peer_path *ph, uint64_t now)
{
	pol_feed(p, POL_EV_RX, path_index(p, ph), 0, now);
}

bool
peer_timers_probe_answered(struct peer *p, struct peer_path *ph, const uint8_t *token,
    uint64_t now)
{
	uint64_t rtt;

	if (!ph->probe_ms || memcmp(token, ph->token, PATH_TOKEN_LEN) != 0)
		return false;
	rtt = now > ph->probe_ms ? now - ph->probe_ms : 0;
	ph->probe_ms = 0;
	/* What was sent before the answer is answered. */
	ph->tx_ms = 0;
	pol_feed(p, POL_EV_PROBE_ANSWERED, path_index(p, ph),
	    rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt, now);
	return true;
}

void
peer_timers_path_up(struct peer *p, struct peer_path *ph)
{
	uint64_t now = toud_now(p->toud);

	peer_error_clear(p);
	peer_timers_authenticated_rx(p, now);
	pol_feed(p, POL_EV_UP, path_index(p, ph), 0, now);
	tx_send_staged(p);
}

void
peer_timers_path_down(struct peer *p, struct peer_path *ph, const char *why)
{
	const struct path_policy *pol = &p->paths->pol;
	int i = path_index(p, ph);

	ph->probe_ms = 0;
	pol_feed(p, pol->path[i].up ? POL_EV_DOWN : POL_EV_OPEN_FAILED, i, 0, toud_now(p->toud));
	/* Why the peer cannot be reached, not news of a path it does not
	 * need. */
	if (pol->active == POL_NONE || pol->path[pol->active].failed)
		peer_error_set(p, PEER_ERR_PATH_DOWN, "%s", why);
}

void
peer_timers_path_mismatch(struct peer *p, struct peer_path *ph, const char *why)
{
	(void)ph;
	peer_error_keep(p, PEER_ERR_PSK_MISMATCH, "%s", why);
}

void
peer_timers_path_changed(struct peer *p)
{
	tx_control(p->toud, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
	if (p->paths)
		pol_feed(p, POL_EV_ADDR_CHANGED, POL_NONE, 0, toud_now(p->toud));
}

/* The policy afresh, leading or following as the configuration says: the
 * paths up now are up. */
static void
pol_init(struct peer *p, uint64_t now)
{
	struct peer_paths *pp = p->paths;
	unsigned i;

	path_policy_init(&pp->pol, leads(p));
	for (i = 0; i < pp->n; i++)
		path_policy_add(&pp->pol, (uint8_t)i, leads(p) && pp->path[i].ops->open);
	for (i = 1; i < pp->n; i++)
		if (pp->path[i].ops->state(p, &pp->path[i]) == TRANSPORT_UP)
			pol_feed(p, POL_EV_UP, (int)i, 0, now);
	/* The first look once the endpoint had its chance to resolve. */
	if (leads(p))
		ARM(p, transport, PEER_TRANSPORT_TICK_MS);
}

static void
ping_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	peer_ping_done(arg, false);
}

int
peer_timers_ping(struct peer *p, peer_ping_fn *fn, void *arg)
{
	struct session *s = p->cur;
	int r;

	if (!s || !s->established)
		return -ENOTCONN;
	if (p->ping_fn)
		return -EBUSY;
	if (RAND_bytes(p->ping_token, sizeof(p->ping_token)) != 1)
		return -EIO;
	/* The deadline first: a ping without one would never end. */
	if (ARM(p, ping, PEER_PING_TIMEOUT_MS) < 0)
		return -ENOMEM;
	if ((r = tx_path_message(s, GUE_CTYPE_CHALLENGE, p->ping_token, &s->addr, &s->local,
	    0)) < 0) {
		timer_disarm(p->ev_ping);
		return r;
	}
	p->ping_fn = fn;
	p->ping_arg = arg;
	return 0;
}

void
peer_timers_ping_done(struct peer *p)
{
	timer_disarm(p->ev_ping);
}

int
peer_timers_init(struct peer *p)
{
	path_reset(&p->probe);
	if (p->paths)
		pol_init(p, toud_now(p->toud));
	/* The first keepalive goes out at once: it opens the NAT mapping and
	 * tells the peer where we are. */
	if (p->cf->keepalive && ARM(p, keepalive, 0) < 0)
		return -ENOMEM;
	return 0;
}

void
peer_timers_reconfigure(struct peer *p)
{
	struct peer_path *act;

	/* A reload took endpoint-tcp away: what we opened closes, since
	 * nothing would probe UDP again; the policy starts over, leading or
	 * following. */
	if (p->paths && leads(p) != p->paths->pol.leads) {
		act = peer_path_active(p);
		if (!leads(p) && act != path_of(p, 0) && act->ops->outgoing(p, act)) {
			peer_path_move(p, path_of(p, 0), "endpoint-tcp removed");
			act->ops->close(p, act);
		}
		timer_disarm(p->ev_transport);
		pol_init(p, toud_now(p->toud));
	}
	if (p->cf->keepalive) {
		ARM(p, keepalive, 0);     /* at once, or re-evaluated with the new interval */
	} else if (p->ev_keepalive) {
		event_free(p->ev_keepalive);
		p->ev_keepalive = NULL;
	}
}

void
peer_timers_free(struct peer *p)
{
	if (p->ev_keepalive)
		event_free(p->ev_keepalive);
	if (p->ev_liveness)
		event_free(p->ev_liveness);
	if (p->ev_retry)
		event_free(p->ev_retry);
	if (p->ev_rekey)
		event_free(p->ev_rekey);
	if (p->ev_dead)
		event_free(p->ev_dead);
	if (p->ev_passive)
		event_free(p->ev_passive);
	if (p->ev_path)
		event_free(p->ev_path);
	if (p->ev_ping)
		event_free(p->ev_ping);
	if (p->ev_transport)
		event_free(p->ev_transport);
	p->ev_transport = NULL;
	p->ev_keepalive = p->ev_liveness = p->ev_retry = p->ev_rekey = p->ev_dead = NULL;
	p->ev_passive = p->ev_path = p->ev_ping = NULL;
}
