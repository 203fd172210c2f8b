/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Discovery of a QEMU through its QMP socket: the parsers of query-name,
 * query-uuid, query-memory-size-summary, qom-list, qom-get and
 * query-chardev, and the probe that runs them. See qmp-domain.h.
 */
#include "qmp/qmp-domain.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/un.h>

#include "libvirt/domain-xml.h"
#include "qmp/qemu-commands.h"

/* clang-format off */
G_DEFINE_QUARK(vr-qmp-domain-error-quark, vr_qmp_domain_error)
/* clang-format on */

/* The longest socket path a sockaddr_un holds (without its NUL), bytes. */
#define SOCKET_PATH_MAX (sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1)

/* How QEMU 7.2 describes a unix socket chardev in query-chardev. */
#define CHARDEV_DISCONNECTED "disconnected:"
#define CHARDEV_UNIX	     "unix:"
#define CHARDEV_SERVER	     ",server=on"

/* What the derived UUIDs of vr_qmp_domain_uuid_from_path() hash first. */
#define UUID_FROM_PATH_PREFIX "vreclaim-qmp:"

static gboolean fail(GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean fail(GError **error, int code, const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, VR_QMP_DOMAIN_ERROR, code, msg);
	return FALSE;
}

#define invalid(error, ...) fail(error, VR_QMP_DOMAIN_ERROR_INVALID, __VA_ARGS__)

/**
 * enum text_rule - what check_string() asks of a string beyond its type and
 * length (bits).
 * @TEXT_NONEMPTY:  not "".
 * @TEXT_PRINTABLE: valid UTF-8 without NUL or control characters.
 */
enum text_rule {
	TEXT_NONEMPTY = 1 << 0,
	TEXT_PRINTABLE = 1 << 1,
};

/* Whether @s (@len bytes) is UTF-8 without NUL or control characters. */
static gboolean is_printable(const char *s, gsize len)
{
	const char *end = s + len;

	if (memchr(s, '\0', len) || !g_utf8_validate_len(s, len, NULL))
		return FALSE;
	for (const char *p = s; p < end; p = g_utf8_next_char(p))
		if (g_unichar_iscntrl(g_utf8_get_char(p)))
			return FALSE;
	return TRUE;
}

/**
 * check_string() - @v must be a string of at most @max_bytes bytes that
 * follows @rules (enum text_rule); @what names it in messages ("QEMU's
 * answer to query-name: \"name\"").
 * Return: its text (borrowed from @v), or NULL with @error.
 */
static const char *check_string(json_object *v, const char *what, gsize max_bytes,
				unsigned int rules, GError **error)
{
	const char *s;
	gsize len;

	if (!json_object_is_type(v, json_type_string)) {
		invalid(error, "%s must be a string (got %s)", what, vr_json_describe(v));
		return NULL;
	}
	s = json_object_get_string(v);
	len = (gsize)json_object_get_string_len(v);
	if (len > max_bytes) {
		invalid(error, "%s is longer than %zu bytes (%zu bytes)", what, max_bytes, len);
		return NULL;
	}
	if ((rules & TEXT_NONEMPTY) && !len) {
		invalid(error, "%s is empty", what);
		return NULL;
	}
	if ((rules & TEXT_PRINTABLE) && !is_printable(s, len)) {
		g_autofree char *quote = vr_qmp_printable(s, VR_QMP_MAX_QUOTE_BYTES);

		invalid(error,
			"%s holds a NUL, a control character or bytes that are not UTF-8 (%s)",
			what, quote);
		return NULL;
	}
	return s;
}

static gboolean check_object(json_object *ret, const char *command, GError **error)
{
	if (json_object_is_type(ret, json_type_object))
		return TRUE;
	return invalid(error, "QEMU's answer to %s is not an object (got %s)", command,
		       vr_json_describe(ret));
}

static gboolean check_array(json_object *ret, const char *command, size_t max, GError **error)
{
	size_t n;

	if (!json_object_is_type(ret, json_type_array))
		return invalid(error, "QEMU's answer to %s is not an array (got %s)", command,
			       vr_json_describe(ret));
	n = json_object_array_length(ret);
	if (n > max)
		return invalid(error, "QEMU's answer to %s has %zu entries, more than %zu", command,
			       n, max);
	return TRUE;
}

