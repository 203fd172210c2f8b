/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the QEMU monitors' workers (hostd/qmp/monitor-worker.c):
 * a monitor that hangs never blocks the main loop.
 *
 * Two kinds of QEMU: a fake transport whose commands answer only once the
 * test opens its gate (as libvirt's passthrough, which has no timeout), and
 * our own QMP client against a peer thread on a unix socket that answers
 * normally or one byte at a time (its socket, framing, greeting and
 * negotiation are tests/lib/fake-qmp.h's; the byte-at-a-time writing and
 * the stall are this file's). Covered: results come back on the main
 * context; a main-loop timer keeps its period while a job hangs; the
 * watchdog marks the worker stalled (degraded) past the deadline, naming the
 * command; no second job while one is outstanding; a late answer keeps the
 * stall, one in time ends it; a stalled worker does not delay another; a
 * worker freed while its job runs calls nothing back and frees the job's
 * data; the own client's timeout on a peer sending a byte at a time, and
 * the recovery when the peer answers again.
 *
 * Criterion runs every test in its own process: the fakes are globals.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <glib.h>
#include <json.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake-qmp.h"
#include "qmp/monitor-worker.h"
#include "qmp/qemu-commands.h"

/* The deadline of the fake's commands, ms: short, so that tests are. */
#define TIMEOUT_MS 300
/* The main-loop timer's period, ms, and the longest gap between two of its
 * ticks that still counts as on time, ms (a loaded CI machine included). */
#define TICK_MS	   20
#define MAX_GAP_MS 150
/* The longest a test waits for something, ms. */
#define WAIT_MS 5000

/* ---- a transport that answers when the test says so ---- */

/**
 * struct gate_mon - the fake transport's state.
 * @lock, @cond: guard and signal @open.
 * @open:	whether commands answer (else they wait).
 * @calls:	commands received.
 * @freed:	the monitor was freed (atomic).
 * @freed_on_main: it was freed on the main thread (it must not be).
 */
struct gate_mon {
	GMutex lock;
	GCond cond;
	gboolean open;
	guint calls;
	gint freed;
	gboolean freed_on_main;
};

/* More than the pool's threads (WORKER_POOL_THREADS, 4) can stall. */
#define NR_GATES 10
static struct gate_mon gates[NR_GATES];

static GThread *main_thread;

static gboolean gate_execute(void *priv, const char *command, json_object *args, guint timeout_ms,
			     json_object **ret, GError **error)
{
	struct gate_mon *g = priv;

	(void)command;
	(void)args;
	(void)timeout_ms;
	(void)error;
	g_mutex_lock(&g->lock);
	g->calls++;
	while (!g->open)
		g_cond_wait(&g->cond, &g->lock);
	g_mutex_unlock(&g->lock);
	if (ret)
		*ret = json_tokener_parse("{\"actual\": 1073741824}");
	return TRUE;
}

static void gate_free(void *priv)
{
	struct gate_mon *g = priv;

	g->freed_on_main = g_thread_self() == main_thread;
	g_atomic_int_inc(&g->freed);
}

static const struct vr_qemu_monitor_ops gate_ops = {
	.name = "gate",
	.execute = gate_execute,
	.free = gate_free,
};

static void gate_set(struct gate_mon *g, gboolean open)
{
	g_mutex_lock(&g->lock);
	g->open = open;
	g_cond_broadcast(&g->cond);
	g_mutex_unlock(&g->lock);
}

static guint gate_calls(struct gate_mon *g)
{
	guint n;

	g_mutex_lock(&g->lock);
	n = g->calls;
	g_mutex_unlock(&g->lock);
	return n;
}

static struct vr_monitor_worker *gate_worker(struct gate_mon *g, const char *name)
{
	struct vr_qemu_monitor *mon = vr_qemu_monitor_new(&gate_ops, g, name);
	g_autoptr(GError) error = NULL;
	struct vr_monitor_worker *w;

	mon->timeout_ms = TIMEOUT_MS;
	w = vr_monitor_worker_new(name, mon, &error);
	cr_assert_not_null(w, "expected a worker: %s", error ? error->message : "?");
	return w;
}

static void gates_setup(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(gates); i++) {
		g_mutex_init(&gates[i].lock);
		g_cond_init(&gates[i].cond);
		gates[i].open = TRUE;
	}
}

/* Let every hanging command go, so that the threads end. */
static void gates_teardown(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(gates); i++)
		gate_set(&gates[i], TRUE);
}

