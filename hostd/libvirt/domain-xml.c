/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading libvirt's XML (see domain-xml.h and docs/domain-xml.md): the
 * vreclaim metadata element into a tuning (vr_domain_tuning_parse(), its
 * settings' table and values in domain-tuning.c) and what vreclaimd needs
 * from a live domain XML (vr_domain_xml_parse()).
 *
 * GMarkup does the XML syntax; namespaces (xmlns, xmlns:p) are resolved
 * here, as is what GMarkup lets through (a second root element, an
 * attribute given twice, DOCTYPE).
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include "libvirt/domain-tuning-private.h"

#include <string.h>

#define invalid(error, ...) vr_domain_xml_set_error(error, VR_DOMAIN_XML_ERROR_INVALID, __VA_ARGS__)

/* ---- XML namespaces (shared by both parsers) ---- */

/* The attributes an element may carry: more is not an honest document. */
#define MAX_ATTRIBUTES 32

/**
 * struct ns_decl - a namespace declaration in scope.
 * @prefix: "" for the default namespace (xmlns=).
 * @uri:    "" when xmlns="" undeclares the default namespace.
 * @depth:  the depth of the element that declared it.
 */
struct ns_decl {
	char *prefix;
	char *uri;
	guint depth;
};

static void ns_decl_free(struct ns_decl *d)
{
	g_free(d->prefix);
	g_free(d->uri);
	g_free(d);
}

/*
 * Checks the attributes of <@elem> (count, duplicates) and pushes its
 * namespace declarations onto @scope at @depth.
 */
static gboolean ns_push(GPtrArray *scope, guint depth, const char *elem, const char **names,
			const char **values, GError **error)
{
	for (guint i = 0; names[i]; i++) {
		const char *prefix = NULL;
		struct ns_decl *d;

		if (i >= MAX_ATTRIBUTES)
			return invalid(error, "<%s> has more than %d attributes", elem,
				       MAX_ATTRIBUTES);
		for (guint j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				return invalid(error, "<%s> has the attribute '%s' twice", elem,
					       names[i]);
		if (strcmp(names[i], "xmlns") == 0) {
			prefix = ""; /* xmlns="" undeclares the default: allowed */
		} else if (g_str_has_prefix(names[i], "xmlns:")) {
			prefix = names[i] + strlen("xmlns:");
			/* xmlns:p="" cannot undeclare a prefix in XML 1.0 */
			if (!*prefix || strchr(prefix, ':') || !*values[i])
				return invalid(error, "<%s>: invalid namespace declaration %s='%s'",
					       elem, names[i], values[i]);
		} else {
			continue;
		}
		d = g_new(struct ns_decl, 1);
		d->prefix = g_strdup(prefix);
		d->uri = g_strdup(values[i]);
		d->depth = depth;
		g_ptr_array_add(scope, d);
	}
	return TRUE;
}

/* Drops the declarations of the element at @depth. */
static void ns_pop(GPtrArray *scope, guint depth)
{
	while (scope->len &&
	       ((struct ns_decl *)g_ptr_array_index(scope, scope->len - 1))->depth == depth)
		g_ptr_array_remove_index(scope, scope->len - 1);
}

/*
 * Splits the qualified @qname into its local name and namespace URI ("" for
 * none). Return: FALSE with @error for an undeclared prefix or more than one
 * ':'.
 */
static gboolean ns_resolve(GPtrArray *scope, const char *qname, const char **local,
			   const char **uri, GError **error)
{
	const char *colon = strchr(qname, ':');
	g_autofree char *prefix = colon ? g_strndup(qname, (gsize)(colon - qname)) : g_strdup("");

	if (colon && (colon == qname || !colon[1] || strchr(colon + 1, ':')))
		return invalid(error, "<%s> is not a valid element name", qname);
	*local = colon ? colon + 1 : qname;
	*uri = "";
	if (strcmp(prefix, "xml") == 0) {
		*uri = "http://www.w3.org/XML/1998/namespace";
		return TRUE;
	}
	for (guint i = scope->len; i > 0; i--) {
		struct ns_decl *d = g_ptr_array_index(scope, i - 1);

		if (strcmp(d->prefix, prefix) == 0) {
			*uri = d->uri;
			return TRUE;
		}
	}
	if (*prefix)
		return invalid(error, "<%s>: the prefix '%s' is not declared (no xmlns:%s)", qname,
			       prefix, prefix);
	return TRUE;
}

/* Is @text only XML white space? */
static gboolean is_blank(const char *text, gsize len)
{
	for (gsize i = 0; i < len; i++)
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '\n')
			return FALSE;
	return TRUE;
}

/* ---- parsing the metadata ---- */

/* domain > scheme > leaf: a deeper element is refused before it is pushed. */
#define METADATA_MAX_DEPTH 3

/**
 * struct meta_parser - the state of vr_domain_tuning_parse().
 * @t:	      the tuning being filled (thrown away on error).
 * @scope:    namespace declarations in scope (struct ns_decl).
 * @depth:    open elements.
 * @open:     the field of each open element.
 * @seen:     bit per field given so far (each at most once).
 * @text:     the text of the open leaf element.
 * @unit:     its unit attribute, or NULL; owned.
 * @root_done: the root element has closed.
 */
struct meta_parser {
	struct vr_domain_tuning *t;
	GPtrArray *scope;
	guint depth;
	enum vr_tuning_field open[METADATA_MAX_DEPTH];
	guint seen;
	GString *text;
	char *unit;
	gboolean root_done;
};

static gboolean meta_check_attributes(struct meta_parser *mp, enum vr_tuning_field f,
				      const char **names, const char **values, GError **error)
{
	const struct vr_tuning_field_desc *d = &vr_tuning_fields[f];
	gboolean has_unit = d->kind == K_SIZE || d->kind == K_TIME;

	for (guint i = 0; names[i]; i++) {
		if (strcmp(names[i], "xmlns") == 0 || g_str_has_prefix(names[i], "xmlns:"))
			continue;
		if (has_unit && strcmp(names[i], "unit") == 0) {
			g_free(mp->unit);
			mp->unit = g_strdup(values[i]);
			continue;
		}
		return invalid(error, "<%s>: unknown attribute '%s' (allowed: %s)", d->name,
			       names[i], has_unit ? "unit" : "none");
	}
	return TRUE;
}

static void meta_start(GMarkupParseContext *ctx, const char *qname, const char **names,
		       const char **values, gpointer data, GError **error)
{
	struct meta_parser *mp = data;
	enum vr_tuning_field parent = mp->depth ? mp->open[mp->depth - 1] : F_NONE;
	const char *local = NULL, *uri = NULL;
	enum vr_tuning_field f;

	(void)ctx;
	if (mp->root_done) {
		vr_domain_xml_set_error(
			error, VR_DOMAIN_XML_ERROR_SYNTAX,
			"<%s> after the end of <domain> (expected nothing after </domain>)", qname);
		return;
	}
	if (!ns_push(mp->scope, mp->depth, qname, names, values, error) ||
	    !ns_resolve(mp->scope, qname, &local, &uri, error))
		return;
	if (*uri && strcmp(uri, VR_DOMAIN_XML_NS) != 0) {
		invalid(error, "<%s> is in the namespace '%s' (expected %s)", qname, uri,
			VR_DOMAIN_XML_NS);
		return;
	}
	if (parent == F_NONE) {
		if (strcmp(local, "domain") != 0) {
			invalid(error, "the root element is <%s> (expected <domain>)", qname);
			return;
		}
		f = F_DOMAIN;
	} else {
		if (vr_tuning_fields[parent].kind != K_CONTAINER) {
			invalid(error, "<%s>: unexpected element <%s> (expected %s)",
				vr_tuning_fields[parent].name, qname,
				vr_tuning_fields[parent].expected);
			return;
		}
		f = vr_tuning_field_lookup(local, parent);
		if (f == F_NONE) {
			g_autofree char *children = vr_tuning_field_children(parent);

			invalid(error, "unknown element <%s> in <%s> (expected %s)", qname,
				vr_tuning_fields[parent].name, children);
			return;
		}
	}
	if (mp->seen & (1u << f)) {
		invalid(error, "<%s> is given twice", vr_tuning_fields[f].name);
		return;
	}
	mp->seen |= 1u << f;
	g_clear_pointer(&mp->unit, g_free);
	if (!meta_check_attributes(mp, f, names, values, error))
		return;
	g_string_truncate(mp->text, 0);
	mp->open[mp->depth++] = f;
}

static void meta_end(GMarkupParseContext *ctx, const char *qname, gpointer data, GError **error)
{
	struct meta_parser *mp = data;
	enum vr_tuning_field f = mp->open[mp->depth - 1];

	(void)ctx, (void)qname;
	if (vr_tuning_fields[f].kind != K_CONTAINER) {
		g_autofree char *what = g_strdup_printf("<%s>", vr_tuning_fields[f].name);
		g_autofree char *value = g_strstrip(g_strdup(mp->text->str));

		if (!vr_tuning_field_set(mp->t, f, what, value, mp->unit, FALSE, error))
			return;
	}
	mp->depth--;
	ns_pop(mp->scope, mp->depth);
	if (!mp->depth)
		mp->root_done = TRUE;
}

static void meta_text(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
		      GError **error)
{
	struct meta_parser *mp = data;

	(void)ctx;
	if (!mp->depth) {
		if (!is_blank(text, len))
			vr_domain_xml_set_error(
				error, VR_DOMAIN_XML_ERROR_SYNTAX,
				"text outside the <domain> element (expected only white space)");
		return;
	}
	if (vr_tuning_fields[mp->open[mp->depth - 1]].kind == K_CONTAINER) {
		if (!is_blank(text, len))
			invalid(error, "<%s>: unexpected text '%.*s' (expected only elements)",
				vr_tuning_fields[mp->open[mp->depth - 1]].name, (int)MIN(len, 40),
				text);
		return;
	}
	g_string_append_len(mp->text, text, (gssize)len);
}

/* Comments are fine; an XML declaration before the root too; nothing else. */
static gboolean passthrough_ok(const char *text, gsize len, gboolean before_root)
{
	if (len >= 4 && strncmp(text, "<!--", 4) == 0)
		return TRUE;
	return before_root && len >= 6 && strncmp(text, "<?xml", 5) == 0 &&
	       g_ascii_isspace(text[5]);
}

static void meta_passthrough(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
			     GError **error)
{
	struct meta_parser *mp = data;

	(void)ctx;
	if (!passthrough_ok(text, len, !mp->depth && !mp->root_done))
		vr_domain_xml_set_error(
			error, VR_DOMAIN_XML_ERROR_SYNTAX,
			"'%.*s' is not allowed (no DOCTYPE or processing instructions)",
			(int)MIN(len, 40), text);
}

static const GMarkupParser meta_parser_funcs = {
	.start_element = meta_start,
	.end_element = meta_end,
	.text = meta_text,
	.passthrough = meta_passthrough,
};

/*
 * Runs GMarkup over @text with @funcs; GMarkup's own errors become
 * VR_DOMAIN_XML_ERROR_SYNTAX, ours pass through. *@root_done tells whether
 * the root element had closed when GMarkup stopped (then what follows it is
 * the problem: GMarkup's own words for it are misleading).
 */
static gboolean markup_run(const GMarkupParser *funcs, gpointer data, const char *text,
			   const char *what, const gboolean *root_done, GError **error)
{
	g_autoptr(GMarkupParseContext)
		ctx = g_markup_parse_context_new(funcs, G_MARKUP_TREAT_CDATA_AS_TEXT, data, NULL);
	g_autoptr(GError) local = NULL;

	if (g_markup_parse_context_parse(ctx, text, -1, &local) &&
	    g_markup_parse_context_end_parse(ctx, &local))
		return TRUE;
	if (local->domain == VR_DOMAIN_XML_ERROR) {
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (*root_done)
		return vr_domain_xml_set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
					       "%s has content after the end of <domain> (%s)",
					       what, local->message);
	return vr_domain_xml_set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
				       "%s is not well-formed XML: %s", what, local->message);
}

