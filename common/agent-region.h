/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/**
 * struct vr_agent_region - one region of a guest's access picture, as the
 * guest agent reports it (get-regions) and its backends read it.
 * @start, @end:	guest-physical address range [start, end), bytes.
 * @nr_accesses:	accesses seen in the last aggregation interval
 *			(0..aggr_interval_us / sample_interval_us).
 * @age:		aggregation intervals the access rate has stayed
 *			about the same.
 */
struct vr_agent_region {
	uint64_t start;
	uint64_t end;
	uint32_t nr_accesses;
	uint32_t age;
};
