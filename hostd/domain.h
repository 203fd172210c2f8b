/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One domain as vreclaimd knows it: what libvirt says of it (live XML,
 * metadata), whether it is managed and why not, its tuning and policy, its
 * agent session, the last access picture and stats from the agent, and what
 * vreclaimd has done to it.
 *
 * A domain's state is kept by UUID while its QEMU runs, across reconnects to
 * libvirt: only a stop (or a vanished QEMU) drops it.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "actions/host-pageout.h"
#include "agent/agent-session.h"
#include "config.h"
#include "domain-state.h"
#include "domain-status.h"
#include "fleet-credit.h"
#include "fleet-quota.h"
#include "guest-bounds.h"
#include "libvirt/domain-xml.h"
#include "libvirt/libvirt-conn.h"
#include "policy.h"
#include "protocol.h"
#include "qmp/monitor-worker.h"
#include "qmp/qemu-monitor.h"
#include "ratelimit.h"
#include "sources/access-source.h"

struct vr_action_ops;

#define VR_DOMAIN_ERROR (vr_domain_error_quark())
GQuark vr_domain_error_quark(void);

/**
 * enum vr_domain_error - errors of a domain's own I/O and of its actions
 * (VR_DOMAIN_ERROR).
 * @VR_DOMAIN_ERROR_UNSUPPORTED: a domain's action cannot run on this host or
 *				 this QEMU (the message says why).
 * @VR_DOMAIN_ERROR_NOT_LIBVIRT: a request for libvirt while vreclaimd has
 *				 no libvirt connection.
 */
enum vr_domain_error {
	VR_DOMAIN_ERROR_UNSUPPORTED,
	VR_DOMAIN_ERROR_NOT_LIBVIRT,
};

/* Time allowed for an agent's get-regions, set-policy, pause or resume when
 * the config does not say, ms. */
#define VR_DOMAIN_AGENT_TIMEOUT_MS 5000

/* Time QEMU has to answer each QMP command, ms, through our own client
 * (--qmp) and libvirt's passthrough alike: QMP queries answer in
 * milliseconds. A command past it marks the domain degraded; the command
 * runs on the domain's monitor worker, so the main loop never waits for it
 * (monitor-worker.h). */
#define VR_DOMAIN_QMP_TIMEOUT_MS 2000

/**
 * struct vr_domain_env - what the domains' own I/O shares (their agent
 * calls, their QEMU monitors, the host-pageout action's access source).
 * Owned by the manager, which outlives every domain and keeps it up to date
 * (a reload replaces @config and @lv).
 * @domains:	the domains by UUID (uuid -> struct vr_domain *, owned): an
 *		answer that comes after its domain was dropped finds it gone.
 * @lookups:	UUIDs (owned) whose libvirt lookup for the QEMU monitor is
 *		outstanding: one at a time per domain.
 * @lv:		the libvirt connection; NULL before it is made.
 * @config:	the daemon's config (the agent's deadline, the host's access
 *		source); owned by the manager.
 * @procfs:	the proc mount ("/proc"); owned.
 * @sysfs:	the sysfs mount ("/sys"); owned.
 */
struct vr_domain_env {
	GHashTable *domains;
	GHashTable *lookups;
	struct vr_libvirt *lv;
	struct vr_daemon_config *config;
	char *procfs;
	char *sysfs;
};

/**
 * vr_thread_cpu_us() - the calling thread's CPU time, us: what the daemon
 * spends per domain.
 */
static inline uint64_t vr_thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * G_USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

/**
 * struct vr_domain_hist - a domain's cold histogram of its agent's picture
 * under its pageout scheme (vr_fleet_cold_histogram()), kept while neither
 * changes: pictures come every few ticks (pictures-per-tick), the decide
 * step runs every tick.
 * @valid:		whether @bytes is of the inputs below.
 * @picture_serial:	the picture's (vr_access_source_agent_picture_serial()).
 * @policy_generation:	the policy's (struct vr_domain @policy_generation).
 * @memory_bytes:	the guest's memory it was checked against, bytes.
 * @regions:		the picture's regions, for the log.
 * @bytes:		bytes per cold score, VR_MAX_SCORE + 1, before the
 *			used fraction and the RSS bound are applied.
 */
