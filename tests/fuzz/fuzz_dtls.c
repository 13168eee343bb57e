/* fuzz_dtls.c - libFuzzer harness for everything a DTLS record from the
 * network reaches in OpenSSL: the stateless listener (dtls_listen), an
 * established session (dtls_sess_input), and a client waiting for the
 * server's answer.  Keys are generated on the first call into a temporary
 * directory that is removed at exit. */
#include <arpa/inet.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>

#include "dtls.h"
#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LINK_MTU 1456
#define QMAX 64
#define RECMAX 2048

struct rec {
	uint8_t b[RECMAX];
	size_t len;
};

struct queue {
	struct rec r[QMAX];
	size_t head, n;
	size_t calls, bytes;
};

struct side {
	char dir[PATH_MAX];
	char key[PATH_MAX], cert[PATH_MAX];
	uint8_t fp[DTLS_FP_LEN];        /* the other side's key: the only one known */
	struct dtls_ctx *c;
	struct queue lq;                /* HelloVerifyRequests */
	union sockaddr_union addr;
};

struct fuzz {
	char tmp[PATH_MAX];
	struct side srv, cli;
	struct dtls_sess *ss, *cs;      /* the established pair */
	struct queue c2s, s2c, sink;
	int peer;                       /* the peer object both sides map to */
};

static struct fuzz *F;

static void
check(int cond)
{
	if (!cond)
		abort();
}

static void
q_out(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal)
{
	struct queue *q = arg;
	struct rec *r;

	(void)to;
	/* one whole record per datagram, within the MTU */
	check(len >= DTLS_RECORD_HDR && len <= LINK_MTU);
	check(DTLS_RECORD_HDR + (size_t)(rec[11] << 8 | rec[12]) == len);
	q->calls++;
	q->bytes += len;
	if (q->n == QMAX)
		return;
	r = &q->r[(q->head + q->n) % QMAX];
	memcpy(r->b, rec, len);
	r->len = len;
	if (seal)
		check(record_finish(seal, r->b, len) == RECORD_OK);
	q->n++;
}

/* dtls_listen_output_fn: the listener's answers go the same way. */
static void
q_listen_out(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to)
{
	(void)sid;
	q_out(arg, rec, len, to, NULL);
}

static struct rec *
q_pop(struct queue *q)
{
	struct rec *r;

	if (q->n == 0)
		return NULL;
	r = &q->r[q->head];
	q->head = (q->head + 1) % QMAX;
	q->n--;
	return r;
}

static void
q_clear(struct queue *q)
{
	q->head = q->n = 0;
}

