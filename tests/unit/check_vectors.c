/* check_vectors.c - golden wire vectors (tests/unit/data/vectors/NAME.hex),
 * computed independently from the specification, reproduced byte for byte
 * by gue.c + pkt.c in both directions. */
#include <arpa/inet.h>
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gue.h"
#include "pkt.h"
#include "util.h"

#include "testutil.h"

#define VEC_MAX 2048
#define HEADROOM 128

struct vec {
	uint8_t b[VEC_MAX];
	size_t len;
};

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Hex digits in pairs; whitespace anywhere between bytes; '#' to the end of
 * the line is a comment.  Anything else fails the test. */
static void
vec_load(const char *name, struct vec *v)
{
	char path[4096];
	FILE *f;
	int c, hi = -1, d;

	check_data_path(path, sizeof(path), "vectors/%s.hex", name);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	v->len = 0;
	while ((c = fgetc(f)) != EOF) {
		if (c == '#') {
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			ck_assert_msg(hi < 0, "%s: split byte", path);
			continue;
		}
		if (isspace(c)) {
			ck_assert_msg(hi < 0, "%s: split byte", path);
			continue;
		}
		d = hexval(c);
		ck_assert_msg(d >= 0, "%s: bad character '%c'", path, c);
		if (hi < 0) {
			hi = d;
		} else {
			ck_assert_msg(v->len < VEC_MAX, "%s: too long", path);
			v->b[v->len++] = (uint8_t)(hi << 4 | d);
			hi = -1;
		}
	}
	fclose(f);
	ck_assert_msg(hi < 0, "%s: odd number of digits", path);
	ck_assert_msg(v->len > 0, "%s: empty", path);
}

/* Does the transport checksum verify?  ICMPv4 has no pseudo-header. */
static bool
l4_csum_ok(const struct ipaddr *src, const struct ipaddr *dst, uint8_t proto,
    const uint8_t *seg, size_t len)
{
	if (proto == IPPROTO_ICMP)
		return pkt_csum(seg, len) == 0;
	return pkt_l4_csum(src->family, src, dst, proto, seg, len) == 0;
}

/* (a), (b), (c): an inner packet and its compact TOU payload. */
static const struct {
	const char *ip, *compact, *local, *peer;
	uint8_t proto;
} compact_vecs[] = {
	{ "v4_tcp_syn", "v4_tcp_syn_compact", "10.77.0.1", "10.77.0.2", IPPROTO_TCP },
	{ "v6_tcp_syn", "v6_tcp_syn_compact", "fd77::1", "fd77::2", IPPROTO_TCP },
	{ "v4_udp", "v4_udp_compact", "10.77.0.1", "10.77.0.2", IPPROTO_UDP },
	{ "v4_icmp_echo", "v4_icmp_echo_compact", "10.77.0.1", "10.77.0.2", IPPROTO_ICMP },
	{ "v6_icmp6_echo", "v6_icmp6_echo_compact", "fd77::1", "fd77::2", IPPROTO_ICMPV6 },
};

START_TEST(compact_encode)
{
	struct vec ip, cv;
	struct pkt_info pi;
	struct ipaddr local = check_addr(compact_vecs[_i].local);
	struct ipaddr peer = check_addr(compact_vecs[_i].peer);
	uint8_t buf[HEADROOM + VEC_MAX], *word;

	vec_load(compact_vecs[_i].ip, &ip);
	vec_load(compact_vecs[_i].compact, &cv);

	ck_assert_int_eq(pkt_parse(ip.b, ip.len, &pi), PKT_OK);
	ck_assert_uint_eq(pi.len, ip.len);
	ck_assert_uint_eq(pi.proto, compact_vecs[_i].proto);
	ck_assert(pkt_compact_ok(&pi, &local, &peer));
	ck_assert(!pkt_compact_ok(&pi, &peer, &local));
	ck_assert(l4_csum_ok(&local, &peer, pi.proto, ip.b + pi.ip_hlen,
	    pi.len - pi.ip_hlen));

	/* The sender leaves the segment where the TUN read put it and writes
	 * the GUE word over the end of the IP header. */
	memcpy(buf + HEADROOM, ip.b, ip.len);
	word = buf + HEADROOM + pi.ip_hlen - GUE_WORD_LEN;
	gue_compact_encode(word, pi.proto);
	ck_assert_uint_eq(GUE_WORD_LEN + pi.len - pi.ip_hlen, cv.len);
	ck_assert_mem_eq(word, cv.b, cv.len);
}
END_TEST

