/* check_path_policy.c - the path policy on a fake clock: two nodes (a
 * client that leads, a server that follows) joined by a simulated UDP
 * path and TCP path, each case asserting the moves made and when:
 * UDP blocked and back (one move each way, after the hysteresis, and it
 * stays); UDP lossy but alive; an inner flow paused for 30 s; one-way
 * UDP loss; both transports blocked (bounded back-off, no busy loop); an
 * address change while on TCP; a proxy-only network; a UDP path that
 * comes back and dies again (moves bounded per minute); the follower
 * following; crossing TCP opens; and random event sequences against the
 * invariants. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "path_policy.h"

#include "testutil.h"

#define S 1000ull
#define T0 (1000 * S)           /* the clock's start: never 0 */
#define STEP 10                 /* ms between steps of the simulation */
#define UDP 0                   /* path indexes, as registered */
#define TCP 1
#define A 0                     /* the client: leads */
#define B 1                     /* the server: follows */
#define MOVES_MAX 256
#define PENDING_MAX 4096

/* One path's network. */
struct link {
	bool out, in;           /* A's packets reach B; B's reach A */
	unsigned loss;          /* percent lost, each packet, each way */
	bool opens;             /* a connect succeeds (needs out and in too) */
	uint32_t rtt;           /* ms */
};

struct move {
	uint64_t at;
	int from, to;
	const char *why;
};

struct node {
	struct path_policy pol;
	uint64_t tick;
	unsigned ticks;
	uint64_t last_tick_call;
	struct move moves[MOVES_MAX];
	unsigned nmoves;
	unsigned probes[POL_PATHS_MAX], opens[POL_PATHS_MAX], closes[POL_PATHS_MAX];
	uint64_t open_at[64];   /* when the opens of TCP were asked */
};

struct pending {
	uint64_t at;
	int node;
	enum pol_event ev;
	int path;
	uint32_t arg;
};

static struct sim {
	struct node n[2];
	bool with_b;            /* B runs a policy; else it answers on A's path */
	uint64_t now;
	struct link link[2];
	bool a_sends;           /* A's inner flow sends ... */
	uint32_t a_every;       /* ... each this many ms (a multiple of STEP) */
	bool b_answers;         /* B's inner flow answers what it receives */
	uint32_t open_fail_ms;  /* a failed connect is known after this */
	struct pending q[PENDING_MAX];
	unsigned nq;
	uint64_t rng;
} W;

static uint32_t
rnd(void)
{
	W.rng ^= W.rng << 13;
	W.rng ^= W.rng >> 7;
	W.rng ^= W.rng << 17;
	return (uint32_t)(W.rng >> 16);
}

static bool
lost(const struct link *l)
{
	return l->loss && rnd() % 100 < l->loss;
}

static void
later(uint64_t at, int node, enum pol_event ev, int path, uint32_t arg)
{
	ck_assert_uint_lt(W.nq, PENDING_MAX);
	W.q[W.nq++] = (struct pending){ at, node, ev, path, arg };
}

/* Whether a packet from node `from` on path crosses now. */
static bool
crosses(int from, int path)
{
	const struct link *l = &W.link[path];

	return (from == A ? l->out : l->in) && !lost(l);
}

static void feed(int node, enum pol_event ev, int path, uint32_t arg);

/* What a node's decisions do to the simulated world. */
static void
apply(int node, const struct pol_out *o)
{
	struct node *n = &W.n[node];

	for (unsigned i = 0; i < o->n; i++) {
		int p = (int)o->act[i].path;
		const struct link *l = &W.link[p];

		ck_assert_int_eq(node, A);      /* a follower never acts */
		switch (o->act[i].what) {
		case POL_DO_PROBE:
			ck_assert(n->pol.path[p].up);
			n->probes[p]++;
			/* Answered on the path it came on, whatever B sends on. */
			if (crosses(A, p) && crosses(B, p))
				later(W.now + l->rtt, A, POL_EV_PROBE_ANSWERED, p, l->rtt);
			break;
		case POL_DO_OPEN:
			ck_assert(!n->pol.path[p].up);
			ck_assert(n->pol.path[p].may_open);
			if (p == TCP && n->opens[p] < 64)
				n->open_at[n->opens[p]] = W.now;
			n->opens[p]++;
			if (l->opens && l->out && l->in) {
				later(W.now + 2 * l->rtt, A, POL_EV_UP, p, 0);
				if (W.with_b)
					later(W.now + 2 * l->rtt, B, POL_EV_UP, p, 0);
			} else {
				later(W.now + W.open_fail_ms, A, POL_EV_OPEN_FAILED, p, 0);
			}
			break;
		case POL_DO_CLOSE:
			ck_assert_int_ne(p, n->pol.active);
			n->closes[p]++;
			if (W.with_b)
				later(W.now + l->rtt / 2, B, POL_EV_DOWN, p, 0);
			break;
		}
	}
}

