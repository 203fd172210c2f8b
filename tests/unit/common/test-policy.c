/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the policy document (common/policy.c, docs/policy.md): the
 * built-in profiles field by field, a full document, single-field overrides,
 * every kind of error with its code and JSON path, the JSON round trip, and
 * vr_policy_apply()'s atomicity on a context with a do-nothing access source.
 *
 * Documents in this file are written with ' for " (dq() swaps them back), so
 * they read like JSON; a literal single quote is written `.
 *
 * Criterion runs every test in its own re-executed process, where static data
 * lives at other addresses: parameter structs hold no pointers.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIB	     (1ULL << 20)
#define GIB	     (1ULL << 30)
#define US_PER_S     1000000ULL

/* ---- helpers ---- */

/* @doc with ' turned into " and ` into ': owned. */
static char *dq(const char *doc)
{
	char *s = g_strdup(doc);

	for (char *p = s; *p; p++) {
		if (*p == '\'')
			*p = '"';
		else if (*p == '`')
			*p = '\'';
	}
	return s;
}

static struct vr_policy *parse_ok(const char *doc)
{
	g_autofree char *text = dq(doc);
	g_autoptr(GError) err = NULL;
	struct vr_policy *p = vr_policy_parse(text, -1, &err);

	cr_assert_not_null(p, "expected the document to parse:\n%s\ngot: %s", text,
			   err ? err->message : "NULL without an error");
	cr_assert_null(err, "no error expected on success");
	return p;
}

static struct vr_policy *profile_ok(const char *name)
{
	g_autoptr(GError) err = NULL;
	struct vr_policy *p = vr_policy_new_profile(name, &err);

	cr_assert_not_null(p, "profile '%s' should exist, got: %s", name ? name : "(default)",
			   err ? err->message : "NULL without an error");
	return p;
}

static const struct vr_scheme *scheme_at(const struct vr_policy *p, guint i)
{
	cr_assert_lt(i, p->schemes->len, "expected at least %u schemes, got %u", i + 1,
		     p->schemes->len);
	return g_ptr_array_index(p->schemes, i);
}

static void assert_policy_error(const GError *err, int code, const char *prefix, const char *what)
{
	cr_assert_not_null(err, "%s: expected a VR_POLICY_ERROR (code %d), got no error", what,
			   code);
	cr_assert_eq(err->domain, VR_POLICY_ERROR,
		     "%s: expected the VR_POLICY_ERROR domain, got %s (%s)", what,
		     g_quark_to_string(err->domain), err->message);
	cr_assert_eq(err->code, code, "%s: expected error code %d, got %d (%s)", what, code,
		     err->code, err->message);
	cr_assert(g_str_has_prefix(err->message, prefix),
		  "%s: expected the message to start with\n  '%s'\ngot\n  '%s'", what, prefix,
		  err->message);
}

#define EQ(what, field, got, want)                                                                 \
	cr_assert_eq((uint64_t)(got), (uint64_t)(want),                                            \
		     "%s: %s: expected %" PRIu64 ", got %" PRIu64, what, field, (uint64_t)(want),  \
		     (uint64_t)(got))

static void assert_attrs_equal(const struct vr_monitor_attrs *got,
			       const struct vr_monitor_attrs *want, const char *what)
{
	EQ(what, "sample_interval_us", got->sample_interval_us, want->sample_interval_us);
	EQ(what, "aggr_interval_us", got->aggr_interval_us, want->aggr_interval_us);
	EQ(what, "ops_update_interval_us", got->ops_update_interval_us,
	   want->ops_update_interval_us);
	EQ(what, "min_nr_regions", got->min_nr_regions, want->min_nr_regions);
	EQ(what, "max_nr_regions", got->max_nr_regions, want->max_nr_regions);
}

/* The fields a document sets (not the engine's state, nor the stats). */
static void assert_schemes_equal(const struct vr_scheme *got, const struct vr_scheme *want,
				 const char *what)
{
	const struct vr_quota *gq = &got->quota, *wq = &want->quota;

	cr_assert_str_eq(got->name, want->name, "%s: name: expected '%s', got '%s'", what,
			 want->name, got->name);
	cr_assert_eq(got->action, want->action, "%s: action: expected %s, got %s", what,
		     vr_action_name(want->action), vr_action_name(got->action));
	EQ(what, "pattern.min_size", got->pattern.min_sz_bytes, want->pattern.min_sz_bytes);
	EQ(what, "pattern.max_size", got->pattern.max_sz_bytes, want->pattern.max_sz_bytes);
	EQ(what, "pattern.min_nr_accesses", got->pattern.min_nr_accesses,
	   want->pattern.min_nr_accesses);
	EQ(what, "pattern.max_nr_accesses", got->pattern.max_nr_accesses,
	   want->pattern.max_nr_accesses);
	EQ(what, "pattern.min_age_us", got->pattern.min_age_us, want->pattern.min_age_us);
	EQ(what, "pattern.max_age_us", got->pattern.max_age_us, want->pattern.max_age_us);
	EQ(what, "quota.ms", gq->ms, wq->ms);
	EQ(what, "quota.sz", gq->sz, wq->sz);
	EQ(what, "quota.reset_interval_ms", gq->reset_interval_ms, wq->reset_interval_ms);
	EQ(what, "quota.weights.sz", gq->weight_sz, wq->weight_sz);
	EQ(what, "quota.weights.nr_accesses", gq->weight_nr_accesses, wq->weight_nr_accesses);
	EQ(what, "quota.weights.age", gq->weight_age, wq->weight_age);
	EQ(what, "quota.nr_goals", gq->nr_goals, wq->nr_goals);
	for (guint i = 0; i < wq->nr_goals; i++) {
		EQ(what, "quota.goals[].metric", gq->goals[i].metric, wq->goals[i].metric);
		EQ(what, "quota.goals[].target", gq->goals[i].target, wq->goals[i].target);
	}
	EQ(what, "watermarks.metric", got->wmarks.metric, want->wmarks.metric);
	EQ(what, "watermarks.interval_us", got->wmarks.interval_us, want->wmarks.interval_us);
	EQ(what, "watermarks.high", got->wmarks.high, want->wmarks.high);
	EQ(what, "watermarks.mid", got->wmarks.mid, want->wmarks.mid);
	EQ(what, "watermarks.low", got->wmarks.low, want->wmarks.low);
	EQ(what, "quota.charge", gq->charge, wq->charge);
	EQ(what, "nr_filters", got->nr_filters, want->nr_filters);
	for (guint i = 0; i < want->nr_filters; i++) {
		EQ(what, "filters[].type", got->filters[i].type, want->filters[i].type);
		EQ(what, "filters[].matching", got->filters[i].matching, want->filters[i].matching);
	}
}

static void assert_policies_equal(const struct vr_policy *got, const struct vr_policy *want,
				  const char *what)
{
	cr_assert_str_eq(got->profile, want->profile, "%s: profile: expected '%s', got '%s'", what,
			 want->profile, got->profile);
	assert_attrs_equal(&got->attrs, &want->attrs, what);
	cr_assert_eq(got->schemes->len, want->schemes->len, "%s: expected %u schemes, got %u", what,
		     want->schemes->len, got->schemes->len);
	for (guint i = 0; i < want->schemes->len; i++) {
		g_autofree char *w = g_strdup_printf("%s, schemes[%u]", what, i);

		assert_schemes_equal(scheme_at(got, i), scheme_at(want, i), w);
	}
}

/* ---- the built-in profiles ---- */

TestSuite(policy_profiles, .description = "vr_policy_new_profile() and vr_policy_profile_names()");

/* What differs between the DAMON_RECLAIM profiles. */
struct reclaim_values {
	uint64_t min_age_us;
	uint64_t quota_ms;
	uint64_t quota_sz;
};

/*
 * Every field of a DAMON_RECLAIM profile (SEMANTICS.md §3): the published
 * monitoring attributes and one pageout scheme of cold regions, age-only
 * weights, 1 s windows, free_mem_rate watermarks 500/400/200 every 5 s.
 */
