/* conf.c - load a configuration file, check what the parser cannot see
 * (conflicts between sections, keys the encryption mode requires, the key
 * files), and derive the TUN MTU. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "util.h"

#define CONF_FILE_MAX (64 * 1024 * 1024)

const char *
conf_error_fmt(const struct conf_error *e, char *buf, size_t len)
{
	if (e->line > 0)
		snprintf(buf, len, "%s:%d: %s", e->file, e->line, e->msg);
	else
		snprintf(buf, len, "%s: %s", e->file, e->msg);
	return buf;
}

static int conf_verr(const struct conf *, struct conf_error *, int, const char *, ...)
    __attribute__((format(printf, 4, 5)));

static int
conf_verr(const struct conf *c, struct conf_error *err, int line, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		util_strlcpy(err->file, conf_line_of(c, line, &err->line), sizeof(err->file));
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

#define CONF_AT_MAX 300         /* a file name of struct conf_error, a line */

/* Where another section's line is, for a message: "line N" in the main
 * file, "FILE:N" in an included one. */
static const char *
conf_at(const struct conf *c, int line, char *buf, size_t len)
{
	int local;
	const char *file = conf_line_of(c, line, &local);

	if (file == c->file || !c->file || strcmp(file, c->file) == 0)
		snprintf(buf, len, "line %d", local);
	else
		snprintf(buf, len, "%s:%d", file, local);
	return buf;
}

/* 127.0.0.0/8, ::1, and 127.0.0.0/8 mapped into IPv6. */
static bool
conf_loopback(const struct ipaddr *a)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (a->family == AF_INET)
		return (ntohl(a->v4.s_addr) >> 24) == 127;
	if (IN6_IS_ADDR_LOOPBACK(&a->v6))
		return true;
	return memcmp(a->v6.s6_addr, mapped, sizeof(mapped)) == 0 && a->v6.s6_addr[12] == 127;
}

/* The metrics endpoint answers anyone who reaches it, without
 * authentication: beyond this host only when the file says so. */
static int
conf_validate_metrics(const struct conf *c, struct conf_error *err)
{
	const struct conf_iface *i = &c->iface;
	union sockaddr_union sa;
	char a[UTIL_ADDRSTRLEN];

	if (!i->has_metrics || i->metrics_allow_remote || conf_loopback(&i->metrics_addr))
		return 0;
	util_sa_from_addr(&sa, &i->metrics_addr, i->metrics_port);
	return conf_verr(c, err, i->metrics_line, "metrics: %s is not a loopback address, and "
	    "the endpoint has no authentication: use 127.0.0.1 or [::1] (and a proxy or an "
	    "SSH tunnel), or set metrics-allow-remote = yes", util_sa_fmt(&sa, a, sizeof(a)));
}

static int
conf_validate_iface(const struct conf *c, struct conf_error *err)
{
	const struct conf_iface *i = &c->iface;
	char a[UTIL_ADDRSTRLEN];
	size_t x, y;

	if (i->n_address == 0)
		return conf_verr(c, err, i->line, "missing key 'address' in [interface]");
	for (x = 1; x < i->n_address; x++)
		for (y = 0; y < x; y++)
			if (util_addr_equal(&i->address[x].p.addr, &i->address[y].p.addr))
				return conf_verr(c, err, i->address[x].line,
				    "address: %s is listed twice in [interface] "
				    "(first at line %d)",
				    util_addr_fmt(&i->address[x].p.addr, a, sizeof(a)),
				    i->address[y].line);
	/* Linux turns IPv6 off on a link below the IPv6 minimum MTU. */
	for (x = 0; x < i->n_address; x++)
		if (i->address[x].p.addr.family == AF_INET6 && conf_tun_mtu(c) < 1280)
			return conf_verr(c, err, i->address[x].line,
			    "address: %s needs a TUN MTU of at least 1280, but the MTU "
			    "is %u (raise mtu or path-mtu)",
			    util_addr_fmt(&i->address[x].p.addr, a, sizeof(a)), conf_tun_mtu(c));
	if (i->encryption == CONF_ENC_DTLS && !i->private_key)
		return conf_verr(c, err, i->line, "missing key 'private-key' in "
		    "[interface] (required with encryption dtls)");
	if (i->encryption == CONF_ENC_DTLS && !i->certificate)
		return conf_verr(c, err, i->line, "missing key 'certificate' in "
		    "[interface] (required with encryption dtls)");
	if (i->encryption == CONF_ENC_NONE && i->server_id)
		return conf_verr(c, err, i->server_id_line, "server-id: needs encryption dtls "
		    "(without it there are no session IDs to route by)");
	if (i->n_dns_search && !i->n_dns)
		return conf_verr(c, err, i->dns_search_line, "dns-search: needs dns, the name "
		    "servers that answer for the domains");
	if (i->encryption == CONF_ENC_NONE && i->has_listen_tcp)
		return conf_verr(c, err, i->listen_tcp_line, "listen-tcp: needs encryption "
		    "dtls (the TCP transport is TLS)");
	return conf_validate_metrics(c, err);
}

/* Checks that compare a peer with every earlier one sort the peers by the
 * compared key instead, so that tens of thousands of peers are checked in
 * O(n log n): first[k][i] is the first peer before peer i (in file order)
 * whose key k equals i's, or CONF_NONE. */
