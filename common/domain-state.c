/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's saved state (see domain-state.h): the text and its checks.
 */
#include "domain-state.h"

#include <string.h>

#include "guest-bounds.h"

/* G_DEFINE_QUARK's name has dashes: clang-format would split them. */
/* clang-format off */
G_DEFINE_QUARK(vr-domain-state-error-quark, vr_domain_state_error)
/* clang-format on */

/* The fleet credit's bounds, per-mille (common/fleet-credit.h). */
#define CREDIT_MIN_PERMILLE 125
#define CREDIT_MAX_PERMILLE 1000

enum key_kind {
	KIND_U64,
	KIND_I64,
	KIND_BOOL,
	KIND_TEXT,
};

/* The keys, in the order they are written. */
enum key_id {
	KEY_VERSION,
	KEY_UUID,
	KEY_NAME,
	KEY_QEMU_PID,
	KEY_QEMU_START,
	KEY_RECLAIMED,
	KEY_REJECTED,
	KEY_RSS_START,
	KEY_PAUSED,
	KEY_CREDIT,
	KEY_TRUST,
	KEY_AGENT_UPTIME,
	KEY_AGENT_SZ_APPLIED,
	KEY_AGENT_SWAP_CACHE,
	KEY_WINDOW_START,
	KEY_WINDOW_SHARE,
	KEY_WINDOW_CHARGED,
	NR_KEYS,
};

static const struct {
	const char *name;
	enum key_kind kind;
	uint64_t min, max; /* KIND_U64 only */
} keys[NR_KEYS] = {
	[KEY_VERSION] = { "version", KIND_U64, 1, UINT32_MAX },
	[KEY_UUID] = { "uuid", KIND_TEXT, 0, 0 },
	[KEY_NAME] = { "name", KIND_TEXT, 0, 0 },
	[KEY_QEMU_PID] = { "qemu-pid", KIND_U64, 1, INT32_MAX },
	[KEY_QEMU_START] = { "qemu-start-time-us", KIND_U64, 0, UINT64_MAX },
	[KEY_RECLAIMED] = { "reclaimed-bytes", KIND_U64, 0, UINT64_MAX },
	[KEY_REJECTED] = { "rejected-reports", KIND_U64, 0, UINT64_MAX },
	[KEY_RSS_START] = { "rss-start-bytes", KIND_U64, 0, UINT64_MAX },
	[KEY_PAUSED] = { "paused", KIND_BOOL, 0, 0 },
	[KEY_CREDIT] = { "credit-permille", KIND_U64, CREDIT_MIN_PERMILLE, CREDIT_MAX_PERMILLE },
	[KEY_TRUST] = { "trust-permille", KIND_U64, CREDIT_MIN_PERMILLE, CREDIT_MAX_PERMILLE },
	[KEY_AGENT_UPTIME] = { "agent-uptime-ms", KIND_U64, 0, UINT64_MAX },
	[KEY_AGENT_SZ_APPLIED] = { "agent-sz-applied-bytes", KIND_U64, 0, UINT64_MAX },
	[KEY_AGENT_SWAP_CACHE] = { "agent-swap-cache-release-bytes", KIND_U64, 0, UINT64_MAX },
	[KEY_WINDOW_START] = { "window-start-us", KIND_I64, 0, 0 },
	[KEY_WINDOW_SHARE] = { "window-share-bytes", KIND_U64, 0, UINT64_MAX },
	[KEY_WINDOW_CHARGED] = { "window-charged-bytes", KIND_U64, 0, UINT64_MAX },
};

/* @name as the file can hold it: valid UTF-8 (else "?"), control
 * characters replaced by '?', cut to 200 bytes on a character boundary. */
static char *name_for_file(const char *name)
{
	GString *s = g_string_new(NULL);

	if (!g_utf8_validate(name, -1, NULL))
		return g_string_free(s, FALSE);
	for (const char *p = name; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		gsize before = s->len;

		if (g_unichar_iscntrl(c))
			g_string_append_c(s, '?');
		else
			g_string_append_unichar(s, c);
		if (s->len > 200) {
			g_string_truncate(s, before);
			break;
		}
	}
	return g_string_free(s, FALSE);
}

