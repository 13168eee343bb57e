/* tcp.h - the TCP transport: TLS 1.3 over TCP, carrying a peer's inner
 * payloads as frames (stream.h) when UDP does not get through
 * (transport.h, DESIGN 2.5).  The listener of listen-tcp, the connections
 * to endpoint-tcp (directly or through an HTTP CONNECT proxy), their TLS,
 * limits and queues.  Which transport a peer uses is decided elsewhere
 * (the policy, peer_timers.c): this module connects, accepts, carries and
 * reports, through its transport ops and the callbacks of struct
 * transport_core (transport.h). */
#ifndef TOUD_TCP_H
#define TOUD_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "transport.h"

struct toud;
struct peer;
struct udp_msg;
struct x509_store_ctx_st;

/* The largest frame a connection accepts (stream.h); a longer length
 * closes the connection.  Far above any MTU a path has. */
#define TCP_FRAME_MAX 16384

/* The transport's ops (transport.h): daemon.c registers it, so every
 * peer has a TCP path; nothing else reaches it but through them. */
extern const struct transport_ops transport_tcp;

/* The TLS context (the interface's key and certificate) and, with
 * listen-tcp, the listening socket (before privileges are dropped).
 * 0 or -errno; a message names what failed. */
int tcp_init(struct toud *t, const struct transport_core *core);
/* Every connection closed, the listener too. */
void tcp_free(struct toud *t);
/* For touctl show: the listening address ("ADDR:PORT", NULL when off)
 * and the number of connections open. */
const char *tcp_listen_fmt(const struct toud *t, char *buf, size_t len);
unsigned tcp_connections(const struct toud *t);

#endif
