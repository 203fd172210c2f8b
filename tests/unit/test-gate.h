/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A gate that holds a worker thread: what a stopped libvirtd looks like to
 * the code that waits for it. Shared by the tests of libvirt's worker thread
 * (tests/unit/test-libvirt-worker.c) and of the libvirt connection on it
 * (tests/integration/test-libvirt-conn.c).
 *
 * gate_set(FALSE) closes the gate: every thread that calls gate_pass() then
 * waits in it until gate_set(TRUE). gate_nr_waiting() says how many wait.
 * A test that closes the gate opens it again before it ends (a suite's .fini),
 * so that the threads it held can end.
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
