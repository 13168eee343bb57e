/* siphash.h - SipHash-2-4 (Aumasson and Bernstein), the keyed hash of
 * ratelimit.c's table and of record.c's numbering.  Pure, inline: the
 * key as two little-endian 64-bit words k0, k1. */
#ifndef TOUD_SIPHASH_H
#define TOUD_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct siphash_state {
	uint64_t v0, v1, v2, v3;
};

static inline uint64_t
siphash_le64(const uint8_t *p)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static inline uint64_t
siphash_rotl(uint64_t x, unsigned b)
{
	return x << b | x >> (64 - b);
}

static inline void
siphash_round(struct siphash_state *s)
{
	s->v0 += s->v1; s->v1 = siphash_rotl(s->v1, 13); s->v1 ^= s->v0;
	s->v0 = siphash_rotl(s->v0, 32);
	s->v2 += s->v3; s->v3 = siphash_rotl(s->v3, 16); s->v3 ^= s->v2;
	s->v0 += s->v3; s->v3 = siphash_rotl(s->v3, 21); s->v3 ^= s->v0;
	s->v2 += s->v1; s->v1 = siphash_rotl(s->v1, 17); s->v1 ^= s->v2;
	s->v2 = siphash_rotl(s->v2, 32);
}

static inline void
siphash_init(struct siphash_state *s, uint64_t k0, uint64_t k1)
{
	s->v0 = k0 ^ 0x736f6d6570736575ull;
	s->v1 = k1 ^ 0x646f72616e646f6dull;
	s->v2 = k0 ^ 0x6c7967656e657261ull;
	s->v3 = k1 ^ 0x7465646279746573ull;
}

/* One 8-byte block, two compression rounds. */
static inline void
siphash_block(struct siphash_state *s, uint64_t m)
{
	s->v3 ^= m;
	siphash_round(s);
	siphash_round(s);
	s->v0 ^= m;
}

/* The last block b (length << 56 | the bytes left), then finalization. */
static inline uint64_t
siphash_final(struct siphash_state *s, uint64_t b)
{
	siphash_block(s, b);
	s->v2 ^= 0xff;
	siphash_round(s);
	siphash_round(s);
	siphash_round(s);
	siphash_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

static inline uint64_t
siphash24(uint64_t k0, uint64_t k1, const void *data, size_t len)
{
	const uint8_t *p = data;
	struct siphash_state s;
	uint64_t b = (uint64_t)len << 56;
	size_t i, left = len & 7;

	siphash_init(&s, k0, k1);
	for (i = 0; i + 8 <= len; i += 8)
		siphash_block(&s, siphash_le64(p + i));
	while (left--)
		b |= (uint64_t)p[i + left] << (8 * left);
	return siphash_final(&s, b);
}

/* Of m as its 8 little-endian bytes. */
static inline uint64_t
siphash24_u64(uint64_t k0, uint64_t k1, uint64_t m)
{
	struct siphash_state s;

	siphash_init(&s, k0, k1);
	siphash_block(&s, m);
	return siphash_final(&s, (uint64_t)8 << 56);
}

#endif
