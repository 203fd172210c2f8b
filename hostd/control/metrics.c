// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vreclaimd's Prometheus metrics and their HTTP server; see metrics.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "control/metrics.h"

#include <errno.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control/stream-server.h"
#include "host-watermarks.h"

/* clang-format off */
G_DEFINE_QUARK(vr-metrics-error-quark, vr_metrics_error)
/* clang-format on */

/* ---- the exposition text ---- */

char *vr_metrics_escape_label(const char *value)
{
	g_autofree char *valid = g_utf8_make_valid(value, -1);
	GString *out = g_string_sized_new(strlen(valid) + 8);

	for (const char *p = valid; *p; p++) {
		switch (*p) {
		case '\\':
			g_string_append(out, "\\\\");
			break;
		case '"':
			g_string_append(out, "\\\"");
			break;
		case '\n':
			g_string_append(out, "\\n");
			break;
		default:
			g_string_append_c(out, *p);
			break;
		}
	}
	return g_string_free(out, FALSE);
}

/* "# HELP" and "# TYPE" of one family. */
static void family(GString *out, const char *name, const char *type, const char *help)
{
	g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_u64(GString *out, const char *name, uint64_t v)
{
	g_string_append_printf(out, "%s %" G_GUINT64_FORMAT "\n", name, (guint64)v);
}

enum domain_value {
	DOMAIN_MANAGED,
	DOMAIN_RSS,
	DOMAIN_RSS_START,
	DOMAIN_SWAP,
	DOMAIN_REPORTABLE_FREE,
	DOMAIN_RECLAIMED,
	DOMAIN_SHARE,
	DOMAIN_COLD,
	DOMAIN_QT_EXCEEDS,
	DOMAIN_CPU_SECONDS,
	DOMAIN_AGENT_CONNECTED,
	DOMAIN_PAUSED,
	DOMAIN_CREDIT,
	DOMAIN_AGENT_REJECTED,
	DOMAIN_AGENT_LOG_SUPPRESSED,
	DOMAIN_DEGRADED,
};

/**
 * struct domain_family - one per-domain metric.
 * @name:	the metric's name.
 * @type:	"gauge" or "counter" (whose names end in _total).
 * @help:	its # HELP text (no '\' or newline).
 * @value:	which value of struct vr_domain_status.
 */
struct domain_family {
	const char *name;
	const char *type;
	const char *help;
	enum domain_value value;
};

static const struct domain_family domain_families[] = {
	{ "vreclaim_domain_managed", "gauge",
	  "Whether vreclaimd reclaims from the domain (1) or not (0).", DOMAIN_MANAGED },
	{ "vreclaim_domain_rss_bytes", "gauge",
	  "Resident size of the domain's QEMU process, bytes.", DOMAIN_RSS },
	{ "vreclaim_domain_rss_start_bytes", "gauge",
	  "Resident size of the domain's QEMU process when it became managed, bytes.",
	  DOMAIN_RSS_START },
	{ "vreclaim_domain_swap_bytes", "gauge",
	  "Swapped-out size of the domain's QEMU process, bytes.", DOMAIN_SWAP },
	{ "vreclaim_domain_reportable_free_bytes", "gauge",
	  "Free memory in the guest in blocks that free page reporting hands to the host, "
	  "bytes; 0 when not known.",
	  DOMAIN_REPORTABLE_FREE },
	{ "vreclaim_domain_reclaimed_bytes_total", "counter",
	  "Bytes reclaimed from the domain since it became managed.", DOMAIN_RECLAIMED },
	{ "vreclaim_domain_share_bytes", "gauge",
	  "The domain's share of the fleet quota in this window, bytes.", DOMAIN_SHARE },
	{ "vreclaim_domain_cold_bytes", "gauge",
	  "Bytes eligible as cold in the domain's last access picture, "
	  "scaled by the part of the guest in use.",
	  DOMAIN_COLD },
	{ "vreclaim_domain_qt_exceeds_total", "counter",
	  "Times the domain's reclaim quota ran out.", DOMAIN_QT_EXCEEDS },
	{ "vreclaim_domain_cpu_seconds_total", "counter",
	  "CPU time vreclaimd spent on the domain, seconds.", DOMAIN_CPU_SECONDS },
	{ "vreclaim_domain_agent_connected", "gauge",
	  "Whether the domain's guest agent is connected (1) or not (0).", DOMAIN_AGENT_CONNECTED },
	{ "vreclaim_domain_paused", "gauge",
	  "Whether reclaim is paused for the domain (1) or not (0).", DOMAIN_PAUSED },
	{ "vreclaim_domain_fleet_credit_ratio", "gauge",
	  "The domain's fleet credit, 0.125 to 1: the part of its share it is trusted with "
	  "before the domains that give back are served.",
	  DOMAIN_CREDIT },
	{ "vreclaim_domain_agent_rejected_reports_total", "counter",
	  "Stats, pictures and replies of the domain's agent rejected as impossible.",
	  DOMAIN_AGENT_REJECTED },
	{ "vreclaim_domain_agent_log_suppressed_total", "counter",
	  "Log messages about the domain's agent held back by the rate limit.",
	  DOMAIN_AGENT_LOG_SUPPRESSED },
	{ "vreclaim_domain_degraded", "gauge",
	  "Whether the domain's QEMU monitor stalls (1: a command ran past its deadline) or not (0).",
	  DOMAIN_DEGRADED },
};

static void domain_sample(GString *out, const struct domain_family *f,
			  const struct vr_domain_status *d)
{
	g_autofree char *label = vr_metrics_escape_label(d->name);
	uint64_t v = 0;

	g_string_append_printf(out, "%s{domain=\"%s\"} ", f->name, label);
	switch (f->value) {
	case DOMAIN_MANAGED:
		v = d->managed ? 1 : 0;
		break;
	case DOMAIN_RSS:
		v = d->rss_bytes;
		break;
	case DOMAIN_RSS_START:
		v = d->rss_start_bytes;
		break;
	case DOMAIN_SWAP:
		v = d->swap_bytes;
		break;
	case DOMAIN_REPORTABLE_FREE:
		v = d->reportable_free_bytes;
		break;
	case DOMAIN_RECLAIMED:
		v = d->reclaimed_bytes;
		break;
	case DOMAIN_SHARE:
		v = d->share_bytes;
		break;
	case DOMAIN_COLD:
		v = d->cold_bytes;
		break;
	case DOMAIN_QT_EXCEEDS:
		v = d->qt_exceeds;
		break;
	case DOMAIN_CPU_SECONDS:
		/* Exact decimal seconds, whatever the locale. */
		g_string_append_printf(out, "%" G_GUINT64_FORMAT ".%06" G_GUINT64_FORMAT "\n",
				       (guint64)(d->daemon_cpu_us / G_USEC_PER_SEC),
				       (guint64)(d->daemon_cpu_us % G_USEC_PER_SEC));
		return;
	case DOMAIN_AGENT_CONNECTED:
		v = d->agent_state == VR_AGENT_STATE_CONNECTED ? 1 : 0;
		break;
	case DOMAIN_PAUSED:
		v = d->paused ? 1 : 0;
		break;
	case DOMAIN_CREDIT:
		/* Exact decimal, whatever the locale. */
		g_string_append_printf(out, "%u.%03u\n", MIN(d->credit_permille, 1000U) / 1000,
				       MIN(d->credit_permille, 1000U) % 1000);
		return;
	case DOMAIN_AGENT_REJECTED:
		v = d->agent_rejected_reports;
		break;
	case DOMAIN_AGENT_LOG_SUPPRESSED:
		v = d->agent_log_suppressed;
		break;
	case DOMAIN_DEGRADED:
		v = d->degraded ? 1 : 0;
		break;
	}
	g_string_append_printf(out, "%" G_GUINT64_FORMAT "\n", (guint64)v);
}

char *vr_metrics_render(const GPtrArray *domains, const struct vr_daemon_status *daemon)
{
	GString *out = g_string_sized_new(4096);
	g_autofree char *version = vr_metrics_escape_label(daemon->version);

	family(out, "vreclaim_up", "gauge", "Whether vreclaimd answers (always 1 when it does).");
	sample_u64(out, "vreclaim_up", 1);
	family(out, "vreclaim_build_info", "gauge", "The vreclaimd version, as a label; always 1.");
	g_string_append_printf(out, "vreclaim_build_info{version=\"%s\"} 1\n", version);
	family(out, "vreclaim_uptime_seconds", "gauge", "Time since vreclaimd started, seconds.");
	sample_u64(out, "vreclaim_uptime_seconds", daemon->uptime_ms / 1000);
	family(out, "vreclaim_libvirt_connected", "gauge",
	       "Whether vreclaimd's libvirt connection is up (1) or not (0).");
	sample_u64(out, "vreclaim_libvirt_connected", daemon->libvirt_connected ? 1 : 0);
	family(out, "vreclaim_libvirt_degraded", "gauge",
	       "Whether libvirt stopped answering vreclaimd's requests in time (1) or not (0).");
	sample_u64(out, "vreclaim_libvirt_degraded", daemon->libvirt_degraded ? 1 : 0);
	family(out, "vreclaim_libvirt_stalls_total", "counter",
	       "Times libvirt stopped answering vreclaimd's requests in time.");
	sample_u64(out, "vreclaim_libvirt_stalls_total", daemon->libvirt_stalls);
	family(out, "vreclaim_host_needs_memory", "gauge",
	       "Whether the host asks for memory back now (1) or not (0).");
	sample_u64(out, "vreclaim_host_needs_memory", daemon->host_needs_memory ? 1 : 0);
	family(out, "vreclaim_host_free_mem_rate_permille", "gauge",
	       "The host's free memory rate, per-mille.");
	sample_u64(out, "vreclaim_host_free_mem_rate_permille", daemon->free_mem_rate_permille);
	family(out, "vreclaim_host_memory_state", "gauge",
	       "Why the host needs memory or not (1 for the state it is in): below-low is "
	       "below the low watermark, where vreclaim steps aside.");
	for (guint s = 0; s < VR_HOST_MEMORY_NR_STATES; s++) {
		const char *name = vr_host_memory_state_name(s);

		g_string_append_printf(out, "vreclaim_host_memory_state{state=\"%s\"} %d\n", name,
				       strcmp(name, daemon->host_memory_state) == 0);
	}
	family(out, "vreclaim_fleet_quota_bytes", "gauge",
	       "The fleet's reclaim quota in this window, bytes.");
	sample_u64(out, "vreclaim_fleet_quota_bytes", daemon->fleet_quota_bytes);
	family(out, "vreclaim_reloads_total", "counter",
	       "Configuration reloads since vreclaimd started.");
	sample_u64(out, "vreclaim_reloads_total", daemon->reloads);
	family(out, "vreclaim_ticks_total", "counter", "Policy ticks since vreclaimd started.");
	sample_u64(out, "vreclaim_ticks_total", daemon->ticks);
	family(out, "vreclaim_domains", "gauge", "Domains vreclaimd knows, managed or not.");
	sample_u64(out, "vreclaim_domains", domains ? domains->len : 0);
	for (guint f = 0; f < G_N_ELEMENTS(domain_families); f++) {
		family(out, domain_families[f].name, domain_families[f].type,
		       domain_families[f].help);
		for (guint i = 0; domains && i < domains->len; i++)
			domain_sample(out, &domain_families[f], g_ptr_array_index(domains, i));
	}
	return g_string_free(out, FALSE);
}

/* ---- the listen address ---- */

GSocketAddress *vr_metrics_parse_address(const char *text, GError **error)
{
	g_autofree char *host = NULL;
	g_autoptr(GInetAddress) addr = NULL;
	const char *port_text;
	guint64 port;

	if (text[0] == '[') {
		const char *close = strstr(text, "]:");

		if (!close) {
			g_set_error(error, VR_METRICS_ERROR, VR_METRICS_ERROR_ADDRESS,
				    "'%s': expected [ADDRESS]:PORT, e.g. [::1]:9843", text);
			return NULL;
		}
		host = g_strndup(text + 1, (gsize)(close - text - 1));
		port_text = close + 2;
	} else {
		const char *colon = strrchr(text, ':');

		if (!colon || memchr(text, ':', (gsize)(colon - text))) {
			g_set_error(error, VR_METRICS_ERROR, VR_METRICS_ERROR_ADDRESS,
				    "'%s': expected ADDRESS:PORT, e.g. 127.0.0.1:9843 "
				    "(an IPv6 address in brackets: [::1]:9843)",
				    text);
			return NULL;
		}
		host = g_strndup(text, (gsize)(colon - text));
		port_text = colon + 1;
	}
	addr = g_inet_address_new_from_string(host);
	if (!addr) {
		g_set_error(error, VR_METRICS_ERROR, VR_METRICS_ERROR_ADDRESS,
			    "'%s': '%s' is not an IP address (give 127.0.0.1:PORT or [::1]:PORT)",
			    text, host);
		return NULL;
	}
	if (!g_inet_address_get_is_loopback(addr)) {
		g_set_error(error, VR_METRICS_ERROR, VR_METRICS_ERROR_ADDRESS,
			    "'%s': %s is not a loopback address; the metrics have no "
			    "authentication and are served on 127.0.0.1 or ::1 only",
			    text, host);
		return NULL;
	}
	if (!g_ascii_string_to_unsigned(port_text, 10, 0, G_MAXUINT16, &port, NULL)) {
		g_set_error(error, VR_METRICS_ERROR, VR_METRICS_ERROR_ADDRESS,
			    "'%s': expected a port in 0..65535 after the address (got '%s')", text,
			    port_text);
		return NULL;
	}
	return g_inet_socket_address_new(addr, (guint16)port);
}

/* ---- the HTTP server ---- */

/* Bytes read from a connection per wakeup. */
#define VR_METRICS_READ_CHUNK 4096

/**
 * struct http_conn - one HTTP connection.
 * @fd:		its socket, non-blocking.
 * @in_watch:	reading the request (or, after the reply, what the client
 *		still sends, dropped until it closes: closing with unread
 *		data would reset the reply away).
 * @out_watch:	writing the reply; only while part of it waits.
 * @timer:	the end of the connection's time.
 * @in:		the request so far.
 * @out:	the reply not written yet.
 * @answered:	the reply is made: what comes in is dropped.
 */
struct http_conn {
	struct vr_metrics_server *server;
	int fd;
	guint in_watch;
	guint out_watch;
	guint timer;
	GString *in;
	GString *out;
	gboolean answered;
};

struct vr_metrics_server {
	char *address;
	GSocket *socket;
	guint16 port;
	struct vr_acceptor *acceptor;
	guint timeout_ms;
	vr_status_fn status;
	gpointer user;
	GPtrArray *conns; /* struct http_conn *, freed by http_close() */
};

static void http_close(struct http_conn *c)
{
	if (c->in_watch)
		g_source_remove(c->in_watch);
	if (c->out_watch)
		g_source_remove(c->out_watch);
	if (c->timer)
		g_source_remove(c->timer);
	close(c->fd);
	g_string_free(c->in, TRUE);
	g_string_free(c->out, TRUE);
	g_ptr_array_remove_fast(c->server->conns, c);
	g_free(c);
}

/* Write what waits. Return: FALSE when the client is gone. */
static gboolean http_flush(struct http_conn *c)
{
	return vr_stream_flush(c->fd, c->out, NULL);
}

/* The whole reply is written: say so, and wait for the client to close. */
static void http_done_writing(struct http_conn *c)
{
	shutdown(c->fd, SHUT_WR);
}

static gboolean http_on_out(gint fd, GIOCondition cond, gpointer data)
{
	struct http_conn *c = data;

	(void)fd;
	(void)cond;
	if (!http_flush(c)) {
		c->out_watch = 0; /* this source ends by returning REMOVE */
		http_close(c);
		return G_SOURCE_REMOVE;
	}
	if (c->out->len)
		return G_SOURCE_CONTINUE;
	c->out_watch = 0;
	http_done_writing(c);
	if (!c->in_watch)
		http_close(c); /* the client closed its side already */
	return G_SOURCE_REMOVE;
}

/* Queue the reply and start writing it. Return: FALSE when the client is gone. */
static gboolean http_reply(struct http_conn *c, guint code, const char *reason,
			   const char *content_type, const char *extra_headers, const char *body,
			   gboolean head)
{
	gsize len = strlen(body);

	g_debug("metrics: %u %s", code, reason);
	g_string_append_printf(c->out,
			       "HTTP/1.0 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			       "Connection: close\r\n%s\r\n",
			       code, reason, content_type, len, extra_headers ? extra_headers : "");
	if (!head)
		g_string_append_len(c->out, body, (gssize)len);
	c->answered = TRUE;
	g_string_truncate(c->in, 0);
	if (!http_flush(c))
		return FALSE;
	if (c->out->len)
		c->out_watch = g_unix_fd_add(c->fd, G_IO_OUT, http_on_out, c);
	else
		http_done_writing(c);
	return TRUE;
}

/* An error reply with a one-line text body. */
static gboolean http_error(struct http_conn *c, guint code, const char *reason,
			   const char *extra_headers, const char *why, gboolean head)
{
	g_autofree char *body = g_strdup_printf("%u %s: %s\n", code, reason, why);

	return http_reply(c, code, reason, "text/plain; charset=utf-8", extra_headers, body, head);
}

static gboolean is_token_char(char ch)
{
	return g_ascii_isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch);
}

