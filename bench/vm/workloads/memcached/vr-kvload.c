// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vr-kvload: the memcached client of the nested-VM benchmark's memcached
 * workload (bench/vm/workloads/memcached/vr-memcached-load starts memcached
 * and runs it).
 *
 * It runs inside the busybox test guest (a static executable: plain C17, POSIX
 * and libc only) and on the host for tests. Over one TCP connection speaking
 * memcached's text protocol it
 *   1. loads --size MiB of values (keys "k0000000000".., --value-bytes each,
 *      sets pipelined in batches),
 *   2. runs a get-heavy mix for --duration seconds: --set-percent of the
 *      requests rewrite a key with its own value, the rest get it; a hot set of
 *      --hot-percent of the keys (spread evenly over the key space, or the
 *      first keys with --hot-layout clustered, which lie together in
 *      memcached's slab pages) takes --hot-access-percent of the requests, the
 *      rest go to any key; every get's value is checked,
 *   3. verifies a sample of the keys (--verify-percent, chosen by a hash of
 *      seed and key; 100 = all) with multi-gets and exits 0 if all match.
 *
 * Values are a pure function of (seed, key): the first value_bytes/R bytes
 * counter-based random words (splitmix64 of seed, key and word index), the
 * rest one repeated 8-byte word, so lz4 stores about 1/R of them (zram in the
 * guest). Any value can be recomputed alone, so any get can be checked.
 *
 * Why not memaslap (libmemcached-tools' memcaslap, 1.1.4), which the guest
 * also has: its gets pick keys uniformly (random() % window) from each
 * connection's window of recently set keys, so a hot set of 10% of a loaded
 * data set cannot be expressed; it has no separate load of N keys (sets keep
 * adding new keys unless --overwrite); its latency report is min/max/mean/
 * standard deviation and a histogram with power-of-two buckets, so no p99
 * better than a factor of two; and --verify checks a share of the gets as they
 * happen, not a sample of the data set at the end.
 *
 * Output (stdout, one line each, flushed at once; NAME is --name):
 *   NAME: start size_bytes=N keys=N hot_keys=N value_bytes=N set_percent=N
 *         hot_access_percent=N hot_layout=L seed=S
 *   NAME: filled size_bytes=N keys=N seconds=F
 *   NAME: progress t_s=F ops=N ops_per_s=F p50_us=F p99_us=F p999_us=F
 *         (the requests since the last progress line; t_s since the access
 *         phase began)
 *   NAME: done seconds=F ops=N ops_per_s=F p50_us=F p99_us=F p999_us=F max_us=F
 *   NAME: verify checked=N mismatches=N result=ok|FAILED
 * and, when they happen, "interrupted signal=NAME during=fill", "mismatch
 * key=K reason=missing|value|length" (the first few) and "access mismatches=N"
 * (a get in the access phase saw a wrong or missing value: the run fails too).
 *
 * Exit status: 0 verified, 1 a value did not verify, 2 usage error, 3 the
 * system refused (no connection, memcached answered an error, ...).
 */
#define _DEFAULT_SOURCE /* clock_gettime(), nanosleep(), struct timeval */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "vr-workload.h"

#define PROG "vr-kvload"
const char vr_prog[] = PROG;

#define MIB	    1048576ULL
#define MAX_SECONDS (10ULL * 365 * 24 * 3600)
/* memcached's default item size limit is 1 MiB; stay well below it. */
#define MAX_VALUE_BYTES (512u * 1024u)
/* Key: "k" and ten digits, so keys sort like their index. */
#define KEY_FMT	  "k%010" PRIu64
#define KEY_CHARS 11u
#define MAX_KEYS  10000000000ULL
/* Sets sent before their replies are read: hides the round trip in the fill. */
#define FILL_BATCH 64u
/* Keys per multi-get in the final verification. */
#define VERIFY_BATCH 64u
/* A request unanswered this long means memcached is stuck: exit 3. */
#define IO_TIMEOUT_S 60
/* Mismatches printed in full; the rest are only counted. */
#define MAX_PRINTED_MISMATCHES 5u
/* The longest reply line we accept ("VALUE key flags bytes"). */
#define MAX_LINE 256u

/* Constants of the content generator (splitmix64's increment and salts). */
#define GOLDEN	     0x9e3779b97f4a7c15ULL
#define PATTERN_SALT 0x8cb92ba72f3d8dd7ULL
#define ACCESS_SALT  0x2545f4914f6cdd1dULL
#define VERIFY_SALT  0xd1b54a32d192ed03ULL

enum hot_layout {
	HOT_SPREAD,
	HOT_CLUSTERED
};
static const char *const hot_layout_names[] = { "spread", "clustered" };

/**
 * struct options - the command line, after validation.
 * @name: prefix of the output lines.
 * @host: memcached's IPv4 address.
 * @port: memcached's TCP port.
 * @size_mib: data set to load (values only), MiB.
 * @value_bytes: length of each value, bytes.
 * @compress_ratio: about how well a value compresses (R:1); 1 = not at all.
 * @seed: selects the values and the access sequence.
 * @duration_s: length of the access phase, seconds; 0 = until a signal.
 * @report_interval_s: seconds between progress lines; 0 = none.
 * @hot_percent: share of the keys in the hot set, percent.
 * @hot_access_percent: share of the requests that go to the hot set, percent.
 * @set_percent: share of the requests that are sets, percent.
 * @verify_percent: share of the keys checked at the end, percent.
 * @hot_layout: which keys are hot.
 * @connect_timeout_s: how long to retry connecting (memcached starting), s.
 */
struct options {
	const char *name;
	struct in_addr host;
	unsigned port;
	uint64_t size_mib;
	unsigned value_bytes;
	unsigned compress_ratio;
	uint64_t seed;
	uint64_t duration_s;
	uint64_t report_interval_s;
	unsigned hot_percent;
	unsigned hot_access_percent;
	unsigned set_percent;
	unsigned verify_percent;
	enum hot_layout hot_layout;
	unsigned connect_timeout_s;
};

/**
 * struct conn - a connection to memcached with a read buffer.
 * @fd: the socket.
 * @buf: bytes received and not consumed yet are buf[@start, @end).
 */
struct conn {
	int fd;
	size_t start;
	size_t end;
	char buf[65536];
};

/**
 * struct kvload - the workload's state.
 * @nr_keys: keys in the data set.
 * @nr_filled: keys loaded (less than @nr_keys if a signal cut the fill).
 * @nr_hot: keys in the hot set.
 * @nr_random_words: leading 8-byte words of a value that are random.
 * @value: scratch buffer of value_bytes + 8 (expected values, sets).
 * @reply: scratch buffer of value_bytes + 2 (values read back).
 */
struct kvload {
	struct options opt;
	uint64_t nr_keys;
	uint64_t nr_filled;
	uint64_t nr_hot;
	unsigned nr_random_words;
	struct conn *conn;
	char *value;
	char *reply;
	/* private: */
	uint64_t nr_access_mismatches;
	unsigned nr_printed;
	struct vr_hist total;
	struct vr_hist interval;
};

/* ---- values -------------------------------------------------------------- */

/*
 * The value of key @k into @out (value_bytes bytes; @out has room for 8
 * more). The repeated word's bytes 0 and 1 differ, so no value is one
 * repeated byte.
 */
static void make_value(const struct kvload *kv, uint64_t k, char *out)
{
	uint64_t base = vr_mix64(kv->opt.seed ^ vr_mix64(k + GOLDEN));
	unsigned nr_words = (kv->opt.value_bytes + 7u) / 8u;
	uint64_t x = vr_mix64(base ^ PATTERN_SALT);
	uint64_t pattern = (x & ~0xffULL) | (((x >> 8) & 0xffu) ^ 0xa5u);
	for (unsigned w = 0; w < nr_words; w++) {
		uint64_t word = w < kv->nr_random_words ?
					vr_mix64(base + (uint64_t)(w + 1) * GOLDEN) :
					pattern;
		memcpy(out + (size_t)w * 8u, &word, 8);
	}
}

/* True for a key in the final verification's sample. */
static bool in_sample(const struct kvload *kv, uint64_t k)
{
	if (kv->opt.verify_percent >= 100)
		return true;
	return vr_mix64(kv->opt.seed ^ VERIFY_SALT ^ vr_mix64(k)) % 10000u <
	       kv->opt.verify_percent * 100u;
}

/* Key of hot-set member @i: evenly spread over the keys, or the first keys. */
static uint64_t hot_key(const struct kvload *kv, uint64_t i)
{
	if (kv->opt.hot_layout == HOT_CLUSTERED)
		return i;
	return i * kv->nr_keys / kv->nr_hot;
}

/* ---- the connection ------------------------------------------------------ */

/* Connects, retrying until @timeout_s while memcached starts; NULL on failure. */
static struct conn *conn_open(const struct options *o)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)o->port);
	sa.sin_addr = o->host;
	char addr[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &o->host, addr, sizeof(addr));

	uint64_t deadline = vr_now_ns() + (uint64_t)o->connect_timeout_s * VR_NS_PER_S;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			fprintf(stderr, PROG ": socket: %s\n", strerror(errno));
			return NULL;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			int one = 1;
			struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			struct conn *c = calloc(1, sizeof(*c));
			if (!c) {
				close(fd);
				fprintf(stderr, PROG ": out of memory\n");
				return NULL;
			}
			c->fd = fd;
			return c;
		}
		int err = errno;
		close(fd);
		if (vr_stop_signal || vr_now_ns() >= deadline) {
			fprintf(stderr, PROG ": cannot connect to memcached at %s:%u: %s\n", addr,
				o->port, strerror(err));
			return NULL;
		}
		vr_sleep_ns(100ULL * 1000 * 1000);
	}
}

