/* handshake.c - DTLS handshakes: initiating, listening (cookie, per-source
 * limiter, half-open table), completing (authorize, tie-break, retire),
 * failing, and the handshake retransmission timer.
 *
 * Received records' results are returned and rx.c acts on them, as
 * WireGuard's receive.c does on noise.c's.  This file tells peer_timers.c
 * what changes a peer's timers: a handshake started, one that failed and
 * left the peer without a session (from rx.c's results too, and from the
 * retransmission timer, which has no caller to return to), sessions a
 * reload ended.  Records leave through the output callbacks the daemon
 * passed to handshake_init().
 *
 * The peer of a server session is decided when the handshake completes,
 * by looking the presented key up in the configuration in force then: no
 * pointer to a peer is kept from the certificate callback, so a reload
 * that removes or changes the peer in between cannot leave one dangling. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "conf.h"
#include "ctx.h"
#include "dtls.h"
#include "gue.h"
#include "fpindex.h"
#include "handshake.h"
#include "keys.h"
#include "log.h"
#include "mlkem.h"
#include "peer.h"
#include "peer_endpoint.h"
#include "peer_timers.h"
#include "pq.h"
#include "ratelimit.h"
#include "session.h"
#include "timer.h"

/* Two sessions of one peer established within this interval came up
 * together (both sides initiated at once): the tie-break decides. */
#define HANDSHAKE_TOGETHER_MS 10000
/* A failed handshake of a peer, or from a configured peer's endpoint with
 * a key no peer has, is logged at warning at most this often per peer
 * (and at once when the kind of failure changes). */
#define HANDSHAKE_LOG_MS 60000
/* How last_error starts when a handshake was refused for a reason more
 * precise than a failure from the peer's endpoint (ambiguous()). */
#define HS_REFUSED "handshake refused: "
/* The DTLS handshake message type of a HelloVerifyRequest (RFC 6347). */
#define HS_HELLO_VERIFY_REQUEST 3

/* The handshake state of the daemon (t->hs). */
#define HS_FAILED_IDS 16

struct handshake {
	dtls_output_fn *session_output;         /* where a session's records go */
	struct ratelimit *limit;                /* cookie-verified handshakes per source */
	struct event *ev_cookie;                /* cookie secret rotation */
	/* The last key refused for matching two peers, so that its failed
	 * handshake says so; forgotten on reload. */
	bool ambiguous;
	uint8_t ambiguous_fp[DTLS_FP_LEN];
	char ambiguous_why[200];
	/* The peers by pinned fingerprint, and those with a CA, as of the
	 * peer list (pointer and length) they were made from; rebuilt on the
	 * next handshake after a change (handshake_peers_changed()). */
	struct fpindex *by_fp;
	struct peer **by_ca;
	size_t n_ca;
	struct peer *const *of_peers;
	size_t of_n;
	bool stale;
	/* The IDs of the last sessions whose handshake failed: the other
	 * side goes on retransmitting its flight to them for a while, which
	 * is no loss (a typo in a fingerprint would page as one). */
	uint64_t failed_ids[HS_FAILED_IDS];
	unsigned failed_next;
	char pq_why[240];                       /* the last HANDSHAKE_PQ_REFUSED's reason */
};

static const char *
sess_addr(const struct session *s, char *buf, size_t len)
{
	return util_sa_fmt(&s->addr, buf, len);
}

/* --- cookie ---------------------------------------------------------- */

static void
cookie_rotate(evutil_socket_t fd, short what, void *arg)
{
	struct toud *t = arg;

	(void)fd;
	(void)what;
	dtls_ctx_rotate_cookie(t->dtls);
}

static int
cookie_init(struct toud *t)
{
	struct timeval tv = { .tv_sec = DTLS_COOKIE_ROTATE_S };

	t->hs->ev_cookie = event_new(t->base, -1, EV_PERSIST, cookie_rotate, t);
	if (!t->hs->ev_cookie || event_add(t->hs->ev_cookie, &tv) < 0)
		return -ENOMEM;
	return 0;
}

/* --- per-source limiter ---------------------------------------------- */

/* Cookie-verified handshakes from one source address at most this often
 * (token buckets of ratelimit.c, which a colliding source cannot reset),
 * for at most this many sources at once. */
#define HS_RATE_PER_S 10
#define HS_RATE_BURST 20
#define HS_RATE_SOURCES 4096
/* Half-open (server, not yet authenticated) handshakes of one source. */
#define HS_HALF_OPEN_PER_SOURCE 4
/* A half-open handshake younger than this is still in its first round
 * trips: a newcomer beyond its source's quota waits for it (the client
 * sends its ClientHello again) rather than break it.  Older ones are
 * stalled, or an attacker's, and make room for the newcomer.  So many
 * clients behind one NAT address come up a few at a time instead of
 * evicting each other's handshakes. */
#define HS_HALF_OPEN_YOUNG_MS 1000
/* Until its handshake completes, a source receives at most this many times
 * the bytes it sent (RFC 9000 8.1), retransmissions included. */
#define HS_AMPLIFICATION 3

static int
limiter_init(struct toud *t)
{
	uint8_t secret[RATELIMIT_SECRET_LEN];

	if (RAND_bytes(secret, sizeof(secret)) != 1)
		return -EIO;
	t->hs->limit = ratelimit_new(HS_RATE_SOURCES, HS_RATE_PER_S, HS_RATE_BURST, secret);
	OPENSSL_cleanse(secret, sizeof(secret));
	return t->hs->limit ? 0 : -ENOMEM;
}

