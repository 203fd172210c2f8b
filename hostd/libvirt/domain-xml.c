/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's vreclaim tuning in libvirt's domain XML: see domain-xml.h and
 * docs/domain-xml.md.
 *
 * One table describes the settings (element name, parent, kind of value,
 * limit); the metadata parser, vr_domain_tuning_set() and the serializer all
 * go through it, so the XML and `vreclaimctl set` accept the same values and
 * say the same things about bad ones. GMarkup does the XML syntax; namespaces
 * (xmlns, xmlns:p) are resolved here, as is what GMarkup lets through (a
 * second root element, an attribute given twice, DOCTYPE).
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include "libvirt/domain-xml.h"

#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-domain-xml-error-quark, vr_domain_xml_error)
/* clang-format on */

/* ---- errors ---- */

static gboolean set_error(GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Sets @error in VR_DOMAIN_XML_ERROR with @code. Return: FALSE. */
static gboolean set_error(GError **error, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, VR_DOMAIN_XML_ERROR, code, msg);
	return FALSE;
}

#define invalid(error, ...) set_error(error, VR_DOMAIN_XML_ERROR_INVALID, __VA_ARGS__)

/* ---- actions ---- */

static const struct {
	enum vr_domain_action action;
	const char *name;
} action_names[] = {
	{ VR_DOMAIN_ACTION_AGENT_RECLAIM, "agent-reclaim" },
	{ VR_DOMAIN_ACTION_HOST_PAGEOUT, "host-pageout" },
	{ VR_DOMAIN_ACTION_BALLOON, "balloon" },
};

#define ACTIONS_EXPECTED "one or more of agent-reclaim, host-pageout, balloon"

const char *vr_domain_action_name(enum vr_domain_action action)
{
	for (guint i = 0; i < G_N_ELEMENTS(action_names); i++)
		if (action_names[i].action == action)
			return action_names[i].name;
	return NULL;
}

