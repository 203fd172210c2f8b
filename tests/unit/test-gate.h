/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A gate that holds a worker thread: what a stopped libvirtd looks like to
 * the code that waits for it. Shared by the tests of libvirt's worker thread
 * (tests/unit/hostd/libvirt/test-libvirt-worker.c) and of the libvirt connection on it
 * (tests/integration/test-libvirt-conn.c).
 *
 * gate_set(FALSE) closes the gate: every thread that calls gate_pass() then
 * waits in it until gate_set(TRUE). gate_nr_waiting() says how many wait.
 * A test that closes the gate opens it again before it ends (a suite's .fini),
 * so that the threads it held can end.
 *
 * And the probe that shows the main loop keeps its pace while a thread is
 * held: g_timeout_add(TICK_MS, tick, NULL) records in max_gap_us the longest
 * gap between two of its ticks, which a test compares with MAX_GAP_MS.
 */
#pragma once

#include <glib.h>

static GMutex gate_lock;
static GCond gate_cond;
static gboolean gate_open = TRUE;
static guint gate_waiting;

/* Opens (TRUE) or closes (FALSE) the gate; opening lets every waiter go. */
static inline void gate_set(gboolean open)
{
	g_mutex_lock(&gate_lock);
	gate_open = open;
	g_cond_broadcast(&gate_cond);
	g_mutex_unlock(&gate_lock);
}

/* Called on the held thread: returns at once while the gate is open, else
 * when it opens. */
static inline void gate_pass(void)
{
	g_mutex_lock(&gate_lock);
	gate_waiting++;
	while (!gate_open)
		g_cond_wait(&gate_cond, &gate_lock);
	gate_waiting--;
	g_mutex_unlock(&gate_lock);
}

/* The threads waiting at the gate now. */
static inline guint gate_nr_waiting(void)
{
	guint n;

	g_mutex_lock(&gate_lock);
	n = gate_waiting;
	g_mutex_unlock(&gate_lock);
	return n;
}

/* The probe's period, ms, and the longest gap between two of its ticks that
 * still counts as on time, ms (a loaded machine included). */
#define TICK_MS	   20
#define MAX_GAP_MS 150

static gint64 last_tick_us, max_gap_us;

/* The probe's timer callback: the longest gap between two calls so far. */
static inline gboolean tick(gpointer data)
{
	gint64 now = g_get_monotonic_time();

	(void)data;
	if (last_tick_us)
		max_gap_us = MAX(max_gap_us, now - last_tick_us);
	last_tick_us = now;
	return G_SOURCE_CONTINUE;
}
