/* psk.h - preshared keys ([peer] preshared-key = FILE): the file format,
 * reading and checking one, and writing a new one (touctl genpsk).
 *
 * A preshared-key file holds the base64 of PSK_LEN bytes (44 characters)
 * and an optional newline.  It must be a regular file owned by root, by
 * the user reading it or by the one toud runs as ([interface] user), and
 * neither readable nor writable by others (nor writable by its group):
 * psk_read() refuses anything else.  What the key does
 * is in record.h (record_keys_psk()) and doc/protocol.md. */
#ifndef TOUD_PSK_H
#define TOUD_PSK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct conf;
struct conf_error;

#define PSK_LEN 32
#define PSK_B64_LEN 44                  /* base64 of PSK_LEN bytes */

/* Why the file's metadata (st) make it unfit to hold a secret, a
 * preshared key or the metrics token, or NULL: it must be a regular file
 * of root, of the caller or of owner (the user toud runs as after
 * start-up), that neither its group may write nor others read or write. */
const char *psk_file_unfit(const struct stat *st, uid_t owner);
/* Read up to size bytes of a file that holds a secret (a preshared key, a
 * proxy's credentials) into buf, after checking it (psk_file_unfit): the
 * bytes read, or -errno with the reason (without the file name) in err.
 * The caller cleanses buf. */
ssize_t psk_secret_read(const char *file, uid_t owner, char *buf, size_t size, char *err,
    size_t errlen);
/* Read and check the key in file into psk; besides root and the caller,
 * owner (the user toud runs as; (uid_t)-1 for none) may own it.  0, or
 * -errno with the reason (without the file name) in err. */
int psk_read(const char *file, uid_t owner, uint8_t psk[PSK_LEN], char *err, size_t errlen);
/* Read the preshared key of every [peer] of c that names one (sets
 * has_psk and psk).  0, or -errno with err naming the file, the line and
 * the peer. */
int psk_load_conf(struct conf *c, struct conf_error *err);
/* touctl genpsk: PSK_LEN random bytes, base64 and a newline, into out
 * (PSK_B64_LEN + 2 bytes).  0 or -errno. */
int psk_generate(char out[PSK_B64_LEN + 2]);
/* Write text to a new file (mode 0600, refused if it exists).  0 or
 * -errno with the reason in err. */
int psk_write_file(const char *file, const char *text, char *err, size_t errlen);

#endif
