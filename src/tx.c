/* tx.c - the sending direction: read packets from the TUN, find the peer by
 * destination, frame them (compact TOU or whole IP), seal them (DTLS) and
 * queue them on the transport of their path (transport.h; UDP: udpout.c,
 * the one output queue of datagrams, which has the batches and the
 * sending thread).
 *
 * Each TUN buffer has TX_HEADROOM bytes in front of the packet, so the
 * 4-byte GUE word of compact TOU is written over the end of the inner IP
 * header that is being dropped: with encryption = none the packet leaves
 * from that buffer.  With DTLS the record layer frames the record (numbers
 * it and lays it out: record_frame()) around the packet, in the same
 * buffer, and returns it to tx_seal(), which queues it where it goes.
 * The TUN is read straight into the output queue's buffers.
 *
 * A wake-up reads at most UDP_BATCH packets from the TUN, counted as read
 * whatever then happens to them, so a flooded TUN cannot starve the rest
 * of the loop (the socket, timers and the control socket get their turn
 * every 64 packets; the TUN event fires again at once while readable).
 *
 * With TUN offloads (tun->vnet) a read may return a TCP or UDP super-packet
 * of up to 64 KB with a virtio_net_hdr: it lands in x->super and is cut
 * (offload.c) into the ordinary buffers, one segment each with its own
 * headers and checksums, and every segment then goes the way of a packet
 * read by itself.  A super-packet counts as one read. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sys/random.h>

#include <event2/event.h>

#include "conf.h"
#include "ctx.h"
#include "drop.h"
#include "dtls.h"
#include "gue.h"
#include "handshake.h"
#include "log.h"
#include "offload.h"
#include "peer.h"
#include "peer_count.h"
#include "peer_timers.h"
#include "pkt.h"
#include "prefix.h"
#include "ratelimit.h"
#include "record.h"
#include "session.h"
#include "tun.h"
#include "transport.h"
#include "tunout.h"
#include "tx.h"
#include "udp.h"
#include "udpout.h"

#define TX_HEADROOM 64
/* A TUN read may be TX_TAILROOM - DTLS_SEAL_TAILROOM bytes over the MTU
 * (to be answered as too big); a record framed around a packet has the
 * rest for its tag, and its headers in the headroom. */
#define TX_TAILROOM 64
static_assert(TX_HEADROOM >= GUE_OUTER_LEN + DTLS_SEAL_HEADROOM &&
    TX_TAILROOM > DTLS_SEAL_TAILROOM, "room for a record around a TUN packet");
/* ICMP too-big replies: per source of the oversize packets, 10 a second
 * after a burst of 10 (a path MTU is learnt from one); 256 sources at once. */
#define TX_TOO_BIG_RATE 10
#define TX_TOO_BIG_BURST 10
#define TX_TOO_BIG_SOURCES 256

