/* check_pkt.c - IP/transport parsing, rebuild, checksums, MSS clamp,
 * ICMP too-big synthesis and ECN decapsulation. */
#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "pkt.h"
#include "util.h"

#include "testutil.h"

#define HEADROOM 64
#define BUFSZ 2048

/* --- helpers --------------------------------------------------------------- */

/* Deterministic xorshift32: reproducible failures. */
static uint32_t
rnd(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/* A reference RFC 1071 checksum, written without pkt.c: host-order result. */
static uint16_t
ref_csum(const uint8_t *const parts[], const size_t lens[], size_t n)
{
	uint64_t sum = 0;
	size_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j + 1 < lens[i]; j += 2)
			sum += (uint32_t)parts[i][j] << 8 | parts[i][j + 1];
		if (lens[i] & 1)
			sum += (uint32_t)parts[i][lens[i] - 1] << 8;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint16_t
ref_csum1(const uint8_t *p, size_t len)
{
	const uint8_t *parts[] = { p };
	size_t lens[] = { len };

	return ref_csum(parts, lens, 1);
}

/* Transport checksum with the pseudo-header, host order. */
static uint16_t
ref_l4_csum(const struct ipaddr *src, const struct ipaddr *dst, uint8_t proto,
    const uint8_t *seg, size_t len)
{
	uint8_t ph[40];
	size_t alen = src->family == AF_INET ? 4 : 16, phlen;
	const uint8_t *parts[2];
	size_t lens[2];

	memset(ph, 0, sizeof(ph));
	memcpy(ph, src->b, alen);
	memcpy(ph + alen, dst->b, alen);
	if (src->family == AF_INET) {
		ph[9] = proto;
		ph[10] = (uint8_t)(len >> 8);
		ph[11] = (uint8_t)len;
		phlen = 12;
	} else {
		ph[34] = (uint8_t)(len >> 8);
		ph[35] = (uint8_t)len;
		ph[39] = proto;
		phlen = 40;
	}
	parts[0] = ph;
	lens[0] = phlen;
	parts[1] = seg;
	lens[1] = len;
	return ref_csum(parts, lens, 2);
}

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A TCP segment 40000 -> 22 with the given flags, options (a multiple of 4
 * bytes) and datalen bytes of payload; checksum left 0. */
static size_t
mktcp(uint8_t *seg, uint8_t flags, const uint8_t *opts, size_t optlen,
    size_t datalen)
{
	size_t i, hlen = 20 + optlen;

	ck_assert_uint_eq(optlen % 4, 0);
	memset(seg, 0, hlen);
	wr16(seg, 40000);
	wr16(seg + 2, 22);
	seg[4] = 0x11; seg[5] = 0x22; seg[6] = 0x33; seg[7] = 0x44;
	if (flags & 0x10)
		seg[11] = 1;
	seg[12] = (uint8_t)((hlen / 4) << 4);
	seg[13] = flags;
	wr16(seg + 14, 64240);
	if (optlen)
		memcpy(seg + 20, opts, optlen);
	for (i = 0; i < datalen; i++)
		seg[hlen + i] = (uint8_t)(i * 7 + 3);
	return hlen + datalen;
}

static size_t
mkudp(uint8_t *seg, size_t datalen)
{
	size_t i;

	wr16(seg, 5353);
	wr16(seg + 2, 53);
	wr16(seg + 4, (uint16_t)(8 + datalen));
	wr16(seg + 6, 0);
	for (i = 0; i < datalen; i++)
		seg[8 + i] = (uint8_t)i;
	return 8 + datalen;
}

static size_t
mkicmp(uint8_t *seg, uint8_t type, uint8_t code, size_t datalen)
{
	size_t i;

	seg[0] = type;
	seg[1] = code;
	wr16(seg + 2, 0);
	wr16(seg + 4, 0x1234);
	wr16(seg + 6, 1);
	for (i = 0; i < datalen; i++)
		seg[8 + i] = (uint8_t)(0xa0 + i);
	return 8 + datalen;
}

/* Fill in the transport checksum of seg (reference implementation). */
static void
set_l4_csum(const struct ipaddr *src, const struct ipaddr *dst, uint8_t proto,
    uint8_t *seg, size_t len)
{
	size_t off = proto == IPPROTO_TCP ? 16 : proto == IPPROTO_UDP ? 6 : 2;

	wr16(seg + off, 0);
	wr16(seg + off, ref_l4_csum(src, dst, proto, seg, len));
}

/* Put an IP header in front of the segment at buf + HEADROOM; returns the
 * start of the packet and its length in *len. */
static uint8_t *
mkip(uint8_t *buf, size_t seglen, uint8_t proto, const char *src,
    const char *dst, size_t *len)
{
	struct ipaddr s = check_addr(src), d = check_addr(dst);
	size_t hl;

	hl = pkt_ip_build(buf + HEADROOM, seglen, proto, &s, &d, 0);
	ck_assert_uint_ne(hl, 0);
	*len = hl + seglen;
	return buf + HEADROOM - hl;
}

/* Recompute the IPv4 header checksum after a test edited the header. */
static void
fix_ip4(uint8_t *p)
{
	size_t hl = (size_t)(p[0] & 0x0f) * 4;

	wr16(p + 10, 0);
	wr16(p + 10, ref_csum1(p, hl));
}

static const uint8_t SYN_OPTS[] = {
	0x02, 0x04, 0x05, 0xb4,         /* MSS 1460 */
	0x04, 0x02,                     /* SACK permitted */
	0x08, 0x0a, 0, 0, 0, 1, 0, 0, 0, 0,     /* timestamps */
	0x01,                           /* NOP */
	0x03, 0x03, 0x07,               /* window scale 7 */
};

/* A v4 TCP packet 10.77.0.1 -> 10.77.0.2 with a valid checksum. */
static uint8_t *
mktcp4(uint8_t *buf, uint8_t flags, const uint8_t *opts, size_t optlen,
    size_t datalen, size_t *len)
{
	struct ipaddr s = check_addr("10.77.0.1"), d = check_addr("10.77.0.2");
	size_t n = mktcp(buf + HEADROOM, flags, opts, optlen, datalen);

	set_l4_csum(&s, &d, IPPROTO_TCP, buf + HEADROOM, n);
	return mkip(buf, n, IPPROTO_TCP, "10.77.0.1", "10.77.0.2", len);
}

static uint8_t *
mktcp6(uint8_t *buf, uint8_t flags, const uint8_t *opts, size_t optlen,
    size_t datalen, size_t *len)
{
	struct ipaddr s = check_addr("fd77::1"), d = check_addr("fd77::2");
	size_t n = mktcp(buf + HEADROOM, flags, opts, optlen, datalen);

	set_l4_csum(&s, &d, IPPROTO_TCP, buf + HEADROOM, n);
	return mkip(buf, n, IPPROTO_TCP, "fd77::1", "fd77::2", len);
}

/* --- error names ------------------------------------------------------------ */

START_TEST(err_names)
{
	ck_assert_str_eq(pkt_err_name(PKT_OK), "ok");
	ck_assert_str_eq(pkt_err_name(PKT_ERR_TRUNCATED), "truncated");
	ck_assert_str_eq(pkt_err_name(PKT_ERR_VERSION), "bad_version");
	ck_assert_str_eq(pkt_err_name(PKT_ERR_HLEN), "bad_header_length");
	ck_assert_str_eq(pkt_err_name(PKT_ERR_LENGTH), "bad_length");
	ck_assert_str_eq(pkt_err_name(PKT_ERR_L4), "bad_transport");
	ck_assert_str_eq(pkt_err_name(PKT_ERR_PROTO), "bad_protocol");
	ck_assert_str_eq(pkt_err_name(PKT_ERR__MAX), "unknown");
	ck_assert_str_eq(pkt_err_name((enum pkt_err)-1), "unknown");
}
END_TEST

/* --- parsing ----------------------------------------------------------------- */

START_TEST(parse_v4)
{
	uint8_t buf[BUFSZ];
	struct pkt_info pi;
	struct ipaddr s = check_addr("10.77.0.1"), d = check_addr("10.77.0.2");
	uint8_t *p;
	size_t len;

	p = mktcp4(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 10, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_int_eq(pi.family, AF_INET);
	ck_assert_uint_eq(pi.proto, IPPROTO_TCP);
	ck_assert_uint_eq(pi.ecn, 0);
	ck_assert(!pi.fragment);
	ck_assert(!pi.options);
	ck_assert_uint_eq(pi.ip_hlen, 20);
	ck_assert_uint_eq(pi.len, 20 + 40 + 10);
	ck_assert(util_addr_equal(&pi.src, &s));
	ck_assert(util_addr_equal(&pi.dst, &d));

	/* ECN bits only, DSCP ignored. */
	p[1] = 0xb8 | 0x03;
	fix_ip4(p);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pi.ecn, 3);

	/* Trailing bytes beyond the total length are allowed. */
	ck_assert_int_eq(pkt_parse(p, len + 7, &pi), PKT_OK);
	ck_assert_uint_eq(pi.len, len);

	/* No alignment is assumed. */
	memmove(buf + 1, p, len);
	ck_assert_int_eq(pkt_parse(buf + 1, len, &pi), PKT_OK);
	ck_assert_uint_eq(pi.len, len);
}
END_TEST

START_TEST(parse_v4_reject)
{
	uint8_t buf[BUFSZ], save[BUFSZ];
	struct pkt_info pi;
	uint8_t *p;
	size_t len;

	p = mktcp4(buf, 0x02, NULL, 0, 0, &len);
	memcpy(save, p, len);

	ck_assert_int_eq(pkt_parse(p, 0, &pi), PKT_ERR_TRUNCATED);
	ck_assert_int_eq(pkt_parse(p, 1, &pi), PKT_ERR_TRUNCATED);
	ck_assert_int_eq(pkt_parse(p, 19, &pi), PKT_ERR_TRUNCATED);
	/* Total length 40 beyond a 39-byte buffer. */
	ck_assert_int_eq(pkt_parse(p, len - 1, &pi), PKT_ERR_TRUNCATED);

	p[0] = 0x55;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_VERSION);
	p[0] = 0x05;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_VERSION);
	p[0] = 0xf5;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_VERSION);

	/* IHL < 5 */
	p[0] = 0x44;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_HLEN);
	p[0] = 0x40;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_HLEN);
	/* IHL beyond the buffer: 60 bytes of header in 40. */
	p[0] = 0x4f;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_HLEN);
	p[0] = 0x45;

	/* Total length below the header length. */
	wr16(p + 2, 19);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_LENGTH);
	wr16(p + 2, 0);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_LENGTH);
	p[0] = 0x46;
	wr16(p + 2, 22);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_LENGTH);
	p[0] = 0x45;
	/* Total length beyond the buffer. */
	wr16(p + 2, (uint16_t)(len + 1));
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_TRUNCATED);
	wr16(p + 2, 0xffff);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_TRUNCATED);

	/* Transport: empty TCP, short TCP, bad data offsets. */
	memcpy(p, save, len);
	wr16(p + 2, 20);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_TRUNCATED);
	wr16(p + 2, 39);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	wr16(p + 2, 40);
	p[20 + 12] = 0x40;              /* doff 4 */
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	p[20 + 12] = 0x00;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	p[20 + 12] = 0x60;              /* doff 6: 24 bytes in 20 */
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	p[20 + 12] = 0xf0;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	p[20 + 12] = 0x50;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
}
END_TEST

