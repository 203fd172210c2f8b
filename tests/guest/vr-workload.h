/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vr-workload: the parts the workload programs share (vr-memload, vr-kvload,
 * vr-sqlload): the clock, the stop signals, the latency histogram, the
 * random-number mix and the command-line number parsers.
 *
 * Plain C17, POSIX and libm, no GLib: vr-memload and vr-kvload are linked
 * -static for the busybox test guest.
 *
 * Messages on stderr start with vr_prog, which each program defines:
 *   const char vr_prog[] = "vr-memload";
 */
#ifndef VR_WORKLOAD_H
#define VR_WORKLOAD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Nanoseconds per second. */
#define VR_NS_PER_S 1000000000ULL

/**
 * vr_prog - the program's name, the prefix of its stderr messages.
 *
 * Not defined by the library: every program that links it defines it.
 */
extern const char vr_prog[];

/* ---- time ---------------------------------------------------------------- */

/**
 * vr_now_ns() - the monotonic clock (CLOCK_MONOTONIC).
 *
 * Return: nanoseconds since an arbitrary start; only differences mean anything.
 */
uint64_t vr_now_ns(void);

/**
 * vr_ns_to_s() - convert a duration.
 * @ns: duration, nanoseconds.
 *
 * Return: the same duration in seconds.
 */
double vr_ns_to_s(uint64_t ns);

/**
 * vr_sleep_ns() - sleep, unless a signal comes first.
 * @ns: how long, nanoseconds.
 *
 * A signal ends the sleep early (EINTR is not retried): callers look at
 * vr_stop_signal after it.
 */
void vr_sleep_ns(uint64_t ns);

/* ---- stop signals -------------------------------------------------------- */

/**
 * vr_stop_signal - the stop signal that arrived (SIGTERM, SIGINT or
 * SIGUSR1), 0 while none has. Set by the handler vr_catch_stop_signals()
 * installs; the fill and access loops of the programs poll it.
 */
extern volatile sig_atomic_t vr_stop_signal;

/**
 * vr_catch_stop_signals() - make SIGTERM, SIGINT and SIGUSR1 set
 * vr_stop_signal instead of ending the process.
 * @sa_flags: sigaction(2) flags for the handler: 0 so that a signal also
 *            interrupts a sleep, SA_RESTART so that blocking I/O resumes.
 *
 * Return: 0, or -1 after printing "PROG: sigaction: REASON" on stderr.
 */
int vr_catch_stop_signals(int sa_flags);

/**
 * vr_signal_name() - the name the output lines give a stop signal.
 * @signo: a signal number.
 *
 * Return: "SIGTERM", "SIGINT", "SIGUSR1", or "?" for any other signal; a
 * static string.
 */
const char *vr_signal_name(int signo);

/* ---- latency histogram --------------------------------------------------- */

/*
 * Logarithmic buckets: values below 16 ns have their own bucket, larger ones
 * 16 buckets per power of two (at most 6.25% wide). 976 buckets cover all of
 * uint64_t.
 */
#define VR_HIST_SUB_BITS 4u
#define VR_HIST_SUB	 (1u << VR_HIST_SUB_BITS)
#define VR_HIST_BUCKETS	 ((64u - VR_HIST_SUB_BITS + 1u) * VR_HIST_SUB)

/**
 * struct vr_hist - a latency distribution (7.8 KiB; all zero is empty, so
 * memset() clears it).
 * @count: samples added.
 * @max_ns: largest sample, ns.
 * @bucket: samples per bucket.
 */
struct vr_hist {
	uint64_t count;
	uint64_t max_ns;
	uint64_t bucket[VR_HIST_BUCKETS];
};

/**
 * vr_hist_add() - count one latency.
 * @h: the histogram.
 * @ns: the latency, nanoseconds.
 */
void vr_hist_add(struct vr_hist *h, uint64_t ns);

/**
 * vr_hist_quantile_us() - a quantile of the latencies.
 * @h: the histogram.
 * @q: the quantile, 0 < q <= 1 (0.99 for p99).
 *
 * The sample of rank ceil(@q x count) is reported as the middle of its
 * bucket, at most the largest sample.
 *
 * Return: the latency in µs; 0 for an empty histogram.
 */
double vr_hist_quantile_us(const struct vr_hist *h, double q);

/* ---- random numbers ------------------------------------------------------ */

/**
 * vr_mix64() - splitmix64's output function: a strong 64-bit mix, two
 * multiplications; every input bit affects every output bit.
 * @z: the input.
 *
 * Return: the mixed value.
 */
static inline uint64_t vr_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/**
 * vr_rng_next() - xorshift64*: the access sequences' generator, fast and
 * good enough.
 * @state: the generator's state, never 0; advanced.
 *
 * Return: the next 64-bit number.
 */
static inline uint64_t vr_rng_next(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* ---- command line -------------------------------------------------------- */

/**
 * enum vr_number_flags - how vr_parse_u64() reads and reports a number.
 * @VR_NUMBER_HEX: also accept hexadecimal with a 0x or 0X prefix.
 * @VR_NUMBER_SAY_WHOLE: the error says "expected a whole number MIN..MAX"
 *                       instead of "expected MIN..MAX".
 */
enum vr_number_flags {
	VR_NUMBER_HEX = 1u << 0,
	VR_NUMBER_SAY_WHOLE = 1u << 1,
};

/**
 * vr_parse_u64() - parse an option's value: a whole number in [@min, @max].
 * @opt: the option, for the message ("--size").
 * @arg: the value; decimal digits only (no sign, blanks or junk), or 0x hex
 *       with %VR_NUMBER_HEX.
 * @min: smallest value allowed.
 * @max: largest value allowed.
 * @flags: &enum vr_number_flags.
 * @out: the number, set only on success.
 *
 * Return: true, or false after printing
 * "PROG: OPT: expected MIN..MAX, got 'ARG'" on stderr.
 */
bool vr_parse_u64(const char *opt, const char *arg, uint64_t min, uint64_t max, unsigned flags,
		  uint64_t *out);

/**
 * vr_parse_unsigned() - vr_parse_u64() for an unsigned int option.
 * @opt: the option, for the message.
 * @arg: the value.
 * @min: smallest value allowed.
 * @max: largest value allowed.
 * @flags: &enum vr_number_flags.
 * @out: the number, set only on success.
 *
 * Return: true, or false after printing the message.
 */
bool vr_parse_unsigned(const char *opt, const char *arg, unsigned min, unsigned max, unsigned flags,
		       unsigned *out);

/**
 * vr_getopt_error() - report what getopt_long() did not accept.
 * @c: what getopt_long() returned: ':' (an option without its value; the
 *     option string starts with ':') or '?' (an unknown option).
 * @argv: the program's arguments.
 *
 * Prints "PROG: OPT: missing value" or "PROG: unknown option 'OPT' (see
 * --help)" on stderr. Needs opterr = 0.
 */
void vr_getopt_error(int c, char **argv);

/**
 * vr_no_operands() - check that getopt_long() left no argument over.
 * @argc: the number of arguments.
 * @argv: the program's arguments.
 *
 * Return: true if optind reached @argc, else false after printing
 * "PROG: unexpected argument 'ARG' (see --help)" on stderr.
 */
bool vr_no_operands(int argc, char **argv);

#endif /* VR_WORKLOAD_H */