char *vr_domain_state_to_text(const struct vr_domain_state *st)
{
	GString *s = g_string_new(NULL);
	g_autofree char *name = name_for_file(st->name);

	g_string_append_printf(s,
			       "# vreclaimd's state of a domain (docs/vreclaimd.md); written by "
			       "the daemon\n"
			       "[" VR_DOMAIN_STATE_GROUP "]\n"
			       "version=%d\n"
			       "uuid=%s\n"
			       "name=%s\n"
			       "qemu-pid=%d\n"
			       "qemu-start-time-us=%" G_GUINT64_FORMAT "\n"
			       "reclaimed-bytes=%" G_GUINT64_FORMAT "\n"
			       "rejected-reports=%" G_GUINT64_FORMAT "\n"
			       "rss-start-bytes=%" G_GUINT64_FORMAT "\n"
			       "paused=%s\n"
			       "credit-permille=%u\n"
			       "trust-permille=%u\n"
			       "agent-uptime-ms=%" G_GUINT64_FORMAT "\n"
			       "agent-sz-applied-bytes=%" G_GUINT64_FORMAT "\n"
			       "agent-swap-cache-release-bytes=%" G_GUINT64_FORMAT "\n"
			       "window-start-us=%" G_GINT64_FORMAT "\n"
			       "window-share-bytes=%" G_GUINT64_FORMAT "\n"
			       "window-charged-bytes=%" G_GUINT64_FORMAT "\n",
			       VR_DOMAIN_STATE_VERSION, st->uuid, name, (int)st->qemu.pid,
			       (guint64)st->qemu.start_time_us, (guint64)st->reclaimed_bytes,
			       (guint64)st->rejected_reports, (guint64)st->rss_start_bytes,
			       st->paused ? "true" : "false", st->credit_permille,
			       st->trust_permille, (guint64)st->agent_uptime_ms,
			       (guint64)st->agent_sz_applied_bytes,
			       (guint64)st->agent_swap_cache_release_bytes,
			       (gint64)st->window.start_us, (guint64)st->window.share_bytes,
			       (guint64)st->window.charged_bytes);
	return g_string_free(s, FALSE);
}