/* Checks @text's length against @max; @what names it. */
static gboolean check_size(const char *text, size_t max, const char *what, GError **error)
{
	size_t len = strnlen(text, max + 1);

	if (len > max)
		return vr_domain_xml_set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
					       "%s is larger than %zu bytes", what, max);
	if (is_blank(text, len))
		return vr_domain_xml_set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX, "%s is empty",
					       what);
	return TRUE;
}

struct vr_domain_tuning *vr_domain_tuning_parse(const char *xml, GError **error)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();
	g_autoptr(GPtrArray) scope = g_ptr_array_new_with_free_func((GDestroyNotify)ns_decl_free);
	g_autoptr(GString) text = g_string_new("");
	g_autofree char *unit = NULL;
	struct meta_parser mp = {
		.t = t,
		.scope = scope,
		.text = text,
	};
	gboolean ok;

	if (!check_size(xml, VR_DOMAIN_XML_METADATA_MAX_BYTES, "the metadata", error))
		return NULL;
	t->enable = TRUE; /* the element exists */
	ok = markup_run(&meta_parser_funcs, &mp, xml, "the metadata", &mp.root_done, error);
	unit = mp.unit;
	if (!ok)
		return NULL;
	if (!mp.root_done) {
		vr_domain_xml_set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
					"the metadata has no <domain> element");
		return NULL;
	}
	return g_steal_pointer(&t);
}

