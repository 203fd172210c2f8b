/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Our metadata through real libvirt: the test driver (test:///default, which
 * runs inside this process, no daemon) stores what virDomainSetMetadata is
 * given and answers virDomainGetMetadata as the QEMU driver does. Each test
 * checks that what vreclaimctl writes (vr_domain_tuning_to_xml()) comes back
 * as the same tuning, live and in the configuration; that the element an
 * operator puts in <metadata> with `virsh edit` (any prefix) is read; that
 * invalid metadata set by hand is refused with a message naming the element;
 * and that a domain without metadata says so with VIR_ERR_NO_DOMAIN_METADATA.
 *
 * Criterion runs each test in its own process, so each starts from the test
 * driver's pristine default state (domain "test", running).
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdlib.h>
#include <string.h>

#include "libvirt/domain-xml.h"

#define TEST_URI "test:///default"

static virConnectPtr conn;
static virDomainPtr dom;

/* libvirt prints every error on stderr by default; the tests read them. */
static void quiet(void *data, virErrorPtr err)
{
	(void)data, (void)err;
}

static void open_test_driver(void)
{
	virSetErrorFunc(NULL, quiet);
	conn = virConnectOpen(TEST_URI);
	if (!conn)
		return;
	dom = virDomainLookupByName(conn, "test");
}

static void close_test_driver(void)
{
	if (dom)
		virDomainFree(dom);
	if (conn)
		virConnectClose(conn);
	dom = NULL;
	conn = NULL;
}

TestSuite(libvirt_metadata, .init = open_test_driver, .fini = close_test_driver,
	  .description = "vreclaim metadata through libvirt's test driver");

/* Skips when this libvirt has no test driver. */
static void need_test_driver(void)
{
	if (!conn) {
		virErrorPtr e = virGetLastError();

		cr_skip_test("libvirt's test driver is not available (%s)",
			     e && e->message ? e->message : "no error");
	}
	cr_assert_not_null(dom, "the test driver should have its domain 'test'");
}

static const char *last_error(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->message ? e->message : "(no libvirt error)";
}

static void set_metadata(virDomainPtr d, const char *xml, unsigned int flags)
{
	int rc = virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, xml, VR_DOMAIN_XML_KEY,
				      VR_DOMAIN_XML_NS, flags);

	cr_assert_eq(rc, 0, "virDomainSetMetadata should take\n%s\ngot: %s", xml, last_error());
}

static char *get_metadata(virDomainPtr d, unsigned int flags)
{
	char *xml = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, VR_DOMAIN_XML_NS, flags);

	cr_assert_not_null(xml, "virDomainGetMetadata should find our element: %s", last_error());
	return xml;
}

static struct vr_domain_tuning *example_tuning(void)
{
	struct vr_domain_tuning *t = vr_domain_tuning_new();
	g_autoptr(GError) err = NULL;
	const char *const args[] = { "enable=yes",
				     "policy=web-tier",
				     "priority=80",
				     "guaranteed=512MiB",
				     "actions=agent-reclaim,balloon",
				     "min-age=60s",
				     "quota-size=64MiB",
				     NULL };

	cr_assert(vr_domain_tuning_set_args(t, args, &err), "the example settings: %s",
		  err ? err->message : "?");
	return t;
}

/* Sets @t's XML with @flags, reads it back with @flags, parses and compares. */
static void round_trip(const struct vr_domain_tuning *t, unsigned int flags, const char *what)
{
	g_autofree char *xml = vr_domain_tuning_to_xml(t);
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_domain_tuning) back = NULL;
	char *got;

	set_metadata(dom, xml, flags);
	got = get_metadata(dom, flags);
	back = vr_domain_tuning_parse(got, &err);
	cr_assert_not_null(back, "%s: libvirt's answer should parse:\n%s\ngot: %s", what, got,
			   err ? err->message : "?");
	cr_assert(vr_domain_tuning_equal(t, back),
		  "%s: expected the tuning written back; wrote\n%s\nlibvirt returned\n%s", what,
		  xml, got);
	free(got);
}

