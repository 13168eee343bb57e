/* check_offload.c - virtio_net_hdr parsing, TSO/USO segmentation and TCP
 * coalescing.  Checksums are verified with a plain RFC 1071 sum written
 * here, independent of pkt.c. */
#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "offload.h"
#include "util.h"

#include "testutil.h"

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_CWR 0x80

/* --- an independent checksum -------------------------------------------- */

static uint64_t
ref_sum(const uint8_t *p, size_t len, uint64_t sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t
ref_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The pseudo-header of the transport segment of the IP packet at ip. */
static uint64_t
ref_pseudo(const uint8_t *ip, uint8_t proto, size_t l4len)
{
	if (ip[0] >> 4 == 4)
		return ref_sum(ip + 12, 8, 0) + proto + l4len;
	return ref_sum(ip + 8, 32, 0) + proto + l4len;
}

static size_t
ip_hlen(const uint8_t *ip)
{
	return ip[0] >> 4 == 4 ? (size_t)(ip[0] & 15) * 4 : 40;
}

static size_t
ip_len(const uint8_t *ip)
{
	return ip[0] >> 4 == 4 ? (size_t)(ip[2] << 8 | ip[3]) : 40 + (size_t)(ip[4] << 8 | ip[5]);
}

/* Does the IPv4 header (if any) and the transport checksum of the whole
 * packet verify? */
static bool
ref_verifies(const uint8_t *ip, uint8_t proto)
{
	size_t hl = ip_hlen(ip), len = ip_len(ip);

	if (ip[0] >> 4 == 4 && ref_fold(ref_sum(ip, hl, 0)) != 0xffff)
		return false;
	return ref_fold(ref_sum(ip + hl, len - hl, ref_pseudo(ip, proto, len - hl))) == 0xffff;
}

/* --- packet builders -------------------------------------------------------- */

struct flow {
	int family;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t ack;
	uint16_t win;
	const uint8_t *opts;
	size_t optlen;          /* multiple of 4 */
};

static const uint8_t ts_opts[12] = { 1, 1, 8, 10, 0, 0, 0x12, 0x34, 0, 0, 0x56, 0x78 };

static void
flow_init(struct flow *f, int family)
{
	memset(f, 0, sizeof(*f));
	f->family = family;
	if (family == AF_INET) {
		inet_pton(AF_INET, "10.77.0.1", f->src);
		inet_pton(AF_INET, "10.77.0.2", f->dst);
	} else {
		inet_pton(AF_INET6, "fd77::1", f->src);
		inet_pton(AF_INET6, "fd77::2", f->dst);
	}
	f->sport = 40000;
	f->dport = 80;
	f->ack = 0x01020304;
	f->win = 502;
	f->opts = ts_opts;
	f->optlen = sizeof(ts_opts);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t
payload_byte(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 8) + 3);
}

/* Write the IP header for an l4len-byte transport segment of proto. */
static size_t
put_ip(uint8_t *out, const struct flow *f, uint8_t proto, size_t l4len, uint16_t id)
{
	if (f->family == AF_INET) {
		uint16_t c;

		memset(out, 0, 20);
		out[0] = 0x45;
		put16(out + 2, (uint16_t)(20 + l4len));
		put16(out + 4, id);
		put16(out + 6, 0x4000);
		out[8] = 64;
		out[9] = proto;
		memcpy(out + 12, f->src, 4);
		memcpy(out + 16, f->dst, 4);
		c = (uint16_t)~ref_fold(ref_sum(out, 20, 0));
		put16(out + 10, c);
		return 20;
	}
	memset(out, 0, 40);
	out[0] = 0x60;
	put16(out + 4, (uint16_t)l4len);
	out[6] = proto;
	out[7] = 64;
	memcpy(out + 8, f->src, 16);
	memcpy(out + 24, f->dst, 16);
	return 40;
}

/* A TCP packet with payload bytes payload_byte(pay_off ..); a complete
 * checksum, or with partial the pseudo-header sum as a TSO super-packet
 * carries it.  Returns the packet length. */
