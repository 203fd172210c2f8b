/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's configuration file, one key's value (see config.h): the
 * parsers of each kind of value (URIs, paths, modes, addresses, numbers,
 * percentages, sizes, actions, user and group names) with what they allow
 * for messages, and the writing back of a value. The table of keys, the
 * validation of the whole and the files are config.c.
 */
#define _POSIX_C_SOURCE 200809L

#include "config-private.h"

#include <gio/gio.h>
#include <string.h>
#include <sys/un.h>

#include "control/control.h"

/* ---- the names of enumerated values ---- */

static const char *const manage_names[] = {
	[VR_MANAGE_OPT_IN] = "opt-in",
	[VR_MANAGE_ALL] = "all",
};

const char *vr_manage_mode_name(enum vr_manage_mode mode)
{
	return (guint)mode < G_N_ELEMENTS(manage_names) ? manage_names[mode] : "unknown";
}

static const char *const access_source_names[] = {
	[VR_HOST_ACCESS_SOURCE_NONE] = "none",
	[VR_HOST_ACCESS_SOURCE_HOST_DAMON] = "host-damon",
};

const char *vr_host_access_source_name(enum vr_host_access_source_kind kind)
{
	return (guint)kind < G_N_ELEMENTS(access_source_names) ? access_source_names[kind] :
								 "unknown";
}

/* ---- value parsers: FALSE with *why = what is allowed (owned) ---- */

static gboolean has_control(const char *s, gboolean or_space)
{
	for (; *s; s++) {
		if (g_ascii_iscntrl(*s) || (or_space && g_ascii_isspace(*s)))
			return TRUE;
	}
	return FALSE;
}

static gboolean parse_uri(const char *value, char **out, char **why)
{
	if (!*value || has_control(value, TRUE) || !g_uri_peek_scheme(value) ||
	    !g_uri_is_valid(value, G_URI_FLAGS_NONE, NULL)) {
		*why = g_strdup("expected a libvirt connection URI such as qemu:///system");
		return FALSE;
	}
	g_free(*out);
	*out = g_strdup(value);
	return TRUE;
}

static gboolean parse_manage(const char *value, enum vr_manage_mode *out, char **why)
{
	for (guint i = 0; i < G_N_ELEMENTS(manage_names); i++) {
		if (!strcmp(manage_names[i], value)) {
			*out = (enum vr_manage_mode)i;
			return TRUE;
		}
	}
	*why = g_strdup("expected opt-in (domains whose metadata enables vreclaim) or all");
	return FALSE;
}

static gboolean parse_access_source(const char *value, enum vr_host_access_source_kind *out,
				    char **why)
{
	for (guint i = 0; i < G_N_ELEMENTS(access_source_names); i++) {
		if (!strcmp(access_source_names[i], value)) {
			*out = (enum vr_host_access_source_kind)i;
			return TRUE;
		}
	}
	*why = g_strdup("expected host-damon (the host kernel's DAMON) or none");
	return FALSE;
}

static gboolean parse_path(const char *value, gboolean socket, char **out, char **why)
{
	struct sockaddr_un sa;

	if (!g_path_is_absolute(value) || has_control(value, FALSE)) {
		*why = g_strdup("expected an absolute path");
		return FALSE;
	}
	if (socket && (strlen(value) >= sizeof(sa.sun_path) || g_str_has_suffix(value, "/"))) {
		*why = g_strdup_printf("expected the absolute path of a socket file, at most %zu "
				       "bytes long (a unix socket address limit)",
				       sizeof(sa.sun_path) - 1);
		return FALSE;
	}
	g_free(*out);
	*out = g_strdup(value);
	return TRUE;
}

static gboolean parse_mode(const char *value, uint32_t *out, char **why)
{
	size_t len = strlen(value);
	uint32_t mode = 0;

	if (len == 0 || len > 4 || strspn(value, "01234567") != len) {
		*why = g_strdup("expected permission bits in octal, e.g. 0600 or 0660");
		return FALSE;
	}
	for (const char *p = value; *p; p++)
		mode = mode * 8 + (uint32_t)(*p - '0');
	if (mode > 0777) {
		*why = g_strdup("expected permission bits in octal, at most 0777 (no setuid, "
				"setgid or sticky bit)");
		return FALSE;
	}
	if (mode & 0007) {
		*why = g_strdup("the socket controls vreclaimd: allowed are modes with no bits for "
				"others, e.g. 0600 or 0660");
		return FALSE;
	}
	*out = mode;
	return TRUE;
}

#define LISTEN_EXPECTED                                                                            \
	"expected nothing (off), 127.0.0.1:PORT or [::1]:PORT with PORT from 1 to 65535: the "     \
	"metrics endpoint listens on loopback only"

