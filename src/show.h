/* show.h - render the daemon's state for `touctl show` (text like `wg
 * show`, or the JSON of DESIGN 4.1). */
#ifndef TOUD_SHOW_H
#define TOUD_SHOW_H

#include <stdbool.h>

struct toud;
struct offload_status;

/* The state of the daemon, all peers or one, as JSON (the stable fields of
 * DESIGN 4.1) or as text.  Returns a malloc'd string, or NULL with errno
 * (ENOENT: no such peer). */
char *show_render(struct toud *t, const char *peer, bool json);
/* The offloads in use now, for rendering (all false before the TUN and
 * sockets are open). */
void show_offload_status(const struct toud *t, struct offload_status *st);

#endif
