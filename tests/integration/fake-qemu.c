/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A fake QEMU for vreclaimd --qmp: a process that listens on a QMP socket
 * and answers what vreclaimd's probe and balloon action ask, as QEMU 7.2
 * does (a greeting, capabilities negotiation first, "\r\n" after each
 * message, the command's "id" in its reply), one client at a time. It has a
 * balloon, no agent port, and maps as much address space as the guest
 * memory it claims (a QEMU maps all of its guest's RAM; vreclaimd checks).
 *
 *   fake-qemu --socket PATH --name NAME --uuid UUID --record FILE
 *	       [--stall-file FILE] [--agent-socket PATH --agent-record FILE]
 *
 * Each command's name is appended to the record file. While the stall file
 * exists, commands after the negotiation are answered as it says: "slow"
 * sends each reply a byte per second, "never" sends nothing (the fake keeps
 * reading until the client goes). It prints "ready" on stdout once it
 * listens, and runs until killed.
 *
 * With --agent-socket it also has the agent's port (a virtserialport named
 * org.vreclaim.agent.0 whose chardev is a unix socket QEMU listens on), and
 * a child process plays the agent behind it: it answers hello, set-policy,
 * get-regions (all of the guest cold), get-stats, pause and resume, and
 * sends a report every 200 ms whose sz_applied grows by 1 MiB while the
 * last policy holds a share (its pageout scheme's minimum age below its
 * maximum) and it is not paused. It appends to the agent record file a line
 * per set-policy, "MONOTONIC_US set-policy SHARE" (SHARE: the pageout
 * scheme's quota size, 0 for a policy that selects nothing), per report
 * "MONOTONIC_US report SZ_APPLIED", per pause or resume "MONOTONIC_US pause
 * 1" or "MONOTONIC_US resume 0". When the file AGENT-RECORD.restart exists,
 * the agent starts over on the same connection, as after a guest reboot:
 * its counters, uptime and report numbers from 0, paused, no policy of the
 * host's (the file is removed).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

/* The guest memory it claims, bytes. */
#define FAKE_MEMORY_BYTES (512ULL << 20)

/* The slow mode's pause between two bytes, us. */
#define SLOW_BYTE_US G_USEC_PER_SEC

#define GREETING                                                                                   \
	"{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 2, \"major\": 7}, "          \
	"\"package\": \"\"}, \"capabilities\": [\"oob\"]}}\r\n"

/* The devices' QOM containers: no virtio-serial port. */
#define EMPTY_CONTAINER "[{\"name\": \"type\", \"type\": \"string\"}]"

static char *opt_socket, *opt_name, *opt_uuid, *opt_record, *opt_stall;
static char *opt_agent_socket, *opt_agent_record;
static int record_fd = -1;

enum stall {
	STALL_NONE,
	STALL_SLOW,
	STALL_NEVER,
};

static enum stall stall_mode(void)
{
	g_autofree char *text = NULL;

	if (!opt_stall || !g_file_get_contents(opt_stall, &text, NULL, NULL))
		return STALL_NONE;
	g_strstrip(text);
	return !strcmp(text, "never") ? STALL_NEVER : STALL_SLOW;
}

/* Send @text, a byte per second when @slow. FALSE when the client went. */
static gboolean send_text(int fd, const char *text, gboolean slow)
{
	size_t len = strlen(text);

	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, text + off, slow ? 1 : len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return FALSE;
		off += (size_t)n;
		if (slow && off < len)
			g_usleep(SLOW_BYTE_US);
	}
	return TRUE;
}

/* The "return" text of @name after negotiation, or NULL (an error). */
static char *lookup(const char *name, json_object *args)
{
	json_object *path = NULL;

	if (!strcmp(name, "query-name"))
		return g_strdup_printf("{\"name\": \"%s\"}", opt_name);
	if (!strcmp(name, "query-uuid"))
		return g_strdup_printf("{\"UUID\": \"%s\"}", opt_uuid);
	if (!strcmp(name, "query-memory-size-summary"))
		return g_strdup_printf("{\"base-memory\": %llu, \"plugged-memory\": 0}",
				       FAKE_MEMORY_BYTES);
	if (!strcmp(name, "query-balloon"))
		return g_strdup_printf("{\"actual\": %llu}", FAKE_MEMORY_BYTES);
	if (!strcmp(name, "query-chardev") && opt_agent_socket)
		return g_strdup_printf(
			"[{\"frontend-open\": true, \"filename\": \"pty:/dev/pts/7\", "
			"\"label\": \"serial0\"}, {\"frontend-open\": true, \"filename\": "
			"\"unix:%s,server=on\", \"label\": \"charchannel0\"}]",
			opt_agent_socket);
	if (!strcmp(name, "query-chardev"))
		return g_strdup("[{\"frontend-open\": true, \"filename\": \"pty:/dev/pts/7\", "
				"\"label\": \"serial0\"}]");
	if (!strcmp(name, "qom-list") && opt_agent_socket && args &&
	    json_object_object_get_ex(args, "path", &path) &&
	    !g_strcmp0(json_object_get_string(path), "/machine/peripheral"))
		return g_strdup("[{\"name\": \"type\", \"type\": \"string\"}, "
				"{\"name\": \"channel0\", \"type\": \"child<virtserialport>\"}]");
	if (!strcmp(name, "qom-get") && opt_agent_socket && args) {
		json_object *prop = NULL;

		json_object_object_get_ex(args, "property", &prop);
		if (prop && !g_strcmp0(json_object_get_string(prop), "name"))
			return g_strdup("\"org.vreclaim.agent.0\"");
		if (prop && !g_strcmp0(json_object_get_string(prop), "chardev"))
			return g_strdup("\"charchannel0\"");
	}
	if (!strcmp(name, "balloon"))
		return g_strdup("{}");
	if (!strcmp(name, "qom-list") && args && json_object_object_get_ex(args, "path", &path) &&
	    json_object_is_type(path, json_type_string) &&
	    g_str_has_prefix(json_object_get_string(path), "/machine/peripheral"))
		return g_strdup(EMPTY_CONTAINER);
	return NULL;
}

/* The reply line to @line (owned); *@command_out: whether it was a command
 * after negotiation. */
static char *answer(const char *line, gboolean *negotiated, gboolean *command_out)
{
	json_object *cmd = json_tokener_parse(line);
	json_object *reply = json_object_new_object();
	json_object *exec = NULL, *id = NULL, *args = NULL;
	g_autofree char *ret = NULL;
	const char *name = NULL;
	char *out;

	*command_out = FALSE;
	if (cmd && json_object_is_type(cmd, json_type_object)) {
		if (json_object_object_get_ex(cmd, "execute", &exec) &&
		    json_object_is_type(exec, json_type_string))
			name = json_object_get_string(exec);
		json_object_object_get_ex(cmd, "id", &id);
		json_object_object_get_ex(cmd, "arguments", &args);
	}
	if (name) {
		g_autofree char *rec = g_strdup_printf("%s\n", name);

		if (write(record_fd, rec, strlen(rec)) < 0)
			_exit(3);
		if (!*negotiated && !strcmp(name, "qmp_capabilities")) {
			*negotiated = TRUE;
			ret = g_strdup("{}");
		} else if (*negotiated) {
			*command_out = TRUE;
			ret = lookup(name, args);
		}
	}
	if (ret) {
		json_object_object_add(reply, "return", json_tokener_parse(ret));
	} else {
		json_object *err = json_object_new_object();

		json_object_object_add(err, "class", json_object_new_string("CommandNotFound"));
		json_object_object_add(err, "desc",
				       json_object_new_string("the fake QEMU does not know this"));
		json_object_object_add(reply, "error", err);
	}
	if (id)
		json_object_object_add(reply, "id", json_object_get(id));
	out = g_strconcat(json_object_to_json_string_ext(reply, JSON_C_TO_STRING_SPACED), "\r\n",
			  NULL);
	json_object_put(reply);
	json_object_put(cmd);
	return out;
}

/* Read until the client goes (the "never" stall). */
static void drain(int fd)
{
	char buf[4096];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		return;
	}
}

