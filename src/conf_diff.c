/* conf_diff.c - what differs between two configurations, key by key; the
 * rules for lists are in conf_diff.h. */
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "conf_diff.h"
#include "util.h"

/* Bit i of enum conf_iface_diff / conf_peer_diff is the key named [i]. */
static const char *const iface_keys[] = {
	"name", "address", "listen", "private-key", "certificate", "keylog-file", "mtu",
	"path-mtu", "user", "encryption", "offload", "threads", "log-level", "control",
	"rekey-time", "session-max-age", "rekey-bytes", "rekey-records", "fwmark", "table",
	"fail-open", "metrics", "metrics-allow-remote", "server-id", "dns", "dns-search",
	"listen-tcp", "metrics-token-file",
};
_Static_assert(1u << (ARRAY_SIZE(iface_keys) - 1) == CONF_IFACE_DIFF_METRICS_TOKEN_FILE,
    "one name per enum conf_iface_diff bit");
static const char *const peer_keys[] = {
	"[peer NAME]", "fingerprint", "ca", "name", "endpoint", "address", "allowed-ips",
	"keepalive", "preshared-key", "endpoint-tcp", "proxy", "sni", "proxy-credentials",
	"post-quantum",
};
_Static_assert(1u << (ARRAY_SIZE(peer_keys) - 1) == CONF_PEER_DIFF_POST_QUANTUM,
    "one name per enum conf_peer_diff bit");

