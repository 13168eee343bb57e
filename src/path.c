/* path.c - the path-validation state of a peer (path.h).  Pure. */
#include <string.h>

#include "path.h"

void
path_start(struct path_probe *pp, uint64_t session_id, const union sockaddr_union *addr,
    const struct ipaddr *local, const uint8_t token[PATH_TOKEN_LEN], size_t rx_bytes)
{
	memset(pp, 0, sizeof(*pp));
	pp->state = PATH_PROBING;
	pp->session_id = session_id;
	pp->addr = *addr;
	if (local)
		pp->local = *local;
	memcpy(pp->token, token, PATH_TOKEN_LEN);
	pp->rx_bytes = rx_bytes;
	pp->newest = true;
}

void
path_received(struct path_probe *pp, size_t bytes)
{
	if (pp->state == PATH_PROBING) {
		pp->rx_bytes += bytes;
		pp->newest = true;
	}
}

void
path_old_newest(struct path_probe *pp)
{
	pp->newest = false;
}

void
path_charge(struct path_probe *pp, size_t bytes)
{
	pp->tx_bytes += bytes;
}

bool
path_may_send(const struct path_probe *pp, size_t bytes)
{
	return pp->state == PATH_PROBING &&
	    pp->tx_bytes + bytes <= PATH_AMPLIFICATION * pp->rx_bytes;
}

void
path_sent(struct path_probe *pp, size_t bytes, uint64_t now)
{
	pp->tx_bytes += bytes;
	pp->next_ms = now + ((uint64_t)PATH_FIRST_RETRY_MS << pp->tries);
	pp->tries++;
}

enum path_due
path_due(const struct path_probe *pp, uint64_t now)
{
	if (pp->state != PATH_PROBING || now < pp->next_ms)
		return PATH_DUE_NOTHING;
	return pp->tries >= PATH_TRIES ? PATH_DUE_FAILED : PATH_DUE_CHALLENGE;
}

bool
path_answered(struct path_probe *pp, const uint8_t token[PATH_TOKEN_LEN])
{
	if (pp->state != PATH_PROBING || pp->tries == 0 ||
	    memcmp(pp->token, token, PATH_TOKEN_LEN) != 0)
		return false;
	pp->state = PATH_VALIDATED;
	return true;
}

bool
path_probing_for(const struct path_probe *pp, uint64_t session_id)
{
	return pp->state == PATH_PROBING && pp->session_id == session_id;
}

void
path_reset(struct path_probe *pp)
{
	memset(pp, 0, sizeof(*pp));
	pp->state = PATH_VALIDATED;
}

const char *
path_state_name(enum path_state st)
{
	return st == PATH_PROBING ? "probing" : "validated";
}
