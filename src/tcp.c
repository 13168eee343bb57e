/* tcp.c - the TCP transport (tcp.h): TLS 1.3 over TCP, frames of inner
 * payloads inside (stream.h), for peers that UDP does not reach.
 *
 * Threading model: everything here runs on the main loop.  Each
 * connection is its socket and an SSL on it, driven by two events of our
 * own (readable, persistent; writable, only while TLS waits to write);
 * ops callbacks run from those events, never inside a call into this
 * module from above (tcp_send only queues).  An outgoing connection
 * first is a plain socket bufferevent, for the name lookup, the connect
 * and the HTTP CONNECT exchange with a proxy; its bare socket then goes to
 * the same driver as an accepted one.
 *
 * The driver exists for the receiving side's sake: with OpenSSL's
 * read-ahead and a read buffer of TCP_RBUF_LEN, one read(2) brings in
 * several records, where libevent 2.1's OpenSSL bufferevent (which cannot
 * use read-ahead) made two reads of every record, header then body.
 * Frames read are handed to the receiving direction (ops->frames) in
 * batches; frames sent are queued (c->out) and handed to TLS when the
 * turn of the loop ends, or when the socket is writable again.
 *
 * Authentication is the DTLS rules' (keys.c, handshake.c): the peer's
 * certificate key is pinned or checked against its CA, by ops->authorize;
 * a connection whose key names no peer gets no peer state and is closed
 * (counted).  A peer has at most one connection (peer.tcp): a newer one
 * that authenticates replaces the old, except that of two connections that
 * crossed (both sides connected at once) both sides keep the same one
 * (conn_keep_old).
 *
 * Limits against anyone who can reach listen-tcp: accepts per source
 * address (ratelimit.c), TCP_CONN_MAX connections and TCP_HALF_OPEN_MAX of
 * them not yet authenticated, a deadline of TCP_HANDSHAKE_MS for the
 * handshake; a frame of length 0 or over TCP_FRAME_MAX, or one that is not
 * an inner payload, closes its connection.  Every refusal is counted
 * (events tcp_refused, tcp_handshake_failed, tcp_frames_bad).
 *
 * Inner TCP over outer TCP: the inner connections retransmit, so the
 * carrier's queue stays short.  TCP_NODELAY; TCP_NOTSENT_LOWAT keeps the
 * kernel from holding more than a little unsent, so the queue is ours,
 * and ours drops by time as a router's AQM does: while its bytes have
 * waited over 5 ms for a while, arriving data frames are dropped at
 * CoDel's pace (codel.h), which tells a loss-based inner sender (CUBIC)
 * to slow down without draining the path the way tail drops at a fixed
 * size did (tcp_sendq_aqm).  TCP_SENDQ_MAX bounds the memory
 * (tcp_sendq_dropped); control messages are dropped only there.
 *
 * The frames of one turn of the loop are gathered in a buffer of one TLS
 * record's size and handed to TLS together when the turn ends (or the
 * buffer is full): a record carries a dozen frames instead of one or two,
 * and the records go to the socket up to TCP_WRITE_MAX in one writev(2). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "codel.h"
#include "conf.h"
#include "ctx.h"
#include "drop.h"
#include "events.h"
#include "gue.h"
#include "http_connect.h"
#include "keys.h"
#include "log.h"
#include "peer.h"
#include "ratelimit.h"
#include "rx.h"
#include "stream.h"
#include "tcp.h"
#include "timer.h"
#include "transport.h"
#include "udp.h"

#define TCP_CONN_MAX 256                /* connections at once */
#define TCP_HALF_OPEN_MAX 64            /* of them not yet authenticated */
/* The kernel's queue of connections not yet accepted.  A burst that
 * overflows it is not refused: the kernel answers with a SYN cookie and
 * drops the ACK, the client believes it is connected and the server holds
 * nothing, so a client that then waits silently is never told.  It costs
 * no memory of toud's; the limits above apply once a connection is
 * accepted. */
#define TCP_BACKLOG 1024
#define TCP_HANDSHAKE_MS 5000           /* connect, proxy and TLS, each connection */
/* Bytes a connection may hold for TLS and the socket: a bound on memory.
 * How long they wait is the drop policy's (codel.h); this is only reached
 * by a queue that grows faster than it can decide. */
#define TCP_SENDQ_MAX (2 * 1024 * 1024)
#define TCP_LOWAT_BYTES 16384
#define TCP_ACCEPT_RATE 5               /* accepts per second per source, */
#define TCP_ACCEPT_BURST 20             /* after a burst of this many */
#define TCP_ACCEPT_SOURCES 1024
#define TCP_BATCH 32                    /* frames handed on at once */
#define TCP_SLOT (RX_HEADROOM + TCP_FRAME_MAX)
#define TCP_READ_CHUNK 16384
#define TCP_STAGE_MAX 16384             /* a TLS record's plaintext at most */
#define TCP_RBUF_LEN (64 * 1024)        /* TLS read-ahead: several records a read */
/* Plaintext one read event takes at most: a sender that never lets the
 * socket run dry does not hold the loop (timers, UDP, the other
 * connections, our own queued frames). */
#define TCP_READ_TURN (256 * 1024)
#define TCP_WRITE_MAX (64 * 1024)       /* records gathered for one write(2) */
/* The groups offered, best first: a hybrid post-quantum one where the
 * OpenSSL build has it (3.5), else the classic ones (3.0). */
#define TCP_GROUPS_PQ "X25519MLKEM768:X25519:P-256"
#define TCP_GROUPS "X25519:P-256"

enum tcp_phase { TCP_PROXY, TCP_TLS, TCP_UP };

