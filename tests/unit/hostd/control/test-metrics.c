/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of vreclaimd's metrics (hostd/control/metrics.c): the Prometheus text
 * of a small literal fleet checked byte for byte (label escaping of quotes,
 * backslashes and newlines included), the label escaper, the listen address
 * parser (loopback only, with messages that name what was wrong), and the
 * HTTP server: GET and HEAD /metrics, 404, 405, 400, 431, 500, a slow client
 * closed after the timeout, IPv6 loopback when the machine has it.
 *
 * The server's main loop is pumped by the test in its own thread; clients
 * are raw non-blocking TCP sockets.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control/metrics.h"
#include "test-messages.h"
#include "test-status.h"

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

/* ------------------------------------------------------------------------- */
/* The text                                                                  */
/* ------------------------------------------------------------------------- */

static GPtrArray *fleet_new(void)
{
	GPtrArray *fleet = vr_domain_status_array_new();
	struct vr_domain_status *a = vr_domain_status_new();
	struct vr_domain_status *b = vr_domain_status_new();

	g_strlcpy(a->name, "web1", sizeof(a->name));
	a->managed = TRUE;
	a->agent_state = VR_AGENT_STATE_CONNECTED;
	a->rss_bytes = GIB + 512 * MIB;
	a->rss_start_bytes = 2 * GIB + 512 * MIB;
	a->reclaimed_bytes = GIB;
	a->share_bytes = 64 * MIB;
	a->cold_bytes = 700 * MIB;
	a->reportable_free_bytes = 300 * MIB;
	a->qt_exceeds = 3;
	a->daemon_cpu_us = 1250000;
	a->credit_permille = 1000;
	g_strlcpy(b->name, "db \"main\"\\prod\n2", sizeof(b->name));
	b->agent_state = VR_AGENT_STATE_FAILED;
	b->rss_bytes = 4 * GIB;
	b->swap_bytes = 5 * MIB;
	b->paused = TRUE;
	b->daemon_cpu_us = 7;
	b->credit_permille = 125;
	b->agent_rejected_reports = 42;
	b->agent_log_suppressed = 1234;
	b->degraded = TRUE;
	g_strlcpy(b->degraded_reason, "the QEMU monitor did not answer query-balloon within 2 s",
		  sizeof(b->degraded_reason));
	g_ptr_array_add(fleet, a);
	g_ptr_array_add(fleet, b);
	return fleet;
}

#define DB "domain=\"db \\\"main\\\"\\\\prod\\n2\""