static void session(int fd)
{
	g_autoptr(GString) in = g_string_new(NULL);
	gboolean negotiated = FALSE;

	if (!send_text(fd, GREETING, FALSE))
		return;
	for (;;) {
		char buf[65536];
		char *nl;
		ssize_t n;

		while ((nl = memchr(in->str, '\n', in->len))) {
			g_autofree char *line = g_strndup(in->str, (gsize)(nl - in->str));
			g_autofree char *reply = NULL;
			gboolean command;
			enum stall mode;

			g_string_erase(in, 0, nl - in->str + 1);
			if (strspn(line, " \t\r") == strlen(line))
				continue;
			reply = answer(line, &negotiated, &command);
			mode = command ? stall_mode() : STALL_NONE;
			if (mode == STALL_NEVER) {
				drain(fd);
				return;
			}
			if (!send_text(fd, reply, mode == STALL_SLOW))
				return;
		}
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		g_string_append_len(in, buf, n);
	}
}

/* ---- the agent behind the agent's port (--agent-socket) ---- */

/* Between two reports, us; what sz_applied grows by per report. */
#define AGENT_REPORT_US	   (200 * 1000)
#define AGENT_APPLIED_STEP (1ULL << 20)

static gint64 agent_started_us;
static uint64_t agent_applied;
static uint64_t agent_seq;
static gboolean agent_share;  /* the last policy holds a share */
static gboolean agent_paused; /* told to pause */
static int agent_record_fd = -1;

