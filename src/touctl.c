/* touctl.c - the command line client of toud's control socket.
 *
 * It sends one request line and prints the reply: the body of an "ok" reply
 * to stdout, the message of an "error: " reply to stderr.  A long body (the
 * show of many peers) is printed as it arrives, never all held here unless
 * stdout is slower than toud. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "control.h"
#include "dtls.h"
#include "export.h"
#include "keys.h"
#include "psk.h"

#define TOUCTL_TIMEOUT_S 30             /* a reload may resolve host names */
#define TOUCTL_REPLY_MAX (64u << 20)      /* a reply read whole (ping, wait, an error) */
#define TOUCTL_BACKLOG_MAX (1024u << 20)  /* a streamed body that stdout has not taken */
#define TOUCTL_WAIT_DEFAULT_S 30        /* touctl wait: a handshake's 10 s, and retries */
#define TOUCTL_WAIT_POLL_MS 250

static void usage(FILE *, int) __attribute__((noreturn));

static void
usage(FILE *f, int status)
{
	fprintf(f,
	    "usage: touctl [-hV] [-s socket | -i name] command [args]\n"
	    "commands:\n"
	    "  show [PEER] [--json]   interface and peer state\n"
	    "  show --all [--json]    that of every toud with a socket in the socket's directory\n"
	    "  metrics                counters and states in the Prometheus text format\n"
	    "  reload                 re-read the configuration (as SIGHUP); fails if refused\n"
	    "  ping PEER [-c N]       path challenges to the peer, with round-trip times\n"
	    "  wait PEER [--timeout S]  wait until PEER is up (default %d s; 0: no limit)\n"
	    "  export [-c FILE] [--name NAME] [--endpoint HOST[:PORT]]\n"
	    "                         this node as a [peer] section for the other side\n"
	    "                         (from FILE, or from toud's config if it is not running)\n"
	    "  genkey [--force] DIR   write DIR/key.pem and DIR/cert.pem, print the fingerprint\n"
	    "  fingerprint FILE       print the fingerprint of a certificate or private key\n"
	    "  genpsk [FILE]          a new preshared key: print it, or create FILE (0600)\n"
	    "default socket: %s; -i NAME: %s/NAME.sock (toud -i NAME)\n",
	    TOUCTL_WAIT_DEFAULT_S, CONF_DEFAULT_CONTROL, CONF_INSTANCE_CONTROL_DIR);
	exit(status);
}

/* Peer names are [A-Za-z0-9._-]; anything else cannot name a peer and
 * could not travel in the one-line request anyway. */
static bool
touctl_valid_peer(const char *s)
{
	return conf_name_valid(s, CONF_NAME_MAX);
}

static int
touctl_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { TOUCTL_TIMEOUT_S, 0 };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Who may use the socket at path: the user that owns it (or, when its
 * directory cannot be entered, the directory), which is the one toud runs
 * as; into buf, or "" if neither can be looked at. */
static const char *
touctl_socket_user(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	struct passwd *pw;
	struct stat st;
	char dir[PATH_MAX];

	buf[0] = '\0';
	if (stat(path, &st) < 0) {
		if (!slash || (size_t)(slash - path) >= sizeof(dir))
			return buf;
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash == path ? 1 : slash - path] = '\0';
		if (stat(dir, &st) < 0)
			return buf;
	}
	if ((pw = getpwuid(st.st_uid)) && st.st_uid != 0)
		snprintf(buf, len, " and user %s, which toud runs as,", pw->pw_name);
	return buf;
}

static void
touctl_fail(const char *path, int e)
{
	char who[96];

	if (e == EACCES || e == EPERM) {
		fprintf(stderr, "touctl: %s: %s: only root%s may use toud's control socket; "
		    "run touctl as root (sudo)\n", path, strerror(e),
		    touctl_socket_user(path, who, sizeof(who)));
		exit(1);
	}
	fprintf(stderr, "touctl: %s: %s%s\n", path, strerror(e),
	    e == ENOENT || e == ECONNREFUSED ? " (is toud running?)" : "");
	exit(1);
}

/* Connect and send the request: the socket.  With soft, a socket that
 * cannot be reached returns -1 with errno instead of exiting. */
