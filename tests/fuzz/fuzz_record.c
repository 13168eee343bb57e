/* fuzz_record.c - libFuzzer harness for toud's record layer (record.c,
 * replay.c): sealing, and opening whatever arrives as a record.
 *
 * The input is a small program.  Its first byte picks the cipher and where
 * the sender's sequence numbers start; then each op is one byte and its
 * arguments:
 *
 *   SEAL len flags        seal a record (in place or not, in one step or
 *                         framed and finished at once) into a new slot
 *   FRAME len             frame a record and leave it unfinished
 *   FINISH slot           finish a framed record (any order, or never)
 *   PERM x                the numbering permutations round-trip x
 *   MUT slot field v16    change one field of a slot: type, version,
 *                         epoch, a sequence byte, the length, a nonce,
 *                         ciphertext or tag byte; truncate; extend
 *   DUP slot              copy a slot (a replay)
 *   RAW len16 bytes       a record from the input itself
 *   OPEN slot mode        record_open (copy, in place, too small an
 *                         output) or check + unseal + accept, on the
 *                         sender's peer or on the other direction
 *   CHECK slot            record_check, kept pending (an opening thread's
 *   UNSEAL p / ACCEPT p   view): unsealed and accepted later, in any order
 *   BATCH n slot...       record_open of n records at once
 *   RENEW                 a new sending direction that continues the
 *                         numbers; the old one's frames keep its sealer
 *
 * Slots are opened in whatever order the program names them, so
 * reordering, replay and loss are the program's choice.  The keys are
 * fixed (those of tests/unit/data/record/make-vectors.py, whose records
 * are seeds too), so the records of a program are the same at every run;
 * tests/fuzz/make-seeds.py writes the other seeds.
 *
 * Invariants, checked against a model kept here: a record is refused as
 * malformed exactly when its header or length says so, and for another
 * epoch exactly when its epoch differs; the verdicts of the replay window
 * are those of a plain set of accepted numbers; a record made by the
 * sender opens (once) to its plaintext while it is new, and one changed
 * in any byte never opens; a refused record leaves the window as it was;
 * nothing is ever accepted twice; sealing runs out of numbers exactly at
 * the end of the epoch, and nothing is left on OpenSSL's error queue. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "bytes.h"
#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCIPHER 3
#define MAX_FRAGMENT (16384 + 2048)
#define RECMAX (RECORD_HDR + MAX_FRAGMENT + 64)
#define NSLOT 24
#define NGEN 48                         /* records sealed per run */
#define NPEND 8
#define NACC 512                        /* accepted numbers remembered */
#define EPOCH 1

enum op {
	OP_SEAL, OP_FRAME, OP_FINISH, OP_PERM, OP_MUT, OP_DUP, OP_RAW, OP_OPEN,
	OP_CHECK, OP_UNSEAL, OP_ACCEPT, OP_BATCH, OP_RENEW, OP_COUNT
};

enum origin {
	FROM_SEAL,      /* made by the sender: must open while unchanged and new */
	FROM_FRAME,     /* framed, not (yet) finished */
	FROM_RAW,       /* from the input: may open, if it is a real record */
};

struct slot {
	uint8_t b[RECMAX];
	size_t len;
	enum origin origin;
	int gen;                        /* FROM_FRAME: the genuine entry it becomes */
	struct record_sealer *sealer;   /* FROM_FRAME: a reference to the one that finishes it */
};

/* What the sender made: the record and its plaintext, by sequence number. */
struct gen {
	uint64_t seq;
	uint8_t rec[RECMAX];
	size_t len;
	uint8_t plain[RECORD_MAX_PLAIN];
	size_t plen;
	bool done;                      /* finished: rec is the record that goes out */
};

/* The replay window as a set. */
struct model {
	uint64_t acc[NACC];
	size_t n;
	uint64_t top;
	bool any;
};

