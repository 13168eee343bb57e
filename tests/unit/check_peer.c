/* check_peer.c - the stateful core (handshake.c, session.c, peer.c,
 * peer_timers.c, rx.c, tx.c) as two in-process nodes wired back to back:
 * each node's output queue goes to a sink that the test hands to the other
 * node's receive path, time is a fake clock, and each node's TUN is one
 * end of a datagram socket pair.  No kernel device, socket or route.
 *
 * Cases: handshake with packets held meanwhile, the simultaneous-initiation
 * tie-break, rekey, reconnect after the peer closed, the dead-peer rule,
 * the pending-queue bound, the roaming rule, a reload that changes a key,
 * a reload that removes a peer in the middle of its handshake, the rekey
 * timer when a handshake runs at its deadline, send-error recovery of
 * our source address, a certificate that two peers' configurations accept,
 * the diagnosis of failed handshakes (no answer, a stuck cookie exchange,
 * no version or cipher suite in common), which peers a host change
 * concerns and the keepalive it makes them send, touctl ping, path
 * validation and session IDs that follow the path, a TUN that refuses
 * merged packets (written segment by segment instead), and records sealed
 * on the sending thread and opened on the opening thread.  Nodes start and
 * stop through daemon.c, in the daemon's order.
 *
 * Paths ("paths" cases): a fake TCP transport registered through the
 * transport interface (transport.h) as tcp.c is, its frames handed over
 * by the test as the sink's datagrams are, with the path policy
 * (path_policy.c) wired as the daemon wires it: UDP blocked and back,
 * UDP lossy but alive, UDP lost one way (each way), UDP and TCP both
 * blocked, an address change on TCP, a failed UDP handshake while on
 * TCP, an inner flow paused 30 s with data one way, UDP that comes back
 * and dies again (moves bounded per minute), a connection ended with no
 * other path up, a network where only TCP gets out (UDP blocked from the
 * start, then back), and both ends opening TCP at once (the connections
 * cross, as tcp.c resolves it); each asserts the moves made and when. */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "bytes.h"
#include "conf.h"
#include "ctx.h"
#include "daemon.h"
#include "dtls.h"
#include "gue.h"
#include "handshake.h"
#include "keys.h"
#include "mlkem.h"
#include "offload.h"
#include "peer.h"
#include "path_policy.h"
#include "peer_timers.h"
#include "pkt.h"
#include "prefix.h"
#include "record.h"
#include "reload.h"
#include "rtnl.h"
#include "rx.h"
#include "sessid.h"
#include "session.h"
#include "tun.h"
#include "tunout.h"
#include "transport.h"
#include "transport_udp.h"
#include "tx.h"
#include "udp.h"

#include "testutil.h"

#define OUT_MAX 512

struct outrec {
	uint8_t buf[2048];
	size_t len;
	union sockaddr_union to;
	struct ipaddr local;
};

struct node {
	struct toud t;
	char dir[1024];
	uint8_t fp[KEYS_FP_LEN];
	int tunpair[2];                 /* [0] is toud's TUN, [1] the test's end */
	union sockaddr_union addr;      /* this node's underlay address */
	struct outrec *out;
	unsigned n_out;
	int send_err;                   /* what the sink reports for every datagram */
	/* With tx's sending thread: each call of the sink waits this long
	 * (holding the thread), and counts the calls made off the main
	 * thread. */
	atomic_uint sink_delay_ms;      /* the next call only; set while the thread runs */
	unsigned sink_off_main;
	bool sink_overflow;             /* more than OUT_MAX datagrams, or a large one */
	/* The fake TCP transport (below): this node's one connection, the
	 * frames it sent that the test has not handed over yet, the opens it
	 * was asked for, and a close by the other end not yet reported. */
	struct fake_conn {
		bool outgoing, up;
	} tconn;
	struct outrec *tframes;
	unsigned n_tframes, t_opens;
	bool t_closed_by_peer;
	unsigned n_sent;                /* datagrams the sink took, ever */
};

static char tmpdir[512];
static uint64_t fake_now;
static pthread_t main_thread;
static struct node A, B;
/* Deliver with the receiver's own address as the local one (as
 * IP_PKTINFO reports it), instead of none. */
static bool deliver_local;
/* The "paths" cases: both nodes register the fake TCP transport instead
 * of tcp.c, and A's peer has endpoint-tcp (B's too with tcp_both); opens
 * fail while tcp_blocked.  When both open at once, the connection of the
 * higher key authenticates first with tcp_higher_first, else the lower's. */
static bool fake_tcp_on, tcp_blocked, tcp_both, tcp_higher_first;
/* pump() drops the datagrams of a blocked direction. */
static bool udp_ab_blocked, udp_ba_blocked;

static uint64_t
fake_clock(const struct toud *t)
{
	(void)t;
	return fake_now;
}

static void
sink(struct toud *t, struct udp_msg *msgs, unsigned n)
{
	struct node *nd = t->sink_arg;
	unsigned i;

	unsigned delay_ms = atomic_exchange(&nd->sink_delay_ms, 0);

	/* On the sending thread no check may fail here: the test looks
	 * at sink_overflow once the thread is gone. */
	if (!pthread_equal(pthread_self(), main_thread))
		nd->sink_off_main++;
	if (delay_ms)
		usleep(delay_ms * 1000);
	for (i = 0; i < n; i++) {
		if (nd->n_out == OUT_MAX || msgs[i].len > sizeof(nd->out[0].buf)) {
			nd->sink_overflow = true;
			msgs[i].err = -ENOBUFS;
			continue;
		}
		memcpy(nd->out[nd->n_out].buf, msgs[i].buf, msgs[i].len);
		nd->out[nd->n_out].len = msgs[i].len;
		nd->out[nd->n_out].to = msgs[i].peer;
		nd->out[nd->n_out].local = msgs[i].local;
		nd->n_out++;
		nd->n_sent++;
		msgs[i].err = nd->send_err;
	}
}

static void
sa_set(union sockaddr_union *sa, const char *addr, uint16_t port)
{
	struct ipaddr a;

	ck_assert_int_eq(util_addr_parse(addr, &a), 0);
	util_sa_from_addr(sa, &a, port);
}

static void
fp_hex(const uint8_t *fp, char *out)
{
	keys_fp_format(fp, out);
}

/* --- a fake TCP transport ---------------------------------------------
 * As the sink fakes UDP: a node's frames wait in tframes until the test
 * hands them to the other node (deliver_tcp()), and an open is answered
 * when the test says (tcp_settle()): up on both ends, or failed while
 * tcp_blocked.  Registered through the transport interface as tcp.c is,
 * so the core cannot tell them apart. */
static struct node *
node_of(const struct peer *p)
{
	return p->toud->sink_arg;
}

static int
fake_open(struct peer *p, struct peer_path *ph)
{
	struct node *n = node_of(p);

	n->t_opens++;
	if (ph->conn)
		return 0;
	n->tconn = (struct fake_conn){ .outgoing = true };
	ph->conn = &n->tconn;
	return 0;
}

static void
fake_close(struct peer *p, struct peer_path *ph)
{
	struct node *n = node_of(p), *o = n == &A ? &B : &A;

	if (!ph->conn)
		return;
	ph->conn = NULL;
	n->tconn = (struct fake_conn){ 0 };
	o->t_closed_by_peer = true;
}

static int
fake_send(struct peer *p, struct peer_path *ph, uint8_t *payload, size_t len, uint8_t tos,
    enum tx_payload kind, uint64_t now)
{
	struct node *n = node_of(p);
	const struct fake_conn *c = ph->conn;

	(void)tos;
	(void)kind;
	(void)now;
	if (!c || !c->up)
		return -ENOTCONN;
	ck_assert_uint_lt(n->n_tframes, OUT_MAX);
	ck_assert_uint_le(len, sizeof(n->tframes[0].buf));
	memcpy(n->tframes[n->n_tframes].buf, payload, len);
	n->tframes[n->n_tframes++].len = len;
	return (int)len + 2;
}

static bool
fake_outgoing(const struct peer *p, const struct peer_path *ph)
{
	const struct fake_conn *c = ph->conn;

	(void)p;
	return c && c->outgoing;
}

static enum transport_state
fake_state(const struct peer *p, const struct peer_path *ph)
{
	const struct fake_conn *c = ph->conn;

	(void)p;
	return !c ? TRANSPORT_DOWN : c->up ? TRANSPORT_UP : TRANSPORT_OPENING;
}

static const char *
fake_cipher(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	return ph->conn ? "TLS_AES_128_GCM_SHA256" : "";
}

static uint64_t
fake_rtt_us(const struct peer *p, const struct peer_path *ph)
{
	(void)p;
	return ph->conn ? 1000 : 0;
}

static const struct transport_ops fake_tcp = {
	.name = "tcp",
	.moved_event = EVENT_TRANSPORT_TCP,
	.open = fake_open,
	.close = fake_close,
	.send = fake_send,
	.outgoing = fake_outgoing,
	.state = fake_state,
	.cipher = fake_cipher,
	.rtt_us = fake_rtt_us,
};

/* The configuration text of node `self` (tunnel address .1 or .2) with its
 * one peer `other`; fp is the fingerprint it pins for the peer. */
static struct conf *
node_conf(const struct node *self, const char *self_addr, const char *peer_name,
    const uint8_t *fp, const char *peer_ep, const char *peer_addr)
{
	char text[8192], f[80], err_buf[300];
	struct conf *c = NULL;
	struct conf_error err;

	fp_hex(fp, f);
	snprintf(text, sizeof(text),
	    "[interface]\nname = tou0\naddress = %s/24\n"
	    "private-key = %s/key.pem\ncertificate = %s/cert.pem\n"
	    "[peer %s]\nfingerprint = %s\nendpoint = %s:6080\naddress = %s\n%s",
	    self_addr, self->dir, self->dir, peer_name, f, peer_ep, peer_addr,
	    !fake_tcp_on ? "" : self == &A ? "endpoint-tcp = 192.0.2.2:443\n" :
	    tcp_both ? "endpoint-tcp = 192.0.2.1:443\n" : "");
	ck_assert_msg(conf_parse("test.conf", text, strlen(text), &c, &err) == 0, "%s",
	    conf_error_fmt(&err, err_buf, sizeof(err_buf)));
	return c;
}

static void
node_keys(struct node *n, const char *name)
{
	char err[256] = "";

	memset(n, 0, sizeof(*n));
	snprintf(n->dir, sizeof(n->dir), "%s/%s", tmpdir, name);
	ck_assert_int_eq(mkdir(n->dir, 0700), 0);
	ck_assert_msg(keys_genkey(n->dir, n->fp, err, sizeof(err)) == 0, "genkey: %s", err);
}

/* What the kernel would give the node (its TUN is one end of a socket
 * pair, its sockets none), then the daemon's own start-up steps that need
 * no kernel, in its order. */
static void
node_start(struct node *n, struct conf *c, const char *underlay)
{
	struct toud *t = &n->t;

	t->conf = c;
	t->clock = fake_clock;
	t->sink = sink;
	t->sink_arg = n;
	n->out = calloc(OUT_MAX, sizeof(*n->out));
	ck_assert_ptr_nonnull(n->out);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, n->tunpair), 0);
	ck_assert_ptr_nonnull(t->tun = calloc(1, sizeof(*t->tun)));
	ck_assert_ptr_nonnull(t->udp = calloc(1, sizeof(*t->udp)));
	t->tun->fd = n->tunpair[0];
	snprintf(t->tun->name, sizeof(t->tun->name), "tou0");
	t->udp->fd4 = t->udp->fd6 = -1;
	sa_set(&n->addr, underlay, 6080);
	t->tun_mtu = conf_tun_mtu(c);
	t->local4 = c->iface.address[0].p.addr;
	ck_assert_ptr_nonnull(t->base = daemon_base_new());
	if (fake_tcp_on) {
		ck_assert_ptr_nonnull(n->tframes = calloc(OUT_MAX, sizeof(*n->tframes)));
		t->transports[t->n_transports++] = &transport_udp;
		t->transports[t->n_transports++] = &fake_tcp;
	}
	ck_assert_int_eq(daemon_start_peers(t), 0);
	ck_assert_int_eq(daemon_start_paths(t), 0);
}

/* The loop's priorities (daemon_base_new()): what runs, in order, in a
 * loop where three metrics replies always have more to render and each
 * part of one makes a datagram arrive on a socket. */
struct loop_log {
	struct event *low[3], *data;
	int sv[2];                      /* the "datagram": [0] written, [1] read */
	char ran[64];
	size_t n;
	unsigned data_left;             /* turns the data path stays busy by itself */
};

static void
loop_log_add(struct loop_log *l, char what)
{
	l->ran[l->n++] = what;
	if (l->n == sizeof(l->ran) - 1)
		event_base_loopbreak(event_get_base(l->data));
}

static void
loop_low_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loop_log *l = arg;
	size_t i;

	(void)what;
	for (i = 0; i < ARRAY_SIZE(l->low); i++)
		if (event_get_fd(l->low[i]) == fd)
			event_active(l->low[i], EV_READ, 0);
	ck_assert_int_eq(send(l->sv[0], "", 1, MSG_DONTWAIT), 1);
	loop_log_add(l, 'L');
}

static void
loop_data_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loop_log *l = arg;
	char b[64];

	(void)what;
	while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
	if (l->data_left && --l->data_left)
		event_active(l->data, EV_READ, 0);
	loop_log_add(l, 'D');
}

START_TEST(loop_priorities)
{
	struct event_base *base = daemon_base_new();
	struct loop_log l = { .data_left = 5 };
	size_t i;

	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, l.sv), 0);
	ck_assert_ptr_nonnull(l.data = event_new(base, l.sv[1], EV_READ | EV_PERSIST,
	    loop_data_cb, &l));
	ck_assert_int_eq(event_get_priority(l.data), TOUD_PRIO_DEFAULT);
	ck_assert_int_eq(event_add(l.data, NULL), 0);
	for (i = 0; i < ARRAY_SIZE(l.low); i++) {
		ck_assert_ptr_nonnull(l.low[i] = event_new(base, (evutil_socket_t)(100 + i), 0,
		    loop_low_cb, &l));
		ck_assert_int_eq(event_priority_set(l.low[i], TOUD_PRIO_LOW), 0);
		event_active(l.low[i], EV_READ, 0);
	}
	/* the data path, busy for 5 turns, goes first; then a part of one
	 * reply a turn, each time followed by the datagram it let in */
	event_active(l.data, EV_READ, 0);
	ck_assert_int_eq(event_base_dispatch(base), 0);
	ck_assert_str_eq(l.ran, "DDDDD"
	    "LDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLDLD");
	for (i = 0; i < ARRAY_SIZE(l.low); i++)
		event_free(l.low[i]);
	event_free(l.data);
	event_base_free(base);
	close(l.sv[0]);
	close(l.sv[1]);
}
END_TEST

/* The daemon's teardown (which closes toud's end of the TUN), then the
 * test's own. */