static size_t
build_tcp(uint8_t *out, const struct flow *f, uint32_t seq, uint8_t flags, size_t pay_off,
    size_t plen, uint16_t id, bool partial)
{
	size_t thl = 20 + f->optlen, hl, i;
	uint8_t *t;
	uint16_t c;

	hl = put_ip(out, f, IPPROTO_TCP, thl + plen, id);
	t = out + hl;
	memset(t, 0, 20);
	put16(t, f->sport);
	put16(t + 2, f->dport);
	put32(t + 4, seq);
	put32(t + 8, f->ack);
	t[12] = (uint8_t)((thl / 4) << 4);
	t[13] = flags;
	put16(t + 14, f->win);
	memcpy(t + 20, f->opts, f->optlen);
	for (i = 0; i < plen; i++)
		t[thl + i] = payload_byte(pay_off + i);
	if (partial)
		c = ref_fold(ref_pseudo(out, IPPROTO_TCP, thl + plen));
	else
		c = (uint16_t)~ref_fold(ref_sum(t, thl + plen, ref_pseudo(out, IPPROTO_TCP, thl + plen)));
	put16(t + 16, c);
	return hl + thl + plen;
}

static size_t
build_udp(uint8_t *out, const struct flow *f, size_t plen, bool partial)
{
	size_t hl, i;
	uint8_t *u;

	hl = put_ip(out, f, IPPROTO_UDP, 8 + plen, 0x4321);
	u = out + hl;
	put16(u, f->sport);
	put16(u + 2, f->dport);
	put16(u + 4, (uint16_t)(8 + plen));
	put16(u + 6, 0);
	for (i = 0; i < plen; i++)
		u[8 + i] = payload_byte(i);
	if (partial)
		put16(u + 6, ref_fold(ref_pseudo(out, IPPROTO_UDP, 8 + plen)));
	return hl + 8 + plen;
}

static void
put_vnet(uint8_t *b, uint8_t flags, uint8_t type, uint16_t hdr_len, uint16_t gso,
    uint16_t cs, uint16_t co)
{
	b[0] = flags;
	b[1] = type;
	b[2] = (uint8_t)hdr_len;
	b[3] = (uint8_t)(hdr_len >> 8);
	b[4] = (uint8_t)gso;
	b[5] = (uint8_t)(gso >> 8);
	b[6] = (uint8_t)cs;
	b[7] = (uint8_t)(cs >> 8);
	b[8] = (uint8_t)co;
	b[9] = (uint8_t)(co >> 8);
}

/* --- what the coalescer emits ----------------------------------------------- */

/* Owners handed to the coalescer: one per family, so a mix-up shows. */
static int owner4, owner6;
#define OWNER(p) ((p)[0] >> 4 == 4 ? (void *)&owner4 : (void *)&owner6)

#define MAX_OUT 128

struct sink {
	unsigned n;
	struct offload_vnet vh[MAX_OUT];
	uint8_t *pkt[MAX_OUT];
	size_t len[MAX_OUT];
};

static void
sink_emit(void *arg, void *owner, const struct offload_vnet *vh, uint8_t *pkt, size_t len)
{
	struct sink *s = arg;

	/* Every test hands over the owner of the packet's family. */
	ck_assert_ptr_eq(owner, (pkt[0] >> 4) == 4 ? (void *)&owner4 : (void *)&owner6);
	ck_assert_uint_lt(s->n, MAX_OUT);
	s->vh[s->n] = *vh;
	s->pkt[s->n] = malloc(len);
	ck_assert_ptr_nonnull(s->pkt[s->n]);
	memcpy(s->pkt[s->n], pkt, len);
	s->len[s->n] = len;
	s->n++;
}

static void
sink_free(struct sink *s)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		free(s->pkt[i]);
	s->n = 0;
}

static uint8_t *coal_mem;

static void
coal_setup(void)
{
	coal_mem = malloc((size_t)OFFLOAD_COAL_SLOTS * OFFLOAD_COAL_BUF);
	ck_assert_ptr_nonnull(coal_mem);
}

static void
coal_teardown(void)
{
	free(coal_mem);
}

/* A list of cut segments. */
struct segs {
	unsigned n;
	uint8_t *p[64];
	size_t len[64];
};

static void
segs_free(struct segs *s)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		free(s->p[i]);
	s->n = 0;
}

/* Cut super (with its vnet header) and check every segment against the
 * rules; fills out. */
