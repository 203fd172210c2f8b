// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vreclaimd's control socket, its wire format (see control.h): the names of
 * the commands and error classes, the requests and replies as JSON lines in
 * both directions, the status's members. Pure: text in, structs out and
 * back. The server that carries them is control.c.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include "control/control.h"

#include <string.h>

#include "json-doc.h"
#include "protocol.h" /* VR_PROTO_MAX_LINE */

/* clang-format off */
G_DEFINE_QUARK(vr-control-error-quark, vr_control_error)
/* clang-format on */

static const char *const class_names[] = {
	[VR_CONTROL_ERROR_NO_DOMAIN] = "no-domain",
	[VR_CONTROL_ERROR_INVALID_ARGUMENT] = "invalid-argument",
	[VR_CONTROL_ERROR_FAILED] = "failed",
	[VR_CONTROL_ERROR_PERMISSION_DENIED] = "permission-denied",
};

static const char *const command_names[] = {
	[VR_CONTROL_STATUS] = "status",	  [VR_CONTROL_SET] = "set",
	[VR_CONTROL_PAUSE] = "pause",	  [VR_CONTROL_RESUME] = "resume",
	[VR_CONTROL_METRICS] = "metrics",
};

const char *vr_control_error_class_name(enum vr_control_error cls)
{
	return (guint)cls < G_N_ELEMENTS(class_names) ? class_names[cls] : "failed";
}

gboolean vr_control_error_class_from_name(const char *name, enum vr_control_error *cls)
{
	for (guint i = 0; i < G_N_ELEMENTS(class_names); i++)
		if (!strcmp(name, class_names[i])) {
			*cls = (enum vr_control_error)i;
			return TRUE;
		}
	return FALSE;
}

const char *vr_control_command_name(enum vr_control_command command)
{
	return (guint)command < G_N_ELEMENTS(command_names) ? command_names[command] : "unknown";
}

gboolean vr_control_command_from_name(const char *name, enum vr_control_command *command)
{
	for (guint i = 0; i < G_N_ELEMENTS(command_names); i++)
		if (!strcmp(name, command_names[i])) {
			*command = (enum vr_control_command)i;
			return TRUE;
		}
	return FALSE;
}

void vr_control_request_clear(struct vr_control_request *req)
{
	g_strfreev(req->settings);
	memset(req, 0, sizeof(*req));
}

/* ---- checks shared by both directions ---- */

/* Sets @error to "<path>: <message>" (INVALID_ARGUMENT). Return: FALSE. */
#define invalid(error, path, ...)                                                                  \
	vr_json_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT, path,        \
			  __VA_ARGS__)

/* The members each command takes besides "command". */
static const char *const no_members[] = { NULL };
static const char *const set_members[] = { "domain", "settings", NULL };
static const char *const pause_members[] = { "domain", NULL };

static const char *const *command_members(enum vr_control_command command)
{
	switch (command) {
	case VR_CONTROL_SET:
		return set_members;
	case VR_CONTROL_PAUSE:
	case VR_CONTROL_RESUME:
		return pause_members;
	default:
		return no_members;
	}
}

/**
 * check_text() - @s (@n bytes) is UTF-8 without control or format
 * characters, and not empty unless @empty_ok. Errors name @path.
 */
static gboolean check_text(const char *s, gsize n, gboolean empty_ok, const char *path,
			   GError **error)
{
	if (!n && !empty_ok)
		return invalid(error, path, "expected a non-empty string");
	if (memchr(s, '\0', n))
		return invalid(error, path, "the string contains a NUL character");
	if (!g_utf8_validate(s, (gssize)n, NULL))
		return invalid(error, path, "the string is not valid UTF-8");
	for (const char *p = s; p < s + n; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);

		if (g_unichar_iscntrl(c) || g_unichar_type(c) == G_UNICODE_FORMAT)
			return invalid(error, path,
				       "the string contains a control or format character (U+%04X)",
				       c);
	}
	return TRUE;
}