START_TEST(parse_v4_udp_icmp)
{
	uint8_t buf[BUFSZ];
	struct pkt_info pi;
	uint8_t *p;
	size_t len, n;

	n = mkudp(buf + HEADROOM, 12);
	p = mkip(buf, n, IPPROTO_UDP, "10.77.0.1", "10.77.0.2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pi.proto, IPPROTO_UDP);
	/* UDP length must equal the segment, both ways. */
	wr16(p + 20 + 4, 19);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	wr16(p + 20 + 4, 21);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	wr16(p + 20 + 4, 0);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	/* Shorter than a UDP header. */
	wr16(p + 2, 27);
	fix_ip4(p);
	wr16(p + 20 + 4, 7);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);

	n = mkicmp(buf + HEADROOM, 8, 0, 4);
	p = mkip(buf, n, IPPROTO_ICMP, "10.77.0.1", "10.77.0.2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pi.proto, IPPROTO_ICMP);
	wr16(p + 2, 28);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	wr16(p + 2, 27);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	wr16(p + 2, 20);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_TRUNCATED);

	/* Other protocols are opaque, even empty ones inside IP. */
	p[9] = 47;
	wr16(p + 2, 21);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pi.proto, 47);
	wr16(p + 2, 20);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
}
END_TEST

START_TEST(parse_v4_fragment_options)
{
	uint8_t buf[BUFSZ], opt[BUFSZ];
	struct pkt_info pi;
	uint8_t *p;
	size_t len;

	/* A fragment's transport is not checked: here 5 bytes of TCP. */
	p = mktcp4(buf, 0x02, NULL, 0, 0, &len);
	wr16(p + 2, 25);
	wr16(p + 6, 0x2000);            /* MF */
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pi.fragment);
	wr16(p + 6, 0x0001);            /* offset 8 */
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pi.fragment);
	wr16(p + 6, 0x1fff);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pi.fragment);
	wr16(p + 6, 0x4000);            /* DF alone is not a fragment */
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	ck_assert(!pi.fragment);
	wr16(p + 6, 0x8000);            /* reserved bit: not a fragment */
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);

	/* Options: IHL 6, the TCP header at offset 24. */
	p = mktcp4(buf, 0x02, NULL, 0, 0, &len);
	opt[0] = 0x46;
	memcpy(opt + 1, p + 1, 19);
	memcpy(opt + 20, "\x01\x01\x01\x00", 4);        /* NOP NOP NOP EOL */
	memcpy(opt + 24, p + 20, len - 20);
	wr16(opt + 2, (uint16_t)(len + 4));
	fix_ip4(opt);
	ck_assert_int_eq(pkt_parse(opt, len + 4, &pi), PKT_OK);
	ck_assert(pi.options);
	ck_assert(!pi.fragment);
	ck_assert_uint_eq(pi.ip_hlen, 24);
	ck_assert_uint_eq(pi.len, len + 4);
	/* The transport check starts after the options. */
	opt[24 + 12] = 0x40;
	ck_assert_int_eq(pkt_parse(opt, len + 4, &pi), PKT_ERR_L4);
}
END_TEST

START_TEST(parse_v6)
{
	uint8_t buf[BUFSZ];
	struct pkt_info pi;
	struct ipaddr s = check_addr("fd77::1"), d = check_addr("fd77::2");
	uint8_t *p;
	size_t len;

	p = mktcp6(buf, 0x12, SYN_OPTS, sizeof(SYN_OPTS), 3, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_int_eq(pi.family, AF_INET6);
	ck_assert_uint_eq(pi.proto, IPPROTO_TCP);
	ck_assert_uint_eq(pi.ip_hlen, 40);
	ck_assert_uint_eq(pi.len, 40 + 40 + 3);
	ck_assert(!pi.fragment);
	ck_assert(!pi.options);
	ck_assert(util_addr_equal(&pi.src, &s));
	ck_assert(util_addr_equal(&pi.dst, &d));

	/* Traffic class 0xb9: DSCP 46, ECN ECT(1). */
	p[0] = 0x6b;
	p[1] = 0x90 | 0x0a;             /* low nibble is flow label */
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pi.ecn, 1);

	ck_assert_int_eq(pkt_parse(p, len + 100, &pi), PKT_OK);
	ck_assert_uint_eq(pi.len, len);

	memmove(buf + 3, p, len);
	ck_assert_int_eq(pkt_parse(buf + 3, len, &pi), PKT_OK);
}
END_TEST

START_TEST(parse_v6_reject)
{
	uint8_t buf[BUFSZ];
	struct pkt_info pi;
	uint8_t *p;
	size_t len, n;

	p = mktcp6(buf, 0x02, NULL, 0, 0, &len);
	ck_assert_int_eq(pkt_parse(p, 39, &pi), PKT_ERR_TRUNCATED);
	ck_assert_int_eq(pkt_parse(p, 40, &pi), PKT_ERR_TRUNCATED);
	ck_assert_int_eq(pkt_parse(p, len - 1, &pi), PKT_ERR_TRUNCATED);
	wr16(p + 4, 0xffff);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_TRUNCATED);
	wr16(p + 4, 20);

	p[0] = 0x70;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_VERSION);
	p[0] = 0x20;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_VERSION);
	p[0] = 0x60;

	/* Empty and short TCP, bad offsets. */
	wr16(p + 4, 0);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_TRUNCATED);
	wr16(p + 4, 19);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	wr16(p + 4, 20);
	p[40 + 12] = 0x10;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
	p[40 + 12] = 0x60;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);

	n = mkudp(buf + HEADROOM, 5);
	p = mkip(buf, n, IPPROTO_UDP, "fd77::1", "fd77::2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	wr16(p + 40 + 4, 12);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);

	n = mkicmp(buf + HEADROOM, 128, 0, 0);
	p = mkip(buf, n, IPPROTO_ICMPV6, "fd77::1", "fd77::2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pi.proto, IPPROTO_ICMPV6);
	wr16(p + 4, 7);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_ERR_L4);
}
END_TEST

START_TEST(parse_v6_ext)
{
	static const uint8_t ext[] = { 0, 43, 44, 60, 135, 139, 140 };
	static const uint8_t notext[] = { 6, 17, 50, 51, 58, 59, 132 };
	uint8_t buf[BUFSZ];
	struct pkt_info pi;
	uint8_t *p;
	size_t len, i;

	/* 16 opaque payload bytes (not checked as TCP when behind a header). */
	p = mktcp6(buf, 0x02, NULL, 0, 0, &len);
	for (i = 0; i < ARRAY_SIZE(ext); i++) {
		p[6] = ext[i];
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		ck_assert(pi.options);
		ck_assert_uint_eq(pi.proto, ext[i]);
		ck_assert_uint_eq(pi.ip_hlen, 40);
		ck_assert(pi.fragment == (ext[i] == 44));
	}
	for (i = 0; i < ARRAY_SIZE(notext); i++) {
		p[6] = notext[i];
		wr16(p + 4, 20);
		if (notext[i] == IPPROTO_UDP)
			wr16(p + 40 + 4, 20);
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		ck_assert(!pi.options);
		ck_assert(!pi.fragment);
	}
	/* Behind an extension header a truncated TCP header is not seen. */
	p[6] = 0;
	wr16(p + 4, 3);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
}
END_TEST

START_TEST(l4_check)
{
	static const uint8_t ext[] = { 0, 43, 44, 60, 135, 139, 140 };
	uint8_t seg[64];
	size_t i;

	memset(seg, 0, sizeof(seg));
	ck_assert_int_eq(pkt_l4_check(IPPROTO_TCP, seg, 0), PKT_ERR_TRUNCATED);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_UDP, seg, 0), PKT_ERR_TRUNCATED);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_ICMP, seg, 0), PKT_ERR_TRUNCATED);
	ck_assert_int_eq(pkt_l4_check(132, seg, 0), PKT_ERR_TRUNCATED);

	mktcp(seg, 0x02, NULL, 0, 0);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_TCP, seg, 20), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_TCP, seg, 64), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_TCP, seg, 19), PKT_ERR_L4);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_TCP, seg, 1), PKT_ERR_L4);
	seg[12] = 0xf0;
	ck_assert_int_eq(pkt_l4_check(IPPROTO_TCP, seg, 60), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_TCP, seg, 59), PKT_ERR_L4);
	seg[12] = 0x40;
	ck_assert_int_eq(pkt_l4_check(IPPROTO_TCP, seg, 64), PKT_ERR_L4);

	mkudp(seg, 0);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_UDP, seg, 8), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_UDP, seg, 9), PKT_ERR_L4);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_UDP, seg, 7), PKT_ERR_L4);
	wr16(seg + 4, 30);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_UDP, seg, 30), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_UDP, seg, 31), PKT_ERR_L4);

	ck_assert_int_eq(pkt_l4_check(IPPROTO_ICMP, seg, 8), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_ICMP, seg, 7), PKT_ERR_L4);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_ICMPV6, seg, 8), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(IPPROTO_ICMPV6, seg, 7), PKT_ERR_L4);

	/* Opaque protocols: any nonempty segment. */
	ck_assert_int_eq(pkt_l4_check(132, seg, 1), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(50, seg, 3), PKT_OK);
	ck_assert_int_eq(pkt_l4_check(59, seg, 1), PKT_OK);
	/* IPv6 extension header numbers cannot be a compact protocol. */
	for (i = 0; i < ARRAY_SIZE(ext); i++)
		ck_assert_int_eq(pkt_l4_check(ext[i], seg, 40), PKT_ERR_PROTO);
}
END_TEST