static gboolean parse_listen(const char *value, struct vr_daemon_config *c, char **why)
{
	g_autofree char *host = NULL;
	g_autoptr(GInetAddress) addr = NULL;
	const char *port_text;
	guint64 port;

	if (!*value) {
		g_clear_pointer(&c->metrics_host, g_free);
		c->metrics_port = 0;
		return TRUE;
	}
	if (value[0] == '[') {
		const char *close = strstr(value, "]:");

		if (!close) {
			*why = g_strdup(LISTEN_EXPECTED);
			return FALSE;
		}
		host = g_strndup(value + 1, (gsize)(close - value - 1));
		port_text = close + 2;
	} else {
		const char *colon = strchr(value, ':');

		if (!colon) {
			*why = g_strdup(LISTEN_EXPECTED);
			return FALSE;
		}
		host = g_strndup(value, (gsize)(colon - value));
		port_text = colon + 1;
	}
	addr = g_inet_address_new_from_string(host);
	/* An IPv6 address must come in brackets, an IPv4 one without. */
	if (!addr ||
	    (g_inet_address_get_family(addr) == G_SOCKET_FAMILY_IPV6) != (value[0] == '[') ||
	    !g_ascii_string_to_unsigned(port_text, 10, 1, 65535, &port, NULL)) {
		*why = g_strdup(LISTEN_EXPECTED);
		return FALSE;
	}
	if (!g_inet_address_get_is_loopback(addr)) {
		*why = g_strdup_printf("%s is not a loopback address: the metrics endpoint has no "
				       "authentication, so it listens on loopback only "
				       "(127.0.0.1:PORT or [::1]:PORT)",
				       host);
		return FALSE;
	}
	g_free(c->metrics_host);
	c->metrics_host = g_inet_address_to_string(addr);
	c->metrics_port = (uint16_t)port;
	return TRUE;
}

static gboolean parse_uint(const char *value, const struct vr_config_key *k, uint64_t *out,
			   char **why)
{
	guint64 v;

	if (!g_ascii_string_to_unsigned(value, 10, k->min, k->max, &v, NULL)) {
		*why = g_strdup_printf("expected an integer from %" G_GUINT64_FORMAT
				       " to %" G_GUINT64_FORMAT "%s%s",
				       k->min, k->max, k->unit ? " " : "", k->unit ? k->unit : "");
		return FALSE;
	}
	*out = v;
	return TRUE;
}

static gboolean parse_wmark_metric(const char *value, enum vr_wmark_metric *out, char **why)
{
	if (!vr_wmark_metric_from_name(value, out)) {
		*why = g_strdup("expected none (the host always needs memory) or free_mem_rate");
		return FALSE;
	}
	return TRUE;
}

/* What a KEY_PERCENT value must be; @k's unit says what it is a share of. */
static char *percent_expected(const struct vr_config_key *k)
{
	return g_strdup_printf("expected %s in percent from 0 to 100 with at most two decimals",
			       k->unit);
}

/* "12.34" -> 1234 basis points. */
static gboolean parse_percent(const char *value, const struct vr_config_key *k, uint32_t *out_bp,
			      char **why)
{
	const char *dot = strchr(value, '.');
	size_t int_len = dot ? (size_t)(dot - value) : strlen(value);
	size_t frac_len = dot ? strlen(dot + 1) : 0;
	uint32_t bp = 0;

	if (int_len == 0 || int_len > 3 || strspn(value, "0123456789") != int_len ||
	    (dot && (frac_len == 0 || frac_len > 2 || strspn(dot + 1, "0123456789") != frac_len))) {
		*why = percent_expected(k);
		return FALSE;
	}
	for (size_t i = 0; i < int_len; i++)
		bp = bp * 10 + (uint32_t)(value[i] - '0');
	bp *= 100;
	if (frac_len >= 1)
		bp += (uint32_t)(dot[1] - '0') * 10;
	if (frac_len == 2)
		bp += (uint32_t)(dot[2] - '0');
	if (bp > VR_HOST_PSI_BP_MAX) {
		*why = percent_expected(k);
		return FALSE;
	}
	*out_bp = bp;
	return TRUE;
}

static const struct {
	const char *suffix;
	guint shift;
} size_suffixes[] = {
	{ "", 0 },     { "B", 0 },  { "K", 10 },   { "KiB", 10 }, { "M", 20 },
	{ "MiB", 20 }, { "G", 30 }, { "GiB", 30 }, { "T", 40 },	  { "TiB", 40 },
};

#define SIZE_EXPECTED                                                                              \
	"expected a size: an integer of bytes with an optional suffix KiB, MiB, GiB or TiB (K, "   \
	"M, G, T: powers of 1024), e.g. 256MiB, from 0 (no limit) to 1 PiB"

