/* control.c - the control socket: one request line in, one reply out.
 *
 * Connections are libevent bufferevents on the daemon's event loop, accepted
 * by an evconnlistener.  Nothing blocks: a client that sends no complete
 * line within the timeout, or stops reading its reply, is dropped and never
 * stalls the data path.  The show of every peer (tens of megabytes with
 * many peers) is not rendered at once but streamed: a batch of peers each
 * time the output runs low. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "conf.h"
#include "control.h"
#include "ctx.h"
#include "dtls.h"
#include "export.h"
#include "log.h"
#include "metrics.h"
#include "peer.h"
#include "peer_fsm.h"
#include "peer_timers.h"
#include "reload.h"
#include "show.h"
#include "util.h"

#define CONTROL_LINE_MAX 512    /* a request line, newline included */
#define CONTROL_MAX_CONNS 16
#define CONTROL_TIMEOUT_S 5     /* for the request line; then per write progress */
#define CONTROL_STREAM_BATCH 128        /* peers rendered at a time */
#define CONTROL_STREAM_LOW (32 * 1024)  /* output below this: render more */
#define CONTROL_RUNDIR "/run/"

struct control_conn {
	LIST_ENTRY(control_conn) entry;
	struct control *c;
	struct bufferevent *bev;
	bool busy;                      /* over the limit: told so, nothing else */
	/* ping: the peer whose answer the reply waits for, since when (us) */
	struct peer *ping_peer;
	uint64_t ping_start_us;
	struct show_stream *show;       /* a show being streamed, not all written yet */
};

struct control {
	struct toud *t;
	char *path;
	bool made_dir;                  /* we created the socket's directory */
	dev_t dev;                      /* the socket file we created */
	ino_t ino;
	struct evconnlistener *listener;
	struct event *ev_retry;         /* accept again after running out of fds */
	LIST_HEAD(, control_conn) conns;
	size_t n_conns;
};

/* Create the directories of path below /run (systemd's RuntimeDirectory=
 * normally does it; this covers running toud by hand).  Elsewhere the
 * directory is the administrator's business. */
static int
control_mkdirs(const char *path, bool *made_last)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	size_t skip = strlen(CONTROL_RUNDIR);
	bool last;
	char *s;

	if (strncmp(path, CONTROL_RUNDIR, skip) != 0)
		return 0;
	util_strlcpy(dir, path, sizeof(dir));
	*strrchr(dir, '/') = '\0';
	if (strlen(dir) < skip)
		return 0;               /* directly in /run */
	for (s = dir + skip; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		last = *s == '\0';
		*s = '\0';
		if (mkdir(dir, 0755) < 0) {
			if (errno != EEXIST)
				return -errno;
		} else if (last) {
			*made_last = true;
		}
		if (last)
			return 0;
		*s = '/';
	}
}

/* A socket file left behind by a daemon that died is removed; one a live
 * daemon answers on is not (EADDRINUSE), nor anything that is not a socket. */
static int
control_clear_stale(const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, r = 0;

	if (lstat(sun->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0)
		r = -EADDRINUSE;
	else if (errno != ECONNREFUSED)
		r = -errno;
	else if (unlink(sun->sun_path) < 0 && errno != ENOENT)
		r = -errno;
	close(fd);
	return r;
}


static void
control_free_reply(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)data);
}

static void
control_conn_free(struct control_conn *cc)
{
	if (cc->ping_peer)
		peer_ping_cancel(cc->ping_peer);
	show_stream_free(cc->show);
	LIST_REMOVE(cc, entry);
	cc->c->n_conns--;
	bufferevent_free(cc->bev);      /* closes the socket */
	free(cc);
}

/* Closing with unread input makes the kernel reset the connection, and the
 * client then sees ECONNRESET after the reply: read what is pending first. */
static void
control_conn_drain(struct control_conn *cc)
{
	evutil_socket_t fd = bufferevent_getfd(cc->bev);
	char buf[1024];
	int i;

	for (i = 0; i < 64; i++)
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
}

