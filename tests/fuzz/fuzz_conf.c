/* fuzz_conf.c - conf_parse() on arbitrary bytes.  Whatever parses must print
 * to text that parses back to an equal configuration and prints the same,
 * and conf_validate() must agree on both. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "conf_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf_error err, err2;
	struct conf *c = NULL, *c2 = NULL;
	char *t1, *t2;
	char buf[600];
	int v1, v2;

	if (conf_parse("fuzz.conf", (const char *)data, size, &c, &err) < 0) {
		/* every message names the file */
		conf_error_fmt(&err, buf, sizeof(buf));
		if (strncmp(buf, "fuzz.conf:", 10) != 0 || err.msg[0] == '\0')
			abort();
		return 0;
	}
	v1 = conf_validate(c, &err);
	t1 = conf_print(c);
	if (!t1)
		abort();
	if (conf_parse("printed.conf", t1, strlen(t1), &c2, &err2) < 0) {
		fprintf(stderr, "printed form rejected: %s\n%s\n",
		    conf_error_fmt(&err2, buf, sizeof(buf)), t1);
		abort();
	}
	if (!conf_equal(c, c2) || !conf_equal(c2, c)) {
		fprintf(stderr, "printed form differs:\n%s\n", t1);
		abort();
	}
	v2 = conf_validate(c2, &err2);
	if (v1 != v2)
		abort();
	t2 = conf_print(c2);
	if (!t2 || strcmp(t1, t2) != 0)
		abort();
	(void)conf_tun_mtu(c);
	free(t1);
	free(t2);
	conf_free(c);
	conf_free(c2);
	return 0;
}
