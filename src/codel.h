/* codel.h - when a queue should drop, by how long its bytes wait (CoDel,
 * RFC 8289), for the TCP transport's send queue.
 *
 * A queue of bytes that tail-drops at a fixed size makes a loss-based
 * sender (CUBIC) halve its window every time it fills it; one that drops
 * by time lets it fill the path while holding the standing queue near
 * CODEL_TARGET_US.  Two parts:
 *   - struct codel_fifo: when the bytes of a queue came in.  The caller
 *     adds bytes with their arrival time and takes them, oldest first; a
 *     take answers when the last byte taken came in.  A queue whose bytes
 *     change form on the way (plaintext, then TLS records) passes the
 *     arrival time on from one fifo to the next.
 *   - struct codel: the drop decision.  Each wait measured as bytes leave
 *     goes to codel_note(); when the waits have stayed above the target
 *     for an interval, the queue is in its dropping state and codel_drop()
 *     says to drop arriving packets at the control law's pace (interval /
 *     sqrt(drops)), until a wait falls below the target again.  The drop
 *     is taken as a packet arrives rather than as one leaves (the
 *     caller's bytes are TLS records by then), which signals the sender
 *     sooner by the queue's wait.
 *
 * Pure: the clock (microseconds, monotonic) is passed in, no I/O. */
#ifndef TOUD_CODEL_H
#define TOUD_CODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CODEL_TARGET_US 5000            /* the standing wait it allows */
#define CODEL_INTERVAL_US 100000        /* above target this long: drop */
/* At most this many bytes left behind, nothing is dropped however long
 * they waited: a queue of one packet is not a standing queue. */
#define CODEL_BACKLOG_MIN 1514
#define CODEL_MARKS 64                  /* arrivals tracked; more join the last */

struct codel_fifo {
	struct {
		uint64_t end;           /* f->in once these bytes were added */
		uint64_t at_us;         /* when they came in */
	} mark[CODEL_MARKS];
	unsigned head, n;
	uint64_t in, out;               /* bytes added, bytes taken, ever */
};

struct codel {
	uint64_t first_above_us;        /* 0, or when an interval above target ends */
	uint64_t drop_next_us;          /* dropping: the next drop is due then */
	uint32_t count;                 /* drops so far, as the control law counts */
	uint32_t lastcount;             /* count at the start of the last state */
	bool ok_to_drop;                /* the wait has been above target an interval */
	bool dropping;
	bool first_drop;                /* dropping: none yet in this state */
};

void codel_fifo_init(struct codel_fifo *f);
/* bytes came in at at_us (not before the last addition's time). */
void codel_fifo_add(struct codel_fifo *f, size_t bytes, uint64_t at_us);
/* bytes leave, oldest first: when the last of them came in, or 0 when
 * none was queued.  Taking more than is queued empties it. */
uint64_t codel_fifo_take(struct codel_fifo *f, size_t bytes);
/* The bytes in it (added, not taken). */
size_t codel_fifo_len(const struct codel_fifo *f);
/* Forget every byte (the caller's queue is empty). */
void codel_fifo_clear(struct codel_fifo *f);

void codel_init(struct codel *q);
/* Bytes left after waiting sojourn_us; backlog bytes are still queued. */
void codel_note(struct codel *q, uint64_t sojourn_us, size_t backlog, uint64_t now_us);
/* Whether the packet arriving at now_us is to be dropped (counted as a
 * drop by the control law when true). */
bool codel_drop(struct codel *q, uint64_t now_us);

#endif
