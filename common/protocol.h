/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host <-> guest agent wire protocol, version 1 (docs/protocol.md): JSON
 * lines, one message per line. The host sends requests; the agent answers
 * each with a reply or an error reply carrying the request's id, and sends
 * reports of its stats on its own.
 *
 * Pure: text in, structs out; structs in, text out. Reading and writing the
 * channel is the daemons' business; struct vr_proto_reader cuts the byte
 * stream they read into lines.
 *
 * The guest is untrusted. Everything the host decodes from it is bounded and
 * checked (string lengths, array counts, ranges, the relations between
 * fields) before it reaches the caller, and what decoding allocates is
 * bounded by the line limit (counts are checked before anything is
 * allocated for them).
 *
 * Encoders of agent->host messages never fail: a reply that the host would
 * refuse (a bug in the agent) is sent as a "failed" error reply naming the
 * problem, so the peer always gets a well-formed line. Every line they return
 * fits VR_PROTO_MAX_LINE.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "picture-region.h"
#include "policy.h"

/* The protocol version this code speaks: the "vreclaim" member of every message. */
#define VR_PROTO_VERSION 1

/* A line's maximum size in bytes, its newline (and a '\r' before it) included. */
#define VR_PROTO_MAX_LINE 65536

/* Nesting depth of objects and arrays a message may have: a set-policy
 * request needs 8; the bound keeps hostile nesting cheap to refuse. */
#define VR_PROTO_MAX_DEPTH 16

/* get-regions: at most this many regions in one reply (and the default
 * "max"). 512 regions of the largest values a picture allows take about
 * 47 KiB of a line.
 * The wire's own number: never above the picture's VR_PICTURE_MAX_REGIONS
 * (asserted in protocol.c), so a reply the wire carries is a picture. */
#define VR_PROTO_MAX_REGIONS 512

/* hello: the lengths of its strings in bytes, and the number of backends. */
#define VR_PROTO_MAX_AGENT_LEN	 64
#define VR_PROTO_MAX_KERNEL_LEN	 128
#define VR_PROTO_MAX_BACKEND_LEN 32
#define VR_PROTO_MAX_BACKENDS	 8
/* hello: the largest page reporting order (the kernel's is below MAX_ORDER). */
#define VR_PROTO_MAX_REPORTING_ORDER 20
/* hello: at most this many capabilities, names as backends'. */
#define VR_PROTO_MAX_CAPABILITIES 8
/* The capability of an agent that answers get-cold-histogram and takes
 * set-policy's generation and histogram_policy arguments. */
#define VR_PROTO_CAP_COLD_HISTOGRAM "cold-histogram"

/* get-cold-histogram: the number of buckets, one per cold score. */
#define VR_PROTO_COLD_HIST_BUCKETS (VR_MAX_SCORE + 1)

/* An error reply's description, in bytes; encoders cut longer ones. */
#define VR_PROTO_MAX_DESC_LEN 1024

/* reclaim: at least a page, at most 1 PiB per request. */
#define VR_PROTO_RECLAIM_MIN_BYTES 4096ULL
#define VR_PROTO_RECLAIM_MAX_BYTES (1ULL << 50)
/* reclaim: the deadline, 1 ms to 10 minutes. */
#define VR_PROTO_RECLAIM_MAX_DEADLINE_MS 600000ULL

/* set-policy: the report interval, 0 (no reports) or 100 ms to 1 hour. */
#define VR_PROTO_REPORT_INTERVAL_MIN_MS 100ULL
#define VR_PROTO_REPORT_INTERVAL_MAX_MS 3600000ULL

/* Every integer on the wire is in 0..this unless its member says less (a
 * set-policy's policy document follows docs/policy.md instead). */
#define VR_PROTO_MAX_INT ((uint64_t)INT64_MAX)

#define VR_PROTO_ERROR (vr_proto_error_quark())
GQuark vr_proto_error_quark(void);

