/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's configuration file: defaults, a table of keys with their
 * parsers, validation, and the policy folder. See config.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <grp.h>
#include <pwd.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/control.h"

/* clang-format off */
G_DEFINE_QUARK(vr-config-error-quark, vr_config_error)
/* clang-format on */

/* ---- defaults: each with its unit and why ---- */

/* libvirt's system instance: where a host's long-running domains live. */
#define DEFAULT_CONNECT_URI "qemu:///system"
/* Only domains that ask for it: reclaim changes a guest's performance, so an
 * operator turns it on per domain (or says "all"). */
#define DEFAULT_MANAGE	       VR_MANAGE_OPT_IN
#define DEFAULT_POLICY_DIR     "/etc/vreclaim/policies"
#define DEFAULT_STATE_DIR      "/run/vreclaim/state"
#define DEFAULT_CONTROL_SOCKET "/run/vreclaim/vreclaimd.sock"
/* Owner (root) only: the socket changes policies and starts reclaim. */
#define DEFAULT_CONTROL_SOCKET_MODE 0600U
/* 30000 ms: see VR_CONTROL_DEFAULT_IDLE_TIMEOUT_MS (idle clients used to
 * hold every slot). */
#define DEFAULT_CONTROL_IDLE_TIMEOUT_MS VR_CONTROL_DEFAULT_IDLE_TIMEOUT_MS
/* 4: see VR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER (one user leaves room for
 * three others). */
#define DEFAULT_CONTROL_MAX_CLIENTS_PER_USER VR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER
/* 1000 ms: DAMON_RECLAIM's quota window; the agents aggregate every 100 ms,
 * so a tick sees ten fresh pictures' worth of change. */
#define DEFAULT_INTERVAL_MS 1000U
/* 5000 ms: an agent in a busy TCG guest answers within about a second; five
 * leaves room without stalling a tick for long. */
#define DEFAULT_AGENT_TIMEOUT_MS 5000U
/* 60000 ms: retries (doubling from one second) while libvirtd or a guest
 * restarts, at most once a minute after that. */
#define DEFAULT_RECONNECT_MAX_MS 60000U
/* The published DAMON_RECLAIM watermarks (SEMANTICS.md §3), per-mille of
 * free memory: start below 40%, stop above 50%, step aside below 20%. */
#define DEFAULT_WMARK_METRIC VR_WMARK_FREE_MEM_RATE
#define DEFAULT_WMARK_HIGH   500U
#define DEFAULT_WMARK_MID    400U
#define DEFAULT_WMARK_LOW    200U
/* Off: memory pressure overrides the free-memory watermarks only when the
 * operator chooses a threshold. */
#define DEFAULT_PSI_THRESHOLD_BP 0U
/* 256 MiB per window: twice today's kernel DAMON_RECLAIM quota for one guest
 * (128 MiB/s), shared by the whole fleet: page-outs at a bounded rate, whatever
 * the number of guests. */
#define DEFAULT_FLEET_QUOTA_BYTES (256ULL << 20)
/* 1000 ms: DAMON_RECLAIM's reset_interval. */
#define DEFAULT_FLEET_QUOTA_RESET_INTERVAL_MS 1000U
/* 12.5%: a domain whose agent claims reclaim and whose QEMU gives nothing
 * back keeps an eighth of its share. Judged on what the guest claims it
 * reclaimed (not on the whole share, which DAMOS charges whatever a slow
 * guest reclaims) over 30 s and, for a guest that gives back in bursts,
 * 90 s: honest TCG guests in tests/e2e/libvirt-fleet keep full credit. */
#define DEFAULT_FLEET_CREDIT_FLOOR_BP 1250U
/* Decoding an agent's picture of 300 regions costs the daemon ~0.3 ms of
 * CPU (bench/fleet-scale): 50 a tick bound that part to ~1.5% of a CPU at
 * the default interval whatever the fleet's size, and a fleet of up to 50
 * domains has every picture fresh each tick. The fleet's decisions hold
 * each domain's largest picture over at least 30 s
 * (vr_fleet_offer_hold_us()), so one every few ticks loses little. */
