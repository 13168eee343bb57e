/* dtls.h - DTLS 1.2 over OpenSSL 3.0, without sockets or an event loop.
 *
 * One struct dtls_ctx per daemon (SSL_CTX, this node's key and certificate,
 * the cookie secret, the key log); one struct dtls_sess per DTLS association
 * (one SSL object over a custom datagram BIO).  The caller moves datagrams:
 * it hands each received DTLS record to dtls_sess_input() / dtls_listen(),
 * every datagram OpenSSL wants to send comes back through the output
 * callback, one DTLS record per call (a flight is split at record
 * boundaries, so every datagram on the wire carries exactly one record),
 * and toud's own data records are returned by dtls_sess_seal(). */
#ifndef TOUD_DTLS_H
#define TOUD_DTLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "keys.h"
#include "util.h"

struct dtls_ctx;
struct dtls_sess;
struct record_rx;
struct record_tx;
struct x509_store_ctx_st;

#define DTLS_FP_LEN KEYS_FP_LEN
#define DTLS_RECORD_HDR 13
#define DTLS_CT_HANDSHAKE 22           /* record content type of handshake messages */
#define DTLS_CT_APPDATA 23             /* ... of application data */

struct record_sealer;

/* One datagram (exactly one record) OpenSSL wrote, ready to go to `to`
 * (handshake flights, alerts, close_notify); seal is NULL.  rec is valid
 * during the call only (the callee copies it).  toud's own records do not
 * come this way: dtls_sess_seal() returns them. */
typedef void dtls_output_fn(void *arg, const uint8_t *rec, size_t len,
    const union sockaddr_union *to, struct record_sealer *seal);

/* A stateless answer of the listener (a HelloVerifyRequest, ready to go)
 * to the ClientHello that came with session ID sid (dtls_listen_admit). */
typedef void dtls_listen_output_fn(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to);

/* A record toud framed (record_frame(): numbered, laid out, room for the
 * tag), not yet encrypted: it must be finished with record_finish(seal,
 * rec, len) before it leaves.  rec lies in the caller's buffer
 * (dtls_sess_seal_in_place()) or in the session's own, valid until its
 * next seal; seal and to (the session's peer address, where OpenSSL's
 * records go) as long as the session lives, unless the caller takes a
 * reference to seal (record_sealer_get()). */
struct dtls_record {
	uint8_t *rec;
	size_t len;
	const union sockaddr_union *to;
	struct record_sealer *seal;
};

/* Map the certificate a peer presented to the peer object it authenticates,
 * or NULL to refuse it.  fp is the SHA-256 of its public key; xs the chain
 * for CA checks (keys_verify_ca). */
typedef void *dtls_authorize_fn(void *arg, const uint8_t fp[DTLS_FP_LEN],
    struct x509_store_ctx_st *xs);

struct dtls_ctx_config {
	const char *private_key;       /* PEM files */
	const char *certificate;
	const char *keylog_file;       /* NULL: SSLKEYLOGFILE or none */
	dtls_authorize_fn *authorize;
	void *authorize_arg;
	dtls_listen_output_fn *listen_output;  /* where HelloVerifyRequests go */
	void *listen_output_arg;
	unsigned link_mtu;             /* largest DTLS record datagram (bytes after the outer GUE header) */
	uint8_t server_id;             /* server-id: told to initiators that ask; 0: none */
};

/* NULL with a message in err on failure (unreadable key, key and
 * certificate do not match, ...). */
struct dtls_ctx *dtls_ctx_new(const struct dtls_ctx_config *cfg, char *err, size_t errlen);
void dtls_ctx_free(struct dtls_ctx *c);
/* This node's own fingerprint (for the initiator tie-break). */
const uint8_t *dtls_ctx_fingerprint(const struct dtls_ctx *c);
/* Rotate the cookie secret (call every DTLS_COOKIE_ROTATE_S seconds;
 * cookies of the current and the previous secret are accepted). */
#define DTLS_COOKIE_ROTATE_S 60
void dtls_ctx_rotate_cookie(struct dtls_ctx *c);
/* Whether a key log is being written (the daemon warns at start). */
bool dtls_ctx_keylog_active(const struct dtls_ctx *c);
/* Append line (no newline) to the key log, if there is one: the TCP
 * transport's lines go to the same file (tcp.c). */
