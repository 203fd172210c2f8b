/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Access sources of vreclaimd: where a guest's access picture comes from
 * (ARCHITECTURE.md, "Data flow" 2). One source per file, each behind one
 * struct vr_access_source_ops, like the kernel's struct damon_operations:
 *
 *   source-host-damon.c - the host kernel's DAMON (vaddr of the QEMU process,
 *                         through DAMON sysfs), translated to guest-physical
 *                         addresses through the guest's RAM map
 *   source-sim.c        - a simulated guest of libvrcore with its own
 *                         monitoring context, for tests, benchmarks and demos
 *   source-agent.c      - the guest agent's own picture (get-regions over
 *                         its session)
 *
 * Whatever a source sees, the picture it gives is a struct vr_proto_regions
 * in guest-physical addresses: sorted, not overlapping, at most
 * VR_PROTO_MAX_REGIONS regions, nr_accesses <= aggr / sample. The wrapper
 * (vr_access_source_get_regions()) checks that, so a consumer never sees a
 * broken picture.
 *
 * Every path to the kernel is a parameter, and the simulated guest's time
 * comes from an injected clock, so tests run on fake trees and fake time.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

#include "monitor.h"
#include "protocol.h"
#include "qmp/ram-map.h"
#include "scheme.h"

#define VR_ACCESS_SOURCE_ERROR (vr_access_source_error_quark())
GQuark vr_access_source_error_quark(void);

/**
 * enum vr_access_source_error - error codes in the VR_ACCESS_SOURCE_ERROR
 * domain.
 * @VR_ACCESS_SOURCE_ERROR_INVALID:	an argument is out of range (named in
 *					the message), or a source gave a picture
 *					that breaks the rules.
 * @VR_ACCESS_SOURCE_ERROR_UNSUPPORTED:	the machine lacks what the source
 *					needs (e.g. no DAMON sysfs with vaddr).
 * @VR_ACCESS_SOURCE_ERROR_BUSY:	another user holds the mechanism (e.g.
 *					a kdamond this program did not start).
 * @VR_ACCESS_SOURCE_ERROR_FAILED:	the source failed (a kernel file
 *					refused a value or could not be read, the
 *					monitored process is gone); the message
 *					names the file or the process.
 * @VR_ACCESS_SOURCE_ERROR_STATE:	the call does not fit the source's state
 *					(get-regions before start, start twice).
 */
enum vr_access_source_error {
	VR_ACCESS_SOURCE_ERROR_INVALID,
	VR_ACCESS_SOURCE_ERROR_UNSUPPORTED,
	VR_ACCESS_SOURCE_ERROR_BUSY,
	VR_ACCESS_SOURCE_ERROR_FAILED,
	VR_ACCESS_SOURCE_ERROR_STATE,
};

/**
 * struct vr_access_source_ops - one kind of access source.
 * @name:	short name for logs and configuration: "host-damon", "sim",
 *		"agent".
 * @start:	start monitoring. Called only when stopped; after a failure
 *		nothing runs.
 * @get_regions: fill @out (zeroed by the caller) with the current picture;
 *		called only while started. The caller checks it.
 * @stop:	stop monitoring and release what @start took; cannot fail
 *		(problems are logged). Called only while started.
 * @free:	free @priv; called once, when stopped.
 */
struct vr_access_source_ops {
	const char *name;
	gboolean (*start)(void *priv, GError **error);
	gboolean (*get_regions)(void *priv, struct vr_proto_regions *out, GError **error);
	void (*stop)(void *priv);
	void (*free)(void *priv);
};

/**
 * struct vr_access_source - an access source: its ops and their private
 * data, and whether it runs. Opaque; one per monitored guest.
 */
struct vr_access_source;
typedef struct vr_access_source vr_access_source;

/**
 * vr_access_source_new() - a stopped source running @ops over @priv (owned:
 * freed with @ops->free). For sources defined elsewhere (the agent's).
 * @ops must outlive the source.
 */
struct vr_access_source *vr_access_source_new(const struct vr_access_source_ops *ops, void *priv);

/**
 * vr_access_source_get_ops(), vr_access_source_get_priv() - the ops and the
 * private data @src was made with (borrowed), for a source's own helpers.
 */
const struct vr_access_source_ops *vr_access_source_get_ops(const struct vr_access_source *src);
void *vr_access_source_get_priv(const struct vr_access_source *src);

/** vr_access_source_name() - @ops->name of @src. */
const char *vr_access_source_name(const struct vr_access_source *src);

/** vr_access_source_is_started() - is @src between start and stop? */
gboolean vr_access_source_is_started(const struct vr_access_source *src);

/**
 * vr_access_source_start() - start monitoring. VR_ACCESS_SOURCE_ERROR_STATE
 * when already started; the source's own errors are prefixed with its name.
 */
gboolean vr_access_source_start(struct vr_access_source *src, GError **error);

