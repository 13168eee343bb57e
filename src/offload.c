/* offload.c - software TSO/USO segmentation and TCP coalescing for a TUN
 * opened with IFF_VNET_HDR (see offload.h).  Pure: no I/O, no allocation.
 *
 * Segmentation recomputes every checksum from scratch rather than adjusting
 * the kernel's partial sum: a compact TOU receiver tells a segment's address
 * family by which pseudo-header makes its checksum verify (pkt.c), so each
 * segment must carry a complete, correct one. */
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "bytes.h"
#include "offload.h"
#include "pkt.h"

#define IP4_DF		0x4000
#define IP4_MF		0x2000
#define IP4_OFFMASK	0x1fff

#define TCP_HLEN	20
#define TCP_CSUM_OFF	16
#define UDP_HLEN	8
#define UDP_CSUM_OFF	6

#define TCP_FIN		0x01
#define TCP_SYN		0x02
#define TCP_RST		0x04
#define TCP_PSH		0x08
#define TCP_URG		0x20
#define TCP_CWR		0x80

static const char *const offload_err_names[OFFLOAD_ERR__MAX] = {
	[OFFLOAD_OK] = "ok",
	[OFFLOAD_ERR_TRUNCATED] = "truncated",
	[OFFLOAD_ERR_FLAGS] = "bad_flags",
	[OFFLOAD_ERR_GSO_TYPE] = "bad_gso_type",
	[OFFLOAD_ERR_CSUM] = "bad_csum_offsets",
	[OFFLOAD_ERR_GSO_SIZE] = "bad_gso_size",
	[OFFLOAD_ERR_PACKET] = "bad_gso_packet",
};

const char *
offload_err_name(enum offload_err err)
{
	if ((unsigned)err >= OFFLOAD_ERR__MAX)
		return "unknown";
	return offload_err_names[err];
}

static uint16_t
get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void
put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

enum offload_err
offload_vnet_parse(const uint8_t *buf, size_t pkt_len, struct offload_vnet *vh)
{
	uint8_t type;

	vh->flags = buf[0];
	vh->gso_type = buf[1];
	vh->hdr_len = get_le16(buf + 2);
	vh->gso_size = get_le16(buf + 4);
	vh->csum_start = get_le16(buf + 6);
	vh->csum_offset = get_le16(buf + 8);

	if (vh->flags & ~(OFFLOAD_F_NEEDS_CSUM | OFFLOAD_F_DATA_VALID))
		return OFFLOAD_ERR_FLAGS;
	type = vh->gso_type & ~OFFLOAD_GSO_ECN;
	switch (type) {
	case OFFLOAD_GSO_NONE:
		if (vh->gso_type & OFFLOAD_GSO_ECN)
			return OFFLOAD_ERR_GSO_TYPE;
		break;
	case OFFLOAD_GSO_TCPV4:
	case OFFLOAD_GSO_TCPV6:
		break;
	case OFFLOAD_GSO_UDP_L4:
		if (vh->gso_type & OFFLOAD_GSO_ECN)
			return OFFLOAD_ERR_GSO_TYPE;
		break;
	default:
		return OFFLOAD_ERR_GSO_TYPE;
	}
	if (vh->flags & OFFLOAD_F_NEEDS_CSUM) {
		if ((size_t)vh->csum_start + vh->csum_offset + 2 > pkt_len)
			return OFFLOAD_ERR_CSUM;
		/* An odd offset would make the field straddle two words. */
		if (vh->csum_offset & 1)
			return OFFLOAD_ERR_CSUM;
	}
	if (type != OFFLOAD_GSO_NONE) {
		/* The segmenter computes every checksum itself, but a GSO
		 * packet without NEEDS_CSUM is not something the kernel
		 * sends: refuse rather than guess. */
		if (!(vh->flags & OFFLOAD_F_NEEDS_CSUM))
			return OFFLOAD_ERR_CSUM;
		if (vh->gso_size == 0)
			return OFFLOAD_ERR_GSO_SIZE;
	}
	return OFFLOAD_OK;
}

void
offload_vnet_put(uint8_t *buf, const struct offload_vnet *vh)
{
	buf[0] = vh->flags;
	buf[1] = vh->gso_type;
	put_le16(buf + 2, vh->hdr_len);
	put_le16(buf + 4, vh->gso_size);
	put_le16(buf + 6, vh->csum_start);
	put_le16(buf + 8, vh->csum_offset);
}