struct tcp_conn {
	TAILQ_ENTRY(tcp_conn) entry;
	struct tcp *tcp;
	struct bufferevent *raw;        /* outgoing: the plain socket until TLS starts */
	int fd;                         /* the socket once TLS starts, else -1 */
	SSL *ssl;
	struct event *ev_read;          /* persistent while fd is ours */
	struct event *ev_write;         /* added while the socket has no room */
	bool write_blocked;             /* the socket has no room: wait for ev_write */
	struct evbuffer *out;           /* plaintext queued for TLS: frames, whole */
	struct evbuffer *cipher;        /* TLS's records, not yet the socket's (wbio) */
	struct codel_fifo plain;        /* when out's bytes came */
	struct codel_fifo sealed;       /* when cipher's came, as plaintext, to out */
	struct codel aqm;               /* how long they wait to reach the socket */
	struct peer *peer;              /* outgoing: its peer; incoming: once authenticated */
	struct peer *authorized;        /* who the presented key names */
	bool outgoing;
	bool by_lower;                  /* opened by the side whose key sorts first */
	uint64_t up_ms;                 /* when it was authenticated (toud_now) */
	enum tcp_phase phase;
	union sockaddr_union addr;      /* the other end (incoming), for logs */
	char name[UTIL_ADDRSTRLEN + 8];
	struct event *ev_deadline;
	struct stream_rx srx;
	uint8_t *part;                  /* the frame being gathered, between reads */
	uint8_t *stage;                 /* frames of this turn of the loop, not yet TLS's */
	size_t staged;
	struct event *ev_flush;         /* active while frames are staged */
	unsigned busy;                  /* inside its read callback: free later */
	bool dead;
};

/* p's connection (NULL: none): what p's TCP path keeps for it
 * (transport.h).  Every peer of an interface with DTLS has one. */
#define PEER_CONN(p) (transport_path((p)->paths, &transport_tcp)->conn)

struct tcp {
	struct toud *t;
	struct transport_core ops;
	SSL_CTX *ctx;
	struct evconnlistener *listener;
	union sockaddr_union laddr;
	struct ratelimit *rl;
	BIO_METHOD *wbio;               /* TLS writes into c->cipher (wbio_write) */
	TAILQ_HEAD(, tcp_conn) conns;
	unsigned n_conns, n_half;
	uint8_t own_fp[KEYS_FP_LEN];    /* of the interface's key: tie-breaks (conn_keep_old) */
	uint8_t *slots;                 /* TCP_BATCH frames being gathered */
	struct udp_msg msgs[TCP_BATCH];
};

static void conn_read_cb(evutil_socket_t fd, short what, void *arg);
static void conn_write_cb(evutil_socket_t fd, short what, void *arg);
static void conn_flush_cb(evutil_socket_t fd, short what, void *arg);

/* --- connections ----------------------------------------------------- */

static void
conn_free(struct tcp_conn *c)
{
	struct tcp *x = c->tcp;

	if (c->busy) {
		c->dead = true;
		if (c->ev_read)
			event_del(c->ev_read);
		if (c->ev_write)
			event_del(c->ev_write);
		if (c->ev_flush)
			event_del(c->ev_flush);
		evtimer_del(c->ev_deadline);
		return;
	}
	if (c->peer && PEER_CONN(c->peer) == c)
		PEER_CONN(c->peer) = NULL;
	if (c->phase != TCP_UP)
		x->n_half--;
	x->n_conns--;
	TAILQ_REMOVE(&x->conns, c, entry);
	if (c->ev_deadline)
		event_free(c->ev_deadline);
	if (c->ev_flush)
		event_free(c->ev_flush);
	if (c->ev_read)
		event_free(c->ev_read);
	if (c->ev_write)
		event_free(c->ev_write);
	SSL_free(c->ssl);               /* first: its write BIO points at c->cipher */
	free(c->stage);
	if (c->out)
		evbuffer_free(c->out);
	if (c->cipher)
		evbuffer_free(c->cipher);
	if (c->fd >= 0)
		close(c->fd);
	if (c->raw)
		bufferevent_free(c->raw);
	free(c->part);
	free(c);
}

/* The connection failed or ended: its peer hears of it if it had this one. */
static void
conn_fail(struct tcp_conn *c, const char *why)
{
	struct tcp *x = c->tcp;
	struct peer *p = c->peer && PEER_CONN(c->peer) == c ? c->peer : NULL;
	char err[PEER_ERROR_MAX];

	if (c->phase != TCP_UP && !c->outgoing) {
		x->t->events[EVENT_TCP_HANDSHAKE_FAILED]++;
		log_debug_rl("tcp %s: handshake failed: %s", c->name, why);
	}
	if (!p && c->peer && c->outgoing)
		log_debug("peer \"%s\": tcp connection to %s, set aside, ended: %s", c->peer->name,
		    c->name, why);
	if (p) {
		PEER_CONN(p) = NULL;
		c->peer = NULL;
		if (c->phase == TCP_UP)
			log_info("peer \"%s\": tcp connection %s ended: %s", p->name, c->name, why);
		else
			log_warnx("peer \"%s\": tcp connection to %s failed: %s", p->name, c->name,
			    why);
		snprintf(err, sizeof(err), "tcp %s: %s", c->name, why);
	}
	conn_free(c);
	if (p)
		x->ops.down(p, transport_path(p->paths, &transport_tcp), err);
}

static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_fail(arg, "handshake deadline passed");
}

static struct tcp_conn *
conn_new(struct tcp *x, bool outgoing)
{
	struct tcp_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->tcp = x;
	c->fd = -1;
	c->outgoing = outgoing;
	c->phase = TCP_TLS;
	codel_fifo_init(&c->plain);
	codel_fifo_init(&c->sealed);
	codel_init(&c->aqm);
	stream_rx_init(&c->srx, TCP_FRAME_MAX);
	if (!(c->ev_deadline = evtimer_new(x->t->base, deadline_cb, c)) ||
	    !(c->ssl = SSL_new(x->ctx))) {
		if (c->ev_deadline)
			event_free(c->ev_deadline);
		free(c);
		return NULL;
	}
	SSL_set_app_data(c->ssl, c);
	TAILQ_INSERT_TAIL(&x->conns, c, entry);
	x->n_conns++;
	x->n_half++;
	timer_arm_ms(c->ev_deadline, TCP_HANDSHAKE_MS);
	return c;
}