static gboolean is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* The KEY of "KEY=VALUE" @setting at @path, into @key (owned). */
static gboolean check_setting(const char *setting, const char *path, char **key, GError **error)
{
	gsize n = strlen(setting);
	const char *eq = strchr(setting, '=');

	if (n > VR_CONTROL_MAX_SETTING_LEN)
		return invalid(error, path, "the setting has %zu bytes, above the limit of %d", n,
			       VR_CONTROL_MAX_SETTING_LEN);
	if (!check_text(setting, n, FALSE, path, error))
		return FALSE;
	if (!eq)
		return invalid(error, path, "'%s' is not KEY=VALUE", setting);
	if (eq == setting)
		return invalid(error, path, "'%s' has no KEY before '='", setting);
	for (const char *p = setting; p < eq; p++)
		if (!is_key_char(*p))
			return invalid(error, path,
				       "'%.*s' is not a setting name (lowercase letters, digits, "
				       "'_', '-' and '.')",
				       (int)(eq - setting), setting);
	*key = g_strndup(setting, (gsize)(eq - setting));
	return TRUE;
}

/* The rules of struct vr_control_request (control.h), for both directions. */
static gboolean request_validate(const struct vr_control_request *req, GError **error)
{
	const char *name = vr_control_command_name(req->command);

	if ((guint)req->command >= G_N_ELEMENTS(command_names))
		return invalid(error, "command", "unknown command (%d)", (int)req->command);
	if (req->has_domain) {
		if (command_members(req->command) == no_members)
			return invalid(error, "domain", "%s takes no domain", name);
		if (!memchr(req->domain, '\0', sizeof(req->domain)))
			return invalid(error, "domain", "longer than %zu bytes",
				       sizeof(req->domain) - 1);
		if (!check_text(req->domain, strlen(req->domain), FALSE, "domain", error))
			return FALSE;
	} else if (req->command == VR_CONTROL_SET) {
		return invalid(error, "domain", "missing (set changes one domain: name it)");
	}
	if (req->command != VR_CONTROL_SET) {
		if (req->settings)
			return invalid(error, "settings", "%s takes no settings", name);
		return TRUE;
	}
	guint nr = req->settings ? g_strv_length(req->settings) : 0;
	if (!nr)
		return invalid(error, "settings", "expected 1..%d settings KEY=VALUE (got none)",
			       VR_CONTROL_MAX_SETTINGS);
	if (nr > VR_CONTROL_MAX_SETTINGS)
		return invalid(error, "settings", "expected at most %d settings (got %u)",
			       VR_CONTROL_MAX_SETTINGS, nr);
	g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *path = vr_json_path_index("settings", i);
		char *key = NULL;

		if (!check_setting(req->settings[i], path, &key, error))
			return FALSE;
		if (!g_hash_table_add(keys, key))
			return invalid(error, path, "'%s' is set twice", req->settings[i]);
	}
	return TRUE;
}

/* ---- JSON lines ---- */

