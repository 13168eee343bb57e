/* check_dtls.c - DTLS sessions in one process: two nodes with their own
 * keys (generated at run time into a temporary directory) exchange records
 * through in-memory queues. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "dtls.h"
#include "gue.h"
#include "mlkem.h"
#include "pqmsg.h"
#include "record.h"
#include "replay.h"
#include "util.h"

#include "testutil.h"

#define LINK_MTU 1456           /* 1500 - IPv4 20 - UDP 8 - GUE 16 */
#define GCM_OVERHEAD 37         /* header 13 + explicit nonce 8 + tag 16 */
#define MAX_PLAIN (LINK_MTU - GCM_OVERHEAD)
#define QMAX 256
#define RECMAX 2048
#define NWIN (REPLAY_WINDOW + 6)

struct rec {
	uint8_t b[RECMAX];
	size_t len;
	union sockaddr_union to;
};

/* A FIFO of records, one per output call. */
struct queue {
	struct rec r[QMAX];
	size_t head, n;
	size_t calls;
	uint64_t sid;           /* the session ID the listener's last answer was for */
};

struct authz {
	size_t n;
	uint8_t fp[4][DTLS_FP_LEN];
	void *obj[4];
	int calls;
	uint8_t seen[DTLS_FP_LEN];
	const char *ca_file;    /* CA mode: verify the chain and this name */
	const char *ca_name;
	void *ca_obj;
};

struct node {
	char dir[PATH_MAX];
	char key[PATH_MAX], cert[PATH_MAX];
	uint8_t fp[DTLS_FP_LEN];
	struct dtls_ctx *c;
	struct authz az;
	union sockaddr_union addr;
	struct queue *lq;       /* HelloVerifyRequests this node sent */
};

/* A client session on one node and the server session it opens on the
 * other. */
struct link {
	struct node *cn, *sn;
	struct dtls_sess *cs, *ss;
	struct queue *c2s, *s2c;
	bool cdone, sdone, cfail, sfail;
	enum dtls_result cerr, serr;
	int replied, accepted, dropped, cdata, sdata;
	int cbad, sbad;                 /* records refused (replay, forgery) */
};

static char rootdir[PATH_MAX], tmpdir[PATH_MAX];
static struct node A, B;
static int peer_a, peer_b, peer_x;     /* peer objects: only their addresses matter */

/* ---- helpers -------------------------------------------------------- */

/* Every record written in an epoch above 0, when a test keeps count:
 * which queue (one per session and direction) it went to, and its
 * numbers.  Type 23 is toud's writer, every other type OpenSSL's. */
struct ledger_ent {
	const struct queue *q;
	uint8_t type;
	uint16_t epoch;
	uint64_t seq;
	uint64_t nonce;                 /* AES-GCM nonce_explicit */
	bool toud;                      /* toud's record layer wrote it, not OpenSSL */
};

static struct {
	struct ledger_ent e[4096];
	size_t n;
	bool on;
} ledger;

static uint64_t
get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | *p++;
	return v;
}

static void
ledger_note(const struct queue *q, const uint8_t *rec, size_t len, bool toud)
{
	struct ledger_ent *e;

	if (!ledger.on || rec[0] == 20 || get_be(rec + 3, 2) == 0)
		return;
	ck_assert_uint_lt(ledger.n, ARRAY_SIZE(ledger.e));
	ck_assert_uint_ge(len, DTLS_RECORD_HDR + 8 + 16);
	e = &ledger.e[ledger.n++];
	e->q = q;
	e->type = rec[0];
	e->toud = toud;
	e->epoch = (uint16_t)get_be(rec + 3, 2);
	e->seq = get_be(rec + 5, 6);
	e->nonce = get_be(rec + DTLS_RECORD_HDR, 8);
}

static struct queue *
q_new(void)
{
	struct queue *q = calloc(1, sizeof(*q));

	ck_assert_ptr_nonnull(q);
	return q;
}

static void
q_out(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal)
{
	struct queue *q = arg;
	struct rec *r;

	/* Every datagram holds exactly one whole record within the MTU. */
	ck_assert_uint_ge(len, DTLS_RECORD_HDR);
	ck_assert_uint_eq(DTLS_RECORD_HDR + (size_t)(rec[11] << 8 | rec[12]), len);
	ck_assert_uint_le(len, LINK_MTU);
	ck_assert_uint_lt(q->n, QMAX);
	ledger_note(q, rec, len, seal != NULL);
	r = &q->r[(q->head + q->n) % QMAX];
	memcpy(r->b, rec, len);
	r->len = len;
	/* toud's own records are framed here and sealed by their user. */
	if (seal)
		ck_assert_int_eq(record_finish(seal, r->b, len), RECORD_OK);
	r->to = *to;
	q->n++;
	q->calls++;
}

/* dtls_listen_output_fn: the listener's answers go to the node's queue,
 * which notes the session ID they answer. */
static void
q_listen_out(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to)
{
	struct queue *q = arg;

	q->sid = sid;
	q_out(arg, rec, len, to, NULL);
}

/* Seal as tx.c does: the record comes back framed, and is queued where
 * OpenSSL's go (q_out() finishes it). */
