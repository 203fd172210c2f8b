/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of a get-regions reply checked as an access picture: the
 * protocol (common/protocol.c) checks the wire's part of the reply and runs
 * the picture's one rule check (vr_picture_check_at(), common/picture.h)
 * for the rest. For each rule, the decoder refuses a reply that breaks it
 * with an invalid-argument error whose message is the JSON path of the
 * member at fault followed by the picture's own message for that rule; the
 * agent's encoder refuses the same picture (a "failed" error reply instead
 * of a reply the host would refuse).
 *
 * Pure: each reply is written from a struct literal, so that the decoder and
 * vr_picture_check() see the very same picture. Parameter structs hold no
 * pointers (Criterion re-executes the binary for each test).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <string.h>

#include "picture.h"
#include "protocol.h"
#include "test-messages.h"

#define REPLY_ID 7

/**
 * struct rule_case - a get-regions reply that breaks one picture rule.
 * @name:	the rule broken.
 * @sample_us, @aggr_us: the reply's intervals.
 * @regions:	its first regions, @nr of them; @extra more after them, each
 *		4 KiB, 4 KiB apart, above the last (for "too many").
 * @code:	the picture's error code (enum vr_picture_error); -1 when the
 *		wire refuses first (a count above VR_PROTO_MAX_REGIONS).
 * @path:	the JSON path the error must start with.
 * @words:	what the message must say besides (msg_has_all()).
 */
struct rule_case {
	char name[48];
	uint64_t sample_us;
	uint64_t aggr_us;
	struct vr_picture_region regions[3];
	guint nr;
	guint extra;
	int code;
	char path[48];
	char words[48];
};

static const struct rule_case rule_cases[] = {
	{ "empty region",
	  5000,
	  100000,
	  { { 0, 4096, 1, 0 }, { 8192, 8192, 0, 0 } },
	  2,
	  0,
	  VR_PICTURE_ERROR_EMPTY,
	  "return.regions[1].end",
	  "empty" },
	{ "unsorted",
	  5000,
	  100000,
	  { { 8192, 12288, 0, 0 }, { 0, 4096, 0, 0 } },
	  2,
	  0,
	  VR_PICTURE_ERROR_ORDER,
	  "return.regions[1].start",
	  "sorted" },
	{ "overlapping",
	  5000,
	  100000,
	  { { 0, 4096, 0, 0 }, { 8192, 16384, 0, 0 }, { 12288, 20480, 0, 0 } },
	  3,
	  0,
	  VR_PICTURE_ERROR_ORDER,
	  "return.regions[2].start",
	  "overlap" },
	{ "more accesses than samples",
	  5000,
	  100000,
	  { { 0, 4096, 20, 0 }, { 4096, 8192, 21, 0 } },
	  2,
	  0,
	  VR_PICTURE_ERROR_ACCESSES,
	  "return.regions[1].nr_accesses",
	  "21;20" },
	{ "sample interval 0",
	  0,
	  100000,
	  { { 0, 4096, 0, 0 } },
	  1,
	  0,
	  VR_PICTURE_ERROR_INTERVALS,
	  "return.sample_interval_us",
	  "is 0" },
	{ "aggregation below sampling",
	  5000,
	  4000,
	  { { 0, 4096, 0, 0 } },
	  1,
	  0,
	  VR_PICTURE_ERROR_INTERVALS,
	  "return.aggr_interval_us",
	  "4000;5000" },
	{ "aggregation above an hour",
	  1000000,
	  3601000000ULL,
	  { { 0, 4096, 0, 0 } },
	  1,
	  0,
	  VR_PICTURE_ERROR_INTERVALS,
	  "return.aggr_interval_us",
	  "3601000000;3600000000" },
	{ "too many samples per aggregation",
	  1,
	  65537,
	  { { 0, 4096, 0, 0 } },
	  1,
	  0,
	  VR_PICTURE_ERROR_INTERVALS,
	  "return.aggr_interval_us",
	  "65537;65536" },
	{ "too many regions",
	  5000,
	  100000,
	  { { 0, 4096, 0, 0 } },
	  1,
	  VR_PICTURE_MAX_REGIONS,
	  -1,
	  "return.regions",
	  "512;513" },
};

/* The regions of @c, as an array. */
static GArray *case_regions(const struct rule_case *c)
{
	GArray *a = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));

	g_array_append_vals(a, c->regions, c->nr);
	for (guint i = 0; i < c->extra; i++) {
		uint64_t start = c->regions[c->nr - 1].end + (uint64_t)(2 * i + 1) * 4096;
		struct vr_picture_region r = { start, start + 4096, 0, 0 };

		g_array_append_val(a, r);
	}
	return a;
}

/* The reply line of @c's picture, written by hand: the encoder refuses it. */
static char *case_line(const struct rule_case *c, const GArray *regions)
{
	GString *s = g_string_new(NULL);

	g_string_append_printf(
		s,
		"{\"vreclaim\":1,\"id\":%d,\"return\":{\"sample_interval_us\":%" G_GUINT64_FORMAT
		",\"aggr_interval_us\":%" G_GUINT64_FORMAT ",\"regions\":[",
		REPLY_ID, c->sample_us, c->aggr_us);
	for (guint i = 0; i < regions->len; i++) {
		const struct vr_picture_region *r =
			&g_array_index(regions, struct vr_picture_region, i);

		g_string_append_printf(s,
				       "%s{\"start\":%" G_GUINT64_FORMAT
				       ",\"end\":%" G_GUINT64_FORMAT
				       ",\"nr_accesses\":%u,\"age\":%u}",
				       i ? "," : "", r->start, r->end, r->nr_accesses, r->age);
	}
	g_string_append(s, "]}}\n");
	return g_string_free(s, FALSE);
}