/* --- half-open table ------------------------------------------------- */

static bool
halfopen_full(const struct toud *t)
{
	return session_half_open(t) >= HANDSHAKE_HALF_OPEN_MAX;
}

/* --- the context ----------------------------------------------------- */

/* dtls_authorize_fn, during the handshake: is the presented key one of a
 * configured peer's?  Refusing here ends an unknown key's handshake early;
 * the peer is decided again at completion (handshake_authorize). */
static struct peer *authorize_fp(struct toud *t, const uint8_t *fp,
    struct x509_store_ctx_st *xs, const struct dtls_sess *ds);

static void *
authorize_cb(void *arg, const uint8_t fp[DTLS_FP_LEN], struct x509_store_ctx_st *xs)
{
	return authorize_fp(arg, fp, xs, NULL);
}

int
handshake_init(struct toud *t, dtls_output_fn *session_output,
    dtls_listen_output_fn *listen_output)
{
	const struct conf_iface *ifc = &t->conf->iface;
	struct dtls_ctx_config cfg = {
		.private_key = ifc->private_key,
		.certificate = ifc->certificate,
		.keylog_file = ifc->keylog_file,
		.authorize = authorize_cb,
		.authorize_arg = t,
		.listen_output = listen_output,
		.listen_output_arg = t,
		/* Bytes after the outer GUE header on the best case path
		 * (IPv4); tx.c keeps each packet within its real path. */
		.link_mtu = ifc->path_mtu - 20 - CONF_OVERHEAD_UDP - CONF_OVERHEAD_GUE_OUTER,
		.server_id = ifc->server_id,
	};
	char err[256];
	int rc;

	if (!(t->hs = calloc(1, sizeof(*t->hs))) || !(t->sessions = session_table_new()))
		return -ENOMEM;
	t->hs->session_output = session_output;
	if ((rc = limiter_init(t)) < 0)
		return rc;
	t->dtls = dtls_ctx_new(&cfg, err, sizeof(err));
	if (!t->dtls) {
		log_errx("dtls: %s", err);
		return -EINVAL;
	}
	if (dtls_ctx_keylog_active(t->dtls))
		log_warnx("writing DTLS session keys to a key log (SSLKEYLOGFILE or keylog-file): "
		    "anyone who reads it can decrypt the tunnel");
	return cookie_init(t);
}

void
handshake_free(struct toud *t)
{
	session_table_free(t->sessions);
	t->sessions = NULL;
	if (t->hs) {
		if (t->hs->ev_cookie)
			event_free(t->hs->ev_cookie);
		ratelimit_free(t->hs->limit);
		fpindex_free(t->hs->by_fp);
		free(t->hs->by_ca);
		free(t->hs);
		t->hs = NULL;
	}
	dtls_ctx_free(t->dtls);
	t->dtls = NULL;
}

/* --- authorize ------------------------------------------------------- */

/* A CA peer's check of the presented chain, against the store loaded with
 * the configuration. */
static bool
ca_ok(const struct peer *p, struct x509_store_ctx_st *xs, const struct dtls_sess *ds)
{
	const struct conf_peer *cf = p->cf;
	X509 *leaf;

	if (!p->ca_store)
		return false;
	if (ds)
		return dtls_sess_verify_ca_store(ds, p->ca_store, cf->cert_name);
	leaf = xs ? X509_STORE_CTX_get0_cert(xs) : NULL;
	return leaf && keys_verify_ca_store(leaf, X509_STORE_CTX_get0_untrusted(xs), p->ca_store,
	    cf->cert_name);
}

/* A key that two peers' configurations accept names neither: the
 * handshake is refused, and both peers (and the failure's reason) say why. */
static void
ambiguous(struct toud *t, const uint8_t *fp, struct peer *p1, struct peer *p2)
{
	struct handshake *hs = t->hs;
	char f[7 + 2 * KEYS_FP_LEN + 1];

	keys_fp_format(fp, f);
	snprintf(hs->ambiguous_why, sizeof(hs->ambiguous_why),
	    "its key %s matches both peer \"%s\" and peer \"%s\"", f, p1->name, p2->name);
	memcpy(hs->ambiguous_fp, fp, sizeof(hs->ambiguous_fp));
	hs->ambiguous = true;
	log_warnx(HS_REFUSED "%s", hs->ambiguous_why);
	peer_error_set(p1, PEER_ERR_HANDSHAKE_REFUSED, HS_REFUSED "%s", hs->ambiguous_why);
	peer_error_set(p2, PEER_ERR_HANDSHAKE_REFUSED, HS_REFUSED "%s", hs->ambiguous_why);
}

void
handshake_peers_changed(struct toud *t)
{
	if (t->hs)
		t->hs->stale = true;
}

static bool index_peers(struct toud *t);

void
handshake_index(struct toud *t)
{
	if (t->hs)
		(void)index_peers(t);      /* without memory, the next handshake tries again */
}

/* (Re)build the index of the peers by key: O(n log n) once per change of
 * the peer list, so that a handshake costs O(log n) at any number of
 * peers.  Without memory, false: the caller scans. */
