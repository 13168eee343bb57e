/* dns.c - the TUN link's name servers and search domains in the host's
 * resolver (see dns.h).
 *
 * systemd-resolved: the Manager's SetLinkDNS, SetLinkDomains and, for a
 * full tunnel, SetLinkDefaultRoute on the TUN's index; RevertLink undoes
 * them.  resolved authorizes these for root, for its own user, and
 * otherwise through polkit (actions org.freedesktop.resolve1.set-dns-servers,
 * .set-domains, .set-default-route, .revert); it forgets a link's settings
 * by itself when the link goes, which the TUN does when toud exits.  It
 * counts as present when its bus name has an owner or can be activated;
 * otherwise resolvconf(8) gets the settings as "tun.NAME".
 *
 * Each call opens its own connection to the system bus and closes it:
 * nothing of the bus stays in the event loop between start, reloads and
 * stop. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYSTEMD
#include <systemd/sd-bus.h>
#endif

#include "conf.h"
#include "ctx.h"
#include "dns.h"
#include "log.h"
#include "tun.h"
#include "util.h"

/* How long a step may hold the main loop: resolved's answer, resolvconf's exit. */
#define DNS_TIMEOUT_MS 5000
#define DNS_RESOLVCONF_PREFIX "tun."

extern char **environ;

struct dns {
	enum dns_via via;               /* where the settings in force are */
	int ifindex;                    /* the link they are on */
	char record[IFNAMSIZ + sizeof(DNS_RESOLVCONF_PREFIX)]; /* resolvconf's name */
	char *applied;                  /* the settings in force (dns_want()); NULL: none */
	char error[256];                /* the last step's failure; "" if none */
};

enum dns_via
dns_via(const struct toud *t)
{
	return t->dns_link ? t->dns_link->via : DNS_VIA_NONE;
}

const char *
dns_via_name(enum dns_via via)
{
	return via == DNS_VIA_RESOLVED ? "resolved" : via == DNS_VIA_RESOLVCONF ? "resolvconf" :
	    "none";
}

const char *
dns_error(const struct toud *t)
{
	return t->dns_link && t->dns_link->error[0] ? t->dns_link->error : NULL;
}

static void dns_fail(struct dns *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Say it at warning, and keep the step's first reason for `touctl show`
 * (what follows from it, such as a refused clean-up, is only logged). */
static void
dns_fail(struct dns *d, const char *fmt, ...)
{
	char msg[sizeof(d->error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warnx("dns: %s", msg);
	if (!d->error[0])
		util_strlcpy(d->error, msg, sizeof(d->error));
}

static bool
dns_full_tunnel(const struct conf *c)
{
	return conf_full_tunnel(c, AF_INET) || conf_full_tunnel(c, AF_INET6);
}

/* Whether the routing-only domain "~." is to be set: for a full tunnel,
 * unless the file lists it already. */
static bool
dns_add_root(const struct conf *c)
{
	size_t i;

	if (!dns_full_tunnel(c))
		return false;
	for (i = 0; i < c->iface.n_dns_search; i++)
		if (strcmp(c->iface.dns_search[i], "~.") == 0)
			return false;
	return true;
}

/* The settings c asks for, as one line ("servers 10.0.0.53; domains
 * example.com ~.; default route"): what decides whether a reload changes
 * them, and what the log says.  NULL when c sets no name server; NULL
 * and errno ENOMEM on failure. */
static char *
dns_want(const struct conf *c)
{
	const struct conf_iface *i = &c->iface;
	char a[UTIL_ADDRSTRLEN], *s = NULL;
	size_t len, x;
	FILE *f;

	errno = 0;
	if (!i->n_dns || !(f = open_memstream(&s, &len)))
		return NULL;
	fputs("servers", f);
	for (x = 0; x < i->n_dns; x++)
		fprintf(f, " %s", util_addr_fmt(&i->dns[x].p.addr, a, sizeof(a)));
	for (x = 0; x < i->n_dns_search; x++)
		fprintf(f, "%s %s", x ? "" : "; domains", i->dns_search[x]);
	if (dns_add_root(c))
		fputs(i->n_dns_search ? " ~." : "; domains ~.", f);
	fputs(dns_full_tunnel(c) ? "; default route" : "", f);
	if (fclose(f) != 0) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

/* --- systemd-resolved ------------------------------------------------------ */

#ifdef HAVE_SYSTEMD
#define RESOLVED_NAME "org.freedesktop.resolve1"
#define RESOLVED_PATH "/org/freedesktop/resolve1"
#define RESOLVED_MANAGER "org.freedesktop.resolve1.Manager"

/* resolved's answer to a refused call, with what lets it through. */
static const char *
resolved_hint(const sd_bus_error *e)
{
	if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED) ||
	    sd_bus_error_has_name(e, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED))
		return geteuid() == 0 ? "" : " (toud does not run as root: allow its user the "
		    "polkit actions org.freedesktop.resolve1.set-dns-servers, set-domains, "
		    "set-default-route and revert; see tou.conf(5))";
	return "";
}

/* Whether resolved's bus name has an owner or can be activated: 1, 0,
 * or -errno (the bus did not answer). */
static int
resolved_present(sd_bus *bus)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL;
	char **names = NULL, **n;
	int owned = 0, rc;

	rc = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
	    "org.freedesktop.DBus", "NameHasOwner", &e, &m, "s", RESOLVED_NAME);
	if (rc >= 0)
		rc = sd_bus_message_read(m, "b", &owned);
	m = sd_bus_message_unref(m);
	if (rc >= 0 && !owned) {
		rc = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
		    "org.freedesktop.DBus", "ListActivatableNames", &e, &m, NULL);
		if (rc >= 0)
			rc = sd_bus_message_read_strv(m, &names);
		for (n = names; rc >= 0 && n && *n; n++)
			owned |= strcmp(*n, RESOLVED_NAME) == 0;
		for (n = names; n && *n; n++)
			free(*n);
		free(names);
		sd_bus_message_unref(m);
	}
	sd_bus_error_free(&e);
	return rc < 0 ? rc : owned;
}