#define DEFAULT_FLEET_PICTURES_PER_TICK 50U
#define MAX_FLEET_PICTURES_PER_TICK	100000U
/* The middle: domains without a say neither give first nor last. */
#define DEFAULT_PRIORITY 50U
/* In-guest reclaim only: the guest chooses what to page out and frees it with
 * free page reporting; host-side pageout and the balloon are opt-in. */
#define DEFAULT_ACTIONS ((uint32_t)VR_DOMAIN_ACTIONS_DEFAULT)

/* ---- ranges ---- */

#define MAX_INTERVAL_MS	      (3600U * 1000) /* an hour: anything slower is off */
#define MIN_INTERVAL_MS	      100U	     /* the agents' aggregation interval */
#define MAX_FLEET_QUOTA_BYTES (1ULL << 50)   /* 1 PiB, as the protocol's reclaim bound */
/* A second: vreclaimctl sends its request at once, a script may think. */
#define MIN_CONTROL_IDLE_TIMEOUT_MS 1000U
#define MAX_CONTROL_IDLE_TIMEOUT_MS (24U * 3600 * 1000) /* a day */

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

struct vr_daemon_config *vr_daemon_config_new_default(void)
{
	struct vr_daemon_config *c = g_new0(struct vr_daemon_config, 1);

	c->connect_uri = g_strdup(DEFAULT_CONNECT_URI);
	c->manage = DEFAULT_MANAGE;
	c->policy_dir = g_strdup(DEFAULT_POLICY_DIR);
	c->state_dir = g_strdup(DEFAULT_STATE_DIR);
	c->control_socket = g_strdup(DEFAULT_CONTROL_SOCKET);
	c->control_socket_mode = DEFAULT_CONTROL_SOCKET_MODE;
	c->control_admin_users = g_new0(char *, 1);
	c->control_admin_groups = g_new0(char *, 1);
	c->control_read_only_users = g_new0(char *, 1);
	c->control_read_only_groups = g_new0(char *, 1);
	c->control_idle_timeout_ms = DEFAULT_CONTROL_IDLE_TIMEOUT_MS;
	c->control_max_clients_per_user = DEFAULT_CONTROL_MAX_CLIENTS_PER_USER;
	c->interval_ms = DEFAULT_INTERVAL_MS;
	c->agent_timeout_ms = DEFAULT_AGENT_TIMEOUT_MS;
	c->reconnect_max_ms = DEFAULT_RECONNECT_MAX_MS;
	c->host_wmarks = (struct vr_host_watermarks){
		.metric = DEFAULT_WMARK_METRIC,
		.high = DEFAULT_WMARK_HIGH,
		.mid = DEFAULT_WMARK_MID,
		.low = DEFAULT_WMARK_LOW,
		.psi_some_threshold_bp = DEFAULT_PSI_THRESHOLD_BP,
		.psi_full_threshold_bp = DEFAULT_PSI_THRESHOLD_BP,
	};
	c->host_access_source = VR_HOST_ACCESS_SOURCE_HOST_DAMON;
	c->fleet_quota_bytes = DEFAULT_FLEET_QUOTA_BYTES;
	c->fleet_quota_reset_interval_ms = DEFAULT_FLEET_QUOTA_RESET_INTERVAL_MS;
	c->fleet_credit_floor_bp = DEFAULT_FLEET_CREDIT_FLOOR_BP;
	c->fleet_pictures_per_tick = DEFAULT_FLEET_PICTURES_PER_TICK;
	c->default_priority = DEFAULT_PRIORITY;
	c->default_actions = DEFAULT_ACTIONS;
	return c;
}