static const char expected_text[] =
	"# HELP vreclaim_up Whether vreclaimd answers (always 1 when it does).\n"
	"# TYPE vreclaim_up gauge\n"
	"vreclaim_up 1\n"
	"# HELP vreclaim_build_info The vreclaimd version, as a label; always 1.\n"
	"# TYPE vreclaim_build_info gauge\n"
	"vreclaim_build_info{version=\"0.1.0\"} 1\n"
	"# HELP vreclaim_uptime_seconds Time since vreclaimd started, seconds.\n"
	"# TYPE vreclaim_uptime_seconds gauge\n"
	"vreclaim_uptime_seconds 3723\n"
	"# HELP vreclaim_libvirt_connected Whether vreclaimd's libvirt connection is up (1) or "
	"not (0).\n"
	"# TYPE vreclaim_libvirt_connected gauge\n"
	"vreclaim_libvirt_connected 1\n"
	"# HELP vreclaim_libvirt_degraded Whether libvirt stopped answering vreclaimd's requests in "
	"time (1) or not (0).\n"
	"# TYPE vreclaim_libvirt_degraded gauge\n"
	"vreclaim_libvirt_degraded 1\n"
	"# HELP vreclaim_libvirt_stalls_total Times libvirt stopped answering vreclaimd's requests "
	"in time.\n"
	"# TYPE vreclaim_libvirt_stalls_total counter\n"
	"vreclaim_libvirt_stalls_total 3\n"
	"# HELP vreclaim_host_needs_memory Whether the host asks for memory back now (1) or not "
	"(0).\n"
	"# TYPE vreclaim_host_needs_memory gauge\n"
	"vreclaim_host_needs_memory 1\n"
	"# HELP vreclaim_host_free_mem_rate_permille The host's free memory rate, per-mille.\n"
	"# TYPE vreclaim_host_free_mem_rate_permille gauge\n"
	"vreclaim_host_free_mem_rate_permille 62\n"
	"# HELP vreclaim_host_memory_state Why the host needs memory or not (1 for the state it is in): below-low is below the low watermark, where vreclaim steps aside.\n"
	"# TYPE vreclaim_host_memory_state gauge\n"
	"vreclaim_host_memory_state{state=\"unknown\"} 0\n"
	"vreclaim_host_memory_state{state=\"always\"} 0\n"
	"vreclaim_host_memory_state{state=\"psi\"} 0\n"
	"vreclaim_host_memory_state{state=\"below-mid\"} 1\n"
	"vreclaim_host_memory_state{state=\"up-to-high\"} 0\n"
	"vreclaim_host_memory_state{state=\"above-mid\"} 0\n"
	"vreclaim_host_memory_state{state=\"above-high\"} 0\n"
	"vreclaim_host_memory_state{state=\"below-low\"} 0\n"
	"# HELP vreclaim_fleet_quota_bytes The fleet's reclaim quota in this window, bytes.\n"
	"# TYPE vreclaim_fleet_quota_bytes gauge\n"
	"vreclaim_fleet_quota_bytes 268435456\n"
	"# HELP vreclaim_reloads_total Configuration reloads since vreclaimd started.\n"
	"# TYPE vreclaim_reloads_total counter\n"
	"vreclaim_reloads_total 2\n"
	"# HELP vreclaim_ticks_total Policy ticks since vreclaimd started.\n"
	"# TYPE vreclaim_ticks_total counter\n"
	"vreclaim_ticks_total 3600\n"
	"# HELP vreclaim_domains Domains vreclaimd knows, managed or not.\n"
	"# TYPE vreclaim_domains gauge\n"
	"vreclaim_domains 2\n"
	"# HELP vreclaim_domain_managed Whether vreclaimd reclaims from the domain (1) or not (0).\n"
	"# TYPE vreclaim_domain_managed gauge\n"
	"vreclaim_domain_managed{domain=\"web1\"} 1\n"
	"vreclaim_domain_managed{" DB "} 0\n"
	"# HELP vreclaim_domain_rss_bytes Resident size of the domain's QEMU process, bytes.\n"
	"# TYPE vreclaim_domain_rss_bytes gauge\n"
	"vreclaim_domain_rss_bytes{domain=\"web1\"} 1610612736\n"
	"vreclaim_domain_rss_bytes{" DB "} 4294967296\n"
	"# HELP vreclaim_domain_rss_start_bytes Resident size of the domain's QEMU process when it "
	"became managed, bytes.\n"
	"# TYPE vreclaim_domain_rss_start_bytes gauge\n"
	"vreclaim_domain_rss_start_bytes{domain=\"web1\"} 2684354560\n"
	"vreclaim_domain_rss_start_bytes{" DB "} 0\n"
	"# HELP vreclaim_domain_swap_bytes Swapped-out size of the domain's QEMU process, bytes.\n"
	"# TYPE vreclaim_domain_swap_bytes gauge\n"
	"vreclaim_domain_swap_bytes{domain=\"web1\"} 0\n"
	"vreclaim_domain_swap_bytes{" DB "} 5242880\n"
	"# HELP vreclaim_domain_reportable_free_bytes Free memory in the guest in blocks that free "
	"page reporting hands to the host, bytes; 0 when not known.\n"
	"# TYPE vreclaim_domain_reportable_free_bytes gauge\n"
	"vreclaim_domain_reportable_free_bytes{domain=\"web1\"} 314572800\n"
	"vreclaim_domain_reportable_free_bytes{" DB "} 0\n"
	"# HELP vreclaim_domain_reclaimed_bytes_total Bytes reclaimed from the domain since it "
	"became managed.\n"
	"# TYPE vreclaim_domain_reclaimed_bytes_total counter\n"
	"vreclaim_domain_reclaimed_bytes_total{domain=\"web1\"} 1073741824\n"
	"vreclaim_domain_reclaimed_bytes_total{" DB "} 0\n"
	"# HELP vreclaim_domain_share_bytes The domain's share of the fleet quota in this window, "
	"bytes.\n"
	"# TYPE vreclaim_domain_share_bytes gauge\n"
	"vreclaim_domain_share_bytes{domain=\"web1\"} 67108864\n"
	"vreclaim_domain_share_bytes{" DB "} 0\n"
	"# HELP vreclaim_domain_cold_bytes Bytes eligible as cold in the domain's last access "
	"picture, scaled by the part of the guest in use.\n"
	"# TYPE vreclaim_domain_cold_bytes gauge\n"
	"vreclaim_domain_cold_bytes{domain=\"web1\"} 734003200\n"
	"vreclaim_domain_cold_bytes{" DB "} 0\n"
	"# HELP vreclaim_domain_qt_exceeds_total Times the domain's reclaim quota ran out.\n"
	"# TYPE vreclaim_domain_qt_exceeds_total counter\n"
	"vreclaim_domain_qt_exceeds_total{domain=\"web1\"} 3\n"
	"vreclaim_domain_qt_exceeds_total{" DB "} 0\n"
	"# HELP vreclaim_domain_cpu_seconds_total CPU time vreclaimd spent on the domain, seconds.\n"
	"# TYPE vreclaim_domain_cpu_seconds_total counter\n"
	"vreclaim_domain_cpu_seconds_total{domain=\"web1\"} 1.250000\n"
	"vreclaim_domain_cpu_seconds_total{" DB "} 0.000007\n"
	"# HELP vreclaim_domain_agent_connected Whether the domain's guest agent is connected (1) "
	"or not (0).\n"
	"# TYPE vreclaim_domain_agent_connected gauge\n"
	"vreclaim_domain_agent_connected{domain=\"web1\"} 1\n"
	"vreclaim_domain_agent_connected{" DB "} 0\n"
	"# HELP vreclaim_domain_paused Whether reclaim is paused for the domain (1) or not (0).\n"
	"# TYPE vreclaim_domain_paused gauge\n"
	"vreclaim_domain_paused{domain=\"web1\"} 0\n"
	"vreclaim_domain_paused{" DB "} 1\n"
	"# HELP vreclaim_domain_fleet_credit_ratio The domain's fleet credit, 0.125 to 1: the part "
	"of its share it is trusted with before the domains that give back are served.\n"
	"# TYPE vreclaim_domain_fleet_credit_ratio gauge\n"
	"vreclaim_domain_fleet_credit_ratio{domain=\"web1\"} 1.000\n"
	"vreclaim_domain_fleet_credit_ratio{" DB "} 0.125\n"
	"# HELP vreclaim_domain_agent_rejected_reports_total Stats, pictures and replies of the "
	"domain's agent rejected as impossible.\n"
	"# TYPE vreclaim_domain_agent_rejected_reports_total counter\n"
	"vreclaim_domain_agent_rejected_reports_total{domain=\"web1\"} 0\n"
	"vreclaim_domain_agent_rejected_reports_total{" DB "} 42\n"
	"# HELP vreclaim_domain_agent_log_suppressed_total Log messages about the domain's agent "
	"held back by the rate limit.\n"
	"# TYPE vreclaim_domain_agent_log_suppressed_total counter\n"
	"vreclaim_domain_agent_log_suppressed_total{domain=\"web1\"} 0\n"
	"vreclaim_domain_agent_log_suppressed_total{" DB "} 1234\n"
	"# HELP vreclaim_domain_degraded Whether the domain's QEMU monitor stalls (1: a command ran "
	"past its deadline) or not (0).\n"
	"# TYPE vreclaim_domain_degraded gauge\n"
	"vreclaim_domain_degraded{domain=\"web1\"} 0\n"
	"vreclaim_domain_degraded{" DB "} 1\n";

