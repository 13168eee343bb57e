/* conf_parse.c - tou.conf(5) text to struct conf.  Pure: no I/O.
 *
 * The grammar is line based: "[interface]", "[peer NAME]", "key = value",
 * '#' starts a comment anywhere on a line, ';' a comment line; a UTF-8 byte
 * order mark before the first line is skipped.  Every message names the line and,
 * when it is about a key, the key. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "conf.h"
#include "log.h"
#include "util.h"

#define CONF_LINE_MAX 1024        /* characters, without the line end */
#define CONF_CN_MAX 64            /* X.520 upper bound of a common name */
#define CONF_USER_MAX 32
#define CONF_HOST_MAX 253
#define CONF_QUOTE_MAX 48         /* longer values are shortened in messages */

enum conf_section { SEC_NONE, SEC_IFACE, SEC_PEER };

struct conf_parser {
	struct conf *c;
	struct conf_error *err;
	const char *file;
	int line;                     /* over all files: base + the line in this one */
	int base;                     /* lines of the files parsed before this one */
	bool peers_only;              /* an included file: [peer] sections only */
	enum conf_section sec;
	size_t peer;                  /* index of the current peer */
	uint64_t seen;                /* scalar keys already set: bit i is conf_keys[i] */
	char where[CONF_NAME_MAX + 16]; /* "[interface]" or "[peer NAME]" */
};

struct conf_key {
	const char *name;
	enum conf_section sec;
	bool list;                    /* repeatable, comma-separated values */
	int (*set)(struct conf_parser *, const struct conf_key *, const char *);
};

