/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `vreclaimctl agent`: talk to one guest agent directly over its channel
 * socket (docs/agent.md). Until vreclaimd drives the agents, tests and the
 * demo use it; operators use it to look at one guest.
 */
#pragma once

/**
 * vrctl_agent_main() - the `agent` subcommand; @argv[0] is "agent".
 * Return: an exit code (VRCTL_EXIT_*).
 */
int vrctl_agent_main(int argc, char **argv);
