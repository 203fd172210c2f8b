/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of a domain's vreclaim tuning in libvirt's domain XML
 * (hostd/libvirt/domain-xml.c, docs/domain-xml.md): the metadata element in every
 * form libvirt returns and operators write, every element and unit, every
 * kind of invalid metadata (tables of text and expected message), the
 * serializer's round trip, `vreclaimctl set`'s keys, the scheme overrides
 * applied to a policy, and the live domain XML fixtures of tests/data/libvirt.
 *
 * Metadata in the tables is written with ' for " (dq() swaps them back).
 * Criterion re-executes the binary for each test: parameter structs hold no
 * pointers.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "libvirt/domain-xml.h"
#include "policy.h"
#include "test-messages.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define KIB	     (1ULL << 10)
#define MIB	     (1ULL << 20)
#define GIB	     (1ULL << 30)
#define TIB	     (1ULL << 40)
#define PIB	     (1ULL << 50)
#define US_PER_MS    1000ULL
#define US_PER_S     1000000ULL

/* ---- helpers ---- */

/* @text with ' turned into ": owned. */
static char *dq(const char *text)
{
	char *s = g_strdup(text);

	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}

static struct vr_domain_tuning *parse_ok(const char *xml, const char *what)
{
	g_autofree char *text = dq(xml);
	g_autoptr(GError) err = NULL;
	struct vr_domain_tuning *t = vr_domain_tuning_parse(text, &err);

	cr_assert_not_null(t, "%s: expected the metadata to parse:\n%s\ngot: %s", what, text,
			   err ? err->message : "NULL without an error");
	cr_assert_null(err, "%s: no error expected on success", what);
	return t;
}

static void expect_error(const GError *err, int code, const char *fragments, const char *what)
{
	cr_assert_not_null(err, "%s: expected an error", what);
	cr_assert_eq(err->domain, VR_DOMAIN_XML_ERROR,
		     "%s: expected the VR_DOMAIN_XML_ERROR domain, got %s (%s)", what,
		     g_quark_to_string(err->domain), err->message);
	cr_assert_eq(err->code, code, "%s: expected error code %d, got %d (%s)", what, code,
		     err->code, err->message);
	cr_assert(msg_has_any(err->message, fragments),
		  "%s: expected the message to contain '%s', got: %s", what, fragments,
		  err->message);
}

#define EQ(what, field, got, want)                                                                 \
	cr_assert_eq((uint64_t)(got), (uint64_t)(want),                                            \
		     "%s: %s: expected %" PRIu64 ", got %" PRIu64, what, field, (uint64_t)(want),  \
		     (uint64_t)(got))

/* The fields of a tuning, by number, so tables can name one. */
enum tfield {
	T_ENABLE,
	T_PRIORITY,
	T_GUARANTEED,
	T_ACTIONS,
	T_MIN_AGE_US,
	T_QUOTA_TIME_MS,
	T_QUOTA_SIZE,
	T_MAX_ACCESSES,
};

static const char *const tfield_names[] = {
	"enable",     "priority",      "guaranteed_bytes", "actions",
	"min_age_us", "quota_time_ms", "quota_size_bytes", "max_accesses",
};

/* The value of @f in @t; for optional fields, whether it is set in @has. */
static uint64_t tfield_get(const struct vr_domain_tuning *t, enum tfield f, gboolean *has)
{
	const struct vr_domain_scheme_overrides *o = &t->scheme;

	*has = TRUE;
	switch (f) {
	case T_ENABLE:
		return (uint64_t)t->enable;
	case T_PRIORITY:
		return t->priority;
	case T_GUARANTEED:
		return t->guaranteed_bytes;
	case T_ACTIONS:
		return t->actions;
	case T_MIN_AGE_US:
		*has = o->has_min_age;
		return o->min_age_us;
	case T_QUOTA_TIME_MS:
		*has = o->has_quota_time;
		return o->quota_time_ms;
	case T_QUOTA_SIZE:
		*has = o->has_quota_size;
		return o->quota_size_bytes;
	case T_MAX_ACCESSES:
		*has = o->has_max_accesses;
		return o->max_accesses;
	}
	cr_assert_fail("unknown field %d", f);
	return 0;
}

static void expect_field(const struct vr_domain_tuning *t, enum tfield f, uint64_t want,
			 const char *what)
{
	gboolean has;
	uint64_t got = tfield_get(t, f, &has);

	cr_assert(has, "%s: expected %s to be set", what, tfield_names[f]);
	EQ(what, tfield_names[f], got, want);
}

static void expect_defaults(const struct vr_domain_tuning *t, gboolean enable, const char *what)
{
	cr_assert_eq(t->enable, enable, "%s: expected enable %d, got %d", what, enable, t->enable);
	cr_assert_null(t->policy, "%s: expected no policy (the default), got '%s'", what,
		       t->policy);
	EQ(what, "priority", t->priority, VR_DOMAIN_PRIORITY_DEFAULT);
	EQ(what, "guaranteed_bytes", t->guaranteed_bytes, 0);
	EQ(what, "actions", t->actions, VR_DOMAIN_ACTION_AGENT_RECLAIM);
	cr_assert(!t->scheme.has_min_age && !t->scheme.has_quota_time &&
			  !t->scheme.has_quota_size && !t->scheme.has_max_accesses,
		  "%s: expected no scheme override", what);
}

/* ---- defaults and the full example ---- */

TestSuite(tuning_parse, .description = "vr_domain_tuning_parse(): valid metadata");

Test(tuning_parse, new_tuning_is_disabled_with_defaults)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();

	expect_defaults(t, FALSE, "vr_domain_tuning_new()");
}

Test(tuning_parse, empty_element_enables_with_defaults)
{
	g_autoptr(vr_domain_tuning) t = parse_ok("<domain/>", "<domain/>");

	expect_defaults(t, TRUE, "<domain/>");
}

/* The example of docs/domain-xml.md, as an operator writes it in `virsh edit`. */
static const char full_doc[] =
	"<vreclaim:domain xmlns:vreclaim='http://vreclaim.org/xmlns/domain/1'>\n"
	"  <vreclaim:enable>yes</vreclaim:enable>\n"
	"  <vreclaim:policy>web-tier</vreclaim:policy>\n"
	"  <vreclaim:priority>80</vreclaim:priority>\n"
	"  <vreclaim:guaranteed unit='MiB'>512</vreclaim:guaranteed>\n"
	"  <vreclaim:actions>agent-reclaim balloon</vreclaim:actions>\n"
	"  <vreclaim:scheme>\n"
	"    <vreclaim:min-age unit='s'>60</vreclaim:min-age>\n"
	"    <vreclaim:quota-time unit='ms'>20</vreclaim:quota-time>\n"
	"    <vreclaim:quota-size unit='MiB'>64</vreclaim:quota-size>\n"
	"    <vreclaim:max-accesses>1</vreclaim:max-accesses>\n"
	"  </vreclaim:scheme>\n"
	"</vreclaim:domain>\n";

static void expect_full(const struct vr_domain_tuning *t, const char *what)
{
	cr_assert(t->enable, "%s: expected enable", what);
	cr_assert_str_eq(t->policy, "web-tier", "%s: expected policy 'web-tier', got '%s'", what,
			 t->policy ? t->policy : "(none)");
	expect_field(t, T_PRIORITY, 80, what);
	expect_field(t, T_GUARANTEED, 512 * MIB, what);
	expect_field(t, T_ACTIONS, VR_DOMAIN_ACTION_AGENT_RECLAIM | VR_DOMAIN_ACTION_BALLOON, what);
	expect_field(t, T_MIN_AGE_US, 60 * US_PER_S, what);
	expect_field(t, T_QUOTA_TIME_MS, 20, what);
	expect_field(t, T_QUOTA_SIZE, 64 * MIB, what);
	expect_field(t, T_MAX_ACCESSES, 1, what);
}

Test(tuning_parse, full_example)
{
	g_autoptr(vr_domain_tuning) t = parse_ok(full_doc, "the full example");

	expect_full(t, "the full example");
}

/* The same settings in every form the element reaches us in. */
struct form_case {
	char name[64];
	char xml[900];
};