static void conn_close(struct conn *c)
{
	if (c) {
		close(c->fd);
		free(c);
	}
}

static int conn_write(struct conn *c, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(c->fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, PROG ": sending to memcached: %s\n",
				n < 0 ? strerror(errno) : "connection closed");
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads more into the buffer (compacting it first); -1 on error or EOF. */
static int conn_fill(struct conn *c)
{
	if (c->start > 0) {
		memmove(c->buf, c->buf + c->start, c->end - c->start);
		c->end -= c->start;
		c->start = 0;
	}
	if (c->end == sizeof(c->buf)) {
		fprintf(stderr, PROG ": memcached sent an over-long line\n");
		return -1;
	}
	for (;;) {
		ssize_t n = read(c->fd, c->buf + c->end, sizeof(c->buf) - c->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, PROG ": reading from memcached: %s\n",
				n < 0 ? (errno == EAGAIN ? "no reply within the timeout" :
							   strerror(errno)) :
					"connection closed");
			return -1;
		}
		c->end += (size_t)n;
		return 0;
	}
}

/* The next reply line without its "\r\n", NUL-terminated into @line. */
static int conn_line(struct conn *c, char *line, size_t size)
{
	for (;;) {
		char *lf = memchr(c->buf + c->start, '\n', c->end - c->start);
		if (lf) {
			size_t len = (size_t)(lf - (c->buf + c->start));
			if (len > 0 && c->buf[c->start + len - 1] == '\r')
				len--;
			if (len >= size)
				len = size - 1;
			memcpy(line, c->buf + c->start, len);
			line[len] = '\0';
			c->start = (size_t)(lf - c->buf) + 1;
			return 0;
		}
		if (conn_fill(c) < 0)
			return -1;
	}
}

