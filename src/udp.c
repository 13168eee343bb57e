/* udp.c - the UDP sockets and batched datagram I/O.
 *
 * Offloads (udp(7)): with UDP_SEGMENT a run of equal-size datagrams to one
 * destination is handed to the kernel as one buffer and segmented below
 * the stack, or not at all across a veth; with UDP_GRO the kernel may hand
 * over several datagrams of one flow in one buffer, with their size in a
 * control message. */
#include <errno.h>
#include <time.h>                       /* before linux/errqueue.h, which needs timespec */
#include <linux/errqueue.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "udp.h"

#ifndef SOL_UDP
#define SOL_UDP IPPROTO_UDP
#endif

/* Socket buffers: deep enough that a burst the loop has not drained yet
 * is queued rather than dropped (TCP inside sees delay, not loss). */
#define UDP_SOCKBUF (4 << 20)

/* Room for IP_PKTINFO/IPV6_PKTINFO, a TOS/TCLASS and the GRO/GSO segment
 * size per datagram. */
#define UDP_CMSG_SPACE (CMSG_SPACE(sizeof(struct in6_pktinfo)) + 2 * CMSG_SPACE(sizeof(int)))

/* The most payload one UDP send may carry: the IPv4 total length, or the
 * UDP length field under IPv6. */
#define UDP_MAX_PAYLOAD4 (65535 - 20 - 8)
#define UDP_MAX_PAYLOAD6 (65535 - 8)

/* The FORCE variant (CAP_NET_ADMIN) passes net.core.*mem_max; without it
 * the kernel caps the size, which is still better than the default. */
static void
set_bufsize(int fd, int opt, int force_opt)
{
	int size = UDP_SOCKBUF;

	if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
}

/* Does the kernel know UDP_SEGMENT (Linux 4.18)?  A getsockopt answers
 * without changing anything. */
static bool
probe_gso(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	return getsockopt(fd, SOL_UDP, UDP_SEGMENT, &v, &len) == 0;
}

static bool
enable_gro(int fd)
{
	int one = 1;

	return setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0;
}

/* Record what one socket got of the offloads asked for. */
static void
sock_offloads(struct udp *u, int fd, int family, unsigned flags)
{
	bool gso = (flags & UDP_F_GSO) && probe_gso(fd);
	bool gro = (flags & UDP_F_GRO) && enable_gro(fd);

	if (family == AF_INET) {
		u->gso4 = gso;
		u->gro4 = gro;
	} else {
		u->gso6 = gso;
		u->gro6 = gro;
	}
	if ((flags & UDP_F_GSO) && !gso)
		log_info("udp %s: no UDP_SEGMENT in this kernel, sending datagram by datagram",
		    family == AF_INET ? "IPv4" : "IPv6");
	if ((flags & UDP_F_GRO) && !gro)
		log_info("udp %s: no UDP_GRO in this kernel", family == AF_INET ? "IPv4" : "IPv6");
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
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one)) < 0)
			goto err;
	} else {
		/* The outer packets carry DF: toud answers oversize inner
		 * packets itself rather than have the path fragment. */
		if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one)) < 0)
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
udp_open(const struct conf_iface *ifc, unsigned flags)
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
		sock_offloads(u, fd, ifc->listen_addr.family, flags);
		return u;
	}
	fd = sock_open(AF_INET, NULL, ifc->listen_port);
	if (fd < 0)
		goto err;
	u->fd4 = fd;
	sock_offloads(u, fd, AF_INET, flags);
	fd = sock_open(AF_INET6, NULL, ifc->listen_port);
	if (fd == -EAFNOSUPPORT)       /* a host without IPv6 */
		return u;
	if (fd < 0)
		goto err;
	u->fd6 = fd;
	sock_offloads(u, fd, AF_INET6, flags);
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

