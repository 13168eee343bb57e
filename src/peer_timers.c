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
 * transport: with endpoint-tcp, every PEER_TRANSPORT_TICK_MS the policy
 *   looks at the peer's paths (transport.h, peer_timers.h): the preferred
 *   one (UDP) unanswered for PEER_TCP_FALLBACK_MS while data waits, it
 *   opens the fallback (TCP; after a failed open 1, 2, 4 ... 30 s later);
 *   on the fallback it probes UDP after 1, 2, 4 ... 16 s, and moves back
 *   once a probe is answered.  It reaches the paths only through their
 *   transport ops.
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
#define TCP_RETRY_MIN_MS 1000
#define TCP_RETRY_MAX_MS 30000
#define UDP_PROBE_MIN_MS 1000
#define UDP_PROBE_MAX_MS 16000

static void keepalive_cb(evutil_socket_t, short, void *);
static void liveness_cb(evutil_socket_t, short, void *);
static void retry_cb(evutil_socket_t, short, void *);
static void rekey_cb(evutil_socket_t, short, void *);
static void dead_cb(evutil_socket_t, short, void *);
static void passive_cb(evutil_socket_t, short, void *);
static void path_cb(evutil_socket_t, short, void *);
static void ping_cb(evutil_socket_t, short, void *);
static void transport_cb(evutil_socket_t, short, void *);

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

/* The preferred path (path[0]: UDP), and the one the policy opens when it
 * does not answer: the first other that opens on request (TCP). */
static struct peer_path *
preferred(struct peer *p)
{
	return &p->paths->path[0];
}

static struct peer_path *
fallback(struct peer *p)
{
	unsigned i;

	for (i = 1; i < p->paths->n; i++)
		if (p->paths->path[i].ops->open)
			return &p->paths->path[i];
	return NULL;
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
	peer_error_set(p, "closed by the peer");
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
		peer_error_set(p, "handshake failed: %s", why);
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
		peer_error_set(p, "session reached its maximum age");
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
	/* Off the preferred path, a new session on it is worth a probe at
	 * once. */
	if (p->paths && p->paths->active != 0)
		preferred(p)->next_ms = 0;
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

/* --- the transport policy ---------------------------------------------- */

static uint64_t
backoff_ms(uint64_t min, uint64_t max, unsigned n)
{
	uint64_t d = min << (n < 6 ? n : 6);

	return d > max ? max : d;
}

/* On the preferred path: whether what we send has gone unanswered long
 * enough (sent data and heard nothing, or packets held for a handshake
 * that does not complete) to open the fallback. */
static bool
stalled(struct peer *p, struct peer_path *pref, uint64_t now)
{
	if (!p->cur && p->pending_n) {
		if (!pref->held_since_ms)
			pref->held_since_ms = now;
	} else {
		pref->held_since_ms = 0;
	}
	return (p->unanswered_ms && now - p->unanswered_ms >= PEER_TCP_FALLBACK_MS) ||
	    (pref->held_since_ms && now - pref->held_since_ms >= PEER_TCP_FALLBACK_MS);
}

/* On the fallback: probe the preferred path.  With a session, a path
 * challenge to its address (answered over UDP whatever the peer's
 * transport); without one, or after three unanswered challenges (the peer
 * may have lost the session), a handshake, whose completion makes the
 * next probe due. */
static void
probe(struct peer *p, struct peer_path *pref, uint64_t now)
{
	struct session *s = p->cur;

	if (now < pref->next_ms)
		return;
	pref->next_ms = now + backoff_ms(UDP_PROBE_MIN_MS, UDP_PROBE_MAX_MS, pref->fails);
	if (s && s->established && (pref->fails % 4 != 3 || p->next)) {
		if (RAND_bytes(pref->token, sizeof(pref->token)) == 1 &&
		    tx_path_message(s, GUE_CTYPE_CHALLENGE, pref->token, &s->addr, &s->local,
		    0) == 0)
			pref->probing = true;
	} else if (p->has_endpoint && !p->next) {
		p->hs_retry_ms = 0;
		handshake_initiate(p, now);
	}
	pref->fails++;
}

static void
transport_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	struct peer_path *pref = preferred(p), *fb = fallback(p), *act = peer_path_active(p);
	uint64_t now = toud_now(p->toud);

	(void)fd;
	(void)what;
	if (!p->cf->endpoint_tcp_host || !fb)
		return;                 /* a reload took it away: the timer rests */
	if (act != pref && act->ops->outgoing(p, act)) {
		probe(p, pref, now);
	} else if (act == pref && stalled(p, pref, now) &&
	    fb->ops->state(p, fb) == TRANSPORT_DOWN && now >= fb->next_ms &&
	    fb->ops->open(p, fb) < 0) {
		fb->next_ms = now + backoff_ms(TCP_RETRY_MIN_MS, TCP_RETRY_MAX_MS, fb->fails++);
	}
	ARM(p, transport, PEER_TRANSPORT_TICK_MS);
}

