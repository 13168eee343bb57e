/* reload.c - SIGHUP and `touctl reload`: parse the file again, validate,
 * and apply only the difference.  Untouched peers keep their sessions and
 * their traffic; removed peers go with their routes; added peers appear.
 * An invalid file changes nothing.  [interface] settings that shape the
 * TUN, the sockets or the identity need a restart, and a reload that
 * changes them is refused as a whole. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "conf_diff.h"
#include "ctx.h"
#include "dns.h"
#include "dtls.h"
#include "fulltunnel.h"
#include "handshake.h"
#include "keys.h"
#include "log.h"
#include "metrics_http.h"
#include "notify.h"
#include "peer.h"
#include "proxy_auth.h"
#include "psk.h"
#include "reload.h"
#include "session.h"
#include "tcp.h"

/* What a reload did to the peers, for its summary line. */
struct reload_count {
	size_t added, removed, changed, failed;
	bool dns_failed;
};

/* The peer named name out of old; where the file kept its order that is
 * the one at hint, so a reload of many peers does not compare every pair. */
static struct peer *
take_peer(struct peer **old, size_t n, size_t hint, const char *name)
{
	struct peer *p;
	size_t i = hint;

	if (i >= n || !old[i] || strcmp(old[i]->name, name) != 0)
		for (i = 0; i < n; i++)
			if (old[i] && strcmp(old[i]->name, name) == 0)
				break;
	if (i == n)
		return NULL;
	p = old[i];
	old[i] = NULL;
	return p;
}

static int reload(struct toud *t, char *err, size_t errlen);

int
toud_reload(struct toud *t, char *err, size_t errlen)
{
	int rc;

	notify_reloading();
	rc = reload(t, err, errlen);
	notify_ready();
	if (rc < 0) {   /* whoever asked (SIGHUP or touctl), the journal says why */
		log_warnx("reload refused: %s", err);
		notify_status("reload failed: %s", err);
	}
	return rc;
}

/* Read and check the file again: 0 and *out, or -errno and err; either way
 * nothing has changed yet. */
static int
reload_load(struct toud *t, struct conf **out, char *err, size_t errlen)
{
	struct conf *nc = NULL;
	struct conf_error ce;
	uint32_t restart;
	char buf[600];

	/* Key files are not re-read: [interface] keys need a restart anyway,
	 * and after the privilege drop a root-only key is (rightly) unreadable. */
	if (conf_load(t->conf_file, false, &nc, &ce, NULL, NULL) < 0) {
		snprintf(err, errlen, "%s; nothing changed", conf_error_fmt(&ce, buf, sizeof(buf)));
		return -EINVAL;
	}
	/* Preshared keys and proxy credentials are read again: a reload may
	 * change one. */
	if (psk_load_conf(nc, &ce) < 0 || proxy_auth_load_conf(nc, &ce) < 0) {
		snprintf(err, errlen, "%s; nothing changed", conf_error_fmt(&ce, buf, sizeof(buf)));
		conf_free(nc);
		return -EINVAL;
	}
	if (t->instance && conf_instance_apply(nc, t->instance, t->instance_control, &ce) < 0) {
		conf_free(nc);
		snprintf(err, errlen, "%s; nothing changed", conf_error_fmt(&ce, buf, sizeof(buf)));
		return -EINVAL;
	}
	restart = conf_diff_iface(&t->conf->iface, &nc->iface) & ~CONF_IFACE_DIFF_RELOADABLE;
	if (restart) {
		/* The first such key, in the order of tou.conf(5). */
		snprintf(err, errlen, "%s: changing [interface] %s needs a restart; nothing changed",
		    t->conf_file, conf_diff_iface_fmt(restart & -restart, buf, sizeof(buf)));
		conf_free(nc);
		return -EINVAL;
	}
	/* A default route that arrives with this file needs its table. */
	if (fulltunnel_prepare(t, nc) < 0) {
		snprintf(err, errlen, "%s: no routing table for the full tunnel (see the log); "
		    "nothing changed", t->conf_file);
		conf_free(nc);
		return -EBUSY;
	}
	*out = nc;
	return 0;
}

/* The peers left in old (those the new file does not name) go, with their
 * sessions and routes. */
static void
remove_peers(struct peer **old, size_t n_old, struct reload_count *n)
{
	size_t i;

	for (i = 0; i < n_old; i++) {
		if (!old[i])
			continue;
		log_info("peer \"%s\": removed", old[i]->name);
		/* The close_notify stays queued; once the peer is freed it
		 * is accounted to nobody (peer_ref, peer.h). */
		if (old[i]->cur)
			dtls_sess_close(old[i]->cur->dtls);
		peer_uninstall(old[i]);
		peer_free(old[i]);
		old[i] = NULL;
		n->removed++;
	}
}

/* The surviving peers in np take their sections of nc; peer_reconfigure()
 * logs what changed. */
static void
update_peers(struct peer **np, const struct conf *nc, struct reload_count *n)
{
	size_t i;

	for (i = 0; i < nc->n_peers; i++) {
		if (!np[i])
			continue;
		if (conf_diff_peer(np[i]->cf, &nc->peers[i]))
			n->changed++;
		if (peer_reconfigure(np[i], &nc->peers[i]) < 0)
			n->failed++;
	}
}

