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
 * address (ratelimit.c; an IPv4 client of the dual-stack socket as its
 * IPv4 address), TCP_CONN_MAX connections and TCP_HALF_OPEN_MAX of them
 * not yet authenticated, TCP_HALF_OPEN_PER_SOURCE of those from one
 * source, with eviction of the oldest (accept_room), a first byte within
 * TCP_FIRST_BYTE_MS and the handshake within TCP_HANDSHAKE_MS; a frame of
 * length 0 or over TCP_FRAME_MAX, or one that is not an inner payload,
 * closes its connection, and so do KeyUpdates faster than
 * TCP_KEY_UPDATES_PER_S (msg_cb).  One read event takes TCP_READ_TURN
 * bytes or TCP_READ_RECORDS records at most; what TLS writes of its own
 * counts against TCP_SENDQ_MAX (wbio_write).  Every refusal is counted
 * (events tcp_refused, tcp_evicted, tcp_looped, tcp_handshake_failed,
 * tcp_frames_bad, tcp_key_updates).
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
#include <event2/util.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "codel.h"
#include "conf.h"
#include "conf_diff.h"
#include "ctx.h"
#include "dtls.h"
#include "drop.h"
#include "events.h"
#include "gue.h"
#include "http_connect.h"
#include "keys.h"
#include "log.h"
#include "peer.h"
#include "pq.h"
#include "prefix.h"
#include "ratelimit.h"
#include "rx.h"
#include "stream.h"
#include "tcp.h"
#include "tcp_psk.h"
#include "timer.h"
#include "transport.h"
#include "udp.h"

#define TCP_CONN_MAX 256                /* connections at once */
#define TCP_HALF_OPEN_MAX 64            /* of them not yet authenticated */
/* Of those, accepted from one source (an IPv6 one by its /64, as the
 * rate limit counts it): beyond, the source's oldest goes once it is no
 * longer young, else the newcomer is refused; a full table loses its
 * oldest accepted one that has not presented a configured key.  So a few
 * hosts that connect and say nothing never lock the others out (the
 * rules of the DTLS handshakes, handshake.c). */
#define TCP_HALF_OPEN_PER_SOURCE 4
#define TCP_HALF_OPEN_YOUNG_MS 1000
/* An accepted connection says something (its ClientHello) within this,
 * or closes: a silent one holds a slot for 2 seconds, not the whole
 * handshake's deadline.  A client through a proxy speaks one round trip
 * to its proxy after we accept: room for a slow one. */
#define TCP_FIRST_BYTE_MS 2000
/* The kernel's queue of connections not yet accepted.  A burst that
 * overflows it is not refused: the kernel answers with a SYN cookie and
 * drops the ACK, the client believes it is connected and the server holds
 * nothing, so a client that then waits silently is never told.  It costs
 * no memory of toud's; the limits above apply once a connection is
 * accepted. */
#define TCP_BACKLOG 1024
#define TCP_HANDSHAKE_MS 5000           /* connect, proxy and TLS, each connection */
#define TCP_LOOP_WARN_MS 60000          /* a looping connection is warned of once a minute */
/* A connection lives session-max-age, as a DTLS session does: then the
 * side that opened it opens another, which replaces it once up; one not
 * replaced within this much more ends (conn_aged). */
#define TCP_MAX_AGE_GRACE_MS 10000
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
/* What one read event takes at most, in what the other end sent (bytes
 * read from the socket, records opened), not in what it yields: a sender
 * that never lets the socket run dry does not hold the loop (timers, UDP,
 * the other connections, our own queued frames), nor one whose records
 * carry next to nothing. */
#define TCP_READ_TURN (256 * 1024)
#define TCP_READ_RECORDS 64
/* KeyUpdates a peer may send in a second: toud sends none, and each costs
 * the receiver a key schedule (and, when it asks for one back, a record of
 * ours).  More closes the connection (event tcp_key_updates). */
#define TCP_KEY_UPDATES_PER_S 4
#define TCP_STR_(x) #x
#define TCP_STR(x) TCP_STR_(x)
#define TCP_WRITE_MAX (64 * 1024)       /* records gathered for one write(2) */
/* The groups offered, best first: a hybrid post-quantum one where the
 * OpenSSL build has it (3.5), else the classic ones (3.0).  Named one by
 * one, never through DEFAULT (CVE-2026-2673: a 3.5.0-3.5.5 server with
 * DEFAULT in its list may pick a less preferred group).  The '*' (3.5
 * syntax, which 3.0 refuses: then the second list) sends a key share for
 * X25519 beside ML-KEM's, so that a 3.0 server answers at once instead of
 * asking again (HelloRetryRequest); a 3.5 server still picks ML-KEM. */
#define TCP_GROUPS_PQ "*X25519MLKEM768:*X25519:P-256"
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
	uint64_t opened_ms;             /* when it was accepted or opened */
	bool heard;                     /* incoming: it has sent something */
	bool sealing;                   /* inside our SSL_write: TLS writes our frames */
	bool sendq_over;                /* TLS's own output found the queue at its bound */
	bool key_updates_over;          /* KeyUpdates came faster than allowed */
	const char *revoked;            /* why a reload ends it (tcp_reauthorize), or NULL */
	bool renewing;                  /* at its maximum age: its replacement was opened */
	unsigned key_updates;           /* received since key_updates_ms */
	uint64_t key_updates_ms;
	enum tcp_phase phase;
	union sockaddr_union addr;      /* the other end (incoming), for logs */
	char name[UTIL_ADDRSTRLEN + 8];
	struct event *ev_deadline;
	struct evdns_getaddrinfo_request *dns_req;  /* outgoing: the name lookup */
	struct stream_rx srx;
	uint8_t *part;                  /* the frame being gathered, between reads */
	uint8_t *stage;                 /* frames of this turn of the loop, not yet TLS's */
	size_t staged;
	struct event *ev_flush;         /* active while frames are staged */
	unsigned busy;                  /* inside its read callback: free later */
	bool dead;
	char *refused;                  /* outgoing: why verify_cb refused the key */
	/* Its peer has a preshared key: every frame's payload is sealed
	 * (tcp_psk.h), and the connection is up only once one from the
	 * other end opened (conn_psk_start, conn_open_frame). */
	bool psk_on;
	struct tcp_psk psk;
	uint8_t psk_key[TCP_PSK_LEN];   /* the preshared key it is under (tcp_reauthorize) */
	bool framed;                    /* a frame of the other end was accepted */
	bool mismatched;                /* its first frame said the keys differ */
	char *peer_refused;             /* why the other end refused the session (pq.h) */
	char kx[PQ_NAME_MAX];           /* the key exchange, once authenticated */
};

