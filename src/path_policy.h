/* path_policy.h - which path carries a peer's traffic, decided from
 * evidence of life only.
 *
 * A path is one way to reach a peer: a transport (UDP, TCP direct, TCP
 * through a proxy, ...) registered with a preference rank (lower is
 * preferred: UDP 0, TCP 1).  The policy keeps per path whether it is up,
 * when it last carried an authenticated record, the probe in flight, the
 * smoothed RTT, the run of answered probes and the failed opens, and
 * answers each event with decisions: send on P (the active path), probe
 * Q, open Q, close Q, and when it wants its next tick.
 *
 * Evidence of life is an authenticated record received on a path and an
 * answered probe, never the silence of an inner flow.  When data sent on
 * the active path goes unanswered, the policy probes that path first and
 * leaves it only after POL_PROBE_MISSES probes in a row went unanswered
 * (the path "failed").  It moves back to a preferred path only after that
 * path answered POL_CONFIRM_N probes over at least POL_CONFIRM_MS, and at
 * most once each POL_MOVE_BOUND_MS (a move away from a failed path is
 * never held back).  Failed opens back off exponentially up to
 * POL_OPEN_MAX_MS; an address change probes again at once.
 *
 * A node that cannot open a path itself (the server side: leads is false
 * at path_policy_init()) follows: it sends on the up path that the peer's
 * newest authenticated records came from, and never probes, opens or
 * closes.
 *
 * What a probe is belongs to the transport: on UDP a path challenge on
 * the session, or, without a session, a handshake (its completion is the
 * answer); on TCP a challenge in the stream.  The answer to our probe is
 * reported as POL_EV_PROBE_ANSWERED; neither the peer's probes nor their
 * answers are POL_EV_RX: a follower must follow the peer's traffic, not
 * its background probes.  Packets held on a path until its handshake
 * completes count as sent on it (POL_EV_TX): a handshake that never
 * completes then fails the path as silence after data does.  On a move
 * the caller should send something authenticated (a keepalive) on the new
 * path at once, so that a following peer learns of the move.
 *
 * Pure: the clock (milliseconds, monotonic, never 0) is passed in; no I/O,
 * no allocation, no logging (the decisions carry a reason to log). */
#ifndef TOUD_PATH_POLICY_H
#define TOUD_PATH_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* Room for UDP, TCP, and a third transport or a second uplink. */
#define POL_PATHS_MAX 4
#define POL_NONE (-1)                   /* no path */

/* Data sent on the active path and no authenticated record back for this
 * long: probe it.  Well above the round trips we serve, short enough
 * that an outage is noticed within a second. */
#define POL_PROBE_AFTER_MS 1000
/* A probe is unanswered after max(POL_PROBE_TIMEOUT_MS, 2 * srtt),
 * doubled for each miss in a row (at most POL_PROBE_TIMEOUT_MAX_MS), and
 * POL_PROBE_MISSES misses in a row fail the path: about 4.5 s from the
 * first unanswered data on a short path.  Three: any record received
 * meanwhile ends the run, so a path losing a fifth of its packets each
 * way is not failed; one losing half its round trips and carrying little
 * may be, and then earns the traffic back through the hysteresis. */
#define POL_PROBE_TIMEOUT_MS 500
#define POL_PROBE_TIMEOUT_MAX_MS 8000
#define POL_PROBE_MISSES 3
/* A preferred path that is not active (it failed, or was never tried) is
 * probed in the background, first after POL_REPROBE_MIN_MS, doubling per
 * unanswered probe up to POL_REPROBE_MAX_MS: a path that returns is seen
 * within 15 s, and a blocked one costs a probe each 15 s. */
#define POL_REPROBE_MIN_MS 1000
#define POL_REPROBE_MAX_MS 15000
/* Hysteresis: a move back to a preferred path needs POL_CONFIRM_N answered
 * probes in a row spanning at least POL_CONFIRM_MS; while it confirms the
 * path is probed each POL_CONFIRM_EVERY_MS (= T / (N - 1)).  A path that
 * flickers back for a second does not win the traffic. */
#define POL_CONFIRM_N 3
#define POL_CONFIRM_MS 5000
#define POL_CONFIRM_EVERY_MS 2500
/* At most one move to a preferred path each minute: a path that comes
 * back and dies again costs at most two moves a minute (back, and away
 * when it fails), not one each few seconds. */
#define POL_MOVE_BOUND_MS 60000
/* A failed open (or a path that ended before it carried an authenticated
 * record) waits POL_OPEN_MIN_MS before the next, doubling up to
 * POL_OPEN_MAX_MS: with every transport blocked, one attempt a minute. */
#define POL_OPEN_MIN_MS 1000
#define POL_OPEN_MAX_MS 60000
/* A path left for a preferred one is closed (by the node that opened it)
 * once the new path has carried authenticated records for this long:
 * frames in flight on the old one drain, and the peer has seen the move. */
#define POL_LINGER_MS 10000
/* A follower does not go back to the path it just left for this long
 * after a move: frames the peer queued there before it moved still
 * arrive after its first ones on the new path. */
