/* tx.c - the sending direction: read packets from the TUN, find the peer by
 * destination, frame them (compact TOU or whole IP) and send them out in
 * batches.
 *
 * Each buffer has TX_HEADROOM bytes in front of the packet, so the 4-byte
 * GUE word of compact TOU is written over the end of the inner IP header
 * that is being dropped: no copy, no allocation per packet. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "gue.h"
#include "log.h"
#include "peer.h"
#include "pkt.h"
#include "prefix.h"
#include "session.h"
#include "toud.h"
#include "tun.h"
#include "tx.h"
#include "udp.h"

#define TX_HEADROOM 64
#define TX_ROUNDS 4          /* batches per wake-up before yielding to the loop */

struct tx {
	struct toud *t;
	struct event *ev;
	size_t buf_size;
	uint8_t *mem;                      /* UDP_BATCH buffers of buf_size */
	struct udp_msg msgs[UDP_BATCH];
	struct peer *peers[UDP_BATCH];

	/* encryption = dtls: framed records waiting for sendmmsg */
	size_t rec_size;
	uint8_t *rec_mem;                  /* UDP_BATCH buffers of rec_size */
	struct udp_msg recs[UDP_BATCH];
	struct peer *rec_peers[UDP_BATCH];
	unsigned n_recs;
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

/* Answer an oversize packet with ICMP too big, written back into the TUN. */
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
	n = pkt_too_big(reply, sizeof(reply), pkt, pi, (uint32_t)mtu, from);
	if (n && tun_write(t->tun, reply, n) < 0)
		t->drops[DROP_TUN_WRITE]++;
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
	p = prefix_lookup(t->routes, pi.family, pi.dst.b);
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
	m->local = p->local;
	m->tos = pi.ecn;        /* RFC 6040: the inner ECN field travels outside */
	return p;
}

/* Send a batch and account each datagram to its peer (NULL: a handshake
 * datagram to a source that is no peer yet). */
static void
tx_send(struct toud *t, struct udp_msg *msgs, struct peer **peers, unsigned n)
{
	uint64_t now = util_now_ms();
	unsigned i;

	udp_send_batch(t->udp, msgs, n);
	for (i = 0; i < n; i++) {
		enum drop_reason r = msgs[i].err == -EAFNOSUPPORT ? DROP_FAMILY : DROP_SEND;

		if (msgs[i].err == 0) {
			if (peers[i])
				peer_tx(peers[i], msgs[i].len, now);
			continue;
		}
		count_drop(t, peers[i], r);
		/* The source address we pinned may have gone: let the kernel
		 * choose next time. */
		if (peers[i] && (msgs[i].err == -EINVAL || msgs[i].err == -EADDRNOTAVAIL))
			memset(&peers[i]->local, 0, sizeof(peers[i]->local));
		log_debug_rl("send to %s: %s", peers[i] ? peers[i]->name : "handshake source",
		    strerror(-msgs[i].err));
	}
}

void
tx_queue_record(struct toud *t, uint64_t id, const uint8_t *rec, size_t len,
    const union sockaddr_union *to, const struct ipaddr *local, struct peer *p, uint8_t tos)
{
	struct tx *x = t->tx;
	struct udp_msg *m;

	if (GUE_OUTER_LEN + len > x->rec_size) {
		count_drop(t, p, DROP_SEAL);
		return;
	}
	if (x->n_recs == UDP_BATCH)
		tx_flush_records(t);
	m = &x->recs[x->n_recs];
	m->buf = x->rec_mem + (size_t)x->n_recs * x->rec_size;
	gue_outer_encode(m->buf, id);
	memcpy(m->buf + GUE_OUTER_LEN, rec, len);
	m->len = GUE_OUTER_LEN + len;
	m->peer = *to;
	if (local)
		m->local = *local;
	else
		memset(&m->local, 0, sizeof(m->local));
	m->tos = tos;
	x->rec_peers[x->n_recs++] = p;
}

void
tx_flush_records(struct toud *t)
{
	struct tx *x = t->tx;

	if (x && x->n_recs) {
		tx_send(t, x->recs, x->rec_peers, x->n_recs);
		x->n_recs = 0;
	}
}

static void
tx_readable(evutil_socket_t fd, short what, void *arg)
{
	struct tx *x = arg;
	struct toud *t = x->t;
	unsigned round, n;

	(void)fd;
	(void)what;
	for (round = 0; round < TX_ROUNDS; round++) {
		bool empty = false;

		for (n = 0; n < UDP_BATCH;) {
			uint8_t *buf = x->mem + (size_t)n * x->buf_size;
			ssize_t len = tun_read(t->tun, buf + TX_HEADROOM, x->buf_size - TX_HEADROOM);

			if (len < 0) {
				if (len != -EAGAIN && len != -EINTR)
					log_debug_rl("tun read: %s", strerror((int)-len));
				empty = true;
				break;
			}
			x->peers[n] = tx_frame(t, buf, (size_t)len, &x->msgs[n]);
			if (!x->peers[n])
				continue;
			if (t->dtls)       /* sealed into x->recs by the output callback */
				session_send(x->peers[n], x->msgs[n].buf, x->msgs[n].len,
				    x->msgs[n].tos);
			else
				n++;
		}
		if (n)
			tx_send(t, x->msgs, x->peers, n);
		tx_flush_records(t);
		if (empty)
			break;
	}
}

int
tx_control(struct toud *t, struct peer *p, uint8_t ctype, const void *body, size_t len)
{
	uint8_t buf[GUE_WORD_LEN + 64];
	struct udp_msg m = { .buf = buf };

	if (!p->has_endpoint)
		return -EDESTADDRREQ;
	if (len > sizeof(buf) - GUE_WORD_LEN)
		return -EMSGSIZE;
	gue_control_encode(buf, ctype);
	if (len)
		memcpy(buf + GUE_WORD_LEN, body, len);
	if (t->dtls) {
		session_send(p, buf, GUE_WORD_LEN + len, 0);
		tx_flush_records(t);
		return 0;
	}
	m.len = GUE_WORD_LEN + len;
	m.peer = p->endpoint;
	m.local = p->local;
	udp_send_batch(t->udp, &m, 1);
	if (m.err) {
		p->drops[DROP_SEND]++;
		return m.err;
	}
	peer_tx(p, m.len, util_now_ms());
	return 0;
}

struct tx *
tx_new(struct toud *t)
{
	struct tx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->t = t;
	x->buf_size = TX_HEADROOM + t->tun_mtu + 64;
	x->mem = malloc(x->buf_size * UDP_BATCH);
	x->rec_size = GUE_OUTER_LEN + t->conf->iface.path_mtu;
	x->rec_mem = malloc(x->rec_size * UDP_BATCH);
	x->ev = event_new(t->base, t->tun->fd, EV_READ | EV_PERSIST, tx_readable, x);
	if (!x->mem || !x->rec_mem || !x->ev || event_add(x->ev, NULL) < 0) {
		tx_free(x);
		errno = ENOMEM;
		return NULL;
	}
	return x;
}

void
tx_free(struct tx *x)
{
	if (!x)
		return;
	if (x->ev)
		event_free(x->ev);
	free(x->mem);
	free(x->rec_mem);
	free(x);
}