enum conf_same { CONF_SAME_NAME, CONF_SAME_FINGERPRINT, CONF_SAME_CA, CONF_SAME_N };
#define CONF_NONE SIZE_MAX

/* Whether peer p has key k (the others take no part in the comparison). */
static bool
conf_same_has(enum conf_same k, const struct conf_peer *p)
{
	switch (k) {
	case CONF_SAME_FINGERPRINT:
		return p->has_fingerprint;
	case CONF_SAME_CA:
		return p->ca && p->cert_name;
	default:
		return true;
	}
}

static int
conf_same_cmp(enum conf_same k, const struct conf_peer *a, const struct conf_peer *b)
{
	int r;

	switch (k) {
	case CONF_SAME_FINGERPRINT:
		return memcmp(a->fingerprint, b->fingerprint, sizeof(a->fingerprint));
	case CONF_SAME_CA:
		/* Names compare without case, as certificates' names do. */
		return (r = strcmp(a->ca, b->ca)) ? r : strcasecmp(a->cert_name, b->cert_name);
	default:
		return strcmp(a->name, b->name);
	}
}

struct conf_same_sort {
	const struct conf *c;
	enum conf_same k;
};

/* By key, then in file order: the first of a run of equals is the earliest. */
static int
conf_same_order(const void *a, const void *b, void *arg)
{
	const struct conf_same_sort *o = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int r = conf_same_cmp(o->k, &o->c->peers[x], &o->c->peers[y]);

	return r ? r : (x > y) - (x < y);
}

static void
conf_same_find(const struct conf *c, enum conf_same k, size_t *idx, size_t *first)
{
	struct conf_same_sort o = { c, k };
	size_t n = 0, x;

	for (x = 0; x < c->n_peers; x++) {
		first[x] = CONF_NONE;
		if (conf_same_has(k, &c->peers[x]))
			idx[n++] = x;
	}
	qsort_r(idx, n, sizeof(*idx), conf_same_order, &o);
	for (x = 1; x < n; x++)
		if (conf_same_cmp(k, &c->peers[idx[x - 1]], &c->peers[idx[x]]) == 0)
			first[idx[x]] = first[idx[x - 1]] == CONF_NONE ? idx[x - 1] :
			    first[idx[x - 1]];
}

/* How a peer proves who it is, and that it can be reached. */
static int
conf_validate_auth(const struct conf *c, const struct conf_peer *peer,
    size_t *const first[CONF_SAME_N], struct conf_error *err)
{
	char at[CONF_AT_MAX];
	size_t x;

	if (peer->has_fingerprint && peer->ca)
		return conf_verr(c, err, peer->ca_line, "ca: conflicts with "
		    "'fingerprint' in [peer %s] (use one of them)", peer->name);
	if (peer->ca && !peer->cert_name)
		return conf_verr(c, err, peer->line, "missing key 'name' in "
		    "[peer %s] (required with 'ca')", peer->name);
	if (peer->cert_name && !peer->ca)
		return conf_verr(c, err, peer->line, "key 'name' without 'ca' in "
		    "[peer %s]", peer->name);
	if (c->iface.encryption == CONF_ENC_DTLS && !peer->has_fingerprint &&
	    !peer->ca)
		return conf_verr(c, err, peer->line, "missing key 'fingerprint' or "
		    "'ca' in [peer %s] (required with encryption dtls)", peer->name);
	/* without a session ID a peer is known only by its endpoint */
	if (c->iface.encryption == CONF_ENC_NONE && !peer->endpoint_host)
		return conf_verr(c, err, peer->line, "missing key 'endpoint' in "
		    "[peer %s] (required with encryption none)", peer->name);
	/* The TCP transport is TLS, authenticated as DTLS is. */
	if (c->iface.encryption == CONF_ENC_NONE && peer->endpoint_tcp_host)
		return conf_verr(c, err, peer->endpoint_tcp_line, "endpoint-tcp: needs "
		    "encryption dtls (the TCP transport is TLS) in [peer %s]", peer->name);
	if (peer->proxy_auth_file && !peer->proxy_host)
		return conf_verr(c, err, peer->proxy_auth_line, "proxy-credentials: without "
		    "'proxy' in [peer %s] (they are the proxy's)", peer->name);
	if (peer->proxy_host && !peer->endpoint_tcp_host)
		return conf_verr(c, err, peer->proxy_line, "proxy: without 'endpoint-tcp' "
		    "in [peer %s] (the proxy reaches the TCP transport)", peer->name);
	if (peer->sni && !peer->endpoint_tcp_host)
		return conf_verr(c, err, peer->sni_line, "sni: without 'endpoint-tcp' "
		    "in [peer %s] (the name is sent when connecting there)", peer->name);
	/* One certificate must name one peer: the same CA file and name
	 * twice would let the handshake pick either. */
	if ((x = first[CONF_SAME_CA][peer - c->peers]) != CONF_NONE)
		return conf_verr(c, err, peer->line, "peer '%s': same "
		    "ca and name as peer '%s' (%s)", peer->name,
		    c->peers[x].name, conf_at(c, c->peers[x].line, at, sizeof(at)));
	if ((x = first[CONF_SAME_FINGERPRINT][peer - c->peers]) != CONF_NONE)
		return conf_verr(c, err, peer->line, "peer '%s': same "
		    "fingerprint as peer '%s' (%s)", peer->name,
		    c->peers[x].name, conf_at(c, c->peers[x].line, at, sizeof(at)));
	return 0;
}

