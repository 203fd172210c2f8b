/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What vreclaimd shows operators: a plain snapshot of each domain it knows
 * (struct vr_domain_status) and of itself (struct vr_daemon_status). The
 * daemon fills them on request; the control socket (control.h) sends them
 * to vreclaimctl and the metrics exporter (metrics.h) renders them.
 *
 * Plain data: every string is a fixed-size, NUL-terminated char array (the
 * daemon cuts what does not fit with g_strlcpy()), so a snapshot is copied
 * with memcpy and freed with one g_free. Names of the enums are the words of
 * the wire format, the CLI and the docs.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <string.h>

/* Sizes of the string members in bytes, the NUL included. */
#define VR_DOMAIN_NAME_SIZE	     256 /* libvirt keeps <name>.xml files: NAME_MAX */
#define VR_DOMAIN_UUID_SIZE	     37	 /* 36 characters, 8-4-4-4-12 */
#define VR_DOMAIN_REASON_SIZE	     256
#define VR_DOMAIN_POLICY_SIZE	     64
#define VR_DOMAIN_AGENT_VERSION_SIZE 65 /* VR_PROTO_MAX_AGENT_LEN + 1 */
#define VR_DOMAIN_BACKEND_SIZE	     33 /* VR_PROTO_MAX_BACKEND_LEN + 1 */
#define VR_DOMAIN_ERROR_SIZE	     512
#define VR_DAEMON_VERSION_SIZE	     32
#define VR_DAEMON_URI_SIZE	     256
#define VR_DAEMON_HOST_STATE_SIZE    16 /* vr_host_memory_state_name() */

/* A domain's priority: 0..this (the `priority=` setting). */
#define VR_STATUS_PRIORITY_MAX 100

/* The host's free memory rate, per-mille: 0..this. */
#define VR_PERMILLE_MAX 1000

/**
 * enum vr_agent_state - the daemon's link to a domain's guest agent.
 * @VR_AGENT_STATE_NONE:	no agent (none configured, or not tried yet).
 * @VR_AGENT_STATE_CONNECTING:	connecting, or waiting for its hello.
 * @VR_AGENT_STATE_CONNECTED:	it answered hello and is driven.
 * @VR_AGENT_STATE_FAILED:	the link failed (see the domain's last error);
 *				the daemon retries later.
 */
enum vr_agent_state {
	VR_AGENT_STATE_NONE,
	VR_AGENT_STATE_CONNECTING,
	VR_AGENT_STATE_CONNECTED,
	VR_AGENT_STATE_FAILED,
};

/**
 * enum vr_domain_action - how vreclaim takes memory from a domain. A domain's
 * tuning allows a set of them (the values are bits, or-ed: @actions of
 * struct vr_domain_tuning); the daemon runs one of them at a time, or none
 * (@action of struct vr_domain_status and of the domain).
 * @VR_DOMAIN_ACTION_NONE:	    none (never in a set).
 * @VR_DOMAIN_ACTION_AGENT_RECLAIM: the guest agent reclaims cold memory in
 *				    the guest ("agent-reclaim").
 * @VR_DOMAIN_ACTION_HOST_PAGEOUT:  the host pages out cold guest memory from
 *				    the QEMU process ("host-pageout").
 * @VR_DOMAIN_ACTION_BALLOON:	    the balloon shrinks the guest ("balloon").
 */
enum vr_domain_action {
	VR_DOMAIN_ACTION_NONE = 0,
	VR_DOMAIN_ACTION_AGENT_RECLAIM = 1 << 0,
	VR_DOMAIN_ACTION_HOST_PAGEOUT = 1 << 1,
	VR_DOMAIN_ACTION_BALLOON = 1 << 2,
};
#define VR_DOMAIN_ACTIONS_ALL                                                                      \
	(VR_DOMAIN_ACTION_AGENT_RECLAIM | VR_DOMAIN_ACTION_HOST_PAGEOUT | VR_DOMAIN_ACTION_BALLOON)
/* The default: only what the guest does itself, the least intrusive. */
#define VR_DOMAIN_ACTIONS_DEFAULT VR_DOMAIN_ACTION_AGENT_RECLAIM

