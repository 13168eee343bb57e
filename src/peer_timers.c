/* peer_timers.c - every per-peer timer lives here.
 *
 * keepalive: with `keepalive = N`, a keepalive control message goes out
 *   after N seconds without outgoing traffic, so NAT mappings stay open for
 *   traffic the other side starts.
 * liveness: a peer is "up" while something arrived from it within the
 *   liveness window (twice the keepalive interval, or PEER_IDLE_WINDOW_MS
 *   without keepalive).  After that it is "dead" if it should have sent
 *   keepalives, else "idle" (a quiet peer is not a broken one).
 *
 * retry: after a failed handshake, the next one waits 1, 2, 4 ... 60 s
 *   (with jitter); then it starts if packets are waiting, keepalive is on,
 *   or the peer closed our session (reconnect: 1 s after the close).
 * rekey: rekey-time after a session we initiated came up, a new handshake
 *   (rekey-bytes is checked on the send path).
 * session handshake: OpenSSL's retransmission timeout, and the deadline
 *   after which a handshake is abandoned.
 * session drain: a replaced session still decrypts late records for
 *   SESSION_DRAIN_MS, then goes.
 *
 * None of these is touched per packet: each fires, compares the time stamps
 * the data path keeps, and re-arms for the remainder. */
#include <errno.h>
#include <stdlib.h>

#include <event2/event.h>

#include "conf.h"
#include "dtls.h"
#include "gue.h"
#include "log.h"
#include "peer.h"
#include "resolve.h"
#include "session.h"
#include "toud.h"
#include "tx.h"

#define PEER_IDLE_WINDOW_MS 120000

static void
arm(struct event *ev, uint64_t ms)
{
	struct timeval tv = { .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	evtimer_add(ev, &tv);
}

static uint64_t
liveness_ms(const struct peer *p)
{
	return p->cf->keepalive ? 2000ULL * p->cf->keepalive : PEER_IDLE_WINDOW_MS;
}

static void
keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	uint64_t interval = 1000ULL * p->cf->keepalive, now = util_now_ms();

	(void)fd;
	(void)what;
	if (p->has_endpoint && now - p->last_tx_ms >= interval) {
		if (tx_control(p->toud, p, GUE_CTYPE_KEEPALIVE, NULL, 0) < 0)
			log_debug_rl("peer \"%s\": keepalive not sent", p->name);
		arm(p->ev_keepalive, interval);
		return;
	}
	arm(p->ev_keepalive, p->has_endpoint ? p->last_tx_ms + interval - now : interval);
}

static void
liveness_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	uint64_t window = liveness_ms(p), now = util_now_ms();

	(void)fd;
	(void)what;
	if (now - p->last_rx_ms < window) {
		arm(p->ev_liveness, p->last_rx_ms + window - now);
		return;
	}
	if (p->toud->dtls && p->cur && !p->cf->keepalive) {
		/* A quiet peer with a session is still up. */
		arm(p->ev_liveness, window);
		return;
	}
	peer_set_state(p, p->cf->keepalive ? PEER_DEAD : PEER_IDLE);
	if (p->toud->dtls && p->cf->keepalive)
		session_initiate(p);
}

#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 60000

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	if (!p->cur && (p->pending_n || p->cf->keepalive || p->reconnect))
		session_initiate(p);
}

#define RECONNECT_MS 1000               /* a restarting peer is usually back by then */

void
peer_timers_reconnect(struct peer *p)
{
	p->reconnect = true;
	p->hs_retry_ms = 0;
	arm(p->ev_retry, RECONNECT_MS);
}

void
peer_timers_hs_failed(struct peer *p)
{
	uint64_t delay = RETRY_MIN_MS << (p->hs_failures < 6 ? p->hs_failures : 6);

	if (delay > RETRY_MAX_MS)
		delay = RETRY_MAX_MS;
	delay += (uint64_t)(random() % (long)(delay / 4 + 1));   /* jitter */
	p->hs_failures++;
	p->hs_retry_ms = util_now_ms() + delay;
	resolve_peer(p);                /* the name may point elsewhere now */
	if (!p->cur)
		peer_set_state(p, PEER_DEAD);
	arm(p->ev_retry, delay);
}

