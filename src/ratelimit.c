/* ratelimit.c - per-source token buckets in a keyed hash table (see
 * ratelimit.h for the rules).  All entries come from one array allocated
 * at creation, so a flood of new sources costs no allocation. */
#include <stdlib.h>
#include <string.h>

#include "ratelimit.h"
#include "siphash.h"

/* Tokens are counted in thousandths, so that a refill of rate/s is an
 * integer number of them per millisecond. */
#define MILLI 1000u

struct rl_entry {
	struct rl_entry *next;          /* hash chain, or the free list */
	uint8_t key[9];                 /* family tag + 8 (IPv6 /64) or 4 bytes */
	uint64_t stamp_ms;              /* last refill */
	uint64_t tokens;                /* in thousandths */
};

struct ratelimit {
	uint8_t secret[RATELIMIT_SECRET_LEN];
	uint64_t rate;                  /* thousandths of a token per ms = tokens per s */
	uint64_t max_tokens;            /* burst, in thousandths */
	uint64_t full_ms;               /* an idle entry is full again after this */
	uint64_t last_gc_ms;
	size_t n_entries, max_entries;
	unsigned mask;                  /* buckets - 1 */
	struct rl_entry **buckets;
	struct rl_entry *pool, *free;
};

uint64_t
ratelimit_siphash(const uint8_t key[RATELIMIT_SECRET_LEN], const void *data, size_t len)
{
	return siphash24(siphash_le64(key), siphash_le64(key + 8), data, len);
}

struct ratelimit *
ratelimit_new(unsigned max_entries, unsigned rate_per_s, unsigned burst,
    const uint8_t secret[RATELIMIT_SECRET_LEN])
{
	struct ratelimit *rl;
	unsigned nb = 1;
	size_t i;

	if (!max_entries || !rate_per_s || !burst || max_entries > (1u << 24))
		return NULL;
	/* About four entries per chain when the table is full. */
	while (nb < max_entries / 4)
		nb <<= 1;
	if (!(rl = calloc(1, sizeof(*rl))))
		return NULL;
	rl->buckets = calloc(nb, sizeof(*rl->buckets));
	rl->pool = calloc(max_entries, sizeof(*rl->pool));
	if (!rl->buckets || !rl->pool) {
		ratelimit_free(rl);
		return NULL;
	}
	memcpy(rl->secret, secret, sizeof(rl->secret));
	rl->mask = nb - 1;
	rl->max_entries = max_entries;
	rl->rate = rate_per_s;
	rl->max_tokens = (uint64_t)burst * MILLI;
	rl->full_ms = (rl->max_tokens + rl->rate - 1) / rl->rate;
	for (i = max_entries; i-- > 0;) {
		rl->pool[i].next = rl->free;
		rl->free = &rl->pool[i];
	}
	return rl;
}

void
ratelimit_free(struct ratelimit *rl)
{
	if (!rl)
		return;
	memset(rl->secret, 0, sizeof(rl->secret));
	free(rl->buckets);
	free(rl->pool);
	free(rl);
}

/* An IPv4 source seen through a dual-stack socket (::ffff:a.b.c.d) is
 * keyed as the IPv4 address it is: by its first 64 bits, all zero, every
 * IPv4 host would share one bucket, and one of them could starve the
 * rest. */
static size_t
make_key(const struct ipaddr *src, uint8_t key[9])
{
	struct ipaddr u = *src, *a = &u;

	util_addr_unmap(a);
	memset(key, 0, 9);
	if (a->family == AF_INET6) {
		key[0] = 6;
		memcpy(key + 1, a->b, 8);
	} else {
		key[0] = 4;
		memcpy(key + 1, a->b, 4);
	}
	return 9;
}

/* The entry is full again (idle long enough, or the clock went back). */
static bool
entry_idle(const struct ratelimit *rl, const struct rl_entry *e, uint64_t now_ms)
{
	return now_ms < e->stamp_ms || now_ms - e->stamp_ms >= rl->full_ms;
}

void
ratelimit_gc(struct ratelimit *rl, uint64_t now_ms)
{
	unsigned b;

	rl->last_gc_ms = now_ms;
	for (b = 0; b <= rl->mask; b++) {
		struct rl_entry **pp = &rl->buckets[b];

		while (*pp) {
			struct rl_entry *e = *pp;

			if (entry_idle(rl, e, now_ms)) {
				*pp = e->next;
				e->next = rl->free;
				rl->free = e;
				rl->n_entries--;
			} else {
				pp = &e->next;
			}
		}
	}
}

bool
ratelimit_allow(struct ratelimit *rl, const struct ipaddr *src, uint64_t now_ms)
{
	uint8_t key[9];
	size_t klen = make_key(src, key);
	unsigned b = (unsigned)ratelimit_siphash(rl->secret, key, klen) & rl->mask;
	struct rl_entry *e;

	if (now_ms < rl->last_gc_ms || now_ms - rl->last_gc_ms >= RATELIMIT_GC_MS)
		ratelimit_gc(rl, now_ms);
	for (e = rl->buckets[b]; e; e = e->next)
		if (memcmp(e->key, key, sizeof(e->key)) == 0)
			break;
	if (!e) {
		if (!(e = rl->free))
			return false;           /* the global cap */
		rl->free = e->next;
		memcpy(e->key, key, sizeof(e->key));
		e->tokens = rl->max_tokens;
		e->stamp_ms = now_ms;
		e->next = rl->buckets[b];
		rl->buckets[b] = e;
		rl->n_entries++;
	} else if (entry_idle(rl, e, now_ms)) {
		e->tokens = rl->max_tokens;
		e->stamp_ms = now_ms;
	} else {
		uint64_t add = (now_ms - e->stamp_ms) * rl->rate;

		e->tokens = e->tokens + add > rl->max_tokens ? rl->max_tokens : e->tokens + add;
		e->stamp_ms = now_ms;
	}
	if (e->tokens < MILLI)
		return false;
	e->tokens -= MILLI;
	return true;
}

void
ratelimit_refund(struct ratelimit *rl, const struct ipaddr *src)
{
	uint8_t key[9];
	size_t klen = make_key(src, key);
	unsigned b = (unsigned)ratelimit_siphash(rl->secret, key, klen) & rl->mask;
	struct rl_entry *e;

	for (e = rl->buckets[b]; e; e = e->next) {
		if (memcmp(e->key, key, sizeof(e->key)) == 0) {
			e->tokens = e->tokens + MILLI > rl->max_tokens ? rl->max_tokens :
			    e->tokens + MILLI;
			return;
		}
	}
}

size_t
ratelimit_entries(const struct ratelimit *rl)
{
	return rl->n_entries;
}
