/* daemon.c - the core's start-up, in order, and the one teardown that
 * undoes every step of it in reverse, from wherever start-up stopped.
 *
 * Up (daemon_start): the event loop and the resolver; the TUN, its
 * addresses and a full tunnel's table; the peers and their routes; the
 * UDP sockets, the socket mark and a full tunnel's rules; the control
 * socket; the two directions, the TUN's one writer and the handshake; the
 * monitor of the host's addresses and routes; the link's name servers.  toud.c then drops
 * privileges, and daemon_ready() starts the data threads and says READY.
 * Down (daemon_stop): what is being opened is delivered and each
 * established session closed while the peers exist, the output queue
 * sent, then everything freed in the reverse order of its making.
 *
 * A unit test's node takes the steps that need no kernel,
 * daemon_start_peers() and daemon_start_paths(), and daemon_stop(): the
 * order and the teardown it tests are the daemon's. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#include <event2/event.h>

#include "conf.h"
#include "control.h"
#include "ctx.h"
#include "daemon.h"
#include "dns.h"
#include "dtls.h"
#include "fulltunnel.h"
#include "handshake.h"
#include "peer_timers.h"
#include "keys.h"
#include "log.h"
#include "metrics_http.h"
#include "notify.h"
#include "offload.h"
#include "peer.h"
#include "prefix.h"
#include "resolve.h"
#include "rtnl.h"
#include "rx.h"
#include "session.h"
#include "show.h"
#include "tcp.h"
#include "transport_udp.h"
#include "tun.h"
#include "tunout.h"
#include "tx.h"
#include "udp.h"

/* Whether IPv6 is off for the TUN: the kernel booted with ipv6.disable=1
 * (no /proc/sys/net/ipv6) or disable_ipv6 set for all or for the device.
 * Adding an IPv6 address then fails with EACCES, which reads like a
 * missing capability. */
static bool
ipv6_disabled(const char *ifname)
{
	char path[128], v = '0';
	int fd;

	if (access("/proc/sys/net/ipv6", F_OK) < 0)
		return true;
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		fd = open("/proc/sys/net/ipv6/conf/all/disable_ipv6", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (read(fd, &v, 1) != 1)
		v = '0';
	close(fd);
	return v == '1';
}

/* The driver of an existing network device ("tun", "veth", ...) into drv;
 * false if there is no such device (or it has no driver to report). */
static bool
netdev_driver(const char *ifname, char *drv, size_t len)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr;
	int fd, rc;

	if (if_nametoindex(ifname) == 0)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	util_strlcpy(ifr.ifr_name, ifname, sizeof(ifr.ifr_name));
	ifr.ifr_data = (void *)&info;
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return false;
	rc = ioctl(fd, SIOCETHTOOL, &ifr);
	close(fd);
	util_strlcpy(drv, rc < 0 ? "unknown" : info.driver, len);
	return true;
}

/* The TUN device could not be opened: say why in an administrator's words. */
static void
tun_open_failed(const char *name, int e)
{
	char drv[sizeof(((struct ethtool_drvinfo *)NULL)->driver)];

	if (e == EACCES || e == EPERM)
		log_errx("tun device \"%s\": %s (toud needs CAP_NET_ADMIN and write "
		    "access to /dev/net/tun, mode 0666 as udev sets it)", name, strerror(e));
	else if ((e == EINVAL || e == EBUSY) && netdev_driver(name, drv, sizeof(drv)) &&
	    strcmp(drv, "tun") != 0)
		log_errx("tun device \"%s\": a network device of that name exists and is not "
		    "a TUN device (driver %s); choose another [interface] name", name, drv);
	else if (e == EINVAL)
		log_errx("tun device \"%s\": a TAP or multi-queue device of that name exists "
		    "(%s); choose another [interface] name", name, strerror(e));
	else if (e == EBUSY)
		log_errx("tun device \"%s\": in use by another process (another toud?)", name);
	else
		log_errx("tun device \"%s\": %s", name, strerror(e));
}

/* Addresses on the TUN, link up with its MTU, and the local addresses used
 * for compact TOU. */
