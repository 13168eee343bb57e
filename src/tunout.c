/* tunout.c - the TUN's one writer: packets the receiving direction
 * delivers (rx.c, through the coalescer when it runs) and toud's own
 * answers into the tunnel (ICMP too big, from tx.c).
 *
 * Without the TUN thread every packet is written at once.  With it the
 * receiving direction's packets are copied into a batch that leaves by
 * worker.h's rule (which has the threading model), bulk meaning full or
 * TUNOUT_BULK_BYTES at the end of a receive round; the thread makes the
 * writes, where the kernel runs the inner TCP receive, and the main loop
 * accounts them.  toud's own answers are written at once from the main
 * loop: nothing orders them against the peers' packets.
 *
 * A kernel that refuses a merged packet (EINVAL) gets its segments one by
 * one, cut again as the sending direction cuts the kernel's (offload.c),
 * and merging stops for the life of the TUN (logged once, counted);
 * packets still pass the coalescer then, which keeps each connection in
 * order.  With the thread the main loop learns of the refusal when the
 * batch comes back: merged packets already on their way are refused and
 * cut again too, each counted.
 *
 * A packet counts as received (peer_rx, rx.c) once it is handed over; a
 * write that then fails counts as a tun_write drop as well, as a merged
 * packet always did.  The one buffer for those segments is used by
 * whoever writes a batch. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "drop.h"
#include "log.h"
#include "offload.h"
#include "peer.h"
#include "peer_ref.h"
#include "tun.h"
#include "tunout.h"
#include "worker.h"

#define TUNOUT_BATCHES 4
#define TUNOUT_BATCH_BYTES (512 * 1024)
#define TUNOUT_BATCH_PKTS 256
/* A batch this large is worth a thread wake-up (a few microseconds) even
 * when the thread is idle: writing it runs the inner TCP receive of tens
 * of packets. */
#define TUNOUT_BULK_BYTES (32 * 1024)

/* One packet for the TUN and what writing it did. */
struct tunout_pkt {
	struct offload_vnet vh;
	size_t off, len;                /* in the batch's memory */
	struct peer_ref peer;           /* nobody: the interface's, or freed since */
	int err;                        /* 0 or -errno of the write */
	bool refused;                   /* merged and refused: written cut again */
	unsigned failed;                /* of those segments, how many failed */
};

struct tunout_batch {
	struct tunout *o;
	uint8_t *mem;                   /* TUNOUT_BATCH_BYTES */
	size_t used;
	struct tunout_pkt pkts[TUNOUT_BATCH_PKTS];
	unsigned n;
};

struct tunout {
	struct toud *t;
	struct offload_coal *coal;
	uint8_t *seg;                   /* a segment of a refused merge */
	struct tunout_batch batches[TUNOUT_BATCHES];
	struct tunout_batch *cur;       /* the batch being filled */
	void *slots[TUNOUT_BATCHES];
	struct worker *worker;          /* the TUN thread (NULL: none) */
};

static const struct offload_vnet plain;   /* a packet as it is */

/* The one place a packet meets the TUN (or the unit tests' sink).  0 or
 * -errno. */
static int
tun_dev_write(struct toud *t, const struct offload_vnet *vh, const uint8_t *pkt, size_t len)
{
	if (!vh)
		vh = &plain;
	if (t->tun_sink)
		return t->tun_sink(t, vh, pkt, len);
	return tun_write_vnet(t->tun, vh, pkt, len);
}

/* Write one packet and record in r what happened: on the thread or the
 * main loop, touching nothing but r, the packet and o->seg. */
static void
write_one(struct tunout *o, struct tunout_pkt *r, const uint8_t *pkt)
{
	struct offload_gso g;
	size_t seg;
	unsigned i;

	r->refused = false;
	r->failed = 0;
	r->err = tun_dev_write(o->t, &r->vh, pkt, r->len);
	if (r->err != -EINVAL || r->vh.gso_type == OFFLOAD_GSO_NONE)
		return;
	r->refused = true;
	if (offload_gso_prepare(&r->vh, pkt, r->len, &g) != OFFLOAD_OK) {
		r->failed = 1;
		return;
	}
	for (i = 0; i < g.nsegs; i++) {
		seg = offload_gso_segment(&g, pkt, i, o->seg, OFFLOAD_MAX_PKT);
		if (!seg || tun_dev_write(o->t, NULL, o->seg, seg) < 0)
			r->failed++;
	}
}

/* What a write did, on the main loop, for peer p (NULL: the interface). */
static void
account_one(struct tunout *o, struct peer *p, const struct tunout_pkt *r)
{
	struct toud *t = o->t;

	if (r->refused) {
		t->events[EVENT_TUN_GSO_REFUSED]++;
		drop_count(t, p, DROP_TUN_WRITE, r->failed);
		if (o->coal && !o->coal->no_merge) {
			/* What the coalescer still holds leaves unmerged. */
			o->coal->no_merge = true;
			log_warnx("%s: the kernel refuses merged TCP packets (%s); writing "
			    "them one by one from now on", t->tun->name, strerror(EINVAL));
		}
	} else if (r->err < 0) {
		drop_count(t, p, DROP_TUN_WRITE, 1);
	}
}