struct vr_domain_hist {
	gboolean valid;
	uint64_t picture_serial;
	guint policy_generation;
	uint64_t memory_bytes;
	guint regions;
	uint64_t bytes[VR_MAX_SCORE + 1];
};

/**
 * struct vr_domain - vreclaimd's state for one running domain.
 * @name, @uuid:	identity (name may change on rename; uuid does not).
 * @managed:		whether vreclaimd acts on it.
 * @reason:		why it is not managed (NULL when managed); owned.
 * @info:		what the live XML says (memory, agent channel, balloon).
 * @tuning:		its metadata, parsed (defaults when it has none and the
 *			daemon manages all domains); NULL when unmanaged.
 * @policy:		the policy its agent runs (the tuning's policy file or
 *			the default profile, with the tuning's overrides);
 *			NULL when unmanaged.
 * @policy_name:	"default" or the tuning's policy name; owned.
 * @policy_generation:	bumped each time @policy changes, so the agent gets
 *			the new one.
 * @pid:		its QEMU process (0 when unknown).
 * @session:		the session with its agent; NULL without a channel.
 * @qmp_path:		for a QEMU given by --qmp: its QMP socket; NULL for a
 *			libvirt domain. Owned.
 * @monitor:		the worker of its QEMU monitor (own QMP client
 *			for a --qmp QEMU, libvirt's for a libvirt domain):
 *			every QMP command runs there, never on the main loop;
 *			its stall makes the domain degraded. NULL until
 *			needed. Owned.
 * @action:		what vreclaimd does to it: chosen when it becomes
 *			managed from its allowed actions and what it has
 *			(agent-reclaim when it has an agent channel, else the
 *			balloon when it has one, else host-pageout when this
 *			host has an access source).
 * @balloon_actual_bytes, @balloon_target_bytes: the balloon as last queried
 *			and last set (0: not yet).
 * @host_reclaim:	the host-pageout action's state (its access source, RAM
 *			map and pidfd); NULL for other actions. Owned.
 * @source:		where its access picture comes from (the "agent" source
 *			over @session); NULL when unmanaged. Freed before
 *			@session.
 * @stats, @has_stats:	the agent's last stats (report or get-stats).
 * @reclaimed_bytes:	bytes reclaimed from the domain since vreclaimd
 *			started managing it: what its agent's policy reclaimed
 *			(vr_domain_account_stats(), summed across agent
 *			restarts, within @reclaim_bound), what the balloon
 *			took and what host-pageout advised out. Saturates at
 *			UINT64_MAX.
 * @reclaim_bound:	what its agent can have reclaimed by now (struct
 *			vr_reclaim_bound): a larger claim is rejected.
 * @rejected_reports:	what its guest sent that the daemon rejected
 *			(vr_domain_reject()): agent stats whose reclaimed
 *			bytes broke @reclaim_bound (not counted), pictures the
 *			fleet refused.
 * @reject_log:		the rate limit of the warnings about them.
 * @credit:		its fleet credit (struct vr_fleet_credit): the RSS it
 *			released per share its agent used and per reclaim it
 *			claimed. Judged for agent-reclaim
 *			only (the other actions are the host's own doing);
 *			full otherwise.
 * @rss_start_bytes, @rss_bytes, @swap_bytes: the QEMU process's resident size
 *			when first seen and now, and its swapped bytes.
 * @cold_bytes:		eligible cold bytes in the last picture.
 * @hist:		its last picture's cold histogram, kept until the
 *			next picture.
 * @offer_hold:		the largest offer of its recent pictures
 *			(struct vr_fleet_offer_hold): what the fleet asks of it.
 * @share_bytes:	its share of the fleet quota this window.
 * @policy_sent:	whether the agent runs a policy vreclaimd sent (since
 *			its session came up).
 * @sent_share_bytes:	the quota size of that policy (0: monitoring only).
 * @sent_generation:	@policy_generation of that policy.
 * @hist_sent_generation: @policy_generation of the histogram policy last
 *			sent with a set-policy (agents with the
 *			"cold-histogram" capability), 0 for none.
 * @sent_us:		monotonic time the last policy was sent.
 * @sent_report_interval_ms: the report interval sent with it, ms.
 * @agent_resync:	its agent restarted on the same connection (the guest
 *			rebooted): the next tick sends it the policy and the
 *			pause state again.
 * @agent_paused:	whether the agent is (or was last told to be) paused;
 *			an agent that comes up counts as paused until resumed.
 * @user_paused:	paused by `vreclaimctl pause`.
 * @cpu_us:		the daemon's CPU time spent on this domain.
 * @qemu, @qemu_known:	its QEMU process for good (pid and start time): what
 *			its saved state (hostd/state-dir.h) is bound to.
 * @window:		its last window of the fleet quota (when it began, the
 *			share held, what host-pageout took in it).
 * @window_hold_until_us: monotonic us until which a share restored from the
 *			previous vreclaimd's window holds: no new policy with
 *			a share goes to the agent before (it may still spend
 *			that window); 0: none.
 * @restored:		whether its state was restored from the state folder.
 * @has_stats_base, @stats_base: the agent's counters as the previous
 *			vreclaimd last saw them (restored): the first stats
 *			count from there, or whole when the agent restarted
 *			meanwhile (vr_agent_stats_went_back()).
 * @state_saved:	its state as last written to its file, NULL before the
 *			first write; owned.
 * @state_saved_us:	when that was, monotonic us.
 * @last_error:		the last thing that went wrong; owned.
 * @last_error_is_wait:	@last_error is a wait (vr_domain_wait()), not a
 *			failure: vr_domain_end_wait() clears it.
 */