static void assert_reclaim_profile(const struct vr_policy *p, const char *name,
				   const struct reclaim_values *v)
{
	const struct vr_scheme *s;

	cr_assert_str_eq(p->profile, name, "profile: expected '%s', got '%s'", name, p->profile);
	EQ(name, "monitoring.sample_interval_us", p->attrs.sample_interval_us, 5000);
	EQ(name, "monitoring.aggr_interval_us", p->attrs.aggr_interval_us, 100000);
	EQ(name, "monitoring.ops_update_interval_us", p->attrs.ops_update_interval_us, 1000000);
	EQ(name, "monitoring.min_nr_regions", p->attrs.min_nr_regions, 10);
	EQ(name, "monitoring.max_nr_regions", p->attrs.max_nr_regions, 1000);
	cr_assert_eq(p->schemes->len, 1, "%s: expected one scheme, got %u", name, p->schemes->len);
	s = scheme_at(p, 0);
	cr_assert_str_eq(s->name, "damon-reclaim", "%s: the scheme's name: got '%s'", name,
			 s->name);
	cr_assert_eq(s->action, VR_ACTION_PAGEOUT, "%s: action: expected pageout, got %s", name,
		     vr_action_name(s->action));
	EQ(name, "pattern.min_size", s->pattern.min_sz_bytes, 4096);
	EQ(name, "pattern.max_size", s->pattern.max_sz_bytes, UINT64_MAX);
	EQ(name, "pattern.min_nr_accesses", s->pattern.min_nr_accesses, 0);
	EQ(name, "pattern.max_nr_accesses", s->pattern.max_nr_accesses, 0);
	EQ(name, "pattern.min_age_us", s->pattern.min_age_us, v->min_age_us);
	EQ(name, "pattern.max_age_us", s->pattern.max_age_us, UINT64_MAX);
	EQ(name, "quota.ms", s->quota.ms, v->quota_ms);
	EQ(name, "quota.sz", s->quota.sz, v->quota_sz);
	EQ(name, "quota.reset_interval_ms", s->quota.reset_interval_ms, 1000);
	EQ(name, "quota.weights.sz", s->quota.weight_sz, 0);
	EQ(name, "quota.weights.nr_accesses", s->quota.weight_nr_accesses, 0);
	EQ(name, "quota.weights.age", s->quota.weight_age, 1);
	EQ(name, "quota.nr_goals", s->quota.nr_goals, 0);
	EQ(name, "nr_filters", s->nr_filters, 0);
	EQ(name, "watermarks.metric", s->wmarks.metric, VR_WMARK_FREE_MEM_RATE);
	EQ(name, "watermarks.interval_us", s->wmarks.interval_us, 5 * US_PER_S);
	EQ(name, "watermarks.high", s->wmarks.high, 500);
	EQ(name, "watermarks.mid", s->wmarks.mid, 400);
	EQ(name, "watermarks.low", s->wmarks.low, 200);
	cr_assert(vr_scheme_validate(s, NULL), "%s: the profile's scheme should be valid", name);
	cr_assert(vr_monitor_attrs_validate(&p->attrs, NULL), "%s: attributes should be valid",
		  name);
}

static const struct reclaim_values reclaim_2021 = {
	.min_age_us = 5 * US_PER_S,
	.quota_ms = 100,
	.quota_sz = 1 * GIB,
};

static const struct reclaim_values reclaim_612 = {
	.min_age_us = 120 * US_PER_S,
	.quota_ms = 10,
	.quota_sz = 128 * MIB,
};

Test(policy_profiles, default_is_damon_reclaim_2021)
{
	g_autoptr(vr_policy) p = profile_ok(NULL);

	assert_reclaim_profile(p, "damon-reclaim-2021", &reclaim_2021);
}

Test(policy_profiles, damon_reclaim_2021_by_name)
{
	g_autoptr(vr_policy) p = profile_ok("damon-reclaim-2021");

	assert_reclaim_profile(p, "damon-reclaim-2021", &reclaim_2021);
}

Test(policy_profiles, damon_reclaim_6_12)
{
	g_autoptr(vr_policy) p = profile_ok("damon-reclaim-6.12");

	assert_reclaim_profile(p, "damon-reclaim-6.12", &reclaim_612);
}

Test(policy_profiles, names_list_every_profile)
{
	const char *const *names = vr_policy_profile_names();
	guint n = 0;

	cr_assert_not_null(names, "the profile list should not be NULL");
	for (; names[n]; n++) {
		g_autoptr(vr_policy) p = profile_ok(names[n]);

		cr_assert_str_eq(p->profile, names[n], "profile '%s' reports name '%s'", names[n],
				 p->profile);
	}
	cr_assert_eq(n, 3, "expected 3 built-in profiles, got %u", n);
	cr_assert_str_eq(names[0], "damon-reclaim-2021", "the default should come first");
	cr_assert_str_eq(names[1], "damon-reclaim-6.12");
	cr_assert_str_eq(names[2], "page-level");
}

Test(policy_profiles, page_level)
{
	g_autoptr(vr_policy) p = profile_ok("page-level");
	g_autoptr(vr_policy) base = profile_ok("damon-reclaim-2021");
	g_autoptr(vr_scheme) want = vr_scheme_copy(scheme_at(base, 0));

	/* the 2021 profile's attributes, window and watermarks; warm regions
	 * too, the least accessed and oldest first, young pages left alone */
	want->pattern.max_nr_accesses = 4;
	want->pattern.min_age_us = 0;
	want->quota.weight_nr_accesses = 1;
	want->filters[0] = (struct vr_scheme_filter){ .type = VR_FILTER_YOUNG, .matching = true };
	want->nr_filters = 1;
	cr_assert_str_eq(p->profile, "page-level");
	assert_attrs_equal(&p->attrs, &base->attrs, "page-level");
	cr_assert_eq(p->schemes->len, 1);
	assert_schemes_equal(scheme_at(p, 0), want, "page-level");
	cr_assert(vr_scheme_validate(scheme_at(p, 0), NULL));
}

Test(policy_profiles, unknown_profile_is_refused)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) p = vr_policy_new_profile("foo", &err);

	cr_assert_null(p, "an unknown profile should give NULL");
	assert_policy_error(err, VR_POLICY_ERROR_INVALID, "profile: unknown profile 'foo'",
			    "vr_policy_new_profile(\"foo\")");
	cr_assert_null(vr_policy_new_profile("", NULL), "'' is no profile (and error may be NULL)");
}

Test(policy_profiles, empty_document_is_the_default_profile)
{
	g_autoptr(vr_policy) p = parse_ok("{}");
	g_autoptr(vr_policy) want = profile_ok(NULL);

	assert_policies_equal(p, want, "{}");
	assert_reclaim_profile(p, "damon-reclaim-2021", &reclaim_2021);
}

Test(policy_profiles, profile_member_selects_the_base)
{
	g_autoptr(vr_policy) p = parse_ok("{ 'profile': 'damon-reclaim-6.12' }");

	assert_reclaim_profile(p, "damon-reclaim-6.12", &reclaim_612);
}

/* ---- parsing valid documents ---- */

TestSuite(policy_parse, .description = "vr_policy_parse(): valid documents");

