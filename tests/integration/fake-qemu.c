/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fake QEMU of the integration tests and of bench/fleet-scale: one
 * process that plays one QEMU, or a whole fleet of them, for vreclaimd
 * --qmp. Each fake domain has a QMP socket and answers what vreclaimd's
 * probe and balloon action ask, as QEMU 7.2 does (a greeting, capabilities
 * negotiation first, "\r\n" after each message, the command's "id" in its
 * reply), one client at a time (QEMU's monitor takes one); that QMP server
 * side is tests/lib/fake-qmp.h's, this file has its commands. It has a balloon
 * and, with --agent, a virtio-serial port named org.vreclaim.agent.0 whose
 * unix socket (server=on, beside the QMP socket) is answered as a guest
 * agent would (common/protocol.h): hello, set-policy, get-regions (a
 * picture of --regions regions over the guest's memory, cold ones ageing,
 * hot ones accessed), get-cold-histogram (that picture's histogram under the
 * histogram policy set-policy gave; --no-cold-histogram plays an agent from
 * before it), get-stats, reclaim, pause, resume, and a report every
 * report interval once a policy set one (every --report-ms from the
 * connection on, whatever the policy says, with that option).
 *
 * The agent's reclaim can be played too (the fault tests): with
 * --applied-kib-per-report N, its stats' sz_applied (and sz_tried, and
 * nr_applied in pages) grow by N KiB per report while its last policy holds a
 * share (its pageout scheme's minimum age below its maximum) and it is not
 * paused. With --agent-record FILE (one QEMU), it appends to FILE a line per
 * set-policy, "MONOTONIC_US set-policy SHARE" (SHARE: the pageout scheme's
 * quota size, 0 for a policy that selects nothing), per report
 * "MONOTONIC_US report SZ_APPLIED", per pause or resume "MONOTONIC_US pause
 * 1" or "MONOTONIC_US resume 0"; and when the file FILE.restart exists at a
 * report, the agent starts over on the same connection, as after a guest
 * reboot (the file is removed, "MONOTONIC_US restarted 0" recorded): its
 * counters, uptime and report numbers from 0, paused, no policy of the
 * host's (no share, no report interval but --report-ms).
 *
 * The host bounds what it offers of a domain by its QEMU's resident size
 * less the guest's free memory still resident (common/fleet-credit.h), and
 * its fleet credit checks that a claimed reclaim shows in that size. With
 * --resident-mib N the process keeps N MiB resident (touched at the start),
 * its agents say all their free memory was handed back by free page
 * reporting, and each KiB sz_applied grows by is released from the resident
 * memory (MADV_DONTNEED): what the agent claims, the host sees go. Once all
 * of it is released it is touched again, as a workload fills its memory.
 *
 * An agent that misbehaves (the fault tests, tests/integration/
 * test-agent-faults.c), one QEMU, --agent-fault MODE:
 *  - lie: its picture says all of the guest's memory is cold, its stats say
 *    MemFree 0, and its sz_applied grows by --applied-kib-per-report per
 *    report while nothing of it leaves the process's resident memory;
 *  - flood: once hello is answered, every loop tick, while what it sent
 *    before went out, a burst of what breaks the channel, by connection in
 *    turn: 200 lines that are not JSON, a 256 KiB line (beyond
 *    VR_PROTO_MAX_LINE), 200 reports that claim twice the guest's memory,
 *    200 valid reports; "MONOTONIC_US flood LINES" in the agent record per
 *    burst;
 *  - drop: --agent-drop-after-ms after its first policy with a share
 *    (mid-reclaim), it closes its connection and its socket goes away
 *    ("MONOTONIC_US dropped 0"); it listens again --agent-away-ms later
 *    ("MONOTONIC_US back 0"), its counters where they were (the guest did
 *    not restart), or never with --agent-away-ms 0. With
 *    --agent-back-restarted it comes back as a new agent, as after a guest
 *    reboot (see FILE.restart above: counters from 0, paused, no policy).
 *
 * The process maps as much address space as the guest memory it claims (a
 * QEMU maps all of its guest's RAM; vreclaimd checks), once for all its
 * domains; they share its pid, and so its resident size.
 *
 *   fake-qemu --socket PATH --name NAME --uuid UUID [--record FILE]
 *	       [--stall-file FILE] [--agent [--agent-record FILE]]
 *	       [--lie-about-memory] [--agent-fault lie|flood|drop
 *	       [--agent-drop-after-ms MS] [--agent-away-ms MS]] [options]
 *   fake-qemu --fleet DIR --count N [--no-record] [--agent] [options]
 *
 * One domain: its QMP socket PATH, its agent socket PATH.agent. A fleet:
 * domain i (0..N-1) is named fleet-NNNN (i, four digits), with UUID
 * f1ee0000-0000-4000-8000-NNNNNNNNNNNN and its files in DIR/fleet-NNNN/:
 * qmp.sock, agent.sock and commands.txt.
 *
 * Each command's name is appended to the record file, one a line: QMP
 * commands as they are named, agent requests as "agent:NAME". While the
 * stall file exists, QMP commands after the negotiation are answered as it
 * says: "slow" sends each reply a byte per second, "never" sends nothing
 * (the fake keeps reading until the client goes). --lie-about-memory claims
 * twice the memory the process maps (VmSize). --stats FILE: every second,
 * what the fleet was asked so far ("NAME COUNT" lines; see write_stats()).
 *
 * It prints "ready" on stdout once every socket listens, and runs until
 * killed; it dies with the process that started it. A single epoll loop
 * serves every socket: a fleet of 1000 needs 4000 descriptors, and the fake
 * raises its own RLIMIT_NOFILE to what it needs (or says it cannot).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake-qmp.h"
#include "fleet-quota.h"
#include "protocol.h"

/* The slow mode's pause between two bytes, us. */
#define SLOW_BYTE_US G_USEC_PER_SEC

/* How often the loop wakes without I/O (reports, slow bytes, stats), ms. */
#define LOOP_TICK_MS 20

/* The picture's intervals, us: DAMON's defaults. */
#define SAMPLE_US 5000
#define AGGR_US	  100000

/* --agent-fault flood: lines a burst, and the oversized line's bytes. */
#define FLOOD_LINES	 200
#define FLOOD_LONG_BYTES (256 * 1024)

/* The agent's port and its chardev. */
#define AGENT_PORT    "vr-agent"
#define AGENT_CHARDEV "charchannel0"

/* The counters of --stats: QMP commands, agent requests, reports. */
enum counter {
	CNT_QMP,
	CNT_QMP_CONNECTS,
	CNT_AGENT_CONNECTS,
	CNT_REPORTS,
	CNT_AGENT_FIRST, /* + enum vr_proto_command */
	NR_COUNTERS = CNT_AGENT_FIRST + VR_PROTO_GET_COLD_HIST + 1,
};

enum kind {
	QMP_LISTEN,
	AGENT_LISTEN,
	QMP_CONN,
	AGENT_CONN,
};

struct domain;

/**
 * struct endpoint - what one descriptor in the epoll set is.
 * @kind:	a listening socket or a connection, QMP or agent.
 * @fd:		the descriptor.
 * @d:		its domain.
 */
struct endpoint {
	enum kind kind;
	int fd;
	struct domain *d;
};

/**
 * struct conn - a client on a domain's QMP or agent socket.
 * @ep:		its descriptor (first: epoll hands back &ep).
 * @in:		bytes read and not yet taken as lines (QMP).
 * @reader:	the agent's line reader (agent).
 * @out, @out_off: what is to be sent, and how much of it went.
 * @slow:	@out goes a byte per second; @next_byte_us: the next one's time.
 * @draining:	the "never" stall: read everything, answer nothing.
 * @session:	the QMP session (capabilities negotiated or not).
 * @want_out:	EPOLLOUT is in its events.
 */
struct conn {
	struct endpoint ep;
	GString *in;
	struct vr_proto_reader *reader;
	GString *out;
	gsize out_off;
	gboolean slow;
	gint64 next_byte_us;
	gboolean draining;
	struct fake_qmp_session session;
	gboolean want_out;
};

/**
 * struct domain - one fake QEMU and its guest's agent.
 * @index:	its number in the fleet.
 * @name, @uuid: what QMP says of it.
 * @qmp_path, @agent_path: its sockets; @agent_path NULL without --agent.
 * @stall_path:	its stall file, or NULL.
 * @record_fd:	where its commands are recorded, -1 for nowhere.
 * @qmp_listen, @agent_listen: the listening sockets.
 * @qmp, @agent: their client, NULL without one.
 * @report_interval_ms: the agent's report interval, 0 for none.
 * @next_report_us, @seq: the next report's time and number.
 * @paused:	the host paused the agent.
 * @reclaimed_bytes: what the agent's reclaim commands gave back.
 * @get_regions: get-regions and get-cold-histogram it answered (for
 *		--stats: the pictures it sent, whole or as a histogram).
 * @hist_generation, @hist_policy: the last set-policy's generation and
 *		histogram policy (owned), 0 and NULL before one or after a
 *		restart.
 * @agent_record_fd: where the agent records policies and reports
 *		(--agent-record), -1 for nowhere.
 * @agent_restart_path: the file that restarts the agent, or NULL.
 * @agent_started_us: when the agent (re)started: its uptime's origin.
 * @share:	its last policy holds a share.
 * @applied_bytes: the reclaim its stats claim (sz_applied), bytes.
 * @agent_up:	hello was answered on the current connection (flood).
 * @agent_conns: agent connections so far (flood: which burst).
 * @drop_at_us:	when the drop fault closes the connection, 0 for not yet
 *		armed; @dropped: it did; @back_at_us: when it listens again,
 *		0 for never.
 */
struct domain {
	guint index;
	char *name;
	char *uuid;
	char *qmp_path;
	char *agent_path;
	char *stall_path;
	int record_fd;
	struct endpoint qmp_listen;
	struct endpoint agent_listen;
	struct conn *qmp;
	struct conn *agent;
	uint64_t report_interval_ms;
	gint64 next_report_us;
	uint64_t seq;
	gboolean paused;
	uint64_t reclaimed_bytes;
	uint64_t get_regions;
	uint64_t hist_generation;
	struct vr_policy *hist_policy;
	int agent_record_fd;
	char *agent_restart_path;
	gint64 agent_started_us;
	gboolean share;
	uint64_t applied_bytes;
	gboolean agent_up;
	guint agent_conns;
	gint64 drop_at_us;
	gboolean dropped;
	gint64 back_at_us;
};

static char *opt_socket, *opt_name, *opt_uuid, *opt_record, *opt_stall, *opt_fleet, *opt_stats;
static char *opt_agent_record;
static gint opt_count = 0, opt_regions = 300, opt_memory_mib = 0;
static gint opt_report_ms = 0, opt_applied_kib = 0, opt_resident_mib = 0;
static gboolean opt_agent, opt_no_record, opt_lie, opt_no_cold_hist;
static char *opt_agent_fault;
static gint opt_drop_after_ms = 2000, opt_away_ms = 3000;
static gboolean opt_back_restarted;

/* --agent-fault. */
enum fault {
	FAULT_NONE,
	FAULT_LIE,
	FAULT_FLOOD,
	FAULT_DROP,
};

static enum fault fault;

static int epfd = -1;
static struct domain *domains;
static guint nr_domains;
static uint64_t counters[NR_COUNTERS];
static gint64 started_us;
static uint64_t memory_bytes;
static char *resident;		  /* --resident-mib's memory */
static uint64_t resident_bytes;	  /* its size */
static uint64_t resident_dropped; /* of it, released since last touched */

enum stall {
	STALL_NONE,
	STALL_SLOW,
	STALL_NEVER,
};

static G_NORETURN void die(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

static G_NORETURN void die(const char *fmt, ...)
{
	va_list ap;

	fputs("fake-qemu: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static enum stall stall_mode(const struct domain *d)
{
	g_autofree char *text = NULL;

	if (!d->stall_path || !g_file_get_contents(d->stall_path, &text, NULL, NULL))
		return STALL_NONE;
	g_strstrip(text);
	return !strcmp(text, "never") ? STALL_NEVER : STALL_SLOW;
}

static void record(const struct domain *d, const char *prefix, const char *name)
{
	g_autofree char *rec = NULL;

	if (d->record_fd < 0)
		return;
	rec = g_strdup_printf("%s%s\n", prefix, name);
	if (write(d->record_fd, rec, strlen(rec)) < 0)
		die("cannot record to the record file of %s: %s", d->name, g_strerror(errno));
}

/* A line of the agent's record (--agent-record): "MONOTONIC_US WHAT VALUE". */
static void agent_record(const struct domain *d, const char *what, uint64_t value)
{
	g_autofree char *line = NULL;

	if (d->agent_record_fd < 0)
		return;
	line = g_strdup_printf("%" G_GINT64_FORMAT " %s %" G_GUINT64_FORMAT "\n",
			       g_get_monotonic_time(), what, (guint64)value);
	if (write(d->agent_record_fd, line, strlen(line)) < 0)
		die("cannot record to the agent record file of %s: %s", d->name, g_strerror(errno));
}

/* The reports' interval of @d when the host set none, ms (--report-ms). */
static void agent_report_from_now(struct domain *d)
{
	d->report_interval_ms = (uint64_t)opt_report_ms;
	d->next_report_us = g_get_monotonic_time() + (gint64)opt_report_ms * 1000;
}

/* Release @bytes of the resident memory (--resident-mib): the reclaim an
 * agent claims shows in the process's resident size. */
static void resident_release(uint64_t bytes)
{
	if (!resident_bytes || !bytes)
		return;
	if (resident_dropped + bytes > resident_bytes) {
		/* All of it went: touched again, as a workload fills it. */
		for (uint64_t off = 0; off < resident_bytes; off += 4096)
			resident[off] = 1;
		resident_dropped = 0;
	}
	bytes = MIN(bytes, resident_bytes);
	if (madvise(resident + resident_dropped, bytes, MADV_DONTNEED) < 0)
		die("madvise: %s", g_strerror(errno));
	resident_dropped += bytes;
}

/* ---- the epoll set ---- */

static void ep_add(struct endpoint *ep, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = ep };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, ep->fd, &ev) < 0)
		die("epoll_ctl: %s", g_strerror(errno));
}

static void ep_mod(struct endpoint *ep, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = ep };

	if (epoll_ctl(epfd, EPOLL_CTL_MOD, ep->fd, &ev) < 0)
		die("epoll_ctl: %s", g_strerror(errno));
}

static void ep_del(struct endpoint *ep)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, ep->fd, NULL);
}

