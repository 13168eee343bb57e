/* tx.c - the sending direction: read packets from the TUN, find the peer by
 * destination, frame them (compact TOU or whole IP), seal them (DTLS) and
 * send them out in batches; and the one output queue of DTLS records
 * (data, handshake flights, alerts, whoever produced them).
 *
 * Each TUN buffer has TX_HEADROOM bytes in front of the packet, so the
 * 4-byte GUE word of compact TOU is written over the end of the inner IP
 * header that is being dropped: with encryption = none the packet leaves
 * from that buffer.  With DTLS the record layer frames the record (numbers
 * it and lays it out: record_frame()) around the packet, in the same
 * buffer; other records (control messages, packets held during a
 * handshake, OpenSSL's own, which come sealed) are copied into the output
 * queue by tx_queue_record(), the price of batching with sendmmsg.  toud's
 * records are encrypted in place only where the batch is sent
 * (batch_write()), with a reference to their session's sealer that the
 * batch puts when it is back: a session may end while its records are on
 * the thread.
 *
 * The output queue is a batch of datagrams, flushed in one place,
 * outq_flush(): from a deferred event that runs once the current callback
 * returns (with encryption = none: at the end of each TUN read round), when
 * the batch is full, and at shutdown (tx_flush_records).  The TUN is read
 * straight into the batch's buffers.
 *
 * Threads (threads = on, or auto with more than two CPUs): a full batch,
 * or any batch while an earlier one is still going out, is handed to the
 * sending thread (worker.h), which seals its records and makes the
 * sendmmsg calls, and nothing else; each batch is accounted (bytes, drops,
 * a vanished source address) back on the main loop, the one writer of peer
 * state.  The main loop seals a batch itself only while the thread has
 * none, so a sealer is never used by two threads at once.  A batch that is
 * not full and finds the thread idle is sent at once from the main loop:
 * a lone packet (ping, a request) pays no thread wake-up.  Control
 * messages with encryption = none leave at once too (nothing orders them
 * against data).  Without the thread (threads = off, the unit tests)
 * every batch is sent at once.
 *
 * A wake-up reads at most TX_ROUNDS * UDP_BATCH packets from the TUN,
 * counted as read whatever then happens to them, so a flooded TUN cannot
 * starve the rest of the loop (one batch: the socket, timers and the
 * control socket get their turn every 64 packets; the TUN event fires
 * again at once while readable).
 *
 * With TUN offloads (tun->vnet) a read may return a TCP or UDP super-packet
 * of up to 64 KB with a virtio_net_hdr: it lands in x->super and is cut
 * (offload.c) into the ordinary buffers, one segment each with its own
 * headers and checksums, and every segment then goes the way of a packet
 * read by itself.  Equal-size records to one peer leave in one UDP GSO send
 * (udp.c).  A super-packet counts as one read. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sys/random.h>

#include <event2/event.h>

#include "conf.h"
#include "ctx.h"
#include "dtls.h"
#include "gue.h"
#include "handshake.h"
#include "log.h"
#include "offload.h"
#include "peer.h"
#include "peer_timers.h"
#include "pkt.h"
#include "prefix.h"
#include "ratelimit.h"
#include "record.h"
#include "session.h"
#include "tun.h"
#include "tunout.h"
#include "tx.h"
#include "udp.h"
#include "worker.h"

#define TX_HEADROOM 64
/* A TUN read may be TX_TAILROOM - DTLS_SEAL_TAILROOM bytes over the MTU
 * (to be answered as too big); a record framed around a packet has the
 * rest for its tag, and its headers in the headroom. */
#define TX_TAILROOM 64
static_assert(TX_HEADROOM >= GUE_OUTER_LEN + DTLS_SEAL_HEADROOM &&
    TX_TAILROOM > DTLS_SEAL_TAILROOM, "room for a record around a TUN packet");
#define TX_BATCHES 4         /* output batches: one filled, the rest in flight */
#define TX_ROUNDS 1          /* batches per wake-up before yielding to the loop */
/* ICMP too-big replies: per source of the oversize packets, 10 a second
 * after a burst of 10 (a path MTU is learnt from one); 256 sources at once. */