static char *to_line(struct json_object *root)
{
	return g_strconcat(json_object_to_json_string_ext(
				   root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			   "\n", NULL);
}

/**
 * parse_line() - the JSON object in the @len bytes of @line (a final '\n'
 * and a '\r' before it allowed), at most @max bytes with its newline, into
 * @root (owned); integers beyond 64 bits into @big when not NULL. Errors
 * have the code @code.
 */
static gboolean parse_line(const char *line, gsize len, gsize max, int code, GHashTable *big,
			   struct json_object **root, GError **error)
{
	/* json-doc's syntax errors come as FAILED, to be told apart here. */
	const struct vr_json_errors errs = { VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED, code };
	g_autoptr(json_object) doc = NULL;
	g_autoptr(GError) local = NULL;
	const char *p;
	gsize n = len;

	if (n > 0 && line[n - 1] == '\n')
		n--;
	if (n > 0 && line[n - 1] == '\r')
		n--;
	if (n + 1 > max) {
		g_set_error(error, VR_CONTROL_ERROR, code,
			    "the line has %zu bytes with its newline, above the limit of %zu bytes",
			    n + 1, max);
		return FALSE;
	}
	if ((p = memchr(line, '\n', n))) {
		g_set_error(error, VR_CONTROL_ERROR, code,
			    "a newline at offset %td: a message is one line", p - line);
		return FALSE;
	}
	if ((p = memchr(line, '\0', n))) {
		g_set_error(error, VR_CONTROL_ERROR, code, "a NUL byte at offset %td", p - line);
		return FALSE;
	}
	if (!vr_json_doc_parse(line, (gssize)n, &errs, &doc, big, &local)) {
		if (local->code == VR_CONTROL_ERROR_FAILED)
			g_set_error(error, VR_CONTROL_ERROR, code, "not JSON: %s", local->message);
		else
			g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (!json_object_is_type(doc, json_type_object)) {
		g_set_error(error, VR_CONTROL_ERROR, code, "expected a JSON object (got %s)",
			    vr_json_describe(doc));
		return FALSE;
	}
	*root = g_steal_pointer(&doc);
	return TRUE;
}

/* @v as a string without NUL characters (borrowed, @n bytes); an error at @path if not. */
static gboolean get_string(struct json_object *v, const char *path, const char **s, gsize *n,
			   int code, GError **error)
{
	if (!json_object_is_type(v, json_type_string))
		return vr_json_set_error(error, VR_CONTROL_ERROR, code, path,
					 "expected a string (got %s)", vr_json_describe(v));
	*s = json_object_get_string(v);
	*n = (gsize)json_object_get_string_len(v);
	if (memchr(*s, '\0', *n))
		return vr_json_set_error(error, VR_CONTROL_ERROR, code, path,
					 "the string contains a NUL character");
	return TRUE;
}

/* @v as a string of at most @size - 1 bytes into @buf. */
static gboolean copy_string(struct json_object *v, const char *path, char *buf, gsize size,
			    int code, GError **error)
{
	const char *s;
	gsize n;

	if (!get_string(v, path, &s, &n, code, error))
		return FALSE;
	if (n >= size)
		return vr_json_set_error(error, VR_CONTROL_ERROR, code, path,
					 "longer than %zu bytes (got %zu)", size - 1, n);
	memcpy(buf, s, n);
	buf[n] = '\0';
	return TRUE;
}

/* "a, b, c" of the NULL-terminated @names. */
static char *names_text(const char *const *names)
{
	g_autofree char *joined = g_strjoinv(", ", (char **)names);

	return *joined ? g_steal_pointer(&joined) : g_strdup("nothing else");
}

/* ---- requests ---- */

static gboolean read_request(struct json_object *root, struct vr_control_request *req,
			     GError **error)
{
	struct json_object *v;
	const char *s;
	gsize n;

	if (!json_object_object_get_ex(root, "command", &v))
		return invalid(error, "command",
			       "missing (one of status, set, pause, resume, "
			       "metrics)");
	if (!get_string(v, "command", &s, &n, VR_CONTROL_ERROR_INVALID_ARGUMENT, error))
		return FALSE;
	if (!vr_control_command_from_name(s, &req->command)) {
		g_autofree char *shown = g_utf8_make_valid(s, (gssize)MIN(n, 64));

		return invalid(error, "command",
			       "unknown command '%s' (known: status, set, pause, resume, metrics)",
			       shown);
	}
	const char *const *allowed = command_members(req->command);
	json_object_object_foreach(root, key, value)
	{
		(void)value;
		if (!strcmp(key, "command") || g_strv_contains(allowed, key))
			continue;
		g_autofree char *shown = g_utf8_make_valid(key, (gssize)MIN(strlen(key), 64));
		g_autofree char *takes = names_text(allowed);
		return invalid(error, shown, "unknown member: %s takes %s",
			       vr_control_command_name(req->command), takes);
	}
	if (json_object_object_get_ex(root, "domain", &v)) {
		if (!copy_string(v, "domain", req->domain, sizeof(req->domain),
				 VR_CONTROL_ERROR_INVALID_ARGUMENT, error))
			return FALSE;
		req->has_domain = TRUE;
	}
	if (req->command != VR_CONTROL_SET)
		return TRUE;
	if (!json_object_object_get_ex(root, "settings", &v))
		return invalid(error, "settings", "missing (a list of KEY=VALUE strings)");
	if (!json_object_is_type(v, json_type_array))
		return invalid(error, "settings", "expected an array of KEY=VALUE strings (got %s)",
			       vr_json_describe(v));
	gsize nr = json_object_array_length(v);
	if (nr == 0 || nr > VR_CONTROL_MAX_SETTINGS)
		return invalid(error, "settings", "expected 1..%d settings (got %zu)",
			       VR_CONTROL_MAX_SETTINGS, nr);
	req->settings = g_new0(char *, nr + 1);
	for (gsize i = 0; i < nr; i++) {
		g_autofree char *path = vr_json_path_index("settings", (guint)i);
		char buf[VR_CONTROL_MAX_SETTING_LEN + 1];

		if (!copy_string(json_object_array_get_idx(v, i), path, buf, sizeof(buf),
				 VR_CONTROL_ERROR_INVALID_ARGUMENT, error))
			return FALSE;
		req->settings[i] = g_strdup(buf);
	}
	return TRUE;
}

gboolean vr_control_decode_request(const char *line, gsize len, struct vr_control_request *out,
				   GError **error)
{
	g_autoptr(json_object) root = NULL;
	g_auto(vr_control_request) req = { 0 };

	vr_control_request_clear(out);
	if (!parse_line(line, len, VR_CONTROL_MAX_REQUEST_BYTES, VR_CONTROL_ERROR_INVALID_ARGUMENT,
			NULL, &root, error))
		return FALSE;
	if (!read_request(root, &req, error) || !request_validate(&req, error))
		return FALSE;
	*out = req;
	memset(&req, 0, sizeof(req));
	return TRUE;
}

char *vr_control_encode_request(const struct vr_control_request *req, GError **error)
{
	g_autoptr(json_object) root = NULL;
	g_autofree char *line = NULL;

	g_return_val_if_fail(req != NULL, NULL);
	if (!request_validate(req, error))
		return NULL;
	root = json_object_new_object();
	json_object_object_add(root, "command",
			       json_object_new_string(vr_control_command_name(req->command)));
	if (req->has_domain)
		json_object_object_add(root, "domain", json_object_new_string(req->domain));
	if (req->settings) {
		struct json_object *a = json_object_new_array();

		for (char **s = req->settings; *s; s++)
			json_object_array_add(a, json_object_new_string(*s));
		json_object_object_add(root, "settings", a);
	}
	line = to_line(root);
	/* Unreachable with the bounds above (32 settings of 255 bytes, a
	 * 255-byte name, each escaped at most 6 times); kept as the rule. */
	if (strlen(line) > VR_CONTROL_MAX_REQUEST_BYTES) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
			    "the request has %zu bytes, above the limit of %d", strlen(line),
			    VR_CONTROL_MAX_REQUEST_BYTES);
		return NULL;
	}
	return g_steal_pointer(&line);
}