void vr_daemon_config_free(struct vr_daemon_config *c)
{
	if (!c)
		return;
	g_free(c->path);
	g_free(c->connect_uri);
	g_free(c->policy_dir);
	g_free(c->state_dir);
	g_free(c->control_socket);
	g_strfreev(c->control_admin_users);
	g_strfreev(c->control_admin_groups);
	g_strfreev(c->control_read_only_users);
	g_strfreev(c->control_read_only_groups);
	g_free(c->metrics_host);
	g_free(c);
}

/* ---- the keys ---- */

enum key_kind {
	KEY_URI,	   /* char *: a libvirt URI */
	KEY_MANAGE,	   /* enum vr_manage_mode */
	KEY_ACCESS_SOURCE, /* enum vr_host_access_source_kind */
	KEY_DIR,	   /* char *: an absolute path */
	KEY_SOCKET,	   /* char *: an absolute path that fits a unix socket address */
	KEY_MODE,	   /* uint32_t: permission bits in octal */
	KEY_LISTEN,	   /* metrics_host + metrics_port */
	KEY_U64,	   /* uint64_t in [min, max] */
	KEY_U32,	   /* uint32_t in [min, max] */
	KEY_WMARK_METRIC,  /* enum vr_wmark_metric */
	KEY_PERCENT,	   /* uint32_t basis points, written as a percentage */
	KEY_SIZE,	   /* uint64_t bytes, written with a binary suffix */
	KEY_ACTIONS,	   /* uint32_t enum vr_domain_action bits */
	KEY_IDS,	   /* char **: user or group names (@unit says which) */
};

/**
 * struct key_desc - one key of the file.
 * @group, @key: where it is.
 * @kind:	 how its value is written.
 * @offset:	 offsetof() the field of struct vr_daemon_config it sets.
 * @min, @max:	 the allowed range of KEY_U64, KEY_U32 and KEY_SIZE values.
 * @unit:	 the unit messages give for numbers; "user" or "group" for
 *		 KEY_IDS.
 */
struct key_desc {
	const char *group;
	const char *key;
	enum key_kind kind;
	size_t offset;
	uint64_t min;
	uint64_t max;
	const char *unit;
};

#define FIELD(f) offsetof(struct vr_daemon_config, f)

static const char *const group_names[] = { "daemon", "host", "fleet" };

