/* notify.h - service manager notifications (sd_notify).  Without
 * libsystemd, or outside systemd (NOTIFY_SOCKET unset), every call is a
 * no-op. */
#ifndef TOUD_NOTIFY_H
#define TOUD_NOTIFY_H

struct toud;

void notify_ready(void);
void notify_reloading(void);             /* RELOADING=1 + MONOTONIC_USEC */
void notify_stopping(void);
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Arm the watchdog keep-alive (WATCHDOG=1 at half of WATCHDOG_USEC) on the
 * event loop, if the manager asked for it.  0 or -errno. */
int notify_watchdog_start(struct toud *t);
void notify_watchdog_stop(struct toud *t);

#endif
