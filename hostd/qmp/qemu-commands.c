/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * QEMU commands for vreclaimd: balloon, RAM size, and the guest RAM map
 * from `info mtree -f` and `gpa2hva`; each a call plus a pure parser. See
 * qemu-commands.h.
 */
#include "qmp/qemu-commands.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-qemu-commands-error-quark, vr_qemu_commands_error)
/* clang-format on */

/* The longest memory region name taken from `info mtree`, bytes. */
#define VR_QEMU_MAX_REGION_NAME_BYTES 256

static gboolean invalid(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean invalid(GError **error, const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, VR_QEMU_COMMANDS_ERROR, VR_QEMU_COMMANDS_ERROR_INVALID, msg);
	return FALSE;
}

/* A size member of @obj (bytes): a non-negative integer. */
static gboolean get_size(json_object *obj, const char *name, gboolean optional, uint64_t *out,
			 const char *command, GError **error)
{
	json_object *v = NULL;

	if (!json_object_is_type(obj, json_type_object))
		return invalid(error, "QEMU's answer to %s is not an object (got %s)", command,
			       vr_json_describe(obj));
	if (!json_object_object_get_ex(obj, name, &v)) {
		*out = 0;
		return optional ?
			       TRUE :
			       invalid(error, "QEMU's answer to %s has no \"%s\"", command, name);
	}
	if (!json_object_is_type(v, json_type_int))
		return invalid(error, "QEMU's answer to %s: \"%s\" must be an integer (got %s)",
			       command, name, vr_json_describe(v));
	if (json_object_get_int64(v) < 0)
		return invalid(error, "QEMU's answer to %s: \"%s\" must not be negative (got %s)",
			       command, name, vr_json_describe(v));
	*out = json_object_get_uint64(v);
	return TRUE;
}

gboolean vr_qemu_parse_balloon(json_object *ret, uint64_t *actual_bytes, GError **error)
{
	return get_size(ret, "actual", FALSE, actual_bytes, "query-balloon", error);
}

gboolean vr_qemu_parse_memory_size_summary(json_object *ret, uint64_t *bytes, GError **error)
{
	const char *command = "query-memory-size-summary";
	uint64_t base = 0, plugged = 0;

	if (!get_size(ret, "base-memory", FALSE, &base, command, error) ||
	    !get_size(ret, "plugged-memory", TRUE, &plugged, command, error))
		return FALSE;
	if (plugged > UINT64_MAX - base)
		return invalid(error,
			       "QEMU's answer to %s: base-memory %" PRIu64 " plus plugged-memory "
			       "%" PRIu64 " exceeds 64 bits",
			       command, base, plugged);
	*bytes = base + plugged;
	return TRUE;
}

gboolean vr_qemu_parse_memdev_ids(json_object *ret, GPtrArray **ids, GError **error)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);
	size_t n;

	if (!json_object_is_type(ret, json_type_array))
		return invalid(error, "QEMU's answer to query-memdev is not an array (got %s)",
			       vr_json_describe(ret));
	n = json_object_array_length(ret);
	if (n > VR_QEMU_MAX_MEMDEVS)
		return invalid(error,
			       "QEMU's answer to query-memdev lists %zu memory backends, more "
			       "than %u",
			       n, VR_QEMU_MAX_MEMDEVS);
	for (size_t i = 0; i < n; i++) {
		json_object *m = json_object_array_get_idx(ret, i);
		json_object *id = NULL;

		if (!json_object_is_type(m, json_type_object))
			return invalid(error,
				       "QEMU's answer to query-memdev: [%zu] must be an object "
				       "(got %s)",
				       i, vr_json_describe(m));
		if (!json_object_object_get_ex(m, "id", &id))
			continue;
		if (!json_object_is_type(id, json_type_string))
			return invalid(error,
				       "QEMU's answer to query-memdev: [%zu].id must be a string "
				       "(got %s)",
				       i, vr_json_describe(id));
		g_ptr_array_add(out, g_strdup(json_object_get_string(id)));
	}
	*ids = g_steal_pointer(&out);
	return TRUE;
}

/* --- info mtree -f ---------------------------------------------------------- */

static void mtree_range_clear(gpointer p)
{
	struct vr_qemu_mtree_range *r = p;

	g_free(r->region);
}

/* 1 to @max_digits hex digits at *@p (advanced past them). */
static gboolean take_hex(const char **p, guint max_digits, uint64_t *v)
{
	uint64_t x = 0;
	guint n = 0;

	while (g_ascii_isxdigit(**p)) {
		if (++n > max_digits)
			return FALSE;
		x = x << 4 | (uint64_t)g_ascii_xdigit_value(**p);
		(*p)++;
	}
	*v = x;
	return n > 0;
}