static const struct key_desc keys[] = {
	{ "daemon", "connect", KEY_URI, FIELD(connect_uri), 0, 0, NULL },
	{ "daemon", "manage", KEY_MANAGE, FIELD(manage), 0, 0, NULL },
	{ "daemon", "policy-dir", KEY_DIR, FIELD(policy_dir), 0, 0, NULL },
	{ "daemon", "state-dir", KEY_DIR, FIELD(state_dir), 0, 0, NULL },
	{ "daemon", "control-socket", KEY_SOCKET, FIELD(control_socket), 0, 0, NULL },
	{ "daemon", "control-socket-mode", KEY_MODE, FIELD(control_socket_mode), 0, 0, NULL },
	{ "daemon", "control-admin-users", KEY_IDS, FIELD(control_admin_users), 0, 0, "user" },
	{ "daemon", "control-admin-groups", KEY_IDS, FIELD(control_admin_groups), 0, 0, "group" },
	{ "daemon", "control-read-only-users", KEY_IDS, FIELD(control_read_only_users), 0, 0,
	  "user" },
	{ "daemon", "control-read-only-groups", KEY_IDS, FIELD(control_read_only_groups), 0, 0,
	  "group" },
	{ "daemon", "control-idle-timeout-ms", KEY_U64, FIELD(control_idle_timeout_ms),
	  MIN_CONTROL_IDLE_TIMEOUT_MS, MAX_CONTROL_IDLE_TIMEOUT_MS, "ms" },
	{ "daemon", "control-max-clients-per-user", KEY_U32, FIELD(control_max_clients_per_user), 1,
	  VR_CONTROL_MAX_CLIENTS, NULL },
	{ "daemon", "metrics-listen", KEY_LISTEN, 0, 0, 0, NULL },
	{ "daemon", "interval-ms", KEY_U64, FIELD(interval_ms), MIN_INTERVAL_MS, MAX_INTERVAL_MS,
	  "ms" },
	{ "daemon", "agent-timeout-ms", KEY_U64, FIELD(agent_timeout_ms), 100, 600000, "ms" },
	{ "daemon", "reconnect-max-ms", KEY_U64, FIELD(reconnect_max_ms), 1000, MAX_INTERVAL_MS,
	  "ms" },
	{ "host", "watermark-metric", KEY_WMARK_METRIC, FIELD(host_wmarks.metric), 0, 0, NULL },
	{ "host", "watermark-high", KEY_U32, FIELD(host_wmarks.high), 0, VR_HOST_FREE_MEM_RATE_MAX,
	  "per-mille" },
	{ "host", "watermark-mid", KEY_U32, FIELD(host_wmarks.mid), 0, VR_HOST_FREE_MEM_RATE_MAX,
	  "per-mille" },
	{ "host", "watermark-low", KEY_U32, FIELD(host_wmarks.low), 0, VR_HOST_FREE_MEM_RATE_MAX,
	  "per-mille" },
	{ "host", "access-source", KEY_ACCESS_SOURCE, FIELD(host_access_source), 0, 0, NULL },
	{ "host", "psi-some-threshold", KEY_PERCENT, FIELD(host_wmarks.psi_some_threshold_bp), 0, 0,
	  NULL },
	{ "host", "psi-full-threshold", KEY_PERCENT, FIELD(host_wmarks.psi_full_threshold_bp), 0, 0,
	  NULL },
	{ "fleet", "quota-size", KEY_SIZE, FIELD(fleet_quota_bytes), 0, MAX_FLEET_QUOTA_BYTES,
	  NULL },
	{ "fleet", "quota-reset-interval-ms", KEY_U64, FIELD(fleet_quota_reset_interval_ms),
	  MIN_INTERVAL_MS, MAX_INTERVAL_MS, "ms" },
	{ "fleet", "credit-floor", KEY_PERCENT, FIELD(fleet_credit_floor_bp), 0, 0, NULL },
	{ "fleet", "pictures-per-tick", KEY_U32, FIELD(fleet_pictures_per_tick), 1,
	  MAX_FLEET_PICTURES_PER_TICK, NULL },
	{ "fleet", "default-priority", KEY_U32, FIELD(default_priority), 0, 100, NULL },
	{ "fleet", "default-actions", KEY_ACTIONS, FIELD(default_actions), 0, 0, NULL },
};

#define AT(c, k, type)	     ((type *)((char *)(c) + (k)->offset))
#define AT_CONST(c, k, type) ((const type *)((const char *)(c) + (k)->offset))

static const struct key_desc *find_key(const char *group, const char *key)
{
	for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
		if (!strcmp(keys[i].group, group) && !strcmp(keys[i].key, key))
			return &keys[i];
	}
	return NULL;
}

static gboolean known_group(const char *group)
{
	for (guint i = 0; i < G_N_ELEMENTS(group_names); i++) {
		if (!strcmp(group_names[i], group))
			return TRUE;
	}
	return FALSE;
}

/* "a, b and c": the keys of @group, for messages; owned. */
static char *group_keys_text(const char *group)
{
	g_autoptr(GString) s = g_string_new(NULL);

	for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
		if (strcmp(keys[i].group, group))
			continue;
		if (s->len)
			g_string_append(s, ", ");
		g_string_append(s, keys[i].key);
	}
	return g_string_free(g_steal_pointer(&s), FALSE);
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

static gboolean parse_uint(const char *value, const struct key_desc *k, uint64_t *out, char **why)
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

