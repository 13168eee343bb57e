/* check_pq.c - the names of key exchanges, the post-quantum refusal's
 * body and the words each end says of it (pq.h). */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pq.h"

#include "testutil.h"

START_TEST(group_names)
{
	static const char *const cases[][2] = {
		{ "X25519MLKEM768", "x25519mlkem768" }, { "X25519", "x25519" },
		{ "x25519", "x25519" }, { "prime256v1", "ecdhe-p256" },
		{ "secp256r1", "ecdhe-p256" }, { "P-256", "ecdhe-p256" },
		{ "secp384r1", "ecdhe-p384" }, { "SecP256r1MLKEM768", "secp256r1mlkem768" },
		{ "X448", "x448" },
	};
	char buf[PQ_NAME_MAX], small[4];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(pq_group_name(cases[i][0], buf, sizeof(buf)), cases[i][1]);
	ck_assert_str_eq(pq_group_name(NULL, buf, sizeof(buf)), "");
	ck_assert_str_eq(pq_group_name("X25519", small, sizeof(small)), "x25");
	ck_assert_str_eq(pq_tls_group_name(0x11ec), "X25519MLKEM768");
	ck_assert_str_eq(pq_tls_group_name(0x11eb), "SecP256r1MLKEM768");
	ck_assert_ptr_null(pq_tls_group_name(0x001d));
}
END_TEST

START_TEST(has_mlkem)
{
	ck_assert(pq_has_mlkem("x25519mlkem768"));
	ck_assert(pq_has_mlkem("ecdhe-p256 + ml-kem-768"));
	ck_assert(pq_has_mlkem("x25519 + ml-kem-768"));
	ck_assert(!pq_has_mlkem("x25519"));
	ck_assert(!pq_has_mlkem("ecdhe-p256"));
	ck_assert(!pq_has_mlkem(""));
	ck_assert(!pq_has_mlkem(NULL));
}
END_TEST

START_TEST(refusal_body)
{
	uint8_t b[PQ_REFUSAL_LEN];
	bool has = false;

	uint8_t two[2] = { 1, 0 };

	ck_assert_uint_eq(PQ_REFUSAL_LEN, 1);
	pq_refusal_encode(b, true, false);
	ck_assert_uint_eq(b[0], 0x01);
	ck_assert_int_eq(pq_refusal_decode(b, sizeof(b), &has), 0);
	ck_assert(has);
	pq_refusal_encode(b, true, true);
	ck_assert_uint_eq(b[0], 0x03);
	pq_refusal_encode(b, false, true);
	ck_assert_uint_eq(b[0], 0x02);
	ck_assert_int_eq(pq_refusal_decode(b, sizeof(b), &has), 0);
	ck_assert(!has);
	/* Flags a later version may add are ignored; another size is not a
	 * refusal. */
	b[0] = 0x81;
	ck_assert_int_eq(pq_refusal_decode(b, sizeof(b), &has), 0);
	ck_assert(has);
	ck_assert_int_lt(pq_refusal_decode(two, sizeof(two), &has), 0);
	ck_assert_int_lt(pq_refusal_decode(b, 0, &has), 0);
}
END_TEST

START_TEST(words)
{
	char buf[320];

	pq_why_refused(buf, sizeof(buf), "x25519", false, "3.0.17");
	ck_assert_str_eq(buf, "post-quantum = required, but this node's OpenSSL 3.0.17 has "
	    "no ML-KEM-768");
	pq_why_refused(buf, sizeof(buf), "x25519", true, "3.5.1");
	ck_assert_str_eq(buf, "post-quantum = required, but the key exchange (x25519) has no "
	    "ML-KEM-768: the peer's OpenSSL has none, or its post-quantum is off");
	pq_why_peer_refused(buf, sizeof(buf), true, false, "3.0.17", CONF_PQ_AUTO);
	ck_assert_str_eq(buf, "peer requires post-quantum key exchange (ML-KEM-768); this "
	    "node's OpenSSL 3.0.17 has none");
	pq_why_peer_refused(buf, sizeof(buf), true, true, "3.5.1", CONF_PQ_OFF);
	ck_assert_str_eq(buf, "peer requires post-quantum key exchange (ML-KEM-768); "
	    "post-quantum = off here");
	pq_why_peer_refused(buf, sizeof(buf), false, true, "3.5.1", CONF_PQ_AUTO);
	ck_assert_str_eq(buf, "peer requires post-quantum key exchange (ML-KEM-768), but its "
	    "own OpenSSL has none");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pq");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, group_names);
	tcase_add_test(tc, has_mlkem);
	tcase_add_test(tc, refusal_body);
	tcase_add_test(tc, words);
	suite_add_tcase(s, tc);
	return check_run(s);
}
