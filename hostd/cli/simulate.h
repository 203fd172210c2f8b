/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `vreclaimctl simulate`: a policy run against the simulated guest
 * (docs/simulate.md).
 */
#pragma once

/**
 * vrctl_simulate_main() - the `simulate` subcommand; @argv[0] is
 * "simulate". Return: an exit code (VRCTL_EXIT_*, cli/exit-codes.h).
 */
int vrctl_simulate_main(int argc, char **argv);