/* ---- parsing a domain XML ---- */

/* libvirt's XML is a dozen levels deep; deeper is not libvirt's. */
#define DOMAIN_MAX_DEPTH 64
/* A domain name or the text of a value element: far above any real one. */
#define DOMAIN_MAX_TEXT_BYTES 1024

/* The elements read, by their path from the root. */
enum dom_elem {
	D_OTHER,
	D_NAME,
	D_UUID,
	D_MEMORY,
	D_CURRENT_MEMORY,
	D_CHANNEL,
	D_CHANNEL_SOURCE,
	D_CHANNEL_TARGET,
	D_MEMBALLOON,
};

static const struct {
	enum dom_elem elem;
	const char *path;
} dom_paths[] = {
	{ D_NAME, "domain/name" },
	{ D_UUID, "domain/uuid" },
	{ D_MEMORY, "domain/memory" },
	{ D_CURRENT_MEMORY, "domain/currentMemory" },
	{ D_CHANNEL, "domain/devices/channel" },
	{ D_CHANNEL_SOURCE, "domain/devices/channel/source" },
	{ D_CHANNEL_TARGET, "domain/devices/channel/target" },
	{ D_MEMBALLOON, "domain/devices/memballoon" },
};

/**
 * struct dom_channel - the parts of one <channel> read so far.
 * @type, @source_mode, @source_path, @target_type, @target_name,
 * @target_state: attributes, NULL when absent; owned.
 */