/* Exactly @len bytes into @out. */
static int conn_read(struct conn *c, char *out, size_t len)
{
	while (len > 0) {
		if (c->start == c->end && conn_fill(c) < 0)
			return -1;
		size_t n = c->end - c->start < len ? c->end - c->start : len;
		memcpy(out, c->buf + c->start, n);
		c->start += n;
		out += n;
		len -= n;
	}
	return 0;
}

/* ---- requests ------------------------------------------------------------ */

/* Appends "set KEY 0 0 LEN\r\nVALUE\r\n" to @out; returns its length. */
static size_t format_set(const struct kvload *kv, uint64_t k, char *out)
{
	int n = sprintf(out, "set " KEY_FMT " 0 0 %u\r\n", k, kv->opt.value_bytes);
	make_value(kv, k, out + n);
	memcpy(out + n + kv->opt.value_bytes, "\r\n", 2);
	return (size_t)n + kv->opt.value_bytes + 2u;
}

/* Reads one set's reply: 0 on STORED, -1 (with a message) otherwise. */
static int read_stored(struct kvload *kv, uint64_t k)
{
	char line[MAX_LINE];
	if (conn_line(kv->conn, line, sizeof(line)) < 0)
		return -1;
	if (strcmp(line, "STORED") != 0) {
		fprintf(stderr, PROG ": set " KEY_FMT ": memcached answered '%s'\n", k, line);
		return -1;
	}
	return 0;
}

