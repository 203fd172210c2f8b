// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Is free page reporting active: see free-page-reporting.h.
 */
#include "free-page-reporting.h"

#include <stdarg.h>
#include <string.h>

#include "kernel-file.h"
#include "procfs-text.h"

/* Adds the sentence @fmt to @reasons ("; "-separated). */
G_GNUC_PRINTF(2, 3)
static void add_reason(GString *reasons, const char *fmt, ...)
{
	va_list ap;

	if (reasons->len)
		g_string_append(reasons, "; ");
	va_start(ap, fmt);
	g_string_append_vprintf(reasons, fmt, ap);
	va_end(ap);
}

/* The virtio device id in @dir/device ("0x0005"); FALSE when unreadable or
 * not "0x" + hex digits, with *@held set to what it held (owned). */
static gboolean read_device_id(const char *dir, guint64 *id, char **held)
{
	g_autofree char *path = g_build_filename(dir, "device", NULL);
	g_autofree char *line = vr_kfile_read_line(path, NULL);

	if (!line) {
		*held = g_strdup("(unreadable)");
		return FALSE;
	}
	g_strstrip(line);
	if (strncmp(line, "0x", 2) != 0 || !g_ascii_isxdigit(line[2]) ||
	    !g_ascii_string_to_unsigned(line + 2, 16, 0, G_MAXUINT32, id, NULL)) {
		*held = g_steal_pointer(&line);
		return FALSE;
	}
	return TRUE;
}

/* Does balloon @name (sysfs folder @dir) report free pages? Adds why not. */
static bool balloon_reports(const char *dir, const char *name, GString *reasons)
{
	g_autofree char *driver_link = g_build_filename(dir, "driver", NULL);
	g_autofree char *target = g_file_read_link(driver_link, NULL);
	g_autofree char *driver = target ? g_path_get_basename(target) : NULL;
	g_autofree char *features_path = g_build_filename(dir, "features", NULL);
	g_autofree char *features = NULL;
	size_t len;

	if (!driver) {
		add_reason(reasons,
			   "virtio balloon %s is bound to no driver (is the virtio_balloon module "
			   "loaded?)",
			   name);
		return false;
	}
	if (strcmp(driver, "virtio_balloon") != 0) {
		add_reason(reasons, "virtio balloon %s is bound to driver '%s', not virtio_balloon",
			   name, driver);
		return false;
	}
	features = vr_kfile_read_line(features_path, NULL);
	if (!features) {
		add_reason(reasons, "virtio balloon %s: cannot read %s", name, features_path);
		return false;
	}
	g_strstrip(features);
	len = strlen(features);
	if (!len || strspn(features, "01") != len) {
		add_reason(reasons,
			   "virtio balloon %s: features holds '%.64s', not a string of 0 and 1",
			   name, features);
		return false;
	}
	if (len <= VR_VIRTIO_BALLOON_F_REPORTING) {
		add_reason(reasons,
			   "virtio balloon %s: features '%s' is too short to hold bit %d "
			   "(VIRTIO_BALLOON_F_REPORTING)",
			   name, features, VR_VIRTIO_BALLOON_F_REPORTING);
		return false;
	}
	if (features[VR_VIRTIO_BALLOON_F_REPORTING] != '1') {
		add_reason(
			reasons,
			"virtio balloon %s did not negotiate free page reporting (feature bit %d "
			"is 0: give QEMU's balloon free-page-reporting=on)",
			name, VR_VIRTIO_BALLOON_F_REPORTING);
		return false;
	}
	return true;
}

static gint compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names under @dir, sorted (so that reasons come in a fixed order). */
static GPtrArray *sorted_entries(const char *dir)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	const char *name;

	if (!d)
		return names;
	while ((name = g_dir_read_name(d)))
		g_ptr_array_add(names, g_strdup(name));
	g_ptr_array_sort(names, compare_names);
	return names;
}

static char *order_path(const struct vr_agent_paths *paths)
{
	return g_build_filename(paths->sysfs, "module", "page_reporting", "parameters",
				"page_reporting_order", NULL);
}