/* The member @name of the object @obj; NULL when absent or JSON null. */
static json_object *member(json_object *obj, const char *name)
{
	json_object *v = NULL;

	return json_object_object_get_ex(obj, name, &v) ? v : NULL;
}

/* Whether @obj has the member @name (json-c holds a JSON null as NULL:
 * member() cannot tell it from an absent one). */
static gboolean has(json_object *obj, const char *name)
{
	return json_object_object_get_ex(obj, name, NULL);
}

gboolean vr_qmp_parse_name(json_object *ret, char **name, GError **error)
{
	json_object *v;
	const char *s;

	if (!check_object(ret, "query-name", error))
		return FALSE;
	if (!has(ret, "name")) {
		*name = NULL;
		return TRUE;
	}
	v = member(ret, "name");
	s = check_string(v, "QEMU's answer to query-name: \"name\"", VR_QMP_DOMAIN_MAX_NAME_BYTES,
			 TEXT_PRINTABLE, error);
	if (!s)
		return FALSE;
	*name = *s ? g_strdup(s) : NULL;
	return TRUE;
}

gboolean vr_qmp_parse_uuid(json_object *ret, char **uuid, GError **error)
{
	json_object *v;
	const char *s;

	if (!check_object(ret, "query-uuid", error))
		return FALSE;
	if (!has(ret, "UUID"))
		return invalid(error, "QEMU's answer to query-uuid has no \"UUID\"");
	v = member(ret, "UUID");
	s = check_string(v, "QEMU's answer to query-uuid: \"UUID\"", VR_QMP_MAX_QUOTE_BYTES,
			 TEXT_PRINTABLE, error);
	if (!s)
		return FALSE;
	/* g_uuid_string_is_valid(): 36 characters, 8-4-4-4-12 hex digits. */
	if (!g_uuid_string_is_valid(s))
		return invalid(error,
			       "QEMU's answer to query-uuid: \"UUID\" is not a UUID of 8-4-4-4-12 "
			       "hexadecimal digits (got \"%s\")",
			       s);
	*uuid = strcmp(s, VR_QMP_DOMAIN_DEFAULT_UUID) ? g_ascii_strdown(s, -1) : NULL;
	return TRUE;
}

/* A size member of @ret (bytes): a non-negative integer, positive if @positive. */
static gboolean get_size(json_object *ret, const char *name, gboolean positive, uint64_t *bytes,
			 GError **error)
{
	const char *command = "query-memory-size-summary";
	json_object *v = member(ret, name);

	if (!has(ret, name))
		return invalid(error, "QEMU's answer to %s has no \"%s\"", command, name);
	if (!json_object_is_type(v, json_type_int))
		return invalid(error, "QEMU's answer to %s: \"%s\" must be an integer (got %s)",
			       command, name, vr_json_describe(v));
	/* json-c keeps integers beyond INT64_MAX unsigned; get_int64 saturates. */
	if (json_object_get_int64(v) < 0 || (positive && json_object_get_uint64(v) == 0))
		return invalid(error, "QEMU's answer to %s: \"%s\" must be %s (got %s)", command,
			       name, positive ? "positive" : "non-negative", vr_json_describe(v));
	*bytes = json_object_get_uint64(v);
	return TRUE;
}

gboolean vr_qmp_parse_base_memory(json_object *ret, uint64_t *bytes, GError **error)
{
	uint64_t base = 0, plugged = 0;

	if (!check_object(ret, "query-memory-size-summary", error) ||
	    !get_size(ret, "base-memory", TRUE, &base, error))
		return FALSE;
	if (has(ret, "plugged-memory") && !get_size(ret, "plugged-memory", FALSE, &plugged, error))
		return FALSE;
	*bytes = base;
	return TRUE;
}