static void
cut_and_check(const uint8_t *vnet, const uint8_t *super, size_t len, size_t gso, struct segs *out)
{
	struct offload_vnet vh;
	struct offload_gso g;
	size_t hl = ip_hlen(super), l4hl, payload, off = 0;
	uint8_t proto = super[0] >> 4 == 4 ? super[9] : super[6];
	unsigned i;

	ck_assert_int_eq(offload_vnet_parse(vnet, len, &vh), OFFLOAD_OK);
	ck_assert_int_eq(offload_gso_prepare(&vh, super, len, &g), OFFLOAD_OK);
	l4hl = proto == IPPROTO_TCP ? (size_t)(super[hl + 12] >> 4) * 4 : 8;
	ck_assert_uint_eq(g.hdr_len, hl + l4hl);
	payload = len - hl - l4hl;
	ck_assert_uint_eq(g.nsegs, (payload + gso - 1) / gso);
	ck_assert_uint_le(g.nsegs, 64);
	out->n = 0;
	for (i = 0; i < g.nsegs; i++) {
		size_t cap = offload_gso_seg_max(&g), n, plen;
		uint8_t *s = malloc(cap);

		ck_assert_ptr_nonnull(s);
		/* Too small a buffer is refused, not overrun. */
		ck_assert_uint_eq(offload_gso_segment(&g, super, i, s, hl), 0);
		n = offload_gso_segment(&g, super, i, s, cap);
		plen = payload - off < gso ? payload - off : gso;
		ck_assert_uint_eq(n, hl + l4hl + plen);
		ck_assert_uint_eq(ip_len(s), n);
		ck_assert_msg(ref_verifies(s, proto), "segment %u checksum", i);
		ck_assert_mem_eq(s + hl + l4hl, super + hl + l4hl + off, plen);
		if (s[0] >> 4 == 4) {
			ck_assert_uint_eq((unsigned)(s[4] << 8 | s[5]),
			    (unsigned)((super[4] << 8 | super[5]) + i) & 0xffff);
			ck_assert_mem_eq(s + 6, super + 6, 4);   /* frag, TTL, proto */
			ck_assert_mem_eq(s + 12, super + 12, 8);
		} else {
			ck_assert_mem_eq(s, super, 4);
			ck_assert_mem_eq(s + 6, super + 6, 34);
		}
		if (proto == IPPROTO_TCP) {
			uint8_t want = super[hl + 13];

			ck_assert_uint_eq(get32(s + hl + 4), get32(super + hl + 4) + (uint32_t)off);
			if (i + 1 < g.nsegs)
				want &= (uint8_t)~(TCP_FIN | TCP_PSH);
			if (i > 0)
				want &= (uint8_t)~TCP_CWR;
			ck_assert_uint_eq(s[hl + 13], want);
			ck_assert_mem_eq(s + hl + 8, super + hl + 8, 5);
			ck_assert_mem_eq(s + hl + 14, super + hl + 14, 2);
			ck_assert_mem_eq(s + hl + 18, super + hl + 18, l4hl - 18);
		} else {
			ck_assert_uint_eq((unsigned)(s[hl + 4] << 8 | s[hl + 5]), 8 + plen);
			ck_assert_uint_ne((unsigned)(s[hl + 6] << 8 | s[hl + 7]), 0);
		}
		out->p[i] = s;
		out->len[i] = n;
		off += plen;
	}
	out->n = g.nsegs;
	ck_assert_uint_eq(off, payload);
	ck_assert_uint_eq(offload_gso_segment(&g, super, g.nsegs, out->p[0], 65536), 0);
}

/* Feed segs[from..to) to a fresh coalescer, flush, into sink. */
static void
coalesce(struct segs *sg, struct sink *sk)
{
	struct offload_coal c;
	unsigned i;

	offload_coal_init(&c, coal_mem, OFFLOAD_COAL_SLOTS, sink_emit, sk);
	for (i = 0; i < sg->n; i++)
		offload_coal_add(&c, sg->p[i], sg->len[i], OWNER(sg->p[i]));
	offload_coal_flush(&c);
}

/* A TSO super-packet as the kernel hands it over, and its vnet header. */
static size_t
make_super(uint8_t *vnet, uint8_t *buf, const struct flow *f, size_t plen, size_t gso,
    uint8_t flags)
{
	size_t len = build_tcp(buf, f, 0xfffff000u, flags, 0, plen, 0xfff0, true);
	size_t hl = f->family == AF_INET ? 20 : 40;

	put_vnet(vnet, 1, f->family == AF_INET ? 1 : 4, (uint16_t)(hl + 20 + f->optlen),
	    (uint16_t)gso, (uint16_t)hl, 16);
	return len;
}

