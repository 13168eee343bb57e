/* toud.c - main(): options, the configuration check (-t), signals, the
 * privilege drop and the event loop; the start-up and the shutdown that
 * undoes it are daemon.c's. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <malloc.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "conf.h"
#include "control.h"
#include "ctx.h"
#include "daemon.h"
#include "dtls.h"
#include "log.h"
#include "priv.h"
#include "proxy_auth.h"
#include "psk.h"
#include "reload.h"

/* Free memory at the heap's top that glibc keeps rather than gives back.
 * The data paths allocate and free buffers of tens of KiB at line rate
 * (the TCP transport's queues: a chunk for every TLS record); with the
 * default of 128 KiB the heap shrank and grew again with every burst and
 * each new page faulted in, a tenth of the daemon's CPU on a bulk
 * transfer over TCP.  What stays is what the daemon has once needed. */
#define TOUD_MALLOC_TRIM (32 * 1024 * 1024)

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

/* toud -t: its warnings go out plain, as its errors do (log_check_warn). */
static bool checking;

static void
conf_warning(const struct conf_error *w, void *arg)
{
	char buf[600];

	(void)arg;
	if (checking)
		log_check_warn("%s", conf_error_fmt(w, buf, sizeof(buf)));
	else
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

static void
free_signals(struct toud *t)
{
	if (t->ev_sigterm)
		event_free(t->ev_sigterm);
	if (t->ev_sigint)
		event_free(t->ev_sigint);
	if (t->ev_sighup)
		event_free(t->ev_sighup);
}

/* Keep only CAP_NET_ADMIN (and CAP_NET_BIND_SERVICE for a port below
 * 1024), as the configured user (priv.c). */
static int
drop_privileges(struct toud *t)
{
	const struct conf_iface *ifc = &t->conf->iface;
	char dir[256];
	const char *const owned[] = { ifc->control,
	    control_dir_made(t->control, dir, sizeof(dir)), NULL };
	int rc;

	if ((rc = priv_drop(ifc->user, priv_privileged_port(ifc, NULL, NULL) != 0,
	    owned)) < 0) {
		if (rc != -ENOENT)      /* no such user: priv_drop said so */
			log_errx("cannot drop privileges: %s", strerror(-rc));
		return rc;
	}
	return 0;
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

#define TOUD_CHECK_PEER_FILES 128 /* ca, preshared-key and included files check_readable_as_user() opens */

/* Root checks what the service user will read: the unit starts toud as
 * `user`, so a file only root can read passes a check by root and fails
 * the start.  A child takes the user's identity and opens each; 1 and
 * the message on the first it cannot. */
static int
check_readable_as_user(const struct conf *c, const struct passwd *pw)
{
	const struct conf_iface *ifc = &c->iface;
	const char *keys[3 + TOUD_CHECK_PEER_FILES];
	const char *paths[3 + TOUD_CHECK_PEER_FILES];
	int lines[3 + TOUD_CHECK_PEER_FILES];
	size_t n = 0, i;
	int status;
	pid_t pid;

	keys[n] = "the configuration", paths[n] = c->file, lines[n++] = 0;
	if (ifc->encryption == CONF_ENC_DTLS && ifc->private_key)
		keys[n] = "private-key", paths[n] = ifc->private_key,
		lines[n++] = ifc->private_key_line;
	if (ifc->encryption == CONF_ENC_DTLS && ifc->certificate)
		keys[n] = "certificate", paths[n] = ifc->certificate,
		lines[n++] = ifc->certificate_line;
	/* included files: read again at every reload, as the user */
	for (i = 0; i < c->n_sources && n < sizeof(paths) / sizeof(paths[0]); i++)
		keys[n] = "include", paths[n] = c->sources[i].file,
		lines[n++] = c->sources[i].include_line;
	for (i = 0; i < c->n_peers && n + 2 <= sizeof(paths) / sizeof(paths[0]); i++) {
		if (c->peers[i].ca)
			keys[n] = "ca", paths[n] = c->peers[i].ca, lines[n++] = c->peers[i].ca_line;
		/* read again at every reload, as the user */
		if (c->peers[i].psk_file)
			keys[n] = "preshared-key", paths[n] = c->peers[i].psk_file,
			lines[n++] = c->peers[i].psk_line;
		if (c->peers[i].proxy_auth_file && n < sizeof(paths) / sizeof(paths[0]))
			keys[n] = "proxy-credentials", paths[n] = c->peers[i].proxy_auth_file,
			lines[n++] = c->peers[i].proxy_auth_line;
	}
	fflush(stderr);
	if ((pid = fork()) < 0) {
		log_check("%s: cannot check the files as user %s: fork: %s", c->file,
		    pw->pw_name, strerror(errno));
		return 1;
	}
	if (pid == 0) {
		if (initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		    setuid(pw->pw_uid) < 0) {
			log_check("%s: cannot check the files as user %s: %s", c->file,
			    pw->pw_name, strerror(errno));
			_exit(1);
		}
		for (i = 0; i < n; i++) {
			const char *slash = strrchr(paths[i], '/');
			int fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

			if (fd >= 0) {
				close(fd);
				continue;
			}
			if (i == 0)     /* the file: mode 0644 and a directory it may enter */
				log_check("%s: cannot open it as user %s: %s; it must be readable "
				    "by user %s (mode 0644, in a directory it may enter)", c->file,
				    pw->pw_name, strerror(errno), pw->pw_name);
			else {
				int e = errno, line;
				const char *file = conf_line_of(c, lines[i], &line);

				log_check("%s:%d: %s: cannot open '%s' as user %s: %s; it must be "
				    "readable by user %s: 'chown -R %s: %.*s'", file, line,
				    keys[i], paths[i], pw->pw_name, strerror(e), pw->pw_name,
				    pw->pw_name, slash && slash != paths[i] ?
				    (int)(slash - paths[i]) : 1, slash ? paths[i] : ".");
			}
			_exit(1);
		}
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* A peer's endpoint given as an address, in address order. */
struct check_ep {
	struct ipaddr a;
	const struct conf_peer *peer;
};

static int
check_ep_cmp_addr(const struct ipaddr *x, const struct ipaddr *y)
{
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->b, y->b, x->family == AF_INET ? 4 : 16);
}

static int
check_ep_cmp(const void *x, const void *y)
{
	return check_ep_cmp_addr(&((const struct check_ep *)x)->a,
	    &((const struct check_ep *)y)->a);
}

/* Warn of every main-table prefix that covers a peer's endpoint.  The
 * endpoints are sorted once; those a prefix covers are one run of them,
 * found by binary search: O((peers + prefixes) log peers), not their
 * product (20,000 peers would take minutes). */
static void
warn_endpoints_routed(const struct conf *c)
{
	char buf[UTIL_ADDRSTRLEN], ebuf[UTIL_ADDRSTRLEN];
	struct check_ep *eps;
	struct conf_error w;
	size_t i, k, n = 0;

	if (!(eps = calloc(c->n_peers ? c->n_peers : 1, sizeof(*eps))))
		return;
	for (i = 0; i < c->n_peers; i++) {
		if (c->peers[i].endpoint_host &&
		    util_addr_parse(c->peers[i].endpoint_host, &eps[n].a) == 0)
			eps[n++].peer = &c->peers[i];
	}
	qsort(eps, n, sizeof(*eps), check_ep_cmp);
	for (i = 0; i < c->n_peers && n; i++) {
		const struct conf_peer *p = &c->peers[i];

		for (k = 0; k < p->n_address + p->n_allowed_ips; k++) {
			const struct conf_prefix *cp = k < p->n_address ? &p->address[k] :
			    &p->allowed_ips[k - p->n_address];
			struct ipprefix net;
			size_t lo = 0, hi = n;

			/* Only a route in the main table takes every datagram:
			 * a full tunnel's table is skipped by the marked ones,
			 * and the rules that lead to a table = NUMBER are the
			 * administrator's. */
			if (conf_route_table(&c->iface, &cp->p, 1) != CONF_TABLE_MAIN)
				continue;
			util_prefix_masked(&cp->p, &net);
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (check_ep_cmp_addr(&eps[mid].a, &net.addr) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; lo < n && util_prefix_contains(&cp->p, &eps[lo].a); lo++) {
				util_strlcpy(w.file, conf_line_of(c, cp->line, &w.line),
				    sizeof(w.file));
				snprintf(w.msg, sizeof(w.msg), "peer '%s': %s covers the endpoint "
				    "%s of peer '%s': its datagrams would be routed into the tunnel",
				    p->name, util_prefix_fmt(&cp->p, buf, sizeof(buf)),
				    util_addr_fmt(&eps[lo].a, ebuf, sizeof(ebuf)), eps[lo].peer->name);
				conf_warning(&w, NULL);
			}
		}
	}
	free(eps);
}

/* The lowest port the kernel lets anyone bind (a sysctl of the network
 * namespace); 1024 where it cannot be read. */
static unsigned
check_unprivileged_port_start(void)
{
	unsigned v = 1024;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "re");

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 1024;
		fclose(f);
	}
	return v;
}

/* A port below 1024 binds only with CAP_NET_BIND_SERVICE: started as the
 * service user (the unit's ExecStartPre=), whether the unit gave it;
 * started as root, whether the bounding set still holds it (priv.c keeps
 * it across the switch to the user).  1 and the message, naming the fix. */
static int
check_privileged_port(const struct conf *c)
{
	const char *key, *file;
	struct passwd *pw;
	unsigned start;
	uint16_t port;
	int line;

	if (!(port = priv_privileged_port(&c->iface, &key, &line)) ||
	    port >= (start = check_unprivileged_port_start()))
		return 0;
	if (priv_bind_service_kept())
		return 0;
	file = line ? conf_line_of(c, line, &line) : c->file;
	pw = getpwuid(geteuid());
	log_check("%s:%d: %s %u: user %s may not bind a port below %u without "
	    "CAP_NET_BIND_SERVICE; add it to both AmbientCapabilities= and "
	    "CapabilityBoundingSet= of the unit (the shipped toud.service has it, "
	    "see toud(8), Privileged ports), or choose a port from %u up", file, line, key,
	    port, pw ? pw->pw_name : "?", start, start);
	return 1;
}

/* Whether a is inside the tunnel other than by a default route: an
 * interface address's prefix, or a peer's address or allowed-ips. */
static bool
check_in_tunnel(const struct conf *c, const struct ipaddr *a)
{
	size_t i, k;

	for (k = 0; k < c->iface.n_address; k++)
		if (util_prefix_contains(&c->iface.address[k].p, a))
			return true;
	for (i = 0; i < c->n_peers; i++) {
		const struct conf_peer *p = &c->peers[i];

		for (k = 0; k < p->n_address + p->n_allowed_ips; k++) {
			const struct ipprefix *q = k < p->n_address ? &p->address[k].p :
			    &p->allowed_ips[k - p->n_address].p;

			if (q->len > 0 && util_prefix_contains(q, a))
				return true;
		}
	}
	return false;
}

/* A full tunnel takes every name server's traffic but the ones on the
 * local network (more specific routes of the main table win): a dns
 * server that nothing but the default route puts into the tunnel is
 * asked outside it, or cannot answer from where it is. */
static void
warn_dns_outside(const struct conf *c)
{
	char buf[UTIL_ADDRSTRLEN];
	struct conf_error w;
	size_t k;

	for (k = 0; k < c->iface.n_dns; k++) {
		const struct ipaddr *a = &c->iface.dns[k].p.addr;

		if (!conf_full_tunnel(c, a->family) || check_in_tunnel(c, a))
			continue;
		util_strlcpy(w.file, conf_line_of(c, c->iface.dns[k].line, &w.line),
		    sizeof(w.file));
		snprintf(w.msg, sizeof(w.msg), "dns %s: only the default route puts it in the "
		    "tunnel; a full tunnel leaves a server on the local network outside (a leak) "
		    "and one elsewhere may not answer: name one the tunnel reaches (the far "
		    "side's tunnel address)", util_addr_fmt(a, buf, sizeof(buf)));
		conf_warning(&w, NULL);
	}
}

#define TOUD_CHECK_NAMES 16     /* endpoint names -t looks up, at most */

/* An endpoint name that does not resolve now: toud starts anyway and
 * retries, so it is a warning, for a person running -t (the unit's
 * ExecStartPre= does not wait on the resolver at boot). */
static void
warn_names_unresolved(const struct conf *c)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res;
	struct conf_error w;
	struct ipaddr a;
	size_t i, looked = 0;
	int r;

	if (getenv("JOURNAL_STREAM"))
		return;
	for (i = 0; i < c->n_peers && looked < TOUD_CHECK_NAMES; i++) {
		const struct conf_peer *p = &c->peers[i];

		if (!p->endpoint_host || util_addr_parse(p->endpoint_host, &a) == 0 ||
		    strchr(p->endpoint_host, '%'))
			continue;
		looked++;
		if ((r = getaddrinfo(p->endpoint_host, NULL, &hints, &res)) == 0) {
			freeaddrinfo(res);
			continue;
		}
		util_strlcpy(w.file, conf_line_of(c, p->endpoint_line, &w.line), sizeof(w.file));
		snprintf(w.msg, sizeof(w.msg), "peer '%s': endpoint name '%s' does not resolve "
		    "now (%s); toud starts anyway and keeps trying, but check the name",
		    p->name, p->endpoint_host, r == EAI_SYSTEM ? strerror(errno) :
		    gai_strerror(r));
		conf_warning(&w, NULL);
	}
}

