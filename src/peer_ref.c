/* peer_ref.c - the daemon's table of live peers, by which batches on the
 * data threads name a peer (peer_ref.h).  Main loop only; a leaf. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "peer.h"
#include "peer_ref.h"

struct peer_ref
peer_ref_of(const struct peer *p)
{
	return p ? p->ref : (struct peer_ref){ 0, 0 };
}

/* Give p a slot in t->peer_slots and a generation never used before. */
int
peer_slot_take(struct peer *p)
{
	struct peer_slots *ps = &p->toud->peer_slots;
	uint32_t i;

	if (ps->used == ps->n) {
		uint32_t n = ps->n ? 2 * ps->n : 8;
		struct peer_slot *slot = realloc(ps->slot, n * sizeof(*slot));

		if (!slot)
			return -ENOMEM;
		memset(slot + ps->n, 0, (n - ps->n) * sizeof(*slot));
		ps->slot = slot;
		ps->n = n;
	}
	for (i = 0; ps->slot[i].p; i++)
		;
	if (++ps->gen == 0)
		ps->gen = 1;    /* 0 names nobody */
	ps->slot[i].p = p;
	ps->slot[i].gen = ps->gen;
	ps->used++;
	p->ref = (struct peer_ref){ i, ps->gen };
	return 0;
}

void
peer_slot_release(struct peer *p)
{
	struct peer_slots *ps = &p->toud->peer_slots;

	if (!p->ref.gen)
		return;
	ps->slot[p->ref.slot] = (struct peer_slot){ NULL, 0 };
	if (--ps->used == 0) {
		free(ps->slot);
		ps->slot = NULL;
		ps->n = 0;
	}
}

struct peer *
peer_resolve(const struct toud *t, struct peer_ref r)
{
	const struct peer_slots *ps = &t->peer_slots;

	if (!r.gen || r.slot >= ps->n || ps->slot[r.slot].gen != r.gen)
		return NULL;
	return ps->slot[r.slot].p;
}