/* --- compact decision -------------------------------------------------------- */

START_TEST(compact_decision)
{
	uint8_t buf[BUFSZ];
	struct pkt_info pi;
	struct ipaddr l4 = check_addr("10.77.0.1"), p4 = check_addr("10.77.0.2");
	struct ipaddr l6 = check_addr("fd77::1"), p6 = check_addr("fd77::2");
	struct ipaddr other = check_addr("10.77.0.3");
	uint8_t *p;
	size_t len, n;

	p = mktcp4(buf, 0x02, NULL, 0, 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &l4, &p4));
	ck_assert(!pkt_compact_ok(&pi, &p4, &l4));      /* wrong direction */
	ck_assert(!pkt_compact_ok(&pi, &other, &p4));   /* routed source */
	ck_assert(!pkt_compact_ok(&pi, &l4, &other));   /* other destination */
	ck_assert(!pkt_compact_ok(&pi, &l6, &p6));      /* family */
	ck_assert(!pkt_compact_ok(&pi, &l4, &p6));
	pi.fragment = true;
	ck_assert(!pkt_compact_ok(&pi, &l4, &p4));
	pi.fragment = false;
	pi.options = true;
	ck_assert(!pkt_compact_ok(&pi, &l4, &p4));
	pi.options = false;
	pi.len = pi.ip_hlen;                            /* nothing to carry */
	ck_assert(!pkt_compact_ok(&pi, &l4, &p4));

	/* A real IPv4 fragment and a real option header. */
	p = mktcp4(buf, 0x02, NULL, 0, 0, &len);
	wr16(p + 6, 0x2000);
	fix_ip4(p);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_compact_ok(&pi, &l4, &p4));

	p = mktcp6(buf, 0x02, NULL, 0, 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &l6, &p6));
	ck_assert(!pkt_compact_ok(&pi, &p6, &l6));
	ck_assert(!pkt_compact_ok(&pi, &l4, &p4));
	p[6] = 0;                                       /* hop-by-hop */
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_compact_ok(&pi, &l6, &p6));
	p[6] = 44;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_compact_ok(&pi, &l6, &p6));

	/* UDP, ICMP over IPv4 and ICMPv6 over IPv6 go compact too. */
	n = mkudp(buf + HEADROOM, 3);
	p = mkip(buf, n, IPPROTO_UDP, "fd77::1", "fd77::2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &l6, &p6));
	p = mkip(buf, n, IPPROTO_UDP, "10.77.0.1", "10.77.0.2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &l4, &p4));
	n = mkicmp(buf + HEADROOM, 8, 0, 4);
	p = mkip(buf, n, IPPROTO_ICMP, "10.77.0.1", "10.77.0.2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &l4, &p4));
	p = mkip(buf, n, IPPROTO_ICMPV6, "fd77::1", "fd77::2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &l6, &p6));

	/* The receiver could not tell the family of these: sent whole. */
	p = mkip(buf, n, IPPROTO_ICMPV6, "10.77.0.1", "10.77.0.2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_compact_ok(&pi, &l4, &p4));
	p = mkip(buf, n, IPPROTO_ICMP, "fd77::1", "fd77::2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_compact_ok(&pi, &l6, &p6));
	p = mkip(buf, n, 132, "10.77.0.1", "10.77.0.2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_compact_ok(&pi, &l4, &p4));
	p = mkip(buf, n, 50, "fd77::1", "fd77::2", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_compact_ok(&pi, &l6, &p6));
}
END_TEST

/* --- rebuild ----------------------------------------------------------------- */

START_TEST(build_v4)
{
	uint8_t buf[BUFSZ];
	struct ipaddr s = check_addr("10.77.0.2"), d = check_addr("10.77.0.1");
	struct ipaddr s6 = check_addr("fd77::2");
	struct pkt_info pi;
	uint8_t *seg = buf + HEADROOM, *h;
	size_t n;

	n = mktcp(seg, 0x12, SYN_OPTS, sizeof(SYN_OPTS), 100);
	ck_assert_uint_eq(pkt_ip_build(seg, n, IPPROTO_TCP, &s, &d, 0x02), 20);
	h = seg - 20;
	ck_assert_uint_eq(h[0], 0x45);
	ck_assert_uint_eq(h[1], 0x02);
	ck_assert_uint_eq(rd16(h + 2), n + 20);
	ck_assert_uint_eq(rd16(h + 4), 0);
	ck_assert_uint_eq(rd16(h + 6), 0x4000);
	ck_assert_uint_eq(h[8], 64);
	ck_assert_uint_eq(h[9], IPPROTO_TCP);
	ck_assert_uint_eq(ref_csum1(h, 20), 0);
	ck_assert_mem_eq(h + 12, s.b, 4);
	ck_assert_mem_eq(h + 16, d.b, 4);

	ck_assert_int_eq(pkt_parse(h, n + 20, &pi), PKT_OK);
	ck_assert_uint_eq(pi.ecn, 2);
	ck_assert_uint_eq(pi.len, n + 20);
	ck_assert(util_addr_equal(&pi.src, &s));
	ck_assert(util_addr_equal(&pi.dst, &d));
	ck_assert(!pi.fragment && !pi.options);
	ck_assert(pkt_compact_ok(&pi, &s, &d));

	/* Only the two ECN bits are written. */
	pkt_ip_build(seg, n, IPPROTO_TCP, &s, &d, 0xff);
	ck_assert_uint_eq(h[1], 0x03);
	ck_assert_uint_eq(ref_csum1(h, 20), 0);

	/* Limits and families. */
	ck_assert_uint_eq(pkt_ip_build(seg, 65535 - 20, IPPROTO_TCP, &s, &d, 0), 20);
	ck_assert_uint_eq(rd16(h + 2), 65535);
	ck_assert_uint_eq(pkt_ip_build(seg, 65535 - 19, IPPROTO_TCP, &s, &d, 0), 0);
	ck_assert_uint_eq(pkt_ip_build(seg, n, IPPROTO_TCP, &s, &s6, 0), 0);
	ck_assert_uint_eq(pkt_ip_build(seg, n, IPPROTO_TCP, &s6, &d, 0), 0);
}
END_TEST

START_TEST(build_v6)
{
	uint8_t buf[BUFSZ];
	struct ipaddr s = check_addr("fd77::2"), d = check_addr("fd77::1");
	struct ipaddr d4 = check_addr("10.77.0.1");
	struct ipaddr zero;
	struct pkt_info pi;
	uint8_t *seg = buf + HEADROOM, *h;
	size_t n;

	n = mkudp(seg, 33);
	ck_assert_uint_eq(pkt_ip_build(seg, n, IPPROTO_UDP, &s, &d, 0x01), 40);
	h = seg - 40;
	ck_assert_uint_eq(h[0], 0x60);
	ck_assert_uint_eq(h[1], 0x10);
	ck_assert_uint_eq(h[2], 0);
	ck_assert_uint_eq(h[3], 0);
	ck_assert_uint_eq(rd16(h + 4), n);
	ck_assert_uint_eq(h[6], IPPROTO_UDP);
	ck_assert_uint_eq(h[7], 64);
	ck_assert_mem_eq(h + 8, s.b, 16);
	ck_assert_mem_eq(h + 24, d.b, 16);

	ck_assert_int_eq(pkt_parse(h, n + 40, &pi), PKT_OK);
	ck_assert_uint_eq(pi.ecn, 1);
	ck_assert_uint_eq(pi.proto, IPPROTO_UDP);
	ck_assert(pkt_compact_ok(&pi, &s, &d));

	pkt_ip_build(seg, n, IPPROTO_UDP, &s, &d, 0x07);
	ck_assert_uint_eq(h[0], 0x60);
	ck_assert_uint_eq(h[1], 0x30);

	ck_assert_uint_eq(pkt_ip_build(seg, 65535 - 40, IPPROTO_UDP, &s, &d, 0), 40);
	ck_assert_uint_eq(pkt_ip_build(seg, 65535 - 39, IPPROTO_UDP, &s, &d, 0), 0);
	ck_assert_uint_eq(pkt_ip_build(seg, n, IPPROTO_UDP, &s, &d4, 0), 0);
	memset(&zero, 0, sizeof(zero));
	ck_assert_uint_eq(pkt_ip_build(seg, n, IPPROTO_UDP, &zero, &zero, 0), 0);
}
END_TEST

/* Parse -> compact -> rebuild at the far end gives back the same packet
 * when the original used the rebuild's fixed fields. */
START_TEST(build_roundtrip)
{
	uint8_t buf[BUFSZ], out[BUFSZ], orig[BUFSZ];
	struct ipaddr l4 = check_addr("10.77.0.1"), p4 = check_addr("10.77.0.2");
	struct ipaddr l6 = check_addr("fd77::1"), p6 = check_addr("fd77::2");
	struct pkt_info pi;
	uint8_t *p;
	size_t len, seglen, hl;

	p = mktcp4(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 50, &len);
	memcpy(orig, p, len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &l4, &p4));
	seglen = pi.len - pi.ip_hlen;
	memcpy(out + HEADROOM, p + pi.ip_hlen, seglen);
	hl = pkt_ip_build(out + HEADROOM, seglen, pi.proto, &pi.src, &pi.dst, pi.ecn);
	ck_assert_uint_eq(hl, 20);
	ck_assert_mem_eq(out + HEADROOM - hl, orig, len);
	ck_assert_uint_eq(pkt_l4_csum(AF_INET, &l4, &p4, IPPROTO_TCP,
	    out + HEADROOM, seglen), 0);

	p = mktcp6(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 50, &len);
	memcpy(orig, p, len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &l6, &p6));
	seglen = pi.len - pi.ip_hlen;
	memcpy(out + HEADROOM, p + pi.ip_hlen, seglen);
	hl = pkt_ip_build(out + HEADROOM, seglen, pi.proto, &pi.src, &pi.dst, pi.ecn);
	ck_assert_uint_eq(hl, 40);
	ck_assert_mem_eq(out + HEADROOM - hl, orig, len);
}
END_TEST

/* --- checksums --------------------------------------------------------------- */

START_TEST(csum_basics)
{
	/* RFC 1071 3: the sum of these words is 0xddf2. */
	static const uint8_t rfc[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t data[1501];
	uint16_t c;
	uint32_t s, state = 0x1234567;
	size_t i, len, cut;

	ck_assert_uint_eq(pkt_csum_fold(pkt_csum_partial(rfc, sizeof(rfc), 0)),
	    htons(0x220d));
	c = pkt_csum(rfc, sizeof(rfc));
	ck_assert_mem_eq(&c, "\x22\x0d", 2);
	ck_assert_uint_eq(pkt_csum_fold(0x0001ddf1), htons(0x220d));

	/* Odd trailing byte is the high half of a word. */
	c = pkt_csum("\x12", 1);
	ck_assert_mem_eq(&c, "\xed\xff", 2);
	/* All zero data: the checksum is 0xffff; no data: also 0xffff. */
	memset(data, 0, sizeof(data));
	ck_assert_uint_eq(pkt_csum(data, 20), 0xffff);
	ck_assert_uint_eq(pkt_csum(data, 0), 0xffff);
	/* A sum of 0xffff gives 0x0000, never 0xffff. */
	ck_assert_uint_eq(pkt_csum("\xff\xff", 2), 0);
	ck_assert_uint_eq(pkt_csum("\xff\x00\x00\xff", 4), 0);
	ck_assert_uint_eq(pkt_csum_fold(0), 0xffff);
	ck_assert_uint_eq(pkt_csum_fold(0xffff), 0);
	ck_assert_uint_eq(pkt_csum_fold(0xffffffff), 0);

	/* Random data against the reference, whole and in two parts. */
	for (i = 0; i < 2000; i++) {
		len = rnd(&state) % sizeof(data);
		for (cut = 0; cut < len; cut++)
			data[cut] = (uint8_t)rnd(&state);
		if (i % 3 == 0)
			memset(data, 0xff, len);
		c = pkt_csum(data, len);
		ck_assert_uint_eq(ntohs(c), ref_csum1(data, len));
		cut = len ? (rnd(&state) % len) & ~(size_t)1 : 0;
		s = pkt_csum_partial(data, cut, 0);
		s = pkt_csum_partial(data + cut, len - cut, s);
		ck_assert_uint_eq(pkt_csum_fold(s), c);
		/* A stored checksum makes the sum verify to 0. */
		if (len >= 2 && len % 2 == 0) {
			data[0] = 0;
			data[1] = 0;
			c = pkt_csum(data, len);
			memcpy(data, &c, 2);
			ck_assert_uint_eq(pkt_csum(data, len), 0);
		}
	}

	/* Every short length at every alignment, after a partial sum that
	 * already carries (words are read several bytes at a time). */
	for (len = 0; len <= 70; len++)
		for (i = 0; i < 8; i++) {
			const uint8_t *parts[2] = { data, data + 8 + i };
			size_t lens[2] = { 6, len };

			for (cut = 0; cut < 8 + i + len; cut++)
				data[cut] = (uint8_t)rnd(&state);
			s = pkt_csum_partial(data, 6, 0);
			s = pkt_csum_partial(data + 8 + i, len, s);
			ck_assert_uint_eq(ntohs(pkt_csum_fold(s)), ref_csum(parts, lens, 2));
		}

	/* Large inputs do not overflow the accumulator. */
	{
		static uint8_t big[300000];

		memset(big, 0xff, sizeof(big));
		big[sizeof(big) - 1] = 0xfe;
		ck_assert_uint_eq(ntohs(pkt_csum(big, sizeof(big))),
		    ref_csum1(big, sizeof(big)));
	}
}
END_TEST

/* One random packet: word 0 is a fixed nonzero word (like a pseudo-header's
 * protocol, so the data can never be all zero), word 1 the checksum. */
static void
update_one(uint8_t *pk, size_t words, size_t w, uint16_t nv)
{
	uint16_t c, old;
	uint8_t csum[2];

	wr16(pk + 2, 0);
	wr16(pk + 2, ref_csum1(pk, words * 2));
	ck_assert_uint_eq(ref_csum1(pk, words * 2), 0);

	old = rd16(pk + 2 * w);
	memcpy(csum, pk + 2, 2);
	wr16(pk + 2 * w, nv);
	pkt_csum_update16(csum, htons(old), htons(nv));
	c = rd16(csum);
	wr16(pk + 2, 0);
	ck_assert_uint_eq(c, ref_csum1(pk, words * 2));
	wr16(pk + 2, c);
	ck_assert_uint_eq(ref_csum1(pk, words * 2), 0);
}

START_TEST(csum_update)
{
	uint8_t pk[256];
	uint32_t state = 0xdeadbeef, sum;
	size_t i, j, words, w;
	uint16_t nv, c;
	uint8_t cb[2];

	for (i = 0; i < 20000; i++) {
		words = 3 + rnd(&state) % 120;
		wr16(pk, 0x0006);
		for (j = 2; j < words * 2; j++)
			pk[j] = (uint8_t)rnd(&state);
		/* Mostly-0xff and mostly-zero packets hit the fold corners. */
		if (i % 7 == 1)
			memset(pk + 4, 0xff, words * 2 - 4);
		if (i % 7 == 2)
			memset(pk + 4, 0, words * 2 - 4);
		w = 2 + rnd(&state) % (words - 2);
		switch (i % 5) {
		case 0:
			nv = 0x0000;
			break;
		case 1:
			nv = 0xffff;
			break;
		case 2:
			/* Choose the new word so the new checksum is 0x0000. */
			wr16(pk + 2, 0);
			wr16(pk + 2 * w, 0);
			sum = 0;
			for (j = 0; j < words; j++)
				sum += rd16(pk + 2 * j);
			while (sum >> 16)
				sum = (sum & 0xffff) + (sum >> 16);
			nv = (uint16_t)(0xffff - sum);
			break;
		default:
			nv = (uint16_t)rnd(&state);
			break;
		}
		update_one(pk, words, w, nv);
	}

	/* Hand-picked corners: HC 0x0000 (sum 0xffff) with m = 0xffff. */
	wr16(pk, 0x0006);
	wr16(pk + 4, 0xfff9);
	update_one(pk, 3, 2, 0xfffe);
	wr16(pk + 4, 0xfff9);
	update_one(pk, 3, 2, 0x0000);
	wr16(pk + 4, 0x0000);
	update_one(pk, 3, 2, 0xfff9);   /* to checksum 0x0000 */
	wr16(pk + 4, 0x1234);
	update_one(pk, 3, 2, 0x1234);   /* no change */

	/* Identity edits keep any checksum, including 0x0000 and 0xffff. */
	wr16(cb, 0x0000);
	pkt_csum_update16(cb, htons(0xabcd), htons(0xabcd));
	c = rd16(cb);
	ck_assert(c == 0x0000 || c == 0xffff);
	wr16(cb, 0x1234);
	pkt_csum_update16(cb, htons(0x0000), htons(0xffff));
	ck_assert_uint_eq(rd16(cb), 0x1234);   /* 0 and 0xffff are both zero */
}
END_TEST

START_TEST(l4_csum)
{
	uint8_t buf[BUFSZ];
	struct ipaddr s4 = check_addr("10.77.0.1"), d4 = check_addr("10.77.0.2");
	struct ipaddr s6 = check_addr("fd77::1"), d6 = check_addr("fd77::2");
	uint8_t *seg = buf + HEADROOM;
	uint32_t state = 99;
	size_t n, i;
	uint16_t c;

	for (i = 0; i < 500; i++) {
		n = mktcp(seg, 0x18, NULL, 0, rnd(&state) % 1400);
		seg[4] = (uint8_t)rnd(&state);
		c = pkt_l4_csum(AF_INET, &s4, &d4, IPPROTO_TCP, seg, n);
		ck_assert_uint_eq(ntohs(c), ref_l4_csum(&s4, &d4, IPPROTO_TCP, seg, n));
		memcpy(seg + 16, &c, 2);
		ck_assert_uint_eq(pkt_l4_csum(AF_INET, &s4, &d4, IPPROTO_TCP, seg, n), 0);
		/* Wrong addresses, protocol or length do not verify. */
		ck_assert_uint_ne(pkt_l4_csum(AF_INET, &d4, &d4, IPPROTO_TCP, seg, n), 0);
		ck_assert_uint_ne(pkt_l4_csum(AF_INET, &s4, &d4, IPPROTO_UDP, seg, n), 0);

		n = mkudp(seg, rnd(&state) % 1400);
		c = pkt_l4_csum(AF_INET6, &s6, &d6, IPPROTO_UDP, seg, n);
		ck_assert_uint_eq(ntohs(c), ref_l4_csum(&s6, &d6, IPPROTO_UDP, seg, n));
		memcpy(seg + 6, &c, 2);
		ck_assert_uint_eq(pkt_l4_csum(AF_INET6, &s6, &d6, IPPROTO_UDP, seg, n), 0);
		ck_assert_uint_ne(pkt_l4_csum(AF_INET6, &s6, &s6, IPPROTO_UDP, seg, n), 0);
	}
}
END_TEST

START_TEST(compact_family)
{
	uint8_t buf[BUFSZ];
	struct ipaddr s4 = check_addr("10.77.0.2"), d4 = check_addr("10.77.0.1");
	struct ipaddr s6 = check_addr("fd77::2"), d6 = check_addr("fd77::1");
	uint8_t *seg = buf + HEADROOM;
	uint32_t state = 7;
	size_t n, i;
	uint16_t c;

	for (i = 0; i < 300; i++) {
		/* TCP checksummed over the IPv4 pair, then over the IPv6 pair */
		n = mktcp(seg, 0x18, NULL, 0, rnd(&state) % 1400);
		seg[4] = (uint8_t)rnd(&state);
		memset(seg + 16, 0, 2);
		c = pkt_l4_csum(AF_INET, &s4, &d4, IPPROTO_TCP, seg, n);
		memcpy(seg + 16, &c, 2);
		ck_assert_int_eq(pkt_compact_family(IPPROTO_TCP, seg, n, &s4, &d4, &s6, &d6), AF_INET);
		memset(seg + 16, 0, 2);
		c = pkt_l4_csum(AF_INET6, &s6, &d6, IPPROTO_TCP, seg, n);
		memcpy(seg + 16, &c, 2);
		ck_assert_int_eq(pkt_compact_family(IPPROTO_TCP, seg, n, &s4, &d4, &s6, &d6), AF_INET6);
		/* corrupted: neither pair verifies */
		seg[n - 1] ^= 0x5a;
		ck_assert_int_eq(pkt_compact_family(IPPROTO_TCP, seg, n, &s4, &d4, &s6, &d6), 0);
		/* one family only: no checksum needed to decide */
		ck_assert_int_eq(pkt_compact_family(IPPROTO_TCP, seg, n, NULL, NULL, &s6, &d6), AF_INET6);
		ck_assert_int_eq(pkt_compact_family(IPPROTO_TCP, seg, n, &s4, &d4, NULL, NULL), AF_INET);
	}
	/* UDP without a checksum is IPv4; ICMP and ICMPv6 tell by themselves */
	n = mkudp(seg, 100);
	memset(seg + 6, 0, 2);
	ck_assert_int_eq(pkt_compact_family(IPPROTO_UDP, seg, n, &s4, &d4, &s6, &d6), AF_INET);
	ck_assert_int_eq(pkt_compact_family(IPPROTO_ICMP, seg, n, &s4, &d4, &s6, &d6), AF_INET);
	ck_assert_int_eq(pkt_compact_family(IPPROTO_ICMPV6, seg, n, &s4, &d4, &s6, &d6), AF_INET6);
	ck_assert_int_eq(pkt_compact_family(IPPROTO_ICMPV6, seg, n, &s4, &d4, NULL, NULL), 0);
	/* another protocol with both families: cannot be told */
	ck_assert_int_eq(pkt_compact_family(132, seg, n, &s4, &d4, &s6, &d6), 0);
	ck_assert_int_eq(pkt_compact_family(IPPROTO_TCP, seg, n, NULL, NULL, NULL, NULL), 0);
}
END_TEST

/* --- MSS clamp ---------------------------------------------------------------- */

static bool
tcp_ok4(const uint8_t *p, size_t len)
{
	struct ipaddr s = check_addr("10.77.0.1"), d = check_addr("10.77.0.2");

	return pkt_l4_csum(AF_INET, &s, &d, IPPROTO_TCP, p + 20, len - 20) == 0;
}

static bool
tcp_ok6(const uint8_t *p, size_t len)
{
	struct ipaddr s = check_addr("fd77::1"), d = check_addr("fd77::2");

	return pkt_l4_csum(AF_INET6, &s, &d, IPPROTO_TCP, p + 40, len - 40) == 0;
}

START_TEST(mss_clamp_v4)
{
	uint8_t buf[BUFSZ], save[BUFSZ];
	struct pkt_info pi;
	uint8_t *p;
	size_t len;

	/* SYN: 1460 -> 1360, checksum stays valid. */
	p = mktcp4(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	ck_assert(tcp_ok4(p, len));
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	memcpy(save, p, len);
	ck_assert(pkt_mss_clamp(p, &pi, 1360));
	ck_assert_uint_eq(rd16(p + 20 + 22), 1360);
	ck_assert(tcp_ok4(p, len));
	ck_assert_mem_eq(p, save, 20 + 16);             /* only MSS + checksum */
	ck_assert_mem_eq(p + 20 + 18, save + 20 + 18, 4);
	ck_assert_mem_eq(p + 20 + 24, save + 20 + 24, len - 44);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	/* Second pass: already small enough. */
	ck_assert(!pkt_mss_clamp(p, &pi, 1360));
	ck_assert(!pkt_mss_clamp(p, &pi, 1400));
	ck_assert_uint_eq(rd16(p + 20 + 22), 1360);

	/* SYN-ACK with data after the header. */
	p = mktcp4(buf, 0x12, SYN_OPTS, sizeof(SYN_OPTS), 33, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_mss_clamp(p, &pi, 536));
	ck_assert_uint_eq(rd16(p + 20 + 22), 536);
	ck_assert(tcp_ok4(p, len));

	/* Not a SYN: ACK, FIN, RST. */
	p = mktcp4(buf, 0x10, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_mss_clamp(p, &pi, 1000));
	ck_assert_uint_eq(rd16(p + 20 + 22), 1460);
	p = mktcp4(buf, 0x05, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_mss_clamp(p, &pi, 1000));

	/* No options at all / no MSS option. */
	p = mktcp4(buf, 0x02, NULL, 0, 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	memcpy(save, p, len);
	ck_assert(!pkt_mss_clamp(p, &pi, 1000));
	ck_assert_mem_eq(p, save, len);
	p = mktcp4(buf, 0x02, (const uint8_t *)"\x01\x03\x03\x07", 4, 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	memcpy(save, p, len);
	ck_assert(!pkt_mss_clamp(p, &pi, 1000));
	ck_assert_mem_eq(p, save, len);

	/* Smaller MSS left alone; equal too. */
	p = mktcp4(buf, 0x02, (const uint8_t *)"\x02\x04\x04\xb0", 4, 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_mss_clamp(p, &pi, 1360));
	ck_assert(!pkt_mss_clamp(p, &pi, 1200));
	ck_assert_uint_eq(rd16(p + 20 + 22), 1200);
	ck_assert(pkt_mss_clamp(p, &pi, 1199));
	ck_assert_uint_eq(rd16(p + 20 + 22), 1199);
	ck_assert(tcp_ok4(p, len));

	/* MSS at an odd offset (after one NOP): straddles checksum words. */
	p = mktcp4(buf, 0x02, (const uint8_t *)"\x01\x02\x04\xff\xff\x01\x01\x00", 8, 5, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_mss_clamp(p, &pi, 0x1234));
	ck_assert_uint_eq(rd16(p + 20 + 23), 0x1234);
	ck_assert(tcp_ok4(p, len));

	/* Two MSS options: both clamped. */
	p = mktcp4(buf, 0x02, (const uint8_t *)"\x02\x04\x05\xb4\x02\x04\x23\x28", 8, 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_mss_clamp(p, &pi, 1000));
	ck_assert_uint_eq(rd16(p + 20 + 22), 1000);
	ck_assert_uint_eq(rd16(p + 20 + 26), 1000);
	ck_assert(tcp_ok4(p, len));

	/* IPv4 options before TCP. */
	{
		uint8_t opt[BUFSZ];

		p = mktcp4(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
		opt[0] = 0x46;
		memcpy(opt + 1, p + 1, 19);
		memset(opt + 20, 1, 4);
		memcpy(opt + 24, p + 20, len - 20);
		wr16(opt + 2, (uint16_t)(len + 4));
		fix_ip4(opt);
		ck_assert_int_eq(pkt_parse(opt, len + 4, &pi), PKT_OK);
		ck_assert(pkt_mss_clamp(opt, &pi, 1300));
		ck_assert_uint_eq(rd16(opt + 24 + 22), 1300);
		memmove(opt + 20, opt + 24, len - 20);
		ck_assert(tcp_ok4(opt, len));
	}

	/* Not TCP, fragments, mss 0. */
	p = mktcp4(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_mss_clamp(p, &pi, 0));
	pi.fragment = true;
	ck_assert(!pkt_mss_clamp(p, &pi, 1000));
	pi.fragment = false;
	pi.proto = IPPROTO_UDP;
	ck_assert(!pkt_mss_clamp(p, &pi, 1000));
	ck_assert_uint_eq(rd16(p + 20 + 22), 1460);
}
END_TEST

START_TEST(mss_clamp_malformed)
{
	static const struct {
		const char *opts;
		size_t len;
	} bad[] = {
		{ "\x03\x00\x02\x04\x05\xb4\x00\x00", 8 },      /* length 0 */
		{ "\x03\x01\x02\x04\x05\xb4\x00\x00", 8 },      /* length 1 */
		{ "\x08\x0c\x02\x04\x05\xb4\x00\x00", 8 },      /* beyond header */
		{ "\x00\x02\x04\x05\xb4\x00\x00\x00", 8 },      /* EOL first */
		{ "\x02\x03\x05\xb4", 4 },                      /* MSS length 3 */
		{ "\x02\x05\x05\xb4\x00\x00\x00\x00", 8 },      /* MSS length 5 */
		{ "\x01\x01\x02\x04", 4 },                      /* MSS cut by doff */
		{ "\x01\x01\x01\x02", 4 },                      /* kind at the end */
	};
	uint8_t buf[BUFSZ], save[BUFSZ];
	struct pkt_info pi;
	uint8_t *p;
	size_t len, i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		p = mktcp4(buf, 0x02, (const uint8_t *)bad[i].opts, bad[i].len, 4, &len);
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		memcpy(save, p, len);
		ck_assert_msg(!pkt_mss_clamp(p, &pi, 536), "case %zu", i);
		ck_assert_mem_eq(p, save, len);
	}

	/* Data offset beyond the segment (a pkt_info that lies). */
	p = mktcp4(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	pi.len = 20 + 30;
	ck_assert(!pkt_mss_clamp(p, &pi, 536));
	pi.len = 20 + 19;
	ck_assert(!pkt_mss_clamp(p, &pi, 536));
	p[20 + 12] = 0x40;
	pi.len = len;
	ck_assert(!pkt_mss_clamp(p, &pi, 536));
}
END_TEST

/* Random option bytes: the walk stays inside the header (run under ASan by
 * the fuzzer too), and a valid checksum stays valid. */
START_TEST(mss_clamp_random)
{
	uint8_t buf[BUFSZ], opts[40];
	struct pkt_info pi;
	uint32_t state = 4242;
	uint8_t *p;
	size_t len, i, j, olen;
	int changed = 0;

	for (i = 0; i < 5000; i++) {
		olen = 4 * (rnd(&state) % 11);
		for (j = 0; j < olen; j++) {
			uint32_t r = rnd(&state) % 8;

			opts[j] = r < 2 ? 1 : r < 4 ? 2 : r < 5 ? 4 : (uint8_t)rnd(&state);
		}
		if (olen >= 4 && i % 2) {
			j = 4 * (rnd(&state) % (olen / 4));
			j += rnd(&state) % 2;   /* sometimes after a NOP */
			if (j + 4 <= olen) {
				if (j % 2)
					opts[j - 1] = 1;
				memcpy(opts + j, "\x02\x04", 2);
				opts[j + 2] = (uint8_t)rnd(&state);
				opts[j + 3] = (uint8_t)rnd(&state);
			}
		}
		if (i % 3)
			p = mktcp4(buf, 0x02, opts, olen, rnd(&state) % 7, &len);
		else
			p = mktcp6(buf, 0x12, opts, olen, rnd(&state) % 7, &len);
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		if (pkt_mss_clamp(p, &pi, (uint16_t)(1 + rnd(&state) % 1500)))
			changed++;
		if (pi.family == AF_INET)
			ck_assert(tcp_ok4(p, len));
		else
			ck_assert(tcp_ok6(p, len));
	}
	ck_assert_int_gt(changed, 500);
}
END_TEST

START_TEST(mss_clamp_v6)
{
	uint8_t buf[BUFSZ];
	struct pkt_info pi;
	uint8_t *p;
	size_t len;

	p = mktcp6(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	ck_assert(tcp_ok6(p, len));
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_mss_clamp(p, &pi, pkt_mss_for_mtu(AF_INET6, 1280)));
	ck_assert_uint_eq(rd16(p + 40 + 22), 1220);
	ck_assert(tcp_ok6(p, len));

	p = mktcp6(buf, 0x12, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pkt_mss_clamp(p, &pi, 1000));
	ck_assert(tcp_ok6(p, len));

	p = mktcp6(buf, 0x10, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_mss_clamp(p, &pi, 1000));

	/* Behind an extension header TCP is not seen: untouched. */
	p = mktcp6(buf, 0x02, SYN_OPTS, sizeof(SYN_OPTS), 0, &len);
	p[6] = 60;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(!pkt_mss_clamp(p, &pi, 1000));
	ck_assert_uint_eq(rd16(p + 40 + 22), 1460);
}
END_TEST

START_TEST(mss_for_mtu)
{
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET, 1500), 1460);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET6, 1500), 1440);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET, 1400), 1360);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET6, 1280), 1220);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET, 41), 1);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET, 40), 0);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET6, 60), 0);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET, 0), 0);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_INET, 200000), 65535);
	ck_assert_uint_eq(pkt_mss_for_mtu(AF_UNSPEC, 1500), 0);
}
END_TEST

