/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Many descriptors and deadlines behind one main-loop source: an epoll set
 * and a sorted sequence of timers. See event-hub.h.
 */
#include "event-hub.h"

#include <errno.h>
#include <gio/gio.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Events taken from the epoll set per wakeup; more stay ready for the next
 * (epoll is level-triggered, the epoll set stays readable). */
#define HUB_EVENTS_PER_WAKEUP 64

/**
 * struct vr_event_hub - the hub of one main context; also its GSource.
 * @source:	the main-loop source (first: the hub is a GSource).
 * @ctx:	the context it is attached to (a reference); the registry's key.
 * @users:	references taken by vr_event_hub_ref_for_context(). Under the
 *		registry's lock.
 * @epfd:	the epoll set of the watches.
 * @timers:	struct vr_hub_timer *, by due time, then by @seq.
 * @next_seq:	the next timer's @seq.
 * @dispatching: a dispatch runs: removed watches wait in @removed.
 * @removed:	watches removed during the dispatch that runs, freed at its
 *		end (events collected in this wakeup may still name them).
 */
struct vr_event_hub {
	GSource source;
	GMainContext *ctx;
	guint users;
	int epfd;
	GSequence *timers;
	guint64 next_seq;
	gboolean dispatching;
	GPtrArray *removed;
};

/**
 * struct vr_hub_watch - one watched descriptor.
 * @hub:	its hub.
 * @fd:		the descriptor.
 * @cond:	what it waits for.
 * @fn, @data:	the callback.
 * @removed:	vr_hub_watch_remove() was called during a dispatch.
 */
struct vr_hub_watch {
	struct vr_event_hub *hub;
	int fd;
	GIOCondition cond;
	vr_hub_watch_fn fn;
	gpointer data;
	gboolean removed;
};

/**
 * struct vr_hub_timer - one pending timer.
 * @hub:	its hub.
 * @due_us:	when it fires (monotonic).
 * @seq:	the order it was added in.
 * @iter:	its place in the hub's @timers; NULL once it is firing.
 * @fn, @data:	the callback.
 */
struct vr_hub_timer {
	struct vr_event_hub *hub;
	gint64 due_us;
	guint64 seq;
	GSequenceIter *iter;
	vr_hub_timer_fn fn;
	gpointer data;
};

/* The hubs: GMainContext * -> struct vr_event_hub *. */
G_LOCK_DEFINE_STATIC(hubs);
static GHashTable *hubs;

static uint32_t epoll_events_of(GIOCondition cond)
{
	return (cond & G_IO_IN ? EPOLLIN : 0) | (cond & G_IO_OUT ? EPOLLOUT : 0);
}

static GIOCondition condition_of(uint32_t events)
{
	return (events & EPOLLIN ? G_IO_IN : 0) | (events & EPOLLOUT ? G_IO_OUT : 0) |
	       (events & EPOLLPRI ? G_IO_PRI : 0) | (events & EPOLLHUP ? G_IO_HUP : 0) |
	       (events & EPOLLERR ? G_IO_ERR : 0);
}

static gint timer_compare(gconstpointer a, gconstpointer b, gpointer unused)
{
	const struct vr_hub_timer *x = a, *y = b;

	(void)unused;
	if (x->due_us != y->due_us)
		return x->due_us < y->due_us ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The main loop wakes the hub at its first timer's time. */
static void hub_update_ready_time(struct vr_event_hub *hub)
{
	GSequenceIter *first = g_sequence_get_begin_iter(hub->timers);
	gint64 ready_us = -1;

	if (!g_sequence_iter_is_end(first)) {
		const struct vr_hub_timer *t = g_sequence_get(first);
		ready_us = MAX(t->due_us, 0);
	}
	g_source_set_ready_time(&hub->source, ready_us); /* a no-op when unchanged */
}

/* Fire the timers due now that were added before this call: one that a
 * callback adds for a time already past waits for the next wakeup, so that
 * a timer re-armed at once cannot hold the loop. */
static void hub_fire_timers(struct vr_event_hub *hub)
{
	gint64 now_us = g_get_monotonic_time();
	guint64 limit_seq = hub->next_seq;

	while (!g_source_is_destroyed(&hub->source)) {
		GSequenceIter *first = g_sequence_get_begin_iter(hub->timers);
		struct vr_hub_timer *t;

		if (g_sequence_iter_is_end(first))
			break;
		t = g_sequence_get(first);
		if (t->due_us > now_us || t->seq >= limit_seq)
			break;
		g_sequence_remove(first);
		t->iter = NULL;
		t->fn(t->data);
		g_free(t);
	}
}

static gboolean hub_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
	struct vr_event_hub *hub = (struct vr_event_hub *)source;
	struct epoll_event events[HUB_EVENTS_PER_WAKEUP];
	int n;

	(void)callback;
	(void)user_data;
	hub->dispatching = TRUE;
	do
		n = epoll_wait(hub->epfd, events, G_N_ELEMENTS(events), 0);
	while (n < 0 && errno == EINTR);
	for (int i = 0; i < n && !g_source_is_destroyed(source); i++) {
		struct vr_hub_watch *w = events[i].data.ptr;

		if (!w->removed)
			w->fn(w->fd, condition_of(events[i].events), w->data);
	}
	hub_fire_timers(hub);
	hub->dispatching = FALSE;
	g_ptr_array_set_size(hub->removed, 0);
	if (!g_source_is_destroyed(source))
		hub_update_ready_time(hub);
	return G_SOURCE_CONTINUE;
}

