/* fuzz_offload.c - libFuzzer harness for what a TUN read with IFF_VNET_HDR
 * hands toud: a virtio_net_hdr (the first 10 bytes of the input) and a
 * packet (the rest).  Invariants are checked with abort():
 *  - a completed NEEDS_CSUM checksum verifies against the partial sum the
 *    field held;
 *  - every cut segment fits offload_gso_seg_max(), parses as IP, has the
 *    IP length it was written with, a valid IPv4 header checksum and a
 *    valid transport checksum; the payloads put together are the
 *    original's; sequence numbers follow; FIN/PSH only on the last, CWR
 *    only on the first;
 *  - coalescing the segments loses no payload byte and everything it
 *    emits is a valid packet (merged ones once their checksum is
 *    completed, as the kernel would). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "bytes.h"
#include "offload.h"
#include "pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t pkt[OFFLOAD_MAX_PKT];
static uint8_t seg[OFFLOAD_MAX_PKT];
static uint8_t coal_mem[OFFLOAD_COAL_SLOTS * OFFLOAD_COAL_BUF];
static size_t emitted_payload;

static bool
l4_valid(const uint8_t *p, const struct pkt_info *pi)
{
	return pkt_l4_csum(pi->family, &pi->src, &pi->dst, pi->proto,
	    p + pi->ip_hlen, pi->len - pi->ip_hlen) == 0;
}

static size_t
l4_hlen(const uint8_t *p, const struct pkt_info *pi)
{
	if (pi->proto == IPPROTO_TCP)
		return (size_t)(p[pi->ip_hlen + 12] >> 4) * 4;
	return 8;
}

static int owner;

static void
on_emit(void *arg, void *own, const struct offload_vnet *vh, uint8_t *p, size_t len)
{
	struct pkt_info pi;

	(void)arg;
	if (own != &owner)
		abort();
	if (pkt_parse(p, len, &pi) != PKT_OK || pi.len != len)
		abort();
	if (vh->gso_type != OFFLOAD_GSO_NONE) {
		if (vh->flags != OFFLOAD_F_NEEDS_CSUM || vh->csum_start != pi.ip_hlen ||
		    vh->csum_offset != 16 || vh->gso_size == 0 || pi.proto != IPPROTO_TCP)
			abort();
		if (vh->hdr_len != pi.ip_hlen + l4_hlen(p, &pi) || len - vh->hdr_len <= vh->gso_size)
			abort();
		offload_csum_complete(p, len, vh);
		if (pi.family == AF_INET && pkt_csum(p, pi.ip_hlen) != 0)
			abort();
	}
	if (pi.proto == IPPROTO_TCP)
		emitted_payload += len - pi.ip_hlen - l4_hlen(p, &pi);
	if (vh->gso_type != OFFLOAD_GSO_NONE && !l4_valid(p, &pi))
		abort();
}

static void
check_complete(const uint8_t *data, size_t len, const struct offload_vnet *vh)
{
	uint8_t *field = pkt + vh->csum_start + vh->csum_offset;
	uint32_t sum, partial;

	memcpy(pkt, data, len);
	partial = bytes_get16(field);
	offload_csum_complete(pkt, len, vh);
	/* The data with the new field, plus the pseudo-header sum the field
	 * held, must add up to all ones. */
	sum = pkt_csum_partial(pkt + vh->csum_start, len - vh->csum_start, partial);
	if (pkt_csum_fold(sum) != 0)
		abort();
}

static void
check_segments(const uint8_t *data, size_t len, const struct offload_vnet *vh)
{
	struct offload_gso g;
	struct offload_coal c;
	size_t max, off = 0, payload;
	uint32_t seq0 = 0;
	unsigned i;

	if (offload_gso_prepare(vh, data, len, &g) != OFFLOAD_OK)
		return;
	memcpy(pkt, data, g.len);
	max = offload_gso_seg_max(&g);
	payload = g.len - g.hdr_len;
	if (g.nsegs == 0 || max > sizeof(seg) || (size_t)g.nsegs * g.seg_size < payload)
		abort();
	if (g.proto == IPPROTO_TCP)
		seq0 = bytes_get32(pkt + g.ip_hlen + 4);
	offload_coal_init(&c, coal_mem, OFFLOAD_COAL_SLOTS, on_emit, NULL);
	emitted_payload = 0;
	for (i = 0; i < g.nsegs; i++) {
		struct pkt_info pi;
		size_t n = offload_gso_segment(&g, pkt, i, seg, sizeof(seg)), plen;

		if (n == 0 || n > max || n <= g.hdr_len)
			abort();
		if (offload_gso_segment(&g, pkt, i, seg + 0, n - 1) != 0)
			abort();
		n = offload_gso_segment(&g, pkt, i, seg, n);
		if (pkt_parse(seg, n, &pi) != PKT_OK || pi.len != n || pi.proto != g.proto)
			abort();
		if (pi.family == AF_INET && pkt_csum(seg, pi.ip_hlen) != 0)
			abort();
		if (!l4_valid(seg, &pi))
			abort();
		plen = n - g.hdr_len;
		if (memcmp(seg + g.hdr_len, pkt + g.hdr_len + off, plen) != 0)
			abort();
		if (g.proto == IPPROTO_TCP) {
			uint8_t fl = seg[g.ip_hlen + 13];

			if (bytes_get32(seg + g.ip_hlen + 4) != seq0 + (uint32_t)off)
				abort();
			if (i + 1 < g.nsegs && (fl & 0x09))
				abort();
			if (i > 0 && (fl & 0x80))
				abort();
		} else if (bytes_get16(seg + g.ip_hlen + 4) != n - g.ip_hlen) {
			abort();
		}
		off += plen;
		offload_coal_add(&c, seg, n, &owner);
	}
	offload_coal_flush(&c);
	if (off != payload)
		abort();
	/* Every TCP byte that went in came out (UDP is never held). */
	if (g.proto == IPPROTO_TCP && emitted_payload != payload)
		abort();
	if (offload_gso_segment(&g, pkt, g.nsegs, seg, sizeof(seg)) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct offload_vnet vh;
	struct pkt_info pi;
	size_t len;

	if (size < OFFLOAD_VNET_HLEN || size - OFFLOAD_VNET_HLEN > sizeof(pkt))
		return 0;
	len = size - OFFLOAD_VNET_HLEN;
	if (offload_vnet_parse(data, len, &vh) != OFFLOAD_OK)
		return 0;
	data += OFFLOAD_VNET_HLEN;
	if ((vh.gso_type & ~OFFLOAD_GSO_ECN) != OFFLOAD_GSO_NONE) {
		check_segments(data, len, &vh);
		return 0;
	}
	if (vh.flags & OFFLOAD_F_NEEDS_CSUM)
		check_complete(data, len, &vh);
	/* A lone packet through the coalescer: whatever it holds or emits
	 * must be a packet. */
	memcpy(pkt, data, len);
	if (pkt_parse(pkt, len, &pi) == PKT_OK) {
		struct offload_coal c;

		offload_coal_init(&c, coal_mem, 2, on_emit, NULL);
		offload_coal_add(&c, pkt, pi.len, &owner);
		offload_coal_add(&c, pkt, pi.len, &owner);
		offload_coal_flush(&c);
	}
	return 0;
}