static struct form_case form_cases[] = {
	{
		/* virDomainGetMetadata's answer: libvirt strips our namespace
		 * and leaves the key's declaration (measured with libvirt 9.0). */
		"libvirt's GetMetadata answer",
		"<domain xmlns:vreclaim='http://vreclaim.org/xmlns/domain/1'>\n"
		"  <enable>yes</enable>\n  <policy>web-tier</policy>\n  <priority>80</priority>\n"
		"  <guaranteed unit='MiB'>512</guaranteed>\n"
		"  <actions>agent-reclaim balloon</actions>\n"
		"  <scheme>\n    <min-age unit='s'>60</min-age>\n"
		"    <quota-time unit='ms'>20</quota-time>\n"
		"    <quota-size unit='MiB'>64</quota-size>\n"
		"    <max-accesses>1</max-accesses>\n  </scheme>\n</domain>",
	},
	{
		"another prefix",
		"<v:domain xmlns:v='http://vreclaim.org/xmlns/domain/1'><v:enable>yes</v:enable>"
		"<v:policy>web-tier</v:policy><v:priority>80</v:priority>"
		"<v:guaranteed unit='MiB'>512</v:guaranteed>"
		"<v:actions>agent-reclaim balloon</v:actions><v:scheme>"
		"<v:min-age unit='s'>60</v:min-age><v:quota-time>20</v:quota-time>"
		"<v:quota-size unit='MiB'>64</v:quota-size><v:max-accesses>1</v:max-accesses>"
		"</v:scheme></v:domain>",
	},
	{
		"the default namespace",
		"<domain xmlns='http://vreclaim.org/xmlns/domain/1'><enable>yes</enable>"
		"<policy>web-tier</policy><priority>80</priority>"
		"<guaranteed unit='MiB'>512</guaranteed><actions>agent-reclaim balloon</actions>"
		"<scheme><min-age unit='s'>60</min-age><quota-time>20</quota-time>"
		"<quota-size unit='MiB'>64</quota-size><max-accesses>1</max-accesses></scheme>"
		"</domain>",
	},
	{
		"declaration, comments, CDATA, spaces, any order",
		"<?xml version='1.0'?>\n<!-- vreclaim -->\n<domain>\n"
		"  <scheme><max-accesses> 1 </max-accesses><quota-size unit='mib'>64</quota-size>"
		"<!-- c --><quota-time>2<!-- split -->0</quota-time>"
		"<min-age unit='min'>1</min-age></scheme>\n"
		"  <actions>\n    balloon\n    agent-reclaim\n  </actions>\n"
		"  <guaranteed unit='M'>512</guaranteed><priority><![CDATA[80]]></priority>"
		"<policy>web-tier</policy><enable>yes</enable>\n</domain>\n<!-- end -->\n",
	},
	{
		"a child redeclaring our namespace",
		"<domain><enable>yes</enable><policy>web-tier</policy><priority>80</priority>"
		"<x:guaranteed xmlns:x='http://vreclaim.org/xmlns/domain/1' "
		"unit='MiB'>512</x:guaranteed><actions>agent-reclaim balloon</actions>"
		"<scheme xmlns='http://vreclaim.org/xmlns/domain/1'><min-age unit='s'>60</min-age>"
		"<quota-time>20</quota-time><quota-size unit='MiB'>64</quota-size>"
		"<max-accesses>1</max-accesses></scheme></domain>",
	},
};

ParameterizedTestParameters(tuning_parse, forms)
{
	return cr_make_param_array(struct form_case, form_cases, ARRAY_LEN(form_cases));
}

ParameterizedTest(struct form_case *c, tuning_parse, forms)
{
	g_autoptr(vr_domain_tuning) t = parse_ok(c->xml, c->name);

	expect_full(t, c->name);
}

/* One element, one value: what it becomes. */
struct value_case {
	char xml[160];
	enum tfield field;
	uint64_t want;
};

static struct value_case value_cases[] = {
	{ "<domain><enable>no</enable></domain>", T_ENABLE, 0 },
	{ "<domain><enable>yes</enable></domain>", T_ENABLE, 1 },
	{ "<domain><priority>0</priority></domain>", T_PRIORITY, 0 },
	{ "<domain><priority>100</priority></domain>", T_PRIORITY, 100 },
	{ "<domain><priority>007</priority></domain>", T_PRIORITY, 7 },
	/* sizes: no unit is bytes; units as libvirt's <memory unit=...> */
	{ "<domain><guaranteed>4096</guaranteed></domain>", T_GUARANTEED, 4096 },
	{ "<domain><guaranteed unit='b'>1</guaranteed></domain>", T_GUARANTEED, 1 },
	{ "<domain><guaranteed unit='bytes'>2</guaranteed></domain>", T_GUARANTEED, 2 },
	{ "<domain><guaranteed unit='byte'>3</guaranteed></domain>", T_GUARANTEED, 3 },
	{ "<domain><guaranteed unit='KiB'>3</guaranteed></domain>", T_GUARANTEED, 3 * KIB },
	{ "<domain><guaranteed unit='k'>3</guaranteed></domain>", T_GUARANTEED, 3 * KIB },
	{ "<domain><guaranteed unit='KB'>3</guaranteed></domain>", T_GUARANTEED, 3000 },
	{ "<domain><guaranteed unit='MiB'>5</guaranteed></domain>", T_GUARANTEED, 5 * MIB },
	{ "<domain><guaranteed unit='MB'>5</guaranteed></domain>", T_GUARANTEED, 5000000 },
	{ "<domain><guaranteed unit='G'>2</guaranteed></domain>", T_GUARANTEED, 2 * GIB },
	{ "<domain><guaranteed unit='GiB'>2</guaranteed></domain>", T_GUARANTEED, 2 * GIB },
	{ "<domain><guaranteed unit='gb'>2</guaranteed></domain>", T_GUARANTEED, 2000000000ULL },
	{ "<domain><guaranteed unit='TiB'>1</guaranteed></domain>", T_GUARANTEED, TIB },
	{ "<domain><guaranteed unit='TB'>1</guaranteed></domain>", T_GUARANTEED, 1000000000000ULL },
	{ "<domain><guaranteed unit='PiB'>1</guaranteed></domain>", T_GUARANTEED, PIB },
	{ "<domain><guaranteed unit='P'>1</guaranteed></domain>", T_GUARANTEED, PIB },
	{ "<domain><guaranteed unit='PB'>1</guaranteed></domain>", T_GUARANTEED,
	  1000000000000000ULL },
	{ "<domain><guaranteed unit='EiB'>0</guaranteed></domain>", T_GUARANTEED, 0 },
	{ "<domain><actions>host-pageout</actions></domain>", T_ACTIONS,
	  VR_DOMAIN_ACTION_HOST_PAGEOUT },
	{ "<domain><actions>balloon host-pageout agent-reclaim</actions></domain>", T_ACTIONS,
	  VR_DOMAIN_ACTIONS_ALL },
	/* times: no unit is ms */
	{ "<domain><scheme><min-age>500</min-age></scheme></domain>", T_MIN_AGE_US,
	  500 * US_PER_MS },
	{ "<domain><scheme><min-age unit='us'>250</min-age></scheme></domain>", T_MIN_AGE_US, 250 },
	{ "<domain><scheme><min-age unit='ms'>0</min-age></scheme></domain>", T_MIN_AGE_US, 0 },
	{ "<domain><scheme><min-age unit='s'>5</min-age></scheme></domain>", T_MIN_AGE_US,
	  5 * US_PER_S },
	{ "<domain><scheme><min-age unit='min'>2</min-age></scheme></domain>", T_MIN_AGE_US,
	  120 * US_PER_S },
	{ "<domain><scheme><min-age unit='h'>720</min-age></scheme></domain>", T_MIN_AGE_US,
	  720 * 3600 * US_PER_S },
	{ "<domain><scheme><quota-time>10</quota-time></scheme></domain>", T_QUOTA_TIME_MS, 10 },
	{ "<domain><scheme><quota-time unit='s'>2</quota-time></scheme></domain>", T_QUOTA_TIME_MS,
	  2000 },
	{ "<domain><scheme><quota-time unit='h'>1</quota-time></scheme></domain>", T_QUOTA_TIME_MS,
	  3600000 },
	{ "<domain><scheme><quota-time>0</quota-time></scheme></domain>", T_QUOTA_TIME_MS, 0 },
	{ "<domain><scheme><quota-size unit='KiB'>8</quota-size></scheme></domain>", T_QUOTA_SIZE,
	  8 * KIB },
	{ "<domain><scheme><quota-size>0</quota-size></scheme></domain>", T_QUOTA_SIZE, 0 },
	{ "<domain><scheme><max-accesses>0</max-accesses></scheme></domain>", T_MAX_ACCESSES, 0 },
	{ "<domain><scheme><max-accesses>65536</max-accesses></scheme></domain>", T_MAX_ACCESSES,
	  65536 },
};