#define TX_TOO_BIG_RATE 10
#define TX_TOO_BIG_BURST 10
#define TX_TOO_BIG_SOURCES 256
/* Sent data unanswered this long means the peer lost our session (it
 * restarted, say): start a new handshake rather than wait for a timer. */
#define TX_SESSION_STALE_MS 5000

/* Datagrams waiting for sendmmsg, each in its own buffer of the tx's
 * stride: with encryption = none TUN packets framed in place, with DTLS
 * framed records. */
struct tx_batch {
	struct toud *t;
	uint8_t *mem;                      /* UDP_BATCH buffers */
	struct udp_msg msgs[UDP_BATCH];
	struct peer *peers[UDP_BATCH];     /* NULL: no peer (yet), or forgotten */
	uint64_t ids[UDP_BATCH];           /* DTLS: session of each record */
	/* DTLS: what encrypts each record framed by toud before it leaves
	 * (a reference; NULL for OpenSSL's records, sealed already). */
	struct record_sealer *seal[UDP_BATCH];
	bool withdrawn[UDP_BATCH];         /* not to be sent */
	unsigned n;
};

struct tx {
	struct toud *t;
	struct event *ev;
	struct event *ev_flush;            /* deferred flush of the output queue */
	/* A TUN packet with its headroom, and the room behind it for a
	 * record's tag: a read takes at most buf_size - TX_HEADROOM -
	 * DTLS_SEAL_TAILROOM bytes. */
	size_t buf_size;
	size_t rec_size;                   /* a framed record */
	size_t stride;                     /* a batch buffer: the larger of the two */
	uint8_t *super;                    /* vnet TUN: one read, OFFLOAD_MAX_PKT bytes */
	struct tx_batch batches[TX_BATCHES];
	struct tx_batch *out;              /* the batch being filled */
	struct worker *worker;             /* the sending thread (NULL: none) */
	void *slots[TX_BATCHES];           /* its ring: the batches */

	struct ratelimit *too_big_rl;      /* ICMP too-big replies, per destination */
	struct prefix_cache route_cache;   /* destinations: one peer's in a row */
};

size_t
tx_payload_budget(const struct toud *t, const struct peer *p)
{
	const struct conf_iface *ifc = &t->conf->iface;
	size_t outer = p->endpoint.sa.sa_family == AF_INET ? 20 : 40;
	size_t budget = ifc->path_mtu - outer - CONF_OVERHEAD_UDP;

	if (ifc->encryption == CONF_ENC_DTLS)
		budget -= CONF_OVERHEAD_GUE_OUTER + CONF_OVERHEAD_DTLS;
	return budget;
}

static inline void
count_drop(struct toud *t, struct peer *p, enum drop_reason r)
{
	if (p)
		p->drops[r]++;
	else
		t->drops[r]++;
}

/* Answer an oversize packet with ICMP too big, into the TUN through its one
 * writer. */
static void
too_big(struct toud *t, struct peer *p, const uint8_t *pkt, const struct pkt_info *pi,
    size_t mtu)
{
	uint8_t reply[PKT_IP6_HLEN + 8 + 1280];
	const struct ipaddr *from = pi->family == AF_INET ? &t->local4 : &t->local6;
	size_t n;

	count_drop(t, p, DROP_TOO_BIG);
	if (!from->family)
		return;
	/* RFC 1812 4.3.2.8, RFC 4443 2.4(f): rate-limit our ICMP errors. */
	if (!ratelimit_allow(t->tx->too_big_rl, &pi->src, toud_now(t))) {
		count_drop(t, p, DROP_TOO_BIG_LIMIT);
		return;
	}
	n = pkt_too_big(reply, sizeof(reply), pkt, pi, (uint32_t)mtu, from);
	if (n)
		tunout_local(t->tunout, reply, n);
}

