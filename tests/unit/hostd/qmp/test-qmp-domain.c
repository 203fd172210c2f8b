/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the discovery of a QEMU through QMP (hostd/qmp/qmp-domain.c):
 * the parsers on what QEMU 7.2 (Debian 12's 7.2.22) really answered, and on
 * bad answers (wrong types, missing members, strings over their bounds, a
 * chardev that is no unix socket QEMU listens on), each error naming the
 * command and the member; the UUID derived from a socket path; then
 * vr_qmp_domain_probe() over a fake monitor (a struct vr_qemu_monitor_ops
 * answering from a table of canned replies) for a QEMU with everything, a
 * bare one, two agent ports, an agent port on a pty, refused commands.
 *
 * The captured replies were taken from QEMU started with -S -nodefaults and
 *   -name guest=probe-test -uuid 6f1c2e5a-3b4d-4e8f-9a0b-1c2d3e4f5a6b
 *   -device virtio-serial
 *   -chardev socket,id=agentch,path=<dir>/agent.sock,server=on,wait=off
 *   -device virtserialport,chardev=agentch,name=org.vreclaim.agent.0
 *   -device virtio-balloon-pci
 *   -chardev socket,id=other,path=<dir>/other.sock,server=on,wait=off
 *   -device virtserialport,chardev=other,name=org.other.0,id=port1
 *   -chardev pty,id=ptych -device virtserialport,chardev=ptych,name=ptyport
 * and a bare one (no -name, -uuid or devices). JSON here writes ' for "
 * (dq()); "@DIR@" stands for the temporary folder QEMU ran in.
 *
 * Criterion runs every test in its own process: parameter structs hold no
 * pointers.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <string.h>

#include "qmp/qemu-commands.h"
#include "qmp/qmp-domain.h"
#include "test-messages.h"
#include "test-quotes.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIB	     (1024ULL * 1024)

/* A made-up folder for the socket paths in canned replies (nothing is
 * created there): owned. */
static char *test_dir(void)
{
	return g_build_filename(g_get_tmp_dir(), "vr-qmp-domain-test", NULL);
}

/*
 * @text with ' for ", "@DIR@" for test_dir(), and "@A<n>@" for n times 'a'
 * (bounds are tested with strings of computed length): owned.
 */
static char *expand(const char *text)
{
	g_autofree char *dir = test_dir();
	g_autofree char *quoted = dq(text);
	GString *s = g_string_new(NULL);

	for (const char *p = quoted; *p;) {
		guint n = 0;
		int used = 0;

		if (g_str_has_prefix(p, "@DIR@")) {
			g_string_append(s, dir);
			p += strlen("@DIR@");
		} else if (sscanf(p, "@A%u@%n", &n, &used) == 1 && used > 0) {
			for (guint i = 0; i < n; i++)
				g_string_append_c(s, 'a');
			p += used;
		} else {
			g_string_append_c(s, *p++);
		}
	}
	return g_string_free(s, FALSE);
}

/* @text (expanded) parsed; NULL for "null", as json-c holds it. */
static json_object *json(const char *text)
{
	g_autofree char *full = expand(text);
	json_object *v = json_tokener_parse(full);

	cr_assert(v || !strcmp(full, "null"), "bad JSON in the test: %s", full);
	return v;
}

/* ---- what QEMU 7.2 answered ---- */

#define NAME_REPLY    "{'name': 'probe-test'}"
#define UUID_REPLY    "{'UUID': '6f1c2e5a-3b4d-4e8f-9a0b-1c2d3e4f5a6b'}"
#define SIZES_REPLY   "{'base-memory': 268435456, 'plugged-memory': 0}"
#define BALLOON_REPLY "{'actual': 268435456}"
#define PERIPHERAL_REPLY                                                                           \
	"[{'name': 'type', 'type': 'string'}, {'name': 'port1', 'type': "                          \
	"'child<virtserialport>'}]"
#define PERIPHERAL_ANON_REPLY                                                                      \
	"[{'name': 'type', 'type': 'string'}, {'name': 'device[0]', 'type': "                      \
	"'child<virtio-serial-pci>'}, {'name': 'device[1]', 'type': 'child<virtserialport>'}, "    \
	"{'name': 'device[2]', 'type': 'child<virtio-balloon-pci>'}, {'name': 'device[3]', "       \
	"'type': 'child<virtserialport>'}]"
#define CHARDEV_REPLY                                                                              \
	"[{'frontend-open': false, 'filename': "                                                   \
	"'disconnected:unix:@DIR@/other.sock,server=on', 'label': 'other'}, "                      \
	"{'frontend-open': false, 'filename': 'disconnected:unix:@DIR@/agent.sock,server=on', "    \
	"'label': 'agentch'}, {'frontend-open': true, 'filename': "                                \
	"'unix:@DIR@/qmp.sock,server=on', 'label': 'compat_monitor0'}, {'frontend-open': false, "  \
	"'filename': 'pty:/dev/pts/0', 'label': 'ptych'}]"
/* The bare QEMU. */
#define BARE_NAME_REPLY	      "{}"
#define BARE_UUID_REPLY	      "{'UUID': '00000000-0000-0000-0000-000000000000'}"
#define BARE_SIZES_REPLY      "{'base-memory': 134217728, 'plugged-memory': 0}"
#define BARE_BALLOON_REFUSAL  "!DeviceNotActive:No balloon device has been activated"
#define EMPTY_CONTAINER_REPLY "[{'name': 'type', 'type': 'string'}]"

#define AGENT_PORT "/machine/peripheral-anon/device[1]"

/* ---- the parsers on QEMU's answers ---- */

TestSuite(qmp_domain_parse, .description = "query-name, -uuid, memory, qom-list, chardevs");

Test(qmp_domain_parse, name_from_qemu)
{
	g_autoptr(json_object) named = json(NAME_REPLY);
	g_autoptr(json_object) bare = json(BARE_NAME_REPLY);
	g_autoptr(json_object) empty = json("{'name': ''}");
	g_autoptr(json_object) longest = json("{'name': '@A256@'}");
	g_autoptr(json_object) utf8 = json("{'name': 'gäst-🐧'}");
	g_autofree char *name = NULL;
	g_autofree char *none = NULL;
	g_autofree char *no_name = NULL;
	g_autofree char *long_name = NULL;
	g_autofree char *utf8_name = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qmp_parse_name(named, &name, &err), "%s", err ? err->message : "?");
	cr_expect_str_eq(name, "probe-test");
	cr_assert(vr_qmp_parse_name(bare, &none, &err), "%s", err ? err->message : "?");
	cr_expect_null(none, "QEMU without -name has none");
	cr_assert(vr_qmp_parse_name(empty, &no_name, &err), "%s", err ? err->message : "?");
	cr_expect_null(no_name, "an empty name is none");
	cr_assert(vr_qmp_parse_name(longest, &long_name, &err), "256 bytes: %s",
		  err ? err->message : "?");
	cr_expect_eq(strlen(long_name), VR_QMP_DOMAIN_MAX_NAME_BYTES);
	cr_assert(vr_qmp_parse_name(utf8, &utf8_name, &err), "%s", err ? err->message : "?");
	cr_expect_str_eq(utf8_name, "gäst-🐧");
}

