/* worker.c - an output thread fed through a ring of batches; the threading
 * model is in worker.h. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/eventfd.h>

#include <event2/event.h>

#include "worker.h"

struct worker {
	void *const *slots;
	unsigned n;
	worker_fn *work, *done;
	void *arg;

	/* Shared: each written by one side only. */
	_Atomic uint64_t submitted;      /* by the main loop */
	_Atomic uint64_t finished;       /* by the worker */
	atomic_bool stop;                /* by the main loop, once */

	uint64_t reaped;                 /* main loop only: done() has run below this */
	int kick_fd;                     /* wakes the worker (blocking reads) */
	int done_fd;                     /* wakes the main loop (non-blocking) */
	struct event *ev;
	pthread_t thread;
	bool running;
};

static void
eventfd_post(int fd)
{
	uint64_t one = 1;

	/* Fails only when the counter would overflow: then it is non-zero
	 * and the reader wakes anyway. */
	while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

static void
eventfd_clear(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	uint64_t next = atomic_load_explicit(&w->finished, memory_order_relaxed);

	for (;;) {
		uint64_t upto = atomic_load_explicit(&w->submitted, memory_order_acquire);

		if (next == upto) {
			/* The stop flag is set after the last submit: seen
			 * set, a second look at submitted is the final one. */
			if (atomic_load_explicit(&w->stop, memory_order_acquire)) {
				if (next == atomic_load_explicit(&w->submitted, memory_order_acquire))
					break;
				continue;
			}
			/* A submit after the load above has posted the
			 * eventfd, so this read returns at once then. */
			eventfd_clear(w->kick_fd);
			continue;
		}
		for (; next != upto; next++) {
			w->work(w->slots[next % w->n], w->arg);
			atomic_store_explicit(&w->finished, next + 1, memory_order_release);
		}
		eventfd_post(w->done_fd);
	}
	return NULL;
}

bool
worker_reap(struct worker *w)
{
	uint64_t upto = atomic_load_explicit(&w->finished, memory_order_acquire);

	while (w->reaped != upto) {
		void *slot = w->slots[w->reaped++ % w->n];

		w->done(slot, w->arg);
	}
	return w->reaped == atomic_load_explicit(&w->submitted, memory_order_relaxed);
}

static void
worker_done_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	eventfd_clear(fd);
	worker_reap(arg);
}

/* Block until the worker hands back a slot (done() runs on it). */
static void
worker_wait(struct worker *w)
{
	uint64_t upto = atomic_load_explicit(&w->submitted, memory_order_relaxed);
	struct pollfd pfd = { .fd = w->done_fd, .events = POLLIN };

	while (!worker_reap(w) && upto - w->reaped == w->n)
		if (poll(&pfd, 1, -1) > 0)
			eventfd_clear(w->done_fd);
}

void
worker_drain(struct worker *w)
{
	struct pollfd pfd = { .fd = w->done_fd, .events = POLLIN };

	while (!worker_reap(w))
		if (poll(&pfd, 1, -1) > 0)
			eventfd_clear(w->done_fd);
}

void *
worker_slot(const struct worker *w)
{
	return w->slots[atomic_load_explicit(&w->submitted, memory_order_relaxed) % w->n];
}

void *
worker_submit(struct worker *w)
{
	uint64_t next = atomic_load_explicit(&w->submitted, memory_order_relaxed) + 1;

	atomic_store_explicit(&w->submitted, next, memory_order_release);
	eventfd_post(w->kick_fd);
	worker_reap(w);
	if (next - w->reaped == w->n)
		worker_wait(w);
	return w->slots[next % w->n];
}

bool
worker_flush(struct worker *w, bool bulk)
{
	void *slot = worker_slot(w);

	if (w->running && (bulk || !worker_reap(w))) {
		worker_submit(w);
		return true;
	}
	w->work(slot, w->arg);
	w->done(slot, w->arg);
	return false;
}

bool
worker_threaded(const struct worker *w)
{
	return w && w->running;
}

struct worker *
worker_ring(void *const *slots, unsigned n, worker_fn *work, worker_fn *done, void *arg)
{
	struct worker *w;

	if (n < 2) {
		errno = EINVAL;
		return NULL;
	}
	if (!(w = calloc(1, sizeof(*w))))
		return NULL;
	w->slots = slots;
	w->n = n;
	w->work = work;
	w->done = done;
	w->arg = arg;
	w->kick_fd = w->done_fd = -1;
	return w;
}

int
worker_start(struct worker *w, struct event_base *base, const char *name)
{
	sigset_t all, old;
	int rc;

	if (w->running)
		return -EALREADY;
	w->kick_fd = eventfd(0, EFD_CLOEXEC);
	w->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->kick_fd < 0 || w->done_fd < 0 ||
	    !(w->ev = event_new(base, w->done_fd, EV_READ | EV_PERSIST, worker_done_cb, w)) ||
	    event_add(w->ev, NULL) < 0) {
		rc = errno ? -errno : -ENOMEM;
		worker_stop(w);
		return rc;
	}
	atomic_store_explicit(&w->stop, false, memory_order_relaxed);
	/* Signals are the main loop's: the thread starts with all blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&w->thread, NULL, worker_run, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		worker_stop(w);
		return -rc;
	}
	w->running = true;
	pthread_setname_np(w->thread, name);
	return 0;
}

struct worker *
worker_new(struct event_base *base, const char *name, void *const *slots, unsigned n,
    worker_fn *work, worker_fn *done, void *arg)
{
	struct worker *w = worker_ring(slots, n, work, done, arg);
	int rc;

	if (w && (rc = worker_start(w, base, name)) < 0) {
		worker_free(w);
		errno = -rc;
		return NULL;
	}
	return w;
}

void
worker_stop(struct worker *w)
{
	if (w->running) {
		atomic_store_explicit(&w->stop, true, memory_order_release);
		eventfd_post(w->kick_fd);
		pthread_join(w->thread, NULL);
		w->running = false;
		worker_reap(w);
	}
	if (w->ev)
		event_free(w->ev);
	if (w->kick_fd >= 0)
		close(w->kick_fd);
	if (w->done_fd >= 0)
		close(w->done_fd);
	w->ev = NULL;
	w->kick_fd = w->done_fd = -1;
}

void
worker_free(struct worker *w)
{
	if (!w)
		return;
	worker_stop(w);
	free(w);
}
