/* conf_print.c - the canonical text of a configuration (conf_diff.c says
 * when two are equal).
 *
 * Canonical: [interface] first, then the peers in file order; keys in a fixed
 * order; every key that has a default is printed with its value; keys that
 * are unset and have no default are left out; one list value per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "log.h"
#include "util.h"

static void
conf_kv(FILE *b, const char *key, const char *value)
{
	fprintf(b, "%-11s = %s\n", key, value);
}

static void
conf_kv_uint(FILE *b, const char *key, unsigned long long v)
{
	fprintf(b, "%-11s = %llu\n", key, v);
}

static void
conf_kv_opt(FILE *b, const char *key, const char *value)
{
	if (value)
		conf_kv(b, key, value);
}

/* Host prefixes print as a bare address: the peer "address" form. */
static void
conf_kv_prefixes(FILE *b, const char *key, const struct conf_prefix *p,
    size_t n, bool host)
{
	char a[UTIL_ADDRSTRLEN];
	size_t x;

	for (x = 0; x < n; x++) {
		if (host)
			util_addr_fmt(&p[x].p.addr, a, sizeof(a));
		else
			util_prefix_fmt(&p[x].p, a, sizeof(a));
		conf_kv(b, key, a);
	}
}

/* The largest of K, M, G that divides v exactly. */
static void
conf_kv_size(FILE *b, const char *key, uint64_t v)
{
	static const char suffix[] = "GMK";
	unsigned shift;

	for (shift = 30; shift >= 10; shift -= 10) {
		if (v && (v & ((1ULL << shift) - 1)) == 0) {
			fprintf(b, "%-11s = %llu%c\n", key,
			    (unsigned long long)(v >> shift), suffix[(30 - shift) / 10]);
			return;
		}
	}
	conf_kv_uint(b, key, v);
}

/* "ADDR:PORT" or "[ADDR]:PORT", the family as parsed. */
static void
conf_kv_addrport(FILE *b, const char *key, const struct ipaddr *addr, uint16_t port)
{
	char a[UTIL_ADDRSTRLEN];

	fprintf(b, addr->family == AF_INET6 ? "%-11s = [%s]:%u\n" : "%-11s = %s:%u\n", key,
	    util_addr_fmt(addr, a, sizeof(a)), port);
}

/* HOST:PORT, an IPv6 address in brackets; nothing without a host. */
static void
conf_kv_hostport(FILE *b, const char *key, const char *scheme, const char *host, uint16_t port)
{
	if (host)
		fprintf(b, strchr(host, ':') ? "%-11s = %s[%s]:%u\n" : "%-11s = %s%s:%u\n", key,
		    scheme, host, port);
}

