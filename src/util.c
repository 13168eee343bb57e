/* util.c - address, number, time and hex helpers. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

size_t
util_addr_len(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

void
util_addr_unmap(struct ipaddr *a)
{
	struct in_addr v4;

	if (a->family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&a->v6))
		return;
	memcpy(&v4, &a->v6.s6_addr[12], sizeof(v4));
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->v4 = v4;
}

bool
util_addr_equal(const struct ipaddr *a, const struct ipaddr *b)
{
	return a->family == b->family &&
	    memcmp(a->b, b->b, util_addr_len(a->family)) == 0;
}

int
util_addr_parse(const char *s, struct ipaddr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, &out->v4) == 1) {
		out->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &out->v6) == 1) {
		out->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

int
util_addr_parse_scoped(const char *s, struct ipaddr *out, char *scope, size_t len)
{
	const char *pct = strchr(s, '%'), *z;
	char buf[INET6_ADDRSTRLEN];

	if (!pct || (size_t)(pct - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, (size_t)(pct - s));
	buf[pct - s] = '\0';
	if (util_addr_parse(buf, out) < 0)
		return -EINVAL;
	if (out->family != AF_INET6 || out->v6.s6_addr[0] != 0xfe ||
	    (out->v6.s6_addr[1] & 0xc0) != 0x80)
		return -EDOM;
	/* An interface name (IFNAMSIZ - 1 of [A-Za-z0-9._-]) or index. */
	for (z = pct + 1; *z; z++)
		if (!(isalnum((unsigned char)*z) || *z == '.' || *z == '_' || *z == '-'))
			return -ERANGE;
	if (z == pct + 1 || z - pct - 1 > 15 || strcmp(pct + 1, ".") == 0 ||
	    strcmp(pct + 1, "..") == 0 || (size_t)(z - pct) > len)
		return -ERANGE;
	memcpy(scope, pct + 1, (size_t)(z - pct));
	return 0;
}

int
util_prefix_parse(const char *s, struct ipprefix *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	long long len;

	if (alen >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (util_addr_parse(buf, &out->addr) < 0)
		return -EINVAL;
	if (!slash) {
		out->len = (uint8_t)(util_addr_len(out->addr.family) * 8);
		return 0;
	}
	if (util_strtonum(slash + 1, 0, (long long)util_addr_len(out->addr.family) * 8,
	    &len) < 0)
		return -EINVAL;
	out->len = (uint8_t)len;
	return 0;
}

void
util_prefix_masked(const struct ipprefix *in, struct ipprefix *out)
{
	size_t n = util_addr_len(in->addr.family), i;

	*out = *in;
	for (i = 0; i < n; i++) {
		unsigned bits = in->len > i * 8 ? in->len - i * 8 : 0;
		if (bits < 8)
			out->addr.b[i] &= (uint8_t)(0xff00u >> bits);
	}
}

bool
util_prefix_contains(const struct ipprefix *p, const struct ipaddr *a)
{
	struct ipprefix pm, am;

	if (p->addr.family != a->family)
		return false;
	util_prefix_masked(p, &pm);
	am.addr = *a;
	am.len = p->len;
	util_prefix_masked(&am, &am);
	return util_addr_equal(&pm.addr, &am.addr);
}

bool
util_prefix_overlap(const struct ipprefix *a, const struct ipprefix *b)
{
	const struct ipprefix *shorter = a->len <= b->len ? a : b;
	const struct ipprefix *longer = shorter == a ? b : a;

	return util_prefix_contains(shorter, &longer->addr);
}

const char *
util_addr_fmt(const struct ipaddr *a, char *buf, size_t len)
{
	if (!inet_ntop(a->family, a->b, buf, (socklen_t)len))
		util_strlcpy(buf, "?", len);
	return buf;
}

const char *
util_prefix_fmt(const struct ipprefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	snprintf(buf, len, "%s/%u", util_addr_fmt(&p->addr, a, sizeof(a)), p->len);
	return buf;
}

int
util_sa_from_addr(union sockaddr_union *sa, const struct ipaddr *a, uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	if (a->family == AF_INET) {
		sa->in.sin_family = AF_INET;
		sa->in.sin_addr = a->v4;
		sa->in.sin_port = htons(port);
	} else if (a->family == AF_INET6) {
		sa->in6.sin6_family = AF_INET6;
		sa->in6.sin6_addr = a->v6;
		sa->in6.sin6_port = htons(port);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

void
util_sa_to_addr(const union sockaddr_union *sa, struct ipaddr *a, uint16_t *port)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa.sa_family == AF_INET) {
		a->family = AF_INET;
		a->v4 = sa->in.sin_addr;
		if (port)
			*port = ntohs(sa->in.sin_port);
	} else if (sa->sa.sa_family == AF_INET6) {
		a->family = AF_INET6;
		a->v6 = sa->in6.sin6_addr;
		if (port)
			*port = ntohs(sa->in6.sin6_port);
	} else if (port) {
		*port = 0;
	}
}

uint16_t
util_sa_port(const union sockaddr_union *sa)
{
	if (sa->sa.sa_family == AF_INET)
		return ntohs(sa->in.sin_port);
	if (sa->sa.sa_family == AF_INET6)
		return ntohs(sa->in6.sin6_port);
	return 0;
}

bool
util_sa_equal(const union sockaddr_union *a, const union sockaddr_union *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in.sin_port == b->in.sin_port &&
		    a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
	if (a->sa.sa_family == AF_INET6)
		return a->in6.sin6_port == b->in6.sin6_port &&
		    memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16) == 0;
	return false;
}

socklen_t
util_sa_len(const union sockaddr_union *sa)
{
	return sa->sa.sa_family == AF_INET6 ? sizeof(sa->in6) : sizeof(sa->in);
}

const char *
util_sa_fmt(const union sockaddr_union *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (sa->sa.sa_family == AF_INET) {
		inet_ntop(AF_INET, &sa->in.sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(sa->in.sin_port));
	} else if (sa->sa.sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&sa->in6.sin6_addr)) {
		inet_ntop(AF_INET, &sa->in6.sin6_addr.s6_addr[12], a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(sa->in6.sin6_port));
	} else if (sa->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &sa->in6.sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(sa->in6.sin6_port));
	} else {
		util_strlcpy(buf, "(none)", len);
	}
	return buf;
}

int
util_strtonum(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

size_t
util_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (size) {
		size_t c = n < size - 1 ? n : size - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

uint64_t
util_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t
util_now_ms(void)
{
	return util_now_us() / 1000;
}

uint64_t
util_wall_s(void)
{
	return (uint64_t)time(NULL);
}

size_t
util_utf8_len(const unsigned char *s)
{
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

void
util_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
util_unhex(const char *in, uint8_t *out, size_t len)
{
	size_t i;

	if (strlen(in) != 2 * len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		int hi = hexval(in[2 * i]), lo = hexval(in[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
