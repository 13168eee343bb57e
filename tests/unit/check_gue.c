/* check_gue.c - GUE outer/inner framing and the DTLS record prefilter. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gue.h"

#include "testutil.h"

#define DTLS_HDR 13
#define DTLS_MAX (16384 + 2048)

/* Write a 16-byte outer header field by field, independent of the encoder,
 * so each rejection test can break exactly one field. */
static void
outer_raw(uint8_t *b, uint8_t b0, uint8_t proto, uint16_t flags,
    uint32_t pflags, uint64_t sid)
{
	int i;

	b[0] = b0;
	b[1] = proto;
	b[2] = flags >> 8;
	b[3] = flags & 0xff;
	b[4] = pflags >> 24;
	b[5] = (pflags >> 16) & 0xff;
	b[6] = (pflags >> 8) & 0xff;
	b[7] = pflags & 0xff;
	for (i = 0; i < 8; i++)
		b[8 + i] = (sid >> (56 - 8 * i)) & 0xff;
}

/* The valid outer header: variant 0, C 0, Hlen 3, Proto 59, P, S|D. */
static void
outer_good(uint8_t *b, uint64_t sid)
{
	outer_raw(b, 0x03, 59, 0x0001, 0x60000000u, sid);
}

static enum gue_err
outer_decode_raw(const uint8_t *b, size_t len)
{
	uint64_t sid = 0;

	return gue_outer_decode(b, len, &sid);
}

/* A DTLS record header with a body of body_len zero bytes after it. */
static size_t
dtls_raw(uint8_t *b, uint8_t type, uint16_t version, uint16_t length,
    size_t body_len)
{
	memset(b, 0, DTLS_HDR + body_len);
	b[0] = type;
	b[1] = version >> 8;
	b[2] = version & 0xff;
	b[3] = 0;               /* epoch */
	b[4] = 1;
	b[10] = 7;              /* sequence number, low byte */
	b[11] = length >> 8;
	b[12] = length & 0xff;
	return DTLS_HDR + body_len;
}

/* ---- names ---- */

START_TEST(test_err_names)
{
	static const char *const want[GUE_ERR__MAX] = {
		"ok", "truncated", "bad_variant", "bad_control", "bad_hlen",
		"bad_proto", "bad_flags", "bad_private_flags", "zero_session",
		"bad_control_len",
	};
	int i, j;

	ck_assert_int_eq(GUE_ERR__MAX, 10);
	for (i = 0; i < GUE_ERR__MAX; i++) {
		ck_assert_ptr_nonnull(gue_err_name((enum gue_err)i));
		ck_assert_str_eq(gue_err_name((enum gue_err)i), want[i]);
		for (j = 0; j < i; j++)
			ck_assert_str_ne(gue_err_name((enum gue_err)i),
			    gue_err_name((enum gue_err)j));
	}
	ck_assert_str_eq(gue_err_name(GUE_ERR__MAX), "unknown");
	ck_assert_str_eq(gue_err_name((enum gue_err)1000), "unknown");
	ck_assert_str_eq(gue_err_name((enum gue_err)-1), "unknown");
}
END_TEST

/* ---- outer header ---- */

START_TEST(test_outer_encode_bytes)
{
	static const uint8_t want[GUE_OUTER_LEN] = {
		0x03, 0x3b, 0x00, 0x01, 0x60, 0x00, 0x00, 0x00,
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	};
	uint8_t b[GUE_OUTER_LEN + 4];

	memset(b, 0xee, sizeof(b));
	gue_outer_encode(b, 0x0123456789abcdefULL);
	ck_assert_mem_eq(b, want, GUE_OUTER_LEN);
	/* Nothing written past the header. */
	ck_assert_uint_eq(b[GUE_OUTER_LEN], 0xee);
}
END_TEST