static void
conn_sockopts(int fd)
{
	int one = 1, lowat = TCP_LOWAT_BYTES;

	if (fd < 0)
		return;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
}

/* The reason of an error on the plain socket (bufferevent event what),
 * for logs. */
static const char *
conn_error(short what, char *buf, size_t len)
{
	int serr = EVUTIL_SOCKET_ERROR();

	if (what & BEV_EVENT_TIMEOUT)
		return "timed out";
	if (what & BEV_EVENT_EOF)
		return "closed by the other end";
	if (!serr)
		return "connection lost";
	snprintf(buf, len, "%s", evutil_socket_error_to_string(serr));
	return buf;
}

/* Two connections with one peer, one opened by each side, cross when both
 * sides connect at once; then both sides must keep the same one: the one
 * opened by the side whose key fingerprint sorts first (by_lower).
 * Otherwise a newer connection replaces an older one (the peer
 * reconnected, and the old one may be dead).  As each one authenticates
 * (conn_established):
 *   - ours is up, for less than a handshake's time, and was opened by the
 *     lower key: the peer's new one closes (conn_keep_old);
 *   - ours is still authenticating and would stay: the peer's carries
 *     meanwhile and ours, set aside, replaces it once up;
 *   - else the new one replaces the old; where the two have opposite
 *     directions and the old one is that young, that too ends a crossing. */
static bool
conn_crossing(const struct tcp_conn *old, const struct tcp_conn *c, uint64_t now)
{
	return old->outgoing != c->outgoing &&
	    (old->phase != TCP_UP || now - old->up_ms < TCP_HANDSHAKE_MS);
}

static bool
conn_keep_old(const struct tcp_conn *old, const struct tcp_conn *c, uint64_t now)
{
	return old->phase == TCP_UP && old->by_lower && conn_crossing(old, c, now);
}

/* A crossing was resolved: say which connection stays. */
static void
conn_crossed(struct peer *p, const struct tcp_conn *kept, const struct tcp_conn *closed)
{
	p->events[EVENT_TCP_CROSSED]++;
	log_info("peer \"%s\": tcp connections crossed: %s stays (opened by the lower key), %s "
	    "closes", p->name, kept->name, closed->name);
}

/* TLS is up and authenticated: the connection becomes its peer's, in
 * place of any older one (conn_keep_old). */
static void
conn_established(struct tcp_conn *c)
{
	struct tcp *x = c->tcp;
	struct peer *p = c->authorized;
	uint64_t now = toud_now(x->t);
	struct tcp_conn *old;

	if (!p || (c->outgoing && p != c->peer)) {
		conn_fail(c, "no peer for its key");
		return;
	}
	/* One of ours set aside (below) while a reload took endpoint-tcp
	 * away: nothing would ever bring the peer back to UDP. */
	if (c->outgoing && !p->cf->endpoint_tcp_host) {
		conn_fail(c, "endpoint-tcp was removed");
		return;
	}
	if (!(c->stage = malloc(TCP_STAGE_MAX)) || !(c->out = evbuffer_new()) ||
	    !(c->ev_flush = event_new(x->t->base, -1, 0, conn_flush_cb, c))) {
		conn_fail(c, "out of memory");
		return;
	}
	old = PEER_CONN(p) == c ? NULL : PEER_CONN(p);   /* an outgoing one is p's already */
	if (old && conn_keep_old(old, c, now)) {
		conn_crossed(p, old, c);
		conn_free(c);
		return;
	}
	if (old && old->phase != TCP_UP && old->outgoing && !c->by_lower) {
		/* Ours is still authenticating and would stay: set aside,
		 * it takes over once up, or fails alone. */
		log_debug("peer \"%s\": tcp connection %s set aside while %s carries", p->name,
		    old->name, c->name);
		PEER_CONN(p) = NULL;
		old = NULL;
	}
	c->peer = p;
	if (old) {
		if (conn_crossing(old, c, now))
			conn_crossed(p, c, old);
		else
			log_info("peer \"%s\": tcp connection %s replaces %s", p->name, c->name,
			    old->name);
		old->peer = NULL;
		conn_free(old);
	}
	PEER_CONN(p) = c;
	c->phase = TCP_UP;
	c->up_ms = now;
	x->n_half--;
	evtimer_del(c->ev_deadline);
	conn_sockopts(c->fd);
	log_info("peer \"%s\": tcp connection %s up (%s, %s)", p->name, c->name,
	    SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl));
	x->ops.up(p, transport_path(p->paths, &transport_tcp));
}

/* Verification of the other end's certificate: the same rule as DTLS's
 * (pinned key, or CA and name), by the peer its key names. */
static int
verify_cb(X509_STORE_CTX *xs, void *arg)
{
	struct tcp *x = arg;
	SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
	struct tcp_conn *c = ssl ? SSL_get_app_data(ssl) : NULL;
	X509 *leaf = X509_STORE_CTX_get0_cert(xs);
	uint8_t fp[KEYS_FP_LEN];
	struct peer *p;

	if (!c || !leaf || keys_cert_fp(leaf, fp) < 0)
		goto refuse;
	p = x->ops.authorize(x->t, fp, xs);
	if (!p || (c->outgoing && p != c->peer))
		goto refuse;
	c->authorized = p;
	c->by_lower = (memcmp(x->own_fp, fp, KEYS_FP_LEN) < 0) == c->outgoing;
	return 1;
refuse:
	X509_STORE_CTX_set_error(xs, X509_V_ERR_APPLICATION_VERIFICATION);
	return 0;
}

/* --- frames in ------------------------------------------------------- */

/* Hand the n complete frames gathered to the receiving direction; the one
 * being gathered moves to the first slot. */
static void
conn_deliver(struct tcp_conn *c, unsigned n)
{
	struct tcp *x = c->tcp;
	size_t part = stream_rx_partial(&c->srx);

	if (n && c->peer)
		x->ops.frames(x->t, c->peer, x->msgs, n);
	if (n && part)
		memmove(x->slots + RX_HEADROOM, x->slots + (size_t)n * TCP_SLOT + RX_HEADROOM, part);
}

