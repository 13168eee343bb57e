/* peer_fsm.c - the peer state machine as a table.
 *
 *   state \ event  started      up   failed  closed  quiet  dead  reset  ended
 *   idle           handshaking  up   dead    idle    idle   dead  idle   idle
 *   handshaking    handshaking  up   dead    idle    hs     dead  idle   hs
 *   up             up           up   up      idle    idle   dead  idle   idle
 *   dead           handshaking  up   dead    idle    dead   dead  idle   dead
 *
 * idle: nothing to say (never contacted, quiet, or closed by the peer);
 * handshaking: our first handshake runs; up: a session (or, with
 * encryption = none, recent traffic); dead: handshakes fail, or the peer
 * stopped answering what we send.  A failed rekey beside a live session
 * leaves an up peer up; the liveness rules are in peer_timers.c and
 * toud(8), which has this table too. */
#include "peer_fsm.h"
#include "util.h"

static const char *const state_names[PEER_STATE__MAX] = {
	[PEER_IDLE] = "idle",
	[PEER_HANDSHAKING] = "handshaking",
	[PEER_UP] = "up",
	[PEER_DEAD] = "dead",
};

static const char *const event_names[PEER_EV__MAX] = {
	[PEER_EV_HANDSHAKE_STARTED] = "handshake started",
	[PEER_EV_UP] = "authenticated",
	[PEER_EV_HANDSHAKE_FAILED] = "handshake failed",
	[PEER_EV_CLOSED] = "closed by the peer",
	[PEER_EV_QUIET] = "quiet",
	[PEER_EV_DEAD] = "not answering",
	[PEER_EV_RESET] = "authentication changed",
	[PEER_EV_SESSIONS_ENDED] = "sessions ended",
};

#define I PEER_IDLE
#define H PEER_HANDSHAKING
#define U PEER_UP
#define D PEER_DEAD
static const enum peer_state next_state[PEER_STATE__MAX][PEER_EV__MAX] = {
	/*                   started up failed closed quiet dead reset ended */
	[PEER_IDLE] =        { H,    U,  D,     I,     I,    D,   I,    I },
	[PEER_HANDSHAKING] = { H,    U,  D,     I,     H,    D,   I,    H },
	[PEER_UP] =          { U,    U,  U,     I,     I,    D,   I,    I },
	[PEER_DEAD] =        { H,    U,  D,     I,     D,    D,   I,    D },
};
#undef I
#undef H
#undef U
#undef D

const char *
peer_state_name(enum peer_state s)
{
	return (unsigned)s < PEER_STATE__MAX ? state_names[s] : "unknown";
}

const char *
peer_event_name(enum peer_event e)
{
	return (unsigned)e < PEER_EV__MAX ? event_names[e] : "unknown";
}

enum peer_state
peer_fsm_next(enum peer_state s, enum peer_event e)
{
	if ((unsigned)s >= PEER_STATE__MAX || (unsigned)e >= PEER_EV__MAX)
		return s;
	return next_state[s][e];
}
