/* show.c - `touctl show`: the daemon's state as JSON (the stable fields of
 * DESIGN 4.1) or as text in the manner of `wg show`.
 *
 * Called from the control socket, never from the packet path: the text is
 * written to an open_memstream(3) buffer. */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "conf.h"
#include "control.h"
#include "ctx.h"
#include "dns.h"
#include "drop.h"
#include "dtls.h"
#include "keys.h"
#include "offload.h"
#include "peer.h"
#include "pq.h"
#include "rx.h"
#include "session.h"
#include "show.h"
#include "tcp.h"
#include "transport.h"
#include "tun.h"
#include "tunout.h"
#include "tx.h"
#include "udp.h"
#include "util.h"

/* A JSON string.  Control characters are escaped, and bytes that are not
 * valid UTF-8 become U+FFFD so the output always parses. */
static void
show_json_str(FILE *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;

	fwrite("\"", 1, 1, b);
	while (*s) {
		switch (*s) {
		case '"':
			fputs("\\\"", b);
			break;
		case '\\':
			fputs("\\\\", b);
			break;
		case '\b':
			fputs("\\b", b);
			break;
		case '\f':
			fputs("\\f", b);
			break;
		case '\n':
			fputs("\\n", b);
			break;
		case '\r':
			fputs("\\r", b);
			break;
		case '\t':
			fputs("\\t", b);
			break;
		default:
			if (*s < 0x20 || *s == 0x7f) {
				fprintf(b, "\\u%04x", *s);
			} else if (*s < 0x80) {
				fwrite((const char *)s, 1, 1, b);
			} else if ((n = util_utf8_len(s)) > 0) {
				fwrite((const char *)s, 1, n, b);
				s += n;
				continue;
			} else {
				fputs("\\ufffd", b);
			}
		}
		s++;
	}
	fwrite("\"", 1, 1, b);
}

/* Text output goes to a terminal: control bytes are shown as \xNN. */
static void
show_text_str(FILE *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	for (; *s; s++) {
		if (*s < 0x20 || *s == 0x7f || *s == '\\')
			fprintf(b, "\\x%02x", *s);
		else
			fwrite((const char *)s, 1, 1, b);
	}
}

/* The session identifier of the peer's current DTLS association as hex, or
 * NULL when it has none (encryption = none, or no session yet). */
static const char *
show_session_id(const struct peer *p, char *buf, size_t len)
{
	if (!p->cur || len < 17)
		return NULL;
	snprintf(buf, len, "%016" PRIx64, p->cur->id);
	return buf;
}

/* The wall-clock time (unix seconds) of the peer's last completed
 * handshake; false when none is known. */
static bool
show_last_handshake(const struct peer *p, uint64_t *unix_s)
{
	if (!p->last_handshake)
		return false;
	*unix_s = p->last_handshake;
	return true;
}

/* Seconds since the last datagram from the peer; false if none arrived. */
static bool
show_last_rx(const struct peer *p, uint64_t now_ms, uint64_t *secs)
{
	if (!p->last_rx_ms)
		return false;
	*secs = now_ms > p->last_rx_ms ? (now_ms - p->last_rx_ms) / 1000 : 0;
	return true;
}

static const char *
show_encryption(const struct toud *t)
{
	return t->conf->iface.encryption == CONF_ENC_NONE ? "none" : "dtls";
}

void
show_offload_status(const struct toud *t, struct offload_status *st)
{
	memset(st, 0, sizeof(*st));
	if (t->tun)
		st->tun_tso = t->tun->vnet &&
		    (t->tun->offloads & (TUN_OFF_TSO4 | TUN_OFF_TSO6)) != 0;
	st->tun_coalesce = rx_coalescing(t->rx);
	if (t->udp) {
		st->udp_gso = t->udp->gso4 || t->udp->gso6;
		st->udp_gro = t->udp->gro4 || t->udp->gro6;
	}
}

static void
show_json_drops(FILE *b, const uint64_t *drops)
{
	bool first = true;
	unsigned r;

	fwrite("{", 1, 1, b);
	for (r = 0; r < DROP__MAX; r++) {
		if (!drops[r])
			continue;
		if (!first)
			fputs(", ", b);
		first = false;
		show_json_str(b, drop_name((enum drop_reason)r));
		fprintf(b, ": %" PRIu64, drops[r]);
	}
	fwrite("}", 1, 1, b);
}

