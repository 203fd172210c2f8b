/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the job pool (hostd/job-pool.c), the base of libvirt's
 * worker and the QEMU monitors' workers: jobs off the main loop.
 *
 * The jobs are the test's own: each records the thread it ran on, and one
 * kind waits at a gate the test opens (a peer that stopped answering).
 * Covered: jobs run on a pool thread, one queue's one at a time and in
 * order, and are answered on the main context in order, never from within
 * submit; a job past its deadline is noticed (the owner is told which job
 * holds the thread) and answered with the owner's error, its late result
 * dropped; an owner may look again later instead, or rest until the next
 * answer; a job's signs of life keep its deadline away; a refusal is
 * answered out of order without running; a done callback may free the
 * queue; free drops the jobs not started, frees the thread data on a pool
 * thread once the running job ends and calls nothing back (but @returned),
 * and gives up waiting for a thread blocked for good; a pool of one thread
 * held by a stalled job serves another queue once it gets a thread more;
 * the stall state is kept. Run under ASan too: nothing leaks.
 *
 * Criterion runs every test in its own process: the gate is a global.
 */
#include <criterion/criterion.h>

#include <gio/gio.h>
#include <glib.h>
#include <string.h>

#include "job-pool.h"
#include "test-gate.h"

/* The jobs' deadline, ms: short, so that tests are. */
#define TIMEOUT_MS 200
/* The longest a test waits for something, ms. */
#define WAIT_MS 5000

/**
 * struct test_job - a test job.
 * @base:	the pool's part.
 * @id:		which job.
 * @gated:	it waits at the gate.
 * @progress:	it says it is alive every 50 ms this many times first.
 * @fail:	it fails with "job ID failed".
 */
struct test_job {
	struct vr_job base;
	guint id;
	gboolean gated;
	guint progress;
	gboolean fail;
};

/**
 * struct answer - one done callback's record.
 * @id:		the job's.
 * @on_main:	it ran on the main thread.
 * @ran_on_main: the job ran on the main thread.
 * @error:	the error's message, NULL on success.
 */
struct answer {
	guint id;
	gboolean on_main;
	gboolean ran_on_main;
	char *error;
};

/**
 * struct job_data - a job's data.
 * @freed:	counts freed data (atomic, the test's).
 * @ran_on:	the thread it ran on.
 * @running:	counts jobs running now, to catch two side by side (the
 *		test's).
 * @overlap:	set when two ran side by side (the test's).
 */
struct job_data {
	gint *freed;
	GThread *ran_on;
	gint *running;
	gint *overlap;
};

/* The queue's thread data and owner, checked by the callbacks. */
static char the_thread_data[] = "thread data";
static char owner_name[] = "owner";

static GThread *main_thread;
static GArray *answers;
static gint thread_data_freed;
static GThread *thread_data_freed_on;
static guint nr_overdue, nr_returned;
static char *last_running;
/* What the owner's overdue does: answer (0), look again in this many ms,
 * or rest (G_MAXUINT). */
static guint overdue_again_ms;
/* Set by a done callback that frees the queue. */
static struct vr_job_queue *free_from_done;

static void answer_clear(gpointer data)
{
	struct answer *a = data;

	g_free(a->error);
}

static void setup(void)
{
	main_thread = g_thread_self();
	answers = g_array_new(FALSE, TRUE, sizeof(struct answer));
	g_array_set_clear_func(answers, answer_clear);
}

static void teardown(void)
{
	gate_set(TRUE);
	g_array_unref(answers);
	g_free(last_running);
}

TestSuite(job_pool, .init = setup, .fini = teardown, .description = "the job pool");

/* ---- the owner's policy ----------------------------------------------------- */

static gboolean test_run(struct vr_job *job, gpointer thread_data, GError **error)
{
	struct test_job *j = (struct test_job *)job;
	struct job_data *d = job->data;

	cr_assert_str_eq(thread_data, "thread data");
	d->ran_on = g_thread_self();
	if (d->running && g_atomic_int_add(d->running, 1) > 0)
		g_atomic_int_set(d->overlap, 1);
	if (j->gated)
		gate_pass();
	for (guint i = 0; i < j->progress; i++) {
		g_usleep(50 * 1000);
		vr_job_queue_progress();
	}
	g_usleep(2000); /* long enough for another job to overlap */
	if (d->running)
		g_atomic_int_add(d->running, -1);
	if (j->fail) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "job %u failed", j->id);
		return FALSE;
	}
	return TRUE;
}