START_TEST(test_outer_round_trip)
{
	static const uint64_t ids[] = {
		1, 2, 0xff, 0x100, 0x0123456789abcdefULL, 0x8000000000000000ULL,
		0xfedcba9876543210ULL, UINT64_MAX,
	};
	uint8_t b[64], raw[GUE_OUTER_LEN];
	uint64_t sid;
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		memset(b, 0x5a, sizeof(b));
		gue_outer_encode(b, ids[i]);
		outer_good(raw, ids[i]);
		ck_assert_mem_eq(b, raw, GUE_OUTER_LEN);
		sid = 0;
		ck_assert_int_eq(gue_outer_decode(b, GUE_OUTER_LEN, &sid), GUE_OK);
		ck_assert_uint_eq(sid, ids[i]);
		sid = 0;
		ck_assert_int_eq(gue_outer_decode(b, sizeof(b), &sid), GUE_OK);
		ck_assert_uint_eq(sid, ids[i]);
	}
}
END_TEST

START_TEST(test_outer_truncated)
{
	uint8_t b[GUE_OUTER_LEN];
	uint64_t sid = 42;
	size_t len;

	gue_outer_encode(b, 42);
	for (len = 0; len < GUE_OUTER_LEN; len++)
		ck_assert_int_eq(outer_decode_raw(b, len), GUE_ERR_TRUNCATED);
	ck_assert_int_eq(gue_outer_decode(b, GUE_OUTER_LEN, &sid), GUE_OK);
	ck_assert_uint_eq(sid, 42);
}
END_TEST

START_TEST(test_outer_variant)
{
	uint8_t b[GUE_OUTER_LEN];

	outer_raw(b, 0x40 | 0x03, 59, 0x0001, 0x60000000u, 1);
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_VARIANT);
	outer_raw(b, 0x80 | 0x03, 59, 0x0001, 0x60000000u, 1);
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_VARIANT);
	outer_raw(b, 0xc0 | 0x03, 59, 0x0001, 0x60000000u, 1);
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_VARIANT);
	/* An IPv4 / IPv6 packet in the clear is not a toud outer header. */
	b[0] = 0x45;
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_VARIANT);
	b[0] = 0x60;
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_VARIANT);
}
END_TEST

START_TEST(test_outer_control)
{
	uint8_t b[GUE_OUTER_LEN];

	outer_raw(b, 0x20 | 0x03, 59, 0x0001, 0x60000000u, 1);
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_CONTROL);
	/* A bare inner control word (C 1, Hlen 0) in the clear. */
	outer_raw(b, 0x20, GUE_CTYPE_KEEPALIVE, 0, 0, 0);
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_CONTROL);
}
END_TEST

START_TEST(test_outer_hlen)
{
	static const uint8_t bad[] = { 0, 1, 2, 4, 5, 16, 31 };
	uint8_t b[GUE_OUTER_LEN];
	size_t i;

	for (i = 0; i < sizeof(bad); i++) {
		outer_raw(b, bad[i], 59, 0x0001, 0x60000000u, 1);
		ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_HLEN);
	}
}
END_TEST

START_TEST(test_outer_proto)
{
	static const uint8_t bad[] = { 0, 1, 4, 6, 17, 41, 58, 60, 132, 255 };
	uint8_t b[GUE_OUTER_LEN];
	size_t i;

	for (i = 0; i < sizeof(bad); i++) {
		outer_raw(b, 0x03, bad[i], 0x0001, 0x60000000u, 1);
		ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_PROTO);
	}
}
END_TEST

START_TEST(test_outer_flags)
{
	static const uint16_t bad[] = {
		0x0000, 0x0002, 0x0003, 0x8000, 0x8001, 0x4001, 0x0101, 0xffff,
	};
	uint8_t b[GUE_OUTER_LEN];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		outer_raw(b, 0x03, 59, bad[i], 0x60000000u, 1);
		ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_FLAGS);
	}
}
END_TEST

START_TEST(test_outer_private_flags)
{
	static const uint32_t bad[] = {
		0,
		GUE_PFLAG_SESSION,
		GUE_PFLAG_DTLS,
		GUE_PFLAG_REMCSUM,
		GUE_PFLAG_REMCSUM | GUE_PFLAG_SESSION | GUE_PFLAG_DTLS,
		GUE_PFLAG_SESSION | GUE_PFLAG_DTLS | 0x10000000u,
		GUE_PFLAG_SESSION | GUE_PFLAG_DTLS | 0x00000001u,
		0xffffffffu,
	};
	uint8_t b[GUE_OUTER_LEN];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		outer_raw(b, 0x03, 59, 0x0001, bad[i], 1);
		ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_PFLAGS);
	}
}
END_TEST