static int
conf_validate_address(const struct conf *c, const struct conf_peer *peer,
    const struct conf_prefix *pa, struct conf_error *err)
{
	const struct conf_iface *i = &c->iface;
	char a[UTIL_ADDRSTRLEN];
	bool inside = false;
	size_t x;

	for (x = 0; x < i->n_address; x++) {
		if (util_addr_equal(&i->address[x].p.addr, &pa->p.addr))
			return conf_verr(c, err, pa->line, "peer '%s': address %s is "
			    "an address of [interface]", peer->name,
			    util_addr_fmt(&pa->p.addr, a, sizeof(a)));
		if (util_prefix_contains(&i->address[x].p, &pa->p.addr))
			inside = true;
	}
	if (!inside)
		return conf_verr(c, err, pa->line, "peer '%s': address %s is not "
		    "inside any interface prefix", peer->name,
		    util_addr_fmt(&pa->p.addr, a, sizeof(a)));
	return 0;
}

struct conf_claim {
	const struct conf_peer *peer;
	const struct conf_prefix *p;
	const char *key;
};

static void
conf_claim_fmt(const struct conf_claim *cl, char *buf, size_t len)
{
	if (cl->p->p.len == util_addr_len(cl->p->p.addr.family) * 8)
		util_addr_fmt(&cl->p->p.addr, buf, len);
	else
		util_prefix_fmt(&cl->p->p, buf, len);
}

/* Whether two claims may not both stand: the same address or overlapping
 * prefixes of two peers, or an exact repeat within one peer. */
static bool
conf_claims_clash(const struct conf_claim *a, const struct conf_claim *b)
{
	return util_prefix_overlap(&a->p->p, &b->p->p) &&
	    (a->peer != b->peer || a->p->p.len == b->p->p.len);
}

static bool
conf_claim_contains(const struct conf_claim *outer, const struct conf_claim *inner)
{
	return outer->p->p.len <= inner->p->p.len &&
	    util_prefix_contains(&outer->p->p, &inner->p->p.addr);
}

/* Claims by address, then prefix length, then file order: a prefix comes
 * before every prefix it contains, and they follow it in one run (host bits
 * are zero, conf_parse.c). */
static int
conf_claim_order(const void *a, const void *b)
{
	const struct conf_claim *x = *(const struct conf_claim *const *)a;
	const struct conf_claim *y = *(const struct conf_claim *const *)b;
	const struct ipprefix *p = &x->p->p, *q = &y->p->p;
	int r;

	if (p->addr.family != q->addr.family)
		return p->addr.family < q->addr.family ? -1 : 1;
	if ((r = memcmp(p->addr.b, q->addr.b, sizeof(p->addr.b))) != 0)
		return r;
	if (p->len != q->len)
		return p->len < q->len ? -1 : 1;
	return (x > y) - (x < y);
}

/* The first claim (in file order) that clashes with an earlier one, or n.
 * One pass over the claims in conf_claim_order keeps the chain of those
 * that contain the current one; only they can clash with it.  Claims at or
 * after the best answer so far cannot improve it and are left out, which
 * also keeps the chain short when one prefix is repeated many times. */
static size_t
conf_claims_first_clash(const struct conf_claim *cl, size_t n, const struct conf_claim **by,
    const struct conf_claim **chain)
{
	size_t best = n, depth = 0, x, y, k;

	for (x = 0; x < n; x++)
		by[x] = &cl[x];
	qsort(by, n, sizeof(*by), conf_claim_order);
	for (x = 0; x < n; x++) {
		k = (size_t)(by[x] - cl);
		while (depth && !conf_claim_contains(chain[depth - 1], by[x]))
			depth--;
		if (k >= best)
			continue;
		for (y = 0; y < depth; y++) {
			size_t later = k > (size_t)(chain[y] - cl) ? k : (size_t)(chain[y] - cl);

			if (later < best && conf_claims_clash(chain[y], by[x]))
				best = later;
		}
		if (k < best)
			chain[depth++] = by[x];
	}
	return best;
}

/* The same address or overlapping prefixes must not lead to two peers;
 * within one peer only an exact repeat is an error.  The message points at
 * the first claim, in file order, that clashes with an earlier one, and
 * names the first such earlier one. */