struct vr_domain {
	char *name;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1];
	gboolean managed;
	char *reason;
	struct vr_domain_info info;
	struct vr_domain_tuning *tuning;
	struct vr_policy *policy;
	char *policy_name;
	guint policy_generation;
	pid_t pid;
	struct vr_agent_session *session;
	char *qmp_path;
	struct vr_monitor_worker *monitor;
	enum vr_domain_action action;
	uint64_t balloon_actual_bytes;
	uint64_t balloon_target_bytes;
	struct vr_host_reclaim *host_reclaim;
	struct vr_access_source *source;
	struct vr_agent_stats stats;
	gboolean has_stats;
	uint64_t reclaimed_bytes;
	struct vr_reclaim_bound reclaim_bound;
	uint64_t rejected_reports;
	struct vr_ratelimit reject_log;
	struct vr_fleet_credit credit;
	uint64_t rss_start_bytes;
	uint64_t rss_bytes;
	uint64_t swap_bytes;
	uint64_t cold_bytes;
	struct vr_domain_hist hist;
	struct vr_fleet_offer_hold offer_hold;
	uint64_t share_bytes;
	gboolean policy_sent;
	uint64_t sent_share_bytes;
	gint64 sent_us;
	uint64_t sent_report_interval_ms;
	guint sent_generation;
	guint hist_sent_generation;
	gboolean agent_resync;
	gboolean agent_paused;
	gboolean agent_pause_pending;
	gboolean user_paused;
	uint64_t cpu_us;
	struct vr_qemu_incarnation qemu;
	gboolean qemu_known;
	struct vr_share_window window;
	int64_t window_hold_until_us;
	gboolean restored;
	gboolean has_stats_base;
	struct vr_agent_stats stats_base;
	struct vr_domain_state *state_saved;
	int64_t state_saved_us;
	char *last_error;
	gboolean last_error_is_wait;
	/* private: */
	guint status_read; /* read-batch id of /proc/PID/status, 0 = none */
	gboolean status_read_set;
	/* what its I/O shares with the other domains (the session and monitor
	 * callbacks find it again there); NULL until the manager sets it */
	struct vr_domain_env *env;
	/* its action's operations (actions/action.h), NULL for none: set with
	 * @action (vr_domain_set_action()) */
	const struct vr_action_ops *action_ops;
};

