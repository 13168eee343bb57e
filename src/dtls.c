/* dtls.c - DTLS 1.2 over OpenSSL 3.0, without sockets or an event loop.
 *
 * Every SSL object talks through a small datagram BIO: a read hands OpenSSL
 * the one record the caller just passed in, a write splits what OpenSSL
 * produced at record boundaries and gives each record to the session's
 * output callback.  Peers are authenticated by the SHA-256 of their public
 * key (or a CA, through the authorize callback); there is no chain building
 * for self-signed certificates. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "bytes.h"
#include "dtls.h"
#include "gue.h"
#include "keys.h"
#include "log.h"
#include "mlkem.h"
#include "pqmsg.h"
#include "pq.h"
#include "record.h"

#define DTLS_CIPHERS "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" \
	"ECDHE-ECDSA-CHACHA20-POLY1305"
#define DTLS_GROUPS "X25519:P-256"

#define CT_CCS 20
#define CT_ALERT 21
#define CT_HANDSHAKE 22
#define CT_APPDATA 23

#define DTLS_MAX_RECORD (DTLS_RECORD_HDR + 16384 + 2048)  /* largest legal ciphertext */
#define DTLS_MIN_LINK_MTU 256                             /* OpenSSL's DTLS1_MIN_MTU */
/* A cookie: the length of the ClientHello it answered (2 bytes), then an
 * HMAC over that length, the source address and port, and the session ID
 * of the outer header, so that it admits one session from one source. */
#define DTLS_COOKIE_MAC_LEN 16
#define DTLS_COOKIE_LEN (2 + DTLS_COOKIE_MAC_LEN)
#define DTLS_SECRET_LEN 32
#define DTLS_TIMER_INIT_US 300000
#define DTLS_TIMER_MAX_US 4000000
#define DTLS_BUFFERED_MAX 128           /* OpenSSL queues at most 100 early records */
/* Renegotiation is off (SSL_OP_NO_RENEGOTIATION): a session has one
 * handshake, and its keys are those of epoch 1 in both directions. */
#define DTLS_DATA_EPOCH 1
#define DTLS_MASTER_LEN 48
/* The ALPN protocol ID that announces the ML-KEM-768 exchange
 * (doc/protocol.md 1.5), in the wire format of a protocol list. */
#define DTLS_ALPN_PQ "toud-mlkem768"
static const uint8_t alpn_pq[] = "\x0d" DTLS_ALPN_PQ;
_Static_assert(sizeof(DTLS_ALPN_PQ) - 1 == 0x0d, "the length byte of alpn_pq");
/* PQ_INIT is sent again after this long, doubling up to the maximum,
 * until PQ_REPLY comes (or the handshake's deadline). */
#define DTLS_PQ_TIMER_INIT_US DTLS_TIMER_INIT_US
#define DTLS_PQ_TIMER_MAX_US DTLS_TIMER_MAX_US

/* The ML-KEM-768 exchange after the handshake (doc/protocol.md 1.5). */
enum dtls_pq_state {
	DTLS_PQ_NONE,           /* not selected: the handshake's keys (K0) are the data keys */
	DTLS_PQ_SELECTED,       /* selected; dtls_sess_pq_start() not called yet */
	DTLS_PQ_INIT_SENT,      /* initiator: PQ_INIT sent, waiting for PQ_REPLY */
	DTLS_PQ_WAIT_INIT,      /* responder: waiting for the whole PQ_INIT */
	DTLS_PQ_WAIT_K1,        /* responder: PQ_REPLY sent, waiting for a record under K1 */
	DTLS_PQ_DONE,           /* both directions under K1 */
};

/* What the exchange needs while it runs (freed when it is through). */
struct dtls_pq {
	uint8_t exporter[RECORD_PQ_EXPORTER_LEN];       /* taken when the handshake completed */
	uint8_t client_random[32];                      /* names the session in the key log */
	bool has_psk;
	uint8_t psk[RECORD_PSK_LEN];
	EVP_PKEY *dk;                                   /* initiator: decapsulation key */
	uint8_t ek[MLKEM_EK_LEN];                       /* initiator: what PQ_INIT carries */
	struct pqmsg_key key;                           /* responder: PQ_INIT as received */
	uint8_t ct[MLKEM_CT_LEN];                       /* responder: PQ_REPLY's answer */
	struct record_keys k1_tx;                       /* responder: K1, in use once confirmed */
	struct record_rx rx1;                           /* responder: K1, tried beside K0 */
	uint64_t due_us;                                /* initiator: next PQ_INIT */
	unsigned step_us;
};

struct dtls_ctx {
	SSL_CTX *ssl_ctx;
	dtls_authorize_fn *authorize;
	void *authorize_arg;
	dtls_listen_output_fn *listen_output;
	void *listen_output_arg;
	unsigned link_mtu;
	uint8_t fp[DTLS_FP_LEN];
	uint8_t secret[DTLS_SECRET_LEN];        /* cookie secrets */
	uint8_t prev_secret[DTLS_SECRET_LEN];
	int keylog_fd;
	uint8_t server_id;                      /* server-id, 0: none */
	struct dtls_sess *listener;             /* reused for every DTLSv1_listen */
	BIO_ADDR *listen_addr;
	size_t listen_req_len;                  /* size of the request being answered */
	bool listen_replied;
	uint64_t listen_sid;                    /* session ID it came with (bound to the cookie) */
	size_t listen_credit;                   /* a verified cookie: its first ClientHello's size */
	const char *listen_mismatch;            /* why the last admitted hello failed at once */
};

struct dtls_sess {
	struct dtls_ctx *c;
	SSL *ssl;
	dtls_output_fn *out;
	void *out_arg;
	union sockaddr_union peer;              /* where our records go */
	union sockaddr_union src;               /* source of the record being read */
	const uint8_t *rd;                      /* the record OpenSSL may read, once */
	size_t rdlen;
	bool listener;
	bool client;
	bool established;
	enum dtls_result failed;                /* terminal result, or DTLS_AGAIN */
	void *expect;
	unsigned early_dropped;                 /* see dtls_sess_take_early() */
	bool has_peer_fp;
	uint8_t peer_fp[DTLS_FP_LEN];           /* the key the peer presented */
	/* Why a handshake failed, for the log: a key we refused, or the
	 * fatal alert the peer sent (-1: none). */
	bool has_refused_fp;
	uint8_t refused_fp[DTLS_FP_LEN];
	int alert_rcvd;
	bool alert_before_hello;                /* (client) it came before the ServerHello */
	const char *mismatch;                   /* what this side found missing in common */
	/* Once established, application data is toud's own (record.c):
	 * OpenSSL keeps the handshake, its retransmissions and alerts. */
	bool rec_on;
	struct record_tx tx;
	struct record_rx rx;
	uint8_t *txbuf;                         /* one sealed record, link_mtu bytes */
	/* The first AES-GCM nonce_explicit OpenSSL sent in the data epoch
	 * (on its Finished): toud's nonces keep their distance from it. */
	bool wr_nonce_seen;
	uint64_t wr_nonce;
	uint8_t server_id;                      /* the responder's, both ends agree; 0: none */
	/* Once the peer's first record under the new keys arrived, OpenSSL's
	 * state is gone (sess_release()); what is asked of it later is kept
	 * here. */
	bool released;
	struct record_keys rx_keys;             /* opens the peer's alerts */
	/* With a preshared key, toud's own close_notify is sealed with the
	 * data keys, OpenSSL's with the handshake's: both open. */
	struct record_keys rx_keys_psk;
	bool has_rx_keys_psk;
	/* ... and after the ML-KEM exchange with K1. */
	struct record_keys rx_keys_pq;
	bool has_rx_keys_pq;
	bool pq_offer;                          /* client: offers the ALPN */
	enum dtls_pq_state pq_state;
	struct dtls_pq *pq;                     /* while the exchange runs */
	const char *pq_error;                   /* why it failed */
	bool pq_heard;                          /* a message of the exchange opened under K0 */
	/* Initiator: its PQ_CONFIRM under K1 goes again until a record of the
	 * responder opens under K1. */
	bool k1_unconfirmed;
	uint64_t k1_due_us;
	unsigned k1_step_us;
	const char *cipher_name;
	char kx[PQ_NAME_MAX];                   /* the handshake's group (pq.h), once done */
	X509 *peer_leaf;                        /* for CA checks on reload */
	STACK_OF(X509) *peer_chain;
};

/* One whole record: header plus exactly the fragment its length announces. */
static bool
rec_whole(const uint8_t *rec, size_t len)
{
	return len >= DTLS_RECORD_HDR && len <= DTLS_MAX_RECORD &&
	    DTLS_RECORD_HDR + (size_t)bytes_get16(rec + 11) == len;
}


/* --- the datagram BIO ------------------------------------------------ */

static int
addr_to_bio(const union sockaddr_union *sa, BIO_ADDR *ap)
{
	switch (sa->sa.sa_family) {
	case AF_INET:
		return BIO_ADDR_rawmake(ap, AF_INET, &sa->in.sin_addr, 4, sa->in.sin_port);
	case AF_INET6:
		return BIO_ADDR_rawmake(ap, AF_INET6, &sa->in6.sin6_addr, 16,
		    sa->in6.sin6_port);
	default:
		return 0;
	}
}

static int
dgram_read(BIO *b, char *buf, int len)
{
	struct dtls_sess *s = BIO_get_data(b);
	size_t n;

	BIO_clear_retry_flags(b);
	if (s == NULL || s->rd == NULL || len <= 0) {
		BIO_set_retry_read(b);
		return -1;
	}
	n = s->rdlen < (size_t)len ? s->rdlen : (size_t)len;
	memcpy(buf, s->rd, n);
	s->rd = NULL;
	s->rdlen = 0;
	return (int)n;
}