struct pending {
	bool used;
	int rx;
	uint64_t seq;
	uint8_t b[RECMAX];              /* the opener's own copy */
	size_t len;
	int slot;                       /* where it came from, for the verdict */
	bool unsealed;
	enum record_status st;
	uint8_t before[RECMAX];         /* the slot's bytes when checked */
	enum origin origin;
};

struct fuzz {
	struct record_keys keys[NCIPHER][2];    /* client_write, server_write */
	int c;
	struct record_tx tx;
	struct record_rx rx[2];                 /* the sender's peer, the other direction */
	struct model m[2];
	struct slot slot[NSLOT];
	size_t nslot;
	struct gen gen[NGEN];
	size_t ngen;
	struct pending pend[NPEND];
	uint64_t next_seq;                      /* the model of tx: next number */
	uint8_t out[RECMAX], plain[RECMAX];
};

static struct fuzz *F;

static void
check(int cond)
{
	if (!cond)
		abort();
}

/* --- reading the program --------------------------------------------- */

struct prog {
	const uint8_t *p;
	size_t left;
};

static unsigned
get8(struct prog *g)
{
	if (g->left == 0)
		return 0;
	g->left--;
	return *g->p++;
}

static unsigned
get16(struct prog *g)
{
	unsigned hi = get8(g);

	return hi << 8 | get8(g);
}

/* A plaintext length: mostly short, sometimes up to past the maximum. */
static size_t
plain_len(unsigned b)
{
	return b < 200 ? b : (size_t)(b - 199) * 300;
}

/* --- the model ------------------------------------------------------- */

static bool
model_has(const struct model *m, uint64_t seq)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->acc[i] == seq)
			return true;
	return false;
}

/* What the window should say of seq. */
static enum record_status
model_verdict(const struct model *m, uint64_t seq)
{
	if (!m->any || seq > m->top)
		return RECORD_OK;
	if (m->top - seq >= REPLAY_WINDOW)
		return RECORD_ERR_OLD;
	return model_has(m, seq) ? RECORD_ERR_DUP : RECORD_OK;
}

static void
model_accept(struct model *m, uint64_t seq)
{
	check(model_verdict(m, seq) == RECORD_OK);
	if (m->n < NACC)
		m->acc[m->n++] = seq;
	if (!m->any || seq > m->top)
		m->top = seq;
	m->any = true;
}

/* toud's sequence number of a wire one, on direction d (record.h): the
 * window and the model count those. */
static uint64_t
unwire(int d, uint64_t w)
{
	w &= RECORD_SEQ_MAX;
	return w < RECORD_SEQ_START ? w :
	    RECORD_SEQ_START | record_perm_inv(&F->rx[d].seq_perm, 47, w - RECORD_SEQ_START);
}

/* The wire sequence number of toud's seq on the sending direction. */
static uint64_t
wire(uint64_t seq)
{
	return seq < RECORD_SEQ_START ? seq :
	    RECORD_SEQ_START | record_perm(&F->tx.seq_perm, 47, seq - RECORD_SEQ_START);
}

/* The header checks of record_check(), written out from RFC 6347 4.1. */
static bool
spec_malformed(const uint8_t *r, size_t len)
{
	size_t over = record_overhead(F->rx[0].cipher);

	return len < over || len > RECORD_HDR + MAX_FRAGMENT || r[0] != RECORD_TYPE_APPDATA ||
	    r[1] != 0xfe || r[2] != 0xfd || bytes_get16(r + 11) != len - RECORD_HDR ||
	    len - over > RECORD_MAX_PLAIN;
}

static struct gen *
gen_find(uint64_t seq)
{
	size_t i;

	for (i = 0; i < F->ngen; i++)
		if (F->gen[i].done && F->gen[i].seq == seq)
			return &F->gen[i];
	return NULL;
}

/* The sender's own record, byte for byte. */
static bool
genuine(const uint8_t *r, size_t len, enum origin o, uint64_t seq)
{
	struct gen *g = o == FROM_SEAL ? gen_find(seq) : NULL;

	return g && g->len == len && memcmp(g->rec, r, len) == 0;
}

