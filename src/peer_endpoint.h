/* peer_endpoint.h - the one way a peer's endpoint is written: by the
 * handshake (the address a session was set up from), the path code (a
 * new address that answered its challenge) and the resolver (a name's
 * address, while there is no session).  A change from one address to
 * another is counted (toud_peer_endpoint_changes_total).  A leaf: it
 * writes a peer's fields and calls nothing of peer.c, so the resolver
 * stays out of the files that call each other (peer.h, tests/cli/knot.sh). */
#ifndef TOUD_PEER_ENDPOINT_H
#define TOUD_PEER_ENDPOINT_H

#include "peer.h"
#include "util.h"

static inline void
peer_endpoint_set(struct peer *p, const union sockaddr_union *sa)
{
	if (p->has_endpoint && !util_sa_equal(&p->endpoint, sa))
		p->endpoint_changes++;
	p->endpoint = *sa;
	p->has_endpoint = true;
}

#endif