/* Multicast and IPv6 link-local destinations: what the kernel itself sends
 * on any IPv6 link (router and MLD solicitations), never meant for a peer. */
static bool
not_unicast(const struct ipaddr *a)
{
	if (a->family == AF_INET)
		return (a->b[0] & 0xf0) == 0xe0;
	return a->b[0] == 0xff || (a->b[0] == 0xfe && (a->b[1] & 0xc0) == 0x80);
}

/* Turn the packet at buf + TX_HEADROOM (len bytes) into a datagram in m.
 * Returns the peer, or NULL if the packet was dropped. */
static struct peer *
tx_frame(struct toud *t, uint8_t *buf, size_t len, struct udp_msg *m)
{
	uint8_t *pkt = buf + TX_HEADROOM;
	struct pkt_info pi;
	struct peer *p;
	const struct ipaddr *local, *remote;
	enum pkt_err err;
	size_t budget, inner;
	bool compact;

	if ((err = pkt_parse(pkt, len, &pi)) != PKT_OK) {
		t->drops[drop_pkt(err)]++;
		return NULL;
	}
	p = prefix_lookup_cached(t->routes, &t->tx->route_cache, pi.family, pi.dst.b);
	if (!p) {
		t->drops[not_unicast(&pi.dst) ? DROP_NOT_UNICAST : DROP_NO_PEER]++;
		return NULL;
	}
	if (!p->has_endpoint) {
		p->drops[DROP_NO_ENDPOINT]++;
		return NULL;
	}
	local = pi.family == AF_INET ? &t->local4 : &t->local6;
	remote = pi.family == AF_INET ? &p->addr4 : &p->addr6;
	compact = pkt_compact_ok(&pi, local, remote);
	/* The receiver tells the family of a compact segment by its transport
	 * checksum; a zero UDP checksum (legal over IPv6 for some tunnels)
	 * would read as IPv4, so such a packet travels whole. */
	if (compact && pi.family == AF_INET6 && pi.proto == IPPROTO_UDP &&
	    pi.len >= pi.ip_hlen + 8 && pkt[pi.ip_hlen + 6] == 0 && pkt[pi.ip_hlen + 7] == 0)
		compact = false;
	budget = tx_payload_budget(t, p);
	/* The inner packet size that fits: compact TOU drops the IP header
	 * and adds the GUE word. */
	inner = compact ? budget - GUE_WORD_LEN + pi.ip_hlen : budget;
	if (pi.proto == IPPROTO_TCP)
		pkt_mss_clamp(pkt, &pi, pkt_mss_for_mtu(pi.family, (unsigned)inner));
	if (pi.len > inner) {
		too_big(t, p, pkt, &pi, inner);
		return NULL;
	}
	if (compact) {
		uint8_t *word = pkt + pi.ip_hlen - GUE_WORD_LEN;
		gue_compact_encode(word, pi.proto);
		m->buf = word;
		m->len = pi.len - pi.ip_hlen + GUE_WORD_LEN;
	} else {
		m->buf = pkt;
		m->len = pi.len;
	}
	m->peer = p->endpoint;
	if (p->local.family)
		m->local = p->local;
	else
		memset(&m->local, 0, sizeof(m->local));
	m->tos = pi.ecn;        /* RFC 6040: the inner ECN field travels outside */
	return p;
}

/* Account each datagram of a batch that went out to its peer (NULL: a
 * handshake datagram to a source that is no peer yet); ids names each
 * record's session (NULL: encryption = none). */
