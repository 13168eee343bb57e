/* replay.c - the anti-replay window of one receive direction (RFC 6479).
 *
 * Bit (seq mod 64) of block ((seq / 64) mod REPLAY_BLOCKS) says whether seq
 * was accepted.  Moving the top forward clears the blocks it passes, so a
 * jump never costs more than one sweep of the ring, and the check is one
 * shift and one mask whatever the window size. */
#include <string.h>

#include "replay.h"

#define BLOCK_MASK (REPLAY_BLOCKS - 1)

_Static_assert((REPLAY_BLOCKS & BLOCK_MASK) == 0, "REPLAY_BLOCKS is a power of two");
_Static_assert(REPLAY_WINDOW >= 4096, "the window holds at least 4096 records");

void
replay_init(struct replay *w)
{
	memset(w, 0, sizeof(*w));
}

enum replay_verdict
replay_check(const struct replay *w, uint64_t seq)
{
	if (!w->any || seq > w->top)
		return REPLAY_OK;
	if (w->top - seq >= REPLAY_WINDOW)
		return REPLAY_OLD;
	if (w->blocks[(seq >> 6) & BLOCK_MASK] >> (seq & 63) & 1)
		return REPLAY_DUP;
	return REPLAY_OK;
}

void
replay_update(struct replay *w, uint64_t seq)
{
	uint64_t cur, next, n, i;

	if (!w->any) {
		memset(w->blocks, 0, sizeof(w->blocks));
		w->any = true;
		w->top = seq;
	} else if (seq > w->top) {
		cur = w->top >> 6;
		next = seq >> 6;
		n = next - cur < REPLAY_BLOCKS ? next - cur : REPLAY_BLOCKS;
		for (i = 1; i <= n; i++)
			w->blocks[(cur + i) & BLOCK_MASK] = 0;
		w->top = seq;
	}
	w->blocks[(seq >> 6) & BLOCK_MASK] |= (uint64_t)1 << (seq & 63);
}
