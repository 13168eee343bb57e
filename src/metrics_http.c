/* metrics_http.c - [interface] metrics = ADDR:PORT: the text of `touctl
 * metrics` over HTTP (GET or HEAD /metrics), served by libevent's evhttp
 * on the daemon's event loop; every other path is 404.
 *
 * The socket is opened at start, before the privilege drop, like the other
 * sockets.  A reload that changes the address listens on the new one before
 * it closes the old one, after the drop: a port below 1024 then needs
 * CAP_NET_BIND_SERVICE.
 *
 * The endpoint answers anyone who reaches it, which is why conf.c allows a
 * loopback address only, unless metrics-allow-remote = yes.  evhttp in
 * libevent 2.1 has no limit on connections, so this file bounds them: a
 * client has METRICS_HTTP_TIMEOUT_S to send its request, every reply closes
 * its connection, and after METRICS_HTTP_ACCEPTS connections in one second
 * the listener pauses for the rest of it.  At most about METRICS_HTTP_ACCEPTS
 * * METRICS_HTTP_TIMEOUT_S connections are open at any time, and a client
 * cannot make the loop render more than METRICS_HTTP_ACCEPTS texts a
 * second. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "conf.h"
#include "log.h"
#include "metrics.h"
#include "metrics_http.h"
#include "ctx.h"
#include "util.h"

#define METRICS_HTTP_ACCEPTS 8          /* connections a second */
#define METRICS_HTTP_TIMEOUT_S 5
#define METRICS_HTTP_BACKLOG 16
#define METRICS_HTTP_HEADERS_MAX 8192

struct metrics_http {
	struct toud *t;
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	struct event *ev_resume;        /* the listener's pause ends */
	union sockaddr_union addr;
	uint64_t second;                /* the second accepts counts in (monotonic) */
	unsigned accepts;
};

static void
metrics_http_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct metrics_http *m = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(evhttp_bound_socket_get_listener(m->bound));
}

/* evhttp asks for each accepted connection's bufferevent (it sets the
 * socket itself): count them, and pause the listener at the limit. */
static struct bufferevent *
metrics_http_bev_cb(struct event_base *base, void *arg)
{
	struct metrics_http *m = arg;
	uint64_t now = toud_now(m->t);
	struct timeval rest;

	if (now / 1000 != m->second) {
		m->second = now / 1000;
		m->accepts = 0;
	}
	if (++m->accepts >= METRICS_HTTP_ACCEPTS) {
		rest.tv_sec = 0;
		rest.tv_usec = (suseconds_t)(1000 - now % 1000) * 1000;
		evconnlistener_disable(evhttp_bound_socket_get_listener(m->bound));
		evtimer_add(m->ev_resume, &rest);
		log_debug_rl("metrics: %u connections in a second, pausing", m->accepts);
	}
	return bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
}

static void
metrics_http_request_cb(struct evhttp_request *req, void *arg)
{
	struct metrics_http *m = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	struct evbuffer *body;

	evhttp_add_header(h, "Connection", "close");
	if (!path || strcmp(path, "/metrics") != 0) {
		evhttp_send_error(req, HTTP_NOTFOUND, NULL);
		return;
	}
	if (!(body = evbuffer_new()) || metrics_render_now(body, m->t) < 0) {
		log_warnx("metrics: out of memory for a reply");
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
	} else {
		evhttp_add_header(h, "Content-Type", METRICS_CONTENT_TYPE);
		evhttp_add_header(h, "Cache-Control", "no-store");
		evhttp_send_reply(req, HTTP_OK, "OK", body);
	}
	if (body)
		evbuffer_free(body);
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

void
metrics_http_close(struct metrics_http *m)
{
	if (!m)
		return;
	if (m->http)
		evhttp_free(m->http);   /* with its socket and connections */
	if (m->ev_resume)
		event_free(m->ev_resume);
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
	if (!(m->http = evhttp_new(t->base)) ||
	    !(m->ev_resume = evtimer_new(t->base, metrics_http_resume_cb, m)))
		goto nomem;
	if ((fd = metrics_http_socket(&m->addr)) < 0) {
		snprintf(err, errlen, "%s:%d: metrics: cannot listen on %s: %s%s", c->file,
		    ifc->metrics_line, util_sa_fmt(&m->addr, a, sizeof(a)), strerror(-fd),
		    fd == -EACCES ? " (a port below 1024 needs CAP_NET_BIND_SERVICE)" : "");
		metrics_http_close(m);
		return NULL;
	}
	if (!(m->bound = evhttp_accept_socket_with_handle(m->http, fd))) {
		close(fd);
		goto nomem;
	}
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_timeout(m->http, METRICS_HTTP_TIMEOUT_S);
	evhttp_set_max_headers_size(m->http, METRICS_HTTP_HEADERS_MAX);
	evhttp_set_max_body_size(m->http, 0);
	evhttp_set_bevcb(m->http, metrics_http_bev_cb, m);
	evhttp_set_gencb(m->http, metrics_http_request_cb, m);
	log_info("metrics: serving http://%s/metrics", util_sa_fmt(&m->addr, a, sizeof(a)));
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
	union sockaddr_union sa;
	char e[400], e2[400];

	if (n->has_metrics) {
		util_sa_from_addr(&sa, &n->metrics_addr, n->metrics_port);
		if (old && util_sa_equal(&sa, &old->addr))
			return 0;
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
