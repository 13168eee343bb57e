/* pqmsg.h - the control messages of the ML-KEM-768 exchange that follows
 * a DTLS handshake whose ALPN selected it (doc/protocol.md 1.5).  Pure: no
 * I/O, no cryptography.
 *
 *   PQ_INIT   (ctype 5): offset (2 bytes), then bytes [offset, offset + n)
 *             of the initiator's encapsulation key (1184 bytes in all):
 *             the whole key in one message where it fits the path, else
 *             in two halves;
 *   PQ_REPLY  (ctype 6): the responder's ciphertext (1088 bytes).
 *
 * (A session without the exchange that a side's policy refuses ends with
 * control message 7, pq.h.)
 *
 * Each is a GUE control message (gue.h): the 4-byte control word, then
 * the body. */
#ifndef TOUD_PQMSG_H
#define TOUD_PQMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PQMSG_EK_LEN 1184               /* MLKEM_EK_LEN */
#define PQMSG_CT_LEN 1088               /* MLKEM_CT_LEN */
#define PQMSG_INIT_HDR 6                /* control word, offset */
#define PQMSG_INIT_MAX (PQMSG_INIT_HDR + PQMSG_EK_LEN)
#define PQMSG_REPLY_LEN (4 + PQMSG_CT_LEN)

/* The encapsulation key as its pieces arrive. */
struct pqmsg_key {
	uint8_t ek[PQMSG_EK_LEN];
	uint8_t have[(PQMSG_EK_LEN + 7) / 8];   /* a bit per byte received */
	size_t n_have;
};

enum pqmsg_add {
	PQMSG_BAD,              /* malformed: beyond the key, or empty */
	PQMSG_PARTIAL,          /* new bytes; the key is not whole yet */
	PQMSG_COMPLETE,         /* these bytes made the key whole */
	PQMSG_REPEAT,           /* nothing new: every byte was there, equal */
	PQMSG_CONFLICT,         /* a byte differs from one received before */
};

/* Encode a PQ_INIT with bytes [off, off + n) of ek into out (cap bytes).
 * Its length, or 0 when it does not fit or the range is not in the key. */
size_t pqmsg_init_encode(uint8_t *out, size_t cap, const uint8_t ek[PQMSG_EK_LEN], size_t off,
    size_t n);
/* How many PQ_INIT messages carry the key when a message may have at
 * most max bytes (1 or 2; 0: not even a half fits), and the size of the
 * first piece (the second has the rest). */
unsigned pqmsg_init_split(size_t max, size_t *first);
size_t pqmsg_reply_encode(uint8_t *out, size_t cap, const uint8_t ct[PQMSG_CT_LEN]);

/* Add the body of a PQ_INIT (the bytes after the control word) to k. */
void pqmsg_key_init(struct pqmsg_key *k);
enum pqmsg_add pqmsg_key_add(struct pqmsg_key *k, const uint8_t *body, size_t len);
bool pqmsg_key_complete(const struct pqmsg_key *k);

#endif