Test(qmp_domain_parse, uuid_from_qemu)
{
	g_autoptr(json_object) given = json(UUID_REPLY);
	g_autoptr(json_object) bare = json(BARE_UUID_REPLY);
	g_autoptr(json_object) upper = json("{'UUID': '6F1C2E5A-3B4D-4E8F-9A0B-1C2D3E4F5A6B'}");
	g_autofree char *uuid = NULL;
	g_autofree char *none = NULL;
	g_autofree char *lower = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qmp_parse_uuid(given, &uuid, &err), "%s", err ? err->message : "?");
	cr_expect_str_eq(uuid, "6f1c2e5a-3b4d-4e8f-9a0b-1c2d3e4f5a6b");
	cr_assert(vr_qmp_parse_uuid(bare, &none, &err), "%s", err ? err->message : "?");
	cr_expect_null(none, "QEMU's default UUID stands for none");
	cr_assert(vr_qmp_parse_uuid(upper, &lower, &err), "%s", err ? err->message : "?");
	cr_expect_str_eq(lower, "6f1c2e5a-3b4d-4e8f-9a0b-1c2d3e4f5a6b",
			 "UUIDs are kept lower case");
}

Test(qmp_domain_parse, base_memory_from_qemu)
{
	g_autoptr(json_object) sizes = json(SIZES_REPLY);
	g_autoptr(json_object) plugged = json("{'base-memory': 1073741824, 'plugged-memory': "
					      "536870912}");
	g_autoptr(json_object) alone = json("{'base-memory': 134217728}");
	g_autoptr(GError) err = NULL;
	uint64_t bytes = 0;

	cr_assert(vr_qmp_parse_base_memory(sizes, &bytes, &err), "%s", err ? err->message : "?");
	cr_expect_eq(bytes, 256 * MIB);
	cr_assert(vr_qmp_parse_base_memory(plugged, &bytes, &err), "%s", err ? err->message : "?");
	cr_expect_eq(bytes, 1024 * MIB, "hot-plugged memory is not base memory");
	cr_assert(vr_qmp_parse_base_memory(alone, &bytes, &err), "%s", err ? err->message : "?");
	cr_expect_eq(bytes, 128 * MIB);
}

Test(qmp_domain_parse, serial_ports_from_qemu)
{
	g_autoptr(json_object) named = json(PERIPHERAL_REPLY);
	g_autoptr(json_object) anon = json(PERIPHERAL_ANON_REPLY);
	g_autoptr(json_object) empty = json(EMPTY_CONTAINER_REPLY);
	g_autoptr(GPtrArray) ports = NULL;
	g_autoptr(GPtrArray) anon_ports = NULL;
	g_autoptr(GPtrArray) none = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qmp_parse_serial_ports(named, VR_QMP_DOMAIN_PERIPHERAL, &ports, &err), "%s",
		  err ? err->message : "?");
	cr_assert_eq(ports->len, 1);
	cr_expect_str_eq(g_ptr_array_index(ports, 0), "/machine/peripheral/port1");
	cr_assert(vr_qmp_parse_serial_ports(anon, VR_QMP_DOMAIN_PERIPHERAL_ANON, &anon_ports, &err),
		  "%s", err ? err->message : "?");
	cr_assert_eq(anon_ports->len, 2, "the bus and the balloon are no ports: got %u",
		     anon_ports->len);
	cr_expect_str_eq(g_ptr_array_index(anon_ports, 0), AGENT_PORT);
	cr_expect_str_eq(g_ptr_array_index(anon_ports, 1), "/machine/peripheral-anon/device[3]");
	cr_assert(vr_qmp_parse_serial_ports(empty, VR_QMP_DOMAIN_PERIPHERAL, &none, &err), "%s",
		  err ? err->message : "?");
	cr_expect_eq(none->len, 0);
}

Test(qmp_domain_parse, qom_strings_from_qemu)
{
	static const char *const answers[] = { "'org.vreclaim.agent.0'", "'agentch'", "''" };
	static const char *const want[] = { "org.vreclaim.agent.0", "agentch", "" };

	for (guint i = 0; i < ARRAY_LEN(answers); i++) {
		g_autoptr(json_object) ret = json(answers[i]);
		g_autofree char *value = NULL;
		g_autoptr(GError) err = NULL;

		cr_assert(vr_qmp_parse_qom_string(ret, AGENT_PORT, "name", &value, &err), "%s: %s",
			  answers[i], err ? err->message : "?");
		cr_expect_str_eq(value, want[i]);
	}
}