char *vr_domain_actions_to_string(guint actions)
{
	g_autoptr(GString) s = g_string_new("");

	for (guint i = 0; i < G_N_ELEMENTS(action_names); i++) {
		if (!(actions & action_names[i].action))
			continue;
		if (s->len)
			g_string_append_c(s, ' ');
		g_string_append(s, action_names[i].name);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* ---- the settings ---- */

/* The elements of the metadata, in document order. */
enum field {
	F_DOMAIN,
	F_ENABLE,
	F_POLICY,
	F_PRIORITY,
	F_GUARANTEED,
	F_ACTIONS,
	F_SCHEME,
	F_MIN_AGE,
	F_QUOTA_TIME,
	F_QUOTA_SIZE,
	F_MAX_ACCESSES,
	NR_FIELDS,
	F_NONE = NR_FIELDS,
};

enum kind {
	K_CONTAINER, /* holds elements, no text */
	K_YESNO,
	K_NAME,
	K_UINT,
	K_SIZE, /* bytes; unit= as libvirt's <memory>, default bytes */
	K_TIME, /* unit= us (min-age only), ms (default), s, min, h */
	K_ACTIONS,
};

/**
 * struct field_desc - one element of the metadata.
 * @name:	 the element's (and vr_domain_tuning_set()'s key's) name.
 * @parent:	 the element it sits in; F_NONE for the root.
 * @kind:	 what its text holds.
 * @max:	 the largest value: K_UINT as is, K_SIZE in bytes, K_TIME in us.
 * @time_unit_us: K_TIME: the unit the value is stored in, in us.
 * @expected:	 what is allowed, for messages.
 */
struct field_desc {
	const char *name;
	enum field parent;
	enum kind kind;
	uint64_t max;
	uint64_t time_unit_us;
	const char *expected;
};

static const struct field_desc fields[NR_FIELDS] = {
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

static enum field field_lookup(const char *name, enum field parent)
{
	for (guint f = 0; f < NR_FIELDS; f++)
		if (fields[f].parent == parent && strcmp(fields[f].name, name) == 0)
			return (enum field)f;
	return F_NONE;
}

/* The names of the elements @parent may hold, comma-separated. Return: owned. */
static char *field_children(enum field parent)
{
	g_autoptr(GString) s = g_string_new("");

	for (guint f = 0; f < NR_FIELDS; f++) {
		if (fields[f].parent != parent)
			continue;
		if (s->len)
			g_string_append(s, ", ");
		g_string_append(s, fields[f].name);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* ---- units ---- */

#define SIZE_UNITS_EXPECTED                                                                        \
	"b, bytes, KiB, MiB, GiB, TiB, PiB, EiB (or K, M, G, T, P, E), KB, MB, GB, TB, PB, EB"

/*
 * The scale of a size unit, as libvirt reads unit= on <memory>: b/byte/bytes;
 * a letter k m g t p e (any case) alone or followed by "iB" is a power of
 * 1024, followed by "B" a power of 1000.
 */
static gboolean size_unit_scale(const char *unit, uint64_t *scale)
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
static gboolean parse_digits(const char *s, uint64_t *out, gboolean *overflow)
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
		guint bit = 0;

		if (!**t)
			continue;
		for (guint i = 0; i < G_N_ELEMENTS(action_names); i++)
			if (strcmp(action_names[i].name, *t) == 0)
				bit = action_names[i].action;
		if (!bit)
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
static void store_number(struct vr_domain_tuning *t, enum field f, uint64_t v)
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
static gboolean parse_number(enum field f, const char *what, const char *given, const char *digits,
			     const char *unit, uint64_t *out, GError **error)
{
	const struct field_desc *d = &fields[f];
	uint64_t v, scale = 1;
	gboolean overflow;

	if (unit && d->kind == K_UINT)
		return invalid(error, "%s: '%s' is not a whole number (expected %s)", what, given,
			       d->expected);
	if (unit && d->kind == K_SIZE && !size_unit_scale(unit, &scale))
		return invalid(error, "%s: unknown unit '%s' (expected %s)", what, unit,
			       SIZE_UNITS_EXPECTED);
	if (unit && d->kind == K_TIME && !time_unit_scale(unit, d->time_unit_us, &scale)) {
		g_autofree char *units = time_units_expected(d->time_unit_us);

		return invalid(error, "%s: unknown unit '%s' (expected %s)", what, unit, units);
	}
	if (!unit && d->kind == K_TIME)
		scale = 1000; /* ms */
	if (!parse_digits(digits, &v, &overflow)) {
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
static gboolean field_set(struct vr_domain_tuning *t, enum field f, const char *what,
			  const char *value, const char *unit, gboolean cli, GError **error)
{
	const struct field_desc *d = &fields[f];
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
static void field_reset(struct vr_domain_tuning *t, enum field f)
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
		if (fields[f].kind == K_CONTAINER)
			continue;
		if (s->len)
			g_string_append(s, ", ");
		g_string_append(s, fields[f].name);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
}

/* Sets @key on @t in place (the callers work on a copy). */
static gboolean tuning_set_one(struct vr_domain_tuning *t, const char *key, const char *value,
			       GError **error)
{
	enum field f = F_NONE;

	for (guint i = 0; i < NR_FIELDS; i++)
		if (fields[i].kind != K_CONTAINER && strcmp(fields[i].name, key) == 0)
			f = (enum field)i;
	if (f == F_NONE) {
		g_autofree char *keys = settable_keys();

		return invalid(error, "unknown key '%s' (expected one of %s)", key, keys);
	}
	if (strcmp(value, "default") == 0) {
		field_reset(t, f);
		return TRUE;
	}
	return field_set(t, f, key, value, NULL, TRUE, error);
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

/* ---- serializing ---- */

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

/* ---- XML namespaces (shared by both parsers) ---- */

/* The attributes an element may carry: more is not an honest document. */
#define MAX_ATTRIBUTES 32

/**
 * struct ns_decl - a namespace declaration in scope.
 * @prefix: "" for the default namespace (xmlns=).
 * @uri:    "" when xmlns="" undeclares the default namespace.
 * @depth:  the depth of the element that declared it.
 */
struct ns_decl {
	char *prefix;
	char *uri;
	guint depth;
};

static void ns_decl_free(struct ns_decl *d)
{
	g_free(d->prefix);
	g_free(d->uri);
	g_free(d);
}

/*
 * Checks the attributes of <@elem> (count, duplicates) and pushes its
 * namespace declarations onto @scope at @depth.
 */
static gboolean ns_push(GPtrArray *scope, guint depth, const char *elem, const char **names,
			const char **values, GError **error)
{
	for (guint i = 0; names[i]; i++) {
		const char *prefix = NULL;
		struct ns_decl *d;

		if (i >= MAX_ATTRIBUTES)
			return invalid(error, "<%s> has more than %d attributes", elem,
				       MAX_ATTRIBUTES);
		for (guint j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				return invalid(error, "<%s> has the attribute '%s' twice", elem,
					       names[i]);
		if (strcmp(names[i], "xmlns") == 0) {
			prefix = ""; /* xmlns="" undeclares the default: allowed */
		} else if (g_str_has_prefix(names[i], "xmlns:")) {
			prefix = names[i] + strlen("xmlns:");
			/* xmlns:p="" cannot undeclare a prefix in XML 1.0 */
			if (!*prefix || strchr(prefix, ':') || !*values[i])
				return invalid(error, "<%s>: invalid namespace declaration %s='%s'",
					       elem, names[i], values[i]);
		} else {
			continue;
		}
		d = g_new(struct ns_decl, 1);
		d->prefix = g_strdup(prefix);
		d->uri = g_strdup(values[i]);
		d->depth = depth;
		g_ptr_array_add(scope, d);
	}
	return TRUE;
}

/* Drops the declarations of the element at @depth. */
static void ns_pop(GPtrArray *scope, guint depth)
{
	while (scope->len &&
	       ((struct ns_decl *)g_ptr_array_index(scope, scope->len - 1))->depth == depth)
		g_ptr_array_remove_index(scope, scope->len - 1);
}

/*
 * Splits the qualified @qname into its local name and namespace URI ("" for
 * none). Return: FALSE with @error for an undeclared prefix or more than one
 * ':'.
 */
static gboolean ns_resolve(GPtrArray *scope, const char *qname, const char **local,
			   const char **uri, GError **error)
{
	const char *colon = strchr(qname, ':');
	g_autofree char *prefix = colon ? g_strndup(qname, (gsize)(colon - qname)) : g_strdup("");

	if (colon && (colon == qname || !colon[1] || strchr(colon + 1, ':')))
		return invalid(error, "<%s> is not a valid element name", qname);
	*local = colon ? colon + 1 : qname;
	*uri = "";
	if (strcmp(prefix, "xml") == 0) {
		*uri = "http://www.w3.org/XML/1998/namespace";
		return TRUE;
	}
	for (guint i = scope->len; i > 0; i--) {
		struct ns_decl *d = g_ptr_array_index(scope, i - 1);

		if (strcmp(d->prefix, prefix) == 0) {
			*uri = d->uri;
			return TRUE;
		}
	}
	if (*prefix)
		return invalid(error, "<%s>: the prefix '%s' is not declared (no xmlns:%s)", qname,
			       prefix, prefix);
	return TRUE;
}

/* Is @text only XML white space? */
static gboolean is_blank(const char *text, gsize len)
{
	for (gsize i = 0; i < len; i++)
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '\n')
			return FALSE;
	return TRUE;
}

/* ---- parsing the metadata ---- */

/* domain > scheme > leaf: a deeper element is refused before it is pushed. */
#define METADATA_MAX_DEPTH 3

/**
 * struct meta_parser - the state of vr_domain_tuning_parse().
 * @t:	      the tuning being filled (thrown away on error).
 * @scope:    namespace declarations in scope (struct ns_decl).
 * @depth:    open elements.
 * @open:     the field of each open element.
 * @seen:     bit per field given so far (each at most once).
 * @text:     the text of the open leaf element.
 * @unit:     its unit attribute, or NULL; owned.
 * @root_done: the root element has closed.
 */
struct meta_parser {
	struct vr_domain_tuning *t;
	GPtrArray *scope;
	guint depth;
	enum field open[METADATA_MAX_DEPTH];
	guint seen;
	GString *text;
	char *unit;
	gboolean root_done;
};

static gboolean meta_check_attributes(struct meta_parser *mp, enum field f, const char **names,
				      const char **values, GError **error)
{
	const struct field_desc *d = &fields[f];
	gboolean has_unit = d->kind == K_SIZE || d->kind == K_TIME;

	for (guint i = 0; names[i]; i++) {
		if (strcmp(names[i], "xmlns") == 0 || g_str_has_prefix(names[i], "xmlns:"))
			continue;
		if (has_unit && strcmp(names[i], "unit") == 0) {
			g_free(mp->unit);
			mp->unit = g_strdup(values[i]);
			continue;
		}
		return invalid(error, "<%s>: unknown attribute '%s' (allowed: %s)", d->name,
			       names[i], has_unit ? "unit" : "none");
	}
	return TRUE;
}

static void meta_start(GMarkupParseContext *ctx, const char *qname, const char **names,
		       const char **values, gpointer data, GError **error)
{
	struct meta_parser *mp = data;
	enum field parent = mp->depth ? mp->open[mp->depth - 1] : F_NONE;
	const char *local = NULL, *uri = NULL;
	enum field f;

	(void)ctx;
	if (mp->root_done) {
		set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
			  "<%s> after the end of <domain> (expected nothing after </domain>)",
			  qname);
		return;
	}
	if (!ns_push(mp->scope, mp->depth, qname, names, values, error) ||
	    !ns_resolve(mp->scope, qname, &local, &uri, error))
		return;
	if (*uri && strcmp(uri, VR_DOMAIN_XML_NS) != 0) {
		invalid(error, "<%s> is in the namespace '%s' (expected %s)", qname, uri,
			VR_DOMAIN_XML_NS);
		return;
	}
	if (parent == F_NONE) {
		if (strcmp(local, "domain") != 0) {
			invalid(error, "the root element is <%s> (expected <domain>)", qname);
			return;
		}
		f = F_DOMAIN;
	} else {
		if (fields[parent].kind != K_CONTAINER) {
			invalid(error, "<%s>: unexpected element <%s> (expected %s)",
				fields[parent].name, qname, fields[parent].expected);
			return;
		}
		f = field_lookup(local, parent);
		if (f == F_NONE) {
			g_autofree char *children = field_children(parent);

			invalid(error, "unknown element <%s> in <%s> (expected %s)", qname,
				fields[parent].name, children);
			return;
		}
	}
	if (mp->seen & (1u << f)) {
		invalid(error, "<%s> is given twice", fields[f].name);
		return;
	}
	mp->seen |= 1u << f;
	g_clear_pointer(&mp->unit, g_free);
	if (!meta_check_attributes(mp, f, names, values, error))
		return;
	g_string_truncate(mp->text, 0);
	mp->open[mp->depth++] = f;
}

static void meta_end(GMarkupParseContext *ctx, const char *qname, gpointer data, GError **error)
{
	struct meta_parser *mp = data;
	enum field f = mp->open[mp->depth - 1];

	(void)ctx, (void)qname;
	if (fields[f].kind != K_CONTAINER) {
		g_autofree char *what = g_strdup_printf("<%s>", fields[f].name);
		g_autofree char *value = g_strstrip(g_strdup(mp->text->str));

		if (!field_set(mp->t, f, what, value, mp->unit, FALSE, error))
			return;
	}
	mp->depth--;
	ns_pop(mp->scope, mp->depth);
	if (!mp->depth)
		mp->root_done = TRUE;
}

static void meta_text(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
		      GError **error)
{
	struct meta_parser *mp = data;

	(void)ctx;
	if (!mp->depth) {
		if (!is_blank(text, len))
			set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
				  "text outside the <domain> element (expected only white space)");
		return;
	}
	if (fields[mp->open[mp->depth - 1]].kind == K_CONTAINER) {
		if (!is_blank(text, len))
			invalid(error, "<%s>: unexpected text '%.*s' (expected only elements)",
				fields[mp->open[mp->depth - 1]].name, (int)MIN(len, 40), text);
		return;
	}
	g_string_append_len(mp->text, text, (gssize)len);
}

/* Comments are fine; an XML declaration before the root too; nothing else. */
static gboolean passthrough_ok(const char *text, gsize len, gboolean before_root)
{
	if (len >= 4 && strncmp(text, "<!--", 4) == 0)
		return TRUE;
	return before_root && len >= 6 && strncmp(text, "<?xml", 5) == 0 &&
	       g_ascii_isspace(text[5]);
}

static void meta_passthrough(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
			     GError **error)
{
	struct meta_parser *mp = data;

	(void)ctx;
	if (!passthrough_ok(text, len, !mp->depth && !mp->root_done))
		set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
			  "'%.*s' is not allowed (no DOCTYPE or processing instructions)",
			  (int)MIN(len, 40), text);
}

static const GMarkupParser meta_parser_funcs = {
	.start_element = meta_start,
	.end_element = meta_end,
	.text = meta_text,
	.passthrough = meta_passthrough,
};

/*
 * Runs GMarkup over @text with @funcs; GMarkup's own errors become
 * VR_DOMAIN_XML_ERROR_SYNTAX, ours pass through. *@root_done tells whether
 * the root element had closed when GMarkup stopped (then what follows it is
 * the problem: GMarkup's own words for it are misleading).
 */
static gboolean markup_run(const GMarkupParser *funcs, gpointer data, const char *text,
			   const char *what, const gboolean *root_done, GError **error)
{
	g_autoptr(GMarkupParseContext)
		ctx = g_markup_parse_context_new(funcs, G_MARKUP_TREAT_CDATA_AS_TEXT, data, NULL);
	g_autoptr(GError) local = NULL;

	if (g_markup_parse_context_parse(ctx, text, -1, &local) &&
	    g_markup_parse_context_end_parse(ctx, &local))
		return TRUE;
	if (local->domain == VR_DOMAIN_XML_ERROR) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (*root_done)
		return set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
				 "%s has content after the end of <domain> (%s)", what,
				 local->message);
	return set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX, "%s is not well-formed XML: %s", what,
			 local->message);
}

/* Checks @text's length against @max; @what names it. */
static gboolean check_size(const char *text, size_t max, const char *what, GError **error)
{
	size_t len = strnlen(text, max + 1);

	if (len > max)
		return set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX, "%s is larger than %zu bytes",
				 what, max);
	if (is_blank(text, len))
		return set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX, "%s is empty", what);
	return TRUE;
}

struct vr_domain_tuning *vr_domain_tuning_parse(const char *xml, GError **error)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();
	g_autoptr(GPtrArray) scope = g_ptr_array_new_with_free_func((GDestroyNotify)ns_decl_free);
	g_autoptr(GString) text = g_string_new("");
	g_autofree char *unit = NULL;
	struct meta_parser mp = {
		.t = t,
		.scope = scope,
		.text = text,
	};
	gboolean ok;

	if (!check_size(xml, VR_DOMAIN_XML_METADATA_MAX_BYTES, "the metadata", error))
		return NULL;
	t->enable = TRUE; /* the element exists */
	ok = markup_run(&meta_parser_funcs, &mp, xml, "the metadata", &mp.root_done, error);
	unit = mp.unit;
	if (!ok)
		return NULL;
	if (!mp.root_done) {
		set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
			  "the metadata has no <domain> element");
		return NULL;
	}
	return g_steal_pointer(&t);
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