static int
seal(struct dtls_sess *s, struct queue *q, const uint8_t *msg, size_t len)
{
	struct dtls_record r;
	int rc = dtls_sess_seal(s, msg, len, &r);

	if (rc == 0)
		q_out(q, r.rec, r.len, r.to, r.seal);
	return rc;
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

static void *
authorize(void *arg, const uint8_t fp[DTLS_FP_LEN], struct x509_store_ctx_st *xs)
{
	struct authz *a = arg;
	size_t i;

	a->calls++;
	memcpy(a->seen, fp, DTLS_FP_LEN);
	if (a->ca_file != NULL)
		return keys_verify_ca(xs, a->ca_file, a->ca_name) ? a->ca_obj : NULL;
	for (i = 0; i < a->n; i++)
		if (memcmp(a->fp[i], fp, DTLS_FP_LEN) == 0)
			return a->obj[i];
	return NULL;
}

static void
authz_add(struct authz *a, const uint8_t fp[DTLS_FP_LEN], void *obj)
{
	ck_assert_uint_lt(a->n, 4);
	memcpy(a->fp[a->n], fp, DTLS_FP_LEN);
	a->obj[a->n++] = obj;
}

static void
sa_set(union sockaddr_union *sa, const char *addr, uint16_t port)
{
	struct ipaddr a = check_addr(addr);

	ck_assert_int_eq(util_sa_from_addr(sa, &a, port), 0);
}

static void
path_join(char *out, const char *dir, const char *name)
{
	ck_assert_int_lt(snprintf(out, PATH_MAX, "%s/%s", dir, name), PATH_MAX);
}

static struct dtls_ctx *
ctx_open(struct node *n, const char *keylog)
{
	struct dtls_ctx_config cfg = {
		.private_key = n->key,
		.certificate = n->cert,
		.keylog_file = keylog,
		.authorize = authorize,
		.authorize_arg = &n->az,
		.listen_output = q_listen_out,
		.listen_output_arg = n->lq,
		.link_mtu = LINK_MTU,
	};
	char err[256] = "";
	struct dtls_ctx *c = dtls_ctx_new(&cfg, err, sizeof(err));

	ck_assert_msg(c != NULL, "dtls_ctx_new: %s", err);
	return c;
}

static void
node_init(struct node *n, const char *name, const char *addr)
{
	char err[256] = "";

	memset(n, 0, sizeof(*n));
	path_join(n->dir, tmpdir, name);
	ck_assert_int_eq(mkdir(n->dir, 0700), 0);
	ck_assert_msg(keys_genkey(n->dir, n->fp, err, sizeof(err)) == 0, "genkey: %s", err);
	path_join(n->key, n->dir, "key.pem");
	path_join(n->cert, n->dir, "cert.pem");
	sa_set(&n->addr, addr, 6080);
	n->lq = q_new();
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
rm_tree(const char *dir)
{
	if (dir[0] != '\0')
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Each test works in its own directory under rootdir; main() removes
 * rootdir, which also covers tests that failed before their teardown. */
static void
setup(void)
{
	path_join(tmpdir, rootdir, "t.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	node_init(&A, "a", "192.0.2.1");
	node_init(&B, "b", "198.51.100.2");
	authz_add(&A.az, B.fp, &peer_b);
	authz_add(&B.az, A.fp, &peer_a);
	A.c = ctx_open(&A, NULL);
	B.c = ctx_open(&B, NULL);
}

static void
teardown(void)
{
	dtls_ctx_free(A.c);
	dtls_ctx_free(B.c);
	free(A.lq);
	free(B.lq);
	rm_tree(tmpdir);
}

static void
note(enum dtls_result r, bool *done, bool *fail, enum dtls_result *err, int *data, int *bad)
{
	switch (r) {
	case DTLS_DONE:
		ck_assert(!*done);
		*done = true;
		break;
	case DTLS_ERR_HANDSHAKE:
	case DTLS_ERR_CLOSED:
		*fail = true;
		*err = r;
		break;
	case DTLS_DATA:
		(*data)++;
		break;
	case DTLS_ERR_REPLAY:
	case DTLS_ERR_RECORD:
		(*bad)++;
		break;
	default:
		break;
	}
}

static void
link_start(struct link *l, struct node *cn, struct node *sn, void *expect)
{
	memset(l, 0, sizeof(*l));
	l->cn = cn;
	l->sn = sn;
	l->c2s = q_new();
	l->s2c = q_new();
	l->cs = dtls_sess_client(cn->c, expect, q_out, l->c2s, &sn->addr);
	ck_assert_ptr_nonnull(l->cs);
	ck_assert(!dtls_sess_established(l->cs));
	ck_assert_int_eq(dtls_sess_handshake(l->cs), DTLS_AGAIN);
	ck_assert_uint_eq(l->c2s->n, 1);       /* the ClientHello */
}

static void
link_free(struct link *l)
{
	dtls_sess_free(l->cs);
	dtls_sess_free(l->ss);
	free(l->c2s);
	free(l->s2c);
	l->cs = l->ss = NULL;
}

static void
to_client(struct link *l, struct rec *r)
{
	uint8_t buf[RECMAX];
	size_t n;
	uint64_t seq;

	ck_assert(util_sa_equal(&r->to, &l->cn->addr));
	note(dtls_sess_input(l->cs, r->b, r->len, buf, sizeof(buf), &n, &seq),
	    &l->cdone, &l->cfail, &l->cerr, &l->cdata, &l->cbad);
	ck_assert_uint_eq(ERR_peek_error(), 0);        /* the error queue never grows */
}

/* One record from the client to the server side: the listener until it
 * accepts, the server session after. */
static void
to_server(struct link *l, struct rec *r)
{
	uint8_t buf[RECMAX];
	size_t n, before;
	uint64_t seq;

	ck_assert(util_sa_equal(&r->to, &l->sn->addr));
	if (l->ss != NULL) {
		note(dtls_sess_input(l->ss, r->b, r->len, buf, sizeof(buf), &n, &seq),
		    &l->sdone, &l->sfail, &l->serr, &l->sdata, &l->sbad);
		ck_assert_uint_eq(ERR_peek_error(), 0);
		return;
	}
	before = l->sn->lq->n;
	switch (dtls_listen(l->sn->c, r->b, r->len, &l->cn->addr, q_out, l->s2c, &l->ss)) {
	case DTLS_LISTEN_REPLIED:
		l->replied++;
		ck_assert_ptr_null(l->ss);
		/* one HelloVerifyRequest, smaller than the request */
		ck_assert_uint_eq(l->sn->lq->n, before + 1);
		ck_assert_uint_lt(l->sn->lq->r[(l->sn->lq->head + before) % QMAX].len, r->len);
		break;
	case DTLS_LISTEN_ACCEPTED:
		l->accepted++;
		ck_assert_ptr_nonnull(l->ss);
		ck_assert_uint_eq(l->sn->lq->n, before);
		break;
	case DTLS_LISTEN_DROP:
		l->dropped++;
		ck_assert_ptr_null(l->ss);
		ck_assert_uint_eq(l->sn->lq->n, before);
		break;
	case DTLS_LISTEN_REFUSED:
	case DTLS_LISTEN_FAILED:
		ck_abort_msg("dtls_listen admits every valid cookie");
		break;
	}
	ck_assert_uint_eq(ERR_peek_error(), 0);
}

/* Everything the server side sent, to the client. */
static int
to_client_all(struct link *l)
{
	struct rec *r;
	int moved = 0;

	while ((r = q_pop(l->sn->lq)) != NULL) {
		moved++;
		to_client(l, r);
	}
	while ((r = q_pop(l->s2c)) != NULL) {
		moved++;
		to_client(l, r);
	}
	return moved;
}

/* Move everything in flight once; the number of records moved. */
static int
link_step(struct link *l)
{
	struct rec *r;
	int moved = 0;

	while ((r = q_pop(l->c2s)) != NULL) {
		moved++;
		to_server(l, r);
	}
	return moved + to_client_all(l);
}

static void
link_run(struct link *l)
{
	int i;

	for (i = 0; i < 64 && link_step(l) > 0; i++)
		;
	ck_assert_int_lt(i, 64);
}

/* Run a handshake until the server is done, keeping back its last flight
 * (left in l->s2c). */
static void
link_run_server_done(struct link *l)
{
	while (!l->sdone) {
		if (l->c2s->n == 0)
			ck_assert_int_gt(to_client_all(l), 0);
		else
			to_server(l, q_pop(l->c2s));
	}
}

static void
link_up(struct link *l, struct node *cn, struct node *sn, void *expect)
{
	link_start(l, cn, sn, expect);
	link_run(l);
	ck_assert(l->cdone && l->sdone);
	ck_assert(!l->cfail && !l->sfail);
	ck_assert_int_eq(l->cbad + l->sbad, 0);
	ck_assert(dtls_sess_established(l->cs));
	ck_assert(dtls_sess_established(l->ss));
}

/* Seal msg on `from`, take its one record out of q and open it on `to`. */
static uint64_t
pass(struct dtls_sess *from, struct queue *q, struct dtls_sess *to, const uint8_t *msg,
    size_t len)
{
	uint8_t buf[RECMAX];
	struct rec *r;
	size_t n = 0;
	uint64_t seq = 0;

	ck_assert_int_eq(seal(from, q, msg, len), 0);
	ck_assert_uint_eq(q->n, 1);
	r = q_pop(q);
	ck_assert_int_eq(r->b[0], 23);
	ck_assert_int_eq(dtls_sess_input(to, r->b, r->len, buf, sizeof(buf), &n, &seq), DTLS_DATA);
	ck_assert_uint_eq(n, len);
	ck_assert_mem_eq(buf, msg, len);
	ck_assert_uint_eq(seq >> 48, 1);       /* first epoch after the handshake */
	ck_assert_uint_eq(ERR_peek_error(), 0);
	return seq;
}

static enum dtls_result
input(struct dtls_sess *s, const struct rec *r, size_t *n, uint64_t *seq)
{
	static uint8_t buf[RECMAX];
	enum dtls_result res = dtls_sess_input(s, r->b, r->len, buf, sizeof(buf), n, seq);

	ck_assert_uint_eq(ERR_peek_error(), 0);
	return res;
}

/* ---- handshake ------------------------------------------------------ */

START_TEST(handshake_full)
{
	struct link l;
	struct timeval tv;

	link_up(&l, &A, &B, &peer_b);
	ck_assert_int_eq(l.replied, 1);         /* ClientHello -> HelloVerifyRequest */
	ck_assert_int_eq(l.accepted, 1);        /* ClientHello with cookie */
	ck_assert_int_eq(l.dropped, 0);
	/* both authorize callbacks saw the other's key */
	ck_assert_int_eq(A.az.calls, 1);
	ck_assert_int_eq(B.az.calls, 1);
	ck_assert_mem_eq(A.az.seen, B.fp, DTLS_FP_LEN);
	ck_assert_mem_eq(B.az.seen, A.fp, DTLS_FP_LEN);
	ck_assert_mem_eq(dtls_ctx_fingerprint(A.c), A.fp, DTLS_FP_LEN);
	ck_assert_mem_eq(dtls_ctx_fingerprint(B.c), B.fp, DTLS_FP_LEN);
	ck_assert_mem_eq(dtls_sess_peer_fp(l.cs), B.fp, DTLS_FP_LEN);
	ck_assert_mem_eq(dtls_sess_peer_fp(l.ss), A.fp, DTLS_FP_LEN);
	ck_assert_str_eq(dtls_sess_cipher(l.cs), "ECDHE-ECDSA-AES128-GCM-SHA256");
	ck_assert_str_eq(dtls_sess_cipher(l.ss), "ECDHE-ECDSA-AES128-GCM-SHA256");
	ck_assert(!dtls_sess_timeout(l.cs, &tv));
	/* nothing left to do: further calls are no-ops */
	ck_assert_int_eq(dtls_sess_handshake(l.cs), DTLS_AGAIN);
	ck_assert_int_eq(dtls_sess_handshake(l.ss), DTLS_AGAIN);
	ck_assert_uint_eq(l.c2s->n + l.s2c->n, 0);
	link_free(&l);
}
END_TEST

/* The server's first flight is several messages: each one leaves as its
 * own record (q_out asserts one record per call). */
START_TEST(handshake_records)
{
	struct link l;
	struct rec *r;
	size_t n;

	link_start(&l, &A, &B, &peer_b);
	r = q_pop(l.c2s);
	ck_assert_int_eq(r->b[0], 22);
	ck_assert_int_eq(dtls_listen(B.c, r->b, r->len, &A.addr, q_out, l.s2c, &l.ss),
	    DTLS_LISTEN_REPLIED);
	r = q_pop(B.lq);
	to_client(&l, r);
	r = q_pop(l.c2s);
	ck_assert_int_eq(dtls_listen(B.c, r->b, r->len, &A.addr, q_out, l.s2c, &l.ss),
	    DTLS_LISTEN_ACCEPTED);
	/* ServerHello, Certificate, ServerKeyExchange, CertificateRequest,
	 * ServerHelloDone: sent at once, one record each */
	n = l.s2c->n;
	ck_assert_uint_ge(n, 5);
	ck_assert_uint_eq(l.s2c->calls, n);
	ck_assert(!dtls_sess_established(l.ss));
	/* driving the accepted session again changes nothing */
	ck_assert_int_eq(dtls_sess_handshake(l.ss), DTLS_AGAIN);
	ck_assert_uint_eq(l.s2c->n, n);
	link_run(&l);
	ck_assert(l.cdone && l.sdone);
	link_free(&l);
}
END_TEST

START_TEST(server_refuses_unknown_key)
{
	struct link l;
	uint8_t b = 1;

	B.az.n = 0;                             /* B does not know A */
	link_start(&l, &A, &B, &peer_b);
	link_run(&l);
	ck_assert(l.sfail && l.cfail);
	ck_assert_int_eq(l.serr, DTLS_ERR_HANDSHAKE);
	ck_assert_int_eq(l.cerr, DTLS_ERR_HANDSHAKE);
	ck_assert(!l.cdone && !l.sdone);
	ck_assert_int_eq(B.az.calls, 1);
	ck_assert_ptr_null(dtls_sess_peer_fp(l.ss));
	ck_assert(!dtls_sess_established(l.cs) && !dtls_sess_established(l.ss));
	ck_assert_int_eq(seal(l.cs, l.c2s, &b, 1), -ENOTCONN);
	ck_assert_int_eq(seal(l.ss, l.s2c, &b, 1), -ENOTCONN);
	ck_assert_int_eq(l.cdata + l.sdata, 0);
	/* a failed session stays failed */
	ck_assert_int_eq(dtls_sess_handshake(l.ss), DTLS_ERR_HANDSHAKE);
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_ERR_HANDSHAKE);
	link_free(&l);
}
END_TEST

START_TEST(client_refuses_unknown_key)
{
	struct link l;
	uint8_t b = 1;

	A.az.n = 0;
	link_start(&l, &A, &B, &peer_b);
	link_run(&l);
	ck_assert(l.sfail && l.cfail);
	ck_assert_int_eq(l.cerr, DTLS_ERR_HANDSHAKE);
	ck_assert_int_eq(l.serr, DTLS_ERR_HANDSHAKE);
	ck_assert(!l.cdone && !l.sdone);
	ck_assert_int_eq(B.az.calls, 0);        /* the server never got that far */
	ck_assert_ptr_null(dtls_sess_peer_fp(l.cs));
	ck_assert_int_eq(seal(l.cs, l.c2s, &b, 1), -ENOTCONN);
	link_free(&l);
}
END_TEST

/* The client dialled peer b, but the key presented belongs to peer x. */
START_TEST(client_expects_other_peer)
{
	struct link l;

	A.az.obj[0] = &peer_x;
	link_start(&l, &A, &B, &peer_b);
	link_run(&l);
	ck_assert(l.cfail && l.sfail);
	ck_assert(!l.cdone && !l.sdone);
	ck_assert_int_eq(A.az.calls, 1);
	ck_assert_ptr_null(dtls_sess_peer_fp(l.cs));
	link_free(&l);
}
END_TEST

/* Retransmission timer: 300 ms first, then doubling. */
START_TEST(handshake_timer)
{
	struct link l;
	struct timeval tv;
	struct timespec ts = { 0, 330 * 1000 * 1000 };
	struct rec *r;
	size_t chlen;

	link_start(&l, &A, &B, &peer_b);
	chlen = l.c2s->r[l.c2s->head].len;
	ck_assert(dtls_sess_timeout(l.cs, &tv));
	ck_assert_int_eq(tv.tv_sec, 0);
	ck_assert_int_gt(tv.tv_usec, 200000);
	ck_assert_int_le(tv.tv_usec, 300000);
	/* not due yet: nothing is sent */
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_AGAIN);
	ck_assert_uint_eq(l.c2s->n, 1);
	nanosleep(&ts, NULL);
	ck_assert(dtls_sess_timeout(l.cs, &tv));
	ck_assert_int_eq(tv.tv_sec, 0);
	ck_assert_int_eq(tv.tv_usec, 0);
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_AGAIN);
	ck_assert_uint_eq(l.c2s->n, 2);
	q_pop(l.c2s);
	r = q_pop(l.c2s);
	ck_assert_uint_eq(r->len, chlen);
	ck_assert(dtls_sess_timeout(l.cs, &tv));
	ck_assert_int_gt(tv.tv_sec * 1000000 + tv.tv_usec, 500000);
	ck_assert_int_le(tv.tv_sec * 1000000 + tv.tv_usec, 600000);
	link_free(&l);
}
END_TEST

/* The server's last flight is lost: the client retransmits its own, the
 * established server answers it again, and nothing counts as a bad record. */
START_TEST(lost_final_flight)
{
	struct timespec ts = { 0, 330 * 1000 * 1000 };
	struct timeval tv;
	struct link l;
	uint8_t b = 5;
	size_t lost;

	link_start(&l, &A, &B, &peer_b);
	link_run_server_done(&l);
	lost = l.s2c->n;
	ck_assert_uint_ge(lost, 2);
	l.s2c->head = l.s2c->n = 0;
	ck_assert(dtls_sess_established(l.ss));
	ck_assert(!dtls_sess_established(l.cs));
	ck_assert(dtls_sess_timeout(l.cs, &tv));
	nanosleep(&ts, NULL);
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_AGAIN);
	ck_assert_uint_gt(l.c2s->n, 0);
	link_run(&l);
	ck_assert(l.cdone && !l.cfail && !l.sfail);
	ck_assert_int_eq(l.sdata, 0);
	ck_assert_int_eq(l.sbad + l.cbad, 0);
	pass(l.cs, l.c2s, l.ss, &b, 1);
	pass(l.ss, l.s2c, l.cs, &b, 1);
	link_free(&l);
}
END_TEST

/* ---- records -------------------------------------------------------- */

START_TEST(seal_open)
{
	static uint8_t big[RECMAX];
	union sockaddr_union roam;
	struct link l;
	uint64_t s1, s2;
	uint8_t one = 0x45;
	struct rec *r;
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	link_up(&l, &A, &B, &peer_b);
	s1 = pass(l.cs, l.c2s, l.ss, &one, 1);
	s2 = pass(l.cs, l.c2s, l.ss, big, 1400);
	ck_assert_uint_gt(s2, s1);
	pass(l.ss, l.s2c, l.cs, &one, 1);
	pass(l.ss, l.s2c, l.cs, big, 1400);
	/* the largest payload fills the link MTU exactly */
	ck_assert_int_eq(seal(l.cs, l.c2s, big, MAX_PLAIN), 0);
	r = q_pop(l.c2s);
	ck_assert_uint_eq(r->len, LINK_MTU);
	ck_assert_int_eq(seal(l.cs, l.c2s, big, MAX_PLAIN + 1), -EMSGSIZE);
	ck_assert_int_eq(seal(l.cs, l.c2s, big, 16384), -EMSGSIZE);
	ck_assert_int_eq(seal(l.cs, l.c2s, big, 0), -EINVAL);
	ck_assert_uint_eq(l.c2s->n, 0);
	/* a 1-byte payload costs exactly the GCM overhead */
	ck_assert_int_eq(seal(l.ss, l.s2c, &one, 1), 0);
	r = q_pop(l.s2c);
	ck_assert_uint_eq(r->len, 1 + GCM_OVERHEAD);
	/* roaming: later records go to the new address */
	sa_set(&roam, "2001:db8::7", 4000);
	dtls_sess_set_peer_addr(l.ss, &roam);
	ck_assert_int_eq(seal(l.ss, l.s2c, &one, 1), 0);
	r = q_pop(l.s2c);
	ck_assert(util_sa_equal(&r->to, &roam));
	link_free(&l);
}
END_TEST

