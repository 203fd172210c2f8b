// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vr-sqlload: the sqlite workload of the nested-VM benchmark (bench/vm/run).
 *
 * It runs inside the busybox test guest (C17, POSIX and libsqlite3, linked
 * dynamically: build-guest copies the library) and on the host for tests. It
 *   1. creates a database of about --size MiB at --db: one table
 *      t(id INTEGER PRIMARY KEY, val BLOB) of rows whose value (VALUE_BYTES)
 *      is a pure function of (seed, id) and compresses about 2.6:1,
 *   2. runs point reads "SELECT val FROM t WHERE id=?" for --duration seconds;
 *      the key is a Zipf(--zipf) rank sent through a seeded permutation of
 *      the ids, so the hot rows are spread over the whole file (hot and cold
 *      rows share pages, as in a real index); every read checks its value,
 *   3. runs PRAGMA integrity_check and checks the full value of a sample of
 *      the rows (--verify-percent, spread evenly), and exits 0 if all is well.
 *
 * The database file is the memory the host should reclaim: in the guest it
 * lives on the root tmpfs (shmem pages, which the guest can swap to zram).
 * sqlite's own page cache is kept small (--cache-mib) and memory mapping is
 * off, so reads go through the file with pread().
 *
 * Output (stdout, one line each, flushed at once; bench/vm/run parses keys):
 *   vr-sqlload: start db=PATH rows=N value_bytes=N zipf_theta=F cache_mib=N
 *               seed=N sqlite=VERSION
 *   vr-sqlload: filled size_bytes=N rows=N seconds=F
 *   vr-sqlload: progress t_s=F ops=N ops_per_s=F p50_us=F p99_us=F p999_us=F
 *   vr-sqlload: done seconds=F ops=N ops_per_s=F p50_us=F p99_us=F p999_us=F max_us=F
 *   vr-sqlload: integrity_check result=ok|FAILED seconds=F [first=MESSAGE]
 *   vr-sqlload: verify checked=N mismatches=N result=ok|FAILED
 * and, when they happen, "interrupted signal=NAME during=fill|access",
 * "fill stopped rows=N", "mismatch id=N ..." and "access mismatches=N" (a
 * read saw a wrong value: the run fails too).
 *
 * Exit status: 0 verified, 1 the data check failed, 2 usage error, 3 the
 * system refused (sqlite could not open or write the database, ...).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime(), sigaction() */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "vr-workload.h"

#define PROG "vr-sqlload"
const char vr_prog[] = PROG;

/*
 * A row's value: 125 words of 8 bytes. With sqlite's 4 KiB pages a cell of
 * such a row takes about 1011 bytes, so a leaf page holds 4 rows and the file
 * is about 1 KiB per row: --size MiB means 1024 rows per MiB.
 */
#define VALUE_WORDS  125u
#define VALUE_BYTES  (VALUE_WORDS * 8u)
#define ROWS_PER_MIB 1024u
/*
 * The first RANDOM_WORDS words are random, the rest repeat one word: a 4 KiB
 * page (4 rows) compresses to about 4 x 384 bytes, 2.6:1, like vr-memload's
 * default pages, so zram sees realistic data. No value is one repeated byte.
 */
#define RANDOM_WORDS 48u

/* Rows per fill transaction: 16 MiB of data, one commit every ~0.7 s on TCG. */
#define FILL_TXN_ROWS 16384u
/* sqlite page cache, MiB: small, so the reads go to the file (sqlite's default is ~2). */
#define DEFAULT_CACHE_MIB 2u
/* Default --size: this share of MemTotal, percent (the issue: about 60%). */
#define DEFAULT_SIZE_PERCENT 60u
/* Mismatching rows printed in full; the rest are only counted. */
#define MAX_PRINTED_MISMATCHES 5u
/* Zipf: ranks summed exactly before the integral approximation takes over. */
#define ZETA_EXACT_TERMS 10000u

/* Salts of the content and access generators (odd 64-bit constants). */
#define GOLDEN	      0x9e3779b97f4a7c15ULL
#define REPEAT_SALT   0xc2b2ae3d27d4eb4fULL
#define PERMUTE_SALT  0x165667b19e3779f9ULL
#define ACCESS_SALT   0x27d4eb2f165667c5ULL
#define CORRUPT_INDEX 500u /* byte of the value that --corrupt-row flips */

