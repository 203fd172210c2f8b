/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of vreclaimd's configuration (hostd/config.c): the defaults,
 * every key with values it takes and values it refuses (tables), unknown
 * groups and keys, keys that contradict each other, files (missing, not
 * regular, too large), the atomic reload, the policy folder, and the example
 * config data/vreclaimd.conf (VR_EXAMPLE_CONFIG, set by meson).
 *
 * Files live in a temporary folder made by the suite's .init and removed by
 * its .fini. Parameter structs hold no pointers.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "control/control.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define MIB (1ULL << 20)

/* How messages call the texts parsed in memory. */
#define FILE_NAME "test.conf"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------- */

static struct vr_daemon_config *parse_ok(const char *text)
{
	g_autoptr(GError) err = NULL;
	struct vr_daemon_config *c = vr_daemon_config_parse(text, -1, FILE_NAME, &err);

	cr_assert_not_null(c, "the config should parse: %s\n---\n%s---", err ? err->message : "?",
			   text);
	return c;
}

/* Parses @text expecting VR_CONFIG_ERROR @code; returns the error. */
static GError *parse_fails(const char *text, int code)
{
	GError *err = NULL;
	g_autoptr(vr_daemon_config) c = vr_daemon_config_parse(text, -1, FILE_NAME, &err);

	cr_assert_null(c, "the config should be refused:\n---\n%s---", text);
	cr_assert(g_error_matches(err, VR_CONFIG_ERROR, code),
		  "expected VR_CONFIG_ERROR code %d, got %s (%s)", code,
		  g_quark_to_string(err->domain), err->message);
	cr_assert(g_str_has_prefix(err->message, FILE_NAME ": "),
		  "the message should start with the file's name: %s", err->message);
	return err;
}

/* The value @c has for @group/@key, as vr_daemon_config_to_string() writes it. */
static char *effective(const struct vr_daemon_config *c, const char *group, const char *key)
{
	g_autofree char *text = vr_daemon_config_to_string(c);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	char *value;

	cr_assert(g_key_file_load_from_data(kf, text, (gsize)-1, G_KEY_FILE_NONE, &err),
		  "to_string should write a key file: %s", err ? err->message : "?");
	value = g_key_file_get_string(kf, group, key, &err);
	cr_assert_not_null(value, "to_string should write [%s] %s: %s", group, key,
			   err ? err->message : "?");
	return value;
}

static void assert_same_config(const struct vr_daemon_config *a, const struct vr_daemon_config *b,
			       const char *what)
{
	g_autofree char *ta = vr_daemon_config_to_string(a);
	g_autofree char *tb = vr_daemon_config_to_string(b);

	cr_assert_str_eq(ta, tb, "%s: the configs should be equal", what);
}

/* The suite's temporary folder. */
static char *root;

static void files_init(void)
{
	root = tree_new();
}

static void files_fini(void)
{
	tree_rm(root);
	g_clear_pointer(&root, g_free);
}

/* ------------------------------------------------------------------------- */
/* Defaults                                                                  */
/* ------------------------------------------------------------------------- */

TestSuite(config_defaults, .description = "the built-in defaults");

Test(config_defaults, values)
{
	g_autoptr(vr_daemon_config) c = vr_daemon_config_new_default();

	cr_assert_null(c->path, "the defaults come from no file");
	cr_assert_str_eq(c->connect_uri, "qemu:///system");
	cr_assert_eq(c->manage, VR_MANAGE_OPT_IN, "only opted-in domains by default");
	cr_assert_str_eq(c->policy_dir, "/etc/vreclaim/policies");
	cr_assert_str_eq(c->state_dir, "/run/vreclaim/state");
	cr_assert_str_eq(c->control_socket, "/run/vreclaim/vreclaimd.sock");
	cr_assert_eq(c->control_socket_mode, 0600, "owner-only socket, got %o",
		     c->control_socket_mode);
	cr_assert(c->metrics_host == NULL && c->metrics_port == 0, "metrics are off by default");
	cr_assert_eq(c->interval_ms, 1000, "one tick a second");
	cr_assert_eq(c->agent_timeout_ms, 5000);
	cr_assert_eq(c->reconnect_max_ms, 60000);
	cr_assert(c->host_wmarks.metric == VR_WMARK_FREE_MEM_RATE && c->host_wmarks.high == 500 &&
			  c->host_wmarks.mid == 400 && c->host_wmarks.low == 200,
		  "DAMON_RECLAIM's watermarks free_mem_rate 500/400/200");
	cr_assert(c->host_wmarks.psi_some_threshold_bp == 0 &&
			  c->host_wmarks.psi_full_threshold_bp == 0,
		  "the PSI override is off by default");
	cr_assert_eq(c->fleet_quota_bytes, 256 * MIB, "256 MiB per window");
	cr_assert_eq(c->fleet_quota_reset_interval_ms, 1000);
	cr_assert_eq(c->default_priority, 50);
	cr_assert_eq(c->fleet_credit_floor_bp, 1250,
		     "the fleet credit cuts a share to an eighth by default");
	cr_assert_eq(c->fleet_pictures_per_tick, 50, "50 pictures a tick");
	cr_assert_eq(c->default_actions, VR_DOMAIN_ACTION_AGENT_RECLAIM,
		     "in-guest reclaim only by default");
	cr_assert(vr_host_watermarks_validate(&c->host_wmarks, NULL), "default watermarks valid");
}

Test(config_defaults, empty_and_comment_only_files_are_the_defaults)
{
	g_autoptr(vr_daemon_config) def = vr_daemon_config_new_default();
	g_autoptr(vr_daemon_config) empty = parse_ok("");
	g_autoptr(vr_daemon_config) comments = parse_ok(
		"# nothing here\n\n[daemon]\n# connect = test:///default\n[host]\n[fleet]\n");

	assert_same_config(def, empty, "an empty file");
	assert_same_config(def, comments, "comments and empty groups");
	cr_assert_str_eq(empty->path, FILE_NAME, "a parsed config remembers its file");
}

