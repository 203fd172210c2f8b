// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The main() of every Criterion test program (tests/meson.build builds this
 * file into each): Criterion's own, but a run in which every test skipped
 * (cr_skip_test(): not root, no QEMU, no libvirt...) exits 77, which meson
 * shows as SKIP. With Criterion's main such a run exited 0, so a test
 * program whose every test needs root showed OK on a machine without it.
 *
 * A run with some tests skipped and the others passed still exits 0 (OK: the
 * log names each skip); one with a failure exits 1; --help, --list and
 * --version run no test and exit as with Criterion's main.
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/stats.h>

#include <stdbool.h>
#include <stdlib.h>

/* The exit status of a test that skipped, for meson (and automake). */
#define EXIT_SKIPPED 77

/* The run's totals, from Criterion's report after the last test (in the
 * runner, this process: the tests run in workers of their own). */
static bool run_reported;
static size_t nr_passed, nr_failed, nr_skipped;

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	run_reported = true;
	nr_passed = stats->tests_passed;
	nr_failed = stats->tests_failed; /* crashes included */
	nr_skipped = stats->tests_skipped;
}

int main(int argc, char *argv[])
{
	struct criterion_test_set *tests = criterion_initialize();
	int args = criterion_handle_args(argc, argv, true);
	int status;

	if (args <= 0) {
		/* Help, a list, the version (0), or a bad argument. */
		criterion_finalize(tests);
		return args < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	}
	status = criterion_run_all_tests(tests) ? EXIT_SUCCESS : EXIT_FAILURE;
	criterion_finalize(tests);
	if (status == EXIT_SUCCESS && run_reported && nr_skipped > 0 && nr_passed == 0 &&
	    nr_failed == 0)
		return EXIT_SKIPPED;
	return status;
}
