/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire protocol's decoder (docs/protocol.md): a line in, a struct out,
 * for the requests the agent reads and the messages the host reads.
 *
 * Decoding a line is three steps: the line itself (length, one line, no NUL,
 * nesting depth), the JSON (json-doc.c: json-c's strict mode, and members
 * given twice and integers beyond 64 bits, which json-c lets through), then
 * the message, member by member, into a struct that the struct's validator
 * (protocol.c) checks as a whole.
 */
#include "protocol.h"

#include <string.h>

#include "json-doc.h"
#include "protocol-private.h"

/* ---- reading a line ---- */

/**
 * struct decoder - what reading a message's tree needs besides the tree.
 * @big_integers: JSON path -> literal of each integer beyond 64 bits (json-c
 *		saturates them), from json-doc's scanner.
 */
struct decoder {
	GHashTable *big_integers;
};

/* Are objects and arrays in the @n bytes of @s nested deeper than allowed? */
static gboolean check_depth(const char *s, gsize n, GError **error)
{
	gboolean in_string = FALSE;
	guint depth = 0;

	for (gsize i = 0; i < n; i++) {
		if (in_string) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_string = FALSE;
		} else if (s[i] == '"') {
			in_string = TRUE;
		} else if (s[i] == '{' || s[i] == '[') {
			if (++depth > VR_PROTO_MAX_DEPTH) {
				g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_SYNTAX,
					    "objects and arrays are nested deeper than %d levels "
					    "(offset %zu)",
					    VR_PROTO_MAX_DEPTH, i);
				return FALSE;
			}
		} else if ((s[i] == '}' || s[i] == ']') && depth > 0) {
			depth--;
		}
	}
	return TRUE;
}

/**
 * parse_line() - the JSON object in the @len bytes of @line (a final '\n'
 * allowed), into @root (owned); integers beyond 64 bits into @dec.
 */
static gboolean parse_line(const char *line, gsize len, struct decoder *dec,
			   struct json_object **root, GError **error)
{
	const struct vr_json_errors errs = { VR_PROTO_ERROR, VR_PROTO_ERROR_SYNTAX,
					     VR_PROTO_ERROR_INVALID_ARGUMENT };
	g_autoptr(json_object) doc = NULL;
	const char *p;
	gsize n = len;

	if (n > 0 && line[n - 1] == '\n')
		n--;
	if (n >= VR_PROTO_MAX_LINE) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_TOO_LONG,
			    "the line has %zu bytes with its newline, above the limit of %d bytes",
			    n + 1, VR_PROTO_MAX_LINE);
		return FALSE;
	}
	if ((p = memchr(line, '\n', n))) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_SYNTAX,
			    "a newline at offset %td: a message is one line", p - line);
		return FALSE;
	}
	if ((p = memchr(line, '\0', n))) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_SYNTAX,
			    "a NUL byte at offset %td", p - line);
		return FALSE;
	}
	if (!check_depth(line, n, error) ||
	    !vr_json_doc_parse(line, (gssize)n, &errs, &doc, dec->big_integers, error))
		return FALSE;
	if (!json_object_is_type(doc, json_type_object)) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_SYNTAX,
			    "expected a JSON object (got %s)", vr_json_describe(doc));
		return FALSE;
	}
	*root = g_steal_pointer(&doc);
	return TRUE;
}

