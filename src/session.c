/* session.c - DTLS sessions: the session-ID table, handshakes (initiator
 * and cookie-checked responder), sealing and opening data, the choice of
 * the session a peer sends on, and the roaming rule. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "conf.h"
#include "dtls.h"
#include "gue.h"
#include "log.h"
#include "peer.h"
#include "rx.h"
#include "session.h"
#include "toud.h"
#include "tx.h"

/* A handshake from one source address at most this often (token bucket). */
#define HS_RATE_PER_S 10
#define HS_RATE_BURST 20
/* Sent data unanswered this long means the peer lost our session (it
 * restarted, say): start a new handshake rather than wait for a timer. */
#define SESSION_STALE_MS 5000
/* Roams are logged at most once per this interval per peer. */
#define ROAM_LOG_MS 1000

static inline unsigned
bucket(uint64_t id)
{
	return (unsigned)((id ^ id >> 29 ^ id >> 47) & (TOUD_SESSION_BUCKETS - 1));
}

struct session *
session_find(struct toud *t, uint64_t id)
{
	struct session *s;

	for (s = t->sessions[bucket(id)]; s; s = s->hnext)
		if (s->id == id)
			return s;
	return NULL;
}

static void
table_insert(struct session *s)
{
	struct toud *t = s->t;
	unsigned b = bucket(s->id);

	s->hnext = t->sessions[b];
	t->sessions[b] = s;
}

static void
table_remove(struct session *s)
{
	struct session **pp;

	for (pp = &s->t->sessions[bucket(s->id)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == s) {
			*pp = s->hnext;
			return;
		}
	}
}

static const char *
sess_addr(const struct session *s, char *buf, size_t len)
{
	return util_sa_fmt(&s->addr, buf, len);
}

/* The output callback of every session: frame the record and queue it. */
static void
session_output(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to)
{
	struct session *s = arg;

	tx_queue_record(s->t, s->id, rec, len, to, &s->local, s->peer, s->tx_tos);
}

/* HelloVerifyRequests: the reply carries the ID of the ClientHello. */
static void
listen_output(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to)
{
	struct toud *t = arg;

	tx_queue_record(t, t->listen_id, rec, len, to, NULL, NULL, 0);
}

/* dtls_authorize_fn: find the peer whose pinned fingerprint, or CA and
 * name, the presented certificate satisfies. */
static void *
authorize(void *arg, const uint8_t fp[DTLS_FP_LEN], struct x509_store_ctx_st *xs)
{
	struct toud *t = arg;
	size_t i;

	for (i = 0; i < t->n_peers; i++) {
		const struct conf_peer *cf = t->peers[i]->cf;

		if ((cf->has_fingerprint && memcmp(cf->fingerprint, fp, DTLS_FP_LEN) == 0) ||
		    (cf->ca && dtls_verify_ca(xs, cf->ca, cf->cert_name))) {
			/* Kept for the initiator tie-break (a CA peer has no
			 * configured fingerprint). */
			memcpy(t->peers[i]->key_fp, fp, DTLS_FP_LEN);
			return t->peers[i];
		}
	}
	return NULL;
}

static void
cookie_rotate(evutil_socket_t fd, short what, void *arg)
{
	struct toud *t = arg;

	(void)fd;
	(void)what;
	dtls_ctx_rotate_cookie(t->dtls);
}