static void
node_stop(struct node *n)
{
	daemon_stop(&n->t);
	conf_free(n->t.conf);
	close(n->tunpair[1]);
	free(n->out);
	free(n->tframes);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
setup(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/check_peer.XXXXXX", base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	fake_now = 1000000;
	deliver_local = false;
	udp_ab_blocked = udp_ba_blocked = false;
	main_thread = pthread_self();
	node_keys(&A, "a");
	node_keys(&B, "b");
	node_start(&A, node_conf(&A, "10.77.0.1", "b", B.fp, "192.0.2.2", "10.77.0.2"),
	    "192.0.2.1");
	node_start(&B, node_conf(&B, "10.77.0.2", "a", A.fp, "192.0.2.1", "10.77.0.1"),
	    "192.0.2.2");
}

static void
teardown(void)
{
	node_stop(&A);
	node_stop(&B);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static struct peer *
peer_of(struct node *n)
{
	ck_assert_uint_eq(n->t.n_peers, 1);
	return n->t.peers[0];
}

/* Run a node's loop once: TUN reads and the deferred flush. */
static void
spin(struct node *n)
{
	event_base_loop(n->t.base, EVLOOP_NONBLOCK);
	tx_flush_records(&n->t);
}

/* Hand `from`'s output records [first, last) to `to`, as sent from
 * `src` (from's own address unless given). */
static void
deliver_range(struct node *from, struct node *to, unsigned first, unsigned last,
    const union sockaddr_union *src)
{
	struct udp_msg m;
	unsigned i;

	for (i = first; i < last; i++) {
		memset(&m, 0, sizeof(m));
		m.buf = from->out[i].buf;
		m.len = from->out[i].len;
		m.peer = src ? *src : from->addr;
		if (deliver_local)
			util_sa_to_addr(&to->addr, &m.local, NULL);
		rx_input(&to->t, &m, 1);
	}
}

/* Move everything `from` sent to `to`; the count moved. */
static unsigned
deliver(struct node *from, struct node *to)
{
	unsigned n = from->n_out;

	from->n_out = 0;
	deliver_range(from, to, 0, n, NULL);
	return n;
}

static void tcp_settle(void);
static unsigned deliver_tcp(struct node *from, struct node *to);

/* Exchange until both nodes are quiet: the loops run, UDP datagrams are
 * delivered unless that direction is blocked (then dropped), and with the
 * fake TCP transport its opens and closes are answered and its frames
 * delivered. */
static void
pump(void)
{
	int round;

	for (round = 0; round < 50; round++) {
		unsigned moved = 0;

		spin(&A);
		spin(&B);
		tcp_settle();
		if (udp_ab_blocked)
			A.n_out = 0;
		moved += deliver(&A, &B) + deliver_tcp(&A, &B);
		spin(&B);
		if (udp_ba_blocked)
			B.n_out = 0;
		moved += deliver(&B, &A) + deliver_tcp(&B, &A);
		tcp_settle();
		if (!moved)
			return;
	}
	ck_abort_msg("the nodes did not settle");
}

/* Zeroes len bytes at p and writes an IPv4 header (DF, TTL 64, its
 * checksum) from .1 to .2 (or back) for a packet of len bytes; s and d get
 * the addresses. */
static void
ip4_header(uint8_t *p, size_t len, uint8_t proto, uint16_t id, bool from_a, struct ipaddr *s,
    struct ipaddr *d)
{
	ck_assert_int_eq(util_addr_parse(from_a ? "10.77.0.1" : "10.77.0.2", s), 0);
	ck_assert_int_eq(util_addr_parse(from_a ? "10.77.0.2" : "10.77.0.1", d), 0);
	memset(p, 0, len);
	p[0] = 0x45;
	bytes_put16(p + 2, (uint16_t)len);
	bytes_put16(p + 4, id);
	p[6] = 0x40;
	p[8] = 64;
	p[9] = proto;
	memcpy(p + 12, s->b, 4);
	memcpy(p + 16, d->b, 4);
	bytes_put16(p + 10, ntohs(pkt_csum(p, 20)));
}

/* An IPv4 UDP packet from .1 to .2 (or back) carrying seq. */
static size_t
udp_packet(uint8_t *p, bool from_a, uint32_t seq)
{
	struct ipaddr s, d;
	const size_t plen = 32;
	size_t len = 20 + 8 + plen;
	uint16_t ck;

	ip4_header(p, len, IPPROTO_UDP, 0, from_a, &s, &d);
	bytes_put16(p + 20, 4000);
	bytes_put16(p + 22, 5000);
	bytes_put16(p + 24, (uint16_t)(8 + plen));
	bytes_put32(p + 28, seq);
	ck = pkt_l4_csum(AF_INET, &s, &d, IPPROTO_UDP, p + 20, 8 + plen);
	bytes_put16(p + 26, ntohs(ck) ? ntohs(ck) : 0xffff);
	return len;
}

static void
tun_send(struct node *n, bool from_a, uint32_t seq)
{
	uint8_t p[128];
	size_t len = udp_packet(p, from_a, seq);

	ck_assert_int_eq(send(n->tunpair[1], p, len, 0), (ssize_t)len);
}

/* The next packet the node wrote to its TUN: its UDP seq, or -1. */
static long
tun_recv(struct node *n)
{
	uint8_t p[2048];
	ssize_t len = recv(n->tunpair[1], p, sizeof(p), 0);

	if (len < 0)
		return -1;
	ck_assert_int_ge(len, 20 + 8 + 4);
	ck_assert_uint_eq(p[9], IPPROTO_UDP);
	return (long)bytes_get32(p + 28);
}

static const char *
state(struct node *n)
{
	return peer_state_name(peer_of(n)->state);
}

static void
bring_up(void)
{
	tun_send(&A, true, 1);
	pump();
	ck_assert_str_eq(state(&A), "up");
	ck_assert_str_eq(state(&B), "up");
	ck_assert_ptr_nonnull(peer_of(&A)->cur);
	ck_assert_ptr_nonnull(peer_of(&B)->cur);
	ck_assert_uint_eq(peer_of(&A)->cur->id, peer_of(&B)->cur->id);
	ck_assert_int_eq(tun_recv(&B), 1);
}

/* An IPv4 TCP segment from .1 to .2 of a sport -> 5000 flow: IPv4 ID
 * 100 + i, sequence number 1000 + i * TCP_SEG, ACK (and PSH if psh),
 * TCP_SEG bytes of payload that name i. */
#define TCP_SEG 1000
static size_t
tcp_packet(uint8_t *p, unsigned i, bool psh, uint16_t sport)
{
	struct ipaddr s, d;
	size_t len = 20 + 20 + TCP_SEG;

	ip4_header(p, len, IPPROTO_TCP, (uint16_t)(100 + i), true, &s, &d);
	bytes_put16(p + 20, sport);
	bytes_put16(p + 22, 5000);
	bytes_put32(p + 24, 1000 + i * TCP_SEG);
	bytes_put32(p + 28, 1);
	p[32] = 5 << 4;
	p[33] = (uint8_t)(0x10 | (psh ? 0x08 : 0));
	bytes_put16(p + 34, 1000);
	memset(p + 40, (int)('a' + i), TCP_SEG);
	bytes_put16(p + 36, ntohs(pkt_l4_csum(AF_INET, &s, &d, IPPROTO_TCP, p + 20, 20 + TCP_SEG)));
	return len;
}

/* B's TUN writes, as its tun_sink sees them: merged ones are refused
 * (-EINVAL, as a kernel without the offload answers), plain ones kept. */
#define TUNW_MAX 32
static struct {
	uint8_t buf[2048];
	size_t len;
} tunw[TUNW_MAX];
static unsigned n_tunw, n_tunw_refused;

static int
tun_sink_no_gso(struct toud *t, const struct offload_vnet *vh, const uint8_t *pkt, size_t len)
{
	(void)t;
	if (vh->gso_type != OFFLOAD_GSO_NONE) {
		n_tunw_refused++;
		return -EINVAL;
	}
	ck_assert_uint_lt(n_tunw, TUNW_MAX);
	ck_assert_uint_le(len, sizeof(tunw[0].buf));
	memcpy(tunw[n_tunw].buf, pkt, len);
	tunw[n_tunw++].len = len;
	return 0;
}

/* Move everything `from` sent to `to` in one receive batch. */
static void
deliver_batch(struct node *from, struct node *to)
{
	struct udp_msg m[UDP_BATCH];
	unsigned i;

	ck_assert_uint_le(from->n_out, UDP_BATCH);
	memset(m, 0, sizeof(m));
	for (i = 0; i < from->n_out; i++) {
		m[i].buf = from->out[i].buf;
		m[i].len = from->out[i].len;
		m[i].peer = from->addr;
	}
	rx_input(&to->t, m, from->n_out);
	from->n_out = 0;
}

/* Segment i of the flow from sport, as B wrote it (write w): whole,
 * checksums right, payload and sequence number in place, PSH only where it
 * was sent. */
static void
tunw_check(unsigned w, unsigned i, bool psh, uint16_t sport)
{
	const uint8_t *p = tunw[w].buf;
	struct ipaddr s = { .family = AF_INET }, d = { .family = AF_INET };
	uint8_t tcp[20 + TCP_SEG], want[TCP_SEG];

	ck_assert_uint_eq(tunw[w].len, 20 + 20 + TCP_SEG);
	ck_assert_uint_eq(pkt_csum(p, 20), 0);
	ck_assert_uint_eq(bytes_get16(p + 20), sport);
	ck_assert_uint_eq(bytes_get32(p + 24), 1000 + i * TCP_SEG);
	ck_assert_uint_eq(p[33], 0x10 | (psh ? 0x08 : 0));
	memset(want, (int)('a' + i), sizeof(want));
	ck_assert_mem_eq(p + 40, want, TCP_SEG);
	memcpy(s.b, p + 12, 4);
	memcpy(d.b, p + 16, 4);
	memcpy(tcp, p + 20, sizeof(tcp));
	tcp[16] = tcp[17] = 0;
	ck_assert_uint_eq(pkt_l4_csum(AF_INET, &s, &d, IPPROTO_TCP, tcp, sizeof(tcp)),
	    htons(bytes_get16(p + 36)));
}

/* A TUN that refuses merged packets: B merges in-order segments of a flow
 * as long as the kernel takes them; the first refusal writes that packet
 * segment by segment, counts it, and turns merging off for good, without
 * reordering what comes after it in the same batch. */
START_TEST(tun_refuses_merged)
{
	const unsigned nseg = 6, psh = 2;
	uint8_t p[2048];
	size_t len;
	unsigned i;

	bring_up();
	tunout_free(B.t.tunout);
	rx_free(B.t.rx);
	B.t.tun->vnet = true;
	ck_assert_ptr_nonnull(B.t.rx = rx_new(&B.t));
	ck_assert_ptr_nonnull(B.t.tunout = tunout_new(&B.t, rx_coalescer(B.t.rx)));
	B.t.tun_sink = tun_sink_no_gso;
	n_tunw = n_tunw_refused = 0;
	ck_assert(rx_coalescing(B.t.rx));

	/* Flow Y's first segment waits in the coalescer; flow X's 0-2 merge
	 * (PSH on 2 ends the merge) and 3 makes B write them: the TUN
	 * refuses.  X's 3, 4, 5 and then Y's two segments must follow in
	 * order. */
	len = tcp_packet(p, 20, false, 4001);
	ck_assert_int_eq(send(A.tunpair[1], p, len, 0), (ssize_t)len);
	for (i = 0; i < nseg; i++) {
		len = tcp_packet(p, i, i == psh, 4000);
		ck_assert_int_eq(send(A.tunpair[1], p, len, 0), (ssize_t)len);
	}
	len = tcp_packet(p, 21, false, 4001);
	ck_assert_int_eq(send(A.tunpair[1], p, len, 0), (ssize_t)len);
	spin(&A);
	ck_assert_uint_eq(A.n_out, nseg + 2);
	deliver_batch(&A, &B);
	ck_assert_uint_eq(n_tunw_refused, 1);
	ck_assert_uint_eq(B.t.events[EVENT_TUN_GSO_REFUSED], 1);
	ck_assert(!rx_coalescing(B.t.rx));
	ck_assert_uint_eq(n_tunw, nseg + 2);
	for (i = 0; i < nseg; i++)
		tunw_check(i, i, i == psh, 4000);
	tunw_check(nseg, 20, false, 4001);
	tunw_check(nseg + 1, 21, false, 4001);

	/* From now on each segment is written as it comes. */
	n_tunw = 0;
	for (i = nseg; i < 2 * nseg; i++) {
		len = tcp_packet(p, i, false, 4000);
		ck_assert_int_eq(send(A.tunpair[1], p, len, 0), (ssize_t)len);
	}
	spin(&A);
	deliver_batch(&A, &B);
	ck_assert_uint_eq(n_tunw_refused, 1);
	ck_assert_uint_eq(n_tunw, nseg);
	for (i = 0; i < nseg; i++)
		tunw_check(i, nseg + i, false, 4000);
	ck_assert_uint_eq(peer_of(&B)->drops[DROP_TUN_WRITE], 0);
}
END_TEST

START_TEST(handshake_with_held_packets)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);

	ck_assert_str_eq(state(&A), "idle");
	tun_send(&A, true, 7);
	tun_send(&A, true, 8);
	spin(&A);
	/* The packets wait for the handshake the first one started. */
	ck_assert_str_eq(state(&A), "handshaking");
	ck_assert_uint_eq(pa->pending_n, 2);
	ck_assert_ptr_nonnull(pa->next);
	pump();
	ck_assert_str_eq(state(&A), "up");
	ck_assert_str_eq(state(&B), "up");
	ck_assert_uint_eq(pa->cur->id, pb->cur->id);
	ck_assert(pa->cur->initiator);
	ck_assert(!pb->cur->initiator);
	ck_assert_uint_eq(pa->pending_n, 0);
	ck_assert_int_eq(tun_recv(&B), 7);
	ck_assert_int_eq(tun_recv(&B), 8);
	ck_assert_int_eq(tun_recv(&B), -1);
	ck_assert_uint_eq(pa->events[EVENT_HANDSHAKE_STARTED], 1);
	ck_assert_uint_eq(pa->events[EVENT_HANDSHAKE_COMPLETED], 1);
	ck_assert_uint_eq(pb->events[EVENT_HANDSHAKE_COMPLETED], 1);
	ck_assert_uint_eq(session_half_open(&B.t), 0);
	/* And back. */
	tun_send(&B, false, 9);
	pump();
	ck_assert_int_eq(tun_recv(&A), 9);
}
END_TEST

START_TEST(tie_break)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t id_a, id_b, want;

	/* Both start at once, before either hears of the other. */
	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	ck_assert_int_eq(handshake_initiate(pb, fake_now), 0);
	id_a = pa->next->id;
	id_b = pb->next->id;
	pump();
	/* The session started by the node with the lower fingerprint wins,
	 * on both nodes. */
	want = memcmp(A.fp, B.fp, KEYS_FP_LEN) < 0 ? id_a : id_b;
	ck_assert_ptr_nonnull(pa->cur);
	ck_assert_ptr_nonnull(pb->cur);
	ck_assert_uint_eq(pa->cur->id, want);
	ck_assert_uint_eq(pb->cur->id, want);
	ck_assert_ptr_nonnull(pa->prev);
	ck_assert_uint_eq(pa->prev->id, want == id_a ? id_b : id_a);
	ck_assert_str_eq(state(&A), "up");
	ck_assert_str_eq(state(&B), "up");
	tun_send(&A, true, 3);
	pump();
	ck_assert_int_eq(tun_recv(&B), 3);
}
END_TEST

START_TEST(rekey)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t old;

	bring_up();
	old = pa->cur->id;
	ck_assert(!handshake_needs_rekey(pa, fake_now + 1000));
	fake_now += 1000ULL * A.t.conf->iface.rekey_seconds;
	ck_assert(handshake_needs_rekey(pa, fake_now));
	ck_assert(!handshake_needs_rekey(pb, fake_now));      /* only the initiator, by time */
	tun_send(&A, true, 2);          /* the send path starts the rekey */
	spin(&A);
	ck_assert_ptr_nonnull(pa->next);
	ck_assert_str_eq(state(&A), "up");
	pump();
	ck_assert_uint_ne(pa->cur->id, old);
	ck_assert_uint_eq(pa->cur->id, pb->cur->id);
	ck_assert_ptr_nonnull(pa->prev);
	ck_assert_uint_eq(pa->prev->id, old);
	ck_assert_int_eq(tun_recv(&B), 2);
	tun_send(&A, true, 4);
	pump();
	ck_assert_int_eq(tun_recv(&B), 4);
	ck_assert_str_eq(state(&B), "up");
}
END_TEST

/* session-max-age: at that age (default twice rekey-time) the responder
 * too wants a new session, so an initiator that never rekeys (an attacker
 * holding a once-accepted key) cannot keep one; its new handshake replaces
 * the old session. */
/* The ML-KEM-768 exchange step by step (where OpenSSL has it): the
 * handshake's flights until A, the initiator, has sent PQ_INIT, its last
 * datagram, not delivered yet. */
static void
pq_until_init(struct peer *pa)
{
	int round;

	for (round = 0; round < 20; round++) {
		spin(&A);
		if (pa->next && pa->next->pq_wait) {
			ck_assert_uint_gt(A.n_out, 0);
			ck_assert_uint_gt(A.out[A.n_out - 1].len, 1200);
			return;
		}
		deliver(&A, &B);
		spin(&B);
		deliver(&B, &A);
	}
	ck_abort_msg("no PQ_INIT");
}

/* Hand `to` n copies of rec (a datagram of `from`), each with its last
 * byte, in the record's tag, changed when forge: records under the
 * session's ID that fail to open. */
static void
deliver_copies(struct node *from, struct node *to, const struct outrec *rec, int n, bool forge)
{
	struct outrec c;
	struct udp_msg m;
	int i;

	for (i = 0; i < n; i++) {
		c = *rec;
		if (forge)
			c.buf[c.len - 1] ^= 0x5a;
		memset(&m, 0, sizeof(m));
		m.buf = c.buf;
		m.len = c.len;
		m.peer = from->addr;
		rx_input(&to->t, &m, 1);
	}
	spin(to);
}

/* Anyone who sees a session ID can send records under it that fail.
 * During the exchange they are a preshared-key mismatch only where
 * nothing opened under K0 yet (A before PQ_REPLY: reported, not B after
 * PQ_INIT), and only for the peer's current session or its first (not
 * during a rekey); none ends the session, which completes, and the
 * reason goes when it is up. */
/* A starts a handshake with B and it runs up to B's PQ_REPLY, which is
 * held (returned in *reply) and not delivered: the new session's ID. */
static uint64_t
pq_held_reply(struct peer *pa, struct outrec *reply)
{
	uint64_t id;

	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	pq_until_init(pa);
	id = pa->next->id;
	deliver(&A, &B);
	spin(&B);
	ck_assert_uint_eq(B.n_out, 1);
	*reply = B.out[0];
	return id;
}

START_TEST(pq_forged_records)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	struct outrec reply, probes[2];
	uint64_t id, old, bad;

	if (!mlkem_available())
		return;
	id = pq_held_reply(pa, &reply);        /* PQ_REPLY, held */
	B.n_out = 0;
	A.n_out = 0;
	deliver_copies(&B, &A, &reply, 2, true);
	ck_assert_uint_eq(pa->events[EVENT_PSK_MISMATCH], 1);
	ck_assert_str_eq(peer_error(pa), "preshared-key mismatch: the other side has a "
	    "preshared-key for this node, this side none");
	ck_assert_ptr_nonnull(pa->next);
	ck_assert_uint_eq(pa->next->id, id);
	/* A answered each with a keepalive under K0: changed on the way,
	 * with sequence numbers B has not seen, they fail there, where
	 * PQ_INIT opened. */
	ck_assert_uint_eq(A.n_out, 2);
	probes[0] = A.out[0];
	probes[1] = A.out[1];
	A.n_out = 0;
	bad = pb->drops[DROP_BAD_RECORD] + B.t.drops[DROP_BAD_RECORD];
	deliver_copies(&A, &B, &probes[0], 1, true);
	deliver_copies(&A, &B, &probes[1], 1, true);
	ck_assert_uint_eq(B.n_out, 0);          /* no keepalive: no mismatch */
	ck_assert_uint_eq(pb->events[EVENT_PSK_MISMATCH], 0);
	ck_assert_uint_eq(pb->drops[DROP_BAD_RECORD] + B.t.drops[DROP_BAD_RECORD], bad + 2);
	deliver_copies(&B, &A, &reply, 1, false);
	pump();
	ck_assert_str_eq(state(&A), "up");
	ck_assert_str_eq(state(&B), "up");
	ck_assert_uint_eq(pa->cur->id, id);
	ck_assert_uint_eq(pb->cur->id, id);
	ck_assert(dtls_sess_post_quantum(pa->cur->dtls) && dtls_sess_post_quantum(pb->cur->dtls));
	ck_assert_str_eq(peer_error(pa), "");
	ck_assert_uint_eq(pb->events[EVENT_PSK_MISMATCH], 0);
	ck_assert_uint_eq(pa->events[EVENT_HANDSHAKE_COMPLETED], 1);
	ck_assert_uint_eq(pb->events[EVENT_HANDSHAKE_COMPLETED], 1);

	/* A rekey: the old session is current, the new one's failures are
	 * drops only. */
	old = id;
	fake_now += 1000ULL * A.t.conf->iface.rekey_seconds;
	id = pq_held_reply(pa, &reply);
	deliver_copies(&B, &A, &reply, 2, true);
	ck_assert_uint_eq(pa->events[EVENT_PSK_MISMATCH], 1);
	ck_assert_ptr_nonnull(pa->next);
	pump();
	ck_assert_uint_eq(pa->cur->id, id);
	ck_assert_uint_eq(pb->cur->id, id);
	ck_assert_uint_ne(id, old);
	ck_assert_uint_eq(pa->events[EVENT_PSK_MISMATCH], 1);
	ck_assert_uint_eq(pb->events[EVENT_PSK_MISMATCH], 0);
}
END_TEST