static int
touctl_send(const char *path, const char *req, bool soft)
{
	size_t len = strlen(req), off = 0;
	ssize_t n;
	int fd;

	if ((fd = touctl_connect(path)) < 0) {
		if (soft)
			return -1;
		touctl_fail(path, errno);
	}
	while (off < len) {
		n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;  /* toud may have replied and closed: read that */
		off += (size_t)n;
	}
	return fd;
}

/* Send the request and read the whole reply; returns its length.  With
 * soft, a socket that cannot be reached returns (size_t)-1 with errno
 * instead of exiting. */
static size_t
touctl_request_soft(const char *path, const char *req, char **out, bool soft)
{
	size_t cap = 4096, n_read = 0;
	char *buf;
	ssize_t n;
	int fd;

	if ((fd = touctl_send(path, req, soft)) < 0)
		return (size_t)-1;
	if (!(buf = malloc(cap))) {
		fprintf(stderr, "touctl: out of memory\n");
		exit(1);
	}
	for (;;) {
		if (cap - n_read < 2) {
			char *nb;

			if (cap >= TOUCTL_REPLY_MAX) {
				fprintf(stderr, "touctl: %s: reply too long\n", path);
				exit(1);
			}
			if (!(nb = realloc(buf, cap * 2))) {
				fprintf(stderr, "touctl: out of memory\n");
				exit(1);
			}
			buf = nb;
			cap *= 2;
		}
		n = recv(fd, buf + n_read, cap - n_read - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			fprintf(stderr, "touctl: %s: timed out waiting for toud\n", path);
			exit(1);
		}
		if (n < 0) {
			/* An error after a complete reply changes nothing. */
			if (n_read && buf[n_read - 1] == '\n')
				break;
			touctl_fail(path, errno);
		}
		if (n == 0)
			break;
		n_read += (size_t)n;
	}
	close(fd);
	buf[n_read] = '\0';
	*out = buf;
	return n_read;
}

static size_t
touctl_request(const char *path, const char *req, char **out)
{
	return touctl_request_soft(path, req, out, false);
}

/* Print a reply: "ok\n" + output, or "error: message"; the exit status. */
static int
touctl_reply(const char *path, char *reply, size_t len)
{
	char *nl;

	if (len == 0) {
		fprintf(stderr, "touctl: %s: toud closed the connection without a reply\n",
		    path);
		return 1;
	}
	if (strlen(reply) != len || !(nl = strchr(reply, '\n'))) {
		fprintf(stderr, "touctl: %s: malformed reply\n", path);
		return 1;
	}
	*nl = '\0';
	if (strcmp(reply, "ok") == 0) {
		fputs(nl + 1, stdout);
		if (fflush(stdout) == EOF || ferror(stdout)) {
			fprintf(stderr, "touctl: stdout: %s\n", strerror(errno));
			return 1;
		}
		return 0;
	}
	if (strncmp(reply, "error: ", 7) == 0) {
		/* The message may run on over further lines. */
		*nl = '\n';
		len = strlen(reply);
		while (len && reply[len - 1] == '\n')
			reply[--len] = '\0';
		fprintf(stderr, "touctl: %s\n", reply + 7);
		return 1;
	}
	fprintf(stderr, "touctl: %s: malformed reply\n", path);
	return 1;
}

/* A reply being read to be printed as it comes (touctl_open, touctl_body). */
struct touctl_in {
	const char *path;
	int fd;
	char *buf;                      /* NUL-terminated at len */
	size_t off, len, cap;           /* [off, len): read, not printed yet */
	size_t nul;                     /* where a NUL ends the output; SIZE_MAX: none */
	char last;                      /* the last byte read */
	bool eof;
};

static void
touctl_oom(void)
{
	fprintf(stderr, "touctl: out of memory\n");
	exit(1);
}

/* Read what comes next into in (with nowait, only what is there now).
 * Exits on a time-out or an error, as touctl_request_soft. */
