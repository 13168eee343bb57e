/* conf_instance.c - the configurations that run beside an instance
 * (toud -i NAME): what two of them must not share. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conf.h"
#include "util.h"

#define CONF_INSTANCE_SUFFIX ".conf"

static const char *
conf_instance_control(const struct conf *c)
{
	return c->iface.control ? c->iface.control : CONF_DEFAULT_CONTROL;
}

/* Both bind the port on some common address: the same port and, unless one
 * listens on every address, the same address. */
static bool
conf_instance_same_listen(const struct conf_iface *a, const struct conf_iface *b)
{
	if (a->listen_port != b->listen_port)
		return false;
	return !a->has_listen_addr || !b->has_listen_addr ||
	    util_addr_equal(&a->listen_addr, &b->listen_addr);
}

static bool conf_instance_same_file(const char *a, const char *b);

/* Both name the same key file (by path, or the same file by two paths). */
static bool
conf_instance_same_key(const char *a, const char *b)
{
	return a && b && (strcmp(a, b) == 0 || conf_instance_same_file(a, b));
}

/* What c, from err->file, shares with o (instance oname, from ofile). */
static int
conf_instance_compare(const struct conf *c, const struct conf *o, const char *ofile,
    const char *oname, struct conf_error *err)
{
	const char *what = NULL;
	int line = 0;

	if (strcmp(c->iface.name, o->iface.name) == 0) {
		what = "TUN device";
		line = c->iface.name_line;
	} else if (conf_instance_same_listen(&c->iface, &o->iface)) {
		what = "listen port";
		line = c->iface.listen_line;
	} else if (strcmp(conf_instance_control(c), conf_instance_control(o)) == 0) {
		what = "control socket";
		line = c->iface.control_line;
	} else if (conf_instance_same_key(c->iface.private_key, o->iface.private_key)) {
		what = "key pair";
		line = c->iface.private_key_line;
	} else {
		return 0;
	}
	err->line = line ? line : c->iface.line;
	if (strcmp(what, "key pair") == 0)
		/* One identity in two tunnels: a server that has both sees one
		 * peer at two addresses, and each takes the other's session. */
		snprintf(err->msg, sizeof(err->msg), "private-key %s is also that of %s%s%s%s: "
		    "two tunnels with one key pair are one peer to a server, which breaks "
		    "both; make this one its own with touctl genkey", c->iface.private_key,
		    ofile, oname ? " (instance " : "", oname ? oname : "", oname ? ")" : "");
	else if (strcmp(what, "listen port") == 0)
		snprintf(err->msg, sizeof(err->msg), "listen port %u is also that of %s%s%s%s: "
		    "give each instance its own listen port", c->iface.listen_port, ofile,
		    oname ? " (instance " : "", oname ? oname : "", oname ? ")" : "");
	else
		snprintf(err->msg, sizeof(err->msg), "%s %s is also that of %s%s%s%s: "
		    "give each instance its own (or leave name and control unset)", what,
		    strcmp(what, "TUN device") == 0 ? c->iface.name : conf_instance_control(c),
		    ofile, oname ? " (instance " : "", oname ? oname : "", oname ? ")" : "");
	return -EEXIST;
}

/* Load path as instance oname (NULL: as it is) and compare; a file that
 * does not load is not running, or fails on its own, and one without a
 * peer (the minimal file installed as tou.conf) carries no tunnel. */
static int
conf_instance_against(const struct conf *c, const char *path, const char *oname,
    struct conf_error *err)
{
	char sock[108];
	struct conf *o = NULL;
	int r = 0;

	if (conf_load(path, false, &o, NULL, NULL, NULL) < 0)
		return 0;
	if (o->n_peers == 0)
		goto out;
	if (oname) {
		conf_instance_paths(oname, NULL, 0, sock, sizeof(sock));
		if (conf_instance_apply(o, oname, sock, NULL) < 0)
			goto out;
	}
	r = conf_instance_compare(c, o, path, oname, err);
out:
	conf_free(o);
	return r;
}

static bool
conf_instance_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	    sa.st_ino == sb.st_ino;
}

int
conf_instance_clash(const struct conf *c, const char *file, struct conf_error *err)
{
	char dir[PATH_MAX], path[PATH_MAX], oname[CONF_NAME_MAX + 1];
	const char *slash = strrchr(file, '/');
	struct dirent *de;
	size_t n, sl = strlen(CONF_INSTANCE_SUFFIX);
	DIR *d;
	int r = 0;

	util_strlcpy(err->file, file, sizeof(err->file));
	if (!slash)
		util_strlcpy(dir, ".", sizeof(dir));
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == file ? 1 : (int)(slash - file), file);
	if (strcmp(dir, CONF_INSTANCE_DIR) == 0 &&
	    !conf_instance_same_file(file, CONF_DEFAULT_FILE) &&
	    (r = conf_instance_against(c, CONF_DEFAULT_FILE, NULL, err)) < 0)
		return r;
	if (!(d = opendir(dir)))
		return 0;
	while (r == 0 && (de = readdir(d))) {
		n = strlen(de->d_name);
		if (n <= sl || strcmp(de->d_name + n - sl, CONF_INSTANCE_SUFFIX) != 0 ||
		    n - sl > CONF_NAME_MAX)
			continue;
		snprintf(oname, sizeof(oname), "%.*s", (int)(n - sl), de->d_name);
		if (!conf_instance_valid(oname))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path) ||
		    conf_instance_same_file(file, path))
			continue;
		r = conf_instance_against(c, path, oname, err);
	}
	closedir(d);
	return r;
}
