/* peer.h - a configured peer: endpoint, state, counters.
 *
 * The state (peer_fsm.h: idle, handshaking, up, dead) is written only by
 * peer_event() in peer.c, from the transition table in peer_fsm.c; the
 * events come from the timer hooks in peer_timers.c, and a reload's
 * change of authentication from peer_reconfigure().
 *
 * The one cycle of files that call each other is here, and it is meant:
 * the sending path and the timers call each other, as WireGuard's send.c
 * and timers.c do.  tx.c tells the timers what it sent and starts a
 * handshake when a session is due for one; peer_timers.c sends keepalives,
 * path challenges and pings through tx.c and starts handshakes;
 * handshake.c reports to the timers; peer.c is the data the three share
 * (the peer, its held packets, peer_event()) and makes and frees its
 * timers.  {tx, peer_timers, handshake, peer} and no other file: rx.c,
 * daemon.c, toud.c, control.c, show.c and reload.c call into it from
 * above and are never called from it; what it calls below (session,
 * record, dtls, path, tunout, udpout, worker, ...) calls nothing in it.
 * The transports (transport.h: transport_udp.c, tcp.c) sit outside it:
 * the knot reaches them only through their ops, and they report through
 * the callbacks daemon.c passes in.  A new arrow that would close another
 * cycle becomes a callback passed in.  tests/cli/knot.sh fails the build's
 * tests on any other cycle, counting a header's static inline functions
 * as its module's. */
#ifndef TOUD_PEER_H
#define TOUD_PEER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drop.h"
#include "events.h"
#include "path.h"
#include "peer_fsm.h"
#include "peer_ref.h"
#include "transport.h"
#include "util.h"

struct toud;
struct conf_peer;
struct event;
struct session;
struct evdns_getaddrinfo_request;

#define PEER_PENDING_MAX 32        /* packets held while a handshake runs */
#define PEER_PING_TIMEOUT_MS 2000  /* touctl ping: no response by then is a loss */

/* touctl ping's answer: the response came (answered), or not in time, or
 * the peer went away. */
typedef void peer_ping_fn(void *arg, bool answered);

struct peer {
	struct toud *toud;
	struct peer_ref ref;            /* how batches name it */
	const struct conf_peer *cf;     /* owned by toud->conf */
	const char *name;
	struct x509_store_st *ca_store;    /* cf->ca, loaded once per configuration */

	/* The ways to reach it, one per transport, and the one its traffic
	 * takes (transport.h); NULL only in a peer built by hand (tests). */
	struct peer_paths *paths;
	uint64_t transport_switches;       /* how often its traffic moved */
	bool has_endpoint;
	union sockaddr_union endpoint;     /* written by peer_endpoint_set() (peer_endpoint.h) */
	uint64_t endpoint_changes;         /* ... from one address to another */
	/* encryption = none: the local address the peer last reached us at
	 * (IP_PKTINFO), used as the source of what we send it; family 0 = let
	 * the kernel choose.  With DTLS each session keeps its own (the one
	 * copy). */
	struct ipaddr local;

	/* The peer's tunnel addresses for compact TOU (first of each family). */
	struct ipaddr addr4, addr6;

	enum peer_state state;
	uint64_t last_rx_ms, last_tx_ms;   /* monotonic; 0 = never */
	uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets;
	uint64_t drops[DROP__MAX];
	uint64_t events[EVENT__MAX];       /* events.h */
	/* Liveness (peer_timers.c): the first time we sent since the last
	 * authenticated packet from the peer; 0 = answered. */
	uint64_t unanswered_ms;
	/* The last data (not a control message) from the peer; the passive
	 * keepalive answers it if we send nothing after it. */
	uint64_t last_data_rx_ms;

