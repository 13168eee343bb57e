/* notify.c - sd_notify wrapper. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include <event2/event.h>
#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "ctx.h"
#include "notify.h"

static void
send_state(const char *s)
{
#ifdef HAVE_SYSTEMD
	sd_notify(0, s);
#else
	(void)s;
#endif
}

void
notify_ready(void)
{
	send_state("READY=1");
}

void
notify_reloading(void)
{
	struct timespec ts;
	char buf[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(buf, sizeof(buf), "RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000);
	send_state(buf);
}

void
notify_stopping(void)
{
	send_state("STOPPING=1");
}

void
notify_status(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	send_state(buf);
}

static void
watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	send_state("WATCHDOG=1");
}

int
notify_watchdog_start(struct toud *t)
{
#ifdef HAVE_SYSTEMD
	uint64_t usec = 0;
	struct timeval tv;

	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return 0;
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000);
	tv.tv_usec = (suseconds_t)(usec % 1000000);
	t->ev_watchdog = event_new(t->base, -1, EV_PERSIST, watchdog_cb, t);
	if (!t->ev_watchdog || event_add(t->ev_watchdog, &tv) < 0)
		return -ENOMEM;
#else
	(void)t;
	(void)watchdog_cb;
#endif
	return 0;
}

void
notify_watchdog_stop(struct toud *t)
{
	if (t->ev_watchdog)
		event_free(t->ev_watchdog);
	t->ev_watchdog = NULL;
}