static GHashTable *big_integers_new(void)
{
	return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

/**
 * read_uint() - @v as an integer in [@min, @max] (or 0 with @zero_ok) into
 * @out. Refuses other types, fractions, negatives and integers beyond 64
 * bits, with "<path>: expected <range> (got <what>)".
 */
static gboolean read_uint(const struct decoder *dec, struct json_object *v, const char *path,
			  uint64_t min, uint64_t max, gboolean zero_ok, uint64_t *out,
			  GError **error)
{
	const char *big = g_hash_table_lookup(dec->big_integers, path);
	uint64_t u;

	if (!json_object_is_type(v, json_type_int) || big || json_object_get_int64(v) < 0)
		return vr_proto_range_error(error, path, min, max, zero_ok,
					    big ? big : vr_json_describe(v));
	u = json_object_get_uint64(v);
	if (!vr_proto_in_range(u, min, max, zero_ok))
		return vr_proto_range_error(error, path, min, max, zero_ok, vr_json_describe(v));
	*out = u;
	return TRUE;
}

/* Member @name of @obj: TRUE with *@v when present (NULL for a JSON null). */
static gboolean has_member(struct json_object *obj, const char *name, struct json_object **v)
{
	return json_object_object_get_ex(obj, name, v);
}

/* Member @name of @obj, which must be there; an error at its path if not. */
static gboolean need_member(struct json_object *obj, const char *path, const char *name,
			    struct json_object **v, GError **error)
{
	g_autofree char *mpath = NULL;

	if (has_member(obj, name, v))
		return TRUE;
	mpath = vr_json_path_member(path, name);
	return vr_proto_invalid(error, mpath, "missing");
}

/*
 * The integer member @name of @obj into @out when all is well: present, an
 * integer in [@min, @max], and no integer of the document beyond 64 bits
 * (whose path would have to be compared). FALSE otherwise, without a
 * message: the caller reads it again the slow way, which says what is wrong.
 * A picture has four integers a region: building each one's path for
 * messages that are almost never written cost more than the parse.
 */
static gboolean read_uint_fast(const struct decoder *dec, struct json_object *obj, const char *name,
			       uint64_t min, uint64_t max, uint64_t *out)
{
	struct json_object *v;
	uint64_t u;

	if (g_hash_table_size(dec->big_integers) || !has_member(obj, name, &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return FALSE;
	u = json_object_get_uint64(v);
	if (!vr_proto_in_range(u, min, max, FALSE))
		return FALSE;
	*out = u;
	return TRUE;
}

/* The required integer member @name of @obj (see read_uint()). */
static gboolean read_uint_member(const struct decoder *dec, struct json_object *obj,
				 const char *path, const char *name, uint64_t min, uint64_t max,
				 uint64_t *out, GError **error)
{
	g_autofree char *mpath = NULL;
	struct json_object *v;

	if (read_uint_fast(dec, obj, name, min, max, out))
		return TRUE;
	mpath = vr_json_path_member(path, name);
	return need_member(obj, path, name, &v, error) &&
	       read_uint(dec, v, mpath, min, max, FALSE, out, error);
}

static gboolean read_bool_member(struct json_object *obj, const char *path, const char *name,
				 gboolean *out, GError **error)
{
	struct json_object *v;

	if (!need_member(obj, path, name, &v, error))
		return FALSE;
	if (!json_object_is_type(v, json_type_boolean)) {
		g_autofree char *mpath = vr_json_path_member(path, name);

		return vr_proto_invalid(error, mpath, "expected a boolean (got %s)",
					vr_json_describe(v));
	}
	*out = json_object_get_boolean(v) ? TRUE : FALSE;
	return TRUE;
}

/* @v as a string without NUL characters; borrowed from @v. */
static gboolean read_string(struct json_object *v, const char *path, const char **out, gsize *len,
			    GError **error)
{
	const char *s;
	gsize n;

	if (!json_object_is_type(v, json_type_string))
		return vr_proto_invalid(error, path, "expected a string (got %s)",
					vr_json_describe(v));
	s = json_object_get_string(v);
	n = (gsize)json_object_get_string_len(v);
	if (memchr(s, '\0', n))
		return vr_proto_invalid(error, path, "the string contains a NUL character");
	*out = s;
	*len = n;
	return TRUE;
}

/* @v as a string of at most @size - 1 bytes, copied into @buf. */
static gboolean read_string_into(struct json_object *v, const char *path, char *buf, gsize size,
				 GError **error)
{
	const char *s;
	gsize n;

	if (!read_string(v, path, &s, &n, error))
		return FALSE;
	if (n >= size)
		return vr_proto_invalid(error, path,
					"expected a string of at most %zu bytes (got %zu)",
					size - 1, n);
	memcpy(buf, s, n);
	buf[n] = '\0';
	return TRUE;
}

#define READ_STRING_MEMBER(obj, path, name, field, error)                                          \
	read_string_member(obj, path, name, (field), sizeof(field), error)

static gboolean read_string_member(struct json_object *obj, const char *path, const char *name,
				   char *buf, gsize size, GError **error)
{
	g_autofree char *mpath = vr_json_path_member(path, name);
	struct json_object *v;

	return need_member(obj, path, name, &v, error) &&
	       read_string_into(v, mpath, buf, size, error);
}

static gboolean check_object(struct json_object *v, const char *path, GError **error)
{
	if (json_object_is_type(v, json_type_object))
		return TRUE;
	return vr_proto_invalid(error, path, "expected an object (got %s)", vr_json_describe(v));
}

/**
 * check_version() - the "vreclaim" member of @root is 1. BAD_VERSION if not:
 * a peer of another version may mean other things by the other members.
 */
static gboolean check_version(const struct decoder *dec, struct json_object *root, GError **error)
{
	const char *big = g_hash_table_lookup(dec->big_integers, "vreclaim");
	struct json_object *v;

	if (!has_member(root, "vreclaim", &v)) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_BAD_VERSION,
			    "vreclaim: missing (every message carries the protocol version, %d)",
			    VR_PROTO_VERSION);
		return FALSE;
	}
	if (!json_object_is_type(v, json_type_int) || big ||
	    json_object_get_int64(v) != VR_PROTO_VERSION) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_BAD_VERSION,
			    "vreclaim: expected the protocol version %d (got %s)", VR_PROTO_VERSION,
			    big ? big : vr_json_describe(v));
		return FALSE;
	}
	return TRUE;
}

