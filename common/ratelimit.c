/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * N log messages per interval: see ratelimit.h.
 */
#include "ratelimit.h"

#include <string.h>

void vr_ratelimit_init(struct vr_ratelimit *rl, uint64_t interval_us, uint32_t burst)
{
	memset(rl, 0, sizeof(*rl));
	rl->interval_us = interval_us ? interval_us : 1;
	rl->burst = burst ? burst : 1;
}

bool vr_ratelimit_pass(struct vr_ratelimit *rl, int64_t now_us, uint64_t *suppressed)
{
	uint64_t interval_us = rl->interval_us ? rl->interval_us : 1;
	uint32_t burst = rl->burst ? rl->burst : 1;

	if (suppressed)
		*suppressed = 0;
	if (!rl->started || now_us < rl->begin_us ||
	    (uint64_t)now_us - (uint64_t)rl->begin_us >= interval_us) {
		rl->started = true;
		rl->begin_us = now_us;
		rl->passed = 0;
	}
	if (rl->passed >= burst) {
		if (rl->suppressed < UINT64_MAX)
			rl->suppressed++;
		if (rl->suppressed_total < UINT64_MAX)
			rl->suppressed_total++;
		return false;
	}
	rl->passed++;
	if (suppressed)
		*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}
