/* gue.c - GUE framing of the toud wire format: outer header with session
 * ID, inner compact / direct-IP / control framing, and the DTLS record
 * header prefilter.  Pure: no I/O, no allocation. */
#include "bytes.h"
#include "gue.h"

/* First word of a GUE header (variant 0):
 *   bits 0-1 variant, bit 2 C, bits 3-7 Hlen, byte 1 Proto/ctype,
 *   bytes 2-3 flags. */
#define GUE_VARIANT(b0)   ((b0) >> 6)
#define GUE_C(b0)         (((b0) >> 5) & 1)
#define GUE_HLEN(b0)      ((b0) & 0x1f)
#define GUE_C_BIT         0x20

#define GUE_OUTER_HLEN    3     /* private flags + 64-bit session ID */
#define GUE_OUTER_PFLAGS  (GUE_PFLAG_SESSION | GUE_PFLAG_DTLS)

#define DTLS_HDR_LEN      13    /* type, version, epoch, sequence, length */
#define DTLS_CT_CCS       20    /* lowest content type: change_cipher_spec */
#define DTLS_CT_ALERT     21
#define DTLS_CT_HANDSHAKE 22
#define DTLS_CT_APPDATA   23    /* highest: application_data */
#define DTLS_V12          0xfefd
#define DTLS_V10          0xfeff
/* RFC 6347 4.1: a record never carries more than 2^14 + 2048 bytes. */
#define DTLS_MAX_FRAGMENT (16384 + 2048)

static const char *const gue_err_names[GUE_ERR__MAX] = {
	[GUE_OK] = "ok",
	[GUE_ERR_TRUNCATED] = "truncated",
	[GUE_ERR_VARIANT] = "bad_variant",
	[GUE_ERR_CONTROL] = "bad_control",
	[GUE_ERR_HLEN] = "bad_hlen",
	[GUE_ERR_PROTO] = "bad_proto",
	[GUE_ERR_FLAGS] = "bad_flags",
	[GUE_ERR_PFLAGS] = "bad_private_flags",
	[GUE_ERR_SESSION] = "zero_session",
	[GUE_ERR_CONTROL_LEN] = "bad_control_len",
};

const char *
gue_err_name(enum gue_err err)
{
	if ((unsigned int)err >= GUE_ERR__MAX)
		return "unknown";
	return gue_err_names[err];
}

void
gue_outer_encode(uint8_t *buf, uint64_t session_id)
{
	buf[0] = GUE_OUTER_HLEN;        /* variant 0, C 0 */
	buf[1] = GUE_PROTO_NONE;
	bytes_put16(buf + 2, GUE_FLAG_PRIV);
	bytes_put32(buf + 4, GUE_OUTER_PFLAGS);
	bytes_put64(buf + 8, session_id);
}

enum gue_err
gue_outer_decode(const uint8_t *buf, size_t len, uint64_t *session_id)
{
	uint64_t sid;

	if (len < GUE_OUTER_LEN)
		return GUE_ERR_TRUNCATED;
	if (GUE_VARIANT(buf[0]) != 0)
		return GUE_ERR_VARIANT;
	if (GUE_C(buf[0]))
		return GUE_ERR_CONTROL;
	if (GUE_HLEN(buf[0]) != GUE_OUTER_HLEN)
		return GUE_ERR_HLEN;
	if (buf[1] != GUE_PROTO_NONE)
		return GUE_ERR_PROTO;
	if (bytes_get16(buf + 2) != GUE_FLAG_PRIV)
		return GUE_ERR_FLAGS;
	/* Exactly S|D: REMCSUM or any unknown private flag is refused. */
	if (bytes_get32(buf + 4) != GUE_OUTER_PFLAGS)
		return GUE_ERR_PFLAGS;
	sid = bytes_get64(buf + 8);
	if (sid == 0)
		return GUE_ERR_SESSION;
	*session_id = sid;
	return GUE_OK;
}

