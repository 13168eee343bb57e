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
#include <unistd.h>

#include <openssl/rand.h>

#include "dtls.h"
#include "gue.h"
#include "keys.h"
#include "log.h"
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

int
main(int argc, char **argv)
{
	log_init(LOG_LEVEL_WARN, "hsload");
	if (argc == 4 && strcmp(argv[1], "genkeys") == 0)
		return genkeys(argv[2], atol(argv[3]));
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return run(argc - 1, argv + 1);
	fprintf(stderr, "usage: hsload genkeys DIR N | hsload run [options] DIR N ADDR PORT\n");
	return 2;
}
