/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host <-> agent wire protocol (docs/protocol.md): JSON lines.
 *
 * Decoding a line is three steps: the line itself (length, one line, no NUL,
 * nesting depth), the JSON (json-doc.c: json-c's strict mode, and members
 * given twice and integers beyond 64 bits, which json-c lets through), then
 * the message, member by member, into a struct that the struct's validator
 * checks as a whole. Encoders run the same validators on the struct before
 * writing it, so what one side writes the other side reads.
 *
 * Every error message starts with the JSON path of the member at fault
 * ("arguments.bytes: ..."), like the policy's.
 */
#include "protocol.h"

#include <stddef.h>
#include <string.h>

#include "json-doc.h"

/* clang-format off */
G_DEFINE_QUARK(vr-proto-error-quark, vr_proto_error)
/* clang-format on */

/* ---- names ---- */

static const char *const error_class_names[] = {
	[VR_PROTO_ERROR_SYNTAX] = "syntax",
	[VR_PROTO_ERROR_TOO_LONG] = "too-long",
	[VR_PROTO_ERROR_BAD_VERSION] = "bad-version",
	[VR_PROTO_ERROR_UNKNOWN_COMMAND] = "unknown-command",
	[VR_PROTO_ERROR_INVALID_ARGUMENT] = "invalid-argument",
	[VR_PROTO_ERROR_FAILED] = "failed",
	[VR_PROTO_ERROR_BUSY] = "busy",
};

/* What an error reply says when the agent gives no description. */
static const char *const error_class_descs[] = {
	[VR_PROTO_ERROR_SYNTAX] = "The line is not a JSON object.",
	[VR_PROTO_ERROR_TOO_LONG] = "The line is too long.",
	[VR_PROTO_ERROR_BAD_VERSION] = "The protocol version is not supported.",
	[VR_PROTO_ERROR_UNKNOWN_COMMAND] = "The command is unknown.",
	[VR_PROTO_ERROR_INVALID_ARGUMENT] = "An argument is invalid.",
	[VR_PROTO_ERROR_FAILED] = "The request failed.",
	[VR_PROTO_ERROR_BUSY] = "The agent is busy.",
};
G_STATIC_ASSERT(G_N_ELEMENTS(error_class_descs) == G_N_ELEMENTS(error_class_names));

static const char *const command_names[] = {
	[VR_PROTO_HELLO] = "hello",
	[VR_PROTO_SET_POLICY] = "set-policy",
	[VR_PROTO_RECLAIM] = "reclaim",
	[VR_PROTO_GET_STATS] = "get-stats",
	[VR_PROTO_GET_REGIONS] = "get-regions",
	[VR_PROTO_PAUSE] = "pause",
	[VR_PROTO_RESUME] = "resume",
	[VR_PROTO_GET_COLD_HIST] = "get-cold-histogram",
};

static gboolean name_lookup(const char *const *names, guint nr, const char *name, int *value)
{
	for (guint i = 0; i < nr; i++) {
		if (g_strcmp0(names[i], name) == 0) {
			*value = (int)i;
			return TRUE;
		}
	}
	return FALSE;
}

const char *vr_proto_error_class_name(enum vr_proto_error_class cls)
{
	return (guint)cls < G_N_ELEMENTS(error_class_names) ? error_class_names[cls] : "unknown";
}

gboolean vr_proto_error_class_from_name(const char *name, enum vr_proto_error_class *cls)
{
	int v;

	if (!name_lookup(error_class_names, G_N_ELEMENTS(error_class_names), name, &v))
		return FALSE;
	*cls = (enum vr_proto_error_class)v;
	return TRUE;
}

const char *vr_proto_command_name(enum vr_proto_command command)
{
	return (guint)command < G_N_ELEMENTS(command_names) ? command_names[command] : "unknown";
}

gboolean vr_proto_command_from_name(const char *name, enum vr_proto_command *command)
{
	int v;

	if (!name_lookup(command_names, G_N_ELEMENTS(command_names), name, &v))
		return FALSE;
	*command = (enum vr_proto_command)v;
	return TRUE;
}

/* ---- owned structs ---- */

void vr_proto_request_clear(struct vr_proto_request *req)
{
	if (req->command == VR_PROTO_SET_POLICY) {
		vr_policy_free(req->set_policy.policy);
		vr_policy_free(req->set_policy.histogram_policy);
	}
	memset(req, 0, sizeof(*req));
}

void vr_proto_regions_clear(struct vr_proto_regions *r)
{
	if (r->regions)
		g_array_unref(r->regions);
	memset(r, 0, sizeof(*r));
}

void vr_proto_message_clear(struct vr_proto_message *msg)
{
	if (msg->kind == VR_PROTO_MESSAGE_REPLY && msg->command == VR_PROTO_GET_REGIONS)
		vr_proto_regions_clear(&msg->regions);
	memset(msg, 0, sizeof(*msg));
}

/* ---- errors ---- */

/* Sets @error to "<path>: <message>" (INVALID_ARGUMENT). Return: FALSE. */
#define invalid(error, path, ...)                                                                  \
	vr_json_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_INVALID_ARGUMENT, path, __VA_ARGS__)

/* "an integer in MIN..MAX", or "0 or an integer in MIN..MAX" with @zero_ok. */
static char *range_text(uint64_t min, uint64_t max, gboolean zero_ok)
{
	return g_strdup_printf("%san integer in %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT,
			       zero_ok ? "0 or " : "", min, max);
}

static gboolean in_range(uint64_t v, uint64_t min, uint64_t max, gboolean zero_ok)
{
	return (v >= min && v <= max) || (zero_ok && v == 0);
}

