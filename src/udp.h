/* udp.h - the UDP sockets: one per address family, bound to `listen`,
 * batched receive and send, the local address of each datagram (so replies
 * leave from the address the peer used) and the outer ECN bits. */
#ifndef TOUD_UDP_H
#define TOUD_UDP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define UDP_BATCH 64                  /* datagrams per system call */
/* Datagrams in one UDP_SEGMENT send: the kernel's limit was 64 before it
 * became 128, so 64 works everywhere. */
#define UDP_GSO_MAX_SEGS 64

/* udp_open() flags. */
#define UDP_F_GSO 0x01                /* send runs of equal datagrams with UDP_SEGMENT */
#define UDP_F_GRO 0x02                /* receive with UDP_GRO (caller splits by seg_size) */

struct conf_iface;

struct udp {
	int fd4, fd6;                 /* -1 when that family is not enabled */
	uint16_t port;
	/* Offloads in use per socket.  GSO is dropped for good on a socket
	 * whose kernel or egress device refuses it (logged once), by whichever
	 * thread sends: hence atomic. */
	atomic_bool gso4, gso6;
	bool gro4, gro6;
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
	size_t seg_size;              /* receive with UDP_GRO: buf holds datagrams of this
	                               * size, the last may be shorter; 0: one datagram */
	int err;                      /* 0 or -errno after udp_send_batch */
};

/* Bind the sockets of the families `listen` asks for (both by default:
 * IPv6 with IPV6_V6ONLY, IPv4 separately), with the UDP_F_* offloads the
 * kernel has (a socket without them works as before), and with ICMP
 * errors queued (udp_recv_errors(): the reader must drain them, or the
 * socket stays readable).  NULL with errno. */
struct udp *udp_open(const struct conf_iface *ifc, unsigned flags);
void udp_close(struct udp *u);
/* Put mark (SO_MARK; 0 clears it) on every socket, so that routing rules
 * can tell the tunnel's own datagrams apart.  Needs CAP_NET_ADMIN.
 * 0 or -errno. */
int udp_set_mark(struct udp *u, uint32_t mark);
/* Receive up to n datagrams from fd; returns the count, or -errno (-EAGAIN
 * when nothing is waiting). */
int udp_recv_batch(int fd, struct udp_msg *msgs, unsigned n);
/* An error the kernel queued on a socket (IP_RECVERR / IPV6_RECVERR): an
 * ICMP error that came back for a datagram toud sent, or a local one. */
struct udp_icmp {
	union sockaddr_union dest;    /* where that datagram went */
	bool port_unreachable;        /* ICMP port unreachable: nothing listens there */
	bool icmp;                    /* from the network (else a local error) */
	uint8_t type, code;           /* the ICMP type and code */
	int err;                      /* the errno the kernel made of it */
};
/* Read up to n errors queued on fd (MSG_ERRQUEUE).  Returns the count, or
 * -errno (-EAGAIN when none is waiting). */
int udp_recv_errors(int fd, struct udp_icmp *out, unsigned n);
/* Whether a send failed with what may be an earlier datagram's ICMP error
 * (the socket reports it once, on whatever call comes next). */
bool udp_icmp_errno(int err);
/* Send n datagrams, each on the socket of its peer's family; msgs[i].err
 * tells what became of each.  Returns the number sent.  With GSO, a run of
 * consecutive datagrams to the same destination (same source address and
 * TOS) of equal length, the last possibly shorter, leaves in one send of up
 * to UDP_GSO_MAX_SEGS; runs to different peers share one sendmmsg. */
unsigned udp_send_batch(struct udp *u, struct udp_msg *msgs, unsigned n);

#endif
