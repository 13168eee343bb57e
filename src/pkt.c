/* pkt.c - IPv4/IPv6 and transport header parsing, rebuilding, checksums,
 * MSS clamping and ICMP "too big" synthesis.  Pure: no I/O, no allocation.
 *
 * Packets are byte arrays with no alignment guarantee: every multi-byte
 * field goes through bytes_get16()/bytes_put16() and friends, never a cast. */
#include <endian.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "bytes.h"
#include "pkt.h"

/* IPv6 extension headers (RFC 8200 4, IANA "IPv6 Extension Header Types"
 * minus ESP and AH, which toud carries as transports). */
#define IP6_NH_HOPOPTS		0
#define IP6_NH_ROUTING		43
#define IP6_NH_FRAGMENT		44
#define IP6_NH_DSTOPTS		60
#define IP6_NH_MOBILITY		135
#define IP6_NH_HIP		139
#define IP6_NH_SHIM6		140

#define IP4_DF			0x4000
#define IP4_MF			0x2000
#define IP4_OFFMASK		0x1fff

#define TCP_HLEN		20
#define TCP_FLAG_SYN		0x02
#define TCP_OPT_EOL		0
#define TCP_OPT_NOP		1
#define TCP_OPT_MSS		2
#define TCP_OPT_MSS_LEN		4
#define UDP_HLEN		8
#define ICMP_HLEN		8

#define ICMP4_UNREACH		3
#define ICMP4_UNREACH_NEEDFRAG	4
#define ICMP6_PACKET_TOO_BIG	2
#define ICMP6_INFO_MIN		128	/* types below are errors (RFC 4443 2.1) */

/* Minimum MTUs a reply must fit in (RFC 1812 4.3.2.3, RFC 4443 2.4(c)). */
#define ICMP4_REPLY_MAX		576
#define ICMP6_REPLY_MAX		1280

#define ECN_NOT_ECT		0
#define ECN_ECT1		1
#define ECN_ECT0		2
#define ECN_CE			3

static const char *const pkt_err_names[PKT_ERR__MAX] = {
	[PKT_OK] = "ok",
	[PKT_ERR_TRUNCATED] = "truncated",
	[PKT_ERR_VERSION] = "bad_version",
	[PKT_ERR_HLEN] = "bad_header_length",
	[PKT_ERR_LENGTH] = "bad_length",
	[PKT_ERR_L4] = "bad_transport",
	[PKT_ERR_PROTO] = "bad_protocol",
};

const char *
pkt_err_name(enum pkt_err err)
{
	if ((unsigned int)err >= PKT_ERR__MAX)
		return "unknown";
	return pkt_err_names[err];
}

static bool
ip6_is_ext(uint8_t nh)
{
	switch (nh) {
	case IP6_NH_HOPOPTS:
	case IP6_NH_ROUTING:
	case IP6_NH_FRAGMENT:
	case IP6_NH_DSTOPTS:
	case IP6_NH_MOBILITY:
	case IP6_NH_HIP:
	case IP6_NH_SHIM6:
		return true;
	default:
		return false;
	}
}

enum pkt_err
pkt_l4_check(uint8_t proto, const uint8_t *seg, size_t len)
{
	size_t doff;

	if (len == 0)
		return PKT_ERR_TRUNCATED;
	/* A rebuilt header with one of these as its protocol would announce
	 * an extension header that is not there. */
	if (ip6_is_ext(proto))
		return PKT_ERR_PROTO;

	switch (proto) {
	case IPPROTO_TCP:
		if (len < TCP_HLEN)
			return PKT_ERR_L4;
		doff = (size_t)(seg[12] >> 4) * 4;
		if (doff < TCP_HLEN || doff > len)
			return PKT_ERR_L4;
		return PKT_OK;
	case IPPROTO_UDP:
		if (len < UDP_HLEN || bytes_get16(seg + 4) != len)
			return PKT_ERR_L4;
		return PKT_OK;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (len < ICMP_HLEN)
			return PKT_ERR_L4;
		return PKT_OK;
	default:
		return PKT_OK;
	}
}

