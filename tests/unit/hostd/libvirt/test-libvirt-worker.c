/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of libvirt's worker thread (hostd/libvirt/libvirt-worker.c): a libvirt
 * that stops answering never blocks the main loop.
 *
 * The jobs are the test's own: each records where and in which order it
 * ran, and one kind waits at a gate the test opens (a stopped libvirtd, as
 * the job sees it). Covered: jobs run on the thread and in order, results
 * come back on the main context in order and never from within submit; a
 * job past its deadline is answered with a TIMEOUT on time while a
 * main-loop timer keeps its period; the worker is stalled naming the job
 * that holds the thread, and a job queued behind it is skipped; a slow but
 * live libvirt (a long queue, a long job telling its progress) is not; the late
 * result is dropped; a job answered in time ends the stall (the owner hears
 * both); free joins the thread, frees every job's data and the thread data,
 * and calls nothing back, from a done callback too; a thread blocked past
 * the join time is left to finish on its own, cleanly.
 *
 * Criterion runs every test in its own process: the gate is a global.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <string.h>

#include "libvirt/libvirt-worker.h"
#include "test-gate.h"

/* The jobs' deadline, ms: short, so that tests are. */
#define TIMEOUT_MS 300
/* The longest a test waits for something, ms. */
#define WAIT_MS 5000

/* ---- the gate: what a stopped libvirtd looks like to a job ---- */

/* Let every waiting job go, so that the threads end. */
static void gate_teardown(void)
{
	gate_set(TRUE);
}

TestSuite(libvirt_worker, .fini = gate_teardown, .description = "libvirt's worker thread");

/* ---- the jobs ---- */

static GThread *main_thread;

/* Ran, in order: the job ids, on the thread. */
static GMutex ran_lock;
static GArray *ran;

/**
 * struct job_data - one job.
 * @id:		its number (in).
 * @gated:	it waits at the gate (in).
 * @on_main:	it ran on the main thread (out: it must not).
 * @freed:	counts the data freed (atomically); may be NULL.
 */
struct job_data {
	guint id;
	gboolean gated;
	gboolean on_main;
	gint *freed;
};

static gboolean job_run(gpointer thread_data, gpointer data, GError **error)
{
	struct job_data *j = data;

	(void)thread_data;
	j->on_main = g_thread_self() == main_thread;
	if (j->gated)
		gate_pass();
	g_mutex_lock(&ran_lock);
	g_array_append_val(ran, j->id);
	g_mutex_unlock(&ran_lock);
	if (j->id == 666) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "job 666 refused");
		return FALSE;
	}
	return TRUE;
}

/* A slow but live libvirt: @steps calls of @step_ms each, the job telling
 * the worker after each. */
struct slow_data {
	struct job_data base;
	guint steps;
	guint step_ms;
	gboolean progress;
};

static gboolean slow_run(gpointer thread_data, gpointer data, GError **error)
{
	struct slow_data *j = data;

	for (guint i = 0; i < j->steps; i++) {
		g_usleep(j->step_ms * 1000);
		if (j->progress)
			vr_libvirt_worker_progress();
	}
	return job_run(thread_data, &j->base, error);
}

static void job_free(gpointer data)
{
	struct job_data *j = data;

	if (j->freed)
		g_atomic_int_inc(j->freed);
	g_free(j);
}

/**
 * struct answer - what a done callback saw.
 * @id:		the job's.
 * @on_main:	it ran on the main thread (it must).
 * @ran_on_main: the job said it ran on the main thread.
 * @timeout:	its error was the worker's TIMEOUT.
 * @error:	its error message, NULL on success.
 * @at_us:	when (monotonic).
 */
struct answer {
	guint id;
	gboolean on_main;
	gboolean ran_on_main;
	gboolean timeout;
	char *error;
	gint64 at_us;
};

static GArray *answers;

static void answer_clear(gpointer data)
{
	g_free(((struct answer *)data)->error);
}

static void job_done(struct vr_libvirt_worker *w, gpointer data, const GError *error,
		     gpointer user_data)
{
	struct job_data *j = data;
	struct answer a = {
		.id = j->id,
		.on_main = g_thread_self() == main_thread,
		.timeout = g_error_matches(error, VR_LIBVIRT_WORKER_ERROR,
					   VR_LIBVIRT_WORKER_ERROR_TIMEOUT),
		.error = error ? g_strdup(error->message) : NULL,
		.at_us = g_get_monotonic_time(),
	};

	(void)w;
	(void)user_data;
	/* Only the inputs may be read after a timeout: the job may run. */
	if (!a.timeout)
		a.ran_on_main = j->on_main;
	g_array_append_val(answers, a);
}