/* Send m, a Manager method on the link built with status rc (a failure to
 * build it is reported as such), and free it. */
static int
resolved_call(struct dns *d, sd_bus *bus, sd_bus_message *m, int rc, const char *what)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;

	if (rc >= 0 && (rc = sd_bus_call(bus, m, DNS_TIMEOUT_MS * 1000ULL, &e, NULL)) < 0)
		dns_fail(d, "systemd-resolved refused %s for link %d: %s%s", what, d->ifindex,
		    e.message ? e.message : strerror(-rc), resolved_hint(&e));
	else if (rc < 0)
		dns_fail(d, "%s: %s", what, strerror(-rc));
	sd_bus_error_free(&e);
	sd_bus_message_unref(m);
	return rc < 0 ? rc : 0;
}

/* A Manager method on the link, with an array of element type array
 * opened if that is not NULL. */
static int
resolved_new(sd_bus *bus, const char *method, int ifindex, const char *array,
    sd_bus_message **m)
{
	int rc;

	if ((rc = sd_bus_message_new_method_call(bus, m, RESOLVED_NAME, RESOLVED_PATH,
	    RESOLVED_MANAGER, method)) < 0 ||
	    (rc = sd_bus_message_append(*m, "i", ifindex)) < 0 || !array)
		return rc;
	return sd_bus_message_open_container(*m, 'a', array);
}

/* SetLinkDNS: a(iay), each server as its family and address bytes. */
static int
resolved_set_servers(struct dns *d, sd_bus *bus, const struct conf_iface *i)
{
	sd_bus_message *m = NULL;
	size_t x;
	int rc;

	rc = resolved_new(bus, "SetLinkDNS", d->ifindex, "(iay)", &m);
	for (x = 0; rc >= 0 && x < i->n_dns; x++) {
		const struct ipaddr *a = &i->dns[x].p.addr;

		if ((rc = sd_bus_message_open_container(m, 'r', "iay")) >= 0 &&
		    (rc = sd_bus_message_append(m, "i", a->family)) >= 0 &&
		    (rc = sd_bus_message_append_array(m, 'y', a->b, util_addr_len(a->family))) >= 0)
			rc = sd_bus_message_close_container(m);
	}
	if (rc >= 0)
		rc = sd_bus_message_close_container(m);
	return resolved_call(d, bus, m, rc, "SetLinkDNS");
}

