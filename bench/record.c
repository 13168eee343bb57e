/* bench/record.c - seal + open of one record, toud's record code against
 * SSL_write / SSL_read, on the same DTLS 1.2 session.
 *
 * Two OpenSSL endpoints complete a handshake in memory (memory BIOs, a
 * throwaway P-256 certificate, the cipher suite forced by the cipher
 * list).  Then, for 1400-byte and 64-byte plaintexts:
 *   openssl: SSL_write on the client, the record out of its BIO and into
 *            the server's, SSL_read on the server (what toud did per packet);
 *   toud:    record_seal with the client's write key, record_open with the
 *            same key on a separate receive state (one record per call);
 *   batch:   the same, 32 records per record_seal / record_open call.
 * The variants take turns in ROUNDS chunks of N records each, so a busy
 * machine slows them alike; the table shows the median chunk in ns per
 * record (seal and open together) and the ratio openssl / toud.
 *
 * Usage: record [N [ROUNDS]]   (default 20000 records, 15 rounds) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "record.h"

#define BATCH 32
#define RECMAX 2048

static const char *const suites[] = {
	"ECDHE-ECDSA-AES128-GCM-SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305",
};

struct pair {
	SSL_CTX *cctx, *sctx;
	SSL *c, *s;
	BIO *c_in, *c_out, *s_in, *s_out;
	struct record_keys ck, sk;
};

static EVP_PKEY *key;
static X509 *cert;

static void
die(const char *what)
{
	fprintf(stderr, "record: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(1);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void
make_cert(void)
{
	X509_NAME *n;

	if ((key = EVP_EC_gen("P-256")) == NULL || (cert = X509_new()) == NULL)
		die("no key");
	ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(cert), -60);
	X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
	n = X509_get_subject_name(cert);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"b", -1, -1, 0);
	X509_set_issuer_name(cert, n);
	X509_set_pubkey(cert, key);
	if (X509_sign(cert, key, EVP_sha256()) <= 0)
		die("cannot sign");
}

static SSL *
endpoint(SSL_CTX **ctxp, const char *suite, int server, BIO **in, BIO **out)
{
	SSL_CTX *ctx = SSL_CTX_new(DTLS_method());
	SSL *ssl;

	if (ctx == NULL || !SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION) ||
	    !SSL_CTX_set_cipher_list(ctx, suite) ||
	    !SSL_CTX_set1_groups_list(ctx, "X25519:P-256"))
		die("SSL_CTX");
	SSL_CTX_set_options(ctx, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET);
	if (server && (SSL_CTX_use_certificate(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, key) != 1))
		die("certificate");
	if ((ssl = SSL_new(ctx)) == NULL || (*in = BIO_new(BIO_s_mem())) == NULL ||
	    (*out = BIO_new(BIO_s_mem())) == NULL)
		die("SSL");
	BIO_set_mem_eof_return(*in, -1);
	BIO_set_mem_eof_return(*out, -1);
	SSL_set_bio(ssl, *in, *out);
	DTLS_set_link_mtu(ssl, 1500);
	*ctxp = ctx;
	return ssl;
}

static void
shuttle(BIO *from, BIO *to)
{
	uint8_t buf[16384], *p;
	size_t left, rl;
	int n;

	while ((n = BIO_read(from, buf, sizeof(buf))) > 0)
		for (p = buf, left = (size_t)n; left >= RECORD_HDR; p += rl, left -= rl) {
			rl = RECORD_HDR + ((size_t)p[11] << 8 | p[12]);
			if (rl > left)
				die("short record");
			BIO_write(to, p, (int)rl);
		}
}

static void
pair_up(struct pair *p, const char *suite)
{
	uint8_t master[48], cr[32], sr[32];
	const SSL_CIPHER *ciph;
	int i, rc = 0, rs = 0;

	memset(p, 0, sizeof(*p));
	p->c = endpoint(&p->cctx, suite, 0, &p->c_in, &p->c_out);
	p->s = endpoint(&p->sctx, suite, 1, &p->s_in, &p->s_out);
	SSL_set_connect_state(p->c);
	SSL_set_accept_state(p->s);
	for (i = 0; i < 32 && (rc != 1 || rs != 1); i++) {
		rc = SSL_do_handshake(p->c);
		shuttle(p->c_out, p->s_in);
		rs = SSL_do_handshake(p->s);
		shuttle(p->s_out, p->c_in);
	}
	if (rc != 1 || rs != 1)
		die("handshake");
	ciph = SSL_get_current_cipher(p->c);
	if (SSL_SESSION_get_master_key(SSL_get_session(p->c), master, 48) != 48 ||
	    SSL_get_client_random(p->c, cr, 32) != 32 || SSL_get_server_random(p->c, sr, 32) != 32 ||
	    record_keys_derive(record_cipher_from_nid(SSL_CIPHER_get_cipher_nid(ciph)),
	    EVP_MD_get0_name(SSL_CIPHER_get_handshake_digest(ciph)), master, 48, cr, sr,
	    &p->ck, &p->sk) < 0)
		die("key block");
}

static void
pair_free(struct pair *p)
{
	SSL_free(p->c);
	SSL_free(p->s);
	SSL_CTX_free(p->cctx);
	SSL_CTX_free(p->sctx);
}

/* N records through OpenSSL; ns per record. */
static double
run_openssl(struct pair *p, const uint8_t *msg, size_t len, int n)
{
	static uint8_t rec[RECMAX], out[RECMAX];
	uint64_t t0 = now_ns();
	int i, r;

	for (i = 0; i < n; i++) {
		if (SSL_write(p->c, msg, (int)len) != (int)len)
			die("SSL_write");
		r = BIO_read(p->c_out, rec, sizeof(rec));
		if (r <= 0 || BIO_write(p->s_in, rec, r) != r)
			die("BIO");
		if (SSL_read(p->s, out, sizeof(out)) != (int)len)
			die("SSL_read");
	}
	return (double)(now_ns() - t0) / n;
}