/* Feeds one event to a node and checks what must always hold. */
static void
feed(int node, enum pol_event ev, int path, uint32_t arg)
{
	struct node *n = &W.n[node];
	struct pol_out o;

	path_policy_event(&n->pol, ev, path, arg, W.now, &o);
	ck_assert_int_eq(o.send, n->pol.active);
	if (o.send != POL_NONE)
		ck_assert_msg(n->pol.path[o.send].up, "sends on a down path");
	if (o.next_tick_ms)
		ck_assert_uint_ge(o.next_tick_ms, W.now + POL_TICK_MIN_MS);
	n->tick = o.next_tick_ms;
	if (o.moved) {
		ck_assert_uint_lt(n->nmoves, MOVES_MAX);
		ck_assert_int_ne(o.from, o.send);
		n->moves[n->nmoves++] = (struct move){ W.now, o.from, o.send, o.why };
	}
	apply(node, &o);
}

/* B's inner flow answers a packet of A's that reached it. */
static void
b_answers(int path)
{
	int p = W.with_b ? W.n[B].pol.active : path;

	if (!W.b_answers || p == POL_NONE)
		return;
	if (W.with_b)
		feed(B, POL_EV_TX, p, 0);
	if (crosses(B, p))
		later(W.now + W.link[p].rtt / 2, A, POL_EV_RX, p, 0);
}

static void
step(void)
{
	/* The queue is scanned in order: events due together keep theirs. */
	for (unsigned i = 0; i < W.nq;) {
		struct pending e = W.q[i];

		if (e.at > W.now) {
			i++;
			continue;
		}
		memmove(&W.q[i], &W.q[i + 1], (W.nq - i - 1) * sizeof(W.q[0]));
		W.nq--;
		if (e.ev != POL_EV_RX || e.node != B) {
			feed(e.node, e.ev, e.path, e.arg);
		} else if (W.n[B].pol.path[e.path].up) {
			/* What arrives on a connection already gone is lost. */
			feed(B, e.ev, e.path, e.arg);
			b_answers(e.path);
		}
	}
	for (int i = 0; i < (W.with_b ? 2 : 1); i++) {
		struct node *n = &W.n[i];

		if (n->tick && W.now >= n->tick) {
			if (n->ticks)
				ck_assert_uint_ge(W.now - n->last_tick_call, POL_TICK_MIN_MS);
			n->ticks++;
			n->last_tick_call = W.now;
			feed(i, POL_EV_TICK, POL_NONE, 0);
		}
	}
	if (W.a_sends && W.n[A].pol.active != POL_NONE && (W.now - T0) % W.a_every == 0) {
		int p = W.n[A].pol.active;

		feed(A, POL_EV_TX, p, 0);
		if (crosses(A, p)) {
			if (W.with_b)
				later(W.now + W.link[p].rtt / 2, B, POL_EV_RX, p, 0);
			else
				b_answers(p);
		}
	}
	W.now += STEP;
}

static void
run_until(uint64_t t)
{
	while (W.now < t)
		step();
}

/* Runs until A's traffic is on path p (or t passes): whether it got there. */
static bool
run_until_on(int p, uint64_t t)
{
	while (W.now < t && W.n[A].pol.active != p)
		step();
	return W.n[A].pol.active == p;
}

/* A client with a UDP and a TCP endpoint, a server without (it follows),
 * both paths working with a 20 ms RTT, A's flow sending and B's
 * answering; UDP comes up at T0. */
