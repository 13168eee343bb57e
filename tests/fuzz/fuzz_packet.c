/* fuzz_packet.c - libFuzzer harness for the packet path: outer and inner GUE
 * framing, IP and transport parsing, the compact rebuild, MSS clamping and
 * ICMP too-big synthesis.  Invariants that must hold are checked with
 * abort(): what one end accepts as compact must rebuild into a packet the
 * other end parses; a clamp keeps a valid checksum valid; a too-big reply
 * is itself a valid packet within the minimum MTU. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "gue.h"
#include "pkt.h"
#include "util.h"

#define HEADROOM 64
#define REPLY_MAX 1280

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static void
tunnel_addrs(int family, struct ipaddr *local, struct ipaddr *peer)
{
	memset(local, 0, sizeof(*local));
	memset(peer, 0, sizeof(*peer));
	local->family = peer->family = family;
	if (family == AF_INET) {
		memcpy(local->b, "\x0a\x4d\x00\x01", 4);
		memcpy(peer->b, "\x0a\x4d\x00\x02", 4);
	} else {
		memcpy(local->b, "\xfd\x77\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
		memcpy(peer->b, "\xfd\x77\0\0\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
	}
}

static bool
tcp_csum_ok(const uint8_t *p, const struct pkt_info *pi)
{
	return pkt_l4_csum(pi->family, &pi->src, &pi->dst, pi->proto,
	    p + pi->ip_hlen, pi->len - pi->ip_hlen) == 0;
}

static void
check_too_big(const uint8_t *p, const struct pkt_info *pi, uint32_t mtu,
    size_t out_size)
{
	uint8_t out[REPLY_MAX];
	struct ipaddr from, peer;
	struct pkt_info ri;
	size_t n;

	tunnel_addrs(pi->family, &from, &peer);
	n = pkt_too_big(out, out_size, p, pi, mtu, &from);
	if (n == 0)
		return;
	if (n > out_size || n > (pi->family == AF_INET ? 576u : 1280u))
		abort();
	if (pkt_parse(out, n, &ri) != PKT_OK || ri.len != n)
		abort();
	if (!util_addr_equal(&ri.src, &from) || !util_addr_equal(&ri.dst, &pi->src))
		abort();
	if (pi->family == AF_INET) {
		if (ri.proto != 1 || pkt_csum(out, 20) != 0 ||
		    pkt_csum(out + 20, n - 20) != 0)
			abort();
	} else {
		if (ri.proto != 58 || pkt_l4_csum(AF_INET6, &ri.src, &ri.dst,
		    58, out + 40, n - 40) != 0)
			abort();
	}
	/* The quote is the start of the original packet. */
	if (memcmp(out + ri.ip_hlen + 8, p, n - ri.ip_hlen - 8) != 0)
		abort();
}

/* A whole IP packet: parse, and if it parses exercise everything that
 * runs on packets read from the TUN. */
static void
check_ip(const uint8_t *p, size_t len, uint16_t mss, uint32_t mtu)
{
	struct pkt_info pi, pi2;
	struct gue_inner in;
	uint8_t *copy;
	bool valid, drop;

	if (pkt_parse(p, len, &pi) != PKT_OK)
		return;
	if (pi.len > len || pi.ip_hlen > pi.len)
		abort();
	sink += pi.proto + pi.ecn + pi.fragment + pi.options;
	sink += pkt_ecn_decap(p[len - 1], pi.ecn, &drop) + drop;

	copy = malloc(pi.len + HEADROOM);
	if (copy == NULL)
		return;
	memcpy(copy + HEADROOM, p, pi.len);

	/* MSS clamp never breaks a packet or a valid checksum. */
	valid = pi.proto == 6 && !pi.fragment && tcp_csum_ok(copy + HEADROOM, &pi);
	if (pkt_mss_clamp(copy + HEADROOM, &pi, mss)) {
		if (pi.proto != 6 || pi.fragment)
			abort();
		if (pkt_parse(copy + HEADROOM, pi.len, &pi2) != PKT_OK)
			abort();
	}
	if (valid && !tcp_csum_ok(copy + HEADROOM, &pi))
		abort();

	check_too_big(p, &pi, mtu, REPLY_MAX);
	check_too_big(p, &pi, mtu, mss % REPLY_MAX);

	/* Whatever the sender sends compact, the receiver accepts. */
	if (pkt_compact_ok(&pi, &pi.src, &pi.dst)) {
		uint8_t *word = copy + HEADROOM + pi.ip_hlen - GUE_WORD_LEN;

		memcpy(copy + HEADROOM, p, pi.len);
		gue_compact_encode(word, pi.proto);
		if (gue_inner_decode(word, GUE_WORD_LEN + pi.len - pi.ip_hlen,
		    &in) != GUE_OK || in.kind != GUE_KIND_COMPACT ||
		    in.proto != pi.proto)
			abort();
		if (pkt_l4_check(in.proto, in.payload, in.len) != PKT_OK)
			abort();
	}
	free(copy);
}