static void
roundtrip(int family, size_t plen, size_t gso, uint8_t flags)
{
	uint8_t vnet[10], *super = malloc(OFFLOAD_MAX_PKT);
	struct flow f;
	struct segs sg;
	struct sink sk = { 0 };
	size_t len, hl = family == AF_INET ? 20 : 40;

	ck_assert_ptr_nonnull(super);
	flow_init(&f, family);
	len = make_super(vnet, super, &f, plen, gso, flags);
	cut_and_check(vnet, super, len, gso, &sg);
	coalesce(&sg, &sk);
	ck_assert_uint_eq(sk.n, 1);
	ck_assert_uint_eq(sk.len[0], len);
	/* One segment goes out as it was cut: with a complete checksum. */
	ck_assert_mem_eq(sk.pkt[0], sg.n > 1 ? super : sg.p[0], len);
	if (sg.n > 1) {
		ck_assert_uint_eq(sk.vh[0].flags, OFFLOAD_F_NEEDS_CSUM);
		ck_assert_uint_eq(sk.vh[0].gso_type,
		    family == AF_INET ? OFFLOAD_GSO_TCPV4 : OFFLOAD_GSO_TCPV6);
		ck_assert_uint_eq(sk.vh[0].gso_size, gso);
		ck_assert_uint_eq(sk.vh[0].hdr_len, hl + 20 + f.optlen);
		ck_assert_uint_eq(sk.vh[0].csum_start, hl);
		ck_assert_uint_eq(sk.vh[0].csum_offset, 16);
	} else {
		ck_assert_uint_eq(sk.vh[0].flags, 0);
		ck_assert_uint_eq(sk.vh[0].gso_type, 0);
	}
	sink_free(&sk);
	segs_free(&sg);
	free(super);
}

/* --- tests -------------------------------------------------------------- */

START_TEST(vnet_parse)
{
	uint8_t b[10];
	struct offload_vnet vh;

	put_vnet(b, 1, 1, 52, 1448, 20, 16);
	ck_assert_int_eq(offload_vnet_parse(b, 1000, &vh), OFFLOAD_OK);
	ck_assert_uint_eq(vh.hdr_len, 52);
	ck_assert_uint_eq(vh.gso_size, 1448);
	ck_assert_uint_eq(vh.csum_start, 20);
	ck_assert_uint_eq(vh.csum_offset, 16);
	{
		uint8_t o[10];
		offload_vnet_put(o, &vh);
		ck_assert_mem_eq(o, b, 10);
	}
	put_vnet(b, 0, 0, 0, 0, 0, 0);
	ck_assert_int_eq(offload_vnet_parse(b, 0, &vh), OFFLOAD_OK);
	put_vnet(b, 2, 0, 0, 0, 0, 0);
	ck_assert_int_eq(offload_vnet_parse(b, 0, &vh), OFFLOAD_OK);
	put_vnet(b, 4, 0, 0, 0, 0, 0);
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_ERR_FLAGS);
	put_vnet(b, 1, 3, 0, 1400, 20, 6);              /* UFO */
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_ERR_GSO_TYPE);
	put_vnet(b, 1, 5 | 0x80, 0, 1400, 20, 6);       /* ECN on UDP */
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_ERR_GSO_TYPE);
	put_vnet(b, 0, 0x80, 0, 0, 0, 0);
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_ERR_GSO_TYPE);
	put_vnet(b, 1, 1 | 0x80, 52, 1448, 20, 16);
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_OK);
}
END_TEST

START_TEST(vnet_parse_more)
{
	uint8_t b[10];
	struct offload_vnet vh;

	put_vnet(b, 1, 0, 0, 0, 20, 16);
	ck_assert_int_eq(offload_vnet_parse(b, 38, &vh), OFFLOAD_OK);
	ck_assert_int_eq(offload_vnet_parse(b, 37, &vh), OFFLOAD_ERR_CSUM);
	put_vnet(b, 1, 0, 0, 0, 20, 15);
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_ERR_CSUM);
	put_vnet(b, 1, 1, 52, 0, 20, 16);
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_ERR_GSO_SIZE);
	put_vnet(b, 0, 4, 72, 1000, 40, 16);            /* GSO without NEEDS_CSUM */
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_ERR_CSUM);
	put_vnet(b, 1, 7, 0, 1000, 20, 16);
	ck_assert_int_eq(offload_vnet_parse(b, 100, &vh), OFFLOAD_ERR_GSO_TYPE);
	ck_assert_str_eq(offload_err_name(OFFLOAD_ERR_CSUM), "bad_csum_offsets");
	ck_assert_str_eq(offload_err_name(OFFLOAD_ERR__MAX), "unknown");
}
END_TEST