/* ---- parsing a domain XML ---- */

/* libvirt's XML is a dozen levels deep; deeper is not libvirt's. */
#define DOMAIN_MAX_DEPTH 64
/* A domain name or the text of a value element: far above any real one. */
#define DOMAIN_MAX_TEXT_BYTES 1024

/* The elements read, by their path from the root. */
enum dom_elem {
	D_OTHER,
	D_NAME,
	D_UUID,
	D_MEMORY,
	D_CURRENT_MEMORY,
	D_CHANNEL,
	D_CHANNEL_SOURCE,
	D_CHANNEL_TARGET,
	D_MEMBALLOON,
};

static const struct {
	enum dom_elem elem;
	const char *path;
} dom_paths[] = {
	{ D_NAME, "domain/name" },
	{ D_UUID, "domain/uuid" },
	{ D_MEMORY, "domain/memory" },
	{ D_CURRENT_MEMORY, "domain/currentMemory" },
	{ D_CHANNEL, "domain/devices/channel" },
	{ D_CHANNEL_SOURCE, "domain/devices/channel/source" },
	{ D_CHANNEL_TARGET, "domain/devices/channel/target" },
	{ D_MEMBALLOON, "domain/devices/memballoon" },
};

/**
 * struct dom_channel - the parts of one <channel> read so far.
 * @type, @source_mode, @source_path, @target_type, @target_name,
 * @target_state: attributes, NULL when absent; owned.
 */
