/* stream.c - the framing of the TCP transport: a 2-byte length before each
 * inner payload (stream.h). */
#include <string.h>

#include "stream.h"

int
stream_frame_header(uint8_t hdr[STREAM_HDR_LEN], size_t len, size_t max)
{
	if (len == 0 || len > max || len > 0xffff)
		return -1;
	hdr[0] = (uint8_t)(len >> 8);
	hdr[1] = (uint8_t)len;
	return 0;
}

void
stream_rx_init(struct stream_rx *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->max = max > 0xffff ? 0xffff : max;
}

size_t
stream_rx_partial(const struct stream_rx *s)
{
	return s->have;
}

enum stream_status
stream_rx_feed(struct stream_rx *s, const uint8_t *data, size_t len, size_t *used,
    uint8_t *dst, size_t *frame_len)
{
	size_t n, off = 0;

	*used = 0;
	if (s->bad)
		return STREAM_OVERSIZE;
	while (s->hdr_have < STREAM_HDR_LEN && off < len)
		s->hdr[s->hdr_have++] = data[off++];
	if (s->hdr_have < STREAM_HDR_LEN) {
		*used = off;
		return STREAM_MORE;
	}
	if (!s->want) {
		s->want = (size_t)s->hdr[0] << 8 | s->hdr[1];
		if (s->want == 0 || s->want > s->max) {
			s->bad = true;
			*used = off;
			return s->want ? STREAM_OVERSIZE : STREAM_ZERO;
		}
	}
	n = len - off < s->want - s->have ? len - off : s->want - s->have;
	memcpy(dst + s->have, data + off, n);
	s->have += n;
	*used = off + n;
	if (s->have < s->want)
		return STREAM_MORE;
	*frame_len = s->want;
	s->hdr_have = 0;
	s->want = s->have = 0;
	return STREAM_FRAME;
}

const char *
stream_status_name(enum stream_status st)
{
	switch (st) {
	case STREAM_MORE:
		return "incomplete";
	case STREAM_FRAME:
		return "frame";
	case STREAM_ZERO:
		return "a frame of length 0";
	case STREAM_OVERSIZE:
		return "a frame over the largest length";
	}
	return "unknown";
}
