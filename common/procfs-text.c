/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parsers of procfs texts ("Name: N kB" lists, /proc/meminfo, memory PSI,
 * /proc/buddyinfo, /proc/<pid>/status, smaps_rollup and stat): see
 * procfs-text.h.
 */
#include "procfs-text.h"

#include <stddef.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-procfs-text-error-quark, vr_procfs_text_error)
/* clang-format on */

/* "<spaces><digits> kB" -> bytes; FALSE when malformed or too large. */
static gboolean parse_kb(const char *value, uint64_t *bytes)
{
	const char *p = value;
	guint64 kb = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!g_ascii_isdigit(*p))
		return FALSE;
	for (; g_ascii_isdigit(*p); p++) {
		guint d = (guint)(*p - '0');

		if (kb > (G_MAXUINT64 - d) / 10)
			return FALSE;
		kb = kb * 10 + d;
	}
	if (strcmp(p, " kB") != 0)
		return FALSE;
	if (kb > G_MAXUINT64 / 1024)
		return FALSE;
	*bytes = kb * 1024;
	return TRUE;
}

/* One line: when it is one of @fields, store its value in @values. */
static gboolean parse_kb_line(const char *line, const struct vr_kb_field *fields, guint nr_fields,
			      uint64_t *values, guint32 *seen, GError **error)
{
	const char *colon = strchr(line, ':');

	if (!colon)
		return TRUE; /* not a field we read (an empty last line) */
	for (guint i = 0; i < nr_fields; i++) {
		size_t len = strlen(fields[i].name);

		if ((size_t)(colon - line) != len || strncmp(line, fields[i].name, len) != 0)
			continue;
		if (*seen & (1u << i)) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "%s appears twice", fields[i].name);
			return FALSE;
		}
		if (!parse_kb(colon + 1, &values[i])) {
			g_autofree char *held = g_strstrip(g_strdup(colon + 1));

			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "%s holds '%s', not a number of kB", fields[i].name, held);
			return FALSE;
		}
		*seen |= 1u << i;
		return TRUE;
	}
	return TRUE;
}

gboolean vr_kb_fields_parse(const char *text, const struct vr_kb_field *fields, guint nr_fields,
			    void *out, GError **error)
{
	g_auto(GStrv) lines = NULL;
	uint64_t values[VR_KB_FIELDS_MAX] = { 0 };
	guint32 seen = 0;

	g_return_val_if_fail(nr_fields <= VR_KB_FIELDS_MAX, FALSE);
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++)
		if (!parse_kb_line(*l, fields, nr_fields, values, &seen, error))
			return FALSE;
	for (guint i = 0; i < nr_fields; i++) {
		if (!(seen & (1u << i))) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "no %s field", fields[i].name);
			return FALSE;
		}
	}
	for (guint i = 0; i < nr_fields; i++)
		memcpy((char *)out + fields[i].offset, &values[i], sizeof(values[i]));
	return TRUE;
}

/* ---- /proc/meminfo ---- */

static const struct vr_kb_field meminfo_fields[] = {
	{ "MemTotal", offsetof(struct vr_meminfo, mem_total_bytes) },
	{ "MemFree", offsetof(struct vr_meminfo, mem_free_bytes) },
	{ "MemAvailable", offsetof(struct vr_meminfo, mem_available_bytes) },
	{ "SwapTotal", offsetof(struct vr_meminfo, swap_total_bytes) },
	{ "SwapFree", offsetof(struct vr_meminfo, swap_free_bytes) },
};

gboolean vr_meminfo_parse(const char *text, struct vr_meminfo *out, GError **error)
{
	struct vr_meminfo m = { 0 };

	if (!vr_kb_fields_parse(text, meminfo_fields, G_N_ELEMENTS(meminfo_fields), &m, error))
		return FALSE;
	if (m.mem_total_bytes == 0) {
		g_set_error_literal(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "MemTotal is 0 kB");
		return FALSE;
	}
	if (m.mem_free_bytes > m.mem_total_bytes) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "MemFree (%" G_GUINT64_FORMAT
			    " kB) exceeds MemTotal (%" G_GUINT64_FORMAT " kB)",
			    (guint64)(m.mem_free_bytes / 1024),
			    (guint64)(m.mem_total_bytes / 1024));
		return FALSE;
	}
	if (m.swap_free_bytes > m.swap_total_bytes) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "SwapFree (%" G_GUINT64_FORMAT
			    " kB) exceeds SwapTotal (%" G_GUINT64_FORMAT " kB)",
			    (guint64)(m.swap_free_bytes / 1024),
			    (guint64)(m.swap_total_bytes / 1024));
		return FALSE;
	}
	*out = m;
	return TRUE;
}