/* ------------------------------------------------------------------------- */
/* Every key: values taken                                                   */
/* ------------------------------------------------------------------------- */

TestSuite(config_keys, .description = "every key of the file");

/* Each row: a key, a value, and how to_string() writes it back. */
struct valid_case {
	char group[8];
	char key[32];
	char value[64];
	char expect[64];
};

static struct valid_case valid_cases[] = {
	{ "daemon", "connect", "qemu:///system", "qemu:///system" },
	{ "daemon", "connect", "test:///default", "test:///default" },
	{ "daemon", "connect", "qemu+ssh://root@host.example/system",
	  "qemu+ssh://root@host.example/system" },
	{ "daemon", "manage", "all", "all" },
	{ "daemon", "manage", "opt-in", "opt-in" },
	{ "daemon", "manage", "all   ", "all" },
	{ "daemon", "policy-dir", "/var/lib/vreclaim/policies", "/var/lib/vreclaim/policies" },
	{ "daemon", "policy-dir", "/srv/vreclaim policies", "/srv/vreclaim policies" },
	{ "daemon", "state-dir", "/srv/vreclaim/state", "/srv/vreclaim/state" },
	{ "daemon", "control-socket", "/run/vr.sock", "/run/vr.sock" },
	{ "daemon", "control-socket-mode", "0660", "0660" },
	{ "daemon", "control-socket-mode", "600", "0600" },
	{ "daemon", "control-socket-mode", "0", "0000" },
	{ "daemon", "control-admin-users", "root", "root" },
	{ "daemon", "control-admin-users", "alice, bob", "alice,bob" },
	{ "daemon", "control-admin-users", "", "" },
	{ "daemon", "control-admin-users", "0,1000", "0,1000" },
	{ "daemon", "control-admin-groups", "wheel", "wheel" },
	{ "daemon", "control-read-only-users", "svc-monitor$,prom.export_1",
	  "svc-monitor$,prom.export_1" },
	{ "daemon", "control-read-only-groups", " monitoring , adm ", "monitoring,adm" },
	{ "daemon", "control-idle-timeout-ms", "1000", "1000" },
	{ "daemon", "control-idle-timeout-ms", "86400000", "86400000" },
	{ "daemon", "control-max-clients-per-user", "1", "1" },
	{ "daemon", "control-max-clients-per-user", "16", "16" },
	{ "daemon", "metrics-listen", "127.0.0.1:9100", "127.0.0.1:9100" },
	{ "daemon", "metrics-listen", "[::1]:9100", "[::1]:9100" },
	{ "daemon", "metrics-listen", "127.0.0.2:1", "127.0.0.2:1" },
	{ "daemon", "metrics-listen", "[::1]:65535", "[::1]:65535" },
	{ "daemon", "metrics-listen", "", "" },
	{ "daemon", "interval-ms", "100", "100" },
	{ "daemon", "interval-ms", "1000", "1000" },
	{ "daemon", "agent-timeout-ms", "100", "100" },
	{ "daemon", "agent-timeout-ms", "600000", "600000" },
	{ "daemon", "reconnect-max-ms", "1000", "1000" },
	{ "daemon", "reconnect-max-ms", "3600000", "3600000" },
	{ "host", "watermark-metric", "none", "none" },
	{ "host", "watermark-metric", "free_mem_rate", "free_mem_rate" },
	{ "host", "watermark-high", "1000", "1000" },
	{ "host", "watermark-high", "400", "400" },
	{ "host", "watermark-mid", "450", "450" },
	{ "host", "watermark-mid", "200", "200" },
	{ "host", "watermark-low", "0", "0" },
	{ "host", "watermark-low", "400", "400" },
	{ "host", "psi-some-threshold", "10", "10" },
	{ "host", "psi-some-threshold", "2.5", "2.5" },
	{ "host", "psi-some-threshold", "0.25", "0.25" },
	{ "host", "psi-some-threshold", "12.30", "12.3" },
	{ "host", "psi-some-threshold", "100", "100" },
	{ "host", "psi-some-threshold", "0", "0" },
	{ "host", "psi-full-threshold", "5", "5" },
	{ "host", "psi-full-threshold", "0.01", "0.01" },
	{ "fleet", "credit-floor", "12.5", "12.5" },
	{ "fleet", "pictures-per-tick", "1", "1" },
	{ "fleet", "pictures-per-tick", "100000", "100000" },
	{ "fleet", "credit-floor", "100", "100" },
	{ "fleet", "quota-size", "256MiB", "256MiB" },
	{ "fleet", "quota-size", "1G", "1GiB" },
	{ "fleet", "quota-size", "4096 KiB", "4MiB" },
	{ "fleet", "quota-size", "1048576", "1MiB" },
	{ "fleet", "quota-size", "1000", "1000" },
	{ "fleet", "quota-size", "1536K", "1536KiB" },
	{ "fleet", "quota-size", "0", "0" },
	{ "fleet", "quota-size", "1024TiB", "1024TiB" },
	{ "fleet", "quota-reset-interval-ms", "1000", "1000" },
	{ "fleet", "quota-reset-interval-ms", "60000", "60000" },
	{ "fleet", "default-priority", "0", "0" },
	{ "fleet", "default-priority", "100", "100" },
	{ "fleet", "default-actions", "agent-reclaim", "agent-reclaim" },
	{ "fleet", "default-actions", "host-pageout, agent-reclaim", "agent-reclaim,host-pageout" },
	{ "fleet", "default-actions", "balloon,host-pageout,agent-reclaim",
	  "agent-reclaim,host-pageout,balloon" },
	{ "fleet", "default-actions", "none", "none" },
};