static int
conf_validate_claims(const struct conf *c, struct conf_error *err)
{
	const struct conf_claim **by;
	struct conf_claim *cl;
	size_t n = 0, x, y, k;
	char a[UTIL_ADDRSTRLEN + 4], b[UTIL_ADDRSTRLEN + 4], at[CONF_AT_MAX];
	int r = 0;

	for (x = 0; x < c->n_peers; x++)
		n += c->peers[x].n_address + c->peers[x].n_allowed_ips;
	if (n == 0)
		return 0;
	cl = calloc(n, sizeof(*cl));
	by = calloc(2 * n, sizeof(*by));
	if (!cl || !by) {
		free(cl);
		free(by);
		return -ENOMEM;
	}
	n = 0;
	for (x = 0; x < c->n_peers; x++) {
		const struct conf_peer *peer = &c->peers[x];
		size_t ia = 0, ip = 0;

		/* merge the two lists by line: the claims stay in file order */
		while (ia < peer->n_address || ip < peer->n_allowed_ips) {
			bool take_a = ip == peer->n_allowed_ips ||
			    (ia < peer->n_address &&
			    peer->address[ia].line <= peer->allowed_ips[ip].line);
			cl[n].peer = peer;
			cl[n].key = take_a ? "address" : "allowed-ips";
			cl[n].p = take_a ? &peer->address[ia++] : &peer->allowed_ips[ip++];
			n++;
		}
	}
	if ((k = conf_claims_first_clash(cl, n, by, by + n)) < n) {
		for (y = 0; !conf_claims_clash(&cl[y], &cl[k]); y++)
			;
		conf_claim_fmt(&cl[k], a, sizeof(a));
		conf_claim_fmt(&cl[y], b, sizeof(b));
		if (cl[k].peer != cl[y].peer && cl[k].p->p.len == cl[y].p->p.len)
			r = conf_verr(c, err, cl[k].p->line, "peer '%s': %s %s "
			    "is also claimed by peer '%s' (%s)",
			    cl[k].peer->name, cl[k].key, a, cl[y].peer->name,
			    conf_at(c, cl[y].p->line, at, sizeof(at)));
		else if (cl[k].peer != cl[y].peer)
			r = conf_verr(c, err, cl[k].p->line, "peer '%s': %s %s "
			    "overlaps %s of peer '%s' (%s)",
			    cl[k].peer->name, cl[k].key, a, b, cl[y].peer->name,
			    conf_at(c, cl[y].p->line, at, sizeof(at)));
		else
			r = conf_verr(c, err, cl[k].p->line, "peer '%s': %s %s "
			    "is listed twice (first at %s)",
			    cl[k].peer->name, cl[k].key, a, conf_at(c, cl[y].p->line, at, sizeof(at)));
	}
	free(by);
	free(cl);
	return r;
}

/* A full tunnel uses its fwmark as its table number: not one of the
 * kernel's own tables (253 default, 254 main, 255 local). */
static int
conf_validate_fwmark(const struct conf *c, struct conf_error *err)
{
	const struct conf_iface *i = &c->iface;

	if (!i->fwmark || i->fwmark < CONF_TABLE_MAIN - 1 || i->fwmark > CONF_TABLE_LOCAL ||
	    (!conf_full_tunnel(c, AF_INET) && !conf_full_tunnel(c, AF_INET6)))
		return 0;
	return conf_verr(c, err, i->fwmark_line, "fwmark: %u is the number of one of the "
	    "kernel's own routing tables, and with table = auto and a prefix of length 0 "
	    "the fwmark also numbers the tunnel's table; choose another fwmark", i->fwmark);
}

static int
conf_validate_peers(const struct conf *c, size_t *const first[CONF_SAME_N],
    struct conf_error *err)
{
	char at[CONF_AT_MAX];
	size_t x, y;
	int r;

	for (x = 0; x < c->n_peers; x++) {
		const struct conf_peer *peer = &c->peers[x];

		if ((y = first[CONF_SAME_NAME][x]) != CONF_NONE)
			return conf_verr(c, err, peer->line, "duplicate peer "
			    "name '%s' (first at %s)", peer->name,
			    conf_at(c, c->peers[y].line, at, sizeof(at)));
		if ((r = conf_validate_auth(c, peer, first, err)) < 0)
			return r;
		if (peer->n_address == 0 && peer->n_allowed_ips == 0)
			return conf_verr(c, err, peer->line, "missing key 'address' "
			    "or 'allowed-ips' in [peer %s]", peer->name);
		for (y = 0; y < peer->n_address; y++)
			if ((r = conf_validate_address(c, peer, &peer->address[y],
			    err)) < 0)
				return r;
	}
	return 0;
}

int
conf_validate(const struct conf *c, struct conf_error *err)
{
	size_t *mem, *first[CONF_SAME_N], *idx;
	int r, k;

	if ((r = conf_validate_iface(c, err)) < 0)
		return r;
	if (!(mem = calloc((CONF_SAME_N + 1) * (c->n_peers ? c->n_peers : 1), sizeof(*mem)))) {
		conf_verr(c, err, 0, "out of memory");
		return -ENOMEM;
	}
	idx = mem;
	for (k = 0; k < CONF_SAME_N; k++) {
		first[k] = mem + (size_t)(k + 1) * c->n_peers;
		conf_same_find(c, (enum conf_same)k, idx, first[k]);
	}
	r = conf_validate_peers(c, first, err);
	free(mem);
	if (r < 0)
		return r;
	if ((r = conf_validate_claims(c, err)) == -ENOMEM)
		conf_verr(c, err, 0, "out of memory");
	if (r == 0)
		r = conf_validate_fwmark(c, err);
	return r;
}

/* A relative key path is taken relative to the directory of the file. */
static int
conf_resolve(char **path, const char *dir)
{
	char *s;

	if (!*path || (*path)[0] == '/')
		return 0;
	if (asprintf(&s, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
	    *path) < 0)
		return -ENOMEM;
	free(*path);
	*path = s;
	return 0;
}

