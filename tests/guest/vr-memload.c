// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vr-memload: the workload of the end-to-end tests and benchmarks.
 *
 * It runs inside the busybox test guest (a static executable: plain C17, POSIX
 * and libc only) and on the host for experiments. It
 *   1. maps --size MiB of anonymous private memory (THP per --thp),
 *   2. fills every 4 KiB page with content that is a pure function of
 *      (seed, page index, page version) and compresses about --compress-ratio:1,
 *   3. reads (and per --write-percent rewrites) a hot set of pages for
 *      --duration seconds, never touching the cold pages again,
 *   4. verifies every page and exits 0 if all match, 1 if not.
 *
 * Page content: the first 4096/R bytes are counter-based random words
 * (splitmix64 of seed, page index and word index; the first cache line also
 * of the page's version, bumped by each rewrite), the rest one repeated
 * 8-byte word, so lz4 stores about 4096/R bytes. No page is ever one repeated
 * byte or word, which zram would store for free. Any word can be recomputed
 * alone: an access checks one word, the final verification every byte.
 *
 * Hot set: hot-percent of the pages. Clustered: a window of contiguous pages;
 * interleaved: every k-th page. With --phases K it moves K-1 times: to the
 * next window, or to the next offset within k.
 *
 * Output (stdout, one line each, flushed at once; a harness parses the keys):
 *   vr-memload: start size_bytes=N pages=N hot_pages=N layout=L pattern=P thp=T
 *               compress_ratio=R phases=K seed=S
 *   vr-memload: filled size_bytes=N hot_bytes=N cold_bytes=N seconds=F
 *   vr-memload: phase index=K t_s=F first_page=N
 *   vr-memload: progress t_s=F ops=N ops_per_s=N p50_us=F p99_us=F p999_us=F
 *   vr-memload: done seconds=F ops=N ops_per_s=N p50_us=F p99_us=F p999_us=F max_us=F
 *   vr-memload: verify pages=N mismatches=N result=ok|FAILED
 * and, when they happen, "interrupted signal=NAME during=fill|access",
 * "fill stopped filled_pages=N pages=N", "mismatch page=N word=N ..." and
 * "access mismatches=N" (an access saw a wrong word: the run fails too).
 *
 * Exit status: 0 verified, 1 a page did not verify, 2 usage error, 3 the
 * system refused (mmap, ...).
 */
#define _DEFAULT_SOURCE /* madvise(), MADV_*HUGEPAGE, clock_gettime() */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vr-workload.h"

#define PROG "vr-memload"
const char vr_prog[] = PROG;

/* The unit of content and of the hot set: 4 KiB, the base page of x86-64. */
#define PAGE_BYTES     4096u
#define PAGE_WORDS     (PAGE_BYTES / 8u)
#define LINE_WORDS     8u /* one 64-byte cache line */
#define LINES_PER_PAGE (PAGE_WORDS / LINE_WORDS)
#define PAGES_PER_MIB  (1048576u / PAGE_BYTES)
/* Alignment of the mapping, so that --thp on can use whole 2 MiB huge pages. */
#define HUGE_PAGE_BYTES (2u * 1048576u)

/* Pages filled between two looks at the stop flag: 1 MiB, a few ms under TCG. */
#define FILL_CHECK_PAGES 256u
/* Longest sleep of an access phase without hot pages: keeps reports on time. */
#define IDLE_SLEEP_NS (100ULL * 1000 * 1000)
/* Mismatching pages printed in full; the rest are only counted. */
#define MAX_PRINTED_MISMATCHES 5u
/* Zipf exponent for --pattern zipf: 0.99, YCSB's default skew. */
#define ZIPF_THETA 0.99

/* Constants of the content generator (splitmix64's increment and two salts). */
#define GOLDEN	     0x9e3779b97f4a7c15ULL
#define VERSION_SALT 0xd1b54a32d192ed03ULL
#define PATTERN_SALT 0x8cb92ba72f3d8dd7ULL
#define ACCESS_SALT  0x2545f4914f6cdd1dULL

enum thp_mode {
	THP_OFF,
	THP_ON,
	THP_SYSTEM
};
enum layout {
	LAYOUT_CLUSTERED,
	LAYOUT_INTERLEAVED
};
enum pattern {
	PATTERN_UNIFORM,
	PATTERN_SEQUENTIAL,
	PATTERN_ZIPF
};

static const char *const thp_names[] = { "off", "on", "system" };
static const char *const layout_names[] = { "clustered", "interleaved" };
static const char *const pattern_names[] = { "uniform", "sequential", "zipf" };

/**
 * struct options - the command line, after validation.
 * @size_mib: memory to allocate and fill, MiB.
 * @seed: selects the page content and the access sequence.
 * @duration_s: length of the access phase, seconds; 0 = until a signal.
 * @report_interval_s: seconds between progress lines; 0 = none.
 * @hot_percent: share of the pages in the hot set, percent.
 * @write_percent: share of the accesses that rewrite a page, percent.
 * @compress_ratio: about how well a page compresses (R:1); 1 = not at all.
 * @phases: number of hot sets the access phase moves through.
 * @corrupt_page: page to damage before verifying, or -1.
 * @dump_pages: write this many raw pages to stdout instead of running; 0 = off.
 */
struct options {
	uint64_t size_mib;
	uint64_t seed;
	uint64_t duration_s;
	uint64_t report_interval_s;
	unsigned hot_percent;
	unsigned write_percent;
	unsigned compress_ratio;
	unsigned phases;
	enum thp_mode thp;
	enum layout layout;
	enum pattern pattern;
	int64_t corrupt_page;
	uint64_t dump_pages;
};

/* Zipf sampler (Gray et al., "Quickly generating billion-record databases"). */
struct zipf {
	double n;
	double zetan;
	double alpha;
	double eta;
	double two_threshold; /* 1 + 0.5^theta: below it, rank 1 */
};

/**
 * struct memload - the workload's state.
 * @mem: the mapping's first page (2 MiB aligned).
 * @nr_pages: pages in @mem.
 * @nr_filled: pages filled so far (less than @nr_pages if a signal cut the fill).
 * @nr_hot: pages in the hot set of each phase.
 * @stride: interleaved layout: one hot page every @stride pages.
 * @nr_random_words: leading 8-byte words of a page that are random; the rest
 *                   repeat one word.
 * @versions: per page, bumped by each rewrite; selects the first line's content.
 */
struct memload {
	struct options opt;
	uint64_t *mem;
	size_t nr_pages;
	size_t nr_filled;
	size_t nr_hot;
	size_t stride;
	unsigned nr_random_words;
	uint8_t *versions;
	struct zipf zipf;
	/* private: */
	void *map_base;
	size_t map_bytes;
	uint64_t nr_access_mismatches;
	struct vr_hist total;
	struct vr_hist interval;
};

/* ---- page content ------------------------------------------------------- */

static inline uint64_t page_key(uint64_t seed, size_t page)
{
	return vr_mix64(seed ^ vr_mix64((uint64_t)page + GOLDEN));
}

/* Random word @w of a page: counter-based, so any word costs one vr_mix64(). */
static inline uint64_t random_word(uint64_t key, unsigned w, uint64_t salt)
{
	return vr_mix64(key + (uint64_t)(w + 1) * GOLDEN + salt);
}

/* The first cache line depends on the page's version, the rest does not. */
static inline uint64_t line0_salt(uint8_t version)
{
	return (uint64_t)version * VERSION_SALT;
}

/*
 * The word repeated over the rest of the page. Its bytes 0 and 1 differ, so
 * no page is ever one repeated byte (or word), which zram would store for free.
 */
static inline uint64_t pattern_word(uint64_t key)
{
	uint64_t x = vr_mix64(key ^ PATTERN_SALT);
	return (x & ~0xffULL) | (((x >> 8) & 0xffu) ^ 0xa5u);
}

/* Expected value of word @w of a page whose key and version are given. */
static inline uint64_t expected_word(const struct memload *ml, uint64_t key, uint8_t version,
				     unsigned w)
{
	if (w >= ml->nr_random_words)
		return pattern_word(key);
	return random_word(key, w, w < LINE_WORDS ? line0_salt(version) : 0);
}

/* The expected first cache line of a page. */
static void make_line0(uint64_t *line, uint64_t key, uint8_t version)
{
	for (unsigned w = 0; w < LINE_WORDS; w++)
		line[w] = random_word(key, w, line0_salt(version));
}

/* Write the expected content of a page: no call per word once inlined. */
static void make_page(uint64_t *words, uint64_t key, uint8_t version, unsigned nr_random_words)
{
	make_line0(words, key, version);
	for (unsigned w = LINE_WORDS; w < nr_random_words; w++)
		words[w] = random_word(key, w, 0);
	uint64_t pattern = pattern_word(key);
	for (unsigned w = nr_random_words; w < PAGE_WORDS; w++)
		words[w] = pattern;
}

/* ---- hot set and access pattern ---------------------------------------- */

static void zipf_init(struct zipf *z, size_t n)
{
	double zetan = 0.0;
	for (size_t i = 1; i <= n; i++)
		zetan += pow((double)i, -ZIPF_THETA);
	double zeta2 = 1.0 + pow(2.0, -ZIPF_THETA);
	z->n = (double)n;
	z->zetan = zetan;
	z->alpha = 1.0 / (1.0 - ZIPF_THETA);
	z->two_threshold = zeta2;
	/* With n <= 2 the two thresholds decide every sample; eta is unused. */
	z->eta = n > 2 ? (1.0 - pow(2.0 / z->n, 1.0 - ZIPF_THETA)) / (1.0 - zeta2 / zetan) : 0.0;
}

/* A rank in [0, n): rank 0 is the most popular. @u is uniform in [0, 1). */
static size_t zipf_rank(const struct zipf *z, double u)
{
	double uz = u * z->zetan;
	if (uz < 1.0)
		return 0;
	if (uz < z->two_threshold)
		return 1;
	double r = z->n * pow(z->eta * u - z->eta + 1.0, z->alpha);
	return r < z->n ? (size_t)r : (size_t)z->n - 1;
}

/*
 * Page of hot-set member @i in @phase. Clustered: a window of nr_hot pages
 * that moves by nr_hot pages per phase (wrapping at the end of the memory).
 * Interleaved: every stride-th page, starting one page further each phase.
 */
static size_t hot_page(const struct memload *ml, size_t i, unsigned phase)
{
	if (ml->opt.layout == LAYOUT_CLUSTERED)
		return (size_t)(((uint64_t)phase * ml->nr_hot + i) % ml->nr_pages);
	return i * ml->stride + phase % ml->stride;
}

/* ---- the three stages -------------------------------------------------- */

static int map_memory(struct memload *ml)
{
	size_t bytes = ml->nr_pages * PAGE_BYTES;
	ml->map_bytes = bytes + HUGE_PAGE_BYTES;
	ml->map_base = mmap(NULL, ml->map_bytes, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ml->map_base == MAP_FAILED) {
		fprintf(stderr, PROG ": mmap %" PRIu64 " MiB: %s\n", ml->opt.size_mib,
			strerror(errno));
		ml->map_base = NULL;
		return -1;
	}
	uintptr_t aligned = ((uintptr_t)ml->map_base + HUGE_PAGE_BYTES - 1) &
			    ~(uintptr_t)(HUGE_PAGE_BYTES - 1);
	ml->mem = (uint64_t *)aligned;

	if (ml->opt.thp != THP_SYSTEM) {
		int advice = ml->opt.thp == THP_ON ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
		/* A kernel without THP refuses; the run is still meaningful. */
		if (madvise(ml->mem, bytes, advice) < 0)
			fprintf(stderr, PROG ": warning: madvise --thp %s: %s\n",
				thp_names[ml->opt.thp], strerror(errno));
	}
	ml->versions = calloc(ml->nr_pages, 1);
	if (!ml->versions) {
		fprintf(stderr, PROG ": out of memory for %zu page versions\n", ml->nr_pages);
		return -1;
	}
	return 0;
}

/* Fill the pages in order until all are filled or a stop signal arrives. */
static double fill(struct memload *ml)
{
	uint64_t start = vr_now_ns();
	size_t page = 0;
	while (page < ml->nr_pages && !vr_stop_signal) {
		size_t end = page + FILL_CHECK_PAGES;
		if (end > ml->nr_pages)
			end = ml->nr_pages;
		for (; page < end; page++)
			make_page(ml->mem + page * PAGE_WORDS, page_key(ml->opt.seed, page), 0,
				  ml->nr_random_words);
	}
	ml->nr_filled = page;
	return vr_ns_to_s(vr_now_ns() - start);
}

static void print_filled(const struct memload *ml, double seconds)
{
	if (vr_stop_signal) {
		printf(PROG ": interrupted signal=%s during=fill\n",
		       vr_signal_name(vr_stop_signal));
		printf(PROG ": fill stopped filled_pages=%zu pages=%zu\n", ml->nr_filled,
		       ml->nr_pages);
	}
	uint64_t size_bytes = (uint64_t)ml->nr_pages * PAGE_BYTES;
	uint64_t hot_bytes = (uint64_t)ml->nr_hot * PAGE_BYTES;
	printf(PROG ": filled size_bytes=%" PRIu64 " hot_bytes=%" PRIu64 " cold_bytes=%" PRIu64
		    " seconds=%.3f\n",
	       size_bytes, hot_bytes, size_bytes - hot_bytes, seconds);
}

static void print_progress(struct memload *ml, uint64_t t_ns, uint64_t interval_ns)
{
	const struct vr_hist *h = &ml->interval;
	double rate = interval_ns ? (double)h->count / vr_ns_to_s(interval_ns) : 0.0;
	printf(PROG ": progress t_s=%.3f ops=%" PRIu64 " ops_per_s=%.0f p50_us=%.3f p99_us=%.3f"
		    " p999_us=%.3f\n",
	       vr_ns_to_s(t_ns), h->count, rate, vr_hist_quantile_us(h, 0.50),
	       vr_hist_quantile_us(h, 0.99), vr_hist_quantile_us(h, 0.999));
	memset(&ml->interval, 0, sizeof(ml->interval));
}

static void report_access_mismatch(struct memload *ml, size_t page, unsigned w, uint64_t want,
				   uint64_t got)
{
	if (++ml->nr_access_mismatches <= MAX_PRINTED_MISMATCHES)
		printf(PROG ": mismatch page=%zu word=%u expected=0x%016" PRIx64
			    " got=0x%016" PRIx64 " during=access\n",
		       page, w, want, got);
}

/* Pick the hot-set member of the next access. */
static size_t next_member(struct memload *ml, uint64_t *rng, size_t *cursor)
{
	switch (ml->opt.pattern) {
	case PATTERN_SEQUENTIAL:
		return (*cursor)++ % ml->nr_hot;
	case PATTERN_ZIPF:
		return zipf_rank(&ml->zipf, (double)(vr_rng_next(rng) >> 11) * 0x1.0p-53);
	case PATTERN_UNIFORM:
	default:
		return vr_rng_next(rng) % ml->nr_hot;
	}
}

/*
 * One access: read one cache line of @page through a volatile pointer (so
 * the loads happen), check one of its words, and maybe rewrite the first
 * line with the content of the page's next version. The expected values are
 * computed before the clock starts: the latency is the memory's.
 */
static void access_one(struct memload *ml, size_t page, uint64_t r)
{
	uint64_t *words = ml->mem + page * PAGE_WORDS;
	uint64_t key = page_key(ml->opt.seed, page);
	uint8_t version = ml->versions[page];
	unsigned line = (unsigned)(r % LINES_PER_PAGE);
	unsigned w = line * LINE_WORDS + (unsigned)((r >> 8) % LINE_WORDS);
	uint64_t want = expected_word(ml, key, version, w);
	bool write = (r >> 16) % 100 < ml->opt.write_percent;
	uint64_t new_line0[LINE_WORDS];
	if (write)
		make_line0(new_line0, key, (uint8_t)(version + 1));

	uint64_t t0 = vr_now_ns();
	const volatile uint64_t *src = words + line * LINE_WORDS;
	uint64_t seen[LINE_WORDS];
	for (unsigned i = 0; i < LINE_WORDS; i++)
		seen[i] = src[i];
	if (write)
		memcpy(words, new_line0, sizeof(new_line0));
	uint64_t t1 = vr_now_ns();

	if (write)
		ml->versions[page] = (uint8_t)(version + 1);
	vr_hist_add(&ml->total, t1 - t0);
	vr_hist_add(&ml->interval, t1 - t0);
	if (seen[w % LINE_WORDS] != want)
		report_access_mismatch(ml, page, w, want, seen[w % LINE_WORDS]);
}

/* The access phase: runs until the duration ends or a stop signal arrives. */
static void access_phase(struct memload *ml)
{
	const struct options *o = &ml->opt;
	uint64_t rng = vr_mix64(o->seed ^ ACCESS_SALT) | 1;
	size_t cursor = 0;
	unsigned phase = 0;
	uint64_t start = vr_now_ns(), now = start;
	uint64_t end = o->duration_s ? start + o->duration_s * VR_NS_PER_S : UINT64_MAX;
	uint64_t report_ns = o->report_interval_s * VR_NS_PER_S;
	uint64_t next_report = report_ns ? start + report_ns : UINT64_MAX;
	uint64_t last_report = start;
	uint64_t phase_ns = o->duration_s * VR_NS_PER_S / o->phases;
	uint64_t next_phase = o->phases > 1 ? start + phase_ns : UINT64_MAX;

	while (!vr_stop_signal && now < end) {
		if (ml->nr_hot == 0) {
			uint64_t wake = end < next_report ? end : next_report;
			uint64_t nap = wake - now < IDLE_SLEEP_NS ? wake - now : IDLE_SLEEP_NS;
			vr_sleep_ns(nap);
		} else {
			uint64_t r = vr_rng_next(&rng);
			size_t page = hot_page(ml, next_member(ml, &rng, &cursor), phase);
			access_one(ml, page, r);
		}
		now = vr_now_ns();
		if (now >= next_report) {
			print_progress(ml, now - start, now - last_report);
			last_report = now;
			while (next_report <= now)
				next_report += report_ns;
		}
		if (now >= next_phase && phase + 1 < o->phases) {
			phase++;
			next_phase += phase_ns;
			printf(PROG ": phase index=%u t_s=%.3f first_page=%zu\n", phase,
			       vr_ns_to_s(now - start), hot_page(ml, 0, phase));
		}
	}
	if (vr_stop_signal && ml->nr_filled == ml->nr_pages)
		printf(PROG ": interrupted signal=%s during=access\n",
		       vr_signal_name(vr_stop_signal));

	const struct vr_hist *h = &ml->total;
	uint64_t elapsed = now - start;
	double rate = elapsed ? (double)h->count / vr_ns_to_s(elapsed) : 0.0;
	printf(PROG ": done seconds=%.3f ops=%" PRIu64 " ops_per_s=%.0f p50_us=%.3f p99_us=%.3f"
		    " p999_us=%.3f max_us=%.3f\n",
	       vr_ns_to_s(elapsed), h->count, rate, vr_hist_quantile_us(h, 0.50),
	       vr_hist_quantile_us(h, 0.99), vr_hist_quantile_us(h, 0.999),
	       (double)h->max_ns / 1000.0);
}

/* Compare every filled page with its expected content; return mismatches. */
static size_t verify(const struct memload *ml)
{
	uint64_t expect[PAGE_WORDS];
	size_t nr_bad = 0;
	for (size_t page = 0; page < ml->nr_filled; page++) {
		const uint64_t *words = ml->mem + page * PAGE_WORDS;
		make_page(expect, page_key(ml->opt.seed, page), ml->versions[page],
			  ml->nr_random_words);
		if (memcmp(expect, words, PAGE_BYTES) == 0)
			continue;
		if (++nr_bad > MAX_PRINTED_MISMATCHES)
			continue;
		unsigned w = 0;
		while (w < PAGE_WORDS - 1 && expect[w] == words[w])
			w++;
		printf(PROG ": mismatch page=%zu word=%u expected=0x%016" PRIx64
			    " got=0x%016" PRIx64 "\n",
		       page, w, expect[w], words[w]);
	}
	return nr_bad;
}

/* Write the first @n pages, raw, to stdout (for compression checks). */
static int dump_pages(const struct memload *ml, uint64_t n)
{
	const char *p = (const char *)ml->mem;
	size_t left = (size_t)n * PAGE_BYTES;
	fflush(stdout);
	while (left > 0) {
		ssize_t done = write(STDOUT_FILENO, p, left);
		if (done < 0 && errno == EINTR)
			continue;
		if (done < 0) {
			perror(PROG ": write");
			return -1;
		}
		p += done;
		left -= (size_t)done;
	}
	return 0;
}

/* ---- command line ------------------------------------------------------ */

static void usage(FILE *out)
{
	fputs("Usage: " PROG " [OPTION]...\n"
	      "Fill memory with verifiable data, access a hot set of it, then verify it all.\n"
	      "\n"
	      "  -s, --size MIB            memory to allocate (default 256)\n"
	      "      --seed N              content and access sequence seed (default 1)\n"
	      "      --thp on|off|system   madvise huge pages on, off, or leave it to the\n"
	      "                            system (default off)\n"
	      "      --compress-ratio R    pages compress about R:1, 1..64; 1 = random\n"
	      "                            (default 3)\n"
	      "  -d, --duration S          access phase in seconds; 0 = until SIGTERM,\n"
	      "                            SIGINT or SIGUSR1 (default 60)\n"
	      "      --hot-percent P       hot set, percent of the pages (default 10)\n"
	      "      --layout L            clustered (hot pages contiguous) or interleaved\n"
	      "                            (every k-th page) (default clustered)\n"
	      "      --pattern P           uniform, sequential or zipf (default uniform)\n"
	      "      --phases K            split the duration into K phases, moving the hot\n"
	      "                            set at each (default 1)\n"
	      "      --write-percent W     accesses that rewrite the page (default 0)\n"
	      "      --report-interval S   seconds between progress lines; 0 = none\n"
	      "                            (default 10)\n"
	      "  -h, --help                show this help\n"
	      "\n"
	      "Debugging:\n"
	      "      --corrupt-page I      flip a byte of page I before verifying\n"
	      "      --dump-pages N        fill, write the first N pages to stdout, exit\n"
	      "\n"
	      "Exit status: 0 verified, 1 verification failed, 2 usage error, 3 system error.\n",
	      out);
}

static bool parse_choice(const char *opt, const char *arg, const char *const *names, unsigned n,
			 unsigned *out)
{
	for (unsigned i = 0; i < n; i++) {
		if (strcmp(arg, names[i]) == 0) {
			*out = i;
			return true;
		}
	}
	fprintf(stderr, PROG ": %s: expected ", opt);
	for (unsigned i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? "|" : "", names[i]);
	fprintf(stderr, ", got '%s'\n", arg);
	return false;
}

#define NAMES(a) a, (unsigned)(sizeof(a) / sizeof(a[0]))

/* Largest --size, MiB: 1 TiB, far above any test guest. */
#define MAX_SIZE_MIB (1ULL << 20)
/* Longest --duration and --report-interval, seconds: 30 days. */
#define MAX_SECONDS (30ULL * 24 * 3600)

enum {
	OPT_SEED = 256,
	OPT_THP,
	OPT_COMPRESS,
	OPT_HOT,
	OPT_LAYOUT,
	OPT_PATTERN,
	OPT_PHASES,
	OPT_WRITE,
	OPT_REPORT,
	OPT_CORRUPT,
	OPT_DUMP,
};

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "thp", required_argument, NULL, OPT_THP },
		{ "compress-ratio", required_argument, NULL, OPT_COMPRESS },
		{ "duration", required_argument, NULL, 'd' },
		{ "hot-percent", required_argument, NULL, OPT_HOT },
		{ "layout", required_argument, NULL, OPT_LAYOUT },
		{ "pattern", required_argument, NULL, OPT_PATTERN },
		{ "phases", required_argument, NULL, OPT_PHASES },
		{ "write-percent", required_argument, NULL, OPT_WRITE },
		{ "report-interval", required_argument, NULL, OPT_REPORT },
		{ "corrupt-page", required_argument, NULL, OPT_CORRUPT },
		{ "dump-pages", required_argument, NULL, OPT_DUMP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct options){
		.size_mib = 256, /* big enough to matter, small for a TCG guest */
		.seed = 1,
		.duration_s = 60,
		.report_interval_s = 10,
		.hot_percent = 10, /* a typical working set: most memory is idle */
		.write_percent = 0,
		.compress_ratio = 3, /* lz4 on typical anonymous memory */
		.phases = 1,
		.thp = THP_OFF, /* 4 KiB pages: what page-granular reclaim sees */
		.layout = LAYOUT_CLUSTERED,
		.pattern = PATTERN_UNIFORM,
		.corrupt_page = -1,
		.dump_pages = 0,
	};
	uint64_t corrupt = 0;
	bool has_corrupt = false;
	bool ok = true;
	unsigned choice = 0;
	int c;

	opterr = 0; /* our messages name the option */
	while (ok && (c = getopt_long(argc, argv, ":s:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			ok = vr_parse_u64("--size", optarg, 1, MAX_SIZE_MIB, VR_NUMBER_HEX,
					  &o->size_mib);
			break;
		case 'd':
			ok = vr_parse_u64("--duration", optarg, 0, MAX_SECONDS, VR_NUMBER_HEX,
					  &o->duration_s);
			break;
		case OPT_SEED:
			ok = vr_parse_u64("--seed", optarg, 0, UINT64_MAX, VR_NUMBER_HEX, &o->seed);
			break;
		case OPT_THP:
			ok = parse_choice("--thp", optarg, NAMES(thp_names), &choice);
			o->thp = (enum thp_mode)choice;
			break;
		case OPT_COMPRESS:
			ok = vr_parse_unsigned("--compress-ratio", optarg, 1, LINES_PER_PAGE,
					       VR_NUMBER_HEX, &o->compress_ratio);
			break;
		case OPT_HOT:
			ok = vr_parse_unsigned("--hot-percent", optarg, 0, 100, VR_NUMBER_HEX,
					       &o->hot_percent);
			break;
		case OPT_LAYOUT:
			ok = parse_choice("--layout", optarg, NAMES(layout_names), &choice);
			o->layout = (enum layout)choice;
			break;
		case OPT_PATTERN:
			ok = parse_choice("--pattern", optarg, NAMES(pattern_names), &choice);
			o->pattern = (enum pattern)choice;
			break;
		case OPT_PHASES:
			ok = vr_parse_unsigned("--phases", optarg, 1, 1000, VR_NUMBER_HEX,
					       &o->phases);
			break;
		case OPT_WRITE:
			ok = vr_parse_unsigned("--write-percent", optarg, 0, 100, VR_NUMBER_HEX,
					       &o->write_percent);
			break;
		case OPT_REPORT:
			ok = vr_parse_u64("--report-interval", optarg, 0, MAX_SECONDS,
					  VR_NUMBER_HEX, &o->report_interval_s);
			break;
		case OPT_CORRUPT:
			ok = vr_parse_u64("--corrupt-page", optarg, 0, INT64_MAX, VR_NUMBER_HEX,
					  &corrupt);
			has_corrupt = true;
			break;
		case OPT_DUMP:
			ok = vr_parse_u64("--dump-pages", optarg, 1, UINT64_MAX, VR_NUMBER_HEX,
					  &o->dump_pages);
			break;
		case 'h':
			usage(stdout);
			return 1;
		default: /* ':' a missing value, '?' an unknown option */
			vr_getopt_error(c, argv);
			ok = false;
			break;
		}
	}
	if (!ok || !vr_no_operands(argc, argv))
		return 2;

	/* Checks that involve several options. */
	uint64_t nr_pages = o->size_mib * PAGES_PER_MIB;
	if (o->hot_percent > 0 && nr_pages * o->hot_percent / 100 == 0) {
		fprintf(stderr, PROG ": --hot-percent: %u%% of %" PRIu64 " pages is no page\n",
			o->hot_percent, nr_pages);
		return 2;
	}
	if (o->phases > 1 && o->duration_s == 0) {
		fprintf(stderr, PROG ": --phases: %u phases need a --duration above 0\n",
			o->phases);
		return 2;
	}
	if (has_corrupt) {
		if (corrupt >= nr_pages) {
			fprintf(stderr,
				PROG ": --corrupt-page: expected 0..%" PRIu64
				     " (--size), got '%" PRIu64 "'\n",
				nr_pages - 1, corrupt);
			return 2;
		}
		o->corrupt_page = (int64_t)corrupt;
	}
	if (o->dump_pages > nr_pages) {
		fprintf(stderr,
			PROG ": --dump-pages: expected 1..%" PRIu64 " (--size), got '%" PRIu64
			     "'\n",
			nr_pages, o->dump_pages);
		return 2;
	}
	return 0;
}

