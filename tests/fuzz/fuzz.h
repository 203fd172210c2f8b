/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What every fuzz target of tests/fuzz shares (docs/testing.md): the entry
 * points libFuzzer calls, and helpers that hand a parser the input the way
 * its caller would (an exactly sized buffer, a NUL-terminated copy, lines).
 *
 * Each target is one file defining LLVMFuzzerTestOneInput(). Built with
 * -Dfuzz=true it links libFuzzer (clang, ASan, UBSan); otherwise replay.c
 * gives it a main() that runs it on every file of its seed corpus, so the
 * corpora are regression tests of the ordinary build. A target frees
 * everything it allocates (LeakSanitizer checks it) and aborts (through
 * VR_FUZZ_CHECK) when a parser breaks a promise of its header: a round trip
 * that does not give the same thing back, an output outside its bounds.
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points (the replay driver calls them the same way). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * VR_FUZZ_CHECK() - abort with a message when @cond is false: a broken
 * promise is a finding like a crash. Not assert(): it stays in release builds.
 */
#define VR_FUZZ_CHECK(cond, ...)                                                                   \
	do {                                                                                       \
		if (!(cond))                                                                       \
			vr_fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                      \
	} while (0)

G_NORETURN void vr_fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);

/**
 * vr_fuzz_setup() - what LLVMFuzzerInitialize() does for every target:
 * GLib's log messages go nowhere (a parser that warns about garbage would
 * flood the fuzzer's output) except criticals and errors, which abort (a
 * g_return_if_fail() that fires is a bug); g_print() and g_printerr() go
 * nowhere.
 */
void vr_fuzz_setup(void);

/** vr_fuzz_strdup() - @size bytes of @data as a NUL-terminated string (up to the first NUL). */
char *vr_fuzz_strdup(const uint8_t *data, size_t size);

/**
 * vr_fuzz_split() - the input cut at each '\n' (lines without it), at most
 * @max_parts parts (the rest stays in the last one), every part a
 * NUL-terminated string (up to its first NUL). Return: a NULL-terminated
 * vector, owned (g_strfreev()).
 */
char **vr_fuzz_split(const uint8_t *data, size_t size, guint max_parts);
