/* export.h - `touctl export`: this node described as a [peer] section for
 * the other side's tou.conf. */
#ifndef TOUD_EXPORT_H
#define TOUD_EXPORT_H

#include <stddef.h>
#include <stdint.h>

struct conf;

/* The section, malloc'd: [peer NAME] with this node's fingerprint fp (32
 * bytes; needed with encryption = dtls), its endpoint, and its tunnel addresses as host
 * addresses, in the order of [interface] address.
 *   name: the peer's name on the other side; NULL takes this host's name
 *     up to the first dot.
 *   endpoint: "HOST:PORT", "[ADDR]:PORT", or a bare host or address that
 *     gets the listen port; NULL takes the listen address when `listen`
 *     names one, and otherwise writes a commented-out endpoint line.
 * The result parses as a [peer] section (checked before it is returned).
 * NULL with a message in err (a name that cannot name a peer, an endpoint
 * that does not parse, no memory). */
char *export_render(const struct conf *c, const uint8_t *fp, const char *name,
    const char *endpoint, char *err, size_t errlen);

#endif
