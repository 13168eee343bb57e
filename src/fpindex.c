/* fpindex.c - objects by key fingerprint (fpindex.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fpindex.h"

struct fpindex_ent {
	uint8_t fp[FPINDEX_FP_LEN];
	size_t order;           /* of adding: equal keys keep it */
	void *obj;
};

struct fpindex {
	size_t n, cap;
	struct fpindex_ent e[];
};

struct fpindex *
fpindex_new(size_t cap)
{
	struct fpindex *ix;

	if (cap > (SIZE_MAX - sizeof(*ix)) / sizeof(ix->e[0]))
		return NULL;
	if (!(ix = malloc(sizeof(*ix) + cap * sizeof(ix->e[0]))))
		return NULL;
	ix->n = 0;
	ix->cap = cap;
	return ix;
}

void
fpindex_free(struct fpindex *ix)
{
	free(ix);
}

int
fpindex_add(struct fpindex *ix, const uint8_t fp[FPINDEX_FP_LEN], void *obj)
{
	if (ix->n == ix->cap)
		return -ENOSPC;
	memcpy(ix->e[ix->n].fp, fp, FPINDEX_FP_LEN);
	ix->e[ix->n].obj = obj;
	ix->e[ix->n].order = ix->n;
	ix->n++;
	return 0;
}

static int
ent_cmp(const void *a, const void *b)
{
	const struct fpindex_ent *x = a, *y = b;
	int c = memcmp(x->fp, y->fp, FPINDEX_FP_LEN);

	return c ? c : (x->order > y->order) - (x->order < y->order);
}

void
fpindex_sort(struct fpindex *ix)
{
	qsort(ix->e, ix->n, sizeof(ix->e[0]), ent_cmp);
}

void *
fpindex_find(const struct fpindex *ix, const uint8_t fp[FPINDEX_FP_LEN], void **other)
{
	size_t lo = 0, hi = ix ? ix->n : 0;

	if (other)
		*other = NULL;
	/* The first entry not below fp. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (memcmp(ix->e[mid].fp, fp, FPINDEX_FP_LEN) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!ix || lo == ix->n || memcmp(ix->e[lo].fp, fp, FPINDEX_FP_LEN) != 0)
		return NULL;
	if (other && lo + 1 < ix->n && memcmp(ix->e[lo + 1].fp, fp, FPINDEX_FP_LEN) == 0)
		*other = ix->e[lo + 1].obj;
	return ix->e[lo].obj;
}

size_t
fpindex_count(const struct fpindex *ix)
{
	return ix ? ix->n : 0;
}