/* SetLinkDomains: a(sb), each domain with whether it is routing only. */
static int
resolved_set_domains(struct dns *d, sd_bus *bus, const struct conf *c)
{
	const struct conf_iface *i = &c->iface;
	sd_bus_message *m = NULL;
	size_t x;
	int rc;

	rc = resolved_new(bus, "SetLinkDomains", d->ifindex, "(sb)", &m);
	for (x = 0; rc >= 0 && x < i->n_dns_search; x++) {
		const char *s = i->dns_search[x];

		rc = sd_bus_message_append(m, "(sb)", s + (s[0] == '~'), s[0] == '~');
	}
	if (rc >= 0 && dns_add_root(c))
		rc = sd_bus_message_append(m, "(sb)", ".", 1);
	if (rc >= 0)
		rc = sd_bus_message_close_container(m);
	return resolved_call(d, bus, m, rc, "SetLinkDomains");
}

/* A method whose arguments are the link and maybe one boolean. */
static int
resolved_link_call(struct dns *d, sd_bus *bus, const char *method, int flag)
{
	sd_bus_message *m = NULL;
	int rc;

	rc = resolved_new(bus, method, d->ifindex, NULL, &m);
	if (rc >= 0 && flag >= 0)
		rc = sd_bus_message_append(m, "b", flag);
	return resolved_call(d, bus, m, rc, method);
}

/* The system bus, or NULL when there is none to talk to (debug log). */
static sd_bus *
resolved_bus(void)
{
	sd_bus *bus = NULL;
	int rc;

	if ((rc = sd_bus_open_system(&bus)) < 0) {
		log_debug("dns: no system bus (%s)", strerror(-rc));
		return NULL;
	}
	return bus;
}

/* 1: applied through resolved; 0: resolved is absent; -errno: it failed. */
static int
resolved_apply(struct dns *d, const struct conf *c)
{
	sd_bus *bus = resolved_bus();
	int rc;

	if (!bus)
		return 0;
	if ((rc = resolved_present(bus)) <= 0) {
		log_debug("dns: systemd-resolved %s", rc < 0 ? strerror(-rc) : "is not on the bus");
		sd_bus_flush_close_unref(bus);
		return 0;
	}
	if ((rc = resolved_set_servers(d, bus, &c->iface)) >= 0 &&
	    (rc = resolved_set_domains(d, bus, c)) >= 0 && dns_full_tunnel(c))
		rc = resolved_link_call(d, bus, "SetLinkDefaultRoute", 1);
	/* Half a configuration is worse than none (after a refused first
	 * call this is refused too: only the log says so). */
	if (rc < 0)
		resolved_link_call(d, bus, "RevertLink", -1);
	sd_bus_flush_close_unref(bus);
	return rc < 0 ? rc : 1;
}

static int
resolved_revert(struct dns *d)
{
	sd_bus *bus = resolved_bus();
	int rc;

	if (!bus)
		return -ENOTCONN;
	rc = resolved_link_call(d, bus, "RevertLink", -1);
	sd_bus_flush_close_unref(bus);
	return rc;
}
#else
static int
resolved_apply(struct dns *d, const struct conf *c)
{
	(void)d;
	(void)c;
	return 0;
}

static int
resolved_revert(struct dns *d)
{
	(void)d;
	return -ENOTSUP;
}
#endif

/* --- resolvconf ------------------------------------------------------------ */

/* Run `resolvconf OP RECORD` with input on its standard input (if not
 * NULL), and wait for it at most DNS_TIMEOUT_MS.  0, or -errno with the
 * reason in d->error (-ENOENT: there is no resolvconf). */
static int
resolvconf_run(struct dns *d, const char *op, const char *input)
{
	char *argv[] = { "resolvconf", (char *)op, d->record, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int fds[2], rc, status = 0, waited;
	sigset_t none, all;
	pid_t pid, w;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[0], STDIN_FILENO);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(&pid, "resolvconf", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[0]);
	if (rc != 0) {
		close(fds[1]);
		return -rc;
	}
	/* A few hundred bytes: the pipe holds them without blocking. */
	if (input && write(fds[1], input, strlen(input)) < 0)
		log_debug("dns: writing to resolvconf: %s", strerror(errno));
	close(fds[1]);
	for (waited = 0; (w = waitpid(pid, &status, WNOHANG)) == 0 && waited < DNS_TIMEOUT_MS;
	    waited += 10)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		dns_fail(d, "resolvconf %s %s: no exit after %d ms", op, d->record,
		    DNS_TIMEOUT_MS);
		return -ETIMEDOUT;
	}
	if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		dns_fail(d, "resolvconf %s %s failed (%s %d)", op, d->record,
		    w > 0 && WIFSIGNALED(status) ? "signal" : "exit status",
		    w > 0 && WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		return -EIO;
	}
	return 0;
}