static void test_returned(struct vr_job *job)
{
	(void)job;
	cr_assert_eq(g_thread_self(), main_thread);
	nr_returned++;
}

static void test_done(struct vr_job *job, const GError *error, gpointer owner)
{
	struct test_job *j = (struct test_job *)job;
	struct job_data *d = job->data;
	struct answer a = {
		.id = j->id,
		.on_main = g_thread_self() == main_thread,
		.ran_on_main = d->ran_on == main_thread,
		.error = error ? g_strdup(error->message) : NULL,
	};

	cr_assert_str_eq(owner, "owner");
	g_array_append_val(answers, a);
	if (free_from_done)
		cr_assert(vr_job_queue_free(g_steal_pointer(&free_from_done), WAIT_MS));
}

static guint test_overdue(struct vr_job *head, const char *running, gpointer owner, GError **answer)
{
	cr_assert_eq(g_thread_self(), main_thread);
	cr_assert_str_eq(owner, "owner");
	nr_overdue++;
	g_free(last_running);
	last_running = g_strdup(running);
	if (overdue_again_ms == G_MAXUINT)
		return 0;
	if (overdue_again_ms)
		return overdue_again_ms;
	g_set_error(answer, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "no answer to %s", head->what);
	return 0;
}

static const struct vr_job_queue_ops test_ops = {
	.run = test_run,
	.returned = test_returned,
	.done = test_done,
	.overdue = test_overdue,
};

static void thread_data_free(gpointer data)
{
	cr_assert_str_eq(data, "thread data");
	thread_data_freed_on = g_thread_self();
	g_atomic_int_inc(&thread_data_freed);
}

static void job_data_free(gpointer data)
{
	struct job_data *d = data;

	g_atomic_int_inc(d->freed);
	g_free(d);
}

static struct vr_job_queue *queue_new(struct vr_job_pool *pool)
{
	return vr_job_queue_new(pool, TIMEOUT_MS, the_thread_data, thread_data_free, &test_ops,
				owner_name);
}

static struct test_job *job_new(guint id, gint *freed)
{
	struct test_job *j = g_new0(struct test_job, 1);
	struct job_data *d = g_new0(struct job_data, 1);

	d->freed = freed;
	vr_job_init(&j->base, "test-job", d, job_data_free, NULL);
	j->id = id;
	return j;
}

static void submit(struct vr_job_queue *q, guint id, gboolean gated, gint *freed)
{
	struct test_job *j = job_new(id, freed);

	j->gated = gated;
	vr_job_queue_submit(q, &j->base);
}

static struct vr_job_pool *pool_new(guint threads)
{
	g_autoptr(GError) error = NULL;
	struct vr_job_pool *pool = vr_job_pool_new("vr-test-pool", threads, &error);

	cr_assert_not_null(pool, "%s", error ? error->message : "?");
	return pool;
}

/* Iterate the main context, about every ms, while @cond holds, WAIT_MS at
 * most. */
#define ITERATE_WHILE(cond)                                                                        \
	for (int i_ = 0; i_ < WAIT_MS && (cond); i_++) {                                           \
		g_main_context_iteration(NULL, FALSE);                                             \
		g_usleep(1000);                                                                    \
	}

/* Iterate the main context for about @ms. */
static void iterate_ms(guint ms)
{
	gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;

	while (g_get_monotonic_time() < until) {
		g_main_context_iteration(NULL, FALSE);
		g_usleep(1000);
	}
}

/* Wait until a pool thread freed the thread data (or WAIT_MS passed). */
static void wait_thread_data_freed(void)
{
	for (int i = 0; i < WAIT_MS && !g_atomic_int_get(&thread_data_freed); i++)
		g_usleep(1000);
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 1, "expected the thread data freed");
	cr_assert_neq(thread_data_freed_on, main_thread, "expected it freed on a pool thread");
}