/**
 * enum vr_proto_error_class - the class of an error reply, and the codes of
 * the VR_PROTO_ERROR domain: the agent answers a failed request with the
 * class of its GError's code and the GError's message as the description
 * (vr_proto_encode_gerror()).
 * @VR_PROTO_ERROR_SYNTAX:	the line is not JSON, not an object, truncated
 *				or nested too deep.
 * @VR_PROTO_ERROR_TOO_LONG:	the line is longer than VR_PROTO_MAX_LINE.
 * @VR_PROTO_ERROR_BAD_VERSION:	"vreclaim" is missing or not 1.
 * @VR_PROTO_ERROR_UNKNOWN_COMMAND: the request names no known command.
 * @VR_PROTO_ERROR_INVALID_ARGUMENT: a member is missing, unknown (among a
 *				command's arguments), of the wrong type or out
 *				of range; the message starts with its JSON path,
 *				e.g. "arguments.bytes: expected an integer in
 *				4096..1125899906842624 (got 1)". Host side: the
 *				same, for a member of the agent's line.
 * @VR_PROTO_ERROR_FAILED:	the agent's backend failed to do what was asked.
 * @VR_PROTO_ERROR_BUSY:	the agent cannot do it now (another user holds
 *				the mechanism); the host may retry later.
 */
enum vr_proto_error_class {
	VR_PROTO_ERROR_SYNTAX,
	VR_PROTO_ERROR_TOO_LONG,
	VR_PROTO_ERROR_BAD_VERSION,
	VR_PROTO_ERROR_UNKNOWN_COMMAND,
	VR_PROTO_ERROR_INVALID_ARGUMENT,
	VR_PROTO_ERROR_FAILED,
	VR_PROTO_ERROR_BUSY,
};

/**
 * vr_proto_error_class_name() - "syntax", "too-long", "bad-version",
 * "unknown-command", "invalid-argument", "failed", "busy"; "unknown" for
 * other values.
 */
const char *vr_proto_error_class_name(enum vr_proto_error_class cls);

/** vr_proto_error_class_from_name() - parse a class name; FALSE if unknown. */
gboolean vr_proto_error_class_from_name(const char *name, enum vr_proto_error_class *cls);

/**
 * enum vr_proto_command - the requests the host sends.
 * @VR_PROTO_HELLO:	what the agent is and can do (struct vr_proto_hello).
 * @VR_PROTO_SET_POLICY: run this policy from now on, report at this interval.
 * @VR_PROTO_RECLAIM:	reclaim this much now, within a deadline.
 * @VR_PROTO_GET_STATS:	the agent's stats (struct vr_agent_stats).
 * @VR_PROTO_GET_REGIONS: the agent's access picture (struct vr_proto_regions).
 * @VR_PROTO_PAUSE:	stop reclaiming until resume.
 * @VR_PROTO_RESUME:	reclaim again with the last policy.
 * @VR_PROTO_GET_COLD_HIST: the eligible cold bytes per cold score of the
 *			agent's picture (struct vr_proto_cold_hist); agents
 *			with the "cold-histogram" capability only.
 */
enum vr_proto_command {
	VR_PROTO_HELLO,
	VR_PROTO_SET_POLICY,
	VR_PROTO_RECLAIM,
	VR_PROTO_GET_STATS,
	VR_PROTO_GET_REGIONS,
	VR_PROTO_PAUSE,
	VR_PROTO_RESUME,
	VR_PROTO_GET_COLD_HIST,
};

/**
 * vr_proto_command_name() - "hello", "set-policy", "reclaim", "get-stats",
 * "get-regions", "pause", "resume", "get-cold-histogram"; "unknown" for
 * other values.
 */
const char *vr_proto_command_name(enum vr_proto_command command);

/** vr_proto_command_from_name() - parse a command name; FALSE if unknown. */
gboolean vr_proto_command_from_name(const char *name, enum vr_proto_command *command);

/* ---- requests (host -> agent) ---- */