static void
rekey_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	uint64_t now = util_now_ms();

	(void)fd;
	(void)what;
	if (session_needs_rekey(p, now))
		session_initiate(p);
	else if (p->cur && p->cur->initiator)
		arm(p->ev_rekey, p->cur->established_ms + 1000ULL * p->toud->conf->iface.rekey_seconds - now);
}

void
peer_timers_established(struct peer *p)
{
	arm(p->ev_liveness, liveness_ms(p));
	if (p->cur->initiator)
		arm(p->ev_rekey, 1000ULL * p->toud->conf->iface.rekey_seconds);
	else
		evtimer_del(p->ev_rekey);
	evtimer_del(p->ev_retry);
}

static void
session_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	session_handshake_timeout(arg);
}

static void
session_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	session_free(arg);
}

int
session_timers_init(struct session *s)
{
	s->ev_timer = evtimer_new(s->t->base, session_timer_cb, s);
	s->ev_drain = evtimer_new(s->t->base, session_drain_cb, s);
	return s->ev_timer && s->ev_drain ? 0 : -ENOMEM;
}

void
session_timers_free(struct session *s)
{
	if (s->ev_timer)
		event_free(s->ev_timer);
	if (s->ev_drain)
		event_free(s->ev_drain);
	s->ev_timer = s->ev_drain = NULL;
}

void
session_timers_handshake(struct session *s)
{
	struct timeval tv;
	uint64_t left, elapsed = util_now_ms() - s->created_ms;

	if (s->established) {
		evtimer_del(s->ev_timer);
		return;
	}
	left = elapsed >= SESSION_HANDSHAKE_MS ? 0 : SESSION_HANDSHAKE_MS - elapsed;
	if (dtls_sess_timeout(s->dtls, &tv) &&
	    (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000 < left) {
		evtimer_add(s->ev_timer, &tv);
		return;
	}
	arm(s->ev_timer, left);
}

void
session_timers_drain(struct session *s)
{
	evtimer_del(s->ev_timer);
	arm(s->ev_drain, SESSION_DRAIN_MS);
}

int
peer_timers_init(struct peer *p)
{
	struct event_base *base = p->toud->base;

	p->ev_liveness = evtimer_new(base, liveness_cb, p);
	p->ev_retry = evtimer_new(base, retry_cb, p);
	p->ev_rekey = evtimer_new(base, rekey_cb, p);
	if (!p->ev_liveness || !p->ev_retry || !p->ev_rekey)
		return -ENOMEM;
	if (p->cf->keepalive) {
		p->ev_keepalive = evtimer_new(base, keepalive_cb, p);
		if (!p->ev_keepalive)
			return -ENOMEM;
		/* The first keepalive goes out at once: it opens the NAT
		 * mapping and tells the peer where we are. */
		arm(p->ev_keepalive, 0);
	}
	return 0;
}

void
peer_timers_reconfigure(struct peer *p)
{
	if (p->cf->keepalive && !p->ev_keepalive) {
		p->ev_keepalive = evtimer_new(p->toud->base, keepalive_cb, p);
		if (p->ev_keepalive)
			arm(p->ev_keepalive, 0);
	} else if (!p->cf->keepalive && p->ev_keepalive) {
		event_free(p->ev_keepalive);
		p->ev_keepalive = NULL;
	} else if (p->ev_keepalive) {
		arm(p->ev_keepalive, 0);     /* re-evaluate with the new interval */
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
	p->ev_keepalive = p->ev_liveness = p->ev_retry = p->ev_rekey = NULL;
}

void
peer_timers_on_rx(struct peer *p)
{
	/* Called when the state is not yet up: the first packet in a while. */
	peer_set_state(p, PEER_UP);
	arm(p->ev_liveness, liveness_ms(p));
}
