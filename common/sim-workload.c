/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workload files (docs/simulate.md, "Workload files"): a JSON document of
 * phases of access sets, read into a simulated guest. Pure: text in.
 *
 * As the policy file (common/policy-parse.c): json-doc.c checks the syntax
 * strictly, then the tree is read object by object, unknown members
 * refused, every error starting with the JSON path of the problem. The
 * whole document is first read into memory and tried on a scratch guest of
 * the same size (the checks do not depend on the seed), so the
 * guest's own checks (vr_sim_add_phase(), vr_sim_set_workload_ranges()) run
 * before anything is added: all or nothing.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "json-doc.h"
#include "sim.h"

#define US_PER_S 1e6

/* ---- JSON paths and errors ---- */

/* Sets @error to "<path>: <message>". Return: FALSE. */
#define invalid(error, path, ...)                                                                  \
	vr_json_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID, path, __VA_ARGS__)

/* ---- values ---- */

/* Checks that @v is an object whose members are all in @allowed (NULL-terminated). */
static gboolean check_object(struct json_object *v, const char *path, const char *what,
			     const char *const *allowed, GError **error)
{
	if (!json_object_is_type(v, json_type_object))
		return invalid(error, path, "expected an object (got %s)", vr_json_describe(v));
	json_object_object_foreach(v, key, member)
	{
		(void)member;
		if (!g_strv_contains(allowed, key)) {
			g_autofree char *mpath = vr_json_path_member(path, key);
			g_autofree char *names = g_strjoinv(", ", (char **)allowed);

			return invalid(error, mpath, "unknown member %s(expected one of %s)", what,
				       names);
		}
	}
	return TRUE;
}

/* Member @name of @obj with its path in @mpath (owned); an error if missing. */
static gboolean required(struct json_object *obj, const char *path, const char *name,
			 const char *why, struct json_object **v, char **mpath, GError **error)
{
	*mpath = vr_json_path_member(path, name);
	if (!json_object_object_get_ex(obj, name, v))
		return invalid(error, *mpath, "missing (%s)", why);
	return TRUE;
}

static const struct {
	char suffix;
	guint shift;
} size_suffixes[] = { { 'K', 10 }, { 'M', 20 }, { 'G', 30 }, { 'T', 40 }, { 'P', 50 } };

#define SIZE_EXPECTED                                                                              \
	"expected a size: a non-negative integer of bytes or a string such as \"4K\", \"512M\", "  \
	"\"1G\""

/* A string "<digits>[K|M|G|T|P]" (powers of 1024) into @out. */
static gboolean parse_size_string(const char *s, uint64_t *out)
{
	uint64_t value = 0;
	const char *p = s;
	guint shift = 0;

	if (!g_ascii_isdigit(*p))
		return FALSE;
	for (; g_ascii_isdigit(*p); p++) {
		if (value > (G_MAXUINT64 - (uint64_t)(*p - '0')) / 10)
			return FALSE;
		value = value * 10 + (uint64_t)(*p - '0');
	}
	if (*p) {
		guint i;

		for (i = 0; i < G_N_ELEMENTS(size_suffixes) && size_suffixes[i].suffix != *p; i++)
			;
		if (i == G_N_ELEMENTS(size_suffixes) || p[1] != '\0')
			return FALSE;
		shift = size_suffixes[i].shift;
	}
	if (shift && value > G_MAXUINT64 >> shift)
		return FALSE;
	*out = value << shift;
	return TRUE;
}

/* @v as a size in bytes: a non-negative integer or a string with a suffix. */
static gboolean read_size(struct json_object *v, const char *path, uint64_t *out, GError **error)
{
	if (json_object_is_type(v, json_type_int)) {
		if (json_object_get_int64(v) < 0)
			return invalid(error, path, SIZE_EXPECTED " (got %s)", vr_json_describe(v));
		*out = json_object_get_uint64(v);
		return TRUE;
	}
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);

		if (!parse_size_string(s, out))
			return invalid(error, path, SIZE_EXPECTED " (got \"%s\")", s);
		return TRUE;
	}
	return invalid(error, path, SIZE_EXPECTED " (got %s)", vr_json_describe(v));
}

/* @v as a finite number > 0 (an integer or a fraction). */
static gboolean read_positive(struct json_object *v, const char *path, double *out, GError **error)
{
	double x;

	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return invalid(error, path, "expected a positive number (got %s)",
			       vr_json_describe(v));
	x = json_object_get_double(v);
	if (!(isfinite(x) && x > 0))
		return invalid(error, path, "expected a positive number (got %s)",
			       vr_json_describe(v));
	*out = x;
	return TRUE;
}