#define PERCENT_EXPECTED                                                                           \
	"expected a share of time in percent from 0 to 100 with at most two decimals, as "         \
	"/proc/pressure/memory prints it (e.g. 10 or 2.5); 0 turns it off"

/* "12.34" -> 1234 basis points. */
static gboolean parse_percent(const char *value, uint32_t *out_bp, char **why)
{
	const char *dot = strchr(value, '.');
	size_t int_len = dot ? (size_t)(dot - value) : strlen(value);
	size_t frac_len = dot ? strlen(dot + 1) : 0;
	uint32_t bp = 0;

	if (int_len == 0 || int_len > 3 || strspn(value, "0123456789") != int_len ||
	    (dot && (frac_len == 0 || frac_len > 2 || strspn(dot + 1, "0123456789") != frac_len))) {
		*why = g_strdup(PERCENT_EXPECTED);
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
		*why = g_strdup(PERCENT_EXPECTED);
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

static gboolean parse_size(const char *value, const struct key_desc *k, uint64_t *out, char **why)
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
static gboolean parse_ids(const char *value, const struct key_desc *k, char ***out, char **why)
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
static gboolean parse_value(struct vr_daemon_config *c, const struct key_desc *k, const char *value,
			    char **why)
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
		return parse_percent(value, AT(c, k, uint32_t), why);
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

static char *format_value(const struct vr_daemon_config *c, const struct key_desc *k)
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

char *vr_daemon_config_to_string(const struct vr_daemon_config *c)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();

	for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
		g_autofree char *value = format_value(c, &keys[i]);

		g_key_file_set_string(kf, keys[i].group, keys[i].key, value);
	}
	return g_key_file_to_data(kf, NULL, NULL);
}

/* ---- parse and validate ---- */

static gboolean set_invalid(GError **error, const char *file, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);

static gboolean set_invalid(GError **error, const char *file, const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, VR_CONFIG_ERROR, VR_CONFIG_ERROR_INVALID, "%s: %s", file, msg);
	return FALSE;
}

/* The checks that involve more than one key. */
static gboolean validate(const struct vr_daemon_config *c, const char *file, GError **error)
{
	const struct vr_host_watermarks *w = &c->host_wmarks;
	g_autoptr(GError) err = NULL;

	if (!(w->high >= w->mid && w->mid >= w->low))
		return set_invalid(
			error, file,
			"[host] watermark-high = %u, watermark-mid = %u, watermark-low = "
			"%u: expected watermark-high >= watermark-mid >= watermark-low "
			"(per-mille of free memory)",
			w->high, w->mid, w->low);
	if (c->fleet_quota_reset_interval_ms < c->interval_ms)
		return set_invalid(error, file,
				   "[fleet] quota-reset-interval-ms = %" G_GUINT64_FORMAT
				   " is shorter than [daemon] interval-ms = %" G_GUINT64_FORMAT
				   ": a quota window must last at least one tick",
				   c->fleet_quota_reset_interval_ms, c->interval_ms);
	if (!vr_host_watermarks_validate(w, &err))
		return set_invalid(error, file, "[host]: %s", err->message);
	return TRUE;
}

/* Applies the keys of @group of @kf to @c. */
static gboolean parse_group(GKeyFile *kf, const char *group, struct vr_daemon_config *c,
			    const char *file, GError **error)
{
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	g_auto(GStrv) names = g_key_file_get_keys(kf, group, NULL, NULL);

	for (char **name = names; name && *name; name++) {
		const struct key_desc *k = find_key(group, *name);
		g_autoptr(GError) err = NULL;
		g_autofree char *value = NULL;
		g_autofree char *why = NULL;

		if (!k) {
			g_autofree char *known = group_keys_text(group);

			return set_invalid(error, file,
					   "[%s] unknown key \"%s\": the keys of [%s] are %s",
					   group, *name, group, known);
		}
		if (!g_hash_table_add(seen, *name))
			return set_invalid(error, file, "[%s] %s is given twice", group, *name);
		/* GLib 2.74 returns a value and sets @err for a bad escape. */
		value = g_key_file_get_string(kf, group, *name, &err);
		if (!value || err) {
			g_autofree char *raw = g_key_file_get_value(kf, group, *name, NULL);

			return set_invalid(error, file, "[%s] %s = \"%s\": %s", group, *name,
					   raw ? raw : "", err ? err->message : "unreadable value");
		}
		g_strchomp(value); /* GKeyFile strips leading blanks, not trailing ones */
		if (!parse_value(c, k, value, &why))
			return set_invalid(error, file, "[%s] %s = \"%s\": %s", group, *name, value,
					   why);
	}
	return TRUE;
}

