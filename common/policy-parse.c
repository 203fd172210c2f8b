/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a policy document (docs/policy.md): text in, struct vr_policy out,
 * with the JSON path of the problem in every error.
 *
 * Parsing is two steps. json-doc.c checks the syntax strictly (json-c, and
 * what it lets through silently: integers beyond 64 bits, members given
 * twice, single-quoted strings); then the tree is read into a copy of the
 * profile, object by object, each object's integer fields from a table
 * (policy-fields.c), and each object checked by the engine's own validators
 * (vr_monitor_attrs_validate(), vr_scheme_validate()) whose messages are
 * rewritten to name JSON paths (policy.c).
 */
#include "policy.h"

#include <string.h>

#include "json-doc.h"
#include "policy-private.h"

/* ---- reading the tree ---- */

/**
 * struct parser - what reading the tree needs besides the tree.
 * @big_integers: JSON path -> literal of each integer json-c saturated
 *		(beyond the 64-bit range), from the scanner.
 * @base:	the profile the document starts from (its schemes are the
 *		bases of same-named schemes).
 */
struct parser {
	GHashTable *big_integers;
	const struct vr_policy *base;
};

/**
 * read_uint() - @v as an integer in [@min, @max] into @out; errors name
 * @path. Refuses other types, fractions, negatives and too large values,
 * showing the literal json-c saturated when there is one.
 */
static gboolean read_uint(const struct parser *ps, struct json_object *v, const char *path,
			  uint64_t min, uint64_t max, uint64_t *out, GError **error)
{
	const char *big = g_hash_table_lookup(ps->big_integers, path);
	int64_t i64;
	uint64_t u64;

	if (!json_object_is_type(v, json_type_int))
		return vr_policy_invalid(error, path, "expected a non-negative integer (got %s)",
					 vr_json_describe(v));
	i64 = json_object_get_int64(v);
	if (i64 < 0) {
		if (big)
			return vr_policy_invalid(error, path,
						 "expected a non-negative integer (got %s)", big);
		return vr_policy_invalid(error, path,
					 "expected a non-negative integer (got %" G_GINT64_FORMAT
					 ")",
					 i64);
	}
	u64 = json_object_get_uint64(v);
	if (big)
		return vr_policy_invalid(error, path, "%s is above the maximum %" G_GUINT64_FORMAT,
					 big, max);
	if (u64 > max)
		return vr_policy_invalid(error, path,
					 "%" G_GUINT64_FORMAT
					 " is above the maximum %" G_GUINT64_FORMAT,
					 u64, max);
	if (u64 < min)
		return vr_policy_invalid(error, path,
					 "%" G_GUINT64_FORMAT
					 " is below the minimum %" G_GUINT64_FORMAT,
					 u64, min);
	*out = u64;
	return TRUE;
}

/* @v as a string without NUL, in UTF-8; borrowed from @v. */
static gboolean read_string(struct json_object *v, const char *path, const char **out,
			    GError **error)
{
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return vr_policy_invalid(error, path, "expected a string (got %s)",
					 vr_json_describe(v));
	s = json_object_get_string(v);
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		return vr_policy_invalid(error, path, "the string contains a NUL character");
	if (!g_utf8_validate(s, -1, NULL))
		return vr_policy_invalid(error, path, "the string is not valid UTF-8");
	*out = s;
	return TRUE;
}

/* Member @name of @obj as a string; an error if missing. */
static gboolean read_required_string(struct json_object *obj, const char *path, const char *name,
				     const char *why, const char **out, GError **error)
{
	g_autofree char *mpath = vr_json_path_member(path, name);
	struct json_object *v;

	if (!json_object_object_get_ex(obj, name, &v))
		return vr_policy_invalid(error, mpath, "missing (%s)", why);
	return read_string(v, mpath, out, error);
}

/**
 * read_object() - check that @v is an object with only the members @d allows,
 * and read @d's integer members that are present into @base.
 */
