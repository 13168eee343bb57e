/* fuzz_rtnl.c - libFuzzer harness for the rtnetlink monitor's parser: one
 * received datagram of messages, checked against every type's length. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rtnl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
seen(void *arg, const struct rtnl_event *ev)
{
	unsigned *n = arg;

	if (ev->family != AF_INET && ev->family != AF_INET6)
		abort();
	if ((ev->kind == RTNL_EV_ADDR_NEW || ev->kind == RTNL_EV_ADDR_DEL) &&
	    ev->addr.family != ev->family)
		abort();
	(*n)++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned n = 0, bad;
	uint8_t *copy;

	/* An exact-size copy, so that reading past the datagram is caught. */
	if (!(copy = malloc(size ? size : 1)))
		return 0;
	memcpy(copy, data, size);
	bad = rtnl_monitor_parse(copy, size, 9, seen, &n);
	/* Each message is at least a 16-byte header. */
	if (n + bad > size / 16 + 1)
		abort();
	free(copy);
	return 0;
}