/* The reply has left: the connection is done. */
static void
control_sent_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	control_conn_drain(arg);
	control_conn_free(arg);
}

static void
control_event_cb(struct bufferevent *bev, short what, void *arg);
static char *control_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The request is read: from now on only the writing is timed, each write
 * that makes progress restarting the clock.  The clock starts now, not
 * when this turn of the event loop began: libevent times events from its
 * cached time, and rendering a large reply may have taken longer than the
 * timeout, which expired the write before its first byte. */
static void
control_conn_writing(struct control_conn *cc)
{
	struct timeval tv = { CONTROL_TIMEOUT_S, 0 };

	bufferevent_disable(cc->bev, EV_READ);
	event_base_update_cache_time(bufferevent_get_base(cc->bev));
	bufferevent_set_timeouts(cc->bev, NULL, &tv);
	bufferevent_enable(cc->bev, EV_WRITE);
}

/* Take ownership of the reply out and start sending it; the connection
 * is freed once it is sent, or when the client stops reading it. */
static void
control_conn_reply(struct control_conn *cc, char *out)
{
	bufferevent_disable(cc->bev, EV_READ);
	if (!out || evbuffer_add_reference(bufferevent_get_output(cc->bev),
	    out, strlen(out), control_free_reply, NULL) < 0) {
		log_warnx("control: out of memory for a reply");
		free(out);
		control_conn_free(cc);
		return;
	}
	bufferevent_setcb(cc->bev, NULL, control_sent_cb, control_event_cb, cc);
	control_conn_writing(cc);
}

/* Render batches of cc's show onto its output until there is enough to
 * write for a while.  At the end, or when the stream cannot go on, the
 * show is over and what remains is to send what was written.  A failure
 * after the output began cannot be told in the status line: the reply
 * ends with a NUL, which no output has, and an error line (control.h).
 * 0, or -1 when nothing more can be written. */
static int
control_stream_fill(struct control_conn *cc)
{
	struct evbuffer *out = bufferevent_get_output(cc->bev);
	char *buf, *msg;
	size_t len;
	int r = 1, e = 0, bad;
	FILE *f;

	while (r > 0 && evbuffer_get_length(out) < CONTROL_STREAM_LOW) {
		buf = NULL;
		if (!(f = open_memstream(&buf, &len))) {
			r = -1, e = ENOMEM;
			break;
		}
		r = show_stream_next(cc->show, f, CONTROL_STREAM_BATCH);
		e = r < 0 ? errno : 0;
		bad = ferror(f);
		if (fclose(f) != 0 || bad)
			r = -1, e = ENOMEM;
		if (r >= 0 && len && evbuffer_add_reference(out, buf, len, control_free_reply,
		    NULL) == 0)
			continue;
		free(buf);
		if (r >= 0 && len)
			r = -1, e = ENOMEM;
	}
	if (r > 0)
		return 0;
	show_stream_free(cc->show);
	cc->show = NULL;
	if (r < 0) {
		log_debug("control: show cut short: %s", e == ESTALE ?
		    "a reload changed the peers" : strerror(e));
		msg = control_error("show: %s", e == ESTALE ? "the peers changed while "
		    "they were listed (a reload); run it again" : strerror(e));
		if (!msg || evbuffer_add(out, "", 1) < 0 || evbuffer_add(out, msg,
		    strlen(msg)) < 0) {
			free(msg);
			return -1;
		}
		free(msg);
	}
	/* Written to the end: the connection is done once it is sent. */
	bufferevent_setwatermark(cc->bev, EV_WRITE, 0, 0);
	bufferevent_setcb(cc->bev, NULL, control_sent_cb, control_event_cb, cc);
	return 0;
}

/* The output has run low: the next batch. */
static void
control_stream_cb(struct bufferevent *bev, void *arg)
{
	struct control_conn *cc = arg;

	(void)bev;
	if (control_stream_fill(cc) < 0)
		control_conn_free(cc);
}

/* Begin the reply of cc's show: "ok", then as much of it as the output
 * takes, then more each time the output runs low. */
