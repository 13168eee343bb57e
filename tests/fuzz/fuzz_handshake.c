/* fuzz_handshake.c - libFuzzer harness for the server side of toud's DTLS
 * handshake (dtls.c: the stateless listener and its cookie, admission,
 * the certificate check, the hand-over of the records to record.c, the
 * sealing and opening after it), driven by a real OpenSSL client on memory
 * BIOs whose flights the input changes on the way.
 *
 * Every run is one handshake, the same one each time: OpenSSL draws its
 * random numbers from a fixed sequence restarted per run, and the keys
 * and certificates (made once, in memory) carry fixed dates.  The client
 * sends ClientHello, ClientHello with the cookie, Certificate,
 * ClientKeyExchange, CertificateVerify, ChangeCipherSpec and Finished,
 * then application data and close_notify; each record it sends has an
 * index (0, 1, 2, ... in that order), and the input says what happens to
 * which:
 *
 *   byte 0     the client: the cipher suite it offers, a key the server
 *              does not know or no certificate at all, nothing in common
 *              (cipher suites, groups, signature algorithms, version)
 *   byte 1     what follows the handshake: application data records
 *              (0-3, bits 0-1), close_notify (bit 2), a renegotiation
 *              attempt (bit 3); from the server: data (bit 4), sealed in
 *              place (bit 5), close_notify at the end (bit 6); the
 *              server's retransmission timer asked every round (bit 7)
 *   5 bytes    per edit: index, op, x, y, z.  Ops: drop the record,
 *              duplicate it, hold it back (behind the next, or to the
 *              end), flip a byte, set a field of the record header or of
 *              the handshake message header, truncate, extend, split a
 *              handshake message into two fragments, join it with the
 *              next record in one datagram, send it from another address
 *              (IPv4 or IPv6) or with another session ID, refuse its
 *              admission, open it in place, rotate the cookie secret
 *              (once or twice) before it arrives.
 *
 * FUZZ_HANDSHAKE_TRACE in the environment prints what each record met
 * (tests/fuzz/make-seeds.py writes the seeds).  What the server sends
 * reaches the client unchanged.  Invariants: a HelloVerifyRequest is never
 * larger than the request, and comes alone; the server completes only
 * with the client key it knows, only for a client that could (never with
 * nothing in common or a key it does not know), and then with the same
 * keys as the client (RFC 5705 exporter); application data comes out only
 * from the client's records, unchanged, each once, with their plaintext;
 * what the server seals the client opens, each once and in order; sealing
 * nothing, too much, or after the end is refused; no result is out of
 * range, no output without data, and nothing is left on OpenSSL's error
 * queue. */
#define OPENSSL_SUPPRESS_DEPRECATED     /* RAND_set_rand_method: fixed random numbers */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "bytes.h"
#include "dtls.h"
#include "keys.h"
#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LINK_MTU 1456
#define RECMAX 2048
#define QMAX 48
#define NEDIT 24
#define ROUNDS 24
#define NDATA 8
#define SID 0x1122334455667788ULL
#define LABEL "EXPORTER-fuzz"

/* --- fixed random numbers ----------------------------------------------- */

static uint64_t rng;

static int
rng_bytes(unsigned char *buf, int num)
{
	int i;

	for (i = 0; i < num; i++) {
		uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		buf[i] = (unsigned char)(z ^ (z >> 31));
	}
	return 1;
}

static int
rng_status(void)
{
	return 1;
}

static const RAND_METHOD rng_method = {
	.bytes = rng_bytes,
	.pseudorand = rng_bytes,
	.status = rng_status,
};

/* --- datagrams ---------------------------------------------------------- */

struct rec {
	uint8_t b[RECMAX];
	size_t len;
	unsigned idx;                   /* client records: the index edits name */
	uint8_t src;                    /* 0 the client's address, 1 another, 2 an IPv6 one */
	bool alt_sid, refuse, in_place, rotate;
};

struct queue {
	struct rec r[QMAX];
	size_t n;
};

/* A failed check names its line: the harness is built without frames. */
static void
check_at(int cond, int line)
{
	if (!cond) {
		fprintf(stderr, "fuzz_handshake.c:%d: check failed\n", line);
		abort();
	}
}
#define check(cond) check_at((cond), __LINE__)

static struct rec *
q_add(struct queue *q, const uint8_t *b, size_t len)
{
	struct rec *r;

	if (q->n == QMAX || len > RECMAX)
		return NULL;
	r = &q->r[q->n++];
	memcpy(r->b, b, len);
	r->len = len;
	r->idx = 0;
	r->src = 0;
	r->alt_sid = r->refuse = r->in_place = r->rotate = false;
	return r;
}

