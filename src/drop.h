/* drop.h - why a packet was dropped.  Every drop on the data path
 * increments one of these counters (per peer, or per interface when no peer
 * is known); `touctl show` prints them by name.  Names are a stable
 * interface (JSON keys). */
#ifndef TOUD_DROP_H
#define TOUD_DROP_H

#include <stdbool.h>
#include <stdint.h>

#include "gue.h"
#include "pkt.h"

enum drop_reason {
	/* outer/inner GUE framing (gue_err, GUE_OK unused) */
	DROP_GUE = 0,
	/* inner IP or transport packet (pkt_err, PKT_OK unused) */
	DROP_PKT = DROP_GUE + GUE_ERR__MAX,
	DROP_NO_PEER = DROP_PKT + PKT_ERR__MAX, /* TUN: no peer routes this destination */
	DROP_NOT_UNICAST,       /* TUN: multicast or link-local (the kernel's own IPv6 chatter) */
	DROP_NO_ENDPOINT,       /* TUN: the peer's endpoint is not known (yet) */
	DROP_NO_TUNNEL_ADDR,    /* compact packet of a family the peer/we have no address of */
	DROP_UNKNOWN_ENDPOINT,  /* UDP: datagram from an address no peer uses (encryption none) */
	DROP_SOURCE,            /* inner source not among the peer's addresses/allowed-ips */
	DROP_TOO_BIG,           /* TUN: larger than the path allows (answered with ICMP) */
	DROP_OVERSIZE,          /* UDP: datagram larger than the receive buffer */
	DROP_ECN,               /* RFC 6040: CE on a Not-ECT packet */
	DROP_TUN_WRITE,         /* writing to the TUN failed */
	DROP_SEND,              /* sending the UDP datagram failed */
	DROP_FAMILY,            /* no socket of the endpoint's address family */
	DROP_UNKNOWN_SESSION,   /* dtls: a record for a session ID we do not know */
	DROP_DTLS_HEADER,       /* dtls: the record header failed the prefilter */
	DROP_HANDSHAKE,         /* dtls: a handshake failed (unknown key, alert, timeout) */
	DROP_HS_RATE,           /* dtls: too many handshakes from one source */
	DROP_HS_COOKIE,         /* dtls: ClientHello answered with a cookie request (not a loss) */
	DROP_BAD_RECORD,        /* dtls: a record failed authentication */
	DROP_REPLAY,            /* dtls: a record seen before (a duplicate) */
	DROP_QUEUE,             /* dtls: handshake queue full, oldest packet dropped */
	DROP_SEAL,              /* dtls: encryption failed */
	DROP_ICMP_QUOTE,        /* an ICMP error quoting a flow not routed to its sender */
	DROP_ENCAP_SOURCE,      /* IP-in-IP whose inner source is not the peer's */
	DROP_TOO_BIG_LIMIT,     /* TUN: too big, and the ICMP reply was rate-limited */
	DROP_HS_EVICTED,        /* dtls: an unverified half-open handshake made room for a newer one */
	DROP_HS_AMPLIFICATION,  /* dtls: a handshake record not sent: over 3x what its source sent */
	DROP_EARLY_RECORD,      /* dtls: data that arrived before the handshake completed */
	DROP_NO_SESSION_PEER,   /* dtls: data on a session that belongs to no peer */
	DROP_TUN_OFFLOAD,       /* TUN: a virtio_net_hdr or super-packet that cannot be cut */
	DROP_REPLAY_OLD,        /* dtls: a record older than the replay window */
	DROP_TCP_SENDQ,         /* tcp: the connection's send queue was full */
	DROP_TCP_SENDQ_AQM,     /* tcp: its send queue's wait stayed too long (codel.h) */
	DROP__MAX
};

struct toud;
struct peer;

const char *drop_name(enum drop_reason r);
/* Whether r loses a packet someone meant to carry: all but a ClientHello
 * answered with a cookie request (a normal handshake step) and the
 * kernel's own multicast and link-local chatter on the TUN.  drop_losses()
 * sums those of a drops array ("losses" of touctl show --json). */
bool drop_is_loss(enum drop_reason r);
uint64_t drop_losses(const uint64_t *drops);
/* Count n drops of reason r on peer p, or on the interface when no peer
 * is known (p NULL). */
void drop_count(struct toud *t, struct peer *p, enum drop_reason r, unsigned n);
static inline enum drop_reason drop_gue(enum gue_err e) { return (enum drop_reason)(DROP_GUE + e); }
static inline enum drop_reason drop_pkt(enum pkt_err e) { return (enum drop_reason)(DROP_PKT + e); }

#endif
