/* udpout.h - the UDP transport's output queue: the one batch of datagrams
 * every record and plain datagram leaves through (toud's data records,
 * OpenSSL's handshake flights and alerts, control messages, and with
 * encryption = none the framed TUN packets), sent on the sending thread
 * or the main loop by worker.h's rule and accounted on the main loop.
 * How it sits below tx.c is in transport.h. */
#ifndef TOUD_UDPOUT_H
#define TOUD_UDPOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct toud;
struct peer;
struct record_sealer;
struct udp_msg;
struct udpout;

/* One datagram to queue.  With DTLS buf is a record (the outer GUE header
 * with wire_id goes in front of it), else a plain inner payload.  buf may
 * lie in the queue's own buffer (udpout_buf()): then it stays where it is
 * if it fits, else it is copied. */
struct udpout_dgram {
	const uint8_t *buf;
	size_t len;
	const union sockaddr_union *to;
	const struct ipaddr *local;     /* NULL or family 0: the kernel chooses */
	struct peer *peer;              /* accounted to (NULL: nobody) */
	uint8_t tos;
	uint64_t session;               /* DTLS: toud's name (ID 0) of its session; 0: none */
	uint64_t wire_id;               /* DTLS: the session ID on the wire */
	/* DTLS: what encrypts a record toud framed before it leaves (the
	 * queue keeps a reference); NULL for one sealed already (OpenSSL's). */
	struct record_sealer *seal;
};

/* Buffers of buf_size bytes at least (or a whole record of the path MTU,
 * if larger).  The batch also leaves from a deferred event once the
 * current callback returns.  NULL with errno. */
struct udpout *udpout_new(struct toud *t, size_t buf_size);
/* Finishes the sends in flight first. */
void udpout_free(struct udpout *o);
/* Send on a thread of its own from now on ("toud-send"; once privileges
 * are dropped, since capabilities belong to each thread).  0 or -errno. */
int udpout_start_thread(struct udpout *o);
bool udpout_threaded(const struct udpout *o);
/* Shutdown: send the batch, wait for those in flight and end the thread;
 * from here on the main loop sends. */
void udpout_stop(struct udpout *o);

/* The buffer the next datagram goes in (a full batch leaves first). */
uint8_t *udpout_buf(struct udpout *o);
/* Queue a datagram; one larger than a buffer is counted (seal) and
 * dropped. */
void udpout_queue(struct udpout *o, const struct udpout_dgram *d);
/* The batch leaves now (the end of a TUN read with encryption = none). */
void udpout_flush(struct udpout *o);
/* Send one datagram at once from the main loop and account it to p, past
 * the queue (encryption = none: nothing orders a control message against
 * data).  m->err tells what became of it. */
void udpout_send_now(struct udpout *o, struct udp_msg *m, struct peer *p);
/* Take back the records of session id still in the batch being filled
 * (a handshake refused at completion: its last flight must not leave). */
void udpout_withdraw_session(struct udpout *o, uint64_t id);

#endif
