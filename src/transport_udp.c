/* transport_udp.c - UDP as a transport (transport.h): GUE datagrams, in
 * DTLS records with encryption = dtls, plain with none.  The preferred
 * path of every peer.
 *
 * It opens by itself: a payload for a peer with no session is held and
 * starts a handshake (handshake.c), whose completion sends what was held
 * (tx_send_staged()).  What it queues leaves in udpout.c's batches and is
 * accounted when it has left.  Registered by daemon.c; nothing in the
 * core calls it but through its ops. */
#include <errno.h>

#include "ctx.h"
#include "drop.h"
#include "dtls.h"
#include "handshake.h"
#include "log.h"
#include "peer.h"
#include "record.h"
#include "session.h"
#include "transport.h"
#include "transport_udp.h"
#include "tx.h"
#include "udp.h"
#include "udpout.h"

/* Sent data unanswered this long means the peer lost our session (it
 * restarted, say): start a new handshake rather than wait for a timer. */
#define UDP_SESSION_STALE_MS 5000

/* With DTLS: sealed on the session p sends on, or held while the handshake
 * runs (bounded; the oldest is dropped and counted). */
static int
udp_seal(struct peer *p, uint8_t *payload, size_t len, uint8_t tos, enum tx_payload kind,
    uint64_t now)
{
	struct session *s = p->cur;
	struct dtls_record r;
	bool data = kind != TX_CONTROL;

	if (!s) {
		if (peer_pending_push(p, payload, len, tos) < 0)
			p->drops[DROP_QUEUE]++;
		if (handshake_initiate(p, now) < 0)
			log_debug_rl("peer \"%s\": cannot start a handshake", p->name);
		return TRANSPORT_NOT_SENT;
	}
	if ((kind == TX_PACKET ? session_seal_in_place(s, payload, len, &r) :
	    session_seal(s, payload, len, &r)) < 0) {
		p->drops[DROP_SEAL]++;
		return TRANSPORT_NOT_SENT;
	}
	/* The session is established (p->cur): nothing limits what it
	 * sends (handshake_may_send()). */
	tx_session_record(p->toud, s, &r, tos);
	/* Nothing authenticated from the peer for a while although we keep
	 * sending data: it may have lost the session.  Offer a new one.  Only
	 * data counts (toud(8)): a keepalive may answer the peer's last packet
	 * and need no answer itself; liveness watches keepalives. */
	if (data && !s->unanswered_ms)
		s->unanswered_ms = now;
	else if (data && now - s->unanswered_ms >= UDP_SESSION_STALE_MS &&
	    now - s->last_rx_ms >= UDP_SESSION_STALE_MS && !p->next)
		handshake_initiate(p, now);
	if (handshake_needs_rekey(p, now))
		handshake_initiate(p, now);
	return 0;
}

/* With encryption = none: a TUN packet joins the batch, a control message
 * leaves at once (nothing orders it against data); what its send did. */
static int
udp_plain(struct peer *p, uint8_t *payload, size_t len, uint8_t tos, enum tx_payload kind,
    uint64_t now)
{
	struct udp_msg m = { .buf = payload, .len = len, .peer = p->endpoint, .tos = tos };
	struct udpout *out = tx_udpout(p->toud);

	if (kind != TX_CONTROL) {
		udpout_queue(out, &(struct udpout_dgram){ .buf = payload, .len = len,
		    .to = &p->endpoint, .local = &p->local, .peer = p, .tos = tos });
		return 0;
	}
	if (p->local.family)
		m.local = p->local;
	p->last_tx_ms = now;    /* also when it fails, as a sent one would */
	udpout_send_now(out, &m, p);
	return m.err < 0 ? m.err : 0;
}

static int
udp_send(struct peer *p, struct peer_path *ph, uint8_t *payload, size_t len, uint8_t tos,
    enum tx_payload kind, uint64_t now)
{
	(void)ph;
	return p->toud->dtls ? udp_seal(p, payload, len, tos, kind, now) :
	    udp_plain(p, payload, len, tos, kind, now);
}

/* Up with a session to send on (a handshake under way: opening), or
 * with encryption = none an endpoint.  While another path carries the
 * traffic and the policy does not hold UDP for up (it failed its probes),
 * a session it still has proves nothing: opening while a handshake runs,
 * else down. */
static enum transport_state
udp_state(const struct peer *p, const struct peer_path *ph)
{
	if (!p->toud->dtls)
		return p->has_endpoint ? TRANSPORT_UP : TRANSPORT_DOWN;
	if (p->paths && &p->paths->path[p->paths->active] != ph &&
	    path_policy_state(&p->paths->pol, (int)(ph - p->paths->path)) != POL_STATE_UP)
		return p->next ? TRANSPORT_OPENING : TRANSPORT_DOWN;
	return p->cur ? TRANSPORT_UP : p->next ? TRANSPORT_OPENING : TRANSPORT_DOWN;
}

static bool
udp_outgoing(const struct peer *p, const struct peer_path *ph)
{
	(void)ph;
	return p->cur && p->cur->initiator;
}

static const char *
udp_cipher(const struct peer *p, const struct peer_path *ph)
{
	(void)ph;
	return p->cur && p->cur->dtls ? dtls_sess_cipher(p->cur->dtls) : "";
}

static const char *
udp_key_exchange(const struct peer *p, const struct peer_path *ph)
{
	(void)ph;
	return p->cur && p->cur->dtls ? dtls_sess_key_exchange(p->cur->dtls) : "";
}

static uint64_t
udp_rtt_us(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	(void)ph;
	return 0;               /* not measured on UDP */
}

const struct transport_ops transport_udp = {
	.name = "udp",
	.moved_event = EVENT_TRANSPORT_UDP,
	.addressed = true,
	.send = udp_send,
	.outgoing = udp_outgoing,
	.state = udp_state,
	.cipher = udp_cipher,
	.key_exchange = udp_key_exchange,
	.rtt_us = udp_rtt_us,
};