/* Answer the complete request head in c->in. Return: FALSE when the client is gone. */
static gboolean http_serve(struct http_conn *c)
{
	struct vr_metrics_server *s = c->server;
	gsize eol = strcspn(c->in->str, "\n");
	g_autofree char *line = g_strndup(c->in->str, eol);
	g_auto(GStrv) parts = NULL;
	gboolean head;

	if (eol && line[eol - 1] == '\r')
		line[eol - 1] = '\0';
	parts = g_strsplit(line, " ", -1);
	if (g_strv_length(parts) != 3 || !*parts[0] || !g_str_has_prefix(parts[2], "HTTP/1.") ||
	    parts[1][0] != '/')
		return http_error(c, 400, "Bad Request", NULL,
				  "expected a request line METHOD /PATH HTTP/1.x", FALSE);
	for (const char *p = parts[0]; *p; p++)
		if (!is_token_char(*p))
			return http_error(c, 400, "Bad Request", NULL, "the method is not a token",
					  FALSE);
	head = !strcmp(parts[0], "HEAD");
	if (!head && strcmp(parts[0], "GET"))
		return http_error(c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n",
				  "only GET and HEAD are served", FALSE);
	parts[1][strcspn(parts[1], "?")] = '\0';
	if (strcmp(parts[1], "/metrics"))
		return http_error(c, 404, "Not Found", NULL, "the metrics are at /metrics", head);

	g_autoptr(GPtrArray) domains = NULL;
	g_autoptr(GError) error = NULL;
	struct vr_daemon_status daemon = { 0 };
	if (!s->status(s->user, &domains, &daemon, &error)) {
		g_warning("metrics: %s", error ? error->message : "the status failed");
		return http_error(c, 500, "Internal Server Error", NULL,
				  error ? error->message : "the status failed", head);
	}
	g_autofree char *text = vr_metrics_render(domains, &daemon);
	return http_reply(c, 200, "OK", VR_METRICS_CONTENT_TYPE, NULL, text, head);
}