static int
setup_interface(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	char buf[UTIL_ADDRSTRLEN];
	size_t i;
	int rc;

	for (i = 0; i < ifc->n_address; i++) {
		const struct ipprefix *p = &ifc->address[i].p;

		if ((rc = rtnl_addr_add(t->rtnl, t->tun->ifindex, p)) < 0) {
			util_prefix_fmt(p, buf, sizeof(buf));
			if (p->addr.family == AF_INET6 && (rc == -EACCES || rc == -EAFNOSUPPORT) &&
			    ipv6_disabled(t->tun->name))
				log_errx("%s: address %s: IPv6 is disabled on this host "
				    "(net.ipv6.conf.all.disable_ipv6 = 1 or ipv6.disable=1); remove "
				    "the IPv6 addresses from the configuration or enable IPv6",
				    t->tun->name, buf);
			else
				log_errx("%s: address %s: %s", t->tun->name, buf, strerror(-rc));
			return rc;
		}
		if (p->addr.family == AF_INET && !t->local4.family)
			t->local4 = p->addr;
		if (p->addr.family == AF_INET6 && !t->local6.family)
			t->local6 = p->addr;
	}
	if ((rc = rtnl_link_set(t->rtnl, t->tun->ifindex, t->tun_mtu, true)) < 0)
		log_errx("%s: set mtu %u and up: %s", t->tun->name, t->tun_mtu, strerror(-rc));
	return rc;
}

/* The transports every peer gets a path of, in order of preference
 * (transport.h): UDP, and with DTLS the TCP transport (TLS).  A test may
 * have registered its own (a fake transport) before. */
static void
daemon_transports(struct toud *t)
{
	if (t->n_transports)
		return;
	t->transports[t->n_transports++] = &transport_udp;
	if (t->conf->iface.encryption == CONF_ENC_DTLS)
		t->transports[t->n_transports++] = &transport_tcp;
}

int
daemon_start_peers(struct toud *t)
{
	const struct conf *c = t->conf;
	size_t i;
	int rc;

	daemon_transports(t);
	if (!(t->routes = prefix_table_new()))
		return -ENOMEM;
	t->peers = calloc(c->n_peers ? c->n_peers : 1, sizeof(*t->peers));
	if (!t->peers)
		return -ENOMEM;
	t->ca_cache = keys_ca_cache_new();     /* without it, each peer reads its own */
	rc = 0;
	for (i = 0; i < c->n_peers && rc == 0; i++) {
		struct peer *p = peer_new(t, &c->peers[i]);

		if (!p) {
			rc = -ENOMEM;
			break;
		}
		t->peers[t->n_peers++] = p;
		if ((rc = peer_install(p)) < 0)
			log_errx("peer \"%s\": cannot install its routes; not starting",
			    p->name);
	}
	keys_ca_cache_free(t->ca_cache);
	t->ca_cache = NULL;
	return rc;
}

int
daemon_start_paths(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	int rc;

	/* The coalescer is the receiving direction's; the TUN's writer stops
	 * its merging when the kernel refuses a merged packet. */
	if (!(t->tx = tx_new(t)) || !(t->rx = rx_new(t)) ||
	    !(t->tunout = tunout_new(t, rx_coalescer(t->rx))))
		return -ENOMEM;
	if (ifc->encryption == CONF_ENC_DTLS &&
	    (rc = handshake_init(t, tx_session_output, tx_listen_output)) < 0)
		return rc;
	handshake_index(t);
	/* The TCP transport reports to the directions and the policy through
	 * these, so that it calls nothing that calls it (peer.h, transport.h). */
	if (ifc->encryption == CONF_ENC_DTLS && (rc = tcp_init(t, &(struct transport_core){
	    .frames = rx_frames, .authorize = handshake_authorize_key,
	    .up = peer_timers_path_up, .down = peer_timers_path_down,
	    .mismatch = peer_timers_path_mismatch })) < 0)
		return rc;
	return 0;
}

/* The debounce after a burst of host changes: tell the peers concerned
 * (peer.c decides which) at once, so they learn our new endpoint without
 * waiting for a timer (in DTLS mode the keepalive authenticates, so the
 * peer roams to it; without a session it starts a handshake). */
static void
netchange_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	peer_netchange_apply(arg);
}

static void
netmon_event(void *arg, const struct rtnl_event *ev)
{
	struct toud *t = arg;
	struct timeval debounce = { .tv_usec = 100000 };

	t->host_changes++;
	/* Changes come in bursts (address, then routes): act once after it. */
	if (peer_netchange_note(t, ev))
		evtimer_add(t->ev_netchange, &debounce);
}