static void
touctl_in_read(struct touctl_in *in, bool nowait)
{
	char *p;
	ssize_t n;

	if (in->cap - in->len < 4096 && in->off) {
		memmove(in->buf, in->buf + in->off, in->len - in->off + 1);
		if (in->nul != SIZE_MAX)
			in->nul -= in->off;
		in->len -= in->off;
		in->off = 0;
	}
	if (in->cap - in->len < 4096) {
		if (in->cap >= TOUCTL_BACKLOG_MAX) {
			fprintf(stderr, "touctl: %s: reply too long\n", in->path);
			exit(1);
		}
		if (!(p = realloc(in->buf, in->cap * 2)))
			touctl_oom();
		in->buf = p;
		in->cap *= 2;
	}
	n = recv(in->fd, in->buf + in->len, in->cap - in->len - 1, nowait ? MSG_DONTWAIT : 0);
	if (n < 0 && (errno == EINTR || (nowait && (errno == EAGAIN || errno == EWOULDBLOCK))))
		return;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		fprintf(stderr, "touctl: %s: timed out waiting for toud\n", in->path);
		exit(1);
	}
	if (n < 0) {
		/* An error after a complete reply changes nothing. */
		if (in->last != '\n')
			touctl_fail(in->path, errno);
		n = 0;
	}
	if (n == 0) {
		in->eof = true;
		return;
	}
	if (in->nul == SIZE_MAX && (p = memchr(in->buf + in->len, '\0', (size_t)n)))
		in->nul = (size_t)(p - in->buf);
	in->len += (size_t)n;
	in->last = in->buf[in->len - 1];
	in->buf[in->len] = '\0';
}

/* Send req and read the reply's status line.  1: "ok", and in holds what
 * came of the body; 0: anything else, and in holds the whole reply (for
 * touctl_reply); -1 with soft: the socket cannot be reached (errno). */
static int
touctl_open(struct touctl_in *in, const char *path, const char *req, bool soft)
{
	char *nl;

	*in = (struct touctl_in){ .path = path, .nul = SIZE_MAX, .cap = 4096 };
	if ((in->fd = touctl_send(path, req, soft)) < 0)
		return -1;
	if (!(in->buf = malloc(in->cap)))
		touctl_oom();
	in->buf[0] = '\0';
	while (!(nl = memchr(in->buf, '\n', in->len)) && !in->eof)
		touctl_in_read(in, false);
	if (nl == in->buf + 2 && memcmp(in->buf, "ok", 2) == 0) {
		in->off = 3;
		return 1;
	}
	while (!in->eof && in->len < TOUCTL_REPLY_MAX)
		touctl_in_read(in, false);
	close(in->fd);
	return 0;
}

/* Print the body of an "ok" reply as it arrives.  The socket is read all
 * the while, so that a slow stdout (a pager) never keeps toud waiting,
 * which would drop a client that stops reading: what stdout has not taken
 * yet waits here.  Writes to anything but a file are at most PIPE_BUF,
 * which poll's POLLOUT promises to take without blocking.  With strip,
 * the newlines that end the body are left out.  The exit status; a body
 * that toud ends with a NUL is followed by an error (control.h). */
static int
touctl_body(struct touctl_in *in, bool strip)
{
	struct pollfd pfd[2];
	struct stat st;
	size_t chunk, end;
	char *msg;
	ssize_t n;
	int rc = 0;

	chunk = fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) ? 1u << 20 : PIPE_BUF;
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "touctl: stdout: %s\n", strerror(errno));
		rc = 1;
		goto out;
	}
	for (;;) {
		end = in->nul != SIZE_MAX ? in->nul : in->len;
		while (strip && end > in->off && in->buf[end - 1] == '\n')
			end--;
		if (in->eof && in->off >= end)
			break;
		pfd[0] = (struct pollfd){ .fd = in->eof ? -1 : in->fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = in->off < end ? STDOUT_FILENO : -1,
		    .events = POLLOUT };
		n = poll(pfd, 2, in->eof ? -1 : TOUCTL_TIMEOUT_S * 1000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "touctl: %s: %s\n", in->path, n ? strerror(errno) :
			    "timed out waiting for toud");
			rc = 1;
			goto out;
		}
		if (pfd[1].revents) {
			n = write(STDOUT_FILENO, in->buf + in->off,
			    end - in->off < chunk ? end - in->off : chunk);
			if (n < 0 && errno != EINTR && errno != EAGAIN) {
				fprintf(stderr, "touctl: stdout: %s\n", strerror(errno));
				rc = 1;
				goto out;
			}
			if (n > 0)
				in->off += (size_t)n;
		}
		if (pfd[0].revents)
			touctl_in_read(in, true);
	}
	if (in->nul != SIZE_MAX) {
		msg = in->buf + in->nul + 1;
		n = (ssize_t)strlen(msg);
		while (n > 0 && msg[n - 1] == '\n')
			msg[--n] = '\0';
		if (strncmp(msg, "error: ", 7) == 0)
			fprintf(stderr, "touctl: %s\n", msg + 7);
		else
			fprintf(stderr, "touctl: %s: malformed reply\n", in->path);
		rc = 1;
	} else if (in->last != '\n') {
		/* Every body ends with a newline: toud went away. */
		fprintf(stderr, "touctl: %s: the reply was cut short\n", in->path);
		rc = 1;
	}
