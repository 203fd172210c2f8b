/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's vreclaim tuning in libvirt's domain XML (docs/domain-xml.md):
 * the <metadata> element in the namespace VR_DOMAIN_XML_NS that vreclaimd
 * reads (virDomainGetMetadata) and `vreclaimctl set` writes
 * (virDomainSetMetadata), and what vreclaimd needs from a live domain XML
 * (virDomainGetXMLDesc): the domain's identity, memory, the agent's channel
 * and the memory balloon.
 *
 * Pure: text in, structs out, no libvirt calls. Parsing uses GLib's GMarkup
 * with namespaces resolved here. The metadata is strict (anything unknown,
 * repeated, empty or out of range is an error and gives no tuning); the domain
 * XML is libvirt's own, so only the parts read here are checked.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "domain-status.h" /* enum vr_domain_action */
#include "policy.h"

#define VR_DOMAIN_XML_ERROR (vr_domain_xml_error_quark())
GQuark vr_domain_xml_error_quark(void);

/**
 * enum vr_domain_xml_error - error codes in the VR_DOMAIN_XML_ERROR domain.
 * @VR_DOMAIN_XML_ERROR_SYNTAX:	     the text is not well-formed XML, or is
 *				     larger than its bound.
 * @VR_DOMAIN_XML_ERROR_INVALID:     well-formed, but an element, attribute or
 *				     value is wrong; the message names it and
 *				     what is allowed, e.g. "<priority>: '101' is
 *				     out of range (expected an integer from 0 to
 *				     100)". Also: a key or value of
 *				     vr_domain_tuning_set(), overrides that do
 *				     not fit a policy.
 * @VR_DOMAIN_XML_ERROR_UNSUPPORTED: a domain vreclaim cannot manage (its type
 *				     is not qemu or kvm).
 */
enum vr_domain_xml_error {
	VR_DOMAIN_XML_ERROR_SYNTAX,
	VR_DOMAIN_XML_ERROR_INVALID,
	VR_DOMAIN_XML_ERROR_UNSUPPORTED,
};

/* The namespace of the metadata element, and the prefix (virDomainSetMetadata's
 * key) vreclaimctl writes it with. */
#define VR_DOMAIN_XML_NS  "http://vreclaim.org/xmlns/domain/1"
#define VR_DOMAIN_XML_KEY "vreclaim"

/* The virtio-serial port name of the guest agent's channel (docs/agent.md). */
#define VR_DOMAIN_AGENT_CHANNEL "org.vreclaim.agent.0"

/* The metadata element is a dozen short lines; 64 KiB is far above any
 * honest one and bounds what a bad one costs. */
#define VR_DOMAIN_XML_METADATA_MAX_BYTES (64 * 1024)
/* A live domain XML with many devices is some 10 KiB; 4 MiB bounds it. */
#define VR_DOMAIN_XML_MAX_BYTES (4 * 1024 * 1024)

/* Priority: 0..100, 50 when not given. */
#define VR_DOMAIN_PRIORITY_DEFAULT 50
#define VR_DOMAIN_PRIORITY_MAX	   100

/* Policy names: 1..64 characters (a file name in the policy folder). */
#define VR_DOMAIN_POLICY_NAME_MAX 64

/* Sizes (guaranteed, quota-size) up to 1 PiB: no guest is larger, and a
 * larger number is a typo. */
#define VR_DOMAIN_SIZE_MAX_BYTES (1ULL << 50)
/* min-age up to 30 days: memory unaccessed that long is cold by any measure. */
#define VR_DOMAIN_MIN_AGE_MAX_MS (30ULL * 24 * 3600 * 1000)
/* quota-time up to 1 hour per window (a window is usually 1 s). */
#define VR_DOMAIN_QUOTA_TIME_MAX_MS (3600ULL * 1000)
/* max-accesses up to 65536: the engine's largest max_nr_accesses. */
#define VR_DOMAIN_MAX_ACCESSES_MAX 65536U

/* sun_path holds 108 bytes with the terminating NUL. */
#define VR_DOMAIN_SOCKET_PATH_MAX 107

/**
 * vr_domain_actions_to_string() - the set @actions (bits of enum
 * vr_domain_action) as its names separated by single spaces, in the order of
 * the enum ("" for none). Return: owned.
 */
char *vr_domain_actions_to_string(guint actions);

/**
 * vr_domain_actions_parse() - read a set of actions from @text, names
 * separated by any of @separators (" " in the XML, "," in the daemon's
 * config). Each known name at most once, at least one.
 * @what:	what is parsed, for the message (e.g. "actions").
 * @out:	the set of enum vr_domain_action bits; untouched on error.
 * Return: FALSE with @error (VR_DOMAIN_XML_ERROR_INVALID) naming @what and
 * the bad name.
 */