static int listen_on(const char *path)
{
	g_autoptr(GError) error = NULL;
	int fd = fake_qmp_listen(path, TRUE, &error);

	if (fd < 0)
		die("%s", error->message);
	return fd;
}

/* ---- connections ---- */

static void conn_close(struct conn *c)
{
	struct domain *d = c->ep.d;
	gboolean qmp = c->ep.kind == QMP_CONN;

	ep_del(&c->ep);
	close(c->ep.fd);
	if (c->in)
		g_string_free(c->in, TRUE);
	if (c->reader)
		vr_proto_reader_free(c->reader);
	g_string_free(c->out, TRUE);
	g_free(c);
	/* The next client waits in the backlog until now, as with QEMU. */
	if (qmp) {
		d->qmp = NULL;
		ep_add(&d->qmp_listen, EPOLLIN);
	} else {
		d->agent = NULL;
		d->agent_up = FALSE;
		d->report_interval_ms = 0;
		ep_add(&d->agent_listen, EPOLLIN);
	}
}

static gboolean conn_idle(const struct conn *c)
{
	return c->out_off == c->out->len;
}

/* Send what can go now (one byte when slow and due). FALSE when the client
 * went and @c was closed. */
static gboolean conn_flush(struct conn *c)
{
	gboolean want;

	while (!conn_idle(c)) {
		gsize len = c->out->len - c->out_off;
		ssize_t n;

		if (c->slow) {
			if (g_get_monotonic_time() < c->next_byte_us)
				break;
			len = 1;
		}
		n = send(c->ep.fd, c->out->str + c->out_off, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			conn_close(c);
			return FALSE;
		}
		c->out_off += (gsize)n;
		if (c->slow)
			c->next_byte_us = g_get_monotonic_time() + SLOW_BYTE_US;
	}
	if (conn_idle(c)) {
		g_string_truncate(c->out, 0);
		c->out_off = 0;
		c->slow = FALSE;
	}
	want = !conn_idle(c) && !c->slow;
	if (want != c->want_out) {
		c->want_out = want;
		ep_mod(&c->ep, EPOLLIN | (want ? EPOLLOUT : 0));
	}
	return TRUE;
}

