/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What vreclaimd keeps of a domain across its own restarts (issue 16): one
 * small versioned key file per domain in its state folder, named by the
 * domain's UUID and bound to one QEMU process (its pid and start time), so a
 * restarted QEMU starts afresh while a restarted vreclaimd carries on.
 *
 * Pure: text in, struct out and back, and the checks; no I/O, no clock (the
 * reading and the atomic write are hostd/state-dir.c's). A file that does
 * not parse, or parses to another domain or another QEMU, is refused as a
 * whole: nothing of it is applied.
 *
 *   [domain-state]
 *   version=1
 *   uuid=...                    the domain's (the file's name too)
 *   name=...                    for the operator; not checked
 *   qemu-pid=1234               the QEMU process the statistics are of
 *   qemu-start-time-us=5678     its start time (/proc/PID/stat field 22)
 *   reclaimed-bytes=...         status' reclaimed_bytes
 *   rejected-reports=...
 *   rss-start-bytes=...         its resident size when first taken
 *   paused=false                vreclaimctl pause
 *   credit-permille=1000        its fleet credit now
 *   trust-permille=1000         what its judgements made of it (the credit
 *                               but while idle); the credit's windows and
 *                               counts of judgements start afresh
 *   agent-uptime-ms=...         the agent's last stats: the base the next
 *   agent-sz-applied-bytes=...  stats are counted from (an agent that
 *   agent-swap-cache-release-bytes=...  restarted meanwhile counts whole)
 *   window-start-us=...         the last fleet window it held a share in
 *   window-share-bytes=...      (monotonic time: this boot's, as the QEMU)
 *   window-charged-bytes=...    what host-pageout took in it
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* The format's version: a file of another version is refused (logged). */
#define VR_DOMAIN_STATE_VERSION 1

/* The key file's group. */
#define VR_DOMAIN_STATE_GROUP "domain-state"

/* A state file is at most this long, bytes (a valid one is ~700). */
#define VR_DOMAIN_STATE_MAX_BYTES 4096

#define VR_DOMAIN_STATE_ERROR (vr_domain_state_error_quark())
GQuark vr_domain_state_error_quark(void);

/**
 * enum vr_domain_state_error - errors in the VR_DOMAIN_STATE_ERROR domain.
 * @VR_DOMAIN_STATE_ERROR_INVALID:	the text is not a state file of this
 *					version (the message names the key).
 * @VR_DOMAIN_STATE_ERROR_FOREIGN:	a valid file of another domain.
 * @VR_DOMAIN_STATE_ERROR_STALE:	a valid file of another QEMU process of
 *					the domain (restarted since).
 */
enum vr_domain_state_error {
	VR_DOMAIN_STATE_ERROR_INVALID,
	VR_DOMAIN_STATE_ERROR_FOREIGN,
	VR_DOMAIN_STATE_ERROR_STALE,
};

/**
 * struct vr_qemu_incarnation - one QEMU process, for good: a pid is reused,
 * a pid with its start time is not (within a boot).
 * @pid:		the process id, > 0.
 * @start_time_us:	its start time, us after boot (/proc/PID/stat).
 */
struct vr_qemu_incarnation {
	int32_t pid;
	uint64_t start_time_us;
};

/**
 * struct vr_share_window - a domain's last window of the fleet quota: when
 * it began, the share it held, what the host itself took in it
 * (host-pageout). One window is quota-reset-interval-ms long and begins at
 * the first tick that grants a share after the last one ended (as a DAMOS
 * quota window begins at its first action).
 * @start_us:		its start, monotonic us; 0: none yet.
 * @share_bytes:	the share held in it, bytes (the largest, if it changed).
 * @charged_bytes:	bytes the host paged out in it itself (host-pageout).
 */
struct vr_share_window {
	int64_t start_us;
	uint64_t share_bytes;
	uint64_t charged_bytes;
};

/**
 * struct vr_domain_state - a domain's state as saved (see the file comment
 * for each member's key).
 * @uuid:	the domain's UUID, 36 characters.
 * @name:	its name when saved, at most 200 bytes of UTF-8.
 * @qemu:	the QEMU process the rest is of.
 * @reclaimed_bytes, @rejected_reports, @rss_start_bytes: statistics.
 * @paused:	paused by vreclaimctl.
 * @credit_permille: its fleet credit, 125..1000.
 * @trust_permille: its fleet credit's trust (struct vr_fleet_credit),
 *		125..1000: the credit it gets back when no longer idle.
 * @agent_uptime_ms, @agent_sz_applied_bytes,
 * @agent_swap_cache_release_bytes: its agent's last stats (0 with none).
 * @window:	its last window of the fleet quota.
 */
struct vr_domain_state {
	char uuid[37];
	char name[201];
	struct vr_qemu_incarnation qemu;
	uint64_t reclaimed_bytes;
	uint64_t rejected_reports;
	uint64_t rss_start_bytes;
	bool paused;
	uint32_t credit_permille;
	uint32_t trust_permille;
	uint64_t agent_uptime_ms;
	uint64_t agent_sz_applied_bytes;
	uint64_t agent_swap_cache_release_bytes;
	struct vr_share_window window;
};

/**
 * vr_domain_state_to_text() - @st as a state file. Return: owned text.
 */
char *vr_domain_state_to_text(const struct vr_domain_state *st);

/**
 * vr_domain_state_parse() - read a state file's @text of @len bytes.
 * Strict: the group and every key above exactly once, no other group or key,
 * version VR_DOMAIN_STATE_VERSION, a lowercase UUID, decimal numbers in
 * their range (a pid > 0, a credit of 125..1000, true or false), at most
 * VR_DOMAIN_STATE_MAX_BYTES. @out is written only on success.
 * Return: FALSE with VR_DOMAIN_STATE_ERROR_INVALID naming the key otherwise.
 */
gboolean vr_domain_state_parse(const char *text, gsize len, struct vr_domain_state *out,
			       GError **error);

/**
 * vr_domain_state_check() - may @st be applied to domain @uuid whose QEMU is
 * @qemu now? Return: FALSE with VR_DOMAIN_STATE_ERROR_FOREIGN (another
 * UUID) or _STALE (another pid or start time: a new QEMU starts afresh).
 */
gboolean vr_domain_state_check(const struct vr_domain_state *st, const char *uuid,
			       const struct vr_qemu_incarnation *qemu, GError **error);

/* A domain's file is written again at most this often, us: 5 s. */
#define VR_DOMAIN_STATE_SAVE_PERIOD_US (5LL * 1000 * 1000)

/*
 * A change of the agent's uptime alone is written at most this often, us:
 * 60 s. Every report moves it, so it would otherwise rewrite every domain's
 * file every save (at 1000 idle domains, 200 files created and renamed a
 * second, a third of vreclaimd's CPU). The uptime is only the base a
 * restarted vreclaimd tells an agent's restart by (its uptime went back),
 * and the counters that do count (sz_applied, the reclaimed bytes) are
 * written with the next save.
 */
#define VR_DOMAIN_STATE_UPTIME_PERIOD_US (60LL * 1000 * 1000)

/**
 * enum vr_domain_state_save - whether a domain's state file is written now.
 * @VR_DOMAIN_STATE_SAVE_NO:	 not now: nothing changed, or not for long
 *				 enough.
 * @VR_DOMAIN_STATE_SAVE_IN_TURN: when the daemon's writes per tick allow
 *				 (a large fleet writes its files in turn).
 * @VR_DOMAIN_STATE_SAVE_NOW:	 at once, whatever the others: a vreclaimctl
 *				 pause or resume, which an operator expects to
 *				 survive a restart right away.
 */
enum vr_domain_state_save {
	VR_DOMAIN_STATE_SAVE_NO,
	VR_DOMAIN_STATE_SAVE_IN_TURN,
	VR_DOMAIN_STATE_SAVE_NOW,
};

/**
 * vr_domain_state_needs_save() - should @now be written over the file that
 * holds @saved, written @age_us ago?
 * @saved:	the state as last written; NULL when none was.
 * @now:	the state now.
 * @age_us:	the time since @saved was written, us.
 *
 * Return: VR_DOMAIN_STATE_SAVE_NOW when the pause changed;
 * VR_DOMAIN_STATE_SAVE_IN_TURN when there is no @saved, when @now differs
 * from it in anything else but the agent's uptime and @age_us is at least
 * VR_DOMAIN_STATE_SAVE_PERIOD_US, or only in the uptime and @age_us is at
 * least VR_DOMAIN_STATE_UPTIME_PERIOD_US; VR_DOMAIN_STATE_SAVE_NO otherwise
 * (equal states included). Pure.
 */
enum vr_domain_state_save vr_domain_state_needs_save(const struct vr_domain_state *saved,
						     const struct vr_domain_state *now,
						     int64_t age_us);

/**
 * vr_share_window_roll() - start a new window at @now_us (monotonic us)
 * holding @share_bytes when @w's window has ended (@len_us after it began,
 * or none yet) and @share_bytes > 0; within a window a larger share raises
 * @w->share_bytes. A share of 0 starts nothing.
 * Return: TRUE when a new window began.
 */
bool vr_share_window_roll(struct vr_share_window *w, uint64_t share_bytes, int64_t now_us,
			  uint64_t len_us);

/**
 * vr_share_window_open() - whether @w's window still runs at @now_us with a
 * share: it began, held a share > 0, and @len_us have not passed. A clock
 * before its start (another boot's numbers) reads as ended.
 */
bool vr_share_window_open(const struct vr_share_window *w, int64_t now_us, uint64_t len_us);

/**
 * vr_share_window_left() - what host-pageout may still take in @w's window
 * under @share_bytes: @share_bytes less what it took already, 0 at least.
 */
uint64_t vr_share_window_left(const struct vr_share_window *w, uint64_t share_bytes);

/** vr_share_window_charge() - the host took @bytes in @w's window (saturating). */
void vr_share_window_charge(struct vr_share_window *w, uint64_t bytes);