/* c is authenticated, but its first frame under the preshared key has not
 * come yet: not up for its peer. */
#define CONN_WAITS(c) ((c)->psk_on && !(c)->psk.opened)

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
	uint32_t mark;                  /* SO_MARK of every socket (tcp_set_mark) */
	uint64_t loop_warned_ms;        /* the last warning of a looping connection */
	uint8_t own_fp[KEYS_FP_LEN];    /* of the interface's key: tie-breaks (conn_keep_old) */
	bool pq;                        /* OpenSSL has X25519MLKEM768 (ctx_setup) */
	uint8_t *slots;                 /* TCP_BATCH frames being gathered */
	struct udp_msg msgs[TCP_BATCH];
};

static void conn_read_cb(evutil_socket_t fd, short what, void *arg);
static void conn_write_cb(evutil_socket_t fd, short what, void *arg);
static void conn_flush_cb(evutil_socket_t fd, short what, void *arg);
static int conn_sock_write(struct tcp_conn *c);

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
	free(c->refused);
	free(c->peer_refused);
	if (c->dns_req)                 /* its callback, told, touches nothing */
		evdns_getaddrinfo_cancel(c->dns_req);
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
	tcp_psk_free(&c->psk);
	OPENSSL_cleanse(c->psk_key, sizeof(c->psk_key));
	free(c);
}

/* The connection failed or ended: its peer hears of it if it had this one. */
static void
conn_fail(struct tcp_conn *c, const char *why)
{
	struct tcp *x = c->tcp;
	struct peer *p = c->peer && PEER_CONN(c->peer) == c ? c->peer : NULL;
	/* An end without the key that got our first frame closes without
	 * a word (it cannot seal one): say what that may mean. */
	const char *hint = CONN_WAITS(c) && !c->mismatched && !c->peer_refused ?
	    " before its first frame under the preshared key (has it this preshared-key?)" : "";
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
		if (c->phase == TCP_UP && !CONN_WAITS(c))
			log_info("peer \"%s\": tcp connection %s ended: %s", p->name, c->name, why);
		else
			log_warnx("peer \"%s\": tcp connection to %s failed: %s%s", p->name, c->name,
			    why, hint);
		snprintf(err, sizeof(err), "tcp %s: %s%s", c->name, why, hint);
	}
	conn_free(c);
	if (p)
		x->ops.down(p, transport_path(p->paths, &transport_tcp), err);
}

static int conn_open(struct peer *p, bool take);

/* c reached its maximum age (its deadline, once up): the side that opened
 * it opens a replacement (conn_established swaps them, with no gap), then
 * waits TCP_MAX_AGE_GRACE_MS more for it; without one by then it ends, so
 * no key once accepted keeps access for longer. */
static void
conn_aged(struct tcp_conn *c)
{
	struct peer *p = c->peer;

	if (c->outgoing && !c->renewing && p && PEER_CONN(p) == c) {
		c->renewing = true;
		log_info("peer \"%s\": tcp connection %s reached its maximum age: opening "
		    "another", p->name, c->name);
		if (conn_open(p, false) < 0)
			log_warnx("peer \"%s\": cannot open a tcp connection to replace %s",
			    p->name, c->name);
		timer_arm_ms(c->ev_deadline, TCP_MAX_AGE_GRACE_MS);
		return;
	}
	if (p)
		log_warnx("peer \"%s\": tcp connection %s ends at its maximum age", p->name,
		    c->name);
	conn_fail(c, "the connection reached its maximum age");
}

static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;

	(void)fd;
	(void)what;
	if (c->revoked)
		conn_fail(c, c->revoked);
	else if (CONN_WAITS(c))
		conn_fail(c, "no frame under the preshared key came within the handshake deadline");
	else if (c->phase == TCP_UP)
		conn_aged(c);
	else
		conn_fail(c, c->outgoing || c->heard ? "handshake deadline passed" :
		    "nothing sent within the first-byte deadline");
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
	c->opened_ms = toud_now(x->t);
	timer_arm_ms(c->ev_deadline, outgoing ? TCP_HANDSHAKE_MS : TCP_FIRST_BYTE_MS);
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

static int conn_send(struct tcp_conn *c, const uint8_t *payload, size_t len, bool data);
static int conn_flush(struct tcp_conn *c);
static int conn_write(struct tcp_conn *c, const char **why, char *buf, size_t len);

/* With a key log: the frame keys of a connection under a preshared key,
 * which the TLS key log does not give (doc/protocol.md 3a.2):
 *   TOUD_TCP_PSK_FRAME_KEYS <client random> <client write key>
 *       <server write key> <client write IV> <server write IV> */
static void
conn_keylog_psk(struct tcp_conn *c, const struct tcp_psk_keys *k)
{
	char line[sizeof(TCP_KEYLOG_PSK_LABEL) + 5 * (2 * 32 + 1) + 1], *w = line;
	const struct { const uint8_t *b; size_t n; } f[] = {
		{ NULL, 32 }, { k->client_key, TCP_PSK_KEY_LEN }, { k->server_key, TCP_PSK_KEY_LEN },
		{ k->client_iv, TCP_PSK_IV_LEN }, { k->server_iv, TCP_PSK_IV_LEN },
	};
	uint8_t cr[32];
	size_t i;

	if (!c->tcp->t->dtls || !dtls_ctx_keylog_active(c->tcp->t->dtls) ||
	    SSL_get_client_random(c->ssl, cr, sizeof(cr)) != sizeof(cr))
		return;
	w += snprintf(line, sizeof(line), "%s", TCP_KEYLOG_PSK_LABEL);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		*w++ = ' ';
		util_hex(f[i].b ? f[i].b : cr, f[i].n, w);
		w += 2 * f[i].n;
	}
	dtls_ctx_keylog(c->tcp->t->dtls, line);
	OPENSSL_cleanse(line, sizeof(line));
}

/* c's peer p has a preshared key: the frame keys from TLS's exporter and
 * the key, and at once a first frame under them (a keepalive).  The
 * connection is p's, but up only when the other end's first frame opens
 * (conn_open_frame), within the handshake's deadline. */
