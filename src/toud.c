/* toud.c - main(): options, the ordered start-up, the event loop, signals,
 * and the shutdown that undoes every start-up step in reverse. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <net/if.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
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
#include "gue.h"
#include "dtls.h"
#include "fulltunnel.h"
#include "keys.h"
#include "log.h"
#include "metrics_http.h"
#include "notify.h"
#include "offload.h"
#include "peer.h"
#include "prefix.h"
#include "resolve.h"
#include "priv.h"
#include "rtnl.h"
#include "rx.h"
#include "handshake.h"
#include "session.h"
#include "toud.h"
#include "tun.h"
#include "tx.h"
#include "udp.h"

static void
usage(void)
{
	fprintf(stderr,
	    "usage: toud [-dtTV] [-c file | -i name]\n"
	    "  -c file   configuration (default %s)\n"
	    "  -i name   instance: %s/NAME.conf, control socket %s/NAME.sock\n"
	    "  -d        debug log\n"
	    "  -t        check the configuration, its key files and user, and exit\n"
	    "  -T        as -t, then print the effective configuration\n"
	    "  -V        print the version\n",
	    CONF_DEFAULT_FILE, CONF_INSTANCE_DIR, CONF_INSTANCE_CONTROL_DIR);
	exit(2);
}

static void
conf_warning(const struct conf_error *w, void *arg)
{
	char buf[600];

	(void)arg;
	log_warnx("%s", conf_error_fmt(w, buf, sizeof(buf)));
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct toud *t = arg;
	char err[256];

	(void)what;
	if (sig == SIGHUP) {
		log_info("SIGHUP: reload requested");
		toud_reload(t, err, sizeof(err));      /* logs what it did or why not */
		return;
	}
	log_info("%s: shutting down", strsignal((int)sig));
	event_base_loopbreak(t->base);
}

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

