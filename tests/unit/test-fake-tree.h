/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fake kernel trees (sysfs, procfs) in a temporary folder, shared by the
 * guest agent's backend tests and the host's: create files, read them back,
 * and take snapshots to see exactly which files a step wrote; and the part
 * of DAMON sysfs that every DAMON test needs.
 *
 * A fake file is a plain file: a write(2) without O_TRUNC overwrites it in
 * place, so a shorter value written over a longer one leaves the tail. Tests
 * therefore empty the files (tree_truncate_all()) before the step whose
 * writes they check; every file the step writes then holds exactly what was
 * written.
 *
 * Needs POSIX (truncate(), symlink()): define _POSIX_C_SOURCE 200809L before
 * the first #include of the test file.
 */
#pragma once

#include <criterion/criterion.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/* A new empty temporary folder: owned path. */
static inline char *tree_new(void)
{
	g_autoptr(GError) err = NULL;
	char *root = g_dir_make_tmp("vr-fake-tree-XXXXXX", &err);

	cr_assert_not_null(root, "cannot make a temporary folder: %s", err ? err->message : "?");
	return root;
}

/* Remove @path and everything below it; symlinks are removed, never followed. */
static inline void tree_rm(const char *path)
{
	if (!g_file_test(path, G_FILE_TEST_IS_SYMLINK) && g_file_test(path, G_FILE_TEST_IS_DIR)) {
		GDir *d = g_dir_open(path, 0, NULL);
		const char *name;

		while (d && (name = g_dir_read_name(d))) {
			g_autofree char *child = g_build_filename(path, name, NULL);

			tree_rm(child);
		}
		if (d)
			g_dir_close(d);
		g_rmdir(path);
		return;
	}
	g_unlink(path);
}

/* Create @root/@rel (and its folders) holding @content. */
static inline void tree_put(const char *root, const char *rel, const char *content)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);
	g_autofree char *dir = g_path_get_dirname(path);
	g_autoptr(GError) err = NULL;

	cr_assert_eq(g_mkdir_with_parents(dir, 0755), 0, "cannot create %s", dir);
	cr_assert(g_file_set_contents(path, content, -1, &err), "cannot write %s: %s", path,
		  err ? err->message : "?");
}

/* Create the folder @root/@rel. */
static inline void tree_mkdir(const char *root, const char *rel)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);

	cr_assert_eq(g_mkdir_with_parents(path, 0755), 0, "cannot create %s", path);
}

/* A NULL-terminated list of names, for tree_put_empty(). */
#define TREE_NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Create an empty file @root/@dir/<name> for each of @names (NULL-terminated). */
static inline void tree_put_empty(const char *root, const char *dir, const char *const *names)
{
	for (; *names; names++) {
		g_autofree char *rel = g_build_filename(dir, *names, NULL);

		tree_put(root, rel, "");
	}
}

/* Contents of @root/@rel, or NULL when it does not exist: owned. */
static inline char *tree_get(const char *root, const char *rel)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);
	char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return NULL;
	return text;
}

/* Does @root/@rel hold exactly @want? (Fails the test with both values.) */
static inline void tree_expect(const char *root, const char *rel, const char *want)
{
	g_autofree char *got = tree_get(root, rel);

	cr_assert_not_null(got, "%s: expected '%s', but the file does not exist", rel, want);
	cr_assert_str_eq(got, want, "%s: expected '%s', got '%s'", rel, want, got);
}

/* Remove @root/@rel (a file or a symlink). */
static inline void tree_unlink(const char *root, const char *rel)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);

	cr_assert_eq(g_unlink(path), 0, "cannot remove %s", path);
}

/* Make @root/@rel a symlink to @target (replacing the file). */
static inline void tree_symlink(const char *root, const char *rel, const char *target)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);

	g_unlink(path);
	cr_assert_eq(symlink(target, path), 0, "cannot link %s to %s", path, target);
}

/* Walk @root/@rel: fill @out (path -> contents), or with @empty, empty every
 * file not in the set @out. */
static inline void tree_walk(const char *root, const char *rel, GHashTable *out, bool empty)
{
	g_autofree char *path = rel ? g_build_filename(root, rel, NULL) : g_strdup(root);
	GDir *d = g_dir_open(path, 0, NULL);
	const char *name;

	cr_assert_not_null(d, "cannot list %s", path);
	while ((name = g_dir_read_name(d))) {
		g_autofree char *crel = rel ? g_build_filename(rel, name, NULL) : g_strdup(name);
		g_autofree char *cpath = g_build_filename(root, crel, NULL);

		if (g_file_test(cpath, G_FILE_TEST_IS_SYMLINK))
			continue;
		if (g_file_test(cpath, G_FILE_TEST_IS_DIR)) {
			tree_walk(root, crel, out, empty);
		} else if (empty) {
			if (!out || !g_hash_table_contains(out, crel))
				cr_assert_eq(truncate(cpath, 0), 0, "cannot empty %s", cpath);
		} else {
			char *text = NULL;

			cr_assert(g_file_get_contents(cpath, &text, NULL, NULL), "cannot read %s",
				  cpath);
			g_hash_table_insert(out, g_steal_pointer(&crel), text);
		}
	}
	g_dir_close(d);
}