static enum pkt_err
pkt_parse4(const uint8_t *p, size_t len, struct pkt_info *pi)
{
	size_t hlen, tot;
	uint16_t frag;

	if (len < PKT_IP4_HLEN)
		return PKT_ERR_TRUNCATED;
	hlen = (size_t)(p[0] & 0x0f) * 4;
	if (hlen < PKT_IP4_HLEN || hlen > len)
		return PKT_ERR_HLEN;
	tot = bytes_get16(p + 2);
	if (tot < hlen)
		return PKT_ERR_LENGTH;
	if (tot > len)
		return PKT_ERR_TRUNCATED;
	frag = bytes_get16(p + 6);

	pi->family = AF_INET;
	pi->ecn = p[1] & 0x03;
	pi->proto = p[9];
	pi->fragment = (frag & (IP4_MF | IP4_OFFMASK)) != 0;
	pi->options = hlen > PKT_IP4_HLEN;
	pi->ip_hlen = hlen;
	pi->len = tot;
	pi->src.family = AF_INET;
	memcpy(&pi->src.v4, p + 12, 4);
	pi->dst.family = AF_INET;
	memcpy(&pi->dst.v4, p + 16, 4);
	return PKT_OK;
}

static enum pkt_err
pkt_parse6(const uint8_t *p, size_t len, struct pkt_info *pi)
{
	size_t plen;

	if (len < PKT_IP6_HLEN)
		return PKT_ERR_TRUNCATED;
	/* Jumbograms (payload length 0 + hop-by-hop option) never fit a
	 * TUN MTU; they parse as an empty payload. */
	plen = bytes_get16(p + 4);
	if (plen + PKT_IP6_HLEN > len)
		return PKT_ERR_TRUNCATED;

	pi->family = AF_INET6;
	pi->ecn = (p[1] >> 4) & 0x03;
	pi->proto = p[6];
	pi->fragment = p[6] == IP6_NH_FRAGMENT;
	pi->options = ip6_is_ext(p[6]);
	pi->ip_hlen = PKT_IP6_HLEN;
	pi->len = plen + PKT_IP6_HLEN;
	pi->src.family = AF_INET6;
	memcpy(&pi->src.v6, p + 8, 16);
	pi->dst.family = AF_INET6;
	memcpy(&pi->dst.v6, p + 24, 16);
	return PKT_OK;
}

enum pkt_err
pkt_parse(const uint8_t *p, size_t len, struct pkt_info *pi)
{
	enum pkt_err err;

	memset(pi, 0, sizeof(*pi));
	if (len < 1)
		return PKT_ERR_TRUNCATED;
	switch (p[0] >> 4) {
	case 4:
		err = pkt_parse4(p, len, pi);
		break;
	case 6:
		err = pkt_parse6(p, len, pi);
		break;
	default:
		return PKT_ERR_VERSION;
	}
	if (err != PKT_OK)
		return err;

	if (pi->fragment)
		return PKT_OK;
	switch (pi->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return pkt_l4_check(pi->proto, p + pi->ip_hlen,
		    pi->len - pi->ip_hlen);
	default:
		return PKT_OK;
	}
}

bool
pkt_compact_ok(const struct pkt_info *pi, const struct ipaddr *local,
    const struct ipaddr *peer)
{
	if (pi->family != local->family || pi->family != peer->family)
		return false;
	if (!util_addr_equal(&pi->src, local) || !util_addr_equal(&pi->dst, peer))
		return false;
	if (pi->options || pi->fragment)
		return false;
	if (pi->len <= pi->ip_hlen)
		return false;
	/* The GUE word does not carry the family: the receiver tells it by
	 * the protocol (ICMP / ICMPv6) or by which tunnel address pair makes
	 * the TCP/UDP checksum verify, a zero UDP checksum meaning IPv4
	 * (doc/protocol.md).  Anything it could not place goes whole. */
	switch (pi->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		return true;
	case IPPROTO_ICMP:
		return pi->family == AF_INET;
	case IPPROTO_ICMPV6:
		return pi->family == AF_INET6;
	default:
		return false;
	}
}