static gboolean read_object(const struct parser *ps, struct json_object *v, const char *path,
			    const struct vr_policy_object_desc *d, void *base, GError **error)
{
	if (!json_object_is_type(v, json_type_object))
		return vr_policy_invalid(error, path, "expected an object (got %s)",
					 vr_json_describe(v));
	json_object_object_foreach(v, key, member)
	{
		(void)member;
		if (!vr_policy_desc_has(d, key)) {
			g_autofree char *mpath = vr_json_path_member(path, key);
			g_autofree char *names = vr_policy_desc_names(d);

			return vr_policy_invalid(error, mpath,
						 "unknown member (expected one of %s)", names);
		}
	}
	for (size_t i = 0; i < d->nr_ints; i++) {
		const struct vr_policy_int_field *f = &d->ints[i];
		g_autofree char *mpath = NULL;
		struct json_object *m;
		uint64_t value = 0;

		if (!json_object_object_get_ex(v, f->name, &m))
			continue;
		mpath = vr_json_path_member(path, f->name);
		if (!read_uint(ps, m, mpath, f->min, vr_policy_int_kind_max(f->kind), &value,
			       error))
			return FALSE;
		vr_policy_field_set(f, base, value);
	}
	return TRUE;
}

/**
 * member() - member @name of @obj, and its path under @path (owned), when
 * present. Return: FALSE when absent (a JSON null is present, as NULL).
 */
static gboolean member(struct json_object *obj, const char *path, const char *name,
		       struct json_object **v, char **mpath)
{
	if (!json_object_object_get_ex(obj, name, v))
		return FALSE;
	*mpath = vr_json_path_member(path, name);
	return TRUE;
}

static const char *action_name_at(guint i)
{
	return vr_action_name((enum vr_action)i);
}

static const char *goal_metric_name_at(guint i)
{
	return vr_goal_metric_name((enum vr_goal_metric)i);
}

static const char *wmark_metric_name_at(guint i)
{
	return vr_wmark_metric_name((enum vr_wmark_metric)i);
}

static const char *charge_basis_name_at(guint i)
{
	return vr_charge_basis_name((enum vr_charge_basis)i);
}

/* "a, b, c": the names of the values 0, 1, ... up to the first "unknown". */
static char *enum_names(const char *(*name_at)(guint))
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < 64 && strcmp(name_at(i), "unknown") != 0; i++)
		g_string_append_printf(s, "%s%s", i ? ", " : "", name_at(i));
	return g_string_free(s, FALSE);
}

static gboolean unknown_name(GError **error, const char *path, const char *what, const char *name,
			     const char *(*name_at)(guint))
{
	g_autofree char *names = enum_names(name_at);

	return vr_policy_invalid(error, path, "unknown %s '%s' (expected one of %s)", what, name,
				 names);
}

static gboolean parse_monitoring(const struct parser *ps, struct json_object *v, const char *path,
				 struct vr_monitor_attrs *attrs, GError **error)
{
	struct vr_monitor_attrs a = *attrs;

	if (!read_object(ps, v, path, &vr_policy_monitoring_desc, &a, error) ||
	    !vr_policy_validate_attrs(&a, error))
		return FALSE;
	*attrs = a;
	return TRUE;
}

static gboolean parse_goal(const struct parser *ps, struct json_object *v, const char *path,
			   struct vr_quota_goal *g, GError **error)
{
	const char *why = "a goal needs a metric and a target";
	const char *metric;

	if (!read_object(ps, v, path, &vr_policy_goal_desc, g, error) ||
	    !read_required_string(v, path, "metric", why, &metric, error))
		return FALSE;
	if (!vr_goal_metric_from_name(metric, &g->metric)) {
		g_autofree char *mpath = vr_json_path_member(path, "metric");

		return unknown_name(error, mpath, "metric", metric, goal_metric_name_at);
	}
	if (!json_object_object_get_ex(v, "target", NULL)) {
		g_autofree char *mpath = vr_json_path_member(path, "target");

		return vr_policy_invalid(error, mpath, "missing (%s)", why);
	}
	return TRUE;
}

/* The goals array @v replaces @q's goals. */
static gboolean parse_goals(const struct parser *ps, struct json_object *v, const char *path,
			    struct vr_quota *q, GError **error)
{
	struct vr_quota_goal goals[VR_MAX_QUOTA_GOALS] = { 0 };
	size_t nr;

	if (!json_object_is_type(v, json_type_array))
		return vr_policy_invalid(error, path, "expected an array (got %s)",
					 vr_json_describe(v));
	nr = json_object_array_length(v);
	if (nr > VR_MAX_QUOTA_GOALS)
		return vr_policy_invalid(error, path, "at most %d goals are allowed (got %zu)",
					 VR_MAX_QUOTA_GOALS, nr);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(path, i);

		if (!parse_goal(ps, json_object_array_get_idx(v, i), ipath, &goals[i], error))
			return FALSE;
	}
	memcpy(q->goals, goals, sizeof(goals));
	q->nr_goals = (guint)nr;
	return TRUE;
}

