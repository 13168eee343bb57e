/* path_policy.c - which path carries a peer's traffic, decided from
 * evidence of life only (path_policy.h).
 *
 * Each event first updates the evidence of its path, then the whole state
 * is evaluated afresh: probes past their deadline are missed, the traffic
 * moves if it must (the active path is down or failed) or may (a
 * preferred path is confirmed and the move bound allows), and what is due
 * is done (probes, opens, closes).  Each rule that waits contributes its
 * due time to the next tick, so the tick and the decisions cannot
 * disagree. */
#include <string.h>

#include "path_policy.h"

static uint64_t
backoff(uint64_t min, uint64_t max, unsigned n)
{
	uint64_t d = min << (n < 16 ? n : 16);

	return d > max ? max : d;
}

static bool
valid(const struct path_policy *pol, int i)
{
	return i >= 0 && (unsigned)i < pol->n;
}

/* Up, and not known dead: fit to carry traffic. */
static bool
eligible(const struct pol_path *p)
{
	return p->up && !p->failed;
}

/* A probe waits twice the smoothed RTT, at least POL_PROBE_TIMEOUT_MS,
 * doubled for each miss in a row: a path slowed by a full queue is not
 * taken for a dead one. */
static uint64_t
probe_timeout(const struct pol_path *p)
{
	uint64_t t = POL_PROBE_TIMEOUT_MS;

	if (2ull * p->srtt_ms > t)
		t = 2ull * p->srtt_ms;
	t <<= p->misses < POL_PROBE_MISSES ? p->misses : POL_PROBE_MISSES - 1;
	return t > POL_PROBE_TIMEOUT_MAX_MS ? POL_PROBE_TIMEOUT_MAX_MS : t;
}

/* An answered probe in a row span at least POL_CONFIRM_MS. */
static bool
confirmed(const struct pol_path *p, uint64_t now)
{
	return p->answered >= POL_CONFIRM_N && now - p->answered_since_ms >= POL_CONFIRM_MS;
}

static void
due(uint64_t *tick, uint64_t at)
{
	if (at && (!*tick || at < *tick))
		*tick = at;
}

static void
act(struct pol_out *out, enum pol_do what, unsigned path)
{
	if (out->n < POL_ACTS_MAX) {
		out->act[out->n].what = what;
		out->act[out->n].path = path;
		out->n++;
	}
}

/* The probe in flight, the awaited data and the answered run end. */
static void
forget_probes(struct pol_path *p)
{
	p->probe_ms = 0;
	p->probe_deadline_ms = 0;
	p->probe_next_ms = 0;
	p->awaiting_ms = 0;
	p->answered = 0;
}

/* Traffic goes to `to` (POL_NONE: nowhere).  A move is counted when it
 * reaches a path other than the last one that carried traffic: losing
 * every path and getting the same one back is not a move. */
static void
move(struct path_policy *pol, int to, uint64_t now, const char *why, struct pol_out *out)
{
	int last = pol->last_active;

	if (to == pol->active)
		return;
	pol->active = to;
	if (to == POL_NONE)
		return;
	/* What was awaited on the old path is not awaited on this one, and
	 * a background probe scheduled for it is not the active path's. */
	pol->path[to].awaiting_ms = 0;
	pol->path[to].probe_next_ms = 0;
	pol->last_active = to;
	if (last == POL_NONE || last == to)
		return;
	pol->moves++;
	pol->moved_ms = now;
	pol->left = last;
	if (pol->path[to].rank < pol->path[last].rank)
		pol->moved_up_ms = now;
	out->moved = true;
	out->from = last;
	out->why = why;
}

void
path_policy_init(struct path_policy *pol, bool leads)
{
	memset(pol, 0, sizeof(*pol));
	pol->leads = leads;
	pol->active = POL_NONE;
	pol->last_active = POL_NONE;
	pol->left = POL_NONE;
}

int
path_policy_add(struct path_policy *pol, uint8_t rank, bool may_open)
{
	struct pol_path *p;

	if (pol->n == POL_PATHS_MAX)
		return POL_NONE;
	p = &pol->path[pol->n];
	memset(p, 0, sizeof(*p));
	p->rank = rank;
	p->may_open = may_open;
	return (int)pol->n++;
}

/* --- evidence ---------------------------------------------------------- */

/* The path is alive now: its miss runs end. */
static void
alive(struct pol_path *p)
{
	p->misses = 0;
	p->reprobes = 0;
	p->failed = false;
	p->awaiting_ms = 0;
}

