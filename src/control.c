/* control.c - the control socket: one request line in, one reply out.
 *
 * Everything is non-blocking on the daemon's event loop: a client that
 * sends nothing, or does not read its reply, is dropped after a timeout and
 * never stalls the data path. */
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
#include <unistd.h>

#include <event2/event.h>

#include "control.h"
#include "export.h"
#include "log.h"
#include "toud.h"
#include "util.h"

#define CONTROL_LINE_MAX 512    /* a request line, newline included */
#define CONTROL_MAX_CONNS 16
#define CONTROL_TIMEOUT_S 5     /* to send the request; then per write progress */
#define CONTROL_ACCEPT_BATCH 16
#define CONTROL_RUNDIR "/run/"

struct control_conn {
	LIST_ENTRY(control_conn) entry;
	struct control *c;
	int fd;
	struct event *ev_read, *ev_write, *ev_timeout;
	char in[CONTROL_LINE_MAX + 1];
	size_t in_len;
	char *out;
	size_t out_len, out_off;
};

struct control {
	struct toud *t;
	char *path;
	int fd;
	bool made_dir;                  /* we created the socket's directory */
	dev_t dev;                      /* the socket file we created */
	ino_t ino;
	struct event *ev_accept;
	struct event *ev_retry;         /* accept again after running out of fds */
	LIST_HEAD(, control_conn) conns;
	size_t n_conns;
};

static void control_conn_free(struct control_conn *cc);

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
control_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct control *c = arg;

	(void)fd;
	(void)what;
	event_add(c->ev_accept, NULL);
}

static void
control_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct control_conn *cc = arg;

	(void)fd;
	(void)what;
	log_debug("control: client timed out");
	control_conn_free(cc);
}

static void
control_conn_free(struct control_conn *cc)
{
	LIST_REMOVE(cc, entry);
	cc->c->n_conns--;
	if (cc->ev_read)
		event_free(cc->ev_read);
	if (cc->ev_write)
		event_free(cc->ev_write);
	if (cc->ev_timeout)
		event_free(cc->ev_timeout);
	close(cc->fd);
	free(cc->out);
	free(cc);
}

/* Closing with unread input makes the kernel reset the connection, and the
 * client then sees ECONNRESET after the reply: read what is pending first. */