/**
 * struct options - the command line, after validation.
 * @db_path: the database file; created (an existing sqlite file is replaced).
 * @size_mib: database size target, MiB.
 * @duration_s: length of the access phase, seconds; 0 = until a signal.
 * @report_interval_s: seconds between progress lines; 0 = none.
 * @seed: selects the values, the hot rows and the access sequence.
 * @zipf_theta: skew of the key choice, [0, 1); 0 = uniform.
 * @cache_mib: sqlite page cache, MiB.
 * @verify_percent: share of the rows whose values the end check compares.
 * @corrupt_row: id of a row to damage before verifying, or 0 for none.
 * @keep: leave the database file after exit (default: remove it).
 */
struct options {
	const char *db_path;
	uint64_t size_mib;
	uint64_t duration_s;
	uint64_t report_interval_s;
	uint64_t seed;
	double zipf_theta;
	uint64_t cache_mib;
	unsigned verify_percent;
	uint64_t corrupt_row;
	bool keep;
};

/**
 * struct zipf_gen - Zipf(theta) ranks over [0, n), Gray et al.'s method
 * ("Quickly generating billion-record synthetic databases", as in YCSB).
 * @n: number of ranks.
 * @theta: skew.
 * @zeta_n: sum of 1/i^theta for i in 1..n.
 * @alpha: 1 / (1 - theta).
 * @eta: the method's scale for ranks above 1.
 * @rank1_limit: 1 + 0.5^theta, the bound of rank 1 on the u * zeta_n scale.
 */
struct zipf_gen {
	double n;
	double theta;
	double zeta_n;
	double alpha;
	double eta;
	double rank1_limit;
};

/**
 * struct permutation - a seeded bijection of [0, n): a 4-round Feistel
 * network over the smallest even-bit power of two >= n, walking the cycle
 * until the result is below n.
 * @n: size of the domain.
 * @half_bits: bits of each Feistel half.
 * @keys: the round keys.
 */
struct permutation {
	uint64_t n;
	unsigned half_bits;
	uint64_t keys[4];
};

/**
 * struct sqlload - the workload's state.
 * @db: the open database (owned).
 * @select: the prepared point read (owned).
 * @nr_rows: rows the database should hold (--size x ROWS_PER_MIB).
 * @nr_filled: rows inserted (fewer than @nr_rows if a signal cut the fill).
 */
struct sqlload {
	struct options opt;
	sqlite3 *db;
	sqlite3_stmt *select;
	uint64_t nr_rows;
	uint64_t nr_filled;
	/* private: */
	struct zipf_gen zipf;
	struct permutation perm;
	uint64_t nr_access_mismatches;
	struct vr_hist total;
	struct vr_hist interval;
};

/* ---- values -------------------------------------------------------------- */

