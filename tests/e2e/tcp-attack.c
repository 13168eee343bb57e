/* tcp-attack.c - the attacker of the TCP transport's tests: a TLS 1.3
 * client over TCP that misbehaves in the ways a listener on the open
 * internet meets.  Run it only inside a test's namespaces.
 *
 *   tcp-attack nokey LOCAL DST PORT KEY CERT RATE SECS
 *       RATE a second a TCP connection and a whole TLS 1.3 handshake that
 *       presents CERT, a key no one configured; counts how each ended:
 *       refused at connect, ended in the handshake (alert or close), or
 *       finished on our side and then closed by the server, or left open;
 *   tcp-attack halfopen LOCAL DST PORT COUNT hello|silent SECS
 *       COUNT connections at once, each sending one ClientHello (hello) or
 *       nothing (silent) and then staying silent; waits up to SECS for the
 *       server to close them and reports how many it closed, and when;
 *   tcp-attack frames LOCAL DST PORT KEY CERT SECS
 *       two handshakes with a configured key; on the first a zero-length
 *       frame, on the second a length of 65535 with that many bytes of
 *       garbage behind it (DESIGN 2.5: a frame is a 2-byte length and an
 *       inner payload); reports for each whether the server closed the
 *       connection within SECS;
 *   tcp-attack flood LOCAL DST PORT RATE SECS
 *       RATE a second a TCP connection, closed as soon as it is made, no
 *       TLS at all: what a host spends to fill a per-source limit;
 *   tcp-attack hold LOCAL DST PORT COUNT SECS
 *       COUNT connections that say nothing, each opened again 0.25 s
 *       after the server closes it, for SECS (or until SIGTERM): a host
 *       that keeps the half-open table as full as it can; reports how
 *       many it opened and how many the server closed;
 *   tcp-attack keyupdate LOCAL DST PORT KEY CERT COUNT SECS
 *       connections with a configured key, one after the other for SECS
 *       (at least one): on each, COUNT times a TLS KeyUpdate that asks
 *       for one back and a keepalive frame behind it (what makes TLS
 *       process them); reports how many came up, how many of those the
 *       server closed, and how many KeyUpdates went out;
 *   tcp-attack legit LOCAL DST PORT KEY CERT SECS
 *       a client with a configured key: a handshake, tried again every
 *       0.2 s until one completes and the server keeps the connection
 *       (0.5 s), for up to SECS; reports whether and after how long.
 *
 * It prints one JSON object.  SIGTERM ends nokey early with the same
 * report.  Blocking sockets with timeouts: one connection at a time,
 * except the half-open ones, which are polled together. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define MAX_HALFOPEN 4096

static volatile sig_atomic_t stopping;
static struct sockaddr_in local_addr, dst;

static void
die(const char *what)
{
	fprintf(stderr, "tcp-attack: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
set_timeout(int fd, double secs)
{
	struct timeval tv = { .tv_sec = (time_t)secs,
		.tv_usec = (suseconds_t)((secs - (double)(time_t)secs) * 1e6) };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A TCP connection from LOCAL to DST, within secs; -1 if refused, reset
 * or not answered.  Nonblocking when nonblock is set (then it may still
 * be connecting). */
static int
tcp_connect(double secs, int nonblock)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	int one = 1;

	if (fd < 0)
		die("socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&local_addr, sizeof(local_addr)) < 0)
		die("bind");
	set_timeout(fd, secs);
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 &&
	    !(nonblock && errno == EINPROGRESS)) {
		close(fd);
		return -1;
	}
	return fd;
}

static SSL_CTX *
tls_ctx(const char *key, const char *cert)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    (cert && (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1))) {
		ERR_print_errors_fp(stderr);
		exit(2);
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	return ctx;
}

/* After our side of the handshake: does the server close the connection
 * within secs (an alert, EOF or a reset)?  Drains what it sends. */
static int
closed_within(SSL *ssl, int fd, double secs)
{
	double end = now_s() + secs;
	char buf[4096];

	while (now_s() < end) {
		int n;

		set_timeout(fd, end - now_s() > 0.01 ? end - now_s() : 0.01);
		n = SSL_read(ssl, buf, sizeof(buf));
		if (n > 0)
			continue;
		switch (SSL_get_error(ssl, n)) {
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return 1;
		default:
			return 1;
		}
	}
	return 0;
}

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

