/* prefix.h - longest-prefix match of IPv4 and IPv6 addresses to a value
 * (a peer).  A binary trie per family with path compression is not needed at
 * toud's scale; the table is a small radix tree.  Pure: no I/O. */
#ifndef TOUD_PREFIX_H
#define TOUD_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct prefix_table;

struct prefix_table *prefix_table_new(void);             /* NULL, errno = ENOMEM */
void prefix_table_free(struct prefix_table *t);
/* Host bits of p are ignored.  -EEXIST if that exact prefix is present,
 * -EINVAL for a bad family or length, -ENOMEM. */
int prefix_insert(struct prefix_table *t, const struct ipprefix *p, void *value);
int prefix_remove(struct prefix_table *t, const struct ipprefix *p);  /* 0 or -ENOENT */
/* Remove every prefix whose value is v (a peer going away). */
void prefix_remove_value(struct prefix_table *t, const void *v);
/* addr: 4 bytes for AF_INET, 16 for AF_INET6.  NULL when nothing matches. */
void *prefix_lookup(const struct prefix_table *t, int family, const uint8_t *addr);
/* A one-entry memo of prefix_lookup() for a caller that asks for the same
 * address many times in a row (the segments of one super-packet, a batch
 * of one flow): it holds while the table is unchanged.  One cache serves
 * one table; zeroed, it is empty. */
struct prefix_cache {
	uint64_t gen;                   /* the table's generation it was filled in; 0: empty */
	int family;
	uint8_t addr[16];
	void *value;
};
void *prefix_lookup_cached(const struct prefix_table *t, struct prefix_cache *c, int family,
    const uint8_t *addr);
/* Exact lookup of a prefix; NULL if absent. */
void *prefix_get(const struct prefix_table *t, const struct ipprefix *p);
size_t prefix_count(const struct prefix_table *t);

#endif