static void *
authorize(void *arg, const uint8_t fp[DTLS_FP_LEN], struct x509_store_ctx_st *xs)
{
	struct side *s = arg;

	(void)xs;
	return memcmp(fp, s->fp, DTLS_FP_LEN) == 0 ? &F->peer : NULL;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
side_init(struct side *s, const char *tmp, const char *name, const char *ip)
{
	char err[256];

	snprintf(s->dir, sizeof(s->dir), "%s/%s", tmp, name);
	snprintf(s->key, sizeof(s->key), "%s/key.pem", s->dir);
	snprintf(s->cert, sizeof(s->cert), "%s/cert.pem", s->dir);
	check(mkdir(s->dir, 0700) == 0);
	if (keys_genkey(s->dir, s->fp, err, sizeof(err)) < 0) {
		fprintf(stderr, "genkey: %s\n", err);
		abort();
	}
	s->addr.in.sin_family = AF_INET;
	s->addr.in.sin_port = htons(6080);
	check(inet_pton(AF_INET, ip, &s->addr.in.sin_addr) == 1);
}

static void
side_ctx(struct side *s)
{
	struct dtls_ctx_config cfg = {
		.private_key = s->key,
		.certificate = s->cert,
		.authorize = authorize,
		.authorize_arg = s,
		.listen_output = q_listen_out,
		.listen_output_arg = &s->lq,
		.link_mtu = LINK_MTU,
	};
	char err[256];

	s->c = dtls_ctx_new(&cfg, err, sizeof(err));
	if (s->c == NULL) {
		fprintf(stderr, "dtls_ctx_new: %s\n", err);
		abort();
	}
}

/* A fresh established pair; the old one is gone. */
static void
pair_up(void)
{
	struct rec *r;
	uint8_t buf[RECMAX];
	size_t n;
	uint64_t seq;
	int i, moved;

	dtls_sess_free(F->cs);
	dtls_sess_free(F->ss);
	F->ss = NULL;
	q_clear(&F->c2s);
	q_clear(&F->s2c);
	q_clear(&F->srv.lq);
	F->cs = dtls_sess_client(F->cli.c, &F->peer, q_out, &F->c2s, &F->srv.addr);
	check(F->cs != NULL);
	dtls_sess_handshake(F->cs);
	for (i = 0, moved = 1; i < 32 && moved; i++) {
		moved = 0;
		while ((r = q_pop(&F->c2s)) != NULL) {
			moved++;
			if (F->ss == NULL)
				dtls_listen(F->srv.c, r->b, r->len, &F->cli.addr, q_out, &F->s2c,
				    &F->ss);
			else
				dtls_sess_input(F->ss, r->b, r->len, buf, sizeof(buf), &n, &seq);
		}
		while ((r = q_pop(&F->srv.lq)) != NULL || (r = q_pop(&F->s2c)) != NULL) {
			moved++;
			dtls_sess_input(F->cs, r->b, r->len, buf, sizeof(buf), &n, &seq);
		}
	}
	check(F->ss != NULL && dtls_sess_established(F->cs) && dtls_sess_established(F->ss));
	/* from now on the server's output is only counted */
	dtls_sess_free(F->cs);
	F->cs = NULL;
}

static void
fuzz_cleanup(void)
{
	if (F == NULL)
		return;
	dtls_sess_free(F->ss);
	dtls_ctx_free(F->srv.c);
	dtls_ctx_free(F->cli.c);
	nftw(F->tmp, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(F);
	F = NULL;
}

static void
fuzz_init(void)
{
	const char *t = getenv("TMPDIR");

	F = calloc(1, sizeof(*F));
	check(F != NULL);
	snprintf(F->tmp, sizeof(F->tmp), "%s/fuzz_dtls.XXXXXX", t != NULL && *t ? t : "/tmp");
	check(mkdtemp(F->tmp) != NULL);
	atexit(fuzz_cleanup);
	side_init(&F->srv, F->tmp, "srv", "198.51.100.2");
	side_init(&F->cli, F->tmp, "cli", "192.0.2.1");
	/* each side knows only the other's key */
	{
		uint8_t tmpfp[DTLS_FP_LEN];

		memcpy(tmpfp, F->srv.fp, DTLS_FP_LEN);
		memcpy(F->srv.fp, F->cli.fp, DTLS_FP_LEN);
		memcpy(F->cli.fp, tmpfp, DTLS_FP_LEN);
	}
	side_ctx(&F->srv);
	side_ctx(&F->cli);
	pair_up();
}

static void
fuzz_listen(const uint8_t *data, size_t size)
{
	struct dtls_sess *s = NULL;
	size_t before = F->srv.lq.bytes, calls = F->srv.lq.calls;
	enum dtls_listen_result r;

	r = dtls_listen(F->srv.c, data, size, &F->cli.addr, q_out, &F->sink, &s);
	check(r == DTLS_LISTEN_DROP || r == DTLS_LISTEN_REPLIED || r == DTLS_LISTEN_ACCEPTED);
	check((r == DTLS_LISTEN_ACCEPTED) == (s != NULL));
	/* never amplify: at most one answer, never larger than the request */
	if (r == DTLS_LISTEN_REPLIED) {
		check(F->srv.lq.calls == calls + 1);
		check(F->srv.lq.bytes - before <= size);
	} else {
		check(F->srv.lq.calls == calls);
	}
	/* only a handshake record may get an answer */
	if (r != DTLS_LISTEN_DROP)
		check(size >= DTLS_RECORD_HDR && data[0] == 22);
	dtls_sess_free(s);
	q_clear(&F->srv.lq);
}

static void
fuzz_session(const uint8_t *data, size_t size)
{
	static uint8_t out[RECMAX];
	enum dtls_result r;
	size_t n = 12345;
	uint64_t seq;

	r = dtls_sess_input(F->ss, data, size, out, sizeof(out), &n, &seq);
	check(r >= DTLS_AGAIN && r <= DTLS_ERR_OLD);
	/* garbage never decrypts: the keys were made at run time */
	check(r != DTLS_DATA && r != DTLS_DONE);
	check(n == 0);
	q_clear(&F->s2c);
	if (r == DTLS_ERR_CLOSED || !dtls_sess_established(F->ss))
		pair_up();
}

/* A client that has sent its ClientHello and waits for an answer. */
static void
fuzz_client(const uint8_t *data, size_t size)
{
	static uint8_t out[RECMAX];
	struct queue *q = &F->sink;
	struct dtls_sess *s;
	enum dtls_result r;
	size_t n = 12345;
	uint64_t seq;

	s = dtls_sess_client(F->cli.c, &F->peer, q_out, q, &F->srv.addr);
	check(s != NULL);
	check(dtls_sess_handshake(s) == DTLS_AGAIN);
	r = dtls_sess_input(s, data, size, out, sizeof(out), &n, &seq);
	check(r == DTLS_AGAIN || r == DTLS_ERR_HANDSHAKE || r == DTLS_ERR_RECORD);
	check(n == 0 && !dtls_sess_established(s));
	dtls_sess_free(s);
	q_clear(q);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (F == NULL)
		fuzz_init();
	fuzz_listen(data, size);
	fuzz_session(data, size);
	fuzz_client(data, size);
	/* whatever happened, nothing is left on the error queue */
	check(ERR_peek_error() == 0);
	return 0;
}