void
offload_csum_complete(uint8_t *pkt, size_t len, const struct offload_vnet *vh)
{
	uint16_t c;

	c = pkt_csum(pkt + vh->csum_start, len - vh->csum_start);
	if (c == 0)
		c = 0xffff;
	memcpy(pkt + vh->csum_start + vh->csum_offset, &c, 2);
}

enum offload_err
offload_gso_prepare(const struct offload_vnet *vh, const uint8_t *pkt, size_t len,
    struct offload_gso *g)
{
	uint8_t type = vh->gso_type & ~OFFLOAD_GSO_ECN;
	size_t l4len, payload;

	memset(g, 0, sizeof(*g));
	if (len < 1)
		return OFFLOAD_ERR_TRUNCATED;
	switch (pkt[0] >> 4) {
	case 4:
		if (type != OFFLOAD_GSO_TCPV4 && type != OFFLOAD_GSO_UDP_L4)
			return OFFLOAD_ERR_PACKET;
		if (len < PKT_IP4_HLEN)
			return OFFLOAD_ERR_TRUNCATED;
		g->family = AF_INET;
		g->ip_hlen = (size_t)(pkt[0] & 0x0f) * 4;
		if (g->ip_hlen < PKT_IP4_HLEN || g->ip_hlen > len)
			return OFFLOAD_ERR_PACKET;
		g->len = bytes_get16(pkt + 2);
		if (bytes_get16(pkt + 6) & (IP4_MF | IP4_OFFMASK))
			return OFFLOAD_ERR_PACKET;
		g->proto = pkt[9];
		break;
	case 6:
		if (type != OFFLOAD_GSO_TCPV6 && type != OFFLOAD_GSO_UDP_L4)
			return OFFLOAD_ERR_PACKET;
		if (len < PKT_IP6_HLEN)
			return OFFLOAD_ERR_TRUNCATED;
		g->family = AF_INET6;
		g->ip_hlen = PKT_IP6_HLEN;
		g->len = PKT_IP6_HLEN + (size_t)bytes_get16(pkt + 4);
		/* Extension headers would have to be copied and walked;
		 * the kernel's TCP over a TUN never adds them. */
		g->proto = pkt[6];
		break;
	default:
		return OFFLOAD_ERR_PACKET;
	}
	if (g->len > len)
		return OFFLOAD_ERR_TRUNCATED;
	if (g->len < g->ip_hlen)
		return OFFLOAD_ERR_PACKET;
	if (vh->csum_start != g->ip_hlen)
		return OFFLOAD_ERR_CSUM;
	l4len = g->len - g->ip_hlen;
	if (type == OFFLOAD_GSO_UDP_L4) {
		if (g->proto != IPPROTO_UDP)
			return OFFLOAD_ERR_PACKET;
		if (vh->csum_offset != UDP_CSUM_OFF)
			return OFFLOAD_ERR_CSUM;
		if (l4len < UDP_HLEN)
			return OFFLOAD_ERR_TRUNCATED;
		g->hdr_len = g->ip_hlen + UDP_HLEN;
	} else {
		size_t doff;

		if (g->proto != IPPROTO_TCP)
			return OFFLOAD_ERR_PACKET;
		if (vh->csum_offset != TCP_CSUM_OFF)
			return OFFLOAD_ERR_CSUM;
		if (l4len < TCP_HLEN)
			return OFFLOAD_ERR_TRUNCATED;
		doff = (size_t)(pkt[g->ip_hlen + 12] >> 4) * 4;
		if (doff < TCP_HLEN || doff > l4len)
			return OFFLOAD_ERR_PACKET;
		g->hdr_len = g->ip_hlen + doff;
	}
	payload = g->len - g->hdr_len;
	if (payload == 0)
		return OFFLOAD_ERR_PACKET;
	g->seg_size = vh->gso_size;
	g->nsegs = (unsigned)((payload + g->seg_size - 1) / g->seg_size);
	return OFFLOAD_OK;
}

size_t
offload_gso_seg_max(const struct offload_gso *g)
{
	size_t payload = g->len - g->hdr_len;

	return g->hdr_len + (payload < g->seg_size ? payload : g->seg_size);
}

