/* tx.h - the sending direction: TUN -> peer, on the peer's transport
 * (transport.h). */
#ifndef TOUD_TX_H
#define TOUD_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct toud;
struct peer;
struct tx;
struct record_sealer;
struct session;
struct dtls_record;
struct udpout;

struct tx *tx_new(struct toud *t);        /* also starts reading the TUN */
/* Hand the sends to a thread of their own (udpout.c; the model is in
 * worker.h).  Called once privileges are dropped, since capabilities
 * belong to each thread.  0 or -errno; without it, the main loop sends. */
int tx_start_thread(struct tx *x);
/* Whether that thread runs. */
bool tx_threaded(const struct tx *x);
/* Finishes the sends in flight first. */
void tx_free(struct tx *x);
/* Send a control message (gue.h ctype) with an optional body to p (with
 * DTLS: sealed into the output queue, or held while a handshake starts). */
int tx_control(struct toud *t, struct peer *p, uint8_t ctype, const void *body, size_t len);
/* The same on p's path ph, whichever carries its traffic: a probe of ph
 * and the answer to the peer's probe of it stay on it. */
struct peer_path;
int tx_control_on(struct toud *t, struct peer *p, struct peer_path *ph, uint8_t ctype,
    const void *body, size_t len);
/* A path challenge or response (ctype, an 8-byte token) sealed in session
 * s and sent to `to` from our address `local` (family 0: the kernel
 * chooses) with session ID wire_id (0: the session's own), whatever the
 * session's own address.  0 or -errno.  At most
 * TX_PATH_WIRE_MAX bytes go on the wire (outer GUE, DTLS header, AES-GCM
 * explicit nonce and tag, control word, token). */
#define TX_PATH_WIRE_MAX (16 + 13 + 8 + 16 + 4 + 8)
int tx_path_message(struct session *s, uint8_t ctype, const uint8_t *token,
    const union sockaddr_union *to, const struct ipaddr *local, uint64_t wire_id);
/* dtls_output_fn for a session (arg: struct session *), and
 * dtls_listen_output_fn for the cookie listener (arg: struct toud *):
 * frame the record and queue it. */
void tx_session_output(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal);
void tx_listen_output(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to);
/* Send what p held while its handshake ran, now that its path is up. */
void tx_send_staged(struct peer *p);
/* Queue a record of session s where the session's records go (the
 * address being validated, or the session's); the UDP transport's
 * records and OpenSSL's take it. */
void tx_session_record(struct toud *t, struct session *s, const struct dtls_record *r,
    uint8_t tos);
/* The UDP transport's output queue (udpout.h). */
struct udpout *tx_udpout(struct toud *t);
/* Take back the records of session id still in the queue (a handshake
 * refused at completion: its last flight must not leave). */
void tx_withdraw_session(struct tx *x, uint64_t id);
/* Shutdown only: send the output queue now (it flushes itself otherwise)
 * and end the sending thread. */
void tx_flush_records(struct toud *t);
/* The largest inner GUE payload (word + segment, or whole IP packet) that
 * fits the path to p. */
size_t tx_payload_budget(const struct toud *t, const struct peer *p);

#endif
