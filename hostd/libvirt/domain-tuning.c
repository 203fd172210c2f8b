/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's vreclaim tuning (see domain-xml.h and docs/domain-xml.md): its
 * settings and their values, `vreclaimctl set` (vr_domain_tuning_set()),
 * the metadata element written back (vr_domain_tuning_to_xml()) and the
 * policy with the domain's overrides, and the error domain of both. Reading
 * XML is domain-xml.c's job, built on this file (never the other way).
 *
 * One table describes the settings (element name, parent, kind of value,
 * limit); the metadata parser, vr_domain_tuning_set() and the writer all go
 * through it, so the XML and `vreclaimctl set` accept the same values and
 * say the same things about bad ones.
 */
#include "libvirt/domain-tuning-private.h"

#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-domain-xml-error-quark, vr_domain_xml_error)
/* clang-format on */

/* ---- errors ---- */

gboolean vr_domain_xml_set_error(GError **error, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, VR_DOMAIN_XML_ERROR, code, msg);
	return FALSE;
}

#define invalid(error, ...) vr_domain_xml_set_error(error, VR_DOMAIN_XML_ERROR_INVALID, __VA_ARGS__)

/* ---- actions ---- */

#define ACTIONS_EXPECTED "one or more of agent-reclaim, host-pageout, balloon"

