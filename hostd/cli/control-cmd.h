/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimctl's commands for the running vreclaimd, over its control socket
 * (docs/vreclaimctl.md): `status [--json]`, `set DOMAIN KEY=VALUE...`,
 * `pause [DOMAIN]`, `resume [DOMAIN]`, `metrics`.
 */
#pragma once

#include <glib.h>

/**
 * vrctl_control_main() - one of the control commands; @argv[0] names it
 * ("status", "set", "pause", "resume" or "metrics").
 * @socket_path: the control socket given before the command (`vreclaimctl
 *		--socket PATH status`), or NULL for VR_CONTROL_DEFAULT_SOCKET; a
 *		--socket after the command wins.
 * Return: an exit code (VRCTL_EXIT_*): 0 done, 1 vreclaimd failed or is
 * unreachable, 2 a bad command line.
 */
int vrctl_control_main(const char *socket_path, int argc, char **argv);

/**
 * vrctl_control_format_size() - @bytes as vreclaimctl shows sizes, like
 * virsh: "512 B", "1.50 KiB", "2.00 GiB". Owned.
 */
char *vrctl_control_format_size(guint64 bytes);