/**
 * struct vr_proto_set_policy_args - the arguments of set-policy.
 * @policy:		the policy to run; owned by the request.
 * @has_report_interval: whether @report_interval_ms is given (otherwise the
 *			agent keeps its interval).
 * @report_interval_ms:	time between reports, in ms: 0 (no reports) or
 *			VR_PROTO_REPORT_INTERVAL_MIN_MS..._MAX_MS.
 * @generation:		0 (not given) or 1..VR_PROTO_MAX_INT: the host's name
 *			for @histogram_policy, which get-cold-histogram
 *			replies carry back. Given only to agents with the
 *			"cold-histogram" capability (older ones refuse it).
 * @histogram_policy:	NULL (not given) or the policy whose first pageout
 *			scheme get-cold-histogram uses (the domain's own,
 *			before the fleet share changes its quota and pattern);
 *			owned by the request. Given with @generation only.
 */
struct vr_proto_set_policy_args {
	struct vr_policy *policy;
	gboolean has_report_interval;
	uint64_t report_interval_ms;
	uint64_t generation;
	struct vr_policy *histogram_policy;
};

/**
 * struct vr_proto_reclaim_args - the arguments of reclaim.
 * @bytes:	how much to reclaim, in bytes, VR_PROTO_RECLAIM_MIN_BYTES..
 *		VR_PROTO_RECLAIM_MAX_BYTES.
 * @deadline_ms: time allowed, in ms, 1..VR_PROTO_RECLAIM_MAX_DEADLINE_MS.
 */
struct vr_proto_reclaim_args {
	uint64_t bytes;
	uint64_t deadline_ms;
};

/**
 * struct vr_proto_get_regions_args - the arguments of get-regions.
 * @max:	at most this many regions, 1..VR_PROTO_MAX_REGIONS (the
 *		default when the request omits it: VR_PROTO_MAX_REGIONS).
 */
struct vr_proto_get_regions_args {
	guint max;
};

/**
 * struct vr_proto_request - one request.
 * @id:		chosen by the host, 1..UINT32_MAX; the reply carries it.
 * @command:	what is asked.
 * @set_policy, @reclaim, @get_regions: the arguments of those commands (the
 *		other commands take none); only the member of @command is used.
 *
 * Clear with vr_proto_request_clear(), which frees @set_policy.policy for a
 * set-policy request.
 */
struct vr_proto_request {
	uint32_t id;
	enum vr_proto_command command;
	union {
		struct vr_proto_set_policy_args set_policy;
		struct vr_proto_reclaim_args reclaim;
		struct vr_proto_get_regions_args get_regions;
	};
};

typedef struct vr_proto_request vr_proto_request;

/** vr_proto_request_clear() - free what @req owns and zero it. */
void vr_proto_request_clear(struct vr_proto_request *req);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vr_proto_request, vr_proto_request_clear)

/**
 * vr_proto_encode_request() - @req as a line (host side).
 * Return: owned, newline-terminated, at most VR_PROTO_MAX_LINE bytes; or NULL
 * with @error: VR_PROTO_ERROR_INVALID_ARGUMENT for a request the agent would
 * refuse (message as the agent's), VR_PROTO_ERROR_TOO_LONG for a policy too
 * big for one line.
 */
char *vr_proto_encode_request(const struct vr_proto_request *req, GError **error);

/**
 * vr_proto_decode_request() - read the request in @len bytes of @line (agent
 * side), with or without its final newline.
 * @out:	filled in on success; owns the policy of a set-policy request.
 *		Its previous content is not freed. On error nothing in it needs
 *		freeing, and @out->id is the request's id when it could be read
 *		(0 otherwise), so the error reply can carry it.
 * Return: TRUE, or FALSE with @error in VR_PROTO_ERROR, whose code is the
 * class to answer with and whose message is the description.
 */
gboolean vr_proto_decode_request(const char *line, gsize len, struct vr_proto_request *out,
				 GError **error);

/* ---- replies and reports (agent -> host) ---- */