ParameterizedTestParameters(config_keys, valid)
{
	return cr_make_param_array(struct valid_case, valid_cases, G_N_ELEMENTS(valid_cases));
}

ParameterizedTest(struct valid_case *c, config_keys, valid)
{
	g_autofree char *text = g_strdup_printf("[%s]\n%s = %s\n", c->group, c->key, c->value);
	g_autoptr(vr_daemon_config) config = parse_ok(text);
	g_autofree char *got = effective(config, c->group, c->key);
	g_autoptr(vr_daemon_config) again = NULL;
	g_autofree char *written = vr_daemon_config_to_string(config);

	cr_assert_str_eq(got, c->expect, "[%s] %s = \"%s\" should read back as \"%s\", got \"%s\"",
			 c->group, c->key, c->value, c->expect, got);
	again = parse_ok(written);
	assert_same_config(config, again, "written and read back");
}

Test(config_keys, fields)
{
	g_autoptr(vr_daemon_config) c = parse_ok("[daemon]\n"
						 "connect = test:///default\n"
						 "manage = all\n"
						 "control-socket-mode = 0640\n"
						 "metrics-listen = [::1]:9100\n"
						 "interval-ms = 500\n"
						 "[host]\n"
						 "watermark-metric = none\n"
						 "psi-some-threshold = 12.34\n"
						 "psi-full-threshold = 0.5\n"
						 "[fleet]\n"
						 "quota-size = 1GiB\n"
						 "quota-reset-interval-ms = 2000\n"
						 "default-priority = 70\n"
						 "default-actions = host-pageout, balloon\n");

	cr_assert_str_eq(c->connect_uri, "test:///default");
	cr_assert_eq(c->manage, VR_MANAGE_ALL);
	cr_assert_eq(c->control_socket_mode, 0640, "expected 0640, got %o", c->control_socket_mode);
	cr_assert(c->metrics_host && !strcmp(c->metrics_host, "::1") && c->metrics_port == 9100,
		  "expected ::1 port 9100");
	cr_assert_eq(c->interval_ms, 500);
	cr_assert_eq(c->host_wmarks.metric, VR_WMARK_NONE);
	cr_assert_eq(c->host_wmarks.psi_some_threshold_bp, 1234, "12.34%% is 1234 bp, got %u",
		     c->host_wmarks.psi_some_threshold_bp);
	cr_assert_eq(c->host_wmarks.psi_full_threshold_bp, 50, "0.5%% is 50 bp, got %u",
		     c->host_wmarks.psi_full_threshold_bp);
	cr_assert_eq(c->fleet_quota_bytes, 1ULL << 30, "1GiB in bytes");
	cr_assert_eq(c->fleet_quota_reset_interval_ms, 2000);
	cr_assert_eq(c->default_priority, 70);
	cr_assert_eq(c->default_actions, VR_DOMAIN_ACTION_HOST_PAGEOUT | VR_DOMAIN_ACTION_BALLOON,
		     "host-pageout and balloon, got %#x", c->default_actions);
}

/* ------------------------------------------------------------------------- */
/* Every key: values refused                                                 */
/* ------------------------------------------------------------------------- */

/* Each row: a key, a bad value, and words the message must hold besides the
 * file, group, key and value. */
struct invalid_case {
	char group[8];
	char key[32];
	char value[136];
	char words[48]; /* '|'-separated alternatives, case-insensitive */
};