/* The status every path of opening must give r (len bytes, of origin o)
 * on direction d before any tag is checked, or RECORD_OK if it comes down
 * to the tag. */
static enum record_status
expect_pre(int d, const uint8_t *r, size_t len)
{
	uint64_t seq;

	if (spec_malformed(r, len))
		return RECORD_ERR_MALFORMED;
	seq = bytes_get64(r + 3);
	if (seq >> 48 != F->rx[d].epoch)
		return RECORD_ERR_EPOCH;
	return model_verdict(&F->m[d], unwire(d, seq));
}

/* The verdict of a record that got past the window: checked against the
 * model, which then follows it. */
static void
verdict(int d, const uint8_t *r, size_t len, enum origin o, enum record_status st,
    const uint8_t *plain, size_t plen)
{
	uint64_t seq = bytes_get64(r + 3);
	bool real = d == 0 && genuine(r, len, o, seq);
	struct gen *g;

	if (real)
		check(st == RECORD_OK || st == RECORD_ERR_DUP || st == RECORD_ERR_OLD ||
		    st == RECORD_ERR_SPACE);
	if (st != RECORD_OK)
		return;
	/* Only the sender's records, unchanged, or records from the input
	 * (which may be real ones) ever open. */
	check(real || o == FROM_RAW);
	model_accept(&F->m[d], unwire(d, seq));
	check(plen == len - record_overhead(F->rx[d].cipher));
	if (real) {
		g = gen_find(seq);
		check(g->plen == plen && (plen == 0 || memcmp(g->plain, plain, plen) == 0));
	}
}

/* --- ops -------------------------------------------------------------- */

static struct slot *
slot_new(void)
{
	struct slot *s;

	if (F->nslot == NSLOT)
		return NULL;
	s = &F->slot[F->nslot++];
	s->len = 0;
	s->gen = -1;
	s->sealer = NULL;
	return s;
}

/* A frame that will not be finished: it drops its sealer. */
static void
slot_unframe(struct slot *s)
{
	record_sealer_put(s->sealer);
	s->sealer = NULL;
	s->origin = FROM_RAW;
}

static struct slot *
slot_pick(struct prog *g)
{
	unsigned i = get8(g);

	return F->nslot ? &F->slot[i % F->nslot] : NULL;
}

static void
fill_plain(uint8_t *p, size_t n, uint64_t seq)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seq * 31 + i * 7);
}

