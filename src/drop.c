/* drop.c - names of the drop counters (JSON keys: never rename), and
 * where a drop is counted. */
#include <assert.h>

#include "ctx.h"
#include "drop.h"
#include "peer.h"

static const char *const drop_names[DROP__MAX] = {
	[DROP_GUE + GUE_ERR_TRUNCATED] = "gue_truncated",
	[DROP_GUE + GUE_ERR_VARIANT] = "gue_bad_variant",
	[DROP_GUE + GUE_ERR_CONTROL] = "gue_bad_control",
	[DROP_GUE + GUE_ERR_HLEN] = "gue_bad_hlen",
	[DROP_GUE + GUE_ERR_PROTO] = "gue_bad_proto",
	[DROP_GUE + GUE_ERR_FLAGS] = "gue_bad_flags",
	[DROP_GUE + GUE_ERR_PFLAGS] = "gue_bad_private_flags",
	[DROP_GUE + GUE_ERR_SESSION] = "gue_zero_session",
	[DROP_GUE + GUE_ERR_CONTROL_LEN] = "gue_bad_control_len",
	[DROP_PKT + PKT_ERR_TRUNCATED] = "inner_truncated",
	[DROP_PKT + PKT_ERR_VERSION] = "inner_bad_version",
	[DROP_PKT + PKT_ERR_HLEN] = "inner_bad_header_length",
	[DROP_PKT + PKT_ERR_LENGTH] = "inner_bad_length",
	[DROP_PKT + PKT_ERR_L4] = "inner_bad_transport",
	[DROP_PKT + PKT_ERR_PROTO] = "inner_bad_protocol",
	[DROP_NO_PEER] = "no_peer",
	[DROP_NOT_UNICAST] = "not_unicast",
	[DROP_NO_ENDPOINT] = "no_endpoint",
	[DROP_NO_TUNNEL_ADDR] = "no_tunnel_address",
	[DROP_UNKNOWN_ENDPOINT] = "unknown_endpoint",
	[DROP_SOURCE] = "source_not_allowed",
	[DROP_TOO_BIG] = "too_big",
	[DROP_OVERSIZE] = "oversize_datagram",
	[DROP_ECN] = "ecn",
	[DROP_TUN_WRITE] = "tun_write",
	[DROP_SEND] = "send",
	[DROP_FAMILY] = "no_socket_for_family",
	[DROP_UNKNOWN_SESSION] = "unknown_session",
	[DROP_DTLS_HEADER] = "bad_dtls_header",
	[DROP_HANDSHAKE] = "handshake_failed",
	[DROP_HS_RATE] = "handshake_rate_limited",
	[DROP_HS_COOKIE] = "cookie_requested",
	[DROP_BAD_RECORD] = "bad_record",
	[DROP_REPLAY] = "replay",
	[DROP_QUEUE] = "queue_full",
	[DROP_SEAL] = "seal",
	[DROP_ICMP_QUOTE] = "icmp_quote_not_allowed",
	[DROP_ENCAP_SOURCE] = "encap_source_not_allowed",
	[DROP_TOO_BIG_LIMIT] = "too_big_reply_limited",
	[DROP_HS_EVICTED] = "half_open_evicted",
	[DROP_HS_AMPLIFICATION] = "amplification_limited",
	[DROP_EARLY_RECORD] = "early_record",
	[DROP_NO_SESSION_PEER] = "session_without_peer",
	[DROP_TUN_OFFLOAD] = "tun_offload",
	[DROP_REPLAY_OLD] = "replay_too_old",
	[DROP_TCP_SENDQ] = "tcp_sendq_dropped",
	[DROP_TCP_SENDQ_AQM] = "tcp_sendq_aqm",
};
static_assert(GUE_ERR__MAX == 10 && PKT_ERR__MAX == 7,
    "a new gue/pkt error needs a drop counter name here");
static_assert(DROP_TCP_SENDQ_AQM + 1 == DROP__MAX,
    "a new drop reason needs a name here and in touctl(8)");

const char *
drop_name(enum drop_reason r)
{
	return (unsigned)r < DROP__MAX && drop_names[r] ? drop_names[r] : "unknown";
}

bool
drop_is_loss(enum drop_reason r)
{
	return r != DROP_HS_COOKIE && r != DROP_NOT_UNICAST;
}

uint64_t
drop_losses(const uint64_t *drops)
{
	uint64_t n = 0;
	unsigned r;

	for (r = 0; r < DROP__MAX; r++)
		if (drop_is_loss((enum drop_reason)r))
			n += drops[r];
	return n;
}

void
drop_count(struct toud *t, struct peer *p, enum drop_reason r, unsigned n)
{
	if (p)
		p->drops[r] += n;
	else
		t->drops[r] += n;
}
