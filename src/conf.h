/* conf.h - /etc/tou.conf: the parsed configuration and its loader.
 *
 * conf_parse.c turns text into a struct conf (pure, no I/O); conf.c loads a
 * file and validates the meaning (conflicts, ranges, key files);
 * conf_print.c writes the canonical form that parses back to the same
 * struct; conf_diff.c compares two, key by key.  A struct conf is immutable
 * once loaded; reload builds a new one. */
#ifndef TOUD_CONF_H
#define TOUD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>

#include "util.h"

/* SYSCONFDIR is configure's --sysconfdir (Makefile.am passes it). */
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define CONF_DEFAULT_FILE SYSCONFDIR "/tou.conf"
/* toud -i NAME / touctl -i NAME (the toud@NAME unit): the instance's file
 * and control socket, unless the file names another socket. */
#define CONF_INSTANCE_DIR SYSCONFDIR "/toud"
#define CONF_INSTANCE_CONTROL_DIR "/run/toud"
#define CONF_DEFAULT_NAME "tou0"
#define CONF_DEFAULT_PORT 6080
#define CONF_DEFAULT_CONTROL "/run/toud/toud.sock"
#define CONF_DEFAULT_PATH_MTU 1500
#define CONF_DEFAULT_KEEPALIVE 0
#define CONF_DEFAULT_REKEY_SECONDS 3600
#define CONF_DEFAULT_REKEY_BYTES (64ULL << 30)
/* RFC 8446 5.5: at most 2^24.5 records under one AES-GCM key. */
#define CONF_DEFAULT_REKEY_RECORDS (1ULL << 24)
#define CONF_NAME_MAX 32          /* peer names: [A-Za-z0-9._-], 1..32 chars */
#define CONF_MAX_VALUES 256       /* addresses / allowed-ips per section */
#define CONF_MAX_PEERS 65536
#define CONF_MIN_MTU 576          /* a TUN MTU below this is refused */
#define CONF_MAX_MTU 65535

enum conf_encryption { CONF_ENC_DTLS, CONF_ENC_NONE };
/* offload: auto probes the TUN and UDP offloads at start and drops each at
 * run time if the kernel refuses it; off uses none. */
enum conf_offload { CONF_OFFLOAD_AUTO, CONF_OFFLOAD_OFF };
/* threads: the data threads (udpout.c, rxopen.c, tunout.c); auto: on when the daemon may
 * run on more than two CPUs. */
enum conf_threads { CONF_THREADS_AUTO, CONF_THREADS_ON, CONF_THREADS_OFF };
/* post-quantum (tou.conf(5)): whether a session's keys include ML-KEM-768
 * (the TCP transport's X25519MLKEM768 group, the DTLS transport's
 * exchange after the handshake, doc/protocol.md 1.5).  auto: when both
 * sides have it; required: no session without it; off: never offered. */
enum conf_pq { CONF_PQ_AUTO, CONF_PQ_REQUIRED, CONF_PQ_OFF };
enum conf_family { CONF_FAMILY_BOTH, CONF_FAMILY_V4, CONF_FAMILY_V6 };
/* table: where the routes for the peers' prefixes go (tou.conf(5)).  auto:
 * the main table, except that a prefix of length 0 (0.0.0.0/0, ::/0) goes
 * into a table of its own reached through fwmark rules (a full tunnel);
 * off: no routes at all; number: every route into that table. */
enum conf_table { CONF_TABLE_AUTO, CONF_TABLE_OFF, CONF_TABLE_NUMBER };
/* The kernel's main and local routing tables (RT_TABLE_MAIN, RT_TABLE_LOCAL). */
#define CONF_TABLE_MAIN 254
#define CONF_TABLE_LOCAL 255
/* table = auto: the first table number tried for a full tunnel when no
 * fwmark is set (the number wg-quick starts from too). */
#define CONF_TABLE_AUTO_FIRST 51820