struct dom_channel {
	char *type;
	char *source_mode;
	char *source_path;
	char *target_type;
	char *target_name;
	char *target_state;
	guint nr_sources;
	guint nr_targets;
};

static void dom_channel_clear(struct dom_channel *c)
{
	g_free(c->type);
	g_free(c->source_mode);
	g_free(c->source_path);
	g_free(c->target_type);
	g_free(c->target_name);
	g_free(c->target_state);
	memset(c, 0, sizeof(*c));
}

/**
 * struct dom_parser - the state of vr_domain_xml_parse().
 * @info:	  what is found (moved to the caller on success).
 * @path:	  the open elements' qualified names, '/'-joined.
 * @ends:	  @path's length before each open element.
 * @depth:	  open elements.
 * @collect:	  the open element whose text is read, or D_OTHER.
 * @text:	  its text.
 * @unit:	  its unit attribute (memory elements); owned.
 * @channel:	  the open <channel>.
 * @has_*:	  elements seen (each at most once).
 */
struct dom_parser {
	struct vr_domain_info info;
	GString *path;
	gsize ends[DOMAIN_MAX_DEPTH];
	guint depth;
	enum dom_elem collect;
	GString *text;
	char *unit;
	struct dom_channel channel;
	gboolean has_type;
	gboolean has_name;
	gboolean has_uuid;
	gboolean has_memory;
	gboolean has_current_memory;
	gboolean has_memballoon;
	gboolean root_done;
};

/* The value of attribute @name, or NULL. */
static const char *attr(const char **names, const char **values, const char *name)
{
	for (guint i = 0; names[i]; i++)
		if (strcmp(names[i], name) == 0)
			return values[i];
	return NULL;
}

static gboolean dom_root(struct dom_parser *dp, const char *qname, const char **names,
			 const char **values, GError **error)
{
	const char *type = attr(names, values, "type");
	const char *id = attr(names, values, "id");

	if (strcmp(qname, "domain") != 0)
		return invalid(error, "the root element is <%s> (expected a libvirt <domain>)",
			       qname);
	if (!type)
		return invalid(error, "<domain> has no type attribute");
	dp->info.type = g_strdup(type);
	dp->has_type = TRUE;
	dp->info.id = -1;
	if (id) {
		uint64_t v;
		gboolean overflow;

		if (!vr_tuning_parse_digits(id, &v, &overflow) || v > G_MAXINT)
			return invalid(error, "<domain id='%s'>: expected an integer from 0 to %d",
				       id, G_MAXINT);
		dp->info.id = (int)v;
	}
	return TRUE;
}

