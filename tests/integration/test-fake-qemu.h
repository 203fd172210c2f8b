/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers of the integration tests that run the real vreclaimd against
 * tests/integration/fake-qemu (test-vreclaimd, test-qmp-stall,
 * test-qmp-fleet): start the fake and wait until it listens, the children's
 * output to log files, stop a child by its pid.
 *
 * Every child dies with the test worker (PR_SET_PDEATHSIG), even one whose
 * test crashed before its teardown could stop it.
 *
 * Needs _GNU_SOURCE before the test file's first #include.
 */
#pragma once

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long test_stop_pid() waits before SIGKILL, and between two polls, us. */
#define TEST_STOP_WAIT_US (5 * G_USEC_PER_SEC)
#define TEST_STOP_POLL_US (20 * 1000)

/**
 * test_child_setup() - a GSpawnChildSetupFunc: the child's stdout and
 * stderr appended to the file @data (a path), SIGTERM when the test worker
 * dies (a daemon gets to clean up).
 */
static inline void test_child_setup(gpointer data)
{
	int fd = open(data, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* The fake's child setup: only its stderr to the file @data (its stdout is
 * the pipe it says "ready" on), SIGKILL when the test worker dies. */
static inline void test_fake_child_setup(gpointer data)
{
	int fd = open(data, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd >= 0)
		dup2(fd, STDERR_FILENO);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/**
 * test_stop_pid() - send @sig to *@pid, SIGKILL when it has not exited
 * within TEST_STOP_WAIT_US, reap it and set *@pid to 0. Nothing when *@pid
 * is 0.
 */
static inline void test_stop_pid(GPid *pid, int sig)
{
	bool reaped = false;

	if (*pid <= 0)
		return;
	kill(*pid, sig);
	for (gint64 waited = 0; waited < TEST_STOP_WAIT_US && !reaped;
	     waited += TEST_STOP_POLL_US) {
		reaped = waitpid(*pid, NULL, WNOHANG) == *pid;
		if (!reaped)
			g_usleep(TEST_STOP_POLL_US);
	}
	if (!reaped) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	g_spawn_close_pid(*pid);
	*pid = 0;
}

/**
 * test_fake_qemu_start() - start fake-qemu (the binary VR_FAKE_QEMU names)
 * with @args (NULL-terminated, without the binary) and return once it
 * listens on every socket (it says "ready"); its stderr goes to @log_path.
 * A fake that cannot start fails the test with what it said.
 * Return: its pid (reap it: test_stop_pid()).
 */
static inline GPid test_fake_qemu_start(const char *const *args, const char *log_path)
{
	const char *binary = g_getenv("VR_FAKE_QEMU");
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GError) error = NULL;
	g_autofree char *said = NULL;
	char line[16] = "";
	gsize have = 0;
	GPid pid = 0;
	int out = -1;

	cr_assert_not_null(binary, "VR_FAKE_QEMU must name the fake-qemu binary");
	g_ptr_array_add(argv, (gpointer)binary);
	for (guint i = 0; args[i]; i++)
		g_ptr_array_add(argv, (gpointer)args[i]);
	g_ptr_array_add(argv, NULL);
	cr_assert(g_spawn_async_with_pipes(NULL, (char **)argv->pdata, NULL,
					   G_SPAWN_DO_NOT_REAP_CHILD, test_fake_child_setup,
					   (gpointer)log_path, &pid, NULL, &out, NULL, &error),
		  "cannot start fake-qemu: %s", error ? error->message : "?");
	while (have < sizeof(line) - 1 && !strchr(line, '\n')) {
		ssize_t n = read(out, line + have, sizeof(line) - 1 - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (gsize)n;
	}
	close(out);
	if (strcmp(line, "ready\n") != 0) {
		g_file_get_contents(log_path, &said, NULL, NULL);
		test_stop_pid(&pid, SIGKILL);
	}
	cr_assert_str_eq(line, "ready\n", "fake-qemu did not come up: %s",
			 said ? said : "(it said nothing)");
	return pid;
}
