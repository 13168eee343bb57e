/* conf_diff.h - what differs between two configurations, key by key.
 *
 * conf_diff_iface() and conf_diff_peer() compare two sections and return
 * one bit per key whose value differs; 0 means the sections are equal.
 * File names and line numbers are not compared.  Reload decides from the
 * bits what it must refuse and what a peer must redo; conf_equal() is the
 * whole-file equality built on them.  Pure: no I/O.
 *
 * Lists: a peer's allowed-ips, and an address list past the first address
 * of each family, are sets: reordering them changes nothing.  The first
 * address of each family in an address list is the one the node uses (the
 * local address of that family for [interface], the peer's tunnel address
 * that compact TOU rebuilds for [peer]), so a list whose first address of a
 * family is another one differs, even if it holds the same addresses.
 * dns and dns-search are tried in the order written: a new order differs. */
#ifndef TOUD_CONF_DIFF_H
#define TOUD_CONF_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

/* [interface] keys, in the order of tou.conf(5). */
enum conf_iface_diff {
	CONF_IFACE_DIFF_NAME            = 1u << 0,
	CONF_IFACE_DIFF_ADDRESS         = 1u << 1,
	CONF_IFACE_DIFF_LISTEN          = 1u << 2,
	CONF_IFACE_DIFF_PRIVATE_KEY     = 1u << 3,
	CONF_IFACE_DIFF_CERTIFICATE     = 1u << 4,
	CONF_IFACE_DIFF_KEYLOG_FILE     = 1u << 5,
	CONF_IFACE_DIFF_MTU             = 1u << 6,
	CONF_IFACE_DIFF_PATH_MTU        = 1u << 7,
	CONF_IFACE_DIFF_USER            = 1u << 8,
	CONF_IFACE_DIFF_ENCRYPTION      = 1u << 9,
	CONF_IFACE_DIFF_OFFLOAD         = 1u << 10,
	CONF_IFACE_DIFF_THREADS         = 1u << 11,
	CONF_IFACE_DIFF_LOG_LEVEL       = 1u << 12,
	CONF_IFACE_DIFF_CONTROL         = 1u << 13,
	CONF_IFACE_DIFF_REKEY_TIME      = 1u << 14,
	CONF_IFACE_DIFF_SESSION_MAX_AGE = 1u << 15,
	CONF_IFACE_DIFF_REKEY_BYTES     = 1u << 16,
	CONF_IFACE_DIFF_REKEY_RECORDS   = 1u << 17,
	CONF_IFACE_DIFF_FWMARK          = 1u << 18,
	CONF_IFACE_DIFF_TABLE           = 1u << 19,
	CONF_IFACE_DIFF_FAIL_OPEN       = 1u << 20,
	CONF_IFACE_DIFF_METRICS         = 1u << 21,
	CONF_IFACE_DIFF_METRICS_ALLOW_REMOTE = 1u << 22,
	CONF_IFACE_DIFF_SERVER_ID       = 1u << 23,
	CONF_IFACE_DIFF_DNS             = 1u << 24,
	CONF_IFACE_DIFF_DNS_SEARCH      = 1u << 25,
	CONF_IFACE_DIFF_LISTEN_TCP      = 1u << 26,
	CONF_IFACE_DIFF_METRICS_TOKEN_FILE = 1u << 27,
};
/* The keys a reload applies; a change to any other one needs a restart. */
#define CONF_IFACE_DIFF_RELOADABLE (CONF_IFACE_DIFF_LOG_LEVEL | CONF_IFACE_DIFF_REKEY_TIME | \
	CONF_IFACE_DIFF_SESSION_MAX_AGE | CONF_IFACE_DIFF_REKEY_BYTES | \
	CONF_IFACE_DIFF_REKEY_RECORDS | CONF_IFACE_DIFF_FAIL_OPEN | CONF_IFACE_DIFF_METRICS | \
	CONF_IFACE_DIFF_METRICS_ALLOW_REMOTE | CONF_IFACE_DIFF_METRICS_TOKEN_FILE | \
	CONF_IFACE_DIFF_DNS | CONF_IFACE_DIFF_DNS_SEARCH | CONF_IFACE_DIFF_LISTEN_TCP)

/* [peer NAME]: the section's name, then its keys in the order of tou.conf(5). */
enum conf_peer_diff {
	CONF_PEER_DIFF_SECTION     = 1u << 0,   /* the NAME of [peer NAME] */
	CONF_PEER_DIFF_FINGERPRINT = 1u << 1,
	CONF_PEER_DIFF_CA          = 1u << 2,
	CONF_PEER_DIFF_NAME        = 1u << 3,   /* the key "name": the expected CN */
	CONF_PEER_DIFF_ENDPOINT    = 1u << 4,
	CONF_PEER_DIFF_ADDRESS     = 1u << 5,
	CONF_PEER_DIFF_ALLOWED_IPS = 1u << 6,
	CONF_PEER_DIFF_KEEPALIVE   = 1u << 7,
	CONF_PEER_DIFF_PRESHARED_KEY = 1u << 8, /* the file, or the key in it */
	CONF_PEER_DIFF_ENDPOINT_TCP = 1u << 9,
	CONF_PEER_DIFF_PROXY       = 1u << 10,
	CONF_PEER_DIFF_SNI         = 1u << 11,
	CONF_PEER_DIFF_PROXY_CREDENTIALS = 1u << 12,
	CONF_PEER_DIFF_POST_QUANTUM = 1u << 13, /* a new policy applies to new sessions */
};
/* The keys that decide which keys the peer's sessions may authenticate with
 * (the preshared key and post-quantum decide their data keys). */
#define CONF_PEER_DIFF_AUTH (CONF_PEER_DIFF_FINGERPRINT | CONF_PEER_DIFF_CA | \
	CONF_PEER_DIFF_NAME | CONF_PEER_DIFF_PRESHARED_KEY | CONF_PEER_DIFF_POST_QUANTUM)

/* The enum conf_iface_diff bits of the keys whose values differ in a and b
 * (symmetric: which is the old one does not matter). */
uint32_t conf_diff_iface(const struct conf_iface *a, const struct conf_iface *b);
/* The enum conf_peer_diff bits of the keys whose values differ. */
uint32_t conf_diff_peer(const struct conf_peer *a, const struct conf_peer *b);

/* The key names of the bits in what, in bit order, as "endpoint, keepalive"
 * (the section's name as "[peer NAME]"), into buf; returns buf. */
const char *conf_diff_iface_fmt(uint32_t what, char *buf, size_t len);
const char *conf_diff_peer_fmt(uint32_t what, char *buf, size_t len);

/* Equal [interface] and the same peers, matched by name in any order. */
bool conf_equal(const struct conf *a, const struct conf *b);

#endif
