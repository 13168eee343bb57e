/* timer.h - arming a libevent timer in milliseconds, the unit of every
 * deadline of the daemon (toud_now). */
#ifndef TOUD_TIMER_H
#define TOUD_TIMER_H

#include <stdint.h>
#include <sys/time.h>

#include <event2/event.h>

static inline void
timer_arm_ms(struct event *ev, uint64_t ms)
{
	struct timeval tv = { .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	evtimer_add(ev, &tv);
}

#endif