char *vr_domain_actions_to_string(guint actions)
{
	g_autoptr(GString) s = g_string_new("");

	for (guint bit = 1; bit & VR_DOMAIN_ACTIONS_ALL; bit <<= 1) {
		if (!(actions & bit))
			continue;
		if (s->len)
			g_string_append_c(s, ' ');
		g_string_append(s, vr_domain_action_name((enum vr_domain_action)bit));
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* ---- the settings ---- */

const struct vr_tuning_field_desc vr_tuning_fields[NR_FIELDS] = {
	[F_DOMAIN] = { "domain", F_NONE, K_CONTAINER, 0, 0, "" },
	[F_ENABLE] = { "enable", F_DOMAIN, K_YESNO, 0, 0, "yes or no" },
	[F_POLICY] = { "policy", F_DOMAIN, K_NAME, 0, 0,
		       "1 to 64 of A-Z a-z 0-9 _ . -, not starting with '.', not 'default'" },
	[F_PRIORITY] = { "priority", F_DOMAIN, K_UINT, VR_DOMAIN_PRIORITY_MAX, 0,
			 "an integer from 0 to 100" },
	[F_GUARANTEED] = { "guaranteed", F_DOMAIN, K_SIZE, VR_DOMAIN_SIZE_MAX_BYTES, 0,
			   "a size up to 1 PiB" },
	[F_ACTIONS] = { "actions", F_DOMAIN, K_ACTIONS, 0, 0, ACTIONS_EXPECTED },
	[F_SCHEME] = { "scheme", F_DOMAIN, K_CONTAINER, 0, 0, "" },
	[F_MIN_AGE] = { "min-age", F_SCHEME, K_TIME, VR_DOMAIN_MIN_AGE_MAX_MS * 1000, 1,
			"a time up to 30 days" },
	[F_QUOTA_TIME] = { "quota-time", F_SCHEME, K_TIME, VR_DOMAIN_QUOTA_TIME_MAX_MS * 1000, 1000,
			   "a time in ms up to 1 hour" },
	[F_QUOTA_SIZE] = { "quota-size", F_SCHEME, K_SIZE, VR_DOMAIN_SIZE_MAX_BYTES, 0,
			   "a size up to 1 PiB" },
	[F_MAX_ACCESSES] = { "max-accesses", F_SCHEME, K_UINT, VR_DOMAIN_MAX_ACCESSES_MAX, 0,
			     "an integer from 0 to 65536" },
};

enum vr_tuning_field vr_tuning_field_lookup(const char *name, enum vr_tuning_field parent)
{
	for (guint f = 0; f < NR_FIELDS; f++)
		if (vr_tuning_fields[f].parent == parent &&
		    strcmp(vr_tuning_fields[f].name, name) == 0)
			return (enum vr_tuning_field)f;
	return F_NONE;
}

/* The names of the elements @parent may hold, comma-separated. Return: owned. */
char *vr_tuning_field_children(enum vr_tuning_field parent)
{
	g_autoptr(GString) s = g_string_new("");

	for (guint f = 0; f < NR_FIELDS; f++) {
		if (vr_tuning_fields[f].parent != parent)
			continue;
		if (s->len)
			g_string_append(s, ", ");
		g_string_append(s, vr_tuning_fields[f].name);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* ---- units ---- */

/*
 * The scale of a size unit, as libvirt reads unit= on <memory>: b/byte/bytes;
 * a letter k m g t p e (any case) alone or followed by "iB" is a power of
 * 1024, followed by "B" a power of 1000.
 */
gboolean vr_tuning_size_unit_scale(const char *unit, uint64_t *scale)
{
	static const char exps[] = "kmgtpe";
	const char *e;
	uint64_t base, s = 1;

	if (!g_ascii_strcasecmp(unit, "b") || !g_ascii_strcasecmp(unit, "byte") ||
	    !g_ascii_strcasecmp(unit, "bytes")) {
		*scale = 1;
		return TRUE;
	}
	if (!unit[0] || !(e = strchr(exps, g_ascii_tolower(unit[0]))))
		return FALSE;
	if (!unit[1] || !g_ascii_strcasecmp(unit + 1, "iB"))
		base = 1024;
	else if (g_ascii_tolower(unit[1]) == 'b' && !unit[2])
		base = 1000;
	else
		return FALSE;
	for (const char *p = exps; p <= e; p++)
		s *= base;
	*scale = s;
	return TRUE;
}

static const struct {
	const char *name;
	uint64_t us;
} time_units[] = {
	{ "us", 1 },
	{ "ms", 1000 },
	{ "s", 1000 * 1000 },
	{ "min", 60ULL * 1000 * 1000 },
	{ "h", 3600ULL * 1000 * 1000 },
};

/* The time units a field stored in @unit_us accepts, for messages. Return: owned. */
static char *time_units_expected(uint64_t unit_us)
{
	g_autoptr(GString) s = g_string_new("");

	for (guint i = 0; i < G_N_ELEMENTS(time_units); i++) {
		if (time_units[i].us < unit_us)
			continue;
		if (s->len)
			g_string_append(s, ", ");
		g_string_append(s, time_units[i].name);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

static gboolean time_unit_scale(const char *unit, uint64_t unit_us, uint64_t *scale_us)
{
	for (guint i = 0; i < G_N_ELEMENTS(time_units); i++) {
		if (strcmp(time_units[i].name, unit) == 0 && time_units[i].us >= unit_us) {
			*scale_us = time_units[i].us;
			return TRUE;
		}
	}
	return FALSE;
}

/* ---- values ---- */

/* A decimal number: digits only, fitting in 64 bits. */
gboolean vr_tuning_parse_digits(const char *s, uint64_t *out, gboolean *overflow)
{
	uint64_t v = 0;

	*overflow = FALSE;
	if (!*s)
		return FALSE;
	for (; *s; s++) {
		if (!g_ascii_isdigit(*s))
			return FALSE;
		if (v > (G_MAXUINT64 - (uint64_t)(*s - '0')) / 10)
			*overflow = TRUE;
		else
			v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return !*overflow;
}

gboolean vr_domain_tuning_policy_name_valid(const char *name, GError **error)
{
	size_t len = strlen(name);

	if (len == 0 || len > VR_DOMAIN_POLICY_NAME_MAX)
		return invalid(error,
			       "policy name '%s' has %zu characters (expected 1 to %d of A-Z a-z "
			       "0-9 _ . -)",
			       name, len, VR_DOMAIN_POLICY_NAME_MAX);
	if (name[0] == '.')
		return invalid(error,
			       "policy name '%s' starts with '.' (expected a name, never a "
			       "path)",
			       name);
	for (const char *p = name; *p; p++)
		if (!g_ascii_isalnum(*p) && *p != '_' && *p != '.' && *p != '-')
			return invalid(error,
				       "policy name '%s' has the character '%c' (allowed: A-Z a-z "
				       "0-9 _ . -; a name, never a path)",
				       name, g_ascii_isprint(*p) ? *p : '?');
	if (strcmp(name, "default") == 0)
		return invalid(error, "policy name 'default' is reserved (leave the policy unset "
				      "for the built-in default)");
	return TRUE;
}

gboolean vr_domain_actions_parse(const char *what, const char *text, const char *separators,
				 guint *out, GError **error)
{
	g_auto(GStrv) tokens = g_strsplit_set(text, separators, -1);
	guint set = 0;

	for (char **t = tokens; *t; t++) {
		enum vr_domain_action bit = VR_DOMAIN_ACTION_NONE;

		if (!**t)
			continue;
		if (!vr_domain_action_from_name(*t, &bit) || bit == VR_DOMAIN_ACTION_NONE)
			return invalid(error, "%s: unknown action '%s' (expected %s)", what, *t,
				       ACTIONS_EXPECTED);
		if (set & bit)
			return invalid(error, "%s: action '%s' is given twice", what, *t);
		set |= bit;
	}
	if (!set)
		return invalid(error, "%s: no action in '%s' (expected %s)", what, text,
			       ACTIONS_EXPECTED);
	*out = set;
	return TRUE;
}

/* Stores the number @v (already in the field's stored unit) into @t. */
static void store_number(struct vr_domain_tuning *t, enum vr_tuning_field f, uint64_t v)
{
	switch (f) {
	case F_PRIORITY:
		t->priority = (guint)v;
		break;
	case F_GUARANTEED:
		t->guaranteed_bytes = v;
		break;
	case F_MIN_AGE:
		t->scheme.has_min_age = TRUE;
		t->scheme.min_age_us = v;
		break;
	case F_QUOTA_TIME:
		t->scheme.has_quota_time = TRUE;
		t->scheme.quota_time_ms = v;
		break;
	case F_QUOTA_SIZE:
		t->scheme.has_quota_size = TRUE;
		t->scheme.quota_size_bytes = v;
		break;
	case F_MAX_ACCESSES:
		t->scheme.has_max_accesses = TRUE;
		t->scheme.max_accesses = (uint32_t)v;
		break;
	default:
		g_assert_not_reached();
	}
}

/*
 * A number of field @f: @digits in @unit (NULL: the default unit). @what
 * names the setting in messages ("<priority>" or "priority"), @given is the
 * value as the user wrote it. Return: the value in the field's stored unit.
 */
static gboolean parse_number(enum vr_tuning_field f, const char *what, const char *given,
			     const char *digits, const char *unit, uint64_t *out, GError **error)
{
	const struct vr_tuning_field_desc *d = &vr_tuning_fields[f];
	uint64_t v, scale = 1;
	gboolean overflow;

	if (unit && d->kind == K_UINT)
		return invalid(error, "%s: '%s' is not a whole number (expected %s)", what, given,
			       d->expected);
	if (unit && d->kind == K_SIZE && !vr_tuning_size_unit_scale(unit, &scale))
		return invalid(error, "%s: unknown unit '%s' (expected %s)", what, unit,
			       VR_TUNING_SIZE_UNITS_EXPECTED);
	if (unit && d->kind == K_TIME && !time_unit_scale(unit, d->time_unit_us, &scale)) {
		g_autofree char *units = time_units_expected(d->time_unit_us);

		return invalid(error, "%s: unknown unit '%s' (expected %s)", what, unit, units);
	}
	if (!unit && d->kind == K_TIME)
		scale = 1000; /* ms */
	if (!vr_tuning_parse_digits(digits, &v, &overflow)) {
		if (overflow)
			return invalid(error, "%s: '%s' is out of range (expected %s)", what, given,
				       d->expected);
		return invalid(error, "%s: '%s' is not a whole number (expected %s)", what, given,
			       d->expected);
	}
	if ((v && v > G_MAXUINT64 / scale) || v * scale > d->max)
		return invalid(error, "%s: '%s' is out of range (expected %s)", what, given,
			       d->expected);
	v *= scale;
	if (d->kind == K_TIME)
		v /= d->time_unit_us; /* exact: units below it are refused above */
	*out = v;
	return TRUE;
}

/*
 * Sets field @f of @t from the text @value: from the XML (@unit is the unit
 * attribute, or NULL) or from the command line (@cli: a unit is a suffix of
 * @value, actions may be separated by commas).
 */
gboolean vr_tuning_field_set(struct vr_domain_tuning *t, enum vr_tuning_field f, const char *what,
			     const char *value, const char *unit, gboolean cli, GError **error)
{
	const struct vr_tuning_field_desc *d = &vr_tuning_fields[f];
	g_autofree char *digits = NULL;
	g_autofree char *given = NULL;
	uint64_t v = 0;

	if (!*value)
		return invalid(error, "%s: the value is empty (expected %s)", what, d->expected);
	switch (d->kind) {
	case K_YESNO:
		if (strcmp(value, "yes") && strcmp(value, "no"))
			return invalid(error, "%s: '%s' is not allowed (expected %s)", what, value,
				       d->expected);
		t->enable = strcmp(value, "yes") == 0;
		return TRUE;
	case K_NAME: {
		g_autoptr(GError) local = NULL;

		if (!vr_domain_tuning_policy_name_valid(value, &local))
			return invalid(error, "%s: %s", what, local->message);
		g_free(t->policy);
		t->policy = g_strdup(value);
		return TRUE;
	}
	case K_ACTIONS:
		return vr_domain_actions_parse(what, value, cli ? ", \t" : " \t\r\n", &t->actions,
					       error);
	case K_UINT:
	case K_SIZE:
	case K_TIME:
		if (cli) {
			size_t n = strspn(value, "0123456789");

			digits = g_strndup(value, n);
			unit = value[n] ? value + n : NULL;
			given = g_strdup(value);
			if (unit && !n) /* no number in front: not a unit problem */
				return invalid(error, "%s: '%s' is not a number (expected %s)",
					       what, value, d->expected);
		} else {
			digits = g_strdup(value);
			given = unit ? g_strdup_printf("%s %s", value, unit) : g_strdup(value);
		}
		if (!parse_number(f, what, given, digits, unit, &v, error))
			return FALSE;
		store_number(t, f, v);
		return TRUE;
	case K_CONTAINER:
		break;
	}
	g_assert_not_reached();
}

/* Restores the default of field @f (vr_domain_tuning_set()'s "default"). */
static void field_reset(struct vr_domain_tuning *t, enum vr_tuning_field f)
{
	switch (f) {
	case F_ENABLE:
		t->enable = TRUE; /* the default once the metadata exists */
		break;
	case F_POLICY:
		g_clear_pointer(&t->policy, g_free);
		break;
	case F_PRIORITY:
		t->priority = VR_DOMAIN_PRIORITY_DEFAULT;
		break;
	case F_GUARANTEED:
		t->guaranteed_bytes = 0;
		break;
	case F_ACTIONS:
		t->actions = VR_DOMAIN_ACTIONS_DEFAULT;
		break;
	case F_MIN_AGE:
		t->scheme.has_min_age = FALSE;
		t->scheme.min_age_us = 0;
		break;
	case F_QUOTA_TIME:
		t->scheme.has_quota_time = FALSE;
		t->scheme.quota_time_ms = 0;
		break;
	case F_QUOTA_SIZE:
		t->scheme.has_quota_size = FALSE;
		t->scheme.quota_size_bytes = 0;
		break;
	case F_MAX_ACCESSES:
		t->scheme.has_max_accesses = FALSE;
		t->scheme.max_accesses = 0;
		break;
	default:
		g_assert_not_reached();
	}
}

/* ---- the tuning ---- */

struct vr_domain_tuning *vr_domain_tuning_new(void)
{
	struct vr_domain_tuning *t = g_new0(struct vr_domain_tuning, 1);

	t->enable = FALSE;
	t->priority = VR_DOMAIN_PRIORITY_DEFAULT;
	t->actions = VR_DOMAIN_ACTIONS_DEFAULT;
	return t;
}

struct vr_domain_tuning *vr_domain_tuning_copy(const struct vr_domain_tuning *t)
{
	struct vr_domain_tuning *c = g_new(struct vr_domain_tuning, 1);

	*c = *t;
	c->policy = g_strdup(t->policy);
	return c;
}

void vr_domain_tuning_free(struct vr_domain_tuning *t)
{
	if (!t)
		return;
	g_free(t->policy);
	g_free(t);
}

/* Moves @from's settings into @to (atomic commit of a copy); frees @from. */
static void tuning_commit(struct vr_domain_tuning *to, struct vr_domain_tuning *from)
{
	g_free(to->policy);
	*to = *from;
	g_free(from);
}

gboolean vr_domain_tuning_equal(const struct vr_domain_tuning *a, const struct vr_domain_tuning *b)
{
	const struct vr_domain_scheme_overrides *x = &a->scheme, *y = &b->scheme;

	return !a->enable == !b->enable && g_strcmp0(a->policy, b->policy) == 0 &&
	       a->priority == b->priority && a->guaranteed_bytes == b->guaranteed_bytes &&
	       a->actions == b->actions && !x->has_min_age == !y->has_min_age &&
	       (!x->has_min_age || x->min_age_us == y->min_age_us) &&
	       !x->has_quota_time == !y->has_quota_time &&
	       (!x->has_quota_time || x->quota_time_ms == y->quota_time_ms) &&
	       !x->has_quota_size == !y->has_quota_size &&
	       (!x->has_quota_size || x->quota_size_bytes == y->quota_size_bytes) &&
	       !x->has_max_accesses == !y->has_max_accesses &&
	       (!x->has_max_accesses || x->max_accesses == y->max_accesses);
}

/* ---- setting from the command line ---- */

static char *settable_keys(void)
{
	g_autoptr(GString) s = g_string_new("");

	for (guint f = 0; f < NR_FIELDS; f++) {
		if (vr_tuning_fields[f].kind == K_CONTAINER)
			continue;
		if (s->len)
			g_string_append(s, ", ");
		g_string_append(s, vr_tuning_fields[f].name);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* Sets @key on @t in place (the callers work on a copy). */
static gboolean tuning_set_one(struct vr_domain_tuning *t, const char *key, const char *value,
			       GError **error)
{
	enum vr_tuning_field f = F_NONE;

	for (guint i = 0; i < NR_FIELDS; i++)
		if (vr_tuning_fields[i].kind != K_CONTAINER &&
		    strcmp(vr_tuning_fields[i].name, key) == 0)
			f = (enum vr_tuning_field)i;
	if (f == F_NONE) {
		g_autofree char *keys = settable_keys();

		return invalid(error, "unknown key '%s' (expected one of %s)", key, keys);
	}
	if (strcmp(value, "default") == 0) {
		field_reset(t, f);
		return TRUE;
	}
	return vr_tuning_field_set(t, f, key, value, NULL, TRUE, error);
}

gboolean vr_domain_tuning_set(struct vr_domain_tuning *t, const char *key, const char *value,
			      GError **error)
{
	g_autoptr(vr_domain_tuning) c = vr_domain_tuning_copy(t);

	if (!tuning_set_one(c, key, value, error))
		return FALSE;
	tuning_commit(t, g_steal_pointer(&c));
	return TRUE;
}

gboolean vr_domain_tuning_set_args(struct vr_domain_tuning *t, const char *const *args,
				   GError **error)
{
	g_autoptr(vr_domain_tuning) c = vr_domain_tuning_copy(t);
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

	for (const char *const *a = args; a && *a; a++) {
		const char *eq = strchr(*a, '=');
		g_autofree char *key = NULL;

		if (!eq || eq == *a)
			return invalid(error, "'%s': expected KEY=VALUE", *a);
		key = g_strndup(*a, (gsize)(eq - *a));
		if (g_hash_table_contains(seen, key))
			return invalid(error, "%s: the key is given twice", key);
		if (!tuning_set_one(c, key, eq + 1, error))
			return FALSE;
		g_hash_table_add(seen, g_steal_pointer(&key));
	}
	tuning_commit(t, g_steal_pointer(&c));
	return TRUE;
}

/* ---- writing the metadata ---- */

/* @bytes as (number, unit) in the largest binary unit that divides it. */
static void append_size(GString *s, const char *name, uint64_t bytes)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	guint u = 0;

	while (bytes && u + 1 < G_N_ELEMENTS(units) && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	g_string_append_printf(s, "<%s unit=\"%s\">%" G_GUINT64_FORMAT "</%s>\n", name, units[u],
			       bytes, name);
}

/* @us as (number, unit) in the largest time unit that divides it. */
static void append_time(GString *s, const char *name, uint64_t us)
{
	guint u = 1; /* ms for 0 */

	if (us) {
		for (u = G_N_ELEMENTS(time_units) - 1; u > 0; u--)
			if (us % time_units[u].us == 0)
				break;
	}
	g_string_append_printf(s, "<%s unit=\"%s\">%" G_GUINT64_FORMAT "</%s>\n", name,
			       time_units[u].name, us / time_units[u].us, name);
}

char *vr_domain_tuning_to_xml(const struct vr_domain_tuning *t)
{
	const struct vr_domain_scheme_overrides *o = &t->scheme;
	g_autoptr(GString) s = g_string_new("<domain>\n");
	g_autofree char *actions = vr_domain_actions_to_string(t->actions);

	g_string_append_printf(s, "  <enable>%s</enable>\n", t->enable ? "yes" : "no");
	if (t->policy) {
		g_autofree char *p = g_markup_escape_text(t->policy, -1);

		g_string_append_printf(s, "  <policy>%s</policy>\n", p);
	}
	g_string_append_printf(s, "  <priority>%u</priority>\n", t->priority);
	g_string_append(s, "  ");
	append_size(s, "guaranteed", t->guaranteed_bytes);
	g_string_append_printf(s, "  <actions>%s</actions>\n", actions);
	if (o->has_min_age || o->has_quota_time || o->has_quota_size || o->has_max_accesses) {
		g_string_append(s, "  <scheme>\n");
		if (o->has_min_age) {
			g_string_append(s, "    ");
			append_time(s, "min-age", o->min_age_us);
		}
		if (o->has_quota_time) {
			g_string_append(s, "    ");
			append_time(s, "quota-time", o->quota_time_ms * 1000);
		}
		if (o->has_quota_size) {
			g_string_append(s, "    ");
			append_size(s, "quota-size", o->quota_size_bytes);
		}
		if (o->has_max_accesses)
			g_string_append_printf(s, "    <max-accesses>%u</max-accesses>\n",
					       o->max_accesses);
		g_string_append(s, "  </scheme>\n");
	}
	g_string_append(s, "</domain>\n");
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* ---- the policy with the overrides ---- */

static gboolean has_overrides(const struct vr_domain_scheme_overrides *o)
{
	return o->has_min_age || o->has_quota_time || o->has_quota_size || o->has_max_accesses;
}

/* Applies @o to the pageout scheme @s, checking what the engine would refuse. */
static gboolean apply_overrides(const struct vr_domain_scheme_overrides *o, struct vr_scheme *s,
				GError **error)
{
	g_autoptr(GError) local = NULL;

	if (o->has_min_age && o->min_age_us > s->pattern.max_age_us)
		return invalid(error,
			       "<min-age> %" G_GUINT64_FORMAT " us is above scheme '%s''s "
			       "pattern.max_age_us (%" G_GUINT64_FORMAT ")",
			       o->min_age_us, s->name, s->pattern.max_age_us);
	if (o->has_max_accesses && o->max_accesses < s->pattern.min_nr_accesses)
		return invalid(error,
			       "<max-accesses> %u is below scheme '%s''s pattern.min_nr_accesses "
			       "(%u)",
			       o->max_accesses, s->name, s->pattern.min_nr_accesses);
	if (o->has_min_age)
		s->pattern.min_age_us = o->min_age_us;
	if (o->has_max_accesses)
		s->pattern.max_nr_accesses = o->max_accesses;
	if (o->has_quota_time)
		s->quota.ms = o->quota_time_ms;
	if (o->has_quota_size)
		s->quota.sz = o->quota_size_bytes;
	if (vr_quota_is_set(&s->quota) && !s->quota.reset_interval_ms)
		return invalid(error,
			       "<%s> needs a quota window, and scheme '%s' has none "
			       "(quota.reset_interval_ms is 0 in the policy)",
			       o->has_quota_time ? "quota-time" : "quota-size", s->name);
	if (!vr_scheme_validate(s, &local))
		return invalid(error, "scheme '%s' with the domain's overrides: %s", s->name,
			       local->message);
	return TRUE;
}

struct vr_policy *vr_domain_tuning_policy(const struct vr_domain_tuning *t,
					  const struct vr_policy *base, GError **error)
{
	g_autoptr(vr_policy) p = vr_policy_copy(base);
	guint nr_pageout = 0;

	if (!has_overrides(&t->scheme))
		return g_steal_pointer(&p);
	for (guint i = 0; i < p->schemes->len; i++) {
		struct vr_scheme *s = g_ptr_array_index(p->schemes, i);

		if (s->action != VR_ACTION_PAGEOUT)
			continue;
		nr_pageout++;
		if (!apply_overrides(&t->scheme, s, error))
			return NULL;
	}
	if (!nr_pageout) {
		invalid(error,
			"<scheme> overrides pageout schemes, and the policy (profile '%s') has "
			"none (remove <scheme> or choose another policy)",
			p->profile);
		return NULL;
	}
	return g_steal_pointer(&p);
}