size_t
pkt_ip_build(uint8_t *seg, size_t seg_len, uint8_t proto,
    const struct ipaddr *src, const struct ipaddr *dst, uint8_t ecn)
{
	uint8_t *h;
	uint16_t csum;

	if (src->family != dst->family)
		return 0;
	ecn &= 0x03;

	switch (src->family) {
	case AF_INET:
		if (seg_len > 0xffff - PKT_IP4_HLEN)
			return 0;
		h = seg - PKT_IP4_HLEN;
		h[0] = 0x45;
		h[1] = ecn;                     /* DSCP 0 */
		bytes_put16(h + 2, (uint16_t)(seg_len + PKT_IP4_HLEN));
		bytes_put16(h + 4, 0);          /* ID: DF set, never fragmented */
		bytes_put16(h + 6, IP4_DF);
		h[8] = PKT_TTL;
		h[9] = proto;
		bytes_put16(h + 10, 0);
		memcpy(h + 12, &src->v4, 4);
		memcpy(h + 16, &dst->v4, 4);
		csum = pkt_csum(h, PKT_IP4_HLEN);
		memcpy(h + 10, &csum, 2);
		return PKT_IP4_HLEN;
	case AF_INET6:
		if (seg_len > 0xffff - PKT_IP6_HLEN)
			return 0;
		h = seg - PKT_IP6_HLEN;
		/* version 6, traffic class = ecn (DSCP 0), flow label 0 */
		h[0] = 0x60;
		h[1] = (uint8_t)(ecn << 4);
		h[2] = 0;
		h[3] = 0;
		bytes_put16(h + 4, (uint16_t)seg_len);
		h[6] = proto;
		h[7] = PKT_TTL;
		memcpy(h + 8, &src->v6, 16);
		memcpy(h + 24, &dst->v6, 16);
		return PKT_IP6_HLEN;
	default:
		return 0;
	}
}

/* Checksums.  Partial sums add 16-bit big-endian words as host integers
 * (an odd trailing byte is the high half of a zero-padded word), so only
 * the last chunk of a multi-part sum may have an odd length.  The results
 * of pkt_csum_fold() / pkt_csum() are in network order: memcpy them into
 * the packet as they are. */
uint32_t
pkt_csum_partial(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	uint64_t acc = 0;
	uint32_t w[4];
	uint16_t h;

	/* The ones' complement sum does not depend on byte order (RFC 1071
	 * 2(B)): add 32-bit words as the host reads them, fold, and swap
	 * once at the end.  A 64-bit accumulator takes 2^32 of them without
	 * losing a carry, and 2^32 = 1 (mod 2^16 - 1) makes each 32-bit word
	 * the sum of its two halves. */
	while (len >= 16) {
		memcpy(w, p, 16);
		acc += (uint64_t)w[0] + w[1] + w[2] + w[3];
		p += 16;
		len -= 16;
	}
	while (len >= 4) {
		memcpy(w, p, 4);
		acc += w[0];
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&h, p, 2);
		acc += h;
		p += 2;
		len -= 2;
	}
	if (len) {
		const uint8_t last[2] = { p[0], 0 };

		memcpy(&h, last, 2);
		acc += h;
	}
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	acc = (uint64_t)sum + be16toh((uint16_t)acc);
	while (acc >> 32)
		acc = (acc & 0xffffffff) + (acc >> 32);
	return (uint32_t)acc;
}