/* Frame (and with finish, seal) a record of plen bytes into a new slot. */
static void
op_seal(size_t plen, bool in_place, bool two_steps, bool finish)
{
	struct slot *s = slot_new();
	struct gen *g = F->ngen < NGEN ? &F->gen[F->ngen] : NULL;
	size_t pre = record_prefix(F->tx.cipher);
	struct record_msg m;
	uint8_t *src = F->plain;
	enum record_status want = RECORD_OK;

	if (!s || !g)
		return;
	fill_plain(F->plain, plen > RECORD_MAX_PLAIN ? RECORD_MAX_PLAIN : plen, F->next_seq);
	if (in_place) {
		src = s->b + pre;
		memcpy(src, F->plain, plen > RECMAX - pre ? RECMAX - pre : plen);
	}
	if (plen > RECORD_MAX_PLAIN)
		want = RECORD_ERR_MALFORMED;
	else if (F->next_seq > RECORD_SEQ_MAX)
		want = RECORD_ERR_EXHAUSTED;
	m = (struct record_msg){ .in = src, .in_len = plen, .out = s->b, .out_cap = RECMAX };
	if (!finish || two_steps) {
		m.status = record_frame(&F->tx, &m);
		if (m.status == RECORD_OK && finish)
			m.status = record_finish(F->tx.sealer, m.out, m.out_len);
		check(m.status == want);
	} else {
		check(record_seal(&F->tx, &m, 1) == (want == RECORD_OK));
		check(m.status == want);
	}
	check(ERR_peek_error() == 0);
	if (m.status != RECORD_OK) {
		F->nslot--;
		return;
	}
	check(m.seq == ((uint64_t)EPOCH << 48 | F->next_seq));
	check(m.out_len == plen + record_overhead(F->tx.cipher));
	check(bytes_get64(s->b + 3) == ((uint64_t)EPOCH << 48 | wire(F->next_seq)) &&
	    bytes_get16(s->b + 11) == m.out_len - RECORD_HDR);
	/* nonce_explicit: of the wire number, clear of OpenSSL's */
	check(pre == RECORD_HDR ||
	    (bytes_get64(s->b + RECORD_HDR) == bytes_get64(s->b + 3) * RECORD_NONCE_MUL &&
	    bytes_get64(s->b + RECORD_HDR) - F->tx.ossl_nonce >= RECORD_OSSL_RECORDS));
	if (!finish)    /* the tag's room: the same bytes at every run */
		memset(s->b + m.out_len - RECORD_TAG, 0, RECORD_TAG);
	F->next_seq++;
	s->len = m.out_len;
	g->seq = bytes_get64(s->b + 3);         /* as verdict() finds it */
	g->plen = plen;
	memcpy(g->plain, F->plain, plen);
	g->done = finish;
	if (finish) {
		memcpy(g->rec, s->b, s->len);
		g->len = s->len;
		s->origin = FROM_SEAL;
	} else {
		s->origin = FROM_FRAME;
		s->gen = (int)F->ngen;
		s->sealer = record_sealer_get(F->tx.sealer);
	}
	F->ngen++;
}

static void
op_finish(struct slot *s)
{
	struct gen *g;

	if (!s || s->origin != FROM_FRAME)
		return;
	g = &F->gen[s->gen];
	check(record_finish(s->sealer, s->b, s->len) == RECORD_OK);
	record_sealer_put(s->sealer);
	s->sealer = NULL;
	check(ERR_peek_error() == 0);
	memcpy(g->rec, s->b, s->len);
	g->len = s->len;
	g->done = true;
	s->origin = FROM_SEAL;
}

static void
op_perm(unsigned x)
{
	uint64_t v = (uint64_t)x * UINT64_C(0x0101010101010101) ^ F->next_seq;
	uint64_t y = record_perm(&F->tx.seq_perm, 64, v);
	unsigned bits = 1 + x % 47;

	check(record_perm_inv(&F->tx.seq_perm, 64, y) == v);
	y = record_perm(&F->tx.seq_perm, bits, v >> (64 - bits));
	check(y >> bits == 0 && record_perm_inv(&F->tx.seq_perm, bits, y) == v >> (64 - bits));
}

static void
op_mut(struct slot *s, unsigned field, unsigned v)
{
	size_t pre = record_prefix(F->tx.cipher), k;
	uint8_t *b;

	if (!s)
		return;
	b = s->b;
	switch (field % 10) {
	case 0:         /* type */
		if (s->len > 0)
			b[0] ^= (uint8_t)v;
		break;
	case 1:         /* version */
		if (s->len > 2)
			bytes_put16(b + 1, bytes_get16(b + 1) ^ (uint16_t)v);
		break;
	case 2:         /* epoch */
		if (s->len > 4)
			bytes_put16(b + 3, (uint16_t)v);
		break;
	case 3:         /* one byte of the sequence number */
		if (s->len > 10)
			b[5 + (v >> 8) % 6] ^= (uint8_t)v;
		break;
	case 4:         /* the length */
		if (s->len > 12)
			bytes_put16(b + 11, bytes_get16(b + 11) + (uint16_t)v);
		break;
	case 5:         /* nonce_explicit (AES-GCM) or the first bytes after the header */
		if (s->len > RECORD_HDR + 8)
			b[RECORD_HDR + (v >> 8) % 8] ^= (uint8_t)v;
		break;
	case 6:         /* ciphertext */
		if (s->len > pre + RECORD_TAG)
			b[pre + (v >> 8) % (s->len - pre - RECORD_TAG)] ^= (uint8_t)v;
		break;
	case 7:         /* tag */
		if (s->len >= RECORD_TAG)
			b[s->len - RECORD_TAG + (v >> 8) % RECORD_TAG] ^= (uint8_t)v;
		break;
	case 8:         /* truncate */
		s->len -= s->len ? v % (s->len + 1) : 0;
		break;
	default:        /* extend */
		for (k = 0; k < (v & 0xff) && s->len < RECMAX; k++)
			b[s->len++] = (uint8_t)(v >> 8);
		break;
	}
	/* A frame changed before it was finished is no longer the sender's. */
	if (s->origin == FROM_FRAME)
		slot_unframe(s);
}

