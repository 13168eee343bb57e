/* session.c - the session-ID table, the per-session drain timer, and
 * opening and sealing records.
 *
 * A leaf: session_open() and session_seal() report what happened and
 * never call onward.  rx.c acts on the result of a received record,
 * handshake.c creates sessions and runs their handshake timers, tx.c
 * queues the records session_seal() returns and OpenSSL's own (the DTLS
 * output callback the creator installed). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "ctx.h"
#include "dtls.h"
#include "peer.h"
#include "record.h"
#include "session.h"

static inline size_t
bucket(const struct session_table *st, uint64_t id)
{
	uint64_t h = (id ^ st->hash_key) * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h ^ h >> 32) & (st->n_buckets - 1);
}

struct session_table *
session_table_new(void)
{
	struct session_table *st = calloc(1, sizeof(struct session_table));

	if (st && RAND_bytes((unsigned char *)&st->hash_key, sizeof(st->hash_key)) != 1) {
		free(st);
		return NULL;
	}
	return st;
}

void
session_table_free(struct session_table *st)
{
	if (!st)
		return;
	while (st->list)
		session_free(st->list);
	free(st->buckets);
	free(st->named);
	free(st);
}

static inline size_t
named_bucket(const struct session_table *st, uint64_t id)
{
	uint64_t h = (id ^ ~st->hash_key) * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h ^ h >> 32) & (st->n_named_buckets - 1);
}

/* As table_grow(), for the chains by name. */
static void
named_grow(struct session_table *st)
{
	size_t n = st->n_named_buckets ? st->n_named_buckets * 2 : SESSION_BUCKETS, i;
	struct session **nb = calloc(n, sizeof(*nb)), *s, *next;
	struct session_table tmp = *st;

	if (!nb)
		return;
	tmp.n_named_buckets = n;
	for (i = 0; i < st->n_named_buckets; i++) {
		for (s = st->named[i]; s; s = next) {
			size_t b = named_bucket(&tmp, s->id);

			next = s->nnext;
			s->nnext = nb[b];
			nb[b] = s;
		}
	}
	free(st->named);
	st->named = nb;
	st->n_named_buckets = n;
}

static void
named_add(struct session_table *st, struct session *s)
{
	size_t b;

	if (st->n >= 2 * st->n_named_buckets)
		named_grow(st);
	if (!st->n_named_buckets)
		return;
	b = named_bucket(st, s->id);
	s->nnext = st->named[b];
	st->named[b] = s;
}

static void
named_remove(struct session_table *st, struct session *s)
{
	struct session **pp;

	if (!st->n_named_buckets)
		return;
	for (pp = &st->named[named_bucket(st, s->id)]; *pp; pp = &(*pp)->nnext) {
		if (*pp == s) {
			*pp = s->nnext;
			return;
		}
	}
}

/* Double the buckets (the first time: SESSION_BUCKETS of them).  Without
 * memory the chains only get longer. */
static void
table_grow(struct session_table *st)
{
	size_t n = st->n_buckets ? st->n_buckets * 2 : SESSION_BUCKETS, i;
	struct session_alias **nb = calloc(n, sizeof(*nb)), *a, *next;
	struct session_table tmp = *st;

	if (!nb)
		return;
	tmp.buckets = nb;
	tmp.n_buckets = n;
	for (i = 0; i < st->n_buckets; i++) {
		for (a = st->buckets[i]; a; a = next) {
			size_t b = bucket(&tmp, a->id);

			next = a->hnext;
			a->hnext = nb[b];
			nb[b] = a;
		}
	}
	free(st->buckets);
	st->buckets = nb;
	st->n_buckets = n;
}

size_t
session_count(const struct toud *t)
{
	return t->sessions ? t->sessions->n : 0;
}

unsigned
session_half_open(const struct toud *t)
{
	return t->sessions ? t->sessions->n_half_open : 0;
}

void
session_half_open_add(struct session *s)
{
	struct session_table *st = s->t->sessions;

	if (s->half_open)
		return;
	s->half_open = true;
	st->n_half_open++;
	s->hnext_open = st->half_open;
	if (s->hnext_open)
		s->hnext_open->hprev_open = &s->hnext_open;
	s->hprev_open = &st->half_open;
	st->half_open = s;
}

struct session *
session_next_half_open(const struct toud *t, const struct session *s)
{
	if (s)
		return s->hnext_open;
	return t->sessions ? t->sessions->half_open : NULL;
}

void
session_half_open_done(struct session *s)
{
	if (!s->half_open)
		return;
	if (s->t->sessions->n_half_open)
		s->t->sessions->n_half_open--;
	*s->hprev_open = s->hnext_open;
	if (s->hnext_open)
		s->hnext_open->hprev_open = s->hprev_open;
	s->hnext_open = NULL;
	s->hprev_open = NULL;
	s->half_open = false;
}

