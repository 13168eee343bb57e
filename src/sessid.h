/* sessid.h - the sequence of session IDs of one DTLS association.
 *
 * The 64-bit session ID travels in the clear, so one that never changes
 * would link a roaming node's every path (RFC 9000 9.5 is the model).  At
 * the end of the handshake both sides export the same secret seed from it
 * (SSL_export_keying_material, label "EXPORTER-toud-session-ids") and
 * derive from it, without another message, ID n = the first 8 bytes of
 * HMAC-SHA256(seed, n as 4 bytes big-endian) for n = 1, 2, ...; ID 0 is
 * the one the initiator chose for the handshake.  A derived ID of 0 is
 * never used.
 *
 * Behind a balancer (server-id, doc/protocol.md) the responder's server ID
 * is routable: every derived ID has the two top bits of its first byte
 * clear and the server ID in its second byte, the other 54 bits as
 * derived; an ID 0 that names no server has the two top bits set, so a
 * balancer hashes it instead.  Pure: no I/O. */
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

/* The top two bits of an ID's first byte: both set in an ID 0 that names
 * no server (unroutable), both clear in one that does. */
#define SESSID_UNROUTED (UINT64_C(0xc0) << 56)
#define SESSID_SERVER_SHIFT 48

/* id with server_id routable in it (1..255); id itself for 0 (no server
 * ID: derived IDs are as random as derived). */
uint64_t sessid_route(uint64_t id, uint8_t server_id);
/* ID 0 for a handshake made from random bits: routed to server_id, or
 * for 0 (the first handshake: no server known) with the top bits set.
 * Never 0. */
uint64_t sessid_first(uint64_t random, uint8_t server_id);
/* The server ID an ID routes to: its second byte when its two top bits
 * are clear; 0 when either is set. */
uint8_t sessid_server(uint64_t id);

#endif