START_TEST(seal_before_established)
{
	struct link l;
	uint8_t b = 1;

	link_start(&l, &A, &B, &peer_b);
	ck_assert_int_eq(seal(l.cs, l.c2s, &b, 1), -ENOTCONN);
	link_step(&l);                          /* HelloVerifyRequest */
	link_step(&l);                          /* server session exists now */
	ck_assert_ptr_nonnull(l.ss);
	ck_assert_int_eq(seal(l.ss, l.s2c, &b, 1), -ENOTCONN);
	link_free(&l);
}
END_TEST

START_TEST(replay)
{
	/* kept: the first ones, one in the middle, the last two */
	static const int keep[] = { 0, 5, 6, 40, NWIN - 2, NWIN - 1 };
	static struct rec recs[ARRAY_SIZE(keep)];
	struct link l;
	uint8_t msg[8] = "replay!";
	struct rec *r;
	size_t n, k;
	uint64_t seq, first;
	int i;

	link_up(&l, &A, &B, &peer_b);
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), 0);
	recs[0] = *q_pop(l.c2s);
	ck_assert_int_eq(input(l.ss, &recs[0], &n, &first), DTLS_DATA);
	ck_assert_int_eq(input(l.ss, &recs[0], &n, &seq), DTLS_ERR_REPLAY);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(input(l.ss, &recs[0], &n, &seq), DTLS_ERR_REPLAY);

	/* the window is REPLAY_WINDOW records deep: NWIN records, and the
	 * newest one arrives first */
	for (i = 0, k = 0; i < NWIN; i++) {
		msg[0] = (uint8_t)i;
		ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), 0);
		r = q_pop(l.c2s);
		if (k < ARRAY_SIZE(keep) && keep[k] == i)
			recs[k++] = *r;
	}
	ck_assert_int_eq(input(l.ss, &recs[5], &n, &seq), DTLS_DATA);
	ck_assert_uint_eq(seq, first + NWIN);
	ck_assert_int_eq(input(l.ss, &recs[0], &n, &seq), DTLS_ERR_OLD);     /* too old */
	ck_assert_int_eq(input(l.ss, &recs[1], &n, &seq), DTLS_ERR_OLD);     /* exactly the window back */
	ck_assert_int_eq(input(l.ss, &recs[2], &n, &seq), DTLS_DATA);        /* one less */
	ck_assert_uint_eq(seq, first + 7);
	ck_assert_int_eq(input(l.ss, &recs[2], &n, &seq), DTLS_ERR_REPLAY);
	ck_assert_int_eq(input(l.ss, &recs[3], &n, &seq), DTLS_DATA);        /* reordered */
	ck_assert_int_eq(input(l.ss, &recs[4], &n, &seq), DTLS_DATA);
	ck_assert_int_eq(input(l.ss, &recs[3], &n, &seq), DTLS_ERR_REPLAY);
	ck_assert_int_eq(input(l.ss, &recs[5], &n, &seq), DTLS_ERR_REPLAY);
	/* the session is unharmed */
	pass(l.cs, l.c2s, l.ss, msg, sizeof(msg));
	pass(l.ss, l.s2c, l.cs, msg, sizeof(msg));
	link_free(&l);
}
END_TEST

START_TEST(tamper)
{
	struct link l;
	uint8_t msg[100];
	struct rec r, t;
	size_t n, i;
	uint64_t seq;

	memset(msg, 0xab, sizeof(msg));
	link_up(&l, &A, &B, &peer_b);
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), 0);
	r = *q_pop(l.c2s);
	/* one flipped bit anywhere after the header: nonce, ciphertext, tag */
	for (i = DTLS_RECORD_HDR; i < r.len; i += 17) {
		t = r;
		t.b[i] ^= 0x04;
		ck_assert_int_eq(input(l.ss, &t, &n, &seq), DTLS_ERR_RECORD);
		ck_assert_uint_eq(n, 0);
	}
	/* the header is authenticated too (epoch and sequence are in the AAD) */
	t = r;
	t.b[10] ^= 0x01;
	ck_assert_int_eq(input(l.ss, &t, &n, &seq), DTLS_ERR_RECORD);
	/* the genuine record is still accepted, then its tampered copy is a replay */
	ck_assert_int_eq(input(l.ss, &r, &n, &seq), DTLS_DATA);
	t = r;
	t.b[30] ^= 0x80;
	ck_assert_int_eq(input(l.ss, &t, &n, &seq), DTLS_ERR_REPLAY);
	/* malformed: truncated, length field disagrees, two records in one */
	ck_assert_int_eq(dtls_sess_input(l.ss, r.b, 0, msg, sizeof(msg), &n, &seq),
	    DTLS_ERR_RECORD);
	ck_assert_int_eq(dtls_sess_input(l.ss, r.b, 12, msg, sizeof(msg), &n, &seq),
	    DTLS_ERR_RECORD);
	ck_assert_int_eq(dtls_sess_input(l.ss, r.b, r.len - 1, msg, sizeof(msg), &n, &seq),
	    DTLS_ERR_RECORD);
	t = r;
	memcpy(t.b + r.len, r.b, r.len);
	t.len = 2 * r.len;
	ck_assert_int_eq(input(l.ss, &t, &n, &seq), DTLS_ERR_RECORD);
	/* a forged record with a fresh sequence number */
	t = r;
	t.b[10] += 5;
	for (i = DTLS_RECORD_HDR; i < t.len; i++)
		t.b[i] = (uint8_t)(i * 31);
	ck_assert_int_eq(input(l.ss, &t, &n, &seq), DTLS_ERR_RECORD);
	/* no room for the plaintext */
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), 0);
	r = *q_pop(l.c2s);
	ck_assert_int_eq(dtls_sess_input(l.ss, r.b, r.len, msg, 0, &n, &seq), DTLS_ERR_RECORD);
	ck_assert_int_eq(dtls_sess_input(l.ss, r.b, r.len, msg, 10, &n, &seq),
	    DTLS_ERR_RECORD);
	ck_assert_uint_eq(n, 0);
	pass(l.cs, l.c2s, l.ss, msg, sizeof(msg));
	link_free(&l);
}
END_TEST

/* Data records open in place, over their own header and nonce; other
 * records (OpenSSL's) refuse an output that overlaps them. */
START_TEST(open_in_place)
{
	struct link l;
	uint8_t msg[300];
	struct rec r, t;
	size_t n, pre;
	uint64_t seq;

	link_start(&l, &A, &B, &peer_b);
	ck_assert_uint_eq(dtls_sess_data_prefix(l.cs), 0);   /* not established */
	link_free(&l);
	memset(msg, 0x5a, sizeof(msg));
	link_up(&l, &A, &B, &peer_b);
	pre = dtls_sess_data_prefix(l.ss);
	ck_assert_uint_eq(pre, DTLS_RECORD_HDR + 8);           /* AES-GCM's explicit nonce */
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), 0);
	r = *q_pop(l.c2s);
	/* tampered, in place: refused, and the genuine record still opens */
	t = r;
	t.b[pre + 3] ^= 0x10;
	ck_assert_int_eq(dtls_sess_input(l.ss, t.b, t.len, t.b + pre, t.len - pre, &n, &seq),
	    DTLS_ERR_RECORD);
	ck_assert_int_eq(dtls_sess_input(l.ss, r.b, r.len, r.b + pre, r.len - pre, &n, &seq),
	    DTLS_DATA);
	ck_assert_uint_eq(n, sizeof(msg));
	ck_assert_mem_eq(r.b + pre, msg, sizeof(msg));
	/* once data came, alerts are toud's to open, apart from out: one
	 * with an overlapping output is read whole and leaves the record be */
	dtls_sess_close(l.cs);
	r = *q_pop(l.c2s);
	ck_assert_int_eq(r.b[0], 21);
	t = r;
	ck_assert(dtls_sess_established(l.ss));
	ck_assert_int_eq(dtls_sess_input(l.ss, t.b, t.len, t.b + 1, sizeof(t.b) - 1, &n, &seq),
	    DTLS_ERR_CLOSED);
	ck_assert_mem_eq(t.b, r.b, r.len);
	ck_assert(!dtls_sess_established(l.ss));
	link_free(&l);
}
END_TEST

START_TEST(close_notify)
{
	struct link l;
	uint8_t b = 9;
	struct rec *r;
	size_t n;
	uint64_t seq;

	link_up(&l, &A, &B, &peer_b);
	dtls_sess_close(l.cs);
	ck_assert(!dtls_sess_established(l.cs));
	ck_assert_int_eq(seal(l.cs, l.c2s, &b, 1), -ENOTCONN);
	ck_assert_uint_eq(l.c2s->n, 1);
	r = q_pop(l.c2s);
	ck_assert_int_eq(r->b[0], 21);          /* alert */
	ck_assert_int_eq(input(l.ss, r, &n, &seq), DTLS_ERR_CLOSED);
	ck_assert(!dtls_sess_established(l.ss));
	ck_assert_int_eq(input(l.ss, r, &n, &seq), DTLS_ERR_CLOSED);
	ck_assert_int_eq(seal(l.ss, l.s2c, &b, 1), -ENOTCONN);
	dtls_sess_close(l.ss);                  /* nothing more to send */
	ck_assert_uint_eq(l.s2c->n, 0);
	link_free(&l);
}
END_TEST

/* Records the server sends right after it completes may reach the client
 * before the server's Finished.  OpenSSL buffers them; the data call after
 * completion still reports the number of the record it was given. */
START_TEST(early_data)
{
	struct link l;
	uint8_t d1[4] = "one", d2[4] = "two", buf[64];
	struct rec fin[8], early, *r;
	size_t nfin = 0, n, i;
	uint64_t seq, want;

	link_start(&l, &A, &B, &peer_b);
	link_run_server_done(&l);
	ck_assert_uint_eq(l.c2s->n, 0);
	ck_assert(!l.cdone);
	while ((r = q_pop(l.s2c)) != NULL)
		fin[nfin++] = *r;
	ck_assert_uint_ge(nfin, 2);             /* ChangeCipherSpec, Finished */
	ck_assert_int_eq(seal(l.ss, l.s2c, d1, sizeof(d1)), 0);
	early = *q_pop(l.s2c);
	ck_assert_int_eq(input(l.cs, &early, &n, &seq), DTLS_AGAIN);
	for (i = 0; i < nfin; i++)
		to_client(&l, &fin[i]);
	ck_assert(l.cdone && !l.cfail);
	ck_assert_int_eq(seal(l.ss, l.s2c, d2, sizeof(d2)), 0);
	r = q_pop(l.s2c);
	ck_assert_int_eq(dtls_sess_input(l.cs, r->b, r->len, buf, sizeof(buf), &n, &seq),
	    DTLS_DATA);
	ck_assert_uint_eq(n, sizeof(d2));
	ck_assert_mem_eq(buf, d2, sizeof(d2));
	for (i = 3, want = 0; i < 11; i++)
		want = want << 8 | r->b[i];
	ck_assert_uint_eq(want >> 48, 1);
	ck_assert_uint_ge(want & RECORD_SEQ_MAX, RECORD_SEQ_START);
	/* toud's number of the record (its second), not the wire's (record.h) */
	ck_assert_uint_eq(seq, (uint64_t)1 << 48 | (RECORD_SEQ_START + 1));
	pass(l.cs, l.c2s, l.ss, d1, sizeof(d1));
	link_free(&l);
}
END_TEST

/* No (key, nonce) pair twice.  Both writers of a session's epoch 1 --
 * toud's record code for application data, OpenSSL for its Finished, the
 * retransmission of that Finished after the peer lost it, and alerts --
 * are recorded, through a lost final flight, data both ways, a close_notify
 * and a rekey (a second session between the same nodes).  Per session and
 * direction, i.e. per key: every sequence number once, every AES-GCM
 * nonce_explicit once, and OpenSSL's numbers below toud's range. */
static void
ledger_check(const struct queue *q, size_t *ossl, size_t *toud)
{
	size_t i, j;

	*ossl = *toud = 0;
	for (i = 0; i < ledger.n; i++) {
		const struct ledger_ent *a = &ledger.e[i];

		if (a->q != q)
			continue;
		ck_assert_uint_eq(a->epoch, 1);
		if (a->toud) {
			ck_assert(a->type == 23 || a->type == 21);
			(*toud)++;
			ck_assert_uint_ge(a->seq, (uint64_t)1 << 47);
		} else {
			(*ossl)++;
			ck_assert_uint_lt(a->seq, (uint64_t)1 << 47);
		}
		for (j = i + 1; j < ledger.n; j++) {
			const struct ledger_ent *b = &ledger.e[j];

			if (b->q != q)
				continue;
			ck_assert_msg(a->seq != b->seq, "sequence %" PRIu64 " twice", a->seq);
			ck_assert_msg(a->nonce != b->nonce, "nonce %016" PRIx64 " twice (types %d, %d)",
			    a->nonce, a->type, b->type);
		}
	}
}

