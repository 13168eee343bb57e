/* rx.h - the receiving direction: UDP -> TUN. */
#ifndef TOUD_RX_H
#define TOUD_RX_H

#include <stddef.h>
#include <stdint.h>

struct toud;
struct peer;
struct rx;

struct rx *rx_new(struct toud *t);        /* also starts reading the sockets */
void rx_free(struct rx *x);
/* An inner GUE payload from p (decrypted, or a plain datagram): control
 * message, compact segment (IP header rebuilt in the bytes before buf,
 * which must have room for it) or whole IP packet, to the TUN.  wire_len,
 * the UDP payload it came in, is what rx_bytes counts (as tx_bytes does). */
void rx_inner(struct toud *t, struct peer *p, uint8_t *buf, size_t len, size_t wire_len,
    uint8_t tos, uint64_t now);

#endif