/* --- the client's variants ------------------------------------------------ */

enum client_key { KEY_KNOWN, KEY_UNKNOWN, KEY_NONE };

struct variant {
	const char *ciphers;
	const char *groups;
	const char *sigalgs;            /* NULL: OpenSSL's */
	int max_version;
	enum client_key key;
	bool can_complete;
};

#define ALL_CIPHERS "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" \
	"ECDHE-ECDSA-CHACHA20-POLY1305"

static const struct variant variants[] = {
	{ ALL_CIPHERS, "X25519:P-256", NULL, DTLS1_2_VERSION, KEY_KNOWN, true },
	{ "ECDHE-ECDSA-AES256-GCM-SHA384", "P-256", NULL, DTLS1_2_VERSION, KEY_KNOWN, true },
	{ "ECDHE-ECDSA-CHACHA20-POLY1305", "X25519:P-256", NULL, DTLS1_2_VERSION, KEY_KNOWN, true },
	{ ALL_CIPHERS, "X25519:P-256", NULL, DTLS1_2_VERSION, KEY_UNKNOWN, false },
	{ ALL_CIPHERS, "X25519:P-256", NULL, DTLS1_2_VERSION, KEY_NONE, false },
	{ "ECDHE-ECDSA-AES128-SHA256", "X25519:P-256", NULL, DTLS1_2_VERSION, KEY_KNOWN, false },
	{ ALL_CIPHERS, "P-384", NULL, DTLS1_2_VERSION, KEY_KNOWN, false },
	{ ALL_CIPHERS ":@SECLEVEL=0", "X25519:P-256", "ECDSA+SHA1", DTLS1_2_VERSION, KEY_KNOWN,
	    false },
	{ "ALL:@SECLEVEL=0", "X25519:P-256", NULL, DTLS1_VERSION, KEY_KNOWN, false },
};
#define NVARIANT (sizeof(variants) / sizeof(variants[0]))

/* --- the state ------------------------------------------------------------ */

struct sent {                           /* an application data record of the client */
	uint64_t seq;
	uint8_t rec[RECMAX];
	size_t len;
	uint8_t plain[64];
	size_t plen;
	bool opened;
};

struct edit {
	unsigned idx, op, x, y, z;
};

struct fuzz {
	char tmp[PATH_MAX];
	struct dtls_ctx *srv;
	SSL_CTX *cctx[NVARIANT];
	EVP_PKEY *ckey[3];             /* the client's, one the server does not know, the server's */
	X509 *ccert[3];
	uint8_t known_fp[DTLS_FP_LEN];
	int peer;                       /* the object authorize() maps the known key to */
	char keylog[PATH_MAX + 16];
	union sockaddr_union cli_addr, alt_addr, alt6_addr;

	/* one run */
	const struct variant *v;
	SSL *c;
	BIO *c_in, *c_out;
	struct dtls_sess *ss;
	struct queue c2s, s2c, held_end;
	struct queue lq;                /* HelloVerifyRequests of one dtls_listen_admit() */
	unsigned next_idx;
	struct edit edit[NEDIT];
	size_t nedit;
	struct sent sent[NDATA];
	size_t nsent;
	unsigned srv_sent, cli_got;
	bool srv_done;
	bool srv_got_data;              /* a record of the client opened */
	uint8_t srv_export[32];         /* taken at completion: OpenSSL goes later */
	bool refuse_next;
	bool rotated;                   /* the cookie secret changed: a new server context */
};

static struct fuzz *F;
static bool trace;                      /* FUZZ_HANDSHAKE_TRACE set: what happens, to stderr */

static void
q_out(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal)
{
	struct queue *q = arg;
	struct rec *r;

	(void)to;
	/* one whole record per datagram, within the MTU */
	check(len >= DTLS_RECORD_HDR && len <= LINK_MTU);
	check(DTLS_RECORD_HDR + (size_t)bytes_get16(rec + 11) == len);
	if ((r = q_add(q, rec, len)) != NULL && seal != NULL)
		check(record_finish(seal, r->b, len) == RECORD_OK);
}

/* dtls_listen_output_fn: the listener's answers go the same way. */
static void
q_listen_out(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to)
{
	(void)sid;
	q_out(arg, rec, len, to, NULL);
}

static void *
authorize(void *arg, const uint8_t fp[DTLS_FP_LEN], struct x509_store_ctx_st *xs)
{
	(void)arg;
	(void)xs;
	return memcmp(fp, F->known_fp, DTLS_FP_LEN) == 0 ? &F->peer : NULL;
}