START_TEST(test_outer_zero_session)
{
	uint8_t b[GUE_OUTER_LEN + 13];

	memset(b, 0, sizeof(b));
	outer_good(b, 0);
	ck_assert_int_eq(outer_decode_raw(b, GUE_OUTER_LEN), GUE_ERR_SESSION);
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_SESSION);
	gue_outer_encode(b, 0);
	ck_assert_int_eq(outer_decode_raw(b, sizeof(b)), GUE_ERR_SESSION);
}
END_TEST

/* ---- inner framing ---- */

START_TEST(test_compact_round_trip)
{
	static const uint8_t protos[] = { 6, 17, 1, 58, 132, 33, 255 };
	uint8_t b[64];
	struct gue_inner in;
	size_t i, plen;

	for (i = 0; i < sizeof(protos); i++) {
		for (plen = 1; plen <= 40; plen += 13) {
			memset(b, 0xa5, sizeof(b));
			gue_compact_encode(b, protos[i]);
			ck_assert_uint_eq(b[0], 0);
			ck_assert_uint_eq(b[1], protos[i]);
			ck_assert_uint_eq(b[2], 0);
			ck_assert_uint_eq(b[3], 0);
			ck_assert_uint_eq(b[4], 0xa5);
			memset(&in, 0, sizeof(in));
			ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + plen,
			    &in), GUE_OK);
			ck_assert_int_eq(in.kind, GUE_KIND_COMPACT);
			ck_assert_uint_eq(in.proto, protos[i]);
			ck_assert_ptr_eq(in.payload, b + GUE_WORD_LEN);
			ck_assert_uint_eq(in.len, plen);
		}
	}
}
END_TEST

START_TEST(test_compact_empty)
{
	uint8_t b[GUE_WORD_LEN];
	struct gue_inner in;

	gue_compact_encode(b, 6);
	ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN, &in),
	    GUE_ERR_TRUNCATED);
}
END_TEST

START_TEST(test_compact_zero_proto)
{
	uint8_t b[GUE_WORD_LEN + 20];
	struct gue_inner in;

	memset(b, 0, sizeof(b));
	gue_compact_encode(b, 0);
	ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in), GUE_ERR_PROTO);
}
END_TEST

START_TEST(test_inner_truncated)
{
	uint8_t b[GUE_WORD_LEN + 1];
	struct gue_inner in;
	size_t len;

	memset(b, 0, sizeof(b));
	ck_assert_int_eq(gue_inner_decode(b, 0, &in), GUE_ERR_TRUNCATED);
	gue_compact_encode(b, 6);
	b[4] = 0;
	for (len = 0; len < GUE_WORD_LEN; len++)
		ck_assert_int_eq(gue_inner_decode(b, len, &in),
		    GUE_ERR_TRUNCATED);
	ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + 1, &in), GUE_OK);
	gue_control_encode(b, GUE_CTYPE_KEEPALIVE);
	for (len = 0; len < GUE_WORD_LEN; len++)
		ck_assert_int_eq(gue_inner_decode(b, len, &in),
		    GUE_ERR_TRUNCATED);
	ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN, &in), GUE_OK);
}
END_TEST

START_TEST(test_inner_hlen)
{
	uint8_t b[GUE_WORD_LEN + 16];
	struct gue_inner in;
	unsigned int hlen;

	memset(b, 0, sizeof(b));
	for (hlen = 1; hlen < 32; hlen++) {
		gue_compact_encode(b, 6);
		b[0] |= hlen;
		ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in),
		    GUE_ERR_HLEN);
		gue_control_encode(b, GUE_CTYPE_KEEPALIVE);
		b[0] |= hlen;
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN, &in),
		    GUE_ERR_HLEN);
	}
}
END_TEST