/* "<path>: expected <range> (got <got>)". Return: FALSE. */
static gboolean range_error(GError **error, const char *path, uint64_t min, uint64_t max,
			    gboolean zero_ok, const char *got)
{
	g_autofree char *want = range_text(min, max, zero_ok);

	return invalid(error, path, "expected %s (got %s)", want, got);
}

/* @v in [@min, @max] (or 0 with @zero_ok); an error at @path if not. */
static gboolean check_range(uint64_t v, uint64_t min, uint64_t max, gboolean zero_ok,
			    const char *path, GError **error)
{
	char got[24];

	if (in_range(v, min, max, zero_ok))
		return TRUE;
	g_snprintf(got, sizeof(got), "%" G_GUINT64_FORMAT, v);
	return range_error(error, path, min, max, zero_ok, got);
}

/* check_range() of member @name under @path. */
static gboolean check_member_range(uint64_t v, uint64_t min, uint64_t max, gboolean zero_ok,
				   const char *path, const char *name, GError **error)
{
	g_autofree char *mpath = vr_json_path_member(path, name);

	return check_range(v, min, max, zero_ok, mpath, error);
}

/* Member @a_name (@a) of @path must be at most member @b_name (@b). */
static gboolean check_at_most(uint64_t a, uint64_t b, const char *path, const char *a_name,
			      const char *b_name, GError **error)
{
	g_autofree char *mpath = NULL;

	if (a <= b)
		return TRUE;
	mpath = vr_json_path_member(path, a_name);
	return invalid(error, mpath, "%" G_GUINT64_FORMAT " is above %s (%" G_GUINT64_FORMAT ")", a,
		       b_name, b);
}

/* A character that must not reach the host's logs and terminals: control
 * characters (C0, DEL, C1) and format characters (bidi overrides, ...). */
static gboolean is_unsafe_char(gunichar c)
{
	return g_unichar_iscntrl(c) || g_unichar_type(c) == G_UNICODE_FORMAT;
}

enum text_kind {
	TEXT_FREE, /* any UTF-8 without control or format characters */
	TEXT_NAME, /* [a-z0-9_-] */
};

static gboolean is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/**
 * check_text() - the string in the @size bytes of @buf: NUL-terminated
 * there, not empty, UTF-8 without control or format characters, and for TEXT_NAME
 * only [a-z0-9_-]. Errors name @path.
 */
static gboolean check_text(const char *buf, gsize size, enum text_kind kind, const char *path,
			   GError **error)
{
	const char *end = memchr(buf, '\0', size);

	if (!end)
		return invalid(error, path, "longer than %zu bytes", size - 1);
	if (end == buf)
		return invalid(error, path, "expected a non-empty string");
	if (!g_utf8_validate(buf, end - buf, NULL))
		return invalid(error, path, "the string is not valid UTF-8");
	for (const char *p = buf; p < end; p = g_utf8_next_char(p))
		if (is_unsafe_char(g_utf8_get_char(p)))
			return invalid(error, path,
				       "the string contains a control or format character (U+%04X)",
				       g_utf8_get_char(p));
	if (kind == TEXT_NAME)
		for (const char *p = buf; p < end; p++)
			if (!is_name_char(*p))
				return invalid(error, path,
					       "'%s' is not a name (lowercase letters, digits, "
					       "'-' and '_')",
					       buf);
	return TRUE;
}

#define CHECK_TEXT(field, kind, path, name, error)                                                 \
	check_text_member((field), sizeof(field), kind, path, name, error)

static gboolean check_text_member(const char *buf, gsize size, enum text_kind kind,
				  const char *path, const char *name, GError **error)
{
	g_autofree char *mpath = vr_json_path_member(path, name);

	return check_text(buf, size, kind, mpath, error);
}

/* ---- the rules of each struct (both sides) ---- */

static gboolean hello_validate(const struct vr_proto_hello *h, const char *path, GError **error)
{
	g_autofree char *bpath = vr_json_path_member(path, "backends");
	gboolean known = FALSE;

	if (!check_member_range(h->version, 1, G_MAXUINT32, FALSE, path, "version", error) ||
	    !CHECK_TEXT(h->agent, TEXT_FREE, path, "agent", error) ||
	    !CHECK_TEXT(h->kernel, TEXT_FREE, path, "kernel", error))
		return FALSE;
	if (h->nr_backends < 1 || h->nr_backends > VR_PROTO_MAX_BACKENDS)
		return invalid(error, bpath, "expected 1..%d backends (got %u)",
			       VR_PROTO_MAX_BACKENDS, h->nr_backends);
	for (guint i = 0; i < h->nr_backends; i++) {
		g_autofree char *ipath = vr_json_path_index(bpath, i);

		if (!check_text(h->backends[i], sizeof(h->backends[i]), TEXT_NAME, ipath, error))
			return FALSE;
		for (guint j = 0; j < i; j++)
			if (strcmp(h->backends[j], h->backends[i]) == 0)
				return invalid(error, ipath, "'%s' is listed twice",
					       h->backends[i]);
	}
	if (!CHECK_TEXT(h->backend, TEXT_NAME, path, "backend", error))
		return FALSE;
	for (guint i = 0; i < h->nr_backends; i++)
		known = known || strcmp(h->backends[i], h->backend) == 0;
	if (!known && strcmp(h->backend, "none") != 0) {
		g_autofree char *mpath = vr_json_path_member(path, "backend");

		return invalid(error, mpath, "'%s' is neither one of backends nor \"none\"",
			       h->backend);
	}
	if (h->has_reporting_order &&
	    !check_member_range(h->reporting_order, 0, VR_PROTO_MAX_REPORTING_ORDER, FALSE, path,
				"reporting_order", error))
		return FALSE;
	return TRUE;
}

