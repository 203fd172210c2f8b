/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "agent" access source: the guest agent's own picture (get-regions over
 * its session), kept as the last one that arrived. See access-source.h.
 *
 * The session is asynchronous and the source's get_regions is not: a refresh
 * sends get-regions, and its reply replaces the kept picture. A reply can
 * come after the source was stopped or freed (the session fails pending
 * calls only when it is freed itself), so each call holds a reference to the
 * source's state and a reply for an older generation is dropped.
 *
 * With set_histogram(), an agent with the "cold-histogram" capability is
 * asked for its picture's histogram (get-cold-histogram) instead: the fleet
 * needs no more, and the agent's line is 100 numbers instead of hundreds of
 * regions. The last histogram is kept beside the last picture.
 */
#include "sources/access-source.h"

#include <string.h>

#include "agent/agent-session.h"

struct source_agent {
	struct vr_agent_session *session; /* borrowed */
	guint timeout_ms;
	gboolean alive;	  /* FALSE once the source is freed */
	guint generation; /* bumped by start and stop */
	gboolean pending; /* a get-regions is under way */
	struct vr_proto_regions picture;
	gboolean has_picture;
	uint64_t picture_serial; /* bumped by each picture or histogram that arrives */
	gboolean histogram;	 /* set_histogram() */
	struct vr_proto_cold_hist hist;
	gboolean has_hist;
	char *last_error;
};

/* The state of one call: the source's state (a reference), its generation
 * and its command (get-regions or get-cold-histogram). */
struct agent_call {
	struct source_agent *sa;
	guint generation;
	enum vr_proto_command command;
};

static void source_agent_unref(struct source_agent *sa)
{
	g_rc_box_release_full(sa, (GDestroyNotify)NULL);
}

static void source_agent_drop_picture(struct source_agent *sa)
{
	vr_proto_regions_clear(&sa->picture);
	sa->has_picture = FALSE;
	sa->has_hist = FALSE;
}

static void on_regions(struct vr_agent_session *s, struct vr_proto_message *reply,
		       const GError *error, gpointer user_data)
{
	g_autofree struct agent_call *call = user_data;
	struct source_agent *sa = call->sa;

	(void)s;
	if (!sa->alive || call->generation != sa->generation) {
		source_agent_unref(sa);
		return;
	}
	sa->pending = FALSE;
	if (g_error_matches(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_CANCELLED)) {
		/* The session is being freed (the domain goes). */
		source_agent_unref(sa);
		return;
	}
	if (error || reply->kind == VR_PROTO_MESSAGE_ERROR) {
		g_free(sa->last_error);
		sa->last_error = g_strdup(error ? error->message : reply->error.desc);
		g_warning("%s: agent %s: %s", vr_agent_session_domain(sa->session),
			  vr_proto_command_name(call->command), sa->last_error);
	} else if (call->command == VR_PROTO_GET_COLD_HIST) {
		sa->hist = reply->cold_hist;
		sa->has_hist = TRUE;
		sa->picture_serial++;
	} else {
		source_agent_drop_picture(sa);
		sa->picture = reply->regions;
		memset(&reply->regions, 0, sizeof(reply->regions));
		sa->has_picture = TRUE;
		sa->picture_serial++;
	}
	source_agent_unref(sa);
}

static gboolean source_agent_start(void *priv, GError **error)
{
	struct source_agent *sa = priv;

	(void)error;
	sa->generation++;
	sa->pending = FALSE;
	source_agent_drop_picture(sa);
	return TRUE;
}

static gboolean source_agent_get_regions(void *priv, struct vr_proto_regions *out, GError **error)
{
	struct source_agent *sa = priv;

	if (!sa->has_picture) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_STATE,
			    "the agent of %s has sent no picture yet",
			    vr_agent_session_domain(sa->session));
		return FALSE;
	}
	out->sample_interval_us = sa->picture.sample_interval_us;
	out->aggr_interval_us = sa->picture.aggr_interval_us;
	out->regions = sa->picture.regions ? g_array_copy(sa->picture.regions) : NULL;
	return TRUE;
}

