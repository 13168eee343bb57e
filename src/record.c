/* record.c - DTLS 1.2 application-data records (RFC 6347, RFC 5288,
 * RFC 7905) sealed and opened with the keys of a completed handshake.
 *
 * Per record: the nonce and the AAD are built on the stack, the context
 * made at set-up is re-keyed with the nonce only, and the AEAD runs over
 * the caller's buffers (in place if they are the same).  Nothing is
 * allocated after set-up and no state is shared between the two
 * directions. */
#include <errno.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>

#include "bytes.h"
#include "record.h"
#include "siphash.h"

#define AAD_LEN 13
#define NONCE_LEN 12
#define GCM_SALT 4
#define LABEL "key expansion"
#define LABEL_LEN (sizeof(LABEL) - 1)
/* RFC 6347 4.1: a protected fragment is at most 2^14 + 2048 bytes. */
#define MAX_FRAGMENT (16384 + 2048)

enum record_cipher
record_cipher_from_nid(int nid)
{
	switch (nid) {
	case NID_aes_128_gcm:
		return RECORD_AES128_GCM;
	case NID_aes_256_gcm:
		return RECORD_AES256_GCM;
	case NID_chacha20_poly1305:
		return RECORD_CHACHA20_POLY1305;
	default:
		return 0;
	}
}

const char *
record_cipher_name(enum record_cipher c)
{
	switch (c) {
	case RECORD_AES128_GCM:
		return "AES-128-GCM";
	case RECORD_AES256_GCM:
		return "AES-256-GCM";
	case RECORD_CHACHA20_POLY1305:
		return "ChaCha20-Poly1305";
	default:
		return NULL;
	}
}

static bool
is_gcm(enum record_cipher c)
{
	return c == RECORD_AES128_GCM || c == RECORD_AES256_GCM;
}

size_t
record_prefix(enum record_cipher c)
{
	return RECORD_HDR + (is_gcm(c) ? RECORD_GCM_EXPLICIT : 0);
}

size_t
record_overhead(enum record_cipher c)
{
	return record_prefix(c) + RECORD_TAG;
}

static size_t
key_len(enum record_cipher c)
{
	return c == RECORD_AES128_GCM ? 16 : 32;
}

static size_t
iv_len(enum record_cipher c)
{
	return is_gcm(c) ? GCM_SALT : NONCE_LEN;
}

/* The TLS 1.2 PRF (RFC 5246 5): n bytes of PRF(secret, label, a + b). */
static int
prf(const char *md, const uint8_t *secret, size_t secret_len, const char *label,
    const uint8_t a[32], const uint8_t b[32], uint8_t *out, size_t n)
{
	uint8_t seed[64 + 64];
	size_t ll = strlen(label);
	OSSL_PARAM params[4];
	EVP_KDF_CTX *kctx = NULL;
	EVP_KDF *kdf = NULL;
	int ret = -EIO;

	if (ll > sizeof(seed) - 64)
		return -EINVAL;
	memcpy(seed, label, ll);
	memcpy(seed + ll, a, 32);
	memcpy(seed + ll + 32, b, 32);
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)(uintptr_t)md, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET,
	    (void *)(uintptr_t)secret, secret_len);
	params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, seed, ll + 64);
	params[3] = OSSL_PARAM_construct_end();
	if ((kdf = EVP_KDF_fetch(NULL, "TLS1-PRF", NULL)) != NULL &&
	    (kctx = EVP_KDF_CTX_new(kdf)) != NULL &&
	    EVP_KDF_derive(kctx, out, n, params) == 1)
		ret = 0;
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	ERR_clear_error();
	return ret;
}

/* The two directions' keys from a key block (client write key, server
 * write key, client write IV, server write IV) and 32 bytes of permutation
 * keys (client, server). */
static void
keys_cut(enum record_cipher c, const uint8_t *block, const uint8_t *perm,
    struct record_keys *client_write, struct record_keys *server_write)
{
	size_t kl = key_len(c), il = iv_len(c);

