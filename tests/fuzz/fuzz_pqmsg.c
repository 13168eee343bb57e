/* fuzz_pqmsg.c - libFuzzer harness for the ML-KEM-768 exchange's messages
 * (pqmsg.c, and gue.c's check of them): what a responder makes of the
 * PQ_INIT pieces that arrive, in any order, repeated or contradicting.
 *
 * The input is a list of messages, each a 2-byte length and that many
 * bytes: an inner payload as a record would carry it.  Each is decoded
 * (gue_inner_decode) and, if it is a PQ_INIT, added to one key.
 *
 * Invariants, checked against a model kept here (the bytes received so
 * far): a message is a PQ_INIT body pqmsg_key_add() takes only if gue.c
 * took it; a piece is BAD exactly when it is empty or runs past the key;
 * CONFLICT exactly when a byte differs from one received before, and
 * then nothing changes; REPEAT exactly when it brings nothing new;
 * COMPLETE exactly once, when the last byte arrives; the key's count of
 * bytes is the model's; and what PQ_INIT encodes decodes to the same
 * piece. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "gue.h"
#include "pqmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
	if (!cond)
		abort();
}

static struct pqmsg_key key;
static uint8_t model[PQMSG_EK_LEN];
static uint8_t have[PQMSG_EK_LEN];

static void
piece(const uint8_t *body, size_t len)
{
	size_t off, n, i, fresh = 0, held = 0;
	int conflict = 0, was = pqmsg_key_complete(&key);
	enum pqmsg_add r = pqmsg_key_add(&key, body, len);

	if (len <= 2) {
		check(r == PQMSG_BAD);
		return;
	}
	off = bytes_get16(body);
	n = len - 2;
	if (off >= PQMSG_EK_LEN || n > PQMSG_EK_LEN - off) {
		check(r == PQMSG_BAD);
		return;
	}
	for (i = 0; i < n; i++) {
		if (!have[off + i])
			fresh++;
		else if (model[off + i] != body[2 + i])
			conflict = 1;
	}
	if (conflict) {
		check(r == PQMSG_CONFLICT);
		return;
	}
	if (fresh == 0) {
		check(r == PQMSG_REPEAT);
		return;
	}
	for (i = 0; i < n; i++) {
		model[off + i] = body[2 + i];
		have[off + i] = 1;
	}
	for (i = 0; i < PQMSG_EK_LEN; i++)
		held += have[i];
	check(key.n_have == held);
	check(r == (!was && held == PQMSG_EK_LEN ? PQMSG_COMPLETE : PQMSG_PARTIAL));
	for (i = 0; i < PQMSG_EK_LEN; i++)
		check(!have[i] || key.ek[i] == model[i]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t enc[PQMSG_INIT_MAX];
	struct gue_inner in;
	size_t len, n;

	pqmsg_key_init(&key);
	memset(model, 0, sizeof(model));
	memset(have, 0, sizeof(have));
	while (size >= 2) {
		len = bytes_get16(data);
		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		if (gue_inner_decode(data, len, &in) == GUE_OK && in.kind == GUE_KIND_CONTROL &&
		    in.proto == GUE_CTYPE_PQ_INIT) {
			check(in.len > 2);
			piece(in.payload, in.len);
			/* the encoder writes what the decoder took */
			if (bytes_get16(in.payload) < PQMSG_EK_LEN &&
			    in.len - 2 <= PQMSG_EK_LEN - bytes_get16(in.payload) &&
			    pqmsg_key_complete(&key)) {
				n = pqmsg_init_encode(enc, sizeof(enc), key.ek,
				    bytes_get16(in.payload), in.len - 2);
				check(n == len && memcmp(enc, data, 4) == 0);
			}
		}
		data += len;
		size -= len;
	}
	return 0;
}