/**
 * struct vr_domain_status - one domain as the daemon sees it now.
 * @name:	     the libvirt domain name.
 * @uuid:	     its libvirt UUID, 36 characters.
 * @managed:	     whether vreclaimd reclaims from it.
 * @reason:	     why it is not managed ("not opted in (...)", "domain X is of type ...",
 *		     "no agent channel (...)", "invalid metadata: <error>", ...); empty when
 *		     @managed.
 * @policy:	     the name of the policy it runs; empty when none.
 * @priority:	     its priority, 0..VR_STATUS_PRIORITY_MAX.
 * @guaranteed_bytes: memory never reclaimed from it, bytes.
 * @agent_state:     the link to its guest agent.
 * @agent_version:   the agent's version (from its hello); empty if unknown.
 * @agent_backend:   the agent's reclaim backend ("damon", "memcg", ...);
 *		     empty if unknown.
 * @action:	     what is done to it right now.
 * @paused:	     whether an operator paused reclaim for it.
 * @share_bytes:     this window's share of the fleet quota, bytes.
 * @reclaimed_bytes: bytes reclaimed from it since it became managed.
 * @rss_start_bytes: the QEMU process's resident size when it became
 *		     managed, bytes.
 * @rss_bytes:	     the QEMU process's resident size now, bytes.
 * @swap_bytes:	     the QEMU process's swapped-out size now, bytes.
 * @reportable_free_bytes: the guest's free memory in blocks that free page
 *		     reporting hands to the host (its connected agent's last
 *		     stats), bytes; 0 when not known (no agent connected or no
 *		     stats yet, reporting not active, an older agent).
 * @qt_exceeds:	     how often its quota ran out (since managed).
 * @cold_bytes:	     bytes eligible as cold in its last access picture.
 * @daemon_cpu_us:   the daemon's CPU time spent on it, microseconds.
 * @last_error:	     the last thing that went wrong with it; empty if none.
 * @credit_permille: its fleet credit, per-mille (struct vr_fleet_credit):
 *		     1000 for a domain that gives back what it is granted.
 * @agent_rejected_reports: its agent's stats, pictures and replies rejected
 *		     as impossible (claims beyond the guest's memory, reclaimed
 *		     bytes beyond what the guest can reclaim in the time).
 * @agent_log_suppressed: messages about its agent that the rate limits held
 *		     back.
 * @degraded:	     whether its QEMU monitor stalls: a command ran past its
 *		     deadline and no later one was answered in time. The other
 *		     domains are served as usual meanwhile.
 * @degraded_reason: why ("the QEMU monitor did not answer query-balloon
 *		     within 2 s"); empty when not @degraded.
 */
struct vr_domain_status {
	char name[VR_DOMAIN_NAME_SIZE];
	char uuid[VR_DOMAIN_UUID_SIZE];
	gboolean managed;
	char reason[VR_DOMAIN_REASON_SIZE];
	char policy[VR_DOMAIN_POLICY_SIZE];
	guint priority;
	uint64_t guaranteed_bytes;
	enum vr_agent_state agent_state;
	char agent_version[VR_DOMAIN_AGENT_VERSION_SIZE];
	char agent_backend[VR_DOMAIN_BACKEND_SIZE];
	enum vr_domain_action action;
	gboolean paused;
	uint64_t share_bytes;
	uint64_t reclaimed_bytes;
	uint64_t rss_start_bytes;
	uint64_t rss_bytes;
	uint64_t swap_bytes;
	uint64_t reportable_free_bytes;
	uint64_t qt_exceeds;
	uint64_t cold_bytes;
	uint64_t daemon_cpu_us;
	char last_error[VR_DOMAIN_ERROR_SIZE];
	guint credit_permille;
	uint64_t agent_rejected_reports;
	uint64_t agent_log_suppressed;
	gboolean degraded;
	char degraded_reason[VR_DOMAIN_REASON_SIZE];
};

/**
 * struct vr_daemon_status - the daemon itself.
 * @version:		   vreclaimd's version.
 * @uptime_ms:		   time since it started, ms.
 * @libvirt_uri:	   the libvirt URI it manages.
 * @libvirt_connected:	   whether its libvirt connection is up.
 * @libvirt_degraded:	   whether libvirt stopped answering in time: its
 *			   requests time out; the domains vreclaimd knows are
 *			   served as usual (their QMP and agent paths do not
 *			   go through libvirtd).
 * @libvirt_degraded_reason: why ("libvirt did not answer list-domains
 *			   within 5 s"), "" when not degraded.
 * @libvirt_stalls:	   how many times libvirt stopped answering in time.
 * @host_needs_memory:	   whether the host asks for memory back now (its
 *			   watermarks are on).
 * @free_mem_rate_permille: the host's free memory rate, 0..VR_PERMILLE_MAX.
 * @host_memory_state:	   why the host needs memory or not
 *			   (vr_host_memory_state_name(): "below-low" when its
 *			   free rate fell below the low watermark and vreclaim
 *			   steps aside, "above-high", "below-mid", ...).
 * @fleet_quota_bytes:	   the fleet's reclaim quota for this window, bytes.
 * @reloads:		   configuration reloads (SIGHUP) since it started.
 * @ticks:		   policy ticks since it started.
 */