	/* encryption = dtls: the session we send on, the handshake we started,
	 * and the replaced one that still drains. */
	struct session *cur, *next, *prev;
	uint64_t last_handshake;           /* unix seconds; 0 = never */
	uint8_t key_fp[32];                /* fingerprint of the key it last authenticated with */
	unsigned hs_failures;              /* consecutive, for the retry back-off */
	uint64_t hs_retry_ms;              /* no new handshake before this */
	bool reconnect;                    /* retry handshakes even with nothing to send */
	uint64_t roam_log_ms;              /* rate limit of the roaming log line */
	/* A new address the current session's records came from, being
	 * validated before it becomes the endpoint (path.h). */
	struct path_probe probe;
	/* touctl ping: the token of the challenge in flight and whom to
	 * tell (NULL: none in flight). */
	uint8_t ping_token[PATH_TOKEN_LEN];
	peer_ping_fn *ping_fn;
	void *ping_arg;
	uint64_t hs_log_ms;                /* ... of a failed handshake (handshake.c) */
	char hs_log_kind[40];              /* the kind of failure logged then */
	/* Why the peer is not up, for `touctl show`: the last handshake
	 * failure ("" once a session is up), and when the next handshake
	 * attempt is due (monotonic ms; 0 = none scheduled). */
	char *last_error;                  /* NULL: none; peer_error() reads it */
	uint8_t last_error_reason;         /* its kind: enum peer_error_reason */
	bool error_kept;                   /* last_error stays until cleared (peer_error_keep) */
	uint64_t next_attempt_ms;
	/* The last ICMP port unreachable from its endpoint: when (monotonic
	 * ms; 0 = none) and "nothing listens on UDP PORT at HOST". */
	uint64_t unreachable_ms;           /* what it said: peer_unreachable_fmt() */
	struct evdns_getaddrinfo_request *dns_req;   /* resolve.c, in flight */
	bool scope_missing;                /* resolve.c: fe80::…%IF whose IF is not there (said) */

	/* Packets waiting for the handshake: a ring of PEER_PENDING_MAX
	 * buffers of pending_size bytes and their lengths, allocated on
	 * first use (an idle peer keeps neither). */
	uint8_t *pending_mem;
	size_t pending_size;
	struct peer_pending { size_t len; uint8_t tos; } *pending;
	unsigned pending_head, pending_n;

	struct event *ev_keepalive;        /* peer_timers.c */
	struct event *ev_liveness;
	struct event *ev_retry;
	struct event *ev_rekey;
	struct event *ev_dead;             /* sent, unanswered */
	struct event *ev_passive;          /* received data, not yet answered */
	struct event *ev_path;             /* the next path challenge or verdict */
	struct event *ev_ping;             /* touctl ping's deadline */
	struct event *ev_transport;        /* the path policy's look (endpoint-tcp) */
};

/* The kinds of last_error, a fixed set (toud_peer_last_error's reason):
 * the handshake failed (timeout, alert, unknown key), was refused (a key
 * two peers accept), the preshared keys differ, the session's key is no
 * longer accepted, the peer closed the session, the session reached its
 * maximum age, the endpoint answered ICMP port unreachable, a path of
 * another transport (TCP) went down, a session without ML-KEM was refused
 * (post-quantum = required). */
enum peer_error_reason {
	PEER_ERR_HANDSHAKE_FAILED,
	PEER_ERR_HANDSHAKE_REFUSED,
	PEER_ERR_PSK_MISMATCH,
	PEER_ERR_KEY_REJECTED,
	PEER_ERR_CLOSED_BY_PEER,
	PEER_ERR_MAX_AGE,
	PEER_ERR_PORT_UNREACHABLE,
	PEER_ERR_PATH_DOWN,
	PEER_ERR_PQ_REFUSED,
	PEER_ERR__MAX
};

/* The reason's name: handshake_failed, psk_mismatch ... */
const char *peer_error_reason_name(enum peer_error_reason r);

/* Why the peer is not up (touctl show's last_error): set (printf, cut at
 * PEER_ERROR_MAX bytes) with its kind, cleared, read ("" when none).  On
 * the heap: most peers never have one. */