/* Exactly 16 hex digits at @s, then the end or a space. */
static gboolean is_offset_field(const char *s)
{
	for (int i = 0; i < 16; i++)
		if (!g_ascii_isxdigit(s[i]))
			return FALSE;
	return s[16] == '\0' || s[16] == ' ';
}

/* Accelerator names `info mtree -f` appends to ranges the accelerator maps. */
static gboolean is_accelerator_tail(const char *s)
{
	g_auto(GStrv) words = NULL;

	if (!*s)
		return TRUE;
	if (*s != ' ')
		return FALSE;
	words = g_strsplit(s + 1, " ", -1);
	for (char **w = words; *w; w++) {
		if (!**w)
			return FALSE;
		for (const char *c = *w; *c; c++)
			if (!g_ascii_isalnum(*c))
				return FALSE;
	}
	return TRUE;
}

/**
 * struct mtree_line - one range line of a FlatView.
 * @start, @last: its first and last address (inclusive), bytes.
 * @type:	"ram", "rom", "romd", "ramd", "i/o", "nv-ram", ...
 * @offset:	its offset in its region, bytes.
 * @region:	the region's name (owned).
 */
struct mtree_line {
	uint64_t start;
	uint64_t last;
	char type[16];
	uint64_t offset;
	char *region;
};

/*
 * "  <start>-<last> (prio <n>, <type>): <region>[ @<offset>][ <accel>...]"
 * after the two-space indent; @error says what is wrong (no line number).
 */
static gboolean parse_range_line(const char *p, struct mtree_line *out, GError **error)
{
	const char *type, *close, *rest, *at = NULL, *s;
	g_autofree char *region = NULL;

	if (!take_hex(&p, 16, &out->start) || *p++ != '-' || !take_hex(&p, 16, &out->last))
		return invalid(error, "expected <start>-<end>, 1 to 16 hexadecimal digits each");
	if (out->last < out->start)
		return invalid(error, "the range ends before it starts");
	if (!g_str_has_prefix(p, " (prio "))
		return invalid(error, "expected \" (prio \" after the range");
	p += strlen(" (prio ");
	if (*p == '-')
		p++;
	if (!g_ascii_isdigit(*p))
		return invalid(error, "expected the priority, a decimal integer");
	while (g_ascii_isdigit(*p))
		p++;
	if (!g_str_has_prefix(p, ", "))
		return invalid(error, "expected \", <type>\" after the priority");
	type = p + 2;
	close = strstr(type, "): ");
	if (!close || close == type || (gsize)(close - type) >= sizeof(out->type) ||
	    memchr(type, ' ', (gsize)(close - type)))
		return invalid(error, "expected a region type, then \"): \" and the region");
	memcpy(out->type, type, (gsize)(close - type));
	out->type[close - type] = '\0';
	rest = close + 3;
	/* The region's name may hold " @"; the offset field is the last " @"
	 * with 16 hex digits, followed only by accelerator names. */
	for (s = strstr(rest, " @"); s; s = strstr(s + 1, " @"))
		if (is_offset_field(s + 2) && is_accelerator_tail(s + 2 + 16))
			at = s;
	out->offset = 0;
	if (at) {
		const char *h = at + 2;

		take_hex(&h, 16, &out->offset);
		region = g_strndup(rest, (gsize)(at - rest));
	} else {
		region = g_strdup(rest);
		/* Without an offset, the accelerator's name follows the region. */
		if (g_str_has_suffix(region, " KVM"))
			region[strlen(region) - strlen(" KVM")] = '\0';
	}
	if (!*region)
		return invalid(error, "the region has no name");
	if (strlen(region) > VR_QEMU_MAX_REGION_NAME_BYTES)
		return invalid(error, "the region's name is longer than %u bytes",
			       VR_QEMU_MAX_REGION_NAME_BYTES);
	for (const char *c = region; *c; c++)
		if (g_ascii_iscntrl(*c))
			return invalid(error, "the region's name holds a control character");
	if (out->last - out->start > UINT64_MAX - out->offset)
		return invalid(error, "the offset 0x%" PRIx64 " in %s wraps around", out->offset,
			       region);
	out->region = g_steal_pointer(&region);
	return TRUE;
}

/**
 * struct mtree_state - where vr_qemu_parse_mtree_ram() is in the text.
 * @in_view:	  a "FlatView #" header was seen.
 * @view_memory:  the current FlatView serves address space "memory".
 * @in_ranges:	  past the view's "Root memory region:" line.
 * @memory_views: FlatViews of "memory" seen so far.
 * @have_prev:	  a range of the current view was seen, ending at @prev_last.
 */
