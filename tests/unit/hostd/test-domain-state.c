/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of what vreclaimd keeps of a domain across its restarts:
 * the state file's text (common/domain-state.c: written, parsed strictly,
 * checked against the domain and its QEMU process), the quota window, what
 * a restored state does to a domain (hostd/domain.c: statistics continue,
 * the agent's counters count from where the previous daemon left them), and
 * the folder (hostd/state-dir.c: atomic save, bounded load, the QEMU's
 * incarnation from a fake procfs).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "domain-state.h"
#include "domain.h"
#include "state-dir.h"
#include "test-fake-tree.h"

#define MIB  (1ULL << 20)
#define UUID "0b6e3a2c-5d41-4f7e-9a3b-1c2d3e4f5a6b"
/* The window length of the tests, us. */
#define WINDOW_US (10 * G_USEC_PER_SEC)

static struct vr_domain_state sample(void)
{
	struct vr_domain_state st = {
		.uuid = UUID,
		.name = "web1",
		.qemu = { .pid = 4242, .start_time_us = 987650000 },
		.reclaimed_bytes = 300 * MIB,
		.rejected_reports = 3,
		.rss_start_bytes = 900 * MIB,
		.paused = true,
		.credit_permille = 500,
		.trust_permille = 250,
		.agent_uptime_ms = 60000,
		.agent_sz_applied_bytes = 250 * MIB,
		.agent_swap_cache_release_bytes = 50 * MIB,
		.window = { .start_us = 5 * G_USEC_PER_SEC,
			    .share_bytes = 32 * MIB,
			    .charged_bytes = 8 * MIB },
	};
	return st;
}

TestSuite(domain_state_text, .description = "the state file's text");

Test(domain_state_text, round_trip)
{
	struct vr_domain_state st = sample(), back;
	g_autofree char *text = vr_domain_state_to_text(&st);
	g_autoptr(GError) error = NULL;

	cr_assert(vr_domain_state_parse(text, strlen(text), &back, &error),
		  "expected our own text to parse: %s\n%s", error ? error->message : "", text);
	cr_assert_str_eq(back.uuid, st.uuid);
	cr_assert_str_eq(back.name, st.name);
	cr_assert_eq(back.qemu.pid, st.qemu.pid);
	cr_assert_eq(back.qemu.start_time_us, st.qemu.start_time_us);
	cr_assert_eq(back.reclaimed_bytes, st.reclaimed_bytes);
	cr_assert_eq(back.rejected_reports, st.rejected_reports);
	cr_assert_eq(back.rss_start_bytes, st.rss_start_bytes);
	cr_assert_eq(back.paused, st.paused);
	cr_assert_eq(back.credit_permille, st.credit_permille);
	cr_assert_eq(back.trust_permille, st.trust_permille);
	cr_assert_eq(back.agent_uptime_ms, st.agent_uptime_ms);
	cr_assert_eq(back.agent_sz_applied_bytes, st.agent_sz_applied_bytes);
	cr_assert_eq(back.agent_swap_cache_release_bytes, st.agent_swap_cache_release_bytes);
	cr_assert_eq(back.window.start_us, st.window.start_us);
	cr_assert_eq(back.window.share_bytes, st.window.share_bytes);
	cr_assert_eq(back.window.charged_bytes, st.window.charged_bytes);
}

Test(domain_state_text, extremes_round_trip)
{
	struct vr_domain_state st = sample(), back;

	st.reclaimed_bytes = UINT64_MAX;
	st.qemu.pid = INT32_MAX;
	st.credit_permille = 125;
	st.paused = false;
	g_autofree char *text = vr_domain_state_to_text(&st);
	cr_assert(vr_domain_state_parse(text, strlen(text), &back, NULL));
	cr_assert_eq(back.reclaimed_bytes, UINT64_MAX);
	cr_assert_eq(back.qemu.pid, INT32_MAX);
	cr_assert(!back.paused);
}

Test(domain_state_text, name_cleaned_for_the_file)
{
	struct vr_domain_state st = sample(), back;

	g_strlcpy(st.name, "evil\nname\x1b[0m", sizeof(st.name));
	g_autofree char *text = vr_domain_state_to_text(&st);
	cr_assert(vr_domain_state_parse(text, strlen(text), &back, NULL),
		  "a name with control characters must not break the file:\n%s", text);
	cr_assert_str_eq(back.name, "evil?name?[0m");
}

/**
 * struct bad_case - a state file with one thing wrong.
 * @from, @to:	replace the first @from of the sample's text by @to.
 * @fragment:	what the error must say.
 */
struct bad_case {
	const char *from;
	const char *to;
	const char *fragment;
};

static const struct bad_case bad_cases[] = {
	{ "version=1", "version=2", "version 2" },
	{ "version=1\n", "", "version is missing" },
	{ "paused=true", "paused=yes", "paused" },
	{ "qemu-pid=4242", "qemu-pid=0", "qemu-pid" },
	{ "qemu-pid=4242", "qemu-pid=-5", "qemu-pid" },
	{ "credit-permille=500", "credit-permille=2000", "credit-permille" },
	{ "trust-permille=250", "trust-permille=100", "trust-permille" },
	{ "trust-permille=250\n", "", "trust-permille is missing" },
	{ "reclaimed-bytes=314572800", "reclaimed-bytes=18446744073709551616", "reclaimed-bytes" },
	{ "reclaimed-bytes=314572800", "reclaimed-bytes= 1", "reclaimed-bytes" },
	{ "reclaimed-bytes=314572800", "reclaimed-bytes=0x10", "reclaimed-bytes" },
	{ "uuid=" UUID, "uuid=0B6E3A2C-5D41-4F7E-9A3B-1C2D3E4F5A6B", "uuid" },
	{ "uuid=" UUID, "uuid=../../etc/passwd", "uuid" },
	{ "rejected-reports=3", "rejected-reports=3\nrejected-reports=4", "given twice" },
	{ "rejected-reports=3", "rejected-reports=3\ncolour=red", "unknown key 'colour'" },
	{ "rejected-reports=3", "rejected-reports=3\n[other]", "group" },
	{ "rejected-reports=3", "rejected-reports", "no '='" },
	{ "[domain-state]\n", "", "before [domain-state]" },
	{ "window-start-us=5000000", "window-start-us=-1", "window-start-us" },
};

Test(domain_state_text, strict)
{
	struct vr_domain_state st = sample();
	g_autofree char *good = vr_domain_state_to_text(&st);

	for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		const char *at = strstr(good, c->from);
		struct vr_domain_state out;
		g_autoptr(GError) error = NULL;

		cr_assert_not_null(at, "case %zu: '%s' not in the sample", i, c->from);
		memset(&out, 0x5a, sizeof(out));
		g_autofree char *bad = g_strdup_printf("%.*s%s%s", (int)(at - good), good, c->to,
						       at + strlen(c->from));
		cr_assert(!vr_domain_state_parse(bad, strlen(bad), &out, &error),
			  "case %zu: expected a refusal of:\n%s", i, bad);
		cr_assert(g_error_matches(error, VR_DOMAIN_STATE_ERROR,
					  VR_DOMAIN_STATE_ERROR_INVALID),
			  "case %zu: expected INVALID, got %s", i, error->message);
		cr_assert(strstr(error->message, c->fragment),
			  "case %zu: expected the error to name '%s', got '%s'", i, c->fragment,
			  error->message);
		/* Nothing half-applied. */
		cr_assert_eq(((unsigned char *)&out)[0], 0x5a, "case %zu: out was written", i);
	}
}