static void
op_dup(struct slot *s)
{
	struct slot *d;

	if (!s || !(d = slot_new()))
		return;
	memcpy(d->b, s->b, s->len);
	d->len = s->len;
	d->origin = s->origin == FROM_FRAME ? FROM_RAW : s->origin;
}

static void
op_raw(struct prog *g)
{
	size_t n = get16(g) % RECMAX;
	struct slot *s = slot_new();

	if (n > g->left)
		n = g->left;
	if (s) {
		memcpy(s->b, g->p, n);
		s->len = n;
		s->origin = FROM_RAW;
	}
	g->p += n;
	g->left -= n;
}

/* The sending direction is replaced by a new one with the same keys that
 * continues its numbers, as a direction freed while its records are still
 * being finished elsewhere: frames of the old one are finished by the
 * sealer they hold, which outlives it. */
static void
op_renew(void)
{
	uint64_t seq = F->tx.seq, nonce = F->tx.ossl_nonce;

	if (seq > RECORD_SEQ_MAX)
		return;                 /* used up: nothing to continue */
	check(seq == F->next_seq);
	record_tx_free(&F->tx);
	check(record_tx_init(&F->tx, &F->keys[F->c][0], EPOCH, seq, nonce) == 0);
}

/* record_open() of one slot on direction d: a copy of it (mode 0), in
 * place (1), into too small an output (2), or the three steps (3). */
static void
op_open(struct slot *s, unsigned mode)
{
	int d = (mode >> 2) & 1;
	struct record_rx *rx = &F->rx[d];
	size_t pre = record_prefix(rx->cipher), need;
	enum record_status want, st;
	struct replay before = rx->win;
	uint64_t opened = rx->opened, failed = rx->failed, seq = 0;
	struct record_msg m;
	uint8_t *b = F->out;

	if (!s)
		return;
	want = expect_pre(d, s->b, s->len);
	memcpy(b, s->b, s->len);
	m = (struct record_msg){ .in = b, .in_len = s->len, .out = F->plain, .out_cap = RECMAX };
	need = s->len >= RECORD_HDR ? s->len - RECORD_HDR : 0;
	switch (mode & 3) {
	case 1:
		m.out = b + pre;
		m.out_cap = RECMAX - pre;
		break;
	case 2:
		m.out_cap = need ? need - 1 : 0;
		if (want == RECORD_OK)
			want = RECORD_ERR_SPACE;
		break;
	default:
		break;
	}
	if ((mode & 3) == 3) {
		st = record_check(rx, b, s->len, &seq);
		check(st == want);
		if (st == RECORD_OK) {
			st = record_unseal(rx->opener, b, need + RECORD_HDR);
			check(st == RECORD_OK || st == RECORD_ERR_AUTH);
			st = record_accept(rx, seq, st);
			m.out = b + pre;
		}
		m.status = st;
		m.out_len = st == RECORD_OK ? s->len - record_overhead(rx->cipher) : 0;
	} else {
		check(record_open(rx, &m, 1) == (m.status == RECORD_OK));
	}
	st = m.status;
	if (want != RECORD_OK)
		check(st == want);
	else
		check(st == RECORD_OK || st == RECORD_ERR_AUTH);
	check(rx->failed == failed + (st == RECORD_ERR_AUTH));
	if (st != RECORD_OK) {
		check(m.out_len == 0 && rx->opened == opened);
		check(memcmp(&before, &rx->win, sizeof(before)) == 0);
	} else {
		check(rx->opened == opened + 1);
		check(m.seq == ((uint64_t)EPOCH << 48 | unwire(d, bytes_get64(s->b + 3))) ||
		    (mode & 3) == 3);
	}
	verdict(d, s->b, s->len, s->origin, st, m.out, m.out_len);
	check(ERR_peek_error() == 0);
}