/* The message's id when it is a valid one, else 0: where to send an error. */
static uint32_t peek_id(const struct decoder *dec, struct json_object *root)
{
	struct json_object *v;
	int64_t id;

	if (!has_member(root, "id", &v) || !json_object_is_type(v, json_type_int) ||
	    g_hash_table_contains(dec->big_integers, "id"))
		return 0;
	id = json_object_get_int64(v);
	return id >= 1 && id <= G_MAXUINT32 ? (uint32_t)id : 0;
}

static gboolean read_id(const struct decoder *dec, struct json_object *root, uint32_t *id,
			GError **error)
{
	uint64_t v;

	if (!read_uint_member(dec, root, "", "id", 1, G_MAXUINT32, &v, error))
		return FALSE;
	*id = (uint32_t)v;
	return TRUE;
}

/* ---- requests ---- */

/* "a, b, c" from the NULL-terminated @names. */
static char *names_text(const char *const *names, guint nr)
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < nr && names[i]; i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "", names[i]);
	return g_string_free(s, FALSE);
}

/* Refuses the members of @args that @command does not take. */
static gboolean check_arg_names(enum vr_proto_command command, struct json_object *args,
				GError **error)
{
	const char *const *allowed = vr_proto_command_args(command);

	json_object_object_foreach(args, key, value)
	{
		g_autofree char *mpath = NULL;
		g_autofree char *names = NULL;

		(void)value;
		if (g_strv_contains(allowed, key))
			continue;
		mpath = vr_json_path_member("arguments", key);
		if (!allowed[0])
			return vr_proto_invalid(error, mpath,
						"unknown argument (%s takes no arguments)",
						vr_proto_command_name(command));
		names = names_text(allowed, G_MAXUINT);
		return vr_proto_invalid(error, mpath, "unknown argument (%s takes %s)",
					vr_proto_command_name(command), names);
	}
	return TRUE;
}

/* An integer beyond 64 bits inside the policy: the policy reader would see
 * json-c's saturated value instead, so it is refused here. */
static gboolean check_policy_integers(const struct decoder *dec, GError **error)
{
	GHashTableIter it;
	gpointer key, value;

	g_hash_table_iter_init(&it, dec->big_integers);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		const char *path = key;

		if (g_str_has_prefix(path, "arguments.policy.") ||
		    g_str_has_prefix(path, "arguments.policy["))
			return vr_proto_invalid(error, "arguments.policy",
						"%s: %s is beyond the 64-bit range",
						path + strlen("arguments.policy."),
						(const char *)value);
	}
	return TRUE;
}

