/* offload.h - the TUN's segmentation offloads in software: parsing the
 * virtio_net_hdr in front of every TUN read and write, cutting a TSO/USO
 * super-packet into wire-sized segments, and coalescing in-order TCP
 * segments of one flow into a super-packet for the TUN (what the kernel's
 * GRO does).  Pure: no I/O, no allocation.
 *
 * The header layout and constants are those of the Linux uapi
 * (include/uapi/linux/virtio_net.h, struct virtio_net_hdr, 10 bytes); the
 * TUN is put in little-endian header mode (TUNSETVNETLE), so the 16-bit
 * fields are little-endian on every host.  Debian 12's headers predate
 * USO, hence the constants here. */
#ifndef TOUD_OFFLOAD_H
#define TOUD_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OFFLOAD_VNET_HLEN	10	/* sizeof(struct virtio_net_hdr) */

#define OFFLOAD_F_NEEDS_CSUM	0x01	/* VIRTIO_NET_HDR_F_NEEDS_CSUM */
#define OFFLOAD_F_DATA_VALID	0x02	/* VIRTIO_NET_HDR_F_DATA_VALID */

#define OFFLOAD_GSO_NONE	0	/* VIRTIO_NET_HDR_GSO_NONE */
#define OFFLOAD_GSO_TCPV4	1	/* VIRTIO_NET_HDR_GSO_TCPV4 */
#define OFFLOAD_GSO_TCPV6	4	/* VIRTIO_NET_HDR_GSO_TCPV6 */
#define OFFLOAD_GSO_UDP_L4	5	/* VIRTIO_NET_HDR_GSO_UDP_L4 (Linux 6.2) */
#define OFFLOAD_GSO_ECN		0x80	/* VIRTIO_NET_HDR_GSO_ECN */

/* The largest packet a TUN read returns with TSO on: 64 KB of IP packet
 * (an IPv6 payload of 65535 plus its header). */
#define OFFLOAD_MAX_PKT		(65535 + 40)

enum offload_err {
	OFFLOAD_OK = 0,
	OFFLOAD_ERR_TRUNCATED,	/* shorter than the header, or than a header it names */
	OFFLOAD_ERR_FLAGS,	/* flags other than NEEDS_CSUM / DATA_VALID */
	OFFLOAD_ERR_GSO_TYPE,	/* unknown gso type, or ECN on UDP */
	OFFLOAD_ERR_CSUM,	/* csum_start/offset outside the packet or not the transport's */
	OFFLOAD_ERR_GSO_SIZE,	/* gso_size 0 */
	OFFLOAD_ERR_PACKET,	/* IP/transport headers do not match the gso type */
	OFFLOAD_ERR__MAX
};
const char *offload_err_name(enum offload_err err);	/* stable snake_case */

/* The virtio_net_hdr, in host order. */
struct offload_vnet {
	uint8_t flags;
	uint8_t gso_type;	/* including OFFLOAD_GSO_ECN */
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
};

/* Read the header at buf (OFFLOAD_VNET_HLEN bytes) and check it against the
 * pkt_len bytes of packet that follow it: known flags and gso type, the
 * checksum field inside the packet, a gso_size for GSO.  The packet itself
 * is checked by offload_gso_prepare(). */
enum offload_err offload_vnet_parse(const uint8_t *buf, size_t pkt_len,
    struct offload_vnet *vh);
void offload_vnet_put(uint8_t *buf, const struct offload_vnet *vh);

/* NEEDS_CSUM without GSO: sum from csum_start to the end of the packet
 * (the field holds the pseudo-header sum) and store the complement at
 * csum_start + csum_offset, 0 written as 0xffff (as skb_checksum_help()
 * does).  vh must have passed offload_vnet_parse() for len. */
void offload_csum_complete(uint8_t *pkt, size_t len, const struct offload_vnet *vh);

/* A super-packet ready to be cut. */
struct offload_gso {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t proto;		/* IPPROTO_TCP or IPPROTO_UDP */
	size_t ip_hlen;		/* 20.. (IPv4 options are copied) or 40 */
	size_t hdr_len;		/* IP + TCP (with options) / UDP headers */
	size_t len;		/* the packet by its IP length */
	size_t seg_size;	/* payload bytes per segment (gso_size) */
	unsigned nsegs;		/* segments, the last possibly shorter */
};

/* Check a GSO packet (vh already parsed, gso_type not NONE) and describe
 * its cut: IPv4 for TCPV4, IPv6 without extension headers for TCPV6, either
 * for UDP_L4; not a fragment; the transport header where csum_start says;
 * at least one payload byte. */
