/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's reader of memory pressure stall information
 * (/proc/pressure/memory, PSI). The agent brakes reclaim when "some" grows
 * too fast and feeds the some_mem_psi_us quota goal with it. The parser and
 * struct vr_psi_memory live in common/procfs-text.h, shared with the host
 * daemon.
 */
#pragma once

#include <glib.h>

#include "kernel-file.h"
#include "procfs-text.h"

/**
 * vr_psi_read_memory() - read and parse @paths->procfs/pressure/memory.
 * Errors: VR_AGENT_ERROR_UNSUPPORTED when the file does not exist (a kernel
 * without CONFIG_PSI, or booted with psi=0); VR_AGENT_ERROR_INVALID naming
 * the file and the field when the text does not parse; reading errors name
 * the file.
 */
gboolean vr_psi_read_memory(const struct vr_agent_paths *paths, struct vr_psi_memory *out,
			    GError **error);
