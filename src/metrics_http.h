/* metrics_http.h - [interface] metrics = ADDR:PORT: the text of `touctl
 * metrics` (metrics.h) over HTTP, GET /metrics, on the daemon's loop. */
#ifndef TOUD_METRICS_HTTP_H
#define TOUD_METRICS_HTTP_H

#include <stddef.h>

struct conf;
struct toud;
struct metrics_http;

/* At start, before the privilege drop: listen on t->conf's metrics
 * address if it has one (t->metrics_http); a failure is logged.  0 or
 * -errno. */
int metrics_http_start(struct toud *t);
/* Reload: follow the metrics keys of the new file.  An unchanged address
 * keeps its socket; a new one is listened on before the old one closes.
 * 0, or -errno with err saying why (then the old endpoint stays). */
int metrics_http_reload(struct toud *t, const struct conf *nc, char *err, size_t errlen);
void metrics_http_close(struct metrics_http *m);

#endif