static void
conn_psk_start(struct tcp_conn *c, struct peer *p)
{
	uint8_t exp[TCP_PSK_EXPORTER_LEN], ka[GUE_WORD_LEN];
	struct tcp_psk_keys k;
	const char *why = "cannot set up the preshared key's frame keys";
	char buf[160];
	int rc;

	rc = SSL_export_keying_material(c->ssl, exp, sizeof(exp), TCP_PSK_LABEL,
	    sizeof(TCP_PSK_LABEL) - 1, NULL, 0, 0) == 1 ? 0 : -EIO;
	if (rc == 0 && (rc = tcp_psk_derive(exp, p->cf->psk, &k)) == 0) {
		rc = tcp_psk_init(&c->psk, &k, c->outgoing);
		conn_keylog_psk(c, &k);
	}
	OPENSSL_cleanse(exp, sizeof(exp));
	OPENSSL_cleanse(&k, sizeof(k));
	ERR_clear_error();
	c->psk_on = true;
	memcpy(c->psk_key, p->cf->psk, TCP_PSK_LEN);
	gue_control_encode(ka, GUE_CTYPE_KEEPALIVE);
	/* Out before anything of the other end's is read: if the keys
	 * differ and it closes at once, it hears why from this frame. */
	if (rc < 0 || conn_send(c, ka, sizeof(ka), false) < 0 || conn_flush(c) < 0 ||
	    conn_write(c, &why, buf, sizeof(buf)) < 0) {
		conn_fail(c, why);
		return;
	}
	timer_arm_ms(c->ev_deadline, TCP_HANDSHAKE_MS);
	log_debug("peer \"%s\": tcp connection %s authenticated (%s, %s), waiting for a "
	    "frame under the preshared key", p->name, c->name, SSL_get_version(c->ssl),
	    SSL_get_cipher_name(c->ssl));
}

/* The other end's first frame under the preshared key opened: c is up. */
static void
conn_psk_up(struct tcp_conn *c)
{
	struct tcp *x = c->tcp;
	struct peer *p = c->peer;
	uint64_t age = toud_now(x->t) - c->up_ms, max = conf_session_max_age_ms(&x->t->conf->iface);

	/* The maximum age counts from the handshake, as without the key. */
	timer_arm_ms(c->ev_deadline, (max > age ? max - age : 0) +
	    (c->outgoing ? 0 : TCP_MAX_AGE_GRACE_MS));
	log_info("peer \"%s\": tcp connection %s up (%s, %s, key exchange %s, preshared key)",
	    p->name, c->name, SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl), c->kx);
	x->ops.up(p, transport_path(p->paths, &transport_tcp));
}

/* A frame that does not open: before any did, the two sides' preshared
 * keys differ (told to the core: said in last_error until a path is up,
 * counted psk_mismatch); after, it was changed on the way (counted
 * tcp_frames_bad).  Either way the connection closes: why. */
static const char *
conn_refuse_frame(struct tcp_conn *c, bool first, const char *hint)
{
	struct tcp *x = c->tcp;
	struct peer *p = c->peer;
	char err[PEER_ERROR_MAX];

	if (!first) {
		x->t->events[EVENT_TCP_FRAMES_BAD]++;
		log_warnx("peer \"%s\": tcp connection %s sent a frame that fails "
		    "authentication under the preshared key: closed", p->name, c->name);
		return "a frame failed authentication";
	}
	c->mismatched = true;
	log_warnx("peer \"%s\": tcp connection %s: preshared-key mismatch: its first frame "
	    "fails authentication (%s)", p->name, c->name, hint);
	event_count(x->t, p, EVENT_PSK_MISMATCH);
	snprintf(err, sizeof(err), "preshared-key mismatch: %s (tcp %s)", hint, c->name);
	x->ops.mismatch(p, transport_path(p->paths, &transport_tcp), err);
	return "preshared-key mismatch";
}

/* The key exchange TLS agreed on (pq.h's names), into c->kx.  A group
 * without an OpenSSL NID (the hybrid ones of 3.5) comes as its TLS
 * number. */
static void
conn_key_exchange(struct tcp_conn *c)
{
	int g = SSL_get_negotiated_group(c->ssl);

	pq_group_name(g & TLSEXT_nid_unknown ? pq_tls_group_name((unsigned)g & 0xffff) :
	    g > 0 ? OBJ_nid2sn(g) : NULL, c->kx, sizeof(c->kx));
}

/* Whether p's policy refuses c's key exchange (post-quantum = required,
 * no ML-KEM in it). */
static bool
conn_pq_refused(const struct tcp_conn *c, const struct peer *p)
{
	return p->cf->post_quantum == CONF_PQ_REQUIRED && !pq_has_mlkem(c->kx);
}

/* c, authenticated as p's, is refused by p's policy (conn_pq_refused):
 * the other end is told why (control message 7) before the close, so
 * that it too can say it; both count it.  p hears of it as of a failed
 * open, unless a connection of its is up. */
static void
conn_refuse(struct tcp_conn *c, struct peer *p)
{
	struct tcp *x = c->tcp;
	struct tcp_conn *cur = PEER_CONN(p);
	uint8_t frame[STREAM_HDR_LEN + GUE_WORD_LEN + GUE_PQ_REFUSE_LEN];
	char why[200], err[PEER_ERROR_MAX];
	bool report = !cur || cur == c || cur->phase != TCP_UP;

	pq_why_refused(why, sizeof(why), c->kx, x->pq, OpenSSL_version(OPENSSL_VERSION_STRING));
	event_count(x->t, p, EVENT_PQ_REFUSED);
	log_warnx("peer \"%s\": tcp connection %s refused: %s", p->name, c->name, why);
	(void)stream_frame_header(frame, GUE_WORD_LEN + GUE_PQ_REFUSE_LEN, TCP_FRAME_MAX);
	gue_control_encode(frame + STREAM_HDR_LEN, GUE_CTYPE_PQ_REFUSE);
	pq_refusal_encode(frame + STREAM_HDR_LEN + GUE_WORD_LEN, x->pq, pq_has_mlkem(c->kx) ||
	    (x->pq && (!c->outgoing || p->cf->post_quantum != CONF_PQ_OFF)));
	ERR_clear_error();
	if (SSL_write(c->ssl, frame, (int)sizeof(frame)) > 0 && SSL_shutdown(c->ssl) >= 0)
		(void)conn_sock_write(c);
	ERR_clear_error();
	snprintf(err, sizeof(err), "tcp %s: %s", c->name, why);
	if (cur == c)
		PEER_CONN(p) = NULL;
	c->peer = NULL;
	conn_free(c);
	if (report)
		x->ops.down(p, transport_path(p->paths, &transport_tcp), err);
}

/* The other end refused the session (control message 7, conn_refuse):
 * why, as this end says it, for conn_fail. */
static void
conn_peer_refused(struct tcp_conn *c, const struct gue_inner *in)
{
	struct tcp *x = c->tcp;
	char why[PEER_ERROR_MAX - 64];
	bool has;

	if (pq_refusal_decode(in->payload, in->len, &has) < 0)
		snprintf(why, sizeof(why), "the peer refused the session");
	else
		pq_why_peer_refused(why, sizeof(why), has, x->pq,
		    OpenSSL_version(OPENSSL_VERSION_STRING), c->peer->cf->post_quantum);
	event_count(x->t, c->peer, EVENT_PQ_REFUSED);
	log_warnx("peer \"%s\": tcp connection %s refused by the peer: %s", c->peer->name,
	    c->name, why);
	free(c->peer_refused);
	c->peer_refused = strdup(why);
}