/* The directory of file, absolute (malloc'd); NULL and errno. */
static char *
conf_dir_of(const char *file)
{
	const char *slash = strrchr(file, '/');
	char *dir = NULL, cwd[4096];

	if (file[0] == '/')
		dir = strndup(file, slash == file ? 1 : (size_t)(slash - file));
	else if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	else if (!slash)
		dir = strdup(cwd);
	else if (asprintf(&dir, "%s%s%.*s", cwd, strcmp(cwd, "/") ? "/" : "",
	    (int)(slash - file), file) < 0)
		dir = NULL;
	if (!dir)
		errno = ENOMEM;
	return dir;
}

static int
conf_resolve_all(struct conf *c, const char *file)
{
	char *dir;
	size_t x;
	int r;

	if (!(dir = conf_dir_of(file)))
		return -errno;
	r = -ENOMEM;
	if (conf_resolve(&c->iface.private_key, dir) < 0 ||
	    conf_resolve(&c->iface.certificate, dir) < 0 ||
	    conf_resolve(&c->iface.keylog_file, dir) < 0 ||
	    conf_resolve(&c->iface.metrics_token_file, dir) < 0)
		goto out;
	for (x = 0; x < c->n_peers; x++)
		if (conf_resolve(&c->peers[x].ca, dir) < 0 ||
		    conf_resolve(&c->peers[x].psk_file, dir) < 0 ||
		    conf_resolve(&c->peers[x].proxy_auth_file, dir) < 0)
			goto out;
	r = 0;
out:
	free(dir);
	return r;
}

/* The key file exists, is a regular file and can be read by us. */
/* Whether path (its directory the first dlen bytes) lies beside the
 * configuration file itself, as a relative path of a file copied to
 * /etc/toud/NAME.conf does. */
static bool
conf_beside_file(const struct conf *c, const char *path, int dlen)
{
	const char *slash = c->file ? strrchr(c->file, '/') : NULL;

	return slash && (int)(slash - c->file) == dlen && strncmp(c->file, path,
	    (size_t)dlen) == 0;
}

static int
conf_check_file(const struct conf *c, const char *key, const char *path, int line,
    struct stat *st, struct conf_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int e;

	if (fd < 0) {
		const char *slash = strrchr(path, '/');
		int dlen = slash && slash != path ? (int)(slash - path) : 1;
		bool pair = strcmp(key, "private-key") == 0 ||
		    strcmp(key, "certificate") == 0;

		e = errno;
		/* The two start failures of a new installation, with the fix.
		 * But a key beside the file (a file copied to /etc/toud/NAME.conf,
		 * whose relative paths now start there) most likely exists
		 * elsewhere: a new one would be a new identity. */
		if (e == ENOENT && pair && !conf_beside_file(c, path, dlen))
			return conf_verr(c, err, line, "%s: cannot open '%s': %s; create the "
			    "key pair with 'touctl genkey %.*s'", key, path, strerror(e), dlen,
			    path);
		if (e == ENOENT && pair)
			return conf_verr(c, err, line, "%s: cannot open '%s': %s; point it at this "
			    "node's key pair, or copy the pair there ('touctl genkey %.*s' makes a "
			    "new identity, which every peer must pin anew)", key, path, strerror(e),
			    dlen, path);
		if (e == EACCES && c->iface.user)
			return conf_verr(c, err, line, "%s: cannot open '%s': %s; it must be "
			    "readable by user %s: 'chown -R %s: %.*s'", key, path, strerror(e),
			    c->iface.user, c->iface.user, dlen, path);
		return conf_verr(c, err, line, "%s: cannot open '%s': %s", key, path,
		    strerror(e));
	}
	if (fstat(fd, st) < 0) {
		e = errno;
		close(fd);
		return conf_verr(c, err, line, "%s: cannot stat '%s': %s", key, path,
		    strerror(e));
	}
	close(fd);
	if (!S_ISREG(st->st_mode))
		return conf_verr(c, err, line, "%s: '%s' is not a regular file", key,
		    path);
	return 0;
}

static int
conf_check_files(const struct conf *c, struct conf_error *err, conf_warn_fn *warn,
    void *warn_arg)
{
	const struct conf_iface *i = &c->iface;
	struct conf_error w;
	struct stat key_st, st;
	size_t x;
	int r;

	if (i->private_key && (r = conf_check_file(c, "private-key", i->private_key,
	    i->private_key_line, &key_st, err)) < 0)
		return r;
	if (i->certificate && (r = conf_check_file(c, "certificate", i->certificate,
	    i->certificate_line, &st, err)) < 0)
		return r;
	if (i->metrics_token_file && (r = conf_check_file(c, "metrics-token-file",
	    i->metrics_token_file, i->metrics_token_line, &st, err)) < 0)
		return r;
	for (x = 0; x < c->n_peers; x++)
		if (c->peers[x].ca && (r = conf_check_file(c, "ca", c->peers[x].ca,
		    c->peers[x].ca_line, &st, err)) < 0)
			return r;
	/* warn only once everything else passed: an error stays the one line */
	if (i->private_key && (key_st.st_mode & (S_IRGRP | S_IROTH)) && warn) {
		conf_verr(c, &w, i->private_key_line, "private key '%s' is readable "
		    "by group or others; chmod 600 it", i->private_key);
		warn(&w, warn_arg);
	}
	return 0;
}