/* Feed what was read into frames; false when the stream is bad (the
 * connection is closed, counted). */
static bool
conn_feed(struct tcp_conn *c, const uint8_t *data, size_t len, unsigned *n)
{
	struct tcp *x = c->tcp;
	size_t used, flen = 0;
	enum stream_status st;
	struct gue_inner in;
	bool malformed;

	while (len) {
		uint8_t *dst = x->slots + (size_t)*n * TCP_SLOT + RX_HEADROOM;

		st = stream_rx_feed(&c->srx, data, len, &used, dst, &flen);
		data += used;
		len -= used;
		if (st == STREAM_MORE)
			continue;
		malformed = st == STREAM_FRAME && gue_inner_decode(dst, flen, &in) != GUE_OK;
		if (st != STREAM_FRAME || malformed) {
			x->t->events[EVENT_TCP_FRAMES_BAD]++;
			log_warnx("peer \"%s\": tcp connection %s sent %s: closed", c->peer->name,
			    c->name, malformed ? "a frame that is no inner payload" :
			    stream_status_name(st));
			return false;
		}
		x->msgs[*n] = (struct udp_msg){ .buf = dst, .cap = TCP_FRAME_MAX,
		    .len = flen, .peer = c->addr };
		if (++*n == TCP_BATCH) {
			conn_deliver(c, *n);
			*n = 0;
			if (c->dead)            /* what it carried closed it */
				return true;
		}
	}
	return true;
}

/* --- the driver: TLS on the bare socket ------------------------------- */

/* Why a call into TLS that returned ret (error err) failed, for logs. */
static const char *
conn_ssl_error(int ret, int err, int serr, char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();
	const char *r;

	if (err == SSL_ERROR_ZERO_RETURN)
		return "closed by the other end";
	if (err == SSL_ERROR_SSL && e) {
		r = ERR_reason_error_string(e);
		snprintf(buf, len, "TLS: %s", r ? r : "error");
		ERR_clear_error();
		return buf;
	}
	ERR_clear_error();
	if (err == SSL_ERROR_SYSCALL && serr) {
		snprintf(buf, len, "%s", strerror(serr));
		return buf;
	}
	return ret == 0 ? "closed by the other end" : "connection lost";
}

/* The socket's side of TLS's writes: the records gather in c->cipher,
 * and conn_sock_write hands them to the socket together (one write(2)
 * for many records, where a socket BIO makes one of every record). */
static int
wbio_write(BIO *b, const char *data, int len)
{
	BIO_clear_retry_flags(b);
	if (len < 0 || evbuffer_add(BIO_get_data(b), data, (size_t)len) < 0)
		return -1;
	return len;
}

static long
wbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b;
	(void)num;
	(void)ptr;
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int
wbio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

/* Bytes c holds for TLS and the socket: staged, queued, sealed. */
static size_t
conn_queued(const struct tcp_conn *c)
{
	return c->staged + evbuffer_get_length(c->out) + evbuffer_get_length(c->cipher);
}

/* w bytes of records reached the socket: how long the last of them waited
 * since it came as a frame, to the drop policy.  Records TLS wrote of its
 * own (a KeyUpdate) are in cipher but not in sealed, which counts them as
 * the frames' until the queue runs dry and it starts over. */
static void
conn_sent(struct tcp_conn *c, size_t w)
{
	uint64_t at = codel_fifo_take(&c->sealed, w), now;

	if (at && c->out) {
		now = util_now_us();
		codel_note(&c->aqm, now > at ? now - at : 0, conn_queued(c), now);
	}
	if (!evbuffer_get_length(c->cipher))
		codel_fifo_clear(&c->sealed);
}

/* What TLS wrote goes to the socket, until it has no room (then ev_write
 * waits for it).  0 or -errno. */
