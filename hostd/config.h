/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's configuration file (docs/vreclaimd.md, "Configuration";
 * data/vreclaimd.conf is a commented example): a GKeyFile with the groups
 * [daemon], [host] and [fleet], and the per-domain policy files of the
 * policy folder.
 *
 * Loading is defaults -> parse -> validate -> a new struct vr_daemon_config.
 * A file that does not load changes nothing: the caller keeps its current
 * config and swaps in the new one only on success (vr_daemon_config_reload()
 * does exactly that), so a reload on SIGHUP is atomic. Every error names the
 * file, the group, the key and the value, and says what is allowed; unknown
 * groups and keys are errors, so a typo never silently keeps a default.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "host-watermarks.h"
#include "libvirt/domain-xml.h"
#include "policy.h"

/* Where vreclaimd looks without --config. */
#define VR_CONFIG_DEFAULT_PATH "/etc/vreclaim/vreclaimd.conf"

/* Longest config file read, bytes: a config is a few dozen lines. */
#define VR_CONFIG_MAX_FILE_BYTES (64U * 1024)

/* Longest policy file read, bytes: a policy with many schemes is a few KiB. */
#define VR_CONFIG_MAX_POLICY_BYTES (1024U * 1024)

/* Longest policy name, bytes (with ".json" it stays a valid file name). */
#define VR_CONFIG_MAX_POLICY_NAME 200

/* Longest user or group name in the control-* role lists, bytes: useradd's
 * own limit is 32; 64 leaves room for directory services. */
#define VR_CONFIG_MAX_ID_NAME 64

struct vr_control_rules; /* control.h */

#define VR_CONFIG_ERROR (vr_config_error_quark())
GQuark vr_config_error_quark(void);

/**
 * enum vr_config_error - error codes in the VR_CONFIG_ERROR domain.
 * @VR_CONFIG_ERROR_NOT_FOUND: the file does not exist (the caller may choose
 *	to run with defaults when it was the default path).
 * @VR_CONFIG_ERROR_READ:     the file exists but cannot be read, is not a
 *	regular file, is too large or holds a NUL byte.
 * @VR_CONFIG_ERROR_SYNTAX:   the text is not a key file (GKeyFile's message,
 *	with the file name).
 * @VR_CONFIG_ERROR_INVALID:  an unknown group or key, a key given twice, a
 *	value out of range, or keys that contradict each other.
 * @VR_CONFIG_ERROR_POLICY_NAME: a policy name that is not a plain file name.
 */
enum vr_config_error {
	VR_CONFIG_ERROR_NOT_FOUND,
	VR_CONFIG_ERROR_READ,
	VR_CONFIG_ERROR_SYNTAX,
	VR_CONFIG_ERROR_INVALID,
	VR_CONFIG_ERROR_POLICY_NAME,
};

/**
 * enum vr_manage_mode - which domains vreclaimd manages.
 * @VR_MANAGE_OPT_IN: only domains whose vreclaim metadata enables it.
 * @VR_MANAGE_ALL:    every running domain (metadata can still opt out).
 */
enum vr_manage_mode {
	VR_MANAGE_OPT_IN,
	VR_MANAGE_ALL,
};

/** vr_manage_mode_name() - "opt-in" or "all". */
const char *vr_manage_mode_name(enum vr_manage_mode mode);

/**
 * enum vr_host_access_source_kind - where the host-pageout action gets the
 * access picture of a guest without an agent.
 * @VR_HOST_ACCESS_SOURCE_NONE:	      none: host-pageout cannot run.
 * @VR_HOST_ACCESS_SOURCE_HOST_DAMON: the host kernel's DAMON (sysfs, vaddr
 *				      operations) on the QEMU process.
 */
enum vr_host_access_source_kind {
	VR_HOST_ACCESS_SOURCE_NONE,
	VR_HOST_ACCESS_SOURCE_HOST_DAMON,
};

/** vr_host_access_source_name() - "none" or "host-damon". */
const char *vr_host_access_source_name(enum vr_host_access_source_kind kind);