static void
control_conn_drain(struct control_conn *cc)
{
	char buf[1024];
	int i;

	for (i = 0; i < 64; i++)
		if (recv(cc->fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
}

/* Send what the socket takes now; the rest when it is writable again.  The
 * connection is freed when everything is sent or the client went away. */
static void
control_conn_flush(struct control_conn *cc)
{
	struct timeval tv = { CONTROL_TIMEOUT_S, 0 };
	bool progress = false;
	ssize_t n;

	while (cc->out_off < cc->out_len) {
		n = send(cc->fd, cc->out + cc->out_off, cc->out_len - cc->out_off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			log_debug("control: send: %s", strerror(errno));
			control_conn_free(cc);
			return;
		}
		cc->out_off += (size_t)n;
		progress = true;
	}
	if (cc->out_off == cc->out_len) {
		control_conn_drain(cc);
		control_conn_free(cc);
		return;
	}
	/* A slow reader may take its time; one that stops reading may not. */
	if (progress)
		event_add(cc->ev_timeout, &tv);
	event_add(cc->ev_write, NULL);
}

static void
control_write_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	control_conn_flush(arg);
}

/* Take ownership of the reply out and start sending it. */
static void
control_conn_reply(struct control_conn *cc, char *out)
{
	event_del(cc->ev_read);
	if (!out) {
		log_warnx("control: out of memory for a reply");
		control_conn_free(cc);
		return;
	}
	cc->out = out;
	cc->out_len = strlen(out);
	cc->out_off = 0;
	control_conn_flush(cc);
}

static char *control_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

static char *
control_show(struct control *c, char **argv, int argc)
{
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

static char *
control_reload(struct control *c, int argc)
{
	char err[512] = "";
	int r;

	if (argc != 1)
		return control_error("usage: reload");
	log_info("control: reload requested");
	if ((r = toud_reload(c->t, err, sizeof(err))) < 0)
		return control_error("%s", err[0] ? err : strerror(-r));
	return strdup("ok\n");
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
	if (!(body = export_render(c->t, name, endpoint, err, sizeof(err))))
		return control_error("export: %s", err);
	if (asprintf(&out, "ok\n%s", body) < 0)
		out = NULL;
	free(body);
	return out;
}

/* Handle one request line (NUL-terminated, newline stripped). */
static char *
control_dispatch(struct control *c, char *line)
{
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
		return control_show(c, argv, argc);
	if (strcmp(argv[0], "reload") == 0)
		return control_reload(c, argc);
	if (strcmp(argv[0], "export") == 0)
		return control_export(c, argv, argc);
	return control_error("unknown command '%s'", control_quote(argv[0], q, sizeof(q)));
}

static void
control_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct control_conn *cc = arg;
	char *nl;
	ssize_t n;

	(void)what;
	n = recv(fd, cc->in + cc->in_len, CONTROL_LINE_MAX - cc->in_len, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		log_debug("control: recv: %s", strerror(errno));
		control_conn_free(cc);
		return;
	}
	if (n == 0 && cc->in_len == 0) {
		control_conn_free(cc);         /* connected and left */
		return;
	}
	nl = memchr(cc->in + cc->in_len, '\n', (size_t)n);
	cc->in_len += (size_t)n;
	if (nl)
		*nl = '\0';
	else if (n == 0)
		cc->in[cc->in_len] = '\0';     /* end of file ends the line too */
	else if (cc->in_len == CONTROL_LINE_MAX) {
		control_conn_reply(cc, control_error("request too long"));
		return;
	} else
		return;
	/* A NUL inside the line would hide the rest of it. */
	if (strlen(cc->in) != (nl ? (size_t)(nl - cc->in) : cc->in_len)) {
		control_conn_reply(cc, control_error("malformed request"));
		return;
	}
	control_conn_reply(cc, control_dispatch(cc->c, cc->in));
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
control_conn_new(struct control *c, int fd)
{
	struct timeval tv = { CONTROL_TIMEOUT_S, 0 };
	struct event_base *base = c->t->base;
	struct control_conn *cc;

	if (!(cc = calloc(1, sizeof(*cc)))) {
		close(fd);
		return;
	}
	cc->c = c;
	cc->fd = fd;
	LIST_INSERT_HEAD(&c->conns, cc, entry);
	c->n_conns++;
	cc->ev_read = event_new(base, fd, EV_READ | EV_PERSIST, control_read_cb, cc);
	cc->ev_write = event_new(base, fd, EV_WRITE | EV_PERSIST, control_write_cb, cc);
	cc->ev_timeout = evtimer_new(base, control_timeout_cb, cc);
	if (!cc->ev_read || !cc->ev_write || !cc->ev_timeout ||
	    event_add(cc->ev_timeout, &tv) < 0) {
		log_warnx("control: cannot set up a connection");
		control_conn_free(cc);
		return;
	}
	if (!control_peer_allowed(fd)) {
		control_conn_reply(cc, control_error("permission denied"));
		return;
	}
	event_add(cc->ev_read, NULL);
}

static void
control_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	static const char busy[] = "error: too many connections\n";
	struct timeval retry = { 1, 0 };
	struct control *c = arg;
	int fd, i;

	(void)what;
	for (i = 0; i < CONTROL_ACCEPT_BATCH; i++) {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			log_warn("control: accept");
			/* Out of descriptors: the socket stays readable, so
			 * stop listening for a moment rather than spin. */
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				event_del(c->ev_accept);
				event_add(c->ev_retry, &retry);
			}
			return;
		}
		if (c->n_conns >= CONTROL_MAX_CONNS) {
			/* A fresh socket's buffer takes this without blocking. */
			(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			log_debug_rl("control: too many connections, one refused");
			continue;
		}
		control_conn_new(c, fd);
	}
}

struct control *
control_open(struct toud *t, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct control *c;
	struct stat st;
	mode_t omask;
	int r;

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
	c->fd = -1;
	LIST_INIT(&c->conns);
	if (!(c->path = strdup(path))) {
		r = -ENOMEM;
		goto fail;
	}
	if ((r = control_mkdirs(path, &c->made_dir)) < 0 || (r = control_clear_stale(&sun)) < 0)
		goto fail;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		r = -errno;
		goto fail;
	}
	/* The socket is created 0660 (the umask at bind): no moment where it
	 * is reachable with wider permissions, and no chmod by path, which
	 * would follow a symlink put in its place by whoever owns the
	 * directory. */
	omask = umask(0117);
	r = bind(c->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ? -errno : 0;
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
	if (listen(c->fd, CONTROL_MAX_CONNS) < 0) {
		r = -errno;
		unlink(path);
		goto fail;
	}
	c->ev_accept = event_new(t->base, c->fd, EV_READ | EV_PERSIST, control_accept_cb, c);
	c->ev_retry = evtimer_new(t->base, control_retry_cb, c);
	if (!c->ev_accept || !c->ev_retry || event_add(c->ev_accept, NULL) < 0) {
		r = -ENOMEM;
		unlink(path);
		goto fail;
	}
	return c;
fail:
	if (c->ev_accept)
		event_free(c->ev_accept);
	if (c->ev_retry)
		event_free(c->ev_retry);
	if (c->fd >= 0)
		close(c->fd);
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
	event_free(c->ev_accept);
	event_free(c->ev_retry);
	close(c->fd);
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