int
session_table_init(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	struct dtls_ctx_config cfg = {
		.private_key = ifc->private_key,
		.certificate = ifc->certificate,
		.keylog_file = ifc->keylog_file,
		.authorize = authorize,
		.authorize_arg = t,
		.listen_output = listen_output,
		.listen_output_arg = t,
		/* Bytes after the outer GUE header on the best case path
		 * (IPv4); tx.c keeps each packet within its real path. */
		.link_mtu = ifc->path_mtu - 20 - CONF_OVERHEAD_UDP - CONF_OVERHEAD_GUE_OUTER,
	};
	struct timeval tv = { .tv_sec = DTLS_COOKIE_ROTATE_S };
	char err[256];

	t->dtls = dtls_ctx_new(&cfg, err, sizeof(err));
	if (!t->dtls) {
		log_warnx("dtls: %s", err);
		return -EINVAL;
	}
	if (dtls_ctx_keylog_active(t->dtls))
		log_warnx("writing DTLS session keys to a key log (SSLKEYLOGFILE or keylog-file): "
		    "anyone who reads it can decrypt the tunnel");
	t->ev_cookie = event_new(t->base, -1, EV_PERSIST, cookie_rotate, t);
	if (!t->ev_cookie || event_add(t->ev_cookie, &tv) < 0)
		return -ENOMEM;
	return 0;
}

void
session_table_free(struct toud *t)
{
	unsigned b;

	for (b = 0; b < TOUD_SESSION_BUCKETS; b++)
		while (t->sessions[b])
			session_free(t->sessions[b]);
	if (t->ev_cookie)
		event_free(t->ev_cookie);
	t->ev_cookie = NULL;
	dtls_ctx_free(t->dtls);
	t->dtls = NULL;
}

static struct session *
session_alloc(struct toud *t, uint64_t id, const union sockaddr_union *addr)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->t = t;
	s->id = id;
	s->addr = *addr;
	s->created_ms = util_now_ms();
	if (session_timers_init(s) < 0) {
		free(s);
		return NULL;
	}
	return s;
}

void
session_free(struct session *s)
{
	struct peer *p = s->peer;

	if (p) {
		if (p->cur == s)
			p->cur = NULL;
		if (p->next == s)
			p->next = NULL;
		if (p->prev == s)
			p->prev = NULL;
	}
	if (!s->established && !s->initiator && !s->peer && s->t->n_half_open)
		s->t->n_half_open--;
	table_remove(s);
	session_timers_free(s);
	dtls_sess_free(s->dtls);
	free(s);
}

static uint64_t
new_session_id(struct toud *t)
{
	uint64_t id;

	do {
		if (RAND_bytes((unsigned char *)&id, sizeof(id)) != 1)
			return 0;
	} while (id == 0 || session_find(t, id));
	return id;
}

int
session_initiate(struct peer *p)
{
	struct toud *t = p->toud;
	struct session *s;
	char buf[UTIL_ADDRSTRLEN];
	uint64_t id;

	if (p->next || !p->has_endpoint || util_now_ms() < p->hs_retry_ms)
		return 0;
	if (!(id = new_session_id(t)) || !(s = session_alloc(t, id, &p->endpoint)))
		return -ENOMEM;
	s->initiator = true;
	s->peer = p;
	s->local = p->local;
	s->dtls = dtls_sess_client(t->dtls, p, session_output, s, &p->endpoint);
	if (!s->dtls) {
		session_free(s);
		return -ENOMEM;
	}
	table_insert(s);
	p->next = s;
	if (!p->cur)
		peer_set_state(p, PEER_HANDSHAKING);
	log_debug("peer \"%s\" (%s): handshake %016llx started", p->name,
	    sess_addr(s, buf, sizeof(buf)), (unsigned long long)id);
	if (dtls_sess_handshake(s->dtls) == DTLS_ERR_HANDSHAKE) {
		session_free(s);
		peer_timers_hs_failed(p);
		return -EPROTO;
	}
	session_timers_handshake(s);
	/* Out now: a timer may have started this, with no flush after it. */
	tx_flush_records(t);
	return 0;
}

/* Which of two established sessions of one peer survives.  A session
 * replaces one that has been up for a while (rekey, or the peer
 * restarted); two that came up together (both sides initiated at once) are
 * decided by fingerprint: the session started by the node with the lower
 * fingerprint wins, which both nodes compute alike. */
