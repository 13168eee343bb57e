/* session.h - DTLS associations and their 64-bit session IDs.
 *
 * Every record on the wire carries the session ID in the outer GUE header
 * (DESIGN 2.1); sessions are found by that ID, never by address, which is
 * what lets a peer change address.  handshake.c creates sessions (as
 * initiator, or for a ClientHello with a valid cookie) and decides which
 * peer they belong to; each peer sends on one established session (cur), a
 * newer one replaces it and the old one drains for SESSION_DRAIN_MS.
 *
 * Once established, a session is known by a sequence of IDs (sessid.h):
 * it sends with one of them (wire_id, index tx_index) and accepts from the
 * oldest one still in use up to SESSID_WINDOW past the newest, each an
 * alias in the table.  A move to a new path moves to an unused ID (the
 * path's peer follows when that ID authenticates), and the sequence number
 * jumps, so the cleartext on the new path shares nothing with the old;
 * older IDs are retired SESSION_RETIRE_MS after nobody uses them.
 *
 * This file is a leaf: the table, the per-session drain timer, and
 * open/seal that report what happened.  It calls no rx, tx, peer or
 * handshake code; the one thing it does to a peer is to clear the peer's
 * pointer to a session it frees. */
#ifndef TOUD_SESSION_H
#define TOUD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sessid.h"
#include "util.h"

struct toud;
struct peer;
struct dtls_sess;
struct record_rx;
struct event;

#define SESSION_DRAIN_MS 10000          /* an old session still receives this long */
#define SESSION_HANDSHAKE_MS 10000      /* a handshake not done by then is abandoned */
#define SESSION_RETIRE_MS 10000         /* an ID no longer used is still accepted this long */
#define SESSION_ID_SLOTS 8              /* IDs in the table at once, per session */
/* Sequence numbers kept in hand: below this many left, a session asks to
 * be replaced. */
#define SESSION_SEQ_RESERVE (UINT64_C(1) << 32)

struct session;

#define SESSION_BUCKETS 256             /* ID hash table's first size (power of two) */

/* One ID of a session in the table. */
struct session_alias {
	uint64_t id;
	uint32_t index;
	bool in_table;
	struct session *s;
	struct session_alias *hnext;
};

struct session {
	struct toud *t;
	uint64_t id;                    /* ID 0, the handshake's: toud's name for the session */
	struct dtls_sess *dtls;
	struct peer *peer;              /* NULL until the handshake completed (server side) */
	bool initiator;
	bool established;
	bool half_open;                 /* counted in the handshake's half-open table */
	struct session *hnext_open, **hprev_open;      /* its list, while half open */
	union sockaddr_union addr;      /* where its datagrams go */
	/* The local address the peer reached us at (IP_PKTINFO), used as the
	 * source of this session's records; family 0 = the kernel chooses.
	 * The only copy in DTLS mode (peer->local serves encryption = none). */
	struct ipaddr local;
	uint64_t created_ms, established_ms;
	uint64_t max_seq;               /* newest authenticated (epoch, seq): roaming rule */
	uint64_t bytes;                 /* sealed + opened, for rekey by volume */
	uint64_t last_rx_ms;            /* last authenticated record */
	uint64_t unanswered_ms;         /* first send since the last authenticated record */
	unsigned rx_queued;             /* data records being opened (rxopen.c), not yet back */
	unsigned early_dropped;         /* data records dropped before established (rx.c counts) */
	unsigned auth_probes;           /* failed records answered before any opened (rx.c) */
	/* The handshake completed and named the peer, whose preshared key
	 * and post-quantum policy were applied; the ML-KEM-768 exchange
	 * runs (handshake_established()). */
	bool pq_wait;
	uint64_t hs_rx, hs_tx;          /* server, until established: the amplification budget */
	/* Client, until established: records that came back, and how many
	 * of them were HelloVerifyRequests (why a handshake failed). */
	unsigned hs_rx_records, hs_rx_cookie_requests;
	struct event *ev_timer;         /* handshake.c: retransmission and handshake deadline */
	struct event *ev_drain;         /* drain deadline once replaced */
	struct event *ev_retire;        /* retire IDs no longer used */
	struct session *lnext, **lprev; /* the table's list of every session */
	struct session *nnext;          /* the table's chain by s->id (session_named) */
	/* The IDs (sessid.h), once the handshake exported their seed. */
	bool ids_derived;
	uint8_t server_id;              /* the responder's, in every derived ID; 0: none */
	uint8_t id_seed[SESSID_SEED_LEN];
	uint64_t wire_id;               /* what our records to addr carry */
	uint32_t tx_index;              /* its index */
	uint32_t tx_max_index;          /* the highest index we ever sent with */
	uint32_t rx_index;              /* the newest index that authenticated */
	uint32_t lo_index;              /* the oldest index still accepted */
	unsigned rotations;             /* times wire_id changed */
	bool seq_low;                   /* few sequence numbers left: rekey */
	struct session_alias alias[SESSION_ID_SLOTS];   /* by index % SESSION_ID_SLOTS */
};

/* Every session of the daemon (t->sessions): by each ID on the wire, and
 * in one list; and how many server handshakes are half open. */