struct mtree_state {
	gboolean in_view;
	gboolean view_memory;
	gboolean in_ranges;
	guint memory_views;
	gboolean have_prev;
	uint64_t prev_last;
};

/* One line of the FlatView of "memory": add it to @ranges if it is RAM. */
static gboolean mtree_range(struct mtree_state *st, const char *line, GArray *ranges,
			    GError **error)
{
	struct mtree_line l = { 0 };
	struct vr_qemu_mtree_range r;

	if (!g_str_has_prefix(line, "  ") || g_ascii_isspace(line[2]))
		return invalid(error, "expected a range of the FlatView (two spaces, then "
				      "<start>-<end>)");
	if (!parse_range_line(line + 2, &l, error))
		return FALSE;
	if (st->have_prev && l.start <= st->prev_last) {
		g_free(l.region);
		return invalid(error,
			       "the range starting at 0x%" PRIx64
			       " overlaps or precedes the one before it",
			       l.start);
	}
	st->have_prev = TRUE;
	st->prev_last = l.last;
	if (strcmp(l.type, "ram")) {
		g_free(l.region);
		return TRUE;
	}
	if (ranges->len >= VR_QEMU_RAM_MAP_MAX_RANGES) {
		g_free(l.region);
		return invalid(error, "more than %u RAM ranges", VR_QEMU_RAM_MAP_MAX_RANGES);
	}
	if (l.start == 0 && l.last == UINT64_MAX) {
		g_free(l.region);
		return invalid(error, "a RAM range over the whole 64-bit address space");
	}
	r = (struct vr_qemu_mtree_range){
		.gpa = l.start, .size = l.last - l.start + 1, .offset = l.offset, .region = l.region
	};
	g_array_append_val(ranges, r);
	return TRUE;
}

/* One line of `info mtree -f` output. */
static gboolean mtree_line(struct mtree_state *st, const char *line, GArray *ranges, GError **error)
{
	if (g_str_has_prefix(line, "FlatView #")) {
		*st = (struct mtree_state){ .in_view = TRUE, .memory_views = st->memory_views };
		return TRUE;
	}
	if (!*line) {
		st->in_ranges = FALSE;
		return TRUE;
	}
	if (!st->in_view)
		return TRUE;
	if (!st->in_ranges && g_str_has_prefix(line, " AS \"memory\", ")) {
		if (st->memory_views++)
			return invalid(error, "a second FlatView of address space \"memory\"");
		st->view_memory = TRUE;
		return TRUE;
	}
	if (!st->in_ranges && g_str_has_prefix(line, " Root memory region: ")) {
		st->in_ranges = TRUE;
		return TRUE;
	}
	if (!st->in_ranges || !st->view_memory || !strcmp(line, "  No rendered FlatView"))
		return TRUE;
	return mtree_range(st, line, ranges, error);
}

gboolean vr_qemu_parse_mtree_ram(const char *text, GArray **ranges, GError **error)
{
	g_autoptr(GArray) out = g_array_new(FALSE, TRUE, sizeof(struct vr_qemu_mtree_range));
	struct mtree_state st = { 0 };
	const char *p = text;
	guint lineno = 0;

	g_array_set_clear_func(out, mtree_range_clear);
	if (strlen(text) > VR_QEMU_HMP_MAX_OUTPUT_BYTES)
		return invalid(error, "info mtree: more than %u bytes of output",
			       VR_QEMU_HMP_MAX_OUTPUT_BYTES);
	while (*p) {
		const char *nl = strchr(p, '\n');
		gsize len = nl ? (gsize)(nl - p) : strlen(p);
		g_autofree char *line = g_strndup(p, len);

		lineno++;
		if (len && line[len - 1] == '\r')
			line[len - 1] = '\0';
		if (!mtree_line(&st, line, out, error)) {
			g_autofree char *quote = vr_qmp_printable(line, VR_QMP_MAX_QUOTE_BYTES);

			g_prefix_error(error, "info mtree: line %u (%s): ", lineno, quote);
			return FALSE;
		}
		p += len + (nl ? 1 : 0);
	}
	if (!st.memory_views) {
		g_autofree char *quote = vr_qmp_printable(text, 80);

		return invalid(error,
			       "info mtree: no FlatView of address space \"memory\" in %u lines "
			       "(the output starts: %s)",
			       lineno, quote);
	}
	*ranges = g_steal_pointer(&out);
	return TRUE;
}

/* --- gpa2hva ------------------------------------------------------------------ */