/* On a slow path the responder answers PQ_INIT again after the initiator
 * moved to K1: those late PQ_REPLYs under K0 fail there, before anything
 * of the responder opened under K1, and are drops, not a mismatch. */
START_TEST(pq_late_reply)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	struct outrec reply;
	uint64_t bad;

	if (!mlkem_available())
		return;
	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	pq_until_init(pa);
	deliver(&A, &B);
	spin(&B);
	ck_assert_uint_eq(B.n_out, 1);
	reply = B.out[0];
	deliver(&B, &A);
	ck_assert_str_eq(state(&A), "up");
	ck_assert(dtls_sess_post_quantum(pa->cur->dtls));
	bad = pa->drops[DROP_BAD_RECORD];
	/* B has sent nothing under K1 yet (A's keepalive is not delivered) */
	deliver_copies(&B, &A, &reply, 2, false);
	ck_assert_uint_eq(pa->drops[DROP_BAD_RECORD], bad + 2);
	ck_assert_uint_eq(pa->events[EVENT_PSK_MISMATCH], 0);
	ck_assert_str_eq(peer_error(pa), "");
	pump();
	ck_assert_str_eq(state(&A), "up");
	ck_assert_str_eq(state(&B), "up");
	ck_assert_uint_eq(pa->events[EVENT_PSK_MISMATCH], 0);
	ck_assert_uint_eq(pb->events[EVENT_PSK_MISMATCH], 0);
}
END_TEST

START_TEST(max_age_both_roles)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t old, age;

	bring_up();
	old = pb->cur->id;
	age = handshake_max_age_ms(&B.t);
	ck_assert_uint_eq(age, 2000ULL * B.t.conf->iface.rekey_seconds);
	ck_assert(!pb->cur->initiator);
	ck_assert(!handshake_needs_rekey(pb, fake_now + age - 1));
	fake_now += age;
	ck_assert(handshake_needs_rekey(pb, fake_now));
	tun_send(&B, false, 7);         /* the responder's send path starts it */
	spin(&B);
	ck_assert_ptr_nonnull(pb->next);
	ck_assert(pb->next->initiator);
	pump();
	ck_assert_uint_ne(pb->cur->id, old);
	ck_assert_uint_eq(pa->cur->id, pb->cur->id);
	ck_assert(!handshake_needs_rekey(pb, fake_now));
	ck_assert_int_eq(tun_recv(&A), 7);
	/* An explicit session-max-age wins over the default. */
	B.t.conf->iface.session_max_age = 300;
	ck_assert_uint_eq(handshake_max_age_ms(&B.t), 300000);
	ck_assert(handshake_needs_rekey(pb, fake_now + 300000));
	B.t.conf->iface.session_max_age = 0;
}
END_TEST

/* The rekey timer fires at the deadline while another handshake runs:
 * the remaining delay used to underflow to about 2^64 ms, losing it. */
START_TEST(rekey_delay_underflow)
{
	const uint64_t est = 5000, rk = 3600000;

	ck_assert_uint_eq(peer_timers_rekey_delay(est, rk, est), rk);
	ck_assert_uint_eq(peer_timers_rekey_delay(est, rk, est + rk - 10), 10);
	ck_assert_uint_le(peer_timers_rekey_delay(est, rk, est + rk), 1000);
	ck_assert_uint_le(peer_timers_rekey_delay(est, rk, est + rk + 1), 1000);
	ck_assert_uint_gt(peer_timers_rekey_delay(est, rk, est + rk + 1), 0);

	/* In the daemon: a handshake runs at the deadline, so no rekey now,
	 * and the timer looks again soon. */
	bring_up();
	fake_now += 1000ULL * A.t.conf->iface.rekey_seconds + 5;
	ck_assert_int_eq(session_new_id(&A.t, 0) != 0, 1);
	ck_assert_int_eq(handshake_initiate(peer_of(&A), fake_now), 0);
	ck_assert(!handshake_needs_rekey(peer_of(&A), fake_now));
	ck_assert_uint_le(peer_timers_rekey_delay(peer_of(&A)->cur->established_ms,
	    1000ULL * A.t.conf->iface.rekey_seconds, fake_now), 1000);
}
END_TEST

START_TEST(reconnect_after_close)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);

	bring_up();
	/* A restarts: it says goodbye and forgets its sessions. */
	dtls_sess_close(pa->cur->dtls);
	spin(&A);
	while (pa->cur || pa->prev)
		session_free(pa->cur ? pa->cur : pa->prev);
	deliver(&A, &B);
	ck_assert_ptr_null(pb->cur);
	ck_assert_str_eq(state(&B), "idle");
	ck_assert_uint_eq(pb->events[EVENT_SESSION_CLOSED], 0);
	ck_assert_uint_eq(B.t.events[EVENT_SESSION_CLOSED], 1);
	/* B knows A's address: it reconnects 1 s later. */
	ck_assert(pb->reconnect);
	ck_assert_str_eq(peer_error(pb), "closed by the peer");
	ck_assert_uint_eq(pb->next_attempt_ms, fake_now + 1000);
	fake_now += 1000;
	ck_assert_int_eq(handshake_initiate(pb, fake_now), 0);
	ck_assert_str_eq(state(&B), "handshaking");
	pump();
	ck_assert_str_eq(state(&B), "up");
	ck_assert_ptr_nonnull(pa->cur);
	ck_assert_uint_eq(pa->cur->id, pb->cur->id);
	ck_assert(!pb->reconnect);
	ck_assert_str_eq(peer_error(pb), "");
	ck_assert_uint_eq(pb->next_attempt_ms, 0);
}
END_TEST

START_TEST(dead_peer)
{
	struct peer *pa = peer_of(&A);
	uint64_t sent;

	bring_up();
	/* Keepalive is off.  B is gone: what A sends is never answered. */
	fake_now += 60000;
	sent = fake_now;
	tun_send(&A, true, 5);
	spin(&A);
	A.n_out = 0;
	ck_assert_uint_eq(pa->unanswered_ms, sent);
	ck_assert_uint_eq(peer_timers_dead_ms(pa), 15000);
	fake_now = sent + 14999;
	ck_assert(!peer_timers_check_dead(pa, fake_now));
	ck_assert_str_eq(state(&A), "up");
	fake_now = sent + 15000;
	ck_assert(peer_timers_check_dead(pa, fake_now));
	ck_assert_str_eq(state(&A), "dead");

	/* An answer makes it up again. */
	tun_send(&B, false, 6);
	pump();
	ck_assert_int_eq(tun_recv(&A), 6);
	ck_assert_str_eq(state(&A), "up");
	ck_assert_uint_eq(pa->unanswered_ms, 0);
}
END_TEST

/* A one-way stream: the receiver answers by itself, so the sender does not
 * call it dead. */
START_TEST(one_way_not_dead)
{
	struct peer *pa = peer_of(&A);
	int i;

	bring_up();
	for (i = 0; i < 20; i++) {
		fake_now += 1000;
		tun_send(&A, true, (uint32_t)(100 + i));
		pump();
		ck_assert_int_eq(tun_recv(&B), 100 + i);
		ck_assert(!peer_timers_check_dead(pa, fake_now));
	}
	ck_assert_str_eq(state(&A), "up");
}
END_TEST

/* The last data of an exchange (say the final ACK) reaches a peer that had
 * just sent: it has no reason to send again, so it answers with a passive
 * keepalive, and the sender does not call it dead. */
START_TEST(last_data_answered)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t t0;

	bring_up();
	fake_now += 60000;
	t0 = fake_now;
	tun_send(&A, true, 10);
	pump();
	ck_assert_int_eq(tun_recv(&B), 10);
	fake_now = t0 + 1000;
	tun_send(&B, false, 11);
	spin(&B);
	ck_assert_uint_eq(pb->unanswered_ms, t0 + 1000);
	deliver(&B, &A);
	ck_assert_int_eq(tun_recv(&A), 11);
	/* A sent 1 s ago: no answer at once. */
	spin(&A);
	ck_assert_uint_eq(A.n_out, 0);
	fake_now = t0 + 6000;
	ck_assert(peer_timers_passive_keepalive(pa));
	spin(&A);
	ck_assert_uint_gt(deliver(&A, &B), 0);
	ck_assert_uint_eq(pb->unanswered_ms, 0);
	/* Answered: the timer has nothing more to say. */
	ck_assert(!peer_timers_passive_keepalive(pa));
	fake_now = t0 + 20000;
	ck_assert(!peer_timers_check_dead(pb, fake_now));
	ck_assert_str_eq(state(&B), "up");
}
END_TEST

/* Keepalives need no answer (one may answer the peer's last packet):
 * only data left unanswered makes the sender offer a new session. */
START_TEST(keepalives_start_no_handshake)
{
	struct peer *pa = peer_of(&A);
	int i;

	bring_up();
	for (i = 0; i < 4; i++) {
		fake_now += 6000;
		ck_assert_int_eq(tx_control(&A.t, pa, GUE_CTYPE_KEEPALIVE, NULL, 0), 0);
		spin(&A);
		A.n_out = 0;            /* never answered */
	}
	ck_assert_ptr_null(pa->next);
	ck_assert_ptr_nonnull(pa->cur);
	ck_assert_uint_eq(pa->events[EVENT_KEEPALIVE_SENT], 4);
	/* Data is another matter. */
	tun_send(&A, true, 7);
	spin(&A);
	fake_now += 6000;
	tun_send(&A, true, 8);
	spin(&A);
	ck_assert_ptr_nonnull(pa->next);
}
END_TEST

START_TEST(pending_queue_bound)
{
	struct peer *pa = peer_of(&A);
	uint32_t i;
	long want;

	for (i = 0; i < PEER_PENDING_MAX + 8; i++)
		tun_send(&A, true, i);
	spin(&A);
	ck_assert_uint_eq(pa->pending_n, PEER_PENDING_MAX);
	ck_assert_uint_eq(pa->drops[DROP_QUEUE], 8);
	pump();
	ck_assert_str_eq(state(&A), "up");
	/* The oldest went; the newest PEER_PENDING_MAX arrive, in order. */
	for (want = 8; want < PEER_PENDING_MAX + 8; want++)
		ck_assert_int_eq(tun_recv(&B), want);
	ck_assert_int_eq(tun_recv(&B), -1);
}
END_TEST

/* The records n sent in [first, last) to `to`: how many, and their bytes. */
static unsigned
sent_to(const struct node *n, unsigned first, unsigned last, const union sockaddr_union *to,
    size_t *bytes)
{
	unsigned i, k = 0;

	*bytes = 0;
	for (i = first; i < last; i++) {
		if (util_sa_equal(&n->out[i].to, to)) {
			k++;
			*bytes += n->out[i].len;
		}
	}
	return k;
}

START_TEST(roaming_rule)
{
	struct peer *pb = peer_of(&B);
	union sockaddr_union x, y, a_addr = A.addr;
	size_t bytes;
	unsigned n;

	bring_up();
	sa_set(&x, "198.51.100.7", 7000);
	sa_set(&y, "203.0.113.9", 9000);
	tun_send(&A, true, 11);
	tun_send(&A, true, 12);
	spin(&A);
	n = A.n_out;
	ck_assert_uint_eq(n, 2);
	/* The newer record from a new address is delivered, but B keeps
	 * sending to the old one and challenges the new one. */
	B.n_out = 0;
	deliver_range(&A, &B, 1, 2, &x);
	spin(&B);
	ck_assert_int_eq(tun_recv(&B), 12);
	ck_assert(util_sa_equal(&pb->endpoint, &a_addr));
	ck_assert(util_sa_equal(&pb->cur->addr, &a_addr));
	ck_assert_int_eq(pb->probe.state, PATH_PROBING);
	ck_assert_uint_eq(sent_to(&B, 0, B.n_out, &x, &bytes), 1);
	ck_assert_uint_eq(pb->events[EVENT_PATH_CHALLENGE_SENT], 1);
	/* The older one, late, from elsewhere: it authenticates and is
	 * delivered, but starts nothing. */
	deliver_range(&A, &B, 0, 1, &y);
	ck_assert_int_eq(tun_recv(&B), 11);
	ck_assert(util_sa_equal(&pb->probe.addr, &x));
	/* A replay from elsewhere: refused, counted, moves nothing. */
	deliver_range(&A, &B, 1, 2, &y);
	ck_assert_int_eq(tun_recv(&B), -1);
	ck_assert_uint_eq(pb->drops[DROP_REPLAY], 1);
	ck_assert(util_sa_equal(&pb->probe.addr, &x));
	/* A is at x: the challenge reaches it, its answer goes back to
	 * where the challenge came from, and B moves. */
	A.n_out = 0;
	deliver(&B, &A);
	spin(&A);
	ck_assert_uint_eq(peer_of(&A)->events[EVENT_PATH_RESPONSE_SENT], 1);
	ck_assert_uint_eq(sent_to(&A, 0, A.n_out, &B.addr, &bytes), A.n_out);
	deliver_range(&A, &B, 0, A.n_out, &x);
	A.n_out = 0;
	ck_assert_uint_eq(pb->events[EVENT_PATH_VALIDATED], 1);
	ck_assert_int_eq(pb->probe.state, PATH_VALIDATED);
	ck_assert(util_sa_equal(&pb->endpoint, &x));
	ck_assert(util_sa_equal(&pb->cur->addr, &x));
}
END_TEST

/* A record of A (a keepalive, the smallest there is) whose source was
 * rewritten to x on the way: x never answers, B keeps A's endpoint, sends
 * x at most three times what came from it (so not every challenge), and
 * gives up after the last one. */
START_TEST(path_unanswered_keeps_endpoint)
{
	struct peer *pb = peer_of(&B);
	union sockaddr_union x, a_addr = A.addr;
	size_t to_x, from_x;
	unsigned i;

	bring_up();
	sa_set(&x, "198.51.100.7", 7000);
	A.n_out = 0;
	ck_assert_int_eq(tx_control(&A.t, peer_of(&A), GUE_CTYPE_KEEPALIVE, NULL, 0), 0);
	spin(&A);
	ck_assert_uint_eq(A.n_out, 1);
	from_x = A.out[0].len;
	B.n_out = 0;
	deliver_range(&A, &B, 0, 1, &x);
	A.n_out = 0;
	spin(&B);
	ck_assert_int_eq(pb->probe.state, PATH_PROBING);
	for (i = 0; i < 20 && pb->probe.state == PATH_PROBING; i++) {
		fake_now += 1000;
		peer_timers_path_due(pb, fake_now);
		spin(&B);
	}
	ck_assert_int_eq(pb->probe.state, PATH_VALIDATED);
	ck_assert_uint_eq(pb->events[EVENT_PATH_FAILED], 1);
	ck_assert_uint_eq(pb->events[EVENT_PATH_VALIDATED], 0);
	ck_assert_uint_ge(pb->events[EVENT_PATH_BUDGET_BLOCKED], 1);
	sent_to(&B, 0, B.n_out, &x, &to_x);
	ck_assert_uint_gt(to_x, 0);
	ck_assert_uint_le(to_x, 3 * from_x);
	ck_assert(util_sa_equal(&pb->endpoint, &a_addr));
	/* The tunnel still works on the old path. */
	ck_assert_uint_eq(sent_to(&B, 0, B.n_out, &x, &to_x), 2);
	B.n_out = 0;
	tun_send(&B, false, 22);
	pump();
	ck_assert_int_eq(tun_recv(&A), 22);
}
END_TEST

static uint64_t
rec_wire_id(const struct node *n, unsigned i)
{
	return bytes_get64(n->out[i].buf + 8);
}

static uint64_t
rec_seq(const struct node *n, unsigned i)
{
	return bytes_get64(n->out[i].buf + GUE_OUTER_LEN + 3) & ((UINT64_C(1) << 48) - 1);
}

/* Session IDs follow the path: both ends derive the same sequence; a node
 * whose address changed moves to the next ID (its sequence numbers, a
 * permutation of its count, continue nothing); the other end challenges the new address with that ID, keeps the
 * old one towards the old address, moves to the new one once validated,
 * and retires the old one after the grace period. */
START_TEST(ids_follow_the_path)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	union sockaddr_union x, a_addr = A.addr;
	const struct record_tx *tx;
	uint64_t id0, id1, seq_old;
	uint32_t idx = 99, i;

	bring_up();
	sa_set(&x, "198.51.100.7", 7000);
	id0 = pa->cur->id;
	ck_assert_uint_eq(pb->cur->id, id0);
	ck_assert(pa->cur->ids_derived && pb->cur->ids_derived);
	for (i = 1; i <= SESSID_WINDOW; i++) {
		ck_assert_uint_ne(session_ids_wire(pa->cur, i), 0);
		ck_assert_uint_eq(session_ids_wire(pa->cur, i), session_ids_wire(pb->cur, i));
		ck_assert_uint_ne(session_ids_wire(pa->cur, i), id0);
	}
	A.n_out = B.n_out = 0;
	tun_send(&A, true, 41);
	spin(&A);
	ck_assert_uint_eq(A.n_out, 1);
	ck_assert_uint_eq(rec_wire_id(&A, 0), id0);
	seq_old = rec_seq(&A, 0);
	deliver(&A, &B);
	ck_assert_int_eq(tun_recv(&B), 41);

	/* A's address changed: its next records carry ID 1, far ahead. */
	session_ids_use(pa->cur, session_ids_fresh(pa->cur));
	id1 = pa->cur->wire_id;
	ck_assert_uint_eq(pa->cur->tx_index, 1);
	ck_assert_uint_eq(id1, session_ids_wire(pb->cur, 1));
	tun_send(&A, true, 42);
	spin(&A);
	ck_assert_uint_eq(rec_wire_id(&A, 0), id1);
	/* the next count, through the permutation: no run continued */
	tx = dtls_sess_record_tx(pa->cur->dtls);
	ck_assert_uint_eq(rec_seq(&A, 0), RECORD_SEQ_START |
	    record_perm(&tx->seq_perm, 47, tx->seq - 1 - RECORD_SEQ_START));
	ck_assert_uint_ne(rec_seq(&A, 0), seq_old + 1);
	B.n_out = 0;
	deliver_range(&A, &B, 0, A.n_out, &x);
	A.n_out = 0;
	ck_assert_int_eq(tun_recv(&B), 42);
	/* B answers data on the old path with ID 0 and challenges x with 1. */
	tun_send(&B, false, 43);
	spin(&B);
	ck_assert_int_eq(pb->probe.state, PATH_PROBING);
	ck_assert_uint_ge(B.n_out, 2);
	for (i = 0; i < B.n_out; i++) {
		if (util_sa_equal(&B.out[i].to, &x))
			ck_assert_uint_eq(rec_wire_id(&B, i), id1);
		else {
			ck_assert(util_sa_equal(&B.out[i].to, &a_addr));
			ck_assert_uint_eq(rec_wire_id(&B, i), id0);
		}
	}
	/* x is A: its answer carries ID 1; B moves, and so does its ID. */
	deliver(&B, &A);
	ck_assert_int_eq(tun_recv(&A), 43);
	spin(&A);
	for (i = 0; i < A.n_out; i++)
		ck_assert_uint_eq(rec_wire_id(&A, i), id1);
	deliver_range(&A, &B, 0, A.n_out, &x);
	A.n_out = 0;
	ck_assert(util_sa_equal(&pb->endpoint, &x));
	ck_assert_uint_eq(pb->cur->wire_id, id1);
	ck_assert_uint_eq(pb->cur->rotations, 1);
	ck_assert_uint_eq(pa->cur->rotations, 1);
	B.n_out = 0;
	tun_send(&B, false, 44);
	spin(&B);
	ck_assert_uint_eq(B.n_out, 1);
	ck_assert_uint_eq(rec_wire_id(&B, 0), id1);
	ck_assert(util_sa_equal(&B.out[0].to, &x));

	/* The grace period over, ID 0 is retired; the window reaches
	 * SESSID_WINDOW past the newest index, not further. */
	ck_assert_ptr_eq(session_find(&B.t, id0, NULL), pb->cur);
	event_active(pb->cur->ev_retire, EV_TIMEOUT, 0);
	spin(&B);
	ck_assert_ptr_null(session_find(&B.t, id0, NULL));
	ck_assert_ptr_eq(session_find(&B.t, id1, &idx), pb->cur);
	ck_assert_uint_eq(idx, 1);
	ck_assert_ptr_eq(session_find(&B.t, session_ids_wire(pb->cur, 1 + SESSID_WINDOW), NULL),
	    pb->cur);
	ck_assert_ptr_null(session_find(&B.t, sessid_derive(pb->cur->id_seed, 2 + SESSID_WINDOW),
	    NULL));
	/* The session is the same throughout: no handshake. */
	ck_assert_uint_eq(pb->cur->id, id0);
	deliver(&B, &A);
	ck_assert_int_eq(tun_recv(&A), 44);
}
END_TEST

