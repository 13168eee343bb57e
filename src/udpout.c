/* udpout.c - the UDP transport's output queue.
 *
 * The queue is a batch of datagrams, each in its own buffer of the stride:
 * TUN packets are read (tx.c) straight into the next buffer and framed
 * there, and with DTLS their record is framed around them in place;
 * every other record (control messages, packets held during a handshake,
 * OpenSSL's own, which come sealed) is copied in, the price of batching
 * with sendmmsg.  toud's records are encrypted in place only where the
 * batch is sent (batch_write()), with a reference to their session's
 * sealer that the batch puts when it is back: a session may end while its
 * records are on the thread.
 *
 * The batch leaves in one place, udpout_leave(): from a deferred event
 * that runs once the current callback returns (with encryption = none: at
 * the end of each TUN read round, udpout_flush()), when the batch is
 * full, and at shutdown.  It goes by worker.h's rule (which has the
 * threading model), bulk meaning full: a batch that is not full and finds
 * the sending thread idle is sent at once from the main loop.  Without the
 * thread (threads = off, the unit tests) every batch is sent at once.
 * Each batch is accounted (bytes, drops, a vanished source address) back
 * on the main loop; it names its peers by reference and its sessions by
 * ID, so either may be gone by then.  Equal-size datagrams to one peer
 * leave in one UDP GSO send (udp.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "ctx.h"
#include "drop.h"
#include "gue.h"
#include "log.h"
#include "peer.h"
#include "peer_count.h"
#include "peer_ref.h"
#include "record.h"
#include "session.h"
#include "udp.h"
#include "udpout.h"
#include "worker.h"

#define UDPOUT_BATCHES 4     /* one filled, the rest in flight */

struct udpout_batch {
	struct toud *t;
	uint8_t *mem;                      /* UDP_BATCH buffers */
	struct udp_msg msgs[UDP_BATCH];
	struct peer_ref peers[UDP_BATCH];  /* nobody: no peer (yet), or freed since */
	uint64_t ids[UDP_BATCH];           /* DTLS: session of each record */
	/* DTLS: what encrypts each record framed by toud before it leaves
	 * (a reference; NULL for OpenSSL's records, sealed already). */
	struct record_sealer *seal[UDP_BATCH];
	bool withdrawn[UDP_BATCH];         /* not to be sent */
	unsigned n;
};

struct udpout {
	struct toud *t;
	struct event *ev_flush;            /* deferred flush of the batch */
	size_t rec_size;                   /* the largest datagram: a record of the path MTU */
	size_t stride;                     /* a buffer */
	struct udpout_batch batches[UDPOUT_BATCHES];
	struct udpout_batch *out;          /* the batch being filled: worker_slot() */
	struct worker *worker;             /* the ring, with or without its thread */
	void *slots[UDPOUT_BATCHES];
};

/* Account each datagram of a batch that went out to its peer (nobody: a
 * handshake datagram to a source that is no peer yet, or a peer freed
 * since); ids names each record's session (NULL: encryption = none). */
static void
udpout_account(struct toud *t, struct udp_msg *msgs, const struct peer_ref *peers,
    const uint64_t *ids, unsigned n)
{
	uint64_t now = toud_now(t);
	struct peer_ref last = { 0, 0 };
	struct peer *p = NULL;
	unsigned i;

	for (i = 0; i < n; i++) {
		enum drop_reason r = msgs[i].err == -EAFNOSUPPORT ? DROP_FAMILY :
		    msgs[i].err == -ENOKEY ? DROP_SEAL : DROP_SEND;

		if (!peer_ref_equal(peers[i], last)) {
			last = peers[i];
			p = peer_resolve(t, last);
		}
		if (msgs[i].err == 0) {
			if (p)
				peer_tx(p, msgs[i].len, now);
			continue;
		}
		drop_count(t, p, r, 1);
		/* The source address we pinned may have gone: let the kernel
		 * choose next time.  It is the session's with DTLS (and if
		 * the record was on its own path, from an address that is
		 * gone, the next path gets a new session ID), the peer's
		 * without. */
		if (msgs[i].err == -EINVAL || msgs[i].err == -EADDRNOTAVAIL) {
			struct session *s = ids && ids[i] ? session_named(t, ids[i]) : NULL;

			if (s && s->local.family && util_sa_equal(&msgs[i].peer, &s->addr)) {
				memset(&s->local, 0, sizeof(s->local));
				if (s->established && msgs[i].err == -EADDRNOTAVAIL)
					session_ids_use(s, session_ids_fresh(s));
			}
			else if (!ids && p)
				memset(&p->local, 0, sizeof(p->local));
		}
		log_debug_rl("send to %s: %s", p ? p->name : "handshake source",
		    strerror(-msgs[i].err));
	}
}

