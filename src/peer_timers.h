/* peer_timers.h - every per-peer timer, armed and disarmed from these
 * hooks named after what happened (peer_timers.c). */
#ifndef TOUD_PEER_TIMERS_H
#define TOUD_PEER_TIMERS_H

#include <stdbool.h>
#include <stdint.h>

#include "peer.h"

int peer_timers_init(struct peer *p);
void peer_timers_free(struct peer *p);
/* keepalive = changed by a reload. */
void peer_timers_reconfigure(struct peer *p);
/* We sent the peer data (not a control message). */
void peer_timers_data_sent(struct peer *p, uint64_t now);
/* Something authenticated arrived from the peer; data (not a control
 * message) arrived from it. */
void peer_timers_authenticated_rx(struct peer *p, uint64_t now);
void peer_timers_data_received(struct peer *p, uint64_t now);
/* The passive keepalive (its timer calls it): if nothing went
 * to the peer since its last data, send a keepalive; true if one went. */
bool peer_timers_passive_keepalive(struct peer *p);
/* The dead-peer rule at time now (the timer calls it): true if it made
 * the peer dead. */
bool peer_timers_check_dead(struct peer *p, uint64_t now);
/* Handshake hooks (handshake.c, rx.c). */
void peer_timers_handshake_started(struct peer *p);
void peer_timers_handshake_done(struct peer *p);
/* A handshake failed and none other runs: back off, then retry while there
 * is something to send. */
void peer_timers_handshake_failed(struct peer *p, const char *why);
/* The peer closed our session: handshake again (with back-off) until a
 * new session is up, where we know its address. */
void peer_timers_closed_by_peer(struct peer *p);
/* Someone waits for the peer (touctl wait): handshake now, whatever the
 * back-off, and retry until a session is up.  0 (also when up or a
 * handshake runs); -EOPNOTSUPP with encryption = none, -EDESTADDRREQ
 * without an endpoint, -EAGAIN while its name is not resolved, or
 * handshake_initiate()'s error. */
int peer_timers_wanted(struct peer *p);
/* A reload changed how the peer authenticates or where it is: what failed
 * before says nothing about the new settings, so the back-off starts over
 * and, where there is a reason to (packets held, keepalive, a reconnect),
 * a handshake starts at once. */
void peer_timers_auth_changed(struct peer *p);
/* A reload changed how the peer authenticates: its sessions are gone. */
void peer_timers_reset(struct peer *p);
/* A reload ended sessions of p (its key is no longer accepted): with none
 * left to send on, the peer is idle, or handshaking if a new handshake
 * already runs.  (A session that reaches its maximum age is ended by the
 * rekey timer here, with an event of its own.) */
void peer_timers_sessions_ended(struct peer *p);
/* Pure parts of the timers, for tests: the delay until the rekey timer is
 * due again, given a handshake may be running at the deadline. */
uint64_t peer_timers_rekey_delay(uint64_t established_ms, uint64_t rekey_ms, uint64_t now);
/* A path probe started, or its timer fired: send the challenge that is
 * due or give up (peer_timers.c; the timer calls it). */
void peer_timers_path_due(struct peer *p, uint64_t now);
/* touctl ping: send a path challenge on the current session's path; fn
 * is called once, when the response arrives (peer_path_response), after
 * PEER_PING_TIMEOUT_MS, or when the peer is freed.  -ENOTCONN without a
 * session, -EBUSY while another ping is in flight. */
int peer_timers_ping(struct peer *p, peer_ping_fn *fn, void *arg);
/* The ping in flight ended: its deadline goes. */
void peer_timers_ping_done(struct peer *p);
/* The host's addresses or routes changed under the path to p, which
 * forgot its local address (peer_netchange_apply): a keepalive at once,
 * so the peer learns our new endpoint without waiting for a timer (with
 * DTLS it authenticates, so the peer roams to it; without a session it
 * starts a handshake). */
void peer_timers_path_changed(struct peer *p);
/* The path policy (transport.h, path_policy.h; peer_timers.c feeds it and
 * carries out its decisions).  A transport's reports (transport_core's
 * up and down): ph is up, or what it had open ended (why: the peer's
 * last_error). */
struct peer_path;
void peer_timers_path_up(struct peer *p, struct peer_path *ph);
void peer_timers_path_down(struct peer *p, struct peer_path *ph, const char *why);
/* transport_core's mismatch: why stays in last_error until a path is up
 * (peer_error_keep()). */
void peer_timers_path_mismatch(struct peer *p, struct peer_path *ph, const char *why);
/* A path response (token) came on ph: true if it answers the policy's
 * probe of ph in flight. */
bool peer_timers_probe_answered(struct peer *p, struct peer_path *ph, const uint8_t *token,
    uint64_t now);
/* An authenticated record (not a probe or its answer) came on ph: a time
 * stamp per packet, fed to the policy at its tick; on a path that does not
 * carry the traffic at once (a follower moves with its peer). */
void peer_timers_path_rx_other(struct peer *p, struct peer_path *ph, uint64_t now);
static inline void
peer_timers_path_rx(struct peer *p, struct peer_path *ph, uint64_t now)
{
	ph->rx_ms = now;
	ph->tx_ms = 0;          /* what was sent before is answered */
	if (ph != peer_path_active(p))
		peer_timers_path_rx_other(p, ph, now);
}

/* The dead-peer interval: sent and unanswered this long means dead. */
uint64_t peer_timers_dead_ms(const struct peer *p);

#endif
