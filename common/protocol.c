/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host <-> agent wire protocol (docs/protocol.md): its messages' names,
 * the release of the structs they decode into, and the rules each struct
 * obeys. Both halves of the JSON codec run the same rules on a whole struct:
 * protocol-decode.c after reading it, protocol-encode.c before writing it, so
 * what one side writes the other side reads. The shared internals are in
 * protocol-private.h; the line reader is protocol-reader.c.
 *
 * Every error message starts with the JSON path of the member at fault
 * ("arguments.bytes: ..."), like the policy's.
 */
#include "protocol.h"

#include <stddef.h>
#include <string.h>

#include "json-doc.h"
#include "picture.h"
#include "protocol-private.h"

/* clang-format off */
G_DEFINE_QUARK(vr-proto-error-quark, vr_proto_error)
/* clang-format on */

/* ---- names ---- */

const char *const vr_proto_error_class_names[] = {
	[VR_PROTO_ERROR_SYNTAX] = "syntax",
	[VR_PROTO_ERROR_TOO_LONG] = "too-long",
	[VR_PROTO_ERROR_BAD_VERSION] = "bad-version",
	[VR_PROTO_ERROR_UNKNOWN_COMMAND] = "unknown-command",
	[VR_PROTO_ERROR_INVALID_ARGUMENT] = "invalid-argument",
	[VR_PROTO_ERROR_FAILED] = "failed",
	[VR_PROTO_ERROR_BUSY] = "busy",
};

/* What an error reply says when the agent gives no description. */
const char *const vr_proto_error_class_descs[] = {
	[VR_PROTO_ERROR_SYNTAX] = "The line is not a JSON object.",
	[VR_PROTO_ERROR_TOO_LONG] = "The line is too long.",
	[VR_PROTO_ERROR_BAD_VERSION] = "The protocol version is not supported.",
	[VR_PROTO_ERROR_UNKNOWN_COMMAND] = "The command is unknown.",
	[VR_PROTO_ERROR_INVALID_ARGUMENT] = "An argument is invalid.",
	[VR_PROTO_ERROR_FAILED] = "The request failed.",
	[VR_PROTO_ERROR_BUSY] = "The agent is busy.",
};
G_STATIC_ASSERT(G_N_ELEMENTS(vr_proto_error_class_descs) ==
		G_N_ELEMENTS(vr_proto_error_class_names));
const guint vr_proto_nr_error_classes = G_N_ELEMENTS(vr_proto_error_class_names);

const char *const vr_proto_command_names[] = {
	[VR_PROTO_HELLO] = "hello",
	[VR_PROTO_SET_POLICY] = "set-policy",
	[VR_PROTO_RECLAIM] = "reclaim",
	[VR_PROTO_GET_STATS] = "get-stats",
	[VR_PROTO_GET_REGIONS] = "get-regions",
	[VR_PROTO_PAUSE] = "pause",
	[VR_PROTO_RESUME] = "resume",
	[VR_PROTO_GET_COLD_HIST] = "get-cold-histogram",
};

const guint vr_proto_nr_commands = G_N_ELEMENTS(vr_proto_command_names);

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
	return (guint)cls < G_N_ELEMENTS(vr_proto_error_class_names) ?
		       vr_proto_error_class_names[cls] :
		       "unknown";
}

gboolean vr_proto_error_class_from_name(const char *name, enum vr_proto_error_class *cls)
{
	int v;

	if (!name_lookup(vr_proto_error_class_names, G_N_ELEMENTS(vr_proto_error_class_names), name,
			 &v))
		return FALSE;
	*cls = (enum vr_proto_error_class)v;
	return TRUE;
}

const char *vr_proto_command_name(enum vr_proto_command command)
{
	return (guint)command < G_N_ELEMENTS(vr_proto_command_names) ?
		       vr_proto_command_names[command] :
		       "unknown";
}