static gboolean read_set_policy(const struct decoder *dec, struct json_object *args,
				struct vr_proto_set_policy_args *out, GError **error)
{
	const char *ipath = "arguments.report_interval_ms";
	g_autoptr(GError) local = NULL;
	g_autoptr(vr_policy) policy = NULL;
	struct json_object *v;
	const char *text;

	if (!has_member(args, "policy", &v))
		return vr_proto_invalid(
			error, "arguments.policy",
			"missing (set-policy needs a policy document, docs/policy.md)");
	if (!check_object(v, "arguments.policy", error) || !check_policy_integers(dec, error))
		return FALSE;
	text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
	policy = vr_policy_parse(text, -1, &local);
	if (!policy) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_INVALID_ARGUMENT,
			    "arguments.policy: %s", local->message);
		return FALSE;
	}
	if (has_member(args, "report_interval_ms", &v)) {
		if (!read_uint(dec, v, ipath, VR_PROTO_REPORT_INTERVAL_MIN_MS,
			       VR_PROTO_REPORT_INTERVAL_MAX_MS, TRUE, &out->report_interval_ms,
			       error))
			return FALSE;
		out->has_report_interval = TRUE;
	}
	if (has_member(args, "generation", &v) != has_member(args, "histogram_policy", NULL))
		return vr_proto_invalid(error, "arguments.generation",
					"generation and histogram_policy go together");
	if (has_member(args, "generation", &v)) {
		if (!read_uint(dec, v, "arguments.generation", 1, VR_PROTO_MAX_INT, FALSE,
			       &out->generation, error))
			return FALSE;
		has_member(args, "histogram_policy", &v);
		if (!check_object(v, "arguments.histogram_policy", error))
			return FALSE;
		text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
								 JSON_C_TO_STRING_NOSLASHESCAPE);
		out->histogram_policy = vr_policy_parse(text, -1, &local);
		if (!out->histogram_policy) {
			g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_INVALID_ARGUMENT,
				    "arguments.histogram_policy: %s", local->message);
			return FALSE;
		}
	}
	out->policy = g_steal_pointer(&policy);
	return TRUE;
}

static gboolean read_arguments(const struct decoder *dec, struct json_object *args,
			       struct vr_proto_request *req, GError **error)
{
	struct json_object *v;
	uint64_t max;

	if (!check_arg_names(req->command, args, error))
		return FALSE;
	switch (req->command) {
	case VR_PROTO_SET_POLICY:
		return read_set_policy(dec, args, &req->set_policy, error);
	case VR_PROTO_RECLAIM:
		return read_uint_member(dec, args, "arguments", "bytes", VR_PROTO_RECLAIM_MIN_BYTES,
					VR_PROTO_RECLAIM_MAX_BYTES, &req->reclaim.bytes, error) &&
		       read_uint_member(dec, args, "arguments", "deadline_ms", 1,
					VR_PROTO_RECLAIM_MAX_DEADLINE_MS, &req->reclaim.deadline_ms,
					error);
	case VR_PROTO_GET_REGIONS:
		max = VR_PROTO_MAX_REGIONS;
		if (has_member(args, "max", &v) &&
		    !read_uint(dec, v, "arguments.max", 1, VR_PROTO_MAX_REGIONS, FALSE, &max,
			       error))
			return FALSE;
		req->get_regions.max = (guint)max;
		return TRUE;
	default:
		return TRUE;
	}
}

static gboolean read_command(struct json_object *root, enum vr_proto_command *command,
			     GError **error)
{
	g_autofree char *names = NULL;
	struct json_object *v;
	const char *name;
	gsize n;

	if (!need_member(root, "", "command", &v, error) ||
	    !read_string(v, "command", &name, &n, error))
		return FALSE;
	if (vr_proto_command_from_name(name, command))
		return TRUE;
	names = names_text(vr_proto_command_names, vr_proto_nr_commands);
	if (n > 64)
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_UNKNOWN_COMMAND,
			    "command: unknown command (a name of %zu bytes; expected one of %s)", n,
			    names);
	else
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_UNKNOWN_COMMAND,
			    "command: unknown command '%s' (expected one of %s)", name, names);
	return FALSE;
}