/* Non-drop events (events.h), as an object next to "drops". */
static void
show_json_events(FILE *b, const uint64_t *events)
{
	bool first = true;
	unsigned e;

	fwrite("{", 1, 1, b);
	for (e = 0; e < EVENT__MAX; e++) {
		if (!events[e])
			continue;
		if (!first)
			fputs(", ", b);
		first = false;
		show_json_str(b, event_name((enum toud_event)e));
		fprintf(b, ": %" PRIu64, events[e]);
	}
	fwrite("}", 1, 1, b);
}

static bool show_next_attempt(const struct peer *p, uint64_t now_ms, uint64_t *secs);

/* A time both ways, touctl(8)'s convention for the fields added beside
 * the first ones: ,"NAME_unix" (wall clock, unix seconds) and
 * ,"NAME_REL" (whole seconds ago, _age_s, or ahead, _in_s), null when
 * unknown. */
static void
show_json_time(FILE *b, const char *name, const char *rel, bool known, uint64_t unix_s,
    uint64_t rel_s)
{
	if (known)
		fprintf(b, ",\n      \"%s_unix\": %" PRIu64 ",\n      \"%s%s\": %" PRIu64, name,
		    unix_s, name, rel, rel_s);
	else
		fprintf(b, ",\n      \"%s_unix\": null,\n      \"%s%s\": null", name, name, rel);
}

/* The peer's times (touctl(8): last_handshake is wall clock, last_rx
 * seconds ago and next_attempt seconds ahead; these give each both ways). */
static void
show_json_times(FILE *b, const struct peer *p, uint64_t now_ms)
{
	uint64_t now_unix = (uint64_t)time(NULL), v;
	bool known;

	known = show_last_handshake(p, &v);
	show_json_time(b, "last_handshake", "_age_s", known, v,
	    known && now_unix > v ? now_unix - v : 0);
	known = show_last_rx(p, now_ms, &v);
	show_json_time(b, "last_rx", "_age_s", known, known ? now_unix - v : 0, v);
	known = show_next_attempt(p, now_ms, &v);
	show_json_time(b, "next_attempt", "_in_s", known, known ? now_unix + v : 0, v);
}

/* A JSON string, or null for NULL. */
static void
show_json_str_or_null(FILE *b, const char *str)
{
	if (str)
		show_json_str(b, str);
	else
		fputs("null", b);
}

/* ["10.77.0.2/32", ...] */
static void
show_json_prefixes(FILE *b, const struct conf_prefix *pf, size_t n)
{
	char buf[UTIL_ADDRSTRLEN + 8];
	size_t i;

	fwrite("[", 1, 1, b);
	for (i = 0; i < n; i++) {
		if (i)
			fputs(", ", b);
		show_json_str(b, util_prefix_fmt(&pf[i].p, buf, sizeof(buf)));
	}
	fwrite("]", 1, 1, b);
}

/* The fingerprint p pins, formatted into buf; NULL for a peer that is
 * authenticated by CA and name. */
static const char *
show_pinned_fp(const struct peer *p, char *buf)
{
	if (!p->cf->has_fingerprint)
		return NULL;
	keys_fp_format(p->cf->fingerprint, buf);
	return buf;
}

static bool
show_next_attempt(const struct peer *p, uint64_t now_ms, uint64_t *secs)
{
	if (!p->next_attempt_ms)
		return false;
	*secs = p->next_attempt_ms > now_ms ? (p->next_attempt_ms - now_ms + 999) / 1000 : 0;
	return true;
}

/* The cipher of what carries p's traffic (NULL: nothing). */
static const char *
show_cipher(const struct peer *p)
{
	const char *c = peer_cipher(p);

	return *c ? c : NULL;
}

/* The key exchange of what carries p's traffic (NULL: nothing). */
static const char *
show_key_exchange(const struct peer *p)
{
	const char *kx = peer_key_exchange(p);

	return *kx ? kx : NULL;
}