static void
tx_account(struct toud *t, struct udp_msg *msgs, struct peer **peers, const uint64_t *ids,
    unsigned n)
{
	uint64_t now = toud_now(t);
	unsigned i;

	for (i = 0; i < n; i++) {
		enum drop_reason r = msgs[i].err == -EAFNOSUPPORT ? DROP_FAMILY :
		    msgs[i].err == -ENOKEY ? DROP_SEAL : DROP_SEND;

		if (msgs[i].err == 0) {
			if (peers[i])
				peer_tx(peers[i], msgs[i].len, now);
			continue;
		}
		count_drop(t, peers[i], r);
		/* The source address we pinned may have gone: let the kernel
		 * choose next time.  It is the session's with DTLS (and if
		 * the record was on its own path, from an address that is
		 * gone, the next path gets a new session ID), the peer's
		 * without. */
		if (msgs[i].err == -EINVAL || msgs[i].err == -EADDRNOTAVAIL) {
			struct session *s = ids && ids[i] ? session_named(t, ids[i]) : NULL;

			if (s && s->local.family && util_sa_equal(&msgs[i].peer, &s->addr)) {
				memset(&s->local, 0, sizeof(s->local));
				if (s->established && msgs[i].err == -EADDRNOTAVAIL)
					session_ids_use(s, session_ids_fresh(s));
			}
			else if (!ids && peers[i])
				memset(&peers[i]->local, 0, sizeof(peers[i]->local));
		}
		log_debug_rl("send to %s: %s", peers[i] ? peers[i]->name : "handshake source",
		    strerror(-msgs[i].err));
	}
}

/* The system call: on the sending thread, or on the main loop. */
static void
tx_write(struct toud *t, struct udp_msg *msgs, unsigned n)
{
	if (t->sink)
		t->sink(t, msgs, n);
	else
		udp_send_batch(t->udp, msgs, n);
}

/* Send a batch now, from the main loop, and account it. */
static void
tx_send(struct toud *t, struct udp_msg *msgs, struct peer **peers, const uint64_t *ids,
    unsigned n)
{
	tx_write(t, msgs, n);
	tx_account(t, msgs, peers, ids, n);
}

/* Seal and send a batch: on the sending thread, or on the main loop.
 * The records toud framed are encrypted in place.  One that fails (a
 * cipher error) is marked -ENOKEY and never sent: the datagrams around it
 * go in runs.  Nothing but the messages is touched (the main loop may
 * clear a batch's peers meanwhile: tx_forget_peer), and a sealer is used
 * by one thread at a time because the main loop seals a batch only while
 * none is in flight (outq_flush). */
static void
batch_write(void *slot, void *arg)
{
	struct tx_batch *b = slot;
	unsigned i, first = 0;

	(void)arg;
	for (i = 0; i < b->n; i++) {
		struct udp_msg *m = &b->msgs[i];

		m->err = 0;
		if (b->seal[i] && record_finish(b->seal[i], m->buf + GUE_OUTER_LEN,
		    m->len - GUE_OUTER_LEN) != RECORD_OK) {
			m->err = -ENOKEY;
			if (i > first)
				tx_write(b->t, b->msgs + first, i - first);
			first = i + 1;
		}
	}
	if (b->n > first)
		tx_write(b->t, b->msgs + first, b->n - first);
}

/* A batch that went out, on the main loop: account it and put its
 * sealers (the last reference to a session's frees it, now that no
 * thread can be using it). */
static void
batch_done(void *slot, void *arg)
{
	struct tx_batch *b = slot;
	unsigned i;

	(void)arg;
	tx_account(b->t, b->msgs, b->peers, b->t->dtls ? b->ids : NULL, b->n);
	for (i = 0; i < b->n; i++) {
		record_sealer_put(b->seal[i]);
		b->seal[i] = NULL;
	}
	b->n = 0;
}

/* The one place the output queue leaves. */
static void
outq_flush(struct tx *x)
{
	struct tx_batch *b = x->out;
	bool full = b->n == UDP_BATCH;
	unsigned i, n = 0;

	/* Close the gaps of withdrawn records. */
	for (i = 0; i < b->n; i++) {
		if (b->withdrawn[i]) {
			b->withdrawn[i] = false;
			record_sealer_put(b->seal[i]);
			b->seal[i] = NULL;
			continue;
		}
		if (n != i) {
			struct udp_msg m = b->msgs[n];

			/* each entry keeps its buffer: no bytes move */
			b->msgs[n] = b->msgs[i];
			b->msgs[i] = m;
			b->peers[n] = b->peers[i];
			b->ids[n] = b->ids[i];
			b->seal[n] = b->seal[i];
			b->seal[i] = NULL;
		}
		n++;
	}
	b->n = n;
	if (!n)
		return;
	/* Sealing is part of sending: what the thread does for a batch it
	 * has, the main loop does for one it sends itself, and only while
	 * the thread has none (so a sealer is never used by both). */
	if (x->worker && (full || !worker_reap(x->worker))) {
		x->t->events[EVENT_SEND_THREAD_BATCHES]++;
		x->out = worker_submit(x->worker);
		return;
	}
	batch_write(b, NULL);
	batch_done(b, NULL);
}

