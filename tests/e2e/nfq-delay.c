/* nfq-delay.c - delay and reorder the packets of one NFQUEUE queue.
 *
 * The kernel here has no netem, so the end-to-end tests send the router's
 * forwarded datagrams to an NFQUEUE queue and let this program hold their
 * verdicts: every packet is released DELAY ms after it arrived, every Nth
 * one EXTRA ms later still, which reorders it behind the packets that
 * follow.  NFQUEUE allows verdicts in any order, so only the ids are kept
 * (no packet data is copied to user space).
 *
 *   nfq-delay [-q QUEUE] [-d DELAY_MS] [-n N] [-x EXTRA_MS] [-t SECONDS]
 *
 * It runs until SIGTERM/SIGINT or for SECONDS, then accepts whatever it
 * still holds and prints one line of counters:
 *   nfq-delay: packets P late L dropped D
 * It prints "nfq-delay: ready" once the queue is bound.
 *
 * Built by make check (check_PROGRAMS; needs libnetfilter-queue-dev at
 * configure time); the tests find it through TOUD_NFQ_DELAY. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define FIFO_CAP 65536u                 /* a power of two */
#define QUEUE_MAXLEN 32768u

struct held {
	uint32_t id;
	uint64_t due_us;
};

/* Packets of one class share the same delay, so their due times grow with
 * their arrival: a FIFO per class keeps them sorted for free. */
struct fifo {
	struct held v[FIFO_CAP];
	unsigned head, n;
};

struct nfq_delay {
	struct nfq_q_handle *qh;
	struct fifo normal, late;
	uint64_t delay_us, extra_us;
	unsigned every;
	uint64_t packets, late_n, dropped, failed;
};

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int
fifo_push(struct fifo *f, uint32_t id, uint64_t due_us)
{
	if (f->n == FIFO_CAP)
		return -ENOBUFS;
	f->v[(f->head + f->n) & (FIFO_CAP - 1)] = (struct held){ id, due_us };
	f->n++;
	return 0;
}

static const struct held *
fifo_peek(const struct fifo *f)
{
	return f->n ? &f->v[f->head] : NULL;
}

static void
fifo_pop(struct fifo *f)
{
	f->head = (f->head + 1) & (FIFO_CAP - 1);
	f->n--;
}

static void
verdict(struct nfq_delay *d, uint32_t id, uint32_t v)
{
	if (nfq_set_verdict(d->qh, id, v, 0, NULL) < 0)
		d->failed++;
}

static int
on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *arg)
{
	struct nfq_delay *d = arg;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	uint64_t due = now_us() + d->delay_us;
	struct fifo *f = &d->normal;
	uint32_t id;

	(void)qh;
	(void)msg;
	if (!ph)
		return 0;
	id = ntohl(ph->packet_id);
	d->packets++;
	if (d->every && d->packets % d->every == 0) {
		f = &d->late;
		due += d->extra_us;
		d->late_n++;
	}
	if (fifo_push(f, id, due) < 0) {
		/* Full: behave like a router whose buffer overflowed. */
		d->dropped++;
		verdict(d, id, NF_DROP);
	}
	return 0;
}

/* Release every packet that is due (all of them when `all`); return the
 * time of the next one, or 0 if nothing is held. */
static uint64_t
release(struct nfq_delay *d, int all)
{
	uint64_t now = now_us();

	for (;;) {
		const struct held *a = fifo_peek(&d->normal), *b = fifo_peek(&d->late);
		struct fifo *f;
		const struct held *h;

		if (!a && !b)
			return 0;
		f = !b || (a && a->due_us <= b->due_us) ? &d->normal : &d->late;
		h = fifo_peek(f);
		if (!all && h->due_us > now)
			return h->due_us;
		verdict(d, h->id, NF_ACCEPT);
		fifo_pop(f);
	}
}

static void
usage(void)
{
	fprintf(stderr, "usage: nfq-delay [-q QUEUE] [-d DELAY_MS] [-n N] [-x EXTRA_MS] [-t SECONDS]\n");
	exit(2);
}

static unsigned long
number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end)
		usage();
	return v;
}

int
main(int argc, char **argv)
{
	static struct nfq_delay d;      /* two 1 MiB FIFOs: not on the stack */
	static char buf[1 << 16];
	struct nfq_handle *h;
	struct sigaction sa;
	unsigned long queue = 0, seconds = 0;
	uint64_t end_us = 0, next;
	int fd, c, one = 1, rcvbuf = 16 << 20;

	while ((c = getopt(argc, argv, "q:d:n:x:t:")) != -1) {
		switch (c) {
		case 'q':
			queue = number(optarg);
			break;
		case 'd':
			d.delay_us = 1000ULL * number(optarg);
			break;
		case 'n':
			d.every = (unsigned)number(optarg);
			break;
		case 'x':
			d.extra_us = 1000ULL * number(optarg);
			break;
		case 't':
			seconds = number(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || queue > 65535)
		usage();

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;      /* no SA_RESTART: ppoll must return */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (!(h = nfq_open())) {
		perror("nfq-delay: nfq_open");
		return 1;
	}
	if (!(d.qh = nfq_create_queue(h, (uint16_t)queue, on_packet, &d))) {
		perror("nfq-delay: nfq_create_queue");
		return 1;
	}
	if (nfq_set_mode(d.qh, NFQNL_COPY_META, 0) < 0 ||
	    nfq_set_queue_maxlen(d.qh, QUEUE_MAXLEN) < 0) {
		perror("nfq-delay: queue set-up");
		return 1;
	}
	fd = nfq_fd(h);
	/* Root may exceed rmem_max: room for a burst of queued packets. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	/* A burst that overruns the socket loses those packets in the kernel;
	 * carry on rather than fail on ENOBUFS. */
	setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one));
	if (seconds)
		end_us = now_us() + 1000000ULL * seconds;
	printf("nfq-delay: ready\n");
	fflush(stdout);

	while (!stop) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct timespec ts, *tsp = NULL;
		uint64_t now = now_us(), wake;

		next = release(&d, 0);
		wake = next;
		if (end_us && (!wake || end_us < wake))
			wake = end_us;
		if (end_us && now >= end_us)
			break;
		if (wake) {
			uint64_t left = wake > now ? wake - now : 0;
			ts.tv_sec = (time_t)(left / 1000000);
			ts.tv_nsec = (long)(left % 1000000) * 1000;
			tsp = &ts;
		}
		if (ppoll(&pfd, 1, tsp, NULL) < 0) {
			if (errno == EINTR)
				continue;
			perror("nfq-delay: ppoll");
			break;
		}
		if (!(pfd.revents & POLLIN))
			continue;
		for (;;) {
			ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EINTR || errno == ENOBUFS)
					continue;
				break;          /* EAGAIN: drained */
			}
			nfq_handle_packet(h, buf, (int)n);
		}
	}
	release(&d, 1);
	printf("nfq-delay: packets %llu late %llu dropped %llu failed %llu\n",
	    (unsigned long long)d.packets, (unsigned long long)d.late_n,
	    (unsigned long long)d.dropped, (unsigned long long)d.failed);
	nfq_destroy_queue(d.qh);
	nfq_close(h);
	return 0;
}
