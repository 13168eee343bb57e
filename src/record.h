/* record.h - DTLS 1.2 application-data records, sealed and opened by toud
 * with the keys of a completed OpenSSL handshake.  Pure: no I/O.
 *
 * The records are exactly those of RFC 6347 4.1 with the AEAD ciphers of
 * RFC 5288 (AES-GCM) and RFC 7905 (ChaCha20-Poly1305):
 *
 *   header (13): type, version 0xfefd, epoch (16), sequence (48), length
 *   AES-GCM:     nonce_explicit (8) | ciphertext | tag (16)
 *                nonce = salt (4, from the key block) | nonce_explicit
 *   ChaCha20:    ciphertext | tag (16)
 *                nonce = IV (12, from the key block) XOR (0^32 | epoch | seq)
 *   AAD (13):    epoch | seq | type | version | plaintext length
 *
 * The keys come from the master secret and the randoms of the handshake,
 * through the TLS 1.2 PRF ("key expansion", RFC 5246 6.3), as kernel TLS
 * offload takes them over from a TLS library.  A key log line of the
 * handshake therefore still decrypts every record.
 *
 * Each direction has its own state (struct record_tx, struct record_rx)
 * with one cipher context set up once: sealing and opening never allocate,
 * and the two directions share nothing.  Sealing comes in two steps:
 * record_frame() numbers a record and writes its header, cheaply, where
 * the records are ordered (the main loop); record_finish() encrypts it in
 * place with the direction's sealer, wherever the record then goes (the
 * sending thread).  record_seal() does both. */
#ifndef TOUD_RECORD_H
#define TOUD_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

struct evp_cipher_ctx_st;

#define RECORD_HDR 13
#define RECORD_TAG 16
#define RECORD_GCM_EXPLICIT 8
#define RECORD_TYPE_APPDATA 23
#define RECORD_TYPE_ALERT 21
#define RECORD_VERSION 0xfefd           /* DTLS 1.2 */
#define RECORD_SEQ_MAX ((UINT64_C(1) << 48) - 1)
#define RECORD_MAX_PLAIN 16384          /* 2^14 (RFC 6347 4.1) */
/* Sequence numbers and explicit nonces.  toud counts its records in a
 * direction up from RECORD_SEQ_START (the record's seq, below), but what it
 * writes in the clear is that count through a keyed permutation, so that
 * the numbers under one session ID say nothing about those under another
 * (doc/protocol.md 1.1):
 *   wire sequence  = 2^47 + P47(seq - 2^47)        for seq >= 2^47
 *                  = seq                           below (not toud's)
 *   nonce_explicit = (epoch | wire sequence) * RECORD_NONCE_MUL mod 2^64,
 *                    skipping a seq whose nonce falls among OpenSSL's
 *                    (RECORD_OSSL_RECORDS from its first one on)
 * P47 is a Feistel network over SipHash-2-4, keyed per handshake and
 * direction from the handshake's PRF (record_keys_derive()); the receiver
 * inverts it to find seq for its replay window.  The nonce is a public
 * bijection of the wire sequence number: it tells nothing that number
 * does not.  OpenSSL numbers the records it writes itself in the data
 * epoch (Finished, its retransmissions, alerts) from 0, and its GCM nonces
 * from a random first one, one per record; it writes a handful of them,
 * and dtls.c refuses to send the RECORD_OSSL_RECORDS-th.  P47 and the
 * multiplication being bijections and seq strictly increasing, no (key,
 * nonce) pair is used twice. */
#define RECORD_SEQ_START (UINT64_C(1) << 47)
#define RECORD_OSSL_RECORDS (UINT64_C(1) << 16)
#define RECORD_PERM_ROUNDS 8
#define RECORD_NONCE_MUL UINT64_C(0x9e3779b97f4a7c15)   /* odd: a bijection */

enum record_cipher {
	RECORD_AES128_GCM = 1,
	RECORD_AES256_GCM,
	RECORD_CHACHA20_POLY1305,
};

enum record_status {
	RECORD_OK = 0,
	RECORD_ERR_MALFORMED,   /* not one whole type-23 DTLS 1.2 record of a possible size */
	RECORD_ERR_EPOCH,       /* another epoch than the one these keys belong to */
	RECORD_ERR_DUP,         /* open: the window has accepted this sequence number */
	RECORD_ERR_OLD,         /* open: older than the replay window */
	RECORD_ERR_AUTH,        /* open: the tag does not verify */
	RECORD_ERR_SPACE,       /* the output buffer is too small */
	RECORD_ERR_EXHAUSTED,   /* seal: no sequence number left in this epoch */
	RECORD_ERR_CRYPTO,      /* the cipher failed */
};

