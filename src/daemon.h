/* daemon.h - the core's start-up, in order, and the one teardown that
 * undoes it (daemon.c).  toud.c runs daemon_start(), then sets up its
 * signals and drops privileges, then daemon_ready(); daemon_stop() ends
 * whatever was reached.
 *
 * A unit test's node is the same core without a kernel: it sets what the
 * kernel would give (t->base, t->tun, t->udp, heap-allocated as theirs
 * are) and the seams of ctx.h, runs daemon_start_peers() and
 * daemon_start_paths(), the steps daemon_start() takes in that order, and
 * ends with daemon_stop(). */
#ifndef TOUD_DAEMON_H
#define TOUD_DAEMON_H

struct event_base;
struct toud;

/* Everything that needs privileges: the event loop, the TUN and its
 * addresses, the peers and their routes, the sockets, a full tunnel's
 * rules, the control socket, the core, the host monitor.  Each failure is
 * logged where it happens; 0 or -errno. */
int daemon_start(struct toud *t);
/* Once privileges are dropped: the data threads (capabilities belong to
 * each thread), the watchdog, the "up" line and READY=1.  0 or -errno. */
int daemon_ready(struct toud *t);
/* Undo daemon_start(), whatever point it, or a test, reached: what is
 * being opened is delivered and the output queue sent while the peers
 * still exist, and each established session is closed first. */
void daemon_stop(struct toud *t);

/* The main loop's base, with its priorities (daemon.c says which); NULL
 * when out of memory. */
struct event_base *daemon_base_new(void);

/* The steps of daemon_start() that need no kernel. */
/* The prefix table and the peers, with their routes (kernel routes only
 * with t->rtnl). */
int daemon_start_peers(struct toud *t);
/* Over t->tun and t->udp: the sending and receiving directions, the TUN's
 * one writer (tunout.c) and, with DTLS, the handshake. */
int daemon_start_paths(struct toud *t);

#endif
