/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Checks shared by the access sources' tests (test-source-*.c, on
 * hostd/sources/access-source.h): a start that must work, and an error that must
 * come with its code.
 */
#pragma once

#include <criterion/criterion.h>

#include <glib.h>

#include "sources/access-source.h"
#include "test-messages.h"

/* Start @src: it must succeed, and the source then says it is started. */
static inline void start_ok(struct vr_access_source *src)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_access_source_start(src, &err), "start should succeed, got: %s",
		  err ? err->message : "FALSE without an error");
	cr_assert(vr_access_source_is_started(src));
}

/* @err is of @code in VR_ACCESS_SOURCE_ERROR and says one of the
 * '|'-separated @words. */
static inline void expect_error(const GError *err, int code, const char *words, const char *what)
{
	assert_error(err, VR_ACCESS_SOURCE_ERROR, code, words, what);
}