/* A value with the line it came from, so later checks can name it. */
struct conf_prefix {
	struct ipprefix p;
	int line;
};

struct conf_peer {
	char name[CONF_NAME_MAX + 1];
	int line;                          /* line of the [peer NAME] header */
	bool has_fingerprint;
	uint8_t fingerprint[32];           /* SHA-256 of the peer's SubjectPublicKeyInfo */
	char *ca;                          /* CA file, with name */
	int ca_line;
	char *cert_name;                   /* expected CN (key "name") */
	char *endpoint_host;               /* NULL: wait to be contacted */
	uint16_t endpoint_port;
	int endpoint_line;
	/* endpoint-tcp = HOST:PORT: where the peer accepts the TCP transport
	 * (tcp.c); NULL: UDP only.  proxy = http://HOST:PORT: reach it through
	 * an HTTP CONNECT proxy; NULL: directly. */
	char *endpoint_tcp_host;
	uint16_t endpoint_tcp_port;
	int endpoint_tcp_line;
	char *proxy_host;
	uint16_t proxy_port;
	int proxy_line;
	/* proxy-credentials = FILE: "user:password" for the proxy's Basic
	 * authentication, the path as written (made absolute by conf_load());
	 * read by proxy_auth_load_conf() (proxy_auth.h) into proxy_auth, the
	 * base64 the request carries, wiped when the section is freed. */
	char *proxy_auth_file;
	int proxy_auth_line;
	char *proxy_auth;
	/* sni = NAME: the server name the TCP transport's ClientHello carries
	 * (a lower-case DNS name); NULL: none, which is the default. */
	char *sni;
	int sni_line;
	struct conf_prefix *address;       /* the peer's tunnel addresses (host prefixes) */
	size_t n_address;
	struct conf_prefix *allowed_ips;   /* extra prefixes routed to the peer */
	size_t n_allowed_ips;
	unsigned keepalive;                /* seconds; 0 = off */
	/* preshared-key = FILE: the path as written (made absolute by
	 * conf_load()); the key itself is read by psk_load_conf() (psk.h),
	 * not by the parser, and zeroed when the section is freed. */
	char *psk_file;
	int psk_line;
	bool has_psk;
	uint8_t psk[32];
	enum conf_pq post_quantum;
};