uint64_t vr_meminfo_free_mem_rate(const struct vr_meminfo *m)
{
	if (!m->mem_total_bytes)
		return 0;
	return (uint64_t)((unsigned __int128)m->mem_free_bytes * 1000 / m->mem_total_bytes);
}

/* ---- /proc/pressure/memory ---- */

/* "12.34" (at most two decimals, at most 100) -> 1234 basis points. */
static gboolean parse_percent_bp(const char *s, uint32_t *bp)
{
	guint64 whole;
	uint32_t frac = 0;
	const char *dot = strchr(s, '.');
	g_autofree char *int_part = dot ? g_strndup(s, (gsize)(dot - s)) : g_strdup(s);

	if (!*int_part || !g_ascii_isdigit(int_part[0]) ||
	    !g_ascii_string_to_unsigned(int_part, 10, 0, 100, &whole, NULL))
		return FALSE;
	if (dot) {
		size_t n = strlen(dot + 1);

		if (n < 1 || n > 2)
			return FALSE;
		for (size_t i = 0; i < n; i++) {
			if (!g_ascii_isdigit(dot[1 + i]))
				return FALSE;
			frac = frac * 10 + (uint32_t)(dot[1 + i] - '0');
		}
		if (n == 1)
			frac *= 10;
	}
	if (whole * 100 + frac > 10000)
		return FALSE;
	*bp = (uint32_t)(whole * 100 + frac);
	return TRUE;
}

/* "name=value" with the expected @name; returns the value or NULL. */
static const char *field_value(const char *token, const char *name)
{
	size_t len = strlen(name);

	if (strncmp(token, name, len) != 0 || token[len] != '=')
		return NULL;
	return token + len + 1;
}

static gboolean parse_psi_line(const char *line, const char *kind, struct vr_psi_line *out,
			       GError **error)
{
	static const char *const avg_names[] = { "avg10", "avg60", "avg300" };
	g_auto(GStrv) tokens = g_strsplit(line, " ", -1);
	uint32_t *avgs[] = { &out->avg10_bp, &out->avg60_bp, &out->avg300_bp };
	guint64 total;
	const char *v;

	if (g_strv_length(tokens) != 5 || strcmp(tokens[0], kind) != 0) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "expected a '%s avg10=.. avg60=.. avg300=.. total=..' line, got '%s'",
			    kind, line);
		return FALSE;
	}
	for (guint i = 0; i < G_N_ELEMENTS(avg_names); i++) {
		v = field_value(tokens[1 + i], avg_names[i]);
		if (!v || !parse_percent_bp(v, avgs[i])) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "'%s' line: expected %s=<percent>, got '%s'", kind,
				    avg_names[i], tokens[1 + i]);
			return FALSE;
		}
	}
	v = field_value(tokens[4], "total");
	if (!v || !g_ascii_isdigit(*v) ||
	    !g_ascii_string_to_unsigned(v, 10, 0, G_MAXUINT64, &total, NULL)) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "'%s' line: expected total=<us>, got '%s'", kind, tokens[4]);
		return FALSE;
	}
	out->total_us = total;
	return TRUE;
}

gboolean vr_psi_parse(const char *text, struct vr_psi_memory *out, GError **error)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	guint nr = g_strv_length(lines);
	struct vr_psi_memory m = { 0 };

	/* a trailing newline leaves one empty string at the end */
	if (nr && !*lines[nr - 1])
		nr--;
	if (nr != 2) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "expected a 'some' and a 'full' line, got %u lines", nr);
		return FALSE;
	}
	if (!parse_psi_line(lines[0], "some", &m.some, error) ||
	    !parse_psi_line(lines[1], "full", &m.full, error))
		return FALSE;
	*out = m;
	return TRUE;
}

/* ---- /proc/buddyinfo ---- */

/* Longest token an error message quotes, bytes. */
#define BUDDYINFO_QUOTE_MAX 32

