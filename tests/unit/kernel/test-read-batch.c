/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the batched file reader (kernel/read-batch.c), with io_uring
 * and with pread(2): files in a temporary folder that change, vanish, grow
 * too long or cannot be read, and real procfs files of this process and of a
 * child process that exits. Tests needing io_uring skip where it is not
 * available. Parameter structs hold no pointers (Criterion re-executes the
 * binary for each test).
 */
#define _GNU_SOURCE /* prctl() */

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procfs-text.h"
#include "read-batch.h"
#include "test-fake-tree.h"
#include "test-messages.h"

/* The kernel's procfs: these tests read real files of processes there. */
#define PROCFS_ROOT "/proc"

#define MIB (1024 * 1024)

static char *tmp;	/* this test's temporary folder */
static pid_t child_pid; /* a child still to stop, or 0 */

static void setup(void)
{
	tmp = tree_new();
}

static void teardown(void)
{
	if (child_pid > 0) {
		kill(child_pid, SIGKILL);
		waitpid(child_pid, NULL, 0);
		child_pid = 0;
	}
	tree_rm(tmp);
	g_free(tmp);
}

TestSuite(read_batch, .init = setup, .fini = teardown);

/* How a parameterized test reads: with io_uring or pread(2). */
struct mode {
	bool use_uring;
	char name[8];
};

static struct mode modes[] = {
	{ true, "uring" },
	{ false, "pread" },
};

/* A batch in mode @m; skips the test when io_uring is wanted but missing. */
static struct vr_read_batch *batch_new(const struct mode *m)
{
	g_autoptr(GError) error = NULL;
	struct vr_read_batch *b = vr_read_batch_new(m->use_uring, &error);

	cr_assert_not_null(b, "%s: a new batch should work: %s", m->name,
			   error ? error->message : "");
	if (m->use_uring && !vr_read_batch_uses_uring(b)) {
		vr_read_batch_free(b);
		cr_skip_test("io_uring is not available on this machine");
	}
	cr_assert_eq(vr_read_batch_uses_uring(b), m->use_uring, "%s: uses_uring", m->name);
	return b;
}

/* @tmp/@rel (owned). */
static char *tmp_path(const char *rel)
{
	return g_build_filename(tmp, rel, NULL);
}

/* Overwrite @path in place (same inode: an open descriptor sees it). */
static void rewrite(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	size_t len = strlen(text);

	cr_assert(fd >= 0, "cannot open %s: %s", path, g_strerror(errno));
	cr_assert_eq(write(fd, text, len), (ssize_t)len, "cannot write %s", path);
	close(fd);
}

static guint add_ok(struct vr_read_batch *b, const char *path)
{
	g_autoptr(GError) error = NULL;
	guint id = vr_read_batch_add(b, path, &error);

	cr_assert(id > 0, "adding %s should work: %s", path, error ? error->message : "");
	return id;
}

static void run_ok(struct vr_read_batch *b, const char *what)
{
	g_autoptr(GError) error = NULL;

	cr_assert(vr_read_batch_run(b, &error), "%s: the run should work: %s", what,
		  error ? error->message : "");
}

/* File @id holds exactly @want after the last run. */
static void expect_text(struct vr_read_batch *b, guint id, const char *want, const char *what)
{
	const GError *file_error = NULL;
	gsize len = 0;
	const char *text = vr_read_batch_text(b, id, &len, &file_error);

	cr_assert_not_null(text, "%s: expected a text, got the error: %s", what,
			   file_error ? file_error->message : "(none)");
	cr_assert_null(file_error, "%s: a text comes without an error", what);
	cr_assert_str_eq(text, want, "%s: expected '%s', got '%s'", what, want, text);
	cr_assert_eq(len, strlen(want), "%s: expected %zu bytes, got %zu", what, strlen(want), len);
}

/* File @id failed in the last run with @code, the message naming @path and
 * one of @words ('|'-separated). */
static void expect_failed(struct vr_read_batch *b, guint id, int code, const char *path,
			  const char *words, const char *what)
{
	const GError *file_error = NULL;
	gsize len = 7;
	const char *text = vr_read_batch_text(b, id, &len, &file_error);

	cr_assert_null(text, "%s: expected no text, got '%s'", what, text);
	cr_assert_eq(len, 0, "%s: no text has length 0", what);
	cr_assert_not_null(file_error, "%s: expected an error", what);
	cr_assert(g_error_matches(file_error, VR_READ_BATCH_ERROR, code),
		  "%s: expected error code %d, got %d: %s", what, code, file_error->code,
		  file_error->message);
	cr_assert(strstr(file_error->message, path), "%s: the error should name %s, got: %s", what,
		  path, file_error->message);
	cr_assert(msg_has_any(file_error->message, words), "%s: the error should say %s, got: %s",
		  what, words, file_error->message);
}