Test(qmp_domain_parse, chardev_socket_from_qemu)
{
	g_autoptr(json_object) ret = json(CHARDEV_REPLY);
	g_autofree char *dir = test_dir();
	g_autofree char *agent = g_build_filename(dir, "agent.sock", NULL);
	g_autofree char *qmp = g_build_filename(dir, "qmp.sock", NULL);
	g_autofree char *path = NULL;
	g_autofree char *qmp_path = NULL;
	g_autofree char *pty_path = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qmp_parse_chardev_socket(ret, "agentch", &path, &err), "%s",
		  err ? err->message : "?");
	cr_expect_str_eq(path, agent, "disconnected (no peer yet)");
	cr_assert(vr_qmp_parse_chardev_socket(ret, "compat_monitor0", &qmp_path, &err), "%s",
		  err ? err->message : "?");
	cr_expect_str_eq(qmp_path, qmp, "connected");
	cr_assert_not(vr_qmp_parse_chardev_socket(ret, "ptych", &pty_path, &err));
	assert_error(err, VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
		     "ptych;not a unix socket;pty:/dev/pts/0", "the pty");
}

/**
 * struct filename_case - a query-chardev filename (expanded) and the path
 * in it ("" when refused: then @code and @words).
 */
struct filename_case {
	char name[48];
	char filename[200];
	char path[160];
	int code;
	char words[96];
};

static const struct filename_case filenames[] = {
	{ "listening", "disconnected:unix:@DIR@/agent.sock,server=on", "@DIR@/agent.sock" },
	{ "connected", "unix:@DIR@/agent.sock,server=on", "@DIR@/agent.sock" },
	{ "comma in the path", "unix:@DIR@/a,server=on,b.sock,server=on",
	  "@DIR@/a,server=on,b.sock" },
	{ "107 bytes", "unix:/@A106@,server=on", "/@A106@" },
	{ "pty", "pty:/dev/pts/0", "", VR_QMP_DOMAIN_ERROR_AGENT_PORT,
	  "chardev c;not a unix socket;pty:" },
	{ "file", "file", "", VR_QMP_DOMAIN_ERROR_AGENT_PORT, "chardev c;not a unix socket" },
	{ "tcp", "disconnected:tcp:127.0.0.1:4444,server=on", "", VR_QMP_DOMAIN_ERROR_AGENT_PORT,
	  "not a unix socket;tcp:" },
	{ "QEMU connects", "disconnected:unix:@DIR@/srv.sock", "", VR_QMP_DOMAIN_ERROR_AGENT_PORT,
	  "chardev c;connects to;server=on" },
	{ "relative path", "unix:agent.sock,server=on", "", VR_QMP_DOMAIN_ERROR_AGENT_PORT,
	  "chardev c;relative;agent.sock" },
	{ "no path", "unix:,server=on", "", VR_QMP_DOMAIN_ERROR_AGENT_PORT, "relative" },
	{ "108 bytes", "unix:/@A107@,server=on", "", VR_QMP_DOMAIN_ERROR_INVALID,
	  "chardev c;108 bytes;longer than 107" },
	{ "control character", "unix:@DIR@/a\tb,server=on", "", VR_QMP_DOMAIN_ERROR_INVALID,
	  "chardev c;control character" },
	{ "not UTF-8", "unix:@DIR@/a\xff,server=on", "", VR_QMP_DOMAIN_ERROR_INVALID,
	  "chardev c;UTF-8" },
};

ParameterizedTestParameters(qmp_domain_parse, chardev_filename)
{
	return cr_make_param_array(struct filename_case, filenames, ARRAY_LEN(filenames));
}

ParameterizedTest(const struct filename_case *c, qmp_domain_parse, chardev_filename)
{
	g_autofree char *filename = expand(c->filename);
	g_autofree char *want = expand(c->path);
	g_autofree char *path = NULL;
	g_autoptr(GError) err = NULL;
	gboolean ok = vr_qmp_parse_chardev_filename("c", filename, &path, &err);

	if (*c->path) {
		cr_assert(ok, "%s: %s", c->name, err ? err->message : "?");
		cr_expect_str_eq(path, want, "%s", c->name);
		return;
	}
	cr_assert_not(ok, "%s: accepted as %s", c->name, path);
	assert_error(err, VR_QMP_DOMAIN_ERROR, c->code, c->words, c->name);
	cr_expect_null(strchr(err->message, '\t'), "%s: control characters must not pass", c->name);
}

/**
 * enum parser - which parser a bad answer goes to.
 */
enum parser {
	P_NAME,
	P_UUID,
	P_MEMORY,
	P_PORTS,
	P_QOM,
	P_CHARDEV,
};

/**
 * struct bad_case - a bad @answer (expanded) to the parser @parser, and the
 * error: @code and the words of its message.
 */
struct bad_case {
	char name[48];
	enum parser parser;
	char answer[300];
	int code;
	char words[120];
};

#define INVALID VR_QMP_DOMAIN_ERROR_INVALID