out:
	close(in->fd);
	return rc;
}

static int
touctl_run(const char *path, const char *req)
{
	struct touctl_in in;
	int rc;

	if (touctl_open(&in, path, req, false) > 0)
		rc = touctl_body(&in, false);
	else
		rc = touctl_reply(path, in.buf, in.len);
	free(in.buf);
	return rc;
}

/* One instance's show reply for show --all: text under a heading, or the
 * JSON object as a member of the "instances" array. */
static int
touctl_show_one(const char *sock, const char *name, bool json, bool first)
{
	struct touctl_in in;
	int r = touctl_open(&in, sock, json ? "show --json\n" : "show\n", true), rc;

	if (r < 0) {
		if (errno != ECONNREFUSED && errno != ENOENT)
			touctl_fail(sock, errno);
		fprintf(stderr, "touctl: show --all: %s: no toud listens (%s)\n", sock,
		    errno == ENOENT ? "it has just stopped" : "a stale socket");
		return -1;
	}
	if (r > 0) {
		if (json) {
			const char *c;

			printf("%s{\"instance\": \"%s\", \"control\": \"", first ? "" : ", ", name);
			for (c = sock; *c; c++)
				if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\')
					printf("\\u%04x", (unsigned char)*c);
				else
					putchar(*c);
			printf("\", \"show\": ");
		} else {
			printf("%sinstance: %s (%s)\n", first ? "" : "\n", name, sock);
		}
		if ((rc = touctl_body(&in, true)) == 0)
			fputs(json ? "}" : "\n", stdout);
	} else {
		rc = touctl_reply(sock, in.buf, in.len);
	}
	free(in.buf);
	return rc ? 1 : 0;
}

/* show --all [--json]: every toud whose control socket is in the directory
 * of the socket (the default's: /run/toud), in name order; the default
 * toud's (toud.sock) is the instance "toud".  Files that are not sockets,
 * or whose names no instance can have, are passed over. */
static int
touctl_show_all(const char *path, bool json)
{
	char dir[4096], sock[4096 + 258], name[CONF_NAME_MAX + 1];
	const char *slash = strrchr(path, '/');
	struct dirent **list = NULL;
	int n, i, rc = 0, shown = 0;
	size_t l;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
	    slash ? path : ".");
	if ((n = scandir(dir[0] ? dir : "/", &list, NULL, alphasort)) < 0) {
		fprintf(stderr, "touctl: show --all: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (json)
		printf("{\"instances\": [");
	for (i = 0; i < n; i++) {
		struct stat st;

		l = strlen(list[i]->d_name);
		if (l > 5 && l - 5 <= CONF_NAME_MAX &&
		    strcmp(list[i]->d_name + l - 5, ".sock") == 0) {
			snprintf(name, sizeof(name), "%.*s", (int)(l - 5), list[i]->d_name);
			snprintf(sock, sizeof(sock), "%s/%s", dir, list[i]->d_name);
			if (conf_instance_valid(name) && stat(sock, &st) == 0 &&
			    S_ISSOCK(st.st_mode)) {
				int r = touctl_show_one(sock, name, json, shown == 0);

				if (r == 0)
					shown++;
				else if (r > 0)
					rc = 1;
			}
		}
		free(list[i]);
	}
	free(list);
	if (json)
		printf("]}\n");
	else if (!shown)
		fprintf(stderr, "touctl: show --all: no toud is running (no socket in %s)\n", dir);
	return fflush(stdout) == EOF || ferror(stdout) ? 1 : rc;
}

static int
touctl_show(const char *path, int argc, char **argv)
{
	const char *peer = NULL;
	char req[64];
	bool json = false, all = false;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--all") == 0) {
			all = true;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "touctl: show: unknown option '%s'\n", argv[i]);
			usage(stderr, 2);
		} else if (peer) {
			fprintf(stderr, "touctl: show: more than one peer\n");
			usage(stderr, 2);
		} else if (!touctl_valid_peer(argv[i])) {
			fprintf(stderr, "touctl: show: invalid peer name '%s'\n", argv[i]);
			exit(2);
		} else {
			peer = argv[i];
		}
	}
	if (all && peer) {
		fprintf(stderr, "touctl: show: --all shows every peer of every instance\n");
		usage(stderr, 2);
	}
	if (all)
		return touctl_show_all(path, json);
	snprintf(req, sizeof(req), "show%s%s%s\n", peer ? " " : "", peer ? peer : "",
	    json ? " --json" : "");
	return touctl_run(path, req);
}

