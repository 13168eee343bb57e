/* check_record.c - toud's record layer against OpenSSL's.
 *
 * Two OpenSSL DTLS 1.2 endpoints (memory BIOs, a throwaway P-256
 * certificate made in memory) complete a handshake with one cipher suite
 * forced through the cipher list.  The records OpenSSL itself seals are
 * the known answers: record.c, keyed from the same handshake, must open
 * them (both directions), and OpenSSL must open what record.c seals.  Then
 * tampered records, the replay window at its edges, the end of the
 * sequence space, sealing in two steps (framed, then finished out of
 * order by a sealer that outlives its direction) and opening in three
 * (checked, unsealed, accepted). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "record.h"
#include "replay.h"

#include "testutil.h"

#define RECMAX 2048

struct suite_case {
	const char *openssl;            /* cipher list */
	enum record_cipher cipher;
	size_t overhead;
};

static const struct suite_case cases[] = {
	{ "ECDHE-ECDSA-AES128-GCM-SHA256", RECORD_AES128_GCM, 37 },
	{ "ECDHE-ECDSA-AES256-GCM-SHA384", RECORD_AES256_GCM, 37 },
	{ "ECDHE-ECDSA-CHACHA20-POLY1305", RECORD_CHACHA20_POLY1305, 29 },
};

struct pair {
	SSL_CTX *cctx, *sctx;
	SSL *c, *s;
	BIO *c_in, *c_out, *s_in, *s_out;       /* each side's rbio and wbio */
	struct record_keys ck, sk;              /* client_write, server_write */
	enum record_cipher cipher;
};

static EVP_PKEY *key;
static X509 *cert;

/* Outside any test (main): a failure aborts. */
static void
make_cert(void)
{
	X509_NAME *n;

	if ((key = EVP_EC_gen("P-256")) == NULL || (cert = X509_new()) == NULL)
		abort();
	ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(cert), -60);
	X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
	n = X509_get_subject_name(cert);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"t", -1, -1, 0);
	X509_set_issuer_name(cert, n);
	X509_set_pubkey(cert, key);
	if (X509_sign(cert, key, EVP_sha256()) <= 0)
		abort();
}

static SSL_CTX *
ctx_new(const char *ciphers, bool server)
{
	SSL_CTX *ctx = SSL_CTX_new(DTLS_method());

	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION), 1);
	ck_assert_int_eq(SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION), 1);
	ck_assert_int_eq(SSL_CTX_set_cipher_list(ctx, ciphers), 1);
	ck_assert_int_eq(SSL_CTX_set1_groups_list(ctx, "X25519:P-256"), 1);
	SSL_CTX_set_options(ctx, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET);
	SSL_CTX_set_read_ahead(ctx, 0);
	if (server) {
		ck_assert_int_eq(SSL_CTX_use_certificate(ctx, cert), 1);
		ck_assert_int_eq(SSL_CTX_use_PrivateKey(ctx, key), 1);
	}
	return ctx;
}

static SSL *
ssl_new(SSL_CTX *ctx, BIO **in, BIO **out)
{
	SSL *ssl = SSL_new(ctx);

	ck_assert_ptr_nonnull(ssl);
	*in = BIO_new(BIO_s_mem());
	*out = BIO_new(BIO_s_mem());
	ck_assert(*in != NULL && *out != NULL);
	BIO_set_mem_eof_return(*in, -1);
	BIO_set_mem_eof_return(*out, -1);
	SSL_set_bio(ssl, *in, *out);
	ck_assert_int_eq(DTLS_set_link_mtu(ssl, 1500), 1);
	return ssl;
}

/* Move what one side wrote to the other, one record per BIO_write (a
 * memory BIO read by DTLS is one datagram per write). */
static int
shuttle(BIO *from, BIO *to)
{
	uint8_t buf[16384], *p;
	int n, moved = 0;
	size_t left, rl;

	while ((n = BIO_read(from, buf, sizeof(buf))) > 0) {
		for (p = buf, left = (size_t)n; left >= RECORD_HDR; p += rl, left -= rl) {
			rl = RECORD_HDR + ((size_t)p[11] << 8 | p[12]);
			ck_assert_uint_le(rl, left);
			ck_assert_int_eq(BIO_write(to, p, (int)rl), (int)rl);
			moved++;
		}
	}
	return moved;
}

static void
pair_up(struct pair *p, const struct suite_case *sc)
{
	uint8_t master[48], cr[32], sr[32], master2[48];
	const SSL_CIPHER *ciph;
	int i, rc = 0, rs = 0;

	memset(p, 0, sizeof(*p));
	p->cctx = ctx_new(sc->openssl, false);
	p->sctx = ctx_new(sc->openssl, true);
	p->c = ssl_new(p->cctx, &p->c_in, &p->c_out);
	p->s = ssl_new(p->sctx, &p->s_in, &p->s_out);
	SSL_set_connect_state(p->c);
	SSL_set_accept_state(p->s);
	for (i = 0; i < 32 && (rc != 1 || rs != 1); i++) {
		rc = SSL_do_handshake(p->c);
		shuttle(p->c_out, p->s_in);
		rs = SSL_do_handshake(p->s);
		shuttle(p->s_out, p->c_in);
	}
	ck_assert_msg(rc == 1 && rs == 1, "handshake with %s", sc->openssl);
	ck_assert_str_eq(SSL_get_cipher_name(p->c), sc->openssl);
	ciph = SSL_get_current_cipher(p->c);
	p->cipher = record_cipher_from_nid(SSL_CIPHER_get_cipher_nid(ciph));
	ck_assert_int_eq(p->cipher, sc->cipher);
	ck_assert_uint_eq(record_overhead(p->cipher), sc->overhead);
	/* both ends agree on the master secret; either one keys record.c */
	ck_assert_uint_eq(SSL_SESSION_get_master_key(SSL_get_session(p->c), master, 48), 48);
	ck_assert_uint_eq(SSL_SESSION_get_master_key(SSL_get_session(p->s), master2, 48), 48);
	ck_assert_mem_eq(master, master2, 48);
	ck_assert_uint_eq(SSL_get_client_random(p->c, cr, 32), 32);
	ck_assert_uint_eq(SSL_get_server_random(p->c, sr, 32), 32);
	ck_assert_int_eq(record_keys_derive(p->cipher,
	    EVP_MD_get0_name(SSL_CIPHER_get_handshake_digest(ciph)), master, 48, cr, sr,
	    &p->ck, &p->sk), 0);
	ck_assert_int_ne(memcmp(p->ck.key, p->sk.key, p->ck.key_len), 0);
}

static void
pair_free(struct pair *p)
{
	SSL_free(p->c);
	SSL_free(p->s);
	SSL_CTX_free(p->cctx);
	SSL_CTX_free(p->sctx);
}

