/* peer_fsm.h - the states of a peer, the events that move it, and the
 * transition table (peer_fsm.c).  Pure: no I/O, so tests link it alone.
 * peer_event() in peer.c is the only code that applies it. */
#ifndef TOUD_PEER_FSM_H
#define TOUD_PEER_FSM_H

/* The names are a stable interface (`state` in touctl show --json). */
enum peer_state { PEER_IDLE, PEER_HANDSHAKING, PEER_UP, PEER_DEAD, PEER_STATE__MAX };

enum peer_event {
	PEER_EV_HANDSHAKE_STARTED,      /* we started a handshake and have no session */
	PEER_EV_UP,                     /* a session came up, or traffic authenticated */
	PEER_EV_HANDSHAKE_FAILED,       /* a handshake failed and no other runs */
	PEER_EV_CLOSED,                 /* the peer closed the session we sent on */
	PEER_EV_QUIET,                  /* nothing received for the liveness window, keepalive off */
	PEER_EV_DEAD,                   /* the peer stopped answering (see toud(8)) */
	PEER_EV_RESET,                  /* a reload changed how the peer authenticates */
	PEER_EV_SESSIONS_ENDED,         /* we ended its sessions (maximum age), none left */
	PEER_EV__MAX
};

const char *peer_state_name(enum peer_state s);
const char *peer_event_name(enum peer_event e);
/* The state after event e in state s. */
enum peer_state peer_fsm_next(enum peer_state s, enum peer_event e);

#endif