static void
flush_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	outq_flush(arg);
}

/* Frame a DTLS record of session id (toud's name for it) with an outer GUE
 * header carrying wire_id and queue it for `to` (from local, when set),
 * accounted to p (or nobody). */
static void
tx_queue_record(struct tx *x, uint64_t id, uint64_t wire_id, const uint8_t *rec, size_t len,
    const union sockaddr_union *to, const struct ipaddr *local, struct peer *p, uint8_t tos,
    struct record_sealer *seal)
{
	struct tx_batch *b;
	struct udp_msg *m;

	if (GUE_OUTER_LEN + len > x->rec_size) {
		count_drop(x->t, p, DROP_SEAL);
		return;
	}
	if (x->out->n == UDP_BATCH)
		outq_flush(x);
	b = x->out;
	if (b->n == 0)
		event_active(x->ev_flush, EV_TIMEOUT, 0);
	m = &b->msgs[b->n];
	m->buf = b->mem + (size_t)b->n * x->stride;
	/* A record framed in this very buffer (a TUN packet's) stays where
	 * it is if it fits; any other is copied in (memmove: it may be
	 * this buffer's). */
	if ((uintptr_t)rec >= (uintptr_t)m->buf + GUE_OUTER_LEN &&
	    (uintptr_t)rec + len <= (uintptr_t)m->buf + x->stride)
		m->buf = (uint8_t *)(uintptr_t)rec - GUE_OUTER_LEN;
	else
		memmove(m->buf + GUE_OUTER_LEN, rec, len);
	gue_outer_encode(m->buf, wire_id);
	m->len = GUE_OUTER_LEN + len;
	m->peer = *to;
	if (local && local->family)
		m->local = *local;
	else
		memset(&m->local, 0, sizeof(m->local));
	m->tos = tos;
	b->ids[b->n] = id;
	b->seal[b->n] = seal ? record_sealer_get(seal) : NULL;
	b->withdrawn[b->n] = false;
	b->peers[b->n++] = p;
}

void
tx_session_output(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal)
{
	struct session *s = arg;

	struct path_probe *pp = s->peer ? &s->peer->probe : NULL;

	if (!handshake_may_send(s, len))
		return;
	if (s->tx_to) {
		tx_queue_record(s->t->tx, s->id, s->tx_to_id, rec, len, s->tx_to, s->tx_local,
		    s->peer, 0, seal);
		return;
	}
	/* A new address being validated, where the peer's newest records
	 * come from (a NAT rebinding): the data goes there, within the
	 * budget, under the ID of that path. */
	if (pp && path_probing_for(pp, s->id) && pp->newest &&
	    s->peer->cur == s && path_may_send(pp, GUE_OUTER_LEN + len)) {
		path_charge(pp, GUE_OUTER_LEN + len);
		tx_queue_record(s->t->tx, s->id, session_ids_wire(s, pp->wire_index), rec, len,
		    &pp->addr, &pp->local, s->peer, s->tx_tos, seal);
		return;
	}
	tx_queue_record(s->t->tx, s->id, s->wire_id, rec, len, to, &s->local, s->peer, s->tx_tos,
	    seal);
}

void
tx_listen_output(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to)
{
	struct toud *t = arg;

	/* No session's: 0 names none (session IDs are never 0). */
	tx_queue_record(t->tx, 0, sid, rec, len, to, NULL, NULL, 0, NULL);
}