static void *
admit(void *arg, const union sockaddr_union *from, size_t credit)
{
	(void)from;
	/* the cookie carries the size of the first ClientHello */
	check(credit >= DTLS_RECORD_HDR && credit <= RECMAX);
	if (F->refuse_next)
		return NULL;
	return arg;
}

/* --- set-up --------------------------------------------------------------- */

/* The files of the temporary directory, and it. */
static void
fuzz_cleanup(void)
{
	static const char *const files[] = { "key.pem", "cert.pem", "keylog" };
	char path[PATH_MAX + 16];
	size_t i;

	if (F == NULL)
		return;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", F->tmp, files[i]);
		(void)remove(path);
	}
	(void)rmdir(F->tmp);
}

/* A throwaway P-256 key and self-signed certificate with fixed dates, so
 * that every flight is the same at every run. */
static void
client_cert(int k)
{
	X509_NAME *n;

	check((F->ckey[k] = EVP_EC_gen("P-256")) != NULL && (F->ccert[k] = X509_new()) != NULL);
	ASN1_INTEGER_set(X509_get_serialNumber(F->ccert[k]), 1 + k);
	check(ASN1_TIME_set_string(X509_getm_notBefore(F->ccert[k]), "20260101000000Z") == 1);
	check(ASN1_TIME_set_string(X509_getm_notAfter(F->ccert[k]), "20360101000000Z") == 1);
	n = X509_get_subject_name(F->ccert[k]);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"fuzz", -1, -1, 0);
	X509_set_issuer_name(F->ccert[k], n);
	X509_set_pubkey(F->ccert[k], F->ckey[k]);
	check(X509_sign(F->ccert[k], F->ckey[k], EVP_sha256()) > 0);
}

static void
pem_write(const char *path, EVP_PKEY *key, X509 *cert)
{
	FILE *f = fopen(path, "w");

	check(f != NULL);
	if (key)
		check(PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1);
	else
		check(PEM_write_X509(f, cert) == 1);
	check(fclose(f) == 0);
}

static int
accept_any(X509_STORE_CTX *xs, void *arg)
{
	(void)xs;
	(void)arg;
	return 1;
}

static SSL_CTX *
client_ctx(const struct variant *v)
{
	SSL_CTX *ctx = SSL_CTX_new(DTLS_client_method());

	check(ctx != NULL);
	check(SSL_CTX_set_max_proto_version(ctx, v->max_version) == 1);
	check(SSL_CTX_set_cipher_list(ctx, v->ciphers) == 1);
	check(SSL_CTX_set1_groups_list(ctx, v->groups) == 1);
	if (v->sigalgs)
		check(SSL_CTX_set1_sigalgs_list(ctx, v->sigalgs) == 1);
	SSL_CTX_set_options(ctx, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, accept_any, NULL);
	if (v->key != KEY_NONE) {
		check(SSL_CTX_use_certificate(ctx, F->ccert[v->key]) == 1);
		check(SSL_CTX_use_PrivateKey(ctx, F->ckey[v->key]) == 1);
	}
	return ctx;
}

/* The server's context, its cookie secrets drawn from the fixed random
 * numbers: made again after a run that rotated them. */
static void
server_ctx(void)
{
	struct dtls_ctx_config cfg = {
		.authorize = authorize,
		.listen_output = q_listen_out,
		.listen_output_arg = &F->lq,
		.keylog_file = F->keylog,
		.link_mtu = LINK_MTU,
	};
	char key[PATH_MAX + 16], cert[PATH_MAX + 16], err[256];

	snprintf(key, sizeof(key), "%s/key.pem", F->tmp);
	snprintf(cert, sizeof(cert), "%s/cert.pem", F->tmp);
	cfg.private_key = key;
	cfg.certificate = cert;
	dtls_ctx_free(F->srv);
	rng = 0x636f6f6b6965;
	if ((F->srv = dtls_ctx_new(&cfg, err, sizeof(err))) == NULL) {
		fprintf(stderr, "dtls_ctx_new: %s\n", err);
		abort();
	}
	check(dtls_ctx_keylog_active(F->srv));
	F->rotated = false;
}