static uint16_t
csum_fold_host(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t
pkt_csum_fold(uint32_t sum)
{
	return htobe16(csum_fold_host(sum));
}

uint16_t
pkt_csum(const void *data, size_t len)
{
	return pkt_csum_fold(pkt_csum_partial(data, len, 0));
}

void
pkt_csum_update16(uint8_t *csum, uint16_t old_word, uint16_t new_word)
{
	uint32_t sum;

	/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'); unlike eqn. 2 it never
	 * turns a valid 0x0000 into 0xffff. */
	sum = (uint16_t)~bytes_get16(csum);
	sum += (uint16_t)~be16toh(old_word);
	sum += be16toh(new_word);
	bytes_put16(csum, csum_fold_host(sum));
}

static uint32_t
pseudo_sum(int family, const struct ipaddr *src, const struct ipaddr *dst,
    uint8_t proto, size_t len)
{
	uint32_t sum;

	if (family == AF_INET) {
		sum = pkt_csum_partial(&src->v4, 4, 0);
		sum = pkt_csum_partial(&dst->v4, 4, sum);
		return sum + proto + (uint32_t)(len & 0xffff);
	}
	sum = pkt_csum_partial(&src->v6, 16, 0);
	sum = pkt_csum_partial(&dst->v6, 16, sum);
	return sum + proto + (uint32_t)(len >> 16) + (uint32_t)(len & 0xffff);
}

uint16_t
pkt_l4_csum(int family, const struct ipaddr *src, const struct ipaddr *dst,
    uint8_t proto, const uint8_t *seg, size_t len)
{
	return pkt_csum_fold(pkt_csum_partial(seg, len,
	    pseudo_sum(family, src, dst, proto, len)));
}

/* Does the segment's checksum add up over this address pair?  seg_sum is
 * the segment's partial sum, taken once for both candidates. */
static bool
csum_valid(uint32_t seg_sum, int family, const struct ipaddr *src, const struct ipaddr *dst,
    uint8_t proto, size_t len)
{
	uint32_t ps = pseudo_sum(family, src, dst, proto, len), sum = seg_sum + ps;

	if (sum < ps)           /* end-around carry: 2^32 = 1 (mod 2^16 - 1) */
		sum++;
	return pkt_csum_fold(sum) == 0;
}

int
pkt_compact_family(uint8_t proto, const uint8_t *seg, size_t len,
    const struct ipaddr *src4, const struct ipaddr *dst4,
    const struct ipaddr *src6, const struct ipaddr *dst6)
{
	bool v4 = src4 && dst4, v6 = src6 && dst6;
	uint32_t seg_sum;

	if (proto == IPPROTO_ICMP)
		v6 = false;
	else if (proto == IPPROTO_ICMPV6)
		v4 = false;
	if (v4 && v6) {
		if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
			return 0;       /* nothing in the segment tells */
		/* A zero UDP checksum means "none": only IPv4 allows it. */
		if (proto == IPPROTO_UDP && len >= 8 && seg[6] == 0 && seg[7] == 0)
			return AF_INET;
		seg_sum = pkt_csum_partial(seg, len, 0);
		v4 = csum_valid(seg_sum, AF_INET, src4, dst4, proto, len);
		v6 = !v4 && csum_valid(seg_sum, AF_INET6, src6, dst6, proto, len);
	}
	return v4 == v6 ? 0 : v4 ? AF_INET : AF_INET6;
}

bool
pkt_mss_clamp(uint8_t *p, const struct pkt_info *pi, uint16_t mss)
{
	uint8_t *tcp;
	size_t seglen, doff, i, olen;
	uint16_t old, oldw, neww;
	bool changed = false;

	if (mss == 0 || pi->proto != IPPROTO_TCP || pi->fragment)
		return false;
	if (pi->family != AF_INET && pi->family != AF_INET6)
		return false;
	if (pi->len < pi->ip_hlen + TCP_HLEN)
		return false;
	tcp = p + pi->ip_hlen;
	seglen = pi->len - pi->ip_hlen;
	if (!(tcp[13] & TCP_FLAG_SYN))
		return false;
	doff = (size_t)(tcp[12] >> 4) * 4;
	if (doff < TCP_HLEN || doff > seglen)
		return false;

	/* Every MSS option is clamped: receivers differ on which of several
	 * they honour. */
	for (i = TCP_HLEN; i < doff;) {
		if (tcp[i] == TCP_OPT_EOL)
			break;
		if (tcp[i] == TCP_OPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= doff)
			break;
		olen = tcp[i + 1];
		if (olen < 2 || olen > doff - i)
			break;
		if (tcp[i] == TCP_OPT_MSS && olen == TCP_OPT_MSS_LEN) {
			old = bytes_get16(tcp + i + 2);
			if (old > mss) {
				bytes_put16(tcp + i + 2, mss);
				/* At an odd offset the field straddles two
				 * checksum words: its bytes count swapped. */
				if ((i + 2) & 1) {
					oldw = htobe16((uint16_t)(old << 8 | old >> 8));
					neww = htobe16((uint16_t)(mss << 8 | mss >> 8));
				} else {
					oldw = htobe16(old);
					neww = htobe16(mss);
				}
				pkt_csum_update16(tcp + 16, oldw, neww);
				changed = true;
			}
		}
		i += olen;
	}
	return changed;
}

/* 0 when not even the headers fit; pkt_mss_clamp() leaves packets alone
 * for an MSS of 0. */
uint16_t
pkt_mss_for_mtu(int family, unsigned mtu)
{
	unsigned hdrs;

	switch (family) {
	case AF_INET:
		hdrs = PKT_IP4_HLEN + TCP_HLEN;
		break;
	case AF_INET6:
		hdrs = PKT_IP6_HLEN + TCP_HLEN;
		break;
	default:
		return 0;
	}
	if (mtu <= hdrs)
		return 0;
	mtu -= hdrs;
	return mtu > 0xffff ? 0xffff : (uint16_t)mtu;
}

/* Is p (an IPv4 packet that passed pkt_parse) one we must not answer with
 * an ICMP error (RFC 1812 4.3.2.7)? */
static bool
too_big_forbidden4(const uint8_t *p, const struct pkt_info *pi)
{
	const uint8_t *src = p + 12;

	if (bytes_get16(p + 6) & IP4_OFFMASK)
		return true;
	/* 0.0.0.0/8, multicast, limited broadcast: no one to answer. */
	if (src[0] == 0 || src[0] >= 224)
		return true;
	if (pi->proto == IPPROTO_ICMP) {
		if (pi->len <= pi->ip_hlen)
			return true;
		switch (p[pi->ip_hlen]) {
		case 3:         /* destination unreachable */
		case 4:         /* source quench */
		case 5:         /* redirect */
		case 11:        /* time exceeded */
		case 12:        /* parameter problem */
			return true;
		}
	}
	return false;
}

/* The same for IPv6 (RFC 4443 2.4(e)): walk the extension headers to find
 * a fragment header or the upper-layer header.  A chain that cannot be
 * walked within the packet gets no reply. */
static bool
too_big_forbidden6(const uint8_t *p, const struct pkt_info *pi)
{
	size_t off = PKT_IP6_HLEN, hl;
	uint8_t nh = p[6];
	int n;

	if (p[8] == 0xff)                       /* multicast source */
		return true;
	if (memcmp(p + 8, &in6addr_any, 16) == 0)
		return true;

	for (n = 0; n < 16; n++) {
		switch (nh) {
		case IP6_NH_HOPOPTS:
		case IP6_NH_ROUTING:
		case IP6_NH_DSTOPTS:
		case IP6_NH_MOBILITY:
		case IP6_NH_HIP:
		case IP6_NH_SHIM6:
			if (off + 2 > pi->len)
				return true;
			hl = ((size_t)p[off + 1] + 1) * 8;
			nh = p[off];
			off += hl;
			break;
		case IP6_NH_FRAGMENT:
			if (off + 8 > pi->len)
				return true;
			if (bytes_get16(p + off + 2) & 0xfff8)
				return true;    /* not the first fragment */
			nh = p[off];
			off += 8;
			break;
		case IPPROTO_ICMPV6:
			if (off + 1 > pi->len)
				return true;
			return p[off] < ICMP6_INFO_MIN;
		default:
			return false;
		}
	}
	return true;
}

size_t
pkt_too_big(uint8_t *out, size_t out_size, const uint8_t *p,
    const struct pkt_info *pi, uint32_t mtu, const struct ipaddr *from)
{
	size_t hlen, quote, rlen, max;
	uint8_t *icmp;
	uint16_t csum;

	if (from->family != pi->family)
		return 0;

	switch (pi->family) {
	case AF_INET:
		if (too_big_forbidden4(p, pi))
			return 0;
		hlen = PKT_IP4_HLEN;
		max = ICMP4_REPLY_MAX;
		break;
	case AF_INET6:
		if (too_big_forbidden6(p, pi))
			return 0;
		hlen = PKT_IP6_HLEN;
		max = ICMP6_REPLY_MAX;
		break;
	default:
		return 0;
	}

	quote = pi->len;
	if (quote > max - hlen - ICMP_HLEN)
		quote = max - hlen - ICMP_HLEN;
	rlen = hlen + ICMP_HLEN + quote;
	if (out_size < rlen)
		return 0;

	icmp = out + hlen;
	/* memmove: a caller may build the reply over its own buffer. */
	memmove(icmp + ICMP_HLEN, p, quote);
	if (pi->family == AF_INET) {
		icmp[0] = ICMP4_UNREACH;
		icmp[1] = ICMP4_UNREACH_NEEDFRAG;
		bytes_put16(icmp + 2, 0);
		bytes_put16(icmp + 4, 0);
		bytes_put16(icmp + 6, mtu > 0xffff ? 0xffff : (uint16_t)mtu);
		csum = pkt_csum(icmp, ICMP_HLEN + quote);
		memcpy(icmp + 2, &csum, 2);
		pkt_ip_build(icmp, ICMP_HLEN + quote, IPPROTO_ICMP, from,
		    &pi->src, 0);
	} else {
		icmp[0] = ICMP6_PACKET_TOO_BIG;
		icmp[1] = 0;
		bytes_put16(icmp + 2, 0);
		bytes_put32(icmp + 4, mtu);
		csum = pkt_l4_csum(AF_INET6, from, &pi->src,
		    IPPROTO_ICMPV6, icmp, ICMP_HLEN + quote);
		memcpy(icmp + 2, &csum, 2);
		pkt_ip_build(icmp, ICMP_HLEN + quote, IPPROTO_ICMPV6, from,
		    &pi->src, 0);
	}
	return rlen;
}

/* The upper-layer header of an IP packet of len bytes (len >= the IP
 * header, the version already known): its protocol and offset.  *later is
 * set for a fragment other than the first.  False when an IPv6 extension
 * header chain cannot be walked within len. */
static bool
upper_layer(const uint8_t *p, size_t len, int family, uint8_t *proto, size_t *off, bool *later)
{
	size_t o;
	uint8_t nh;
	int n;

	*later = false;
	if (family == AF_INET) {
		*proto = p[9];
		*off = (size_t)(p[0] & 0x0f) * 4;
		*later = (bytes_get16(p + 6) & IP4_OFFMASK) != 0;
		return *off >= PKT_IP4_HLEN && *off <= len;
	}
	o = PKT_IP6_HLEN;
	nh = p[6];
	for (n = 0; n < 16; n++) {
		switch (nh) {
		case IP6_NH_HOPOPTS:
		case IP6_NH_ROUTING:
		case IP6_NH_DSTOPTS:
		case IP6_NH_MOBILITY:
		case IP6_NH_HIP:
		case IP6_NH_SHIM6:
			if (o + 2 > len)
				return false;
			nh = p[o];
			o += ((size_t)p[o + 1] + 1) * 8;
			break;
		case IP6_NH_FRAGMENT:
			if (o + 8 > len)
				return false;
			if (bytes_get16(p + o + 2) & 0xfff8)
				*later = true;
			nh = p[o];
			o += 8;
			break;
		default:
			*proto = nh;
			*off = o;
			return o <= len;
		}
	}
	return false;
}

static bool
icmp_is_error(int family, uint8_t proto, uint8_t type)
{
	if (family == AF_INET && proto == IPPROTO_ICMP)
		return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
	if (family == AF_INET6 && proto == IPPROTO_ICMPV6)
		return type < ICMP6_INFO_MIN;
	return false;
}

/* The encapsulated packet at q (len bytes) of the given family: its
 * source, if it is a plain packet of that family (else addr->family 0). */
static enum pkt_claim
encap_claim(const uint8_t *q, size_t len, int family, struct ipaddr *addr)
{
	size_t hlen = family == AF_INET ? PKT_IP4_HLEN : PKT_IP6_HLEN, off;
	uint8_t proto;
	bool later;

	if (len < hlen || (q[0] >> 4) != (family == AF_INET ? 4 : 6))
		return PKT_CLAIM_ENCAP;
	if (!upper_layer(q, len, family, &proto, &off, &later))
		return PKT_CLAIM_ENCAP;
	if (proto == IPPROTO_IPIP || proto == IPPROTO_IPV6)
		return PKT_CLAIM_ENCAP;
	if (!later && (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) &&
	    (off >= len || icmp_is_error(family, proto, q[off])))
		return PKT_CLAIM_ENCAP;
	addr->family = family;
	memcpy(addr->b, q + (family == AF_INET ? 12 : 8), util_addr_len(family));
	return PKT_CLAIM_ENCAP;
}

enum pkt_claim
pkt_claim(const uint8_t *p, const struct pkt_info *pi, struct ipaddr *addr)
{
	size_t off, qhlen;
	uint8_t proto;
	bool later;
	const uint8_t *q;

	memset(addr, 0, sizeof(*addr));
	if (!upper_layer(p, pi->len, pi->family, &proto, &off, &later))
		return PKT_CLAIM_QUOTE;         /* unwalkable: nothing can be checked */
	if (later)
		return PKT_CLAIM_NONE;
	switch (proto) {
	case IPPROTO_IPIP:
		return encap_claim(p + off, pi->len - off, AF_INET, addr);
	case IPPROTO_IPV6:
		return encap_claim(p + off, pi->len - off, AF_INET6, addr);
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (off >= pi->len)
			return PKT_CLAIM_QUOTE;
		if (!icmp_is_error(pi->family, proto, p[off]))
			return PKT_CLAIM_NONE;
		q = p + off + ICMP_HLEN;
		qhlen = pi->family == AF_INET ? PKT_IP4_HLEN : PKT_IP6_HLEN;
		if (off + ICMP_HLEN + qhlen > pi->len ||
		    (q[0] >> 4) != (pi->family == AF_INET ? 4 : 6))
			return PKT_CLAIM_QUOTE;
		addr->family = pi->family;
		memcpy(addr->b, q + (pi->family == AF_INET ? 16 : 24), util_addr_len(pi->family));
		return PKT_CLAIM_QUOTE;
	default:
		return PKT_CLAIM_NONE;
	}
}

uint8_t
pkt_ecn_decap(uint8_t outer, uint8_t inner, bool *drop)
{
	bool d = false;
	uint8_t res;

	outer &= 0x03;
	inner &= 0x03;
	/* RFC 6040 4.2, normal mode: the inner field is kept unless the
	 * outer carries CE, or ECT(1) over an inner ECT(0). */
	if (inner == ECN_NOT_ECT) {
		d = outer == ECN_CE;
		res = ECN_NOT_ECT;
	} else if (outer == ECN_CE) {
		res = ECN_CE;
	} else if (outer == ECN_ECT1 && inner == ECN_ECT0) {
		res = ECN_ECT1;
	} else {
		res = inner;
	}
	if (drop != NULL)
		*drop = d;
	return res;
}

void
pkt_set_ecn(uint8_t *p, const struct pkt_info *pi, uint8_t ecn)
{
	ecn &= 0x03;
	if (pi->family == AF_INET) {
		uint16_t old = bytes_get16(p);

		p[1] = (uint8_t)((p[1] & ~0x03) | ecn);
		pkt_csum_update16(p + 10, htons(old), htons(bytes_get16(p)));
	} else {
		p[1] = (uint8_t)((p[1] & ~(0x03 << 4)) | ecn << 4);
	}
}
