/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "host-damon" access source: the host kernel's DAMON watching the
 * virtual memory of a QEMU process (vaddr, through DAMON sysfs with the
 * agent's writer, kernel/damon-sysfs.c), its picture translated to the
 * guest's physical addresses through the RAM map (vr_ram_map_to_guest(),
 * hostd/qmp/ram-map.c). See access-source.h.
 *
 * The vaddr operations set picks the process's mappings itself (and updates
 * them every ops update interval), so DAMON's regions cover the whole QEMU
 * process: its heap, libraries and stacks too. Only the parts inside guest
 * RAM are kept.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>

#include "damon-sysfs.h"
#include "kernel-file.h"
#include "sources/access-source.h"

/**
 * struct host_damon - the source's private data.
 * @sysfs, @procfs:	the roots given (owned); @paths points at them.
 * @paths:		what the DAMON sysfs layer reads (cgroup unused).
 * @pid:		the QEMU process.
 * @ram_map:		the RAM map, @nr_ram ranges (owned copy).
 * @attrs:		the monitoring attributes.
 * @config:		what is written for kdamond 0 (owned).
 */
struct host_damon {
	char *sysfs;
	char *procfs;
	struct vr_agent_paths paths;
	pid_t pid;
	struct vr_ram_range *ram_map;
	guint nr_ram;
	struct vr_monitor_attrs attrs;
	struct vr_damon_config *config;
};

/* ---- arguments ---- */

static gboolean invalid(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean invalid(GError **error, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *msg = NULL;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID, msg);
	return FALSE;
}

/* A copy of the RAM map given, checked as every RAM map is
 * (vr_ram_map_validate()); NULL with @error when it is not usable. */
static struct vr_ram_range *ram_map_copy(const GArray *map, GError **error)
{
	g_autofree struct vr_ram_range *copy = NULL;
	g_autoptr(GError) local = NULL;

	if (!map || map->len == 0) {
		invalid(error, "the RAM map is empty: no guest RAM to monitor");
		return NULL;
	}
	if (g_array_get_element_size((GArray *)map) != sizeof(struct vr_ram_range)) {
		invalid(error, "the RAM map is not an array of struct vr_ram_range");
		return NULL;
	}
	copy = g_memdup2(map->data, map->len * sizeof(struct vr_ram_range));
	if (!vr_ram_map_validate(copy, map->len, &local)) {
		invalid(error, "%s", local->message);
		return NULL;
	}
	return g_steal_pointer(&copy);
}

/* ---- the kernel side ---- */

/* @local (from the DAMON sysfs layer) as this source's error, its code
 * mapped and the process named. */
static gboolean kernel_error(const struct host_damon *hd, GError **error, const GError *local)
{
	enum vr_access_source_error code = VR_ACCESS_SOURCE_ERROR_FAILED;

	if (g_error_matches(local, VR_AGENT_ERROR, VR_AGENT_ERROR_BUSY))
		code = VR_ACCESS_SOURCE_ERROR_BUSY;
	else if (g_error_matches(local, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED))
		code = VR_ACCESS_SOURCE_ERROR_UNSUPPORTED;
	g_set_error(error, VR_ACCESS_SOURCE_ERROR, code, "QEMU process %d: %s", (int)hd->pid,
		    local->message);
	return FALSE;
}

/* Does @procfs/PID exist? */
static gboolean process_exists(const struct host_damon *hd, char **dir_out)
{
	char num[24];
	g_autofree char *dir = NULL;
	gboolean exists;

	g_snprintf(num, sizeof(num), "%d", (int)hd->pid);
	dir = g_build_filename(hd->procfs, num, NULL);
	exists = g_file_test(dir, G_FILE_TEST_IS_DIR);
	if (dir_out)
		*dir_out = g_steal_pointer(&dir);
	return exists;
}