/* A rekey: the handshake of a second session l2 between the same nodes,
 * with data both ways on l1 at every step. */
static void
rekey_beside(struct link *l2, struct link *l1, const uint8_t *msg, size_t len)
{
	int i;

	link_start(l2, l1->cn, l1->sn, &peer_b);
	for (i = 0; i < 64 && !(l2->cdone && l2->sdone); i++) {
		ck_assert_int_gt(link_step(l2), 0);
		pass(l1->cs, l1->c2s, l1->ss, msg, len);
		pass(l1->ss, l1->s2c, l1->cs, msg, len);
	}
	ck_assert(l2->cdone && l2->sdone);
}

START_TEST(nonce_unique)
{
	struct timespec ts = { 0, 330 * 1000 * 1000 };
	struct link l1, l2;
	uint8_t msg[200];
	size_t ossl, toud, i;
	struct rec *r;

	memset(msg, 0x5a, sizeof(msg));
	ledger.n = 0;
	ledger.on = true;
	/* The server completes; its CCS and Finished are lost. */
	link_start(&l1, &A, &B, &peer_b);
	link_run_server_done(&l1);
	l1.s2c->head = l1.s2c->n = 0;
	/* toud seals on the server already; the client cannot open these
	 * yet (and must not let OpenSSL see them) */
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(seal(l1.ss, l1.s2c, msg, sizeof(msg)), 0);
	while ((r = q_pop(l1.s2c)) != NULL)
		to_client(&l1, r);
	ck_assert(!l1.cdone);
	/* The client retransmits; the server's OpenSSL answers with its
	 * Finished again, in epoch 1, after toud has sealed there. */
	nanosleep(&ts, NULL);
	ck_assert_int_eq(dtls_sess_handle_timeout(l1.cs), DTLS_AGAIN);
	link_run(&l1);
	ck_assert(l1.cdone && !l1.cfail && !l1.sfail);
	for (i = 0; i < 50; i++) {
		pass(l1.cs, l1.c2s, l1.ss, msg, 1 + i);
		pass(l1.ss, l1.s2c, l1.cs, msg, 1 + i);
	}
	/* A rekey: the second session's handshake and data while the first
	 * still carries data. */
	rekey_beside(&l2, &l1, msg, sizeof(msg));
	for (i = 0; i < 20; i++) {
		pass(l2.cs, l2.c2s, l2.ss, msg, sizeof(msg));
		pass(l2.ss, l2.s2c, l2.cs, msg, sizeof(msg));
	}
	/* Alerts: the old session's client closes, after more data. */
	pass(l1.cs, l1.c2s, l1.ss, msg, sizeof(msg));
	dtls_sess_close(l1.cs);
	r = q_pop(l1.c2s);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->b[0], 21);
	ck_assert_int_eq(input(l1.ss, r, &i, &(uint64_t){ 0 }), DTLS_ERR_CLOSED);
	dtls_sess_close(l2.ss);
	ledger.on = false;

	/* server -> client of the first session: two Finished from OpenSSL,
	 * the early records and the data from toud */
	ledger_check(l1.s2c, &ossl, &toud);
	ck_assert_uint_ge(ossl, 2);
	ck_assert_uint_ge(toud, 5 + 50 + 2);
	/* close_notify after data is toud's (OpenSSL's state is gone then) */
	ledger_check(l1.c2s, &ossl, &toud);
	ck_assert_uint_ge(ossl, 2);                     /* Finished (twice) */
	ck_assert_uint_ge(toud, 50 + 1);
	ledger_check(l2.c2s, &ossl, &toud);
	ck_assert_uint_ge(ossl, 1);
	ck_assert_uint_eq(toud, 20);
	ledger_check(l2.s2c, &ossl, &toud);
	ck_assert_uint_ge(ossl, 1);                     /* Finished */
	ck_assert_uint_eq(toud, 20 + 1);                /* data, close_notify */
	link_free(&l1);
	link_free(&l2);
}
END_TEST

/* Sessions with a preshared key: equal keys carry data both ways, under
 * keys of their own (a session without the key, or with another, opens
 * none of it); the keys are set before any record, never after; and,
 * across a rekey, every (sequence, nonce_explicit) of a direction occurs
 * once, as in nonce_unique. */
START_TEST(psk_sessions)
{
	uint8_t k1[RECORD_PSK_LEN], k2[RECORD_PSK_LEN], msg[100];
	struct link l1, l2, l3;
	size_t ossl, toud, i, n;
	const uint8_t *other[3] = { NULL, k2, k1 };
	struct rec *r;

	memset(k1, 0x11, sizeof(k1));
	memset(k2, 0x22, sizeof(k2));
	memset(msg, 0xa5, sizeof(msg));
	ledger.n = 0;
	ledger.on = true;
	link_up(&l1, &A, &B, &peer_b);
	ck_assert_int_eq(dtls_sess_set_psk(l1.cs, k1), 0);
	ck_assert_int_eq(dtls_sess_set_psk(l1.ss, k1), 0);
	for (i = 0; i < 50; i++) {
		pass(l1.cs, l1.c2s, l1.ss, msg, 1 + i);
		pass(l1.ss, l1.s2c, l1.cs, msg, 1 + i);
	}
	ck_assert_int_eq(dtls_sess_set_psk(l1.cs, k2), -EBUSY);
	rekey_beside(&l2, &l1, msg, sizeof(msg));
	ck_assert_int_eq(dtls_sess_set_psk(l2.cs, k1), 0);
	ck_assert_int_eq(dtls_sess_set_psk(l2.ss, k1), 0);
	for (i = 0; i < 20; i++) {
		pass(l2.cs, l2.c2s, l2.ss, msg, sizeof(msg));
		pass(l2.ss, l2.s2c, l2.cs, msg, sizeof(msg));
		pass(l1.cs, l1.c2s, l1.ss, msg, sizeof(msg));
	}
	ledger.on = false;
	ledger_check(l1.c2s, &ossl, &toud);
	ck_assert_uint_ge(toud, 50 + 20);
	ledger_check(l1.s2c, &ossl, &toud);
	ledger_check(l2.c2s, &ossl, &toud);
	ck_assert_uint_eq(toud, 20);
	ledger_check(l2.s2c, &ossl, &toud);
	ck_assert_uint_eq(toud, 20);
	/* the server with no key, another key, or (the client without) the
	 * same key: nothing opens, either way */
	for (i = 0; i < ARRAY_SIZE(other); i++) {
		link_up(&l3, &A, &B, &peer_b);
		ck_assert_int_eq(dtls_sess_set_psk(l3.cs, i == 2 ? NULL : k1), 0);
		ck_assert_int_eq(dtls_sess_set_psk(l3.ss, other[i]), 0);
		ck_assert_int_eq(seal(l3.cs, l3.c2s, msg, sizeof(msg)), 0);
		r = q_pop(l3.c2s);
		ck_assert_int_eq(input(l3.ss, r, &n, &(uint64_t){ 0 }), DTLS_ERR_RECORD);
		ck_assert_int_eq(seal(l3.ss, l3.s2c, msg, sizeof(msg)), 0);
		r = q_pop(l3.s2c);
		ck_assert_int_eq(input(l3.cs, r, &n, &(uint64_t){ 0 }), DTLS_ERR_RECORD);
		ck_assert_uint_eq(dtls_sess_record_rx(l3.ss)->failed, 1);
		ck_assert_uint_eq(dtls_sess_record_rx(l3.ss)->opened, 0);
		link_free(&l3);
	}
	/* close_notify once OpenSSL's state is gone on both sides: toud seals
	 * it with the preshared key's data keys, and the peer takes it. */
	dtls_sess_confirmed(l1.cs);
	dtls_sess_confirmed(l1.ss);
	dtls_sess_close(l1.cs);
	r = q_pop(l1.c2s);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->b[0], 21);          /* alert */
	ck_assert_int_eq(input(l1.ss, r, &n, &(uint64_t){ 0 }), DTLS_ERR_CLOSED);
	ck_assert(!dtls_sess_established(l1.ss));
	/* and from OpenSSL (the client kept its state) to a released server */
	dtls_sess_confirmed(l2.ss);
	dtls_sess_close(l2.cs);
	r = q_pop(l2.c2s);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(input(l2.ss, r, &n, &(uint64_t){ 0 }), DTLS_ERR_CLOSED);
	link_free(&l1);
	link_free(&l2);
}
END_TEST

/* ---- the ML-KEM-768 exchange (doc/protocol.md 1.5) ------------------ */

/* A handshake whose client offers the exchange (the ALPN), on whatever
 * OpenSSL this runs with; true when it was selected. */
static bool
pq_link_up(struct link *l, bool offer)
{

	link_start(l, &A, &B, &peer_b);
	dtls_sess_pq_offer(l->cs, offer);
	ck_assert_int_eq(dtls_sess_pq_offered(l->cs), offer && mlkem_available());
	link_run(l);
	ck_assert(l->cdone && l->sdone && !l->cfail && !l->sfail);
	ck_assert_int_eq(dtls_sess_pq_selected(l->cs), dtls_sess_pq_selected(l->ss));
	/* the handshake's group, and nothing more yet */
	ck_assert_str_eq(dtls_sess_key_exchange(l->cs), "x25519");
	ck_assert_str_eq(dtls_sess_key_exchange(l->ss), "x25519");
	return dtls_sess_pq_selected(l->cs);
}

/* Without ML-KEM (OpenSSL 3.0), or not offered: no ALPN selected, the
 * handshake's keys carry data at once, and show names the group only.
 * With it (3.5) and offered, the exchange runs: PQ_INIT (retransmitted
 * when lost, answered again with the same ciphertext), a tampered
 * PQ_REPLY changes nothing, no data under K0 before it is through, then
 * both sides' K1 agree and show says so. */