/* Iterate the main context until @n answers came (or WAIT_MS passed). */
static void wait_answers(guint n)
{
	ITERATE_WHILE(answers->len < n);
	cr_assert_eq(answers->len, n, "expected %u answers, got %u", n, answers->len);
}

static void wait_gate(guint n)
{
	for (int i = 0; i < WAIT_MS && gate_nr_waiting() < n; i++)
		g_usleep(1000);
	cr_assert_eq(gate_nr_waiting(), n, "expected %u jobs at the gate", n);
}

static struct answer *answer_at(guint i)
{
	return &g_array_index(answers, struct answer, i);
}

/* ---- the tests ----------------------------------------------------------------- */

Test(job_pool, jobs_run_off_the_main_thread_and_answer_in_order)
{
	struct vr_job_pool *pool = pool_new(3);
	struct vr_job_queue *q = queue_new(pool);
	gint freed = 0, running = 0, overlap = 0;

	for (guint i = 1; i <= 8; i++) {
		struct test_job *j = job_new(i, &freed);
		struct job_data *d = j->base.data;

		d->running = &running;
		d->overlap = &overlap;
		j->fail = i == 4;
		vr_job_queue_submit(q, &j->base);
	}
	cr_assert_eq(answers->len, 0, "expected no answer from within submit");
	cr_assert_eq(vr_job_queue_pending(q), 8);
	wait_answers(8);
	for (guint i = 0; i < 8; i++) {
		struct answer *a = answer_at(i);

		cr_assert_eq(a->id, i + 1, "answer %u: expected job %u, got %u", i, i + 1, a->id);
		cr_assert(a->on_main, "expected job %u answered on the main thread", a->id);
		cr_assert_not(a->ran_on_main, "expected job %u run on a pool thread", a->id);
		if (a->id == 4)
			cr_assert_str_eq(a->error, "job 4 failed");
		else
			cr_assert_null(a->error, "job %u: %s", a->id, a->error);
	}
	cr_assert_not(g_atomic_int_get(&overlap), "expected one queue's jobs one at a time");
	cr_assert_eq(vr_job_queue_pending(q), 0);
	cr_assert_eq(nr_overdue, 0);
	cr_assert_eq(nr_returned, 8);
	cr_assert(vr_job_queue_free(q, WAIT_MS), "expected the thread data freed in time");
	cr_assert_eq(g_atomic_int_get(&freed), 8, "expected every job's data freed");
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 1);
	cr_assert_neq(thread_data_freed_on, main_thread, "expected it freed on a pool thread");
	vr_job_pool_free(pool, TRUE);
}

Test(job_pool, a_stalled_job_is_noticed_and_answered_and_its_result_dropped)
{
	struct vr_job_pool *pool = pool_new(1);
	struct vr_job_queue *q = queue_new(pool);
	gint freed = 0;
	struct test_job *j;
	gint64 start = g_get_monotonic_time(), took_ms;

	gate_set(FALSE);
	submit(q, 1, TRUE, &freed);
	j = job_new(2, &freed);
	j->base.what = "behind";
	vr_job_queue_submit(q, &j->base);
	wait_answers(2);
	took_ms = (g_get_monotonic_time() - start) / 1000;
	cr_assert_geq(took_ms, TIMEOUT_MS, "expected no answer before the deadline");
	cr_assert_eq(nr_overdue, 2);
	cr_assert_str_eq(last_running, "test-job", "expected the job holding the thread named");
	cr_assert_str_eq(answer_at(0)->error, "no answer to test-job");
	cr_assert_str_eq(answer_at(1)->error, "no answer to behind");
	cr_assert_eq(vr_job_queue_pending(q), 0);

	/* The stall state is the owner's to set and end. */
	cr_assert(vr_job_queue_stall(q, g_strdup("first")));
	cr_assert_not(vr_job_queue_stall(q, g_strdup("second")));
	cr_assert_str_eq(vr_job_queue_stall_reason(q), "first");
	cr_assert_eq(vr_job_queue_get_stalls(q), 1);

	/* The late result is dropped, the job behind skipped; data freed. */
	gate_set(TRUE);
	ITERATE_WHILE(nr_returned < 1 || g_atomic_int_get(&freed) < 2);
	cr_assert_eq(nr_returned, 1, "expected the late result back, the skipped job not run");
	cr_assert_eq(g_atomic_int_get(&freed), 2);
	cr_assert_eq(answers->len, 2, "expected no second answer");

	submit(q, 3, FALSE, &freed);
	wait_answers(3);
	cr_assert_null(answer_at(2)->error);
	{
		gint64 stalled_us = 0;

		cr_assert(vr_job_queue_recover(q, &stalled_us));
		cr_assert_gt(stalled_us, 0);
		cr_assert_null(vr_job_queue_stall_reason(q));
		cr_assert_not(vr_job_queue_recover(q, NULL));
	}
	cr_assert(vr_job_queue_free(q, WAIT_MS));
	vr_job_pool_free(pool, TRUE);
}