gboolean vr_domain_actions_parse(const char *what, const char *text, const char *separators,
				 guint *out, GError **error);

/**
 * struct vr_domain_scheme_overrides - values that replace those of every
 * pageout scheme of the domain's policy (the <scheme> element). Each is used
 * only when its has_ flag is set.
 * @has_min_age, @min_age_us:	    the pattern's min_age_us, in us (given in
 *				    ms or larger units; 0..30 days).
 * @has_quota_time, @quota_time_ms: the quota's ms: action time per window, in
 *				    ms (0 = no time limit; up to 1 hour).
 * @has_quota_size, @quota_size_bytes: the quota's sz: bytes per window (0 =
 *				    no size limit; up to 1 PiB).
 * @has_max_accesses, @max_accesses: the pattern's max_nr_accesses
 *				    (0..65536): regions seen accessed in more
 *				    sampling intervals per aggregation are left
 *				    alone.
 */
struct vr_domain_scheme_overrides {
	gboolean has_min_age;
	uint64_t min_age_us;
	gboolean has_quota_time;
	uint64_t quota_time_ms;
	gboolean has_quota_size;
	uint64_t quota_size_bytes;
	gboolean has_max_accesses;
	uint32_t max_accesses;
};

/**
 * struct vr_domain_tuning - how vreclaim treats one domain.
 * @enable:	  manage the domain. FALSE when it has no vreclaim metadata
 *		  (vr_domain_tuning_new()); TRUE when it has, unless <enable>
 *		  says no.
 * @policy:	  the policy file's name in the daemon's policy folder, without
 *		  ".json": 1..64 of [A-Za-z0-9_.-], not starting with '.', not
 *		  "default" (never a path); NULL = the built-in default policy.
 *		  Owned.
 * @priority:	  0..100 (default 50): the higher, the more important the
 *		  guest; it gives memory back later and less.
 * @guaranteed_bytes: the host-side resident size, in bytes, below which
 *		  vreclaim never takes memory from this guest (default 0).
 * @actions:	  the set of enum vr_domain_action bits vreclaim may use
 *		  (default VR_DOMAIN_ACTIONS_DEFAULT); never empty.
 * @scheme:	  overrides of the policy's pageout schemes (default none).
 */
struct vr_domain_tuning {
	gboolean enable;
	char *policy;
	guint priority;
	uint64_t guaranteed_bytes;
	guint actions;
	struct vr_domain_scheme_overrides scheme;
};

typedef struct vr_domain_tuning vr_domain_tuning;

/**
 * vr_domain_tuning_new() - the tuning of a domain without vreclaim metadata:
 * disabled, every other field at its default. Return: owned.
 */
struct vr_domain_tuning *vr_domain_tuning_new(void);

/** vr_domain_tuning_copy() - a deep copy of @t. Return: owned. */
struct vr_domain_tuning *vr_domain_tuning_copy(const struct vr_domain_tuning *t);

/** vr_domain_tuning_equal() - do @a and @b hold the same settings? */
gboolean vr_domain_tuning_equal(const struct vr_domain_tuning *a, const struct vr_domain_tuning *b);

void vr_domain_tuning_free(struct vr_domain_tuning *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_domain_tuning, vr_domain_tuning_free)

/**
 * vr_domain_tuning_parse() - parse the metadata element @xml (NUL-terminated,
 * at most VR_DOMAIN_XML_METADATA_MAX_BYTES): what virDomainGetMetadata(
 * VIR_DOMAIN_METADATA_ELEMENT, VR_DOMAIN_XML_NS) returns (libvirt strips our
 * namespace: elements without a namespace are read as ours), or the element as
 * written in <metadata> with `virsh edit` (any prefix bound to VR_DOMAIN_XML_NS,
 * or xmlns="VR_DOMAIN_XML_NS"). The root is <domain>; elements in any other
 * namespace are errors.
 * Return: a new tuning (enable TRUE unless <enable>no</enable>), or NULL with
 * @error (VR_DOMAIN_XML_ERROR_SYNTAX or _INVALID) naming the element or
 * attribute and the allowed values.
 */
struct vr_domain_tuning *vr_domain_tuning_parse(const char *xml, GError **error);

/**
 * vr_domain_tuning_to_xml() - @t as the metadata element, without a
 * namespace (virDomainSetMetadata() with key VR_DOMAIN_XML_KEY and uri
 * VR_DOMAIN_XML_NS puts it in ours). Every setting is written except unset
 * optional ones; for a valid @t (values in their ranges, as the parser and
 * vr_domain_tuning_set() leave them) vr_domain_tuning_parse() reads it back
 * to a tuning equal to @t, <enable> included. Return: owned text.
 */