START_TEST(test_inner_flags)
{
	static const uint16_t bad[] = { 0x0001, 0x0002, 0x8000, 0x4000, 0xffff };
	uint8_t b[GUE_WORD_LEN + 8];
	struct gue_inner in;
	size_t i;

	memset(b, 0, sizeof(b));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gue_compact_encode(b, 17);
		b[2] = bad[i] >> 8;
		b[3] = bad[i] & 0xff;
		ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in),
		    GUE_ERR_FLAGS);
		gue_control_encode(b, GUE_CTYPE_CHALLENGE);
		b[2] = bad[i] >> 8;
		b[3] = bad[i] & 0xff;
		ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in),
		    GUE_ERR_FLAGS);
	}
}
END_TEST

START_TEST(test_inner_outer_header_refused)
{
	uint8_t b[GUE_OUTER_LEN + 20];
	struct gue_inner in;

	/* The outer header is not a valid inner frame (Hlen 3). */
	memset(b, 0, sizeof(b));
	gue_outer_encode(b, 7);
	ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in), GUE_ERR_HLEN);
}
END_TEST

START_TEST(test_inner_ip)
{
	uint8_t b[40];
	struct gue_inner in;

	memset(b, 0, sizeof(b));
	b[0] = 0x45;
	ck_assert_int_eq(gue_inner_decode(b, 20, &in), GUE_OK);
	ck_assert_int_eq(in.kind, GUE_KIND_IP);
	ck_assert_uint_eq(in.proto, 4);
	ck_assert_ptr_eq(in.payload, b);
	ck_assert_uint_eq(in.len, 20);

	b[0] = 0x60;
	ck_assert_int_eq(gue_inner_decode(b, 40, &in), GUE_OK);
	ck_assert_int_eq(in.kind, GUE_KIND_IP);
	ck_assert_uint_eq(in.proto, 6);
	ck_assert_ptr_eq(in.payload, b);
	ck_assert_uint_eq(in.len, 40);

	/* Only the version nibble is checked here; pkt_parse does the rest. */
	b[0] = 0x4f;
	ck_assert_int_eq(gue_inner_decode(b, 1, &in), GUE_OK);
	ck_assert_uint_eq(in.proto, 4);
	ck_assert_uint_eq(in.len, 1);
	b[0] = 0x6f;
	ck_assert_int_eq(gue_inner_decode(b, 1, &in), GUE_OK);
	ck_assert_uint_eq(in.proto, 6);
}
END_TEST

START_TEST(test_inner_variant)
{
	uint8_t b[40];
	struct gue_inner in;
	unsigned int v;

	memset(b, 0, sizeof(b));
	/* Variant 1 with a nibble that is no IP version we carry. */
	b[0] = 0x50;
	ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in), GUE_ERR_VARIANT);
	b[0] = 0x70;
	ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in), GUE_ERR_VARIANT);
	b[0] = 0x5f;
	ck_assert_int_eq(gue_inner_decode(b, 1, &in), GUE_ERR_VARIANT);
	/* Variants 2 and 3, every low-bit pattern. */
	for (v = 0x80; v <= 0xff; v++) {
		b[0] = v;
		ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in),
		    GUE_ERR_VARIANT);
		ck_assert_int_eq(gue_inner_decode(b, 1, &in),
		    GUE_ERR_VARIANT);
	}
}
END_TEST

START_TEST(test_control_round_trip)
{
	static const struct {
		uint8_t ctype;
		size_t len;
	} ok[] = {
		{ GUE_CTYPE_KEEPALIVE, 0 },
		{ GUE_CTYPE_CHALLENGE, GUE_CHALLENGE_LEN },
		{ GUE_CTYPE_RESPONSE, GUE_CHALLENGE_LEN },
		{ GUE_CTYPE_CLOSE, 0 },
		{ GUE_CTYPE_PQ_REFUSE, GUE_PQ_REFUSE_LEN },
	};
	uint8_t b[GUE_WORD_LEN + GUE_CHALLENGE_LEN + 1];
	struct gue_inner in;
	size_t i;

	ck_assert_int_eq(GUE_CHALLENGE_LEN, 8);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		memset(b, 0x11, sizeof(b));
		gue_control_encode(b, ok[i].ctype);
		ck_assert_uint_eq(b[0], 0x20);
		ck_assert_uint_eq(b[1], ok[i].ctype);
		ck_assert_uint_eq(b[2], 0);
		ck_assert_uint_eq(b[3], 0);
		ck_assert_uint_eq(b[4], 0x11);
		memset(&in, 0, sizeof(in));
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + ok[i].len,
		    &in), GUE_OK);
		ck_assert_int_eq(in.kind, GUE_KIND_CONTROL);
		ck_assert_uint_eq(in.proto, ok[i].ctype);
		ck_assert_ptr_eq(in.payload, b + GUE_WORD_LEN);
		ck_assert_uint_eq(in.len, ok[i].len);
	}
}
END_TEST

