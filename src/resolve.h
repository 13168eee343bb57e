/* resolve.h - endpoint host names, resolved without blocking the loop
 * (libevent evdns, which also reads /etc/hosts). */
#ifndef TOUD_RESOLVE_H
#define TOUD_RESOLVE_H

struct toud;
struct peer;

int resolve_init(struct toud *t);        /* 0 or -errno */
void resolve_free(struct toud *t);
/* Set p's endpoint from its configuration: a literal address at once, a
 * name asynchronously (the peer waits to be contacted meanwhile).  Called
 * again after failed handshakes, so a name that moved is followed. */
void resolve_peer(struct peer *p);
/* Drop a lookup in flight (the peer is going away). */
void resolve_cancel(struct peer *p);

#endif