/* The integer members of the STATS object, in wire order after backend and
 * paused. @optional: added after version 1 shipped, so absent reads as 0.
 * @has_offset: for a member sent only when known, the offset of its
 * presence flag (a gboolean has_<member>): absent from the wire when the
 * flag is FALSE, and the decoder sets the flag to whether it was there;
 * 0 for the others (offset 0 is backend, never a flag). */
struct stats_field {
	const char *name;
	size_t offset;
	bool optional;
	size_t has_offset;
};

#define STAT(m)                                                                                    \
	{                                                                                          \
		.name = #m, .offset = offsetof(struct vr_agent_stats, m)                           \
	}

#define STAT_OPTIONAL(m)                                                                           \
	{                                                                                          \
		.name = #m, .offset = offsetof(struct vr_agent_stats, m), .optional = true         \
	}

#define STAT_IF_KNOWN(m)                                                                           \
	{                                                                                          \
		.name = #m, .offset = offsetof(struct vr_agent_stats, m), .optional = true,        \
		.has_offset = offsetof(struct vr_agent_stats, has_##m)                             \
	}

static const struct stats_field stats_fields[] = {
	STAT(uptime_ms),
	STAT(nr_tried),
	STAT(sz_tried),
	STAT(nr_applied),
	STAT(sz_applied),
	STAT(qt_exceeds),
	STAT(reclaimer_cpu_us),
	STAT(agent_cpu_us),
	STAT(compactions),
	STAT(reclaimed_bytes),
	STAT(mem_total_bytes),
	STAT(mem_free_bytes),
	STAT(swap_total_bytes),
	STAT(swap_free_bytes),
	STAT_OPTIONAL(swap_cache_release_bytes),
	STAT_IF_KNOWN(reportable_free_bytes),
};

static uint64_t *stats_field_ptr(struct vr_agent_stats *s, const struct stats_field *f)
{
	return (uint64_t *)((char *)s + f->offset);
}

static uint64_t stats_field_get(const struct vr_agent_stats *s, const struct stats_field *f)
{
	return *(const uint64_t *)((const char *)s + f->offset);
}

/* The presence flag of @f in @s, or NULL for a member always sent. */
static gboolean *stats_field_has(struct vr_agent_stats *s, const struct stats_field *f)
{
	return f->has_offset ? (gboolean *)(void *)((char *)s + f->has_offset) : NULL;
}

/* Is @f on the wire for @s? */
static bool stats_field_sent(const struct vr_agent_stats *s, const struct stats_field *f)
{
	return !f->has_offset || *(const gboolean *)(const void *)((const char *)s + f->has_offset);
}

static gboolean stats_validate(const struct vr_agent_stats *s, const char *path, GError **error)
{
	if (!CHECK_TEXT(s->backend, TEXT_NAME, path, "backend", error))
		return FALSE;
	for (guint i = 0; i < G_N_ELEMENTS(stats_fields); i++)
		if (!check_member_range(stats_field_get(s, &stats_fields[i]), 0, VR_PROTO_MAX_INT,
					FALSE, path, stats_fields[i].name, error))
			return FALSE;
	return check_at_most(s->nr_applied, s->nr_tried, path, "nr_applied", "nr_tried", error) &&
	       check_at_most(s->sz_applied, s->sz_tried, path, "sz_applied", "sz_tried", error) &&
	       check_at_most(s->mem_free_bytes, s->mem_total_bytes, path, "mem_free_bytes",
			     "mem_total_bytes", error) &&
	       check_at_most(s->swap_free_bytes, s->swap_total_bytes, path, "swap_free_bytes",
			     "swap_total_bytes", error);
}

static gboolean region_validate(const struct vr_agent_region *r, const struct vr_agent_region *prev,
				uint64_t max_nr_accesses, const char *path, GError **error)
{
	g_autofree char *spath = vr_json_path_member(path, "start");
	g_autofree char *epath = vr_json_path_member(path, "end");

	if (!check_range(r->start, 0, VR_PROTO_MAX_INT, FALSE, spath, error) ||
	    !check_range(r->end, 0, VR_PROTO_MAX_INT, FALSE, epath, error))
		return FALSE;
	if (r->end <= r->start)
		return invalid(error, epath,
			       "%" G_GUINT64_FORMAT " is not above start (%" G_GUINT64_FORMAT ")",
			       r->end, r->start);
	if (prev && r->start < prev->end)
		return invalid(error, spath,
			       "%" G_GUINT64_FORMAT
			       " is below the end of the previous region (%" G_GUINT64_FORMAT
			       "): regions must be sorted and must not overlap",
			       r->start, prev->end);
	if (r->nr_accesses > max_nr_accesses) {
		g_autofree char *npath = vr_json_path_member(path, "nr_accesses");

		return invalid(
			error, npath,
			"%u is above aggr_interval_us / sample_interval_us (%" G_GUINT64_FORMAT ")",
			r->nr_accesses, max_nr_accesses);
	}
	return TRUE;
}

/* Whether region_validate() would take @r: checked without building the
 * paths its messages need (a picture has up to 512 regions). */
static gboolean region_ok(const struct vr_agent_region *r, const struct vr_agent_region *prev,
			  uint64_t max_nr_accesses)
{
	return r->start <= VR_PROTO_MAX_INT && r->end <= VR_PROTO_MAX_INT && r->end > r->start &&
	       (!prev || r->start >= prev->end) && r->nr_accesses <= max_nr_accesses;
}

static gboolean regions_validate(const struct vr_proto_regions *r, const char *path, GError **error)
{
	g_autofree char *rpath = vr_json_path_member(path, "regions");
	guint n = r->regions ? r->regions->len : 0;
	uint64_t max_nr_accesses;

	if (!check_member_range(r->sample_interval_us, 1, VR_PROTO_MAX_INT, FALSE, path,
				"sample_interval_us", error) ||
	    !check_member_range(r->aggr_interval_us, r->sample_interval_us, VR_PROTO_MAX_INT, FALSE,
				path, "aggr_interval_us", error))
		return FALSE;
	if (n > VR_PROTO_MAX_REGIONS)
		return invalid(error, rpath, "at most %d regions are allowed (got %u)",
			       VR_PROTO_MAX_REGIONS, n);
	max_nr_accesses = r->aggr_interval_us / r->sample_interval_us;
	for (guint i = 0; i < n; i++) {
		const struct vr_agent_region *reg =
			&g_array_index(r->regions, struct vr_agent_region, i);
		g_autofree char *ipath = NULL;

		if (region_ok(reg, i ? reg - 1 : NULL, max_nr_accesses))
			continue;
		ipath = vr_json_path_index(rpath, i);
		if (!region_validate(reg, i ? reg - 1 : NULL, max_nr_accesses, ipath, error))
			return FALSE;
	}
	return TRUE;
}

static gboolean cold_hist_validate(const struct vr_proto_cold_hist *c, const char *path,
				   GError **error)
{
	uint64_t sum = 0;

	if (!check_member_range(c->generation, 1, VR_PROTO_MAX_INT, FALSE, path, "generation",
				error) ||
	    !check_member_range(c->sample_interval_us, 1, VR_PROTO_MAX_INT, FALSE, path,
				"sample_interval_us", error) ||
	    !check_member_range(c->aggr_interval_us, c->sample_interval_us, VR_PROTO_MAX_INT, FALSE,
				path, "aggr_interval_us", error) ||
	    !check_member_range(c->nr_regions, 0, VR_PROTO_MAX_REGIONS, FALSE, path, "nr_regions",
				error))
		return FALSE;
	for (guint i = 0; i < VR_PROTO_COLD_HIST_BUCKETS; i++) {
		if (c->bytes[i] > VR_PROTO_MAX_INT || sum + c->bytes[i] > VR_PROTO_MAX_INT) {
			g_autofree char *bpath = vr_json_path_member(path, "bytes");
			g_autofree char *ipath = vr_json_path_index(bpath, i);

			return invalid(error, ipath,
				       "the buckets add up to more than %" G_GUINT64_FORMAT,
				       VR_PROTO_MAX_INT);
		}
		sum += c->bytes[i];
	}
	return TRUE;
}

static gboolean reclaim_result_validate(const struct vr_proto_reclaim_result *r, const char *path,
					GError **error)
{
	return check_member_range(r->reclaimed_bytes, 0, VR_PROTO_MAX_INT, FALSE, path,
				  "reclaimed_bytes", error) &&
	       check_member_range(r->elapsed_ms, 0, VR_PROTO_MAX_INT, FALSE, path, "elapsed_ms",
				  error);
}

/* The arguments each command takes, NULL-terminated. */
static const char *const no_args[] = { NULL };
static const char *const set_policy_args[] = { "policy", "report_interval_ms", "generation",
					       "histogram_policy", NULL };
static const char *const reclaim_args[] = { "bytes", "deadline_ms", NULL };
static const char *const get_regions_args[] = { "max", NULL };

static const char *const *command_args(enum vr_proto_command command)
{
	switch (command) {
	case VR_PROTO_SET_POLICY:
		return set_policy_args;
	case VR_PROTO_RECLAIM:
		return reclaim_args;
	case VR_PROTO_GET_REGIONS:
		return get_regions_args;
	default:
		return no_args;
	}
}

/* The numbers of a request, as the agent checks them. */
static gboolean request_args_validate(const struct vr_proto_request *req, GError **error)
{
	switch (req->command) {
	case VR_PROTO_SET_POLICY:
		if ((req->set_policy.generation == 0) != (req->set_policy.histogram_policy == NULL))
			return invalid(error, "arguments.generation",
				       "generation and histogram_policy go together");
		return (!req->set_policy.has_report_interval ||
			check_range(req->set_policy.report_interval_ms,
				    VR_PROTO_REPORT_INTERVAL_MIN_MS,
				    VR_PROTO_REPORT_INTERVAL_MAX_MS, TRUE,
				    "arguments.report_interval_ms", error)) &&
		       check_range(req->set_policy.generation, 1, VR_PROTO_MAX_INT, TRUE,
				   "arguments.generation", error);
	case VR_PROTO_RECLAIM:
		return check_range(req->reclaim.bytes, VR_PROTO_RECLAIM_MIN_BYTES,
				   VR_PROTO_RECLAIM_MAX_BYTES, FALSE, "arguments.bytes", error) &&
		       check_range(req->reclaim.deadline_ms, 1, VR_PROTO_RECLAIM_MAX_DEADLINE_MS,
				   FALSE, "arguments.deadline_ms", error);
	case VR_PROTO_GET_REGIONS:
		return check_range(req->get_regions.max, 1, VR_PROTO_MAX_REGIONS, FALSE,
				   "arguments.max", error);
	default:
		return TRUE;
	}
}

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
		return range_error(error, path, min, max, zero_ok, big ? big : vr_json_describe(v));
	u = json_object_get_uint64(v);
	if (!in_range(u, min, max, zero_ok))
		return range_error(error, path, min, max, zero_ok, vr_json_describe(v));
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
	return invalid(error, mpath, "missing");
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
	if (!in_range(u, min, max, FALSE))
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

		return invalid(error, mpath, "expected a boolean (got %s)", vr_json_describe(v));
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
		return invalid(error, path, "expected a string (got %s)", vr_json_describe(v));
	s = json_object_get_string(v);
	n = (gsize)json_object_get_string_len(v);
	if (memchr(s, '\0', n))
		return invalid(error, path, "the string contains a NUL character");
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
		return invalid(error, path, "expected a string of at most %zu bytes (got %zu)",
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
	return invalid(error, path, "expected an object (got %s)", vr_json_describe(v));
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
	const char *const *allowed = command_args(command);

	json_object_object_foreach(args, key, value)
	{
		g_autofree char *mpath = NULL;
		g_autofree char *names = NULL;

		(void)value;
		if (g_strv_contains(allowed, key))
			continue;
		mpath = vr_json_path_member("arguments", key);
		if (!allowed[0])
			return invalid(error, mpath, "unknown argument (%s takes no arguments)",
				       vr_proto_command_name(command));
		names = names_text(allowed, G_MAXUINT);
		return invalid(error, mpath, "unknown argument (%s takes %s)",
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
			return invalid(error, "arguments.policy",
				       "%s: %s is beyond the 64-bit range",
				       path + strlen("arguments.policy."), (const char *)value);
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
		return invalid(error, "arguments.policy",
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
		return invalid(error, "arguments.generation",
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
	names = names_text(command_names, G_N_ELEMENTS(command_names));
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

/* ---- writing ---- */

/* {"vreclaim":1}, the start of every message. */
static struct json_object *envelope_new(void)
{
	struct json_object *root = json_object_new_object();

	json_object_object_add(root, "vreclaim", json_object_new_int(VR_PROTO_VERSION));
	return root;
}

/* {"vreclaim":1,"id":@id} (0: null). */
static struct json_object *envelope_with_id(uint32_t id)
{
	struct json_object *root = envelope_new();

	json_object_object_add(root, "id", id ? json_object_new_int64(id) : NULL);
	return root;
}

static void add_uint(struct json_object *obj, const char *name, uint64_t v)
{
	json_object_object_add(obj, name, json_object_new_uint64(v));
}

static char *to_line(struct json_object *root)
{
	return g_strconcat(json_object_to_json_string_ext(
				   root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			   "\n", NULL);
}

char *vr_proto_encode_request(const struct vr_proto_request *req, GError **error)
{
	g_autoptr(json_object) root = NULL;
	g_autofree char *line = NULL;
	struct json_object *args = NULL;

	g_return_val_if_fail(req != NULL, NULL);
	if (!check_range(req->id, 1, G_MAXUINT32, FALSE, "id", error))
		return NULL;
	if ((guint)req->command >= G_N_ELEMENTS(command_names)) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_UNKNOWN_COMMAND,
			    "command: unknown command (%d)", (int)req->command);
		return NULL;
	}
	if (!request_args_validate(req, error))
		return NULL;
	root = envelope_with_id(req->id);
	json_object_object_add(root, "command",
			       json_object_new_string(vr_proto_command_name(req->command)));
	switch (req->command) {
	case VR_PROTO_SET_POLICY: {
		g_autoptr(GError) local = NULL;
		g_autoptr(vr_policy) check = NULL;
		g_autofree char *text = NULL;

		if (!req->set_policy.policy) {
			invalid(error, "arguments.policy", "missing");
			return NULL;
		}
		/* What the agent will read: the policy must parse back. */
		text = vr_policy_to_json(req->set_policy.policy);
		check = vr_policy_parse(text, -1, &local);
		if (!check) {
			g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_INVALID_ARGUMENT,
				    "arguments.policy: %s", local->message);
			return NULL;
		}
		args = json_object_new_object();
		json_object_object_add(args, "policy", json_tokener_parse(text));
		if (req->set_policy.has_report_interval)
			add_uint(args, "report_interval_ms", req->set_policy.report_interval_ms);
		if (req->set_policy.histogram_policy) {
			g_autofree char *htext =
				vr_policy_to_json(req->set_policy.histogram_policy);
			g_autoptr(vr_policy) hcheck = vr_policy_parse(htext, -1, &local);

			if (!hcheck) {
				g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_INVALID_ARGUMENT,
					    "arguments.histogram_policy: %s", local->message);
				return NULL;
			}
			add_uint(args, "generation", req->set_policy.generation);
			json_object_object_add(args, "histogram_policy", json_tokener_parse(htext));
		}
		break;
	}
	case VR_PROTO_RECLAIM:
		args = json_object_new_object();
		add_uint(args, "bytes", req->reclaim.bytes);
		add_uint(args, "deadline_ms", req->reclaim.deadline_ms);
		break;
	case VR_PROTO_GET_REGIONS:
		args = json_object_new_object();
		add_uint(args, "max", req->get_regions.max);
		break;
	default:
		break;
	}
	if (args)
		json_object_object_add(root, "arguments", args);
	line = to_line(root);
	if (strlen(line) > VR_PROTO_MAX_LINE) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_TOO_LONG,
			    "the %s request has %zu bytes, above the line limit of %d bytes",
			    vr_proto_command_name(req->command), strlen(line), VR_PROTO_MAX_LINE);
		return NULL;
	}
	return g_steal_pointer(&line);
}

/**
 * clean_desc() - @desc as an error reply carries it: valid UTF-8, control
 * and format characters as spaces, at most VR_PROTO_MAX_DESC_LEN bytes ("..." at the
 * end when cut); a generic sentence for @cls when @desc is NULL or empty.
 */
static char *clean_desc(const char *desc, enum vr_proto_error_class cls)
{
	g_autofree char *valid = NULL;
	GString *out;
	const gsize room = VR_PROTO_MAX_DESC_LEN - 3; /* for "..." */
	gsize fits = 0;

	if (!desc || !*desc)
		return g_strdup(error_class_descs[cls]);
	valid = g_utf8_make_valid(desc, -1);
	out = g_string_sized_new(MIN(strlen(valid), (gsize)VR_PROTO_MAX_DESC_LEN) + 1);
	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		gsize n = (gsize)(g_utf8_next_char(p) - p);

		if (out->len + n > VR_PROTO_MAX_DESC_LEN) {
			g_string_truncate(out, fits);
			g_string_append(out, "...");
			break;
		}
		if (is_unsafe_char(c))
			g_string_append_c(out, ' ');
		else
			g_string_append_len(out, p, (gssize)n);
		if (out->len <= room)
			fits = out->len;
	}
	return g_string_free(out, FALSE);
}

