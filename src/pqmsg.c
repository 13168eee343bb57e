/* pqmsg.c - the ML-KEM-768 exchange's control messages (pqmsg.h). */
#include <string.h>

#include "bytes.h"
#include "gue.h"
#include "pqmsg.h"

_Static_assert(PQMSG_CT_LEN == GUE_PQ_REPLY_LEN, "gue.h's PQ_REPLY body");
_Static_assert(PQMSG_INIT_HDR == GUE_WORD_LEN + 2, "control word, then the offset");

size_t
pqmsg_init_encode(uint8_t *out, size_t cap, const uint8_t ek[PQMSG_EK_LEN], size_t off,
    size_t n)
{
	if (n == 0 || off >= PQMSG_EK_LEN || n > PQMSG_EK_LEN - off || cap < PQMSG_INIT_HDR + n)
		return 0;
	gue_control_encode(out, GUE_CTYPE_PQ_INIT);
	bytes_put16(out + GUE_WORD_LEN, (uint16_t)off);
	memcpy(out + PQMSG_INIT_HDR, ek + off, n);
	return PQMSG_INIT_HDR + n;
}

unsigned
pqmsg_init_split(size_t max, size_t *first)
{
	if (max >= PQMSG_INIT_MAX) {
		*first = PQMSG_EK_LEN;
		return 1;
	}
	if (max >= PQMSG_INIT_HDR + PQMSG_EK_LEN / 2) {
		*first = PQMSG_EK_LEN / 2;
		return 2;
	}
	*first = 0;
	return 0;
}

size_t
pqmsg_reply_encode(uint8_t *out, size_t cap, const uint8_t ct[PQMSG_CT_LEN])
{
	if (cap < PQMSG_REPLY_LEN)
		return 0;
	gue_control_encode(out, GUE_CTYPE_PQ_REPLY);
	memcpy(out + GUE_WORD_LEN, ct, PQMSG_CT_LEN);
	return PQMSG_REPLY_LEN;
}

void
pqmsg_key_init(struct pqmsg_key *k)
{
	memset(k, 0, sizeof(*k));
}

bool
pqmsg_key_complete(const struct pqmsg_key *k)
{
	return k->n_have == PQMSG_EK_LEN;
}

enum pqmsg_add
pqmsg_key_add(struct pqmsg_key *k, const uint8_t *body, size_t len)
{
	size_t off, n, i, fresh = 0;
	bool was_complete = pqmsg_key_complete(k);

	if (len <= 2)
		return PQMSG_BAD;
	off = bytes_get16(body);
	n = len - 2;
	body += 2;
	if (off >= PQMSG_EK_LEN || n > PQMSG_EK_LEN - off)
		return PQMSG_BAD;
	/* A byte already held must be the same: nothing is taken from a
	 * message that contradicts one before it. */
	for (i = 0; i < n; i++) {
		size_t at = off + i;

		if ((k->have[at / 8] >> (at % 8)) & 1) {
			if (k->ek[at] != body[i])
				return PQMSG_CONFLICT;
		} else {
			fresh++;
		}
	}
	if (fresh == 0)
		return PQMSG_REPEAT;
	for (i = 0; i < n; i++) {
		size_t at = off + i;

		k->ek[at] = body[i];
		k->have[at / 8] |= (uint8_t)(1u << (at % 8));
	}
	k->n_have += fresh;
	return !was_complete && pqmsg_key_complete(k) ? PQMSG_COMPLETE : PQMSG_PARTIAL;
}