int
udp_set_mark(struct udp *u, uint32_t mark)
{
	int fds[2] = { u->fd4, u->fd6 };
	unsigned i;

	for (i = 0; i < 2; i++)
		if (fds[i] >= 0 && setsockopt(fds[i], SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0)
			return -errno;
	return 0;
}

static void
parse_cmsgs(struct msghdr *mh, struct udp_msg *m)
{
	struct cmsghdr *c;

	memset(&m->local, 0, sizeof(m->local));
	m->tos = 0;
	m->seg_size = 0;
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
		} else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int gs;
			memcpy(&gs, CMSG_DATA(c), sizeof(gs));
			/* One segment's worth or more is a single datagram. */
			if (gs > 0 && (size_t)gs < m->len)
				m->seg_size = (size_t)gs;
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

/* The extended error of one MSG_ERRQUEUE message into e. */
static void
parse_error(struct msghdr *mh, struct udp_icmp *e)
{
	struct cmsghdr *c;
	struct sock_extended_err ee;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (!((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
		    (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)) ||
		    c->cmsg_len < CMSG_LEN(sizeof(ee)))
			continue;
		memcpy(&ee, CMSG_DATA(c), sizeof(ee));
		e->err = (int)ee.ee_errno;
		e->type = ee.ee_type;
		e->code = ee.ee_code;
		e->icmp = ee.ee_origin == SO_EE_ORIGIN_ICMP || ee.ee_origin == SO_EE_ORIGIN_ICMP6;
		e->port_unreachable =
		    (ee.ee_origin == SO_EE_ORIGIN_ICMP && ee.ee_type == ICMP_DEST_UNREACH &&
		    ee.ee_code == ICMP_PORT_UNREACH) ||
		    (ee.ee_origin == SO_EE_ORIGIN_ICMP6 && ee.ee_type == ICMP6_DST_UNREACH &&
		    ee.ee_code == ICMP6_DST_UNREACH_NOPORT);
	}
}

int
udp_recv_errors(int fd, struct udp_icmp *out, unsigned n)
{
	unsigned got = 0;

	while (got < n) {
		union {
			char buf[CMSG_SPACE(sizeof(struct sock_extended_err) +
			    sizeof(struct sockaddr_in6)) + 64];
			struct cmsghdr align;
		} cbuf;
		uint8_t data[64];
		struct iovec iov = { data, sizeof(data) };
		struct udp_icmp *e = &out[got];
		struct msghdr mh = {
			.msg_name = &e->dest, .msg_namelen = sizeof(e->dest),
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
		};

		memset(e, 0, sizeof(*e));
		if (recvmsg(fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return got ? (int)got : -errno;
		}
		parse_error(&mh, e);
		got++;
	}
	return (int)got;
}

bool
udp_icmp_errno(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH ||
	    err == EHOSTDOWN || err == ENETDOWN || err == EPROTO || err == ENOPROTOOPT ||
	    err == EMSGSIZE || err == EACCES;
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

/* Fill the control data of one outgoing send: source address, ECN, and
 * the segment size of a GSO run (seg 0: a single datagram). */
static size_t
build_cmsgs(const struct udp_msg *m, int family, uint16_t seg, char *buf, size_t cap)
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
		c = put_cmsg(&mh, c, family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6,
		    family == AF_INET ? IP_TOS : IPV6_TCLASS, &tos, sizeof(tos),
		    &used);
	if (seg && c)
		put_cmsg(&mh, c, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg), &used);
	return used;
}

/* May msgs[j] join the GSO run that starts at msgs[i] and has run_len
 * datagrams and bytes so far? */
static bool
joins_run(const struct udp_msg *msgs, unsigned i, unsigned j, unsigned run_len,
    size_t bytes, size_t max)
{
	const struct udp_msg *a = &msgs[i], *b = &msgs[j];

	if (run_len >= UDP_GSO_MAX_SEGS || bytes + b->len > max)
		return false;
	/* Equal sizes; one shorter datagram ends the run. */
	if (b->len > a->len || msgs[j - 1].len != a->len || b->len == 0)
		return false;
	return b->tos == a->tos && util_sa_equal(&b->peer, &a->peer) &&
	    b->local.family == a->local.family &&
	    (!a->local.family || util_addr_equal(&b->local, &a->local));
}

/* One sendmmsg entry per run; first[e] and count[e] say which datagrams. */
struct send_plan {
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	union {
		char buf[UDP_CMSG_SPACE];
		struct cmsghdr align;
	} cbuf[UDP_BATCH];
	unsigned first[UDP_BATCH], count[UDP_BATCH];
	unsigned n;
};

static void
plan_build(struct send_plan *pl, int family, struct udp_msg *msgs, unsigned n, bool gso)
{
	size_t max = family == AF_INET ? UDP_MAX_PAYLOAD4 : UDP_MAX_PAYLOAD6;
	unsigned i, j, e;

	for (i = 0; i < n; i++) {
		pl->iov[i].iov_base = msgs[i].buf;
		pl->iov[i].iov_len = msgs[i].len;
		msgs[i].err = 0;
	}
	for (i = 0, e = 0; i < n; i = j, e++) {
		size_t bytes = msgs[i].len;
		struct msghdr *h = &pl->mm[e].msg_hdr;

		j = i + 1;
		if (gso)
			while (j < n && joins_run(msgs, i, j, j - i, bytes, max))
				bytes += msgs[j++].len;
		/* Never UDP_SEGMENT on a lone datagram: some paths break. */
		memset(&pl->mm[e], 0, sizeof(pl->mm[e]));
		memset(pl->cbuf[e].buf, 0, sizeof(pl->cbuf[e].buf));
		h->msg_name = &msgs[i].peer;
		h->msg_namelen = util_sa_len(&msgs[i].peer);
		h->msg_iov = &pl->iov[i];
		h->msg_iovlen = j - i;
		h->msg_controllen = build_cmsgs(&msgs[i], family,
		    j - i > 1 ? (uint16_t)msgs[i].len : 0, pl->cbuf[e].buf, sizeof(pl->cbuf[e].buf));
		h->msg_control = h->msg_controllen ? pl->cbuf[e].buf : NULL;
		pl->first[e] = i;
		pl->count[e] = j - i;
	}
	pl->n = e;
}

/* Send the plan's entries; a failed entry marks its datagrams, and a GSO
 * one that failed with EIO/EINVAL is flagged in suspect[]. */
static void
plan_send(int fd, struct send_plan *pl, struct udp_msg *msgs, bool *suspect)
{
	unsigned done = 0, k;
	bool again = false;

	while (done < pl->n) {
		int r = sendmmsg(fd, pl->mm + done, pl->n - done, MSG_DONTWAIT);

		if (r < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			/* An ICMP error another datagram drew fails the next
			 * send once (IP_RECVERR), and is read from the error
			 * queue: this entry gets a second try. */
			if (!again && udp_icmp_errno(err)) {
				again = true;
				continue;
			}
			again = false;
			/* The first entry failed: record it and go on with
			 * the rest so one bad destination does not stall all. */
			for (k = 0; k < pl->count[done]; k++)
				msgs[pl->first[done] + k].err = -err;
			if (suspect)
				suspect[done] = pl->count[done] > 1 && (err == EIO || err == EINVAL);
			done++;
			continue;
		}
		if (suspect)
			for (k = done; k < done + (unsigned)r; k++)
				suspect[k] = false;
		done += (unsigned)r;
		again = false;
	}
}

/* Send msgs[0..n) that all go out of fd; returns how many were sent. */
static unsigned
send_run(int fd, int family, struct udp_msg *msgs, unsigned n, atomic_bool *gso)
{
	struct send_plan pl, retry;
	bool suspect[UDP_BATCH];
	unsigned e, i, done;

	plan_build(&pl, family, msgs, n, *gso);
	plan_send(fd, &pl, msgs, suspect);
	for (e = 0; e < pl.n; e++) {
		struct udp_msg *m = msgs + pl.first[e];
		int gerr = -m[0].err;

		if (!suspect[e])
			continue;
		/* EIO: the egress device cannot checksum for segmentation;
		 * EINVAL: a segment over the path MTU, or a source address
		 * that went away.  Send the run datagram by datagram, and
		 * give up GSO on this socket only if that works. */
		plan_build(&retry, family, m, pl.count[e], false);
		plan_send(fd, &retry, m, NULL);
		if (m[0].err == 0 && atomic_exchange(gso, false)) {
			log_warnx("udp %s: the kernel refuses UDP_SEGMENT sends (%s); sending "
			    "datagram by datagram from now on", family == AF_INET ? "IPv4" : "IPv6",
			    strerror(gerr));
		}
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
		sent += send_run(fd, family, msgs + i, j - i, family == AF_INET ? &u->gso4 : &u->gso6);
		i = j;
	}
	return sent;
}