/* ---- the status as JSON: one table of members for both directions ---- */

enum field_kind {
	FIELD_STRING,	   /* char[size] */
	FIELD_NAME,	   /* char[size], not empty */
	FIELD_U64,	   /* uint64_t */
	FIELD_UINT,	   /* guint in 0..max */
	FIELD_BOOL,	   /* gboolean */
	FIELD_AGENT_STATE, /* enum vr_agent_state, by name */
	FIELD_ACTION,	   /* enum vr_domain_action, by name */
};

/**
 * struct field - one member of a status object.
 * @name:	its JSON name.
 * @kind:	its type.
 * @offset:	where it is in the struct.
 * @size:	the char array's size (strings).
 * @max:	the largest value (FIELD_UINT).
 */
struct field {
	const char *name;
	enum field_kind kind;
	size_t offset;
	size_t size;
	guint max;
};

#define FIELD(type, member, k, m)                                                                  \
	{                                                                                          \
#member, k, offsetof(struct type, member), sizeof(((struct type *)0)->member), m   \
	}

static const struct field domain_fields[] = {
	FIELD(vr_domain_status, name, FIELD_NAME, 0),
	FIELD(vr_domain_status, uuid, FIELD_STRING, 0),
	FIELD(vr_domain_status, managed, FIELD_BOOL, 0),
	FIELD(vr_domain_status, reason, FIELD_STRING, 0),
	FIELD(vr_domain_status, policy, FIELD_STRING, 0),
	FIELD(vr_domain_status, priority, FIELD_UINT, VR_STATUS_PRIORITY_MAX),
	FIELD(vr_domain_status, guaranteed_bytes, FIELD_U64, 0),
	FIELD(vr_domain_status, agent_state, FIELD_AGENT_STATE, 0),
	FIELD(vr_domain_status, agent_version, FIELD_STRING, 0),
	FIELD(vr_domain_status, agent_backend, FIELD_STRING, 0),
	FIELD(vr_domain_status, action, FIELD_ACTION, 0),
	FIELD(vr_domain_status, paused, FIELD_BOOL, 0),
	FIELD(vr_domain_status, share_bytes, FIELD_U64, 0),
	FIELD(vr_domain_status, reclaimed_bytes, FIELD_U64, 0),
	FIELD(vr_domain_status, rss_start_bytes, FIELD_U64, 0),
	FIELD(vr_domain_status, rss_bytes, FIELD_U64, 0),
	FIELD(vr_domain_status, swap_bytes, FIELD_U64, 0),
	FIELD(vr_domain_status, reportable_free_bytes, FIELD_U64, 0),
	FIELD(vr_domain_status, qt_exceeds, FIELD_U64, 0),
	FIELD(vr_domain_status, cold_bytes, FIELD_U64, 0),
	FIELD(vr_domain_status, daemon_cpu_us, FIELD_U64, 0),
	FIELD(vr_domain_status, last_error, FIELD_STRING, 0),
	FIELD(vr_domain_status, degraded, FIELD_BOOL, 0),
	FIELD(vr_domain_status, degraded_reason, FIELD_STRING, 0),
	FIELD(vr_domain_status, credit_permille, FIELD_UINT, VR_PERMILLE_MAX),
	FIELD(vr_domain_status, agent_rejected_reports, FIELD_U64, 0),
	FIELD(vr_domain_status, agent_log_suppressed, FIELD_U64, 0),
};

