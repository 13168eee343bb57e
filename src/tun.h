/* tun.h - the TUN device: the only code that holds its file descriptor. */
#ifndef TOUD_TUN_H
#define TOUD_TUN_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct offload_vnet;

/* TUNSETOFFLOAD bits (linux/if_tun.h; USO since Linux 6.2, newer than
 * Debian 12's headers). */
#define TUN_OFF_CSUM	0x01
#define TUN_OFF_TSO4	0x02
#define TUN_OFF_TSO6	0x04
#define TUN_OFF_USO4	0x20
#define TUN_OFF_USO6	0x40

struct tun {
	int fd;
	char name[IFNAMSIZ];
	int ifindex;
	bool vnet;                /* IFF_VNET_HDR: a virtio_net_hdr leads every read and write */
	unsigned offloads;        /* TUN_OFF_* the kernel accepted; 0 without vnet */
};

/* Create (or attach to) the TUN device `name` with IFF_TUN | IFF_NO_PI,
 * non-blocking, close-on-exec.  With offload, first try IFF_VNET_HDR with
 * TUNSETOFFLOAD(CSUM | TSO4 | TSO6 | USO4 | USO6), then without USO; a
 * kernel that refuses TSO gets a plain device (t->vnet false).  NULL with
 * errno set. */
struct tun *tun_open(const char *name, bool offload);
/* Closing the descriptor of a non-persistent TUN removes the device and with
 * it every address and route that pointed at it. */
void tun_close(struct tun *t);

/* One plain packet.  On a vnet device the header is read and dropped
 * (a partial checksum is completed); a segmentation offload packet cannot
 * be returned as one packet and gives -EMSGSIZE. */
ssize_t tun_read(struct tun *t, void *buf, size_t len);   /* -errno on error, -EAGAIN when empty */
/* One plain packet (an all-zero header goes in front on a vnet device). */
int tun_write(struct tun *t, const void *buf, size_t len);  /* 0 or -errno */

/* The vnet forms: the header separately, checked by offload_vnet_parse()
 * (-EBADMSG if it fails); on a plain device it reads as all zero and a
 * write must not ask for any offload (-EINVAL). */
ssize_t tun_read_vnet(struct tun *t, struct offload_vnet *vh, void *buf, size_t len);
int tun_write_vnet(struct tun *t, const struct offload_vnet *vh, const void *buf, size_t len);

#endif
