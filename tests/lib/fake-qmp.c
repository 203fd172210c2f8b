/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QMP server side that the tests' fake QEMUs share (fake-qmp.h): the
 * socket, line framing, command parsing, replies and the capabilities
 * negotiation.
 */
#define _GNU_SOURCE

#include "fake-qmp.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int fake_qmp_listen(const char *path, gboolean nonblock, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NAMETOOLONG,
			    "socket path %s is too long (at most %zu bytes)", path,
			    sizeof(sa.sun_path) - 1);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(err),
			    "cannot listen on %s: %s", path, g_strerror(err));
		return -1;
	}
	return fd;
}

gboolean fake_qmp_socket_open(struct fake_qmp_socket *s, const char *tmpl, GError **error)
{
	s->listen_fd = -1;
	s->path = NULL;
	s->dir = g_dir_make_tmp(tmpl, error);
	if (!s->dir) {
		g_prefix_error(error, "cannot make a temporary folder: ");
		return FALSE;
	}
	s->path = g_build_filename(s->dir, "qmp.sock", NULL);
	s->listen_fd = fake_qmp_listen(s->path, FALSE, error);
	if (s->listen_fd < 0) {
		fake_qmp_socket_close(s);
		return FALSE;
	}
	return TRUE;
}

void fake_qmp_socket_close(struct fake_qmp_socket *s)
{
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
	if (s->path)
		g_unlink(s->path);
	if (s->dir)
		g_rmdir(s->dir);
	g_clear_pointer(&s->path, g_free);
	g_clear_pointer(&s->dir, g_free);
}

int fake_qmp_accept(int listen_fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };

	if (poll(&pfd, 1, timeout_ms) != 1)
		return -1;
	return accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

char *fake_qmp_take_line(GString *in)
{
	char *nl = memchr(in->str, '\n', in->len);
	char *line;

	if (!nl)
		return NULL;
	line = g_strndup(in->str, (gsize)(nl - in->str));
	g_string_erase(in, 0, nl - in->str + 1);
	return line;
}

enum fake_qmp_read fake_qmp_read_line(int fd, GString *in, int timeout_ms, char **line)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char buf[4096];
		ssize_t n;

		*line = fake_qmp_take_line(in);
		if (*line)
			return FAKE_QMP_READ_LINE;
		if (poll(&pfd, 1, timeout_ms) != 1)
			return FAKE_QMP_READ_TIMEOUT;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return FAKE_QMP_READ_CLOSED;
		g_string_append_len(in, buf, n);
	}
}

gboolean fake_qmp_send_all(int fd, const char *buf, gsize len, int timeout_ms)
{
	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&pfd, 1, timeout_ms) != 1)
			return FALSE;
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return FALSE;
		buf += n;
		len -= (gsize)n;
	}
	return TRUE;
}

gboolean fake_qmp_command_parse(struct fake_qmp_command *cmd, const char *line)
{
	json_object *execute = NULL;

	memset(cmd, 0, sizeof(*cmd));
	cmd->obj = json_tokener_parse(line);
	if (!cmd->obj || !json_object_is_type(cmd->obj, json_type_object))
		return FALSE;
	json_object_object_get_ex(cmd->obj, "id", &cmd->id);
	json_object_object_get_ex(cmd->obj, "arguments", &cmd->arguments);
	if (json_object_object_get_ex(cmd->obj, "execute", &execute) &&
	    json_object_is_type(execute, json_type_string))
		cmd->execute = json_object_get_string(execute);
	return cmd->execute != NULL;
}

void fake_qmp_command_clear(struct fake_qmp_command *cmd)
{
	json_object_put(cmd->obj);
	memset(cmd, 0, sizeof(*cmd));
}

const char *fake_qmp_command_arg(const struct fake_qmp_command *cmd, const char *key)
{
	json_object *value = NULL;

	if (!cmd->arguments || !json_object_is_type(cmd->arguments, json_type_object) ||
	    !json_object_object_get_ex(cmd->arguments, key, &value) ||
	    !json_object_is_type(value, json_type_string))
		return NULL;
	return json_object_get_string(value);
}

char *fake_qmp_reply(json_object *id, const char *ret_json, const char *cls, const char *desc)
{
	json_object *reply = json_object_new_object();
	char *out;

	if (ret_json) {
		json_object_object_add(reply, "return", json_tokener_parse(ret_json));
	} else {
		json_object *err = json_object_new_object();

		json_object_object_add(err, "class", json_object_new_string(cls));
		json_object_object_add(err, "desc", json_object_new_string(desc));
		json_object_object_add(reply, "error", err);
	}
	if (id)
		json_object_object_add(reply, "id", json_object_get(id));
	out = g_strconcat(json_object_to_json_string_ext(reply, JSON_C_TO_STRING_SPACED), "\r\n",
			  NULL);
	json_object_put(reply);
	return out;
}

char *fake_qmp_answer(struct fake_qmp_session *s, const struct fake_qmp_command *cmd,
		      fake_qmp_lookup_fn lookup, gpointer data, gboolean *command)
{
	const char *cls = "GenericError", *desc = "QMP input must be an object with \"execute\"";
	g_autofree char *ret = NULL;

	if (command)
		*command = FALSE;
	if (cmd->execute && !s->negotiated) {
		if (!strcmp(cmd->execute, "qmp_capabilities")) {
			s->negotiated = TRUE;
			ret = g_strdup("{}");
		} else {
			cls = "CommandNotFound";
			desc = "Expecting capabilities negotiation with 'qmp_capabilities'";
		}
	} else if (cmd->execute) {
		if (command)
			*command = TRUE;
		ret = lookup(cmd, &cls, &desc, data);
	}
	return fake_qmp_reply(cmd->id, ret, cls, desc);
}