	memset(client_write, 0, sizeof(*client_write));
	memset(server_write, 0, sizeof(*server_write));
	client_write->cipher = server_write->cipher = c;
	client_write->key_len = server_write->key_len = kl;
	client_write->iv_len = server_write->iv_len = il;
	memcpy(client_write->key, block, kl);
	memcpy(server_write->key, block + kl, kl);
	memcpy(client_write->iv, block + 2 * kl, il);
	memcpy(server_write->iv, block + 2 * kl + il, il);
	memcpy(client_write->perm_key, perm, 16);
	memcpy(server_write->perm_key, perm + 16, 16);
}

/* RFC 5246 6.3: key_block = PRF(master_secret, "key expansion",
 * server_random + client_random), cut into client_write_key,
 * server_write_key, client_write_IV, server_write_IV (AEAD suites have no
 * MAC keys).  The permutation keys: PRF(master_secret, RECORD_PERM_LABEL,
 * client_random + server_random), RFC 5705's exporter. */
int
record_keys_derive(enum record_cipher c, const char *md, const uint8_t *master,
    size_t master_len, const uint8_t client_random[32], const uint8_t server_random[32],
    struct record_keys *client_write, struct record_keys *server_write)
{
	uint8_t block[2 * 32 + 2 * NONCE_LEN], perm[2 * 16];
	size_t kl, il, need;
	int ret = -EIO;

	if (record_cipher_name(c) == NULL || md == NULL || master == NULL || master_len == 0)
		return -EINVAL;
	kl = key_len(c);
	il = iv_len(c);
	need = 2 * kl + 2 * il;
	if (prf(md, master, master_len, LABEL, server_random, client_random, block, need) < 0 ||
	    prf(md, master, master_len, RECORD_PERM_LABEL, client_random, server_random, perm,
	    sizeof(perm)) < 0)
		goto out;
	keys_cut(c, block, perm, client_write, server_write);
	ret = 0;
out:
	OPENSSL_cleanse(block, sizeof(block));
	OPENSSL_cleanse(perm, sizeof(perm));
	return ret;
}

int
record_hkdf(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
    const char *info, uint8_t *out, size_t n)
{
	OSSL_PARAM params[5], *p = params;
	EVP_KDF_CTX *kctx = NULL;
	EVP_KDF *kdf = NULL;
	int ret = -EIO;

	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)(uintptr_t)ikm,
	    ikm_len);
	if (salt != NULL)
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
		    (void *)(uintptr_t)salt, salt_len);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)(uintptr_t)info,
	    strlen(info));
	*p = OSSL_PARAM_construct_end();
	if ((kdf = EVP_KDF_fetch(NULL, "HKDF", NULL)) != NULL &&
	    (kctx = EVP_KDF_CTX_new(kdf)) != NULL &&
	    EVP_KDF_derive(kctx, out, n, params) == 1)
		ret = 0;
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	ERR_clear_error();
	return ret;
}

/* HKDF-SHA256(salt, IKM = ikm1 || ikm2, info) cut as the key block is,
 * then the two permutation keys (record_keys_psk(), record_keys_pq()).
 * salt may be NULL (none: RFC 5869's zeros), ikm2 too. */
static int
hkdf_keys(enum record_cipher c, const uint8_t *salt, size_t salt_len, const uint8_t *ikm1,
    size_t ikm1_len, const uint8_t *ikm2, size_t ikm2_len, const char *info,
    struct record_keys *client_write, struct record_keys *server_write)
{
	uint8_t block[2 * 32 + 2 * NONCE_LEN + 2 * 16], ikm[64];
	size_t kl, il;
	int ret;

	if (record_cipher_name(c) == NULL || ikm1 == NULL || ikm1_len + ikm2_len > sizeof(ikm))
		return -EINVAL;
	kl = key_len(c);
	il = iv_len(c);
	memcpy(ikm, ikm1, ikm1_len);
	if (ikm2_len)
		memcpy(ikm + ikm1_len, ikm2, ikm2_len);
	ret = record_hkdf(salt, salt_len, ikm, ikm1_len + ikm2_len, info, block,
	    2 * kl + 2 * il + 2 * 16);
	if (ret == 0)
		keys_cut(c, block, block + 2 * kl + 2 * il, client_write, server_write);
	OPENSSL_cleanse(block, sizeof(block));
	OPENSSL_cleanse(ikm, sizeof(ikm));
	return ret;
}