/* The complete example of docs/policy.md: every field, none at its default. */
static const char full_doc[] = "{\n"
			       "  'profile': 'damon-reclaim-2021',\n"
			       "  'monitoring': {\n"
			       "    'sample_interval_us': 10000,\n"
			       "    'aggr_interval_us': 200000,\n"
			       "    'ops_update_interval_us': 2000000,\n"
			       "    'min_nr_regions': 20,\n"
			       "    'max_nr_regions': 2000\n"
			       "  },\n"
			       "  'schemes': [\n"
			       "    {\n"
			       "      'name': 'damon-reclaim',\n"
			       "      'action': 'pageout',\n"
			       "      'pattern': {\n"
			       "        'min_size': 8192,\n"
			       "        'max_size': 1073741824,\n"
			       "        'min_nr_accesses': 0,\n"
			       "        'max_nr_accesses': 1,\n"
			       "        'min_age_us': 10000000,\n"
			       "        'max_age_us': 3600000000\n"
			       "      },\n"
			       "      'quota': {\n"
			       "        'ms': 50,\n"
			       "        'sz': 268435456,\n"
			       "        'reset_interval_ms': 500,\n"
			       "        'weights': { 'sz': 1, 'nr_accesses': 2, 'age': 3 },\n"
			       "        'goals': [\n"
			       "          { 'metric': 'some_mem_psi_us', 'target': 1000 },\n"
			       "          { 'metric': 'user_input', 'target': 10000 }\n"
			       "        ],\n"
			       "        'charge': 'size'\n"
			       "      },\n"
			       "      'watermarks': {\n"
			       "        'metric': 'free_mem_rate',\n"
			       "        'interval_us': 1000000,\n"
			       "        'high': 600,\n"
			       "        'mid': 450,\n"
			       "        'low': 100\n"
			       "      },\n"
			       "      'filters': [ { 'type': 'young' },\n"
			       "                   { 'type': 'anon', 'matching': false } ]\n"
			       "    },\n"
			       "    {\n"
			       "      'name': 'thp-hot',\n"
			       "      'action': 'hugepage',\n"
			       "      'pattern': { 'min_size': 2097152, 'min_nr_accesses': 10 },\n"
			       "      'quota': { 'sz': 536870912 }\n"
			       "    }\n"
			       "  ]\n"
			       "}\n";

Test(policy_parse, full_document)
{
	g_autoptr(vr_policy) p = parse_ok(full_doc);
	const struct vr_scheme *s, *t;

	cr_assert_str_eq(p->profile, "damon-reclaim-2021");
	EQ("full", "sample_interval_us", p->attrs.sample_interval_us, 10000);
	EQ("full", "aggr_interval_us", p->attrs.aggr_interval_us, 200000);
	EQ("full", "ops_update_interval_us", p->attrs.ops_update_interval_us, 2000000);
	EQ("full", "min_nr_regions", p->attrs.min_nr_regions, 20);
	EQ("full", "max_nr_regions", p->attrs.max_nr_regions, 2000);
	cr_assert_eq(p->schemes->len, 2, "expected 2 schemes, got %u", p->schemes->len);

	s = scheme_at(p, 0);
	cr_assert_str_eq(s->name, "damon-reclaim");
	cr_assert_eq(s->action, VR_ACTION_PAGEOUT);
	EQ("full", "min_size", s->pattern.min_sz_bytes, 8192);
	EQ("full", "max_size", s->pattern.max_sz_bytes, GIB);
	EQ("full", "min_nr_accesses", s->pattern.min_nr_accesses, 0);
	EQ("full", "max_nr_accesses", s->pattern.max_nr_accesses, 1);
	EQ("full", "min_age_us", s->pattern.min_age_us, 10 * US_PER_S);
	EQ("full", "max_age_us", s->pattern.max_age_us, 3600 * US_PER_S);
	EQ("full", "quota.ms", s->quota.ms, 50);
	EQ("full", "quota.sz", s->quota.sz, 256 * MIB);
	EQ("full", "quota.reset_interval_ms", s->quota.reset_interval_ms, 500);
	EQ("full", "weights.sz", s->quota.weight_sz, 1);
	EQ("full", "weights.nr_accesses", s->quota.weight_nr_accesses, 2);
	EQ("full", "weights.age", s->quota.weight_age, 3);
	EQ("full", "nr_goals", s->quota.nr_goals, 2);
	EQ("full", "goals[0].metric", s->quota.goals[0].metric, VR_GOAL_SOME_MEM_PSI_US);
	EQ("full", "goals[0].target", s->quota.goals[0].target, 1000);
	EQ("full", "goals[1].metric", s->quota.goals[1].metric, VR_GOAL_USER_INPUT);
	EQ("full", "goals[1].target", s->quota.goals[1].target, 10000);
	EQ("full", "quota.charge", s->quota.charge, VR_CHARGE_SIZE);
	EQ("full", "nr_filters", s->nr_filters, 2);
	EQ("full", "filters[0].type", s->filters[0].type, VR_FILTER_YOUNG);
	EQ("full", "filters[0].matching", s->filters[0].matching, true);
	EQ("full", "filters[1].type", s->filters[1].type, VR_FILTER_ANON);
	EQ("full", "filters[1].matching", s->filters[1].matching, false);
	EQ("full", "wmarks.metric", s->wmarks.metric, VR_WMARK_FREE_MEM_RATE);
	EQ("full", "wmarks.interval_us", s->wmarks.interval_us, US_PER_S);
	EQ("full", "wmarks.high", s->wmarks.high, 600);
	EQ("full", "wmarks.mid", s->wmarks.mid, 450);
	EQ("full", "wmarks.low", s->wmarks.low, 100);

	/* "thp-hot" is no profile scheme: vr_scheme_new()'s defaults, then its fields */
	t = scheme_at(p, 1);
	{
		g_autoptr(vr_scheme) want = vr_scheme_new("thp-hot", VR_ACTION_HUGEPAGE);

		want->pattern.min_sz_bytes = 2 * MIB;
		want->pattern.min_nr_accesses = 10;
		want->quota.sz = 512 * MIB;
		assert_schemes_equal(t, want, "full, schemes[1]");
	}
}

Test(policy_parse, monitoring_override_keeps_the_rest)
{
	g_autoptr(vr_policy) p = parse_ok("{ 'monitoring': { 'max_nr_regions': 2000 } }");
	g_autoptr(vr_policy) want = profile_ok(NULL);

	want->attrs.max_nr_regions = 2000;
	assert_policies_equal(p, want, "max_nr_regions 2000");
}

Test(policy_parse, scheme_override_keeps_the_profile_fields)
{
	g_autoptr(vr_policy)
		p = parse_ok("{ 'schemes': [ { 'name': 'damon-reclaim', 'action': 'pageout',"
			     "  'quota': { 'ms': 20, 'weights': { 'nr_accesses': 4 } } } ] }");
	g_autoptr(vr_policy) want = profile_ok(NULL);
	struct vr_scheme *w = g_ptr_array_index(want->schemes, 0);

	w->quota.ms = 20;
	w->quota.weight_nr_accesses = 4;
	assert_policies_equal(p, want, "quota.ms 20, weights.nr_accesses 4");
}

Test(policy_parse, override_on_the_6_12_profile)
{
	g_autoptr(vr_policy) p = parse_ok(
		"{ 'profile': 'damon-reclaim-6.12', 'monitoring': { 'min_nr_regions': 50 },"
		"  'schemes': [ { 'name': 'damon-reclaim', 'action': 'cold',"
		"                 'pattern': { 'min_age_us': 60000000 },"
		"                 'watermarks': { 'low': 100 } } ] }");
	g_autoptr(vr_policy) want = profile_ok("damon-reclaim-6.12");
	struct vr_scheme *w = g_ptr_array_index(want->schemes, 0);

	want->attrs.min_nr_regions = 50;
	w->action = VR_ACTION_COLD;
	w->pattern.min_age_us = 60 * US_PER_S;
	w->wmarks.low = 100;
	assert_policies_equal(p, want, "6.12 with overrides");
}

Test(policy_parse, a_new_scheme_starts_from_vr_scheme_new)
{
	g_autoptr(vr_policy)
		p = parse_ok("{ 'schemes': [ { 'name': 'hot', 'action': 'willneed',"
			     "                 'pattern': { 'min_nr_accesses': 5 } } ] }");
	g_autoptr(vr_scheme) want = vr_scheme_new("hot", VR_ACTION_WILLNEED);

	want->pattern.min_nr_accesses = 5;
	cr_assert_eq(p->schemes->len, 1, "'schemes' replaces the profile's list: got %u schemes",
		     p->schemes->len);
	assert_schemes_equal(scheme_at(p, 0), want, "new scheme 'hot'");
	assert_attrs_equal(&p->attrs, &VR_MONITOR_ATTRS_DEFAULT, "attributes kept");
}

