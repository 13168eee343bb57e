/* mlkem.c - ML-KEM-768 through OpenSSL's EVP interface (mlkem.h). */
#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "mlkem.h"

static CRYPTO_ONCE probe_once = CRYPTO_ONCE_STATIC_INIT;
static bool have_mlkem;

/* The algorithm is there when a key of it can be generated. */
static void
probe(void)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, MLKEM_NAME, NULL);

	have_mlkem = ctx != NULL && EVP_PKEY_keygen_init(ctx) == 1;
	EVP_PKEY_CTX_free(ctx);
	ERR_clear_error();
}

bool
mlkem_available(void)
{
	if (!CRYPTO_THREAD_run_once(&probe_once, probe))
		return false;
	return have_mlkem;
}

const char *
mlkem_openssl_version(void)
{
	return OpenSSL_version(OPENSSL_VERSION_STRING);
}

int
mlkem_keygen(EVP_PKEY **dk, uint8_t ek[MLKEM_EK_LEN])
{
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *k = NULL;
	size_t len = MLKEM_EK_LEN;
	int ret = -EIO;

	*dk = NULL;
	if (!mlkem_available())
		return -ENOTSUP;
	if ((ctx = EVP_PKEY_CTX_new_from_name(NULL, MLKEM_NAME, NULL)) == NULL ||
	    EVP_PKEY_keygen_init(ctx) != 1 || EVP_PKEY_keygen(ctx, &k) != 1 ||
	    EVP_PKEY_get_raw_public_key(k, ek, &len) != 1 || len != MLKEM_EK_LEN)
		goto out;
	*dk = k;
	k = NULL;
	ret = 0;
out:
	EVP_PKEY_free(k);
	EVP_PKEY_CTX_free(ctx);
	ERR_clear_error();
	return ret;
}

int
mlkem_encap(const uint8_t ek[MLKEM_EK_LEN], uint8_t ct[MLKEM_CT_LEN], uint8_t ss[MLKEM_SS_LEN])
{
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *k = NULL;
	size_t ctlen = MLKEM_CT_LEN, sslen = MLKEM_SS_LEN;
	int ret = -EIO;

	if (!mlkem_available())
		return -ENOTSUP;
	/* Importing checks the key (FIPS 203 7.2: its modulus check). */
	if ((k = EVP_PKEY_new_raw_public_key_ex(NULL, MLKEM_NAME, NULL, ek,
	    MLKEM_EK_LEN)) == NULL) {
		ret = -EINVAL;
		goto out;
	}
	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL)) == NULL ||
	    EVP_PKEY_encapsulate_init(ctx, NULL) != 1 ||
	    EVP_PKEY_encapsulate(ctx, ct, &ctlen, ss, &sslen) != 1 ||
	    ctlen != MLKEM_CT_LEN || sslen != MLKEM_SS_LEN)
		goto out;
	ret = 0;
out:
	if (ret < 0)
		OPENSSL_cleanse(ss, MLKEM_SS_LEN);
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(k);
	ERR_clear_error();
	return ret;
}

int
mlkem_decap(EVP_PKEY *dk, const uint8_t ct[MLKEM_CT_LEN], uint8_t ss[MLKEM_SS_LEN])
{
	EVP_PKEY_CTX *ctx = NULL;
	size_t sslen = MLKEM_SS_LEN;
	int ret = -EIO;

	if (dk == NULL)
		return -EINVAL;
	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, dk, NULL)) == NULL ||
	    EVP_PKEY_decapsulate_init(ctx, NULL) != 1 ||
	    EVP_PKEY_decapsulate(ctx, ss, &sslen, ct, MLKEM_CT_LEN) != 1 ||
	    sslen != MLKEM_SS_LEN)
		goto out;
	ret = 0;
out:
	if (ret < 0)
		OPENSSL_cleanse(ss, MLKEM_SS_LEN);
	EVP_PKEY_CTX_free(ctx);
	ERR_clear_error();
	return ret;
}

void
mlkem_free(EVP_PKEY *dk)
{
	EVP_PKEY_free(dk);
}