/* Store @v little-endian, so the file is the same on every host. */
static inline void put_le64(unsigned char *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The value of row @id under @seed: VALUE_BYTES into @out. */
static void make_value(unsigned char *out, uint64_t seed, uint64_t id)
{
	uint64_t row_key = vr_mix64(seed ^ vr_mix64(id * GOLDEN));
	for (unsigned w = 0; w < RANDOM_WORDS; w++)
		put_le64(out + 8 * w, vr_mix64(row_key + (uint64_t)(w + 1) * GOLDEN));
	/* Bytes 0 and 1 of the repeated word differ: never one repeated byte. */
	uint64_t repeat = vr_mix64(row_key ^ REPEAT_SALT);
	repeat = (repeat & ~0xffffULL) | ((repeat & 0xffu) << 8) | ((repeat & 0xffu) ^ 0x5au);
	for (unsigned w = RANDOM_WORDS; w < VALUE_WORDS; w++)
		put_le64(out + 8 * w, repeat);
}

/* ---- key choice ---------------------------------------------------------- */

/*
 * Sum of 1/i^theta for i in 1..n: exact for the first ZETA_EXACT_TERMS terms,
 * then the integral of x^-theta over [K + 0.5, n + 0.5] (the midpoint rule,
 * within 1e-9 relative here), so a million rows cost no million pow() calls
 * on a TCG guest.
 */
static double zeta(uint64_t n, double theta)
{
	uint64_t exact = n < ZETA_EXACT_TERMS ? n : ZETA_EXACT_TERMS;
	double sum = 0.0;
	for (uint64_t i = 1; i <= exact; i++)
		sum += pow((double)i, -theta);
	if (n > exact) {
		double e = 1.0 - theta;
		sum += (pow((double)n + 0.5, e) - pow((double)exact + 0.5, e)) / e;
	}
	return sum;
}

static void zipf_init(struct zipf_gen *z, uint64_t n, double theta)
{
	double zeta2 = 1.0 + pow(0.5, theta);
	z->n = (double)n;
	z->theta = theta;
	z->zeta_n = zeta(n, theta);
	z->alpha = 1.0 / (1.0 - theta);
	z->rank1_limit = zeta2;
	/* With n <= 2 the two limits decide every draw. */
	z->eta = n > 2 ? (1.0 - pow(2.0 / z->n, 1.0 - theta)) / (1.0 - zeta2 / z->zeta_n) : 0.0;
}

/* A rank in [0, n), 0 the most popular; @u uniform in [0, 1). */
static uint64_t zipf_rank(const struct zipf_gen *z, double u)
{
	double uz = u * z->zeta_n;
	if (uz < 1.0)
		return 0;
	if (uz < z->rank1_limit)
		return 1;
	double r = z->n * pow(z->eta * u - z->eta + 1.0, z->alpha);
	return r < z->n ? (uint64_t)r : (uint64_t)z->n - 1;
}

static void permutation_init(struct permutation *p, uint64_t n, uint64_t seed)
{
	unsigned bits = 2;
	while (bits < 64 && (1ULL << bits) < n)
		bits += 2;
	p->n = n;
	p->half_bits = bits / 2;
	for (unsigned i = 0; i < 4; i++)
		p->keys[i] = vr_mix64(seed ^ (PERMUTE_SALT * (i + 1)));
}

/* The image of @x < n: each Feistel pass is a bijection, so is the walk. */
static uint64_t permute(const struct permutation *p, uint64_t x)
{
	uint64_t mask = (1ULL << p->half_bits) - 1;
	do {
		uint64_t left = x >> p->half_bits, right = x & mask;
		for (unsigned i = 0; i < 4; i++) {
			uint64_t next = left ^ (vr_mix64(right ^ p->keys[i]) & mask);
			left = right;
			right = next;
		}
		x = left << p->half_bits | right;
	} while (x >= p->n);
	return x;
}

/* ---- sqlite -------------------------------------------------------------- */

/* Size of the file at @path in bytes, 0 if it cannot be read. */
static uint64_t file_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Report a failed sqlite call: what we did, and sqlite's message. */
static void db_error(const struct sqlload *sl, const char *what)
{
	fprintf(stderr, PROG ": %s (%s): %s\n", what, sl->opt.db_path,
		sl->db ? sqlite3_errmsg(sl->db) : "out of memory");
}

static int db_exec(struct sqlload *sl, const char *sql)
{
	if (sqlite3_exec(sl->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		db_error(sl, sql);
		return -1;
	}
	return 0;
}

/*
 * Check that @path may be replaced: absent, empty, or a sqlite database. Any
 * other file is left alone (exit 2), so a typo cannot delete a user's file.
 */
static int check_db_path(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f && errno == ENOENT)
		return 0;
	if (!f) {
		fprintf(stderr, PROG ": --db: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char magic[16] = { 0 };
	size_t got = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	if (got == 0 || (got == sizeof(magic) && memcmp(magic, "SQLite format 3", 16) == 0))
		return 0;
	fprintf(stderr, PROG ": --db: %s exists and is not a sqlite database; not replacing it\n",
		path);
	return -1;
}

/*
 * Check that a database of --size MiB fits the file system of --db (after
 * removing an old one), so a full disk shows up at once and not after
 * minutes of filling. A tmpfs gets half the RAM by default: in the test guest
 * the root holds at most ~480 MiB unless remounted with a bigger size=.
 */
static int check_free_space(const struct sqlload *sl)
{
	const char *path = sl->opt.db_path;
	const char *slash = strrchr(path, '/');
	char dir[4096];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	struct statvfs vfs;
	if (statvfs(dir, &vfs) < 0) {
		fprintf(stderr, PROG ": --db: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	uint64_t free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize + file_bytes(path);
	/* The file is about 0.4% larger than --size (b-tree interior pages). */
	uint64_t need = sl->nr_rows * (1048576u / ROWS_PER_MIB) * 1005 / 1000;
	if (free_bytes >= need)
		return 0;
	fprintf(stderr,
		PROG ": --size %" PRIu64 " MiB does not fit in %s: %" PRIu64 " MiB free there"
		     " (a tmpfs has half the RAM unless mounted with a bigger size=)\n",
		sl->opt.size_mib, dir, free_bytes >> 20);
	return -1;
}

/* Open a fresh database at --db with the workload's settings. */
static int db_open(struct sqlload *sl)
{
	const char *path = sl->opt.db_path;
	if (unlink(path) < 0 && errno != ENOENT) {
		fprintf(stderr, PROG ": remove old %s: %s\n", path, strerror(errno));
		return -1;
	}
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(path, &sl->db, flags, NULL) != SQLITE_OK) {
		db_error(sl, "open");
		return -1;
	}
	/*
	 * No journal and no fsync: the data set is rebuilt on every run.
	 * Exclusive locking: no fcntl() per query, and the page cache stays
	 * valid between transactions. mmap off: reads are pread()s of the file.
	 */
	char cache_sql[64];
	snprintf(cache_sql, sizeof(cache_sql), "PRAGMA cache_size=-%" PRIu64,
		 sl->opt.cache_mib * 1024);
	if (db_exec(sl, "PRAGMA page_size=4096") < 0 ||
	    db_exec(sl, "PRAGMA journal_mode=OFF") < 0 ||
	    db_exec(sl, "PRAGMA synchronous=OFF") < 0 ||
	    db_exec(sl, "PRAGMA locking_mode=EXCLUSIVE") < 0 ||
	    db_exec(sl, "PRAGMA mmap_size=0") < 0 || db_exec(sl, cache_sql) < 0 ||
	    db_exec(sl, "CREATE TABLE t(id INTEGER PRIMARY KEY, val BLOB NOT NULL)") < 0)
		return -1;
	return 0;
}

/* Insert rows 1..nr_rows in FILL_TXN_ROWS transactions until done or a signal. */
static int fill(struct sqlload *sl)
{
	sqlite3_stmt *insert = NULL;
	unsigned char value[VALUE_BYTES];
	int rc = -1;
	if (sqlite3_prepare_v2(sl->db, "INSERT INTO t(id, val) VALUES(?, ?)", -1, &insert, NULL) !=
	    SQLITE_OK) {
		db_error(sl, "prepare INSERT");
		return -1;
	}
	uint64_t id = 1;
	while (id <= sl->nr_rows && !vr_stop_signal) {
		uint64_t end = id + FILL_TXN_ROWS;
		if (end > sl->nr_rows + 1)
			end = sl->nr_rows + 1;
		if (db_exec(sl, "BEGIN") < 0)
			goto out;
		for (; id < end; id++) {
			make_value(value, sl->opt.seed, id);
			sqlite3_bind_int64(insert, 1, (sqlite3_int64)id);
			sqlite3_bind_blob(insert, 2, value, VALUE_BYTES, SQLITE_STATIC);
			if (sqlite3_step(insert) != SQLITE_DONE) {
				db_error(sl, "INSERT");
				goto out;
			}
			sqlite3_reset(insert);
		}
		if (db_exec(sl, "COMMIT") < 0)
			goto out;
		sl->nr_filled = id - 1;
	}
	rc = 0;
out:
	sqlite3_finalize(insert);
	return rc;
}

/*
 * Read row @id into the caller's view: 1 found, 0 absent, -1 error. On 1,
 * *@val points into sqlite's memory until sqlite3_reset(sl->select).
 */
static int read_row(struct sqlload *sl, uint64_t id, const void **val, int *len)
{
	sqlite3_bind_int64(sl->select, 1, (sqlite3_int64)id);
	int rc = sqlite3_step(sl->select);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW) {
		db_error(sl, "SELECT");
		return -1;
	}
	*val = sqlite3_column_blob(sl->select, 0);
	*len = sqlite3_column_bytes(sl->select, 0);
	return 1;
}

/* Does a read of row @id match @expect? Prints the first few mismatches. */
static bool check_value(uint64_t id, int found, const void *val, int len,
			const unsigned char *expect, uint64_t nr_seen, const char *during)
{
	if (found == 1 && len == (int)VALUE_BYTES && memcmp(val, expect, VALUE_BYTES) == 0)
		return true;
	if (nr_seen < MAX_PRINTED_MISMATCHES) {
		if (found != 1) {
			printf(PROG ": mismatch id=%" PRIu64 " missing=1 during=%s\n", id, during);
		} else {
			int at = 0;
			const unsigned char *got = val;
			while (at < len && at < (int)VALUE_BYTES && got[at] == expect[at])
				at++;
			printf(PROG ": mismatch id=%" PRIu64 " len=%d byte=%d during=%s\n", id, len,
			       at, during);
		}
	}
	return false;
}

/* ---- the three stages ---------------------------------------------------- */

static void print_progress(struct sqlload *sl, uint64_t t_ns, uint64_t interval_ns)
{
	const struct vr_hist *h = &sl->interval;
	printf(PROG ": progress t_s=%.3f ops=%" PRIu64 " ops_per_s=%.1f p50_us=%.3f p99_us=%.3f"
		    " p999_us=%.3f\n",
	       vr_ns_to_s(t_ns), h->count,
	       interval_ns ? (double)h->count / vr_ns_to_s(interval_ns) : 0.0,
	       vr_hist_quantile_us(h, 0.50), vr_hist_quantile_us(h, 0.99),
	       vr_hist_quantile_us(h, 0.999));
	memset(&sl->interval, 0, sizeof(sl->interval));
}

/* The access phase: point reads until the duration ends or a stop signal. */
static int access_phase(struct sqlload *sl)
{
	const struct options *o = &sl->opt;
	uint64_t rng = vr_mix64(o->seed ^ ACCESS_SALT) | 1;
	unsigned char expect[VALUE_BYTES];
	uint64_t start = vr_now_ns(), now = start;
	uint64_t end = o->duration_s ? start + o->duration_s * VR_NS_PER_S : UINT64_MAX;
	uint64_t report_ns = o->report_interval_s * VR_NS_PER_S;
	uint64_t next_report = report_ns ? start + report_ns : UINT64_MAX;
	uint64_t last_report = start;
	int rc = 0;

	/* A fill cut short by a signal leaves nothing to measure. */
	while (sl->nr_filled == sl->nr_rows && !vr_stop_signal && now < end) {
		double u = (double)(vr_rng_next(&rng) >> 11) * 0x1.0p-53;
		uint64_t id = permute(&sl->perm, zipf_rank(&sl->zipf, u)) + 1;
		make_value(expect, o->seed, id);

		const void *val = NULL;
		int len = 0;
		uint64_t t0 = vr_now_ns();
		int found = read_row(sl, id, &val, &len);
		bool same = found >= 0 && check_value(id, found, val, len, expect,
						      sl->nr_access_mismatches, "access");
		sqlite3_reset(sl->select);
		now = vr_now_ns();
		if (found < 0) {
			rc = -1;
			break;
		}
		if (!same)
			sl->nr_access_mismatches++;
		vr_hist_add(&sl->total, now - t0);
		vr_hist_add(&sl->interval, now - t0);
		if (now >= next_report) {
			print_progress(sl, now - start, now - last_report);
			last_report = now;
			while (next_report <= now)
				next_report += report_ns;
		}
	}
	if (vr_stop_signal && sl->nr_filled == sl->nr_rows)
		printf(PROG ": interrupted signal=%s during=access\n",
		       vr_signal_name(vr_stop_signal));

	const struct vr_hist *h = &sl->total;
	uint64_t elapsed = now - start;
	printf(PROG ": done seconds=%.3f ops=%" PRIu64 " ops_per_s=%.1f p50_us=%.3f p99_us=%.3f"
		    " p999_us=%.3f max_us=%.3f\n",
	       vr_ns_to_s(elapsed), h->count,
	       elapsed ? (double)h->count / vr_ns_to_s(elapsed) : 0.0, vr_hist_quantile_us(h, 0.50),
	       vr_hist_quantile_us(h, 0.99), vr_hist_quantile_us(h, 0.999),
	       (double)h->max_ns / 1000.0);
	return rc;
}

/* --corrupt-row: flip one byte of the row's value in the database. */
static int corrupt_row(struct sqlload *sl, uint64_t id)
{
	unsigned char value[VALUE_BYTES];
	sqlite3_stmt *update = NULL;
	make_value(value, sl->opt.seed, id);
	value[CORRUPT_INDEX] ^= 0xff;
	if (sqlite3_prepare_v2(sl->db, "UPDATE t SET val=? WHERE id=?", -1, &update, NULL) !=
	    SQLITE_OK) {
		db_error(sl, "prepare UPDATE");
		return -1;
	}
	sqlite3_bind_blob(update, 1, value, VALUE_BYTES, SQLITE_STATIC);
	sqlite3_bind_int64(update, 2, (sqlite3_int64)id);
	int rc = sqlite3_step(update);
	sqlite3_finalize(update);
	if (rc != SQLITE_DONE) {
		db_error(sl, "UPDATE");
		return -1;
	}
	printf(PROG ": corrupted id=%" PRIu64 " byte=%u\n", id, CORRUPT_INDEX);
	return 0;
}

/* PRAGMA integrity_check: 1 "ok", 0 problems found, -1 could not run. */
static int integrity_check(struct sqlload *sl)
{
	sqlite3_stmt *st = NULL;
	uint64_t t0 = vr_now_ns();
	if (sqlite3_prepare_v2(sl->db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK) {
		db_error(sl, "prepare PRAGMA integrity_check");
		return -1;
	}
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		db_error(sl, "PRAGMA integrity_check");
		sqlite3_finalize(st);
		return -1;
	}
	const char *first = (const char *)sqlite3_column_text(st, 0);
	bool ok = first && strcmp(first, "ok") == 0;
	double seconds = vr_ns_to_s(vr_now_ns() - t0);
	if (ok)
		printf(PROG ": integrity_check result=ok seconds=%.3f\n", seconds);
	else
		printf(PROG ": integrity_check result=FAILED seconds=%.3f first=%s\n", seconds,
		       first ? first : "(null)");
	sqlite3_finalize(st);
	return ok ? 1 : 0;
}

/*
 * Compare the full value of every k-th filled row (k = 100 / --verify-percent,
 * starting at id 1); returns the rows checked, the mismatches in *@nr_bad.
 */
static int64_t verify_sample(struct sqlload *sl, uint64_t *nr_bad)
{
	unsigned char expect[VALUE_BYTES];
	uint64_t stride = 100u / sl->opt.verify_percent;
	uint64_t checked = 0;
	*nr_bad = 0;
	for (uint64_t id = 1; id <= sl->nr_filled; id += stride) {
		const void *val = NULL;
		int len = 0;
		make_value(expect, sl->opt.seed, id);
		int found = read_row(sl, id, &val, &len);
		bool same = found >= 0 &&
			    check_value(id, found, val, len, expect, *nr_bad, "verify");
		sqlite3_reset(sl->select);
		if (found < 0)
			return -1;
		if (!same)
			(*nr_bad)++;
		checked++;
	}
	return (int64_t)checked;
}

/* ---- command line -------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("Usage: " PROG " [OPTION]...\n"
	      "Build a sqlite database of verifiable rows, query it with skewed point reads,\n"
	      "then check it (PRAGMA integrity_check and a sample of the values).\n"
	      "\n"
	      "      --db PATH             database file (default /tmp/vr-sqlload.db); an\n"
	      "                            existing sqlite file there is replaced\n"
	      "  -s, --size MIB            database size target (default 60% of MemTotal)\n"
	      "  -d, --duration S          query phase in seconds; 0 = until SIGTERM, SIGINT\n"
	      "                            or SIGUSR1 (default 60)\n"
	      "      --seed N              values, hot rows and query sequence (default 1)\n"
	      "      --zipf THETA          key skew, 0 (uniform) to below 1 (default 0.99)\n"
	      "      --report-interval S   seconds between progress lines; 0 = none\n"
	      "                            (default 10)\n"
	      "      --cache-mib N         sqlite page cache in MiB (default 2)\n"
	      "      --verify-percent P    rows whose values the end check compares, 1..100,\n"
	      "                            every (100/P)-th from id 1 (default 1)\n"
	      "      --keep                keep the database file (default: removed at exit)\n"
	      "  -h, --help                show this help\n"
	      "\n"
	      "Debugging:\n"
	      "      --corrupt-row ID      flip a byte of row ID before the check; ID must be\n"
	      "                            a checked row: 1, 1 + 100/P, 1 + 2 x 100/P, ...\n"
	      "\n"
	      "Exit status: 0 verified, 1 check failed, 2 usage error, 3 system error.\n",
	      out);
}

/* --zipf: a plain decimal in [0, 1) (Gray's method needs theta != 1). */
static bool parse_theta(const char *arg, double *out)
{
	bool ok = arg[0] != '\0' && strspn(arg, "0123456789.") == strlen(arg);
	char *end = NULL;
	double v = 0.0;
	if (ok) {
		errno = 0;
		v = strtod(arg, &end);
		ok = errno == 0 && *end == '\0' && v >= 0.0 && v < 1.0;
	}
	if (!ok) {
		fprintf(stderr, PROG ": --zipf: expected a number from 0 to below 1, got '%s'\n",
			arg);
		return false;
	}
	*out = v;
	return true;
}

/* MemTotal of /proc/meminfo in KiB, 0 if unknown. */
static uint64_t mem_total_kib(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	uint64_t kib = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %" SCNu64 " kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

/* Largest --size, MiB: 1 TiB, far above any test guest. */
#define MAX_SIZE_MIB (1ULL << 20)
/* Longest --duration and --report-interval, seconds: 30 days. */
#define MAX_SECONDS (30ULL * 24 * 3600)
/* Largest --cache-mib: 64 GiB. */
#define MAX_CACHE_MIB (64ULL * 1024)

enum {
	OPT_DB = 256,
	OPT_SEED,
	OPT_ZIPF,
	OPT_REPORT,
	OPT_CACHE,
	OPT_VERIFY,
	OPT_CORRUPT,
	OPT_KEEP,
};

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, OPT_DB },
		{ "size", required_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "zipf", required_argument, NULL, OPT_ZIPF },
		{ "report-interval", required_argument, NULL, OPT_REPORT },
		{ "cache-mib", required_argument, NULL, OPT_CACHE },
		{ "verify-percent", required_argument, NULL, OPT_VERIFY },
		{ "corrupt-row", required_argument, NULL, OPT_CORRUPT },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct options){
		.db_path = "/tmp/vr-sqlload.db", /* the guest's root is a tmpfs */
		.size_mib = 0,			 /* 0 = DEFAULT_SIZE_PERCENT of MemTotal */
		.duration_s = 60,
		.report_interval_s = 10,
		.seed = 1,
		.zipf_theta = 0.99, /* YCSB's default skew */
		.cache_mib = DEFAULT_CACHE_MIB,
		.verify_percent = 1, /* integrity_check reads every page anyway */
		.corrupt_row = 0,
		.keep = false,
	};
	uint64_t v = 0;
	bool ok = true;
	int c;

	opterr = 0; /* our messages name the option */
	while (ok && (c = getopt_long(argc, argv, ":s:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DB:
			ok = optarg[0] != '\0';
			if (!ok)
				fprintf(stderr, PROG ": --db: expected a file path, got ''\n");
			o->db_path = optarg;
			break;
		case 's':
			ok = vr_parse_u64("--size", optarg, 1, MAX_SIZE_MIB, VR_NUMBER_SAY_WHOLE,
					  &o->size_mib);
			break;
		case 'd':
			ok = vr_parse_u64("--duration", optarg, 0, MAX_SECONDS, VR_NUMBER_SAY_WHOLE,
					  &o->duration_s);
			break;
		case OPT_SEED:
			ok = vr_parse_u64("--seed", optarg, 0, UINT64_MAX, VR_NUMBER_SAY_WHOLE,
					  &o->seed);
			break;
		case OPT_ZIPF:
			ok = parse_theta(optarg, &o->zipf_theta);
			break;
		case OPT_REPORT:
			ok = vr_parse_u64("--report-interval", optarg, 0, MAX_SECONDS,
					  VR_NUMBER_SAY_WHOLE, &o->report_interval_s);
			break;
		case OPT_CACHE:
			ok = vr_parse_u64("--cache-mib", optarg, 1, MAX_CACHE_MIB,
					  VR_NUMBER_SAY_WHOLE, &o->cache_mib);
			break;
		case OPT_VERIFY:
			ok = vr_parse_u64("--verify-percent", optarg, 1, 100, VR_NUMBER_SAY_WHOLE,
					  &v);
			o->verify_percent = (unsigned)v;
			break;
		case OPT_CORRUPT:
			ok = vr_parse_u64("--corrupt-row", optarg, 1, UINT64_MAX,
					  VR_NUMBER_SAY_WHOLE, &o->corrupt_row);
			break;
		case OPT_KEEP:
			o->keep = true;
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
	if (o->size_mib == 0) {
		uint64_t kib = mem_total_kib();
		o->size_mib = kib * DEFAULT_SIZE_PERCENT / 100 / 1024;
		if (o->size_mib == 0) {
			fprintf(stderr,
				PROG ": --size: no MemTotal in /proc/meminfo to take %u%%"
				     " of; give --size\n",
				DEFAULT_SIZE_PERCENT);
			return 2;
		}
	}
	uint64_t nr_rows = o->size_mib * ROWS_PER_MIB;
	if (o->corrupt_row > nr_rows) {
		fprintf(stderr,
			PROG ": --corrupt-row: expected 1..%" PRIu64 " (the rows of --size %" PRIu64
			     "), got '%" PRIu64 "'\n",
			nr_rows, o->size_mib, o->corrupt_row);
		return 2;
	}
	uint64_t stride = 100u / o->verify_percent;
	if (o->corrupt_row && (o->corrupt_row - 1) % stride != 0) {
		fprintf(stderr,
			PROG ": --corrupt-row: %" PRIu64 " is not a checked row (1, %" PRIu64
			     ", %" PRIu64 ", ...: every 100/--verify-percent-th), the check"
			     " would miss it\n",
			o->corrupt_row, 1 + stride, 1 + 2 * stride);
		return 2;
	}
	if (check_db_path(o->db_path) < 0)
		return 2;
	return 0;
}

/* ---- main ---------------------------------------------------------------- */

static void release(struct sqlload *sl)
{
	sqlite3_finalize(sl->select);
	sl->select = NULL;
	if (sl->db && sqlite3_close(sl->db) != SQLITE_OK)
		db_error(sl, "close");
	sl->db = NULL;
	if (!sl->opt.keep && unlink(sl->opt.db_path) < 0 && errno != ENOENT)
		fprintf(stderr, PROG ": remove %s: %s\n", sl->opt.db_path, strerror(errno));
}

/* Everything after the options: 0 verified, 1 check failed, 3 system error. */
static int run(struct sqlload *sl)
{
	const struct options *o = &sl->opt;
	sl->nr_rows = o->size_mib * ROWS_PER_MIB;
	zipf_init(&sl->zipf, sl->nr_rows, o->zipf_theta);
	permutation_init(&sl->perm, sl->nr_rows, o->seed);

	printf(PROG ": start db=%s rows=%" PRIu64
		    " value_bytes=%u zipf_theta=%.3f cache_mib=%" PRIu64 " seed=%" PRIu64
		    " sqlite=%s\n",
	       o->db_path, sl->nr_rows, VALUE_BYTES, o->zipf_theta, o->cache_mib, o->seed,
	       sqlite3_libversion());
	if (check_free_space(sl) < 0)
		return 3;
	uint64_t t0 = vr_now_ns();
	if (db_open(sl) < 0 || fill(sl) < 0)
		return 3;
	double fill_s = vr_ns_to_s(vr_now_ns() - t0);
	if (vr_stop_signal) {
		printf(PROG ": interrupted signal=%s during=fill\n",
		       vr_signal_name(vr_stop_signal));
		printf(PROG ": fill stopped rows=%" PRIu64 "\n", sl->nr_filled);
	}
	printf(PROG ": filled size_bytes=%" PRIu64 " rows=%" PRIu64 " seconds=%.3f\n",
	       file_bytes(o->db_path), sl->nr_filled, fill_s);

	if (sqlite3_prepare_v2(sl->db, "SELECT val FROM t WHERE id=?", -1, &sl->select, NULL) !=
	    SQLITE_OK) {
		db_error(sl, "prepare SELECT");
		return 3;
	}
	if (access_phase(sl) < 0)
		return 3;

	if (o->corrupt_row && o->corrupt_row <= sl->nr_filled &&
	    corrupt_row(sl, o->corrupt_row) < 0)
		return 3;
	int intact = integrity_check(sl);
	uint64_t nr_bad = 0;
	int64_t checked = intact < 0 ? -1 : verify_sample(sl, &nr_bad);
	if (checked < 0)
		return 3;
	bool ok = intact == 1 && nr_bad == 0 && sl->nr_access_mismatches == 0;
	if (sl->nr_access_mismatches)
		printf(PROG ": access mismatches=%" PRIu64 "\n", sl->nr_access_mismatches);
	printf(PROG ": verify checked=%" PRId64 " mismatches=%" PRIu64 " result=%s\n", checked,
	       nr_bad, ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	/* static: two 8 KiB histograms, zeroed. */
	static struct sqlload sl;
	int rc = parse_args(argc, argv, &sl.opt);
	if (rc != 0)
		return rc == 1 ? 0 : 2;

	setvbuf(stdout, NULL, _IOLBF, 0); /* a harness reads a serial console log */
	/* SIGTERM, SIGINT and SIGUSR1 end the fill or the access phase. */
	if (vr_catch_stop_signals(0) < 0)
		return 3;
	rc = run(&sl);
	release(&sl);
	return rc;
}