Test(text, renders_a_small_fleet_exactly)
{
	g_autoptr(GPtrArray) fleet = fleet_new();
	struct vr_daemon_status d;

	daemon_fill(&d);
	g_autofree char *text = vr_metrics_render(fleet, &d);
	if (strcmp(text, expected_text)) {
		/* Point at the first difference: the texts are long. */
		gsize i = 0;
		while (text[i] && text[i] == expected_text[i])
			i++;
		cr_assert_fail(
			"the text differs at byte %zu:\nexpected: ...%.80s\ngot:      ...%.80s", i,
			expected_text + (i > 20 ? i - 20 : 0), text + (i > 20 ? i - 20 : 0));
	}
}

Test(text, an_empty_fleet_still_has_every_family)
{
	g_autoptr(GPtrArray) none = vr_domain_status_array_new();
	struct vr_daemon_status d;

	daemon_fill(&d);
	g_autofree char *text = vr_metrics_render(none, &d);
	cr_assert(strstr(text, "vreclaim_domains 0\n"), "%s", text);
	cr_assert(strstr(text, "# TYPE vreclaim_domain_paused gauge\n"),
		  "the families are declared even without domains");
	cr_assert_null(strstr(text, "{domain="), "no samples without domains");
}

Test(text, every_sample_follows_its_type_line)
{
	g_autoptr(GPtrArray) fleet = fleet_new();
	struct vr_daemon_status d;

	daemon_fill(&d);
	g_autofree char *text = vr_metrics_render(fleet, &d);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_autofree char *family = NULL;
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (char **l = lines; *l && **l; l++) {
		if (g_str_has_prefix(*l, "# TYPE ")) {
			g_auto(GStrv) parts = g_strsplit(*l + 7, " ", 2);
			g_free(family);
			family = g_strdup(parts[0]);
			cr_assert(g_hash_table_add(seen, g_strdup(family)), "%s declared twice",
				  family);
			if (!strcmp(parts[1], "counter"))
				cr_assert(g_str_has_suffix(family, "_total"),
					  "the counter %s must end in _total", family);
			continue;
		}
		if (g_str_has_prefix(*l, "#"))
			continue;
		cr_assert_not_null(family, "a sample before any # TYPE: %s", *l);
		gsize n = strlen(family);
		cr_assert(!strncmp(*l, family, n) && ((*l)[n] == ' ' || (*l)[n] == '{'),
			  "the sample '%s' is not of the family %s", *l, family);
	}
}