/* One direction's key material. */
struct record_keys {
	enum record_cipher cipher;
	uint8_t key[32];
	size_t key_len;
	uint8_t iv[12];                 /* GCM: salt in the first 4 bytes */
	size_t iv_len;                  /* 4 (GCM) or 12 (ChaCha20) */
	uint8_t perm_key[16];           /* the sequence numbers' permutation P47 */
};

/* A keyed permutation of [0, 2^bits) (bits <= 64). */
struct record_perm {
	uint64_t k0, k1;
};

/* The cipher half of a sending direction: the context and its fixed IV.
 * It does the expensive part of sealing (record_finish()), and may do it
 * on another thread than the one that numbers the records, one thread at
 * a time.  It lives until its last reference is put; references are
 * taken and put by one thread only (the main loop: tx.c). */
struct record_sealer;

/* A sending direction: the numbers (record_frame()) and the sealer. */
struct record_tx {
	struct record_sealer *sealer;
	enum record_cipher cipher;
	uint16_t epoch;
	uint64_t seq;                   /* next sequence number, before P47 */
	uint64_t ossl_nonce;            /* GCM: OpenSSL's first nonce_explicit */
	uint64_t sealed;                /* records framed (numbers used) */
	struct record_perm seq_perm;
};

/* The cipher half of a receiving direction, as struct record_sealer is of
 * a sending one (record_unseal()). */
struct record_opener;

/* A receiving direction: the replay window and the counts (record_check(),
 * record_accept()), and the opener. */
struct record_rx {
	struct record_opener *opener;
	enum record_cipher cipher;
	uint16_t epoch;
	struct replay win;              /* over sequence numbers before P47 */
	struct record_perm seq_perm;
	uint64_t opened;                /* records that authenticated */
	uint64_t failed;                /* records whose tag did not verify */
};

/* One record of a batch.
 *   seal: in/in_len the plaintext; out/out_cap where the record goes.
 *         out may be in - record_prefix() (in place).
 *   open: in/in_len the record; out/out_cap where the plaintext goes.
 *         out may be in + record_prefix() (in place: the record is
 *         overwritten).  Otherwise out is used as scratch and must hold
 *         the whole fragment (in_len - RECORD_HDR bytes).
 * On return out_len, seq (epoch << 48 | sequence) and status are set;
 * here, as everywhere but on the wire, the sequence number is toud's
 * count, before P47. */
struct record_msg {
	const uint8_t *in;
	size_t in_len;
	uint8_t *out;
	size_t out_cap;
	size_t out_len;
	uint64_t seq;
	enum record_status status;
};

/* The cipher of an OpenSSL cipher NID (NID_aes_128_gcm, ...), or 0. */
enum record_cipher record_cipher_from_nid(int nid);
const char *record_cipher_name(enum record_cipher c);
/* Bytes in front of the plaintext (header, explicit nonce) and in all. */
size_t record_prefix(enum record_cipher c);
size_t record_overhead(enum record_cipher c);

/* The key block of a TLS 1.2 handshake: PRF digest md ("SHA256" or
 * "SHA384"), the 48-byte master secret and the two 32-byte randoms; and
 * the permutation keys, from the same PRF with toud's label
 * RECORD_PERM_LABEL (as the RFC 5705 exporter would give them, without
 * context): client write, then server write.
 * 0 or -errno. */
#define RECORD_PERM_LABEL "EXPORTER-toud-record-numbers"
int record_keys_derive(enum record_cipher c, const char *md, const uint8_t *master,
    size_t master_len, const uint8_t client_random[32], const uint8_t server_random[32],
    struct record_keys *client_write, struct record_keys *server_write);

/* The keys of a session with a preshared key (doc/protocol.md 1.4): all
 * of them, the permutation keys too, from
 *   HKDF-SHA256(salt = psk, IKM = exporter, info = RECORD_PSK_INFO)
 * where exporter is RECORD_PSK_EXPORTER_LEN bytes of the handshake's RFC
 * 5705 exporter with label RECORD_PSK_LABEL (no context), cut as the key
 * block is: client write key, server write key, client write IV, server
 * write IV, then client and server permutation keys (16 bytes each).
 * 0 or -errno. */
/* HKDF-SHA256 (RFC 5869) of ikm with salt and info (a string) into out,
 * n bytes: the derivations of a preshared key, this one and the TCP
 * transport's (tcp_psk.h).  0 or -EIO. */
int record_hkdf(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
    const char *info, uint8_t *out, size_t n);
#define RECORD_PSK_LABEL "EXPORTER-toud-preshared-key"
#define RECORD_PSK_EXPORTER_LEN 32
#define RECORD_PSK_LEN 32
#define RECORD_PSK_INFO "toud 1 preshared-key data keys"
int record_keys_psk(enum record_cipher c, const uint8_t exporter[RECORD_PSK_EXPORTER_LEN],
    const uint8_t psk[RECORD_PSK_LEN], struct record_keys *client_write,
    struct record_keys *server_write);