/* "  paths: udp up (active) x25519, tcp down, rtt 1.2 ms" */
static void
show_text_paths(FILE *b, const struct peer *p)
{
	unsigned i;

	if (!p->paths)
		return;
	fputs("  paths:", b);
	for (i = 0; i < p->paths->n; i++) {
		struct peer_path *ph = &p->paths->path[i];
		uint64_t rtt = ph->ops->rtt_us(p, ph);

		fprintf(b, "%s %s %s", i ? "," : "", ph->ops->name,
		    transport_state_name(ph->ops->state(p, ph)));
		const char *kx = transport_key_exchange(p, ph);

		if (i == p->paths->active)
			fputs(" (active)", b);
		if (*kx) {
			fputc(' ', b);
			show_text_str(b, kx);
		}
		if (rtt)
			fprintf(b, " rtt %" PRIu64 ".%" PRIu64 " ms", rtt / 1000, rtt % 1000 / 100);
	}
	fwrite("\n", 1, 1, b);
}

/* "paths": each way to reach p, in order of preference (transport.h):
 * its transport, its state, whether it carries the traffic, its key
 * exchange (null: none up) and its round-trip time when the transport
 * measures one (else null). */
static void
show_json_paths(FILE *b, const struct peer *p)
{
	unsigned i;

	fputs(",\n      \"paths\": [", b);
	for (i = 0; p->paths && i < p->paths->n; i++) {
		struct peer_path *ph = &p->paths->path[i];
		uint64_t rtt = ph->ops->rtt_us(p, ph);

		fprintf(b, "%s{\"transport\": ", i ? ", " : "");
		show_json_str(b, ph->ops->name);
		fputs(", \"state\": ", b);
		show_json_str(b, transport_state_name(ph->ops->state(p, ph)));
		fprintf(b, ", \"active\": %s, \"key_exchange\": ", i == p->paths->active ? "true" :
		    "false");
		show_json_str_or_null(b, *transport_key_exchange(p, ph) ?
		    transport_key_exchange(p, ph) : NULL);
		fputs(", \"rtt_us\": ", b);
		if (rtt)
			fprintf(b, "%" PRIu64 "}", rtt);
		else
			fputs("null}", b);
	}
	fputs("]", b);
}

/* The path state of p's current session (a probe of another session's
 * address is over). */
static enum path_state
show_path(const struct peer *p)
{
	if (p->cur && path_probing_for(&p->probe, p->cur->id))
		return PATH_PROBING;
	return PATH_VALIDATED;
}