gboolean vr_qmp_parse_serial_ports(json_object *ret, const char *container, GPtrArray **ports,
				   GError **error)
{
	g_autofree char *command = g_strdup_printf("qom-list of %s", container);
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);

	if (!check_array(ret, command, VR_QMP_DOMAIN_MAX_QOM_CHILDREN, error))
		return FALSE;
	for (size_t i = 0; i < json_object_array_length(ret); i++) {
		json_object *child = json_object_array_get_idx(ret, i);
		g_autofree char *what_name = NULL;
		g_autofree char *what_type = NULL;
		const char *name, *type;

		if (!json_object_is_type(child, json_type_object))
			return invalid(error,
				       "QEMU's answer to %s: [%zu] must be an object (got %s)",
				       command, i, vr_json_describe(child));
		what_name = g_strdup_printf("QEMU's answer to %s: [%zu].name", command, i);
		what_type = g_strdup_printf("QEMU's answer to %s: [%zu].type", command, i);
		if (!has(child, "name"))
			return invalid(error, "%s is missing", what_name);
		if (!has(child, "type"))
			return invalid(error, "%s is missing", what_type);
		name = check_string(member(child, "name"), what_name, VR_QMP_DOMAIN_MAX_ID_BYTES, 0,
				    error);
		type = name ? check_string(member(child, "type"), what_type,
					   VR_QMP_DOMAIN_MAX_ID_BYTES, 0, error) :
			      NULL;
		if (!type)
			return FALSE;
		if (strcmp(type, VR_QMP_DOMAIN_SERIAL_PORT_TYPE))
			continue;
		if (!check_string(member(child, "name"), what_name, VR_QMP_DOMAIN_MAX_ID_BYTES,
				  TEXT_NONEMPTY | TEXT_PRINTABLE, error))
			return FALSE;
		if (strchr(name, '/'))
			return invalid(error, "%s holds '/' (got \"%s\"): not one child's name",
				       what_name, name);
		g_ptr_array_add(out, g_strconcat(container, "/", name, NULL));
	}
	*ports = g_steal_pointer(&out);
	return TRUE;
}

gboolean vr_qmp_parse_qom_string(json_object *ret, const char *path, const char *property,
				 char **value, GError **error)
{
	g_autofree char *what =
		g_strdup_printf("QEMU's answer to qom-get of %s property %s", path, property);
	const char *s = check_string(ret, what, VR_QMP_DOMAIN_MAX_ID_BYTES, TEXT_PRINTABLE, error);

	if (!s)
		return FALSE;
	*value = g_strdup(s);
	return TRUE;
}

gboolean vr_qmp_parse_chardev_filename(const char *label, const char *filename, char **path,
				       GError **error)
{
	g_autofree char *quote = vr_qmp_printable(filename, VR_QMP_MAX_QUOTE_BYTES);
	const char *p = filename;
	gsize len;

	if (g_str_has_prefix(p, CHARDEV_DISCONNECTED))
		p += strlen(CHARDEV_DISCONNECTED);
	if (!g_str_has_prefix(p, CHARDEV_UNIX))
		return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			    "chardev %s is not a unix socket (query-chardev says \"%s\")", label,
			    quote);
	p += strlen(CHARDEV_UNIX);
	/* The path itself may hold commas: only the last option is QEMU's. */
	if (!g_str_has_suffix(p, CHARDEV_SERVER))
		return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			    "chardev %s is a unix socket QEMU connects to (query-chardev says "
			    "\"%s\"): the agent's must be one QEMU listens on (server=on)",
			    label, quote);
	len = strlen(p) - strlen(CHARDEV_SERVER);
	if (!len || *p != '/')
		return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			    "chardev %s has a relative socket path (query-chardev says \"%s\"): "
			    "expected an absolute path",
			    label, quote);
	if (len > SOCKET_PATH_MAX)
		return invalid(error,
			       "query-chardev: the filename of chardev %s holds a socket path of "
			       "%zu bytes, longer than %zu",
			       label, len, SOCKET_PATH_MAX);
	if (!is_printable(p, len))
		return invalid(error,
			       "query-chardev: the socket path of chardev %s holds a control "
			       "character or bytes that are not UTF-8 (%s)",
			       label, quote);
	*path = g_strndup(p, len);
	return TRUE;
}

