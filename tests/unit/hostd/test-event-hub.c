/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the event hub (hostd/event-hub.c): descriptors in one epoll
 * set and timers in one sequence behind one main-loop source.
 *
 * Covered: one hub per context, shared; a readable socket calls its watch,
 * level-triggered, until it is drained; output and hang-up conditions; a
 * changed condition; a watch removed by another's callback in the same
 * wakeup is not called with the event already collected; a descriptor
 * epoll refuses; timers fire in due order (ties in the order added), not
 * before their time, and not after being cancelled; a timer re-added for a
 * time past by its own callback waits for the next wakeup; the main loop
 * sleeps until the first timer instead of spinning.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "event-hub.h"

/* The longest a test waits for something, us. */
#define WAIT_US (5 * G_USEC_PER_SEC)

static GMainContext *ctx;
static struct vr_event_hub *hub;

static void setup(void)
{
	ctx = g_main_context_new();
	g_main_context_push_thread_default(ctx);
	hub = vr_event_hub_ref_for_context(ctx, NULL);
	cr_assert_not_null(hub);
}

static void teardown(void)
{
	vr_event_hub_unref(hub);
	g_main_context_pop_thread_default(ctx);
	g_main_context_unref(ctx);
}

TestSuite(event_hub, .init = setup, .fini = teardown, .timeout = 30);

/* Run the context until *@flag is set or WAIT_US passed. */
static void run_until(const gboolean *flag)
{
	gint64 end = g_get_monotonic_time() + WAIT_US;

	while (!*flag && g_get_monotonic_time() < end)
		if (!g_main_context_iteration(ctx, FALSE))
			g_usleep(1000);
}

static void make_pair(int sv[2])
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
}

/**
 * struct seen - what a watch callback saw.
 * @calls:	how many times it ran.
 * @cond:	the conditions of every call, or-ed.
 * @bytes:	bytes it read (when it reads).
 * @read_max:	bytes it reads per call (0: it does not read).
 * @remove:	a watch it removes (and forgets) on its first call.
 * @done:	set once @calls reached @want.
 * @want:	see @done.
 */
struct seen {
	guint calls;
	GIOCondition cond;
	gsize bytes;
	gsize read_max;
	struct vr_hub_watch **remove;
	gboolean done;
	guint want;
};

static void on_ready(int fd, GIOCondition cond, gpointer data)
{
	struct seen *s = data;

	s->calls++;
	s->cond |= cond;
	if (s->read_max) {
		char buf[64];
		ssize_t n = read(fd, buf, MIN(sizeof(buf), s->read_max));
		if (n > 0)
			s->bytes += (gsize)n;
	}
	if (s->remove && *s->remove) {
		vr_hub_watch_remove(*s->remove);
		*s->remove = NULL;
	}
	if (s->calls >= s->want)
		s->done = TRUE;
}

Test(event_hub, one_hub_per_context)
{
	struct vr_event_hub *again = vr_event_hub_ref_for_context(ctx, NULL);
	GMainContext *other_ctx = g_main_context_new();
	struct vr_event_hub *other = vr_event_hub_ref_for_context(other_ctx, NULL);

	cr_assert_eq(again, hub, "the same context's hub is shared");
	cr_assert_neq(other, hub, "another context has its own hub");
	vr_event_hub_unref(other);
	vr_event_hub_unref(again);
	g_main_context_unref(other_ctx);
}

Test(event_hub, readable_until_drained)
{
	int sv[2];
	struct seen s = { .read_max = 4, .want = 100 };

	make_pair(sv);
	struct vr_hub_watch *w = vr_event_hub_watch(hub, sv[0], G_IO_IN, on_ready, &s, NULL);
	cr_assert_not_null(w);
	cr_assert_eq(write(sv[1], "0123456789", 10), 10);
	/* Level-triggered: 4 bytes a call, so three calls drain 10 bytes. */
	gint64 end = g_get_monotonic_time() + WAIT_US;
	while (s.bytes < 10 && g_get_monotonic_time() < end)
		g_main_context_iteration(ctx, TRUE);
	cr_assert_eq(s.bytes, 10);
	cr_assert_eq(s.calls, 3, "one call per wakeup while readable (got %u)", s.calls);
	cr_assert_eq(s.cond & ~(GIOCondition)G_IO_IN, 0, "only input was ready");
	/* Drained: no more calls. */
	for (int i = 0; i < 5; i++)
		g_main_context_iteration(ctx, FALSE);
	cr_assert_eq(s.calls, 3);
	vr_hub_watch_remove(w);
	close(sv[0]);
	close(sv[1]);
}

Test(event_hub, output_then_hangup)
{
	int sv[2];
	struct seen s = { .want = 1 };

	make_pair(sv);
	struct vr_hub_watch *w = vr_event_hub_watch(hub, sv[0], G_IO_IN, on_ready, &s, NULL);
	cr_assert_not_null(w);
	for (int i = 0; i < 5; i++)
		g_main_context_iteration(ctx, FALSE);
	cr_assert_eq(s.calls, 0, "nothing to read, no output asked: no call");

	vr_hub_watch_set_condition(w, G_IO_IN | G_IO_OUT);
	cr_assert_eq(vr_hub_watch_condition(w), G_IO_IN | G_IO_OUT);
	run_until(&s.done);
	cr_assert(s.cond & G_IO_OUT, "an empty socket buffer is writable");
	cr_assert_not(s.cond & G_IO_IN);

	vr_hub_watch_set_condition(w, G_IO_IN);
	s = (struct seen){ .want = 1 };
	close(sv[1]);
	run_until(&s.done);
	cr_assert(s.cond & G_IO_HUP, "the peer's close is a hang-up (got 0x%x)", s.cond);
	vr_hub_watch_remove(w);
	close(sv[0]);
}