static void hub_finalize(GSource *source)
{
	struct vr_event_hub *hub = (struct vr_event_hub *)source;

	close(hub->epfd);
	g_sequence_free(hub->timers);
	g_ptr_array_unref(hub->removed);
	g_main_context_unref(hub->ctx);
}

static GSourceFuncs hub_funcs = {
	.dispatch = hub_dispatch,
	.finalize = hub_finalize,
};

struct vr_event_hub *vr_event_hub_ref_for_context(GMainContext *ctx, GError **error)
{
	struct vr_event_hub *hub;
	int epfd;

	if (!ctx)
		ctx = g_main_context_default();
	G_LOCK(hubs);
	if (!hubs)
		hubs = g_hash_table_new(g_direct_hash, g_direct_equal);
	hub = g_hash_table_lookup(hubs, ctx);
	if (hub) {
		hub->users++;
		G_UNLOCK(hubs);
		return hub;
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0) {
		int e = errno;
		G_UNLOCK(hubs);
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
			    "cannot make the main loop's epoll set: %s", g_strerror(e));
		return NULL;
	}
	hub = (struct vr_event_hub *)g_source_new(&hub_funcs, sizeof(*hub));
	g_source_set_static_name(&hub->source, "vreclaim event hub");
	hub->ctx = g_main_context_ref(ctx);
	hub->users = 1;
	hub->epfd = epfd;
	hub->timers = g_sequence_new(NULL);
	hub->removed = g_ptr_array_new_with_free_func(g_free);
	g_source_add_unix_fd(&hub->source, epfd, G_IO_IN);
	g_source_attach(&hub->source, ctx);
	g_hash_table_insert(hubs, ctx, hub);
	G_UNLOCK(hubs);
	return hub;
}

void vr_event_hub_unref(struct vr_event_hub *hub)
{
	if (!hub)
		return;
	G_LOCK(hubs);
	if (--hub->users) {
		G_UNLOCK(hubs);
		return;
	}
	g_hash_table_remove(hubs, hub->ctx);
	G_UNLOCK(hubs);
	if (!g_sequence_is_empty(hub->timers))
		g_critical("the event hub goes with %d timers pending",
			   g_sequence_get_length(hub->timers));
	g_source_destroy(&hub->source);
	g_source_unref(&hub->source);
}

struct vr_hub_watch *vr_event_hub_watch(struct vr_event_hub *hub, int fd, GIOCondition cond,
					vr_hub_watch_fn fn, gpointer data, GError **error)
{
	struct vr_hub_watch *w;
	struct epoll_event ev = { .events = epoll_events_of(cond) };

	g_return_val_if_fail(hub != NULL && fd >= 0 && fn != NULL, NULL);
	w = g_new0(struct vr_hub_watch, 1);
	ev.data.ptr = w;
	if (epoll_ctl(hub->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = errno;
		g_free(w);
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
			    "cannot watch descriptor %d: %s", fd, g_strerror(e));
		return NULL;
	}
	w->hub = hub;
	w->fd = fd;
	w->cond = cond;
	w->fn = fn;
	w->data = data;
	return w;
}

void vr_hub_watch_set_condition(struct vr_hub_watch *w, GIOCondition cond)
{
	struct epoll_event ev = { .events = epoll_events_of(cond), .data.ptr = w };

	if (w->cond == cond)
		return;
	if (epoll_ctl(w->hub->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		g_critical("cannot change the watch of descriptor %d: %s", w->fd,
			   g_strerror(errno));
	w->cond = cond;
}

GIOCondition vr_hub_watch_condition(const struct vr_hub_watch *w)
{
	return w->cond;
}

void vr_hub_watch_remove(struct vr_hub_watch *w)
{
	if (!w)
		return;
	/* ENOENT/EBADF only when the owner closed the descriptor first: the
	 * entry went with it (unless a duplicate keeps it open). */
	if (epoll_ctl(w->hub->epfd, EPOLL_CTL_DEL, w->fd, NULL) < 0)
		g_debug("removing the watch of descriptor %d: %s", w->fd, g_strerror(errno));
	if (w->hub->dispatching) {
		w->removed = TRUE;
		g_ptr_array_add(w->hub->removed, w);
		return;
	}
	g_free(w);
}

struct vr_hub_timer *vr_event_hub_add_timer(struct vr_event_hub *hub, gint64 due_us,
					    vr_hub_timer_fn fn, gpointer data)
{
	struct vr_hub_timer *t;

	g_return_val_if_fail(hub != NULL && fn != NULL, NULL);
	t = g_new0(struct vr_hub_timer, 1);
	t->hub = hub;
	t->due_us = due_us;
	t->seq = hub->next_seq++;
	t->fn = fn;
	t->data = data;
	t->iter = g_sequence_insert_sorted(hub->timers, t, timer_compare, NULL);
	if (!hub->dispatching && g_sequence_iter_is_begin(t->iter))
		hub_update_ready_time(hub);
	return t;
}

gint64 vr_hub_timer_due(const struct vr_hub_timer *t)
{
	return t->due_us;
}

void vr_hub_timer_cancel(struct vr_hub_timer *t)
{
	struct vr_event_hub *hub;
	gboolean was_first;

	if (!t)
		return;
	g_return_if_fail(t->iter != NULL); /* it fired: its callback runs or ran */
	hub = t->hub;
	was_first = g_sequence_iter_is_begin(t->iter);
	g_sequence_remove(t->iter);
	g_free(t);
	if (!hub->dispatching && was_first)
		hub_update_ready_time(hub);
}