/* One record OpenSSL seals on `from`, taken out of its wbio. */
static size_t
openssl_seal(SSL *from, BIO *out, const uint8_t *msg, size_t len, uint8_t rec[RECMAX])
{
	int n;

	ck_assert_int_eq(SSL_write(from, msg, (int)len), (int)len);
	n = BIO_read(out, rec, RECMAX);
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(RECORD_HDR + ((size_t)rec[11] << 8 | rec[12]), (size_t)n);
	ck_assert_int_eq(BIO_ctrl_pending(out), 0);
	return (size_t)n;
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void
put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void
fill(uint8_t *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 131 + seed);
}

static enum record_status
open1(struct record_rx *rx, const uint8_t *rec, size_t len, uint8_t *out, size_t *outlen)
{
	struct record_msg m = { .in = rec, .in_len = len, .out = out, .out_cap = RECMAX };

	ck_assert_uint_eq(record_open(rx, &m, 1), m.status == RECORD_OK);
	*outlen = m.out_len;
	return m.status;
}

/* ---- known answers: OpenSSL's records ------------------------------- */

static void
kat_direction(struct pair *p, SSL *from, BIO *from_out, const struct record_keys *k)
{
	static const size_t sizes[] = { 1, 64, 1400 };
	uint8_t msg[16384], rec[RECMAX * 9], out[16384];
	struct record_rx rx;
	struct record_msg m;
	size_t i, n, len;

	ck_assert_int_eq(record_rx_init(&rx, k, 1), 0);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		fill(msg, sizes[i], (unsigned)i);
		n = openssl_seal(from, from_out, msg, sizes[i], rec);
		ck_assert_uint_eq(n, sizes[i] + record_overhead(p->cipher));
		ck_assert_int_eq(rec[0], 23);
		ck_assert_int_eq(rec[3] << 8 | rec[4], 1);      /* epoch 1 */
		ck_assert_int_eq(open1(&rx, rec, n, out, &len), RECORD_OK);
		ck_assert_uint_eq(len, sizes[i]);
		ck_assert_mem_eq(out, msg, len);
		ck_assert_int_eq(open1(&rx, rec, n, out, &len), RECORD_ERR_DUP);
	}
	/* in place, on a fresh record */
	fill(msg, 300, 7);
	n = openssl_seal(from, from_out, msg, 300, rec);
	m = (struct record_msg){ .in = rec, .in_len = n, .out = rec + record_prefix(p->cipher),
	    .out_cap = n - record_prefix(p->cipher) };
	ck_assert_uint_eq(record_open(&rx, &m, 1), 1);
	ck_assert_uint_eq(m.out_len, 300);
	ck_assert_mem_eq(rec + record_prefix(p->cipher), msg, 300);
	ck_assert_uint_eq(rx.opened, ARRAY_SIZE(sizes) + 1);
	ck_assert_uint_eq(rx.failed, 0);
	record_rx_free(&rx);
}

/* Sort n sealed records (and their messages) by wire sequence number. */
static void
wire_order(uint8_t (*recs)[RECMAX], struct record_msg *m, size_t n)
{
	uint8_t tmp[RECMAX];
	struct record_msg tm;
	size_t i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && get64(recs[j - 1] + 3) > get64(recs[j] + 3); j--) {
			memcpy(tmp, recs[j], RECMAX);
			memcpy(recs[j], recs[j - 1], RECMAX);
			memcpy(recs[j - 1], tmp, RECMAX);
			tm = m[j];
			m[j] = m[j - 1];
			m[j - 1] = tm;
			m[j].out = recs[j];
			m[j - 1].out = recs[j - 1];
		}
}

/* record.c seals, OpenSSL opens: the wire is the same. */
static void
reverse_direction(struct pair *p, SSL *to, BIO *to_in, const struct record_keys *k)
{
	uint8_t msg[1400], out[1400];
	uint8_t recs[5][RECMAX];
	struct record_msg m[5];
	struct record_tx tx;
	size_t i;
	int n;

	ck_assert_int_eq(record_tx_init(&tx, k, 1, RECORD_SEQ_START, 0x1122334455667788ULL), 0);
	fill(msg, sizeof(msg), 3);
	for (i = 0; i < 4; i++)
		m[i] = (struct record_msg){ .in = msg, .in_len = 100 + 400 * i,
		    .out = recs[i], .out_cap = RECMAX };
	m[3].in_len = 1400;
	ck_assert_uint_eq(record_seal(&tx, m, 4), 4);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(m[i].status, RECORD_OK);
		ck_assert_uint_eq(m[i].out_len, m[i].in_len + record_overhead(p->cipher));
		ck_assert_uint_eq(m[i].seq, (uint64_t)1 << 48 | (RECORD_SEQ_START + i));
		/* on the wire, through the permutations (record.h) */
		ck_assert_uint_eq(get64(recs[i] + 3), (uint64_t)1 << 48 | RECORD_SEQ_START |
		    record_perm(&tx.seq_perm, 47, i));
		if (record_prefix(p->cipher) > RECORD_HDR)     /* nonce_explicit */
			ck_assert_uint_eq(get64(recs[i] + RECORD_HDR),
			    get64(recs[i] + 3) * RECORD_NONCE_MUL);
	}
	/* in place */
	memcpy(recs[4] + record_prefix(p->cipher), msg, 500);
	m[4] = (struct record_msg){ .in = recs[4] + record_prefix(p->cipher), .in_len = 500,
	    .out = recs[4], .out_cap = RECMAX };
	ck_assert_uint_eq(record_seal(&tx, m + 4, 1), 1);
	ck_assert_uint_eq(tx.sealed, 5);
	/* OpenSSL's window refuses what is older than its newest - 64: give
	 * it the records in the order of their wire sequence numbers. */
	wire_order(recs, m, 5);
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(BIO_write(to_in, recs[i], (int)m[i].out_len), (int)m[i].out_len);
		n = SSL_read(to, out, sizeof(out));
		ck_assert_int_eq(n, (int)m[i].in_len);
		ck_assert_mem_eq(out, msg, (size_t)n);
	}
	record_tx_free(&tx);
	ck_assert_uint_eq(ERR_peek_error(), 0);
}

START_TEST(known_answers)
{
	const struct suite_case *sc = &cases[_i];
	struct pair p;

	pair_up(&p, sc);
	kat_direction(&p, p.c, p.c_out, &p.ck);         /* client -> server */
	kat_direction(&p, p.s, p.s_out, &p.sk);         /* server -> client */
	reverse_direction(&p, p.s, p.s_in, &p.ck);
	reverse_direction(&p, p.c, p.c_in, &p.sk);
	/* the wrong direction's key does not open */
	{
		uint8_t msg[10] = "direction", rec[RECMAX], out[RECMAX];
		struct record_rx rx;
		size_t n, len;

		ck_assert_int_eq(record_rx_init(&rx, &p.sk, 1), 0);
		n = openssl_seal(p.c, p.c_out, msg, sizeof(msg), rec);
		ck_assert_int_eq(open1(&rx, rec, n, out, &len), RECORD_ERR_AUTH);
		ck_assert_uint_eq(rx.failed, 1);
		record_rx_free(&rx);
	}
	pair_free(&p);
}
END_TEST

/* ---- known answers: records computed from the RFCs alone ------------- */

