/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's state folder ([daemon] state-dir): one file per domain,
 * <uuid>.state, holding what common/domain-state.h describes. Written
 * atomically (a temporary file in the folder, renamed over the old one), so
 * a vreclaimd that dies at any point leaves the old file or the new one,
 * never half of one; not fsynced (a host crash ends the QEMU processes the
 * files are bound to: none would be applied after it). Read with a size
 * bound and parsed strictly.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "domain-state.h"

/**
 * vr_state_dir_prepare() - make the folder @dir (mode 0700; its missing
 * parents 0755, as the control socket's folder) when it does not exist.
 * Return: FALSE with @error naming @dir (or the parent that could not be
 * made), also when @dir exists and is not a folder.
 */
gboolean vr_state_dir_prepare(const char *dir, GError **error);

/**
 * vr_state_dir_path() - the state file of domain @uuid in @dir. Return: owned.
 */
char *vr_state_dir_path(const char *dir, const char *uuid);

/**
 * vr_state_dir_save() - write @st to its file in @dir atomically (mode
 * 0600). Return: FALSE with @error naming the file.
 */
gboolean vr_state_dir_save(const char *dir, const struct vr_domain_state *st, GError **error);

/**
 * vr_state_dir_load() - read and parse domain @uuid's file in @dir into @out
 * (written only on success). Return: FALSE with @error: G_FILE_ERROR_NOENT
 * when there is none, the read's error, or VR_DOMAIN_STATE_ERROR_INVALID
 * naming the file and what is wrong. The caller checks the incarnation
 * (vr_domain_state_check()).
 */
gboolean vr_state_dir_load(const char *dir, const char *uuid, struct vr_domain_state *out,
			   GError **error);

/**
 * vr_state_dir_remove() - remove domain @uuid's file from @dir; none is
 * fine. Return: FALSE with @error naming the file.
 */
gboolean vr_state_dir_remove(const char *dir, const char *uuid, GError **error);

/**
 * vr_qemu_incarnation_read() - process @pid's incarnation from @procfs
 * (its /PID/stat: the start time). Return: FALSE with @error naming the
 * file.
 */
gboolean vr_qemu_incarnation_read(const char *procfs, pid_t pid, struct vr_qemu_incarnation *out,
				  GError **error);
