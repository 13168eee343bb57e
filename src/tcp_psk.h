/* tcp_psk.h - the inner protection of the TCP transport's frames for a
 * peer with a preshared key (doc/protocol.md 3a.2).
 *
 * OpenSSL 3.0 cannot combine certificates with an external PSK in TLS
 * 1.3, so the key is mixed in above TLS: once the handshake completed,
 * both sides derive
 *   okm = HKDF-SHA256(salt = psk, IKM = exporter, info = TCP_PSK_INFO)
 * where exporter is TCP_PSK_EXPORTER_LEN bytes of TLS's exporter with
 * label TCP_PSK_LABEL (no context), cut into the client write key, the
 * server write key (32 bytes each), the client write IV and the server
 * write IV (12 each).  Each frame's payload is then sealed with
 * AES-256-GCM under its direction's key, the nonce being the IV XOR the
 * direction's frame number (64 bits, big-endian, in the nonce's last 8
 * bytes, from 0), no additional data, the 16-byte tag after the
 * ciphertext; the frame's length covers the tag.  TCP delivers the frames
 * in order, so a receiver expects each number once, in turn: a frame
 * replayed, dropped or moved fails to open.  Pure: no I/O. */
#ifndef TOUD_TCP_PSK_H
#define TOUD_TCP_PSK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TCP_PSK_LABEL "EXPORTER-toud-tcp-preshared-key"
#define TCP_PSK_EXPORTER_LEN 32
#define TCP_PSK_LEN 32                  /* the preshared key (psk.h's PSK_LEN) */
#define TCP_PSK_INFO "toud 1 tcp preshared-key frame keys"
#define TCP_PSK_KEY_LEN 32
#define TCP_PSK_IV_LEN 12
#define TCP_PSK_TAG_LEN 16

struct tcp_psk_keys {
	uint8_t client_key[TCP_PSK_KEY_LEN], server_key[TCP_PSK_KEY_LEN];
	uint8_t client_iv[TCP_PSK_IV_LEN], server_iv[TCP_PSK_IV_LEN];
};

/* The keys of a connection from its exporter output and the preshared
 * key.  0 or -errno; the caller cleanses k. */
int tcp_psk_derive(const uint8_t exporter[TCP_PSK_EXPORTER_LEN],
    const uint8_t psk[TCP_PSK_LEN], struct tcp_psk_keys *k);

/* One direction: its AEAD context, IV and the number of the next frame. */
struct tcp_psk_dir {
	void *ctx;                      /* EVP_CIPHER_CTX */
	uint8_t iv[TCP_PSK_IV_LEN];
	uint64_t n;
};

/* A connection's two directions; opened: a frame from the other end has
 * opened (until then a failure says the keys differ). */
struct tcp_psk {
	struct tcp_psk_dir seal, open;
	bool opened;
};

/* Set s up from k, as the client (the side that opened the connection)
 * or the server.  0 or -errno; tcp_psk_free() undoes it (also after a
 * failure, and on a zeroed struct). */
int tcp_psk_init(struct tcp_psk *s, const struct tcp_psk_keys *k, bool client);
void tcp_psk_free(struct tcp_psk *s);
/* Seal len bytes of in into out (len + TCP_PSK_TAG_LEN bytes; out may be
 * in): the bytes written, or -errno. */
ssize_t tcp_psk_seal(struct tcp_psk *s, const uint8_t *in, size_t len, uint8_t *out);
/* Open a sealed frame's payload (len bytes) in place: the plaintext's
 * length, or -EBADMSG (too short, or it fails authentication: nothing is
 * counted, the connection is to close) or another -errno. */
ssize_t tcp_psk_open(struct tcp_psk *s, uint8_t *buf, size_t len);

#endif
