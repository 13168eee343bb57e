/* dns.h - the name servers and search domains of the TUN link ([interface]
 * dns, dns-search), handed to the host's resolver: systemd-resolved over
 * D-Bus (what `resolvectl dns`, `domain`, `default-route` and `revert`
 * do), or resolvconf(8) where resolved is neither running nor activatable.
 * A full tunnel also gets the routing-only domain "~." and the link is
 * made resolved's default route, so that no query leaves by the underlay's
 * servers.
 *
 * Runs on the main thread at start, reload and stop only; each step is a
 * few synchronous calls (bounded by a time-out), never on the data path.
 * Failures are logged at warning with the reason and kept for
 * `touctl show`; the tunnel runs on without them. */
#ifndef TOUD_DNS_H
#define TOUD_DNS_H

struct toud;

enum dns_via { DNS_VIA_NONE, DNS_VIA_RESOLVED, DNS_VIA_RESOLVCONF };

/* Make the link's DNS settings match t->conf (start, reload): nothing
 * when they already do; else the old ones are removed and the new ones
 * set.  0 or -errno (logged at warning, kept for dns_error()). */
int dns_apply(struct toud *t);
/* Remove what dns_apply() set (stop), and free the state. */
void dns_revert(struct toud *t);
/* Where the settings in force went, and why the last step failed (NULL
 * if it did not). */
enum dns_via dns_via(const struct toud *t);
const char *dns_via_name(enum dns_via via);
const char *dns_error(const struct toud *t);

#endif
