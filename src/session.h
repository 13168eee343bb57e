/* session.h - DTLS associations and their 64-bit session IDs.
 *
 * Every record on the wire carries the session ID in the outer GUE header
 * (DESIGN 2.1); sessions are found by that ID, never by address, which is
 * what lets a peer change address.  A session is created
 *   - by us as initiator (DTLS client) when a peer with a known endpoint
 *     has a packet to send, or to rekey;
 *   - by a ClientHello carrying a valid cookie (DTLS server); it belongs to
 *     no peer until the peer's certificate is accepted.
 * Each peer sends on one established session (cur); a newer one replaces it
 * and the old one drains for SESSION_DRAIN_MS. */
#ifndef TOUD_SESSION_H
#define TOUD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct toud;
struct peer;
struct dtls_sess;
struct event;

#define SESSION_DRAIN_MS 10000          /* an old session still receives this long */
#define SESSION_HANDSHAKE_MS 10000      /* a handshake not done by then is abandoned */
#define SESSION_HALF_OPEN_MAX 64        /* server handshakes in progress, in all */

struct session {
	struct toud *t;
	uint64_t id;
	struct dtls_sess *dtls;
	struct peer *peer;              /* NULL until authenticated (server side) */
	bool initiator;
	bool established;
	union sockaddr_union addr;      /* where its datagrams go */
	struct ipaddr local;            /* the local address the peer used */
	uint64_t created_ms, established_ms;
	uint64_t max_seq;               /* newest authenticated (epoch, seq): roaming rule */
	uint64_t bytes;                 /* sealed + opened, for rekey by volume */
	uint64_t last_rx_ms;            /* last authenticated record */
	uint64_t unanswered_ms;         /* first send since the last authenticated record */
	uint8_t tx_tos;                 /* ECN of the packet being sealed */
	struct event *ev_timer;         /* DTLS retransmission and handshake deadline */
	struct event *ev_drain;         /* drain deadline once replaced */
	struct session *hnext;          /* hash chain in t->sessions */
};

/* The session table lives in struct toud; these manage it. */
int session_table_init(struct toud *t);
void session_table_free(struct toud *t);
struct session *session_find(struct toud *t, uint64_t id);

/* Start a client handshake to p's endpoint (no-op if one is running). */
int session_initiate(struct peer *p);
/* Free a session, detaching it from its peer. */
void session_free(struct session *s);

/* Receive path: one datagram of encryption = dtls (outer GUE header and one
 * record).  Decrypted inner packets go to rx_inner(). */
void session_input(struct toud *t, uint8_t *dgram, size_t len, const union sockaddr_union *from,
    const struct ipaddr *local, uint8_t tos, uint8_t *scratch, size_t scratch_cap, uint64_t now);
/* Send path: seal an inner payload to p, or queue it while the handshake
 * runs (bounded; the oldest is dropped and counted). */
void session_send(struct peer *p, const uint8_t *payload, size_t len, uint8_t tos);

/* peer_timers.c: the handshake timer fired. */
void session_handshake_timeout(struct session *s);
/* Rekey check (peer_timers.c). */
bool session_needs_rekey(const struct peer *p, uint64_t now);

#endif
