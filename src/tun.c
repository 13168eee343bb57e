/* tun.c - the TUN device: open, read, write, close.  The device is not made
 * persistent, so closing the descriptor removes it together with every
 * address and route that used it.
 *
 * With offloads the device is opened with IFF_VNET_HDR: every read and
 * write carries a 10-byte virtio_net_hdr, and after TUNSETOFFLOAD the
 * kernel hands over TCP (and UDP) super-packets of up to 64 KB and takes
 * coalesced ones back (offload.c cuts and joins them). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <linux/if_tun.h>

#include "offload.h"
#include "tun.h"

static int
tun_attach(const char *name, bool vnet, char *out_name)
{
	struct ifreq ifr;
	int fd, saved;

	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI | (vnet ? IFF_VNET_HDR : 0);
	/* An empty name lets the kernel pick "tunN". */
	if (name != NULL)
		memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	memcpy(out_name, ifr.ifr_name, IFNAMSIZ);
	out_name[IFNAMSIZ - 1] = '\0';
	return fd;
}

/* Ask for the offloads offload.c can undo, most first.  Returns what was
 * accepted, 0 if not even TCP segmentation was. */
static unsigned
tun_set_offload(int fd)
{
	static const unsigned want[] = {
		TUN_OFF_CSUM | TUN_OFF_TSO4 | TUN_OFF_TSO6 | TUN_OFF_USO4 | TUN_OFF_USO6,
		TUN_OFF_CSUM | TUN_OFF_TSO4 | TUN_OFF_TSO6,
	};
	int le = 1;
	size_t i;

	/* The header's 16-bit fields are little-endian in "modern" virtio;
	 * a little-endian host has them so anyway, a big-endian one must ask. */
	if (ioctl(fd, TUNSETVNETLE, &le) < 0 && BYTE_ORDER != LITTLE_ENDIAN)
		return 0;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (ioctl(fd, TUNSETOFFLOAD, (unsigned long)want[i]) == 0)
			return want[i];
	return 0;
}

struct tun *
tun_open(const char *name, bool offload)
{
	struct tun *t;
	int saved;

	/* The kernel would silently truncate a long name. */
	if (name != NULL && strlen(name) >= IFNAMSIZ) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->fd = -1;
	if (offload) {
		t->fd = tun_attach(name, true, t->name);
		if (t->fd >= 0 && (t->offloads = tun_set_offload(t->fd)) != 0) {
			t->vnet = true;
		} else if (t->fd >= 0) {
			/* Not usable: start over with a plain device (the
			 * first goes away with its descriptor). */
			close(t->fd);
			t->fd = -1;
		}
	}
	if (t->fd < 0 && (t->fd = tun_attach(name, false, t->name)) < 0)
		goto fail;
	/* The name may contain a %d template: keep what the kernel chose. */
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
tun_read_vnet(struct tun *t, struct offload_vnet *vh, void *buf, size_t len)
{
	uint8_t hdr[OFFLOAD_VNET_HLEN];
	struct iovec iov[2] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = buf, .iov_len = len },
	};
	ssize_t n;

	do
		n = t->vnet ? readv(t->fd, iov, 2) : read(t->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (!t->vnet) {
		memset(vh, 0, sizeof(*vh));
		return n;
	}
	if ((size_t)n < sizeof(hdr))
		return -EBADMSG;
	n -= (ssize_t)sizeof(hdr);
	if (offload_vnet_parse(hdr, (size_t)n, vh) != OFFLOAD_OK)
		return -EBADMSG;
	return n;
}

int
tun_write_vnet(struct tun *t, const struct offload_vnet *vh, const void *buf, size_t len)
{
	uint8_t hdr[OFFLOAD_VNET_HLEN];
	struct iovec iov[2] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)buf, .iov_len = len },
	};
	size_t want = len;
	ssize_t n;

	if (t->vnet) {
		offload_vnet_put(hdr, vh);
		want += sizeof(hdr);
	} else if (vh->flags || vh->gso_type) {
		return -EINVAL;
	}
	do
		n = t->vnet ? writev(t->fd, iov, 2) : write(t->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* A TUN takes a packet whole or not at all; anything else is broken. */
	if ((size_t)n != want)
		return -EIO;
	return 0;
}

ssize_t
tun_read(struct tun *t, void *buf, size_t len)
{
	struct offload_vnet vh;
	ssize_t n = tun_read_vnet(t, &vh, buf, len);

	if (n < 0)
		return n;
	if (vh.gso_type != OFFLOAD_GSO_NONE)
		return -EMSGSIZE;
	if (vh.flags & OFFLOAD_F_NEEDS_CSUM)
		offload_csum_complete(buf, (size_t)n, &vh);
	return n;
}

int
tun_write(struct tun *t, const void *buf, size_t len)
{
	static const struct offload_vnet none;

	return tun_write_vnet(t, &none, buf, len);
}
