/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `vreclaimctl simulate`: a policy run against the simulated guest
 * (docs/simulate.md).
 */
#pragma once

/* Exit codes of vreclaimctl, virsh-like. */
#define VRCTL_EXIT_OK	 0
#define VRCTL_EXIT_ERROR 1 /* the command failed (a file, a run) */
#define VRCTL_EXIT_USAGE 2 /* bad command line */

/**
 * vrctl_simulate_main() - the `simulate` subcommand; @argv[0] is
 * "simulate". Return: an exit code.
 */
int vrctl_simulate_main(int argc, char **argv);
