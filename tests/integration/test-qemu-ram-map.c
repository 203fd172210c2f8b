/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QEMU commands (hostd/qmp/qemu-commands.c) against a real QEMU: a 256 MiB
 * PC stopped before its first instruction (-S, no kernel needed) with a
 * balloon device, driven through vr_qemu_monitor_new_qmp() on a socket in a
 * temporary folder. The guest RAM map must cover the 256 MiB (less what the
 * BIOS ROMs hide) and each host range must lie in the QEMU process's own
 * mappings (/proc/<pid>/maps); query-memory-size-summary must say 256 MiB.
 * Then the discovery of a QEMU through QMP (hostd/qmp/qmp-domain.c) on two such
 * QEMUs: one with a name, a UUID, the agent's virtio-serial port on a unix
 * socket and a balloon, one with none of them.
 * Skipped when qemu-system-x86_64 is not installed.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "qmp/qemu-commands.h"
#include "qmp/qmp-domain.h"

#define MIB (1024ULL * 1024)

/* The guest's RAM, MiB. */
#define GUEST_RAM_MIB 256

/* What the PC's BIOS ROMs (0xc0000-0xfffff) hide of the RAM below 1 MiB, bytes. */
#define PC_ROM_HOLE_BYTES 0x40000ULL

/* How long QEMU may take to open its socket, and each monitor call, ms. */
#define QEMU_START_MS  10000
#define QMP_TIMEOUT_MS 5000

static char *dir;
static char *socket_path;
static GPid qemu_pid;

/* QEMU dies with the test worker, even one that crashed before teardown. */
static void die_with_parent(gpointer data)
{
	(void)data;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* Skip the test when QEMU is not installed. */
static void need_qemu(void)
{
	g_autofree char *qemu = g_find_program_in_path("qemu-system-x86_64");

	if (!qemu)
		cr_skip_test("qemu-system-x86_64 is not installed");
}

/*
 * Start the test QEMU (a PC of GUEST_RAM_MIB stopped with -S, TCG) with its
 * QMP socket at @qmp_path and the arguments @extra (NULL-terminated), and
 * wait for the socket file. @pid: set as soon as QEMU runs, for the
 * teardown to stop it with kill_qemu() whatever fails after.
 */
static void spawn_qemu(const char *qmp_path, const char *const *extra, GPid *pid)
{
	g_autofree char *qemu = g_find_program_in_path("qemu-system-x86_64");
	g_autofree char *qmp_arg = g_strdup_printf("unix:%s,server=on,wait=off", qmp_path);
	g_autofree char *mem_arg = g_strdup_printf("%d", GUEST_RAM_MIB);
	const char *base[] = { "-machine", "pc",	 "-accel",	"tcg",	"-m",	mem_arg,
			       "-S",	   "-nographic", "-nodefaults", "-qmp", qmp_arg };
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GError) err = NULL;

	need_qemu();
	g_ptr_array_add(argv, qemu);
	for (guint i = 0; i < G_N_ELEMENTS(base); i++)
		g_ptr_array_add(argv, (gpointer)base[i]);
	for (const char *const *a = extra; a && *a; a++)
		g_ptr_array_add(argv, (gpointer)*a);
	g_ptr_array_add(argv, NULL);
	cr_assert(g_spawn_async(NULL, (char **)argv->pdata, NULL,
				G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
				die_with_parent, NULL, pid, &err),
		  "cannot start QEMU: %s", err ? err->message : "?");
	for (int i = 0; i < QEMU_START_MS / 10 && !g_file_test(qmp_path, G_FILE_TEST_EXISTS); i++)
		g_usleep(10000);
	cr_assert(g_file_test(qmp_path, G_FILE_TEST_EXISTS),
		  "QEMU did not open its QMP socket within %d ms", QEMU_START_MS);
}

/* Stop the QEMU *@pid (if any) and reap it. */
static void kill_qemu(GPid *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	waitpid(*pid, NULL, 0);
	g_spawn_close_pid(*pid);
	*pid = 0;
}

static void start_qemu(void)
{
	static const char *const balloon[] = { "-device", "virtio-balloon-pci", NULL };
	g_autoptr(GError) err = NULL;

	need_qemu();
	dir = g_dir_make_tmp("vr-qemu-ram-map-XXXXXX", &err);
	cr_assert_not_null(dir, "cannot make a temporary folder: %s", err ? err->message : "?");
	socket_path = g_build_filename(dir, "qmp.sock", NULL);
	spawn_qemu(socket_path, balloon, &qemu_pid);
}

static void stop_qemu(void)
{
	kill_qemu(&qemu_pid);
	if (socket_path)
		g_unlink(socket_path);
	if (dir)
		g_rmdir(dir);
	g_clear_pointer(&socket_path, g_free);
	g_clear_pointer(&dir, g_free);
}

