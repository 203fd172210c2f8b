/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A region of an access picture: the one type of every picture, whoever
 * made it (a guest agent's report, host DAMON on a QEMU process, the
 * simulator). Its rules are checked in one place, picture.h.
 */
#pragma once

#include <stdint.h>

/**
 * struct vr_picture_region - one region of an access picture, as a guest
 * agent reports it (get-regions), DAMON's tried regions read it, and the
 * host-damon source translates it.
 * @start, @end:	address range [start, end), bytes: guest-physical, but
 *			host-virtual in host DAMON's picture of a QEMU process
 *			before vr_ram_map_to_guest().
 * @nr_accesses:	accesses seen in the last aggregation interval
 *			(0..aggr_interval_us / sample_interval_us).
 * @age:		aggregation intervals the access rate has stayed
 *			about the same.
 */
struct vr_picture_region {
	uint64_t start;
	uint64_t end;
	uint32_t nr_accesses;
	uint32_t age;
};
