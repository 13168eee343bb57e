/* proxy_auth.h - a proxy's credentials ([peer] proxy-credentials = FILE):
 * the file holds "user:password" on one line (a final newline allowed),
 * and is checked as a preshared key's is (psk.h: root's, the reader's or
 * toud's user's own, not readable by others).  What goes on the wire is
 * the base64 of that line, in a Proxy-Authorization: Basic header
 * (RFC 7617); the password is never logged nor printed. */
#ifndef TOUD_PROXY_AUTH_H
#define TOUD_PROXY_AUTH_H

#include <stddef.h>
#include <sys/types.h>

struct conf;
struct conf_error;

/* The longest "user:password" accepted. */
#define PROXY_AUTH_MAX 255

/* The base64 of the credentials in text (n bytes, no NUL needed) into a
 * new string (*out), or -EINVAL with the reason in err: no ':', an empty
 * user, a control character, a second line, longer than PROXY_AUTH_MAX.
 * Pure. */
int proxy_auth_encode(const char *text, size_t n, char **out, char *err, size_t errlen);
/* Read the credentials of every [peer] of c that names a file (sets
 * proxy_auth).  0, or -errno with err naming the file, line and peer. */
int proxy_auth_load_conf(struct conf *c, struct conf_error *err);

#endif
