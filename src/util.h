/* util.h - small helpers shared by every module: addresses, numbers, time. */
#ifndef TOUD_UTIL_H
#define TOUD_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* An IPv4 or IPv6 address; family is AF_INET or AF_INET6, unused bytes are 0. */
struct ipaddr {
	int family;
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t b[16];
	};
};

/* An address with a prefix length (0..32 or 0..128). */
struct ipprefix {
	struct ipaddr addr;
	uint8_t len;
};

/* A UDP endpoint. */
union sockaddr_union {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
	struct sockaddr_storage ss;
};

/* "ADDR" or "[ADDR]:PORT" / "ADDR:PORT"; buffer size for any of them. */
#define UTIL_ADDRSTRLEN 64

size_t util_addr_len(int family);             /* 4, 16, or 0 */
bool util_addr_equal(const struct ipaddr *a, const struct ipaddr *b);
/* An IPv4 address that a dual-stack socket reports as ::ffff:a.b.c.d
 * becomes a.b.c.d: the address it is, for limits keyed by source, routes
 * and logs.  Any other address is left alone. */
void util_addr_unmap(struct ipaddr *a);
int util_addr_parse(const char *s, struct ipaddr *out);       /* 0 or -EINVAL */
/* "ADDR%SCOPE": an IPv6 link-local address (fe80::/10) with its zone, an
 * interface name or index (RFC 4007).  0 with the scope copied to scope;
 * -EINVAL when s is no ADDR%SCOPE, -EDOM when ADDR is no IPv6 link-local
 * address, -ERANGE when SCOPE is no interface name or index. */
int util_addr_parse_scoped(const char *s, struct ipaddr *out, char *scope, size_t len);
/* "ADDR/LEN"; without "/LEN" the full length is used.  Host bits may be set
 * (an interface address); util_prefix_masked() clears them. */
int util_prefix_parse(const char *s, struct ipprefix *out);
void util_prefix_masked(const struct ipprefix *in, struct ipprefix *out);
bool util_prefix_contains(const struct ipprefix *p, const struct ipaddr *a);
bool util_prefix_overlap(const struct ipprefix *a, const struct ipprefix *b);
const char *util_addr_fmt(const struct ipaddr *a, char *buf, size_t len);
const char *util_prefix_fmt(const struct ipprefix *p, char *buf, size_t len);

/* Socket address helpers. */
int util_sa_from_addr(union sockaddr_union *sa, const struct ipaddr *a, uint16_t port);
void util_sa_to_addr(const union sockaddr_union *sa, struct ipaddr *a, uint16_t *port);
bool util_sa_equal(const union sockaddr_union *a, const union sockaddr_union *b);
uint16_t util_sa_port(const union sockaddr_union *sa);   /* host order; 0 if none */
socklen_t util_sa_len(const union sockaddr_union *sa);
/* "1.2.3.4:6080" or "[fd00::1]:6080"; IPv4-mapped IPv6 printed as IPv4. */
const char *util_sa_fmt(const union sockaddr_union *sa, char *buf, size_t len);

/* Bounded decimal parse: 0 and *out set, or -EINVAL (not a number) / -ERANGE. */
int util_strtonum(const char *s, long long min, long long max, long long *out);
/* Copy with truncation; returns strlen(src). */
size_t util_strlcpy(char *dst, const char *src, size_t size);

/* CLOCK_MONOTONIC in microseconds and milliseconds, and the wall clock in
 * seconds. */
uint64_t util_now_us(void);
uint64_t util_now_ms(void);
uint64_t util_wall_s(void);

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlongs, no surrogates, nothing above U+10FFFF), or 0 if there is none.
 * s is NUL-terminated: nothing past a NUL is read. */
size_t util_utf8_len(const unsigned char *s);

/* Hex helpers for fingerprints and session IDs. */
void util_hex(const uint8_t *in, size_t len, char *out);  /* out: 2*len+1 */
int util_unhex(const char *in, uint8_t *out, size_t len); /* exactly 2*len hex digits */

#endif
