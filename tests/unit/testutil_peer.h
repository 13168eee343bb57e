/* testutil_peer.h - a daemon state built by hand, for the suites of what
 * renders it (check_show, check_metrics): the peers of a parsed
 * configuration, linked into the context. */
#ifndef TOUD_TESTUTIL_PEER_H
#define TOUD_TESTUTIL_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conf.h"
#include "peer.h"
#include "ctx.h"
#include "transport.h"

/* peer[0..n) become the first n peers of t->conf, listed in peers, which
 * becomes t's peer list. */
static inline void
check_peers_link(struct toud *t, struct peer *peer, struct peer **peers, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		peer[i].toud = t;
		peer[i].cf = &t->conf->peers[i];
		peer[i].name = t->conf->peers[i].name;
		peers[i] = &peer[i];
	}
	t->peers = peers;
	t->n_peers = n;
}

/* Paths for a peer built by hand (transport.h), without a transport
 * behind them: "udp", down, and "tcp", up with a 2.5 ms RTT and a TLS
 * cipher, carrying the traffic. */
static enum transport_state
check_udp_state(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	(void)ph;
	return TRANSPORT_DOWN;
}

static enum transport_state
check_tcp_state(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	(void)ph;
	return TRANSPORT_UP;
}

static const char *
check_udp_cipher(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	(void)ph;
	return "";
}

static const char *
check_tcp_cipher(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	(void)ph;
	return "TLS_AES_256_GCM_SHA384";
}

static const char *
check_tcp_key_exchange(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	(void)ph;
	return "x25519mlkem768";
}

static uint64_t
check_udp_rtt(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	(void)ph;
	return 0;
}

static uint64_t
check_tcp_rtt(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	(void)ph;
	return 2500;
}

static const struct transport_ops check_udp_ops = {
	.name = "udp", .state = check_udp_state, .cipher = check_udp_cipher,
	.rtt_us = check_udp_rtt,
};
static const struct transport_ops check_tcp_ops = {
	.name = "tcp", .state = check_tcp_state, .cipher = check_tcp_cipher,
	.key_exchange = check_tcp_key_exchange, .rtt_us = check_tcp_rtt,
};

/* p's paths become pp: UDP down (no key exchange op), TCP up and active
 * (with ML-KEM), moved moves times. */
static inline void
check_peer_on_tcp(struct peer *p, struct peer_paths *pp, uint64_t moves)
{
	memset(pp, 0, sizeof(*pp));
	pp->path[0].ops = &check_udp_ops;
	pp->path[1].ops = &check_tcp_ops;
	pp->n = 2;
	pp->active = 1;
	p->paths = pp;
	p->transport_switches = moves;
}

#endif
