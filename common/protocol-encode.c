/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire protocol's encoder (docs/protocol.md): a struct in, a line out.
 * Every struct is checked by its validator (protocol.c) before it is
 * written, so what one side writes the other side reads; an agent's reply
 * the host would refuse goes out as a "failed" error reply instead.
 */
#include "protocol.h"

#include <string.h>

#include "json-doc.h"
#include "protocol-private.h"

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
	if (!vr_proto_check_range(req->id, 1, G_MAXUINT32, FALSE, "id", error))
		return NULL;
	if ((guint)req->command >= vr_proto_nr_commands) {
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_UNKNOWN_COMMAND,
			    "command: unknown command (%d)", (int)req->command);
		return NULL;
	}
	if (!vr_proto_request_args_validate(req, error))
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
			vr_proto_invalid(error, "arguments.policy", "missing");
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
		return g_strdup(vr_proto_error_class_descs[cls]);
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
		if (vr_proto_is_unsafe_char(c))
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

	if ((guint)cls >= vr_proto_nr_error_classes)
		cls = VR_PROTO_ERROR_FAILED;
	text = clean_desc(desc, cls);
	json_object_object_add(err, "class",
			       json_object_new_string(vr_proto_error_class_names[cls]));
	json_object_object_add(err, "desc", json_object_new_string(text));
	json_object_object_add(root, "error", err);
	return to_line(root);
}

char *vr_proto_encode_gerror(uint32_t id, const GError *error)
{
	enum vr_proto_error_class cls = VR_PROTO_ERROR_FAILED;

	if (error && error->domain == VR_PROTO_ERROR &&
	    (guint)error->code < vr_proto_nr_error_classes)
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
	for (guint i = 0; i < vr_proto_nr_stats_fields; i++)
		if (vr_proto_stats_field_sent(s, &vr_proto_stats_fields[i]))
			add_uint(obj, vr_proto_stats_fields[i].name,
				 vr_proto_stats_field_get(s, &vr_proto_stats_fields[i]));
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
		const struct vr_picture_region *reg =
			&g_array_index(r->regions, struct vr_picture_region, i);
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
	return vr_proto_check_range(id, 1, G_MAXUINT32, FALSE, "id", error);
}

char *vr_proto_encode_hello(uint32_t id, const struct vr_proto_hello *hello)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err) || !vr_proto_hello_validate(hello, "return", &err))
		return invalid_reply(id, err);
	return reply_line(id, hello_to_json(hello));
}

char *vr_proto_encode_stats(uint32_t id, const struct vr_agent_stats *stats)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err) || !vr_proto_stats_validate(stats, "return", &err))
		return invalid_reply(id, err);
	return reply_line(id, stats_to_json(stats));
}

char *vr_proto_encode_regions(uint32_t id, const struct vr_proto_regions *regions)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err) || !vr_proto_regions_validate(regions, "return", &err))
		return invalid_reply(id, err);
	return reply_line(id, regions_to_json(regions));
}

char *vr_proto_encode_cold_hist(uint32_t id, const struct vr_proto_cold_hist *hist)
{
	g_autoptr(GError) err = NULL;

	if (!check_reply_id(id, &err) || !vr_proto_cold_hist_validate(hist, "return", &err))
		return invalid_reply(id, err);
	return reply_line(id, cold_hist_to_json(hist));
}

char *vr_proto_encode_reclaim_result(uint32_t id, const struct vr_proto_reclaim_result *result)
{
	g_autoptr(GError) err = NULL;
	struct json_object *obj;

	if (!check_reply_id(id, &err) || !vr_proto_reclaim_result_validate(result, "return", &err))
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

	if (!vr_proto_check_range(seq, 0, VR_PROTO_MAX_INT, FALSE, "report.seq", &err) ||
	    !vr_proto_stats_validate(stats, "report", &err))
		return invalid_reply(0, err);
	root = envelope_new();
	report = stats_to_json(stats);
	add_uint(report, "seq", seq);
	json_object_object_add(root, "report", report);
	return to_line(root);
}
