/* rx.c - the receiving direction: datagrams from the UDP sockets, validated,
 * matched to a peer, rebuilt into IP packets and written to the TUN.
 *
 * Each buffer keeps RX_HEADROOM bytes in front of the datagram so the inner
 * IP header of a compact TOU segment is rebuilt in place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "bytes.h"
#include "conf.h"
#include "gue.h"
#include "log.h"
#include "peer.h"
#include "pkt.h"
#include "prefix.h"
#include "rx.h"
#include "session.h"
#include "toud.h"
#include "tun.h"
#include "tx.h"
#include "udp.h"

#define RX_HEADROOM 64
#define RX_BUF_SIZE (RX_HEADROOM + 65536)   /* no UDP datagram is larger */
#define RX_ROUNDS 4
#define RX_KEEPALIVE_ECHO_MS 1000

struct rx {
	struct toud *t;
	struct event *ev4, *ev6;
	uint8_t *mem;                       /* UDP_BATCH buffers of RX_BUF_SIZE */
	uint8_t *scratch;                   /* one more: decrypted plaintext */
	struct udp_msg msgs[UDP_BATCH];
};

/* Deliver a whole IP packet from p to the TUN: source check, ECN, MSS. */
static void
rx_deliver(struct toud *t, struct peer *p, uint8_t *pkt, size_t len, size_t wire_len,
    uint8_t outer_tos, uint64_t now)
{
	struct pkt_info pi;
	enum pkt_err err;
	bool drop = false;
	uint8_t ecn;

	if ((err = pkt_parse(pkt, len, &pi)) != PKT_OK) {
		p->drops[drop_pkt(err)]++;
		return;
	}
	/* Anti-spoofing: the source must be routed to this very peer. */
	if (prefix_lookup(t->routes, pi.family, pi.src.b) != p) {
		p->drops[DROP_SOURCE]++;
		return;
	}
	ecn = pkt_ecn_decap(outer_tos & 3, pi.ecn, &drop);
	if (drop) {
		p->drops[DROP_ECN]++;
		return;
	}
	if (ecn != pi.ecn) {
		if (pi.family == AF_INET) {
			uint16_t old = bytes_get16(pkt);
			pkt[1] = (uint8_t)((pkt[1] & ~3) | ecn);
			pkt_csum_update16(pkt + 10, htons(old), htons(bytes_get16(pkt)));
		} else {
			pkt[1] = (uint8_t)((pkt[1] & ~(3 << 4)) | ecn << 4);
		}
	}
	if (pi.proto == IPPROTO_TCP)
		pkt_mss_clamp(pkt, &pi, pkt_mss_for_mtu(pi.family, t->tun_mtu));
	if (tun_write(t->tun, pkt, pi.len) < 0) {
		p->drops[DROP_TUN_WRITE]++;
		return;
	}
	peer_rx(p, wire_len, now);
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

void
rx_inner(struct toud *t, struct peer *p, uint8_t *buf, size_t len, size_t wire_len, uint8_t tos,
    uint64_t now)
{
	struct gue_inner in;
	enum gue_err gerr;
	enum pkt_err perr;

	if ((gerr = gue_inner_decode(buf, len, &in)) != GUE_OK) {
		p->drops[drop_gue(gerr)]++;
		return;
	}
	switch (in.kind) {
	case GUE_KIND_CONTROL:
		peer_rx(p, wire_len, now);
		/* Answer a keepalive when we have been quiet, so the sender's
		 * liveness check sees us (it would call a quiet peer dead);
		 * the sender has just sent, so it does not answer back. */
		if (in.proto == GUE_CTYPE_KEEPALIVE && now - p->last_tx_ms >= RX_KEEPALIVE_ECHO_MS)
			tx_control(t, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
		return;
	case GUE_KIND_IP:
		rx_deliver(t, p, (uint8_t *)in.payload, in.len, wire_len, tos, now);
		return;
	case GUE_KIND_COMPACT: {
		uint8_t *seg = (uint8_t *)in.payload;
		const struct ipaddr *src = NULL, *dst;
		size_t hlen;

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
		hlen = pkt_ip_build(seg, in.len, in.proto, src, dst, tos & 3);
		if (!hlen) {
			p->drops[drop_pkt(PKT_ERR_LENGTH)]++;
			return;
		}
		rx_deliver(t, p, seg - hlen, hlen + in.len, wire_len, tos, now);
		return;
	}
	}
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
		session_input(t, m->buf, m->len, &m->peer, &m->local, m->tos,
		    x->scratch + RX_HEADROOM, RX_BUF_SIZE - RX_HEADROOM, now);
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
	rx_inner(t, p, m->buf, m->len, m->len, m->tos, now);
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
			if (n < 0 && n != -EAGAIN && n != -EINTR)
				log_debug_rl("udp receive: %s", strerror(-n));
			break;
		}
		now = util_now_ms();
		for (i = 0; i < n; i++)
			rx_datagram(x, &x->msgs[i], now);
		if (x->t->dtls)
			tx_flush_records(x->t);     /* handshake replies, rekeys */
		if (n < UDP_BATCH)
			break;
	}
}

struct rx *
rx_new(struct toud *t)
{
	struct rx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->t = t;
	x->mem = malloc((size_t)RX_BUF_SIZE * (UDP_BATCH + 1));
	x->scratch = x->mem + (size_t)RX_BUF_SIZE * UDP_BATCH;
	if (!x->mem)
		goto err;
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
	if (x->ev4)
		event_free(x->ev4);
	if (x->ev6)
		event_free(x->ev6);
	free(x->mem);
	free(x);
}
