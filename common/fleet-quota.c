/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fleet quota: each domain's cold-byte histogram from its agent's
 * picture, and the window's quota shared across domains. See fleet-quota.h.
 */
#include "fleet-quota.h"

#include <string.h>

#include "fleet-credit.h"
#include "picture-region.h"
#include "picture.h"

/* clang-format off */
G_DEFINE_QUARK(vr-fleet-error-quark, vr_fleet_error)
/* clang-format on */

static gboolean scheme_has_cold_score(const struct vr_scheme *s)
{
	return s->action == VR_ACTION_PAGEOUT || s->action == VR_ACTION_COLD;
}

gboolean vr_fleet_region_score(const struct vr_picture_region *region,
			       const struct vr_monitor_attrs *attrs, const struct vr_scheme *scheme,
			       uint32_t *score)
{
	const struct vr_region r = {
		.start = region->start,
		.end = region->end,
		.nr_accesses = region->nr_accesses,
		.age = region->age,
	};

	if (!vr_access_pattern_match(&scheme->pattern, &r, attrs))
		return FALSE;
	*score = vr_cold_score(&r, attrs, &scheme->quota);
	return TRUE;
}

gboolean vr_fleet_cold_histogram(const GArray *regions, uint64_t sample_interval_us,
				 uint64_t aggr_interval_us, const struct vr_scheme *scheme,
				 uint64_t guest_memory_bytes, uint64_t *hist_bytes, GError **error)
{
	const struct vr_monitor_attrs attrs = {
		.sample_interval_us = sample_interval_us,
		.aggr_interval_us = aggr_interval_us,
	};
	uint64_t hist[VR_MAX_SCORE + 1] = { 0 };
	guint n = regions ? regions->len : 0;

	memset(hist_bytes, 0, sizeof(hist));
	if (!scheme_has_cold_score(scheme)) {
		g_set_error(error, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID,
			    "scheme '%s' has action %s: only pageout and cold schemes have a cold "
			    "score",
			    scheme->name ? scheme->name : "?", vr_action_name(scheme->action));
		return FALSE;
	}
	if (!vr_picture_check(regions, sample_interval_us, aggr_interval_us,
			      &(struct vr_picture_bound){ .mem_bytes = guest_memory_bytes }, error))
		return FALSE;
	for (guint i = 0; i < n; i++) {
		const struct vr_picture_region *ar =
			&g_array_index(regions, struct vr_picture_region, i);
		uint32_t score;

		if (vr_fleet_region_score(ar, &attrs, scheme, &score))
			hist[score] += ar->end - ar->start;
	}
	memcpy(hist_bytes, hist, sizeof(hist));
	return TRUE;
}

const struct vr_scheme *vr_fleet_pageout_scheme(const struct vr_policy *policy)
{
	for (guint i = 0; policy && policy->schemes && i < policy->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(policy->schemes, i);

		if (s->action == VR_ACTION_PAGEOUT)
			return s;
	}
	return NULL;
}

gboolean vr_fleet_check_cold_histogram(const uint64_t *hist_bytes, uint64_t guest_memory_bytes,
				       GError **error)
{
	uint64_t sum = 0;

	for (guint s = 0; s <= VR_MAX_SCORE; s++) {
		if (hist_bytes[s] > guest_memory_bytes) {
			g_set_error(error, VR_FLEET_ERROR, VR_FLEET_ERROR_PICTURE,
				    "cold histogram bucket %u claims %" G_GUINT64_FORMAT
				    " bytes, the guest has %" G_GUINT64_FORMAT,
				    s, hist_bytes[s], guest_memory_bytes);
			return FALSE;
		}
		sum = hist_bytes[s] > G_MAXUINT64 - sum ? G_MAXUINT64 : sum + hist_bytes[s];
	}
	if (sum > guest_memory_bytes) {
		g_set_error(error, VR_FLEET_ERROR, VR_FLEET_ERROR_PICTURE,
			    "the cold histogram claims %" G_GUINT64_FORMAT
			    " bytes, the guest has %" G_GUINT64_FORMAT,
			    sum, guest_memory_bytes);
		return FALSE;
	}
	return TRUE;
}

uint32_t vr_fleet_adjusted_score(uint32_t score, uint32_t priority)
{
	return MIN(score, VR_MAX_SCORE) + VR_FLEET_MAX_PRIORITY -
	       MIN(priority, VR_FLEET_MAX_PRIORITY);
}

static uint64_t hist_total(const uint64_t *hist_bytes)
{
	uint64_t total = 0;

	for (guint s = 0; s <= VR_MAX_SCORE; s++)
		total = hist_bytes[s] > G_MAXUINT64 - total ? G_MAXUINT64 : total + hist_bytes[s];
	return total;
}