/* --- ICMP too big -------------------------------------------------------------- */

START_TEST(too_big_v4)
{
	uint8_t buf[BUFSZ], out[BUFSZ];
	struct ipaddr from = check_addr("10.77.0.1");
	struct ipaddr src = check_addr("10.77.0.2");
	struct ipaddr from6 = check_addr("fd77::1");
	struct pkt_info pi, ri;
	uint8_t *p;
	size_t len, r;

	/* A 1400-byte packet from the peer: reply 576 bytes, 548 quoted. */
	{
		size_t n = mktcp(buf + HEADROOM, 0x10, NULL, 0, 1360);

		p = mkip(buf, n, IPPROTO_TCP, "10.77.0.2", "10.77.0.9", &len);
	}
	ck_assert_uint_eq(len, 1400);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	memset(out, 0xee, sizeof(out));
	r = pkt_too_big(out, sizeof(out), p, &pi, 1300, &from);
	ck_assert_uint_eq(r, 576);
	ck_assert_uint_eq(out[576], 0xee);
	ck_assert_int_eq(pkt_parse(out, r, &ri), PKT_OK);
	ck_assert_int_eq(ri.family, AF_INET);
	ck_assert_uint_eq(ri.proto, IPPROTO_ICMP);
	ck_assert_uint_eq(ri.len, 576);
	ck_assert(util_addr_equal(&ri.src, &from));
	ck_assert(util_addr_equal(&ri.dst, &src));
	ck_assert_uint_eq(out[8], 64);
	ck_assert_uint_eq(ref_csum1(out, 20), 0);
	ck_assert_uint_eq(out[20], 3);
	ck_assert_uint_eq(out[21], 4);
	ck_assert_uint_eq(rd16(out + 24), 0);
	ck_assert_uint_eq(rd16(out + 26), 1300);
	ck_assert_uint_eq(ref_csum1(out + 20, 556), 0);
	ck_assert_mem_eq(out + 28, p, 548);

	/* A small packet is quoted whole; trailing buffer bytes are not. */
	{
		size_t n = mkudp(buf + HEADROOM, 20);

		p = mkip(buf, n, IPPROTO_UDP, "10.77.0.2", "10.77.0.9", &len);
	}
	ck_assert_int_eq(pkt_parse(p, len + 10, &pi), PKT_OK);
	r = pkt_too_big(out, sizeof(out), p, &pi, 70000, &from);
	ck_assert_uint_eq(r, 28 + 48);
	ck_assert_uint_eq(rd16(out + 2), 76);
	ck_assert_uint_eq(rd16(out + 26), 0xffff);      /* MTU saturates */
	ck_assert_uint_eq(ref_csum1(out + 20, 56), 0);
	ck_assert_mem_eq(out + 28, p, 48);

	/* out too small: no reply, nothing written beyond out_size. */
	ck_assert_uint_eq(pkt_too_big(out, 75, p, &pi, 1300, &from), 0);
	ck_assert_uint_eq(pkt_too_big(out, 0, p, &pi, 1300, &from), 0);
	ck_assert_uint_eq(pkt_too_big(out, 76, p, &pi, 1300, &from), 76);
	/* from of the other family. */
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1300, &from6), 0);

	/* Boundaries: 548 bytes fit whole, 549 lose their last byte. */
	{
		size_t n = mkudp(buf + HEADROOM, 548 - 28);

		p = mkip(buf, n, IPPROTO_UDP, "10.77.0.2", "10.77.0.9", &len);
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1300, &from), 576);
		ck_assert_mem_eq(out + 28, p, 548);
		ck_assert_uint_eq(ref_csum1(out + 20, 556), 0);
		n = mkudp(buf + HEADROOM, 549 - 28);
		p = mkip(buf, n, IPPROTO_UDP, "10.77.0.2", "10.77.0.9", &len);
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1300, &from), 576);
		ck_assert_uint_eq(rd16(out + 2), 576);
		ck_assert_mem_eq(out + 28, p, 548);
		ck_assert_uint_eq(ref_csum1(out + 20, 556), 0);
		n = mkudp(buf + HEADROOM, 20);
		p = mkip(buf, n, IPPROTO_UDP, "10.77.0.2", "10.77.0.9", &len);
	}

	/* Fragments: the first is answered, the others not. */
	wr16(p + 6, 0x2000);
	fix_ip4(p);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_ne(pkt_too_big(out, sizeof(out), p, &pi, 1300, &from), 0);
	wr16(p + 6, 0x2010);
	fix_ip4(p);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1300, &from), 0);
	wr16(p + 6, 0x0001);
	fix_ip4(p);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1300, &from), 0);

	/* No reply to unanswerable sources. */
	wr16(p + 6, 0x4000);
	p[12] = 0;
	fix_ip4(p);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1300, &from), 0);
	p[12] = 224;
	fix_ip4(p);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1300, &from), 0);
}
END_TEST