/* HOST:PORT of a configured endpoint-tcp or proxy (NULL: none). */
static const char *
show_hostport(const char *host, uint16_t port, char *buf, size_t len)
{
	if (!host)
		return NULL;
	snprintf(buf, len, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
	return buf;
}

static void
show_json_peer(FILE *b, const struct peer *p, uint64_t now_ms)
{
	char fp[7 + 2 * KEYS_FP_LEN + 1];
	char buf[UTIL_ADDRSTRLEN];
	const char *sid;
	uint64_t v;

	fputs("    {\n      \"name\": ", b);
	show_json_str(b, p->name);
	fputs(",\n      \"state\": ", b);
	show_json_str(b, peer_state_name(p->state));
	fputs(",\n      \"endpoint\": ", b);
	if (p->has_endpoint)
		show_json_str(b, util_sa_fmt(&p->endpoint, buf, sizeof(buf)));
	else
		fputs("null", b);
	fputs(",\n      \"session_id\": ", b);
	if ((sid = show_session_id(p, buf, sizeof(buf))))
		show_json_str(b, sid);
	else
		fputs("null", b);
	fputs(",\n      \"last_handshake\": ", b);
	if (show_last_handshake(p, &v))
		fprintf(b, "%" PRIu64, v);
	else
		fputs("null", b);
	fprintf(b, ",\n      \"rx_bytes\": %" PRIu64
	    ",\n      \"tx_bytes\": %" PRIu64
	    ",\n      \"rx_packets\": %" PRIu64
	    ",\n      \"tx_packets\": %" PRIu64
	    ",\n      \"drops\": ",
	    p->rx_bytes, p->tx_bytes, p->rx_packets, p->tx_packets);
	show_json_drops(b, p->drops);
	fputs(",\n      \"events\": ", b);
	show_json_events(b, p->events);
	fputs(",\n      \"last_rx\": ", b);
	if (show_last_rx(p, now_ms, &v))
		fprintf(b, "%" PRIu64, v);
	else
		fputs("null", b);
	fputs(",\n      \"fingerprint\": ", b);
	show_json_str_or_null(b, show_pinned_fp(p, fp));
	fputs(",\n      \"ca\": ", b);
	show_json_str_or_null(b, p->cf->ca);
	fputs(",\n      \"cert_name\": ", b);
	show_json_str_or_null(b, p->cf->ca ? p->cf->cert_name : NULL);
	fputs(",\n      \"addresses\": ", b);
	show_json_prefixes(b, p->cf->address, p->cf->n_address);
	fputs(",\n      \"allowed_ips\": ", b);
	show_json_prefixes(b, p->cf->allowed_ips, p->cf->n_allowed_ips);
	fprintf(b, ",\n      \"keepalive\": %u", p->cf->keepalive);
	fprintf(b, ",\n      \"preshared_key\": %s", p->cf->has_psk ? "true" : "false");
	fputs(",\n      \"cipher\": ", b);
	show_json_str_or_null(b, show_cipher(p));
	fputs(",\n      \"key_exchange\": ", b);
	show_json_str_or_null(b, show_key_exchange(p));
	fprintf(b, ",\n      \"post_quantum\": %s", pq_has_mlkem(show_key_exchange(p)) ?
	    "true" : "false");
	fputs(",\n      \"last_error\": ", b);
	show_json_str_or_null(b, *peer_error(p) ? peer_error(p) : NULL);
	fputs(",\n      \"next_attempt\": ", b);
	if (show_next_attempt(p, now_ms, &v))
		fprintf(b, "%" PRIu64, v);
	else
		fputs("null", b);
	fputs(",\n      \"wire_id\": ", b);
	if (p->cur) {
		snprintf(buf, sizeof(buf), "%016" PRIx64, p->cur->wire_id);
		show_json_str(b, buf);
	} else {
		fputs("null", b);
	}
	fprintf(b, ",\n      \"id_rotations\": %u", p->cur ? p->cur->rotations : 0);
	fputs(",\n      \"transport\": ", b);
	show_json_str(b, peer_transport_name(p));
	fputs(",\n      \"endpoint_tcp\": ", b);
	show_json_str_or_null(b, show_hostport(p->cf->endpoint_tcp_host, p->cf->endpoint_tcp_port,
	    buf, sizeof(buf)));
	fputs(",\n      \"proxy\": ", b);
	show_json_str_or_null(b, show_hostport(p->cf->proxy_host, p->cf->proxy_port, buf,
	    sizeof(buf)));
	fputs(",\n      \"sni\": ", b);
	show_json_str_or_null(b, p->cf->sni);
	fprintf(b, ",\n      \"transport_switches\": %" PRIu64, p->transport_switches);
	show_json_paths(b, p);
	fputs(",\n      \"path_state\": ", b);
	show_json_str(b, path_state_name(show_path(p)));
	fputs(",\n      \"path_probing\": ", b);
	if (show_path(p) == PATH_PROBING)
		show_json_str(b, util_sa_fmt(&p->probe.addr, buf, sizeof(buf)));
	else
		fputs("null", b);
	fprintf(b, ",\n      \"losses\": %" PRIu64, drop_losses(p->drops));
	show_json_times(b, p, now_ms);
	fputs("\n    }", b);
}

/* This node's fingerprint, what its peers pin (DTLS only). */
static const char *
show_own_fp(const struct toud *t, char *buf)
{
	if (!t->dtls)
		return NULL;
	keys_fp_format(dtls_ctx_fingerprint(t->dtls), buf);
	return buf;
}

/* The table toud's routes go into (a full tunnel's for its default routes,
 * the others then being in main); 0 with table = off. */
static uint32_t
show_table(const struct toud *t)
{
	const struct conf *c = t->conf;

	switch (c->iface.table) {
	case CONF_TABLE_OFF:
		return 0;
	case CONF_TABLE_NUMBER:
		return c->iface.table_number;
	case CONF_TABLE_AUTO:
		break;
	}
	if (t->full_table && (conf_full_tunnel(c, AF_INET) || conf_full_tunnel(c, AF_INET6)))
		return t->full_table;
	return CONF_TABLE_MAIN;
}

/* What the daemon has allocated and not freed (glibc's count): memory per
 * peer and per session, as bench/scale.sh measures it. */
static size_t
show_heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* The interface, up to where the peers begin. */
static void
show_json_head(FILE *b, const struct toud *t)
{
	char fp[7 + 2 * KEYS_FP_LEN + 1], listen[UTIL_ADDRSTRLEN + 8];
	struct offload_status off;

	fputs("{\n  \"interface\": {\n    \"name\": ", b);
	show_json_str(b, t->conf->iface.name);
	fprintf(b, ",\n    \"mtu\": %u,\n    \"listen_port\": %u,\n"
	    "    \"encryption\": ", t->tun_mtu, t->conf->iface.listen_port);
	show_json_str(b, show_encryption(t));
	show_offload_status(t, &off);
	fprintf(b, ",\n    \"offload\": {\"tun_tso\": %s, \"udp_gso\": %s, \"udp_gro\": %s, "
	    "\"tun_coalesce\": %s}", off.tun_tso ? "true" : "false", off.udp_gso ? "true" : "false",
	    off.udp_gro ? "true" : "false", off.tun_coalesce ? "true" : "false");
	fprintf(b, ",\n    \"threads\": {\"udp_send\": %s, \"tun_write\": %s, \"record_open\": %s}",
	    tx_threaded(t->tx) ? "true" : "false", tunout_threaded(t->tunout) ? "true" : "false",
	    rx_opening_threaded(t->rx) ? "true" : "false");
	fputs(",\n    \"drops\": ", b);
	show_json_drops(b, t->drops);
	fputs(",\n    \"events\": ", b);
	show_json_events(b, t->events);
	fprintf(b, ",\n    \"sessions\": %zu,\n    \"half_open\": %u",
	    session_count(t), session_half_open(t));
	fprintf(b, ",\n    \"peer_count\": %zu,\n    \"heap_used\": %zu", t->n_peers,
	    show_heap_bytes());
	fputs(",\n    \"tcp_listen\": ", b);
	show_json_str_or_null(b, tcp_listen_fmt(t, listen, sizeof(listen)));
	fprintf(b, ",\n    \"tcp_connections\": %u", tcp_connections(t));
	fputs(",\n    \"fingerprint\": ", b);
	show_json_str_or_null(b, show_own_fp(t, fp));
	if (t->conf->iface.server_id)
		fprintf(b, ",\n    \"server_id\": %u", (unsigned)t->conf->iface.server_id);
	else
		fputs(",\n    \"server_id\": null", b);
	fputs(",\n    \"dns\": ", b);
	show_json_str(b, dns_via_name(dns_via(t)));
	fputs(",\n    \"dns_error\": ", b);
	show_json_str_or_null(b, dns_error(t));
	fprintf(b, ",\n    \"fwmark\": %u,\n    \"table\": %u", (unsigned)t->fwmark,
	    (unsigned)show_table(t));
	fprintf(b, ",\n    \"losses\": %" PRIu64, drop_losses(t->drops));
	fprintf(b, ",\n    \"host_changes\": %" PRIu64 ",\n    \"host_change_pending\": %s",
	    t->host_changes, t->ev_netchange && evtimer_pending(t->ev_netchange, NULL) ?
	    "true" : "false");
	fputs("\n  },\n  \"peers\": [", b);
}

/* "drops:" the losses, then "other:" what is counted but lost nothing
 * (drop_is_loss()), each line only when it has a count. */
static void
show_text_drops(FILE *b, const uint64_t *drops)
{
	unsigned r, loss;

	for (loss = 2; loss-- > 0;) {
		bool first = true;

		for (r = 0; r < DROP__MAX; r++) {
			if (!drops[r] || drop_is_loss((enum drop_reason)r) != (bool)loss)
				continue;
			fputs(!first ? ", " : loss ? "  drops: " : "  other: ", b);
			first = false;
			fprintf(b, "%s %" PRIu64, drop_name((enum drop_reason)r), drops[r]);
		}
		if (!first)
			fputs(loss ? "\n" : " (not losses)\n", b);
	}
}

/* "1.21 MiB" as wg(8) prints it. */
static void
show_text_bytes(FILE *b, uint64_t v)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double d = (double)v;
	unsigned u = 0;

	if (v < 1024) {
		fprintf(b, "%" PRIu64 " B", v);
		return;
	}
	d /= 1024;
	while (d >= 1024 && u + 1 < ARRAY_SIZE(unit)) {
		d /= 1024;
		u++;
	}
	fprintf(b, "%.2f %s", d, unit[u]);
}

