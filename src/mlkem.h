/* mlkem.h - ML-KEM-768 (FIPS 203) through OpenSSL's EVP interface: key
 * generation, encapsulation, decapsulation.  No I/O.
 *
 * The algorithm is looked up at run time (OpenSSL 3.5 and later have it;
 * 3.0 has the same EVP interface without the algorithm), so one build
 * runs on both: mlkem_available() says whether this process has it. */
#ifndef TOUD_MLKEM_H
#define TOUD_MLKEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MLKEM_NAME "ML-KEM-768"
#define MLKEM_EK_LEN 1184               /* encapsulation (public) key */
#define MLKEM_CT_LEN 1088               /* ciphertext */
#define MLKEM_SS_LEN 32                 /* shared secret */

struct evp_pkey_st;

/* Whether the OpenSSL this process runs with has ML-KEM-768 (decided
 * once, on the first call). */
bool mlkem_available(void);
/* The version of that OpenSSL ("3.0.17"), for messages. */
const char *mlkem_openssl_version(void);
/* A new key pair: the decapsulation key in *dk (free it with
 * mlkem_free()), the encapsulation key in ek.  0 or -errno (-ENOTSUP
 * without ML-KEM). */
int mlkem_keygen(struct evp_pkey_st **dk, uint8_t ek[MLKEM_EK_LEN]);
/* Encapsulate to ek: the ciphertext and the shared secret.  0 or -errno
 * (-EINVAL: ek is not a valid key). */
int mlkem_encap(const uint8_t ek[MLKEM_EK_LEN], uint8_t ct[MLKEM_CT_LEN],
    uint8_t ss[MLKEM_SS_LEN]);
/* Decapsulate ct with dk.  A ciphertext that was changed on the way gives
 * a shared secret unrelated to the sender's (implicit rejection), not an
 * error.  0 or -errno. */
int mlkem_decap(struct evp_pkey_st *dk, const uint8_t ct[MLKEM_CT_LEN],
    uint8_t ss[MLKEM_SS_LEN]);
void mlkem_free(struct evp_pkey_st *dk);

#endif