START_TEST(gso_prepare_reject)
{
	uint8_t vnet[10], buf[4096];
	struct offload_vnet vh;
	struct offload_gso g;
	struct flow f;
	size_t len;

	flow_init(&f, AF_INET);
	len = make_super(vnet, buf, &f, 3000, 1000, TCP_ACK);
	ck_assert_int_eq(offload_vnet_parse(vnet, len, &vh), OFFLOAD_OK);
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_OK);
	/* Wrong family for the gso type. */
	vh.gso_type = OFFLOAD_GSO_TCPV6;
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_ERR_PACKET);
	vh.gso_type = OFFLOAD_GSO_UDP_L4;
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_ERR_PACKET);
	vh.gso_type = OFFLOAD_GSO_TCPV4;
	/* Truncated against the IP length. */
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len - 1, &g), OFFLOAD_ERR_TRUNCATED);
	/* Checksum start not at the transport header. */
	vh.csum_start = 24;
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_ERR_CSUM);
	vh.csum_start = 20;
	vh.csum_offset = 6;
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_ERR_CSUM);
	vh.csum_offset = 16;
	/* A fragment. */
	buf[6] |= 0x20;
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_ERR_PACKET);
	buf[6] &= (uint8_t)~0x20;
	/* TCP header longer than the packet. */
	len = build_tcp(buf, &f, 1, TCP_ACK, 0, 0, 1, true);
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_ERR_PACKET); /* no payload */
	buf[32] = 0xf0;
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_ERR_PACKET);
	/* Not IP. */
	buf[0] = 0x55;
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, len, &g), OFFLOAD_ERR_PACKET);
	ck_assert_int_eq(offload_gso_prepare(&vh, buf, 0, &g), OFFLOAD_ERR_TRUNCATED);
}
END_TEST

/* An IP total length of exactly 65535: the 64 KB + headers boundary. */
START_TEST(tso_v4_64k)
{
	roundtrip(AF_INET, 65535 - 20 - 32, 1448, TCP_ACK | TCP_PSH | TCP_CWR);
}
END_TEST

/* IPv6: a payload length of 65535, 65575 bytes in all. */
START_TEST(tso_v6_64k)
{
	roundtrip(AF_INET6, 65535 - 32, 1428, TCP_ACK | TCP_PSH);
}
END_TEST

/* Odd last segments, a single segment, one-byte segments. */
START_TEST(tso_odd)
{
	roundtrip(AF_INET, 3001, 1000, TCP_ACK);
	roundtrip(AF_INET6, 3001, 1000, TCP_ACK | TCP_PSH);
	roundtrip(AF_INET, 2999, 1000, TCP_ACK);
	roundtrip(AF_INET, 3000, 1000, TCP_ACK);
	roundtrip(AF_INET6, 999, 1000, TCP_ACK);
	roundtrip(AF_INET, 1, 1000, TCP_ACK | TCP_PSH);
	roundtrip(AF_INET, 63, 1, TCP_ACK);
	roundtrip(AF_INET6, 1001, 1447, TCP_ACK);
}
END_TEST

/* FIN goes on the last segment only; such a segment never merges. */
START_TEST(tso_fin)
{
	uint8_t vnet[10], *super = malloc(OFFLOAD_MAX_PKT);
	struct flow f;
	struct segs sg;
	struct sink sk = { 0 };
	size_t len;

	flow_init(&f, AF_INET);
	len = make_super(vnet, super, &f, 5000, 1400, TCP_ACK | TCP_FIN | TCP_PSH);
	cut_and_check(vnet, super, len, 1400, &sg);
	ck_assert_uint_eq(sg.n, 4);
	coalesce(&sg, &sk);
	ck_assert_uint_eq(sk.n, 2);
	ck_assert_uint_eq(sk.vh[0].gso_type, OFFLOAD_GSO_TCPV4);
	ck_assert_uint_eq(sk.len[0], 20 + 32 + 3 * 1400);
	ck_assert_uint_eq(sk.vh[1].gso_type, OFFLOAD_GSO_NONE);
	ck_assert_mem_eq(sk.pkt[1], sg.p[3], sg.len[3]);
	sink_free(&sk);
	segs_free(&sg);
	free(super);
}
END_TEST

/* The IPv4 ID wraps. */
START_TEST(tso_id_wrap)
{
	uint8_t vnet[10], *super = malloc(OFFLOAD_MAX_PKT);
	struct flow f;
	struct segs sg;
	size_t len;

	flow_init(&f, AF_INET);
	len = make_super(vnet, super, &f, 40 * 1000, 1000, TCP_ACK);
	cut_and_check(vnet, super, len, 1000, &sg);
	ck_assert_uint_eq(sg.p[15][4] << 8 | sg.p[15][5], 0xffff);
	ck_assert_uint_eq(sg.p[16][4] << 8 | sg.p[16][5], 0);
	/* Sequence numbers wrap too (the super-packet starts at 0xfffff000). */
	ck_assert_uint_eq(get32(sg.p[5] + 24), (uint32_t)(0xfffff000u + 5000u));
	segs_free(&sg);
	free(super);
}
END_TEST