TestSuite(monitor_worker, .init = gates_setup, .fini = gates_teardown,
	  .description = "the QEMU monitors' workers on their thread pool");

/* ---- jobs ---- */

/**
 * struct balloon_data - one query-balloon job.
 * @actual_bytes:  its answer (out).
 * @ran_on_main:   whether the job ran on the main thread (out: it must not).
 * @done:	   the done callback ran, and how often (main).
 * @done_on_main:  whether it ran on the main thread (it must).
 * @error:	   the job's error message, if any (main).
 * @submitted_us, @done_us: when it was submitted and answered (main).
 * @freed:	   set (atomically) when the data is freed; NULL: nothing.
 */
struct balloon_data {
	uint64_t actual_bytes;
	gboolean ran_on_main;
	guint done;
	gboolean done_on_main;
	char *error;
	gint64 submitted_us;
	gint64 done_us;
	gint *freed;
};

static gboolean balloon_run(struct vr_qemu_monitor *mon, gpointer data, GError **error)
{
	struct balloon_data *b = data;

	b->ran_on_main = g_thread_self() == main_thread;
	return vr_qemu_query_balloon(mon, &b->actual_bytes, error);
}

/* The results the done callback saw, for the test to read after the job's
 * data is gone. */
static struct balloon_data last;

static void balloon_done(struct vr_monitor_worker *w, gpointer data, const GError *error,
			 gpointer user_data)
{
	struct balloon_data *b = data;
	guint *count = user_data;

	(void)w;
	b->done++;
	b->done_on_main = g_thread_self() == main_thread;
	b->done_us = g_get_monotonic_time();
	g_free(last.error);
	last = *b;
	last.error = error ? g_strdup(error->message) : NULL;
	if (count)
		(*count)++;
}

static void balloon_free(gpointer data)
{
	struct balloon_data *b = data;

	if (b->freed)
		g_atomic_int_inc(b->freed);
	g_free(b->error);
	g_free(b);
}

static gboolean submit_balloon(struct vr_monitor_worker *w, guint *count, gint *freed)
{
	struct balloon_data *b = g_new0(struct balloon_data, 1);

	b->submitted_us = g_get_monotonic_time();
	b->freed = freed;
	return vr_monitor_worker_submit(w, "balloon", balloon_run, balloon_done, b, balloon_free,
					count);
}

/* ---- the main loop ---- */

/**
 * struct ticker - a main-loop timer that measures its own period.
 * @last_us:	its last tick.
 * @max_gap_us: the longest time between two ticks.
 * @ticks:	how many.
 */
struct ticker {
	gint64 last_us;
	gint64 max_gap_us;
	guint ticks;
};

static gboolean ticker_tick(gpointer data)
{
	struct ticker *t = data;
	gint64 now = g_get_monotonic_time();

	if (t->last_us)
		t->max_gap_us = MAX(t->max_gap_us, now - t->last_us);
	t->last_us = now;
	t->ticks++;
	return G_SOURCE_CONTINUE;
}

static gboolean flag_set(gpointer data)
{
	*(gboolean *)data = TRUE;
	return G_SOURCE_REMOVE;
}

/* Run the main loop for @ms. */
static void run_for(guint ms)
{
	gboolean over = FALSE;
	guint id = g_timeout_add(ms, flag_set, &over);

	while (!over)
		g_main_context_iteration(NULL, TRUE);
	(void)id;
}

/* Run the main loop until *@count reaches @n, WAIT_MS at most. */
static void run_until_count(const guint *count, guint n, const char *what)
{
	gboolean over = FALSE;
	guint id = g_timeout_add(WAIT_MS, flag_set, &over);

	while (*count < n && !over)
		g_main_context_iteration(NULL, TRUE);
	cr_assert_geq(*count, n, "expected %s within %d ms", what, WAIT_MS);
	if (!over)
		g_source_remove(id);
}

/* ---- tests ---- */