Test(event_hub, removed_in_the_same_wakeup_is_not_called)
{
	int a[2], b[2];
	struct vr_hub_watch *wa, *wb;
	struct seen sa = { .want = 1, .read_max = 1, .remove = &wb },
		    sb = { .want = 1, .read_max = 1, .remove = &wa };

	make_pair(a);
	make_pair(b);
	wa = vr_event_hub_watch(hub, a[0], G_IO_IN, on_ready, &sa, NULL);
	wb = vr_event_hub_watch(hub, b[0], G_IO_IN, on_ready, &sb, NULL);
	cr_assert_eq(write(a[1], "x", 1), 1);
	cr_assert_eq(write(b[1], "y", 1), 1);
	/* Both ready in the same wakeup: whichever runs first removes the
	 * other, whose event was already collected. */
	g_main_context_iteration(ctx, TRUE);
	for (int i = 0; i < 5; i++)
		g_main_context_iteration(ctx, FALSE);
	cr_assert_eq(sa.calls + sb.calls, 1, "exactly one callback ran (a %u, b %u)", sa.calls,
		     sb.calls);
	vr_hub_watch_remove(wa);
	vr_hub_watch_remove(wb);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

Test(event_hub, refuses_a_regular_file)
{
	g_autoptr(GError) error = NULL;
	struct seen s = { 0 };
	g_autofree char *path = NULL;
	int fd = g_file_open_tmp("test-event-hub-XXXXXX", &path, &error);

	cr_assert_geq(fd, 0, "%s", error ? error->message : "");
	unlink(path);
	cr_assert_null(vr_event_hub_watch(hub, fd, G_IO_IN, on_ready, &s, &error));
	cr_assert_not_null(error);
	cr_assert_not_null(strstr(error->message, "cannot watch descriptor"), "%s", error->message);
	close(fd);
}

/* ---- timers ---- */

/**
 * struct fired - timers that fired.
 * @order:	their tags, in firing order.
 * @at_us:	when each fired.
 * @readds:	how many more times the timer tagged 'r' re-adds itself for
 *		a time past.
 */
struct fired {
	GString *order;
	gint64 at_us[16];
	guint readds;
};

static struct fired fired;

static void on_timer(gpointer data)
{
	char tag = (char)GPOINTER_TO_INT(data);

	if (fired.order->len < G_N_ELEMENTS(fired.at_us))
		fired.at_us[fired.order->len] = g_get_monotonic_time();
	g_string_append_c(fired.order, tag);
	if (tag == 'r' && fired.readds) {
		fired.readds--;
		vr_event_hub_add_timer(hub, 0, on_timer, data);
	}
}

Test(event_hub, timers_in_order_and_cancelled)
{
	gint64 now = g_get_monotonic_time();

	fired = (struct fired){ .order = g_string_new(NULL) };
	vr_event_hub_add_timer(hub, now + 60000, on_timer, GINT_TO_POINTER('c'));
	vr_event_hub_add_timer(hub, now + 20000, on_timer, GINT_TO_POINTER('a'));
	struct vr_hub_timer *gone =
		vr_event_hub_add_timer(hub, now + 10000, on_timer, GINT_TO_POINTER('x'));
	vr_event_hub_add_timer(hub, now + 20000, on_timer, GINT_TO_POINTER('b'));
	cr_assert_eq(vr_hub_timer_due(gone), now + 10000);
	vr_hub_timer_cancel(gone);

	gint64 end = now + WAIT_US;
	while (fired.order->len < 3 && g_get_monotonic_time() < end)
		g_main_context_iteration(ctx, TRUE);
	cr_assert_str_eq(fired.order->str, "abc", "by due time, ties in the order added");
	cr_assert_geq(fired.at_us[0], now + 20000, "not before its time");
	cr_assert_geq(fired.at_us[2], now + 60000, "not before its time");
	g_string_free(fired.order, TRUE);
}

Test(event_hub, a_timer_readded_in_the_past_waits_for_the_next_wakeup)
{
	fired = (struct fired){ .order = g_string_new(NULL), .readds = 3 };
	vr_event_hub_add_timer(hub, 0, on_timer, GINT_TO_POINTER('r'));
	g_main_context_iteration(ctx, FALSE);
	cr_assert_str_eq(fired.order->str, "r", "one firing per wakeup, no loop");
	for (int i = 0; i < 10 && fired.readds; i++)
		g_main_context_iteration(ctx, FALSE);
	g_main_context_iteration(ctx, FALSE);
	cr_assert_str_eq(fired.order->str, "rrrr");
	g_string_free(fired.order, TRUE);
}

Test(event_hub, the_loop_sleeps_until_the_first_timer)
{
	gint64 now = g_get_monotonic_time();
	guint iterations = 0;

	fired = (struct fired){ .order = g_string_new(NULL) };
	vr_event_hub_add_timer(hub, now + 100000, on_timer, GINT_TO_POINTER('t'));
	while (!fired.order->len && g_get_monotonic_time() < now + WAIT_US) {
		g_main_context_iteration(ctx, TRUE);
		iterations++;
	}
	cr_assert_str_eq(fired.order->str, "t");
	cr_assert_geq(fired.at_us[0], now + 100000);
	cr_assert_leq(iterations, 3, "the loop waited for the timer (%u wakeups)", iterations);
	g_string_free(fired.order, TRUE);
}