/* Peers for the sections of nc that np has none for yet. */
static void
add_peers(struct toud *t, struct peer **np, const struct conf *nc, struct reload_count *n)
{
	size_t i;

	for (i = 0; i < nc->n_peers; i++) {
		if (np[i])
			continue;
		if (!(np[i] = peer_new(t, &nc->peers[i]))) {
			n->failed++;
			continue;
		}
		log_info("peer \"%s\": added", np[i]->name);
		n->added++;
		if (peer_install(np[i]) < 0)
			n->failed++;
	}
}

/* Replace t's peers by those of nc: the same peer object for a name both
 * files have, so its sessions and traffic carry on. */
static void
reload_peers(struct toud *t, struct conf *nc, struct peer **np, struct reload_count *n)
{
	struct peer **old = t->peers;
	size_t i, n_old = t->n_peers;
	bool same = n_old == nc->n_peers;

	/* CA files are read afresh, once each, for the new configuration. */
	t->ca_cache = keys_ca_cache_new();
	/* Take the surviving peers out of the old list first, then remove the
	 * rest, so a prefix that moves between peers is free when added. */
	for (i = 0; i < nc->n_peers; i++) {
		same = same && old[i] && strcmp(old[i]->name, nc->peers[i].name) == 0;
		np[i] = take_peer(old, n_old, i, nc->peers[i].name);
	}
	/* The same peers in the same order is the same list, whatever their
	 * settings: a show being streamed goes on (show.h). */
	if (!same)
		t->peers_gen++;
	/* Until t->peers is the new list, nothing may walk the old one (a
	 * state change reports the peers up): it has holes, and the removed
	 * peers are freed here. */
	t->n_peers = 0;
	remove_peers(old, n_old, n);
	update_peers(np, nc, n);
	/* Every surviving peer points into nc now; the old file can go. */
	t->conf = nc;
	free(old);
	t->peers = np;
	add_peers(t, np, nc, n);
	keys_ca_cache_free(t->ca_cache);
	t->ca_cache = NULL;
	/* Compact the list past peers that could not be created. */
	for (i = 0; i < nc->n_peers; i++)
		if (np[i])
			np[t->n_peers++] = np[i];
}

static int
reload(struct toud *t, char *err, size_t errlen)
{
	struct reload_count n = { 0 };
	struct conf *nc, *oc = t->conf;
	struct peer **np;
	char keys[200] = "";
	uint32_t iface;
	int rc;

	if ((rc = reload_load(t, &nc, err, errlen)) < 0)
		return rc;
	if (!(np = calloc(nc->n_peers ? nc->n_peers : 1, sizeof(*np)))) {
		conf_free(nc);
		snprintf(err, errlen, "out of memory; nothing changed");
		return -ENOMEM;
	}
	/* The last step that may refuse the file: a new metrics address that
	 * cannot be opened leaves the old endpoint serving. */
	if ((rc = metrics_http_reload(t, nc, err, errlen)) < 0) {
		free(np);
		conf_free(nc);
		return rc;
	}
	/* Then the TCP listener: a port the daemon may not bind (below 1024
	 * without CAP_NET_BIND_SERVICE) fails the reload, and the metrics
	 * endpoint goes back to the old file's. */
	if ((rc = tcp_listen_reload(t, nc, err, errlen)) < 0) {
		char e[400];

		if (metrics_http_reload(t, oc, e, sizeof(e)) < 0)
			log_warnx("metrics: back to the old endpoint: %s", e);
		free(np);
		conf_free(nc);
		return rc;
	}
	/* What of [interface] changed, for the summary: a reload that only
	 * changes metrics or dns must not read as one that changed nothing. */
	if ((iface = conf_diff_iface(&oc->iface, &nc->iface)))
		conf_diff_iface_fmt(iface, keys, sizeof(keys));
	reload_peers(t, nc, np, &n);
	conf_free(oc);
	/* The rules and the mark follow the default routes in or out. */
	if (fulltunnel_apply(t) < 0)
		n.failed++;
	/* dns, dns-search, and "~." following a full tunnel in or out. */
	if (dns_apply(t) < 0)
		n.dns_failed = true;
	if (!t->debug)
		log_set_level((enum log_level)nc->iface.log_level);
	/* Also what no key comparison shows: a CA file replaced under the
	 * same name, a key another peer now accepts too. */
	if (t->dtls)
		handshake_reauthorize(t);
	/* The TCP transport's connections, by the same rules. */
	tcp_reauthorize(t);
	peer_report_status(t);
	snprintf(err, errlen, "%zu peer%s added, %zu removed, %zu changed%s%s%s%s%s", n.added,
	    n.added == 1 ? "" : "s", n.removed, n.changed, keys[0] ? "; [interface] " : "",
	    keys, keys[0] ? " changed" : "",
	    n.failed ? "; some routes or rules could not be installed (see the log)" : "",
	    n.dns_failed ? "; dns not applied (see the log)" : "");
	log_info("reload: %s", err);
	return n.failed ? -EIO : 0;
}
