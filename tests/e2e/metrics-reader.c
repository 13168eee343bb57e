/* metrics-reader.c - the slow scraper attack on the metrics endpoint, for
 * the end-to-end test of its readers (t62).
 *
 *   metrics-reader HOST PORT TOKEN-FILE N SECONDS
 *
 * Opens N TCP connections to HOST:PORT, each sending a request for the
 * whole text (with the bearer token read from TOKEN-FILE, so the largest
 * reply) and then reading nothing, its receive buffer kept small so the
 * reply stays in the server; holds them SECONDS, then closes them.  Prints
 * "connected K of N" once every connection was tried (refused ones, or
 * those the server closed, count as tried) and "done" at the end.  Exits
 * 0, or 2 on bad arguments. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_READERS 4096
#define REQ_MAX 1024

static void
usage(void)
{
	fprintf(stderr, "usage: metrics-reader HOST PORT TOKEN-FILE N SECONDS\n");
	exit(2);
}

/* The token: the file's first line. */
static int
read_token(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	n = strcspn(buf, "\r\n");
	buf[n] = '\0';
	return n > 0 ? 0 : -1;
}

/* One connection that sends req and will read nothing: its fd, or -1. */
static int
reader_open(const struct addrinfo *ai, const char *req, size_t len)
{
	struct timeval tv = { .tv_sec = 10 };
	int fd, rcvbuf = 4096;
	size_t off = 0;
	ssize_t w;

	if ((fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol)) < 0)
		return -1;
	/* a small receive buffer: the reply stays in the server, not in the kernel */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0)
		goto fail;
	while (off < len) {
		if ((w = send(fd, req + off, len - off, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		off += (size_t)w;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int
main(int argc, char **argv)
{
	static int fds[MAX_READERS];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char token[512], req[REQ_MAX];
	struct timespec hold;
	double secs;
	long n, i, ok = 0;
	char *end;
	int len, rc;

	if (argc != 6)
		usage();
	n = strtol(argv[4], &end, 10);
	if (*end || n < 1 || n > MAX_READERS)
		usage();
	secs = strtod(argv[5], &end);
	if (*end || secs < 0 || secs > 3600)
		usage();
	if (read_token(argv[3], token, sizeof(token)) < 0) {
		fprintf(stderr, "metrics-reader: no token in %s\n", argv[3]);
		return 2;
	}
	if ((rc = getaddrinfo(argv[1], argv[2], &hints, &ai)) != 0) {
		fprintf(stderr, "metrics-reader: %s:%s: %s\n", argv[1], argv[2], gai_strerror(rc));
		return 2;
	}
	len = snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nHost: %s:%s\r\n"
	    "Authorization: Bearer %s\r\n\r\n", argv[1], argv[2], token);
	if (len < 0 || (size_t)len >= sizeof(req)) {
		fprintf(stderr, "metrics-reader: request too long\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		if ((fds[i] = reader_open(ai, req, (size_t)len)) >= 0)
			ok++;
	freeaddrinfo(ai);
	printf("connected %ld of %ld\n", ok, n);
	fflush(stdout);
	hold.tv_sec = (time_t)secs;
	hold.tv_nsec = (long)((secs - (double)hold.tv_sec) * 1e9);
	while (nanosleep(&hold, &hold) < 0 && errno == EINTR)
		;
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	printf("done\n");
	fflush(stdout);
	return 0;
}