struct escape_case {
	char in[32];
	char out[48];
};

static struct escape_case escape_cases[] = {
	{ "web1", "web1" },
	{ "a\"b", "a\\\"b" },
	{ "a\\b", "a\\\\b" },
	{ "a\nb", "a\\nb" },
	{ "\\\"\n", "\\\\\\\"\\n" },
	{ "caf\xc3\xa9 \t{}=,", "caf\xc3\xa9 \t{}=," },
	{ "bad\xff", "bad\xef\xbf\xbd" },
	{ "", "" },
};

ParameterizedTestParameters(text, escapes_label_values)
{
	return cr_make_param_array(struct escape_case, escape_cases, G_N_ELEMENTS(escape_cases));
}

ParameterizedTest(struct escape_case *c, text, escapes_label_values)
{
	g_autofree char *got = vr_metrics_escape_label(c->in);

	cr_assert_str_eq(got, c->out, "escaping '%s': expected '%s', got '%s'", c->in, c->out, got);
}

/* ------------------------------------------------------------------------- */
/* The listen address                                                        */
/* ------------------------------------------------------------------------- */

struct address_case {
	char text[48];
	bool ok;
	char want[80]; /* ok: "ADDRESS PORT"; else words the message has */
};

static struct address_case address_cases[] = {
	{ "127.0.0.1:9843", true, "127.0.0.1 9843" },
	{ "127.1.2.3:80", true, "127.1.2.3 80" },
	{ "[::1]:9843", true, "::1 9843" },
	{ "127.0.0.1:0", true, "127.0.0.1 0" },
	{ "0.0.0.0:9843", false, "0.0.0.0 is not a loopback address" },
	{ "192.168.1.10:9843", false, "192.168.1.10 is not a loopback" },
	{ "[::]:9843", false, ":: is not a loopback" },
	{ "[fe80::1]:9843", false, "not a loopback" },
	{ "localhost:9843", false, "'localhost' is not an IP address" },
	{ "127.0.0.1", false, "expected ADDRESS:PORT" },
	{ "::1:9843", false, "expected ADDRESS:PORT;brackets" },
	{ "[::1]", false, "expected [ADDRESS]:PORT" },
	{ "[::1]9843", false, "expected [ADDRESS]:PORT" },
	{ "127.0.0.1:65536", false, "0..65535;65536" },
	{ "127.0.0.1:", false, "0..65535" },
	{ "127.0.0.1:http", false, "0..65535;http" },
	{ "127.0.0.1:-1", false, "0..65535" },
	{ "", false, "expected ADDRESS:PORT" },
};