typedef struct vr_domain vr_domain;

/** vr_domain_new() - a domain not yet managed. Return: owned. */
struct vr_domain *vr_domain_new(const char *uuid, const char *name);
void vr_domain_free(struct vr_domain *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_domain, vr_domain_free)

/**
 * vr_domain_set_unmanaged() - mark @d unmanaged because of @reason (printf
 * format): drops its tuning, policy, session and picture.
 */
void vr_domain_set_unmanaged(struct vr_domain *d, const char *reason, ...) G_GNUC_PRINTF(2, 3);

/**
 * vr_domain_set_action() - @d's action becomes @ops's (NULL: none). The state
 * the previous action kept on @d (its host-pageout reclaim, its agent's
 * access source, its balloon target) is dropped when the action changes.
 */
void vr_domain_set_action(struct vr_domain *d, const struct vr_action_ops *ops);

/** vr_domain_set_error() - remember @message as @d's last error. */
void vr_domain_set_error(struct vr_domain *d, const char *message);

/**
 * vr_domain_wait() - remember @why as @d's last error, as a wait: what the
 * domain waits for (e.g. vr_host_swap_full_reason()), which goes away by
 * itself. vr_domain_end_wait() clears it; a later vr_domain_set_error()
 * replaces it.
 */
void vr_domain_wait(struct vr_domain *d, const char *why);

/**
 * vr_domain_end_wait() - the domain no longer waits: clear its last error
 * when it is a wait (vr_domain_wait()); an error stays.
 */
void vr_domain_end_wait(struct vr_domain *d);

/**
 * vr_domain_wait_for_swap() - @d's host-pageout waits on the host's swap
 * (@full: vr_domain_wait() with vr_host_swap_full_reason() of @host) or no
 * longer does (vr_domain_end_wait()). The decision's check of the swap and a
 * step's result both say it through this.
 */
void vr_domain_wait_for_swap(struct vr_domain *d, const struct vr_host_snapshot *host,
			     gboolean full);

/**
 * vr_domain_account_host_pageout() - account one host-pageout step of @d:
 * @res from vr_host_reclaim_step_in_swap() (whether it succeeded or not),
 * @host the snapshot it was given.
 *
 * The window is charged and the reclaimed total raised by @res's
 * advised_bytes: resident bytes only (pages already in swap are never
 * advised), so what is counted left memory when the step ran. With
 * swap_full, @d waits with vr_host_swap_full_reason() of @host; otherwise
 * that wait ends (the swap has room again). The caller sets the step's
 * error, if any, after this.
 */
void vr_domain_account_host_pageout(struct vr_domain *d, const struct vr_host_reclaim_result *res,
				    const struct vr_host_snapshot *host);

/**
 * vr_domain_tuning_default() - the tuning of a domain without metadata that
 * @config manages: enabled, the default policy, @config's default priority
 * and actions. Return: owned.
 */
struct vr_domain_tuning *vr_domain_tuning_default(const struct vr_daemon_config *config);

/**
 * vr_domain_tuning_for() - the tuning @ld asks for under @config: its
 * metadata parsed, or the defaults when it has none and @config manages all
 * domains. Return: owned tuning; NULL with *@reason (owned) when the domain
 * stays unmanaged (no metadata and opt-in, enable=no, invalid metadata).
 */
struct vr_domain_tuning *vr_domain_tuning_for(const struct vr_libvirt_domain *ld,
					      const struct vr_daemon_config *config, char **reason);

/**
 * vr_domain_policy_for() - the policy @tuning asks for: its policy file from
 * @config's policy folder (or the default profile) with its overrides.
 * Return: owned, or NULL with @error naming the file or the override.
 */
struct vr_policy *vr_domain_policy_for(const struct vr_domain_tuning *tuning,
				       const struct vr_daemon_config *config, GError **error);