/* Every regular file under @root: relative path -> contents (owned table). */
static inline GHashTable *tree_snapshot(const char *root)
{
	GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

	tree_walk(root, NULL, t, false);
	return t;
}

/* Empty every regular file under @root except the NULL-terminated @keep
 * (paths relative to @root). */
static inline void tree_truncate_all(const char *root, const char *const *keep)
{
	g_autoptr(GHashTable) k = g_hash_table_new(g_str_hash, g_str_equal);

	for (; keep && *keep; keep++)
		g_hash_table_add(k, (gpointer)*keep);
	tree_walk(root, NULL, k, true);
}

/**
 * tree_changes() - the files whose contents differ between @before and
 * @after (snapshots of the same tree): relative path -> new contents.
 */
static inline GHashTable *tree_changes(GHashTable *before, GHashTable *after)
{
	GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, after);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		const char *old = g_hash_table_lookup(before, k);

		if (!old || strcmp(old, v) != 0)
			g_hash_table_insert(t, g_strdup(k), g_strdup(v));
	}
	return t;
}

/*
 * Check that @changes (tree_changes()) holds exactly the files of @want
 * (relative path -> value): none missing, none different, none extra.
 */
static inline void expect_changes_equal(GHashTable *changes, GHashTable *want)
{
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, want);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		const char *got = g_hash_table_lookup(changes, k);

		cr_expect_not_null(got, "%s: expected '%s' to be written, it was not",
				   (const char *)k, (const char *)v);
		if (got)
			cr_expect_str_eq(got, v, "%s: expected '%s', got '%s'", (const char *)k,
					 (const char *)v, got);
	}
	g_hash_table_iter_init(&it, changes);
	while (g_hash_table_iter_next(&it, &k, &v))
		cr_expect(g_hash_table_contains(want, k), "unexpected write: %s = '%s'",
			  (const char *)k, (const char *)v);
}

/**
 * struct expect_file - one file a step must write.
 * @rel:	path relative to the tree's root.
 * @value:	exactly what it must hold.
 */
struct expect_file {
	const char *rel;
	const char *value;
};

/* expect_changes_equal() with the @nr files of @want. */
static inline void expect_exact_changes(GHashTable *changes, const struct expect_file *want,
					size_t nr)
{
	g_autoptr(GHashTable) t = g_hash_table_new(g_str_hash, g_str_equal);

	for (size_t i = 0; i < nr; i++)
		g_hash_table_insert(t, (gpointer)want[i].rel, (gpointer)want[i].value);
	expect_changes_equal(changes, t);
}

/*
 * A file written several times in place holds the last value written as its
 * prefix (followed by the tail of longer earlier values): check that.
 */
static inline void tree_expect_last_write(const char *root, const char *rel, const char *want)
{
	g_autofree char *got = tree_get(root, rel);

	cr_assert_not_null(got, "%s does not exist", rel);
	cr_assert(g_str_has_prefix(got, want), "%s: expected '%s' written last, it holds '%s'", rel,
		  want, got);
}

/*
 * DAMON sysfs's kdamond 0 with its context 0 and the context's target 0,
 * under @root/@kdamonds (the kdamonds folder, relative), as the kernel shows
 * them after the nr_* writes: the folders with empty files, but
 * nr_kdamonds and nr_contexts "0" (no newline: a "1" written over it is
 * then exactly "1"), avail_operations "vaddr", "fvaddr" and "paddr", and
 * kdamond 0's pid file holding @pid. The schemes and the target's regions
 * are the caller's.
 */
static inline void tree_put_kdamond0(const char *root, const char *kdamonds, const char *pid)
{
	g_autofree char *kd0 = g_build_filename(kdamonds, "0", NULL);
	g_autofree char *ctx0 = g_build_filename(kd0, "contexts", "0", NULL);
	const struct {
		const char *dir;
		const char *name;
		const char *content;
	} files[] = {
		{ kdamonds, "nr_kdamonds", "0" },
		{ kd0, "state", "" },
		{ kd0, "pid", pid },
		{ kd0, "contexts/nr_contexts", "0" },
		{ ctx0, "avail_operations", "vaddr\nfvaddr\npaddr\n" },
		{ ctx0, "operations", "" },
		{ ctx0, "monitoring_attrs/intervals/sample_us", "" },
		{ ctx0, "monitoring_attrs/intervals/aggr_us", "" },
		{ ctx0, "monitoring_attrs/intervals/update_us", "" },
		{ ctx0, "monitoring_attrs/nr_regions/min", "" },
		{ ctx0, "monitoring_attrs/nr_regions/max", "" },
		{ ctx0, "targets/nr_targets", "" },
		{ ctx0, "targets/0/pid_target", "" },
		{ ctx0, "targets/0/regions/nr_regions", "" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		g_autofree char *rel = g_build_filename(files[i].dir, files[i].name, NULL);

		tree_put(root, rel, files[i].content);
	}
}