Test(job_pool, an_owner_may_look_again_later_or_rest)
{
	struct vr_job_pool *pool = pool_new(1);
	struct vr_job_queue *q = queue_new(pool);
	gint freed = 0;

	gate_set(FALSE);
	overdue_again_ms = 50;
	submit(q, 1, TRUE, &freed);
	ITERATE_WHILE(nr_overdue < 3);
	cr_assert_geq(nr_overdue, 3, "expected the watchdog to look again");
	overdue_again_ms = G_MAXUINT;
	iterate_ms(200);
	{
		guint seen = nr_overdue;

		iterate_ms(3 * TIMEOUT_MS);
		cr_assert_eq(nr_overdue, seen, "expected the watchdog to rest");
	}
	cr_assert_eq(answers->len, 0);
	gate_set(TRUE);
	wait_answers(1);
	cr_assert_null(answer_at(0)->error, "expected the job's own answer");
	cr_assert(vr_job_queue_free(q, WAIT_MS));
	vr_job_pool_free(pool, TRUE);
}

Test(job_pool, signs_of_life_keep_the_deadline_away)
{
	struct vr_job_pool *pool = pool_new(1);
	struct vr_job_queue *q = queue_new(pool);
	gint freed = 0;
	struct test_job *j = job_new(1, &freed);

	/* 12 x 50 ms = 600 ms: three deadlines, each call alive in time. */
	j->progress = 12;
	vr_job_queue_submit(q, &j->base);
	wait_answers(1);
	cr_assert_null(answer_at(0)->error);
	cr_assert_eq(nr_overdue, 0, "expected no deadline passed");
	cr_assert(vr_job_queue_free(q, WAIT_MS));
	vr_job_pool_free(pool, TRUE);
}

Test(job_pool, a_refusal_is_answered_out_of_order_without_running)
{
	struct vr_job_pool *pool = pool_new(1);
	struct vr_job_queue *q = queue_new(pool);
	g_autoptr(GError) busy = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_BUSY, "busy");
	gint freed = 0;
	struct test_job *j;

	gate_set(FALSE);
	submit(q, 1, TRUE, &freed);
	j = job_new(2, &freed);
	vr_job_queue_refuse(q, &j->base, busy);
	cr_assert_eq(answers->len, 0, "expected no answer from within refuse");
	cr_assert_eq(vr_job_queue_pending(q), 1);
	wait_answers(1);
	cr_assert_eq(answer_at(0)->id, 2);
	cr_assert_str_eq(answer_at(0)->error, "busy");
	cr_assert_eq(g_atomic_int_get(&freed), 1);
	gate_set(TRUE);
	wait_answers(2);
	cr_assert_eq(answer_at(1)->id, 1);
	cr_assert_eq(nr_returned, 1, "expected the refused job never run");
	cr_assert(vr_job_queue_free(q, WAIT_MS));
	vr_job_pool_free(pool, TRUE);
}

