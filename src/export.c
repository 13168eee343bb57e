/* export.c - this node as a [peer] section for the other side's tou.conf
 * (touctl export), from the configuration in force and the loaded key.
 *
 * What this node cannot know is said in comments: the address the other
 * side reaches it at, when it listens on every address. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "export.h"
#include "keys.h"
#include "util.h"

static void export_err(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
export_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* This host's name up to the first dot. */
static int
export_host_name(char *buf, size_t len, char *err, size_t errlen)
{
	char *dot;

	if (gethostname(buf, len) < 0) {
		export_err(err, errlen, "cannot read this host's name (%s): give one with --name",
		    strerror(errno));
		return -1;
	}
	buf[len - 1] = '\0';
	if ((dot = strchr(buf, '.')) && dot != buf)
		*dot = '\0';
	return 0;
}

/* The listen address, when `listen` names one (not a wildcard). */
static bool
export_listen_addr(const struct conf_iface *ifc, struct ipaddr *a)
{
	static const uint8_t zero[16];

	if (!ifc->has_listen_addr)
		return false;
	*a = ifc->listen_addr;
	return memcmp(a->b, zero, util_addr_len(a->family)) != 0;
}

/* The endpoint line's value: as given, or with the listen port added to
 * a bare host or address ("[ADDR]" or an IPv6 address get brackets). */
static void
export_endpoint(const char *given, uint16_t port, char *out, size_t len)
{
	const char *colon = strchr(given, ':');
	size_t n = strlen(given);

	if (given[0] == '[' && given[n - 1] == ']')
		snprintf(out, len, "%s:%u", given, port);
	else if (given[0] == '[' || (colon && !strchr(colon + 1, ':')))
		snprintf(out, len, "%s", given);          /* [ADDR]:PORT or HOST:PORT */
	else if (colon)
		snprintf(out, len, "[%s]:%u", given, port);       /* a bare IPv6 address */
	else
		snprintf(out, len, "%s:%u", given, port);
}

/* The section must read back as the other side's toud will read it. */
static int
export_check(const struct conf_iface *ifc, const char *section, char *err, size_t errlen)
{
	char buf[UTIL_ADDRSTRLEN + 8], *text = NULL;
	struct conf *c = NULL;
	struct conf_error ce;
	int rc = 0;

	if (asprintf(&text, "[interface]\naddress = %s\n%s",
	    util_prefix_fmt(&ifc->address[0].p, buf, sizeof(buf)), section) < 0) {
		export_err(err, errlen, "out of memory");
		return -1;
	}
	if (conf_parse("export", text, strlen(text), &c, &ce) < 0) {
		/* Line 2 of the section is the first key; the message names
		 * the key. */
		export_err(err, errlen, "%s", ce.msg);
		rc = -1;
	}
	conf_free(c);
	free(text);
	return rc;
}

char *
export_render(const struct conf *c, const uint8_t *fpbin, const char *name, const char *endpoint,
    char *err, size_t errlen)
{
	const struct conf_iface *ifc = &c->iface;
	char host[256], ep[320], fp[7 + 2 * KEYS_FP_LEN + 1], abuf[UTIL_ADDRSTRLEN];
	union sockaddr_union sa;
	struct ipaddr la;
	char *out = NULL;
	size_t olen = 0, i;
	FILE *f;

	if (!name) {
		if (export_host_name(host, sizeof(host), err, errlen) < 0)
			return NULL;
		if (!conf_name_valid(host, CONF_NAME_MAX)) {
			export_err(err, errlen, "this host's name '%.64s' cannot name a peer "
			    "(1 to %d of A-Z a-z 0-9 . _ -): give one with --name", host,
			    CONF_NAME_MAX);
			return NULL;
		}
		name = host;
	} else if (!conf_name_valid(name, CONF_NAME_MAX)) {
		export_err(err, errlen, "--name: not a peer name (1 to %d of A-Z a-z 0-9 . _ -)",
		    CONF_NAME_MAX);
		return NULL;
	}
	if (endpoint && (!*endpoint || strlen(endpoint) > 255)) {
		export_err(err, errlen, "--endpoint: empty or too long");
		return NULL;
	}
	if (ifc->encryption == CONF_ENC_DTLS && !fpbin) {
		export_err(err, errlen, "no key loaded");
		return NULL;
	}

	if (!(f = open_memstream(&out, &olen))) {
		export_err(err, errlen, "out of memory");
		return NULL;
	}
	fprintf(f, "# This node, as a peer in the other side's tou.conf (touctl export).\n");
	fprintf(f, "[peer %s]\n", name);
	if (ifc->encryption == CONF_ENC_DTLS) {
		keys_fp_format(fpbin, fp);
		fprintf(f, "fingerprint = %s\n", fp);
	}
	if (endpoint) {
		export_endpoint(endpoint, ifc->listen_port, ep, sizeof(ep));
		fprintf(f, "endpoint = %s\n", ep);
	} else if (export_listen_addr(ifc, &la)) {
		util_sa_from_addr(&sa, &la, ifc->listen_port);
		fprintf(f, "endpoint = %s\n", util_sa_fmt(&sa, ep, sizeof(ep)));
	} else {
		fprintf(f, "# endpoint = HOST:%u    (not known here: touctl export --endpoint HOST;\n"
		    "#     without an endpoint the other side waits for this node to make contact%s)\n",
		    ifc->listen_port, ifc->encryption == CONF_ENC_NONE ?
		    ", but encryption = none needs one" : "");
	}
	fprintf(f, "address = ");
	for (i = 0; i < ifc->n_address; i++)
		fprintf(f, "%s%s", i ? ", " : "", util_addr_fmt(&ifc->address[i].p.addr, abuf,
		    sizeof(abuf)));
	fprintf(f, "\n");
	if (fclose(f) != 0 || !out) {
		free(out);
		export_err(err, errlen, "out of memory");
		return NULL;
	}
	if (export_check(ifc, out, err, errlen) < 0) {
		free(out);
		return NULL;
	}
	return out;
}
