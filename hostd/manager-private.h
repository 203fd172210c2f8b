/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the manager's three files share (not for the rest of hostd/):
 *
 *   manager.c          the manager's life (new, start, reload, free), its
 *                      tick's order, the control socket's operations
 *   manager-domains.c  the domain lifecycle: discovery through libvirt and
 *                      --qmp, attach, commit, drop
 *   fleet-round.c      the fleet round: acquire -> decide -> act, then the
 *                      domains' state saved; what it reads of each domain's
 *                      QEMU process
 *
 * Each calls only the ones below it in this list (tests/unit/test-layout
 * finds a circle).
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "control/control.h"
#include "control/metrics.h"
#include "domain.h"
#include "host-watermarks.h"
#include "libvirt/libvirt-conn.h"
#include "manager.h"
#include "read-batch.h"

/**
 * struct vr_manager_qmp_socket - a --qmp socket: the QEMU behind it becomes a
 * domain when it answers the probe, and is tried again after a while
 * (manager-domains.c) while it does not.
 * @path:	the socket; owned.
 * @uuid:	its domain's UUID; "" when none.
 * @next_try_us: monotonic us of the next probe.
 * @last_error:	logged once per new error; owned.
 * @probe:	the monitor worker running the probe, NULL when none runs; it
 *		becomes the domain's when the probe succeeds.
 * @manager:	the manager (the probe's answer goes there).
 */
struct vr_manager_qmp_socket {
	char *path;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1];
	gint64 next_try_us;
	char *last_error;
	struct vr_monitor_worker *probe;
	struct vr_manager *manager;
};

/**
 * struct vr_manager - vreclaimd's manager.
 * @env:	the config, the proc and sys mounts, the libvirt connection,
 *		the domains by UUID and their outstanding monitor lookups:
 *		what the domains' own I/O shares (hostd/domain.h).
 * @config_path: the config file (SIGHUP reloads it); NULL: built-in
 *		defaults. Owned.
 * @qmp:	struct vr_manager_qmp_socket, one per --qmp socket; never
 *		resized after vr_manager_new() (probes keep pointers to its
 *		elements).
 * @run_dir_override, @run_dir: libvirt's QEMU state folder, as given and as
 *		used. Owned.
 * @connect_override, @control_socket_override: --connect and
 *		--control-socket, put over each config loaded; NULL when not
 *		given. Owned.
 * @listing:	a listing of libvirt's domains is outstanding (one at a time).
 * @views:	what libvirt last said of each of its domains (uuid -> struct
 *		vr_libvirt_domain *, owned): a reload applies the new config
 *		to them at once, whether libvirt answers or not.
 * @reads:	the tick's /proc reads (meminfo, PSI, each QEMU's status).
 * @meminfo_read, @psi_read: their ids in @reads.
 * @host:	the host as last acquired; valid when @host_known.
 * @host_known:	whether the last tick could read the host.
 * @host_needs_memory: whether the host needs memory (its watermarks).
 * @host_state:	why, in status and metrics.
 * @control, @metrics: the control socket and the metrics listener.
 * @tick_source: the tick's GSource id.
 * @state_cursor: the domain (by name) whose turn to save its state is next.
 * @state_dir_failed: the state folder's last error was logged.
 * @ticks:	ticks run.
 * @decided_tick, @decided_domains: the fleet's last decision: its tick and
 *		how many domains it shared the quota among.
 * @decide_now:	asks for a decision at the next tick.
 * @reloads:	successful reloads.
 * @started_us:	monotonic us it was made.
 */
struct vr_manager {
	struct vr_domain_env env;
	char *config_path;
	GArray *qmp;
	char *run_dir_override;
	char *run_dir;
	char *connect_override;
	char *control_socket_override;
	gboolean listing;
	GHashTable *views;
	struct vr_read_batch *reads;
	guint meminfo_read;
	guint psi_read;
	struct vr_host_snapshot host;
	gboolean host_known;
	gboolean host_needs_memory;
	enum vr_host_memory_state host_state;
	struct vr_control_server *control;
	struct vr_metrics_server *metrics;
	guint tick_source;
	guint state_cursor;
	gboolean state_dir_failed;
	uint64_t ticks;
	uint64_t decided_tick;
	guint decided_domains;
	gboolean decide_now;
	uint64_t reloads;
	gint64 started_us;
};

/**
 * struct vr_manager_lv_call - what a libvirt request of the manager carries to
 * its answer: the domain is found again by @uuid (it may have gone
 * meanwhile).
 * @m:		the manager (it outlives its libvirt connection).
 * @uuid:	the domain's.
 * @change:	for a domain event: what happened.
 * @call:	for vreclaimctl set: the control client's call, answered
 *		once (NULL then).
 * @settings:	for vreclaimctl set: what to apply.
 */