/* record_check() now; the opener's copy unsealed and accepted later. */
static void
op_check(struct slot *s, unsigned mode)
{
	struct pending *p = NULL;
	enum record_status st;
	uint64_t seq;
	int d = mode & 1, i;

	for (i = 0; i < NPEND && !p; i++)
		if (!F->pend[i].used)
			p = &F->pend[i];
	if (!s || !p)
		return;
	st = record_check(&F->rx[d], s->b, s->len, &seq);
	check(st == expect_pre(d, s->b, s->len));
	if (st != RECORD_OK)
		return;
	p->used = true;
	p->rx = d;
	p->seq = seq;
	p->unsealed = false;
	p->st = RECORD_OK;
	p->len = s->len;
	p->origin = s->origin == FROM_FRAME ? FROM_RAW : s->origin;
	memcpy(p->b, s->b, s->len);
	memcpy(p->before, s->b, s->len);
}

static struct pending *
pend_pick(struct prog *g)
{
	unsigned k = get8(g);
	int i;

	for (i = 0; i < NPEND; i++) {
		struct pending *p = &F->pend[(k + i) % NPEND];

		if (p->used)
			return p;
	}
	return NULL;
}

static void
op_unseal(struct pending *p)
{
	if (!p || p->unsealed)
		return;
	p->st = record_unseal(F->rx[p->rx].opener, p->b, p->len);
	check(p->st == RECORD_OK || p->st == RECORD_ERR_AUTH);
	check(ERR_peek_error() == 0);
	p->unsealed = true;
}

/* Whatever happened in between (the same number accepted from another
 * copy, the window moved past it), the window has the last word. */
static void
op_accept(struct pending *p)
{
	struct record_rx *rx;
	enum record_status st, want;
	struct replay before;
	size_t pre;

	if (!p)
		return;
	op_unseal(p);
	rx = &F->rx[p->rx];
	before = rx->win;
	want = model_verdict(&F->m[p->rx], p->seq & RECORD_SEQ_MAX);
	st = record_accept(rx, p->seq, p->st);
	if (p->st != RECORD_OK)
		check(st == p->st);
	else
		check(st == want);
	if (st != RECORD_OK)
		check(memcmp(&before, &rx->win, sizeof(before)) == 0);
	pre = record_prefix(rx->cipher);
	verdict(p->rx, p->before, p->len, p->origin, st, p->b + pre,
	    p->len - record_overhead(rx->cipher));
	p->used = false;
}

/* Several records in one call, all on the sender's peer: each as if
 * opened alone, in order. */
static void
op_batch(struct prog *g)
{
	struct record_msg m[4];
	static uint8_t in[4][RECMAX], out[4][RECMAX];
	struct slot *s[4];
	enum record_status want[4];
	unsigned n = 1 + get8(g) % 4, i, ok = 0;

	for (i = 0; i < n; i++)
		if (!(s[i] = slot_pick(g)))
			return;
	for (i = 0; i < n; i++) {
		memcpy(in[i], s[i]->b, s[i]->len);
		m[i] = (struct record_msg){ .in = in[i], .in_len = s[i]->len, .out = out[i],
		    .out_cap = RECMAX };
	}
	/* The verdicts before the tag depend on what opened before them:
	 * the model follows them in order. */
	ok = (unsigned)record_open(&F->rx[0], m, n);
	for (i = 0; i < n; i++) {
		want[i] = expect_pre(0, s[i]->b, s[i]->len);
		if (want[i] != RECORD_OK)
			check(m[i].status == want[i]);
		else
			check(m[i].status == RECORD_OK || m[i].status == RECORD_ERR_AUTH);
		verdict(0, s[i]->b, s[i]->len, s[i]->origin, m[i].status, m[i].out,
		    m[i].out_len);
		ok -= m[i].status == RECORD_OK;
	}
	check(ok == 0);
}

