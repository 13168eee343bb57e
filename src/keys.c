/* keys.c - this node's identity outside the handshake: key generation and
 * the self-signed certificate (touctl genkey), PEM writing, fingerprints of
 * certificates (touctl fingerprint, the daemon's own, the one a peer
 * presents), CA files loaded once per configuration, and the CA-and-name
 * check of CA peers.  No sockets, no event loop; dtls.c calls keys_cert_fp()
 * and the authorize callback keys_verify_ca_store(). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "keys.h"
#include "util.h"

void
keys_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *
keys_ssl_reason(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

	return r != NULL ? r : "unknown error";
}

int
keys_no_passwd_cb(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

/* --- fingerprints ---------------------------------------------------- */

int
keys_cert_fp(X509 *x, uint8_t fp[KEYS_FP_LEN])
{
	X509_PUBKEY *pk = X509_get_X509_PUBKEY(x);
	unsigned char *der = NULL;
	unsigned int mdlen = 0;
	int n, ok;

	if (pk == NULL || (n = i2d_X509_PUBKEY(pk, &der)) <= 0)
		return -EINVAL;
	ok = EVP_Digest(der, (size_t)n, fp, &mdlen, EVP_sha256(), NULL) == 1 &&
	    mdlen == KEYS_FP_LEN;
	OPENSSL_free(der);
	return ok ? 0 : -EIO;
}

/* --- CA mode --------------------------------------------------------- */

static bool
cn_equal(X509 *x, const char *name)
{
	X509_NAME *subj = X509_get_subject_name(x);
	size_t nlen = strlen(name);
	int i = -1;

	while ((i = X509_NAME_get_index_by_NID(subj, NID_commonName, i)) >= 0) {
		ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
		unsigned char *u = NULL;
		int n = ASN1_STRING_to_UTF8(&u, d);
		bool eq = n >= 0 && (size_t)n == nlen && memcmp(u, name, nlen) == 0;

		OPENSSL_free(u);
		if (eq)
			return true;
	}
	return false;
}

bool
keys_verify_ca(struct x509_store_ctx_st *xs, const char *ca_file, const char *name)
{
	X509 *leaf;

	if (xs == NULL || (leaf = X509_STORE_CTX_get0_cert(xs)) == NULL)
		return false;
	return keys_verify_ca_chain(leaf, X509_STORE_CTX_get0_untrusted(xs), ca_file, name);
}

struct x509_store_st *
keys_ca_load(const char *ca_file)
{
	X509_STORE *store;

	ERR_set_mark();
	if ((store = X509_STORE_new()) != NULL && X509_STORE_load_file(store, ca_file) != 1) {
		X509_STORE_free(store);
		store = NULL;
	}
	ERR_pop_to_mark();
	return store;
}

void
keys_ca_free(struct x509_store_st *store)
{
	X509_STORE_free(store);
}

struct keys_ca_cache {
	struct keys_ca_entry {
		struct keys_ca_entry *next;
		X509_STORE *store;              /* NULL: the file could not be read */
		char file[];
	} *head;
};

struct keys_ca_cache *
keys_ca_cache_new(void)
{
	return calloc(1, sizeof(struct keys_ca_cache));
}

struct x509_store_st *
keys_ca_cache_load(struct keys_ca_cache *cache, const char *ca_file)
{
	struct keys_ca_entry *e;
	size_t len = strlen(ca_file);

	for (e = cache->head; e != NULL; e = e->next)
		if (strcmp(e->file, ca_file) == 0)
			break;
	if (e == NULL) {
		if ((e = malloc(sizeof(*e) + len + 1)) == NULL)
			return keys_ca_load(ca_file);
		memcpy(e->file, ca_file, len + 1);
		e->store = keys_ca_load(ca_file);
		e->next = cache->head;
		cache->head = e;
	}
	if (e->store == NULL || X509_STORE_up_ref(e->store) != 1)
		return NULL;
	return e->store;
}

void
keys_ca_cache_free(struct keys_ca_cache *cache)
{
	struct keys_ca_entry *e, *next;

	if (cache == NULL)
		return;
	for (e = cache->head; e != NULL; e = next) {
		next = e->next;
		X509_STORE_free(e->store);
		free(e);
	}
	free(cache);
}