static void
netmon_cb(evutil_socket_t fd, short what, void *arg)
{
	struct toud *t = arg;
	struct timeval debounce = { .tv_usec = 100000 };

	(void)what;
	if (rtnl_monitor_read(fd, t->tun->ifindex, netmon_event, t)) {
		peer_netchange_lost(t);
		evtimer_add(t->ev_netchange, &debounce);
	}
}

static int
setup_netmon(struct toud *t)
{
	t->netmon_fd = rtnl_monitor_open();
	if (t->netmon_fd < 0) {
		log_errx("rtnetlink monitor: %s", strerror(-t->netmon_fd));
		return t->netmon_fd;
	}
	t->ev_netmon = event_new(t->base, t->netmon_fd, EV_READ | EV_PERSIST, netmon_cb, t);
	t->ev_netchange = evtimer_new(t->base, netchange_cb, t);
	if (!t->ev_netmon || !t->ev_netchange || event_add(t->ev_netmon, NULL) < 0)
		return -ENOMEM;
	return 0;
}

/* threads = auto: with two CPUs or fewer the data threads only take turns
 * with the main loop and the applications on the same cores, and cost
 * more than they give (bench/RESULTS.md). */
static bool
threads_wanted(const struct conf_iface *ifc)
{
	cpu_set_t set;

	if (ifc->threads != CONF_THREADS_AUTO)
		return ifc->threads == CONF_THREADS_ON;
	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 2;
}

/* The TUN, with its addresses, link and a full tunnel's table. */
static int
open_tun(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	int rc;

	if (!(t->tun = tun_open(ifc->name, ifc->offload == CONF_OFFLOAD_AUTO))) {
		rc = -errno;
		tun_open_failed(ifc->name, -rc);
		return rc;
	}
	if (!(t->rtnl = rtnl_open())) {
		log_err("rtnetlink");
		return -errno;
	}
	if ((rc = setup_interface(t)) < 0 || (rc = fulltunnel_prepare(t, t->conf)) < 0)
		return rc;
	return 0;
}

/* The UDP sockets, the socket mark and a full tunnel's rules, while every
 * capability is still there, and the control socket. */
static int
open_sockets(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	struct offload_status off;
	int rc;

	/* tx.c cuts what the TUN hands over, rx.c splits GRO buffers and
	 * coalesces for the TUN; udp_send_batch() finds the GSO runs. */
	if (!(t->udp = udp_open(ifc, ifc->offload == CONF_OFFLOAD_AUTO ? UDP_F_GSO | UDP_F_GRO : 0))) {
		log_err("udp port %u", ifc->listen_port);
		return -errno;
	}
	if ((rc = fulltunnel_apply(t)) < 0)
		return rc;
	show_offload_status(t, &off);
	log_info("offloads: tun-tso %s, udp-gso %s, udp-gro %s%s", off.tun_tso ? "on" : "off",
	    off.udp_gso ? "on" : "off", off.udp_gro ? "on" : "off",
	    ifc->offload == CONF_OFFLOAD_OFF ? " (offload = off)" : "");
	if (!(t->control = control_open(t, ifc->control))) {
		log_err("control socket %s", ifc->control);
		return -errno;
	}
	return metrics_http_start(t);
}

/* The main loop.  Threading: it is the one thread that writes the
 * daemon's state; the data threads (worker.h) only seal, open and make
 * system calls for it, and signals reach it as events.
 *
 * Priorities: TOUD_PRIOS levels.  Every event runs at libevent's default,
 * TOUD_PRIO_DEFAULT: the sockets and the TUN, the per-peer timers
 * (peer_timers.c), the handshake's, the control socket, the netlink
 * monitor, the signals (libevent's own signal event is at 0), and the
 * metrics endpoint's listener, whose accepts are few and cheap.  Only the
 * metrics endpoint's connections (metrics_http.c), whose rendering of a
 * long text costs, run at TOUD_PRIO_LOW.  A turn of the loop runs the
 * callbacks of the highest level that has any active, so one of those
 * connections runs only when nothing else waits; and at most
 * TOUD_LOW_CALLBACKS of them in a turn, after which the loop polls again:
 * a datagram or a timer that comes due meanwhile waits for one part of
 * one reply at most, whatever the number of readers.  Nothing the tunnel
 * needs is below the default, so nothing it needs can wait on them; the
 * metrics readers get what time is left, and their timeouts close them
 * if there is none. */