/* The peers, their prefix-table entries and their kernel routes. */
static int
setup_peers(struct toud *t)
{
	const struct conf *c = t->conf;
	size_t i;
	int rc;

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

static int
setup_signals(struct toud *t)
{
	t->ev_sigterm = evsignal_new(t->base, SIGTERM, on_signal, t);
	t->ev_sigint = evsignal_new(t->base, SIGINT, on_signal, t);
	t->ev_sighup = evsignal_new(t->base, SIGHUP, on_signal, t);
	if (!t->ev_sigterm || !t->ev_sigint || !t->ev_sighup ||
	    evsignal_add(t->ev_sigterm, NULL) < 0 || evsignal_add(t->ev_sigint, NULL) < 0 ||
	    evsignal_add(t->ev_sighup, NULL) < 0)
		return -ENOMEM;
	signal(SIGPIPE, SIG_IGN);
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

/* Start-up, in order; each step's failure is logged where it happens. */
static int
toud_start(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	int rc;

	if (ifc->encryption == CONF_ENC_NONE)
		log_warnx("encryption = none: traffic to peers is NOT encrypted or authenticated; "
		    "use it only for debugging and benchmarks");
	t->tun_mtu = conf_tun_mtu(t->conf);
	if (!(t->base = event_base_new()) || !(t->routes = prefix_table_new()) ||
	    resolve_init(t) < 0)
		return -ENOMEM;
	if (!ifc->user && geteuid() == 0)
		log_warnx("running as root: set 'user = toud' in [interface] (or run the "
		    "toud.service unit), so that toud keeps only CAP_NET_ADMIN");
	t->starting = true;
	if (!(t->tun = tun_open(ifc->name, ifc->offload == CONF_OFFLOAD_AUTO))) {
		rc = -errno;
		tun_open_failed(ifc->name, -rc);
		return rc;
	}
	if (!(t->rtnl = rtnl_open())) {
		log_err("rtnetlink");
		return -errno;
	}
	if ((rc = setup_interface(t)) < 0 || (rc = fulltunnel_prepare(t, t->conf)) < 0 ||
	    (rc = setup_peers(t)) < 0)
		return rc;
	/* tx.c cuts what the TUN hands over, rx.c splits GRO buffers and
	 * coalesces for the TUN; udp_send_batch() finds the GSO runs. */
	if (!(t->udp = udp_open(ifc, ifc->offload == CONF_OFFLOAD_AUTO ? UDP_F_GSO | UDP_F_GRO : 0))) {
		log_err("udp port %u", ifc->listen_port);
		return -errno;
	}
	/* The socket mark and a full tunnel's rules, while every capability
	 * is still there. */
	if ((rc = fulltunnel_apply(t)) < 0)
		return rc;
	{
		struct offload_status off;

		show_offload_status(t, &off);
		log_info("offloads: tun-tso %s, udp-gso %s, udp-gro %s%s", off.tun_tso ? "on" : "off",
		    off.udp_gso ? "on" : "off", off.udp_gro ? "on" : "off",
		    ifc->offload == CONF_OFFLOAD_OFF ? " (offload = off)" : "");
	}
	if (!(t->control = control_open(t, ifc->control))) {
		log_err("control socket %s", ifc->control);
		return -errno;
	}
	if ((rc = metrics_http_start(t)) < 0)
		return rc;
	if (!(t->tx = tx_new(t)) || !(t->rx = rx_new(t)))
		return -ENOMEM;
	if (ifc->encryption == CONF_ENC_DTLS && (rc = handshake_init(t)) < 0)
		return rc;
	if ((rc = setup_signals(t)) < 0 || (rc = setup_netmon(t)) < 0)
		return rc;
	{
		char dir[256];
		const char *const owned[] = { ifc->control,
		    control_dir_made(t->control, dir, sizeof(dir)), NULL };

		if ((rc = priv_drop(ifc->user, ifc->listen_port, owned)) < 0) {
			if (rc != -ENOENT)      /* no such user: priv_drop said so */
				log_errx("cannot drop privileges: %s", strerror(-rc));
			return rc;
		}
	}
	/* Threads start here, without privileges: capabilities are per
	 * thread. */
	if (threads_wanted(ifc)) {
		if ((rc = tx_start_thread(t->tx)) < 0 || (rc = rx_start_thread(t->rx)) < 0) {
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

/* Undo toud_start, whatever point it reached. */
static void
toud_stop(struct toud *t)
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
	if (t->ev_sigterm)
		event_free(t->ev_sigterm);
	if (t->ev_sigint)
		event_free(t->ev_sigint);
	if (t->ev_sighup)
		event_free(t->ev_sighup);
	control_close(t->control);
	metrics_http_close(t->metrics_http);
	/* Records still being opened are delivered while their peers exist. */
	rx_flush_records(t);
	/* Tell the peers, so they need not wait for a timeout. */
	for (i = 0; t->dtls && i < t->n_peers; i++)
		if (t->peers[i]->cur)
			dtls_sess_close(t->peers[i]->cur->dtls);
	tx_flush_records(t);
	for (i = 0; i < t->n_peers; i++)
		peer_free(t->peers[i]);
	free(t->peers);
	if (t->dtls)
		handshake_free(t);
	rx_free(t->rx);
	tx_free(t->tx);
	udp_close(t->udp);
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

/* -t beyond the file itself: what would otherwise fail only at start
 * (ExecStartPre=toud -t is meant to catch it).  Errors print "FILE: ..."
 * to stderr and count; warnings go through conf_warning(). */
static void *
check_authorize(void *arg, const uint8_t fp[DTLS_FP_LEN], struct x509_store_ctx_st *xs)
{
	(void)fp;
	(void)xs;
	return arg;
}

static int
check_deep(const struct conf *c)
{
	const struct conf_iface *ifc = &c->iface;
	struct conf_error w;
	char buf[UTIL_ADDRSTRLEN], ebuf[UTIL_ADDRSTRLEN], err[512];
	size_t i, j, k;
	int errors = 0;

	if (ifc->user) {
		errno = 0;
		if (!getpwnam(ifc->user)) {
			log_check("%s: user \"%s\": %s", c->file, ifc->user,
			    errno ? strerror(errno) : "no such user (systemd-sysusers creates "
			    "toud's; see toud(8))");
			errors++;
		}
	}
	if (ifc->encryption == CONF_ENC_DTLS && ifc->private_key && ifc->certificate) {
		struct dtls_ctx_config cfg = {
			.private_key = ifc->private_key,
			.certificate = ifc->certificate,
			.authorize = check_authorize,
			.link_mtu = 1280,
		};
		struct dtls_ctx *d;

		/* no key log is opened for a check */
		unsetenv("SSLKEYLOGFILE");
		if (!(d = dtls_ctx_new(&cfg, err, sizeof(err)))) {
			log_check("%s: %s", c->file, err);
			errors++;
		}
		dtls_ctx_free(d);
	}
	/* A prefix routed into the tunnel that holds a peer's own endpoint
	 * sends the tunnel's datagrams into the tunnel (tou.conf(5) CAVEATS). */
	for (i = 0; i < c->n_peers; i++) {
		const struct conf_peer *ep = &c->peers[i];
		struct ipaddr a;

		if (!ep->endpoint_host || util_addr_parse(ep->endpoint_host, &a) < 0)
			continue;
		for (j = 0; j < c->n_peers; j++) {
			const struct conf_peer *p = &c->peers[j];

			for (k = 0; k < p->n_address + p->n_allowed_ips; k++) {
				const struct conf_prefix *cp = k < p->n_address ? &p->address[k] :
				    &p->allowed_ips[k - p->n_address];

				/* Only a route in the main table takes every
				 * datagram: a full tunnel's table is skipped by
				 * the marked ones, and the rules that lead to a
				 * table = NUMBER are the administrator's. */
				if (!util_prefix_contains(&cp->p, &a) ||
				    conf_route_table(&c->iface, &cp->p, 1) != CONF_TABLE_MAIN)
					continue;
				util_strlcpy(w.file, c->file, sizeof(w.file));
				w.line = cp->line;
				snprintf(w.msg, sizeof(w.msg), "peer '%s': %s covers the endpoint "
				    "%s of peer '%s': its datagrams would be routed into the tunnel",
				    p->name, util_prefix_fmt(&cp->p, buf, sizeof(buf)),
				    util_addr_fmt(&a, ebuf, sizeof(ebuf)), ep->name);
				conf_warning(&w, NULL);
			}
		}
	}
	return errors;
}

int
main(int argc, char *argv[])
{
	struct toud t = { .conf_file = CONF_DEFAULT_FILE };
	bool check_only = false, print = false, debug = false, file_given = false;
	const char *instance = NULL;
	static char ifile[PATH_MAX], isock[108];
	struct conf_error err;
	char buf[600];
	int ch, rc;

	while ((ch = getopt(argc, argv, "c:di:tTV")) != -1) {
		switch (ch) {
		case 'c':
			t.conf_file = optarg;
			file_given = true;
			break;
		case 'd':
			debug = true;
			break;
		case 'i':
			instance = optarg;
			break;
		case 'T':
			print = true;
			/* FALLTHROUGH */
		case 't':
			check_only = true;
			break;
		case 'V':
			printf("toud %s\n", PACKAGE_VERSION);
			return 0;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (instance) {
		if (!conf_instance_valid(instance)) {
			fprintf(stderr, "toud: -i: invalid instance name '%s' "
			    "([A-Za-z0-9._-], 1..%d characters, not starting with '.')\n",
			    instance, CONF_NAME_MAX);
			return 2;
		}
		conf_instance_paths(instance, ifile, sizeof(ifile), isock, sizeof(isock));
		if (!file_given)
			t.conf_file = ifile;
		t.instance_control = isock;
	}
	log_init(debug ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, "toud");
	t.debug = debug;

	if (conf_load(t.conf_file, true, &t.conf, &err, conf_warning, NULL) < 0) {
		log_check("%s", conf_error_fmt(&err, buf, sizeof(buf)));
		return 1;
	}
	if (t.instance_control && conf_instance_apply(t.conf, t.instance_control) < 0) {
		fprintf(stderr, "toud: out of memory\n");
		return 1;
	}
	if (check_only) {
		char *text = NULL;

		rc = check_deep(t.conf) ? 1 : 0;
		if (rc == 0 && print && (!(text = conf_print(t.conf)) || fputs(text, stdout) == EOF ||
		    fflush(stdout) == EOF)) {
			fprintf(stderr, "toud: -T: %s\n", strerror(errno ? errno : ENOMEM));
			rc = 1;
		}
		free(text);
		conf_free(t.conf);
		return rc;
	}
	if (!debug)
		log_set_level((enum log_level)t.conf->iface.log_level);

	rc = toud_start(&t);
	if (rc == 0)
		rc = event_base_dispatch(t.base) < 0 ? -EIO : 0;
	toud_stop(&t);
	conf_free(t.conf);
	if (rc == 0)
		log_info("stopped");
	return rc == 0 ? 0 : 1;
}
