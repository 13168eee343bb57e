/* tcp_psk.c - sealing and opening the TCP transport's frames for a peer
 * with a preshared key (tcp_psk.h).
 *
 * AES-256-GCM whatever cipher TLS chose: the preshared key is there
 * against a quantum computer that breaks the key exchange later, against
 * which a 256-bit key keeps 128 bits (a 128-bit one, 64); hosts that run
 * toud have AES instructions, where it is faster than ChaCha20-Poly1305;
 * and one fixed cipher keeps the key log line and a dissector simple. */
#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "bytes.h"
#include "record.h"
#include "tcp_psk.h"

int
tcp_psk_derive(const uint8_t exporter[TCP_PSK_EXPORTER_LEN], const uint8_t psk[TCP_PSK_LEN],
    struct tcp_psk_keys *k)
{
	uint8_t okm[sizeof(*k)];
	uint8_t *w = okm;
	int ret;

	if (!exporter || !psk || !k)
		return -EINVAL;
	ret = record_hkdf(psk, TCP_PSK_LEN, exporter, TCP_PSK_EXPORTER_LEN, TCP_PSK_INFO, okm,
	    sizeof(okm));
	if (ret == 0) {
		/* In the order of the key block: keys, then IVs. */
		memcpy(k->client_key, w, TCP_PSK_KEY_LEN);
		memcpy(k->server_key, w += TCP_PSK_KEY_LEN, TCP_PSK_KEY_LEN);
		memcpy(k->client_iv, w += TCP_PSK_KEY_LEN, TCP_PSK_IV_LEN);
		memcpy(k->server_iv, w + TCP_PSK_IV_LEN, TCP_PSK_IV_LEN);
	}
	OPENSSL_cleanse(okm, sizeof(okm));
	return ret;
}

static int
dir_init(struct tcp_psk_dir *d, const uint8_t key[TCP_PSK_KEY_LEN],
    const uint8_t iv[TCP_PSK_IV_LEN], int enc)
{
	EVP_CIPHER_CTX *ctx;
	EVP_CIPHER *c;
	int ok;

	if ((c = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL)) == NULL)
		return -EIO;
	ok = (ctx = EVP_CIPHER_CTX_new()) != NULL &&
	    EVP_CipherInit_ex(ctx, c, NULL, key, NULL, enc) == 1 &&
	    EVP_CIPHER_CTX_get_iv_length(ctx) == TCP_PSK_IV_LEN;
	EVP_CIPHER_free(c);             /* the context keeps its reference */
	if (!ok) {
		EVP_CIPHER_CTX_free(ctx);
		ERR_clear_error();
		return -EIO;
	}
	d->ctx = ctx;
	memcpy(d->iv, iv, TCP_PSK_IV_LEN);
	d->n = 0;
	return 0;
}

int
tcp_psk_init(struct tcp_psk *s, const struct tcp_psk_keys *k, bool client)
{
	memset(s, 0, sizeof(*s));
	if (dir_init(&s->seal, client ? k->client_key : k->server_key,
	    client ? k->client_iv : k->server_iv, 1) < 0 ||
	    dir_init(&s->open, client ? k->server_key : k->client_key,
	    client ? k->server_iv : k->client_iv, 0) < 0)
		return -EIO;
	return 0;
}

void
tcp_psk_free(struct tcp_psk *s)
{
	EVP_CIPHER_CTX_free(s->seal.ctx);
	EVP_CIPHER_CTX_free(s->open.ctx);
	OPENSSL_cleanse(s, sizeof(*s));
}

/* The nonce of d's next frame: its IV XOR the frame number. */
static void
nonce(const struct tcp_psk_dir *d, uint8_t out[TCP_PSK_IV_LEN])
{
	uint8_t n[8];
	unsigned i;

	bytes_put64(n, d->n);
	memcpy(out, d->iv, TCP_PSK_IV_LEN);
	for (i = 0; i < 8; i++)
		out[TCP_PSK_IV_LEN - 8 + i] ^= n[i];
}

ssize_t
tcp_psk_seal(struct tcp_psk *s, const uint8_t *in, size_t len, uint8_t *out)
{
	EVP_CIPHER_CTX *ctx = s->seal.ctx;
	uint8_t iv[TCP_PSK_IV_LEN];
	int n, fin;

	if (!ctx)
		return -EINVAL;
	if (len > INT32_MAX - TCP_PSK_TAG_LEN)
		return -EMSGSIZE;
	if (s->seal.n == UINT64_MAX)    /* never reused: the connection must end first */
		return -EOVERFLOW;
	nonce(&s->seal, iv);
	if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, 1) != 1 ||
	    EVP_CipherUpdate(ctx, out, &n, in, (int)len) != 1 ||
	    EVP_CipherFinal_ex(ctx, out + n, &fin) != 1 ||
	    (size_t)n + (size_t)fin != len ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, TCP_PSK_TAG_LEN, out + len) != 1) {
		ERR_clear_error();
		return -EIO;
	}
	s->seal.n++;
	return (ssize_t)(len + TCP_PSK_TAG_LEN);
}

ssize_t
tcp_psk_open(struct tcp_psk *s, uint8_t *buf, size_t len)
{
	EVP_CIPHER_CTX *ctx = s->open.ctx;
	uint8_t iv[TCP_PSK_IV_LEN];
	size_t plen;
	int n, fin;

	if (!ctx)
		return -EINVAL;
	if (len < TCP_PSK_TAG_LEN || len > INT32_MAX)
		return -EBADMSG;
	if (s->open.n == UINT64_MAX)
		return -EOVERFLOW;
	plen = len - TCP_PSK_TAG_LEN;
	nonce(&s->open, iv);
	if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, 0) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, TCP_PSK_TAG_LEN, buf + plen) != 1 ||
	    EVP_CipherUpdate(ctx, buf, &n, buf, (int)plen) != 1 ||
	    EVP_CipherFinal_ex(ctx, buf + n, &fin) != 1) {
		ERR_clear_error();
		return -EBADMSG;
	}
	s->open.n++;
	s->opened = true;
	return (ssize_t)plen;
}
