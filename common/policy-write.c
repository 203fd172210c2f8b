/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writing a policy document (docs/policy.md): struct vr_policy in, the JSON
 * text out, every member spelled as the reader (policy-parse.c) takes it.
 */
#include "policy.h"

#include "json-doc.h"
#include "policy-private.h"

/* ---- writing ---- */

/* The integer members of @d, read from @base, added to @obj. Return: @obj. */
static struct json_object *fields_to_json(struct json_object *obj,
					  const struct vr_policy_object_desc *d, const void *base)
{
	for (size_t i = 0; i < d->nr_ints; i++)
		json_object_object_add(
			obj, d->ints[i].name,
			json_object_new_uint64(vr_policy_field_get(&d->ints[i], base)));
	return obj;
}

static struct json_object *quota_to_json(const struct vr_quota *q)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *weights = json_object_new_object();
	struct json_object *goals = json_object_new_array();

	fields_to_json(obj, &vr_policy_quota_desc, q);
	json_object_object_add(obj, "weights", fields_to_json(weights, &vr_policy_weights_desc, q));
	for (guint i = 0; i < q->nr_goals && i < VR_MAX_QUOTA_GOALS; i++) {
		struct json_object *g = json_object_new_object();

		json_object_object_add(
			g, "metric",
			json_object_new_string(vr_goal_metric_name(q->goals[i].metric)));
		fields_to_json(g, &vr_policy_goal_desc, &q->goals[i]);
		json_object_array_add(goals, g);
	}
	json_object_object_add(obj, "goals", goals);
	json_object_object_add(obj, "charge",
			       json_object_new_string(vr_charge_basis_name(q->charge)));
	return obj;
}

static struct json_object *scheme_to_json(const struct vr_scheme *s)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *pattern = json_object_new_object();
	struct json_object *wmarks = json_object_new_object();
	struct json_object *filters = json_object_new_array();

	json_object_object_add(obj, "name", json_object_new_string(s->name ? s->name : ""));
	json_object_object_add(obj, "action", json_object_new_string(vr_action_name(s->action)));
	json_object_object_add(obj, "pattern",
			       fields_to_json(pattern, &vr_policy_pattern_desc, &s->pattern));
	json_object_object_add(obj, "quota", quota_to_json(&s->quota));
	json_object_object_add(wmarks, "metric",
			       json_object_new_string(vr_wmark_metric_name(s->wmarks.metric)));
	json_object_object_add(obj, "watermarks",
			       fields_to_json(wmarks, &vr_policy_wmarks_desc, &s->wmarks));
	for (guint i = 0; i < s->nr_filters && i < VR_MAX_SCHEME_FILTERS; i++) {
		struct json_object *f = json_object_new_object();

		json_object_object_add(
			f, "type", json_object_new_string(vr_filter_type_name(s->filters[i].type)));
		json_object_object_add(f, "matching",
				       json_object_new_boolean(s->filters[i].matching));
		json_object_array_add(filters, f);
	}
	json_object_object_add(obj, "filters", filters);
	return obj;
}

char *vr_policy_to_json(const struct vr_policy *p)
{
	g_autoptr(json_object) root = json_object_new_object();
	struct json_object *schemes = json_object_new_array();

	if (p->profile)
		json_object_object_add(root, "profile", json_object_new_string(p->profile));
	json_object_object_add(root, "monitoring",
			       fields_to_json(json_object_new_object(), &vr_policy_monitoring_desc,
					      &p->attrs));
	for (guint i = 0; p->schemes && i < p->schemes->len; i++)
		json_object_array_add(schemes, scheme_to_json(g_ptr_array_index(p->schemes, i)));
	json_object_object_add(root, "schemes", schemes);
	return g_strdup_printf("%s\n",
			       json_object_to_json_string_ext(
				       root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						     JSON_C_TO_STRING_NOSLASHESCAPE));
}