static int read_order(const struct vr_agent_paths *paths)
{
	g_autofree char *path = order_path(paths);
	uint64_t order;

	if (!vr_kfile_read_u64(path, &order, NULL) || order > VR_FPR_MAX_ORDER)
		return -1;
	return (int)order;
}

bool vr_free_page_reporting_probe(const struct vr_agent_paths *paths,
				  struct vr_free_page_reporting *out)
{
	g_autofree char *bus = g_build_filename(paths->sysfs, "bus", "virtio", "devices", NULL);
	g_autoptr(GString) reasons = g_string_new(NULL);
	g_autoptr(GPtrArray) names = NULL;
	guint nr_balloons = 0;

	memset(out, 0, sizeof(*out));
	out->order = read_order(paths);
	if (!g_file_test(bus, G_FILE_TEST_IS_DIR)) {
		add_reason(reasons, "no virtio bus at %s", bus);
		g_strlcpy(out->reason, reasons->str, sizeof(out->reason));
		return false;
	}
	names = sorted_entries(bus);
	for (guint i = 0; i < names->len; i++) {
		const char *name = g_ptr_array_index(names, i);
		g_autofree char *dir = g_build_filename(bus, name, NULL);
		g_autofree char *held = NULL;
		guint64 id;

		if (!read_device_id(dir, &id, &held)) {
			add_reason(reasons, "virtio device %s: device id '%.32s' is not 0x<hex>",
				   name, held);
			continue;
		}
		if (id != VR_VIRTIO_ID_BALLOON)
			continue;
		nr_balloons++;
		if (balloon_reports(dir, name, reasons)) {
			out->active = true;
			g_strlcpy(out->device, name, sizeof(out->device));
			return true;
		}
	}
	if (!nr_balloons)
		add_reason(reasons,
			   "no virtio balloon (device id 0x%04x) among the %u devices of %s",
			   VR_VIRTIO_ID_BALLOON, names->len, bus);
	g_strlcpy(out->reason, reasons->str, sizeof(out->reason));
	return false;
}

gboolean vr_free_page_reporting_set_order(const struct vr_agent_paths *paths, int order,
					  int *previous, GError **error)
{
	g_autofree char *path = order_path(paths);

	*previous = read_order(paths);
	if (order < 0 || order > VR_FPR_SET_MAX_ORDER) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "reporting order %d: expected 0..%d (blocks of 4 KiB..4 MiB)", order,
			    VR_FPR_SET_MAX_ORDER);
		return FALSE;
	}
	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "cannot set the reporting order: no %s (a kernel without free page "
			    "reporting)",
			    path);
		return FALSE;
	}
	if (!vr_kfile_write_u64(path, (uint64_t)order, error)) {
		g_prefix_error(error, "cannot set the reporting order: ");
		return FALSE;
	}
	return TRUE;
}

gboolean vr_reportable_free_read(const struct vr_agent_paths *paths, guint order,
				 uint64_t page_size, uint64_t *bytes, GError **error)
{
	g_autofree char *path = g_build_filename(paths->procfs, "buddyinfo", NULL);
	g_autofree char *text = vr_kfile_read(path, VR_BUDDYINFO_MAX_BYTES, error);
	g_autoptr(GError) parse_error = NULL;

	if (!text)
		return FALSE;
	if (!vr_buddyinfo_parse(text, order, page_size, bytes, &parse_error)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID, "%s: %s", path,
			    parse_error->message);
		return FALSE;
	}
	return TRUE;
}

char *vr_kernel_release(const struct vr_agent_paths *paths)
{
	g_autofree char *path = g_build_filename(paths->procfs, "sys", "kernel", "osrelease", NULL);
	g_autoptr(GError) error = NULL;
	g_autofree char *line = vr_kfile_read_line(path, &error);

	if (!line) {
		g_debug("kernel release unknown: %s", error->message);
		return g_strdup("unknown");
	}
	g_strstrip(line);
	if (!*line) {
		g_debug("kernel release unknown: %s is empty", path);
		return g_strdup("unknown");
	}
	return g_steal_pointer(&line);
}
