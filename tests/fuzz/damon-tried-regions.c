// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target damon-tried-regions: the regions DAMON's sysfs lists for a
 * scheme, as vreclaim-agent reads them (kernel/damon-sysfs-status.c,
 * vr_damon_sysfs_read_tried_regions(): a folder per region with its start,
 * end, nr_accesses and age files; overlapping listings cut; more regions
 * than asked merged by vr_damon_regions_merge()). The reader takes a sysfs
 * tree, so each input becomes one: a fake tree in a temporary folder
 * (never the real sysfs), rebuilt for each input and removed at exit.
 *
 * The input: the first line is the most regions asked for (a decimal,
 * taken modulo VR_FUZZ_MAX_ASKED, plus 1); each further line that is not
 * empty (at most VR_FUZZ_MAX_REGIONS) is a region folder "START END
 * NR_ACCESSES AGE [NAME]": each of the four words is written as is to its
 * file (a missing word leaves its file out), NAME (1..32 of [0-9a-z_])
 * names the folder, the line's index otherwise.
 *
 * Checks: a failed read sets an error and appends nothing; a read that
 * succeeds appends at most the regions asked for, each not empty, sorted
 * and apart.
 */
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "damon-sysfs.h"
#include "fuzz.h"
#include "kernel-file.h"

/* Most regions asked for: above VR_PROTO_MAX_REGIONS (512), the host's. */
#define VR_FUZZ_MAX_ASKED 600

/* Region folders taken from one input: enough to overlap and merge. */
#define VR_FUZZ_MAX_REGIONS 64

static const char *const files[] = { "start", "end", "nr_accesses", "age" };

/* The fake sysfs root, made once. */
static char *root;

/* Remove @path and what is below it (the tree holds no symbolic links). */
static void remove_tree(const char *path)
{
	g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
	const char *name;

	if (dir) {
		while ((name = g_dir_read_name(dir))) {
			g_autofree char *child = g_build_filename(path, name, NULL);

			remove_tree(child);
		}
		g_rmdir(path);
	} else {
		g_remove(path);
	}
}

static void remove_root(void)
{
	if (root)
		remove_tree(root);
	g_clear_pointer(&root, g_free);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autoptr(GError) error = NULL;

	if (!g_file_set_contents(path, text, -1, &error))
		g_error("cannot write %s: %s", path, error->message);
}

static void make_dir(const char *path)
{
	if (g_mkdir_with_parents(path, 0700) != 0)
		g_error("cannot make %s", path);
}

/* May @name name a region folder: 1..32 of [0-9a-z_], not the listing's own
 * total_bytes file? */
static gboolean is_plain_name(const char *name)
{
	size_t len = strspn(name, "0123456789abcdefghijklmnopqrstuvwxyz_");

	return len > 0 && len <= 32 && !name[len] && strcmp(name, "total_bytes");
}

/* The tree of @lines under @kdamond; returns the regions asked for. */
static guint build_tree(const char *kdamond, char **lines)
{
	g_autofree char *tried =
		g_build_filename(kdamond, "contexts", "0", "schemes", "0", "tried_regions", NULL);
	guint max = (guint)(g_ascii_strtoull(lines[0], NULL, 10) % VR_FUZZ_MAX_ASKED) + 1;

	make_dir(tried);
	write_file(kdamond, "state", "on\n");
	write_file(tried, "total_bytes", "0\n");
	for (guint i = 1; lines[i]; i++) {
		g_auto(GStrv) words = g_strsplit(lines[i], " ", 5);
		g_autofree char *index = g_strdup_printf("%u", i - 1);
		guint nr_words = g_strv_length(words);
		const char *name = nr_words == 5 && is_plain_name(words[4]) ? words[4] : index;
		g_autofree char *rdir = g_build_filename(tried, name, NULL);

		if (!*lines[i])
			continue;
		make_dir(rdir);
		for (guint f = 0; f < G_N_ELEMENTS(files) && f < nr_words; f++)
			write_file(rdir, files[f], words[f]);
	}
	return max;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_auto(GStrv) lines = vr_fuzz_split(data, size, VR_FUZZ_MAX_REGIONS + 1);
	g_autofree char *admin = NULL;
	g_autofree char *kdamond = NULL;
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) error = NULL;
	struct vr_agent_paths paths = { 0 };
	guint max;

	if (!root) {
		g_autoptr(GError) tmp_error = NULL;

		root = g_dir_make_tmp("vreclaim-fuzz-sysfs-XXXXXX", &tmp_error);
		if (!root)
			g_error("no temporary folder: %s", tmp_error->message);
		atexit(remove_root);
	}
	admin = g_build_filename(root, VR_DAMON_ADMIN_DIR, NULL);
	kdamond = g_build_filename(admin, "kdamonds", "0", NULL);
	remove_tree(admin);
	max = build_tree(kdamond, lines);
	paths.sysfs = root;

	if (!vr_damon_sysfs_read_tried_regions(&paths, 0, max, out, &error)) {
		VR_FUZZ_CHECK(error, "a failed read without an error");
		VR_FUZZ_CHECK(out->len == 0, "a failed read appended %u regions", out->len);
		return 0;
	}
	VR_FUZZ_CHECK(out->len <= max, "%u regions where %u were asked for", out->len, max);
	for (guint i = 0; i < out->len; i++) {
		const struct vr_picture_region *r =
			&g_array_index(out, struct vr_picture_region, i);

		VR_FUZZ_CHECK(r->start < r->end, "region %u is empty", i);
		if (i > 0)
			VR_FUZZ_CHECK(g_array_index(out, struct vr_picture_region, i - 1).end <=
					      r->start,
				      "regions %u and %u overlap or are out of order", i - 1, i);
	}
	return 0;
}