static size_t
unhex(const char *h, uint8_t *out, size_t cap)
{
	size_t n = strlen(h) / 2, i;
	unsigned v;

	ck_assert_uint_eq(strlen(h) % 2, 0);
	ck_assert_uint_le(n, cap);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(sscanf(h + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

/* tests/unit/data/record/vectors.txt (make-vectors.py): the key block from
 * the master secret and randoms, the record opened, and sealed again from
 * its plaintext with the same numbers, byte for byte. */
START_TEST(rfc_vectors)
{
	static char line[16384], f[10][8192];
	uint8_t master[48], cr[32], sr[32], plain[4096], rec[RECMAX], out[RECMAX];
	struct record_keys ck, sk, *k;
	struct record_tx tx;
	struct record_rx rx;
	struct record_msg m;
	char path[4096];
	size_t plen, rlen;
	unsigned long long epoch, seq, nonce;
	int cid, nvec = 0;
	FILE *fp;

	fp = fopen(check_data_path(path, sizeof(path), "record/vectors.txt"), "r");
	ck_assert_msg(fp != NULL, "%s", path);
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		ck_assert_int_eq(sscanf(line, "%8191s %8191s %8191s %8191s %8191s %8191s %8191s "
		    "%8191s %8191s %8191s", f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8],
		    f[9]), 10);
		cid = atoi(f[0]);
		ck_assert_uint_eq(unhex(f[2], master, sizeof(master)), 48);
		ck_assert_uint_eq(unhex(f[3], cr, sizeof(cr)), 32);
		ck_assert_uint_eq(unhex(f[4], sr, sizeof(sr)), 32);
		epoch = strtoull(f[5], NULL, 16);
		seq = strtoull(f[6], NULL, 16);
		nonce = strtoull(f[7], NULL, 16);
		plen = unhex(f[8], plain, sizeof(plain));
		rlen = unhex(f[9], rec, sizeof(rec));
		ck_assert_int_eq(record_keys_derive((enum record_cipher)cid,
		    cid == RECORD_AES256_GCM ? "SHA384" : "SHA256", master, 48, cr, sr, &ck, &sk), 0);
		k = f[1][0] == 'c' ? &ck : &sk;
		ck_assert_int_eq(record_rx_init(&rx, k, (uint16_t)epoch), 0);
		ck_assert_int_eq(open1(&rx, rec, rlen, out, &plen), RECORD_OK);
		ck_assert_mem_eq(out, plain, plen);
		/* framed with toud's numbers, then given the vector's */
		ck_assert_int_eq(record_tx_init(&tx, k, (uint16_t)epoch, RECORD_SEQ_START, 0), 0);
		m = (struct record_msg){ .in = plain, .in_len = plen, .out = out, .out_cap = RECMAX };
		ck_assert_int_eq(record_frame(&tx, &m), RECORD_OK);
		ck_assert_uint_eq(m.out_len, rlen);
		put64(out + 3, epoch << 48 | seq);
		if (record_prefix(tx.cipher) > RECORD_HDR)
			put64(out + RECORD_HDR, nonce);
		ck_assert_int_eq(record_finish(tx.sealer, out, m.out_len), RECORD_OK);
		ck_assert_mem_eq(out, rec, rlen);
		/* the other direction's key does not open it */
		record_rx_free(&rx);
		ck_assert_int_eq(record_rx_init(&rx, k == &ck ? &sk : &ck, (uint16_t)epoch), 0);
		ck_assert_int_eq(open1(&rx, rec, rlen, out, &plen), RECORD_ERR_AUTH);
		record_rx_free(&rx);
		record_tx_free(&tx);
		nvec++;
	}
	fclose(fp);
	ck_assert_int_eq(nvec, 9);
}
END_TEST

/* ---- tampering -------------------------------------------------------- */

START_TEST(tampered)
{
	const struct suite_case *sc = &cases[_i];
	uint8_t msg[200], rec[RECMAX], t[RECMAX], out[RECMAX];
	struct record_rx rx;
	struct pair p;
	size_t n, len, i;

	pair_up(&p, sc);
	ck_assert_int_eq(record_rx_init(&rx, &p.ck, 1), 0);
	fill(msg, sizeof(msg), 9);
	n = openssl_seal(p.c, p.c_out, msg, sizeof(msg), rec);
#define TRY(expect) do { \
		ck_assert_int_eq(open1(&rx, t, n, out, &len), (expect)); \
		ck_assert_uint_eq(len, 0); \
	} while (0)
	/* every bit of the protected part: nonce, ciphertext, tag */
	for (i = RECORD_HDR; i < n; i++) {
		memcpy(t, rec, n);
		t[i] ^= (uint8_t)(1 << (i % 8));
		TRY(RECORD_ERR_AUTH);
	}
	/* the tag alone */
	memcpy(t, rec, n);
	t[n - 1] ^= 0x80;
	TRY(RECORD_ERR_AUTH);
	/* the sequence number is authenticated (and in the ChaCha20 nonce) */
	for (i = 5; i < 11; i++) {
		memcpy(t, rec, n);
		t[i] ^= 0x01;
		TRY(RECORD_ERR_AUTH);
	}
	/* the epoch: another epoch is not these keys' */
	memcpy(t, rec, n);
	t[4] ^= 0x03;
	TRY(RECORD_ERR_EPOCH);
	memcpy(t, rec, n);
	t[3] = 0x80;
	TRY(RECORD_ERR_EPOCH);
	/* the header: type, version, length */
	memcpy(t, rec, n);
	t[0] = 22;
	TRY(RECORD_ERR_MALFORMED);
	memcpy(t, rec, n);
	t[2] ^= 0x02;
	TRY(RECORD_ERR_MALFORMED);
	memcpy(t, rec, n);
	t[12] ^= 0x01;
	TRY(RECORD_ERR_MALFORMED);
	/* a shorter record whose length says so: truncated tag */
	memcpy(t, rec, n);
	t[12] -= 1;
	ck_assert_int_eq(open1(&rx, t, n - 1, out, &len), RECORD_ERR_AUTH);
	/* too short for nonce and tag, truncated, empty */
	for (i = 0; i < record_overhead(p.cipher); i++) {
		memcpy(t, rec, RECORD_HDR);
		t[11] = 0;
		t[12] = (uint8_t)(i >= RECORD_HDR ? i - RECORD_HDR : 0);
		ck_assert_int_eq(open1(&rx, t, i, out, &len),
		    RECORD_ERR_MALFORMED);
	}
	ck_assert_int_eq(open1(&rx, rec, n - 1, out, &len), RECORD_ERR_MALFORMED);
	/* no room for the plaintext: refused before any work, not consumed */
	{
		struct record_msg m = { .in = rec, .in_len = n, .out = out, .out_cap = 199 };

		ck_assert_uint_eq(record_open(&rx, &m, 1), 0);
		ck_assert_int_eq(m.status, RECORD_ERR_SPACE);
	}
	/* none of the failures moved the window: the genuine record opens */
	ck_assert_uint_eq(rx.opened, 0);
	ck_assert_int_eq(open1(&rx, rec, n, out, &len), RECORD_OK);
	ck_assert_mem_eq(out, msg, sizeof(msg));
	/* and now its tampered copy is a duplicate, refused before the AEAD */
	memcpy(t, rec, n);
	t[n - 3] ^= 1;
	TRY(RECORD_ERR_DUP);
#undef TRY
	record_rx_free(&rx);
	pair_free(&p);
}
END_TEST

