/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The balloon action (actions/action.h): QEMU's balloon takes free guest
 * memory. Its offer is what the balloon could take (vr_balloon_offer_bytes(),
 * as cold as memory gets); its act step runs on the domain's QEMU monitor
 * worker: QEMU's balloon queried, its target decided by pure policy
 * (vr_balloon_decide(), common/balloon.h) and set. The domain's agent, when
 * it has one, is paused meanwhile and tells the guest's free memory.
 */
#include "actions/action.h"

#include <string.h>

#include "balloon.h"
#include "domain.h"
#include "qmp/qemu-commands.h"

/* What the guest keeps free beyond its use when the balloon takes memory:
 * a twentieth of it, at least this, bytes. */
#define VR_BALLOON_ACTION_MIN_RESERVE_BYTES (64ULL << 20)

/* The balloon action's view of @d this window (vr_balloon_decide()). The
 * guest's free memory comes from its agent's stats (MemFree: page cache is
 * not counted, so the balloon never squeezes the guest's cache); without an
 * agent it is unknown, and the balloon only gives memory back. */
static void balloon_input(const struct vr_action_ctx *ctx, const struct vr_domain *d,
			  struct vr_balloon_input *in)
{
	memset(in, 0, sizeof(*in));
	in->guest_bytes = d->info.memory_bytes;
	in->actual_bytes = MIN(d->balloon_actual_bytes, d->info.memory_bytes);
	in->guest_avail_known = d->has_stats && vr_agent_session_is_up(d->session);
	in->guest_avail_bytes = MIN(d->stats.mem_free_bytes, d->info.memory_bytes);
	in->guaranteed_bytes = MIN(d->tuning->guaranteed_bytes, d->info.memory_bytes);
	in->share_bytes = d->share_bytes;
	in->host_needs_memory = ctx->host_needs_memory;
	in->reserve_bytes = MAX(d->info.memory_bytes / 20, VR_BALLOON_ACTION_MIN_RESERVE_BYTES);
	in->deflate_step_bytes = ctx->config->fleet_quota_bytes;
}

/**
 * struct balloon_job - the balloon action's QEMU half, one window, on the
 * domain's monitor worker: QEMU's balloon as it is, the target the policy
 * gives (pure: vr_balloon_decide()), and that target set when it differs
 * from the last one.
 * @in:		the policy's input from the domain, copied (in); its
 *		@actual_bytes is replaced by what QEMU says now.
 * @decide:	whether to decide and set a target (not while paused) (in).
 * @last_target_bytes: the target set last, bytes; not set again (in).
 * @actual_bytes: query-balloon's "actual", bytes (out).
 * @queried:	whether @actual_bytes is known (out).
 * @target_bytes, @reason: the policy's answer (out).
 * @set:	whether QEMU was asked for @target_bytes (out).
 * @stage:	what it did last: "query", "decide" or "set" (out).
 */
struct balloon_job {
	struct vr_balloon_input in;
	gboolean decide;
	uint64_t last_target_bytes;
	uint64_t actual_bytes;
	gboolean queried;
	uint64_t target_bytes;
	enum vr_balloon_reason reason;
	gboolean set;
	const char *stage;
};

static gboolean balloon_job_run(struct vr_qemu_monitor *mon, gpointer data, GError **error)
{
	struct balloon_job *j = data;

	j->stage = "query";
	if (!vr_qemu_query_balloon(mon, &j->actual_bytes, error))
		return FALSE;
	j->queried = TRUE;
	if (!j->decide)
		return TRUE;
	j->stage = "decide";
	j->in.actual_bytes = MIN(j->actual_bytes, j->in.guest_bytes);
	if (!vr_balloon_decide(&j->in, &j->target_bytes, &j->reason, error))
		return FALSE;
	if (j->reason == VR_BALLOON_HOLD || j->target_bytes == j->last_target_bytes)
		return TRUE;
	j->stage = "set";
	if (!vr_qemu_set_balloon(mon, j->target_bytes, error))
		return FALSE;
	j->set = TRUE;
	return TRUE;
}

