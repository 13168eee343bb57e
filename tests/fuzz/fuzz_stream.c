/* fuzz_stream.c - libFuzzer harness for the TCP transport's framing
 * (stream.c): what a TLS connection's plaintext meets first.  The input's
 * first byte picks the size of the pieces it is fed in. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX 16384

static void
check(int cond)
{
	if (!cond)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t dst[MAX];
	struct stream_rx s;
	size_t step, off = 0, used, flen, frames = 0, framed = 0;
	enum stream_status st = STREAM_MORE;

	if (size < 1)
		return 0;
	step = (size_t)data[0] + 1;
	data++;
	size--;
	stream_rx_init(&s, MAX);
	while (off < size) {
		size_t piece = size - off < step ? size - off : step;

		st = stream_rx_feed(&s, data + off, piece, &used, dst, &flen);
		check(used <= piece);
		off += used;
		if (st == STREAM_FRAME) {
			uint8_t hdr[STREAM_HDR_LEN];

			check(flen >= 1 && flen <= MAX);
			/* The header the writer makes for it is the one read. */
			check(stream_frame_header(hdr, flen, MAX) == 0);
			check(memcmp(hdr, data + off - flen - STREAM_HDR_LEN, STREAM_HDR_LEN) == 0);
			check(memcmp(dst, data + off - flen, flen) == 0);
			frames++;
			framed += flen + STREAM_HDR_LEN;
			continue;
		}
		if (st != STREAM_MORE)
			break;
		check(used == piece);
	}
	/* Read to the end: what is not in whole frames is the one being
	 * gathered (and its header). */
	if (st == STREAM_MORE)
		check(size - framed <= STREAM_HDR_LEN + stream_rx_partial(&s) &&
		    size - framed >= stream_rx_partial(&s));
	check(frames * (STREAM_HDR_LEN + 1) <= framed);
	return 0;
}
