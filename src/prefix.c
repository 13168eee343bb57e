/* prefix.c - longest-prefix match: one binary trie per address family, one
 * level per prefix bit.  A table holds a few hundred prefixes at most, so
 * the simple trie wins on clarity; lookup walks at most 32 / 128 nodes and
 * never allocates, and prefix_lookup_cached() spares even that walk for
 * the same address asked again.  Pure: no I/O. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "prefix.h"

#define PREFIX_MAX_BITS 128

struct prefix_node {
	struct prefix_node *child[2];
	void *value;
	bool set;               /* a prefix ends here (value may be NULL) */
};

struct prefix_table {
	struct prefix_node *root[2];    /* [0] IPv4, [1] IPv6 */
	size_t count;
	uint64_t gen;                   /* changes with every insert or removal; never 0 */
};

/* Index into root[] and the family's bit count, or -1 for an unknown family. */
static int
prefix_family(int family, unsigned int *bits)
{
	switch (family) {
	case AF_INET:
		*bits = 32;
		return 0;
	case AF_INET6:
		*bits = 128;
		return 1;
	default:
		return -1;
	}
}

static unsigned int
prefix_bit(const uint8_t *addr, unsigned int i)
{
	return (addr[i / 8] >> (7 - i % 8)) & 1;
}

struct prefix_table *
prefix_table_new(void)
{
	struct prefix_table *t;

	t = calloc(1, sizeof(*t));
	if (t == NULL)
		errno = ENOMEM;
	else
		t->gen = 1;
	return t;
}

static void
prefix_node_free(struct prefix_node *n)
{
	if (n == NULL)
		return;
	prefix_node_free(n->child[0]);
	prefix_node_free(n->child[1]);
	free(n);
}

void
prefix_table_free(struct prefix_table *t)
{
	if (t == NULL)
		return;
	prefix_node_free(t->root[0]);
	prefix_node_free(t->root[1]);
	free(t);
}

/* Validate p; return the root slot of its family. */
static struct prefix_node **
prefix_root(struct prefix_table *t, const struct ipprefix *p)
{
	unsigned int bits;
	int f;

	f = prefix_family(p->addr.family, &bits);
	if (f < 0 || p->len > bits)
		return NULL;
	return &t->root[f];
}

int
prefix_insert(struct prefix_table *t, const struct ipprefix *p, void *value)
{
	struct prefix_node **link, *n;
	unsigned int i;

	link = prefix_root(t, p);
	if (link == NULL)
		return -EINVAL;

	/* Nodes created on the way stay if the allocation fails half way:
	 * they are empty and get pruned by the next removal on that path,
	 * and freed with the table in any case. */
	for (i = 0;; i++) {
		if (*link == NULL) {
			*link = calloc(1, sizeof(**link));
			if (*link == NULL)
				return -ENOMEM;
		}
		n = *link;
		if (i == p->len)
			break;
		link = &n->child[prefix_bit(p->addr.b, i)];
	}
	if (n->set)
		return -EEXIST;
	n->set = true;
	n->value = value;
	t->count++;
	t->gen++;
	return 0;
}

int
prefix_remove(struct prefix_table *t, const struct ipprefix *p)
{
	struct prefix_node **path[PREFIX_MAX_BITS + 1], *n;
	unsigned int i;

	path[0] = prefix_root(t, p);
	if (path[0] == NULL)
		return -ENOENT;
	for (i = 0; i < p->len; i++) {
		if (*path[i] == NULL)
			return -ENOENT;
		path[i + 1] = &(*path[i])->child[prefix_bit(p->addr.b, i)];
	}
	n = *path[p->len];
	if (n == NULL || !n->set)
		return -ENOENT;
	n->set = false;
	n->value = NULL;
	t->count--;
	t->gen++;

	/* Prune the nodes that no longer lead anywhere, bottom up. */
	for (i = p->len + 1; i-- > 0;) {
		n = *path[i];
		if (n->set || n->child[0] != NULL || n->child[1] != NULL)
			break;
		free(n);
		*path[i] = NULL;
	}
	return 0;
}

/* Clear every entry holding v below *link; free the nodes left empty. */
static size_t
prefix_node_remove_value(struct prefix_node **link, const void *v)
{
	struct prefix_node *n = *link;
	size_t removed = 0;

	if (n == NULL)
		return 0;
	removed += prefix_node_remove_value(&n->child[0], v);
	removed += prefix_node_remove_value(&n->child[1], v);
	if (n->set && n->value == v) {
		n->set = false;
		n->value = NULL;
		removed++;
	}
	if (!n->set && n->child[0] == NULL && n->child[1] == NULL) {
		free(n);
		*link = NULL;
	}
	return removed;
}

void
prefix_remove_value(struct prefix_table *t, const void *v)
{
	t->count -= prefix_node_remove_value(&t->root[0], v);
	t->count -= prefix_node_remove_value(&t->root[1], v);
	t->gen++;
}

void *
prefix_lookup(const struct prefix_table *t, int family, const uint8_t *addr)
{
	const struct prefix_node *n, *best = NULL;
	unsigned int bits, i;
	int f;

	f = prefix_family(family, &bits);
	if (f < 0)
		return NULL;
	n = t->root[f];
	for (i = 0; n != NULL; i++) {
		if (n->set)
			best = n;
		if (i == bits)
			break;
		n = n->child[prefix_bit(addr, i)];
	}
	return best != NULL ? best->value : NULL;
}

void *
prefix_lookup_cached(const struct prefix_table *t, struct prefix_cache *c, int family,
    const uint8_t *addr)
{
	size_t len = family == AF_INET ? 4 : 16;

	if (c->gen == t->gen && c->family == family && memcmp(c->addr, addr, len) == 0)
		return c->value;
	c->value = prefix_lookup(t, family, addr);
	c->gen = t->gen;
	c->family = family;
	memcpy(c->addr, addr, len);
	return c->value;
}

void *
prefix_get(const struct prefix_table *t, const struct ipprefix *p)
{
	const struct prefix_node *n;
	unsigned int bits, i;
	int f;

	f = prefix_family(p->addr.family, &bits);
	if (f < 0 || p->len > bits)
		return NULL;
	n = t->root[f];
	for (i = 0; n != NULL && i < p->len; i++)
		n = n->child[prefix_bit(p->addr.b, i)];
	return n != NULL && n->set ? n->value : NULL;
}

size_t
prefix_count(const struct prefix_table *t)
{
	return t->count;
}