gboolean vr_qmp_parse_chardev_socket(json_object *ret, const char *label, char **path,
				     GError **error)
{
	const char *command = "query-chardev";
	const char *filename = NULL;

	if (!check_array(ret, command, VR_QMP_DOMAIN_MAX_CHARDEVS, error))
		return FALSE;
	for (size_t i = 0; i < json_object_array_length(ret); i++) {
		json_object *c = json_object_array_get_idx(ret, i);
		g_autofree char *what_label = NULL;
		g_autofree char *what_file = NULL;
		json_object *open;
		const char *l, *f;

		if (!json_object_is_type(c, json_type_object))
			return invalid(error,
				       "QEMU's answer to %s: [%zu] must be an object (got %s)",
				       command, i, vr_json_describe(c));
		what_label = g_strdup_printf("QEMU's answer to %s: [%zu].label", command, i);
		what_file = g_strdup_printf("QEMU's answer to %s: [%zu].filename", command, i);
		if (!has(c, "label"))
			return invalid(error, "%s is missing", what_label);
		if (!has(c, "filename"))
			return invalid(error, "%s is missing", what_file);
		l = check_string(member(c, "label"), what_label, VR_QMP_DOMAIN_MAX_ID_BYTES,
				 TEXT_NONEMPTY | TEXT_PRINTABLE, error);
		f = l ? check_string(member(c, "filename"), what_file,
				     VR_QMP_DOMAIN_MAX_FILENAME_BYTES, 0, error) :
			NULL;
		if (!f)
			return FALSE;
		open = member(c, "frontend-open");
		if (has(c, "frontend-open") && !json_object_is_type(open, json_type_boolean))
			return invalid(error,
				       "QEMU's answer to %s: [%zu].frontend-open must be a boolean "
				       "(got %s)",
				       command, i, vr_json_describe(open));
		if (strcmp(l, label))
			continue;
		if (filename)
			return invalid(error, "QEMU's answer to %s lists chardev %s twice", command,
				       label);
		filename = f;
	}
	if (!filename)
		return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			    "chardev %s is not in QEMU's answer to %s", label, command);
	return vr_qmp_parse_chardev_filename(label, filename, path, error);
}

gboolean vr_qmp_domain_check_memory(uint64_t memory_bytes, uint64_t vm_size_bytes, GError **error)
{
	if (memory_bytes <= vm_size_bytes)
		return TRUE;
	return invalid(error,
		       "QEMU claims %" PRIu64 " bytes of guest memory (query-memory-size-summary) "
		       "but its process maps only %" PRIu64 " bytes (VmSize): refused",
		       memory_bytes, vm_size_bytes);
}

gboolean vr_qmp_domain_check_agent_socket(const char *agent_real, const char *qmp_dir_real,
					  gboolean is_socket, uid_t owner_uid, uid_t qemu_uid,
					  GError **error)
{
	g_autofree char *quote = vr_qmp_printable(agent_real, VR_QMP_MAX_QUOTE_BYTES);
	gsize dir_len = strlen(qmp_dir_real);
	gboolean under = strcmp(qmp_dir_real, "/") == 0 ?
				 agent_real[0] == '/' :
				 strncmp(agent_real, qmp_dir_real, dir_len) == 0 &&
					 agent_real[dir_len] == '/';

	if (!under)
		return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			    "the agent socket %s is not in the QMP socket's folder %s", quote,
			    qmp_dir_real);
	if (!is_socket)
		return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			    "the agent socket %s is not a socket", quote);
	if (owner_uid != qemu_uid)
		return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			    "the agent socket %s belongs to uid %u, not to QEMU's user (uid %u)",
			    quote, (unsigned)owner_uid, (unsigned)qemu_uid);
	return TRUE;
}

char *vr_qmp_domain_uuid_from_path(const char *socket_path)
{
	g_autofree char *canonical = g_canonicalize_filename(socket_path, NULL);
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	guint8 d[32];
	gsize len = sizeof(d);

	g_checksum_update(sum, (const guchar *)UUID_FROM_PATH_PREFIX, -1);
	g_checksum_update(sum, (const guchar *)canonical, -1);
	g_checksum_get_digest(sum, d, &len);
	d[6] = (guint8)((d[6] & 0x0f) | 0x50); /* version 5 (name-based) */
	d[8] = (guint8)((d[8] & 0x3f) | 0x80); /* variant RFC 4122 */
	return g_strdup_printf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			       "%02x%02x%02x%02x%02x%02x",
			       d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10],
			       d[11], d[12], d[13], d[14], d[15]);
}