/* Copies attribute @name (or NULL when absent) into *@dst. */
static void dom_copy_attr(char **dst, const char **names, const char **values, const char *name)
{
	const char *v = attr(names, values, name);

	g_free(*dst);
	*dst = g_strdup(v);
}

static gboolean dom_element(struct dom_parser *dp, enum dom_elem e, const char **names,
			    const char **values, GError **error)
{
	struct dom_channel *c = &dp->channel;
	const char *fpr;

	switch (e) {
	case D_NAME:
	case D_UUID:
	case D_MEMORY:
	case D_CURRENT_MEMORY: {
		static const char *const tags[] = {
			[D_NAME] = "name",
			[D_UUID] = "uuid",
			[D_MEMORY] = "memory",
			[D_CURRENT_MEMORY] = "currentMemory",
		};
		gboolean *seen = e == D_NAME   ? &dp->has_name :
				 e == D_UUID   ? &dp->has_uuid :
				 e == D_MEMORY ? &dp->has_memory :
						 &dp->has_current_memory;

		if (*seen)
			return invalid(error, "<%s> is given twice", tags[e]);
		*seen = TRUE;
		dp->collect = e;
		g_string_truncate(dp->text, 0);
		g_clear_pointer(&dp->unit, g_free);
		dp->unit = g_strdup(attr(names, values, "unit"));
		return TRUE;
	}
	case D_CHANNEL:
		dom_channel_clear(c);
		dom_copy_attr(&c->type, names, values, "type");
		return TRUE;
	case D_CHANNEL_SOURCE:
		c->nr_sources++;
		dom_copy_attr(&c->source_mode, names, values, "mode");
		dom_copy_attr(&c->source_path, names, values, "path");
		return TRUE;
	case D_CHANNEL_TARGET:
		c->nr_targets++;
		dom_copy_attr(&c->target_type, names, values, "type");
		dom_copy_attr(&c->target_name, names, values, "name");
		dom_copy_attr(&c->target_state, names, values, "state");
		return TRUE;
	case D_MEMBALLOON:
		if (dp->has_memballoon)
			return invalid(error, "<memballoon> is given twice");
		dp->has_memballoon = TRUE;
		dp->info.memballoon_model = g_strdup(attr(names, values, "model"));
		if (!dp->info.memballoon_model)
			return invalid(error, "<memballoon> has no model attribute");
		fpr = attr(names, values, "freePageReporting");
		if (fpr && strcmp(fpr, "on") && strcmp(fpr, "off"))
			return invalid(error,
				       "<memballoon freePageReporting='%s'>: expected on or off",
				       fpr);
		dp->info.free_page_reporting = fpr && strcmp(fpr, "on") == 0;
		return TRUE;
	case D_OTHER:
		break;
	}
	return TRUE;
}

static void dom_start(GMarkupParseContext *ctx, const char *qname, const char **names,
		      const char **values, gpointer data, GError **error)
{
	struct dom_parser *dp = data;
	enum dom_elem e = D_OTHER;

	(void)ctx;
	if (dp->depth == DOMAIN_MAX_DEPTH) {
		invalid(error, "elements nested deeper than %d levels", DOMAIN_MAX_DEPTH);
		return;
	}
	if (dp->root_done) {
		vr_domain_xml_set_error(
			error, VR_DOMAIN_XML_ERROR_SYNTAX,
			"<%s> after the end of <domain> (expected nothing after </domain>)", qname);
		return;
	}
	if (dp->collect != D_OTHER) {
		invalid(error, "unexpected element <%s> in a value element", qname);
		return;
	}
	for (guint i = 0; names[i]; i++)
		for (guint j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0) {
				invalid(error, "<%s> has the attribute '%s' twice", qname,
					names[i]);
				return;
			}
	dp->ends[dp->depth++] = dp->path->len;
	if (dp->path->len)
		g_string_append_c(dp->path, '/');
	g_string_append(dp->path, qname);
	if (dp->depth == 1) {
		dom_root(dp, qname, names, values, error);
		return;
	}
	for (guint i = 0; i < G_N_ELEMENTS(dom_paths); i++)
		if (strcmp(dp->path->str, dom_paths[i].path) == 0)
			e = dom_paths[i].elem;
	dom_element(dp, e, names, values, error);
}