static int
check_deep(const struct conf *c)
{
	const struct conf_iface *ifc = &c->iface;
	char err[512];
	int errors = 0;

	if (ifc->user) {
		struct passwd *pw;

		errno = 0;
		if (!(pw = getpwnam(ifc->user))) {
			log_check("%s: user \"%s\": %s", c->file, ifc->user,
			    errno ? strerror(errno) : "no such user (systemd-sysusers creates "
			    "toud's; see toud(8))");
			errors++;
		} else if (geteuid() == 0 && pw->pw_uid != 0) {
			errors += check_readable_as_user(c, pw);
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
	errors += check_privileged_port(c);
	warn_dns_outside(c);
	warn_names_unresolved(c);
	/* A prefix routed into the tunnel that holds a peer's own endpoint
	 * sends the tunnel's datagrams into the tunnel (tou.conf(5) CAVEATS). */
	warn_endpoints_routed(c);
	return errors;
}

/* -V's second line: the OpenSSL toud runs with, and whether it has the
 * post-quantum key exchange (post-quantum, tou.conf(5)). */
static void
version_crypto(void)
{
	EVP_KEM *kem = EVP_KEM_fetch(NULL, "ML-KEM-768", NULL);

	printf("%s, ML-KEM-768: %s\n", OpenSSL_version(OPENSSL_VERSION), kem ? "yes" : "no");
	EVP_KEM_free(kem);
	ERR_clear_error();
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
			version_crypto();
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
		t.instance = instance;
		t.instance_control = isock;
	}
	log_init(debug ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, "toud");
	t.debug = debug;
	checking = check_only;

	if (conf_load(t.conf_file, true, &t.conf, &err, conf_warning, NULL) < 0) {
		log_check("%s", conf_error_fmt(&err, buf, sizeof(buf)));
		return 1;
	}
	if (psk_load_conf(t.conf, &err) < 0 || proxy_auth_load_conf(t.conf, &err) < 0) {
		log_check("%s", conf_error_fmt(&err, buf, sizeof(buf)));
		conf_free(t.conf);
		return 1;
	}
	if (t.instance && (conf_instance_apply(t.conf, t.instance, t.instance_control, &err) < 0 ||
	    (check_only && conf_instance_clash(t.conf, t.conf_file, &err) < 0))) {
		log_check("%s", conf_error_fmt(&err, buf, sizeof(buf)));
		conf_free(t.conf);
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

#ifdef M_TRIM_THRESHOLD
	(void)mallopt(M_TRIM_THRESHOLD, TOUD_MALLOC_TRIM);
#endif
	/* The start-up in order (daemon.c), with the signals and the
	 * privileges main owns between its privileged part and the rest. */
	if ((rc = daemon_start(&t)) == 0 && (rc = setup_signals(&t)) == 0 &&
	    (rc = drop_privileges(&t)) == 0 && (rc = daemon_ready(&t)) == 0)
		rc = event_base_dispatch(t.base) < 0 ? -EIO : 0;
	free_signals(&t);
	daemon_stop(&t);
	conf_free(t.conf);
	if (rc == 0)
		log_info("stopped");
	return rc == 0 ? 0 : 1;
}
