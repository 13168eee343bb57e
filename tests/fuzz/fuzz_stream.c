/* fuzz_stream.c - libFuzzer harness for the TCP transport's framing
 * (stream.c): what a TLS connection's plaintext meets first.  The input's
 * first byte picks the size of the pieces it is fed in, the second the
 * reader's largest frame (so that a length just over it, and lengths
 * over 65535 clamped, are as easy to reach as the usual 16384); the rest
 * is the stream.  Every frame must be the bytes after its header, a
 * verdict of error must name what the header said and stick, and the
 * writer's header must be the one read.  Under a preshared key
 * (tcp_psk.c) every frame as read must fail to open, and each sealed by
 * one end must open, in turn, at the other, as it was. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"
#include "tcp_psk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DST_MAX 0xffff

static void
check(int cond)
{
	if (!cond)
		abort();
}

/* The reader's largest frame: small ones, the transport's, the format's
 * largest, and one over it (clamped to 65535). */
static const size_t maxes[] = { 1, 2, 3, 255, 256, 1500, 16384, 65534, 65535, 70000 };

/* A connection's two ends under fixed keys, and an end that reads the
 * fuzzer's frames as they are. */
static struct tcp_psk client, server, reader;

static void
psk_setup(void)
{
	static const uint8_t exp[TCP_PSK_EXPORTER_LEN] = { 1 }, psk[TCP_PSK_LEN] = { 2 };
	struct tcp_psk_keys k;

	check(tcp_psk_derive(exp, psk, &k) == 0);
	check(tcp_psk_init(&client, &k, true) == 0);
	check(tcp_psk_init(&server, &k, false) == 0);
	check(tcp_psk_init(&reader, &k, false) == 0);
}

/* A frame read (flen bytes at frame): as it is it does not open; sealed
 * by the client, it opens at the server. */
static void
psk_frame(const uint8_t *frame, size_t flen)
{
	static uint8_t buf[DST_MAX + TCP_PSK_TAG_LEN];
	uint64_t n = reader.open.n;

	memcpy(buf, frame, flen);
	check(tcp_psk_open(&reader, buf, flen) == -EBADMSG);
	check(reader.open.n == n && !reader.opened);
	check(tcp_psk_seal(&client, frame, flen, buf) == (ssize_t)(flen + TCP_PSK_TAG_LEN));
	check(tcp_psk_open(&server, buf, flen + TCP_PSK_TAG_LEN) == (ssize_t)flen);
	check(memcmp(buf, frame, flen) == 0);
	check(client.seal.n == server.open.n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t dst[DST_MAX];
	struct stream_rx s;
	size_t step, max, off = 0, used, flen, frames = 0, framed = 0, want;
	enum stream_status st = STREAM_MORE;
	uint8_t hdr[STREAM_HDR_LEN];

	if (!client.seal.ctx)
		psk_setup();
	if (size < 2)
		return 0;
	step = (size_t)data[0] + 1;
	max = maxes[data[1] % (sizeof(maxes) / sizeof(maxes[0]))];
	data += 2;
	size -= 2;
	stream_rx_init(&s, max);
	if (max > 0xffff)
		max = 0xffff;
	/* the writer: max is the largest header it makes */
	check(stream_frame_header(hdr, max, max) == 0);
	check(((size_t)hdr[0] << 8 | hdr[1]) == max);
	check(stream_frame_header(hdr, max + 1, max) == -1);
	check(stream_frame_header(hdr, 0, max) == -1);
	while (off < size) {
		size_t piece = size - off < step ? size - off : step;

		st = stream_rx_feed(&s, data + off, piece, &used, dst, &flen);
		check(used <= piece);
		check(strcmp(stream_status_name(st), "unknown") != 0);
		off += used;
		if (st == STREAM_FRAME) {
			check(flen >= 1 && flen <= max);
			/* The header the writer makes for it is the one read. */
			check(stream_frame_header(hdr, flen, max) == 0);
			check(memcmp(hdr, data + off - flen - STREAM_HDR_LEN, STREAM_HDR_LEN) == 0);
			check(memcmp(dst, data + off - flen, flen) == 0);
			check(stream_rx_partial(&s) == 0);
			psk_frame(dst, flen);
			frames++;
			framed += flen + STREAM_HDR_LEN;
			continue;
		}
		if (st != STREAM_MORE)
			break;
		check(used == piece);
	}
	if (st == STREAM_ZERO || st == STREAM_OVERSIZE) {
		/* the header just read says so; the stream stays bad */
		check(off >= framed + STREAM_HDR_LEN);
		want = (size_t)data[framed] << 8 | data[framed + 1];
		check(off == framed + STREAM_HDR_LEN);
		check(st == STREAM_ZERO ? want == 0 : want > max);
		check(stream_rx_feed(&s, data, size, &used, dst, &flen) == STREAM_OVERSIZE);
		check(used == 0);
	}
	/* Read to the end: what is not in whole frames is the one being
	 * gathered (and its header). */
	if (st == STREAM_MORE)
		check(size - framed <= STREAM_HDR_LEN + stream_rx_partial(&s) &&
		    size - framed >= stream_rx_partial(&s));
	check(frames * (STREAM_HDR_LEN + 1) <= framed);
	return 0;
}