gboolean vr_proto_command_from_name(const char *name, enum vr_proto_command *command)
{
	int v;

	if (!name_lookup(vr_proto_command_names, G_N_ELEMENTS(vr_proto_command_names), name, &v))
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

/* "an integer in MIN..MAX", or "0 or an integer in MIN..MAX" with @zero_ok. */
static char *range_text(uint64_t min, uint64_t max, gboolean zero_ok)
{
	return g_strdup_printf("%san integer in %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT,
			       zero_ok ? "0 or " : "", min, max);
}

gboolean vr_proto_in_range(uint64_t v, uint64_t min, uint64_t max, gboolean zero_ok)
{
	return (v >= min && v <= max) || (zero_ok && v == 0);
}

/* "<path>: expected <range> (got <got>)". Return: FALSE. */
gboolean vr_proto_range_error(GError **error, const char *path, uint64_t min, uint64_t max,
			      gboolean zero_ok, const char *got)
{
	g_autofree char *want = range_text(min, max, zero_ok);

	return vr_proto_invalid(error, path, "expected %s (got %s)", want, got);
}

/* @v in [@min, @max] (or 0 with @zero_ok); an error at @path if not. */
gboolean vr_proto_check_range(uint64_t v, uint64_t min, uint64_t max, gboolean zero_ok,
			      const char *path, GError **error)
{
	char got[24];

	if (vr_proto_in_range(v, min, max, zero_ok))
		return TRUE;
	g_snprintf(got, sizeof(got), "%" G_GUINT64_FORMAT, v);
	return vr_proto_range_error(error, path, min, max, zero_ok, got);
}

/* vr_proto_check_range() of member @name under @path. */
static gboolean check_member_range(uint64_t v, uint64_t min, uint64_t max, gboolean zero_ok,
				   const char *path, const char *name, GError **error)
{
	g_autofree char *mpath = vr_json_path_member(path, name);

	return vr_proto_check_range(v, min, max, zero_ok, mpath, error);
}

/* Member @a_name (@a) of @path must be at most member @b_name (@b). */
static gboolean check_at_most(uint64_t a, uint64_t b, const char *path, const char *a_name,
			      const char *b_name, GError **error)
{
	g_autofree char *mpath = NULL;

	if (a <= b)
		return TRUE;
	mpath = vr_json_path_member(path, a_name);
	return vr_proto_invalid(error, mpath,
				"%" G_GUINT64_FORMAT " is above %s (%" G_GUINT64_FORMAT ")", a,
				b_name, b);
}

/* A character that must not reach the host's logs and terminals: control
 * characters (C0, DEL, C1) and format characters (bidi overrides, ...). */
gboolean vr_proto_is_unsafe_char(gunichar c)
{
	return g_unichar_iscntrl(c) || g_unichar_type(c) == G_UNICODE_FORMAT;
}

static gboolean is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/**
 * vr_proto_check_text() - the string in the @size bytes of @buf: NUL-terminated
 * there, not empty, UTF-8 without control or format characters, and for VR_PROTO_TEXT_NAME
 * only [a-z0-9_-]. Errors name @path.
 */
gboolean vr_proto_check_text(const char *buf, gsize size, enum vr_proto_text_kind kind,
			     const char *path, GError **error)
{
	const char *end = memchr(buf, '\0', size);

	if (!end)
		return vr_proto_invalid(error, path, "longer than %zu bytes", size - 1);
	if (end == buf)
		return vr_proto_invalid(error, path, "expected a non-empty string");
	if (!g_utf8_validate(buf, end - buf, NULL))
		return vr_proto_invalid(error, path, "the string is not valid UTF-8");
	for (const char *p = buf; p < end; p = g_utf8_next_char(p))
		if (vr_proto_is_unsafe_char(g_utf8_get_char(p)))
			return vr_proto_invalid(
				error, path,
				"the string contains a control or format character (U+%04X)",
				g_utf8_get_char(p));
	if (kind == VR_PROTO_TEXT_NAME)
		for (const char *p = buf; p < end; p++)
			if (!is_name_char(*p))
				return vr_proto_invalid(
					error, path,
					"'%s' is not a name (lowercase letters, digits, "
					"'-' and '_')",
					buf);
	return TRUE;
}

gboolean vr_proto_check_text_member(const char *buf, gsize size, enum vr_proto_text_kind kind,
				    const char *path, const char *name, GError **error)
{
	g_autofree char *mpath = vr_json_path_member(path, name);

	return vr_proto_check_text(buf, size, kind, mpath, error);
}

/* ---- the rules of each struct (both sides) ---- */

gboolean vr_proto_hello_validate(const struct vr_proto_hello *h, const char *path, GError **error)
{
	g_autofree char *bpath = vr_json_path_member(path, "backends");
	gboolean known = FALSE;

	if (!check_member_range(h->version, 1, G_MAXUINT32, FALSE, path, "version", error) ||
	    !VR_PROTO_CHECK_TEXT(h->agent, VR_PROTO_TEXT_FREE, path, "agent", error) ||
	    !VR_PROTO_CHECK_TEXT(h->kernel, VR_PROTO_TEXT_FREE, path, "kernel", error))
		return FALSE;
	if (h->nr_backends < 1 || h->nr_backends > VR_PROTO_MAX_BACKENDS)
		return vr_proto_invalid(error, bpath, "expected 1..%d backends (got %u)",
					VR_PROTO_MAX_BACKENDS, h->nr_backends);
	for (guint i = 0; i < h->nr_backends; i++) {
		g_autofree char *ipath = vr_json_path_index(bpath, i);

		if (!vr_proto_check_text(h->backends[i], sizeof(h->backends[i]), VR_PROTO_TEXT_NAME,
					 ipath, error))
			return FALSE;
		for (guint j = 0; j < i; j++)
			if (strcmp(h->backends[j], h->backends[i]) == 0)
				return vr_proto_invalid(error, ipath, "'%s' is listed twice",
							h->backends[i]);
	}
	if (!VR_PROTO_CHECK_TEXT(h->backend, VR_PROTO_TEXT_NAME, path, "backend", error))
		return FALSE;
	for (guint i = 0; i < h->nr_backends; i++)
		known = known || strcmp(h->backends[i], h->backend) == 0;
	if (!known && strcmp(h->backend, "none") != 0) {
		g_autofree char *mpath = vr_json_path_member(path, "backend");

		return vr_proto_invalid(error, mpath,
					"'%s' is neither one of backends nor \"none\"", h->backend);
	}
	if (h->has_reporting_order &&
	    !check_member_range(h->reporting_order, 0, VR_PROTO_MAX_REPORTING_ORDER, FALSE, path,
				"reporting_order", error))
		return FALSE;
	return TRUE;
}

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

const struct vr_proto_stats_field vr_proto_stats_fields[] = {
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

const guint vr_proto_nr_stats_fields = G_N_ELEMENTS(vr_proto_stats_fields);

uint64_t *vr_proto_stats_field_ptr(struct vr_agent_stats *s, const struct vr_proto_stats_field *f)
{
	return (uint64_t *)((char *)s + f->offset);
}

uint64_t vr_proto_stats_field_get(const struct vr_agent_stats *s,
				  const struct vr_proto_stats_field *f)
{
	return *(const uint64_t *)((const char *)s + f->offset);
}

/* The presence flag of @f in @s, or NULL for a member always sent. */
gboolean *vr_proto_stats_field_has(struct vr_agent_stats *s, const struct vr_proto_stats_field *f)
{
	return f->has_offset ? (gboolean *)(void *)((char *)s + f->has_offset) : NULL;
}

/* Is @f on the wire for @s? */
bool vr_proto_stats_field_sent(const struct vr_agent_stats *s, const struct vr_proto_stats_field *f)
{
	return !f->has_offset || *(const gboolean *)(const void *)((const char *)s + f->has_offset);
}

gboolean vr_proto_stats_validate(const struct vr_agent_stats *s, const char *path, GError **error)
{
	if (!VR_PROTO_CHECK_TEXT(s->backend, VR_PROTO_TEXT_NAME, path, "backend", error))
		return FALSE;
	for (guint i = 0; i < G_N_ELEMENTS(vr_proto_stats_fields); i++)
		if (!check_member_range(vr_proto_stats_field_get(s, &vr_proto_stats_fields[i]), 0,
					VR_PROTO_MAX_INT, FALSE, path,
					vr_proto_stats_fields[i].name, error))
			return FALSE;
	return check_at_most(s->nr_applied, s->nr_tried, path, "nr_applied", "nr_tried", error) &&
	       check_at_most(s->sz_applied, s->sz_tried, path, "sz_applied", "sz_tried", error) &&
	       check_at_most(s->mem_free_bytes, s->mem_total_bytes, path, "mem_free_bytes",
			     "mem_total_bytes", error) &&
	       check_at_most(s->swap_free_bytes, s->swap_total_bytes, path, "swap_free_bytes",
			     "swap_total_bytes", error);
}

/*
 * A get-regions reply is an access picture: every number of it on the wire
 * is a picture's, so the most regions the wire allows must be a picture
 * (the host could not use a larger reply, nor an agent send it).
 */
G_STATIC_ASSERT(VR_PROTO_MAX_REGIONS <= VR_PICTURE_MAX_REGIONS);

/* The wire's part of a region: its addresses are JSON integers
 * (0..VR_PROTO_MAX_INT; nr_accesses and age are 32 bits, always in range).
 * Region @i of the array at @rpath. */
static gboolean region_on_wire(const struct vr_picture_region *r, const char *rpath, guint i,
			       GError **error)
{
	g_autofree char *ipath = NULL;
	g_autofree char *spath = NULL;
	g_autofree char *epath = NULL;

	if (r->start <= VR_PROTO_MAX_INT && r->end <= VR_PROTO_MAX_INT)
		return TRUE; /* no path built for a good region: a reply has up to 512 */
	ipath = vr_json_path_index(rpath, i);
	spath = vr_json_path_member(ipath, "start");
	epath = vr_json_path_member(ipath, "end");
	return vr_proto_check_range(r->start, 0, VR_PROTO_MAX_INT, FALSE, spath, error) &&
	       vr_proto_check_range(r->end, 0, VR_PROTO_MAX_INT, FALSE, epath, error);
}

/* The member under @path of the reply @r that broke the picture's rule
 * @rule at region @region (vr_picture_check_at()); newly allocated. */
static char *picture_fault_path(const struct vr_proto_regions *r, const char *path,
				enum vr_picture_error rule, guint region)
{
	g_autofree char *rpath = vr_json_path_member(path, "regions");
	g_autofree char *ipath = NULL;

	if (rule == VR_PICTURE_ERROR_INTERVALS)
		return vr_json_path_member(path, r->sample_interval_us ? "aggr_interval_us" :
									 "sample_interval_us");
	if (region == VR_PICTURE_NO_REGION) /* VR_PICTURE_ERROR_TOO_MANY */
		return g_steal_pointer(&rpath);
	ipath = vr_json_path_index(rpath, region);
	switch (rule) {
	case VR_PICTURE_ERROR_EMPTY:
	case VR_PICTURE_ERROR_BEYOND:
		return vr_json_path_member(ipath, "end");
	case VR_PICTURE_ERROR_ORDER:
		return vr_json_path_member(ipath, "start");
	case VR_PICTURE_ERROR_ACCESSES:
		return vr_json_path_member(ipath, "nr_accesses");
	default: /* VR_PICTURE_ERROR_TOO_LARGE: not checked here (no bound) */
		return g_steal_pointer(&ipath);
	}
}

gboolean vr_proto_regions_validate(const struct vr_proto_regions *r, const char *path,
				   GError **error)
{
	g_autofree char *rpath = vr_json_path_member(path, "regions");
	g_autofree char *fpath = NULL;
	g_autoptr(GError) local = NULL;
	guint n = r->regions ? r->regions->len : 0;
	guint region;

	/* The wire's: integers in range, and no more regions than it carries. */
	if (!check_member_range(r->sample_interval_us, 0, VR_PROTO_MAX_INT, FALSE, path,
				"sample_interval_us", error) ||
	    !check_member_range(r->aggr_interval_us, 0, VR_PROTO_MAX_INT, FALSE, path,
				"aggr_interval_us", error))
		return FALSE;
	if (n > VR_PROTO_MAX_REGIONS)
		return vr_proto_invalid(error, rpath, "at most %d regions are allowed (got %u)",
					VR_PROTO_MAX_REGIONS, n);
	for (guint i = 0; i < n; i++)
		if (!region_on_wire(&g_array_index(r->regions, struct vr_picture_region, i), rpath,
				    i, error))
			return FALSE;
	/* The picture's: one rule check (common/picture.h), its message under
	 * the path of the member at fault. No guest bound: the host checks the
	 * guest's memory size after decoding. */
	if (vr_picture_check_at(r->regions, r->sample_interval_us, r->aggr_interval_us, NULL,
				&region, &local))
		return TRUE;
	fpath = picture_fault_path(r, path, (enum vr_picture_error)local->code, region);
	return vr_proto_invalid(error, fpath, "%s", local->message);
}

gboolean vr_proto_cold_hist_validate(const struct vr_proto_cold_hist *c, const char *path,
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

			return vr_proto_invalid(
				error, ipath, "the buckets add up to more than %" G_GUINT64_FORMAT,
				VR_PROTO_MAX_INT);
		}
		sum += c->bytes[i];
	}
	return TRUE;
}