/* The keys of a session with a preshared key (record.h). */
int
record_keys_psk(enum record_cipher c, const uint8_t exporter[RECORD_PSK_EXPORTER_LEN],
    const uint8_t psk[RECORD_PSK_LEN], struct record_keys *client_write,
    struct record_keys *server_write)
{
	if (exporter == NULL || psk == NULL)
		return -EINVAL;
	return hkdf_keys(c, psk, RECORD_PSK_LEN, exporter, RECORD_PSK_EXPORTER_LEN, NULL, 0,
	    RECORD_PSK_INFO, client_write, server_write);
}

/* The keys once the ML-KEM-768 exchange is through (record.h). */
int
record_keys_pq(enum record_cipher c, const uint8_t exporter[RECORD_PQ_EXPORTER_LEN],
    const uint8_t ss[RECORD_PQ_SS_LEN], const uint8_t *psk,
    struct record_keys *client_write, struct record_keys *server_write)
{
	if (exporter == NULL || ss == NULL)
		return -EINVAL;
	return hkdf_keys(c, psk, psk ? RECORD_PSK_LEN : 0, exporter, RECORD_PQ_EXPORTER_LEN, ss,
	    RECORD_PQ_SS_LEN, RECORD_PQ_INFO, client_write, server_write);
}

/* --- the numbering permutations (record.h) ---------------------------- */

void
record_perm_init(struct record_perm *p, const uint8_t key[16])
{
	unsigned i;

	p->k0 = p->k1 = 0;
	for (i = 0; i < 8; i++) {
		p->k0 |= (uint64_t)key[i] << (8 * i);
		p->k1 |= (uint64_t)key[8 + i] << (8 * i);
	}
}

/* An alternating Feistel network of RECORD_PERM_ROUNDS rounds: x is split
 * into a high half hi (bits - bits / 2 wide) and a low half lo (bits / 2),
 * and round r XORs into one half SipHash(r << 56 | the other half) cut to
 * its width: the even rounds into hi, the odd ones into lo.  Every round
 * is its own inverse, so the network is a bijection whatever the round
 * function, and its inverse runs the rounds backwards. */
static inline uint64_t
feistel(const struct record_perm *p, unsigned bits, uint64_t x, bool inverse)
{
	unsigned wl = bits / 2, r, k;
	uint64_t lm = (UINT64_C(1) << wl) - 1;
	uint64_t hm = bits - wl == 64 ? UINT64_MAX : (UINT64_C(1) << (bits - wl)) - 1;
	uint64_t lo = x & lm, hi = x >> wl & hm;

	for (k = 0; k < RECORD_PERM_ROUNDS; k++) {
		r = inverse ? RECORD_PERM_ROUNDS - 1 - k : k;
		if (r & 1)
			lo ^= siphash24_u64(p->k0, p->k1, (uint64_t)r << 56 | hi) & lm;
		else
			hi ^= siphash24_u64(p->k0, p->k1, (uint64_t)r << 56 | lo) & hm;
	}
	return hi << wl | lo;
}

uint64_t
record_perm(const struct record_perm *p, unsigned bits, uint64_t x)
{
	return feistel(p, bits, x, false);
}

uint64_t
record_perm_inv(const struct record_perm *p, unsigned bits, uint64_t x)
{
	return feistel(p, bits, x, true);
}

/* The sequence number on the wire of toud's seq (record.h), and back:
 * one bijection of [0, 2^48). */
static inline uint64_t
seq_to_wire(const struct record_perm *p, uint64_t seq)
{
	return seq < RECORD_SEQ_START ? seq : RECORD_SEQ_START | record_perm(p, 47, seq - RECORD_SEQ_START);
}

static inline uint64_t
seq_from_wire(const struct record_perm *p, uint64_t w)
{
	return w < RECORD_SEQ_START ? w :
	    RECORD_SEQ_START | record_perm_inv(p, 47, w - RECORD_SEQ_START);
}

/* The 12-byte AES-GCM IV toud's sealing starts from: salt | the first
 * nonce_explicit.  (Each record's nonce is the salt and the explicit part
 * it carries; the ChaCha20 nonce, IV XOR epoch | sequence, is made by the
 * cipher from the AAD.) */