struct dom_channel {
	char *type;
	char *source_mode;
	char *source_path;
	char *target_type;
	char *target_name;
	char *target_state;
	guint nr_sources;
	guint nr_targets;
};

static void dom_channel_clear(struct dom_channel *c)
{
	g_free(c->type);
	g_free(c->source_mode);
	g_free(c->source_path);
	g_free(c->target_type);
	g_free(c->target_name);
	g_free(c->target_state);
	memset(c, 0, sizeof(*c));
}

/**
 * struct dom_parser - the state of vr_domain_xml_parse().
 * @info:	  what is found (moved to the caller on success).
 * @path:	  the open elements' qualified names, '/'-joined.
 * @ends:	  @path's length before each open element.
 * @depth:	  open elements.
 * @collect:	  the open element whose text is read, or D_OTHER.
 * @text:	  its text.
 * @unit:	  its unit attribute (memory elements); owned.
 * @channel:	  the open <channel>.
 * @has_*:	  elements seen (each at most once).
 */
struct dom_parser {
	struct vr_domain_info info;
	GString *path;
	gsize ends[DOMAIN_MAX_DEPTH];
	guint depth;
	enum dom_elem collect;
	GString *text;
	char *unit;
	struct dom_channel channel;
	gboolean has_type;
	gboolean has_name;
	gboolean has_uuid;
	gboolean has_memory;
	gboolean has_current_memory;
	gboolean has_memballoon;
	gboolean root_done;
};

