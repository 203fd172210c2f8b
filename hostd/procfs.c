/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parsers of /proc/<pid>/status, smaps_rollup and stat: see procfs.h.
 */
#include "procfs.h"

#include <stddef.h>
#include <string.h>

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
