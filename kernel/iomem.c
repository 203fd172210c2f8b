// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The guest's System RAM ranges from /proc/iomem: see iomem.h.
 */
#include "iomem.h"

#include <string.h>

#include "kernel-file.h"

#define SYSTEM_RAM "System RAM"

/**
 * parse_line() - one top-level line "START-END : NAME" of /proc/iomem.
 * @line:	the line, without its newline; not indented.
 * @start, @end: the addresses, END inclusive as in the file.
 * @name:	set to the name inside @line (not NUL-terminated: @name_len).
 *
 * Return: FALSE when the line does not have that shape.
 */
static gboolean parse_line(const char *line, uint64_t *start, uint64_t *end, const char **name,
			   size_t *name_len)
{
	const char *p = line;
	char *q;

	if (!g_ascii_isxdigit(*p))
		return FALSE;
	*start = g_ascii_strtoull(p, &q, 16);
	if (q == p || *q != '-')
		return FALSE;
	p = q + 1;
	if (!g_ascii_isxdigit(*p))
		return FALSE;
	*end = g_ascii_strtoull(p, &q, 16);
	if (q == p || *end < *start)
		return FALSE;
	p = q;
	while (*p == ' ')
		p++;
	if (*p != ':')
		return FALSE;
	p++;
	while (*p == ' ')
		p++;
	*name = p;
	*name_len = strlen(p);
	while (*name_len > 0 && g_ascii_isspace(p[*name_len - 1]))
		(*name_len)--;
	return TRUE;
}

/* [start, end] (end inclusive) shrunk inward to pages; FALSE when empty. */
static gboolean page_align_inward(uint64_t start, uint64_t end, struct vr_range *out)
{
	uint64_t first, last_excl;

	if (start > G_MAXUINT64 - (VR_PAGE_SIZE - 1))
		return FALSE;
	first = (start + VR_PAGE_SIZE - 1) & ~(VR_PAGE_SIZE - 1);
	/* end + 1 overflows for the very last byte of the address space */
	last_excl = end == G_MAXUINT64 ? G_MAXUINT64 & ~(VR_PAGE_SIZE - 1) :
					 (end + 1) & ~(VR_PAGE_SIZE - 1);
	if (first >= last_excl)
		return FALSE;
	out->start = first;
	out->end = last_excl;
	return TRUE;
}

static gint range_cmp(gconstpointer a, gconstpointer b)
{
	const struct vr_range *ra = a, *rb = b;

	return ra->start < rb->start ? -1 : ra->start > rb->start;
}

GArray *vr_iomem_parse_system_ram(const char *text, GError **error)
{
	g_autoptr(GArray) ranges = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	g_auto(GStrv) lines = NULL;
	guint nr_parsed = 0, nr_nonzero = 0, nr_ram = 0;

	g_return_val_if_fail(text != NULL, NULL);
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		uint64_t start, end;
		const char *name;
		size_t name_len;
		struct vr_range r;

		/* Children are indented: only top-level entries are RAM. */
		if (!parse_line(*l, &start, &end, &name, &name_len)) {
			if (**l && !g_ascii_isspace(**l))
				g_debug("iomem: ignoring the line '%s'", *l);
			continue;
		}
		nr_parsed++;
		if (start || end)
			nr_nonzero++;
		if (name_len != strlen(SYSTEM_RAM) || strncmp(name, SYSTEM_RAM, name_len) != 0)
			continue;
		nr_ram++;
		if (page_align_inward(start, end, &r))
			g_array_append_val(ranges, r);
	}
	if (nr_parsed > 0 && nr_nonzero == 0) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "every address in iomem is 0: it was read without root (run the agent "
			    "as root)");
		return NULL;
	}
	if (ranges->len == 0) {
		g_set_error_literal(
			error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			nr_ram ? "iomem has no System RAM range of at least one whole page" :
				 "iomem lists no top-level System RAM range");
		return NULL;
	}
	g_array_sort(ranges, range_cmp);
	return g_steal_pointer(&ranges);
}

GArray *vr_iomem_read_system_ram(const char *procfs, GError **error)
{
	g_autofree char *path = g_build_filename(procfs, "iomem", NULL);
	g_autofree char *text = vr_kfile_read(path, VR_KFILE_MAX_BYTES, error);
	GArray *ranges;

	if (!text)
		return NULL;
	ranges = vr_iomem_parse_system_ram(text, error);
	if (!ranges)
		g_prefix_error(error, "%s: ", path);
	return ranges;
}

guint vr_iomem_largest(const GArray *ranges)
{
	guint best = 0;

	for (guint i = 1; i < ranges->len; i++) {
		const struct vr_range *r = &g_array_index(ranges, struct vr_range, i);
		const struct vr_range *b = &g_array_index(ranges, struct vr_range, best);

		if (r->end - r->start > b->end - b->start)
			best = i;
	}
	return best;
}