/**
 * vr_access_source_get_regions() - the current picture in @out: cleared
 * first (vr_proto_regions_clear()), then filled by the source and checked
 * with vr_picture_check() (common/picture.h; no guest bound: the source's
 * user bounds it). On error @out is left cleared.
 * VR_ACCESS_SOURCE_ERROR_STATE when not started; VR_ACCESS_SOURCE_ERROR_INVALID
 * naming the source, the broken rule and the region when the picture breaks
 * a rule.
 */
gboolean vr_access_source_get_regions(struct vr_access_source *src, struct vr_proto_regions *out,
				      GError **error);

/** vr_access_source_stop() - stop monitoring (nothing when not started). */
void vr_access_source_stop(struct vr_access_source *src);

/** vr_access_source_free() - stop @src if it runs, then free it (NULL is fine). */
void vr_access_source_free(struct vr_access_source *src);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_access_source, vr_access_source_free)

/* ---- agent ---- */

struct vr_agent_session;

/**
 * vr_access_source_new_agent() - the "agent" source: the picture the guest's
 * agent gives (get-regions over @session), the last one that arrived.
 * @session:	the session with the agent; borrowed: free the source first.
 * @timeout_ms:	time each get-regions has for its reply, ms, >= 1.
 *
 * A picture is asked for by vr_access_source_agent_refresh() (once per
 * tick); get-regions gives a copy of the last one that arrived, or
 * VR_ACCESS_SOURCE_ERROR_STATE before the first. Start and stop forget the
 * picture, and replies to calls made before them are dropped. What the agent
 * sends was validated by the session (vr_proto_decode_message(), no more
 * memory than the guest has) and is checked again by
 * vr_access_source_get_regions(). A failed get-regions is logged with the
 * domain's name and the last picture is kept.
 * Return: a stopped source owned by the caller, or NULL with
 * VR_ACCESS_SOURCE_ERROR_INVALID (no session, a timeout of 0).
 */
struct vr_access_source *vr_access_source_new_agent(struct vr_agent_session *session,
						    guint timeout_ms, GError **error);

/**
 * vr_access_source_agent_refresh() - ask @src's agent for a new picture
 * unless a request is under way (then nothing is sent).
 * Return: TRUE when a request is under way; FALSE with @error when the
 * session refused it at once (VR_AGENT_SESSION_ERROR: the agent is down,
 * too many calls pending), or VR_ACCESS_SOURCE_ERROR_STATE when @src is not
 * a started agent source.
 */
gboolean vr_access_source_agent_refresh(struct vr_access_source *src, GError **error);

/**
 * vr_access_source_agent_forget() - forget @src's picture and any request
 * under way (the agent went down: its next picture starts over). Nothing
 * for other kinds of source, nor for NULL.
 */
void vr_access_source_agent_forget(struct vr_access_source *src);

/**
 * vr_access_source_agent_picture_serial() - which picture @src (an agent
 * source; NULL is fine) holds: a number that grows with each picture (or
 * cold histogram) that arrives, so a consumer can keep what it computed from one until the next.
 * Return: 0 when it holds none.
 */
uint64_t vr_access_source_agent_picture_serial(const struct vr_access_source *src);

/**
 * vr_access_source_agent_has_picture() - whether @src (an agent source; NULL
 * is fine) holds a picture or a cold histogram.
 */
gboolean vr_access_source_agent_has_picture(const struct vr_access_source *src);

/**
 * vr_access_source_agent_set_histogram() - whether
 * vr_access_source_agent_refresh() asks an agent with the "cold-histogram"
 * capability for the histogram of its picture (get-cold-histogram) instead
 * of the picture (default: FALSE, the picture). Agents without the
 * capability are always asked for the picture; a histogram the agent refuses
 * is logged and the last one kept, as with pictures. Nothing for NULL or
 * other kinds of source.
 */
void vr_access_source_agent_set_histogram(struct vr_access_source *src, gboolean histogram);

/**
 * vr_access_source_agent_wants_histogram() - whether @src's next refresh asks
 * for a histogram: set_histogram() said so and the session's agent, up, has
 * the capability (FALSE for NULL).
 */
gboolean vr_access_source_agent_wants_histogram(const struct vr_access_source *src);

/**
 * vr_access_source_agent_cold_hist() - the last histogram that arrived
 * (validated by the session: vr_agent_session_check_cold_hist()), copied to
 * @out. Its arrival bumps the serial of
 * vr_access_source_agent_picture_serial() as a picture's does, and start,
 * stop and forget drop it.
 * Return: FALSE, @out untouched, when @src holds none (NULL is fine).
 */
gboolean vr_access_source_agent_cold_hist(const struct vr_access_source *src,
					  struct vr_proto_cold_hist *out);

/* ---- host-damon ---- */