START_TEST(pq_exchange)
{
	uint8_t msg[100], buf[RECMAX];
	struct timeval tv;
	struct link l;
	struct rec *r, init, rep, t;
	struct gue_inner in;
	size_t n;
	uint64_t seq;
	bool have = mlkem_available();

	memset(msg, 0x3c, sizeof(msg));
	/* not offered: today's wire on every library */
	ck_assert(!pq_link_up(&l, false));
	ck_assert_int_eq(dtls_sess_pq_start(l.cs, NULL), -EINVAL);
	pass(l.cs, l.c2s, l.ss, msg, sizeof(msg));
	pass(l.ss, l.s2c, l.cs, msg, sizeof(msg));
	ck_assert(!dtls_sess_post_quantum(l.cs));
	link_free(&l);

	/* offered: selected exactly when this OpenSSL has ML-KEM */
	ck_assert_int_eq(pq_link_up(&l, true), have);
	if (!have) {
		ck_assert_int_eq(dtls_sess_pq_start(l.cs, NULL), -EINVAL);
		ck_assert(!dtls_sess_pq_pending(l.cs) && !dtls_sess_pq_pending(l.ss));
		pass(l.cs, l.c2s, l.ss, msg, sizeof(msg));
		pass(l.ss, l.s2c, l.cs, msg, sizeof(msg));
		ck_assert_str_eq(dtls_sess_key_exchange(l.cs), "x25519");
		link_free(&l);
		return;
	}
	ck_assert_int_eq(dtls_sess_pq_start(l.ss, NULL), 0);
	ck_assert_uint_eq(l.s2c->n, 0);
	ck_assert_int_eq(dtls_sess_pq_start(l.cs, NULL), 0);
	ck_assert(dtls_sess_pq_pending(l.cs) && dtls_sess_pq_pending(l.ss));
	/* one PQ_INIT: the whole key fits an IPv4 path of 1500 */
	ck_assert_uint_eq(l.c2s->n, 1);
	init = *q_pop(l.c2s);
	ck_assert_int_eq(init.b[0], 23);
	ck_assert_uint_eq(init.len, DTLS_RECORD_HDR + 8 + PQMSG_INIT_MAX + 16);
	/* no data under K0, either way */
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), -ENOTCONN);
	ck_assert_int_eq(seal(l.ss, l.s2c, msg, sizeof(msg)), -ENOTCONN);
	/* lost: the timer sends it again */
	ck_assert(dtls_sess_timeout(l.cs, &tv));
	ck_assert_int_le(tv.tv_sec * 1000000 + tv.tv_usec, 300000);
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_AGAIN);
	ck_assert_uint_eq(l.c2s->n, 0);         /* not yet due */
	usleep((useconds_t)(tv.tv_sec * 1000000 + tv.tv_usec) + 20000);
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_AGAIN);
	ck_assert_uint_eq(l.c2s->n, 1);
	r = q_pop(l.c2s);
	ck_assert_uint_eq(r->len, init.len);
	ck_assert(memcmp(r->b, init.b, init.len) != 0);        /* a new record */
	ck_assert_int_eq(input(l.ss, r, &n, &seq), DTLS_AGAIN);
	ck_assert_uint_eq(n, 0);
	ck_assert(dtls_sess_pq_pending(l.ss));
	ck_assert_uint_eq(l.s2c->n, 1);
	rep = *q_pop(l.s2c);
	ck_assert_uint_eq(rep.len, DTLS_RECORD_HDR + 8 + PQMSG_REPLY_LEN + 16);
	/* the first copy, late: the same answer again */
	ck_assert_int_eq(input(l.ss, &init, &n, &seq), DTLS_AGAIN);
	ck_assert_uint_eq(l.s2c->n, 1);
	r = q_pop(l.s2c);
	ck_assert(memcmp(r->b, rep.b, rep.len) != 0);
	/* a changed PQ_REPLY does not open: still no keys, no data */
	t = rep;
	t.b[DTLS_RECORD_HDR + 8 + 500] ^= 0x10;
	ck_assert_int_eq(input(l.cs, &t, &n, &seq), DTLS_ERR_RECORD);
	ck_assert(dtls_sess_pq_pending(l.cs));
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), -ENOTCONN);
	/* the second answer: the initiator is through and says so at once
	 * (that data passes below shows it carried the first's ciphertext) */
	ck_assert_int_eq(input(l.cs, r, &n, &seq), DTLS_DONE);
	ck_assert(!dtls_sess_pq_pending(l.cs) && dtls_sess_post_quantum(l.cs));
	ck_assert_str_eq(dtls_sess_key_exchange(l.cs), "x25519 + ml-kem-768");
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_AGAIN);
	/* the keepalive under K1, then data behind it */
	ck_assert_uint_eq(l.c2s->n, 1);
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), 0);
	ck_assert_str_eq(dtls_sess_key_exchange(l.ss), "x25519");
	/* the other answer is no record of K1 */
	ck_assert_int_eq(input(l.cs, &rep, &n, &seq), DTLS_ERR_RECORD);
	r = q_pop(l.c2s);
	ck_assert_int_eq(dtls_sess_input(l.ss, r->b, r->len, buf, sizeof(buf), &n, &seq),
	    DTLS_DONE);
	ck_assert_uint_eq(n, GUE_WORD_LEN);
	ck_assert_int_eq(gue_inner_decode(buf, n, &in), GUE_OK);
	ck_assert_int_eq(in.kind, GUE_KIND_CONTROL);
	ck_assert_uint_eq(in.proto, GUE_CTYPE_PQ_CONFIRM);
	ck_assert(dtls_sess_post_quantum(l.ss));
	ck_assert_str_eq(dtls_sess_key_exchange(l.ss), "x25519 + ml-kem-768");
	/* the responder's keepalive under K1: the initiator's repeats end */
	ck_assert(dtls_sess_timeout(l.cs, &tv));
	ck_assert_uint_eq(l.s2c->n, 1);
	ck_assert_int_eq(input(l.cs, q_pop(l.s2c), &n, &seq), DTLS_DATA);
	ck_assert_uint_eq(n, GUE_WORD_LEN);
	ck_assert(!dtls_sess_timeout(l.cs, &tv));
	r = q_pop(l.c2s);
	ck_assert_int_eq(dtls_sess_input(l.ss, r->b, r->len, buf, sizeof(buf), &n, &seq),
	    DTLS_DATA);
	ck_assert_uint_eq(n, sizeof(msg));
	ck_assert_mem_eq(buf, msg, sizeof(msg));
	pass(l.cs, l.c2s, l.ss, msg, sizeof(msg));
	pass(l.ss, l.s2c, l.cs, msg, sizeof(msg));
	/* a late PQ_INIT under K0 opens no more */
	ck_assert_int_eq(input(l.ss, &init, &n, &seq), DTLS_ERR_RECORD);
	/* close_notify under K1 is taken */
	dtls_sess_close(l.cs);
	r = q_pop(l.c2s);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(input(l.ss, r, &n, &seq), DTLS_ERR_CLOSED);
	link_free(&l);
}
END_TEST

/* The initiator's keepalive under K1 is lost (an idle link: nothing
 * else follows it): the exchange's timer sends it again, within 300 ms,
 * until the responder's own keepalive under K1 opens. */
START_TEST(pq_keepalive_lost)
{
	struct timeval tv;
	struct link l;
	struct rec *r;
	size_t n;
	uint64_t seq;

	if (!pq_link_up(&l, true)) {
		link_free(&l);
		return;
	}
	ck_assert_int_eq(dtls_sess_pq_start(l.ss, NULL), 0);
	ck_assert_int_eq(dtls_sess_pq_start(l.cs, NULL), 0);
	ck_assert_int_eq(input(l.ss, q_pop(l.c2s), &n, &seq), DTLS_AGAIN);
	ck_assert_int_eq(input(l.cs, q_pop(l.s2c), &n, &seq), DTLS_DONE);
	ck_assert_uint_eq(l.c2s->n, 1);
	(void)q_pop(l.c2s);                     /* lost */
	ck_assert(dtls_sess_timeout(l.cs, &tv));
	ck_assert_int_le(tv.tv_sec * 1000000 + tv.tv_usec, 300000);
	usleep((useconds_t)(tv.tv_sec * 1000000 + tv.tv_usec) + 20000);
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_AGAIN);
	ck_assert_uint_eq(l.c2s->n, 1);
	ck_assert_int_eq(input(l.ss, q_pop(l.c2s), &n, &seq), DTLS_DONE);
	ck_assert(dtls_sess_post_quantum(l.ss));
	/* the next repeat doubles; the responder's keepalive ends them */
	ck_assert(dtls_sess_timeout(l.cs, &tv));
	ck_assert_int_gt(tv.tv_sec * 1000000 + tv.tv_usec, 300000);
	ck_assert_uint_eq(l.s2c->n, 1);
	r = q_pop(l.s2c);
	ck_assert_int_eq(input(l.cs, r, &n, &seq), DTLS_DATA);
	ck_assert(!dtls_sess_timeout(l.cs, &tv));
	ck_assert_int_eq(dtls_sess_handle_timeout(l.cs), DTLS_AGAIN);
	ck_assert_uint_eq(l.c2s->n, 0);
	link_free(&l);
}
END_TEST

/* ---- cookies -------------------------------------------------------- */

/* Start a client and bring its second ClientHello (with B's cookie). */
static struct rec
hello_with_cookie(struct link *l, size_t *ch1len)
{
	struct rec ch1, *r;

	link_start(l, &A, &B, &peer_b);
	ch1 = *q_pop(l->c2s);
	*ch1len = ch1.len;
	ck_assert_int_eq(dtls_listen(B.c, ch1.b, ch1.len, &A.addr, q_out, l->s2c, &l->ss),
	    DTLS_LISTEN_REPLIED);
	ck_assert_ptr_null(l->ss);
	r = q_pop(B.lq);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_lt(r->len, ch1.len);
	ck_assert_int_eq(r->b[0], 22);
	to_client(l, r);
	ck_assert_uint_eq(l->c2s->n, 1);
	r = q_pop(l->c2s);
	ck_assert_uint_gt(r->len, ch1.len);     /* now with the cookie */
	return *r;
}

START_TEST(cookie_exchange)
{
	union sockaddr_union other, other_port;
	struct link l;
	struct rec ch2, *r;
	size_t ch1len;

	ch2 = hello_with_cookie(&l, &ch1len);
	/* HelloVerifyRequest: 13 + 12 + 2 + 1 + 18-byte cookie */
	ck_assert_uint_eq(B.lq->calls, 1);
	/* the cookie is bound to the source address and port */
	sa_set(&other, "203.0.113.9", 6080);
	ck_assert_int_eq(dtls_listen(B.c, ch2.b, ch2.len, &other, q_out, l.s2c, &l.ss),
	    DTLS_LISTEN_REPLIED);
	ck_assert_ptr_null(l.ss);
	r = q_pop(B.lq);
	ck_assert(util_sa_equal(&r->to, &other));
	ck_assert_uint_eq(r->len, 46);
	ck_assert_uint_lt(r->len, ch1len);
	other_port = A.addr;
	other_port.in.sin_port = htons(6081);
	ck_assert_int_eq(dtls_listen(B.c, ch2.b, ch2.len, &other_port, q_out, l.s2c, &l.ss),
	    DTLS_LISTEN_REPLIED);
	q_pop(B.lq);
	/* from the right source it opens the session */
	ck_assert_int_eq(dtls_listen(B.c, ch2.b, ch2.len, &A.addr, q_out, l.s2c, &l.ss),
	    DTLS_LISTEN_ACCEPTED);
	ck_assert_ptr_nonnull(l.ss);
	ck_assert_uint_eq(B.lq->n, 0);
	ck_assert_uint_gt(l.s2c->n, 0);
	link_run(&l);
	ck_assert(l.cdone && l.sdone);
	link_free(&l);
}
END_TEST

struct admit_log {
	unsigned calls;
	size_t credit;
	void *give;                     /* what admit returns */
};

static void *
admit_cb(void *arg, const union sockaddr_union *from, size_t credit)
{
	struct admit_log *a = arg;

	ck_assert(util_sa_equal(from, &A.addr));
	a->calls++;
	a->credit = credit;
	return a->give;
}

/* The cookie admits one session ID: the same ClientHello with another ID
 * earns a new HelloVerifyRequest (no state, admit not asked).  With its own
 * ID the caller is asked after the cookie, learns the size of the first
 * ClientHello, and a refusal leaves nothing behind and sends nothing. */
START_TEST(cookie_bound_to_session_id)
{
	struct admit_log al = { 0 };
	struct link l;
	struct rec ch1, ch2, *r;

	link_start(&l, &A, &B, &peer_b);
	ch1 = *q_pop(l.c2s);
	ck_assert_int_eq(dtls_listen_admit(B.c, ch1.b, ch1.len, &A.addr, 0x1111, q_out,
	    admit_cb, &al, &l.ss), DTLS_LISTEN_REPLIED);
	ck_assert_uint_eq(al.calls, 0);
	ck_assert_uint_eq(B.lq->sid, 0x1111);   /* the answer says which hello it answers */
	r = q_pop(B.lq);
	to_client(&l, r);
	ch2 = *q_pop(l.c2s);
	/* replayed with a fresh session ID: a new cookie request */
	ck_assert_int_eq(dtls_listen_admit(B.c, ch2.b, ch2.len, &A.addr, 0x2222, q_out,
	    admit_cb, &al, &l.ss), DTLS_LISTEN_REPLIED);
	ck_assert_uint_eq(al.calls, 0);
	ck_assert_ptr_null(l.ss);
	ck_assert_uint_eq(B.lq->sid, 0x2222);
	r = q_pop(B.lq);
	ck_assert_uint_lt(r->len, ch2.len);
	/* its own ID, refused by the caller: no reply, no session */
	al.give = NULL;
	ck_assert_int_eq(dtls_listen_admit(B.c, ch2.b, ch2.len, &A.addr, 0x1111, q_out,
	    admit_cb, &al, &l.ss), DTLS_LISTEN_REFUSED);
	ck_assert_uint_eq(al.calls, 1);
	ck_assert_uint_eq(al.credit, ch1.len);
	ck_assert_ptr_null(l.ss);
	ck_assert_uint_eq(B.lq->n, 0);
	ck_assert_uint_eq(l.s2c->n, 0);
	/* admitted: the session answers at once and completes */
	al.give = l.s2c;
	ck_assert_int_eq(dtls_listen_admit(B.c, ch2.b, ch2.len, &A.addr, 0x1111, q_out,
	    admit_cb, &al, &l.ss), DTLS_LISTEN_ACCEPTED);
	ck_assert_uint_eq(al.calls, 2);
	ck_assert_ptr_nonnull(l.ss);
	ck_assert_uint_gt(l.s2c->n, 0);
	link_run(&l);
	ck_assert(l.cdone && l.sdone);
	link_free(&l);
}
END_TEST

START_TEST(cookie_ipv6)
{
	union sockaddr_union a6;
	struct link l;
	struct rec ch1, *r;

	sa_set(&a6, "2001:db8::1", 6080);
	link_start(&l, &A, &B, &peer_b);
	ch1 = *q_pop(l.c2s);
	ck_assert_int_eq(dtls_listen(B.c, ch1.b, ch1.len, &a6, q_out, l.s2c, &l.ss),
	    DTLS_LISTEN_REPLIED);
	r = q_pop(B.lq);
	ck_assert(util_sa_equal(&r->to, &a6));
	r->to = A.addr;                         /* deliver it anyway */
	to_client(&l, r);
	r = q_pop(l.c2s);
	ck_assert_int_eq(dtls_listen(B.c, r->b, r->len, &A.addr, q_out, l.s2c, &l.ss),
	    DTLS_LISTEN_REPLIED);
	q_pop(B.lq);
	ck_assert_int_eq(dtls_listen(B.c, r->b, r->len, &a6, q_out, l.s2c, &l.ss),
	    DTLS_LISTEN_ACCEPTED);
	link_free(&l);
}
END_TEST

