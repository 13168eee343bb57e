/* rxopen.h - the receiving direction's record opening: toud's data
 * records, queued by rx.c in batches, opened (the AEAD) on the opening
 * thread or the main loop, and handed back to rx.c on the main loop, in
 * order.  The threading model is at the top of rxopen.c. */
#ifndef TOUD_RXOPEN_H
#define TOUD_RXOPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "udp.h"

struct event_base;
struct rxopen;

/* One record, as it comes back opened (or not). */
struct rxopen_rec {
	struct udp_msg m;               /* the datagram (a copy): addresses, tos, len */
	uint64_t session;               /* toud's name of its session (ID 0) */
	uint32_t index;                 /* the index of the ID it came with */
	uint64_t seq;                   /* (epoch << 48 | sequence), from record_check() */
	size_t off;                     /* where in m.buf the record starts */
	enum record_status status;      /* what record_unseal() said (in place) */
};

/* Each record back on the main loop, in the order added; then, after a
 * batch, end().  They may run from within rxopen_add(), rxopen_flush()
 * and rxopen_drain(), and must not queue records themselves. */
typedef void rxopen_fn(void *arg, struct rxopen_rec *r);
typedef void rxopen_end_fn(void *arg);

/* Datagrams of up to max_len bytes, with headroom bytes free in front of
 * each (for rx.c's IP header rebuilt in place); *thread_batches counts
 * the batches handed to the thread.  NULL with errno. */
struct rxopen *rxopen_new(struct event_base *base, size_t max_len, size_t headroom,
    uint64_t *thread_batches, rxopen_fn *fn, rxopen_end_fn *end, void *arg);
/* Open on a thread of its own from now on.  0 or -errno. */
int rxopen_start_thread(struct rxopen *o);
bool rxopen_threaded(const struct rxopen *o);
/* Records not yet handed back are dropped (shutdown: rxopen_drain() first
 * to keep them). */
void rxopen_free(struct rxopen *o);

/* Queue datagram m, whose record (at offset off) passed record_check()
 * with seq, to be opened with op (a reference is kept).  False if it is
 * larger than max_len: the caller may open it itself after
 * rxopen_drain(). */
bool rxopen_add(struct rxopen *o, const struct udp_msg *m, size_t off,
    struct record_opener *op, uint64_t session, uint32_t index, uint64_t seq);
/* The end of a receive round: the batch is opened, on the thread if it is
 * busy or the batch is full, else at once. */
void rxopen_flush(struct rxopen *o);
/* Flush and wait until every record is back (and the thread has none). */
void rxopen_drain(struct rxopen *o);

#endif