Test(monitor_worker, runs_on_its_thread_and_answers_on_the_main_context)
{
	g_autoptr(vr_monitor_worker) w = NULL;
	guint done = 0;

	main_thread = g_thread_self();
	w = gate_worker(&gates[0], "answers");
	cr_assert(submit_balloon(w, &done, NULL), "expected the job queued");
	cr_assert(vr_monitor_worker_is_busy(w), "expected the worker busy until the result");
	run_until_count(&done, 1, "the job's result");
	cr_assert_null(last.error, "expected no error, got %s", last.error);
	cr_assert_eq(last.actual_bytes, 1ULL << 30, "expected the answer from the job");
	cr_assert(!last.ran_on_main, "expected the job on a pool thread, not the main one");
	cr_assert(last.done_on_main, "expected the result on the main thread");
	cr_assert(!vr_monitor_worker_is_busy(w), "expected the worker idle after the result");
	cr_assert_null(vr_monitor_worker_stall_reason(w), "expected no stall");
}

Test(monitor_worker, main_loop_keeps_its_period_while_a_job_hangs)
{
	g_autoptr(vr_monitor_worker) w = NULL;
	struct ticker t = { 0 };
	const char *reason;
	guint done = 0;
	gint freed = 0;
	guint id;

	main_thread = g_thread_self();
	w = gate_worker(&gates[0], "hangs");
	gate_set(&gates[0], FALSE);
	id = g_timeout_add(TICK_MS, ticker_tick, &t);
	cr_assert(submit_balloon(w, &done, NULL), "expected the job queued");

	/* Within the deadline: busy, not stalled yet. */
	run_for(TIMEOUT_MS / 2);
	cr_assert(vr_monitor_worker_is_busy(w), "expected the job outstanding");
	cr_assert_null(vr_monitor_worker_stall_reason(w),
		       "expected no stall before the deadline, got '%s'",
		       vr_monitor_worker_stall_reason(w));
	/* No second job while one is outstanding; its data is freed. */
	cr_assert(!submit_balloon(w, &done, &freed), "expected a second job refused");
	cr_assert_eq(g_atomic_int_get(&freed), 1, "expected the refused job's data freed");

	/* Past it: stalled, naming the command and the deadline. */
	run_for(TIMEOUT_MS + 500);
	reason = vr_monitor_worker_stall_reason(w);
	cr_assert_not_null(reason, "expected a stall %d ms past the deadline", 500);
	cr_assert_str_eq(reason, "the QEMU monitor did not answer query-balloon within 300 ms",
			 "expected the reason to name the command and the deadline, got '%s'",
			 reason);
	cr_assert_eq(vr_monitor_worker_get_stalls(w), 1, "expected one stall");
	cr_assert_eq(done, 0, "expected no result while QEMU does not answer");
	cr_assert_eq(gate_calls(&gates[0]), 1, "expected one command sent, got %u",
		     gate_calls(&gates[0]));

	/* The main loop kept its period all along. */
	cr_assert_geq(t.ticks, (TIMEOUT_MS / 2 + TIMEOUT_MS + 500) / TICK_MS / 2,
		      "expected the timer to keep ticking, got %u ticks", t.ticks);
	cr_assert_leq(t.max_gap_us, MAX_GAP_MS * 1000,
		      "expected the timer every %d ms while the job hangs, its longest gap "
		      "was %" G_GINT64_FORMAT " ms",
		      TICK_MS, t.max_gap_us / 1000);

	/* A late answer: the result comes, the stall stays. */
	gate_set(&gates[0], TRUE);
	run_until_count(&done, 1, "the late result");
	cr_assert_null(last.error, "expected the late answer taken, got %s", last.error);
	cr_assert_not_null(vr_monitor_worker_stall_reason(w),
			   "expected the stall kept after a late answer");

	/* An answer in time ends it. */
	cr_assert(submit_balloon(w, &done, NULL), "expected a new job queued");
	run_until_count(&done, 2, "the second result");
	cr_assert_null(vr_monitor_worker_stall_reason(w),
		       "expected the stall over once QEMU answers in time, got '%s'",
		       vr_monitor_worker_stall_reason(w));
	cr_assert_eq(vr_monitor_worker_get_stalls(w), 1, "expected still one stall");
	g_source_remove(id);
}