static gboolean lookup_get_regions(uint32_t id, enum vr_proto_command *command, gpointer user)
{
	(void)user;
	if (id != REPLY_ID)
		return FALSE;
	*command = VR_PROTO_GET_REGIONS;
	return TRUE;
}

TestSuite(proto_picture, .description = "a get-regions reply checked as an access picture");

ParameterizedTestParameters(proto_picture, the_decoder_names_the_path_and_the_rule)
{
	return cr_make_param_array(struct rule_case, rule_cases, G_N_ELEMENTS(rule_cases));
}

ParameterizedTest(const struct rule_case *c, proto_picture, the_decoder_names_the_path_and_the_rule)
{
	g_autoptr(GArray) regions = case_regions(c);
	g_autofree char *line = case_line(c, regions);
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) rule = NULL;
	g_autofree char *prefix = g_strdup_printf("%s: ", c->path);
	g_auto(vr_proto_message) msg = { 0 };

	cr_assert_not(vr_proto_decode_message(line, strlen(line), lookup_get_regions, NULL, &msg,
					      &err),
		      "%s: the reply should be refused: %s", c->name, line);
	cr_assert(g_error_matches(err, VR_PROTO_ERROR, VR_PROTO_ERROR_INVALID_ARGUMENT),
		  "%s: expected an invalid-argument error, got %s %d: %s", c->name,
		  g_quark_to_string(err->domain), err->code, err->message);
	cr_assert(g_str_has_prefix(err->message, prefix),
		  "%s: the message should start with '%s': %s", c->name, prefix, err->message);
	cr_assert(msg_has_all(err->message, c->words), "%s: the message should say %s: %s", c->name,
		  c->words, err->message);
	cr_assert_eq(msg.id, REPLY_ID, "%s: the error is about request %d", c->name, REPLY_ID);

	/* The very rule and message of the picture's check. */
	cr_assert_not(vr_picture_check(regions, c->sample_us, c->aggr_us, NULL, &rule),
		      "%s: the picture check should refuse it too", c->name);
	if (c->code >= 0) {
		cr_assert_eq(rule->code, c->code, "%s: expected picture rule %d, got %d: %s",
			     c->name, c->code, rule->code, rule->message);
		cr_assert_str_eq(err->message + strlen(prefix), rule->message,
				 "%s: the protocol's message should be the picture's", c->name);
	}
}

ParameterizedTestParameters(proto_picture, the_encoder_refuses_what_the_host_would)
{
	return cr_make_param_array(struct rule_case, rule_cases, G_N_ELEMENTS(rule_cases));
}

/* The agent cannot send a picture the host refuses: it sends "failed",
 * naming the same path. */
ParameterizedTest(const struct rule_case *c, proto_picture, the_encoder_refuses_what_the_host_would)
{
	g_auto(vr_proto_regions) r = {
		.sample_interval_us = c->sample_us,
		.aggr_interval_us = c->aggr_us,
		.regions = case_regions(c),
	};
	g_autofree char *line = vr_proto_encode_regions(REPLY_ID, &r);
	g_autoptr(GError) err = NULL;
	g_auto(vr_proto_message) msg = { 0 };

	cr_assert_not_null(line, "%s: no line", c->name);
	cr_assert(vr_proto_decode_message(line, strlen(line), lookup_get_regions, NULL, &msg, &err),
		  "%s: the encoder's line should decode: %s: %s", c->name, line,
		  err ? err->message : "");
	cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_ERROR, "%s: expected an error reply, got %s",
		     c->name, line);
	cr_assert_eq(msg.error.cls, VR_PROTO_ERROR_FAILED, "%s: class %s", c->name,
		     vr_proto_error_class_name(msg.error.cls));
	cr_assert(msg_has_all(msg.error.desc, c->path), "%s: the reply should name %s: %s", c->name,
		  c->path, msg.error.desc);
	cr_assert(msg_has_all(msg.error.desc, c->words), "%s: the reply should say %s: %s", c->name,
		  c->words, msg.error.desc);
}

/* The edges of each rule pass both ways: adjacent regions, nr_accesses at
 * aggr / sample, an hour's aggregation of 65536 samples, 512 regions. */
Test(proto_picture, a_picture_at_every_edge_round_trips)
{
	const struct rule_case edge = {
		"edges",
		VR_PICTURE_MAX_AGGR_INTERVAL_US / VR_PICTURE_MAX_NR_ACCESSES,
		VR_PICTURE_MAX_AGGR_INTERVAL_US,
		{ { 0, 4096, VR_PICTURE_MAX_NR_ACCESSES, 0 }, { 4096, 8192, 0, G_MAXUINT32 } },
		2,
		VR_PICTURE_MAX_REGIONS - 2,
		-1,
		"",
		""
	};
	g_autoptr(GArray) regions = case_regions(&edge);
	g_autofree char *line = case_line(&edge, regions);
	g_autoptr(GError) err = NULL;
	g_auto(vr_proto_message) msg = { 0 };
	g_auto(vr_proto_regions) r = { edge.sample_us, edge.aggr_us, NULL };
	g_autofree char *encoded = NULL;

	cr_assert(vr_proto_decode_message(line, strlen(line), lookup_get_regions, NULL, &msg, &err),
		  "the picture at its edges should decode: %s", err ? err->message : "");
	cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_eq(msg.regions.regions->len, VR_PICTURE_MAX_REGIONS);
	r.regions = g_array_copy(regions);
	encoded = vr_proto_encode_regions(REPLY_ID, &r);
	cr_assert_str_eq(encoded, line, "the encoder should write the same line");
}