/* A batch: good and bad records mixed, each with its own status. */
START_TEST(batch)
{
	const struct suite_case *sc = &cases[_i];
	uint8_t recs[6][RECMAX], outs[6][RECMAX], msg[6][100];
	struct record_msg m[6];
	struct record_tx tx;
	struct record_rx rx;
	struct pair p;
	size_t i;

	pair_up(&p, sc);
	ck_assert_int_eq(record_tx_init(&tx, &p.ck, 1, 1000, 0), 0);
	ck_assert_int_eq(record_rx_init(&rx, &p.ck, 1), 0);
	for (i = 0; i < 6; i++) {
		fill(msg[i], sizeof(msg[i]), (unsigned)i);
		m[i] = (struct record_msg){ .in = msg[i], .in_len = sizeof(msg[i]),
		    .out = recs[i], .out_cap = RECMAX };
	}
	m[4].out_cap = 10;                      /* no room */
	m[2].in_len = 0;                        /* an empty record is a record */
	ck_assert_uint_eq(record_seal(&tx, m, 6), 5);
	ck_assert_int_eq(m[4].status, RECORD_ERR_SPACE);
	ck_assert_uint_eq(m[5].seq, (uint64_t)1 << 48 | 1004);  /* the failure used no number */
	recs[1][20] ^= 1;
	memcpy(recs[4], recs[0], m[0].out_len);  /* a duplicate of the first */
	m[4].out_len = m[0].out_len;
	for (i = 0; i < 6; i++)
		m[i] = (struct record_msg){ .in = recs[i], .in_len = m[i].out_len,
		    .out = outs[i], .out_cap = RECMAX };
	ck_assert_uint_eq(record_open(&rx, m, 6), 4);
	ck_assert_int_eq(m[0].status, RECORD_OK);
	ck_assert_int_eq(m[1].status, RECORD_ERR_AUTH);
	ck_assert_int_eq(m[4].status, RECORD_ERR_DUP);
	ck_assert_int_eq(m[5].status, RECORD_OK);
	ck_assert_mem_eq(outs[5], msg[5], sizeof(msg[5]));
	ck_assert_int_eq(m[2].status, RECORD_OK);
	ck_assert_uint_eq(m[2].out_len, 0);
	/* the plaintext at the start of the output buffer (overlapping the
	 * header): moved before the header is written */
	memcpy(recs[0], msg[3], sizeof(msg[3]));
	m[0] = (struct record_msg){ .in = recs[0], .in_len = sizeof(msg[3]), .out = recs[0],
	    .out_cap = RECMAX };
	ck_assert_uint_eq(record_seal(&tx, m, 1), 1);
	m[0] = (struct record_msg){ .in = recs[0], .in_len = m[0].out_len, .out = outs[0],
	    .out_cap = RECMAX };
	ck_assert_uint_eq(record_open(&rx, m, 1), 1);
	ck_assert_mem_eq(outs[0], msg[3], sizeof(msg[3]));
	record_tx_free(&tx);
	record_rx_free(&rx);
	pair_free(&p);
}
END_TEST

/* ---- the window ---------------------------------------------------- */

static enum replay_verdict
take(struct replay *w, uint64_t seq)
{
	enum replay_verdict v = replay_check(w, seq);

	if (v == REPLAY_OK)
		replay_update(w, seq);
	return v;
}

START_TEST(window_edges)
{
	struct replay w;
	uint64_t top, s;

	/* the first record may have any number, 0 included */
	replay_init(&w);
	ck_assert_int_eq(take(&w, 0), REPLAY_OK);
	ck_assert_int_eq(take(&w, 0), REPLAY_DUP);
	ck_assert_int_eq(take(&w, 1), REPLAY_OK);
	replay_init(&w);
	ck_assert_int_eq(take(&w, RECORD_SEQ_START), REPLAY_OK);
	ck_assert_int_eq(replay_check(&w, RECORD_SEQ_START - 1), REPLAY_OK);
	ck_assert_int_eq(replay_check(&w, RECORD_SEQ_START - REPLAY_WINDOW), REPLAY_OLD);

	/* exactly 4096 back is inside; the window's own edges */
	replay_init(&w);
	top = RECORD_SEQ_START + 100000;
	ck_assert_int_eq(take(&w, top), REPLAY_OK);
	ck_assert_int_eq(take(&w, top - 4096), REPLAY_OK);
	ck_assert_int_eq(take(&w, top - 4096), REPLAY_DUP);
	ck_assert_int_eq(take(&w, top - (REPLAY_WINDOW - 1)), REPLAY_OK);
	ck_assert_int_eq(take(&w, top - REPLAY_WINDOW), REPLAY_OLD);
	ck_assert_int_eq(take(&w, top - REPLAY_WINDOW - 1), REPLAY_OLD);
	ck_assert_int_eq(take(&w, 0), REPLAY_OLD);
	/* every number of the window, in reverse: each once */
	for (s = top - 1; s > top - REPLAY_WINDOW; s--)
		if (s != top - 4096 && s != top - (REPLAY_WINDOW - 1))
			ck_assert_int_eq(take(&w, s), REPLAY_OK);
	for (s = top; s > top - REPLAY_WINDOW; s--)
		ck_assert_int_eq(replay_check(&w, s), REPLAY_DUP);

	/* moving forward by one keeps the rest; the oldest falls out */
	ck_assert_int_eq(take(&w, top + 1), REPLAY_OK);
	ck_assert_int_eq(replay_check(&w, top - (REPLAY_WINDOW - 1)), REPLAY_OLD);
	ck_assert_int_eq(replay_check(&w, top - (REPLAY_WINDOW - 2)), REPLAY_DUP);
	/* a jump beyond the window forgets everything behind it, and the
	 * blocks reused for new numbers start empty */
	ck_assert_int_eq(take(&w, top + 1 + REPLAY_WINDOW + 64), REPLAY_OK);
	for (s = top + 2 + 64; s < top + 1 + REPLAY_WINDOW + 64; s += 61)
		ck_assert_int_eq(replay_check(&w, s), REPLAY_OK);
	ck_assert_int_eq(replay_check(&w, top + 1), REPLAY_OLD);
	/* a jump inside the ring clears exactly the blocks passed */
	replay_init(&w);
	ck_assert_int_eq(take(&w, 1000), REPLAY_OK);
	ck_assert_int_eq(take(&w, 990), REPLAY_OK);
	ck_assert_int_eq(take(&w, 1000 + 64 * 50 + 3), REPLAY_OK);
	ck_assert_int_eq(replay_check(&w, 990), REPLAY_DUP);
	ck_assert_int_eq(replay_check(&w, 1000), REPLAY_DUP);
	ck_assert_int_eq(replay_check(&w, 1001), REPLAY_OK);
	ck_assert_int_eq(replay_check(&w, 1000 + 64 * 50), REPLAY_OK);
}
END_TEST