static void
fuzz_init(void)
{
	char path[PATH_MAX + 16];
	const char *t = getenv("TMPDIR");
	size_t i;

	F = calloc(1, sizeof(*F));
	check(F != NULL);
	check(RAND_set_rand_method(&rng_method) == 1);
	trace = getenv("FUZZ_HANDSHAKE_TRACE") != NULL;
	snprintf(F->tmp, sizeof(F->tmp), "%s/fuzz_handshake.XXXXXX", t != NULL && *t ? t : "/tmp");
	check(mkdtemp(F->tmp) != NULL);
	atexit(fuzz_cleanup);
	client_cert(0);
	client_cert(1);
	client_cert(2);
	snprintf(path, sizeof(path), "%s/key.pem", F->tmp);
	pem_write(path, F->ckey[2], NULL);
	snprintf(path, sizeof(path), "%s/cert.pem", F->tmp);
	pem_write(path, NULL, F->ccert[2]);
	/* the key log: written at every handshake, emptied after each run */
	snprintf(F->keylog, sizeof(F->keylog), "%s/keylog", F->tmp);
	server_ctx();
	check(keys_cert_fp(F->ccert[0], F->known_fp) == 0);
	for (i = 0; i < NVARIANT; i++)
		F->cctx[i] = client_ctx(&variants[i]);
	F->cli_addr.in.sin_family = F->alt_addr.in.sin_family = AF_INET;
	F->cli_addr.in.sin_port = htons(6080);
	F->alt_addr.in.sin_port = htons(6081);
	check(inet_pton(AF_INET, "192.0.2.1", &F->cli_addr.in.sin_addr) == 1);
	check(inet_pton(AF_INET, "192.0.2.9", &F->alt_addr.in.sin_addr) == 1);
	F->alt6_addr.in6.sin6_family = AF_INET6;
	F->alt6_addr.in6.sin6_port = htons(6080);
	check(inet_pton(AF_INET6, "2001:db8::1", &F->alt6_addr.in6.sin6_addr) == 1);
	ERR_clear_error();
}

/* --- the client ----------------------------------------------------------- */

/* What the client wrote, one record per datagram, numbered. */
static void
client_drain(void)
{
	static uint8_t buf[16 * RECMAX];
	size_t off = 0, n, len;
	struct rec *r;
	int got;

	while ((got = BIO_read(F->c_out, buf, sizeof(buf))) > 0) {
		for (off = 0, len = (size_t)got; off + DTLS_RECORD_HDR <= len; off += n) {
			n = DTLS_RECORD_HDR + bytes_get16(buf + off + 11);
			if (off + n > len)
				n = len - off;
			if ((r = q_add(&F->c2s, buf + off, n)) != NULL)
				r->idx = F->next_idx;
			F->next_idx++;
		}
	}
}

static void
client_step(void)
{
	uint8_t buf[RECMAX];
	int r, i;

	if (!SSL_is_init_finished(F->c)) {
		(void)SSL_do_handshake(F->c);
	} else {
		/* Application data from the server: each what it sealed, once,
		 * in order.  OpenSSL's window refuses a record numbered more
		 * than 64 below the newest it took, and toud's numbers follow
		 * no order on the wire (record.h): some may be missing. */
		for (i = 0; i < 8; i++) {
			if ((r = SSL_read(F->c, buf, sizeof(buf))) <= 0)
				break;
			check(r == 24 && memcmp(buf, "server data record ", 19) == 0);
			check((unsigned)(buf[19] - '0') >= F->cli_got);
			F->cli_got = (unsigned)(buf[19] - '0') + 1;
		}
	}
	ERR_clear_error();
	client_drain();
}

static void
client_send_data(unsigned k)
{
	struct sent *s = &F->sent[F->nsent];
	size_t before = F->c2s.n;
	struct rec *r;

	if (F->nsent == NDATA)
		return;
	s->plen = (size_t)snprintf((char *)s->plain, sizeof(s->plain),
	    "client data record %u, %.*s", k, (int)(k * 7 % 30), "abcdefghijklmnopqrstuvwxyz0123");
	if (SSL_write(F->c, s->plain, (int)s->plen) != (int)s->plen) {
		ERR_clear_error();
		return;
	}
	client_drain();
	if (F->c2s.n != before + 1)
		return;
	r = &F->c2s.r[before];
	s->seq = bytes_get64(r->b + 3);
	memcpy(s->rec, r->b, r->len);
	s->len = r->len;
	s->opened = false;
	F->nsent++;
}

/* --- the server ------------------------------------------------------------ */

static void
server_done(void)
{
	const uint8_t *fp = dtls_sess_peer_fp(F->ss);

	check(!F->srv_done);
	F->srv_done = true;
	check(F->v->can_complete);
	check(fp != NULL && memcmp(fp, F->known_fp, DTLS_FP_LEN) == 0);
	check(dtls_sess_established(F->ss) && dtls_sess_record_rx(F->ss) != NULL);
	check(dtls_sess_cipher(F->ss) != NULL);
	check(dtls_sess_export(F->ss, LABEL, F->srv_export, sizeof(F->srv_export)) == 0);
}