gboolean vr_proto_reclaim_result_validate(const struct vr_proto_reclaim_result *r, const char *path,
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

const char *const *vr_proto_command_args(enum vr_proto_command command)
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
gboolean vr_proto_request_args_validate(const struct vr_proto_request *req, GError **error)
{
	switch (req->command) {
	case VR_PROTO_SET_POLICY:
		if ((req->set_policy.generation == 0) != (req->set_policy.histogram_policy == NULL))
			return vr_proto_invalid(error, "arguments.generation",
						"generation and histogram_policy go together");
		return (!req->set_policy.has_report_interval ||
			vr_proto_check_range(req->set_policy.report_interval_ms,
					     VR_PROTO_REPORT_INTERVAL_MIN_MS,
					     VR_PROTO_REPORT_INTERVAL_MAX_MS, TRUE,
					     "arguments.report_interval_ms", error)) &&
		       vr_proto_check_range(req->set_policy.generation, 1, VR_PROTO_MAX_INT, TRUE,
					    "arguments.generation", error);
	case VR_PROTO_RECLAIM:
		return vr_proto_check_range(req->reclaim.bytes, VR_PROTO_RECLAIM_MIN_BYTES,
					    VR_PROTO_RECLAIM_MAX_BYTES, FALSE, "arguments.bytes",
					    error) &&
		       vr_proto_check_range(req->reclaim.deadline_ms, 1,
					    VR_PROTO_RECLAIM_MAX_DEADLINE_MS, FALSE,
					    "arguments.deadline_ms", error);
	case VR_PROTO_GET_REGIONS:
		return vr_proto_check_range(req->get_regions.max, 1, VR_PROTO_MAX_REGIONS, FALSE,
					    "arguments.max", error);
	default:
		return TRUE;
	}
}