START_TEST(uso)
{
	int fams[2] = { AF_INET, AF_INET6 }, k;

	for (k = 0; k < 2; k++) {
		uint8_t vnet[10], *super = malloc(OFFLOAD_MAX_PKT);
		struct flow f;
		struct segs sg;
		size_t len, hl = fams[k] == AF_INET ? 20 : 40;

		flow_init(&f, fams[k]);
		len = build_udp(super, &f, 10 * 1200 + 17, true);
		put_vnet(vnet, 1, 5, (uint16_t)(hl + 8), 1200, (uint16_t)hl, 6);
		cut_and_check(vnet, super, len, 1200, &sg);
		ck_assert_uint_eq(sg.n, 11);
		ck_assert_uint_eq(sg.len[10], hl + 8 + 17);
		segs_free(&sg);
		free(super);
	}
}
END_TEST

/* NEEDS_CSUM on a lone packet: complete the partial checksum. */
START_TEST(csum_complete)
{
	uint8_t vnet[10], buf[2048];
	struct offload_vnet vh;
	struct flow f;
	size_t len;
	int k;

	for (k = 0; k < 2; k++) {
		size_t hl = k ? 40 : 20;

		flow_init(&f, k ? AF_INET6 : AF_INET);
		len = build_tcp(buf, &f, 77, TCP_ACK | TCP_PSH, 5, 1001, 9, true);
		ck_assert(!ref_verifies(buf, IPPROTO_TCP));
		put_vnet(vnet, 1, 0, 0, 0, (uint16_t)hl, 16);
		ck_assert_int_eq(offload_vnet_parse(vnet, len, &vh), OFFLOAD_OK);
		offload_csum_complete(buf, len, &vh);
		ck_assert(ref_verifies(buf, IPPROTO_TCP));

		len = build_udp(buf, &f, 333, true);
		put_vnet(vnet, 1, 0, 0, 0, (uint16_t)hl, 6);
		ck_assert_int_eq(offload_vnet_parse(vnet, len, &vh), OFFLOAD_OK);
		offload_csum_complete(buf, len, &vh);
		ck_assert(ref_verifies(buf, IPPROTO_UDP));
	}
}
END_TEST

/* n segments of plen payload each, complete checksums, in order. */
static void
make_train(struct segs *sg, const struct flow *f, unsigned n, size_t plen, uint32_t seq0)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		sg->p[i] = malloc(2048);
		ck_assert_ptr_nonnull(sg->p[i]);
		sg->len[i] = build_tcp(sg->p[i], f, seq0 + (uint32_t)(i * plen), TCP_ACK,
		    i * plen, plen, (uint16_t)i, false);
	}
	sg->n = n;
}

/* Segments that must not join the flow before them: each one splits a
 * train of 6 into the parts given. */
static void
split_case(int family, void (*spoil)(struct segs *, const struct flow *), unsigned want_out,
    const char *what)
{
	struct flow f;
	struct segs sg;
	struct sink sk = { 0 };
	unsigned i, total = 0;

	flow_init(&f, family);
	make_train(&sg, &f, 6, 1000, 1000);
	spoil(&sg, &f);
	coalesce(&sg, &sk);
	ck_assert_msg(sk.n == want_out, "%s: %u packets out, want %u", what, sk.n, want_out);
	/* Nothing lost, every packet out still sums (merged ones once the
	 * kernel completes them). */
	for (i = 0; i < sk.n; i++) {
		size_t hl = ip_hlen(sk.pkt[i]);

		if (sk.vh[i].gso_type != 0) {
			struct offload_vnet vh = { .flags = 1, .csum_start = (uint16_t)hl,
				.csum_offset = 16 };
			offload_csum_complete(sk.pkt[i], sk.len[i], &vh);
		}
		ck_assert_msg(ref_verifies(sk.pkt[i], IPPROTO_TCP) ||
		    strcmp(what, "bad checksum") == 0, "%s: packet %u", what, i);
		total += (unsigned)(sk.len[i] - hl - 32);
	}
	if (strcmp(what, "gap") != 0)
		ck_assert_uint_eq(total, 6000);
	sink_free(&sk);
	segs_free(&sg);
}

static void
refill_csum(uint8_t *p)
{
	size_t hl = ip_hlen(p), len = ip_len(p);

	put16(p + hl + 16, 0);
	put16(p + hl + 16, (uint16_t)~ref_fold(ref_sum(p + hl, len - hl,
	    ref_pseudo(p, IPPROTO_TCP, len - hl))));
}

