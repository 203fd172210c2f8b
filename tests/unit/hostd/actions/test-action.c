/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the actions' vtable (hostd/actions/action.h) and of what a
 * domain keeps for its action (hostd/domain.c): the table from the action a
 * domain runs to its operations, the state an action drops when the domain
 * changes action, and each action's offer and act step on a domain that has
 * nothing to act with yet (no agent session, no QEMU process, no balloon
 * reading, no libvirt): each must decline, without I/O, and say why where
 * the domain is left unmanaged.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <string.h>

#include "actions/action.h"
#include "config.h"
#include "domain.h"
#include "fleet-quota.h"

#define MIB (1ULL << 20)

/* A managed-looking domain of @memory_mib MiB with a default tuning and a
 * policy from @config, and no session, QEMU process or monitor. */
static struct vr_domain *domain_new(const struct vr_daemon_config *config, uint64_t memory_mib)
{
	struct vr_domain *d = vr_domain_new("00000000-0000-0000-0000-000000000001", "web1");
	g_autoptr(GError) error = NULL;

	d->info.memory_bytes = memory_mib * MIB;
	d->tuning = vr_domain_tuning_default(config);
	d->policy = vr_domain_policy_for(d->tuning, config, &error);
	cr_assert_not_null(d->policy, "the default policy: %s", error ? error->message : "");
	d->managed = TRUE;
	g_clear_pointer(&d->reason, g_free);
	return d;
}

static void ctx_init(struct vr_action_ctx *ctx, const struct vr_daemon_config *config,
		     const struct vr_host_snapshot *host)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->config = config;
	ctx->host = host;
	ctx->host_needs_memory = TRUE;
	ctx->picture_period = 1;
}

Test(action_table, one_ops_per_action)
{
	const enum vr_domain_action all[] = {
		VR_DOMAIN_ACTION_AGENT_RECLAIM,
		VR_DOMAIN_ACTION_HOST_PAGEOUT,
		VR_DOMAIN_ACTION_BALLOON,
	};

	for (size_t i = 0; i < G_N_ELEMENTS(all); i++) {
		const struct vr_action_ops *ops = vr_action_ops_get(all[i]);

		cr_assert_not_null(ops, "%s: expected operations", vr_domain_action_name(all[i]));
		cr_assert_eq(ops->action, all[i], "%s: its operations say %s",
			     vr_domain_action_name(all[i]), vr_domain_action_name(ops->action));
		cr_assert(ops->offer && ops->act && ops->stop, "%s: an operation is missing",
			  vr_domain_action_name(all[i]));
		for (size_t j = 0; j < i; j++)
			cr_assert_neq(ops, vr_action_ops_get(all[j]), "%s and %s share operations",
				      vr_domain_action_name(all[i]), vr_domain_action_name(all[j]));
	}
	cr_assert_null(vr_action_ops_get(VR_DOMAIN_ACTION_NONE), "none has no operations");
	cr_assert_null(vr_action_ops_get((enum vr_domain_action)99), "99 is no action");
}

Test(action_state, a_new_action_drops_the_old_ones_state)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000001", "web1");

	vr_domain_set_action(d, &vr_action_balloon);
	cr_assert_eq(d->action, VR_DOMAIN_ACTION_BALLOON);
	d->balloon_target_bytes = 512 * MIB;
	vr_domain_set_action(d, &vr_action_balloon);
	cr_assert_eq(d->balloon_target_bytes, 512 * MIB, "the same action keeps its state");
	vr_domain_set_action(d, &vr_action_agent_reclaim);
	cr_assert_eq(d->action, VR_DOMAIN_ACTION_AGENT_RECLAIM);
	cr_assert_eq(d->balloon_target_bytes, 0, "the balloon's target goes with the balloon");
	vr_domain_set_action(d, NULL);
	cr_assert_eq(d->action, VR_DOMAIN_ACTION_NONE);
	cr_assert_null(d->action_ops);
}

Test(action_state, unmanaged_drops_the_action)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000001", "web1");

	vr_domain_set_action(d, &vr_action_balloon);
	d->balloon_target_bytes = 256 * MIB;
	vr_domain_set_unmanaged(d, "test");
	cr_assert_eq(d->action, VR_DOMAIN_ACTION_NONE);
	cr_assert_null(d->action_ops);
	cr_assert_eq(d->balloon_target_bytes, 0);
}