uint64_t vr_fleet_offer_hold_us(const struct vr_scheme *scheme)
{
	uint64_t min_age_us = MIN(scheme->pattern.min_age_us, VR_FLEET_OFFER_HOLD_MAX_US);

	return CLAMP(2 * min_age_us, VR_FLEET_OFFER_HOLD_MIN_US, VR_FLEET_OFFER_HOLD_MAX_US);
}

gboolean vr_fleet_offer_hold_update(struct vr_fleet_offer_hold *hold, uint64_t *hist_bytes,
				    int64_t now_us, uint64_t hold_us)
{
	const int64_t nr = VR_FLEET_OFFER_HOLD_SLOTS;
	const int64_t slot_us = (int64_t)MAX(MIN(hold_us, VR_FLEET_OFFER_HOLD_MAX_US) / nr, 1);
	const int64_t slot = MAX(now_us, 0) / slot_us;
	struct vr_fleet_offer_slot *cur = &hold->slots[slot % nr];
	const struct vr_fleet_offer_slot *best = NULL;
	uint64_t total = hist_total(hist_bytes);
	gboolean taken = FALSE;

	for (int64_t i = 0; i < nr; i++) {
		if (hold->slots[i].used && hold->slots[i].slot > slot) {
			vr_fleet_offer_hold_reset(hold);
			break;
		}
	}
	if (!cur->used || cur->slot != slot || total >= cur->total_bytes) {
		memcpy(cur->hist_bytes, hist_bytes, sizeof(cur->hist_bytes));
		cur->total_bytes = total;
		cur->slot = slot;
		cur->used = true;
		taken = TRUE;
	}
	/* From the oldest slot of the window to this one: ties go to the newest. */
	for (int64_t age = MIN(nr - 1, slot); age >= 0; age--) {
		const struct vr_fleet_offer_slot *s = &hold->slots[(slot - age) % nr];

		if (s->used && s->slot == slot - age &&
		    (!best || s->total_bytes >= best->total_bytes))
			best = s;
	}
	if (best == cur && taken)
		return FALSE;
	memcpy(hist_bytes, best->hist_bytes, sizeof(best->hist_bytes));
	return TRUE;
}

void vr_fleet_offer_hold_reset(struct vr_fleet_offer_hold *hold)
{
	memset(hold, 0, sizeof(*hold));
}

/* max(0, rss - guaranteed) of an eligible domain, 0 otherwise. */
static uint64_t give_limit(const struct vr_fleet_domain *d)
{
	if (!d->eligible || d->rss_bytes <= d->guaranteed_bytes)
		return 0;
	return d->rss_bytes - d->guaranteed_bytes;
}

uint64_t vr_fleet_available_bytes(const struct vr_fleet_domain *d)
{
	return MIN(hist_total(d->hist_bytes), give_limit(d));
}

/*
 * The threshold score: @rest_bytes (less than @sum_bytes, the sum of
 * @offer_bytes) split in proportion to @offer_bytes into @part_bytes. Each
 * gets the rounded-down part; the bytes left by rounding go one each to the
 * largest remainders, ties to the lower index. Since @rest_bytes < @sum_bytes,
 * a domain's part is below its offer, so the extra byte never exceeds it.
 */
static void split_threshold(const uint64_t *offer_bytes, size_t nr, unsigned __int128 sum_bytes,
			    uint64_t rest_bytes, uint64_t *part_bytes)
{
	g_autofree unsigned __int128 *rem = g_new0(unsigned __int128, nr);
	uint64_t given_bytes = 0;

	for (size_t i = 0; i < nr; i++) {
		unsigned __int128 scaled = (unsigned __int128)rest_bytes * offer_bytes[i];

		part_bytes[i] = (uint64_t)(scaled / sum_bytes);
		rem[i] = scaled % sum_bytes;
		given_bytes += part_bytes[i];
	}
	/* Fewer bytes left over than domains with an offer: each gets at most one. */
	g_autofree bool *bumped = g_new0(bool, nr);
	for (uint64_t extra = rest_bytes - given_bytes; extra > 0; extra--) {
		size_t best = nr;

		for (size_t i = 0; i < nr; i++) {
			if (!offer_bytes[i] || bumped[i])
				continue;
			if (best == nr || rem[i] > rem[best])
				best = i;
		}
		if (best == nr)
			break; /* cannot happen: see above */
		bumped[best] = true;
		part_bytes[best]++;
	}
}

/**
 * struct fleet_walk - the state of vr_fleet_distribute()'s walks.
 * @hist_bytes:	per domain, its histogram less what the walks took (nr
 *		rows of VR_MAX_SCORE + 1).
 * @left_bytes:	per domain, what it may still give in this walk.
 * @offer_bytes, @part_bytes: per domain, scratch of one adjusted score.
 * @quota_left:	the quota not shared yet, bytes.
 */
struct fleet_walk {
	uint64_t (*hist_bytes)[VR_MAX_SCORE + 1];
	uint64_t *left_bytes;
	uint64_t *offer_bytes;
	uint64_t *part_bytes;
	uint64_t quota_left;
};