/* The sending thread seals.  With A's thread started: batches of data
 * records go to it; the session changes ID while records framed before
 * are still on the thread; then the session is freed while a whole batch
 * of its records waits behind another on the thread, and the thread
 * seals them later with the session's sealer, kept by the batch's
 * reference.  Every record reaches B's TUN authenticated
 * and in order, and none was dropped for sealing. */
START_TEST(send_thread_seals)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	const unsigned n1 = UDP_BATCH + 30, n2 = 2 * UDP_BATCH;
	unsigned i, k, sent;
	uint64_t batches;

	bring_up();
	A.n_out = 0;
	ck_assert_int_eq(tx_start_thread(A.t.tx), 0);
	ck_assert(tx_threaded(A.t.tx));
	/* A full batch goes to the thread, and the rest after it while the
	 * thread is busy with the first (held for 300 ms). */
	atomic_store(&A.sink_delay_ms, 300);
	for (i = 0; i < n1; i++)
		tun_send(&A, true, 1000 + i);
	event_base_loop(A.t.base, EVLOOP_NONBLOCK);
	ck_assert_uint_eq(A.t.events[EVENT_SEND_THREAD_BATCHES], 2);
	/* A's address changed while those records are on the thread. */
	session_ids_use(pa->cur, session_ids_fresh(pa->cur));
	for (i = 0; i < n1; i++)
		tun_send(&A, true, 1000 + n1 + i);
	for (k = 0; k < 4; k++)
		event_base_loop(A.t.base, EVLOOP_NONBLOCK);
	/* Two full batches: the thread holds the first in the sink (300 ms)
	 * while the second waits, not sealed yet; the session goes
	 * meanwhile, and the second batch is sealed with its sealer after
	 * that. */
	tx_flush_records(&A.t);
	ck_assert_int_eq(tx_start_thread(A.t.tx), 0);
	batches = A.t.events[EVENT_SEND_THREAD_BATCHES];
	atomic_store(&A.sink_delay_ms, 300);
	for (i = 0; i < n2; i++)
		tun_send(&A, true, 1000 + 2 * n1 + i);
	for (k = 0; k < 3; k++)
		event_base_loop(A.t.base, EVLOOP_NONBLOCK);
	ck_assert_uint_eq(A.t.events[EVENT_SEND_THREAD_BATCHES], batches + 2);
	session_free(pa->cur);
	ck_assert_ptr_null(pa->cur);
	tx_flush_records(&A.t);         /* waits for the thread, and ends it */
	ck_assert(!tx_threaded(A.t.tx));
	ck_assert(!A.sink_overflow);
	ck_assert_uint_ge(A.sink_off_main, 3);
	ck_assert_uint_eq(pa->drops[DROP_SEAL], 0);
	sent = A.n_out;
	ck_assert_uint_eq(sent, 2 * n1 + n2);
	/* in rounds: B's TUN (a socket pair) holds a few hundred packets */
	for (k = 0; k < sent; k += UDP_BATCH) {
		unsigned end = k + UDP_BATCH < sent ? k + UDP_BATCH : sent;

		deliver_range(&A, &B, k, end, NULL);
		spin(&B);
		for (i = k; i < end; i++)
			ck_assert_int_eq(tun_recv(&B), 1000 + i);
	}
	ck_assert_int_eq(tun_recv(&B), -1);
	ck_assert_uint_eq(pb->drops[DROP_BAD_RECORD], 0);
}
END_TEST

/* B's opening thread: a bulk batch of records goes to it, with a copy of
 * one made on the path; both copies pass the first look at the window,
 * only one is accepted when the batch comes back.  Then B's session ends
 * while a batch of its records is on the thread: they come back to no
 * session and are counted, and the session's opener, kept by the batch,
 * was still there to open them. */
START_TEST(open_thread_accepts)
{
	struct peer *pb = peer_of(&B);
	const unsigned n = 40;
	unsigned i;

	bring_up();
	ck_assert_int_eq(tunout_start_thread(B.t.tunout), 0);
	ck_assert_int_eq(rx_start_thread(B.t.rx), 0);
	ck_assert(rx_opening_threaded(B.t.rx));
	A.n_out = 0;
	for (i = 0; i < n; i++)
		tun_send(&A, true, 2000 + i);
	spin(&A);
	ck_assert_uint_eq(A.n_out, n);
	A.out[A.n_out++] = A.out[5];
	deliver_batch(&A, &B);
	ck_assert_uint_eq(B.t.events[EVENT_OPEN_THREAD_BATCHES], 1);
	rx_flush_records(&B.t);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(tun_recv(&B), 2000 + i);
	ck_assert_int_eq(tun_recv(&B), -1);
	ck_assert_uint_eq(pb->drops[DROP_REPLAY], 1);
	ck_assert_uint_eq(pb->drops[DROP_BAD_RECORD], 0);

	A.n_out = 0;
	for (i = 0; i < n; i++)
		tun_send(&A, true, 3000 + i);
	spin(&A);
	deliver_batch(&A, &B);
	ck_assert_uint_eq(B.t.events[EVENT_OPEN_THREAD_BATCHES], 2);
	session_free(pb->cur);
	rx_flush_records(&B.t);
	/* Those the thread finished before the session ended were handed
	 * back then (a submit reaps what is done): delivered; the rest
	 * come back to no session and are counted.  Nothing else. */
	for (i = 0; tun_recv(&B) == 3000 + i; i++)
		;
	ck_assert_uint_eq(i + B.t.drops[DROP_UNKNOWN_SESSION], n);
}
END_TEST

/* A peer that closes right after sending: its close_notify arrives in the
 * same receive batch as the data before it, and is handled at once,
 * while the data waits to be opened in a batch (B's opening thread); the
 * data still goes first and reaches the TUN, then the session ends. */
START_TEST(close_after_data)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	const unsigned n = 40;
	unsigned i;

	bring_up();
	ck_assert_int_eq(tunout_start_thread(B.t.tunout), 0);
	ck_assert_int_eq(rx_start_thread(B.t.rx), 0);
	A.n_out = 0;
	for (i = 0; i < n; i++)
		tun_send(&A, true, 4000 + i);
	event_base_loop(A.t.base, EVLOOP_NONBLOCK);
	dtls_sess_close(pa->cur->dtls);
	tx_flush_records(&A.t);
	ck_assert_uint_eq(A.n_out, n + 1);
	deliver_batch(&A, &B);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(tun_recv(&B), 4000 + i);
	ck_assert_ptr_null(pb->cur);
	ck_assert_uint_eq(B.t.drops[DROP_UNKNOWN_SESSION], 0);
}
END_TEST

/* An ID of the sequence that another session of this node already uses
 * is skipped: it stays the other session's, and a fresh ID passes over
 * it. */
START_TEST(ids_skip_a_taken_id)
{
	struct peer *pb = peer_of(&B);
	union sockaddr_union any = B.addr;
	struct session *s, *other;
	uint64_t id4;
	uint32_t idx;

	bring_up();
	s = pb->cur;
	ck_assert(!s->initiator);                              /* B's own IDs are even */
	id4 = session_ids_wire(s, 4);
	ck_assert_uint_ne(id4, 0);
	ck_assert_ptr_null(session_find(&B.t, id4, NULL));     /* beyond the window yet */
	ck_assert_ptr_nonnull(other = session_alloc(&B.t, id4, &any, fake_now));
	session_insert(other);
	ck_assert_uint_eq(session_ids_wire(s, 4), 0);
	/* The window moves over index 4: it stays the other session's. */
	session_ids_received(s, 3);
	ck_assert_ptr_eq(session_find(&B.t, session_ids_wire(s, 5), &idx), s);
	ck_assert_uint_eq(idx, 5);
	ck_assert_ptr_eq(session_find(&B.t, id4, NULL), other);
	/* B's next own ID passes over 4 (taken) and 5 (the peer's parity). */
	ck_assert_uint_eq(session_ids_fresh(s), 6);
	session_free(other);
	ck_assert_ptr_null(session_find(&B.t, id4, NULL));
}
END_TEST

/* A side never starts more IDs ahead than the peer accepts: with the peer
 * silent, moves stop at the edge of its window and the ID stays, and an
 * ID never goes backwards. */
START_TEST(ids_stay_in_the_window)
{
	struct session *s;
	uint32_t i;

	bring_up();
	s = peer_of(&A)->cur;
	ck_assert(s->initiator);
	for (i = 0; i < 10; i++)
		session_ids_use(s, session_ids_fresh(s));
	ck_assert_uint_eq(s->tx_index, 3);                    /* 1, 3; then none */
	ck_assert_uint_eq(s->rotations, 2);
	ck_assert_uint_eq(session_ids_fresh(s), 0);
	session_ids_use(s, 1);
	ck_assert_uint_eq(s->tx_index, 3);
	/* B still takes A's records, and A still takes B's. */
	tun_send(&A, true, 51);
	pump();
	ck_assert_int_eq(tun_recv(&B), 51);
	tun_send(&B, false, 52);
	pump();
	ck_assert_int_eq(tun_recv(&A), 52);
}
END_TEST

/* Whether any ID of n's records in [first, last) went to two addresses. */
static bool
an_id_to_two_addresses(const struct node *n, unsigned first, unsigned last)
{
	unsigned i, k;

	for (i = first; i < last; i++)
		for (k = i + 1; k < last; k++)
			if (rec_wire_id(n, i) == rec_wire_id(n, k) &&
			    !util_sa_equal(&n->out[i].to, &n->out[k].to))
				return true;
	return false;
}

/* B's own IDs in A's window all went to an address that never answered
 * (x): records from yet another address (y) are delivered but not
 * challenged, since any ID B could send there went elsewhere; once A
 * moves to a newer ID, y is challenged with a fresh one.  No ID of B's
 * ever goes to two addresses. */
START_TEST(ids_none_left_waits)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	union sockaddr_union x, y;
	size_t bytes;
	unsigned i, n_x;

	bring_up();
	sa_set(&x, "198.51.100.7", 7000);
	sa_set(&y, "203.0.113.9", 9000);
	ck_assert(!pb->cur->initiator);
	A.n_out = B.n_out = 0;
	for (i = 0; i < 4; i++)
		tun_send(&A, true, 60 + i);
	spin(&A);
	ck_assert_uint_eq(A.n_out, 4);
	deliver_range(&A, &B, 0, 1, &x);                /* a NAT rebinding: x */
	spin(&B);
	ck_assert_int_eq(pb->probe.state, PATH_PROBING);
	ck_assert_uint_eq(pb->probe.wire_index, 2);
	n_x = sent_to(&B, 0, B.n_out, &x, &bytes);
	ck_assert_uint_ge(n_x, 1);
	/* x goes silent; A's records now come from y, still under ID 0. */
	deliver_range(&A, &B, 1, 3, &y);
	spin(&B);
	ck_assert_int_eq(tun_recv(&B), 60);
	ck_assert_int_eq(tun_recv(&B), 61);
	ck_assert_int_eq(tun_recv(&B), 62);
	ck_assert_uint_eq(pb->events[EVENT_PATH_NO_ID], 2);
	ck_assert(util_sa_equal(&pb->probe.addr, &x));
	ck_assert_uint_eq(sent_to(&B, 0, B.n_out, &y, &bytes), 0);
	tun_send(&B, false, 64);
	spin(&B);
	ck_assert_uint_eq(sent_to(&B, 0, B.n_out, &y, &bytes), 0);
	/* A moves to its next ID (1): B challenges y with its next, 4. */
	session_ids_use(pa->cur, session_ids_fresh(pa->cur));
	ck_assert_uint_eq(pa->cur->tx_index, 1);
	A.n_out = 0;
	tun_send(&A, true, 65);
	spin(&A);
	deliver_range(&A, &B, 0, A.n_out, &y);
	spin(&B);
	ck_assert_int_eq(tun_recv(&B), 65);
	ck_assert(util_sa_equal(&pb->probe.addr, &y));
	ck_assert_uint_eq(pb->probe.wire_index, 4);
	ck_assert_uint_ge(sent_to(&B, 0, B.n_out, &y, &bytes), 1);
	ck_assert(!an_id_to_two_addresses(&B, 0, B.n_out));
	ck_assert_uint_eq(pb->events[EVENT_PATH_NO_ID], 2);
}
END_TEST

/* A challenge overtaken by data: B challenges A's new address (x) with
 * ID 2, then sends data towards the old one, where A's newest record
 * came from.  A gets the data first and the challenge late, and still
 * moves its own sending to ID 2, or B's next path would find no ID of
 * its own left in A's window. */
START_TEST(ids_follow_a_late_record)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	unsigned i, n;
	union sockaddr_union x;

	bring_up();
	sa_set(&x, "198.51.100.7", 7000);
	A.n_out = B.n_out = 0;
	tun_send(&A, true, 70);
	tun_send(&A, true, 71);
	spin(&A);
	deliver_range(&A, &B, 0, 1, &x);
	spin(&B);
	ck_assert_uint_eq(pb->probe.wire_index, 2);
	deliver_range(&A, &B, 1, 2, NULL);              /* the newest from the old address */
	tun_send(&B, false, 72);
	spin(&B);
	n = B.n_out;
	ck_assert_uint_ge(n, 2);
	ck_assert_uint_eq(rec_wire_id(&B, n - 1), pb->cur->wire_id);    /* the data: ID 0 */
	for (i = n; i-- > 0;)                           /* newest first */
		deliver_range(&B, &A, i, i + 1, NULL);
	ck_assert_int_eq(tun_recv(&A), 72);
	ck_assert_uint_eq(pa->cur->tx_index, 2);
}
END_TEST

/* A response that answers no probe (a forged token, or a late one) moves
 * nothing and is counted. */
START_TEST(path_response_must_match)
{
	struct peer *pb = peer_of(&B);
	union sockaddr_union x, a_addr = A.addr;
	uint8_t wrong[PATH_TOKEN_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	bring_up();
	sa_set(&x, "198.51.100.7", 7000);
	tun_send(&A, true, 31);
	spin(&A);
	deliver_range(&A, &B, 0, 1, &x);
	A.n_out = 0;
	B.n_out = 0;
	ck_assert_int_eq(tun_recv(&B), 31);
	/* A answers with the wrong token (as if it had made one up). */
	ck_assert_int_eq(tx_path_message(peer_of(&A)->cur, GUE_CTYPE_RESPONSE, wrong, &B.addr,
	    NULL, 0), 0);
	spin(&A);
	deliver_range(&A, &B, 0, A.n_out, &x);
	A.n_out = 0;
	ck_assert_uint_eq(pb->events[EVENT_PATH_RESPONSE_STALE], 1);
	ck_assert_int_eq(pb->probe.state, PATH_PROBING);
	ck_assert(util_sa_equal(&pb->endpoint, &a_addr));
}
END_TEST

/* A reload gives B a new fingerprint for A: B's sessions with A end, and
 * A's old key no longer gets one. */
START_TEST(reload_changes_key)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint8_t other[KEYS_FP_LEN];
	struct conf *nc;

	bring_up();
	memset(other, 0x5a, sizeof(other));
	nc = node_conf(&B, "10.77.0.2", "a", other, "192.0.2.1", "10.77.0.1");
	ck_assert_int_eq(peer_reconfigure(pb, &nc->peers[0]), 0);
	conf_free(B.t.conf);
	B.t.conf = nc;
	ck_assert_ptr_null(pb->cur);
	ck_assert_ptr_null(pb->next);
	ck_assert_str_eq(state(&B), "idle");
	/* B said goodbye: A's session ends too. */
	pump();
	ck_assert_ptr_null(pa->cur);
	/* A tries again with its (now unknown) key: refused. */
	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	pump();
	ck_assert_ptr_null(pb->cur);
	ck_assert_ptr_null(pa->cur);
	ck_assert_uint_ge(B.t.drops[DROP_HANDSHAKE] + pb->drops[DROP_HANDSHAKE], 1);
	ck_assert_str_ne(state(&B), "up");
	/* A hears why: B rejected its key. */
	ck_assert_msg(strncmp(peer_error(pa), "handshake failed: rejected by the other side (alert: ",
	    strlen("handshake failed: rejected by the other side (alert: ")) == 0, "%s",
	    peer_error(pa));
}
END_TEST

/* B's peer A is removed while A's handshake with B is half done (its
 * certificate accepted, its Finished not yet received): the handshake
 * fails cleanly instead of completing for a freed peer. */
