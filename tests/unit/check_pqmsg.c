/* check_pqmsg.c - the ML-KEM-768 exchange's messages: encoding, the split
 * of PQ_INIT, reassembly of the key from its pieces in any order, repeats
 * and contradictions; and the ML-KEM wrapper on whatever OpenSSL this
 * runs with. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "gue.h"
#include "mlkem.h"
#include "pqmsg.h"

#include "testutil.h"

static uint8_t ek[PQMSG_EK_LEN + 16];  /* room past the key: pieces that run over */

static void
fill(void)
{
	size_t i;

	for (i = 0; i < sizeof(ek); i++)
		ek[i] = (uint8_t)(i * 13 + 7);
}

START_TEST(encode)
{
	static uint8_t m[PQMSG_INIT_MAX + 8];
	uint8_t ct[PQMSG_CT_LEN];
	struct gue_inner in;
	size_t n, first;

	fill();
	n = pqmsg_init_encode(m, sizeof(m), ek, 0, PQMSG_EK_LEN);
	ck_assert_uint_eq(n, 6 + 1184);
	ck_assert_int_eq(gue_inner_decode(m, n, &in), GUE_OK);
	ck_assert_uint_eq(in.proto, GUE_CTYPE_PQ_INIT);
	ck_assert_uint_eq(bytes_get16(in.payload), 0);
	ck_assert_mem_eq(in.payload + 2, ek, PQMSG_EK_LEN);
	n = pqmsg_init_encode(m, sizeof(m), ek, 592, 592);
	ck_assert_uint_eq(bytes_get16(m + 4), 592);
	ck_assert_mem_eq(m + 6, ek + 592, 592);
	/* beyond the key, empty, or too little room */
	ck_assert_uint_eq(pqmsg_init_encode(m, sizeof(m), ek, 1184, 1), 0);
	ck_assert_uint_eq(pqmsg_init_encode(m, sizeof(m), ek, 1000, 185), 0);
	ck_assert_uint_eq(pqmsg_init_encode(m, sizeof(m), ek, 0, 0), 0);
	ck_assert_uint_eq(pqmsg_init_encode(m, 100, ek, 0, 95), 0);
	memset(ct, 0x5a, sizeof(ct));
	ck_assert_uint_eq(pqmsg_reply_encode(m, sizeof(m), ct), 4 + 1088);
	ck_assert_int_eq(gue_inner_decode(m, 4 + 1088, &in), GUE_OK);
	ck_assert_uint_eq(in.proto, GUE_CTYPE_PQ_REPLY);
	ck_assert_uint_eq(pqmsg_reply_encode(m, 1091, ct), 0);
	/* the split: whole where it fits, halves where they do, else none
	 * (a 1280-byte IPv6 path carries 1280 - 40 - 8 - 16 - 37 = 1179
	 * bytes of payload in an AES-GCM record: two halves) */
	ck_assert_uint_eq(pqmsg_init_split(1419, &first), 1);
	ck_assert_uint_eq(first, 1184);
	ck_assert_uint_eq(pqmsg_init_split(1190, &first), 1);
	ck_assert_uint_eq(pqmsg_init_split(1189, &first), 2);
	ck_assert_uint_eq(first, 592);
	ck_assert_uint_eq(pqmsg_init_split(1179, &first), 2);
	ck_assert_uint_eq(pqmsg_init_split(598, &first), 2);
	ck_assert_uint_eq(pqmsg_init_split(597, &first), 0);
}
END_TEST

static enum pqmsg_add
add(struct pqmsg_key *k, size_t off, size_t n, const uint8_t *src)
{
	uint8_t body[2 + PQMSG_EK_LEN + 4];

	bytes_put16(body, (uint16_t)off);
	memcpy(body + 2, src + off, n);
	return pqmsg_key_add(k, body, 2 + n);
}