/**
 * vr_domain_agent_policy() - the policy to send to @d's agent: @d->policy
 * with every pageout scheme's size quota cut to @share_bytes per
 * @reset_interval_ms window (a scheme's own smaller quota stays). With a
 * share of 0 the pageout schemes select nothing (their minimum age becomes
 * their maximum, "forever"): the agent keeps monitoring, which gives the
 * access picture the fleet decides from, and keeps its counters (the
 * schemes stay where they are), but reclaims nothing. Return: owned.
 */
struct vr_policy *vr_domain_agent_policy(const struct vr_domain *d, uint64_t share_bytes,
					 uint64_t reset_interval_ms);

/**
 * vr_domain_account_stats() - take the agent's new @stats into @d's totals
 * (@restarted: the agent's counters started over). What the domain gave is
 * what its agent's policy reclaimed: the schemes' sz_applied plus the swap
 * cache their pageouts left and the agent freed (swap_cache_release_bytes),
 * not the guest's whole vmstat count, which its own kswapd feeds too.
 */
void vr_domain_account_stats(struct vr_domain *d, const struct vr_agent_stats *stats,
			     gboolean restarted);

/*
 * Messages about one domain's rejected agent stats: at most this many per
 * VR_DOMAIN_REJECT_LOG_INTERVAL_US (a lying agent reports up to 50 times a
 * second; the rest are counted, and the next message says how many).
 */
#define VR_DOMAIN_REJECT_LOG_BURST	 1
#define VR_DOMAIN_REJECT_LOG_INTERVAL_US (10 * G_USEC_PER_SEC)

/**
 * vr_domain_reject() - @d's guest sent something impossible (@message says
 * what, one sentence): count it in @d->rejected_reports and warn, at most
 * VR_DOMAIN_REJECT_LOG_BURST times per VR_DOMAIN_REJECT_LOG_INTERVAL_US
 * (the next warning says how many were not logged).
 * @now_us:	monotonic time, us.
 */
void vr_domain_reject(struct vr_domain *d, int64_t now_us, const char *message);

/**
 * vr_domain_account_stats_at() - vr_domain_account_stats() at monotonic
 * time @now_us, us.
 *
 * The bytes the new @stats add (the increase of the policy's reclaimed
 * bytes since the last stats, or all of them for a restarted agent) must
 * pass @d->reclaim_bound for a guest of @d->info.memory_bytes: at most the
 * guest's memory at once, at most vr_guest_max_reclaim_rate() over time.
 * Stats that break it are rejected: their increase is not counted (the
 * total stays), @d->rejected_reports counts them, a rate-limited warning
 * names the numbers. Their other members (free memory, ...) are taken, and
 * their counters are the base of the next increase, so an agent that lied
 * once counts again from its next truthful report. The total saturates at
 * UINT64_MAX instead of wrapping.
 *
 * Return: FALSE when the stats were rejected.
 */
gboolean vr_domain_account_stats_at(struct vr_domain *d, const struct vr_agent_stats *stats,
				    gboolean restarted, int64_t now_us);

/**
 * vr_domain_add_reclaimed() - add @bytes the host reclaimed from @d itself
 * (the balloon, host-pageout) to @d->reclaimed_bytes, saturating.
 */
void vr_domain_add_reclaimed(struct vr_domain *d, uint64_t bytes);

/**
 * vr_domain_update_credit() - @d's fleet credit after this tick's
 * observation (vr_fleet_credit_update()): its RSS now (@d->rss_bytes), the
 * share it held since the last tick (@d->share_bytes, bytes per
 * @share_window_us) and its agent's counters (@d->stats, while its session
 * is up and it sent stats). Call it before the new shares are written. Logs
 * when a judgement changes the credit. A domain whose action is not agent-reclaim
 * is not judged: its credit is (set back to) full.
 * @now_us:	monotonic time, us.
 *
 * Return: the credit, per-mille (for struct vr_fleet_domain).
 */
uint32_t vr_domain_update_credit(struct vr_domain *d, int64_t now_us, uint64_t share_window_us);

/**
 * vr_domain_acting() - whether @d's action takes memory from it now: its
 * agent runs a share, its balloon holds memory, or the host pages it out
 * this window.
 */