static struct invalid_case invalid_cases[] = {
	{ "daemon", "connect", "", "URI" },
	{ "daemon", "connect", "system", "URI" },
	{ "daemon", "connect", "qemu:///system extra", "URI" },
	{ "daemon", "manage", "some", "opt-in" },
	{ "daemon", "manage", "ALL", "opt-in" },
	{ "daemon", "policy-dir", "policies", "absolute" },
	{ "daemon", "policy-dir", "", "absolute" },
	{ "daemon", "state-dir", "state", "absolute" },
	{ "daemon", "control-socket", "vreclaimd.sock", "absolute" },
	{ "daemon", "control-socket", "/run/vreclaim/", "socket" },
	{ "daemon", "control-socket",
	  "/run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaa.sock",
	  "107" },
	{ "daemon", "control-socket-mode", "0666", "others" },
	{ "daemon", "control-socket-mode", "0604", "others" },
	{ "daemon", "control-socket-mode", "1700", "0777" },
	{ "daemon", "control-socket-mode", "0o600", "octal" },
	{ "daemon", "control-socket-mode", "0800", "octal" },
	{ "daemon", "control-socket-mode", "", "octal" },
	{ "daemon", "control-admin-users", "alice,,bob", "empty item" },
	{ "daemon", "control-admin-users", "alice,", "empty item" },
	{ "daemon", "control-admin-users", "-alice", "not a user name" },
	{ "daemon", "control-admin-users", "al ice", "not a user name" },
	{ "daemon", "control-admin-users", "alice;bob", "not a user name" },
	{ "daemon", "control-admin-users", "4294967295", "not a user name" },
	{ "daemon", "control-admin-groups", "wheel,wheel", "listed twice" },
	{ "daemon", "control-read-only-groups", "$", "not a group name" },
	{ "daemon", "control-read-only-users",
	  "a1,a2,a3,a4,a5,a6,a7,a8,a9,b1,b2,b3,b4,b5,b6,b7,b8,b9,c1,c2,c3,c4,c5,c6,c7,c8,c9,d1,d2,"
	  "d3,d4,d5,d6",
	  "at most 32" },
	{ "daemon", "control-idle-timeout-ms", "0", "1000" },
	{ "daemon", "control-idle-timeout-ms", "999", "1000" },
	{ "daemon", "control-idle-timeout-ms", "86400001", "86400000" },
	{ "daemon", "control-idle-timeout-ms", "30s", "integer" },
	{ "daemon", "control-max-clients-per-user", "0", "16" },
	{ "daemon", "control-max-clients-per-user", "17", "16" },
	{ "daemon", "metrics-listen", "0.0.0.0:9100", "loopback" },
	{ "daemon", "metrics-listen", "192.0.2.1:9100", "loopback" },
	{ "daemon", "metrics-listen", "[::]:9100", "loopback" },
	{ "daemon", "metrics-listen", "127.0.0.1", "PORT" },
	{ "daemon", "metrics-listen", "127.0.0.1:0", "PORT" },
	{ "daemon", "metrics-listen", "127.0.0.1:65536", "PORT" },
	{ "daemon", "metrics-listen", "::1:9100", "PORT" },
	{ "daemon", "metrics-listen", "[127.0.0.1]:9100", "PORT" },
	{ "daemon", "metrics-listen", "localhost:9100", "PORT" },
	{ "daemon", "metrics-listen", "[::1]9100", "PORT" },
	{ "daemon", "interval-ms", "99", "100" },
	{ "daemon", "interval-ms", "3600001", "3600000" },
	{ "daemon", "interval-ms", "-5", "integer" },
	{ "daemon", "interval-ms", "+100", "integer" },
	{ "daemon", "interval-ms", "1e3", "integer" },
	{ "daemon", "interval-ms", "", "integer" },
	{ "daemon", "agent-timeout-ms", "600001", "600000" },
	{ "daemon", "agent-timeout-ms", "99", "100" },
	{ "daemon", "reconnect-max-ms", "999", "1000" },
	{ "host", "watermark-metric", "free", "free_mem_rate" },
	{ "host", "watermark-high", "1001", "1000" },
	{ "host", "watermark-mid", "-1", "integer" },
	{ "host", "watermark-low", "20%", "integer" },
	{ "host", "psi-some-threshold", "100.01", "percent" },
	{ "host", "psi-some-threshold", "101", "percent" },
	{ "host", "psi-some-threshold", "1.234", "percent" },
	{ "host", "psi-some-threshold", "5%", "percent" },
	{ "host", "psi-some-threshold", ".5", "percent" },
	{ "host", "psi-full-threshold", "-1", "/proc/pressure/memory prints it" },
	{ "host", "psi-full-threshold", "1.", "percent" },
	{ "fleet", "credit-floor", "100.01", "100 turns the credit's cut off" },
	{ "fleet", "pictures-per-tick", "0", "1" },
	{ "fleet", "pictures-per-tick", "100001", "100000" },
	{ "fleet", "credit-floor", "1/8", "the least share of its quota" },
	{ "fleet", "quota-size", "256MB", "ambiguous" },
	{ "fleet", "quota-size", "1GB", "ambiguous" },
	{ "fleet", "quota-size", "1.5GiB", "size" },
	{ "fleet", "quota-size", "1025TiB", "1 PiB" },
	{ "fleet", "quota-size", "18446744073709551616", "size" },
	{ "fleet", "quota-size", "-1", "size" },
	{ "fleet", "quota-size", "MiB", "size" },
	{ "fleet", "quota-size", "12 Mib", "size" },
	{ "fleet", "quota-reset-interval-ms", "50", "100" },
	{ "fleet", "default-priority", "101", "100" },
	{ "fleet", "default-actions", "", "none" },
	{ "fleet", "default-actions", "reclaim", "unknown action" },
	{ "fleet", "default-actions", "balloon,balloon", "twice" },
	{ "fleet", "default-actions", "none,balloon", "unknown action" },
	{ "fleet", "default-actions", "agent-reclaim,", "agent-reclaim, host-pageout" },
};

ParameterizedTestParameters(config_keys, invalid)
{
	return cr_make_param_array(struct invalid_case, invalid_cases, G_N_ELEMENTS(invalid_cases));
}

ParameterizedTest(struct invalid_case *c, config_keys, invalid)
{
	g_autofree char *text = g_strdup_printf("[%s]\n%s = %s\n", c->group, c->key, c->value);
	g_autofree char *group = g_strdup_printf("[%s]", c->group);
	g_autofree char *value = g_strdup_printf("\"%s\"", c->value);
	g_autoptr(GError) err = parse_fails(text, VR_CONFIG_ERROR_INVALID);

	cr_assert(msg_has_any(err->message, group) && msg_has_any(err->message, c->key) &&
			  msg_has_any(err->message, value),
		  "[%s] %s = \"%s\": the message should name the group, key and value: %s",
		  c->group, c->key, c->value, err->message);
	cr_assert(msg_has_any(err->message, c->words),
		  "[%s] %s = \"%s\": the message should say what is allowed (%s): %s", c->group,
		  c->key, c->value, c->words, err->message);
}

/* ------------------------------------------------------------------------- */
/* The file's shape                                                          */
/* ------------------------------------------------------------------------- */

TestSuite(config_file, .description = "groups, keys and syntax");

Test(config_file, unknown_key)
{
	g_autoptr(GError)
		err = parse_fails("[daemon]\nintervall-ms = 500\n", VR_CONFIG_ERROR_INVALID);

	cr_assert(msg_has_any(err->message, "[daemon]") &&
			  msg_has_any(err->message, "intervall-ms"),
		  "the message should name the group and the unknown key: %s", err->message);
	cr_assert(msg_has_any(err->message, "interval-ms, agent-timeout-ms"),
		  "the message should list the keys of the group: %s", err->message);
}