static void balloon_job_done(struct vr_monitor_worker *w, gpointer data, const GError *error,
			     gpointer user_data)
{
	struct balloon_job *j = data;
	struct vr_domain *d = user_data;

	(void)w;
	if (j->queried)
		d->balloon_actual_bytes = j->actual_bytes;
	if (error) {
		g_autofree char *msg = g_strdup_printf("balloon: %s", error->message);

		/* A guest without a balloon driver yet fails every query. */
		if (!strcmp(j->stage, "query"))
			g_debug("%s: %s", d->name, msg);
		else
			g_warning("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		vr_domain_monitor_failed(d, error);
		return;
	}
	if (!j->set || !d->managed || d->action != VR_DOMAIN_ACTION_BALLOON)
		return;
	g_message("%s: balloon target %" G_GUINT64_FORMAT " MiB (was %" G_GUINT64_FORMAT
		  " MiB): %s",
		  d->name, j->target_bytes >> 20, j->actual_bytes >> 20,
		  vr_balloon_reason_name(j->reason));
	if (j->target_bytes < j->actual_bytes)
		vr_domain_add_reclaimed(d, j->actual_bytes - j->target_bytes);
	d->balloon_target_bytes = j->target_bytes;
}

/*
 * The balloon action, one window: the agent's half here (pause, stats), the
 * QEMU half on the monitor's worker (struct balloon_job), applied when QEMU
 * has answered. A domain whose QEMU has not answered the last window's job
 * gets no new one (nothing piles up behind a stalled QEMU).
 */
static void balloon_act(struct vr_domain *d, const struct vr_action_ctx *ctx)
{
	g_autoptr(GError) error = NULL;
	struct balloon_job *j;

	if (vr_agent_session_is_up(d->session)) {
		/* The agent reclaims nothing of its own while the balloon acts
		 * (paused), and tells the guest's free memory, fresh for the
		 * next window. */
		vr_domain_agent_set_paused(d, TRUE);
		g_auto(vr_proto_request) req = { .command = VR_PROTO_GET_STATS };
		vr_domain_agent_call(d, &req, 0);
	}
	if (!vr_domain_monitor(d, &error)) {
		if (!error)
			return; /* its domain is being looked up */
		g_autofree char *msg = g_strdup_printf("balloon: %s", error->message);
		g_debug("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		return;
	}
	if (vr_monitor_worker_is_busy(d->monitor))
		return;
	j = g_new0(struct balloon_job, 1);
	balloon_input(ctx, d, &j->in);
	j->decide = !d->user_paused;
	j->last_target_bytes = d->balloon_target_bytes;
	j->stage = "query";
	vr_monitor_worker_submit(d->monitor, "balloon", balloon_job_run, balloon_job_done, j,
				 g_free, d);
}

/* The balloon's offer: the free guest memory it could take, all of it at
 * the coldest score. */
static gboolean balloon_offer(struct vr_domain *d, const struct vr_action_ctx *ctx,
			      struct vr_fleet_domain *fd)
{
	struct vr_balloon_input in;

	if (!d->balloon_actual_bytes)
		return FALSE;
	balloon_input(ctx, d, &in);
	memset(fd->hist_bytes, 0, sizeof(fd->hist_bytes));
	fd->hist_bytes[VR_MAX_SCORE] = vr_balloon_offer_bytes(&in);
	d->cold_bytes = fd->hist_bytes[VR_MAX_SCORE];
	return TRUE;
}

/* The target set last is forgotten: another action (or a new management)
 * starts from what QEMU says. */
static void balloon_stop(struct vr_domain *d)
{
	d->balloon_target_bytes = 0;
}

const struct vr_action_ops vr_action_balloon = {
	.action = VR_DOMAIN_ACTION_BALLOON,
	.offer = balloon_offer,
	.act = balloon_act,
	.stop = balloon_stop,
};