static struct conn *conn_accept(struct endpoint *listener, enum kind kind)
{
	int fd = accept4(listener->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct conn *c;

	if (fd < 0) {
		if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
			return NULL;
		die("accept: %s", g_strerror(errno));
	}
	c = g_new0(struct conn, 1);
	c->ep = (struct endpoint){ .kind = kind, .fd = fd, .d = listener->d };
	c->out = g_string_new(NULL);
	/* One client at a time: the listener rests until it goes. */
	ep_del(listener);
	ep_add(&c->ep, EPOLLIN);
	return c;
}

/* ---- QMP ---- */

/* The "return" text of @cmd after negotiation, or NULL with *@cls and
 * *@desc for a QMP error: the domain @data's commands (fake_qmp_lookup_fn). */
static char *qmp_lookup(const struct fake_qmp_command *cmd, const char **cls, const char **desc,
			gpointer data)
{
	const struct domain *d = data;
	const char *name = cmd->execute;
	const char *p = fake_qmp_command_arg(cmd, "path");
	const char *property = fake_qmp_command_arg(cmd, "property");

	if (!strcmp(name, "query-name"))
		return g_strdup_printf("{\"name\": \"%s\"}", d->name);
	if (!strcmp(name, "query-uuid"))
		return g_strdup_printf("{\"UUID\": \"%s\"}", d->uuid);
	if (!strcmp(name, "query-memory-size-summary")) {
		uint64_t claim = memory_bytes;

		if (opt_lie) {
			g_autofree char *status = NULL;
			const char *vm_size;

			if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL) ||
			    !(vm_size = strstr(status, "VmSize:")))
				die("cannot read VmSize from /proc/self/status");
			claim = g_ascii_strtoull(vm_size + 7, NULL, 10) * 2048;
		}
		return g_strdup_printf(
			"{\"base-memory\": %" G_GUINT64_FORMAT ", \"plugged-memory\": 0}", claim);
	}
	/* The balloon is not inflated: all of the guest's memory is in it. */
	if (!strcmp(name, "query-balloon"))
		return g_strdup_printf("{\"actual\": %" G_GUINT64_FORMAT "}", memory_bytes);
	if (!strcmp(name, "balloon"))
		return g_strdup("{}");
	if (!strcmp(name, "query-chardev")) {
		if (!d->agent_path)
			return g_strdup("[{\"frontend-open\": true, \"filename\": "
					"\"pty:/dev/pts/7\", \"label\": \"serial0\"}]");
		return g_strdup_printf("[{\"frontend-open\": true, \"filename\": "
				       "\"pty:/dev/pts/7\", \"label\": \"serial0\"}, "
				       "{\"frontend-open\": true, \"filename\": "
				       "\"unix:%s,server=on\", \"label\": \"" AGENT_CHARDEV "\"}]",
				       d->agent_path);
	}
	if (!strcmp(name, "qom-list")) {
		/* A QEMU 7.2 container lists its "type" property and its devices. */
		if (p && !strcmp(p, "/machine/peripheral") && d->agent_path)
			return g_strdup("[{\"name\": \"type\", \"type\": \"string\"}, "
					"{\"name\": \"" AGENT_PORT "\", \"type\": "
					"\"child<virtserialport>\"}]");
		if (p &&
		    (!strcmp(p, "/machine/peripheral") || !strcmp(p, "/machine/peripheral-anon")))
			return g_strdup("[{\"name\": \"type\", \"type\": \"string\"}]");
		*cls = "DeviceNotFound";
		*desc = "the fake QEMU has no such QOM path";
		return NULL;
	}
	if (!strcmp(name, "qom-get") && d->agent_path && p &&
	    !strcmp(p, "/machine/peripheral/" AGENT_PORT) && property) {
		if (!strcmp(property, "name"))
			return g_strdup("\"org.vreclaim.agent.0\"");
		if (!strcmp(property, "chardev"))
			return g_strdup("\"" AGENT_CHARDEV "\"");
	}
	*cls = "CommandNotFound";
	*desc = "the fake QEMU does not know this command";
	return NULL;
}