ParameterizedTestParameters(tuning_parse, values)
{
	return cr_make_param_array(struct value_case, value_cases, ARRAY_LEN(value_cases));
}

ParameterizedTest(struct value_case *c, tuning_parse, values)
{
	g_autoptr(vr_domain_tuning) t = parse_ok(c->xml, c->xml);

	expect_field(t, c->field, c->want, c->xml);
}

Test(tuning_parse, policy_names)
{
	static const char *const names[] = { "a", "web-tier", "db_2.large", "A.b-C_9",
					     /* 64 characters */
					     "0123456789012345678901234567890123456789012345678901"
					     "234567890123" };

	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *xml =
			g_strdup_printf("<domain><policy>%s</policy></domain>", names[i]);
		g_autoptr(vr_domain_tuning) t = parse_ok(xml, names[i]);

		cr_assert_str_eq(t->policy, names[i], "expected policy '%s', got '%s'", names[i],
				 t->policy);
	}
}

/* ---- invalid metadata ---- */

TestSuite(tuning_invalid,
	  .description = "vr_domain_tuning_parse(): every kind of invalid metadata");

struct invalid_case {
	char xml[240];
	int code;
	char fragments[120]; /* '|'-separated: one must be in the message */
};

#define SYNTAX	VR_DOMAIN_XML_ERROR_SYNTAX
#define INVALID VR_DOMAIN_XML_ERROR_INVALID

static struct invalid_case invalid_cases[] = {
	/* not XML, or more than one element */
	{ "", SYNTAX, "empty" },
	{ "  \n ", SYNTAX, "empty" },
	{ "hello", SYNTAX, "not well-formed" },
	{ "<domain>", SYNTAX, "not well-formed" },
	{ "<domain><priority>1</domain>", SYNTAX, "not well-formed" },
	{ "<domain/>junk", SYNTAX, "content after the end of <domain>" },
	{ "<domain/><domain/>", SYNTAX, "after the end of <domain>" },
	{ "<domain><priority>&nbsp;</priority></domain>", SYNTAX, "not well-formed" },
	{ "<!DOCTYPE domain><domain/>", SYNTAX, "DOCTYPE" },
	{ "<domain><?pi x?></domain>", SYNTAX, "processing instructions" },
	/* the root and namespaces */
	{ "<vreclaim/>", INVALID, "root element is <vreclaim> (expected <domain>)" },
	{ "<domain xmlns='urn:other'/>", INVALID, "namespace 'urn:other'" },
	{ "<o:domain xmlns:o='urn:other'/>", INVALID, "namespace 'urn:other'" },
	{ "<v:domain/>", INVALID, "prefix 'v' is not declared" },
	{ "<domain xmlns:v=''/>", INVALID, "invalid namespace declaration xmlns:v" },
	{ "<domain><o:priority xmlns:o='urn:o'>1</o:priority></domain>", INVALID,
	  "<o:priority> is in the namespace 'urn:o'" },
	{ "<domain><a:b:c/></domain>", INVALID, "<a:b:c> is not a valid element name" },
	/* elements */
	{ "<domain><colour>red</colour></domain>", INVALID,
	  "unknown element <colour> in <domain> (expected enable, policy, priority, guaranteed, "
	  "actions, scheme)" },
	{ "<domain><min-age>1</min-age></domain>", INVALID,
	  "unknown element <min-age> in <domain>" },
	{ "<domain><scheme><priority>1</priority></scheme></domain>", INVALID,
	  "unknown element <priority> in <scheme> (expected min-age, quota-time, quota-size, "
	  "max-accesses)" },
	{ "<domain><priority><x/></priority></domain>", INVALID,
	  "<priority>: unexpected element <x>" },
	{ "<domain>yes</domain>", INVALID, "<domain>: unexpected text 'yes'" },
	{ "<domain><scheme>60</scheme></domain>", INVALID, "<scheme>: unexpected text '60'" },
	{ "<domain><priority>1</priority><priority>2</priority></domain>", INVALID,
	  "<priority> is given twice" },
	{ "<domain><scheme/><scheme/></domain>", INVALID, "<scheme> is given twice" },
	{ "<domain><scheme><min-age>1</min-age><min-age>2</min-age></scheme></domain>", INVALID,
	  "<min-age> is given twice" },
	/* attributes */
	{ "<domain version='2'/>", INVALID,
	  "<domain>: unknown attribute 'version' (allowed: none)" },
	{ "<domain><priority unit='ms'>1</priority></domain>", INVALID,
	  "<priority>: unknown attribute 'unit' (allowed: none)" },
	{ "<domain><guaranteed size='1'>1</guaranteed></domain>", INVALID,
	  "<guaranteed>: unknown attribute 'size' (allowed: unit)" },
	{ "<domain><enable xml:lang='en'>yes</enable></domain>", INVALID,
	  "unknown attribute 'xml:lang'" },
	{ "<domain><guaranteed unit='MiB' unit='GiB'>1</guaranteed></domain>", INVALID,
	  "attribute 'unit' twice" },
	/* enable */
	{ "<domain><enable>maybe</enable></domain>", INVALID,
	  "<enable>: 'maybe' is not allowed (expected yes or no)" },
	{ "<domain><enable>YES</enable></domain>", INVALID, "expected yes or no" },
	{ "<domain><enable/></domain>", INVALID,
	  "<enable>: the value is empty (expected yes or no)" },
	/* policy */
	{ "<domain><policy></policy></domain>", INVALID, "<policy>: the value is empty" },
	{ "<domain><policy>../etc/passwd</policy></domain>", INVALID,
	  "<policy>: policy name '../etc/passwd' starts with '.'" },
	{ "<domain><policy>a/b</policy></domain>", INVALID, "has the character '/'" },
	{ "<domain><policy>web tier</policy></domain>", INVALID, "has the character ' '" },
	{ "<domain><policy>.hidden</policy></domain>", INVALID, "starts with '.'" },
	{ "<domain><policy>default</policy></domain>", INVALID, "'default' is reserved" },
	{ "<domain><policy>01234567890123456789012345678901234567890123456789012345678901234"
	  "</policy></domain>",
	  INVALID, "has 65 characters (expected 1 to 64" },
	/* priority */
	{ "<domain><priority>101</priority></domain>", INVALID,
	  "<priority>: '101' is out of range (expected an integer from 0 to 100)" },
	{ "<domain><priority>-1</priority></domain>", INVALID,
	  "<priority>: '-1' is not a whole number (expected an integer from 0 to 100)" },
	{ "<domain><priority>1.5</priority></domain>", INVALID, "'1.5' is not a whole number" },
	{ "<domain><priority>0x10</priority></domain>", INVALID, "'0x10' is not a whole number" },
	{ "<domain><priority>+5</priority></domain>", INVALID, "'+5' is not a whole number" },
	{ "<domain><priority>99999999999999999999999</priority></domain>", INVALID,
	  "'99999999999999999999999' is out of range" },
	{ "<domain><priority> </priority></domain>", INVALID, "<priority>: the value is empty" },
	/* guaranteed and quota-size */
	{ "<domain><guaranteed unit='XB'>1</guaranteed></domain>", INVALID,
	  "<guaranteed>: unknown unit 'XB' (expected b, bytes, KiB" },
	{ "<domain><guaranteed unit=''>1</guaranteed></domain>", INVALID, "unknown unit ''" },
	{ "<domain><guaranteed unit='MiBs'>1</guaranteed></domain>", INVALID,
	  "unknown unit 'MiBs'" },
	{ "<domain><guaranteed unit='TiB'>2048</guaranteed></domain>", INVALID,
	  "<guaranteed>: '2048 TiB' is out of range (expected a size up to 1 PiB)" },
	{ "<domain><guaranteed unit='EiB'>1</guaranteed></domain>", INVALID,
	  "'1 EiB' is out of range" },
	{ "<domain><guaranteed unit='EiB'>16</guaranteed></domain>", INVALID,
	  "'16 EiB' is out of range" },
	{ "<domain><guaranteed unit='GiB'>1.5</guaranteed></domain>", INVALID,
	  "'1.5 GiB' is not a whole number" },
	{ "<domain><guaranteed>512MiB</guaranteed></domain>", INVALID,
	  "'512MiB' is not a whole number" },
	{ "<domain><scheme><quota-size unit='PiB'>2</quota-size></scheme></domain>", INVALID,
	  "<quota-size>: '2 PiB' is out of range" },
	/* actions */
	{ "<domain><actions></actions></domain>", INVALID,
	  "<actions>: the value is empty (expected one or more of agent-reclaim, host-pageout, "
	  "balloon)" },
	{ "<domain><actions>teleport</actions></domain>", INVALID,
	  "<actions>: unknown action 'teleport' (expected one or more of agent-reclaim" },
	{ "<domain><actions>balloon balloon</actions></domain>", INVALID,
	  "<actions>: action 'balloon' is given twice" },
	{ "<domain><actions>agent-reclaim,balloon</actions></domain>", INVALID,
	  "unknown action 'agent-reclaim,balloon'" },
	/* times */
	{ "<domain><scheme><min-age unit='d'>1</min-age></scheme></domain>", INVALID,
	  "<min-age>: unknown unit 'd' (expected us, ms, s, min, h)" },
	{ "<domain><scheme><min-age unit='h'>721</min-age></scheme></domain>", INVALID,
	  "<min-age>: '721 h' is out of range (expected a time up to 30 days)" },
	{ "<domain><scheme><min-age>-5</min-age></scheme></domain>", INVALID,
	  "'-5' is not a whole number" },
	{ "<domain><scheme><quota-time unit='us'>500</quota-time></scheme></domain>", INVALID,
	  "<quota-time>: unknown unit 'us' (expected ms, s, min, h)" },
	{ "<domain><scheme><quota-time unit='min'>61</quota-time></scheme></domain>", INVALID,
	  "<quota-time>: '61 min' is out of range (expected a time in ms up to 1 hour)" },
	{ "<domain><scheme><quota-time/></scheme></domain>", INVALID,
	  "<quota-time>: the value is empty" },
	/* max-accesses */
	{ "<domain><scheme><max-accesses>65537</max-accesses></scheme></domain>", INVALID,
	  "<max-accesses>: '65537' is out of range (expected an integer from 0 to 65536)" },
	{ "<domain><scheme><max-accesses unit='s'>1</max-accesses></scheme></domain>", INVALID,
	  "<max-accesses>: unknown attribute 'unit'" },
};

