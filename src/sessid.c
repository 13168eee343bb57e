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

uint64_t
sessid_route(uint64_t id, uint8_t server_id)
{
	if (!server_id)
		return id;
	id &= ~(SESSID_UNROUTED | UINT64_C(0xff) << SESSID_SERVER_SHIFT);
	return id | (uint64_t)server_id << SESSID_SERVER_SHIFT;
}

uint64_t
sessid_first(uint64_t random, uint8_t server_id)
{
	return server_id ? sessid_route(random, server_id) : random | SESSID_UNROUTED;
}

uint8_t
sessid_server(uint64_t id)
{
	return id & SESSID_UNROUTED ? 0 : (uint8_t)(id >> SESSID_SERVER_SHIFT);
}