static bool
newer_wins(const struct session *new, const struct session *old)
{
	const uint8_t *mine = dtls_ctx_fingerprint(new->t->dtls);
	const uint8_t *theirs = new->peer->key_fp;
	bool i_am_lower;

	if (new->established_ms - old->established_ms >= SESSION_DRAIN_MS)
		return true;
	if (new->initiator == old->initiator)
		return true;
	i_am_lower = memcmp(mine, theirs, DTLS_FP_LEN) < 0;
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
	session_timers_drain(s);
}

static void
session_established(struct session *s)
{
	struct toud *t = s->t;
	struct peer *p = s->peer;
	char buf[UTIL_ADDRSTRLEN], id[17];

	if (!s->initiator && t->n_half_open)
		t->n_half_open--;
	s->established = true;
	s->established_ms = util_now_ms();
	s->last_rx_ms = s->established_ms;
	if (p->next == s)
		p->next = NULL;
	if (p->cur && !newer_wins(s, p->cur)) {
		retire(s);
		return;
	}
	if (p->cur)
		retire(p->cur);
	p->cur = s;
	p->endpoint = s->addr;
	p->has_endpoint = true;
	if (s->local.family)
		p->local = s->local;
	p->last_handshake = util_wall_s();
	p->last_rx_ms = s->established_ms;
	p->hs_failures = 0;
	p->hs_retry_ms = 0;
	p->reconnect = false;
	snprintf(id, sizeof(id), "%016llx", (unsigned long long)s->id);
	log_info("peer \"%s\" (%s): session %s established (%s, %s)", p->name,
	    sess_addr(s, buf, sizeof(buf)), id, s->initiator ? "initiator" : "responder",
	    dtls_sess_cipher(s->dtls));
	peer_set_state(p, PEER_UP);
	peer_timers_established(p);
	peer_pending_flush(p);
}

static void
session_failed(struct session *s, const char *why)
{
	struct peer *p = s->peer;
	char buf[UTIL_ADDRSTRLEN];

	if (p) {
		p->drops[DROP_HANDSHAKE]++;
		log_info("peer \"%s\" (%s): handshake failed: %s", p->name,
		    sess_addr(s, buf, sizeof(buf)), why);
		session_free(s);
		if (!p->cur && !p->next)
			peer_timers_hs_failed(p);
		return;
	}
	s->t->drops[DROP_HANDSHAKE]++;
	log_debug_rl("handshake from %s failed: %s", sess_addr(s, buf, sizeof(buf)), why);
	session_free(s);
}

/* Called by peer_timers.c when the handshake timer fires. */
void
session_handshake_timeout(struct session *s)
{
	if (util_now_ms() - s->created_ms >= SESSION_HANDSHAKE_MS) {
		session_failed(s, "timed out");
		return;
	}
	if (dtls_sess_handle_timeout(s->dtls) == DTLS_ERR_HANDSHAKE) {
		session_failed(s, "retransmissions exhausted");
		return;
	}
	session_timers_handshake(s);
	tx_flush_records(s->t);
}

/* Token bucket per source address (hashed into a small table). */
static bool
hs_rate_ok(struct toud *t, const union sockaddr_union *from, uint64_t now)
{
	struct ipaddr a;
	uint32_t h = 2166136261u;
	size_t i, n;
	unsigned slot;

	util_sa_to_addr(from, &a, NULL);
	n = util_addr_len(a.family);
	for (i = 0; i < n; i++)
		h = (h ^ a.b[i]) * 16777619u;
	slot = h & (TOUD_HS_RATE_SLOTS - 1);
	if (t->hs_rate[slot].key != h) {
		t->hs_rate[slot].key = h;
		t->hs_rate[slot].tokens = HS_RATE_BURST;
		t->hs_rate[slot].stamp_ms = now;
	} else {
		uint64_t add = (now - t->hs_rate[slot].stamp_ms) * HS_RATE_PER_S / 1000;
		if (add) {
			t->hs_rate[slot].tokens = (uint32_t)(t->hs_rate[slot].tokens + add > HS_RATE_BURST ?
			    HS_RATE_BURST : t->hs_rate[slot].tokens + add);
			t->hs_rate[slot].stamp_ms = now;
		}
	}
	if (!t->hs_rate[slot].tokens)
		return false;
	t->hs_rate[slot].tokens--;
	return true;
}