gboolean vr_domain_acting(const struct vr_domain *d);

/**
 * vr_domain_state_fill() - what of @d survives a restart of vreclaimd
 * (struct vr_domain_state), bound to @d->qemu (which must be known).
 */
void vr_domain_state_fill(const struct vr_domain *d, struct vr_domain_state *out);

/**
 * vr_domain_state_apply() - take the saved @st (checked against @d's uuid and
 * QEMU process by the caller, vr_domain_state_check()) into @d: its
 * statistics continue (reclaimed bytes, rejected reports, the resident size
 * when first taken), its pause and fleet credit hold, its agent's counters
 * become the base of the next stats, and a quota window of the previous
 * vreclaimd still open at @now_us (monotonic us; windows are @window_len_us)
 * holds @d->window_hold_until_us: the restarted daemon does not hand the
 * domain a fresh share in a window already granted.
 */
void vr_domain_state_apply(struct vr_domain *d, const struct vr_domain_state *st,
			   uint64_t window_len_us, int64_t now_us);

/**
 * vr_domain_fill_status() - @d as vreclaimctl status shows it.
 */
void vr_domain_fill_status(const struct vr_domain *d, struct vr_domain_status *out);

/**
 * vr_domain_agent_timeout_ms() - the time @d's agent has to answer a call,
 * ms: the config's agent-timeout-ms, or VR_DOMAIN_AGENT_TIMEOUT_MS.
 */
guint vr_domain_agent_timeout_ms(const struct vr_domain *d);

/**
 * vr_domain_open_session() - open the session with @d's agent at
 * @d->info.agent_socket_path into @d->session, its callbacks keeping @d's
 * stats and pause state. Return: FALSE with @error when it cannot be made.
 */
gboolean vr_domain_open_session(struct vr_domain *d, GError **error);

/**
 * vr_domain_agent_call() - send @req (its contents are taken) to @d's agent,
 * without waiting: the answer is applied to @d when it comes (stats taken, a
 * failure remembered as @d's last error; a set-policy that failed is sent
 * again next tick), found again by its UUID in @d->env (it may have been
 * dropped meanwhile). A call that cannot be sent is @d's last error.
 * @share_bytes: for a set-policy, the share its policy carries (logged).
 */
void vr_domain_agent_call(struct vr_domain *d, struct vr_proto_request *req, uint64_t share_bytes);

/**
 * vr_domain_agent_set_paused() - pause (@pause) or resume @d's agent, unless
 * it is so already, a pause or resume is under way, or its session is down.
 */
void vr_domain_agent_set_paused(struct vr_domain *d, gboolean pause);

/**
 * vr_domain_monitor() - @d's QEMU monitor worker (@d->monitor), made on first
 * use: a --qmp QEMU has one from its probe; a libvirt domain's monitor goes
 * through libvirt's passthrough, with VR_DOMAIN_QMP_TIMEOUT_MS as our own
 * client. Its domain is looked up on libvirt's thread. Return: TRUE when
 * @d->monitor is there; FALSE without @error while the lookup is outstanding
 * (the next window uses it), FALSE with @error without a libvirt connection.
 */
gboolean vr_domain_monitor(struct vr_domain *d, GError **error);

/**
 * vr_domain_monitor_failed() - after a monitor job of @d failed with @error:
 * a libvirt monitor whose libvirt failed is made again next time (it holds
 * its domain reference on the connection of its day, which a reconnect to
 * libvirtd replaced).
 */
void vr_domain_monitor_failed(struct vr_domain *d, const GError *error);

/**
 * vr_domain_hold_offer() - @d's offer this window under its pageout scheme
 * @s: @fd's histogram (bytes per cold score), or the larger one @d showed
 * within the hold (struct vr_fleet_offer_hold says why a DAMON picture alone
 * would not do), written back into @fd->hist_bytes.
 */
void vr_domain_hold_offer(struct vr_domain *d, const struct vr_scheme *s,
			  struct vr_fleet_domain *fd);