/* A record OpenSSL wrote itself.  In the data epoch it shares the keys
 * with toud's own records (record.h explains the two number ranges): note
 * the first AES-GCM nonce OpenSSL used, and once toud seals, never let an
 * OpenSSL record out whose numbers leave the RECORD_OSSL_RECORDS that
 * toud's keep clear. */
static bool
sess_write_check(struct dtls_sess *s, const uint8_t *p, size_t n)
{
	uint64_t seq, nonce;

	if (n < DTLS_RECORD_HDR || p[0] == CT_CCS)
		return true;
	seq = bytes_get64(p + 3);
	if (seq >> 48 != DTLS_DATA_EPOCH)
		return true;
	nonce = n >= DTLS_RECORD_HDR + RECORD_GCM_EXPLICIT ? bytes_get64(p + DTLS_RECORD_HDR) : 0;
	if (!s->wr_nonce_seen) {
		s->wr_nonce_seen = true;
		s->wr_nonce = nonce;
	}
	if (!s->rec_on)
		return true;
	if ((seq & RECORD_SEQ_MAX) >= RECORD_OSSL_RECORDS ||
	    (record_prefix(s->tx.cipher) > RECORD_HDR &&
	    nonce - s->wr_nonce >= RECORD_OSSL_RECORDS)) {
		log_warnx("dtls: an OpenSSL record would leave its sequence or nonce range: not sent");
		return false;
	}
	return true;
}

static int
dgram_write(BIO *b, const char *data, int dlen)
{
	struct dtls_sess *s = BIO_get_data(b);
	const uint8_t *p = (const uint8_t *)data;
	const union sockaddr_union *to;
	dtls_output_fn *out;
	void *arg;
	size_t left, n;

	BIO_clear_retry_flags(b);
	if (s == NULL || dlen <= 0)
		return dlen < 0 ? -1 : 0;
	left = (size_t)dlen;
	if (s->listener) {
		/* A stateless answer is never larger than the request, so
		 * the listener cannot amplify a spoofed source. */
		if (left > s->c->listen_req_len || s->c->listen_output == NULL)
			return dlen;
		out = NULL;
		arg = s->c->listen_output_arg;
		to = &s->src;
		s->c->listen_replied = true;
	} else {
		out = s->out;
		arg = s->out_arg;
		to = &s->peer;
	}
	if (out == NULL && !s->listener)
		return dlen;
	while (left > 0) {
		n = left;
		if (left >= DTLS_RECORD_HDR &&
		    DTLS_RECORD_HDR + (size_t)bytes_get16(p + 11) <= left)
			n = DTLS_RECORD_HDR + bytes_get16(p + 11);
		if (s->listener)
			s->c->listen_output(arg, s->c->listen_sid, p, n, to);
		else if (sess_write_check(s, p, n))
			out(arg, p, n, to, NULL);
		p += n;
		left -= n;
	}
	return dlen;
}

static long
dgram_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct dtls_sess *s = BIO_get_data(b);

	(void)num;
	switch (cmd) {
	case BIO_CTRL_DGRAM_GET_PEER:
		/* DTLSv1_listen asks for the source of the ClientHello. */
		if (s == NULL || ptr == NULL)
			return 0;
		return addr_to_bio(s->listener ? &s->src : &s->peer, ptr) ? 1 : 0;
	case BIO_CTRL_DGRAM_SET_CONNECTED:
	case BIO_CTRL_DGRAM_SET_PEER:
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_DGRAM_QUERY_MTU:          /* SSL_OP_NO_QUERY_MTU + link MTU */
	case BIO_CTRL_DGRAM_GET_MTU_OVERHEAD:   /* the link MTU is the record size */
	case BIO_CTRL_PUSH:
	case BIO_CTRL_POP:
	case BIO_CTRL_PENDING:
	case BIO_CTRL_WPENDING:
	case BIO_CTRL_DGRAM_SET_NEXT_TIMEOUT:   /* the caller runs the timers */
	case BIO_CTRL_DGRAM_GET_RECV_TIMER_EXP:
	case BIO_CTRL_DGRAM_GET_SEND_TIMER_EXP:
	default:
		return 0;
	}
}

/* The method table is immutable once built, like OpenSSL's own; BIO type
 * indexes are a process-wide resource, so it is built once per process. */
static CRYPTO_ONCE dgram_once = CRYPTO_ONCE_STATIC_INIT;
static BIO_METHOD *dgram_method;

static void
dgram_method_init(void)
{
	BIO_METHOD *m;
	int type = BIO_get_new_index();

	if (type == -1)
		return;
	m = BIO_meth_new(type | BIO_TYPE_SOURCE_SINK, "toud datagram");
	if (m == NULL)
		return;
	if (!BIO_meth_set_read(m, dgram_read) || !BIO_meth_set_write(m, dgram_write) ||
	    !BIO_meth_set_ctrl(m, dgram_ctrl)) {
		BIO_meth_free(m);
		return;
	}
	dgram_method = m;
}

static const BIO_METHOD *
dgram_method_get(void)
{
	if (!CRYPTO_THREAD_run_once(&dgram_once, dgram_method_init))
		return NULL;
	return dgram_method;
}

/* --- OpenSSL callbacks ----------------------------------------------- */

static unsigned int
sess_timer_cb(SSL *ssl, unsigned int timer_us)
{
	unsigned int next = DTLS_TIMER_INIT_US, r = 0;

	(void)ssl;
	/* The step the last timeout (perhaps shortened, below) stood for,
	 * then the next one: doubling up to the maximum. */
	if (timer_us > 0) {
		while (next < timer_us && next < DTLS_TIMER_MAX_US)
			next *= 2;
		next = next >= DTLS_TIMER_MAX_US / 2 ? DTLS_TIMER_MAX_US : next * 2;
	}
	/* Up to a sixth less at random: clients that started together (a
	 * server restart, many behind one NAT) do not retransmit in
	 * lockstep, and a server that turned some away takes the rest one
	 * after another rather than all in the same instant again. */
	if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
		r = 0;
	return next - r % (next / 6);
}

/* A fatal alert from the peer: kept to say why its handshake failed. */
static void
info_cb(const SSL *ssl, int where, int ret)
{
	struct dtls_sess *s = SSL_get_app_data(ssl);

	if (s != NULL && (where & SSL_CB_READ_ALERT) && (ret >> 8) == SSL3_AL_FATAL) {
		OSSL_HANDSHAKE_STATE st = SSL_get_state(ssl);

		s->alert_rcvd = ret & 0xff;
		/* An answer to our ClientHello: the server refused the
		 * hello itself, before any certificate was looked at. */
		s->alert_before_hello = s->client && (st == TLS_ST_BEFORE ||
		    st == TLS_ST_CW_CLNT_HELLO || st == DTLS_ST_CR_HELLO_VERIFY_REQUEST);
	}
}

/* A handshake that failed here: was it for want of a version, cipher
 * suite, group or signature algorithm in common?  Reads (and consumes)
 * OpenSSL's error queue, which the callers clear anyway. */
static void
note_mismatch(struct dtls_sess *s)
{
	unsigned long e;

	while ((e = ERR_get_error()) != 0) {
		if (ERR_GET_LIB(e) != ERR_LIB_SSL)
			continue;
		switch (ERR_GET_REASON(e)) {
		case SSL_R_NO_SHARED_CIPHER:
			s->mismatch = "none of the other side's cipher suites is one of toud's";
			return;
		case SSL_R_WRONG_CIPHER_RETURNED:
			s->mismatch = "the other side chose a cipher suite that was not offered";
			return;
		case SSL_R_UNSUPPORTED_PROTOCOL:
		case SSL_R_WRONG_VERSION_NUMBER:
		case SSL_R_WRONG_SSL_VERSION:
		case SSL_R_VERSION_TOO_LOW:
		case SSL_R_VERSION_TOO_HIGH:
		case SSL_R_NO_PROTOCOLS_AVAILABLE:
			s->mismatch = "the other side offers no DTLS 1.2, the one version toud speaks";
			return;
		case SSL_R_NO_SHARED_GROUPS:
		case SSL_R_WRONG_CURVE:
			s->mismatch = "no key exchange group in common";
			return;
		case SSL_R_NO_SHARED_SIGNATURE_ALGORITHMS:
		case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
			s->mismatch = "no signature algorithm in common";
			return;
		default:
			break;
		}
	}
}

/* Replaces chain verification: the peer is who its key says, if the
 * caller knows that key. */
static int
verify_cb(X509_STORE_CTX *xs, void *arg)
{
	struct dtls_ctx *c = arg;
	SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
	struct dtls_sess *s = ssl != NULL ? SSL_get_app_data(ssl) : NULL;
	X509 *leaf = X509_STORE_CTX_get0_cert(xs);
	uint8_t fp[DTLS_FP_LEN];
	void *p;

	if (s == NULL || leaf == NULL || keys_cert_fp(leaf, fp) < 0)
		goto refuse;
	p = c->authorize(c->authorize_arg, fp, xs);
	if (p == NULL || (s->client && p != s->expect)) {
		memcpy(s->refused_fp, fp, DTLS_FP_LEN);
		s->has_refused_fp = true;
		goto refuse;
	}
	memcpy(s->peer_fp, fp, DTLS_FP_LEN);
	s->has_peer_fp = true;
	return 1;
refuse:
	X509_STORE_CTX_set_error(xs, X509_V_ERR_APPLICATION_VERIFICATION);
	return 0;
}

static void
keylog_cb(const SSL *ssl, const char *line)
{
	dtls_ctx_keylog(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)), line);
}