/**
 * struct vr_proto_hello - what hello returns.
 * @version:	the highest protocol version the agent speaks, >= 1.
 * @agent:	the agent's version, 1..VR_PROTO_MAX_AGENT_LEN bytes of
 *		UTF-8 without control or format characters.
 * @kernel:	the guest kernel's release (uname -r), 1..
 *		VR_PROTO_MAX_KERNEL_LEN bytes, same rules.
 * @backends:	the backends the agent found usable, @nr_backends of them
 *		(1..VR_PROTO_MAX_BACKENDS), each a distinct name of 1..
 *		VR_PROTO_MAX_BACKEND_LEN bytes of [a-z0-9_-].
 * @backend:	the backend in use: one of @backends, or "none".
 * @free_page_reporting: whether free page reporting is active (virtio_balloon
 *		with the reporting feature): without it in-guest reclaim saves
 *		the host nothing.
 * @has_reporting_order: whether @reporting_order is known.
 * @reporting_order: the page order free page reporting reports at,
 *		0..VR_PROTO_MAX_REPORTING_ORDER.
 * @cold_histogram: whether the agent has the "cold-histogram" capability
 *		(on the wire: "capabilities", an optional array of at most
 *		VR_PROTO_MAX_CAPABILITIES distinct names; names this code does
 *		not know are ignored).
 */
struct vr_proto_hello {
	uint32_t version;
	char agent[VR_PROTO_MAX_AGENT_LEN + 1];
	char kernel[VR_PROTO_MAX_KERNEL_LEN + 1];
	char backends[VR_PROTO_MAX_BACKENDS][VR_PROTO_MAX_BACKEND_LEN + 1];
	guint nr_backends;
	char backend[VR_PROTO_MAX_BACKEND_LEN + 1];
	gboolean free_page_reporting;
	gboolean has_reporting_order;
	guint reporting_order;
	gboolean cold_histogram;
};

/**
 * struct vr_agent_stats - the agent's stats (get-stats, reports). Counters
 * are cumulative since the agent started; every integer is at most
 * VR_PROTO_MAX_INT.
 * @backend:		the backend in use, or "none" (as in hello).
 * @paused:		whether the host paused reclaim.
 * @uptime_ms:		time since the agent started, in ms.
 * @nr_tried, @sz_tried: regions and bytes the reclaim was tried on.
 * @nr_applied, @sz_applied: regions and bytes actually reclaimed; at most
 *			@nr_tried and @sz_tried.
 * @qt_exceeds:		quota windows that ended with the quota used up.
 * @reclaimer_cpu_us:	CPU time of what reclaims (kdamond, or the agent's
 *			thread), in us; 0 when unknown.
 * @agent_cpu_us:	CPU time of the agent itself, in us.
 * @compactions:	memory compactions the agent asked for.
 * @reclaimed_bytes:	bytes the guest kernel reclaimed since the agent
 *			started, by any reclaimer (the backend's, the guest's
 *			own kswapd): pages written to swap and page cache
 *			pages reclaimed (vmstat pswpout + pgsteal_file, 4 KiB
 *			each). Unlike @sz_applied it counts a page whose swap
 *			write was still in flight when the reclaimer tried it,
 *			which DAMON's pageout leaves for later.
 * @swap_cache_release_bytes: bytes the agent's swap-cache release freed
 *			(vmstat pgsteal over its memory.reclaim writes): pages
 *			the policy's pageout wrote to swap but left resident
 *			(docs/agent.md). Optional on the wire: agents before it
 *			send none, read as 0.
 * @has_reportable_free_bytes: whether @reportable_free_bytes is known; on
 *			the wire the member is present exactly when it is.
 * @reportable_free_bytes: the guest's free memory in buddy blocks of at
 *			least the reporting order, in bytes (/proc/buddyinfo):
 *			what free page reporting hands (or handed) to the host;
 *			free memory in smaller blocks stays with the guest.
 *			Known only while free page reporting is active and its
 *			order known; 0 when not known.
 * @mem_total_bytes, @mem_free_bytes: the guest's memory and its free part
 *			(free <= total), in bytes.
 * @swap_total_bytes, @swap_free_bytes: the same for swap.
 * @free_page_reporting: whether free page reporting is active.
 */