/* The reply line to @line (owned), each command recorded and counted;
 * *@command_out: whether it was a command after negotiation. */
static char *qmp_answer(struct conn *c, const char *line, gboolean *command_out)
{
	struct domain *d = c->ep.d;
	struct fake_qmp_command cmd;
	char *out;

	if (fake_qmp_command_parse(&cmd, line)) {
		record(d, "", cmd.execute);
		counters[CNT_QMP]++;
	}
	out = fake_qmp_answer(&c->session, &cmd, qmp_lookup, d, command_out);
	fake_qmp_command_clear(&cmd);
	return out;
}

/* Answer the lines @c has, one at a time: the next is read only once the
 * last reply went (a slow reply holds the rest back, as a blocked QEMU
 * would). FALSE when @c was closed. */
static gboolean qmp_serve(struct conn *c)
{
	while (!c->draining && conn_idle(c)) {
		g_autofree char *line = fake_qmp_take_line(c->in);
		g_autofree char *reply = NULL;
		gboolean command;
		enum stall mode;

		if (!line)
			break;
		if (strspn(line, " \t\r") == strlen(line))
			continue;
		reply = qmp_answer(c, line, &command);
		mode = command ? stall_mode(c->ep.d) : STALL_NONE;
		if (mode == STALL_NEVER) {
			c->draining = TRUE;
			break;
		}
		g_string_append(c->out, reply);
		c->slow = mode == STALL_SLOW;
		c->next_byte_us = 0;
		if (!conn_flush(c))
			return FALSE;
	}
	if (c->draining)
		g_string_truncate(c->in, 0);
	return TRUE;
}

/* ---- the agent ---- */

/* A 32-bit mix of @a and @b: the picture's pseudo-random layout. */
static guint32 mix(guint32 a, guint32 b)
{
	guint32 h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u);

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

/* The agent's stats now: a guest with a fifth of its memory free, all of it
 * reported to the host (its hello says free page reporting is on), so what
 * the host can get back is bound by the process's resident size only. */
static void agent_stats(const struct domain *d, struct vr_agent_stats *st)
{
	memset(st, 0, sizeof(*st));
	g_strlcpy(st->backend, "damon", sizeof(st->backend));
	st->paused = d->paused;
	st->uptime_ms = (uint64_t)(g_get_monotonic_time() - d->agent_started_us) / 1000;
	st->nr_tried = st->nr_applied = d->applied_bytes >> 12;
	st->sz_tried = st->sz_applied = d->applied_bytes;
	st->mem_total_bytes = memory_bytes;
	st->mem_free_bytes = fault == FAULT_LIE ? 0 : memory_bytes / 5;
	if (fault != FAULT_LIE) {
		st->has_reportable_free_bytes = TRUE;
		st->reportable_free_bytes = st->mem_free_bytes;
	}
	st->swap_total_bytes = 1ULL << 30;
	st->swap_free_bytes = 1ULL << 30;
	st->free_page_reporting = TRUE;
}

/*
 * The access picture now, @max regions at most: the guest's memory in
 * --regions regions of uneven sizes; a quarter of them hot (accessed in most
 * samples, young), the rest cold and ageing an aggregation interval per
 * 100 ms. Which ones are hot changes every 10 s.
 */
static void agent_picture(const struct domain *d, guint max, struct vr_proto_regions *r)
{
	guint n = MIN((guint)opt_regions, max);
	uint64_t pages = memory_bytes / 4096, weight = 0, at = 0, acc = 0;
	gint64 ms = (g_get_monotonic_time() - started_us) / 1000;
	guint32 epoch = (guint32)(ms / 10000);
	guint32 weights[VR_PROTO_MAX_REGIONS];

	r->sample_interval_us = SAMPLE_US;
	r->aggr_interval_us = AGGR_US;
	r->regions = g_array_sized_new(FALSE, FALSE, sizeof(struct vr_picture_region), n);
	for (guint i = 0; i < n; i++) {
		weights[i] = 1 + mix(d->index, i) % 4;
		weight += weights[i];
	}
	for (guint i = 0; i < n; i++) {
		struct vr_picture_region reg = { 0 };
		gboolean hot = fault != FAULT_LIE && mix(d->index ^ epoch, i + 1000) % 4 == 0;

		acc += weights[i];
		reg.start = at * 4096;
		at = i + 1 == n ? pages : pages * acc / weight;
		reg.end = at * 4096;
		reg.nr_accesses = hot ? 5 + mix(i, epoch) % (AGGR_US / SAMPLE_US - 4) : 0;
		reg.age = hot ? mix(i, d->index) % 20 : (guint32)(600 + ms / 100);
		if (reg.end > reg.start)
			g_array_append_val(r->regions, reg);
	}
}