/* The keys of a session whose handshake selected the ML-KEM-768 exchange
 * (doc/protocol.md 1.5), once it is through: all of them, the
 * permutation keys too, from
 *   HKDF-SHA256(salt = psk (NULL: none, RFC 5869's zeros),
 *               IKM = exporter || ss, info = RECORD_PQ_INFO)
 * where exporter is RECORD_PQ_EXPORTER_LEN bytes of the handshake's RFC
 * 5705 exporter with label RECORD_PQ_LABEL (no context) and ss the
 * ML-KEM shared secret, cut as record_keys_psk() cuts.  0 or -errno. */
#define RECORD_PQ_LABEL "EXPORTER-toud-ml-kem-768"
#define RECORD_PQ_EXPORTER_LEN 32
#define RECORD_PQ_SS_LEN 32
#define RECORD_PQ_INFO "toud 1 ml-kem-768 data keys"
int record_keys_pq(enum record_cipher c, const uint8_t exporter[RECORD_PQ_EXPORTER_LEN],
    const uint8_t ss[RECORD_PQ_SS_LEN], const uint8_t *psk,
    struct record_keys *client_write, struct record_keys *server_write);

/* The permutations of record.h's numbering, exposed for their tests. */
void record_perm_init(struct record_perm *p, const uint8_t key[16]);
uint64_t record_perm(const struct record_perm *p, unsigned bits, uint64_t x);
uint64_t record_perm_inv(const struct record_perm *p, unsigned bits, uint64_t x);

/* Set up a direction for epoch, its first sequence number (before P47:
 * RECORD_SEQ_START) and, to seal with AES-GCM, the first nonce_explicit
 * OpenSSL used under the key, whose neighbours toud's nonces avoid.
 * 0 or -errno; *_free() undoes it (also after a failure, and on a zeroed
 * struct). */
int record_tx_init(struct record_tx *tx, const struct record_keys *k, uint16_t epoch,
    uint64_t first_seq, uint64_t ossl_nonce);
void record_tx_free(struct record_tx *tx);
int record_rx_init(struct record_rx *rx, const struct record_keys *k, uint16_t epoch);
void record_rx_free(struct record_rx *rx);

/* Seal / open n records in order; the number with status RECORD_OK. */
size_t record_seal(struct record_tx *tx, struct record_msg *m, size_t n);
/* Number one record and lay it out in m->out (as record_seal() would):
 * header, nonce_explicit (AES-GCM), the plaintext, and room for the tag;
 * m->out_len is the whole record, m->seq its (epoch << 48 | sequence).
 * The record's numbers are used even if it is never sealed. */
enum record_status record_frame(struct record_tx *tx, struct record_msg *m);
/* The same for a record of another content type (an alert): the type is
 * in the header and the AAD, and record_finish() seals it as any other. */
enum record_status record_frame_type(struct record_tx *tx, struct record_msg *m, uint8_t type);
/* Encrypt a framed record of len bytes in place and write its tag.
 * Records may be finished in another order than framed, and some never. */
enum record_status record_finish(struct record_sealer *s, uint8_t *rec, size_t len);
struct record_sealer *record_sealer_get(struct record_sealer *s);
void record_sealer_put(struct record_sealer *s);
/* Opening in three steps, record_open() in one:
 * record_check(): one whole record of this epoch, not yet accepted
 *   (nothing changes); *seq its (epoch << 48 | sequence).
 * record_unseal(): decrypt the record (len bytes, as record_check() saw
 *   it) in place after its header and verify its tag; the plaintext
 *   starts at rec + record_prefix().  Uses only the opener, so it may run
 *   on another thread, one at a time.
 * record_accept(): what record_unseal() returned, back where the window
 *   is kept: a record that authenticated and is still new moves the
 *   window; RECORD_OK or why it is refused. */
enum record_status record_check(const struct record_rx *rx, const uint8_t *rec, size_t len,
    uint64_t *seq);
enum record_status record_unseal(struct record_opener *o, uint8_t *rec, size_t len);
enum record_status record_accept(struct record_rx *rx, uint64_t seq, enum record_status st);
struct record_opener *record_opener_get(struct record_opener *o);
void record_opener_put(struct record_opener *o);
size_t record_open(struct record_rx *rx, struct record_msg *m, size_t n);
/* Open one alert record (level and description in alert) of epoch under
 * the receiving keys k, with a cipher context of its own (the opener may be
 * busy on another thread).  No replay window: alerts are rare and every
 * one that authenticates ends the session, so a replayed one could only
 * repeat an end that already happened. */
enum record_status record_open_alert(const struct record_keys *k, uint16_t epoch,
    const uint8_t *rec, size_t len, uint8_t alert[2]);

#endif