START_TEST(reload_removes_peer_mid_handshake)
{
	struct peer *pa = peer_of(&A);
	unsigned n, handshake_failed;

	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	spin(&A);
	deliver(&A, &B);                /* ClientHello */
	spin(&B);
	deliver(&B, &A);                /* HelloVerifyRequest */
	spin(&A);
	deliver(&A, &B);                /* ClientHello with the cookie */
	spin(&B);
	deliver(&B, &A);                /* ServerHello ... ServerHelloDone */
	spin(&A);
	n = A.n_out;                    /* Certificate ... Finished */
	ck_assert_uint_ge(n, 3);
	deliver_range(&A, &B, 0, n - 1, NULL);
	ck_assert_uint_eq(session_half_open(&B.t), 1);
	/* The reload removes A from B. */
	peer_free(B.t.peers[0]);
	B.t.n_peers = 0;
	handshake_failed = (unsigned)B.t.drops[DROP_HANDSHAKE];
	deliver_range(&A, &B, n - 1, n, NULL);
	A.n_out = 0;
	ck_assert_uint_eq(B.t.drops[DROP_HANDSHAKE], handshake_failed + 1);
	ck_assert_uint_eq(session_half_open(&B.t), 0);
	/* B's last flight, written before it refused, does not leave: A's
	 * handshake does not complete either. */
	spin(&B);
	ck_assert_uint_eq(B.n_out, 0);
	ck_assert_ptr_null(pa->cur);
	/* teardown frees what is left; give B an empty list to free. */
}
END_TEST

/* A peer freed (a reload removed it) while batches of its records are on
 * the sending thread, the second waiting behind the first: nothing
 * reaches into them, and when they are back their datagrams, which all
 * failed to send, resolve to nobody and are counted on the interface. */
START_TEST(send_thread_peer_freed)
{
	const unsigned n = UDP_BATCH + 20;
	uint64_t send_drops;
	unsigned i, k;

	bring_up();
	A.n_out = 0;
	send_drops = A.t.drops[DROP_SEND];
	ck_assert_int_eq(tx_start_thread(A.t.tx), 0);
	A.send_err = -EIO;
	atomic_store(&A.sink_delay_ms, 300);
	for (i = 0; i < n; i++)
		tun_send(&A, true, 1000 + i);
	for (k = 0; k < 3; k++)
		event_base_loop(A.t.base, EVLOOP_NONBLOCK);
	ck_assert_uint_eq(A.t.events[EVENT_SEND_THREAD_BATCHES], 2);
	peer_free(A.t.peers[0]);
	A.t.n_peers = 0;
	tx_flush_records(&A.t);         /* waits for the thread, and ends it */
	ck_assert(!A.sink_overflow);
	ck_assert_uint_eq(A.n_out, n);
	ck_assert_uint_eq(A.t.drops[DROP_SEND], send_drops + n);
	/* teardown frees what is left; A has an empty list to free. */
}
END_TEST

/* Our source address went away: the send fails, and the next records
 * leave without one (the kernel chooses).  With DTLS the address is the
 * session's; clearing another copy did nothing. */
/* The reload itself (reload.c), not just peer_reconfigure: one reload
 * removes peer c and changes the key of b, which is up.  b's state change
 * reports the peers up while the list is being rebuilt; the removed peer
 * must not be read then (under the sanitizers a use-after-free fails). */
static void
write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

static void
a_conf_text(char *text, size_t cap, const uint8_t *b_fp, bool with_c)
{
	char fb[80], fc[80];
	uint8_t c_fp[KEYS_FP_LEN];
	int n;

	memset(c_fp, 0x3c, sizeof(c_fp));
	fp_hex(b_fp, fb);
	fp_hex(c_fp, fc);
	n = snprintf(text, cap,
	    "[interface]\nname = tou0\naddress = 10.77.0.1/24\n"
	    "private-key = %s/key.pem\ncertificate = %s/cert.pem\n"
	    "[peer b]\nfingerprint = %s\nendpoint = 192.0.2.2:6080\naddress = 10.77.0.2\n",
	    A.dir, A.dir, fb);
	ck_assert(n > 0 && (size_t)n < cap);
	if (with_c)
		snprintf(text + n, cap - (size_t)n,
		    "[peer c]\nfingerprint = %s\nendpoint = 192.0.2.3:6080\naddress = 10.77.0.3\n", fc);
}

/* What no comparison of the peer's own keys shows (a CA file replaced, a
 * key another peer now claims): handshake_reauthorize() ends the session
 * and the peer stops saying up. */
START_TEST(reauthorize_ends_session)
{
	struct peer *pb = peer_of(&B);
	uint8_t other[KEYS_FP_LEN];
	struct conf *nc;

	bring_up();
	memset(other, 0x5a, sizeof(other));
	nc = node_conf(&B, "10.77.0.2", "a", other, "192.0.2.1", "10.77.0.1");
	pb->cf = &nc->peers[0];         /* behind peer_reconfigure's back */
	pb->name = pb->cf->name;
	conf_free(B.t.conf);
	B.t.conf = nc;
	ck_assert_ptr_nonnull(pb->cur);
	ck_assert_uint_eq(handshake_reauthorize(&B.t), 1);
	ck_assert_ptr_null(pb->cur);
	ck_assert_str_eq(state(&B), "idle");
	ck_assert_str_eq(peer_error(pb), "session ended: key no longer accepted");
	/* Nothing is left to end. */
	ck_assert_uint_eq(handshake_reauthorize(&B.t), 0);
}
END_TEST

/* The most common mistake, a wrong pinned fingerprint, says which key
 * was presented and which is pinned on the side that pinned it, and the
 * other side hears that it was rejected. */
START_TEST(wrong_pin_diagnosed)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint8_t other[KEYS_FP_LEN];
	char got[80], want[80], msg[300];
	struct conf *nc;

	memset(other, 0x5a, sizeof(other));
	nc = node_conf(&A, "10.77.0.1", "b", other, "192.0.2.2", "10.77.0.2");
	ck_assert_int_eq(peer_reconfigure(pa, &nc->peers[0]), 0);
	conf_free(A.t.conf);
	A.t.conf = nc;
	tun_send(&A, true, 1);
	pump();
	ck_assert_ptr_null(pa->cur);
	fp_hex(B.fp, got);
	fp_hex(other, want);
	snprintf(msg, sizeof(msg), "handshake failed: its key %s does not match the pinned %s",
	    got, want);
	ck_assert_str_eq(peer_error(pa), msg);
	/* B answered as responder and learnt of the rejection by an alert. */
	ck_assert_ptr_null(pb->cur);
	ck_assert_uint_ge(B.t.events[EVENT_HANDSHAKE_FAILED], 1);
}
END_TEST

/* The handshake timer of p's running handshake fires (its deadline is
 * on the fake clock; the timer itself is the event loop's). */
static void
hs_timeout(struct node *n, struct peer *p)
{
	ck_assert_ptr_nonnull(p->next);
	event_active(p->next->ev_timer, EV_TIMEOUT, 1);
	spin(n);
}

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* B is silent: A's handshake times out with "no answer", logged at
 * warning once, not again for the same kind within a minute, and again
 * after it. */
START_TEST(no_answer_diagnosed)
{
	struct peer *pa = peer_of(&A);
	uint64_t first;
	int i;

	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	spin(&A);
	ck_assert_uint_ge(A.n_out, 1);
	A.n_out = 0;
	fake_now += SESSION_HANDSHAKE_MS;
	hs_timeout(&A, pa);
	ck_assert_ptr_null(pa->next);
	ck_assert_str_eq(peer_error(pa),
	    "handshake failed: no answer: nothing came back from the endpoint within 10 s");
	ck_assert_uint_eq(pa->events[EVENT_HANDSHAKE_FAILED], 1);
	ck_assert_str_eq(state(&A), "dead");
	first = pa->hs_log_ms;
	ck_assert_uint_eq(first, fake_now);
	ck_assert_str_eq(pa->hs_log_kind, "no answer");
	for (i = 0; i < 3; i++) {
		fake_now += 20000;              /* past the retry back-off */
		ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
		spin(&A);
		A.n_out = 0;
		fake_now += SESSION_HANDSHAKE_MS;
		hs_timeout(&A, pa);
		ck_assert(starts_with(peer_error(pa), "handshake failed: no answer: "));
		/* 30, 60, 90 s after the first: logged again at 60, and
		 * then not before 120. */
		ck_assert_uint_eq(pa->hs_log_ms, i == 0 ? first : first + 60000);
	}
	ck_assert_uint_eq(pa->events[EVENT_HANDSHAKE_FAILED], 4);
	/* B heard nothing. */
	ck_assert_uint_eq(B.t.events[EVENT_COOKIE_REQUESTED], 0);
}
END_TEST

/* B answers the first ClientHello with a cookie request, and A's second
 * ClientHello (with the cookie) is lost every time: "cookie exchange
 * stuck", which differs from "no answer" and so is logged at once. */
START_TEST(cookie_stuck_diagnosed)
{
	struct peer *pa = peer_of(&A);
	uint64_t t1;

	/* First a silent failure. */
	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	spin(&A);
	A.n_out = 0;
	fake_now += SESSION_HANDSHAKE_MS;
	hs_timeout(&A, pa);
	ck_assert(starts_with(peer_error(pa), "handshake failed: no answer: "));

	fake_now += 5000;
	t1 = fake_now + SESSION_HANDSHAKE_MS;
	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	spin(&A);
	ck_assert_uint_eq(deliver(&A, &B), 1);  /* ClientHello */
	spin(&B);
	ck_assert_uint_eq(B.t.events[EVENT_COOKIE_REQUESTED], 1);
	ck_assert_uint_eq(deliver(&B, &A), 1);  /* HelloVerifyRequest */
	spin(&A);
	ck_assert_uint_eq(A.n_out, 1);          /* ClientHello with the cookie: lost */
	A.n_out = 0;
	ck_assert_uint_eq(pa->next->hs_rx_records, 1);
	ck_assert_uint_eq(pa->next->hs_rx_cookie_requests, 1);
	fake_now = t1;
	hs_timeout(&A, pa);
	ck_assert_msg(starts_with(peer_error(pa), "handshake failed: cookie exchange stuck: 1 cookie "
	    "request came back, but no answer to the ClientHello that carried the cookie"), "%s",
	    peer_error(pa));
	ck_assert_uint_eq(pa->hs_log_ms, t1);  /* a new kind: logged within the minute */
	ck_assert_str_eq(pa->hs_log_kind, "cookie exchange stuck");
	ck_assert_uint_eq(session_half_open(&B.t), 0);
	ck_assert_ptr_null(peer_of(&B)->cur);
}
END_TEST

/* Rewrite the ClientHello in A's output record r, if it is one: its
 * version to DTLS 1.0, or its cipher suites all to
 * TLS_RSA_WITH_AES_128_CBC_SHA, which toud does not offer.  The length
 * stays, so B's cookie (bound to the first hello's length) still fits. */
static void
mangle_hello(struct outrec *r, bool version)
{
	uint8_t *rec = r->buf + GUE_OUTER_LEN, *b;
	size_t len, off, n, i;

	ck_assert_uint_gt(r->len, GUE_OUTER_LEN + DTLS_RECORD_HDR + 12);
	len = r->len - GUE_OUTER_LEN - DTLS_RECORD_HDR - 12;
	if (rec[0] != DTLS_CT_HANDSHAKE || rec[DTLS_RECORD_HDR] != 1)
		return;
	b = rec + DTLS_RECORD_HDR + 12;
	if (version) {
		b[0] = 0xfe;
		b[1] = 0xff;
		return;
	}
	off = 2 + 32;
	ck_assert_uint_lt(off, len);
	off += 1 + b[off];                      /* session ID */
	ck_assert_uint_lt(off, len);
	off += 1 + b[off];                      /* cookie */
	ck_assert_uint_lt(off + 2, len);
	n = bytes_get16(b + off);
	off += 2;
	ck_assert_uint_le(off + n, len);
	for (i = 0; i + 1 < n; i += 2) {
		b[off + i] = 0x00;
		b[off + i + 1] = 0x2f;
	}
}

/* pump(), with every ClientHello of A rewritten on its way to B. */
static void
pump_mangled(bool version)
{
	int round;

	for (round = 0; round < 20; round++) {
		unsigned i, moved;

		spin(&A);
		for (i = 0; i < A.n_out; i++)
			mangle_hello(&A.out[i], version);
		moved = deliver(&A, &B);
		spin(&B);
		moved += deliver(&B, &A);
		if (!moved)
			return;
	}
	ck_abort_msg("the nodes did not settle");
}

/* No cipher suite in common: B finds none and refuses A's hello; A hears
 * a handshake_failure alert before any ServerHello, which only a hello
 * refused for its offer gets.  Both say "version/cipher mismatch". */
START_TEST(cipher_mismatch_diagnosed)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);

	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	pump_mangled(false);
	ck_assert_ptr_null(pa->cur);
	ck_assert_ptr_null(pa->next);
	ck_assert_ptr_null(pb->cur);
	ck_assert_str_eq(peer_error(pa), "handshake failed: version/cipher mismatch: the other side "
	    "shares no cipher suite or group with this one (alert: handshake failure)");
	ck_assert_str_eq(pa->hs_log_kind, "version/cipher mismatch");
	ck_assert_uint_eq(B.t.events[EVENT_HANDSHAKE_FAILED], 1);
	ck_assert_str_eq(peer_error(pb), "handshake from its endpoint failed: version/cipher "
	    "mismatch: none of the other side's cipher suites is one of toud's");
	ck_assert_int_eq(pb->state, PEER_DEAD);       /* not idle: its handshakes fail */
	ck_assert_uint_eq(pb->hs_log_ms, fake_now);
	ck_assert_uint_eq(session_half_open(&B.t), 0);
}
END_TEST

/* No DTLS version in common: B refuses the hello with a protocol_version
 * alert. */
START_TEST(version_mismatch_diagnosed)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);

	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	pump_mangled(true);
	ck_assert_ptr_null(pa->cur);
	ck_assert_ptr_null(pb->cur);
	ck_assert_str_eq(peer_error(pa), "handshake failed: version/cipher mismatch: the other side "
	    "does not take DTLS 1.2 (alert: protocol version)");
	ck_assert_str_eq(peer_error(pb), "handshake from its endpoint failed: version/cipher "
	    "mismatch: the other side offers no DTLS 1.2, the one version toud speaks");
}
END_TEST

/* Host changes concern a peer only if they can move the path it uses:
 * not a peer configured but never needed, nor a new address elsewhere for
 * a peer whose local address is known, which the initiator learns from
 * the handshake itself (before any data comes back). */
START_TEST(netchange_concerns)
{
	struct peer *pa = peer_of(&A);
	struct rtnl_event ev = { .kind = RTNL_EV_ADDR_NEW, .family = AF_INET, .ifindex = 42 };
	struct ipaddr mine;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	A.t.udp->fd4 = fd;              /* toud has an IPv4 socket */
	util_sa_to_addr(&A.addr, &mine, NULL);
	ck_assert_int_eq(util_addr_parse("198.51.100.7", &ev.addr), 0);
	/* b is configured, idle, not needed. */
	ck_assert(!peer_netchange_note(&A.t, &ev));
	ev.kind = RTNL_EV_DEFAULT_ROUTE;
	ck_assert(peer_netchange_note(&A.t, &ev));
	ck_assert(!peer_netchange_affects(&A.t.netchange, pa));
	memset(&A.t.netchange, 0, sizeof(A.t.netchange));

	/* A handshake and nothing else: A knows where B reaches it.  (The
	 * ML-KEM-768 exchange, where OpenSSL has it, would end with a
	 * keepalive each way: not here.) */
	A.t.conf->peers[0].post_quantum = CONF_PQ_OFF;
	deliver_local = true;
	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	pump();
	ck_assert_str_eq(state(&A), "up");
	ck_assert_uint_eq(pa->rx_packets, 0);
	ck_assert(util_addr_equal(&pa->cur->local, &mine));
	ev.kind = RTNL_EV_ADDR_NEW;
	ck_assert(!peer_netchange_note(&A.t, &ev));
	ev.kind = RTNL_EV_ADDR_DEL;
	ck_assert(!peer_netchange_note(&A.t, &ev));
	/* Its own address goes, or the default route changes: it is told. */
	ev.addr = mine;
	ck_assert(peer_netchange_note(&A.t, &ev));
	ck_assert(peer_netchange_affects(&A.t.netchange, pa));
	memset(&A.t.netchange, 0, sizeof(A.t.netchange));
	ev.kind = RTNL_EV_DEFAULT_ROUTE;
	ck_assert(peer_netchange_note(&A.t, &ev));
	ck_assert(peer_netchange_affects(&A.t.netchange, pa));
	/* Told, it forgets where B reaches it and sends a keepalive at once,
	 * which B takes. */
	A.n_out = 0;
	peer_netchange_apply(&A.t);
	ck_assert_int_eq(pa->cur->local.family, 0);
	ck_assert(!peer_netchange_affects(&A.t.netchange, pa));
	spin(&A);
	ck_assert_uint_eq(A.n_out, 1);
	ck_assert_uint_eq(deliver(&A, &B), 1);
	ck_assert_uint_eq(peer_of(&B)->drops[DROP_BAD_RECORD], 0);
	ck_assert_uint_eq(B.t.drops[DROP_UNKNOWN_SESSION], 0);
	A.t.udp->fd4 = -1;
	close(fd);
}
END_TEST

static unsigned ping_calls;
static bool ping_was_answered;

static void
ping_answer(void *arg, bool answered)
{
	(void)arg;
	ping_calls++;
	ping_was_answered = answered;
}

/* touctl ping: refused without a session and while one is in flight; a
 * challenge on the session's path that B answers tells the caller once;
 * one that goes unanswered tells it so when its deadline fires. */
START_TEST(ping_answered_or_not)
{
	struct peer *pa = peer_of(&A);

	ping_calls = 0;
	ck_assert_int_eq(peer_timers_ping(pa, ping_answer, NULL), -ENOTCONN);
	bring_up();
	A.n_out = 0;
	ck_assert_int_eq(peer_timers_ping(pa, ping_answer, NULL), 0);
	ck_assert_int_eq(peer_timers_ping(pa, ping_answer, NULL), -EBUSY);
	ck_assert(evtimer_pending(pa->ev_ping, NULL));
	spin(&A);
	ck_assert_uint_eq(A.n_out, 1);
	pump();
	ck_assert_uint_eq(ping_calls, 1);
	ck_assert(ping_was_answered);
	ck_assert(!evtimer_pending(pa->ev_ping, NULL));

	ck_assert_int_eq(peer_timers_ping(pa, ping_answer, NULL), 0);
	spin(&A);
	A.n_out = 0;                    /* lost on the way */
	event_active(pa->ev_ping, EV_TIMEOUT, 1);
	event_base_loop(A.t.base, EVLOOP_NONBLOCK);
	ck_assert_uint_eq(ping_calls, 2);
	ck_assert(!ping_was_answered);
	ck_assert_int_eq(peer_timers_ping(pa, ping_answer, NULL), 0);
}
END_TEST

