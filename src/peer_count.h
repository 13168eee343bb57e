/* peer_count.h - a peer's traffic counters as the output side writes them,
 * on the main loop: the bytes and packets that left, and when.  tx.c
 * counts a stream transport's frames as it queues them, udpout.c the
 * datagrams of a batch once they have left.  A leaf: it writes a peer's
 * fields and calls nothing, so the output queues below the sending path
 * need nothing of peer.c (peer.h, tests/cli/knot.sh). */
#ifndef TOUD_PEER_COUNT_H
#define TOUD_PEER_COUNT_H

#include <stddef.h>
#include <stdint.h>

#include "peer.h"

static inline void
peer_tx(struct peer *p, size_t bytes, uint64_t now_ms)
{
	p->tx_bytes += bytes;
	p->tx_packets++;
	p->last_tx_ms = now_ms;
}

#endif