/* TLS is up and authenticated: the connection becomes its peer's, in
 * place of any older one (conn_keep_old), unless the peer's policy
 * refuses its key exchange (conn_refuse). */
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
	conn_key_exchange(c);
	if (conn_pq_refused(c, p)) {
		conn_refuse(c, p);
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
	/* Its maximum age: the side that opened it replaces it then, the
	 * other ends it if that did not happen (conn_aged). */
	timer_arm_ms(c->ev_deadline, conf_session_max_age_ms(&x->t->conf->iface) +
	    (c->outgoing ? 0 : TCP_MAX_AGE_GRACE_MS));
	conn_sockopts(c->fd);
	if (p->cf->has_psk) {
		conn_psk_start(c, p);
		return;
	}
	log_info("peer \"%s\": tcp connection %s up (%s, %s, key exchange %s)", p->name, c->name,
	    SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl), c->kx);
	x->ops.up(p, transport_path(p->paths, &transport_tcp));
}

/* Why an outgoing connection's server is not its peer, for the log and
 * last_error: a key no peer has is what a proxy that intercepts TLS
 * presents (its own certificate, issued by its own CA), so the issuer is
 * named; the name is escaped (it is the other end's to choose). */
static void
verify_refused(struct tcp_conn *c, X509 *leaf, const uint8_t fp[KEYS_FP_LEN],
    const struct peer *p)
{
	char fps[7 + 2 * KEYS_FP_LEN + 1], issuer[120] = "?", buf[PEER_ERROR_MAX];
	BIO *b;
	int n;

	keys_fp_format(fp, fps);
	if ((b = BIO_new(BIO_s_mem()))) {
		if (X509_NAME_print_ex(b, X509_get_issuer_name(leaf), 0, XN_FLAG_ONELINE) >= 0 &&
		    (n = BIO_read(b, issuer, sizeof(issuer) - 1)) > 0)
			issuer[n] = '\0';
		BIO_free(b);
	}
	if (p)
		snprintf(buf, sizeof(buf), "the server presented the key of peer \"%s\", "
		    "not this one's", p->name);
	else
		snprintf(buf, sizeof(buf), "TLS intercepted? the server's key %.23s... is not "
		    "this peer's (certificate issued by '%s'): %s", fps, issuer,
		    c->peer && c->peer->cf->proxy_host ? "the proxy must let this connection "
		    "through uninspected" : "something on the way inspects TLS, or another "
		    "server answers there");
	free(c->refused);
	c->refused = strdup(buf);
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
	if (c->outgoing && p != c->peer)
		verify_refused(c, leaf, fp, p);
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
		x->ops.frames(x->t, c->peer, transport_path(c->peer->paths, &transport_tcp),
		    x->msgs, n);
	if (n && part)
		memmove(x->slots + RX_HEADROOM, x->slots + (size_t)n * TCP_SLOT + RX_HEADROOM, part);
}

/* A complete frame (dst, *flen bytes) under the preshared key opens in
 * place (*flen becomes its payload's length); the first one to open makes
 * c up.  false, with why, when it does not (conn_refuse_frame). */
static bool
conn_open_frame(struct tcp_conn *c, uint8_t *dst, size_t *flen, const char **why)
{
	bool first = !c->psk.opened;
	ssize_t n = tcp_psk_open(&c->psk, dst, *flen);

	if (n < 0) {
		*why = conn_refuse_frame(c, first, "preshared-key names another key on the "
		    "other side, or none there");
		return false;
	}
	*flen = (size_t)n;
	if (first)
		conn_psk_up(c);
	return true;
}

/* Whether frame f (flen bytes) is the other end's refusal of the
 * session (control message 7), decoded into in. */
static bool
conn_is_refusal(const uint8_t *f, size_t flen, struct gue_inner *in)
{
	return gue_inner_decode(f, flen, in) == GUE_OK && in->kind == GUE_KIND_CONTROL &&
	    in->proto == GUE_CTYPE_PQ_REFUSE;
}

/* Feed what was read into frames; false when the stream is bad (the
 * connection is closed, counted; why says why). */
static bool
conn_feed(struct tcp_conn *c, const uint8_t *data, size_t len, unsigned *n, const char **why)
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
		/* A refusal (conn_refuse) comes before any frame under the
		 * preshared key, so it is not sealed. */
		if (st == STREAM_FRAME && (!c->psk_on || !c->psk.opened) &&
		    conn_is_refusal(dst, flen, &in)) {
			conn_peer_refused(c, &in);
			return false;
		}
		if (st == STREAM_FRAME && c->psk_on && !conn_open_frame(c, dst, &flen, why))
			return false;
		if (c->dead)                    /* up, and what that did closed it */
			return true;
		malformed = st == STREAM_FRAME && gue_inner_decode(dst, flen, &in) != GUE_OK;
		/* Without a key of ours, what a side with one sends first
		 * is no frame of ours. */
		if (malformed && !c->psk_on && !c->framed) {
			x->t->events[EVENT_TCP_FRAMES_BAD]++;
			*why = conn_refuse_frame(c, true, "the other side has a preshared-key for "
			    "this node, this side none");
			return false;
		}
		if (st != STREAM_FRAME || malformed) {
			x->t->events[EVENT_TCP_FRAMES_BAD]++;
			log_warnx("peer \"%s\": tcp connection %s sent %s: closed", c->peer->name,
			    c->name, malformed ? "a frame that is no inner payload" :
			    stream_status_name(st));
			return false;
		}
		c->framed = true;
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

static size_t conn_queued(const struct tcp_conn *c);

/* The socket's side of TLS's writes: the records gather in c->cipher,
 * and conn_sock_write hands them to the socket together (one write(2)
 * for many records, where a socket BIO makes one of every record).
 * What TLS writes of its own (a KeyUpdate, an alert) counts against the
 * send queue's bound like our frames (tcp_send): an end that asks for
 * answers and never reads them makes it fail, and the connection close. */