struct conf_iface {
	int line;                          /* line of the [interface] header */
	char name[IFNAMSIZ];
	int name_line;                     /* 0: the default (an instance's name, or tou0) */
	struct conf_prefix *address;       /* this node's tunnel addresses with prefix length */
	size_t n_address;
	bool has_listen_addr;
	struct ipaddr listen_addr;         /* listen = ADDR:PORT binds one family, one address */
	uint16_t listen_port;
	int listen_line;                   /* 0: the default port */
	/* listen-tcp = PORT | ADDR:PORT: accept the TCP transport (tcp.c);
	 * off unless has_listen_tcp.  Without an address, both families. */
	bool has_listen_tcp, has_listen_tcp_addr;
	struct ipaddr listen_tcp_addr;
	uint16_t listen_tcp_port;
	int listen_tcp_line;
	char *private_key;
	int private_key_line;
	char *certificate;
	int certificate_line;
	char *keylog_file;
	unsigned mtu;                      /* 0 = auto */
	unsigned path_mtu;                 /* the underlay MTU used by mtu = auto */
	char *user;
	enum conf_encryption encryption;
	enum conf_offload offload;
	enum conf_threads threads;
	int log_level;                     /* enum log_level */
	char *control;
	int control_line;                  /* 0: the default */
	/* metrics = ADDR:PORT: `touctl metrics` over HTTP (metrics_http.c);
	 * off when has_metrics is false.  A loopback address only, unless
	 * metrics-allow-remote = yes. */
	bool has_metrics;
	struct ipaddr metrics_addr;
	uint16_t metrics_port;
	int metrics_line;
	bool metrics_allow_remote;
	/* metrics-token-file = PATH: a bearer token (metrics_http.c); without
	 * it the endpoint serves no peer's series. */
	char *metrics_token_file;
	int metrics_token_line;
	unsigned rekey_seconds;
	unsigned session_max_age;          /* seconds; 0 = twice rekey_seconds */
	uint64_t rekey_bytes;
	uint64_t rekey_records;            /* under one key, either direction */
	uint32_t fwmark;                   /* SO_MARK of the UDP sockets; 0 = off */
	int fwmark_line;
	enum conf_table table;
	uint32_t table_number;             /* table = NUMBER */
	bool fail_open;                    /* full tunnel: no drop route (wg-quick's way) */
	/* server-id = 1..255: the byte a balancer routes this server's
	 * sessions by (sessid.h); 0 = none. */
	uint8_t server_id;
	int server_id_line;
	/* dns = ADDR, ...: name servers for the TUN link (host prefixes,
	 * dns.c applies them); dns-search = DOMAIN, ...: its search domains,
	 * "~DOMAIN" for a routing-only one. */
	struct conf_prefix *dns;
	size_t n_dns;
	char **dns_search;
	size_t n_dns_search;
	int dns_search_line;
	/* include = PATTERN, ...: files of [peer] sections that conf_load()
	 * reads, each match in glob(3) order; relative to the file's
	 * directory.  Not part of the effective configuration: conf_print()
	 * shows the peers themselves, and a reload compares those. */
	struct conf_include *include;
	size_t n_include;
	/* include-follow-symlinks = yes: an included file may be a symbolic
	 * link (by default refused); like include, not part of the effective
	 * configuration. */
	bool include_follow_symlinks;
};

struct conf_include {
	char *pattern;
	int line;
};

/* A file that peers came from (include): its lines are numbered on from
 * the main file's, its first line being base + 1, so every *_line of the
 * configuration names one file (conf_line_of()). */
struct conf_source {
	char *file;
	int base;
	int include_line;                  /* the include that matched it */
};

struct conf {
	char *file;                        /* the file name used in messages */
	struct conf_iface iface;
	struct conf_peer *peers;
	size_t n_peers;
	size_t peers_cap;                  /* peers has room for this many */
	struct conf_source *sources;       /* included files, in the order read */
	size_t n_sources;
	int n_lines;                       /* lines numbered so far, over all files */
};

/* An error: "FILE:LINE: message" (line 0: "FILE: message"). */
struct conf_error {
	char file[256];
	int line;
	char msg[256];
};
/* Format e as "FILE:LINE: message" into buf. */
const char *conf_error_fmt(const struct conf_error *e, char *buf, size_t len);

/* conf_parse.c: parse text of length len (need not be NUL-terminated) that
 * came from `file`.  Syntax, unknown sections and keys, and per-value checks
 * (ranges, address syntax, fingerprint form, duplicate scalar keys) are
 * reported here.  0 and *out, or -EINVAL and *err. */
int conf_parse(const char *file, const char *text, size_t len, struct conf **out,
    struct conf_error *err);
void conf_free(struct conf *c);
/* conf_parse.c: parse text from `file` (an included one) into c: [peer]
 * sections only, numbered on after c's lines, with messages naming file
 * and its own line.  0, or -EINVAL and *err (c keeps what was added). */
int conf_parse_peers(struct conf *c, const char *file, int include_line, const char *text,
    size_t len, struct conf_error *err);
/* conf_parse.c: the file a line of c is in (c->file or an included one),
 * and its line there in *local. */
const char *conf_line_of(const struct conf *c, int line, int *local);

/* conf.c: whole-config checks that need no files: duplicate peer names, an
 * address or allowed-ip claimed by two peers, a peer address equal to one of
 * this node's or outside every interface prefix of its family, missing
 * mandatory keys for the chosen encryption, a TUN MTU too small for IPv6. */
int conf_validate(const struct conf *c, struct conf_error *err);

