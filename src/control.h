/* control.h - the control socket touctl talks to.
 *
 * Protocol: the client connects, writes one request line ("show [PEER]
 * [--json]", "reload", "export [--name NAME] [--endpoint HOST[:PORT]]",
 * or "metrics"), and reads the reply until EOF.  The reply's first
 * line is "ok" or "error: MESSAGE"; the rest is the output to print.  Only
 * root and the daemon's own user may connect (SO_PEERCRED).
 *
 * The show of every peer is streamed, rendered as the client reads it.
 * If it cannot be completed after the output began (a reload changed the
 * list of peers meanwhile), what was sent is followed by a NUL byte, which
 * no output contains, and an "error: MESSAGE" line.  A client that stops
 * reading for 5 s is dropped; one that keeps reading is never cut. */
#ifndef TOUD_CONTROL_H
#define TOUD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

struct toud;
struct control;

/* The start of the error a "ping PEER" gets when the challenge went out
 * and no response came back (touctl counts it as lost and goes on). */
#define CONTROL_PING_LOST "no answer "

struct control *control_open(struct toud *t, const char *path);  /* NULL with errno */
void control_close(struct control *c);                          /* also unlinks the socket */
/* The socket's directory if control_open created it (under /run), so
 * the privilege drop can hand it to the daemon's user; else NULL. */
const char *control_dir_made(const struct control *c, char *buf, size_t len);

#endif