START_TEST(reload_removes_one_changes_another)
{
	char text[4096], path[600], err[600], ebuf[300];
	uint8_t other[KEYS_FP_LEN];
	struct conf *c = NULL;
	struct conf_error ce;
	struct peer *pb;

	node_stop(&A);
	memset(&A.t, 0, sizeof(A.t));
	snprintf(path, sizeof(path), "%s/a.conf", tmpdir);
	a_conf_text(text, sizeof(text), B.fp, true);
	write_text(path, text);
	ck_assert_msg(conf_parse(path, text, strlen(text), &c, &ce) == 0, "%s",
	    conf_error_fmt(&ce, ebuf, sizeof(ebuf)));
	node_start(&A, c, "192.0.2.1");
	A.t.conf_file = path;
	ck_assert_uint_eq(A.t.n_peers, 2);
	pb = A.t.peers[0];
	tun_send(&A, true, 1);
	pump();
	ck_assert_str_eq(peer_state_name(pb->state), "up");
	ck_assert_int_eq(tun_recv(&B), 1);

	memset(other, 0x5a, sizeof(other));
	a_conf_text(text, sizeof(text), other, false);
	write_text(path, text);
	ck_assert_msg(toud_reload(&A.t, err, sizeof(err)) == 0, "reload: %s", err);
	ck_assert_str_eq(err, "0 peers added, 1 removed, 1 changed");
	ck_assert_uint_eq(A.t.n_peers, 1);
	ck_assert_ptr_eq(A.t.peers[0], pb);
	ck_assert_ptr_null(pb->cur);
	ck_assert_str_eq(peer_state_name(pb->state), "idle");
	ck_assert_ptr_null(peer_find_by_name(&A.t, "c"));

	/* Under the wrong pin A's handshake fails and backs off... */
	tun_send(&A, true, 2);
	pump();
	ck_assert_ptr_null(pb->cur);
	ck_assert_ptr_null(pb->next);
	ck_assert_uint_gt(pb->hs_retry_ms, fake_now);
	/* ...and a reload that fixes the pin starts one at once. */
	a_conf_text(text, sizeof(text), B.fp, false);
	write_text(path, text);
	ck_assert_msg(toud_reload(&A.t, err, sizeof(err)) == 0, "reload: %s", err);
	ck_assert_str_eq(err, "0 peers added, 0 removed, 1 changed");
	ck_assert_ptr_nonnull(pb->next);
	ck_assert_uint_eq(pb->hs_retry_ms, 0);
	pump();
	ck_assert_str_eq(peer_state_name(pb->state), "up");
}
END_TEST

START_TEST(send_error_forgets_local)
{
	struct peer *pb = peer_of(&B);
	struct ipaddr mine;

	bring_up();
	ck_assert_int_eq(util_addr_parse("192.0.2.2", &mine), 0);
	pb->cur->local = mine;
	tun_send(&B, false, 21);
	spin(&B);
	ck_assert_uint_eq(B.n_out, 1);
	ck_assert(util_addr_equal(&B.out[0].local, &mine));
	B.n_out = 0;
	B.send_err = -EADDRNOTAVAIL;
	tun_send(&B, false, 22);
	spin(&B);
	B.n_out = 0;
	ck_assert_uint_eq(pb->drops[DROP_SEND], 1);
	ck_assert_int_eq(pb->cur->local.family, 0);
	B.send_err = 0;
	tun_send(&B, false, 23);
	spin(&B);
	ck_assert_uint_eq(B.n_out, 1);
	ck_assert_int_eq(B.out[0].local.family, 0);
	deliver(&B, &A);
	ck_assert_int_eq(tun_recv(&A), 23);
}
END_TEST

/* ---- a certificate two peers accept ---------------------------------- */

/* A certificate for key with common name cn, signed by issuer (or itself,
 * as a CA, when issuer is NULL). */
static X509 *
cert_make(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key)
{
	X509 *x = X509_new();
	X509V3_CTX v3;
	X509_EXTENSION *ext;

	ck_assert_ptr_nonnull(x);
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), issuer ? 2 : 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x));
	X509_set_pubkey(x, key);
	X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints,
	    issuer ? "critical,CA:FALSE" : "critical,CA:TRUE");
	ck_assert_ptr_nonnull(ext);
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	ck_assert_int_gt(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()), 0);
	return x;
}

static void
cert_write(const char *path, X509 *x)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(PEM_write_X509(f, x), 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* B again, with what its key directory holds now. */
static void
restart_b(void)
{
	node_stop(&B);
	memset(&B.t, 0, sizeof(B.t));
	node_start(&B, node_conf(&B, "10.77.0.2", "a", A.fp, "192.0.2.1", "10.77.0.1"),
	    "192.0.2.2");
}

/* A's configuration: peer b pinned to B's key, and peer c in CA mode
 * (ca_file, name cn). */
static void
restart_a_two_peers(const char *ca_file, const char *cn)
{
	char text[4096], f[80], ebuf[300];
	struct conf *c = NULL;
	struct conf_error ce;

	fp_hex(B.fp, f);
	snprintf(text, sizeof(text),
	    "[interface]\nname = tou0\naddress = 10.77.0.1/24\n"
	    "private-key = %s/key.pem\ncertificate = %s/cert.pem\n"
	    "[peer b]\nfingerprint = %s\nendpoint = 192.0.2.2:6080\naddress = 10.77.0.2\n"
	    "[peer c]\nca = %s\nname = %s\naddress = 10.77.0.3\n",
	    A.dir, A.dir, f, ca_file, cn);
	ck_assert_msg(conf_parse("a.conf", text, strlen(text), &c, &ce) == 0, "%s",
	    conf_error_fmt(&ce, ebuf, sizeof(ebuf)));
	node_stop(&A);
	memset(&A.t, 0, sizeof(A.t));
	node_start(&A, c, "192.0.2.1");
	ck_assert_uint_eq(A.t.n_peers, 2);
}

/* B's key, pinned by A's peer b, comes with a certificate that A's CA
 * peer c accepts too (the CA issued it with c's name): the handshake is
 * refused, whichever side starts it, and both peers and the failure say
 * why.  With c expecting another name, the same certificate is b's. */
START_TEST(cert_matches_two_peers)
{
	char ca_file[1200], cert_file[1200], key_file[1200], want[300], fb[80];
	EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *b_key;
	struct peer *pb, *pc, *pa;
	X509 *ca, *leaf;
	FILE *f;

	/* B's certificate: its own key, issued by the CA with the name c. */
	snprintf(key_file, sizeof(key_file), "%s/key.pem", B.dir);
	snprintf(cert_file, sizeof(cert_file), "%s/cert.pem", B.dir);
	snprintf(ca_file, sizeof(ca_file), "%s/ca.pem", tmpdir);
	ck_assert_ptr_nonnull(f = fopen(key_file, "r"));
	ck_assert_ptr_nonnull(b_key = PEM_read_PrivateKey(f, NULL, NULL, NULL));
	fclose(f);
	ck_assert_ptr_nonnull(ca_key);
	ca = cert_make(ca_key, "test ca", NULL, NULL);
	leaf = cert_make(b_key, "c", ca, ca_key);
	cert_write(ca_file, ca);
	cert_write(cert_file, leaf);
	X509_free(ca);
	X509_free(leaf);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(b_key);

	/* Control: c expects another name, so the certificate is b's only. */
	restart_b();
	restart_a_two_peers(ca_file, "carol");
	pb = A.t.peers[0];
	tun_send(&B, false, 1);
	pump();
	ck_assert_str_eq(peer_state_name(pb->state), "up");
	ck_assert_int_eq(tun_recv(&A), 1);

	/* Now c's name is the certificate's. */
	restart_b();
	restart_a_two_peers(ca_file, "c");
	pa = peer_of(&B);
	pb = A.t.peers[0];
	pc = A.t.peers[1];
	fp_hex(B.fp, fb);
	snprintf(want, sizeof(want),
	    "handshake refused: its key %s matches both peer \"b\" and peer \"c\"", fb);
	/* B starts: A, the responder, refuses B's certificate. */
	tun_send(&B, false, 2);
	pump();
	ck_assert_ptr_null(pb->cur);
	ck_assert_ptr_null(pc->cur);
	ck_assert_ptr_null(pa->cur);
	/* b, whose endpoint the refused handshake came from, shows it. */
	ck_assert_str_eq(peer_state_name(pb->state), "dead");
	ck_assert_str_eq(peer_state_name(pc->state), "idle");
	ck_assert_int_eq(tun_recv(&A), -1);
	ck_assert_uint_ge(A.t.events[EVENT_HANDSHAKE_FAILED], 1);
	ck_assert_uint_ge(A.t.drops[DROP_HANDSHAKE], 1);
	ck_assert_uint_eq(session_half_open(&A.t), 0);
	ck_assert_str_eq(peer_error(pb), want);
	ck_assert_str_eq(peer_error(pc), want);
	ck_assert_msg(strncmp(peer_error(pa), "handshake failed: rejected by the other side",
	    strlen("handshake failed: rejected by the other side")) == 0, "%s", peer_error(pa));
	/* A starts, to b: the key it meets is b's pin, but c accepts it too. */
	peer_error_clear(pb);
	ck_assert_int_eq(handshake_initiate(pb, fake_now), 0);
	pump();
	ck_assert_ptr_null(pb->cur);
	ck_assert_ptr_null(pa->cur);
	ck_assert_int_eq(tun_recv(&B), -1);
	snprintf(want, sizeof(want),
	    "handshake failed: its key %s matches both peer \"b\" and peer \"c\"", fb);
	ck_assert_str_eq(peer_error(pb), want);
	ck_assert_uint_ge(pb->drops[DROP_HANDSHAKE], 1);
}
END_TEST

START_TEST(state_names)
{
	/* The JSON `state` values: a stable interface. */
	ck_assert_str_eq(peer_state_name(PEER_IDLE), "idle");
	ck_assert_str_eq(peer_state_name(PEER_HANDSHAKING), "handshaking");
	ck_assert_str_eq(peer_state_name(PEER_UP), "up");
	ck_assert_str_eq(peer_state_name(PEER_DEAD), "dead");
	ck_assert_str_eq(peer_state_name(PEER_STATE__MAX), "unknown");
	/* A few rows of the table. */
	ck_assert_int_eq(peer_fsm_next(PEER_UP, PEER_EV_HANDSHAKE_FAILED), PEER_UP);
	ck_assert_int_eq(peer_fsm_next(PEER_HANDSHAKING, PEER_EV_HANDSHAKE_FAILED), PEER_DEAD);
	ck_assert_int_eq(peer_fsm_next(PEER_DEAD, PEER_EV_HANDSHAKE_STARTED), PEER_HANDSHAKING);
	ck_assert_int_eq(peer_fsm_next(PEER_UP, PEER_EV_DEAD), PEER_DEAD);
	ck_assert_int_eq(peer_fsm_next(PEER_DEAD, PEER_EV_UP), PEER_UP);
	ck_assert_int_eq(peer_fsm_next(PEER_UP, PEER_EV_CLOSED), PEER_IDLE);
	ck_assert_int_eq(peer_fsm_next(PEER_DEAD, PEER_EV_RESET), PEER_IDLE);
	/* Sessions we ended (maximum age) say nothing new about the peer:
	 * up becomes idle, a dead peer stays dead. */
	ck_assert_int_eq(peer_fsm_next(PEER_UP, PEER_EV_SESSIONS_ENDED), PEER_IDLE);
	ck_assert_int_eq(peer_fsm_next(PEER_DEAD, PEER_EV_SESSIONS_ENDED), PEER_DEAD);
	ck_assert_int_eq(peer_fsm_next(PEER_IDLE, PEER_EV_SESSIONS_ENDED), PEER_IDLE);
	ck_assert_int_eq(peer_fsm_next(PEER_HANDSHAKING, PEER_EV_SESSIONS_ENDED),
	    PEER_HANDSHAKING);
	ck_assert_str_eq(peer_event_name(PEER_EV_SESSIONS_ENDED), "sessions ended");
	ck_assert_str_eq(peer_event_name(PEER_EV__MAX), "unknown");
}
END_TEST

/* A session past its maximum age that no handshake replaced is ended by
 * the rekey timer: the other side is told, and the peer goes idle with
 * the event of its own (a dead peer stays dead). */
START_TEST(max_age_end)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t age = handshake_max_age_ms(&B.t);
	int dead;

	for (dead = 0; dead < 2; dead++) {
		bring_up();
		ck_assert_ptr_nonnull(pb->cur);
		ck_assert_ptr_null(pb->next);
		if (dead)
			peer_event(pb, PEER_EV_DEAD);
		fake_now += age + SESSION_HANDSHAKE_MS;
		event_active(pb->ev_rekey, EV_TIMEOUT, 1);
		spin(&B);
		ck_assert_ptr_null(pb->cur);
		ck_assert_ptr_null(pb->next);
		ck_assert_str_eq(state(&B), dead ? "dead" : "idle");
		ck_assert_str_eq(peer_error(pb), "session reached its maximum age");
		/* its close_notify reaches A, which drops the session too */
		ck_assert_uint_gt(B.n_out, 0);
		deliver(&B, &A);
		ck_assert_ptr_null(pa->cur);
		ck_assert_uint_eq(A.t.events[EVENT_SESSION_CLOSED], (uint64_t)dead + 1);
		while (pa->prev || pb->prev)
			session_free(pa->prev ? pa->prev : pb->prev);
	}
}
END_TEST

/* The session table: by ID, by name, in the list, and the half-open
 * count, through insert and free; and its queries without a table. */
START_TEST(session_table)
{
	union sockaddr_union any = B.addr;
	struct toud none = { 0 };
	struct session *s1, *s2, *s;
	size_t n0 = session_count(&B.t), n = 0;
	uint32_t idx = 7;
	bool seen1 = false, seen2 = false;

	ck_assert_ptr_nonnull(s1 = session_alloc(&B.t, 0x1111, &any, fake_now));
	ck_assert_ptr_nonnull(s2 = session_alloc(&B.t, 0x2222, &any, fake_now));
	ck_assert_ptr_null(session_find(&B.t, 0x1111, NULL));  /* not yet inserted */
	session_insert(s1);
	session_insert(s2);
	ck_assert_uint_eq(session_count(&B.t), n0 + 2);
	ck_assert_ptr_eq(session_find(&B.t, 0x1111, &idx), s1);
	ck_assert_uint_eq(idx, 0);
	ck_assert_ptr_eq(session_find(&B.t, 0x2222, NULL), s2);
	ck_assert_ptr_eq(session_named(&B.t, 0x2222), s2);
	for (s = session_next(&B.t, NULL); s; s = session_next(&B.t, s)) {
		seen1 |= s == s1;
		seen2 |= s == s2;
		n++;
	}
	ck_assert(seen1 && seen2);
	ck_assert_uint_eq(n, n0 + 2);
	session_half_open_add(s2);
	session_half_open_add(s2);
	ck_assert_uint_eq(session_half_open(&B.t), 1);
	session_free(s2);               /* half open: the count follows */
	ck_assert_uint_eq(session_half_open(&B.t), 0);
	ck_assert_ptr_null(session_find(&B.t, 0x2222, NULL));
	ck_assert_ptr_null(session_named(&B.t, 0x2222));
	ck_assert_uint_eq(session_count(&B.t), n0 + 1);
	session_half_open_add(s1);
	session_half_open_done(s1);     /* authenticated */
	ck_assert_uint_eq(session_half_open(&B.t), 0);
	session_free(s1);
	ck_assert_uint_eq(session_count(&B.t), n0);
	ck_assert_ptr_null(session_find(&B.t, 0x1111, NULL));
	/* encryption = none: no table */
	ck_assert_uint_eq(session_count(&none), 0);
	ck_assert_uint_eq(session_half_open(&none), 0);
	ck_assert_ptr_null(session_next(&none, NULL));
}
END_TEST

/* Behind a balancer: B has a server ID.  A's first ID is unroutable (top
 * bits set); once up, both ends send with IDs that carry B's server ID
 * (top bits clear), through rotation and into the rekey's handshake, the
 * other 54 bits as derived.  Without one (A, as responder, has none) the
 * IDs are as derived, and nobody moves off ID 0 at once. */
START_TEST(server_id_in_every_id)
{
	struct peer *pa, *pb;
	struct conf *c;
	uint64_t id0, id;
	uint32_t i;

	node_stop(&B);
	memset(&B.t, 0, sizeof(B.t));
	B.n_out = 0;
	c = node_conf(&B, "10.77.0.2", "a", A.fp, "192.0.2.1", "10.77.0.1");
	c->iface.server_id = 9;
	node_start(&B, c, "192.0.2.2");
	pa = peer_of(&A);
	pb = peer_of(&B);

	bring_up();
	id0 = pa->cur->id;
	ck_assert_uint_eq(id0 & SESSID_UNROUTED, SESSID_UNROUTED);
	ck_assert_uint_eq(sessid_server(id0), 0);
	ck_assert_uint_eq(pa->cur->server_id, 9);
	ck_assert_uint_eq(pb->cur->server_id, 9);
	/* A moved to ID 1 when it came up, and B followed its keepalive. */
	ck_assert_uint_eq(pa->cur->tx_index, 1);
	ck_assert_uint_eq(pb->cur->tx_index, 1);
	ck_assert_uint_eq(pa->cur->wire_id, pb->cur->wire_id);
	for (i = 1; i <= 12; i++) {
		id = session_ids_wire(pa->cur, i);
		ck_assert_uint_eq(id, session_ids_wire(pb->cur, i));
		ck_assert_uint_eq(id & SESSID_UNROUTED, 0);
		ck_assert_uint_eq(sessid_server(id), 9);
		ck_assert_uint_eq(id & ~(SESSID_UNROUTED | UINT64_C(0xff) << 48),
		    sessid_derive(pa->cur->id_seed, i) & ~(SESSID_UNROUTED | UINT64_C(0xff) << 48));
	}
	/* Every record after the handshake carries the routable ID. */
	A.n_out = B.n_out = 0;
	tun_send(&A, true, 2);
	tun_send(&B, false, 3);
	spin(&A);
	spin(&B);
	ck_assert_uint_ge(A.n_out, 1);
	ck_assert_uint_ge(B.n_out, 1);
	for (i = 0; i < A.n_out; i++)
		ck_assert_uint_eq(sessid_server(rec_wire_id(&A, i)), 9);
	for (i = 0; i < B.n_out; i++)
		ck_assert_uint_eq(sessid_server(rec_wire_id(&B, i)), 9);
	pump();
	ck_assert_int_eq(tun_recv(&B), 2);
	ck_assert_int_eq(tun_recv(&A), 3);

	/* A new path: a new ID, the same server. */
	session_ids_use(pa->cur, session_ids_fresh(pa->cur));
	ck_assert_uint_eq(pa->cur->tx_index, 3);
	ck_assert_uint_eq(sessid_server(pa->cur->wire_id), 9);

	/* The rekey's ID 0 routes to the same server. */
	fake_now += 1000ULL * A.t.conf->iface.rekey_seconds + 5;
	ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	ck_assert_ptr_nonnull(pa->next);
	ck_assert_uint_eq(sessid_server(pa->next->id), 9);
	ck_assert_uint_ne(pa->next->id, id0);
	pump();
	ck_assert_uint_ne(pa->cur->id, id0);
	ck_assert_uint_eq(pa->cur->server_id, 9);
	ck_assert_uint_eq(sessid_server(pa->cur->wire_id), 9);
	ck_assert_uint_eq(pb->cur->wire_id, pa->cur->wire_id);
}
END_TEST