static gboolean parse_quota(const struct parser *ps, struct json_object *v, const char *path,
			    struct vr_quota *q, GError **error)
{
	g_autofree char *wpath = NULL, *gpath = NULL, *cpath = NULL;
	struct json_object *m;
	const char *charge;

	if (!read_object(ps, v, path, &vr_policy_quota_desc, q, error))
		return FALSE;
	if (member(v, path, "weights", &m, &wpath) &&
	    !read_object(ps, m, wpath, &vr_policy_weights_desc, q, error))
		return FALSE;
	if (member(v, path, "goals", &m, &gpath) && !parse_goals(ps, m, gpath, q, error))
		return FALSE;
	if (member(v, path, "charge", &m, &cpath)) {
		if (!read_string(m, cpath, &charge, error))
			return FALSE;
		if (!vr_charge_basis_from_name(charge, &q->charge))
			return unknown_name(error, cpath, "charge basis", charge,
					    charge_basis_name_at);
	}
	return TRUE;
}

static gboolean parse_wmarks(const struct parser *ps, struct json_object *v, const char *path,
			     struct vr_watermarks *w, GError **error)
{
	g_autofree char *mpath = NULL;
	struct json_object *m;
	const char *metric;

	if (!read_object(ps, v, path, &vr_policy_wmarks_desc, w, error))
		return FALSE;
	if (member(v, path, "metric", &m, &mpath)) {
		if (!read_string(m, mpath, &metric, error))
			return FALSE;
		if (!vr_wmark_metric_from_name(metric, &w->metric))
			return unknown_name(error, mpath, "metric", metric, wmark_metric_name_at);
	}
	return TRUE;
}

static const char *filter_type_name_at(guint i)
{
	return vr_filter_type_name((enum vr_filter_type)i);
}

/* A filter: its type (required) and whether it takes out the pages of that
 * type (matching, default true) or the others. */
static gboolean parse_filter(const struct parser *ps, struct json_object *v, const char *path,
			     struct vr_scheme_filter *f, GError **error)
{
	g_autofree char *mpath = NULL;
	struct json_object *m;
	const char *type;

	if (!read_object(ps, v, path, &vr_policy_filter_desc, NULL, error) ||
	    !read_required_string(v, path, "type", "a filter needs a type", &type, error))
		return FALSE;
	if (!vr_filter_type_from_name(type, &f->type)) {
		g_autofree char *tpath = vr_json_path_member(path, "type");

		return unknown_name(error, tpath, "filter type", type, filter_type_name_at);
	}
	f->matching = true;
	if (member(v, path, "matching", &m, &mpath)) {
		if (!json_object_is_type(m, json_type_boolean))
			return vr_policy_invalid(error, mpath, "expected true or false (got %s)",
						 vr_json_describe(m));
		f->matching = json_object_get_boolean(m);
	}
	return TRUE;
}

/* The filters array @v replaces @s's filters. */
static gboolean parse_filters(const struct parser *ps, struct json_object *v, const char *path,
			      struct vr_scheme *s, GError **error)
{
	struct vr_scheme_filter filters[VR_MAX_SCHEME_FILTERS] = { 0 };
	size_t nr;

	if (!json_object_is_type(v, json_type_array))
		return vr_policy_invalid(error, path, "expected an array (got %s)",
					 vr_json_describe(v));
	nr = json_object_array_length(v);
	if (nr > VR_MAX_SCHEME_FILTERS)
		return vr_policy_invalid(error, path, "at most %d filters are allowed (got %zu)",
					 VR_MAX_SCHEME_FILTERS, nr);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(path, i);

		if (!parse_filter(ps, json_object_array_get_idx(v, i), ipath, &filters[i], error))
			return FALSE;
	}
	memcpy(s->filters, filters, sizeof(filters));
	s->nr_filters = (guint)nr;
	return TRUE;
}

static const struct vr_scheme *base_scheme(const struct vr_policy *base, const char *name)
{
	for (guint i = 0; i < base->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(base->schemes, i);

		if (g_strcmp0(s->name, name) == 0)
			return s;
	}
	return NULL;
}

/**
 * parse_scheme() - the scheme at @path: its base is the profile's scheme of
 * the same name, or vr_scheme_new(); the members present override it.
 * @before, @nr_before: the schemes read so far (names must be unique).
 */