TestSuite(qemu_ram_map, .init = start_qemu, .fini = stop_qemu);

/* Whether [@start, @end) lies in mappings of @pid with no gap between them. */
static gboolean mapped_in(GPid pid, uint64_t start, uint64_t end)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/maps", (int)pid);
	g_autofree char *maps = NULL;
	g_auto(GStrv) lines = NULL;
	uint64_t covered = start;

	cr_assert(g_file_get_contents(path, &maps, NULL, NULL), "cannot read %s", path);
	lines = g_strsplit(maps, "\n", -1);
	/* The kernel lists mappings by address: extend the covered prefix. */
	for (char **l = lines; *l && covered < end; l++) {
		uint64_t lo = 0, hi = 0;

		if (sscanf(*l, "%" SCNx64 "-%" SCNx64, &lo, &hi) != 2)
			continue;
		if (lo <= covered && covered < hi)
			covered = hi;
	}
	return covered >= end;
}

/* QEMU creates its socket file (bind) a moment before it listens: a
 * connection refused then is retried until QEMU_START_MS has passed. */
static struct vr_qemu_monitor *connect_monitor(const char *path)
{
	g_autoptr(GError) err = NULL;
	gint64 deadline = g_get_monotonic_time() + QEMU_START_MS * G_TIME_SPAN_MILLISECOND;
	struct vr_qemu_monitor *mon;

	while (!(mon = vr_qemu_monitor_new_qmp(path, QMP_TIMEOUT_MS, &err)) &&
	       g_get_monotonic_time() < deadline) {
		g_clear_error(&err);
		g_usleep(20000);
	}
	cr_assert_not_null(mon, "cannot connect to QEMU: %s", err ? err->message : "?");
	return mon;
}

Test(qemu_ram_map, covers_the_guest_ram)
{
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GArray) map = NULL;
	g_autoptr(GError) err = NULL;
	uint64_t total = 0, ram = 0;

	mon = connect_monitor(socket_path);
	cr_assert(vr_qemu_guest_ram_map(mon, &map, &err), "guest RAM map: %s",
		  err ? err->message : "?");
	cr_assert_geq(map->len, 2, "expected RAM below and above 1 MiB, got %u ranges", map->len);
	for (guint i = 0; i < map->len; i++) {
		const struct vr_ram_range *r = &g_array_index(map, struct vr_ram_range, i);

		cr_expect(mapped_in(qemu_pid, r->hva, r->hva + r->size),
			  "range %u (gpa 0x%" PRIx64 ", 0x%" PRIx64 " bytes) at hva 0x%" PRIx64
			  " is not mapped in QEMU",
			  i, r->gpa, r->size, r->hva);
		total += r->size;
	}
	cr_expect_eq(g_array_index(map, struct vr_ram_range, 0).gpa, 0, "RAM starts at gpa 0");
	cr_expect_eq(total, GUEST_RAM_MIB * MIB - PC_ROM_HOLE_BYTES,
		     "expected %d MiB less the BIOS ROM hole, got %" PRIu64 " bytes", GUEST_RAM_MIB,
		     total);
	cr_assert(vr_qemu_query_ram_size(mon, &ram, &err), "query-memory-size-summary: %s",
		  err ? err->message : "?");
	cr_expect_eq(ram, GUEST_RAM_MIB * MIB, "expected %d MiB, got %" PRIu64 " bytes",
		     GUEST_RAM_MIB, ram);
}

Test(qemu_ram_map, balloon)
{
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err2 = NULL;
	uint64_t actual = 0;

	mon = connect_monitor(socket_path);
	cr_assert(vr_qemu_query_balloon(mon, &actual, &err), "query-balloon: %s",
		  err ? err->message : "?");
	cr_expect_eq(actual, GUEST_RAM_MIB * MIB, "expected %d MiB, got %" PRIu64 " bytes",
		     GUEST_RAM_MIB, actual);
	cr_assert(vr_qemu_set_balloon(mon, GUEST_RAM_MIB / 2 * MIB, &err), "balloon: %s",
		  err ? err->message : "?");
	/* A refusal from the real QEMU: the message names class and desc. */
	cr_assert_not(
		vr_qemu_monitor_execute(mon, "no-such-command", NULL, QMP_TIMEOUT_MS, NULL, &err2));
	cr_expect(err2->domain == VR_QMP_ERROR && err2->code == VR_QMP_ERROR_COMMAND,
		  "expected QEMU to refuse: %s", err2->message);
	cr_expect(strstr(err2->message, "CommandNotFound"), "expected the class: %s",
		  err2->message);
}

