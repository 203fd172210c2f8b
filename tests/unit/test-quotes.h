/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JSON in the unit tests is written with ' for " so that it reads like
 * JSON; dq() swaps them back.
 */
#pragma once

#include <glib.h>

/* @text with ' turned into ": owned. */
static inline char *dq(const char *text)
{
	char *s = g_strdup(text);

	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}