static const struct field daemon_fields[] = {
	FIELD(vr_daemon_status, version, FIELD_STRING, 0),
	FIELD(vr_daemon_status, uptime_ms, FIELD_U64, 0),
	FIELD(vr_daemon_status, libvirt_uri, FIELD_STRING, 0),
	FIELD(vr_daemon_status, libvirt_connected, FIELD_BOOL, 0),
	FIELD(vr_daemon_status, libvirt_degraded, FIELD_BOOL, 0),
	FIELD(vr_daemon_status, libvirt_degraded_reason, FIELD_STRING, 0),
	FIELD(vr_daemon_status, libvirt_stalls, FIELD_U64, 0),
	FIELD(vr_daemon_status, host_needs_memory, FIELD_BOOL, 0),
	FIELD(vr_daemon_status, free_mem_rate_permille, FIELD_UINT, VR_PERMILLE_MAX),
	FIELD(vr_daemon_status, host_memory_state, FIELD_STRING, 0),
	FIELD(vr_daemon_status, fleet_quota_bytes, FIELD_U64, 0),
	FIELD(vr_daemon_status, reloads, FIELD_U64, 0),
	FIELD(vr_daemon_status, ticks, FIELD_U64, 0),
};

/* A string member as the daemon sends it: NUL-bounded in its array, valid UTF-8. */
static struct json_object *string_to_json(const char *buf, gsize size)
{
	gsize n = strnlen(buf, size);
	g_autofree char *valid = g_utf8_make_valid(buf, (gssize)n);

	return json_object_new_string(valid);
}

static struct json_object *fields_to_json(const struct field *fields, guint nr, const void *base)
{
	struct json_object *obj = json_object_new_object();