/* The value of attribute @name, or NULL. */
static const char *attr(const char **names, const char **values, const char *name)
{
	for (guint i = 0; names[i]; i++)
		if (strcmp(names[i], name) == 0)
			return values[i];
	return NULL;
}

static gboolean dom_root(struct dom_parser *dp, const char *qname, const char **names,
			 const char **values, GError **error)
{
	const char *type = attr(names, values, "type");
	const char *id = attr(names, values, "id");

	if (strcmp(qname, "domain") != 0)
		return invalid(error, "the root element is <%s> (expected a libvirt <domain>)",
			       qname);
	if (!type)
		return invalid(error, "<domain> has no type attribute");
	dp->info.type = g_strdup(type);
	dp->has_type = TRUE;
	dp->info.id = -1;
	if (id) {
		uint64_t v;
		gboolean overflow;

		if (!parse_digits(id, &v, &overflow) || v > G_MAXINT)
			return invalid(error, "<domain id='%s'>: expected an integer from 0 to %d",
				       id, G_MAXINT);
		dp->info.id = (int)v;
	}
	return TRUE;
}

/* Copies attribute @name (or NULL when absent) into *@dst. */
static void dom_copy_attr(char **dst, const char **names, const char **values, const char *name)
{
	const char *v = attr(names, values, name);

	g_free(*dst);
	*dst = g_strdup(v);
}

