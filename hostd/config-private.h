/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The description of one key of vreclaimd's configuration file, shared by
 * config.c (the table of keys, validation, the files) and config-value.c
 * (reading and writing one key's value). Nothing else includes it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum vr_config_key_kind {
	KEY_URI,	   /* char *: a libvirt URI */
	KEY_MANAGE,	   /* enum vr_manage_mode */
	KEY_ACCESS_SOURCE, /* enum vr_host_access_source_kind */
	KEY_DIR,	   /* char *: an absolute path */
	KEY_SOCKET,	   /* char *: an absolute path that fits a unix socket address */
	KEY_MODE,	   /* uint32_t: permission bits in octal */
	KEY_LISTEN,	   /* metrics_host + metrics_port */
	KEY_U64,	   /* uint64_t in [min, max] */
	KEY_U32,	   /* uint32_t in [min, max] */
	KEY_WMARK_METRIC,  /* enum vr_wmark_metric */
	KEY_PERCENT,	   /* uint32_t basis points, written as a percentage */
	KEY_SIZE,	   /* uint64_t bytes, written with a binary suffix */
	KEY_ACTIONS,	   /* uint32_t enum vr_domain_action bits */
	KEY_IDS,	   /* char **: user or group names (@unit says which) */
};

/**
 * struct vr_config_key - one key of the file.
 * @group, @key: where it is.
 * @kind:	 how its value is written.
 * @offset:	 offsetof() the field of struct vr_daemon_config it sets.
 * @min, @max:	 the allowed range of KEY_U64, KEY_U32 and KEY_SIZE values.
 * @unit:	 the unit messages give for numbers; "user" or "group" for
 *		 KEY_IDS; for KEY_PERCENT, what the value is a share of, with
 *		 its examples and its off value, as the message says it.
 */
struct vr_config_key {
	const char *group;
	const char *key;
	enum vr_config_key_kind kind;
	size_t offset;
	uint64_t min;
	uint64_t max;
	const char *unit;
};

/* The field of @k in the config @c, as a @type *. */
#define AT(c, k, type)	     ((type *)((char *)(c) + (k)->offset))
#define AT_CONST(c, k, type) ((const type *)((const char *)(c) + (k)->offset))

/**
 * vr_config_value_parse() - set the field of @k in @c from the file's text
 * @value.
 * @c:	   the configuration being read.
 * @k:	   the key.
 * @value: its value as written in the file.
 * @why:   on FALSE, what is allowed (owned by the caller), for the message
 *	   that names the file and the key.
 *
 * Return: FALSE on a bad value.
 */
gboolean vr_config_value_parse(struct vr_daemon_config *c, const struct vr_config_key *k,
			       const char *value, char **why);

/**
 * vr_config_value_format() - the field of @k in @c as the file writes it
 * (vr_config_value_parse() reads it back to the same value).
 * @c: the configuration.
 * @k: the key.
 *
 * Return: owned by the caller.
 */
char *vr_config_value_format(const struct vr_daemon_config *c, const struct vr_config_key *k);