static void source_agent_stop(void *priv)
{
	struct source_agent *sa = priv;

	sa->generation++;
	sa->pending = FALSE;
	source_agent_drop_picture(sa);
}

static void source_agent_free(void *priv)
{
	struct source_agent *sa = priv;

	sa->alive = FALSE;
	source_agent_drop_picture(sa);
	g_clear_pointer(&sa->last_error, g_free);
	source_agent_unref(sa);
}

static const struct vr_access_source_ops source_agent_ops = {
	.name = "agent",
	.start = source_agent_start,
	.get_regions = source_agent_get_regions,
	.stop = source_agent_stop,
	.free = source_agent_free,
};

struct vr_access_source *vr_access_source_new_agent(struct vr_agent_session *session,
						    guint timeout_ms, GError **error)
{
	struct source_agent *sa;

	if (!session || timeout_ms == 0) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
			    "agent source: %s", !session ? "no session" : "timeout_ms is 0");
		return NULL;
	}
	sa = g_rc_box_new0(struct source_agent);
	sa->session = session;
	sa->timeout_ms = timeout_ms;
	sa->alive = TRUE;
	return vr_access_source_new(&source_agent_ops, sa);
}

static struct source_agent *agent_priv(struct vr_access_source *src)
{
	if (!src || vr_access_source_get_ops(src) != &source_agent_ops)
		return NULL;
	return vr_access_source_get_priv(src);
}

gboolean vr_access_source_agent_refresh(struct vr_access_source *src, GError **error)
{
	struct source_agent *sa = agent_priv(src);
	g_auto(vr_proto_request) req = { .command = VR_PROTO_GET_REGIONS };
	struct agent_call *call;

	if (!sa || !vr_access_source_is_started(src)) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_STATE, "%s",
			    !sa ? "not an agent source" : "the agent source is not started");
		return FALSE;
	}
	if (sa->pending)
		return TRUE;
	if (vr_access_source_agent_wants_histogram(src))
		req.command = VR_PROTO_GET_COLD_HIST;
	else
		req.get_regions.max = VR_PROTO_MAX_REGIONS;
	call = g_new0(struct agent_call, 1);
	call->sa = g_rc_box_acquire(sa);
	call->generation = sa->generation;
	call->command = req.command;
	if (!vr_agent_session_call(sa->session, &req, sa->timeout_ms, on_regions, call, error)) {
		source_agent_unref(sa);
		g_free(call);
		g_prefix_error(error, "agent %s: ", vr_proto_command_name(req.command));
		return FALSE;
	}
	sa->pending = TRUE;
	return TRUE;
}

void vr_access_source_agent_forget(struct vr_access_source *src)
{
	struct source_agent *sa = agent_priv(src);

	if (!sa)
		return;
	sa->generation++;
	sa->pending = FALSE;
	source_agent_drop_picture(sa);
}

gboolean vr_access_source_agent_has_picture(const struct vr_access_source *src)
{
	const struct source_agent *sa = agent_priv((struct vr_access_source *)src);

	return sa && (sa->has_picture || sa->has_hist);
}

void vr_access_source_agent_set_histogram(struct vr_access_source *src, gboolean histogram)
{
	struct source_agent *sa = agent_priv(src);

	if (sa)
		sa->histogram = histogram;
}

gboolean vr_access_source_agent_wants_histogram(const struct vr_access_source *src)
{
	const struct source_agent *sa = agent_priv((struct vr_access_source *)src);
	const struct vr_proto_hello *hello;

	if (!sa || !sa->histogram)
		return FALSE;
	hello = vr_agent_session_hello(sa->session);
	return hello && hello->cold_histogram;
}

gboolean vr_access_source_agent_cold_hist(const struct vr_access_source *src,
					  struct vr_proto_cold_hist *out)
{
	const struct source_agent *sa = agent_priv((struct vr_access_source *)src);

	if (!sa || !sa->has_hist)
		return FALSE;
	*out = sa->hist;
	return TRUE;
}

uint64_t vr_access_source_agent_picture_serial(const struct vr_access_source *src)
{
	const struct source_agent *sa = agent_priv((struct vr_access_source *)src);

	return sa && (sa->has_picture || sa->has_hist) ? sa->picture_serial : 0;
}