static void
nonce_make(const uint8_t *salt, uint64_t explicit, uint8_t nonce[NONCE_LEN])
{
	memcpy(nonce, salt, GCM_SALT);
	bytes_put64(nonce + GCM_SALT, explicit);
}

static struct evp_cipher_ctx_st *
ctx_new(const struct record_keys *k, int enc)
{
	const char *name = record_cipher_name(k->cipher);
	EVP_CIPHER_CTX *ctx = NULL;
	EVP_CIPHER *ciph = NULL;

	if (name == NULL || k->key_len != key_len(k->cipher) || k->iv_len != iv_len(k->cipher))
		return NULL;
	/* Records go through OpenSSL's TLS record mode (EVP_Cipher after
	 * the TLS1 AAD parameter): one pass per record, the fastest path
	 * these ciphers have.  The fixed IV is the salt (GCM) or the IV
	 * (ChaCha20) of the key block. */
	if ((ciph = EVP_CIPHER_fetch(NULL, name, NULL)) == NULL ||
	    (ctx = EVP_CIPHER_CTX_new()) == NULL ||
	    EVP_CipherInit_ex(ctx, ciph, NULL, k->key, NULL, enc) != 1 ||
	    EVP_CIPHER_CTX_get_iv_length(ctx) != NONCE_LEN ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IV_FIXED, (int)k->iv_len,
	    (void *)(uintptr_t)k->iv) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		ctx = NULL;
	}
	EVP_CIPHER_free(ciph);             /* the context keeps its reference */
	ERR_clear_error();
	return ctx;
}

/* The cipher half of a sending direction (record.h).  For AES-GCM the
 * context counts the explicit nonce itself (TLS record mode); next is where
 * that count stands, so that a record framed with another nonce (toud's
 * follow P64, not a count) restarts it first. */
struct record_sealer {
	EVP_CIPHER_CTX *ctx;
	enum record_cipher cipher;
	uint8_t iv[12];
	uint64_t next;                  /* GCM: the context's next nonce_explicit */
	bool synced;                    /* GCM: next is known */
	unsigned refs;
};

struct record_sealer *
record_sealer_get(struct record_sealer *s)
{
	s->refs++;
	return s;
}

void
record_sealer_put(struct record_sealer *s)
{
	if (!s || --s->refs)
		return;
	EVP_CIPHER_CTX_free(s->ctx);
	OPENSSL_cleanse(s, sizeof(*s));
	OPENSSL_free(s);
}

/* The wire number (epoch | sequence) of the first seq from *seq on whose
 * nonce_explicit is not among OpenSSL's; *seq left at RECORD_SEQ_MAX + 1
 * if there is none. */
static uint64_t
wire_next(const struct record_tx *tx, uint64_t *seq)
{
	uint64_t w;

	for (; *seq <= RECORD_SEQ_MAX; (*seq)++) {
		w = (uint64_t)tx->epoch << 48 | seq_to_wire(&tx->seq_perm, *seq);
		if (!is_gcm(tx->cipher) || w * RECORD_NONCE_MUL - tx->ossl_nonce >= RECORD_OSSL_RECORDS)
			return w;
	}
	return 0;
}

int
record_tx_init(struct record_tx *tx, const struct record_keys *k, uint16_t epoch,
    uint64_t first_seq, uint64_t ossl_nonce)
{
	struct record_sealer *s;

	memset(tx, 0, sizeof(*tx));
	if (first_seq > RECORD_SEQ_MAX)
		return -EINVAL;
	if ((s = OPENSSL_zalloc(sizeof(*s))) == NULL)
		return -ENOMEM;
	s->refs = 1;
	tx->sealer = s;
	if ((s->ctx = ctx_new(k, 1)) == NULL)
		return -EINVAL;
	s->cipher = tx->cipher = k->cipher;
	memcpy(s->iv, k->iv, k->iv_len);
	tx->epoch = epoch;
	tx->seq = first_seq;
	tx->ossl_nonce = ossl_nonce;
	record_perm_init(&tx->seq_perm, k->perm_key);
	return 0;
}

void
record_tx_free(struct record_tx *tx)
{
	record_sealer_put(tx->sealer);
	OPENSSL_cleanse(tx, sizeof(*tx));
}

/* The cipher half of a receiving direction (record.h). */
struct record_opener {
	EVP_CIPHER_CTX *ctx;
	enum record_cipher cipher;
	unsigned refs;
};