/* "1 hour, 2 minutes, 3 seconds ago". */
static void
show_text_ago(FILE *b, uint64_t secs)
{
	static const struct { const char *name; uint64_t secs; } part[] = {
		{ "day", 86400 }, { "hour", 3600 }, { "minute", 60 }, { "second", 1 },
	};
	bool first = true;
	size_t i;

	if (!secs) {
		fputs("now", b);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(part); i++) {
		uint64_t n = secs / part[i].secs;

		if (!n)
			continue;
		secs %= part[i].secs;
		fprintf(b, "%s%" PRIu64 " %s%s", first ? "" : ", ", n,
		    part[i].name, n == 1 ? "" : "s");
		first = false;
	}
	fputs(" ago", b);
}

static void
show_text_prefixes(FILE *b, const char *what, const struct conf_prefix *pf, size_t n)
{
	char buf[UTIL_ADDRSTRLEN + 8];
	size_t i;

	if (!n)
		return;
	fprintf(b, "  %s: ", what);
	for (i = 0; i < n; i++)
		fprintf(b, "%s%s", i ? ", " : "", util_prefix_fmt(&pf[i].p, buf, sizeof(buf)));
	fwrite("\n", 1, 1, b);
}

static void
show_text_peer(FILE *b, const struct peer *p, uint64_t now_ms)
{
	char buf[UTIL_ADDRSTRLEN], fp[7 + 2 * KEYS_FP_LEN + 1];
	uint64_t v;

	fputs("\npeer: ", b);
	show_text_str(b, p->name);
	fputs("\n  endpoint: ", b);
	if (p->has_endpoint)
		show_text_str(b, util_sa_fmt(&p->endpoint, buf, sizeof(buf)));
	else
		fputs("(none)", b);
	fprintf(b, "\n  state: %s\n", peer_state_name(p->state));
	if (p->cf->endpoint_tcp_host || (p->paths && p->paths->active != 0)) {
		fprintf(b, "  transport: %s (%" PRIu64 " switch%s)", peer_transport_name(p),
		    p->transport_switches, p->transport_switches == 1 ? "" : "es");
		if (show_hostport(p->cf->endpoint_tcp_host, p->cf->endpoint_tcp_port, buf,
		    sizeof(buf)))
			fprintf(b, ", tcp endpoint %s", buf);
		if (show_hostport(p->cf->proxy_host, p->cf->proxy_port, buf, sizeof(buf)))
			fprintf(b, " via proxy %s", buf);
		if (p->cf->sni) {
			fputs(", server name ", b);
			show_text_str(b, p->cf->sni);
		}
		fwrite("\n", 1, 1, b);
		show_text_paths(b, p);
	}
	if (show_pinned_fp(p, fp))
		fprintf(b, "  fingerprint: %s\n", fp);
	if (p->cf->ca) {
		fputs("  ca: ", b);
		show_text_str(b, p->cf->ca);
		fputs(", name ", b);
		show_text_str(b, p->cf->cert_name ? p->cf->cert_name : "");
		fwrite("\n", 1, 1, b);
	}
	show_text_prefixes(b, "addresses", p->cf->address, p->cf->n_address);
	show_text_prefixes(b, "allowed ips", p->cf->allowed_ips, p->cf->n_allowed_ips);
	if (p->cf->keepalive)
		fprintf(b, "  keepalive: every %u seconds\n", p->cf->keepalive);
	fprintf(b, "  preshared key: %s\n", p->cf->has_psk ? "yes" : "no");
	if (*peer_error(p)) {
		fputs("  last error: ", b);
		show_text_str(b, peer_error(p));
		fwrite("\n", 1, 1, b);
	}
	if (show_next_attempt(p, now_ms, &v))
		fprintf(b, "  next attempt: in %" PRIu64 " second%s\n", v, v == 1 ? "" : "s");
	if (show_session_id(p, buf, sizeof(buf)))
		fprintf(b, "  session: %s (%s)\n", buf, dtls_sess_cipher(p->cur->dtls));
	if (show_key_exchange(p)) {
		fputs("  key exchange: ", b);
		show_text_str(b, show_key_exchange(p));
		fprintf(b, " (post-quantum: %s)\n", pq_has_mlkem(show_key_exchange(p)) ? "yes" : "no");
	}
	if (p->cur && p->cur->rotations)
		fprintf(b, "  session ID on the wire: %016" PRIx64 " (changed %u time%s)\n",
		    p->cur->wire_id, p->cur->rotations, p->cur->rotations == 1 ? "" : "s");
	if (show_path(p) == PATH_PROBING)
		fprintf(b, "  path: probing %s\n", util_sa_fmt(&p->probe.addr, buf, sizeof(buf)));
	if (show_last_handshake(p, &v)) {
		uint64_t wall = util_wall_s();

		fputs("  latest handshake: ", b);
		show_text_ago(b, wall > v ? wall - v : 0);
		fwrite("\n", 1, 1, b);
	}
	if (show_last_rx(p, now_ms, &v)) {
		fputs("  latest receive: ", b);
		show_text_ago(b, v);
		fwrite("\n", 1, 1, b);
	}
	fputs("  transfer: ", b);
	show_text_bytes(b, p->rx_bytes);
	fputs(" received, ", b);
	show_text_bytes(b, p->tx_bytes);
	fprintf(b, " sent\n  packets: %" PRIu64 " received, %" PRIu64 " sent\n",
	    p->rx_packets, p->tx_packets);
	show_text_drops(b, p->drops);
}

