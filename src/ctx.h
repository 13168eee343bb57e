/* ctx.h - struct toud, the one context of the daemon, passed explicitly to
 * every module, and its clock.  The daemon's state lives here; outside it
 * there are only the logger's level and rate limit (log.c) and the rings
 * each data thread shares with the main loop (worker.h). */
#ifndef TOUD_CTX_H
#define TOUD_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "events.h"
#include "transport.h"
#include "util.h"

struct conf;
struct event_base;
struct event;
struct tun;
struct udp;
struct offload_vnet;
struct rtnl;
struct xfrm;
struct control;
struct metrics_http;
struct prefix_table;
struct peer;
struct rx;
struct tunout;
struct dtls_ctx;
struct session_table;
struct handshake;
struct evdns_base;
struct udp_msg;
struct keys_ca_cache;
struct dns;

/* The priorities of the main loop's events (daemon_base_new() in
 * daemon.c says why): every event at TOUD_PRIO_DEFAULT, where libevent
 * puts it, but the metrics endpoint's connections at TOUD_PRIO_LOW. */
#define TOUD_PRIOS 3
#define TOUD_PRIO_DEFAULT 1             /* TOUD_PRIOS / 2, libevent's default */
#define TOUD_PRIO_LOW 2

#define TOUD_NETCHANGE_GONE 8          /* removed addresses remembered per burst */
struct tx;
struct tcp;

struct toud {
	struct event_base *base;
	const char *conf_file;
	const char *instance;           /* -i NAME, or NULL */
	const char *instance_control;   /* -i NAME: the instance's default socket */
	bool debug;                     /* -d: debug logging whatever the file says */
	bool starting;                  /* until daemon_ready(): a failure is fatal (err) */
	struct conf *conf;              /* the configuration in force */

	struct tun *tun;
	struct udp *udp;
	struct rtnl *rtnl;
	struct control *control;
	struct metrics_http *metrics_http;      /* [interface] metrics; NULL: off */
	struct tx *tx;                  /* TUN -> UDP, with its buffers */
	struct rx *rx;                  /* UDP -> TUN, with its buffers */
	struct tunout *tunout;          /* the TUN's one writer (rx's packets, tx's ICMP) */
	struct tcp *tcp;                /* the TCP transport (tcp.c); NULL: not set up */
	/* The transports a peer can be reached on, in order of preference:
	 * each peer gets a path of each (transport.h; daemon.c registers). */
	const struct transport_ops *transports[TRANSPORT_MAX];
	unsigned n_transports;

	struct peer **peers;            /* in configuration order */
	size_t n_peers;
	/* Changes whenever the list changes (which peers, in what order; a
	 * reload): a show_stream walking it by index stops there. */
	uint64_t peers_gen;
	size_t n_peers_up;              /* of them in state up (peer.c keeps it) */
	/* Every live peer by the slot its peer_ref names (peer.h); a slot's
	 * generation is the one its peer was created with.  Grown as peers
	 * are made, freed with the last; gen outlives it. */
	struct peer_slots {
		struct peer_slot {
			struct peer *p;
			uint32_t gen;
		} *slot;
		uint32_t n, used, gen;
	} peer_slots;
	/* While a configuration's peers are set up (start, reload): its CA
	 * files, each read once (keys.c); NULL otherwise. */
	struct keys_ca_cache *ca_cache;
	/* Destination -> peer for the TUN side; the same table checks the
	 * inner source of packets from a peer (anti-spoofing). */
	struct prefix_table *routes;

	/* This node's tunnel addresses used for compact TOU (the first one of
	 * each family in [interface] address); family 0 when absent. */
	struct ipaddr local4, local6;
	unsigned tun_mtu;

	/* Routing of a full tunnel (fulltunnel.c): the table of its default
	 * routes (0 until one is needed), the mark on the UDP sockets, and
	 * the families whose fwmark rules are installed. */
	uint32_t full_table;
	uint32_t fwmark;
	bool full4, full6;
	bool full_dns4, full_dns6;      /* ... and whose DNS rule (port 53) is */
	struct xfrm *xfrm;              /* the DNS rules' xfrm policies (NULL: none yet) */

	uint64_t drops[DROP__MAX];      /* drops that belong to no peer */
	/* Events counted for the interface (events.h): those that belong to
	 * no peer, and session_closed (a close_notify from any peer, counted
	 * here only). */
	uint64_t events[EVENT__MAX];

	/* Seams for running the core without a kernel (unit tests): the
	 * monotonic clock (NULL: util_now_ms), where udpout.c's output queue
	 * goes (NULL: the UDP sockets; the sink sets each msgs[i].err) and
	 * where rx.c's TUN writes go (NULL: the TUN; 0 or -errno, as
	 * tun_write_vnet()).  Both sinks get sink_arg. */
	uint64_t (*clock)(const struct toud *t);
	void (*sink)(struct toud *t, struct udp_msg *msgs, unsigned n);
	int (*tun_sink)(struct toud *t, const struct offload_vnet *vh, const uint8_t *pkt,
	    size_t len);
	void *sink_arg;

	/* encryption = dtls */
	struct dtls_ctx *dtls;
	struct session_table *sessions; /* session.h */
	struct handshake *hs;           /* handshake.c: listener state, cookie timer */

	struct event *ev_sigterm, *ev_sigint, *ev_sighup;
	struct event *ev_watchdog;      /* notify.c */
	struct evdns_base *dns;         /* resolve.c */
	struct dns *dns_link;           /* dns.c: the TUN link's name servers; NULL: none set */
	int netmon_fd;                  /* rtnetlink events of the host */
	struct event *ev_netmon, *ev_netchange;
	uint64_t host_changes;          /* address and route changes read (show.c) */
	/* Host changes gathered until the debounce fires (peer.c). */
	struct toud_netchange {
		bool all;               /* events lost, or too many addresses */
		bool route4, route6;    /* a default route changed */
		bool added4, added6;    /* a global address appeared */
		unsigned n_gone;
		struct ipaddr gone[TOUD_NETCHANGE_GONE];   /* addresses removed */
	} netchange;
};

/* The daemon's monotonic time in milliseconds. */
static inline uint64_t
toud_now(const struct toud *t)
{
	return t->clock ? t->clock(t) : util_now_ms();
}

#endif