/* ---- the document, read into memory ---- */

/**
 * struct phase - one phase as read.
 * @path:	its JSON path ("phases[i]").
 * @sets:	struct vr_sim_set.
 */
struct phase {
	char *path;
	char *name;
	uint64_t duration_us;
	GArray *sets;
};

static void phase_clear(gpointer p)
{
	struct phase *ph = p;

	g_free(ph->path);
	g_free(ph->name);
	if (ph->sets)
		g_array_unref(ph->sets);
}

static const char *const document_members[] = { "workload", "phases", NULL };
static const char *const range_members[] = { "start", "end", NULL };
static const char *const phase_members[] = { "name", "duration_s", "duration_us", "sets", NULL };

/**
 * kinds - the kinds of sets and their members: the names of the members that
 * must all be given, and their C fields (in the order of the names after
 * kind, start and end).
 */
static const struct {
	const char *name;
	enum vr_sim_set_kind kind;
	const char *const members[7];
	const char *why;
} kinds[] = {
	{ "hot",
	  VR_SIM_SET_HOT,
	  { "kind", "start", "end", "hz", NULL },
	  "a hot set needs start, end and hz" },
	{ "zipf",
	  VR_SIM_SET_ZIPF,
	  { "kind", "start", "end", "s", "total_hz", NULL },
	  "a zipf set needs start, end, s and total_hz" },
	{ "scan",
	  VR_SIM_SET_SCAN,
	  { "kind", "start", "end", "hz", "window", "speed_bps", NULL },
	  "a scan set needs start, end, hz, window and speed_bps" },
};

static gboolean read_set(struct json_object *v, const char *path, struct vr_sim_set *set,
			 GError **error)
{
	g_autofree char *kpath = vr_json_path_member(path, "kind");
	g_autofree char *what = NULL;
	struct json_object *m;
	const char *kind;
	guint k;

	if (!json_object_is_type(v, json_type_object))
		return invalid(error, path, "expected an object (got %s)", vr_json_describe(v));
	if (!json_object_object_get_ex(v, "kind", &m))
		return invalid(error, kpath, "missing (expected hot, zipf or scan)");
	if (!json_object_is_type(m, json_type_string))
		return invalid(error, kpath, "expected a string: hot, zipf or scan (got %s)",
			       vr_json_describe(m));
	kind = json_object_get_string(m);
	for (k = 0; k < G_N_ELEMENTS(kinds) && strcmp(kinds[k].name, kind) != 0; k++)
		;
	if (k == G_N_ELEMENTS(kinds))
		return invalid(error, kpath, "unknown kind '%s' (expected hot, zipf or scan)",
			       kind);
	what = g_strdup_printf("for a %s set ", kinds[k].name);
	if (!check_object(v, path, what, kinds[k].members, error))
		return FALSE;

	*set = (struct vr_sim_set){ .kind = kinds[k].kind };
	for (const char *const *name = kinds[k].members + 1; *name; name++) {
		g_autofree char *mpath = NULL;
		gboolean ok;

		if (!required(v, path, *name, kinds[k].why, &m, &mpath, error))
			return FALSE;
		if (strcmp(*name, "start") == 0)
			ok = read_size(m, mpath, &set->start, error);
		else if (strcmp(*name, "end") == 0)
			ok = read_size(m, mpath, &set->end, error);
		else if (strcmp(*name, "window") == 0)
			ok = read_size(m, mpath, &set->scan_window_bytes, error);
		else if (strcmp(*name, "speed_bps") == 0)
			ok = read_size(m, mpath, &set->scan_speed_bps, error);
		else if (strcmp(*name, "hz") == 0)
			ok = read_positive(m, mpath, &set->hz, error);
		else if (strcmp(*name, "s") == 0)
			ok = read_positive(m, mpath, &set->zipf_s, error);
		else
			ok = read_positive(m, mpath, &set->zipf_total_hz, error);
		if (!ok)
			return FALSE;
	}
	return TRUE;
}

/* The largest duration: every phase of a script must fit in 64 bits of us. */
#define MAX_DURATION_US (1ULL << 62)