/* "dns: 10.0.0.53, example.com via resolved", or why it is not applied. */
static void
show_text_dns(FILE *b, const struct toud *t)
{
	const struct conf_iface *i = &t->conf->iface;
	char a[UTIL_ADDRSTRLEN];
	size_t x;

	if (!i->n_dns)
		return;
	fputs("  dns: ", b);
	for (x = 0; x < i->n_dns; x++)
		fprintf(b, "%s%s", x ? ", " : "", util_addr_fmt(&i->dns[x].p.addr, a, sizeof(a)));
	for (x = 0; x < i->n_dns_search; x++)
		fprintf(b, ", %s", i->dns_search[x]);
	if (dns_via(t) != DNS_VIA_NONE)
		fprintf(b, " via %s\n", dns_via_name(dns_via(t)));
	else
		fprintf(b, " (not applied: %s)\n", dns_error(t) ? dns_error(t) : "unknown");
}

/* The interface, before the peers. */
static void
show_text_head(FILE *b, const struct toud *t)
{
	char fp[7 + 2 * KEYS_FP_LEN + 1], listen[UTIL_ADDRSTRLEN + 8];
	struct offload_status off;

	fputs("interface: ", b);
	show_text_str(b, t->conf->iface.name);
	fprintf(b, "\n  listen port: %u\n  mtu: %u\n  encryption: %s%s\n",
	    t->conf->iface.listen_port, t->tun_mtu, show_encryption(t),
	    t->conf->iface.encryption == CONF_ENC_NONE ?
	    " (traffic is NOT encrypted: for debugging only)" : "");
	show_offload_status(t, &off);
	fprintf(b, "  offload: tun-tso %s, udp-gso %s, udp-gro %s, tun-coalesce %s\n",
	    off.tun_tso ? "on" : "off", off.udp_gso ? "on" : "off", off.udp_gro ? "on" : "off",
	    off.tun_coalesce ? "on" : "off");
	fprintf(b, "  threads: udp-send %s, tun-write %s, record-open %s\n",
	    tx_threaded(t->tx) ? "on" : "off", tunout_threaded(t->tunout) ? "on" : "off",
	    rx_opening_threaded(t->rx) ? "on" : "off");
	fprintf(b, "  peers: %zu, sessions: %zu, heap: %zu KiB\n", t->n_peers, session_count(t),
	    show_heap_bytes() / 1024);
	if (show_own_fp(t, fp))
		fprintf(b, "  fingerprint: %s\n", fp);
	if (tcp_listen_fmt(t, listen, sizeof(listen)))
		fprintf(b, "  tcp listen: %s (%u connection%s)\n", listen, tcp_connections(t),
		    tcp_connections(t) == 1 ? "" : "s");
	if (t->fwmark)
		fprintf(b, "  fwmark: 0x%x\n", (unsigned)t->fwmark);
	if (t->conf->iface.server_id)
		fprintf(b, "  server id: %u\n", (unsigned)t->conf->iface.server_id);
	if (t->conf->iface.table == CONF_TABLE_OFF)
		fputs("  table: off (no routes installed)\n", b);
	else if (show_table(t) != CONF_TABLE_MAIN)
		fprintf(b, "  table: %u%s\n", (unsigned)show_table(t),
		    t->conf->iface.table == CONF_TABLE_AUTO ?
		    " (default routes; the others in main)" : "");
	show_text_dns(b, t);
	show_text_drops(b, t->drops);
}

