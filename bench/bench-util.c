/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "bench-util.h"

#include <errno.h>
#include <time.h>

double bench_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

FILE *bench_csv_open(const char *path, const char *header, GError **error)
{
	g_autofree char *dir = g_path_get_dirname(path);
	FILE *f;

	if (g_mkdir_with_parents(dir, 0755) < 0) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "creating %s: %s",
			    dir, g_strerror(errno));
		return NULL;
	}
	f = fopen(path, "w");
	if (!f) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "opening %s: %s",
			    path, g_strerror(errno));
		return NULL;
	}
	fprintf(f, "%s\n", header);
	return f;
}