struct vr_agent_stats {
	char backend[VR_PROTO_MAX_BACKEND_LEN + 1];
	gboolean paused;
	uint64_t uptime_ms;
	uint64_t nr_tried;
	uint64_t sz_tried;
	uint64_t nr_applied;
	uint64_t sz_applied;
	uint64_t qt_exceeds;
	uint64_t reclaimer_cpu_us;
	uint64_t agent_cpu_us;
	uint64_t compactions;
	uint64_t reclaimed_bytes;
	uint64_t swap_cache_release_bytes;
	gboolean has_reportable_free_bytes;
	uint64_t reportable_free_bytes;
	uint64_t mem_total_bytes;
	uint64_t mem_free_bytes;
	uint64_t swap_total_bytes;
	uint64_t swap_free_bytes;
	gboolean free_page_reporting;
};

/**
 * struct vr_proto_regions - what get-regions returns: the agent's access
 * picture, which follows the picture's rules (vr_picture_check(),
 * common/picture.h, without a guest bound: the host checks that after
 * decoding) on both sides of the wire.
 * @sample_interval_us:	the sampling interval of the picture, in us, > 0.
 * @aggr_interval_us:	its aggregation interval, in us, >= the sampling one,
 *			at most VR_PICTURE_MAX_AGGR_INTERVAL_US (1 hour) and
 *			VR_PICTURE_MAX_NR_ACCESSES sampling intervals.
 * @regions:		struct vr_picture_region, owned; at most
 *			VR_PROTO_MAX_REGIONS, sorted by address, not
 *			overlapping, each start < end <= VR_PROTO_MAX_INT,
 *			nr_accesses <= @aggr_interval_us /
 *			@sample_interval_us. NULL encodes as no regions.
 */
struct vr_proto_regions {
	uint64_t sample_interval_us;
	uint64_t aggr_interval_us;
	GArray *regions;
};

typedef struct vr_proto_regions vr_proto_regions;

/** vr_proto_regions_clear() - free @r's regions and zero it. */
void vr_proto_regions_clear(struct vr_proto_regions *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vr_proto_regions, vr_proto_regions_clear)

/**
 * struct vr_proto_cold_hist - what get-cold-histogram returns: the eligible
 * cold bytes of the agent's picture per cold score, computed by the agent
 * with vr_fleet_cold_histogram() under the first pageout scheme of the
 * histogram policy set-policy gave it.
 * @generation:		the set-policy generation of that policy, 1..
 *			VR_PROTO_MAX_INT.
 * @sample_interval_us, @aggr_interval_us: the picture's intervals, as in
 *			struct vr_proto_regions.
 * @nr_regions:		the regions of the picture, 0..VR_PROTO_MAX_REGIONS.
 * @bytes:		bytes per cold score, VR_PROTO_COLD_HIST_BUCKETS (exactly
 *			that many on the wire); their sum at most
 *			VR_PROTO_MAX_INT. The host bounds each and the sum by
 *			the guest's memory (hostd/agent/agent-session.c).
 */
struct vr_proto_cold_hist {
	uint64_t generation;
	uint64_t sample_interval_us;
	uint64_t aggr_interval_us;
	uint64_t nr_regions;
	uint64_t bytes[VR_PROTO_COLD_HIST_BUCKETS];
};

/**
 * struct vr_proto_reclaim_result - what reclaim returns.
 * @reclaimed_bytes:	bytes reclaimed.
 * @elapsed_ms:		time it took, in ms.
 */
struct vr_proto_reclaim_result {
	uint64_t reclaimed_bytes;
	uint64_t elapsed_ms;
};

/**
 * struct vr_proto_error_reply - an error reply's content.
 * @cls:	its class (a class this code does not know reads as
 *		VR_PROTO_ERROR_FAILED).
 * @desc:	one sentence, 1..VR_PROTO_MAX_DESC_LEN bytes of UTF-8 without
 *		control or format characters.
 */
