/* hsload.c - a handshake load generator: N DTLS clients, each with its own
 * key and its own UDP source port (one address, like clients behind one
 * NAT), start their handshakes with one toud server at once, through
 * toud's own DTLS and record code, framed as toud frames them.
 *
 *   hsload genkeys DIR N
 *       make DIR/0 ... DIR/N-1 (key.pem, cert.pem) and print one line
 *       "I sha256:<hex>" per client, for the server's [peer] sections.
 *   hsload run [-b ADDR] [-t SECS] [-H SECS] [-r SECS] DIR N ADDR PORT
 *       run clients 0 .. N-1 against ADDR:PORT (source address -b), each
 *       until its handshake completes (a new one after -r seconds without
 *       an answer, as toud's own handshake timer does), then send one
 *       keepalive so that the server sees the session carry data; stop
 *       after -t seconds at the latest, keep the sessions -H seconds more,
 *       and close them (-H -1: keep them until the process is stopped).
 *       Prints one line of figures; exits 0 when every client came up.
 *   hsload inproc DIR N
 *       the same handshakes without sockets, one after the other, between
 *       clients 1 .. N-1 and a server with key 0 in this process: the
 *       server side's CPU per handshake (cookie exchange, handshake, the
 *       first data record), and what parsing one client certificate
 *       (d2i_X509, as libssl does) costs of it.  Where a daemon's figure
 *       stands above this one, the rest is the daemon's own (sockets,
 *       loop, limits); this one against the crypto floor is the library's.
 *   hsload tls DIR N GROUPS
 *       the TCP transport's handshake, TLS 1.3 as tcp.c sets it up (mutual
 *       certificates, no tickets), in process over memory BIOs, between
 *       clients 1 .. N-1 and a server with key 0, both offering GROUPS
 *       (OpenSSL's list syntax: "X25519", "X25519MLKEM768"): each side's
 *       CPU per handshake, the bytes each way and the group agreed on.
 *
 * Threading: one thread, one epoll loop over the clients' sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "dtls.h"
#include "gue.h"
#include "keys.h"
#include "log.h"
#include "pq.h"
#include "record.h"
#include "util.h"

#define LINK_MTU 1400
#define BUF_LEN 2048

struct client {
	int fd;
	struct dtls_ctx *c;
	struct dtls_sess *s;
	uint64_t sid;
	uint64_t started_ms;    /* of the current attempt */
	uint64_t up_ms;         /* 0: not up yet */
	unsigned attempts;
};

static union sockaddr_union server;
static int marker;              /* what the server's key authorizes to */
static uint64_t t0_ms;

static uint64_t
now_ms(void)
{
	return util_now_ms();
}

/* ADDR into sa with port. */
static int
sa_parse(const char *s, uint16_t port, union sockaddr_union *sa)
{
	struct ipaddr a;

	memset(sa, 0, sizeof(*sa));
	if (util_addr_parse(s, &a) < 0)
		return -1;
	return util_sa_from_addr(sa, &a, port);
}

static void *
authorize(void *arg, const uint8_t fp[DTLS_FP_LEN], struct x509_store_ctx_st *xs)
{
	(void)arg;
	(void)fp;
	(void)xs;
	return &marker;
}

static void
listen_out(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to)
{
	(void)arg;
	(void)sid;
	(void)rec;
	(void)len;
	(void)to;
}

/* dtls_output_fn: one record behind the outer GUE header, sealed here if
 * it is toud's own. */
static void
out(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal)
{
	struct client *cl = arg;
	uint8_t buf[BUF_LEN];

	if (len > sizeof(buf) - GUE_OUTER_LEN)
		return;
	gue_outer_encode(buf, cl->sid);
	memcpy(buf + GUE_OUTER_LEN, rec, len);
	if (seal && record_finish(seal, buf + GUE_OUTER_LEN, len) != RECORD_OK)
		return;
	(void)sendto(cl->fd, buf, GUE_OUTER_LEN + len, 0, &to->sa, util_sa_len(to));
}

