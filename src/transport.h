/* transport.h - the outer transports, below tx.c and rx.c.
 *
 * A peer's traffic takes one outer transport at a time (peer.transport).
 * The two directions meet it at one door each, on the main loop, and
 * nowhere else:
 *
 * Sending: tx_seal() (tx.c) is the one function every inner payload to a
 * peer passes (TUN packets, packets held during a handshake, control
 * messages; either encryption), and the one switch on the transport.
 *   TRANSPORT_UDP: with DTLS the payload is sealed into a record
 *   (session_seal(): numbered here), and the record, or with encryption =
 *   none the payload itself, is queued for its path (address, local
 *   address, session ID) in udpout.c's batch of datagrams.  The batch goes
 *   to the sending thread, which encrypts the records and sends them
 *   (udp_send_batch()), or is sent on the main loop while that thread is
 *   idle (worker.h); it is accounted back on the main loop.  What only a
 *   UDP path has goes to udpout.c directly: OpenSSL's own records
 *   (handshake, alerts, through the DTLS output callbacks) and the path
 *   challenges that validate a new address (tx_path_message()).
 *
 * Receiving: the transport reads on the main loop and hands rx.c what it
 * read.
 *   TRANSPORT_UDP: rx.c reads the sockets (udp_recv_batch()) and finds
 *   each datagram's peer by its session ID (DTLS) or its source address.
 *   A transport that authenticates its peer itself hands rx.c the inner
 *   payloads ("frames") it carried with rx_frames() (rx.h), in batches:
 *   rx.c then treats them as it treats a plain datagram of that peer.
 *
 *   TRANSPORT_TCP (tcp.c): the payload becomes a frame (stream.h) of the
 *   peer's TLS connection (tcp_send()), which leaves with everything queued
 *   in the same turn of the loop; tcp.c reads on the main loop and hands
 *   the frames to rx_frames() in batches.  It runs no thread of its own.
 *
 * Which transport a peer takes is the policy's (peer_timers.c), written by
 * peer_transport() (peer.c); the TCP transport reports to it, and to rx.c,
 * through callbacks (tcp.h), so it calls nothing that calls it. */
#ifndef TOUD_TRANSPORT_H
#define TOUD_TRANSPORT_H

enum transport {
	TRANSPORT_UDP = 0,      /* datagrams: GUE over UDP, DTLS or plain */
	TRANSPORT_TCP,          /* frames in a TLS 1.3 stream over TCP (tcp.c, stream.h) */
};

/* "udp" or "tcp": `transport` in touctl show --json. */
static inline const char *
transport_name(enum transport tr)
{
	return tr == TRANSPORT_TCP ? "tcp" : "udp";
}

#endif