bool
keys_verify_ca_store(struct x509_st *leaf, struct stack_st_X509 *untrusted,
    struct x509_store_st *store, const char *name)
{
	X509_STORE_CTX *vx = NULL;
	bool ok = false;

	if (leaf == NULL || store == NULL || name == NULL || *name == '\0')
		return false;
	/* Leave the handshake's own error queue as it was. */
	ERR_set_mark();
	/* The name first: it is cheap, and with many CA peers only the one
	 * whose name the certificate carries pays for the chain. */
	if (X509_check_host(leaf, name, strlen(name), X509_CHECK_FLAG_NO_WILDCARDS, NULL) != 1 &&
	    !cn_equal(leaf, name))
		goto out;
	if ((vx = X509_STORE_CTX_new()) == NULL ||
	    X509_STORE_CTX_init(vx, store, leaf, untrusted) != 1)
		goto out;
	ok = X509_verify_cert(vx) == 1;
out:
	X509_STORE_CTX_free(vx);
	ERR_pop_to_mark();
	return ok;
}

bool
keys_verify_ca_chain(struct x509_st *leaf, struct stack_st_X509 *untrusted, const char *ca_file,
    const char *name)
{
	X509_STORE *store;
	bool ok;

	if (leaf == NULL || ca_file == NULL || name == NULL || *name == '\0')
		return false;
	if ((store = keys_ca_load(ca_file)) == NULL)
		return false;
	ok = keys_verify_ca_store(leaf, untrusted, store, name);
	X509_STORE_free(store);
	return ok;
}

/* --- keys ------------------------------------------------------------ */

static int
add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, v3, nid, value);
	int ok;

	if (ext == NULL)
		return -EINVAL;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -EINVAL;
}

static X509 *
cert_selfsign(EVP_PKEY *pkey)
{
	X509 *x = X509_new();
	BIGNUM *bn = BN_new();
	X509_NAME *name;
	X509V3_CTX v3;

	if (x == NULL || bn == NULL)
		goto fail;
	/* 127 random bits with the top one set: positive, nonzero, 16 bytes */
	if (!X509_set_version(x, X509_VERSION_3) ||
	    !BN_rand(bn, 127, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) ||
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL)
		goto fail;
	if (X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), 36525, 0, NULL) == NULL)
		goto fail;
	name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (const unsigned char *)"toud", -1, -1, 0) ||
	    !X509_set_issuer_name(x, name) || !X509_set_pubkey(x, pkey))
		goto fail;
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	if (add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, &v3, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, &v3, NID_subject_key_identifier, "hash") < 0)
		goto fail;
	if (X509_sign(x, pkey, EVP_sha256()) <= 0)
		goto fail;
	BN_free(bn);
	return x;
fail:
	BN_free(bn);
	X509_free(x);
	return NULL;
}