START_TEST(cookie_rotation)
{
	struct link l1, l2;
	struct rec ch2;
	size_t ch1len;

	/* one rotation back: still accepted */
	ch2 = hello_with_cookie(&l1, &ch1len);
	dtls_ctx_rotate_cookie(B.c);
	ck_assert_int_eq(dtls_listen(B.c, ch2.b, ch2.len, &A.addr, q_out, l1.s2c, &l1.ss),
	    DTLS_LISTEN_ACCEPTED);
	link_run(&l1);
	ck_assert(l1.cdone && l1.sdone);
	link_free(&l1);

	/* two rotations back: refused, a fresh cookie is offered */
	ch2 = hello_with_cookie(&l2, &ch1len);
	dtls_ctx_rotate_cookie(B.c);
	dtls_ctx_rotate_cookie(B.c);
	ck_assert_int_eq(dtls_listen(B.c, ch2.b, ch2.len, &A.addr, q_out, l2.s2c, &l2.ss),
	    DTLS_LISTEN_REPLIED);
	ck_assert_ptr_null(l2.ss);
	ck_assert_uint_eq(B.lq->n, 1);
	/* The HelloVerifyRequest of a stateless listener always carries
	 * message sequence 0, which a client past its first one ignores:
	 * this client is stuck until the caller gives up on it.  A new one
	 * gets in. */
	link_run(&l2);
	ck_assert(!l2.cdone && !l2.sdone);
	link_free(&l2);
	link_up(&l2, &A, &B, &peer_b);
	ck_assert_int_eq(l2.replied, 1);
	ck_assert_int_eq(l2.accepted, 1);
	link_free(&l2);
}
END_TEST

START_TEST(listen_drop)
{
	struct link l, m;
	struct dtls_sess *s;
	struct rec ch1, t;
	uint8_t msg[20] = "not a handshake";
	size_t i;

	link_up(&l, &A, &B, &peer_b);
	/* application data, alerts and ChangeCipherSpec never open a session */
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), 0);
	t = *q_pop(l.c2s);
	ck_assert_int_eq(dtls_listen(B.c, t.b, t.len, &A.addr, q_out, l.s2c, &s),
	    DTLS_LISTEN_DROP);
	ck_assert_ptr_null(s);
	link_start(&m, &A, &B, &peer_b);
	ch1 = *q_pop(m.c2s);
	for (i = 20; i <= 23; i++) {
		t = ch1;
		t.b[0] = (uint8_t)i;
		ck_assert_int_eq(dtls_listen(B.c, t.b, t.len, &A.addr, q_out, m.s2c, &s),
		    i == 22 ? DTLS_LISTEN_REPLIED : DTLS_LISTEN_DROP);
		dtls_sess_free(s);
	}
	q_pop(B.lq);
	/* truncated, length mismatch, two records, garbage body, empty */
	ck_assert_int_eq(dtls_listen(B.c, ch1.b, 12, &A.addr, q_out, m.s2c, &s), DTLS_LISTEN_DROP);
	ck_assert_int_eq(dtls_listen(B.c, ch1.b, 0, &A.addr, q_out, m.s2c, &s), DTLS_LISTEN_DROP);
	ck_assert_int_eq(dtls_listen(B.c, ch1.b, ch1.len - 1, &A.addr, q_out, m.s2c, &s),
	    DTLS_LISTEN_DROP);
	t = ch1;
	memcpy(t.b + ch1.len, ch1.b, ch1.len);
	ck_assert_int_eq(dtls_listen(B.c, t.b, 2 * ch1.len, &A.addr, q_out, m.s2c, &s),
	    DTLS_LISTEN_DROP);
	t = ch1;
	for (i = DTLS_RECORD_HDR; i < t.len; i++)
		t.b[i] = (uint8_t)(i * 13 + 1);
	ck_assert_int_eq(dtls_listen(B.c, t.b, t.len, &A.addr, q_out, m.s2c, &s),
	    DTLS_LISTEN_DROP);
	/* a ClientHello claiming a later epoch */
	t = ch1;
	t.b[4] = 1;
	ck_assert_int_eq(dtls_listen(B.c, t.b, t.len, &A.addr, q_out, m.s2c, &s),
	    DTLS_LISTEN_DROP);
	ck_assert_uint_eq(B.lq->n, 0);
	ck_assert_ptr_null(s);
	ck_assert_uint_eq(ERR_peek_error(), 0);
	/* the listener still works */
	q_out(m.c2s, ch1.b, ch1.len, &ch1.to, NULL);
	link_run(&m);
	ck_assert(m.cdone && m.sdone);
	link_free(&m);
	link_free(&l);
}
END_TEST

/* A second handshake between the same nodes while the first carries data;
 * the first keeps receiving until it is freed. */
START_TEST(rekey_switch)
{
	struct link l1, l2;
	uint8_t old[3] = "old", new[3] = "new";
	int i;

	link_up(&l1, &A, &B, &peer_b);
	link_start(&l2, &A, &B, &peer_b);
	for (i = 0; i < 64 && !(l2.cdone && l2.sdone); i++) {
		ck_assert_int_gt(link_step(&l2), 0);
		pass(l1.cs, l1.c2s, l1.ss, old, sizeof(old));
		pass(l1.ss, l1.s2c, l1.cs, old, sizeof(old));
	}
	ck_assert(l2.cdone && l2.sdone && !l2.cfail && !l2.sfail);
	ck_assert_mem_eq(dtls_sess_peer_fp(l2.ss), A.fp, DTLS_FP_LEN);
	ck_assert_mem_eq(dtls_sess_peer_fp(l2.cs), B.fp, DTLS_FP_LEN);
	pass(l2.cs, l2.c2s, l2.ss, new, sizeof(new));
	pass(l2.ss, l2.s2c, l2.cs, new, sizeof(new));
	/* drain: late records of the old session still open on it */
	pass(l1.cs, l1.c2s, l1.ss, old, sizeof(old));
	pass(l1.ss, l1.s2c, l1.cs, old, sizeof(old));
	/* keys differ: a record of one session does not open on the other */
	ck_assert_int_eq(seal(l1.cs, l1.c2s, old, sizeof(old)), 0);
	{
		struct rec r = *q_pop(l1.c2s);
		size_t n;
		uint64_t seq;

		ck_assert_int_ne(input(l2.ss, &r, &n, &seq), DTLS_DATA);
		ck_assert_int_eq(input(l1.ss, &r, &n, &seq), DTLS_DATA);
	}
	link_free(&l1);
	pass(l2.cs, l2.c2s, l2.ss, new, sizeof(new));
	link_free(&l2);
}
END_TEST

/* ---- memory --------------------------------------------------------- */

static size_t
heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* What a live session keeps once its handshake is over: the heap that
 * dtls_sess_free() gives back.  A server holds one per connected peer. */
static size_t
sess_footprint(struct dtls_sess *s)
{
	size_t before = heap_in_use();

	dtls_sess_free(s);
	return before - heap_in_use();
}

START_TEST(session_memory)
{
	struct link l;
	uint8_t msg[3] = "abc";
	size_t cb, sb;

	link_up(&l, &A, &B, &peer_b);
	pass(l.cs, l.c2s, l.ss, msg, sizeof(msg));
	pass(l.ss, l.s2c, l.cs, msg, sizeof(msg));
	free(l.c2s);
	free(l.s2c);
	l.c2s = l.s2c = NULL;
	sb = sess_footprint(l.ss);
	cb = sess_footprint(l.cs);
	l.cs = l.ss = NULL;
	fprintf(stderr, "check_dtls: live session: server %zu bytes, client %zu bytes\n", sb, cb);
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED_HEAP 1
#endif
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(SANITIZED_HEAP)
	ck_assert_uint_gt(sb, 0);
	ck_assert_uint_le(sb, 16384);
	ck_assert_uint_le(cb, 16384);
#endif
}
END_TEST

/* ---- key log -------------------------------------------------------- */

static char *
slurp(const char *path, size_t *len)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* At least `lines` CLIENT_RANDOM lines (one per side and handshake). */
static void
check_keylog(const char *path, int lines)
{
	struct stat st;
	size_t len;
	char *s = slurp(path, &len), *nl;
	int i;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_uint_gt(len, 0);
	ck_assert_int_eq(s[len - 1], '\n');
	/* TLS 1.2 master secrets: "CLIENT_RANDOM <64 hex> <96 hex>" */
	for (i = 0; i < lines; i++) {
		ck_assert_int_eq(strncmp(s, "CLIENT_RANDOM ", 14), 0);
		nl = strchr(s, '\n');
		ck_assert_ptr_nonnull(nl);
		ck_assert_int_eq(nl - s, 14 + 64 + 1 + 96);
		s = nl + 1;
	}
}

/* Run the ML-KEM-768 exchange of a link whose handshake selected it. */
static void
pq_run(struct link *l)
{
	struct rec *r;
	size_t n;
	uint64_t seq;
	int i;

	ck_assert_int_eq(dtls_sess_pq_start(l->ss, NULL), 0);
	ck_assert_int_eq(dtls_sess_pq_start(l->cs, NULL), 0);
	for (i = 0; i < 8 && !(dtls_sess_post_quantum(l->cs) && dtls_sess_post_quantum(l->ss));
	    i++) {
		while ((r = q_pop(l->c2s)) != NULL)
			(void)input(l->ss, r, &n, &seq);
		while ((r = q_pop(l->s2c)) != NULL)
			(void)input(l->cs, r, &n, &seq);
	}
	ck_assert(dtls_sess_post_quantum(l->cs) && dtls_sess_post_quantum(l->ss));
}

/* With a key log, each side writes K1 as one TOUD_PQ_DATA_KEYS line (the
 * same line), named by the client random of the handshake's
 * CLIENT_RANDOM line, and its keys alone open the records after the
 * exchange (AES-128-GCM as any DTLS 1.2 implementation would, which is
 * what contrib/toud.lua does).  Without ML-KEM: no such line. */
START_TEST(pq_keylog)
{
	char path[PATH_MAX], cr[65], ck[33], sk[33], civ[9], siv[9], want[14 + 64 + 1];
	uint8_t msg[64], key[16], iv[4], nonce[12], aad[13], plain[RECMAX];
	struct link l;
	struct rec *r;
	EVP_CIPHER_CTX *ctx;
	size_t len, ctlen, k;
	char *s, *first, *second, *nl;
	int outl = 0;

	memset(msg, 0x6d, sizeof(msg));
	path_join(path, tmpdir, "pq.log");
	dtls_ctx_free(A.c);
	dtls_ctx_free(B.c);
	A.c = ctx_open(&A, path);
	B.c = ctx_open(&B, path);
	if (!pq_link_up(&l, true)) {
		link_free(&l);
		s = slurp(path, &len);
		ck_assert_ptr_null(strstr(s, DTLS_KEYLOG_PQ_LABEL));
		return;
	}
	s = slurp(path, &len);
	ck_assert_ptr_null(strstr(s, DTLS_KEYLOG_PQ_LABEL));
	pq_run(&l);
	s = slurp(path, &len);
	first = strstr(s, DTLS_KEYLOG_PQ_LABEL " ");
	ck_assert_ptr_nonnull(first);
	second = strstr(first + 1, DTLS_KEYLOG_PQ_LABEL " ");
	ck_assert_ptr_nonnull(second);
	ck_assert_ptr_null(strstr(second + 1, DTLS_KEYLOG_PQ_LABEL));
	nl = strchr(first, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_int_eq(strncmp(first, second, (size_t)(nl - first + 1)), 0);
	ck_assert_int_eq(sscanf(first, DTLS_KEYLOG_PQ_LABEL " %64[0-9a-f] %32[0-9a-f] %32[0-9a-f] "
	    "%8[0-9a-f] %8[0-9a-f]", cr, ck, sk, civ, siv), 5);
	ck_assert_int_eq(nl - first, (int)strlen(DTLS_KEYLOG_PQ_LABEL) + 1 + 64 + 1 + 32 + 1 +
	    32 + 1 + 8 + 1 + 8);
	snprintf(want, sizeof(want), "CLIENT_RANDOM %s", cr);
	ck_assert_ptr_nonnull(strstr(s, want));
	for (k = 0; k < 16; k++)
		ck_assert_int_eq(sscanf(ck + 2 * k, "%2hhx", &key[k]), 1);
	for (k = 0; k < 4; k++)
		ck_assert_int_eq(sscanf(civ + 2 * k, "%2hhx", &iv[k]), 1);
	/* a record of the client after the exchange, opened with the line */
	ck_assert_int_eq(seal(l.cs, l.c2s, msg, sizeof(msg)), 0);
	r = q_pop(l.c2s);
	ck_assert_uint_eq(r->len, DTLS_RECORD_HDR + 8 + sizeof(msg) + 16);
	ctlen = sizeof(msg);
	memcpy(nonce, iv, 4);
	memcpy(nonce + 4, r->b + DTLS_RECORD_HDR, 8);
	memcpy(aad, r->b + 3, 8);
	aad[8] = 23;
	aad[9] = 0xfe;
	aad[10] = 0xfd;
	aad[11] = (uint8_t)(ctlen >> 8);
	aad[12] = (uint8_t)ctlen;
	ck_assert_ptr_nonnull(ctx = EVP_CIPHER_CTX_new());
	ck_assert_int_eq(EVP_DecryptInit_ex(ctx, EVP_aes_128_gcm(), NULL, key, nonce), 1);
	ck_assert_int_eq(EVP_DecryptUpdate(ctx, NULL, &outl, aad, sizeof(aad)), 1);
	ck_assert_int_eq(EVP_DecryptUpdate(ctx, plain, &outl, r->b + DTLS_RECORD_HDR + 8,
	    (int)ctlen), 1);
	ck_assert_int_eq(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16,
	    r->b + DTLS_RECORD_HDR + 8 + ctlen), 1);
	ck_assert_int_eq(EVP_DecryptFinal_ex(ctx, plain + outl, &outl), 1);
	EVP_CIPHER_CTX_free(ctx);
	ck_assert_mem_eq(plain, msg, sizeof(msg));
	link_free(&l);
}
END_TEST