static void
server_data(const uint8_t *rec, size_t len, const uint8_t *out, size_t n, uint64_t seq)
{
	size_t i;

	for (i = 0; i < F->nsent; i++) {
		struct sent *s = &F->sent[i];

		if (s->seq != seq)
			continue;
		check(!s->opened);
		s->opened = true;
		check(len == s->len && memcmp(rec, s->rec, len) == 0);
		check(n == s->plen && memcmp(out, s->plain, n) == 0);
		return;
	}
	abort();                        /* data the client never sent */
}

static void
server_input(struct rec *r)
{
	static uint8_t out[RECMAX];
	union sockaddr_union *from = r->src == 2 ? &F->alt6_addr : r->src ? &F->alt_addr :
	    &F->cli_addr;
	enum dtls_listen_result lr;
	enum dtls_result res;
	size_t n = 12345, pre;
	uint64_t seq = 0;

	if (r->rotate) {
		/* the cookie of the previous secret still counts, not of the one before */
		dtls_ctx_rotate_cookie(F->srv);
		if (r->refuse)
			dtls_ctx_rotate_cookie(F->srv);
		F->rotated = true;
	}
	if (F->ss == NULL) {
		F->lq.n = 0;
		F->refuse_next = r->refuse;
		lr = dtls_listen_admit(F->srv, r->b, r->len, from, r->alt_sid ? ~SID : SID, q_out,
		    admit, &F->s2c, &F->ss);
		if (trace)
			fprintf(stderr, "record %u: type %u, %zu bytes: listen %d\n", r->idx, r->b[0],
			    r->len, (int)lr);
		check(ERR_peek_error() == 0);
		check((lr == DTLS_LISTEN_ACCEPTED) == (F->ss != NULL));
		/* never amplify: at most one answer, never larger than the request */
		check(F->lq.n == (lr == DTLS_LISTEN_REPLIED));
		if (F->lq.n) {
			check(F->lq.r[0].len <= r->len && r->b[0] == DTLS_CT_HANDSHAKE);
			q_add(&F->s2c, F->lq.r[0].b, F->lq.r[0].len);
		}
		if (lr == DTLS_LISTEN_FAILED)
			(void)dtls_ctx_listen_mismatch(F->srv);
		return;
	}
	if (r->in_place && (pre = dtls_sess_data_prefix(F->ss)) != 0 && r->len >= pre) {
		/* opened where it lies, as the daemon does with its batches */
		static uint8_t buf[RECMAX];

		memcpy(buf, r->b, r->len);
		res = dtls_sess_input(F->ss, buf, r->len, buf + pre, r->len - pre, &n, &seq);
		if (res == DTLS_DATA) {
			memmove(out, buf + pre, n);
			check(pre == record_prefix(dtls_sess_record_rx(F->ss)->cipher));
		}
	} else if (r->in_place) {
		/* no room at all: never read */
		res = dtls_sess_input(F->ss, r->b, r->len, out, 0, &n, &seq);
		check(res != DTLS_DATA);
	} else {
		res = dtls_sess_input(F->ss, r->b, r->len, out, sizeof(out), &n, &seq);
	}
	if (trace)
		fprintf(stderr, "record %u: type %u, %zu bytes: session %d\n", r->idx, r->b[0],
		    r->len, (int)res);
	check(ERR_peek_error() == 0);
	check(res >= DTLS_AGAIN && res <= DTLS_ERR_OLD);
	check(res == DTLS_DATA || n == 0);
	switch (res) {
	case DTLS_DONE:
		server_done();
		break;
	case DTLS_DATA:
		check(F->srv_done);
		F->srv_got_data = true;
		server_data(r->b, r->len, out, n, seq);
		break;
	case DTLS_ERR_HANDSHAKE:
		check(!F->srv_done);
		(void)dtls_sess_refused_fp(F->ss);
		(void)dtls_sess_alert(F->ss);
		(void)dtls_sess_mismatch(F->ss);
		break;
	default:
		break;
	}
	(void)dtls_sess_take_early(F->ss);
}