static void
setup(bool with_b)
{
	memset(&W, 0, sizeof(W));
	W.rng = 0x9e3779b97f4a7c15ull;
	W.now = T0;
	W.with_b = with_b;
	W.open_fail_ms = 10;
	for (int p = UDP; p <= TCP; p++)
		W.link[p] = (struct link){ true, true, 0, true, 20 };
	path_policy_init(&W.n[A].pol, true);
	ck_assert_int_eq(path_policy_add(&W.n[A].pol, 0, true), UDP);
	ck_assert_int_eq(path_policy_add(&W.n[A].pol, 1, true), TCP);
	path_policy_init(&W.n[B].pol, false);
	ck_assert_int_eq(path_policy_add(&W.n[B].pol, 0, false), UDP);
	ck_assert_int_eq(path_policy_add(&W.n[B].pol, 1, false), TCP);
	W.a_sends = W.b_answers = true;
	W.a_every = STEP;
	feed(A, POL_EV_UP, UDP, 0);
	if (with_b)
		feed(B, POL_EV_UP, UDP, 0);
	ck_assert_int_eq(W.n[A].pol.active, UDP);
	ck_assert_uint_eq(W.n[A].nmoves, 0);
}

static void
block(int p, bool blocked)
{
	W.link[p].out = W.link[p].in = !blocked;
}

/* Moves of node n to path `to` made in [from, until). */
static unsigned
moves_to(int node, int to, uint64_t from, uint64_t until)
{
	unsigned k = 0;

	for (unsigned i = 0; i < W.n[node].nmoves; i++)
		if (W.n[node].moves[i].to == to && W.n[node].moves[i].at >= from &&
		    W.n[node].moves[i].at < until)
			k++;
	return k;
}

/* The move bound: moves to a preferred path at least POL_MOVE_BOUND_MS
 * apart; and any 60 s hold at most two moves, or a forced one more. */
static void
assert_bounded(int node)
{
	const struct node *n = &W.n[node];
	uint64_t up = 0;

	for (unsigned i = 0; i < n->nmoves; i++) {
		const struct move *m = &n->moves[i];
		unsigned in_minute = 0, forced = 0;

		if (m->to == UDP) {
			if (up)
				ck_assert_uint_ge(m->at - up, POL_MOVE_BOUND_MS);
			up = m->at;
		}
		for (unsigned j = i; j < n->nmoves && n->moves[j].at < m->at + 60 * S; j++) {
			in_minute++;
			forced += n->moves[j].to == TCP;
		}
		ck_assert_uint_le(in_minute - forced, 1);
	}
}

/* Open, UDP blocked: the traffic moves to TCP once UDP failed its
 * probes, about 4.5 s after the last answer; UDP allowed again: back
 * after three probes answered over 5 s, within the minute, and it stays.
 * The server follows each move at once, and the TCP connection closes
 * once the traffic has settled on UDP. */
START_TEST(udp_blocked_then_back)
{
	uint64_t cut, back;

	setup(true);
	run_until(T0 + 30 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 0);
	ck_assert_uint_eq(W.n[A].opens[TCP], 0);
	cut = W.now;
	block(UDP, true);
	ck_assert(run_until_on(TCP, cut + 30 * S));
	/* Data unanswered 1 s, then probes missed after 0.5, 1 and 2 s,
	 * then the connect (two round trips). */
	ck_assert_uint_ge(W.now - cut, 4400);
	ck_assert_uint_le(W.now - cut, 4700);
	ck_assert_uint_eq(W.n[A].nmoves, 1);
	ck_assert_str_eq(W.n[A].moves[0].why, "the path in use failed its probes");
	ck_assert_uint_eq(W.n[A].opens[TCP], 1);
	run_until(W.now + 200);
	ck_assert_int_eq(W.n[B].pol.active, TCP);
	ck_assert_uint_eq(W.n[B].nmoves, 1);

	run_until(cut + 10 * S);
	back = W.now;
	block(UDP, false);
	ck_assert(run_until_on(UDP, back + 60 * S));
	/* At least the hysteresis after UDP returned, within the minute. */
	ck_assert_uint_ge(W.now - back, POL_CONFIRM_MS);
	ck_assert_uint_le(W.now - back, 25 * S);
	ck_assert_str_eq(W.n[A].moves[1].why, "a preferred path answered its probes");
	run_until(W.now + 200);
	ck_assert_int_eq(W.n[B].pol.active, UDP);

	run_until(back + 300 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 2);
	ck_assert_uint_eq(moves_to(A, TCP, cut, cut + 10 * S), 1);
	ck_assert_uint_eq(moves_to(A, UDP, back, back + 60 * S), 1);
	ck_assert_uint_eq(W.n[B].nmoves, 2);
	ck_assert_int_eq(W.n[A].pol.active, UDP);
	ck_assert_int_eq(W.n[B].pol.active, UDP);
	/* TCP lingered POL_LINGER_MS after the move, then closed; the
	 * server saw it go. */
	ck_assert_uint_eq(W.n[A].closes[TCP], 1);
	ck_assert(!W.n[B].pol.path[TCP].up);
	ck_assert_uint_eq(W.n[A].opens[TCP], 1);
}
END_TEST