static void report_mismatch(struct kvload *kv, uint64_t k, const char *reason)
{
	if (kv->nr_printed++ < MAX_PRINTED_MISMATCHES) {
		printf("%s: mismatch key=" KEY_FMT " reason=%s\n", kv->opt.name, k, reason);
		fflush(stdout);
	}
}

/*
 * Reads one "VALUE key flags bytes" item (its header line in @line) and
 * compares it with the expected value of its key. Sets *@key to the key's
 * index; returns 1 when it matches, 0 when not, -1 on a protocol error.
 */
static int read_value(struct kvload *kv, const char *line, uint64_t *key)
{
	uint64_t k;
	unsigned flags;
	unsigned long bytes;
	if (sscanf(line, "VALUE k%" SCNu64 " %u %lu", &k, &flags, &bytes) != 3 ||
	    bytes > MAX_VALUE_BYTES * 2ul) {
		fprintf(stderr, PROG ": unexpected reply from memcached: '%s'\n", line);
		return -1;
	}
	*key = k;
	if (conn_read(kv->conn, kv->reply, bytes + 2u) < 0)
		return -1;
	if (memcmp(kv->reply + bytes, "\r\n", 2) != 0) {
		fprintf(stderr, PROG ": value of " KEY_FMT " not followed by CRLF\n", k);
		return -1;
	}
	if (bytes != kv->opt.value_bytes) {
		report_mismatch(kv, k, "length");
		return 0;
	}
	make_value(kv, k, kv->value);
	if (memcmp(kv->reply, kv->value, bytes) != 0) {
		report_mismatch(kv, k, "value");
		return 0;
	}
	return 1;
}

/* One get of key @k, its value checked: 1 match, 0 mismatch or miss, -1 error. */
static int get_one(struct kvload *kv, uint64_t k)
{
	char line[MAX_LINE];
	int n = snprintf(line, sizeof(line), "get " KEY_FMT "\r\n", k);
	if (conn_write(kv->conn, line, (size_t)n) < 0 ||
	    conn_line(kv->conn, line, sizeof(line)) < 0)
		return -1;
	if (strcmp(line, "END") == 0) {
		report_mismatch(kv, k, "missing");
		return 0;
	}
	uint64_t got;
	int ok = read_value(kv, line, &got);
	if (ok < 0)
		return -1;
	if (got != k) {
		fprintf(stderr, PROG ": asked for " KEY_FMT ", memcached sent " KEY_FMT "\n", k,
			got);
		return -1;
	}
	if (conn_line(kv->conn, line, sizeof(line)) < 0)
		return -1;
	if (strcmp(line, "END") != 0) {
		fprintf(stderr, PROG ": expected END after a value, got '%s'\n", line);
		return -1;
	}
	return ok;
}

/* ---- the three stages ---------------------------------------------------- */

/* Loads the keys in batches of pipelined sets; stops early on a signal. */
static int fill(struct kvload *kv)
{
	size_t set_bytes = 64u + kv->opt.value_bytes + 8u;
	char *batch = malloc(set_bytes * FILL_BATCH);
	if (!batch) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	int rc = 0;
	while (kv->nr_filled < kv->nr_keys && !vr_stop_signal) {
		uint64_t first = kv->nr_filled;
		uint64_t n = kv->nr_keys - first < FILL_BATCH ? kv->nr_keys - first : FILL_BATCH;
		size_t len = 0;
		for (uint64_t k = first; k < first + n; k++)
			len += format_set(kv, k, batch + len);
		if (conn_write(kv->conn, batch, len) < 0) {
			rc = -1;
			break;
		}
		for (uint64_t k = first; k < first + n && rc == 0; k++)
			rc = read_stored(kv, k);
		if (rc < 0)
			break;
		kv->nr_filled += n;
	}
	free(batch);
	return rc;
}

