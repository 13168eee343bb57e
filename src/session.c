/* session.c - the session-ID table, the per-session drain timer, and
 * opening and sealing records.
 *
 * A leaf: session_open() and session_seal() report what happened and
 * never call onward.  rx.c acts on the result of a received record,
 * handshake.c creates sessions and runs their handshake timers, tx.c owns
 * the queue the records leave through (the DTLS output callback the
 * creator installed). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/rand.h>

#include "dtls.h"
#include "peer.h"
#include "session.h"
#include "toud.h"

static inline unsigned
bucket(uint64_t id)
{
	return (unsigned)((id ^ id >> 29 ^ id >> 47) & (TOUD_SESSION_BUCKETS - 1));
}

struct session *
session_find(struct toud *t, uint64_t id)
{
	struct session *s;

	for (s = t->sessions[bucket(id)]; s; s = s->hnext)
		if (s->id == id)
			return s;
	return NULL;
}

void
session_insert(struct session *s)
{
	struct toud *t = s->t;
	unsigned b = bucket(s->id);

	s->hnext = t->sessions[b];
	t->sessions[b] = s;
}

static void
table_remove(struct session *s)
{
	struct session **pp;

	for (pp = &s->t->sessions[bucket(s->id)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == s) {
			*pp = s->hnext;
			return;
		}
	}
}

static void
drain_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	session_free(arg);
}

struct session *
session_alloc(struct toud *t, uint64_t id, const union sockaddr_union *addr, uint64_t now)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->t = t;
	s->id = id;
	s->addr = *addr;
	s->created_ms = now;
	if (!(s->ev_drain = evtimer_new(t->base, drain_cb, s))) {
		free(s);
		return NULL;
	}
	return s;
}

uint64_t
session_new_id(struct toud *t)
{
	uint64_t id;

	do {
		if (RAND_bytes((unsigned char *)&id, sizeof(id)) != 1)
			return 0;
	} while (id == 0 || session_find(t, id));
	return id;
}

void
session_free(struct session *s)
{
	struct peer *p = s->peer;

	if (p) {
		if (p->cur == s)
			p->cur = NULL;
		if (p->next == s)
			p->next = NULL;
		if (p->prev == s)
			p->prev = NULL;
	}
	if (s->half_open && s->t->n_half_open)
		s->t->n_half_open--;
	table_remove(s);
	if (s->ev_timer)
		event_free(s->ev_timer);
	if (s->ev_drain)
		event_free(s->ev_drain);
	dtls_sess_free(s->dtls);
	free(s);
}

void
session_free_all(struct toud *t)
{
	unsigned b;

	for (b = 0; b < TOUD_SESSION_BUCKETS; b++)
		while (t->sessions[b])
			session_free(t->sessions[b]);
}

void
session_drain(struct session *s)
{
	struct timeval tv = { .tv_sec = SESSION_DRAIN_MS / 1000 };

	if (s->ev_timer)
		evtimer_del(s->ev_timer);
	evtimer_add(s->ev_drain, &tv);
}

enum session_result
session_open(struct session *s, const uint8_t *rec, size_t len, uint8_t *out, size_t cap,
    size_t *outlen, uint64_t *seq, uint64_t now)
{
	enum dtls_result r;

	*outlen = 0;
	*seq = 0;
	r = dtls_sess_input(s->dtls, rec, len, out, cap, outlen, seq);
	s->early_dropped += dtls_sess_take_early(s->dtls);
	switch (r) {
	case DTLS_AGAIN:
		return SESSION_NOTHING;
	case DTLS_DONE:
		return SESSION_ESTABLISHED;
	case DTLS_DATA:
		s->last_rx_ms = now;
		s->unanswered_ms = 0;
		s->bytes += *outlen;
		return SESSION_DATA;
	case DTLS_ERR_HANDSHAKE:
		return SESSION_FAILED;
	case DTLS_ERR_REPLAY:
		return SESSION_REPLAY;
	case DTLS_ERR_OLD:
		return SESSION_REPLAY_OLD;
	case DTLS_ERR_RECORD:
		return SESSION_BAD_RECORD;
	case DTLS_ERR_CLOSED:
		return SESSION_CLOSED;
	}
	return SESSION_BAD_RECORD;
}

int
session_seal(struct session *s, const uint8_t *payload, size_t len, uint8_t tos)
{
	int rc;

	s->tx_tos = tos;
	rc = dtls_sess_seal(s->dtls, payload, len);
	s->tx_tos = 0;
	if (rc == 0)
		s->bytes += len;
	return rc;
}

int
session_seal_to(struct session *s, const uint8_t *payload, size_t len,
    const union sockaddr_union *to, const struct ipaddr *local)
{
	int rc;

	s->tx_to = to;
	s->tx_local = local;
	rc = session_seal(s, payload, len, 0);
	s->tx_to = NULL;
	s->tx_local = NULL;
	return rc;
}