/* Write PEM into an open file and close it. */
static int
pem_write_fd(int fd, EVP_PKEY *pkey, X509 *x)
{
	BIO *b = BIO_new_fd(fd, BIO_NOCLOSE);
	int ok;

	if (b == NULL) {
		close(fd);
		return -ENOMEM;
	}
	errno = 0;
	ok = pkey != NULL ? PEM_write_bio_PrivateKey(b, pkey, NULL, NULL, 0, NULL, NULL) :
	    PEM_write_bio_X509(b, x);
	ok = ok && BIO_flush(b) == 1;
	BIO_free(b);
	if (!ok) {
		int e = errno != 0 ? errno : EIO;

		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* Write the key pair next to its final names, then rename both into place:
 * a reader sees the old pair or the new one, never a key without its
 * certificate.  The key file is created 0600 and never exists wider. */
int
keys_genkey(const char *dir, uint8_t fp[KEYS_FP_LEN], char *err, size_t errlen)
{
	char kpath[PATH_MAX], cpath[PATH_MAX], ktmp[PATH_MAX], ctmp[PATH_MAX];
	EVP_PKEY *pkey = NULL;
	X509 *x = NULL;
	int fd, ret;

	if ((size_t)snprintf(kpath, sizeof(kpath), "%s/key.pem", dir) >= sizeof(kpath) ||
	    (size_t)snprintf(cpath, sizeof(cpath), "%s/cert.pem", dir) >= sizeof(cpath) ||
	    (size_t)snprintf(ktmp, sizeof(ktmp), "%s/.key.pem.new", dir) >= sizeof(ktmp) ||
	    (size_t)snprintf(ctmp, sizeof(ctmp), "%s/.cert.pem.new", dir) >= sizeof(ctmp)) {
		keys_seterr(err, errlen, "%s: %s", dir, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	if ((pkey = EVP_EC_gen("P-256")) == NULL || (x = cert_selfsign(pkey)) == NULL ||
	    keys_cert_fp(x, fp) < 0) {
		keys_seterr(err, errlen, "cannot generate a key: %s", keys_ssl_reason());
		ret = -EIO;
		goto out;
	}
	/* Left over from an interrupted run, or planted: unlink() removes a
	 * symlink itself, and O_EXCL | O_NOFOLLOW never follow one made since. */
	unlink(ktmp);
	unlink(ctmp);
	fd = open(ktmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		keys_seterr(err, errlen, "%s: %s", ktmp, strerror(errno));
		goto out;
	}
	if ((ret = pem_write_fd(fd, pkey, NULL)) < 0) {
		keys_seterr(err, errlen, "%s: %s", ktmp, strerror(-ret));
		goto out;
	}
	fd = open(ctmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		keys_seterr(err, errlen, "%s: %s", ctmp, strerror(errno));
		goto out;
	}
	/* Whatever the umask: the certificate is public. */
	if (fchmod(fd, 0644) < 0 || (ret = pem_write_fd(fd, NULL, x)) < 0) {
		if (ret == 0) {
			ret = -errno;
			close(fd);
		}
		keys_seterr(err, errlen, "%s: %s", ctmp, strerror(-ret));
		goto out;
	}
	if (rename(ktmp, kpath) < 0 || rename(ctmp, cpath) < 0) {
		ret = -errno;
		keys_seterr(err, errlen, "%s: %s", dir, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (ret < 0) {
		unlink(ktmp);
		unlink(ctmp);
	}
	EVP_PKEY_free(pkey);
	X509_free(x);
	ERR_clear_error();
	return ret;
}

/* The SHA-256 of a private key's public half, as DER SubjectPublicKeyInfo:
 * what keys_cert_fp() hashes for the certificate of that key. */
static int
keys_pkey_fp(EVP_PKEY *pkey, uint8_t fp[KEYS_FP_LEN])
{
	unsigned char *der = NULL;
	unsigned int mdlen = 0;
	int n, ok;

	if ((n = i2d_PUBKEY(pkey, &der)) <= 0)
		return -EINVAL;
	ok = EVP_Digest(der, (size_t)n, fp, &mdlen, EVP_sha256(), NULL) == 1 &&
	    mdlen == KEYS_FP_LEN;
	OPENSSL_free(der);
	return ok ? 0 : -EIO;
}

int
keys_cert_fingerprint(const char *file, uint8_t fp[KEYS_FP_LEN], char *err, size_t errlen)
{
	BIO *bio = BIO_new_file(file, "r");
	EVP_PKEY *pkey;
	X509 *x;
	int ret;

	if (bio == NULL) {
		ret = errno ? -errno : -EIO;
		keys_seterr(err, errlen, "%s: %s", file, strerror(-ret));
		ERR_clear_error();
		return ret;
	}
	if ((x = PEM_read_bio_X509(bio, NULL, keys_no_passwd_cb, NULL)) != NULL) {
		if ((ret = keys_cert_fp(x, fp)) < 0)
			keys_seterr(err, errlen, "%s: no public key", file);
		X509_free(x);
	} else if (BIO_reset(bio) == 0 &&
	    (pkey = PEM_read_bio_PrivateKey(bio, NULL, keys_no_passwd_cb, NULL)) != NULL) {
		if ((ret = keys_pkey_fp(pkey, fp)) < 0)
			keys_seterr(err, errlen, "%s: no public key", file);
		EVP_PKEY_free(pkey);
	} else {
		keys_seterr(err, errlen, "%s: neither a PEM certificate nor an unencrypted PEM "
		    "private key", file);
		ret = -EINVAL;
	}
	BIO_free(bio);
	ERR_clear_error();
	return ret;
}

void
keys_fp_format(const uint8_t fp[KEYS_FP_LEN], char out[7 + 2 * KEYS_FP_LEN + 1])
{
	memcpy(out, "sha256:", 7);
	util_hex(fp, KEYS_FP_LEN, out + 7);
}