static gboolean parse_size(const char *value, const struct vr_config_key *k, uint64_t *out,
			   char **why)
{
	size_t digits = strspn(value, "0123456789");
	g_autofree char *number = g_strndup(value, digits);
	const char *suffix = value + digits;
	guint64 v;

	while (*suffix == ' ')
		suffix++;
	if (!g_ascii_strcasecmp(suffix, "KB") || !g_ascii_strcasecmp(suffix, "MB") ||
	    !g_ascii_strcasecmp(suffix, "GB") || !g_ascii_strcasecmp(suffix, "TB")) {
		*why = g_strdup_printf("%s is ambiguous (1000 or 1024?): write KiB, MiB, GiB or "
				       "TiB (powers of 1024)",
				       suffix);
		return FALSE;
	}
	if (!digits || !g_ascii_string_to_unsigned(number, 10, 0, G_MAXUINT64, &v, NULL)) {
		*why = g_strdup(SIZE_EXPECTED);
		return FALSE;
	}
	for (guint i = 0; i < G_N_ELEMENTS(size_suffixes); i++) {
		guint shift = size_suffixes[i].shift;

		if (strcmp(suffix, size_suffixes[i].suffix))
			continue;
		if (v > k->max >> shift) {
			*why = g_strdup(SIZE_EXPECTED);
			return FALSE;
		}
		*out = v << shift;
		return TRUE;
	}
	*why = g_strdup(SIZE_EXPECTED);
	return FALSE;
}

static gboolean parse_actions(const char *value, uint32_t *out, char **why)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *trimmed = g_strstrip(g_strdup(value));
	guint set = 0;

	if (!strcmp(trimmed, "none")) {
		*out = 0;
		return TRUE;
	}
	g_auto(GStrv) items = g_strsplit(trimmed, ",", -1);
	for (char **item = items; *item; item++) {
		if (!*g_strstrip(*item)) {
			*why = g_strdup("an empty item in the list: expected none, or names of "
					"agent-reclaim, host-pageout, balloon separated by commas");
			return FALSE;
		}
	}
	if (!vr_domain_actions_parse("the list", trimmed, ", ", &set, &error)) {
		*why = g_strdup_printf("%s; or none", error->message);
		return FALSE;
	}
	*out = set;
	return TRUE;
}

/*
 * A name of a user or group as useradd and groupadd take them (letters,
 * digits, '.', '_', '-', not first, and a final '$' for machine accounts),
 * or a decimal id below 4294967295 ((uid_t)-1 means "none").
 */
static gboolean id_name_ok(const char *name)
{
	size_t len = strlen(name);
	guint64 id;

	if (len && strspn(name, "0123456789") == len)
		return g_ascii_string_to_unsigned(name, 10, 0, G_MAXUINT32 - 1, &id, NULL);
	if (len == 0 || len > VR_CONFIG_MAX_ID_NAME || name[0] == '-')
		return FALSE;
	if (name[len - 1] == '$')
		len--;
	for (size_t i = 0; i < len; i++) {
		if (!g_ascii_isalnum(name[i]) && !strchr("._-", name[i]))
			return FALSE;
	}
	return len > 0;
}

/* "alice, bob" -> { "alice", "bob" }; "" -> {}. @k->unit is "user" or "group". */
static gboolean parse_ids(const char *value, const struct vr_config_key *k, char ***out, char **why)
{
	g_autofree char *trimmed = g_strstrip(g_strdup(value));
	g_auto(GStrv) items = NULL;
	guint n = 0;

	if (!*trimmed) {
		g_strfreev(*out);
		*out = g_new0(char *, 1);
		return TRUE;
	}
	items = g_strsplit(trimmed, ",", -1);
	for (char **item = items; *item; item++, n++) {
		g_strstrip(*item);
		if (!**item) {
			*why = g_strdup_printf("an empty item in the list: expected %s names (or "
					       "ids) separated by commas, or nothing",
					       k->unit);
			return FALSE;
		}
		if (!id_name_ok(*item)) {
			*why = g_strdup_printf(
				"\"%s\" is not a %s name: expected letters, digits, '.', '_' or "
				"'-' (not first), at most %d bytes, or a numeric id",
				*item, k->unit, VR_CONFIG_MAX_ID_NAME);
			return FALSE;
		}
		for (char **before = items; before < item; before++) {
			if (!strcmp(*before, *item)) {
				*why = g_strdup_printf("%s \"%s\" is listed twice", k->unit, *item);
				return FALSE;
			}
		}
	}
	if (n > VR_CONTROL_MAX_IDS) {
		*why = g_strdup_printf("%u %ss listed: at most %d", n, k->unit, VR_CONTROL_MAX_IDS);
		return FALSE;
	}
	g_strfreev(*out);
	*out = g_steal_pointer(&items);
	return TRUE;
}

