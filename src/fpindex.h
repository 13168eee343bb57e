/* fpindex.h - objects by a 32-byte key fingerprint: a sorted array,
 * O(log n) lookups, rebuilt whole when the set changes.  Pure: no I/O. */
#ifndef TOUD_FPINDEX_H
#define TOUD_FPINDEX_H

#include <stddef.h>
#include <stdint.h>

#define FPINDEX_FP_LEN 32

struct fpindex;

/* Room for cap entries; NULL without memory. */
struct fpindex *fpindex_new(size_t cap);
void fpindex_free(struct fpindex *ix);
/* Add one entry (beyond cap: -ENOSPC); fpindex_sort() before any find. */
int fpindex_add(struct fpindex *ix, const uint8_t fp[FPINDEX_FP_LEN], void *obj);
void fpindex_sort(struct fpindex *ix);
/* The object of fp, or NULL; *other (if not NULL) a second object with
 * the same fingerprint, or NULL: a key two entries share names neither.
 * Of entries with one key, the first added is the object, the next the
 * other. */
void *fpindex_find(const struct fpindex *ix, const uint8_t fp[FPINDEX_FP_LEN], void **other);
size_t fpindex_count(const struct fpindex *ix);

#endif
