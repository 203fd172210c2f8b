/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy document (docs/policy.md): the built-in profiles, parsing with
 * the JSON path of the problem in every error, serialization, and atomic
 * application to a monitoring context. Pure: text in, struct out.
 *
 * Parsing is two steps. json-doc.c checks the syntax strictly (json-c, and
 * what it lets through silently: integers beyond 64 bits, members given
 * twice, single-quoted strings); then the tree is read into a copy of the profile, object by
 * object, each object's integer fields from a table, and each object checked
 * by the engine's own validators (vr_monitor_attrs_validate(),
 * vr_scheme_validate()) whose messages are rewritten to name JSON paths.
 */
#include "policy.h"

#include <stddef.h>
#include <string.h>

#include "json-doc.h"

/* clang-format off */
G_DEFINE_QUARK(vr-policy-error-quark, vr_policy_error)
/* clang-format on */

/* ---- the built-in profiles (SEMANTICS.md §3) ---- */

/* The one scheme of the DAMON_RECLAIM profiles, named as the kernel module. */
#define RECLAIM_SCHEME_NAME "damon-reclaim"
/* Quota charge window: 1 s (quota_reset_interval_ms), in both profiles. */
#define RECLAIM_RESET_INTERVAL_MS 1000
/* Watermarks on free memory per thousand, read every 5 s: reclaim while free
 * memory is between 20% and 50% (start below 40%), step aside below 20%
 * where the kernel's own reclaim is better placed. */
#define RECLAIM_WMARK_INTERVAL_US (5 * G_USEC_PER_SEC)
#define RECLAIM_WMARK_HIGH	  500
#define RECLAIM_WMARK_MID	  400
#define RECLAIM_WMARK_LOW	  200

#define DEFAULT_PROFILE "damon-reclaim-2021"

/**
 * struct profile - what differs between the profiles.
 * @name:	the profile's name in documents.
 * @min_age_us:	a region's access count must have held this long for it to
 *		be paged out.
 * @max_nr_accesses: the most accesses per aggregation interval a region may
 *		show and still be paged out (0: only regions never seen
 *		accessed).
 * @young_filter: page out only the pages not accessed since the last check
 *		(a young filter): regions with some hot pages give their cold
 *		ones.
 * @weight_nr_accesses: prioritization weight of the access frequency (the
 *		age's is 1).
 * @quota_ms:	action time allowed per window, in ms.
 * @quota_sz:	bytes allowed per window.
 *
 * All profiles monitor with the published attributes
 * (VR_MONITOR_ATTRS_DEFAULT) and share the window and the watermarks above.
 */
struct profile {
	const char *name;
	uint64_t min_age_us;
	uint32_t max_nr_accesses;
	bool young_filter;
	uint32_t weight_nr_accesses;
	uint64_t quota_ms;
	uint64_t quota_sz;
};

static const struct profile profiles[] = {
	{
		/* The published 2021 values: vreclaim's default. */
		.name = DEFAULT_PROFILE,
		.min_age_us = 5 * G_USEC_PER_SEC,
		.quota_ms = 100,
		.quota_sz = 1ULL << 30,
	},
	{
		/* Today's kernel module: more conservative (its quota goals
		 * are off by default; a document can add them). */
		.name = "damon-reclaim-6.12",
		.min_age_us = 120 * G_USEC_PER_SEC,
		.quota_ms = 10,
		.quota_sz = 128ULL << 20,
	},
	{
		/* Page-level selection under the regions' choice, for memory
		 * whose hot and cold pages are interleaved (caches, heaps,
		 * databases): a region seen accessed in up to a fifth of the
		 * samples of the default attributes (4 of 20) still gives
		 * the pages not accessed since the last check, the least
		 * accessed and oldest regions first. Any age: a mixed
		 * region's access count changes from one aggregation to the
		 * next, which restarts its age, so a minimum age would never
		 * be reached; the young filter is the page-level age (a page
		 * goes when it was not accessed between two passes). */
		.name = "page-level",
		.min_age_us = 0,
		.max_nr_accesses = 4,
		.young_filter = true,
		.weight_nr_accesses = 1,
		.quota_ms = 100,
		.quota_sz = 1ULL << 30,
	},
};

static const char *const profile_names[] = { "damon-reclaim-2021", "damon-reclaim-6.12",
					     "page-level", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(profile_names) == G_N_ELEMENTS(profiles) + 1);