struct tx {
	struct toud *t;
	struct event *ev;
	/* A TUN packet with its headroom, and the room behind it for a
	 * record's tag: a read takes at most buf_size - TX_HEADROOM -
	 * DTLS_SEAL_TAILROOM bytes. */
	size_t buf_size;
	uint8_t *super;                    /* vnet TUN: one read, OFFLOAD_MAX_PKT bytes */
	struct udpout *out;                /* the UDP transport's output queue */

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

/* Answer an oversize packet with ICMP too big, into the TUN through its one
 * writer. */
static void
too_big(struct toud *t, struct peer *p, const uint8_t *pkt, const struct pkt_info *pi,
    size_t mtu)
{
	uint8_t reply[PKT_IP6_HLEN + 8 + 1280];
	const struct ipaddr *from = pi->family == AF_INET ? &t->local4 : &t->local6;
	size_t n;

	drop_count(t, p, DROP_TOO_BIG, 1);
	if (!from->family)
		return;
	/* RFC 1812 4.3.2.8, RFC 4443 2.4(f): rate-limit our ICMP errors. */
	if (!ratelimit_allow(t->tx->too_big_rl, &pi->src, toud_now(t))) {
		drop_count(t, p, DROP_TOO_BIG_LIMIT, 1);
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

/* Turn the packet at buf + TX_HEADROOM (len bytes) into an inner payload:
 * m's buf, len and tos.  Returns the peer, or NULL if the packet was
 * dropped. */
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
	if (!p->has_endpoint && peer_path_active(p)->ops->addressed) {
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
	m->tos = pi.ecn;        /* RFC 6040: the inner ECN field travels outside */
	return p;
}

/* Queue a record of session s (toud's or OpenSSL's) where the session's
 * records go: to a new address being validated, where the peer's newest
 * records come from (a NAT rebinding), within that path's budget and
 * under its ID; else to the session's address, with its ID and local
 * address. */
void
tx_session_record(struct toud *t, struct session *s, const struct dtls_record *r, uint8_t tos)
{
	struct path_probe *pp = s->peer ? &s->peer->probe : NULL;
	struct udpout_dgram d = {
		.buf = r->rec, .len = r->len, .to = r->to, .local = &s->local, .peer = s->peer,
		.tos = tos, .session = s->id, .wire_id = s->wire_id, .seal = r->seal,
	};

	if (pp && path_probing_for(pp, s->id) && pp->newest &&
	    s->peer->cur == s && path_may_send(pp, GUE_OUTER_LEN + r->len)) {
		path_charge(pp, GUE_OUTER_LEN + r->len);
		d.to = &pp->addr;
		d.local = &pp->local;
		d.wire_id = session_ids_wire(s, pp->wire_index);
	}
	udpout_queue(t->tx->out, &d);
}

struct udpout *
tx_udpout(struct toud *t)
{
	return t->tx->out;
}

void
tx_session_output(void *arg, const uint8_t *rec, size_t len, const union sockaddr_union *to,
    struct record_sealer *seal)
{
	struct session *s = arg;
	struct dtls_record r = {
		.rec = (uint8_t *)(uintptr_t)rec, .len = len, .to = to, .seal = seal,
	};

	if (handshake_may_send(s, len))
		tx_session_record(s->t, s, &r, 0);
}

void
tx_listen_output(void *arg, uint64_t sid, const uint8_t *rec, size_t len,
    const union sockaddr_union *to)
{
	struct toud *t = arg;

	/* No session's: 0 names none (session IDs are never 0). */
	udpout_queue(t->tx->out, &(struct udpout_dgram){
	    .buf = rec, .len = len, .to = to, .wire_id = sid });
}

void
tx_flush_records(struct toud *t)
{
	if (t->tx)
		udpout_stop(t->tx->out);
}

void
tx_withdraw_session(struct tx *x, uint64_t id)
{
	udpout_withdraw_session(x->out, id);
}

/* The one door of every inner payload to p (transport.h): one call of the
 * send op of the path ph (the one p's traffic takes, but for a probe),
 * whichever transport that is.  0 or -errno (only what a control message
 * sent at once did).  Data sent (or held for a handshake, which counts as
 * sent) stamps the path for the policy: the first since the last record
 * received on it (peer_timers.c feeds it at its tick). */
static int
tx_seal_on(struct peer *p, struct peer_path *ph, uint8_t *payload, size_t len, uint8_t tos,
    enum tx_payload kind, uint64_t now)
{
	int rc = ph->ops->send(p, ph, payload, len, tos, kind, now);

	if (kind != TX_CONTROL && !ph->tx_ms)
		ph->tx_ms = now;
	if (rc == TRANSPORT_NOT_SENT)
		return 0;
	if (rc < 0)
		return kind == TX_CONTROL ? rc : 0;
	/* Counts at once, before the queue leaves. */
	if (kind != TX_CONTROL)
		peer_timers_data_sent(p, now);
	if (rc > 0)
		peer_tx(p, (size_t)rc, now);
	else
		p->last_tx_ms = now;
	return 0;
}

static int
tx_seal(struct peer *p, uint8_t *payload, size_t len, uint8_t tos, enum tx_payload kind,
    uint64_t now)
{
	return tx_seal_on(p, peer_path_active(p), payload, len, tos, kind, now);
}

void
tx_send_staged(struct peer *p)
{
	uint64_t now = toud_now(p->toud);
	const uint8_t *payload;
	size_t len;
	uint8_t tos;

	while (peer_path_state(p) == TRANSPORT_UP && peer_pending_pop(p, &payload, &len, &tos))
		tx_seal(p, (uint8_t *)(uintptr_t)payload, len, tos, TX_HELD, now);
}

/* Frame the packet read into udpout_buf() (at TX_HEADROOM, len bytes) and
 * seal it into the output queue, framed where it is. */
static void
tx_packet(struct tx *x, size_t len, uint64_t now)
{
	struct udp_msg frame;
	struct peer *p;

	if ((p = tx_frame(x->t, udpout_buf(x->out), len, &frame)))
		tx_seal(p, frame.buf, frame.len, frame.tos, TX_PACKET, now);
}

/* A read from a vnet TUN, in x->super: a lone packet (its checksum
 * completed if the kernel left it partial) or the segments of a
 * super-packet, each cut into udpout_buf(). */
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
		memcpy(udpout_buf(x->out) + TX_HEADROOM, x->super, len);
		if (vh->flags & OFFLOAD_F_NEEDS_CSUM)
			offload_csum_complete(udpout_buf(x->out) + TX_HEADROOM, len, vh);
		tx_packet(x, len, now);
		return;
	}
	if (offload_gso_prepare(vh, x->super, len, &g) != OFFLOAD_OK) {
		x->t->drops[DROP_TUN_OFFLOAD]++;
		return;
	}
	for (i = 0; i < g.nsegs; i++) {
		seg = offload_gso_segment(&g, x->super, i, udpout_buf(x->out) + TX_HEADROOM, cap);
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
	uint64_t now = toud_now(t);
	unsigned reads;

	(void)fd;
	(void)what;
	/* Every packet read counts towards the batch, whether it is sent,
	 * sealed into the output queue or dropped. */
	for (reads = 0; reads < UDP_BATCH; reads++) {
		struct offload_vnet vh;
		ssize_t len;

		if (x->super)
			len = tun_read_vnet(t->tun, &vh, x->super, OFFLOAD_MAX_PKT);
		else
			len = tun_read(t->tun, udpout_buf(x->out) + TX_HEADROOM,
			    x->buf_size - TX_HEADROOM - DTLS_SEAL_TAILROOM);
		if (len == -EBADMSG) {
			t->drops[DROP_TUN_OFFLOAD]++;
			continue;
		}
		if (len < 0) {
			if (len != -EAGAIN && len != -EINTR)
				log_debug_rl("tun read: %s", strerror((int)-len));
			break;
		}
		if (x->super)
			tx_super(x, &vh, (size_t)len, now);
		else
			tx_packet(x, (size_t)len, now);
	}
	if (!t->dtls)
		udpout_flush(x->out);
}

int
tx_path_message(struct session *s, uint8_t ctype, const uint8_t *token,
    const union sockaddr_union *to, const struct ipaddr *local, uint64_t wire_id)
{
	uint8_t buf[GUE_WORD_LEN + PATH_TOKEN_LEN];
	struct dtls_record r;
	int rc;

	if (!s->peer || !s->established)
		return -ENOTCONN;
	gue_control_encode(buf, ctype);
	memcpy(buf + GUE_WORD_LEN, token, PATH_TOKEN_LEN);
	if ((rc = session_seal(s, buf, sizeof(buf), &r)) < 0)
		return rc;
	udpout_queue(s->t->tx->out, &(struct udpout_dgram){
	    .buf = r.rec, .len = r.len, .to = to, .local = local, .peer = s->peer,
	    .session = s->id, .wire_id = wire_id ? wire_id : s->wire_id, .seal = r.seal });
	return 0;
}

int
tx_control_on(struct toud *t, struct peer *p, struct peer_path *ph, uint8_t ctype,
    const void *body, size_t len)
{
	uint8_t buf[GUE_WORD_LEN + 64];

	if (!p->has_endpoint && ph->ops->addressed)
		return -EDESTADDRREQ;
	if (len > sizeof(buf) - GUE_WORD_LEN)
		return -EMSGSIZE;
	gue_control_encode(buf, ctype);
	if (len)
		memcpy(buf + GUE_WORD_LEN, body, len);
	if (ctype == GUE_CTYPE_KEEPALIVE)
		p->events[EVENT_KEEPALIVE_SENT]++;
	return tx_seal_on(p, ph, buf, GUE_WORD_LEN + len, 0, TX_CONTROL, toud_now(t));
}

int
tx_control(struct toud *t, struct peer *p, uint8_t ctype, const void *body, size_t len)
{
	return tx_control_on(t, p, peer_path_active(p), ctype, body, len);
}

struct tx *
tx_new(struct toud *t)
{
	struct tx *x = calloc(1, sizeof(*x));
	uint8_t secret[RATELIMIT_SECRET_LEN];

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
	if (!x->too_big_rl || !(x->out = udpout_new(t, x->buf_size)) ||
	    (t->tun->vnet && !(x->super = malloc(OFFLOAD_MAX_PKT))))
		goto err;
	x->ev = event_new(t->base, t->tun->fd, EV_READ | EV_PERSIST, tx_readable, x);
	if (!x->ev || event_add(x->ev, NULL) < 0)
		goto err;
	return x;
err:
	tx_free(x);
	errno = ENOMEM;
	return NULL;
}

int
tx_start_thread(struct tx *x)
{
	return udpout_start_thread(x->out);
}

bool
tx_threaded(const struct tx *x)
{
	return x && udpout_threaded(x->out);
}

void
tx_free(struct tx *x)
{
	if (!x)
		return;
	/* The sends in flight finish (and are accounted) first. */
	udpout_free(x->out);
	if (x->ev)
		event_free(x->ev);
	ratelimit_free(x->too_big_rl);
	free(x->super);
	free(x);
}