/* ping PEER [-c N]: N path challenges a second apart over the peer's
 * current path (through the tunnel's encryption, not the inner network);
 * exit 0 if any was answered. */
static int
touctl_ping(const char *path, int argc, char **argv)
{
	const char *peer = NULL;
	unsigned long count = 3, i, answered = 0;
	char req[96], *reply, *end;
	size_t len;
	int a;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "-c") == 0 && a + 1 < argc) {
			errno = 0;
			count = strtoul(argv[++a], &end, 10);
			if (errno || *end || count == 0 || count > 100000 || argv[a][0] == '-') {
				fprintf(stderr, "touctl: ping: -c wants a count from 1, not '%s'\n",
				    argv[a]);
				exit(2);
			}
		} else if (argv[a][0] == '-' || peer) {
			usage(stderr, 2);
		} else if (!touctl_valid_peer(argv[a])) {
			fprintf(stderr, "touctl: ping: invalid peer name '%s'\n", argv[a]);
			exit(2);
		} else {
			peer = argv[a];
		}
	}
	if (!peer)
		usage(stderr, 2);
	snprintf(req, sizeof(req), "ping %s\n", peer);
	for (i = 0; i < count; i++) {
		bool lost;

		if (i > 0)
			sleep(1);
		len = touctl_request(path, req, &reply);
		lost = strncmp(reply, "error: " CONTROL_PING_LOST,
		    strlen("error: " CONTROL_PING_LOST)) == 0;
		if (touctl_reply(path, reply, len) == 0)
			answered++;
		free(reply);
		if (answered < i + 1 && !lost) {
			/* No peer, no session: nothing went out, and asking
			 * again changes nothing; the error said it all. */
			if (i == 0)
				return 1;
			i++;
			break;
		}
	}
	printf("%lu sent, %lu answered\n", i, answered);
	return answered ? 0 : 1;
}