/* The ML-KEM-768 exchange's messages (pqmsg.h): their body sizes. */
START_TEST(test_control_pq)
{
	static const struct {
		uint8_t ctype;
		size_t len;
		enum gue_err want;
	} c[] = {
		{ GUE_CTYPE_PQ_INIT, 0, GUE_ERR_CONTROL_LEN },
		{ GUE_CTYPE_PQ_INIT, 2, GUE_ERR_CONTROL_LEN },   /* an offset, no byte */
		{ GUE_CTYPE_PQ_INIT, 3, GUE_OK },
		{ GUE_CTYPE_PQ_INIT, 2 + 1184, GUE_OK },
		{ GUE_CTYPE_PQ_REPLY, 0, GUE_ERR_CONTROL_LEN },
		{ GUE_CTYPE_PQ_REPLY, 1087, GUE_ERR_CONTROL_LEN },
		{ GUE_CTYPE_PQ_REPLY, 1088, GUE_OK },
		{ GUE_CTYPE_PQ_REPLY, 1089, GUE_ERR_CONTROL_LEN },
		{ GUE_CTYPE_PQ_REFUSE, 0, GUE_ERR_CONTROL_LEN },
		{ GUE_CTYPE_PQ_REFUSE, 1, GUE_OK },
		{ GUE_CTYPE_PQ_REFUSE, 2, GUE_ERR_CONTROL_LEN },
		{ GUE_CTYPE_PQ_CONFIRM, 0, GUE_OK },
		{ GUE_CTYPE_PQ_CONFIRM, 1, GUE_ERR_CONTROL_LEN },
	};
	static uint8_t b[GUE_WORD_LEN + 2 + 1184];
	struct gue_inner in;
	size_t i;

	ck_assert_int_eq(GUE_CTYPE_PQ_INIT, 5);
	ck_assert_int_eq(GUE_CTYPE_PQ_REPLY, 6);
	ck_assert_int_eq(GUE_CTYPE_PQ_REFUSE, 7);
	ck_assert_int_eq(GUE_CTYPE_PQ_CONFIRM, 8);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		gue_control_encode(b, c[i].ctype);
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + c[i].len, &in), c[i].want);
		if (c[i].want == GUE_OK) {
			ck_assert_int_eq(in.kind, GUE_KIND_CONTROL);
			ck_assert_uint_eq(in.proto, c[i].ctype);
			ck_assert_uint_eq(in.len, c[i].len);
		}
	}
}
END_TEST

START_TEST(test_control_unknown)
{
	static const uint8_t bad[] = { 0, 9, 17, 59, 128, 255 };
	uint8_t b[GUE_WORD_LEN + GUE_CHALLENGE_LEN];
	struct gue_inner in;
	size_t i;

	memset(b, 0, sizeof(b));
	for (i = 0; i < sizeof(bad); i++) {
		gue_control_encode(b, bad[i]);
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN, &in),
		    GUE_ERR_CONTROL);
		ck_assert_int_eq(gue_inner_decode(b, sizeof(b), &in),
		    GUE_ERR_CONTROL);
	}
}
END_TEST