static int
cookie_calc(const uint8_t secret[DTLS_SECRET_LEN], const union sockaddr_union *sa, uint64_t sid,
    uint16_t ch_len, uint8_t cookie[DTLS_COOKIE_LEN])
{
	uint8_t msg[1 + 16 + 2 + 8 + 2], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t n;

	switch (sa->sa.sa_family) {
	case AF_INET:
		msg[0] = 4;
		memcpy(msg + 1, &sa->in.sin_addr, 4);
		memcpy(msg + 5, &sa->in.sin_port, 2);
		n = 7;
		break;
	case AF_INET6:
		msg[0] = 6;
		memcpy(msg + 1, &sa->in6.sin6_addr, 16);
		memcpy(msg + 17, &sa->in6.sin6_port, 2);
		n = 19;
		break;
	default:
		return -EAFNOSUPPORT;
	}
	bytes_put64(msg + n, sid);
	bytes_put16(msg + n + 8, ch_len);
	n += 10;
	if (HMAC(EVP_sha256(), secret, DTLS_SECRET_LEN, msg, n, md, &mdlen) == NULL ||
	    mdlen < DTLS_COOKIE_MAC_LEN)
		return -EIO;
	bytes_put16(cookie, ch_len);
	memcpy(cookie + 2, md, DTLS_COOKIE_MAC_LEN);
	OPENSSL_cleanse(md, sizeof(md));
	return 0;
}

static int
cookie_generate_cb(SSL *ssl, unsigned char *cookie, unsigned int *cookie_len)
{
	struct dtls_sess *s = SSL_get_app_data(ssl);
	size_t req;

	if (s == NULL)
		return 0;
	req = s->c->listen_req_len > 0xffff ? 0xffff : s->c->listen_req_len;
	if (cookie_calc(s->c->secret, &s->src, s->c->listen_sid, (uint16_t)req, cookie) < 0)
		return 0;
	*cookie_len = DTLS_COOKIE_LEN;
	return 1;
}

static int
cookie_verify_cb(SSL *ssl, const unsigned char *cookie, unsigned int cookie_len)
{
	struct dtls_sess *s = SSL_get_app_data(ssl);
	uint8_t want[DTLS_COOKIE_LEN];
	uint16_t ch_len;
	int ok = 0;

	if (s == NULL || cookie_len != DTLS_COOKIE_LEN)
		return 0;
	ch_len = bytes_get16(cookie);
	if (cookie_calc(s->c->secret, &s->src, s->c->listen_sid, ch_len, want) == 0 &&
	    CRYPTO_memcmp(want, cookie, DTLS_COOKIE_LEN) == 0)
		ok = 1;
	else if (cookie_calc(s->c->prev_secret, &s->src, s->c->listen_sid, ch_len, want) == 0 &&
	    CRYPTO_memcmp(want, cookie, DTLS_COOKIE_LEN) == 0)
		ok = 1;
	if (ok)
		s->c->listen_credit = ch_len;
	return ok;
}

/* --- sessions -------------------------------------------------------- */

/* The exchange's state goes once it is through (or the session). */
static void
pq_free(struct dtls_sess *s)
{
	/* Through: show names it beside the handshake's group. */
	if (s->pq_state == DTLS_PQ_DONE && s->kx[0] && !pq_has_mlkem(s->kx))
		snprintf(s->kx + strlen(s->kx), sizeof(s->kx) - strlen(s->kx), " + %s",
		    DTLS_KX_PQ);
	if (s->pq == NULL)
		return;
	mlkem_free(s->pq->dk);
	record_rx_free(&s->pq->rx1);
	OPENSSL_cleanse(s->pq, sizeof(*s->pq));
	free(s->pq);
	s->pq = NULL;
}

static struct dtls_sess *
sess_new(struct dtls_ctx *c)
{
	const BIO_METHOD *m = dgram_method_get();
	struct dtls_sess *s;
	BIO *bio;

	if (m == NULL || (s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->c = c;
	if ((s->ssl = SSL_new(c->ssl_ctx)) == NULL)
		goto fail;
	if ((bio = BIO_new(m)) == NULL)
		goto fail;
	BIO_set_data(bio, s);
	BIO_set_init(bio, 1);
	SSL_set_bio(s->ssl, bio, bio);
	SSL_set_app_data(s->ssl, s);
	SSL_set_info_callback(s->ssl, info_cb);
	s->alert_rcvd = -1;
	if (!DTLS_set_link_mtu(s->ssl, c->link_mtu))
		goto fail;
	DTLS_set_timer_cb(s->ssl, sess_timer_cb);
	return s;
fail:
	SSL_free(s->ssl);
	free(s);
	ERR_clear_error();
	return NULL;
}

static int
listener_new(struct dtls_ctx *c)
{
	struct dtls_sess *s = sess_new(c);

	if (s == NULL)
		return -ENOMEM;
	s->listener = true;
	SSL_set_accept_state(s->ssl);
	SSL_set_options(s->ssl, SSL_OP_COOKIE_EXCHANGE);
	c->listener = s;
	return 0;
}

/* The handshake is complete: derive its key block, as kernel TLS offload
 * does, and let record.c seal and open the application data from now on.
 * 0 or -errno. */
static int
sess_takeover(struct dtls_sess *s)
{
	const SSL_CIPHER *ciph = SSL_get_current_cipher(s->ssl);
	SSL_SESSION *sess = SSL_get_session(s->ssl);
	uint8_t master[DTLS_MASTER_LEN], cr[32], sr[32];
	struct record_keys ck, sk;
	enum record_cipher rc;
	const EVP_MD *md;
	int ret = -EINVAL;

	memset(&ck, 0, sizeof(ck));
	memset(&sk, 0, sizeof(sk));
	if (ciph == NULL || sess == NULL ||
	    (rc = record_cipher_from_nid(SSL_CIPHER_get_cipher_nid(ciph))) == 0 ||
	    (md = SSL_CIPHER_get_handshake_digest(ciph)) == NULL)
		return -EINVAL;
	/* The Finished went out first in the data epoch, under OpenSSL's
	 * first nonce; without it there is no safe place for toud's. */
	if (!s->wr_nonce_seen)
		return -EINVAL;
	if (SSL_SESSION_get_master_key(sess, master, sizeof(master)) != sizeof(master) ||
	    SSL_get_client_random(s->ssl, cr, sizeof(cr)) != sizeof(cr) ||
	    SSL_get_server_random(s->ssl, sr, sizeof(sr)) != sizeof(sr))
		goto out;
	if ((ret = record_keys_derive(rc, EVP_MD_get0_name(md), master, sizeof(master), cr, sr,
	    &ck, &sk)) < 0)
		goto out;
	ret = -ENOMEM;
	if (record_tx_init(&s->tx, s->client ? &ck : &sk, DTLS_DATA_EPOCH, RECORD_SEQ_START,
	    s->wr_nonce) < 0 ||
	    record_rx_init(&s->rx, s->client ? &sk : &ck, DTLS_DATA_EPOCH) < 0 ||
	    (s->txbuf = malloc(s->c->link_mtu)) == NULL)
		goto out;
	s->rx_keys = s->client ? sk : ck;
	s->rec_on = true;
	ret = 0;
out:
	OPENSSL_cleanse(master, sizeof(master));
	OPENSSL_cleanse(&ck, sizeof(ck));
	OPENSSL_cleanse(&sk, sizeof(sk));
	if (ret < 0) {
		record_tx_free(&s->tx);
		record_rx_free(&s->rx);
		free(s->txbuf);
		s->txbuf = NULL;
	}
	return ret;
}

/* The handshake is complete: whether its ALPN selected the ML-KEM-768
 * exchange, and what the exchange needs of OpenSSL's state, which may be
 * gone (sess_release()) before the exchange is through.  0 or -errno. */
static int
sess_pq_note(struct dtls_sess *s)
{
	const unsigned char *sel = NULL;
	unsigned int sel_len = 0;

	SSL_get0_alpn_selected(s->ssl, &sel, &sel_len);
	if (sel == NULL || sel_len != sizeof(alpn_pq) - 2 ||
	    memcmp(sel, alpn_pq + 1, sel_len) != 0)
		return 0;
	/* Offered and selected only with ML-KEM: this side has it. */
	if (!mlkem_available())
		return -ENOTSUP;
	if ((s->pq = calloc(1, sizeof(*s->pq))) == NULL)
		return -ENOMEM;
	if (SSL_export_keying_material(s->ssl, s->pq->exporter, sizeof(s->pq->exporter),
	    RECORD_PQ_LABEL, strlen(RECORD_PQ_LABEL), NULL, 0, 0) != 1 ||
	    SSL_get_client_random(s->ssl, s->pq->client_random, sizeof(s->pq->client_random)) !=
	    sizeof(s->pq->client_random))
		return -EIO;
	s->pq_state = DTLS_PQ_SELECTED;
	return 0;
}

/* One step of the handshake; the error queue is the caller's to clear. */
static enum dtls_result
sess_drive(struct dtls_sess *s)
{
	int r = SSL_do_handshake(s->ssl);

	if (r == 1) {
		if (sess_takeover(s) < 0 || sess_pq_note(s) < 0) {
			log_warnx("dtls: cannot take over the records of cipher %s",
			    SSL_get_cipher_name(s->ssl));
			s->failed = DTLS_ERR_HANDSHAKE;
			return DTLS_ERR_HANDSHAKE;
		}
		r = SSL_get_negotiated_group(s->ssl);
		pq_group_name(r > 0 && !(r & TLSEXT_nid_unknown) ? OBJ_nid2sn(r) : NULL, s->kx,
		    sizeof(s->kx));
		s->established = true;
		return DTLS_DONE;
	}
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return DTLS_AGAIN;
	default:
		note_mismatch(s);
		s->failed = DTLS_ERR_HANDSHAKE;
		return DTLS_ERR_HANDSHAKE;
	}
}

struct dtls_sess *
dtls_sess_client(struct dtls_ctx *c, void *expect, dtls_output_fn *out, void *out_arg,
    const union sockaddr_union *to)
{
	struct dtls_sess *s;

	if (out == NULL || to == NULL || (s = sess_new(c)) == NULL)
		return NULL;
	s->client = true;
	s->expect = expect;
	s->out = out;
	s->out_arg = out_arg;
	s->peer = *to;
	s->src = *to;
	SSL_set_connect_state(s->ssl);
	return s;
}

void
dtls_sess_free(struct dtls_sess *s)
{
	if (s == NULL)
		return;
	SSL_free(s->ssl);
	record_tx_free(&s->tx);
	record_rx_free(&s->rx);
	free(s->txbuf);
	X509_free(s->peer_leaf);
	sk_X509_pop_free(s->peer_chain, X509_free);
	OPENSSL_cleanse(&s->rx_keys, sizeof(s->rx_keys));
	OPENSSL_cleanse(&s->rx_keys_psk, sizeof(s->rx_keys_psk));
	OPENSSL_cleanse(&s->rx_keys_pq, sizeof(s->rx_keys_pq));
	pq_free(s);
	free(s);
}

void
dtls_sess_set_peer_addr(struct dtls_sess *s, const union sockaddr_union *to)
{
	s->peer = *to;
}

enum dtls_result
dtls_sess_handshake(struct dtls_sess *s)
{
	enum dtls_result r;

	if (s->failed != DTLS_AGAIN)
		return s->failed;
	if (s->established)
		return DTLS_AGAIN;
	r = sess_drive(s);
	ERR_clear_error();
	return r;
}

/* SSL_read gave no data: say why. */
static enum dtls_result
sess_read_error(struct dtls_sess *s, int r, uint8_t ctype)
{
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		/* Handshake retransmissions and warning alerts are handled
		 * inside OpenSSL; only application data counts as refused. */
		return ctype != CT_APPDATA ? DTLS_AGAIN : DTLS_ERR_RECORD;
	default:
		/* close_notify, a fatal alert, or a broken session */
		s->established = false;
		s->failed = DTLS_ERR_CLOSED;
		return DTLS_ERR_CLOSED;
	}
}

