/* metrics.c - `touctl metrics`: the interface's and the peers' counters,
 * states and timestamps in the Prometheus text exposition format (0.0.4),
 * which node_exporter's textfile collector and a Prometheus scrape read.
 *
 * It reads what `touctl show --json` reads (show.c) and only writes into an
 * evbuffer.  Names are toud_..., with the unit in the name (_bytes,
 * _seconds) and _total on counters; each family is written in one piece,
 * its # HELP and # TYPE lines first.  Every sample carries the interface's
 * name, so that the files of several instances can sit side by side in one
 * textfile directory, and a peer's samples its name.  The metric names and
 * labels are a stable interface, listed in touctl(8). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "conf.h"
#include "drop.h"
#include "dtls.h"
#include "events.h"
#include "keys.h"
#include "metrics.h"
#include "peer.h"
#include "pq.h"
#include "session.h"
#include "ctx.h"
#include "util.h"

/* The text being written; a failed append is remembered, not lost. */
struct metrics_out {
	struct evbuffer *b;
	const struct toud *t;
	uint64_t now_ms, wall_ms;
	bool full;                      /* the peers' series too */
	bool failed;
};

static void metrics_printf(struct metrics_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
metrics_printf(struct metrics_out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (evbuffer_add_vprintf(o->b, fmt, ap) < 0)
		o->failed = true;
	va_end(ap);
}

int
metrics_escape(struct evbuffer *out, const char *s, bool label)
{
	static const char replacement[] = "\xef\xbf\xbd";       /* U+FFFD */
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *run = p;   /* bytes copied as they are */
	int r = 0;

	while (*p) {
		const char *esc = NULL;
		size_t n = 1;

		if (*p == '\\')
			esc = "\\\\";
		else if (*p == '\n')
			esc = "\\n";
		else if (*p == '"' && label)
			esc = "\\\"";
		else if (*p >= 0x80 && (n = util_utf8_len(p)) == 0) {
			esc = replacement;
			n = 1;
		}
		if (!esc) {
			p += n;
			continue;
		}
		r |= evbuffer_add(out, run, (size_t)(p - run));
		r |= evbuffer_add(out, esc, strlen(esc));
		run = p += n;
	}
	r |= evbuffer_add(out, run, (size_t)(p - run));
	return r < 0 ? -ENOMEM : 0;
}

static void
metrics_family(struct metrics_out *o, const char *name, const char *type, const char *help)
{
	metrics_printf(o, "# HELP %s ", name);
	if (metrics_escape(o->b, help, false) < 0)
		o->failed = true;
	metrics_printf(o, "\n# TYPE %s %s\n", name, type);
}

/* NAME{interface="...",KEY="VALUE",...} and the space before the value;
 * kv holds pairs of label name and value, then NULL.  A NULL value is
 * the empty string. */
static void
metrics_sample(struct metrics_out *o, const char *name, const char *const *kv)
{
	size_t i;

	metrics_printf(o, "%s{interface=\"", name);
	if (metrics_escape(o->b, o->t->conf->iface.name, true) < 0)
		o->failed = true;
	for (i = 0; kv[i]; i += 2) {
		metrics_printf(o, "\",%s=\"", kv[i]);
		if (metrics_escape(o->b, kv[i + 1] ? kv[i + 1] : "", true) < 0)
			o->failed = true;
	}
	metrics_printf(o, "\"} ");
}

static void
metrics_u64(struct metrics_out *o, const char *name, const char *const *kv, uint64_t v)
{
	metrics_sample(o, name, kv);
	metrics_printf(o, "%" PRIu64 "\n", v);
}

/* A unix time in milliseconds, as seconds with three decimals. */
static void
metrics_time(struct metrics_out *o, const char *name, const char *const *kv, uint64_t ms)
{
	metrics_sample(o, name, kv);
	metrics_printf(o, "%" PRIu64 ".%03u\n", ms / 1000, (unsigned)(ms % 1000));
}

/* The wall-clock time of a monotonic instant. */
static uint64_t
metrics_wall(const struct metrics_out *o, uint64_t mono_ms)
{
	if (mono_ms >= o->now_ms)
		return o->wall_ms + (mono_ms - o->now_ms);
	return o->now_ms - mono_ms < o->wall_ms ? o->wall_ms - (o->now_ms - mono_ms) : 0;
}

/* toud_drops_total / toud_events_total and the peers' own: one sample per
 * reason that has counted (as in touctl show), under label. */
static void
metrics_reasons(struct metrics_out *o, const char *name, const char *peer, const char *label,
    const uint64_t *v, unsigned n, const char *(*namer)(unsigned))
{
	unsigned r;

	for (r = 0; r < n; r++) {
		const char *kv[] = { "peer", peer, label, namer(r), NULL };

		if (v[r])
			metrics_u64(o, name, peer ? kv : kv + 2, v[r]);
	}
}

static const char *
metrics_drop_name(unsigned r)
{
	return drop_name((enum drop_reason)r);
}

static const char *
metrics_event_name(unsigned e)
{
	return event_name((enum toud_event)e);
}

static void
metrics_interface(struct metrics_out *o)
{
	const struct toud *t = o->t;
	char fp[7 + 2 * KEYS_FP_LEN + 1] = "";
	uint64_t n = 0;
	size_t i;
	unsigned st;

	if (t->dtls)
		keys_fp_format(dtls_ctx_fingerprint(t->dtls), fp);
	metrics_family(o, "toud_info", "gauge", "The daemon's version, encryption (dtls or none) "
	    "and key fingerprint as labels; always 1.");
	/* The fingerprint names this node to whoever reads it: not for
	 * everyone who can reach the endpoint (the public text). */
	metrics_u64(o, "toud_info", (const char *const[]){ "version", PACKAGE_VERSION,
	    "encryption", t->conf->iface.encryption == CONF_ENC_NONE ? "none" : "dtls",
	    o->full ? "fingerprint" : NULL, fp, NULL }, 1);
	metrics_family(o, "toud_tun_mtu_bytes", "gauge", "The MTU of the TUN device.");
	metrics_u64(o, "toud_tun_mtu_bytes", (const char *const[]){ NULL }, t->tun_mtu);
	metrics_family(o, "toud_sessions", "gauge", "DTLS sessions in the session table: "
	    "established, draining after a rekey, and handshakes in progress.");
	metrics_u64(o, "toud_sessions", (const char *const[]){ NULL }, session_count(t));
	metrics_family(o, "toud_half_open_handshakes", "gauge", "Handshakes accepted after the "
	    "cookie exchange whose peer has not yet proved its key.");
	metrics_u64(o, "toud_half_open_handshakes", (const char *const[]){ NULL },
	    session_half_open(t));
	metrics_family(o, "toud_peers", "gauge", "Configured peers in each state.");
	for (st = 0; st < PEER_STATE__MAX; st++) {
		for (i = 0, n = 0; i < t->n_peers; i++)
			n += t->peers[i]->state == st;
		metrics_u64(o, "toud_peers", (const char *const[]){ "state",
		    peer_state_name((enum peer_state)st), NULL }, n);
	}
	metrics_family(o, "toud_drops_total", "counter", "Packets dropped that belong to no "
	    "peer, by reason (touctl(8), Drop counters); a reason appears once it counts.");
	metrics_reasons(o, "toud_drops_total", NULL, "reason", t->drops, DROP__MAX,
	    metrics_drop_name);
	metrics_family(o, "toud_losses_total", "counter", "Packets lost that belong to no peer: "
	    "toud_drops_total without the reasons that lose nothing (losses of touctl show --json).");
	metrics_u64(o, "toud_losses_total", (const char *const[]){ NULL }, drop_losses(t->drops));
	metrics_family(o, "toud_events_total", "counter", "Events that belong to no peer and "
	    "are no loss, by name (toud(8)); an event appears once it counts.");
	metrics_reasons(o, "toud_events_total", NULL, "event", t->events, EVENT__MAX,
	    metrics_event_name);
}

/* One peer's samples of family f (f->arg tells apart families that share
 * a writer). */
struct metrics_peer_family;
typedef void metrics_peer_fn(struct metrics_out *, const struct peer *,
    const struct metrics_peer_family *f);

/* A peer's paths (transport.h): which carries its traffic (f->arg 0),
 * which are up (1) and whose key exchange includes ML-KEM (2); and how
 * often its traffic moved. */
static void
metrics_peer_transport(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f);

static void
metrics_peer_moves(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f);

static void
metrics_peer_info(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	char ep[UTIL_ADDRSTRLEN];

	(void)f;
	metrics_u64(o, "toud_peer_info", (const char *const[]){ "peer", p->name,
	    "endpoint", p->has_endpoint ? util_sa_fmt(&p->endpoint, ep, sizeof(ep)) : "",
	    "cipher", peer_cipher(p),
	    NULL }, 1);
}

static void
metrics_peer_up(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	(void)f;
	metrics_u64(o, "toud_peer_up", (const char *const[]){ "peer", p->name, NULL },
	    p->state == PEER_UP);
}

static void
metrics_peer_state(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	unsigned st;

	(void)f;
	for (st = 0; st < PEER_STATE__MAX; st++)
		metrics_u64(o, "toud_peer_state", (const char *const[]){ "peer", p->name,
		    "state", peer_state_name((enum peer_state)st), NULL }, p->state == st);
}

/* The peers' plain counters: f->arg is the offset of the field. */
static void
metrics_peer_counter(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f);

static void
metrics_peer_drops(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	(void)f;
	metrics_reasons(o, "toud_peer_drops_total", p->name, "reason", p->drops, DROP__MAX,
	    metrics_drop_name);
}

static void
metrics_peer_losses(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	(void)f;
	metrics_u64(o, "toud_peer_losses_total", (const char *const[]){ "peer", p->name,
	    NULL }, drop_losses(p->drops));
}

static void
metrics_peer_events(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	(void)f;
	metrics_reasons(o, "toud_peer_events_total", p->name, "event", p->events, EVENT__MAX,
	    metrics_event_name);
}

/* A peer's timestamps as unix milliseconds; false while there is none. */
static bool
metrics_handshake_ms(const struct metrics_out *o, const struct peer *p, uint64_t *ms)
{
	(void)o;
	*ms = p->last_handshake * 1000;
	return p->last_handshake != 0;
}

static bool
metrics_receive_ms(const struct metrics_out *o, const struct peer *p, uint64_t *ms)
{
	*ms = metrics_wall(o, p->last_rx_ms);
	return p->last_rx_ms != 0;
}

static bool
metrics_next_attempt_ms(const struct metrics_out *o, const struct peer *p, uint64_t *ms)
{
	*ms = metrics_wall(o, p->next_attempt_ms);
	return p->next_attempt_ms != 0;
}

/* Timestamps: left out while there is none; f->arg is the index of
 * the getter. */
static void
metrics_peer_stamp(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f);

/* The last error as free text (f->arg 0) or as its reason, one word of
 * a fixed set (1). */
static void
metrics_peer_error(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f);

/* The peers' families in the order they are written, each with its
 * writer of one peer's samples. */
static const struct metrics_peer_family {
	const char *name, *type, *help;
	metrics_peer_fn *one;
	size_t arg;
} metrics_peer_families[] = {
	{ "toud_peer_info", "gauge", "A peer's endpoint and the cipher of its session as "
	    "labels (empty when there is none); always 1.", metrics_peer_info, 0 },
	{ "toud_peer_up", "gauge", "1 when the peer is up, else 0.", metrics_peer_up, 0 },
	{ "toud_peer_state", "gauge", "The peer's state: 1 for the state it is in (idle, "
	    "handshaking, up or dead), 0 for the others.", metrics_peer_state, 0 },
	{ "toud_peer_transport", "gauge", "1 for the transport that carries the peer's "
	    "traffic, 0 for its other paths.", metrics_peer_transport, 0 },
	{ "toud_peer_path_up", "gauge", "1 when the peer's path on the transport can carry "
	    "its traffic now, else 0.", metrics_peer_transport, 1 },
	{ "toud_peer_post_quantum", "gauge", "1 when the key exchange of the peer's path on "
	    "the transport includes ML-KEM (key_exchange of touctl show), else 0.",
	    metrics_peer_transport, 2 },
	{ "toud_peer_transport_moves_total", "counter", "Moves of the peer's traffic from one "
	    "transport to another (transport_switches).", metrics_peer_moves, 0 },
	{ "toud_peer_receive_bytes_total", "counter", "Bytes received from the peer "
	    "(rx_bytes of touctl show --json).", metrics_peer_counter,
	    offsetof(struct peer, rx_bytes) },
	{ "toud_peer_transmit_bytes_total", "counter", "Bytes sent to the peer (tx_bytes).",
	    metrics_peer_counter, offsetof(struct peer, tx_bytes) },
	{ "toud_peer_receive_packets_total", "counter", "Packets received from the peer "
	    "(rx_packets).", metrics_peer_counter, offsetof(struct peer, rx_packets) },
	{ "toud_peer_transmit_packets_total", "counter", "Packets sent to the peer "
	    "(tx_packets).", metrics_peer_counter, offsetof(struct peer, tx_packets) },
	{ "toud_peer_drops_total", "counter", "Packets of the peer dropped, by reason "
	    "(touctl(8), Drop counters); a reason appears once it counts.",
	    metrics_peer_drops, 0 },
	{ "toud_peer_losses_total", "counter", "Packets of the peer lost: "
	    "toud_peer_drops_total without the reasons that lose nothing (losses).",
	    metrics_peer_losses, 0 },
	{ "toud_peer_events_total", "counter", "Events of the peer that are no loss, by "
	    "name (toud(8)); an event appears once it counts.", metrics_peer_events, 0 },
	{ "toud_peer_last_handshake_timestamp_seconds", "gauge", "Unix time of the peer's "
	    "last completed handshake; absent before the first.", metrics_peer_stamp, 0 },
	{ "toud_peer_last_receive_timestamp_seconds", "gauge", "Unix time of the last "
	    "datagram from the peer; absent before the first.", metrics_peer_stamp, 1 },
	{ "toud_peer_next_attempt_timestamp_seconds", "gauge", "Unix time the next "
	    "handshake attempt is due; absent when none is scheduled.", metrics_peer_stamp, 2 },
	{ "toud_peer_last_error_info", "gauge", "Why the peer's last handshake failed "
	    "(last_error of touctl show), as the label error; absent when none.",
	    metrics_peer_error, 0 },
	{ "toud_peer_last_error", "gauge", "The kind of the peer's last_error as the label "
	    "reason, one of a fixed set (touctl(8)); always 1, absent when none.",
	    metrics_peer_error, 1 },
	{ "toud_peer_endpoint_changes_total", "counter", "Changes of the peer's endpoint "
	    "from one address or port to another (roaming, a new NAT mapping).",
	    metrics_peer_counter, offsetof(struct peer, endpoint_changes) },
};

static void
metrics_peer_transport(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	unsigned k;

	for (k = 0; p->paths && k < p->paths->n; k++) {
		const struct peer_path *ph = &p->paths->path[k];

		metrics_u64(o, f->name, (const char *const[]){ "peer", p->name, "transport",
		    ph->ops->name, NULL }, f->arg == 2 ? pq_has_mlkem(transport_key_exchange(p, ph)) :
		    f->arg ? ph->ops->state(p, ph) == TRANSPORT_UP : k == p->paths->active);
	}
}

static void
metrics_peer_moves(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	metrics_u64(o, f->name, (const char *const[]){ "peer", p->name, NULL },
	    p->transport_switches);
}

static void
metrics_peer_counter(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	uint64_t v;

	memcpy(&v, (const char *)p + f->arg, sizeof(v));
	metrics_u64(o, f->name, (const char *const[]){ "peer", p->name, NULL }, v);
}

static void
metrics_peer_error(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	if (!*peer_error(p))
		return;
	metrics_u64(o, f->name, (const char *const[]){ "peer", p->name,
	    f->arg ? "reason" : "error", f->arg ?
	    peer_error_reason_name((enum peer_error_reason)p->last_error_reason) :
	    peer_error(p), NULL }, 1);
}

static void
metrics_peer_stamp(struct metrics_out *o, const struct peer *p,
    const struct metrics_peer_family *f)
{
	static bool (*const get[])(const struct metrics_out *, const struct peer *,
	    uint64_t *) = { metrics_handshake_ms, metrics_receive_ms, metrics_next_attempt_ms };
	uint64_t ms;

	if (get[f->arg](o, p, &ms))
		metrics_time(o, f->name, (const char *const[]){ "peer", p->name, NULL }, ms);
}

int
metrics_render_next(struct evbuffer *out, const struct toud *t, struct metrics_cursor *cur,
    size_t max_peers, uint64_t now_ms, uint64_t wall_ms)
{
	struct metrics_out o = { .b = out, .t = t, .now_ms = now_ms, .wall_ms = wall_ms,
	    .full = cur->full };
	const struct metrics_peer_family *f;
	size_t n = 0;

	if (cur->step == 0) {
		metrics_interface(&o);
		cur->step = 1;
		cur->peer = 0;
	}
	/* a batch: at most max_peers peers' samples of one family or more */
	while (o.full && cur->step - 1 < ARRAY_SIZE(metrics_peer_families) && n < max_peers &&
	    !o.failed) {
		f = &metrics_peer_families[cur->step - 1];
		if (cur->peer == 0)
			metrics_family(&o, f->name, f->type, f->help);
		/* the list of peers may change between batches (a reload):
		 * a peer may then be missed or written twice, never read
		 * beyond the list */
		for (; cur->peer < t->n_peers && n < max_peers; cur->peer++, n++)
			f->one(&o, t->peers[cur->peer], f);
		if (cur->peer >= t->n_peers) {
			cur->step++;
			cur->peer = 0;
		}
	}
	if (o.failed)
		return -ENOMEM;
	return o.full && cur->step - 1 < ARRAY_SIZE(metrics_peer_families) ? 1 : 0;
}

int
metrics_render(struct evbuffer *out, const struct toud *t, uint64_t now_ms, uint64_t wall_ms)
{
	struct metrics_cursor cur = { .full = true };
	int r;

	while ((r = metrics_render_next(out, t, &cur, SIZE_MAX, now_ms, wall_ms)) > 0)
		;
	return r;
}

uint64_t
metrics_wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
metrics_render_now(struct evbuffer *out, const struct toud *t)
{
	return metrics_render(out, t, toud_now(t), metrics_wall_now());
}
