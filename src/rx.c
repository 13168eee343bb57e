/* rx.c - the receiving direction: datagrams from the UDP sockets, validated,
 * matched to a peer, rebuilt into IP packets and written to the TUN through
 * tunout.c, the TUN's one writer (the daemon's, shared with the sending
 * direction's ICMP; worker.h has the threading model).
 *
 * With DTLS this file owns the whole demux: outer GUE header, prefilter,
 * session lookup; an unknown ID goes to handshake_listen(), a known one to
 * session_open(), and rx.c acts on what it reports (data to the TUN,
 * handshake progress, completion, failure, close).  With the data threads
 * toud's own data records of an established session take another way:
 * checked against the replay window here, opened in batches by rxopen.c
 * (on the opening thread), and accepted here when they come back (rx_opened).  Without
 * them each is opened in place as it comes.  Every RX drop is counted
 * here.
 * A wake-up reads at most RX_ROUNDS batches.
 *
 * Each buffer keeps RX_HEADROOM bytes in front of the datagram so the inner
 * IP header of a compact TOU segment is rebuilt in place.
 *
 * Offloads: with UDP_GRO one buffer may hold several datagrams of one
 * sender (udp_msg.seg_size); they are taken one after the other, in place.
 * A compact segment after the first rebuilds its IP header over the tail
 * of the datagram before it, which is done with by then: nothing keeps a
 * pointer into a receive buffer.  With TUN offloads (tun->vnet) every
 * packet for the TUN goes through the coalescer (offload.c), which copies
 * in-order TCP segments of a flow into one super-packet; it is flushed at
 * the end of each receive batch, so nothing waits for a timer.  A kernel
 * that refuses such a packet stops the merging (tunout.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "ctx.h"
#include "gue.h"
#include "handshake.h"
#include "log.h"
#include "offload.h"
#include "peer.h"
#include "peer_timers.h"
#include "pkt.h"
#include "prefix.h"
#include "record.h"
#include "rx.h"
#include "rxopen.h"
#include "session.h"
#include "tun.h"
#include "tunout.h"
#include "tx.h"
#include "udp.h"

#define RX_BUF_SIZE (RX_HEADROOM + 65536)   /* no UDP datagram is larger */
#define RX_ROUNDS 4
#define RX_KEEPALIVE_ECHO_MS 1000

struct rx {
	struct toud *t;
	struct event *ev4, *ev6;
	uint8_t *mem;                       /* UDP_BATCH buffers of RX_BUF_SIZE */
	uint8_t *scratch;                   /* one more: plaintext OpenSSL returns */
	struct udp_msg msgs[UDP_BATCH];
	/* vnet TUN: packets for the TUN are coalesced, flushed per batch */
	uint8_t *coal_mem;
	struct offload_coal coal;
	struct rxopen *open;                /* DTLS: toud's data records, opened in batches */
	struct prefix_cache route_cache;    /* inner sources: one peer's in a row */
};

/* The peer that the inner address addr is routed to. */
static struct peer *
rx_route(struct toud *t, int family, const uint8_t *addr)
{
	return prefix_lookup_cached(t->routes, &t->rx->route_cache, family, addr);
}

/* Deliver a whole IP packet from p, out of datagram m, to the TUN: source
 * check, ECN, MSS. */
