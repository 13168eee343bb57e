/* ratelimit.h - per-source token buckets in a keyed hash table.
 *
 * Each source address (an IPv6 source by its /64, which one host can fill
 * at will; an IPv4-mapped one as the IPv4 address it is) gets its own bucket of `burst` tokens refilled at `rate` per
 * second.  Entries are chained under a keyed hash (SipHash-2-4 with a
 * secret the caller draws at random), so an attacker can neither aim at a
 * victim's chain nor reset its bucket: every entry is compared by the whole
 * key.  An entry untouched long enough to be full again is evicted (it is
 * then no different from a fresh one); when all `max_entries` are in use,
 * new sources are refused until one ages out.  Pure: the clock is passed in,
 * no I/O. */
#ifndef TOUD_RATELIMIT_H
#define TOUD_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define RATELIMIT_SECRET_LEN 16
#define RATELIMIT_GC_MS 1000            /* eviction runs at most this often */

struct ratelimit;

/* NULL on a bad argument (zero rate, burst or entries) or without memory. */
struct ratelimit *ratelimit_new(unsigned max_entries, unsigned rate_per_s, unsigned burst,
    const uint8_t secret[RATELIMIT_SECRET_LEN]);
void ratelimit_free(struct ratelimit *rl);

/* Take one token from src's bucket.  False when the bucket is empty, or
 * when src has no entry and the table is full. */
bool ratelimit_allow(struct ratelimit *rl, const struct ipaddr *src, uint64_t now_ms);

/* Give back the token src's last allowed request took (its work turned out
 * legitimate); nothing if src has no entry.  The bucket stays within its
 * burst. */
void ratelimit_refund(struct ratelimit *rl, const struct ipaddr *src);

/* Evict the entries that are full again.  ratelimit_allow() calls it at
 * most every RATELIMIT_GC_MS; exposed for tests. */
void ratelimit_gc(struct ratelimit *rl, uint64_t now_ms);

/* Entries in use (tests, show). */
size_t ratelimit_entries(const struct ratelimit *rl);

/* SipHash-2-4 of data under a 16-byte key (exposed for its test vector). */
uint64_t ratelimit_siphash(const uint8_t key[RATELIMIT_SECRET_LEN], const void *data,
    size_t len);

#endif