#define TOUD_LOW_CALLBACKS 1

struct event_base *
daemon_base_new(void)
{
	struct event_config *cfg = event_config_new();
	struct event_base *base = NULL;

	if (!cfg)
		return NULL;
	if (event_config_set_max_dispatch_interval(cfg, NULL, TOUD_LOW_CALLBACKS,
	    TOUD_PRIO_LOW) == 0 && (base = event_base_new_with_config(cfg)) != NULL &&
	    event_base_priority_init(base, TOUD_PRIOS) < 0) {
		event_base_free(base);
		base = NULL;
	}
	event_config_free(cfg);
	return base;
}

int
daemon_start(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	int rc;

	if (ifc->encryption == CONF_ENC_NONE)
		log_warnx("encryption = none: traffic to peers is NOT encrypted or authenticated; "
		    "use it only for debugging and benchmarks");
	t->tun_mtu = conf_tun_mtu(t->conf);
	if (!(t->base = daemon_base_new()) || resolve_init(t) < 0)
		return -ENOMEM;
	if (!ifc->user && geteuid() == 0)
		log_warnx("running as root: set 'user = toud' in [interface] (or run the "
		    "toud.service unit), so that toud keeps only CAP_NET_ADMIN");
	t->starting = true;
	if ((rc = open_tun(t)) < 0 || (rc = daemon_start_peers(t)) < 0 ||
	    (rc = open_sockets(t)) < 0 || (rc = daemon_start_paths(t)) < 0 ||
	    (rc = setup_netmon(t)) < 0)
		return rc;
	/* Last, and still privileged: a resolver that refuses costs the
	 * tunnel nothing (a warning, and touctl show says so). */
	dns_apply(t);
	return 0;
}

int
daemon_ready(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	int rc;

	/* Threads start here, without privileges: capabilities are per
	 * thread. */
	if (threads_wanted(ifc)) {
		if ((rc = tx_start_thread(t->tx)) < 0 || (rc = tunout_start_thread(t->tunout)) < 0 ||
		    (rc = rx_start_thread(t->rx)) < 0) {
			log_errx("cannot start the data threads: %s", strerror(-rc));
			return rc;
		}
		log_info("data threads: %sUDP sends and TUN writes run beside the main loop",
		    t->dtls ? "sealing, opening, " : "");
	}
	if ((rc = notify_watchdog_start(t)) < 0)
		return rc;
	log_info("%s up: mtu %u, %zu peer%s, listening on port %u", t->tun->name, t->tun_mtu,
	    t->n_peers, t->n_peers == 1 ? "" : "s", ifc->listen_port);
	t->starting = false;
	/* Only now: the TUN, its addresses and routes and the sockets exist. */
	peer_report_status(t);
	notify_ready();
	return 0;
}

void
daemon_stop(struct toud *t)
{
	size_t i;

	notify_stopping();
	notify_watchdog_stop(t);
	if (t->ev_netmon)
		event_free(t->ev_netmon);
	if (t->ev_netchange)
		event_free(t->ev_netchange);
	if (t->netmon_fd > 0)
		close(t->netmon_fd);
	control_close(t->control);
	metrics_http_close(t->metrics_http);
	/* Names stop going to the tunnel's servers before the tunnel goes. */
	dns_revert(t);
	/* Records still being opened are delivered while their peers exist. */
	rx_flush_records(t);
	/* Tell the peers, so they need not wait for a timeout. */
	for (i = 0; t->dtls && i < t->n_peers; i++)
		if (t->peers[i]->cur)
			session_end(t->peers[i]->cur);
	tx_flush_records(t);
	for (i = 0; i < t->n_peers; i++)
		peer_free(t->peers[i]);
	free(t->peers);
	tcp_free(t);
	if (t->dtls)
		handshake_free(t);
	/* The writer first: what it finishes may still switch off the
	 * receiving direction's coalescer. */
	tunout_free(t->tunout);
	rx_free(t->rx);
	tx_free(t->tx);
	udp_close(t->udp);
	fulltunnel_release(t);
	if (t->rtnl) {
		rtnl_undo_all(t->rtnl);
		rtnl_close(t->rtnl);
	}
	if (t->tun)
		tun_close(t->tun);
	prefix_table_free(t->routes);
	resolve_free(t);
	if (t->base)
		event_base_free(t->base);
}
