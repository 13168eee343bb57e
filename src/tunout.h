/* tunout.h - the TUN's one writer: what the receiving direction delivers
 * and what toud itself answers into the tunnel.  Packets in flight name
 * their peer by reference (peer.h): a peer freed meanwhile resolves to
 * nobody.  The threading model is in worker.h. */
#ifndef TOUD_TUNOUT_H
#define TOUD_TUNOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct toud;
struct peer;
struct offload_vnet;
struct offload_coal;

struct tunout;

/* coal: the coalescer whose merging stops when the TUN refuses a merged
 * packet (NULL: no coalescer).  NULL with errno. */
struct tunout *tunout_new(struct toud *t, struct offload_coal *coal);
/* Write on a thread of its own from now on (called once privileges are
 * dropped).  0 or -errno. */
int tunout_start_thread(struct tunout *o);
/* Finishes the writes in flight first. */
void tunout_free(struct tunout *o);

/* A packet from peer p, with its virtio_net_hdr (NULL: a plain packet):
 * written now, or batched while the TUN thread runs.  Failures are counted
 * against p.  0 (written or batched), or < 0 when written now and (some of
 * it) lost. */
int tunout_packet(struct tunout *o, struct peer *p, const struct offload_vnet *vh,
    const uint8_t *pkt, size_t len);
/* The end of a receive round, or of a batch of opened records: the batch
 * leaves. */
void tunout_flush(struct tunout *o);
/* A packet of toud's own (ICMP): written now, failures counted on the
 * interface. */
void tunout_local(struct tunout *o, const uint8_t *pkt, size_t len);
/* Whether the TUN thread runs. */
bool tunout_threaded(const struct tunout *o);

#endif