ParameterizedTestParameters(read_batch, rereads_changed_files)
{
	return cr_make_param_array(struct mode, modes, G_N_ELEMENTS(modes));
}

ParameterizedTest(struct mode *m, read_batch, rereads_changed_files)
{
	g_autoptr(vr_read_batch) b = batch_new(m);
	g_autofree char *pa = tmp_path("a");
	g_autofree char *pb = tmp_path("b");
	g_autofree char *pe = tmp_path("empty");
	guint a, bb, e;

	tree_put(tmp, "a", "first text of a, fairly long\n");
	tree_put(tmp, "b", "b1");
	tree_put(tmp, "empty", "");
	a = add_ok(b, pa);
	bb = add_ok(b, pb);
	e = add_ok(b, pe);
	cr_assert(a != bb && bb != e && a != e, "%s: ids are distinct", m->name);
	cr_assert_eq(vr_read_batch_nr_files(b), 3, "%s: three files", m->name);
	cr_assert_str_eq(vr_read_batch_path(b, bb), pb, "%s: the path of b", m->name);
	expect_failed(b, a, VR_READ_BATCH_ERROR_NOT_READ, pa, "not been read", "before a run");

	run_ok(b, "first run");
	expect_text(b, a, "first text of a, fairly long\n", "a, first run");
	expect_text(b, bb, "b1", "b, first run");
	expect_text(b, e, "", "an empty file");

	/* shorter and longer, each in place: the open descriptor sees it */
	rewrite(pa, "short");
	rewrite(pb, "b2, now longer than before");
	run_ok(b, "second run");
	expect_text(b, a, "short", "a, shorter: no tail of the old text");
	expect_text(b, bb, "b2, now longer than before", "b, longer");
	run_ok(b, "third run");
	expect_text(b, a, "short", "a, unchanged");
}

ParameterizedTestParameters(read_batch, skipped_file_keeps_its_text)
{
	return cr_make_param_array(struct mode, modes, G_N_ELEMENTS(modes));
}

/* A skipped file is not read and keeps its last text; unskipped, it is read
 * again. */
ParameterizedTest(struct mode *m, read_batch, skipped_file_keeps_its_text)
{
	g_autoptr(vr_read_batch) b = batch_new(m);
	g_autofree char *pa = tmp_path("a");
	g_autofree char *pb = tmp_path("b");
	guint a, bb;

	tree_put(tmp, "a", "a1");
	tree_put(tmp, "b", "b1");
	a = add_ok(b, pa);
	bb = add_ok(b, pb);
	run_ok(b, "first run");
	cr_assert(vr_read_batch_set_skip(b, a, TRUE), "%s: skip a", m->name);
	cr_assert_not(vr_read_batch_set_skip(b, a + bb + 1, TRUE), "%s: no such file", m->name);
	rewrite(pa, "a2");
	rewrite(pb, "b2");
	run_ok(b, "a skipped");
	expect_text(b, a, "a1", "a, skipped: its last text");
	expect_text(b, bb, "b2", "b, read");
	cr_assert(vr_read_batch_set_skip(b, a, FALSE), "%s: read a again", m->name);
	run_ok(b, "a read again");
	expect_text(b, a, "a2", "a, read again");
}

ParameterizedTestParameters(read_batch, too_long_file_fails_alone)
{
	return cr_make_param_array(struct mode, modes, G_N_ELEMENTS(modes));
}

ParameterizedTest(struct mode *m, read_batch, too_long_file_fails_alone)
{
	g_autoptr(vr_read_batch) b = batch_new(m);
	g_autofree char *full = g_strnfill(VR_READ_BATCH_MAX_BYTES, 'x');
	g_autofree char *over = g_strnfill(VR_READ_BATCH_MAX_BYTES + 1, 'y');
	g_autofree char *p_full = tmp_path("full");
	g_autofree char *p_over = tmp_path("over");
	g_autofree char *p_small = tmp_path("small");
	guint id_full, id_over, id_small;

	tree_put(tmp, "full", full);
	tree_put(tmp, "over", over);
	tree_put(tmp, "small", "small");
	id_full = add_ok(b, p_full);
	id_over = add_ok(b, p_over);
	id_small = add_ok(b, p_small);
	run_ok(b, m->name);
	expect_text(b, id_full, full, "a file of exactly the most bytes");
	expect_failed(b, id_over, VR_READ_BATCH_ERROR_TOO_LONG, p_over, "longer than 65536",
		      "one byte too long");
	expect_text(b, id_small, "small", "the file next to a too long one");

	/* shrinking it makes it readable again */
	rewrite(p_over, "fits now");
	run_ok(b, m->name);
	expect_text(b, id_over, "fits now", "the shrunk file");
}

