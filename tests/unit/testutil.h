/* testutil.h - what every unit test program shares: running its suite,
 * finding the fixtures, and parsing addresses that must be valid. */
#ifndef TOUD_TESTUTIL_H
#define TOUD_TESTUTIL_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

/* Runs the suite in CK_NORMAL mode; the exit status for main(). */
static inline int
check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* $TOUD_TESTDATA/REL (REL formatted like printf), by default
 * tests/unit/data/REL under the working directory.  Always absolute, so
 * it stays valid when a test changes directory, and messages quote the
 * path exactly as it is opened.  A path that does not fit aborts: the
 * environment is broken, not the code under test. */
static inline const char *
check_data_path(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline const char *
check_data_path(char *buf, size_t len, const char *fmt, ...)
{
	const char *d = getenv("TOUD_TESTDATA");
	char cwd[2048];
	size_t n;
	int r;
	va_list ap;

	if (d == NULL || *d == '\0')
		d = "tests/unit/data";
	if (d[0] == '/')
		r = snprintf(buf, len, "%s/", d);
	else if (getcwd(cwd, sizeof(cwd)) != NULL)
		r = snprintf(buf, len, "%s/%s/", cwd, d);
	else
		r = -1;
	if (r < 0 || (size_t)r >= len)
		abort();
	n = (size_t)r;
	va_start(ap, fmt);
	r = vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= len - n)
		abort();
	return buf;
}

/* An address the test itself spells: a parse failure fails the test. */
static inline struct ipaddr
check_addr(const char *s)
{
	struct ipaddr a;

	ck_assert_int_eq(util_addr_parse(s, &a), 0);
	return a;
}

#endif
