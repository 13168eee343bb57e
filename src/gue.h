/* gue.h - GUE framing of the toud wire format (doc/protocol.md).  Pure: no I/O.
 *
 * Outer (encryption = dtls), 16 bytes in front of every DTLS record:
 *   word 0: variant 0, C 0, Hlen 3, Proto 59, Flags 0x0001 (P)
 *   word 1: private flags S|D = 0x60000000
 *   words 2-3: 64-bit session ID, nonzero
 * Inner (inside the record, or the whole UDP payload with encryption = none):
 *   compact TOU  - variant 0, C 0, Hlen 0, Proto = IP protocol, then the
 *                  transport segment
 *   direct IP    - variant 1: the first nibble is 4 or 6, a whole IP packet
 *   control      - variant 0, C 1, Hlen 0, ctype, then the message body
 */
#ifndef TOUD_GUE_H
#define TOUD_GUE_H

#include <stddef.h>
#include <stdint.h>

#define GUE_PORT 6080
#define GUE_WORD_LEN 4           /* inner GUE word */
#define GUE_OUTER_LEN 16         /* outer base word + private flags + session ID */
#define GUE_PROTO_NONE 59        /* IPPROTO_NONE: nothing to parse in clear */
#define GUE_FLAG_PRIV 0x0001     /* P: private flags field present */
#define GUE_PFLAG_REMCSUM 0x80000000u
#define GUE_PFLAG_SESSION 0x40000000u  /* S: 64-bit session ID follows */
#define GUE_PFLAG_DTLS 0x20000000u     /* D: payload is one DTLS record */

/* Control message types (C = 1, ctype field).  Table in tou.conf(5). */
enum gue_ctype {
	GUE_CTYPE_KEEPALIVE = 1,   /* empty body */
	GUE_CTYPE_CHALLENGE = 2,   /* 8-byte nonce */
	GUE_CTYPE_RESPONSE = 3,    /* the 8-byte nonce echoed */
	GUE_CTYPE_CLOSE = 4,       /* empty body: the sender is going away */
	/* The ML-KEM-768 exchange of a DTLS session (pqmsg.h,
	 * doc/protocol.md 1.5): */
	GUE_CTYPE_PQ_INIT = 5,     /* offset (2), a piece of the encapsulation key */
	GUE_CTYPE_PQ_REPLY = 6,    /* the ciphertext (1088) */
	/* flags (1, pq.h): the sender refuses a session without ML-KEM-768 */
	GUE_CTYPE_PQ_REFUSE = 7,
	/* empty body: the exchange's keys are in use here (its first record
	 * under them, sent until the other side is heard under them too) */
	GUE_CTYPE_PQ_CONFIRM = 8,
};
#define GUE_PQ_REFUSE_LEN 1
#define GUE_CHALLENGE_LEN 8
#define GUE_PQ_REPLY_LEN 1088         /* MLKEM_CT_LEN */

/* Why a datagram was refused.  Callers count drops by these. */
enum gue_err {
	GUE_OK = 0,
	GUE_ERR_TRUNCATED,      /* shorter than the header it announces */
	GUE_ERR_VARIANT,        /* variant 2/3, or variant 1 where not allowed, or not IPv4/IPv6 */
	GUE_ERR_CONTROL,        /* C = 1 where not allowed (outer), or unknown ctype */
	GUE_ERR_HLEN,           /* Hlen not the one this layer requires */
	GUE_ERR_PROTO,          /* Proto not allowed at this layer */
	GUE_ERR_FLAGS,          /* GUE flags other than P (outer) or any flag (inner) */
	GUE_ERR_PFLAGS,         /* private flags other than S|D */
	GUE_ERR_SESSION,        /* session ID 0 */
	GUE_ERR_CONTROL_LEN,    /* control body of the wrong size */
	GUE_ERR__MAX
};
const char *gue_err_name(enum gue_err err);   /* stable snake_case, used as JSON keys */

/* Outer header: write GUE_OUTER_LEN bytes; decode checks every rule of
 * DESIGN 2.1 and returns the session ID.  The DTLS record starts at
 * buf + GUE_OUTER_LEN. */
void gue_outer_encode(uint8_t *buf, uint64_t session_id);
enum gue_err gue_outer_decode(const uint8_t *buf, size_t len, uint64_t *session_id);

enum gue_kind { GUE_KIND_COMPACT, GUE_KIND_IP, GUE_KIND_CONTROL };

struct gue_inner {
	enum gue_kind kind;
	uint8_t proto;          /* compact: IP protocol; control: ctype; IP: 4 or 6 */
	const uint8_t *payload; /* segment / whole IP packet / control body */
	size_t len;
};

/* Inner framing.  A compact payload must be at least 1 byte; a whole IP
 * packet is checked only for its version nibble here (pkt_parse does the
 * rest); a control message must have a known ctype and body size. */
enum gue_err gue_inner_decode(const uint8_t *buf, size_t len, struct gue_inner *out);
void gue_compact_encode(uint8_t *word, uint8_t proto);   /* writes GUE_WORD_LEN bytes */
void gue_control_encode(uint8_t *word, uint8_t ctype);   /* writes GUE_WORD_LEN bytes */

/* DTLS record header prefilter (content type 20..23, version 0xfefd or
 * 0xfeff for a ClientHello, length matching the datagram).  Pure; used by
 * the DTLS layer before OpenSSL sees a byte. */
enum gue_dtls_err {
	GUE_DTLS_OK = 0,
	GUE_DTLS_TRUNCATED,
	GUE_DTLS_TYPE,
	GUE_DTLS_VERSION,
	GUE_DTLS_LENGTH,
};
enum gue_dtls_err gue_dtls_prefilter(const uint8_t *rec, size_t len, uint8_t *content_type);

#endif