void dtls_ctx_keylog(struct dtls_ctx *c, const char *line);

/* A client (initiator) session towards the peer `expect`: the handshake
 * succeeds only if authorize() returns exactly `expect`. */
struct dtls_sess *dtls_sess_client(struct dtls_ctx *c, void *expect,
    dtls_output_fn *out, void *out_arg, const union sockaddr_union *to);
void dtls_sess_free(struct dtls_sess *s);
/* Change where the session's datagrams go (roaming). */
void dtls_sess_set_peer_addr(struct dtls_sess *s, const union sockaddr_union *to);

enum dtls_result {
	DTLS_AGAIN = 0,          /* nothing to report (handshake in progress, or no data) */
	DTLS_DATA,               /* dtls_sess_input: plaintext was produced */
	DTLS_DONE,               /* the handshake just completed */
	DTLS_ERR_HANDSHAKE,      /* handshake failed (alert, unknown key): free the session */
	DTLS_ERR_REPLAY,         /* record refused: already seen (a duplicate) */
	DTLS_ERR_RECORD,         /* record refused: failed authentication or malformed */
	DTLS_ERR_CLOSED,         /* the peer sent close_notify or a fatal alert */
	DTLS_ERR_OLD,            /* record refused: older than the replay window */
};

/* Start (client) or continue the handshake. */
enum dtls_result dtls_sess_handshake(struct dtls_sess *s);
/* Feed one received record.  During the handshake it drives the handshake
 * (DTLS_AGAIN / DTLS_DONE / DTLS_ERR_HANDSHAKE).  Once established, it
 * decrypts application data into out (capacity cap, which must hold the
 * whole fragment, len - 13: it is used as scratch): DTLS_DATA with *outlen,
 * or an error.  *seq is set to (epoch << 48 | sequence) of the record that
 * produced data, for the roaming rule. */
enum dtls_result dtls_sess_input(struct dtls_sess *s, const uint8_t *rec, size_t len,
    uint8_t *out, size_t cap, size_t *outlen, uint64_t *seq);
/* Where the plaintext of an application-data record starts within the
 * record (header and explicit nonce before it), once record.c opens them;
 * else 0.  Such a record may be opened in place: out = rec + this, cap =
 * len - this.  Other records need an out of their own. */
size_t dtls_sess_data_prefix(const struct dtls_sess *s);
/* Frame one plaintext datagram as a record, returned in *r (struct
 * dtls_record: the caller has it encrypted and sends it).  0 or -errno
 * (-ENOTCONN before the handshake completed, -EMSGSIZE beyond the link
 * MTU, -ENOSPC when the epoch has no sequence number left). */
int dtls_sess_seal(struct dtls_sess *s, const uint8_t *in, size_t len, struct dtls_record *r);
/* The same, the record framed around in itself (no copy): in has
 * DTLS_SEAL_HEADROOM bytes free in front of it and DTLS_SEAL_TAILROOM
 * behind. */
#define DTLS_SEAL_HEADROOM 21          /* record header, AES-GCM explicit nonce */
#define DTLS_SEAL_TAILROOM 16          /* the tag */
int dtls_sess_seal_in_place(struct dtls_sess *s, uint8_t *in, size_t len,
    struct dtls_record *r);
/* Application data after the handshake: type-23 records of the data epoch
 * are sealed and opened by record.c with the handshake's key block, and
 * only handshake and alert records go through OpenSSL (record.h).  The
 * two directions' states, for batch sealing and opening (NULL until the
 * handshake completed); each may be used by one thread. */
struct record_tx *dtls_sess_record_tx(struct dtls_sess *s);
/* RFC 5705 keying material of the completed handshake (no context).
 * 0 or -1.  Only until the first record from the peer under the new keys:
 * then OpenSSL's state of the session is freed and its alerts and
 * close_notify are toud's record layer's too (about 8 KiB a session stay). */
