/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's reader of /proc/meminfo: the few fields it decides with (free
 * memory for the watermarks, swap for reports). The parser and struct
 * vr_meminfo live in common/procfs-text.h, shared with the host daemon.
 */
#pragma once

#include <glib.h>

#include "kernel-file.h"
#include "procfs-text.h"

/**
 * vr_meminfo_read() - read and parse @paths->procfs/meminfo into @out.
 * Return: FALSE with @error naming the file: the reading error, or
 * VR_AGENT_ERROR_INVALID (with vr_meminfo_parse()'s message naming the
 * field) when the text does not parse.
 */
gboolean vr_meminfo_read(const struct vr_agent_paths *paths, struct vr_meminfo *out,
			 GError **error);
