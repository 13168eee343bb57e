/* tun.c - the TUN device: open, read, write, close.  The device is not made
 * persistent, so closing the descriptor removes it together with every
 * address and route that used it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>

#include "tun.h"

struct tun *
tun_open(const char *name)
{
	struct tun *t;
	struct ifreq ifr;
	int saved;

	/* The kernel would silently truncate a long name. */
	if (name != NULL && strlen(name) >= IFNAMSIZ) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (t->fd < 0)
		goto fail;

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	/* An empty name lets the kernel pick "tunN". */
	if (name != NULL)
		memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(t->fd, TUNSETIFF, &ifr) < 0)
		goto fail;

	/* The name may contain a %d template: keep what the kernel chose. */
	memcpy(t->name, ifr.ifr_name, IFNAMSIZ);
	t->name[IFNAMSIZ - 1] = '\0';
	if ((t->ifindex = (int)if_nametoindex(t->name)) == 0)
		goto fail;
	return t;

fail:
	saved = errno;
	if (t->fd >= 0)
		close(t->fd);
	free(t);
	errno = saved;
	return NULL;
}

void
tun_close(struct tun *t)
{
	if (t == NULL)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

ssize_t
tun_read(struct tun *t, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(t->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

int
tun_write(struct tun *t, const void *buf, size_t len)
{
	ssize_t n;

	do
		n = write(t->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* A TUN takes a packet whole or not at all; anything else is broken. */
	if ((size_t)n != len)
		return -EIO;
	return 0;
}
