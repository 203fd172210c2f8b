// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vr-workload: the parts the workload programs share (see vr-workload.h).
 */
#define _DEFAULT_SOURCE /* clock_gettime(), nanosleep(), sigaction() */

#include "vr-workload.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- time ---------------------------------------------------------------- */

uint64_t vr_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VR_NS_PER_S + (uint64_t)ts.tv_nsec;
}

double vr_ns_to_s(uint64_t ns)
{
	return (double)ns / (double)VR_NS_PER_S;
}

void vr_sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / VR_NS_PER_S),
			       .tv_nsec = (long)(ns % VR_NS_PER_S) };
	nanosleep(&ts, NULL); /* EINTR is fine: the caller looks at the flag */
}

/* ---- stop signals -------------------------------------------------------- */

volatile sig_atomic_t vr_stop_signal;

static void on_stop_signal(int signo)
{
	vr_stop_signal = signo;
}

int vr_catch_stop_signals(int sa_flags)
{
	static const int signals[] = { SIGTERM, SIGINT, SIGUSR1 };
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = sa_flags;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		if (sigaction(signals[i], &sa, NULL) < 0) {
			fprintf(stderr, "%s: sigaction: %s\n", vr_prog, strerror(errno));
			return -1;
		}
	}
	return 0;
}

const char *vr_signal_name(int signo)
{
	switch (signo) {
	case SIGTERM:
		return "SIGTERM";
	case SIGINT:
		return "SIGINT";
	case SIGUSR1:
		return "SIGUSR1";
	default:
		return "?";
	}
}

/* ---- latency histogram --------------------------------------------------- */

/* Index of the highest set bit of @v > 0, without compiler builtins. */
static unsigned msb64(uint64_t v)
{
	unsigned r = 0;
	for (unsigned shift = 32; shift > 0; shift /= 2) {
		if (v >> shift) {
			v >>= shift;
			r += shift;
		}
	}
	return r;
}

static unsigned hist_bucket(uint64_t ns)
{
	if (ns < VR_HIST_SUB)
		return (unsigned)ns;
	unsigned shift = msb64(ns) - VR_HIST_SUB_BITS;
	return (shift + 1u) * VR_HIST_SUB + (unsigned)((ns >> shift) & (VR_HIST_SUB - 1u));
}

/* The middle of bucket @b, in ns. */
static uint64_t hist_bucket_mid(unsigned b)
{
	if (b < VR_HIST_SUB)
		return b;
	unsigned shift = b / VR_HIST_SUB - 1u;
	uint64_t lower = (uint64_t)(VR_HIST_SUB + b % VR_HIST_SUB) << shift;
	return lower + ((1ULL << shift) >> 1);
}

void vr_hist_add(struct vr_hist *h, uint64_t ns)
{
	h->bucket[hist_bucket(ns)]++;
	h->count++;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

double vr_hist_quantile_us(const struct vr_hist *h, double q)
{
	if (h->count == 0)
		return 0.0;
	uint64_t rank = (uint64_t)ceil(q * (double)h->count);
	uint64_t seen = 0;
	for (unsigned b = 0; b < VR_HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= rank) {
			uint64_t ns = hist_bucket_mid(b);
			return (double)(ns < h->max_ns ? ns : h->max_ns) / 1000.0;
		}
	}
	return (double)h->max_ns / 1000.0;
}

/* ---- command line -------------------------------------------------------- */

bool vr_parse_u64(const char *opt, const char *arg, uint64_t min, uint64_t max, unsigned flags,
		  uint64_t *out)
{
	const char *digits = arg;
	const char *valid = "0123456789";
	int base = 10;
	if ((flags & VR_NUMBER_HEX) && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
		digits += 2;
		valid = "0123456789abcdefABCDEF";
		base = 16;
	}
	bool ok = digits[0] != '\0' && strspn(digits, valid) == strlen(digits);
	unsigned long long v = 0;
	if (ok) {
		errno = 0;
		v = strtoull(digits, NULL, base);
		ok = errno == 0 && v >= min && v <= max;
	}
	if (!ok) {
		fprintf(stderr, "%s: %s: expected %s%" PRIu64 "..%" PRIu64 ", got '%s'\n", vr_prog,
			opt, (flags & VR_NUMBER_SAY_WHOLE) ? "a whole number " : "", min, max, arg);
		return false;
	}
	*out = v;
	return true;
}

bool vr_parse_unsigned(const char *opt, const char *arg, unsigned min, unsigned max, unsigned flags,
		       unsigned *out)
{
	uint64_t v;
	if (!vr_parse_u64(opt, arg, min, max, flags, &v))
		return false;
	*out = (unsigned)v;
	return true;
}

void vr_getopt_error(int c, char **argv)
{
	if (c == ':')
		fprintf(stderr, "%s: %s: missing value\n", vr_prog, argv[optind - 1]);
	else if (optopt) /* '?': optopt is the unknown short option, 0 for a long one */
		fprintf(stderr, "%s: unknown option '-%c' (see --help)\n", vr_prog, optopt);
	else
		fprintf(stderr, "%s: unknown option '%s' (see --help)\n", vr_prog,
			argv[optind - 1]);
}

bool vr_no_operands(int argc, char **argv)
{
	if (optind >= argc)
		return true;
	fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", vr_prog, argv[optind]);
	return false;
}