static void
server_send_data(bool in_place)
{
	static uint8_t big[LINK_MTU];
	uint8_t buf[DTLS_SEAL_HEADROOM + 32 + DTLS_SEAL_TAILROOM];
	char *msg = (char *)buf + DTLS_SEAL_HEADROOM;
	struct dtls_record r;

	if (F->ss == NULL || !dtls_sess_established(F->ss) || F->srv_sent > 9)
		return;
	snprintf(msg, 32, "server data record %u....", F->srv_sent);
	if (in_place)
		check(dtls_sess_seal_in_place(F->ss, (uint8_t *)msg, 24, &r) == 0);
	else
		check(dtls_sess_seal(F->ss, (const uint8_t *)msg, 24, &r) == 0);
	/* framed: finished and sent as the sending thread would */
	q_out(&F->s2c, r.rec, r.len, r.to, r.seal);
	F->srv_sent++;
	/* nothing, or more than a datagram holds: refused, nothing sent */
	check(dtls_sess_seal(F->ss, big, 0, &r) == -EINVAL);
	check(dtls_sess_seal(F->ss, big, sizeof(big), &r) == -EMSGSIZE);
	check(dtls_sess_record_tx(F->ss) != NULL && dtls_sess_records(F->ss) >= F->srv_sent);
}

/* The retransmission timer, as the daemon runs it: no time passes here,
 * so it only says when it is due. */
static void
server_timer(void)
{
	struct timeval tv;

	if (F->ss == NULL)
		return;
	if (dtls_sess_timeout(F->ss, &tv))
		check(tv.tv_sec >= 0 && tv.tv_usec >= 0 && tv.tv_sec <= 60);
	check(dtls_sess_handle_timeout(F->ss) != DTLS_ERR_HANDSHAKE || !F->srv_done);
}

/* --- edits ----------------------------------------------------------------- */

enum edit_op {
	E_DROP, E_DUP, E_HOLD, E_FLIP, E_HEADER, E_MSG, E_TRUNC, E_EXTEND, E_FRAGMENT,
	E_JOIN, E_ALT_SRC, E_ALT_SID, E_REFUSE, E_IN_PLACE, E_ROTATE, E_COUNT
};

/* A handshake message split in two fragments of their own records. */
static void
fragment(struct queue *q, size_t i, const struct edit *e)
{
	struct rec *r = &q->r[i], *t;
	size_t flen, cut, hl = DTLS_RECORD_HDR + 12;
	uint8_t tail[RECMAX];
	size_t tl, off;

	if (r->len <= hl + 1 || r->b[0] != DTLS_CT_HANDSHAKE || bytes_get16(r->b + 3) != 0 ||
	    q->n == QMAX)
		return;
	flen = r->len - hl;
	cut = 1 + (e->x << 8 | e->y) % (flen - 1);
	/* the second: the same header, the rest of the body */
	memcpy(tail, r->b, hl);
	memcpy(tail + hl, r->b + hl + cut, flen - cut);
	tl = hl + flen - cut;
	bytes_put16(tail + 11, (uint16_t)(tl - DTLS_RECORD_HDR));
	off = (bytes_get32(r->b + DTLS_RECORD_HDR + 5) & 0xffffff) + cut;
	tail[DTLS_RECORD_HDR + 6] = (uint8_t)(off >> 16);
	bytes_put16(tail + DTLS_RECORD_HDR + 7, (uint16_t)off);
	tail[DTLS_RECORD_HDR + 9] = (uint8_t)((flen - cut) >> 16);
	bytes_put16(tail + DTLS_RECORD_HDR + 10, (uint16_t)(flen - cut));
	/* A record number of its own: past the rest of the flight, and within
	 * the replay window of the first when that one comes second. */
	tail[10] = (uint8_t)(tail[10] + 32 + (e->z >> 1) % 16);
	/* the first: the head of the body */
	r->len = hl + cut;
	bytes_put16(r->b + 11, (uint16_t)(r->len - DTLS_RECORD_HDR));
	r->b[DTLS_RECORD_HDR + 9] = (uint8_t)(cut >> 16);
	bytes_put16(r->b + DTLS_RECORD_HDR + 10, (uint16_t)cut);
	memmove(&q->r[i + 2], &q->r[i + 1], (q->n - i - 1) * sizeof(q->r[0]));
	q->n++;
	t = &q->r[i + 1];
	*t = *r;
	memcpy(t->b, tail, tl);
	t->len = tl;
	if (e->z & 1) {                 /* the second first */
		struct rec tmp = *r;

		*r = *t;
		*t = tmp;
	}
}

