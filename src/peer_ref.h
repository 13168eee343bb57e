/* peer_ref.h - how a batch on its way to a data thread names a peer
 * (worker.h): its slot in the daemon's table of live peers and the
 * generation of that slot.  Resolved on the main loop, a reference to a
 * freed peer gives NULL, so nothing has to reach into a batch a thread
 * owns when a peer goes; {0, 0} names nobody.  A leaf: the sending and
 * receiving batches resolve their peers here without calling into the
 * peer module. */
#ifndef TOUD_PEER_REF_H
#define TOUD_PEER_REF_H

#include <stdbool.h>
#include <stdint.h>

struct peer;
struct toud;

struct peer_ref {
	uint32_t slot, gen;
};

/* Give p a slot and a generation never used before (peer_new); 0 or
 * -ENOMEM. */
int peer_slot_take(struct peer *p);
/* p goes (peer_free): references to it resolve to nobody from now on. */
void peer_slot_release(struct peer *p);
/* The reference naming p (NULL: nobody). */
struct peer_ref peer_ref_of(const struct peer *p);
static inline bool
peer_ref_equal(struct peer_ref a, struct peer_ref b)
{
	return a.slot == b.slot && a.gen == b.gen;
}
/* The live peer a reference names (NULL: nobody, or freed since). */
struct peer *peer_resolve(const struct toud *t, struct peer_ref r);

#endif
