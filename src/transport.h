/* transport.h - the seam below tx.c and rx.c: one interface every outer
 * transport implements, and the paths a peer can be reached on.
 *
 * A transport is a way to carry a peer's inner payloads: UDP datagrams
 * (GUE, DTLS or plain: transport_udp.c) or frames in a TLS 1.3 stream over
 * TCP, direct or through an HTTP CONNECT proxy (tcp.c).  Each is a const
 * struct transport_ops.  daemon.c registers the transports the interface
 * offers (toud->transports, in order of preference); peer_new() gives
 * every peer one path (struct peer_path) of each, in that order, in
 * p->paths.  One path carries the peer's traffic at a time (p->paths->active,
 * written by peer_path_move() in peer.c); which one is the policy's
 * (peer_timers.c).  A third transport is one new file with its ops, and
 * its registration in daemon_transports() (daemon.c).
 *
 * Sending: tx_seal() (tx.c) is the one function every inner payload to a
 * peer passes (TUN packets, packets held during a handshake, control
 * messages; either encryption): one call of the active path's send op.
 * tx.c does not know which transport that is.
 *   UDP (transport_udp.c): with DTLS the payload is sealed into a record
 *   (session_seal(): numbered here), and the record, or with encryption =
 *   none the payload itself, is queued for its path (address, local
 *   address, session ID) in udpout.c's batch of datagrams.  The batch goes
 *   to the sending thread, which encrypts the records and sends them
 *   (udp_send_batch()), or is sent on the main loop while that thread is
 *   idle (worker.h); it is accounted back on the main loop.  What only a
 *   UDP path has goes to udpout.c from tx.c directly: OpenSSL's own records
 *   (handshake, alerts, through the DTLS output callbacks) and the path
 *   challenges that validate a new address (tx_path_message()).
 *   TCP (tcp.c): the payload becomes a frame (stream.h) of the peer's TLS
 *   connection, which leaves with everything queued in the same turn of
 *   the loop.  It runs no thread of its own.
 *
 * Receiving: the transport reads on the main loop and hands rx.c what it
 * read.  UDP: rx.c reads the sockets (udp_recv_batch()) and finds each
 * datagram's peer by its session ID (DTLS) or its source address.  A
 * transport that authenticates its peer itself hands the core the inner
 * payloads ("frames") it carried through struct transport_core's frames
 * (rx_frames(), rx.h), in batches: rx.c then treats them as it treats a
 * plain datagram of that peer.
 *
 * A transport reports to the core only through struct transport_core,
 * which daemon.c passes in, so it calls nothing that calls it (peer.h). */
#ifndef TOUD_TRANSPORT_H
#define TOUD_TRANSPORT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "path.h"
#include "path_policy.h"

struct toud;
struct peer;
struct udp_msg;
struct x509_store_ctx_st;
struct peer_path;

/* What tx_seal() hands a transport: it decides whether the payload counts
 * as data (timers, the stale-session check) and how a record is framed. */
enum tx_payload {
	TX_PACKET,              /* a TUN packet in its output buffer: may be framed around */
	TX_HELD,                /* a packet held during the handshake: copied */
	TX_CONTROL,             /* a control message: copied, not data */
};

/* The send op's "nothing left and nothing to report": the payload was
 * held for a handshake, or dropped and counted. */
#define TRANSPORT_NOT_SENT (-EINPROGRESS)

/* A path's state, for the policy and touctl show. */
enum transport_state {
	TRANSPORT_DOWN = 0,          /* nothing open */
	TRANSPORT_OPENING,           /* a handshake or a connection under way */
	TRANSPORT_UP,                /* can carry the peer's traffic now */
};

/* "down", "opening", "up" (touctl show's paths). */
static inline const char *
transport_state_name(enum transport_state st)
{
	return st == TRANSPORT_UP ? "up" : st == TRANSPORT_OPENING ? "opening" : "down";
}