/* Apply one edit to record i of q. */
static void
apply(struct queue *q, size_t i, const struct edit *e)
{
	struct rec *r = &q->r[i];
	unsigned v16 = e->y << 8 | e->z;
	size_t k;

	switch (e->op) {
	case E_DROP:
		memmove(&q->r[i], &q->r[i + 1], (q->n - i - 1) * sizeof(q->r[0]));
		q->n--;
		return;
	case E_DUP:
		if (q->n == QMAX)
			return;
		memmove(&q->r[i + 1], &q->r[i], (q->n - i) * sizeof(q->r[0]));
		q->n++;
		return;
	case E_HOLD:
		if (e->x & 1) {         /* to the end of the run */
			if (F->held_end.n < QMAX)
				F->held_end.r[F->held_end.n++] = *r;
			memmove(&q->r[i], &q->r[i + 1], (q->n - i - 1) * sizeof(q->r[0]));
			q->n--;
			return;
		}
		if (i + 1 < q->n) {     /* behind the next one */
			struct rec tmp = q->r[i];

			q->r[i] = q->r[i + 1];
			q->r[i + 1] = tmp;
		}
		return;
	case E_FLIP:
		if (r->len)
			r->b[v16 % r->len] ^= (uint8_t)(e->x ? e->x : 1);
		return;
	case E_HEADER:          /* type, version, epoch, sequence, length */
		if (r->len >= DTLS_RECORD_HDR) {
			k = e->x % 7;
			if (k == 0)
				r->b[0] = (uint8_t)e->y;
			else if (k == 1)
				bytes_put16(r->b + 1, (uint16_t)v16);
			else if (k == 2)
				bytes_put16(r->b + 3, (uint16_t)v16);
			else if (k <= 5)
				bytes_put16(r->b + 5 + 2 * (k - 3), (uint16_t)v16);
			else
				bytes_put16(r->b + 11, (uint16_t)v16);
		}
		return;
	case E_MSG:             /* type, length, message_seq, fragment_offset, fragment_length */
		if (r->len >= DTLS_RECORD_HDR + 12) {
			uint8_t *h = r->b + DTLS_RECORD_HDR;

			k = e->x % 5;
			if (k == 0)
				h[0] = (uint8_t)e->y;
			else if (k == 1)
				bytes_put16(h + 2, (uint16_t)v16);
			else if (k == 2)
				bytes_put16(h + 4, (uint16_t)v16);
			else if (k == 3)
				bytes_put16(h + 7, (uint16_t)v16);
			else
				bytes_put16(h + 10, (uint16_t)v16);
		}
		return;
	case E_TRUNC:
		r->len -= r->len ? v16 % r->len : 0;
		return;
	case E_EXTEND:
		for (k = 0; k < e->y && r->len < RECMAX; k++)
			r->b[r->len++] = (uint8_t)e->z;
		if (e->x & 1 && r->len >= DTLS_RECORD_HDR)
			bytes_put16(r->b + 11, (uint16_t)(r->len - DTLS_RECORD_HDR));
		return;
	case E_FRAGMENT:
		fragment(q, i, e);
		return;
	case E_JOIN:            /* two records in one datagram */
		if (i + 1 < q->n && r->len + q->r[i + 1].len <= RECMAX) {
			memcpy(r->b + r->len, q->r[i + 1].b, q->r[i + 1].len);
			r->len += q->r[i + 1].len;
			memmove(&q->r[i + 1], &q->r[i + 2], (q->n - i - 2) * sizeof(q->r[0]));
			q->n--;
		}
		return;
	case E_ALT_SRC:
		r->src = 1 + (e->x & 1);
		return;
	case E_ALT_SID:
		r->alt_sid = true;
		return;
	case E_REFUSE:
		r->refuse = true;
		return;
	case E_IN_PLACE:
		r->in_place = true;
		return;
	default:
		r->rotate = true;
		r->refuse = e->x & 1;   /* (rotate twice) */
		return;
	}
}

/* Edits of the records just sent (each edit once, on its index), then
 * everything to the server in order. */
static void
deliver_client(void)
{
	struct queue *q = &F->c2s;
	size_t i, e;

	/* Copies keep the index: a later edit of it takes the first. */
	for (e = 0; e < F->nedit; e++) {
		for (i = 0; i < q->n; i++) {
			if (q->r[i].idx == F->edit[e].idx) {
				apply(q, i, &F->edit[e]);
				break;
			}
		}
	}
	for (i = 0; i < q->n; i++)
		server_input(&q->r[i]);
	q->n = 0;
}

static void
deliver_server(void)
{
	size_t i;

	for (i = 0; i < F->s2c.n; i++) {
		check(BIO_write(F->c_in, F->s2c.r[i].b, (int)F->s2c.r[i].len) ==
		    (int)F->s2c.r[i].len);
		client_step();
	}
	F->s2c.n = 0;
}

