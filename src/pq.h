/* pq.h - the post-quantum key exchange as both transports report and
 * enforce it ([peer] post-quantum, tou.conf(5)): the name of a session's
 * key exchange (touctl show, the metrics), whether it includes ML-KEM-768,
 * and the refusal an end with post-quantum = required sends before it
 * closes a session without it (control message 7, PQ_REFUSE: doc/protocol.md 2),
 * with the words each end logs and keeps as the peer's last error.  Pure:
 * no I/O. */
#ifndef TOUD_PQ_H
#define TOUD_PQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

#define PQ_NAME_MAX 40
/* The refusal's body: one byte of flags, what the sender has. */
#define PQ_REFUSAL_LEN 1
#define PQ_HAS_MLKEM 0x01               /* the sender's OpenSSL has ML-KEM-768 */
#define PQ_OFFERED 0x02                 /* its hello offered it / it selected it */

/* The name touctl show gives an OpenSSL group (its short name, any case):
 * "x25519mlkem768", "x25519", "ecdhe-p256" (secp256r1, prime256v1, P-256),
 * "ecdhe-p384", "ecdhe-p521"; any other lower-cased.  "" for NULL. */
const char *pq_group_name(const char *group, char *buf, size_t len);
/* The OpenSSL name of a TLS group by its number (TLS's registry) where
 * OpenSSL has no NID for it: the hybrids with ML-KEM.  NULL: unknown. */
const char *pq_tls_group_name(unsigned id);
/* Whether a key exchange so named includes ML-KEM. */
bool pq_has_mlkem(const char *kx);

void pq_refusal_encode(uint8_t body[PQ_REFUSAL_LEN], bool has_mlkem, bool offered);
/* 0, or -EINVAL for a body of another size (flags this version does not
 * know are ignored). */
int pq_refusal_decode(const uint8_t *body, size_t len, bool *peer_has_mlkem);

/* Why this end refuses a session whose key exchange kx has no ML-KEM-768
 * (its post-quantum is required); has_mlkem: this end's OpenSSL
 * (version) has it. */
void pq_why_refused(char *buf, size_t len, const char *kx, bool has_mlkem,
    const char *version);
/* Why the peer refused the session (its refusal said peer_has_mlkem),
 * seen from this end (has_mlkem, version, its own policy pq). */
void pq_why_peer_refused(char *buf, size_t len, bool peer_has_mlkem, bool has_mlkem,
    const char *version, enum conf_pq pq);

#endif
