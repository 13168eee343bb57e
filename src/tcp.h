/* tcp.h - the TCP transport: TLS 1.3 over TCP, carrying a peer's inner
 * payloads as frames (stream.h) when UDP does not get through
 * (transport.h, DESIGN 2.5).  The listener of listen-tcp, the connections
 * to endpoint-tcp (directly or through an HTTP CONNECT proxy), their TLS,
 * limits and queues.  Which transport a peer uses is decided elsewhere
 * (the policy, peer_timers.c): this module connects, accepts, carries and
 * reports, through the callbacks of struct tcp_ops. */
#ifndef TOUD_TCP_H
#define TOUD_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keys.h"

struct toud;
struct peer;
struct udp_msg;
struct x509_store_ctx_st;

/* The largest frame a connection accepts (stream.h); a longer length
 * closes the connection.  Far above any MTU a path has. */
#define TCP_FRAME_MAX 16384

/* What the transport reports, to code above it (daemon.c wires them). */
struct tcp_ops {
	/* n frames (inner payloads, RX_HEADROOM free before each) from p:
	 * rx_frames(). */
	void (*frames)(struct toud *t, struct peer *p, const struct udp_msg *frames, unsigned n);
	/* The configured peer whose key (fingerprint fp, chain xs) this is,
	 * or NULL: no state for an unknown key. */
	struct peer *(*authorize)(struct toud *t, const uint8_t fp[KEYS_FP_LEN],
	    struct x509_store_ctx_st *xs);
	/* p's connection is up (TLS authenticated; p->tcp is it), or it
	 * ended (p->tcp is NULL again); a connection replaced by a newer one
	 * of the same peer reports nothing. */
	void (*up)(struct peer *p);
	void (*down)(struct peer *p, const char *why);
};

/* The TLS context (the interface's key and certificate) and, with
 * listen-tcp, the listening socket (before privileges are dropped).
 * 0 or -errno; a message names what failed. */
int tcp_init(struct toud *t, const struct tcp_ops *ops);
/* A reload's listen-tcp (nc's): the new listener opened before the old
 * one closes; 0, or -errno and err ("...; nothing changed") with the old
 * listener still accepting.  Connections are not touched. */
int tcp_listen_reload(struct toud *t, const struct conf *nc, char *err, size_t errlen);
/* Every connection closed, the listener too. */
void tcp_free(struct toud *t);
/* Connect to p's endpoint-tcp (through its proxy, if any); the result
 * comes through ops->up or ops->down.  0 (also while one is under way or
 * up) or -errno. */
int tcp_connect(struct peer *p);
/* End p's connection, without ops->down (the caller knows). */
void tcp_close(struct peer *p);
/* Queue one frame (payload, len bytes) on p's connection.  0, -ENOTCONN
 * (none up), -ENOBUFS (its send queue is full), -ETIMEDOUT (data, not a
 * control message, dropped because the queue's wait has stayed too long:
 * codel.h), -EMSGSIZE. */
int tcp_send(struct peer *p, const uint8_t *payload, size_t len, bool data);
/* After a reload: every connection whose key the configuration no longer
 * gives to its peer (a fingerprint or CA changed, a CA file replaced)
 * ends, as its peer's DTLS sessions do (handshake_reauthorize), reported
 * through ops->down from the loop.  How many. */
size_t tcp_reauthorize(struct toud *t);
/* Whether p's connection is up, and whether we opened it. */
bool tcp_up(const struct peer *p);
bool tcp_outgoing(const struct peer *p);
/* Every socket of the transport (the listener, the connections open and
 * those to come) carries mark (SO_MARK; 0 for none), as the UDP sockets
 * do in a full tunnel (fulltunnel.c).  0 or -errno (the listener's). */
int tcp_set_mark(struct toud *t, uint32_t mark);
/* For touctl show: the listening address ("ADDR:PORT", NULL when off)
 * and the number of connections open. */
const char *tcp_listen_fmt(const struct toud *t, char *buf, size_t len);
unsigned tcp_connections(const struct toud *t);

#endif