/* The protocols a receiver can place in a family (doc/protocol.md). */
static bool
compact_proto(int family, uint8_t proto)
{
	return proto == 6 || proto == 17 ||
	    (family == AF_INET && proto == 1) ||
	    (family == AF_INET6 && proto == 58);
}

/* A compact segment accepted by pkt_l4_check must rebuild into a packet
 * that parses, with the fields the receiver wrote. */
static void
check_compact(const struct gue_inner *in, uint8_t ecn, uint16_t mss,
    uint32_t mtu)
{
	static const int families[] = { AF_INET, AF_INET6 };
	struct ipaddr local, peer;
	struct pkt_info pi;
	uint8_t *buf, *seg;
	size_t hl, i;

	if (pkt_l4_check(in->proto, in->payload, in->len) != PKT_OK)
		return;
	buf = malloc(HEADROOM + in->len);
	if (buf == NULL)
		return;
	seg = buf + HEADROOM;
	for (i = 0; i < 2; i++) {
		tunnel_addrs(families[i], &local, &peer);
		memcpy(seg, in->payload, in->len);
		hl = pkt_ip_build(seg, in->len, in->proto, &peer, &local, ecn);
		if (hl == 0) {
			if (in->len + (i == 0 ? 20 : 40) <= 0xffff)
				abort();
			continue;
		}
		if (pkt_parse(seg - hl, hl + in->len, &pi) != PKT_OK)
			abort();
		if (pi.len != hl + in->len || pi.ip_hlen != hl ||
		    pi.proto != in->proto || pi.ecn != (ecn & 3) ||
		    pi.fragment || pi.options ||
		    !util_addr_equal(&pi.src, &peer) ||
		    !util_addr_equal(&pi.dst, &local))
			abort();
		if (pkt_compact_ok(&pi, &peer, &local) !=
		    compact_proto(families[i], in->proto))
			abort();
		check_ip(seg - hl, hl + in->len, mss, mtu);
	}
	free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gue_inner in;
	uint64_t sid;
	uint8_t ct;
	uint16_t mss;
	uint32_t mtu;

	if (size == 0)
		return 0;
	mss = (uint16_t)(size * 7 % 1500);
	mtu = 1200 + (uint32_t)(size % 400);

	if (gue_outer_decode(data, size, &sid) == GUE_OK) {
		sink += sid;
		if (gue_dtls_prefilter(data + GUE_OUTER_LEN,
		    size - GUE_OUTER_LEN, &ct) == GUE_DTLS_OK)
			sink += ct;
	}

	/* The input as the inner payload (encryption = none, or the
	 * plaintext of a DTLS record). */
	if (gue_inner_decode(data, size, &in) == GUE_OK) {
		switch (in.kind) {
		case GUE_KIND_COMPACT:
			check_compact(&in, data[size - 1], mss, mtu);
			break;
		case GUE_KIND_IP:
			check_ip(in.payload, in.len, mss, mtu);
			break;
		case GUE_KIND_CONTROL:
			sink += in.proto + in.len;
			break;
		}
	}
	return 0;
}