/*
 * A progress line (@h: the requests of the last @span_ns, @t_ns after the
 * access phase began) or the done line (@h: all of them, @span_ns = @t_ns).
 */
static void print_latency(const struct kvload *kv, const char *what, uint64_t t_ns,
			  uint64_t span_ns, const struct vr_hist *h, bool with_max)
{
	double span_s = vr_ns_to_s(span_ns);
	printf("%s: %s %s=%.3f ops=%" PRIu64 " ops_per_s=%.1f p50_us=%.1f p99_us=%.1f "
	       "p999_us=%.1f",
	       kv->opt.name, what, with_max ? "seconds" : "t_s", vr_ns_to_s(t_ns), h->count,
	       span_s > 0 ? (double)h->count / span_s : 0.0, vr_hist_quantile_us(h, 0.50),
	       vr_hist_quantile_us(h, 0.99), vr_hist_quantile_us(h, 0.999));
	if (with_max)
		printf(" max_us=%.1f", (double)h->max_ns / 1000.0);
	printf("\n");
	fflush(stdout);
}

/* The get-heavy mix, until --duration or a signal. */
static int access_phase(struct kvload *kv)
{
	uint64_t rng = vr_mix64(kv->opt.seed ^ ACCESS_SALT) | 1u;
	uint64_t start = vr_now_ns();
	uint64_t end = kv->opt.duration_s ? start + kv->opt.duration_s * VR_NS_PER_S : UINT64_MAX;
	uint64_t report_ns = kv->opt.report_interval_s * VR_NS_PER_S;
	uint64_t next_report = report_ns ? start + report_ns : UINT64_MAX;
	uint64_t last_report = start;
	size_t set_bytes = 64u + kv->opt.value_bytes + 8u;
	char *req = malloc(set_bytes);
	if (!req) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	int rc = 0;
	uint64_t now = start;
	while (!vr_stop_signal && now < end) {
		uint64_t r = vr_rng_next(&rng);
		uint64_t k;
		if (kv->nr_hot > 0 && r % 100u < kv->opt.hot_access_percent)
			k = hot_key(kv, vr_rng_next(&rng) % kv->nr_hot);
		else
			k = vr_rng_next(&rng) % kv->nr_keys;
		bool is_set = (r >> 32) % 100u < kv->opt.set_percent;
		uint64_t t0 = vr_now_ns();
		if (is_set) {
			size_t len = format_set(kv, k, req);
			rc = conn_write(kv->conn, req, len) < 0 ? -1 : read_stored(kv, k);
		} else {
			int ok = get_one(kv, k);
			if (ok == 0)
				kv->nr_access_mismatches++;
			rc = ok < 0 ? -1 : 0;
		}
		if (rc < 0)
			break;
		now = vr_now_ns();
		vr_hist_add(&kv->total, now - t0);
		vr_hist_add(&kv->interval, now - t0);
		if (now >= next_report) {
			print_latency(kv, "progress", now - start, now - last_report, &kv->interval,
				      false);
			memset(&kv->interval, 0, sizeof(kv->interval));
			last_report = now;
			next_report += report_ns;
		}
	}
	free(req);
	if (rc == 0) {
		now = vr_now_ns();
		print_latency(kv, "done", now - start, now - start, &kv->total, true);
	}
	return rc;
}