char *vr_proto_encode_error(uint32_t id, enum vr_proto_error_class cls, const char *desc)
{
	g_autoptr(json_object) root = envelope_with_id(id);
	struct json_object *err = json_object_new_object();
	g_autofree char *text = NULL;

	if ((guint)cls >= G_N_ELEMENTS(error_class_names))
		cls = VR_PROTO_ERROR_FAILED;
	text = clean_desc(desc, cls);
	json_object_object_add(err, "class", json_object_new_string(error_class_names[cls]));
	json_object_object_add(err, "desc", json_object_new_string(text));
	json_object_object_add(root, "error", err);
	return to_line(root);
}

char *vr_proto_encode_gerror(uint32_t id, const GError *error)
{
	enum vr_proto_error_class cls = VR_PROTO_ERROR_FAILED;

	if (error && error->domain == VR_PROTO_ERROR &&
	    (guint)error->code < G_N_ELEMENTS(error_class_names))
		cls = (enum vr_proto_error_class)error->code;
	return vr_proto_encode_error(id, cls, error ? error->message : NULL);
}

/* The "failed" error that replaces a reply the host would refuse. */
static char *invalid_reply(uint32_t id, const GError *why)
{
	g_autofree char *desc = g_strdup_printf("the agent's reply is invalid: %s", why->message);

	return vr_proto_encode_error(id, VR_PROTO_ERROR_FAILED, desc);
}

