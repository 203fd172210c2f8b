/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the two halves of the DAMON sysfs layer share, and nothing else
 * includes: the paths of kdamond 0's folders and the small reads and
 * writes of its files. The tree writer (damon-sysfs.c) and the status
 * reader (damon-sysfs-status.c) both use them; static inline, so that
 * neither half depends on the other.
 */
#pragma once

#include <glib.h>

#include "damon-sysfs.h"
#include "kernel-file.h"

/* kdamonds/<k>/<rest> under the admin folder: owned. */
static inline char *kdamond_path(const struct vr_agent_paths *paths, guint k, const char *rest)
{
	char num[16];

	g_snprintf(num, sizeof(num), "%u", k);
	return g_build_filename(paths->sysfs, VR_DAMON_ADMIN_DIR, "kdamonds", num, rest, NULL);
}

/* @dir/<i>: owned. */
static inline char *sub_index(const char *dir, guint i)
{
	char num[16];

	g_snprintf(num, sizeof(num), "%u", i);
	return g_build_filename(dir, num, NULL);
}

/* Write @value to @dir/@name (a command or a value). */
static inline gboolean put(const char *dir, const char *name, const char *value, GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);

	return vr_kfile_write(path, value, error);
}

/* The first line of @path without surrounding blanks: owned, or NULL with
 * @error. */
static inline char *read_trimmed(const char *path, GError **error)
{
	char *line = vr_kfile_read_line(path, error);

	return line ? g_strstrip(line) : NULL;
}