struct session *
session_next(const struct toud *t, const struct session *s)
{
	if (s)
		return s->lnext;
	return t->sessions ? t->sessions->list : NULL;
}

struct session *
session_find(struct toud *t, uint64_t id, uint32_t *index)
{
	struct session_alias *a;

	if (!t->sessions->n_buckets)
		return NULL;
	for (a = t->sessions->buckets[bucket(t->sessions, id)]; a; a = a->hnext) {
		if (a->id == id) {
			if (index)
				*index = a->index;
			return a->s;
		}
	}
	return NULL;
}

struct session *
session_named(struct toud *t, uint64_t id)
{
	struct session_table *st = t->sessions;
	struct session *s;

	if (!st->n_named_buckets)
		return NULL;
	for (s = st->named[named_bucket(st, id)]; s; s = s->nnext)
		if (s->id == id)
			return s;
	return NULL;
}

static void
alias_add(struct session_alias *a)
{
	struct session_table *st = a->s->t->sessions;
	size_t b;

	if (st->n_ids >= 2 * st->n_buckets)
		table_grow(st);
	if (!st->n_buckets)
		return;         /* no memory for the first buckets: unreachable by ID */
	b = bucket(st, a->id);
	st->n_ids++;
	a->hnext = st->buckets[b];
	st->buckets[b] = a;
	a->in_table = true;
}

static void
alias_remove(struct session_alias *a)
{
	struct session_table *st;
	struct session_alias **pp;

	if (!a->in_table)
		return;         /* an alias never added has no session yet */
	st = a->s->t->sessions;
	for (pp = &st->buckets[bucket(st, a->id)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == a) {
			*pp = a->hnext;
			st->n_ids--;
			break;
		}
	}
	a->in_table = false;
}

void
session_insert(struct session *s)
{
	struct session_table *st = s->t->sessions;
	struct session_alias *a = &s->alias[0];

	a->s = s;
	a->id = s->id;
	a->index = 0;
	alias_add(a);
	s->wire_id = s->id;
	s->lnext = st->list;
	if (s->lnext)
		s->lnext->lprev = &s->lnext;
	s->lprev = &st->list;
	st->list = s;
	named_add(st, s);
	st->n++;
}

uint64_t
session_ids_wire(const struct session *s, uint32_t index)
{
	struct session *owner;
	uint64_t id;

	if (index == 0)
		return s->id;
	if (!s->ids_derived || !(id = sessid_derive(s->id_seed, index)))
		return 0;
	id = sessid_route(id, s->server_id);
	/* Taken by another session of this node (a chance of 2^-64 an ID):
	 * skipped here.  The peer does not know; should it send with that ID,
	 * the record goes to the other session, fails to authenticate and is
	 * counted, and the next ID it moves to is accepted again. */
	owner = session_find(s->t, id, NULL);
	return owner && owner != s ? 0 : id;
}

/* Put exactly the indices [lo_index, newest + SESSID_WINDOW] in the table. */
static void
ids_sync(struct session *s)
{
	uint32_t newest = s->tx_index > s->rx_index ? s->tx_index : s->rx_index;
	uint32_t hi = newest + (s->ids_derived ? SESSID_WINDOW : 0), lo, k;

	if (s->lo_index > newest)
		s->lo_index = newest;
	if (hi - s->lo_index >= SESSION_ID_SLOTS)
		s->lo_index = hi - SESSION_ID_SLOTS + 1;
	lo = s->lo_index;
	for (k = 0; k < SESSION_ID_SLOTS; k++) {
		struct session_alias *a = &s->alias[k];
		uint32_t i = lo + (k + SESSION_ID_SLOTS - lo % SESSION_ID_SLOTS) % SESSION_ID_SLOTS;
		bool want = i <= hi;
		uint64_t id;

		if (a->in_table && (!want || a->index != i))
			alias_remove(a);
		if (!want || a->in_table)
			continue;
		if (!(id = session_ids_wire(s, i)))
			continue;
		a->s = s;
		a->id = id;
		a->index = i;
		alias_add(a);
	}
}

static void
retire_arm(struct session *s)
{
	struct timeval tv = { .tv_sec = SESSION_RETIRE_MS / 1000 };

	if (s->ev_retire)
		evtimer_add(s->ev_retire, &tv);
}

static void
retire_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd;
	(void)what;
	s->lo_index = s->tx_index < s->rx_index ? s->tx_index : s->rx_index;
	ids_sync(s);
}

void
session_ids_start(struct session *s)
{
	if (dtls_sess_export(s->dtls, SESSID_LABEL, s->id_seed, sizeof(s->id_seed)) < 0)
		return;         /* keeps ID 0 for its life: it works, only unrotated */
	s->ids_derived = true;
	s->server_id = dtls_sess_server_id(s->dtls);
	ids_sync(s);
	if (s->initiator && s->server_id)
		session_ids_use(s, 1);
}

