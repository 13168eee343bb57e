/* pkt.h - IPv4/IPv6 and transport header parsing, rebuilding, checksums,
 * MSS clamping and ICMP "too big" synthesis.  Pure: no I/O, no allocation. */
#ifndef TOUD_PKT_H
#define TOUD_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define PKT_IP4_HLEN 20
#define PKT_IP6_HLEN 40
#define PKT_TTL 64

enum pkt_err {
	PKT_OK = 0,
	PKT_ERR_TRUNCATED,   /* shorter than a header, or than its length field */
	PKT_ERR_VERSION,     /* not 4 or 6, or not the family expected */
	PKT_ERR_HLEN,        /* IPv4 IHL < 5 or beyond the packet */
	PKT_ERR_LENGTH,      /* total/payload length inconsistent */
	PKT_ERR_L4,          /* transport header malformed (TCP doff, UDP length, ICMP) */
	PKT_ERR_PROTO,       /* compact segment of a protocol toud does not carry */
	PKT_ERR__MAX
};
const char *pkt_err_name(enum pkt_err err);   /* stable snake_case */

struct pkt_info {
	int family;          /* AF_INET or AF_INET6 */
	uint8_t proto;       /* transport protocol (IPv6: the first Next Header) */
	uint8_t ecn;         /* the two ECN bits of TOS / traffic class */
	bool fragment;       /* IPv4 MF or offset != 0, or an IPv6 fragment header */
	bool options;        /* IPv4 options present, or IPv6 extension headers */
	size_t ip_hlen;      /* 20.. for IPv4, 40 for IPv6 (extension headers not included) */
	size_t len;          /* packet length according to the IP header (<= buffer) */
	struct ipaddr src, dst;
};

/* Parse and validate an IP packet.  Trailing bytes beyond the IP length are
 * allowed (len becomes the IP length).  For unfragmented TCP/UDP/ICMP/ICMPv6
 * the transport header is checked too (pkt_l4_check). */
enum pkt_err pkt_parse(const uint8_t *p, size_t len, struct pkt_info *pi);

/* Check a bare transport segment (compact TOU payload): TCP header length
 * within the segment, UDP length equal to the segment, ICMP at least 8
 * bytes.  Other protocols are accepted as opaque if nonempty. */
enum pkt_err pkt_l4_check(uint8_t proto, const uint8_t *seg, size_t len);

/* DESIGN 2.2: may this packet travel as compact TOU between local and peer? */
bool pkt_compact_ok(const struct pkt_info *pi, const struct ipaddr *local,
    const struct ipaddr *peer);

/* Rebuild the IP header of a compact segment.  The header is written into
 * the bytes just before seg (20 or 40 of them, which the caller must own):
 * version, addresses, protocol, length, TTL/hop limit 64, DF, ECN, a fresh
 * IPv4 header checksum.  Returns the header length, or 0 if the packet would
 * exceed 65535 bytes or the families differ. */
size_t pkt_ip_build(uint8_t *seg, size_t seg_len, uint8_t proto,
    const struct ipaddr *src, const struct ipaddr *dst, uint8_t ecn);

/* Internet checksum: partial sums, folding, RFC 1624 incremental update. */
uint32_t pkt_csum_partial(const void *data, size_t len, uint32_t sum);
uint16_t pkt_csum_fold(uint32_t sum);                  /* ~ and fold, network order */
uint16_t pkt_csum(const void *data, size_t len);       /* full checksum, network order */
/* *csum (network order, in the packet) covers a 16-bit word that changes
 * from old_word to new_word (both network order): HC' = ~(~HC + ~m + m'). */
void pkt_csum_update16(uint8_t *csum, uint16_t old_word, uint16_t new_word);
/* Transport checksum over the pseudo-header + segment (for tests/synthesis). */
uint16_t pkt_l4_csum(int family, const struct ipaddr *src, const struct ipaddr *dst,
    uint8_t proto, const uint8_t *seg, size_t len);

/* The address family of a compact segment (the GUE word does not carry
 * it).  Pass the (source, destination) pair of each family the two ends
 * share, NULL for a family they do not.  With both, ICMP/ICMPv6 decide by
 * themselves and TCP/UDP by which pair makes the transport checksum valid
 * (the segment is summed once); a zero UDP checksum is IPv4.  Returns
 * AF_INET, AF_INET6, or 0 when it cannot be told. */
int pkt_compact_family(uint8_t proto, const uint8_t *seg, size_t len,
    const struct ipaddr *src4, const struct ipaddr *dst4,
    const struct ipaddr *src6, const struct ipaddr *dst6);

/* MSS clamp: if p is a TCP SYN (with or without ACK) whose MSS option
 * exceeds mss, lower it and fix the TCP checksum incrementally.  Returns true
 * if the packet was changed. */
bool pkt_mss_clamp(uint8_t *p, const struct pkt_info *pi, uint16_t mss);
/* The MSS that fits an inner packet of mtu bytes. */
uint16_t pkt_mss_for_mtu(int family, unsigned mtu);

/* Build an ICMP "fragmentation needed" (type 3 code 4) or ICMPv6 "packet
 * too big" reply to the oversize packet p, from address `from` (this node's
 * tunnel address of that family) to p's source, quoting as much of p as
 * fits in the minimum MTU (576 / 1280).  Returns the reply length written to
 * out, or 0 when no reply is due (p is itself an ICMP error, a fragment
 * other than the first, or out is too small). */
size_t pkt_too_big(uint8_t *out, size_t out_size, const uint8_t *p,
    const struct pkt_info *pi, uint32_t mtu, const struct ipaddr *from);

/* What an inner packet vouches for beyond its own source.  A peer's
 * packets pass the source check, but two kinds carry a second address the
 * kernel acts on:
 *   - an ICMP/ICMPv6 error quotes a packet; the kernel applies it to the
 *     quoted flow, which must be one routed to this peer: PKT_CLAIM_QUOTE,
 *     *addr = the quoted packet's destination;
 *   - IP-in-IP (protocol 4, IPv4, or 41, IPv6) carries a packet that a
 *     tunnel device would deliver as coming from its own source:
 *     PKT_CLAIM_ENCAP, *addr = the encapsulated packet's source.
 * When the address cannot be checked, the kind is returned with
 * addr->family 0: the quote or inner header is cut short (by the packet or
 * a first fragment), an error quotes the other family, an IPv6 header chain
 * cannot be walked, or an encapsulated packet is itself an encapsulation or
 * an ICMP error.  Such a packet must be dropped.  Later fragments claim
 * nothing: the kernel needs the first one to reassemble.  pi is the result
 * of pkt_parse(p). */
enum pkt_claim {
	PKT_CLAIM_NONE = 0,
	PKT_CLAIM_QUOTE,
	PKT_CLAIM_ENCAP,
};
enum pkt_claim pkt_claim(const uint8_t *p, const struct pkt_info *pi, struct ipaddr *addr);

/* RFC 6040 normal-mode decapsulation of the ECN field: outer CE marks
 * an ECT inner as CE; returns the inner ECN to write.  *drop is set when the
 * combination must be dropped (outer CE, inner Not-ECT). */
uint8_t pkt_ecn_decap(uint8_t outer, uint8_t inner, bool *drop);
/* Write ecn into the ECN field of the parsed packet p (pi), keeping the
 * IPv4 header checksum right. */
void pkt_set_ecn(uint8_t *p, const struct pkt_info *pi, uint8_t ecn);

#endif