ParameterizedTestParameters(tuning_invalid, refused)
{
	return cr_make_param_array(struct invalid_case, invalid_cases, ARRAY_LEN(invalid_cases));
}

ParameterizedTest(struct invalid_case *c, tuning_invalid, refused)
{
	g_autofree char *xml = dq(c->xml);
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_parse(xml, &err);

	cr_assert_null(t, "expected the metadata to be refused: %s", xml);
	expect_error(err, c->code, c->fragments, xml);
}

Test(tuning_invalid, too_large)
{
	g_autoptr(GString) xml = g_string_new("<domain>");
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_domain_tuning) t = NULL;

	while (xml->len <= VR_DOMAIN_XML_METADATA_MAX_BYTES)
		g_string_append(xml, "<!-- padding padding padding padding padding -->\n");
	g_string_append(xml, "</domain>");
	t = vr_domain_tuning_parse(xml->str, &err);
	cr_assert_null(t, "expected metadata of %zu bytes to be refused", xml->len);
	expect_error(err, SYNTAX, "larger than 65536 bytes", "too large");
}

Test(tuning_invalid, just_under_the_bound_is_fine)
{
	g_autoptr(GString) xml = g_string_new("<domain>");
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_domain_tuning) t = NULL;

	while (xml->len + 64 < VR_DOMAIN_XML_METADATA_MAX_BYTES - 20)
		g_string_append(xml, "<!-- padding padding padding padding padding padding  -->\n");
	g_string_append(xml, "<priority>7</priority></domain>");
	cr_assert_leq(xml->len, VR_DOMAIN_XML_METADATA_MAX_BYTES, "the document must fit");
	t = vr_domain_tuning_parse(xml->str, &err);
	cr_assert_not_null(t, "metadata of %zu bytes should parse, got: %s", xml->len,
			   err ? err->message : "?");
	EQ("padded", "priority", t->priority, 7);
}

/* ---- serializing ---- */

TestSuite(tuning_xml,
	  .description = "vr_domain_tuning_to_xml(): what it writes reads back the same");

static void expect_round_trip(const struct vr_domain_tuning *t, const char *what)
{
	g_autofree char *xml = vr_domain_tuning_to_xml(t);
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_domain_tuning) back = vr_domain_tuning_parse(xml, &err);

	cr_assert_not_null(back, "%s: the serialized tuning should parse:\n%s\ngot: %s", what, xml,
			   err ? err->message : "?");
	cr_assert(vr_domain_tuning_equal(t, back), "%s: expected the same tuning back from:\n%s",
		  what, xml);
	cr_assert(g_str_has_prefix(xml, "<domain>"),
		  "%s: expected an element without a namespace (virDomainSetMetadata puts it in "
		  "ours), got:\n%s",
		  what, xml);
}

Test(tuning_xml, full_example)
{
	g_autoptr(vr_domain_tuning) t = parse_ok(full_doc, "full");
	g_autofree char *xml = vr_domain_tuning_to_xml(t);
	static const char want[] = "<domain>\n"
				   "  <enable>yes</enable>\n"
				   "  <policy>web-tier</policy>\n"
				   "  <priority>80</priority>\n"
				   "  <guaranteed unit=\"MiB\">512</guaranteed>\n"
				   "  <actions>agent-reclaim balloon</actions>\n"
				   "  <scheme>\n"
				   "    <min-age unit=\"min\">1</min-age>\n"
				   "    <quota-time unit=\"ms\">20</quota-time>\n"
				   "    <quota-size unit=\"MiB\">64</quota-size>\n"
				   "    <max-accesses>1</max-accesses>\n"
				   "  </scheme>\n"
				   "</domain>\n";

	cr_assert_str_eq(xml, want, "expected exactly\n%s\ngot\n%s", want, xml);
	expect_round_trip(t, "the full example");
}

Test(tuning_xml, defaults_of_a_domain_without_metadata_stay_disabled)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();
	g_autofree char *xml = vr_domain_tuning_to_xml(t);

	cr_assert(strstr(xml, "<enable>no</enable>"),
		  "a disabled tuning must say so (the element alone enables), got:\n%s", xml);
	cr_assert_null(strstr(xml, "<scheme>"), "no overrides, no <scheme>; got:\n%s", xml);
	cr_assert_null(strstr(xml, "<policy>"), "no policy, no <policy>; got:\n%s", xml);
	expect_round_trip(t, "vr_domain_tuning_new()");
}

/* Values whose units need care: not multiples of a larger unit, zero, the maxima. */
struct round_trip_case {
	char name[48];
	uint64_t guaranteed_bytes;
	gboolean has_min_age;
	uint64_t min_age_us;
	gboolean has_quota_time;
	uint64_t quota_time_ms;
	gboolean has_quota_size;
	uint64_t quota_size_bytes;
	gboolean has_max_accesses;
	uint32_t max_accesses;
	guint actions;
	guint priority;
};

static struct round_trip_case round_trip_cases[] = {
	{ "zeros", 0, TRUE, 0, TRUE, 0, TRUE, 0, TRUE, 0, VR_DOMAIN_ACTION_BALLOON, 0 },
	{ "odd values", 4097, TRUE, 1500, TRUE, 1001, TRUE, 3 * MIB + 1, TRUE, 7,
	  VR_DOMAIN_ACTION_HOST_PAGEOUT, 1 },
	{ "unit multiples", 3 * KIB, TRUE, 90 * US_PER_S, TRUE, 60000, TRUE, 5 * GIB, FALSE, 0,
	  VR_DOMAIN_ACTIONS_ALL, 99 },
	{ "maxima", PIB, TRUE, VR_DOMAIN_MIN_AGE_MAX_MS * 1000, TRUE, VR_DOMAIN_QUOTA_TIME_MAX_MS,
	  TRUE, PIB, TRUE, 65536, VR_DOMAIN_ACTIONS_ALL, 100 },
	{ "some overrides", 123 * MIB, FALSE, 0, TRUE, 5, FALSE, 0, TRUE, 2,
	  VR_DOMAIN_ACTION_AGENT_RECLAIM | VR_DOMAIN_ACTION_HOST_PAGEOUT, 50 },
};