/**
 * vr_access_source_new_host_damon() - the "host-damon" source: the host
 * kernel's DAMON watching the virtual memory of QEMU process @qemu_pid.
 * @sysfs_root:	sysfs mount point ("/sys" on a machine; a fake tree in tests);
 *		copied.
 * @procfs_root: procfs mount point ("/proc"); copied. Used to check that the
 *		process exists and to read the kernel release.
 * @qemu_pid:	the QEMU process, > 0.
 * @ram_map:	struct vr_ram_range (hostd/qmp/ram-map.h): where the guest's RAM
 *		lives in the process; copied. 1..VR_RAM_MAP_MAX_ENTRIES
 *		ranges, each non-empty, without overflow, their guest-physical
 *		ranges disjoint (host-virtual ones may alias).
 * @attrs:	monitoring attributes (validated as vr_monitor_attrs_validate());
 *		copied. min/max_nr_regions bound DAMON's regions over the whole
 *		process.
 *
 * Start writes kdamond 0 (DAMON sysfs: operations vaddr, one target whose
 * pid_target is @qemu_pid, @attrs, one `stat` scheme that matches every
 * region) and turns it on, after checking that DAMON sysfs has vaddr, the
 * process exists and DAMON is free (no DAMON_RECLAIM / DAMON_LRU_SORT module
 * enabled, no kdamond running: BUSY otherwise). get-regions reads the stat
 * scheme's tried regions (update_schemes_tried_regions), keeps their parts
 * inside guest RAM, translates them to guest-physical addresses (split at
 * the map's boundaries) and merges them down to VR_PROTO_MAX_REGIONS. Stop
 * turns the kdamond off and removes it (nr_kdamonds 0).
 *
 * Return: a stopped source owned by the caller, or NULL with
 * VR_ACCESS_SOURCE_ERROR_INVALID naming the bad argument.
 */
struct vr_access_source *vr_access_source_new_host_damon(const char *sysfs_root,
							 const char *procfs_root, pid_t qemu_pid,
							 const GArray *ram_map,
							 const struct vr_monitor_attrs *attrs,
							 GError **error);

/* ---- sim ---- */

/**
 * struct vr_sim_source_config - the simulated guest of a "sim" source.
 * @size_bytes:	guest size, page-aligned, > 0.
 * @workload:	a built-in script name (vr_sim_builtin_names()); used when
 *		@workload_json is NULL.
 * @workload_json: a workload document (docs/simulate.md, "Workload files"),
 *		or NULL.
 * @phase_us:	length of each phase of a built-in script, in us, > 0.
 * @seed:	seed of the guest's accesses and of the monitor's choices.
 */
struct vr_sim_source_config {
	uint64_t size_bytes;
	const char *workload;
	const char *workload_json;
	uint64_t phase_us;
	uint64_t seed;
};

/**
 * vr_access_source_new_sim() - the "sim" source: a simulated guest
 * (common/sim.h) watched by a libvrcore monitoring context with @attrs.
 * @cfg:	the guest (copied, its strings too).
 * @attrs:	monitoring attributes (copied).
 * @clock:	the time (copied; its data borrowed and must outlive the
 *		source): now_ns, monotonic. The guest's time 0 is the first
 *		start; the guest runs on while the source is stopped. Each
 *		get-regions runs the monitor up to the clock's now (at most
 *		VR_SIM_SOURCE_MAX_CATCHUP_US of simulated sampling per call; a
 *		longer gap is skipped), so a test that moves its clock gets
 *		deterministic pictures for a seed.
 *
 * The picture is the monitor's last aggregated snapshot (regions with
 * nr_accesses of the last aggregation window and their ages), merged down to
 * VR_PROTO_MAX_REGIONS; it is empty until the first aggregation after a
 * start.
 * Return: a stopped source owned by the caller, or NULL with
 * VR_ACCESS_SOURCE_ERROR_INVALID naming what was wrong (the guest, the
 * workload, the attributes, a clock without now_ns).
 */
struct vr_access_source *vr_access_source_new_sim(const struct vr_sim_source_config *cfg,
						  const struct vr_monitor_attrs *attrs,
						  const struct vr_clock *clock, GError **error);

/* The most simulated time one get-regions samples, in us: a daemon that
 * asks rarely (or a clock that jumps) does not stall on a long catch-up. */
#define VR_SIM_SOURCE_MAX_CATCHUP_US (10ULL * G_USEC_PER_SEC)

struct vr_sim;

/**
 * vr_access_source_sim_guest() - the simulated guest of a "sim" source
 * (borrowed, lives as long as @src), e.g. to compare the picture with the
 * truth; NULL when @src is another kind.
 */
const struct vr_sim *vr_access_source_sim_guest(const struct vr_access_source *src);

/**
 * vr_access_source_sim_now_us() - a "sim" source's guest time, in us, as of
 * its clock now (0 before the first start, and for other kinds).
 */
uint64_t vr_access_source_sim_now_us(const struct vr_access_source *src);