#define PEER_ERROR_MAX 320
static inline const char *
peer_error(const struct peer *p)
{
	return p->last_error ? p->last_error : "";
}

static inline void
peer_error_clear(struct peer *p)
{
	free(p->last_error);
	p->last_error = NULL;
	p->error_kept = false;
}

/* Those who say why a peer is down are the handshake and the policy; a
 * transport says it through transport_core's down (transport.h). */
static inline void peer_error_set(struct peer *p, enum peer_error_reason reason,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline void
peer_error_set(struct peer *p, enum peer_error_reason reason, const char *fmt, ...)
{
	char buf[PEER_ERROR_MAX], *s;
	va_list ap;

	if (p->error_kept)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (p->last_error && strcmp(p->last_error, buf) == 0 && p->last_error_reason == reason)
		return;
	if (!(s = strdup(buf)))
		return;         /* keeps the one it had */
	free(p->last_error);
	p->last_error = s;
	p->last_error_reason = (uint8_t)reason;
}

/* A reason that outweighs what later attempts say (a preshared-key
 * mismatch: every attempt on the other path only times out): set, and
 * kept until peer_error_clear() (a path or session up) or a change of the
 * peer's keys (peer_reconfigure()). */
static inline void peer_error_keep(struct peer *p, enum peer_error_reason reason,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline void
peer_error_keep(struct peer *p, enum peer_error_reason reason, const char *fmt, ...)
{
	char buf[PEER_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	p->error_kept = false;
	peer_error_set(p, reason, "%s", buf);
	p->error_kept = true;
}

/* "nothing listens on UDP PORT at HOST" for p's endpoint, the last ICMP
 * port unreachable's (p->unreachable_ms) */
#define PEER_UNREACHABLE_MAX 96
const char *peer_unreachable_fmt(const struct peer *p, char *buf, size_t len);

/* Create a peer from its configuration: endpoint (a literal address, or a
 * name resolved now; failure leaves it without one and logs), addresses. */
struct peer *peer_new(struct toud *t, const struct conf_peer *cf);
void peer_free(struct peer *p);
/* Reload: take a new configuration of the same peer.  Unchanged: nothing
 * happens; changed: one log line names the keys (conf_diff_peer()), routes,
 * endpoint and timers follow, and the sessions stay unless fingerprint, ca
 * or name changed (then they end and the peer handshakes again). */
int peer_reconfigure(struct peer *p, const struct conf_peer *cf);
/* Install/remove the peer's addresses and allowed-ips: in toud->routes
 * and as kernel routes via the TUN (a clash names the route). */
int peer_install(struct peer *p);
void peer_uninstall(struct peer *p);

/* Host changes (daemon.c's rtnetlink monitor).  A change matters to a peer
 * only if it can move the local address we reach it from: its local
 * address was removed, the default route of its endpoint's family changed,
 * or it has no local address yet and one of that family appeared; and
 * only a peer with a path to keep (a session, or a reason to make one),
 * not one configured but never needed.  An unrelated change (a
 * container's veth appearing) concerns nobody.
 * peer_netchange_note() gathers one event and says whether any peer may be
 * concerned (the caller then arms its debounce); peer_netchange_apply()
 * makes the concerned peers forget their local address and tells their
 * timers (peer_timers_path_changed(): a keepalive at once), so they learn
 * our new endpoint. */
struct rtnl_event;
struct toud_netchange;
bool peer_netchange_note(struct toud *t, const struct rtnl_event *ev);
void peer_netchange_lost(struct toud *t);
bool peer_netchange_affects(const struct toud_netchange *nc, const struct peer *p);
void peer_netchange_apply(struct toud *t);

struct peer *peer_find_by_endpoint(struct toud *t, const union sockaddr_union *sa);
/* An ICMP port unreachable came back from dest: the peer whose endpoint it
 * is learns that nothing listens there (the log, once a minute, and its
 * last_error while it has no session; a handshake that then fails says
 * so).  Nothing changes its state: ICMP is easily forged. */
void peer_unreachable(struct toud *t, const union sockaddr_union *dest, uint64_t now);
struct peer *peer_find_by_name(struct toud *t, const char *name);

/* Accounting hooks called by the data path. */
void peer_rx(struct peer *p, size_t bytes, uint64_t now_ms);
/* (What left is counted by peer_tx(), peer_count.h.) */
/* The only writer of p->state: apply the transition of event e
 * (peer_fsm.c), log a change, tell the service manager. */
void peer_event(struct peer *p, enum peer_event e);
/* STATUS= for the service manager: how many peers are up. */
void peer_report_status(struct toud *t);
/* The roaming rule (DESIGN 5): a record of session s from `from`, wire_len
 * bytes on the wire, received at our address `local`, authenticated with
 * record number seq.  A record newer than every one accepted before that
 * comes from another address starts validating that address (path.h); the
 * endpoint moves when peer_path_response() sees the answer.  index is the
 * record's session ID (sessid.h): from the endpoint, a newer one means the
 * peer moved to it, and so do we; towards a new address the challenge
 * carries an ID never used before. */
void peer_authenticated_rx(struct peer *p, struct session *s, const union sockaddr_union *from,
    const struct ipaddr *local, uint64_t seq, uint32_t index, size_t wire_len, uint64_t now);
/* A path response (token) arrived on session s. */
void peer_path_response(struct peer *p, struct session *s, const uint8_t *token, uint64_t now);
/* End the ping in flight (peer_timers_ping()), telling its caller
 * (answered or not). */
void peer_ping_done(struct peer *p, bool answered);
/* Forget the caller of the ping in flight without telling it (it went away). */
void peer_ping_cancel(struct peer *p);

/* The only writer of p->paths->active: move its traffic to ph (counted,
 * logged with why).  The policy is peer_timers.c's. */
void peer_path_move(struct peer *p, struct peer_path *ph, const char *why);

/* The path p's traffic takes (per packet: inline), and its state. */
static inline struct peer_path *
peer_path_active(const struct peer *p)
{
	return &p->paths->path[p->paths->active];
}

/* Its UDP path (the preferred one, registered first: the path of its
 * DTLS sessions), or NULL (a peer built by hand). */
static inline struct peer_path *
peer_path_udp(const struct peer *p)
{
	return p->paths ? &p->paths->path[0] : NULL;
}

static inline enum transport_state
peer_path_state(const struct peer *p)
{
	struct peer_path *ph = peer_path_active(p);

	return ph->ops->state(p, ph);
}

/* The name of the transport p's traffic takes ("udp", "tcp": touctl
 * show's transport); a peer without paths (built by hand) is on "udp". */
const char *peer_transport_name(const struct peer *p);
/* The cipher of what carries p's traffic ("" when nothing does): its
 * DTLS session's on UDP, its TLS connection's on TCP. */
const char *peer_cipher(const struct peer *p);
/* The key exchange of what carries p's traffic ("" when none): its
 * active path's (transport.h). */
const char *peer_key_exchange(const struct peer *p);

/* Whether a path other than the preferred one carries p's traffic now:
 * a failed handshake of the preferred path (a probe of it) is then no
 * loss, no last_error and no warning (handshake.c, peer_timers.c). */
static inline bool
peer_on_fallback(const struct peer *p)
{
	return p->paths && p->paths->active != 0 && peer_path_state(p) == TRANSPORT_UP;
}

/* Hold / take packets queued while handshaking (oldest dropped and
 * counted when full). */
int peer_pending_push(struct peer *p, const uint8_t *payload, size_t len, uint8_t tos);
/* The oldest held packet, or false; valid until the next push. */
bool peer_pending_pop(struct peer *p, const uint8_t **payload, size_t *len, uint8_t *tos);

#endif