struct vr_daemon_status {
	char version[VR_DAEMON_VERSION_SIZE];
	uint64_t uptime_ms;
	char libvirt_uri[VR_DAEMON_URI_SIZE];
	gboolean libvirt_connected;
	gboolean libvirt_degraded;
	char libvirt_degraded_reason[VR_DOMAIN_REASON_SIZE];
	uint64_t libvirt_stalls;
	gboolean host_needs_memory;
	guint free_mem_rate_permille;
	char host_memory_state[VR_DAEMON_HOST_STATE_SIZE];
	uint64_t fleet_quota_bytes;
	uint64_t reloads;
	uint64_t ticks;
};

/**
 * vr_status_fn - what the control socket and the metrics exporter ask the
 * daemon for: a snapshot of every domain it knows and of itself.
 * @user:	the daemon.
 * @domains:	set to a new array of struct vr_domain_status * that owns
 *		its elements (vr_domain_status_array_new()), in the order to
 *		show them.
 * @daemon:	filled in.
 * Return: TRUE, or FALSE with @error.
 */
typedef gboolean (*vr_status_fn)(gpointer user, GPtrArray **domains,
				 struct vr_daemon_status *daemon, GError **error);

/** vr_domain_status_new() - a zeroed snapshot; free with vr_domain_status_free(). */
static inline struct vr_domain_status *vr_domain_status_new(void)
{
	return g_new0(struct vr_domain_status, 1);
}

/** vr_domain_status_free() - free a snapshot of vr_domain_status_new() (NULL is fine). */
static inline void vr_domain_status_free(struct vr_domain_status *s)
{
	g_free(s);
}

typedef struct vr_domain_status vr_domain_status;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_domain_status, vr_domain_status_free)

/** vr_domain_status_array_new() - an empty array that owns its snapshots. */
static inline GPtrArray *vr_domain_status_array_new(void)
{
	return g_ptr_array_new_with_free_func((GDestroyNotify)vr_domain_status_free);
}

/** vr_agent_state_name() - "none", "connecting", "connected", "failed"; "unknown" else. */
static inline const char *vr_agent_state_name(enum vr_agent_state state)
{
	static const char *const names[] = { "none", "connecting", "connected", "failed" };

	return (guint)state < G_N_ELEMENTS(names) ? names[state] : "unknown";
}

/** vr_agent_state_from_name() - parse an agent state name; FALSE if unknown. */
static inline gboolean vr_agent_state_from_name(const char *name, enum vr_agent_state *state)
{
	for (guint i = 0; i <= VR_AGENT_STATE_FAILED; i++)
		if (!strcmp(name, vr_agent_state_name((enum vr_agent_state)i))) {
			*state = (enum vr_agent_state)i;
			return TRUE;
		}
	return FALSE;
}

/**
 * vr_domain_action_name() - "none", "agent-reclaim", "host-pageout",
 * "balloon"; "unknown" for other values (a set of several, say).
 */
static inline const char *vr_domain_action_name(enum vr_domain_action action)
{
	switch (action) {
	case VR_DOMAIN_ACTION_NONE:
		return "none";
	case VR_DOMAIN_ACTION_AGENT_RECLAIM:
		return "agent-reclaim";
	case VR_DOMAIN_ACTION_HOST_PAGEOUT:
		return "host-pageout";
	case VR_DOMAIN_ACTION_BALLOON:
		return "balloon";
	}
	return "unknown";
}

/**
 * vr_domain_action_from_name() - parse an action's name, "none" included.
 * Return: FALSE when @name is none of vr_domain_action_name()'s.
 */
static inline gboolean vr_domain_action_from_name(const char *name, enum vr_domain_action *action)
{
	static const enum vr_domain_action all[] = { VR_DOMAIN_ACTION_NONE,
						     VR_DOMAIN_ACTION_AGENT_RECLAIM,
						     VR_DOMAIN_ACTION_HOST_PAGEOUT,
						     VR_DOMAIN_ACTION_BALLOON };

	for (guint i = 0; i < G_N_ELEMENTS(all); i++)
		if (!strcmp(name, vr_domain_action_name(all[i]))) {
			*action = all[i];
			return TRUE;
		}
	return FALSE;
}
