/* check_tun.c - what can be checked of the TUN wrapper without privileges
 * and without creating a device: the name check and the read/write return
 * conventions, exercised on a non-blocking pipe standing in for the device.
 * Real devices are left to the namespace tests. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offload.h"
#include "tun.h"

#include "testutil.h"

START_TEST(test_name_too_long)
{
	char name[IFNAMSIZ + 1];

	memset(name, 'x', IFNAMSIZ);
	name[IFNAMSIZ] = '\0';
	errno = 0;
	ck_assert_ptr_null(tun_open(name, false));
	ck_assert_int_eq(errno, ENAMETOOLONG);
	tun_close(NULL);
}
END_TEST

START_TEST(test_read_write_conventions)
{
	struct tun rd = { .name = "pipe" }, wr = { .name = "pipe" };
	int p[2];
	char buf[64];

	ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	rd.fd = p[0];
	wr.fd = p[1];

	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), -EAGAIN);
	ck_assert_int_eq(tun_write(&wr, "packet", 6), 0);
	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), 6);
	ck_assert_mem_eq(buf, "packet", 6);
	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), -EAGAIN);
	/* Wrong direction: the errno comes back negated. */
	ck_assert_int_eq(tun_write(&rd, "x", 1), -EBADF);
	ck_assert_int_eq(tun_read(&wr, buf, sizeof(buf)), -EBADF);

	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), -EBADF);
}
END_TEST

/* A vnet device, on a pipe: the header travels in front of the packet. */
START_TEST(test_vnet_header)
{
	struct tun rd = { .name = "pipe", .vnet = true }, wr = { .name = "pipe", .vnet = true };
	struct offload_vnet vh = { .flags = OFFLOAD_F_NEEDS_CSUM, .gso_type = OFFLOAD_GSO_TCPV4,
		.hdr_len = 40, .gso_size = 1000, .csum_start = 20, .csum_offset = 16 }, got;
	uint8_t pkt[64], buf[64], raw[80];
	int p[2];

	memset(pkt, 0x45, sizeof(pkt));
	ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	rd.fd = p[0];
	wr.fd = p[1];

	ck_assert_int_eq(tun_write_vnet(&wr, &vh, pkt, sizeof(pkt)), 0);
	ck_assert_int_eq(tun_read_vnet(&rd, &got, buf, sizeof(buf)), sizeof(pkt));
	ck_assert_mem_eq(&got, &vh, sizeof(vh));
	ck_assert_mem_eq(buf, pkt, sizeof(pkt));

	/* The plain forms: a zero header on write; a super-packet cannot be
	 * read as one packet. */
	ck_assert_int_eq(tun_write(&wr, pkt, 8), 0);
	ck_assert_int_eq(read(p[0], raw, sizeof(raw)), OFFLOAD_VNET_HLEN + 8);
	ck_assert_mem_eq(raw, "\0\0\0\0\0\0\0\0\0\0", OFFLOAD_VNET_HLEN);
	ck_assert_int_eq(tun_write_vnet(&wr, &vh, pkt, sizeof(pkt)), 0);
	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), -EMSGSIZE);

	/* NEEDS_CSUM alone: tun_read completes the checksum. */
	memset(pkt, 0, sizeof(pkt));
	pkt[20] = 0x12;
	pkt[21] = 0x34;
	vh = (struct offload_vnet){ .flags = OFFLOAD_F_NEEDS_CSUM, .csum_start = 20,
		.csum_offset = 16 };
	ck_assert_int_eq(tun_write_vnet(&wr, &vh, pkt, 40), 0);
	ck_assert_int_eq(tun_read(&rd, buf, sizeof(buf)), 40);
	ck_assert_uint_eq(buf[36], (uint8_t)~0x12);
	ck_assert_uint_eq(buf[37], (uint8_t)~0x34);

	/* A header that does not parse, or one too short. */
	memset(raw, 0, sizeof(raw));
	raw[0] = 0x80;
	ck_assert_int_eq(write(p[1], raw, 30), 30);
	ck_assert_int_eq(tun_read_vnet(&rd, &got, buf, sizeof(buf)), -EBADMSG);
	ck_assert_int_eq(write(p[1], raw, 4), 4);
	ck_assert_int_eq(tun_read_vnet(&rd, &got, buf, sizeof(buf)), -EBADMSG);

	/* A plain device cannot be asked for offloads. */
	wr.vnet = false;
	vh.gso_type = OFFLOAD_GSO_TCPV4;
	ck_assert_int_eq(tun_write_vnet(&wr, &vh, pkt, 40), -EINVAL);
	memset(&vh, 0, sizeof(vh));
	ck_assert_int_eq(tun_write_vnet(&wr, &vh, pkt, 40), 0);
	rd.vnet = false;
	ck_assert_int_eq(tun_read_vnet(&rd, &got, buf, sizeof(buf)), 40);
	ck_assert_uint_eq(got.flags | got.gso_type, 0);

	close(p[0]);
	close(p[1]);
}
END_TEST

static Suite *
tun_suite(void)
{
	Suite *s = suite_create("tun");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_name_too_long);
	tcase_add_test(tc, test_read_write_conventions);
	tcase_add_test(tc, test_vnet_header);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(tun_suite());
}