Test(policy_parse, goals_replace_and_are_kept_in_order)
{
	g_autoptr(vr_policy) p = parse_ok(
		"{ 'schemes': [ { 'name': 'damon-reclaim', 'action': 'pageout',"
		"  'quota': { 'goals': [ { 'metric': 'free_mem_rate', 'target': 300 },"
		"                        { 'target': 5, 'metric': 'user_input' },"
		"                        { 'metric': 'some_mem_psi_us', 'target': 2000 },"
		"                        { 'metric': 'user_input', 'target': 1 } ] } } ] }");
	const struct vr_quota *q = &scheme_at(p, 0)->quota;

	EQ("goals", "nr_goals", q->nr_goals, 4);
	EQ("goals", "goals[0].metric", q->goals[0].metric, VR_GOAL_FREE_MEM_RATE);
	EQ("goals", "goals[0].target", q->goals[0].target, 300);
	EQ("goals", "goals[1].metric", q->goals[1].metric, VR_GOAL_USER_INPUT);
	EQ("goals", "goals[1].target", q->goals[1].target, 5);
	EQ("goals", "goals[2].metric", q->goals[2].metric, VR_GOAL_SOME_MEM_PSI_US);
	EQ("goals", "goals[3].target", q->goals[3].target, 1);
	EQ("goals", "quota.ms kept", q->ms, 100);
}

Test(policy_parse, empty_goals_and_schemes)
{
	g_autoptr(vr_policy) p = parse_ok("{ 'schemes': [] }");
	g_autoptr(vr_policy)
		q = parse_ok("{ 'schemes': [ { 'name': 'damon-reclaim', 'action': 'pageout',"
			     "  'quota': { 'goals': [] } } ] }");

	cr_assert_eq(p->schemes->len, 0, "'schemes': [] should leave no scheme, got %u",
		     p->schemes->len);
	EQ("empty goals", "nr_goals", scheme_at(q, 0)->quota.nr_goals, 0);
}

Test(policy_parse, watermarks_none_and_limits)
{
	g_autoptr(vr_policy) p = parse_ok(
		"{ 'monitoring': { 'ops_update_interval_us': 0, 'max_nr_regions': 4294967295 },"
		"  'schemes': [ { 'name': 's', 'action': 'stat',"
		"    'pattern': { 'min_size': 0, 'max_size': 18446744073709551615,"
		"                 'max_nr_accesses': 4294967295, 'max_age_us': 0 },"
		"    'quota': { 'reset_interval_ms': 0 },"
		"    'watermarks': { 'metric': 'none', 'interval_us': 0, 'high': 1, 'mid': 2 } } ] }");
	const struct vr_scheme *s = scheme_at(p, 0);

	EQ("limits", "ops_update_interval_us", p->attrs.ops_update_interval_us, 0);
	EQ("limits", "max_nr_regions", p->attrs.max_nr_regions, UINT32_MAX);
	EQ("limits", "max_size", s->pattern.max_sz_bytes, UINT64_MAX);
	EQ("limits", "max_nr_accesses", s->pattern.max_nr_accesses, UINT32_MAX);
	EQ("limits", "max_age_us", s->pattern.max_age_us, 0);
	EQ("limits", "reset_interval_ms (no quota: 0 allowed)", s->quota.reset_interval_ms, 0);
	EQ("limits", "wmarks.metric", s->wmarks.metric, VR_WMARK_NONE);
	EQ("limits", "wmarks.high (unchecked with metric none)", s->wmarks.high, 1);
}

Test(policy_parse, explicit_length_and_whitespace)
{
	const char text[] = "\n\t {\"monitoring\": {\"min_nr_regions\": 20}} \r\n garbage";
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) p = vr_policy_parse(text, strstr(text, "garbage") - text, &err);

	cr_assert_not_null(p, "parsing the first bytes should succeed, got: %s",
			   err ? err->message : "?");
	EQ("length", "min_nr_regions", p->attrs.min_nr_regions, 20);
}

Test(policy_parse, names_may_be_any_utf8)
{
	g_autoptr(vr_policy)
		p = parse_ok("{ 'schemes': [ { 'name': 'r\\u00e9clame \\ud83d\\ude80 \\u0022x', "
			     "'action': 'nohugepage' } ] }");

	cr_assert_str_eq(scheme_at(p, 0)->name, "r\xc3\xa9"
						"clame \xf0\x9f\x9a\x80 \"x");
}

Test(policy_parse, error_may_be_null)
{
	cr_assert_null(vr_policy_parse("{", -1, NULL), "a syntax error without GError");
	cr_assert_null(vr_policy_parse("{\"x\": 1}", -1, NULL),
		       "an invalid document without GError");
}

/* ---- errors ---- */

TestSuite(policy_errors, .description = "vr_policy_parse(): every kind of error, with its path");

struct error_case {
	char name[64];
	char doc[400]; /* ' for ", ` for ' */
	int code;
	char prefix[160];
};

#define SYNTAX	VR_POLICY_ERROR_SYNTAX
#define INVALID VR_POLICY_ERROR_INVALID

/* A document with the profile's scheme and @members. */
#define SCHEME(members)                                                                            \
	"{ 'schemes': [ { 'name': 'damon-reclaim', 'action': 'pageout', " members " } ] }"

static struct error_case error_cases[] = {
	/* syntax: line and column from 1, and the byte offset */
	{ "unterminated object", "{", SYNTAX,
	  "line 1, column 2 (offset 1): unexpected end of the document" },
	{ "empty text", "", SYNTAX, "line 1, column 1 (offset 0): unexpected end of the document" },
	{ "blank text", " \n ", SYNTAX, "line 2, column 2 (offset 3): unexpected end" },
	{ "missing value", "{ 'profile': }", SYNTAX, "line 1, column 14 (offset 13): " },
	{ "trailing comma", "{ 'schemes': [], }", SYNTAX, "line 1, column 18 (offset 17): " },
	{ "missing colon on line 3", "{\n  'monitoring': {\n    'min_nr_regions' 20\n  }\n}",
	  SYNTAX, "line 3, column 22 (offset 41): " },
	{ "data after the document", "{} x", SYNTAX, "line 1, column 4 (offset 3): " },
	{ "two documents", "{}\n{}", SYNTAX, "line 2, column 1 (offset 3): " },
	{ "a comment", "{ /* none */ }", SYNTAX, "line 1, column 3 (offset 2): " },
	{ "leading zero", "{ 'monitoring': { 'min_nr_regions': 010 } }", SYNTAX, "line 1, " },
	{ "single-quoted string", "{ `profile`: 1 }", SYNTAX,
	  "line 1, column 3 (offset 2): strings must be in double quotes" },
	{ "single-quoted value", "{ 'profile': `x` }", SYNTAX, "line 1, column 14 (offset 13): " },
	{ "nesting too deep",
	  "{ 'x': [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] }",
	  SYNTAX, "line 1, " },

	/* the top level */
	{ "top level array", "[]", INVALID, "document: expected an object (got an array)" },
	{ "top level number", "42", INVALID, "document: expected an object (got 42)" },
	{ "top level string", "'x'", INVALID, "document: expected an object (got a string)" },
	{ "top level null", "null", INVALID, "document: expected an object (got null)" },

