/* udp-flood.c - send UDP datagrams to one address as fast as the kernel
 * takes them, for the end-to-end test of a flooded TUN (t23).
 *
 * Sent to a peer's tunnel address, every datagram goes into toud's TUN
 * queue; batches of sendmmsg(2) make each one cheap for the sender, so one
 * process keeps the queue fuller than toud can empty it.  What the sender
 * achieves is not the point; that the daemon stays responsive while its
 * queue is never empty is.
 *
 *   udp-flood -d ADDR [-p PORT] [-l LEN] [-t SECONDS]
 *
 * It runs until SIGTERM/SIGINT or for SECONDS (default 30), prints
 * "udp-flood: ready" once the socket is set up and, at the end, one line:
 *   udp-flood: sent N errors E seconds S */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE            /* sendmmsg */
#endif
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#define BATCH 64
#define MAX_LEN 65507

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
usage(void)
{
	fprintf(stderr, "usage: udp-flood -d ADDR [-p PORT] [-l LEN] [-t SECONDS]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static uint8_t payload[MAX_LEN];
	struct sockaddr_storage ss;
	struct mmsghdr msgs[BATCH];
	struct iovec iov;
	struct sigaction sa;
	const char *dst = NULL;
	unsigned long port = 9, len = 1200;
	double secs = 30, t0;
	uint64_t sent = 0, errors = 0;
	socklen_t sslen;
	int c, fd, i, n;

	while ((c = getopt(argc, argv, "d:p:l:t:")) != -1) {
		switch (c) {
		case 'd':
			dst = optarg;
			break;
		case 'p':
			port = strtoul(optarg, NULL, 10);
			break;
		case 'l':
			len = strtoul(optarg, NULL, 10);
			break;
		case 't':
			secs = strtod(optarg, NULL);
			break;
		default:
			usage();
		}
	}
	if (!dst || port < 1 || port > 65535 || len > MAX_LEN || secs <= 0)
		usage();

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, dst, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
		sslen = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, dst, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
		sslen = sizeof(struct sockaddr_in6);
	} else {
		fprintf(stderr, "udp-flood: not an address: %s\n", dst);
		return 2;
	}
	fd = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sslen) < 0) {
		fprintf(stderr, "udp-flood: %s: %s\n", dst, strerror(errno));
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	for (i = 0; i < (int)len; i++)
		payload[i] = (uint8_t)i;
	iov.iov_base = payload;
	iov.iov_len = len;
	memset(msgs, 0, sizeof(msgs));
	for (i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}

	printf("udp-flood: ready\n");
	fflush(stdout);
	t0 = now_s();
	while (!stop && now_s() - t0 < secs) {
		n = sendmmsg(fd, msgs, BATCH, 0);
		if (n < 0) {
			/* ICMP errors from an earlier datagram, a full queue:
			 * counted, and the flood goes on. */
			if (errno != EINTR)
				errors++;
			continue;
		}
		sent += (uint64_t)n;
	}
	printf("udp-flood: sent %llu errors %llu seconds %.2f\n", (unsigned long long)sent,
	    (unsigned long long)errors, now_s() - t0);
	close(fd);
	return 0;
}