Test(config_file, key_of_another_group)
{
	g_autoptr(GError) err = parse_fails("[host]\nquota-size = 1GiB\n", VR_CONFIG_ERROR_INVALID);

	cr_assert(msg_has_any(err->message, "[host]") && msg_has_any(err->message, "quota-size"),
		  "a key in the wrong group is unknown there: %s", err->message);
}

Test(config_file, unknown_group)
{
	g_autoptr(GError) err = parse_fails("[deamon]\nmanage = all\n", VR_CONFIG_ERROR_INVALID);

	cr_assert(msg_has_any(err->message, "[deamon]") && msg_has_any(err->message, "[daemon]"),
		  "the message should name the group and the known ones: %s", err->message);
}

Test(config_file, key_given_twice)
{
	g_autoptr(GError) once = parse_fails("[daemon]\ninterval-ms = 100\ninterval-ms = 200\n",
					     VR_CONFIG_ERROR_INVALID);
	g_autoptr(GError)
		split = parse_fails("[daemon]\nmanage = all\n[host]\n[daemon]\nmanage = all\n",
				    VR_CONFIG_ERROR_INVALID);

	cr_assert(msg_has_any(once->message, "twice") && msg_has_any(once->message, "interval-ms"),
		  "a key given twice names it: %s", once->message);
	cr_assert(msg_has_any(split->message, "twice") && msg_has_any(split->message, "manage"),
		  "a group given twice merges, and its keys still count once: %s", split->message);
}

Test(config_file, localized_key)
{
	g_autoptr(GError)
		err = parse_fails("[daemon]\nmanage[de] = all\n", VR_CONFIG_ERROR_INVALID);

	cr_assert(msg_has_any(err->message, "manage[de]") && msg_has_any(err->message, "[daemon]"),
		  "a localized key is refused, not ignored: %s", err->message);
}

Test(config_file, syntax)
{
	g_autoptr(GError) no_group = parse_fails("interval-ms = 100\n", VR_CONFIG_ERROR_SYNTAX);
	g_autoptr(GError) broken = parse_fails("[daemon\n", VR_CONFIG_ERROR_SYNTAX);
	g_autoptr(GError) bare = parse_fails("[daemon]\nmanage\n", VR_CONFIG_ERROR_SYNTAX);
	g_autoptr(GError)
		escape = parse_fails("[daemon]\npolicy-dir = /a\\qb\n", VR_CONFIG_ERROR_INVALID);

	cr_assert(msg_has_any(no_group->message, "group"), "%s", no_group->message);
	cr_assert(msg_has_any(broken->message, "[daemon"), "%s", broken->message);
	cr_assert(msg_has_any(bare->message, "manage"), "%s", bare->message);
	cr_assert(msg_has_any(escape->message, "policy-dir"), "a bad escape names the key: %s",
		  escape->message);
}

Test(config_file, nul_byte)
{
	const char text[] = "[daemon]\nmanage = all\0\n";
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_daemon_config)
		c = vr_daemon_config_parse(text, sizeof(text) - 1, FILE_NAME, &err);

	cr_assert_null(c, "a NUL byte is refused");
	cr_assert(g_error_matches(err, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ) &&
			  msg_has_any(err->message, "NUL") && msg_names_number(err->message, 21),
		  "the message should name the NUL byte's offset (21): %s", err->message);
}

Test(config_file, watermarks_must_be_ordered)
{
	g_autoptr(GError)
		high = parse_fails("[host]\nwatermark-high = 300\n", VR_CONFIG_ERROR_INVALID);
	g_autoptr(GError)
		low = parse_fails("[host]\nwatermark-low = 450\n", VR_CONFIG_ERROR_INVALID);

	cr_assert(msg_has_any(high->message, "watermark-high = 300") &&
			  msg_has_any(high->message, "watermark-mid = 400") &&
			  msg_has_any(high->message, "high >= watermark-mid"),
		  "the message should name both keys, their values and the rule: %s",
		  high->message);
	cr_assert(msg_has_any(low->message, "watermark-low = 450"), "%s", low->message);
}

Test(config_file, quota_window_at_least_one_tick)
{
	g_autoptr(GError) err =
		parse_fails("[fleet]\nquota-reset-interval-ms = 500\n", VR_CONFIG_ERROR_INVALID);
	g_autoptr(vr_daemon_config) ok =
		parse_ok("[daemon]\ninterval-ms = 500\n[fleet]\nquota-reset-interval-ms = 500\n");

	cr_assert(msg_has_any(err->message, "quota-reset-interval-ms = 500") &&
			  msg_has_any(err->message, "interval-ms = 1000"),
		  "the message should name both keys and values: %s", err->message);
	cr_assert_eq(ok->fleet_quota_reset_interval_ms, 500, "a window of one tick is fine");
}

Test(config_file, round_trip)
{
	g_autoptr(vr_daemon_config) c = parse_ok("[daemon]\n"
						 "connect = test:///default\n"
						 "manage = all\n"
						 "policy-dir = /srv/a b/policies\n"
						 "control-socket = /run/x.sock\n"
						 "control-socket-mode = 0660\n"
						 "metrics-listen = 127.0.0.1:9100\n"
						 "interval-ms = 250\n"
						 "agent-timeout-ms = 2000\n"
						 "reconnect-max-ms = 5000\n"
						 "[host]\n"
						 "watermark-metric = none\n"
						 "watermark-high = 900\n"
						 "watermark-mid = 800\n"
						 "watermark-low = 100\n"
						 "psi-some-threshold = 7.5\n"
						 "psi-full-threshold = 1\n"
						 "[fleet]\n"
						 "quota-size = 96MiB\n"
						 "quota-reset-interval-ms = 250\n"
						 "default-priority = 10\n"
						 "default-actions = none\n");
	g_autofree char *text = vr_daemon_config_to_string(c);
	g_autoptr(vr_daemon_config) again = parse_ok(text);
	g_autofree char *text_again = vr_daemon_config_to_string(again);

	cr_assert_str_eq(text, text_again, "a written config reads back the same");
	cr_assert_str_eq(again->policy_dir, "/srv/a b/policies", "spaces survive the round trip");
	cr_assert_eq(again->default_actions, 0, "none survives the round trip");
}