	/* unknown members, at each level */
	{ "unknown top-level member", "{ 'profil': 'damon-reclaim-2021' }", INVALID,
	  "profil: unknown member (expected one of profile, monitoring, schemes)" },
	{ "unknown in monitoring", "{ 'monitoring': { 'sample_interval': 5000 } }", INVALID,
	  "monitoring.sample_interval: unknown member (expected one of sample_interval_us, " },
	{ "unknown in a scheme", SCHEME("'stats': {}"), INVALID,
	  "schemes[0].stats: unknown member (expected one of name, action, pattern, quota, "
	  "watermarks, filters)" },
	{ "unknown in pattern", SCHEME("'pattern': { 'min_sz_bytes': 1 }"), INVALID,
	  "schemes[0].pattern.min_sz_bytes: unknown member (expected one of min_size, " },
	{ "unknown in quota", SCHEME("'quota': { 'time_ms': 1 }"), INVALID,
	  "schemes[0].quota.time_ms: unknown member (expected one of weights, goals, charge, ms, "
	  "sz, reset_interval_ms)" },
	{ "unknown in weights", SCHEME("'quota': { 'weights': { 'freq': 1 } }"), INVALID,
	  "schemes[0].quota.weights.freq: unknown member (expected one of sz, nr_accesses, age)" },
	{ "unknown in a goal",
	  SCHEME("'quota': { 'goals': [ { 'metric': 'user_input', 'target': 1, 'current': 1 } ] }"),
	  INVALID,
	  "schemes[0].quota.goals[0].current: unknown member (expected one of metric, target)" },
	{ "unknown in watermarks", SCHEME("'watermarks': { 'hi': 1 }"), INVALID,
	  "schemes[0].watermarks.hi: unknown member (expected one of metric, interval_us, high, "
	  "mid, low)" },
	{ "unknown in the second scheme",
	  "{ 'schemes': [ { 'name': 'a', 'action': 'stat' }, { 'name': 'b', 'action': 'stat', "
	  "'Quota': {} } ] }",
	  INVALID, "schemes[1].Quota: unknown member" },
	{ "member given twice", "{ 'monitoring': { 'min_nr_regions': 10, 'min_nr_regions': 20 } }",
	  INVALID, "monitoring.min_nr_regions: member given twice" },
	{ "top-level member given twice", "{ 'schemes': [], 'profile': 'x', 'schemes': [] }",
	  INVALID, "schemes: member given twice" },

	{ "member given twice, once escaped",
	  "{ 'monitoring': { 'min_nr_regions': 10, 'min_nr_region\\u0073': 20 } }", INVALID,
	  "monitoring.min_nr_regions: member given twice" },
	/* wrong types: integers */
	{ "integer as string", "{ 'monitoring': { 'sample_interval_us': '5000' } }", INVALID,
	  "monitoring.sample_interval_us: expected a non-negative integer (got a string)" },
	{ "integer as boolean", SCHEME("'quota': { 'ms': true }"), INVALID,
	  "schemes[0].quota.ms: expected a non-negative integer (got a boolean)" },
	{ "integer as null", SCHEME("'pattern': { 'min_size': null }"), INVALID,
	  "schemes[0].pattern.min_size: expected a non-negative integer (got null)" },
	{ "integer as object", SCHEME("'quota': { 'weights': { 'age': {} } }"), INVALID,
	  "schemes[0].quota.weights.age: expected a non-negative integer (got an object)" },
	{ "integer as array", SCHEME("'watermarks': { 'high': [500] }"), INVALID,
	  "schemes[0].watermarks.high: expected a non-negative integer (got an array)" },
	{ "goal target as string",
	  SCHEME("'quota': { 'goals': [ { 'metric': 'user_input', 'target': '1' } ] }"), INVALID,
	  "schemes[0].quota.goals[0].target: expected a non-negative integer (got a string)" },
	/* wrong types: strings */
	{ "profile as integer", "{ 'profile': 2021 }", INVALID,
	  "profile: expected a string (got 2021)" },
	{ "name as integer", "{ 'schemes': [ { 'name': 1, 'action': 'stat' } ] }", INVALID,
	  "schemes[0].name: expected a string (got 1)" },
	{ "action as null", "{ 'schemes': [ { 'name': 'a', 'action': null } ] }", INVALID,
	  "schemes[0].action: expected a string (got null)" },
	{ "goal metric as array", SCHEME("'quota': { 'goals': [ { 'metric': [], 'target': 1 } ] }"),
	  INVALID, "schemes[0].quota.goals[0].metric: expected a string (got an array)" },
	{ "watermark metric as boolean", SCHEME("'watermarks': { 'metric': false }"), INVALID,
	  "schemes[0].watermarks.metric: expected a string (got a boolean)" },
	/* wrong types: objects */
	{ "monitoring as array", "{ 'monitoring': [] }", INVALID,
	  "monitoring: expected an object (got an array)" },
	{ "a scheme as integer", "{ 'schemes': [ 1 ] }", INVALID,
	  "schemes[0]: expected an object (got 1)" },
	{ "pattern as integer", SCHEME("'pattern': 4096"), INVALID,
	  "schemes[0].pattern: expected an object (got 4096)" },
	{ "quota as string", SCHEME("'quota': '100ms'"), INVALID,
	  "schemes[0].quota: expected an object (got a string)" },
	{ "weights as array", SCHEME("'quota': { 'weights': [0, 0, 1] }"), INVALID,
	  "schemes[0].quota.weights: expected an object (got an array)" },
	{ "a goal as string", SCHEME("'quota': { 'goals': [ 'psi' ] }"), INVALID,
	  "schemes[0].quota.goals[0]: expected an object (got a string)" },
	{ "watermarks as null", SCHEME("'watermarks': null"), INVALID,
	  "schemes[0].watermarks: expected an object (got null)" },
	/* wrong types: arrays */
	{ "schemes as object", "{ 'schemes': {} }", INVALID,
	  "schemes: expected an array (got an object)" },
	{ "goals as object", SCHEME("'quota': { 'goals': {} }"), INVALID,
	  "schemes[0].quota.goals: expected an array (got an object)" },

	/* numbers */
	{ "negative", SCHEME("'quota': { 'ms': -1 }"), INVALID,
	  "schemes[0].quota.ms: expected a non-negative integer (got -1)" },
	{ "hugely negative", SCHEME("'quota': { 'sz': -99999999999999999999 }"), INVALID,
	  "schemes[0].quota.sz: expected a non-negative integer (got -99999999999999999999)" },
	{ "fraction", "{ 'monitoring': { 'min_nr_regions': 10.5 } }", INVALID,
	  "monitoring.min_nr_regions: expected a non-negative integer (got 10.5)" },
	{ "integral fraction", SCHEME("'pattern': { 'min_age_us': 1.0 }"), INVALID,
	  "schemes[0].pattern.min_age_us: expected a non-negative integer (got 1.0)" },
	{ "exponent", SCHEME("'quota': { 'sz': 1e9 }"), INVALID,
	  "schemes[0].quota.sz: expected a non-negative integer (got 1e9)" },
	{ "NaN", SCHEME("'quota': { 'ms': NaN }"), INVALID,
	  "schemes[0].quota.ms: expected a non-negative integer (got NaN)" },
	{ "uint32 overflow", "{ 'monitoring': { 'min_nr_regions': 4294967296 } }", INVALID,
	  "monitoring.min_nr_regions: 4294967296 is above the maximum 4294967295" },
	{ "uint32 overflow (weight)", SCHEME("'quota': { 'weights': { 'age': 4294967296 } }"),
	  INVALID, "schemes[0].quota.weights.age: 4294967296 is above the maximum 4294967295" },
	{ "uint64 overflow", SCHEME("'quota': { 'sz': 18446744073709551616 }"), INVALID,
	  "schemes[0].quota.sz: 18446744073709551616 is above the maximum 18446744073709551615" },
	{ "uint64 overflow, 30 digits",
	  SCHEME("'pattern': { 'max_size': 123456789012345678901234567890 }"), INVALID,
	  "schemes[0].pattern.max_size: 123456789012345678901234567890 is above the maximum "
	  "18446744073709551615" },
	{ "uint64 overflow, escaped name", SCHEME("'quota': { '\\u0073z': 18446744073709551616 }"),
	  INVALID,
	  "schemes[0].quota.sz: 18446744073709551616 is above the maximum 18446744073709551615" },
	{ "beyond uint64 in a uint32",
	  SCHEME("'pattern': { 'max_nr_accesses': 18446744073709551616 }"), INVALID,
	  "schemes[0].pattern.max_nr_accesses: 18446744073709551616 is above the maximum "
	  "4294967295" },