static void
rx_deliver(struct toud *t, struct peer *p, const struct udp_msg *m, uint8_t *pkt, size_t len,
    uint64_t now)
{
	struct pkt_info pi;
	struct ipaddr claimed;
	enum pkt_err err;
	bool drop = false;
	uint8_t ecn;

	if ((err = pkt_parse(pkt, len, &pi)) != PKT_OK) {
		p->drops[drop_pkt(err)]++;
		return;
	}
	/* Anti-spoofing: the source must be routed to this very peer. */
	if (rx_route(t, pi.family, pi.src.b) != p) {
		p->drops[DROP_SOURCE]++;
		return;
	}
	/* An ICMP error acts on the flow it quotes, IP-in-IP on a tunnel
	 * device as its inner source: both must be this peer's too. */
	switch (pkt_claim(pkt, &pi, &claimed)) {
	case PKT_CLAIM_NONE:
		break;
	case PKT_CLAIM_QUOTE:
		if (!claimed.family || rx_route(t, claimed.family, claimed.b) != p) {
			p->drops[DROP_ICMP_QUOTE]++;
			return;
		}
		break;
	case PKT_CLAIM_ENCAP:
		if (!claimed.family || rx_route(t, claimed.family, claimed.b) != p) {
			p->drops[DROP_ENCAP_SOURCE]++;
			return;
		}
		break;
	}
	ecn = pkt_ecn_decap(m->tos & 3, pi.ecn, &drop);
	if (drop) {
		p->drops[DROP_ECN]++;
		return;
	}
	if (ecn != pi.ecn)
		pkt_set_ecn(pkt, &pi, ecn);
	if (pi.proto == IPPROTO_TCP)
		pkt_mss_clamp(pkt, &pi, pkt_mss_for_mtu(pi.family, t->tun_mtu));
	if (t->rx->coal_mem) {
		/* Copied or written before this returns; a failed write is
		 * counted by tunout.c. */
		offload_coal_add(&t->rx->coal, pkt, pi.len, p);
		peer_rx(p, m->len, now);
		return;
	}
	/* A failed write is counted by tunout.c (if it fails later, on
	 * the TUN thread, the packet has been counted here too). */
	if (tunout_packet(t->tunout, p, NULL, pkt, pi.len) < 0)
		return;
	peer_rx(p, m->len, now);
}

/* The address pair of a compact segment from p: pkt_compact_family()
 * decides the family among those both ends have tunnel addresses of. */
static const struct ipaddr *
compact_pick(struct toud *t, struct peer *p, uint8_t proto, const uint8_t *seg, size_t len,
    const struct ipaddr **src)
{
	bool v4 = t->local4.family && p->addr4.family;
	bool v6 = t->local6.family && p->addr6.family;

	switch (pkt_compact_family(proto, seg, len, v4 ? &p->addr4 : NULL, v4 ? &t->local4 : NULL,
	    v6 ? &p->addr6 : NULL, v6 ? &t->local6 : NULL)) {
	case AF_INET:
		*src = &p->addr4;
		return &t->local4;
	case AF_INET6:
		*src = &p->addr6;
		return &t->local6;
	default:
		return NULL;
	}
}

/* A control message from p, in session s (NULL: encryption = none, or a
 * frame of path ph) of datagram m.  A path challenge is answered where it
 * came from, to the address and from the local address of its datagram,
 * whatever the session's own: that is what proves the path (path.h); one
 * without a session on the path it came on (a probe of that path). */