gboolean vr_proto_decode_request(const char *line, gsize len, struct vr_proto_request *out,
				 GError **error)
{
	g_autoptr(GHashTable) big = big_integers_new();
	g_autoptr(json_object) root = NULL;
	g_autoptr(json_object) empty = json_object_new_object();
	struct decoder dec = { .big_integers = big };
	struct vr_proto_request req = { 0 };
	struct json_object *args = NULL;

	g_return_val_if_fail(line != NULL || len == 0, FALSE);
	memset(out, 0, sizeof(*out));
	if (!parse_line(line ? line : "", len, &dec, &root, error))
		return FALSE;
	out->id = peek_id(&dec, root);
	if (!check_version(&dec, root, error) || !read_id(&dec, root, &req.id, error) ||
	    !read_command(root, &req.command, error))
		return FALSE;
	if (has_member(root, "arguments", &args) && !check_object(args, "arguments", error))
		return FALSE;
	if (!read_arguments(&dec, args ? args : empty, &req, error))
		return FALSE;
	*out = req;
	return TRUE;
}

/* ---- reading the agent's messages (host side) ---- */

/* hello's "capabilities": at most VR_PROTO_MAX_CAPABILITIES distinct names;
 * the ones this code knows set their flag in @h, the others are ignored (a
 * newer agent's). */
static gboolean read_capabilities(struct json_object *caps, const char *path,
				  struct vr_proto_hello *h, GError **error)
{
	g_autofree char *cpath = vr_json_path_member(path, "capabilities");
	char names[VR_PROTO_MAX_CAPABILITIES][VR_PROTO_MAX_BACKEND_LEN + 1];
	size_t nr;

	if (!json_object_is_type(caps, json_type_array))
		return vr_proto_invalid(error, cpath, "expected an array (got %s)",
					vr_json_describe(caps));
	nr = json_object_array_length(caps);
	if (nr > VR_PROTO_MAX_CAPABILITIES)
		return vr_proto_invalid(error, cpath, "expected at most %d capabilities (got %zu)",
					VR_PROTO_MAX_CAPABILITIES, nr);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(cpath, i);

		if (!read_string_into(json_object_array_get_idx(caps, i), ipath, names[i],
				      sizeof(names[i]), error) ||
		    !vr_proto_check_text(names[i], sizeof(names[i]), VR_PROTO_TEXT_NAME, ipath,
					 error))
			return FALSE;
		for (guint j = 0; j < i; j++)
			if (strcmp(names[j], names[i]) == 0)
				return vr_proto_invalid(error, ipath, "'%s' is listed twice",
							names[i]);
		if (strcmp(names[i], VR_PROTO_CAP_COLD_HISTOGRAM) == 0)
			h->cold_histogram = TRUE;
	}
	return TRUE;
}

static gboolean read_hello(const struct decoder *dec, struct json_object *v, const char *path,
			   struct vr_proto_hello *h, GError **error)
{
	g_autofree char *bpath = vr_json_path_member(path, "backends");
	struct json_object *backends, *m;
	uint64_t version, order;
	size_t nr;

	if (!check_object(v, path, error) ||
	    !read_uint_member(dec, v, path, "version", 1, G_MAXUINT32, &version, error) ||
	    !READ_STRING_MEMBER(v, path, "agent", h->agent, error) ||
	    !READ_STRING_MEMBER(v, path, "kernel", h->kernel, error) ||
	    !need_member(v, path, "backends", &backends, error))
		return FALSE;
	h->version = (uint32_t)version;
	if (!json_object_is_type(backends, json_type_array))
		return vr_proto_invalid(error, bpath, "expected an array (got %s)",
					vr_json_describe(backends));
	nr = json_object_array_length(backends);
	if (nr < 1 || nr > VR_PROTO_MAX_BACKENDS)
		return vr_proto_invalid(error, bpath, "expected 1..%d backends (got %zu)",
					VR_PROTO_MAX_BACKENDS, nr);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(bpath, i);

