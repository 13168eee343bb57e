/* metrics_http.c - [interface] metrics = ADDR:PORT: the text of `touctl
 * metrics` over HTTP (GET or HEAD /metrics) on the daemon's event loop;
 * metrics_req.c decides what a request gets.
 *
 * The socket is opened at start, before the privilege drop, like the other
 * sockets.  A reload that changes the address listens on the new one before
 * it closes the old one, after the drop: a port below 1024 then needs
 * CAP_NET_BIND_SERVICE.
 *
 * Who reads what.  The text names the peers, their addresses, the node's
 * key fingerprint and handshake errors, which `touctl show` keeps to root
 * and toud's user; an endpoint on 127.0.0.1 is open to every local user.
 * So without metrics-token-file it serves the public text, the interface's
 * families only (metrics.h); with it, every request must carry
 * "Authorization: Bearer TOKEN" and gets the whole text.  A request that
 * came in on a loopback address (the endpoint's, or the loopback of an
 * endpoint on 0.0.0.0 or ::, which takes those too) with a Host that names
 * another host is refused (403): a web page whose name an attacker
 * rebinds to 127.0.0.1 cannot read it.
 *
 * Memory and time, whatever the readers do.  At most METRICS_HTTP_CLIENTS
 * connections at once (others get a 503 and are closed) and
 * METRICS_HTTP_ACCEPTS new ones a second (then the listener pauses); a
 * client has METRICS_HTTP_TIMEOUT_S to send its request and, each time, to
 * take some of the reply, and METRICS_HTTP_DEADLINE_S for all of it.  The
 * text is not rendered at once: a part of at most METRICS_HTTP_BATCH
 * peers' samples is added whenever less than METRICS_HTTP_LOW bytes wait
 * to be sent, so a reader that does not read holds about METRICS_HTTP_LOW
 * plus a part, and one callback renders no more than that.  The
 * connections run below every other event of the loop, one callback a turn
 * (daemon.c): the rendering takes the time the tunnel leaves, and a
 * datagram waits for one such callback at most, whatever the number of
 * readers.  A connection and what it holds are freed when it ends. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "conf.h"
#include "ctx.h"
#include "events.h"
#include "log.h"
#include "metrics.h"
#include "metrics_http.h"
#include "metrics_req.h"
#include "psk.h"
#include "util.h"

#define METRICS_HTTP_ACCEPTS 8          /* connections a second */
#define METRICS_HTTP_CLIENTS 16         /* connections at once */
#define METRICS_HTTP_TIMEOUT_S 5
#define METRICS_HTTP_DEADLINE_S 60
#define METRICS_HTTP_BACKLOG 16
#define METRICS_HTTP_HEADERS_MAX 8192
#define METRICS_HTTP_BATCH 64           /* peers in one part of the text */
#define METRICS_HTTP_LOW (16 * 1024)    /* unsent bytes below which the next part is added */

struct metrics_conn;

struct metrics_http {
	struct toud *t;
	struct evconnlistener *listener;
	struct event *ev_resume;        /* the listener's pause ends */
	union sockaddr_union addr;
	bool loopback;                  /* addr is 127.0.0.0/8 or ::1: Host is checked */
	bool has_token;
	char token[METRICS_TOKEN_MAX + 1];
	uint64_t second;                /* the second accepts counts in (monotonic) */
	unsigned accepts;
	struct metrics_conn *conns;     /* open connections, n_conns of them */
	unsigned n_conns;
};

struct metrics_conn {
	struct metrics_http *m;
	struct metrics_conn *next, **prevp;
	struct bufferevent *bev;
	struct event *ev_deadline;
	struct metrics_cursor cur;
	bool loopback;                  /* it came in on a loopback address: Host is checked */
	bool answered;                  /* the request is read: no more reading */
	bool streaming;                 /* the text's parts are still being added */
};

static void
metrics_conn_free(struct metrics_conn *c)
{
	if (!c)
		return;
	if (c->prevp) {
		*c->prevp = c->next;
		if (c->next)
			c->next->prevp = c->prevp;
		c->m->n_conns--;
	}
	if (c->bev)
		bufferevent_free(c->bev);
	if (c->ev_deadline)
		event_free(c->ev_deadline);
	free(c);
}

static const char *
metrics_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	default: return "Service Unavailable";
	}
}

/* A reply without the text, the connection closed once it is sent. */
static void
metrics_conn_status(struct metrics_conn *c, int status)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	const char *reason = metrics_http_reason(status);

	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nConnection: close\r\n%s"
	    "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n\r\n%s\n",
	    status, reason, status == 401 ? "WWW-Authenticate: Bearer realm=\"toud\"\r\n" : "",
	    strlen(reason) + 1, reason);
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
}

