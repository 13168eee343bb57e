/* log.c - daemon logging.  The level and output style are process-wide by
 * nature (one stderr), so they live here rather than in struct toud. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

static struct {
	/* Set on the main loop (reload), read by any thread that logs. */
	_Atomic int level;
	bool journal;             /* "<N>" prefixes, no time stamps */
	const char *progname;
	uint64_t rl_stamp_ms;     /* token bucket of log_debug_rl */
	unsigned rl_tokens;
	unsigned rl_suppressed;
} log_state = { LOG_LEVEL_INFO, false, "toud", 0, 0, 0 };

#define LOG_RL_BURST 10           /* lines per second on the packet path */

static const char *const level_names[] = {
	[LOG_LEVEL_ERR] = "error",
	[LOG_LEVEL_WARN] = "warning",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

void
log_init(enum log_level level, const char *progname)
{
	log_state.level = level;
	log_state.progname = progname;
	log_state.journal = getenv("JOURNAL_STREAM") != NULL || !isatty(STDERR_FILENO);
}

void
log_set_level(enum log_level level)
{
	log_state.level = level;
}

int
log_level_parse(const char *s, enum log_level *out)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(level_names); i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *
log_level_name(enum log_level level)
{
	return (unsigned)level < ARRAY_SIZE(level_names) ? level_names[level] : "?";
}

static void vlog(enum log_level level, int errnum, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void
vlog(enum log_level level, int errnum, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[1024];

	if ((int)level > log_state.level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_state.journal) {
		if (errnum)
			fprintf(stderr, "<%d>%s: %s\n", prio[level], msg, strerror(errnum));
		else
			fprintf(stderr, "<%d>%s\n", prio[level], msg);
	} else {
		char ts[32];
		struct timespec now;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &now);
		localtime_r(&now.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
		if (errnum)
			fprintf(stderr, "%s.%03ld %s: %s: %s\n", ts, now.tv_nsec / 1000000,
			    log_state.progname, msg, strerror(errnum));
		else
			fprintf(stderr, "%s.%03ld %s: %s\n", ts, now.tv_nsec / 1000000,
			    log_state.progname, msg);
	}
	fflush(stderr);
}

#define LOG_FN(fn, level, errnum)			\
void							\
fn(const char *fmt, ...)				\
{							\
	int saved = errno;				\
	va_list ap;					\
							\
	va_start(ap, fmt);				\
	vlog(level, errnum, fmt, ap);			\
	va_end(ap);					\
	errno = saved;					\
}

LOG_FN(log_err, LOG_LEVEL_ERR, saved)
LOG_FN(log_errx, LOG_LEVEL_ERR, 0)
LOG_FN(log_warn, LOG_LEVEL_WARN, saved)
LOG_FN(log_warnx, LOG_LEVEL_WARN, 0)
LOG_FN(log_info, LOG_LEVEL_INFO, 0)
LOG_FN(log_debug, LOG_LEVEL_DEBUG, 0)

void
log_check(const char *fmt, ...)
{
	va_list ap;

	/* The plain message for a person or a script; under journald
	 * (ExecStartPre=toud -t) with its err priority, so that
	 * journalctl -p err shows why the unit did not start. */
	if (getenv("JOURNAL_STREAM"))
		fprintf(stderr, "<3>");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

void
log_check_warn(const char *fmt, ...)
{
	va_list ap;

	fputs(getenv("JOURNAL_STREAM") ? "<4>" : "warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

void
log_debug_rl(const char *fmt, ...)
{
	uint64_t now;
	va_list ap;

	if (log_state.level < LOG_LEVEL_DEBUG)
		return;
	now = util_now_ms();
	if (now - log_state.rl_stamp_ms >= 1000) {
		if (log_state.rl_suppressed)
			log_debug("(%u packet-path messages suppressed)", log_state.rl_suppressed);
		log_state.rl_stamp_ms = now;
		log_state.rl_tokens = LOG_RL_BURST;
		log_state.rl_suppressed = 0;
	}
	if (log_state.rl_tokens == 0) {
		log_state.rl_suppressed++;
		return;
	}
	log_state.rl_tokens--;
	va_start(ap, fmt);
	vlog(LOG_LEVEL_DEBUG, 0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_LEVEL_ERR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}