static void submit(struct vr_libvirt_worker *w, guint id, gboolean gated, gint *freed)
{
	struct job_data *j = g_new0(struct job_data, 1);

	j->id = id;
	j->gated = gated;
	j->freed = freed;
	vr_libvirt_worker_submit(w, "test-job", job_run, job_done, j, job_free, NULL);
}

/* ---- the owner's side ---- */

static guint nr_stalled, nr_recovered;
static char *stalled_reason;

static void on_stalled(const char *reason, gpointer user_data)
{
	(void)user_data;
	nr_stalled++;
	g_free(stalled_reason);
	stalled_reason = g_strdup(reason);
}

static void on_recovered(gint64 stalled_us, gpointer user_data)
{
	(void)user_data;
	cr_assert_gt(stalled_us, 0, "expected the stall's length");
	nr_recovered++;
}

static const struct vr_libvirt_worker_ops owner_ops = {
	.stalled = on_stalled,
	.recovered = on_recovered,
};

/* Counts the thread data freed, or -1000 when it was not the data given
 * (checked on the main thread: the free runs on the worker's). */
static gint thread_data_freed;

static void thread_data_free(gpointer data)
{
	g_atomic_int_add(&thread_data_freed, GPOINTER_TO_UINT(data) == 42 ? 1 : -1000);
}

static struct vr_libvirt_worker *worker_new(void)
{
	g_autoptr(GError) error = NULL;
	struct vr_libvirt_worker *w;

	main_thread = g_thread_self();
	ran = g_array_new(FALSE, FALSE, sizeof(guint));
	answers = g_array_new(FALSE, TRUE, sizeof(struct answer));
	g_array_set_clear_func(answers, answer_clear);
	w = vr_libvirt_worker_new("libvirt at test:///", TIMEOUT_MS, GUINT_TO_POINTER(42),
				  thread_data_free, &owner_ops, NULL, &error);
	cr_assert_not_null(w, "expected a worker: %s", error ? error->message : "?");
	return w;
}

/* Iterate the main context until @n answers came, at most WAIT_MS. */
static void wait_answers(guint n)
{
	gint64 deadline = g_get_monotonic_time() + WAIT_MS * 1000LL;

	while (answers->len < n) {
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %u answers within %d ms, got %u", n, WAIT_MS, answers->len);
		g_main_context_iteration(NULL, FALSE);
		g_usleep(1000);
	}
}

static struct answer *answer_at(guint i)
{
	return &g_array_index(answers, struct answer, i);
}

/* ---- tests ---- */

Test(libvirt_worker, jobs_run_on_the_thread_and_answer_in_order)
{
	g_autoptr(vr_libvirt_worker) w = worker_new();
	gint freed = 0;

	for (guint i = 1; i <= 5; i++)
		submit(w, i == 3 ? 666 : i, FALSE, &freed);
	cr_assert_eq(answers->len, 0, "expected no answer from within submit");
	cr_assert_eq(vr_libvirt_worker_pending(w), 5);
	wait_answers(5);
	for (guint i = 0; i < 5; i++) {
		struct answer *a = answer_at(i);
		guint want = i == 2 ? 666 : i + 1;

		cr_assert_eq(a->id, want, "answer %u: expected job %u, got %u", i, want, a->id);
		cr_assert(a->on_main, "expected job %u answered on the main thread", a->id);
		cr_assert_not(a->ran_on_main, "expected job %u run on the worker thread", a->id);
		if (want == 666)
			cr_assert_str_eq(a->error, "job 666 refused");
		else
			cr_assert_null(a->error, "job %u: %s", a->id, a->error);
	}
	cr_assert_eq(vr_libvirt_worker_pending(w), 0);
	cr_assert_null(vr_libvirt_worker_stall_reason(w));
	cr_assert_eq(nr_stalled, 0);
	cr_assert(vr_libvirt_worker_free(g_steal_pointer(&w)), "expected the thread joined");
	cr_assert_eq(g_atomic_int_get(&freed), 5, "expected every job's data freed");
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 1, "expected the thread data freed");
}