static const struct bad_case bad_answers[] = {
	{ "name not an object", P_NAME, "['probe-test']", INVALID, "query-name;not an object" },
	{ "name a number", P_NAME, "{'name': 7}", INVALID, "query-name;\"name\";a string;7" },
	{ "name null", P_NAME, "{'name': null}", INVALID, "\"name\";a string" },
	{ "name 257 bytes", P_NAME, "{'name': '@A257@'}", INVALID,
	  "\"name\";longer than 256 bytes;257" },
	{ "name control character", P_NAME, "{'name': 'a\\u0007b'}", INVALID,
	  "\"name\";control character" },
	{ "name NUL", P_NAME, "{'name': 'a\\u0000b'}", INVALID, "\"name\";NUL" },
	{ "name not UTF-8", P_NAME, "{'name': 'a\xff'}", INVALID, "\"name\";UTF-8" },
	{ "uuid missing", P_UUID, "{}", INVALID, "query-uuid;no \"UUID\"" },
	{ "uuid null", P_UUID, "{'UUID': null}", INVALID, "\"UUID\";a string;null" },
	{ "uuid a number", P_UUID, "{'UUID': 1}", INVALID, "query-uuid;\"UUID\";a string" },
	{ "uuid without dashes", P_UUID, "{'UUID': '6f1c2e5a3b4d4e8f9a0b1c2d3e4f5a6b'}", INVALID,
	  "\"UUID\";8-4-4-4-12;6f1c2e5a3b4d4e8f9a0b1c2d3e4f5a6b" },
	{ "uuid not hex", P_UUID, "{'UUID': '6f1c2e5a-3b4d-4e8f-9a0b-1c2d3e4f5a6g'}", INVALID,
	  "\"UUID\";8-4-4-4-12" },
	{ "uuid too long", P_UUID, "{'UUID': '6f1c2e5a-3b4d-4e8f-9a0b-1c2d3e4f5a6b0'}", INVALID,
	  "\"UUID\";8-4-4-4-12" },
	{ "uuid 300 bytes", P_UUID, "{'UUID': '@A300@'}", INVALID, "\"UUID\";longer than" },
	{ "memory not an object", P_MEMORY, "268435456", INVALID,
	  "query-memory-size-summary;not an object" },
	{ "memory no base", P_MEMORY, "{'plugged-memory': 0}", INVALID,
	  "query-memory-size-summary;no \"base-memory\"" },
	{ "memory base a string", P_MEMORY, "{'base-memory': '268435456'}", INVALID,
	  "\"base-memory\";an integer" },
	{ "memory base a float", P_MEMORY, "{'base-memory': 2.5}", INVALID,
	  "\"base-memory\";an integer" },
	{ "memory base zero", P_MEMORY, "{'base-memory': 0}", INVALID, "\"base-memory\";positive" },
	{ "memory base null", P_MEMORY, "{'base-memory': null}", INVALID,
	  "\"base-memory\";an integer;null" },
	{ "memory plugged null", P_MEMORY, "{'base-memory': 1, 'plugged-memory': null}", INVALID,
	  "\"plugged-memory\";an integer" },
	{ "memory base negative", P_MEMORY, "{'base-memory': -4096}", INVALID,
	  "\"base-memory\";positive;-4096" },
	{ "memory plugged negative", P_MEMORY, "{'base-memory': 1, 'plugged-memory': -1}", INVALID,
	  "\"plugged-memory\";non-negative" },
	{ "ports not an array", P_PORTS, "{'name': 'type'}", INVALID,
	  "qom-list of /machine/peripheral;not an array" },
	{ "ports entry not an object", P_PORTS, "[{'name': 'type', 'type': 'string'}, 'port1']",
	  INVALID, "qom-list of /machine/peripheral;[1];an object" },
	{ "ports no name", P_PORTS, "[{'type': 'child<virtserialport>'}]", INVALID,
	  "[0].name;missing" },
	{ "ports no type", P_PORTS, "[{'name': 'port1'}]", INVALID, "[0].type;missing" },
	{ "ports type a number", P_PORTS, "[{'name': 'port1', 'type': 3}]", INVALID,
	  "[0].type;a string" },
	{ "ports type null", P_PORTS, "[{'name': 'port1', 'type': null}]", INVALID,
	  "[0].type;a string;null" },
	{ "ports name a number", P_PORTS, "[{'name': 1, 'type': 'child<virtserialport>'}]", INVALID,
	  "[0].name;a string" },
	{ "ports name with /", P_PORTS, "[{'name': '../x', 'type': 'child<virtserialport>'}]",
	  INVALID, "[0].name;'/';../x" },
	{ "ports name empty", P_PORTS, "[{'name': '', 'type': 'child<virtserialport>'}]", INVALID,
	  "[0].name;empty" },
	{ "ports name control character", P_PORTS,
	  "[{'name': 'p\\n1', 'type': 'child<virtserialport>'}]", INVALID,
	  "[0].name;control character" },
	{ "ports name 257 bytes", P_PORTS,
	  "[{'name': 'type', 'type': 'string'}, {'name': '@A257@', 'type': "
	  "'child<virtserialport>'}]",
	  INVALID, "[1].name;longer than 256" },
	{ "qom a number", P_QOM, "7", INVALID,
	  "qom-get of /machine/peripheral-anon/device[1] property name;a string" },
	{ "qom null", P_QOM, "null", INVALID, "property name;a string;null" },
	{ "qom an object", P_QOM, "{'value': 'agentch'}", INVALID, "property name;a string" },
	{ "qom 257 bytes", P_QOM, "'@A257@'", INVALID, "property name;longer than 256" },
	{ "qom control character", P_QOM, "'agent\\u001bch'", INVALID,
	  "property name;control character" },
	{ "qom NUL", P_QOM, "'agent\\u0000ch'", INVALID, "property name;NUL" },
	{ "chardevs not an array", P_CHARDEV, "{'label': 'agentch'}", INVALID,
	  "query-chardev;not an array" },
	{ "chardev entry not an object", P_CHARDEV, "['agentch']", INVALID,
	  "query-chardev;[0];an object" },
	{ "chardev no label", P_CHARDEV, "[{'filename': 'unix:@DIR@/agent.sock,server=on'}]",
	  INVALID, "query-chardev;[0].label;missing" },
	{ "chardev no filename", P_CHARDEV, "[{'label': 'agentch'}]", INVALID,
	  "[0].filename;missing" },
	{ "chardev label a number", P_CHARDEV, "[{'label': 1, 'filename': 'file'}]", INVALID,
	  "[0].label;a string" },
	{ "chardev filename a number", P_CHARDEV, "[{'label': 'other', 'filename': 1}]", INVALID,
	  "[0].filename;a string" },
	{ "chardev filename null", P_CHARDEV, "[{'label': 'agentch', 'filename': null}]", INVALID,
	  "[0].filename;a string;null" },
	{ "chardev frontend-open null", P_CHARDEV,
	  "[{'label': 'other', 'filename': 'file', 'frontend-open': null}]", INVALID,
	  "[0].frontend-open;a boolean" },
	{ "chardev label empty", P_CHARDEV, "[{'label': '', 'filename': 'file'}]", INVALID,
	  "[0].label;empty" },
	{ "chardev filename 4097 bytes", P_CHARDEV, "[{'label': 'other', 'filename': '@A4097@'}]",
	  INVALID, "[0].filename;longer than 4096" },
	{ "chardev frontend-open a string", P_CHARDEV,
	  "[{'label': 'other', 'filename': 'file', 'frontend-open': 'yes'}]", INVALID,
	  "[0].frontend-open;a boolean" },
	{ "chardev twice", P_CHARDEV,
	  "[{'label': 'agentch', 'filename': 'unix:@DIR@/a.sock,server=on'}, {'label': "
	  "'agentch', 'filename': 'unix:@DIR@/b.sock,server=on'}]",
	  INVALID, "query-chardev;agentch;twice" },
	{ "chardev missing", P_CHARDEV, "[{'label': 'other', 'filename': 'file'}]",
	  VR_QMP_DOMAIN_ERROR_AGENT_PORT, "chardev agentch;not in;query-chardev" },
	{ "chardev a pty", P_CHARDEV, "[{'label': 'agentch', 'filename': 'pty:/dev/pts/3'}]",
	  VR_QMP_DOMAIN_ERROR_AGENT_PORT, "chardev agentch;not a unix socket" },
};