static void
control_conn_stream(struct control_conn *cc)
{
	bufferevent_disable(cc->bev, EV_READ);
	if (evbuffer_add(bufferevent_get_output(cc->bev), "ok\n", 3) < 0 ||
	    control_stream_fill(cc) < 0) {
		log_warnx("control: out of memory for a reply");
		control_conn_free(cc);
		return;
	}
	if (cc->show) {
		bufferevent_setwatermark(cc->bev, EV_WRITE, CONTROL_STREAM_LOW, 0);
		bufferevent_setcb(cc->bev, NULL, control_stream_cb, control_event_cb, cc);
	}
	control_conn_writing(cc);
}

/* "error: MESSAGE\n", malloc'd (NULL on ENOMEM). */
static char *
control_error(const char *fmt, ...)
{
	char msg[512], *out;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (asprintf(&out, "error: %s\n", msg) < 0)
		return NULL;
	return out;
}

/* Echo a client's word in an error message without letting it carry
 * control characters to the client's terminal, cut to a bounded length. */
static const char *
control_quote(const char *s, char *buf, size_t len)
{
	size_t i;

	util_strlcpy(buf, s, len);
	for (i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	if (strlen(s) >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
	return buf;
}

/* show [PEER] [--json]: one peer's at once; that of every peer is
 * streamed (cc->show, and NULL). */
static char *
control_show(struct control_conn *cc, char **argv, int argc)
{
	struct control *c = cc->c;
	const char *peer = NULL;
	char q[64], *body, *out;
	bool json = false;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] == '-')
			return control_error("show: unknown option '%s'",
			    control_quote(argv[i], q, sizeof(q)));
		else if (!peer)
			peer = argv[i];
		else
			return control_error("usage: show [PEER] [--json]");
	}
	if (!peer) {
		if (!(cc->show = show_stream_new(c->t, json)))
			return control_error("show: %s", strerror(ENOMEM));
		return NULL;
	}
	if (!(body = show_render(c->t, peer, json))) {
		if (errno == ENOENT)
			return control_error("no such peer '%s'",
			    control_quote(peer, q, sizeof(q)));
		return control_error("show: %s", strerror(errno));
	}
	if (asprintf(&out, "ok\n%s", body) < 0)
		out = NULL;
	free(body);
	return out;
}

static void
control_ping_answer(void *arg, bool answered)
{
	struct control_conn *cc = arg;
	struct peer *p = cc->ping_peer;
	char a[UTIL_ADDRSTRLEN], *out;

	cc->ping_peer = NULL;
	if (!answered) {
		control_conn_reply(cc, control_error(CONTROL_PING_LOST "from peer '%s' within %d s",
		    p->name, PEER_PING_TIMEOUT_MS / 1000));
		return;
	}
	if (asprintf(&out, "ok\nreply from %s (%s): time=%.3f ms\n", p->name,
	    p->has_endpoint ? util_sa_fmt(&p->endpoint, a, sizeof(a)) : "?",
	    (double)(util_now_us() - cc->ping_start_us) / 1000) < 0)
		out = NULL;
	control_conn_reply(cc, out);
}

/* handshake PEER (touctl wait): bring the peer up now if it is not,
 * whatever its back-off, or say why toud cannot. */
static char *
control_handshake(struct control *c, char **argv, int argc)
{
	struct peer *p;
	char q[64];
	int r;

	if (argc != 2)
		return control_error("usage: handshake PEER");
	if (!(p = peer_find_by_name(c->t, argv[1])))
		return control_error("no such peer '%s'", control_quote(argv[1], q, sizeof(q)));
	switch ((r = peer_timers_wanted(p))) {
	case 0:
		return strdup("ok\n");
	case -EOPNOTSUPP:
		return control_error("peer '%s': no handshake with encryption = none; it is up "
		    "once a packet from it arrives", p->name);
	case -EDESTADDRREQ:
		return control_error("peer '%s' has no endpoint: it comes up when it makes "
		    "contact", p->name);
	case -EAGAIN:
		return control_error("peer '%s': its endpoint %s is not resolved yet", p->name,
		    p->cf->endpoint_host);
	default:
		return control_error("peer '%s': handshake: %s", p->name, strerror(-r));
	}
}