Test(libvirt_metadata, live_round_trip)
{
	g_autoptr(vr_domain_tuning) t = NULL;
	char *live_xml;

	need_test_driver();
	t = example_tuning();
	round_trip(t, VIR_DOMAIN_AFFECT_LIVE, "live");

	/* libvirt put it in our namespace with our key as the prefix */
	live_xml = virDomainGetXMLDesc(dom, 0);
	cr_assert_not_null(live_xml, "virDomainGetXMLDesc: %s", last_error());
	cr_assert(strstr(live_xml, "<vreclaim:domain xmlns:vreclaim=\"" VR_DOMAIN_XML_NS "\">"),
		  "expected the element under <metadata> as vreclaim:domain, got:\n%s", live_xml);
	free(live_xml);

	/* the configuration is a separate definition: nothing there yet */
	cr_assert_null(virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, VR_DOMAIN_XML_NS,
					    VIR_DOMAIN_AFFECT_CONFIG),
		       "a live change should not reach the configuration");
}

Test(libvirt_metadata, config_round_trip_and_update)
{
	g_autoptr(vr_domain_tuning) t = NULL;
	g_autoptr(GError) err = NULL;

	need_test_driver();
	t = example_tuning();
	round_trip(t, VIR_DOMAIN_AFFECT_CONFIG, "config");
	/* vreclaimctl set on existing metadata: replaced, not added to */
	cr_assert(vr_domain_tuning_set(t, "priority", "20", &err), "priority=20: %s",
		  err ? err->message : "?");
	cr_assert(vr_domain_tuning_set(t, "min-age", "default", &err), "min-age=default: %s",
		  err ? err->message : "?");
	round_trip(t, VIR_DOMAIN_AFFECT_CONFIG, "config, updated");
}

Test(libvirt_metadata, virsh_edit_form)
{
	/* What an operator types into <metadata> with `virsh edit`, with a
	 * prefix of their own. */
	static const char def[] =
		"<domain type='test'>"
		"  <name>web1</name>"
		"  <metadata>"
		"    <vr:domain xmlns:vr='" VR_DOMAIN_XML_NS "'>"
		"      <vr:priority>70</vr:priority>"
		"      <vr:guaranteed unit='GiB'>1</vr:guaranteed>"
		"      <vr:scheme><vr:max-accesses>2</vr:max-accesses></vr:scheme>"
		"    </vr:domain>"
		"    <other:app xmlns:other='http://example.org/app'><other:x/></other:app>"
		"  </metadata>"
		"  <memory unit='MiB'>1024</memory>"
		"  <os><type>hvm</type></os>"
		"</domain>";
	virDomainPtr d;
	char *got;
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_domain_tuning) t = NULL;

	need_test_driver();
	d = virDomainDefineXML(conn, def);
	cr_assert_not_null(d, "the test driver should define web1: %s", last_error());
	got = get_metadata(d, VIR_DOMAIN_AFFECT_CONFIG);
	t = vr_domain_tuning_parse(got, &err);
	cr_assert_not_null(t, "the virsh-edit form should parse:\n%s\ngot: %s", got,
			   err ? err->message : "?");
	cr_assert(t->enable, "the element without <enable> enables the domain");
	cr_assert_eq(t->priority, 70, "expected priority 70, got %u", t->priority);
	cr_assert_eq(t->guaranteed_bytes, 1ULL << 30, "expected 1 GiB guaranteed");
	cr_assert(t->scheme.has_max_accesses && t->scheme.max_accesses == 2,
		  "expected max-accesses 2");
	free(got);
	virDomainUndefine(d);
	virDomainFree(d);
}