ParameterizedTestParameters(tuning_xml, round_trips)
{
	return cr_make_param_array(struct round_trip_case, round_trip_cases,
				   ARRAY_LEN(round_trip_cases));
}

ParameterizedTest(struct round_trip_case *c, tuning_xml, round_trips)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();

	t->enable = TRUE;
	t->policy = g_strdup("tier-2.large");
	t->priority = c->priority;
	t->guaranteed_bytes = c->guaranteed_bytes;
	t->actions = c->actions;
	t->scheme = (struct vr_domain_scheme_overrides){
		.has_min_age = c->has_min_age,
		.min_age_us = c->min_age_us,
		.has_quota_time = c->has_quota_time,
		.quota_time_ms = c->quota_time_ms,
		.has_quota_size = c->has_quota_size,
		.quota_size_bytes = c->quota_size_bytes,
		.has_max_accesses = c->has_max_accesses,
		.max_accesses = c->max_accesses,
	};
	expect_round_trip(t, c->name);
}

Test(tuning_xml, equal_compares_every_setting)
{
	g_autoptr(vr_domain_tuning) a = parse_ok(full_doc, "full");
	static const char *const changes[][2] = {
		{ "enable", "no" },	    { "policy", "other" },
		{ "policy", "default" },    { "priority", "81" },
		{ "guaranteed", "513MiB" }, { "actions", "balloon" },
		{ "min-age", "61s" },	    { "min-age", "default" },
		{ "quota-time", "21" },	    { "quota-time", "default" },
		{ "quota-size", "65MiB" },  { "quota-size", "default" },
		{ "max-accesses", "2" },    { "max-accesses", "default" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(changes); i++) {
		g_autoptr(vr_domain_tuning) b = vr_domain_tuning_copy(a);
		g_autoptr(GError) err = NULL;

		cr_assert(vr_domain_tuning_equal(a, b), "a copy should be equal");
		cr_assert(vr_domain_tuning_set(b, changes[i][0], changes[i][1], &err),
			  "%s=%s should be accepted: %s", changes[i][0], changes[i][1],
			  err ? err->message : "?");
		cr_assert(!vr_domain_tuning_equal(a, b), "%s=%s should make the tunings differ",
			  changes[i][0], changes[i][1]);
	}
}

/* ---- vreclaimctl set ---- */

TestSuite(tuning_set, .description = "vr_domain_tuning_set(), vr_domain_tuning_set_args()");

struct set_case {
	char key[16];
	char value[48];
	enum tfield field;
	uint64_t want;
};

static struct set_case set_cases[] = {
	{ "enable", "yes", T_ENABLE, 1 },
	{ "enable", "no", T_ENABLE, 0 },
	{ "enable", "default", T_ENABLE, 1 },
	{ "priority", "80", T_PRIORITY, 80 },
	{ "priority", "default", T_PRIORITY, VR_DOMAIN_PRIORITY_DEFAULT },
	{ "guaranteed", "512MiB", T_GUARANTEED, 512 * MIB },
	{ "guaranteed", "1G", T_GUARANTEED, GIB },
	{ "guaranteed", "2GB", T_GUARANTEED, 2000000000ULL },
	{ "guaranteed", "4096", T_GUARANTEED, 4096 },
	{ "guaranteed", "64k", T_GUARANTEED, 64 * KIB },
	{ "guaranteed", "default", T_GUARANTEED, 0 },
	{ "actions", "agent-reclaim,balloon", T_ACTIONS,
	  VR_DOMAIN_ACTION_AGENT_RECLAIM | VR_DOMAIN_ACTION_BALLOON },
	{ "actions", "host-pageout balloon", T_ACTIONS,
	  VR_DOMAIN_ACTION_HOST_PAGEOUT | VR_DOMAIN_ACTION_BALLOON },
	{ "actions", "default", T_ACTIONS, VR_DOMAIN_ACTION_AGENT_RECLAIM },
	{ "min-age", "60s", T_MIN_AGE_US, 60 * US_PER_S },
	{ "min-age", "500ms", T_MIN_AGE_US, 500 * US_PER_MS },
	{ "min-age", "500", T_MIN_AGE_US, 500 * US_PER_MS },
	{ "min-age", "2min", T_MIN_AGE_US, 120 * US_PER_S },
	{ "min-age", "1h", T_MIN_AGE_US, 3600 * US_PER_S },
	{ "min-age", "250us", T_MIN_AGE_US, 250 },
	{ "quota-time", "10ms", T_QUOTA_TIME_MS, 10 },
	{ "quota-time", "1s", T_QUOTA_TIME_MS, 1000 },
	{ "quota-time", "15", T_QUOTA_TIME_MS, 15 },
	{ "quota-size", "64MiB", T_QUOTA_SIZE, 64 * MIB },
	{ "quota-size", "0", T_QUOTA_SIZE, 0 },
	{ "max-accesses", "3", T_MAX_ACCESSES, 3 },
};

ParameterizedTestParameters(tuning_set, values)
{
	return cr_make_param_array(struct set_case, set_cases, ARRAY_LEN(set_cases));
}

ParameterizedTest(struct set_case *c, tuning_set, values)
{
	g_autoptr(vr_domain_tuning) t = parse_ok(full_doc, "full");
	g_autoptr(GError) err = NULL;
	g_autofree char *what = g_strdup_printf("%s=%s", c->key, c->value);

	/* start from other values so the default is a change */
	t->enable = !c->want;
	t->priority = 3;
	t->guaranteed_bytes = 5;
	cr_assert(vr_domain_tuning_set(t, c->key, c->value, &err), "%s should be accepted: %s",
		  what, err ? err->message : "?");
	expect_field(t, c->field, c->want, what);
}

Test(tuning_set, default_removes_optional_settings)
{
	static const char *const keys[] = { "min-age", "quota-time", "quota-size", "max-accesses" };
	g_autoptr(vr_domain_tuning) t = parse_ok(full_doc, "full");
	g_autoptr(GError) err = NULL;

	cr_assert(vr_domain_tuning_set(t, "policy", "default", &err), "policy=default: %s",
		  err ? err->message : "?");
	cr_assert_null(t->policy, "policy=default should remove the policy");
	for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
		gboolean has;

		cr_assert(vr_domain_tuning_set(t, keys[i], "default", &err), "%s=default: %s",
			  keys[i], err ? err->message : "?");
		tfield_get(t, (enum tfield)(T_MIN_AGE_US + i), &has);
		cr_assert(!has, "%s=default should remove the override", keys[i]);
	}
	cr_assert(vr_domain_tuning_set(t, "policy", "web-2", &err), "policy=web-2: %s",
		  err ? err->message : "?");
	cr_assert_str_eq(t->policy, "web-2", "expected policy web-2, got %s", t->policy);
}

struct set_error_case {
	char key[16];
	char value[48];
	char fragments[120];
};

static struct set_error_case set_error_cases[] = {
	{ "colour", "red", "unknown key 'colour' (expected one of enable, policy, priority" },
	{ "scheme", "1", "unknown key 'scheme'" },
	{ "domain", "1", "unknown key 'domain'" },
	{ "enable", "maybe", "enable: 'maybe' is not allowed (expected yes or no)" },
	{ "priority", "101",
	  "priority: '101' is out of range (expected an integer from 0 to 100)" },
	{ "priority", "", "priority: the value is empty" },
	{ "priority", "8o", "priority: '8o' is not a whole number" },
	{ "guaranteed", "5XB", "guaranteed: unknown unit 'XB'" },
	{ "guaranteed", "MiB", "guaranteed: 'MiB' is not a number" },
	{ "guaranteed", "2PiB",
	  "guaranteed: '2PiB' is out of range (expected a size up to 1 PiB)" },
	{ "guaranteed", "-1", "guaranteed: '-1' is not a number" },
	{ "guaranteed", "512 MiB", "unknown unit ' MiB'" },
	{ "min-age", "31d", "min-age: unknown unit 'd' (expected us, ms, s, min, h)" },
	{ "min-age", "721h", "min-age: '721h' is out of range" },
	{ "quota-time", "5us", "quota-time: unknown unit 'us' (expected ms, s, min, h)" },
	{ "quota-size", "1.5G", "quota-size: unknown unit '.5G'" },
	{ "max-accesses", "3x", "max-accesses: '3x' is not a whole number" },
	{ "max-accesses", "70000", "max-accesses: '70000' is out of range" },
	{ "actions", "", "actions: the value is empty" },
	{ "actions", ",,", "actions: no action in ',,'" },
	{ "actions", "balloon,teleport", "actions: unknown action 'teleport'" },
	{ "actions", "balloon,balloon", "action 'balloon' is given twice" },
	{ "policy", "a/b", "policy: policy name 'a/b' has the character '/'" },
	{ "policy", "", "policy: the value is empty" },
};

