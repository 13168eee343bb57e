/* events.c - names of the event counters (JSON keys: never rename). */
#include "events.h"
#include "util.h"

static const char *const event_names[EVENT__MAX] = {
	[EVENT_COOKIE_REQUESTED] = "cookie_requested",
	[EVENT_HANDSHAKE_ACCEPTED] = "handshake_accepted",
	[EVENT_HANDSHAKE_STARTED] = "handshake_started",
	[EVENT_HANDSHAKE_COMPLETED] = "handshake_completed",
	[EVENT_HANDSHAKE_FAILED] = "handshake_failed",
	[EVENT_SESSION_CLOSED] = "session_closed",
	[EVENT_KEEPALIVE_SENT] = "keepalive_sent",
	[EVENT_KEEPALIVE_RECEIVED] = "keepalive_received",
};

const char *
event_name(enum toud_event e)
{
	return (unsigned)e < EVENT__MAX && event_names[e] ? event_names[e] : "unknown";
}
