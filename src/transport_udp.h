/* transport_udp.h - UDP as a transport: GUE datagrams, in DTLS records or
 * plain (transport.h).  daemon.c registers it first: every peer's
 * preferred path. */
#ifndef TOUD_TRANSPORT_UDP_H
#define TOUD_TRANSPORT_UDP_H

#include "transport.h"

extern const struct transport_ops transport_udp;

#endif