START_TEST(compact_decode)
{
	struct vec ip, cv;
	struct gue_inner in;
	struct pkt_info pi;
	struct ipaddr sender = check_addr(compact_vecs[_i].local);
	struct ipaddr receiver = check_addr(compact_vecs[_i].peer);
	uint8_t buf[HEADROOM + VEC_MAX];
	size_t hl;

	vec_load(compact_vecs[_i].ip, &ip);
	vec_load(compact_vecs[_i].compact, &cv);

	memcpy(buf + HEADROOM, cv.b, cv.len);
	ck_assert_int_eq(gue_inner_decode(buf + HEADROOM, cv.len, &in), GUE_OK);
	ck_assert_int_eq(in.kind, GUE_KIND_COMPACT);
	ck_assert_uint_eq(in.proto, compact_vecs[_i].proto);
	ck_assert_ptr_eq(in.payload, buf + HEADROOM + GUE_WORD_LEN);
	ck_assert_uint_eq(in.len, cv.len - GUE_WORD_LEN);
	ck_assert_int_eq(pkt_l4_check(in.proto, in.payload, in.len), PKT_OK);
	ck_assert(l4_csum_ok(&sender, &receiver, in.proto, in.payload, in.len));

	/* Rebuild into the headroom: the original header, byte for byte.
	 * A compact packet's ECN is the outer field (Not-ECT here). */
	hl = pkt_ip_build((uint8_t *)in.payload, in.len, in.proto, &sender,
	    &receiver, 0);
	ck_assert_uint_eq(hl + in.len, ip.len);
	ck_assert_mem_eq(in.payload - hl, ip.b, ip.len);
	ck_assert_int_eq(pkt_parse(in.payload - hl, ip.len, &pi), PKT_OK);
	ck_assert(pkt_compact_ok(&pi, &sender, &receiver));
}
END_TEST

/* (d) direct IP: the inner payload is the whole packet, untouched. */
START_TEST(direct_ip)
{
	static const char *const names[] = { "v4_direct", "v6_direct" };
	struct ipaddr l4 = check_addr("10.77.0.1"), p4 = check_addr("10.77.0.2");
	struct ipaddr l6 = check_addr("fd77::1"), p6 = check_addr("fd77::2");
	struct ipaddr s4 = check_addr("192.168.50.10");
	struct ipaddr s6 = check_addr("fd50::10");
	struct gue_inner in;
	struct pkt_info pi;
	struct vec v;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		vec_load(names[i], &v);
		ck_assert_int_eq(gue_inner_decode(v.b, v.len, &in), GUE_OK);
		ck_assert_int_eq(in.kind, GUE_KIND_IP);
		ck_assert_uint_eq(in.proto, i == 0 ? 4 : 6);
		ck_assert_ptr_eq(in.payload, v.b);
		ck_assert_uint_eq(in.len, v.len);
		ck_assert_int_eq(pkt_parse(in.payload, in.len, &pi), PKT_OK);
		ck_assert_uint_eq(pi.len, v.len);
		if (i == 0) {
			ck_assert(util_addr_equal(&pi.src, &s4));
			ck_assert(!pi.options && !pi.fragment);
			ck_assert(!pkt_compact_ok(&pi, &l4, &p4));
		} else {
			ck_assert(util_addr_equal(&pi.src, &s6));
			ck_assert(pi.options);
			ck_assert_uint_eq(pi.proto, 0);
			ck_assert(!pkt_compact_ok(&pi, &l6, &p6));
			/* Even from our own address: extension headers go whole. */
			pi.src = l6;
			ck_assert(!pkt_compact_ok(&pi, &l6, &p6));
		}
	}
}
END_TEST

/* (e) control messages. */
START_TEST(control)
{
	static const struct {
		const char *name;
		uint8_t ctype;
		size_t body;
	} ctl[] = {
		{ "ctl_keepalive", GUE_CTYPE_KEEPALIVE, 0 },
		{ "ctl_challenge", GUE_CTYPE_CHALLENGE, GUE_CHALLENGE_LEN },
		{ "ctl_response", GUE_CTYPE_RESPONSE, GUE_CHALLENGE_LEN },
		{ "ctl_close", GUE_CTYPE_CLOSE, 0 },
	};
	static const uint8_t nonce[GUE_CHALLENGE_LEN] = {
		0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18,
	};
	uint8_t buf[64];
	struct gue_inner in;
	struct vec v;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ctl); i++) {
		vec_load(ctl[i].name, &v);
		ck_assert_uint_eq(v.len, GUE_WORD_LEN + ctl[i].body);
		gue_control_encode(buf, ctl[i].ctype);
		memcpy(buf + GUE_WORD_LEN, nonce, ctl[i].body);
		ck_assert_mem_eq(buf, v.b, v.len);

		ck_assert_int_eq(gue_inner_decode(v.b, v.len, &in), GUE_OK);
		ck_assert_int_eq(in.kind, GUE_KIND_CONTROL);
		ck_assert_uint_eq(in.proto, ctl[i].ctype);
		ck_assert_uint_eq(in.len, ctl[i].body);
		ck_assert_ptr_eq(in.payload, v.b + GUE_WORD_LEN);
		if (ctl[i].body)
			ck_assert_mem_eq(in.payload, nonce, ctl[i].body);
	}
}
END_TEST