static void agent_record(const char *what, uint64_t value)
{
	g_autofree char *line = g_strdup_printf("%" G_GINT64_FORMAT " %s %" G_GUINT64_FORMAT "\n",
						g_get_monotonic_time(), what, (guint64)value);

	if (write(agent_record_fd, line, strlen(line)) < 0)
		_exit(3);
}

static void agent_stats(struct vr_agent_stats *st)
{
	memset(st, 0, sizeof(*st));
	g_strlcpy(st->backend, "damon", sizeof(st->backend));
	st->paused = agent_paused;
	st->uptime_ms = (uint64_t)(g_get_monotonic_time() - agent_started_us) / 1000;
	st->nr_tried = st->nr_applied = agent_applied >> 12;
	st->sz_tried = st->sz_applied = agent_applied;
	st->mem_total_bytes = FAKE_MEMORY_BYTES;
	st->mem_free_bytes = FAKE_MEMORY_BYTES / 8;
	st->free_page_reporting = TRUE;
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

/* The reply line to @req (owned). */
static char *agent_answer(const struct vr_proto_request *req)
{
	struct vr_agent_stats st;

	switch (req->command) {
	case VR_PROTO_HELLO: {
		struct vr_proto_hello h = { .version = VR_PROTO_VERSION,
					    .nr_backends = 1,
					    .free_page_reporting = TRUE };

		g_strlcpy(h.agent, "fake-agent", sizeof(h.agent));
		g_strlcpy(h.kernel, "6.1.0-fake", sizeof(h.kernel));
		g_strlcpy(h.backends[0], "damon", sizeof(h.backends[0]));
		g_strlcpy(h.backend, "damon", sizeof(h.backend));
		return vr_proto_encode_hello(req->id, &h);
	}
	case VR_PROTO_SET_POLICY: {
		uint64_t share = policy_share(req->set_policy.policy);

		agent_share = share > 0;
		agent_record("set-policy", share);
		return vr_proto_encode_empty(req->id);
	}
	case VR_PROTO_GET_STATS:
		agent_stats(&st);
		return vr_proto_encode_stats(req->id, &st);
	case VR_PROTO_GET_REGIONS: {
		g_auto(vr_proto_regions)
			r = { .sample_interval_us = 5000, .aggr_interval_us = 100000 };

		r.regions = g_array_new(FALSE, FALSE, sizeof(struct vr_agent_region));
		for (uint64_t a = 0; a < FAKE_MEMORY_BYTES; a += FAKE_MEMORY_BYTES / 4) {
			struct vr_agent_region reg = { .start = a,
						       .end = a + FAKE_MEMORY_BYTES / 4,
						       .nr_accesses = 0,
						       .age = 100000 };
			g_array_append_val(r.regions, reg);
		}
		return vr_proto_encode_regions(req->id, &r);
	}
	case VR_PROTO_PAUSE:
		agent_paused = TRUE;
		agent_record("pause", 1);
		return vr_proto_encode_empty(req->id);
	case VR_PROTO_RESUME:
		agent_paused = FALSE;
		agent_record("resume", 0);
		return vr_proto_encode_empty(req->id);
	case VR_PROTO_RECLAIM:
		break;
	}
	return vr_proto_encode_error(req->id, VR_PROTO_ERROR_FAILED, "not in the fake");
}

/* Serve one host connection until it goes. */
static void agent_session(int fd)
{
	g_autoptr(vr_proto_reader) reader = vr_proto_reader_new();
	gint64 next_report = g_get_monotonic_time() + AGENT_REPORT_US;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		gint64 now = g_get_monotonic_time();
		int wait_ms = next_report > now ? (int)((next_report - now) / 1000) : 0;
		char buf[65536];
		char *line;
		gsize len;

		if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR)
			return;
		if (g_get_monotonic_time() >= next_report) {
			struct vr_agent_stats st;
			g_autofree char *text = NULL;
			g_autofree char *restart = g_strconcat(opt_agent_record, ".restart", NULL);

			if (unlink(restart) == 0) {
				/* A new agent, started --paused, its own policy. */
				agent_started_us = g_get_monotonic_time();
				agent_applied = 0;
				agent_seq = 0;
				agent_share = FALSE;
				agent_paused = TRUE;
				agent_record("restarted", 0);
			}

			if (agent_share && !agent_paused)
				agent_applied += AGENT_APPLIED_STEP;
			agent_stats(&st);
			text = vr_proto_encode_report(agent_seq++, &st);
			agent_record("report", agent_applied);
			if (!send_text(fd, text, FALSE))
				return;
			next_report += AGENT_REPORT_US;
		}
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		vr_proto_reader_feed(reader, buf, (gsize)n);
		while (vr_proto_reader_next(reader, &line, &len, NULL) && line) {
			g_autofree char *owned = line;
			g_auto(vr_proto_request) req = { 0 };
			g_autofree char *reply = NULL;

			if (!vr_proto_decode_request(owned, len, &req, NULL))
				continue;
			reply = agent_answer(&req);
			if (reply && !send_text(fd, reply, FALSE))
				return;
		}
	}
}

