/* check_udp.c - the UDP sockets over loopback (no privileges needed):
 * a GSO send of a run of equal datagrams, the last shorter, arrives as the
 * same datagrams; runs to two receivers share one call; a receiver with
 * UDP_GRO gets them back with their segment size, or one by one. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"
#include "udp.h"
#include "util.h"

#include "testutil.h"

static struct udp *
open_lo(unsigned flags, union sockaddr_union *bound)
{
	struct conf_iface ifc;
	struct udp *u;
	socklen_t len = sizeof(*bound);

	memset(&ifc, 0, sizeof(ifc));
	ifc.has_listen_addr = true;
	ifc.listen_addr = check_addr("127.0.0.1");
	ifc.listen_port = 0;
	u = udp_open(&ifc, flags);
	ck_assert_ptr_nonnull(u);
	ck_assert_int_ge(u->fd4, 0);
	ck_assert_int_eq(getsockname(u->fd4, &bound->sa, &len), 0);
	return u;
}

/* Receive everything waiting on u (blocking briefly for the first). */
static int
drain(struct udp *u, struct udp_msg *msgs, uint8_t *mem, unsigned n, size_t cap)
{
	unsigned i;
	int got = -EAGAIN, tries;

	for (i = 0; i < n; i++) {
		msgs[i].buf = mem + i * cap;
		msgs[i].cap = cap;
	}
	for (tries = 0; tries < 100 && got == -EAGAIN; tries++) {
		got = udp_recv_batch(u->fd4, msgs, n);
		if (got == -EAGAIN)
			usleep(10000);
	}
	return got;
}

static void
fill(struct udp_msg *m, uint8_t *buf, size_t len, const union sockaddr_union *to, uint8_t tag)
{
	memset(m, 0, sizeof(*m));
	memset(buf, tag, len);
	m->buf = buf;
	m->len = len;
	m->peer = *to;
}

START_TEST(gso_runs)
{
	union sockaddr_union sa, ra, rb;
	struct udp *s = open_lo(UDP_F_GSO, &sa);
	struct udp *r1 = open_lo(0, &ra), *r2 = open_lo(0, &rb);
	static uint8_t out[16][1200], in[64 * 2048];
	struct udp_msg m[16], got[64];
	unsigned i;
	int n;

	ck_assert(s->gso4);
	ck_assert(!r1->gso4 && !r1->gro4);
	/* 10 x 1000 + 500 to r1, then 3 x 700 to r2, then 1 x 1000 to r1. */
	for (i = 0; i < 10; i++)
		fill(&m[i], out[i], 1000, &ra, (uint8_t)i);
	fill(&m[10], out[10], 500, &ra, 10);
	for (i = 11; i < 14; i++)
		fill(&m[i], out[i], 700, &rb, (uint8_t)i);
	fill(&m[14], out[14], 1000, &ra, 14);
	ck_assert_uint_eq(udp_send_batch(s, m, 15), 15);
	for (i = 0; i < 15; i++)
		ck_assert_int_eq(m[i].err, 0);
	ck_assert(s->gso4);

	n = drain(r1, got, in, 64, 2048);
	ck_assert_int_eq(n, 12);
	for (i = 0; i < 12; i++) {
		unsigned tag = i < 11 ? i : 14;

		ck_assert_uint_eq(got[i].len, i == 10 ? 500 : 1000);
		ck_assert_uint_eq(got[i].seg_size, 0);
		ck_assert_uint_eq(got[i].buf[0], tag);
		ck_assert_uint_eq(got[i].buf[got[i].len - 1], tag);
	}
	n = drain(r2, got, in, 64, 2048);
	ck_assert_int_eq(n, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(got[i].len, 700);
		ck_assert_uint_eq(got[i].buf[0], 11 + i);
	}
	udp_close(s);
	udp_close(r1);
	udp_close(r2);
}
END_TEST

/* A GSO run to a receiver with UDP_GRO comes back over loopback as one
 * buffer; its segment size splits it into the datagrams sent. */
START_TEST(gro_receive)
{
	union sockaddr_union sa, ra;
	struct udp *s = open_lo(UDP_F_GSO, &sa), *r = open_lo(UDP_F_GRO, &ra);
	static uint8_t out[8][1200], in[4 * 65536];
	struct udp_msg m[8], got[4];
	unsigned i, k, total = 0, datagrams = 0, receives = 0;
	int n;

	ck_assert(r->gro4);
	for (i = 0; i < 8; i++)
		fill(&m[i], out[i], i == 7 ? 300 : 1100, &ra, (uint8_t)(i + 1));
	ck_assert_uint_eq(udp_send_batch(s, m, 8), 8);
	while (datagrams < 8) {
		n = drain(r, got, in, 4, 65536);
		ck_assert_int_gt(n, 0);
		receives += (unsigned)n;
		for (k = 0; k < (unsigned)n; k++) {
			size_t seg = got[k].seg_size ? got[k].seg_size : got[k].len, off;

			for (off = 0; off < got[k].len; off += seg, datagrams++) {
				size_t len = got[k].len - off < seg ? got[k].len - off : seg;

				ck_assert_uint_lt(datagrams, 8);
				ck_assert_uint_eq(len, datagrams == 7 ? 300 : 1100);
				ck_assert_uint_eq(got[k].buf[off], datagrams + 1);
				total += (unsigned)len;
			}
		}
	}
	ck_assert_uint_eq(total, 7 * 1100 + 300);
	/* One GSO send in, one GRO buffer out: loopback never segments. */
	ck_assert_uint_eq(receives, 1);
	udp_close(s);
	udp_close(r);
}
END_TEST

/* Without the flag, no offload is asked for. */
START_TEST(no_flags)
{
	union sockaddr_union sa;
	struct udp *u = open_lo(0, &sa);

	ck_assert(!u->gso4 && !u->gro4 && !u->gso6 && !u->gro6);
	udp_close(u);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("udp");
	TCase *tc = tcase_create("loopback");

	tcase_add_test(tc, gso_runs);
	tcase_add_test(tc, gro_receive);
	tcase_add_test(tc, no_flags);
	suite_add_tcase(s, tc);
	return check_run(s);
}