/* A show is its head, each peer in turn (the i-th of n), and its end:
 * show_render() writes them all at once, a show_stream a few peers at a
 * time. */
static void
show_head(FILE *b, const struct toud *t, bool json)
{
	if (json)
		show_json_head(b, t);
	else
		show_text_head(b, t);
}

static void
show_item(FILE *b, const struct peer *p, size_t i, uint64_t now_ms, bool json)
{
	if (json) {
		fputs(i ? ",\n" : "\n", b);
		show_json_peer(b, p, now_ms);
	} else {
		show_text_peer(b, p, now_ms);
	}
}

static void
show_tail(FILE *b, size_t n, bool json)
{
	if (json)
		fputs(n ? "\n  ]\n}\n" : "]\n}\n", b);
}

char *
show_render(struct toud *t, const char *peer, bool json)
{
	struct peer *one, *const *peers = t->peers;
	size_t n = t->n_peers, len, i;
	uint64_t now_ms = util_now_ms();
	char *out = NULL;
	FILE *f;
	int bad;

	if (peer) {
		if (!(one = peer_find_by_name(t, peer))) {
			errno = ENOENT;
			return NULL;
		}
		peers = &one;
		n = 1;
	}
	if (!(f = open_memstream(&out, &len)))
		return NULL;
	show_head(f, t, json);
	for (i = 0; i < n; i++)
		show_item(f, peers[i], i, now_ms, json);
	show_tail(f, n, json);
	bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		free(out);
		errno = ENOMEM;
		return NULL;
	}
	return out;
}