/* The system call: on the sending thread, or on the main loop. */
static void
udpout_write(struct toud *t, struct udp_msg *msgs, unsigned n)
{
	if (t->sink)
		t->sink(t, msgs, n);
	else
		udp_send_batch(t->udp, msgs, n);
}

/* worker_fn: seal and send a batch, on the sending thread or the main
 * loop.  The records toud framed are encrypted in place.  One that fails
 * (a cipher error) is marked -ENOKEY and never sent: the datagrams around
 * it go in runs.  Nothing but the messages is touched. */
static void
batch_write(void *slot, void *arg)
{
	struct udpout_batch *b = slot;
	unsigned i, first = 0;

	(void)arg;
	for (i = 0; i < b->n; i++) {
		struct udp_msg *m = &b->msgs[i];

		m->err = 0;
		if (b->seal[i] && record_finish(b->seal[i], m->buf + GUE_OUTER_LEN,
		    m->len - GUE_OUTER_LEN) != RECORD_OK) {
			m->err = -ENOKEY;
			if (i > first)
				udpout_write(b->t, b->msgs + first, i - first);
			first = i + 1;
		}
	}
	if (b->n > first)
		udpout_write(b->t, b->msgs + first, b->n - first);
}

/* worker_fn: a batch that went out, on the main loop: account it and put
 * its sealers (the last reference to a session's frees it, now that no
 * thread can be using it). */
static void
batch_done(void *slot, void *arg)
{
	struct udpout_batch *b = slot;
	unsigned i;

	(void)arg;
	udpout_account(b->t, b->msgs, b->peers, b->t->dtls ? b->ids : NULL, b->n);
	for (i = 0; i < b->n; i++) {
		record_sealer_put(b->seal[i]);
		b->seal[i] = NULL;
	}
	b->n = 0;
}

/* Close the gaps of withdrawn records in the batch being filled. */
static void
batch_compact(struct udpout_batch *b)
{
	unsigned i, n = 0;

	for (i = 0; i < b->n; i++) {
		if (b->withdrawn[i]) {
			b->withdrawn[i] = false;
			record_sealer_put(b->seal[i]);
			b->seal[i] = NULL;
			continue;
		}
		if (n != i) {
			struct udp_msg m = b->msgs[n];

			/* each entry keeps its buffer: no bytes move */
			b->msgs[n] = b->msgs[i];
			b->msgs[i] = m;
			b->peers[n] = b->peers[i];
			b->ids[n] = b->ids[i];
			b->seal[n] = b->seal[i];
			b->seal[i] = NULL;
		}
		n++;
	}
	b->n = n;
}

/* The one place the queue leaves. */
static void
udpout_leave(struct udpout *o)
{
	batch_compact(o->out);
	if (!o->out->n)
		return;
	if (worker_flush(o->worker, o->out->n == UDP_BATCH))
		o->t->events[EVENT_SEND_THREAD_BATCHES]++;
	o->out = worker_slot(o->worker);
}

static void
flush_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	udpout_leave(arg);
}

void
udpout_flush(struct udpout *o)
{
	udpout_leave(o);
}

uint8_t *
udpout_buf(struct udpout *o)
{
	if (o->out->n == UDP_BATCH)
		udpout_leave(o);
	return o->out->mem + (size_t)o->out->n * o->stride;
}