/* {"vreclaim":1,"id":@id,"return":@ret}, @ret owned; a checked line. */
static char *reply_line(uint32_t id, struct json_object *ret)
{
	g_autoptr(json_object) root = envelope_with_id(id);
	char *line;

	json_object_object_add(root, "return", ret);
	line = to_line(root);
	if (strlen(line) > VR_PROTO_MAX_LINE) { /* not reached: the structs are bounded */
		g_free(line);
		return vr_proto_encode_error(id, VR_PROTO_ERROR_FAILED,
					     "the agent's reply does not fit in a line");
	}
	return line;
}

static struct json_object *hello_to_json(const struct vr_proto_hello *h)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *backends = json_object_new_array();

	add_uint(obj, "version", h->version);
	json_object_object_add(obj, "agent", json_object_new_string(h->agent));
	json_object_object_add(obj, "kernel", json_object_new_string(h->kernel));
	for (guint i = 0; i < h->nr_backends; i++)
		json_object_array_add(backends, json_object_new_string(h->backends[i]));
	json_object_object_add(obj, "backends", backends);
	json_object_object_add(obj, "backend", json_object_new_string(h->backend));
	json_object_object_add(obj, "free_page_reporting",
			       json_object_new_boolean(h->free_page_reporting != 0));
	if (h->has_reporting_order)
		add_uint(obj, "reporting_order", h->reporting_order);
	if (h->cold_histogram) {
		struct json_object *caps = json_object_new_array();

		json_object_array_add(caps, json_object_new_string(VR_PROTO_CAP_COLD_HISTOGRAM));
		json_object_object_add(obj, "capabilities", caps);
	}
	return obj;
}