ParameterizedTestParameters(tuning_set, refused)
{
	return cr_make_param_array(struct set_error_case, set_error_cases,
				   ARRAY_LEN(set_error_cases));
}

ParameterizedTest(struct set_error_case *c, tuning_set, refused)
{
	g_autoptr(vr_domain_tuning) t = parse_ok(full_doc, "full");
	g_autoptr(vr_domain_tuning) before = vr_domain_tuning_copy(t);
	g_autoptr(GError) err = NULL;
	g_autofree char *what = g_strdup_printf("%s=%s", c->key, c->value);

	cr_assert(!vr_domain_tuning_set(t, c->key, c->value, &err), "%s should be refused", what);
	expect_error(err, INVALID, c->fragments, what);
	cr_assert(vr_domain_tuning_equal(t, before), "%s: a refused value must change nothing",
		  what);
}

Test(tuning_set, args_apply_all)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();
	g_autoptr(GError) err = NULL;
	const char *const args[] = { "priority=80", "guaranteed=512MiB", "enable=yes",
				     "min-age=90s", NULL };

	cr_assert(vr_domain_tuning_set_args(t, args, &err), "expected the settings to apply: %s",
		  err ? err->message : "?");
	expect_field(t, T_PRIORITY, 80, "priority=80");
	expect_field(t, T_GUARANTEED, 512 * MIB, "guaranteed=512MiB");
	expect_field(t, T_ENABLE, 1, "enable=yes");
	expect_field(t, T_MIN_AGE_US, 90 * US_PER_S, "min-age=90s");
}

Test(tuning_set, args_without_enable_keep_a_disabled_domain_disabled)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();
	g_autoptr(GError) err = NULL;
	const char *const args[] = { "priority=80", NULL };
	g_autofree char *xml = NULL;
	g_autoptr(vr_domain_tuning) back = NULL;

	cr_assert(vr_domain_tuning_set_args(t, args, &err), "priority=80: %s",
		  err ? err->message : "?");
	xml = vr_domain_tuning_to_xml(t);
	back = vr_domain_tuning_parse(xml, &err);
	cr_assert_not_null(back, "the written metadata should parse: %s", err ? err->message : "?");
	cr_assert(!back->enable, "setting priority alone must not enable the domain:\n%s", xml);
}

struct args_error_case {
	char args[3][32];
	char fragments[80];
};

static struct args_error_case args_error_cases[] = {
	{ { "priority=80", "bogus", "" }, "'bogus': expected KEY=VALUE" },
	{ { "priority=80", "=5", "" }, "'=5': expected KEY=VALUE" },
	{ { "priority=80", "priority=81", "" }, "priority: the key is given twice" },
	{ { "priority=80", "guaranteed=1XB", "" }, "guaranteed: unknown unit 'XB'" },
	{ { "policy=web", "actions=", "" }, "actions: the value is empty" },
};

ParameterizedTestParameters(tuning_set, args_all_or_nothing)
{
	return cr_make_param_array(struct args_error_case, args_error_cases,
				   ARRAY_LEN(args_error_cases));
}

ParameterizedTest(struct args_error_case *c, tuning_set, args_all_or_nothing)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();
	g_autoptr(vr_domain_tuning) before = vr_domain_tuning_copy(t);
	g_autoptr(GError) err = NULL;
	const char *args[4] = { 0 };

	for (guint i = 0; i < 3 && c->args[i][0]; i++)
		args[i] = c->args[i];
	cr_assert(!vr_domain_tuning_set_args(t, args, &err), "expected %s %s to be refused",
		  args[0], args[1]);
	expect_error(err, INVALID, c->fragments, args[1]);
	cr_assert(vr_domain_tuning_equal(t, before),
		  "a refused argument must leave every setting as it was (%s applied)", args[0]);
}

/* ---- the policy with the overrides ---- */

/* Two pageout schemes around a stat scheme. */
static const char two_pageout_doc[] =
	"{ \"schemes\": ["
	"  { \"name\": \"cold\", \"action\": \"pageout\","
	"    \"pattern\": { \"max_nr_accesses\": 2, \"min_age_us\": 1000000 },"
	"    \"quota\": { \"ms\": 10, \"sz\": 1048576 } },"
	"  { \"name\": \"count\", \"action\": \"stat\" },"
	"  { \"name\": \"colder\", \"action\": \"pageout\","
	"    \"pattern\": { \"min_nr_accesses\": 1, \"max_age_us\": 600000000 } }"
	"] }";

static struct vr_policy *base_policy;

static void policy_setup(void)
{
	g_autoptr(GError) err = NULL;

	base_policy = vr_policy_parse(two_pageout_doc, -1, &err);
	cr_assert_not_null(base_policy, "the test policy should parse: %s",
			   err ? err->message : "?");
}

static void policy_teardown(void)
{
	g_clear_pointer(&base_policy, vr_policy_free);
}

TestSuite(tuning_policy, .init = policy_setup, .fini = policy_teardown,
	  .description = "vr_domain_tuning_policy(): overrides on every pageout scheme");

static struct vr_scheme *scheme_named(const struct vr_policy *p, const char *name)
{
	for (guint i = 0; i < p->schemes->len; i++) {
		struct vr_scheme *s = g_ptr_array_index(p->schemes, i);

		if (strcmp(s->name, name) == 0)
			return s;
	}
	cr_assert_fail("expected a scheme named '%s'", name);
	return NULL;
}

static struct vr_policy *policy_ok(const struct vr_domain_tuning *t, const char *what)
{
	g_autoptr(GError) err = NULL;
	struct vr_policy *p = vr_domain_tuning_policy(t, base_policy, &err);

	cr_assert_not_null(p, "%s: expected a policy, got: %s", what, err ? err->message : "?");
	cr_assert_neq(p, base_policy, "%s: expected a new policy, not the base", what);
	return p;
}

Test(tuning_policy, no_overrides_is_a_copy)
{
	g_autoptr(vr_domain_tuning) t = parse_ok("<domain><priority>90</priority></domain>", "p");
	g_autoptr(vr_policy) p = policy_ok(t, "no overrides");
	g_autofree char *want = vr_policy_to_json(base_policy);
	g_autofree char *got = vr_policy_to_json(p);

	cr_assert_str_eq(got, want, "expected the same policy:\n%s\ngot:\n%s", want, got);
}

Test(tuning_policy, overrides_every_pageout_scheme_only)
{
	g_autoptr(vr_domain_tuning) t = parse_ok(full_doc, "full");
	g_autoptr(vr_policy) p = NULL;
	const struct vr_scheme *count_before = scheme_named(base_policy, "count");

	t->scheme.max_accesses = 3; /* above "colder"'s min_nr_accesses 1 */
	p = policy_ok(t, "full");
	cr_assert_eq(p->schemes->len, 3, "expected the 3 schemes, got %u", p->schemes->len);
	for (guint i = 0; i < 2; i++) {
		const char *name = i ? "colder" : "cold";
		const struct vr_scheme *s = scheme_named(p, name);

		EQ(name, "pattern.min_age_us", s->pattern.min_age_us, 60 * US_PER_S);
		EQ(name, "pattern.max_nr_accesses", s->pattern.max_nr_accesses, 3);
		EQ(name, "quota.ms", s->quota.ms, 20);
		EQ(name, "quota.sz", s->quota.sz, 64 * MIB);
	}
	{
		const struct vr_scheme *s = scheme_named(p, "count");

		EQ("count", "pattern.min_age_us", s->pattern.min_age_us,
		   count_before->pattern.min_age_us);
		EQ("count", "quota.ms", s->quota.ms, count_before->quota.ms);
		EQ("count", "quota.sz", s->quota.sz, count_before->quota.sz);
	}
	/* the base is not touched */
	EQ("base cold", "quota.ms", scheme_named(base_policy, "cold")->quota.ms, 10);
}

