/* metrics.h - the daemon's counters, states and timestamps in the
 * Prometheus text exposition format, for `touctl metrics` (control.c) and
 * the HTTP endpoint of [interface] metrics (metrics_http.c).  touctl(8)
 * lists the metrics. */
#ifndef TOUD_METRICS_H
#define TOUD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct toud;

/* The Content-Type of the text (Prometheus text format 0.0.4). */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Append the text for t to out: what `touctl show --json` reads, at
 * monotonic time now_ms (toud_now()) and wall-clock time wall_ms (unix
 * milliseconds), from which the timestamps are derived.  No I/O.  0, or
 * -ENOMEM (out then holds part of it). */
int metrics_render(struct evbuffer *out, const struct toud *t, uint64_t now_ms,
    uint64_t wall_ms);
/* The same at the present time. */
int metrics_render_now(struct evbuffer *out, const struct toud *t);

/* Where a text written in batches has got to (metrics_render_next()).
 * Start zeroed, with full set for the peers' series: without it, the
 * public text, only the interface's families and no key fingerprint,
 * nothing that names a peer (for a reader who is not root nor toud's
 * user). */
struct metrics_cursor {
	bool full;
	unsigned step;                  /* 0: the interface's; then the peers' families */
	size_t peer;                    /* the next peer of the family */
};

/* The next part of the text at *cur: the interface's families, or the
 * samples of at most max_peers peers.  1: more to come, 0: done, or
 * -ENOMEM.  So a long text is written a part per turn of the loop, as
 * its reader takes it. */
int metrics_render_next(struct evbuffer *out, const struct toud *t, struct metrics_cursor *cur,
    size_t max_peers, uint64_t now_ms, uint64_t wall_ms);
/* The present unix time in milliseconds. */
uint64_t metrics_wall_now(void);

/* Append s escaped for the format: as a label value (label: backslash,
 * double quote and line feed escaped), or as # HELP text (backslash and
 * line feed).  Bytes that are not UTF-8 become U+FFFD.  0 or -ENOMEM. */
int metrics_escape(struct evbuffer *out, const char *s, bool label);

#endif
