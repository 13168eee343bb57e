/* psk.c - preshared-key files (psk.h): read, check, generate. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "conf.h"
#include "psk.h"
#include "util.h"

const char *
psk_file_unfit(const struct stat *st, uid_t owner)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != geteuid() && st->st_uid != 0 && st->st_uid != owner)
		return "owned by another user (it must be root's or toud's own)";
	if (st->st_mode & (S_IROTH | S_IWOTH))
		return "readable or writable by others; chmod 600 it";
	if (st->st_mode & S_IWGRP)
		return "writable by its group; chmod 600 it";
	return NULL;
}

/* The key in text (n bytes): PSK_B64_LEN base64 characters, then at most
 * one newline. */
static int
psk_decode(const char *text, size_t n, uint8_t psk[PSK_LEN])
{
	uint8_t raw[PSK_LEN + 3];
	int got;

	if (n > 0 && text[n - 1] == '\n')
		n--;
	if (n != PSK_B64_LEN || text[n - 1] != '=' || text[n - 2] == '=')
		return -EINVAL;
	/* EVP_DecodeBlock counts the padding as a zero byte. */
	got = EVP_DecodeBlock(raw, (const unsigned char *)text, (int)n);
	if (got != PSK_LEN + 1) {
		OPENSSL_cleanse(raw, sizeof(raw));
		return -EINVAL;
	}
	memcpy(psk, raw, PSK_LEN);
	OPENSSL_cleanse(raw, sizeof(raw));
	return 0;
}

/* Open a file that holds a secret after checking it (psk_file_unfit):
 * the descriptor, or -errno with the reason in err. */
static int
secret_open(const char *file, uid_t owner, char *err, size_t errlen)
{
	const char *why;
	struct stat st;
	int fd, r;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open: %s", strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot stat: %s", strerror(-r));
		close(fd);
		return r;
	}
	if ((why = psk_file_unfit(&st, owner)) != NULL) {
		snprintf(err, errlen, "refused: %s", why);
		close(fd);
		return -EPERM;
	}
	return fd;
}

ssize_t
psk_secret_read(const char *file, uid_t owner, char *buf, size_t size, char *err, size_t errlen)
{
	ssize_t n;
	int fd;

	if ((fd = secret_open(file, owner, err, errlen)) < 0)
		return fd;
	if ((n = read(fd, buf, size)) < 0) {
		n = -errno;
		snprintf(err, errlen, "cannot read: %s", strerror(errno));
	}
	close(fd);
	return n;
}

int
psk_read(const char *file, uid_t owner, uint8_t psk[PSK_LEN], char *err, size_t errlen)
{
	char text[PSK_B64_LEN + 4];
	ssize_t n;
	int r = -EINVAL;

	if ((n = psk_secret_read(file, owner, text, sizeof(text), err, errlen)) < 0)
		return (int)n;
	if (psk_decode(text, (size_t)n, psk) < 0) {
		snprintf(err, errlen, "not a preshared key (the base64 of %d bytes, as "
		    "'touctl genpsk' writes)", PSK_LEN);
		goto out;
	}
	r = 0;
out:
	OPENSSL_cleanse(text, sizeof(text));
	return r;
}

int
psk_load_conf(struct conf *c, struct conf_error *err)
{
	const struct passwd *pw = c->iface.user ? getpwnam(c->iface.user) : NULL;
	uid_t owner = pw ? pw->pw_uid : (uid_t)-1;
	char why[160];
	size_t x;
	int r;

	for (x = 0; x < c->n_peers; x++) {
		struct conf_peer *p = &c->peers[x];

		if (!p->psk_file)
			continue;
		if ((r = psk_read(p->psk_file, owner, p->psk, why, sizeof(why))) < 0) {
			util_strlcpy(err->file, conf_line_of(c, p->psk_line, &err->line),
			    sizeof(err->file));
			snprintf(err->msg, sizeof(err->msg), "peer \"%s\": preshared-key '%s': %s",
			    p->name, p->psk_file, why);
			return r;
		}
		p->has_psk = true;
	}
	return 0;
}

int
psk_generate(char out[PSK_B64_LEN + 2])
{
	uint8_t key[PSK_LEN];

	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return -EIO;
	EVP_EncodeBlock((unsigned char *)out, key, sizeof(key));
	OPENSSL_cleanse(key, sizeof(key));
	out[PSK_B64_LEN] = '\n';
	out[PSK_B64_LEN + 1] = '\0';
	return 0;
}

int
psk_write_file(const char *file, const char *text, char *err, size_t errlen)
{
	size_t len = strlen(text);
	int fd, r = 0;

	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create %s: %s", file, strerror(-r));
		return r;
	}
	if (fchmod(fd, 0600) < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		snprintf(err, errlen, "cannot write %s: %s", file, strerror(-r));
		unlink(file);
	}
	return r;
}