static gboolean read_duration(struct json_object *v, const char *path, uint64_t *out,
			      GError **error)
{
	struct json_object *m;
	g_autofree char *spath = vr_json_path_member(path, "duration_s");
	g_autofree char *upath = vr_json_path_member(path, "duration_us");
	gboolean has_s = json_object_object_get_ex(v, "duration_s", NULL);
	gboolean has_us = json_object_object_get_ex(v, "duration_us", NULL);
	double s;

	if (has_s && has_us)
		return invalid(error, upath, "give duration_s or duration_us, not both");
	if (!has_s && !has_us)
		return invalid(error, spath, "missing (a phase needs duration_s or duration_us)");
	if (has_us) {
		json_object_object_get_ex(v, "duration_us", &m);
		if (!json_object_is_type(m, json_type_int) || json_object_get_int64(m) <= 0)
			return invalid(error, upath, "expected a positive integer (got %s)",
				       vr_json_describe(m));
		*out = json_object_get_uint64(m);
		if (*out > MAX_DURATION_US)
			return invalid(error, upath,
				       "%" G_GUINT64_FORMAT " is above the maximum %llu", *out,
				       MAX_DURATION_US);
		return TRUE;
	}
	json_object_object_get_ex(v, "duration_s", &m);
	if (!read_positive(m, spath, &s, error))
		return FALSE;
	if (!(s * US_PER_S >= 0.5))
		return invalid(error, spath, "%s is below the minimum 1e-06 (1 us)",
			       vr_json_describe(m));
	if (!(s * US_PER_S <= (double)MAX_DURATION_US))
		return invalid(error, spath, "%s is above the maximum %.0f", vr_json_describe(m),
			       (double)MAX_DURATION_US / US_PER_S);
	*out = (uint64_t)llround(s * US_PER_S);
	return TRUE;
}

static gboolean read_phase(struct json_object *v, const char *path, guint index, struct phase *ph,
			   GError **error)
{
	g_autofree char *npath = NULL, *spath = NULL;
	struct json_object *m, *sets;
	size_t nr;

	ph->path = g_strdup(path);
	if (!check_object(v, path, "", phase_members, error))
		return FALSE;
	if (json_object_object_get_ex(v, "name", &m)) {
		npath = vr_json_path_member(path, "name");
		if (!json_object_is_type(m, json_type_string))
			return invalid(error, npath, "expected a string (got %s)",
				       vr_json_describe(m));
		ph->name = g_strdup(json_object_get_string(m));
	} else {
		ph->name = g_strdup_printf("phase-%u", index);
	}
	if (!read_duration(v, path, &ph->duration_us, error))
		return FALSE;
	if (!required(v, path, "sets", "an idle phase has \"sets\": []", &sets, &spath, error))
		return FALSE;
	if (!json_object_is_type(sets, json_type_array))
		return invalid(error, spath, "expected an array (got %s)", vr_json_describe(sets));
	nr = json_object_array_length(sets);
	ph->sets = g_array_sized_new(FALSE, TRUE, sizeof(struct vr_sim_set), (guint)nr);
	g_array_set_size(ph->sets, (guint)nr);
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index(spath, i);

		if (!read_set(json_object_array_get_idx(sets, i), ipath,
			      &g_array_index(ph->sets, struct vr_sim_set, i), error))
			return FALSE;
	}
	return TRUE;
}

/* The workload's memory: an array of {start, end}, into @ranges. */
static gboolean read_workload(struct json_object *v, const char *path, GArray *ranges,
			      GError **error)
{
	size_t nr;

	if (!json_object_is_type(v, json_type_array))
		return invalid(error, path, "expected an array (got %s)", vr_json_describe(v));
	nr = json_object_array_length(v);
	if (nr == 0)
		return invalid(error, path, "at least one range is needed");
	for (guint i = 0; i < nr; i++) {
		struct json_object *r = json_object_array_get_idx(v, i), *m;
		g_autofree char *ipath = vr_json_path_index(path, i);
		g_autofree char *spath = NULL, *epath = NULL;
		const char *why = "a range needs start and end";
		struct vr_range range;

		if (!check_object(r, ipath, "", range_members, error) ||
		    !required(r, ipath, "start", why, &m, &spath, error) ||
		    !read_size(m, spath, &range.start, error) ||
		    !required(r, ipath, "end", why, &m, &epath, error) ||
		    !read_size(m, epath, &range.end, error))
			return FALSE;
		g_array_append_val(ranges, range);
	}
	return TRUE;
}

/* ---- the guest's own checks, in JSON paths ---- */

