/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Statistics of the nested-VM benchmark's report: median, minimum and maximum
 * of a few runs. Pure: arrays in, numbers out. A value that was not measured
 * is NAN (an empty CSV field) and is left out of every figure.
 */
#pragma once

#include <stddef.h>

/**
 * struct vm_stats - summary of one measure over the runs of a config.
 * @n:		how many values were measured (not NAN).
 * @median:	their median (the mean of the two middle ones for an even @n);
 *		NAN when @n is 0.
 * @min:	the smallest value; NAN when @n is 0.
 * @max:	the largest value; NAN when @n is 0.
 *
 * The figures are in the unit of the values given.
 */
struct vm_stats {
	size_t n;
	double median;
	double min;
	double max;
};

/**
 * vm_stats_count() - how many of the @n values at @v are measured (not NAN).
 * @v:	the values (may be NULL when @n is 0); not modified.
 * @n:	how many there are.
 */
size_t vm_stats_count(const double *v, size_t n);

/**
 * vm_stats_median() - median of the measured values at @v.
 * @v:	the values in any order (may be NULL when @n is 0); NAN ones are
 *	ignored; not modified (the function sorts a copy).
 * @n:	how many there are.
 *
 * Return: the middle value for an odd count, the mean of the two middle ones
 * for an even count, NAN when no value is measured.
 */
double vm_stats_median(const double *v, size_t n);

/**
 * vm_stats_min() - smallest measured value at @v (NAN ignored).
 * @v:	the values (may be NULL when @n is 0).
 * @n:	how many there are.
 *
 * Return: the minimum, or NAN when no value is measured.
 */
double vm_stats_min(const double *v, size_t n);

/**
 * vm_stats_max() - largest measured value at @v (NAN ignored).
 * @v:	the values (may be NULL when @n is 0).
 * @n:	how many there are.
 *
 * Return: the maximum, or NAN when no value is measured.
 */
double vm_stats_max(const double *v, size_t n);

/**
 * vm_stats_summarize() - count, median, minimum and maximum of @v at once.
 * @v:	the values (may be NULL when @n is 0); NAN ones are ignored.
 * @n:	how many there are.
 *
 * Return: the summary (every figure NAN and n 0 when nothing is measured).
 */
struct vm_stats vm_stats_summarize(const double *v, size_t n);