/* The pseudo-header sum (not folded) of a transport segment of l4len. */
static uint32_t
pseudo_sum(const uint8_t *ip, int family, uint8_t proto, size_t l4len)
{
	uint32_t sum;

	if (family == AF_INET)
		sum = pkt_csum_partial(ip + 12, 8, 0);
	else
		sum = pkt_csum_partial(ip + 8, 32, 0);
	return sum + proto + (uint32_t)l4len;
}

size_t
offload_gso_segment(const struct offload_gso *g, const uint8_t *pkt, unsigned i,
    uint8_t *out, size_t cap)
{
	size_t off = (size_t)i * g->seg_size, payload = g->len - g->hdr_len;
	size_t plen, seglen, l4len;
	uint8_t *l4 = out + g->ip_hlen;
	uint16_t c;
	uint32_t sum;

	if (i >= g->nsegs)
		return 0;
	plen = payload - off < g->seg_size ? payload - off : g->seg_size;
	seglen = g->hdr_len + plen;
	if (seglen > cap)
		return 0;
	memcpy(out, pkt, g->hdr_len);
	memcpy(out + g->hdr_len, pkt + g->hdr_len + off, plen);
	l4len = seglen - g->ip_hlen;

	if (g->family == AF_INET) {
		bytes_put16(out + 2, (uint16_t)seglen);
		bytes_put16(out + 4, (uint16_t)(bytes_get16(pkt + 4) + i));
		bytes_put16(out + 10, 0);
		c = pkt_csum(out, g->ip_hlen);
		memcpy(out + 10, &c, 2);
	} else {
		bytes_put16(out + 4, (uint16_t)l4len);
	}

	if (g->proto == IPPROTO_TCP) {
		uint8_t flags = l4[13];

		bytes_put32(l4 + 4, bytes_get32(pkt + g->ip_hlen + 4) + (uint32_t)off);
		if (i + 1 < g->nsegs)
			flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
		if (i > 0)
			flags &= (uint8_t)~TCP_CWR;
		l4[13] = flags;
		bytes_put16(l4 + TCP_CSUM_OFF, 0);
		sum = pseudo_sum(out, g->family, IPPROTO_TCP, l4len);
		c = pkt_csum_fold(pkt_csum_partial(l4, l4len, sum));
		memcpy(l4 + TCP_CSUM_OFF, &c, 2);
	} else {
		bytes_put16(l4 + 4, (uint16_t)l4len);
		bytes_put16(l4 + UDP_CSUM_OFF, 0);
		sum = pseudo_sum(out, g->family, IPPROTO_UDP, l4len);
		c = pkt_csum_fold(pkt_csum_partial(l4, l4len, sum));
		/* 0 means "no checksum" in UDP (and is illegal over IPv6). */
		if (c == 0)
			c = 0xffff;
		memcpy(l4 + UDP_CSUM_OFF, &c, 2);
	}
	return seglen;
}

/* --- coalescing ----------------------------------------------------------- */

/* What offload_coal_add() learns of a packet before deciding. */
struct seg {
	int family;
	size_t ip_hlen, tcp_hlen, payload;
	uint8_t flags;
	uint32_t seq;
	bool mergeable;		/* TCP that may start or join a flow */
};

static void
seg_parse(uint8_t *pkt, size_t len, struct seg *s)
{
	const uint8_t *tcp;
	size_t l4len;

	memset(s, 0, sizeof(*s));
	if (len < PKT_IP4_HLEN)
		return;
	if (pkt[0] >> 4 == 4) {
		/* No options (the kernel's GRO takes none), no fragment. */
		if ((pkt[0] & 0x0f) != 5 || pkt[9] != IPPROTO_TCP)
			return;
		if (bytes_get16(pkt + 6) & (IP4_MF | IP4_OFFMASK))
			return;
		if (bytes_get16(pkt + 2) != len)
			return;
		s->family = AF_INET;
		s->ip_hlen = PKT_IP4_HLEN;
	} else if (pkt[0] >> 4 == 6) {
		if (len < PKT_IP6_HLEN || pkt[6] != IPPROTO_TCP)
			return;
		if ((size_t)bytes_get16(pkt + 4) + PKT_IP6_HLEN != len)
			return;
		s->family = AF_INET6;
		s->ip_hlen = PKT_IP6_HLEN;
	} else {
		return;
	}
	l4len = len - s->ip_hlen;
	if (l4len < TCP_HLEN)
		return;
	tcp = pkt + s->ip_hlen;
	s->tcp_hlen = (size_t)(tcp[12] >> 4) * 4;
	if (s->tcp_hlen < TCP_HLEN || s->tcp_hlen > l4len)
		return;
	s->payload = l4len - s->tcp_hlen;
	s->flags = tcp[13];
	s->seq = bytes_get32(tcp + 4);
	if (s->payload == 0 || (s->flags & (TCP_SYN | TCP_FIN | TCP_RST | TCP_URG)))
		return;
	/* Once merged, the kernel takes the checksum as verified: a segment
	 * whose own does not add up is left for the kernel to drop. */
	if (pkt_csum_fold(pkt_csum_partial(tcp, l4len,
	    pseudo_sum(pkt, s->family, IPPROTO_TCP, l4len))) != 0)
		return;
	s->mergeable = true;
}

