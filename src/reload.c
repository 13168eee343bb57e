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
#include "ctx.h"
#include "dtls.h"
#include "fulltunnel.h"
#include "handshake.h"
#include "keys.h"
#include "log.h"
#include "notify.h"
#include "peer.h"
#include "reload.h"
#include "session.h"

static bool
str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool
prefixes_eq(const struct conf_prefix *a, size_t na, const struct conf_prefix *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (a[i].p.len != b[i].p.len || !util_addr_equal(&a[i].p.addr, &b[i].p.addr))
			return false;
	return true;
}

/* The first [interface] key whose change needs a restart, or NULL. */
static const char *
iface_restart_key(const struct conf_iface *a, const struct conf_iface *b)
{
	if (strcmp(a->name, b->name) != 0)
		return "name";
	if (!prefixes_eq(a->address, a->n_address, b->address, b->n_address))
		return "address";
	if (a->listen_port != b->listen_port || a->has_listen_addr != b->has_listen_addr ||
	    (a->has_listen_addr && !util_addr_equal(&a->listen_addr, &b->listen_addr)))
		return "listen";
	if (!str_eq(a->private_key, b->private_key))
		return "private-key";
	if (!str_eq(a->certificate, b->certificate))
		return "certificate";
	if (!str_eq(a->keylog_file, b->keylog_file))
		return "keylog-file";
	if (a->mtu != b->mtu)
		return "mtu";
	if (a->path_mtu != b->path_mtu)
		return "path-mtu";
	if (!str_eq(a->user, b->user))
		return "user";
	if (a->encryption != b->encryption)
		return "encryption";
	if (a->offload != b->offload)
		return "offload";
	if (a->threads != b->threads)
		return "threads";
	if (!str_eq(a->control, b->control))
		return "control";
	if (a->fwmark != b->fwmark)
		return "fwmark";
	if (a->table != b->table || a->table_number != b->table_number)
		return "table";
	return NULL;
}

static struct peer *
take_peer(struct peer **old, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (old[i] && strcmp(old[i]->name, name) == 0) {
			struct peer *p = old[i];
			old[i] = NULL;
			return p;
		}
	}
	return NULL;
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

static int
reload(struct toud *t, char *err, size_t errlen)
{
	struct conf *nc = NULL, *oc = t->conf;
	struct conf_error ce;
	struct peer **np, **old = t->peers;
	size_t i, n_old = t->n_peers, added = 0, removed = 0, changed = 0, failed = 0;
	const char *key;
	char buf[600];
	int rc;

	/* Key files are not re-read: [interface] keys need a restart anyway,
	 * and after the privilege drop a root-only key is (rightly) unreadable. */
	if (conf_load(t->conf_file, false, &nc, &ce, NULL, NULL) < 0) {
		snprintf(err, errlen, "%s; nothing changed", conf_error_fmt(&ce, buf, sizeof(buf)));
		return -EINVAL;
	}
	if (t->instance_control && conf_instance_apply(nc, t->instance_control) < 0) {
		conf_free(nc);
		snprintf(err, errlen, "out of memory; nothing changed");
		return -ENOMEM;
	}
	if ((key = iface_restart_key(&oc->iface, &nc->iface)) != NULL) {
		snprintf(err, errlen, "%s: changing [interface] %s needs a restart; nothing changed",
		    t->conf_file, key);
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
	np = calloc(nc->n_peers ? nc->n_peers : 1, sizeof(*np));
	if (!np) {
		conf_free(nc);
		snprintf(err, errlen, "out of memory; nothing changed");
		return -ENOMEM;
	}

	/* CA files are read afresh, once each, for the new configuration. */
	t->ca_cache = keys_ca_cache_new();
	/* Take the surviving peers out of the old list first, then remove the
	 * rest, so a prefix that moves between peers is free when added. */
	for (i = 0; i < nc->n_peers; i++)
		np[i] = take_peer(old, n_old, nc->peers[i].name);
	/* Until t->peers is the new list, nothing may walk the old one (a
	 * state change reports the peers up): it has holes, and the removed
	 * peers are freed below. */
	t->n_peers = 0;
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
		removed++;
	}
	for (i = 0; i < nc->n_peers; i++) {
		if (!np[i])
			continue;
		if (!conf_peer_equal(np[i]->cf, &nc->peers[i])) {
			log_info("peer \"%s\": changed", np[i]->name);
			changed++;
		}
		if (peer_reconfigure(np[i], &nc->peers[i]) < 0)
			failed++;
	}
	/* Every surviving peer points into nc now; the old file can go. */
	t->conf = nc;
	free(old);
	t->peers = np;
	for (i = 0; i < nc->n_peers; i++) {
		if (!np[i]) {
			np[i] = peer_new(t, &nc->peers[i]);
			if (!np[i]) {
				failed++;
				continue;
			}
			log_info("peer \"%s\": added", np[i]->name);
			added++;
			if (peer_install(np[i]) < 0)
				failed++;
		}
	}
	keys_ca_cache_free(t->ca_cache);
	t->ca_cache = NULL;
	/* Compact the list past peers that could not be created. */
	for (i = 0; i < nc->n_peers; i++)
		if (np[i])
			np[t->n_peers++] = np[i];
	conf_free(oc);
	/* The rules and the mark follow the default routes in or out. */
	if (fulltunnel_apply(t) < 0)
		failed++;
	if (!t->debug)
		log_set_level((enum log_level)nc->iface.log_level);
	/* Also what no key comparison shows: a CA file replaced under the
	 * same name, a key another peer now accepts too. */
	if (t->dtls)
		handshake_reauthorize(t);
	peer_report_status(t);
	rc = failed ? -EIO : 0;
	snprintf(err, errlen, "%zu peer%s added, %zu removed, %zu changed%s", added,
	    added == 1 ? "" : "s", removed, changed,
	    failed ? "; some routes or rules could not be installed (see the log)" : "");
	log_info("reload: %s", err);
	return rc;
}