static G_NORETURN void agent_main(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	agent_started_us = g_get_monotonic_time();
	memcpy(sa.sun_path, opt_agent_socket, strlen(opt_agent_socket) + 1);
	agent_record_fd = open(opt_agent_record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (listen_fd < 0 || agent_record_fd < 0 ||
	    bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listen_fd, 4) < 0) {
		fprintf(stderr, "fake-qemu: cannot listen on %s: %s\n", opt_agent_socket,
			g_strerror(errno));
		_exit(2);
	}
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			_exit(2);
		agent_session(fd);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	GOptionEntry entries[] = {
		{ "socket", 0, 0, G_OPTION_ARG_FILENAME, &opt_socket, "the QMP socket", "PATH" },
		{ "name", 0, 0, G_OPTION_ARG_STRING, &opt_name, "the guest's name", "NAME" },
		{ "uuid", 0, 0, G_OPTION_ARG_STRING, &opt_uuid, "the guest's UUID", "UUID" },
		{ "record", 0, 0, G_OPTION_ARG_FILENAME, &opt_record, "where commands are recorded",
		  "FILE" },
		{ "stall-file", 0, 0, G_OPTION_ARG_FILENAME, &opt_stall,
		  "stall while this file exists (\"slow\" or \"never\")", "FILE" },
		{ "agent-socket", 0, 0, G_OPTION_ARG_FILENAME, &opt_agent_socket,
		  "the agent port's socket, served by a fake agent", "PATH" },
		{ "agent-record", 0, 0, G_OPTION_ARG_FILENAME, &opt_agent_record,
		  "where the fake agent records policies and reports", "FILE" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- a fake QEMU for vreclaimd --qmp");
	g_autoptr(GError) error = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int listen_fd;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
		fprintf(stderr, "fake-qemu: %s\n", error->message);
		return 2;
	}
	if (!opt_socket || !opt_name || !opt_uuid || !opt_record ||
	    strlen(opt_socket) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "fake-qemu: --socket (short), --name, --uuid and --record are "
				"needed\n");
		return 2;
	}
	/* It dies with whoever started it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memcpy(sa.sun_path, opt_socket, strlen(opt_socket) + 1);
	record_fd = open(opt_record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (record_fd < 0 || listen_fd < 0 ||
	    bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listen_fd, 4) < 0) {
		fprintf(stderr, "fake-qemu: cannot listen on %s: %s\n", opt_socket,
			g_strerror(errno));
		return 2;
	}
	if (mmap(NULL, FAKE_MEMORY_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0) == MAP_FAILED) {
		fprintf(stderr, "fake-qemu: cannot map the guest's memory: %s\n",
			g_strerror(errno));
		return 2;
	}
	if (opt_agent_socket) {
		pid_t child;

		if (!opt_agent_record || strlen(opt_agent_socket) >= sizeof(sa.sun_path)) {
			fprintf(stderr, "fake-qemu: --agent-socket (short) needs --agent-record\n");
			return 2;
		}
		child = fork();
		if (child < 0)
			return 2;
		if (child == 0)
			agent_main();
		/* The agent's socket exists before "ready". */
		for (int i = 0; i < 500 && access(opt_agent_socket, F_OK) < 0; i++)
			g_usleep(10000);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return 2;
		session(fd);
		close(fd);
	}
}
