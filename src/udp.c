/* udp.c - the UDP sockets and batched datagram I/O. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"
#include "udp.h"

/* Socket buffers: deep enough that a burst the loop has not drained yet
 * is queued rather than dropped (TCP inside sees delay, not loss). */
#define UDP_SOCKBUF (4 << 20)

/* Room for IP_PKTINFO/IPV6_PKTINFO and a TOS/TCLASS per datagram. */
#define UDP_CMSG_SPACE (CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(int)))

/* The FORCE variant (CAP_NET_ADMIN) passes net.core.*mem_max; without it
 * the kernel caps the size, which is still better than the default. */
static void
set_bufsize(int fd, int opt, int force_opt)
{
	int size = UDP_SOCKBUF;

	if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
}

static int
sock_open(int family, const struct ipaddr *addr, uint16_t port)
{
	union sockaddr_union sa;
	struct ipaddr any = { .family = family };
	int fd, one = 1, pmtu = IP_PMTUDISC_DO;

	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (family == AF_INET6) {
		pmtu = IPV6_PMTUDISC_DO;
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0)
			goto err;
	} else {
		/* The outer packets carry DF: toud answers oversize inner
		 * packets itself rather than have the path fragment. */
		if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0)
			goto err;
	}
	set_bufsize(fd, SO_RCVBUF, SO_RCVBUFFORCE);
	set_bufsize(fd, SO_SNDBUF, SO_SNDBUFFORCE);
	util_sa_from_addr(&sa, addr ? addr : &any, port);
	if (bind(fd, &sa.sa, util_sa_len(&sa)) < 0)
		goto err;
	return fd;
err:
	one = -errno;
	close(fd);
	return one;
}

struct udp *
udp_open(const struct conf_iface *ifc)
{
	struct udp *u = calloc(1, sizeof(*u));
	int fd;

	if (!u)
		return NULL;
	u->fd4 = u->fd6 = -1;
	u->port = ifc->listen_port;
	if (ifc->has_listen_addr) {
		fd = sock_open(ifc->listen_addr.family, &ifc->listen_addr, ifc->listen_port);
		if (fd < 0)
			goto err;
		if (ifc->listen_addr.family == AF_INET)
			u->fd4 = fd;
		else
			u->fd6 = fd;
		return u;
	}
	fd = sock_open(AF_INET, NULL, ifc->listen_port);
	if (fd < 0)
		goto err;
	u->fd4 = fd;
	fd = sock_open(AF_INET6, NULL, ifc->listen_port);
	if (fd == -EAFNOSUPPORT)       /* a host without IPv6 */
		return u;
	if (fd < 0)
		goto err;
	u->fd6 = fd;
	return u;
err:
	udp_close(u);
	errno = -fd;
	return NULL;
}

void
udp_close(struct udp *u)
{
	if (!u)
		return;
	if (u->fd4 >= 0)
		close(u->fd4);
	if (u->fd6 >= 0)
		close(u->fd6);
	free(u);
}

static void
parse_cmsgs(struct msghdr *mh, struct udp_msg *m)
{
	struct cmsghdr *c;

	memset(&m->local, 0, sizeof(m->local));
	m->tos = 0;
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			m->local.family = AF_INET;
			m->local.v4 = pi.ipi_addr;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			m->local.family = AF_INET6;
			m->local.v6 = pi.ipi6_addr;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			m->tos = *(uint8_t *)CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			int tc;
			memcpy(&tc, CMSG_DATA(c), sizeof(tc));
			m->tos = (uint8_t)tc;
		}
	}
}