	/* names */
	{ "unknown action", "{ 'schemes': [ { 'name': 'a', 'action': 'swap' } ] }", INVALID,
	  "schemes[0].action: unknown action 'swap' (expected one of pageout, cold, willneed, "
	  "hugepage, nohugepage, stat)" },
	{ "action with a NUL", "{ 'schemes': [ { 'name': 'a', 'action': 'stat\\u0000x' } ] }",
	  INVALID, "schemes[0].action: the string contains a NUL character" },
	{ "name not UTF-8", "{ 'schemes': [ { 'name': '\xff', 'action': 'stat' } ] }", INVALID,
	  "schemes[0].name: the string is not valid UTF-8" },
	{ "unknown goal metric",
	  SCHEME("'quota': { 'goals': [ { 'metric': 'psi', 'target': 1 } ] }"), INVALID,
	  "schemes[0].quota.goals[0].metric: unknown metric 'psi' (expected one of user_input, "
	  "some_mem_psi_us, free_mem_rate, refault_bytes)" },
	{ "unknown charge basis", SCHEME("'quota': { 'charge': 'rss' }"), INVALID,
	  "schemes[0].quota.charge: unknown charge basis 'rss' (expected one of resident, size)" },
	{ "charge basis not a string", SCHEME("'quota': { 'charge': 1 }"), INVALID,
	  "schemes[0].quota.charge: expected a string" },
	{ "filters not an array", SCHEME("'filters': { 'type': 'young' }"), INVALID,
	  "schemes[0].filters: expected an array (got an object)" },
	{ "filter not an object", SCHEME("'filters': [ 'young' ]"), INVALID,
	  "schemes[0].filters[0]: expected an object (got a string)" },
	{ "filter without a type", SCHEME("'filters': [ { 'matching': true } ]"), INVALID,
	  "schemes[0].filters[0].type: missing (a filter needs a type)" },
	{ "unknown filter type", SCHEME("'filters': [ { 'type': 'old' } ]"), INVALID,
	  "schemes[0].filters[0].type: unknown filter type 'old' (expected one of anon, young)" },
	{ "unknown member in a filter", SCHEME("'filters': [ { 'type': 'young', 'memcg': '/' } ]"),
	  INVALID, "schemes[0].filters[0].memcg: unknown member (expected one of type, matching)" },
	{ "filter matching not a boolean",
	  SCHEME("'filters': [ { 'type': 'young', 'matching': 'yes' } ]"), INVALID,
	  "schemes[0].filters[0].matching: expected true or false (got a string)" },
	{ "too many filters",
	  SCHEME("'filters': [ { 'type': 'young' }, { 'type': 'young' }, { 'type': 'young' }, "
		 "{ 'type': 'young' }, { 'type': 'anon' } ]"),
	  INVALID, "schemes[0].filters: at most 4 filters are allowed (got 5)" },
	{ "unknown watermark metric", SCHEME("'watermarks': { 'metric': 'free_mem' }"), INVALID,
	  "schemes[0].watermarks.metric: unknown metric 'free_mem' (expected one of none, "
	  "free_mem_rate)" },
	{ "unknown profile", "{ 'profile': 'foo' }", INVALID,
	  "profile: unknown profile 'foo' (expected one of damon-reclaim-2021, damon-reclaim-6.12, page-level)" },

	/* schemes */
	{ "duplicate scheme names",
	  "{ 'schemes': [ { 'name': 'x', 'action': 'stat' }, { 'name': 'y', 'action': 'stat' },"
	  " { 'name': 'x', 'action': 'cold' } ] }",
	  INVALID, "schemes[2].name: 'x' is already used by schemes[0]" },
	{ "missing name", "{ 'schemes': [ { 'action': 'stat' } ] }", INVALID,
	  "schemes[0].name: missing (a scheme needs a name and an action)" },
	{ "missing action", "{ 'schemes': [ { 'name': 'damon-reclaim' } ] }", INVALID,
	  "schemes[0].action: missing (a scheme needs a name and an action)" },
	{ "empty name", "{ 'schemes': [ { 'name': '', 'action': 'stat' } ] }", INVALID,
	  "schemes[0].name: must not be empty" },
	{ "pattern min_size > max_size",
	  SCHEME("'pattern': { 'min_size': 8192, 'max_size': 4096 }"), INVALID,
	  "schemes[0].pattern.min_size (8192) is above pattern.max_size (4096)" },
	{ "pattern nr_accesses min > max", SCHEME("'pattern': { 'min_nr_accesses': 3 }"), INVALID,
	  "schemes[0].pattern.min_nr_accesses (3) is above pattern.max_nr_accesses (0)" },
	{ "pattern age min > max", SCHEME("'pattern': { 'max_age_us': 1000 }"), INVALID,
	  "schemes[0].pattern.min_age_us (" },
	{ "quota reset_interval_ms 0", SCHEME("'quota': { 'reset_interval_ms': 0 }"), INVALID,
	  "schemes[0].quota.reset_interval_ms = 0: " },
	{ "goal target 0",
	  SCHEME("'quota': { 'ms': 0, 'sz': 0, 'goals': [ { 'metric': 'user_input', 'target': 1 },"
		 " { 'metric': 'some_mem_psi_us', 'target': 0 } ] }"),
	  INVALID, "schemes[0].quota.goals[1].target = 0: " },
	{ "too many goals",
	  SCHEME("'quota': { 'goals': [ { 'metric': 'user_input', 'target': 1 },"
		 " { 'metric': 'user_input', 'target': 1 }, { 'metric': 'user_input', 'target': 1 },"
		 " { 'metric': 'user_input', 'target': 1 }, { 'metric': 'user_input', 'target': 1 } ] }"),
	  INVALID, "schemes[0].quota.goals: at most 4 goals are allowed (got 5)" },
	{ "goal without metric", SCHEME("'quota': { 'goals': [ { 'target': 1 } ] }"), INVALID,
	  "schemes[0].quota.goals[0].metric: missing" },
	{ "goal without target", SCHEME("'quota': { 'goals': [ { 'metric': 'user_input' } ] }"),
	  INVALID, "schemes[0].quota.goals[0].target: missing" },
	{ "watermarks high < mid", SCHEME("'watermarks': { 'high': 300 }"), INVALID,
	  "schemes[0].watermarks: need high >= mid >= low (got 300, 400, 200)" },
	{ "watermarks interval 0", SCHEME("'watermarks': { 'interval_us': 0 }"), INVALID,
	  "schemes[0].watermarks.interval_us = 0: " },
	{ "an error in the second scheme",
	  "{ 'schemes': [ { 'name': 'a', 'action': 'stat' }, { 'name': 'b', 'action': 'stat',"
	  " 'pattern': { 'min_size': 2, 'max_size': 1 } } ] }",
	  INVALID, "schemes[1].pattern.min_size (2) is above pattern.max_size (1)" },

	/* monitoring */
	{ "min_nr_regions 2", "{ 'monitoring': { 'min_nr_regions': 2 } }", INVALID,
	  "monitoring.min_nr_regions: 2 is below the minimum 3" },
	{ "sample_interval_us 0", "{ 'monitoring': { 'sample_interval_us': 0 } }", INVALID,
	  "monitoring.sample_interval_us: 0 is below the minimum 1" },
	{ "aggr < sample", "{ 'monitoring': { 'aggr_interval_us': 4000 } }", INVALID,
	  "monitoring.aggr_interval_us = 4000: must be at least sample_interval_us (5000)" },
	{ "aggr not a multiple", "{ 'monitoring': { 'aggr_interval_us': 12000 } }", INVALID,
	  "monitoring.aggr_interval_us = 12000: must be a multiple of sample_interval_us" },
	{ "too many samples per window",
	  "{ 'monitoring': { 'sample_interval_us': 1, 'aggr_interval_us': 65537 } }", INVALID,
	  "monitoring.aggr_interval_us = 65537: " },
	{ "aggregation above an hour",
	  "{ 'monitoring': { 'sample_interval_us': 1000000, 'aggr_interval_us': 3601000000 } }",
	  INVALID, "monitoring.aggr_interval_us = 3601000000: an aggregation window is at most" },
	{ "ops_update not a multiple", "{ 'monitoring': { 'ops_update_interval_us': 1000001 } }",
	  INVALID, "monitoring.ops_update_interval_us = 1000001: " },
	{ "max_nr_regions < min", "{ 'monitoring': { 'min_nr_regions': 10, 'max_nr_regions': 9 } }",
	  INVALID, "monitoring.max_nr_regions = 9: must be at least min_nr_regions (10)" },
};