/* An application-data record of the data epoch: record.c opens it. */
static enum dtls_result
sess_open(struct dtls_sess *s, const uint8_t *rec, size_t len, uint8_t *out, size_t cap,
    size_t *outlen, uint64_t *seq)
{
	struct record_msg m = { .in = rec, .in_len = len, .out = out, .out_cap = cap };

	record_open(&s->rx, &m, 1);
	switch (m.status) {
	case RECORD_OK:
		*outlen = m.out_len;
		if (seq != NULL)
			*seq = m.seq;
		return DTLS_DATA;
	case RECORD_ERR_DUP:
		return DTLS_ERR_REPLAY;
	case RECORD_ERR_OLD:
		return DTLS_ERR_OLD;
	default:
		return DTLS_ERR_RECORD;
	}
}

/* The peer sent a record under the new keys, so its side of the handshake
 * is over and it will never ask for a retransmission of this side's last
 * flight: OpenSSL's per-connection state (the handshake buffer, the record
 * buffers, the retransmission queue; most of a session's memory) goes, and
 * toud's record layer speaks alone from now on, alerts included.  What is
 * asked of OpenSSL's state later is kept. */
static void
sess_release(struct dtls_sess *s)
{
	X509 *leaf = SSL_get0_peer_certificate(s->ssl);
	STACK_OF(X509) *chain = SSL_get_peer_cert_chain(s->ssl);

	s->cipher_name = SSL_get_cipher_name(s->ssl);      /* a static string */
	if (leaf != NULL && X509_up_ref(leaf))
		s->peer_leaf = leaf;
	if (chain != NULL)
		s->peer_chain = X509_chain_up_ref(chain);
	SSL_free(s->ssl);
	s->ssl = NULL;
	s->released = true;
	ERR_clear_error();
}

void
dtls_sess_confirmed(struct dtls_sess *s)
{
	s->k1_unconfirmed = false;
	if (s->established && !s->released && s->failed == DTLS_AGAIN)
		sess_release(s);
}

/* A record other than application data of the data epoch, once OpenSSL is
 * gone: an alert is opened here; handshake retransmissions (the peer is
 * past its handshake) and records of other epochs are dropped, as OpenSSL
 * would. */
static enum dtls_result
sess_released_input(struct dtls_sess *s, const uint8_t *rec, size_t len)
{
	uint8_t alert[2];

	if (rec[0] == CT_APPDATA)
		return DTLS_ERR_RECORD;
	if (rec[0] != RECORD_TYPE_ALERT ||
	    (record_open_alert(&s->rx_keys, s->rx.epoch, rec, len, alert) != RECORD_OK &&
	    (!s->has_rx_keys_psk ||
	    record_open_alert(&s->rx_keys_psk, s->rx.epoch, rec, len, alert) != RECORD_OK) &&
	    (!s->has_rx_keys_pq ||
	    record_open_alert(&s->rx_keys_pq, s->rx.epoch, rec, len, alert) != RECORD_OK)))
		return DTLS_AGAIN;
	/* A warning other than close_notify changes nothing (RFC 5246 7.2). */
	if (alert[0] != SSL3_AL_FATAL && alert[1] != SSL_AD_CLOSE_NOTIFY)
		return DTLS_AGAIN;
	if (alert[0] == SSL3_AL_FATAL)
		s->alert_rcvd = alert[1];
	s->established = false;
	s->failed = DTLS_ERR_CLOSED;
	return DTLS_ERR_CLOSED;
}

/* --- the ML-KEM-768 exchange (doc/protocol.md 1.5) ------------------- */

static int sess_seal(struct dtls_sess *s, const uint8_t *in, size_t len, uint8_t *out,
    struct dtls_record *r);
static void keylog_data_keys(struct dtls_sess *s, const char *label, const uint8_t cr[32],
    const struct record_keys *ck, const struct record_keys *sk);

static uint64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static bool
pq_pending(const struct dtls_sess *s)
{
	return s->pq_state != DTLS_PQ_NONE && s->pq_state != DTLS_PQ_DONE;
}

/* Seal one inner payload (a control message) under the sending keys in
 * force and send it.  0 or -errno. */
static int
sess_send(struct dtls_sess *s, const uint8_t *msg, size_t len)
{
	struct dtls_record r;
	int rc;

	if ((rc = sess_seal(s, msg, len, NULL, &r)) < 0)
		return rc;
	s->out(s->out_arg, r.rec, r.len, r.to, r.seal);
	return 0;
}

/* The largest record payload a datagram to the peer may carry: the link
 * MTU is that of the best case path (IPv4); IPv6 has 20 bytes more of
 * header. */
static size_t
sess_max_plain(const struct dtls_sess *s)
{
	size_t mtu = s->c->link_mtu - (s->peer.sa.sa_family == AF_INET6 ? 20 : 0);

	return mtu > record_overhead(s->tx.cipher) ? mtu - record_overhead(s->tx.cipher) : 0;
}

/* PQ_INIT, whole or in two halves where a whole one does not fit the
 * path (doc/protocol.md 1.5). */
static int
pq_send_init(struct dtls_sess *s)
{
	uint8_t msg[PQMSG_INIT_MAX];
	size_t first, n;
	unsigned parts = pqmsg_init_split(sess_max_plain(s), &first);
	int rc;

	if (parts == 0)
		return -EMSGSIZE;
	n = pqmsg_init_encode(msg, sizeof(msg), s->pq->ek, 0, first);
	if ((rc = sess_send(s, msg, n)) < 0)
		return rc;
	if (parts == 2) {
		n = pqmsg_init_encode(msg, sizeof(msg), s->pq->ek, first, MLKEM_EK_LEN - first);
		if ((rc = sess_send(s, msg, n)) < 0)
			return rc;
	}
	return 0;
}

static int
pq_send_reply(struct dtls_sess *s)
{
	uint8_t msg[PQMSG_REPLY_LEN];

	return sess_send(s, msg, pqmsg_reply_encode(msg, sizeof(msg), s->pq->ct));
}

/* Replace the data keys of both directions: the sending numbers
 * continue, the receiving window starts anew (with rx, when given,
 * which takes the place of one made from rx_keys).  0 or -errno. */
static int
sess_switch_keys(struct dtls_sess *s, const struct record_keys *tx_keys,
    const struct record_keys *rx_keys, struct record_rx *rx)
{
	uint64_t tx_seq = s->tx.seq;

	record_tx_free(&s->tx);
	record_rx_free(&s->rx);
	if (rx) {
		s->rx = *rx;
		memset(rx, 0, sizeof(*rx));
	}
	if (record_tx_init(&s->tx, tx_keys, DTLS_DATA_EPOCH, tx_seq, s->wr_nonce) < 0 ||
	    (!rx && record_rx_init(&s->rx, rx_keys, DTLS_DATA_EPOCH) < 0)) {
		/* No keys at all rather than the old ones. */
		s->rec_on = false;
		s->failed = DTLS_ERR_CLOSED;
		return -ENOMEM;
	}
	return 0;
}

/* K1 from the shared secret, with the key log line. */
static int
pq_keys(struct dtls_sess *s, const uint8_t ss[MLKEM_SS_LEN], struct record_keys *ck,
    struct record_keys *sk)
{
	int rc = record_keys_pq(s->tx.cipher, s->pq->exporter, ss,
	    s->pq->has_psk ? s->pq->psk : NULL, ck, sk);

	if (rc == 0)
		keylog_data_keys(s, DTLS_KEYLOG_PQ_LABEL, s->pq->client_random, ck, sk);
	OPENSSL_cleanse(s->pq->exporter, sizeof(s->pq->exporter));
	OPENSSL_cleanse(s->pq->psk, sizeof(s->pq->psk));
	return rc;
}

static enum dtls_result
pq_fail(struct dtls_sess *s, const char *why)
{
	s->pq_error = why;
	s->established = false;
	s->failed = DTLS_ERR_HANDSHAKE;
	return DTLS_ERR_HANDSHAKE;
}