/* resolv.conf(5) lines: the servers and the search domains (resolvconf has
 * no routing-only domains: those are left out). */
static char *
resolvconf_text(const struct conf_iface *i)
{
	char a[UTIL_ADDRSTRLEN], *s = NULL;
	bool search = false;
	size_t len, x;
	FILE *f;

	if (!(f = open_memstream(&s, &len)))
		return NULL;
	for (x = 0; x < i->n_dns; x++)
		fprintf(f, "nameserver %s\n", util_addr_fmt(&i->dns[x].p.addr, a, sizeof(a)));
	for (x = 0; x < i->n_dns_search; x++) {
		if (i->dns_search[x][0] == '~')
			continue;
		fprintf(f, "%s %s", search ? "" : "search", i->dns_search[x]);
		search = true;
	}
	fputs(search ? "\n" : "", f);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* 1: applied; 0: there is no resolvconf; -errno: it failed. */
static int
resolvconf_apply(struct dns *d, const struct conf *c)
{
	char *text = resolvconf_text(&c->iface);
	int rc;

	if (!text)
		return -ENOMEM;
	rc = resolvconf_run(d, "-a", text);
	free(text);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0 && !d->error[0])
		dns_fail(d, "resolvconf -a %s: %s", d->record, strerror(-rc));
	return rc < 0 ? rc : 1;
}

/* --- start, reload, stop --------------------------------------------------- */

/* Take the settings in force away; the state stays. */
static void
dns_remove(struct dns *d)
{
	int rc = 0;

	if (d->via == DNS_VIA_RESOLVED)
		rc = resolved_revert(d);
	else if (d->via == DNS_VIA_RESOLVCONF)
		rc = resolvconf_run(d, "-d", NULL);
	if (d->via != DNS_VIA_NONE && rc == 0)
		log_info("dns: link %s: settings removed from %s", d->record +
		    strlen(DNS_RESOLVCONF_PREFIX), dns_via_name(d->via));
	d->via = DNS_VIA_NONE;
	free(d->applied);
	d->applied = NULL;
}

int
dns_apply(struct toud *t)
{
	struct dns *d = t->dns_link;
	char *want;
	int rc;

	errno = 0;
	if (!(want = dns_want(t->conf)) && errno)
		return -ENOMEM;
	if (!d && !want)
		return 0;               /* nothing set, nothing to set */
	if (!t->tun) {
		free(want);
		return 0;               /* no kernel (unit tests) */
	}
	if (!d && !(d = t->dns_link = calloc(1, sizeof(*d)))) {
		free(want);
		return -ENOMEM;
	}
	if (want && d->applied && strcmp(want, d->applied) == 0) {
		free(want);
		return 0;
	}
	d->ifindex = t->tun->ifindex;
	snprintf(d->record, sizeof(d->record), DNS_RESOLVCONF_PREFIX "%s", t->tun->name);
	d->error[0] = '\0';
	dns_remove(d);
	if (!want)
		return 0;
	if ((rc = resolved_apply(d, t->conf)) > 0)
		d->via = DNS_VIA_RESOLVED;
	else if (rc == 0 && (rc = resolvconf_apply(d, t->conf)) > 0)
		d->via = DNS_VIA_RESOLVCONF;
	else if (rc == 0)
		dns_fail(d, "neither systemd-resolved nor resolvconf is there: %s "
		    "keeps the host's name servers", t->tun->name);
	if (d->via == DNS_VIA_NONE) {
		free(want);
		return rc < 0 ? rc : -ENOENT;
	}
	log_info("dns: link %s: %s, through %s", t->tun->name, want, dns_via_name(d->via));
	d->applied = want;
	return 0;
}

void
dns_revert(struct toud *t)
{
	struct dns *d = t->dns_link;

	if (!d)
		return;
	dns_remove(d);
	free(d);
	t->dns_link = NULL;
}