static gboolean dom_element(struct dom_parser *dp, enum dom_elem e, const char **names,
			    const char **values, GError **error)
{
	struct dom_channel *c = &dp->channel;
	const char *fpr;

	switch (e) {
	case D_NAME:
	case D_UUID:
	case D_MEMORY:
	case D_CURRENT_MEMORY: {
		static const char *const tags[] = {
			[D_NAME] = "name",
			[D_UUID] = "uuid",
			[D_MEMORY] = "memory",
			[D_CURRENT_MEMORY] = "currentMemory",
		};
		gboolean *seen = e == D_NAME   ? &dp->has_name :
				 e == D_UUID   ? &dp->has_uuid :
				 e == D_MEMORY ? &dp->has_memory :
						 &dp->has_current_memory;

		if (*seen)
			return invalid(error, "<%s> is given twice", tags[e]);
		*seen = TRUE;
		dp->collect = e;
		g_string_truncate(dp->text, 0);
		g_clear_pointer(&dp->unit, g_free);
		dp->unit = g_strdup(attr(names, values, "unit"));
		return TRUE;
	}
	case D_CHANNEL:
		dom_channel_clear(c);
		dom_copy_attr(&c->type, names, values, "type");
		return TRUE;
	case D_CHANNEL_SOURCE:
		c->nr_sources++;
		dom_copy_attr(&c->source_mode, names, values, "mode");
		dom_copy_attr(&c->source_path, names, values, "path");
		return TRUE;
	case D_CHANNEL_TARGET:
		c->nr_targets++;
		dom_copy_attr(&c->target_type, names, values, "type");
		dom_copy_attr(&c->target_name, names, values, "name");
		dom_copy_attr(&c->target_state, names, values, "state");
		return TRUE;
	case D_MEMBALLOON:
		if (dp->has_memballoon)
			return invalid(error, "<memballoon> is given twice");
		dp->has_memballoon = TRUE;
		dp->info.memballoon_model = g_strdup(attr(names, values, "model"));
		if (!dp->info.memballoon_model)
			return invalid(error, "<memballoon> has no model attribute");
		fpr = attr(names, values, "freePageReporting");
		if (fpr && strcmp(fpr, "on") && strcmp(fpr, "off"))
			return invalid(error,
				       "<memballoon freePageReporting='%s'>: expected on or off",
				       fpr);
		dp->info.free_page_reporting = fpr && strcmp(fpr, "on") == 0;
		return TRUE;
	case D_OTHER:
		break;
	}
	return TRUE;
}

static void dom_start(GMarkupParseContext *ctx, const char *qname, const char **names,
		      const char **values, gpointer data, GError **error)
{
	struct dom_parser *dp = data;
	enum dom_elem e = D_OTHER;

	(void)ctx;
	if (dp->depth == DOMAIN_MAX_DEPTH) {
		invalid(error, "elements nested deeper than %d levels", DOMAIN_MAX_DEPTH);
		return;
	}
	if (dp->root_done) {
		set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
			  "<%s> after the end of <domain> (expected nothing after </domain>)",
			  qname);
		return;
	}
	if (dp->collect != D_OTHER) {
		invalid(error, "unexpected element <%s> in a value element", qname);
		return;
	}
	for (guint i = 0; names[i]; i++)
		for (guint j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0) {
				invalid(error, "<%s> has the attribute '%s' twice", qname,
					names[i]);
				return;
			}
	dp->ends[dp->depth++] = dp->path->len;
	if (dp->path->len)
		g_string_append_c(dp->path, '/');
	g_string_append(dp->path, qname);
	if (dp->depth == 1) {
		dom_root(dp, qname, names, values, error);
		return;
	}
	for (guint i = 0; i < G_N_ELEMENTS(dom_paths); i++)
		if (strcmp(dp->path->str, dom_paths[i].path) == 0)
			e = dom_paths[i].elem;
	dom_element(dp, e, names, values, error);
}