static int
genkeys(const char *dir, long n)
{
	char path[PATH_MAX], err[256] = "", fps[7 + 2 * KEYS_FP_LEN + 1];
	uint8_t fp[KEYS_FP_LEN];
	long i;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		perror(dir);
		return 1;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%ld", dir, i);
		if ((mkdir(path, 0700) < 0 && errno != EEXIST) ||
		    keys_genkey(path, fp, err, sizeof(err)) < 0) {
			fprintf(stderr, "hsload: %s: %s\n", path, err[0] ? err : strerror(errno));
			return 1;
		}
		keys_fp_format(fp, fps);
		printf("%ld %s\n", i, fps);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

static int
client_open(struct client *cl, const char *dir, long i, const union sockaddr_union *bind_to)
{
	char key[PATH_MAX], cert[PATH_MAX], err[256];
	struct dtls_ctx_config cfg = {
		.private_key = key, .certificate = cert, .authorize = authorize,
		.listen_output = listen_out, .link_mtu = LINK_MTU,
	};

	snprintf(key, sizeof(key), "%s/%ld/key.pem", dir, i);
	snprintf(cert, sizeof(cert), "%s/%ld/cert.pem", dir, i);
	if (!(cl->c = dtls_ctx_new(&cfg, err, sizeof(err)))) {
		fprintf(stderr, "hsload: client %ld: %s\n", i, err);
		return -1;
	}
	cl->fd = socket(bind_to->sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (cl->fd < 0 || bind(cl->fd, &bind_to->sa, util_sa_len(bind_to)) < 0) {
		fprintf(stderr, "hsload: client %ld: socket: %s\n", i, strerror(errno));
		return -1;
	}
	return 0;
}

/* A new handshake under a new session ID. */
static int
client_start(struct client *cl)
{
	dtls_sess_free(cl->s);
	do {
		if (RAND_bytes((unsigned char *)&cl->sid, sizeof(cl->sid)) != 1)
			return -1;
	} while (cl->sid == 0);
	cl->started_ms = now_ms();
	cl->attempts++;
	if (!(cl->s = dtls_sess_client(cl->c, &marker, out, cl, &server)))
		return -1;
	return dtls_sess_handshake(cl->s) == DTLS_ERR_HANDSHAKE ? -1 : 0;
}

/* The handshake completed: one keepalive, toud's first record. */
static void
client_up(struct client *cl)
{
	uint8_t word[GUE_WORD_LEN];
	struct dtls_record r;

	cl->up_ms = now_ms();
	gue_control_encode(word, GUE_CTYPE_KEEPALIVE);
	if (dtls_sess_seal(cl->s, word, sizeof(word), &r) == 0)
		out(cl, r.rec, r.len, r.to, r.seal);
}

static void
client_read(struct client *cl)
{
	uint8_t buf[BUF_LEN], plain[BUF_LEN];
	size_t outlen;
	uint64_t sid, seq;
	ssize_t n;

	while ((n = recv(cl->fd, buf, sizeof(buf), 0)) > 0) {
		if (gue_outer_decode(buf, (size_t)n, &sid) != GUE_OK || !cl->s)
			continue;
		switch (dtls_sess_input(cl->s, buf + GUE_OUTER_LEN, (size_t)n - GUE_OUTER_LEN,
		    plain, sizeof(plain), &outlen, &seq)) {
		case DTLS_DONE:
			client_up(cl);
			break;
		case DTLS_ERR_HANDSHAKE:
		case DTLS_ERR_CLOSED:
			if (!cl->up_ms)
				(void)client_start(cl);
			break;
		default:
			break;
		}
	}
}

/* Retransmissions, and a new handshake after restart_ms without one. */
static void
clients_tick(struct client *cls, long n, uint64_t restart_ms)
{
	struct timeval tv;
	long i;

	for (i = 0; i < n; i++) {
		struct client *cl = &cls[i];

		if (cl->up_ms || !cl->s)
			continue;
		if (now_ms() - cl->started_ms >= restart_ms)
			(void)client_start(cl);
		else if (dtls_sess_timeout(cl->s, &tv) && tv.tv_sec == 0 && tv.tv_usec == 0 &&
		    dtls_sess_handle_timeout(cl->s) == DTLS_ERR_HANDSHAKE)
			(void)client_start(cl);
	}
}

static long
loop(int ep, struct client *cls, long n, uint64_t until_ms, uint64_t restart_ms, bool stop_when_up)
{
	struct epoll_event evs[64];
	long up = 0, i;
	int k, m;

	for (;;) {
		for (up = 0, i = 0; i < n; i++)
			up += cls[i].up_ms != 0;
		if ((stop_when_up && up == n) || now_ms() >= until_ms)
			return up;
		m = epoll_wait(ep, evs, 64, 10);
		for (k = 0; k < m; k++)
			client_read(&cls[evs[k].data.u64]);
		clients_tick(cls, n, restart_ms);
	}
}

static int
run(int argc, char **argv)
{
	const char *bind_addr = NULL, *dir;
	double timeout = 30, hold = 0, restart = 5;
	union sockaddr_union bind_to;
	struct client *cls;
	uint64_t first = 0, last = 0, sum = 0, attempts = 0;
	long n, i, up;
	int ch, ep;

	while ((ch = getopt(argc, argv, "b:t:H:r:")) != -1) {
		switch (ch) {
		case 'b': bind_addr = optarg; break;
		case 't': timeout = atof(optarg); break;
		case 'H': hold = atof(optarg); break;
		case 'r': restart = atof(optarg); break;
		default: return 2;
		}
	}
	if (argc - optind != 4 || (n = atol(argv[optind + 1])) <= 0 ||
	    sa_parse(argv[optind + 2], (uint16_t)atoi(argv[optind + 3]), &server) < 0) {
		fprintf(stderr, "usage: hsload run [-b ADDR] [-t S] [-H S] [-r S] DIR N ADDR PORT\n");
		return 2;
	}
	dir = argv[optind];
	memset(&bind_to, 0, sizeof(bind_to));
	bind_to.sa.sa_family = server.sa.sa_family;
	if (bind_addr && sa_parse(bind_addr, 0, &bind_to) < 0) {
		fprintf(stderr, "hsload: bad address %s\n", bind_addr);
		return 2;
	}
	if (!(cls = calloc((size_t)n, sizeof(*cls))) || (ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return 1;
	for (i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)i };

		if (client_open(&cls[i], dir, i, &bind_to) < 0 ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, cls[i].fd, &ev) < 0)
			return 1;
	}
	/* Everyone at once. */
	t0_ms = now_ms();
	for (i = 0; i < n; i++)
		if (client_start(&cls[i]) < 0)
			fprintf(stderr, "hsload: client %ld: cannot start\n", i);
	up = loop(ep, cls, n, t0_ms + (uint64_t)(timeout * 1000), (uint64_t)(restart * 1000), true);
	for (i = 0; i < n; i++) {
		attempts += cls[i].attempts;
		if (!cls[i].up_ms)
			continue;
		sum += cls[i].up_ms - t0_ms;
		if (!first || cls[i].up_ms - t0_ms < first)
			first = cls[i].up_ms - t0_ms;
		if (cls[i].up_ms - t0_ms > last)
			last = cls[i].up_ms - t0_ms;
	}
	printf("up %ld of %ld in %" PRIu64 " ms (%.0f handshakes/s); first %" PRIu64
	    " ms, median-ish mean %" PRIu64 " ms; %" PRIu64 " attempts\n", up, n, last,
	    last ? up * 1000.0 / (double)last : 0.0, first, up ? sum / (uint64_t)up : 0, attempts);
	fflush(stdout);
	if (hold != 0)
		(void)loop(ep, cls, n, hold < 0 ? UINT64_MAX : now_ms() + (uint64_t)(hold * 1000),
		    UINT64_MAX, false);
	for (i = 0; i < n; i++) {
		if (cls[i].s) {
			dtls_sess_close(cls[i].s);
			dtls_sess_free(cls[i].s);
		}
		dtls_ctx_free(cls[i].c);
		close(cls[i].fd);
	}
	free(cls);
	close(ep);
	return up == n ? 0 : 1;
}

/* In process: records between one client and the server, in memory. */
struct hop {
	uint8_t b[BUF_LEN];
	size_t len;
	bool to_server;
};

struct wire {
	struct hop q[64];
	unsigned n;
};

static void
wire_push(struct wire *w, bool to_server, const uint8_t *rec, size_t len,
    struct record_sealer *seal)
{
	struct hop *h;

	if (w->n == ARRAY_SIZE(w->q) || len > sizeof(h->b))
		return;
	h = &w->q[w->n++];
	memcpy(h->b, rec, len);
	h->len = len;
	h->to_server = to_server;
	if (seal && record_finish(seal, h->b, len) != RECORD_OK)
		w->n--;
}

static void
to_client_out(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal)
{
	(void)to;
	wire_push(arg, false, rec, len, seal);
}

static void
to_server_out(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal)
{
	(void)to;
	wire_push(arg, true, rec, len, seal);
}

static void
listen_to_client(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to)
{
	(void)sid;
	(void)to;
	wire_push(arg, false, rec, len, NULL);
}

static uint64_t
cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One handshake and the client's first record; the server's CPU in ns, 0
 * when it did not complete. */
static uint64_t
inproc_one(struct dtls_ctx *sc, struct dtls_ctx *cc, struct wire *w,
    const union sockaddr_union *saddr, const union sockaddr_union *caddr)
{
	struct dtls_sess *cs, *ss = NULL;
	uint8_t plain[BUF_LEN];
	uint64_t ns = 0, t, seq;
	bool cdone = false, sdata = false;
	struct dtls_record r;
	size_t outlen;
	unsigned rounds;

	w->n = 0;
	if (!(cs = dtls_sess_client(cc, &marker, to_server_out, w, saddr)) ||
	    dtls_sess_handshake(cs) == DTLS_ERR_HANDSHAKE) {
		dtls_sess_free(cs);
		return 0;
	}
	for (rounds = 0; rounds < 32 && w->n > 0 && !sdata; rounds++) {
		struct wire cur = *w;
		unsigned i;

		w->n = 0;
		for (i = 0; i < cur.n; i++) {
			struct hop *h = &cur.q[i];

			if (!h->to_server) {
				if (dtls_sess_input(cs, h->b, h->len, plain, sizeof(plain), &outlen,
				    &seq) == DTLS_DONE)
					cdone = true;
				continue;
			}
			t = cpu_ns();
			if (!ss)
				(void)dtls_listen(sc, h->b, h->len, caddr, to_client_out, w, &ss);
			else if (dtls_sess_input(ss, h->b, h->len, plain, sizeof(plain), &outlen,
			    &seq) == DTLS_DATA)
				sdata = true;
			ns += cpu_ns() - t;
		}
		if (cdone) {
			uint8_t word[GUE_WORD_LEN];

			gue_control_encode(word, GUE_CTYPE_KEEPALIVE);
			if (dtls_sess_seal(cs, word, sizeof(word), &r) == 0)
				wire_push(w, true, r.rec, r.len, r.seal);
			cdone = false;
		}
	}
	t = cpu_ns();
	dtls_sess_free(ss);
	ns += cpu_ns() - t;
	dtls_sess_free(cs);
	return sdata ? ns : 0;
}

/* The crypto floor of one server handshake with this library, in ns: an
 * ephemeral P-256 key, one ECDH, one ECDSA signature and one verification,
 * each from a context made once (as `openssl speed` measures them). */
static uint64_t
inproc_floor(void)
{
	EVP_PKEY_CTX *kctx, *dctx = NULL, *sctx = NULL, *vctx = NULL;
	EVP_PKEY *a = NULL, *b = NULL, *e;
	uint8_t md[32] = { 1 }, sig[80], secret[32];
	size_t siglen = sizeof(sig), n;
	uint64_t t, ns = 0;
	int i, ok = 1;
	const int rounds = 200;

	if (!(kctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) ||
	    EVP_PKEY_keygen_init(kctx) != 1 ||
	    EVP_PKEY_CTX_set_group_name(kctx, "P-256") != 1 ||
	    EVP_PKEY_keygen(kctx, &a) != 1 || EVP_PKEY_keygen(kctx, &b) != 1 ||
	    !(dctx = EVP_PKEY_CTX_new(a, NULL)) || EVP_PKEY_derive_init(dctx) != 1 ||
	    EVP_PKEY_derive_set_peer(dctx, b) != 1 ||
	    !(sctx = EVP_PKEY_CTX_new(a, NULL)) || EVP_PKEY_sign_init(sctx) != 1 ||
	    EVP_PKEY_sign(sctx, sig, &siglen, md, sizeof(md)) != 1 ||
	    !(vctx = EVP_PKEY_CTX_new(a, NULL)) || EVP_PKEY_verify_init(vctx) != 1)
		ok = 0;
	t = cpu_ns();
	for (i = 0; ok && i < rounds; i++) {
		e = NULL;
		n = sizeof(secret);
		ok = EVP_PKEY_keygen(kctx, &e) == 1 &&
		    EVP_PKEY_derive(dctx, secret, &n) == 1 &&
		    (siglen = sizeof(sig), EVP_PKEY_sign(sctx, sig, &siglen, md, sizeof(md)) == 1) &&
		    EVP_PKEY_verify(vctx, sig, siglen, md, sizeof(md)) == 1;
		EVP_PKEY_free(e);
	}
	if (ok)
		ns = (cpu_ns() - t) / (uint64_t)rounds;
	EVP_PKEY_CTX_free(kctx);
	EVP_PKEY_CTX_free(dctx);
	EVP_PKEY_CTX_free(sctx);
	EVP_PKEY_CTX_free(vctx);
	EVP_PKEY_free(a);
	EVP_PKEY_free(b);
	return ns;
}

static int
inproc(const char *dir, long n)
{
	char key[PATH_MAX], cert[PATH_MAX], err[256];
	union sockaddr_union saddr, caddr;
	struct dtls_ctx *sc, *cc;
	static struct wire w;
	uint64_t ns = 0, t, floor_ns;
	long i, done = 0;
	unsigned char *der = NULL;
	const unsigned char *p;
	X509 *x;
	FILE *f;
	int len, k;
	struct dtls_ctx_config cfg = {
		.private_key = key, .certificate = cert, .authorize = authorize,
		.listen_output = listen_to_client, .listen_output_arg = &w,
		.link_mtu = LINK_MTU,
	};

	if (n < 2 || sa_parse("10.200.0.1", 6080, &saddr) < 0)
		return 2;
	snprintf(key, sizeof(key), "%s/0/key.pem", dir);
	snprintf(cert, sizeof(cert), "%s/0/cert.pem", dir);
	if (!(sc = dtls_ctx_new(&cfg, err, sizeof(err)))) {
		fprintf(stderr, "hsload: server: %s\n", err);
		return 1;
	}
	for (i = 1; i < n; i++) {
		snprintf(key, sizeof(key), "%s/%ld/key.pem", dir, i);
		snprintf(cert, sizeof(cert), "%s/%ld/cert.pem", dir, i);
		if (!(cc = dtls_ctx_new(&cfg, err, sizeof(err)))) {
			fprintf(stderr, "hsload: client %ld: %s\n", i, err);
			return 1;
		}
		(void)sa_parse("10.200.0.2", (uint16_t)(10000 + i), &caddr);
		if ((t = inproc_one(sc, cc, &w, &saddr, &caddr)) != 0) {
			ns += t;
			done++;
		}
		dtls_ctx_free(cc);
	}
	dtls_ctx_free(sc);

	/* What libssl's parse of the client's certificate costs. */
	if (!(f = fopen(cert, "r")) || !(x = PEM_read_X509(f, NULL, NULL, NULL)) ||
	    (len = i2d_X509(x, &der)) <= 0) {
		fprintf(stderr, "hsload: %s: cannot read\n", cert);
		return 1;
	}
	fclose(f);
	X509_free(x);
	t = cpu_ns();
	for (k = 0; k < 1000; k++) {
		p = der;
		X509_free(d2i_X509(NULL, &p, len));
	}
	t = cpu_ns() - t;
	OPENSSL_free(der);
	floor_ns = inproc_floor();
	printf("inproc %ld of %ld (%s): server CPU per handshake %.0f us; crypto floor %.0f us; "
	    "certificate parse %.0f us\n", done, n - 1, OpenSSL_version(OPENSSL_VERSION),
	    done ? (double)ns / (double)done / 1e3 : 0.0, (double)floor_ns / 1e3,
	    (double)t / 1000 / 1e3);
	return done == n - 1 ? 0 : 1;
}

static int
tls_accept_any(X509_STORE_CTX *xs, void *arg)
{
	(void)xs;
	(void)arg;
	return 1;       /* keys are the DTLS bench's business; this times the exchange */
}

static SSL_CTX *
tls_ctx(const char *dir, long i, const char *groups)
{
	char key[PATH_MAX], cert[PATH_MAX];
	SSL_CTX *ctx = SSL_CTX_new(TLS_method());

	snprintf(key, sizeof(key), "%s/%ld/key.pem", dir, i);
	snprintf(cert, sizeof(cert), "%s/%ld/cert.pem", dir, i);
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set1_groups_list(ctx, groups) ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, tls_accept_any, NULL);
	return ctx;
}

