/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of common/text-escape.c: text from guests and libvirt's XML
 * made safe for terminals and logs. A table of inputs (control characters,
 * invalid UTF-8, bidi overrides, and plain text in several scripts that must
 * come back unchanged), and the log writer against a capturing writer.
 *
 * Parameter structs hold no pointers.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <string.h>

#include "text-escape.h"

struct escape_case {
	char name[40];
	char in[64];
	int len; /* bytes of @in, -1: up to its NUL */
	char out[96];
};

static struct escape_case escape_cases[] = {
	{ "plain ASCII", "web1", -1, "web1" },
	{ "spaces, quotes, backslash", "db \"main\" \\2 it's", -1, "db \"main\" \\2 it's" },
	{ "UTF-8 text", "h\xc3\xb4te-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x90\xa7", -1,
	  "h\xc3\xb4te-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x90\xa7" },
	{ "empty", "", -1, "" },
	{ "a forged log line", "web1\n2026-01-01 vreclaimd: all fine", -1,
	  "web1\\n2026-01-01 vreclaimd: all fine" },
	{ "carriage return and tab", "a\rb\tc", -1, "a\\rb\\tc" },
	{ "an escape sequence", "\x1b]0;owned\x07\x1b[2J", -1, "\\x1b]0;owned\\x07\\x1b[2J" },
	{ "DEL", "a\x7f", -1, "a\\x7f" },
	{ "a NUL inside", "a\0b", 3, "a\\x00b" },
	{ "a C1 control (CSI)",
	  "a\xc2\x9b"
	  "31m",
	  -1, "a\\u{009B}31m" },
	{ "a right-to-left override", "evil\xe2\x80\xaegnp.exe", -1, "evil\\u{202E}gnp.exe" },
	{ "a zero-width joiner",
	  "a\xe2\x80\x8d"
	  "b",
	  -1, "a\\u{200D}b" },
	{ "a line separator",
	  "a\xe2\x80\xa8"
	  "b",
	  -1, "a\\u{2028}b" },
	{ "invalid UTF-8",
	  "a\xff\xfe"
	  "b",
	  -1, "a\\xff\\xfeb" },
	{ "a truncated sequence", "a\xe6\x97", -1, "a\\xe6\\x97" },
	{ "an overlong slash", "\xc0\xaf", -1, "\\xc0\\xaf" },
};

ParameterizedTestParameters(escape, table)
{
	return cr_make_param_array(struct escape_case, escape_cases, G_N_ELEMENTS(escape_cases));
}

ParameterizedTest(struct escape_case *c, escape, table)
{
	g_autofree char *got = vr_text_escape(c->in, c->len);
	gboolean plain = !strcmp(c->in, c->out) && c->len < 0;

	cr_assert_str_eq(got, c->out, "%s: expected '%s', got '%s'", c->name, c->out, got);
	cr_assert(g_utf8_validate(got, -1, NULL), "%s: the result is not UTF-8", c->name);
	cr_assert_eq(vr_text_is_safe(c->in, c->len), plain, "%s: vr_text_is_safe() should say %s",
		     c->name, plain ? "safe" : "unsafe");
	cr_assert(vr_text_is_safe(got, -1), "%s: the result should be safe", c->name);
}

/* ---- the log writer ---- */

static char *captured;
static gsize captured_n_fields;

static GLogWriterOutput capture(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
				gpointer user_data)
{
	(void)level;
	cr_assert_str_eq(user_data, "next-data", "the next writer gets its own user data");
	captured_n_fields = n_fields;
	for (gsize i = 0; i < n_fields; i++) {
		if (!strcmp(fields[i].key, "MESSAGE")) {
			g_free(captured);
			captured = fields[i].length < 0 ?
					   g_strdup(fields[i].value) :
					   g_strndup(fields[i].value, (gsize)fields[i].length);
		}
	}
	return G_LOG_WRITER_HANDLED;
}

static void log_fini(void)
{
	g_clear_pointer(&captured, g_free);
}

TestSuite(log_writer, .fini = log_fini);

static void write_message(const char *message, gssize length)
{
	static char next_data[] = "next-data";
	struct vr_log_escape to = { .next = capture, .next_data = next_data };
	const GLogField fields[] = {
		{ "GLIB_DOMAIN", "vreclaimd", -1 },
		{ "PRIORITY", "4", -1 },
		{ "MESSAGE", message, length },
	};

	cr_assert_eq(vr_log_writer_escape(G_LOG_LEVEL_WARNING, fields, G_N_ELEMENTS(fields), &to),
		     G_LOG_WRITER_HANDLED);
	cr_assert_eq(captured_n_fields, G_N_ELEMENTS(fields), "every field is passed on");
}

Test(log_writer, escapes_the_message_and_passes_plain_ones_as_they_are)
{
	write_message("web1: agent says \x1b[31mhello\nforged line", -1);
	cr_assert_str_eq(captured, "web1: agent says \\x1b[31mhello\\nforged line");
	write_message("web1: paused by vreclaimctl", -1);
	cr_assert_str_eq(captured, "web1: paused by vreclaimctl");
	write_message("bin\0ary", 7);
	cr_assert_str_eq(captured, "bin\\x00ary", "a MESSAGE with a length is escaped whole");
}
