/* codel.c - when a queue should drop, by how long its bytes wait (codel.h). */
#include <string.h>

#include "codel.h"

void
codel_fifo_init(struct codel_fifo *f)
{
	memset(f, 0, sizeof(*f));
}

void
codel_fifo_add(struct codel_fifo *f, size_t bytes, uint64_t at_us)
{
	unsigned last = (f->head + f->n + CODEL_MARKS - 1) % CODEL_MARKS;

	if (!bytes)
		return;
	f->in += bytes;
	/* Bytes of the same moment, or beyond the marks, join the last: the
	 * latter are then taken to have come in at the last's time, which
	 * errs towards a longer wait. */
	if (f->n && (f->n == CODEL_MARKS || f->mark[last].at_us == at_us)) {
		f->mark[last].end = f->in;
		return;
	}
	last = (f->head + f->n++) % CODEL_MARKS;
	f->mark[last].end = f->in;
	f->mark[last].at_us = at_us;
}

uint64_t
codel_fifo_take(struct codel_fifo *f, size_t bytes)
{
	uint64_t at = 0, end = 0;

	if (!f->n || !bytes)
		return 0;
	f->out = bytes >= f->in - f->out ? f->in : f->out + bytes;
	while (f->n && f->mark[f->head].end <= f->out) {
		at = f->mark[f->head].at_us;
		end = f->mark[f->head].end;
		f->head = (f->head + 1) % CODEL_MARKS;
		f->n--;
	}
	/* The last byte taken ended a mark that went, or lies in the mark
	 * now first. */
	return end == f->out ? at : f->mark[f->head].at_us;
}

size_t
codel_fifo_len(const struct codel_fifo *f)
{
	return (size_t)(f->in - f->out);
}

void
codel_fifo_clear(struct codel_fifo *f)
{
	f->out = f->in;
	f->head = 0;
	f->n = 0;
}

void
codel_init(struct codel *q)
{
	memset(q, 0, sizeof(*q));
}

static uint64_t
isqrt(uint64_t x)
{
	uint64_t r = 0, bit = 1ull << 62;

	while (bit > x)
		bit >>= 2;
	for (; bit; bit >>= 2) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
	}
	return r;
}

/* The control law: drops come closer as they go on, interval/sqrt(count). */
static uint64_t
control_law(uint64_t t, uint32_t count)
{
	return t + CODEL_INTERVAL_US * 1024 / isqrt((uint64_t)count << 20);
}

/* The state moves as RFC 8289 4.3 has it. */
void
codel_note(struct codel *q, uint64_t sojourn_us, size_t backlog, uint64_t now_us)
{
	int64_t delta;

	if (sojourn_us < CODEL_TARGET_US || backlog <= CODEL_BACKLOG_MIN) {
		q->first_above_us = 0;
		q->ok_to_drop = false;
	} else if (!q->first_above_us) {
		q->first_above_us = now_us + CODEL_INTERVAL_US;
	} else if (now_us >= q->first_above_us) {
		q->ok_to_drop = true;
	}
	if (q->dropping && !q->ok_to_drop) {
		q->dropping = false;
	} else if (!q->dropping && q->ok_to_drop) {
		/* A dropping state that ended recently resumes near the
		 * pace it had reached, as the RFC's does.  The first drop,
		 * due now (at the next arrival), makes count lastcount. */
		q->dropping = true;
		delta = (int64_t)q->count - (int64_t)q->lastcount;
		q->lastcount = delta > 1 &&
		    (int64_t)(now_us - q->drop_next_us) < 16 * CODEL_INTERVAL_US ?
		    (uint32_t)delta : 1;
		q->count = q->lastcount - 1;
		q->first_drop = true;
		q->drop_next_us = now_us;
	}
}

bool
codel_drop(struct codel *q, uint64_t now_us)
{
	uint64_t from;

	if (!q->dropping || now_us < q->drop_next_us)
		return false;
	if (q->count < UINT32_MAX)
		q->count++;
	/* The law counts from when the drop was due, not from the arrival
	 * that took it, so that the pace holds when packets are sparse;
	 * after a pause longer than an interval, from now, lest the drops
	 * that fell due in it come back to back. */
	from = q->first_drop || now_us - q->drop_next_us > CODEL_INTERVAL_US ?
	    now_us : q->drop_next_us;
	q->first_drop = false;
	q->drop_next_us = control_law(from, q->count);
	return true;
}