/* A libvirt memory value: digits in unit= (default KiB, as libvirt). */
static gboolean dom_memory(const char *tag, const char *text, const char *unit, uint64_t *bytes,
			   GError **error)
{
	uint64_t v, scale = 1024;
	gboolean overflow;

	if (unit && !size_unit_scale(unit, &scale))
		return invalid(error, "<%s>: unknown unit '%s' (expected %s)", tag, unit,
			       SIZE_UNITS_EXPECTED);
	if (!parse_digits(text, &v, &overflow) || (v && v > G_MAXUINT64 / scale))
		return invalid(error, "<%s>: '%s' is not a size in 64 bits", tag, text);
	*bytes = v * scale;
	return TRUE;
}

static gboolean dom_uuid(const char *text, char *out, GError **error)
{
	size_t len = strlen(text);

	for (size_t i = 0; i < len; i++) {
		gboolean dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (len != VR_DOMAIN_UUID_STRING_LEN || (dash && text[i] != '-') ||
		    (!dash && !g_ascii_isxdigit(text[i])))
			return invalid(error,
				       "<uuid>: '%s' is not a UUID (expected "
				       "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
				       text);
		out[i] = g_ascii_tolower(text[i]);
	}
	if (len != VR_DOMAIN_UUID_STRING_LEN)
		return invalid(error, "<uuid>: '%s' is not a UUID", text);
	out[len] = '\0';
	return TRUE;
}

static gboolean dom_value_end(struct dom_parser *dp, GError **error)
{
	g_autofree char *text = g_strstrip(g_strdup(dp->text->str));
	enum dom_elem e = dp->collect;

	dp->collect = D_OTHER;
	switch (e) {
	case D_NAME:
		if (!*text)
			return invalid(error, "<name> is empty");
		dp->info.name = g_steal_pointer(&text);
		return TRUE;
	case D_UUID:
		return dom_uuid(text, dp->info.uuid, error);
	case D_MEMORY:
		return dom_memory("memory", text, dp->unit, &dp->info.memory_bytes, error);
	case D_CURRENT_MEMORY:
		return dom_memory("currentMemory", text, dp->unit, &dp->info.current_memory_bytes,
				  error);
	default:
		g_assert_not_reached();
	}
}

/* The end of a <channel>: is it the agent's, and is it usable? */
static gboolean dom_channel_end(struct dom_parser *dp, GError **error)
{
	struct dom_channel *c = &dp->channel;
	const char *path = c->source_path;

	if (g_strcmp0(c->target_name, VR_DOMAIN_AGENT_CHANNEL) != 0)
		return TRUE;
	if (dp->info.agent_channel)
		return invalid(error, "two channels have the target name '%s' (expected one)",
			       VR_DOMAIN_AGENT_CHANNEL);
	if (g_strcmp0(c->type, "unix") != 0)
		return invalid(error, "the channel '%s' is type='%s' (expected type='unix')",
			       VR_DOMAIN_AGENT_CHANNEL, c->type ? c->type : "");
	if (g_strcmp0(c->target_type, "virtio") != 0)
		return invalid(error,
			       "the channel '%s' has <target type='%s'> (expected type='virtio')",
			       VR_DOMAIN_AGENT_CHANNEL, c->target_type ? c->target_type : "");
	if (c->nr_sources > 1 || c->nr_targets > 1)
		return invalid(error, "the channel '%s' has more than one <source> or <target>",
			       VR_DOMAIN_AGENT_CHANNEL);
	if (c->source_mode && strcmp(c->source_mode, "bind") != 0)
		return invalid(error,
			       "the channel '%s' has <source mode='%s'> (expected mode='bind': "
			       "libvirt listens, vreclaimd connects)",
			       VR_DOMAIN_AGENT_CHANNEL, c->source_mode);
	if (path && path[0] != '/')
		return invalid(error,
			       "the channel '%s' has the relative socket path '%s' (expected an "
			       "absolute path)",
			       VR_DOMAIN_AGENT_CHANNEL, path);
	if (path && strlen(path) > VR_DOMAIN_SOCKET_PATH_MAX)
		return invalid(error,
			       "the channel '%s' has a socket path of %zu bytes (at most %d fit "
			       "a unix socket address)",
			       VR_DOMAIN_AGENT_CHANNEL, strlen(path), VR_DOMAIN_SOCKET_PATH_MAX);
	if (c->target_state && strcmp(c->target_state, "connected") &&
	    strcmp(c->target_state, "disconnected"))
		return invalid(error,
			       "the channel '%s' has <target state='%s'> (expected connected or "
			       "disconnected)",
			       VR_DOMAIN_AGENT_CHANNEL, c->target_state);
	dp->info.agent_channel = TRUE;
	dp->info.agent_socket_path = g_strdup(path);
	dp->info.agent_connected = g_strcmp0(c->target_state, "connected") == 0;
	return TRUE;
}