static void
spoil_syn(struct segs *sg, const struct flow *f)
{
	(void)f;
	sg->p[3][ip_hlen(sg->p[3]) + 13] |= TCP_SYN;
	refill_csum(sg->p[3]);
}

static void
spoil_psh_mid(struct segs *sg, const struct flow *f)
{
	(void)f;
	sg->p[2][ip_hlen(sg->p[2]) + 13] |= TCP_PSH;
	refill_csum(sg->p[2]);
}

static void
spoil_cwr_mid(struct segs *sg, const struct flow *f)
{
	(void)f;
	sg->p[3][ip_hlen(sg->p[3]) + 13] |= TCP_CWR;
	refill_csum(sg->p[3]);
}

static void
spoil_gap(struct segs *sg, const struct flow *f)
{
	(void)f;
	free(sg->p[3]);
	memmove(&sg->p[3], &sg->p[4], 2 * sizeof(sg->p[0]));
	memmove(&sg->len[3], &sg->len[4], 2 * sizeof(sg->len[0]));
	sg->n = 5;
}

/* From the fourth segment on, as when the value really changes. */
static void
spoil_option(struct segs *sg, const struct flow *f)
{
	unsigned i;

	(void)f;
	for (i = 3; i < sg->n; i++) {
		sg->p[i][ip_hlen(sg->p[i]) + 20 + 7] ^= 1;      /* TSval */
		refill_csum(sg->p[i]);
	}
}

/* From the fourth segment on, as when the value really changes. */
static void
spoil_ack(struct segs *sg, const struct flow *f)
{
	unsigned i;

	(void)f;
	for (i = 3; i < sg->n; i++) {
		sg->p[i][ip_hlen(sg->p[i]) + 11] ^= 1;
		refill_csum(sg->p[i]);
	}
}

/* From the fourth segment on, as when the value really changes. */
static void
spoil_window(struct segs *sg, const struct flow *f)
{
	unsigned i;

	(void)f;
	for (i = 3; i < sg->n; i++) {
		sg->p[i][ip_hlen(sg->p[i]) + 15] ^= 1;
		refill_csum(sg->p[i]);
	}
}

static void
spoil_ttl(struct segs *sg, const struct flow *f)
{
	unsigned i;

	(void)f;
	for (i = 3; i < sg->n; i++) {
		uint8_t *p = sg->p[i];

		if (p[0] >> 4 == 4) {
			p[8] = 63;
			put16(p + 10, 0);
			put16(p + 10, (uint16_t)~ref_fold(ref_sum(p, 20, 0)));
		} else {
			p[7] = 63;
		}
	}
}

static void
spoil_csum(struct segs *sg, const struct flow *f)
{
	(void)f;
	sg->p[3][ip_hlen(sg->p[3]) + 16] ^= 0x40;
}

/* A bigger payload than the first segment's: it starts a flow of its
 * own, the next (smaller) one ends that flow, and the last stands alone. */
static void
spoil_size(struct segs *sg, const struct flow *f)
{
	sg->len[3] = build_tcp(sg->p[3], f, 4000, TCP_ACK, 3000, 1001, 3, false);
	sg->len[4] = build_tcp(sg->p[4], f, 5001, TCP_ACK, 4001, 1000, 4, false);
	sg->len[5] = build_tcp(sg->p[5], f, 6001, TCP_ACK, 5001, 999, 5, false);
}

/* Another flow (other source port) interleaved: two flows, each merged. */
static void
spoil_other_flow(struct segs *sg, const struct flow *f)
{
	struct flow g = *f;
	unsigned i;

	g.sport++;
	for (i = 0; i < 6; i++)
		sg->len[i] = build_tcp(sg->p[i], i & 1 ? &g : f, 1000 + (uint32_t)((i / 2) * 1000),
		    TCP_ACK, (i / 2) * 1000, 1000, (uint16_t)i, false);
}

START_TEST(no_merge)
{
	int fams[2] = { AF_INET, AF_INET6 }, k;

	for (k = 0; k < 2; k++) {
		split_case(fams[k], spoil_syn, 3, "syn");
		split_case(fams[k], spoil_psh_mid, 2, "psh in the middle");
		split_case(fams[k], spoil_cwr_mid, 2, "cwr in the middle");
		split_case(fams[k], spoil_gap, 2, "gap");
		split_case(fams[k], spoil_option, 2, "option");
		split_case(fams[k], spoil_ack, 2, "ack");
		split_case(fams[k], spoil_window, 2, "window");
		split_case(fams[k], spoil_ttl, 2, "ttl");
		split_case(fams[k], spoil_csum, 3, "bad checksum");
		split_case(fams[k], spoil_size, 3, "size");
		split_case(fams[k], spoil_other_flow, 2, "other flow");
	}
}
END_TEST