struct record_opener *
record_opener_get(struct record_opener *o)
{
	o->refs++;
	return o;
}

void
record_opener_put(struct record_opener *o)
{
	if (!o || --o->refs)
		return;
	EVP_CIPHER_CTX_free(o->ctx);
	OPENSSL_cleanse(o, sizeof(*o));
	OPENSSL_free(o);
}

int
record_rx_init(struct record_rx *rx, const struct record_keys *k, uint16_t epoch)
{
	struct record_opener *o;

	memset(rx, 0, sizeof(*rx));
	if ((o = OPENSSL_zalloc(sizeof(*o))) == NULL)
		return -ENOMEM;
	o->refs = 1;
	rx->opener = o;
	if ((o->ctx = ctx_new(k, 0)) == NULL)
		return -EINVAL;
	o->cipher = rx->cipher = k->cipher;
	record_perm_init(&rx->seq_perm, k->perm_key);
	rx->epoch = epoch;
	replay_init(&rx->win);
	return 0;
}

void
record_rx_free(struct record_rx *rx)
{
	record_opener_put(rx->opener);
	OPENSSL_cleanse(rx, sizeof(*rx));
}

static void
aad_make(uint8_t aad[AAD_LEN], uint8_t type, uint64_t seq, size_t plain_len)
{
	bytes_put64(aad, seq);
	aad[8] = type;
	bytes_put16(aad + 9, RECORD_VERSION);
	bytes_put16(aad + 11, (uint16_t)plain_len);
}

/* The AAD of the next record in TLS record mode.  Straight to the
 * provider: EVP_CIPHER_CTX_ctrl() would also read back the tag length,
 * which is 16 for both ciphers, at the price of a second call. */
static bool
tls_aad(EVP_CIPHER_CTX *ctx, uint8_t aad[AAD_LEN])
{
	OSSL_PARAM p[2];

	p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD, aad, AAD_LEN);
	p[1] = OSSL_PARAM_construct_end();
	return EVP_CIPHER_CTX_set_params(ctx, p) == 1;
}

enum record_status
record_frame(struct record_tx *tx, struct record_msg *m)
{
	return record_frame_type(tx, m, RECORD_TYPE_APPDATA);
}

enum record_status
record_frame_type(struct record_tx *tx, struct record_msg *m, uint8_t type)
{
	size_t pre = record_prefix(tx->cipher), len = m->in_len;
	uint8_t *p = m->out;
	uint64_t w, seq = tx->seq;

	m->out_len = 0;
	m->seq = 0;
	if (len > RECORD_MAX_PLAIN)
		return RECORD_ERR_MALFORMED;
	if (m->out_cap < len + pre + RECORD_TAG)
		return RECORD_ERR_SPACE;
	w = wire_next(tx, &seq);
	if (seq > RECORD_SEQ_MAX) {
		tx->seq = seq;
		return RECORD_ERR_EXHAUSTED;
	}
	m->seq = (uint64_t)tx->epoch << 48 | seq;
	/* The plaintext to its place first: it may overlap the header's. */
	if (m->in != p + pre)
		memmove(p + pre, m->in, len);
	p[0] = type;
	bytes_put16(p + 1, RECORD_VERSION);
	bytes_put64(p + 3, w);
	bytes_put16(p + 11, (uint16_t)(len + pre - RECORD_HDR + RECORD_TAG));
	if (is_gcm(tx->cipher))
		bytes_put64(p + RECORD_HDR, w * RECORD_NONCE_MUL);
	/* A framed record has its numbers, sealed or not: none is used twice. */
	m->out_len = len + pre + RECORD_TAG;
	tx->seq = seq + 1;
	tx->sealed++;
	return RECORD_OK;
}