static int conf_perr(struct conf_parser *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static int
conf_perr(struct conf_parser *p, const char *fmt, ...)
{
	va_list ap;

	if (p->err) {
		util_strlcpy(p->err->file, p->file, sizeof(p->err->file));
		p->err->line = p->line > p->base ? p->line - p->base : 0;
		va_start(ap, fmt);
		vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A value as it may appear in a message: long ones are cut. */
static const char *
conf_quote(const char *s, char *buf, size_t len)
{
	size_t n = strlen(s);

	if (n < CONF_QUOTE_MAX || len < CONF_QUOTE_MAX + 1)
		return s;
	memcpy(buf, s, CONF_QUOTE_MAX - 3);
	memcpy(buf + CONF_QUOTE_MAX - 3, "...", 4);
	return buf;
}

static bool
conf_isspace(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

static char *
conf_trim(char *s)
{
	char *e;

	while (conf_isspace(*s))
		s++;
	e = s + strlen(s);
	while (e > s && conf_isspace(e[-1]))
		*--e = '\0';
	return s;
}

static bool
conf_isnamechar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
}

bool
conf_name_valid(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max)
		return false;
	for (i = 0; i < n; i++)
		if (!conf_isnamechar(s[i]))
			return false;
	return true;
}

/* Digits only (no sign, no blanks): 0, -EINVAL, or -ERANGE above max. */
static int
conf_num(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			v = max + 1;      /* saturate: keep scanning for junk */
		else
			v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* A number in [min, max]; range is how the message spells the bounds. */
static int
conf_uint(struct conf_parser *p, const struct conf_key *k, const char *v,
    uint64_t min, uint64_t max, const char *range, uint64_t *out)
{
	char q[CONF_QUOTE_MAX + 1];
	int r = conf_num(v, max, out);

	if (r == -EINVAL)
		return conf_perr(p, "%s: '%s' is not a number (%s)", k->name,
		    conf_quote(v, q, sizeof(q)), range);
	if (r < 0 || *out < min)
		return conf_perr(p, "%s: '%s' out of range (%s)", k->name,
		    conf_quote(v, q, sizeof(q)), range);
	return 0;
}

static int
conf_strdup(struct conf_parser *p, char **dst, const char *v)
{
	char *s = strdup(v);

	if (!s) {
		conf_perr(p, "out of memory");
		return -ENOMEM;
	}
	free(*dst);
	*dst = s;
	return 0;
}

/* Key file paths are kept as written; conf_load() makes relative ones
 * relative to the directory of the file. */
static int
conf_path(struct conf_parser *p, char **dst, const char *v)
{
	return conf_strdup(p, dst, v);
}

/* "ADDR" or "ADDR/LEN".  -EINVAL: not an address; -ERANGE: bad length. */
static int
conf_prefix_parse(const char *s, struct ipprefix *out, bool *has_len)
{
	char buf[UTIL_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	uint64_t len;

	if (alen >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (util_addr_parse(buf, &out->addr) < 0)
		return -EINVAL;
	*has_len = slash != NULL;
	if (!slash) {
		out->len = (uint8_t)(util_addr_len(out->addr.family) * 8);
		return 0;
	}
	if (conf_num(slash + 1, util_addr_len(out->addr.family) * 8, &len) < 0)
		return -ERANGE;
	out->len = (uint8_t)len;
	return 0;
}

static int
conf_prefix_add(struct conf_parser *p, const struct conf_key *k,
    struct conf_prefix **list, size_t *n, const struct ipprefix *pfx)
{
	struct conf_prefix *l;

	if (*n >= CONF_MAX_VALUES)
		return conf_perr(p, "%s: too many values in %s (more than %d)",
		    k->name, p->where, CONF_MAX_VALUES);
	l = realloc(*list, (*n + 1) * sizeof(**list));
	if (!l) {
		conf_perr(p, "out of memory");
		return -ENOMEM;
	}
	*list = l;
	l[*n].p = *pfx;
	l[*n].line = p->line;
	(*n)++;
	return 0;
}

static int
conf_prefix_value(struct conf_parser *p, const struct conf_key *k, const char *v,
    struct ipprefix *pfx, bool *has_len)
{
	char q[CONF_QUOTE_MAX + 1];
	int r = conf_prefix_parse(v, pfx, has_len);

	if (r == -EINVAL)
		return conf_perr(p, "%s: '%s' is not an IP address", k->name,
		    conf_quote(v, q, sizeof(q)));
	if (r < 0)
		return conf_perr(p, "%s: bad prefix length in '%s'", k->name,
		    conf_quote(v, q, sizeof(q)));
	return 0;
}

/* [interface] keys */

static int
conf_set_iface_name(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	char q[CONF_QUOTE_MAX + 1];

	if (!conf_name_valid(v, IFNAMSIZ - 1) || strcmp(v, ".") == 0 ||
	    strcmp(v, "..") == 0)
		return conf_perr(p, "%s: '%s' is not a valid interface name "
		    "(1..%d of A-Z a-z 0-9 . _ -)", k->name,
		    conf_quote(v, q, sizeof(q)), IFNAMSIZ - 1);
	util_strlcpy(p->c->iface.name, v, sizeof(p->c->iface.name));
	p->c->iface.name_line = p->line;
	return 0;
}

static int
conf_set_iface_address(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_iface *i = &p->c->iface;
	char q[CONF_QUOTE_MAX + 1];
	struct ipprefix pfx;
	bool has_len;
	int r;

	if ((r = conf_prefix_value(p, k, v, &pfx, &has_len)) < 0)
		return r;
	if (!has_len)
		return conf_perr(p, "%s: '%s' needs a prefix length (ADDR/LEN)",
		    k->name, conf_quote(v, q, sizeof(q)));
	if (pfx.len == 0)
		return conf_perr(p, "%s: prefix length 0 in '%s'", k->name,
		    conf_quote(v, q, sizeof(q)));
	return conf_prefix_add(p, k, &i->address, &i->n_address, &pfx);
}

static int
conf_port(struct conf_parser *p, const struct conf_key *k, const char *v, uint16_t *out)
{
	uint64_t port;
	int r;

	if ((r = conf_uint(p, k, v, 1, 65535, "port 1..65535", &port)) < 0)
		return r;
	*out = (uint16_t)port;
	return 0;
}

/* Split "[V6]:PORT" or "HOST:PORT" at the port colon; *host loses brackets.
 * -EINVAL: no port; -EAFNOSUPPORT: an unbracketed IPv6 address. */
static int
conf_hostport(char *s, char **host, char **port, bool *bracketed)
{
	struct ipaddr a;
	bool v6;
	char *c;

	*bracketed = s[0] == '[';
	if (*bracketed) {
		c = strchr(s, ']');
		if (!c || c[1] != ':')
			return -EINVAL;
		*c = '\0';
		*host = s + 1;
		*port = c + 2;
		return 0;
	}
	c = strrchr(s, ':');
	if (c && strchr(s, ':') != c) {
		/* "V6:PORT" or a bare "V6": say that brackets are missing */
		*c = '\0';
		v6 = util_addr_parse(s, &a) == 0;
		*c = ':';
		return v6 || util_addr_parse(s, &a) == 0 ? -EAFNOSUPPORT : -EINVAL;
	}
	if (!c)
		return -EINVAL;
	*c = '\0';
	*host = s;
	*port = c + 1;
	return 0;
}

/* "ADDR:PORT" or "[V6]:PORT", an address literal (no host name); forms
 * is what the key takes, for the message. */
static int
conf_addrport(struct conf_parser *p, const struct conf_key *k, const char *v,
    const char *forms, struct ipaddr *addr, uint16_t *port)
{
	char buf[CONF_LINE_MAX + 1], q[CONF_QUOTE_MAX + 1];
	char *host, *pstr;
	struct ipaddr a;
	bool br;
	int r;

	util_strlcpy(buf, v, sizeof(buf));
	r = conf_hostport(buf, &host, &pstr, &br);
	if (r == -EAFNOSUPPORT)
		return conf_perr(p, "%s: an IPv6 address needs brackets in '%s' "
		    "([ADDR]:PORT)", k->name, conf_quote(v, q, sizeof(q)));
	if (r < 0)
		return conf_perr(p, "%s: '%s' is not %s", k->name,
		    conf_quote(v, q, sizeof(q)), forms);
	if (util_addr_parse(host, &a) < 0 || (br && a.family != AF_INET6) ||
	    (!br && a.family != AF_INET))
		return conf_perr(p, "%s: '%s' is not an IP address", k->name,
		    conf_quote(host, q, sizeof(q)));
	if ((r = conf_port(p, k, pstr, port)) < 0)
		return r;
	*addr = a;
	return 0;
}

/* PORT, ADDR:PORT or [ADDR]:PORT of key k: *has_addr says which. */
static int
conf_listen_value(struct conf_parser *p, const struct conf_key *k, const char *v,
    bool *has_addr, struct ipaddr *addr, uint16_t *port)
{
	char q[CONF_QUOTE_MAX + 1];
	struct ipaddr a;
	int r;

	if (!strchr(v, ':') && v[0] != '[') {
		if (util_addr_parse(v, &a) == 0)
			return conf_perr(p, "%s: missing port in '%s' (ADDR:PORT)",
			    k->name, conf_quote(v, q, sizeof(q)));
		*has_addr = false;
		memset(addr, 0, sizeof(*addr));
		return conf_port(p, k, v, port);
	}
	if ((r = conf_addrport(p, k, v, "PORT, ADDR:PORT or [ADDR]:PORT", addr, port)) < 0)
		return r;
	*has_addr = true;
	return 0;
}

static int
conf_set_listen(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_iface *i = &p->c->iface;

	i->listen_line = p->line;
	return conf_listen_value(p, k, v, &i->has_listen_addr, &i->listen_addr, &i->listen_port);
}

/* listen-tcp = PORT | ADDR:PORT | [ADDR]:PORT */
static int
conf_set_listen_tcp(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_iface *i = &p->c->iface;
	int r;

	i->listen_tcp_line = p->line;
	if ((r = conf_listen_value(p, k, v, &i->has_listen_tcp_addr, &i->listen_tcp_addr,
	    &i->listen_tcp_port)) < 0)
		return r;
	i->has_listen_tcp = true;
	return 0;
}

static int
conf_set_private_key(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	(void)k;
	p->c->iface.private_key_line = p->line;
	return conf_path(p, &p->c->iface.private_key, v);
}

static int
conf_set_certificate(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	(void)k;
	p->c->iface.certificate_line = p->line;
	return conf_path(p, &p->c->iface.certificate, v);
}

static int
conf_set_keylog_file(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	(void)k;
	return conf_path(p, &p->c->iface.keylog_file, v);
}

static int
conf_set_mtu(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	uint64_t mtu;
	int r;

	if (strcasecmp(v, "auto") == 0) {
		p->c->iface.mtu = 0;
		return 0;
	}
	if ((r = conf_uint(p, k, v, CONF_MIN_MTU, CONF_MAX_MTU,
	    "576..65535 or auto", &mtu)) < 0)
		return r;
	p->c->iface.mtu = (unsigned)mtu;
	return 0;
}

static int
conf_set_path_mtu(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	uint64_t mtu;
	int r;

	if ((r = conf_uint(p, k, v, 1280, CONF_MAX_MTU, "1280..65535", &mtu)) < 0)
		return r;
	p->c->iface.path_mtu = (unsigned)mtu;
	return 0;
}

static int
conf_set_user(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	char q[CONF_QUOTE_MAX + 1];

	if (!conf_name_valid(v, CONF_USER_MAX) || v[0] == '-')
		return conf_perr(p, "%s: '%s' is not a valid user name", k->name,
		    conf_quote(v, q, sizeof(q)));
	return conf_strdup(p, &p->c->iface.user, v);
}

/* v as one of names[0..n) (any case): its index, or an error naming the
 * choices (expect: "dtls or none"). */
static int
conf_choice(struct conf_parser *p, const struct conf_key *k, const char *v,
    const char *const *names, size_t n, const char *expect)
{
	char q[CONF_QUOTE_MAX + 1];
	size_t i;

	for (i = 0; i < n; i++)
		if (strcasecmp(v, names[i]) == 0)
			return (int)i;
	return conf_perr(p, "%s: unknown value '%s' (%s)", k->name, conf_quote(v, q, sizeof(q)),
	    expect);
}

static int
conf_set_encryption(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	static const char *const names[] = { [CONF_ENC_DTLS] = "dtls", [CONF_ENC_NONE] = "none" };
	int i = conf_choice(p, k, v, names, ARRAY_SIZE(names), "dtls or none");

	if (i < 0)
		return i;
	p->c->iface.encryption = (enum conf_encryption)i;
	return 0;
}

static int
conf_set_threads(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	static const char *const names[] = {
		[CONF_THREADS_AUTO] = "auto", [CONF_THREADS_ON] = "on", [CONF_THREADS_OFF] = "off",
	};
	int i = conf_choice(p, k, v, names, ARRAY_SIZE(names), "auto, on or off");

	if (i < 0)
		return i;
	p->c->iface.threads = (enum conf_threads)i;
	return 0;
}

static int
conf_set_offload(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	static const char *const names[] = {
		[CONF_OFFLOAD_AUTO] = "auto", [CONF_OFFLOAD_OFF] = "off",
	};
	int i = conf_choice(p, k, v, names, ARRAY_SIZE(names), "auto or off");

	if (i < 0)
		return i;
	p->c->iface.offload = (enum conf_offload)i;
	return 0;
}

static int
conf_set_log_level(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	char q[CONF_QUOTE_MAX + 1];
	enum log_level l;

	if (log_level_parse(v, &l) < 0)
		return conf_perr(p, "%s: unknown value '%s' (error, warning, info "
		    "or debug)", k->name, conf_quote(v, q, sizeof(q)));
	p->c->iface.log_level = (int)l;
	return 0;
}

static int
conf_set_control(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	char q[CONF_QUOTE_MAX + 1];

	if (v[0] != '/')
		return conf_perr(p, "%s: '%s' is not an absolute path", k->name,
		    conf_quote(v, q, sizeof(q)));
	if (strlen(v) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
		return conf_perr(p, "%s: path longer than %zu characters", k->name,
		    sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
	p->c->iface.control_line = p->line;
	return conf_strdup(p, &p->c->iface.control, v);
}

/* metrics = ADDR:PORT | off.  Whether the address may be other than
 * loopback depends on metrics-allow-remote, in any order: conf.c checks. */
static int
conf_set_metrics(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_iface *i = &p->c->iface;
	char q[CONF_QUOTE_MAX + 1];
	struct ipaddr a;

	i->metrics_line = p->line;
	if (strcasecmp(v, "off") == 0) {
		i->has_metrics = false;
		return 0;
	}
	if (util_addr_parse(v, &a) == 0 || (!strchr(v, ':') && v[0] != '['))
		return conf_perr(p, "%s: '%s' is not ADDR:PORT or [ADDR]:PORT (e.g. "
		    "127.0.0.1:9680), or off", k->name, conf_quote(v, q, sizeof(q)));
	if (conf_addrport(p, k, v, "ADDR:PORT or [ADDR]:PORT", &i->metrics_addr,
	    &i->metrics_port) < 0)
		return -EINVAL;
	i->has_metrics = true;
	return 0;
}

/* yes or no, into *out */
static int
conf_yes_no(struct conf_parser *p, const struct conf_key *k, const char *v, bool *out)
{
	static const char *const names[] = { "no", "yes" };
	int i = conf_choice(p, k, v, names, ARRAY_SIZE(names), "yes or no");

	if (i < 0)
		return i;
	*out = i == 1;
	return 0;
}

static int
conf_set_metrics_allow_remote(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	return conf_yes_no(p, k, v, &p->c->iface.metrics_allow_remote);
}

static int
conf_set_metrics_token_file(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	(void)k;
	p->c->iface.metrics_token_line = p->line;
	return conf_path(p, &p->c->iface.metrics_token_file, v);
}

static int
conf_set_rekey_time(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	uint64_t s;
	int r;

	if ((r = conf_uint(p, k, v, 60, 86400, "60..86400 seconds", &s)) < 0)
		return r;
	p->c->iface.rekey_seconds = (unsigned)s;
	return 0;
}

static int
conf_set_session_max_age(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	uint64_t s;
	int r;

	if ((r = conf_uint(p, k, v, 120, 172800, "120..172800 seconds", &s)) < 0)
		return r;
	p->c->iface.session_max_age = (unsigned)s;
	return 0;
}

#define CONF_REKEY_BYTES_MIN (1ULL << 20)
#define CONF_REKEY_BYTES_MAX (1ULL << 62)
/* toud's sequence numbers run from 2^47 to 2^48 (record.h): a key can
 * never protect more records than that. */
#define CONF_REKEY_RECORDS_MIN (1ULL << 10)
#define CONF_REKEY_RECORDS_MAX (1ULL << 47)

/* A count with an optional binary suffix K, M or G, within [min, max]. */
static int
conf_scaled(struct conf_parser *p, const struct conf_key *k, const char *v, uint64_t min,
    uint64_t max, const char *range, uint64_t *out)
{
	char buf[CONF_LINE_MAX + 1], q[CONF_QUOTE_MAX + 1];
	unsigned shift = 0;
	size_t n = strlen(v);
	uint64_t b;
	int r;

	util_strlcpy(buf, v, sizeof(buf));
	if (n > 1) {
		switch (buf[n - 1]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		}
		if (shift)
			buf[n - 1] = '\0';
	}
	r = conf_num(buf, max >> shift, &b);
	if (r == -EINVAL)
		return conf_perr(p, "%s: '%s' is not a number (%s)", k->name,
		    conf_quote(v, q, sizeof(q)), range);
	if (r < 0 || (b << shift) < min)
		return conf_perr(p, "%s: '%s' out of range (%s)", k->name,
		    conf_quote(v, q, sizeof(q)), range);
	*out = b << shift;
	return 0;
}

static int
conf_set_rekey_bytes(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	return conf_scaled(p, k, v, CONF_REKEY_BYTES_MIN, CONF_REKEY_BYTES_MAX,
	    "1M..2^62 bytes, suffix K, M or G", &p->c->iface.rekey_bytes);
}

static int
conf_set_rekey_records(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	return conf_scaled(p, k, v, CONF_REKEY_RECORDS_MIN, CONF_REKEY_RECORDS_MAX,
	    "1K..2^47 records, suffix K, M or G", &p->c->iface.rekey_records);
}

/* A 32-bit number, decimal or 0x hexadecimal: 0, -EINVAL or -ERANGE. */
static int
conf_num32(const char *s, uint32_t *out)
{
	uint64_t v = 0;
	int r;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
		if ((r = conf_num(s, UINT32_MAX, &v)) < 0)
			return r;
		*out = (uint32_t)v;
		return 0;
	}
	if (s[2] == '\0')
		return -EINVAL;
	for (s += 2; *s; s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return -EINVAL;
		if (v <= UINT32_MAX)      /* saturate: keep scanning for junk */
			v = v * 16 + (uint64_t)d;
	}
	if (v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

static int
conf_set_fwmark(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	char q[CONF_QUOTE_MAX + 1];
	uint32_t mark;
	int r;

	p->c->iface.fwmark_line = p->line;
	if (strcasecmp(v, "off") == 0) {
		p->c->iface.fwmark = 0;
		return 0;
	}
	if ((r = conf_num32(v, &mark)) == -EINVAL)
		return conf_perr(p, "%s: '%s' is not a number (0..0xffffffff, "
		    "decimal or 0x hexadecimal, or off)", k->name, conf_quote(v, q, sizeof(q)));
	if (r < 0)
		return conf_perr(p, "%s: '%s' out of range (0..0xffffffff, or off)", k->name,
		    conf_quote(v, q, sizeof(q)));
	p->c->iface.fwmark = mark;
	return 0;
}

static int
conf_set_table(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	char q[CONF_QUOTE_MAX + 1];
	uint64_t n;
	int r;

	if (strcasecmp(v, "auto") == 0) {
		p->c->iface.table = CONF_TABLE_AUTO;
		p->c->iface.table_number = 0;
		return 0;
	}
	if (strcasecmp(v, "off") == 0) {
		p->c->iface.table = CONF_TABLE_OFF;
		p->c->iface.table_number = 0;
		return 0;
	}
	if ((r = conf_uint(p, k, v, 1, UINT32_MAX, "1..4294967295, auto or off", &n)) < 0)
		return r;
	if (n == CONF_TABLE_LOCAL)
		return conf_perr(p, "%s: '%s' is the kernel's local table", k->name,
		    conf_quote(v, q, sizeof(q)));
	p->c->iface.table = CONF_TABLE_NUMBER;
	p->c->iface.table_number = (uint32_t)n;
	return 0;
}

static int
conf_set_fail_open(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	return conf_yes_no(p, k, v, &p->c->iface.fail_open);
}

static int
conf_set_server_id(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	uint64_t n;
	int r;

	if ((r = conf_uint(p, k, v, 1, 255, "1..255", &n)) < 0)
		return r;
	p->c->iface.server_id = (uint8_t)n;
	p->c->iface.server_id_line = p->line;
	return 0;
}

/* [peer NAME] keys */

static struct conf_peer *
conf_cur_peer(struct conf_parser *p)
{
	return &p->c->peers[p->peer];
}

static int
conf_set_fingerprint(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_peer *peer = conf_cur_peer(p);
	char q[CONF_QUOTE_MAX + 1];

	if (strncasecmp(v, "sha256:", 7) != 0 ||
	    util_unhex(v + 7, peer->fingerprint, sizeof(peer->fingerprint)) < 0)
		return conf_perr(p, "%s: '%s' is not sha256:<64 hex digits>", k->name,
		    conf_quote(v, q, sizeof(q)));
	peer->has_fingerprint = true;
	return 0;
}

static int
conf_set_ca(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	(void)k;
	conf_cur_peer(p)->ca_line = p->line;
	return conf_path(p, &conf_cur_peer(p)->ca, v);
}

static int
conf_set_preshared_key(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	(void)k;
	conf_cur_peer(p)->psk_line = p->line;
	return conf_path(p, &conf_cur_peer(p)->psk_file, v);
}

static int
conf_set_cert_name(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	if (strlen(v) > CONF_CN_MAX)
		return conf_perr(p, "%s: longer than %d characters", k->name,
		    CONF_CN_MAX);
	return conf_strdup(p, &conf_cur_peer(p)->cert_name, v);
}

/* A DNS name: labels of [A-Za-z0-9_-] joined by dots; lower-cased. */
static bool
conf_valid_host(char *s)
{
	size_t n = strlen(s), i, label = 0;
	bool alpha = false;

	if (n == 0 || n > CONF_HOST_MAX || s[0] == '-')
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!conf_isnamechar(s[i]) || ++label > 63)
			return false;
		if (s[i] >= 'A' && s[i] <= 'Z')
			s[i] = (char)(s[i] - 'A' + 'a');
		if (s[i] < '0' || s[i] > '9')
			alpha = true;
	}
	/* all digits and dots would be taken for a (bad) IPv4 address */
	return alpha;
}

/* HOST:PORT or [ADDR]:PORT of key k into *host (an address in its
 * canonical form) and *port. */
static int
conf_host_port(struct conf_parser *p, const struct conf_key *k, const char *v, char **hostp,
    uint16_t *portp)
{
	char buf[CONF_LINE_MAX + 1], q[CONF_QUOTE_MAX + 1];
	char abuf[UTIL_ADDRSTRLEN + 1 + IFNAMSIZ], scope[IFNAMSIZ];
	char *host, *port;
	struct ipaddr a;
	bool br;
	int r;

	util_strlcpy(buf, v, sizeof(buf));
	r = conf_hostport(buf, &host, &port, &br);
	if (r == -EAFNOSUPPORT)
		return conf_perr(p, "%s: an IPv6 address needs brackets in '%s' "
		    "([ADDR]:PORT)", k->name, conf_quote(v, q, sizeof(q)));
	if (r < 0)
		return conf_perr(p, "%s: '%s' is not HOST:PORT or [ADDR]:PORT",
		    k->name, conf_quote(v, q, sizeof(q)));
	if (util_addr_parse(host, &a) == 0) {
		if (br != (a.family == AF_INET6))
			return conf_perr(p, "%s: '%s' is not HOST:PORT or [ADDR]:PORT",
			    k->name, conf_quote(v, q, sizeof(q)));
		util_addr_fmt(&a, abuf, sizeof(abuf));
		host = abuf;
	} else if (br && strchr(host, '%')) {
		/* [fe80::2%eth0]:PORT: a link-local address and its link. */
		r = util_addr_parse_scoped(host, &a, scope, sizeof(scope));
		if (r == -EDOM)
			return conf_perr(p, "%s: '%s': a scope (%%INTERFACE) goes only with an "
			    "IPv6 link-local address (fe80::/10)", k->name,
			    conf_quote(host, q, sizeof(q)));
		if (r == -ERANGE)
			return conf_perr(p, "%s: '%s': the scope is not an interface name or "
			    "index (1..%d of A-Z a-z 0-9 . _ -)", k->name,
			    conf_quote(host, q, sizeof(q)), IFNAMSIZ - 1);
		if (r < 0)
			return conf_perr(p, "%s: '%s' is not an IPv6 address", k->name,
			    conf_quote(host, q, sizeof(q)));
		util_addr_fmt(&a, abuf, sizeof(abuf));
		snprintf(abuf + strlen(abuf), sizeof(abuf) - strlen(abuf), "%%%s", scope);
		host = abuf;
	} else if (br) {
		return conf_perr(p, "%s: '%s' is not an IPv6 address", k->name,
		    conf_quote(host, q, sizeof(q)));
	} else if (!conf_valid_host(host)) {
		return conf_perr(p, "%s: '%s' is not a host name or IP address",
		    k->name, conf_quote(host, q, sizeof(q)));
	}
	if ((r = conf_port(p, k, port, portp)) < 0)
		return r;
	free(*hostp);
	*hostp = NULL;
	return conf_strdup(p, hostp, host);
}

static int
conf_set_endpoint(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_peer *peer = conf_cur_peer(p);

	peer->endpoint_line = p->line;
	return conf_host_port(p, k, v, &peer->endpoint_host, &peer->endpoint_port);
}

static int
conf_set_endpoint_tcp(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_peer *peer = conf_cur_peer(p);

	peer->endpoint_tcp_line = p->line;
	return conf_host_port(p, k, v, &peer->endpoint_tcp_host, &peer->endpoint_tcp_port);
}

/* proxy = http://HOST:PORT (an HTTP CONNECT proxy; no path, no user). */
static int
conf_set_proxy(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_peer *peer = conf_cur_peer(p);
	char q[CONF_QUOTE_MAX + 1];
	size_t n = strlen(v);

	/* Before anything quotes the value: it would be the password. */
	if (strchr(v, '@'))
		return conf_perr(p, "%s: credentials do not belong in the configuration "
		    "(readable by all, and printed by toud -T): write 'user:password' into a "
		    "file only root and toud may read, name it with proxy-credentials = FILE, "
		    "and leave proxy = http://HOST:PORT", k->name);
	if (strncasecmp(v, "http://", 7) != 0 || n == 7)
		return conf_perr(p, "%s: '%s' is not http://HOST:PORT", k->name,
		    conf_quote(v, q, sizeof(q)));
	peer->proxy_line = p->line;
	if (v[n - 1] == '/') {
		char buf[CONF_LINE_MAX + 1];

		util_strlcpy(buf, v + 7, sizeof(buf));
		buf[n - 8] = '\0';
		return conf_host_port(p, k, buf, &peer->proxy_host, &peer->proxy_port);
	}
	return conf_host_port(p, k, v + 7, &peer->proxy_host, &peer->proxy_port);
}

/* proxy-credentials = FILE: the file is read by proxy_auth_load_conf(). */
static int
conf_set_proxy_credentials(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	(void)k;
	conf_cur_peer(p)->proxy_auth_line = p->line;
	return conf_path(p, &conf_cur_peer(p)->proxy_auth_file, v);
}

/* sni = NAME: a DNS host name, as RFC 6066 allows it (no address, no
 * final dot). */
static int
conf_set_sni(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_peer *peer = conf_cur_peer(p);
	char q[CONF_QUOTE_MAX + 1], name[CONF_HOST_MAX + 2];

	util_strlcpy(name, v, sizeof(name));
	/* conf_valid_host() refuses addresses: all digits, or a colon */
	if (!conf_valid_host(name) || name[strlen(name) - 1] == '.')
		return conf_perr(p, "%s: '%s' is not a host name (an address or a final "
		    "dot is not sent as a server name)", k->name, conf_quote(v, q, sizeof(q)));
	peer->sni_line = p->line;
	return conf_strdup(p, &peer->sni, name);
}

static int
conf_set_post_quantum(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	static const char *const names[] = {
		[CONF_PQ_AUTO] = "auto", [CONF_PQ_REQUIRED] = "required", [CONF_PQ_OFF] = "off",
	};
	int i = conf_choice(p, k, v, names, ARRAY_SIZE(names), "auto, required or off");

	if (i < 0)
		return i;
	conf_cur_peer(p)->post_quantum = (enum conf_pq)i;
	return 0;
}

static int
conf_set_peer_address(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_peer *peer = conf_cur_peer(p);
	char q[CONF_QUOTE_MAX + 1];
	struct ipprefix pfx;
	bool has_len;
	int r;

	if ((r = conf_prefix_value(p, k, v, &pfx, &has_len)) < 0)
		return r;
	if (pfx.len != util_addr_len(pfx.addr.family) * 8)
		return conf_perr(p, "%s: '%s' is not a host address (/32 or /128; "
		    "use allowed-ips for prefixes)", k->name,
		    conf_quote(v, q, sizeof(q)));
	return conf_prefix_add(p, k, &peer->address, &peer->n_address, &pfx);
}

static int
conf_set_allowed_ips(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_peer *peer = conf_cur_peer(p);
	char q[CONF_QUOTE_MAX + 1];
	struct ipprefix pfx, m;
	bool has_len;
	int r;

	if ((r = conf_prefix_value(p, k, v, &pfx, &has_len)) < 0)
		return r;
	util_prefix_masked(&pfx, &m);
	if (!util_addr_equal(&m.addr, &pfx.addr))
		return conf_perr(p, "%s: host bits set in '%s'", k->name,
		    conf_quote(v, q, sizeof(q)));
	return conf_prefix_add(p, k, &peer->allowed_ips, &peer->n_allowed_ips, &pfx);
}

static int
conf_set_keepalive(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	uint64_t s;
	int r;

	if ((r = conf_uint(p, k, v, 0, 3600, "0..3600 seconds", &s)) < 0)
		return r;
	conf_cur_peer(p)->keepalive = (unsigned)s;
	return 0;
}

/* dns = ADDR: a name server, an address without prefix length or port. */
static int
conf_set_dns(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	char q[CONF_QUOTE_MAX + 1];
	struct ipprefix pfx;
	bool has_len;
	int r;

	if ((r = conf_prefix_value(p, k, v, &pfx, &has_len)) < 0)
		return r;
	if (has_len)
		return conf_perr(p, "%s: '%s' is not an IP address (no prefix length)",
		    k->name, conf_quote(v, q, sizeof(q)));
	return conf_prefix_add(p, k, &p->c->iface.dns, &p->c->iface.n_dns, &pfx);
}

/* dns-search = DOMAIN, or ~DOMAIN for a routing-only domain (~. for all
 * names): a DNS name, lower-cased, kept without its final dot. */
static int
conf_set_dns_search(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_iface *i = &p->c->iface;
	char q[CONF_QUOTE_MAX + 1], name[CONF_HOST_MAX + 2];
	size_t n, routing = v[0] == '~';
	char **l;

	if (strlen(v) >= sizeof(name))
		return conf_perr(p, "%s: '%s' is too long for a domain name", k->name,
		    conf_quote(v, q, sizeof(q)));
	util_strlcpy(name, v, sizeof(name));
	n = strlen(name);
	if (n > routing + 1 && name[n - 1] == '.')
		name[n - 1] = '\0';
	if (!(routing && strcmp(name, "~.") == 0) &&
	    (!conf_valid_host(name + routing) || name[strlen(name) - 1] == '.'))
		return conf_perr(p, "%s: '%s' is not a domain name (DOMAIN, or ~DOMAIN for "
		    "a routing-only domain)", k->name, conf_quote(v, q, sizeof(q)));
	if (i->n_dns_search >= CONF_MAX_VALUES)
		return conf_perr(p, "%s: too many values in %s (more than %d)",
		    k->name, p->where, CONF_MAX_VALUES);
	if (!(l = realloc(i->dns_search, (i->n_dns_search + 1) * sizeof(*l))))
		return conf_perr(p, "out of memory");
	i->dns_search = l;
	l[i->n_dns_search] = NULL;
	if (conf_strdup(p, &l[i->n_dns_search], name) < 0)
		return -ENOMEM;
	i->n_dns_search++;
	if (!i->dns_search_line)
		i->dns_search_line = p->line;
	return 0;
}

/* include = PATTERN: kept for conf_load() to read (no I/O here). */
static int
conf_set_include(struct conf_parser *p, const struct conf_key *k, const char *v)
{
	struct conf_iface *i = &p->c->iface;
	struct conf_include *l;

	if (i->n_include >= CONF_MAX_VALUES)
		return conf_perr(p, "%s: too many values in %s (more than %d)",
		    k->name, p->where, CONF_MAX_VALUES);
	if (!(l = realloc(i->include, (i->n_include + 1) * sizeof(*l))))
		return conf_perr(p, "out of memory");
	i->include = l;
	l[i->n_include].line = p->line;
	l[i->n_include].pattern = NULL;
	if (conf_strdup(p, &l[i->n_include].pattern, v) < 0)
		return -ENOMEM;
	i->n_include++;
	return 0;
}

static int
conf_set_include_follow_symlinks(struct conf_parser *p, const struct conf_key *k,
    const char *v)
{
	return conf_yes_no(p, k, v, &p->c->iface.include_follow_symlinks);
}

/* The "seen" mask of struct conf_parser has one bit per entry. */
static const struct conf_key conf_keys[] = {
	{ "name", SEC_IFACE, false, conf_set_iface_name },
	{ "address", SEC_IFACE, true, conf_set_iface_address },
	{ "listen", SEC_IFACE, false, conf_set_listen },
	{ "private-key", SEC_IFACE, false, conf_set_private_key },
	{ "certificate", SEC_IFACE, false, conf_set_certificate },
	{ "keylog-file", SEC_IFACE, false, conf_set_keylog_file },
	{ "mtu", SEC_IFACE, false, conf_set_mtu },
	{ "path-mtu", SEC_IFACE, false, conf_set_path_mtu },
	{ "user", SEC_IFACE, false, conf_set_user },
	{ "encryption", SEC_IFACE, false, conf_set_encryption },
	{ "offload", SEC_IFACE, false, conf_set_offload },
	{ "threads", SEC_IFACE, false, conf_set_threads },
	{ "log-level", SEC_IFACE, false, conf_set_log_level },
	{ "control", SEC_IFACE, false, conf_set_control },
	{ "metrics", SEC_IFACE, false, conf_set_metrics },
	{ "metrics-allow-remote", SEC_IFACE, false, conf_set_metrics_allow_remote },
	{ "metrics-token-file", SEC_IFACE, false, conf_set_metrics_token_file },
	{ "rekey-time", SEC_IFACE, false, conf_set_rekey_time },
	{ "session-max-age", SEC_IFACE, false, conf_set_session_max_age },
	{ "rekey-bytes", SEC_IFACE, false, conf_set_rekey_bytes },
	{ "rekey-records", SEC_IFACE, false, conf_set_rekey_records },
	{ "fwmark", SEC_IFACE, false, conf_set_fwmark },
	{ "table", SEC_IFACE, false, conf_set_table },
	{ "fail-open", SEC_IFACE, false, conf_set_fail_open },
	{ "server-id", SEC_IFACE, false, conf_set_server_id },
	{ "dns", SEC_IFACE, true, conf_set_dns },
	{ "dns-search", SEC_IFACE, true, conf_set_dns_search },
	{ "listen-tcp", SEC_IFACE, false, conf_set_listen_tcp },
	{ "include", SEC_IFACE, true, conf_set_include },
	{ "include-follow-symlinks", SEC_IFACE, false, conf_set_include_follow_symlinks },
	{ "fingerprint", SEC_PEER, false, conf_set_fingerprint },
	{ "ca", SEC_PEER, false, conf_set_ca },
	{ "name", SEC_PEER, false, conf_set_cert_name },
	{ "endpoint", SEC_PEER, false, conf_set_endpoint },
	{ "address", SEC_PEER, true, conf_set_peer_address },
	{ "allowed-ips", SEC_PEER, true, conf_set_allowed_ips },
	{ "keepalive", SEC_PEER, false, conf_set_keepalive },
	{ "preshared-key", SEC_PEER, false, conf_set_preshared_key },
	{ "endpoint-tcp", SEC_PEER, false, conf_set_endpoint_tcp },
	{ "proxy", SEC_PEER, false, conf_set_proxy },
	{ "proxy-credentials", SEC_PEER, false, conf_set_proxy_credentials },
	{ "sni", SEC_PEER, false, conf_set_sni },
	{ "post-quantum", SEC_PEER, false, conf_set_post_quantum },
};
_Static_assert(ARRAY_SIZE(conf_keys) <= 64, "the seen mask of struct conf_parser has 64 bits");

/* key folded for comparison: lower case, without '-', '_' and spaces,
 * so that WireGuard's AllowedIPs meets allowed-ips; "" if too long. */
static void
conf_key_fold(const char *key, char *out, size_t len)
{
	size_t n = 0;

	for (; *key && n + 1 < len; key++)
		if (*key != '-' && *key != '_' && *key != ' ')
			out[n++] = (char)tolower((unsigned char)*key);
	out[*key ? 0 : n] = '\0';
}

/* Levenshtein distance of a and b, at most 32 bytes each (else large). */
static size_t
conf_key_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[33], i, j, diag, up;

	if (la > 32 || lb > 32)
		return SIZE_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			up = row[j];
			row[j] = a[i - 1] == b[j - 1] ? diag : 1 + (diag < up ?
			    (diag < row[j - 1] ? diag : row[j - 1]) : (up < row[j - 1] ? up : row[j - 1]));
			diag = up;
		}
	}
	return row[lb];
}

/* What an unknown key in section sec was probably meant to be, as the
 * end of the message ("; did you mean allowed-ips?"), or "": a key of the
 * other section, WireGuard's names, a near miss. */
static const char *
conf_key_hint(const char *key, enum conf_section sec, char *buf, size_t len)
{
	/* WireGuard's keys whose names differ by more than their spelling. */
	static const struct { const char *wg, *ours; } wg[] = {
		{ "listenport", "listen" }, { "persistentkeepalive", "keepalive" },
	};
	char f[40], g[40];
	const struct conf_key *best = NULL;
	size_t i, d, best_d = SIZE_MAX;

	conf_key_fold(key, f, sizeof(f));
	if (f[0] == '\0')
		return "";
	if (strcmp(f, "publickey") == 0)
		return snprintf(buf, len, "; toud pins a peer by its certificate's fingerprint: "
		    "fingerprint = sha256:... (touctl fingerprint, touctl export)"), buf;
	for (i = 0; i < ARRAY_SIZE(wg); i++)
		if (strcmp(f, wg[i].wg) == 0)
			util_strlcpy(f, wg[i].ours, sizeof(f));
	for (i = 0; i < ARRAY_SIZE(conf_keys); i++) {
		conf_key_fold(conf_keys[i].name, g, sizeof(g));
		if (strcmp(f, g) == 0 && conf_keys[i].sec != sec)
			return snprintf(buf, len, "; %s%s%s belongs in %s",
			    strcasecmp(key, conf_keys[i].name) ? "did you mean " : "",
			    conf_keys[i].name, strcasecmp(key, conf_keys[i].name) ? "? it" : "",
			    conf_keys[i].sec == SEC_IFACE ? "[interface]" : "[peer NAME]"), buf;
		if (conf_keys[i].sec != sec)
			continue;
		d = strcmp(f, g) == 0 ? 0 : conf_key_distance(f, g);
		if (d < best_d)
			best = &conf_keys[i], best_d = d;
	}
	if (best && best_d <= (strlen(f) <= 4 ? 1u : 2u))
		return snprintf(buf, len, "; did you mean %s?", best->name), buf;
	return "";
}

static int
conf_keyvalue(struct conf_parser *p, char *s)
{
	char q[CONF_QUOTE_MAX + 1];
	const struct conf_key *k = NULL;
	char *eq = strchr(s, '='), *key, *val, *elem, *next;
	size_t i;
	int r;

	_Static_assert(ARRAY_SIZE(conf_keys) <= sizeof(p->seen) * CHAR_BIT,
	    "conf_keys[] has more entries than the seen mask has bits");
	if (!eq)
		return conf_perr(p, "missing '=' (expected 'key = value')");
	*eq = '\0';
	key = conf_trim(s);
	val = conf_trim(eq + 1);
	if (*key == '\0')
		return conf_perr(p, "missing key before '='");
	if (p->sec == SEC_NONE)
		return conf_perr(p, "key '%s' outside of any section",
		    conf_quote(key, q, sizeof(q)));
	for (i = 0; i < ARRAY_SIZE(conf_keys); i++) {
		if (conf_keys[i].sec == p->sec &&
		    strcasecmp(conf_keys[i].name, key) == 0) {
			k = &conf_keys[i];
			break;
		}
	}
	if (!k) {
		char hint[160];

		return conf_perr(p, "unknown key '%s' in %s%s", conf_quote(key, q, sizeof(q)),
		    p->where, conf_key_hint(key, p->sec, hint, sizeof(hint)));
	}
	if (!k->list && (p->seen & (UINT64_C(1) << i)))
		return conf_perr(p, "duplicate key '%s' in %s", k->name, p->where);
	p->seen |= UINT64_C(1) << i;
	if (*val == '\0')
		return conf_perr(p, "%s: empty value", k->name);
	if (!k->list)
		return k->set(p, k, val);
	for (elem = val; elem; elem = next) {
		next = strchr(elem, ',');
		if (next)
			*next++ = '\0';
		elem = conf_trim(elem);
		if (*elem == '\0')
			return conf_perr(p, "%s: empty element in list", k->name);
		if ((r = k->set(p, k, elem)) < 0)
			return r;
	}
	return 0;
}

static void
conf_peer_free(struct conf_peer *peer)
{
	free(peer->ca);
	free(peer->cert_name);
	free(peer->endpoint_host);
	free(peer->endpoint_tcp_host);
	free(peer->proxy_host);
	free(peer->proxy_auth_file);
	if (peer->proxy_auth)
		explicit_bzero(peer->proxy_auth, strlen(peer->proxy_auth));
	free(peer->proxy_auth);
	free(peer->sni);
	free(peer->address);
	free(peer->allowed_ips);
	free(peer->psk_file);
	explicit_bzero(peer->psk, sizeof(peer->psk));
}

static int
conf_section(struct conf_parser *p, char *s)
{
	char q[CONF_QUOTE_MAX + 1], whole[CONF_LINE_MAX + 1];
	struct conf *c = p->c;
	struct conf_peer *peers;
	size_t n = strlen(s);
	char *word, *name;

	if (s[n - 1] != ']')
		return conf_perr(p, "section header does not end with ']'");
	util_strlcpy(whole, s, sizeof(whole));
	s[n - 1] = '\0';
	word = conf_trim(s + 1);
	for (name = word; *name && !conf_isspace(*name); name++)
		;
	if (*name)
		*name++ = '\0';
	name = conf_trim(name);
	p->seen = 0;

	if (strcasecmp(word, "interface") == 0) {
		if (p->peers_only)
			return conf_perr(p, "[interface] belongs in the main file %s, not in an "
			    "included one (only [peer] sections)", c->file);
		if (*name)
			return conf_perr(p, "unexpected name '%s' after [interface]",
			    conf_quote(name, q, sizeof(q)));
		if (c->iface.line)
			return conf_perr(p, "duplicate section [interface] (first "
			    "at line %d)", c->iface.line);
		c->iface.line = p->line;
		p->sec = SEC_IFACE;
		snprintf(p->where, sizeof(p->where), "[interface]");
		return 0;
	}
	if (strcasecmp(word, "peer") != 0) {
		return conf_perr(p, "unknown section '%s'",
		    conf_quote(whole, q, sizeof(q)));
	}
	if (*name == '\0')
		return conf_perr(p, "missing peer name in [peer]");
	if (!conf_name_valid(name, CONF_NAME_MAX))
		return conf_perr(p, "invalid peer name '%s' (1..%d of A-Z a-z 0-9 . _ -)",
		    conf_quote(name, q, sizeof(q)), CONF_NAME_MAX);
	if (c->n_peers >= CONF_MAX_PEERS)
		return conf_perr(p, "too many peers (more than %d)", CONF_MAX_PEERS);
	if (c->n_peers == c->peers_cap) {    /* doubling: many peers parse in linear time */
		size_t cap = c->peers_cap ? 2 * c->peers_cap : 16;

		if (!(peers = reallocarray(c->peers, cap, sizeof(*peers)))) {
			conf_perr(p, "out of memory");
			return -ENOMEM;
		}
		c->peers = peers;
		c->peers_cap = cap;
	}
	peers = c->peers;
	p->peer = c->n_peers++;
	memset(&peers[p->peer], 0, sizeof(peers[p->peer]));
	util_strlcpy(peers[p->peer].name, name, sizeof(peers[p->peer].name));
	peers[p->peer].line = p->line;
	peers[p->peer].keepalive = CONF_DEFAULT_KEEPALIVE;
	p->sec = SEC_PEER;
	snprintf(p->where, sizeof(p->where), "[peer %s]", name);
	return 0;
}

static int
conf_line(struct conf_parser *p, const char *text, size_t len)
{
	char buf[CONF_LINE_MAX + 1], *s;
	size_t i;

	if (len > 0 && text[len - 1] == '\r')
		len--;
	if (memchr(text, '\0', len))
		return conf_perr(p, "NUL byte in line");
	if (len > CONF_LINE_MAX)
		return conf_perr(p, "line longer than %d characters", CONF_LINE_MAX);
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)text[i];
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return conf_perr(p, "control character 0x%02x in line", ch);
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	if ((s = strchr(buf, '#')))
		*s = '\0';
	s = conf_trim(buf);
	if (*s == '\0' || *s == ';')   /* ';' starts a comment line, as in INI files */
		return 0;
	if (*s == '[')
		return conf_section(p, s);
	return conf_keyvalue(p, s);
}

void
conf_free(struct conf *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n_peers; i++)
		conf_peer_free(&c->peers[i]);
	free(c->peers);
	free(c->iface.address);
	free(c->iface.private_key);
	free(c->iface.certificate);
	free(c->iface.keylog_file);
	free(c->iface.metrics_token_file);
	free(c->iface.user);
	free(c->iface.control);
	free(c->iface.dns);
	for (i = 0; i < c->iface.n_dns_search; i++)
		free(c->iface.dns_search[i]);
	free(c->iface.dns_search);
	for (i = 0; i < c->iface.n_include; i++)
		free(c->iface.include[i].pattern);
	free(c->iface.include);
	for (i = 0; i < c->n_sources; i++)
		free(c->sources[i].file);
	free(c->sources);
	free(c->file);
	free(c);
}

static struct conf *
conf_new(const char *file)
{
	struct conf *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (!(c->file = strdup(file))) {
		free(c);
		return NULL;
	}
	util_strlcpy(c->iface.name, CONF_DEFAULT_NAME, sizeof(c->iface.name));
	c->iface.listen_port = CONF_DEFAULT_PORT;
	c->iface.mtu = 0;
	c->iface.path_mtu = CONF_DEFAULT_PATH_MTU;
	c->iface.encryption = CONF_ENC_DTLS;
	c->iface.offload = CONF_OFFLOAD_AUTO;
	c->iface.threads = CONF_THREADS_AUTO;
	c->iface.log_level = LOG_LEVEL_INFO;
	c->iface.rekey_seconds = CONF_DEFAULT_REKEY_SECONDS;
	c->iface.rekey_bytes = CONF_DEFAULT_REKEY_BYTES;
	c->iface.rekey_records = CONF_DEFAULT_REKEY_RECORDS;
	return c;
}

/* Every line of text, numbered on from p->line. */
static int
conf_lines(struct conf_parser *p, const char *text, size_t len)
{
	const char *nl;
	size_t pos = 0;
	int r;

	/* A UTF-8 byte order mark, as some editors write: not part of line 1. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3;
	while (pos < len) {
		if (p->line == INT_MAX)
			return conf_perr(p, "too many lines");
		p->line++;
		nl = memchr(text + pos, '\n', len - pos);
		r = conf_line(p, text + pos, nl ? (size_t)(nl - (text + pos)) : len - pos);
		if (r < 0)
			return r;
		pos = nl ? (size_t)(nl - text) + 1 : len;
	}
	return 0;
}

int
conf_parse_peers(struct conf *c, const char *file, int include_line, const char *text,
    size_t len, struct conf_error *err)
{
	struct conf_parser p;
	struct conf_source *src;
	int r;

	memset(&p, 0, sizeof(p));
	p.c = c;
	p.err = err;
	p.file = file;
	p.peers_only = true;
	p.line = p.base = c->n_lines;
	if (!(src = reallocarray(c->sources, c->n_sources + 1, sizeof(*src)))) {
		conf_perr(&p, "out of memory");
		return -ENOMEM;
	}
	c->sources = src;
	if (!(src[c->n_sources].file = strdup(file))) {
		conf_perr(&p, "out of memory");
		return -ENOMEM;
	}
	src[c->n_sources].base = p.base;
	src[c->n_sources++].include_line = include_line;
	r = conf_lines(&p, text, len);
	/* One line between files: an empty file still has a line of its own. */
	c->n_lines = p.line < INT_MAX ? p.line + 1 : p.line;
	return r;
}

const char *
conf_line_of(const struct conf *c, int line, int *local)
{
	size_t lo = 0, hi = c->n_sources;

	/* The last source whose base is below line (bases only grow). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->sources[mid].base < line)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || line <= 0) {
		*local = line;
		return c->file ? c->file : "";
	}
	*local = line - c->sources[lo - 1].base;
	return c->sources[lo - 1].file;
}

int
conf_parse(const char *file, const char *text, size_t len, struct conf **out,
    struct conf_error *err)
{
	struct conf_parser p;
	int r;

	memset(&p, 0, sizeof(p));
	p.file = file ? file : "";
	p.err = err;
	*out = NULL;
	if (!(p.c = conf_new(p.file))) {
		conf_perr(&p, "out of memory");
		return -ENOMEM;
	}
	if ((r = conf_lines(&p, text, len)) < 0)
		goto fail;
	p.c->n_lines = p.line;
	if (!p.c->iface.line) {
		p.line = 0;
		r = conf_perr(&p, "missing section [interface]");
		goto fail;
	}
	if (p.c->iface.n_address == 0) {
		p.line = p.c->iface.line;
		r = conf_perr(&p, "missing key 'address' in [interface]");
		goto fail;
	}
	if (!p.c->iface.control &&
	    (r = conf_strdup(&p, &p.c->iface.control, CONF_DEFAULT_CONTROL)) < 0)
		goto fail;
	*out = p.c;
	return 0;
fail:
	conf_free(p.c);
	return r;
}