/**
 * struct vr_daemon_config - vreclaimd's configuration, validated.
 * @path:		 the file it was loaded from; NULL for the built-in
 *			 defaults. Owned.
 *
 * [daemon]:
 * @connect_uri:	 libvirt URI to manage (key "connect"). Owned.
 * @manage:		 which domains are managed (key "manage").
 * @policy_dir:		 absolute folder of the <name>.json policies (key
 *			 "policy-dir"). Owned.
 * @state_dir:		 absolute folder where vreclaimd keeps each domain's
 *			 state across its restarts (key "state-dir";
 *			 hostd/state-dir.h). Owned.
 * @control_socket:	 absolute path of vreclaimctl's unix socket (key
 *			 "control-socket"). Owned.
 * @control_socket_mode: its permission bits, no bits for others (key
 *			 "control-socket-mode").
 * @control_admin_users: users given the admin role on the control socket
 *			 (key "control-admin-users"): names, or uids in
 *			 decimal; NULL-terminated, owned, never NULL (empty:
 *			 only root and vreclaimd's own user are admin).
 * @control_admin_groups: groups whose members are admin (key
 *			 "control-admin-groups"): names or gids, as above.
 * @control_read_only_users: users given the read-only role (status,
 *			 metrics; key "control-read-only-users"), as above.
 * @control_read_only_groups: groups whose members are read-only (key
 *			 "control-read-only-groups"), as above.
 * @control_idle_timeout_ms: a control client idle this long is closed, ms
 *			 (key "control-idle-timeout-ms").
 * @control_max_clients_per_user: control clients of one user at once (key
 *			 "control-max-clients-per-user").
 * @metrics_host:	 loopback address of the Prometheus text endpoint
 *			 ("127.0.0.1", "::1"), NULL when it is off (key
 *			 "metrics-listen"). Owned.
 * @metrics_port:	 its TCP port, 1..65535; 0 when it is off.
 * @interval_ms:	 time between two decide/act ticks, ms.
 * @agent_timeout_ms:	 longest wait for an agent's reply, ms.
 * @reconnect_max_ms:	 cap of libvirt's reconnection backoff, ms (an agent's
 *			 backoff has its own cap, 30 s).
 *
 * [host]:
 * @host_wmarks:	 when the host needs memory (keys "watermark-*",
 *			 "psi-*-threshold").
 * @host_access_source:	 the access picture of a guest without an agent, for
 *			 host-pageout (key "access-source").
 *
 * [fleet]:
 * @fleet_quota_bytes:	 bytes the fleet may take per window, 0 = no limit
 *			 (key "quota-size").
 * @fleet_quota_reset_interval_ms: length of a fleet quota window, ms
 *			 (key "quota-reset-interval-ms").
 * @fleet_credit_floor_bp: the least part of its share a domain keeps
 *			 whatever its RSS gives back, basis points (key
 *			 "credit-floor"): 10000 (100%) leaves the shares to the
 *			 fleet credit's judgement unbound, i.e. off; 1250 (the
 *			 default) lets it cut a domain that gives nothing back
 *			 to an eighth.
 * @fleet_pictures_per_tick: access pictures (agent get-regions) asked for
 *			 per tick at most, 1..100000 (key "pictures-per-tick"):
 *			 a larger fleet has each domain's picture refreshed
 *			 every ceil(domains / this) ticks.
 * @default_priority:	 priority (0..100) of a domain whose metadata sets
 *			 none.
 * @default_actions:	 enum vr_domain_action bits (domain-xml.h) allowed on a domain whose
 *			 metadata sets none; 0 = monitor only.
 */
struct vr_daemon_config {
	char *path;
	char *connect_uri;
	enum vr_manage_mode manage;
	char *policy_dir;
	char *state_dir;
	char *control_socket;
	uint32_t control_socket_mode;
	char **control_admin_users;
	char **control_admin_groups;
	char **control_read_only_users;
	char **control_read_only_groups;
	uint64_t control_idle_timeout_ms;
	uint32_t control_max_clients_per_user;
	char *metrics_host;
	uint16_t metrics_port;
	uint64_t interval_ms;
	uint64_t agent_timeout_ms;
	uint64_t reconnect_max_ms;
	struct vr_host_watermarks host_wmarks;
	enum vr_host_access_source_kind host_access_source;
	uint64_t fleet_quota_bytes;
	uint64_t fleet_quota_reset_interval_ms;
	uint32_t fleet_credit_floor_bp;
	uint32_t fleet_pictures_per_tick;
	uint32_t default_priority;
	uint32_t default_actions;
};

