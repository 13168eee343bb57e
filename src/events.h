/* events.h - counters of things that happen and are not losses: cookies
 * asked for, handshakes started, completed, failed.  Kept apart from the
 * drop counters (drop.h), whose old keys stay as they were.  Names are a
 * stable interface (JSON keys of "events"). */
#ifndef TOUD_EVENTS_H
#define TOUD_EVENTS_H

enum toud_event {
	EVENT_COOKIE_REQUESTED,         /* a ClientHello answered with a cookie request */
	EVENT_HANDSHAKE_ACCEPTED,       /* a ClientHello with a valid cookie opened a session */
	EVENT_HANDSHAKE_STARTED,        /* we started a handshake (initiator) */
	EVENT_HANDSHAKE_COMPLETED,      /* a handshake completed and its session is used */
	EVENT_HANDSHAKE_FAILED,         /* a handshake failed (unknown key, alert, timeout) */
	EVENT_SESSION_CLOSED,           /* the peer closed a session */
	EVENT_KEEPALIVE_SENT,           /* a keepalive went out (timer, answer or echo) */
	EVENT_KEEPALIVE_RECEIVED,       /* an authenticated keepalive arrived */
	EVENT_PATH_CHALLENGE_SENT,      /* a new address of the peer was challenged (path.h) */
	EVENT_PATH_BUDGET_BLOCKED,      /* a challenge held back: 3x what the address sent */
	EVENT_PATH_VALIDATED,           /* a new address answered: it is the endpoint now */
	EVENT_PATH_FAILED,              /* a new address never answered: the endpoint stayed */
	EVENT_PATH_RESPONSE_SENT,       /* we answered the peer's challenge */
	EVENT_PATH_RESPONSE_STALE,      /* a response that answers no running probe */
	EVENT_PATH_NO_ID,               /* a new address not challenged: no unused ID in the peer's window */
	EVENT_TUN_GSO_REFUSED,          /* the TUN refused a merged packet: sent as segments */
	EVENT_SEND_THREAD_BATCHES,      /* a batch of UDP sends went to the send thread */
	EVENT_TUN_THREAD_BATCHES,       /* a batch of TUN writes went to the TUN thread */
	EVENT_OPEN_THREAD_BATCHES,      /* a batch of records went to the opening thread */
	EVENT_PSK_MISMATCH,             /* a new session's records fail: preshared keys differ */
	EVENT_PQ_REFUSED,               /* a DTLS session without ML-KEM-768 refused, by either side */
	EVENT_TRANSPORT_TCP,            /* the peer's traffic moved to the TCP transport */
	EVENT_TRANSPORT_UDP,            /* ... and back to UDP */
	EVENT_TCP_ACCEPTED,             /* a TCP connection accepted on listen-tcp */
	EVENT_TCP_REFUSED,              /* one refused: source rate, connection cap */
	EVENT_TCP_HANDSHAKE_FAILED,     /* a TLS handshake failed, timed out or named no peer */
	EVENT_TCP_FRAMES_BAD,           /* a connection closed for an oversize or malformed frame */
	EVENT_TCP_CROSSED,              /* both sides connected at once: one connection kept */
	EVENT_METRICS_REFUSED,          /* a metrics request refused: Host, token, too many */
	EVENT_HANDSHAKE_LATE_RECORD,    /* a record for a session whose handshake failed lately */
	EVENT_TCP_LOOPED,               /* one refused: its source is a peer's, it came through a tunnel */
	EVENT_TCP_EVICTED,              /* one not yet authenticated closed to make room (half-open table) */
	EVENT_TCP_KEY_UPDATES,          /* a connection closed: TLS KeyUpdates faster than allowed */
	EVENT__MAX
};

struct toud;
struct peer;

const char *event_name(enum toud_event e);
/* Count event e on peer p, or on the interface when it belongs to no
 * peer (p NULL). */
void event_count(struct toud *t, struct peer *p, enum toud_event e);

#endif