Test(domain_state_text, not_text)
{
	struct vr_domain_state out;
	g_autoptr(GError) nul = NULL;
	g_autoptr(GError) big = NULL;
	g_autoptr(GError) empty = NULL;
	g_autofree char *huge = g_strnfill(VR_DOMAIN_STATE_MAX_BYTES + 1, '#');

	cr_assert(!vr_domain_state_parse("[domain-state]\0x", 16, &out, &nul));
	cr_assert(strstr(nul->message, "NUL"), "%s", nul->message);
	cr_assert(!vr_domain_state_parse(huge, strlen(huge), &out, &big));
	cr_assert(strstr(big->message, "at most"), "%s", big->message);
	cr_assert(!vr_domain_state_parse("", 0, &out, &empty));
	cr_assert(strstr(empty->message, "no [domain-state]"), "%s", empty->message);
}

Test(domain_state_text, check_incarnation)
{
	struct vr_domain_state st = sample();
	struct vr_qemu_incarnation same = st.qemu;
	struct vr_qemu_incarnation reused = { .pid = 4242, .start_time_us = 987650001 };
	struct vr_qemu_incarnation other = { .pid = 4243, .start_time_us = 987650000 };
	g_autoptr(GError) e1 = NULL;
	g_autoptr(GError) e2 = NULL;
	g_autoptr(GError) e3 = NULL;

	cr_assert(vr_domain_state_check(&st, UUID, &same, NULL));
	cr_assert(!vr_domain_state_check(&st, UUID, &reused, &e1), "a reused pid is another QEMU");
	cr_assert(g_error_matches(e1, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_STALE));
	cr_assert(!vr_domain_state_check(&st, UUID, &other, &e2));
	cr_assert(g_error_matches(e2, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_STALE));
	cr_assert(!vr_domain_state_check(&st, "0b6e3a2c-5d41-4f7e-9a3b-000000000000", &same, &e3));
	cr_assert(g_error_matches(e3, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_FOREIGN));
}