ParameterizedTestParameters(read_batch, failing_files_fail_alone)
{
	return cr_make_param_array(struct mode, modes, G_N_ELEMENTS(modes));
}

ParameterizedTest(struct mode *m, read_batch, failing_files_fail_alone)
{
	g_autoptr(vr_read_batch) b = batch_new(m);
	g_autoptr(GError) error = NULL;
	g_autofree char *p_dir = tmp_path("dir");
	g_autofree char *p_gone = tmp_path("gone");
	g_autofree char *p_kept = tmp_path("kept");
	guint id_dir, id_gone, id_kept;

	tree_mkdir(tmp, "dir");
	tree_put(tmp, "gone", "soon removed");
	tree_put(tmp, "kept", "kept");
	id_dir = add_ok(b, p_dir);
	id_gone = add_ok(b, p_gone);
	id_kept = add_ok(b, p_kept);
	run_ok(b, "first run");
	expect_failed(b, id_dir, VR_READ_BATCH_ERROR_IO, p_dir, "directory", "a directory");
	expect_text(b, id_gone, "soon removed", "before the removal");

	/* removed: the open descriptor still reads it; reopening fails */
	tree_unlink(tmp, "gone");
	run_ok(b, "after the removal");
	expect_text(b, id_gone, "soon removed", "removed but still open");
	cr_assert_not(vr_read_batch_reopen(b, id_gone, &error), "%s: reopening a removed file",
		      m->name);
	cr_assert(g_error_matches(error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_GONE) &&
			  strstr(error->message, p_gone),
		  "%s: expected a GONE error naming %s, got: %s", m->name, p_gone, error->message);
	run_ok(b, "after the failed reopen");
	expect_failed(b, id_gone, VR_READ_BATCH_ERROR_GONE, p_gone, "does not exist",
		      "the file that could not be reopened");
	expect_text(b, id_kept, "kept", "the others still read");
	cr_assert_eq(vr_read_batch_nr_files(b), 3, "%s: a failing file stays in the batch",
		     m->name);

	/* back again: a reopen finds it */
	tree_put(tmp, "gone", "back");
	g_clear_error(&error);
	cr_assert(vr_read_batch_reopen(b, id_gone, &error), "%s: reopening should work: %s",
		  m->name, error ? error->message : "");
	expect_failed(b, id_gone, VR_READ_BATCH_ERROR_NOT_READ, p_gone, "not been read",
		      "reopened, not read yet");
	run_ok(b, "after the reopen");
	expect_text(b, id_gone, "back", "the reopened file");
}

ParameterizedTestParameters(read_batch, files_of_an_exited_process_fail)
{
	return cr_make_param_array(struct mode, modes, G_N_ELEMENTS(modes));
}

ParameterizedTest(struct mode *m, read_batch, files_of_an_exited_process_fail)
{
	static const char *const names[] = { "status", "smaps_rollup", "stat" };
	g_autoptr(vr_read_batch) b = batch_new(m);
	g_autofree char *p_self = g_build_filename(PROCFS_ROOT, "self", "stat", NULL);
	g_autofree char *p_pid = NULL;
	guint ids[G_N_ELEMENTS(names)], id_self;
	struct vr_proc_status st;
	g_autoptr(GError) error = NULL;

	if (!g_file_test(p_self, G_FILE_TEST_EXISTS))
		cr_skip_test("no procfs at %s", PROCFS_ROOT);
	child_pid = fork();
	cr_assert(child_pid >= 0, "fork failed: %s", g_strerror(errno));
	if (child_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
		for (;;)
			pause();
	}
	p_pid = g_strdup_printf("%s/%d", PROCFS_ROOT, (int)child_pid);
	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *p = g_build_filename(p_pid, names[i], NULL);

		ids[i] = add_ok(b, p);
	}
	id_self = add_ok(b, p_self);
	run_ok(b, "child alive");
	cr_assert(vr_proc_status_parse(vr_read_batch_text(b, ids[0], NULL, NULL), "child status",
				       &st, &error),
		  "%s: the live child's status should parse: %s", m->name,
		  error ? error->message : "");
	cr_assert(st.vm_rss_bytes > 0, "%s: the live child has a resident size", m->name);

	cr_assert_eq(kill(child_pid, SIGKILL), 0, "cannot stop the child");
	cr_assert_eq(waitpid(child_pid, NULL, 0), child_pid, "cannot reap the child");
	child_pid = 0;
	run_ok(b, "child gone");
	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *p = g_build_filename(p_pid, names[i], NULL);

		expect_failed(b, ids[i], VR_READ_BATCH_ERROR_GONE, p, "exited", names[i]);
	}
	cr_assert_not_null(vr_read_batch_text(b, id_self, NULL, NULL),
			   "%s: this process's stat still reads", m->name);
}

