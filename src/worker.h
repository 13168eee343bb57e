/* worker.h - a data thread fed through a ring of batches.
 *
 * Threading model.  The main loop is the one writer of the daemon's state:
 * peers, sessions, timers, counters, sequence numbers and replay windows.
 * A worker is one more thread that does the costly part of a batch the
 * main loop has filled, which needs none of that state: the cipher and
 * the system call (tx.c:
 * seal and send; rxopen.c: open; tunout.c: write to the TUN), so that the
 * AEAD and the kernel's work behind those calls (over a veth or a TUN, the
 * whole receive path of the other side) run beside the main loop instead
 * of inside it.
 *
 * The ring holds n batches ("slots") that the caller allocated.  The main
 * loop fills the current slot and hands it over with worker_submit(); from
 * then until it is finished the slot is the worker's, and work() may touch
 * only that slot, what stays fixed while the worker lives (the file
 * descriptors), and what its user keeps for it alone while a batch is in
 * flight (the cipher contexts of the sealers and openers the batch holds
 * references to, and tunout.c's segment buffer, which the main loop uses
 * only while nothing is in flight; udp.c's atomic GSO switch).  Finished slots come back to the main loop in order:
 * it runs done() on each (the accounting), from a libevent callback or
 * from within worker_submit(), worker_reap() and worker_drain(), so no
 * counter or peer state is written by the worker; done() must not submit
 * or fill a slot itself.  The two counters,
 * submitted and finished, are each written by one side with release and
 * read by the other with acquire; one eventfd wakes the worker, another the
 * main loop.  There is no lock.  When every slot is in flight, submitting
 * waits for the oldest: a full ring slows the main loop to the speed of the
 * system calls, as doing them itself would. */
#ifndef TOUD_WORKER_H
#define TOUD_WORKER_H

#include <stdbool.h>

struct event_base;
struct worker;

typedef void worker_fn(void *slot, void *arg);

/* Start the thread (named name, at most 15 bytes) over slots[0..n), n >= 2.
 * work() runs on the worker, done() on the main loop; both get arg.  The
 * thread blocks every signal.  NULL with errno. */
struct worker *worker_new(struct event_base *base, const char *name, void *const *slots,
    unsigned n, worker_fn *work, worker_fn *done, void *arg);
/* Wait for everything submitted, run done() on it and end the thread. */
void worker_free(struct worker *w);

/* The slot the main loop fills: never the worker's. */
void *worker_slot(const struct worker *w);
/* Hand the current slot to the worker; returns the next one to fill, after
 * waiting (and running done()) while every slot is in flight. */
void *worker_submit(struct worker *w);
/* Run done() on the slots the worker has finished; true when nothing
 * submitted is left in flight (a send made now would not overtake one). */
bool worker_reap(struct worker *w);
/* Wait until nothing submitted is left in flight, running done() on it. */
void worker_drain(struct worker *w);

#endif
