/* check_tcp_psk.c - the TCP transport's frames under a preshared key
 * (tcp_psk.c): the keys against openssl kdf, the first frames against an
 * independent AES-GCM, round trips both ways, and every frame that must
 * not open: tampered, truncated, replayed, dropped, under other keys. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_psk.h"

#include "testutil.h"

/* HKDF output for exporter output 0..31 and preshared key 64..95:
 *   openssl kdf -keylen 88 -kdfopt digest:SHA256 -kdfopt hexkey:000102..1f
 *     -kdfopt hexsalt:404142..5f
 *     -kdfopt "info:toud 1 tcp preshared-key frame keys" HKDF */
static const char okm_hex[] =
    "6FFADBEF76955B4F06B97A1F26C479916752FFEF071D221FC0E0E7FFD1324336"
    "9992602B282DF4F109A420E9F9DF2F7838A2A1BDE5554A1573562766258DDDB3"
    "B24FC03874AD5ED622949BD9867FE296AE484457A14EDC21";

static void
unhex(const char *h, uint8_t *out, size_t n)
{
	size_t i;

	ck_assert_uint_eq(strlen(h), 2 * n);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(sscanf(h + 2 * i, "%2hhx", &out[i]), 1);
}

static void
kat_keys(struct tcp_psk_keys *k, uint8_t psk[TCP_PSK_LEN])
{
	uint8_t exp[TCP_PSK_EXPORTER_LEN];
	size_t i;

	for (i = 0; i < 32; i++) {
		exp[i] = (uint8_t)i;
		psk[i] = (uint8_t)(64 + i);
	}
	ck_assert_int_eq(tcp_psk_derive(exp, psk, k), 0);
}

/* A client and a server of one connection. */
static void
pair(struct tcp_psk *c, struct tcp_psk *s)
{
	struct tcp_psk_keys k;
	uint8_t psk[TCP_PSK_LEN];

	kat_keys(&k, psk);
	ck_assert_int_eq(tcp_psk_init(c, &k, true), 0);
	ck_assert_int_eq(tcp_psk_init(s, &k, false), 0);
}

START_TEST(keys_kat)
{
	uint8_t want[88], psk[TCP_PSK_LEN], exp[TCP_PSK_EXPORTER_LEN] = { 0 };
	struct tcp_psk_keys k, other;

	unhex(okm_hex, want, sizeof(want));
	kat_keys(&k, psk);
	ck_assert_mem_eq(k.client_key, want, 32);
	ck_assert_mem_eq(k.server_key, want + 32, 32);
	ck_assert_mem_eq(k.client_iv, want + 64, 12);
	ck_assert_mem_eq(k.server_iv, want + 76, 12);
	/* another preshared key, or another exporter: other keys */
	psk[0] ^= 1;
	for (size_t i = 0; i < 32; i++)
		exp[i] = (uint8_t)i;
	ck_assert_int_eq(tcp_psk_derive(exp, psk, &other), 0);
	ck_assert(memcmp(other.client_key, k.client_key, 32) != 0);
	psk[0] ^= 1;
	exp[31] ^= 1;
	ck_assert_int_eq(tcp_psk_derive(exp, psk, &other), 0);
	ck_assert(memcmp(other.client_key, k.client_key, 32) != 0);
	ck_assert_int_eq(tcp_psk_derive(NULL, psk, &other), -EINVAL);
}
END_TEST

/* The client's first two frames, against Python's cryptography AESGCM
 * with the key and IV above, nonce = IV XOR (0^32 || be64(n)). */
START_TEST(frames_kat)
{
	static const char *want[] = {
		"634b6335ab97036d9893488811bc13c6ff0c406309c613966456f02a",
		"e7d811d21201575b10d2c827e7ca649746dd03c80d3ea2c51acdf8cc",
	};
	struct tcp_psk c, s;
	uint8_t out[64], w[64];
	char msg[16];
	unsigned i;

	pair(&c, &s);
	for (i = 0; i < 2; i++) {
		snprintf(msg, sizeof(msg), "toud frame %u", i);
		ck_assert_int_eq(tcp_psk_seal(&c, (const uint8_t *)msg, 12, out),
		    12 + TCP_PSK_TAG_LEN);
		unhex(want[i], w, 12 + TCP_PSK_TAG_LEN);
		ck_assert_mem_eq(out, w, 12 + TCP_PSK_TAG_LEN);
		ck_assert(!s.opened || i > 0);
		ck_assert_int_eq(tcp_psk_open(&s, out, 12 + TCP_PSK_TAG_LEN), 12);
		ck_assert(s.opened);
		ck_assert_mem_eq(out, msg, 12);
	}
	tcp_psk_free(&c);
	tcp_psk_free(&s);
}
END_TEST

/* Many frames of every size both ways, in place too. */
START_TEST(round_trip)
{
	static uint8_t in[2000], buf[2000 + TCP_PSK_TAG_LEN];
	struct tcp_psk c, s;
	size_t len;

	pair(&c, &s);
	for (len = 0; len < sizeof(in); len += 7) {
		memset(in, (int)len, len);
		ck_assert_int_eq(tcp_psk_seal(&c, in, len, buf), (ssize_t)(len + TCP_PSK_TAG_LEN));
		ck_assert_int_eq(tcp_psk_open(&s, buf, len + TCP_PSK_TAG_LEN), (ssize_t)len);
		ck_assert_mem_eq(buf, in, len);
		/* the other way, sealed in place */
		memcpy(buf, in, len);
		ck_assert_int_eq(tcp_psk_seal(&s, buf, len, buf), (ssize_t)(len + TCP_PSK_TAG_LEN));
		ck_assert(len < 16 || memcmp(buf, in, len) != 0);
		ck_assert_int_eq(tcp_psk_open(&c, buf, len + TCP_PSK_TAG_LEN), (ssize_t)len);
		ck_assert_mem_eq(buf, in, len);
	}
	tcp_psk_free(&c);
	tcp_psk_free(&s);
	tcp_psk_free(&c);               /* twice, and on a zeroed one: harmless */
}
END_TEST