ParameterizedTestParameters(read_batch, procfs_files_are_read_again)
{
	return cr_make_param_array(struct mode, modes, G_N_ELEMENTS(modes));
}

/* A seq_file read again at offset 0 gives the new text: this process's
 * resident size grows by what it touches between two runs. */
ParameterizedTest(struct mode *m, read_batch, procfs_files_are_read_again)
{
	g_autoptr(vr_read_batch) b = batch_new(m);
	g_autofree char *path = g_build_filename(PROCFS_ROOT, "self", "status", NULL);
	g_autofree char *mem = NULL;
	g_autoptr(GError) error = NULL;
	struct vr_proc_status before, after;
	guint id;

	if (!g_file_test(path, G_FILE_TEST_EXISTS))
		cr_skip_test("no procfs at %s", PROCFS_ROOT);
	id = add_ok(b, path);
	run_ok(b, "before");
	cr_assert(vr_proc_status_parse(vr_read_batch_text(b, id, NULL, NULL), path, &before,
				       &error),
		  "%s: status should parse: %s", m->name, error ? error->message : "");
	mem = g_malloc(64 * MIB);
	memset(mem, 1, 64 * MIB);
	run_ok(b, "after");
	cr_assert(vr_proc_status_parse(vr_read_batch_text(b, id, NULL, NULL), path, &after, &error),
		  "%s: status should parse: %s", m->name, error ? error->message : "");
	cr_assert(after.vm_rss_bytes >= before.vm_rss_bytes + 48 * MIB,
		  "%s: touching 64 MiB should show in the second run's VmRSS: %" PRIu64
		  " then %" PRIu64 " bytes",
		  m->name, before.vm_rss_bytes, after.vm_rss_bytes);
	cr_assert_eq(mem[64 * MIB - 1], 1, "the memory stays touched until here");
}

ParameterizedTestParameters(read_batch, removed_files_and_ids)
{
	return cr_make_param_array(struct mode, modes, G_N_ELEMENTS(modes));
}

ParameterizedTest(struct mode *m, read_batch, removed_files_and_ids)
{
	g_autoptr(vr_read_batch) b = batch_new(m);
	g_autofree char *pa = tmp_path("a");
	g_autofree char *pb = tmp_path("b");
	g_autoptr(GError) error = NULL;
	const GError *file_error = NULL;
	guint a, bb, again;

	tree_put(tmp, "a", "A");
	tree_put(tmp, "b", "B");
	a = add_ok(b, pa);
	bb = add_ok(b, pb);
	run_ok(b, "both");
	cr_assert(vr_read_batch_remove(b, a), "%s: removing a known file", m->name);
	cr_assert_not(vr_read_batch_remove(b, a), "%s: removing it twice", m->name);
	cr_assert_eq(vr_read_batch_nr_files(b), 1, "%s: one file left", m->name);
	cr_assert_null(vr_read_batch_text(b, a, NULL, &file_error), "%s: no text once removed",
		       m->name);
	cr_assert(g_error_matches(file_error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_NO_FILE) &&
			  msg_names_number(file_error->message, a),
		  "%s: expected NO_FILE naming id %u, got: %s", m->name, a, file_error->message);
	cr_assert_null(vr_read_batch_path(b, a), "%s: no path once removed", m->name);
	cr_assert_not(vr_read_batch_reopen(b, a, &error), "%s: reopening a removed file", m->name);
	cr_assert(g_error_matches(error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_NO_FILE),
		  "%s: expected NO_FILE, got: %s", m->name, error->message);
	run_ok(b, "one left");
	expect_text(b, bb, "B", "the file left");
	again = add_ok(b, pa);
	cr_assert(again != a && again != bb, "%s: ids are never reused (got %u after %u, %u)",
		  m->name, again, a, bb);
}

ParameterizedTestParameters(read_batch, syscalls_per_run)
{
	return cr_make_param_array(struct mode, modes, G_N_ELEMENTS(modes));
}