/* The second worker's job, resubmitted on each tick of the main loop. */
struct resubmit {
	struct vr_monitor_worker *w;
	guint done;
	gint64 max_latency_us;
};

static gboolean resubmit_tick(gpointer data)
{
	struct resubmit *r = data;

	if (r->done && last.done_us)
		r->max_latency_us = MAX(r->max_latency_us, last.done_us - last.submitted_us);
	if (!vr_monitor_worker_is_busy(r->w))
		submit_balloon(r->w, &r->done, NULL);
	return G_SOURCE_CONTINUE;
}

Test(monitor_worker, a_stalled_worker_delays_no_other)
{
	g_autoptr(vr_monitor_worker) stalled = NULL;
	g_autoptr(vr_monitor_worker) fine = NULL;
	struct resubmit r = { 0 };
	guint stalled_done = 0;
	guint id;

	main_thread = g_thread_self();
	stalled = gate_worker(&gates[0], "stalled");
	fine = gate_worker(&gates[1], "fine");
	gate_set(&gates[0], FALSE);
	cr_assert(submit_balloon(stalled, &stalled_done, NULL), "expected the job queued");
	r.w = fine;
	id = g_timeout_add(TICK_MS, resubmit_tick, &r);
	run_for(1000);
	g_source_remove(id);

	cr_assert_not_null(vr_monitor_worker_stall_reason(stalled), "expected the first stalled");
	cr_assert_null(vr_monitor_worker_stall_reason(fine), "expected the second not stalled");
	cr_assert_eq(stalled_done, 0, "expected no result from the stalled one");
	cr_assert_geq(r.done, 1000 / TICK_MS / 3,
		      "expected the second worker's jobs done on time, got %u in 1 s", r.done);
	cr_assert_leq(
		r.max_latency_us, MAX_GAP_MS * 1000,
		"expected each of its jobs answered within %d ms, the slowest took %" G_GINT64_FORMAT
		" ms",
		MAX_GAP_MS, r.max_latency_us / 1000);
}

Test(monitor_worker, freed_while_its_job_runs_calls_nothing)
{
	struct vr_monitor_worker *w;
	guint done = 0;
	gint freed = 0;

	main_thread = g_thread_self();
	w = gate_worker(&gates[0], "freed");
	gate_set(&gates[0], FALSE);
	cr_assert(submit_balloon(w, &done, &freed), "expected the job queued");
	run_for(50);
	vr_monitor_worker_free(w);
	/* QEMU answers after the domain went: the result is dropped. */
	gate_set(&gates[0], TRUE);
	for (int i = 0; i < WAIT_MS / 10 && !g_atomic_int_get(&freed); i++)
		run_for(10);
	cr_assert_eq(done, 0, "expected no callback after the worker was freed");
	cr_assert_eq(g_atomic_int_get(&freed), 1, "expected the late job's data freed");
	for (int i = 0; i < WAIT_MS / 10 && !g_atomic_int_get(&gates[0].freed); i++)
		run_for(10);
	cr_assert_eq(g_atomic_int_get(&gates[0].freed), 1,
		     "expected the monitor freed once, after its last job");
	cr_assert_not(gates[0].freed_on_main, "expected the monitor freed off the main loop");
}

Test(monitor_worker, an_idle_worker_freed_frees_its_monitor_off_the_main_loop)
{
	guint done = 0;

	main_thread = g_thread_self();
	struct vr_monitor_worker *w = gate_worker(&gates[0], "idle");
	cr_assert(submit_balloon(w, &done, NULL), "expected the job queued");
	run_until_count(&done, 1, "the result");
	cr_assert_eq(g_atomic_int_get(&gates[0].freed), 0, "expected the monitor kept");
	vr_monitor_worker_free(w);
	for (int i = 0; i < WAIT_MS / 10 && !g_atomic_int_get(&gates[0].freed); i++)
		run_for(10);
	cr_assert_eq(g_atomic_int_get(&gates[0].freed), 1, "expected the monitor freed once");
	cr_assert_not(gates[0].freed_on_main, "expected the monitor freed off the main loop");
}