/*
 * GKeyFile hides "key[locale]" entries from g_key_file_get_keys(), so they
 * would pass unnoticed: refuse them from the text.
 */
static gboolean refuse_locale_keys(const char *text, gsize size, const char *file, GError **error)
{
	g_autofree char *copy = g_strndup(text, size);
	g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
	g_autofree char *group = g_strdup("");

	for (char **line = lines; *line; line++) {
		const char *p = *line + strspn(*line, " \t");
		const char *eq = strchr(p, '=');

		if (*p == '[') {
			g_free(group);
			group = g_strndup(p + 1, strcspn(p + 1, "]"));
		} else if (*p != '#' && eq && memchr(p, '[', (size_t)(eq - p))) {
			g_autofree char *key = g_strndup(p, (gsize)(eq - p));

			return set_invalid(error, file,
					   "[%s] %s: localized keys (key[locale]) are not allowed",
					   group, g_strchomp(key));
		}
	}
	return TRUE;
}

struct vr_daemon_config *vr_daemon_config_parse(const char *text, gssize len, const char *file_name,
						GError **error)
{
	g_autoptr(vr_daemon_config) c = vr_daemon_config_new_default();
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_auto(GStrv) groups = NULL;
	gsize size = len < 0 ? strlen(text) : (gsize)len;

	if (memchr(text, '\0', size)) {
		g_set_error(error, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ,
			    "%s: holds a NUL byte at offset %zu: it is not a text file", file_name,
			    (size_t)((const char *)memchr(text, '\0', size) - text));
		return NULL;
	}
	if (!g_key_file_load_from_data(kf, text, size, G_KEY_FILE_NONE, &err)) {
		g_set_error(error, VR_CONFIG_ERROR, VR_CONFIG_ERROR_SYNTAX, "%s: %s", file_name,
			    err->message);
		return NULL;
	}
	if (!refuse_locale_keys(text, size, file_name, error))
		return NULL;
	groups = g_key_file_get_groups(kf, NULL);
	for (char **group = groups; *group; group++) {
		if (!known_group(*group)) {
			set_invalid(
				error, file_name,
				"unknown group [%s]: the groups are [daemon], [host] and [fleet]",
				*group);
			return NULL;
		}
		if (!parse_group(kf, *group, c, file_name, error))
			return NULL;
	}
	if (!validate(c, file_name, error))
		return NULL;
	c->path = g_strdup(file_name);
	return g_steal_pointer(&c);
}

/* ---- files ---- */

/* Reads all of @fd (at most @max_bytes) into *@text, NUL-terminated. */
static gboolean read_fd(int fd, const char *path, gsize max_bytes, char **text, gsize *len,
			GError **error)
{
	g_autofree char *buf = g_malloc(max_bytes + 2);
	gsize got = 0;

	while (got <= max_bytes) {
		ssize_t n = read(fd, buf + got, max_bytes + 1 - got);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			int e = errno;

			g_set_error(error, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ,
				    "%s: cannot read: %s", path, g_strerror(e));
			return FALSE;
		}
		if (n == 0)
			break;
		got += (gsize)n;
	}
	if (got > max_bytes) {
		g_set_error(error, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ,
			    "%s: larger than the %zu bytes allowed", path, (size_t)max_bytes);
		return FALSE;
	}
	buf[got] = '\0';
	*len = got;
	*text = g_steal_pointer(&buf);
	return TRUE;
}