enum offload_err offload_gso_prepare(const struct offload_vnet *vh, const uint8_t *pkt,
    size_t len, struct offload_gso *g);
/* The largest segment offload_gso_segment() writes for g. */
size_t offload_gso_seg_max(const struct offload_gso *g);
/* Write segment i (0 <= i < nsegs) of pkt to out: the headers with their
 * own IPv4 ID (+i) and total length / IPv6 payload length, TCP sequence
 * number (+i * seg_size) and flags (FIN and PSH on the last segment only,
 * CWR on the first only), UDP length, a fresh IPv4 header checksum and a
 * complete transport checksum.  Returns the segment length; 0 if out is
 * smaller than that. */
size_t offload_gso_segment(const struct offload_gso *g, const uint8_t *pkt, unsigned i,
    uint8_t *out, size_t cap);

/* Coalescing (the TUN write side).  A table of a few flows, each slot a
 * caller-provided buffer of OFFLOAD_VNET_HLEN + OFFLOAD_MAX_PKT bytes.
 * offload_coal_add() takes one whole IP packet: a TCP segment that extends
 * a held flow is appended to it; one that can start a flow is copied into a
 * free slot (the oldest held flow is emitted to make room); anything else
 * (non-TCP, SYN/FIN/RST/URG, no payload, options on IP, a checksum that
 * does not verify) is emitted at once, after any held packet of the same
 * addresses so that no flow is reordered.  Emitting calls emit() with a
 * virtio_net_hdr and the packet: a lone packet gets an all-zero header and
 * its own bytes; a merged one gets GSO_TCPV4/TCPV6, NEEDS_CSUM,
 * csum_start/offset, gso_size = the first segment's payload, its IP lengths
 * and IPv4 header checksum rewritten, PSH if the last segment had it, and
 * the pseudo-header sum in the TCP checksum field.  A flow merges segments
 * with the same addresses, ports, ACK, window, TCP header bytes after the
 * checksum (options), IP TOS/TTL/DF or traffic class/flow label/hop limit,
 * contiguous sequence numbers, payloads of the first one's size (the last
 * may be shorter, and ends the flow), CWR only on the first and PSH only on
 * the last, up to 64 KB of IP packet. */
/* What the data path uses right now (touctl show "offload"): each is
 * false with offload = off, when the kernel lacks it, after a run-time
 * fallback, and while the data path cannot use it. */
struct offload_status {
	bool tun_tso;		/* TUN reads super-packets */
	bool tun_coalesce;	/* TUN writes merge TCP segments (until the kernel refuses) */
	bool udp_gso;		/* UDP_SEGMENT sends (on any socket) */
	bool udp_gro;		/* UDP_GRO receives (on any socket) */
};

#define OFFLOAD_COAL_SLOTS	8
#define OFFLOAD_COAL_BUF	(OFFLOAD_VNET_HLEN + OFFLOAD_MAX_PKT)

/* owner: what offload_coal_add() was given with the (first) packet; the
 * packets of one flow share an owner (a peer: the inner source names it). */
typedef void offload_emit_fn(void *arg, void *owner, const struct offload_vnet *vh,
    uint8_t *pkt, size_t len);

struct offload_coal_slot {
	uint8_t *buf;		/* OFFLOAD_COAL_BUF bytes; the packet at buf + OFFLOAD_VNET_HLEN */
	size_t len;		/* 0: free */
	int family;
	size_t ip_hlen, tcp_hlen;
	size_t seg_size;	/* payload of the first segment */
	unsigned nsegs;
	uint32_t next_seq;
	bool closed;		/* a short or PSH segment ended it */
	uint64_t age;
	void *owner;
};

struct offload_coal {
	struct offload_coal_slot slot[OFFLOAD_COAL_SLOTS];
	unsigned nslots;
	uint64_t clock;
	offload_emit_fn *emit;
	void *arg;
	uint64_t merged;	/* segments appended to another (for counters) */
	/* Merge nothing more (the TUN refused a merged packet): every packet
	 * leaves at once, after what is held of its connection, so that the
	 * switch reorders nothing. */
	bool no_merge;
};

/* mem: nslots (<= OFFLOAD_COAL_SLOTS) buffers of OFFLOAD_COAL_BUF bytes. */
void offload_coal_init(struct offload_coal *c, uint8_t *mem, unsigned nslots,
    offload_emit_fn *emit, void *arg);
/* pkt (len bytes, a whole IP packet that passed pkt_parse) is not kept:
 * it is copied or emitted before this returns. */
void offload_coal_add(struct offload_coal *c, uint8_t *pkt, size_t len, void *owner);
/* Emit every held flow; call at the end of each receive batch. */
void offload_coal_flush(struct offload_coal *c);

#endif
