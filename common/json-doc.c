/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict JSON documents: json-c, and a scanner for what it lets through.
 */
#include "json-doc.h"

#include <limits.h>
#include <stdarg.h>
#include <string.h>

char *vr_json_path_member(const char *parent, const char *name)
{
	return *parent ? g_strdup_printf("%s.%s", parent, name) : g_strdup(name);
}

char *vr_json_path_index(const char *parent, guint i)
{
	return g_strdup_printf("%s[%u]", parent, i);
}

gboolean vr_json_set_error(GError **error, GQuark domain, int code, const char *path,
			   const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(error, domain, code, "%s: %s", *path ? path : VR_JSON_ROOT_NAME, msg);
	return FALSE;
}

const char *vr_json_describe(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_double:
	case json_type_int:
		return json_object_to_json_string(v); /* json-c keeps the literal */
	case json_type_string:
		return "a string";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	}
	return "a value";
}

/**
 * syntax_error() - set @error to @errs' syntax error at byte @offset of
 * @text, as "line L, column C (offset O): <what>" (line and column from 1,
 * the column in bytes).
 */
static gboolean syntax_error(GError **error, const struct vr_json_errors *errs, const char *text,
			     size_t offset, const char *what)
{
	guint line = 1;
	size_t line_start = 0;

	for (size_t i = 0; i < offset; i++) {
		if (text[i] == '\n') {
			line++;
			line_start = i + 1;
		}
	}
	g_set_error(error, errs->domain, errs->syntax_code, "line %u, column %zu (offset %zu): %s",
		    line, offset - line_start + 1, offset, what);
	return FALSE;
}

/**
 * tokenize() - parse @len bytes of @text with json-c's strict tokener.
 * @out: the document's root (NULL for a document that is just `null`).
 */
static gboolean tokenize(const char *text, size_t len, const struct vr_json_errors *errs,
			 struct json_object **out, GError **error)
{
	g_autoptr(json_tokener) tok = NULL;
	g_autoptr(json_object) root = NULL;
	enum json_tokener_error jerr;
	size_t end;

	if (len > INT_MAX)
		return syntax_error(error, errs, text, 0, "the document is too large");
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue) {
		/* A NUL ends the input: a number or word at the top level only
		 * ends there; anything else still open is cut short. */
		root = json_tokener_parse_ex(tok, "", 1);
		if (json_tokener_get_error(tok) != json_tokener_success)
			return syntax_error(error, errs, text, len,
					    "unexpected end of the document");
		end = len;
		jerr = json_tokener_success;
	}
	if (jerr != json_tokener_success)
		return syntax_error(error, errs, text, end, json_tokener_error_desc(jerr));
	for (; end < len; end++)
		if (!g_ascii_isspace(text[end]))
			return syntax_error(error, errs, text, end,
					    "unexpected data after the document");
	*out = g_steal_pointer(&root);
	return TRUE;
}

/**
 * struct scan_path - where the scanner is in the document: a member of its
 * parent (@name) or an element (@index); NULL is the root. Rendered as a
 * JSON path (vr_json_path_member(), vr_json_path_index()) only when a
 * message or a big integer needs it: a picture of 512 regions has 2000
 * members, and printing each one's path cost more than parsing them.
 * @parent:	the enclosing value's, NULL for a child of the root.
 * @name:	the member's name, NULL for an array element.
 * @index:	the element's index.
 */
struct scan_path {
	const struct scan_path *parent;
	const char *name;
	guint index;
};

/* @p as a JSON path string (owned); "" for the root. */
static char *scan_path_render(const struct scan_path *p)
{
	g_autofree char *parent = NULL;

	if (!p)
		return g_strdup("");
	parent = scan_path_render(p->parent);
	return p->name ? vr_json_path_member(parent, p->name) :
			 vr_json_path_index(parent, p->index);
}

