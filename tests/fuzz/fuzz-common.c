// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What every fuzz target shares: see fuzz.h.
 */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vr_fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: fuzz check failed: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static GLogWriterOutput quiet_writer(GLogLevelFlags level, const GLogField *fields, gsize nr_fields,
				     gpointer user)
{
	(void)user;
	if (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR)) {
		g_log_writer_standard_streams(level, fields, nr_fields, NULL);
		abort();
	}
	return G_LOG_WRITER_HANDLED;
}

static void quiet_print(const char *text)
{
	(void)text;
}

void vr_fuzz_setup(void)
{
	g_log_set_writer_func(quiet_writer, NULL, NULL);
	g_set_print_handler(quiet_print);
	g_set_printerr_handler(quiet_print);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	vr_fuzz_setup();
	return 0;
}

char *vr_fuzz_strdup(const uint8_t *data, size_t size)
{
	return size ? g_strndup((const char *)data, size) : g_strdup("");
}

char **vr_fuzz_split(const uint8_t *data, size_t size, guint max_parts)
{
	GPtrArray *parts = g_ptr_array_new();
	size_t start = 0;

	g_return_val_if_fail(max_parts > 0, NULL);
	for (size_t i = 0; i <= size; i++) {
		gboolean last = parts->len + 1 == max_parts;

		if (i < size && (data[i] != '\n' || last))
			continue;
		g_ptr_array_add(parts, vr_fuzz_strdup(data + start, i - start));
		start = i + 1;
	}
	g_ptr_array_add(parts, NULL);
	return (char **)g_ptr_array_free(parts, FALSE);
}