/* 30 % of the packets lost each way, the flow going on: the records that
 * do arrive are evidence enough; no move in ten minutes.  And with a
 * packet each 500 ms, half of them unanswered, so that the path is probed
 * often: single lost probes do not fail it. */
START_TEST(udp_lossy_but_alive)
{
	setup(true);
	W.link[UDP].loss = 20;
	run_until(T0 + 600 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 0);
	ck_assert_uint_eq(W.n[B].nmoves, 0);
	ck_assert_uint_eq(W.n[A].opens[TCP], 0);

	setup(true);
	W.link[UDP].loss = 20;
	W.a_every = 500;
	run_until(T0 + 600 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 0);
	ck_assert_uint_eq(W.n[A].opens[TCP], 0);
	ck_assert_uint_gt(W.n[A].probes[UDP], 50);
	ck_assert_uint_lt(W.n[A].pol.path[UDP].probes_answered, W.n[A].probes[UDP]);
}
END_TEST

/* The client sends for 30 s and the server's inner flow answers nothing
 * (a reader that paused, a one-way transfer): the path is probed, its
 * probes are answered, and nothing moves. */
START_TEST(inner_flow_paused)
{
	setup(true);
	run_until(T0 + 5 * S);
	W.b_answers = false;
	run_until(T0 + 35 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 0);
	ck_assert_uint_eq(W.n[A].opens[TCP], 0);
	/* It asked: about one probe a second, all answered. */
	ck_assert_uint_ge(W.n[A].probes[UDP], 20);
	ck_assert_uint_le(W.n[A].probes[UDP], 31);
	ck_assert_uint_eq(W.n[A].pol.path[UDP].probes_answered, W.n[A].probes[UDP]);
	W.b_answers = true;
	run_until(T0 + 60 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 0);
}
END_TEST

/* UDP from the client to the server lost, the other way working: nothing
 * the client sends is answered, so the client moves once, and UDP,
 * probed in the background, never wins it back. */
START_TEST(one_way_udp_loss)
{
	setup(true);
	run_until(T0 + 10 * S);
	W.link[UDP].out = false;
	ck_assert(run_until_on(TCP, T0 + 20 * S));
	ck_assert_uint_ge(W.now - (T0 + 10 * S), 4400);
	ck_assert_uint_le(W.now - (T0 + 10 * S), 4700);
	run_until(T0 + 310 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 1);
	ck_assert_int_eq(W.n[A].pol.active, TCP);
	ck_assert_int_eq(W.n[B].pol.active, TCP);
	ck_assert_uint_gt(W.n[A].probes[UDP], 10);
	/* And the other way: B's packets lost, A's arriving. */
	setup(true);
	run_until(T0 + 10 * S);
	W.link[UDP].in = false;
	ck_assert(run_until_on(TCP, T0 + 20 * S));
	ck_assert_uint_ge(W.now - (T0 + 10 * S), 4400);
	ck_assert_uint_le(W.now - (T0 + 10 * S), 4700);
	run_until(T0 + 310 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 1);
	ck_assert_int_eq(W.n[B].pol.active, TCP);
}
END_TEST

/* UDP and TCP blocked from the start, connects failing at once (the worst
 * case for a busy loop): the TCP opens back off to one a minute, UDP
 * probes to one each 15 s, the ticks are never closer than the floor, and
 * nothing moves. */
