/* pq.c - names of key exchanges, and the post-quantum refusal (pq.h).
 * Pure: no I/O. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pq.h"

const char *
pq_group_name(const char *group, char *buf, size_t len)
{
	static const struct { const char *openssl, *name; } names[] = {
		{ "secp256r1", "ecdhe-p256" }, { "prime256v1", "ecdhe-p256" },
		{ "P-256", "ecdhe-p256" }, { "secp384r1", "ecdhe-p384" },
		{ "P-384", "ecdhe-p384" }, { "secp521r1", "ecdhe-p521" },
		{ "P-521", "ecdhe-p521" },
	};
	size_t i;

	if (!len)
		return buf;
	buf[0] = '\0';
	if (!group)
		return buf;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(group, names[i].openssl) == 0) {
			snprintf(buf, len, "%s", names[i].name);
			return buf;
		}
	for (i = 0; group[i] && i + 1 < len; i++)
		buf[i] = (char)(group[i] >= 'A' && group[i] <= 'Z' ? group[i] - 'A' + 'a' : group[i]);
	buf[i] = '\0';
	return buf;
}

const char *
pq_tls_group_name(unsigned id)
{
	switch (id) {
	case 0x11eb:
		return "SecP256r1MLKEM768";
	case 0x11ec:
		return "X25519MLKEM768";
	case 0x11ed:
		return "SecP384r1MLKEM1024";
	}
	return NULL;
}

bool
pq_has_mlkem(const char *kx)
{
	return kx && (strstr(kx, "mlkem") || strstr(kx, "ml-kem"));
}

void
pq_refusal_encode(uint8_t body[PQ_REFUSAL_LEN], bool has_mlkem, bool offered)
{
	body[0] = (uint8_t)((has_mlkem ? PQ_HAS_MLKEM : 0) | (offered ? PQ_OFFERED : 0));
}

int
pq_refusal_decode(const uint8_t *body, size_t len, bool *peer_has_mlkem)
{
	if (len != PQ_REFUSAL_LEN)
		return -EINVAL;
	*peer_has_mlkem = body[0] & PQ_HAS_MLKEM;
	return 0;
}

void
pq_why_refused(char *buf, size_t len, const char *kx, bool has_mlkem, const char *version)
{
	if (!has_mlkem)
		snprintf(buf, len, "post-quantum = required, but this node's OpenSSL %s has no "
		    "ML-KEM-768", version);
	else
		snprintf(buf, len, "post-quantum = required, but the key exchange (%s) has no "
		    "ML-KEM-768: the peer's OpenSSL has none, or its post-quantum is off",
		    kx && *kx ? kx : "unknown");
}

void
pq_why_peer_refused(char *buf, size_t len, bool peer_has_mlkem, bool has_mlkem,
    const char *version, enum conf_pq pq)
{
	if (!peer_has_mlkem)
		snprintf(buf, len, "peer requires post-quantum key exchange (ML-KEM-768), but "
		    "its own OpenSSL has none");
	else if (!has_mlkem)
		snprintf(buf, len, "peer requires post-quantum key exchange (ML-KEM-768); this "
		    "node's OpenSSL %s has none", version);
	else
		snprintf(buf, len, "peer requires post-quantum key exchange (ML-KEM-768); %s",
		    pq == CONF_PQ_OFF ? "post-quantum = off here" : "this node did not offer it");
}
