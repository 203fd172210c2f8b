/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Median, minimum and maximum of a few runs, NAN (not measured) left out.
 */
#include "vm-stats.h"

#include <glib.h>
#include <math.h>
#include <stdlib.h>

size_t vm_stats_count(const double *v, size_t n)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			count++;
	return count;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return (x > y) - (x < y);
}

double vm_stats_median(const double *v, size_t n)
{
	g_autofree double *sorted = NULL;
	size_t m = 0;

	if (vm_stats_count(v, n) == 0)
		return NAN;
	sorted = g_new(double, n);
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			sorted[m++] = v[i];
	qsort(sorted, m, sizeof(*sorted), cmp_double);
	if (m % 2)
		return sorted[m / 2];
	/* Half of each, so that two huge values do not overflow. */
	return sorted[m / 2 - 1] / 2 + sorted[m / 2] / 2;
}

double vm_stats_min(const double *v, size_t n)
{
	double min = NAN;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]) && (isnan(min) || v[i] < min))
			min = v[i];
	return min;
}

double vm_stats_max(const double *v, size_t n)
{
	double max = NAN;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]) && (isnan(max) || v[i] > max))
			max = v[i];
	return max;
}

struct vm_stats vm_stats_summarize(const double *v, size_t n)
{
	return (struct vm_stats){
		.n = vm_stats_count(v, n),
		.median = vm_stats_median(v, n),
		.min = vm_stats_min(v, n),
		.max = vm_stats_max(v, n),
	};
}