/* No server ID: the IDs are those of the derivation, and the first one
 * stays until a path changes. */
START_TEST(no_server_id_as_derived)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);

	bring_up();
	ck_assert_uint_eq(pa->cur->id & SESSID_UNROUTED, SESSID_UNROUTED);
	ck_assert_uint_eq(pa->cur->server_id, 0);
	ck_assert_uint_eq(pb->cur->server_id, 0);
	ck_assert_uint_eq(pa->cur->wire_id, pa->cur->id);
	ck_assert_uint_eq(pb->cur->wire_id, pb->cur->id);
	ck_assert_uint_eq(session_ids_wire(pa->cur, 5), sessid_derive(pa->cur->id_seed, 5));
}
END_TEST

/* Many sessions: the tables by ID and by name grow, every session is
 * found both ways, and none is left once they are freed. */
START_TEST(session_table_many)
{
	enum { N = 20000 };
	union sockaddr_union any = B.addr;
	struct session **ss = calloc(N, sizeof(*ss));
	size_t n0 = session_count(&B.t), i;
	uint32_t idx;

	ck_assert_ptr_nonnull(ss);
	for (i = 0; i < N; i++) {
		ck_assert_ptr_nonnull(ss[i] = session_alloc(&B.t, 0x5e55000000000000ULL + i * 7919,
		    &any, fake_now));
		session_insert(ss[i]);
	}
	ck_assert_uint_eq(session_count(&B.t), n0 + N);
	ck_assert_uint_ge(B.t.sessions->n_buckets, N / 2);
	for (i = 0; i < N; i++) {
		ck_assert_ptr_eq(session_find(&B.t, 0x5e55000000000000ULL + i * 7919, &idx), ss[i]);
		ck_assert_ptr_eq(session_named(&B.t, 0x5e55000000000000ULL + i * 7919), ss[i]);
	}
	ck_assert_ptr_null(session_find(&B.t, 0x5e55000000000001ULL, NULL));
	ck_assert_ptr_null(session_named(&B.t, 0x5e55000000000001ULL));
	for (i = 0; i < N; i += 2)
		session_free(ss[i]);
	for (i = 0; i < N; i++) {
		struct session *want = i % 2 ? ss[i] : NULL;

		ck_assert_ptr_eq(session_find(&B.t, 0x5e55000000000000ULL + i * 7919, NULL), want);
		ck_assert_ptr_eq(session_named(&B.t, 0x5e55000000000000ULL + i * 7919), want);
	}
	for (i = 1; i < N; i += 2)
		session_free(ss[i]);
	ck_assert_uint_eq(session_count(&B.t), n0);
	free(ss);
}
END_TEST

/* --- paths: UDP and the fake TCP transport ---------------------------- */

static struct peer_path *
tcp_path(struct node *n)
{
	struct peer_path *ph = transport_path(peer_of(n)->paths, &fake_tcp);

	ck_assert_ptr_nonnull(ph);
	return ph;
}

static bool
tcp_opening(struct node *n)
{
	return tcp_path(n)->conn && n->tconn.outgoing && !n->tconn.up;
}

/* n's connection is now an up one, opened by n if outgoing: the
 * transport's up callback. */
static void
tcp_now(struct node *n, bool outgoing)
{
	n->tconn = (struct fake_conn){ .outgoing = outgoing, .up = true };
	tcp_path(n)->conn = &n->tconn;
	peer_timers_path_up(peer_of(n), tcp_path(n));
}

/* Both ends opened at once: the connections cross, and both ends keep
 * the one opened by the lower key, as tcp.c's conn_established decides.
 * The lower key's authenticating first: it is up at its end, replaces
 * the higher's own (still authenticating) at the other, and the higher's
 * reaching the lower end is closed there; no end hears a down.  The
 * higher's first (tcp_higher_first): it is up at its end, the lower end
 * lets it carry while setting its own aside; then the lower's comes up
 * and replaces it at both ends, each end hearing a second up. */
static void
tcp_cross(void)
{
	struct node *lo = memcmp(A.fp, B.fp, KEYS_FP_LEN) < 0 ? &A : &B;
	struct node *hi = lo == &A ? &B : &A;

	if (tcp_higher_first) {
		tcp_now(hi, true);
		tcp_now(lo, false);
	}
	tcp_now(lo, true);
	tcp_now(hi, false);
	peer_of(lo)->events[EVENT_TCP_CROSSED]++;
	peer_of(hi)->events[EVENT_TCP_CROSSED]++;
}

/* Answer the opens under way and report closes by the other end, as a
 * connection's events would. */
static void
tcp_settle(void)
{
	struct node *nodes[2] = { &A, &B };
	unsigned i;

	if (!fake_tcp_on)
		return;
	if (!tcp_blocked && tcp_opening(&A) && tcp_opening(&B))
		tcp_cross();
	for (i = 0; i < 2; i++) {
		struct node *n = nodes[i], *o = n == &A ? &B : &A;
		struct peer_path *ph = tcp_path(n), *oph = tcp_path(o);

		if (n->t_closed_by_peer) {
			n->t_closed_by_peer = false;
			if (ph->conn) {
				ph->conn = NULL;
				n->tconn = (struct fake_conn){ 0 };
				peer_timers_path_down(peer_of(n), ph, "tcp fake: closed by the peer");
			}
		}
		if (!ph->conn || n->tconn.up)
			continue;
		if (tcp_blocked) {
			ph->conn = NULL;
			n->tconn = (struct fake_conn){ 0 };
			peer_timers_path_down(peer_of(n), ph, "tcp fake: timed out");
			continue;
		}
		/* The listener accepts and authenticates first. */
		o->tconn = (struct fake_conn){ .up = true };
		oph->conn = &o->tconn;
		peer_timers_path_up(peer_of(o), oph);
		n->tconn.up = true;
		peer_timers_path_up(peer_of(n), ph);
	}
}

/* Hand from's TCP frames to `to`, as tcp.c hands what it read. */
static unsigned
deliver_tcp(struct node *from, struct node *to)
{
	static uint8_t buf[RX_HEADROOM + sizeof(from->tframes[0].buf)];
	unsigned i, n = from->n_tframes;

	from->n_tframes = 0;
	for (i = 0; i < n; i++) {
		struct udp_msg m = { .buf = buf + RX_HEADROOM, .len = from->tframes[i].len };

		memcpy(m.buf, from->tframes[i].buf, m.len);
		rx_frames(&to->t, peer_of(to), tcp_path(to), &m, 1);
	}
	return n;
}

/* The clock moves by ms; the policy's look, the timers that answer data
 * (the passive keepalive) and the end of a handshake that ran out of time
 * (SESSION_HANDSHAKE_MS) fire when due, and the network runs. */
static void
advance(uint64_t ms)
{
	uint64_t end = fake_now + ms;

	while (fake_now < end) {
		struct node *nodes[2] = { &A, &B };
		unsigned i;

		fake_now += 100;
		for (i = 0; i < 2; i++) {
			struct peer *p = peer_of(nodes[i]);

			if (p->ev_transport && (fake_now / 100) % 5 == 0)
				event_active(p->ev_transport, EV_TIMEOUT, 1);
			if (p->last_data_rx_ms && fake_now - p->last_data_rx_ms >= 5000)
				peer_timers_passive_keepalive(p);
			if (p->next && fake_now - p->next->created_ms >= SESSION_HANDSHAKE_MS)
				event_active(p->next->ev_timer, EV_TIMEOUT, 1);
		}
		pump();
	}
}

/* When the policy fails a path that stopped answering: data unanswered
 * for POL_PROBE_AFTER_MS, then POL_PROBE_MISSES probes missed (their
 * timeouts doubling from POL_PROBE_TIMEOUT_MS: 0.5 + 1 + 2 s). */
#define FAIL_MS (POL_PROBE_AFTER_MS + 7 * POL_PROBE_TIMEOUT_MS)
/* The tick of these cases (advance()), and the open and the move after it. */
#define LOOK_MS 1500

/* An exchange both ways for ms: a packet each way each 500 ms, numbered
 * from *seq on. */
static void
exchange_for(uint64_t ms, uint32_t *seq)
{
	uint64_t t0;

	for (t0 = fake_now; fake_now - t0 < ms;) {
		tun_send(&A, true, (*seq)++);
		tun_send(&B, false, (*seq)++);
		advance(500);
	}
}

/* After what waited, one packet each way: both arrive, on whichever path
 * carries them. */
static void
exchange_check(uint32_t from_a, uint32_t from_b)
{
	while (tun_recv(&A) >= 0)
		;
	while (tun_recv(&B) >= 0)
		;
	tun_send(&A, true, from_a);
	tun_send(&B, false, from_b);
	pump();
	ck_assert_int_eq(tun_recv(&B), from_a);
	ck_assert_int_eq(tun_recv(&A), from_b);
}

static void
paths_setup(void)
{
	fake_tcp_on = true;
	tcp_blocked = false;
	setup();
}

static void
paths_teardown(void)
{
	teardown();
	fake_tcp_on = false;
}

/* UDP works, then is blocked both ways while data flows: A probes UDP,
 * fails it after FAIL_MS and opens TCP, both move there and the data goes
 * on; UDP returns: A's background probes are answered, and after the
 * hysteresis (POL_CONFIRM_N answers over POL_CONFIRM_MS) both move back;
 * TCP closes once it has been quiet for POL_LINGER_MS. */
START_TEST(paths_udp_blocked_then_back)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t t0, moved = 0;
	uint32_t seq = 100;

	tun_send(&A, true, 1);
	pump();
	ck_assert_str_eq(peer_transport_name(pa), "udp");
	ck_assert_int_eq(tun_recv(&B), 1);
	udp_ab_blocked = udp_ba_blocked = true;
	t0 = fake_now;
	while (fake_now - t0 < 10000 && !moved) {
		tun_send(&A, true, seq++);
		advance(500);
		if (pa->transport_switches)
			moved = fake_now;
	}
	ck_assert_uint_ne(moved, 0);
	/* Not before the probes failed UDP, and at the next look after. */
	ck_assert_uint_ge(moved - t0, FAIL_MS);
	ck_assert_uint_le(moved - t0, FAIL_MS + LOOK_MS);
	ck_assert_uint_eq(A.t_opens, 1);
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
	ck_assert_str_eq(peer_transport_name(pb), "tcp");
	ck_assert_uint_eq(pa->transport_switches, 1);
	ck_assert_uint_eq(pa->events[EVENT_TRANSPORT_TCP], 1);
	ck_assert_str_eq(peer_error(pa), "");
	/* UDP, left, is not up whatever session it keeps: it failed. */
	ck_assert_int_ne(pa->paths->path[0].ops->state(pa, &pa->paths->path[0]), TRANSPORT_UP);
	ck_assert_int_eq(path_policy_state(&pa->paths->pol, 0), POL_STATE_FAILED);
	ck_assert_int_eq(tcp_path(&A)->ops->state(pa, tcp_path(&A)), TRANSPORT_UP);
	/* What waited goes over TCP, and new data too, both ways. */
	while (tun_recv(&B) >= 0)
		;
	tun_send(&A, true, 500);
	tun_send(&B, false, 501);
	pump();
	ck_assert_int_eq(tun_recv(&B), 500);
	ck_assert_int_eq(tun_recv(&A), 501);

	/* UDP comes back: A sees it within the probe back-off, and moves
	 * back once it is confirmed, not sooner. */
	udp_ab_blocked = udp_ba_blocked = false;
	t0 = fake_now;
	while (fake_now - t0 < 40000 && pa->transport_switches == 1) {
		tun_send(&A, true, seq++);
		advance(500);
	}
	ck_assert_uint_eq(pa->transport_switches, 2);
	ck_assert_uint_ge(fake_now - t0, POL_CONFIRM_MS);
	ck_assert_uint_le(fake_now - t0, POL_REPROBE_MAX_MS + POL_CONFIRM_MS + LOOK_MS);
	ck_assert_str_eq(peer_transport_name(pa), "udp");
	/* B heard A's keepalive on UDP and followed. */
	ck_assert_str_eq(peer_transport_name(pb), "udp");
	ck_assert_uint_eq(pb->transport_switches, 2);
	/* TCP drains, then closes. */
	ck_assert_ptr_nonnull(tcp_path(&A)->conn);
	exchange_for(POL_LINGER_MS + LOOK_MS, &seq);
	ck_assert_ptr_null(tcp_path(&A)->conn);
	ck_assert_ptr_null(tcp_path(&B)->conn);
	while (tun_recv(&B) >= 0)
		;
	tun_send(&A, true, 600);
	pump();
	ck_assert_int_eq(tun_recv(&B), 600);
	/* And it stays there while UDP carries an exchange. */
	exchange_for(30000, &seq);
	ck_assert_uint_eq(pa->transport_switches, 2);
	ck_assert_uint_eq(A.t_opens, 1);
}
END_TEST

/* Half of the datagrams lost each way, an exchange going both ways: the
 * answers that get through keep UDP; no move. */
START_TEST(paths_udp_lossy_no_move)
{
	struct peer *pa = peer_of(&A);
	unsigned i;

	tun_send(&A, true, 1);
	pump();
	for (i = 0; i < 60; i++) {
		udp_ab_blocked = i % 2;
		udp_ba_blocked = i % 4 == 1;
		tun_send(&A, true, 10 + i);
		tun_send(&B, false, 1000 + i);
		advance(500);
	}
	ck_assert_uint_eq(pa->transport_switches, 0);
	ck_assert_uint_eq(A.t_opens, 0);
	ck_assert_str_eq(peer_transport_name(pa), "udp");
}
END_TEST

/* Neither UDP nor TCP gets through: the opens back off (1, 2, 4 ... 60 s
 * apart: POL_OPEN_MIN_MS to POL_OPEN_MAX_MS), there is no move, and the
 * policy's timer keeps its pace. */
START_TEST(paths_all_blocked_backs_off)
{
	struct peer *pa = peer_of(&A);
	uint64_t t0, last = 0, gap = 0;
	unsigned opens = 0;

	udp_ab_blocked = udp_ba_blocked = true;
	tcp_blocked = true;
	t0 = fake_now;
	while (fake_now - t0 < 180000) {
		tun_send(&A, true, 1);
		advance(500);
		if (A.t_opens != opens) {
			ck_assert_uint_eq(A.t_opens, opens + 1);
			if (last) {
				/* Never closer than the one before, never beyond
				 * the cap (and the look after it). */
				ck_assert_uint_ge(fake_now - last, gap);
				ck_assert_uint_le(fake_now - last, POL_OPEN_MAX_MS + LOOK_MS);
				gap = fake_now - last;
			}
			last = fake_now;
			opens = A.t_opens;
		}
	}
	ck_assert_uint_ge(opens, 5);
	ck_assert_uint_le(opens, 12);
	ck_assert_uint_ge(gap, 30000);
	ck_assert_uint_eq(pa->transport_switches, 0);
	ck_assert_str_eq(peer_transport_name(pa), "udp");
}
END_TEST

/* UDP blocked both ways while A sends data: A's peer moves to TCP
 * (within 20 s, or the case fails). */
static void
blocked_to_tcp(void)
{
	struct peer *pa = peer_of(&A);
	uint32_t seq = 1;

	udp_ab_blocked = udp_ba_blocked = true;
	while (pa->transport_switches == 0) {
		ck_assert_uint_lt(seq, 40);
		tun_send(&A, true, seq++);
		advance(500);
	}
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
}

/* On TCP, the host's addresses change: the keepalive that tells the peer
 * goes on the TCP path, with a probe of it (and one of UDP), and nothing
 * moves. */
START_TEST(paths_addr_change_on_tcp)
{
	struct peer *pa = peer_of(&A);
	uint64_t keepalives, probes;

	blocked_to_tcp();
	keepalives = pa->events[EVENT_KEEPALIVE_SENT];
	probes = pa->paths->pol.path[1].probes_sent;
	peer_timers_path_changed(pa);
	ck_assert_uint_eq(pa->events[EVENT_KEEPALIVE_SENT], keepalives + 1);
	ck_assert_uint_eq(pa->paths->pol.path[1].probes_sent, probes + 1);
	ck_assert_uint_eq(A.n_tframes, 2);
	advance(5000);
	ck_assert_uint_eq(pa->transport_switches, 1);
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
}
END_TEST

/* On TCP, UDP's handshakes are probes: one that gets no answer is an
 * event, not a loss, sets no last_error and leaves the peer up; show's
 * cipher is the TLS connection's. */
START_TEST(paths_tcp_probe_failure_quiet)
{
	struct peer *pa = peer_of(&A);
	uint64_t failed, losses;

	blocked_to_tcp();
	ck_assert_str_eq(peer_cipher(pa), "TLS_AES_128_GCM_SHA256");
	ck_assert_str_eq(state(&A), "up");
	failed = pa->events[EVENT_HANDSHAKE_FAILED];
	losses = pa->drops[DROP_HANDSHAKE];
	if (!pa->next) {
		pa->hs_retry_ms = 0;
		ck_assert_int_eq(handshake_initiate(pa, fake_now), 0);
	}
	spin(&A);
	A.n_out = 0;
	fake_now += SESSION_HANDSHAKE_MS;
	hs_timeout(&A, pa);
	ck_assert_ptr_null(pa->next);
	ck_assert_uint_eq(pa->events[EVENT_HANDSHAKE_FAILED], failed + 1);
	ck_assert_uint_eq(pa->drops[DROP_HANDSHAKE], losses);
	ck_assert_str_eq(peer_error(pa), "");
	ck_assert_str_eq(state(&A), "up");
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
}
END_TEST

