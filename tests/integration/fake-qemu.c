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
 *	       [--stall-file FILE]
 *
 * Each command's name is appended to the record file. While the stall file
 * exists, commands after the negotiation are answered as it says: "slow"
 * sends each reply a byte per second, "never" sends nothing (the fake keeps
 * reading until the client goes). It prints "ready" on stdout once it
 * listens, and runs until killed.
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
#include <unistd.h>

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
	if (!strcmp(name, "query-chardev"))
		return g_strdup("[{\"frontend-open\": true, \"filename\": \"pty:/dev/pts/7\", "
				"\"label\": \"serial0\"}]");
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