const char *const *vr_policy_profile_names(void)
{
	return profile_names;
}

static const struct profile *profile_lookup(const char *name)
{
	for (guint i = 0; i < G_N_ELEMENTS(profiles); i++)
		if (g_strcmp0(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

static struct vr_scheme *reclaim_scheme_new(const struct profile *pr)
{
	struct vr_scheme *s = vr_scheme_new(RECLAIM_SCHEME_NAME, VR_ACTION_PAGEOUT);

	s->pattern.min_sz_bytes = VR_PAGE_SIZE;
	s->pattern.min_nr_accesses = 0;
	s->pattern.max_nr_accesses = pr->max_nr_accesses;
	s->pattern.min_age_us = pr->min_age_us;
	s->quota.ms = pr->quota_ms;
	s->quota.sz = pr->quota_sz;
	s->quota.reset_interval_ms = RECLAIM_RESET_INTERVAL_MS;
	s->quota.weight_sz = 0;
	s->quota.weight_nr_accesses = pr->weight_nr_accesses;
	s->quota.weight_age = 1;
	if (pr->young_filter)
		s->filters[s->nr_filters++] =
			(struct vr_scheme_filter){ .type = VR_FILTER_YOUNG, .matching = true };
	s->wmarks.metric = VR_WMARK_FREE_MEM_RATE;
	s->wmarks.interval_us = RECLAIM_WMARK_INTERVAL_US;
	s->wmarks.high = RECLAIM_WMARK_HIGH;
	s->wmarks.mid = RECLAIM_WMARK_MID;
	s->wmarks.low = RECLAIM_WMARK_LOW;
	return s;
}

struct vr_policy *vr_policy_new_profile(const char *name, GError **error)
{
	const struct profile *pr = profile_lookup(name ? name : DEFAULT_PROFILE);
	struct vr_policy *p;

	if (!pr) {
		g_autofree char *known = g_strjoinv(", ", (char **)profile_names);

		g_set_error(error, VR_POLICY_ERROR, VR_POLICY_ERROR_INVALID,
			    "profile: unknown profile '%s' (expected one of %s)", name, known);
		return NULL;
	}
	p = g_new0(struct vr_policy, 1);
	p->profile = g_strdup(pr->name);
	p->attrs = VR_MONITOR_ATTRS_DEFAULT;
	p->schemes = g_ptr_array_new_with_free_func((GDestroyNotify)vr_scheme_free);
	g_ptr_array_add(p->schemes, reclaim_scheme_new(pr));
	return p;
}

struct vr_policy *vr_policy_copy(const struct vr_policy *p)
{
	struct vr_policy *c = g_new0(struct vr_policy, 1);

	c->profile = g_strdup(p->profile);
	c->attrs = p->attrs;
	c->schemes = g_ptr_array_new_with_free_func((GDestroyNotify)vr_scheme_free);
	for (guint i = 0; i < p->schemes->len; i++)
		g_ptr_array_add(c->schemes, vr_scheme_copy(g_ptr_array_index(p->schemes, i)));
	return c;
}

void vr_policy_free(struct vr_policy *p)
{
	if (!p)
		return;
	g_free(p->profile);
	if (p->schemes)
		g_ptr_array_unref(p->schemes);
	g_free(p);
}

/* ---- JSON paths and errors ---- */

/* Sets @error to "<path>: <message>". Return: FALSE. */
#define invalid(error, path, ...)                                                                  \
	vr_json_set_error(error, VR_POLICY_ERROR, VR_POLICY_ERROR_INVALID, path, __VA_ARGS__)

/* ---- the engine's validator messages, in JSON paths ---- */

/* A C field name as the validators spell it, and its name in documents. */
struct name_map {
	const char *c_name;
	const char *json_name;
};

/**
 * struct translation - how to rewrite a validator's message about one object.
 * @roots:	NULL-terminated: the names a message can start with (a field
 *		name, or its first component before '.' or '[').
 * @map:	C names that documents spell differently; @nr_map entries.
 * @strip:	a prefix of the validator's to drop, or NULL.
 */
struct translation {
	const char *const *roots;
	const struct name_map *map;
	size_t nr_map;
	const char *strip;
};

static const char *const monitoring_roots[] = {
	"sample_interval_us", "aggr_interval_us", "ops_update_interval_us",
	"min_nr_regions",     "max_nr_regions",	  NULL,
};

static const char *const scheme_roots[] = {
	"name", "action", "pattern", "quota", "watermarks", NULL,
};

static const struct name_map scheme_names[] = {
	{ "pattern.min_sz_bytes", "pattern.min_size" },
	{ "pattern.max_sz_bytes", "pattern.max_size" },
	{ "quota.weight_sz", "quota.weights.sz" },
	{ "quota.weight_nr_accesses", "quota.weights.nr_accesses" },
	{ "quota.weight_age", "quota.weights.age" },
};

static gboolean is_name_char(char c)
{
	return g_ascii_isalnum(c) || c == '_' || c == '.' || c == '[' || c == ']';
}

static gboolean has_root(const char *name, const char *const *roots)
{
	for (; *roots; roots++) {
		size_t n = strlen(*roots);

		if (strncmp(name, *roots, n) == 0 &&
		    (name[n] == '\0' || name[n] == '.' || name[n] == '['))
			return TRUE;
	}
	return FALSE;
}

static const char *json_name(const char *c_name, const struct translation *tr)
{
	for (size_t i = 0; i < tr->nr_map; i++)
		if (strcmp(tr->map[i].c_name, c_name) == 0)
			return tr->map[i].json_name;
	return c_name;
}

/**
 * translated_error() - set @error (VR_POLICY_ERROR_INVALID) from @msg, a
 * validator's message about the object at JSON path @prefix.
 *
 * The field @msg starts with becomes its full JSON path, and the other C
 * names it mentions become their document names:
 * "pattern.min_sz_bytes (8192) is above pattern.max_sz_bytes (4096)" about
 * "schemes[0]" becomes "schemes[0].pattern.min_size (8192) is above
 * pattern.max_size (4096)". A message that starts with no field gets
 * "<prefix>: " in front, so every message starts with a path.
 */
static gboolean translated_error(GError **error, const char *msg, const char *prefix,
				 const struct translation *tr)
{
	g_autoptr(GString) out = g_string_new(NULL);
	const char *p = msg;
	gboolean led = FALSE;

	if (tr->strip && g_str_has_prefix(p, tr->strip))
		p += strlen(tr->strip);
	msg = p;
	while (*p) {
		const char *start = p;
		g_autofree char *name = NULL;
		size_t n;

		if (!is_name_char(*p)) {
			g_string_append_c(out, *p++);
			continue;
		}
		while (is_name_char(*p))
			p++;
		for (n = (size_t)(p - start); n > 0 && start[n - 1] == '.'; n--)
			; /* a full stop ends a sentence, not a name */
		name = g_strndup(start, n);
		if (start == msg && has_root(name, tr->roots)) {
			g_string_append_printf(out, "%s.%s", prefix, json_name(name, tr));
			led = TRUE;
		} else {
			g_string_append(out, json_name(name, tr));
		}
		g_string_append_len(out, start + n, p - (start + n));
	}
	if (!led)
		g_string_prepend(g_string_prepend(out, ": "), prefix);
	g_set_error_literal(error, VR_POLICY_ERROR, VR_POLICY_ERROR_INVALID, out->str);
	return FALSE;
}

static gboolean monitoring_error(GError **error, const char *msg)
{
	const struct translation tr = { .roots = monitoring_roots };

	return translated_error(error, msg, "monitoring", &tr);
}

static gboolean scheme_error(GError **error, const char *msg, const char *path, const char *name)
{
	g_autofree char *strip = g_strdup_printf("scheme '%s': ", name ? name : "");
	const struct translation tr = {
		.roots = scheme_roots,
		.map = scheme_names,
		.nr_map = G_N_ELEMENTS(scheme_names),
		.strip = strip,
	};

	return translated_error(error, msg, path, &tr);
}

static gboolean validate_attrs(const struct vr_monitor_attrs *attrs, GError **error)
{
	g_autoptr(GError) local = NULL;

	if (!vr_monitor_attrs_validate(attrs, &local))
		return monitoring_error(error, local->message);
	return TRUE;
}

static gboolean validate_scheme(const struct vr_scheme *s, const char *path, GError **error)
{
	g_autoptr(GError) local = NULL;

	if (!vr_scheme_validate(s, &local))
		return scheme_error(error, local->message, path, s->name);
	return TRUE;
}

/* Is @name used by one of the first @nr @schemes? Error at @path if so. */
static gboolean check_unique_name(struct vr_scheme *const *schemes, guint nr, const char *name,
				  const char *path, GError **error)
{
	for (guint i = 0; i < nr; i++)
		if (g_strcmp0(schemes[i]->name, name) == 0)
			return invalid(error, path, "'%s' is already used by schemes[%u]", name, i);
	return TRUE;
}

/* ---- integer fields, table-driven ---- */

enum int_kind {
	INT_U32,
	INT_U64,
};

/**
 * struct int_field - an integer member of a document object.
 * @name:	its name in the document.
 * @offset:	where it lives in the C struct the object is read into.
 * @kind:	the C type there (its maximum is the member's).
 * @min:	the smallest value the member takes alone (the validators
 *		check the rules between members).
 */
struct int_field {
	const char *name;
	size_t offset;
	enum int_kind kind;
	uint64_t min;
};

#define FIELD(type, member, name, kind, min)                                                       \
	{                                                                                          \
		name, offsetof(type, member), kind, min                                            \
	}

/* vr_monitor_attrs_validate()'s floor, checked here to name it in the message. */
#define MIN_NR_REGIONS 3

static const struct int_field monitoring_fields[] = {
	FIELD(struct vr_monitor_attrs, sample_interval_us, "sample_interval_us", INT_U64, 1),
	FIELD(struct vr_monitor_attrs, aggr_interval_us, "aggr_interval_us", INT_U64, 1),
	FIELD(struct vr_monitor_attrs, ops_update_interval_us, "ops_update_interval_us", INT_U64,
	      0),
	FIELD(struct vr_monitor_attrs, min_nr_regions, "min_nr_regions", INT_U32, MIN_NR_REGIONS),
	FIELD(struct vr_monitor_attrs, max_nr_regions, "max_nr_regions", INT_U32, MIN_NR_REGIONS),
};

static const struct int_field pattern_fields[] = {
	FIELD(struct vr_access_pattern, min_sz_bytes, "min_size", INT_U64, 0),
	FIELD(struct vr_access_pattern, max_sz_bytes, "max_size", INT_U64, 0),
	FIELD(struct vr_access_pattern, min_nr_accesses, "min_nr_accesses", INT_U32, 0),
	FIELD(struct vr_access_pattern, max_nr_accesses, "max_nr_accesses", INT_U32, 0),
	FIELD(struct vr_access_pattern, min_age_us, "min_age_us", INT_U64, 0),
	FIELD(struct vr_access_pattern, max_age_us, "max_age_us", INT_U64, 0),
};

static const struct int_field quota_fields[] = {
	FIELD(struct vr_quota, ms, "ms", INT_U64, 0),
	FIELD(struct vr_quota, sz, "sz", INT_U64, 0),
	FIELD(struct vr_quota, reset_interval_ms, "reset_interval_ms", INT_U64, 0),
};

static const struct int_field weight_fields[] = {
	FIELD(struct vr_quota, weight_sz, "sz", INT_U32, 0),
	FIELD(struct vr_quota, weight_nr_accesses, "nr_accesses", INT_U32, 0),
	FIELD(struct vr_quota, weight_age, "age", INT_U32, 0),
};

static const struct int_field goal_fields[] = {
	FIELD(struct vr_quota_goal, target, "target", INT_U64, 0),
};

static const struct int_field wmark_fields[] = {
	FIELD(struct vr_watermarks, interval_us, "interval_us", INT_U64, 0),
	FIELD(struct vr_watermarks, high, "high", INT_U64, 0),
	FIELD(struct vr_watermarks, mid, "mid", INT_U64, 0),
	FIELD(struct vr_watermarks, low, "low", INT_U64, 0),
};

/**
 * struct object_desc - the members an object of the document may have.
 * @others:	NULL-terminated: members read by hand (strings, nested
 *		objects and arrays), listed first in messages.
 * @ints:	integer members, read from the table; @nr_ints entries.
 */
struct object_desc {
	const char *const *others;
	const struct int_field *ints;
	size_t nr_ints;
};

#define OTHERS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NO_OTHERS   ((const char *const[]){ NULL })
#define INTS(table) .ints = (table), .nr_ints = G_N_ELEMENTS(table)

static const struct object_desc document_desc = { .others = OTHERS("profile", "monitoring",
								   "schemes") };
static const struct object_desc monitoring_desc = { NO_OTHERS, INTS(monitoring_fields) };
static const struct object_desc scheme_desc = {
	.others = OTHERS("name", "action", "pattern", "quota", "watermarks", "filters"),
};
static const struct object_desc pattern_desc = { NO_OTHERS, INTS(pattern_fields) };
static const struct object_desc quota_desc = { OTHERS("weights", "goals", "charge"),
					       INTS(quota_fields) };
static const struct object_desc weights_desc = { NO_OTHERS, INTS(weight_fields) };
static const struct object_desc goal_desc = { OTHERS("metric"), INTS(goal_fields) };
static const struct object_desc wmarks_desc = { OTHERS("metric"), INTS(wmark_fields) };
static const struct object_desc filter_desc = { .others = OTHERS("type", "matching") };

static uint64_t int_kind_max(enum int_kind kind)
{
	return kind == INT_U32 ? G_MAXUINT32 : G_MAXUINT64;
}

static uint64_t field_get(const struct int_field *f, const void *base)
{
	const char *p = (const char *)base + f->offset;

	return f->kind == INT_U32 ? *(const uint32_t *)p : *(const uint64_t *)p;
}

static void field_set(const struct int_field *f, void *base, uint64_t value)
{
	char *p = (char *)base + f->offset;

	if (f->kind == INT_U32)
		*(uint32_t *)p = (uint32_t)value;
	else
		*(uint64_t *)p = value;
}

static gboolean desc_has(const struct object_desc *d, const char *name)
{
	for (const char *const *o = d->others; *o; o++)
		if (strcmp(*o, name) == 0)
			return TRUE;
	for (size_t i = 0; i < d->nr_ints; i++)
		if (strcmp(d->ints[i].name, name) == 0)
			return TRUE;
	return FALSE;
}

static char *desc_names(const struct object_desc *d)
{
	GString *s = g_string_new(NULL);

	for (const char *const *o = d->others; *o; o++)
		g_string_append_printf(s, "%s%s", s->len ? ", " : "", *o);
	for (size_t i = 0; i < d->nr_ints; i++)
		g_string_append_printf(s, "%s%s", s->len ? ", " : "", d->ints[i].name);
	return g_string_free(s, FALSE);
}

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
		return invalid(error, path, "expected a non-negative integer (got %s)",
			       vr_json_describe(v));
	i64 = json_object_get_int64(v);
	if (i64 < 0) {
		if (big)
			return invalid(error, path, "expected a non-negative integer (got %s)",
				       big);
		return invalid(error, path,
			       "expected a non-negative integer (got %" G_GINT64_FORMAT ")", i64);
	}
	u64 = json_object_get_uint64(v);
	if (big)
		return invalid(error, path, "%s is above the maximum %" G_GUINT64_FORMAT, big, max);
	if (u64 > max)
		return invalid(error, path,
			       "%" G_GUINT64_FORMAT " is above the maximum %" G_GUINT64_FORMAT, u64,
			       max);
	if (u64 < min)
		return invalid(error, path,
			       "%" G_GUINT64_FORMAT " is below the minimum %" G_GUINT64_FORMAT, u64,
			       min);
	*out = u64;
	return TRUE;
}

/* @v as a string without NUL, in UTF-8; borrowed from @v. */
static gboolean read_string(struct json_object *v, const char *path, const char **out,
			    GError **error)
{
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return invalid(error, path, "expected a string (got %s)", vr_json_describe(v));
	s = json_object_get_string(v);
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		return invalid(error, path, "the string contains a NUL character");
	if (!g_utf8_validate(s, -1, NULL))
		return invalid(error, path, "the string is not valid UTF-8");
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
		return invalid(error, mpath, "missing (%s)", why);
	return read_string(v, mpath, out, error);
}

/**
 * read_object() - check that @v is an object with only the members @d allows,
 * and read @d's integer members that are present into @base.
 */
static gboolean read_object(const struct parser *ps, struct json_object *v, const char *path,
			    const struct object_desc *d, void *base, GError **error)
{
	if (!json_object_is_type(v, json_type_object))
		return invalid(error, path, "expected an object (got %s)", vr_json_describe(v));
	json_object_object_foreach(v, key, member)
	{
		(void)member;
		if (!desc_has(d, key)) {
			g_autofree char *mpath = vr_json_path_member(path, key);
			g_autofree char *names = desc_names(d);

			return invalid(error, mpath, "unknown member (expected one of %s)", names);
		}
	}
	for (size_t i = 0; i < d->nr_ints; i++) {
		const struct int_field *f = &d->ints[i];
		g_autofree char *mpath = NULL;
		struct json_object *m;
		uint64_t value = 0;

		if (!json_object_object_get_ex(v, f->name, &m))
			continue;
		mpath = vr_json_path_member(path, f->name);
		if (!read_uint(ps, m, mpath, f->min, int_kind_max(f->kind), &value, error))
			return FALSE;
		field_set(f, base, value);
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

	return invalid(error, path, "unknown %s '%s' (expected one of %s)", what, name, names);
}

static gboolean parse_monitoring(const struct parser *ps, struct json_object *v, const char *path,
				 struct vr_monitor_attrs *attrs, GError **error)
{
	struct vr_monitor_attrs a = *attrs;

	if (!read_object(ps, v, path, &monitoring_desc, &a, error) || !validate_attrs(&a, error))
		return FALSE;
	*attrs = a;
	return TRUE;
}

static gboolean parse_goal(const struct parser *ps, struct json_object *v, const char *path,
			   struct vr_quota_goal *g, GError **error)
{
	const char *why = "a goal needs a metric and a target";
	const char *metric;

	if (!read_object(ps, v, path, &goal_desc, g, error) ||
	    !read_required_string(v, path, "metric", why, &metric, error))
		return FALSE;
	if (!vr_goal_metric_from_name(metric, &g->metric)) {
		g_autofree char *mpath = vr_json_path_member(path, "metric");

		return unknown_name(error, mpath, "metric", metric, goal_metric_name_at);
	}
	if (!json_object_object_get_ex(v, "target", NULL)) {
		g_autofree char *mpath = vr_json_path_member(path, "target");

		return invalid(error, mpath, "missing (%s)", why);
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
		return invalid(error, path, "expected an array (got %s)", vr_json_describe(v));
	nr = json_object_array_length(v);
	if (nr > VR_MAX_QUOTA_GOALS)
		return invalid(error, path, "at most %d goals are allowed (got %zu)",
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

	if (!read_object(ps, v, path, &quota_desc, q, error))
		return FALSE;
	if (member(v, path, "weights", &m, &wpath) &&
	    !read_object(ps, m, wpath, &weights_desc, q, error))
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

	if (!read_object(ps, v, path, &wmarks_desc, w, error))
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

	if (!read_object(ps, v, path, &filter_desc, NULL, error) ||
	    !read_required_string(v, path, "type", "a filter needs a type", &type, error))
		return FALSE;
	if (!vr_filter_type_from_name(type, &f->type)) {
		g_autofree char *tpath = vr_json_path_member(path, "type");

		return unknown_name(error, tpath, "filter type", type, filter_type_name_at);
	}
	f->matching = true;
	if (member(v, path, "matching", &m, &mpath)) {
		if (!json_object_is_type(m, json_type_boolean))
			return invalid(error, mpath, "expected true or false (got %s)",
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
		return invalid(error, path, "expected an array (got %s)", vr_json_describe(v));
	nr = json_object_array_length(v);
	if (nr > VR_MAX_SCHEME_FILTERS)
		return invalid(error, path, "at most %d filters are allowed (got %zu)",
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

	if (!read_object(ps, v, path, &scheme_desc, NULL, error) ||
	    !read_required_string(v, path, "name", why, &name, error) ||
	    !check_unique_name(before, nr_before, name, npath, error) ||
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
	     !read_object(ps, m, ppath, &pattern_desc, &s->pattern, error)) ||
	    (member(v, path, "quota", &m, &qpath) &&
	     !parse_quota(ps, m, qpath, &s->quota, error)) ||
	    (member(v, path, "watermarks", &m, &wpath) &&
	     !parse_wmarks(ps, m, wpath, &s->wmarks, error)) ||
	    (member(v, path, "filters", &m, &fpath) && !parse_filters(ps, m, fpath, s, error)))
		return NULL;
	if (!validate_scheme(s, path, error))
		return NULL;
	return g_steal_pointer(&s);
}

static GPtrArray *parse_schemes(const struct parser *ps, struct json_object *v, const char *path,
				GError **error)
{
	g_autoptr(GPtrArray) schemes = NULL;
	size_t nr;

	if (!json_object_is_type(v, json_type_array)) {
		invalid(error, path, "expected an array (got %s)", vr_json_describe(v));
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

	if (!read_object(ps, root, "", &document_desc, NULL, error))
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

/* ---- writing ---- */

static struct json_object *fields_to_json(struct json_object *obj, const struct int_field *fields,
					  size_t nr, const void *base)
{
	for (size_t i = 0; i < nr; i++)
		json_object_object_add(obj, fields[i].name,
				       json_object_new_uint64(field_get(&fields[i], base)));
	return obj;
}

static struct json_object *quota_to_json(const struct vr_quota *q)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *weights = json_object_new_object();
	struct json_object *goals = json_object_new_array();

	fields_to_json(obj, quota_fields, G_N_ELEMENTS(quota_fields), q);
	json_object_object_add(obj, "weights",
			       fields_to_json(weights, weight_fields, G_N_ELEMENTS(weight_fields),
					      q));
	for (guint i = 0; i < q->nr_goals && i < VR_MAX_QUOTA_GOALS; i++) {
		struct json_object *g = json_object_new_object();

		json_object_object_add(
			g, "metric",
			json_object_new_string(vr_goal_metric_name(q->goals[i].metric)));
		fields_to_json(g, goal_fields, G_N_ELEMENTS(goal_fields), &q->goals[i]);
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
			       fields_to_json(pattern, pattern_fields, G_N_ELEMENTS(pattern_fields),
					      &s->pattern));
	json_object_object_add(obj, "quota", quota_to_json(&s->quota));
	json_object_object_add(wmarks, "metric",
			       json_object_new_string(vr_wmark_metric_name(s->wmarks.metric)));
	json_object_object_add(obj, "watermarks",
			       fields_to_json(wmarks, wmark_fields, G_N_ELEMENTS(wmark_fields),
					      &s->wmarks));
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
			       fields_to_json(json_object_new_object(), monitoring_fields,
					      G_N_ELEMENTS(monitoring_fields), &p->attrs));
	for (guint i = 0; p->schemes && i < p->schemes->len; i++)
		json_object_array_add(schemes, scheme_to_json(g_ptr_array_index(p->schemes, i)));
	json_object_object_add(root, "schemes", schemes);
	return g_strdup_printf("%s\n",
			       json_object_to_json_string_ext(
				       root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						     JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* ---- applying ---- */

/* Everything vr_ctx_set_attrs() and vr_ctx_set_schemes() check of @p alone. */
static gboolean policy_validate(const struct vr_policy *p, GError **error)
{
	if (!validate_attrs(&p->attrs, error))
		return FALSE;
	if (!p->schemes)
		return invalid(error, "schemes", "missing");
	for (guint i = 0; i < p->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(p->schemes, i);
		g_autofree char *path = vr_json_path_index("schemes", i);
		g_autofree char *npath = vr_json_path_member(path, "name");

		if (!validate_scheme(s, path, error) ||
		    !check_unique_name((struct vr_scheme *const *)p->schemes->pdata, i, s->name,
				       npath, error))
			return FALSE;
	}
	return TRUE;
}

gboolean vr_policy_apply(const struct vr_policy *p, struct vr_ctx *ctx, GError **error)
{
	const struct vr_monitor_attrs old = *vr_ctx_attrs(ctx);
	g_autoptr(GError) local = NULL;

	/*
	 * Validated first, vr_ctx_set_schemes() cannot fail; vr_ctx_set_attrs()
	 * still can (a target with more ranges than max_nr_regions), so it goes
	 * first and its failure changes nothing.
	 */
	if (!policy_validate(p, error))
		return FALSE;
	if (!vr_ctx_set_attrs(ctx, &p->attrs, &local))
		return monitoring_error(error, local->message);
	if (!vr_ctx_set_schemes(ctx, (struct vr_scheme *const *)p->schemes->pdata, p->schemes->len,
				&local)) {
		/* Not reached while the checks above match set_schemes'. */
		vr_ctx_set_attrs(ctx, &old, NULL);
		return invalid(error, "schemes", "%s", local->message);
	}
	return TRUE;
}