static int
conn_sock_write(struct tcp_conn *c)
{
	int w;

	while (evbuffer_get_length(c->cipher)) {
		if ((w = evbuffer_write(c->cipher, c->fd)) > 0) {
			conn_sent(c, (size_t)w);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (!c->write_blocked) {
			c->write_blocked = true;
			event_add(c->ev_write, NULL);
		}
		return 0;
	}
	if (c->write_blocked) {
		c->write_blocked = false;
		event_del(c->ev_write);
	}
	return 0;
}

/* The last call into TLS returned ret <= 0: false when c is to close (why
 * says why); true when TLS waits for the socket to be readable. */
static bool
conn_ssl_wait(struct tcp_conn *c, int ret, const char **why, char *buf, size_t len)
{
	int serr = errno, err = SSL_get_error(c->ssl, ret);

	if (err == SSL_ERROR_WANT_READ)
		return true;
	*why = conn_ssl_error(ret, err, serr, buf, len);
	return false;
}

/* The handshake goes on; false when c failed (and may be gone). */
static bool
conn_handshake(struct tcp_conn *c)
{
	const char *why = NULL;
	char buf[160];
	bool ok;
	int r, rc;

	ERR_clear_error();
	r = SSL_do_handshake(c->ssl);
	/* TLS's verdict first (errno is its until the socket is written);
	 * then what it wrote, an alert too, goes out. */
	ok = r == 1 || conn_ssl_wait(c, r, &why, buf, sizeof(buf));
	if ((rc = conn_sock_write(c)) < 0 && ok) {
		ok = false;
		why = strerror(-rc);
	}
	ERR_clear_error();
	if (!ok) {
		conn_fail(c, why);
		return false;
	}
	if (r == 1)
		conn_established(c);
	return true;
}

/* Records in: every one TLS has buffered (read-ahead brings in several),
 * into frames. */
static void
conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;
	uint8_t chunk[TCP_READ_CHUNK];
	const char *why = NULL;
	char buf[160];
	unsigned n = 0;
	bool ok = true;
	size_t taken = 0;
	int got;

	(void)fd;
	(void)what;
	c->busy++;
	if (c->phase == TCP_TLS && (!conn_handshake(c) || c->phase != TCP_UP))
		goto out;
	if (c->dead)
		goto out;
	if (!c->peer) {                 /* not for long: nothing reads for it */
		c->busy--;
		conn_fail(c, "no peer for its key");
		return;
	}
	/* The slots are every connection's: a frame begun in an earlier read
	 * waits in the connection's own buffer. */
	if (stream_rx_partial(&c->srx))
		memcpy(c->tcp->slots + RX_HEADROOM, c->part, stream_rx_partial(&c->srx));
	for (;;) {
		ERR_clear_error();
		if ((got = SSL_read(c->ssl, chunk, sizeof(chunk))) <= 0) {
			if (!conn_ssl_wait(c, got, &why, buf, sizeof(buf)))
				ok = false;
			break;
		}
		if (!(ok = conn_feed(c, chunk, (size_t)got, &n)) || c->dead)
			break;
		/* Level-triggered: what is still in the socket wakes us again. */
		if (!SSL_has_pending(c->ssl))
			break;
		/* What TLS read ahead is no longer in the socket: nothing
		 * would report it, so the event comes back by itself. */
		if ((taken += (size_t)got) >= TCP_READ_TURN) {
			event_active(c->ev_read, EV_READ, 0);
			break;
		}
	}
	/* What reading made TLS say (an answer to a KeyUpdate).  Not while
	 * the socket is full: ev_write then sends it with the queue, where
	 * a write from here that emptied it would drop ev_write and strand
	 * the frames still queued behind it. */
	if (ok && !c->dead && !c->write_blocked && evbuffer_get_length(c->cipher) &&
	    (got = conn_sock_write(c)) < 0) {
		ok = false;
		why = strerror(-got);
	}
	if (!c->dead && (ok || why))
		conn_deliver(c, n);
	if (ok && !c->dead && stream_rx_partial(&c->srx)) {
		if (!c->part && !(c->part = malloc(TCP_FRAME_MAX)))
			ok = false;
		else
			memcpy(c->part, c->tcp->slots + RX_HEADROOM, stream_rx_partial(&c->srx));
	}
	if (!ok && !c->dead) {
		c->busy--;
		conn_fail(c, why ? why : "bad frame");
		return;
	}
out:
	if (!--c->busy && c->dead)
		conn_free(c);
}

/* --- frames out ------------------------------------------------------ */

/* Hand what is queued to TLS, a record (TCP_STAGE_MAX) at a time, and
 * the records to the socket, TCP_WRITE_MAX at a time, until the socket
 * takes no more.  0, or -1 with why set: c is to close. */
static int
conn_write(struct tcp_conn *c, const char **why, char *buf, size_t len)
{
	struct evbuffer_iovec v;
	size_t queued, n, sealed;
	uint8_t *p;
	int r;

	while (!c->write_blocked && (queued = evbuffer_get_length(c->out)) > 0) {
		while (queued > 0 && evbuffer_get_length(c->cipher) < TCP_WRITE_MAX) {
			/* A record of what lies together in the queue's first
			 * chunk: making more of it contiguous would copy. */
			if (evbuffer_peek(c->out, -1, NULL, &v, 1) < 1 || !v.iov_len) {
				*why = "out of memory";
				return -1;
			}
			n = v.iov_len < TCP_STAGE_MAX ? v.iov_len : TCP_STAGE_MAX;
			p = v.iov_base;
			sealed = evbuffer_get_length(c->cipher);
			ERR_clear_error();
			if ((r = SSL_write(c->ssl, p, (int)n)) <= 0) {
				*why = conn_ssl_error(r, SSL_get_error(c->ssl, r), errno, buf, len);
				return -1;
			}
			evbuffer_drain(c->out, (size_t)r);
			codel_fifo_add(&c->sealed, evbuffer_get_length(c->cipher) - sealed,
			    codel_fifo_take(&c->plain, (size_t)r));
			queued -= (size_t)r;
		}
		if ((r = conn_sock_write(c)) < 0) {
			*why = strerror(-r);
			return -1;
		}
	}
	return 0;
}

/* The staged frames join the queue for TLS, as one record. */
static int
conn_flush(struct tcp_conn *c)
{
	int rc = 0;

	if (!c->staged)
		return 0;
	if (evbuffer_add(c->out, c->stage, c->staged) < 0)
		rc = -ENOMEM;
	else
		codel_fifo_add(&c->plain, c->staged, util_now_us());
	c->staged = 0;
	return rc;
}

/* The turn of the loop ends: what it queued goes to TLS. */
static void
conn_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;
	const char *why = NULL;
	char buf[160];

	(void)fd;
	(void)what;
	if (conn_flush(c) < 0 && c->peer)
		c->peer->drops[DROP_TCP_SENDQ]++;
	if (conn_write(c, &why, buf, sizeof(buf)) < 0)
		conn_fail(c, why);
}

/* The socket has room again: the handshake, or the queue, goes on. */
static void
conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;
	const char *why = NULL;
	char buf[160];
	int rc;

	if (c->phase == TCP_TLS) {
		/* Through the reader: a handshake that ends here may have
		 * read the peer's first records ahead, which no read event
		 * would report. */
		conn_read_cb(fd, what, c);
		return;
	}
	if ((rc = conn_sock_write(c)) < 0)
		conn_fail(c, strerror(-rc));
	else if (conn_write(c, &why, buf, sizeof(buf)) < 0)
		conn_fail(c, why);
}

/* Queue one frame (payload, len bytes) on p's connection.  0, -ENOTCONN
 * (none up), -ENOBUFS (its send queue is full), -ETIMEDOUT (data, not a
 * control message, dropped because the queue's wait has stayed too long:
 * codel.h), -EMSGSIZE. */
