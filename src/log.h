/* log.h - daemon logging: the OpenBSD four-function interface.
 *
 * Under systemd (JOURNAL_STREAM set) or when stderr is not a terminal each
 * message is one line "<N>message" with the syslog priority N and no
 * timestamp; on a terminal it gets a time stamp.  log_debug() is emitted only
 * at debug level; log_debug_rl() additionally goes through a token bucket so
 * the packet path cannot flood the log. */
#ifndef TOUD_LOG_H
#define TOUD_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum log_level { LOG_LEVEL_ERR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_init(enum log_level level, const char *progname);
void log_set_level(enum log_level level);
int log_level_parse(const char *s, enum log_level *out);   /* 0 or -EINVAL */
const char *log_level_name(enum log_level level);

/* A failure the daemon does not survive (start-up): priority err, so that
 * `journalctl -p err` shows it.  log_err adds strerror(errno). */
void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_errx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A configuration error of toud -t: the bare message on stderr, with the
 * err priority prefix when JOURNAL_STREAM is set. */
void log_check(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A warning of toud -t: "warning: " and the message, or the warning
 * priority prefix under journald; never a time stamp nor a prefix a
 * person would see when stderr is a pipe or a file. */
void log_check_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* adds strerror(errno) */
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Rate-limited debug for the packet path (a few lines per second at most). */
void log_debug_rl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
