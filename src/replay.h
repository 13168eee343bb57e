/* replay.h - the anti-replay window of one receive direction (RFC 6347
 * 4.1.2.6, the bitmap of RFC 6479).  Pure: no I/O, no allocation.
 *
 * The window holds the newest REPLAY_WINDOW sequence numbers at or below
 * the highest one accepted so far.  A receiver asks replay_check() before
 * it spends an AEAD pass on a record, and calls replay_update() only once
 * the record's tag has verified: a forgery never moves the window. */
#ifndef TOUD_REPLAY_H
#define TOUD_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

/* A ring of 64-bit blocks; one block is always being reused, so the
 * window is one block short of the ring (RFC 6479 section 2). */
#define REPLAY_BLOCKS 128
#define REPLAY_WINDOW ((REPLAY_BLOCKS - 1) * 64)    /* 8128 records */

enum replay_verdict {
	REPLAY_OK = 0,          /* new: may be accepted if it authenticates */
	REPLAY_DUP,             /* accepted before */
	REPLAY_OLD,             /* older than the window: cannot tell, refused */
};

struct replay {
	uint64_t top;           /* highest accepted sequence number */
	bool any;               /* top is valid */
	uint64_t blocks[REPLAY_BLOCKS];
};

void replay_init(struct replay *w);
enum replay_verdict replay_check(const struct replay *w, uint64_t seq);
/* Mark seq accepted; seq must have passed replay_check(). */
void replay_update(struct replay *w, uint64_t seq);

#endif