/* --- set-up ------------------------------------------------------------ */

static void
fuzz_init(void)
{
	uint8_t master[48], cr[32], sr[32];
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
		    c + 1 == RECORD_AES256_GCM ? "SHA384" : "SHA256", master, 48, cr, sr,
		    &F->keys[c][0], &F->keys[c][1]) == 0);
	}
}

/* Fresh directions for a run: byte 0 picks the cipher (bits 1-2, as the
 * seeds made by make-vectors.py have it) and where sealing starts (bits
 * 3-4): toud's first number, 0, or the last few of the epoch. */
static void
run_start(unsigned b)
{
	static const uint64_t start[4] = { RECORD_SEQ_START, 0, RECORD_SEQ_MAX - 2,
	    RECORD_SEQ_START + REPLAY_WINDOW - 3 };
	int c = (int)((b >> 1) % NCIPHER);
	size_t i;

	for (i = 0; i < F->nslot; i++)
		if (F->slot[i].origin == FROM_FRAME)
			slot_unframe(&F->slot[i]);
	record_tx_free(&F->tx);
	record_rx_free(&F->rx[0]);
	record_rx_free(&F->rx[1]);
	F->c = c;
	F->next_seq = start[(b >> 3) & 3];
	check(record_tx_init(&F->tx, &F->keys[c][0], EPOCH, F->next_seq,
	    (uint64_t)b << 56 | F->next_seq) == 0);
	check(record_rx_init(&F->rx[0], &F->keys[c][0], EPOCH) == 0);
	check(record_rx_init(&F->rx[1], &F->keys[c][1], EPOCH) == 0);
	memset(F->m, 0, sizeof(F->m));
	memset(F->pend, 0, sizeof(F->pend));
	F->nslot = F->ngen = 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prog g = { data, size };
	unsigned op, a, b;
	struct slot *s;

	if (F == NULL)
		fuzz_init();
	if (size < 1)
		return 0;
	run_start(get8(&g));
	while (g.left > 0) {
		op = get8(&g) % OP_COUNT;
		switch (op) {
		case OP_SEAL:
			a = get8(&g);
			b = get8(&g);
			op_seal(plain_len(a), b & 1, b & 2, true);
			break;
		case OP_FRAME:
			op_seal(plain_len(get8(&g)), false, true, false);
			break;
		case OP_FINISH:
			op_finish(slot_pick(&g));
			break;
		case OP_PERM:
			op_perm(get8(&g));
			break;
		case OP_MUT:
			s = slot_pick(&g);
			a = get8(&g);
			op_mut(s, a, get16(&g));
			break;
		case OP_DUP:
			op_dup(slot_pick(&g));
			break;
		case OP_RAW:
			op_raw(&g);
			break;
		case OP_OPEN:
			s = slot_pick(&g);
			op_open(s, get8(&g));
			break;
		case OP_CHECK:
			s = slot_pick(&g);
			op_check(s, get8(&g));
			break;
		case OP_UNSEAL:
			op_unseal(pend_pick(&g));
			break;
		case OP_ACCEPT:
			op_accept(pend_pick(&g));
			break;
		case OP_BATCH:
			op_batch(&g);
			break;
		default:
			op_renew();
			break;
		}
	}
	check(ERR_peek_error() == 0);
	return 0;
}