ParameterizedTestParameters(qmp_domain_parse, bad_answer)
{
	return cr_make_param_array(struct bad_case, bad_answers, ARRAY_LEN(bad_answers));
}

ParameterizedTest(const struct bad_case *c, qmp_domain_parse, bad_answer)
{
	g_autoptr(json_object) ret = json(c->answer);
	g_autoptr(GPtrArray) ports = NULL;
	g_autoptr(GError) err = NULL;
	g_autofree char *text = NULL;
	uint64_t bytes = 0;
	gboolean ok = FALSE;

	switch (c->parser) {
	case P_NAME:
		ok = vr_qmp_parse_name(ret, &text, &err);
		break;
	case P_UUID:
		ok = vr_qmp_parse_uuid(ret, &text, &err);
		break;
	case P_MEMORY:
		ok = vr_qmp_parse_base_memory(ret, &bytes, &err);
		break;
	case P_PORTS:
		ok = vr_qmp_parse_serial_ports(ret, VR_QMP_DOMAIN_PERIPHERAL, &ports, &err);
		break;
	case P_QOM:
		ok = vr_qmp_parse_qom_string(ret, AGENT_PORT, "name", &text, &err);
		break;
	case P_CHARDEV:
		ok = vr_qmp_parse_chardev_socket(ret, "agentch", &text, &err);
		break;
	}
	cr_assert_not(ok, "%s: accepted", c->name);
	assert_error(err, VR_QMP_DOMAIN_ERROR, c->code, c->words, c->name);
	cr_expect(g_utf8_validate(err->message, -1, NULL), "%s: the message must be UTF-8",
		  c->name);
	for (const char *p = err->message; *p; p++)
		cr_expect(!g_ascii_iscntrl(*p), "%s: a control character in the message: %s",
			  c->name, err->message);
}

Test(qmp_domain_parse, lists_are_bounded)
{
	g_autoptr(json_object) children = json_object_new_array();
	g_autoptr(json_object) chardevs = json_object_new_array();
	g_autoptr(GPtrArray) ports = NULL;
	g_autofree char *path = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err2 = NULL;

	for (int i = 0; i <= VR_QMP_DOMAIN_MAX_QOM_CHILDREN; i++)
		json_object_array_add(children, json("{'name': 'type', 'type': 'string'}"));
	for (int i = 0; i <= VR_QMP_DOMAIN_MAX_CHARDEVS; i++)
		json_object_array_add(chardevs, json("{'label': 'other', 'filename': 'file'}"));
	cr_assert_not(vr_qmp_parse_serial_ports(children, VR_QMP_DOMAIN_PERIPHERAL, &ports, &err));
	assert_error(err, VR_QMP_DOMAIN_ERROR, INVALID, "qom-list;1025 entries;more than 1024",
		     "too many children");
	cr_assert_not(vr_qmp_parse_chardev_socket(chardevs, "agentch", &path, &err2));
	assert_error(err2, VR_QMP_DOMAIN_ERROR, INVALID,
		     "query-chardev;1025 entries;more than 1024", "too many chardevs");
}

/* ---- the UUID of a QEMU without one ---- */

TestSuite(qmp_domain_uuid, .description = "UUIDs derived from the socket path");

/* The derivation written out again, from the SHA-256 text. */
static char *expected_uuid(const char *canonical_path)
{
	g_autofree char *key = g_strconcat("vreclaim-qmp:", canonical_path, NULL);
	g_autofree char *hex = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
	char v = "0123456789abcdef"[(g_ascii_xdigit_value(hex[16]) & 0x3) | 0x8];

	hex[12] = '5';
	hex[16] = v;
	return g_strdup_printf("%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
			       hex + 20);
}