/* The share of the pageout scheme of @p: 0 when it selects nothing. */
static uint64_t policy_share(const struct vr_policy *p)
{
	for (guint i = 0; p && i < p->schemes->len; i++) {
		const struct vr_scheme *sc = g_ptr_array_index(p->schemes, i);

		if (sc->action != VR_ACTION_PAGEOUT)
			continue;
		if (sc->pattern.min_age_us >= sc->pattern.max_age_us)
			return 0;
		return sc->quota.sz ? sc->quota.sz : G_MAXUINT64;
	}
	return 0;
}

static void agent_send(struct conn *c, char *line)
{
	g_string_append(c->out, line);
	g_free(line);
}

static void agent_answer(struct conn *c, const char *line, gsize len)
{
	struct domain *d = c->ep.d;
	g_auto(vr_proto_request) req = { 0 };
	g_autoptr(GError) error = NULL;
	struct vr_agent_stats st;

	if (!vr_proto_decode_request(line, len, &req, &error)) {
		agent_send(c, vr_proto_encode_gerror(req.id, error));
		return;
	}
	record(d, "agent:", vr_proto_command_name(req.command));
	counters[CNT_AGENT_FIRST + req.command]++;
	switch (req.command) {
	case VR_PROTO_HELLO: {
		struct vr_proto_hello h = { .version = 1, .nr_backends = 1 };

		g_strlcpy(h.agent, "fake-qemu", sizeof(h.agent));
		g_strlcpy(h.kernel, "6.1.0-fake", sizeof(h.kernel));
		g_strlcpy(h.backends[0], "damon", sizeof(h.backends[0]));
		g_strlcpy(h.backend, "damon", sizeof(h.backend));
		h.free_page_reporting = TRUE;
		h.has_reporting_order = TRUE;
		h.reporting_order = 9;
		h.cold_histogram = !opt_no_cold_hist;
		agent_send(c, vr_proto_encode_hello(req.id, &h));
		d->agent_up = TRUE;
		break;
	}
	case VR_PROTO_SET_POLICY: {
		uint64_t share = policy_share(req.set_policy.policy);

		if (opt_no_cold_hist && req.set_policy.histogram_policy) {
			/* What an older agent's decoder says. */
			agent_send(c,
				   vr_proto_encode_error(req.id, VR_PROTO_ERROR_INVALID_ARGUMENT,
							 "arguments.generation: unknown argument"));
			break;
		}
		if (req.set_policy.has_report_interval && !opt_report_ms) {
			d->report_interval_ms = req.set_policy.report_interval_ms;
			d->next_report_us =
				g_get_monotonic_time() + (gint64)d->report_interval_ms * 1000;
		}
		d->share = share > 0;
		if (fault == FAULT_DROP && d->share && !d->drop_at_us)
			d->drop_at_us = g_get_monotonic_time() + (gint64)opt_drop_after_ms * 1000;
		if (req.set_policy.histogram_policy) {
			vr_policy_free(d->hist_policy);
			d->hist_policy = g_steal_pointer(&req.set_policy.histogram_policy);
			d->hist_generation = req.set_policy.generation;
		}
		agent_record(d, "set-policy", share);
		agent_send(c, vr_proto_encode_empty(req.id));
		break;
	}
	case VR_PROTO_RECLAIM: {
		struct vr_proto_reclaim_result res = {
			.reclaimed_bytes = MIN(req.reclaim.bytes, memory_bytes / 100),
			.elapsed_ms = 1,
		};

		d->reclaimed_bytes += res.reclaimed_bytes;
		agent_send(c, vr_proto_encode_reclaim_result(req.id, &res));
		break;
	}
	case VR_PROTO_GET_STATS:
		agent_stats(d, &st);
		agent_send(c, vr_proto_encode_stats(req.id, &st));
		break;
	case VR_PROTO_GET_REGIONS: {
		g_auto(vr_proto_regions) pic = { 0 };

		agent_picture(d, req.get_regions.max, &pic);
		d->get_regions++;
		agent_send(c, vr_proto_encode_regions(req.id, &pic));
		break;
	}
	case VR_PROTO_GET_COLD_HIST: {
		/* As the real agent (guest-agent/server.c): the picture under
		 * the histogram policy's pageout scheme, with the host's rule
		 * and no memory bound of its own, so a lying picture lies in
		 * the histogram too. */
		const struct vr_scheme *sc = vr_fleet_pageout_scheme(d->hist_policy);
		g_auto(vr_proto_regions) pic = { 0 };
		struct vr_proto_cold_hist hist = { .generation = d->hist_generation };

		if (opt_no_cold_hist) {
			agent_send(c, vr_proto_encode_error(req.id, VR_PROTO_ERROR_UNKNOWN_COMMAND,
							    NULL));
			break;
		}
		if (!sc) {
			agent_send(c, vr_proto_encode_error(req.id, VR_PROTO_ERROR_FAILED,
							    "no histogram policy yet"));
			break;
		}
		agent_picture(d, VR_PROTO_MAX_REGIONS, &pic);
		hist.sample_interval_us = pic.sample_interval_us;
		hist.aggr_interval_us = pic.aggr_interval_us;
		hist.nr_regions = pic.regions->len;
		if (!vr_fleet_cold_histogram(pic.regions, pic.sample_interval_us,
					     pic.aggr_interval_us, sc, VR_PROTO_MAX_INT, hist.bytes,
					     &error)) {
			agent_send(c, vr_proto_encode_gerror(req.id, error));
			break;
		}
		d->get_regions++;
		agent_send(c, vr_proto_encode_cold_hist(req.id, &hist));
		break;
	}
	case VR_PROTO_PAUSE:
	case VR_PROTO_RESUME:
		d->paused = req.command == VR_PROTO_PAUSE;
		agent_record(d, d->paused ? "pause" : "resume", d->paused);
		agent_send(c, vr_proto_encode_empty(req.id));
		break;
	}
}

/* Answer every line @c has. FALSE when @c was closed. */
static gboolean agent_serve(struct conn *c)
{
	for (;;) {
		g_autoptr(GError) error = NULL;
		char *line = NULL;
		gsize len = 0;

		if (!vr_proto_reader_next(c->reader, &line, &len, &error)) {
			agent_send(c, vr_proto_encode_gerror(0, error));
			continue;
		}
		if (!line)
			break;
		agent_answer(c, line, len);
		g_free(line);
	}
	return conn_flush(c);
}

