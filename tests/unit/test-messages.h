/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Checks on error messages shared by the unit tests: a message must name
 * what was wrong, so tests look for words and numbers in it.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Does @msg contain any of the '|'-separated @alternatives (ignoring case)? */
static inline bool msg_has_any(const char *msg, const char *alternatives)
{
	g_autofree char *lower = g_ascii_strdown(msg, -1);
	g_auto(GStrv) alts = g_strsplit(alternatives, "|", -1);

	for (char **a = alts; *a; a++) {
		g_autofree char *alt = g_ascii_strdown(*a, -1);

		if (strstr(lower, alt))
			return true;
	}
	return false;
}

/* Does @msg contain the decimal @n as a whole token (so "0x3000" is no "0")? */
static inline bool msg_names_number(const char *msg, long n)
{
	char want[32];
	const char *p = msg;

	snprintf(want, sizeof(want), "%ld", n);
	while (*p) {
		const char *q = p;

		if (!g_ascii_isalnum(*p)) {
			p++;
			continue;
		}
		while (g_ascii_isalnum(*q))
			q++;
		if ((size_t)(q - p) == strlen(want) && !strncmp(p, want, strlen(want)))
			return true;
		p = q;
	}
	return false;
}