typedef struct vr_daemon_config vr_daemon_config;

/**
 * vr_daemon_config_new_default() - the built-in defaults (the values of
 * docs/vreclaimd.md, each with its unit and reason in config.c).
 * Return: owned by the caller.
 */
struct vr_daemon_config *vr_daemon_config_new_default(void);

/**
 * vr_daemon_config_parse() - defaults, then the keys of the key file @text
 * (@len bytes, or -1 for NUL-terminated), then validation. Pure.
 * @file_name:	what messages call the text (e.g. its path).
 * Return: a new config (@path set to @file_name), or NULL with @error
 * (VR_CONFIG_ERROR_SYNTAX or _INVALID) whose message starts with
 * "<file_name>: " and names the group, key and value.
 */
struct vr_daemon_config *vr_daemon_config_parse(const char *text, gssize len, const char *file_name,
						GError **error);

/**
 * vr_daemon_config_load() - read (at most VR_CONFIG_MAX_FILE_BYTES) and parse
 * the file @path, and check that the names of its control-* role lists
 * resolve (vr_daemon_config_control_rules()). Return: a new config, or NULL
 * with @error naming @path (VR_CONFIG_ERROR_NOT_FOUND when it does not
 * exist).
 */
struct vr_daemon_config *vr_daemon_config_load(const char *path, GError **error);

/**
 * vr_daemon_config_reload() - load @path (NULL: (*@config)->path, which
 * must then be set) and, only if that succeeds, free *@config and put the new
 * config in its place. On error *@config is untouched.
 */
gboolean vr_daemon_config_reload(struct vr_daemon_config **config, const char *path,
				 GError **error);

/**
 * vr_daemon_config_control_rules() - the control socket's rules of @c
 * (control.h): its role lists with each name resolved to an id through the
 * system's user and group databases (getpwnam_r(), getgrnam_r(); a decimal
 * number is taken as the id itself), its limits, and the calling process's
 * effective uid as the owner. Not pure: the databases may be remote (NSS);
 * resolved again on each reload.
 * Return: FALSE with @error (VR_CONFIG_ERROR_INVALID) naming @c's file, the
 * key and the name that does not resolve.
 */
gboolean vr_daemon_config_control_rules(const struct vr_daemon_config *c,
					struct vr_control_rules *out, GError **error);

/**
 * vr_daemon_config_to_string() - @c as a key file with every key, values
 * normalized (sizes with the largest exact binary suffix, the mode in
 * octal), which vr_daemon_config_parse() reads back to the same config.
 * Return: owned text.
 */
char *vr_daemon_config_to_string(const struct vr_daemon_config *c);

/**
 * vr_daemon_config_policy_name_validate() - is @name usable as a policy name:
 * 1..VR_CONFIG_MAX_POLICY_NAME bytes of UTF-8, no '/', no "..", no control
 * character, not starting with '.'? Errors are VR_CONFIG_ERROR_POLICY_NAME
 * and quote the name.
 */
gboolean vr_daemon_config_policy_name_validate(const char *name, GError **error);

/**
 * vr_daemon_config_load_policy() - read and parse <policy_dir>/<@name>.json.
 * The name is validated first (vr_daemon_config_policy_name_validate()); the
 * file must be a regular file of at most VR_CONFIG_MAX_POLICY_BYTES.
 * Return: a new policy, or NULL with @error: VR_CONFIG_ERROR_POLICY_NAME
 * quoting a bad name; otherwise a message that starts with the file's path:
 * VR_CONFIG_ERROR_NOT_FOUND (no such file), _READ, or vr_policy_parse()'s
 * VR_POLICY_ERROR codes (the JSON path of the problem follows).
 */
struct vr_policy *vr_daemon_config_load_policy(const struct vr_daemon_config *c, const char *name,
					       GError **error);

void vr_daemon_config_free(struct vr_daemon_config *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_daemon_config, vr_daemon_config_free)