/* UDP lost one way (*blocked): A moves to TCP after FAIL_MS (within a
 * look), B follows, and a minute of traffic both ways follows. */
static void
one_way_loss(bool *blocked)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t t0;
	uint32_t seq = 10;

	tun_send(&A, true, 1);
	pump();
	ck_assert_int_eq(tun_recv(&B), 1);
	*blocked = true;
	t0 = fake_now;
	while (pa->transport_switches == 0) {
		ck_assert_uint_lt(fake_now - t0, 10000);
		tun_send(&A, true, seq++);
		advance(500);
	}
	ck_assert_uint_ge(fake_now - t0, FAIL_MS);
	ck_assert_uint_le(fake_now - t0, FAIL_MS + LOOK_MS);
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
	ck_assert_str_eq(peer_transport_name(pb), "tcp");
	exchange_for(60000, &seq);
}

/* UDP lost one way only, from B to A: A's data arrives but nothing comes
 * back, so A moves to TCP and stays there while its probes of UDP (which
 * reach B) get no answer back; the traffic flows both ways over TCP. */
START_TEST(paths_one_way_loss)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);

	one_way_loss(&udp_ba_blocked);
	/* Probes went out over UDP and reached B (it answered them); none
	 * came back. */
	ck_assert_uint_gt(pb->events[EVENT_PATH_RESPONSE_SENT] +
	    pb->events[EVENT_HANDSHAKE_ACCEPTED], 0);
	ck_assert_uint_eq(pa->transport_switches, 1);
	ck_assert_uint_eq(A.t_opens, 1);
	while (tun_recv(&A) >= 0)
		;
	tun_send(&B, false, 7777);
	pump();
	ck_assert_int_eq(tun_recv(&A), 7777);
}
END_TEST

/* The inner flow pauses for 30 s with data going one way only (a reader
 * that stops reading: what A sends gets no answer from B's inner flow) on
 * an open network: A probes UDP, the probes are answered, and nothing
 * moves. */
START_TEST(paths_paused_flow_no_move)
{
	struct peer *pa = peer_of(&A);
	uint64_t t0;
	uint32_t seq = 10;

	tun_send(&A, true, 1);
	tun_send(&B, false, 2);
	pump();
	for (t0 = fake_now; fake_now - t0 < 30000;) {
		tun_send(&A, true, seq++);
		advance(500);
	}
	ck_assert_uint_gt(pa->paths->pol.path[0].probes_sent, 0);
	ck_assert_uint_ge(pa->paths->pol.path[0].probes_answered + 1,
	    pa->paths->pol.path[0].probes_sent);
	ck_assert_uint_eq(pa->transport_switches, 0);
	ck_assert_uint_eq(A.t_opens, 0);
	ck_assert_int_eq(path_policy_state(&pa->paths->pol, 0), POL_STATE_ACTIVE);
	ck_assert_str_eq(peer_transport_name(pa), "udp");
}
END_TEST

/* UDP comes back and dies again, 10 s each, for three minutes, with an
 * exchange going both ways: A leaves a failed UDP at once each time, but
 * moves back to it at most once each POL_MOVE_BOUND_MS, and only after
 * the hysteresis; the traffic flows throughout. */
START_TEST(paths_flapping_bounded)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t t0, back[16];
	unsigned nback = 0, i;
	uint64_t ups = 0;
	uint32_t seq = 10;

	tun_send(&A, true, 1);
	pump();
	for (t0 = fake_now; fake_now - t0 < 180000;) {
		bool block = (fake_now - t0) / 10000 % 2 == 0;

		udp_ab_blocked = udp_ba_blocked = block;
		tun_send(&A, true, seq++);
		tun_send(&B, false, seq++);
		advance(500);
		if (pa->events[EVENT_TRANSPORT_UDP] != ups) {
			ups = pa->events[EVENT_TRANSPORT_UDP];
			ck_assert_uint_lt(nback, 16);
			back[nback++] = fake_now;
			/* Confirmed: not within POL_CONFIRM_MS of UDP's return. */
			ck_assert(!udp_ab_blocked);
			ck_assert_uint_ge((fake_now - t0) % 20000, 10000 + POL_CONFIRM_MS);
		}
	}
	ck_assert_uint_ge(nback, 1);
	for (i = 1; i < nback; i++)
		ck_assert_uint_ge(back[i] - back[i - 1], POL_MOVE_BOUND_MS);
	/* Each move back is followed by at most one move away: at most two
	 * moves a minute, against nine outages. */
	ck_assert_uint_le(pa->transport_switches, 2 * nback + 1);
	ck_assert_uint_le(pa->transport_switches, 7);
	ck_assert_uint_eq(pa->events[EVENT_TRANSPORT_TCP], pa->transport_switches - nback);
	/* The exchange still flows, whichever path carries it. */
	udp_ab_blocked = udp_ba_blocked = false;
	exchange_check(9001, 9002);
	ck_assert_str_eq(peer_transport_name(pb), peer_transport_name(pa));
}
END_TEST

/* UDP lost one way only, from A to B: nothing of A's reaches B, so its
 * probes go unanswered; A moves to TCP after FAIL_MS, B follows, and they
 * stay there (A's probes of UDP never reach B) with the traffic flowing
 * both ways. */
START_TEST(paths_one_way_loss_ab)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);

	one_way_loss(&udp_ab_blocked);
	ck_assert_uint_gt(pa->paths->pol.path[0].probes_sent, 3);
	ck_assert_uint_eq(pa->paths->pol.path[0].probes_answered, 0);
	ck_assert_uint_eq(pa->transport_switches, 1);
	ck_assert_uint_eq(pb->transport_switches, 1);
	ck_assert_uint_eq(A.t_opens, 1);
	while (tun_recv(&B) >= 0)
		;
	tun_send(&A, true, 7777);
	pump();
	ck_assert_int_eq(tun_recv(&B), 7777);
}
END_TEST

/* UDP blocked from the start, the peers on TCP: when B ends the
 * connection and no other path is up, both go back to the preferred path
 * (show says udp, B says why), and B follows A again once A has
 * reconnected, after POL_OPEN_MIN_MS. */
START_TEST(paths_none_left_back_to_preferred)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t t0;

	blocked_to_tcp();
	ck_assert_str_eq(peer_transport_name(pb), "tcp");
	ck_assert_ptr_null(pb->cur);
	/* B ends it (a reload revoked A's key) and says why. */
	tcp_path(&B)->ops->close(pb, tcp_path(&B));
	peer_timers_path_down(pb, tcp_path(&B), "tcp fake: revoked");
	ck_assert_str_eq(peer_transport_name(pb), "udp");
	ck_assert_str_eq(peer_error(pb), "tcp fake: revoked");
	tcp_settle();
	ck_assert_str_eq(peer_transport_name(pa), "udp");
	for (t0 = fake_now; fake_now - t0 < 10000 && strcmp(peer_transport_name(pb), "tcp");) {
		tun_send(&A, true, 5);
		advance(500);
	}
	ck_assert_str_eq(peer_transport_name(pb), "tcp");
	ck_assert_uint_eq(A.t_opens, 2);
}
END_TEST

/* UDP blocked from the start, both ends with endpoint-tcp and data to
 * send: both fail UDP at the same moment and open TCP at the same tick,
 * the connections cross (tcp_cross()), and one carries the traffic: the
 * one opened by the lower key, at both ends.  Nothing moves, opens or
 * closes after that for five minutes, while the traffic flows both ways
 * and UDP's background probes go unanswered.  _i: which connection
 * authenticates first. */
START_TEST(paths_tcp_crossed)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	struct node *lo = memcmp(A.fp, B.fp, KEYS_FP_LEN) < 0 ? &A : &B;
	struct node *hi = lo == &A ? &B : &A;
	uint64_t t0;
	uint32_t seq = 10;

	tcp_higher_first = _i;
	ck_assert(pa->paths->pol.leads && pb->paths->pol.leads);
	udp_ab_blocked = udp_ba_blocked = true;
	t0 = fake_now;
	while (!pa->transport_switches || !pb->transport_switches) {
		ck_assert_uint_lt(fake_now - t0, 20000);
		tun_send(&A, true, seq++);
		tun_send(&B, false, seq++);
		advance(500);
	}
	/* Both opened, once, in the same look. */
	ck_assert_uint_eq(A.t_opens, 1);
	ck_assert_uint_eq(B.t_opens, 1);
	ck_assert_uint_eq(pa->events[EVENT_TCP_CROSSED], 1);
	ck_assert_uint_ge(fake_now - t0, FAIL_MS);
	ck_assert_uint_le(fake_now - t0, FAIL_MS + LOOK_MS);
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
	ck_assert_str_eq(peer_transport_name(pb), "tcp");
	for (t0 = fake_now; fake_now - t0 < 300000;) {
		tun_send(&A, true, seq++);
		tun_send(&B, false, seq++);
		advance(500);
		/* One connection, the lower key's, at both ends. */
		ck_assert_ptr_nonnull(tcp_path(lo)->conn);
		ck_assert_ptr_nonnull(tcp_path(hi)->conn);
		ck_assert(lo->tconn.up && lo->tconn.outgoing);
		ck_assert(hi->tconn.up && !hi->tconn.outgoing);
	}
	ck_assert_uint_eq(A.t_opens, 1);
	ck_assert_uint_eq(B.t_opens, 1);
	ck_assert_uint_eq(pa->transport_switches, 1);
	ck_assert_uint_eq(pb->transport_switches, 1);
	ck_assert_uint_eq(pa->events[EVENT_TCP_CROSSED], 1);
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
	ck_assert_str_eq(peer_transport_name(pb), "tcp");
	ck_assert_int_eq(path_policy_state(&pa->paths->pol, 1), POL_STATE_ACTIVE);
	ck_assert_int_eq(path_policy_state(&pb->paths->pol, 1), POL_STATE_ACTIVE);
	ck_assert_str_eq(peer_error(pa), "");
	ck_assert_str_eq(peer_error(pb), "");
	exchange_check(7001, 7002);
}
END_TEST

/* A network where only TCP gets out (through a proxy): UDP blocked from
 * the start.  A's handshake goes unanswered, which fails UDP as silence
 * after data does, and A opens TCP: the peer is up on TCP within FAIL_MS
 * and a look.  For ten minutes it stays there, the traffic flowing both
 * ways, while UDP's probes (handshakes) back off to one each
 * POL_REPROBE_MAX_MS.  Then UDP starts working: A moves back once, after
 * the hysteresis, B follows, and TCP closes. */
START_TEST(paths_proxy_only)
{
	struct peer *pa = peer_of(&A), *pb = peer_of(&B);
	uint64_t t0, hs0, answered, seen = 0;
	unsigned sent0;
	uint32_t seq = 10;

	udp_ab_blocked = udp_ba_blocked = true;
	t0 = fake_now;
	while (!pa->transport_switches) {
		ck_assert_uint_lt(fake_now - t0, 20000);
		tun_send(&A, true, seq++);
		advance(500);
	}
	ck_assert_uint_le(fake_now - t0, FAIL_MS + LOOK_MS);
	ck_assert_uint_eq(A.t_opens, 1);
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
	ck_assert_str_eq(peer_transport_name(pb), "tcp");
	ck_assert_str_eq(state(&A), "up");
	ck_assert_ptr_null(pa->cur);
	/* What waited for a path went over TCP. */
	ck_assert_int_eq(tun_recv(&B), 10);

	hs0 = pa->events[EVENT_HANDSHAKE_STARTED];
	sent0 = A.n_sent;
	exchange_for(600000, &seq);
	ck_assert_uint_eq(pa->transport_switches, 1);
	ck_assert_uint_eq(pb->transport_switches, 1);
	ck_assert_uint_eq(A.t_opens, 1);
	ck_assert_str_eq(peer_transport_name(pa), "tcp");
	ck_assert_str_eq(peer_transport_name(pb), "tcp");
	/* UDP is tried in the background at the back-off's pace: one
	 * handshake each POL_REPROBE_MAX_MS at most (and a few before it got
	 * there), each of a few datagrams; no busy loop. */
	ck_assert_uint_ge(pa->events[EVENT_HANDSHAKE_STARTED] - hs0, 600000 / POL_REPROBE_MAX_MS / 2);
	ck_assert_uint_le(pa->events[EVENT_HANDSHAKE_STARTED] - hs0, 600000 / POL_REPROBE_MAX_MS + 4);
	ck_assert_uint_le(A.n_sent - sent0, 4 * (600000 / POL_REPROBE_MAX_MS + 4));
	ck_assert_uint_eq(B.n_sent, 0);
	exchange_check(7001, 7002);

	/* UDP starts working: its first answered probe comes within the
	 * back-off, and the move back POL_CONFIRM_MS after it, not sooner
	 * (the clock in steps of 100 ms here). */
	udp_ab_blocked = udp_ba_blocked = false;
	answered = pa->paths->pol.path[0].probes_answered;
	t0 = fake_now;
	while (pa->transport_switches == 1) {
		ck_assert_uint_lt(fake_now - t0, 60000);
		if ((fake_now - t0) % 500 == 0) {
			tun_send(&A, true, seq++);
			tun_send(&B, false, seq++);
		}
		advance(100);
		if (!seen && pa->paths->pol.path[0].probes_answered > answered)
			seen = fake_now;
	}
	ck_assert_uint_ne(seen, 0);
	ck_assert_uint_le(seen - t0, POL_REPROBE_MAX_MS + LOOK_MS);
	ck_assert_uint_ge(fake_now - seen, POL_CONFIRM_MS);
	ck_assert_uint_le(fake_now - seen, POL_CONFIRM_MS + LOOK_MS);
	ck_assert_str_eq(peer_transport_name(pa), "udp");
	ck_assert_str_eq(peer_transport_name(pb), "udp");
	exchange_for(120000, &seq);
	ck_assert_uint_eq(pa->transport_switches, 2);
	ck_assert_uint_eq(pb->transport_switches, 2);
	ck_assert_uint_eq(pa->events[EVENT_TRANSPORT_UDP], 1);
	ck_assert_uint_eq(A.t_opens, 1);
	ck_assert_ptr_null(tcp_path(&A)->conn);
	ck_assert_ptr_null(tcp_path(&B)->conn);
	ck_assert_str_eq(peer_transport_name(pa), "udp");
}
END_TEST

static void
paths_both_setup(void)
{
	tcp_both = true;
	paths_setup();
}

static void
paths_both_teardown(void)
{
	paths_teardown();
	tcp_both = tcp_higher_first = false;
}

static Suite *
peer_suite(void)
{
	Suite *s = suite_create("peer");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, loop_priorities);
	tcase_add_test(tc, handshake_with_held_packets);
	tcase_add_test(tc, tie_break);
	tcase_add_test(tc, rekey);
	tcase_add_test(tc, pq_forged_records);
	tcase_add_test(tc, pq_late_reply);
	tcase_add_test(tc, rekey_delay_underflow);
	tcase_add_test(tc, reconnect_after_close);
	tcase_add_test(tc, dead_peer);
	tcase_add_test(tc, one_way_not_dead);
	tcase_add_test(tc, last_data_answered);
	tcase_add_test(tc, keepalives_start_no_handshake);
	tcase_add_test(tc, pending_queue_bound);
	tcase_add_test(tc, roaming_rule);
	tcase_add_test(tc, path_unanswered_keeps_endpoint);
	tcase_add_test(tc, path_response_must_match);
	tcase_add_test(tc, ids_follow_the_path);
	tcase_add_test(tc, ids_skip_a_taken_id);
	tcase_add_test(tc, ids_stay_in_the_window);
	tcase_add_test(tc, ids_none_left_waits);
	tcase_add_test(tc, ids_follow_a_late_record);
	tcase_add_test(tc, server_id_in_every_id);
	tcase_add_test(tc, no_server_id_as_derived);
	tcase_add_test(tc, reload_changes_key);
	tcase_add_test(tc, reload_removes_peer_mid_handshake);
	tcase_add_test(tc, send_error_forgets_local);
	tcase_add_test(tc, reload_removes_one_changes_another);
	tcase_add_test(tc, reauthorize_ends_session);
	tcase_add_test(tc, wrong_pin_diagnosed);
	tcase_add_test(tc, no_answer_diagnosed);
	tcase_add_test(tc, netchange_concerns);
	tcase_add_test(tc, ping_answered_or_not);
	tcase_add_test(tc, cookie_stuck_diagnosed);
	tcase_add_test(tc, cipher_mismatch_diagnosed);
	tcase_add_test(tc, version_mismatch_diagnosed);
	tcase_add_test(tc, state_names);
	tcase_add_test(tc, cert_matches_two_peers);
	tcase_add_test(tc, max_age_both_roles);
	tcase_add_test(tc, max_age_end);
	tcase_add_test(tc, session_table);
	tcase_add_test(tc, session_table_many);
	tcase_add_test(tc, tun_refuses_merged);
	tcase_add_test(tc, send_thread_seals);
	tcase_add_test(tc, send_thread_peer_freed);
	tcase_add_test(tc, open_thread_accepts);
	tcase_add_test(tc, close_after_data);
	suite_add_tcase(s, tc);
	tc = tcase_create("paths");
	tcase_add_checked_fixture(tc, paths_setup, paths_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, paths_udp_blocked_then_back);
	tcase_add_test(tc, paths_udp_lossy_no_move);
	tcase_add_test(tc, paths_all_blocked_backs_off);
	tcase_add_test(tc, paths_addr_change_on_tcp);
	tcase_add_test(tc, paths_tcp_probe_failure_quiet);
	tcase_add_test(tc, paths_one_way_loss);
	tcase_add_test(tc, paths_paused_flow_no_move);
	tcase_add_test(tc, paths_flapping_bounded);
	tcase_add_test(tc, paths_one_way_loss_ab);
	tcase_add_test(tc, paths_none_left_back_to_preferred);
	tcase_add_test(tc, paths_proxy_only);
	suite_add_tcase(s, tc);
	tc = tcase_create("paths_both_open");
	tcase_add_checked_fixture(tc, paths_both_setup, paths_both_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, paths_tcp_crossed, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_run(peer_suite());
}
