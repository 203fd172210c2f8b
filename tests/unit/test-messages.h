/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Checks on error messages shared by the unit tests: a message must name
 * what was wrong, so tests look for words and numbers in it, and an error
 * must come in its domain with its code.
 */
#pragma once

#include <criterion/criterion.h>

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

/* Does @msg contain every ';'-separated group of '|'-separated alternatives? */
static inline bool msg_has_all(const char *msg, const char *groups)
{
	g_auto(GStrv) parts = g_strsplit(groups, ";", -1);

	for (char **p = parts; *p; p++)
		if (**p && !msg_has_any(msg, *p))
			return false;
	return true;
}

/*
 * @err is set, in @domain with @code, and its message says each
 * ';'-separated group of '|'-separated @words (NULL: any message); @what
 * names the case in the failures.
 */
static inline void assert_error(const GError *err, GQuark domain, int code, const char *words,
				const char *what)
{
	cr_assert_not_null(err, "%s: expected an error", what);
	cr_assert_eq(err->domain, domain, "%s: wrong error domain (%s): %s", what,
		     g_quark_to_string(err->domain), err->message);
	cr_assert_eq(err->code, code, "%s: expected code %d, got %d: %s", what, code, err->code,
		     err->message);
	if (words) {
		g_auto(GStrv) groups = g_strsplit(words, ";", -1);

		for (char **g = groups; *g; g++)
			cr_assert(msg_has_any(err->message, *g),
				  "%s: the message should say %s: %s", what, *g, err->message);
	}
}