/* A train that crosses 64 KB of IP packet: the segment that would pass it
 * starts a new packet. */
START_TEST(merge_64k_limit)
{
	int fams[2] = { AF_INET, AF_INET6 }, k;

	for (k = 0; k < 2; k++) {
		struct flow f;
		struct segs sg;
		struct sink sk = { 0 };
		size_t hl = k ? 40 : 20;
		/* 46 * 1400 + 52 = 64452 fits; a 47th does not (IPv4).  For
		 * IPv6 the limit is on the payload: 46 * 1400 + 32 = 64432,
		 * + 1400 = 65832 > 65535. */
		unsigned i;

		flow_init(&f, fams[k]);
		for (i = 0; i < 48; i++) {
			sg.p[i] = malloc(2048);
			sg.len[i] = build_tcp(sg.p[i], &f, (uint32_t)(i * 1400), TCP_ACK, i * 1400,
			    1400, (uint16_t)i, false);
		}
		sg.n = 48;
		coalesce(&sg, &sk);
		ck_assert_uint_eq(sk.n, 2);
		ck_assert_uint_eq(sk.len[0], hl + 32 + 46 * 1400);
		ck_assert_uint_eq(sk.vh[0].gso_size, 1400);
		ck_assert_uint_eq(sk.len[1], hl + 32 + 2 * 1400);
		sink_free(&sk);
		segs_free(&sg);
	}
}
END_TEST

/* Non-TCP and pure ACKs go out at once, after what is held of their
 * connection; the table evicts its oldest flow when full. */
START_TEST(lone_and_order)
{
	struct offload_coal c;
	struct sink sk = { 0 };
	struct flow f, g;
	uint8_t a[2048], b[2048], u[2048];
	size_t la, lb, lu;
	unsigned i;

	flow_init(&f, AF_INET);
	offload_coal_init(&c, coal_mem, 2, sink_emit, &sk);
	la = build_tcp(a, &f, 100, TCP_ACK, 0, 500, 1, false);
	offload_coal_add(&c, a, la, &owner4);
	lu = build_udp(u, &f, 50, false);
	offload_coal_add(&c, u, lu, &owner4);                    /* other protocol: straight out */
	ck_assert_uint_eq(sk.n, 1);
	ck_assert_mem_eq(sk.pkt[0], u, lu);
	lb = build_tcp(b, &f, 600, TCP_ACK, 500, 0, 2, false);  /* pure ACK, same conn */
	offload_coal_add(&c, b, lb, &owner4);
	ck_assert_uint_eq(sk.n, 3);
	ck_assert_mem_eq(sk.pkt[1], a, la);
	ck_assert_mem_eq(sk.pkt[2], b, lb);
	/* Three flows in two slots: the first is emitted when the third comes. */
	for (i = 0; i < 3; i++) {
		g = f;
		g.sport = (uint16_t)(1000 + i);
		la = build_tcp(a, &g, 1, TCP_ACK, 0, 100, 1, false);
		offload_coal_add(&c, a, la, &owner4);
	}
	ck_assert_uint_eq(sk.n, 4);
	ck_assert_uint_eq((unsigned)(sk.pkt[3][20] << 8 | sk.pkt[3][21]), 1000);
	offload_coal_flush(&c);
	ck_assert_uint_eq(sk.n, 6);
	ck_assert_uint_eq((unsigned)(sk.pkt[4][20] << 8 | sk.pkt[4][21]), 1001);
	ck_assert_uint_eq((unsigned)(sk.pkt[5][20] << 8 | sk.pkt[5][21]), 1002);
	offload_coal_flush(&c);
	ck_assert_uint_eq(sk.n, 6);
	sink_free(&sk);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("offload");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, coal_setup, coal_teardown);
	tcase_add_test(tc, vnet_parse);
	tcase_add_test(tc, vnet_parse_more);
	tcase_add_test(tc, gso_prepare_reject);
	tcase_add_test(tc, tso_v4_64k);
	tcase_add_test(tc, tso_v6_64k);
	tcase_add_test(tc, tso_odd);
	tcase_add_test(tc, tso_fin);
	tcase_add_test(tc, tso_id_wrap);
	tcase_add_test(tc, uso);
	tcase_add_test(tc, csum_complete);
	tcase_add_test(tc, no_merge);
	tcase_add_test(tc, merge_64k_limit);
	tcase_add_test(tc, lone_and_order);
	suite_add_tcase(s, tc);
	return check_run(s);
}