START_TEST(both_blocked)
{
	const struct node *a = &W.n[A];

	setup(false);
	block(UDP, true);
	block(TCP, true);
	run_until(T0 + 600 * S);
	ck_assert_uint_eq(a->nmoves, 0);
	ck_assert_int_eq(a->pol.active, UDP);
	ck_assert_uint_le(a->opens[TCP], 16);
	ck_assert_uint_ge(a->opens[TCP], 8);
	for (unsigned i = 2; i < a->opens[TCP] && i < 64; i++) {
		uint64_t gap = a->open_at[i] - a->open_at[i - 1];

		ck_assert_uint_ge(gap, a->open_at[i - 1] - a->open_at[i - 2]);
		ck_assert_uint_le(gap, POL_OPEN_MAX_MS + STEP);
	}
	ck_assert_uint_ge(a->open_at[a->opens[TCP] - 1] - a->open_at[a->opens[TCP] - 2],
	    POL_OPEN_MAX_MS);
	ck_assert_uint_le(a->probes[UDP], 600 / 15 + 10);
	ck_assert_uint_le(a->ticks, 200);
	/* Allowed again: TCP is tried within a minute, and taken. */
	block(TCP, false);
	ck_assert(run_until_on(TCP, W.now + POL_OPEN_MAX_MS + S));
	ck_assert_uint_eq(a->nmoves, 1);
}
END_TEST

/* On TCP since UDP was blocked; UDP works again, but its background
 * probes have backed off to one each 15 s.  The host's address changes:
 * UDP is probed at once and the traffic is back after the hysteresis. */
START_TEST(address_change_on_tcp)
{
	uint64_t t;

	setup(true);
	block(UDP, true);
	ck_assert(run_until_on(TCP, T0 + 10 * S));
	run_until(T0 + 120 * S);
	ck_assert_uint_eq(W.n[A].pol.path[UDP].reprobes >= 3, true);
	/* Just after a background probe went unanswered. */
	while (!W.n[A].pol.path[UDP].probe_ms)
		step();
	while (W.n[A].pol.path[UDP].probe_ms)
		step();
	block(UDP, false);
	t = W.now;
	feed(A, POL_EV_ADDR_CHANGED, POL_NONE, 0);
	ck_assert_uint_eq(W.n[A].probes[UDP] > 0, true);
	ck_assert(run_until_on(UDP, t + 30 * S));
	ck_assert_uint_ge(W.now - t, POL_CONFIRM_MS);
	ck_assert_uint_le(W.now - t, POL_CONFIRM_MS + 200);
	run_until(W.now + 120 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 2);
	ck_assert_int_eq(W.n[B].pol.active, UDP);
}
END_TEST

/* The address change kills the TCP connection too: it is opened again
 * after POL_OPEN_MIN_MS, and no move is counted for the gap. */
START_TEST(address_change_drops_tcp)
{
	uint64_t t;

	setup(true);
	block(UDP, true);
	ck_assert(run_until_on(TCP, T0 + 10 * S));
	run_until(T0 + 60 * S);
	t = W.now;
	feed(A, POL_EV_ADDR_CHANGED, POL_NONE, 0);
	feed(A, POL_EV_DOWN, TCP, 0);
	feed(B, POL_EV_DOWN, TCP, 0);
	ck_assert_int_eq(W.n[A].pol.active, POL_NONE);
	ck_assert(run_until_on(TCP, t + 5 * S));
	ck_assert_uint_le(W.now - t, POL_OPEN_MIN_MS + 100);
	ck_assert_uint_eq(W.n[A].nmoves, 1);
	ck_assert_uint_eq(W.n[A].opens[TCP], 2);
}
END_TEST

/* A network that lets only TCP out (through a proxy): one move, about
 * 4.5 s after the first unanswered data, and none in the next ten
 * minutes, while UDP is still tried in the background at its pace. */
START_TEST(proxy_only)
{
	setup(true);
	block(UDP, true);
	ck_assert(run_until_on(TCP, T0 + 10 * S));
	ck_assert_uint_ge(W.now - T0, 4400);
	ck_assert_uint_le(W.now - T0, 4700);
	run_until(T0 + 600 * S);
	ck_assert_uint_eq(W.n[A].nmoves, 1);
	ck_assert_uint_eq(W.n[B].nmoves, 1);
	ck_assert_uint_ge(W.n[A].probes[UDP], 30);
	ck_assert_uint_le(W.n[A].probes[UDP], 600 / 15 + 10);
	ck_assert_uint_eq(W.n[A].opens[TCP], 1);
	ck_assert_uint_eq(W.n[A].closes[TCP], 0);
}
END_TEST