/* Has c->in a whole request head (up to an empty line)? */
static gboolean http_head_complete(const struct http_conn *c)
{
	return strstr(c->in->str, "\r\n\r\n") || strstr(c->in->str, "\n\n");
}

static gboolean http_on_in(gint fd, GIOCondition cond, gpointer data)
{
	struct http_conn *c = data;
	char buf[VR_METRICS_READ_CHUNK];
	ssize_t n = 0;

	if (cond & G_IO_IN)
		n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return G_SOURCE_CONTINUE;
	if (n <= 0) {
		/* The client is done (or gone): a request it did not finish
		 * gets nothing; after the reply, this is the normal end. */
		c->in_watch = 0; /* this source ends by returning REMOVE */
		if (!c->answered || !c->out->len)
			http_close(c);
		return G_SOURCE_REMOVE;
	}
	if (c->answered)
		return G_SOURCE_CONTINUE; /* dropped */
	/* A NUL in the head ends the text checks early: refuse it as malformed. */
	if (memchr(buf, '\0', (gsize)n)) {
		if (!http_error(c, 400, "Bad Request", NULL, "a NUL byte in the request", FALSE)) {
			c->in_watch = 0;
			http_close(c);
			return G_SOURCE_REMOVE;
		}
		return G_SOURCE_CONTINUE;
	}
	g_string_append_len(c->in, buf, n);
	gboolean alive = TRUE;
	if (http_head_complete(c))
		alive = http_serve(c);
	else if (c->in->len > VR_METRICS_MAX_REQUEST_BYTES)
		alive = http_error(c, 431, "Request Header Fields Too Large", NULL,
				   "the request is longer than 8192 bytes", FALSE);
	if (!alive) {
		c->in_watch = 0;
		http_close(c);
		return G_SOURCE_REMOVE;
	}
	return G_SOURCE_CONTINUE;
}

