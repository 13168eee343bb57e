/* reload.h - re-read the configuration file and apply it in place. */
#ifndef TOUD_RELOAD_H
#define TOUD_RELOAD_H

#include <stddef.h>

struct toud;

/* SIGHUP, `touctl reload`: 0, or -errno; err gets a summary or the
 * reason. */
int toud_reload(struct toud *t, char *err, size_t errlen);

#endif