static void
conf_print_iface(FILE *b, const struct conf_iface *i)
{
	size_t x;

	fprintf(b, "[interface]\n");
	conf_kv(b, "name", i->name);
	conf_kv_prefixes(b, "address", i->address, i->n_address, false);
	if (!i->has_listen_addr)
		conf_kv_uint(b, "listen", i->listen_port);
	else
		conf_kv_addrport(b, "listen", &i->listen_addr, i->listen_port);
	conf_kv_opt(b, "private-key", i->private_key);
	conf_kv_opt(b, "certificate", i->certificate);
	conf_kv_opt(b, "keylog-file", i->keylog_file);
	if (i->mtu)
		conf_kv_uint(b, "mtu", i->mtu);
	else
		conf_kv(b, "mtu", "auto");
	conf_kv_uint(b, "path-mtu", i->path_mtu);
	conf_kv_opt(b, "user", i->user);
	conf_kv(b, "encryption", i->encryption == CONF_ENC_NONE ? "none" : "dtls");
	conf_kv(b, "offload", i->offload == CONF_OFFLOAD_OFF ? "off" : "auto");
	conf_kv(b, "threads", i->threads == CONF_THREADS_ON ? "on" :
	    i->threads == CONF_THREADS_OFF ? "off" : "auto");
	conf_kv(b, "log-level", log_level_name((enum log_level)i->log_level));
	conf_kv(b, "control", i->control ? i->control : CONF_DEFAULT_CONTROL);
	/* Off is the absence of an address: both keys only when they matter. */
	if (i->has_metrics)
		conf_kv_addrport(b, "metrics", &i->metrics_addr, i->metrics_port);
	if (i->has_metrics || i->metrics_allow_remote)
		conf_kv(b, "metrics-allow-remote", i->metrics_allow_remote ? "yes" : "no");
	conf_kv_opt(b, "metrics-token-file", i->metrics_token_file);
	conf_kv_uint(b, "rekey-time", i->rekey_seconds);
	if (i->session_max_age)
		conf_kv_uint(b, "session-max-age", i->session_max_age);
	conf_kv_size(b, "rekey-bytes", i->rekey_bytes);
	conf_kv_size(b, "rekey-records", i->rekey_records);
	if (i->fwmark)
		fprintf(b, "%-11s = 0x%x\n", "fwmark", (unsigned)i->fwmark);
	else
		conf_kv(b, "fwmark", "off");
	if (i->table == CONF_TABLE_NUMBER)
		conf_kv_uint(b, "table", i->table_number);
	else
		conf_kv(b, "table", i->table == CONF_TABLE_OFF ? "off" : "auto");
	conf_kv(b, "fail-open", i->fail_open ? "yes" : "no");
	if (i->server_id)
		conf_kv_uint(b, "server-id", i->server_id);
	conf_kv_prefixes(b, "dns", i->dns, i->n_dns, true);
	for (x = 0; x < i->n_dns_search; x++)
		conf_kv(b, "dns-search", i->dns_search[x]);
	if (i->has_listen_tcp && !i->has_listen_tcp_addr)
		conf_kv_uint(b, "listen-tcp", i->listen_tcp_port);
	else if (i->has_listen_tcp)
		conf_kv_addrport(b, "listen-tcp", &i->listen_tcp_addr, i->listen_tcp_port);
}

static void
conf_print_peer(FILE *b, const struct conf_peer *p)
{
	char hex[2 * sizeof(p->fingerprint) + 1];

	fprintf(b, "\n[peer %s]\n", p->name);
	if (p->has_fingerprint) {
		util_hex(p->fingerprint, sizeof(p->fingerprint), hex);
		fprintf(b, "%-11s = sha256:%s\n", "fingerprint", hex);
	}
	conf_kv_opt(b, "ca", p->ca);
	conf_kv_opt(b, "name", p->cert_name);
	conf_kv_hostport(b, "endpoint", "", p->endpoint_host, p->endpoint_port);
	conf_kv_hostport(b, "endpoint-tcp", "", p->endpoint_tcp_host, p->endpoint_tcp_port);
	conf_kv_hostport(b, "proxy", "http://", p->proxy_host, p->proxy_port);
	conf_kv_opt(b, "proxy-credentials", p->proxy_auth_file);
	conf_kv_opt(b, "sni", p->sni);
	conf_kv_prefixes(b, "address", p->address, p->n_address, true);
	conf_kv_prefixes(b, "allowed-ips", p->allowed_ips, p->n_allowed_ips, false);
	conf_kv_uint(b, "keepalive", p->keepalive);
	conf_kv_opt(b, "preshared-key", p->psk_file);
	if (p->post_quantum != CONF_PQ_AUTO)
		fprintf(b, "%-11s = %s\n", "post-quantum",
		    p->post_quantum == CONF_PQ_REQUIRED ? "required" : "off");
}

char *
conf_print(const struct conf *c)
{
	char *out = NULL;
	size_t x, len;
	FILE *f;
	int bad;

	if (!(f = open_memstream(&out, &len)))
		return NULL;
	conf_print_iface(f, &c->iface);
	for (x = 0; x < c->n_peers; x++)
		conf_print_peer(f, &c->peers[x]);
	bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		free(out);
		return NULL;
	}
	return out;
}
