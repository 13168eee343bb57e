/* show.h - render the daemon's state for `touctl show` (text like `wg
 * show`, or the JSON of DESIGN 4.1). */
#ifndef TOUD_SHOW_H
#define TOUD_SHOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct toud;
struct offload_status;
struct show_stream;

/* The state of the daemon, all peers or one, as JSON (the stable fields of
 * DESIGN 4.1) or as text.  Returns a malloc'd string, or NULL with errno
 * (ENOENT: no such peer). */
char *show_render(struct toud *t, const char *peer, bool json);

/* The show of every peer, rendered a few at a time as the reader takes
 * it (control.c), so that no one request holds the whole text nor the
 * event loop for long.  The output is what show_render() gives for the
 * same state.  Between calls the daemon goes on: a stream keeps no
 * peer, only its place in the list (t->peers_gen).  NULL on ENOMEM. */
struct show_stream *show_stream_new(struct toud *t, bool json);
/* Write the next part to f: the interface on the first call, then up to
 * max peers, then the end.  1: more to come; 0: that was the end; -1 with
 * errno ESTALE: the list of peers changed since the stream began (a
 * reload), and what is written cannot be completed consistently. */
int show_stream_next(struct show_stream *s, FILE *f, size_t max);
void show_stream_free(struct show_stream *s);
/* The offloads in use now, for rendering (all false before the TUN and
 * sockets are open). */
void show_offload_status(const struct toud *t, struct offload_status *st);

#endif
