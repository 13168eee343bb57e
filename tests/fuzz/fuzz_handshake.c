/* fuzz_handshake.c - libFuzzer harness for the handshake entry: each input
 * is one UDP datagram, from one of four sources, given to a whole receive
 * path (rx.c -> handshake.c / session.c -> dtls.c) of a node with one
 * configured peer.  What the node sends goes to a sink that checks the
 * amplification rule: no source is ever sent more than 3 times what it
 * sent (HelloVerifyRequests never exceed their request, and a handshake
 * budget covers the rest). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "conf.h"
#include "ctx.h"
#include "daemon.h"
#include "keys.h"
#include "rx.h"
#include "tun.h"
#include "tx.h"
#include "udp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SOURCES 4

static struct toud T;
static struct tun tun;
static struct udp udp;
static uint64_t now_ms = 1000000;
static uint64_t in_bytes[SOURCES], out_bytes[SOURCES];
static union sockaddr_union src[SOURCES];

static uint64_t
fake_clock(const struct toud *t)
{
	(void)t;
	return now_ms;
}

static void
sink(struct toud *t, struct udp_msg *msgs, unsigned n)
{
	unsigned i, k;

	(void)t;
	for (i = 0; i < n; i++) {
		msgs[i].err = 0;
		for (k = 0; k < SOURCES; k++) {
			if (!util_sa_equal(&msgs[i].peer, &src[k]))
				continue;
			out_bytes[k] += msgs[i].len;
			if (out_bytes[k] > 3 * in_bytes[k])
				abort();
		}
	}
}

static char dir[] = "/tmp/fuzz_handshake.XXXXXX";

/* The keys are only needed at start: remove them at exit. */
static void
cleanup(void)
{
	static const char *const files[] = { "peer/key.pem", "peer/cert.pem", "key.pem",
	    "cert.pem", "peer", "" };
	char path[sizeof(dir) + 32];
	unsigned i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (remove(path) < 0 && i == sizeof(files) / sizeof(files[0]) - 1)
			rmdir(dir);
	}
}

static void
init(void)
{
	char text[4096], fp[80], peer_fp[80];
	char kdir[256], err[256];
	uint8_t f[KEYS_FP_LEN], pf[KEYS_FP_LEN];
	struct conf *c = NULL;
	struct conf_error cerr;
	int pair[2];
	struct ipaddr a;
	unsigned k;

	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(kdir, sizeof(kdir), "%s/peer", dir);
	if (mkdir(kdir, 0700) < 0 || keys_genkey(kdir, pf, err, sizeof(err)) < 0 ||
	    keys_genkey(dir, f, err, sizeof(err)) < 0)
		abort();
	keys_fp_format(f, fp);
	keys_fp_format(pf, peer_fp);
	snprintf(text, sizeof(text),
	    "[interface]\nname = tou0\naddress = 10.77.0.1/24\n"
	    "private-key = %s/key.pem\ncertificate = %s/cert.pem\n"
	    "[peer b]\nfingerprint = %s\nendpoint = 192.0.2.2:6080\naddress = 10.77.0.2\n",
	    dir, dir, peer_fp);
	if (conf_parse("fuzz.conf", text, strlen(text), &c, &cerr) < 0)
		abort();
	T.conf = c;
	T.clock = fake_clock;
	T.sink = sink;
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, pair) < 0)
		abort();
	tun.fd = pair[0];
	snprintf(tun.name, sizeof(tun.name), "tou0");
	udp.fd4 = udp.fd6 = -1;
	T.tun = &tun;
	T.udp = &udp;
	T.tun_mtu = conf_tun_mtu(c);
	T.local4 = c->iface.address[0].p.addr;
	if (!(T.base = event_base_new()) || daemon_start_peers(&T) < 0 ||
	    daemon_start_paths(&T) < 0 || T.n_peers != 1)
		abort();
	for (k = 0; k < SOURCES; k++) {
		char s[32];

		snprintf(s, sizeof(s), "192.0.2.%u", k + 2);
		if (util_addr_parse(s, &a) < 0)
			abort();
		util_sa_from_addr(&src[k], &a, (uint16_t)(6080 + k));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[64 + 65536];
	struct udp_msg m;
	unsigned k;

	if (!T.base)
		init();
	if (size < 1 || size - 1 > 65536)
		return 0;
	k = data[0] % SOURCES;
	/* The receive path rebuilds headers in front of the datagram. */
	memcpy(buf + 64, data + 1, size - 1);
	memset(&m, 0, sizeof(m));
	m.buf = buf + 64;
	m.len = size - 1;
	m.peer = src[k];
	in_bytes[k] += m.len;
	now_ms += data[0] & 0xf0;
	rx_input(&T, &m, 1);
	event_base_loop(T.base, EVLOOP_NONBLOCK);
	tx_flush_records(&T);
	return 0;
}
