/* touctl.c - the command line client of toud's control socket.
 *
 * It sends one request line and prints the reply: the body of an "ok" reply
 * to stdout, the message of an "error: " reply to stderr. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "conf.h"
#include "dtls.h"

#define TOUCTL_TIMEOUT_S 30             /* a reload may resolve host names */
#define TOUCTL_REPLY_MAX (64u << 20)

static void usage(FILE *, int) __attribute__((noreturn));

static void
usage(FILE *f, int status)
{
	fprintf(f,
	    "usage: touctl [-hV] [-s socket | -i name] command [args]\n"
	    "commands:\n"
	    "  show [PEER] [--json]   interface and peer state\n"
	    "  reload                 re-read the configuration (as SIGHUP); fails if refused\n"
	    "  ping PEER [-c N]       path challenges to the peer, with round-trip times\n"
	    "  genkey [--force] DIR   write DIR/key.pem and DIR/cert.pem, print the fingerprint\n"
	    "  fingerprint CERT       print a certificate's fingerprint\n"
	    "default socket: %s; -i NAME: %s/NAME.sock (toud -i NAME)\n",
	    CONF_DEFAULT_CONTROL, CONF_INSTANCE_CONTROL_DIR);
	exit(status);
}

/* Peer names are [A-Za-z0-9._-]; anything else cannot name a peer and
 * could not travel in the one-line request anyway. */
static bool
touctl_valid_peer(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > CONF_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return false;
	}
	return true;
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

static void
touctl_fail(const char *path, int e)
{
	fprintf(stderr, "touctl: %s: %s%s\n", path, strerror(e),
	    e == ENOENT || e == ECONNREFUSED ? " (is toud running?)" : "");
	exit(1);
}

/* Send the request and read the whole reply; returns its length. */
static size_t
touctl_request(const char *path, const char *req, char **out)
{
	size_t len = strlen(req), off = 0, cap = 4096, n_read = 0;
	char *buf;
	ssize_t n;
	int fd;

	if ((fd = touctl_connect(path)) < 0)
		touctl_fail(path, errno);
	while (off < len) {
		n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;  /* toud may have replied and closed: read that */
		off += (size_t)n;
	}
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

static int
touctl_run(const char *path, const char *req)
{
	char *reply;
	size_t len = touctl_request(path, req, &reply);
	int rc = touctl_reply(path, reply, len);

	free(reply);
	return rc;
}

static int
touctl_show(const char *path, int argc, char **argv)
{
	const char *peer = NULL;
	char req[64];
	bool json = false;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
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
		lost = strncmp(reply, "error: no answer ", 17) == 0;
		if (touctl_reply(path, reply, len) == 0)
			answered++;
		free(reply);
		if (answered < i + 1 && !lost) {
			i++;            /* no peer, no session: asking again changes nothing */
			break;
		}
	}
	printf("%lu sent, %lu answered\n", i, answered);
	return answered ? 0 : 1;
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

int
main(int argc, char *argv[])
{
	const char *path = CONF_DEFAULT_CONTROL;
	static char isock[108];
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
			conf_instance_paths(optarg, NULL, 0, isock, sizeof(isock));
			path = isock;
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