/* Add parts of the text until METRICS_HTTP_LOW bytes wait or it is all
 * there.  -1: the connection is to go. */
static int
metrics_conn_fill(struct metrics_conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	uint64_t now = toud_now(c->m->t), wall = metrics_wall_now();
	int r = 1;

	while (r > 0 && evbuffer_get_length(out) < METRICS_HTTP_LOW)
		r = metrics_render_next(out, c->m->t, &c->cur, METRICS_HTTP_BATCH, now, wall);
	if (r < 0) {
		log_warnx("metrics: out of memory for a reply");
		return -1;
	}
	if (r == 0) {
		c->streaming = false;
		bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	}
	return 0;
}

static void
metrics_conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct metrics_conn *c = arg;

	if (c->streaming) {
		if (metrics_conn_fill(c) < 0)
			metrics_conn_free(c);
		return;
	}
	if (c->answered && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		metrics_conn_free(c);
}

static void
metrics_conn_answer(struct metrics_conn *c, const char *head, size_t len)
{
	struct metrics_http *m = c->m;
	struct metrics_req req;
	int status;

	c->answered = true;
	bufferevent_disable(c->bev, EV_READ);
	status = metrics_req_check(head, len, c->loopback, m->has_token ? m->token : NULL, &req);
	if (status == 401 || status == 403) {
		event_count(m->t, NULL, EVENT_METRICS_REFUSED);
		log_debug_rl("metrics: request refused with %d", status);
	}
	if (status != 200) {
		metrics_conn_status(c, status);
		return;
	}
	evbuffer_add_printf(bufferevent_get_output(c->bev), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: " METRICS_CONTENT_TYPE "\r\nCache-Control: no-store\r\n"
	    "Connection: close\r\n\r\n");
	if (req.head) {
		bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
		return;
	}
	c->cur.full = req.full;
	c->streaming = true;
	bufferevent_setwatermark(c->bev, EV_WRITE, METRICS_HTTP_LOW, 0);
	if (metrics_conn_fill(c) < 0)
		metrics_conn_free(c);
}

/* The request head, once its blank line is in. */
static void
metrics_conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct metrics_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end;
	size_t len;
	char *head;

	if (c->answered)
		return;
	end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	len = end.pos >= 0 ? (size_t)end.pos + 4 : 0;
	if (end.pos < 0) {
		end = evbuffer_search(in, "\n\n", 2, NULL);
		len = end.pos >= 0 ? (size_t)end.pos + 2 : 0;
	}
	if (end.pos < 0 || len > METRICS_HTTP_HEADERS_MAX) {
		if (evbuffer_get_length(in) > METRICS_HTTP_HEADERS_MAX) {
			c->answered = true;
			bufferevent_disable(bev, EV_READ);
			metrics_conn_status(c, 431);
		}
		return;
	}
	if (!(head = (char *)evbuffer_pullup(in, (ev_ssize_t)len))) {
		metrics_conn_free(c);
		return;
	}
	metrics_conn_answer(c, head, len);
}

static void
metrics_conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct metrics_conn *c = arg;

	(void)bev;
	/* a client that closes its side after the request still reads */
	if ((what & BEV_EVENT_EOF) && (what & BEV_EVENT_READING) && c->answered)
		return;
	metrics_conn_free(c);
}

static void
metrics_conn_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	log_debug_rl("metrics: a reader took more than %d s, closed", METRICS_HTTP_DEADLINE_S);
	metrics_conn_free(arg);
}

static void
metrics_http_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct metrics_http *m = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(m->listener);
}