ParameterizedTestParameters(policy_errors, refused)
{
	return cr_make_param_array(struct error_case, error_cases, ARRAY_LEN(error_cases));
}

ParameterizedTest(struct error_case *c, policy_errors, refused)
{
	g_autofree char *text = dq(c->doc);
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) p = vr_policy_parse(text, -1, &err);

	cr_assert_null(p, "%s: expected the document to be refused:\n%s", c->name, text);
	assert_policy_error(err, c->code, c->prefix, c->name);
}

Test(policy_errors, nul_inside_the_given_length)
{
	const char text[] = "{}\0{}";
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) p = vr_policy_parse(text, sizeof(text) - 1, &err);

	cr_assert_null(p, "a NUL byte inside the length should be refused");
	assert_policy_error(err, VR_POLICY_ERROR_SYNTAX,
			    "line 1, column 3 (offset 2): ", "NUL inside the length");
}

/* ---- the JSON round trip ---- */

TestSuite(policy_json, .description = "vr_policy_to_json() reads back to the same policy");

static void assert_round_trip(const struct vr_policy *p, const char *what)
{
	g_autofree char *json = vr_policy_to_json(p);
	g_autofree char *again = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) back = vr_policy_parse(json, -1, &err);

	cr_assert_not_null(back, "%s: the JSON should parse back:\n%s\ngot: %s", what, json,
			   err ? err->message : "?");
	assert_policies_equal(back, p, what);
	again = vr_policy_to_json(back);
	cr_assert_str_eq(again, json, "%s: writing the parsed policy should give the same text",
			 what);
}

Test(policy_json, round_trip_of_every_profile)
{
	for (const char *const *n = vr_policy_profile_names(); *n; n++) {
		g_autoptr(vr_policy) p = profile_ok(*n);

		assert_round_trip(p, *n);
	}
}

Test(policy_json, round_trip_of_the_full_document)
{
	g_autoptr(vr_policy) p = parse_ok(full_doc);

	assert_round_trip(p, "the full document");
}

Test(policy_json, round_trip_of_a_hand_made_policy)
{
	g_autoptr(vr_policy) p = profile_ok("damon-reclaim-6.12");
	struct vr_scheme *s = vr_scheme_new("psi-driven", VR_ACTION_PAGEOUT);
	struct vr_scheme *t = vr_scheme_new("extremes \"quoted\" / \xc3\xa9", VR_ACTION_STAT);

	p->attrs = (struct vr_monitor_attrs){ .sample_interval_us = 1000,
					      .aggr_interval_us = 50000,
					      .ops_update_interval_us = 0,
					      .min_nr_regions = 3,
					      .max_nr_regions = UINT32_MAX };
	s->quota = (struct vr_quota){ .ms = 7,
				      .sz = 3 * MIB,
				      .reset_interval_ms = 250,
				      .weight_sz = 5,
				      .weight_nr_accesses = 6,
				      .weight_age = 7,
				      .charge = VR_CHARGE_SIZE };
	s->quota.goals[0] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 1000, 0 };
	s->quota.goals[1] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 10000, 0 };
	s->quota.goals[2] = (struct vr_quota_goal){ VR_GOAL_FREE_MEM_RATE, 250, 0 };
	s->quota.goals[3] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, UINT64_MAX, 0 };
	s->quota.nr_goals = 4;
	s->filters[0] = (struct vr_scheme_filter){ VR_FILTER_ANON, false };
	s->filters[1] = (struct vr_scheme_filter){ VR_FILTER_YOUNG, true };
	s->nr_filters = 2;
	s->pattern = (struct vr_access_pattern){ 4096, 8192, 1, 2, 3, 4 };
	s->wmarks.metric = VR_WMARK_FREE_MEM_RATE;
	s->wmarks.interval_us = 1;
	s->wmarks.high = s->wmarks.mid = s->wmarks.low = 0;
	t->pattern.min_sz_bytes = UINT64_MAX;
	t->pattern.min_nr_accesses = UINT32_MAX;
	t->pattern.min_age_us = UINT64_MAX;
	t->quota.reset_interval_ms = UINT64_MAX;
	t->wmarks.high = UINT64_MAX;
	g_ptr_array_add(p->schemes, s);
	g_ptr_array_add(p->schemes, t);
	cr_assert_eq(p->schemes->len, 3);
	assert_round_trip(p, "hand-made");
}

Test(policy_json, output_is_a_complete_document)
{
	g_autoptr(vr_policy) p = profile_ok(NULL);
	g_autofree char *json = vr_policy_to_json(p);
	const char *members[] = { "\"profile\": \"damon-reclaim-2021\"",
				  "\"monitoring\"",
				  "\"sample_interval_us\": 5000",
				  "\"schemes\"",
				  "\"name\": \"damon-reclaim\"",
				  "\"action\": \"pageout\"",
				  "\"max_size\": 18446744073709551615",
				  "\"min_age_us\": 5000000",
				  "\"weights\"",
				  "\"goals\"",
				  "\"metric\": \"free_mem_rate\"",
				  "\"low\": 200" };

	for (size_t i = 0; i < ARRAY_LEN(members); i++)
		cr_assert_not_null(strstr(json, members[i]), "expected %s in\n%s", members[i],
				   json);
	cr_assert(g_str_has_suffix(json, "}\n"), "the text should end with a newline");
}

Test(policy_json, no_profile_is_written_as_none)
{
	g_autoptr(vr_policy) p = profile_ok(NULL);
	g_autofree char *json = NULL;
	g_autoptr(vr_policy) back = NULL;

	g_clear_pointer(&p->profile, g_free);
	json = vr_policy_to_json(p);
	cr_assert_null(strstr(json, "\"profile\""), "a NULL profile is not written:\n%s", json);
	back = vr_policy_parse(json, -1, NULL);
	cr_assert_not_null(back);
	cr_assert_str_eq(back->profile, "damon-reclaim-2021", "it reads back as the default");
}

/* ---- applying to a context ---- */

TestSuite(policy_apply, .description = "vr_policy_apply(): all or nothing, stats kept by name");

static void fake_prepare(void *data, const struct vr_target *t, struct vr_region *regions,
			 size_t nr, uint64_t now_us)
{
	(void)data, (void)t, (void)regions, (void)nr, (void)now_us;
}

static void fake_check(void *data, const struct vr_target *t, struct vr_region *regions, size_t nr,
		       uint64_t now_us)
{
	(void)data, (void)t, (void)now_us;
	for (size_t i = 0; i < nr; i++)
		regions[i].accessed = false;
}

static const struct vr_access_ops fake_ops = {
	.name = "fake",
	.prepare = fake_prepare,
	.check = fake_check,
};

static void apply_ok(const struct vr_policy *p, struct vr_ctx *ctx, const char *what)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_policy_apply(p, ctx, &err), "%s: apply should succeed, got: %s", what,
		  err ? err->message : "FALSE without an error");
}