/* A libvirt memory value: digits in unit= (default KiB, as libvirt). */
static gboolean dom_memory(const char *tag, const char *text, const char *unit, uint64_t *bytes,
			   GError **error)
{
	uint64_t v, scale = 1024;
	gboolean overflow;

	if (unit && !vr_tuning_size_unit_scale(unit, &scale))
		return invalid(error, "<%s>: unknown unit '%s' (expected %s)", tag, unit,
			       VR_TUNING_SIZE_UNITS_EXPECTED);
	if (!vr_tuning_parse_digits(text, &v, &overflow) || (v && v > G_MAXUINT64 / scale))
		return invalid(error, "<%s>: '%s' is not a size in 64 bits", tag, text);
	*bytes = v * scale;
	return TRUE;
}

static gboolean dom_uuid(const char *text, char *out, GError **error)
{
	size_t len = strlen(text);

	for (size_t i = 0; i < len; i++) {
		gboolean dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (len != VR_DOMAIN_UUID_STRING_LEN || (dash && text[i] != '-') ||
		    (!dash && !g_ascii_isxdigit(text[i])))
			return invalid(error,
				       "<uuid>: '%s' is not a UUID (expected "
				       "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
				       text);
		out[i] = g_ascii_tolower(text[i]);
	}
	if (len != VR_DOMAIN_UUID_STRING_LEN)
		return invalid(error, "<uuid>: '%s' is not a UUID", text);
	out[len] = '\0';
	return TRUE;
}

static gboolean dom_value_end(struct dom_parser *dp, GError **error)
{
	g_autofree char *text = g_strstrip(g_strdup(dp->text->str));
	enum dom_elem e = dp->collect;

	dp->collect = D_OTHER;
	switch (e) {
	case D_NAME:
		if (!*text)
			return invalid(error, "<name> is empty");
		dp->info.name = g_steal_pointer(&text);
		return TRUE;
	case D_UUID:
		return dom_uuid(text, dp->info.uuid, error);
	case D_MEMORY:
		return dom_memory("memory", text, dp->unit, &dp->info.memory_bytes, error);
	case D_CURRENT_MEMORY:
		return dom_memory("currentMemory", text, dp->unit, &dp->info.current_memory_bytes,
				  error);
	default:
		g_assert_not_reached();
	}
}

/* The end of a <channel>: is it the agent's, and is it usable? */
static gboolean dom_channel_end(struct dom_parser *dp, GError **error)
{
	struct dom_channel *c = &dp->channel;
	const char *path = c->source_path;

	if (g_strcmp0(c->target_name, VR_DOMAIN_AGENT_CHANNEL) != 0)
		return TRUE;
	if (dp->info.agent_channel)
		return invalid(error, "two channels have the target name '%s' (expected one)",
			       VR_DOMAIN_AGENT_CHANNEL);
	if (g_strcmp0(c->type, "unix") != 0)
		return invalid(error, "the channel '%s' is type='%s' (expected type='unix')",
			       VR_DOMAIN_AGENT_CHANNEL, c->type ? c->type : "");
	if (g_strcmp0(c->target_type, "virtio") != 0)
		return invalid(error,
			       "the channel '%s' has <target type='%s'> (expected type='virtio')",
			       VR_DOMAIN_AGENT_CHANNEL, c->target_type ? c->target_type : "");
	if (c->nr_sources > 1 || c->nr_targets > 1)
		return invalid(error, "the channel '%s' has more than one <source> or <target>",
			       VR_DOMAIN_AGENT_CHANNEL);
	if (c->source_mode && strcmp(c->source_mode, "bind") != 0)
		return invalid(error,
			       "the channel '%s' has <source mode='%s'> (expected mode='bind': "
			       "libvirt listens, vreclaimd connects)",
			       VR_DOMAIN_AGENT_CHANNEL, c->source_mode);
	if (path && path[0] != '/')
		return invalid(error,
			       "the channel '%s' has the relative socket path '%s' (expected an "
			       "absolute path)",
			       VR_DOMAIN_AGENT_CHANNEL, path);
	if (path && strlen(path) > VR_DOMAIN_SOCKET_PATH_MAX)
		return invalid(error,
			       "the channel '%s' has a socket path of %zu bytes (at most %d fit "
			       "a unix socket address)",
			       VR_DOMAIN_AGENT_CHANNEL, strlen(path), VR_DOMAIN_SOCKET_PATH_MAX);
	if (c->target_state && strcmp(c->target_state, "connected") &&
	    strcmp(c->target_state, "disconnected"))
		return invalid(error,
			       "the channel '%s' has <target state='%s'> (expected connected or "
			       "disconnected)",
			       VR_DOMAIN_AGENT_CHANNEL, c->target_state);
	dp->info.agent_channel = TRUE;
	dp->info.agent_socket_path = g_strdup(path);
	dp->info.agent_connected = g_strcmp0(c->target_state, "connected") == 0;
	return TRUE;
}