static void
rx_control(struct toud *t, struct peer *p, struct session *s, struct peer_path *ph,
    uint32_t index, const struct udp_msg *m, const struct gue_inner *in, uint64_t now)
{
	switch (in->proto) {
	case GUE_CTYPE_KEEPALIVE:
		p->events[EVENT_KEEPALIVE_RECEIVED]++;
		/* Answer a keepalive when we have been quiet, so the sender's
		 * liveness check sees us (it would call a quiet peer dead);
		 * the sender has just sent, so it does not answer back. */
		if (now - p->last_tx_ms >= RX_KEEPALIVE_ECHO_MS)
			tx_control(t, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
		return;
	case GUE_CTYPE_CHALLENGE: {
		struct path_probe *pp = &p->probe;
		bool to_probe = s && path_probing_for(pp, s->id) &&
		    util_sa_equal(&pp->addr, &m->peer);

		/* An address not yet validated gets its answer within its
		 * amplification budget, like everything else sent there. */
		if (to_probe && !path_may_send(pp, TX_PATH_WIRE_MAX)) {
			p->events[EVENT_PATH_BUDGET_BLOCKED]++;
			return;
		}
		if ((s ? tx_path_message(s, GUE_CTYPE_RESPONSE, in->payload, &m->peer, &m->local,
		    session_ids_wire(s, index)) :
		    tx_control_on(t, p, ph, GUE_CTYPE_RESPONSE, in->payload, in->len)) < 0) {
			p->drops[DROP_SEAL]++;
			return;
		}
		p->events[EVENT_PATH_RESPONSE_SENT]++;
		if (to_probe)
			path_charge(pp, TX_PATH_WIRE_MAX);
		return;
	}
	case GUE_CTYPE_RESPONSE:
		if (s)
			peer_path_response(p, s, in->payload, now);
		else if (!ph || in->len < PATH_TOKEN_LEN ||
		    !peer_timers_probe_answered(p, ph, in->payload, now))
			p->events[EVENT_PATH_RESPONSE_STALE]++;
		return;
	default:
		return;
	}
}

/* An inner GUE payload (buf, len) from p out of datagram m (decrypted, or
 * m's own bytes; s is its session, NULL with encryption = none) on its
 * path ph (NULL: a peer without paths, built by hand): control
 * message, compact segment (IP header rebuilt in the bytes before buf,
 * which must have room for it) or whole IP packet, to the TUN.  The UDP
 * payload it came in, m->len, is what rx_bytes counts (as tx_bytes does);
 * m->tos the outer ECN. */
static void
rx_inner(struct toud *t, struct peer *p, struct session *s, struct peer_path *ph,
    uint32_t index, const struct udp_msg *m, uint8_t *buf, size_t len, uint64_t now)
{
	struct gue_inner in;
	enum gue_err gerr;
	enum pkt_err perr;

	if ((gerr = gue_inner_decode(buf, len, &in)) != GUE_OK) {
		p->drops[drop_gue(gerr)]++;
		return;
	}
	/* The other side requires ML-KEM-768, which this session's handshake
	 * did not select (doc/protocol.md 1.5), and ends it: no traffic, its
	 * event counts it (the TCP transport takes its own, tcp.c). */
	if (in.kind == GUE_KIND_CONTROL && in.proto == GUE_CTYPE_PQ_REFUSE) {
		if (s && s->dtls && !dtls_sess_post_quantum(s->dtls))
			handshake_pq_refused(s, in.payload, in.len);
		return;
	}
	/* The ML-KEM-768 exchange's confirmations go on the session whichever
	 * path carries the peer's traffic: no news of where the peer sends
	 * from, which the path policy's follower would act on. */
	if (in.kind == GUE_KIND_CONTROL && in.proto == GUE_CTYPE_PQ_CONFIRM) {
		peer_rx(p, m->len, now);
		return;
	}
	/* The path's evidence of life: every authenticated record but the
	 * peer's probes and the answers to ours (path_policy.h). */
	if (ph && !(in.kind == GUE_KIND_CONTROL && (in.proto == GUE_CTYPE_CHALLENGE ||
	    in.proto == GUE_CTYPE_RESPONSE)))
		peer_timers_path_rx(p, ph, now);
	switch (in.kind) {
	case GUE_KIND_CONTROL:
		peer_rx(p, m->len, now);
		rx_control(t, p, s, ph, index, m, &in, now);
		return;
	case GUE_KIND_IP:
		peer_timers_data_received(p, now);
		rx_deliver(t, p, m, (uint8_t *)in.payload, in.len, now);
		return;
	case GUE_KIND_COMPACT: {
		uint8_t *seg = (uint8_t *)in.payload;
		const struct ipaddr *src = NULL, *dst;
		size_t hlen;

		peer_timers_data_received(p, now);
		if ((perr = pkt_l4_check(in.proto, seg, in.len)) != PKT_OK) {
			p->drops[drop_pkt(perr)]++;
			return;
		}
		dst = compact_pick(t, p, in.proto, seg, in.len, &src);
		if (!dst) {
			p->drops[DROP_NO_TUNNEL_ADDR]++;
			return;
		}
		/* ECN: the sender copied the inner field to the outer header,
		 * where the path may have marked CE; it is the inner field now. */
		hlen = pkt_ip_build(seg, in.len, in.proto, src, dst, m->tos & 3);
		if (!hlen) {
			p->drops[drop_pkt(PKT_ERR_LENGTH)]++;
			return;
		}
		rx_deliver(t, p, m, seg - hlen, hlen + in.len, now);
		return;
	}
	}
}

/* An inner payload from p on a path that needs no session to know it:
 * a plain datagram (encryption = none), or a frame of a transport that
 * authenticated p itself (transport.h). */
static void
rx_frame(struct toud *t, struct peer *p, struct peer_path *ph, const struct udp_msg *m,
    uint64_t now)
{
	peer_timers_authenticated_rx(p, now);
	rx_inner(t, p, NULL, ph, 0, m, m->buf, m->len, now);
}

/* The drop counter of a record refused by record_check() or
 * record_accept(). */
static enum drop_reason
record_status_drop(enum record_status st)
{
	switch (st) {
	case RECORD_ERR_DUP:
		return DROP_REPLAY;
	case RECORD_ERR_OLD:
		return DROP_REPLAY_OLD;
	default:
		return DROP_BAD_RECORD;
	}
}

/* A data record of session s was refused (counted under bad_record).
 * While none of its records has opened, a record that failed to
 * authenticate is what a preshared-key mismatch looks like
 * (doc/protocol.md 1.4): each of the first HANDSHAKE_PSK_PROBES such
 * refusals is answered with a keepalive, so that the other side sees its
 * own failures, and the last of them is reported. */
static void
rx_bad_record(struct toud *t, struct session *s)
{
	const struct record_rx *rrx = session_record_rx(s);
	struct peer *p = s->peer;

	if (s->pq_wait && !s->established) {
		handshake_pq_bad_record(s);
		return;
	}
	drop_count(t, p, DROP_BAD_RECORD, 1);
	/* After the ML-KEM-768 exchange, its messages opened under K0,
	 * which include the preshared key: a record that fails now (a late
	 * PQ_REPLY under K0, a forgery) is no mismatch. */
	if (!rrx || !p || p->cur != s || rrx->opened || !rrx->failed ||
	    dtls_sess_post_quantum(s->dtls) ||
	    s->auth_probes >= HANDSHAKE_PSK_PROBES)
		return;
	s->auth_probes++;
	tx_control(t, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
	if (s->auth_probes == HANDSHAKE_PSK_PROBES)
		handshake_psk_mismatch(s);
}

/* The plaintext (out, len) of an authenticated record (seq) of session s,
 * from datagram m with the ID of index. */
static void
rx_data(struct toud *t, struct session *s, const struct udp_msg *m, uint32_t index,
    uint64_t seq, uint8_t *out, size_t len, uint64_t now)
{
	struct peer *p = s->peer;

	if (!p || !s->established) {
		drop_count(t, NULL, DROP_NO_SESSION_PEER, 1);
		return;
	}
	peer_authenticated_rx(p, s, &m->peer, &m->local, seq, index, m->len, now);
	peer_timers_authenticated_rx(p, now);
	rx_inner(t, p, s, peer_path_udp(p), index, m, out, len, now);
}

/* rxopen_fn: a data record back from rxopen.c, opened or not; accepted
 * here, where the replay window is. */
static void
rx_opened(void *arg, struct rxopen_rec *r)
{
	struct rx *x = arg;
	struct toud *t = x->t;
	struct session *s = NULL;
	struct record_rx *rrx;
	uint64_t now = toud_now(t), wire;
	enum record_status st;
	size_t pre, len;

	/* By the ID it came with (a hash lookup); by its name only if that
	 * ID was retired meanwhile, or the session is gone. */
	if (gue_outer_decode(r->m.buf, r->m.len, &wire) == GUE_OK)
		s = session_find(t, wire, NULL);
	if (!s || s->id != r->session)
		s = session_named(t, r->session);
	rrx = s ? session_record_rx(s) : NULL;
	if (!s) {
		/* the session ended while its record was being opened */
		t->drops[DROP_UNKNOWN_SESSION]++;
		return;
	}
	s->rx_queued--;
	if (!rrx) {
		drop_count(t, s->peer, DROP_BAD_RECORD, 1);
		return;
	}
	if ((st = record_accept(rrx, r->seq, r->status)) != RECORD_OK) {
		if (st == RECORD_ERR_AUTH)
			rx_bad_record(t, s);
		else
			drop_count(t, s->peer, record_status_drop(st), 1);
		return;
	}
	pre = record_prefix(rrx->cipher);
	len = r->m.len - r->off - pre - RECORD_TAG;
	session_opened(s, len, now);
	rx_data(t, s, &r->m, r->index, r->seq, r->m.buf + r->off + pre, len, now);
}

/* rxopen_end_fn: what a batch of records delivered leaves for the TUN. */
static void
rx_opened_end(void *arg)
{
	struct rx *x = arg;

	if (x->coal_mem)
		offload_coal_flush(&x->coal);
	tunout_flush(x->t->tunout);
}

/* The handshake of s completed with a record of datagram m. */
static void
rx_established(struct toud *t, struct session *s, const struct udp_msg *m, uint64_t now)
{
	struct peer *p;

	/* The record that completed the handshake authenticated: the
	 * initiator learns the local address the peer reaches, as a responder
	 * did from its ClientHello (else only data would teach it, and until
	 * then any new address looks like ours). */
	if (m->local.family)
		s->local = m->local;
	switch (handshake_established(s, now)) {
	case HANDSHAKE_PQ_WAIT:
		/* Held as during a handshake; its timer sends PQ_INIT again. */
		handshake_progress(s, now);
		return;
	case HANDSHAKE_PQ_REFUSED:
		handshake_failed(s, handshake_pq_why(t));
		return;
	case HANDSHAKE_UP:
		p = s->peer;
		peer_timers_handshake_done(p);
		/* With a preshared key, a first record at once: a mismatch
		 * shows on both sides even when nothing else is sent. */
		if (p->cf->has_psk)
			tx_control(t, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
		tx_send_staged(p);
		/* Under a server ID the responder moves off the unroutable
		 * ID 0 when a record under ID 1 reaches it: one goes now. */
		if (s->initiator && s->server_id &&
		    tx_control(t, p, GUE_CTYPE_KEEPALIVE, NULL, 0) < 0)
			log_debug_rl("peer \"%s\": keepalive not sent", p->name);
		return;
	case HANDSHAKE_KEPT_OLD:
		return;
	case HANDSHAKE_REFUSED:
		/* OpenSSL has written its last flight already: it must not
		 * complete the other side's handshake. */
		tx_withdraw_session(t->tx, s->id);
		handshake_failed(s, "no peer for this key");
		return;
	}
}

/* What a record of session s, from datagram m, did when it brought no data
 * (SESSION_DATA is rx_open_now()'s to deliver). */
static void
rx_session_result(struct toud *t, struct session *s, const struct udp_msg *m,
    enum session_result r, uint64_t now)
{
	struct peer *p;
	char buf[UTIL_ADDRSTRLEN];

	switch (r) {
	case SESSION_NOTHING:
		if (!s->established)
			handshake_progress(s, now);
		return;
	case SESSION_ESTABLISHED:
		rx_established(t, s, m, now);
		return;
	case SESSION_DATA:
		return;
	case SESSION_FAILED:
		/* The ML-KEM-768 exchange says why, if it failed. */
		handshake_failed(s, s->dtls && dtls_sess_pq_error(s->dtls) ?
		    dtls_sess_pq_error(s->dtls) : s->peer ? "refused" : "unknown key");
		return;
	case SESSION_REPLAY:
		drop_count(t, s->peer, DROP_REPLAY, 1);
		return;
	case SESSION_REPLAY_OLD:
		drop_count(t, s->peer, DROP_REPLAY_OLD, 1);
		return;
	case SESSION_BAD_RECORD:
		rx_bad_record(t, s);
		return;
	case SESSION_CLOSED:
		if (!(p = s->peer) || !s->established) {
			session_free(s);
			return;
		}
		log_info("peer \"%s\" (%s): session closed by the peer", p->name,
		    util_sa_fmt(&s->addr, buf, sizeof(buf)));
		session_free(s);
		peer_timers_closed_by_peer(p);
		return;
	}
}

/* The record (rec, rlen) of datagram m, of session s with the ID of index,
 * opened here and now: handshake messages, alerts, and data records the
 * opening thread does not take (none runs, or one larger than its
 * batches).  toud's own data records are opened in place, over the
 * record: the plaintext needs no copy, and the datagram is done with
 * after. */
static void
rx_open_now(struct rx *x, struct session *s, struct udp_msg *m, uint8_t *rec, size_t rlen,
    uint8_t ctype, uint32_t index, uint64_t now)
{
	struct toud *t = x->t;
	uint8_t *out = x->scratch + RX_HEADROOM;
	size_t outlen, cap = RX_BUF_SIZE - RX_HEADROOM, pre;
	enum session_result r;
	uint64_t seq;

	if (ctype == RECORD_TYPE_APPDATA && (pre = session_data_prefix(s)) && rlen > pre) {
		out = rec + pre;
		cap = rlen - pre;
	}
	r = session_open(s, rec, rlen, out, cap, &outlen, &seq, now);
	if (s->early_dropped) {
		drop_count(t, s->peer, DROP_EARLY_RECORD, s->early_dropped);
		s->early_dropped = 0;
	}
	if (r == SESSION_DATA) {
		rx_data(t, s, m, index, seq, out, outlen, now);
	} else if (r == SESSION_ESTABLISHED && outlen) {
		/* The record that completed the ML-KEM-768 exchange carries a
		 * payload: delivered once the session is up, if it is. */
		uint64_t id = s->id;

		rx_session_result(t, s, m, r, now);
		if ((s = session_named(t, id)) && s->established)
			rx_data(t, s, m, index, seq, out, outlen, now);
	} else {
		rx_session_result(t, s, m, r, now);
	}
}

/* A data record (rec, rlen) of datagram m, of established session s with
 * the ID of index, to be opened in a batch (rxopen.c), maybe on the opening
 * thread: checked against the replay window now, accepted when it comes
 * back (rx_opened).  True when it was queued or refused; false when it is
 * to be opened at once: no opening thread, a record larger than a batch
 * takes, or one of another epoch (OpenSSL's). */
static bool
rx_queue(struct rx *x, struct session *s, const struct udp_msg *m, const uint8_t *rec,
    size_t rlen, uint32_t index)
{
	struct record_rx *rrx;
	enum record_status st;
	uint64_t seq;

	if (!x->open || !(rrx = session_record_rx(s)))
		return false;
	st = record_check(rrx, rec, rlen, &seq);
	if (st == RECORD_OK) {
		/* Counted before it is added: adding may flush a batch whose
		 * records end the session, after which s is not to be
		 * touched.  A refusal comes before any of that. */
		s->rx_queued++;
		if (rxopen_add(x->open, m, GUE_OUTER_LEN, rrx->opener, s->id, index, seq))
			return true;
		s->rx_queued--;
		return false;
	}
	if (st == RECORD_ERR_EPOCH)
		return false;
	/* Refused at the first look, as record_open() would. */
	drop_count(x->t, s->peer, record_status_drop(st), 1);
	return true;
}

/* One datagram of encryption = dtls: outer GUE header and one record, to
 * its session by the ID it carries, or to the listener. */
static void
rx_dtls(struct rx *x, struct udp_msg *m, uint64_t now)
{
	struct toud *t = x->t;
	uint8_t *rec = m->buf + GUE_OUTER_LEN;
	size_t rlen;
	struct session *s;
	enum gue_err gerr;
	uint64_t id;
	uint32_t index = 0;
	uint8_t ctype;

	if ((gerr = gue_outer_decode(m->buf, m->len, &id)) != GUE_OK) {
		drop_count(t, NULL, drop_gue(gerr), 1);
		return;
	}
	rlen = m->len - GUE_OUTER_LEN;
	s = session_find(t, id, &index);
	if (gue_dtls_prefilter(rec, rlen, &ctype) != GUE_DTLS_OK) {
		drop_count(t, s ? s->peer : NULL, DROP_DTLS_HEADER, 1);
		return;
	}
	if (!s) {
		handshake_listen(t, id, rec, rlen, &m->peer, &m->local, now);
		return;
	}
	handshake_received(s, rec, rlen, m->len);
	if (ctype == RECORD_TYPE_APPDATA && rx_queue(x, s, m, rec, rlen, index))
		return;
	/* What is opened at once comes after the session's records queued
	 * before it, so a close_notify does not overtake the data sent before
	 * it.  (Only an established session has any: a handshake cannot make
	 * the main loop wait.)  They may end the session. */
	if (s->rx_queued) {
		rxopen_drain(x->open);
		if (!(s = session_find(t, id, &index))) {
			drop_count(t, NULL, DROP_UNKNOWN_SESSION, 1);
			return;
		}
	}
	rx_open_now(x, s, m, rec, rlen, ctype, index, now);
}

static void
rx_datagram(struct rx *x, struct udp_msg *m, uint64_t now)
{
	struct toud *t = x->t;
	struct peer *p;

	if (m->truncated) {
		t->drops[DROP_OVERSIZE]++;
		return;
	}
	if (t->dtls) {
		rx_dtls(x, m, now);
		return;
	}
	/* encryption = none: no session ID, so the endpoint names the peer. */
	p = peer_find_by_endpoint(t, &m->peer);
	if (!p) {
		t->drops[DROP_UNKNOWN_ENDPOINT]++;
		return;
	}
	if (m->local.family)
		p->local = m->local;
	rx_frame(t, p, peer_path_udp(p), m, now);
}

/* A UDP_GRO buffer: its datagrams one by one, in place. */
static void
rx_split(struct rx *x, struct udp_msg *m, uint64_t now)
{
	struct udp_msg one = *m;
	size_t off;

	one.seg_size = 0;
	for (off = 0; off < m->len; off += m->seg_size) {
		one.buf = m->buf + off;
		one.len = m->len - off < m->seg_size ? m->len - off : m->seg_size;
		rx_datagram(x, &one, now);
	}
}

/* The coalescer's output: one packet for the TUN, lone or merged. */
static void
rx_emit(void *arg, void *owner, const struct offload_vnet *vh, uint8_t *pkt, size_t len)
{
	struct rx *x = arg;

	tunout_packet(x->t->tunout, owner, vh, pkt, len);
}

/* The end of a receive round: the records to open, and then the packets
 * for the TUN, leave. */
static void
rx_round_end(struct rx *x)
{
	if (x->open)
		rxopen_flush(x->open);
	rx_opened_end(x);
}

/* The errors queued on fd: an ICMP port unreachable tells the peer at
 * that endpoint that nothing listens there; the rest is debug noise.  A
 * queued error keeps the socket readable, so all are read. */
static void
rx_errors(struct rx *x, int fd)
{
	struct udp_icmp e[16];
	char buf[UTIL_ADDRSTRLEN];
	int n, i;

	while ((n = udp_recv_errors(fd, e, 16)) > 0) {
		for (i = 0; i < n; i++) {
			if (e[i].port_unreachable)
				peer_unreachable(x->t, &e[i].dest, toud_now(x->t));
			else
				log_debug_rl("udp: %s error (type %u, code %u) for %s: %s",
				    e[i].icmp ? "ICMP" : "local", e[i].type, e[i].code,
				    util_sa_fmt(&e[i].dest, buf, sizeof(buf)), strerror(e[i].err));
		}
		if (n < 16)
			break;
	}
}

static void
rx_readable(evutil_socket_t fd, short what, void *arg)
{
	struct rx *x = arg;
	unsigned round;
	int n, i;

	(void)what;
	for (round = 0; round < RX_ROUNDS; round++) {
		uint64_t now;

		for (i = 0; i < UDP_BATCH; i++) {
			x->msgs[i].buf = x->mem + (size_t)i * RX_BUF_SIZE + RX_HEADROOM;
			x->msgs[i].cap = RX_BUF_SIZE - RX_HEADROOM;
		}
		n = udp_recv_batch(fd, x->msgs, UDP_BATCH);
		if (n <= 0) {
			/* Nothing to read, or the error an ICMP message left:
			 * what woke us may be the error queue. */
			if (n < 0 && n != -EAGAIN && n != -EINTR && !udp_icmp_errno(-n))
				log_debug_rl("udp receive: %s", strerror(-n));
			rx_errors(x, fd);
			break;
		}
		now = toud_now(x->t);
		for (i = 0; i < n; i++) {
			if (x->msgs[i].seg_size && !x->msgs[i].truncated)
				rx_split(x, &x->msgs[i], now);
			else
				rx_datagram(x, &x->msgs[i], now);
		}
		rx_round_end(x);
		if (n < UDP_BATCH)
			break;
	}
}

int
rx_start_thread(struct rx *x)
{
	struct toud *t = x->t;

	/* A datagram of toud's own path MTU at most; a larger one is opened
	 * on the main loop. */
	if (t->conf->iface.encryption != CONF_ENC_DTLS)
		return 0;
	if (!(x->open = rxopen_new(t->base, t->conf->iface.path_mtu, RX_HEADROOM,
	    &t->events[EVENT_OPEN_THREAD_BATCHES], rx_opened, rx_opened_end, x)))
		return -errno;
	return rxopen_start_thread(x->open);
}

bool
rx_opening_threaded(const struct rx *x)
{
	return x && rxopen_threaded(x->open);
}

void
rx_flush_records(struct toud *t)
{
	if (t->rx && t->rx->open)
		rxopen_drain(t->rx->open);
}

bool
rx_coalescing(const struct rx *x)
{
	return x && x->coal_mem && !x->coal.no_merge;
}

struct offload_coal *
rx_coalescer(struct rx *x)
{
	return x->coal_mem ? &x->coal : NULL;
}

void
rx_input(struct toud *t, const struct udp_msg *msgs, unsigned n)
{
	struct rx *x = t->rx;
	uint64_t now = toud_now(t);
	unsigned i;

	for (i = 0; i < n && i < UDP_BATCH; i++) {
		struct udp_msg *m = &x->msgs[i];

		*m = msgs[i];
		m->buf = x->mem + (size_t)i * RX_BUF_SIZE + RX_HEADROOM;
		m->cap = RX_BUF_SIZE - RX_HEADROOM;
		m->truncated = msgs[i].len > m->cap;
		m->len = m->truncated ? m->cap : msgs[i].len;
		memcpy(m->buf, msgs[i].buf, m->len);
		rx_datagram(x, m, now);
	}
	rx_round_end(x);
}

void
rx_frames(struct toud *t, struct peer *p, struct peer_path *ph, const struct udp_msg *frames,
    unsigned n)
{
	uint64_t now = toud_now(t);
	unsigned i;

	for (i = 0; i < n; i++)
		rx_frame(t, p, ph, &frames[i], now);
	rx_round_end(t->rx);
}

struct rx *
rx_new(struct toud *t)
{
	struct rx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->t = t;
	x->mem = malloc((size_t)RX_BUF_SIZE * (UDP_BATCH + 1));
	if (!x->mem)
		goto err;
	x->scratch = x->mem + (size_t)RX_BUF_SIZE * UDP_BATCH;
	if (t->tun->vnet) {
		x->coal_mem = malloc((size_t)OFFLOAD_COAL_SLOTS * OFFLOAD_COAL_BUF);
		if (!x->coal_mem)
			goto err;
		offload_coal_init(&x->coal, x->coal_mem, OFFLOAD_COAL_SLOTS, rx_emit, x);
	}
	if (t->udp->fd4 >= 0) {
		x->ev4 = event_new(t->base, t->udp->fd4, EV_READ | EV_PERSIST, rx_readable, x);
		if (!x->ev4 || event_add(x->ev4, NULL) < 0)
			goto err;
	}
	if (t->udp->fd6 >= 0) {
		x->ev6 = event_new(t->base, t->udp->fd6, EV_READ | EV_PERSIST, rx_readable, x);
		if (!x->ev6 || event_add(x->ev6, NULL) < 0)
			goto err;
	}
	return x;
err:
	rx_free(x);
	errno = ENOMEM;
	return NULL;
}

void
rx_free(struct rx *x)
{
	if (!x)
		return;
	rxopen_free(x->open);
	if (x->ev4)
		event_free(x->ev4);
	if (x->ev6)
		event_free(x->ev6);
	free(x->mem);
	free(x->coal_mem);
	free(x);
}