static void
on_answer(struct pol_path *p, uint32_t rtt, uint64_t now)
{
	if (rtt)
		p->srtt_ms = p->srtt_ms ? (uint32_t)((7ull * p->srtt_ms + rtt) / 8) : rtt;
	/* Only an answer to the probe in flight extends the run: a late
	 * answer to one already counted missed proves life, not stability. */
	if (p->probe_ms) {
		if (!p->answered++)
			p->answered_since_ms = now;
		p->probes_answered++;
		p->probe_ms = 0;
		p->probe_deadline_ms = 0;
	}
	p->probe_next_ms = 0;
	alive(p);
}

static void
on_up(struct pol_path *p, uint64_t now)
{
	p->opening = false;
	if (p->up)
		return;                 /* the other side's connection crossed ours */
	p->up = true;
	p->up_ms = now;
	p->rx_since_up = 0;
	forget_probes(p);
	alive(p);
}

/* A path that ended before it carried an authenticated record counts as a
 * failed open: a proxy that accepts and hangs up must not be redialled in
 * a loop. */
static void
on_down(struct pol_path *p, uint64_t now)
{
	p->opening = false;
	if (!p->up)
		return;
	p->up = false;
	forget_probes(p);
	if (!p->rx_since_up) {
		p->open_after_ms = now + backoff(POL_OPEN_MIN_MS, POL_OPEN_MAX_MS,
		    p->open_failures++);
	} else {
		p->open_failures = 0;
		p->open_after_ms = now + POL_OPEN_MIN_MS;
	}
}

static void
on_open_failed(struct pol_path *p, uint64_t now)
{
	p->opening = false;
	if (p->up)
		return;                 /* ours lost a crossing; the peer's carries */
	p->open_after_ms = now + backoff(POL_OPEN_MIN_MS, POL_OPEN_MAX_MS, p->open_failures++);
}

/* The network under every path changed: what was learnt about reaching
 * the peer is stale.  Probe now (the active path too: its route may be
 * gone), and open again without waiting out the back-off. */
static void
on_addr_changed(struct path_policy *pol, uint64_t now)
{
	for (unsigned i = 0; i < pol->n; i++) {
		struct pol_path *p = &pol->path[i];

		p->reprobes = 0;
		p->open_failures = 0;
		p->open_after_ms = now;
		if (p->up && !p->probe_ms)
			p->probe_next_ms = now;
	}
}

/* --- the follower ------------------------------------------------------ */

/* The up path the peer's newest records came from; without any, the
 * preferred up path. */
static int
newest(const struct path_policy *pol)
{
	int b = POL_NONE;

	for (unsigned i = 0; i < pol->n; i++) {
		const struct pol_path *p = &pol->path[i];

		if (!p->up)
			continue;
		if (b == POL_NONE || p->rx_ms > pol->path[b].rx_ms ||
		    (p->rx_ms == pol->path[b].rx_ms && p->rank < pol->path[b].rank))
			b = (int)i;
	}
	return b;
}

static void
follow_rx(struct path_policy *pol, int i, uint64_t now, struct pol_out *out)
{
	if (i == pol->active || !pol->path[i].up)
		return;
	if (i == pol->left && pol->moved_ms && now - pol->moved_ms < POL_FOLLOW_HOLD_MS)
		return;                 /* sent before the peer moved */
	move(pol, i, now, "the peer's traffic moved", out);
}

static void
follow(struct path_policy *pol, uint64_t now, struct pol_out *out)
{
	int a = pol->active;

	if (a == POL_NONE || !pol->path[a].up)
		move(pol, newest(pol), now, "the path in use went down", out);
}

/* --- the leader -------------------------------------------------------- */

/* Probes past their deadline are missed.  On the active path the next
 * probe goes at once (its timeout doubled) until POL_PROBE_MISSES fail
 * it; elsewhere, and once failed, probes back off. */
static void
deadlines(struct path_policy *pol, uint64_t now)
{
	for (unsigned i = 0; i < pol->n; i++) {
		struct pol_path *p = &pol->path[i];

		if (!p->probe_ms || now < p->probe_deadline_ms)
			continue;
		if (p->rx_ms >= p->probe_ms) {
			/* A record came after the probe left: alive. */
			p->probe_ms = 0;
			continue;
		}
		p->probe_ms = 0;
		p->answered = 0;
		if (++p->misses >= POL_PROBE_MISSES)
			p->failed = true;
		if ((int)i == pol->active && !p->failed)
			p->probe_next_ms = now;
		else
			p->probe_next_ms = now + backoff(POL_REPROBE_MIN_MS, POL_REPROBE_MAX_MS,
			    p->reprobes++);
	}
}

