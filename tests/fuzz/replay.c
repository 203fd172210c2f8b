// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The replay driver: a fuzz target built without libFuzzer (the ordinary
 * gcc build, or the ASan one) runs LLVMFuzzerTestOneInput() once on each
 * file named on its command line, and on each file of each folder named
 * (not recursive, in name order). tests/fuzz/meson.build runs every target on
 * its seed corpus this way (suite fuzz-replay); a crash file is replayed by
 * hand the same way: `build/tests/fuzz/fuzz-qmp crash-1234`.
 *
 * Each input is handed over in a buffer of exactly its size, as libFuzzer
 * does, so that ASan sees a parser that reads past it. No input at all is an
 * error: an empty or misnamed corpus would otherwise pass unnoticed.
 */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gboolean replay_file(const char *path, GError **error)
{
	g_autofree char *text = NULL;
	uint8_t *exact;
	gsize len = 0;

	if (!g_file_get_contents(path, &text, &len, error))
		return FALSE;
	/* g_file_get_contents() adds a NUL: the target gets the bytes alone
	 * (malloc(0) gives a pointer of its own, as libFuzzer's empty input). */
	exact = malloc(len);
	if (!exact)
		g_error("out of memory for %zu bytes", len);
	memcpy(exact, text, len);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return TRUE;
}

static gint compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Replay @path, a file or a folder of files; add the inputs run to *@nr. */
static gboolean replay_path(const char *path, guint *nr, GError **error)
{
	g_autoptr(GDir) dir = NULL;
	g_autoptr(GPtrArray) names = NULL;
	const char *name;

	if (!g_file_test(path, G_FILE_TEST_IS_DIR)) {
		if (!replay_file(path, error))
			return FALSE;
		(*nr)++;
		return TRUE;
	}
	dir = g_dir_open(path, 0, error);
	if (!dir)
		return FALSE;
	names = g_ptr_array_new_with_free_func(g_free);
	while ((name = g_dir_read_name(dir)))
		g_ptr_array_add(names, g_build_filename(path, name, NULL));
	g_ptr_array_sort(names, compare_names);
	for (guint i = 0; i < names->len; i++) {
		const char *file = g_ptr_array_index(names, i);

		if (!g_file_test(file, G_FILE_TEST_IS_REGULAR))
			continue;
		if (!replay_file(file, error))
			return FALSE;
		(*nr)++;
	}
	return TRUE;
}

int main(int argc, char **argv)
{
	guint nr = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE-OR-FOLDER...\n", argv[0]);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		g_autoptr(GError) error = NULL;

		if (!replay_path(argv[i], &nr, &error)) {
			fprintf(stderr, "%s: %s\n", argv[0], error->message);
			return 1;
		}
	}
	if (nr == 0) {
		fprintf(stderr, "%s: no input to replay in the paths given\n", argv[0]);
		return 1;
	}
	printf("%s: %u inputs replayed\n", argv[0], nr);
	return 0;
}