/* export from the configuration file and key files, without the daemon. */
static int
touctl_export_file(const char *file, const char *name, const char *endpoint)
{
	uint8_t fp[KEYS_FP_LEN];
	char err[600], *out;
	struct conf *c = NULL;
	struct conf_error ce;
	bool dtls;

	if (conf_load(file, false, &c, &ce, NULL, NULL) < 0) {
		fprintf(stderr, "touctl: export: %s\n", conf_error_fmt(&ce, err, sizeof(err)));
		return 1;
	}
	dtls = c->iface.encryption == CONF_ENC_DTLS;
	if (dtls && keys_cert_fingerprint(c->iface.certificate, fp, err, sizeof(err)) < 0) {
		fprintf(stderr, "touctl: export: %s\n", err);
		conf_free(c);
		return 1;
	}
	out = export_render(c, dtls ? fp : NULL, name, endpoint, err, sizeof(err));
	conf_free(c);
	if (!out) {
		fprintf(stderr, "touctl: export: %s\n", err);
		return 1;
	}
	fputs(out, stdout);
	free(out);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

/* export [-c FILE] [--name NAME] [--endpoint HOST[:PORT]]: the daemon
 * writes the section (the words are checked here so they travel in one
 * line); with -c, or when no daemon listens, it is made from the file. */
static int
touctl_export(const char *path, const char *conf_file, int argc, char **argv)
{
	const char *name = NULL, *endpoint = NULL, *file = NULL;
	char req[512], *reply;
	size_t len;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
			name = argv[++i];
			if (!touctl_valid_peer(name)) {
				fprintf(stderr, "touctl: export: invalid peer name '%s' "
				    "(1 to %d of A-Z a-z 0-9 . _ -)\n", name, CONF_NAME_MAX);
				exit(2);
			}
		} else if (strcmp(argv[i], "--endpoint") == 0 && i + 1 < argc) {
			const char *e;

			endpoint = argv[++i];
			for (e = endpoint; *e; e++)
				if ((unsigned char)*e <= ' ' || *e == 0x7f)
					break;
			if (!*endpoint || *e || strlen(endpoint) > 255) {
				fprintf(stderr, "touctl: export: invalid endpoint '%s'\n", endpoint);
				exit(2);
			}
		} else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			file = argv[++i];
		} else {
			fprintf(stderr, "touctl: export: unexpected '%s'\n", argv[i]);
			usage(stderr, 2);
		}
	}
	if (file)
		return touctl_export_file(file, name, endpoint);
	snprintf(req, sizeof(req), "export%s%s%s%s\n", name ? " --name " : "", name ? name : "",
	    endpoint ? " --endpoint " : "", endpoint ? endpoint : "");
	len = touctl_request_soft(path, req, &reply, true);
	if (len == (size_t)-1) {
		if (errno != ENOENT && errno != ECONNREFUSED)
			touctl_fail(path, errno);
		fprintf(stderr, "touctl: export: toud is not running: reading %s\n", conf_file);
		return touctl_export_file(conf_file, name, endpoint);
	}
	i = touctl_reply(path, reply, len);
	free(reply);
	return i;
}

static double
touctl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A string field of the (only) peer object of a `show PEER --json` reply,
 * decoded, control characters shown as '?'; null gives "".  False when
 * the field is missing. */
static bool
touctl_json_peer_str(const char *json, const char *key, char *out, size_t len)
{
	const char *p = strstr(json, "\"peers\"");
	char pat[64];
	size_t o = 0;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	if (!p || !(p = strstr(p, pat)))
		return false;
	p += strlen(pat);
	out[0] = '\0';
	if (strncmp(p, "null", 4) == 0)
		return true;
	if (*p++ != '"')
		return false;
	while (*p && *p != '"') {
		unsigned char ch = (unsigned char)*p++;

		if (ch == '\\') {
			ch = (unsigned char)*p++;
			switch (ch) {
			case 'b': case 'f': case 'n': case 'r': case 't':
				ch = '?';
				break;
			case 'u': {
				unsigned v = 0;
				int k;

				for (k = 0; k < 4 && p[k]; k++)
					v = v * 16 + (unsigned)(p[k] <= '9' ? p[k] - '0' :
					    (p[k] | 0x20) - 'a' + 10);
				if (k < 4)
					return false;
				p += 4;
				ch = v >= 0x20 && v < 0x7f ? (unsigned char)v : '?';
				break;
			}
			case '\0':
				return false;
			default:        /* \" \\ \/ */
				break;
			}
		} else if (ch < 0x20 || ch == 0x7f) {
			ch = '?';
		}
		if (o + 1 < len)
			out[o++] = (char)ch;
	}
	out[o] = '\0';
	return *p == '"';
}

/* Ask toud to handshake with peer now (wait): "" when it started one or
 * the peer is up, else toud's reason why it cannot, to say at the end. */
static void
touctl_wait_handshake(const char *path, const char *peer, char *why, size_t len)
{
	char req[64], *reply;
	size_t n;

	snprintf(req, sizeof(req), "handshake %s\n", peer);
	why[0] = '\0';
	if ((n = touctl_request_soft(path, req, &reply, true)) == (size_t)-1)
		return;                 /* asked again at the next look */
	if (strncmp(reply, "error: ", 7) == 0) {
		snprintf(why, len, "%s", reply + 7);
		why[strcspn(why, "\n")] = '\0';
	}
	free(reply);
}