Test(action_offer, balloon_offers_nothing_without_the_guests_free_memory)
{
	g_autoptr(vr_daemon_config) config = vr_daemon_config_new_default();
	g_autoptr(vr_domain) d = domain_new(config, 1024);
	struct vr_host_snapshot host = { 0 };
	struct vr_fleet_domain fd = { 0 };
	struct vr_action_ctx ctx;

	ctx_init(&ctx, config, &host);
	vr_domain_set_action(d, &vr_action_balloon);
	cr_assert_not(vr_action_balloon.offer(d, &ctx, &fd),
		      "no balloon reading yet: expected no offer");
	d->balloon_actual_bytes = 1024 * MIB;
	/* Stats, but no agent session: the free memory is not known now. */
	d->has_stats = TRUE;
	d->stats.mem_total_bytes = 1024 * MIB;
	d->stats.mem_free_bytes = 512 * MIB;
	memset(fd.hist_bytes, 0xff, sizeof(fd.hist_bytes));
	d->cold_bytes = 1;
	cr_assert(vr_action_balloon.offer(d, &ctx, &fd), "a balloon reading: expected an offer");
	for (guint s = 0; s <= VR_MAX_SCORE; s++)
		cr_assert_eq(fd.hist_bytes[s], 0,
			     "score %u: expected 0 bytes, got %" G_GUINT64_FORMAT, s,
			     fd.hist_bytes[s]);
	cr_assert_eq(d->cold_bytes, 0);
}

Test(action_offer, agent_reclaim_and_host_pageout_need_their_picture)
{
	g_autoptr(vr_daemon_config) config = vr_daemon_config_new_default();
	g_autoptr(vr_domain) d = domain_new(config, 1024);
	struct vr_host_snapshot host = { 0 };
	struct vr_fleet_domain fd = { 0 };
	struct vr_action_ctx ctx;

	ctx_init(&ctx, config, &host);
	vr_domain_set_action(d, &vr_action_agent_reclaim);
	cr_assert_not(vr_action_agent_reclaim.offer(d, &ctx, &fd), "no agent: expected no offer");
	vr_action_agent_reclaim.act(d, &ctx);
	cr_assert_not(d->policy_sent, "no agent: nothing sent");
	vr_domain_set_action(d, &vr_action_host_pageout);
	cr_assert_not(vr_action_host_pageout.offer(d, &ctx, &fd),
		      "no host reclaim yet: expected no offer");
}

Test(action_act, host_pageout_waits_for_its_qemu_process)
{
	g_autoptr(vr_daemon_config) config = vr_daemon_config_new_default();
	g_autoptr(vr_domain) d = domain_new(config, 1024);
	struct vr_host_snapshot host = { 0 };
	struct vr_action_ctx ctx;

	ctx_init(&ctx, config, &host);
	vr_domain_set_action(d, &vr_action_host_pageout);
	vr_action_host_pageout.act(d, &ctx);
	cr_assert(d->managed, "no QEMU process yet: expected it to wait, managed");
	cr_assert_null(d->host_reclaim);
}

Test(action_act, host_pageout_without_an_access_source_is_unmanaged)
{
	g_autoptr(vr_daemon_config) config = vr_daemon_config_new_default();
	g_autoptr(vr_domain) d = domain_new(config, 1024);
	struct vr_host_snapshot host = { 0 };
	struct vr_action_ctx ctx;

	config->host_access_source = VR_HOST_ACCESS_SOURCE_NONE;
	ctx_init(&ctx, config, &host);
	vr_domain_set_action(d, &vr_action_host_pageout);
	d->pid = 1;
	vr_action_host_pageout.act(d, &ctx);
	cr_assert_not(d->managed, "expected unmanaged");
	cr_assert_not_null(strstr(d->reason, "access-source is none"), "the reason: %s", d->reason);
	cr_assert_eq(d->action, VR_DOMAIN_ACTION_NONE);
}

Test(domain_io, no_monitor_without_libvirt)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000001", "web1");
	g_autoptr(GError) error = NULL;

	cr_assert_not(vr_domain_monitor(d, &error));
	cr_assert(g_error_matches(error, VR_DOMAIN_ERROR, VR_DOMAIN_ERROR_NOT_LIBVIRT),
		  "expected VR_DOMAIN_ERROR_NOT_LIBVIRT, got %s", error ? error->message : "none");
	cr_assert_null(d->monitor);
}

Test(domain_io, no_agent_call_without_a_session)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000001", "web1");

	d->agent_paused = FALSE;
	vr_domain_agent_set_paused(d, TRUE);
	cr_assert_not(d->agent_paused, "no session: the pause is not taken as sent");
	cr_assert_not(d->agent_pause_pending);
	cr_assert_eq(vr_domain_agent_timeout_ms(d), VR_DOMAIN_AGENT_TIMEOUT_MS,
		     "no config: the built-in agent deadline");
}
