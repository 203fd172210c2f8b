/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The actions by name (see action.h): the one table from the action a domain
 * runs (enum vr_domain_action) to its operations.
 */
#include "actions/action.h"

const struct vr_action_ops *vr_action_ops_get(enum vr_domain_action action)
{
	switch (action) {
	case VR_DOMAIN_ACTION_AGENT_RECLAIM:
		return &vr_action_agent_reclaim;
	case VR_DOMAIN_ACTION_BALLOON:
		return &vr_action_balloon;
	case VR_DOMAIN_ACTION_HOST_PAGEOUT:
		return &vr_action_host_pageout;
	case VR_DOMAIN_ACTION_NONE:
		break;
	}
	return NULL;
}