static gboolean host_damon_start(void *priv, GError **error)
{
	struct host_damon *hd = priv;
	g_autoptr(GError) local = NULL;
	g_autofree char *dir = NULL;
	struct vr_damon_caps caps;

	if (!vr_damon_sysfs_probe_ops(&hd->paths, VR_DAMON_OPS_VADDR, &local))
		return kernel_error(hd, error, local);
	if (!process_exists(hd, &dir)) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_FAILED,
			    "QEMU process %d does not exist (no %s)", (int)hd->pid, dir);
		return FALSE;
	}
	if (!vr_damon_sysfs_check_free(&hd->paths, FALSE, &local))
		return kernel_error(hd, error, local);
	vr_damon_sysfs_detect_caps(&hd->paths, &caps);
	if (!vr_damon_sysfs_start(&hd->paths, hd->config, &caps, &local))
		return kernel_error(hd, error, local);
	g_debug("host-damon: kdamond 0 watches QEMU process %d (vaddr), %u RAM ranges",
		(int)hd->pid, hd->nr_ram);
	return TRUE;
}

static gboolean host_damon_get_regions(void *priv, struct vr_proto_regions *out, GError **error)
{
	struct host_damon *hd = priv;
	g_autoptr(GArray) hva = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GArray) gpa = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) local = NULL;

	if (!vr_damon_sysfs_read_tried_regions(&hd->paths, VR_DAMON_STAT_SCHEME,
					       VR_DAMON_MAX_TRIED_REGIONS, hva, &local)) {
		if (!process_exists(hd, NULL))
			g_prefix_error(&local, "the process has exited (DAMON stops with it): ");
		return kernel_error(hd, error, local);
	}
	vr_ram_map_to_guest(hd->ram_map, hd->nr_ram, hva,
			    vr_monitor_attrs_max_nr_accesses(&hd->attrs), gpa);
	vr_damon_regions_merge(gpa, VR_PROTO_MAX_REGIONS);
	out->sample_interval_us = hd->attrs.sample_interval_us;
	out->aggr_interval_us = hd->attrs.aggr_interval_us;
	out->regions = g_steal_pointer(&gpa);
	return TRUE;
}

static void host_damon_stop(void *priv)
{
	struct host_damon *hd = priv;
	g_autoptr(GError) local = NULL;

	if (!vr_damon_sysfs_stop(&hd->paths, &local) || !vr_damon_sysfs_release(&hd->paths, &local))
		g_warning("host-damon, QEMU process %d: %s", (int)hd->pid, local->message);
}

static void host_damon_free(void *priv)
{
	struct host_damon *hd = priv;

	g_free(hd->sysfs);
	g_free(hd->procfs);
	g_free(hd->ram_map);
	vr_damon_config_free(hd->config);
	g_free(hd);
}

static const struct vr_access_source_ops host_damon_ops = {
	.name = "host-damon",
	.start = host_damon_start,
	.get_regions = host_damon_get_regions,
	.stop = host_damon_stop,
	.free = host_damon_free,
};

struct vr_access_source *vr_access_source_new_host_damon(const char *sysfs_root,
							 const char *procfs_root, pid_t qemu_pid,
							 const GArray *ram_map,
							 const struct vr_monitor_attrs *attrs,
							 GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autofree struct vr_ram_range *ram = NULL;
	struct host_damon *hd;
	struct vr_damon_config *config;

	if (!sysfs_root || !*sysfs_root || !procfs_root || !*procfs_root || !attrs) {
		invalid(error, "host-damon needs the sysfs and procfs roots and monitoring "
			       "attributes");
		return NULL;
	}
	if (qemu_pid <= 0) {
		invalid(error, "host-damon: %d is not a QEMU process id", (int)qemu_pid);
		return NULL;
	}
	ram = ram_map_copy(ram_map, error);
	if (!ram) {
		g_prefix_error(error, "host-damon for QEMU process %d: ", (int)qemu_pid);
		return NULL;
	}
	config = vr_damon_config_new_monitor(attrs, VR_DAMON_OPS_VADDR, qemu_pid, NULL, 0, &local);
	if (!config) {
		invalid(error, "host-damon for QEMU process %d: %s", (int)qemu_pid, local->message);
		return NULL;
	}

	hd = g_new0(struct host_damon, 1);
	hd->sysfs = g_strdup(sysfs_root);
	hd->procfs = g_strdup(procfs_root);
	hd->paths =
		(struct vr_agent_paths){ .sysfs = hd->sysfs, .procfs = hd->procfs, .cgroup = "" };
	hd->pid = qemu_pid;
	hd->nr_ram = ram_map->len;
	hd->ram_map = g_steal_pointer(&ram);
	hd->attrs = *attrs;
	hd->config = config;
	return vr_access_source_new(&host_damon_ops, hd);
}