/* Same connection: family, addresses and ports. */
static bool
same_conn(const struct offload_coal_slot *sl, const uint8_t *pkt, int family)
{
	const uint8_t *h = sl->buf + OFFLOAD_VNET_HLEN;
	size_t hl = family == AF_INET ? PKT_IP4_HLEN : PKT_IP6_HLEN;

	if (sl->family != family)
		return false;
	if (family == AF_INET ? memcmp(h + 12, pkt + 12, 8) : memcmp(h + 8, pkt + 8, 32))
		return false;
	return memcmp(h + hl, pkt + hl, 4) == 0;
}

/* May segment s (pkt) be appended to the flow in sl (same connection)? */
static bool
can_append(const struct offload_coal_slot *sl, const uint8_t *pkt, const struct seg *s)
{
	const uint8_t *h = sl->buf + OFFLOAD_VNET_HLEN, *ht = h + sl->ip_hlen;
	const uint8_t *t = pkt + s->ip_hlen;

	if (sl->closed || s->tcp_hlen != sl->tcp_hlen)
		return false;
	if (s->seq != sl->next_seq || s->payload > sl->seg_size)
		return false;
	if (sl->len + s->payload > (sl->family == AF_INET ? 0xffff : 0xffff + PKT_IP6_HLEN))
		return false;
	if (sl->family == AF_INET) {
		/* TOS, TTL, and DF alike (what inet_gro_receive compares). */
		if (h[1] != pkt[1] || h[8] != pkt[8] ||
		    ((bytes_get16(h + 6) ^ bytes_get16(pkt + 6)) & IP4_DF))
			return false;
	} else {
		/* Traffic class, flow label and hop limit alike. */
		if (memcmp(h, pkt, 4) != 0 || h[7] != pkt[7])
			return false;
	}
	/* ACK and window alike; flags alike but for PSH (allowed on the
	 * last) and CWR (allowed on the first only). */
	if (memcmp(ht + 8, t + 8, 4) != 0 || memcmp(ht + 14, t + 14, 2) != 0)
		return false;
	if (s->flags & TCP_CWR)
		return false;
	if ((ht[13] ^ s->flags) & (uint8_t)~(TCP_PSH | TCP_CWR))
		return false;
	/* Options byte for byte (timestamps included), as tcp_gro_receive. */
	if (memcmp(ht + TCP_HLEN, t + TCP_HLEN, s->tcp_hlen - TCP_HLEN) != 0)
		return false;
	return true;
}

static void
emit_lone(struct offload_coal *c, void *owner, uint8_t *pkt, size_t len)
{
	struct offload_vnet vh;

	memset(&vh, 0, sizeof(vh));
	c->emit(c->arg, owner, &vh, pkt, len);
}