ParameterizedTestParameters(address, parses_loopback_addresses_only)
{
	return cr_make_param_array(struct address_case, address_cases, G_N_ELEMENTS(address_cases));
}

ParameterizedTest(struct address_case *c, address, parses_loopback_addresses_only)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(GSocketAddress) sa = vr_metrics_parse_address(c->text, &err);

	if (!c->ok) {
		cr_assert_null(sa, "'%s': expected a refusal", c->text);
		cr_assert(g_error_matches(err, VR_METRICS_ERROR, VR_METRICS_ERROR_ADDRESS),
			  "'%s': expected an address error", c->text);
		g_auto(GStrv) words = g_strsplit(c->want, ";", -1);
		for (char **w = words; *w; w++)
			cr_assert(strstr(err->message, *w), "'%s': expected '%s' in: %s", c->text,
				  *w, err->message);
		cr_assert(strstr(err->message, c->text), "'%s': the message names the text: %s",
			  c->text, err->message);
		return;
	}
	cr_assert_not_null(sa, "'%s': %s", c->text, err ? err->message : "?");
	GInetSocketAddress *isa = G_INET_SOCKET_ADDRESS(sa);
	g_autofree char *host = g_inet_address_to_string(g_inet_socket_address_get_address(isa));
	g_autofree char *got = g_strdup_printf("%s %u", host, g_inet_socket_address_get_port(isa));
	cr_assert_str_eq(got, c->want, "'%s': expected %s, got %s", c->text, c->want, got);
}

/* ------------------------------------------------------------------------- */
/* The HTTP server                                                           */
/* ------------------------------------------------------------------------- */

static struct vr_metrics_server *server;
static gboolean fail_status;

static gboolean fake_status(gpointer user, GPtrArray **domains, struct vr_daemon_status *daemon,
			    GError **error)
{
	(void)user;
	if (fail_status) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt is away");
		return FALSE;
	}
	*domains = fleet_new();
	daemon_fill(daemon);
	return TRUE;
}

static void http_setup(void)
{
	fail_status = FALSE;
}

