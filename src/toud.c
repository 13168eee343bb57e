/* toud.c - main(): options, the ordered start-up, the event loop, signals,
 * and the shutdown that undoes every start-up step in reverse. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "conf.h"
#include "control.h"
#include "gue.h"
#include "dtls.h"
#include "log.h"
#include "notify.h"
#include "peer.h"
#include "prefix.h"
#include "resolve.h"
#include "priv.h"
#include "rtnl.h"
#include "rx.h"
#include "session.h"
#include "toud.h"
#include "tun.h"
#include "tx.h"
#include "udp.h"

static void
usage(void)
{
	fprintf(stderr, "usage: toud [-dtV] [-c file]\n");
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
		if (toud_reload(t, err, sizeof(err)) < 0)
			log_warnx("reload: %s", err);
		return;
	}
	log_info("%s: shutting down", strsignal((int)sig));
	event_base_loopbreak(t->base);
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
			errno = -rc;
			log_warn("%s: address %s", t->tun->name, util_prefix_fmt(p, buf, sizeof(buf)));
			return rc;
		}
		if (p->addr.family == AF_INET && !t->local4.family)
			t->local4 = p->addr;
		if (p->addr.family == AF_INET6 && !t->local6.family)
			t->local6 = p->addr;
	}
	if ((rc = rtnl_link_set(t->rtnl, t->tun->ifindex, t->tun_mtu, true)) < 0) {
		errno = -rc;
		log_warn("%s: set mtu %u and up", t->tun->name, t->tun_mtu);
	}
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
	for (i = 0; i < c->n_peers; i++) {
		struct peer *p = peer_new(t, &c->peers[i]);

		if (!p)
			return -ENOMEM;
		t->peers[t->n_peers++] = p;
		if ((rc = peer_install(p)) < 0)
			return rc;
	}
	return 0;
}

/* The host's addresses or default route changed: the path to every peer
 * may be new.  Forget the source addresses learnt so far (one may be gone)
 * and send each peer a keepalive at once, so it learns our new endpoint
 * without waiting for a timer (in DTLS mode it authenticates, so the peer
 * roams to it; without a session it starts a handshake). */
static void
netchange_cb(evutil_socket_t fd, short what, void *arg)
{
	struct toud *t = arg;
	size_t i;

	(void)fd;
	(void)what;
	log_info("local addresses or routes changed: telling %zu peer%s", t->n_peers,
	    t->n_peers == 1 ? "" : "s");
	for (i = 0; i < t->n_peers; i++) {
		struct peer *p = t->peers[i];

		memset(&p->local, 0, sizeof(p->local));
		if (p->cur)
			memset(&p->cur->local, 0, sizeof(p->cur->local));
		if (p->has_endpoint)
			tx_control(t, p, GUE_CTYPE_KEEPALIVE, NULL, 0);
	}
}

static void
netmon_cb(evutil_socket_t fd, short what, void *arg)
{
	struct toud *t = arg;
	struct timeval debounce = { .tv_usec = 100000 };

	(void)what;
	/* Changes come in bursts (address, then routes): act once after it. */
	if (rtnl_monitor_read(fd, t->tun->ifindex))
		evtimer_add(t->ev_netchange, &debounce);
}

static int
setup_netmon(struct toud *t)
{
	t->netmon_fd = rtnl_monitor_open();
	if (t->netmon_fd < 0) {
		errno = -t->netmon_fd;
		log_warn("rtnetlink monitor");
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
	if (!(t->tun = tun_open(ifc->name))) {
		rc = -errno;
		if (rc == -EACCES || rc == -EPERM)
			log_warnx("tun device \"%s\": %s (toud needs CAP_NET_ADMIN and write "
			    "access to /dev/net/tun, mode 0666 as udev sets it)", ifc->name,
			    strerror(-rc));
		else
			log_warnx("tun device \"%s\": %s", ifc->name, strerror(-rc));
		return rc;
	}
	if (!(t->rtnl = rtnl_open())) {
		log_warn("rtnetlink");
		return -errno;
	}
	if ((rc = setup_interface(t)) < 0 || (rc = setup_peers(t)) < 0)
		return rc;
	if (!(t->udp = udp_open(ifc))) {
		log_warn("udp port %u", ifc->listen_port);
		return -errno;
	}
	if (!(t->control = control_open(t, ifc->control))) {
		log_warn("control socket %s", ifc->control);
		return -errno;
	}
	if (!(t->tx = tx_new(t)) || !(t->rx = rx_new(t)))
		return -ENOMEM;
	if (ifc->encryption == CONF_ENC_DTLS && (rc = session_table_init(t)) < 0)
		return rc;
	if ((rc = setup_signals(t)) < 0 || (rc = setup_netmon(t)) < 0)
		return rc;
	{
		char dir[256];
		const char *const owned[] = { ifc->control,
		    control_dir_made(t->control, dir, sizeof(dir)), NULL };

		if ((rc = priv_drop(ifc->user, ifc->listen_port, owned)) < 0) {
			log_warnx("cannot drop privileges: %s", strerror(-rc));
			return rc;
		}
	}
	if ((rc = notify_watchdog_start(t)) < 0)
		return rc;
	log_info("%s up: mtu %u, %zu peer%s, listening on port %u", t->tun->name, t->tun_mtu,
	    t->n_peers, t->n_peers == 1 ? "" : "s", ifc->listen_port);
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
	/* Tell the peers, so they need not wait for a timeout. */
	for (i = 0; t->dtls && i < t->n_peers; i++)
		if (t->peers[i]->cur)
			dtls_sess_close(t->peers[i]->cur->dtls);
	tx_flush_records(t);
	for (i = 0; i < t->n_peers; i++)
		peer_free(t->peers[i]);
	free(t->peers);
	if (t->dtls)
		session_table_free(t);
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

int
main(int argc, char *argv[])
{
	struct toud t = { .conf_file = CONF_DEFAULT_FILE };
	bool check_only = false, debug = false;
	struct conf_error err;
	char buf[600];
	int ch, rc;

	while ((ch = getopt(argc, argv, "c:dtV")) != -1) {
		switch (ch) {
		case 'c':
			t.conf_file = optarg;
			break;
		case 'd':
			debug = true;
			break;
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
	log_init(debug ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, "toud");
	t.debug = debug;

	if (conf_load(t.conf_file, true, &t.conf, &err, conf_warning, NULL) < 0) {
		fprintf(stderr, "%s\n", conf_error_fmt(&err, buf, sizeof(buf)));
		return 1;
	}
	if (check_only) {
		conf_free(t.conf);
		return 0;
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
