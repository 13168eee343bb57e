/* events.c - names of the event counters (JSON keys: never rename), and
 * where an event is counted. */
#include "ctx.h"
#include "events.h"
#include "peer.h"
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
	[EVENT_PATH_CHALLENGE_SENT] = "path_challenge_sent",
	[EVENT_PATH_BUDGET_BLOCKED] = "path_budget_blocked",
	[EVENT_PATH_VALIDATED] = "path_validated",
	[EVENT_PATH_FAILED] = "path_failed",
	[EVENT_PATH_RESPONSE_SENT] = "path_response_sent",
	[EVENT_PATH_RESPONSE_STALE] = "path_response_stale",
	[EVENT_PATH_NO_ID] = "path_no_id",
	[EVENT_TUN_GSO_REFUSED] = "tun_gso_refused",
	[EVENT_SEND_THREAD_BATCHES] = "send_thread_batches",
	[EVENT_TUN_THREAD_BATCHES] = "tun_thread_batches",
	[EVENT_OPEN_THREAD_BATCHES] = "open_thread_batches",
	[EVENT_PSK_MISMATCH] = "psk_mismatch",
	[EVENT_PQ_REFUSED] = "pq_refused",
	[EVENT_TRANSPORT_TCP] = "transport_tcp",
	[EVENT_TRANSPORT_UDP] = "transport_udp",
	[EVENT_TCP_ACCEPTED] = "tcp_accepted",
	[EVENT_TCP_REFUSED] = "tcp_refused",
	[EVENT_TCP_HANDSHAKE_FAILED] = "tcp_handshake_failed",
	[EVENT_TCP_FRAMES_BAD] = "tcp_frames_bad",
	[EVENT_TCP_CROSSED] = "tcp_crossed",
	[EVENT_METRICS_REFUSED] = "metrics_refused",
	[EVENT_HANDSHAKE_LATE_RECORD] = "handshake_late_record",
	[EVENT_TCP_LOOPED] = "tcp_looped",
	[EVENT_TCP_EVICTED] = "tcp_evicted",
	[EVENT_TCP_KEY_UPDATES] = "tcp_key_updates",
};

const char *
event_name(enum toud_event e)
{
	return (unsigned)e < EVENT__MAX && event_names[e] ? event_names[e] : "unknown";
}

void
event_count(struct toud *t, struct peer *p, enum toud_event e)
{
	if (p)
		p->events[e]++;
	else
		t->events[e]++;
}