static int
wbio_write(BIO *b, const char *data, int len)
{
	struct tcp_conn *c = BIO_get_data(b);

	BIO_clear_retry_flags(b);
	if (len < 0)
		return -1;
	if (!c->sealing && conn_queued(c) + (size_t)len > TCP_SENDQ_MAX) {
		c->sendq_over = true;
		return -1;
	}
	if (evbuffer_add(c->cipher, data, (size_t)len) < 0)
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
	return c->staged + (c->out ? evbuffer_get_length(c->out) : 0) +
	    evbuffer_get_length(c->cipher);
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
		char refused[PEER_ERROR_MAX];   /* c->refused goes with c */

		if (c->refused) {
			util_strlcpy(refused, c->refused, sizeof(refused));
			why = refused;
		}
		conn_fail(c, why);
		return false;
	}
	if (r == 1)
		conn_established(c);
	return true;
}

/* TLS reports each message it reads (SSL_CTX_set_msg_callback): a
 * KeyUpdate is counted against its allowance.  The verdict is the
 * reader's (conn_read_cb), after the SSL_read that found it. */
static void
msg_cb(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl,
    void *arg)
{
	struct tcp_conn *c = SSL_get_app_data(ssl);
	uint64_t now;

	(void)version;
	(void)arg;
	if (write_p || content_type != SSL3_RT_HANDSHAKE || len < 1 || !c ||
	    ((const uint8_t *)buf)[0] != SSL3_MT_KEY_UPDATE)
		return;
	now = toud_now(c->tcp->t);
	if (now - c->key_updates_ms >= 1000) {
		c->key_updates_ms = now;
		c->key_updates = 0;
	}
	if (++c->key_updates > TCP_KEY_UPDATES_PER_S)
		c->key_updates_over = true;
}

/* Why c, which misbehaved (msg_cb, wbio_write), is to close: counted. */
static const char *
conn_abuse(struct tcp_conn *c)
{
	struct toud *t = c->tcp->t;

	ERR_clear_error();
	if (c->key_updates_over) {
		event_count(t, c->peer, EVENT_TCP_KEY_UPDATES);
		return "KeyUpdates faster than " TCP_STR(TCP_KEY_UPDATES_PER_S) " a second";
	}
	if (c->peer)
		c->peer->drops[DROP_TCP_SENDQ]++;
	return "TLS's own records would pass the send queue's bound (the other end does not read)";
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
	unsigned n = 0, records = 0;
	bool ok = true;
	uint64_t read0 = BIO_number_read(SSL_get_rbio(c->ssl));
	int got;

	(void)fd;
	(void)what;
	/* Its first bytes: the rest of the handshake's time. */
	if (!c->outgoing && !c->heard && c->phase == TCP_TLS) {
		uint64_t age = toud_now(c->tcp->t) - c->opened_ms;

		c->heard = true;
		timer_arm_ms(c->ev_deadline, age < TCP_HANDSHAKE_MS ? TCP_HANDSHAKE_MS - age : 0);
	}
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
		got = SSL_read(c->ssl, chunk, sizeof(chunk));
		if (c->key_updates_over || c->sendq_over) {
			why = conn_abuse(c);
			ok = false;
			break;
		}
		if (got <= 0) {
			if (!conn_ssl_wait(c, got, &why, buf, sizeof(buf)))
				ok = false;
			break;
		}
		if (!(ok = conn_feed(c, chunk, (size_t)got, &n, &why)) || c->dead)
			break;
		/* Level-triggered: what is still in the socket wakes us again. */
		if (!SSL_has_pending(c->ssl))
			break;
		/* What TLS read ahead is no longer in the socket: nothing
		 * would report it, so the event comes back by itself.  An
		 * SSL_read returns one record's plaintext at most. */
		if (++records >= TCP_READ_RECORDS ||
		    BIO_number_read(SSL_get_rbio(c->ssl)) - read0 >= TCP_READ_TURN) {
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
		if (c->peer_refused)
			why = c->peer_refused;  /* freed with c, after conn_fail's use */
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
			c->sealing = true;
			r = SSL_write(c->ssl, p, (int)n);
			c->sealing = false;
			if (r <= 0) {
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

/* A frame of payload (len bytes; plen on the wire) at dst: its header,
 * and the payload sealed under the preshared key or as it is.  0 or
 * -errno. */
static int
conn_frame_put(struct tcp_conn *c, uint8_t *dst, const uint8_t *payload, size_t len,
    size_t plen)
{
	(void)stream_frame_header(dst, plen, TCP_FRAME_MAX);
	if (c->psk_on)
		return tcp_psk_seal(&c->psk, payload, len, dst + STREAM_HDR_LEN) < 0 ? -EIO : 0;
	memcpy(dst + STREAM_HDR_LEN, payload, len);
	return 0;
}

/* Queue one frame (payload, len bytes) on p's connection.  0, -ENOTCONN
 * (none up; data before the first frame under the preshared key came),
 * -ENOBUFS (its send queue is full), -ETIMEDOUT (data, not a control
 * message, dropped because the queue's wait has stayed too long:
 * codel.h), -EMSGSIZE, -EIO (not sealed). */
static int
conn_send(struct tcp_conn *c, const uint8_t *payload, size_t len, bool data)
{
	size_t plen = len + (c && c->psk_on ? TCP_PSK_TAG_LEN : 0);
	size_t flen = STREAM_HDR_LEN + plen;
	struct evbuffer_iovec v;

	if (!c || c->phase != TCP_UP || (data && CONN_WAITS(c)))
		return -ENOTCONN;
	if (len == 0 || plen > TCP_FRAME_MAX)
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
		/* Room for the whole frame first, in one piece: half of one
		 * would break the stream. */
		if (evbuffer_reserve_space(c->out, (ev_ssize_t)flen, &v, 1) != 1)
			return -ENOMEM;
		if (conn_frame_put(c, v.iov_base, payload, len, plen) < 0)
			return -EIO;
		v.iov_len = flen;
		if (evbuffer_commit_space(c->out, &v, 1) < 0)
			return -ENOMEM;
		codel_fifo_add(&c->plain, flen, util_now_us());
		return 0;
	}
	if (conn_frame_put(c, c->stage + c->staged, payload, len, plen) < 0)
		return -EIO;
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
	return !c ? TRANSPORT_DOWN : c->phase == TCP_UP && !CONN_WAITS(c) ? TRANSPORT_UP :
	    TRANSPORT_OPENING;
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

static const char *
tcp_key_exchange(const struct peer *p, const struct peer_path *ph)
{
	const struct tcp_conn *c = ph->conn;

	(void)p;
	return c && c->phase == TCP_UP ? c->kx : "";
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
	BIO_set_data(wb, c);
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
	char why[320];
	int status = 0;

	switch (http_connect_response(evbuffer_pullup(in, -1), len, &used, &status)) {
	case HC_MORE:
		return;
	case HC_OK:
		break;
	case HC_REFUSED:
		http_connect_refusal(status, c->peer && c->peer->cf->proxy_auth,
		    c->peer ? c->peer->cf->endpoint_tcp_port : 0, why, sizeof(why));
		conn_fail(c, why);
		return;
	case HC_BAD:
		conn_fail(c, "the proxy's answer is not HTTP");
		return;
	}
	evbuffer_drain(in, used);
	conn_raw_done(c);
}

/* The CONNECT request's bytes, once the socket took them or the
 * connection went without: they may hold the proxy's credentials, which
 * a copy of libevent's own would leave in freed memory. */
static void
proxy_req_done(const void *data, size_t len, void *arg)
{
	(void)arg;
	OPENSSL_cleanse((void *)(uintptr_t)data, len);
	free((void *)(uintptr_t)data);
}

/* The plain socket connected (or failed): straight to TLS, or first the
 * CONNECT request to the proxy. */
static void
raw_event(struct bufferevent *raw, short what, void *arg)
{
	struct tcp_conn *c = arg;
	const struct conf_peer *cf = c->peer ? c->peer->cf : NULL;
	char req[1024], buf[160], *out;
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
	    cf->endpoint_tcp_port, cf->proxy_auth)) < 0) {
		conn_fail(c, "cannot write the CONNECT request");
		return;
	}
	/* By reference: the bytes are cleansed when sent (proxy_req_done) */
	if (!(out = malloc((size_t)n))) {
		OPENSSL_cleanse(req, sizeof(req));
		conn_fail(c, "out of memory");
		return;
	}
	memcpy(out, req, (size_t)n);
	OPENSSL_cleanse(req, sizeof(req));
	if (evbuffer_add_reference(bufferevent_get_output(raw), out, (size_t)n,
	    proxy_req_done, NULL) < 0) {
		proxy_req_done(out, (size_t)n, NULL);
		conn_fail(c, "out of memory");
	}
}