/* PQ_CONFIRM under the sending keys in force (K1): not a keepalive, which
 * the path policy would take for news of where the peer sends from. */
static void
sess_send_confirm(struct dtls_sess *s)
{
	uint8_t confirm[GUE_WORD_LEN];

	gue_control_encode(confirm, GUE_CTYPE_PQ_CONFIRM);
	if (sess_send(s, confirm, sizeof(confirm)) < 0)
		log_debug("dtls: no PQ_CONFIRM under the keys of the ML-KEM-768 exchange");
}

/* The next step of a retransmission timer: 300 ms, doubling, at most
 * DTLS_PQ_TIMER_MAX_US. */
static unsigned
pq_next_step(unsigned step_us)
{
	return step_us >= DTLS_PQ_TIMER_MAX_US / 2 ? DTLS_PQ_TIMER_MAX_US : 2 * step_us;
}

/* Initiator: PQ_REPLY.  Both directions move to K1, and a first record
 * under K1 (PQ_CONFIRM) tells the responder at once; it goes again on
 * the exchange's timer until a record of the responder opens under K1. */
static enum dtls_result
pq_reply(struct dtls_sess *s, const uint8_t *ct)
{
	uint8_t ss[MLKEM_SS_LEN];
	struct record_keys ck, sk;
	int rc;

	if (mlkem_decap(s->pq->dk, ct, ss) < 0)
		return pq_fail(s, "cannot decapsulate its ML-KEM-768 ciphertext");
	mlkem_free(s->pq->dk);
	s->pq->dk = NULL;
	rc = pq_keys(s, ss, &ck, &sk);
	OPENSSL_cleanse(ss, sizeof(ss));
	if (rc < 0 || sess_switch_keys(s, &ck, &sk, NULL) < 0) {
		OPENSSL_cleanse(&ck, sizeof(ck));
		OPENSSL_cleanse(&sk, sizeof(sk));
		return pq_fail(s, "cannot derive the data keys of the ML-KEM-768 exchange");
	}
	s->rx_keys_pq = sk;
	s->has_rx_keys_pq = true;
	OPENSSL_cleanse(&ck, sizeof(ck));
	OPENSSL_cleanse(&sk, sizeof(sk));
	s->pq_state = DTLS_PQ_DONE;
	pq_free(s);
	s->k1_unconfirmed = true;
	s->k1_step_us = DTLS_PQ_TIMER_INIT_US;
	s->k1_due_us = mono_us() + s->k1_step_us;
	sess_send_confirm(s);
	return DTLS_DONE;
}

/* Responder: the whole of PQ_INIT.  Encapsulate, answer under K0, and
 * keep K1 ready beside K0 until a record opens under it. */
static enum dtls_result
pq_init_whole(struct dtls_sess *s)
{
	uint8_t ss[MLKEM_SS_LEN];
	struct record_keys ck, sk;
	int rc;

	if ((rc = mlkem_encap(s->pq->key.ek, s->pq->ct, ss)) < 0)
		return pq_fail(s, rc == -EINVAL ? "its ML-KEM-768 encapsulation key is not valid" :
		    "cannot encapsulate to its ML-KEM-768 key");
	rc = pq_keys(s, ss, &ck, &sk);
	OPENSSL_cleanse(ss, sizeof(ss));
	if (rc < 0 || record_rx_init(&s->pq->rx1, &ck, DTLS_DATA_EPOCH) < 0) {
		OPENSSL_cleanse(&ck, sizeof(ck));
		OPENSSL_cleanse(&sk, sizeof(sk));
		return pq_fail(s, "cannot derive the data keys of the ML-KEM-768 exchange");
	}
	s->pq->k1_tx = sk;
	s->rx_keys_pq = ck;
	s->has_rx_keys_pq = true;
	OPENSSL_cleanse(&ck, sizeof(ck));
	OPENSSL_cleanse(&sk, sizeof(sk));
	s->pq_state = DTLS_PQ_WAIT_K1;
	if (pq_send_reply(s) < 0)
		log_debug("dtls: PQ_REPLY not sent");
	return DTLS_AGAIN;
}

/* A control message (pt, n) opened under K0 while the exchange runs. */
static enum dtls_result
pq_message(struct dtls_sess *s, const uint8_t *pt, size_t n)
{
	struct gue_inner in;

	if (gue_inner_decode(pt, n, &in) != GUE_OK || in.kind != GUE_KIND_CONTROL)
		return DTLS_ERR_RECORD;         /* nothing but the exchange under K0 */
	switch (in.proto) {
	case GUE_CTYPE_PQ_INIT:
		if (s->client)
			return DTLS_AGAIN;
		switch (pqmsg_key_add(&s->pq->key, in.payload, in.len)) {
		case PQMSG_COMPLETE:
			return s->pq_state == DTLS_PQ_WAIT_INIT ? pq_init_whole(s) : DTLS_AGAIN;
		case PQMSG_REPEAT:
			/* Our PQ_REPLY was lost: the same answer again. */
			if (s->pq_state == DTLS_PQ_WAIT_K1 && pq_send_reply(s) < 0)
				log_debug("dtls: PQ_REPLY not sent");
			return DTLS_AGAIN;
		case PQMSG_PARTIAL:
			return DTLS_AGAIN;
		case PQMSG_CONFLICT:
		case PQMSG_BAD:
		default:
			return DTLS_ERR_RECORD;
		}
	case GUE_CTYPE_PQ_REPLY:
		if (!s->client || s->pq_state != DTLS_PQ_INIT_SENT)
			return DTLS_AGAIN;
		return pq_reply(s, in.payload);
	default:
		/* A keepalive or a probe before the exchange is through:
		 * nothing toud would send. */
		return DTLS_AGAIN;
	}
}

/* An application-data record while the exchange runs: under K0, only its
 * messages; at the responder, a record under K1 completes it (returned
 * as data, with DTLS_DONE). */
static enum dtls_result
pq_input(struct dtls_sess *s, const uint8_t *rec, size_t len, uint8_t *out, size_t cap,
    size_t *outlen, uint64_t *seq)
{
	enum dtls_result r;

	if (s->pq_state == DTLS_PQ_WAIT_K1) {
		/* Tried on a copy: a failed open may have written over it,
		 * and K0 is still to try. */
		size_t pre = record_prefix(s->pq->rx1.cipher);
		uint8_t *copy = malloc(len);
		struct record_msg m = {
			.in = copy, .in_len = len, .out = copy + pre, .out_cap = len - pre,
		};

		if (copy == NULL)
			return DTLS_ERR_RECORD;
		memcpy(copy, rec, len);
		record_open(&s->pq->rx1, &m, 1);
		if (m.status == RECORD_OK && m.out_len <= cap)
			memcpy(out, m.out, m.out_len);
		OPENSSL_cleanse(copy, len);
		free(copy);
		if (m.status == RECORD_OK && m.out_len <= cap) {
			if (sess_switch_keys(s, &s->pq->k1_tx, NULL, &s->pq->rx1) < 0)
				return pq_fail(s, "cannot take the data keys of the ML-KEM-768 exchange");
			s->pq_state = DTLS_PQ_DONE;
			pq_free(s);
			/* The initiator may have sent that record once only:
			 * it learns from this one that it arrived. */
			sess_send_confirm(s);
			*outlen = m.out_len;
			if (seq != NULL)
				*seq = m.seq;
			return DTLS_DONE;
		}
	}
	if (s->pq_state == DTLS_PQ_SELECTED)
		return DTLS_ERR_RECORD;
	r = sess_open(s, rec, len, out, cap, outlen, seq);
	if (r != DTLS_DATA)
		return r;
	if (!s->released)
		sess_release(s);
	s->pq_heard = true;
	r = pq_message(s, out, *outlen);
	*outlen = 0;
	return r;
}

void
dtls_sess_pq_offer(struct dtls_sess *s, bool offer)
{
	s->pq_offer = offer && mlkem_available() && s->client;
	/* SSL_set_alpn_protos returns 0 on success. */
	if (s->pq_offer && SSL_set_alpn_protos(s->ssl, alpn_pq, sizeof(alpn_pq) - 1) != 0)
		s->pq_offer = false;
	ERR_clear_error();
}

bool
dtls_sess_pq_offered(const struct dtls_sess *s)
{
	return s->pq_offer;
}

bool
dtls_sess_pq_selected(const struct dtls_sess *s)
{
	return s->pq_state != DTLS_PQ_NONE;
}

bool
dtls_sess_pq_pending(const struct dtls_sess *s)
{
	return pq_pending(s);
}

const char *
dtls_sess_pq_error(const struct dtls_sess *s)
{
	return s->pq_error;
}

int
dtls_sess_pq_start(struct dtls_sess *s, const uint8_t *psk)
{
	int rc;

	if (s->pq_state != DTLS_PQ_SELECTED || !s->rec_on)
		return -EINVAL;
	if (psk) {
		memcpy(s->pq->psk, psk, RECORD_PSK_LEN);
		s->pq->has_psk = true;
	}
	if (!s->client) {
		pqmsg_key_init(&s->pq->key);
		s->pq_state = DTLS_PQ_WAIT_INIT;
		return 0;
	}
	if ((rc = mlkem_keygen(&s->pq->dk, s->pq->ek)) < 0) {
		s->pq_error = "cannot make an ML-KEM-768 key";
		return rc;
	}
	s->pq_state = DTLS_PQ_INIT_SENT;
	s->pq->step_us = DTLS_PQ_TIMER_INIT_US;
	s->pq->due_us = mono_us() + s->pq->step_us;
	if ((rc = pq_send_init(s)) < 0)
		s->pq_error = "cannot send PQ_INIT";
	return rc;
}