void vr_qmp_domain_info_clear(struct vr_qmp_domain_info *info)
{
	g_free(info->name);
	g_free(info->uuid);
	g_free(info->agent_socket_path);
	memset(info, 0, sizeof(*info));
}

/* --- the probe ------------------------------------------------------------ */

static gboolean run(struct vr_qemu_monitor *mon, const char *command, json_object *args,
		    json_object **ret, GError **error)
{
	return vr_qemu_monitor_execute(mon, command, args, mon->timeout_ms, ret, error);
}

/* Whether QEMU refused @command with the error class @cls (the message of
 * vr_qmp_reply_result(): "QEMU refused <command>: <class>: <desc>"). */
static gboolean refused_with(const GError *err, const char *command, const char *cls)
{
	g_autofree char *prefix = g_strdup_printf("QEMU refused %s: %s: ", command, cls);

	return g_error_matches(err, VR_QMP_ERROR, VR_QMP_ERROR_COMMAND) &&
	       g_str_has_prefix(err->message, prefix);
}

/* The name: QEMU's, else the socket's basename. */
static gboolean probe_name(struct vr_qemu_monitor *mon, const char *socket_path, char **name,
			   GError **error)
{
	g_autoptr(json_object) ret = NULL;
	g_autofree char *base = NULL;

	if (!run(mon, "query-name", NULL, &ret, error) || !vr_qmp_parse_name(ret, name, error))
		return FALSE;
	if (*name)
		return TRUE;
	base = g_path_get_basename(socket_path);
	if (!*base || !strcmp(base, ".") || strchr(base, '/') ||
	    strlen(base) > VR_QMP_DOMAIN_MAX_NAME_BYTES || !is_printable(base, strlen(base))) {
		g_autofree char *quote = vr_qmp_printable(base, VR_QMP_MAX_QUOTE_BYTES);

		return fail(error, VR_QMP_DOMAIN_ERROR_ARGUMENT,
			    "QEMU has no name and the socket's basename \"%s\" cannot be one "
			    "(at most %u bytes of UTF-8 without control characters)",
			    quote, VR_QMP_DOMAIN_MAX_NAME_BYTES);
	}
	*name = g_steal_pointer(&base);
	return TRUE;
}

static gboolean probe_uuid(struct vr_qemu_monitor *mon, const char *socket_path, char **uuid,
			   GError **error)
{
	g_autoptr(json_object) ret = NULL;

	if (!run(mon, "query-uuid", NULL, &ret, error) || !vr_qmp_parse_uuid(ret, uuid, error))
		return FALSE;
	if (!*uuid)
		*uuid = vr_qmp_domain_uuid_from_path(socket_path);
	return TRUE;
}

static gboolean probe_balloon(struct vr_qemu_monitor *mon, gboolean *has_balloon, GError **error)
{
	g_autoptr(json_object) ret = NULL;
	g_autoptr(GError) err = NULL;
	uint64_t actual = 0;

	if (!run(mon, "query-balloon", NULL, &ret, &err)) {
		if (!refused_with(err, "query-balloon", "DeviceNotActive")) {
			g_propagate_error(error, g_steal_pointer(&err));
			return FALSE;
		}
		*has_balloon = FALSE;
		return TRUE;
	}
	if (!vr_qemu_parse_balloon(ret, &actual, error))
		return FALSE;
	*has_balloon = TRUE;
	return TRUE;
}

/* qom-get of @path's string @property. */
static gboolean qom_get_string(struct vr_qemu_monitor *mon, const char *path, const char *property,
			       char **value, GError **error)
{
	g_autoptr(json_object) args = json_object_new_object();
	g_autoptr(json_object) ret = NULL;

	json_object_object_add(args, "path", json_object_new_string(path));
	json_object_object_add(args, "property", json_object_new_string(property));
	return run(mon, "qom-get", args, &ret, error) &&
	       vr_qmp_parse_qom_string(ret, path, property, value, error);
}