static int
conn_send(struct tcp_conn *c, const uint8_t *payload, size_t len, bool data)
{
	size_t flen = STREAM_HDR_LEN + len;

	if (!c || c->phase != TCP_UP)
		return -ENOTCONN;
	if (len == 0 || len > TCP_FRAME_MAX)
		return -EMSGSIZE;
	if (data && c->aqm.dropping && codel_drop(&c->aqm, util_now_us()))
		return -ETIMEDOUT;
	if (conn_queued(c) + flen > TCP_SENDQ_MAX)
		return -ENOBUFS;
	if (c->staged + flen > TCP_STAGE_MAX && conn_flush(c) < 0)
		return -ENOMEM;
	if (!c->staged)
		event_active(c->ev_flush, EV_TIMEOUT, 0);
	if (flen > TCP_STAGE_MAX) {             /* only a frame near the largest */
		uint8_t hdr[STREAM_HDR_LEN];

		(void)stream_frame_header(hdr, len, TCP_FRAME_MAX);
		/* Room for the whole frame first: half of one would break
		 * the stream. */
		if (evbuffer_expand(c->out, flen) < 0 ||
		    evbuffer_add(c->out, hdr, sizeof(hdr)) < 0 ||
		    evbuffer_add(c->out, payload, len) < 0)
			return -ENOMEM;
		codel_fifo_add(&c->plain, flen, util_now_us());
		return 0;
	}
	(void)stream_frame_header(c->stage + c->staged, len, TCP_FRAME_MAX);
	memcpy(c->stage + c->staged + STREAM_HDR_LEN, payload, len);
	c->staged += flen;
	return 0;
}

/* The send op: a frame of p's connection; the send queue may drop it,
 * full or by its wait (counted): the inner TCP retransmits.  The bytes
 * it takes on the stream, or -errno. */
static int
tcp_send(struct peer *p, struct peer_path *ph, uint8_t *payload, size_t len, uint8_t tos,
    enum tx_payload kind, uint64_t now)
{
	int rc = conn_send(ph->conn, payload, len, kind != TX_CONTROL);

	(void)tos;
	(void)now;
	if (rc < 0) {
		p->drops[rc == -ENOBUFS ? DROP_TCP_SENDQ :
		    rc == -ETIMEDOUT ? DROP_TCP_SENDQ_AQM : DROP_SEAL]++;
		return rc;
	}
	return (int)(len + STREAM_HDR_LEN);
}

static enum transport_state
tcp_state(const struct peer *p, const struct peer_path *ph)
{
	const struct tcp_conn *c = ph->conn;

	(void)p;
	return !c ? TRANSPORT_DOWN : c->phase == TCP_UP ? TRANSPORT_UP : TRANSPORT_OPENING;
}

static bool
tcp_outgoing(const struct peer *p, const struct peer_path *ph)
{
	const struct tcp_conn *c = ph->conn;

	(void)p;
	return c && c->outgoing;
}

static const char *
tcp_cipher(const struct peer *p, const struct peer_path *ph)
{
	const struct tcp_conn *c = ph->conn;

	(void)p;
	return c && c->phase == TCP_UP ? SSL_get_cipher_name(c->ssl) : "";
}

