/* bytes.h - big-endian (network order) loads and stores at any alignment.
 * Wire buffers carry no alignment guarantee: multi-byte fields go through
 * these, never through a cast. */
#ifndef TOUD_BYTES_H
#define TOUD_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t
bytes_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t
bytes_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline uint64_t
bytes_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static inline void
bytes_put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
bytes_put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
bytes_put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

#endif