/**
 * struct scanner - a second walk over a document json-c accepted, for what
 * json-c does not report: integers beyond 64 bits (it saturates them),
 * members given twice (it keeps the last) and single-quoted strings (it
 * accepts them even in strict mode).
 * @errs:	how to report problems.
 * @text, @len:	the document.
 * @pos:	the next byte.
 * @big_integers: JSON path -> literal, for integers out of 64-bit range
 *		(NULL: not recorded).
 */
struct scanner {
	const struct vr_json_errors *errs;
	const char *text;
	size_t len;
	size_t pos;
	GHashTable *big_integers;
};

static gboolean scan_value(struct scanner *sc, const struct scan_path *path, GError **error);

static void scan_space(struct scanner *sc)
{
	while (sc->pos < sc->len && g_ascii_isspace(sc->text[sc->pos]))
		sc->pos++;
}

/* The string at a '"' ends where? @pos moves past it; the closing quote's
 * offset is returned. */
static size_t scan_string_end(struct scanner *sc)
{
	size_t end;

	sc->pos++;
	while (sc->pos < sc->len && sc->text[sc->pos] != '"')
		sc->pos += sc->text[sc->pos] == '\\' ? 2 : 1;
	end = MIN(sc->pos, sc->len);
	sc->pos = MIN(end + 1, sc->len);
	return end;
}

/**
 * scan_string() - at a '"': the string, decoded as json-c decodes member
 * names (escapes resolved, cut at a NUL); @pos moves past it.
 */
static char *scan_string(struct scanner *sc)
{
	size_t start = sc->pos, end = scan_string_end(sc);
	g_autoptr(json_tokener) tok = NULL;
	g_autoptr(json_object) str = NULL;

	if (!memchr(sc->text + start, '\\', end - start))
		return g_strndup(sc->text + start + 1, end - start - 1);
	tok = json_tokener_new();
	str = json_tokener_parse_ex(tok, sc->text + start, (int)(sc->pos - start));
	return g_strdup(json_object_is_type(str, json_type_string) ? json_object_get_string(str) :
								     "");
}

/* Do the @n decimal @digits exceed the decimal @limit? */
static gboolean digits_exceed(const char *digits, size_t n, const char *limit)
{
	size_t nl = strlen(limit);

	while (n > 1 && *digits == '0') {
		digits++;
		n--;
	}
	return n != nl ? n > nl : strncmp(digits, limit, n) > 0;
}

/* A number or a bare word; records integers beyond 64 bits. */
static void scan_literal(struct scanner *sc, const struct scan_path *path)
{
	const char *s = sc->text + sc->pos;
	gboolean negative = *s == '-';
	size_t n = 0, nd;

	while (sc->pos + n < sc->len && (g_ascii_isalnum(s[n]) || strchr("+-.", s[n])))
		n++;
	sc->pos += n ? n : 1;
	for (nd = negative; nd < n && g_ascii_isdigit(s[nd]); nd++)
		;
	if (nd != n || nd == (size_t)negative)
		return; /* not an integer */
	if (digits_exceed(s + negative, n - negative,
			  negative ? "9223372036854775808" : "18446744073709551615"))
		if (sc->big_integers)
			g_hash_table_insert(sc->big_integers, scan_path_render(path),
					    g_strndup(s, n));
}

/* Objects with up to this many members find a name given twice by
 * comparing with each; larger ones (hostile, mostly) use a hash table. */
#define SCAN_SMALL_OBJECT 16

/**
 * struct member_names - the names an object gave so far.
 * @small, @nr_small: the first SCAN_SMALL_OBJECT (owned).
 * @all:	every name once there are more (owns them), else NULL.
 */
struct member_names {
	char *small[SCAN_SMALL_OBJECT];
	guint nr_small;
	GHashTable *all;
};

static void member_names_clear(struct member_names *m)
{
	for (guint i = 0; i < m->nr_small; i++)
		g_free(m->small[i]);
	if (m->all)
		g_hash_table_unref(m->all);
}

/* Whether @name was given already. */
static gboolean member_names_contain(const struct member_names *m, const char *name)
{
	if (m->all)
		return g_hash_table_contains(m->all, name);
	for (guint i = 0; i < m->nr_small; i++)
		if (!strcmp(m->small[i], name))
			return TRUE;
	return FALSE;
}