/* A 1280-byte IPv6 path: the whole key does not fit one datagram (1291
 * bytes), so PQ_INIT goes in two halves, each within the path, which the
 * responder takes in either order; the exchange completes.  (The link
 * MTU is what handshake.c gives the DTLS layer for path-mtu = 1280: IPv4's
 * headers subtracted; IPv6 has 20 bytes more.) */
START_TEST(pq_split_ipv6)
{
	uint8_t msg[100];
	struct link l;
	struct rec h1, h2;
	size_t n;
	uint64_t seq;
	bool have = mlkem_available();
	struct dtls_ctx_config cfg = {
		.authorize = authorize, .listen_output = q_listen_out,
		.link_mtu = 1280 - 20 - 8 - 16,
	};
	char err[256] = "";

	memset(msg, 0x42, sizeof(msg));
	sa_set(&A.addr, "2001:db8::1", 6080);
	sa_set(&B.addr, "2001:db8::2", 6080);
	dtls_ctx_free(A.c);
	dtls_ctx_free(B.c);
	cfg.private_key = A.key, cfg.certificate = A.cert, cfg.authorize_arg = &A.az;
	cfg.listen_output_arg = A.lq;
	ck_assert_msg((A.c = dtls_ctx_new(&cfg, err, sizeof(err))) != NULL, "%s", err);
	cfg.private_key = B.key, cfg.certificate = B.cert, cfg.authorize_arg = &B.az;
	cfg.listen_output_arg = B.lq;
	ck_assert_msg((B.c = dtls_ctx_new(&cfg, err, sizeof(err))) != NULL, "%s", err);
	ck_assert_int_eq(pq_link_up(&l, true), have);
	if (!have) {
		pass(l.cs, l.c2s, l.ss, msg, sizeof(msg));
		link_free(&l);
		return;
	}
	ck_assert_int_eq(dtls_sess_pq_start(l.ss, NULL), 0);
	ck_assert_int_eq(dtls_sess_pq_start(l.cs, NULL), 0);
	ck_assert_uint_eq(l.c2s->n, 2);
	h1 = *q_pop(l.c2s);
	h2 = *q_pop(l.c2s);
	ck_assert_uint_eq(h1.len, DTLS_RECORD_HDR + 8 + PQMSG_INIT_HDR + 592 + 16);
	ck_assert_uint_eq(h2.len, h1.len);
	ck_assert_uint_le(40 + 8 + 16 + h1.len, 1280);
	ck_assert_int_eq(input(l.ss, &h2, &n, &seq), DTLS_AGAIN);
	ck_assert_uint_eq(l.s2c->n, 0);                /* half a key: no answer yet */
	ck_assert_int_eq(input(l.ss, &h1, &n, &seq), DTLS_AGAIN);
	ck_assert_uint_eq(l.s2c->n, 1);
	ck_assert_uint_le(40 + 8 + 16 + l.s2c->r[l.s2c->head].len, 1280);
	ck_assert_int_eq(input(l.cs, q_pop(l.s2c), &n, &seq), DTLS_DONE);
	ck_assert_int_eq(input(l.ss, q_pop(l.c2s), &n, &seq), DTLS_DONE);
	ck_assert_uint_eq(l.s2c->n, 1);
	ck_assert_int_eq(input(l.cs, q_pop(l.s2c), &n, &seq), DTLS_DATA);    /* its keepalive */
	pass(l.cs, l.c2s, l.ss, msg, sizeof(msg));
	pass(l.ss, l.s2c, l.cs, msg, sizeof(msg));
	link_free(&l);
}
END_TEST

START_TEST(keylog_env)
{
	char path[PATH_MAX];
	struct link l;

	ck_assert(!dtls_ctx_keylog_active(A.c));
	path_join(path, tmpdir, "keys.log");
	dtls_ctx_free(A.c);
	dtls_ctx_free(B.c);
	setenv("SSLKEYLOGFILE", path, 1);
	A.c = ctx_open(&A, NULL);
	B.c = ctx_open(&B, NULL);
	unsetenv("SSLKEYLOGFILE");
	ck_assert(dtls_ctx_keylog_active(A.c));
	ck_assert(dtls_ctx_keylog_active(B.c));
	link_up(&l, &A, &B, &peer_b);
	link_free(&l);
	check_keylog(path, 2);
}
END_TEST

START_TEST(keylog_config)
{
	char path[PATH_MAX], err[256];
	struct dtls_ctx_config cfg = {
		.private_key = A.key, .certificate = A.cert, .authorize = authorize,
		.authorize_arg = &A.az, .link_mtu = LINK_MTU,
	};
	struct link l;

	path_join(path, tmpdir, "cfg.log");
	dtls_ctx_free(B.c);
	B.c = ctx_open(&B, path);
	ck_assert(dtls_ctx_keylog_active(B.c));
	link_up(&l, &A, &B, &peer_b);
	link_free(&l);
	check_keylog(path, 1);
	/* an unwritable key log is an error that names it */
	path_join(path, tmpdir, "missing/k.log");
	cfg.keylog_file = path;
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, path));
}
END_TEST

/* A planted key log is refused, never followed: a symlink (its target
 * stays untouched), a file others can read, one owned by another user, a
 * hard link; the message names the file. */
START_TEST(keylog_refuses_planted)
{
	char path[PATH_MAX], target[PATH_MAX], err[256];
	struct dtls_ctx_config cfg = {
		.private_key = A.key, .certificate = A.cert, .authorize = authorize,
		.authorize_arg = &A.az, .link_mtu = LINK_MTU,
	};
	struct stat st;
	int fd;

	cfg.keylog_file = path;
	path_join(target, tmpdir, "victim");
	fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);

	path_join(path, tmpdir, "link.log");
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_int_eq(st.st_size, 0);

	path_join(path, tmpdir, "open.log");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, 0644), 0);
	close(fd);
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "0600"));

	path_join(path, tmpdir, "hard.log");
	ck_assert_int_eq(link(target, path), 0);
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "hard links"));

	if (geteuid() == 0) {
		path_join(path, tmpdir, "other.log");
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fchown(fd, 65534, 65534), 0);
		close(fd);
		ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
		ck_assert_ptr_nonnull(strstr(err, "another user"));
	}
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
}
END_TEST

/* ---- keys ----------------------------------------------------------- */

/* SHA-256 of the public key, computed from the private key file. */
static void
key_fp(const char *key_file, uint8_t fp[DTLS_FP_LEN])
{
	FILE *f = fopen(key_file, "r");
	EVP_PKEY *pk;
	unsigned char *der = NULL;
	unsigned int mdlen;
	int n;

	ck_assert_ptr_nonnull(f);
	pk = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(pk);
	ck_assert_int_eq(EVP_PKEY_get_bits(pk), 256);
	ck_assert_int_eq(EVP_PKEY_is_a(pk, "EC"), 1);
	n = i2d_PUBKEY(pk, &der);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(EVP_Digest(der, (size_t)n, fp, &mdlen, EVP_sha256(), NULL), 1);
	OPENSSL_free(der);
	EVP_PKEY_free(pk);
}

START_TEST(genkey_files)
{
	char dir[PATH_MAX], key[PATH_MAX], cert[PATH_MAX], err[512], s[7 + 64 + 1];
	char before[4096], after[4096], want[PATH_MAX + 16];
	const char *txt;
	uint8_t fp[DTLS_FP_LEN], fp2[DTLS_FP_LEN], fp3[DTLS_FP_LEN];
	struct stat st;
	size_t n;
	X509 *x;
	FILE *f;
	int i;

	path_join(dir, tmpdir, "g");
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(keys_genkey(dir, fp, err, sizeof(err)), 0);
	path_join(key, dir, "key.pem");
	path_join(cert, dir, "cert.pem");
	ck_assert_int_eq(stat(key, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(stat(cert, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	ck_assert_int_eq(keys_cert_fingerprint(cert, fp2, err, sizeof(err)), 0);
	ck_assert_mem_eq(fp, fp2, DTLS_FP_LEN);
	key_fp(key, fp3);
	ck_assert_mem_eq(fp, fp3, DTLS_FP_LEN);
	keys_fp_format(fp, s);
	ck_assert_uint_eq(strlen(s), 71);
	ck_assert_int_eq(strncmp(s, "sha256:", 7), 0);
	for (i = 7; i < 71; i++)
		ck_assert(strchr("0123456789abcdef", s[i]) != NULL);

	/* the certificate: v3, CN toud, self-signed with SHA-256, long-lived */
	f = fopen(cert, "r");
	ck_assert_ptr_nonnull(f);
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(X509_get_version(x), X509_VERSION_3);
	ck_assert_int_eq(X509_check_host(x, "toud", 4, 0, NULL), 1);
	ck_assert_int_eq(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);
	ck_assert_int_eq(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	ck_assert_int_lt(X509_cmp_current_time(X509_get0_notBefore(x)), 0);
	ck_assert_int_gt(X509_cmp_time(X509_get0_notAfter(x),
	    &(time_t){ time(NULL) + 99LL * 365 * 86400 }), 0);
	X509_free(x);

	/* a second genkey replaces the pair as a whole: a new key, its own
	 * certificate, the key still 0600, no temporary files left */
	txt = slurp(cert, &n);
	ck_assert_uint_lt(n, sizeof(before));
	memcpy(before, txt, n + 1);
	ck_assert_int_eq(keys_genkey(dir, fp2, err, sizeof(err)), 0);
	ck_assert_mem_ne(fp, fp2, DTLS_FP_LEN);
	txt = slurp(cert, &n);
	ck_assert_uint_lt(n, sizeof(after));
	memcpy(after, txt, n + 1);
	ck_assert_str_ne(after, before);
	ck_assert_int_eq(keys_cert_fingerprint(cert, fp, err, sizeof(err)), 0);
	ck_assert_mem_eq(fp, fp2, DTLS_FP_LEN);
	ck_assert_int_eq(stat(key, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	snprintf(want, sizeof(want), "%s/.key.pem.new", dir);
	ck_assert_int_ne(access(want, F_OK), 0);
	snprintf(want, sizeof(want), "%s/.cert.pem.new", dir);
	ck_assert_int_ne(access(want, F_OK), 0);

	/* two keys differ */
	ck_assert_mem_ne(A.fp, B.fp, DTLS_FP_LEN);
	path_join(dir, tmpdir, "nonexistent");
	ck_assert_int_eq(keys_genkey(dir, fp2, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, dir));
}
END_TEST

START_TEST(fingerprint_errors)
{
	char path[PATH_MAX], err[512];
	uint8_t fp[DTLS_FP_LEN], fp2[DTLS_FP_LEN];
	FILE *f;

	path_join(path, tmpdir, "none.pem");
	ck_assert_int_eq(keys_cert_fingerprint(path, fp, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, path));
	f = fopen(path, "w");
	fputs("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	ck_assert_int_eq(keys_cert_fingerprint(path, fp, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "neither a PEM certificate nor"));
	/* a private key gives its certificate's fingerprint */
	ck_assert_int_eq(keys_cert_fingerprint(A.key, fp, err, sizeof(err)), 0);
	ck_assert_int_eq(keys_cert_fingerprint(A.cert, fp2, err, sizeof(err)), 0);
	ck_assert_mem_eq(fp, fp2, sizeof(fp));
}
END_TEST

START_TEST(fp_format)
{
	uint8_t fp[DTLS_FP_LEN];
	char s[7 + 64 + 1];
	int i;

	for (i = 0; i < DTLS_FP_LEN; i++)
		fp[i] = (uint8_t)(i * 8 + 15);
	keys_fp_format(fp, s);
	ck_assert_str_eq(s, "sha256:0f171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff07");
}
END_TEST

START_TEST(ctx_errors)
{
	struct dtls_ctx_config cfg = {
		.private_key = A.key, .certificate = B.cert, .authorize = authorize,
		.authorize_arg = &A.az, .link_mtu = LINK_MTU,
	};
	char err[512], missing[PATH_MAX];

	/* key and certificate of different nodes */
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "does not match"));
	ck_assert_ptr_nonnull(strstr(err, A.key));
	ck_assert_ptr_nonnull(strstr(err, B.cert));
	/* unreadable files */
	path_join(missing, tmpdir, "nokey.pem");
	cfg.private_key = missing;
	cfg.certificate = A.cert;
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, missing));
	cfg.private_key = A.key;
	cfg.certificate = missing;
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, missing));
	/* a certificate is not a key */
	cfg.private_key = A.cert;
	cfg.certificate = A.cert;
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, A.cert));
	/* bad settings */
	cfg.private_key = A.key;
	cfg.link_mtu = 100;
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "mtu"));
	cfg.link_mtu = LINK_MTU;
	cfg.authorize = NULL;
	ck_assert_ptr_null(dtls_ctx_new(&cfg, err, sizeof(err)));
	cfg.authorize = authorize;
	dtls_ctx_free(dtls_ctx_new(&cfg, err, sizeof(err)));
	dtls_ctx_free(NULL);
	dtls_sess_free(NULL);
}
END_TEST