START_TEST(too_big_v4_icmp)
{
	static const uint8_t errors[] = { 3, 4, 5, 11, 12 };
	static const uint8_t infos[] = { 0, 8, 13, 14 };
	uint8_t buf[BUFSZ], out[BUFSZ];
	struct ipaddr from = check_addr("10.77.0.1");
	struct pkt_info pi;
	uint8_t *p;
	size_t len, i, n;

	for (i = 0; i < ARRAY_SIZE(errors); i++) {
		n = mkicmp(buf + HEADROOM, errors[i], 0, 600);
		p = mkip(buf, n, IPPROTO_ICMP, "10.77.0.2", "10.77.0.9", &len);
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 576, &from), 0);
	}
	for (i = 0; i < ARRAY_SIZE(infos); i++) {
		n = mkicmp(buf + HEADROOM, infos[i], 0, 600);
		p = mkip(buf, n, IPPROTO_ICMP, "10.77.0.2", "10.77.0.9", &len);
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 576, &from), 576);
	}
}
END_TEST

START_TEST(too_big_v6)
{
	uint8_t buf[BUFSZ], out[BUFSZ];
	struct ipaddr from = check_addr("fd77::1"), src = check_addr("fd77::2");
	struct ipaddr from4 = check_addr("10.77.0.1");
	struct pkt_info pi, ri;
	uint8_t *p;
	size_t len, r, n;

	n = mktcp(buf + HEADROOM, 0x10, NULL, 0, 1400);
	p = mkip(buf, n, IPPROTO_TCP, "fd77::2", "fd77::9", &len);
	ck_assert_uint_eq(len, 1460);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	memset(out, 0xee, sizeof(out));
	r = pkt_too_big(out, sizeof(out), p, &pi, 1400, &from);
	ck_assert_uint_eq(r, 1280);
	ck_assert_uint_eq(out[1280], 0xee);
	ck_assert_int_eq(pkt_parse(out, r, &ri), PKT_OK);
	ck_assert_int_eq(ri.family, AF_INET6);
	ck_assert_uint_eq(ri.proto, IPPROTO_ICMPV6);
	ck_assert_uint_eq(ri.len, 1280);
	ck_assert_uint_eq(rd16(out + 4), 1240);
	ck_assert_uint_eq(out[7], 64);
	ck_assert(util_addr_equal(&ri.src, &from));
	ck_assert(util_addr_equal(&ri.dst, &src));
	ck_assert_uint_eq(out[40], 2);
	ck_assert_uint_eq(out[41], 0);
	ck_assert_uint_eq(rd16(out + 44), 0);
	ck_assert_uint_eq(rd16(out + 46), 1400);
	ck_assert_uint_eq(ref_l4_csum(&from, &src, IPPROTO_ICMPV6, out + 40, 1240), 0);
	ck_assert_uint_eq(pkt_l4_csum(AF_INET6, &from, &src, IPPROTO_ICMPV6, out + 40, 1240), 0);
	ck_assert_mem_eq(out + 48, p, 1232);

	/* Boundaries: 1232 bytes fit whole, 1233 lose their last byte. */
	n = mkudp(buf + HEADROOM, 1232 - 48);
	p = mkip(buf, n, IPPROTO_UDP, "fd77::2", "fd77::9", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 1280);
	ck_assert_mem_eq(out + 48, p, 1232);
	n = mkudp(buf + HEADROOM, 1233 - 48);
	p = mkip(buf, n, IPPROTO_UDP, "fd77::2", "fd77::9", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 1280);
	ck_assert_uint_eq(rd16(out + 4), 1240);
	ck_assert_mem_eq(out + 48, p, 1232);
	ck_assert_uint_eq(ref_l4_csum(&from, &src, IPPROTO_ICMPV6, out + 40, 1240), 0);
	n = mktcp(buf + HEADROOM, 0x10, NULL, 0, 1400);
	p = mkip(buf, n, IPPROTO_TCP, "fd77::2", "fd77::9", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);

	/* 32-bit MTU field. */
	r = pkt_too_big(out, sizeof(out), p, &pi, 0x00012345, &from);
	ck_assert_uint_eq(rd16(out + 44), 0x0001);
	ck_assert_uint_eq(rd16(out + 46), 0x2345);
	ck_assert_uint_eq(ref_l4_csum(&from, &src, IPPROTO_ICMPV6, out + 40, 1240), 0);

	/* Small packet quoted whole. */
	n = mkudp(buf + HEADROOM, 1);
	p = mkip(buf, n, IPPROTO_UDP, "fd77::2", "fd77::9", &len);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	r = pkt_too_big(out, sizeof(out), p, &pi, 1280, &from);
	ck_assert_uint_eq(r, 40 + 8 + 49);
	ck_assert_uint_eq(ref_l4_csum(&from, &src, IPPROTO_ICMPV6, out + 40, 57), 0);
	ck_assert_mem_eq(out + 48, p, 49);
	ck_assert_uint_eq(pkt_too_big(out, 96, p, &pi, 1280, &from), 0);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from4), 0);

	/* Unspecified and multicast sources. */
	memset(p + 8, 0, 16);
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 0);
	p[8] = 0xff;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 0);
}
END_TEST

