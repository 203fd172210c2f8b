/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's configuration file: defaults, the table of keys, validation,
 * the files and the policy folder (see config.h). Each kind of value's
 * parser and writer is config-value.c.
 */
#define _POSIX_C_SOURCE 200809L

#include "config-private.h"

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
/* 60000 ms: retries (doubling from half a second) while libvirtd restarts,
 * at most once a minute after that. */
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

/* What a PSI threshold is a share of, for the message of a bad one. */
#define PSI_THRESHOLD_SHARE                                                                        \
	"a share of time, as /proc/pressure/memory prints it (e.g. 10 or 2.5; 0 turns it off)"

#define FIELD(f) offsetof(struct vr_daemon_config, f)

static const char *const group_names[] = { "daemon", "host", "fleet" };

static const struct vr_config_key keys[] = {
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
	  PSI_THRESHOLD_SHARE },
	{ "host", "psi-full-threshold", KEY_PERCENT, FIELD(host_wmarks.psi_full_threshold_bp), 0, 0,
	  PSI_THRESHOLD_SHARE },
	{ "fleet", "quota-size", KEY_SIZE, FIELD(fleet_quota_bytes), 0, MAX_FLEET_QUOTA_BYTES,
	  NULL },
	{ "fleet", "quota-reset-interval-ms", KEY_U64, FIELD(fleet_quota_reset_interval_ms),
	  MIN_INTERVAL_MS, MAX_INTERVAL_MS, "ms" },
	{ "fleet", "credit-floor", KEY_PERCENT, FIELD(fleet_credit_floor_bp), 0, 0,
	  "the least share of its quota a domain keeps (e.g. 12.5; 100 turns the credit's cut "
	  "off)" },
	{ "fleet", "pictures-per-tick", KEY_U32, FIELD(fleet_pictures_per_tick), 1,
	  MAX_FLEET_PICTURES_PER_TICK, NULL },
	{ "fleet", "default-priority", KEY_U32, FIELD(default_priority), 0, 100, NULL },
	{ "fleet", "default-actions", KEY_ACTIONS, FIELD(default_actions), 0, 0, NULL },
};

static const struct vr_config_key *find_key(const char *group, const char *key)
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

char *vr_daemon_config_to_string(const struct vr_daemon_config *c)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();

	for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
		g_autofree char *value = vr_config_value_format(c, &keys[i]);

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
		const struct vr_config_key *k = find_key(group, *name);
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
		if (!vr_config_value_parse(c, k, value, &why))
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