/* wait PEER [--timeout S]: poll `show PEER --json` until its state is
 * "up", having asked toud once to handshake with it now.  A daemon that
 * is not (yet) listening is waited for too; an error reply (no such
 * peer) ends the wait at once. */
static int
touctl_wait(const char *path, int argc, char **argv)
{
	const char *peer = NULL;
	double timeout = TOUCTL_WAIT_DEFAULT_S, deadline, left;
	char req[64], st[32] = "", last_error[400] = "", why[300] = "";
	int i, conn_err = 0;
	bool answered = false, asked = false;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
			char *end;

			errno = 0;
			timeout = strtod(argv[++i], &end);
			if (errno || end == argv[i] || *end || !isfinite(timeout) || timeout < 0 ||
			    timeout > 31536000) {
				fprintf(stderr, "touctl: wait: invalid timeout '%s' (seconds, 0: no "
				    "limit)\n", argv[i]);
				exit(2);
			}
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "touctl: wait: unknown option '%s'\n", argv[i]);
			usage(stderr, 2);
		} else if (peer) {
			fprintf(stderr, "touctl: wait: more than one peer\n");
			usage(stderr, 2);
		} else if (!touctl_valid_peer(argv[i])) {
			fprintf(stderr, "touctl: wait: invalid peer name '%s'\n", argv[i]);
			exit(2);
		} else {
			peer = argv[i];
		}
	}
	if (!peer) {
		fprintf(stderr, "touctl: wait: which peer?\n");
		usage(stderr, 2);
	}
	snprintf(req, sizeof(req), "show %s --json\n", peer);
	deadline = touctl_now() + timeout;
	for (;;) {
		char *reply;
		size_t len = touctl_request_soft(path, req, &reply, true);

		if (len == (size_t)-1) {
			if (errno != ENOENT && errno != ECONNREFUSED && errno != EAGAIN)
				touctl_fail(path, errno);
			conn_err = errno;       /* toud is not there yet, or restarts */
		} else if (strncmp(reply, "ok\n", 3) != 0) {
			/* An error (no such peer) or a malformed reply. */
			i = touctl_reply(path, reply, len);
			free(reply);
			return i ? i : 1;
		} else {
			answered = true;
			if (!touctl_json_peer_str(reply, "state", st, sizeof(st))) {
				fprintf(stderr, "touctl: %s: malformed reply\n", path);
				free(reply);
				return 1;
			}
			if (!touctl_json_peer_str(reply, "last_error", last_error,
			    sizeof(last_error)))
				last_error[0] = '\0';
			free(reply);
			if (strcmp(st, "up") == 0)
				return 0;
			if (!asked) {
				touctl_wait_handshake(path, peer, why, sizeof(why));
				asked = true;
			}
		}
		left = deadline - touctl_now();
		if (timeout > 0 && left <= 0)
			break;
		left = timeout > 0 && left < TOUCTL_WAIT_POLL_MS / 1000.0 ? left :
		    TOUCTL_WAIT_POLL_MS / 1000.0;
		usleep((useconds_t)(left * 1e6));
	}
	if (!answered)
		fprintf(stderr, "touctl: wait: toud did not answer on %s within %g s: %s\n", path,
		    timeout, strerror(conn_err));
	else
		fprintf(stderr, "touctl: wait: peer '%s' is not up after %g s (state %s%s%s%s%s)\n",
		    peer, timeout, st, last_error[0] ? "; last error: " : "", last_error,
		    why[0] ? "; " : "", why);
	return 1;
}

/* genkey: DIR is made (0700) if missing; an existing identity is
 * replaced only with --force, since every peer pins its fingerprint. */