/* A record for an ID we do not know: only a ClientHello may start a session. */
static void
session_listen(struct toud *t, uint64_t id, const uint8_t *rec, size_t len,
    const union sockaddr_union *from, const struct ipaddr *local, uint64_t now)
{
	struct session *s;
	struct dtls_sess *ds = NULL;
	enum dtls_listen_result r;

	if (rec[0] != 22) {
		t->drops[DROP_UNKNOWN_SESSION]++;
		return;
	}
	if (t->n_half_open >= SESSION_HALF_OPEN_MAX || !hs_rate_ok(t, from, now)) {
		t->drops[DROP_HS_RATE]++;
		return;
	}
	if (!(s = session_alloc(t, id, from))) {
		t->drops[DROP_HANDSHAKE]++;
		return;
	}
	if (local && local->family)
		s->local = *local;     /* an accepted hello is answered at once */
	t->listen_id = id;
	r = dtls_listen(t->dtls, rec, len, from, session_output, s, &ds);
	if (r != DTLS_LISTEN_ACCEPTED) {
		/* Nothing is kept: the session shell is freed at once. */
		session_timers_free(s);
		free(s);
		t->drops[r == DTLS_LISTEN_REPLIED ? DROP_HS_COOKIE : DROP_UNKNOWN_SESSION]++;
		return;
	}
	s->dtls = ds;
	table_insert(s);
	t->n_half_open++;
	if (dtls_sess_handshake(ds) == DTLS_ERR_HANDSHAKE) {
		session_failed(s, "refused");
		return;
	}
	session_timers_handshake(s);
}

/* The roaming rule: adopt a new address only for a record that
 * authenticated and is newer than every one accepted before. */
static void
session_roam(struct session *s, const union sockaddr_union *from, const struct ipaddr *local,
    uint64_t seq, uint64_t now)
{
	struct peer *p = s->peer;
	char a[UTIL_ADDRSTRLEN], b[UTIL_ADDRSTRLEN];

	if (seq <= s->max_seq && s->max_seq)
		return;
	s->max_seq = seq;
	if (local && local->family)
		s->local = *local;
	if (util_sa_equal(&s->addr, from))
		return;
	if (now - p->roam_log_ms >= ROAM_LOG_MS) {
		log_info("peer \"%s\": endpoint %s -> %s", p->name, sess_addr(s, a, sizeof(a)),
		    util_sa_fmt(from, b, sizeof(b)));
		p->roam_log_ms = now;
	}
	s->addr = *from;
	dtls_sess_set_peer_addr(s->dtls, from);
	if (p->cur == s) {
		p->endpoint = *from;
		p->local = s->local;
	}
}