START_TEST(too_big_v6_no_reply)
{
	uint8_t buf[BUFSZ], out[BUFSZ];
	struct ipaddr from = check_addr("fd77::1");
	struct pkt_info pi;
	uint8_t *p, *x;
	size_t len, n, i;

	/* ICMPv6 errors (types < 128) get no reply, informational ones do. */
	for (i = 0; i < 256; i++) {
		n = mkicmp(buf + HEADROOM, (uint8_t)i, 0, 1300);
		p = mkip(buf, n, IPPROTO_ICMPV6, "fd77::2", "fd77::9", &len);
		ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
		ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from),
		    i < 128 ? 0 : 1280);
	}

	/* Fragment header: first fragment answered, later ones not. */
	n = mkicmp(buf + HEADROOM, 128, 0, 1300);
	p = mkip(buf, n, IPPROTO_ICMPV6, "fd77::2", "fd77::9", &len);
	memmove(p + 48, p + 40, len - 40);
	x = p + 40;
	x[0] = IPPROTO_ICMPV6;
	x[1] = 0;
	wr16(x + 2, 0x0001);            /* offset 0, M */
	memcpy(x + 4, "\x12\x34\x56\x78", 4);
	p[6] = 44;
	len += 8;
	wr16(p + 4, (uint16_t)(len - 40));
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert(pi.fragment);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 1280);
	wr16(x + 2, 0x0008);            /* offset 1 */
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 0);
	/* First fragment of an ICMPv6 error. */
	wr16(x + 2, 0x0001);
	x[8] = 1;
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 0);

	/* Hop-by-hop, then destination options, then an ICMPv6 error. */
	memcpy(x, "\x3c\x00\x01\x04\x00\x00\x00\x00", 8);       /* hbh, PadN */
	memcpy(x + 8, "\x3a\x00\x01\x04\x00\x00\x00\x00", 8);   /* dst */
	p[6] = 0;
	x[16] = 1;
	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 0);
	x[16] = 129;
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 1280);
	/* An extension chain running off the packet: no reply. */
	x[9] = 200;
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 0);
	/* A long chain of empty headers, then TCP. */
	x[9] = 0;
	for (i = 0; i < 20; i++)
		memcpy(x + 8 * i, "\x3c\x00\x01\x04\x00\x00\x00\x00", 8);
	x[8 * 19] = IPPROTO_TCP;
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 0);
	x[8 * 19] = 60;
	x[8 * 3] = IPPROTO_TCP;
	ck_assert_uint_eq(pkt_too_big(out, sizeof(out), p, &pi, 1280, &from), 1280);
}
END_TEST

