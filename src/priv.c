/* priv.c - privilege drop with libcap-ng. */
#include <cap-ng.h>
#include <errno.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "log.h"
#include "priv.h"

/* The capabilities toud keeps: routes, addresses and the TUN need
 * CAP_NET_ADMIN for as long as it runs (reload, link events, exit). */
static void
select_caps(uint16_t port)
{
	capng_clear(CAPNG_SELECT_BOTH);
	capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED, CAP_NET_ADMIN);
	if (port && port < 1024)
		capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED, CAP_NET_BIND_SERVICE);
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
priv_drop(const char *user, uint16_t port, const char *const *chown_paths)
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
	if (geteuid() != 0) {
		/* Already unprivileged (systemd User= with ambient capabilities):
		 * just keep no more than we need. */
		if (!capng_have_capability(CAPNG_EFFECTIVE, CAP_NET_ADMIN))
			log_warnx("running without CAP_NET_ADMIN: route changes will fail");
		select_caps(port);
		/* Not the bounding set: emptying it needs CAP_SETPCAP, which
		 * this path does not have (libcap-ng would log at err on
		 * every start); the service manager sets it. */
		if (capng_apply(CAPNG_SELECT_CAPS) < 0)
			return -EPERM;
	} else if (pw) {
		priv_give(chown_paths, pw->pw_uid, pw->pw_gid);
		select_caps(port);
		rc = capng_change_id((int)pw->pw_uid, (int)pw->pw_gid,
		    CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING);
		if (rc < 0) {
			log_errx("cannot switch to user \"%s\" (libcap-ng error %d)", user, rc);
			return -EPERM;
		}
	} else {
		/* root without a user to switch to: stay root but keep only
		 * what is needed. */
		select_caps(port);
		capng_apply(CAPNG_SELECT_BOUNDS);
		if (capng_apply(CAPNG_SELECT_CAPS) < 0)
			return -EPERM;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}
