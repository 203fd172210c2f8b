/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimctl's exit codes, the same for every command (docs/vreclaimctl.md,
 * "Messages and exit codes").
 */
#pragma once

/* Exit codes of vreclaimctl, virsh-like. */
#define VRCTL_EXIT_OK	 0
#define VRCTL_EXIT_ERROR 1 /* the command failed (a file, a run) */
#define VRCTL_EXIT_USAGE 2 /* bad command line */