static bool
str_equal(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Name servers and search domains are tried in the order written: lists. */
static bool
str_list_equal(char *const *a, size_t na, char *const *b, size_t nb)
{
	size_t x;

	if (na != nb)
		return false;
	for (x = 0; x < na; x++)
		if (strcmp(a[x], b[x]) != 0)
			return false;
	return true;
}

static bool
dns_list_equal(const struct conf_prefix *a, size_t na, const struct conf_prefix *b, size_t nb)
{
	size_t x;

	if (na != nb)
		return false;
	for (x = 0; x < na; x++)
		if (!util_addr_equal(&a[x].p.addr, &b[x].p.addr))
			return false;
	return true;
}

static bool
prefix_equal(const struct ipprefix *a, const struct ipprefix *b)
{
	return a->len == b->len && util_addr_equal(&a->addr, &b->addr);
}

static bool
prefix_in(const struct conf_prefix *p, const struct conf_prefix *list, size_t n)
{
	size_t x;

	for (x = 0; x < n; x++)
		if (prefix_equal(&p->p, &list[x].p))
			return true;
	return false;
}

/* The same prefixes, in any order (conf_validate() refuses duplicates). */
static bool
prefix_set_equal(const struct conf_prefix *a, size_t na, const struct conf_prefix *b,
    size_t nb)
{
	size_t x;

	if (na != nb)
		return false;
	for (x = 0; x < na; x++)
		if (!prefix_in(&a[x], b, nb) || !prefix_in(&b[x], a, na))
			return false;
	return true;
}

static const struct ipprefix *
first_of_family(const struct conf_prefix *list, size_t n, int family)
{
	size_t x;

	for (x = 0; x < n; x++)
		if (list[x].p.addr.family == family)
			return &list[x].p;
	return NULL;
}

static bool
first_equal(const struct conf_prefix *a, size_t na, const struct conf_prefix *b, size_t nb,
    int family)
{
	const struct ipprefix *fa = first_of_family(a, na, family);
	const struct ipprefix *fb = first_of_family(b, nb, family);

	return fa && fb ? prefix_equal(fa, fb) : fa == fb;
}

/* A set whose first address of each family is the one in use (conf_diff.h). */
static bool
address_list_equal(const struct conf_prefix *a, size_t na, const struct conf_prefix *b,
    size_t nb)
{
	return prefix_set_equal(a, na, b, nb) && first_equal(a, na, b, nb, AF_INET) &&
	    first_equal(a, na, b, nb, AF_INET6);
}

uint32_t
conf_diff_iface(const struct conf_iface *a, const struct conf_iface *b)
{
	uint32_t d = 0;

	if (strcmp(a->name, b->name) != 0)
		d |= CONF_IFACE_DIFF_NAME;
	if (!address_list_equal(a->address, a->n_address, b->address, b->n_address))
		d |= CONF_IFACE_DIFF_ADDRESS;
	if (a->listen_port != b->listen_port || a->has_listen_addr != b->has_listen_addr ||
	    (a->has_listen_addr && !util_addr_equal(&a->listen_addr, &b->listen_addr)))
		d |= CONF_IFACE_DIFF_LISTEN;
	if (!str_equal(a->private_key, b->private_key))
		d |= CONF_IFACE_DIFF_PRIVATE_KEY;
	if (!str_equal(a->certificate, b->certificate))
		d |= CONF_IFACE_DIFF_CERTIFICATE;
	if (!str_equal(a->keylog_file, b->keylog_file))
		d |= CONF_IFACE_DIFF_KEYLOG_FILE;
	if (a->mtu != b->mtu)
		d |= CONF_IFACE_DIFF_MTU;
	if (a->path_mtu != b->path_mtu)
		d |= CONF_IFACE_DIFF_PATH_MTU;
	if (!str_equal(a->user, b->user))
		d |= CONF_IFACE_DIFF_USER;
	if (a->encryption != b->encryption)
		d |= CONF_IFACE_DIFF_ENCRYPTION;
	if (a->offload != b->offload)
		d |= CONF_IFACE_DIFF_OFFLOAD;
	if (a->threads != b->threads)
		d |= CONF_IFACE_DIFF_THREADS;
	if (a->log_level != b->log_level)
		d |= CONF_IFACE_DIFF_LOG_LEVEL;
	if (!str_equal(a->control, b->control))
		d |= CONF_IFACE_DIFF_CONTROL;
	if (a->rekey_seconds != b->rekey_seconds)
		d |= CONF_IFACE_DIFF_REKEY_TIME;
	if (a->session_max_age != b->session_max_age)
		d |= CONF_IFACE_DIFF_SESSION_MAX_AGE;
	if (a->rekey_bytes != b->rekey_bytes)
		d |= CONF_IFACE_DIFF_REKEY_BYTES;
	if (a->rekey_records != b->rekey_records)
		d |= CONF_IFACE_DIFF_REKEY_RECORDS;
	if (a->fwmark != b->fwmark)
		d |= CONF_IFACE_DIFF_FWMARK;
	if (a->table != b->table || a->table_number != b->table_number)
		d |= CONF_IFACE_DIFF_TABLE;
	if (a->fail_open != b->fail_open)
		d |= CONF_IFACE_DIFF_FAIL_OPEN;
	if (a->has_metrics != b->has_metrics || (a->has_metrics &&
	    (!util_addr_equal(&a->metrics_addr, &b->metrics_addr) ||
	    a->metrics_port != b->metrics_port)))
		d |= CONF_IFACE_DIFF_METRICS;
	if (a->metrics_allow_remote != b->metrics_allow_remote)
		d |= CONF_IFACE_DIFF_METRICS_ALLOW_REMOTE;
	if (!str_equal(a->metrics_token_file, b->metrics_token_file))
		d |= CONF_IFACE_DIFF_METRICS_TOKEN_FILE;
	if (a->server_id != b->server_id)
		d |= CONF_IFACE_DIFF_SERVER_ID;
	if (!dns_list_equal(a->dns, a->n_dns, b->dns, b->n_dns))
		d |= CONF_IFACE_DIFF_DNS;
	if (!str_list_equal(a->dns_search, a->n_dns_search, b->dns_search, b->n_dns_search))
		d |= CONF_IFACE_DIFF_DNS_SEARCH;
	if (a->has_listen_tcp != b->has_listen_tcp || (a->has_listen_tcp &&
	    (a->has_listen_tcp_addr != b->has_listen_tcp_addr ||
	    !util_addr_equal(&a->listen_tcp_addr, &b->listen_tcp_addr) ||
	    a->listen_tcp_port != b->listen_tcp_port)))
		d |= CONF_IFACE_DIFF_LISTEN_TCP;
	return d;
}

uint32_t
conf_diff_peer(const struct conf_peer *a, const struct conf_peer *b)
{
	uint32_t d = 0;

	if (strcmp(a->name, b->name) != 0)
		d |= CONF_PEER_DIFF_SECTION;
	if (a->has_fingerprint != b->has_fingerprint || (a->has_fingerprint &&
	    memcmp(a->fingerprint, b->fingerprint, sizeof(a->fingerprint)) != 0))
		d |= CONF_PEER_DIFF_FINGERPRINT;
	if (!str_equal(a->ca, b->ca))
		d |= CONF_PEER_DIFF_CA;
	if (!str_equal(a->cert_name, b->cert_name))
		d |= CONF_PEER_DIFF_NAME;
	if (!str_equal(a->endpoint_host, b->endpoint_host) ||
	    (a->endpoint_host && a->endpoint_port != b->endpoint_port))
		d |= CONF_PEER_DIFF_ENDPOINT;
	if (!address_list_equal(a->address, a->n_address, b->address, b->n_address))
		d |= CONF_PEER_DIFF_ADDRESS;
	if (!prefix_set_equal(a->allowed_ips, a->n_allowed_ips, b->allowed_ips,
	    b->n_allowed_ips))
		d |= CONF_PEER_DIFF_ALLOWED_IPS;
	if (a->keepalive != b->keepalive)
		d |= CONF_PEER_DIFF_KEEPALIVE;
	/* The same file may hold another key now (a reload after genpsk). */
	if (!str_equal(a->psk_file, b->psk_file) || a->has_psk != b->has_psk ||
	    (a->has_psk && memcmp(a->psk, b->psk, sizeof(a->psk)) != 0))
		d |= CONF_PEER_DIFF_PRESHARED_KEY;
	if (!str_equal(a->endpoint_tcp_host, b->endpoint_tcp_host) ||
	    (a->endpoint_tcp_host && a->endpoint_tcp_port != b->endpoint_tcp_port))
		d |= CONF_PEER_DIFF_ENDPOINT_TCP;
	if (!str_equal(a->proxy_host, b->proxy_host) ||
	    (a->proxy_host && a->proxy_port != b->proxy_port))
		d |= CONF_PEER_DIFF_PROXY;
	if (!str_equal(a->sni, b->sni))
		d |= CONF_PEER_DIFF_SNI;
	/* The same file may hold other credentials now. */
	if (!str_equal(a->proxy_auth_file, b->proxy_auth_file) ||
	    !str_equal(a->proxy_auth, b->proxy_auth))
		d |= CONF_PEER_DIFF_PROXY_CREDENTIALS;
	if (a->post_quantum != b->post_quantum)
		d |= CONF_PEER_DIFF_POST_QUANTUM;
	return d;
}

static const char *
diff_fmt(const char *const *keys, size_t n_keys, uint32_t what, char *buf, size_t len)
{
	size_t i, used = 0;
	int w;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < n_keys && used < len; i++) {
		if (!(what & (1u << i)))
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", keys[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

const char *
conf_diff_iface_fmt(uint32_t what, char *buf, size_t len)
{
	return diff_fmt(iface_keys, ARRAY_SIZE(iface_keys), what, buf, len);
}

const char *
conf_diff_peer_fmt(uint32_t what, char *buf, size_t len)
{
	return diff_fmt(peer_keys, ARRAY_SIZE(peer_keys), what, buf, len);
}

static const struct conf_peer *
peer_find(const struct conf *c, const char *name)
{
	size_t x;

	for (x = 0; x < c->n_peers; x++)
		if (strcmp(c->peers[x].name, name) == 0)
			return &c->peers[x];
	return NULL;
}

bool
conf_equal(const struct conf *a, const struct conf *b)
{
	const struct conf_peer *p;
	size_t x;

	if (conf_diff_iface(&a->iface, &b->iface) || a->n_peers != b->n_peers)
		return false;
	for (x = 0; x < a->n_peers; x++)
		if (conf_diff_peer(&a->peers[x], &b->peers[x]))
			break;
	if (x == a->n_peers)
		return true;
	for (x = 0; x < a->n_peers; x++) {
		p = peer_find(b, a->peers[x].name);
		if (!p || conf_diff_peer(&a->peers[x], p))
			return false;
		p = peer_find(a, b->peers[x].name);
		if (!p || conf_diff_peer(&b->peers[x], p))
			return false;
	}
	return true;
}