void
session_ids_received(struct session *s, uint32_t index)
{
	if (index <= s->rx_index)
		return;
	s->rx_index = index;
	ids_sync(s);
	retire_arm(s);
}

uint32_t
session_ids_fresh(const struct session *s)
{
	uint32_t i = (s->tx_max_index > s->rx_index ? s->tx_max_index : s->rx_index) + 1;
	uint32_t parity = s->initiator ? 1 : 0;

	/* Within the window the peer accepts (it has seen rx_index from us
	 * at most), and of our own parity: the IDs one side starts a path
	 * with are never the other's, even when a challenge went unanswered
	 * and one side does not know the other used it. */
	for (; i <= s->rx_index + SESSID_WINDOW; i++)
		if ((i & 1) == parity && session_ids_wire(s, i))
			return i;
	return 0;
}

void
session_ids_begin(struct session *s, uint32_t index)
{
	if (index > s->tx_max_index)
		s->tx_max_index = index;
}

void
session_ids_use(struct session *s, uint32_t index)
{
	uint64_t id = session_ids_wire(s, index);

	if (index <= s->tx_index || !id)
		return;         /* only ever forward */
	s->tx_index = index;
	if (index > s->tx_max_index)
		s->tx_max_index = index;
	s->wire_id = id;
	s->rotations++;
	ids_sync(s);
	retire_arm(s);
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
	s->wire_id = id;
	if (!(s->ev_drain = evtimer_new(t->base, drain_cb, s)) ||
	    !(s->ev_retire = evtimer_new(t->base, retire_cb, s))) {
		if (s->ev_drain)
			event_free(s->ev_drain);
		free(s);
		return NULL;
	}
	return s;
}

uint64_t
session_new_id(struct toud *t, uint8_t server_id)
{
	uint64_t id;

	do {
		if (RAND_bytes((unsigned char *)&id, sizeof(id)) != 1)
			return 0;
		id = sessid_first(id, server_id);
	} while (session_find(t, id, NULL) || session_named(t, id));
	return id;
}

void
session_free(struct session *s)
{
	struct peer *p = s->peer;
	unsigned k;

	if (p) {
		if (p->cur == s)
			p->cur = NULL;
		if (p->next == s)
			p->next = NULL;
		if (p->prev == s)
			p->prev = NULL;
	}
	session_half_open_done(s);
	for (k = 0; k < SESSION_ID_SLOTS; k++)
		alias_remove(&s->alias[k]);
	if (s->lprev) {
		*s->lprev = s->lnext;
		if (s->lnext)
			s->lnext->lprev = s->lprev;
		named_remove(s->t->sessions, s);
		s->t->sessions->n--;
	}
	if (s->ev_retire)
		event_free(s->ev_retire);
	OPENSSL_cleanse(s->id_seed, sizeof(s->id_seed));
	if (s->ev_timer)
		event_free(s->ev_timer);
	if (s->ev_drain)
		event_free(s->ev_drain);
	dtls_sess_free(s->dtls);
	free(s);
}

void
session_end(struct session *s)
{
	if (s->dtls)
		dtls_sess_close(s->dtls);
	session_free(s);
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
		/* The ML-KEM-768 exchange completes with a record that may
		 * carry data (dtls.h). */
		if (*outlen)
			session_opened(s, *outlen, now);
		return SESSION_ESTABLISHED;
	case DTLS_DATA:
		session_opened(s, *outlen, now);
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

void
session_opened(struct session *s, size_t len, uint64_t now)
{
	/* The peer is past its handshake: what OpenSSL kept for it goes. */
	if (s->dtls)
		dtls_sess_confirmed(s->dtls);
	s->last_rx_ms = now;
	s->unanswered_ms = 0;
	s->bytes += len;
}

struct record_rx *
session_record_rx(struct session *s)
{
	return s->established && s->dtls ? dtls_sess_record_rx(s->dtls) : NULL;
}

size_t
session_data_prefix(const struct session *s)
{
	return s->dtls ? dtls_sess_data_prefix(s->dtls) : 0;
}

/* After sealing: the volume, and whether the numbers are running out. */
static int
sealed(struct session *s, size_t len, int rc)
{
	const struct record_tx *tx;

	if (rc == 0) {
		s->bytes += len;
		tx = dtls_sess_record_tx(s->dtls);
		if (tx && tx->seq > RECORD_SEQ_MAX - SESSION_SEQ_RESERVE)
			s->seq_low = true;
	}
	return rc;
}

int
session_seal(struct session *s, const uint8_t *payload, size_t len, struct dtls_record *r)
{
	return sealed(s, len, dtls_sess_seal(s->dtls, payload, len, r));
}

int
session_seal_in_place(struct session *s, uint8_t *payload, size_t len, struct dtls_record *r)
{
	return sealed(s, len, dtls_sess_seal_in_place(s->dtls, payload, len, r));
}