/* UDP working 20 s, blocked 12 s, over and over for ten minutes: each
 * return is confirmed before a move, a move back to UDP at most once a
 * minute, and each move away follows a failure. */
START_TEST(comes_back_and_dies_again)
{
	setup(true);
	for (uint64_t t = T0; t < T0 + 600 * S; t += 32 * S) {
		block(UDP, true);
		run_until(t + 12 * S);
		block(UDP, false);
		run_until(t + 32 * S);
	}
	assert_bounded(A);
	ck_assert_uint_ge(W.n[A].nmoves, 6);
	ck_assert_uint_le(W.n[A].nmoves, 2 * 10 + 1);
	for (unsigned i = 0; i < W.n[A].nmoves; i++)
		ck_assert_str_eq(W.n[A].moves[i].why, W.n[A].moves[i].to == TCP ?
		    "the path in use failed its probes" : "a preferred path answered its probes");
	/* The server followed every move. */
	ck_assert_uint_eq(W.n[B].nmoves, W.n[A].nmoves);
}
END_TEST

/* The follower on its own: it sends where the peer's newest records come
 * from, holds off going back to the path it just left while frames sent
 * before the move drain, never acts and never asks for a tick. */
START_TEST(follower_follows)
{
	struct path_policy f;
	struct pol_out o;
	uint64_t t = T0;

	path_policy_init(&f, false);
	ck_assert_int_eq(path_policy_add(&f, 0, false), UDP);
	ck_assert_int_eq(path_policy_add(&f, 1, false), TCP);
	path_policy_event(&f, POL_EV_UP, UDP, 0, t, &o);
	ck_assert_int_eq(o.send, UDP);
	ck_assert(!o.moved);
	path_policy_event(&f, POL_EV_RX, UDP, 0, t += 10, &o);
	/* The peer connects over TCP: nothing moves until records come. */
	path_policy_event(&f, POL_EV_UP, TCP, 0, t += 10, &o);
	ck_assert_int_eq(o.send, UDP);
	/* Silence on UDP for a minute is no reason to move either. */
	for (int i = 0; i < 600; i++) {
		path_policy_event(&f, POL_EV_TX, UDP, 0, t += 100, &o);
		ck_assert_int_eq(o.send, UDP);
		ck_assert_uint_eq(o.n, 0);
		ck_assert_uint_eq(o.next_tick_ms, 0);
	}
	path_policy_event(&f, POL_EV_RX, TCP, 0, t += 10, &o);
	ck_assert_int_eq(o.send, TCP);
	ck_assert(o.moved);
	ck_assert_int_eq(o.from, UDP);
	ck_assert_str_eq(o.why, "the peer's traffic moved");
	/* A datagram sent before the peer moved. */
	path_policy_event(&f, POL_EV_RX, UDP, 0, t += 50, &o);
	ck_assert_int_eq(o.send, TCP);
	ck_assert(!o.moved);
	/* The peer moves back. */
	t += POL_FOLLOW_HOLD_MS;
	path_policy_event(&f, POL_EV_RX, UDP, 0, t, &o);
	ck_assert_int_eq(o.send, UDP);
	ck_assert(o.moved);
	path_policy_event(&f, POL_EV_RX, TCP, 0, t += 100, &o);
	ck_assert_int_eq(o.send, UDP);
	/* A follower never closes what the peer may use: TCP stays up. */
	for (int i = 0; i < 100; i++) {
		path_policy_event(&f, POL_EV_RX, UDP, 0, t += 1000, &o);
		ck_assert_uint_eq(o.n, 0);
	}
	ck_assert(f.path[TCP].up);
	ck_assert_uint_eq(f.moves, 2);
	/* The peer moves to TCP and UDP goes (the address is gone): the path
	 * in use ends, the other carries on. */
	path_policy_event(&f, POL_EV_RX, TCP, 0, t += 10, &o);
	ck_assert_int_eq(o.send, TCP);
	path_policy_event(&f, POL_EV_DOWN, TCP, 0, t += 10, &o);
	ck_assert_int_eq(o.send, UDP);
	ck_assert(o.moved);
	ck_assert_str_eq(o.why, "the path in use went down");
	path_policy_event(&f, POL_EV_DOWN, UDP, 0, t += 10, &o);
	ck_assert_int_eq(o.send, POL_NONE);
	ck_assert_uint_eq(f.moves, 4);
}
END_TEST