	for (guint i = 0; i < nr; i++) {
		const struct field *f = &fields[i];
		const char *p = (const char *)base + f->offset;
		struct json_object *v = NULL;

		switch (f->kind) {
		case FIELD_STRING:
		case FIELD_NAME:
			v = string_to_json(p, f->size);
			break;
		case FIELD_U64:
			v = json_object_new_uint64(*(const uint64_t *)(const void *)p);
			break;
		case FIELD_UINT:
			v = json_object_new_uint64(MIN(*(const guint *)(const void *)p, f->max));
			break;
		case FIELD_BOOL:
			v = json_object_new_boolean(*(const gboolean *)(const void *)p ? 1 : 0);
			break;
		case FIELD_AGENT_STATE:
			v = json_object_new_string(
				vr_agent_state_name(*(const enum vr_agent_state *)(const void *)p));
			break;
		case FIELD_ACTION:
			v = json_object_new_string(vr_domain_action_name(
				*(const enum vr_domain_action *)(const void *)p));
			break;
		}
		json_object_object_add(obj, f->name, v);
	}
	return obj;
}

/* Sets @error to "vreclaimd's reply is invalid: <path>: <message>". Return: FALSE. */
#define bad_reply(error, path, ...)                                                                \
	vr_json_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED, path, __VA_ARGS__)

static gboolean read_field(struct json_object *obj, const char *path, const struct field *f,
			   void *base, GHashTable *big, GError **error)
{
	g_autofree char *mpath = vr_json_path_member(path, f->name);
	char *p = (char *)base + f->offset;
	struct json_object *v;
	const char *s;
	gsize n;

	if (!json_object_object_get_ex(obj, f->name, &v))
		return bad_reply(error, mpath, "missing");
	switch (f->kind) {
	case FIELD_STRING:
	case FIELD_NAME:
		if (!copy_string(v, mpath, p, f->size, VR_CONTROL_ERROR_FAILED, error))
			return FALSE;
		if (!g_utf8_validate(p, -1, NULL))
			return bad_reply(error, mpath, "the string is not valid UTF-8");
		if (f->kind == FIELD_NAME && !*p)
			return bad_reply(error, mpath, "expected a non-empty string");
		return TRUE;
	case FIELD_U64:
	case FIELD_UINT: {
		uint64_t max = f->kind == FIELD_U64 ? G_MAXUINT64 : f->max;

		if (!json_object_is_type(v, json_type_int) || g_hash_table_contains(big, mpath) ||
		    json_object_get_int64(v) < 0 || json_object_get_uint64(v) > max)
			return bad_reply(error, mpath,
					 "expected an integer in 0..%" G_GUINT64_FORMAT " (got %s)",
					 max, vr_json_describe(v));
		if (f->kind == FIELD_U64)
			*(uint64_t *)(void *)p = json_object_get_uint64(v);
		else
			*(guint *)(void *)p = (guint)json_object_get_uint64(v);
		return TRUE;
	}
	case FIELD_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return bad_reply(error, mpath, "expected a boolean (got %s)",
					 vr_json_describe(v));
		*(gboolean *)(void *)p = json_object_get_boolean(v) ? TRUE : FALSE;
		return TRUE;
	case FIELD_AGENT_STATE:
		if (!get_string(v, mpath, &s, &n, VR_CONTROL_ERROR_FAILED, error))
			return FALSE;
		if (!vr_agent_state_from_name(s, (enum vr_agent_state *)(void *)p))
			return bad_reply(error, mpath,
					 "expected none, connecting, connected or failed");
		return TRUE;
	case FIELD_ACTION:
		if (!get_string(v, mpath, &s, &n, VR_CONTROL_ERROR_FAILED, error))
			return FALSE;
		if (!vr_domain_action_from_name(s, (enum vr_domain_action *)(void *)p))
			return bad_reply(error, mpath,
					 "expected none, agent-reclaim, host-pageout or balloon");
		return TRUE;
	}
	return FALSE;
}

static gboolean read_fields(struct json_object *obj, const char *path, const struct field *fields,
			    guint nr, void *base, GHashTable *big, GError **error)
{
	if (!json_object_is_type(obj, json_type_object))
		return bad_reply(error, path, "expected an object (got %s)", vr_json_describe(obj));
	for (guint i = 0; i < nr; i++)
		if (!read_field(obj, path, &fields[i], base, big, error))
			return FALSE;
	return TRUE;
}

