/* testutil_peer.h - a daemon state built by hand, for the suites of what
 * renders it (check_show, check_metrics): the peers of a parsed
 * configuration, linked into the context. */
#ifndef TOUD_TESTUTIL_PEER_H
#define TOUD_TESTUTIL_PEER_H

#include <stddef.h>

#include "conf.h"
#include "peer.h"
#include "ctx.h"

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

#endif
