/* sessid.c - the derived session IDs (sessid.h).  Pure. */
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "bytes.h"
#include "sessid.h"

uint64_t
sessid_derive(const uint8_t seed[SESSID_SEED_LEN], uint32_t index)
{
	uint8_t msg[4], mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;

	bytes_put32(msg, index);
	if (!HMAC(EVP_sha256(), seed, SESSID_SEED_LEN, msg, sizeof(msg), mac, &mac_len) ||
	    mac_len < 8)
		return 0;
	return (uint64_t)bytes_get32(mac) << 32 | bytes_get32(mac + 4);
}