/* ------------------------------------------------------------------------- */
/* Files and reload                                                          */
/* ------------------------------------------------------------------------- */

TestSuite(config_load, .init = files_init, .fini = files_fini,
	  .description = "reading files; the atomic reload");

Test(config_load, file)
{
	g_autofree char *path = g_build_filename(root, "vreclaimd.conf", NULL);
	g_autoptr(vr_daemon_config) c = NULL;
	g_autoptr(GError) err = NULL;

	tree_put(root, "vreclaimd.conf", "[daemon]\nmanage = all\n");
	c = vr_daemon_config_load(path, &err);
	cr_assert_not_null(c, "the file should load: %s", err ? err->message : "?");
	cr_assert_eq(c->manage, VR_MANAGE_ALL);
	cr_assert_str_eq(c->path, path, "the config remembers its file");
}

Test(config_load, errors_name_the_file)
{
	g_autofree char *missing = g_build_filename(root, "missing.conf", NULL);
	g_autofree char *dir = g_build_filename(root, "dir.conf", NULL);
	g_autofree char *big = g_build_filename(root, "big.conf", NULL);
	g_autofree char *bad = g_build_filename(root, "bad.conf", NULL);
	g_autofree char *padding = g_strnfill(VR_CONFIG_MAX_FILE_BYTES, '#');
	g_autofree char *big_text = g_strconcat(padding, "\n", NULL); /* one byte too many */
	g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL;

	tree_mkdir(root, "dir.conf");
	tree_put(root, "big.conf", big_text);
	tree_put(root, "bad.conf", "[daemon]\ninterval-ms = 5\n");
	cr_assert_null(vr_daemon_config_load(missing, &e1));
	cr_assert(g_error_matches(e1, VR_CONFIG_ERROR, VR_CONFIG_ERROR_NOT_FOUND) &&
			  g_str_has_prefix(e1->message, missing),
		  "a missing file is NOT_FOUND, named: %s", e1->message);
	cr_assert_null(vr_daemon_config_load(dir, &e2));
	cr_assert(g_error_matches(e2, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ) &&
			  g_str_has_prefix(e2->message, dir) && msg_has_any(e2->message, "regular"),
		  "a folder is not a regular file: %s", e2->message);
	cr_assert_null(vr_daemon_config_load(big, &e3));
	cr_assert(g_error_matches(e3, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ) &&
			  msg_names_number(e3->message, VR_CONFIG_MAX_FILE_BYTES),
		  "a file over the limit is refused, naming it: %s", e3->message);
	cr_assert_null(vr_daemon_config_load(bad, &e4));
	cr_assert(g_str_has_prefix(e4->message, bad) && msg_has_any(e4->message, "interval-ms"),
		  "a bad value names the file and the key: %s", e4->message);
}

Test(config_load, invalid_file_leaves_the_previous_config)
{
	g_autofree char *path = g_build_filename(root, "vreclaimd.conf", NULL);
	g_autoptr(vr_daemon_config) current = NULL;
	struct vr_daemon_config *before;
	g_autoptr(GError) err = NULL;

	tree_put(root, "vreclaimd.conf", "[daemon]\ninterval-ms = 200\n");
	current = vr_daemon_config_load(path, NULL);
	cr_assert_not_null(current);
	before = current;

	/* SIGHUP with a broken file: nothing changes, the error says why. */
	tree_put(root, "vreclaimd.conf", "[daemon]\ninterval-ms = 500\nmanage = everything\n");
	cr_assert_not(vr_daemon_config_reload(&current, NULL, &err), "a bad file must not load");
	cr_assert(current == before && current->interval_ms == 200 &&
			  current->manage == VR_MANAGE_OPT_IN,
		  "the previous config should stay in place, untouched");
	cr_assert(msg_has_any(err->message, "everything"), "%s", err->message);

	/* SIGHUP with a fixed file: the new config takes over at once. */
	tree_put(root, "vreclaimd.conf", "[daemon]\ninterval-ms = 500\nmanage = all\n");
	cr_assert(vr_daemon_config_reload(&current, NULL, NULL), "a good file loads");
	cr_assert(current->interval_ms == 500 && current->manage == VR_MANAGE_ALL,
		  "the new values are in place");
	cr_assert_str_eq(current->path, path);
}

