/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of kernel/user-file.c: files users and guests name are
 * read with a bound. Small files, a file of exactly the bound and one byte
 * over it, /dev/zero (which g_file_get_contents() reads for ever), a
 * folder, a missing file, and a file with a NUL.
 *
 * Files live in a temporary folder made by the suite's .init.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "test-fake-tree.h"
#include "test-messages.h"
#include "user-file.h"

static char *root;

static void files_init(void)
{
	root = tree_new();
}

static void files_fini(void)
{
	tree_rm(root);
	g_clear_pointer(&root, g_free);
}

TestSuite(user_file, .init = files_init, .fini = files_fini);

Test(user_file, reads_a_small_file_whole)
{
	g_autofree char *path = g_build_filename(root, "policy.json", NULL);
	g_autoptr(GError) err = NULL;
	gsize len = 0;

	tree_put(root, "policy.json", "{\"profile\": \"default\"}\n");
	g_autofree char *text = vr_user_file_read(path, 1024, &len, &err);
	cr_assert_not_null(text, "%s", err ? err->message : "?");
	cr_assert_str_eq(text, "{\"profile\": \"default\"}\n");
	cr_assert_eq(len, strlen(text));
}

Test(user_file, takes_exactly_the_bound_and_refuses_one_byte_more)
{
	/* Over several chunks: the buffer grows as the file comes. */
	const gsize bound = 100000;
	g_autofree char *path = g_build_filename(root, "big", NULL);
	g_autofree char *fits = g_strnfill(bound, 'x');
	g_autofree char *over = g_strnfill(bound + 1, 'x');
	g_autoptr(GError) err = NULL;
	gsize len = 0;

	tree_put(root, "big", fits);
	g_autofree char *text = vr_user_file_read(path, bound, &len, &err);
	cr_assert_not_null(text, "a file of the bound should load: %s", err ? err->message : "?");
	cr_assert_eq(len, bound);
	cr_assert_eq(text[bound], '\0');

	tree_put(root, "big", over);
	cr_assert_null(vr_user_file_read(path, bound, &len, &err));
	cr_assert(g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_FAILED), "%s", err->message);
	cr_assert(g_str_has_prefix(err->message, path) && msg_names_number(err->message, 100000),
		  "the message should name the file and the bound: %s", err->message);
}

Test(user_file, refuses_a_file_without_end)
{
	g_autoptr(GError) err = NULL;

	if (!g_file_test("/dev/zero", G_FILE_TEST_EXISTS))
		cr_skip_test("this machine has no /dev/zero");
	cr_assert_null(vr_user_file_read("/dev/zero", VR_USER_FILE_POLICY_MAX_BYTES, NULL, &err));
	cr_assert(g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_FAILED), "%s", err->message);
	cr_assert_str_eq(err->message, "/dev/zero is larger than the 1048576 bytes allowed");
}

Test(user_file, names_a_missing_file_and_a_folder)
{
	g_autofree char *missing = g_build_filename(root, "missing.json", NULL);
	g_autoptr(GError) e1 = NULL;
	g_autoptr(GError) e2 = NULL;

	cr_assert_null(vr_user_file_read(missing, 1024, NULL, &e1));
	cr_assert(g_error_matches(e1, G_FILE_ERROR, G_FILE_ERROR_NOENT), "%s", e1->message);
	g_autofree char *want = g_strdup_printf("cannot open %s: %s", missing, g_strerror(ENOENT));
	cr_assert_str_eq(e1->message, want);
	cr_assert_null(vr_user_file_read(root, 1024, NULL, &e2));
	cr_assert(g_error_matches(e2, G_FILE_ERROR, G_FILE_ERROR_ISDIR), "%s", e2->message);
	cr_assert(msg_has_all(e2->message, "folder"), "%s", e2->message);
}

Test(user_file, keeps_a_nul_and_says_the_length)
{
	g_autofree char *path = g_build_filename(root, "nul", NULL);
	g_autoptr(GError) err = NULL;
	gsize len = 0;

	cr_assert(g_file_set_contents(path, "a\0b", 3, NULL));
	g_autofree char *text = vr_user_file_read(path, 16, &len, &err);
	cr_assert_not_null(text, "%s", err ? err->message : "?");
	cr_assert_eq(len, 3, "the length counts past the NUL");
	cr_assert(!memcmp(text, "a\0b", 4));
}