Test(job_pool, a_done_callback_may_free_the_queue)
{
	struct vr_job_pool *pool = pool_new(1);
	struct vr_job_queue *q = queue_new(pool);
	gint freed = 0;

	submit(q, 1, FALSE, &freed);
	submit(q, 2, FALSE, &freed);
	free_from_done = q;
	wait_answers(1);
	iterate_ms(100);
	cr_assert_eq(answers->len, 1, "expected nothing after the queue was freed");
	cr_assert_eq(g_atomic_int_get(&freed), 2);
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 1);
	vr_job_pool_free(pool, TRUE);
}

Test(job_pool, free_with_jobs_in_flight_frees_everything_and_calls_nothing_back)
{
	struct vr_job_pool *pool = pool_new(2);
	struct vr_job_queue *q = queue_new(pool);
	gint freed = 0;

	gate_set(FALSE);
	submit(q, 1, TRUE, &freed);
	submit(q, 2, FALSE, &freed);
	submit(q, 3, FALSE, &freed);
	wait_gate(1);
	cr_assert_not(vr_job_queue_free(q, 0), "expected the running job to hold the data");
	cr_assert_eq(g_atomic_int_get(&freed), 2, "expected the jobs not started dropped");
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 0);
	gate_set(TRUE);
	wait_thread_data_freed();
	ITERATE_WHILE(nr_returned < 1);
	cr_assert_eq(nr_returned, 1, "expected @returned even after free");
	cr_assert_eq(answers->len, 0, "expected no callback after free");
	cr_assert_eq(g_atomic_int_get(&freed), 3);
	vr_job_pool_free(pool, TRUE);
}

Test(job_pool, free_gives_up_on_a_thread_blocked_for_good)
{
	struct vr_job_pool *pool = pool_new(1);
	struct vr_job_queue *q = queue_new(pool);
	gint freed = 0;
	gint64 start;

	gate_set(FALSE);
	submit(q, 1, TRUE, &freed);
	wait_gate(1);
	start = g_get_monotonic_time();
	cr_assert_not(vr_job_queue_free(q, 300), "expected the thread left behind");
	cr_assert_geq((g_get_monotonic_time() - start) / 1000, 300, "expected it waited");
	vr_job_pool_free(pool, FALSE);
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 0);
	gate_set(TRUE);
	wait_thread_data_freed();
	/* The thread drops its last references right after: let it, and the
	 * late result's source go, before the leak checker looks. */
	iterate_ms(100);
	cr_assert_eq(answers->len, 0);
	cr_assert_eq(g_atomic_int_get(&freed), 1);
}

Test(job_pool, a_held_pool_serves_another_queue_with_a_thread_more)
{
	struct vr_job_pool *pool = pool_new(1);
	struct vr_job_queue *held = queue_new(pool);
	struct vr_job_queue *other = queue_new(pool);
	gint freed = 0;

	gate_set(FALSE);
	overdue_again_ms = G_MAXUINT;
	submit(held, 1, TRUE, &freed);
	wait_gate(1);
	submit(other, 2, FALSE, &freed);
	iterate_ms(2 * TIMEOUT_MS);
	cr_assert_eq(answers->len, 0, "expected the other queue to wait for the one thread");
	vr_job_pool_add_threads(pool, 1);
	wait_answers(1);
	cr_assert_eq(answer_at(0)->id, 2);
	vr_job_pool_add_threads(pool, -1);
	gate_set(TRUE);
	wait_answers(2);
	cr_assert_eq(answer_at(1)->id, 1);
	cr_assert(vr_job_queue_free(held, WAIT_MS));
	cr_assert(vr_job_queue_free(other, WAIT_MS));
	cr_assert_eq(g_atomic_int_get(&thread_data_freed), 2);
	cr_assert_eq(g_atomic_int_get(&freed), 2);
	vr_job_pool_free(pool, TRUE);
}

Test(job_pool, format_ms_says_seconds_when_whole)
{
	g_autofree char *s = vr_job_format_ms(5000);
	g_autofree char *ms = vr_job_format_ms(1500);

	cr_assert_str_eq(s, "5 s");
	cr_assert_str_eq(ms, "1500 ms");
}