/* Metadata set by hand, each with what our parser must say about it. */
static const struct {
	const char *xml;
	const char *fragment;
} hand_written[] = {
	{ "<domain><priority>101</priority></domain>",
	  "<priority>: '101' is out of range (expected an integer from 0 to 100)" },
	{ "<domain><enable>yes</enable><o:extra xmlns:o='urn:o'/></domain>",
	  "<o:extra> is in the namespace 'urn:o'" },
	{ "<domain><policy>../../etc/passwd</policy></domain>", "starts with '.'" },
	{ "<settings><priority>1</priority></settings>", "the root element is <settings>" },
};

Test(libvirt_metadata, invalid_metadata_is_refused)
{
	need_test_driver();
	for (guint i = 0; i < G_N_ELEMENTS(hand_written); i++) {
		char *got;
		g_autoptr(GError) err = NULL;
		g_autoptr(vr_domain_tuning) t = NULL;

		set_metadata(dom, hand_written[i].xml, VIR_DOMAIN_AFFECT_LIVE);
		got = get_metadata(dom, VIR_DOMAIN_AFFECT_LIVE);
		t = vr_domain_tuning_parse(got, &err);
		cr_assert_null(t, "expected libvirt's answer to be refused:\n%s", got);
		cr_assert(g_error_matches(err, VR_DOMAIN_XML_ERROR, VR_DOMAIN_XML_ERROR_INVALID),
			  "expected VR_DOMAIN_XML_ERROR_INVALID for\n%s", got);
		cr_assert(strstr(err->message, hand_written[i].fragment),
			  "expected the message to contain '%s', got: %s", hand_written[i].fragment,
			  err->message);
		free(got);
	}
}

Test(libvirt_metadata, no_metadata)
{
	char *got;
	virErrorPtr e;
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();

	need_test_driver();
	got = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, VR_DOMAIN_XML_NS,
				   VIR_DOMAIN_AFFECT_LIVE);
	cr_assert_null(got, "the test domain should have no vreclaim metadata");
	e = virGetLastError();
	cr_assert_not_null(e, "expected a libvirt error");
	cr_assert_eq(e->code, VIR_ERR_NO_DOMAIN_METADATA,
		     "expected VIR_ERR_NO_DOMAIN_METADATA (%d), got %d: %s",
		     VIR_ERR_NO_DOMAIN_METADATA, e->code, e->message);
	cr_assert(!t->enable, "a domain without metadata is not managed");

	/* removing it (what `virsh metadata --remove` does) gives the same */
	set_metadata(dom, "<domain/>", VIR_DOMAIN_AFFECT_LIVE);
	cr_assert_eq(virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, NULL, NULL,
					  VR_DOMAIN_XML_NS, VIR_DOMAIN_AFFECT_LIVE),
		     0, "removing the metadata: %s", last_error());
	got = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, VR_DOMAIN_XML_NS,
				   VIR_DOMAIN_AFFECT_LIVE);
	cr_assert_null(got, "removed metadata should be gone");
	cr_assert_eq(virGetLastError()->code, VIR_ERR_NO_DOMAIN_METADATA,
		     "expected VIR_ERR_NO_DOMAIN_METADATA after removal");
}

Test(libvirt_metadata, test_domain_is_not_a_qemu_domain)
{
	char *xml;
	g_auto(vr_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	need_test_driver();
	xml = virDomainGetXMLDesc(dom, 0);
	cr_assert_not_null(xml, "virDomainGetXMLDesc: %s", last_error());
	cr_assert(!vr_domain_xml_parse(xml, &info, &err),
		  "a domain of type 'test' is not one vreclaim manages");
	cr_assert(g_error_matches(err, VR_DOMAIN_XML_ERROR, VR_DOMAIN_XML_ERROR_UNSUPPORTED),
		  "expected VR_DOMAIN_XML_ERROR_UNSUPPORTED, got: %s", err ? err->message : "?");
	cr_assert(strstr(err->message, "type 'test'"), "the message should name the type: %s",
		  err->message);
	free(xml);
}