/* The reports that are due. */
static void agent_reports(gint64 now)
{
	for (guint i = 0; i < nr_domains; i++) {
		struct domain *d = &domains[i];
		struct vr_agent_stats st;

		if (!d->agent || !d->report_interval_ms || now < d->next_report_us)
			continue;
		d->next_report_us += (gint64)d->report_interval_ms * 1000;
		if (d->next_report_us < now)
			d->next_report_us = now + (gint64)d->report_interval_ms * 1000;
		if (d->agent_restart_path && unlink(d->agent_restart_path) == 0) {
			/* A new agent, started --paused, with its own policy. */
			d->agent_started_us = now;
			d->applied_bytes = 0;
			d->seq = 0;
			d->share = FALSE;
			d->paused = TRUE;
			d->report_interval_ms = 0;
			d->hist_generation = 0;
			g_clear_pointer(&d->hist_policy, vr_policy_free);
			agent_record(d, "restarted", 0);
			if (!opt_report_ms)
				continue; /* no report until a policy sets them */
			agent_report_from_now(d);
		}
		if (d->share && !d->paused) {
			d->applied_bytes += (uint64_t)opt_applied_kib << 10;
			if (fault != FAULT_LIE)
				resident_release((uint64_t)opt_applied_kib << 10);
		}
		agent_stats(d, &st);
		agent_record(d, "report", d->applied_bytes);
		agent_send(d->agent, vr_proto_encode_report(d->seq++, &st));
		counters[CNT_REPORTS]++;
		conn_flush(d->agent);
	}
}

/* ---- --agent-fault ---- */

/* flood: a burst on every connection whose hello was answered and whose
 * last burst went out; which burst by the connection's number. */
static void agent_floods(void)
{
	for (guint i = 0; i < nr_domains; i++) {
		struct domain *d = &domains[i];
		struct conn *c = d->agent;
		struct vr_agent_stats st;
		guint lines = FLOOD_LINES;

		if (!c || !d->agent_up || !conn_idle(c))
			continue;
		switch (d->agent_conns % 4) {
		case 1:
			for (guint j = 0; j < FLOOD_LINES; j++)
				g_string_append(c->out, "this is not JSON, host\n");
			break;
		case 2:
			lines = 1;
			for (guint j = 0; j < FLOOD_LONG_BYTES; j++)
				g_string_append_c(c->out, 'x');
			g_string_append_c(c->out, '\n');
			break;
		case 3:
			agent_stats(d, &st);
			st.mem_total_bytes = 2 * memory_bytes;
			for (guint j = 0; j < FLOOD_LINES; j++)
				agent_send(c, vr_proto_encode_report(d->seq++, &st));
			break;
		default:
			agent_stats(d, &st);
			for (guint j = 0; j < FLOOD_LINES; j++)
				agent_send(c, vr_proto_encode_report(d->seq++, &st));
			break;
		}
		agent_record(d, "flood", lines);
		conn_flush(c);
	}
}

/* drop: the connection closed and the socket gone when due; back when due. */
static void agent_drops(gint64 now)
{
	for (guint i = 0; i < nr_domains; i++) {
		struct domain *d = &domains[i];

		if (d->drop_at_us && !d->dropped && now >= d->drop_at_us) {
			d->dropped = TRUE;
			if (d->agent)
				conn_close(d->agent); /* re-adds the listener */
			ep_del(&d->agent_listen);
			close(d->agent_listen.fd);
			unlink(d->agent_path);
			d->back_at_us = opt_away_ms ? now + (gint64)opt_away_ms * 1000 : 0;
			agent_record(d, "dropped", 0);
		}
		if (d->dropped && d->back_at_us && now >= d->back_at_us) {
			d->back_at_us = 0;
			if (opt_back_restarted) {
				d->agent_started_us = now;
				d->applied_bytes = 0;
				d->seq = 0;
				d->share = FALSE;
				d->paused = TRUE;
				d->hist_generation = 0;
				g_clear_pointer(&d->hist_policy, vr_policy_free);
				agent_record(d, "restarted", 0);
			}
			d->agent_listen.fd = listen_on(d->agent_path);
			ep_add(&d->agent_listen, EPOLLIN);
			agent_record(d, "back", 0);
		}
	}
}

/* ---- the loop ---- */