Test(qmp_domain_uuid, derived_from_the_canonical_path)
{
	g_autofree char *dir = test_dir();
	g_autofree char *a = g_build_filename(dir, "a.qmp", NULL);
	g_autofree char *b = g_build_filename(dir, "b.qmp", NULL);
	g_autofree char *a_again = g_strconcat(dir, "//sub/../a.qmp", NULL);
	g_autofree char *uuid_a = vr_qmp_domain_uuid_from_path(a);
	g_autofree char *uuid_a2 = vr_qmp_domain_uuid_from_path(a);
	g_autofree char *uuid_b = vr_qmp_domain_uuid_from_path(b);
	g_autofree char *uuid_a3 = vr_qmp_domain_uuid_from_path(a_again);
	g_autofree char *want = expected_uuid(a);

	cr_assert(g_uuid_string_is_valid(uuid_a), "not a UUID: %s", uuid_a);
	cr_expect_str_eq(uuid_a, want, "SHA-256 of \"vreclaim-qmp:<path>\", version 5, RFC 4122");
	cr_expect_eq(uuid_a[14], '5', "version 5: %s", uuid_a);
	cr_expect(strchr("89ab", uuid_a[19]), "RFC 4122 variant: %s", uuid_a);
	cr_expect_str_eq(uuid_a, uuid_a2, "one path, one UUID");
	cr_expect_str_eq(uuid_a, uuid_a3, "the path is made canonical first");
	cr_expect_str_neq(uuid_a, uuid_b, "two sockets, two UUIDs");
	cr_expect_str_neq(uuid_a, VR_QMP_DOMAIN_DEFAULT_UUID);
	for (const char *p = uuid_a; *p; p++)
		cr_expect(!g_ascii_isupper(*p), "lower case: %s", uuid_a);
}

/* ---- the probe, over a fake monitor ---- */

/**
 * struct fake_mon - canned replies.
 * @replies:	"command" or "command arg..." (qom-list: its path; qom-get:
 *		path and property) -> the reply's "return" as test JSON, or
 *		"!Class:desc" for a refusal.
 * @commands:	what was run, as the keys.
 */
struct fake_mon {
	GHashTable *replies;
	GPtrArray *commands;
};

static struct fake_mon fm;

static const char *arg_string(json_object *args, const char *name)
{
	json_object *v = NULL;

	cr_assert(args && json_object_object_get_ex(args, name, &v) &&
			  json_object_is_type(v, json_type_string),
		  "a command without a string \"%s\": %s", name,
		  args ? json_object_to_json_string(args) : "no arguments");
	return json_object_get_string(v);
}

static gboolean fake_execute(void *priv, const char *command, json_object *args, guint timeout_ms,
			     json_object **ret, GError **error)
{
	struct fake_mon *f = priv;
	g_autofree char *key = NULL;
	const char *reply;

	(void)timeout_ms;
	if (!strcmp(command, "qom-list"))
		key = g_strdup_printf("qom-list %s", arg_string(args, "path"));
	else if (!strcmp(command, "qom-get"))
		key = g_strdup_printf("qom-get %s %s", arg_string(args, "path"),
				      arg_string(args, "property"));
	else
		key = g_strdup(command);
	g_ptr_array_add(f->commands, g_strdup(key));
	reply = g_hash_table_lookup(f->replies, key);
	cr_assert_not_null(reply, "the probe ran %s, which the test did not expect", key);
	if (reply[0] == '!') {
		/* A refusal, through the client's own formatting of one. */
		g_auto(GStrv) parts = g_strsplit(reply + 1, ":", 2);
		g_autoptr(json_object) msg = json_object_new_object();
		json_object *e = json_object_new_object();

		json_object_object_add(e, "class", json_object_new_string(parts[0]));
		json_object_object_add(e, "desc", json_object_new_string(parts[1]));
		json_object_object_add(msg, "error", e);
		cr_assert_not(vr_qmp_reply_result(msg, command, NULL, error));
		return FALSE;
	}
	if (ret)
		*ret = json(reply);
	return TRUE;
}

static const struct vr_qemu_monitor_ops fake_ops = {
	.name = "fake",
	.execute = fake_execute,
};

static void reply(const char *key, const char *answer)
{
	g_hash_table_replace(fm.replies, g_strdup(key), g_strdup(answer));
}

/* The QEMU with everything, as captured. */
static void full_qemu(void)
{
	reply("query-name", NAME_REPLY);
	reply("query-uuid", UUID_REPLY);
	reply("query-memory-size-summary", SIZES_REPLY);
	reply("query-balloon", BALLOON_REPLY);
	reply("qom-list /machine/peripheral", PERIPHERAL_REPLY);
	reply("qom-list /machine/peripheral-anon", PERIPHERAL_ANON_REPLY);
	reply("qom-get /machine/peripheral/port1 name", "'org.other.0'");
	reply("qom-get " AGENT_PORT " name", "'org.vreclaim.agent.0'");
	reply("qom-get /machine/peripheral-anon/device[3] name", "'ptyport'");
	reply("qom-get " AGENT_PORT " chardev", "'agentch'");
	reply("query-chardev", CHARDEV_REPLY);
}

/* The QEMU without -name, -uuid or devices, as captured. */
static void bare_qemu(void)
{
	reply("query-name", BARE_NAME_REPLY);
	reply("query-uuid", BARE_UUID_REPLY);
	reply("query-memory-size-summary", BARE_SIZES_REPLY);
	reply("query-balloon", BARE_BALLOON_REFUSAL);
	reply("qom-list /machine/peripheral", EMPTY_CONTAINER_REPLY);
	reply("qom-list /machine/peripheral-anon", EMPTY_CONTAINER_REPLY);
}

static void fake_setup(void)
{
	fm.replies = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	fm.commands = g_ptr_array_new_with_free_func(g_free);
}

static void fake_teardown(void)
{
	g_hash_table_unref(fm.replies);
	g_ptr_array_unref(fm.commands);
}

static struct vr_qemu_monitor *fake_monitor(void)
{
	return vr_qemu_monitor_new(&fake_ops, &fm, "fake-qemu");
}

/* The socket the fake QEMU is probed at: owned. */
static char *qmp_socket(const char *basename)
{
	g_autofree char *dir = test_dir();

	return g_build_filename(dir, basename, NULL);
}

