/* metrics.h - the daemon's counters, states and timestamps in the
 * Prometheus text exposition format, for `touctl metrics` (control.c) and
 * the HTTP endpoint of [interface] metrics (metrics_http.c).  touctl(8)
 * lists the metrics. */
#ifndef TOUD_METRICS_H
#define TOUD_METRICS_H

#include <stdbool.h>
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

/* Append s escaped for the format: as a label value (label: backslash,
 * double quote and line feed escaped), or as # HELP text (backslash and
 * line feed).  Bytes that are not UTF-8 become U+FFFD.  0 or -ENOMEM. */
int metrics_escape(struct evbuffer *out, const char *s, bool label);

#endif