/* (f) outer framing in front of a DTLS record. */
START_TEST(outer_dtls)
{
	uint8_t buf[GUE_OUTER_LEN], ct = 0;
	uint64_t sid = 0;
	struct vec v;

	vec_load("outer_dtls", &v);
	gue_outer_encode(buf, 0x0123456789abcdefULL);
	ck_assert_mem_eq(buf, v.b, GUE_OUTER_LEN);
	ck_assert_int_eq(gue_outer_decode(v.b, v.len, &sid), GUE_OK);
	ck_assert(sid == 0x0123456789abcdefULL);
	ck_assert_int_eq(gue_dtls_prefilter(v.b + GUE_OUTER_LEN,
	    v.len - GUE_OUTER_LEN, &ct), GUE_DTLS_OK);
	ck_assert_uint_eq(ct, 23);
	/* One byte missing from the record: refused. */
	ck_assert_int_ne(gue_dtls_prefilter(v.b + GUE_OUTER_LEN,
	    v.len - GUE_OUTER_LEN - 1, &ct), GUE_DTLS_OK);
}
END_TEST

/* (g) encryption = none: outer IP + UDP + GUE word + transport segment. */
static const struct {
	const char *datagram, *inner;
	const char *osrc, *odst, *isrc, *idst;
} none_vecs[] = {
	{ "udp_none_v4", "v4_tcp_syn", "192.0.2.1", "198.51.100.2", "10.77.0.1", "10.77.0.2" },
	{ "udp_none_v6", "v6_tcp_syn", "2001:db8::1", "2001:db8::2", "fd77::1", "fd77::2" },
};

START_TEST(udp_none_encode)
{
	struct vec dg, ip;
	struct pkt_info pi;
	struct ipaddr os = check_addr(none_vecs[_i].osrc);
	struct ipaddr od = check_addr(none_vecs[_i].odst);
	uint8_t buf[HEADROOM + VEC_MAX], *seg, *word, *udp;
	size_t seglen, ulen, hl;
	uint16_t csum;

	vec_load(none_vecs[_i].datagram, &dg);
	vec_load(none_vecs[_i].inner, &ip);
	ck_assert_int_eq(pkt_parse(ip.b, ip.len, &pi), PKT_OK);

	/* The segment stays in place; headers are prepended into headroom. */
	memcpy(buf + HEADROOM, ip.b, ip.len);
	seg = buf + HEADROOM + pi.ip_hlen;
	seglen = pi.len - pi.ip_hlen;
	word = seg - GUE_WORD_LEN;
	gue_compact_encode(word, pi.proto);
	udp = word - 8;
	ulen = 8 + GUE_WORD_LEN + seglen;
	udp[0] = GUE_PORT >> 8;
	udp[1] = GUE_PORT & 0xff;
	udp[2] = GUE_PORT >> 8;
	udp[3] = GUE_PORT & 0xff;
	udp[4] = (uint8_t)(ulen >> 8);
	udp[5] = (uint8_t)ulen;
	udp[6] = 0;
	udp[7] = 0;
	csum = pkt_l4_csum(os.family, &os, &od, IPPROTO_UDP, udp, ulen);
	if (csum == 0)
		csum = 0xffff;
	memcpy(udp + 6, &csum, 2);
	hl = pkt_ip_build(udp, ulen, IPPROTO_UDP, &os, &od, pi.ecn);
	ck_assert_uint_ne(hl, 0);
	ck_assert_uint_eq(hl + ulen, dg.len);
	ck_assert_mem_eq(udp - hl, dg.b, dg.len);
}
END_TEST

