/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Text from outside (a guest agent's strings, domain names and metadata
 * from libvirt's XML, a client's request) made safe for a terminal and a
 * log line: a control character could move the cursor, rewrite the
 * terminal's title or forge a log line ("\n<date> vreclaimd: ..."), and a
 * Unicode format character (a right-to-left override) could show text other
 * than what is there. Pure: no I/O. vr_log_writer_escape() applies it to
 * every message a daemon logs; vreclaimctl applies vr_text_escape() to
 * what it prints of the daemon's replies.
 */
#pragma once

#include <glib.h>

/**
 * vr_text_is_safe() - whether @text (@len bytes, or -1 up to its NUL) is
 * valid UTF-8 without a character vr_text_escape() would change.
 */
gboolean vr_text_is_safe(const char *text, gssize len);

/**
 * vr_text_escape() - @text (@len bytes, or -1 up to its NUL) with what is
 * unsafe written out in ASCII: '\n', '\r' and '\t' as "\n", "\r", "\t";
 * other C0 controls, DEL and NUL (when @len counts one) as "\xNN"; C1
 * controls (U+0080..U+009F), Unicode format characters (Cf: bidi overrides,
 * zero-width joiners) and the line and paragraph separators as "\u{XXXX}";
 * bytes that are not UTF-8 as "\xNN". Everything else, backslashes included,
 * is kept as it is, so plain text comes back unchanged.
 * Return: owned, valid UTF-8.
 */
char *vr_text_escape(const char *text, gssize len);

/**
 * struct vr_log_escape - what vr_log_writer_escape() hands the escaped
 * fields to.
 * @next:	the writer that writes (g_log_writer_default for a daemon).
 * @next_data:	its user data.
 */
struct vr_log_escape {
	GLogWriterFunc next;
	gpointer next_data;
};

/**
 * vr_log_writer_escape() - a GLogWriterFunc that escapes the MESSAGE field
 * with vr_text_escape() (when it needs it) and passes every field on to
 * @user_data's struct vr_log_escape. A daemon installs it first thing:
 * g_log_set_writer_func(vr_log_writer_escape, &escape, NULL).
 */
GLogWriterOutput vr_log_writer_escape(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
				      gpointer user_data);
