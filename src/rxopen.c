/* rxopen.c - the receiving direction's record opening.
 *
 * rx.c checks each data record of an established session where the replay
 * window is (record_check(), on the main loop) and queues a copy of its
 * datagram here, with a reference to the session's opener.  A batch is
 * opened (record_unseal(): the AEAD, the costly part) and handed back in
 * order; rx.c then accepts each record (record_accept(): the window, again,
 * for copies opened together) and does everything else with it.
 *
 * Batches leave by worker.h's rule (which has the threading model), bulk
 * meaning RXOPEN_BULK records or more; the opening thread ("toud-open")
 * touches only a batch and the openers it references.  Finished batches
 * come back to the main loop, which hands every record to rx.c and puts
 * the references: a session freed meanwhile keeps its opener until then.
 * Without the thread (threads = off, the unit tests) every batch is opened
 * when it is flushed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxopen.h"
#include "worker.h"

#define RXOPEN_BATCHES 4
#define RXOPEN_RECS 256                 /* records per batch */
#define RXOPEN_BULK 32                  /* a batch this large is bulk traffic */

struct rxopen_batch {
	uint8_t *mem;                       /* RXOPEN_RECS buffers of the stride */
	struct rxopen_rec recs[RXOPEN_RECS];
	struct record_opener *op[RXOPEN_RECS];
	unsigned n;
};

struct rxopen {
	size_t max_len, headroom, stride;
	rxopen_fn *fn;
	rxopen_end_fn *end;
	void *arg;
	struct event_base *base;
	uint64_t *thread_batches;
	struct rxopen_batch batches[RXOPEN_BATCHES];
	struct rxopen_batch *cur;           /* the batch being filled: worker_slot() */
	struct worker *worker;              /* the ring, with or without its thread */
	void *slots[RXOPEN_BATCHES];
	bool closing;                       /* rxopen_free(): hand nothing back */
};

/* worker_fn: open every record of a batch, in place. */
static void
batch_open(void *slot, void *arg)
{
	struct rxopen_batch *b = slot;
	unsigned i;

	(void)arg;
	for (i = 0; i < b->n; i++) {
		struct rxopen_rec *r = &b->recs[i];

		r->status = record_unseal(b->op[i], r->m.buf + r->off, r->m.len - r->off);
	}
}

/* worker_fn: an opened batch back on the main loop. */
static void
batch_done(void *slot, void *arg)
{
	struct rxopen_batch *b = slot;
	struct rxopen *o = arg;
	unsigned i;

	for (i = 0; i < b->n; i++) {
		if (!o->closing)
			o->fn(o->arg, &b->recs[i]);
		record_opener_put(b->op[i]);
		b->op[i] = NULL;
	}
	b->n = 0;
	if (!o->closing)
		o->end(o->arg);
}

void
rxopen_flush(struct rxopen *o)
{
	struct rxopen_batch *b = o->cur;

	if (!b->n)
		return;
	if (worker_flush(o->worker, b->n >= RXOPEN_BULK))
		(*o->thread_batches)++;
	o->cur = worker_slot(o->worker);
}

bool
rxopen_add(struct rxopen *o, const struct udp_msg *m, size_t off,
    struct record_opener *op, uint64_t session, uint32_t index, uint64_t seq)
{
	struct rxopen_batch *b;
	struct rxopen_rec *r;
	size_t i;

	if (m->len > o->max_len)
		return false;
	/* The reference first: the flush below may hand back records, and
	 * what is done with them may one day end the session this record is
	 * of (nothing does today); the caller counts the record as queued
	 * before this call for the same reason. */
	op = record_opener_get(op);
	if (o->cur->n == RXOPEN_RECS)
		rxopen_flush(o);
	b = o->cur;
	i = b->n++;
	r = &b->recs[i];
	r->m = *m;
	r->m.buf = b->mem + i * o->stride + o->headroom;
	r->m.cap = o->max_len;
	memcpy(r->m.buf, m->buf, m->len);
	r->session = session;
	r->index = index;
	r->seq = seq;
	r->off = off;
	b->op[i] = op;
	return true;
}

void
rxopen_drain(struct rxopen *o)
{
	rxopen_flush(o);
	worker_drain(o->worker);
}

struct rxopen *
rxopen_new(struct event_base *base, size_t max_len, size_t headroom, uint64_t *thread_batches,
    rxopen_fn *fn, rxopen_end_fn *end, void *arg)
{
	struct rxopen *o = calloc(1, sizeof(*o));
	unsigned k;

	if (!o)
		return NULL;
	o->base = base;
	o->thread_batches = thread_batches;
	o->max_len = max_len;
	o->headroom = headroom;
	o->stride = (headroom + max_len + 63) & ~(size_t)63;
	o->fn = fn;
	o->end = end;
	o->arg = arg;
	for (k = 0; k < RXOPEN_BATCHES; k++) {
		o->slots[k] = &o->batches[k];
		if (!(o->batches[k].mem = malloc(o->stride * RXOPEN_RECS))) {
			rxopen_free(o);
			errno = ENOMEM;
			return NULL;
		}
	}
	if (!(o->worker = worker_ring(o->slots, RXOPEN_BATCHES, batch_open, batch_done, o))) {
		rxopen_free(o);
		errno = ENOMEM;
		return NULL;
	}
	o->cur = worker_slot(o->worker);
	return o;
}

int
rxopen_start_thread(struct rxopen *o)
{
	return worker_start(o->worker, o->base, "toud-open");
}

bool
rxopen_threaded(const struct rxopen *o)
{
	return o && worker_threaded(o->worker);
}

void
rxopen_free(struct rxopen *o)
{
	unsigned k, i;

	if (!o)
		return;
	o->closing = true;
	worker_free(o->worker);
	for (k = 0; k < RXOPEN_BATCHES; k++) {
		for (i = 0; i < o->batches[k].n; i++)
			record_opener_put(o->batches[k].op[i]);
		free(o->batches[k].mem);
	}
	free(o);
}
