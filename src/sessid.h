/* sessid.h - the sequence of session IDs of one DTLS association.
 *
 * The 64-bit session ID travels in the clear, so one that never changes
 * would link a roaming node's every path (RFC 9000 9.5 is the model).  At
 * the end of the handshake both sides export the same secret seed from it
 * (SSL_export_keying_material, label "EXPORTER-toud-session-ids") and
 * derive from it, without another message, ID n = the first 8 bytes of
 * HMAC-SHA256(seed, n as 4 bytes big-endian) for n = 1, 2, ...; ID 0 is
 * the one the initiator chose for the handshake.  A derived ID of 0 is
 * never used.  Pure: no I/O. */
#ifndef TOUD_SESSID_H
#define TOUD_SESSID_H

#include <stdint.h>

#define SESSID_SEED_LEN 32
#define SESSID_LABEL "EXPORTER-toud-session-ids"
/* A receiver accepts the newest index it has seen and this many after it. */
#define SESSID_WINDOW 3

/* ID number index (>= 1) of the sequence seeded by seed; 0 if it cannot
 * be used (the HMAC failed, or the ID happens to be 0). */
uint64_t sessid_derive(const uint8_t seed[SESSID_SEED_LEN], uint32_t index);

#endif