static void dom_end(GMarkupParseContext *ctx, const char *qname, gpointer data, GError **error)
{
	struct dom_parser *dp = data;
	gboolean ok = TRUE;

	(void)ctx, (void)qname;
	if (dp->collect != D_OTHER)
		ok = dom_value_end(dp, error);
	else if (strcmp(dp->path->str, "domain/devices/channel") == 0)
		ok = dom_channel_end(dp, error);
	if (!ok)
		return;
	g_string_truncate(dp->path, dp->ends[--dp->depth]);
	if (!dp->depth)
		dp->root_done = TRUE;
}

static void dom_text(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
		     GError **error)
{
	struct dom_parser *dp = data;

	(void)ctx;
	if (!dp->depth && !is_blank(text, len)) {
		vr_domain_xml_set_error(
			error, VR_DOMAIN_XML_ERROR_SYNTAX,
			"text outside the <domain> element (expected only white space)");
		return;
	}
	if (dp->collect == D_OTHER)
		return;
	if (dp->text->len + len > DOMAIN_MAX_TEXT_BYTES) {
		invalid(error, "the text of <%s> is longer than %d bytes",
			strrchr(dp->path->str, '/') + 1, DOMAIN_MAX_TEXT_BYTES);
		return;
	}
	g_string_append_len(dp->text, text, (gssize)len);
}

static void dom_passthrough(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
			    GError **error)
{
	struct dom_parser *dp = data;

	(void)ctx;
	if (!passthrough_ok(text, len, !dp->depth && !dp->root_done))
		vr_domain_xml_set_error(
			error, VR_DOMAIN_XML_ERROR_SYNTAX,
			"'%.*s' is not allowed (no DOCTYPE or processing instructions)",
			(int)MIN(len, 40), text);
}

static const GMarkupParser dom_parser_funcs = {
	.start_element = dom_start,
	.end_element = dom_end,
	.text = dom_text,
	.passthrough = dom_passthrough,
};

gboolean vr_domain_xml_parse(const char *domain_xml, struct vr_domain_info *out, GError **error)
{
	g_autoptr(GString) path = g_string_new("");
	g_autoptr(GString) text = g_string_new("");
	struct dom_parser dp = {
		.path = path,
		.text = text,
	};
	g_auto(vr_domain_info) info = { 0 };
	gboolean ok = check_size(domain_xml, VR_DOMAIN_XML_MAX_BYTES, "the domain XML", error) &&
		      markup_run(&dom_parser_funcs, &dp, domain_xml, "the domain XML",
				 &dp.root_done, error);

	info = dp.info; /* freed on every way out unless moved */
	g_free(dp.unit);
	dom_channel_clear(&dp.channel);
	if (!ok)
		return FALSE;
	if (!dp.has_type)
		return vr_domain_xml_set_error(error, VR_DOMAIN_XML_ERROR_SYNTAX,
					       "the domain XML has no <domain> element");
	if (!dp.has_name)
		return invalid(error, "the domain XML has no <name>");
	if (!dp.has_uuid)
		return invalid(error, "domain %s: the XML has no <uuid>", info.name);
	if (!dp.has_memory)
		return invalid(error, "domain %s: the XML has no <memory>", info.name);
	if (!dp.has_current_memory)
		info.current_memory_bytes = info.memory_bytes;
	if (strcmp(info.type, "qemu") != 0 && strcmp(info.type, "kvm") != 0)
		return vr_domain_xml_set_error(
			error, VR_DOMAIN_XML_ERROR_UNSUPPORTED,
			"domain %s is of type '%s' (vreclaim manages qemu and kvm "
			"domains)",
			info.name, info.type);
	*out = info;
	memset(&info, 0, sizeof(info));
	return TRUE;
}

void vr_domain_info_clear(struct vr_domain_info *info)
{
	g_free(info->name);
	g_free(info->type);
	g_free(info->agent_socket_path);
	g_free(info->memballoon_model);
	memset(info, 0, sizeof(*info));
	info->id = -1;
}