static bool
metrics_http_loopback(const union sockaddr_union *sa)
{
	if (sa->sa.sa_family == AF_INET)
		return (ntohl(sa->in.sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&sa->in6.sin6_addr) ||
	    (IN6_IS_ADDR_V4MAPPED(&sa->in6.sin6_addr) && sa->in6.sin6_addr.s6_addr[12] == 127);
}

/* One more connection: within the limits, a struct metrics_conn. */
static void
metrics_http_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
	    "Content-Length: 0\r\nRetry-After: 1\r\n\r\n";
	struct metrics_http *m = arg;
	const struct timeval tv = { METRICS_HTTP_TIMEOUT_S, 0 };
	const struct timeval deadline = { METRICS_HTTP_DEADLINE_S, 0 };
	uint64_t now = toud_now(m->t);
	struct metrics_conn *c;
	union sockaddr_union local;
	socklen_t llen = sizeof(local);
	struct timeval rest;

	(void)l;
	(void)sa;
	(void)salen;
	if (now / 1000 != m->second) {
		m->second = now / 1000;
		m->accepts = 0;
	}
	if (++m->accepts >= METRICS_HTTP_ACCEPTS) {
		rest.tv_sec = 0;
		rest.tv_usec = (suseconds_t)(1000 - now % 1000) * 1000;
		evconnlistener_disable(m->listener);
		evtimer_add(m->ev_resume, &rest);
		log_debug_rl("metrics: %u connections in a second, pausing", m->accepts);
	}
	if (m->n_conns >= METRICS_HTTP_CLIENTS) {
		/* a new socket's buffer takes this much at once */
		(void)!send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		event_count(m->t, NULL, EVENT_METRICS_REFUSED);
		log_debug_rl("metrics: %u connections open, one refused", m->n_conns);
		return;
	}
	if (!(c = calloc(1, sizeof(*c))) ||
	    !(c->bev = bufferevent_socket_new(m->t->base, fd, BEV_OPT_CLOSE_ON_FREE)) ||
	    !(c->ev_deadline = evtimer_new(m->t->base, metrics_conn_deadline_cb, c))) {
		if (!c || !c->bev)
			close(fd);
		metrics_conn_free(c);
		log_warnx("metrics: out of memory for a connection");
		return;
	}
	c->m = m;
	/* below the tunnel's events (daemon.c): a base without the levels
	 * (a unit test's) runs it at its default */
	(void)bufferevent_priority_set(c->bev, TOUD_PRIO_LOW);
	/* Where it came in, not where the endpoint listens: 0.0.0.0 and ::
	 * take connections to the loopback too. */
	memset(&local, 0, sizeof(local));
	c->loopback = m->loopback || (getsockname(fd, &local.sa, &llen) == 0 &&
	    metrics_http_loopback(&local));
	c->next = m->conns;
	if (m->conns)
		m->conns->prevp = &c->next;
	m->conns = c;
	c->prevp = &m->conns;
	m->n_conns++;
	bufferevent_setcb(c->bev, metrics_conn_read_cb, metrics_conn_write_cb,
	    metrics_conn_event_cb, c);
	bufferevent_set_timeouts(c->bev, &tv, &tv);
	bufferevent_setwatermark(c->bev, EV_READ, 0, METRICS_HTTP_HEADERS_MAX + 1);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	evtimer_add(c->ev_deadline, &deadline);
}