struct vr_proto_error_reply {
	enum vr_proto_error_class cls;
	char desc[VR_PROTO_MAX_DESC_LEN + 1];
};

/**
 * vr_proto_encode_hello(), vr_proto_encode_stats(), vr_proto_encode_regions(),
 * vr_proto_encode_cold_hist(), vr_proto_encode_reclaim_result(), vr_proto_encode_empty() - the reply to
 * request @id (1..UINT32_MAX) with the given result; _empty() for set-policy,
 * pause and resume, which return {}.
 *
 * Return: owned, newline-terminated, at most VR_PROTO_MAX_LINE bytes. A
 * result that breaks the rules of its struct, or an @id of 0, gives a
 * "failed" error reply that names the problem instead.
 */
char *vr_proto_encode_hello(uint32_t id, const struct vr_proto_hello *hello);
char *vr_proto_encode_stats(uint32_t id, const struct vr_agent_stats *stats);
char *vr_proto_encode_regions(uint32_t id, const struct vr_proto_regions *regions);
char *vr_proto_encode_cold_hist(uint32_t id, const struct vr_proto_cold_hist *hist);
char *vr_proto_encode_reclaim_result(uint32_t id, const struct vr_proto_reclaim_result *result);
char *vr_proto_encode_empty(uint32_t id);

/**
 * vr_proto_encode_error() - an error reply to request @id (0: the id could
 * not be read; it is sent as null).
 * @cls:	the class (an unknown value is sent as "failed").
 * @desc:	one sentence (NULL or empty: a generic one for @cls). It is
 *		made valid UTF-8, control and format characters (bidi overrides)
 *		become spaces, and it is
 *		cut to VR_PROTO_MAX_DESC_LEN bytes.
 * Return: owned, newline-terminated, at most VR_PROTO_MAX_LINE bytes.
 */
char *vr_proto_encode_error(uint32_t id, enum vr_proto_error_class cls, const char *desc);

/**
 * vr_proto_encode_gerror() - vr_proto_encode_error() from @error: its code is
 * the class when it is in VR_PROTO_ERROR, "failed" otherwise; its message is
 * the description.
 */
char *vr_proto_encode_gerror(uint32_t id, const GError *error);

/**
 * vr_proto_encode_report() - the report numbered @seq (0..VR_PROTO_MAX_INT;
 * the host sees gaps as lost reports) of @stats.
 * Return: as vr_proto_encode_stats(); an invalid report gives a "failed"
 * error with a null id.
 */
char *vr_proto_encode_report(uint64_t seq, const struct vr_agent_stats *stats);

/**
 * enum vr_proto_message_kind - what an agent->host line is.
 * @VR_PROTO_MESSAGE_REPLY:	a reply ("return") to a request.
 * @VR_PROTO_MESSAGE_ERROR:	an error reply ("error").
 * @VR_PROTO_MESSAGE_REPORT:	a report ("report"), unsolicited.
 */
enum vr_proto_message_kind {
	VR_PROTO_MESSAGE_REPLY,
	VR_PROTO_MESSAGE_ERROR,
	VR_PROTO_MESSAGE_REPORT,
};

/**
 * struct vr_proto_message - an agent->host line, decoded and validated.
 * @kind:	which of the members below is set.
 * @id:		REPLY and ERROR: the request's id (ERROR: 0 when the agent
 *		could not read it); REPORT: 0.
 * @command:	REPLY: the command of request @id, which says which result
 *		member is set.
 * @seq:	REPORT: the report's number.
 * @hello:	REPLY to hello.
 * @stats:	REPLY to get-stats, and REPORT.
 * @regions:	REPLY to get-regions; owns its array.
 * @cold_hist:	REPLY to get-cold-histogram.
 * @reclaim:	REPLY to reclaim.
 * @error:	ERROR.
 * (set-policy, pause and resume return nothing.)
 *
 * Clear with vr_proto_message_clear().
 */