void
session_input(struct toud *t, uint8_t *dgram, size_t len, const union sockaddr_union *from,
    const struct ipaddr *local, uint8_t tos, uint8_t *scratch, size_t scratch_cap, uint64_t now)
{
	const uint8_t *rec = dgram + GUE_OUTER_LEN;
	size_t rlen, outlen = 0;
	struct session *s;
	enum gue_err gerr;
	enum dtls_result r;
	uint64_t id, seq = 0;
	uint8_t ctype;

	if ((gerr = gue_outer_decode(dgram, len, &id)) != GUE_OK) {
		t->drops[drop_gue(gerr)]++;
		return;
	}
	rlen = len - GUE_OUTER_LEN;
	s = session_find(t, id);
	if (gue_dtls_prefilter(rec, rlen, &ctype) != GUE_DTLS_OK) {
		if (s && s->peer)
			s->peer->drops[DROP_DTLS_HEADER]++;
		else
			t->drops[DROP_DTLS_HEADER]++;
		return;
	}
	if (!s) {
		session_listen(t, id, rec, rlen, from, local, now);
		return;
	}
	r = dtls_sess_input(s->dtls, rec, rlen, scratch, scratch_cap, &outlen, &seq);
	switch (r) {
	case DTLS_AGAIN:
		/* Handshake in progress: the peer's address may only be learnt
		 * here before the session is up (no data flows yet). */
		if (!s->established)
			session_timers_handshake(s);
		return;
	case DTLS_DONE:
		if (!s->peer)
			s->peer = dtls_sess_peer(s->dtls);
		if (!s->peer) {
			session_failed(s, "no peer for this key");
			return;
		}
		session_established(s);
		return;
	case DTLS_DATA:
		if (!s->peer)
			return;
		s->last_rx_ms = now;
		s->unanswered_ms = 0;
		s->bytes += outlen;
		session_roam(s, from, local, seq, now);
		rx_inner(t, s->peer, scratch, outlen, len, tos, now);
		return;
	case DTLS_ERR_HANDSHAKE:
		session_failed(s, s->peer ? "refused" : "unknown key");
		return;
	case DTLS_ERR_REPLAY:
		if (s->peer)
			s->peer->drops[DROP_REPLAY]++;
		else
			t->drops[DROP_REPLAY]++;
		return;
	case DTLS_ERR_RECORD:
		if (s->peer)
			s->peer->drops[DROP_BAD_RECORD]++;
		else
			t->drops[DROP_BAD_RECORD]++;
		return;
	case DTLS_ERR_CLOSED:
		if (s->peer) {
			struct peer *p = s->peer;
			char buf[UTIL_ADDRSTRLEN];

			log_info("peer \"%s\" (%s): session closed by the peer", p->name,
			    sess_addr(s, buf, sizeof(buf)));
			session_free(s);
			if (!p->cur) {
				peer_set_state(p, p->next ? PEER_HANDSHAKING : PEER_IDLE);
				/* It is going away, probably to restart.  Where we
				 * know its address we reconnect, so it can reach us
				 * again even if it does not know ours. */
				if (p->cf->endpoint_host)
					peer_timers_reconnect(p);
			}
		} else {
			session_free(s);
		}
		return;
	}
}

void
session_send(struct peer *p, const uint8_t *payload, size_t len, uint8_t tos)
{
	struct session *s = p->cur;
	uint64_t now;
	int rc;

	if (!s) {
		if (peer_pending_push(p, payload, len, tos) < 0)
			p->drops[DROP_QUEUE]++;
		if (session_initiate(p) < 0)
			log_debug_rl("peer \"%s\": cannot start a handshake", p->name);
		return;
	}
	s->tx_tos = tos;
	rc = dtls_sess_seal(s->dtls, payload, len);
	s->tx_tos = 0;
	if (rc < 0) {
		p->drops[DROP_SEAL]++;
		return;
	}
	s->bytes += len;
	now = util_now_ms();
	/* Nothing authenticated from the peer for a while although we keep
	 * sending: it may have lost the session.  Offer a new one. */
	if (!s->unanswered_ms)
		s->unanswered_ms = now;
	else if (now - s->unanswered_ms >= SESSION_STALE_MS && now - s->last_rx_ms >= SESSION_STALE_MS &&
	    !p->next)
		session_initiate(p);
	if (session_needs_rekey(p, now))
		session_initiate(p);
}

bool
session_needs_rekey(const struct peer *p, uint64_t now)
{
	const struct session *s = p->cur;
	const struct conf_iface *ifc = &p->toud->conf->iface;

	if (!s || p->next)
		return false;
	if (s->bytes >= ifc->rekey_bytes)
		return true;
	/* By time, only the initiator rekeys, so both sides do not race. */
	return s->initiator && now - s->established_ms >= 1000ULL * ifc->rekey_seconds;
}
