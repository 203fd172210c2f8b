/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A rate limit for log messages about events an untrusted peer causes (a
 * guest's agent, a local client): at most a burst of messages per interval,
 * the rest counted, and the next message that passes says how many were not
 * logged. The kernel's printk_ratelimit() in spirit.
 *
 * Pure: the caller passes the monotonic time and writes the message itself.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/**
 * struct vr_ratelimit - N messages per interval.
 * @interval_us:	the interval, us, > 0 (0 is read as 1).
 * @burst:		messages that pass per interval, >= 1 (0 is read as 1).
 * @suppressed_total:	messages held back since vr_ratelimit_init(),
 *			saturating (a counter for the metrics).
 *
 * Plain data: embed it; all zero is not valid, use vr_ratelimit_init().
 */
struct vr_ratelimit {
	uint64_t interval_us;
	uint32_t burst;
	uint64_t suppressed_total;
	/* private: */
	bool started;
	int64_t begin_us;
	uint32_t passed;
	uint64_t suppressed;
};

/**
 * vr_ratelimit_init() - @burst messages per @interval_us, nothing seen yet.
 * @rl:		the limit; overwritten.
 * @interval_us: the interval, us (0 is read as 1).
 * @burst:	messages per interval (0 is read as 1).
 */
void vr_ratelimit_init(struct vr_ratelimit *rl, uint64_t interval_us, uint32_t burst);

/**
 * vr_ratelimit_pass() - may the message of an event at @now_us be logged?
 * @rl:		the limit; updated.
 * @now_us:	monotonic time of the event, us. A time before the current
 *		interval's start (a clock that went back) starts a new interval.
 * @suppressed:	out, may be NULL: when the message passes, how many messages
 *		were held back since the last one that passed (0 most of the
 *		time): the message should say so ("and N more not logged").
 *		Set to 0 when it does not pass.
 *
 * An interval starts with the first event after the previous one ended; its
 * first @rl->burst events pass, the others are held back and counted. Pure;
 * O(1).
 *
 * Return: true when the message may be logged.
 */
bool vr_ratelimit_pass(struct vr_ratelimit *rl, int64_t now_us, uint64_t *suppressed);