struct session_table {
	/* Grown (doubled) to keep the chains short: at most two IDs a
	 * bucket on average, so a lookup stays O(1) at any number of
	 * sessions.  NULL until the first ID. */
	struct session_alias **buckets;
	size_t n_buckets;               /* a power of two, or 0 */
	size_t n_ids;                   /* IDs in the table */
	uint64_t hash_key;              /* random: no chosen IDs pile up */
	/* Every session by the ID it was created with, the same way. */
	struct session **named;
	size_t n_named_buckets;
	struct session *list;
	size_t n;
	unsigned n_half_open;           /* server handshakes not yet authenticated */
	struct session *half_open;      /* ... and their list */
};

/* What a received record did. */
enum session_result {
	SESSION_NOTHING,        /* consumed: handshake progress, or nothing to report */
	SESSION_DATA,           /* plaintext produced (authenticated, not a replay) */
	SESSION_ESTABLISHED,    /* the handshake just completed */
	SESSION_FAILED,         /* the handshake failed: the caller frees the session */
	SESSION_CLOSED,         /* the peer closed the association */
	SESSION_REPLAY,         /* refused: a replay (seen before) */
	SESSION_REPLAY_OLD,     /* refused: older than the replay window */
	SESSION_BAD_RECORD,     /* refused: failed authentication or malformed */
};

struct session_table *session_table_new(void);
/* Frees every session in it first (shutdown). */
void session_table_free(struct session_table *st);
/* How many sessions there are (established, draining and handshaking),
 * and how many of them are half-open server handshakes; 0 without a table
 * (encryption = none). */
size_t session_count(const struct toud *t);
unsigned session_half_open(const struct toud *t);
/* Mark s as a half-open server handshake, counted until it authenticates
 * (session_half_open_done) or is freed. */
void session_half_open_add(struct session *s);
/* The half-open sessions one by one (NULL: the first), without walking
 * every session. */
struct session *session_next_half_open(const struct toud *t, const struct session *s);
void session_half_open_done(struct session *s);
/* Every session in turn: the first for NULL, then the one after s; NULL
 * after the last.  s may not be freed in between. */
struct session *session_next(const struct toud *t, const struct session *s);
/* The session an ID on the wire belongs to, and the ID's index (NULL if
 * none); session_named() finds a session by its ID 0 whatever IDs it uses. */
struct session *session_find(struct toud *t, uint64_t id, uint32_t *index);
struct session *session_named(struct toud *t, uint64_t id);
/* The handshake completed: export the ID seed and accept the next IDs;
 * with a server ID, an initiator sends with ID 1 from now on (the
 * responder follows it there), so that none but the handshake carries
 * the unroutable ID 0. */
void session_ids_start(struct session *s);
/* A record with ID index authenticated. */
void session_ids_received(struct session *s, uint32_t index);
/* An unused index for a new path: past every one sent or received, of
 * this side's parity (initiator odd, responder even), and within the
 * window the peer accepts; 0 if there is none (the peer has to catch up
 * first: the path keeps its ID). */
uint32_t session_ids_fresh(const struct session *s);
/* A path that will use index begins (a challenge, data within the budget
 * towards a new address): the index is taken, the sequence number jumps. */
void session_ids_begin(struct session *s, uint32_t index);
/* Send with index from now on (a new path), if it is past the current one:
 * the sequence number jumps (unless it did when the path began). */
void session_ids_use(struct session *s, uint32_t index);
/* The wire ID of index (0: unusable). */
uint64_t session_ids_wire(const struct session *s, uint32_t index);
/* A new session shell (not yet in the table; no DTLS state). */
struct session *session_alloc(struct toud *t, uint64_t id, const union sockaddr_union *addr,
    uint64_t now);
/* A random nonzero ID no session uses, for a handshake towards the
 * responder server_id (sessid_first()); 0 if the RNG fails. */
uint64_t session_new_id(struct toud *t, uint8_t server_id);
void session_insert(struct session *s);
/* Free a session, detaching it from its peer (cur/next/prev). */
void session_free(struct session *s);
/* End s: a close_notify tells the peer (so it need not wait for a
 * timeout), then s is freed. */
void session_end(struct session *s);
/* The session was replaced: free it after SESSION_DRAIN_MS. */
void session_drain(struct session *s);

/* One received record (after the outer GUE header) of session s.  For
 * SESSION_DATA, out gets *outlen bytes and *seq the record's (epoch << 48 |
 * sequence). */
enum session_result session_open(struct session *s, const uint8_t *rec, size_t len,
    uint8_t *out, size_t cap, size_t *outlen, uint64_t *seq, uint64_t now);
/* How far into an application-data record its plaintext starts when it may
 * be opened in place (dtls_sess_data_prefix()); 0: it may not. */
size_t session_data_prefix(const struct session *s);
/* The receiving record state of an established session (NULL otherwise),
 * for rx.c's batch opening; session_opened() is session_open()'s
 * bookkeeping for a data record it accepted (len bytes of plaintext). */
struct record_rx *session_record_rx(struct session *s);
void session_opened(struct session *s, size_t len, uint64_t now);
/* Seal one inner payload: the record comes back framed in *r, to be
 * queued and encrypted by its sealer before it leaves (struct dtls_record,
 * dtls.h); the caller chooses where it goes.  session_seal() frames it in
 * the session's own buffer (valid until the next seal);
 * session_seal_in_place() around the payload itself, which has
 * DTLS_SEAL_HEADROOM bytes free in front and DTLS_SEAL_TAILROOM behind.
 * 0 or -errno. */
struct dtls_record;
int session_seal(struct session *s, const uint8_t *payload, size_t len, struct dtls_record *r);
int session_seal_in_place(struct session *s, uint8_t *payload, size_t len,
    struct dtls_record *r);

#endif