/* --- ECN ------------------------------------------------------------------------ */

/* --- what a packet vouches for: ICMP quotes, IP-in-IP ---------------------- */

/* Wrap the packet inner (ilen bytes) in an outer header src -> dst of the
 * given protocol (an ICMP error of `type` quoting it, or IP-in-IP); returns
 * the outer packet in buf and its length in *len. */
static uint8_t *
wrap(uint8_t *buf, const uint8_t *inner, size_t ilen, uint8_t proto, int type,
    const char *src, const char *dst, size_t *len)
{
	size_t n = 0;

	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		n = mkicmp(buf + HEADROOM, (uint8_t)type, 0, 0);
		wr16(buf + HEADROOM + 4, 0);
		wr16(buf + HEADROOM + 6, 0);
	}
	memcpy(buf + HEADROOM + n, inner, ilen);
	return mkip(buf, n + ilen, proto, src, dst, len);
}

/* PKT_CLAIM_BAD: a claim whose address cannot be checked. */
#define PKT_CLAIM_BAD 99

static int
claim(const uint8_t *p, size_t len, struct ipaddr *a)
{
	struct pkt_info pi;
	enum pkt_claim k;

	ck_assert_int_eq(pkt_parse(p, len, &pi), PKT_OK);
	k = pkt_claim(p, &pi, a);
	if (k == PKT_CLAIM_NONE)
		ck_assert_int_eq(a->family, 0);
	return k != PKT_CLAIM_NONE && a->family == 0 ? PKT_CLAIM_BAD : (int)k;
}

START_TEST(claim_icmp_quote)
{
	uint8_t b1[BUFSZ], b2[BUFSZ], q[BUFSZ];
	struct ipaddr a, want;
	uint8_t *in, *out;
	size_t ilen, len;

	/* A UDP flow 10.77.0.1 -> 10.77.0.3 (another peer), and an error about
	 * it sent by 10.77.0.2: the claim is the quoted destination. */
	in = mkip(b1, mkudp(b1 + HEADROOM, 4), IPPROTO_UDP, "10.77.0.1", "10.77.0.3", &ilen);
	memcpy(q, in, ilen);
	out = wrap(b2, q, 28, IPPROTO_ICMP, 3, "10.77.0.2", "10.77.0.1", &len);
	want = check_addr("10.77.0.3");
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_QUOTE);
	ck_assert_int_eq(a.family, AF_INET);
	ck_assert_mem_eq(a.b, want.b, 4);
	/* Time exceeded, parameter problem, redirect, quench: errors too. */
	out[20] = 11;
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_QUOTE);
	out[20] = 12;
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_QUOTE);
	out[20] = 5;
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_QUOTE);
	out[20] = 4;
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_QUOTE);
	/* Echo and echo reply quote nothing. */
	out[20] = 8;
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_NONE);
	out[20] = 0;
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_NONE);

	/* A quote shorter than an IP header cannot be checked. */
	out = wrap(b2, q, 19, IPPROTO_ICMP, 3, "10.77.0.2", "10.77.0.1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_BAD);
	/* Nor one of the other family. */
	q[0] = 0x60;
	out = wrap(b2, q, 28, IPPROTO_ICMP, 3, "10.77.0.2", "10.77.0.1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_BAD);

	/* IPv6: destination unreachable quoting fd77::1 -> fd77::3. */
	in = mkip(b1, mkudp(b1 + HEADROOM, 4), IPPROTO_UDP, "fd77::1", "fd77::3", &ilen);
	memcpy(q, in, ilen);
	out = wrap(b2, q, ilen, IPPROTO_ICMPV6, 1, "fd77::2", "fd77::1", &len);
	want = check_addr("fd77::3");
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_QUOTE);
	ck_assert_int_eq(a.family, AF_INET6);
	ck_assert_mem_eq(a.b, want.b, 16);
	out[40] = 2;                    /* packet too big */
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_QUOTE);
	out[40] = 128;                  /* echo request */
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_NONE);
	out = wrap(b2, q, 39, IPPROTO_ICMPV6, 1, "fd77::2", "fd77::1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_BAD);
}
END_TEST