static void http_teardown(void)
{
	g_clear_pointer(&server, vr_metrics_server_free);
	while (g_main_context_iteration(NULL, FALSE))
		;
}

TestSuite(http, .init = http_setup, .fini = http_teardown);

static void start(const char *address, guint timeout_ms)
{
	g_autoptr(GError) err = NULL;

	server = vr_metrics_server_new(address, timeout_ms, fake_status, NULL, &err);
	cr_assert_not_null(server, "cannot serve on %s: %s", address, err ? err->message : "?");
	cr_assert_neq(vr_metrics_server_get_port(server), 0, "port 0 picks a free port");
}

static int tcp_connect(int family)
{
	int fd = socket(family, SOCK_STREAM, 0);
	int rc;

	cr_assert(fd >= 0);
	if (family == AF_INET) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(vr_metrics_server_get_port(server)) };
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	} else {
		struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
					   .sin6_port = htons(vr_metrics_server_get_port(server)),
					   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	cr_assert_eq(rc, 0, "connect: %s", g_strerror(errno));
	cr_assert_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	return fd;
}

/* Everything the server sends on @fd until it closes; 5 s at most. */
static char *read_all(int fd)
{
	GString *in = g_string_new(NULL);
	gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

	for (;;) {
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n == 0)
			break;
		if (n < 0 && errno == ECONNRESET)
			cr_assert_fail("the server reset the connection after: %s", in->str);
		if (n < 0) {
			cr_assert(errno == EAGAIN, "recv: %s", g_strerror(errno));
			cr_assert_lt(g_get_monotonic_time(), end, "not closed within 5 s: %s",
				     in->str);
			if (!g_main_context_iteration(NULL, FALSE))
				g_usleep(500);
			continue;
		}
		g_string_append_len(in, buf, n);
	}
	close(fd);
	return g_string_free(in, FALSE);
}

/* Send @request on a new connection; the whole response. */
static char *http(const char *request)
{
	int fd = tcp_connect(AF_INET);
	gsize len = strlen(request);

	cr_assert_eq(send(fd, request, len, MSG_NOSIGNAL), (ssize_t)len);
	return read_all(fd);
}

static void expect_status(const char *response, const char *status_line)
{
	cr_assert(g_str_has_prefix(response, status_line), "expected '%s', got:\n%s", status_line,
		  response);
	cr_assert(strstr(response, "\r\nConnection: close\r\n"), "no Connection: close:\n%s",
		  response);
}

/* The body after the head, and the Content-Length the head gives. */
static const char *body_of(const char *response, gsize *content_length)
{
	const char *cl = strstr(response, "\r\nContent-Length: ");
	const char *body = strstr(response, "\r\n\r\n");

	cr_assert(cl && body, "no Content-Length or no head end:\n%s", response);
	*content_length = (gsize)g_ascii_strtoull(cl + 18, NULL, 10);
	return body + 4;
}

Test(http, get_metrics_is_the_rendered_text)
{
	start("127.0.0.1:0", 0);
	g_autofree char *r =
		http("GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n");
	expect_status(r, "HTTP/1.0 200 OK\r\n");
	cr_assert(strstr(r, "\r\nContent-Type: " VR_METRICS_CONTENT_TYPE "\r\n"), "%s", r);
	g_autoptr(GPtrArray) fleet = fleet_new();
	struct vr_daemon_status d;
	daemon_fill(&d);
	g_autofree char *want = vr_metrics_render(fleet, &d);
	gsize n = 0;
	const char *body = body_of(r, &n);
	cr_assert_eq(n, strlen(want), "Content-Length %zu, the text has %zu", n, strlen(want));
	cr_assert_str_eq(body, want);
}

Test(http, a_query_string_and_bare_newlines_are_fine)
{
	start("127.0.0.1:0", 0);
	g_autofree char *r = http("GET /metrics?name[]=x HTTP/1.0\n\n");
	expect_status(r, "HTTP/1.0 200 OK\r\n");
}