/* ping PEER: a path challenge on the peer's current path; the reply waits
 * for the response (or its timeout).  NULL when it waits. */
static char *
control_ping(struct control_conn *cc, char **argv, int argc)
{
	struct peer *p;
	char q[64];
	int r;

	if (argc != 2)
		return control_error("usage: ping PEER");
	if (!(p = peer_find_by_name(cc->c->t, argv[1])))
		return control_error("no such peer '%s'", control_quote(argv[1], q, sizeof(q)));
	cc->ping_start_us = util_now_us();
	if ((r = peer_timers_ping(p, control_ping_answer, cc)) < 0) {
		if (r == -ENOTCONN)
			return control_error("peer '%s' has no session (state %s), so nothing "
			    "was sent: a ping goes over a session; traffic to the peer, or its "
			    "keepalive, starts one (touctl wait %s waits for it)", p->name,
			    peer_state_name(p->state), p->name);
		if (r == -EBUSY)
			return control_error("peer '%s': a ping is already in flight", p->name);
		return control_error("ping %s: %s", p->name, strerror(-r));
	}
	cc->ping_peer = p;
	return NULL;
}

static char *
control_reload(struct control *c, int argc)
{
	char err[512] = "", *out;
	int r;

	if (argc != 1)
		return control_error("usage: reload");
	log_info("control: reload requested");
	if ((r = toud_reload(c->t, err, sizeof(err))) < 0)
		return control_error("%s", err[0] ? err : strerror(-r));
	if (asprintf(&out, "ok\n%s\n", err) < 0)
		return NULL;
	return out;
}

/* export [--name NAME] [--endpoint HOST[:PORT]]: this node as a [peer]
 * section (export.c). */
static char *
control_export(struct control *c, char **argv, int argc)
{
	const char *name = NULL, *endpoint = NULL;
	char err[512], *body, *out;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
			name = argv[++i];
		else if (strcmp(argv[i], "--endpoint") == 0 && i + 1 < argc)
			endpoint = argv[++i];
		else
			return control_error("usage: export [--name NAME] [--endpoint HOST[:PORT]]");
	}
	if (!(body = export_render(c->t->conf, c->t->dtls ? dtls_ctx_fingerprint(c->t->dtls) : NULL,
	    name, endpoint, err, sizeof(err))))
		return control_error("export: %s", err);
	if (asprintf(&out, "ok\n%s", body) < 0)
		out = NULL;
	free(body);
	return out;
}

/* metrics: the Prometheus text of metrics.c. */
static char *
control_metrics(struct control *c, int argc)
{
	struct evbuffer *b;
	char *out = NULL;
	size_t len;

	if (argc != 1)
		return control_error("usage: metrics");
	if ((b = evbuffer_new()) && evbuffer_add(b, "ok\n", 3) == 0 &&
	    metrics_render_now(b, c->t) == 0) {
		len = evbuffer_get_length(b);
		if ((out = malloc(len + 1))) {
			evbuffer_remove(b, out, len);
			out[len] = '\0';
		}
	}
	if (b)
		evbuffer_free(b);
	return out ? out : control_error("metrics: out of memory");
}

/* Handle one request line (NUL-terminated, newline stripped).  NULL
 * with cc->ping_peer set: the reply comes later; with cc->show set: it
 * is to be streamed. */
