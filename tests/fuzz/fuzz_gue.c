/* fuzz_gue.c - libFuzzer harness for the GUE codec and the DTLS record
 * prefilter: everything a UDP datagram from the network meets first. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uintptr_t sink;

static void
check(int cond)
{
	if (!cond)
		abort();
}

/* [p, p + len) lies inside [base, base + size). */
static int
within(const uint8_t *p, size_t len, const uint8_t *base, size_t size)
{
	return p >= base && (size_t)(p - base) <= size &&
	    len <= size - (size_t)(p - base);
}

static void
fuzz_outer(const uint8_t *data, size_t size)
{
	uint8_t hdr[GUE_OUTER_LEN];
	uint64_t sid = 0;
	enum gue_err err;

	err = gue_outer_decode(data, size, &sid);
	check(gue_err_name(err) != NULL);
	sink += (uintptr_t)err + (uintptr_t)sid;
	if (size < GUE_OUTER_LEN)
		check(err == GUE_ERR_TRUNCATED);
	if (err != GUE_OK)
		return;

	/* Exactly one header is valid per session ID: re-encoding must give
	 * back the bytes that were accepted. */
	check(sid != 0);
	gue_outer_encode(hdr, sid);
	check(memcmp(hdr, data, GUE_OUTER_LEN) == 0);
}

/* The DTLS record header where it sits after the outer header; run it
 * whatever the outer verdict, so it gets fuzzed without the fuzzer first
 * having to find a valid outer header. */
static void
fuzz_dtls(const uint8_t *data, size_t size)
{
	const uint8_t *rec;
	enum gue_dtls_err derr;
	size_t rlen;
	uint8_t ct = 0;

	if (size < GUE_OUTER_LEN)
		return;
	rec = data + GUE_OUTER_LEN;
	rlen = size - GUE_OUTER_LEN;
	derr = gue_dtls_prefilter(rec, rlen, &ct);
	sink += (uintptr_t)derr + ct;
	check((derr == GUE_DTLS_TRUNCATED) == (rlen < 13));
	if (derr == GUE_DTLS_OK) {
		check(ct >= 20 && ct <= 23);
		check(ct == rec[0]);
		check(((size_t)rec[11] << 8 | rec[12]) == rlen - 13);
		check(rlen - 13 <= 16384 + 2048);
		check(rec[1] == 0xfe && (rec[2] == 0xfd ||
		    (rec[2] == 0xff && (ct == 22 || ct == 21))));
	}
}

/* The body a control message of ctype may have (the table of tou.conf(5)). */
static int
control_len_ok(uint8_t ctype, size_t len)
{
	switch (ctype) {
	case GUE_CTYPE_KEEPALIVE:
	case GUE_CTYPE_CLOSE:
	case GUE_CTYPE_PQ_CONFIRM:
		return len == 0;
	case GUE_CTYPE_CHALLENGE:
	case GUE_CTYPE_RESPONSE:
		return len == GUE_CHALLENGE_LEN;
	case GUE_CTYPE_PQ_INIT:
		return len > 2;
	case GUE_CTYPE_PQ_REPLY:
		return len == GUE_PQ_REPLY_LEN;
	case GUE_CTYPE_PQ_REFUSE:
		return len == GUE_PQ_REFUSE_LEN;
	default:
		return 0;
	}
}

static void
fuzz_inner(const uint8_t *data, size_t size)
{
	struct gue_inner in;
	uint8_t word[GUE_WORD_LEN];
	enum gue_err err;

	memset(&in, 0, sizeof(in));
	err = gue_inner_decode(data, size, &in);
	check(gue_err_name(err) != NULL);
	sink += (uintptr_t)err;
	if (err != GUE_OK)
		return;

	check(within(in.payload, in.len, data, size));
	sink += (uintptr_t)in.kind + in.proto + in.len;
	if (in.len > 0)
		sink += in.payload[0] + in.payload[in.len - 1];

	switch (in.kind) {
	case GUE_KIND_IP:
		check(in.proto == 4 || in.proto == 6);
		check(in.payload == data && in.len == size);
		check(data[0] >> 4 == in.proto);
		break;
	case GUE_KIND_COMPACT:
		check(in.proto != 0 && in.len > 0);
		check(in.payload == data + GUE_WORD_LEN);
		check(in.len == size - GUE_WORD_LEN);
		gue_compact_encode(word, in.proto);
		check(memcmp(word, data, GUE_WORD_LEN) == 0);
		break;
	case GUE_KIND_CONTROL:
		check(in.payload == data + GUE_WORD_LEN);
		check(in.len == size - GUE_WORD_LEN);
		check(control_len_ok(in.proto, in.len));
		gue_control_encode(word, in.proto);
		check(memcmp(word, data, GUE_WORD_LEN) == 0);
		break;
	default:
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_outer(data, size);
	fuzz_dtls(data, size);
	fuzz_inner(data, size);
	/* With encryption = none the inner frame follows the UDP header;
	 * also try the bytes after an outer header as one. */
	if (size > GUE_OUTER_LEN)
		fuzz_inner(data + GUE_OUTER_LEN, size - GUE_OUTER_LEN);
	return 0;
}