TestSuite(domain_state_save, .description = "when a domain's state file is written again");

#define NO	VR_DOMAIN_STATE_SAVE_NO
#define IN_TURN VR_DOMAIN_STATE_SAVE_IN_TURN
#define NOW	VR_DOMAIN_STATE_SAVE_NOW

/* Each member but the uptime and the pause, changed by one, is written in
 * turn once the file is VR_DOMAIN_STATE_SAVE_PERIOD_US old. */
Test(domain_state_save, a_counted_change_in_turn)
{
	const struct vr_domain_state saved = sample();
	struct vr_domain_state now;
	guint changes = 0;

	cr_assert_eq(vr_domain_state_needs_save(NULL, &saved, 0), IN_TURN, "no file yet");
	now = saved;
	cr_assert_eq(vr_domain_state_needs_save(&saved, &now, G_MAXINT64), NO,
		     "an unchanged state is never written again");
#define CHANGED(stmt)                                                                              \
	do {                                                                                       \
		now = saved;                                                                       \
		stmt;                                                                              \
		changes++;                                                                         \
		cr_assert_eq(vr_domain_state_needs_save(&saved, &now,                              \
							VR_DOMAIN_STATE_SAVE_PERIOD_US),           \
			     IN_TURN, "%s: not written", #stmt);                                   \
		cr_assert_eq(vr_domain_state_needs_save(&saved, &now,                              \
							VR_DOMAIN_STATE_SAVE_PERIOD_US - 1),       \
			     NO, "%s: written before its period", #stmt);                          \
	} while (0)
	CHANGED(now.uuid[0] = 'f');
	CHANGED(g_strlcpy(now.name, "web2", sizeof(now.name)));
	CHANGED(now.qemu.pid++);
	CHANGED(now.qemu.start_time_us++);
	CHANGED(now.reclaimed_bytes++);
	CHANGED(now.rejected_reports++);
	CHANGED(now.rss_start_bytes++);
	CHANGED(now.credit_permille++);
	CHANGED(now.trust_permille++);
	CHANGED(now.agent_sz_applied_bytes++);
	CHANGED(now.agent_swap_cache_release_bytes++);
	CHANGED(now.window.start_us++);
	CHANGED(now.window.share_bytes++);
	CHANGED(now.window.charged_bytes++);
#undef CHANGED
	cr_assert_eq(changes, 14);
}

/* A pause or resume goes at once, whatever else changed. */
Test(domain_state_save, a_pause_at_once)
{
	const struct vr_domain_state saved = sample();
	struct vr_domain_state now = saved;

	now.paused = !saved.paused;
	cr_assert_eq(vr_domain_state_needs_save(&saved, &now, 0), NOW);
	now.agent_uptime_ms++;
	now.reclaimed_bytes++;
	cr_assert_eq(vr_domain_state_needs_save(&saved, &now, 0), NOW);
}

/* The uptime alone waits for VR_DOMAIN_STATE_UPTIME_PERIOD_US. */
Test(domain_state_save, uptime_alone_waits)
{
	const struct vr_domain_state saved = sample();
	struct vr_domain_state now = saved;

	now.agent_uptime_ms += 5000;
	cr_assert_eq(vr_domain_state_needs_save(&saved, &now, VR_DOMAIN_STATE_SAVE_PERIOD_US), NO);
	cr_assert_eq(vr_domain_state_needs_save(&saved, &now, VR_DOMAIN_STATE_UPTIME_PERIOD_US - 1),
		     NO);
	cr_assert_eq(vr_domain_state_needs_save(&saved, &now, VR_DOMAIN_STATE_UPTIME_PERIOD_US),
		     IN_TURN);
	/* With a counted change it goes with the shorter period. */
	now.agent_sz_applied_bytes += MIB;
	cr_assert_eq(vr_domain_state_needs_save(&saved, &now, VR_DOMAIN_STATE_SAVE_PERIOD_US),
		     IN_TURN);
}

#undef NO
#undef IN_TURN
#undef NOW

TestSuite(share_window, .description = "a domain's quota window");

Test(share_window, roll_open_charge)
{
	struct vr_share_window w = { 0 };
	int64_t t = 1000 * G_USEC_PER_SEC;

	cr_assert(!vr_share_window_roll(&w, 0, t, WINDOW_US), "no share, no window");
	cr_assert(!vr_share_window_open(&w, t, WINDOW_US));
	cr_assert(vr_share_window_roll(&w, 16 * MIB, t, WINDOW_US));
	cr_assert(vr_share_window_open(&w, t + WINDOW_US - 1, WINDOW_US));
	cr_assert(!vr_share_window_open(&w, t + WINDOW_US, WINDOW_US));
	cr_assert(!vr_share_window_open(&w, t - 1, WINDOW_US), "a clock before it: ended");
	vr_share_window_charge(&w, 10 * MIB);
	cr_assert_eq(vr_share_window_left(&w, 16 * MIB), 6 * MIB);
	/* Within the window: no new one, the charge stays, a larger share
	 * raises the window's. */
	cr_assert(!vr_share_window_roll(&w, 32 * MIB, t + 1, WINDOW_US));
	cr_assert_eq(w.share_bytes, 32 * MIB);
	vr_share_window_charge(&w, 30 * MIB);
	cr_assert_eq(vr_share_window_left(&w, 32 * MIB), 0, "over the share: nothing left");
	cr_assert(vr_share_window_roll(&w, 8 * MIB, t + WINDOW_US, WINDOW_US));
	cr_assert_eq(w.charged_bytes, 0);
	cr_assert_eq(vr_share_window_left(&w, 8 * MIB), 8 * MIB);
	vr_share_window_charge(&w, UINT64_MAX);
	vr_share_window_charge(&w, 1);
	cr_assert_eq(w.charged_bytes, UINT64_MAX, "saturates");
}

TestSuite(domain_restore, .description = "a domain's restored state");

static struct vr_agent_stats stats(uint64_t uptime_ms, uint64_t applied_mib, uint64_t released_mib)
{
	struct vr_agent_stats s = {
		.backend = "damon",
		.uptime_ms = uptime_ms,
		.sz_tried = applied_mib * MIB,
		.sz_applied = applied_mib * MIB,
		.swap_cache_release_bytes = released_mib * MIB,
		.mem_total_bytes = 1024 * MIB,
	};
	return s;
}

static struct vr_domain *restored(const struct vr_domain_state *st, int64_t now_us)
{
	struct vr_domain *d = vr_domain_new(UUID, "web1");

	d->info.memory_bytes = 1024 * MIB;
	d->qemu = st->qemu;
	d->qemu_known = TRUE;
	vr_domain_state_apply(d, st, WINDOW_US, now_us);
	return d;
}

Test(domain_restore, statistics_continue)
{
	struct vr_domain_state st = sample();
	int64_t now = 100 * G_USEC_PER_SEC;
	g_autoptr(vr_domain) d = restored(&st, now);
	struct vr_agent_stats s = stats(70000, 260, 55);

	cr_assert_eq(d->reclaimed_bytes, 300 * MIB);
	cr_assert_eq(d->rejected_reports, 3);
	cr_assert_eq(d->rss_start_bytes, 900 * MIB);
	cr_assert(d->user_paused, "a paused domain stays paused");
	cr_assert_eq(d->credit.credit_permille, 500);
	cr_assert_eq(d->credit.trust_permille, 250, "its trust is restored, not full again");
	/* The same agent: 250 + 50 MiB before, 260 + 55 now: 15 MiB more,
	 * neither 0 (reset) nor the agent's whole 315 (double). */
	vr_domain_account_stats_at(d, &s, FALSE, now + G_USEC_PER_SEC);
	cr_assert_eq(d->reclaimed_bytes, 315 * MIB, "got %" G_GUINT64_FORMAT " MiB",
		     d->reclaimed_bytes / MIB);
	s = stats(71000, 270, 55);
	vr_domain_account_stats_at(d, &s, FALSE, now + 2 * G_USEC_PER_SEC);
	cr_assert_eq(d->reclaimed_bytes, 325 * MIB);
}

Test(domain_restore, agent_restarted_meanwhile)
{
	struct vr_domain_state st = sample();
	int64_t now = 100 * G_USEC_PER_SEC;
	g_autoptr(vr_domain) d = restored(&st, now);
	/* A new agent (uptime 5 s) that reclaimed 20 MiB: all of it is new. */
	struct vr_agent_stats s = stats(5000, 20, 0);

	vr_domain_account_stats_at(d, &s, FALSE, now + G_USEC_PER_SEC);
	cr_assert_eq(d->reclaimed_bytes, 320 * MIB, "got %" G_GUINT64_FORMAT " MiB",
		     d->reclaimed_bytes / MIB);
}

Test(domain_restore, fill_round_trip)
{
	struct vr_domain_state st = sample(), again;
	g_autoptr(vr_domain) d = restored(&st, st.window.start_us + 1);

	vr_domain_state_fill(d, &again);
	g_autofree char *a = vr_domain_state_to_text(&st);
	g_autofree char *b = vr_domain_state_to_text(&again);
	cr_assert_str_eq(a, b, "a restored domain saves what it was restored from");
}

Test(domain_restore, open_window_holds)
{
	struct vr_domain_state st = sample();
	g_autoptr(vr_domain) open = restored(&st, st.window.start_us + WINDOW_US / 2);
	g_autoptr(vr_domain) ended = restored(&st, st.window.start_us + WINDOW_US);

	cr_assert_eq(open->window_hold_until_us, st.window.start_us + WINDOW_US);
	cr_assert_eq(open->window.charged_bytes, 8 * MIB, "host-pageout's charge is kept");
	cr_assert_eq(ended->window_hold_until_us, 0, "an ended window holds nothing");
	cr_assert_eq(ended->window.start_us, 0);
}

static char *dir;

static void dir_setup(void)
{
	dir = g_dir_make_tmp("vr-state-XXXXXX", NULL);
	cr_assert_not_null(dir);
}

static void dir_teardown(void)
{
	if (dir)
		tree_rm(dir);
	g_clear_pointer(&dir, g_free);
}

TestSuite(state_dir, .init = dir_setup, .fini = dir_teardown, .description = "the state folder");

Test(state_dir, save_load_remove)
{
	struct vr_domain_state st = sample(), back;
	g_autofree char *sub = g_build_filename(dir, "a", "b", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) none = NULL;
	GStatBuf sb;

	cr_assert(vr_state_dir_prepare(sub, &error), "%s", error ? error->message : "");
	cr_assert(vr_state_dir_save(sub, &st, &error), "%s", error ? error->message : "");
	g_autofree char *path = vr_state_dir_path(sub, UUID);
	cr_assert_eq(g_stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
	st.reclaimed_bytes += MIB;
	cr_assert(vr_state_dir_save(sub, &st, &error), "the second save replaces the first");
	cr_assert(vr_state_dir_load(sub, UUID, &back, &error), "%s", error ? error->message : "");
	cr_assert_eq(back.reclaimed_bytes, st.reclaimed_bytes);
	/* No temporary file left. */
	g_autoptr(GDir) listing = g_dir_open(sub, 0, NULL);
	guint files = 0;
	while (g_dir_read_name(listing))
		files++;
	cr_assert_eq(files, 1, "expected only the state file, found %u files", files);
	cr_assert(vr_state_dir_remove(sub, UUID, &error));
	cr_assert(vr_state_dir_remove(sub, UUID, &error), "removing none is fine");
	cr_assert(!vr_state_dir_load(sub, UUID, &back, &none));
	cr_assert(g_error_matches(none, G_FILE_ERROR, G_FILE_ERROR_NOENT));
}

Test(state_dir, modes_of_the_folders)
{
	g_autofree char *parent = g_build_filename(dir, "run", NULL);
	g_autofree char *sub = g_build_filename(parent, "state", NULL);
	g_autofree char *file = g_build_filename(dir, "plain", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) not_dir = NULL;
	mode_t old = umask(0);
	GStatBuf sb;

	cr_assert(vr_state_dir_prepare(sub, &error), "%s", error ? error->message : "");
	umask(old);
	cr_assert_eq(g_stat(parent, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0755, "the parent made %o, as the socket's folder",
		     sb.st_mode & 0777);
	cr_assert_eq(g_stat(sub, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0700, "the state folder made %o", sb.st_mode & 0777);
	cr_assert(vr_state_dir_prepare(sub, &error), "an existing folder is fine");
	cr_assert(g_file_set_contents(file, "x", 1, NULL));
	cr_assert(!vr_state_dir_prepare(file, &not_dir), "a plain file is no state folder");
	cr_assert(strstr(not_dir->message, file), "the error names it: %s", not_dir->message);
}

Test(state_dir, corrupt_file_named)
{
	struct vr_domain_state out;
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) folder = NULL;
	g_autofree char *path = g_build_filename(dir, UUID ".state", NULL);

	tree_put(dir, UUID ".state", "[domain-state]\nversion=1\nuuid=garbage\n");
	cr_assert(!vr_state_dir_load(dir, UUID, &out, &error));
	cr_assert(g_error_matches(error, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_INVALID));
	cr_assert(strstr(error->message, UUID ".state"), "the error names the file: %s",
		  error->message);
	tree_rm(path);
	tree_mkdir(dir, UUID ".state");
	cr_assert(!vr_state_dir_load(dir, UUID, &out, &folder), "a folder is no state file");
}

Test(state_dir, incarnation_from_procfs)
{
	g_autofree char *stat_text = NULL;
	struct vr_qemu_incarnation q;
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) gone = NULL;

	cr_assert(
		g_file_get_contents(VR_TEST_DATA_DIR "/procfs/qemu-stat", &stat_text, NULL, NULL));
	tree_mkdir(dir, "4242");
	tree_put(dir, "4242/stat", stat_text);
	cr_assert(vr_qemu_incarnation_read(dir, 4242, &q, &error), "%s",
		  error ? error->message : "");
	cr_assert_eq(q.pid, 4242);
	/* starttime 98765 ticks at sysconf(_SC_CLK_TCK) per second. */
	cr_assert_eq(q.start_time_us, 98765ULL * G_USEC_PER_SEC / (uint64_t)sysconf(_SC_CLK_TCK));
	cr_assert(!vr_qemu_incarnation_read(dir, 4243, &q, &gone), "no such process");
}