static bool
index_peers(struct toud *t)
{
	struct handshake *hs = t->hs;
	size_t i, n_fp = 0, n_ca = 0;

	if (!hs->stale && hs->by_fp && hs->of_peers == t->peers && hs->of_n == t->n_peers)
		return true;
	fpindex_free(hs->by_fp);
	free(hs->by_ca);
	hs->by_ca = NULL;
	hs->n_ca = 0;
	/* Sized to what they hold: most peers have a pin and no CA. */
	for (i = 0; i < t->n_peers; i++) {
		n_fp += t->peers[i] && t->peers[i]->cf->has_fingerprint;
		n_ca += t->peers[i] && t->peers[i]->cf->ca;
	}
	if (!(hs->by_fp = fpindex_new(n_fp)) ||
	    !(hs->by_ca = calloc(n_ca ? n_ca : 1, sizeof(*hs->by_ca)))) {
		fpindex_free(hs->by_fp);
		hs->by_fp = NULL;
		return false;
	}
	for (i = 0; i < t->n_peers; i++) {
		struct peer *p = t->peers[i];

		if (p && p->cf->has_fingerprint)
			(void)fpindex_add(hs->by_fp, p->cf->fingerprint, p);
		if (p && p->cf->ca)
			hs->by_ca[hs->n_ca++] = p;
	}
	fpindex_sort(hs->by_fp);
	hs->of_peers = t->peers;
	hs->of_n = t->n_peers;
	hs->stale = false;
	return true;
}

/* The one peer that accepts key fp: by the index, or by a scan of every
 * peer when it cannot be built. */
static struct peer *
authorize_fp(struct toud *t, const uint8_t *fp, struct x509_store_ctx_st *xs,
    const struct dtls_sess *ds)
{
	struct peer *const *cand = t->peers;
	struct peer *found = NULL;
	void *other = NULL;
	size_t i, n = t->n_peers;

	if (t->hs && index_peers(t)) {
		found = fpindex_find(t->hs->by_fp, fp, &other);
		if (other) {
			ambiguous(t, fp, found, other);
			return NULL;
		}
		cand = t->hs->by_ca;
		n = t->hs->n_ca;
	}
	for (i = 0; i < n; i++) {
		const struct conf_peer *cf;

		if (!cand[i] || cand[i] == found)
			continue;
		cf = cand[i]->cf;
		if (!(cf->has_fingerprint && memcmp(cf->fingerprint, fp, DTLS_FP_LEN) == 0) &&
		    !(cf->ca && ca_ok(cand[i], xs, ds)))
			continue;
		if (found) {
			ambiguous(t, fp, found, cand[i]);
			return NULL;
		}
		found = cand[i];
	}
	return found;
}

struct peer *
handshake_authorize_key(struct toud *t, const uint8_t *fp, struct x509_store_ctx_st *xs)
{
	return authorize_fp(t, fp, xs, NULL);
}

struct peer *
handshake_authorize(struct toud *t, const struct session *s)
{
	const uint8_t *fp = dtls_sess_peer_fp(s->dtls);

	return fp ? authorize_fp(t, fp, NULL, s->dtls) : NULL;
}

/* --- the handshake timer --------------------------------------------- */