void
udpout_queue(struct udpout *o, const struct udpout_dgram *d)
{
	size_t hdr = o->t->dtls ? GUE_OUTER_LEN : 0;
	struct udpout_batch *b;
	struct udp_msg *m;

	if (hdr + d->len > o->rec_size) {
		drop_count(o->t, d->peer, DROP_SEAL, 1);
		return;
	}
	if (o->out->n == UDP_BATCH)
		udpout_leave(o);
	b = o->out;
	if (b->n == 0)
		event_active(o->ev_flush, EV_TIMEOUT, 0);
	m = &b->msgs[b->n];
	m->buf = b->mem + (size_t)b->n * o->stride;
	/* A datagram framed in this very buffer (a TUN packet's) stays where
	 * it is if it fits; any other is copied in (memmove: it may be this
	 * buffer's). */
	if ((uintptr_t)d->buf >= (uintptr_t)m->buf + hdr &&
	    (uintptr_t)d->buf + d->len <= (uintptr_t)m->buf + o->stride)
		m->buf = (uint8_t *)(uintptr_t)d->buf - hdr;
	else
		memmove(m->buf + hdr, d->buf, d->len);
	if (hdr)
		gue_outer_encode(m->buf, d->wire_id);
	m->len = hdr + d->len;
	m->peer = *d->to;
	if (d->local && d->local->family)
		m->local = *d->local;
	else
		memset(&m->local, 0, sizeof(m->local));
	m->tos = d->tos;
	b->ids[b->n] = d->session;
	b->seal[b->n] = d->seal ? record_sealer_get(d->seal) : NULL;
	b->withdrawn[b->n] = false;
	b->peers[b->n++] = peer_ref_of(d->peer);
}

void
udpout_send_now(struct udpout *o, struct udp_msg *m, struct peer *p)
{
	struct peer_ref ref = peer_ref_of(p);

	udpout_write(o->t, m, 1);
	udpout_account(o->t, m, &ref, NULL, 1);
}

void
udpout_withdraw_session(struct udpout *o, uint64_t id)
{
	unsigned i;

	/* Only the batch being filled: the others are on their way. */
	for (i = 0; i < o->out->n; i++)
		if (o->out->ids[i] == id)
			o->out->withdrawn[i] = true;
}

struct udpout *
udpout_new(struct toud *t, size_t buf_size)
{
	struct udpout *o = calloc(1, sizeof(*o));
	unsigned k;

	if (!o)
		return NULL;
	o->t = t;
	o->rec_size = GUE_OUTER_LEN + t->conf->iface.path_mtu;
	o->stride = buf_size > o->rec_size ? buf_size : o->rec_size;
	for (k = 0; k < UDPOUT_BATCHES; k++) {
		o->batches[k].t = t;
		o->slots[k] = &o->batches[k];
		if (!(o->batches[k].mem = malloc(o->stride * UDP_BATCH)))
			goto err;
	}
	if (!(o->worker = worker_ring(o->slots, UDPOUT_BATCHES, batch_write, batch_done, o)) ||
	    !(o->ev_flush = event_new(t->base, -1, 0, flush_cb, o)))
		goto err;
	o->out = worker_slot(o->worker);
	return o;
err:
	udpout_free(o);
	errno = ENOMEM;
	return NULL;
}

int
udpout_start_thread(struct udpout *o)
{
	return worker_start(o->worker, o->t->base, "toud-send");
}

bool
udpout_threaded(const struct udpout *o)
{
	return o && worker_threaded(o->worker);
}

void
udpout_stop(struct udpout *o)
{
	udpout_leave(o);
	/* Everything in flight leaves and is accounted while its peers
	 * exist. */
	worker_stop(o->worker);
}

void
udpout_free(struct udpout *o)
{
	unsigned k, i;

	if (!o)
		return;
	if (o->worker)
		worker_free(o->worker);
	if (o->ev_flush)
		event_free(o->ev_flush);
	for (k = 0; k < UDPOUT_BATCHES; k++) {
		for (i = 0; i < o->batches[k].n; i++)
			record_sealer_put(o->batches[k].seal[i]);
		free(o->batches[k].mem);
	}
	free(o);
}