		if (!read_string_into(json_object_array_get_idx(backends, i), ipath, h->backends[i],
				      sizeof(h->backends[i]), error))
			return FALSE;
	}
	h->nr_backends = (guint)nr;
	if (!READ_STRING_MEMBER(v, path, "backend", h->backend, error) ||
	    !read_bool_member(v, path, "free_page_reporting", &h->free_page_reporting, error))
		return FALSE;
	if (has_member(v, "reporting_order", &m)) {
		g_autofree char *opath = vr_json_path_member(path, "reporting_order");

		if (!read_uint(dec, m, opath, 0, VR_PROTO_MAX_REPORTING_ORDER, FALSE, &order,
			       error))
			return FALSE;
		h->has_reporting_order = TRUE;
		h->reporting_order = (guint)order;
	}
	if (has_member(v, "capabilities", &m) && !read_capabilities(m, path, h, error))
		return FALSE;
	return vr_proto_hello_validate(h, path, error);
}

static gboolean read_stats(const struct decoder *dec, struct json_object *v, const char *path,
			   struct vr_agent_stats *s, GError **error)
{
	if (!check_object(v, path, error) ||
	    !READ_STRING_MEMBER(v, path, "backend", s->backend, error) ||
	    !read_bool_member(v, path, "paused", &s->paused, error))
		return FALSE;
	for (guint i = 0; i < vr_proto_nr_stats_fields; i++) {
		const struct vr_proto_stats_field *f = &vr_proto_stats_fields[i];
		gboolean *has = vr_proto_stats_field_has(s, f);
		gboolean present = json_object_object_get_ex(v, f->name, NULL);

		*vr_proto_stats_field_ptr(s, f) = 0;
		if (has)
			*has = present;
		if (f->optional && !present)
			continue;
		if (!read_uint_member(dec, v, path, f->name, 0, VR_PROTO_MAX_INT,
				      vr_proto_stats_field_ptr(s, f), error))
			return FALSE;
	}
	return read_bool_member(v, path, "free_page_reporting", &s->free_page_reporting, error) &&
	       vr_proto_stats_validate(s, path, error);
}

static gboolean read_region(const struct decoder *dec, struct json_object *v, const char *path,
			    struct vr_picture_region *r, GError **error)
{
	uint64_t nr_accesses, age;

	if (!check_object(v, path, error) ||
	    !read_uint_member(dec, v, path, "start", 0, VR_PROTO_MAX_INT, &r->start, error) ||
	    !read_uint_member(dec, v, path, "end", 0, VR_PROTO_MAX_INT, &r->end, error) ||
	    !read_uint_member(dec, v, path, "nr_accesses", 0, G_MAXUINT32, &nr_accesses, error) ||
	    !read_uint_member(dec, v, path, "age", 0, G_MAXUINT32, &age, error))
		return FALSE;
	r->nr_accesses = (uint32_t)nr_accesses;
	r->age = (uint32_t)age;
	return TRUE;
}

/* read_region() when all is well (read_uint_fast()); FALSE otherwise, for
 * read_region() to say what is wrong. */
static gboolean read_region_fast(const struct decoder *dec, struct json_object *v,
				 struct vr_picture_region *r)
{
	uint64_t nr_accesses, age;

	if (!json_object_is_type(v, json_type_object) ||
	    !read_uint_fast(dec, v, "start", 0, VR_PROTO_MAX_INT, &r->start) ||
	    !read_uint_fast(dec, v, "end", 0, VR_PROTO_MAX_INT, &r->end) ||
	    !read_uint_fast(dec, v, "nr_accesses", 0, G_MAXUINT32, &nr_accesses) ||
	    !read_uint_fast(dec, v, "age", 0, G_MAXUINT32, &age))
		return FALSE;
	r->nr_accesses = (uint32_t)nr_accesses;
	r->age = (uint32_t)age;
	return TRUE;
}

static gboolean read_regions(const struct decoder *dec, struct json_object *v, const char *path,
			     struct vr_proto_regions *r, GError **error)
{
	g_autofree char *rpath = vr_json_path_member(path, "regions");
	struct json_object *arr;
	size_t nr;

