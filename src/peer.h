/* peer.h - a configured peer: endpoint, state, counters.
 *
 * State (encryption = none): idle until anything is received, up while
 * traffic arrived within the liveness window, dead after that. */
#ifndef TOUD_PEER_H
#define TOUD_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "drop.h"
#include "util.h"

struct toud;
struct conf_peer;
struct event;
struct session;
struct evdns_getaddrinfo_request;

#define PEER_PENDING_MAX 32        /* packets held while a handshake runs */

enum peer_state { PEER_IDLE, PEER_HANDSHAKING, PEER_UP, PEER_DEAD };

struct peer {
	struct toud *toud;
	const struct conf_peer *cf;     /* owned by toud->conf */
	const char *name;

	bool has_endpoint;
	union sockaddr_union endpoint;
	/* The local address the peer last reached us at (IP_PKTINFO), used as
	 * the source of what we send it; family 0 = let the kernel choose. */
	struct ipaddr local;

	/* The peer's tunnel addresses for compact TOU (first of each family). */
	struct ipaddr addr4, addr6;

	enum peer_state state;
	uint64_t last_rx_ms, last_tx_ms;   /* monotonic; 0 = never */
	uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets;
	uint64_t drops[DROP__MAX];

	/* encryption = dtls: the session we send on, the handshake we started,
	 * and the replaced one that still drains. */
	struct session *cur, *next, *prev;
	uint64_t last_handshake;           /* unix seconds; 0 = never */
	uint8_t key_fp[32];                /* fingerprint of the key it last authenticated with */
	unsigned hs_failures;              /* consecutive, for the retry back-off */
	uint64_t hs_retry_ms;              /* no new handshake before this */
	bool reconnect;                    /* retry handshakes even with nothing to send */
	uint64_t roam_log_ms;              /* rate limit of the roaming log line */
	struct evdns_getaddrinfo_request *dns_req;   /* resolve.c, in flight */

	/* Packets waiting for the handshake: a ring of PEER_PENDING_MAX
	 * buffers of pending_size bytes, allocated on first use. */
	uint8_t *pending_mem;
	size_t pending_size;
	struct { size_t len; uint8_t tos; } pending[PEER_PENDING_MAX];
	unsigned pending_head, pending_n;

	struct event *ev_keepalive;        /* peer_timers.c */
	struct event *ev_liveness;
	struct event *ev_retry;
	struct event *ev_rekey;
};

/* Create a peer from its configuration: endpoint (a literal address, or a
 * name resolved now; failure leaves it without one and logs), addresses. */
struct peer *peer_new(struct toud *t, const struct conf_peer *cf);
void peer_free(struct peer *p);
/* Reload: take a new configuration of the same peer.  Unchanged: nothing
 * happens; changed: routes, endpoint and timers follow (sessions stay; new
 * keys apply from the next handshake). */
int peer_reconfigure(struct peer *p, const struct conf_peer *cf);
/* Install/remove the peer's addresses and allowed-ips: in toud->routes
 * and as kernel routes via the TUN (a clash names the route). */
int peer_install(struct peer *p);
void peer_uninstall(struct peer *p);
/* Only the prefix table part. */
int peer_routes_add(struct peer *p);
void peer_routes_del(struct peer *p);

struct peer *peer_find_by_endpoint(struct toud *t, const union sockaddr_union *sa);
struct peer *peer_find_by_name(struct toud *t, const char *name);

/* Accounting hooks called by the data path. */
void peer_rx(struct peer *p, size_t bytes, uint64_t now_ms);
void peer_tx(struct peer *p, size_t bytes, uint64_t now_ms);
void peer_set_state(struct peer *p, enum peer_state s);
const char *peer_state_name(enum peer_state s);
/* STATUS= for the service manager: how many peers are up. */
void peer_report_status(struct toud *t);

/* peer_timers.c: every per-peer timer. */
int peer_timers_init(struct peer *p);
void peer_timers_free(struct peer *p);
void peer_timers_on_rx(struct peer *p);
/* keepalive = changed by a reload. */
void peer_timers_reconfigure(struct peer *p);
/* A handshake failed: back off, then retry while there is something to send. */
void peer_timers_hs_failed(struct peer *p);
/* The peer closed our session: handshake again (with back-off) until a new
 * session is up. */
void peer_timers_reconnect(struct peer *p);
/* A session was established: arm the rekey deadline and liveness. */
void peer_timers_established(struct peer *p);

/* Session timers (also here, so all timing policy is in one file). */
int session_timers_init(struct session *s);
void session_timers_free(struct session *s);
/* Re-arm the handshake timer from OpenSSL's retransmission timeout. */
void session_timers_handshake(struct session *s);
/* The session was replaced: free it after SESSION_DRAIN_MS. */
void session_timers_drain(struct session *s);

/* Hold / take packets queued while handshaking (oldest dropped when full). */
int peer_pending_push(struct peer *p, const uint8_t *payload, size_t len, uint8_t tos);
void peer_pending_flush(struct peer *p);

#endif
