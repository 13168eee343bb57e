/* resolve.c - asynchronous resolution of endpoint names. */
#include <errno.h>
#include <net/if.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>
#include <event2/util.h>

#include "conf.h"
#include "ctx.h"
#include "log.h"
#include "peer.h"
#include "peer_endpoint.h"
#include "resolve.h"

int
resolve_init(struct toud *t)
{
	t->dns = evdns_base_new(t->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
	if (!t->dns) {
		/* No usable resolv.conf: names from /etc/hosts still work. */
		t->dns = evdns_base_new(t->base, 0);
		if (!t->dns)
			return -ENOMEM;
		evdns_base_load_hosts(t->dns, NULL);
	}
	return 0;
}

void
resolve_free(struct toud *t)
{
	if (t->dns)
		evdns_base_free(t->dns, 0);
	t->dns = NULL;
}

static void
resolved(int result, struct evutil_addrinfo *res, void *arg)
{
	struct peer *p = arg;
	union sockaddr_union ep;
	char buf[UTIL_ADDRSTRLEN];

	if (result == EVUTIL_EAI_CANCEL)
		return;                /* p may be gone: touch nothing */
	p->dns_req = NULL;
	if (result != 0 || !res) {
		log_warnx("peer \"%s\": cannot resolve endpoint \"%s\": %s; waiting to be contacted",
		    p->name, p->cf->endpoint_host, evutil_gai_strerror(result));
		if (res)
			evutil_freeaddrinfo(res);
		return;
	}
	if (!p->cur) {
		/* A peer with a session keeps the address it authenticated from. */
		memset(&ep, 0, sizeof(ep));
		memcpy(&ep, res->ai_addr, res->ai_addrlen);
		if (ep.sa.sa_family == AF_INET)
			ep.in.sin_port = htons(p->cf->endpoint_port);
		else
			ep.in6.sin6_port = htons(p->cf->endpoint_port);
		peer_endpoint_set(p, &ep);
		log_info("peer \"%s\": endpoint \"%s\" is %s", p->name, p->cf->endpoint_host,
		    util_sa_fmt(&p->endpoint, buf, sizeof(buf)));
	}
	evutil_freeaddrinfo(res);
}

/* fe80::2%eth0: the link's index now (it may come and go); false when the
 * host has no such interface, said once until it has. */
static bool
resolve_scoped(struct peer *p, const char *host, struct ipaddr *a, uint32_t *index)
{
	char scope[IFNAMSIZ], *end;
	unsigned long n;

	if (util_addr_parse_scoped(host, a, scope, sizeof(scope)) < 0)
		return false;
	n = strtoul(scope, &end, 10);
	if (*end || scope[0] < '0' || scope[0] > '9')
		n = if_nametoindex(scope);
	if (n == 0 || n > UINT32_MAX) {
		if (!p->scope_missing)
			log_warnx("peer \"%s\": endpoint %s: this host has no interface \"%s\"; "
			    "waiting to be contacted", p->name, host, scope);
		p->scope_missing = true;
		return false;
	}
	p->scope_missing = false;
	*index = (uint32_t)n;
	return true;
}

void
resolve_peer(struct peer *p)
{
	const struct conf_peer *cf = p->cf;
	struct evutil_addrinfo hints = { .ai_socktype = SOCK_DGRAM, .ai_flags = EVUTIL_AI_ADDRCONFIG };
	union sockaddr_union ep;
	struct ipaddr a;
	uint32_t index = 0;

	if (!cf->endpoint_host || p->dns_req)
		return;
	if (util_addr_parse(cf->endpoint_host, &a) == 0 ||
	    (strchr(cf->endpoint_host, '%') && resolve_scoped(p, cf->endpoint_host, &a, &index))) {
		if (!p->cur) {
			util_sa_from_addr(&ep, &a, cf->endpoint_port);
			if (a.family == AF_INET6)
				ep.in6.sin6_scope_id = index;
			peer_endpoint_set(p, &ep);
		}
		return;
	}
	if (strchr(cf->endpoint_host, '%'))
		return;                 /* no such link (yet): tried again at the next retry */
	/* NULL when evdns answered at once (a hosts entry, say). */
	p->dns_req = evdns_getaddrinfo(p->toud->dns, cf->endpoint_host, NULL, &hints, resolved, p);
}

void
resolve_cancel(struct peer *p)
{
	if (p->dns_req)
		evdns_getaddrinfo_cancel(p->dns_req);
	p->dns_req = NULL;
}
