/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the free page reporting probe, its order setting and the
 * kernel release
 * (guest-agent/free-page-reporting.c) on fake sysfs and procfs trees in a
 * temporary folder:
 *
 *   sysfs/bus/virtio/devices/virtio<N>/device     "0x0005\n" (balloon)
 *   sysfs/bus/virtio/devices/virtio<N>/driver  -> .../drivers/virtio_balloon
 *   sysfs/bus/virtio/devices/virtio<N>/features   "0000010...\n" (bit i = char i)
 *   sysfs/module/page_reporting/parameters/page_reporting_order
 *   procfs/sys/kernel/osrelease
 *
 * Parameter structs hold no pointers.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <string.h>

#include "free-page-reporting.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define DRIVERS "../../../../bus/virtio/drivers/"

/* 64 feature characters with bits 32 (VERSION_1) and @bit set; @bit < 0:
 * none but 32. Return: owned. */
static char *features_with(int bit)
{
	char *f = g_malloc(66);

	memset(f, '0', 64);
	f[32] = '1';
	if (bit >= 0)
		f[bit] = '1';
	f[64] = '\n';
	f[65] = '\0';
	return f;
}

/* A virtio device @name: device id text @id, bound to @driver ("" = none),
 * features text @features (NULL = no file). */
static void add_device(const char *root, const char *name, const char *id, const char *driver,
		       const char *features)
{
	g_autofree char *dir = g_build_filename("bus/virtio/devices", name, NULL);
	g_autofree char *device = g_build_filename(dir, "device", NULL);
	g_autofree char *feat = g_build_filename(dir, "features", NULL);
	g_autofree char *link = g_build_filename(dir, "driver", NULL);

	tree_put(root, device, id);
	if (features)
		tree_put(root, feat, features);
	if (*driver) {
		g_autofree char *target = g_strconcat(DRIVERS, driver, NULL);

		tree_symlink(root, link, target);
	}
}

static void set_order(const char *root, const char *text)
{
	tree_put(root, "module/page_reporting/parameters/page_reporting_order", text);
}

static struct vr_free_page_reporting probe(const char *root)
{
	struct vr_agent_paths paths = { root, root, root };
	struct vr_free_page_reporting fpr;
	bool active;

	memset(&fpr, 0x5a, sizeof(fpr)); /* the probe must fill everything */
	active = vr_free_page_reporting_probe(&paths, &fpr);
	cr_assert_eq(active, fpr.active, "the return value should be ->active");
	return fpr;
}

TestSuite(fpr, .description = "free page reporting probe");

Test(fpr, active_balloon_among_other_devices)
{
	g_autofree char *root = tree_new();
	g_autofree char *on = features_with(5);
	g_autofree char *off = features_with(-1);
	struct vr_free_page_reporting fpr;

	add_device(root, "virtio0", "0x0001\n", "virtio_net", off);
	add_device(root, "virtio1", "0x0003\n", "virtio_console", off);
	add_device(root, "virtio2", "0x0005\n", "virtio_balloon", on);
	set_order(root, "9\n");
	fpr = probe(root);
	cr_assert(fpr.active, "a reporting balloon should be found: %s", fpr.reason);
	cr_assert_str_eq(fpr.device, "virtio2", "the reporting device");
	cr_assert_str_eq(fpr.reason, "", "no reason when active");
	cr_assert_eq(fpr.order, 9, "the reporting order, got %d", fpr.order);
	tree_rm(root);
}

Test(fpr, second_balloon_reports)
{
	g_autofree char *root = tree_new();
	g_autofree char *on = features_with(5);

	add_device(root, "virtio1", "0x0005\n", "", on);
	add_device(root, "virtio3", "0x0005\n", "virtio_balloon", on);
	struct vr_free_page_reporting fpr = probe(root);
	cr_assert(fpr.active && !strcmp(fpr.device, "virtio3"),
		  "the bound balloon virtio3 should be found, got active=%d device='%s' (%s)",
		  fpr.active, fpr.device, fpr.reason);
	cr_assert_eq(fpr.order, -1, "no page_reporting module parameter: order -1");
	tree_rm(root);
}

/* One balloon that does not report: why, in words the reason must hold. */
struct off_case {
	char name[40];
	char id[16];
	char driver[32];
	int bit;	   /* feature bit set besides 32 (-1: none) */
	char features[80]; /* used instead when not empty */
	char words[4][48]; /* each must be in the reason */
};