void
handshake_progress(struct session *s, uint64_t now)
{
	struct timeval tv;
	uint64_t left, elapsed = now - s->created_ms;
	bool due;

	left = elapsed >= SESSION_HANDSHAKE_MS ? 0 : SESSION_HANDSHAKE_MS - elapsed;
	/* Once up, only the initiator's PQ_CONFIRM under K1 is left to send
	 * again (doc/protocol.md 1.5), within the handshake's time. */
	due = (!s->established || dtls_sess_post_quantum(s->dtls)) &&
	    dtls_sess_timeout(s->dtls, &tv) &&
	    (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000 < left;
	if (s->established && !due) {
		evtimer_del(s->ev_timer);
		return;
	}
	if (due) {
		evtimer_add(s->ev_timer, &tv);
		return;
	}
	timer_arm_ms(s->ev_timer, left);
}

/* Why a client handshake ran out of time, from what came back: nothing
 * at all, or only cookie requests (HelloVerifyRequests).  Anything else
 * keeps the caller's words. */
static const char *
timeout_reason(const struct session *s, uint64_t now, const char *why, char *buf, size_t len)
{
	unsigned secs = (unsigned)((now - s->created_ms + 500) / 1000);

	if (!s->initiator || s->established)
		return why;
	if (!s->hs_rx_records)
		snprintf(buf, len, "no answer: nothing came back from the endpoint within %u s",
		    secs);
	else if (s->hs_rx_records == s->hs_rx_cookie_requests)
		snprintf(buf, len, "cookie exchange stuck: %u cookie request%s came back, but no "
		    "answer to the ClientHello that carried the cookie (larger datagrams lost on "
		    "the way? a NAT changing our port? handshakes limited there?)",
		    s->hs_rx_cookie_requests, s->hs_rx_cookie_requests == 1 ? "" : "s");
	else
		return why;
	return buf;
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	uint64_t now = toud_now(s->t);
	char buf[200];

	(void)fd;
	(void)what;
	if (s->established && now - s->created_ms >= SESSION_HANDSHAKE_MS)
		return;
	if (now - s->created_ms >= SESSION_HANDSHAKE_MS) {
		handshake_failed(s, timeout_reason(s, now, "timed out", buf, sizeof(buf)));
		return;
	}
	if (dtls_sess_handle_timeout(s->dtls) == DTLS_ERR_HANDSHAKE) {
		handshake_failed(s, timeout_reason(s, now, "retransmissions exhausted", buf,
		    sizeof(buf)));
		return;
	}
	handshake_progress(s, now);
}

static struct session *
hs_session_new(struct toud *t, uint64_t id, const union sockaddr_union *addr, uint64_t now)
{
	struct session *s = session_alloc(t, id, addr, now);

	if (!s)
		return NULL;
	if (!(s->ev_timer = evtimer_new(t->base, timer_cb, s))) {
		session_free(s);
		return NULL;
	}
	return s;
}

/* --- initiate -------------------------------------------------------- */

int
handshake_initiate(struct peer *p, uint64_t now)
{
	struct toud *t = p->toud;
	struct session *s;
	char buf[UTIL_ADDRSTRLEN];
	uint64_t id;
	uint8_t server_id = 0;

	if (p->next || !p->has_endpoint || now < p->hs_retry_ms)
		return 0;
	/* A rekey goes to the server the session has, through a balancer
	 * too: its ID 0 routes there (sessid.h). */
	if (p->cur && p->cur->established && p->cur->initiator)
		server_id = p->cur->server_id;
	if (!(id = session_new_id(t, server_id)) || !(s = hs_session_new(t, id, &p->endpoint, now)))
		return -ENOMEM;
	s->initiator = true;
	s->peer = p;
	if (p->cur)
		s->local = p->cur->local;
	s->dtls = dtls_sess_client(t->dtls, p, t->hs->session_output, s, &p->endpoint);
	if (!s->dtls) {
		session_free(s);
		return -ENOMEM;
	}
	/* The ALPN that asks for the ML-KEM-768 exchange, where this
	 * process has it (doc/protocol.md 1.5). */
	dtls_sess_pq_offer(s->dtls, p->cf->post_quantum != CONF_PQ_OFF);
	session_insert(s);
	p->next = s;
	event_count(t, p, EVENT_HANDSHAKE_STARTED);
	log_debug("peer \"%s\" (%s): handshake %016llx started", p->name,
	    sess_addr(s, buf, sizeof(buf)), (unsigned long long)id);
	peer_timers_handshake_started(p);
	if (dtls_sess_handshake(s->dtls) == DTLS_ERR_HANDSHAKE) {
		session_free(s);
		peer_timers_handshake_failed(p, "refused at once");
		return -EPROTO;
	}
	handshake_progress(s, now);
	return 0;
}

/* --- listen ---------------------------------------------------------- */

/* Server handshakes that may be evicted: not authenticated, and the client
 * has not even presented an accepted certificate yet. */
static bool
halfopen_unverified(const struct session *s)
{
	return s->half_open && (!s->dtls || !dtls_sess_peer_fp(s->dtls));
}

struct admit_ctx {
	struct toud *t;
	uint64_t id;
	const struct ipaddr *local;
	size_t rec_len;
	uint64_t now;
	struct session *s;
};

/* dtls_admit_fn: a ClientHello with a valid cookie.  Only now is the
 * source charged (a forged or cookie-less record costs nobody's tokens;
 * a handshake that authenticates gets its token back), and the half-open
 * table is bounded per source and in all: a source at its quota loses its
 * oldest half-open handshake once that is no longer young (until then the
 * newcomer waits), a full table its oldest unverified one, so a flood
 * never locks a configured peer out. */
static void *
listen_admit(void *arg, const union sockaddr_union *from, size_t credit)
{
	struct admit_ctx *a = arg;
	struct toud *t = a->t;
	struct session *s, *oldest = NULL, *oldest_src = NULL;
	struct ipaddr src, other;
	unsigned n_src = 0;

	util_sa_to_addr(from, &src, NULL);
	for (s = session_next_half_open(t, NULL); s; s = session_next_half_open(t, s)) {
		if (!halfopen_unverified(s))
			continue;
		if (!oldest || s->created_ms < oldest->created_ms)
			oldest = s;
		util_sa_to_addr(&s->addr, &other, NULL);
		if (!util_addr_equal(&src, &other))
			continue;
		n_src++;
		if (!oldest_src || s->created_ms < oldest_src->created_ms)
			oldest_src = s;
	}
	if (n_src >= HS_HALF_OPEN_PER_SOURCE && a->now - oldest_src->created_ms <
	    HS_HALF_OPEN_YOUNG_MS) {
		t->drops[DROP_HS_RATE]++;
		return NULL;
	}
	if (!ratelimit_allow(t->hs->limit, &src, a->now)) {
		t->drops[DROP_HS_RATE]++;
		return NULL;
	}
	if (n_src >= HS_HALF_OPEN_PER_SOURCE)
		oldest = oldest_src;
	else if (!halfopen_full(t))
		oldest = NULL;
	if (oldest) {
		t->drops[DROP_HS_EVICTED]++;
		session_free(oldest);
	}
	if (halfopen_full(t)) {
		t->drops[DROP_HS_RATE]++;
		return NULL;
	}
	if (!(s = hs_session_new(t, a->id, from, a->now))) {
		t->drops[DROP_HANDSHAKE]++;
		return NULL;
	}
	if (a->local && a->local->family)
		s->local = *a->local;     /* an accepted hello is answered at once */
	/* Both ClientHellos were this source's (the cookie binds the first
	 * one's size and this session ID); our HelloVerifyRequest was no
	 * larger than the first. */
	s->hs_rx = 2 * GUE_OUTER_LEN + credit + a->rec_len;
	s->hs_tx = GUE_OUTER_LEN + credit;
	session_insert(s);
	session_half_open_add(s);
	a->s = s;
	return s;
}

/* Whether id is that of a session whose handshake failed lately. */
static bool
failed_lately(const struct handshake *hs, uint64_t id)
{
	unsigned i;

	for (i = 0; i < HS_FAILED_IDS; i++)
		if (hs->failed_ids[i] == id && id != 0)
			return true;
	return false;
}

/* A record for an unknown session ID.  A ClientHello without a valid
 * cookie is answered by the stateless listener and leaves nothing behind. */
void
handshake_listen(struct toud *t, uint64_t id, const uint8_t *rec, size_t len,
    const union sockaddr_union *from, const struct ipaddr *local, uint64_t now)
{
	struct admit_ctx a = { .t = t, .id = id, .local = local, .rec_len = len, .now = now };
	struct dtls_sess *ds = NULL;
	enum dtls_listen_result r;

	/* The retired first ID of a live session stays its name inside toud:
	 * a new handshake may not take it. */
	/* The rest of a handshake that failed here: the other side's
	 * retransmissions and alerts, an event (events.h), not a loss.  Data
	 * records under it (the other side thought it done) stay what they
	 * are, records of no session. */
	if (rec[0] != DTLS_CT_APPDATA && failed_lately(t->hs, id) && !session_named(t, id)) {
		event_count(t, NULL, EVENT_HANDSHAKE_LATE_RECORD);
		return;
	}
	if (rec[0] != DTLS_CT_HANDSHAKE || session_named(t, id)) {
		t->drops[DROP_UNKNOWN_SESSION]++;
		return;
	}
	r = dtls_listen_admit(t->dtls, rec, len, from, id, t->hs->session_output, listen_admit,
	    &a, &ds);
	switch (r) {
	case DTLS_LISTEN_ACCEPTED:
		break;
	case DTLS_LISTEN_REPLIED:
		event_count(t, NULL, EVENT_COOKIE_REQUESTED);
		t->drops[DROP_HS_COOKIE]++;
		return;
	case DTLS_LISTEN_REFUSED:
		return;                 /* counted by listen_admit */
	case DTLS_LISTEN_FAILED: {
		const char *mm = dtls_ctx_listen_mismatch(t->dtls);
		char why[200];

		if (mm)
			snprintf(why, sizeof(why), "version/cipher mismatch: %s", mm);
		handshake_failed(a.s, mm ? why : "refused");
		return;
	}
	case DTLS_LISTEN_DROP:
	default:
		t->drops[DROP_UNKNOWN_SESSION]++;
		return;
	}
	a.s->dtls = ds;
	event_count(t, NULL, EVENT_HANDSHAKE_ACCEPTED);
	if (dtls_sess_handshake(ds) == DTLS_ERR_HANDSHAKE) {
		handshake_failed(a.s, "refused");
		return;
	}
	handshake_progress(a.s, now);
}

/* --- amplification budget -------------------------------------------- */

void
handshake_received(struct session *s, const uint8_t *rec, size_t rlen, size_t len)
{
	if (s->established)
		return;
	if (!s->initiator) {
		s->hs_rx += len;
		return;
	}
	/* An epoch 0 handshake record is plaintext: its first message type
	 * follows the record header. */
	s->hs_rx_records++;
	if (rlen > DTLS_RECORD_HDR && rec[0] == DTLS_CT_HANDSHAKE && rec[3] == 0 && rec[4] == 0 &&
	    rec[DTLS_RECORD_HDR] == HS_HELLO_VERIFY_REQUEST)
		s->hs_rx_cookie_requests++;
}

bool
handshake_may_send(struct session *s, size_t len)
{
	uint64_t n = GUE_OUTER_LEN + len;

	if (s->initiator || s->established)
		return true;
	if (s->hs_tx + n > HS_AMPLIFICATION * s->hs_rx) {
		s->t->drops[DROP_HS_AMPLIFICATION]++;
		return false;
	}
	s->hs_tx += n;
	return true;
}

/* --- established: tie-break and retire ------------------------------- */

static void psk_mismatch(struct session *s, struct peer *p);

/* A session replaces one that has been up for a while (rekey, or the peer
 * restarted); two that came up together (both sides initiated at once) are
 * decided by fingerprint: the session started by the node with the lower
 * fingerprint wins, which both nodes compute alike. */
bool
handshake_newer_wins(const struct session *new, const struct session *old,
    const uint8_t *my_fp, const uint8_t *their_fp)
{
	bool i_am_lower;

	if (new->established_ms - old->established_ms >= HANDSHAKE_TOGETHER_MS)
		return true;
	if (new->initiator == old->initiator)
		return true;
	i_am_lower = memcmp(my_fp, their_fp, DTLS_FP_LEN) < 0;
	return new->initiator == i_am_lower;
}

static void
retire(struct session *s)
{
	struct peer *p = s->peer;

	if (p->prev)
		session_free(p->prev);
	p->prev = s;
	if (p->cur == s)
		p->cur = NULL;
	session_drain(s);
}

const char *
handshake_pq_why(const struct toud *t)
{
	return t->hs->pq_why;
}

/* post-quantum = required for p, and the handshake of s did not select the
 * ML-KEM-768 exchange: say why in a refusal (control message 7, which the
 * other side logs) and close_notify, count it, and leave the reason for
 * the caller. */
static enum handshake_done
pq_refuse(struct session *s, struct peer *p)
{
	struct handshake *hs = s->t->hs;
	bool have = mlkem_available();
	uint8_t msg[GUE_WORD_LEN + PQ_REFUSAL_LEN];

	pq_why_refused(hs->pq_why, sizeof(hs->pq_why), dtls_sess_key_exchange(s->dtls), have,
	    mlkem_openssl_version());
	gue_control_encode(msg, GUE_CTYPE_PQ_REFUSE);
	pq_refusal_encode(msg + GUE_WORD_LEN, have, dtls_sess_pq_offered(s->dtls));
	if (dtls_sess_send_control(s->dtls, msg, sizeof(msg)) < 0)
		log_debug("peer \"%s\": refusal not sent", p->name);
	dtls_sess_close(s->dtls);
	/* For the log and the back-off of the failure (a responder's
	 * session had no peer until now). */
	s->peer = p;
	event_count(s->t, p, EVENT_PQ_REFUSED);
	return HANDSHAKE_PQ_REFUSED;
}

void
handshake_pq_refused(struct session *s, const uint8_t *body, size_t len)
{
	struct peer *p = s->peer;
	char buf[UTIL_ADDRSTRLEN], why[200];
	bool peer_has;

	if (pq_refusal_decode(body, len, &peer_has) < 0)
		return;
	pq_why_peer_refused(why, sizeof(why), peer_has, mlkem_available(),
	    mlkem_openssl_version(), p->cf->post_quantum);
	log_warnx("peer \"%s\" (%s): session %016llx refused: %s", p->name,
	    sess_addr(s, buf, sizeof(buf)), (unsigned long long)s->id, why);
	peer_error_set(p, PEER_ERR_PQ_REFUSED, "session refused: %s", why);
	event_count(s->t, p, EVENT_PQ_REFUSED);
	session_free(s);
	if (!p->cur && !p->next)
		peer_timers_handshake_failed(p, why);
}

/* The first DTLS_DONE of s, for peer p: the preshared key, the session
 * IDs, and the post-quantum policy.  HANDSHAKE_UP to go on at once. */
static enum handshake_done
authenticated(struct session *s, struct peer *p)
{
	struct toud *t = s->t;
	bool pq = dtls_sess_pq_selected(s->dtls);

	/* The data keys mix in the peer's preshared key before any record
	 * is sealed or opened with them. */
	if (dtls_sess_set_psk(s->dtls, p->cf->has_psk ? p->cf->psk : NULL) < 0) {
		log_warnx("peer \"%s\": cannot derive the data keys from the preshared key",
		    p->name);
		return HANDSHAKE_REFUSED;
	}
	session_ids_start(s);
	if (s->half_open && !s->initiator) {
		struct ipaddr src;

		util_sa_to_addr(&s->addr, &src, NULL);
		ratelimit_refund(t->hs->limit, &src);
	}
	session_half_open_done(s);
	/* Under a server ID the initiator has moved to ID 1 (session.h);
	 * with the exchange the responder goes there at once too, where it
	 * would follow the first record under ID 1, so that its PQ_REPLY
	 * does not carry the unroutable ID 0. */
	if (pq && !s->initiator && s->server_id)
		session_ids_use(s, 1);
	/* A server selects the exchange whenever it is offered: its peer's
	 * policy was not known then, and the exchange is what both sides
	 * agreed on; off only keeps a client from offering it. */
	if (!pq && p->cf->post_quantum == CONF_PQ_REQUIRED)
		return pq_refuse(s, p);
	if (!pq)
		return HANDSHAKE_UP;
	if (dtls_sess_pq_start(s->dtls, p->cf->has_psk ? p->cf->psk : NULL) < 0) {
		log_warnx("peer \"%s\": cannot start the ML-KEM-768 exchange: %s", p->name,
		    dtls_sess_pq_error(s->dtls) ? dtls_sess_pq_error(s->dtls) : "?");
		return HANDSHAKE_REFUSED;
	}
	s->pq_wait = true;
	log_debug("peer \"%s\": session %016llx: handshake done, ML-KEM-768 exchange started",
	    p->name, (unsigned long long)s->id);
	return HANDSHAKE_PQ_WAIT;
}

enum handshake_done
handshake_established(struct session *s, uint64_t now)
{
	struct toud *t = s->t;
	struct peer *p = handshake_authorize(t, s);
	const uint8_t *fp = dtls_sess_peer_fp(s->dtls);
	char buf[UTIL_ADDRSTRLEN], id[17];
	enum handshake_done d;

	/* The client asked for one peer; the server takes whichever the key
	 * names now.  Either way the configuration must still accept it. */
	if (!p || !fp || (s->peer && s->peer != p))
		return HANDSHAKE_REFUSED;
	/* The second time (the exchange is through), all that is done. */
	if (!s->pq_wait && (d = authenticated(s, p)) != HANDSHAKE_UP)
		return d;
	if (s->pq_wait && dtls_sess_pq_pending(s->dtls))
		return HANDSHAKE_PQ_WAIT;
	s->pq_wait = false;
	s->peer = p;
	s->established = true;
	s->established_ms = now;
	s->last_rx_ms = now;
	handshake_progress(s, now);
	/* Kept for the tie-break (a CA peer has no configured fingerprint). */
	memcpy(p->key_fp, fp, DTLS_FP_LEN);
	if (p->next == s)
		p->next = NULL;
	if (p->cur && !handshake_newer_wins(s, p->cur, dtls_ctx_fingerprint(t->dtls), p->key_fp)) {
		retire(s);
		return HANDSHAKE_KEPT_OLD;
	}
	if (p->cur)
		retire(p->cur);
	p->cur = s;
	peer_endpoint_set(p, &s->addr);
	p->last_handshake = util_wall_s();
	p->last_rx_ms = now;
	snprintf(id, sizeof(id), "%016llx", (unsigned long long)s->id);
	log_info("peer \"%s\" (%s): session %s established (%s, %s, %s)", p->name,
	    sess_addr(s, buf, sizeof(buf)), id, s->initiator ? "initiator" : "responder",
	    dtls_sess_cipher(s->dtls), dtls_sess_key_exchange(s->dtls));
	event_count(t, p, EVENT_HANDSHAKE_COMPLETED);
	return HANDSHAKE_UP;
}

void
handshake_psk_mismatch(struct session *s)
{
	psk_mismatch(s, s->peer);
}

/* While the ML-KEM-768 exchange runs, its messages are all there is under
 * the first keys (K0): until one of them opened (which shows that both
 * sides have the same keys), one that fails is a preshared-key mismatch
 * as the first records of an established session are (rx.c,
 * rx_bad_record), and is answered the same way, with a keepalive under
 * K0, so that the other side, waiting for an answer, learns it too.  The
 * last of them is reported, and kept; the session goes on: anyone who
 * sees its ID can send records that fail, and the exchange's deadline
 * ends a session that cannot complete. */
void
handshake_pq_bad_record(struct session *s)
{
	/* A responder's session is given its peer when it is up: the
	 * configuration in force names it now. */
	struct peer *p = s->peer ? s->peer : handshake_authorize(s->t, s);
	uint8_t ka[GUE_WORD_LEN];

	drop_count(s->t, p, DROP_BAD_RECORD, 1);
	if (!p || (p->cur && p->cur != s) || dtls_sess_pq_heard(s->dtls) ||
	    s->auth_probes >= HANDSHAKE_PSK_PROBES)
		return;
	s->auth_probes++;
	gue_control_encode(ka, GUE_CTYPE_KEEPALIVE);
	if (dtls_sess_send_control(s->dtls, ka, sizeof(ka)) < 0)
		log_debug("peer \"%s\": keepalive not sent", p->name);
	if (s->auth_probes == HANDSHAKE_PSK_PROBES)
		psk_mismatch(s, p);
}

static void
psk_mismatch(struct session *s, struct peer *p)
{
	char buf[UTIL_ADDRSTRLEN];
	const char *hint = p->cf->has_psk ?
	    "preshared-key names another key on the other side, or none there" :
	    "the other side has a preshared-key for this node, this side none";

	log_warnx("peer \"%s\" (%s): session %016llx: preshared-key mismatch: its first "
	    "records fail authentication (%s)", p->name, sess_addr(s, buf, sizeof(buf)),
	    (unsigned long long)s->id, hint);
	/* Kept: the handshake that times out later says less. */
	peer_error_keep(p, PEER_ERR_PSK_MISMATCH, "preshared-key mismatch: %s", hint);
	event_count(s->t, p, EVENT_PSK_MISMATCH);
}

/* --- failed ---------------------------------------------------------- */

static bool
any_ca_peer(const struct toud *t)
{
	size_t i;

	for (i = 0; i < t->n_peers; i++)
		if (t->peers[i] && t->peers[i]->cf->ca)
			return true;
	return false;
}

/* The reason a handshake of s (for peer p, or NULL) failed, in the
 * administrator's terms: which side rejected what.  The most common
 * mistake, a wrong pinned fingerprint, names both keys.  The kinds start
 * with words of their own: "its key", "its certificate", "version/cipher
 * mismatch", "rejected by the other side"; a timeout's come from
 * timeout_reason() through why ("no answer", "cookie exchange stuck"). */
static const char *
failure_reason(const struct session *s, const struct peer *p, const char *why, char *out,
    size_t len)
{
	const uint8_t *fp = s->dtls ? dtls_sess_refused_fp(s->dtls) : NULL;
	const char *alert = s->dtls ? dtls_sess_alert(s->dtls) : NULL;
	const char *mm = s->dtls ? dtls_sess_mismatch(s->dtls) : NULL;
	char got[7 + 2 * KEYS_FP_LEN + 1], want[sizeof(got)];

	const struct handshake *hs = s->t->hs;

	if (fp && hs->ambiguous && memcmp(fp, hs->ambiguous_fp, KEYS_FP_LEN) == 0) {
		snprintf(out, len, "%s", hs->ambiguous_why);
	} else if (fp) {
		keys_fp_format(fp, got);
		if (p && p->cf->has_fingerprint) {
			keys_fp_format(p->cf->fingerprint, want);
			snprintf(out, len, "its key %s does not match the pinned %s", got, want);
		} else if (p && p->cf->ca) {
			snprintf(out, len, "its certificate (key %s) is not one %s issued for \"%s\"",
			    got, p->cf->ca, p->cf->cert_name ? p->cf->cert_name : "");
		} else if (any_ca_peer(s->t)) {
			snprintf(out, len, "its key %s is pinned by no peer, nor its certificate "
			    "one a peer's CA issued for that peer's name", got);
		} else {
			snprintf(out, len, "its key %s is pinned by no peer", got);
		}
	} else if (mm) {
		snprintf(out, len, "version/cipher mismatch: %s", mm);
	} else if (alert) {
		snprintf(out, len, "rejected by the other side (alert: %s)%s", alert,
		    strcmp(alert, "bad certificate") == 0 || strcmp(alert, "handshake failure") == 0 ?
		    "; does it pin this node's key (touctl show: fingerprint)?" : "");
	} else if (p && p->unreachable_ms && p->unreachable_ms >= s->created_ms &&
	    util_sa_equal(&s->addr, &p->endpoint)) {
		/* No answer because nothing listens: the ICMP said so. */
		char what[PEER_UNREACHABLE_MAX];

		snprintf(out, len, "%s (ICMP port unreachable)",
		    peer_unreachable_fmt(p, what, sizeof(what)));
	} else {
		snprintf(out, len, "%s", why);
	}
	return out;
}

/* Whether a failure of peer p's handshakes is due at warning: once a
 * minute, and at once when the kind of reason (its words up to the first
 * ':' or '(') is not the one logged last. */
static bool
log_due(struct peer *p, const char *reason, uint64_t now)
{
	char kind[sizeof(p->hs_log_kind)];

	snprintf(kind, sizeof(kind), "%.*s", (int)strcspn(reason, ":("), reason);
	if (p->hs_log_ms && now - p->hs_log_ms < HANDSHAKE_LOG_MS &&
	    strcmp(kind, p->hs_log_kind) == 0)
		return false;
	p->hs_log_ms = now;
	memcpy(p->hs_log_kind, kind, sizeof(kind));
	return true;
}

/* Count, log and free s; the peer it was for (NULL for an unauthenticated
 * one). */
static struct peer *
fail(struct session *s, const char *why)
{
	struct peer *p = s->peer, *at;
	char buf[UTIL_ADDRSTRLEN], reason[240];
	uint64_t now = toud_now(s->t);
	/* While another path carries the peer's traffic, a handshake was a
	 * probe of UDP: counted as an event, not a loss, and said at debug. */
	bool probe = p && peer_on_fallback(p);

	event_count(s->t, p, EVENT_HANDSHAKE_FAILED);
	if (!probe)
		drop_count(s->t, p, DROP_HANDSHAKE, 1);
	s->t->hs->failed_ids[s->t->hs->failed_next++ % HS_FAILED_IDS] = s->id;
	failure_reason(s, p, why, reason, sizeof(reason));
	if (p) {
		if (!probe && log_due(p, reason, now))
			log_warnx("peer \"%s\" (%s): handshake failed: %s", p->name,
			    sess_addr(s, buf, sizeof(buf)), reason);
		else
			log_debug("peer \"%s\" (%s): handshake failed: %s", p->name,
			    sess_addr(s, buf, sizeof(buf)), reason);
		if (!probe)
			peer_error_set(p, PEER_ERR_HANDSHAKE_FAILED, "handshake failed: %s", reason);
		session_free(s);
		return p;
	}
	/* From where a configured peer is: the administrator wants to know
	 * (once a minute), whoever else tries is noise.  A peer that has no
	 * session says it in last_error too, unless it already says why more
	 * precisely (a certificate two peers accept, see ambiguous()). */
	at = peer_find_by_endpoint(s->t, &s->addr);
	if (at && !at->cur && !at->next) {
		if (strncmp(peer_error(at), HS_REFUSED, strlen(HS_REFUSED)) != 0)
			peer_error_set(at, PEER_ERR_HANDSHAKE_FAILED,
			    "handshake from its endpoint failed: %s", reason);
		/* Its handshakes fail on this side too: dead, not idle (no
		 * retry is armed: the other side initiates). */
		peer_event(at, PEER_EV_HANDSHAKE_FAILED);
	}
	if (at && log_due(at, reason, now)) {
		log_warnx("handshake from %s, the endpoint of peer \"%s\", failed: %s",
		    sess_addr(s, buf, sizeof(buf)), at->name, reason);
	} else {
		log_debug_rl("handshake from %s failed: %s", sess_addr(s, buf, sizeof(buf)), reason);
	}
	session_free(s);
	return NULL;
}

void
handshake_failed(struct session *s, const char *why)
{
	struct peer *p = fail(s, why);

	if (p && !p->cur && !p->next)
		peer_timers_handshake_failed(p, why);
}

/* --- reload: sessions whose key the configuration no longer accepts -- */

size_t
handshake_reauthorize(struct toud *t)
{
	size_t i, ended = 0;

	t->hs->ambiguous = false;       /* what matched two peers may not now */
	t->hs->stale = true;            /* nor does the index of the keys */
	for (i = 0; i < t->n_peers; i++) {
		struct peer *p = t->peers[i];
		struct session *ss[3];
		unsigned k, here = 0;

		if (!p)
			continue;
		ss[0] = p->cur;
		ss[1] = p->next;
		ss[2] = p->prev;
		for (k = 0; k < 3; k++) {
			struct session *s = ss[k];

			/* A running client handshake is checked at completion. */
			if (!s || !s->established || handshake_authorize(t, s) == p)
				continue;
			log_warnx("peer \"%s\": session %016llx ended: its key is no longer "
			    "accepted for this peer", p->name, (unsigned long long)s->id);
			peer_error_set(p, PEER_ERR_KEY_REJECTED, "session ended: key no longer accepted");
			session_end(s);
			here++;
		}
		if (here)
			peer_timers_sessions_ended(p);
		ended += here;
	}
	handshake_index(t);
	return ended;
}

/* --- rekey ----------------------------------------------------------- */

uint64_t
handshake_max_age_ms(const struct toud *t)
{
	return conf_session_max_age_ms(&t->conf->iface);
}

bool
handshake_needs_rekey(const struct peer *p, uint64_t now)
{
	const struct session *s = p->cur;
	const struct conf_iface *ifc = &p->toud->conf->iface;

	if (!s || p->next)
		return false;
	if (s->bytes >= ifc->rekey_bytes || dtls_sess_records(s->dtls) >= ifc->rekey_records ||
	    s->seq_low)
		return true;
	/* Both roles replace a session at its maximum age, so no key once
	 * accepted keeps access for longer whoever initiated. */
	if (now - s->established_ms >= handshake_max_age_ms(p->toud))
		return true;
	/* By time, only the initiator rekeys, so both sides do not race. */
	return s->initiator && now - s->established_ms >= 1000ULL * ifc->rekey_seconds;
}