Test(http, head_has_no_body)
{
	start("127.0.0.1:0", 0);
	g_autofree char *r = http("HEAD /metrics HTTP/1.0\r\n\r\n");
	expect_status(r, "HTTP/1.0 200 OK\r\n");
	gsize n = 0;
	const char *body = body_of(r, &n);
	cr_assert_gt(n, 1000, "HEAD gives GET's Content-Length");
	cr_assert_str_empty(body, "HEAD sent a body: %.60s", body);
}

struct refusal_case {
	char name[32];
	char request[96];
	char status_line[48];
	char header[32]; /* a header line the response must have, or "" */
};

static struct refusal_case refusal_cases[] = {
	{ "another path", "GET / HTTP/1.0\r\n\r\n", "HTTP/1.0 404 Not Found\r\n", "" },
	{ "a longer path", "GET /metrics/x HTTP/1.0\r\n\r\n", "HTTP/1.0 404 Not Found\r\n", "" },
	{ "POST", "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n",
	  "HTTP/1.0 405 Method Not Allowed\r\n", "\r\nAllow: GET, HEAD\r\n" },
	{ "DELETE", "DELETE /metrics HTTP/1.1\r\n\r\n", "HTTP/1.0 405 Method Not Allowed\r\n",
	  "\r\nAllow: GET, HEAD\r\n" },
	{ "no version", "GET /metrics\r\n\r\n", "HTTP/1.0 400 Bad Request\r\n", "" },
	{ "HTTP/2", "GET /metrics HTTP/2.0\r\n\r\n", "HTTP/1.0 400 Bad Request\r\n", "" },
	{ "a relative target", "GET metrics HTTP/1.0\r\n\r\n", "HTTP/1.0 400 Bad Request\r\n", "" },
	{ "garbage", "\x16\x03\x01 hello\r\n\r\n", "HTTP/1.0 400 Bad Request\r\n", "" },
	{ "two spaces", "GET  /metrics HTTP/1.0\r\n\r\n", "HTTP/1.0 400 Bad Request\r\n", "" },
};

ParameterizedTestParameters(http, refuses_what_it_does_not_serve)
{
	return cr_make_param_array(struct refusal_case, refusal_cases, G_N_ELEMENTS(refusal_cases));
}

ParameterizedTest(struct refusal_case *c, http, refuses_what_it_does_not_serve)
{
	start("127.0.0.1:0", 0);
	g_autofree char *r = http(c->request);
	expect_status(r, c->status_line);
	if (*c->header)
		cr_assert(strstr(r, c->header), "%s: expected the header '%s' in:\n%s", c->name,
			  c->header, r);
	gsize n = 0;
	const char *body = body_of(r, &n);
	cr_assert_eq(n, strlen(body), "%s: Content-Length %zu, body %zu bytes", c->name, n,
		     strlen(body));
}

Test(http, refuses_an_oversized_request)
{
	start("127.0.0.1:0", 0);
	int fd = tcp_connect(AF_INET);
	GString *req = g_string_new("GET /metrics HTTP/1.0\r\n");

	while (req->len <= VR_METRICS_MAX_REQUEST_BYTES)
		g_string_append(req, "X-Filler: 0123456789012345678901234567890123456789\r\n");
	cr_assert_eq(send(fd, req->str, req->len, MSG_NOSIGNAL), (ssize_t)req->len);
	g_string_free(req, TRUE);
	g_autofree char *r = read_all(fd);
	expect_status(r, "HTTP/1.0 431 Request Header Fields Too Large\r\n");
}

Test(http, a_failed_status_is_500)
{
	fail_status = TRUE;
	start("127.0.0.1:0", 0);
	g_autofree char *r = http("GET /metrics HTTP/1.0\r\n\r\n");
	expect_status(r, "HTTP/1.0 500 Internal Server Error\r\n");
	cr_assert(strstr(r, "libvirt is away"), "the body says why:\n%s", r);
}