int dtls_sess_export(struct dtls_sess *s, const char *label, uint8_t *out, size_t len);
struct record_rx *dtls_sess_record_rx(struct dtls_sess *s);
/* The session's peer has a preshared key (psk, RECORD_PSK_LEN bytes; NULL:
 * none): replace the data keys, both directions and the numbering's, by
 * those derived from the handshake and psk (record_keys_psk()), and, with
 * a key log, write them there as a line
 *   TOUD_PSK_DATA_KEYS <client random> <client write key> <server write key>
 *       <client write IV> <server write IV>
 * (hex; doc/protocol.md 1.4).  Call it once the handshake completed and
 * before any data record was sealed or opened.  0 or -errno. */
#define DTLS_KEYLOG_PSK_LABEL "TOUD_PSK_DATA_KEYS"
int dtls_sess_set_psk(struct dtls_sess *s, const uint8_t *psk);
/* The ML-KEM-768 exchange after the handshake (doc/protocol.md 1.5).
 * dtls_sess_pq_offer(): a client session offers it (ALPN
 * "toud-mlkem768") when offer is true and this process has ML-KEM;
 * call it before the first dtls_sess_handshake().  A server selects it
 * whenever offered and it has ML-KEM.  Once the handshake completed
 * (DTLS_DONE), dtls_sess_pq_selected() says whether it was selected; if
 * so, the caller decides (its peer's policy, and dtls_sess_set_psk()
 * first) and calls dtls_sess_pq_start(): the initiator sends PQ_INIT, the
 * responder waits for it.  While it runs (dtls_sess_pq_pending()),
 * dtls_sess_input() opens only the exchange's messages and returns
 * DTLS_AGAIN for them, and DTLS_DONE a second time when it is through:
 * the data keys are then K1 in both directions at the initiator, and at
 * the responder once the record just returned (as data, in out and
 * *outlen, maybe 0 bytes) opened under K1; each side then sends a
 * PQ_CONFIRM under K1.  PQ_INIT is sent again on the session's timer
 * (dtls_sess_timeout()), and after it the initiator's PQ_CONFIRM under K1,
 * until a record of the responder opens under K1 (dtls_sess_input() or
 * dtls_sess_confirmed()).  With a key log, K1 is written
 * as a line
 *   TOUD_PQ_DATA_KEYS <client random> <client write key> <server write key>
 *       <client write IV> <server write IV>
 * A failure of the exchange is DTLS_ERR_HANDSHAKE, its reason
 * dtls_sess_pq_error(). */
#define DTLS_KEYLOG_PQ_LABEL "TOUD_PQ_DATA_KEYS"
#define DTLS_KX_PQ "ml-kem-768"         /* what show appends to the group's name */
void dtls_sess_pq_offer(struct dtls_sess *s, bool offer);
bool dtls_sess_pq_offered(const struct dtls_sess *s);
bool dtls_sess_pq_selected(const struct dtls_sess *s);
int dtls_sess_pq_start(struct dtls_sess *s, const uint8_t *psk);
bool dtls_sess_pq_pending(const struct dtls_sess *s);
const char *dtls_sess_pq_error(const struct dtls_sess *s);
/* Whether the data keys include the ML-KEM-768 exchange (it is through). */
bool dtls_sess_post_quantum(const struct dtls_sess *s);
/* Whether a message of the exchange (PQ_INIT at the responder, PQ_REPLY
 * at the initiator) opened under K0: both sides have the same keys, the
 * preshared key included. */
bool dtls_sess_pq_heard(const struct dtls_sess *s);
/* Seal one inner payload (a control message) under the sending keys in
 * force and send it through the output callback, before or after the
 * exchange.  0 or -errno. */
int dtls_sess_send_control(struct dtls_sess *s, const uint8_t *msg, size_t len);
/* Records protected so far under the busier of the session's two keys
 * (for rekey-records). */
uint64_t dtls_sess_records(const struct dtls_sess *s);
/* How many application-data records dtls_sess_input() dropped because they
 * arrived before the handshake completed, since the last call. */
unsigned dtls_sess_take_early(struct dtls_sess *s);
/* A record from the peer under the session's keys authenticated (opened
 * by record.c in a batch, not by dtls_sess_input(), which does this
 * itself): OpenSSL's state of the session is freed (dtls_sess_export()). */
void dtls_sess_confirmed(struct dtls_sess *s);
/* Send close_notify. */
void dtls_sess_close(struct dtls_sess *s);
bool dtls_sess_established(const struct dtls_sess *s);
/* The fingerprint of the key the peer presented (NULL before that), and a
 * CA check of the chain it presented: for deciding the peer again when the
 * handshake completes, from the configuration in force then. */