/* The regular file @path, at most @max_bytes, NUL-terminated in *@text. */
static gboolean read_bounded(const char *path, gsize max_bytes, char **text, gsize *len,
			     GError **error)
{
	/* O_NONBLOCK: opening a FIFO must not hang the daemon; refused below. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	gboolean ok;

	if (fd < 0) {
		int e = errno;

		g_set_error(error, VR_CONFIG_ERROR,
			    e == ENOENT ? VR_CONFIG_ERROR_NOT_FOUND : VR_CONFIG_ERROR_READ,
			    "%s: cannot open: %s", path, g_strerror(e));
		return FALSE;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		g_set_error(error, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ, "%s: not a regular file",
			    path);
		return FALSE;
	}
	ok = read_fd(fd, path, max_bytes, text, len, error);
	close(fd);
	return ok;
}

struct vr_daemon_config *vr_daemon_config_load(const char *path, GError **error)
{
	g_autoptr(vr_daemon_config) c = NULL;
	g_autofree char *text = NULL;
	struct vr_control_rules rules;
	gsize len = 0;

	if (!read_bounded(path, VR_CONFIG_MAX_FILE_BYTES, &text, &len, error))
		return NULL;
	c = vr_daemon_config_parse(text, (gssize)len, path, error);
	if (!c || !vr_daemon_config_control_rules(c, &rules, error))
		return NULL;
	return g_steal_pointer(&c);
}

/* Largest buffer getpwnam_r() and getgrnam_r() get, bytes: a group with
 * thousands of members needs a few hundred KiB. */
#define MAX_NSS_BUFFER_BYTES (4U << 20)

/**
 * lookup_id() - the uid of the user @name (@group FALSE) or the gid of the
 * group @name, or the decimal id @name is. FALSE with *@why (owned) when it
 * does not resolve.
 */
static gboolean lookup_id(const char *name, gboolean group, uint32_t *id, char **why)
{
	gsize size = 16384;
	guint64 v;
	int rc = 0;

	if (g_ascii_string_to_unsigned(name, 10, 0, G_MAXUINT32 - 1, &v, NULL)) {
		*id = (uint32_t)v;
		return TRUE;
	}
	for (;;) {
		g_autofree char *buf = g_malloc(size);

		if (group) {
			struct group gr, *res = NULL;

			rc = getgrnam_r(name, &gr, buf, size, &res);
			if (rc == 0 && res) {
				*id = (uint32_t)gr.gr_gid;
				return TRUE;
			}
		} else {
			struct passwd pw, *res = NULL;

			rc = getpwnam_r(name, &pw, buf, size, &res);
			if (rc == 0 && res) {
				*id = (uint32_t)pw.pw_uid;
				return TRUE;
			}
		}
		if (rc != ERANGE || size >= MAX_NSS_BUFFER_BYTES)
			break;
		size *= 2;
	}
	if (rc == 0 || rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM)
		*why = g_strdup_printf("no %s \"%s\" on this host", group ? "group" : "user", name);
	else
		*why = g_strdup_printf("cannot look up the %s \"%s\": %s", group ? "group" : "user",
				       name, g_strerror(rc));
	return FALSE;
}

gboolean vr_daemon_config_control_rules(const struct vr_daemon_config *c,
					struct vr_control_rules *out, GError **error)
{
	struct vr_control_rules r;
	const struct {
		const char *key;
		char *const *names;
		gboolean group;
		struct vr_control_ids *ids;
	} lists[] = {
		{ "control-admin-users", c->control_admin_users, FALSE, &r.admin_users },
		{ "control-admin-groups", c->control_admin_groups, TRUE, &r.admin_groups },
		{ "control-read-only-users", c->control_read_only_users, FALSE,
		  &r.read_only_users },
		{ "control-read-only-groups", c->control_read_only_groups, TRUE,
		  &r.read_only_groups },
	};

	vr_control_rules_init(&r);
	r.idle_timeout_ms = c->control_idle_timeout_ms;
	r.max_clients_per_user = c->control_max_clients_per_user;
	for (guint i = 0; i < G_N_ELEMENTS(lists); i++) {
		for (char *const *name = lists[i].names; name && *name; name++) {
			g_autofree char *why = NULL;
			uint32_t id;

			if (lists[i].ids->nr >= VR_CONTROL_MAX_IDS)
				return set_invalid(error, c->path ? c->path : "the defaults",
						   "[daemon] %s: more than %d names", lists[i].key,
						   VR_CONTROL_MAX_IDS);
			if (!lookup_id(*name, lists[i].group, &id, &why))
				return set_invalid(error, c->path ? c->path : "the defaults",
						   "[daemon] %s = \"%s\": %s", lists[i].key, *name,
						   why);
			lists[i].ids->id[lists[i].ids->nr++] = id;
		}
	}
	*out = r;
	return TRUE;
}

gboolean vr_daemon_config_reload(struct vr_daemon_config **config, const char *path, GError **error)
{
	g_autoptr(vr_daemon_config) next = NULL;
	const char *from = path ? path : (*config)->path;

	if (!from) {
		g_set_error(error, VR_CONFIG_ERROR, VR_CONFIG_ERROR_NOT_FOUND,
			    "cannot reload: the configuration came from no file");
		return FALSE;
	}
	next = vr_daemon_config_load(from, error);
	if (!next)
		return FALSE;
	vr_daemon_config_free(*config);
	*config = g_steal_pointer(&next);
	return TRUE;
}

gboolean vr_daemon_config_policy_name_validate(const char *name, GError **error)
{
	const char *why = NULL;
	size_t len = strlen(name);

	if (len == 0)
		why = "it is empty";
	else if (len > VR_CONFIG_MAX_POLICY_NAME)
		why = "it is longer than " G_STRINGIFY(VR_CONFIG_MAX_POLICY_NAME) " bytes";
	else if (!g_utf8_validate(name, (gssize)len, NULL))
		why = "it is not UTF-8";
	else if (strchr(name, '/') || strstr(name, ".."))
		why = "it holds '/' or '..': a policy name is a file name in the policy folder";
	else if (name[0] == '.')
		why = "it starts with '.'";
	for (const char *p = name; !why && *p; p++) {
		if (g_ascii_iscntrl(*p))
			why = "it holds a control character";
	}
	if (why) {
		g_autofree char *quoted = g_strescape(name, NULL);

		g_set_error(error, VR_CONFIG_ERROR, VR_CONFIG_ERROR_POLICY_NAME,
			    "policy name \"%s\" is refused: %s", quoted, why);
		return FALSE;
	}
	return TRUE;
}

struct vr_policy *vr_daemon_config_load_policy(const struct vr_daemon_config *c, const char *name,
					       GError **error)
{
	g_autofree char *file = NULL;
	g_autofree char *path = NULL;
	g_autofree char *text = NULL;
	g_autoptr(GError) err = NULL;
	struct vr_policy *policy;
	gsize len = 0;

	if (!vr_daemon_config_policy_name_validate(name, error))
		return NULL;
	file = g_strconcat(name, ".json", NULL);
	path = g_build_filename(c->policy_dir, file, NULL);
	if (!read_bounded(path, VR_CONFIG_MAX_POLICY_BYTES, &text, &len, error))
		return NULL;
	policy = vr_policy_parse(text, (gssize)len, &err);
	if (!policy) {
		g_propagate_prefixed_error(error, g_steal_pointer(&err), "%s: ", path);
		return NULL;
	}
	return policy;
}
