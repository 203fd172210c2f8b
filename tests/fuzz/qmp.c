// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target qmp: what vreclaimd reads from a QEMU monitor, a QMP message
 * per line (greeting, reply, error, event: hostd/qmp/qmp.c
 * vr_qmp_parse_message(), vr_qmp_reply_result()), and every parser of a
 * reply's "return" member: hostd/qmp/qemu-commands.c (query-balloon,
 * query-memory-size-summary, query-memdev; the string of
 * human-monitor-command through `info mtree -f` and `gpa2hva`) and
 * hostd/qmp/qmp-domain.c (query-name, query-uuid, the base memory, qom-list,
 * qom-get, query-chardev). Every parser gets every "return": each refuses
 * the others' shapes, and QEMU may answer any command with anything.
 *
 * Checks: a refusal is in the parser's error domain; what is accepted keeps
 * its header's promises (names and ids within their bounds, a chardev's
 * socket path absolute).
 */
#include <string.h>

#include "fuzz.h"
#include "qmp/qemu-commands.h"
#include "qmp/qmp-domain.h"
#include "qmp/qmp.h"

/* Lines (messages) taken from one input: enough for a probe's exchange. */
#define FUZZ_MAX_LINES 64

/* The agent's chardev as libvirt names it. */
#define FUZZ_CHARDEV_LABEL "charchannel0"

static void check_domain_error(const GError *error, const char *parser)
{
	VR_FUZZ_CHECK(error && error->domain == VR_QMP_DOMAIN_ERROR, "%s failed otherwise: %s",
		      parser, error ? error->message : "(none)");
}

static void check_commands_error(const GError *error, const char *parser)
{
	VR_FUZZ_CHECK(error && error->domain == VR_QEMU_COMMANDS_ERROR, "%s failed otherwise: %s",
		      parser, error ? error->message : "(none)");
}

/* The parsers of hostd/qmp/qemu-commands.c, on @ret. */
static void check_commands(json_object *ret)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) ids = NULL;
	uint64_t bytes = 0;

	if (!vr_qemu_parse_balloon(ret, &bytes, &error))
		check_commands_error(error, "vr_qemu_parse_balloon");
	g_clear_error(&error);
	if (!vr_qemu_parse_memory_size_summary(ret, &bytes, &error))
		check_commands_error(error, "vr_qemu_parse_memory_size_summary");
	g_clear_error(&error);
	if (!vr_qemu_parse_memdev_ids(ret, &ids, &error))
		check_commands_error(error, "vr_qemu_parse_memdev_ids");
	else
		VR_FUZZ_CHECK(ids, "no ids and no error");
	g_clear_error(&error);

	/* human-monitor-command answers with a string: HMP's output. */
	if (json_object_is_type(ret, json_type_string)) {
		const char *text = json_object_get_string(ret);
		g_autoptr(GArray) ranges = NULL;
		uint64_t hva = 0;

		if (!vr_qemu_parse_mtree_ram(text, &ranges, &error))
			check_commands_error(error, "vr_qemu_parse_mtree_ram");
		g_clear_error(&error);
		if (vr_qemu_parse_gpa2hva(text, 0x100000, "pc.ram", &hva, &error))
			VR_FUZZ_CHECK(hva != 0, "a host-virtual address of 0");
		else
			check_commands_error(error, "vr_qemu_parse_gpa2hva");
	}
}

/* The parsers of hostd/qmp/qmp-domain.c, on @ret. */
static void check_domain(json_object *ret)
{
	static const char *const containers[] = { VR_QMP_DOMAIN_PERIPHERAL,
						  VR_QMP_DOMAIN_PERIPHERAL_ANON };
	g_autoptr(GError) error = NULL;
	g_autofree char *name = NULL;
	g_autofree char *uuid = NULL;
	g_autofree char *value = NULL;
	g_autofree char *path = NULL;
	uint64_t bytes = 0;

	if (vr_qmp_parse_name(ret, &name, &error))
		VR_FUZZ_CHECK(!name || (*name && strlen(name) <= VR_QMP_DOMAIN_MAX_NAME_BYTES),
			      "a name out of bounds");
	else
		check_domain_error(error, "vr_qmp_parse_name");
	g_clear_error(&error);
	if (vr_qmp_parse_uuid(ret, &uuid, &error))
		VR_FUZZ_CHECK(!uuid || strlen(uuid) == 36, "a UUID of %zu characters",
			      strlen(uuid));
	else
		check_domain_error(error, "vr_qmp_parse_uuid");
	g_clear_error(&error);
	if (vr_qmp_parse_base_memory(ret, &bytes, &error))
		VR_FUZZ_CHECK(bytes > 0, "a base memory of 0");
	else
		check_domain_error(error, "vr_qmp_parse_base_memory");
	g_clear_error(&error);
	for (guint i = 0; i < G_N_ELEMENTS(containers); i++) {
		g_autoptr(GPtrArray) ports = NULL;

		if (vr_qmp_parse_serial_ports(ret, containers[i], &ports, &error))
			VR_FUZZ_CHECK(ports && ports->len <= VR_QMP_DOMAIN_MAX_QOM_CHILDREN,
				      "ports out of bounds");
		else
			check_domain_error(error, "vr_qmp_parse_serial_ports");
		g_clear_error(&error);
	}
	if (vr_qmp_parse_qom_string(ret, "/machine/peripheral/channel0", "chardev", &value, &error))
		VR_FUZZ_CHECK(value && strlen(value) <= VR_QMP_DOMAIN_MAX_ID_BYTES,
			      "a QOM string out of bounds");
	else
		check_domain_error(error, "vr_qmp_parse_qom_string");
	g_clear_error(&error);
	if (vr_qmp_parse_chardev_socket(ret, FUZZ_CHARDEV_LABEL, &path, &error))
		VR_FUZZ_CHECK(path && path[0] == '/', "a relative socket path");
	else
		check_domain_error(error, "vr_qmp_parse_chardev_socket");
}

static void check_line(const char *line)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(json_object) msg = NULL;
	g_autoptr(json_object) ret = NULL;
	enum vr_qmp_message_kind kind = VR_QMP_MESSAGE_GREETING;

	if (!vr_qmp_parse_message(line, -1, &kind, &msg, &error)) {
		VR_FUZZ_CHECK(g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL),
			      "a refusal that is no protocol error: %s",
			      error ? error->message : "(none)");
		return;
	}
	if (kind != VR_QMP_MESSAGE_RETURN && kind != VR_QMP_MESSAGE_ERROR)
		return;
	if (!vr_qmp_reply_result(msg, "query-fuzz", &ret, &error)) {
		VR_FUZZ_CHECK(kind == VR_QMP_MESSAGE_ERROR &&
				      g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_COMMAND),
			      "a reply refused otherwise: %s", error ? error->message : "(none)");
		return;
	}
	VR_FUZZ_CHECK(kind == VR_QMP_MESSAGE_RETURN, "an error taken for a result");
	check_commands(ret);
	check_domain(ret);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_auto(GStrv) lines = vr_fuzz_split(data, size, FUZZ_MAX_LINES);

	for (char **l = lines; *l; l++)
		check_line(*l);
	return 0;
}
