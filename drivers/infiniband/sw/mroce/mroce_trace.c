// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The tracepoints of rdma_mroce (mroce_trace.h) and the kernel's side of
 * the protocol core's event hook: mroce_conn_ops.event turns a struct
 * mroce_event into the matching trace_mroce_*() call.
 */
#include <linux/jump_label.h>

#include "mroce.h"
#include "core/mroce_core.h"

#define CREATE_TRACE_POINTS
#include "mroce_trace.h"

/*
 * Enabled while at least one tracepoint of a core event is: the core
 * builds and reports events only then (mroce_ev_enabled()).  A count, kept
 * by the tracepoints' reg/unreg hooks, which the tracing core calls in
 * process context under its tracepoints mutex.
 */
DEFINE_STATIC_KEY_FALSE(mroce_core_ev_key);

int mroce_trace_core_reg(void)
{
	static_branch_inc(&mroce_core_ev_key);
	return 0;
}

void mroce_trace_core_unreg(void)
{
	static_branch_dec(&mroce_core_ev_key);
}

/*
 * Called by the core, inside a call on the QP's connection (qp->lock
 * held, any context), only while mroce_core_ev_key is on.
 */
void mroce_trace_core_event(void *ctx, const struct mroce_event *ev)
{
	const struct mroce_qp *qp = ctx;

	switch (ev->type) {
	case MROCE_EV_PATH_UP:
	case MROCE_EV_PATH_DOWN:
		trace_mroce_path_state(qp, ev);
		break;
	case MROCE_EV_STEER:
		trace_mroce_steer(qp, ev);
		break;
	case MROCE_EV_LOSS:
		trace_mroce_loss(qp, ev);
		break;
	case MROCE_EV_SPURIOUS:
		trace_mroce_spurious(qp, ev);
		break;
	case MROCE_EV_CWND:
		trace_mroce_cwnd(qp, ev);
		break;
	case MROCE_EV_RNR:
		trace_mroce_rnr(qp, ev);
		break;
	case MROCE_EV_ERROR:
		trace_mroce_conn_error(qp, ev);
		break;
	}
}