/* The preferred path fit to carry traffic. */
static int
best_eligible(const struct path_policy *pol)
{
	int b = POL_NONE;

	for (unsigned i = 0; i < pol->n; i++)
		if (eligible(&pol->path[i]) &&
		    (b == POL_NONE || pol->path[i].rank < pol->path[b].rank))
			b = (int)i;
	return b;
}

/* A move away from a path that is down or failed is made at once, to the
 * preferred path fit to carry traffic.  A move to a preferred path while
 * the active one works waits for that path to be confirmed and for the
 * move bound. */
static void
choose(struct path_policy *pol, uint64_t now, struct pol_out *out, uint64_t *tick)
{
	int a = pol->active, b = best_eligible(pol), c = POL_NONE;

	if (a == POL_NONE || !eligible(&pol->path[a])) {
		if (b != POL_NONE)
			move(pol, b, now, a == POL_NONE ? "a path came up" : pol->path[a].up ?
			    "the path in use failed its probes" : "the path in use went down", out);
		else if (a != POL_NONE && !pol->path[a].up)
			move(pol, POL_NONE, now, NULL, out);
		return;
	}
	for (unsigned i = 0; i < pol->n; i++) {
		const struct pol_path *p = &pol->path[i];

		if (!eligible(p) || p->rank >= pol->path[a].rank)
			continue;
		if (p->answered >= POL_CONFIRM_N && !confirmed(p, now))
			due(tick, p->answered_since_ms + POL_CONFIRM_MS);
		if (confirmed(p, now) && (c == POL_NONE || p->rank < pol->path[c].rank))
			c = (int)i;
	}
	if (c == POL_NONE)
		return;
	if (pol->moved_up_ms && now - pol->moved_up_ms < POL_MOVE_BOUND_MS) {
		due(tick, pol->moved_up_ms + POL_MOVE_BOUND_MS);
		return;
	}
	move(pol, c, now, "a preferred path answered its probes", out);
}

/* Whether path i is probed in the background: it is up and could take
 * the traffic over (preferred to the active path, or the active path is
 * not fit), or it is the active path and failed. */
static bool
background(const struct path_policy *pol, int i)
{
	int a = pol->active;

	if (!pol->path[i].up)
		return false;
	if (i == a)
		return pol->path[i].failed;
	return a == POL_NONE || !eligible(&pol->path[a]) || pol->path[i].rank < pol->path[a].rank;
}

static void
probes(struct path_policy *pol, uint64_t now, struct pol_out *out, uint64_t *tick)
{
	for (unsigned i = 0; i < pol->n; i++) {
		struct pol_path *p = &pol->path[i];
		uint64_t at = 0;

		if (p->probe_ms) {
			due(tick, p->probe_deadline_ms);
			continue;
		}
		if (!p->up)
			continue;
		if ((int)i == pol->active && !p->failed) {
			/* Sent data unanswered for a while, or an address
			 * change: does the path still answer? */
			if (p->awaiting_ms)
				at = p->awaiting_ms + POL_PROBE_AFTER_MS;
			if (p->probe_next_ms && (!at || p->probe_next_ms < at))
				at = p->probe_next_ms;
		} else if (background(pol, (int)i)) {
			if (!p->probe_next_ms)
				p->probe_next_ms = now + (p->answered ? POL_CONFIRM_EVERY_MS :
				    backoff(POL_REPROBE_MIN_MS, POL_REPROBE_MAX_MS, p->reprobes));
			at = p->probe_next_ms;
		}
		if (!at)
			continue;
		if (at > now) {
			due(tick, at);
			continue;
		}
		act(out, POL_DO_PROBE, i);
		p->probes_sent++;
		p->probe_ms = now;
		p->probe_deadline_ms = now + probe_timeout(p);
		p->probe_next_ms = 0;
		due(tick, p->probe_deadline_ms);
	}
}

/* A path this node opens is opened when it could take the traffic over:
 * preferred to the active path, or the active path is not fit. */
static void
opens(struct path_policy *pol, uint64_t now, struct pol_out *out, uint64_t *tick)
{
	int a = pol->active;

	for (unsigned i = 0; i < pol->n; i++) {
		struct pol_path *p = &pol->path[i];

		if (p->up || p->opening || !p->may_open)
			continue;
		if (a != POL_NONE && eligible(&pol->path[a]) && p->rank >= pol->path[a].rank)
			continue;
		if (now < p->open_after_ms) {
			due(tick, p->open_after_ms);
			continue;
		}
		act(out, POL_DO_OPEN, i);
		p->opening = true;
	}
}

/* A path this node opened and left for a preferred one is closed once it
 * has been quiet for POL_LINGER_MS (since it came up, the move, or the
 * peer's last record on it) while the active path carried the peer's
 * records: the peer has moved too. */