enum record_status
record_finish(struct record_sealer *s, uint8_t *rec, size_t len)
{
	size_t pre = record_prefix(s->cipher);
	uint8_t aad[AAD_LEN], iv[NONCE_LEN];
	uint64_t nonce = 0;

	if (len < pre + RECORD_TAG || len - RECORD_HDR != bytes_get16(rec + 11))
		return RECORD_ERR_MALFORMED;
	if (is_gcm(s->cipher)) {
		/* The cipher writes nonce_explicit from its own counter:
		 * start it at the framed one unless it stands there. */
		nonce = bytes_get64(rec + RECORD_HDR);
		if (!s->synced || s->next != nonce) {
			nonce_make(s->iv, nonce, iv);
			if (EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_SET_IV_FIXED, -1, iv) != 1) {
				ERR_clear_error();
				s->synced = false;
				return RECORD_ERR_CRYPTO;
			}
		}
		s->next = nonce + 1;
		s->synced = true;
	}
	/* OpenSSL's TLS record mode, in place: for AES-GCM the cipher writes
	 * nonce_explicit and takes it off the AAD length; ChaCha20 XORs the
	 * AAD's epoch | sequence into the IV (RFC 7905).  One call per
	 * record. */
	aad_make(aad, rec[0], bytes_get64(rec + 3), len - RECORD_HDR - RECORD_TAG);
	if (!tls_aad(s->ctx, aad) ||
	    EVP_Cipher(s->ctx, rec + RECORD_HDR, rec + RECORD_HDR,
	    (unsigned int)(len - RECORD_HDR)) < 0) {
		ERR_clear_error();
		s->synced = false;
		return RECORD_ERR_CRYPTO;
	}
	/* A nonce other than the framed one would be one nobody accounted
	 * for: such a record never leaves. */
	if (is_gcm(s->cipher) && bytes_get64(rec + RECORD_HDR) != nonce) {
		s->synced = false;
		return RECORD_ERR_CRYPTO;
	}
	return RECORD_OK;
}

size_t
record_seal(struct record_tx *tx, struct record_msg *m, size_t n)
{
	size_t i, ok = 0;

	for (i = 0; i < n; i++) {
		m[i].status = record_frame(tx, &m[i]);
		if (m[i].status == RECORD_OK)
			m[i].status = record_finish(tx->sealer, m[i].out, m[i].out_len);
		if (m[i].status != RECORD_OK)
			m[i].out_len = 0;
		ok += m[i].status == RECORD_OK;
	}
	return ok;
}

enum record_status
record_check(const struct record_rx *rx, const uint8_t *r, size_t len, uint64_t *seq)
{
	size_t pre = record_prefix(rx->cipher);

	*seq = 0;
	if (len < pre + RECORD_TAG || len > RECORD_HDR + MAX_FRAGMENT ||
	    r[0] != RECORD_TYPE_APPDATA || bytes_get16(r + 1) != RECORD_VERSION ||
	    RECORD_HDR + (size_t)bytes_get16(r + 11) != len ||
	    len - pre - RECORD_TAG > RECORD_MAX_PLAIN)
		return RECORD_ERR_MALFORMED;
	*seq = bytes_get64(r + 3);
	if (*seq >> 48 != rx->epoch)
		return RECORD_ERR_EPOCH;
	*seq = (uint64_t)rx->epoch << 48 | seq_from_wire(&rx->seq_perm, *seq & RECORD_SEQ_MAX);
	switch (replay_check(&rx->win, *seq & RECORD_SEQ_MAX)) {
	case REPLAY_OK:
		return RECORD_OK;
	case REPLAY_DUP:
		return RECORD_ERR_DUP;
	default:
		return RECORD_ERR_OLD;
	}
}

/* Decrypt fragment frag (flen bytes) of the record numbered wire
 * (epoch | sequence, as on the wire) in place and verify its tag. */
static enum record_status
unseal(struct record_opener *o, uint8_t type, uint64_t wire, uint8_t *frag, size_t flen)
{
	uint8_t aad[AAD_LEN];

	if (flen < record_prefix(o->cipher) - RECORD_HDR + RECORD_TAG)
		return RECORD_ERR_MALFORMED;
	/* TLS record mode, in place over nonce_explicit, ciphertext and tag.
	 * The AAD length counts what the cipher takes off. */
	aad_make(aad, type, wire, flen);
	if (!tls_aad(o->ctx, aad)) {
		ERR_clear_error();
		return RECORD_ERR_CRYPTO;
	}
	if (EVP_Cipher(o->ctx, frag, frag, (unsigned int)flen) < 0) {
		ERR_clear_error();
		return RECORD_ERR_AUTH;
	}
	return RECORD_OK;
}