/* pread(2) costs one call per file; io_uring batches them. */
ParameterizedTest(struct mode *m, read_batch, syscalls_per_run)
{
	g_autoptr(vr_read_batch) b = batch_new(m);
	struct vr_read_batch_stats s;
	const guint nr_files = 8;

	for (guint i = 0; i < nr_files; i++) {
		g_autofree char *rel = g_strdup_printf("f%u", i);
		g_autofree char *p = tmp_path(rel);

		tree_put(tmp, rel, rel);
		add_ok(b, p);
	}
	run_ok(b, "first");
	run_ok(b, "second");
	vr_read_batch_get_stats(b, &s);
	cr_assert_eq(s.nr_runs, 2, "%s: two runs, got %" PRIu64, m->name, s.nr_runs);
	cr_assert_eq(s.nr_reads, 2 * nr_files, "%s: %u reads, got %" PRIu64, m->name, 2 * nr_files,
		     s.nr_reads);
	if (m->use_uring)
		cr_assert(s.nr_syscalls >= 2 && s.nr_syscalls < 2 * nr_files,
			  "uring: expected one or a few io_uring_enter calls per run, got %" PRIu64
			  " for two runs of %u files",
			  s.nr_syscalls, nr_files);
	else
		cr_assert_eq(s.nr_syscalls, 2 * nr_files,
			     "pread: one call per file and run, expected %u, got %" PRIu64,
			     2 * nr_files, s.nr_syscalls);
}

Test(read_batch, adding_a_missing_file_fails)
{
	g_autoptr(vr_read_batch) b = vr_read_batch_new(FALSE, NULL);
	g_autofree char *p = tmp_path("missing");
	g_autoptr(GError) error = NULL;

	cr_assert_eq(vr_read_batch_add(b, p, &error), 0, "a missing file gets no id");
	cr_assert(g_error_matches(error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_GONE),
		  "expected VR_READ_BATCH_ERROR_GONE, got: %s", error->message);
	cr_assert(strstr(error->message, p), "the error should name %s, got: %s", p,
		  error->message);
	cr_assert_eq(vr_read_batch_nr_files(b), 0, "nothing was added");
}

/* Both ways read the same bytes, over many files of awkward sizes and
 * procfs files whose text does not change. */
Test(read_batch, uring_and_pread_read_the_same)
{
	static const gsize sizes[] = { 0, 1, 4095, 4096, 4097, 65535, VR_READ_BATCH_MAX_BYTES };
	static const char *const proc_files[] = { "cmdline", "limits", "environ" };
	g_autoptr(vr_read_batch) ub = vr_read_batch_new(TRUE, NULL);
	g_autoptr(vr_read_batch) pb = vr_read_batch_new(FALSE, NULL);
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint));

	if (!vr_read_batch_uses_uring(ub))
		cr_skip_test("io_uring is not available on this machine");
	/* more files than the first io_uring queue holds: it must grow */
	for (guint i = 0; i < 100; i++) {
		gsize size = sizes[i % G_N_ELEMENTS(sizes)];
		g_autofree char *rel = g_strdup_printf("f%u", i);
		g_autofree char *p = tmp_path(rel);
		g_autofree char *text = g_malloc(size + 1);

		for (gsize j = 0; j < size; j++)
			text[j] = (char)('a' + (i + j) % 26);
		text[size] = '\0';
		tree_put(tmp, rel, text);
		guint u = add_ok(ub, p), q = add_ok(pb, p);

		cr_assert_eq(u, q, "the same adds give the same ids");
		g_array_append_val(ids, u);
	}
	for (guint i = 0; i < G_N_ELEMENTS(proc_files); i++) {
		g_autofree char *p = g_build_filename(PROCFS_ROOT, "self", proc_files[i], NULL);
		guint u = add_ok(ub, p), q = add_ok(pb, p);

		cr_assert_eq(u, q, "the same adds give the same ids");
		g_array_append_val(ids, u);
	}
	run_ok(ub, "uring");
	run_ok(pb, "pread");
	cr_assert(vr_read_batch_uses_uring(ub), "100 files: io_uring still in use");
	for (guint i = 0; i < ids->len; i++) {
		guint id = g_array_index(ids, guint, i);
		const GError *ue = NULL, *pe = NULL;
		gsize ulen, plen;
		const char *ut = vr_read_batch_text(ub, id, &ulen, &ue);
		const char *pt = vr_read_batch_text(pb, id, &plen, &pe);

		cr_assert(ut && pt, "%s: both should read it: %s / %s", vr_read_batch_path(ub, id),
			  ue ? ue->message : "ok", pe ? pe->message : "ok");
		cr_assert(ulen == plen && memcmp(ut, pt, ulen) == 0,
			  "%s: uring and pread differ (%zu and %zu bytes)",
			  vr_read_batch_path(ub, id), ulen, plen);
	}
}