void
peer_timers_path_up(struct peer *p, struct peer_path *ph)
{
	struct peer_path *pref = preferred(p);
	uint64_t now = toud_now(p->toud);
	char why[64];

	ph->fails = 0;
	ph->next_ms = 0;
	pref->held_since_ms = 0;
	p->unanswered_ms = 0;
	pref->fails = 0;
	pref->probing = false;
	pref->next_ms = now + UDP_PROBE_MIN_MS;
	if (ph->ops->outgoing(p, ph))
		snprintf(why, sizeof(why), "%s does not answer", pref->ops->name);
	else
		snprintf(why, sizeof(why), "the peer connected over %s", ph->ops->name);
	peer_path_move(p, ph, why);
	peer_error_clear(p);
	peer_timers_authenticated_rx(p, now);
	tx_send_staged(p);
}

void
peer_timers_path_down(struct peer *p, struct peer_path *ph, const char *why)
{
	struct peer_path *pref = preferred(p);
	uint64_t now = toud_now(p->toud);
	char buf[64];

	peer_error_set(p, "%s", why);
	pref->probing = false;
	if (p->cf->endpoint_tcp_host)
		ph->next_ms = now + backoff_ms(TCP_RETRY_MIN_MS, TCP_RETRY_MAX_MS, ph->fails++);
	if (peer_path_active(p) == ph) {
		snprintf(buf, sizeof(buf), "the %s connection ended", ph->ops->name);
		peer_path_move(p, pref, buf);
		/* Back on the preferred path, what is sent from now on is
		 * measured afresh. */
		p->unanswered_ms = 0;
	}
}

void
peer_timers_path_validated(struct peer *p, struct peer_path *pref)
{
	struct peer_path *act = peer_path_active(p);
	char why[64];

	pref->probing = false;
	pref->fails = 0;
	if (act == pref)
		return;
	p->unanswered_ms = 0;
	snprintf(why, sizeof(why), "a %s probe was answered", pref->ops->name);
	peer_path_move(p, pref, why);
	act->ops->close(p, act);
}

void
peer_timers_path_changed(struct peer *p)
{
	tx_control(p->toud, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
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
	if (p->cf->endpoint_tcp_host && ARM(p, transport, PEER_TRANSPORT_TICK_MS) < 0)
		return -ENOMEM;
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

	if (p->cf->endpoint_tcp_host && !timer_pending(p->ev_transport))
		ARM(p, transport, PEER_TRANSPORT_TICK_MS);
	/* A reload took endpoint-tcp away: nothing would probe UDP again. */
	act = peer_path_active(p);
	if (!p->cf->endpoint_tcp_host && act != preferred(p) && act->ops->outgoing(p, act)) {
		peer_path_move(p, preferred(p), "endpoint-tcp removed");
		act->ops->close(p, act);
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