Test(config_load, control_roles_resolve_names_or_refuse_the_file)
{
	g_autofree char *path = g_build_filename(root, "vreclaimd.conf", NULL);
	g_autoptr(vr_daemon_config) c = NULL;
	g_autoptr(vr_daemon_config) defaults = vr_daemon_config_new_default();
	g_autoptr(GError) err = NULL;
	struct vr_control_rules r;

	/* root exists everywhere; numbers are ids. */
	tree_put(root, "vreclaimd.conf",
		 "[daemon]\ncontrol-admin-users = 4321\ncontrol-read-only-groups = root, 77\n"
		 "control-idle-timeout-ms = 5000\ncontrol-max-clients-per-user = 2\n");
	c = vr_daemon_config_load(path, &err);
	cr_assert_not_null(c, "the file should load: %s", err ? err->message : "?");
	cr_assert(vr_daemon_config_control_rules(c, &r, &err), "%s", err ? err->message : "?");
	cr_assert(r.admin_users.nr == 1 && r.admin_users.id[0] == 4321, "admin users: 4321");
	cr_assert(r.read_only_groups.nr == 2 && r.read_only_groups.id[0] == 0 &&
			  r.read_only_groups.id[1] == 77,
		  "read-only groups: root is gid 0, then 77");
	cr_assert(r.admin_groups.nr == 0 && r.read_only_users.nr == 0);
	cr_assert_eq(r.idle_timeout_ms, 5000);
	cr_assert_eq(r.max_clients_per_user, 2);
	cr_assert_eq(r.owner_uid, (uint32_t)geteuid(), "vreclaimd's own user is the owner");

	/* The defaults: nobody listed, 30 s, 4 per user. */
	cr_assert(vr_daemon_config_control_rules(defaults, &r, NULL));
	cr_assert(r.admin_users.nr + r.admin_groups.nr + r.read_only_users.nr +
			  r.read_only_groups.nr ==
		  0);
	cr_assert_eq(r.idle_timeout_ms, 30000);
	cr_assert_eq(r.max_clients_per_user, 4);

	/* A name that does not resolve refuses the whole file, naming it. */
	tree_put(root, "vreclaimd.conf",
		 "[daemon]\ninterval-ms = 500\n"
		 "control-read-only-users = root, no-such-user-vreclaim-test\n");
	g_clear_error(&err);
	cr_assert_not(vr_daemon_config_reload(&c, NULL, &err), "an unknown user must not load");
	cr_assert(g_error_matches(err, VR_CONFIG_ERROR, VR_CONFIG_ERROR_INVALID), "%s",
		  err->message);
	cr_assert(g_str_has_prefix(err->message, path) &&
			  msg_has_all(err->message,
				      "control-read-only-users;no-such-user-vreclaim-test;no user"),
		  "the message should name the file, the key and the user: %s", err->message);
	cr_assert_eq(c->interval_ms, 1000, "the previous config stays");
	tree_put(root, "vreclaimd.conf", "[daemon]\ncontrol-admin-groups = no-such-group-vr\n");
	g_clear_error(&err);
	cr_assert_null(vr_daemon_config_load(path, &err));
	cr_assert(msg_has_all(err->message, "control-admin-groups;no group;no-such-group-vr"), "%s",
		  err->message);
}

Test(config_load, reload_of_the_defaults_needs_a_path)
{
	g_autoptr(vr_daemon_config) current = vr_daemon_config_new_default();
	struct vr_daemon_config *before = current;
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_daemon_config_reload(&current, NULL, &err));
	cr_assert(current == before, "the defaults stay");
	cr_assert(msg_has_any(err->message, "no file"), "%s", err->message);
}

/* ------------------------------------------------------------------------- */
/* Policies                                                                  */
/* ------------------------------------------------------------------------- */

TestSuite(config_policy, .init = files_init, .fini = files_fini,
	  .description = "vr_daemon_config_load_policy()");

static struct vr_daemon_config *config_with_policy_dir(void)
{
	g_autofree char *text = g_strdup_printf("[daemon]\npolicy-dir = %s/policies\n", root);

	tree_mkdir(root, "policies");
	return parse_ok(text);
}

Test(config_policy, loads_a_policy)
{
	g_autoptr(vr_daemon_config) c = config_with_policy_dir();
	g_autoptr(vr_policy) p = NULL;
	g_autoptr(GError) err = NULL;

	tree_put(root, "policies/web-1.json", "{ \"profile\": \"damon-reclaim-6.12\" }\n");
	p = vr_daemon_config_load_policy(c, "web-1", &err);
	cr_assert_not_null(p, "the policy should load: %s", err ? err->message : "?");
	cr_assert_str_eq(p->profile, "damon-reclaim-6.12");
}

Test(config_policy, errors_name_the_file)
{
	g_autoptr(vr_daemon_config) c = config_with_policy_dir();
	g_autofree char *missing = g_build_filename(root, "policies", "missing.json", NULL);
	g_autofree char *broken = g_build_filename(root, "policies", "broken.json", NULL);
	g_autofree char *wrong = g_build_filename(root, "policies", "wrong.json", NULL);
	g_autofree char *fifo = g_build_filename(root, "policies", "fifo.json", NULL);
	g_autofree char *padding = g_strnfill(VR_CONFIG_MAX_POLICY_BYTES, ' ');
	g_autofree char *big_text = g_strconcat("{}", padding, NULL);
	g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL, e5 = NULL, e6 = NULL;

	tree_put(root, "policies/broken.json", "{ \"schemes\": [ \n");
	tree_put(root, "policies/wrong.json", "{ \"schemes\": 5 }\n");
	tree_put(root, "policies/big.json", big_text);
	tree_mkdir(root, "policies/dir.json");
	cr_assert_eq(mkfifo(fifo, 0600), 0, "cannot make a FIFO");

	cr_assert_null(vr_daemon_config_load_policy(c, "missing", &e1));
	cr_assert(g_error_matches(e1, VR_CONFIG_ERROR, VR_CONFIG_ERROR_NOT_FOUND) &&
			  g_str_has_prefix(e1->message, missing),
		  "a missing policy is NOT_FOUND, named by its path: %s", e1->message);
	cr_assert_null(vr_daemon_config_load_policy(c, "broken", &e2));
	cr_assert(g_error_matches(e2, VR_POLICY_ERROR, VR_POLICY_ERROR_SYNTAX) &&
			  g_str_has_prefix(e2->message, broken) && msg_has_any(e2->message, "line"),
		  "invalid JSON keeps the policy's error, prefixed with the path: %s", e2->message);
	cr_assert_null(vr_daemon_config_load_policy(c, "wrong", &e3));
	cr_assert(g_error_matches(e3, VR_POLICY_ERROR, VR_POLICY_ERROR_INVALID) &&
			  g_str_has_prefix(e3->message, wrong) &&
			  msg_has_any(e3->message, "schemes"),
		  "an invalid policy names the file and the JSON path: %s", e3->message);
	cr_assert_null(vr_daemon_config_load_policy(c, "big", &e4));
	cr_assert(g_error_matches(e4, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ) &&
			  msg_names_number(e4->message, VR_CONFIG_MAX_POLICY_BYTES),
		  "a policy over the size limit is refused: %s", e4->message);
	cr_assert_null(vr_daemon_config_load_policy(c, "dir", &e5));
	cr_assert(g_error_matches(e5, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ) &&
			  msg_has_any(e5->message, "regular"),
		  "a folder is refused: %s", e5->message);
	cr_assert_null(vr_daemon_config_load_policy(c, "fifo", &e6));
	cr_assert(g_error_matches(e6, VR_CONFIG_ERROR, VR_CONFIG_ERROR_READ) &&
			  msg_has_any(e6->message, "regular"),
		  "a FIFO is refused without waiting for a writer: %s", e6->message);
}