Test(http, a_slow_client_is_closed_after_the_timeout)
{
	start("127.0.0.1:0", 200);
	int slow = tcp_connect(AF_INET);
	gint64 t0 = g_get_monotonic_time();

	cr_assert_eq(send(slow, "GET /met", 8, MSG_NOSIGNAL), 8);
	/* Another client is served meanwhile. */
	g_autofree char *r = http("GET /metrics HTTP/1.0\r\n\r\n");
	expect_status(r, "HTTP/1.0 200 OK\r\n");
	g_autofree char *late = read_all(slow);
	gint64 waited_ms = (g_get_monotonic_time() - t0) / 1000;
	cr_assert(g_str_has_prefix(late, "HTTP/1.0 408 Request Timeout\r\n"),
		  "expected a 408, got: %s", late);
	cr_assert_geq(waited_ms, 190, "closed after %" G_GINT64_FORMAT " ms, before the timeout",
		      waited_ms);
	cr_assert_lt(waited_ms, 2000, "closed only after %" G_GINT64_FORMAT " ms", waited_ms);
}

Test(http, a_client_that_leaves_early_disturbs_nobody)
{
	start("127.0.0.1:0", 0);
	for (int i = 0; i < 3; i++) {
		int fd = tcp_connect(AF_INET);
		cr_assert_eq(send(fd, "GET /metrics HTTP/1.0\r\n", 23, MSG_NOSIGNAL), 23);
		close(fd);
	}
	g_autofree char *r = http("GET /metrics HTTP/1.0\r\n\r\n");
	expect_status(r, "HTTP/1.0 200 OK\r\n");
}

Test(http, refuses_connections_beyond_its_limit)
{
	int fds[VR_METRICS_MAX_CONNECTIONS];

	start("127.0.0.1:0", 0);
	for (int i = 0; i < VR_METRICS_MAX_CONNECTIONS; i++)
		fds[i] = tcp_connect(AF_INET);
	int extra = tcp_connect(AF_INET);
	g_autofree char *r = read_all(extra);
	expect_status(r, "HTTP/1.0 503 Service Unavailable\r\n");
	for (int i = 0; i < VR_METRICS_MAX_CONNECTIONS; i++)
		close(fds[i]);
}

Test(http, serves_ipv6_loopback)
{
	g_autoptr(GError) err = NULL;

	server = vr_metrics_server_new("[::1]:0", 0, fake_status, NULL, &err);
	if (!server)
		cr_skip_test("no IPv6 loopback on this machine: %s", err->message);
	int fd = tcp_connect(AF_INET6);
	cr_assert_eq(send(fd, "GET /metrics HTTP/1.0\r\n\r\n", 25, MSG_NOSIGNAL), 25);
	g_autofree char *r = read_all(fd);
	expect_status(r, "HTTP/1.0 200 OK\r\n");
}

Test(http, names_the_address_it_cannot_use)
{
	g_autoptr(GError) err = NULL;

	start("127.0.0.1:0", 0);
	g_autofree char *busy = g_strdup_printf("127.0.0.1:%u", vr_metrics_server_get_port(server));
	cr_assert_null(vr_metrics_server_new(busy, 0, fake_status, NULL, &err),
		       "two servers on one port");
	cr_assert(g_error_matches(err, VR_METRICS_ERROR, VR_METRICS_ERROR_IO));
	cr_assert(strstr(err->message, busy), "the message names %s: %s", busy, err->message);
	g_clear_error(&err);
	cr_assert_null(vr_metrics_server_new("10.0.0.1:9843", 0, fake_status, NULL, &err));
	cr_assert(g_error_matches(err, VR_METRICS_ERROR, VR_METRICS_ERROR_ADDRESS));
	cr_assert(msg_has_any(err->message, "not a loopback"), "%s", err->message);
}