/* Each byte flipped, the tag cut short, the frame cut to nothing: none
 * opens, and a refused frame does not move the receiver on. */
START_TEST(tamper)
{
	uint8_t msg[40], sealed[40 + TCP_PSK_TAG_LEN], buf[sizeof(sealed)];
	struct tcp_psk c, s;
	size_t i;

	memset(msg, 'x', sizeof(msg));
	pair(&c, &s);
	ck_assert_int_eq(tcp_psk_seal(&c, msg, sizeof(msg), sealed), (ssize_t)sizeof(sealed));
	for (i = 0; i < sizeof(sealed); i++) {
		memcpy(buf, sealed, sizeof(buf));
		buf[i] ^= 0x01;
		ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf)), -EBADMSG);
	}
	memcpy(buf, sealed, sizeof(buf));
	ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf) - 1), -EBADMSG);
	ck_assert_int_eq(tcp_psk_open(&s, buf, TCP_PSK_TAG_LEN - 1), -EBADMSG);
	ck_assert_int_eq(tcp_psk_open(&s, buf, 0), -EBADMSG);
	ck_assert(!s.opened);
	/* the untouched frame still opens: the failures did not count */
	memcpy(buf, sealed, sizeof(buf));
	ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf)), (ssize_t)sizeof(msg));
	ck_assert(s.opened);
	/* its own direction's key only: the sender cannot open its frame */
	ck_assert_int_eq(tcp_psk_seal(&c, msg, sizeof(msg), sealed), (ssize_t)sizeof(sealed));
	ck_assert_int_eq(tcp_psk_open(&c, sealed, sizeof(sealed)), -EBADMSG);
	tcp_psk_free(&c);
	tcp_psk_free(&s);
}
END_TEST

/* A frame replayed, one skipped, two swapped: none opens out of turn. */
START_TEST(replay)
{
	uint8_t f[3][8 + TCP_PSK_TAG_LEN], buf[8 + TCP_PSK_TAG_LEN];
	struct tcp_psk c, s;
	unsigned i;

	pair(&c, &s);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tcp_psk_seal(&c, (const uint8_t *)"payload!", 8, f[i]),
		    (ssize_t)sizeof(buf));
	memcpy(buf, f[0], sizeof(buf));
	ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf)), 8);
	memcpy(buf, f[0], sizeof(buf));
	ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf)), -EBADMSG);     /* replayed */
	memcpy(buf, f[2], sizeof(buf));
	ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf)), -EBADMSG);     /* 1 skipped */
	memcpy(buf, f[1], sizeof(buf));
	ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf)), 8);
	memcpy(buf, f[2], sizeof(buf));
	ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf)), 8);
	ck_assert_uint_eq(s.open.n, 3);
	ck_assert_uint_eq(c.seal.n, 3);
	/* the last number is never used */
	c.seal.n = UINT64_MAX;
	ck_assert_int_eq(tcp_psk_seal(&c, buf, 1, buf), -EOVERFLOW);
	tcp_psk_free(&c);
	tcp_psk_free(&s);
}
END_TEST

/* Different preshared keys: the first frame fails, and so does every
 * one after; the sides stay unopened. */
START_TEST(mismatch)
{
	uint8_t exp[TCP_PSK_EXPORTER_LEN] = { 7 }, pa[TCP_PSK_LEN] = { 1 }, pb[TCP_PSK_LEN] = { 2 };
	uint8_t buf[32 + TCP_PSK_TAG_LEN] = "keepalive";
	struct tcp_psk_keys ka, kb;
	struct tcp_psk c, s;
	unsigned i;

	ck_assert_int_eq(tcp_psk_derive(exp, pa, &ka), 0);
	ck_assert_int_eq(tcp_psk_derive(exp, pb, &kb), 0);
	ck_assert_int_eq(tcp_psk_init(&c, &ka, true), 0);
	ck_assert_int_eq(tcp_psk_init(&s, &kb, false), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(tcp_psk_seal(&c, buf, 32, buf), (ssize_t)sizeof(buf));
		ck_assert_int_eq(tcp_psk_open(&s, buf, sizeof(buf)), -EBADMSG);
	}
	ck_assert(!s.opened);
	tcp_psk_free(&c);
	tcp_psk_free(&s);
	/* a state never set up refuses */
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(tcp_psk_seal(&c, buf, 1, buf), -EINVAL);
	ck_assert_int_eq(tcp_psk_open(&c, buf, sizeof(buf)), -EINVAL);
	tcp_psk_free(&c);
}
END_TEST

static Suite *
tcp_psk_suite(void)
{
	Suite *s = suite_create("tcp_psk");
	TCase *tc = tcase_create("frames");

	tcase_add_test(tc, keys_kat);
	tcase_add_test(tc, frames_kat);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, tamper);
	tcase_add_test(tc, replay);
	tcase_add_test(tc, mismatch);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(tcp_psk_suite());
}