Test(libvirt_worker, a_job_that_hangs_times_out_and_the_main_loop_keeps_its_pace)
{
	g_autoptr(vr_libvirt_worker) w = worker_new();
	gint freed = 0;
	gint64 start;
	guint timer;

	gate_set(FALSE);
	timer = g_timeout_add(TICK_MS, tick, NULL);
	start = g_get_monotonic_time();
	submit(w, 1, TRUE, &freed);  /* holds the thread */
	submit(w, 2, FALSE, &freed); /* waits behind it */
	wait_answers(2);

	/* Both answered with a timeout, on time, in order. */
	for (guint i = 0; i < 2; i++) {
		struct answer *a = answer_at(i);
		gint64 after_ms = (a->at_us - start) / 1000;

		cr_assert_eq(a->id, i + 1);
		cr_assert(a->timeout, "expected job %u to time out, got: %s", a->id,
			  a->error ? a->error : "success");
		cr_assert(strstr(a->error, "within 300 ms"), "%s", a->error);
		cr_assert_geq(after_ms, TIMEOUT_MS - 5,
			      "job %u answered after %" G_GINT64_FORMAT " ms: too early", a->id,
			      after_ms);
		cr_assert_lt(after_ms, TIMEOUT_MS + MAX_GAP_MS,
			     "job %u answered after %" G_GINT64_FORMAT " ms: late", a->id,
			     after_ms);
	}
	/* Stalled, on the job that holds the thread. */
	cr_assert_str_eq(vr_libvirt_worker_stall_reason(w),
			 "libvirt did not answer test-job within 300 ms");
	cr_assert_eq(nr_stalled, 1, "expected the owner told once, got %u", nr_stalled);
	cr_assert_eq(vr_libvirt_worker_get_stalls(w), 1);
	cr_assert_eq(vr_libvirt_worker_get_timeouts(w), 2);

	/* The main loop kept its pace all along. */
	while (g_get_monotonic_time() - start < 2 * TIMEOUT_MS * 1000LL)
		g_main_context_iteration(NULL, TRUE);
	cr_assert_lt(max_gap_us, MAX_GAP_MS * 1000LL,
		     "the main loop's %d ms timer had a gap of %" G_GINT64_FORMAT " ms", TICK_MS,
		     max_gap_us / 1000);
	cr_assert_eq(gate_nr_waiting(), 1, "expected job 1 still hanging");

	/* libvirt answers again: the late result is dropped, job 2 skipped, a
	 * new job answered in time ends the stall. */
	gate_set(TRUE);
	submit(w, 3, FALSE, &freed);
	wait_answers(3);
	cr_assert_eq(answer_at(2)->id, 3);
	cr_assert_null(answer_at(2)->error, "%s", answer_at(2)->error);
	cr_assert_null(vr_libvirt_worker_stall_reason(w), "expected the stall over");
	cr_assert_eq(nr_recovered, 1);
	g_mutex_lock(&ran_lock);
	cr_assert_eq(ran->len, 2, "expected jobs 1 and 3 run (2 skipped), got %u", ran->len);
	cr_assert_eq(g_array_index(ran, guint, 0), 1);
	cr_assert_eq(g_array_index(ran, guint, 1), 3);
	g_mutex_unlock(&ran_lock);
	/* Nothing more comes back (job 1's late result is dropped). */
	for (int i = 0; i < 50; i++)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	cr_assert_eq(answers->len, 3);
	g_source_remove(timer);
	cr_assert(vr_libvirt_worker_free(g_steal_pointer(&w)));
	cr_assert_eq(g_atomic_int_get(&freed), 3, "expected every job's data freed");
}

Test(libvirt_worker, a_slow_but_live_libvirt_never_times_out)
{
	g_autoptr(vr_libvirt_worker) w = worker_new();
	gint freed = 0;

	struct slow_data *slow;

	/* Ten jobs of 100 ms each: the last waits 1 s, the thread shows life
	 * every 100 ms. */
	for (guint i = 1; i <= 10; i++) {
		slow = g_new0(struct slow_data, 1);
		slow->base.id = i;
		slow->base.freed = &freed;
		slow->steps = 1;
		slow->step_ms = 100;
		vr_libvirt_worker_submit(w, "test-job", slow_run, job_done, slow, job_free, NULL);
	}
	/* One of 6 x 100 ms that says so after each call... */
	slow = g_new0(struct slow_data, 1);
	slow->base.id = 11;
	slow->steps = 6;
	slow->step_ms = 100;
	slow->progress = TRUE;
	vr_libvirt_worker_submit(w, "test-job", slow_run, job_done, slow, job_free, NULL);
	wait_answers(11);
	for (guint i = 0; i < 11; i++)
		cr_assert_null(answer_at(i)->error, "job %u: %s", answer_at(i)->id,
			       answer_at(i)->error);
	cr_assert_null(vr_libvirt_worker_stall_reason(w));
	cr_assert_eq(vr_libvirt_worker_get_timeouts(w), 0);

	/* ... but one that does not is stuck past 300 ms. */
	slow = g_new0(struct slow_data, 1);
	slow->base.id = 12;
	slow->steps = 6;
	slow->step_ms = 100;
	vr_libvirt_worker_submit(w, "silent-job", slow_run, job_done, slow, job_free, NULL);
	wait_answers(12);
	cr_assert(answer_at(11)->timeout, "expected the silent job to time out");
	cr_assert_str_eq(vr_libvirt_worker_stall_reason(w),
			 "libvirt did not answer silent-job within 300 ms");
}