START_TEST(reassembly)
{
	struct pqmsg_key k;
	uint8_t other[PQMSG_EK_LEN + 16];

	fill();
	/* whole, then repeated */
	pqmsg_key_init(&k);
	ck_assert(!pqmsg_key_complete(&k));
	ck_assert_int_eq(add(&k, 0, PQMSG_EK_LEN, ek), PQMSG_COMPLETE);
	ck_assert(pqmsg_key_complete(&k));
	ck_assert_mem_eq(k.ek, ek, PQMSG_EK_LEN);
	ck_assert_int_eq(add(&k, 0, PQMSG_EK_LEN, ek), PQMSG_REPEAT);
	ck_assert_int_eq(add(&k, 592, 592, ek), PQMSG_REPEAT);
	/* halves in either order, overlapping pieces */
	pqmsg_key_init(&k);
	ck_assert_int_eq(add(&k, 592, 592, ek), PQMSG_PARTIAL);
	ck_assert_int_eq(add(&k, 592, 592, ek), PQMSG_REPEAT);
	ck_assert_int_eq(add(&k, 500, 100, ek), PQMSG_PARTIAL);
	ck_assert_int_eq(add(&k, 0, 500, ek), PQMSG_COMPLETE);
	ck_assert_mem_eq(k.ek, ek, PQMSG_EK_LEN);
	/* a piece that contradicts one before it changes nothing */
	memcpy(other, ek, sizeof(other));
	other[700] ^= 1;
	pqmsg_key_init(&k);
	ck_assert_int_eq(add(&k, 592, 592, ek), PQMSG_PARTIAL);
	ck_assert_int_eq(add(&k, 0, PQMSG_EK_LEN, other), PQMSG_CONFLICT);
	ck_assert_uint_eq(k.n_have, 592);
	ck_assert_int_eq(add(&k, 0, 592, ek), PQMSG_COMPLETE);
	ck_assert_int_eq(add(&k, 0, PQMSG_EK_LEN, other), PQMSG_CONFLICT);
	ck_assert_mem_eq(k.ek, ek, PQMSG_EK_LEN);
	/* malformed: no byte, beyond the key */
	ck_assert_int_eq(pqmsg_key_add(&k, (const uint8_t *)"\0\0", 2), PQMSG_BAD);
	ck_assert_int_eq(pqmsg_key_add(&k, (const uint8_t *)"\x04\xa0x", 3), PQMSG_BAD);
	ck_assert_int_eq(add(&k, 1183, 2, ek), PQMSG_BAD);
}
END_TEST

/* With ML-KEM (OpenSSL 3.5): both ends get the same secret, a changed
 * ciphertext another one, an invalid key is refused.  Without (3.0):
 * every call says so. */
START_TEST(kem)
{
	uint8_t k[MLKEM_EK_LEN], ct[MLKEM_CT_LEN], ss1[MLKEM_SS_LEN], ss2[MLKEM_SS_LEN];
	struct evp_pkey_st *dk = NULL;

	ck_assert_ptr_nonnull(mlkem_openssl_version());
	if (!mlkem_available()) {
		ck_assert_int_eq(mlkem_keygen(&dk, k), -ENOTSUP);
		ck_assert_ptr_null(dk);
		memset(k, 0, sizeof(k));
		ck_assert_int_eq(mlkem_encap(k, ct, ss1), -ENOTSUP);
		ck_assert_int_eq(mlkem_decap(NULL, ct, ss1), -EINVAL);
		return;
	}
	ck_assert_int_eq(mlkem_keygen(&dk, k), 0);
	ck_assert_int_eq(mlkem_encap(k, ct, ss1), 0);
	ck_assert_int_eq(mlkem_decap(dk, ct, ss2), 0);
	ck_assert_mem_eq(ss1, ss2, MLKEM_SS_LEN);
	ct[100] ^= 1;
	ck_assert_int_eq(mlkem_decap(dk, ct, ss2), 0);
	ck_assert(memcmp(ss1, ss2, MLKEM_SS_LEN) != 0);
	/* a coefficient of 0xfff is no key (FIPS 203 7.2) */
	memset(k, 0xff, 384);
	ck_assert_int_eq(mlkem_encap(k, ct, ss1), -EINVAL);
	mlkem_free(dk);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pqmsg");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, encode);
	tcase_add_test(tc, reassembly);
	tcase_add_test(tc, kem);
	suite_add_tcase(s, tc);
	return check_run(s);
}