/* Sets the field of @k in @c from @value; FALSE with *why on a bad value. */
gboolean vr_config_value_parse(struct vr_daemon_config *c, const struct vr_config_key *k,
			       const char *value, char **why)
{
	uint64_t v = 0;

	switch (k->kind) {
	case KEY_URI:
		return parse_uri(value, AT(c, k, char *), why);
	case KEY_MANAGE:
		return parse_manage(value, AT(c, k, enum vr_manage_mode), why);
	case KEY_ACCESS_SOURCE:
		return parse_access_source(value, AT(c, k, enum vr_host_access_source_kind), why);
	case KEY_DIR:
		return parse_path(value, FALSE, AT(c, k, char *), why);
	case KEY_SOCKET:
		return parse_path(value, TRUE, AT(c, k, char *), why);
	case KEY_MODE:
		return parse_mode(value, AT(c, k, uint32_t), why);
	case KEY_LISTEN:
		return parse_listen(value, c, why);
	case KEY_U64:
		return parse_uint(value, k, AT(c, k, uint64_t), why);
	case KEY_U32:
		if (!parse_uint(value, k, &v, why))
			return FALSE;
		*AT(c, k, uint32_t) = (uint32_t)v;
		return TRUE;
	case KEY_WMARK_METRIC:
		return parse_wmark_metric(value, AT(c, k, enum vr_wmark_metric), why);
	case KEY_PERCENT:
		return parse_percent(value, k, AT(c, k, uint32_t), why);
	case KEY_SIZE:
		return parse_size(value, k, AT(c, k, uint64_t), why);
	case KEY_ACTIONS:
		return parse_actions(value, AT(c, k, uint32_t), why);
	case KEY_IDS:
		return parse_ids(value, k, AT(c, k, char **), why);
	}
	*why = g_strdup("unknown kind of key");
	return FALSE;
}

/* ---- formatting (vr_daemon_config_to_string()) ---- */

static char *format_size(uint64_t bytes)
{
	static const char *const suffixes[] = { "TiB", "GiB", "MiB", "KiB" };
	static const guint shifts[] = { 40, 30, 20, 10 };

	for (guint i = 0; bytes && i < G_N_ELEMENTS(suffixes); i++) {
		if (!(bytes & ((1ULL << shifts[i]) - 1)))
			return g_strdup_printf("%" G_GUINT64_FORMAT "%s", bytes >> shifts[i],
					       suffixes[i]);
	}
	return g_strdup_printf("%" G_GUINT64_FORMAT, bytes);
}

static char *format_percent(uint32_t bp)
{
	if (bp % 100 == 0)
		return g_strdup_printf("%u", bp / 100);
	if (bp % 10 == 0)
		return g_strdup_printf("%u.%u", bp / 100, bp % 100 / 10);
	return g_strdup_printf("%u.%02u", bp / 100, bp % 100);
}

static char *format_actions(uint32_t set)
{
	g_autofree char *names = vr_domain_actions_to_string(set);

	if (!*names)
		return g_strdup("none");
	return g_strdelimit(g_steal_pointer(&names), " ", ',');
}

char *vr_config_value_format(const struct vr_daemon_config *c, const struct vr_config_key *k)
{
	switch (k->kind) {
	case KEY_URI:
	case KEY_DIR:
	case KEY_SOCKET:
		return g_strdup(*AT_CONST(c, k, char *));
	case KEY_MANAGE:
		return g_strdup(vr_manage_mode_name(*AT_CONST(c, k, enum vr_manage_mode)));
	case KEY_ACCESS_SOURCE:
		return g_strdup(vr_host_access_source_name(
			*AT_CONST(c, k, enum vr_host_access_source_kind)));
	case KEY_MODE:
		return g_strdup_printf("%04o", *AT_CONST(c, k, uint32_t));
	case KEY_LISTEN:
		if (!c->metrics_host)
			return g_strdup("");
		return strchr(c->metrics_host, ':') ?
			       g_strdup_printf("[%s]:%u", c->metrics_host, c->metrics_port) :
			       g_strdup_printf("%s:%u", c->metrics_host, c->metrics_port);
	case KEY_U64:
		return g_strdup_printf("%" G_GUINT64_FORMAT, *AT_CONST(c, k, uint64_t));
	case KEY_U32:
		return g_strdup_printf("%u", *AT_CONST(c, k, uint32_t));
	case KEY_WMARK_METRIC:
		return g_strdup(vr_wmark_metric_name(*AT_CONST(c, k, enum vr_wmark_metric)));
	case KEY_PERCENT:
		return format_percent(*AT_CONST(c, k, uint32_t));
	case KEY_SIZE:
		return format_size(*AT_CONST(c, k, uint64_t));
	case KEY_ACTIONS:
		return format_actions(*AT_CONST(c, k, uint32_t));
	case KEY_IDS:
		return g_strjoinv(",", (char **)*AT_CONST(c, k, char **));
	}
	return g_strdup("");
}