int
dtls_sess_send_control(struct dtls_sess *s, const uint8_t *msg, size_t len)
{
	return sess_send(s, msg, len);
}

bool
dtls_sess_post_quantum(const struct dtls_sess *s)
{
	return s->pq_state == DTLS_PQ_DONE;
}

bool
dtls_sess_pq_heard(const struct dtls_sess *s)
{
	return s->pq_heard;
}

enum dtls_result
dtls_sess_input(struct dtls_sess *s, const uint8_t *rec, size_t len,
    uint8_t *out, size_t cap, size_t *outlen, uint64_t *seq)
{
	enum dtls_result res;
	uint64_t rseq;
	int r = 0, i;

	*outlen = 0;
	if (s->failed != DTLS_AGAIN)
		return s->failed;
	/* Exactly one record per call: OpenSSL would otherwise keep the
	 * rest of the datagram and hand it out later. */
	if (!rec_whole(rec, len))
		return DTLS_ERR_RECORD;
	rseq = bytes_get64(rec + 3);	/* epoch(16) << 48 | sequence(48) */
	/* Data of the current epoch is toud's record layer's: OpenSSL sees
	 * none of it, and record.c leaves no error queued. */
	if (s->established && cap && rec[0] == CT_APPDATA && rseq >> 48 == s->rx.epoch) {
		if (pq_pending(s))
			return pq_input(s, rec, len, out, cap, outlen, seq);
		res = sess_open(s, rec, len, out, cap, outlen, seq);
		if (res == DTLS_DATA && !s->released)
			sess_release(s);
		if (res == DTLS_DATA)
			s->k1_unconfirmed = false;
		return res;
	}
	if (s->released)
		return cap ? sess_released_input(s, rec, len) : DTLS_ERR_RECORD;
	s->rd = rec;
	s->rdlen = len;
	if (!s->established) {
		/* Application data that overtook the peer's Finished is not
		 * OpenSSL's to see: its sequence number (record.h) would move
		 * OpenSSL's 64-record window past the Finished, which would
		 * then be refused as too old and the handshake would stall.
		 * Nothing could be returned for it before completion anyway. */
		if (rec[0] == CT_APPDATA) {
			log_debug("dtls: dropped a record that arrived before the handshake completed");
			s->early_dropped++;
			res = DTLS_AGAIN;
			goto out;
		}
		res = sess_drive(s);
		goto out;
	}
	if (cap == 0) {
		res = DTLS_ERR_RECORD;
		goto out;
	}
	/* Handshake retransmissions, alerts, and records of other epochs
	 * (which OpenSSL drops) are OpenSSL's, and never opened in place. */
	if ((uintptr_t)out < (uintptr_t)rec + len && (uintptr_t)rec < (uintptr_t)out + cap) {
		res = DTLS_ERR_RECORD;
		goto out;
	}
	/* SSL_get_error() reads the queue: nothing left over may count. */
	ERR_clear_error();
	for (i = 0; i < DTLS_BUFFERED_MAX; i++) {
		r = SSL_read(s->ssl, out, cap > INT_MAX ? INT_MAX : (int)cap);
		if (r <= 0 || s->rd == NULL)
			break;
		/* Plaintext of a record OpenSSL buffered while the handshake
		 * was finishing, not of rec: drop it, so that *seq stays the
		 * sequence of the data returned. */
		log_debug("dtls: dropped a record that arrived before the handshake completed");
		s->early_dropped++;
	}
	if (r <= 0) {
		res = sess_read_error(s, r, rec[0]);
		goto out;
	}
	if (s->rd != NULL) {
		res = DTLS_ERR_RECORD;
		goto out;
	}
	if (SSL_pending(s->ssl) > 0) {
		/* Larger than out: discard the rest of the record rather than
		 * return it with the next one. */
		while (SSL_pending(s->ssl) > 0 &&
		    SSL_read(s->ssl, out, cap > INT_MAX ? INT_MAX : (int)cap) > 0)
			;
		res = DTLS_ERR_RECORD;
		goto out;
	}
	*outlen = (size_t)r;
	if (seq != NULL)
		*seq = rseq;
	res = DTLS_DATA;
out:
	s->rd = NULL;
	s->rdlen = 0;
	ERR_clear_error();
	return res;
}

static_assert(DTLS_SEAL_HEADROOM == RECORD_HDR + RECORD_GCM_EXPLICIT &&
    DTLS_SEAL_TAILROOM == RECORD_TAG, "dtls.h's room for in-place records");

/* Frame in into out (NULL: the session's own buffer) and return it. */
static int
sess_seal(struct dtls_sess *s, const uint8_t *in, size_t len, uint8_t *out,
    struct dtls_record *r)
{
	struct record_msg m = { .in = in, .in_len = len };

	if (!s->established || s->failed != DTLS_AGAIN || !s->rec_on)
		return -ENOTCONN;
	if (len == 0)
		return -EINVAL;
	if (len > RECORD_MAX_PLAIN || len + record_overhead(s->tx.cipher) > s->c->link_mtu)
		return -EMSGSIZE;
	m.out = out ? out : s->txbuf;
	m.out_cap = out ? len + record_overhead(s->tx.cipher) : s->c->link_mtu;
	if ((m.status = record_frame(&s->tx, &m)) != RECORD_OK)
		return m.status == RECORD_ERR_EXHAUSTED ? -ENOSPC : -EIO;
	r->rec = m.out;
	r->len = m.out_len;
	r->to = &s->peer;
	r->seal = s->tx.sealer;
	return 0;
}

/* No data under the handshake's keys (K0) while the ML-KEM-768 exchange
 * runs: only its own messages (sess_send()). */
int
dtls_sess_seal(struct dtls_sess *s, const uint8_t *in, size_t len, struct dtls_record *r)
{
	if (pq_pending(s))
		return -ENOTCONN;
	return sess_seal(s, in, len, NULL, r);
}

int
dtls_sess_seal_in_place(struct dtls_sess *s, uint8_t *in, size_t len, struct dtls_record *r)
{
	if (!s->rec_on || pq_pending(s))
		return -ENOTCONN;
	return sess_seal(s, in, len, in - record_prefix(s->tx.cipher), r);
}

int
dtls_sess_export(struct dtls_sess *s, const char *label, uint8_t *out, size_t len)
{
	if (!s->established || s->released ||
	    SSL_export_keying_material(s->ssl, out, len, label, strlen(label), NULL, 0, 0) != 1) {
		ERR_clear_error();
		return -1;
	}
	return 0;
}

/* With a key log: data keys that the TLS key log no longer gives (those
 * of a session with a preshared key, or after the ML-KEM-768 exchange;
 * doc/protocol.md 1.4 and 1.5 have the format), as a line
 * "label <client random> <client key> <server key> <client IV> <server IV>". */
static void
keylog_data_keys(struct dtls_sess *s, const char *label, const uint8_t cr[32],
    const struct record_keys *ck, const struct record_keys *sk)
{
	char line[32 + 6 * (2 * 32 + 1) + 1], *w = line;
	const struct { const uint8_t *b; size_t n; } f[] = {
		{ cr, 32 }, { ck->key, ck->key_len }, { sk->key, sk->key_len },
		{ ck->iv, ck->iv_len }, { sk->iv, sk->iv_len },
	};
	size_t i;

	if (s->c->keylog_fd < 0)
		return;
	w += snprintf(line, sizeof(line), "%s", label);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		*w++ = ' ';
		util_hex(f[i].b, f[i].n, w);
		w += 2 * f[i].n;
	}
	*w++ = '\n';
	/* One write on an O_APPEND file, as keylog_cb's. */
	if (write(s->c->keylog_fd, line, (size_t)(w - line)) < 0)
		log_debug("key log: %s", strerror(errno));
	OPENSSL_cleanse(line, sizeof(line));
}

int
dtls_sess_set_psk(struct dtls_sess *s, const uint8_t *psk)
{
	uint8_t exp[RECORD_PSK_EXPORTER_LEN], cr[32];
	struct record_keys ck, sk;
	int ret;

	if (!s->established || !s->rec_on)
		return -ENOTCONN;
	if (psk == NULL)
		return 0;
	/* Nothing has been sealed or opened with the handshake's keys. */
	if (s->rx.opened || s->rx.failed || s->tx.sealed)
		return -EBUSY;
	if (dtls_sess_export(s, RECORD_PSK_LABEL, exp, sizeof(exp)) < 0 ||
	    SSL_get_client_random(s->ssl, cr, sizeof(cr)) != sizeof(cr)) {
		OPENSSL_cleanse(exp, sizeof(exp));
		return -EIO;
	}
	ret = record_keys_psk(s->tx.cipher, exp, psk, &ck, &sk);
	OPENSSL_cleanse(exp, sizeof(exp));
	if (ret < 0)
		goto out;
	if ((ret = sess_switch_keys(s, s->client ? &ck : &sk, s->client ? &sk : &ck, NULL)) < 0)
		goto out;
	s->rx_keys_psk = s->client ? sk : ck;
	s->has_rx_keys_psk = true;
	keylog_data_keys(s, DTLS_KEYLOG_PSK_LABEL, cr, &ck, &sk);
	ret = 0;
out:
	OPENSSL_cleanse(&ck, sizeof(ck));
	OPENSSL_cleanse(&sk, sizeof(sk));
	return ret;
}

size_t
dtls_sess_data_prefix(const struct dtls_sess *s)
{
	return s->established && s->rec_on ? record_prefix(s->rx.cipher) : 0;
}

struct record_tx *
dtls_sess_record_tx(struct dtls_sess *s)
{
	return s->rec_on ? &s->tx : NULL;
}

struct record_rx *
dtls_sess_record_rx(struct dtls_sess *s)
{
	return s->rec_on ? &s->rx : NULL;
}