/* Multi-gets the sampled keys among the loaded ones; counts the mismatches. */
static int verify(struct kvload *kv, uint64_t *checked, uint64_t *mismatches)
{
	uint64_t batch[VERIFY_BATCH];
	char *req = malloc(16u + VERIFY_BATCH * (KEY_CHARS + 1u) + 2u);
	if (!req) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	int rc = 0;
	uint64_t k = 0;
	while (k < kv->nr_filled && rc == 0) {
		unsigned n = 0;
		size_t len = (size_t)sprintf(req, "get");
		for (; k < kv->nr_filled && n < VERIFY_BATCH; k++) {
			if (!in_sample(kv, k))
				continue;
			batch[n++] = k;
			len += (size_t)sprintf(req + len, " " KEY_FMT, k);
		}
		if (n == 0)
			break;
		memcpy(req + len, "\r\n", 2);
		if (conn_write(kv->conn, req, len + 2u) < 0) {
			rc = -1;
			break;
		}
		/* Hits come in request order; a key skipped over was missing. */
		unsigned next = 0;
		char line[MAX_LINE];
		while (rc == 0) {
			if (conn_line(kv->conn, line, sizeof(line)) < 0) {
				rc = -1;
				break;
			}
			if (strcmp(line, "END") == 0)
				break;
			uint64_t got;
			int ok = read_value(kv, line, &got);
			if (ok < 0) {
				rc = -1;
				break;
			}
			while (next < n && batch[next] != got) {
				report_mismatch(kv, batch[next++], "missing");
				(*mismatches)++;
			}
			if (next == n) {
				fprintf(stderr,
					PROG ": memcached sent " KEY_FMT ", not asked for\n", got);
				rc = -1;
				break;
			}
			next++;
			if (ok == 0)
				(*mismatches)++;
		}
		for (; rc == 0 && next < n; next++) {
			report_mismatch(kv, batch[next], "missing");
			(*mismatches)++;
		}
		*checked += n;
	}
	free(req);
	return rc;
}