/* Move what one side wrote to the other; the bytes moved. */
static size_t
tls_move(BIO *from, BIO *to)
{
	uint8_t buf[4096];
	size_t moved = 0;
	int r;

	while ((r = BIO_read(from, buf, sizeof(buf))) > 0) {
		(void)BIO_write(to, buf, r);
		moved += (size_t)r;
	}
	return moved;
}

static int
tls(const char *dir, long n, const char *groups)
{
	SSL_CTX *sctx, *cctx;
	uint64_t sns = 0, cns = 0, t, c2s = 0, s2c = 0;
	char group[64] = "?";
	long i, done = 0;

	if (n < 2 || !(sctx = tls_ctx(dir, 0, groups))) {
		fprintf(stderr, "hsload: server context (groups %s)\n", groups);
		return 1;
	}
	for (i = 1; i < n; i++) {
		BIO *cr = BIO_new(BIO_s_mem()), *cw = BIO_new(BIO_s_mem());
		BIO *sr = BIO_new(BIO_s_mem()), *sw = BIO_new(BIO_s_mem());
		SSL *c = NULL, *s = NULL;
		int cdone = 0, sdone = 0, rounds, g;

		if (!(cctx = tls_ctx(dir, i, groups)) || !(c = SSL_new(cctx)) ||
		    !(s = SSL_new(sctx)))
			break;
		SSL_set_bio(c, cr, cw);
		SSL_set_bio(s, sr, sw);
		SSL_set_connect_state(c);
		SSL_set_accept_state(s);
		for (rounds = 0; rounds < 16 && !(cdone && sdone); rounds++) {
			t = cpu_ns();
			cdone = cdone || SSL_do_handshake(c) == 1;
			cns += cpu_ns() - t;
			c2s += tls_move(cw, sr);
			t = cpu_ns();
			sdone = sdone || SSL_do_handshake(s) == 1;
			sns += cpu_ns() - t;
			s2c += tls_move(sw, cr);
		}
		if (cdone && sdone) {
			done++;
			g = SSL_get_negotiated_group(s);
			pq_group_name(g & TLSEXT_nid_unknown ? pq_tls_group_name((unsigned)g & 0xffff) :
			    OBJ_nid2sn(g), group, sizeof(group));
		}
		ERR_clear_error();
		SSL_free(c);
		SSL_free(s);
		SSL_CTX_free(cctx);
	}
	SSL_CTX_free(sctx);
	if (!done) {
		fprintf(stderr, "hsload: no TLS handshake completed (groups %s)\n", groups);
		return 1;
	}
	printf("tls %ld of %ld (%s, groups %s: %s): CPU per handshake server %.0f us, client "
	    "%.0f us; bytes client to server %" PRIu64 ", server to client %" PRIu64 "\n", done,
	    n - 1, OpenSSL_version(OPENSSL_VERSION), groups, group,
	    (double)sns / (double)done / 1e3, (double)cns / (double)done / 1e3, c2s / (uint64_t)done,
	    s2c / (uint64_t)done);
	return done == n - 1 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	log_init(LOG_LEVEL_WARN, "hsload");
	if (argc == 4 && strcmp(argv[1], "genkeys") == 0)
		return genkeys(argv[2], atol(argv[3]));
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return run(argc - 1, argv + 1);
	if (argc == 4 && strcmp(argv[1], "inproc") == 0)
		return inproc(argv[2], atol(argv[3]));
	if (argc == 5 && strcmp(argv[1], "tls") == 0)
		return tls(argv[2], atol(argv[3]), argv[4]);
	fprintf(stderr, "usage: hsload genkeys DIR N | hsload run [options] DIR N ADDR PORT | "
	    "hsload inproc DIR N | hsload tls DIR N GROUPS\n");
	return 2;
}