#define POL_FOLLOW_HOLD_MS 2000
/* The next tick is never sooner than this after the event: no busy loop,
 * whatever the state. */
#define POL_TICK_MIN_MS 100

enum pol_event {
	POL_EV_RX = 0,          /* an authenticated record came on the path */
	POL_EV_TX,              /* data was sent on it: an answer is awaited */
	POL_EV_PROBE_ANSWERED,  /* a probe was answered; arg: RTT in ms, 0 unknown */
	POL_EV_UP,              /* the path opened (ours, or the peer's accepted) */
	POL_EV_DOWN,            /* the path ended */
	POL_EV_OPEN_FAILED,     /* an open we asked for did not complete */
	POL_EV_ADDR_CHANGED,    /* the host's addresses changed (any path) */
	POL_EV_TICK,            /* the time asked for in next_tick_ms came */
};

enum pol_do {
	POL_DO_PROBE = 0,       /* send a probe on the path */
	POL_DO_OPEN,            /* open it (connect); answer with UP or OPEN_FAILED */
	POL_DO_CLOSE,           /* close it; it is down from now on, no DOWN needed */
};

/* What a path is, as show renders it. */
enum pol_state {
	POL_STATE_DOWN = 0,
	POL_STATE_OPENING,
	POL_STATE_FAILED,       /* up, but its probes went unanswered */
	POL_STATE_UP,
	POL_STATE_ACTIVE,       /* up and carrying the traffic */
};

struct pol_path {
	uint8_t rank;                   /* preference: lower wins */
	bool may_open;                  /* this node opens it, or only accepts it */
	bool up;
	bool opening;                   /* POL_DO_OPEN given, no answer yet */
	bool failed;                    /* POL_PROBE_MISSES probes in a row missed */
	uint64_t up_ms;                 /* when it came up */
	uint64_t rx_ms;                 /* last authenticated receipt, 0 never */
	uint64_t rx_since_up;           /* receipts since it came up */
	uint64_t awaiting_ms;           /* first send not answered yet, 0 none */
	uint64_t probe_ms;              /* the probe in flight was sent then, 0 none */
	uint64_t probe_deadline_ms;     /* ... and is missed then */
	uint64_t probe_next_ms;         /* a background probe is due then, 0 none */
	unsigned misses;                /* probes missed in a row */
	unsigned reprobes;              /* background probes missed in a row */
	unsigned answered;              /* probes answered in a row */
	uint64_t answered_since_ms;     /* the first of them was answered then */
	uint32_t srtt_ms;               /* smoothed RTT (RFC 6298 gain 1/8), 0 none */
	unsigned open_failures;         /* in a row */
	uint64_t open_after_ms;         /* no open before then */
	uint64_t probes_sent, probes_answered;   /* ever, for show */
};

struct path_policy {
	struct pol_path path[POL_PATHS_MAX];
	unsigned n;
	bool leads;                     /* false: a follower (see above) */
	int active;                     /* the path carrying traffic, or POL_NONE */
	int last_active;                /* the last path that carried it, or POL_NONE */
	int left;                       /* the path the last move left, or POL_NONE */
	uint64_t moved_ms;              /* the last move, 0 none */
	uint64_t moved_up_ms;           /* the last move to a preferred path, 0 none */
	uint64_t moves;                 /* moves between two paths, ever */
};

#define POL_ACTS_MAX (2 * POL_PATHS_MAX)

/* The answer to one event.  send is the path to send on from now on
 * (POL_NONE: no path is up; hold or drop); moved is set when this event
 * moved the traffic (from is the path it left, why a phrase to log:
 * "traffic moves to tcp (why)").  The actions are to be taken in order.
 * next_tick_ms is when the policy wants POL_EV_TICK, always later than
 * now by POL_TICK_MIN_MS at least, or 0 for no tick. */
struct pol_out {
	int send;
	bool moved;
	int from;
	const char *why;
	unsigned n;
	struct {
		enum pol_do what;
		unsigned path;
	} act[POL_ACTS_MAX];
	uint64_t next_tick_ms;
};

/* leads: this node may open paths and chooses (a client with a TCP
 * endpoint); false: it follows the peer (above). */
void path_policy_init(struct path_policy *pol, bool leads);
/* Registers a path, down: its index, or POL_NONE when all are taken. */
int path_policy_add(struct path_policy *pol, uint8_t rank, bool may_open);
/* Feeds one event (path is ignored for ADDR_CHANGED and TICK; an unknown
 * path is ignored) at now; *out is filled. */
void path_policy_event(struct path_policy *pol, enum pol_event ev, int path, uint32_t arg,
    uint64_t now, struct pol_out *out);
enum pol_state path_policy_state(const struct path_policy *pol, int path);
/* "down", "opening", "failed", "up", "active" (JSON in touctl show). */
const char *pol_state_name(enum pol_state st);
const char *pol_event_name(enum pol_event ev);
const char *pol_do_name(enum pol_do what);

#endif