struct transport_ops {
	const char *name;       /* "udp", "tcp": touctl show's transport */
	int moved_event;        /* events.h: counted when traffic moves to it */
	/* Whether it sends to the peer's endpoint (and so needs one):
	 * a payload for a peer without one is dropped before it is framed. */
	bool addressed;
	/* Start reaching p on ph (TCP: connect); the result comes through
	 * transport_core's up or down.  0 (also while one is under way or
	 * up) or -errno.  NULL: it opens by itself (UDP: a handshake). */
	int (*open)(struct peer *p, struct peer_path *ph);
	/* End what ph has open, without transport_core's down (the caller
	 * knows), and everything of p's it holds: also when p goes. */
	void (*close)(struct peer *p, struct peer_path *ph);
	/* Send one inner payload (len bytes; tos its ECN field) on ph,
	 * counting its own drops.  0: queued, accounted by the transport
	 * when it leaves; > 0: queued, that many bytes to account now;
	 * TRANSPORT_NOT_SENT; -errno (what a control message gets back). */
	int (*send)(struct peer *p, struct peer_path *ph, uint8_t *payload, size_t len,
	    uint8_t tos, enum tx_payload kind, uint64_t now);
	/* Whether we opened what ph has open (the other side did not). */
	bool (*outgoing)(const struct peer *p, const struct peer_path *ph);
	/* For the policy and touctl show: the state, the cipher ("" when
	 * none) and the smoothed round-trip time (µs; 0: not known). */
	enum transport_state (*state)(const struct peer *p, const struct peer_path *ph);
	const char *(*cipher)(const struct peer *p, const struct peer_path *ph);
	/* The key exchange of what ph has up, as touctl show names it
	 * (pq.h: "x25519mlkem768", "x25519", "ecdhe-p256 + ml-kem-768"; ""
	 * when none). */
	const char *(*key_exchange)(const struct peer *p, const struct peer_path *ph);
	uint64_t (*rtt_us)(const struct peer *p, const struct peer_path *ph);
};

/* How a transport reports to the core (daemon.c wires them). */
struct transport_core {
	/* n frames (inner payloads, RX_HEADROOM free before each) from p,
	 * received on its path ph: rx_frames(). */
	void (*frames)(struct toud *t, struct peer *p, struct peer_path *ph,
	    const struct udp_msg *frames, unsigned n);
	/* The configured peer whose key (fingerprint fp, chain xs) this is,
	 * or NULL: no state for an unknown key. */
	struct peer *(*authorize)(struct toud *t, const uint8_t fp[KEYS_FP_LEN],
	    struct x509_store_ctx_st *xs);
	/* ph is up (authenticated), or what it had open ended (why: for
	 * last_error); a connection replaced by a newer one of the same peer
	 * reports nothing. */
	void (*up)(struct peer *p, struct peer_path *ph);
	void (*down)(struct peer *p, struct peer_path *ph, const char *why);
	/* p authenticated on ph, but what it sent inside does not open
	 * under p's preshared key (TCP: doc/protocol.md 3a.2): why, for
	 * last_error, stays there until a path is up.  down follows. */
	void (*mismatch)(struct peer *p, struct peer_path *ph, const char *why);
};

/* One way to reach a peer: its transport, what the transport keeps for it
 * (TCP: its connection; NULL: nothing), the time stamps the data path
 * keeps for the path policy (peer_timers.c feeds them to it at its tick:
 * one store per packet), and the probe of it in flight. */
struct peer_path {
	const struct transport_ops *ops;
	void *conn;
	/* The last authenticated record received on it (not a probe or its
	 * answer), and the first data sent on it since then (0: none; a
	 * record received or a probe answered zeroes it). */
	uint64_t rx_ms, tx_ms;
	/* The policy's probe: when it left (0: none in flight) and its
	 * token. */
	uint64_t probe_ms;
	uint8_t token[PATH_TOKEN_LEN];
};

/* ph's key exchange: its transport's op, "" without one. */
static inline const char *
transport_key_exchange(const struct peer *p, const struct peer_path *ph)
{
	return ph->ops->key_exchange ? ph->ops->key_exchange(p, ph) : "";
}

#define TRANSPORT_MAX POL_PATHS_MAX  /* transports an interface registers: a policy path each */

/* A peer's paths, one per registered transport, in order of preference:
 * path[0] is the preferred one (UDP).  active: the one its traffic takes;
 * pol: the path policy's state (path_policy.h), its path i being path[i]. */
struct peer_paths {
	unsigned n, active;
	struct peer_path path[TRANSPORT_MAX];
	struct path_policy pol;
	uint64_t pol_ms;                /* the policy's clock, last fed */
};

/* pp's path of transport ops, or NULL. */
static inline struct peer_path *
transport_path(struct peer_paths *pp, const struct transport_ops *ops)
{
	unsigned i;

	for (i = 0; pp && i < pp->n; i++)
		if (pp->path[i].ops == ops)
			return &pp->path[i];
	return NULL;
}

#endif