static struct vr_libvirt_worker *to_free;

/* A done callback that lets libvirt go on and frees the worker. */
static void free_worker_done(struct vr_libvirt_worker *w, gpointer data, const GError *error,
			     gpointer user_data)
{
	job_done(w, data, error, user_data);
	gate_set(TRUE);
	cr_assert(vr_libvirt_worker_free(g_steal_pointer(&to_free)));
}

Test(libvirt_worker, a_done_callback_may_free_the_worker)
{
	struct job_data *j = g_new0(struct job_data, 1);
	gint freed = 0;

	to_free = worker_new();
	gate_set(FALSE);
	j->id = 1;
	j->gated = TRUE;
	j->freed = &freed;
	vr_libvirt_worker_submit(to_free, "test-job", job_run, free_worker_done, j, job_free, NULL);
	submit(to_free, 2, FALSE, &freed); /* times out in the same watchdog round */
	wait_answers(1);
	for (int i = 0; i < 100; i++)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	cr_assert_null(to_free);
	cr_assert_eq(answers->len, 1, "expected nothing called after the free");
	cr_assert(answer_at(0)->timeout);
	cr_assert_eq(g_atomic_int_get(&freed), 2, "expected both jobs' data freed");
}

/* Open the gate after 200 ms, from another thread. */
static gpointer open_later(gpointer data)
{
	(void)data;
	g_usleep(200 * 1000);
	gate_set(TRUE);
	return NULL;
}

Test(libvirt_worker, free_waits_for_the_job_and_calls_nothing_back)
{
	struct vr_libvirt_worker *w = worker_new();
	gint freed = 0;
	GThread *opener;

	gate_set(FALSE);
	submit(w, 1, TRUE, &freed);
	submit(w, 2, FALSE, &freed);
	while (gate_nr_waiting() == 0)
		g_usleep(1000);
	opener = g_thread_new("opener", open_later, NULL);
	cr_assert(vr_libvirt_worker_free(w), "expected the thread joined once the job ended");
	g_thread_join(opener);
	for (int i = 0; i < 50; i++)
		g_main_context_iteration(NULL, FALSE);
	cr_assert_eq(answers->len, 0, "expected no callback after free");
	cr_assert_eq(g_atomic_int_get(&freed), 2, "expected both jobs' data freed");
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 1);
}

Test(libvirt_worker, a_thread_blocked_for_good_is_left_to_finish_alone)
{
	struct vr_libvirt_worker *w = worker_new();
	gint freed = 0;
	gint64 start;

	gate_set(FALSE);
	submit(w, 1, TRUE, &freed);
	while (gate_nr_waiting() == 0)
		g_usleep(1000);
	start = g_get_monotonic_time();
	cr_assert_not(vr_libvirt_worker_free(w), "expected the thread left behind");
	cr_assert_lt((g_get_monotonic_time() - start) / 1000, VR_LIBVIRT_WORKER_JOIN_MS + 1000,
		     "expected free to give up after %d ms", VR_LIBVIRT_WORKER_JOIN_MS);
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 0);
	/* When libvirt answers at last, the thread cleans up and exits. */
	gate_set(TRUE);
	for (int i = 0; i < WAIT_MS && !g_atomic_int_get(&thread_data_freed); i++)
		g_usleep(1000);
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 1, "expected the thread data freed");
	/* The thread drops its last reference right after: let it, before
	 * the leak checker looks at this process. */
	g_usleep(100 * 1000);
	for (int i = 0; i < 50; i++)
		g_main_context_iteration(NULL, FALSE);
	cr_assert_eq(answers->len, 0, "expected no callback after free");
	cr_assert_eq(g_atomic_int_get(&freed), 1);
}

Test(libvirt_worker, too_many_jobs_waiting_are_refused)
{
	g_autoptr(vr_libvirt_worker) w = worker_new();

	gate_set(FALSE);
	for (guint i = 0; i <= VR_LIBVIRT_WORKER_MAX_QUEUED; i++)
		submit(w, i, i == 0, NULL);
	cr_assert_eq(answers->len, 0, "expected no answer from within submit");
	wait_answers(1);
	cr_assert_eq(answer_at(0)->id, VR_LIBVIRT_WORKER_MAX_QUEUED,
		     "expected the job past the limit answered first");
	cr_assert(strstr(answer_at(0)->error, "requests waiting already"), "%s",
		  answer_at(0)->error);
	gate_set(TRUE);
}