int
udp_recv_batch(int fd, struct udp_msg *msgs, unsigned n)
{
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	union {
		char buf[UDP_CMSG_SPACE];
		struct cmsghdr align;
	} cbuf[UDP_BATCH];
	unsigned i;
	int got;

	if (n > UDP_BATCH)
		n = UDP_BATCH;
	memset(mm, 0, sizeof(mm[0]) * n);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = msgs[i].buf;
		iov[i].iov_len = msgs[i].cap;
		mm[i].msg_hdr.msg_name = &msgs[i].peer;
		mm[i].msg_hdr.msg_namelen = sizeof(msgs[i].peer);
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_control = cbuf[i].buf;
		mm[i].msg_hdr.msg_controllen = sizeof(cbuf[i].buf);
	}
	got = recvmmsg(fd, mm, n, MSG_DONTWAIT, NULL);
	if (got < 0)
		return -errno;
	for (i = 0; i < (unsigned)got; i++) {
		msgs[i].len = mm[i].msg_len;
		msgs[i].truncated = (mm[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
		parse_cmsgs(&mm[i].msg_hdr, &msgs[i]);
	}
	return got;
}

/* Write one control message at c and count its space; returns the next
 * slot, or NULL when the buffer is full. */
static struct cmsghdr *
put_cmsg(struct msghdr *mh, struct cmsghdr *c, int level, int type,
    const void *data, size_t len, size_t *used)
{
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	*used += CMSG_SPACE(len);
	return CMSG_NXTHDR(mh, c);
}

/* Fill the control data of one outgoing datagram: source address and ECN. */
static size_t
build_cmsgs(const struct udp_msg *m, int family, char *buf, size_t cap)
{
	struct msghdr mh = { .msg_control = buf, .msg_controllen = cap };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	size_t used = 0;
	int tos = m->tos;

	if (m->local.family == family && family == AF_INET) {
		struct in_pktinfo pi = { .ipi_spec_dst = m->local.v4 };
		c = put_cmsg(&mh, c, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi),
		    &used);
	} else if (m->local.family == family && family == AF_INET6) {
		struct in6_pktinfo pi = { .ipi6_addr = m->local.v6 };
		c = put_cmsg(&mh, c, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi),
		    &used);
	}
	if (tos && c)
		put_cmsg(&mh, c, family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6,
		    family == AF_INET ? IP_TOS : IPV6_TCLASS, &tos, sizeof(tos),
		    &used);
	return used;
}

/* Send msgs[0..n) that all go out of fd; returns how many were sent. */
static unsigned
send_run(int fd, int family, struct udp_msg *msgs, unsigned n)
{
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	union {
		char buf[UDP_CMSG_SPACE];
		struct cmsghdr align;
	} cbuf[UDP_BATCH];
	unsigned i, done = 0;

	memset(mm, 0, sizeof(mm[0]) * n);
	memset(cbuf, 0, sizeof(cbuf[0]) * n);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = msgs[i].buf;
		iov[i].iov_len = msgs[i].len;
		mm[i].msg_hdr.msg_name = &msgs[i].peer;
		mm[i].msg_hdr.msg_namelen = util_sa_len(&msgs[i].peer);
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_controllen = build_cmsgs(&msgs[i], family, cbuf[i].buf,
		    sizeof(cbuf[i].buf));
		mm[i].msg_hdr.msg_control = mm[i].msg_hdr.msg_controllen ? cbuf[i].buf : NULL;
		msgs[i].err = 0;
	}
	while (done < n) {
		int r = sendmmsg(fd, mm + done, n - done, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* The first datagram failed: record it and go on with
			 * the rest so one bad destination does not stall all. */
			msgs[done].err = -errno;
			done++;
			continue;
		}
		done += (unsigned)r;
	}
	for (i = 0, done = 0; i < n; i++)
		done += msgs[i].err == 0;
	return done;
}

unsigned
udp_send_batch(struct udp *u, struct udp_msg *msgs, unsigned n)
{
	unsigned i = 0, sent = 0;

	while (i < n) {
		int family = msgs[i].peer.sa.sa_family;
		int fd = family == AF_INET ? u->fd4 : family == AF_INET6 ? u->fd6 : -1;
		unsigned j = i + 1;

		while (j < n && msgs[j].peer.sa.sa_family == family)
			j++;
		if (fd < 0) {
			for (; i < j; i++)
				msgs[i].err = -EAFNOSUPPORT;
			continue;
		}
		sent += send_run(fd, family, msgs + i, j - i);
		i = j;
	}
	return sent;
}