/* The QOM paths of every virtio-serial port of the two device containers. */
static gboolean list_serial_ports(struct vr_qemu_monitor *mon, GPtrArray **ports, GError **error)
{
	static const char *const containers[] = { VR_QMP_DOMAIN_PERIPHERAL,
						  VR_QMP_DOMAIN_PERIPHERAL_ANON };
	g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < G_N_ELEMENTS(containers); i++) {
		g_autoptr(json_object) args = json_object_new_object();
		g_autoptr(json_object) ret = NULL;
		g_autoptr(GPtrArray) found = NULL;

		json_object_object_add(args, "path", json_object_new_string(containers[i]));
		if (!run(mon, "qom-list", args, &ret, error) ||
		    !vr_qmp_parse_serial_ports(ret, containers[i], &found, error))
			return FALSE;
		for (guint j = 0; j < found->len; j++)
			g_ptr_array_add(all, g_strdup(g_ptr_array_index(found, j)));
	}
	*ports = g_steal_pointer(&all);
	return TRUE;
}

/* The agent's socket: NULL without an agent port. */
static gboolean probe_agent(struct vr_qemu_monitor *mon, char **socket_path, GError **error)
{
	g_autoptr(GPtrArray) ports = NULL;
	g_autoptr(json_object) chardevs = NULL;
	g_autofree char *chardev = NULL;
	const char *agent = NULL;

	*socket_path = NULL;
	if (!list_serial_ports(mon, &ports, error))
		return FALSE;
	for (guint i = 0; i < ports->len; i++) {
		const char *port = g_ptr_array_index(ports, i);
		g_autofree char *name = NULL;

		if (!qom_get_string(mon, port, "name", &name, error))
			return FALSE;
		if (strcmp(name, VR_DOMAIN_AGENT_CHANNEL))
			continue;
		if (agent)
			return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
				    "two virtio-serial ports are named %s, %s and %s (expected "
				    "one)",
				    VR_DOMAIN_AGENT_CHANNEL, agent, port);
		agent = port;
	}
	if (!agent)
		return TRUE;
	if (!qom_get_string(mon, agent, "chardev", &chardev, error))
		return FALSE;
	if (!*chardev)
		return fail(error, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			    "the agent's port %s (%s) has no chardev", agent,
			    VR_DOMAIN_AGENT_CHANNEL);
	if (!run(mon, "query-chardev", NULL, &chardevs, error) ||
	    !vr_qmp_parse_chardev_socket(chardevs, chardev, socket_path, error)) {
		g_prefix_error(error, "the agent's port %s: ", agent);
		return FALSE;
	}
	return TRUE;
}

static gboolean probe(struct vr_qemu_monitor *mon, const char *socket_path, pid_t peer_pid,
		      struct vr_qmp_domain_info *info, GError **error)
{
	g_autoptr(json_object) sizes = NULL;

	if (peer_pid <= 0)
		return fail(error, VR_QMP_DOMAIN_ERROR_ARGUMENT,
			    "the QEMU process is unknown (no peer credentials on the socket, pid "
			    "%d)",
			    (int)peer_pid);
	info->pid = peer_pid;
	return probe_name(mon, socket_path, &info->name, error) &&
	       probe_uuid(mon, socket_path, &info->uuid, error) &&
	       run(mon, "query-memory-size-summary", NULL, &sizes, error) &&
	       vr_qmp_parse_base_memory(sizes, &info->memory_bytes, error) &&
	       probe_balloon(mon, &info->has_balloon, error) &&
	       probe_agent(mon, &info->agent_socket_path, error);
}

gboolean vr_qmp_domain_probe(struct vr_qemu_monitor *mon, const char *socket_path, pid_t peer_pid,
			     struct vr_qmp_domain_info *out, GError **error)
{
	g_auto(vr_qmp_domain_info) info = { 0 };

	g_return_val_if_fail(mon && socket_path && out, FALSE);

	if (!probe(mon, socket_path, peer_pid, &info, error)) {
		g_autofree char *quote =
			vr_qmp_printable(socket_path, VR_QMP_DOMAIN_MAX_FILENAME_BYTES);

		g_prefix_error(error, "probing the QEMU at %s: ", quote);
		return FALSE;
	}
	g_debug("QEMU at %s: name %s, uuid %s, pid %d, %" PRIu64 " bytes, agent %s, %s",
		socket_path, info.name, info.uuid, (int)info.pid, info.memory_bytes,
		info.agent_socket_path ? info.agent_socket_path : "(none)",
		info.has_balloon ? "a balloon" : "no balloon");
	*out = info;
	memset(&info, 0, sizeof(info));
	return TRUE;
}