/* The kernel's smoothed RTT of the connection (TCP_INFO). */
static uint64_t
tcp_rtt_us(const struct peer *p, const struct peer_path *ph)
{
	const struct tcp_conn *c = ph->conn;
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	(void)p;
	if (!c || c->fd < 0 || getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return 0;
	return ti.tcpi_rtt;
}

/* The close op: p's connection ends, and so does every other of p's. */
static void
tcp_close(struct peer *p, struct peer_path *ph)
{
	struct tcp *x = p->toud->tcp;
	struct tcp_conn *c = ph->conn, *o, *next;

	/* None of p's connections outlives it: not one still authenticating
	 * whose key named p, nor one of ours set aside (conn_established). */
	for (o = x ? TAILQ_FIRST(&x->conns) : NULL; o; o = next) {
		next = TAILQ_NEXT(o, entry);
		if (o != c && (o->peer == p || o->authorized == p)) {
			o->peer = o->authorized = NULL;
			conn_free(o);
		}
	}
	if (!c)
		return;
	ph->conn = NULL;
	c->peer = NULL;
	log_info("peer \"%s\": tcp connection %s closed", p->name, c->name);
	/* A close_notify, so the other end sees an orderly end. */
	if (c->phase == TCP_UP && SSL_shutdown(c->ssl) >= 0)
		(void)conn_sock_write(c);
	ERR_clear_error();
	conn_free(c);
}

/* --- outgoing -------------------------------------------------------- */

/* TLS starts on c's socket fd (ours from now on): it reads the socket
 * itself (read-ahead), and writes into c->cipher (wbio_write); the
 * driver's events.  0 or -ENOMEM (fd is closed with c). */
static int
conn_tls_start(struct tcp_conn *c, int fd)
{
	struct event_base *base = c->tcp->t->base;
	BIO *rb, *wb;

	c->fd = fd;
	if (!(c->cipher = evbuffer_new()) || !(rb = BIO_new_socket(fd, BIO_NOCLOSE)))
		return -ENOMEM;
	if (!(wb = BIO_new(c->tcp->wbio))) {
		BIO_free(rb);
		return -ENOMEM;
	}
	BIO_set_data(wb, c->cipher);
	SSL_set_bio(c->ssl, rb, wb);
	if (!(c->ev_read = event_new(base, fd, EV_READ | EV_PERSIST, conn_read_cb, c)) ||
	    !(c->ev_write = event_new(base, fd, EV_WRITE | EV_PERSIST, conn_write_cb, c)) ||
	    event_add(c->ev_read, NULL) < 0)
		return -ENOMEM;
	/* Ours begins with the ClientHello, once the socket has room. */
	if (c->outgoing) {
		if (event_add(c->ev_write, NULL) < 0)
			return -ENOMEM;
		c->write_blocked = true;
	}
	return 0;
}

/* The plain socket is connected (and past the proxy): its bare fd goes to
 * the driver.  Nothing may be buffered: the other end says nothing before
 * our ClientHello. */
static void
conn_raw_done(struct tcp_conn *c)
{
	int fd = bufferevent_getfd(c->raw);

	if (evbuffer_get_length(bufferevent_get_input(c->raw))) {
		conn_fail(c, c->phase == TCP_PROXY ? "the proxy sent more than its answer" :
		    "the other end spoke first");
		return;
	}
	bufferevent_disable(c->raw, EV_READ | EV_WRITE);
	bufferevent_setfd(c->raw, -1);          /* keeps it open when freed */
	bufferevent_free(c->raw);
	c->raw = NULL;
	c->phase = TCP_TLS;
	if (fd < 0 || conn_tls_start(c, fd) < 0) {
		if (c->fd < 0 && fd >= 0)
			close(fd);
		conn_fail(c, fd < 0 ? "connection lost" : "out of memory");
	}
}

/* The proxy's answer to CONNECT: on 2xx, TLS starts over the same socket. */
static void
proxy_read(struct bufferevent *raw, void *arg)
{
	struct tcp_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(raw);
	size_t len = evbuffer_get_length(in), used = 0;
	char why[64];
	int status = 0;

	switch (http_connect_response(evbuffer_pullup(in, -1), len, &used, &status)) {
	case HC_MORE:
		return;
	case HC_OK:
		break;
	case HC_REFUSED:
		snprintf(why, sizeof(why), "the proxy refused with status %d", status);
		conn_fail(c, why);
		return;
	case HC_BAD:
		conn_fail(c, "the proxy's answer is not HTTP");
		return;
	}
	evbuffer_drain(in, used);
	conn_raw_done(c);
}

/* The plain socket connected (or failed): straight to TLS, or first the
 * CONNECT request to the proxy. */
static void
raw_event(struct bufferevent *raw, short what, void *arg)
{
	struct tcp_conn *c = arg;
	const struct conf_peer *cf = c->peer ? c->peer->cf : NULL;
	char req[512], buf[160];
	int n;

	if (!(what & BEV_EVENT_CONNECTED)) {
		conn_fail(c, conn_error(what, buf, sizeof(buf)));
		return;
	}
	if (c->phase != TCP_PROXY) {
		conn_raw_done(c);
		return;
	}
	conn_sockopts(bufferevent_getfd(raw));
	if (!cf || (n = http_connect_request(req, sizeof(req), cf->endpoint_tcp_host,
	    cf->endpoint_tcp_port)) < 0) {
		conn_fail(c, "cannot write the CONNECT request");
		return;
	}
	bufferevent_write(raw, req, (size_t)n);
}

/* The open op: connect to p's endpoint-tcp (through its proxy, if any). */
static int
tcp_connect(struct peer *p, struct peer_path *ph)
{
	struct tcp *x = p->toud->tcp;
	const struct conf_peer *cf = p->cf;
	const char *host = cf->proxy_host ? cf->proxy_host : cf->endpoint_tcp_host;
	uint16_t port = cf->proxy_host ? cf->proxy_port : cf->endpoint_tcp_port;
	struct bufferevent *bev;
	struct tcp_conn *c;

	if (!x || !cf->endpoint_tcp_host)
		return -EOPNOTSUPP;
	if (ph->conn)
		return 0;
	if (x->n_conns >= TCP_CONN_MAX)
		return -EMFILE;
	if (!(c = conn_new(x, true)))
		return -ENOMEM;
	c->peer = p;
	ph->conn = c;
	snprintf(c->name, sizeof(c->name), strchr(cf->endpoint_tcp_host, ':') ? "[%s]:%u" :
	    "%s:%u", cf->endpoint_tcp_host, cf->endpoint_tcp_port);
	SSL_set_connect_state(c->ssl);
	/* No server name unless one is configured (doc/protocol.md 3a). */
	if (cf->sni && SSL_set_tlsext_host_name(c->ssl, cf->sni) != 1) {
		ERR_clear_error();
		conn_free(c);
		return -ENOMEM;
	}
	/* The name lookup, the connect and any proxy's CONNECT on a plain
	 * socket bufferevent; TLS, once there, on the bare socket. */
	if (cf->proxy_host)
		c->phase = TCP_PROXY;
	bev = c->raw = bufferevent_socket_new(x->t->base, -1,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!bev) {
		conn_free(c);
		return -ENOMEM;
	}
	bufferevent_setcb(bev, cf->proxy_host ? proxy_read : NULL, NULL, raw_event, c);
	/* Without a proxy nothing is read before TLS: the connect is seen
	 * by the write event. */
	bufferevent_enable(bev, cf->proxy_host ? EV_READ | EV_WRITE : EV_WRITE);
	log_info("peer \"%s\": connecting to tcp endpoint %s%s%s", p->name, c->name,
	    cf->proxy_host ? " through proxy " : "", cf->proxy_host ? cf->proxy_host : "");
	if (bufferevent_socket_connect_hostname(bev, x->t->dns, AF_UNSPEC, host, port) < 0) {
		conn_fail(c, "cannot connect");
		return -ECONNREFUSED;
	}
	return 0;
}

/* --- incoming -------------------------------------------------------- */

static void
accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
    void *arg)
{
	struct tcp *x = arg;
	struct tcp_conn *c;
	union sockaddr_union from;
	struct ipaddr src;
	uint16_t port;

	(void)l;
	memset(&from, 0, sizeof(from));
	memcpy(&from, sa, (size_t)salen < sizeof(from) ? (size_t)salen : sizeof(from));
	util_sa_to_addr(&from, &src, &port);
	if (x->n_conns >= TCP_CONN_MAX || x->n_half >= TCP_HALF_OPEN_MAX ||
	    !ratelimit_allow(x->rl, &src, toud_now(x->t))) {
		x->t->events[EVENT_TCP_REFUSED]++;
		log_debug_rl("tcp: connection from %s refused (limit)",
		    util_addr_fmt(&src, (char[UTIL_ADDRSTRLEN]){ 0 }, UTIL_ADDRSTRLEN));
		close(fd);
		return;
	}
	if (!(c = conn_new(x, false))) {
		close(fd);
		return;
	}
	x->t->events[EVENT_TCP_ACCEPTED]++;
	c->addr = from;
	util_sa_fmt(&from, c->name, sizeof(c->name));
	conn_sockopts(fd);
	SSL_set_accept_state(c->ssl);
	if (conn_tls_start(c, fd) < 0)
		conn_free(c);                   /* and fd with it */
}