void
tx_flush_records(struct toud *t)
{
	if (!t->tx)
		return;
	outq_flush(t->tx);
	/* Everything in flight leaves and is accounted while its peers
	 * exist; from here on the main loop sends. */
	worker_free(t->tx->worker);
	t->tx->worker = NULL;
}

void
tx_withdraw_session(struct tx *x, uint64_t id)
{
	unsigned i;

	/* Only the batch being filled: the others are on their way. */
	for (i = 0; i < x->out->n; i++)
		if (x->out->ids[i] == id)
			x->out->withdrawn[i] = true;
}

void
tx_forget_peer(struct tx *x, const struct peer *p)
{
	unsigned i, k;

	/* Every batch, also those the sending thread has: it never touches
	 * the peers. */
	for (k = 0; k < TX_BATCHES; k++)
		for (i = 0; i < UDP_BATCH; i++)
			if (x->batches[k].peers[i] == p)
				x->batches[k].peers[i] = NULL;
}

/* Seal an inner payload to p on the session it sends on, or hold it while
 * the handshake runs (bounded; the oldest is dropped and counted). */
static void
tx_seal(struct peer *p, uint8_t *payload, size_t len, uint8_t tos, bool data, bool in_place,
    uint64_t now)
{
	struct session *s = p->cur;

	if (!s) {
		if (peer_pending_push(p, payload, len, tos) < 0)
			p->drops[DROP_QUEUE]++;
		if (handshake_initiate(p, now) < 0)
			log_debug_rl("peer \"%s\": cannot start a handshake", p->name);
		return;
	}
	if (session_seal_in(s, payload, len, tos, in_place) < 0) {
		p->drops[DROP_SEAL]++;
		return;
	}
	if (data)
		peer_timers_data_sent(p, now);
	else
		p->last_tx_ms = now;    /* counts at once, before the queue leaves */
	/* Nothing authenticated from the peer for a while although we keep
	 * sending data: it may have lost the session.  Offer a new one.  Only
	 * data counts (toud(8)): a keepalive may answer the peer's last packet
	 * and need no answer itself; liveness watches keepalives. */
	if (data && !s->unanswered_ms)
		s->unanswered_ms = now;
	else if (data && now - s->unanswered_ms >= TX_SESSION_STALE_MS &&
	    now - s->last_rx_ms >= TX_SESSION_STALE_MS && !p->next)
		handshake_initiate(p, now);
	if (handshake_needs_rekey(p, now))
		handshake_initiate(p, now);
}

void
tx_send_staged(struct peer *p)
{
	uint64_t now = toud_now(p->toud);
	const uint8_t *payload;
	size_t len;
	uint8_t tos;

	while (p->cur && peer_pending_pop(p, &payload, &len, &tos))
		tx_seal(p, (uint8_t *)(uintptr_t)payload, len, tos, true, false, now);
}

/* Where the next TUN packet goes (TX_HEADROOM bytes in): the next buffer
 * of the batch.  There it is framed, and with DTLS its record is framed
 * around it (tx_queue_record() finds it in place). */
static uint8_t *
tx_inbuf(struct tx *x)
{
	if (x->out->n == UDP_BATCH)
		outq_flush(x);
	return x->out->mem + (size_t)x->out->n * x->stride;
}

/* Frame the packet in tx_inbuf() (at TX_HEADROOM, len bytes) and seal it,
 * or keep it in the batch (encryption = none, sent when the batch fills or
 * the read ends). */
static void
tx_packet(struct tx *x, size_t len, uint64_t now)
{
	struct toud *t = x->t;
	struct tx_batch *b = x->out;
	struct udp_msg frame, *m = t->dtls ? &frame : &b->msgs[b->n];
	struct peer *p;

	if (!(p = tx_frame(t, tx_inbuf(x), len, m)))
		return;
	if (t->dtls) {
		/* TX_HEADROOM leaves room for the outer GUE header and the
		 * record's in front, the buffer's end for the tag. */
		tx_seal(p, m->buf, m->len, m->tos, true, true, now);
		return;
	}
	peer_timers_data_sent(p, now);
	b->withdrawn[b->n] = false;
	b->seal[b->n] = NULL;
	b->peers[b->n++] = p;
	if (b->n == UDP_BATCH)
		outq_flush(x);
}