static struct json_object *stats_to_json(const struct vr_agent_stats *s)
{
	struct json_object *obj = json_object_new_object();

	json_object_object_add(obj, "backend", json_object_new_string(s->backend));
	json_object_object_add(obj, "paused", json_object_new_boolean(s->paused != 0));
	for (guint i = 0; i < G_N_ELEMENTS(stats_fields); i++)
		if (stats_field_sent(s, &stats_fields[i]))
			add_uint(obj, stats_fields[i].name, stats_field_get(s, &stats_fields[i]));
	json_object_object_add(obj, "free_page_reporting",
			       json_object_new_boolean(s->free_page_reporting != 0));
	return obj;
}

static struct json_object *regions_to_json(const struct vr_proto_regions *r)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *arr = json_object_new_array();

	add_uint(obj, "sample_interval_us", r->sample_interval_us);
	add_uint(obj, "aggr_interval_us", r->aggr_interval_us);
	for (guint i = 0; r->regions && i < r->regions->len; i++) {
		const struct vr_agent_region *reg =
			&g_array_index(r->regions, struct vr_agent_region, i);
		struct json_object *o = json_object_new_object();

		add_uint(o, "start", reg->start);
		add_uint(o, "end", reg->end);
		add_uint(o, "nr_accesses", reg->nr_accesses);
		add_uint(o, "age", reg->age);
		json_object_array_add(arr, o);
	}
	json_object_object_add(obj, "regions", arr);
	return obj;
}

