/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Many descriptors and deadlines behind one main-loop source.
 *
 * GLib's main loop walks every source of its context twice at each wakeup
 * (prepare, check) and polls every descriptor of every source: with a
 * thousand domains, a thousand agent sockets each with its deadline timer,
 * every wakeup cost O(domains) however few sockets were ready. The hub keeps
 * its descriptors in one epoll set and its deadlines in one sorted sequence:
 * the main loop sees one source with one descriptor (the epoll set) and one
 * ready time (the first deadline), and a wakeup costs O(ready) plus
 * O(log deadlines).
 *
 * One hub per GMainContext, shared by reference (vr_event_hub_ref_for_context());
 * its watches and timers run their callbacks on that context's thread, which
 * alone may add, change or remove them. Level-triggered: a watch is called
 * again at the next wakeup as long as its condition holds.
 *
 * Ownership: a watch or a timer belongs to whoever added it until it is
 * removed (watch) or cancelled or fired (timer). Removing one from inside any
 * callback of the same hub is safe, including the one running.
 */
#pragma once

#include <glib.h>

struct vr_event_hub;
struct vr_hub_watch;
struct vr_hub_timer;

/**
 * vr_hub_watch_fn - a watched descriptor is ready.
 * @fd:		the descriptor.
 * @cond:	what it is ready for: any of G_IO_IN, G_IO_OUT, G_IO_HUP,
 *		G_IO_ERR (the last two are reported whatever was asked).
 * @data:	as given to vr_event_hub_watch().
 */
typedef void (*vr_hub_watch_fn)(int fd, GIOCondition cond, gpointer data);

/**
 * vr_hub_timer_fn - a timer's time came.
 * @data:	as given to vr_event_hub_add_timer().
 *
 * The timer is gone when this runs: forget it, do not cancel it.
 */
typedef void (*vr_hub_timer_fn)(gpointer data);

/**
 * vr_event_hub_ref_for_context() - the hub of a main context.
 * @ctx:	the context (NULL: the global default context).
 * @error:	where a failure to make the epoll set goes.
 *
 * Made and attached at the first call for @ctx, shared by the later ones.
 *
 * Return: a reference (vr_event_hub_unref()), or NULL with @error.
 */
struct vr_event_hub *vr_event_hub_ref_for_context(GMainContext *ctx, GError **error);

/**
 * vr_event_hub_unref() - drop a reference.
 * @hub:	the hub, or NULL.
 *
 * The last one detaches the hub from its context and closes the epoll set;
 * by then every watch must have been removed and every timer cancelled.
 */
void vr_event_hub_unref(struct vr_event_hub *hub);

/**
 * vr_event_hub_watch() - watch a descriptor.
 * @hub:	the hub.
 * @fd:		an open descriptor not yet watched by @hub (epoll keeps one
 *		entry per descriptor: ask for every condition in one watch).
 * @cond:	G_IO_IN and/or G_IO_OUT (0: only hang-ups and errors).
 * @fn, @data:	called while @fd is ready.
 * @error:	where epoll's refusal goes (a descriptor epoll cannot watch,
 *		such as a regular file).
 *
 * Remove the watch before closing @fd.
 *
 * Return: the watch (vr_hub_watch_remove()), or NULL with @error.
 */
struct vr_hub_watch *vr_event_hub_watch(struct vr_event_hub *hub, int fd, GIOCondition cond,
					vr_hub_watch_fn fn, gpointer data, GError **error);

/**
 * vr_hub_watch_set_condition() - change what a watch waits for.
 * @w:		the watch.
 * @cond:	as for vr_event_hub_watch().
 *
 * Cannot fail for a descriptor that is still open: epoll accepted it already.
 */
void vr_hub_watch_set_condition(struct vr_hub_watch *w, GIOCondition cond);

/**
 * vr_hub_watch_condition() - what a watch waits for.
 * @w:		the watch.
 *
 * Return: the condition last given.
 */
GIOCondition vr_hub_watch_condition(const struct vr_hub_watch *w);

/**
 * vr_hub_watch_remove() - stop watching and free the watch.
 * @w:		the watch, or NULL.
 *
 * Its callback is not called again, even for an event already collected in
 * the wakeup that runs.
 */
void vr_hub_watch_remove(struct vr_hub_watch *w);

/**
 * vr_event_hub_add_timer() - call a function once at a monotonic time.
 * @hub:	the hub.
 * @due_us:	when, g_get_monotonic_time() microseconds (a time past fires
 *		at the next wakeup).
 * @fn, @data:	what to call. Timers due at the same time fire in the
 *		order they were added.
 *
 * Return: the timer, valid until it fires or vr_hub_timer_cancel().
 */
struct vr_hub_timer *vr_event_hub_add_timer(struct vr_event_hub *hub, gint64 due_us,
					    vr_hub_timer_fn fn, gpointer data);

/**
 * vr_hub_timer_due() - when a timer fires.
 * @t:		the timer.
 *
 * Return: its @due_us.
 */
gint64 vr_hub_timer_due(const struct vr_hub_timer *t);

/**
 * vr_hub_timer_cancel() - cancel a timer that has not fired.
 * @t:		the timer, or NULL.
 */
void vr_hub_timer_cancel(struct vr_hub_timer *t);