/* A read from a vnet TUN, in x->super: a lone packet (its checksum
 * completed if the kernel left it partial) or the segments of a
 * super-packet, each cut into tx_inbuf(). */
static void
tx_super(struct tx *x, const struct offload_vnet *vh, size_t len, uint64_t now)
{
	size_t cap = x->buf_size - TX_HEADROOM - DTLS_SEAL_TAILROOM, seg;
	struct offload_gso g;
	unsigned i;

	if ((vh->gso_type & ~OFFLOAD_GSO_ECN) == OFFLOAD_GSO_NONE) {
		if (len > cap) {
			x->t->drops[DROP_TUN_OFFLOAD]++;
			return;
		}
		memcpy(tx_inbuf(x) + TX_HEADROOM, x->super, len);
		if (vh->flags & OFFLOAD_F_NEEDS_CSUM)
			offload_csum_complete(tx_inbuf(x) + TX_HEADROOM, len, vh);
		tx_packet(x, len, now);
		return;
	}
	if (offload_gso_prepare(vh, x->super, len, &g) != OFFLOAD_OK) {
		x->t->drops[DROP_TUN_OFFLOAD]++;
		return;
	}
	for (i = 0; i < g.nsegs; i++) {
		seg = offload_gso_segment(&g, x->super, i, tx_inbuf(x) + TX_HEADROOM, cap);
		/* The TUN's MTU bounds the kernel's segment size, so a
		 * segment always fits a buffer; if not, it is counted. */
		if (!seg) {
			x->t->drops[DROP_TUN_OFFLOAD]++;
			continue;
		}
		tx_packet(x, seg, now);
	}
}

static void
tx_readable(evutil_socket_t fd, short what, void *arg)
{
	struct tx *x = arg;
	struct toud *t = x->t;
	unsigned round, reads;
	bool empty = false;

	(void)fd;
	(void)what;
	for (round = 0; round < TX_ROUNDS && !empty; round++) {
		uint64_t now = toud_now(t);

		/* Every packet read counts towards the batch, whether it is
		 * sent, sealed into the output queue or dropped. */
		for (reads = 0; reads < UDP_BATCH; reads++) {
			struct offload_vnet vh;
			ssize_t len;

			if (x->super)
				len = tun_read_vnet(t->tun, &vh, x->super, OFFLOAD_MAX_PKT);
			else
				len = tun_read(t->tun, tx_inbuf(x) + TX_HEADROOM,
				    x->buf_size - TX_HEADROOM - DTLS_SEAL_TAILROOM);
			if (len == -EBADMSG) {
				t->drops[DROP_TUN_OFFLOAD]++;
				continue;
			}
			if (len < 0) {
				if (len != -EAGAIN && len != -EINTR)
					log_debug_rl("tun read: %s", strerror((int)-len));
				empty = true;
				break;
			}
			if (x->super)
				tx_super(x, &vh, (size_t)len, now);
			else
				tx_packet(x, (size_t)len, now);
		}
		if (!t->dtls)
			outq_flush(x);
	}
}

int
tx_path_message(struct session *s, uint8_t ctype, const uint8_t *token,
    const union sockaddr_union *to, const struct ipaddr *local, uint64_t wire_id)
{
	uint8_t buf[GUE_WORD_LEN + PATH_TOKEN_LEN];

	if (!s->peer || !s->established)
		return -ENOTCONN;
	gue_control_encode(buf, ctype);
	memcpy(buf + GUE_WORD_LEN, token, PATH_TOKEN_LEN);
	return session_seal_to(s, buf, sizeof(buf), to, local, wire_id ? wire_id : s->wire_id);
}