/* Is @s one or more decimal digits and nothing else? */
static gboolean is_decimal(const char *s)
{
	return *s && s[strspn(s, "0123456789")] == '\0';
}

/* A zone name: a letter, then letters, digits or '_' ("DMA32", "Normal"). */
static gboolean is_zone_name(const char *s)
{
	if (!g_ascii_isalpha(*s))
		return FALSE;
	for (s++; *s; s++)
		if (!g_ascii_isalnum(*s) && *s != '_')
			return FALSE;
	return TRUE;
}

/* Token @i of @tokens, or "" past the end. */
static const char *token(GPtrArray *tokens, guint i)
{
	return i < tokens->len ? g_ptr_array_index(tokens, i) : "";
}

/* "Node N," "zone" NAME: FALSE with @error naming line @nr and the token. */
static gboolean parse_zone_head(GPtrArray *tokens, guint nr, GError **error)
{
	const char *node = token(tokens, 1);
	size_t node_len = strlen(node);
	g_autofree char *number = g_strndup(node, node_len ? node_len - 1 : 0);

	if (strcmp(token(tokens, 0), "Node") != 0) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "line %u: expected 'Node', got '%.*s'", nr, BUDDYINFO_QUOTE_MAX,
			    token(tokens, 0));
		return FALSE;
	}
	if (!node_len || node[node_len - 1] != ',' || !is_decimal(number) ||
	    !g_ascii_string_to_unsigned(number, 10, 0, G_MAXINT32, NULL, NULL)) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "line %u: expected a node number and a comma after 'Node', got '%.*s'",
			    nr, BUDDYINFO_QUOTE_MAX, node);
		return FALSE;
	}
	if (strcmp(token(tokens, 2), "zone") != 0) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "line %u: expected 'zone' after 'Node %s', got '%.*s'", nr, node,
			    BUDDYINFO_QUOTE_MAX, token(tokens, 2));
		return FALSE;
	}
	if (!is_zone_name(token(tokens, 3))) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "line %u: expected a zone name after 'zone', got '%.*s'", nr,
			    BUDDYINFO_QUOTE_MAX, token(tokens, 3));
		return FALSE;
	}
	return TRUE;
}

/* Line @nr of /proc/buddyinfo: add its free bytes in blocks of @min_order
 * and larger to *@total. */
static gboolean parse_buddyinfo_line(const char *line, guint nr, guint min_order,
				     uint64_t page_size, uint64_t *total, GError **error)
{
	g_auto(GStrv) parts = g_strsplit_set(line, " \t", -1);
	g_autoptr(GPtrArray) tokens = g_ptr_array_new();
	const char *zone;
	guint nr_counts;

	for (char **p = parts; *p; p++)
		if (**p)
			g_ptr_array_add(tokens, *p);
	if (!tokens->len) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "line %u is empty", nr);
		return FALSE;
	}
	if (!parse_zone_head(tokens, nr, error))
		return FALSE;
	zone = token(tokens, 3);
	nr_counts = tokens->len - 4;
	if (nr_counts < 1 || nr_counts > VR_BUDDYINFO_MAX_ORDERS) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "line %u (zone %.*s): %u counts, expected 1..%d (one per order)", nr,
			    BUDDYINFO_QUOTE_MAX, zone, nr_counts, VR_BUDDYINFO_MAX_ORDERS);
		return FALSE;
	}
	for (guint order = 0; order < nr_counts; order++) {
		const char *count = token(tokens, 4 + order);
		guint64 blocks, bytes;

		if (!is_decimal(count)) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "line %u (zone %.*s): the count of order %u is '%.*s', not a "
				    "decimal number",
				    nr, BUDDYINFO_QUOTE_MAX, zone, order, BUDDYINFO_QUOTE_MAX,
				    count);
			return FALSE;
		}
		if (!g_ascii_string_to_unsigned(count, 10, 0, G_MAXUINT64, &blocks, NULL)) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "line %u (zone %.*s): the count of order %u, '%.*s', does not "
				    "fit 64 bits",
				    nr, BUDDYINFO_QUOTE_MAX, zone, order, BUDDYINFO_QUOTE_MAX,
				    count);
			return FALSE;
		}
		if (order < min_order)
			continue;
		if (!g_uint64_checked_mul(&bytes, blocks, page_size) ||
		    !g_uint64_checked_mul(&bytes, bytes, G_GUINT64_CONSTANT(1) << order) ||
		    !g_uint64_checked_add(total, *total, bytes)) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "line %u (zone %.*s): %s free blocks of order %u take the free "
				    "bytes beyond 64 bits",
				    nr, BUDDYINFO_QUOTE_MAX, zone, count, order);
			return FALSE;
		}
	}
	return TRUE;
}

