/* attack.c - the attacker of the handshake tests: a DTLS 1.2 client on
 * memory BIOs that speaks toud's outer framing (16-byte GUE header with a
 * session ID, one record per datagram) but has no key anyone knows, and a
 * spoofer of raw datagrams.  Run it only inside a test's namespaces.
 *
 *   attack replay LOCAL DST PORT RATE SECS
 *       one cookie exchange, then the cookie-carrying ClientHello again and
 *       again, each time under a fresh session ID, RATE a second;
 *   attack fresh LOCAL DST PORT RATE SECS
 *       RATE a second a new handshake with its own cookie exchange, left
 *       half-open after the second ClientHello;
 *   attack spoof SRC SPORT DST PORT RATE SECS
 *       29-byte datagrams (GUE header + an empty handshake record header)
 *       from the forged source SRC:SPORT, through a raw socket.
 *
 * It prints one JSON object: datagrams and bytes (UDP payload) sent and
 * received, and how many ClientHellos earned a HelloVerifyRequest. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#define GUE_LEN 16
#define MAXDG 65536

struct stats {
	unsigned long sent, sent_bytes, rcvd, rcvd_bytes, hvr, flights;
};

static struct stats st;
static int sock = -1;
static struct sockaddr_in dst;

static void
die(const char *what)
{
	fprintf(stderr, "attack: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t
fresh_sid(void)
{
	uint64_t v = 0;

	while (v == 0)
		if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
			exit(2);
	return v;
}

static void
send_rec(uint64_t sid, const uint8_t *rec, size_t len)
{
	uint8_t d[MAXDG];
	int i;

	if (len + GUE_LEN > sizeof(d))
		return;
	d[0] = 0x03;
	d[1] = 0x3b;
	d[2] = 0x00;
	d[3] = 0x01;
	d[4] = 0x60;
	d[5] = d[6] = d[7] = 0;
	for (i = 0; i < 8; i++)
		d[8 + i] = (uint8_t)(sid >> (56 - 8 * i));
	memcpy(d + GUE_LEN, rec, len);
	if (sendto(sock, d, GUE_LEN + len, 0, (struct sockaddr *)&dst, sizeof(dst)) > 0) {
		st.sent++;
		st.sent_bytes += GUE_LEN + len;
	}
}

/* Receive for up to ms milliseconds (0: only what is there); the record of
 * the first datagram for sid goes to rec (if not NULL).  Returns its
 * length, or 0. */
static size_t
drain(int ms, uint64_t sid, uint8_t *rec, size_t cap)
{
	uint8_t d[MAXDG];
	double end = now_s() + ms / 1000.0;
	size_t got = 0;

	for (;;) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		int left = (int)((end - now_s()) * 1000);
		ssize_t n;
		uint64_t id = 0;
		int i;

		if (poll(&pfd, 1, got || left < 0 ? 0 : left) <= 0)
			return got;
		n = recv(sock, d, sizeof(d), MSG_DONTWAIT);
		if (n <= 0)
			continue;
		st.rcvd++;
		st.rcvd_bytes += (unsigned long)n;
		if (n < GUE_LEN + 13)
			continue;
		for (i = 0; i < 8; i++)
			id = id << 8 | d[8 + i];
		/* handshake record, HelloVerifyRequest (type 3) */
		if (d[GUE_LEN] == 22 && d[GUE_LEN + 13] == 3)
			st.hvr++;
		else if (d[GUE_LEN] == 22 && d[GUE_LEN + 13] == 2)
			st.flights++;
		if (rec && !got && id == sid && (size_t)n - GUE_LEN <= cap) {
			got = (size_t)n - GUE_LEN;
			memcpy(rec, d + GUE_LEN, got);
		}
	}
}

static SSL_CTX *
client_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(DTLS_client_method());

	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION) ||
	    !SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:"
	    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305") ||
	    !SSL_CTX_set1_groups_list(ctx, "X25519:P-256")) {
		fprintf(stderr, "attack: openssl setup failed\n");
		exit(2);
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	return ctx;
}

/* Run the client until it has written something; copy that out. */
static size_t
client_step(SSL *ssl, BIO *wbio, uint8_t *out, size_t cap)
{
	int n;

	SSL_do_handshake(ssl);
	ERR_clear_error();
	n = BIO_read(wbio, out, (int)cap);
	return n > 0 ? (size_t)n : 0;
}

/* One cookie exchange under sid: the second ClientHello in ch2 (its
 * length), or 0 if no HelloVerifyRequest came. */
static size_t
cookie_exchange(SSL_CTX *ctx, uint64_t sid, uint8_t *ch2, size_t cap, int wait_ms)
{
	SSL *ssl = SSL_new(ctx);
	BIO *rbio = BIO_new(BIO_s_mem()), *wbio = BIO_new(BIO_s_mem());
	uint8_t rec[MAXDG];
	size_t n, got = 0;

	if (!ssl || !rbio || !wbio)
		exit(2);
	BIO_set_mem_eof_return(rbio, -1);
	SSL_set_bio(ssl, rbio, wbio);
	SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
	DTLS_set_link_mtu(ssl, 1400);
	SSL_set_connect_state(ssl);
	n = client_step(ssl, wbio, rec, sizeof(rec));
	if (n) {
		send_rec(sid, rec, n);
		n = drain(wait_ms, sid, rec, sizeof(rec));
		if (n) {
			BIO_write(rbio, rec, (int)n);
			got = client_step(ssl, wbio, ch2, cap);
		}
	}
	SSL_free(ssl);
	return got;
}