char *vr_domain_tuning_to_xml(const struct vr_domain_tuning *t);

/**
 * vr_domain_tuning_set() - set one setting of @t as `vreclaimctl set` does:
 * @key is an element name (enable, policy, priority, guaranteed, actions,
 * min-age, quota-time, quota-size, max-accesses). Sizes are bytes or a number
 * with a unit (512MiB, 1G, 4096); times are ms or a number with a unit (60s,
 * 500ms, 2min, 1h); actions are names separated by ',' or ' '; enable is yes
 * or no. The value "default" restores the default (removes an optional
 * setting; enable=default is yes). On error @t is unchanged.
 */
gboolean vr_domain_tuning_set(struct vr_domain_tuning *t, const char *key, const char *value,
			      GError **error);

/**
 * vr_domain_tuning_set_args() - vr_domain_tuning_set() for each "KEY=VALUE"
 * of the NULL-terminated @args, all or nothing: on error @t is unchanged and
 * the message starts with the argument's key.
 */
gboolean vr_domain_tuning_set_args(struct vr_domain_tuning *t, const char *const *args,
				   GError **error);

/**
 * vr_domain_tuning_policy_name_valid() - is @name a valid policy name (see
 * struct vr_domain_tuning's @policy)? FALSE with @error saying why.
 */
gboolean vr_domain_tuning_policy_name_valid(const char *name, GError **error);

/**
 * vr_domain_tuning_policy() - the policy the domain runs: a copy of @base
 * with @t's scheme overrides applied to every pageout scheme, validated.
 * Return: owned policy, or NULL with @error (VR_DOMAIN_XML_ERROR_INVALID)
 * naming the override and the scheme it does not fit (e.g. a min-age above
 * the scheme's max_age_us, a quota override on a scheme without a quota
 * window, overrides on a policy without pageout schemes).
 */
struct vr_policy *vr_domain_tuning_policy(const struct vr_domain_tuning *t,
					  const struct vr_policy *base, GError **error);

/* "6695eb01-f6a4-8304-79aa-97f2502e193f" */
#define VR_DOMAIN_UUID_STRING_LEN 36

/**
 * struct vr_domain_info - what vreclaimd needs from a domain XML.
 * @name:		 the domain's name; owned.
 * @uuid:		 its UUID, lower case with dashes.
 * @type:		 "qemu" or "kvm"; owned.
 * @id:			 the running domain's id, -1 when the XML has none.
 * @memory_bytes:	 <memory>, in bytes.
 * @current_memory_bytes: <currentMemory> in bytes, else @memory_bytes.
 * @agent_channel:	 the domain has the agent's channel (<channel
 *			 type='unix'> with <target type='virtio'
 *			 name='org.vreclaim.agent.0'/>).
 * @agent_socket_path:	 its host socket (<source mode='bind' path=.../>):
 *			 absolute, at most VR_DOMAIN_SOCKET_PATH_MAX bytes; NULL
 *			 without a channel or when the XML gives no path (an
 *			 inactive definition). Owned.
 * @agent_connected:	 the target says state='connected' (the guest has
 *			 opened its end).
 * @memballoon_model:	 the <memballoon> model ("virtio", "none", ...); NULL
 *			 without one. Owned.
 * @free_page_reporting: the balloon has freePageReporting='on'.
 */
struct vr_domain_info {
	char *name;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1];
	char *type;
	int id;
	uint64_t memory_bytes;
	uint64_t current_memory_bytes;
	gboolean agent_channel;
	char *agent_socket_path;
	gboolean agent_connected;
	char *memballoon_model;
	gboolean free_page_reporting;
};

/**
 * vr_domain_xml_parse() - read @domain_xml (virDomainGetXMLDesc's text,
 * NUL-terminated, at most VR_DOMAIN_XML_MAX_BYTES) into @out, which is
 * overwritten (not freed) only on success; clear it with
 * vr_domain_info_clear().
 * Errors: not XML or too large (SYNTAX); root not <domain>, a missing or
 * repeated name, uuid or memory, a bad number or unit, two agent channels, an
 * agent channel that is not type='unix' with <source mode='bind'>, a relative
 * or over-long socket path (INVALID); a type other than qemu or kvm
 * (UNSUPPORTED).
 */
gboolean vr_domain_xml_parse(const char *domain_xml, struct vr_domain_info *out, GError **error);

/** vr_domain_info_clear() - free @info's strings and zero it (@id -1). */
void vr_domain_info_clear(struct vr_domain_info *info);
typedef struct vr_domain_info vr_domain_info;
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vr_domain_info, vr_domain_info_clear)