static struct json_object *cold_hist_to_json(const struct vr_proto_cold_hist *c)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *arr = json_object_new_array_ext(VR_PROTO_COLD_HIST_BUCKETS);

	add_uint(obj, "generation", c->generation);
	add_uint(obj, "sample_interval_us", c->sample_interval_us);
	add_uint(obj, "aggr_interval_us", c->aggr_interval_us);
	add_uint(obj, "nr_regions", c->nr_regions);
	for (guint i = 0; i < VR_PROTO_COLD_HIST_BUCKETS; i++)
		json_object_array_add(arr, json_object_new_uint64(c->bytes[i]));
	json_object_object_add(obj, "bytes", arr);
	return obj;
}

static gboolean check_reply_id(uint32_t id, GError **error)
{
	return check_range(id, 1, G_MAXUINT32, FALSE, "id", error);
}

char *vr_proto_encode_hello(uint32_t id, const struct vr_proto_hello *hello)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err) || !hello_validate(hello, "return", &err))
		return invalid_reply(id, err);
	return reply_line(id, hello_to_json(hello));
}

char *vr_proto_encode_stats(uint32_t id, const struct vr_agent_stats *stats)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err) || !stats_validate(stats, "return", &err))
		return invalid_reply(id, err);
	return reply_line(id, stats_to_json(stats));
}

char *vr_proto_encode_regions(uint32_t id, const struct vr_proto_regions *regions)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err) || !regions_validate(regions, "return", &err))
		return invalid_reply(id, err);
	return reply_line(id, regions_to_json(regions));
}

char *vr_proto_encode_cold_hist(uint32_t id, const struct vr_proto_cold_hist *hist)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err) || !cold_hist_validate(hist, "return", &err))
		return invalid_reply(id, err);
	return reply_line(id, cold_hist_to_json(hist));
}

char *vr_proto_encode_reclaim_result(uint32_t id, const struct vr_proto_reclaim_result *result)
{
	g_autoptr(GError) err = NULL;
	struct json_object *obj;

	if (!check_reply_id(id, &err) || !reclaim_result_validate(result, "return", &err))
		return invalid_reply(id, err);
	obj = json_object_new_object();
	add_uint(obj, "reclaimed_bytes", result->reclaimed_bytes);
	add_uint(obj, "elapsed_ms", result->elapsed_ms);
	return reply_line(id, obj);
}

char *vr_proto_encode_empty(uint32_t id)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err))
		return invalid_reply(id, err);
	return reply_line(id, json_object_new_object());
}

char *vr_proto_encode_report(uint64_t seq, const struct vr_agent_stats *stats)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(json_object) root = NULL;
	struct json_object *report;

	if (!check_range(seq, 0, VR_PROTO_MAX_INT, FALSE, "report.seq", &err) ||
	    !stats_validate(stats, "report", &err))
		return invalid_reply(0, err);
	root = envelope_new();
	report = stats_to_json(stats);
	add_uint(report, "seq", seq);
	json_object_object_add(root, "report", report);
	return to_line(root);
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
		return invalid(error, cpath, "expected an array (got %s)", vr_json_describe(caps));
	nr = json_object_array_length(caps);
	if (nr > VR_PROTO_MAX_CAPABILITIES)
		return invalid(error, cpath, "expected at most %d capabilities (got %zu)",
			       VR_PROTO_MAX_CAPABILITIES, nr);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(cpath, i);

		if (!read_string_into(json_object_array_get_idx(caps, i), ipath, names[i],
				      sizeof(names[i]), error) ||
		    !check_text(names[i], sizeof(names[i]), TEXT_NAME, ipath, error))
			return FALSE;
		for (guint j = 0; j < i; j++)
			if (strcmp(names[j], names[i]) == 0)
				return invalid(error, ipath, "'%s' is listed twice", names[i]);
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
		return invalid(error, bpath, "expected an array (got %s)",
			       vr_json_describe(backends));
	nr = json_object_array_length(backends);
	if (nr < 1 || nr > VR_PROTO_MAX_BACKENDS)
		return invalid(error, bpath, "expected 1..%d backends (got %zu)",
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
	return hello_validate(h, path, error);
}

static gboolean read_stats(const struct decoder *dec, struct json_object *v, const char *path,
			   struct vr_agent_stats *s, GError **error)
{
	if (!check_object(v, path, error) ||
	    !READ_STRING_MEMBER(v, path, "backend", s->backend, error) ||
	    !read_bool_member(v, path, "paused", &s->paused, error))
		return FALSE;
	for (guint i = 0; i < G_N_ELEMENTS(stats_fields); i++) {
		const struct stats_field *f = &stats_fields[i];
		gboolean *has = stats_field_has(s, f);
		gboolean present = json_object_object_get_ex(v, f->name, NULL);

		*stats_field_ptr(s, f) = 0;
		if (has)
			*has = present;
		if (f->optional && !present)
			continue;
		if (!read_uint_member(dec, v, path, f->name, 0, VR_PROTO_MAX_INT,
				      stats_field_ptr(s, f), error))
			return FALSE;
	}
	return read_bool_member(v, path, "free_page_reporting", &s->free_page_reporting, error) &&
	       stats_validate(s, path, error);
}