/* A warning about a config that is valid but suspicious. */
typedef void conf_warn_fn(const struct conf_error *w, void *arg);

/* conf.c: read the file, parse, validate, and check the key files (exist,
 * readable; warn through warn() when the private key is group- or
 * world-readable).  With check_files false the key files are not looked at. */
int conf_load(const char *path, bool check_files, struct conf **out,
    struct conf_error *err, conf_warn_fn *warn, void *warn_arg);

/* conf_print.c: the canonical text of c (malloc'd, NUL-terminated); NULL on
 * ENOMEM.  conf_parse(conf_print(c)) yields a struct equal to c
 * (conf_equal(), conf_diff.h). */
char *conf_print(const struct conf *c);

/* conf.c: an instance name (toud -i NAME) is a peer-style name that does
 * not start with '.'.  conf_instance_paths() writes its file and socket
 * paths; conf_instance_apply() makes the socket c's unless the file named
 * one, and the instance's name that of the TUN device unless the file
 * named one (called after every load, so a reload sees the same; -1 and
 * *err when the name is too long for a device and the file names none). */
bool conf_instance_valid(const char *name);
/* [A-Za-z0-9._-]{1,max}: the characters of peer, instance, interface and
 * user names (conf_parse.c). */
bool conf_name_valid(const char *s, size_t max);
void conf_instance_paths(const char *name, char *file, size_t file_len, char *sock,
    size_t sock_len);
int conf_instance_apply(struct conf *c, const char *instance, const char *sock,
    struct conf_error *err);
/* conf_instance.c: the other configurations that may run beside c, an
 * instance read from `file`: the other *.conf files in file's directory
 * (each the instance named after it) and, for a file in the instances'
 * directory, CONF_DEFAULT_FILE.  The first whose TUN device, listen port
 * (same port, overlapping addresses) or control socket is also c's gives
 * -EEXIST and *err naming both; files that do not load, or have no peer,
 * are passed over. */
int conf_instance_clash(const struct conf *c, const char *file, struct conf_error *err);

/* The TUN MTU for c: mtu if set, else derived from path_mtu (the
 * arithmetic is in conf.c, and in tou.conf(5)). */
unsigned conf_tun_mtu(const struct conf *c);
/* Routing (conf.c, pure).  Whether the peers' prefixes include a prefix of
 * length 0 of family (AF_INET or AF_INET6) under table = auto: then toud
 * routes it through a table of its own and fwmark rules (a full tunnel). */
bool conf_full_tunnel(const struct conf *c, int family);
/* The routing table the route for prefix p goes into: 0 for none
 * (table = off), CONF_TABLE_MAIN, table = NUMBER, or full_table for a
 * prefix of length 0 under table = auto. */
uint32_t conf_route_table(const struct conf_iface *i, const struct ipprefix *p,
    uint32_t full_table);
/* Whether prefix p lies inside the prefix of one of the interface's own
 * addresses: the kernel's connected route for that address sends p into
 * the TUN already (in the main table). */
bool conf_iface_covers(const struct conf_iface *i, const struct ipprefix *p);
/* How long a session (DTLS) or a connection (TCP transport) may live, in
 * ms: session-max-age, else twice rekey-time. */
uint64_t conf_session_max_age_ms(const struct conf_iface *i);
/* The mark toud puts on its UDP sockets: fwmark if set, else full_table
 * when the configuration is a full tunnel of either family, else 0. */
uint32_t conf_effective_fwmark(const struct conf *c, uint32_t full_table);

/* Largest inner packet sizes and header overheads, DESIGN 2.4. */
#define CONF_OVERHEAD_UDP 8
#define CONF_OVERHEAD_GUE_OUTER 16
#define CONF_OVERHEAD_GUE_INNER 4
#define CONF_OVERHEAD_DTLS 37             /* 13 header + 8 explicit nonce + 16 tag (AES-GCM worst case) */

#endif
