/* rx.h - the receiving direction: UDP -> TUN. */
#ifndef TOUD_RX_H
#define TOUD_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct toud;
struct rx;

struct rx *rx_new(struct toud *t);        /* also starts reading the sockets */
void rx_free(struct rx *x);
/* Received datagrams from elsewhere than the sockets (a unit test's other
 * node): copied into the receive buffers and handled as if read. */
struct udp_msg;
void rx_input(struct toud *t, const struct udp_msg *msgs, unsigned n);
/* The door of a transport that authenticates its peer itself (transport.h):
 * n inner payloads ("frames": GUE word and compact segment, whole IP
 * packet or control message) that came from p, handled as a plain
 * datagram of p is.  Each frame's buf has RX_HEADROOM bytes free in front
 * of it (a compact segment's IP header is rebuilt there) and may be
 * changed; peer is where it came from (a path challenge is answered
 * there), len what counts as received, tos its outer ECN field.  ph is
 * the path they came on: their receipt is its evidence of life, and a
 * path challenge among them is answered on it. */
#define RX_HEADROOM 64
struct peer_path;
void rx_frames(struct toud *t, struct peer *p, struct peer_path *ph, const struct udp_msg *frames,
    unsigned n);
/* Whether packets for the TUN are merged (TUN offloads on, not refused). */
bool rx_coalescing(const struct rx *x);
/* The coalescer of packets for the TUN (NULL: a TUN without offloads), for
 * the TUN's writer, which stops its merging when the kernel refuses a
 * merged packet. */
struct offload_coal;
struct offload_coal *rx_coalescer(struct rx *x);
/* With DTLS, hand the opening of records to a thread of its own
 * (rxopen.c), once privileges are dropped.  0 or -errno. */
int rx_start_thread(struct rx *x);
/* Whether that thread runs. */
bool rx_opening_threaded(const struct rx *x);
/* Shutdown: every record being opened is handed back and delivered. */
void rx_flush_records(struct toud *t);

#endif
