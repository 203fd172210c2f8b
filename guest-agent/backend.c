// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the backends share: see backend.h.
 */
#include "backend.h"

void vr_backend_stats_add(struct vr_backend_stats *to, const struct vr_backend_stats *s)
{
	to->nr_tried += s->nr_tried;
	to->sz_tried += s->sz_tried;
	to->nr_applied += s->nr_applied;
	to->sz_applied += s->sz_applied;
	to->qt_exceeds += s->qt_exceeds;
	to->reclaimer_cpu_us += s->reclaimer_cpu_us;
}