static int
run_nokey(const char *key, const char *cert, double rate, double secs)
{
	SSL_CTX *ctx = tls_ctx(key, cert);
	unsigned long attempts = 0, refused = 0, in_handshake = 0, closed_after = 0,
	    left_open = 0;
	double t0 = now_s(), next = t0;

	while (!stopping && now_s() - t0 < secs) {
		SSL *ssl;
		int fd;

		if (now_s() < next) {
			usleep(2000);
			continue;
		}
		next += 1.0 / rate;
		attempts++;
		if ((fd = tcp_connect(3, 0)) < 0) {
			refused++;
			continue;
		}
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, fd);
		if (SSL_connect(ssl) != 1)
			in_handshake++;
		else if (closed_within(ssl, fd, 3))
			closed_after++;
		else
			left_open++;
		SSL_free(ssl);
		close(fd);
		ERR_clear_error();
	}
	printf("{\"mode\": \"nokey\", \"seconds\": %.2f, \"attempts\": %lu, \"refused\": %lu, "
	    "\"ended_in_handshake\": %lu, \"closed_after_handshake\": %lu, \"left_open\": %lu}\n",
	    now_s() - t0, attempts, refused, in_handshake, closed_after, left_open);
	SSL_CTX_free(ctx);
	return 0;
}

/* The first flight of a TLS 1.3 client: its ClientHello, in hello. */
static size_t
client_hello(uint8_t *hello, size_t cap)
{
	SSL_CTX *ctx = tls_ctx(NULL, NULL);
	SSL *ssl = SSL_new(ctx);
	BIO *rbio = BIO_new(BIO_s_mem()), *wbio = BIO_new(BIO_s_mem());
	int n;

	SSL_set_bio(ssl, rbio, wbio);
	SSL_set_connect_state(ssl);
	SSL_do_handshake(ssl);
	n = BIO_read(wbio, hello, (int)cap);
	if (n <= 0) {
		fprintf(stderr, "tcp-attack: no ClientHello\n");
		exit(2);
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (size_t)n;
}

static int
run_halfopen(unsigned count, int hello, double secs)
{
	static struct pollfd pfd[MAX_HALFOPEN];
	static double closed_at[MAX_HALFOPEN];
	static int sent[MAX_HALFOPEN];
	uint8_t ch[4096], buf[4096];
	size_t chlen = hello ? client_hello(ch, sizeof(ch)) : 0;
	unsigned i, opened = 0, failed = 0, closed = 0, open_left = 0, closed_1s = 0;
	unsigned open_syn = 0, open_est = 0;
	double t0 = now_s(), last = 0;

	for (i = 0; i < count; i++) {
		pfd[i].fd = tcp_connect(secs, 1);
		if (pfd[i].fd < 0) {
			failed++;
			continue;
		}
		pfd[i].events = POLLOUT | POLLIN;
		opened++;
	}
	while (closed + failed < count && now_s() - t0 < secs) {
		if (poll(pfd, count, 100) < 0 && errno != EINTR)
			die("poll");
		for (i = 0; i < count; i++) {
			ssize_t n;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			if ((pfd[i].revents & POLLOUT) && !sent[i]) {
				sent[i] = 1;
				pfd[i].events = POLLIN;
				if (chlen && send(pfd[i].fd, ch, chlen, MSG_NOSIGNAL) < 0)
					goto gone;
				continue;
			}
			n = recv(pfd[i].fd, buf, sizeof(buf), 0);
			if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)))
				continue;
gone:
			closed_at[i] = now_s() - t0;
			if (closed_at[i] > last)
				last = closed_at[i];
			if (closed_at[i] < 1)
				closed_1s++;
			close(pfd[i].fd);
			pfd[i].fd = -1;
			closed++;
		}
	}
	for (i = 0; i < count; i++)
		if (pfd[i].fd >= 0) {
			struct tcp_info ti;
			socklen_t tl = sizeof(ti);

			/* How far it got: never connected (SYN-SENT), or
			 * connected without the server ever answering again
			 * (its SYN cookie, its side dropped before accept). */
			if (getsockopt(pfd[i].fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0) {
				if (ti.tcpi_state == TCP_SYN_SENT)
					open_syn++;
				else if (ti.tcpi_state == TCP_ESTABLISHED)
					open_est++;
			}
			open_left++;
			close(pfd[i].fd);
		}
	printf("{\"mode\": \"halfopen\", \"hello\": %s, \"seconds\": %.2f, \"count\": %u, "
	    "\"opened\": %u, \"connect_failed\": %u, \"closed_by_server\": %u, "
	    "\"closed_within_1s\": %u, \"last_close_s\": %.2f, \"still_open\": %u, "
	    "\"still_open_syn_sent\": %u, \"still_open_established\": %u}\n",
	    hello ? "true" : "false", now_s() - t0, count, opened, failed, closed, closed_1s,
	    last, open_left, open_syn, open_est);
	return 0;
}