gboolean vr_buddyinfo_parse(const char *text, guint min_order, uint64_t page_size,
			    uint64_t *free_bytes, GError **error)
{
	g_auto(GStrv) lines = NULL;
	uint64_t total = 0;
	guint nr = 0;

	g_return_val_if_fail(page_size > 0, FALSE);
	if (!*text) {
		g_set_error_literal(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "the text is empty: no 'Node N, zone NAME' line");
		return FALSE;
	}
	/* Count the lines before splitting: a hostile text is not split whole.
	 * A line ends at a newline or at the end of the text. */
	for (const char *p = text; *p && nr <= VR_BUDDYINFO_MAX_LINES; p++)
		if (*p == '\n' || !p[1])
			nr++;
	if (nr > VR_BUDDYINFO_MAX_LINES) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "more than %d lines (one per zone of each node)",
			    VR_BUDDYINFO_MAX_LINES);
		return FALSE;
	}
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; i < nr; i++)
		if (!parse_buddyinfo_line(lines[i], i + 1, min_order, page_size, &total, error))
			return FALSE;
	*free_bytes = total;
	return TRUE;
}

/* ---- /proc/<pid>/status, smaps_rollup and stat ---- */

#define US_PER_S 1000000ULL

/* 1-based field numbers of /proc/<pid>/stat (proc_pid_stat(5)). */
#define STAT_FIELD_STATE     3
#define STAT_FIELD_UTIME     14
#define STAT_FIELD_STIME     15
#define STAT_FIELD_STARTTIME 22

/* A task's comm is at most 15 bytes (TASK_COMM_LEN); kernel threads may show
 * longer names (workqueue workers). Only the last ')' ends it, and it may
 * hold any byte but NUL, even a newline. */
#define STAT_COMM_MAX_BYTES 64

static const struct vr_kb_field status_fields[] = {
	{ "VmRSS", offsetof(struct vr_proc_status, vm_rss_bytes) },
	{ "VmSwap", offsetof(struct vr_proc_status, vm_swap_bytes) },
};

static const struct vr_kb_field smaps_rollup_fields[] = {
	{ "Rss", offsetof(struct vr_smaps_rollup, rss_bytes) },
	{ "Anonymous", offsetof(struct vr_smaps_rollup, anonymous_bytes) },
	{ "Swap", offsetof(struct vr_smaps_rollup, swap_bytes) },
};

