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

/* The key log line of a connection's frame keys under a preshared key
 * (tcp_psk.h; doc/protocol.md 3a.2):
 *   TOUD_TCP_PSK_FRAME_KEYS <client random> <client write key>
 *       <server write key> <client write IV> <server write IV>
 * in hex, beside TLS's own lines, with keylog-file or SSLKEYLOGFILE. */
#define TCP_KEYLOG_PSK_LABEL "TOUD_TCP_PSK_FRAME_KEYS"

/* The transport's ops (transport.h): daemon.c registers it, so every
 * peer has a TCP path; nothing else reaches it but through them. */
extern const struct transport_ops transport_tcp;

/* The TLS context (the interface's key and certificate) and, with
 * listen-tcp, the listening socket (before privileges are dropped).
 * 0 or -errno; a message names what failed. */
int tcp_init(struct toud *t, const struct transport_core *core);
/* A reload's listen-tcp (nc's): the new listener opened before the old
 * one closes; 0, or -errno and err ("...; nothing changed") with the old
 * listener still accepting.  Connections are not touched. */
int tcp_listen_reload(struct toud *t, const struct conf *nc, char *err, size_t errlen);
/* Every connection closed, the listener too. */
void tcp_free(struct toud *t);
/* After a reload: every connection whose key the configuration no longer
 * gives to its peer (a fingerprint or CA changed, a CA file replaced), or
 * whose peer's preshared key changed, or whose key exchange its peer's
 * post-quantum no longer accepts, ends, as its peer's DTLS sessions do
 * (handshake_reauthorize, peer_reconfigure), reported through the core's
 * down from the loop.  How many. */
size_t tcp_reauthorize(struct toud *t);
/* Every socket of the transport (the listener, the connections open and
 * those to come) carries mark (SO_MARK; 0 for none), as the UDP sockets
 * do in a full tunnel (fulltunnel.c).  0 or -errno (the listener's). */
int tcp_set_mark(struct toud *t, uint32_t mark);
/* For touctl show: the listening address ("ADDR:PORT", NULL when off)
 * and the number of connections open. */
const char *tcp_listen_fmt(const struct toud *t, char *buf, size_t len);
unsigned tcp_connections(const struct toud *t);

#endif
