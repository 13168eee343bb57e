/* path.h - validating a peer's new outer address before it becomes the
 * endpoint (RFC 9000 8.2 and 9.3 are the model).
 *
 * A record that authenticates but comes from an address other than the
 * session's is not proof that the peer is there: an on-path attacker can
 * rewrite the source of genuine records.  So the receiver sends a path
 * challenge (control type 2, a random 64-bit token, sealed in the session)
 * to the new address and moves there only when the path response (type 3,
 * the token echoed) comes back.  Until then the new address gets at most
 * PATH_AMPLIFICATION times the bytes received from it, challenges and data
 * together: data goes there while the newest records come from it (a NAT
 * rebinding loses nothing) and the budget lasts, else to the old address.
 * Challenges are repeated with a doubling interval and the probe fails
 * after PATH_TRIES.
 *
 * Pure: the state and its rules; the caller sends, keeps the timer and
 * draws the tokens. */
#ifndef TOUD_PATH_H
#define TOUD_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define PATH_AMPLIFICATION 3            /* bytes sent <= 3 x bytes received */
#define PATH_TRIES 4                    /* challenges before the probe fails */
#define PATH_FIRST_RETRY_MS 250         /* then doubled: 250, 500, 1000 */
#define PATH_TOKEN_LEN 8

enum path_state {
	PATH_VALIDATED,         /* the session's address answered (or no probe runs) */
	PATH_PROBING,           /* a new address is being challenged */
};

struct path_probe {
	enum path_state state;
	uint64_t session_id;            /* the session whose address it would move */
	union sockaddr_union addr;      /* the address being challenged */
	struct ipaddr local;            /* our address its records arrived at */
	uint8_t token[PATH_TOKEN_LEN];
	uint32_t wire_index;            /* the session ID (sessid.h) used towards addr */
	unsigned tries;                 /* challenges sent */
	bool newest;                    /* the newest record came from addr */
	uint64_t next_ms;               /* when the next challenge (or failure) is due */
	uint64_t rx_bytes, tx_bytes;    /* from / to addr since the probe began */
};

/* Start probing addr (whose first record, rx_bytes long, just arrived)
 * with token; any probe of another address is replaced. */
void path_start(struct path_probe *pp, uint64_t session_id, const union sockaddr_union *addr,
    const struct ipaddr *local, const uint8_t token[PATH_TOKEN_LEN], size_t rx_bytes);
/* Another authenticated record from the probed address. */
void path_received(struct path_probe *pp, size_t bytes);
/* May bytes more go to the probed address now? */
bool path_may_send(const struct path_probe *pp, size_t bytes);
/* A challenge of bytes went out at now: count it, schedule the next. */
void path_sent(struct path_probe *pp, size_t bytes, uint64_t now);
/* Anything else of bytes went to addr (data, a response): count it. */
void path_charge(struct path_probe *pp, size_t bytes);
/* A newer record came from the session's own address. */
void path_old_newest(struct path_probe *pp);

enum path_due {
	PATH_DUE_NOTHING,       /* not probing, or not yet time */
	PATH_DUE_CHALLENGE,     /* send another challenge */
	PATH_DUE_FAILED,        /* every challenge went unanswered: give up */
};
enum path_due path_due(const struct path_probe *pp, uint64_t now);
/* A path response with this token: true (and the probe ends) if it
 * answers the running probe. */
bool path_answered(struct path_probe *pp, const uint8_t token[PATH_TOKEN_LEN]);
/* Is a probe running for (an address of) the session named session_id? */
bool path_probing_for(const struct path_probe *pp, uint64_t session_id);
/* Stop probing (failed, or the session changed). */
void path_reset(struct path_probe *pp);
const char *path_state_name(enum path_state st);

#endif