/* Two clients of each other (both with a TCP endpoint), UDP blocked: both
 * open TCP at once, and the transport keeps one connection.  Whichever way
 * each side learns it (the peer's connection up and its own open failed,
 * or its own up, or its own closed and the peer's up a moment later),
 * each makes one move and opens no more. */
START_TEST(crossing_opens)
{
	struct path_policy side[3];
	struct pol_out o;

	for (int k = 0; k < 3; k++) {
		struct path_policy *p = &side[k];
		uint64_t t = T0;
		unsigned opens = 0;

		path_policy_init(p, true);
		path_policy_add(p, 0, true);
		path_policy_add(p, 1, true);
		path_policy_event(p, POL_EV_UP, UDP, 0, t, &o);
		path_policy_event(p, POL_EV_TX, UDP, 0, t, &o);
		/* UDP unanswered until its probes fail and TCP is opened. */
		while (!(o.n && o.act[0].what == POL_DO_OPEN)) {
			ck_assert_uint_gt(o.next_tick_ms, t);
			t = o.next_tick_ms;
			path_policy_event(p, POL_EV_TICK, POL_NONE, 0, t, &o);
			ck_assert_uint_lt(t, T0 + 10 * S);
		}
		for (unsigned i = 0; i < o.n; i++)
			opens += o.act[i].what == POL_DO_OPEN && o.act[i].path == TCP;
		ck_assert_uint_eq(opens, 1);
		switch (k) {
		case 0:
			path_policy_event(p, POL_EV_UP, TCP, 0, t += 20, &o);
			path_policy_event(p, POL_EV_OPEN_FAILED, TCP, 0, t += 5, &o);
			break;
		case 1:
			path_policy_event(p, POL_EV_UP, TCP, 0, t += 40, &o);
			break;
		case 2:
			path_policy_event(p, POL_EV_UP, TCP, 0, t += 40, &o);
			path_policy_event(p, POL_EV_RX, TCP, 0, t += 1, &o);
			path_policy_event(p, POL_EV_DOWN, TCP, 0, t += 1, &o);
			path_policy_event(p, POL_EV_UP, TCP, 0, t += 3, &o);
			break;
		}
		ck_assert_int_eq(o.send, TCP);
		ck_assert_uint_eq(p->moves, 1);
		/* A minute of traffic on TCP, UDP still blocked. */
		for (uint64_t end = t + 60 * S; t < end;) {
			path_policy_event(p, POL_EV_TX, TCP, 0, t += 50, &o);
			path_policy_event(p, POL_EV_RX, TCP, 0, t += 20, &o);
			for (unsigned i = 0; i < o.n; i++) {
				ck_assert_int_eq(o.act[i].what, POL_DO_PROBE);
				ck_assert_uint_eq(o.act[i].path, UDP);
			}
			if (o.next_tick_ms && o.next_tick_ms <= t + 70) {
				t = o.next_tick_ms;
				path_policy_event(p, POL_EV_TICK, POL_NONE, 0, t, &o);
				for (unsigned i = 0; i < o.n; i++)
					ck_assert_int_eq(o.act[i].what, POL_DO_PROBE);
			}
			ck_assert_int_eq(o.send, TCP);
		}
		ck_assert_uint_eq(p->moves, 1);
		ck_assert(p->path[TCP].up);
	}
}
END_TEST

/* Random event sequences, leader and follower: what is always true.
 * Never sends on a down path; the next tick is later than now by the
 * floor; no probe on a down path, no open of an up path or one this node
 * may not open, no close of the active path, a follower does nothing; a
 * voluntary move is at least POL_MOVE_BOUND_MS after the last move to a
 * preferred path; a forced one leaves a path that is down or failed. */