gboolean vr_qemu_parse_gpa2hva(const char *text, uint64_t gpa, const char *region, uint64_t *hva,
			       GError **error)
{
	static const char prefix[] = "Host virtual address for 0x";
	g_autofree char *quote = vr_qmp_printable(text, VR_QMP_MAX_QUOTE_BYTES);
	const char *p = text;
	const char *is;
	uint64_t got_gpa = 0, got_hva = 0;

	if (!g_str_has_prefix(p, prefix))
		return invalid(error, "gpa2hva 0x%" PRIx64 ": QEMU answered: %s", gpa, quote);
	p += strlen(prefix);
	if (!take_hex(&p, 16, &got_gpa) || !g_str_has_prefix(p, " ("))
		return invalid(error,
			       "gpa2hva 0x%" PRIx64 ": expected the address, then \" (\": %s", gpa,
			       quote);
	if (got_gpa != gpa)
		return invalid(error, "gpa2hva 0x%" PRIx64 ": QEMU answered for 0x%" PRIx64 ": %s",
			       gpa, got_gpa, quote);
	p += 2;
	is = g_strrstr(p, ") is 0x");
	if (!is)
		return invalid(error, "gpa2hva 0x%" PRIx64 ": expected \") is 0x\": %s", gpa,
			       quote);
	if (region && ((gsize)(is - p) != strlen(region) || strncmp(p, region, strlen(region))))
		return invalid(error,
			       "gpa2hva 0x%" PRIx64 ": QEMU names another region than %s: %s", gpa,
			       region, quote);
	p = is + strlen(") is 0x");
	if (!take_hex(&p, 16, &got_hva) || (strcmp(p, "\r\n") && strcmp(p, "\n") && *p))
		return invalid(error,
			       "gpa2hva 0x%" PRIx64
			       ": expected a host address of up to 16 hexadecimal digits: %s",
			       gpa, quote);
	if (!got_hva)
		return invalid(error, "gpa2hva 0x%" PRIx64 ": the host address is 0: %s", gpa,
			       quote);
	*hva = got_hva;
	return TRUE;
}

/* --- commands ----------------------------------------------------------------- */

gboolean vr_qemu_query_balloon(struct vr_qemu_monitor *mon, uint64_t *actual_bytes, GError **error)
{
	g_autoptr(json_object) ret = NULL;

	return vr_qemu_monitor_execute(mon, "query-balloon", NULL, mon->timeout_ms, &ret, error) &&
	       vr_qemu_parse_balloon(ret, actual_bytes, error);
}

gboolean vr_qemu_set_balloon(struct vr_qemu_monitor *mon, uint64_t target_bytes, GError **error)
{
	g_autoptr(json_object) args = NULL;

	if (target_bytes == 0 || target_bytes > INT64_MAX) {
		g_set_error(error, VR_QEMU_COMMANDS_ERROR, VR_QEMU_COMMANDS_ERROR_ARGUMENT,
			    "balloon target %" PRIu64 " bytes: must be 1 to %" PRId64, target_bytes,
			    INT64_MAX);
		return FALSE;
	}
	args = json_object_new_object();
	json_object_object_add(args, "value", json_object_new_int64((int64_t)target_bytes));
	return vr_qemu_monitor_execute(mon, "balloon", args, mon->timeout_ms, NULL, error);
}

gboolean vr_qemu_query_ram_size(struct vr_qemu_monitor *mon, uint64_t *bytes, GError **error)
{
	g_autoptr(json_object) ret = NULL;

	return vr_qemu_monitor_execute(mon, "query-memory-size-summary", NULL, mon->timeout_ms,
				       &ret, error) &&
	       vr_qemu_parse_memory_size_summary(ret, bytes, error);
}

gboolean vr_qemu_hmp(struct vr_qemu_monitor *mon, const char *command_line, char **output,
		     GError **error)
{
	g_autoptr(json_object) args = json_object_new_object();
	g_autoptr(json_object) ret = NULL;

	json_object_object_add(args, "command-line", json_object_new_string(command_line));
	if (!vr_qemu_monitor_execute(mon, "human-monitor-command", args, mon->timeout_ms, &ret,
				     error)) {
		g_prefix_error(error, "HMP %s: ", command_line);
		return FALSE;
	}
	if (!json_object_is_type(ret, json_type_string))
		return invalid(error, "HMP %s: QEMU's answer is not a string (got %s)",
			       command_line, vr_json_describe(ret));
	if ((gsize)json_object_get_string_len(ret) > VR_QEMU_HMP_MAX_OUTPUT_BYTES)
		return invalid(error, "HMP %s: more than %u bytes of output", command_line,
			       VR_QEMU_HMP_MAX_OUTPUT_BYTES);
	if (memchr(json_object_get_string(ret), '\0', (gsize)json_object_get_string_len(ret)))
		return invalid(error, "HMP %s: the output holds a NUL byte", command_line);
	*output = g_strdup(json_object_get_string(ret));
	return TRUE;
}