static gboolean http_on_timeout(gpointer data)
{
	struct http_conn *c = data;

	c->timer = 0; /* this source ends by returning REMOVE */
	if (!c->answered) {
		/* One try at saying why, without waiting for a slow reader. */
		static const char timeout[] =
			"HTTP/1.0 408 Request Timeout\r\nContent-Length: 0\r\n"
			"Connection: close\r\n\r\n";
		if (send(c->fd, timeout, sizeof(timeout) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			g_debug("metrics: 408: %s", g_strerror(errno));
		g_debug("metrics: a client took longer than %u ms", c->server->timeout_ms);
	}
	http_close(c);
	return G_SOURCE_REMOVE;
}

/* A new connection (vr_accept_fn). */
static void metrics_on_accept(int cfd, gpointer data)
{
	struct vr_metrics_server *s = data;
	struct http_conn *c = g_new0(struct http_conn, 1);
	c->server = s;
	c->fd = cfd;
	c->in = g_string_new(NULL);
	c->out = g_string_new(NULL);
	g_ptr_array_add(s->conns, c);
	c->timer = g_timeout_add(s->timeout_ms, http_on_timeout, c);
	if (s->conns->len > VR_METRICS_MAX_CONNECTIONS) {
		if (!http_error(c, 503, "Service Unavailable", NULL, "too many connections",
				FALSE)) {
			http_close(c);
			return;
		}
	}
	c->in_watch = g_unix_fd_add(cfd, G_IO_IN | G_IO_HUP | G_IO_ERR, http_on_in, c);
}

struct vr_metrics_server *vr_metrics_server_new(const char *address, guint timeout_ms,
						vr_status_fn status, gpointer user, GError **error)
{
	g_autoptr(vr_metrics_server) s = g_new0(struct vr_metrics_server, 1);
	g_autoptr(GSocketAddress) sa = NULL;
	g_autoptr(GSocketAddress) bound = NULL;
	g_autoptr(GError) local = NULL;

	g_return_val_if_fail(address && status, NULL);
	s->address = g_strdup(address);
	s->timeout_ms = timeout_ms ? timeout_ms : VR_METRICS_DEFAULT_TIMEOUT_MS;
	s->status = status;
	s->user = user;
	s->conns = g_ptr_array_new();
	sa = vr_metrics_parse_address(address, error);
	if (!sa) {
		g_prefix_error(error, "metrics: ");
		return NULL;
	}
	s->socket = g_socket_new(g_socket_address_get_family(sa), G_SOCKET_TYPE_STREAM,
				 G_SOCKET_PROTOCOL_TCP, &local);
	if (s->socket) {
		g_socket_set_blocking(s->socket, FALSE);
		if (g_socket_bind(s->socket, sa, TRUE, &local) &&
		    g_socket_listen(s->socket, &local))
			bound = g_socket_get_local_address(s->socket, &local);
	}
	if (!bound) {
		g_set_error(error, VR_METRICS_ERROR, VR_METRICS_ERROR_IO,
			    "metrics: cannot listen on %s: %s", address, local->message);
		return NULL;
	}
	s->port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
	s->acceptor = vr_acceptor_new(g_socket_get_fd(s->socket), "metrics", metrics_on_accept, s);
	g_debug("metrics served on %s (port %u)", address, s->port);
	return g_steal_pointer(&s);
}

guint16 vr_metrics_server_get_port(const struct vr_metrics_server *s)
{
	return s->port;
}

void vr_metrics_server_free(struct vr_metrics_server *s)
{
	if (!s)
		return;
	while (s->conns->len)
		http_close(g_ptr_array_index(s->conns, s->conns->len - 1));
	g_ptr_array_unref(s->conns);
	vr_acceptor_free(s->acceptor);
	if (s->socket)
		g_object_unref(s->socket);
	g_free(s->address);
	g_free(s);
}