static gboolean read_region(const struct decoder *dec, struct json_object *v, const char *path,
			    struct vr_agent_region *r, GError **error)
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
				 struct vr_agent_region *r)
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
	    !read_uint_member(dec, v, path, "sample_interval_us", 1, VR_PROTO_MAX_INT,
			      &r->sample_interval_us, error) ||
	    !read_uint_member(dec, v, path, "aggr_interval_us", 1, VR_PROTO_MAX_INT,
			      &r->aggr_interval_us, error) ||
	    !need_member(v, path, "regions", &arr, error))
		return FALSE;
	if (!json_object_is_type(arr, json_type_array))
		return invalid(error, rpath, "expected an array (got %s)", vr_json_describe(arr));
	nr = json_object_array_length(arr);
	if (nr > VR_PROTO_MAX_REGIONS) /* before allocating anything */
		return invalid(error, rpath, "at most %d regions are allowed (got %zu)",
			       VR_PROTO_MAX_REGIONS, nr);
	r->regions = g_array_sized_new(FALSE, TRUE, sizeof(struct vr_agent_region), (guint)nr);
	for (guint i = 0; i < nr; i++) {
		struct json_object *elem = json_object_array_get_idx(arr, i);
		struct vr_agent_region reg = { 0 };

		/* The region's path only when something is wrong with it. */
		if (!read_region_fast(dec, elem, &reg)) {
			g_autofree char *ipath = vr_json_path_index(rpath, i);

			if (!read_region(dec, elem, ipath, &reg, error))
				return FALSE;
		}
		g_array_append_val(r->regions, reg);
	}
	return regions_validate(r, path, error);
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
		return invalid(error, bpath, "expected an array (got %s)", vr_json_describe(arr));
	nr = json_object_array_length(arr);
	if (nr != VR_PROTO_COLD_HIST_BUCKETS)
		return invalid(error, bpath, "expected %d buckets, one per cold score (got %zu)",
			       VR_PROTO_COLD_HIST_BUCKETS, nr);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(bpath, i);

		if (!read_uint(dec, json_object_array_get_idx(arr, i), ipath, 0, VR_PROTO_MAX_INT,
			       FALSE, &c->bytes[i], error))
			return FALSE;
	}
	return cold_hist_validate(c, path, error);
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
	    !CHECK_TEXT(e->desc, TEXT_FREE, "error", "desc", error))
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
			return invalid(error, "id", "%u answers no request in flight", m->id);
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

/* ---- the line reader ---- */

/**
 * struct reader_line - a line waiting in a struct vr_proto_reader.
 * @line:	the line, NUL-terminated; NULL for a line that was too long.
 * @len:	its length in bytes.
 */
struct reader_line {
	char *line;
	gsize len;
};

/**
 * struct vr_proto_reader - see protocol.h.
 * @partial:	the unfinished line: at most VR_PROTO_MAX_LINE - 1 bytes.
 * @discarding:	the unfinished line is too long: drop bytes up to its newline.
 * @lines:	struct reader_line *, complete lines not taken yet, in order.
 * @queued_bytes: the bytes of @lines.
 */
struct vr_proto_reader {
	GByteArray *partial;
	gboolean discarding;
	GQueue lines;
	gsize queued_bytes;
};

static void reader_line_free(gpointer p)
{
	struct reader_line *l = p;

	g_free(l->line);
	g_free(l);
}

struct vr_proto_reader *vr_proto_reader_new(void)
{
	struct vr_proto_reader *r = g_new0(struct vr_proto_reader, 1);

	r->partial = g_byte_array_new();
	g_queue_init(&r->lines);
	return r;
}

void vr_proto_reader_free(struct vr_proto_reader *r)
{
	if (!r)
		return;
	g_byte_array_unref(r->partial);
	g_queue_clear_full(&r->lines, reader_line_free);
	g_free(r);
}

static void reader_queue(struct vr_proto_reader *r, char *line, gsize len)
{
	struct reader_line *l = g_new(struct reader_line, 1);

	l->line = line;
	l->len = len;
	r->queued_bytes += len;
	g_queue_push_tail(&r->lines, l);
}

/* The unfinished line got its newline: queue it unless it is blank. */
static void reader_finish_line(struct vr_proto_reader *r)
{
	const guint8 *data = r->partial->data;
	gsize n = r->partial->len;
	gboolean blank = TRUE;
	char *line;

	if (n > 0 && data[n - 1] == '\r')
		n--;
	for (gsize i = 0; i < n && blank; i++)
		blank = data[i] == ' ' || data[i] == '\t' || data[i] == '\r';
	if (!blank) {
		line = g_malloc(n + 1);
		memcpy(line, data, n);
		line[n] = '\0';
		reader_queue(r, line, n);
	}
	g_byte_array_set_size(r->partial, 0);
}

void vr_proto_reader_feed(struct vr_proto_reader *r, const void *data, gsize len)
{
	const guint8 *p = data;

	while (len > 0) {
		const guint8 *nl = memchr(p, '\n', len);
		gsize n = nl ? (gsize)(nl - p) : len;

		if (!r->discarding && r->partial->len + n > VR_PROTO_MAX_LINE - 1) {
			/* The line cannot fit with its newline: say so once, drop it. */
			g_byte_array_set_size(r->partial, 0);
			r->discarding = TRUE;
			reader_queue(r, NULL, 0);
		}
		if (!r->discarding)
			g_byte_array_append(r->partial, p, (guint)n);
		if (!nl)
			break;
		if (r->discarding)
			r->discarding = FALSE;
		else
			reader_finish_line(r);
		p = nl + 1;
		len -= n + 1;
	}
}

gboolean vr_proto_reader_next(struct vr_proto_reader *r, char **line, gsize *len, GError **error)
{
	struct reader_line *l = g_queue_pop_head(&r->lines);

	*line = NULL;
	*len = 0;
	if (!l)
		return TRUE;
	if (!l->line) {
		g_free(l);
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_TOO_LONG,
			    "a line is longer than %d bytes with its newline; it was skipped",
			    VR_PROTO_MAX_LINE);
		return FALSE;
	}
	r->queued_bytes -= l->len;
	*line = l->line;
	*len = l->len;
	g_free(l);
	return TRUE;
}

gsize vr_proto_reader_buffered(const struct vr_proto_reader *r)
{
	return r->partial->len + r->queued_bytes;
}