static char *
control_dispatch(struct control_conn *cc, char *line)
{
	struct control *c = cc->c;
	char *argv[8], *save = NULL, *tok, q[64];
	int argc = 0;

	for (tok = strtok_r(line, " \t\r", &save); tok;
	    tok = strtok_r(NULL, " \t\r", &save)) {
		if (argc == (int)ARRAY_SIZE(argv))
			return control_error("too many arguments");
		argv[argc++] = tok;
	}
	if (argc == 0)
		return control_error("empty request");
	if (strcmp(argv[0], "show") == 0)
		return control_show(cc, argv, argc);
	if (strcmp(argv[0], "reload") == 0)
		return control_reload(c, argc);
	if (strcmp(argv[0], "ping") == 0)
		return control_ping(cc, argv, argc);
	if (strcmp(argv[0], "export") == 0)
		return control_export(c, argv, argc);
	if (strcmp(argv[0], "handshake") == 0)
		return control_handshake(c, argv, argc);
	if (strcmp(argv[0], "metrics") == 0)
		return control_metrics(c, argc);
	return control_error("unknown command '%s'", control_quote(argv[0], q, sizeof(q)));
}


/* Answer a request line of len bytes (no newline, NUL-terminated). */
static void
control_conn_request(struct control_conn *cc, const char *line, size_t len)
{
	char *copy, *out;

	if (len >= CONTROL_LINE_MAX)
		control_conn_reply(cc, control_error("request too long"));
	else if (strlen(line) != len)   /* a NUL would hide the rest */
		control_conn_reply(cc, control_error("malformed request"));
	else if (cc->busy)
		control_conn_reply(cc, control_error("too many connections"));
	else if (!(copy = strdup(line)))
		control_conn_reply(cc, NULL);
	else {
		out = control_dispatch(cc, copy);
		free(copy);
		if (cc->ping_peer)
			bufferevent_disable(cc->bev, EV_READ);  /* the answer will come */
		else if (cc->show)
			control_conn_stream(cc);
		else
			control_conn_reply(cc, out);
	}
}

/* Read the request line. */
static void
control_read_cb(struct bufferevent *bev, void *arg)
{
	struct control_conn *cc = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len;
	char *line;

	if ((line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF))) {
		control_conn_request(cc, line, len);
		free(line);
	} else if (evbuffer_get_length(in) >= CONTROL_LINE_MAX) {
		control_conn_reply(cc, control_error("request too long"));
	}
}

static void
control_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct control_conn *cc = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	char line[CONTROL_LINE_MAX + 1];
	int n;

	if ((what & BEV_EVENT_EOF) && (what & BEV_EVENT_READING) && len > 0) {
		/* End of file ends the line too (the read watermark keeps
		 * what is pending below CONTROL_LINE_MAX). */
		n = evbuffer_remove(in, line, len < CONTROL_LINE_MAX ? len : CONTROL_LINE_MAX);
		if (n >= 0) {
			line[n] = '\0';
			control_conn_request(cc, line, (size_t)n);
			return;
		}
	}
	if (what & BEV_EVENT_TIMEOUT)
		log_debug("control: client timed out");
	else if (what & BEV_EVENT_ERROR)
		log_debug("control: %s", strerror(EVUTIL_SOCKET_ERROR()));
	control_conn_free(cc);          /* left, failed or timed out */
}

static bool
control_peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		log_warn("control: SO_PEERCRED");
		return false;
	}
	if (cr.uid == 0 || cr.uid == geteuid())
		return true;
	log_info("control: refused a client with uid %u (pid %d)",
	    (unsigned)cr.uid, (int)cr.pid);
	return false;
}


static void
control_conn_new(struct control *c, evutil_socket_t fd, bool busy)
{
	struct timeval tv = { CONTROL_TIMEOUT_S, 0 };
	struct control_conn *cc;

	if (!(cc = calloc(1, sizeof(*cc))) ||
	    !(cc->bev = bufferevent_socket_new(c->t->base, fd, BEV_OPT_CLOSE_ON_FREE))) {
		log_warnx("control: cannot set up a connection");
		free(cc);
		close(fd);
		return;
	}
	cc->c = c;
	cc->busy = busy;
	if (busy)
		log_debug_rl("control: too many connections, one refused");
	LIST_INSERT_HEAD(&c->conns, cc, entry);
	c->n_conns++;
	/* Both timeouts restart with each read or write that makes progress:
	 * the request is at most a line long, a slow reader may take its
	 * time, and a client that stops sending or reading is dropped. */
	bufferevent_set_timeouts(cc->bev, &tv, &tv);
	bufferevent_setwatermark(cc->bev, EV_READ, 0, CONTROL_LINE_MAX);
	bufferevent_setcb(cc->bev, control_read_cb, NULL, control_event_cb, cc);
	if (!control_peer_allowed(fd)) {
		control_conn_reply(cc, control_error("permission denied"));
		return;
	}
	bufferevent_enable(cc->bev, EV_READ);
}