/* ---- CA mode -------------------------------------------------------- */

static X509 *
make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, bool ca)
{
	X509 *x = X509_new();
	X509V3_CTX v3;
	X509_EXTENSION *ext;

	ck_assert_ptr_nonnull(x);
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), ca ? 1 : 2);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(issuer != NULL ? issuer : x));
	X509_set_pubkey(x, key);
	X509V3_set_ctx(&v3, issuer != NULL ? issuer : x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints,
	    ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	if (ca) {
		ext = X509V3_EXT_conf_nid(NULL, &v3, NID_key_usage, "critical,keyCertSign");
		X509_add_ext(x, ext, -1);
		X509_EXTENSION_free(ext);
	}
	ck_assert_int_gt(X509_sign(x, issuer_key != NULL ? issuer_key : key, EVP_sha256()), 0);
	return x;
}

static void
write_pem(const char *path, EVP_PKEY *key, X509 *x)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	if (key != NULL)
		ck_assert_int_eq(PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL), 1);
	if (x != NULL)
		ck_assert_int_eq(PEM_write_X509(f, x), 1);
	ck_assert_int_eq(fclose(f), 0);
}

struct pki {
	EVP_PKEY *ca_key, *ca2_key, *leaf_key;
	X509 *ca, *ca2, *leaf, *leaf2;          /* leaf2: same name, other CA */
	char ca_file[PATH_MAX], ca2_file[PATH_MAX];
};

static void
pki_make(struct pki *p)
{
	p->ca_key = EVP_EC_gen("P-256");
	p->ca2_key = EVP_EC_gen("P-256");
	p->leaf_key = EVP_EC_gen("P-256");
	ck_assert(p->ca_key && p->ca2_key && p->leaf_key);
	p->ca = make_cert(p->ca_key, "test ca", NULL, NULL, true);
	p->ca2 = make_cert(p->ca2_key, "other ca", NULL, NULL, true);
	p->leaf = make_cert(p->leaf_key, "bob", p->ca, p->ca_key, false);
	p->leaf2 = make_cert(p->leaf_key, "bob", p->ca2, p->ca2_key, false);
	path_join(p->ca_file, tmpdir, "ca.pem");
	path_join(p->ca2_file, tmpdir, "ca2.pem");
	write_pem(p->ca_file, NULL, p->ca);
	write_pem(p->ca2_file, NULL, p->ca2);
}

static void
pki_free(struct pki *p)
{
	X509_free(p->ca);
	X509_free(p->ca2);
	X509_free(p->leaf);
	X509_free(p->leaf2);
	EVP_PKEY_free(p->ca_key);
	EVP_PKEY_free(p->ca2_key);
	EVP_PKEY_free(p->leaf_key);
}

/* What the handshake hands the callback: an unverified chain. */
static bool
verify_leaf(X509 *leaf, const char *ca_file, const char *name)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *xs = X509_STORE_CTX_new();
	STACK_OF(X509) *chain = sk_X509_new_null();
	bool ok;

	sk_X509_push(chain, leaf);
	ck_assert_int_eq(X509_STORE_CTX_init(xs, store, leaf, chain), 1);
	ok = keys_verify_ca(xs, ca_file, name);
	X509_STORE_CTX_free(xs);
	X509_STORE_free(store);
	sk_X509_free(chain);
	return ok;
}

START_TEST(ca_verify)
{
	struct pki p;
	char missing[PATH_MAX];

	pki_make(&p);
	path_join(missing, tmpdir, "noca.pem");
	ck_assert(verify_leaf(p.leaf, p.ca_file, "bob"));
	ck_assert(!verify_leaf(p.leaf, p.ca_file, "alice"));
	ck_assert(!verify_leaf(p.leaf, p.ca_file, "bo"));
	ck_assert(!verify_leaf(p.leaf, p.ca_file, "bobby"));
	ck_assert(!verify_leaf(p.leaf, p.ca_file, ""));
	ck_assert(!verify_leaf(p.leaf, p.ca2_file, "bob"));
	ck_assert(verify_leaf(p.leaf2, p.ca2_file, "bob"));
	ck_assert(!verify_leaf(p.leaf2, p.ca_file, "bob"));
	ck_assert(!verify_leaf(p.leaf, missing, "bob"));
	ck_assert(!verify_leaf(p.leaf, A.cert, "bob"));         /* not its issuer */
	ck_assert(!verify_leaf(p.ca, p.ca_file, "bob"));        /* the CA itself is not bob */
	ck_assert(!keys_verify_ca(NULL, p.ca_file, "bob"));
	/* The same against a store loaded once (what a handshake uses):
	 * reused for several checks, and the file may go meanwhile. */
	{
		struct x509_store_st *st = keys_ca_load(p.ca_file);
		STACK_OF(X509) *chain = sk_X509_new_null();

		ck_assert_ptr_nonnull(st);
		sk_X509_push(chain, p.leaf);
		ck_assert(keys_verify_ca_store(p.leaf, chain, st, "bob"));
		ck_assert(!keys_verify_ca_store(p.leaf, chain, st, "alice"));
		ck_assert(!keys_verify_ca_store(p.leaf2, chain, st, "bob"));
		ck_assert(keys_verify_ca_store(p.leaf, chain, st, "bob"));
		ck_assert(!keys_verify_ca_store(p.leaf, chain, NULL, "bob"));
		sk_X509_free(chain);
		keys_ca_free(st);
		ck_assert_ptr_null(keys_ca_load(missing));
	}
	/* Through the cache of one configuration: each file read once,
	 * every peer's store its own reference, valid after the cache. */
	{
		struct keys_ca_cache *cache = keys_ca_cache_new();
		struct x509_store_st *s1, *s2, *s3;
		STACK_OF(X509) *chain = sk_X509_new_null();

		ck_assert_ptr_nonnull(cache);
		sk_X509_push(chain, p.leaf);
		s1 = keys_ca_cache_load(cache, p.ca_file);
		s2 = keys_ca_cache_load(cache, p.ca_file);
		s3 = keys_ca_cache_load(cache, p.ca2_file);
		ck_assert_ptr_nonnull(s1);
		ck_assert_ptr_eq(s1, s2);
		ck_assert_ptr_ne(s1, s3);
		ck_assert_ptr_null(keys_ca_cache_load(cache, missing));
		ck_assert_ptr_null(keys_ca_cache_load(cache, missing));
		/* The file is not read again: gone, it still serves. */
		ck_assert_int_eq(unlink(p.ca_file), 0);
		ck_assert_ptr_eq(keys_ca_cache_load(cache, p.ca_file), s1);
		keys_ca_free(s1);
		keys_ca_cache_free(cache);
		ck_assert(keys_verify_ca_store(p.leaf, chain, s2, "bob"));
		ck_assert(!keys_verify_ca_store(p.leaf, chain, s3, "bob"));
		ck_assert(keys_verify_ca_store(p.leaf2, chain, s3, "bob"));
		keys_ca_free(s1);
		keys_ca_free(s2);
		keys_ca_free(s3);
		sk_X509_free(chain);
		keys_ca_cache_free(NULL);
	}
	pki_free(&p);
}
END_TEST

/* B presents a CA-issued certificate; A checks it by CA and name. */
START_TEST(ca_handshake)
{
	struct pki p;
	struct link l;
	char key[PATH_MAX], cert[PATH_MAX];

	pki_make(&p);
	path_join(key, tmpdir, "bob.key");
	path_join(cert, tmpdir, "bob.pem");
	write_pem(key, p.leaf_key, NULL);
	write_pem(cert, NULL, p.leaf);
	strcpy(B.key, key);
	strcpy(B.cert, cert);
	dtls_ctx_free(B.c);
	B.c = ctx_open(&B, NULL);
	A.az.ca_file = p.ca_file;
	A.az.ca_name = "bob";
	A.az.ca_obj = &peer_b;
	link_up(&l, &A, &B, &peer_b);
	/* accepted by CA and name: the key B presents now, not its pinned one */
	ck_assert_mem_eq(dtls_sess_peer_fp(l.cs), dtls_ctx_fingerprint(B.c), DTLS_FP_LEN);
	link_free(&l);

	A.az.ca_name = "carol";
	link_start(&l, &A, &B, &peer_b);
	link_run(&l);
	ck_assert(l.cfail && l.sfail && !l.cdone && !l.sdone);
	link_free(&l);

	A.az.ca_name = "bob";
	A.az.ca_file = p.ca2_file;
	link_start(&l, &A, &B, &peer_b);
	link_run(&l);
	ck_assert(l.cfail && l.sfail && !l.cdone && !l.sdone);
	link_free(&l);
	pki_free(&p);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("dtls");
	TCase *hs = tcase_create("handshake");
	TCase *rec = tcase_create("records");
	TCase *ck = tcase_create("cookies");
	TCase *keys = tcase_create("keys");
	TCase *tcs[] = { hs, rec, ck, keys };
	const char *t = getenv("TMPDIR");
	size_t i;
	int status;

	snprintf(rootdir, sizeof(rootdir), "%s/check_dtls.XXXXXX", t != NULL && *t ? t : "/tmp");
	if (mkdtemp(rootdir) == NULL) {
		perror(rootdir);
		return EXIT_FAILURE;
	}

	tcase_add_test(hs, handshake_full);
	tcase_add_test(hs, handshake_records);
	tcase_add_test(hs, server_refuses_unknown_key);
	tcase_add_test(hs, client_refuses_unknown_key);
	tcase_add_test(hs, client_expects_other_peer);
	tcase_add_test(hs, handshake_timer);
	tcase_add_test(hs, lost_final_flight);
	tcase_add_test(hs, rekey_switch);
	tcase_add_test(hs, ca_handshake);
	tcase_add_test(hs, session_memory);
	tcase_add_test(rec, seal_open);
	tcase_add_test(rec, seal_before_established);
	tcase_add_test(rec, replay);
	tcase_add_test(rec, tamper);
	tcase_add_test(rec, open_in_place);
	tcase_add_test(rec, close_notify);
	tcase_add_test(rec, early_data);
	tcase_add_test(rec, nonce_unique);
	tcase_add_test(rec, psk_sessions);
	tcase_add_test(rec, pq_exchange);
	tcase_add_test(rec, pq_keepalive_lost);
	tcase_add_test(ck, cookie_exchange);
	tcase_add_test(ck, cookie_bound_to_session_id);
	tcase_add_test(ck, cookie_ipv6);
	tcase_add_test(ck, cookie_rotation);
	tcase_add_test(ck, listen_drop);
	tcase_add_test(keys, keylog_env);
	tcase_add_test(keys, keylog_config);
	tcase_add_test(keys, pq_keylog);
	tcase_add_test(hs, pq_split_ipv6);
	tcase_add_test(keys, genkey_files);
	tcase_add_test(keys, keylog_refuses_planted);
	tcase_add_test(keys, fingerprint_errors);
	tcase_add_test(keys, fp_format);
	tcase_add_test(keys, ctx_errors);
	tcase_add_test(keys, ca_verify);
	for (i = 0; i < ARRAY_SIZE(tcs); i++) {
		tcase_add_checked_fixture(tcs[i], setup, teardown);
		tcase_set_timeout(tcs[i], 120);
		suite_add_tcase(s, tcs[i]);
	}
	status = check_run(s);
	rm_tree(rootdir);
	return status;
}
