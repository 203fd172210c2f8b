/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's libvirt connection (hostd/libvirt/libvirt-conn.c) against libvirt's
 * test driver (test:///default, in this process, no daemon): every request
 * made on libvirt's thread and answered on the main context; and a libvirt
 * that stops answering, made with the connection's test hook (a gate each
 * request waits at on libvirt's thread, as for a SIGSTOPped libvirtd):
 * requests time out on time while the main loop keeps its pace, the
 * connection shows degraded with the request that hangs, and when libvirt
 * answers again the probe ends the degraded state and the daemon is told
 * to list the domains anew. Freeing the connection while a request hangs
 * calls nothing back and runs every request's destroy. The heartbeat sees a
 * stall when nothing is asked.
 *
 * Criterion runs each test in its own process: each starts from the test
 * driver's pristine default state (domain "test", running).
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <libvirt/libvirt.h>
#include <string.h>

#include "../unit/test-gate.h"
#include "libvirt/libvirt-conn.h"

#define TEST_URI "test:///default"
/* Each request's deadline in these tests, ms. */
#define TIMEOUT_MS 300
/* The longest a test waits for something, ms. */
#define WAIT_MS 5000

/* ---- the gate on libvirt's thread ---- */

static void hook(const char *what, gpointer data)
{
	(void)what;
	(void)data;
	gate_pass();
}

/* ---- the daemon's side ---- */

static guint nr_connected, nr_disconnected, nr_metadata_events;

static void on_connected(gpointer user_data)
{
	(void)user_data;
	nr_connected++;
}

static void on_disconnected(const char *reason, gpointer user_data)
{
	(void)reason;
	(void)user_data;
	nr_disconnected++;
}

static void on_domain_changed(const char *uuid, const char *name, enum vr_libvirt_change change,
			      gpointer user_data)
{
	(void)uuid;
	(void)user_data;
	if (change == VR_LIBVIRT_METADATA && !g_strcmp0(name, "test"))
		nr_metadata_events++;
}

static const struct vr_libvirt_ops ops = {
	.connected = on_connected,
	.disconnected = on_disconnected,
	.domain_changed = on_domain_changed,
};

/**
 * struct answer - what a request's callback saw (main context).
 * @done:	its callback ran, how often.
 * @destroyed:	its destroy ran, how often.
 * @on_main:	the callback ran on the main thread.
 * @error:	its error, NULL on success.
 * @domains:	list: the names, '|'-joined; get, lookup: the name; "" none.
 * @uuid:	list: the first domain's.
 * @xml_has_name: the domain's XML names it.
 * @metadata:	get: its metadata, NULL when none.
 * @at_us:	when the callback ran.
 */
struct answer {
	guint done;
	guint destroyed;
	gboolean on_main;
	GError *error;
	char *domains;
	char uuid[VIR_UUID_STRING_BUFLEN];
	gboolean xml_has_name;
	char *metadata;
	gint64 at_us;
};

static GThread *main_thread;

static void answer_reset(struct answer *a)
{
	g_clear_error(&a->error);
	g_free(a->domains);
	g_free(a->metadata);
	memset(a, 0, sizeof(*a));
}

static void answer_seen(struct answer *a, const GError *error)
{
	a->done++;
	a->on_main = g_thread_self() == main_thread;
	a->error = error ? g_error_copy(error) : NULL;
	a->at_us = g_get_monotonic_time();
}

static void answer_destroy(gpointer data)
{
	((struct answer *)data)->destroyed++;
}

static void list_done(GPtrArray *domains, const GError *error, gpointer user_data)
{
	struct answer *a = user_data;
	g_autoptr(GString) names = g_string_new(NULL);

	answer_seen(a, error);
	for (guint i = 0; domains && i < domains->len; i++) {
		const struct vr_libvirt_domain *d = g_ptr_array_index(domains, i);
		g_autofree char *tag = g_strdup_printf("<name>%s</name>", d->name);

		g_string_append_printf(names, "%s%s", i ? "|" : "", d->name);
		if (i == 0) {
			g_strlcpy(a->uuid, d->uuid, sizeof(a->uuid));
			a->xml_has_name = d->xml && strstr(d->xml, tag);
		}
	}
	a->domains = g_string_free(g_steal_pointer(&names), FALSE);
}

static void get_done(const struct vr_libvirt_domain *d, const GError *error, gpointer user_data)
{
	struct answer *a = user_data;

	answer_seen(a, error);
	a->domains = g_strdup(d ? d->name : "");
	a->metadata = d ? g_strdup(d->metadata) : NULL;
}

static void result_done(const GError *error, gpointer user_data)
{
	answer_seen(user_data, error);
}

static void lookup_done(virDomainPtr dom, const GError *error, gpointer user_data)
{
	struct answer *a = user_data;

	answer_seen(a, error);
	a->domains = g_strdup(dom ? virDomainGetName(dom) : "");
}

/* Iterate the main context until *@what reaches @n, at most WAIT_MS. */
static void wait_for(const guint *what, guint n, const char *desc)
{
	gint64 deadline = g_get_monotonic_time() + WAIT_MS * 1000LL;

	while (*what < n) {
		cr_assert(g_get_monotonic_time() < deadline, "expected %s within %d ms", desc,
			  WAIT_MS);
		g_main_context_iteration(NULL, FALSE);
		g_usleep(1000);
	}
}

static struct vr_libvirt *lv;

static void setup(void)
{
	main_thread = g_thread_self();
	lv = vr_libvirt_new_full(TEST_URI, 1000, TIMEOUT_MS, hook, NULL, &ops, NULL);
	vr_libvirt_start(lv);
	wait_for(&nr_connected, 1, "the connection up");
}

static void teardown(void)
{
	gate_set(TRUE);
	g_clear_pointer(&lv, vr_libvirt_free);
}

TestSuite(libvirt_conn, .init = setup, .fini = teardown,
	  .description = "the libvirt connection on its own thread, with the test driver");

Test(libvirt_conn, every_request_is_answered_on_the_main_context)
{
	struct answer a = { 0 };
	char uuid[VIR_UUID_STRING_BUFLEN];
	const char *xml = "<vreclaim><enable>yes</enable><priority>80</priority></vreclaim>";

	cr_assert(vr_libvirt_is_connected(lv));
	cr_assert_null(vr_libvirt_degraded_reason(lv));

	vr_libvirt_list_running(lv, list_done, &a, answer_destroy);
	cr_assert_eq(a.done, 0, "expected no answer from within the request");
	wait_for(&a.destroyed, 1, "the listing");
	cr_assert_eq(a.done, 1);
	cr_assert(a.on_main, "expected the answer on the main thread");
	cr_assert_null(a.error, "%s", a.error->message);
	cr_assert_str_eq(a.domains, "test");
	cr_assert(a.xml_has_name, "expected the domain's live XML");
	g_strlcpy(uuid, a.uuid, sizeof(uuid));
	answer_reset(&a);

	vr_libvirt_get_running(lv, uuid, get_done, &a, answer_destroy);
	wait_for(&a.destroyed, 1, "the domain");
	cr_assert_null(a.error, "%s", a.error->message);
	cr_assert_str_eq(a.domains, "test");
	cr_assert_null(a.metadata, "expected no metadata yet, got %s", a.metadata);
	answer_reset(&a);

	vr_libvirt_set_metadata(lv, uuid, xml, result_done, &a, answer_destroy);
	wait_for(&a.destroyed, 1, "the metadata written");
	cr_assert_null(a.error, "%s", a.error->message);
	answer_reset(&a);
	wait_for(&nr_metadata_events, 1, "libvirt's metadata event");

	vr_libvirt_get_running(lv, uuid, get_done, &a, answer_destroy);
	wait_for(&a.destroyed, 1, "the domain again");
	cr_assert_not_null(a.metadata, "expected the metadata written");
	cr_assert(strstr(a.metadata, "<priority>80</priority>"), "%s", a.metadata);
	answer_reset(&a);

	vr_libvirt_lookup(lv, uuid, lookup_done, &a, answer_destroy);
	wait_for(&a.destroyed, 1, "the lookup");
	cr_assert_null(a.error, "%s", a.error->message);
	cr_assert_str_eq(a.domains, "test");
	answer_reset(&a);

	/* An unknown domain: not running, no error; its lookup fails. */
	vr_libvirt_get_running(lv, "00000000-0000-0000-0000-000000000000", get_done, &a,
			       answer_destroy);
	wait_for(&a.destroyed, 1, "the unknown domain");
	cr_assert_null(a.error, "%s", a.error->message);
	cr_assert_str_eq(a.domains, "");
	answer_reset(&a);
	vr_libvirt_lookup(lv, "00000000-0000-0000-0000-000000000000", lookup_done, &a,
			  answer_destroy);
	wait_for(&a.destroyed, 1, "the unknown domain's lookup");
	cr_assert(g_error_matches(a.error, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_NO_DOMAIN), "%s",
		  a.error ? a.error->message : "no error");
	answer_reset(&a);
	cr_assert_eq(vr_libvirt_stalls(lv), 0);
}

Test(libvirt_conn, a_stalled_libvirt_times_out_shows_degraded_and_recovers)
{
	struct answer a = { 0 };
	gint64 start, after_ms;
	guint timer;

	gate_set(FALSE);
	timer = g_timeout_add(TICK_MS, tick, NULL);
	start = g_get_monotonic_time();
	vr_libvirt_list_running(lv, list_done, &a, answer_destroy);
	wait_for(&a.destroyed, 1, "the listing's timeout");
	after_ms = (a.at_us - start) / 1000;
	cr_assert(g_error_matches(a.error, VR_LIBVIRT_WORKER_ERROR,
				  VR_LIBVIRT_WORKER_ERROR_TIMEOUT),
		  "expected a timeout, got %s", a.error ? a.error->message : "success");
	cr_assert_geq(after_ms, TIMEOUT_MS - 5, "answered after %" G_GINT64_FORMAT " ms", after_ms);
	cr_assert_lt(after_ms, TIMEOUT_MS + MAX_GAP_MS, "answered after %" G_GINT64_FORMAT " ms",
		     after_ms);
	cr_assert_str_eq(vr_libvirt_degraded_reason(lv),
			 "libvirt did not answer list-domains within 300 ms");
	cr_assert(vr_libvirt_is_connected(lv), "a slow libvirt is still connected");
	cr_assert_eq(vr_libvirt_stalls(lv), 1);
	answer_reset(&a);

	/* Degraded for a few probe periods: the main loop keeps its pace,
	 * the probes wait behind the request that hangs. */
	while (g_get_monotonic_time() - start < 2 * VR_LIBVIRT_PROBE_INTERVAL_MS * 1000LL)
		g_main_context_iteration(NULL, TRUE);
	cr_assert_lt(max_gap_us, MAX_GAP_MS * 1000LL,
		     "the main loop's %d ms timer had a gap of %" G_GINT64_FORMAT " ms", TICK_MS,
		     max_gap_us / 1000);
	cr_assert_not_null(vr_libvirt_degraded_reason(lv), "expected it still degraded");
	cr_assert_eq(gate_nr_waiting(), 1, "expected the listing still hanging");
	cr_assert_eq(nr_connected, 1);

	/* libvirt answers again: a probe ends it, the daemon lists anew. */
	gate_set(TRUE);
	wait_for(&nr_connected, 2, "the daemon told to list the domains again");
	cr_assert_null(vr_libvirt_degraded_reason(lv));
	cr_assert_eq(nr_disconnected, 0);
	vr_libvirt_list_running(lv, list_done, &a, answer_destroy);
	wait_for(&a.destroyed, 1, "a listing after the stall");
	cr_assert_null(a.error, "%s", a.error->message);
	cr_assert_str_eq(a.domains, "test");
	answer_reset(&a);
	g_source_remove(timer);
}

/* Whether the connection is degraded: for wait_for(). */
static guint degraded;

static gboolean check_degraded(gpointer data)
{
	(void)data;
	degraded = vr_libvirt_degraded_reason(lv) != NULL;
	return G_SOURCE_CONTINUE;
}

Test(libvirt_conn, the_heartbeat_sees_a_stall_when_nothing_is_asked, .timeout = 30)
{
	gint64 start = g_get_monotonic_time(), after_ms;
	guint timer = g_timeout_add(10, check_degraded, NULL);

	gate_set(FALSE);
	while (!degraded) {
		cr_assert_lt((g_get_monotonic_time() - start) / 1000,
			     VR_LIBVIRT_HEARTBEAT_MS + TIMEOUT_MS + 1000,
			     "expected the heartbeat to see the stall within %d ms",
			     VR_LIBVIRT_HEARTBEAT_MS + TIMEOUT_MS);
		g_main_context_iteration(NULL, TRUE);
	}
	after_ms = (g_get_monotonic_time() - start) / 1000;
	cr_assert_geq(after_ms, TIMEOUT_MS, "degraded after %" G_GINT64_FORMAT " ms", after_ms);
	cr_assert_str_eq(vr_libvirt_degraded_reason(lv),
			 "libvirt did not answer probe within 300 ms");
	gate_set(TRUE);
	wait_for(&nr_connected, 2, "the daemon told to list the domains again");
	cr_assert_null(vr_libvirt_degraded_reason(lv));
	g_source_remove(timer);
}

/* Open the gate after 200 ms, from another thread. */
static gpointer open_later(gpointer data)
{
	(void)data;
	g_usleep(200 * 1000);
	gate_set(TRUE);
	return NULL;
}

Test(libvirt_conn, freed_while_a_request_hangs)
{
	struct answer a = { 0 }, b = { 0 };
	GThread *opener;

	gate_set(FALSE);
	vr_libvirt_list_running(lv, list_done, &a, answer_destroy);
	vr_libvirt_get_running(lv, "00000000-0000-0000-0000-000000000000", get_done, &b,
			       answer_destroy);
	while (gate_nr_waiting() == 0)
		g_usleep(1000);
	opener = g_thread_new("opener", open_later, NULL);
	g_clear_pointer(&lv, vr_libvirt_free);
	g_thread_join(opener);
	for (int i = 0; i < 50; i++)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	cr_assert_eq(a.done + b.done, 0, "expected no callback after free");
	cr_assert_eq(a.destroyed, 1, "expected the listing's destroy run by free");
	cr_assert_eq(b.destroyed, 1, "expected the get's destroy run by free");
}

static void setup_down(void)
{
	main_thread = g_thread_self();
	lv = vr_libvirt_new_full("test:///nonexistent/vreclaim/node.xml", 1000, TIMEOUT_MS, NULL,
				 NULL, &ops, NULL);
	vr_libvirt_start(lv);
}

TestSuite(libvirt_conn_down, .init = setup_down, .fini = teardown,
	  .description = "the libvirt connection when libvirt cannot be reached");

Test(libvirt_conn_down, requests_fail_with_down_and_it_tries_again)
{
	struct answer a = { 0 };

	vr_libvirt_list_running(lv, list_done, &a, answer_destroy);
	wait_for(&a.destroyed, 1, "the listing's answer");
	cr_assert(g_error_matches(a.error, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_DOWN), "%s",
		  a.error ? a.error->message : "no error");
	cr_assert(strstr(a.error->message, "not connected to libvirt at test:///nonexistent"), "%s",
		  a.error->message);
	answer_reset(&a);
	cr_assert_not(vr_libvirt_is_connected(lv));
	cr_assert_null(vr_libvirt_degraded_reason(lv), "unreachable is not degraded");
	cr_assert_eq(nr_connected, 0);
}