static void
control_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct control *c = arg;

	(void)l;
	(void)sa;
	(void)salen;
	/* Past the limit a client is still read, so that it gets its answer
	 * rather than a reset; past twice the limit it is just closed. */
	if (c->n_conns >= 2 * CONTROL_MAX_CONNS) {
		close(fd);
		log_debug_rl("control: too many connections, one closed");
		return;
	}
	control_conn_new(c, fd, c->n_conns >= CONTROL_MAX_CONNS);
}

static void
control_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct control *c = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(c->listener);
}

/* accept failed for a reason other than a retriable one.  Out of
 * descriptors, the socket stays readable: stop listening for a moment
 * rather than spin. */
static void
control_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct timeval retry = { 1, 0 };
	struct control *c = arg;
	int err = EVUTIL_SOCKET_ERROR();

	log_warnx("control: accept: %s", strerror(err));
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		evconnlistener_disable(l);
		evtimer_add(c->ev_retry, &retry);
	}
}

struct control *
control_open(struct toud *t, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct control *c;
	struct stat st;
	mode_t omask;
	int fd = -1, r;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	util_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
	if (!(c = calloc(1, sizeof(*c)))) {
		errno = ENOMEM;
		return NULL;
	}
	c->t = t;
	LIST_INIT(&c->conns);
	if (!(c->path = strdup(path))) {
		r = -ENOMEM;
		goto fail;
	}
	if ((r = control_mkdirs(path, &c->made_dir)) < 0 || (r = control_clear_stale(&sun)) < 0)
		goto fail;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		r = -errno;
		goto fail;
	}
	/* The socket is created 0660 (the umask at bind): no moment where it
	 * is reachable with wider permissions, and no chmod by path, which
	 * would follow a symlink put in its place by whoever owns the
	 * directory. */
	omask = umask(0117);
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ? -errno : 0;
	umask(omask);
	if (r < 0)
		goto fail;
	if (lstat(path, &st) < 0) {
		r = -errno;
		unlink(path);
		goto fail;
	}
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		/* Replaced between bind and here: not ours to use. */
		r = -EEXIST;
		goto fail;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->listener = evconnlistener_new(t->base, control_accept_cb, c,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 2 * CONTROL_MAX_CONNS, fd);
	if (c->listener)
		fd = -1;                /* the listener owns it now */
	c->ev_retry = evtimer_new(t->base, control_retry_cb, c);
	if (!c->listener || !c->ev_retry) {
		r = -ENOMEM;
		unlink(path);
		goto fail;
	}
	evconnlistener_set_error_cb(c->listener, control_accept_error_cb);
	return c;
fail:
	if (c->listener)
		evconnlistener_free(c->listener);
	if (c->ev_retry)
		event_free(c->ev_retry);
	if (fd >= 0)
		close(fd);
	free(c->path);
	free(c);
	errno = -r;
	return NULL;
}

void
control_close(struct control *c)
{
	struct stat st;

	if (!c)
		return;
	while (!LIST_EMPTY(&c->conns))
		control_conn_free(LIST_FIRST(&c->conns));
	evconnlistener_free(c->listener);
	event_free(c->ev_retry);
	/* Only our own socket: a second daemon may have replaced it. */
	if (lstat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		unlink(c->path);
	free(c->path);
	free(c);
}

const char *
control_dir_made(const struct control *c, char *buf, size_t len)
{
	char *slash;

	if (!c->made_dir)
		return NULL;
	util_strlcpy(buf, c->path, len);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return NULL;
	*slash = '\0';
	return buf;
}