/* N records through record.c, `batch` per call; ns per record. */
static double
run_toud(struct record_tx *tx, struct record_rx *rx, const uint8_t *msg, size_t len, int n,
    int batch)
{
	static uint8_t recs[BATCH][RECMAX], outs[BATCH][RECMAX];
	struct record_msg m[BATCH];
	uint64_t t0 = now_ns();
	int i, j;

	for (i = 0; i < n; i += batch) {
		for (j = 0; j < batch; j++)
			m[j] = (struct record_msg){ .in = msg, .in_len = len, .out = recs[j],
			    .out_cap = RECMAX };
		if (record_seal(tx, m, (size_t)batch) != (size_t)batch)
			die("record_seal");
		for (j = 0; j < batch; j++)
			m[j] = (struct record_msg){ .in = recs[j], .in_len = m[j].out_len,
			    .out = outs[j], .out_cap = RECMAX };
		if (record_open(rx, m, (size_t)batch) != (size_t)batch)
			die("record_open");
	}
	return (double)(now_ns() - t0) / n;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char **argv)
{
	static const size_t sizes[] = { 1400, 64 };
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	int rounds = argc > 2 ? atoi(argv[2]) : 15;
	double *o, *t, *b;
	uint8_t msg[1400];
	size_t si, ci;
	int r;

	if (n < BATCH || rounds < 1)
		die("usage: record [N >= 32 [ROUNDS >= 1]]");
	n -= n % BATCH;
	o = calloc((size_t)rounds, sizeof(*o));
	t = calloc((size_t)rounds, sizeof(*t));
	b = calloc((size_t)rounds, sizeof(*b));
	if (o == NULL || t == NULL || b == NULL)
		die("no memory");
	memset(msg, 0xa5, sizeof(msg));
	make_cert();
	printf("# %d records per chunk, %d chunks per variant, medians; %s\n", n, rounds,
	    OpenSSL_version(OPENSSL_VERSION));
	printf("| cipher | record | SSL_write+SSL_read ns/rec | toud seal+open ns/rec | ratio |"
	    " toud batch of %d ns/rec | ratio |\n", BATCH);
	printf("|---|---|---|---|---|---|---|\n");
	for (ci = 0; ci < sizeof(suites) / sizeof(suites[0]); ci++) {
		for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			struct record_tx tx;
			struct record_rx rx;
			struct pair p;
			double mo, mt, mb;

			pair_up(&p, suites[ci]);
			if (record_tx_init(&tx, &p.ck, 1, RECORD_SEQ_START, 0) < 0 ||
			    record_rx_init(&rx, &p.ck, 1) < 0)
				die("record init");
			run_openssl(&p, msg, sizes[si], n / 10);        /* warm up */
			run_toud(&tx, &rx, msg, sizes[si], n / 10, 1);
			for (r = 0; r < rounds; r++) {
				o[r] = run_openssl(&p, msg, sizes[si], n);
				t[r] = run_toud(&tx, &rx, msg, sizes[si], n, 1);
				b[r] = run_toud(&tx, &rx, msg, sizes[si], n, BATCH);
			}
			mo = median(o, rounds);
			mt = median(t, rounds);
			mb = median(b, rounds);
			printf("| %s | %zu B | %.0f | %.0f | %.2f | %.0f | %.2f |\n",
			    record_cipher_name(tx.cipher), sizes[si], mo, mt, mo / mt, mb, mo / mb);
			fflush(stdout);
			record_tx_free(&tx);
			record_rx_free(&rx);
			pair_free(&p);
		}
	}
	free(o);
	free(t);
	free(b);
	X509_free(cert);
	EVP_PKEY_free(key);
	return 0;
}