Test(tuning_policy, one_override_leaves_the_rest)
{
	g_autoptr(vr_domain_tuning) t =
		parse_ok("<domain><scheme><quota-size unit='MiB'>8</quota-size></scheme></domain>",
			 "quota-size");
	g_autoptr(vr_policy) p = policy_ok(t, "quota-size");
	const struct vr_scheme *s = scheme_named(p, "cold");

	EQ("cold", "quota.sz", s->quota.sz, 8 * MIB);
	EQ("cold", "quota.ms", s->quota.ms, 10);
	EQ("cold", "pattern.min_age_us", s->pattern.min_age_us, US_PER_S);
	EQ("cold", "pattern.max_nr_accesses", s->pattern.max_nr_accesses, 2);
}

Test(tuning_policy, the_default_profile)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) base = vr_policy_new_profile(NULL, &err);
	g_autoptr(vr_domain_tuning) t = parse_ok(
		"<domain><scheme><min-age unit='s'>30</min-age></scheme></domain>", "min-age");
	g_autoptr(vr_policy) p = vr_domain_tuning_policy(t, base, &err);

	cr_assert_not_null(p, "expected a policy: %s", err ? err->message : "?");
	EQ("damon-reclaim", "pattern.min_age_us",
	   ((struct vr_scheme *)g_ptr_array_index(p->schemes, 0))->pattern.min_age_us,
	   30 * US_PER_S);
	cr_assert_str_eq(p->profile, base->profile, "the profile name is kept");
}

struct policy_error_case {
	char xml[160];
	char fragments[120];
};

static struct policy_error_case policy_error_cases[] = {
	{ "<domain><scheme><min-age unit='min'>11</min-age></scheme></domain>",
	  "<min-age> 660000000 us is above scheme 'colder''s pattern.max_age_us (600000000)" },
	{ "<domain><scheme><max-accesses>0</max-accesses></scheme></domain>",
	  "<max-accesses> 0 is below scheme 'colder''s pattern.min_nr_accesses (1)" },
};

ParameterizedTestParameters(tuning_policy, refused)
{
	return cr_make_param_array(struct policy_error_case, policy_error_cases,
				   ARRAY_LEN(policy_error_cases));
}

ParameterizedTest(struct policy_error_case *c, tuning_policy, refused)
{
	g_autoptr(vr_domain_tuning) t = parse_ok(c->xml, c->xml);
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) p = vr_domain_tuning_policy(t, base_policy, &err);

	cr_assert_null(p, "%s: expected the overrides to be refused on the test policy", c->xml);
	expect_error(err, INVALID, c->fragments, c->xml);
}

Test(tuning_policy, quota_override_needs_a_window)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) base =
		vr_policy_parse("{\"schemes\": [{\"name\": \"nowin\", \"action\": \"pageout\", "
				"\"quota\": {\"reset_interval_ms\": 0}}]}",
				-1, &err);
	g_autoptr(vr_domain_tuning) t = parse_ok(
		"<domain><scheme><quota-size unit='MiB'>64</quota-size></scheme></domain>", "qs");
	g_autoptr(vr_policy) p = NULL;

	cr_assert_not_null(base, "the window-less policy should parse: %s",
			   err ? err->message : "?");
	p = vr_domain_tuning_policy(t, base, &err);
	cr_assert_null(p, "a quota-size override needs a quota window");
	expect_error(err, INVALID, "<quota-size> needs a quota window, and scheme 'nowin' has none",
		     "quota-size without a window");
}

Test(tuning_policy, overrides_need_a_pageout_scheme)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) base = vr_policy_parse(
		"{\"schemes\": [{\"name\": \"count\", \"action\": \"stat\"}]}", -1, &err);
	g_autoptr(vr_domain_tuning) t = parse_ok(
		"<domain><scheme><min-age unit='s'>1</min-age></scheme></domain>", "min-age");
	g_autoptr(vr_policy) p = NULL;

	cr_assert_not_null(base, "the stat-only policy should parse: %s", err ? err->message : "?");
	p = vr_domain_tuning_policy(t, base, &err);
	cr_assert_null(p, "overrides on a policy without pageout schemes must be refused");
	expect_error(err, INVALID, "overrides pageout schemes, and the policy",
		     "no pageout scheme");
}

/* ---- the live domain XML ---- */

TestSuite(domain_xml, .description = "vr_domain_xml_parse() on libvirt 9.0 domain XML");

/* The fixture tests/data/libvirt/@name: owned text. */
static char *fixture(const char *name)
{
	g_autofree char *path = g_build_filename(VR_TEST_DATA_DIR, "libvirt", name, NULL);
	g_autoptr(GError) err = NULL;
	char *text = NULL;

	cr_assert(g_file_get_contents(path, &text, NULL, &err), "cannot read the fixture %s: %s",
		  path, err ? err->message : "?");
	return text;
}

struct dom_case {
	char file[32];
	char name[16];
	char uuid[40];
	char type[8];
	int id;
	uint64_t memory_bytes;
	uint64_t current_memory_bytes;
	gboolean agent_channel;
	char agent_socket_path[128]; /* "" for NULL */
	gboolean agent_connected;
	char memballoon_model[16]; /* "" for NULL */
	gboolean free_page_reporting;
};

#define CHANNEL_DIR  "/var/lib/libvirt/qemu/channel/target/"
#define FIXTURE_UUID "9b1c5c0e-6a53-4c1f-8d6e-2f0e3a7d4b21"

static struct dom_case dom_cases[] = {
	{ "live-qemu.xml", "web1", "aad42522-83b9-4dc5-8544-949349f5a250", "qemu", 2, 128 * MIB,
	  128 * MIB, TRUE, CHANNEL_DIR "domain-2-web1/org.vreclaim.agent.0", FALSE, "virtio",
	  TRUE },
	{ "live-kvm-connected.xml", "db1", FIXTURE_UUID, "kvm", 7, GIB, 768 * MIB, TRUE,
	  CHANNEL_DIR "domain-7-db1/org.vreclaim.agent.0", TRUE, "virtio", FALSE },
	{ "inactive.xml", "web2", FIXTURE_UUID, "qemu", -1, GIB, 768 * MIB, TRUE, "", FALSE,
	  "virtio", TRUE },
	{ "no-channel.xml", "batch3", FIXTURE_UUID, "kvm", 3, GIB, 768 * MIB, FALSE, "", FALSE,
	  "none", FALSE },
	{ "other-names.xml", "batch4", FIXTURE_UUID, "kvm", 4, GIB, GIB, FALSE, "", FALSE, "",
	  FALSE },
	{ "metadata-decoys.xml", "web12", FIXTURE_UUID, "kvm", 12, 4 * GIB, 3 * GIB, TRUE,
	  CHANNEL_DIR "domain-12-web12/org.vreclaim.agent.0", TRUE, "virtio", TRUE },
};

ParameterizedTestParameters(domain_xml, fixtures)
{
	return cr_make_param_array(struct dom_case, dom_cases, ARRAY_LEN(dom_cases));
}