static void
report(const char *mode, double secs)
{
	printf("{\"mode\": \"%s\", \"seconds\": %.2f, \"sent\": %lu, \"sent_bytes\": %lu, "
	    "\"received\": %lu, \"received_bytes\": %lu, \"hello_verify\": %lu, "
	    "\"server_hellos\": %lu}\n", mode, secs, st.sent, st.sent_bytes, st.rcvd,
	    st.rcvd_bytes, st.hvr, st.flights);
}

static void
udp_open(const char *local)
{
	struct sockaddr_in la = { .sin_family = AF_INET };

	sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (sock < 0)
		die("socket");
	if (inet_pton(AF_INET, local, &la.sin_addr) != 1)
		die("local address");
	if (bind(sock, (struct sockaddr *)&la, sizeof(la)) < 0)
		die("bind");
}

static int
run_handshakes(int fresh, double rate, double secs)
{
	SSL_CTX *ctx = client_ctx();
	uint8_t ch2[MAXDG];
	size_t n = 0;
	double t0 = now_s(), next = t0;

	if (!fresh && !(n = cookie_exchange(ctx, fresh_sid(), ch2, sizeof(ch2), 2000))) {
		fprintf(stderr, "attack: no HelloVerifyRequest\n");
		return 1;
	}
	while (now_s() - t0 < secs) {
		if (fresh) {
			uint64_t sid = fresh_sid();

			n = cookie_exchange(ctx, sid, ch2, sizeof(ch2), 200);
			if (n)
				send_rec(sid, ch2, n);
		} else {
			send_rec(fresh_sid(), ch2, n);
		}
		next += 1.0 / rate;
		while (now_s() < next)
			drain((int)((next - now_s()) * 1000) + 1, 0, NULL, 0);
	}
	/* The answers (and retransmissions) that are still coming. */
	drain(0, 0, NULL, 0);
	{
		double end = now_s() + 3;

		while (now_s() < end)
			drain(100, 0, NULL, 0);
	}
	report(fresh ? "fresh" : "replay", now_s() - t0);
	SSL_CTX_free(ctx);
	return 0;
}

static uint16_t
csum(const void *p, size_t len, uint32_t sum)
{
	const uint8_t *b = p;

	while (len > 1) {
		sum += (uint32_t)b[0] << 8 | b[1];
		b += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)b[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static int
run_spoof(const char *src, int sport, double rate, double secs)
{
	uint8_t pk[20 + 8 + 29];
	struct iphdr *ip = (struct iphdr *)pk;
	struct udphdr *uh = (struct udphdr *)(pk + 20);
	uint8_t *pl = pk + 28;
	double t0 = now_s(), next = t0;
	int one = 1, fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);

	if (fd < 0)
		die("raw socket");
	if (setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one)) < 0)
		die("IP_HDRINCL");
	while (now_s() - t0 < secs) {
		uint64_t sid = fresh_sid();
		int i;

		memset(pk, 0, sizeof(pk));
		ip->version = 4;
		ip->ihl = 5;
		ip->tot_len = htons(sizeof(pk));
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		if (inet_pton(AF_INET, src, &ip->saddr) != 1)
			die("source address");
		ip->daddr = dst.sin_addr.s_addr;
		ip->check = htons(csum(pk, 20, 0));
		uh->source = htons((uint16_t)sport);
		uh->dest = dst.sin_port;
		uh->len = htons(8 + 29);
		pl[0] = 0x03;
		pl[1] = 0x3b;
		pl[3] = 0x01;
		pl[4] = 0x60;
		for (i = 0; i < 8; i++)
			pl[8 + i] = (uint8_t)(sid >> (56 - 8 * i));
		/* an empty handshake record: type 22, DTLS 1.2, epoch 0 */
		pl[16] = 22;
		pl[17] = 0xfe;
		pl[18] = 0xfd;
		pl[24] = (uint8_t)st.sent;
		/* UDP checksum 0: allowed over IPv4 */
		if (sendto(fd, pk, sizeof(pk), 0, (struct sockaddr *)&dst, sizeof(dst)) > 0) {
			st.sent++;
			st.sent_bytes += 29;
		}
		next += 1.0 / rate;
		while (now_s() < next)
			usleep(1000);
	}
	close(fd);
	report("spoof", now_s() - t0);
	return 0;
}

int
main(int argc, char **argv)
{
	double rate, secs;
	int dport;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && (!strcmp(argv[1], "replay") || !strcmp(argv[1], "fresh"))) {
		dport = atoi(argv[4]);
		rate = atof(argv[5]);
		secs = atof(argv[6]);
	} else if (argc == 8 && !strcmp(argv[1], "spoof")) {
		dport = atoi(argv[5]);
		rate = atof(argv[6]);
		secs = atof(argv[7]);
	} else {
		fprintf(stderr, "usage: attack replay|fresh LOCAL DST PORT RATE SECS\n"
		    "       attack spoof SRC SPORT DST PORT RATE SECS\n");
		return 2;
	}
	if (rate <= 0 || secs <= 0 || dport <= 0 || dport > 65535)
		return 2;
	dst.sin_family = AF_INET;
	dst.sin_port = htons((uint16_t)dport);
	if (inet_pton(AF_INET, argv[1][0] == 's' ? argv[4] : argv[3], &dst.sin_addr) != 1)
		die("destination address");
	if (argv[1][0] == 's')
		return run_spoof(argv[2], atoi(argv[3]), rate, secs);
	udp_open(argv[2]);
	return run_handshakes(argv[1][0] == 'f', rate, secs);
}