START_TEST(test_control_len)
{
	uint8_t b[GUE_WORD_LEN + 2 * GUE_CHALLENGE_LEN];
	struct gue_inner in;
	size_t body;

	memset(b, 0, sizeof(b));
	for (body = 0; body <= 2 * GUE_CHALLENGE_LEN; body++) {
		gue_control_encode(b, GUE_CTYPE_KEEPALIVE);
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + body, &in),
		    body == 0 ? GUE_OK : GUE_ERR_CONTROL_LEN);
		gue_control_encode(b, GUE_CTYPE_CLOSE);
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + body, &in),
		    body == 0 ? GUE_OK : GUE_ERR_CONTROL_LEN);
		gue_control_encode(b, GUE_CTYPE_CHALLENGE);
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + body, &in),
		    body == GUE_CHALLENGE_LEN ? GUE_OK : GUE_ERR_CONTROL_LEN);
		gue_control_encode(b, GUE_CTYPE_RESPONSE);
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + body, &in),
		    body == GUE_CHALLENGE_LEN ? GUE_OK : GUE_ERR_CONTROL_LEN);
		gue_control_encode(b, GUE_CTYPE_PQ_REFUSE);
		ck_assert_int_eq(gue_inner_decode(b, GUE_WORD_LEN + body, &in),
		    body == GUE_PQ_REFUSE_LEN ? GUE_OK : GUE_ERR_CONTROL_LEN);
	}
}
END_TEST

/* ---- DTLS prefilter ---- */

START_TEST(test_dtls_ok)
{
	static uint8_t b[DTLS_HDR + DTLS_MAX + 1];
	uint8_t type, ct;
	size_t len;

	for (type = 20; type <= 23; type++) {
		len = dtls_raw(b, type, 0xfefd, 48, 48);
		ct = 0;
		ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_OK);
		ck_assert_uint_eq(ct, type);
	}
	/* A ClientHello record may say DTLS 1.0. */
	len = dtls_raw(b, 22, 0xfeff, 200, 200);
	ct = 0;
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_OK);
	ck_assert_uint_eq(ct, 22);
	/* content_type is optional. */
	ck_assert_int_eq(gue_dtls_prefilter(b, len, NULL), GUE_DTLS_OK);
}
END_TEST

START_TEST(test_dtls_truncated)
{
	uint8_t b[DTLS_HDR];
	uint8_t ct;
	size_t len;

	dtls_raw(b, 23, 0xfefd, 0, 0);
	for (len = 0; len < DTLS_HDR; len++)
		ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct),
		    GUE_DTLS_TRUNCATED);
	/* A bare 13-byte header announcing an empty fragment fits. */
	ck_assert_int_eq(gue_dtls_prefilter(b, DTLS_HDR, &ct), GUE_DTLS_OK);
}
END_TEST

START_TEST(test_dtls_type)
{
	static const uint8_t bad[] = { 0, 1, 19, 24, 25, 0x45, 0x60, 255 };
	uint8_t b[DTLS_HDR + 16];
	uint8_t ct;
	size_t i, len;

	for (i = 0; i < sizeof(bad); i++) {
		len = dtls_raw(b, bad[i], 0xfefd, 16, 16);
		ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_TYPE);
	}
}
END_TEST

START_TEST(test_dtls_version)
{
	static const uint16_t bad[] = {
		0x0303, 0x0301, 0xfefc, 0xfefe, 0xfdfd, 0x0000, 0xffff,
	};
	uint8_t b[DTLS_HDR + 16];
	uint8_t ct, type;
	size_t i, len;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (type = 20; type <= 23; type++) {
			len = dtls_raw(b, type, bad[i], 16, 16);
			ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct),
			    GUE_DTLS_VERSION);
		}
	}
	/* DTLS 1.0 only for handshake records, and for the alert that
	 * refuses a 1.0 hello. */
	len = dtls_raw(b, 20, 0xfeff, 16, 16);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_VERSION);
	len = dtls_raw(b, 21, 0xfeff, 2, 2);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_OK);
	ck_assert_uint_eq(ct, 21);
	len = dtls_raw(b, 23, 0xfeff, 16, 16);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_VERSION);
}
END_TEST