/* A listening TCP socket on sa, or -errno. */
static int
metrics_http_socket(const union sockaddr_union *sa)
{
	int fd, one = 1, r;

	if ((fd = socket(sa->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (sa->sa.sa_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(&sa->in6.sin6_addr) &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, &sa->sa, util_sa_len(sa)) < 0 || listen(fd, METRICS_HTTP_BACKLOG) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* The token of c's metrics-token-file into token; 0, or -errno with err
 * naming the file and line.  Refused like a preshared key file when
 * others could read or change it. */
static int
metrics_http_token(const struct conf *c, char token[METRICS_TOKEN_MAX + 1], char *err,
    size_t errlen)
{
	const struct conf_iface *i = &c->iface;
	const struct passwd *pw = i->user ? getpwnam(i->user) : NULL;
	char text[METRICS_TOKEN_MAX + 2];
	const char *why = NULL;
	struct stat st;
	ssize_t n = -1;
	int fd, r = -EINVAL;

	if ((fd = open(i->metrics_token_file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0 ||
	    fstat(fd, &st) < 0) {
		r = -errno;
		why = strerror(errno);
	} else if ((why = psk_file_unfit(&st, pw ? pw->pw_uid : (uid_t)-1)) != NULL) {
		r = -EPERM;
	} else if ((n = read(fd, text, sizeof(text))) < 0) {
		r = -errno;
		why = strerror(errno);
	} else if (metrics_token_parse(text, (size_t)n, token) < 0) {
		why = "not a token (16 to 128 characters of A-Z a-z 0-9 - . _ ~ + / and "
		    "= at the end, on one line; e.g. 'openssl rand -hex 32')";
	} else {
		r = 0;
	}
	if (why)
		snprintf(err, errlen, "%s:%d: metrics-token-file '%s': %s", c->file,
		    i->metrics_token_line, i->metrics_token_file, why);
	OPENSSL_cleanse(text, sizeof(text));
	if (fd >= 0)
		close(fd);
	return r;
}

void
metrics_http_close(struct metrics_http *m)
{
	if (!m)
		return;
	while (m->conns)
		metrics_conn_free(m->conns);
	if (m->listener)
		evconnlistener_free(m->listener);       /* with its socket */
	if (m->ev_resume)
		event_free(m->ev_resume);
	OPENSSL_cleanse(m->token, sizeof(m->token));
	free(m);
}

/* Close m, saying so. */
static void
metrics_http_retire(struct metrics_http *m)
{
	char a[UTIL_ADDRSTRLEN];

	log_info("metrics: no longer serving http://%s/metrics", util_sa_fmt(&m->addr, a, sizeof(a)));
	metrics_http_close(m);
}

/* The endpoint of c (which has one), or NULL with err. */
static struct metrics_http *
metrics_http_open(struct toud *t, const struct conf *c, char *err, size_t errlen)
{
	const struct conf_iface *ifc = &c->iface;
	struct metrics_http *m;
	char a[UTIL_ADDRSTRLEN];
	int fd = -1;

	if (!(m = calloc(1, sizeof(*m))))
		goto nomem;
	m->t = t;
	util_sa_from_addr(&m->addr, &ifc->metrics_addr, ifc->metrics_port);
	m->loopback = metrics_http_loopback(&m->addr);
	if (ifc->metrics_token_file) {
		if (metrics_http_token(c, m->token, err, errlen) < 0) {
			metrics_http_close(m);
			return NULL;
		}
		m->has_token = true;
	}
	if (!(m->ev_resume = evtimer_new(t->base, metrics_http_resume_cb, m)))
		goto nomem;
	if ((fd = metrics_http_socket(&m->addr)) < 0) {
		snprintf(err, errlen, "%s:%d: metrics: cannot listen on %s: %s%s", c->file,
		    ifc->metrics_line, util_sa_fmt(&m->addr, a, sizeof(a)), strerror(-fd),
		    fd == -EACCES ? " (a port below 1024 needs CAP_NET_BIND_SERVICE)" : "");
		metrics_http_close(m);
		return NULL;
	}
	if (!(m->listener = evconnlistener_new(t->base, metrics_http_accept_cb, m,
	    LEV_OPT_CLOSE_ON_FREE, -1, fd))) {
		close(fd);
		goto nomem;
	}
	log_info("metrics: serving http://%s/metrics (%s)", util_sa_fmt(&m->addr, a, sizeof(a)),
	    m->has_token ? "the whole text to a bearer of the token" :
	    "the interface's families only: no metrics-token-file");
	return m;
nomem:
	snprintf(err, errlen, "metrics: out of memory");
	metrics_http_close(m);
	return NULL;
}

int
metrics_http_start(struct toud *t)
{
	char err[512];

	if (!t->conf->iface.has_metrics)
		return 0;
	if (!(t->metrics_http = metrics_http_open(t, t->conf, err, sizeof(err)))) {
		log_errx("%s", err);
		return -EADDRNOTAVAIL;
	}
	return 0;
}

int
metrics_http_reload(struct toud *t, const struct conf *nc, char *err, size_t errlen)
{
	const struct conf_iface *n = &nc->iface;
	struct metrics_http *old = t->metrics_http, *m = NULL;
	char e[400], e2[400], token[METRICS_TOKEN_MAX + 1] = "";
	union sockaddr_union sa;

	if (n->has_metrics) {
		util_sa_from_addr(&sa, &n->metrics_addr, n->metrics_port);
		if (old && util_sa_equal(&sa, &old->addr)) {
			/* the same socket; the token read again (it may have
			 * been replaced), or gone */
			if (n->metrics_token_file && metrics_http_token(nc, token, e,
			    sizeof(e)) < 0) {
				snprintf(err, errlen, "%s; nothing changed", e);
				OPENSSL_cleanse(token, sizeof(token));
				return -EINVAL;
			}
			old->has_token = n->metrics_token_file != NULL;
			memcpy(old->token, token, sizeof(token));
			OPENSSL_cleanse(token, sizeof(token));
			return 0;
		}
		m = metrics_http_open(t, nc, e, sizeof(e));
		/* The same port on another address than the old one's may
		 * collide with it (0.0.0.0 and 127.0.0.1): then the old one
		 * closes first, and opens again if the new one fails. */
		if (!m && old && util_sa_port(&sa) == util_sa_port(&old->addr)) {
			metrics_http_retire(old);
			t->metrics_http = old = NULL;
			m = metrics_http_open(t, nc, e, sizeof(e));
			if (!m && !(t->metrics_http = metrics_http_open(t, t->conf, e2, sizeof(e2)))) {
				snprintf(err, errlen, "%s; and the old endpoint is gone: %s", e, e2);
				return -EINVAL;
			}
		}
		if (!m) {
			snprintf(err, errlen, "%s; nothing changed", e);
			return -EINVAL;
		}
	} else if (!old) {
		return 0;
	}
	if (old)
		metrics_http_retire(old);
	t->metrics_http = m;
	return 0;
}