/* @msg without a leading "<prefix><digits>: " (vr_sim_add_phase()'s "phase N: "). */
static const char *strip_numbered(const char *msg, const char *prefix)
{
	const char *p = msg;

	if (!g_str_has_prefix(p, prefix))
		return msg;
	p += strlen(prefix);
	if (!g_ascii_isdigit(*p))
		return msg;
	while (g_ascii_isdigit(*p))
		p++;
	return g_str_has_prefix(p, ": ") ? p + 2 : msg;
}

/* vr_sim_add_phase()'s message about the phase at @path. */
static gboolean phase_error(GError **error, const char *path, const char *msg)
{
	const char *rest = strip_numbered(msg, "phase ");

	if (g_str_has_prefix(rest, "sets["))
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID, "%s.%s", path, rest);
	else
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID, "%s: %s", path, rest);
	return FALSE;
}

/* Adds @phases (and the workload's memory, when @ranges has any) to @sim. */
static gboolean apply(struct vr_sim *sim, GArray *phases, GArray *ranges, GError **error)
{
	for (guint i = 0; i < phases->len; i++) {
		const struct phase *ph = &g_array_index(phases, struct phase, i);
		g_autoptr(GError) local = NULL;

		if (!vr_sim_add_phase(sim, ph->name, ph->duration_us,
				      (const struct vr_sim_set *)(void *)ph->sets->data,
				      ph->sets->len, &local))
			return phase_error(error, ph->path, local->message);
	}
	if (ranges->len) {
		g_autoptr(GError) local = NULL;

		if (!vr_sim_set_workload_ranges(sim, (const struct vr_range *)(void *)ranges->data,
						ranges->len, &local)) {
			const char *msg = local->message;

			if (g_str_has_prefix(msg, "workload "))
				msg += strlen("workload ");
			return invalid(error, "workload", "%s", msg);
		}
	}
	return TRUE;
}

static gboolean read_document(struct json_object *root, GArray *phases, GArray *ranges,
			      GError **error)
{
	struct json_object *v;
	size_t nr;

	if (!check_object(root, "", "", document_members, error))
		return FALSE;
	if (json_object_object_get_ex(root, "workload", &v) &&
	    !read_workload(v, "workload", ranges, error))
		return FALSE;
	if (!json_object_object_get_ex(root, "phases", &v))
		return invalid(error, "phases", "missing (a workload needs phases)");
	if (!json_object_is_type(v, json_type_array))
		return invalid(error, "phases", "expected an array (got %s)", vr_json_describe(v));
	nr = json_object_array_length(v);
	if (nr == 0)
		return invalid(error, "phases", "at least one phase is needed");
	for (guint i = 0; i < nr; i++) {
		g_autofree char *ipath = vr_json_path_index("phases", i);
		struct phase ph = { 0 };

		g_array_append_val(phases, ph);
		if (!read_phase(json_object_array_get_idx(v, i), ipath, i,
				&g_array_index(phases, struct phase, i), error))
			return FALSE;
	}
	return TRUE;
}

gboolean vr_sim_load_json(struct vr_sim *sim, const char *text, gssize len, GError **error)
{
	g_autoptr(json_object) root = NULL;
	g_autoptr(GArray) phases = g_array_new(FALSE, TRUE, sizeof(struct phase));
	g_autoptr(GArray) ranges = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	g_autoptr(vr_sim) scratch = NULL;
	g_autoptr(GError) local = NULL;
	uint64_t total_us = vr_sim_script_duration_us(sim);
	const struct vr_json_errors errs = { VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
					     VR_SIM_ERROR_INVALID };

	g_return_val_if_fail(sim != NULL, FALSE);
	g_return_val_if_fail(text != NULL || len == 0, FALSE);
	g_array_set_clear_func(phases, phase_clear);
	if (!vr_json_doc_parse(text, len, &errs, &root, NULL, error) ||
	    !read_document(root, phases, ranges, error))
		return FALSE;
	for (guint i = 0; i < phases->len; i++) {
		const struct phase *ph = &g_array_index(phases, struct phase, i);

		if (ph->duration_us > G_MAXUINT64 - total_us)
			return invalid(error, ph->path, "the script would last more than 2^64 us");
		total_us += ph->duration_us;
	}

	/* All or nothing: the guest's checks run on a scratch guest first. */
	scratch = vr_sim_new(vr_sim_size(sim), 0, &local);
	if (!scratch) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (!apply(scratch, phases, ranges, error))
		return FALSE;
	return apply(sim, phases, ranges, error);
}