enum record_status
record_unseal(struct record_opener *o, uint8_t *rec, size_t len)
{
	if (len < RECORD_HDR)
		return RECORD_ERR_MALFORMED;
	return unseal(o, RECORD_TYPE_APPDATA, bytes_get64(rec + 3), rec + RECORD_HDR,
	    len - RECORD_HDR);
}

enum record_status
record_accept(struct record_rx *rx, uint64_t seq, enum record_status st)
{
	if (st == RECORD_ERR_AUTH)
		rx->failed++;
	if (st != RECORD_OK)
		return st;
	/* Checked again: a copy may have been accepted since the first look
	 * (both opened elsewhere at once).  RFC 6479: the window moves only
	 * for a record that authenticated. */
	switch (replay_check(&rx->win, seq & RECORD_SEQ_MAX)) {
	case REPLAY_OK:
		break;
	case REPLAY_DUP:
		return RECORD_ERR_DUP;
	default:
		return RECORD_ERR_OLD;
	}
	replay_update(&rx->win, seq & RECORD_SEQ_MAX);
	rx->opened++;
	return RECORD_OK;
}

static enum record_status
open_one(struct record_rx *rx, struct record_msg *m)
{
	size_t pre = record_prefix(rx->cipher), len, flen;
	const uint8_t *r = m->in;
	enum record_status st;
	uint8_t *work;

	if ((st = record_check(rx, r, m->in_len, &m->seq)) != RECORD_OK)
		return st;
	len = m->in_len - pre - RECORD_TAG;
	/* In place: the record itself when the caller asked for that, else
	 * a copy in out, and the plaintext moved to its start. */
	flen = m->in_len - RECORD_HDR;
	if (m->out == r + pre) {
		if (m->out_cap < len + RECORD_TAG)
			return RECORD_ERR_SPACE;
		work = (uint8_t *)(uintptr_t)(r + RECORD_HDR);
	} else {
		if (m->out_cap < flen)
			return RECORD_ERR_SPACE;
		work = m->out;
		memcpy(work, r + RECORD_HDR, flen);
	}
	st = record_accept(rx, m->seq, unseal(rx->opener, RECORD_TYPE_APPDATA,
	    bytes_get64(r + 3), work, flen));
	if (st != RECORD_OK)
		return st;
	if (work == m->out && pre > RECORD_HDR)
		memmove(m->out, m->out + (pre - RECORD_HDR), len);
	m->out_len = len;
	return RECORD_OK;
}

size_t
record_open(struct record_rx *rx, struct record_msg *m, size_t n)
{
	size_t i, ok = 0;

	for (i = 0; i < n; i++) {
		m[i].out_len = 0;
		m[i].seq = 0;
		m[i].status = open_one(rx, &m[i]);
		ok += m[i].status == RECORD_OK;
	}
	return ok;
}

enum record_status
record_open_alert(const struct record_keys *k, uint16_t epoch, const uint8_t *rec, size_t len,
    uint8_t alert[2])
{
	struct record_opener o = { .cipher = k->cipher };
	size_t pre = record_prefix(k->cipher);
	uint8_t frag[RECORD_GCM_EXPLICIT + 2 + RECORD_TAG];
	enum record_status st;

	if (len != pre + 2 + RECORD_TAG || rec[0] != RECORD_TYPE_ALERT ||
	    bytes_get16(rec + 1) != RECORD_VERSION ||
	    RECORD_HDR + (size_t)bytes_get16(rec + 11) != len)
		return RECORD_ERR_MALFORMED;
	if (bytes_get16(rec + 3) != epoch)
		return RECORD_ERR_EPOCH;
	if ((o.ctx = ctx_new(k, 0)) == NULL)
		return RECORD_ERR_CRYPTO;
	memcpy(frag, rec + RECORD_HDR, len - RECORD_HDR);
	st = unseal(&o, RECORD_TYPE_ALERT, bytes_get64(rec + 3), frag, len - RECORD_HDR);
	EVP_CIPHER_CTX_free(o.ctx);
	if (st == RECORD_OK)
		memcpy(alert, frag + (pre - RECORD_HDR), 2);
	OPENSSL_cleanse(frag, sizeof(frag));
	return st;
}