START_TEST(claim_icmp_behind_ext_and_fragments)
{
	uint8_t b1[BUFSZ], b2[BUFSZ], q[BUFSZ], pk[BUFSZ];
	struct ipaddr a;
	uint8_t *in, *out;
	size_t ilen, len;

	in = mkip(b1, mkudp(b1 + HEADROOM, 4), IPPROTO_UDP, "fd77::1", "fd77::3", &ilen);
	memcpy(q, in, ilen);
	out = wrap(b2, q, ilen, IPPROTO_ICMPV6, 1, "fd77::2", "fd77::1", &len);
	/* Insert an 8-byte destination-options header after the IPv6 header:
	 * the error behind it is still found. */
	memcpy(pk, out, 40);
	memcpy(pk + 48, out + 40, len - 40);
	pk[6] = 60;
	pk[40] = IPPROTO_ICMPV6;
	pk[41] = 0;
	memset(pk + 42, 0, 6);
	pk[42] = 1;                     /* PadN, 4 bytes of padding */
	pk[43] = 4;
	wr16(pk + 4, (uint16_t)(len - 40 + 8));
	ck_assert_int_eq(claim(pk, len + 8, &a), PKT_CLAIM_QUOTE);
	/* A first fragment (offset 0, M set) still has to show the quote. */
	pk[40] = 44;
	pk[6] = 60;
	memmove(pk + 56, pk + 48, len - 40);
	pk[48] = IPPROTO_ICMPV6;
	pk[49] = 0;
	wr16(pk + 50, 1);               /* offset 0, M */
	memset(pk + 52, 0, 4);
	wr16(pk + 4, (uint16_t)(len - 40 + 16));
	ck_assert_int_eq(claim(pk, len + 16, &a), PKT_CLAIM_QUOTE);
	/* Cut the first fragment inside the quoted header: unverifiable. */
	wr16(pk + 4, 16 + 8 + 20);
	ck_assert_int_eq(claim(pk, 40 + 16 + 8 + 20, &a), PKT_CLAIM_BAD);
	/* A later fragment claims nothing (the kernel needs the first). */
	wr16(pk + 50, 8 << 3);
	ck_assert_int_eq(claim(pk, 40 + 16 + 8 + 20, &a), PKT_CLAIM_NONE);

	/* IPv4: a first fragment carrying only the ICMP header. */
	in = mkip(b1, mkudp(b1 + HEADROOM, 4), IPPROTO_UDP, "10.77.0.1", "10.77.0.3", &ilen);
	memcpy(q, in, ilen);
	out = wrap(b2, q, 28, IPPROTO_ICMP, 3, "10.77.0.2", "10.77.0.1", &len);
	wr16(out + 2, 28);
	wr16(out + 6, 0x2000);
	fix_ip4(out);
	ck_assert_int_eq(claim(out, 28, &a), PKT_CLAIM_BAD);
	wr16(out + 6, 0x0003);
	fix_ip4(out);
	ck_assert_int_eq(claim(out, 28, &a), PKT_CLAIM_NONE);
}
END_TEST

START_TEST(claim_encap)
{
	uint8_t b1[BUFSZ], b2[BUFSZ], b3[BUFSZ], q[BUFSZ];
	struct ipaddr a, want;
	uint8_t *in, *out, *out2;
	size_t ilen, len, len2;

	/* IPv4 in IPv4: the claim is the inner source. */
	in = mkip(b1, mkudp(b1 + HEADROOM, 4), IPPROTO_UDP, "10.77.0.3", "10.77.0.1", &ilen);
	memcpy(q, in, ilen);
	out = wrap(b2, q, ilen, IPPROTO_IPIP, 0, "10.77.0.2", "10.77.0.1", &len);
	want = check_addr("10.77.0.3");
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_ENCAP);
	ck_assert_int_eq(a.family, AF_INET);
	ck_assert_mem_eq(a.b, want.b, 4);
	/* Nested: the same again inside another IPIP header. */
	out2 = wrap(b3, out, len, IPPROTO_IPIP, 0, "10.77.0.2", "10.77.0.1", &len2);
	ck_assert_int_eq(claim(out2, len2, &a), PKT_CLAIM_BAD);
	/* Inner header cut short, or of the wrong version. */
	out = wrap(b2, q, 19, IPPROTO_IPIP, 0, "10.77.0.2", "10.77.0.1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_BAD);
	q[0] = 0x65;
	out = wrap(b2, q, ilen, IPPROTO_IPIP, 0, "10.77.0.2", "10.77.0.1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_BAD);

	/* IPv6 in IPv4 (protocol 41) and in IPv6. */
	in = mkip(b1, mkudp(b1 + HEADROOM, 4), IPPROTO_UDP, "fd77::3", "fd77::1", &ilen);
	memcpy(q, in, ilen);
	want = check_addr("fd77::3");
	out = wrap(b2, q, ilen, IPPROTO_IPV6, 0, "10.77.0.2", "10.77.0.1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_ENCAP);
	ck_assert_int_eq(a.family, AF_INET6);
	ck_assert_mem_eq(a.b, want.b, 16);
	out = wrap(b2, q, ilen, IPPROTO_IPV6, 0, "fd77::2", "fd77::1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_ENCAP);
	ck_assert_mem_eq(a.b, want.b, 16);

	/* An encapsulated ICMP error would hide its quote: refused. */
	in = mkip(b1, mkicmp(b1 + HEADROOM, 3, 1, 28), IPPROTO_ICMP, "10.77.0.2", "10.77.0.1",
	    &ilen);
	memcpy(q, in, ilen);
	out = wrap(b2, q, ilen, IPPROTO_IPIP, 0, "10.77.0.2", "10.77.0.1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_BAD);
	/* An encapsulated echo is fine. */
	in = mkip(b1, mkicmp(b1 + HEADROOM, 8, 0, 8), IPPROTO_ICMP, "10.77.0.2", "10.77.0.1",
	    &ilen);
	memcpy(q, in, ilen);
	out = wrap(b2, q, ilen, IPPROTO_IPIP, 0, "10.77.0.2", "10.77.0.1", &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_ENCAP);

	/* Ordinary traffic claims nothing. */
	out = mktcp4(b2, 0x02, NULL, 0, 10, &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_NONE);
	out = mktcp6(b2, 0x02, NULL, 0, 10, &len);
	ck_assert_int_eq(claim(out, len, &a), PKT_CLAIM_NONE);
}
END_TEST

START_TEST(ecn_table)
{
	enum { N = 0, E1 = 1, E0 = 2, CE = 3, DROP = 0xff };
	/* RFC 6040 figure 4, rows inner, columns outer Not-ECT ECT(0) ECT(1) CE. */
	static const uint8_t table[4][4] = {
		/* inner Not-ECT */ { N, N, N, DROP },
		/* inner ECT(0) */  { E0, E0, E1, CE },
		/* inner ECT(1) */  { E1, E1, E1, CE },
		/* inner CE */      { CE, CE, CE, CE },
	};
	static const uint8_t code[4] = { N, E0, E1, CE };
	size_t i, o;
	bool drop;
	uint8_t r;

	for (i = 0; i < 4; i++) {
		for (o = 0; o < 4; o++) {
			drop = !(table[i][o] == DROP);
			r = pkt_ecn_decap(code[o], code[i], &drop);
			if (table[i][o] == DROP) {
				ck_assert(drop);
			} else {
				ck_assert(!drop);
				ck_assert_uint_eq(r, table[i][o]);
			}
			/* Upper bits (DSCP) are ignored; drop may be NULL. */
			ck_assert_uint_eq(pkt_ecn_decap(code[o] | 0xfc,
			    code[i] | 0xb8, NULL), r);
		}
	}
}
END_TEST

/* The ECN field rewritten in place: only its two bits, and the IPv4
 * header checksum still holds; DSCP and the flow label are kept. */
START_TEST(set_ecn)
{
	uint8_t buf[BUFSZ];
	struct ipaddr s = check_addr("10.77.0.2"), d = check_addr("10.77.0.1");
	struct ipaddr s6 = check_addr("fd77::2"), d6 = check_addr("fd77::1");
	struct pkt_info pi;
	uint8_t *seg = buf + HEADROOM, *h;
	size_t n;

	n = mktcp(seg, 0x10, NULL, 0, 100);
	ck_assert_uint_eq(pkt_ip_build(seg, n, IPPROTO_TCP, &s, &d, 0x02), 20);
	h = seg - 20;
	h[1] |= 0xb8;                           /* a DSCP to keep */
	h[10] = h[11] = 0;
	{
		uint16_t c = ref_csum1(h, 20);

		h[10] = (uint8_t)(c >> 8);
		h[11] = (uint8_t)c;
	}
	ck_assert_uint_eq(ref_csum1(h, 20), 0);
	ck_assert_int_eq(pkt_parse(h, n + 20, &pi), PKT_OK);
	pkt_set_ecn(h, &pi, 0x03);
	ck_assert_uint_eq(h[1], 0xbb);
	ck_assert_uint_eq(ref_csum1(h, 20), 0);
	ck_assert_int_eq(pkt_parse(h, n + 20, &pi), PKT_OK);
	ck_assert_uint_eq(pi.ecn, 3);

	n = mktcp(seg, 0x10, NULL, 0, 100);
	ck_assert_uint_eq(pkt_ip_build(seg, n, IPPROTO_TCP, &s6, &d6, 0x01), 40);
	h = seg - 40;
	h[1] |= 0x05;                           /* flow label bits to keep */
	ck_assert_int_eq(pkt_parse(h, n + 40, &pi), PKT_OK);
	ck_assert_uint_eq(pi.ecn, 1);
	pkt_set_ecn(h, &pi, 0x03);
	ck_assert_uint_eq(h[0], 0x60);
	ck_assert_uint_eq(h[1], 0x35);
	ck_assert_int_eq(pkt_parse(h, n + 40, &pi), PKT_OK);
	ck_assert_uint_eq(pi.ecn, 3);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pkt");
	TCase *tc = tcase_create("pkt");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, err_names);
	tcase_add_test(tc, parse_v4);
	tcase_add_test(tc, parse_v4_reject);
	tcase_add_test(tc, parse_v4_udp_icmp);
	tcase_add_test(tc, parse_v4_fragment_options);
	tcase_add_test(tc, parse_v6);
	tcase_add_test(tc, parse_v6_reject);
	tcase_add_test(tc, parse_v6_ext);
	tcase_add_test(tc, l4_check);
	tcase_add_test(tc, compact_decision);
	tcase_add_test(tc, build_v4);
	tcase_add_test(tc, build_v6);
	tcase_add_test(tc, build_roundtrip);
	tcase_add_test(tc, csum_basics);
	tcase_add_test(tc, csum_update);
	tcase_add_test(tc, l4_csum);
	tcase_add_test(tc, compact_family);
	tcase_add_test(tc, mss_clamp_v4);
	tcase_add_test(tc, mss_clamp_malformed);
	tcase_add_test(tc, mss_clamp_random);
	tcase_add_test(tc, mss_clamp_v6);
	tcase_add_test(tc, mss_for_mtu);
	tcase_add_test(tc, too_big_v4);
	tcase_add_test(tc, too_big_v4_icmp);
	tcase_add_test(tc, too_big_v6);
	tcase_add_test(tc, too_big_v6_no_reply);
	tcase_add_test(tc, ecn_table);
	tcase_add_test(tc, claim_icmp_quote);
	tcase_add_test(tc, claim_icmp_behind_ext_and_fragments);
	tcase_add_test(tc, claim_encap);
	tcase_add_test(tc, set_ecn);
	suite_add_tcase(s, tc);
	return check_run(s);
}
