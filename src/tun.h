/* tun.h - the TUN device: the only code that holds its file descriptor. */
#ifndef TOUD_TUN_H
#define TOUD_TUN_H

#include <net/if.h>
#include <stddef.h>
#include <sys/types.h>

struct tun {
	int fd;
	char name[IFNAMSIZ];
	int ifindex;
};

/* Create (or attach to) the TUN device `name` with IFF_TUN | IFF_NO_PI,
 * non-blocking, close-on-exec.  NULL with errno set. */
struct tun *tun_open(const char *name);
/* Closing the descriptor of a non-persistent TUN removes the device and with
 * it every address and route that pointed at it. */
void tun_close(struct tun *t);
ssize_t tun_read(struct tun *t, void *buf, size_t len);   /* -errno on error, -EAGAIN when empty */
int tun_write(struct tun *t, const void *buf, size_t len);  /* 0 or -errno */

#endif