static void
closes(struct path_policy *pol, uint64_t now, struct pol_out *out, uint64_t *tick)
{
	int a = pol->active;

	if (a == POL_NONE || !eligible(&pol->path[a]))
		return;
	for (unsigned i = 0; i < pol->n; i++) {
		struct pol_path *p = &pol->path[i];
		uint64_t quiet = p->rx_ms;

		if ((int)i == a || !p->up || !p->may_open || p->rank <= pol->path[a].rank)
			continue;
		if (p->up_ms > quiet)
			quiet = p->up_ms;
		if (pol->moved_ms > quiet)
			quiet = pol->moved_ms;
		if (pol->path[a].rx_ms <= quiet)
			continue;       /* a record on the active path evaluates again */
		if (now < quiet + POL_LINGER_MS) {
			due(tick, quiet + POL_LINGER_MS);
			continue;
		}
		act(out, POL_DO_CLOSE, i);
		p->up = false;
		forget_probes(p);
	}
}

static void
lead(struct path_policy *pol, uint64_t now, struct pol_out *out, uint64_t *tick)
{
	deadlines(pol, now);
	choose(pol, now, out, tick);
	probes(pol, now, out, tick);
	opens(pol, now, out, tick);
	closes(pol, now, out, tick);
}

/* --- the entry point --------------------------------------------------- */

void
path_policy_event(struct path_policy *pol, enum pol_event ev, int path, uint32_t arg,
    uint64_t now, struct pol_out *out)
{
	struct pol_path *p = valid(pol, path) ? &pol->path[path] : NULL;
	uint64_t tick = 0;

	memset(out, 0, sizeof(*out));
	out->from = POL_NONE;
	switch (ev) {
	case POL_EV_RX:
		if (!p)
			break;
		p->rx_ms = now;
		p->rx_since_up++;
		p->open_failures = 0;
		alive(p);
		if (!pol->leads)
			follow_rx(pol, path, now, out);
		break;
	case POL_EV_TX:
		if (p && !p->awaiting_ms)
			p->awaiting_ms = now;
		break;
	case POL_EV_PROBE_ANSWERED:
		if (p)
			on_answer(p, arg, now);
		break;
	case POL_EV_UP:
		if (p)
			on_up(p, now);
		break;
	case POL_EV_DOWN:
		if (p)
			on_down(p, now);
		break;
	case POL_EV_OPEN_FAILED:
		if (p)
			on_open_failed(p, now);
		break;
	case POL_EV_ADDR_CHANGED:
		on_addr_changed(pol, now);
		break;
	case POL_EV_TICK:
		break;
	}
	if (pol->leads)
		lead(pol, now, out, &tick);
	else
		follow(pol, now, out);
	out->send = pol->active;
	/* The floor: whatever is due sooner waits until then. */
	if (tick && tick < now + POL_TICK_MIN_MS)
		tick = now + POL_TICK_MIN_MS;
	out->next_tick_ms = tick;
}

enum pol_state
path_policy_state(const struct path_policy *pol, int path)
{
	const struct pol_path *p;

	if (!valid(pol, path))
		return POL_STATE_DOWN;
	p = &pol->path[path];
	if (!p->up)
		return p->opening ? POL_STATE_OPENING : POL_STATE_DOWN;
	if (path == pol->active)
		return POL_STATE_ACTIVE;
	return p->failed ? POL_STATE_FAILED : POL_STATE_UP;
}

const char *
pol_state_name(enum pol_state st)
{
	switch (st) {
	case POL_STATE_DOWN:
		return "down";
	case POL_STATE_OPENING:
		return "opening";
	case POL_STATE_FAILED:
		return "failed";
	case POL_STATE_UP:
		return "up";
	case POL_STATE_ACTIVE:
		return "active";
	}
	return "?";
}

const char *
pol_event_name(enum pol_event ev)
{
	switch (ev) {
	case POL_EV_RX:
		return "rx";
	case POL_EV_TX:
		return "tx";
	case POL_EV_PROBE_ANSWERED:
		return "probe-answered";
	case POL_EV_UP:
		return "up";
	case POL_EV_DOWN:
		return "down";
	case POL_EV_OPEN_FAILED:
		return "open-failed";
	case POL_EV_ADDR_CHANGED:
		return "addr-changed";
	case POL_EV_TICK:
		return "tick";
	}
	return "?";
}

const char *
pol_do_name(enum pol_do what)
{
	switch (what) {
	case POL_DO_PROBE:
		return "probe";
	case POL_DO_OPEN:
		return "open";
	case POL_DO_CLOSE:
		return "close";
	}
	return "?";
}