static gboolean invalid(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

static gboolean invalid(GError **error, const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	g_autofree char *msg = g_strdup_vprintf(format, ap);
	va_end(ap);
	g_set_error(error, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_INVALID, "%s", msg);
	return FALSE;
}

/* A UUID as vreclaimd writes it: 8-4-4-4-12 lowercase hex digits. */
static gboolean uuid_valid(const char *s)
{
	if (strlen(s) != 36)
		return FALSE;
	for (int i = 0; i < 36; i++) {
		gboolean dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' :
			   !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return FALSE;
	}
	return TRUE;
}

/* The name: UTF-8 without control characters, at most 200 bytes. */
static gboolean name_valid(const char *s)
{
	if (strlen(s) > 200 || !g_utf8_validate(s, -1, NULL))
		return FALSE;
	for (const char *p = s; *p; p = g_utf8_next_char(p))
		if (g_unichar_iscntrl(g_utf8_get_char(p)))
			return FALSE;
	return TRUE;
}

/* One value: @key_index's @value into @st. */
static gboolean parse_value(struct vr_domain_state *st, enum key_id id, const char *value,
			    GError **error)
{
	const char *name = keys[id].name;
	guint64 u = 0;
	gint64 i = 0;

	switch (keys[id].kind) {
	case KIND_U64:
		if (!g_ascii_string_to_unsigned(value, 10, keys[id].min, keys[id].max, &u, NULL))
			return invalid(error,
				       "%s: '%s' is not a whole number from %" G_GUINT64_FORMAT
				       " to %" G_GUINT64_FORMAT,
				       name, value, (guint64)keys[id].min, (guint64)keys[id].max);
		break;
	case KIND_I64:
		if (!g_ascii_string_to_signed(value, 10, 0, G_MAXINT64, &i, NULL))
			return invalid(error, "%s: '%s' is not a whole number of at least 0", name,
				       value);
		break;
	case KIND_BOOL:
		if (strcmp(value, "true") && strcmp(value, "false"))
			return invalid(error, "%s: '%s' is not true or false", name, value);
		break;
	case KIND_TEXT:
		break;
	}
	switch (id) {
	case KEY_VERSION:
		if (u != VR_DOMAIN_STATE_VERSION)
			return invalid(error,
				       "version %" G_GUINT64_FORMAT " (this vreclaimd reads %d)",
				       (guint64)u, VR_DOMAIN_STATE_VERSION);
		break;
	case KEY_UUID:
		if (!uuid_valid(value))
			return invalid(error, "uuid: '%s' is not a lowercase UUID", value);
		g_strlcpy(st->uuid, value, sizeof(st->uuid));
		break;
	case KEY_NAME:
		if (!name_valid(value))
			return invalid(error, "name: not 0..200 bytes of UTF-8 without control "
					      "characters");
		g_strlcpy(st->name, value, sizeof(st->name));
		break;
	case KEY_QEMU_PID:
		st->qemu.pid = (int32_t)u;
		break;
	case KEY_QEMU_START:
		st->qemu.start_time_us = u;
		break;
	case KEY_RECLAIMED:
		st->reclaimed_bytes = u;
		break;
	case KEY_REJECTED:
		st->rejected_reports = u;
		break;
	case KEY_RSS_START:
		st->rss_start_bytes = u;
		break;
	case KEY_PAUSED:
		st->paused = !strcmp(value, "true");
		break;
	case KEY_CREDIT:
		st->credit_permille = (uint32_t)u;
		break;
	case KEY_TRUST:
		st->trust_permille = (uint32_t)u;
		break;
	case KEY_AGENT_UPTIME:
		st->agent_uptime_ms = u;
		break;
	case KEY_AGENT_SZ_APPLIED:
		st->agent_sz_applied_bytes = u;
		break;
	case KEY_AGENT_SWAP_CACHE:
		st->agent_swap_cache_release_bytes = u;
		break;
	case KEY_WINDOW_START:
		st->window.start_us = i;
		break;
	case KEY_WINDOW_SHARE:
		st->window.share_bytes = u;
		break;
	case KEY_WINDOW_CHARGED:
		st->window.charged_bytes = u;
		break;
	case NR_KEYS:
		break;
	}
	return TRUE;
}

gboolean vr_domain_state_parse(const char *text, gsize len, struct vr_domain_state *out,
			       GError **error)
{
	struct vr_domain_state st = { 0 };
	gboolean seen[NR_KEYS] = { FALSE };
	gboolean in_group = FALSE;
	g_autofree char *copy = NULL;
	g_auto(GStrv) lines = NULL;

	g_return_val_if_fail(text && out, FALSE);

	if (len > VR_DOMAIN_STATE_MAX_BYTES)
		return invalid(error, "%" G_GSIZE_FORMAT " bytes (at most %d)", len,
			       VR_DOMAIN_STATE_MAX_BYTES);
	if (memchr(text, '\0', len))
		return invalid(error, "a NUL byte in the text");
	if (!g_utf8_validate(text, (gssize)len, NULL))
		return invalid(error, "the text is not UTF-8");
	copy = g_strndup(text, len);
	lines = g_strsplit(copy, "\n", -1);
	for (guint n = 0; lines[n]; n++) {
		const char *line = lines[n];
		const char *eq;
		guint id;

		if (!line[0] || line[0] == '#')
			continue;
		if (line[0] == '[') {
			if (in_group || strcmp(line, "[" VR_DOMAIN_STATE_GROUP "]"))
				return invalid(error, "line %u: the group '%s' (expected one [%s])",
					       n + 1, line, VR_DOMAIN_STATE_GROUP);
			in_group = TRUE;
			continue;
		}
		if (!in_group)
			return invalid(error, "line %u: a key before [%s]", n + 1,
				       VR_DOMAIN_STATE_GROUP);
		eq = strchr(line, '=');
		if (!eq)
			return invalid(error, "line %u: no '=' (expected key=value)", n + 1);
		for (id = 0; id < NR_KEYS; id++)
			if (strlen(keys[id].name) == (gsize)(eq - line) &&
			    !strncmp(line, keys[id].name, (gsize)(eq - line)))
				break;
		if (id == NR_KEYS)
			return invalid(error, "line %u: unknown key '%.*s'", n + 1,
				       (int)MIN(eq - line, 64), line);
		if (seen[id])
			return invalid(error, "%s is given twice", keys[id].name);
		seen[id] = TRUE;
		if (!parse_value(&st, id, eq + 1, error))
			return FALSE;
	}
	if (!in_group)
		return invalid(error, "no [%s] group", VR_DOMAIN_STATE_GROUP);
	for (guint id = 0; id < NR_KEYS; id++)
		if (!seen[id])
			return invalid(error, "%s is missing", keys[id].name);
	*out = st;
	return TRUE;
}

enum vr_domain_state_save vr_domain_state_needs_save(const struct vr_domain_state *saved,
						     const struct vr_domain_state *now,
						     int64_t age_us)
{
	if (!saved)
		return VR_DOMAIN_STATE_SAVE_IN_TURN;
	if (saved->paused != now->paused)
		return VR_DOMAIN_STATE_SAVE_NOW;
	if (strcmp(saved->uuid, now->uuid) || strcmp(saved->name, now->name) ||
	    saved->qemu.pid != now->qemu.pid ||
	    saved->qemu.start_time_us != now->qemu.start_time_us ||
	    saved->reclaimed_bytes != now->reclaimed_bytes ||
	    saved->rejected_reports != now->rejected_reports ||
	    saved->rss_start_bytes != now->rss_start_bytes ||
	    saved->credit_permille != now->credit_permille ||
	    saved->trust_permille != now->trust_permille ||
	    saved->agent_sz_applied_bytes != now->agent_sz_applied_bytes ||
	    saved->agent_swap_cache_release_bytes != now->agent_swap_cache_release_bytes ||
	    saved->window.start_us != now->window.start_us ||
	    saved->window.share_bytes != now->window.share_bytes ||
	    saved->window.charged_bytes != now->window.charged_bytes)
		return age_us >= VR_DOMAIN_STATE_SAVE_PERIOD_US ? VR_DOMAIN_STATE_SAVE_IN_TURN :
								  VR_DOMAIN_STATE_SAVE_NO;
	if (saved->agent_uptime_ms != now->agent_uptime_ms &&
	    age_us >= VR_DOMAIN_STATE_UPTIME_PERIOD_US)
		return VR_DOMAIN_STATE_SAVE_IN_TURN;
	return VR_DOMAIN_STATE_SAVE_NO;
}

gboolean vr_domain_state_check(const struct vr_domain_state *st, const char *uuid,
			       const struct vr_qemu_incarnation *qemu, GError **error)
{
	if (strcmp(st->uuid, uuid)) {
		g_set_error(error, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_FOREIGN,
			    "the state is of domain %s, not %s", st->uuid, uuid);
		return FALSE;
	}
	if (st->qemu.pid != qemu->pid || st->qemu.start_time_us != qemu->start_time_us) {
		g_set_error(
			error, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_STALE,
			"the state is of an earlier QEMU process (pid %d started at %" G_GUINT64_FORMAT
			" us after boot; now pid %d started at %" G_GUINT64_FORMAT " us)",
			(int)st->qemu.pid, (guint64)st->qemu.start_time_us, (int)qemu->pid,
			(guint64)qemu->start_time_us);
		return FALSE;
	}
	return TRUE;
}

bool vr_share_window_open(const struct vr_share_window *w, int64_t now_us, uint64_t len_us)
{
	return w->start_us > 0 && w->share_bytes > 0 && now_us >= w->start_us &&
	       (uint64_t)(now_us - w->start_us) < len_us;
}

bool vr_share_window_roll(struct vr_share_window *w, uint64_t share_bytes, int64_t now_us,
			  uint64_t len_us)
{
	if (w->start_us > 0 && now_us >= w->start_us && (uint64_t)(now_us - w->start_us) < len_us) {
		w->share_bytes = MAX(w->share_bytes, share_bytes);
		return false;
	}
	if (!share_bytes)
		return false;
	w->start_us = now_us;
	w->share_bytes = share_bytes;
	w->charged_bytes = 0;
	return true;
}

uint64_t vr_share_window_left(const struct vr_share_window *w, uint64_t share_bytes)
{
	return share_bytes > w->charged_bytes ? share_bytes - w->charged_bytes : 0;
}

void vr_share_window_charge(struct vr_share_window *w, uint64_t bytes)
{
	w->charged_bytes = vr_u64_add_sat(w->charged_bytes, bytes);
}