/* ---- replies ---- */

/* {"return":@ret} as a line; @ret is taken. */
static char *return_line(struct json_object *ret)
{
	g_autoptr(json_object) root = json_object_new_object();

	json_object_object_add(root, "return", ret);
	return to_line(root);
}

char *vr_control_encode_empty(void)
{
	return return_line(json_object_new_object());
}

/* @desc cut to VR_CONTROL_MAX_DESC_LEN bytes at a character boundary, valid UTF-8. */
static char *clean_desc(const char *desc)
{
	g_autofree char *valid = g_utf8_make_valid(desc && *desc ? desc : "failed", -1);
	const char *p = valid;

	if (strlen(valid) <= VR_CONTROL_MAX_DESC_LEN)
		return g_steal_pointer(&valid);
	while (*p && (gsize)(g_utf8_next_char(p) - valid) <= VR_CONTROL_MAX_DESC_LEN - 3)
		p = g_utf8_next_char(p);
	return g_strdup_printf("%.*s...", (int)(p - valid), valid);
}

char *vr_control_encode_error(const GError *error)
{
	enum vr_control_error cls = VR_CONTROL_ERROR_FAILED;
	g_autoptr(json_object) root = json_object_new_object();
	struct json_object *err = json_object_new_object();
	g_autofree char *desc = clean_desc(error ? error->message : NULL);

	if (error && error->domain == VR_CONTROL_ERROR &&
	    (guint)error->code < G_N_ELEMENTS(class_names))
		cls = (enum vr_control_error)error->code;
	json_object_object_add(err, "class", json_object_new_string(class_names[cls]));
	json_object_object_add(err, "desc", json_object_new_string(desc));
	json_object_object_add(root, "error", err);
	return to_line(root);
}

char *vr_control_encode_status(const GPtrArray *domains, const struct vr_daemon_status *daemon)
{
	struct json_object *ret = json_object_new_object();
	struct json_object *list = json_object_new_array();
	g_autofree char *line = NULL;

	json_object_object_add(ret, "daemon",
			       fields_to_json(daemon_fields, G_N_ELEMENTS(daemon_fields), daemon));
	for (guint i = 0; domains && i < domains->len; i++)
		json_object_array_add(list,
				      fields_to_json(domain_fields, G_N_ELEMENTS(domain_fields),
						     g_ptr_array_index(domains, i)));
	json_object_object_add(ret, "domains", list);
	line = return_line(ret);
	if (strlen(line) > VR_CONTROL_MAX_REPLY_BYTES) {
		g_autoptr(GError) error =
			g_error_new(VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
				    "the status of %u domains has %zu bytes, above the reply "
				    "limit of %d bytes",
				    domains->len, strlen(line), VR_CONTROL_MAX_REPLY_BYTES);
		return vr_control_encode_error(error);
	}
	return g_steal_pointer(&line);
}

char *vr_control_encode_metrics(const char *text)
{
	struct json_object *ret = json_object_new_object();
	g_autofree char *valid = g_utf8_make_valid(text, -1);

	json_object_object_add(ret, "text", json_object_new_string(valid));
	return return_line(ret);
}

/**
 * read_reply() - the "return" value of the reply @line into @ret (borrowed
 * from @root, which the caller owns), or the error reply as @error.
 */
static gboolean read_reply(const char *line, gsize len, struct json_object **root,
			   struct json_object **ret, GHashTable *big, GError **error)
{
	struct json_object *v;