START_TEST(random_sequences)
{
	static const char voluntary[] = "a preferred path answered its probes";

	W.rng = 0x2545f4914f6cdd1dull;
	for (int run = 0; run < 400; run++) {
		struct path_policy p;
		struct pol_out o;
		uint64_t now = T0, tick = 0, last_up = 0;
		bool leads = run % 4 != 3;
		unsigned np = 2 + (unsigned)run % 3;

		path_policy_init(&p, leads);
		for (unsigned i = 0; i < np; i++)
			path_policy_add(&p, (uint8_t)i, leads && rnd() % 4 != 0);
		for (int k = 0; k < 2000; k++) {
			enum pol_event ev = (enum pol_event)(rnd() % (POL_EV_TICK + 1));
			int path = (int)(rnd() % (np + 1)) - (rnd() % 8 == 0);
			int from = p.active;
			uint64_t moved_up = p.moved_up_ms;

			now += rnd() % 3000;
			if (tick && (rnd() % 2 || tick <= now)) {
				now = tick > now ? now : tick;
				ev = POL_EV_TICK;
			}
			path_policy_event(&p, ev, path, rnd() % 400, now, &o);
			tick = o.next_tick_ms;
			if (tick)
				ck_assert_uint_ge(tick, now + POL_TICK_MIN_MS);
			if (o.send != POL_NONE)
				ck_assert(p.path[o.send].up);
			if (!leads) {
				ck_assert_uint_eq(o.n, 0);
				ck_assert_uint_eq(tick, 0);
			}
			for (unsigned i = 0; i < o.n; i++) {
				const struct pol_path *q = &p.path[o.act[i].path];

				ck_assert_uint_lt(o.act[i].path, np);
				if (o.act[i].what == POL_DO_PROBE)
					ck_assert(q->up);
				if (o.act[i].what == POL_DO_OPEN)
					ck_assert(!q->up && q->may_open);
				if (o.act[i].what == POL_DO_CLOSE)
					ck_assert_int_ne((int)o.act[i].path, p.active);
			}
			if (!o.moved || !leads)
				continue;
			if (!strcmp(o.why, voluntary)) {
				ck_assert_int_eq(from, o.from);
				ck_assert(!moved_up || now - moved_up >= POL_MOVE_BOUND_MS);
				ck_assert(!last_up || now - last_up >= POL_MOVE_BOUND_MS);
				last_up = now;
			} else if (from != POL_NONE) {
				ck_assert(!p.path[from].up || p.path[from].failed);
			}
			if (p.path[o.send].rank < p.path[o.from].rank)
				last_up = now;
		}
	}
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(pol_state_name(POL_STATE_ACTIVE), "active");
	ck_assert_str_eq(pol_state_name(POL_STATE_FAILED), "failed");
	ck_assert_str_eq(pol_event_name(POL_EV_PROBE_ANSWERED), "probe-answered");
	ck_assert_str_eq(pol_do_name(POL_DO_CLOSE), "close");
	setup(false);
	ck_assert_int_eq(path_policy_state(&W.n[A].pol, UDP), POL_STATE_ACTIVE);
	ck_assert_int_eq(path_policy_state(&W.n[A].pol, TCP), POL_STATE_DOWN);
	ck_assert_int_eq(path_policy_state(&W.n[A].pol, 7), POL_STATE_DOWN);
	ck_assert_int_eq(path_policy_add(&W.n[A].pol, 2, true), 2);
	ck_assert_int_eq(path_policy_add(&W.n[A].pol, 3, true), 3);
	ck_assert_int_eq(path_policy_add(&W.n[A].pol, 4, true), POL_NONE);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("path_policy");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, udp_blocked_then_back);
	tcase_add_test(tc, udp_lossy_but_alive);
	tcase_add_test(tc, inner_flow_paused);
	tcase_add_test(tc, one_way_udp_loss);
	tcase_add_test(tc, both_blocked);
	tcase_add_test(tc, address_change_on_tcp);
	tcase_add_test(tc, address_change_drops_tcp);
	tcase_add_test(tc, proxy_only);
	tcase_add_test(tc, comes_back_and_dies_again);
	tcase_add_test(tc, follower_follows);
	tcase_add_test(tc, crossing_opens);
	tcase_add_test(tc, random_sequences);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	return check_run(s);
}