/* Takes @bytes at @score from domain @i: its share, its histogram, its limit. */
static void walk_take(struct fleet_walk *w, size_t i, int score, uint64_t bytes,
		      uint64_t *shares_bytes)
{
	shares_bytes[i] += bytes;
	w->hist_bytes[i][score] -= bytes;
	w->left_bytes[i] -= bytes;
}

/* One walk from the highest adjusted score down while the quota lasts. */
static void fleet_walk(const struct vr_fleet_domain *domains, size_t nr, struct fleet_walk *w,
		       uint64_t *shares_bytes)
{
	for (int adjusted = VR_FLEET_MAX_ADJUSTED_SCORE; adjusted >= 0 && w->quota_left;
	     adjusted--) {
		unsigned __int128 sum_bytes = 0;

		for (size_t i = 0; i < nr; i++) {
			int score = adjusted - (int)(VR_FLEET_MAX_PRIORITY - domains[i].priority);

			w->offer_bytes[i] = 0;
			if (!w->left_bytes[i] || score < 0 || score > VR_MAX_SCORE)
				continue;
			w->offer_bytes[i] = MIN(w->hist_bytes[i][score], w->left_bytes[i]);
			sum_bytes += w->offer_bytes[i];
		}
		if (sum_bytes == 0)
			continue;
		if (sum_bytes > w->quota_left) {
			split_threshold(w->offer_bytes, nr, sum_bytes, w->quota_left,
					w->part_bytes);
			memcpy(w->offer_bytes, w->part_bytes, nr * sizeof(*w->offer_bytes));
			sum_bytes = w->quota_left;
		}
		for (size_t i = 0; i < nr; i++) {
			int score = adjusted - (int)(VR_FLEET_MAX_PRIORITY - domains[i].priority);

			if (w->offer_bytes[i])
				walk_take(w, i, score, w->offer_bytes[i], shares_bytes);
		}
		w->quota_left -= (uint64_t)sum_bytes;
	}
}

/* What @d may give in the first walk: as without credit when its credit
 * is full (so that its offers at the threshold weigh as before), else its
 * credit's part of min(@quota_bytes, its available bytes). */
static uint64_t credit_limit(const struct vr_fleet_domain *d, uint64_t quota_bytes)
{
	uint64_t base = MIN(quota_bytes, vr_fleet_available_bytes(d));

	if (d->credit_permille >= VR_FLEET_CREDIT_FULL_PERMILLE)
		return give_limit(d);
	return (uint64_t)((unsigned __int128)base * d->credit_permille /
			  VR_FLEET_CREDIT_FULL_PERMILLE);
}

gboolean vr_fleet_distribute(const struct vr_fleet_domain *domains, size_t nr, uint64_t quota_bytes,
			     uint64_t *shares_bytes, GError **error)
{
	g_autofree uint64_t(*hist_bytes)[VR_MAX_SCORE + 1] = NULL;
	g_autofree uint64_t *left_bytes = NULL;
	g_autofree uint64_t *offer_bytes = NULL;
	g_autofree uint64_t *part_bytes = NULL;
	struct fleet_walk w;

	if (nr == 0)
		return TRUE;
	memset(shares_bytes, 0, nr * sizeof(*shares_bytes));
	for (size_t i = 0; i < nr; i++) {
		if (domains[i].priority > VR_FLEET_MAX_PRIORITY) {
			g_set_error(error, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID,
				    "domain %zu%s%s%s has priority %u: it must be from 0 to %u", i,
				    domains[i].name ? " '" : "",
				    domains[i].name ? domains[i].name : "",
				    domains[i].name ? "'" : "", domains[i].priority,
				    VR_FLEET_MAX_PRIORITY);
			return FALSE;
		}
	}
	hist_bytes = g_malloc_n(nr, sizeof(*hist_bytes));
	left_bytes = g_new0(uint64_t, nr);
	offer_bytes = g_new0(uint64_t, nr);
	part_bytes = g_new0(uint64_t, nr);
	for (size_t i = 0; i < nr; i++)
		memcpy(hist_bytes[i], domains[i].hist_bytes, sizeof(hist_bytes[i]));
	w = (struct fleet_walk){
		.hist_bytes = hist_bytes,
		.left_bytes = left_bytes,
		.offer_bytes = offer_bytes,
		.part_bytes = part_bytes,
		.quota_left = quota_bytes,
	};

	/* First walk: each domain within its credit. */
	for (size_t i = 0; i < nr; i++)
		left_bytes[i] = credit_limit(&domains[i], quota_bytes);
	fleet_walk(domains, nr, &w, shares_bytes);
	/* Second walk: the rest, to whoever can still give. */
	for (size_t i = 0; i < nr; i++)
		left_bytes[i] =
			give_limit(&domains[i]) - MIN(shares_bytes[i], give_limit(&domains[i]));
	fleet_walk(domains, nr, &w, shares_bytes);
	return TRUE;
}