static int
touctl_genkey_prepare(const char *dir, bool force)
{
	static const char *const names[] = { "key.pem", "cert.pem" };
	char path[4096];
	struct stat st;
	size_t i;

	if (stat(dir, &st) < 0) {
		if (errno != ENOENT || mkdir(dir, 0700) < 0) {
			fprintf(stderr, "touctl: genkey: cannot create directory %s: %s\n", dir,
			    strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "touctl: genkey: %s is not a directory\n", dir);
		return -1;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (lstat(path, &st) < 0)
			continue;
		if (!force) {
			fprintf(stderr, "touctl: genkey: %s exists: it is this node's identity, "
			    "which every peer pins; to replace it (and re-pin it on every peer) "
			    "run touctl genkey --force %s\n", path, dir);
			return -1;
		}
		fprintf(stderr, "touctl: genkey: replacing %s (--force)\n", path);
	}
	return 0;
}

/* genkey DIR / fingerprint CERT: print "sha256:<64 hex>". */
static int
touctl_keys(const char *cmd, const char *arg, bool force)
{
	uint8_t fp[DTLS_FP_LEN];
	char line[7 + 2 * DTLS_FP_LEN + 1], err[512];
	int rc;

	if (strcmp(cmd, "genkey") == 0) {
		if (touctl_genkey_prepare(arg, force) < 0)
			return 1;
		rc = keys_genkey(arg, fp, err, sizeof(err));
	}
	else
		rc = keys_cert_fingerprint(arg, fp, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "touctl: %s: %s\n", cmd, err);
		return 1;
	}
	keys_fp_format(fp, line);
	printf("%s\n", line);
	return 0;
}

/* genpsk [FILE]: a new preshared key on stdout, or in a new file FILE. */
static int
touctl_genpsk(const char *file)
{
	char text[PSK_B64_LEN + 2], err[512];
	int rc;

	if (psk_generate(text) < 0) {
		fprintf(stderr, "touctl: genpsk: no random bytes\n");
		return 1;
	}
	if (file)
		rc = psk_write_file(file, text, err, sizeof(err));
	else
		rc = fputs(text, stdout) == EOF || fflush(stdout) == EOF ? -EIO : 0;
	explicit_bzero(text, sizeof(text));
	if (rc < 0) {
		fprintf(stderr, "touctl: genpsk: %s\n", file ? err : strerror(-rc));
		return 1;
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	const char *path = CONF_DEFAULT_CONTROL, *conf_file = CONF_DEFAULT_FILE;
	static char isock[108], ifile[4096];
	int ch;

	/* '+': options end at the command, so "show --json" reaches it. */
	while ((ch = getopt(argc, argv, "+hi:s:V")) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout, 0);
			break;
		case 'i':
			if (!conf_instance_valid(optarg)) {
				fprintf(stderr, "touctl: -i: invalid instance name '%s'\n", optarg);
				exit(2);
			}
			conf_instance_paths(optarg, ifile, sizeof(ifile), isock, sizeof(isock));
			path = isock;
			conf_file = ifile;
			break;
		case 's':
			path = optarg;
			break;
		case 'V':
			printf("touctl %s\n", PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr, 2);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(stderr, 2);

	if (strcmp(argv[0], "show") == 0)
		return touctl_show(path, argc, argv);
	if (strcmp(argv[0], "ping") == 0)
		return touctl_ping(path, argc, argv);
	if (strcmp(argv[0], "reload") == 0) {
		if (argc != 1)
			usage(stderr, 2);
		return touctl_run(path, "reload\n");
	}
	if (strcmp(argv[0], "metrics") == 0) {
		if (argc != 1)
			usage(stderr, 2);
		return touctl_run(path, "metrics\n");
	}
	if (strcmp(argv[0], "wait") == 0)
		return touctl_wait(path, argc, argv);
	if (strcmp(argv[0], "export") == 0)
		return touctl_export(path, conf_file, argc, argv);
	if (strcmp(argv[0], "genpsk") == 0) {
		if (argc > 2 || (argc == 2 && argv[1][0] == '-'))
			usage(stderr, 2);
		return touctl_genpsk(argc == 2 ? argv[1] : NULL);
	}
	if (strcmp(argv[0], "genkey") == 0 && argc == 3 && strcmp(argv[1], "--force") == 0)
		return touctl_keys(argv[0], argv[2], true);
	if (strcmp(argv[0], "genkey") == 0 || strcmp(argv[0], "fingerprint") == 0) {
		if (argc != 2 || argv[1][0] == '-')
			usage(stderr, 2);
		return touctl_keys(argv[0], argv[1], false);
	}
	fprintf(stderr, "touctl: unknown command '%s'\n", argv[0]);
	usage(stderr, 2);
}