const uint8_t *dtls_sess_peer_fp(const struct dtls_sess *s);
/* Why a handshake failed: the key of a certificate we refused (NULL if
 * none), and the fatal alert the peer sent us (NULL if none). */
const uint8_t *dtls_sess_refused_fp(const struct dtls_sess *s);
const char *dtls_sess_alert(const struct dtls_sess *s);
/* A handshake that failed for want of a DTLS version, cipher suite, group
 * or signature algorithm in common, in words: what this side found (no
 * shared cipher ...), or what the other side said (a protocol_version or
 * insufficient_security alert, or a handshake_failure alert in answer to
 * our ClientHello, before any certificate was looked at); NULL otherwise.
 * dtls_ctx_listen_mismatch(): the same for the last dtls_listen_admit()
 * that returned DTLS_LISTEN_FAILED (NULL after any other result). */
const char *dtls_sess_mismatch(const struct dtls_sess *s);
const char *dtls_ctx_listen_mismatch(const struct dtls_ctx *c);
struct x509_store_st;
bool dtls_sess_verify_ca_store(const struct dtls_sess *s, struct x509_store_st *store,
    const char *name);
const char *dtls_sess_cipher(const struct dtls_sess *s);
/* The key exchange of the session, as touctl show names it (pq.h): the
 * handshake's group ("x25519", "ecdhe-p256"), then " + ml-kem-768" once
 * the ML-KEM-768 exchange is through; "" until the handshake completed. */
const char *dtls_sess_key_exchange(const struct dtls_sess *s);
/* The responder's server ID, once the hellos are through: both ends know
 * it (an initiator asked, the responder has one); 0: none. */
uint8_t dtls_sess_server_id(const struct dtls_sess *s);
/* Retransmission timer of the handshake, and of the exchange's messages
 * (the initiator's PQ_CONFIRM under K1 too, once established): true and
 * *tv when one is due. */
bool dtls_sess_timeout(struct dtls_sess *s, struct timeval *tv);
/* The timer fired: retransmit.  DTLS_ERR_HANDSHAKE when OpenSSL gives up. */
enum dtls_result dtls_sess_handle_timeout(struct dtls_sess *s);

/* A record from an unknown session: answer a ClientHello statelessly with
 * a HelloVerifyRequest (through listen_output, never larger than the
 * request), or, when it carries a valid cookie, create the server session
 * (*out).  Everything else is refused. */
enum dtls_listen_result {
	DTLS_LISTEN_DROP,        /* not a ClientHello, or malformed */
	DTLS_LISTEN_REPLIED,     /* HelloVerifyRequest sent; no state kept */
	DTLS_LISTEN_ACCEPTED,    /* valid cookie: *out is a new server session */
	DTLS_LISTEN_REFUSED,     /* valid cookie, but admit() said no; no state kept */
	DTLS_LISTEN_FAILED,      /* valid cookie, admitted, but the handshake failed at once */
};
enum dtls_listen_result dtls_listen(struct dtls_ctx *c, const uint8_t *rec, size_t len,
    const union sockaddr_union *from, dtls_output_fn *out, void *out_arg,
    struct dtls_sess **sess);
/* The same, with the cookie bound to the session ID sid of the outer
 * header (a cookie admits one session only: replaying the ClientHello with
 * a new ID earns a new HelloVerifyRequest), and an admission decision taken
 * after the cookie proved the source and before any state exists:
 * admit(admit_arg, from, credit) returns the out_arg of the new session, or
 * NULL to refuse.  credit is the size of the ClientHello that earned the
 * cookie (carried in the cookie under its MAC): bytes the source has sent
 * for this session, for an amplification budget.  On DTLS_LISTEN_FAILED
 * the caller frees what admit() made. */
typedef void *dtls_admit_fn(void *arg, const union sockaddr_union *from, size_t credit);
enum dtls_listen_result dtls_listen_admit(struct dtls_ctx *c, const uint8_t *rec, size_t len,
    const union sockaddr_union *from, uint64_t sid, dtls_output_fn *out,
    dtls_admit_fn *admit, void *admit_arg, struct dtls_sess **sess);

#endif
