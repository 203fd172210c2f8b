/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a file a user or a guest names (a policy, a workload) with a
 * bound. g_file_get_contents() reads until the end of the file, so
 * `vreclaimctl set-policy /dev/zero` used to grow without end; here the
 * read stops with an error one byte past the bound. vreclaimctl and
 * vreclaim-agent read every such file with vr_user_file_read().
 */
#pragma once

#include <glib.h>

/* The largest bound vr_user_file_read() takes, bytes; larger ones are cut
 * to it. */
#define VR_USER_FILE_MAX_BYTES (64U << 20)

/* A policy file, bytes: a policy with many schemes is a few KiB, and the
 * agent protocol carries lines of at most 64 KiB. */
#define VR_USER_FILE_POLICY_MAX_BYTES (1U << 20)

/* A workload file of vreclaimctl simulate, bytes: a script of a few hundred
 * phases is tens of KiB. */
#define VR_USER_FILE_WORKLOAD_MAX_BYTES (16U << 20)

/**
 * vr_user_file_read() - the contents of @path, at most @max_bytes (at most
 * VR_USER_FILE_MAX_BYTES): a regular file, or whatever gives bytes (a
 * pipe, /dev/stdin), read in chunks that grow as it comes, so a small file
 * costs little and one without end fails at the bound.
 * @len: (out) (optional): the bytes read; the text is NUL-terminated after
 *	 them (it may hold a NUL of its own: callers that want text check).
 * Return: owned contents, or NULL with @error in G_FILE_ERROR, naming
 * @path: "cannot open <path>: <reason>" (the errno's code), "<path> is a
 * folder" (G_FILE_ERROR_ISDIR), "cannot read <path>: <reason>", or "<path>
 * is larger than the <max_bytes> bytes allowed" (G_FILE_ERROR_FAILED).
 */
char *vr_user_file_read(const char *path, gsize max_bytes, gsize *len, GError **error);
