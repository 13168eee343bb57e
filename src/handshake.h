/* handshake.h - starting, answering and finishing DTLS handshakes.
 *
 * Received records' results are returned: rx.c acts on them (the same
 * split as WireGuard's noise.c and cookie.c).  What has no caller to
 * return to, or changes a peer's timers, is reported to peer_timers.c: a
 * handshake started or refused at once (handshake_initiate), one that timed
 * out (the retransmission timer), sessions a reload ended
 * (handshake_reauthorize).  Records leave through the output callbacks the
 * daemon passes to handshake_init(). */
#ifndef TOUD_HANDSHAKE_H
#define TOUD_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtls.h"
#include "util.h"

struct toud;
struct peer;
struct session;

#define HANDSHAKE_HALF_OPEN_MAX 64      /* server handshakes in progress, in all */

/* The DTLS context, the session table (t->sessions), the cookie secret
 * and its rotation timer.  A session's records go to session_output (its
 * arg the session), the listener's stateless answers to listen_output (its
 * arg t). */
int handshake_init(struct toud *t, dtls_output_fn *session_output,
    dtls_listen_output_fn *listen_output);
/* Frees every session too. */
void handshake_free(struct toud *t);

/* Start a client handshake to p's endpoint: 0 (also when one is running,
 * or the retry back-off holds), or -errno; a handshake refused at once is
 * reported to peer_timers_handshake_failed() and returns -EPROTO. */
int handshake_initiate(struct peer *p, uint64_t now);
/* A record for a session ID we do not know: only a ClientHello may start
 * a session (cookie, per-source limit, half-open table).  Drops are counted
 * on t. */
void handshake_listen(struct toud *t, uint64_t id, const uint8_t *rec, size_t len,
    const union sockaddr_union *from, const struct ipaddr *local, uint64_t now);
/* The amplification budget of a server handshake that has not completed
 * (RFC 9000 8.1): a received datagram of len bytes adds to what the source
 * sent; handshake_may_send() says whether a record of len bytes may go out
 * (and counts it), false once it would exceed 3 times that.  For a client
 * handshake, the record rec (rlen bytes, past the prefilter) is noted, so
 * that one that fails can say whether anything, or only cookie requests,
 * came back. */
void handshake_received(struct session *s, const uint8_t *rec, size_t rlen, size_t len);
bool handshake_may_send(struct session *s, size_t len);
/* A handshake record advanced the handshake: re-arm its timer. */
void handshake_progress(struct session *s, uint64_t now);

enum handshake_done {
	HANDSHAKE_UP,           /* s is now the peer's session (cur) */
	HANDSHAKE_KEPT_OLD,     /* the tie-break kept the peer's session; s drains */
	HANDSHAKE_REFUSED,      /* no configured peer for the key now: the caller fails s */
	HANDSHAKE_PQ_WAIT,      /* the ML-KEM-768 exchange runs: s is not up until it is through */
	HANDSHAKE_PQ_REFUSED,   /* post-quantum = required without it: a refusal and
	                         * close_notify sent; the caller fails s with
	                         * handshake_pq_why() */
};
/* The handshake of s completed: decide its peer from the current
 * configuration by the key it authenticated with (authorize), apply its
 * preshared key and post-quantum policy; when the handshake selected the
 * ML-KEM-768 exchange, start it (HANDSHAKE_PQ_WAIT; the session's
 * DTLS_DONE comes again when it is through, and this is called again);
 * then which session the peer keeps (tie-break, retire). */
enum handshake_done handshake_established(struct session *s, uint64_t now);
/* Why the last HANDSHAKE_PQ_REFUSED was. */
const char *handshake_pq_why(const struct toud *t);
/* A refusal (control message 7, its body; pq.h) came in session s: the
 * peer requires the ML-KEM-768 exchange and ends the session.  Says so in
 * the log, the peer's last error and the event pq_refused, frees s, and
 * backs off as after a failed handshake. */
void handshake_pq_refused(struct session *s, const uint8_t *body, size_t len);
/* The handshake of s failed: count, log, free s, and tell peer_timers when
 * the peer it was for has no session left. */
void handshake_failed(struct session *s, const char *why);
/* The first records of established session s all failed authentication
 * although its handshake authenticated the peer: the two sides derived
 * different data keys, so their preshared keys differ (doc/protocol.md
 * 1.4).  Says so in the log and the peer's last_error. */
#define HANDSHAKE_PSK_PROBES 2          /* failed records, none opened, that say so */
void handshake_psk_mismatch(struct session *s);
/* The same for a record of session s that failed while its ML-KEM-768
 * exchange runs (doc/protocol.md 1.5), as long as none of the exchange's
 * messages opened and s is the peer's only session or its current one:
 * counted, answered, and at the last probe reported (and kept); s goes
 * on until the exchange completes or its deadline. */
void handshake_pq_bad_record(struct session *s);

/* The peer whose pinned fingerprint, or CA and name, the key and chain
 * that session s authenticated with satisfy; NULL for none, or for a key
 * that two peers accept. */
struct peer *handshake_authorize(struct toud *t, const struct session *s);
/* The peer list or a peer's key or CA changed: the index of peers by key
 * is made again before the next handshake needs it. */
void handshake_peers_changed(struct toud *t);
/* Make that index now, at start and after a reload, so that its memory
 * and its O(n log n) are theirs and not the first handshake's. */
void handshake_index(struct toud *t);
/* The same rule for a key presented elsewhere (the TCP transport's TLS):
 * the peer whose pinned fingerprint is fp, or whose CA and name the chain
 * in xs passes; NULL for none, or for two (refused, logged). */
struct x509_store_ctx_st;
struct peer *handshake_authorize_key(struct toud *t, const uint8_t *fp,
    struct x509_store_ctx_st *xs);
/* Which of two established sessions of one peer survives (tie-break). */
bool handshake_newer_wins(const struct session *new, const struct session *old,
    const uint8_t *my_fp, const uint8_t *their_fp);
/* Reload: end every established session whose key the configuration in
 * force no longer accepts for its peer (a fingerprint, CA or name that
 * changed, a key now accepted by two peers).  Returns how many ended. */
size_t handshake_reauthorize(struct toud *t);
/* session-max-age in milliseconds (default twice rekey-time): a session of
 * either role is replaced by a new handshake at that age, and ended if no
 * replacement completed within SESSION_HANDSHAKE_MS more. */
uint64_t handshake_max_age_ms(const struct toud *t);
/* Whether p's session should be replaced now (rekey by bytes or time, or
 * its maximum age). */
bool handshake_needs_rekey(const struct peer *p, uint64_t now);

#endif