/* The listening socket of listen-tcp: one address, or both families on
 * one IPv6 socket (IPv4 alone where IPv6 is off). */
static int
listen_open(struct tcp *x, const struct conf_iface *ifc)
{
	union sockaddr_union sa;
	struct ipaddr any6 = { .family = AF_INET6 }, any4 = { .family = AF_INET };
	int fd, one = 1, zero = 0, rc;

	util_sa_from_addr(&sa, ifc->has_listen_tcp_addr ? &ifc->listen_tcp_addr : &any6,
	    ifc->listen_tcp_port);
	fd = socket(sa.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 && errno == EAFNOSUPPORT && !ifc->has_listen_tcp_addr) {
		util_sa_from_addr(&sa, &any4, ifc->listen_tcp_port);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	}
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa.sa.sa_family == AF_INET6 && !ifc->has_listen_tcp_addr)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, &sa.sa, util_sa_len(&sa)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	x->laddr = sa;
	x->listener = evconnlistener_new(x->t->base, accept_cb, x, LEV_OPT_CLOSE_ON_FREE,
	    TCP_BACKLOG, fd);
	if (!x->listener) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

/* --- the context ----------------------------------------------------- */

static int
ctx_setup(struct tcp *x, const struct conf_iface *ifc)
{
	SSL_CTX *ctx = x->ctx;

	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION))
		return -EINVAL;
	if (!SSL_CTX_set1_groups_list(ctx, TCP_GROUPS_PQ)) {
		ERR_clear_error();
		if (!SSL_CTX_set1_groups_list(ctx, TCP_GROUPS))
			return -EINVAL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	/* An end without close_notify is an end like any other (records
	 * are authenticated whole, a frame cut short is never handed on),
	 * as it was with libevent's allow_dirty_shutdown. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	/* The driver (conn_read_cb): one read(2) for several records. */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, TCP_RBUF_LEN);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_default_passwd_cb(ctx, keys_no_passwd_cb);
	if (SSL_CTX_use_PrivateKey_file(ctx, ifc->private_key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_use_certificate_chain_file(ctx, ifc->certificate) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1)
		return -EINVAL;
	if (keys_cert_fp(SSL_CTX_get0_certificate(ctx), x->own_fp) < 0)
		return -EINVAL;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, verify_cb, x);
	return 0;
}

const struct transport_ops transport_tcp = {
	.name = "tcp",
	.moved_event = EVENT_TRANSPORT_TCP,
	.open = tcp_connect,
	.close = tcp_close,
	.send = tcp_send,
	.outgoing = tcp_outgoing,
	.state = tcp_state,
	.cipher = tcp_cipher,
	.rtt_us = tcp_rtt_us,
};

int
tcp_init(struct toud *t, const struct transport_core *ops)
{
	const struct conf_iface *ifc = &t->conf->iface;
	uint8_t secret[RATELIMIT_SECRET_LEN];
	char a[UTIL_ADDRSTRLEN];
	struct tcp *x;
	int rc;

	if (!(x = calloc(1, sizeof(*x))))
		return -ENOMEM;
	t->tcp = x;
	x->t = t;
	x->ops = *ops;
	TAILQ_INIT(&x->conns);
	if (getrandom(secret, sizeof(secret), 0) != sizeof(secret) ||
	    !(x->rl = ratelimit_new(TCP_ACCEPT_SOURCES, TCP_ACCEPT_RATE, TCP_ACCEPT_BURST, secret)) ||
	    !(x->slots = malloc((size_t)TCP_BATCH * TCP_SLOT)) ||
	    !(x->ctx = SSL_CTX_new(TLS_method())) ||
	    !(x->wbio = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "toud-tcp")) ||
	    !BIO_meth_set_write(x->wbio, wbio_write) || !BIO_meth_set_ctrl(x->wbio, wbio_ctrl) ||
	    !BIO_meth_set_create(x->wbio, wbio_create))
		return -ENOMEM;
	if ((rc = ctx_setup(x, ifc)) < 0) {
		log_errx("tcp transport: TLS set-up: %s", keys_ssl_reason());
		return rc;
	}
	if (!ifc->has_listen_tcp)
		return 0;
	if ((rc = listen_open(x, ifc)) < 0) {
		log_errx("listen-tcp %u: %s", ifc->listen_tcp_port, strerror(-rc));
		return rc;
	}
	log_info("accepting the tcp transport on %s", util_sa_fmt(&x->laddr, a, sizeof(a)));
	return 0;
}

void
tcp_free(struct toud *t)
{
	struct tcp *x = t->tcp;
	struct tcp_conn *c;

	if (!x)
		return;
	while ((c = TAILQ_FIRST(&x->conns))) {
		if (c->peer && PEER_CONN(c->peer) == c)
			PEER_CONN(c->peer) = NULL;
		c->peer = NULL;
		c->busy = 0;
		conn_free(c);
	}
	if (x->listener)
		evconnlistener_free(x->listener);
	ratelimit_free(x->rl);
	SSL_CTX_free(x->ctx);
	if (x->wbio)
		BIO_meth_free(x->wbio);
	free(x->slots);
	free(x);
	t->tcp = NULL;
}

const char *
tcp_listen_fmt(const struct toud *t, char *buf, size_t len)
{
	if (!t->tcp || !t->tcp->listener)
		return NULL;
	return util_sa_fmt(&t->tcp->laddr, buf, len);
}

unsigned
tcp_connections(const struct toud *t)
{
	return t->tcp ? t->tcp->n_conns : 0;
}