struct vr_proto_message {
	enum vr_proto_message_kind kind;
	uint32_t id;
	enum vr_proto_command command;
	uint64_t seq;
	union {
		struct vr_proto_hello hello;
		struct vr_agent_stats stats;
		struct vr_proto_regions regions;
		struct vr_proto_cold_hist cold_hist;
		struct vr_proto_reclaim_result reclaim;
		struct vr_proto_error_reply error;
	};
};

typedef struct vr_proto_message vr_proto_message;

/** vr_proto_message_clear() - free what @msg owns and zero it. */
void vr_proto_message_clear(struct vr_proto_message *msg);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vr_proto_message, vr_proto_message_clear)

/**
 * vr_proto_command_lookup - how the host says what a reply answers.
 * @id:		the reply's id.
 * @command:	set to the command of the request @id, when there is one.
 * @user_data:	the caller's.
 * Return: FALSE when no request @id is waiting for its reply.
 */
typedef gboolean (*vr_proto_command_lookup)(uint32_t id, enum vr_proto_command *command,
					    gpointer user_data);

/**
 * vr_proto_decode_message() - read and validate the agent's message in @len
 * bytes of @line (host side), with or without its final newline.
 * @lookup, @user_data: the command of the request a reply answers (a reply
 *		to an id @lookup does not know is refused).
 * @out:	filled in on success. Its previous content is not freed. On
 *		error nothing in it needs freeing, and @out->id is the message's
 *		id when it could be read (0 otherwise), so the host can fail
 *		that request at once instead of waiting for its timeout.
 * Return: TRUE, or FALSE with @error in VR_PROTO_ERROR (SYNTAX, TOO_LONG,
 * BAD_VERSION or INVALID_ARGUMENT) whose message names the member at fault,
 * e.g. "return.regions[3].start: ...".
 */
gboolean vr_proto_decode_message(const char *line, gsize len, vr_proto_command_lookup lookup,
				 gpointer user_data, struct vr_proto_message *out, GError **error);

/* ---- cutting a byte stream into lines ---- */

/**
 * struct vr_proto_reader - cuts the bytes read from a channel into lines.
 *
 * Feed it what each read returns, then take lines until there are none.
 * A line is what comes before a '\n', without it and without a '\r' before
 * it; lines of nothing but spaces, tabs and '\r' are skipped. A line longer
 * than VR_PROTO_MAX_LINE (its newline included) gives one TOO_LONG error as
 * soon as it is known to be too long, in its place among the lines; its bytes
 * are dropped up to its newline and the next line is read as usual. The
 * reader holds at most VR_PROTO_MAX_LINE - 1 bytes of an unfinished line,
 * plus the complete lines of the last feed that were not taken yet.
 */
struct vr_proto_reader;
typedef struct vr_proto_reader vr_proto_reader;

/** vr_proto_reader_new() - an empty reader; free with vr_proto_reader_free(). */
struct vr_proto_reader *vr_proto_reader_new(void);
void vr_proto_reader_free(struct vr_proto_reader *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_proto_reader, vr_proto_reader_free)

/** vr_proto_reader_feed() - add @len bytes of @data (any bytes) to the stream. */
void vr_proto_reader_feed(struct vr_proto_reader *r, const void *data, gsize len);

/**
 * vr_proto_reader_next() - the next line of the stream.
 * @line:	set to the line, owned by the caller, NUL-terminated (it may
 *		hold NULs of its own: @len counts its bytes); NULL when no
 *		complete line is left (feed more).
 * @len:	set to the line's length in bytes (0 with no line).
 * Return: TRUE (with a line or with NULL), or FALSE with @error
 * (VR_PROTO_ERROR_TOO_LONG) in the place of a line that was too long; call
 * again for the lines after it.
 */
gboolean vr_proto_reader_next(struct vr_proto_reader *r, char **line, gsize *len, GError **error);

/** vr_proto_reader_buffered() - the bytes @r holds: lines not taken yet and
 * the unfinished line. */
gsize vr_proto_reader_buffered(const struct vr_proto_reader *r);