static void dom_end(GMarkupParseContext *ctx, const char *qname, gpointer data, GError **error)
{
	struct dom_parser *dp = data;
	gboolean ok = TRUE;

	(void)ctx, (void)qname;
	if (dp->collect != D_OTHER)
		ok = dom_value_end(dp, error);
	else if (strcmp(dp->path->str, "domain/devices/channel") == 0)
		ok = dom_channel_end(dp, error);
	if (!ok)
		return;
	g_string_truncate(dp->path, dp->ends[--dp->depth]);
	if (!dp->depth)
		dp->root_done = TRUE;
}

static void dom_text(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
		     GError **error)
{
	struct dom_parser *dp = data;

	(void)ctx;
	if (!dp->depth && !is_blank(text, len)) {
		set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
			  "text outside the <domain> element (expected only white space)");
		return;
	}
	if (dp->collect == D_OTHER)
		return;
	if (dp->text->len + len > DOMAIN_MAX_TEXT_BYTES) {
		invalid(error, "the text of <%s> is longer than %d bytes",
			strrchr(dp->path->str, '/') + 1, DOMAIN_MAX_TEXT_BYTES);
		return;
	}
	g_string_append_len(dp->text, text, (gssize)len);
}

static void dom_passthrough(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
			    GError **error)
{
	struct dom_parser *dp = data;

	(void)ctx;
	if (!passthrough_ok(text, len, !dp->depth && !dp->root_done))
		set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
			  "'%.*s' is not allowed (no DOCTYPE or processing instructions)",
			  (int)MIN(len, 40), text);
}

static const GMarkupParser dom_parser_funcs = {
	.start_element = dom_start,
	.end_element = dom_end,
	.text = dom_text,
	.passthrough = dom_passthrough,
};

gboolean vr_domain_xml_parse(const char *domain_xml, struct vr_domain_info *out, GError **error)
{
	g_autoptr(GString) path = g_string_new("");
	g_autoptr(GString) text = g_string_new("");
	struct dom_parser dp = {
		.path = path,
		.text = text,
	};
	g_auto(vr_domain_info) info = { 0 };
	gboolean ok = check_size(domain_xml, VR_DOMAIN_XML_MAX_BYTES, "the domain XML", error) &&
		      markup_run(&dom_parser_funcs, &dp, domain_xml, "the domain XML",
				 &dp.root_done, error);

	info = dp.info; /* freed on every way out unless moved */
	g_free(dp.unit);
	dom_channel_clear(&dp.channel);
	if (!ok)
		return FALSE;
	if (!dp.has_type)
		return set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
				 "the domain XML has no <domain> element");
	if (!dp.has_name)
		return invalid(error, "the domain XML has no <name>");
	if (!dp.has_uuid)
		return invalid(error, "domain %s: the XML has no <uuid>", info.name);
	if (!dp.has_memory)
		return invalid(error, "domain %s: the XML has no <memory>", info.name);
	if (!dp.has_current_memory)
		info.current_memory_bytes = info.memory_bytes;
	if (strcmp(info.type, "qemu") != 0 && strcmp(info.type, "kvm") != 0)
		return set_error(error, VR_DOMAIN_XML_ERROR_UNSUPPORTED,
				 "domain %s is of type '%s' (vreclaim manages qemu and kvm "
				 "domains)",
				 info.name, info.type);
	*out = info;
	memset(&info, 0, sizeof(info));
	return TRUE;
}

void vr_domain_info_clear(struct vr_domain_info *info)
{
	g_free(info->name);
	g_free(info->type);
	g_free(info->agent_socket_path);
	g_free(info->memballoon_model);
	memset(info, 0, sizeof(*info));
	info->id = -1;
}