/* The end of the 48-bit sequence space: the last number is sealed and
 * opened, then the sender stops, and nothing wraps to 0. */
START_TEST(window_wrap)
{
	uint8_t msg[32] = "the last one", rec[RECMAX], out[RECMAX];
	struct record_msg m = { .in = msg, .in_len = sizeof(msg), .out = rec, .out_cap = RECMAX };
	struct record_tx tx;
	struct record_rx rx;
	struct replay w;
	struct pair p;
	size_t len;

	replay_init(&w);
	ck_assert_int_eq(take(&w, RECORD_SEQ_MAX - 1), REPLAY_OK);
	ck_assert_int_eq(take(&w, RECORD_SEQ_MAX), REPLAY_OK);
	ck_assert_int_eq(take(&w, RECORD_SEQ_MAX), REPLAY_DUP);
	ck_assert_int_eq(take(&w, 0), REPLAY_OLD);
	ck_assert_int_eq(take(&w, RECORD_SEQ_MAX - REPLAY_WINDOW), REPLAY_OLD);
	ck_assert_int_eq(take(&w, RECORD_SEQ_MAX - REPLAY_WINDOW + 1), REPLAY_OK);

	pair_up(&p, &cases[0]);
	ck_assert_int_ne(record_tx_init(&tx, &p.ck, 1, RECORD_SEQ_MAX + 1, 0), 0);
	record_tx_free(&tx);
	ck_assert_int_eq(record_tx_init(&tx, &p.ck, 1, RECORD_SEQ_MAX, 0), 0);
	ck_assert_int_eq(record_rx_init(&rx, &p.ck, 1), 0);
	ck_assert_uint_eq(record_seal(&tx, &m, 1), 1);
	ck_assert_uint_eq(m.seq, (uint64_t)1 << 48 | RECORD_SEQ_MAX);
	ck_assert_int_eq(rec[4], 1);                    /* the epoch did not change */
	ck_assert_int_eq(open1(&rx, rec, m.out_len, out, &len), RECORD_OK);
	ck_assert_mem_eq(out, msg, sizeof(msg));
	m.out_len = 0;
	ck_assert_uint_eq(record_seal(&tx, &m, 1), 0);
	ck_assert_int_eq(m.status, RECORD_ERR_EXHAUSTED);
	ck_assert_uint_eq(m.out_len, 0);
	ck_assert_uint_eq(tx.sealed, 1);
	ck_assert_uint_eq(tx.seq, RECORD_SEQ_MAX + 1);
	ck_assert_uint_eq(record_seal(&tx, &m, 1), 0);
	ck_assert_int_eq(m.status, RECORD_ERR_EXHAUSTED);
	record_tx_free(&tx);
	record_rx_free(&rx);
	pair_free(&p);
}
END_TEST

/* The permutations against vectors from an independent implementation
 * (SipHash-2-4 and the Feistel network of record.c written out in
 * Python), under the key 00 01 .. 0f. */
START_TEST(perm_vectors)
{
	static const struct {
		unsigned bits;
		uint64_t x, y;
	} v[] = {
		{ 47, UINT64_C(0x0000000000000000), UINT64_C(0x00005d9dcd51cf84) },
		{ 47, UINT64_C(0x0000000000000001), UINT64_C(0x000012e415ff4c4c) },
		{ 47, UINT64_C(0x00007fffffffffff), UINT64_C(0x00007c39e8c33915) },
		{ 64, UINT64_C(0x0000000000000000), UINT64_C(0xa778c22dcf7526e9) },
		{ 64, UINT64_C(0x0000000000000001), UINT64_C(0x4cdd4ecbcfef3775) },
		{ 64, UINT64_C(0x0123456789abcdef), UINT64_C(0xa082f84ad860e758) },
		{ 64, UINT64_C(0xffffffffffffffff), UINT64_C(0x029087aba3947b8a) },
	};
	struct record_perm p;
	uint8_t pk[16];
	size_t i;

	for (i = 0; i < sizeof(pk); i++)
		pk[i] = (uint8_t)i;
	record_perm_init(&p, pk);
	for (i = 0; i < ARRAY_SIZE(v); i++) {
		ck_assert_uint_eq(record_perm(&p, v[i].bits, v[i].x), v[i].y);
		ck_assert_uint_eq(record_perm_inv(&p, v[i].bits, v[i].y), v[i].x);
	}
}
END_TEST

static int
cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorted in place: the number of values that occur more than once. */
static size_t
repeats(uint64_t *v, size_t n)
{
	size_t i, r = 0;

	qsort(v, n, sizeof(*v), cmp64);
	for (i = 1; i < n; i++)
		r += v[i] == v[i - 1];
	return r;
}

/* A bijection on every small domain (exhaustively), the inverse its
 * inverse there and on the two that are used (samples). */
START_TEST(perm_bijective)
{
	static uint64_t out[1 << 12];
	struct record_perm p;
	uint8_t pk[16];
	uint64_t x, y, n;
	unsigned bits, i;

	for (i = 0; i < sizeof(pk); i++)
		pk[i] = (uint8_t)(0xa5 ^ i * 7);
	record_perm_init(&p, pk);
	for (bits = 1; bits <= 12; bits++) {
		n = UINT64_C(1) << bits;
		for (x = 0; x < n; x++) {
			out[x] = y = record_perm(&p, bits, x);
			ck_assert_uint_lt(y, n);
			ck_assert_uint_eq(record_perm_inv(&p, bits, y), x);
		}
		ck_assert_uint_eq(repeats(out, n), 0);
		if (bits >= 8)          /* not the identity */
			ck_assert_uint_ne(record_perm(&p, bits, 1) + 1, record_perm(&p, bits, 2));
	}
	for (x = 1, i = 0; i < 10000; i++, x = x * UINT64_C(6364136223846793005) + 1442695040888963407) {
		y = record_perm(&p, 64, x);
		ck_assert_uint_eq(record_perm_inv(&p, 64, y), x);
		y = record_perm(&p, 47, x >> 17);
		ck_assert_uint_lt(y, UINT64_C(1) << 47);
		ck_assert_uint_eq(record_perm_inv(&p, 47, y), x >> 17);
	}
}
END_TEST

/* The permutation keys: the TLS 1.2 PRF with toud's label, known answers
 * from `openssl kdf -keylen 32 -kdfopt digest:SHA256 (SHA384)
 * -kdfopt hexsecret:0102..30 -kdfopt hexseed:<label>6566..84c9ca..e8
 * TLS1-PRF` (master secret 1..48, client random 101..132, server random
 * 201..232). */
