/* fuzz_record.c - libFuzzer harness for toud's record opener (record.c,
 * replay.c): whatever arrives as a type-23 record of a session.
 *
 * The first byte picks the cipher and the direction, the rest is the
 * record.  The keys are those of tests/unit/data/record/make-vectors.py,
 * so the seeds in corpus/record include records that open.  A record that
 * opens must be exactly as long as its plaintext says and must not open a
 * second time; one that does not must leave the window as it was.  The
 * input is also sealed as a plaintext and must open again to itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCIPHER 3
#define RECMAX (RECORD_HDR + 16384 + 2048)

struct fuzz {
	struct record_rx rx[NCIPHER][2];        /* client_write, server_write */
	struct record_tx tx[NCIPHER];
	struct record_rx rt[NCIPHER];           /* opens what tx seals */
	uint8_t out[RECMAX], sealed[RECMAX], back[RECMAX];
};

static struct fuzz *F;

static void
check(int cond)
{
	if (!cond)
		abort();
}

static void
fuzz_init(void)
{
	uint8_t master[48], cr[32], sr[32];
	struct record_keys ck, sk;
	int c, i;

	F = calloc(1, sizeof(*F));
	check(F != NULL);
	for (c = 0; c < NCIPHER; c++) {
		for (i = 0; i < 48; i++)
			master[i] = (uint8_t)(7 * i + c + 1);
		for (i = 0; i < 32; i++) {
			cr[i] = (uint8_t)(11 * i + 1);
			sr[i] = (uint8_t)(13 * i + 2);
		}
		check(record_keys_derive((enum record_cipher)(c + 1),
		    c + 1 == RECORD_AES256_GCM ? "SHA384" : "SHA256", master, 48, cr, sr, &ck,
		    &sk) == 0);
		check(record_rx_init(&F->rx[c][0], &ck, 1) == 0);
		check(record_rx_init(&F->rx[c][1], &sk, 1) == 0);
		check(record_tx_init(&F->tx[c], &ck, 1, RECORD_SEQ_START, 0) == 0);
		check(record_rx_init(&F->rt[c], &ck, 1) == 0);
	}
}

static void
fuzz_open(struct record_rx *rx, const uint8_t *rec, size_t len)
{
	struct record_msg m = { .in = rec, .in_len = len, .out = F->out, .out_cap = RECMAX };
	struct replay before = rx->win;
	uint64_t opened = rx->opened;

	check(record_open(rx, &m, 1) == (m.status == RECORD_OK));
	check(m.status >= RECORD_OK && m.status <= RECORD_ERR_CRYPTO);
	if (m.status != RECORD_OK) {
		check(m.out_len == 0 && rx->opened == opened);
		check(memcmp(&before, &rx->win, sizeof(before)) == 0);
		return;
	}
	check(len >= record_overhead(rx->cipher));
	check(m.out_len == len - record_overhead(rx->cipher));
	check(m.seq == ((uint64_t)rec[3] << 56 | (uint64_t)rec[4] << 48 |
	    (uint64_t)rec[5] << 40 | (uint64_t)rec[6] << 32 | (uint64_t)rec[7] << 24 |
	    (uint64_t)rec[8] << 16 | (uint64_t)rec[9] << 8 | rec[10]));
	m = (struct record_msg){ .in = rec, .in_len = len, .out = F->out, .out_cap = RECMAX };
	check(record_open(rx, &m, 1) == 0 && m.status == RECORD_ERR_DUP);
}

static void
fuzz_roundtrip(int c, const uint8_t *plain, size_t len)
{
	struct record_msg m = { .in = plain, .in_len = len, .out = F->sealed, .out_cap = RECMAX };

	if (len > RECORD_MAX_PLAIN) {
		check(record_seal(&F->tx[c], &m, 1) == 0 && m.status == RECORD_ERR_MALFORMED);
		return;
	}
	check(record_seal(&F->tx[c], &m, 1) == 1);
	check(m.out_len == len + record_overhead(F->tx[c].cipher));
	m = (struct record_msg){ .in = F->sealed, .in_len = m.out_len, .out = F->back,
	    .out_cap = RECMAX };
	check(record_open(&F->rt[c], &m, 1) == 1);
	check(m.out_len == len && (len == 0 || memcmp(F->back, plain, len) == 0));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int c, d;

	if (F == NULL)
		fuzz_init();
	if (size < 1)
		return 0;
	c = (data[0] >> 1) % NCIPHER;
	d = data[0] & 1;
	fuzz_open(&F->rx[c][d], data + 1, size - 1);
	fuzz_roundtrip(c, data + 1, size - 1);
	check(ERR_peek_error() == 0);
	return 0;
}