/* A socket of ours carries the full tunnel's mark, so that its packets
 * leave by the main table instead of into the tunnel they carry
 * (fulltunnel.h).  0 or -errno. */
static int
sock_mark(const struct tcp *x, int fd)
{
	if (x->mark && setsockopt(fd, SOL_SOCKET, SO_MARK, &x->mark, sizeof(x->mark)) < 0)
		return -errno;
	return 0;
}

/* The name of the endpoint (or of its proxy) is known: a socket of ours,
 * marked, connects to it.  The rest is raw_event's. */
static void
conn_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
	struct tcp_conn *c = arg;
	char buf[160];
	int fd = -1, rc;

	if (result == EVUTIL_EAI_CANCEL)
		return;                 /* c is being freed: touch nothing */
	c->dns_req = NULL;
	if (result != 0 || !res) {
		snprintf(buf, sizeof(buf), "cannot resolve: %s", evutil_gai_strerror(result));
		if (res)
			evutil_freeaddrinfo(res);
		conn_fail(c, buf);
		return;
	}
	if ((fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
	    (rc = sock_mark(c->tcp, fd)) < 0 || bufferevent_setfd(c->raw, fd) < 0) {
		rc = fd < 0 ? -errno : rc;
		if (fd >= 0 && bufferevent_getfd(c->raw) != fd)
			close(fd);
		evutil_freeaddrinfo(res);
		snprintf(buf, sizeof(buf), "cannot open a socket: %s%s", strerror(-rc),
		    rc == -EPERM ? " (SO_MARK needs CAP_NET_ADMIN)" : "");
		conn_fail(c, buf);
		return;
	}
	rc = bufferevent_socket_connect(c->raw, res->ai_addr, (int)res->ai_addrlen);
	evutil_freeaddrinfo(res);
	if (rc < 0)
		conn_fail(c, "cannot connect");
}

/* The open op: connect to p's endpoint-tcp (through its proxy, if any). */
static int
tcp_connect(struct peer *p, struct peer_path *ph)
{
	if (!p->toud->tcp || !p->cf->endpoint_tcp_host)
		return -EOPNOTSUPP;
	if (ph->conn)
		return 0;
	return conn_open(p, true);
}

/* A connection of ours to p's endpoint-tcp: p's connection (take), or a
 * replacement of p's that takes over once up (conn_established).  0 or
 * -errno; a failure once under way is conn_fail's. */
static int
conn_open(struct peer *p, bool take)
{
	struct tcp *x = p->toud->tcp;
	const struct conf_peer *cf = p->cf;
	const char *host = cf->proxy_host ? cf->proxy_host : cf->endpoint_tcp_host;
	uint16_t port = cf->proxy_host ? cf->proxy_port : cf->endpoint_tcp_port;
	struct evutil_addrinfo hints = { .ai_socktype = SOCK_STREAM,
	    .ai_protocol = IPPROTO_TCP, .ai_flags = EVUTIL_AI_ADDRCONFIG };
	struct evdns_getaddrinfo_request *req;
	struct bufferevent *bev;
	struct tcp_conn *c;
	char service[8];

	if (!x || !cf->endpoint_tcp_host)
		return -EOPNOTSUPP;
	if (x->n_conns >= TCP_CONN_MAX)
		return -EMFILE;
	if (!(c = conn_new(x, true)))
		return -ENOMEM;
	c->peer = p;
	if (take)
		PEER_CONN(p) = c;
	snprintf(c->name, sizeof(c->name), strchr(cf->endpoint_tcp_host, ':') ? "[%s]:%u" :
	    "%s:%u", cf->endpoint_tcp_host, cf->endpoint_tcp_port);
	SSL_set_connect_state(c->ssl);
	/* post-quantum = off: the classic groups alone (a server cannot know
	 * who connects before it chooses, so this is the client's part). */
	if (cf->post_quantum == CONF_PQ_OFF && x->pq && !SSL_set1_groups_list(c->ssl, TCP_GROUPS)) {
		ERR_clear_error();
		conn_free(c);
		return -EINVAL;
	}
	/* No server name unless one is configured (doc/protocol.md 3a). */
	if (cf->sni && SSL_set_tlsext_host_name(c->ssl, cf->sni) != 1) {
		ERR_clear_error();
		conn_free(c);
		return -ENOMEM;
	}
	/* The name lookup here, the connect and any proxy's CONNECT on a
	 * plain socket bufferevent; TLS, once there, on the bare socket.
	 * The socket is ours (conn_resolved), for its mark: libevent's own
	 * would connect before anything could be set on it. */
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
	/* An address, or a name in the hosts file, is answered at once,
	 * from inside the call: c may fail there, and is freed only after. */
	snprintf(service, sizeof(service), "%u", port);
	c->busy++;
	req = evdns_getaddrinfo(x->t->dns, host, service, &hints, conn_resolved, c);
	if (!c->dead)
		c->dns_req = req;
	if (!--c->busy && c->dead)
		conn_free(c);
	return 0;
}