/* Whether @region is one of the memory backends @ids (empty: any region). */
static gboolean is_backend(const char *region, const GPtrArray *ids)
{
	if (!ids->len)
		return TRUE;
	for (guint i = 0; i < ids->len; i++) {
		const char *id = g_ptr_array_index(ids, i);

		if (!strcmp(region, id) ||
		    (g_str_has_prefix(region, "/objects/") && !strcmp(region + 9, id)))
			return TRUE;
	}
	return FALSE;
}

/* Every range of one region must put that region at the same host address. */
static gboolean check_region_bases(const GArray *ranges, const GArray *map, GError **error)
{
	for (guint i = 0; i < ranges->len; i++) {
		const struct vr_qemu_mtree_range *a =
			&g_array_index(ranges, struct vr_qemu_mtree_range, i);
		uint64_t base_a = g_array_index(map, struct vr_ram_range, i).hva - a->offset;

		for (guint j = 0; j < i; j++) {
			const struct vr_qemu_mtree_range *b =
				&g_array_index(ranges, struct vr_qemu_mtree_range, j);
			uint64_t base_b =
				g_array_index(map, struct vr_ram_range, j).hva - b->offset;

			if (!strcmp(a->region, b->region) && base_a != base_b)
				return invalid(error,
					       "gpa2hva: the ranges at gpa 0x%" PRIx64
					       " and 0x%" PRIx64 " of %s disagree on where it "
					       "lives in QEMU",
					       b->gpa, a->gpa, a->region);
		}
	}
	return TRUE;
}

gboolean vr_qemu_guest_ram_map(struct vr_qemu_monitor *mon, GArray **map, GError **error)
{
	g_autoptr(json_object) memdevs = NULL;
	g_autoptr(GPtrArray) ids = NULL;
	g_autofree char *mtree = NULL;
	g_autoptr(GArray) all = NULL;
	g_autoptr(GArray) ram = g_array_new(FALSE, TRUE, sizeof(struct vr_qemu_mtree_range));
	g_autoptr(GArray) out = g_array_new(FALSE, TRUE, sizeof(struct vr_ram_range));

	g_array_set_clear_func(ram, mtree_range_clear);
	if (!vr_qemu_monitor_execute(mon, "query-memdev", NULL, mon->timeout_ms, &memdevs, error) ||
	    !vr_qemu_parse_memdev_ids(memdevs, &ids, error))
		return FALSE;
	if (!vr_qemu_hmp(mon, "info mtree -f", &mtree, error) ||
	    !vr_qemu_parse_mtree_ram(mtree, &all, error))
		return FALSE;
	for (guint i = 0; i < all->len; i++) {
		struct vr_qemu_mtree_range *r = &g_array_index(all, struct vr_qemu_mtree_range, i);

		if (!is_backend(r->region, ids)) {
			g_debug("guest RAM map: leaving out %s at gpa 0x%" PRIx64
				" (no memory backend)",
				r->region, r->gpa);
			continue;
		}
		struct vr_qemu_mtree_range copy = *r;
		copy.region = g_strdup(r->region);
		g_array_append_val(ram, copy);
	}
	if (!ram->len)
		return invalid(error,
			       "info mtree: no RAM of a memory backend in address space "
			       "\"memory\" (%u RAM ranges, %u backends)",
			       all->len, ids->len);
	for (guint i = 0; i < ram->len; i++) {
		const struct vr_qemu_mtree_range *r =
			&g_array_index(ram, struct vr_qemu_mtree_range, i);
		g_autofree char *cmd = g_strdup_printf("gpa2hva 0x%" PRIx64, r->gpa);
		g_autofree char *answer = NULL;
		struct vr_ram_range m = { .gpa = r->gpa, .size = r->size };

		if (!vr_qemu_hmp(mon, cmd, &answer, error) ||
		    !vr_qemu_parse_gpa2hva(answer, r->gpa, r->region, &m.hva, error))
			return FALSE;
		g_array_append_val(out, m);
	}
	if (!check_region_bases(ram, out, error) ||
	    !vr_ram_map_validate((const struct vr_ram_range *)(void *)out->data, out->len, error)) {
		g_prefix_error(error, "the guest RAM map QEMU gave: ");
		return FALSE;
	}
	*map = g_steal_pointer(&out);
	return TRUE;
}