gboolean vr_proc_status_parse(const char *text, const char *path, struct vr_proc_status *out,
			      GError **error)
{
	if (!vr_kb_fields_parse(text, status_fields, G_N_ELEMENTS(status_fields), out, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return TRUE;
}

gboolean vr_proc_status_vm_size_parse(const char *text, const char *path, uint64_t *bytes,
				      GError **error)
{
	static const struct vr_kb_field vm_size = { "VmSize", 0 };

	if (!vr_kb_fields_parse(text, &vm_size, 1, bytes, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return TRUE;
}

gboolean vr_smaps_rollup_parse(const char *text, const char *path, struct vr_smaps_rollup *out,
			       GError **error)
{
	const char *eol = strchr(text, '\n');
	g_autofree char *header = eol ? g_strndup(text, (gsize)(eol - text)) : g_strdup(text);

	if (!g_str_has_suffix(g_strchomp(header), "[rollup]")) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: the first line is not a '... [rollup]' header%s", path,
			    *text ? "" : " (the file is empty: a process without memory)");
		return FALSE;
	}
	if (!vr_kb_fields_parse(text, smaps_rollup_fields, G_N_ELEMENTS(smaps_rollup_fields), out,
				error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return TRUE;
}

/* Field @nr (1-based, > 2) of a stat line, from the tokens after the comm. */
static gboolean stat_u64(char **after_comm, guint nr, const char *name, const char *path,
			 guint64 *value, GError **error)
{
	const char *token = after_comm[nr - STAT_FIELD_STATE];

	if (!g_ascii_isdigit(*token) ||
	    !g_ascii_string_to_unsigned(token, 10, 0, G_MAXUINT64, value, NULL)) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: %s (field %u) holds '%s', not an unsigned decimal", path, name, nr,
			    token);
		return FALSE;
	}
	return TRUE;
}

/* @ticks clock ticks in us; FALSE when that overflows 64 bits. */
static gboolean ticks_to_us(guint64 ticks, uint64_t ticks_per_s, uint64_t *us)
{
	unsigned __int128 v = (unsigned __int128)ticks * US_PER_S / ticks_per_s;

	if (v > G_MAXUINT64)
		return FALSE;
	*us = (uint64_t)v;
	return TRUE;
}

gboolean vr_proc_stat_parse(const char *text, const char *path, uint64_t ticks_per_s,
			    struct vr_proc_stat *out, GError **error)
{
	gsize len = strlen(text);
	g_autofree char *line = NULL;
	g_autofree char *pid_text = NULL;
	g_auto(GStrv) fields = NULL;
	const char *open, *close;
	guint64 pid, utime, stime, start;
	struct vr_proc_stat s;

	if (ticks_per_s == 0 || ticks_per_s > US_PER_S) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: a clock tick of %" G_GUINT64_FORMAT
			    " per second is out of range (1..1000000)",
			    path, (guint64)ticks_per_s);
		return FALSE;
	}
	if (len && text[len - 1] == '\n')
		len--;
	line = g_strndup(text, len);
	open = strchr(line, '(');
	close = strrchr(line, ')');
	if (!open || open == line || open[-1] != ' ' || !close || close < open || close[1] != ' ') {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: expected 'pid (comm) state ...', got '%.64s'", path, line);
		return FALSE;
	}
	if (close - open - 1 > STAT_COMM_MAX_BYTES) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: comm (field 2) is longer than %d bytes", path,
			    STAT_COMM_MAX_BYTES);
		return FALSE;
	}
	pid_text = g_strndup(line, (gsize)(open - 1 - line));
	if (!g_ascii_isdigit(*pid_text) ||
	    !g_ascii_string_to_unsigned(pid_text, 10, 1, G_MAXINT32, &pid, NULL)) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: pid (field 1) holds '%s', not a process id", path, pid_text);
		return FALSE;
	}
	fields = g_strsplit(close + 2, " ", -1);
	if (g_strv_length(fields) < STAT_FIELD_STARTTIME - STAT_FIELD_STATE + 1) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: %u fields, expected at least %d (up to starttime)", path,
			    g_strv_length(fields) + STAT_FIELD_STATE - 1, STAT_FIELD_STARTTIME);
		return FALSE;
	}
	if (strlen(fields[0]) != 1 || !g_ascii_isalpha(fields[0][0])) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: state (field 3) holds '%s', not one letter", path, fields[0]);
		return FALSE;
	}
	for (guint i = 1; fields[i]; i++) {
		const char *t = fields[i] + (fields[i][0] == '-');

		if (!*t || strspn(t, "0123456789") != strlen(t)) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "%s: field %u holds '%s', not a decimal number", path,
				    i + STAT_FIELD_STATE, fields[i]);
			return FALSE;
		}
	}
	if (!stat_u64(fields, STAT_FIELD_UTIME, "utime", path, &utime, error) ||
	    !stat_u64(fields, STAT_FIELD_STIME, "stime", path, &stime, error) ||
	    !stat_u64(fields, STAT_FIELD_STARTTIME, "starttime", path, &start, error))
		return FALSE;
	if (utime > G_MAXUINT64 - stime || !ticks_to_us(utime + stime, ticks_per_s, &s.cpu_us)) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: utime + stime (%" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT
			    " ticks) overflows 64 bits of us",
			    path, utime, stime);
		return FALSE;
	}
	if (!ticks_to_us(start, ticks_per_s, &s.start_time_us)) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "%s: starttime (%" G_GUINT64_FORMAT " ticks) overflows 64 bits of us",
			    path, start);
		return FALSE;
	}
	s.pid = (uint32_t)pid;
	*out = s;
	return TRUE;
}