/* All of fd (closed here) into *text; err names path. */
static int
conf_read_fd(int fd, const char *path, char **text, size_t *len, struct conf_error *err)
{
	size_t cap = 4096, n = 0;
	char *buf = NULL, *nb;
	ssize_t got;
	int e = 0;

	util_strlcpy(err->file, path, sizeof(err->file));
	err->line = 0;
	for (;;) {
		if (n == cap || !buf) {
			cap = buf ? cap * 2 : cap;
			if (!(nb = realloc(buf, cap))) {
				e = ENOMEM;
				snprintf(err->msg, sizeof(err->msg), "out of memory");
				goto out;
			}
			buf = nb;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			e = errno;
			snprintf(err->msg, sizeof(err->msg), "cannot read: %s",
			    strerror(e));
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > CONF_FILE_MAX) {
			e = EFBIG;
			snprintf(err->msg, sizeof(err->msg), "file larger than 64 MiB");
			goto out;
		}
	}
out:
	close(fd);
	if (e) {
		free(buf);
		return -e;
	}
	*text = buf;
	*len = n;
	return 0;
}

static int
conf_read(const char *path, char **text, size_t *len, struct conf_error *err)
{
	int fd, e;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
		e = errno;
		util_strlcpy(err->file, path, sizeof(err->file));
		err->line = 0;
		snprintf(err->msg, sizeof(err->msg), "cannot open: %s", strerror(e));
		return -e;
	}
	return conf_read_fd(fd, path, text, len, err);
}

/* Who may own an included file or a directory above it: root, the user
 * reading it (root at start, toud's user at a reload) and toud's user. */
static bool
conf_include_owner_ok(uid_t uid, uid_t owner)
{
	return uid == 0 || uid == geteuid() || uid == owner;
}

/* Why a directory on the way to an included file lets someone other
 * than root and toud's user change what toud reads, or NULL.  parent:
 * the file's own directory, where even a sticky bit does not help (a
 * stranger could add a file the pattern matches); above it a sticky,
 * world-writable directory such as /tmp lets no one else rename ours. */
static const char *
conf_include_dir_unfit(const struct stat *st, uid_t owner, bool parent, const char **fix)
{
	*fix = "chown root:";
	if (!conf_include_owner_ok(st->st_uid, owner))
		return "belongs to another user (it must be root's or toud's own)";
	*fix = "chmod go-w";
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && (parent || !(st->st_mode & S_ISVTX)))
		return "is writable by its group or others";
	return NULL;
}

/* The included file's directory dir (absolute, no symbolic links) and
 * every one above it, up to /, each fit for conf_include_dir_unfit(). */