	if (!parse_line(line, len, VR_CONTROL_MAX_REPLY_BYTES, VR_CONTROL_ERROR_FAILED, big, root,
			error)) {
		g_prefix_error(error, "vreclaimd's reply is invalid: ");
		return FALSE;
	}
	if (json_object_object_get_ex(*root, "error", &v)) {
		struct json_object *c, *d;
		enum vr_control_error cls = VR_CONTROL_ERROR_FAILED;

		if (!json_object_is_type(v, json_type_object) ||
		    !json_object_object_get_ex(v, "class", &c) ||
		    !json_object_is_type(c, json_type_string) ||
		    !json_object_object_get_ex(v, "desc", &d) ||
		    !json_object_is_type(d, json_type_string)) {
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
				    "vreclaimd's reply is invalid: error: expected an object with "
				    "a class and a desc string");
			return FALSE;
		}
		/* A class this client does not know is a failure. */
		vr_control_error_class_from_name(json_object_get_string(c), &cls);
		g_autofree char *desc = clean_desc(json_object_get_string(d));
		g_set_error(error, VR_CONTROL_ERROR, cls, "%s", desc);
		return FALSE;
	}
	if (!json_object_object_get_ex(*root, "return", ret)) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
			    "vreclaimd's reply is invalid: neither return nor error");
		return FALSE;
	}
	if (!json_object_is_type(*ret, json_type_object)) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
			    "vreclaimd's reply is invalid: return: expected an object (got %s)",
			    vr_json_describe(*ret));
		return FALSE;
	}
	return TRUE;
}

gboolean vr_control_decode_empty_reply(const char *line, gsize len, GError **error)
{
	g_autoptr(json_object) root = NULL;
	struct json_object *ret;

	return read_reply(line, len, &root, &ret, NULL, error);
}

gboolean vr_control_decode_status_reply(const char *line, gsize len, GPtrArray **domains,
					struct vr_daemon_status *daemon, GError **error)
{
	g_autoptr(GHashTable) big = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autoptr(json_object) root = NULL;
	g_autoptr(GPtrArray) list = vr_domain_status_array_new();
	g_autoptr(GError) local = NULL;
	struct vr_daemon_status d;
	struct json_object *ret, *v = NULL;

	memset(&d, 0, sizeof(d));

	if (!read_reply(line, len, &root, &ret, big, error))
		return FALSE;
	/* Paths as json-doc names big integers: from the document's root. */
	if (!json_object_object_get_ex(ret, "daemon", &v)) {
		bad_reply(&local, "return.daemon", "missing");
	} else if (read_fields(v, "return.daemon", daemon_fields, G_N_ELEMENTS(daemon_fields), &d,
			       big, &local)) {
		if (!json_object_object_get_ex(ret, "domains", &v))
			bad_reply(&local, "return.domains", "missing");
		else if (!json_object_is_type(v, json_type_array))
			bad_reply(&local, "return.domains", "expected an array (got %s)",
				  vr_json_describe(v));
	}
	for (gsize i = 0; !local && i < json_object_array_length(v); i++) {
		g_autofree char *path = g_strdup_printf("return.domains[%zu]", i);
		g_autoptr(vr_domain_status) s = vr_domain_status_new();

		if (read_fields(json_object_array_get_idx(v, i), path, domain_fields,
				G_N_ELEMENTS(domain_fields), s, big, &local))
			g_ptr_array_add(list, g_steal_pointer(&s));
	}
	if (local) {
		g_propagate_prefixed_error(error, g_steal_pointer(&local),
					   "vreclaimd's reply is invalid: ");
		return FALSE;
	}
	memcpy(daemon, &d, sizeof(d)); /* padding too: callers may compare bytes */
	*domains = g_steal_pointer(&list);
	return TRUE;
}

gboolean vr_control_decode_metrics_reply(const char *line, gsize len, char **text, GError **error)
{
	g_autoptr(json_object) root = NULL;
	g_autoptr(GError) local = NULL;
	struct json_object *ret, *v;
	const char *s;
	gsize n;

	if (!read_reply(line, len, &root, &ret, NULL, error))
		return FALSE;
	if (!json_object_object_get_ex(ret, "text", &v)) {
		bad_reply(&local, "return.text", "missing");
	} else if (get_string(v, "return.text", &s, &n, VR_CONTROL_ERROR_FAILED, &local)) {
		if (!g_utf8_validate(s, (gssize)n, NULL) || memchr(s, '\0', n)) {
			bad_reply(&local, "return.text", "not UTF-8 text");
		} else {
			*text = g_strndup(s, n);
			return TRUE;
		}
	}
	g_propagate_prefixed_error(error, g_steal_pointer(&local),
				   "vreclaimd's reply is invalid: ");
	return FALSE;
}