/* One handshake with a configured key, then frame (len bytes) written;
 * "closed" if the server then ends the connection within secs, "open"
 * if not, "no-handshake" if it did not get that far. */
static const char *
frame_probe(SSL_CTX *ctx, const uint8_t *frame, size_t len, double secs)
{
	const char *res = "no-handshake";
	SSL *ssl;
	int fd;

	if ((fd = tcp_connect(5, 0)) < 0)
		return "refused";
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) == 1) {
		/* A write may fail once the server has closed: that is its answer. */
		if (SSL_write(ssl, frame, (int)len) <= 0 || closed_within(ssl, fd, secs))
			res = "closed";
		else
			res = "open";
	}
	SSL_free(ssl);
	close(fd);
	ERR_clear_error();
	return res;
}

static int
run_frames(const char *key, const char *cert, double secs)
{
	SSL_CTX *ctx = tls_ctx(key, cert);
	static uint8_t big[2 + 65535];
	static const uint8_t zero[2];
	const char *z, *o;
	size_t i;

	big[0] = 0xff;
	big[1] = 0xff;
	for (i = 2; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 131 + 7);
	z = frame_probe(ctx, zero, sizeof(zero), secs);
	o = frame_probe(ctx, big, sizeof(big), secs);
	printf("{\"mode\": \"frames\", \"zero_length\": \"%s\", \"oversize\": \"%s\"}\n", z, o);
	SSL_CTX_free(ctx);
	return 0;
}

static int
run_flood(double rate, double secs)
{
	unsigned long attempts = 0, connected = 0;
	double t0 = now_s(), next = t0;
	int fd;

	while (!stopping && now_s() - t0 < secs) {
		if (now_s() < next) {
			usleep(2000);
			continue;
		}
		next += 1.0 / rate;
		attempts++;
		if ((fd = tcp_connect(1, 0)) >= 0) {
			connected++;
			close(fd);
		}
	}
	printf("{\"mode\": \"flood\", \"seconds\": %.2f, \"attempts\": %lu, "
	    "\"connected\": %lu}\n", now_s() - t0, attempts, connected);
	return 0;
}

static int
run_hold(unsigned count, double secs)
{
	static struct pollfd pfd[MAX_HALFOPEN];
	static double again[MAX_HALFOPEN];
	unsigned long opened = 0, closed = 0;
	double t0 = now_s();
	unsigned i;
	char buf[256];
	ssize_t n;

	for (i = 0; i < count; i++)
		pfd[i].fd = -1;
	while (!stopping && now_s() - t0 < secs) {
		for (i = 0; i < count; i++) {
			if (pfd[i].fd >= 0 || now_s() < again[i])
				continue;
			if ((pfd[i].fd = tcp_connect(1, 1)) >= 0)
				opened++;
			else
				again[i] = now_s() + 0.25;
			pfd[i].events = POLLIN;
		}
		if (poll(pfd, count, 50) <= 0)
			continue;
		for (i = 0; i < count; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if ((n = read(pfd[i].fd, buf, sizeof(buf))) > 0 ||
			    (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)))
				continue;
			closed++;
			close(pfd[i].fd);
			pfd[i].fd = -1;
			again[i] = now_s() + 0.25;
		}
	}
	for (i = 0; i < count; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	printf("{\"mode\": \"hold\", \"seconds\": %.2f, \"opened\": %lu, "
	    "\"closed_by_server\": %lu}\n", now_s() - t0, opened, closed);
	return 0;
}

/* One connection of keyupdate: count KeyUpdates at most.  -1 if it did
 * not come up, else 1 if the server closed it, 0 if not; *sent grows. */
static int
keyupdate_conn(SSL_CTX *ctx, unsigned long count, unsigned long *sent)
{
	/* A frame: length 4, a GUE control word, keepalive (type 1). */
	static const uint8_t frame[] = { 0x00, 0x04, 0x20, 0x01, 0x00, 0x00 };
	unsigned long n = 0;
	int fd, rc = -1;
	SSL *ssl;

	if ((fd = tcp_connect(5, 0)) < 0)
		return -1;
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) == 1) {
		rc = 0;
		while (!stopping && n < count) {
			if (SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) != 1 ||
			    SSL_write(ssl, frame, sizeof(frame)) != (int)sizeof(frame)) {
				rc = 1;
				break;
			}
			n++;
		}
		/* The rest of the answer: the server's close, if it did not
		 * come while we wrote. */
		if (!rc)
			rc = closed_within(ssl, fd, 5);
	}
	*sent += n;
	SSL_free(ssl);
	close(fd);
	ERR_clear_error();
	return rc;
}