int
tx_control(struct toud *t, struct peer *p, uint8_t ctype, const void *body, size_t len)
{
	uint8_t buf[GUE_WORD_LEN + 64];
	struct udp_msg m = { .buf = buf };
	uint64_t now = toud_now(t);

	if (!p->has_endpoint)
		return -EDESTADDRREQ;
	if (len > sizeof(buf) - GUE_WORD_LEN)
		return -EMSGSIZE;
	gue_control_encode(buf, ctype);
	if (len)
		memcpy(buf + GUE_WORD_LEN, body, len);
	if (ctype == GUE_CTYPE_KEEPALIVE)
		p->events[EVENT_KEEPALIVE_SENT]++;
	if (t->dtls) {
		tx_seal(p, buf, GUE_WORD_LEN + len, 0, false, false, now);
		return 0;
	}
	m.len = GUE_WORD_LEN + len;
	m.peer = p->endpoint;
	if (p->local.family)
		m.local = p->local;
	p->last_tx_ms = now;
	tx_send(t, &m, &p, NULL, 1);
	return m.err;
}
struct tx *
tx_new(struct toud *t)
{
	struct tx *x = calloc(1, sizeof(*x));
	uint8_t secret[RATELIMIT_SECRET_LEN];
	bool ok = true;
	unsigned k;

	if (!x)
		return NULL;
	x->t = t;
	if (getrandom(secret, sizeof(secret), 0) != (ssize_t)sizeof(secret)) {
		free(x);
		return NULL;
	}
	x->too_big_rl = ratelimit_new(TX_TOO_BIG_SOURCES, TX_TOO_BIG_RATE, TX_TOO_BIG_BURST,
	    secret);
	explicit_bzero(secret, sizeof(secret));
	x->buf_size = TX_HEADROOM + t->tun_mtu + TX_TAILROOM;
	x->rec_size = GUE_OUTER_LEN + t->conf->iface.path_mtu;
	x->stride = x->buf_size > x->rec_size ? x->buf_size : x->rec_size;
	for (k = 0; k < TX_BATCHES; k++) {
		x->batches[k].t = t;
		ok = ok && (x->batches[k].mem = malloc(x->stride * UDP_BATCH));
	}
	x->out = &x->batches[0];
	if (t->tun->vnet && !(x->super = malloc(OFFLOAD_MAX_PKT))) {
		tx_free(x);
		errno = ENOMEM;
		return NULL;
	}
	x->ev = event_new(t->base, t->tun->fd, EV_READ | EV_PERSIST, tx_readable, x);
	x->ev_flush = event_new(t->base, -1, 0, flush_cb, x);
	if (!ok || !x->ev || !x->ev_flush || !x->too_big_rl || event_add(x->ev, NULL) < 0) {
		tx_free(x);
		errno = ENOMEM;
		return NULL;
	}
	return x;
}

int
tx_start_thread(struct tx *x)
{
	void *slots[TX_BATCHES];
	unsigned k;

	/* The batch being filled stays first in the ring. */
	for (k = 0; k < TX_BATCHES; k++)
		slots[k] = &x->batches[(x->out - x->batches + k) % TX_BATCHES];
	memcpy(x->slots, slots, sizeof(slots));
	if (!(x->worker = worker_new(x->t->base, "toud-send", x->slots, TX_BATCHES, batch_write,
	    batch_done, x)))
		return -errno;
	return 0;
}

bool
tx_threaded(const struct tx *x)
{
	return x && x->worker;
}

void
tx_free(struct tx *x)
{
	unsigned k, i;

	if (!x)
		return;
	worker_free(x->worker);
	if (x->ev)
		event_free(x->ev);
	if (x->ev_flush)
		event_free(x->ev_flush);
	for (k = 0; k < TX_BATCHES; k++) {
		for (i = 0; i < x->batches[k].n; i++)
			record_sealer_put(x->batches[k].seal[i]);
		free(x->batches[k].mem);
	}
	ratelimit_free(x->too_big_rl);
	free(x->super);
	free(x);
}