/* --- one run ---------------------------------------------------------------- */

static void
run_start(unsigned v)
{
	rng = 0x746f7564;               /* the same handshake at every run */
	F->v = &variants[v % NVARIANT];
	check((F->c = SSL_new(F->cctx[v % NVARIANT])) != NULL);
	check((F->c_in = BIO_new(BIO_s_mem())) != NULL && (F->c_out = BIO_new(BIO_s_mem())) != NULL);
	BIO_set_mem_eof_return(F->c_in, -1);
	BIO_set_mem_eof_return(F->c_out, -1);
	SSL_set_bio(F->c, F->c_in, F->c_out);
	check(DTLS_set_link_mtu(F->c, LINK_MTU) == 1);
	SSL_set_connect_state(F->c);
	F->ss = NULL;
	F->c2s.n = F->s2c.n = F->held_end.n = F->lq.n = 0;
	F->next_idx = 0;
	F->nsent = 0;
	F->srv_sent = F->cli_got = 0;
	F->srv_done = F->srv_got_data = false;
}

static void
run_end(void)
{
	uint8_t a[32], b[32];

	/* Both sides up: the same keys. */
	if (F->srv_done && F->ss && dtls_sess_established(F->ss) && SSL_is_init_finished(F->c)) {
		/* Once a record of the client opened, OpenSSL's state is
		 * gone and so is the exporter (dtls.h). */
		check((dtls_sess_export(F->ss, LABEL, a, sizeof(a)) == 0) ==
		    !F->srv_got_data);
		check(SSL_export_keying_material(F->c, b, sizeof(b), LABEL, strlen(LABEL), NULL, 0,
		    0) == 1);
		check(memcmp(F->srv_export, b, sizeof(b)) == 0);
		check(F->cli_got <= F->srv_sent);      /* some refused by OpenSSL's window */
	}
	dtls_sess_free(F->ss);
	F->ss = NULL;
	SSL_free(F->c);
	F->c = NULL;
	if (F->rotated)
		server_ctx();
	check(truncate(F->keylog, 0) == 0 || errno == ENOENT);
	ERR_clear_error();
}

/* What the client does once it is up, one step per round: application
 * data, a renegotiation attempt, close_notify (flags: byte 1).  False
 * when there is nothing left to do. */
static bool
client_extra(unsigned flags, unsigned *done)
{
	if (!SSL_is_init_finished(F->c))
		return false;
	if (*done < (flags & 3)) {
		client_send_data((*done)++);
		return true;
	}
	if ((flags & 8) && *done < 4) {
		*done = 4;
		if (SSL_renegotiate(F->c) == 1)
			(void)SSL_do_handshake(F->c);
	} else if ((flags & 4) && *done < 5) {
		*done = 5;
		(void)SSL_shutdown(F->c);
	} else {
		return false;
	}
	ERR_clear_error();
	client_drain();
	return true;
}

/* Flights back and forth until nothing moves; then what was held back
 * to the end, late. */
static void
run(unsigned flags)
{
	unsigned round, done = 0;
	size_t i;

	client_step();
	for (round = 0; round < ROUNDS; round++) {
		if (!client_extra(flags, &done) && F->c2s.n == 0 && F->s2c.n == 0)
			break;
		deliver_client();
		if (flags & 16)
			server_send_data(flags & 32);
		if (flags & 128)
			server_timer();
		deliver_server();
	}
	if (flags & 64 && F->ss != NULL) {
		struct dtls_record r;

		/* the server ends it: close_notify */
		dtls_sess_close(F->ss);
		check(!dtls_sess_established(F->ss));
		check(dtls_sess_seal(F->ss, (const uint8_t *)"x", 1, &r) == -ENOTCONN);
	}
	for (i = 0; i < F->held_end.n; i++)
		server_input(&F->held_end.r[i]);
	F->held_end.n = 0;
	deliver_server();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t i;

	if (F == NULL)
		fuzz_init();
	if (size < 2)
		return 0;
	F->nedit = 0;
	for (i = 2; i + 5 <= size && F->nedit < NEDIT; i += 5) {
		struct edit *e = &F->edit[F->nedit++];

		e->idx = data[i] % 32;
		e->op = data[i + 1] % E_COUNT;
		e->x = data[i + 2];
		e->y = data[i + 3];
		e->z = data[i + 4];
	}
	run_start(data[0]);
	run(data[1]);
	run_end();
	check(ERR_peek_error() == 0);
	return 0;
}
