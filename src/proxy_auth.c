/* proxy_auth.c - a proxy's credentials file (proxy_auth.h). */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "conf.h"
#include "proxy_auth.h"
#include "psk.h"
#include "util.h"

int
proxy_auth_encode(const char *text, size_t n, char **out, char *err, size_t errlen)
{
	const char *colon;
	size_t i;

	if (n > 0 && text[n - 1] == '\n')
		n--;
	if (n > 0 && text[n - 1] == '\r')
		n--;
	if (n > PROXY_AUTH_MAX) {
		snprintf(err, errlen, "longer than %d bytes", PROXY_AUTH_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++)
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) {
			snprintf(err, errlen, text[i] == '\n' ? "more than one line (it holds "
			    "one, user:password)" : "a control character in it");
			return -EINVAL;
		}
	if (!(colon = memchr(text, ':', n)) || colon == text) {
		snprintf(err, errlen, "not user:password on one line");
		return -EINVAL;
	}
	if (!(*out = malloc(4 * ((n + 2) / 3) + 1)))
		return -ENOMEM;
	EVP_EncodeBlock((unsigned char *)*out, (const unsigned char *)text, (int)n);
	return 0;
}

/* The credentials of file into *out (base64), or -errno and err. */
static int
proxy_auth_read(const char *file, uid_t owner, char **out, char *err, size_t errlen)
{
	char text[PROXY_AUTH_MAX + 4];
	ssize_t n;
	int r;

	if ((n = psk_secret_read(file, owner, text, sizeof(text), err, errlen)) < 0)
		return (int)n;
	r = proxy_auth_encode(text, (size_t)n, out, err, errlen);
	OPENSSL_cleanse(text, sizeof(text));
	return r;
}

int
proxy_auth_load_conf(struct conf *c, struct conf_error *err)
{
	const struct passwd *pw = c->iface.user ? getpwnam(c->iface.user) : NULL;
	uid_t owner = pw ? pw->pw_uid : (uid_t)-1;
	char why[160];
	size_t x;
	int r;

	for (x = 0; x < c->n_peers; x++) {
		struct conf_peer *p = &c->peers[x];

		if (!p->proxy_auth_file || p->proxy_auth)
			continue;
		if ((r = proxy_auth_read(p->proxy_auth_file, owner, &p->proxy_auth, why,
		    sizeof(why))) < 0) {
			util_strlcpy(err->file, conf_line_of(c, p->proxy_auth_line, &err->line),
			    sizeof(err->file));
			snprintf(err->msg, sizeof(err->msg), "peer \"%s\": proxy-credentials "
			    "'%s': %s", p->name, p->proxy_auth_file, why);
			return r;
		}
	}
	return 0;
}