static gboolean ran(const char *key)
{
	for (guint i = 0; i < fm.commands->len; i++)
		if (!strcmp(g_ptr_array_index(fm.commands, i), key))
			return TRUE;
	return FALSE;
}

#define QEMU_PID 4242

/* Probe the fake QEMU, expecting a failure with @domain, @code, @words. */
static void expect_probe_error(GQuark domain, int code, const char *words, const char *what)
{
	g_autoptr(vr_qemu_monitor) mon = fake_monitor();
	g_autofree char *sock = qmp_socket("qmp.sock");
	struct vr_qmp_domain_info info = { .pid = 1 };
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_qmp_domain_probe(mon, sock, QEMU_PID, &info, &err), "%s: accepted", what);
	assert_error(err, domain, code, words, what);
	cr_expect(g_str_has_prefix(err->message, "probing the QEMU at ") &&
			  strstr(err->message, sock),
		  "%s: the message should name the socket: %s", what, err->message);
	cr_expect(info.pid == 1 && !info.name && !info.uuid && !info.agent_socket_path,
		  "%s: @out must be left alone on failure", what);
}

TestSuite(qmp_domain_probe, .init = fake_setup, .fini = fake_teardown);

Test(qmp_domain_probe, qemu_with_everything)
{
	g_autoptr(vr_qemu_monitor) mon = fake_monitor();
	g_autofree char *sock = qmp_socket("qmp.sock");
	g_autofree char *dir = test_dir();
	g_autofree char *agent = g_build_filename(dir, "agent.sock", NULL);
	g_auto(vr_qmp_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	full_qemu();
	cr_assert(vr_qmp_domain_probe(mon, sock, QEMU_PID, &info, &err), "%s",
		  err ? err->message : "?");
	cr_expect_str_eq(info.name, "probe-test");
	cr_expect_str_eq(info.uuid, "6f1c2e5a-3b4d-4e8f-9a0b-1c2d3e4f5a6b");
	cr_expect_eq(info.pid, QEMU_PID);
	cr_expect_eq(info.memory_bytes, 256 * MIB);
	cr_expect_str_eq(info.agent_socket_path, agent);
	cr_expect(info.has_balloon);
	cr_expect_eq(fm.commands->len, 11,
		     "4 queries, 2 qom-list, 3 names, 1 chardev, query-chardev: got %u",
		     fm.commands->len);
	cr_expect_not(ran("qom-get /machine/peripheral/port1 chardev"),
		      "only the agent's port's chardev is asked for");
}

Test(qmp_domain_probe, bare_qemu)
{
	g_autoptr(vr_qemu_monitor) mon = fake_monitor();
	g_autofree char *sock = qmp_socket("guest7.qmp");
	g_autofree char *derived = vr_qmp_domain_uuid_from_path(sock);
	g_auto(vr_qmp_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	bare_qemu();
	cr_assert(vr_qmp_domain_probe(mon, sock, QEMU_PID, &info, &err), "%s",
		  err ? err->message : "?");
	cr_expect_str_eq(info.name, "guest7.qmp", "no -name: the socket's basename");
	cr_expect_str_eq(info.uuid, derived, "no -uuid: derived from the socket");
	cr_expect_eq(info.memory_bytes, 128 * MIB);
	cr_expect_null(info.agent_socket_path);
	cr_expect_not(info.has_balloon, "DeviceNotActive: no balloon");
	cr_expect_not(ran("query-chardev"), "no agent port, no query-chardev");
	vr_qmp_domain_info_clear(&info);
	cr_expect_null(info.name, "cleared");
	vr_qmp_domain_info_clear(&info);
}

Test(qmp_domain_probe, ports_without_the_agent)
{
	g_autoptr(vr_qemu_monitor) mon = fake_monitor();
	g_autofree char *sock = qmp_socket("qmp.sock");
	g_auto(vr_qmp_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	full_qemu();
	reply("qom-get " AGENT_PORT " name", "''");
	cr_assert(vr_qmp_domain_probe(mon, sock, QEMU_PID, &info, &err), "%s",
		  err ? err->message : "?");
	cr_expect_null(info.agent_socket_path, "an unnamed port is not the agent's");
	cr_expect_not(ran("query-chardev"));
}

Test(qmp_domain_probe, two_agent_ports)
{
	full_qemu();
	reply("qom-get /machine/peripheral/port1 name", "'org.vreclaim.agent.0'");
	expect_probe_error(VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			   "two virtio-serial ports;org.vreclaim.agent.0;/machine/peripheral/"
			   "port1;" AGENT_PORT,
			   "two agent ports");
}

Test(qmp_domain_probe, agent_port_on_a_pty)
{
	full_qemu();
	reply("qom-get " AGENT_PORT " chardev", "'ptych'");
	expect_probe_error(VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			   "the agent's port " AGENT_PORT ";chardev ptych;not a unix socket",
			   "agent on a pty");
}

Test(qmp_domain_probe, agent_port_without_chardev)
{
	full_qemu();
	reply("qom-get " AGENT_PORT " chardev", "''");
	expect_probe_error(VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			   AGENT_PORT ";no chardev", "agent without chardev");
}

Test(qmp_domain_probe, agent_chardev_missing)
{
	full_qemu();
	reply("qom-get " AGENT_PORT " chardev", "'gone'");
	expect_probe_error(VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
			   "chardev gone;not in", "agent chardev not listed");
}

/**
 * struct refusal_case - the fake QEMU refuses the command @key with
 * @refusal ("!Class:desc"); the probe fails with VR_QMP_ERROR_COMMAND.
 */
struct refusal_case {
	char key[64];
	char refusal[96];
	char words[120];
};

static const struct refusal_case refusals[] = {
	{ "query-name", "!CommandNotFound:The command query-name has not been found",
	  "QEMU refused query-name;CommandNotFound" },
	{ "query-uuid", "!GenericError:no UUID today", "QEMU refused query-uuid;no UUID today" },
	{ "query-memory-size-summary", "!GenericError:nope",
	  "QEMU refused query-memory-size-summary" },
	{ "query-balloon", "!GenericError:the balloon is stuck",
	  "QEMU refused query-balloon;GenericError;stuck" },
	{ "qom-list /machine/peripheral-anon",
	  "!DeviceNotFound:Device '/machine/peripheral-anon' not found",
	  "QEMU refused qom-list;DeviceNotFound" },
	{ "qom-get " AGENT_PORT " name", "!GenericError:Property 'virtserialport.name' not found",
	  "QEMU refused qom-get;virtserialport.name" },
	{ "query-chardev", "!CommandNotFound:The command query-chardev has not been found",
	  "the agent's port " AGENT_PORT ";QEMU refused query-chardev" },
};

ParameterizedTestParameters(qmp_domain_probe, qemu_refuses)
{
	return cr_make_param_array(struct refusal_case, refusals, ARRAY_LEN(refusals));
}

ParameterizedTest(const struct refusal_case *c, qmp_domain_probe, qemu_refuses)
{
	full_qemu();
	reply(c->key, c->refusal);
	expect_probe_error(VR_QMP_ERROR, VR_QMP_ERROR_COMMAND, c->words, c->key);
}

Test(qmp_domain_probe, bad_reply_is_named)
{
	full_qemu();
	reply("query-memory-size-summary", "{'base-memory': 'lots'}");
	expect_probe_error(VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_INVALID,
			   "query-memory-size-summary;\"base-memory\";an integer", "bad sizes");
}

Test(qmp_domain_probe, balloon_reply_is_checked)
{
	full_qemu();
	reply("query-balloon", "{'actual': -1}");
	expect_probe_error(VR_QEMU_COMMANDS_ERROR, VR_QEMU_COMMANDS_ERROR_INVALID,
			   "query-balloon;actual;negative", "bad balloon");
}

/* ---- QEMU's claims against what the host knows ---- */

Test(qmp_domain_check, memory_within_the_mapping)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qmp_domain_check_memory(512ULL << 20, 3ULL << 30, &err));
	cr_assert(vr_qmp_domain_check_memory(1ULL << 30, 1ULL << 30, &err), "equal is fine");
	cr_assert_not(vr_qmp_domain_check_memory(1ULL << 40, 3ULL << 30, &err),
		      "1 TiB claimed by a process that maps 3 GiB");
	assert_error(err, VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_INVALID,
		     "1099511627776;3221225472;VmSize", "a claim beyond the mapping");
}

Test(qmp_domain_check, agent_socket_rules)
{
	const uid_t qemu = 64055;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qmp_domain_check_agent_socket("/run/vm1/agent.sock", "/run/vm1", TRUE, qemu,
						   qemu, &err));
	cr_assert(vr_qmp_domain_check_agent_socket("/run/vm1/ch/agent.sock", "/run/vm1", TRUE, qemu,
						   qemu, &err),
		  "below the folder is fine");
	cr_assert(vr_qmp_domain_check_agent_socket("/agent.sock", "/", TRUE, qemu, qemu, &err),
		  "a QMP socket in / allows the whole tree");
	cr_assert_not(vr_qmp_domain_check_agent_socket("/run/libvirt/libvirt-sock", "/run/vm1",
						       TRUE, qemu, qemu, &err));
	assert_error(err, VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_AGENT_PORT,
		     "libvirt-sock;not in the QMP socket's folder;/run/vm1", "another folder");
	g_clear_error(&err);
	cr_assert_not(vr_qmp_domain_check_agent_socket("/run/vm10/agent.sock", "/run/vm1", TRUE,
						       qemu, qemu, &err),
		      "a folder whose name only starts like the QMP socket's");
	g_clear_error(&err);
	cr_assert_not(vr_qmp_domain_check_agent_socket("/run/vm1", "/run/vm1", TRUE, qemu, qemu,
						       &err),
		      "the folder itself");
	g_clear_error(&err);
	cr_assert_not(vr_qmp_domain_check_agent_socket("/run/vm1/agent.sock", "/run/vm1", FALSE,
						       qemu, qemu, &err));
	assert_error(err, VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_AGENT_PORT, "not a socket",
		     "a regular file");
	g_clear_error(&err);
	cr_assert_not(vr_qmp_domain_check_agent_socket("/run/vm1/agent.sock", "/run/vm1", TRUE, 0,
						       qemu, &err));
	assert_error(err, VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_AGENT_PORT, "uid 0;uid 64055",
		     "a socket of root's, QEMU running as another user");
}

Test(qmp_domain_probe, unknown_pid)
{
	g_autoptr(vr_qemu_monitor) mon = fake_monitor();
	g_autofree char *sock = qmp_socket("qmp.sock");
	g_auto(vr_qmp_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	full_qemu();
	cr_assert_not(vr_qmp_domain_probe(mon, sock, 0, &info, &err));
	assert_error(err, VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_ARGUMENT,
		     "probing the QEMU at;QEMU process is unknown", "pid 0");
	cr_expect_eq(fm.commands->len, 0, "nothing should reach QEMU");
}

Test(qmp_domain_probe, nameless_qemu_on_an_unnameable_socket)
{
	g_autoptr(vr_qemu_monitor) mon = fake_monitor();
	g_autofree char *sock = qmp_socket("q\x01.sock");
	g_auto(vr_qmp_domain_info) info = { 0 };
	g_autoptr(GError) err = NULL;

	bare_qemu();
	cr_assert_not(vr_qmp_domain_probe(mon, sock, QEMU_PID, &info, &err));
	assert_error(err, VR_QMP_DOMAIN_ERROR, VR_QMP_DOMAIN_ERROR_ARGUMENT,
		     "no name;basename;q?.sock", "control character in the basename");
}