static enum gue_err
gue_control_check(uint8_t ctype, size_t body_len)
{
	switch (ctype) {
	case GUE_CTYPE_KEEPALIVE:
	case GUE_CTYPE_CLOSE:
	case GUE_CTYPE_PQ_CONFIRM:
		return body_len == 0 ? GUE_OK : GUE_ERR_CONTROL_LEN;
	case GUE_CTYPE_CHALLENGE:
	case GUE_CTYPE_RESPONSE:
		return body_len == GUE_CHALLENGE_LEN ? GUE_OK :
		    GUE_ERR_CONTROL_LEN;
	case GUE_CTYPE_PQ_INIT:
		/* the offset and at least one byte; pqmsg.c checks the rest */
		return body_len > 2 ? GUE_OK : GUE_ERR_CONTROL_LEN;
	case GUE_CTYPE_PQ_REPLY:
		return body_len == GUE_PQ_REPLY_LEN ? GUE_OK : GUE_ERR_CONTROL_LEN;
	case GUE_CTYPE_PQ_REFUSE:
		return body_len == GUE_PQ_REFUSE_LEN ? GUE_OK : GUE_ERR_CONTROL_LEN;
	default:
		return GUE_ERR_CONTROL;
	}
}

enum gue_err
gue_inner_decode(const uint8_t *buf, size_t len, struct gue_inner *out)
{
	enum gue_err err;
	uint8_t proto;

	if (len < 1)
		return GUE_ERR_TRUNCATED;

	switch (GUE_VARIANT(buf[0])) {
	case 0:
		break;
	case 1:
		/* Direct IP: the variant bits are the top of the version
		 * nibble, so only 4 (0100) and 6 (0110) are meaningful. */
		if (buf[0] >> 4 != 4 && buf[0] >> 4 != 6)
			return GUE_ERR_VARIANT;
		out->kind = GUE_KIND_IP;
		out->proto = buf[0] >> 4;
		out->payload = buf;
		out->len = len;
		return GUE_OK;
	default:
		return GUE_ERR_VARIANT;
	}

	if (len < GUE_WORD_LEN)
		return GUE_ERR_TRUNCATED;
	if (GUE_HLEN(buf[0]) != 0)
		return GUE_ERR_HLEN;
	if (bytes_get16(buf + 2) != 0)
		return GUE_ERR_FLAGS;
	proto = buf[1];

	if (GUE_C(buf[0])) {
		err = gue_control_check(proto, len - GUE_WORD_LEN);
		if (err != GUE_OK)
			return err;
		out->kind = GUE_KIND_CONTROL;
	} else {
		if (proto == 0)
			return GUE_ERR_PROTO;
		/* A compact packet carries at least a transport header. */
		if (len == GUE_WORD_LEN)
			return GUE_ERR_TRUNCATED;
		out->kind = GUE_KIND_COMPACT;
	}
	out->proto = proto;
	out->payload = buf + GUE_WORD_LEN;
	out->len = len - GUE_WORD_LEN;
	return GUE_OK;
}

void
gue_compact_encode(uint8_t *word, uint8_t proto)
{
	word[0] = 0;
	word[1] = proto;
	word[2] = 0;
	word[3] = 0;
}

void
gue_control_encode(uint8_t *word, uint8_t ctype)
{
	word[0] = GUE_C_BIT;
	word[1] = ctype;
	word[2] = 0;
	word[3] = 0;
}

enum gue_dtls_err
gue_dtls_prefilter(const uint8_t *rec, size_t len, uint8_t *content_type)
{
	uint8_t type;
	uint16_t version, rlen;

	if (len < DTLS_HDR_LEN)
		return GUE_DTLS_TRUNCATED;
	type = rec[0];
	if (type < DTLS_CT_CCS || type > DTLS_CT_APPDATA)
		return GUE_DTLS_TYPE;
	version = bytes_get16(rec + 1);
	/* Clients put 1.0 in the record carrying a ClientHello for
	 * compatibility, and a server that refuses a 1.0 hello answers with
	 * a 1.0 alert (OpenSSL takes alerts of any version, so the client can
	 * say why); everything else must be 1.2. */
	if (version != DTLS_V12 &&
	    !(version == DTLS_V10 && (type == DTLS_CT_HANDSHAKE || type == DTLS_CT_ALERT)))
		return GUE_DTLS_VERSION;
	rlen = bytes_get16(rec + 11);
	/* One record per datagram: the length accounts for every byte. */
	if (rlen > DTLS_MAX_FRAGMENT || rlen != len - DTLS_HDR_LEN)
		return GUE_DTLS_LENGTH;
	if (content_type != NULL)
		*content_type = type;
	return GUE_DTLS_OK;
}
