/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy (docs/policy.md): the built-in profiles, a policy's copies, the
 * engine's validators with their messages rewritten to name JSON paths, and
 * the atomic application of a policy to a monitoring context. Pure. The
 * document's text is read in policy-parse.c and written in policy-write.c;
 * the members of its objects are in policy-fields.c.
 */
#include "policy.h"

#include <string.h>

#include "json-doc.h"
#include "policy-private.h"

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

gboolean vr_policy_validate_attrs(const struct vr_monitor_attrs *attrs, GError **error)
{
	g_autoptr(GError) local = NULL;

	if (!vr_monitor_attrs_validate(attrs, &local))
		return monitoring_error(error, local->message);
	return TRUE;
}

gboolean vr_policy_validate_scheme(const struct vr_scheme *s, const char *path, GError **error)
{
	g_autoptr(GError) local = NULL;

	if (!vr_scheme_validate(s, &local))
		return scheme_error(error, local->message, path, s->name);
	return TRUE;
}

/* Is @name used by one of the first @nr @schemes? Error at @path if so. */
gboolean vr_policy_check_unique_name(struct vr_scheme *const *schemes, guint nr, const char *name,
				     const char *path, GError **error)
{
	for (guint i = 0; i < nr; i++)
		if (g_strcmp0(schemes[i]->name, name) == 0)
			return vr_policy_invalid(error, path, "'%s' is already used by schemes[%u]",
						 name, i);
	return TRUE;
}

/* ---- applying ---- */

/* Everything vr_ctx_set_attrs() and vr_ctx_set_schemes() check of @p alone. */
static gboolean policy_validate(const struct vr_policy *p, GError **error)
{
	if (!vr_policy_validate_attrs(&p->attrs, error))
		return FALSE;
	if (!p->schemes)
		return vr_policy_invalid(error, "schemes", "missing");
	for (guint i = 0; i < p->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(p->schemes, i);
		g_autofree char *path = vr_json_path_index("schemes", i);
		g_autofree char *npath = vr_json_path_member(path, "name");

		if (!vr_policy_validate_scheme(s, path, error) ||
		    !vr_policy_check_unique_name((struct vr_scheme *const *)p->schemes->pdata, i,
						 s->name, npath, error))
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
		return vr_policy_invalid(error, "schemes", "%s", local->message);
	}
	return TRUE;
}