/* --- incoming -------------------------------------------------------- */

/* Whether a connection from src came through one of our own tunnels: a
 * source inside a peer's address or allowed-ips, other than a default
 * route (which covers every address, and whose table our marked sockets
 * do not use).  A peer's own TCP transport connection, routed into the
 * tunnel instead of beside it, would carry the tunnel inside itself, and
 * its replies would follow it into the tunnel once the peer went back to
 * UDP: nothing but loss, while every counter said up. */
static bool
accept_loops(const struct tcp *x, const struct ipaddr *src)
{
	const struct peer *p = prefix_lookup(x->t->routes, src->family, src->b);
	const struct conf_prefix *lists[2];
	size_t ns[2], i, k;

	if (!p)
		return false;
	lists[0] = p->cf->address;
	ns[0] = p->cf->n_address;
	lists[1] = p->cf->allowed_ips;
	ns[1] = p->cf->n_allowed_ips;
	for (i = 0; i < 2; i++)
		for (k = 0; k < ns[i]; k++)
			if (lists[i][k].p.len > 0 && util_prefix_contains(&lists[i][k].p, src))
				return true;
	return false;
}

/* One source, as the rate limit counts it: an IPv6 address by its /64. */
static bool
same_source(const struct ipaddr *a, const struct ipaddr *b)
{
	if (a->family != b->family)
		return false;
	return memcmp(a->b, b->b, a->family == AF_INET6 ? 8 : 4) == 0;
}

/* Room in the half-open table for a connection from src, at now: false
 * when it is to be refused.  Makes the room by closing the source's
 * oldest (once no longer young) or, in a full table, the oldest accepted
 * one that has not presented a configured key (counted tcp_evicted). */
static bool
accept_room(struct tcp *x, const struct ipaddr *src, uint64_t now)
{
	struct tcp_conn *c, *oldest = NULL, *oldest_src = NULL;
	struct ipaddr other;
	char a[UTIL_ADDRSTRLEN];
	unsigned n_src = 0;

	TAILQ_FOREACH(c, &x->conns, entry) {
		if (c->outgoing || c->phase == TCP_UP || c->authorized || c->dead)
			continue;
		/* The list is in order of opening: the first is the oldest. */
		if (!oldest)
			oldest = c;
		util_sa_to_addr(&c->addr, &other, NULL);
		util_addr_unmap(&other);
		if (!same_source(src, &other))
			continue;
		if (!oldest_src)
			oldest_src = c;
		n_src++;
	}
	if (n_src >= TCP_HALF_OPEN_PER_SOURCE) {
		if (now - oldest_src->opened_ms < TCP_HALF_OPEN_YOUNG_MS)
			return false;
		oldest = oldest_src;
	} else if (x->n_half < TCP_HALF_OPEN_MAX) {
		return true;
	}
	if (!oldest)
		return false;           /* all of them ours, or nearly up */
	x->t->events[EVENT_TCP_EVICTED]++;
	log_debug_rl("tcp %s: closed before its handshake ended, for %s (%s)", oldest->name,
	    util_addr_fmt(src, a, sizeof(a)), n_src >= TCP_HALF_OPEN_PER_SOURCE ?
	    "its source's quota" : "a full table");
	conn_free(oldest);
	return x->n_half < TCP_HALF_OPEN_MAX;
}

static void
accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
    void *arg)
{
	struct tcp *x = arg;
	struct tcp_conn *c;
	union sockaddr_union from;
	struct ipaddr src;
	char a[UTIL_ADDRSTRLEN];
	uint64_t now = toud_now(x->t);
	uint16_t port;
	bool refuse;

	(void)l;
	memset(&from, 0, sizeof(from));
	memcpy(&from, sa, (size_t)salen < sizeof(from) ? (size_t)salen : sizeof(from));
	util_sa_to_addr(&from, &src, &port);
	util_addr_unmap(&src);
	refuse = x->n_conns >= TCP_CONN_MAX || !ratelimit_allow(x->rl, &src, now);
	if (!refuse && !accept_room(x, &src, now)) {
		/* Refused for want of room, the source keeps its token: a
		 * client waiting for its own young handshakes to finish
		 * is not punished for it. */
		ratelimit_refund(x->rl, &src);
		refuse = true;
	}
	if (refuse) {
		x->t->events[EVENT_TCP_REFUSED]++;
		log_debug_rl("tcp: connection from %s refused (limit)",
		    util_addr_fmt(&src, a, sizeof(a)));
		close(fd);
		return;
	}
	if (accept_loops(x, &src)) {
		x->t->events[EVENT_TCP_LOOPED]++;
		if (!x->loop_warned_ms || now - x->loop_warned_ms >= TCP_LOOP_WARN_MS) {
			x->loop_warned_ms = now;
			log_warnx("tcp: connection from %s refused: that address is a peer's, "
			    "so it came through the tunnel (a peer whose tcp transport is "
			    "routed into its own tunnel: set fwmark on its side)",
			    util_addr_fmt(&src, a, sizeof(a)));
		}
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
	(void)sock_mark(x, fd);         /* inherited from the listener: for a mark set since */
	SSL_set_accept_state(c->ssl);
	if (conn_tls_start(c, fd) < 0)
		conn_free(c);                   /* and fd with it */
}

/* The listening socket of listen-tcp: one address, or both families on
 * one IPv6 socket (IPv4 alone where IPv6 is off).  0 and *out, *laddr or
 * -errno; x's own listener is not touched (a reload opens the new one
 * before it lets the old go). */
static int
listen_open(struct tcp *x, const struct conf_iface *ifc, struct evconnlistener **out,
    union sockaddr_union *laddr)
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
	if ((rc = sock_mark(x, fd)) < 0 || bind(fd, &sa.sa, util_sa_len(&sa)) < 0) {
		rc = rc < 0 ? rc : -errno;
		close(fd);
		return rc;
	}
	*out = evconnlistener_new(x->t->base, accept_cb, x, LEV_OPT_CLOSE_ON_FREE,
	    TCP_BACKLOG, fd);
	if (!*out) {
		close(fd);
		return -ENOMEM;
	}
	*laddr = sa;
	return 0;
}

/* "listen-tcp PORT: why", and the fix where the kernel refused a port
 * below its unprivileged range (toud(8), Privileged ports). */
