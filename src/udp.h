/* udp.h - the UDP sockets: one per address family, bound to `listen`,
 * batched receive and send, the local address of each datagram (so replies
 * leave from the address the peer used) and the outer ECN bits. */
#ifndef TOUD_UDP_H
#define TOUD_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define UDP_BATCH 64                  /* datagrams per system call */

struct conf_iface;

struct udp {
	int fd4, fd6;                 /* -1 when that family is not enabled */
	uint16_t port;
};

/* One datagram of a batch.  For receive, buf/cap are the caller's buffer;
 * len, peer, local, tos and truncated are filled.  For send, buf/len, peer,
 * local (family 0: kernel's choice) and tos are used; err is filled. */
struct udp_msg {
	uint8_t *buf;
	size_t cap;
	size_t len;
	union sockaddr_union peer;
	struct ipaddr local;
	uint8_t tos;
	bool truncated;
	int err;                      /* 0 or -errno after udp_send_batch */
};

/* Bind the sockets of the families `listen` asks for (both by default:
 * IPv6 with IPV6_V6ONLY, IPv4 separately).  NULL with errno. */
struct udp *udp_open(const struct conf_iface *ifc);
void udp_close(struct udp *u);
/* Receive up to n datagrams from fd; returns the count, or -errno (-EAGAIN
 * when nothing is waiting). */
int udp_recv_batch(int fd, struct udp_msg *msgs, unsigned n);
/* Send n datagrams, each on the socket of its peer's family; msgs[i].err
 * tells what became of each.  Returns the number sent. */
unsigned udp_send_batch(struct udp *u, struct udp_msg *msgs, unsigned n);

#endif
