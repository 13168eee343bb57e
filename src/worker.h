/* worker.h - a data thread fed through a ring of batches, and the one rule
 * for handing a batch to it.
 *
 * Threading model.  The main loop is the one writer of the daemon's state:
 * peers, sessions, timers, counters, sequence numbers and replay windows.
 * A worker is one more thread that does the costly part of a batch the
 * main loop has filled, which needs none of that state: the cipher and
 * the system call (udpout.c: seal and send; rxopen.c: open; tunout.c:
 * write to the TUN), so that the AEAD and the kernel's work behind those
 * calls (over a veth or a TUN, the whole receive path of the other side)
 * run beside the main loop instead of inside it.
 *
 * The ring holds n batches ("slots") that the caller allocated.  The main
 * loop fills the current slot, worker_slot(), and lets it go with
 * worker_flush().  The rule, the same for every user:
 *
 *   a batch that is bulk (full, or as large as its user calls bulk), or
 *   any batch while an earlier one is still in flight, goes to the thread;
 *   any other batch finds the thread idle and is worked (work(), then
 *   done()) at once on the main loop, so a lone packet (a ping, a request)
 *   pays no thread wake-up, and whatever work() uses is used by one thread
 *   at a time.  Without a thread every batch is worked at once.
 *
 * From the hand-over until done() the slot is the worker's: work() may
 * touch only that slot, what stays fixed while the worker lives (the file
 * descriptors), and what its user keeps for it alone while a batch is in
 * flight (below).  Nothing in a slot names a peer by pointer: a batch names
 * its peers by reference (peer_ref_of(), peer_ref.h) and its sessions by ID,
 * resolved by done(), so a peer or session freed meanwhile resolves to
 * nothing and the main loop never writes into a slot it handed over.
 * Finished slots come back to the main loop in order: it runs done() on
 * each (the accounting), from a libevent callback or from within
 * worker_flush(), worker_submit(), worker_reap() and worker_drain(), so no
 * counter or peer state is written by the worker; done() must not fill or
 * flush a slot itself.  The two counters, submitted and finished, are each
 * written by one side with release and read by the other with acquire; one
 * eventfd wakes the worker, another the main loop.  There is no lock.
 * When every slot is in flight, submitting waits for the oldest: a full
 * ring slows the main loop to the speed of the system calls, as doing
 * them itself would.
 *
 * Who touches what ("idle": only while that thread has no batch):
 *
 *   object                                   main     send   open   tun
 *   peers, sessions, replay windows,          rw       -      -      -
 *     counters, timers
 *   record_tx (sequence numbers)              rw       -      -      -
 *   sealer cipher contexts (record.h)         idle     rw     -      -
 *   opener cipher contexts                    idle     -      rw     -
 *   tunout.c's segment buffer                 idle     -      -      rw
 *   udp->gso4/6 (udp.h)                       atomic   atomic -      -
 *   a slot, from hand-over to done()          -        rw     rw     rw
 *   log level (log.c)                         w        r      -      -
 *
 * The sealer and opener references a batch holds (record_sealer_get())
 * are taken and put on the main loop only, so their counts need no
 * atomics; a session freed while its records are in flight keeps its
 * cipher context until the batch is back. */
#ifndef TOUD_WORKER_H
#define TOUD_WORKER_H

#include <stdbool.h>

struct event_base;
struct worker;

typedef void worker_fn(void *slot, void *arg);

/* A ring over slots[0..n), n >= 2, without a thread yet: worker_flush()
 * works every batch at once.  work() and done() get arg.  NULL with
 * errno. */
struct worker *worker_ring(void *const *slots, unsigned n, worker_fn *work, worker_fn *done,
    void *arg);
/* Start the thread (named name, at most 15 bytes), which blocks every
 * signal; done() runs on the main loop of base.  0 or -errno. */
int worker_start(struct worker *w, struct event_base *base, const char *name);
/* Both at once.  NULL with errno. */
struct worker *worker_new(struct event_base *base, const char *name, void *const *slots,
    unsigned n, worker_fn *work, worker_fn *done, void *arg);
/* Wait for everything submitted, run done() on it and end the thread; the
 * ring stays, and works every batch at once from now on. */
void worker_stop(struct worker *w);
/* worker_stop(), and free the ring. */
void worker_free(struct worker *w);
/* Whether the thread runs (false for NULL). */
bool worker_threaded(const struct worker *w);

/* The slot the main loop fills: never the worker's. */
void *worker_slot(const struct worker *w);
/* The current slot is filled: hand it over or work it here, by the rule
 * above (bulk: the batch is full or bulk to its user).  True when it went
 * to the thread.  worker_slot() is the next one to fill: the same slot,
 * emptied by done(), when it was worked here. */
bool worker_flush(struct worker *w, bool bulk);
/* Hand the current slot to the thread (which must run) whatever the rule
 * says; returns the next one to fill, after waiting (and running done())
 * while every slot is in flight. */
void *worker_submit(struct worker *w);
/* Run done() on the slots the worker has finished; true when nothing
 * submitted is left in flight (a send made now would not overtake one). */
bool worker_reap(struct worker *w);
/* Wait until nothing submitted is left in flight, running done() on it. */
void worker_drain(struct worker *w);

#endif