ParameterizedTest(struct dom_case *c, domain_xml, fixtures)
{
	g_autofree char *xml = fixture(c->file);
	g_auto(vr_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;
	const char *w = c->file;

	cr_assert(vr_domain_xml_parse(xml, &info, &err), "%s: expected it to parse, got: %s", w,
		  err ? err->message : "?");
	cr_assert_str_eq(info.name, c->name, "%s: expected name %s, got %s", w, c->name, info.name);
	cr_assert_str_eq(info.uuid, c->uuid, "%s: expected uuid %s, got %s", w, c->uuid, info.uuid);
	cr_assert_str_eq(info.type, c->type, "%s: expected type %s, got %s", w, c->type, info.type);
	cr_assert_eq(info.id, c->id, "%s: expected id %d, got %d", w, c->id, info.id);
	EQ(w, "memory_bytes", info.memory_bytes, c->memory_bytes);
	EQ(w, "current_memory_bytes", info.current_memory_bytes, c->current_memory_bytes);
	cr_assert_eq(info.agent_channel, c->agent_channel, "%s: expected agent_channel %d", w,
		     c->agent_channel);
	if (c->agent_socket_path[0])
		cr_assert_str_eq(info.agent_socket_path ? info.agent_socket_path : "(null)",
				 c->agent_socket_path, "%s: expected the socket %s, got %s", w,
				 c->agent_socket_path, info.agent_socket_path);
	else
		cr_assert_null(info.agent_socket_path, "%s: expected no socket path, got %s", w,
			       info.agent_socket_path);
	cr_assert_eq(info.agent_connected, c->agent_connected, "%s: expected agent_connected %d", w,
		     c->agent_connected);
	if (c->memballoon_model[0])
		cr_assert_str_eq(info.memballoon_model ? info.memballoon_model : "(null)",
				 c->memballoon_model, "%s: expected the balloon model %s", w,
				 c->memballoon_model);
	else
		cr_assert_null(info.memballoon_model, "%s: expected no balloon, got %s", w,
			       info.memballoon_model);
	cr_assert_eq(info.free_page_reporting, c->free_page_reporting,
		     "%s: expected free_page_reporting %d", w, c->free_page_reporting);
}

struct dom_error_case {
	char file[32];
	int code;
	char fragments[120];
};

static struct dom_error_case dom_error_cases[] = {
	{ "two-channels.xml", INVALID,
	  "two channels have the target name 'org.vreclaim.agent.0' (expected one)" },
	{ "relative-path.xml", INVALID,
	  "relative socket path 'channel/target/org.vreclaim.agent.0' (expected an absolute" },
	{ "long-path.xml", INVALID, "socket path of 111 bytes (at most 107" },
	{ "pty-channel.xml", INVALID,
	  "the channel 'org.vreclaim.agent.0' is type='pty' (expected type='unix')" },
	{ "connect-mode.xml", INVALID, "<source mode='connect'> (expected mode='bind'" },
	{ "xen.xml", VR_DOMAIN_XML_ERROR_UNSUPPORTED,
	  "domain pv11 is of type 'xen' (vreclaim manages qemu and kvm domains)" },
};

ParameterizedTestParameters(domain_xml, fixtures_refused)
{
	return cr_make_param_array(struct dom_error_case, dom_error_cases,
				   ARRAY_LEN(dom_error_cases));
}

ParameterizedTest(struct dom_error_case *c, domain_xml, fixtures_refused)
{
	g_autofree char *xml = fixture(c->file);
	g_auto(vr_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	info.name = g_strdup("untouched");
	cr_assert(!vr_domain_xml_parse(xml, &info, &err), "%s: expected it to be refused", c->file);
	expect_error(err, c->code, c->fragments, c->file);
	cr_assert_str_eq(info.name, "untouched", "%s: a refused XML must not change the output",
			 c->file);
}

/* Domain XML written here, with ' for ". */
struct dom_text_case {
	char xml[300];
	int code;
	char fragments[100];
};

#define DOM_HEAD                                                                                   \
	"<domain type='kvm'><name>a</name><uuid>9b1c5c0e-6a53-4c1f-8d6e-2f0e3a7d4b21</uuid>"

static struct dom_text_case dom_text_cases[] = {
	{ "", SYNTAX, "empty" },
	{ "<domain type='kvm'>", SYNTAX, "not well-formed" },
	{ DOM_HEAD "<memory>1</memory></domain><domain/>", SYNTAX, "after the end of <domain>" },
	{ DOM_HEAD "<memory>1</memory></domain> junk", SYNTAX,
	  "content after the end of <domain>" },
	{ "<network><name>a</name></network>", INVALID,
	  "the root element is <network> (expected a libvirt <domain>)" },
	{ "<domain><name>a</name></domain>", INVALID, "<domain> has no type attribute" },
	{ "<domain type='kvm' id='x'><name>a</name></domain>", INVALID, "<domain id='x'>" },
	{ "<domain type='kvm'><uuid>9b1c5c0e-6a53-4c1f-8d6e-2f0e3a7d4b21</uuid>"
	  "<memory>1</memory></domain>",
	  INVALID, "no <name>" },
	{ "<domain type='kvm'><name>a</name><memory>1</memory></domain>", INVALID, "no <uuid>" },
	{ DOM_HEAD "</domain>", INVALID, "no <memory>" },
	{ DOM_HEAD "<name>b</name><memory>1</memory></domain>", INVALID, "<name> is given twice" },
	{ "<domain type='kvm'><name> </name></domain>", INVALID, "<name> is empty" },
	{ "<domain type='kvm'><name>a</name><uuid>not-a-uuid</uuid></domain>", INVALID,
	  "<uuid>: 'not-a-uuid' is not a UUID" },
	{ DOM_HEAD "<memory unit='XiB'>1</memory></domain>", INVALID,
	  "<memory>: unknown unit 'XiB'" },
	{ DOM_HEAD "<memory>1.5</memory></domain>", INVALID, "<memory>: '1.5' is not a size" },
	{ DOM_HEAD "<memory unit='EiB'>16</memory></domain>", INVALID,
	  "<memory>: '16' is not a size in 64 bits" },
	{ DOM_HEAD "<memory>1</memory><currentMemory><b/></currentMemory></domain>", INVALID,
	  "unexpected element <b>" },
	{ DOM_HEAD "<memory>1</memory><devices><memballoon model='virtio'/>"
		   "<memballoon model='virtio'/></devices></domain>",
	  INVALID, "<memballoon> is given twice" },
	{ DOM_HEAD "<memory>1</memory><devices><memballoon model='virtio' "
		   "freePageReporting='yes'/></devices></domain>",
	  INVALID, "freePageReporting='yes'>: expected on or off" },
	{ DOM_HEAD "<memory>1</memory><devices><channel type='unix'><source mode='bind' "
		   "path='/a'/><target type='virtio' name='org.vreclaim.agent.0' state='open'/>"
		   "</channel></devices></domain>",
	  INVALID, "state='open'> (expected connected or disconnected)" },
	{ DOM_HEAD "<memory a='1' a='2'>1</memory></domain>", INVALID, "attribute 'a' twice" },
};

ParameterizedTestParameters(domain_xml, texts_refused)
{
	return cr_make_param_array(struct dom_text_case, dom_text_cases, ARRAY_LEN(dom_text_cases));
}

ParameterizedTest(struct dom_text_case *c, domain_xml, texts_refused)
{
	g_autofree char *xml = dq(c->xml);
	g_auto(vr_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert(!vr_domain_xml_parse(xml, &info, &err), "expected it to be refused: %s", xml);
	expect_error(err, c->code, c->fragments, xml);
	cr_assert_null(info.name, "a refused XML must leave the output empty");
}

Test(domain_xml, minimal_and_units)
{
	g_autofree char *xml = dq(DOM_HEAD "<memory unit='GiB'>2</memory>"
					   "<currentMemory>1024</currentMemory></domain>");
	g_auto(vr_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_domain_xml_parse(xml, &info, &err), "expected it to parse: %s",
		  err ? err->message : "?");
	EQ("minimal", "memory_bytes", info.memory_bytes, 2 * GIB);
	EQ("minimal", "current_memory_bytes (no unit: KiB, as libvirt)", info.current_memory_bytes,
	   MIB);
	cr_assert_eq(info.id, -1, "no id attribute: expected -1, got %d", info.id);
	cr_assert(!info.agent_channel, "no channel expected");
	cr_assert_null(info.memballoon_model, "no balloon expected");
}

Test(domain_xml, too_large)
{
	g_autoptr(GString) xml = g_string_new(DOM_HEAD);
	g_auto(vr_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	g_string_replace(xml, "'", "\"", 0);
	while (xml->len <= VR_DOMAIN_XML_MAX_BYTES)
		g_string_append(xml, "<description>padding padding padding</description>\n");
	g_string_append(xml, "<memory>1</memory></domain>");
	cr_assert(!vr_domain_xml_parse(xml->str, &info, &err), "expected %zu bytes to be refused",
		  xml->len);
	expect_error(err, SYNTAX, "larger than 4194304 bytes", "too large");
}