/* ---- command line -------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("Usage: " PROG " [OPTION]...\n"
	      "Load verifiable values into memcached, run a get-heavy mix on a hot set of\n"
	      "keys, then verify a sample of the values.\n"
	      "\n"
	      "      --name NAME                 prefix of the output lines (default " PROG ")\n"
	      "      --host ADDR                 memcached's IPv4 address (default 127.0.0.1)\n"
	      "  -p, --port N                    memcached's TCP port (default 11211)\n"
	      "  -s, --size MIB                  data set to load, values only (default 64)\n"
	      "      --value-bytes B             bytes per value, 16..524288 (default 860)\n"
	      "      --compress-ratio R          values compress about R:1; 1 = random\n"
	      "                                  (default 3)\n"
	      "      --seed N                    values and access sequence (default 1)\n"
	      "  -d, --duration S                access phase in seconds; 0 = until SIGTERM,\n"
	      "                                  SIGINT or SIGUSR1 (default 60)\n"
	      "      --report-interval S         seconds between progress lines; 0 = none\n"
	      "                                  (default 10)\n"
	      "      --hot-percent P             hot set, percent of the keys (default 10)\n"
	      "      --hot-access-percent P      requests to the hot set (default 90)\n"
	      "      --hot-layout L              spread (every k-th key) or clustered (the\n"
	      "                                  first keys) (default spread)\n"
	      "      --set-percent P             requests that rewrite a value (default 5)\n"
	      "      --verify-percent P          keys checked at the end, 1..100 (default 10)\n"
	      "      --connect-timeout S         retry connecting this long (default 10)\n"
	      "  -h, --help                      show this help\n"
	      "\n"
	      "Exit status: 0 verified, 1 verification failed, 2 usage error, 3 system error.\n",
	      out);
}

enum {
	OPT_NAME = 256,
	OPT_HOST,
	OPT_VALUE_BYTES,
	OPT_COMPRESS,
	OPT_SEED,
	OPT_REPORT,
	OPT_HOT,
	OPT_HOT_ACCESS,
	OPT_HOT_LAYOUT,
	OPT_SET,
	OPT_VERIFY,
	OPT_CONNECT_TIMEOUT,
};

/* Fills @o; returns 0, 1 after --help, or 2 on a usage error (message printed). */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "name", required_argument, NULL, OPT_NAME },
		{ "host", required_argument, NULL, OPT_HOST },
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "value-bytes", required_argument, NULL, OPT_VALUE_BYTES },
		{ "compress-ratio", required_argument, NULL, OPT_COMPRESS },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "duration", required_argument, NULL, 'd' },
		{ "report-interval", required_argument, NULL, OPT_REPORT },
		{ "hot-percent", required_argument, NULL, OPT_HOT },
		{ "hot-access-percent", required_argument, NULL, OPT_HOT_ACCESS },
		{ "hot-layout", required_argument, NULL, OPT_HOT_LAYOUT },
		{ "set-percent", required_argument, NULL, OPT_SET },
		{ "verify-percent", required_argument, NULL, OPT_VERIFY },
		{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct options){
		.name = PROG,
		.host = { htonl(INADDR_LOOPBACK) },
		.port = 11211, /* memcached's default */
		.size_mib = 64,
		/* With an 11-byte key, memcached 1.6 stores a 930-byte item in its
		 * 944-byte slab class (default -f 1.25): little waste. */
		.value_bytes = 860,
		.compress_ratio = 3, /* lz4 on typical cached objects */
		.seed = 1,
		.duration_s = 60,
		.report_interval_s = 10,
		.hot_percent = 10, /* the issue: hot keys are 10% of the set */
		.hot_access_percent = 90,
		.set_percent = 5, /* get-heavy, like a cache in front of a database */
		.verify_percent = 10,
		.hot_layout = HOT_SPREAD,
		.connect_timeout_s = 10,
	};
	bool ok = true;
	uint64_t v;
	int c;

	opterr = 0; /* our messages name the option */
	while (ok && (c = getopt_long(argc, argv, ":p:s:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_NAME:
			o->name = optarg;
			ok = optarg[0] != '\0' && strpbrk(optarg, " \t\n") == NULL;
			if (!ok)
				fprintf(stderr, PROG ": --name: one word, got '%s'\n", optarg);
			break;
		case OPT_HOST:
			ok = inet_pton(AF_INET, optarg, &o->host) == 1;
			if (!ok)
				fprintf(stderr, PROG ": --host: not an IPv4 address: '%s'\n",
					optarg);
			break;
		case 'p':
			ok = vr_parse_unsigned("--port", optarg, 1, 65535, 0, &o->port);
			break;
		case 's':
			ok = vr_parse_u64("--size", optarg, 1, 1024ULL * 1024, 0, &o->size_mib);
			break;
		case OPT_VALUE_BYTES:
			ok = vr_parse_unsigned("--value-bytes", optarg, 16, MAX_VALUE_BYTES, 0,
					       &o->value_bytes);
			break;
		case OPT_COMPRESS:
			ok = vr_parse_unsigned("--compress-ratio", optarg, 1, 64, 0,
					       &o->compress_ratio);
			break;
		case OPT_SEED:
			ok = vr_parse_u64("--seed", optarg, 0, UINT64_MAX, 0, &o->seed);
			break;
		case 'd':
			ok = vr_parse_u64("--duration", optarg, 0, MAX_SECONDS, 0, &o->duration_s);
			break;
		case OPT_REPORT:
			ok = vr_parse_u64("--report-interval", optarg, 0, MAX_SECONDS, 0,
					  &o->report_interval_s);
			break;
		case OPT_HOT:
			ok = vr_parse_unsigned("--hot-percent", optarg, 0, 100, 0, &o->hot_percent);
			break;
		case OPT_HOT_ACCESS:
			ok = vr_parse_unsigned("--hot-access-percent", optarg, 0, 100, 0,
					       &o->hot_access_percent);
			break;
		case OPT_HOT_LAYOUT:
			if (strcmp(optarg, "spread") == 0)
				o->hot_layout = HOT_SPREAD;
			else if (strcmp(optarg, "clustered") == 0)
				o->hot_layout = HOT_CLUSTERED;
			else {
				fprintf(stderr,
					PROG ": --hot-layout: spread or clustered, got '%s'\n",
					optarg);
				ok = false;
			}
			break;
		case OPT_SET:
			ok = vr_parse_unsigned("--set-percent", optarg, 0, 100, 0, &o->set_percent);
			break;
		case OPT_VERIFY:
			ok = vr_parse_unsigned("--verify-percent", optarg, 1, 100, 0,
					       &o->verify_percent);
			break;
		case OPT_CONNECT_TIMEOUT:
			ok = vr_parse_u64("--connect-timeout", optarg, 0, 3600, 0, &v);
			o->connect_timeout_s = (unsigned)v;
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
	uint64_t nr_keys = o->size_mib * MIB / o->value_bytes;
	if (nr_keys == 0 || nr_keys > MAX_KEYS) {
		fprintf(stderr,
			PROG ": --size %" PRIu64 " with --value-bytes %u: %" PRIu64
			     " keys (1..%llu allowed)\n",
			o->size_mib, o->value_bytes, nr_keys, MAX_KEYS);
		return 2;
	}
	if (o->hot_percent > 0 && nr_keys * o->hot_percent / 100 == 0) {
		fprintf(stderr, PROG ": --hot-percent: %u%% of %" PRIu64 " keys is no key\n",
			o->hot_percent, nr_keys);
		return 2;
	}
	return 0;
}

/* Closes the connection and frees the buffers: on every exit, so that a
 * sanitized build reports no leak. */
static void release(struct kvload *kv)
{
	conn_close(kv->conn);
	kv->conn = NULL;
	free(kv->value);
	free(kv->reply);
}

int main(int argc, char **argv)
{
	struct kvload kv;
	memset(&kv, 0, sizeof(kv));
	int rc = parse_options(argc, argv, &kv.opt);
	if (rc)
		return rc == 1 ? 0 : 2;
	const struct options *o = &kv.opt;
	kv.nr_keys = o->size_mib * MIB / o->value_bytes;
	kv.nr_hot = kv.nr_keys * o->hot_percent / 100;
	kv.nr_random_words = (o->value_bytes + 7u) / 8u / o->compress_ratio;
	if (kv.nr_random_words == 0)
		kv.nr_random_words = 1;

	/* SA_RESTART: socket I/O resumes; the loops look at vr_stop_signal. */
	if (vr_catch_stop_signals(SA_RESTART) < 0)
		return 3;
	/* A closed connection is an error return, not a kill. */
	signal(SIGPIPE, SIG_IGN);
	kv.value = malloc(o->value_bytes + 8u);
	kv.reply = malloc(o->value_bytes + 2u > 2u * MAX_VALUE_BYTES + 2u ?
				  o->value_bytes + 2u :
				  2u * MAX_VALUE_BYTES + 2u);
	if (!kv.value || !kv.reply) {
		fprintf(stderr, PROG ": out of memory\n");
		release(&kv);
		return 3;
	}
	printf("%s: start size_bytes=%" PRIu64 " keys=%" PRIu64 " hot_keys=%" PRIu64
	       " value_bytes=%u set_percent=%u hot_access_percent=%u hot_layout=%s seed=%" PRIu64
	       "\n",
	       o->name, kv.nr_keys * o->value_bytes, kv.nr_keys, kv.nr_hot, o->value_bytes,
	       o->set_percent, o->hot_access_percent, hot_layout_names[o->hot_layout], o->seed);
	fflush(stdout);

	kv.conn = conn_open(o);
	if (!kv.conn) {
		release(&kv);
		return 3;
	}

	uint64_t t0 = vr_now_ns();
	if (fill(&kv) < 0) {
		release(&kv);
		return 3;
	}
	if (vr_stop_signal) {
		printf("%s: interrupted signal=%s during=fill\n", o->name,
		       vr_signal_name(vr_stop_signal));
		printf("%s: fill stopped filled_keys=%" PRIu64 " keys=%" PRIu64 "\n", o->name,
		       kv.nr_filled, kv.nr_keys);
	} else {
		printf("%s: filled size_bytes=%" PRIu64 " keys=%" PRIu64 " seconds=%.3f\n", o->name,
		       kv.nr_keys * o->value_bytes, kv.nr_keys, vr_ns_to_s(vr_now_ns() - t0));
	}
	fflush(stdout);

	if (!vr_stop_signal && access_phase(&kv) < 0) {
		release(&kv);
		return 3;
	}
	if (kv.nr_access_mismatches > 0)
		printf("%s: access mismatches=%" PRIu64 "\n", o->name, kv.nr_access_mismatches);

	uint64_t checked = 0, mismatches = 0;
	if (verify(&kv, &checked, &mismatches) < 0) {
		release(&kv);
		return 3;
	}
	bool good = mismatches == 0 && kv.nr_access_mismatches == 0;
	printf("%s: verify checked=%" PRIu64 " mismatches=%" PRIu64 " result=%s\n", o->name,
	       checked, mismatches, good ? "ok" : "FAILED");
	fflush(stdout);
	release(&kv);
	return good ? 0 : 1;
}