static void
slot_emit(struct offload_coal *c, struct offload_coal_slot *sl)
{
	uint8_t *pkt = sl->buf + OFFLOAD_VNET_HLEN, *tcp = pkt + sl->ip_hlen;
	struct offload_vnet vh;
	size_t l4len = sl->len - sl->ip_hlen;
	uint16_t csum;

	if (sl->nsegs == 1) {
		emit_lone(c, sl->owner, pkt, sl->len);
		sl->len = 0;
		return;
	}
	if (sl->family == AF_INET) {
		bytes_put16(pkt + 2, (uint16_t)sl->len);
		bytes_put16(pkt + 10, 0);
		csum = pkt_csum(pkt, PKT_IP4_HLEN);
		memcpy(pkt + 10, &csum, 2);
	} else {
		bytes_put16(pkt + 4, (uint16_t)l4len);
	}
	/* CHECKSUM_PARTIAL: the field holds the folded pseudo-header sum
	 * (not complemented); the kernel adds the segment to it. */
	csum = (uint16_t)~pkt_csum_fold(pseudo_sum(pkt, sl->family, IPPROTO_TCP, l4len));
	memcpy(tcp + TCP_CSUM_OFF, &csum, 2);

	memset(&vh, 0, sizeof(vh));
	vh.flags = OFFLOAD_F_NEEDS_CSUM;
	vh.gso_type = sl->family == AF_INET ? OFFLOAD_GSO_TCPV4 : OFFLOAD_GSO_TCPV6;
	vh.hdr_len = (uint16_t)(sl->ip_hlen + sl->tcp_hlen);
	vh.gso_size = (uint16_t)sl->seg_size;
	vh.csum_start = (uint16_t)sl->ip_hlen;
	vh.csum_offset = TCP_CSUM_OFF;
	c->emit(c->arg, sl->owner, &vh, pkt, sl->len);
	sl->len = 0;
}

void
offload_coal_init(struct offload_coal *c, uint8_t *mem, unsigned nslots,
    offload_emit_fn *emit, void *arg)
{
	unsigned i;

	memset(c, 0, sizeof(*c));
	if (nslots > OFFLOAD_COAL_SLOTS)
		nslots = OFFLOAD_COAL_SLOTS;
	c->nslots = nslots;
	c->emit = emit;
	c->arg = arg;
	for (i = 0; i < nslots; i++)
		c->slot[i].buf = mem + (size_t)i * OFFLOAD_COAL_BUF;
}

void
offload_coal_add(struct offload_coal *c, uint8_t *pkt, size_t len, void *owner)
{
	struct offload_coal_slot *sl, *held = NULL, *free_sl = NULL, *oldest = NULL;
	struct seg s;
	unsigned i;

	seg_parse(pkt, len, &s);
	for (i = 0; i < c->nslots; i++) {
		sl = &c->slot[i];
		if (sl->len == 0) {
			if (!free_sl)
				free_sl = sl;
			continue;
		}
		if (!oldest || sl->age < oldest->age)
			oldest = sl;
		if (s.family && same_conn(sl, pkt, s.family))
			held = sl;
	}
	if (held) {
		if (s.mergeable && !c->no_merge && can_append(held, pkt, &s)) {
			uint8_t *h = held->buf + OFFLOAD_VNET_HLEN;

			memcpy(h + held->len, pkt + s.ip_hlen + s.tcp_hlen, s.payload);
			held->len += s.payload;
			held->nsegs++;
			held->next_seq += (uint32_t)s.payload;
			/* PSH travels on the merged header; after a PSH or a
			 * short segment nothing more may follow. */
			h[held->ip_hlen + 13] |= s.flags & TCP_PSH;
			if (s.payload < held->seg_size || (s.flags & TCP_PSH))
				held->closed = true;
			c->merged++;
			return;
		}
		/* Keep the connection's order: what is held goes first. */
		slot_emit(c, held);
		free_sl = held;
	}
	if (!s.mergeable || c->nslots == 0 || c->no_merge) {
		emit_lone(c, owner, pkt, len);
		return;
	}
	if (!free_sl) {
		slot_emit(c, oldest);
		free_sl = oldest;
	}
	sl = free_sl;
	memcpy(sl->buf + OFFLOAD_VNET_HLEN, pkt, len);
	sl->len = len;
	sl->family = s.family;
	sl->ip_hlen = s.ip_hlen;
	sl->tcp_hlen = s.tcp_hlen;
	sl->seg_size = s.payload;
	sl->nsegs = 1;
	sl->next_seq = s.seq + (uint32_t)s.payload;
	sl->closed = (s.flags & TCP_PSH) != 0;
	sl->age = c->clock++;
	sl->owner = owner;
}

void
offload_coal_flush(struct offload_coal *c)
{
	struct offload_coal_slot *sl;
	unsigned i, best;

	/* Oldest first, so that flows leave in the order they started. */
	for (;;) {
		best = c->nslots;
		for (i = 0; i < c->nslots; i++) {
			sl = &c->slot[i];
			if (sl->len && (best == c->nslots || sl->age < c->slot[best].age))
				best = i;
		}
		if (best == c->nslots)
			return;
		slot_emit(c, &c->slot[best]);
	}
}
