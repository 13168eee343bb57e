/* priv.h - dropping privileges once set-up is done. */
#ifndef TOUD_PRIV_H
#define TOUD_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Switch to `user` (NULL: stay the current user), keeping only
 * CAP_NET_ADMIN (and CAP_NET_BIND_SERVICE with bind_service: a configured
 * port below 1024, which a reload may open again), with an
 * empty bounding set (only when started as root: without CAP_SETPCAP the
 * service manager's CapabilityBoundingSet= does that) and no_new_privs.
 * Started without root but with
 * CAP_NET_ADMIN (systemd's User= + AmbientCapabilities=), it only trims
 * the capability sets.  chown_paths are handed to the user first (the
 * control socket, so it can be removed at exit).  0 or -errno. */
int priv_drop(const char *user, bool bind_service, const char *const *chown_paths);
/* The first port of ifc's listeners below 1024 (listen, listen-tcp,
 * metrics), or 0: what needs CAP_NET_BIND_SERVICE. */
struct conf_iface;
uint16_t priv_privileged_port(const struct conf_iface *ifc, const char **key, int *line);
/* Whether the daemon, started as this process is, would hold
 * CAP_NET_BIND_SERVICE after priv_drop(): as root, if the bounding set
 * has it; as another user (the unit's User=), if it is effective now. */
bool priv_bind_service_kept(void);
/* Hand each of paths (NULL-terminated) to uid:gid without following a
 * symlink (a link itself changes owner, never its target).  0 or the last
 * -errno (each failure is logged). */
int priv_give(const char *const *paths, uid_t uid, gid_t gid);

#endif