/* ---- main -------------------------------------------------------------- */

static void release(struct memload *ml)
{
	if (ml->map_base)
		munmap(ml->map_base, ml->map_bytes);
	free(ml->versions);
}

int main(int argc, char **argv)
{
	/* static: two 8 KiB histograms, and zeroed like a fresh workload. */
	static struct memload ml;
	int rc = parse_args(argc, argv, &ml.opt);
	if (rc != 0)
		return rc == 1 ? 0 : 2;
	const struct options *o = &ml.opt;

	setvbuf(stdout, NULL, _IOLBF, 0); /* a test reads a serial console log */
	/* No SA_RESTART: a signal also ends the sleep of an idle access phase. */
	if (vr_catch_stop_signals(0) < 0)
		return 3;

	ml.nr_pages = (size_t)(o->size_mib * PAGES_PER_MIB);
	ml.nr_hot = (size_t)((uint64_t)ml.nr_pages * o->hot_percent / 100);
	ml.stride = ml.nr_hot ? ml.nr_pages / ml.nr_hot : 1;
	ml.nr_random_words = PAGE_WORDS / o->compress_ratio;
	if (ml.nr_random_words < LINE_WORDS)
		ml.nr_random_words = LINE_WORDS;
	if (o->pattern == PATTERN_ZIPF && ml.nr_hot > 0)
		zipf_init(&ml.zipf, ml.nr_hot);
	if (map_memory(&ml) < 0) {
		release(&ml);
		return 3;
	}

	if (o->dump_pages) {
		(void)fill(&ml);
		if (ml.nr_filled < o->dump_pages)
			fprintf(stderr, PROG ": interrupted by %s\n",
				vr_signal_name(vr_stop_signal));
		rc = ml.nr_filled >= o->dump_pages ? dump_pages(&ml, o->dump_pages) : -1;
		release(&ml);
		return rc < 0 ? 3 : 0;
	}

	printf(PROG ": start size_bytes=%" PRIu64 " pages=%zu hot_pages=%zu layout=%s pattern=%s"
		    " thp=%s compress_ratio=%u phases=%u seed=%" PRIu64 "\n",
	       (uint64_t)ml.nr_pages * PAGE_BYTES, ml.nr_pages, ml.nr_hot, layout_names[o->layout],
	       pattern_names[o->pattern], thp_names[o->thp], o->compress_ratio, o->phases, o->seed);
	print_filled(&ml, fill(&ml));
	access_phase(&ml);

	if (o->corrupt_page >= 0 && (size_t)o->corrupt_page < ml.nr_filled) {
		unsigned char *byte =
			(unsigned char *)(ml.mem + (size_t)o->corrupt_page * PAGE_WORDS);
		byte[100] ^= 0xff; /* word 12: verify checks every byte */
	}
	size_t nr_bad = verify(&ml);
	bool ok = nr_bad == 0 && ml.nr_access_mismatches == 0;
	if (ml.nr_access_mismatches)
		printf(PROG ": access mismatches=%" PRIu64 "\n", ml.nr_access_mismatches);
	printf(PROG ": verify pages=%zu mismatches=%zu result=%s\n", ml.nr_filled, nr_bad,
	       ok ? "ok" : "FAILED");
	release(&ml);
	return ok ? 0 : 1;
}