static void on_readable(struct conn *c)
{
	char buf[65536];

	for (;;) {
		ssize_t n = recv(c->ep.fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		if (c->ep.kind == QMP_CONN) {
			if (!c->draining)
				g_string_append_len(c->in, buf, n);
		} else {
			vr_proto_reader_feed(c->reader, buf, (gsize)n);
		}
		if ((size_t)n < sizeof(buf))
			break;
	}
	if (c->ep.kind == QMP_CONN)
		qmp_serve(c);
	else
		agent_serve(c);
}

static void on_event(struct endpoint *ep, uint32_t events)
{
	struct domain *d = ep->d;
	struct conn *c;

	switch (ep->kind) {
	case QMP_LISTEN:
		if (d->qmp || !(c = conn_accept(ep, QMP_CONN)))
			return;
		d->qmp = c;
		c->in = g_string_new(NULL);
		counters[CNT_QMP_CONNECTS]++;
		g_string_append(c->out, FAKE_QMP_GREETING);
		conn_flush(c);
		return;
	case AGENT_LISTEN:
		if (d->agent || !(c = conn_accept(ep, AGENT_CONN)))
			return;
		d->agent = c;
		d->agent_conns++;
		c->reader = vr_proto_reader_new();
		counters[CNT_AGENT_CONNECTS]++;
		if (opt_report_ms)
			agent_report_from_now(d);
		return;
	case QMP_CONN:
	case AGENT_CONN:
		c = (struct conn *)ep;
		if (events & EPOLLOUT) {
			if (!conn_flush(c))
				return;
			if (c->ep.kind == QMP_CONN && conn_idle(c) && !qmp_serve(c))
				return;
		}
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			on_readable(c);
		return;
	}
}

/* The slow replies' bytes that are due. */
static void slow_bytes(void)
{
	for (guint i = 0; i < nr_domains; i++) {
		struct conn *c = domains[i].qmp;

		if (c && c->slow && conn_flush(c) && conn_idle(c))
			qmp_serve(c);
	}
}

/*
 * --stats: "NAME COUNT" lines, written whole (rename) every second: qmp
 * (commands), qmp-connects, agent-connects, reports, agent:COMMAND for each
 * agent command, and domains-with-regions (domains asked for get-regions at
 * least once) and min-get-regions (the fewest get-regions a domain got).
 */
static void write_stats(void)
{
	g_autoptr(GString) s = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	uint64_t least = G_MAXUINT64;
	guint with = 0;

	g_string_append_printf(s, "qmp %" G_GUINT64_FORMAT "\n", counters[CNT_QMP]);
	g_string_append_printf(s, "qmp-connects %" G_GUINT64_FORMAT "\n",
			       counters[CNT_QMP_CONNECTS]);
	g_string_append_printf(s, "agent-connects %" G_GUINT64_FORMAT "\n",
			       counters[CNT_AGENT_CONNECTS]);
	g_string_append_printf(s, "reports %" G_GUINT64_FORMAT "\n", counters[CNT_REPORTS]);
	for (int cmd = 0; cmd <= VR_PROTO_GET_COLD_HIST; cmd++)
		g_string_append_printf(s, "agent:%s %" G_GUINT64_FORMAT "\n",
				       vr_proto_command_name(cmd), counters[CNT_AGENT_FIRST + cmd]);
	for (guint i = 0; i < nr_domains; i++) {
		least = MIN(least, domains[i].get_regions);
		with += domains[i].get_regions > 0;
	}
	g_string_append_printf(s, "domains %u\n", nr_domains);
	g_string_append_printf(s, "domains-with-regions %u\n", with);
	g_string_append_printf(s, "min-get-regions %" G_GUINT64_FORMAT "\n", least);
	if (!g_file_set_contents(opt_stats, s->str, (gssize)s->len, &error))
		die("%s", error->message);
}

/* RLIMIT_NOFILE raised to what @need descriptors take, or die saying so. */
static void raise_nofile(rlim_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("getrlimit: %s", g_strerror(errno));
	if (rl.rlim_cur >= need)
		return;
	if (rl.rlim_max < need)
		rl.rlim_max = need; /* works with CAP_SYS_RESOURCE */
	rl.rlim_cur = need;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("a fleet of %u domains needs %llu file descriptors, and RLIMIT_NOFILE cannot "
		    "go that high: %s",
		    nr_domains, (unsigned long long)need, g_strerror(errno));
}

static void domain_init(struct domain *d, guint index, const char *name, const char *uuid,
			const char *qmp_path, const char *agent_path, const char *record_path,
			const char *stall_path, const char *agent_record_path)
{
	d->index = index;
	d->name = g_strdup(name);
	d->uuid = g_strdup(uuid);
	d->qmp_path = g_strdup(qmp_path);
	d->agent_path = g_strdup(agent_path);
	d->stall_path = g_strdup(stall_path);
	d->record_fd = -1;
	d->agent_record_fd = -1;
	d->agent_started_us = started_us;
	if (agent_record_path) {
		d->agent_record_fd =
			open(agent_record_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (d->agent_record_fd < 0)
			die("cannot open %s: %s", agent_record_path, g_strerror(errno));
		d->agent_restart_path = g_strconcat(agent_record_path, ".restart", NULL);
	}
	if (record_path) {
		d->record_fd = open(record_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (d->record_fd < 0)
			die("cannot open %s: %s", record_path, g_strerror(errno));
	}
	d->qmp_listen = (struct endpoint){ QMP_LISTEN, listen_on(qmp_path), d };
	ep_add(&d->qmp_listen, EPOLLIN);
	if (agent_path) {
		d->agent_listen = (struct endpoint){ AGENT_LISTEN, listen_on(agent_path), d };
		ep_add(&d->agent_listen, EPOLLIN);
	}
}

int main(int argc, char **argv)
{
	GOptionEntry entries[] = {
		{ "socket", 0, 0, G_OPTION_ARG_FILENAME, &opt_socket, "one QEMU: its QMP socket",
		  "PATH" },
		{ "name", 0, 0, G_OPTION_ARG_STRING, &opt_name, "one QEMU: the guest's name",
		  "NAME" },
		{ "uuid", 0, 0, G_OPTION_ARG_STRING, &opt_uuid, "one QEMU: the guest's UUID",
		  "UUID" },
		{ "record", 0, 0, G_OPTION_ARG_FILENAME, &opt_record,
		  "one QEMU: where commands are recorded", "FILE" },
		{ "stall-file", 0, 0, G_OPTION_ARG_FILENAME, &opt_stall,
		  "one QEMU: stall while this file exists (\"slow\" or \"never\")", "FILE" },
		{ "fleet", 0, 0, G_OPTION_ARG_FILENAME, &opt_fleet,
		  "a fleet: its domains' folders go here", "DIR" },
		{ "count", 0, 0, G_OPTION_ARG_INT, &opt_count, "a fleet: how many domains", "N" },
		{ "no-record", 0, 0, G_OPTION_ARG_NONE, &opt_no_record,
		  "a fleet: record no commands", NULL },
		{ "agent", 0, 0, G_OPTION_ARG_NONE, &opt_agent,
		  "each domain has an agent port and answers as its agent", NULL },
		{ "no-cold-histogram", 0, 0, G_OPTION_ARG_NONE, &opt_no_cold_hist,
		  "the agent is one before get-cold-histogram: no capability in its hello, "
		  "set-policy's generation refused, the command unknown",
		  NULL },
		{ "regions", 0, 0, G_OPTION_ARG_INT, &opt_regions,
		  "regions in the agent's picture (1..512, default 300)", "N" },
		{ "memory-mib", 0, 0, G_OPTION_ARG_INT, &opt_memory_mib,
		  "each guest's memory, MiB (default 2048; 512 for one QEMU)", "MIB" },
		{ "lie-about-memory", 0, 0, G_OPTION_ARG_NONE, &opt_lie,
		  "claim twice the memory the process maps", NULL },
		{ "report-ms", 0, 0, G_OPTION_ARG_INT, &opt_report_ms,
		  "the agent reports every MS from its connection on, whatever the policy says",
		  "MS" },
		{ "applied-kib-per-report", 0, 0, G_OPTION_ARG_INT, &opt_applied_kib,
		  "the agent's sz_applied grows by N KiB a report while its policy holds a "
		  "share and it runs (default 0)",
		  "N" },
		{ "resident-mib", 0, 0, G_OPTION_ARG_INT, &opt_resident_mib,
		  "keep N MiB resident, released as the agents claim reclaim (default 0)", "N" },
		{ "agent-record", 0, 0, G_OPTION_ARG_FILENAME, &opt_agent_record,
		  "one QEMU: where the agent records policies, reports, pauses; FILE.restart "
		  "restarts it",
		  "FILE" },
		{ "agent-fault", 0, 0, G_OPTION_ARG_STRING, &opt_agent_fault,
		  "one QEMU: the agent lies, floods or drops its connection (see the source)",
		  "lie|flood|drop" },
		{ "agent-drop-after-ms", 0, 0, G_OPTION_ARG_INT, &opt_drop_after_ms,
		  "drop: how long after its first share the agent drops (default 2000)", "MS" },
		{ "agent-away-ms", 0, 0, G_OPTION_ARG_INT, &opt_away_ms,
		  "drop: how long the agent's socket stays away, 0 for ever (default 3000)", "MS" },
		{ "agent-back-restarted", 0, 0, G_OPTION_ARG_NONE, &opt_back_restarted,
		  "drop: the agent comes back as a new one (counters from 0, paused)", NULL },
		{ "stats", 0, 0, G_OPTION_ARG_FILENAME, &opt_stats,
		  "write what was asked here every second", "FILE" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- a fake QEMU for vreclaimd --qmp");
	g_autoptr(GError) error = NULL;
	gint64 next_stats_us = 0;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error))
		die("%s", error->message);
	if (opt_fleet ? (opt_socket || opt_name || opt_uuid || opt_record || opt_stall ||
			 opt_count < 1 || opt_count > 100000) :
			(!opt_socket || !opt_name || !opt_uuid || opt_count || opt_no_record))
		die("give either --socket, --name and --uuid (one QEMU), or --fleet and --count "
		    "(1..100000)");
	if (opt_agent_record && (opt_fleet || !opt_agent))
		die("--agent-record is for one QEMU with --agent");
	if (opt_agent_fault) {
		if (opt_fleet || !opt_agent)
			die("--agent-fault is for one QEMU with --agent");
		if (!strcmp(opt_agent_fault, "lie"))
			fault = FAULT_LIE;
		else if (!strcmp(opt_agent_fault, "flood"))
			fault = FAULT_FLOOD;
		else if (!strcmp(opt_agent_fault, "drop"))
			fault = FAULT_DROP;
		else
			die("--agent-fault must be lie, flood or drop (got %s)", opt_agent_fault);
	}
	if (opt_drop_after_ms < 0 || opt_drop_after_ms > 3600 * 1000)
		die("--agent-drop-after-ms must be 0..3600000 (got %d)", opt_drop_after_ms);
	if (opt_away_ms < 0 || opt_away_ms > 3600 * 1000)
		die("--agent-away-ms must be 0..3600000 (got %d)", opt_away_ms);
	if (opt_report_ms < 0 || opt_report_ms > 3600 * 1000)
		die("--report-ms must be 0..3600000 (got %d)", opt_report_ms);
	if (opt_applied_kib < 0 || opt_applied_kib > 1024 * 1024)
		die("--applied-kib-per-report must be 0..1048576 (got %d)", opt_applied_kib);
	if (opt_resident_mib < 0 || opt_resident_mib > 4096)
		die("--resident-mib must be 0..4096 (got %d)", opt_resident_mib);
	if (opt_regions < 1 || opt_regions > VR_PROTO_MAX_REGIONS)
		die("--regions must be 1..%d (got %d)", VR_PROTO_MAX_REGIONS, opt_regions);
	if (!opt_memory_mib)
		opt_memory_mib = opt_fleet ? 2048 : 512;
	if (opt_memory_mib < 64 || opt_memory_mib > 1024 * 1024)
		die("--memory-mib must be 64..1048576 (got %d)", opt_memory_mib);
	memory_bytes = (uint64_t)opt_memory_mib << 20;
	nr_domains = opt_fleet ? (guint)opt_count : 1;
	/* It dies with whoever started it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Two sockets and two clients a domain, a record file, and room. */
	raise_nofile((rlim_t)nr_domains * 5 + 64);
	started_us = g_get_monotonic_time();
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1: %s", g_strerror(errno));
	domains = g_new0(struct domain, nr_domains);
	if (!opt_fleet) {
		g_autofree char *agent = g_strconcat(opt_socket, ".agent", NULL);

		domain_init(&domains[0], 0, opt_name, opt_uuid, opt_socket,
			    opt_agent ? agent : NULL, opt_record, opt_stall, opt_agent_record);
	}
	for (guint i = 0; opt_fleet && i < nr_domains; i++) {
		g_autofree char *name = g_strdup_printf("fleet-%04u", i);
		g_autofree char *uuid = g_strdup_printf("f1ee0000-0000-4000-8000-%012x", i);
		g_autofree char *dir = g_build_filename(opt_fleet, name, NULL);
		g_autofree char *qmp = g_build_filename(dir, "qmp.sock", NULL);
		g_autofree char *agent = g_build_filename(dir, "agent.sock", NULL);
		g_autofree char *rec = g_build_filename(dir, "commands.txt", NULL);

		if (g_mkdir_with_parents(dir, 0700) < 0)
			die("cannot make %s: %s", dir, g_strerror(errno));
		domain_init(&domains[i], i, name, uuid, qmp, opt_agent ? agent : NULL,
			    opt_no_record ? NULL : rec, NULL, NULL);
	}
	/* QEMU maps all of its guest's RAM: reserve as much address space. */
	if (!opt_lie && mmap(NULL, memory_bytes, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		die("cannot map the guest's memory: %s", g_strerror(errno));
	if (opt_resident_mib) {
		resident_bytes = (uint64_t)opt_resident_mib << 20;
		resident = mmap(NULL, resident_bytes, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (resident == MAP_FAILED)
			die("cannot map %d MiB: %s", opt_resident_mib, g_strerror(errno));
		memset(resident, 1, resident_bytes);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct epoll_event evs[256];
		int n = epoll_wait(epfd, evs, G_N_ELEMENTS(evs), LOOP_TICK_MS);
		gint64 now;

		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", g_strerror(errno));
		for (int i = 0; i < n; i++)
			on_event(evs[i].data.ptr, evs[i].events);
		now = g_get_monotonic_time();
		agent_reports(now);
		if (fault == FAULT_FLOOD)
			agent_floods();
		if (fault == FAULT_DROP)
			agent_drops(now);
		slow_bytes();
		if (opt_stats && now >= next_stats_us) {
			write_stats();
			next_stats_us = now + G_USEC_PER_SEC;
		}
	}
}
