/* priv.c - privilege drop with libcap-ng. */
#include <cap-ng.h>
#include <errno.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "priv.h"

/* The capabilities toud keeps: routes, addresses and the TUN need
 * CAP_NET_ADMIN for as long as it runs (reload, link events, exit); a
 * privileged port, CAP_NET_BIND_SERVICE, for the listeners a reload opens
 * again (listen-tcp, metrics). */
static void
select_caps(bool bind_service)
{
	capng_clear(CAPNG_SELECT_BOTH);
	capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED, CAP_NET_ADMIN);
	if (bind_service)
		capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED, CAP_NET_BIND_SERVICE);
}

uint16_t
priv_privileged_port(const struct conf_iface *ifc, const char **key, int *line)
{
	const char *k = NULL;
	uint16_t port = 0;
	int l = 0;

	if (ifc->listen_port && ifc->listen_port < 1024)
		k = "listen", port = ifc->listen_port, l = ifc->listen_line;
	else if (ifc->has_listen_tcp && ifc->listen_tcp_port < 1024)
		k = "listen-tcp", port = ifc->listen_tcp_port, l = ifc->listen_tcp_line;
	else if (ifc->has_metrics && ifc->metrics_port && ifc->metrics_port < 1024)
		k = "metrics", port = ifc->metrics_port, l = ifc->metrics_line;
	if (key)
		*key = k;
	if (line)
		*line = l;
	return port;
}

bool
priv_bind_service_kept(void)
{
	capng_get_caps_process();
	if (geteuid() == 0)     /* priv_drop() keeps it across the switch */
		return capng_have_capability(CAPNG_BOUNDING_SET, CAP_NET_BIND_SERVICE);
	return capng_have_capability(CAPNG_EFFECTIVE, CAP_NET_BIND_SERVICE);
}

int
priv_give(const char *const *paths, uid_t uid, gid_t gid)
{
	int rc = 0;

	/* lchown: the socket's directory may belong to the service user (it
	 * is kept across restarts), who could put a symlink where the socket
	 * was; then the link itself changes owner, never its target. */
	for (; paths && *paths; paths++) {
		if (lchown(*paths, uid, gid) < 0) {
			log_warn("chown %s", *paths);
			rc = -errno;
		}
	}
	return rc;
}

int
priv_drop(const char *user, bool bind_service, const char *const *chown_paths)
{
	struct passwd *pw = NULL;
	int rc;

	if (user) {
		errno = 0;
		if (!(pw = getpwnam(user))) {
			log_errx("user \"%s\": %s", user, errno ? "lookup failed" : "no such user");
			return errno ? -errno : -ENOENT;
		}
	}
	capng_get_caps_process();
	if (geteuid() != 0) {
		/* Already unprivileged (systemd User= with ambient capabilities):
		 * just keep no more than we need. */
		if (!capng_have_capability(CAPNG_EFFECTIVE, CAP_NET_ADMIN))
			log_warnx("running without CAP_NET_ADMIN: route changes will fail");
		/* Only what the service manager gave: asking for more fails. */
		select_caps(bind_service &&
		    capng_have_capability(CAPNG_PERMITTED, CAP_NET_BIND_SERVICE));
		/* Not the bounding set: emptying it needs CAP_SETPCAP, which
		 * this path does not have (libcap-ng would log at err on
		 * every start); the service manager sets it. */
		if (capng_apply(CAPNG_SELECT_CAPS) < 0)
			return -EPERM;
	} else if (pw) {
		priv_give(chown_paths, pw->pw_uid, pw->pw_gid);
		select_caps(bind_service);
		rc = capng_change_id((int)pw->pw_uid, (int)pw->pw_gid,
		    CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING);
		if (rc < 0) {
			log_errx("cannot switch to user \"%s\" (libcap-ng error %d)", user, rc);
			return -EPERM;
		}
	} else {
		/* root without a user to switch to: stay root but keep only
		 * what is needed. */
		select_caps(bind_service);
		capng_apply(CAPNG_SELECT_BOUNDS);
		if (capng_apply(CAPNG_SELECT_CAPS) < 0)
			return -EPERM;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}
