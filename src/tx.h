/* tx.h - the sending direction: TUN -> peer. */
#ifndef TOUD_TX_H
#define TOUD_TX_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct toud;
struct peer;
struct tx;

struct tx *tx_new(struct toud *t);        /* also starts reading the TUN */
void tx_free(struct tx *x);
/* Send a control message (gue.h ctype) with an optional body to p now. */
int tx_control(struct toud *t, struct peer *p, uint8_t ctype, const void *body, size_t len);
/* Frame a DTLS record with the outer GUE header of session id and queue it
 * for sending to `to` (from local, when set); p is the peer to account it
 * to, or NULL.  tx_flush_records() sends the queue (it also flushes by
 * itself when full). */
void tx_queue_record(struct toud *t, uint64_t id, const uint8_t *rec, size_t len,
    const union sockaddr_union *to, const struct ipaddr *local, struct peer *p, uint8_t tos);
void tx_flush_records(struct toud *t);
/* The largest inner GUE payload (word + segment, or whole IP packet) that
 * fits the path to p. */
size_t tx_payload_budget(const struct toud *t, const struct peer *p);

#endif