/* @ctx holds exactly @p's attributes and schemes. */
static void assert_ctx_has(const struct vr_ctx *ctx, const struct vr_policy *p, const char *what)
{
	assert_attrs_equal(vr_ctx_attrs(ctx), &p->attrs, what);
	cr_assert_eq(vr_ctx_nr_schemes(ctx), p->schemes->len, "%s: expected %u schemes, got %u",
		     what, p->schemes->len, vr_ctx_nr_schemes(ctx));
	for (guint i = 0; i < p->schemes->len; i++)
		assert_schemes_equal(vr_ctx_scheme(ctx, i), scheme_at(p, i), what);
}

Test(policy_apply, sets_attrs_and_schemes)
{
	g_autoptr(vr_ctx) ctx = vr_ctx_new(&fake_ops, NULL, 1);
	g_autoptr(vr_policy) p = parse_ok(full_doc);

	apply_ok(p, ctx, "the full document");
	assert_ctx_has(ctx, p, "after applying the full document");
}

Test(policy_apply, keeps_stats_by_name)
{
	g_autoptr(vr_ctx) ctx = vr_ctx_new(&fake_ops, NULL, 1);
	g_autoptr(vr_policy) p = profile_ok(NULL);
	g_autoptr(vr_policy)
		q = parse_ok("{ 'schemes': [ { 'name': 'new', 'action': 'stat' },"
			     "               { 'name': 'damon-reclaim', 'action': 'pageout',"
			     "                 'quota': { 'ms': 10 } } ] }");

	apply_ok(p, ctx, "the default profile");
	vr_ctx_scheme(ctx, 0)->stats.nr_tried = 7;
	apply_ok(p, ctx, "the same policy again");
	EQ("re-applied", "stats.nr_tried", vr_ctx_scheme(ctx, 0)->stats.nr_tried, 7);

	/* a changed policy: the scheme moved to index 1, a new one at 0 */
	apply_ok(q, ctx, "a changed policy");
	assert_ctx_has(ctx, q, "after the change");
	EQ("moved", "schemes[1].stats.nr_tried", vr_ctx_scheme(ctx, 1)->stats.nr_tried, 7);
	EQ("new", "schemes[0].stats.nr_tried", vr_ctx_scheme(ctx, 0)->stats.nr_tried, 0);
}

/*
 * The context after vr_ctx_new() + applying the default profile + stats: a
 * failing apply must leave exactly this.
 */
static struct vr_ctx *ctx_with_default_profile(void)
{
	struct vr_ctx *ctx = vr_ctx_new(&fake_ops, NULL, 1);
	g_autoptr(vr_policy) p = profile_ok(NULL);

	apply_ok(p, ctx, "the default profile");
	vr_ctx_scheme(ctx, 0)->stats.nr_tried = 7;
	return ctx;
}

static void assert_unchanged(struct vr_ctx *ctx, const GError *err, const char *prefix,
			     const char *what)
{
	g_autoptr(vr_policy) want = profile_ok(NULL);

	assert_policy_error(err, VR_POLICY_ERROR_INVALID, prefix, what);
	assert_ctx_has(ctx, want, what);
	EQ(what, "stats.nr_tried", vr_ctx_scheme(ctx, 0)->stats.nr_tried, 7);
}

Test(policy_apply, an_invalid_scheme_changes_nothing)
{
	g_autoptr(vr_ctx) ctx = ctx_with_default_profile();
	g_autoptr(vr_policy) p = profile_ok("damon-reclaim-6.12");
	g_autoptr(GError) err = NULL;
	struct vr_scheme *bad = vr_scheme_new("bad", VR_ACTION_COLD);

	/* valid, different attributes: they must not be applied either */
	p->attrs.min_nr_regions = 20;
	p->attrs.aggr_interval_us = 200000;
	bad->pattern.min_sz_bytes = 2 * VR_PAGE_SIZE;
	bad->pattern.max_sz_bytes = VR_PAGE_SIZE;
	g_ptr_array_add(p->schemes, bad);
	cr_assert_not(vr_policy_apply(p, ctx, &err), "a scheme with min > max should be refused");
	assert_unchanged(ctx, err, "schemes[1].pattern.min_size (8192) is above", "bad scheme");
}

Test(policy_apply, duplicate_names_change_nothing)
{
	g_autoptr(vr_ctx) ctx = ctx_with_default_profile();
	g_autoptr(vr_policy) p = profile_ok(NULL);
	g_autoptr(GError) err = NULL;

	p->attrs.max_nr_regions = 500;
	g_ptr_array_add(p->schemes, vr_scheme_new("damon-reclaim", VR_ACTION_STAT));
	cr_assert_not(vr_policy_apply(p, ctx, &err), "duplicate names should be refused");
	assert_unchanged(ctx, err, "schemes[1].name: 'damon-reclaim' is already used by schemes[0]",
			 "duplicate names");
}

Test(policy_apply, invalid_attrs_change_nothing)
{
	g_autoptr(vr_ctx) ctx = ctx_with_default_profile();
	g_autoptr(vr_policy) p = profile_ok(NULL);
	g_autoptr(GError) err = NULL;

	p->attrs.aggr_interval_us = 4000;
	g_ptr_array_add(p->schemes, vr_scheme_new("other", VR_ACTION_STAT));
	cr_assert_not(vr_policy_apply(p, ctx, &err), "aggr < sample should be refused");
	assert_unchanged(ctx, err, "monitoring.aggr_interval_us = 4000: ", "aggr < sample");
}

Test(policy_apply, attrs_the_context_refuses_change_nothing)
{
	g_autoptr(vr_ctx) ctx = ctx_with_default_profile();
	g_autoptr(vr_policy) p = profile_ok(NULL);
	g_autoptr(GError) err = NULL;
	const struct vr_range ranges[] = {
		{ 0, VR_PAGE_SIZE },
		{ 2 * VR_PAGE_SIZE, 3 * VR_PAGE_SIZE },
		{ 4 * VR_PAGE_SIZE, 5 * VR_PAGE_SIZE },
		{ 6 * VR_PAGE_SIZE, 7 * VR_PAGE_SIZE },
	};

	cr_assert_not_null(vr_ctx_add_target(ctx, 1, ranges, ARRAY_LEN(ranges), &err),
			   "adding a 4-range target: %s", err ? err->message : "?");
	/* valid alone, but the target has more ranges than max_nr_regions */
	p->attrs.min_nr_regions = 3;
	p->attrs.max_nr_regions = 3;
	g_ptr_array_set_size(p->schemes, 0);
	cr_assert_not(vr_policy_apply(p, ctx, &err), "max_nr_regions 3 < 4 ranges: refused");
	assert_unchanged(ctx, err, "monitoring.max_nr_regions = 3: ", "too few regions");
}

Test(policy_apply, no_schemes_clears_them)
{
	g_autoptr(vr_ctx) ctx = ctx_with_default_profile();
	g_autoptr(vr_policy)
		p = parse_ok("{ 'schemes': [], 'monitoring': { 'max_nr_regions': 99 } }");

	apply_ok(p, ctx, "no schemes");
	assert_ctx_has(ctx, p, "after applying no schemes");
}

/* A copy reads back the same and owns its schemes: changing it leaves the
 * original as it was. */
Test(policy, copy_is_deep)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_policy) p = vr_policy_parse(
		"{\"schemes\":[{\"name\":\"a\",\"action\":\"pageout\",\"quota\":{\"sz\":4096}},"
		"{\"name\":\"b\",\"action\":\"stat\"}]}",
		-1, &error);
	cr_assert_not_null(p, "%s", error ? error->message : "");
	g_autoptr(vr_policy) c = vr_policy_copy(p);
	g_autofree char *a = vr_policy_to_json(p);
	g_autofree char *b = vr_policy_to_json(c);
	cr_expect_str_eq(a, b, "the copy should read back the same");
	struct vr_scheme *s = g_ptr_array_index(c->schemes, 0);
	s->quota.sz = 8192;
	const struct vr_scheme *orig = g_ptr_array_index(p->schemes, 0);
	cr_expect_eq(orig->quota.sz, 4096, "the original's scheme must not change");
	cr_expect_neq(c->profile, p->profile, "the profile name is copied, not shared");
}
