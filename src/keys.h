/* keys.h - key generation, PEM files, fingerprints and CA checks (keys.c). */
#ifndef TOUD_KEYS_H
#define TOUD_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct x509_st;
struct x509_store_ctx_st;
struct stack_st_X509;

#define KEYS_FP_LEN 32                 /* SHA-256 of the SubjectPublicKeyInfo */

/* touctl genkey: DIR/key.pem (0600) and DIR/cert.pem, replaced atomically;
 * fp gets the new key's fingerprint. */
int keys_genkey(const char *dir, uint8_t fp[KEYS_FP_LEN], char *err, size_t errlen);
/* The fingerprint of the key in a PEM certificate file, or of a PEM private
 * key file's public key (the same value). */
int keys_cert_fingerprint(const char *file, uint8_t fp[KEYS_FP_LEN], char *err,
    size_t errlen);
/* The fingerprint of a certificate's public key. */
int keys_cert_fp(struct x509_st *x, uint8_t fp[KEYS_FP_LEN]);
/* "sha256:<64 hex>" */
/* Shared with dtls.c: format an error into err (if any); the reason of
 * the newest OpenSSL error (the caller clears the queue); a pass-phrase
 * callback that never prompts. */
void keys_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *keys_ssl_reason(void);
int keys_no_passwd_cb(char *buf, int size, int rwflag, void *u);
void keys_fp_format(const uint8_t fp[KEYS_FP_LEN], char out[7 + 2 * KEYS_FP_LEN + 1]);
/* Check a presented chain against the CA in ca_file and the expected
 * common name.  true if it verifies. */
bool keys_verify_ca(struct x509_store_ctx_st *xs, const char *ca_file, const char *name);
/* The same for a leaf certificate and the chain that came with it. */
/* A CA file loaded once (per configuration: peer.c keeps one per CA
 * peer), so a handshake never reads files; NULL if it cannot be read. */
struct x509_store_st;
struct x509_store_st *keys_ca_load(const char *ca_file);
void keys_ca_free(struct x509_store_st *store);
bool keys_verify_ca_store(struct x509_st *leaf, struct stack_st_X509 *untrusted,
    struct x509_store_st *store, const char *name);
/* The CA files of one configuration, each read once however many peers
 * name it: keys_ca_cache_load() returns a store of its own (free it with
 * keys_ca_free) that shares the certificates with the other peers'. */
struct keys_ca_cache;
struct keys_ca_cache *keys_ca_cache_new(void);
struct x509_store_st *keys_ca_cache_load(struct keys_ca_cache *cache, const char *ca_file);
void keys_ca_cache_free(struct keys_ca_cache *cache);
bool keys_verify_ca_chain(struct x509_st *leaf, struct stack_st_X509 *untrusted,
    const char *ca_file, const char *name);

#endif