static struct vr_scheme *parse_scheme(const struct parser *ps, struct json_object *v,
				      const char *path, struct vr_scheme *const *before,
				      guint nr_before, GError **error)
{
	const char *why = "a scheme needs a name and an action";
	g_autoptr(vr_scheme) s = NULL;
	g_autofree char *npath = vr_json_path_member(path, "name");
	g_autofree char *ppath = NULL, *qpath = NULL, *wpath = NULL, *fpath = NULL;
	const struct vr_scheme *base;
	const char *name, *action_name;
	enum vr_action action;
	struct json_object *m;

	if (!read_object(ps, v, path, &vr_policy_scheme_desc, NULL, error) ||
	    !read_required_string(v, path, "name", why, &name, error) ||
	    !vr_policy_check_unique_name(before, nr_before, name, npath, error) ||
	    !read_required_string(v, path, "action", why, &action_name, error))
		return NULL;
	if (!vr_action_from_name(action_name, &action)) {
		g_autofree char *apath = vr_json_path_member(path, "action");

		unknown_name(error, apath, "action", action_name, action_name_at);
		return NULL;
	}
	base = base_scheme(ps->base, name);
	s = base ? vr_scheme_copy(base) : vr_scheme_new(name, action);
	s->action = action;
	if ((member(v, path, "pattern", &m, &ppath) &&
	     !read_object(ps, m, ppath, &vr_policy_pattern_desc, &s->pattern, error)) ||
	    (member(v, path, "quota", &m, &qpath) &&
	     !parse_quota(ps, m, qpath, &s->quota, error)) ||
	    (member(v, path, "watermarks", &m, &wpath) &&
	     !parse_wmarks(ps, m, wpath, &s->wmarks, error)) ||
	    (member(v, path, "filters", &m, &fpath) && !parse_filters(ps, m, fpath, s, error)))
		return NULL;
	if (!vr_policy_validate_scheme(s, path, error))
		return NULL;
	return g_steal_pointer(&s);
}

static GPtrArray *parse_schemes(const struct parser *ps, struct json_object *v, const char *path,
				GError **error)
{
	g_autoptr(GPtrArray) schemes = NULL;
	size_t nr;

	if (!json_object_is_type(v, json_type_array)) {
		vr_policy_invalid(error, path, "expected an array (got %s)", vr_json_describe(v));
		return NULL;
	}
	schemes = g_ptr_array_new_with_free_func((GDestroyNotify)vr_scheme_free);
	nr = json_object_array_length(v);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(path, i);
		struct vr_scheme *s;

		s = parse_scheme(ps, json_object_array_get_idx(v, i), ipath,
				 (struct vr_scheme *const *)schemes->pdata, schemes->len, error);
		if (!s)
			return NULL;
		g_ptr_array_add(schemes, s);
	}
	return g_steal_pointer(&schemes);
}

static struct vr_policy *parse_document(struct parser *ps, struct json_object *root, GError **error)
{
	g_autoptr(vr_policy) p = NULL;
	g_autofree char *ppath = NULL, *mpath = NULL, *spath = NULL;
	struct json_object *v;
	const char *profile = NULL;
	GPtrArray *schemes;

	if (!read_object(ps, root, "", &vr_policy_document_desc, NULL, error))
		return NULL;
	if (member(root, "", "profile", &v, &ppath) && !read_string(v, ppath, &profile, error))
		return NULL;
	p = vr_policy_new_profile(profile, error);
	if (!p)
		return NULL;
	ps->base = p;
	if (member(root, "", "monitoring", &v, &mpath) &&
	    !parse_monitoring(ps, v, mpath, &p->attrs, error))
		return NULL;
	if (member(root, "", "schemes", &v, &spath)) {
		schemes = parse_schemes(ps, v, spath, error);
		if (!schemes)
			return NULL;
		g_ptr_array_unref(p->schemes);
		p->schemes = schemes;
	}
	ps->base = NULL;
	return g_steal_pointer(&p);
}

struct vr_policy *vr_policy_parse(const char *text, gssize len, GError **error)
{
	const struct vr_json_errors errs = { VR_POLICY_ERROR, VR_POLICY_ERROR_SYNTAX,
					     VR_POLICY_ERROR_INVALID };
	g_autoptr(GHashTable) big = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autoptr(json_object) root = NULL;
	struct parser ps = { .big_integers = big };

	g_return_val_if_fail(text != NULL || len == 0, NULL);
	if (!vr_json_doc_parse(text, len, &errs, &root, big, error))
		return NULL;
	return parse_document(&ps, root, error);
}