uint64_t
dtls_sess_records(const struct dtls_sess *s)
{
	if (!s->rec_on)
		return 0;
	return s->tx.sealed > s->rx.opened ? s->tx.sealed : s->rx.opened;
}

/* close_notify from toud's record layer, once OpenSSL is gone: framed in
 * the sending direction's numbering and sealed on the way out, as data is. */
static void
sess_close_notify(struct dtls_sess *s)
{
	static const uint8_t close_notify[2] = { 1, SSL_AD_CLOSE_NOTIFY };     /* warning */
	struct record_msg m = {
		.in = close_notify, .in_len = sizeof(close_notify),
		.out = s->txbuf, .out_cap = s->c->link_mtu,
	};

	if (record_frame_type(&s->tx, &m, RECORD_TYPE_ALERT) == RECORD_OK)
		s->out(s->out_arg, m.out, m.out_len, &s->peer, s->tx.sealer);
}

void
dtls_sess_close(struct dtls_sess *s)
{
	if (s->established && s->failed == DTLS_AGAIN && s->released)
		sess_close_notify(s);
	else if (s->established && s->failed == DTLS_AGAIN)
		(void)SSL_shutdown(s->ssl);
	ERR_clear_error();
	s->established = false;
	if (s->failed == DTLS_AGAIN)
		s->failed = DTLS_ERR_CLOSED;
}

bool
dtls_sess_established(const struct dtls_sess *s)
{
	return s->established && s->failed == DTLS_AGAIN;
}

unsigned
dtls_sess_take_early(struct dtls_sess *s)
{
	unsigned n = s->early_dropped;

	s->early_dropped = 0;
	return n;
}

const uint8_t *
dtls_sess_refused_fp(const struct dtls_sess *s)
{
	return s->has_refused_fp ? s->refused_fp : NULL;
}

const char *
dtls_sess_mismatch(const struct dtls_sess *s)
{
	if (s->mismatch)
		return s->mismatch;
	switch (s->alert_rcvd) {
	case SSL_AD_PROTOCOL_VERSION:
		return "the other side does not take DTLS 1.2 (alert: protocol version)";
	case SSL_AD_INSUFFICIENT_SECURITY:
		return "the other side takes none of the offered cipher suites "
		    "(alert: insufficient security)";
	case SSL_AD_HANDSHAKE_FAILURE:
		return s->alert_before_hello ? "the other side shares no cipher suite or group "
		    "with this one (alert: handshake failure)" : NULL;
	default:
		return NULL;
	}
}

const char *
dtls_ctx_listen_mismatch(const struct dtls_ctx *c)
{
	return c->listen_mismatch;
}

const char *
dtls_sess_alert(const struct dtls_sess *s)
{
	return s->alert_rcvd < 0 ? NULL : SSL_alert_desc_string_long(s->alert_rcvd);
}

const uint8_t *
dtls_sess_peer_fp(const struct dtls_sess *s)
{
	return s->has_peer_fp ? s->peer_fp : NULL;
}

bool
dtls_sess_verify_ca_store(const struct dtls_sess *s, struct x509_store_st *store, const char *name)
{
	X509 *leaf = s->released ? s->peer_leaf : SSL_get0_peer_certificate(s->ssl);

	return leaf != NULL && keys_verify_ca_store(leaf,
	    s->released ? s->peer_chain : SSL_get_peer_cert_chain(s->ssl), store, name);
}

uint8_t
dtls_sess_server_id(const struct dtls_sess *s)
{
	return s->server_id;
}

const char *
dtls_sess_cipher(const struct dtls_sess *s)
{
	return s->released ? s->cipher_name : SSL_get_cipher_name(s->ssl);
}

const char *
dtls_sess_key_exchange(const struct dtls_sess *s)
{
	return s->kx;
}

bool
dtls_sess_timeout(struct dtls_sess *s, struct timeval *tv)
{
	if (s->failed != DTLS_AGAIN)
		return false;
	/* The initiator's PQ_INIT goes again until PQ_REPLY comes. */
	if (s->pq_state == DTLS_PQ_INIT_SENT) {
		uint64_t now = mono_us(), left = s->pq->due_us > now ? s->pq->due_us - now : 0;

		tv->tv_sec = (time_t)(left / 1000000);
		tv->tv_usec = (suseconds_t)(left % 1000000);
		return true;
	}
	/* ... and its PQ_CONFIRM under K1 until the responder is heard. */
	if (s->k1_unconfirmed) {
		uint64_t now = mono_us(), left = s->k1_due_us > now ? s->k1_due_us - now : 0;

		tv->tv_sec = (time_t)(left / 1000000);
		tv->tv_usec = (suseconds_t)(left % 1000000);
		return true;
	}
	if (s->released)
		return false;
	return DTLSv1_get_timeout(s->ssl, tv) == 1;
}

enum dtls_result
dtls_sess_handle_timeout(struct dtls_sess *s)
{
	int r;

	if (s->failed != DTLS_AGAIN)
		return s->failed;
	if (s->pq_state == DTLS_PQ_INIT_SENT) {
		uint64_t now = mono_us();

		if (now < s->pq->due_us)
			return DTLS_AGAIN;
		s->pq->step_us = pq_next_step(s->pq->step_us);
		s->pq->due_us = now + s->pq->step_us;
		if (pq_send_init(s) < 0)
			log_debug("dtls: PQ_INIT not sent again");
		return DTLS_AGAIN;
	}
	if (s->k1_unconfirmed) {
		uint64_t now = mono_us();

		if (now < s->k1_due_us)
			return DTLS_AGAIN;
		s->k1_step_us = pq_next_step(s->k1_step_us);
		s->k1_due_us = now + s->k1_step_us;
		sess_send_confirm(s);
		return DTLS_AGAIN;
	}
	if (s->released)
		return DTLS_AGAIN;
	r = DTLSv1_handle_timeout(s->ssl);
	ERR_clear_error();
	if (r < 0) {
		s->established = false;
		s->failed = DTLS_ERR_HANDSHAKE;
		return DTLS_ERR_HANDSHAKE;
	}
	return DTLS_AGAIN;
}

enum dtls_listen_result
dtls_listen_admit(struct dtls_ctx *c, const uint8_t *rec, size_t len,
    const union sockaddr_union *from, uint64_t sid, dtls_output_fn *out,
    dtls_admit_fn *admit, void *admit_arg, struct dtls_sess **sess)
{
	struct dtls_sess *s;
	void *out_arg;
	int r;

	*sess = NULL;
	/* Only a handshake record can open a session; the caller filters
	 * already, but nothing else may reach DTLSv1_listen. */
	if (!rec_whole(rec, len) || rec[0] != CT_HANDSHAKE || out == NULL || admit == NULL ||
	    (from->sa.sa_family != AF_INET && from->sa.sa_family != AF_INET6))
		return DTLS_LISTEN_DROP;
	if (c->listener == NULL && listener_new(c) < 0)
		return DTLS_LISTEN_DROP;
	s = c->listener;
	s->src = *from;
	s->rd = rec;
	s->rdlen = len;
	c->listen_req_len = len;
	c->listen_replied = false;
	c->listen_sid = sid;
	c->listen_credit = 0;
	c->listen_mismatch = NULL;
	r = DTLSv1_listen(s->ssl, c->listen_addr);
	s->rd = NULL;
	s->rdlen = 0;
	ERR_clear_error();
	if (r < 0) {
		/* Not expected from a well-formed call; start over clean. */
		dtls_sess_free(s);
		c->listener = NULL;
		return DTLS_LISTEN_DROP;
	}
	if (r == 0)
		return c->listen_replied ? DTLS_LISTEN_REPLIED : DTLS_LISTEN_DROP;

	/* A valid cookie: the source is proven.  The caller decides now,
	 * before any state or reply, whether it gets a session. */
	c->listener = NULL;
	if ((out_arg = admit(admit_arg, from, c->listen_credit)) == NULL) {
		dtls_sess_free(s);
		if (listener_new(c) < 0)
			log_debug("dtls: no listener for now");
		return DTLS_LISTEN_REFUSED;
	}
	/* The listener becomes the session and answers the buffered
	 * ClientHello right away. */
	s->listener = false;
	s->out = out;
	s->out_arg = out_arg;
	s->peer = *from;
	if (listener_new(c) < 0)
		log_debug("dtls: no listener for now");
	r = sess_drive(s);
	ERR_clear_error();
	if (r == DTLS_ERR_HANDSHAKE) {
		c->listen_mismatch = s->mismatch;
		dtls_sess_free(s);
		return DTLS_LISTEN_FAILED;
	}
	*sess = s;
	return DTLS_LISTEN_ACCEPTED;
}

static void *
admit_always(void *arg, const union sockaddr_union *from, size_t credit)
{
	(void)from;
	(void)credit;
	return arg;
}

enum dtls_listen_result
dtls_listen(struct dtls_ctx *c, const uint8_t *rec, size_t len,
    const union sockaddr_union *from, dtls_output_fn *out, void *out_arg,
    struct dtls_sess **sess)
{
	enum dtls_listen_result r;

	r = dtls_listen_admit(c, rec, len, from, 0, out, admit_always, out_arg, sess);
	return r == DTLS_LISTEN_FAILED ? DTLS_LISTEN_DROP : r;
}

/* --- the context ----------------------------------------------------- */

/* The key log holds every session's secrets, and is opened as root before
 * the privilege drop.  So never through a symlink (O_NOFOLLOW), and an
 * existing file only if nobody else could have planted or can read it: a
 * regular file with one link, owned by us, no group or other bits.  New
 * files are created 0600; two daemons may share one file (tests do). */