static void
listen_why(const struct conf_iface *ifc, int rc, bool reload, char *buf, size_t len)
{
	snprintf(buf, len, "listen-tcp %u: %s%s", ifc->listen_tcp_port, strerror(-rc),
	    rc != -EACCES ? "" : reload ? "; a port below 1024 needs CAP_NET_BIND_SERVICE, "
	    "which toud keeps only when it starts with such a port configured (toud(8), "
	    "Privileged ports): restart toud, or choose a port from 1024 up" :
	    "; a port below 1024 needs CAP_NET_BIND_SERVICE: the unit's "
	    "AmbientCapabilities= and CapabilityBoundingSet= must name it, as the shipped "
	    "toud.service does (toud(8), Privileged ports)");
}

int
tcp_listen_reload(struct toud *t, const struct conf *nc, char *err, size_t errlen)
{
	const struct conf_iface *n = &nc->iface;
	struct tcp *x = t->tcp;
	struct evconnlistener *l = NULL;
	union sockaddr_union sa;
	char a[UTIL_ADDRSTRLEN], why[400];
	int rc;

	if (!x)
		return 0;
	if (n->has_listen_tcp) {
		if (x->listener &&
		    !(conf_diff_iface(&t->conf->iface, n) & CONF_IFACE_DIFF_LISTEN_TCP))
			return 0;
		if ((rc = listen_open(x, n, &l, &sa)) < 0) {
			/* The same port on another address may collide with
			 * the old listener; it stays, and so does everything. */
			listen_why(n, rc, true, why, sizeof(why));
			snprintf(err, errlen, "%s%s; nothing changed", why, rc == -EADDRINUSE &&
			    x->listener && util_sa_port(&x->laddr) == n->listen_tcp_port ?
			    " (the running listener holds it: restart to move it)" : "");
			return rc;
		}
	} else if (!x->listener) {
		return 0;
	}
	if (x->listener) {
		log_info("no longer accepting the tcp transport on %s",
		    util_sa_fmt(&x->laddr, a, sizeof(a)));
		evconnlistener_free(x->listener);
	}
	x->listener = l;
	if (l) {
		x->laddr = sa;
		log_info("accepting the tcp transport on %s", util_sa_fmt(&sa, a, sizeof(a)));
	}
	return 0;
}

/* --- the context ----------------------------------------------------- */

/* TLS's key log lines go where DTLS's go (keylog-file, SSLKEYLOGFILE). */
static void
keylog_cb(const SSL *ssl, const char *line)
{
	struct tcp_conn *c = SSL_get_app_data(ssl);

	if (c)
		dtls_ctx_keylog(c->tcp->t->dtls, line);
}

static int
ctx_setup(struct tcp *x, const struct conf_iface *ifc)
{
	SSL_CTX *ctx = x->ctx;

	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION))
		return -EINVAL;
	x->pq = SSL_CTX_set1_groups_list(ctx, TCP_GROUPS_PQ) == 1;
	if (!x->pq) {
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
	SSL_CTX_set_msg_callback(ctx, msg_cb);
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
	.key_exchange = tcp_key_exchange,
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
	x->mark = t->fwmark;            /* a full tunnel's, set up before (fulltunnel.c) */
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
	if (t->dtls && dtls_ctx_keylog_active(t->dtls))
		SSL_CTX_set_keylog_callback(x->ctx, keylog_cb);
	if (!ifc->has_listen_tcp)
		return 0;
	if ((rc = listen_open(x, ifc, &x->listener, &x->laddr)) < 0) {
		char why[400];

		listen_why(ifc, rc, false, why, sizeof(why));
		log_errx("%s", why);
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

/* Whether the configuration still gives c's key (its certificate and
 * chain, as presented) to c's peer. */
static bool
conn_still_accepted(struct tcp *x, struct tcp_conn *c, const struct peer *p)
{
	X509 *leaf = SSL_get0_peer_certificate(c->ssl);
	uint8_t fp[KEYS_FP_LEN];
	X509_STORE_CTX *xs;
	bool ok;

	if (!leaf || keys_cert_fp(leaf, fp) < 0 || !(xs = X509_STORE_CTX_new()))
		return false;
	ok = X509_STORE_CTX_init(xs, NULL, leaf, SSL_get_peer_cert_chain(c->ssl)) == 1 &&
	    x->ops.authorize(x->t, fp, xs) == p;
	X509_STORE_CTX_free(xs);
	ERR_clear_error();
	return ok;
}

/* Whether c is under another preshared key than p has now (or under one
 * where p has none, or the other way round): a reload changed it. */
static bool
conn_psk_changed(const struct tcp_conn *c, const struct peer *p)
{
	if (c->psk_on != p->cf->has_psk)
		return true;
	return c->psk_on && CRYPTO_memcmp(c->psk_key, p->cf->psk, TCP_PSK_LEN) != 0;
}

size_t
tcp_reauthorize(struct toud *t)
{
	struct tcp *x = t->tcp;
	struct tcp_conn *c;
	size_t ended = 0;

	if (!x)
		return 0;
	TAILQ_FOREACH(c, &x->conns, entry) {
		if (c->dead || c->revoked)
			continue;
		if (c->phase == TCP_UP && c->peer) {
			if (!conn_still_accepted(x, c, c->peer))
				c->revoked = "its key is no longer accepted for this peer";
			else if (conn_psk_changed(c, c->peer))
				c->revoked = "the peer's preshared key changed";
			else if (conn_pq_refused(c, c->peer))
				c->revoked = "post-quantum = required, and its key exchange has no "
				    "ML-KEM-768";
			else
				continue;
			log_warnx("peer \"%s\": tcp connection %s ends: %s", c->peer->name, c->name,
			    c->revoked);
			/* Ended from the loop, so that the peer hears of it
			 * (ops->down) as of any other end. */
			event_active(c->ev_deadline, EV_TIMEOUT, 0);
			ended++;
		} else if (c->authorized && !conn_still_accepted(x, c, c->authorized)) {
			c->authorized = NULL;   /* conn_established refuses it */
		}
	}
	return ended;
}

int
tcp_set_mark(struct toud *t, uint32_t mark)
{
	struct tcp *x = t->tcp;
	struct tcp_conn *c;
	int fd;

	if (!x)
		return 0;
	x->mark = mark;
	if (x->listener && setsockopt(evconnlistener_get_fd(x->listener), SOL_SOCKET, SO_MARK,
	    &mark, sizeof(mark)) < 0)
		return -errno;
	/* Those open already, too: a reload that makes a full tunnel must
	 * not route them into it. */
	TAILQ_FOREACH(c, &x->conns, entry) {
		fd = c->fd >= 0 ? c->fd : c->raw ? bufferevent_getfd(c->raw) : -1;
		if (fd >= 0)
			(void)setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
	}
	return 0;
}

unsigned
tcp_connections(const struct toud *t)
{
	return t->tcp ? t->tcp->n_conns : 0;
}
