/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the benchmarks: CPU time and CSV output.
 */
#pragma once

#include <glib.h>
#include <stdio.h>

#define GIB (1ULL << 30)

/**
 * bench_cpu_seconds() - CPU time consumed by the calling thread, in seconds.
 */
double bench_cpu_seconds(void);

/**
 * bench_csv_open() - create @path (and its folder) and write @header as the
 * first line. Return: the open file (caller closes), or NULL with @error.
 */
FILE *bench_csv_open(const char *path, const char *header, GError **error);