Test(monitor_worker, more_stalled_workers_than_threads_delay_no_other)
{
	struct vr_monitor_worker *stalled[NR_GATES - 1];
	g_autoptr(vr_monitor_worker) fine = NULL;
	struct resubmit r = { 0 };
	guint stalled_done = 0, nr_stalled = 0;
	guint id;

	main_thread = g_thread_self();
	for (guint i = 0; i < G_N_ELEMENTS(stalled); i++) {
		g_autofree char *name = g_strdup_printf("stalled-%u", i);
		stalled[i] = gate_worker(&gates[i], name);
		gate_set(&gates[i], FALSE);
		cr_assert(submit_balloon(stalled[i], &stalled_done, NULL), "expected job %u queued",
			  i);
	}
	fine = gate_worker(&gates[NR_GATES - 1], "fine");
	/* Every stalled job found so by the watchdog holds a thread of its
	 * own; the pool grew by as many. */
	for (int i = 0; i < WAIT_MS / 10 && nr_stalled < G_N_ELEMENTS(stalled); i++) {
		run_for(10);
		nr_stalled = 0;
		for (guint k = 0; k < G_N_ELEMENTS(stalled); k++)
			nr_stalled += vr_monitor_worker_stall_reason(stalled[k]) != NULL;
	}
	cr_assert_eq(nr_stalled, G_N_ELEMENTS(stalled), "expected every gated worker stalled");
	r.w = fine;
	id = g_timeout_add(TICK_MS, resubmit_tick, &r);
	run_for(1000);
	g_source_remove(id);
	cr_assert_eq(stalled_done, 0, "expected no result from the stalled ones");
	cr_assert_geq(r.done, 1000 / TICK_MS / 3,
		      "expected the free worker's jobs done on time, got %u in 1 s", r.done);
	cr_assert_leq(r.max_latency_us, MAX_GAP_MS * 1000,
		      "expected each of its jobs answered within %d ms, the slowest took "
		      "%" G_GINT64_FORMAT " ms",
		      MAX_GAP_MS, r.max_latency_us / 1000);
	for (guint i = 0; i < G_N_ELEMENTS(stalled); i++)
		vr_monitor_worker_free(stalled[i]);
}

/* ---- our own QMP client against a peer that answers a byte at a time ---- */

/* The slow peer's pause between two bytes, ms. */
#define SLOW_BYTE_MS 100

/**
 * struct peer - the fake QEMU on a socket: one client at a time.
 * @sock:	its temporary folder, socket path and listening socket.
 * @slow:	send every byte SLOW_BYTE_MS after the last (atomic).
 * @stop:	end the thread (atomic).
 * @thread:	the peer's thread.
 */
struct peer {
	struct fake_qmp_socket sock;
	gint slow;
	gint stop;
	GThread *thread;
};

static struct peer peer;

/* Send @text; a byte at a time when slow. FALSE when the client went. */
static gboolean peer_send(int fd, const char *text)
{
	gsize len = strlen(text);

	for (gsize off = 0; off < len;) {
		gboolean slow = g_atomic_int_get(&peer.slow);
		gsize n = slow ? 1 : len - off;
		ssize_t sent = send(fd, text + off, n, MSG_NOSIGNAL);

		if (sent < 0 && errno == EINTR)
			continue;
		if (sent <= 0)
			return FALSE;
		off += (gsize)sent;
		if (slow)
			g_usleep(SLOW_BYTE_MS * 1000);
	}
	return TRUE;
}

/* The "return" of @cmd after the negotiation (fake_qmp_lookup_fn): the
 * balloon's size for query-balloon, {} for anything else. */
static char *peer_lookup(const struct fake_qmp_command *cmd, const char **cls, const char **desc,
			 gpointer data)
{
	(void)cls;
	(void)desc;
	(void)data;
	if (!strcmp(cmd->execute, "query-balloon"))
		return g_strdup("{\"actual\": 1073741824}");
	return g_strdup("{}");
}