	if (!check_object(v, path, error) ||
	    !read_uint_member(dec, v, path, "sample_interval_us", 0, VR_PROTO_MAX_INT,
			      &r->sample_interval_us, error) ||
	    !read_uint_member(dec, v, path, "aggr_interval_us", 0, VR_PROTO_MAX_INT,
			      &r->aggr_interval_us, error) ||
	    !need_member(v, path, "regions", &arr, error))
		return FALSE;
	if (!json_object_is_type(arr, json_type_array))
		return vr_proto_invalid(error, rpath, "expected an array (got %s)",
					vr_json_describe(arr));
	nr = json_object_array_length(arr);
	if (nr > VR_PROTO_MAX_REGIONS) /* before allocating anything */
		return vr_proto_invalid(error, rpath, "at most %d regions are allowed (got %zu)",
					VR_PROTO_MAX_REGIONS, nr);
	r->regions = g_array_sized_new(FALSE, TRUE, sizeof(struct vr_picture_region), (guint)nr);
	for (guint i = 0; i < nr; i++) {
		struct json_object *elem = json_object_array_get_idx(arr, i);
		struct vr_picture_region reg = { 0 };

		/* The region's path only when something is wrong with it. */
		if (!read_region_fast(dec, elem, &reg)) {
			g_autofree char *ipath = vr_json_path_index(rpath, i);

			if (!read_region(dec, elem, ipath, &reg, error))
				return FALSE;
		}
		g_array_append_val(r->regions, reg);
	}
	/* The picture's rules, the same the agent's encoder ran: the intervals
	 * (at most an hour), order, empty regions, nr_accesses. */
	return vr_proto_regions_validate(r, path, error);
}

static gboolean read_cold_hist(const struct decoder *dec, struct json_object *v, const char *path,
			       struct vr_proto_cold_hist *c, GError **error)
{
	g_autofree char *bpath = vr_json_path_member(path, "bytes");
	struct json_object *arr;
	size_t nr;

	if (!check_object(v, path, error) ||
	    !read_uint_member(dec, v, path, "generation", 1, VR_PROTO_MAX_INT, &c->generation,
			      error) ||
	    !read_uint_member(dec, v, path, "sample_interval_us", 1, VR_PROTO_MAX_INT,
			      &c->sample_interval_us, error) ||
	    !read_uint_member(dec, v, path, "aggr_interval_us", 1, VR_PROTO_MAX_INT,
			      &c->aggr_interval_us, error) ||
	    !read_uint_member(dec, v, path, "nr_regions", 0, VR_PROTO_MAX_REGIONS, &c->nr_regions,
			      error) ||
	    !need_member(v, path, "bytes", &arr, error))
		return FALSE;
	if (!json_object_is_type(arr, json_type_array))
		return vr_proto_invalid(error, bpath, "expected an array (got %s)",
					vr_json_describe(arr));
	nr = json_object_array_length(arr);
	if (nr != VR_PROTO_COLD_HIST_BUCKETS)
		return vr_proto_invalid(error, bpath,
					"expected %d buckets, one per cold score (got %zu)",
					VR_PROTO_COLD_HIST_BUCKETS, nr);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(bpath, i);

		if (!read_uint(dec, json_object_array_get_idx(arr, i), ipath, 0, VR_PROTO_MAX_INT,
			       FALSE, &c->bytes[i], error))
			return FALSE;
	}
	return vr_proto_cold_hist_validate(c, path, error);
}

static gboolean read_reclaim_result(const struct decoder *dec, struct json_object *v,
				    const char *path, struct vr_proto_reclaim_result *r,
				    GError **error)
{
	return check_object(v, path, error) &&
	       read_uint_member(dec, v, path, "reclaimed_bytes", 0, VR_PROTO_MAX_INT,
				&r->reclaimed_bytes, error) &&
	       read_uint_member(dec, v, path, "elapsed_ms", 0, VR_PROTO_MAX_INT, &r->elapsed_ms,
				error);
}