static int
run_keyupdate(const char *key, const char *cert, unsigned long count, double secs)
{
	SSL_CTX *ctx = tls_ctx(key, cert);
	unsigned long sent = 0, up = 0, closed = 0, refused = 0;
	double t0 = now_s();
	int rc;

	do {
		if ((rc = keyupdate_conn(ctx, count, &sent)) < 0) {
			refused++;
			usleep(50000);
			continue;
		}
		up++;
		closed += (unsigned long)rc;
	} while (!stopping && now_s() - t0 < secs);
	printf("{\"mode\": \"keyupdate\", \"up\": %lu, \"closed\": %lu, \"refused\": %lu, "
	    "\"sent\": %lu, \"seconds\": %.2f}\n", up, closed, refused, sent, now_s() - t0);
	SSL_CTX_free(ctx);
	return 0;
}

static int
run_legit(const char *key, const char *cert, double secs)
{
	SSL_CTX *ctx = tls_ctx(key, cert);
	unsigned long attempts = 0;
	double t0 = now_s();
	int up = 0;

	while (!up && now_s() - t0 < secs) {
		SSL *ssl;
		int fd;

		if (attempts++)
			usleep(200000);
		if ((fd = tcp_connect(2, 0)) < 0)
			continue;
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, fd);
		/* TLS 1.3: the server judges our certificate after our side
		 * is done; its verdict is whether it keeps the connection. */
		up = SSL_connect(ssl) == 1 && !closed_within(ssl, fd, 0.5);
		SSL_free(ssl);
		close(fd);
		ERR_clear_error();
	}
	printf("{\"mode\": \"legit\", \"up\": %s, \"ms\": %.0f, \"attempts\": %lu}\n",
	    up ? "true" : "false", (now_s() - t0) * 1000, attempts);
	SSL_CTX_free(ctx);
	return 0;
}

static void
addr(struct sockaddr_in *sa, const char *a, int port)
{
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, a, &sa->sin_addr) != 1) {
		fprintf(stderr, "tcp-attack: bad address %s\n", a);
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };
	int port = argc > 4 ? atoi(argv[4]) : 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 5 || port <= 0 || port > 65535)
		goto usage;
	addr(&local_addr, argv[2], 0);
	addr(&dst, argv[3], port);
	if (argc == 9 && !strcmp(argv[1], "nokey") && atof(argv[7]) > 0)
		return run_nokey(argv[5], argv[6], atof(argv[7]), atof(argv[8]));
	if (argc == 8 && !strcmp(argv[1], "halfopen") && atoi(argv[5]) > 0 &&
	    atoi(argv[5]) <= MAX_HALFOPEN)
		return run_halfopen((unsigned)atoi(argv[5]), !strcmp(argv[6], "hello"),
		    atof(argv[7]));
	if (argc == 8 && !strcmp(argv[1], "frames"))
		return run_frames(argv[5], argv[6], atof(argv[7]));
	if (argc == 7 && !strcmp(argv[1], "flood") && atof(argv[5]) > 0)
		return run_flood(atof(argv[5]), atof(argv[6]));
	if (argc == 7 && !strcmp(argv[1], "hold") && atoi(argv[5]) > 0 &&
	    atoi(argv[5]) <= MAX_HALFOPEN)
		return run_hold((unsigned)atoi(argv[5]), atof(argv[6]));
	if (argc == 9 && !strcmp(argv[1], "keyupdate") && atol(argv[7]) > 0)
		return run_keyupdate(argv[5], argv[6], (unsigned long)atol(argv[7]), atof(argv[8]));
	if (argc == 8 && !strcmp(argv[1], "legit"))
		return run_legit(argv[5], argv[6], atof(argv[7]));
usage:
	fprintf(stderr, "usage: tcp-attack nokey LOCAL DST PORT KEY CERT RATE SECS\n"
	    "       tcp-attack halfopen LOCAL DST PORT COUNT hello|silent SECS\n"
	    "       tcp-attack frames LOCAL DST PORT KEY CERT SECS\n"
	    "       tcp-attack flood LOCAL DST PORT RATE SECS\n"
	    "       tcp-attack hold LOCAL DST PORT COUNT SECS\n"
	    "       tcp-attack keyupdate LOCAL DST PORT KEY CERT COUNT SECS\n"
	    "       tcp-attack legit LOCAL DST PORT KEY CERT SECS\n");
	return 2;
}