START_TEST(perm_key_kat)
{
	static const char *want[2] = {
		"75E5F3B7F307AB9D2F20251321E30D2C3FD8FC3DE2E5DBF33F70569953C409A2",
		"898A14807B4BAEF801052CBA4F118E343E6780B422E4D8402CF5FDB7C448956E",
	};
	static const char *md[2] = { "SHA256", "SHA384" };
	uint8_t ms[48], cr[32], sr[32], got[32];
	struct record_keys c, s;
	char hex[65];
	size_t i, k;

	for (i = 0; i < 48; i++)
		ms[i] = (uint8_t)(1 + i);
	for (i = 0; i < 32; i++) {
		cr[i] = (uint8_t)(101 + i);
		sr[i] = (uint8_t)(201 + i);
	}
	for (k = 0; k < 2; k++) {
		ck_assert_int_eq(record_keys_derive(RECORD_AES128_GCM, md[k], ms, 48, cr, sr, &c, &s),
		    0);
		memcpy(got, c.perm_key, 16);
		memcpy(got + 16, s.perm_key, 16);
		for (i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02X", got[i]);
		ck_assert_str_eq(hex, want[k]);
	}
}
END_TEST

/* Keys c and s are the output key material want cut as the key block is
 * (keys of kl bytes, IVs of il), then the two numbering keys. */
static void
check_cut(const struct record_keys *c, const struct record_keys *s, const uint8_t *want,
    size_t kl, size_t il)
{
	size_t o = 2 * kl + 2 * il;

	ck_assert_uint_eq(c->key_len, kl);
	ck_assert_uint_eq(s->key_len, kl);
	ck_assert_uint_eq(c->iv_len, il);
	ck_assert_uint_eq(s->iv_len, il);
	ck_assert_mem_eq(c->key, want, kl);
	ck_assert_mem_eq(s->key, want + kl, kl);
	ck_assert_mem_eq(c->iv, want + 2 * kl, il);
	ck_assert_mem_eq(s->iv, want + 2 * kl + il, il);
	ck_assert_mem_eq(c->perm_key, want + o, 16);
	ck_assert_mem_eq(s->perm_key, want + o + 16, 16);
}

/* The keys of a session with a preshared key, against
 *   openssl kdf -keylen 72 (AES-128-GCM; 120 for ChaCha20-Poly1305)
 *     -kdfopt digest:SHA256 -kdfopt hexkey:000102..1f
 *     -kdfopt hexsalt:404142..5f -kdfopt "info:toud 1 preshared-key data keys" HKDF
 * (exporter output 0..31, preshared key 64..95), cut as the key block. */
START_TEST(psk_kat)
{
	static const char *okm =
	    "EBFB86AA981566FE328B3E18F3A8FA4A6536F8DF86E245971349481289E5"
	    "7A721505403CD0FE793AC180324E756C0BD64B7EFDA5A7711A8F85EB9FE1"
	    "D8D0111925A6608340EFFCAA38F316A49FF96126E49BDDD3627DE00DE171"
	    "263EC41C78206F7B94270C8B41793CA7F1D08BC8546422828E68AC9B1F5F";
	static const struct { enum record_cipher c; size_t kl, il; } cs[] = {
		{ RECORD_AES128_GCM, 16, 4 },
		{ RECORD_CHACHA20_POLY1305, 32, 12 },
	};
	uint8_t exp[32], psk[32], want[120];
	struct record_keys c, s;
	size_t i, k;

	ck_assert_uint_eq(strlen(okm), 2 * sizeof(want));
	for (k = 0; k < sizeof(want); k++)
		ck_assert_int_eq(sscanf(okm + 2 * k, "%2hhx", &want[k]), 1);
	for (i = 0; i < 32; i++) {
		exp[i] = (uint8_t)i;
		psk[i] = (uint8_t)(64 + i);
	}
	for (k = 0; k < ARRAY_SIZE(cs); k++) {
		size_t kl = cs[k].kl, il = cs[k].il;

		ck_assert_int_eq(record_keys_psk(cs[k].c, exp, psk, &c, &s), 0);
		check_cut(&c, &s, want, kl, il);
	}
	/* another preshared key, other keys */
	psk[0] ^= 1;
	ck_assert_int_eq(record_keys_psk(RECORD_AES128_GCM, exp, psk, &c, &s), 0);
	ck_assert(memcmp(c.key, want, 16) != 0);
	ck_assert_int_eq(record_keys_psk(0, exp, psk, &c, &s), -EINVAL);
}
END_TEST

/* The ML-KEM-768 schedule (doc/protocol.md 1.5) against
 *   openssl kdf -keylen 120 -kdfopt digest:SHA256 \
 *     -kdfopt hexkey:<exporter 00..1f><ss 80..9f> [-kdfopt hexsalt:<psk 40..5f>] \
 *     -kdfopt info:"toud 1 ml-kem-768 data keys" HKDF
 * with and without a preshared key. */
START_TEST(pq_kat)
{
	static const char *okm[2] = {
	    /* with the preshared key as salt */
	    "C9834C55134D3B3F28171C521F9FA701A008F7A2C3FA78362868D3E21A3B6845"
	    "4F7155C0C762CC51870AA4A9CE31C39904AFCBD99A50C79A5BF471665AD9058A"
	    "34906F7F5AFD16DE78949D183E921D2353A9DE95249F5D7AEA194C8A33607353"
	    "141A621910B542B48684EBD9C22E55FEE015F3E95199DA8F",
	    /* without: no salt */
	    "FED2FCBBE5411F6996586998ADA1B3977D5E2D83C7B5C8AEC7EA15C87C771BD2"
	    "49962D56B073C02772B3B74DAB9E6A369CA1CED467E61A00A5293BEDEA4FB866"
	    "50541AD73D89EFBD664D032523BCB7479C2033BA3165620811BB1EAAB75FFE3F"
	    "79C5FA480AB00C01C927F17593E30037AD1D8B0519289DAF",
	};
	static const struct { enum record_cipher c; size_t kl, il; } cs[] = {
		{ RECORD_AES128_GCM, 16, 4 },
		{ RECORD_AES256_GCM, 32, 4 },
		{ RECORD_CHACHA20_POLY1305, 32, 12 },
	};
	uint8_t exp[32], ss[32], psk[32], want[120];
	struct record_keys c, s;
	size_t i, k, w;

	for (i = 0; i < 32; i++) {
		exp[i] = (uint8_t)i;
		psk[i] = (uint8_t)(64 + i);
		ss[i] = (uint8_t)(128 + i);
	}
	for (w = 0; w < 2; w++) {
		ck_assert_uint_eq(strlen(okm[w]), 2 * sizeof(want));
		for (k = 0; k < sizeof(want); k++)
			ck_assert_int_eq(sscanf(okm[w] + 2 * k, "%2hhx", &want[k]), 1);
		for (k = 0; k < ARRAY_SIZE(cs); k++) {
			size_t kl = cs[k].kl, il = cs[k].il;

			ck_assert_int_eq(record_keys_pq(cs[k].c, exp, ss, w == 0 ? psk : NULL,
			    &c, &s), 0);
			check_cut(&c, &s, want, kl, il);
		}
	}
	/* another shared secret, other keys; the preshared key's schedule
	 * is another one too */
	ss[0] ^= 1;
	ck_assert_int_eq(record_keys_pq(RECORD_AES128_GCM, exp, ss, NULL, &c, &s), 0);
	ck_assert(memcmp(c.key, want, 16) != 0);
	ck_assert_int_eq(record_keys_psk(RECORD_AES128_GCM, exp, psk, &c, &s), 0);
	ck_assert(memcmp(c.key, want, 16) != 0);
	ck_assert_int_eq(record_keys_pq(0, exp, ss, NULL, &c, &s), -EINVAL);
	ck_assert_int_eq(record_keys_pq(RECORD_AES128_GCM, exp, NULL, NULL, &c, &s), -EINVAL);
}
END_TEST

#define NUM_RECORDS 20000

/* The numbering of a real handshake's direction: its keys are what the
 * RFC 5705 exporter gives with toud's label; every sequence number and
 * nonce_explicit on the wire occurs once, the nonces keep clear of
 * OpenSSL's (one seq is skipped for that), the wire shows no constant
 * nonce - sequence and no run of neighbouring sequence numbers, and the
 * receiver recovers the count from the wire for its window. */
START_TEST(numbering)
{
	const struct suite_case *sc = &cases[_i];
	static uint64_t wseq[NUM_RECORDS], wnonce[NUM_RECORDS], diff[NUM_RECORDS];
	uint8_t msg[16] = "numbered", rec[RECMAX], out[RECMAX], ex[32];
	bool gcm = record_prefix(sc->cipher) > RECORD_HDR;
	struct record_perm np;
	struct record_tx tx;
	struct record_rx rx;
	struct pair p;
	uint64_t ossl, want = RECORD_SEQ_START;
	size_t i, near = 0, len;

	pair_up(&p, sc);
	ck_assert_int_eq(SSL_export_keying_material(p.c, ex, sizeof(ex), RECORD_PERM_LABEL,
	    strlen(RECORD_PERM_LABEL), NULL, 0, 0), 1);
	ck_assert_mem_eq(p.ck.perm_key, ex, 16);
	ck_assert_mem_eq(p.sk.perm_key, ex + 16, 16);
	/* OpenSSL's first nonce just below the one of the sixth record */
	record_perm_init(&np, p.ck.perm_key);
	ossl = ((uint64_t)1 << 48 | RECORD_SEQ_START | record_perm(&np, 47, 5)) * RECORD_NONCE_MUL - 3;
	ck_assert_int_eq(record_tx_init(&tx, &p.ck, 1, RECORD_SEQ_START, ossl), 0);
	ck_assert_int_eq(record_rx_init(&rx, &p.ck, 1), 0);
	for (i = 0; i < NUM_RECORDS; i++, want++) {
		struct record_msg m = { .in = msg, .in_len = sizeof(msg), .out = rec,
		    .out_cap = RECMAX };

		if (gcm && i == 5)
			want++;
		ck_assert_uint_eq(record_seal(&tx, &m, 1), 1);
		ck_assert_uint_eq(m.seq, (uint64_t)1 << 48 | want);
		wseq[i] = get64(rec + 3);
		ck_assert_uint_eq(wseq[i] >> 48, 1);
		ck_assert_uint_ge(wseq[i] & RECORD_SEQ_MAX, RECORD_SEQ_START);
		wnonce[i] = gcm ? get64(rec + RECORD_HDR) : 0;
		ck_assert_uint_ge(wnonce[i] - ossl, RECORD_OSSL_RECORDS);
		diff[i] = wnonce[i] - wseq[i];
		if (i > 0 && (wseq[i] - wseq[i - 1] + (UINT64_C(1) << 32)) < (UINT64_C(1) << 33))
			near++;
		ck_assert_int_eq(open1(&rx, rec, m.out_len, out, &len), RECORD_OK);
		ck_assert_mem_eq(out, msg, sizeof(msg));
		ck_assert_int_eq(open1(&rx, rec, m.out_len, out, &len), RECORD_ERR_DUP);
	}
	/* consecutive records within 2^32 of each other: 2^-14 by chance */
	ck_assert_uint_lt(near, 20);
	ck_assert_uint_eq(repeats(wseq, NUM_RECORDS), 0);
	if (gcm) {
		ck_assert_uint_eq(repeats(wnonce, NUM_RECORDS), 0);
		ck_assert_uint_eq(repeats(diff, NUM_RECORDS), 0);
	}
	ck_assert_uint_eq(rx.opened, NUM_RECORDS);
	record_tx_free(&tx);
	record_rx_free(&rx);
	pair_free(&p);
	ck_assert_uint_eq(ERR_peek_error(), 0);
}
END_TEST

/* Sealing in two steps, as the daemon does it (framed on the main loop,
 * encrypted on the sending thread): records finished out of order,
 * with one framed record never finished, and after the direction
 * itself was freed (the sealer lives on by its reference), all open; with
 * AES-GCM each carries the nonce it was framed with. */
START_TEST(frame_then_finish)
{
	const struct suite_case *sc = &cases[_i];
	const uint64_t nonce0 = 77;
	static const size_t order[] = { 3, 0, 2 };
	uint8_t msg[4][150], rec[4][RECMAX], out[RECMAX];
	struct record_msg m[4];
	struct record_sealer *seal;
	struct record_perm sperm;
	struct record_tx tx;
	struct record_rx rx;
	struct pair p;
	size_t k, i;

	pair_up(&p, sc);
	ck_assert_int_eq(record_tx_init(&tx, &p.ck, 1, RECORD_SEQ_START, nonce0), 0);
	for (i = 0; i < 4; i++) {
		fill(msg[i], sizeof(msg[i]), (unsigned)(10 + i));
		m[i] = (struct record_msg){ .in = msg[i], .in_len = sizeof(msg[i]), .out = rec[i],
		    .out_cap = RECMAX };
		ck_assert_int_eq(record_frame(&tx, &m[i]), RECORD_OK);
		ck_assert_uint_eq(m[i].out_len, sizeof(msg[i]) + sc->overhead);
	}
	ck_assert_uint_eq(m[3].seq, (uint64_t)1 << 48 | (RECORD_SEQ_START + 3));
	sperm = tx.seq_perm;
	seal = record_sealer_get(tx.sealer);
	record_tx_free(&tx);
	for (k = 0; k < ARRAY_SIZE(order); k++) {
		struct record_msg o;

		i = order[k];
		ck_assert_int_eq(record_finish(seal, rec[i], m[i].out_len), RECORD_OK);
		if (record_prefix(p.cipher) > RECORD_HDR)
			ck_assert_uint_eq(get64(rec[i] + RECORD_HDR),
			    ((uint64_t)1 << 48 | RECORD_SEQ_START |
			    record_perm(&sperm, 47, i)) * RECORD_NONCE_MUL);
		/* a receiver of its own for each: the window is not the point */
		ck_assert_int_eq(record_rx_init(&rx, &p.ck, 1), 0);
		o = (struct record_msg){ .in = rec[i], .in_len = m[i].out_len, .out = out,
		    .out_cap = sizeof(out) };
		ck_assert_uint_eq(record_open(&rx, &o, 1), 1);
		ck_assert_uint_eq(o.seq, m[i].seq);
		ck_assert_mem_eq(out, msg[i], sizeof(msg[i]));
		record_rx_free(&rx);
	}
	/* OpenSSL agrees on the newest */
	ck_assert_int_eq(BIO_write(p.s_in, rec[3], (int)m[3].out_len), (int)m[3].out_len);
	ck_assert_int_eq(SSL_read(p.s, out, sizeof(out)), (int)sizeof(msg[3]));
	ck_assert_mem_eq(out, msg[3], sizeof(msg[3]));
	/* a record whose length field lies is not sealed */
	ck_assert_int_eq(record_finish(seal, rec[1], m[1].out_len - 1), RECORD_ERR_MALFORMED);
	record_sealer_put(seal);
	pair_free(&p);
	ck_assert_uint_eq(ERR_peek_error(), 0);
}
END_TEST

/* Opening in three steps, as the daemon does it (checked and accepted on
 * the main loop, unsealed on the opening thread): two copies of a record
 * both pass the check before either is accepted, and only the first is;
 * a forged one is counted as failed when accepted; the opener outlives
 * its direction. */
START_TEST(open_in_steps)
{
	const struct suite_case *sc = &cases[_i];
	uint8_t msg[120], rec[3][RECMAX];
	struct record_msg m;
	struct record_opener *op;
	struct record_tx tx;
	struct record_rx rx;
	struct pair p;
	uint64_t seq[3];
	size_t pre = sc->overhead - RECORD_TAG, k;

	pair_up(&p, sc);
	ck_assert_int_eq(record_tx_init(&tx, &p.ck, 1, RECORD_SEQ_START, 5), 0);
	ck_assert_int_eq(record_rx_init(&rx, &p.ck, 1), 0);
	fill(msg, sizeof(msg), 9);
	m = (struct record_msg){ .in = msg, .in_len = sizeof(msg), .out = rec[0], .out_cap = RECMAX };
	ck_assert_uint_eq(record_seal(&tx, &m, 1), 1);
	memcpy(rec[1], rec[0], m.out_len);              /* a copy */
	memcpy(rec[2], rec[0], m.out_len);
	rec[2][m.out_len - 1] ^= 1;                     /* a forgery */
	for (k = 0; k < 3; k++)
		ck_assert_int_eq(record_check(&rx, rec[k], m.out_len, &seq[k]), RECORD_OK);
	ck_assert_uint_eq(seq[0], m.seq);
	op = record_opener_get(rx.opener);
	for (k = 0; k < 3; k++)
		ck_assert_int_eq(record_unseal(op, rec[k], m.out_len),
		    k < 2 ? RECORD_OK : RECORD_ERR_AUTH);
	ck_assert_mem_eq(rec[0] + pre, msg, sizeof(msg));
	ck_assert_uint_eq(rx.opened + rx.failed, 0);    /* unsealing counts nothing */
	ck_assert_int_eq(record_accept(&rx, seq[0], RECORD_OK), RECORD_OK);
	ck_assert_int_eq(record_accept(&rx, seq[1], RECORD_OK), RECORD_ERR_DUP);
	ck_assert_int_eq(record_accept(&rx, seq[2], RECORD_ERR_AUTH), RECORD_ERR_AUTH);
	ck_assert_uint_eq(rx.opened, 1);
	ck_assert_uint_eq(rx.failed, 1);
	/* the window refuses a third copy at the check */
	ck_assert_int_eq(record_check(&rx, rec[1], m.out_len, &seq[1]), RECORD_ERR_DUP);
	ck_assert_int_eq(record_check(&rx, rec[1], m.out_len - 1, &seq[1]), RECORD_ERR_MALFORMED);
	record_rx_free(&rx);
	/* the opener lives on by its reference */
	m = (struct record_msg){ .in = msg, .in_len = sizeof(msg), .out = rec[0], .out_cap = RECMAX };
	ck_assert_uint_eq(record_seal(&tx, &m, 1), 1);
	ck_assert_int_eq(record_unseal(op, rec[0], m.out_len), RECORD_OK);
	ck_assert_mem_eq(rec[0] + pre, msg, sizeof(msg));
	record_opener_put(op);
	record_tx_free(&tx);
	pair_free(&p);
	ck_assert_uint_eq(ERR_peek_error(), 0);
}
END_TEST

START_TEST(ciphers)
{
	struct record_keys a, b;
	uint8_t ms[48] = { 1 }, r1[32] = { 2 }, r2[32] = { 3 };

	ck_assert_int_eq(record_cipher_from_nid(NID_aes_128_gcm), RECORD_AES128_GCM);
	ck_assert_int_eq(record_cipher_from_nid(NID_aes_256_gcm), RECORD_AES256_GCM);
	ck_assert_int_eq(record_cipher_from_nid(NID_chacha20_poly1305), RECORD_CHACHA20_POLY1305);
	ck_assert_int_eq(record_cipher_from_nid(NID_aes_128_cbc), 0);
	ck_assert_ptr_null(record_cipher_name(0));
	ck_assert_uint_eq(record_prefix(RECORD_AES128_GCM), 21);
	ck_assert_uint_eq(record_prefix(RECORD_CHACHA20_POLY1305), 13);
	ck_assert_int_eq(record_keys_derive(0, "SHA256", ms, 48, r1, r2, &a, &b), -EINVAL);
	ck_assert_int_eq(record_keys_derive(RECORD_AES128_GCM, "SHA256", ms, 48, r1, r2, &a, &b), 0);
	ck_assert_uint_eq(a.key_len, 16);
	ck_assert_uint_eq(a.iv_len, 4);
	ck_assert_int_eq(record_keys_derive(RECORD_CHACHA20_POLY1305, "SHA256", ms, 48, r1, r2, &a,
	    &b), 0);
	ck_assert_uint_eq(a.key_len, 32);
	ck_assert_uint_eq(a.iv_len, 12);
	ck_assert_int_ne(record_keys_derive(RECORD_AES128_GCM, "NO-SUCH-MD", ms, 48, r1, r2, &a,
	    &b), 0);
	ck_assert_uint_eq(ERR_peek_error(), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("record");
	TCase *kat = tcase_create("openssl");
	TCase *win = tcase_create("window");
	int n = (int)ARRAY_SIZE(cases);

	make_cert();
	tcase_add_loop_test(kat, known_answers, 0, n);
	tcase_add_loop_test(kat, tampered, 0, n);
	tcase_add_loop_test(kat, batch, 0, n);
	tcase_add_loop_test(kat, numbering, 0, n);
	tcase_add_test(kat, perm_vectors);
	tcase_add_test(kat, perm_bijective);
	tcase_add_test(kat, perm_key_kat);
	tcase_add_test(kat, psk_kat);
	tcase_add_test(kat, pq_kat);
	tcase_add_loop_test(kat, frame_then_finish, 0, n);
	tcase_add_loop_test(kat, open_in_steps, 0, n);
	tcase_add_test(kat, ciphers);
	tcase_add_test(kat, rfc_vectors);
	tcase_set_timeout(kat, 60);
	tcase_add_test(win, window_edges);
	tcase_add_test(win, window_wrap);
	suite_add_tcase(s, kat);
	suite_add_tcase(s, win);
	n = check_run(s);
	X509_free(cert);
	EVP_PKEY_free(key);
	return n;
}