/* Add @name (owned), which it does not hold yet. */
static void member_names_add(struct member_names *m, char *name)
{
	if (!m->all && m->nr_small < SCAN_SMALL_OBJECT) {
		m->small[m->nr_small++] = name;
		return;
	}
	if (!m->all) {
		m->all = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		for (guint i = 0; i < m->nr_small; i++)
			g_hash_table_add(m->all, m->small[i]);
		m->nr_small = 0;
	}
	g_hash_table_add(m->all, name);
}

static gboolean scan_object_members(struct scanner *sc, const struct scan_path *path,
				    struct member_names *names, GError **error)
{
	sc->pos++;
	for (;;) {
		struct scan_path mpath = { .parent = path };
		char *name;

		scan_space(sc);
		if (sc->pos >= sc->len)
			return TRUE;
		switch (sc->text[sc->pos]) {
		case '}':
			sc->pos++;
			return TRUE;
		case '\'':
			return syntax_error(error, sc->errs, sc->text, sc->pos,
					    "strings must be in double quotes");
		case '"':
			break;
		default: /* ',' */
			sc->pos++;
			continue;
		}
		name = scan_string(sc);
		if (member_names_contain(names, name)) {
			g_autofree char *twice = name;
			g_autofree char *where = NULL;

			mpath.name = twice;
			where = scan_path_render(&mpath);
			return vr_json_set_error(error, sc->errs->domain, sc->errs->invalid_code,
						 where, "member given twice");
		}
		member_names_add(names, name);
		mpath.name = name;
		scan_space(sc);
		if (sc->pos < sc->len && sc->text[sc->pos] == ':')
			sc->pos++;
		if (!scan_value(sc, &mpath, error))
			return FALSE;
	}
}

static gboolean scan_object(struct scanner *sc, const struct scan_path *path, GError **error)
{
	struct member_names names = { 0 };
	gboolean ok = scan_object_members(sc, path, &names, error);

	member_names_clear(&names);
	return ok;
}

static gboolean scan_array(struct scanner *sc, const struct scan_path *path, GError **error)
{
	guint i = 0;

	sc->pos++;
	for (;;) {
		struct scan_path ipath = { .parent = path };

		scan_space(sc);
		if (sc->pos >= sc->len)
			return TRUE;
		if (sc->text[sc->pos] == ']') {
			sc->pos++;
			return TRUE;
		}
		if (sc->text[sc->pos] == ',') {
			sc->pos++;
			i++;
			continue;
		}
		ipath.index = i;
		if (!scan_value(sc, &ipath, error))
			return FALSE;
	}
}

static gboolean scan_value(struct scanner *sc, const struct scan_path *path, GError **error)
{
	scan_space(sc);
	if (sc->pos >= sc->len)
		return TRUE;
	switch (sc->text[sc->pos]) {
	case '{':
		return scan_object(sc, path, error);
	case '[':
		return scan_array(sc, path, error);
	case '"':
		scan_string_end(sc);
		return TRUE;
	case '\'':
		return syntax_error(error, sc->errs, sc->text, sc->pos,
				    "strings must be in double quotes");
	default:
		scan_literal(sc, path);
		return TRUE;
	}
}

gboolean vr_json_doc_parse(const char *text, gssize len, const struct vr_json_errors *errs,
			   struct json_object **root, GHashTable *big_integers, GError **error)
{
	g_autoptr(json_object) doc = NULL;
	struct scanner sc;
	size_t n;

	text = text ? text : "";
	n = len < 0 ? strlen(text) : (size_t)len;
	if (!tokenize(text, n, errs, &doc, error))
		return FALSE;
	sc = (struct scanner){ .errs = errs, .text = text, .len = n, .big_integers = big_integers };
	if (!scan_value(&sc, NULL, error))
		return FALSE;
	*root = g_steal_pointer(&doc);
	return TRUE;
}