static void peer_session(int fd)
{
	g_autoptr(GString) in = g_string_new(NULL);
	struct fake_qmp_session session = { 0 };

	if (!peer_send(fd, FAKE_QMP_GREETING))
		return;
	while (!g_atomic_int_get(&peer.stop)) {
		g_autofree char *line = NULL;
		g_autofree char *reply = NULL;
		struct fake_qmp_command cmd;

		switch (fake_qmp_read_line(fd, in, 50, &line)) {
		case FAKE_QMP_READ_TIMEOUT:
			continue;
		case FAKE_QMP_READ_CLOSED:
			return;
		case FAKE_QMP_READ_LINE:
			break;
		}
		fake_qmp_command_parse(&cmd, line);
		reply = fake_qmp_answer(&session, &cmd, peer_lookup, NULL, NULL);
		fake_qmp_command_clear(&cmd);
		if (!peer_send(fd, reply))
			return;
	}
}

static gpointer peer_main(gpointer data)
{
	(void)data;
	while (!g_atomic_int_get(&peer.stop)) {
		int fd = fake_qmp_accept(peer.sock.listen_fd, 50);

		if (fd < 0)
			continue;
		peer_session(fd);
		close(fd);
	}
	return NULL;
}

static void peer_setup(void)
{
	g_autoptr(GError) error = NULL;

	gates_setup();
	cr_assert(fake_qmp_socket_open(&peer.sock, "vr-monitor-worker-XXXXXX", &error), "%s",
		  error ? error->message : "?");
	peer.thread = g_thread_new("fake-qemu", peer_main, NULL);
}

static void peer_teardown(void)
{
	g_atomic_int_set(&peer.stop, 1);
	if (peer.thread)
		g_thread_join(peer.thread);
	fake_qmp_socket_close(&peer.sock);
}

TestSuite(monitor_worker_qmp, .init = peer_setup, .fini = peer_teardown,
	  .description = "the worker over our own QMP client and a slow peer");

Test(monitor_worker_qmp, a_peer_sending_a_byte_at_a_time_blocks_nothing)
{
	g_autoptr(vr_monitor_worker) w = NULL;
	g_autoptr(GError) error = NULL;
	struct ticker t = { 0 };
	guint done = 0;
	guint id;

	main_thread = g_thread_self();
	g_atomic_int_set(&peer.slow, 1);
	w = vr_monitor_worker_new(
		"slow", vr_qemu_monitor_new_qmp_unconnected(peer.sock.path, TIMEOUT_MS), &error);
	cr_assert_not_null(w, "expected a worker: %s", error ? error->message : "?");
	id = g_timeout_add(TICK_MS, ticker_tick, &t);

	/* The greeting comes a byte every 100 ms: the client gives up at the
	 * deadline, on its thread. */
	cr_assert(submit_balloon(w, &done, NULL), "expected the job queued");
	run_until_count(&done, 1, "the slow peer's result");
	cr_assert_not_null(last.error, "expected the job to fail on the slow peer");
	cr_assert(strstr(last.error, "within 300 ms"),
		  "expected a timeout naming the deadline, got '%s'", last.error);
	cr_assert_not_null(vr_monitor_worker_stall_reason(w), "expected the worker stalled");
	cr_assert_leq(
		t.max_gap_us, MAX_GAP_MS * 1000,
		"expected the timer every %d ms meanwhile, its longest gap was %" G_GINT64_FORMAT
		" ms",
		TICK_MS, t.max_gap_us / 1000);

	/* The peer answers at once again: the next job reconnects and the
	 * stall ends. */
	g_atomic_int_set(&peer.slow, 0);
	for (guint tries = 0; vr_monitor_worker_stall_reason(w) && tries < 10; tries++) {
		guint before = done;

		cr_assert(submit_balloon(w, &done, NULL), "expected a job queued");
		run_until_count(&done, before + 1, "a result");
	}
	cr_assert_null(vr_monitor_worker_stall_reason(w),
		       "expected the stall over once the peer answers, got '%s'",
		       vr_monitor_worker_stall_reason(w));
	cr_assert_null(last.error, "expected the last job to succeed, got '%s'", last.error);
	cr_assert_eq(last.actual_bytes, 1ULL << 30, "expected the peer's answer");
	cr_assert_leq(
		t.max_gap_us, MAX_GAP_MS * 1000,
		"expected the timer every %d ms throughout, its longest gap was %" G_GINT64_FORMAT
		" ms",
		TICK_MS, t.max_gap_us / 1000);
	g_source_remove(id);
}