static struct off_case off_cases[] = {
	{ "unbound", "0x0005\n", "", 5, "", { "virtio4", "no driver", "virtio_balloon" } },
	{ "other driver", "0x0005\n", "vfio-pci", 5, "", { "virtio4", "vfio-pci" } },
	{ "reporting bit off",
	  "0x0005\n",
	  "virtio_balloon",
	  3,
	  "",
	  { "virtio4", "bit 5", "free-page-reporting=on" } },
	{ "features too short",
	  "0x0005\n",
	  "virtio_balloon",
	  -1,
	  "01011\n",
	  { "virtio4", "too short", "01011" } },
	{ "features garbage",
	  "0x0005\n",
	  "virtio_balloon",
	  -1,
	  "0000011x00\n",
	  { "virtio4", "0000011x00", "0 and 1" } },
	{ "features empty", "0x0005\n", "virtio_balloon", -1, "\n", { "virtio4", "0 and 1" } },
	{ "device id garbage",
	  "banana\n",
	  "virtio_balloon",
	  5,
	  "",
	  { "virtio4", "banana", "no virtio balloon" } },
	{ "device id not hex", "0xzz05\n", "virtio_balloon", 5, "", { "virtio4", "0xzz05" } },
	{ "not a balloon", "0x0002\n", "virtio_blk", 5, "", { "no virtio balloon", "1 devices" } },
};

ParameterizedTestParameters(fpr, not_active)
{
	return cr_make_param_array(struct off_case, off_cases, G_N_ELEMENTS(off_cases));
}

ParameterizedTest(struct off_case *c, fpr, not_active)
{
	g_autofree char *root = tree_new();
	g_autofree char *features = c->features[0] ? g_strdup(c->features) : features_with(c->bit);
	struct vr_free_page_reporting fpr;

	add_device(root, "virtio4", c->id, c->driver, features);
	fpr = probe(root);
	cr_assert_not(fpr.active, "%s: reporting should not be active", c->name);
	cr_assert_str_eq(fpr.device, "", "%s: no reporting device", c->name);
	for (guint i = 0; i < G_N_ELEMENTS(c->words) && c->words[i][0]; i++)
		cr_assert(strstr(fpr.reason, c->words[i]),
			  "%s: the reason should say '%s', got: %s", c->name, c->words[i],
			  fpr.reason);
	tree_rm(root);
}

Test(fpr, reasons_of_every_balloon_in_name_order)
{
	g_autofree char *root = tree_new();
	g_autofree char *off = features_with(-1);
	struct vr_free_page_reporting fpr;
	const char *a, *b;

	add_device(root, "virtio7", "0x0005\n", "virtio_balloon", off);
	add_device(root, "virtio2", "0x0005\n", "", off);
	fpr = probe(root);
	cr_assert_not(fpr.active, "neither balloon reports");
	a = strstr(fpr.reason, "virtio2");
	b = strstr(fpr.reason, "virtio7");
	cr_assert(a && b && a < b && strstr(fpr.reason, "; "),
		  "both reasons, virtio2 first, joined by '; ', got: %s", fpr.reason);
	tree_rm(root);
}

Test(fpr, missing_features_file)
{
	g_autofree char *root = tree_new();

	add_device(root, "virtio0", "0x0005\n", "virtio_balloon", NULL);
	struct vr_free_page_reporting fpr = probe(root);
	cr_assert(!fpr.active && strstr(fpr.reason, "features"),
		  "an unreadable features file should be the reason, got: %s", fpr.reason);
	tree_rm(root);
}

Test(fpr, no_virtio_bus)
{
	g_autofree char *root = tree_new();
	struct vr_free_page_reporting fpr = probe(root);

	cr_assert(!fpr.active && strstr(fpr.reason, "no virtio bus") &&
			  strstr(fpr.reason, "bus/virtio/devices"),
		  "no bus should be the reason, naming the folder, got: %s", fpr.reason);
	cr_assert_eq(fpr.order, -1, "no order");
	tree_rm(root);
}

Test(fpr, empty_virtio_bus)
{
	g_autofree char *root = tree_new();

	tree_mkdir(root, "bus/virtio/devices");
	struct vr_free_page_reporting fpr = probe(root);
	cr_assert(!fpr.active && strstr(fpr.reason, "no virtio balloon") &&
			  strstr(fpr.reason, "0 devices"),
		  "an empty bus should say so, got: %s", fpr.reason);
	tree_rm(root);
}