/* Each row: a policy name that must be refused, and why. */
struct name_case {
	char name[256];
	char words[32];
};

static struct name_case name_cases[] = {
	{ "", "empty" },
	{ "../etc/passwd", "'/' or '..'" },
	{ "a/b", "'/' or '..'" },
	{ "..", "'/' or '..'" },
	{ "x..y", "'/' or '..'" },
	{ ".hidden", "starts with '.'" },
	{ "tab\there", "control" },
	{ "new\nline", "control" },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaa",
	  "200" },
	{ "bad\xff", "UTF-8" },
};

ParameterizedTestParameters(config_policy, bad_names)
{
	return cr_make_param_array(struct name_case, name_cases, G_N_ELEMENTS(name_cases));
}

ParameterizedTest(struct name_case *c, config_policy, bad_names)
{
	g_autoptr(vr_daemon_config) cfg = config_with_policy_dir();
	g_autoptr(GError) err = NULL;
	g_autofree char *shown = g_strescape(c->name, NULL);

	cr_assert_null(vr_daemon_config_load_policy(cfg, c->name, &err), "\"%s\" must be refused",
		       shown);
	cr_assert(g_error_matches(err, VR_CONFIG_ERROR, VR_CONFIG_ERROR_POLICY_NAME),
		  "\"%s\": expected VR_CONFIG_ERROR_POLICY_NAME: %s", shown, err->message);
	cr_assert(msg_has_any(err->message, c->words), "\"%s\": the message should say %s: %s",
		  shown, c->words, err->message);
}

Test(config_policy, plain_names_are_fine)
{
	const char *const names[] = { "web-1", "db_2.prod", "guest with spaces", "é" };

	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autoptr(GError) err = NULL;

		cr_assert(vr_daemon_config_policy_name_validate(names[i], &err),
			  "\"%s\" is a plain name: %s", names[i], err ? err->message : "");
	}
}

/* ------------------------------------------------------------------------- */
/* The example config                                                        */
/* ------------------------------------------------------------------------- */

TestSuite(config_example, .description = "data/vreclaimd.conf");

/* The example with its "#key = value" lines uncommented. */
static char *uncomment(const char *text, guint *nr_keys)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_autoptr(GString) out = g_string_new(NULL);

	*nr_keys = 0;
	for (char **line = lines; *line; line++) {
		/* A key line: '#' then a lowercase letter; prose has "# ". */
		if ((*line)[0] == '#' && g_ascii_islower((*line)[1]) && strchr(*line, '=')) {
			g_string_append_printf(out, "%s\n", *line + 1);
			(*nr_keys)++;
		} else {
			g_string_append_printf(out, "%s\n", *line);
		}
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

Test(config_example, shows_every_key_at_its_default)
{
	g_autoptr(vr_daemon_config) def = vr_daemon_config_new_default();
	g_autoptr(vr_daemon_config) as_is = NULL;
	g_autoptr(vr_daemon_config) uncommented = NULL;
	g_autoptr(GError) err = NULL;
	g_autofree char *text = NULL;
	g_autofree char *keys_on = NULL;
	g_autofree char *defaults = vr_daemon_config_to_string(def);
	g_auto(GStrv) default_lines = g_strsplit(defaults, "\n", -1);
	guint nr_keys = 0, nr_default_keys = 0;

	cr_assert(g_file_get_contents(VR_EXAMPLE_CONFIG, &text, NULL, &err),
		  "cannot read the example config: %s", err ? err->message : "?");
	as_is = vr_daemon_config_parse(text, -1, VR_EXAMPLE_CONFIG, &err);
	cr_assert_not_null(as_is, "the example should parse as shipped: %s",
			   err ? err->message : "?");
	assert_same_config(def, as_is, "the example as shipped (every key commented out)");

	keys_on = uncomment(text, &nr_keys);
	uncommented = vr_daemon_config_parse(keys_on, -1, VR_EXAMPLE_CONFIG, &err);
	cr_assert_not_null(uncommented, "the example with its keys uncommented should parse: %s",
			   err ? err->message : "?");
	assert_same_config(def, uncommented, "the example's keys should show the defaults");

	/* Every key of the config is in the example. */
	for (char **line = default_lines; *line; line++) {
		g_autofree char *key = NULL;

		if (!strchr(*line, '='))
			continue;
		nr_default_keys++;
		key = g_strndup(*line, strcspn(*line, "="));
		g_strchomp(key);
		cr_assert(strstr(text, key), "the example should show the key %s", key);
	}
	cr_assert_eq(nr_keys, nr_default_keys,
		     "the example should show each of the %u keys once, "
		     "it shows %u key lines",
		     nr_default_keys, nr_keys);
}