START_TEST(test_dtls_length)
{
	uint8_t b[2 * (DTLS_HDR + 32)];
	uint8_t ct;
	size_t len;

	/* Length one short, one long. */
	len = dtls_raw(b, 23, 0xfefd, 31, 32);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_LENGTH);
	len = dtls_raw(b, 23, 0xfefd, 33, 32);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_LENGTH);
	/* Header alone announcing a body that is not there. */
	len = dtls_raw(b, 22, 0xfefd, 1, 0);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_LENGTH);
	/* Two records in one datagram. */
	len = dtls_raw(b, 23, 0xfefd, 32, 32);
	len += dtls_raw(b + len, 23, 0xfefd, 32, 32);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_LENGTH);
	ck_assert_int_eq(gue_dtls_prefilter(b, len / 2, &ct), GUE_DTLS_OK);
}
END_TEST

START_TEST(test_dtls_max)
{
	static uint8_t b[DTLS_HDR + 65535];
	uint8_t ct;
	size_t len;

	len = dtls_raw(b, 23, 0xfefd, DTLS_MAX, DTLS_MAX);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_OK);
	len = dtls_raw(b, 23, 0xfefd, DTLS_MAX + 1, DTLS_MAX + 1);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_LENGTH);
	len = dtls_raw(b, 23, 0xfefd, 0xffff, 0xffff);
	ck_assert_int_eq(gue_dtls_prefilter(b, len, &ct), GUE_DTLS_LENGTH);
}
END_TEST

START_TEST(test_outer_then_dtls)
{
	uint8_t b[GUE_OUTER_LEN + DTLS_HDR + 24];
	uint64_t sid = 0;
	uint8_t ct = 0;
	size_t len;

	gue_outer_encode(b, 0x1122334455667788ULL);
	len = GUE_OUTER_LEN + dtls_raw(b + GUE_OUTER_LEN, 23, 0xfefd, 24, 24);
	ck_assert_uint_eq(len, sizeof(b));
	ck_assert_int_eq(gue_outer_decode(b, len, &sid), GUE_OK);
	ck_assert_uint_eq(sid, 0x1122334455667788ULL);
	ck_assert_int_eq(gue_dtls_prefilter(b + GUE_OUTER_LEN,
	    len - GUE_OUTER_LEN, &ct), GUE_DTLS_OK);
	ck_assert_uint_eq(ct, 23);
}
END_TEST

static Suite *
gue_suite(void)
{
	Suite *s;
	TCase *tc;

	s = suite_create("gue");

	tc = tcase_create("names");
	tcase_add_test(tc, test_err_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("outer");
	tcase_add_test(tc, test_outer_encode_bytes);
	tcase_add_test(tc, test_outer_round_trip);
	tcase_add_test(tc, test_outer_truncated);
	tcase_add_test(tc, test_outer_variant);
	tcase_add_test(tc, test_outer_control);
	tcase_add_test(tc, test_outer_hlen);
	tcase_add_test(tc, test_outer_proto);
	tcase_add_test(tc, test_outer_flags);
	tcase_add_test(tc, test_outer_private_flags);
	tcase_add_test(tc, test_outer_zero_session);
	suite_add_tcase(s, tc);

	tc = tcase_create("inner");
	tcase_add_test(tc, test_compact_round_trip);
	tcase_add_test(tc, test_compact_empty);
	tcase_add_test(tc, test_compact_zero_proto);
	tcase_add_test(tc, test_inner_truncated);
	tcase_add_test(tc, test_inner_hlen);
	tcase_add_test(tc, test_inner_flags);
	tcase_add_test(tc, test_inner_outer_header_refused);
	tcase_add_test(tc, test_inner_ip);
	tcase_add_test(tc, test_inner_variant);
	tcase_add_test(tc, test_control_round_trip);
	tcase_add_test(tc, test_control_pq);
	tcase_add_test(tc, test_control_unknown);
	tcase_add_test(tc, test_control_len);
	suite_add_tcase(s, tc);

	tc = tcase_create("dtls");
	tcase_add_test(tc, test_dtls_ok);
	tcase_add_test(tc, test_dtls_truncated);
	tcase_add_test(tc, test_dtls_type);
	tcase_add_test(tc, test_dtls_version);
	tcase_add_test(tc, test_dtls_length);
	tcase_add_test(tc, test_dtls_max);
	tcase_add_test(tc, test_outer_then_dtls);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	return check_run(gue_suite());
}