static gboolean read_return(const struct decoder *dec, struct json_object *v,
			    struct vr_proto_message *m, GError **error)
{
	switch (m->command) {
	case VR_PROTO_HELLO:
		return read_hello(dec, v, "return", &m->hello, error);
	case VR_PROTO_GET_STATS:
		return read_stats(dec, v, "return", &m->stats, error);
	case VR_PROTO_GET_REGIONS:
		return read_regions(dec, v, "return", &m->regions, error);
	case VR_PROTO_GET_COLD_HIST:
		return read_cold_hist(dec, v, "return", &m->cold_hist, error);
	case VR_PROTO_RECLAIM:
		return read_reclaim_result(dec, v, "return", &m->reclaim, error);
	default:
		return check_object(v, "return", error); /* {}; members ignored */
	}
}

static gboolean read_error(struct json_object *v, struct vr_proto_error_reply *e, GError **error)
{
	struct json_object *m;
	const char *name;
	gsize n;

	if (!check_object(v, "error", error) || !need_member(v, "error", "class", &m, error) ||
	    !read_string(m, "error.class", &name, &n, error) ||
	    !READ_STRING_MEMBER(v, "error", "desc", e->desc, error) ||
	    !VR_PROTO_CHECK_TEXT(e->desc, VR_PROTO_TEXT_FREE, "error", "desc", error))
		return FALSE;
	/* A class of a later version is still an error. */
	if (!vr_proto_error_class_from_name(name, &e->cls))
		e->cls = VR_PROTO_ERROR_FAILED;
	return TRUE;
}

static gboolean read_message(const struct decoder *dec, struct json_object *root,
			     vr_proto_command_lookup lookup, gpointer user_data,
			     struct vr_proto_message *m, GError **error)
{
	static const char *const kinds[] = { "return", "error", "report" };
	struct json_object *body = NULL, *v;
	const char *present[G_N_ELEMENTS(kinds)];
	guint nr = 0;
	uint64_t id = 0;

	for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
		if (has_member(root, kinds[i], &v)) {
			present[nr++] = kinds[i];
			body = v;
			m->kind = (enum vr_proto_message_kind)i;
		}
	}
	if (nr != 1) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_INVALID_ARGUMENT,
			    "expected exactly one of return, error and report (got %s%s%s%s%s)",
			    nr ? present[0] : "none", nr > 1 ? " and " : "",
			    nr > 1 ? present[1] : "", nr > 2 ? " and " : "",
			    nr > 2 ? present[2] : "");
		return FALSE;
	}
	switch (m->kind) {
	case VR_PROTO_MESSAGE_REPORT:
		return read_stats(dec, body, "report", &m->stats, error) &&
		       read_uint_member(dec, body, "report", "seq", 0, VR_PROTO_MAX_INT, &m->seq,
					error);
	case VR_PROTO_MESSAGE_ERROR:
		if (!need_member(root, "", "id", &v, error) ||
		    (v && !read_uint(dec, v, "id", 1, G_MAXUINT32, FALSE, &id, error)))
			return FALSE;
		m->id = (uint32_t)id;
		return read_error(body, &m->error, error);
	case VR_PROTO_MESSAGE_REPLY:
		if (!read_id(dec, root, &m->id, error))
			return FALSE;
		if (!lookup || !lookup(m->id, &m->command, user_data))
			return vr_proto_invalid(error, "id", "%u answers no request in flight",
						m->id);
		return read_return(dec, body, m, error);
	}
	return FALSE;
}

gboolean vr_proto_decode_message(const char *line, gsize len, vr_proto_command_lookup lookup,
				 gpointer user_data, struct vr_proto_message *out, GError **error)
{
	g_autoptr(GHashTable) big = big_integers_new();
	g_autoptr(json_object) root = NULL;
	struct decoder dec = { .big_integers = big };
	g_auto(vr_proto_message) m = { 0 };

	g_return_val_if_fail(line != NULL || len == 0, FALSE);
	memset(out, 0, sizeof(*out));
	if (!parse_line(line ? line : "", len, &dec, &root, error))
		return FALSE;
	out->id = peek_id(&dec, root);
	if (!check_version(&dec, root, error) ||
	    !read_message(&dec, root, lookup, user_data, &m, error))
		return FALSE;
	*out = m;
	memset(&m, 0, sizeof(m)); /* moved */
	return TRUE;
}
