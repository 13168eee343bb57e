/* stream.h - the framing of the TCP transport (DESIGN 2.5,
 * doc/protocol.md): each frame is a 2-byte big-endian length, then that
 * many bytes of one inner payload (GUE word and compact segment, whole IP
 * packet or control message).  A length of 0, or over the reader's
 * maximum, is an error that ends the stream.  Pure: no I/O. */
#ifndef TOUD_STREAM_H
#define TOUD_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STREAM_HDR_LEN 2

/* Write the header of a frame of len bytes into hdr: 0, or -1 when len is
 * 0 or over max (at most 65535). */
int stream_frame_header(uint8_t hdr[STREAM_HDR_LEN], size_t len, size_t max);

/* The reader: bytes come in pieces of any size (a frame may be split at
 * any byte); each frame is gathered into a buffer the caller gives. */
struct stream_rx {
	size_t max;                     /* largest frame accepted, <= 65535 */
	uint8_t hdr[STREAM_HDR_LEN];
	unsigned hdr_have;              /* header bytes read of the current frame */
	size_t want, have;              /* its length (once the header is in), bytes so far */
	bool bad;                       /* an error was seen: nothing more is read */
};

enum stream_status {
	STREAM_MORE,            /* every byte consumed, no frame complete */
	STREAM_FRAME,           /* a frame is complete in dst: *frame_len bytes */
	STREAM_ZERO,            /* a frame of length 0: the stream is bad */
	STREAM_OVERSIZE,        /* a length over max: the stream is bad */
};

void stream_rx_init(struct stream_rx *s, size_t max);
/* Consume data[0..len) up to the end of the current frame; *used says how
 * many bytes were consumed.  The frame's bytes are gathered in dst (room
 * for max bytes), which must be the same buffer, holding what earlier
 * calls put there, until the frame is complete; stream_rx_partial() says
 * how many of them there are. */
enum stream_status stream_rx_feed(struct stream_rx *s, const uint8_t *data, size_t len,
    size_t *used, uint8_t *dst, size_t *frame_len);
size_t stream_rx_partial(const struct stream_rx *s);
/* A printable name of a status, for logs. */
const char *stream_status_name(enum stream_status st);

#endif