static int
conf_include_check_dirs(const struct conf *c, const char *dir, uid_t owner,
    int include_line, struct conf_error *err)
{
	char *d = strdup(dir), *slash;
	const char *why, *fix;
	struct stat st;
	bool parent = true;
	int r = 0;

	if (!d)
		return conf_verr(c, err, include_line, "include: out of memory");
	for (;;) {
		if (lstat(d, &st) < 0) {
			r = conf_verr(c, err, include_line, "include: cannot stat "
			    "directory '%s': %s", d, strerror(errno));
			break;
		}
		if ((why = conf_include_dir_unfit(&st, owner, parent, &fix)) != NULL) {
			r = conf_verr(c, err, include_line, "include: directory '%s' %s; "
			    "refused: '%s %s'", d, why, fix, d);
			break;
		}
		parent = false;
		if (strcmp(d, "/") == 0)
			break;
		slash = strrchr(d, '/');
		if (slash == d)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	free(d);
	return r;
}

/* Open one included file, refusing what could block or be changed by
 * someone else: anything but a regular file (a FIFO is opened without
 * blocking, so it cannot stall a reload on the main loop, and then
 * refused); a symbolic link, unless include-follow-symlinks = yes; a
 * file or a directory above it writable by anyone but root and toud's
 * user.  The descriptor in *fd. */
static int
conf_include_open(const struct conf *c, const char *path, int include_line, int *fd,
    struct conf_error *err)
{
	const struct passwd *pw = c->iface.user ? getpwnam(c->iface.user) : NULL;
	uid_t owner = pw ? pw->pw_uid : (uid_t)-1;
	bool follow = c->iface.include_follow_symlinks;
	char *real = NULL, *dir = NULL, *slash;
	struct stat st;
	int r, e;

	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
	    (follow ? 0 : O_NOFOLLOW));
	if (*fd < 0) {
		e = errno;
		if (e == ELOOP && !follow)
			return conf_verr(c, err, include_line, "include: '%s' is a symbolic "
			    "link; refused: include the file it points to, or set "
			    "include-follow-symlinks = yes", path);
		return conf_verr(c, err, include_line, "include: cannot open '%s': %s",
		    path, strerror(e));
	}
	if (fstat(*fd, &st) < 0) {
		r = conf_verr(c, err, include_line, "include: cannot stat '%s': %s", path,
		    strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		r = conf_verr(c, err, include_line, "include: '%s' is not a regular file "
		    "(%s); refused", path, S_ISFIFO(st.st_mode) ? "a FIFO" :
		    S_ISDIR(st.st_mode) ? "a directory" : "a device or socket");
		goto fail;
	}
	if (!conf_include_owner_ok(st.st_uid, owner)) {
		r = conf_verr(c, err, include_line, "include: '%s' belongs to another user "
		    "(it must be root's or toud's own); refused: 'chown root: %s'", path,
		    path);
		goto fail;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		r = conf_verr(c, err, include_line, "include: '%s' is writable by its group "
		    "or others; refused: 'chmod go-w %s'", path, path);
		goto fail;
	}
	/* The directories the file is really in: through the link if one
	 * was followed, else the named file's own (its last component is
	 * not a link, O_NOFOLLOW saw to that). */
	if (follow)
		real = realpath(path, NULL);
	else if ((dir = conf_dir_of(path)) != NULL)
		real = realpath(dir, NULL);
	if (!real) {
		r = conf_verr(c, err, include_line, "include: cannot resolve '%s': %s", path,
		    strerror(errno));
		goto fail;
	}
	if (follow && (slash = strrchr(real, '/')) != NULL)
		slash[slash == real ? 1 : 0] = '\0';
	r = conf_include_check_dirs(c, real, owner, include_line, err);
	free(real);
	free(dir);
	if (r == 0)
		return 0;
fail:
	close(*fd);
	*fd = -1;
	return r;
}

/* What glob(3) could not read, for the message (errfunc has no argument
 * to carry it; configurations load on one thread). */
static struct {
	char path[256];
	int err;
} glob_failed;

static int
conf_glob_err(const char *path, int e)
{
	util_strlcpy(glob_failed.path, path, sizeof(glob_failed.path));
	glob_failed.err = e;
	return 1;
}

/* dir (taken literally: its *, ?, [ and \\ escaped) / pattern; NULL on
 * ENOMEM. */
static char *
conf_glob_join(const char *dir, const char *pattern)
{
	size_t n = strlen(dir), k = 0, i;
	char *s = malloc(2 * n + 1 + strlen(pattern) + 1);

	if (!s)
		return NULL;
	for (i = 0; i < n; i++) {
		if (strchr("*?[\\", dir[i]))
			s[k++] = '\\';
		s[k++] = dir[i];
	}
	if (strcmp(dir, "/") != 0)
		s[k++] = '/';
	strcpy(s + k, pattern);
	return s;
}

/* The peers of one included file; its relative key paths are relative to
 * its own directory. */
static int
conf_include_file(struct conf *c, const char *path, int include_line, struct conf_error *err)
{
	size_t first = c->n_peers, x;
	char *text = NULL, *dir;
	size_t len = 0;
	int fd, r;

	if ((r = conf_include_open(c, path, include_line, &fd, err)) < 0)
		return r;
	if ((r = conf_read_fd(fd, path, &text, &len, err)) < 0)
		return r;
	r = conf_parse_peers(c, path, include_line, text, len, err);
	free(text);
	if (r < 0)
		return r;
	if (!(dir = conf_dir_of(path))) {
		conf_verr(c, err, 0, "%s: %s", path, strerror(errno));
		return -ENOMEM;
	}
	for (x = first; x < c->n_peers && r == 0; x++)
		if (conf_resolve(&c->peers[x].ca, dir) < 0 ||
		    conf_resolve(&c->peers[x].psk_file, dir) < 0 ||
		    conf_resolve(&c->peers[x].proxy_auth_file, dir) < 0) {
			conf_verr(c, err, 0, "out of memory");
			r = -ENOMEM;
		}
	free(dir);
	return r;
}

/* Every file each include pattern of c matches, in glob order.  A pattern
 * that matches nothing adds nothing (a directory of peers may be empty);
 * a directory that cannot be read is an error. */
static int
conf_include_all(struct conf *c, const char *file, struct conf_error *err)
{
	char *dir = NULL, *pat;
	size_t k, x;
	int r = 0;

	if (c->iface.n_include && !(dir = conf_dir_of(file))) {
		r = -errno;
		conf_verr(c, err, 0, "cannot find the directory of %s: %s", file,
		    strerror(-r));
		return r;
	}
	for (k = 0; k < c->iface.n_include && r == 0; k++) {
		const struct conf_include *inc = &c->iface.include[k];
		glob_t g;
		int gr;

		if (inc->pattern[0] == '/')
			pat = strdup(inc->pattern);
		else
			pat = conf_glob_join(dir, inc->pattern);
		if (!pat) {
			conf_verr(c, err, inc->line, "out of memory");
			r = -ENOMEM;
			break;
		}
		memset(&glob_failed, 0, sizeof(glob_failed));
		gr = glob(pat, GLOB_ERR, conf_glob_err, &g);
		if (gr == GLOB_ABORTED)
			r = conf_verr(c, err, inc->line, "include: cannot read %s: %s",
			    glob_failed.path[0] ? glob_failed.path : pat,
			    strerror(glob_failed.err ? glob_failed.err : EIO));
		else if (gr == GLOB_NOSPACE)
			r = conf_verr(c, err, inc->line, "include: out of memory");
		for (x = 0; gr == 0 && x < g.gl_pathc && r == 0; x++)
			r = conf_include_file(c, g.gl_pathv[x], inc->line, err);
		if (gr == 0)
			globfree(&g);
		free(pat);
	}
	free(dir);
	return r;
}

int
conf_load(const char *path, bool check_files, struct conf **out,
    struct conf_error *err, conf_warn_fn *warn, void *warn_arg)
{
	struct conf_error dummy;
	struct conf *c = NULL;
	char *text = NULL;
	size_t len = 0;
	int r;

	*out = NULL;
	if (!err)
		err = &dummy;
	if ((r = conf_read(path, &text, &len, err)) < 0)
		return r;
	r = conf_parse(path, text, len, &c, err);
	free(text);
	if (r < 0)
		return r;
	if ((r = conf_include_all(c, path, err)) < 0)
		goto fail;
	/* Before validating: every file's relative paths resolved, so two
	 * peers naming one CA file from different directories compare. */
	if ((r = conf_resolve_all(c, path)) < 0) {
		conf_verr(c, err, 0, "cannot resolve relative key paths: %s",
		    strerror(-r));
		goto fail;
	}
	if ((r = conf_validate(c, err)) < 0)
		goto fail;
	if (check_files && (r = conf_check_files(c, err, warn, warn_arg)) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	conf_free(c);
	return r;
}

bool
conf_instance_valid(const char *name)
{
	return name[0] != '.' && conf_name_valid(name, CONF_NAME_MAX);
}

void
conf_instance_paths(const char *name, char *file, size_t file_len, char *sock,
    size_t sock_len)
{
	if (file)
		snprintf(file, file_len, "%s/%s.conf", CONF_INSTANCE_DIR, name);
	if (sock)
		snprintf(sock, sock_len, "%s/%s.sock", CONF_INSTANCE_CONTROL_DIR, name);
}

int
conf_instance_apply(struct conf *c, const char *instance, const char *sock,
    struct conf_error *err)
{
	char *s;

	/* Two instances from copies of one file differ in their device by
	 * default, as wg-quick@NAME's do; the port, which the peers' files
	 * name, is never made up (conf_instance_clash()). */
	if (!c->iface.name_line) {
		if (strlen(instance) >= sizeof(c->iface.name))
			return conf_verr(c, err, c->iface.line, "instance '%s' cannot name the "
			    "TUN device (1..%zu characters): set name in [interface]", instance,
			    sizeof(c->iface.name) - 1);
		util_strlcpy(c->iface.name, instance, sizeof(c->iface.name));
	}
	if (c->iface.control_line)
		return 0;
	if (!(s = strdup(sock))) {
		conf_verr(c, err, 0, "out of memory");
		return -ENOMEM;
	}
	free(c->iface.control);
	c->iface.control = s;
	return 0;
}

bool
conf_full_tunnel(const struct conf *c, int family)
{
	size_t x, y;

	if (c->iface.table != CONF_TABLE_AUTO)
		return false;
	for (x = 0; x < c->n_peers; x++)
		for (y = 0; y < c->peers[x].n_allowed_ips; y++)
			if (c->peers[x].allowed_ips[y].p.len == 0 &&
			    c->peers[x].allowed_ips[y].p.addr.family == family)
				return true;
	return false;
}

uint64_t
conf_session_max_age_ms(const struct conf_iface *i)
{
	return 1000ULL * (i->session_max_age ? i->session_max_age : 2ULL * i->rekey_seconds);
}

uint32_t
conf_route_table(const struct conf_iface *i, const struct ipprefix *p, uint32_t full_table)
{
	switch (i->table) {
	case CONF_TABLE_OFF:
		return 0;
	case CONF_TABLE_NUMBER:
		return i->table_number;
	case CONF_TABLE_AUTO:
		break;
	}
	return p->len == 0 ? full_table : CONF_TABLE_MAIN;
}

bool
conf_iface_covers(const struct conf_iface *i, const struct ipprefix *p)
{
	size_t k;

	for (k = 0; k < i->n_address; k++) {
		const struct ipprefix *a = &i->address[k].p;

		if (a->len <= p->len && util_prefix_contains(a, &p->addr))
			return true;
	}
	return false;
}

uint32_t
conf_effective_fwmark(const struct conf *c, uint32_t full_table)
{
	if (c->iface.fwmark)
		return c->iface.fwmark;
	if (conf_full_tunnel(c, AF_INET) || conf_full_tunnel(c, AF_INET6))
		return full_table;
	return 0;
}

unsigned
conf_tun_mtu(const struct conf *c)
{
	const struct conf_iface *i = &c->iface;
	unsigned outer_ip, b;

	if (i->mtu)
		return i->mtu;
	/*
	 * B, the room for the inner GUE payload in one outer datagram:
	 *
	 *   B = path-mtu - outer IP - UDP (8) - [dtls: outer GUE (16) + DTLS (37)]
	 *
	 * where outer IP is 40 (IPv6, the worst case when both families are
	 * enabled) unless listen names an IPv4 address (20), and DTLS is the
	 * 13-byte record header + 8-byte explicit nonce + 16-byte AES-GCM tag.
	 * A compact TOU packet drops the 20-byte inner IPv4 header and adds the
	 * 4-byte inner GUE word, so the TUN MTU is B - 4 + 20 = B + 16.  With
	 * path-mtu 1500: 1415 (dtls, IPv6), 1435 (dtls, IPv4), 1468 (none, IPv6).
	 */
	outer_ip = i->has_listen_addr && i->listen_addr.family == AF_INET ? 20 : 40;
	b = i->path_mtu - outer_ip - CONF_OVERHEAD_UDP;
	if (i->encryption == CONF_ENC_DTLS)
		b -= CONF_OVERHEAD_GUE_OUTER + CONF_OVERHEAD_DTLS;
	return b - CONF_OVERHEAD_GUE_INNER + 20;
}