/* A stream stands for the list of peers it began with: it keeps the list's
 * generation and the index of the next peer, never a peer, and looks the
 * peers up again for each batch.  A list that changed under it (a reload
 * that added, removed or reordered peers) cannot be gone on with: the
 * peers already written and those to come would be of two lists. */
struct show_stream {
	struct toud *t;
	uint64_t peers_gen;
	size_t n;                       /* t->n_peers at the start */
	size_t next;                    /* the next peer to render */
	bool json, begun;
};

struct show_stream *
show_stream_new(struct toud *t, bool json)
{
	struct show_stream *s;

	if (!(s = calloc(1, sizeof(*s))))
		return NULL;
	s->t = t;
	s->peers_gen = t->peers_gen;
	s->n = t->n_peers;
	s->json = json;
	return s;
}

int
show_stream_next(struct show_stream *s, FILE *f, size_t max)
{
	struct toud *t = s->t;
	uint64_t now_ms = util_now_ms();
	size_t end;

	if (t->peers_gen != s->peers_gen || t->n_peers != s->n) {
		errno = ESTALE;
		return -1;
	}
	if (!s->begun) {
		show_head(f, t, s->json);
		s->begun = true;
	}
	end = s->n - s->next > max ? s->next + max : s->n;
	for (; s->next < end; s->next++)
		show_item(f, t->peers[s->next], s->next, now_ms, s->json);
	if (s->next < s->n)
		return 1;
	show_tail(f, s->n, s->json);
	return 0;
}

void
show_stream_free(struct show_stream *s)
{
	free(s);
}