/* page_reporting_order texts and the order they mean. */
struct order_case {
	char text[32];
	int expect;
};

static struct order_case order_cases[] = {
	{ "9\n", 9 },		{ "0\n", 0 },	  { "20\n", 20 }, { "21\n", -1 },
	{ "4294967295\n", -1 }, { "nine\n", -1 }, { "", -1 },	  { "-1\n", -1 },
};

ParameterizedTestParameters(fpr, order)
{
	return cr_make_param_array(struct order_case, order_cases, G_N_ELEMENTS(order_cases));
}

ParameterizedTest(struct order_case *c, fpr, order)
{
	g_autofree char *root = tree_new();
	g_autofree char *on = features_with(5);
	struct vr_free_page_reporting fpr;

	add_device(root, "virtio0", "0x0005\n", "virtio_balloon", on);
	set_order(root, c->text);
	fpr = probe(root);
	cr_assert(fpr.active, "the balloon reports");
	cr_assert_eq(fpr.order, c->expect, "'%s': expected order %d, got %d", g_strstrip(c->text),
		     c->expect, fpr.order);
	tree_rm(root);
}

TestSuite(kernel_release, .description = "vr_kernel_release()");

#define ORDER_FILE "module/page_reporting/parameters/page_reporting_order"

Test(fpr_order, set_writes_the_order_and_gives_the_previous)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) err = NULL;
	int previous = 42;

	set_order(root, "9\n");
	cr_assert(vr_free_page_reporting_set_order(&paths, 5, &previous, &err),
		  "setting order 5 should work, got: %s", err ? err->message : "?");
	cr_assert_eq(previous, 9, "the previous order, got %d", previous);
	tree_expect(root, ORDER_FILE, "5");
	cr_assert(vr_free_page_reporting_set_order(&paths, 0, &previous, &err));
	cr_assert_eq(previous, 5);
	tree_expect(root, ORDER_FILE, "0");
	tree_rm(root);
}

Test(fpr_order, unset_previous_is_minus_one)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) err = NULL;
	int previous = 42;

	/* -1 as unsigned until a reporting device registers */
	set_order(root, "4294967295\n");
	cr_assert(vr_free_page_reporting_set_order(&paths, 9, &previous, &err));
	cr_assert_eq(previous, -1, "no order to restore, got %d", previous);
	tree_expect(root, ORDER_FILE, "9");
	tree_rm(root);
}

Test(fpr_order, out_of_range_is_refused_and_writes_nothing)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	static const int bad[] = { -1, 11, 64 };

	set_order(root, "9\n");
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) err = NULL;
		int previous;

		cr_assert_not(vr_free_page_reporting_set_order(&paths, bad[i], &previous, &err),
			      "order %d should be refused", bad[i]);
		cr_assert(g_error_matches(err, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID));
		cr_assert(strstr(err->message, "0..10"), "the message names the valid range: %s",
			  err->message);
		tree_expect(root, ORDER_FILE, "9\n");
	}
	tree_rm(root);
}

Test(fpr_order, missing_parameter_is_unsupported)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) err = NULL;
	int previous = 42;

	cr_assert_not(vr_free_page_reporting_set_order(&paths, 5, &previous, &err));
	cr_assert(g_error_matches(err, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED),
		  "no parameter: unsupported, got %s", err->message);
	cr_assert(strstr(err->message, "page_reporting_order"), "the message names the file: %s",
		  err->message);
	cr_assert_eq(previous, -1);
	tree_rm(root);
}

Test(kernel_release, first_line_stripped)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autofree char *release = NULL;

	tree_put(root, "sys/kernel/osrelease", "6.12.9+deb12-cloud-amd64\n");
	release = vr_kernel_release(&paths);
	cr_assert_str_eq(release, "6.12.9+deb12-cloud-amd64", "the release without its newline");
	tree_rm(root);
}

Test(kernel_release, unknown_when_missing_or_empty)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autofree char *missing = vr_kernel_release(&paths);
	g_autofree char *empty = NULL;

	cr_assert_str_eq(missing, "unknown", "a missing osrelease: 'unknown'");
	tree_put(root, "sys/kernel/osrelease", "  \n");
	empty = vr_kernel_release(&paths);
	cr_assert_str_eq(empty, "unknown", "an empty osrelease: 'unknown'");
	tree_rm(root);
}