/* worker_fn: the TUN thread's whole part. */
static void
batch_write(void *slot, void *arg)
{
	struct tunout_batch *b = slot;
	unsigned i;

	(void)arg;
	for (i = 0; i < b->n; i++)
		write_one(b->o, &b->pkts[i], b->mem + b->pkts[i].off);
}

/* worker_fn: a batch the thread is done with, on the main loop. */
static void
batch_done(void *slot, void *arg)
{
	struct tunout_batch *b = slot;
	struct peer_ref last = { 0, 0 };
	struct peer *p = NULL;
	unsigned i;

	(void)arg;
	for (i = 0; i < b->n; i++) {
		if (!peer_ref_equal(b->pkts[i].peer, last)) {
			last = b->pkts[i].peer;
			p = peer_resolve(b->o->t, last);
		}
		account_one(b->o, p, &b->pkts[i]);
	}
	b->n = 0;
	b->used = 0;
}

/* The current batch leaves (worker.h's rule). */
static void
batch_leave(struct tunout *o, bool bulk)
{
	if (!o->cur->n)
		return;
	if (worker_flush(o->worker, bulk))
		o->t->events[EVENT_TUN_THREAD_BATCHES]++;
	o->cur = worker_slot(o->worker);
}

/* Write one packet from the main loop and account it: 0, or < 0 when (some
 * of) it was lost. */
static int
write_now(struct tunout *o, struct peer *p, const struct offload_vnet *vh,
    const uint8_t *pkt, size_t len)
{
	struct tunout_pkt one = { .vh = vh ? *vh : plain, .len = len };

	write_one(o, &one, pkt);
	account_one(o, p, &one);
	return one.refused ? -(int)one.failed : one.err;
}

int
tunout_packet(struct tunout *o, struct peer *p, const struct offload_vnet *vh,
    const uint8_t *pkt, size_t len)
{
	struct tunout_batch *b = o->cur;
	struct tunout_pkt *r;

	if (!o->worker)
		return write_now(o, p, vh, pkt, len);
	if (len > TUNOUT_BATCH_BYTES) {
		drop_count(o->t, p, DROP_TUN_WRITE, 1);
		return -EMSGSIZE;
	}
	if (b->n == TUNOUT_BATCH_PKTS || b->used + len > TUNOUT_BATCH_BYTES) {
		batch_leave(o, true);
		b = o->cur;
	}
	r = &b->pkts[b->n++];
	r->vh = vh ? *vh : plain;
	r->off = b->used;
	r->len = len;
	r->peer = peer_ref_of(p);
	memcpy(b->mem + b->used, pkt, len);
	/* The next packet starts 8-aligned: the thread reads headers. */
	b->used += (len + 7) & ~(size_t)7;
	return 0;
}

void
tunout_flush(struct tunout *o)
{
	if (o->worker)
		batch_leave(o, o->cur->used >= TUNOUT_BULK_BYTES);
}

void
tunout_local(struct tunout *o, const uint8_t *pkt, size_t len)
{
	write_now(o, NULL, NULL, pkt, len);
}

bool
tunout_threaded(const struct tunout *o)
{
	return o && o->worker;
}

struct tunout *
tunout_new(struct toud *t, struct offload_coal *coal)
{
	struct tunout *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->t = t;
	o->coal = coal;
	o->cur = &o->batches[0];
	if (!(o->seg = malloc(OFFLOAD_MAX_PKT))) {
		tunout_free(o);
		errno = ENOMEM;
		return NULL;
	}
	return o;
}

int
tunout_start_thread(struct tunout *o)
{
	unsigned k;

	for (k = 0; k < TUNOUT_BATCHES; k++) {
		o->batches[k].o = o;
		if (!o->batches[k].mem && !(o->batches[k].mem = malloc(TUNOUT_BATCH_BYTES)))
			return -ENOMEM;
		o->slots[k] = &o->batches[k];
	}
	if (!(o->worker = worker_new(o->t->base, "toud-tun", o->slots, TUNOUT_BATCHES,
	    batch_write, batch_done, NULL)))
		return -errno;
	o->cur = worker_slot(o->worker);
	return 0;
}

void
tunout_free(struct tunout *o)
{
	unsigned k;

	if (!o)
		return;
	if (o->worker) {
		batch_leave(o, false);
		worker_free(o->worker);
	}
	for (k = 0; k < TUNOUT_BATCHES; k++)
		free(o->batches[k].mem);
	free(o->seg);
	free(o);
}