static int
keylog_open(struct dtls_ctx *c, const char *cfg_file, char *err, size_t errlen)
{
	const char *f = cfg_file != NULL ? cfg_file : getenv("SSLKEYLOGFILE");
	const char *why = NULL;
	struct stat st;
	int fd, e;

	if (f == NULL || *f == '\0')
		return 0;
	fd = open(f, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0) {
		e = errno;
		keys_seterr(err, errlen, "key log %s: %s", f,
		    e == ELOOP ? "is a symbolic link" : strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		keys_seterr(err, errlen, "key log %s: %s", f, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != geteuid())
		why = "owned by another user";
	else if (st.st_mode & 077)
		why = "readable or writable by others (needs mode 0600)";
	else if (st.st_nlink != 1)
		why = "has other hard links";
	if (why) {
		close(fd);
		keys_seterr(err, errlen, "key log %s: refused: %s", f, why);
		return -EPERM;
	}
	c->keylog_fd = fd;
	SSL_CTX_set_keylog_callback(c->ssl_ctx, keylog_cb);
	return 0;
}

/* The server ID (server-id, doc/protocol.md): an initiator offers an
 * empty extension in its ClientHello, a responder with a server ID
 * answers with that one byte in its ServerHello, and the Finished
 * messages authenticate both.  Either end without it: no server ID, and
 * the session IDs are as they were. */
#define DTLS_EXT_SERVER_ID 0xff54       /* private use (RFC 8446 4.2) */

static int
server_id_add_cb(SSL *ssl, unsigned int type, unsigned int context,
    const unsigned char **out, size_t *outlen, X509 *x, size_t chainidx, int *al,
    void *arg)
{
	struct dtls_sess *s = SSL_get_app_data(ssl);

	(void)type;
	(void)x;
	(void)chainidx;
	(void)al;
	(void)arg;
	*out = NULL;
	*outlen = 0;
	if (context & SSL_EXT_CLIENT_HELLO)
		return 1;
	/* Only called when the ClientHello offered it. */
	if (s == NULL || (s->server_id = s->c->server_id) == 0)
		return 0;
	*out = &s->server_id;
	*outlen = 1;
	return 1;
}

static int
server_id_parse_cb(SSL *ssl, unsigned int type, unsigned int context,
    const unsigned char *in, size_t inlen, X509 *x, size_t chainidx, int *al, void *arg)
{
	struct dtls_sess *s = SSL_get_app_data(ssl);

	(void)type;
	(void)x;
	(void)chainidx;
	(void)arg;
	if (context & SSL_EXT_CLIENT_HELLO)
		return inlen == 0 ? 1 : (*al = SSL_AD_DECODE_ERROR, 0);
	if (s == NULL || inlen != 1 || in[0] == 0) {
		*al = SSL_AD_DECODE_ERROR;
		return 0;
	}
	s->server_id = in[0];
	return 1;
}

/* The server's ALPN: the ML-KEM-768 exchange when the client offers it
 * and this process has ML-KEM (the peer's policy is not known yet: it is
 * applied once the handshake names the peer); nothing otherwise, which a
 * client that offered it takes as "not selected". */
static int
alpn_select_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned int i;

	(void)ssl;
	(void)arg;
	if (!mlkem_available())
		return SSL_TLSEXT_ERR_NOACK;
	for (i = 0; i < inlen; i += 1u + in[i]) {
		if (in[i] == sizeof(alpn_pq) - 2 && i + 1u + in[i] <= inlen &&
		    memcmp(in + i + 1, alpn_pq + 1, in[i]) == 0) {
			*out = in + i + 1;
			*outlen = in[i];
			return SSL_TLSEXT_ERR_OK;
		}
	}
	return SSL_TLSEXT_ERR_NOACK;
}

static int
ctx_setup(struct dtls_ctx *c, const struct dtls_ctx_config *cfg, char *err, size_t errlen)
{
	SSL_CTX *ctx = c->ssl_ctx;
	X509 *cert;

	if (!SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION) ||
	    !SSL_CTX_set_cipher_list(ctx, DTLS_CIPHERS) ||
	    !SSL_CTX_set1_groups_list(ctx, DTLS_GROUPS)) {
		keys_seterr(err, errlen, "dtls setup: %s", keys_ssl_reason());
		return -EINVAL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_QUERY_MTU | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_read_ahead(ctx, 0);
	SSL_CTX_set_app_data(ctx, c);
	SSL_CTX_set_default_passwd_cb(ctx, keys_no_passwd_cb);

	/* Key first: a certificate that does not match then drops it, and
	 * the check below names both files. */
	if (SSL_CTX_use_PrivateKey_file(ctx, cfg->private_key, SSL_FILETYPE_PEM) != 1) {
		keys_seterr(err, errlen, "cannot load private key %s: %s", cfg->private_key,
		    keys_ssl_reason());
		return -EINVAL;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->certificate) != 1) {
		keys_seterr(err, errlen, "cannot load certificate %s: %s", cfg->certificate,
		    keys_ssl_reason());
		return -EINVAL;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		keys_seterr(err, errlen, "private key %s does not match certificate %s",
		    cfg->private_key, cfg->certificate);
		return -EINVAL;
	}
	if ((cert = SSL_CTX_get0_certificate(ctx)) == NULL || keys_cert_fp(cert, c->fp) < 0) {
		keys_seterr(err, errlen, "certificate %s: no public key", cfg->certificate);
		return -EINVAL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, verify_cb, c);
	SSL_CTX_set_cookie_generate_cb(ctx, cookie_generate_cb);
	SSL_CTX_set_cookie_verify_cb(ctx, cookie_verify_cb);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select_cb, c);
	if (SSL_CTX_add_custom_ext(ctx, DTLS_EXT_SERVER_ID,
	    SSL_EXT_CLIENT_HELLO | SSL_EXT_TLS1_2_SERVER_HELLO, server_id_add_cb, NULL, NULL,
	    server_id_parse_cb, NULL) != 1) {
		keys_seterr(err, errlen, "dtls setup: %s", keys_ssl_reason());
		return -EINVAL;
	}
	return 0;
}

struct dtls_ctx *
dtls_ctx_new(const struct dtls_ctx_config *cfg, char *err, size_t errlen)
{
	struct dtls_ctx *c;

	if (cfg->private_key == NULL || cfg->certificate == NULL || cfg->authorize == NULL) {
		keys_seterr(err, errlen, "dtls: private key, certificate and authorization required");
		return NULL;
	}
	if (cfg->link_mtu < DTLS_MIN_LINK_MTU || cfg->link_mtu > 65535) {
		keys_seterr(err, errlen, "dtls: link mtu %u out of range", cfg->link_mtu);
		return NULL;
	}
	if (dgram_method_get() == NULL) {
		keys_seterr(err, errlen, "dtls: cannot create the datagram bio");
		return NULL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		keys_seterr(err, errlen, "dtls: %s", strerror(ENOMEM));
		return NULL;
	}
	c->keylog_fd = -1;
	c->authorize = cfg->authorize;
	c->authorize_arg = cfg->authorize_arg;
	c->listen_output = cfg->listen_output;
	c->listen_output_arg = cfg->listen_output_arg;
	c->link_mtu = cfg->link_mtu;
	c->server_id = cfg->server_id;
	if (RAND_bytes(c->secret, sizeof(c->secret)) != 1 ||
	    RAND_bytes(c->prev_secret, sizeof(c->prev_secret)) != 1) {
		keys_seterr(err, errlen, "dtls: no random bytes: %s", keys_ssl_reason());
		goto fail;
	}
	if ((c->listen_addr = BIO_ADDR_new()) == NULL ||
	    (c->ssl_ctx = SSL_CTX_new(DTLS_method())) == NULL) {
		keys_seterr(err, errlen, "dtls: %s", keys_ssl_reason());
		goto fail;
	}
	if (ctx_setup(c, cfg, err, errlen) < 0)
		goto fail;
	if (keylog_open(c, cfg->keylog_file, err, errlen) < 0)
		goto fail;
	if (listener_new(c) < 0) {
		keys_seterr(err, errlen, "dtls: cannot create the listener");
		goto fail;
	}
	ERR_clear_error();
	return c;
fail:
	ERR_clear_error();
	dtls_ctx_free(c);
	return NULL;
}

void
dtls_ctx_free(struct dtls_ctx *c)
{
	if (c == NULL)
		return;
	dtls_sess_free(c->listener);
	SSL_CTX_free(c->ssl_ctx);
	BIO_ADDR_free(c->listen_addr);
	if (c->keylog_fd >= 0)
		close(c->keylog_fd);
	OPENSSL_cleanse(c->secret, sizeof(c->secret));
	OPENSSL_cleanse(c->prev_secret, sizeof(c->prev_secret));
	free(c);
}

const uint8_t *
dtls_ctx_fingerprint(const struct dtls_ctx *c)
{
	return c->fp;
}

void
dtls_ctx_rotate_cookie(struct dtls_ctx *c)
{
	uint8_t next[DTLS_SECRET_LEN];

	if (RAND_bytes(next, sizeof(next)) != 1) {
		ERR_clear_error();
		log_debug("dtls: cookie secret not rotated: no random bytes");
		return;
	}
	memcpy(c->prev_secret, c->secret, sizeof(c->secret));
	memcpy(c->secret, next, sizeof(next));
	OPENSSL_cleanse(next, sizeof(next));
}

/* One writev on an O_APPEND file: lines of both sides stay whole. */
void
dtls_ctx_keylog(struct dtls_ctx *c, const char *line)
{
	struct iovec iov[2];

	if (c == NULL || c->keylog_fd < 0)
		return;
	iov[0].iov_base = (void *)(uintptr_t)line;
	iov[0].iov_len = strlen(line);
	iov[1].iov_base = (void *)(uintptr_t)"\n";
	iov[1].iov_len = 1;
	if (writev(c->keylog_fd, iov, 2) < 0)
		log_debug("key log: %s", strerror(errno));
}

bool
dtls_ctx_keylog_active(const struct dtls_ctx *c)
{
	return c->keylog_fd >= 0;
}