START_TEST(udp_none_decode)
{
	struct vec dg, ip;
	struct pkt_info opi, ipi;
	struct gue_inner in;
	struct ipaddr os = check_addr(none_vecs[_i].osrc);
	struct ipaddr od = check_addr(none_vecs[_i].odst);
	struct ipaddr is = check_addr(none_vecs[_i].isrc);
	struct ipaddr id = check_addr(none_vecs[_i].idst);
	uint8_t buf[HEADROOM + VEC_MAX], *udp;
	size_t ulen, hl;

	vec_load(none_vecs[_i].datagram, &dg);
	vec_load(none_vecs[_i].inner, &ip);

	memcpy(buf + HEADROOM, dg.b, dg.len);
	ck_assert_int_eq(pkt_parse(buf + HEADROOM, dg.len, &opi), PKT_OK);
	ck_assert_uint_eq(opi.proto, IPPROTO_UDP);
	ck_assert(util_addr_equal(&opi.src, &os));
	ck_assert(util_addr_equal(&opi.dst, &od));
	udp = buf + HEADROOM + opi.ip_hlen;
	ulen = opi.len - opi.ip_hlen;
	ck_assert_uint_eq(pkt_l4_csum(opi.family, &os, &od, IPPROTO_UDP, udp, ulen), 0);
	ck_assert_uint_eq(udp[0] << 8 | udp[1], GUE_PORT);
	ck_assert_uint_eq(udp[2] << 8 | udp[3], GUE_PORT);

	ck_assert_int_eq(gue_inner_decode(udp + 8, ulen - 8, &in), GUE_OK);
	ck_assert_int_eq(in.kind, GUE_KIND_COMPACT);
	ck_assert_int_eq(pkt_l4_check(in.proto, in.payload, in.len), PKT_OK);
	/* The sender copied the inner ECN field to the outer header. */
	hl = pkt_ip_build((uint8_t *)in.payload, in.len, in.proto, &is, &id,
	    opi.ecn);
	ck_assert_uint_eq(hl + in.len, ip.len);
	ck_assert_mem_eq(in.payload - hl, ip.b, ip.len);
	ck_assert_int_eq(pkt_parse(in.payload - hl, ip.len, &ipi), PKT_OK);
}
END_TEST

/* MSS clamp and ICMP too-big against independently computed results. */
START_TEST(mss_clamp)
{
	struct vec v, want;
	struct pkt_info pi;

	vec_load("v4_tcp_syn", &v);
	vec_load("v4_tcp_syn_mss1360", &want);
	ck_assert_int_eq(pkt_parse(v.b, v.len, &pi), PKT_OK);
	ck_assert(pkt_mss_clamp(v.b, &pi, pkt_mss_for_mtu(AF_INET, 1400)));
	ck_assert_uint_eq(v.len, want.len);
	ck_assert_mem_eq(v.b, want.b, v.len);

	vec_load("v6_tcp_syn", &v);
	vec_load("v6_tcp_syn_mss1220", &want);
	ck_assert_int_eq(pkt_parse(v.b, v.len, &pi), PKT_OK);
	ck_assert(pkt_mss_clamp(v.b, &pi, pkt_mss_for_mtu(AF_INET6, 1280)));
	ck_assert_uint_eq(v.len, want.len);
	ck_assert_mem_eq(v.b, want.b, v.len);
}
END_TEST

START_TEST(too_big)
{
	struct vec v, want;
	struct pkt_info pi;
	struct ipaddr f4 = check_addr("10.77.0.1"), f6 = check_addr("fd77::1");
	uint8_t out[1500];
	size_t n;

	vec_load("v4_direct", &v);
	vec_load("v4_too_big", &want);
	ck_assert_int_eq(pkt_parse(v.b, v.len, &pi), PKT_OK);
	n = pkt_too_big(out, sizeof(out), v.b, &pi, 1400, &f4);
	ck_assert_uint_eq(n, want.len);
	ck_assert_mem_eq(out, want.b, n);

	vec_load("v6_direct", &v);
	vec_load("v6_too_big", &want);
	ck_assert_int_eq(pkt_parse(v.b, v.len, &pi), PKT_OK);
	n = pkt_too_big(out, sizeof(out), v.b, &pi, 1400, &f6);
	ck_assert_uint_eq(n, want.len);
	ck_assert_mem_eq(out, want.b, n);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("vectors");
	TCase *tc = tcase_create("vectors");

	tcase_add_loop_test(tc, compact_encode, 0, ARRAY_SIZE(compact_vecs));
	tcase_add_loop_test(tc, compact_decode, 0, ARRAY_SIZE(compact_vecs));
	tcase_add_test(tc, direct_ip);
	tcase_add_test(tc, control);
	tcase_add_test(tc, outer_dtls);
	tcase_add_loop_test(tc, udp_none_encode, 0, ARRAY_SIZE(none_vecs));
	tcase_add_loop_test(tc, udp_none_decode, 0, ARRAY_SIZE(none_vecs));
	tcase_add_test(tc, mss_clamp);
	tcase_add_test(tc, too_big);
	suite_add_tcase(s, tc);
	return check_run(s);
}