struct vr_manager_lv_call {
	struct vr_manager *m;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1];
	enum vr_libvirt_change change;
	struct vr_control_call *call;
	char **settings;
};

/* ---- manager-domains.c: the domain lifecycle ------------------------------ */

/** vr_manager_lv_call_new() - a call for domain @uuid. Return: owned. */
struct vr_manager_lv_call *vr_manager_lv_call_new(struct vr_manager *m, const char *uuid);

/**
 * vr_manager_lv_call_free() - free a struct vr_manager_lv_call; a control
 * call it still holds is answered with an error (libvirt let it go).
 */
void vr_manager_lv_call_free(gpointer data);

/**
 * vr_manager_libvirt_ops - the libvirt connection's callbacks: a listing on
 * connect, a domain read again on each event.
 */
extern const struct vr_libvirt_ops vr_manager_libvirt_ops;

/**
 * vr_manager_commit_domain() - make @d managed with @tuning (owned) and @info
 * (moved out) when its action and policy are valid; otherwise unmanaged with
 * the reason. Nothing is half-applied.
 */
void vr_manager_commit_domain(struct vr_manager *m, struct vr_domain *d,
			      struct vr_domain_tuning *tuning, struct vr_domain_info *info);

/**
 * vr_manager_refresh_domain() - bring libvirt domain @ld's state up to date
 * (found on first sight): managed or why not, tuning, policy, agent session.
 */
void vr_manager_refresh_domain(struct vr_manager *m, const struct vr_libvirt_domain *ld);

/**
 * vr_manager_refresh_all() - list every running domain again on libvirt's
 * thread; one listing at a time.
 */
void vr_manager_refresh_all(struct vr_manager *m);

/**
 * vr_manager_drop_domain() - let @d go (logged with @why): its status read,
 * its libvirt view and its state file go with it. @d is freed.
 */
void vr_manager_drop_domain(struct vr_manager *m, struct vr_domain *d, const char *why);

/**
 * vr_manager_attach_qmp_all() - drop --qmp domains whose QEMU exited, and
 * probe the --qmp sockets without a domain (nor a probe running) whose time
 * has come.
 */
void vr_manager_attach_qmp_all(struct vr_manager *m);

/* ---- fleet-round.c: the fleet round --------------------------------------- */

/**
 * vr_fleet_round_watch() - read @d's QEMU process @pid's status in the tick
 * (its resident size); the first time its QEMU is known, its saved state is
 * restored (hostd/state-dir.h).
 */
void vr_fleet_round_watch(struct vr_manager *m, struct vr_domain *d, pid_t pid);

/**
 * vr_fleet_round_watch_pid() - vr_fleet_round_watch() of a libvirt domain's
 * QEMU process, from libvirt's pid file; a --qmp domain is left as it is.
 */
void vr_fleet_round_watch_pid(struct vr_manager *m, struct vr_domain *d);

/**
 * vr_fleet_round_acquire() - the round's acquire step over @doms (the managed
 * domains, by name): the host's memory and pressure, each domain's QEMU
 * status in turn. --qmp domains whose QEMU process is gone are added to
 * @gone (the caller drops them). Return: the status period, ticks (each
 * domain's status is read once per period).
 */
guint vr_fleet_round_acquire(struct vr_manager *m, GPtrArray *doms, GPtrArray *gone);

/**
 * vr_fleet_round_acquire_pictures() - the rest of the acquire step, once the
 * domains whose QEMU is gone are dropped from @doms: each domain's action
 * reads its access picture for this tick, or asks its agent for one
 * (struct vr_action_ops @acquire).
 */
void vr_fleet_round_acquire_pictures(struct vr_manager *m, GPtrArray *doms);

/**
 * vr_fleet_round_decide() - the round's decide step: whether the host needs
 * memory, and, when due (once per @status_period ticks, or at once when the
 * host's need changed, a domain came or went, or vreclaimctl asked), each
 * domain's offer, credit and share of the fleet quota.
 */
void vr_fleet_round_decide(struct vr_manager *m, GPtrArray *doms, guint status_period);

/**
 * vr_fleet_round_act() - the round's act step: each domain's action, one
 * window (struct vr_action_ops @act), its CPU time counted.
 */
void vr_fleet_round_act(struct vr_manager *m, GPtrArray *doms);

/**
 * vr_fleet_round_save_states() - write the state files of @doms that changed
 * (vr_domain_state_needs_save()): a pause or resume at once, the others in
 * turn, a few per tick. @force (a clean exit): every one that differs.
 */
void vr_fleet_round_save_states(struct vr_manager *m, GPtrArray *doms, gboolean force);