/* ---- discovery through QMP (hostd/qmp/qmp-domain.c) ---- */

/* What the first probed QEMU is started with. */
#define PROBE_NAME "probe-test"
#define PROBE_UUID "6f1c2e5a-3b4d-4e8f-9a0b-1c2d3e4f5a6b"

/* The two QEMUs of the probe test, and their temporary folder (which holds
 * only sockets). */
static GPid probe_pids[2];
static char *probe_dir;

static void stop_probe_qemus(void)
{
	g_autoptr(GDir) d = NULL;
	const char *name;

	for (guint i = 0; i < G_N_ELEMENTS(probe_pids); i++)
		kill_qemu(&probe_pids[i]);
	if (!probe_dir)
		return;
	d = g_dir_open(probe_dir, 0, NULL);
	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *path = g_build_filename(probe_dir, name, NULL);

		g_unlink(path);
	}
	g_rmdir(probe_dir);
	g_clear_pointer(&probe_dir, g_free);
}

TestSuite(qemu_probe, .fini = stop_probe_qemus);

Test(qemu_probe, name_uuid_pid_memory_agent_and_balloon)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *qmp = NULL;
	g_autofree char *bare_qmp = NULL;
	g_autofree char *agent = NULL;
	g_autofree char *agent_arg = NULL;
	g_autofree char *bare_uuid = NULL;
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(vr_qemu_monitor) bare_mon = NULL;
	g_auto(vr_qmp_domain_info) info = { 0 };
	g_auto(vr_qmp_domain_info) bare = { 0 };

	need_qemu();
	probe_dir = g_dir_make_tmp("vr-qmp-probe-XXXXXX", &err);
	cr_assert_not_null(probe_dir, "cannot make a temporary folder: %s",
			   err ? err->message : "?");
	qmp = g_build_filename(probe_dir, "qmp.sock", NULL);
	bare_qmp = g_build_filename(probe_dir, "bare.sock", NULL);
	agent = g_build_filename(probe_dir, "agent.sock", NULL);
	agent_arg = g_strdup_printf("socket,id=agentch,path=%s,server=on,wait=off", agent);
	{
		const char *const full[] = {
			"-name",    "guest=" PROBE_NAME,
			"-uuid",    PROBE_UUID,
			"-device",  "virtio-serial",
			"-chardev", agent_arg,
			"-device",  "virtserialport,chardev=agentch,name=org.vreclaim.agent.0",
			"-device",  "virtio-balloon-pci",
			NULL
		};

		spawn_qemu(qmp, full, &probe_pids[0]);
	}
	spawn_qemu(bare_qmp, NULL, &probe_pids[1]);

	mon = connect_monitor(qmp);
	cr_expect_eq(vr_qemu_monitor_get_peer_pid(mon), probe_pids[0],
		     "SO_PEERCRED should name QEMU (pid %d), got %d", (int)probe_pids[0],
		     (int)vr_qemu_monitor_get_peer_pid(mon));
	cr_assert(vr_qmp_domain_probe(mon, qmp, vr_qemu_monitor_get_peer_pid(mon), &info, &err),
		  "probe: %s", err ? err->message : "?");
	cr_expect_str_eq(info.name, PROBE_NAME);
	cr_expect_str_eq(info.uuid, PROBE_UUID);
	cr_expect_eq(info.pid, probe_pids[0], "expected QEMU's pid %d, got %d", (int)probe_pids[0],
		     (int)info.pid);
	cr_expect_eq(info.memory_bytes, GUEST_RAM_MIB * MIB, "expected %d MiB, got %" PRIu64,
		     GUEST_RAM_MIB, info.memory_bytes);
	cr_expect_str_eq(info.agent_socket_path, agent);
	cr_expect(info.has_balloon, "the QEMU has virtio-balloon-pci");

	bare_mon = connect_monitor(bare_qmp);
	cr_assert(vr_qmp_domain_probe(bare_mon, bare_qmp, vr_qemu_monitor_get_peer_pid(bare_mon),
				      &bare, &err),
		  "probe of the bare QEMU: %s", err ? err->message : "?");
	bare_uuid = vr_qmp_domain_uuid_from_path(bare_qmp);
	cr_expect_str_eq(bare.name, "bare.sock", "no -name: the socket's basename");
	cr_expect_str_eq(bare.uuid, bare_uuid, "no -uuid: derived from the socket path");
	cr_expect_eq(bare.pid, probe_pids[1]);
	cr_expect_eq(bare.memory_bytes, GUEST_RAM_MIB * MIB);
	cr_expect_null(bare.agent_socket_path, "no agent port: %s", bare.agent_socket_path);
	cr_expect_not(bare.has_balloon, "no balloon device");
}
