// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The RC datapath: the glue between a QP (rings, memory regions, CQs,
 * the network) and its protocol core connection (core/).
 *
 * Locking and context.  Every function here runs with qp->lock held
 * (interrupts disabled) and inside rcu_read_lock() (but create and
 * destroy: process context), which keeps memory
 * regions and their pages alive (see mroce_mem.c).  Callers are the
 * doorbell (process context), the receive handler (softirq), the step
 * it defers to the end of the softirq batch (mroce_rxbatch.c, tasklet),
 * the QP's hrtimer (softirq, HRTIMER_MODE_ABS_SOFT) and modify_qp
 * (process).
 * Nothing here transmits or calls a completion handler: packets and due
 * handlers are left in struct mroce_dp for mroce_dp_finish(), which the
 * caller runs after dropping the lock.
 *
 * WQEs are read from the shared rings once, into kernel shadows
 * (mroce_wq.c), and validated here; the core identifies a send WR by its SQ index (the
 * cookie) and a receive WR by its rq_seq (RQ index rq_base + rq_seq).
 * Completions come from the core in verbs order, so the published
 * consumer indices simply count them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "mroce.h"
#include "core/mroce_core.h"
#include "mroce_trace.h"

/* Packets built per step before the rest is left to the timer. */
#define MROCE_TX_BURST		64
static u64 mroce_now(void)
{
	return ktime_get_ns();
}

static const struct mroce_sge *mroce_wqe_sges(const void *wqe_hdr_end)
{
	return wqe_hdr_end;
}

/*
 * Arm the QP's timer for the core's next deadline t.  A timer already
 * queued to fire no later than t is left alone: when it fires early, the
 * step it runs arms the real next deadline.  Most steps move the next
 * deadline later (an ACK restarts the RTO), and reprogramming the timer
 * on every packet cost 3.6-4.5 us each under QEMU TCG, against a
 * receive path of about 45 us per packet.  A timer that is firing now is
 * not queued, so it is armed again; the QP lock serialises arming.
 */
static void mroce_rc_arm(struct mroce_qp *qp, u64 t)
{
	if (t == U64_MAX) {
		hrtimer_try_to_cancel(&qp->timer);
		return;
	}
	if (hrtimer_is_queued(&qp->timer) &&
	    ktime_to_ns(hrtimer_get_expires(&qp->timer)) <= t)
		return;
	hrtimer_start(&qp->timer, ns_to_ktime(t), HRTIMER_MODE_ABS_SOFT);
}

/* ------------------------------------------------------------------ */
/* Completions.                                                        */

static enum ib_wc_opcode mroce_req_wc_opcode(u32 op)
{
	switch (op) {
	case MROCE_WOP_WRITE:
	case MROCE_WOP_WRITE_IMM:
		return IB_WC_RDMA_WRITE;
	case MROCE_WOP_READ:
		return IB_WC_RDMA_READ;
	case MROCE_WOP_CMP_SWAP:
		return IB_WC_COMP_SWAP;
	case MROCE_WOP_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	default:
		return IB_WC_SEND;
	}
}

static enum mroce_wr_op mroce_wop_of(u32 wqe_opcode)
{
	switch (wqe_opcode) {
	case MROCE_WR_SEND_WITH_IMM:
		return MROCE_WOP_SEND_IMM;
	case MROCE_WR_SEND_WITH_INV:
		return MROCE_WOP_SEND_INV;
	case MROCE_WR_RDMA_WRITE:
		return MROCE_WOP_WRITE;
	case MROCE_WR_RDMA_WRITE_WITH_IMM:
		return MROCE_WOP_WRITE_IMM;
	case MROCE_WR_RDMA_READ:
		return MROCE_WOP_READ;
	case MROCE_WR_ATOMIC_CMP_AND_SWP:
		return MROCE_WOP_CMP_SWAP;
	case MROCE_WR_ATOMIC_FETCH_AND_ADD:
		return MROCE_WOP_FETCH_ADD;
	default:
		return MROCE_WOP_SEND;
	}
}

/* The completion opcode of a send WQE. */
static u32 mroce_wqe_wc_opcode(u32 wqe_opcode)
{
	if (wqe_opcode == MROCE_WR_KERN_REG_MR)
		return MROCE_WC_KERN_REG_MR;
	if (wqe_opcode == MROCE_WR_LOCAL_INV)
		return MROCE_WC_LOCAL_INV;
	if (wqe_opcode == MROCE_WR_BIND_MW)
		return MROCE_WC_BIND_MW;
	return mroce_req_wc_opcode(mroce_wop_of(wqe_opcode));
}

/* The datapath moves the QP to the error state (why: mroce_trace.h). */
static void mroce_rc_qp_err(struct mroce_qp *qp, u32 why, u32 status)
{
	if (qp->state != IB_QPS_ERR)
		trace_mroce_qp_error(qp, qp->state, why, status);
	qp->state = IB_QPS_ERR;
}

/*
 * Stop the connection: every WR it holds completes with a flush error.
 * Never from inside a core callback (the core is not reentrant).
 */
static void mroce_qp_to_error(struct mroce_qp *qp)
{
	mroce_rc_qp_err(qp, MROCE_QPE_CONN,
			qp->conn_live ? qp->conn->err_status : 0);
	if (qp->conn_live && mroce_conn_ok(qp->conn))
		mroce_conn_set_error(qp->conn, MROCE_ST_WR_FLUSH);
}

/* Send WR idx (== sq_done) completed with status. */
static void mroce_rc_req_done(struct mroce_qp *qp, u32 idx, u32 status,
			      u32 byte_len, struct mroce_dp *dp)
{
	if (WARN_ON_ONCE(idx != qp->sq_done))
		return;
	mroce_wq_send_done(qp, status,
			   mroce_wqe_wc_opcode(mroce_sq_shadow(qp, idx)->opcode),
			   byte_len, dp);
	/*
	 * May run inside a core callback: only mark the QP, the end of the
	 * step (mroce_rc_step()) stops the connection and flushes.
	 */
	if (status && status != IB_WC_WR_FLUSH_ERR)
		mroce_rc_qp_err(qp, MROCE_QPE_WC, status);
}

static void mroce_rc_recv_done(struct mroce_qp *qp, u32 idx, u32 status,
			       const struct mroce_completion *c,
			       struct mroce_dp *dp)
{
	struct mroce_cqe cqe = { };
	bool solicited = false;

	if (WARN_ON_ONCE(idx != qp->rq_done))
		return;
	cqe.status = status;
	cqe.opcode = MROCE_WC_RECV;
	cqe.src_qp = qp->dest_qpn;
	if (c) {
		if (c->op == MROCE_OP_WRITE_IMM)
			cqe.opcode = MROCE_WC_RECV_RDMA_WITH_IMM;
		cqe.byte_len = c->byte_len;
		if (c->with_imm || c->with_inv)
			cqe.imm_data = cpu_to_be32(c->imm);
		if (c->with_imm)
			cqe.wc_flags |= MROCE_WC_WITH_IMM;
		if (c->with_inv)
			cqe.wc_flags |= MROCE_WC_WITH_INV;
		solicited = c->solicited;
	}
	mroce_wq_recv_done(qp, &cqe, solicited, dp);
}

/* Total length of a receive WQE's SGEs, or -EINVAL. */
static s64 mroce_recv_len(const struct mroce_recv_wqe *w)
{
	const struct mroce_sge *sge = mroce_wqe_sges(w + 1);
	s64 len = 0;
	u32 i;

	if (w->num_sge == U32_MAX)
		return -EINVAL;
	for (i = 0; i < w->num_sge; i++)
		len += sge[i].length;
	return len;
}

/*
 * Validate a send WQE (in the shadow) and describe it to the core.
 * Returns 0 or the completion status it fails with.  UC QPs validate
 * their WQEs with it too (mroce_uc.c).
 */
u32 mroce_rc_wqe_to_wr(struct mroce_qp *qp,
			      const struct mroce_send_wqe *w, u32 idx,
			      struct mroce_wr *wr)
{
	const struct mroce_sge *sge = mroce_wqe_sges(w + 1);
	struct ib_pd *pd = qp->ibqp.pd;
	int access = 0;
	u64 len = 0;
	u32 i;

	memset(wr, 0, sizeof(*wr));
	switch (w->opcode) {
	case MROCE_WR_SEND:
	case MROCE_WR_SEND_WITH_IMM:
	case MROCE_WR_SEND_WITH_INV:
	case MROCE_WR_RDMA_WRITE:
	case MROCE_WR_RDMA_WRITE_WITH_IMM:
		break;
	case MROCE_WR_RDMA_READ:
	case MROCE_WR_ATOMIC_CMP_AND_SWP:
	case MROCE_WR_ATOMIC_FETCH_AND_ADD:
		access = IB_ACCESS_LOCAL_WRITE;
		if (w->send_flags & MROCE_SEND_INLINE)
			return IB_WC_LOC_QP_OP_ERR;
		break;
	default:
		/* Local operations: mroce_rc_local_op(), RC only. */
		return IB_WC_LOC_QP_OP_ERR;
	}
	if (w->send_flags & MROCE_SEND_INLINE) {
		if (w->inline_len > qp->cap.max_inline_data ||
		    w->inline_len > qp->sq.entry_size - sizeof(*w))
			return IB_WC_LOC_LEN_ERR;
		len = w->inline_len;
	} else {
		if (w->num_sge > qp->cap.max_send_sge)
			return IB_WC_LOC_LEN_ERR;
		for (i = 0; i < w->num_sge; i++) {
			struct mroce_mr *mr;

			len += sge[i].length;
			if (!sge[i].length)
				continue;
			if (!qp->user && !sge[i].lkey)
				continue;	/* kernel virtual address */
			mr = mroce_mr_lookup(qp->mdev, sge[i].lkey);
			if (!mr || (mr->type == MROCE_MR_DMA && qp->user) ||
			    mroce_mr_check(mr, sge[i].lkey, pd, 0, sge[i].addr,
					   sge[i].length, access))
				return IB_WC_LOC_PROT_ERR;
		}
	}
	if (len > MROCE_MAX_MSG_LEN)
		return IB_WC_LOC_LEN_ERR;

	wr->cookie = idx;
	wr->op = mroce_wop_of(w->opcode);
	wr->length = len;
	wr->solicited = !!(w->send_flags & MROCE_SEND_SOLICITED);
	wr->fence = !!(w->send_flags & MROCE_SEND_FENCE);
	switch (w->opcode) {
	case MROCE_WR_SEND_WITH_IMM:
	case MROCE_WR_RDMA_WRITE_WITH_IMM:
	case MROCE_WR_SEND_WITH_INV:
		wr->imm = be32_to_cpu(w->imm_data);
		break;
	}
	switch (w->opcode) {
	case MROCE_WR_RDMA_WRITE:
	case MROCE_WR_RDMA_WRITE_WITH_IMM:
	case MROCE_WR_RDMA_READ:
		wr->remote_va = w->wr.rdma.remote_addr;
		wr->rkey = w->wr.rdma.rkey;
		break;
	case MROCE_WR_ATOMIC_CMP_AND_SWP:
	case MROCE_WR_ATOMIC_FETCH_AND_ADD:
		if (w->num_sge != 1 || len != 8 ||
		    (w->wr.atomic.remote_addr & 7))
			return IB_WC_LOC_LEN_ERR;
		wr->remote_va = w->wr.atomic.remote_addr;
		wr->rkey = w->wr.atomic.rkey;
		wr->swap = w->wr.atomic.swap;
		wr->compare_add = w->wr.atomic.compare_add;
		break;
	}
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI) {
		/*
		 * Every request names the target's XRC SRQ (XRCETH).  A
		 * WRITE_WITH_IMM cannot: its receive WQE is bound at
		 * completion, where no NAK can refuse a bad SRQ number.
		 */
		if (w->opcode == MROCE_WR_RDMA_WRITE_WITH_IMM ||
		    !w->xrc_srqn || w->xrc_srqn > MROCE_MAX_QPN)
			return IB_WC_LOC_QP_OP_ERR;
		wr->xrc = true;
		wr->xrc_srqn = w->xrc_srqn;
	}
	return 0;
}

/* The WQE opcodes of local operations (mroce_rc_local_op()). */
static bool mroce_rc_is_local_op(u32 opcode)
{
	return opcode == MROCE_WR_KERN_REG_MR ||
	       opcode == MROCE_WR_LOCAL_INV || opcode == MROCE_WR_BIND_MW;
}

/*
 * Execute a local operation: REG_MR (kernel QPs only), BIND_MW (user
 * QPs: memory windows, mroce_mw.c) or LOCAL_INV of a fast-register region
 * or a type 2 window (the same machinery for both, mroce_mr_invalidate()).
 * Returns 0 or the completion status.
 */
static u32 mroce_rc_local_op(struct mroce_qp *qp,
			     const struct mroce_send_wqe *w)
{
	u32 status;

	if (w->opcode == MROCE_WR_BIND_MW) {
		if (!qp->user)
			return IB_WC_LOC_QP_OP_ERR;
		return mroce_mw_bind(qp->mdev, qp->ibqp.pd, qp->ibqp.qp_num, w);
	}
	if (w->opcode == MROCE_WR_KERN_REG_MR) {
		if (qp->user)
			return IB_WC_LOC_QP_OP_ERR;
		if (w->wr.atomic.swap > U32_MAX)
			return IB_WC_LOC_QP_OP_ERR;
		status = mroce_mr_fast_reg(qp->mdev, qp->ibqp.pd,
					   w->wr.atomic.rkey,
					   w->wr.atomic.rsvd,
					   w->wr.atomic.remote_addr,
					   w->wr.atomic.compare_add,
					   w->wr.atomic.swap);
		if (!status)
			atomic64_inc(&qp->mdev->stats.mr_fast_reg);
		return status;
	}
	switch (mroce_mr_invalidate(qp->mdev, qp->ibqp.pd, 0,
				    w->wr.rdma.rkey)) {
	case 0:
		atomic64_inc(&qp->mdev->stats.mr_local_inv);
		return 0;
	case -EACCES:
		return IB_WC_LOC_PROT_ERR;
	default:
		return IB_WC_LOC_QP_OP_ERR;
	}
}

/*
 * Read newly posted send WQEs and hand them to the core, in order.  A
 * WQE that fails validation completes with its error once everything
 * before it completed (so completions stay in order), and the QP moves
 * to the error state.  In the error state every new WQE is flushed.
 *
 * Local operations (REG_MR, LOCAL_INV, BIND_MW) are fenced both ways: they
 * execute, and complete at once, when every earlier WR has completed
 * (so a LOCAL_INV after a READ into the region finds the data placed),
 * and no later WR is handed to the core before they executed (so a SEND
 * that advertises a new registration follows it).
 */
static void mroce_rc_sq_ingest(struct mroce_qp *qp, u64 now,
			       struct mroce_dp *dp)
{
	u32 prod = mroce_wq_avail(qp, &qp->sq, qp->sq_done, qp->sq_next);
	u32 mask = qp->sq.num_entries - 1, status;
	struct mroce_send_wqe *w;
	struct mroce_wr wr;
	int ret;

	while (qp->sq_next != prod) {
		w = mroce_sq_shadow(qp, qp->sq_next);
		memcpy(w, qp->sq.buf + MROCE_RING_CTL_SIZE +
		       (size_t)(qp->sq_next & mask) * qp->sq.entry_size,
		       qp->sq.entry_size);
		if (qp->state == IB_QPS_ERR) {
			qp->sq_next++;
			mroce_rc_req_done(qp, qp->sq_next - 1,
					  IB_WC_WR_FLUSH_ERR, 0, dp);
			continue;
		}
		if (mroce_rc_is_local_op(w->opcode)) {
			if (qp->sq_done != qp->sq_next)
				return;	/* after the earlier ones */
			status = mroce_rc_local_op(qp, w);
			qp->sq_next++;
			mroce_rc_req_done(qp, qp->sq_next - 1, status, 0, dp);
			continue;
		}
		status = mroce_rc_wqe_to_wr(qp, w, qp->sq_next, &wr);
		if (status) {
			if (qp->sq_done != qp->sq_next)
				return;	/* after the earlier ones */
			qp->sq_next++;
			mroce_rc_req_done(qp, qp->sq_next - 1, status, 0, dp);
			continue;
		}
		ret = mroce_conn_post(qp->conn, &wr, now);
		if (ret == MROCE_E_NOSPC)
			return;		/* retried after completions */
		if (ret) {
			/* The core refused a WR we validated: a bug. */
			WARN_ON_ONCE(ret != MROCE_E_STATE);
			return;
		}
		qp->sq_next++;
	}
}

/* ------------------------------------------------------------------ */
/* Core callbacks (ctx is the QP; qp->rc_dp the step in progress).     */

/*
 * A remote access through rkey: the QP must allow it and the region (not
 * the DMA region) must pass mroce_mr_check().  With buf, also copy len
 * bytes in direction dir in the same check (mroce_mr_xfer()).  Returns 0
 * or -MROCE_SYN_REM_ACCESS.
 */
static int mroce_rc_remote(struct mroce_qp *qp, struct ib_pd *pd, u64 va,
			   u32 rkey, void *buf, u32 len, int access,
			   enum mroce_copy_dir dir)
{
	struct mroce_mr *mr = mroce_mr_lookup(qp->mdev, rkey);
	int err;

	if (!mr || mr->type == MROCE_MR_DMA || !(qp->access_flags & access))
		return -MROCE_SYN_REM_ACCESS;
	if (buf)
		err = mroce_mr_xfer(mr, rkey, pd, qp->ibqp.qp_num, va,
				    buf, len, access, dir);
	else
		err = mroce_mr_check(mr, rkey, pd, qp->ibqp.qp_num,
				     va, len, access);
	return err ? -MROCE_SYN_REM_ACCESS : 0;
}

/*
 * The protection domain a request of the peer is checked against.  RC QPs:
 * their own.  XRC initiators: none, they serve no request.  XRC targets
 * have no PD: the request's XRCETH names an XRC SRQ, which must exist in
 * the QP's XRC domain, and its PD is used, as IB defines for XRC.  The
 * core made sure that every request to a target carries an XRCETH and
 * that no other request does.  NULL: the request is refused (INV_REQ).
 */
static struct ib_pd *mroce_rc_req_pd(struct mroce_qp *qp, bool xrc, u32 srqn)
{
	struct mroce_srq *srq;

	if (qp->ibqp.qp_type == IB_QPT_XRC_INI)
		return NULL;
	if (!qp->xrc_slot)
		return xrc ? NULL : qp->ibqp.pd;
	srq = xrc ? mroce_xrc_srq(qp, srqn) : NULL;
	return srq ? srq->ibsrq.pd : NULL;
}

/*
 * A SEND segment to an XRC target: receive WQE idx comes from the XRC SRQ
 * the message names (bound by its first arriving packet, in any order,
 * mroce_wq_bind_xrc()) and is filled through the SRQ's PD.
 */
static int mroce_rc_place_xrc(struct mroce_qp *qp, u32 idx,
			      const struct mroce_place *pl)
{
	struct mroce_recv_wqe *rw;
	struct mroce_srq *srq;
	s64 room;
	int err;

	err = mroce_wq_bind_xrc(qp, idx, pl->xrc_srqn, &srq, qp->rc_dp);
	if (err)
		return err;
	rw = mroce_rq_shadow(qp, idx);
	room = mroce_recv_len(rw);
	if (room < 0 || pl->msg_len > room)
		return -MROCE_SYN_INV_REQ;
	err = mroce_sge_copy(qp->mdev, srq->ibsrq.pd, !srq->user,
			     mroce_wqe_sges(rw + 1), rw->num_sge, pl->offset,
			     (void *)pl->data, pl->len, MROCE_TO_MR);
	return err ? -MROCE_SYN_REM_OP : 0;
}

static int mroce_rc_place(void *ctx, const struct mroce_place *pl)
{
	struct mroce_qp *qp = ctx;
	struct mroce_send_wqe *sw;
	struct ib_pd *pd;
	struct mroce_recv_wqe *rw;
	u32 idx;
	s64 room;
	int err;

	switch (pl->kind) {
	case MROCE_PLACE_SEND:
		idx = qp->rq_base + pl->rq_seq;
		if (qp->xrc_slot)
			return mroce_rc_place_xrc(qp, idx, pl);
		if (!qp->rq.num_entries)
			return -MROCE_SYN_INV_REQ;	/* XRC initiator */
		if (!mroce_wq_bind(qp, idx, qp->rc_dp))
			return -MROCE_SYN_RNR;
		rw = mroce_rq_shadow(qp, idx);
		room = mroce_recv_len(rw);
		if (room < 0 || pl->msg_len > room)
			return -MROCE_SYN_INV_REQ;
		err = mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user,
				     mroce_wqe_sges(rw + 1), rw->num_sge,
				     pl->offset, (void *)pl->data, pl->len,
				     MROCE_TO_MR);
		return err ? -MROCE_SYN_REM_OP : 0;
	case MROCE_PLACE_WRITE:
		pd = mroce_rc_req_pd(qp, pl->xrc, pl->xrc_srqn);
		if (!pd)
			return -MROCE_SYN_INV_REQ;
		return mroce_rc_remote(qp, pd, pl->va + pl->offset, pl->rkey,
				       (void *)pl->data, pl->len,
				       IB_ACCESS_REMOTE_WRITE, MROCE_TO_MR);
	case MROCE_PLACE_READ_RESP:
		idx = (u32)pl->cookie;
		if (idx - qp->sq_done >= qp->sq_next - qp->sq_done)
			return -MROCE_SYN_REM_OP;
		sw = mroce_sq_shadow(qp, idx);
		err = mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user,
				     mroce_wqe_sges(sw + 1), sw->num_sge,
				     pl->offset, (void *)pl->data, pl->len,
				     MROCE_TO_MR);
		return err ? -MROCE_SYN_REM_OP : 0;
	}
	return -MROCE_SYN_INV_REQ;
}

static int mroce_rc_read_check(void *ctx, u64 va, u32 rkey, u32 len)
{
	struct mroce_qp *qp = ctx;
	struct ib_pd *pd;

	pd = mroce_rc_req_pd(qp, qp->conn->exec_xrc, qp->conn->exec_xrc_srqn);
	if (!pd)
		return -MROCE_SYN_INV_REQ;
	if (!len)
		return 0;
	return mroce_rc_remote(qp, pd, va, rkey, NULL, len,
			       IB_ACCESS_REMOTE_READ, MROCE_FROM_MR);
}

static int mroce_rc_atomic(void *ctx, u32 op, u64 va, u32 rkey, u64 swap,
			   u64 compare_add, u64 *orig)
{
	struct mroce_qp *qp = ctx;
	struct mroce_mr *mr;
	struct ib_pd *pd;
	int err;

	pd = mroce_rc_req_pd(qp, qp->conn->exec_xrc, qp->conn->exec_xrc_srqn);
	if (!pd || (va & 7))
		return -MROCE_SYN_INV_REQ;
	mr = mroce_mr_lookup(qp->mdev, rkey);
	if (!mr || mr->type == MROCE_MR_DMA ||
	    !(qp->access_flags & IB_ACCESS_REMOTE_ATOMIC))
		return -MROCE_SYN_REM_ACCESS;
	err = mroce_mr_atomic(mr, rkey, pd, qp->ibqp.qp_num, va,
			      op == MROCE_WOP_CMP_SWAP, swap, compare_add, orig);
	if (err == -EFAULT)
		return -MROCE_SYN_REM_OP;
	return err ? -MROCE_SYN_REM_ACCESS : 0;
}

/*
 * SEND_WITH_INV from the peer, in MSN order before its receive
 * completion: invalidate the fast-register region (kernel QPs) or the
 * type 2 window bound to this QP (user QPs) named by rkey; it must be
 * one of the QP's PD, with that key, else the message fails with
 * INV_REQ (IB_WC_REM_INV_REQ_ERR at the requester).  A region from
 * reg_mr or a type 1 window cannot be invalidated (mroce_mr_invalidate()).
 */
static int mroce_rc_invalidate(void *ctx, u32 rkey)
{
	struct mroce_qp *qp = ctx;
	struct ib_pd *pd;

	pd = mroce_rc_req_pd(qp, qp->conn->exec_xrc, qp->conn->exec_xrc_srqn);
	if (!pd || mroce_mr_invalidate(qp->mdev, pd, qp->ibqp.qp_num, rkey))
		return -MROCE_SYN_INV_REQ;
	atomic64_inc(&qp->mdev->stats.mr_remote_inv);
	return 0;
}

static void mroce_rc_complete(void *ctx, const struct mroce_completion *c)
{
	struct mroce_qp *qp = ctx;
	struct mroce_send_wqe *w;
	u32 idx, status = c->status;
	u64 orig;

	if (c->kind == MROCE_CQE_RECV) {
		idx = qp->rq_base + c->rq_seq;
		/*
		 * WRITE_WITH_IMM consumes a WQE that placement never read.
		 * An XRC target's SENDs were all placed (a zero-length one
		 * too), so their WQE is bound; it takes no WRITE_WITH_IMM.
		 */
		if (idx != qp->rq_done ||
		    (qp->xrc_slot ? !mroce_wq_xrc_bound(qp, idx) :
		     !qp->rq.num_entries ||
		     !mroce_wq_bind(qp, idx, qp->rc_dp))) {
			/* WRITE_IMM without a posted receive. */
			ibdev_warn_ratelimited(&qp->mdev->ibdev,
					       "QP %u: no receive WQE for rq_seq %u\n",
					       qp->ibqp.qp_num, c->rq_seq);
			mroce_rc_qp_err(qp, MROCE_QPE_NO_RWQE, 0);
			return;
		}
		mroce_rc_recv_done(qp, idx, status, c, qp->rc_dp);
		return;
	}
	idx = (u32)c->cookie;
	if (WARN_ON_ONCE(idx != qp->sq_done))
		return;
	w = mroce_sq_shadow(qp, idx);
	if (!status && (c->op == MROCE_WOP_CMP_SWAP ||
			c->op == MROCE_WOP_FETCH_ADD)) {
		orig = c->atomic_orig;
		if (mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user,
				   mroce_wqe_sges(w + 1), w->num_sge, 0,
				   &orig, sizeof(orig), MROCE_TO_MR))
			status = IB_WC_LOC_PROT_ERR;
	}
	mroce_rc_req_done(qp, idx, status,
			  c->op == MROCE_WOP_READ ||
			  c->op == MROCE_WOP_CMP_SWAP ||
			  c->op == MROCE_WOP_FETCH_ADD ? c->byte_len : 0,
			  qp->rc_dp);
}

static const struct mroce_conn_ops mroce_rc_ops = {
	.place = mroce_rc_place,
	.read_check = mroce_rc_read_check,
	.atomic = mroce_rc_atomic,
	.complete = mroce_rc_complete,
	.invalidate = mroce_rc_invalidate,
	.event = mroce_trace_core_event,
};

/* ------------------------------------------------------------------ */
/* Transmit.                                                           */

static void mroce_rc_build(struct mroce_qp *qp, const struct mroce_tx *tx,
			   struct mroce_dp *dp)
{
	u32 plen = tx->pkt.payload_len, hlen, total;
	const struct mroce_send_wqe *w;
	struct sk_buff *skb;
	struct ib_pd *pd;
	u8 *buf;
	int ret;

	hlen = mroce_pkt_hdr_len(&tx->pkt);
	if (WARN_ON_ONCE(!hlen || plen > MROCE_MAX_PAYLOAD))
		return;
	total = hlen + plen + MROCE_ICRC_SIZE;
	skb = mroce_xmit_alloc(&qp->av, total, tx->sport);
	if (!skb) {
		atomic64_inc(&qp->mdev->stats.tx_errors);
		return;		/* lost: the core recovers */
	}
	buf = skb_put(skb, total);
	ret = mroce_pkt_build_hdr(buf, total, &tx->pkt);
	if (WARN_ON_ONCE(ret != hlen))
		goto free;
	if (tx->src == MROCE_SRC_WR) {
		w = mroce_sq_shadow(qp, (u32)tx->cookie);
		if (w->send_flags & MROCE_SEND_INLINE) {
			/* validated at ingest; the shadow is kernel-private */
			if (plen > w->inline_len ||
			    tx->src_offset > w->inline_len - plen)
				goto free;
			memcpy(buf + hlen, (const u8 *)(w + 1) + tx->src_offset,
			       plen);
		} else if (mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user,
					  mroce_wqe_sges(w + 1), w->num_sge,
					  tx->src_offset, buf + hlen, plen,
					  MROCE_FROM_MR)) {
			/* The region went away after the WR was posted. */
			mroce_conn_set_error(qp->conn, MROCE_ST_LOC_PROT);
			goto free;
		}
	} else if (tx->src == MROCE_SRC_PKT) {
		/* ACK blocks in the connection, under qp->lock like us */
		memcpy(buf + hlen, tx->pkt.payload, plen);
	} else if (tx->src == MROCE_SRC_LOCAL_MEM) {
		/*
		 * The region was invalidated or deregistered after the READ
		 * was checked: NAK the READ (remote access error at the
		 * requester) instead of answering data.
		 */
		pd = mroce_rc_req_pd(qp, tx->src_xrc, tx->src_xrc_srqn);
		if (!pd ||
		    mroce_rc_remote(qp, pd, tx->src_va, tx->src_rkey, buf + hlen,
				    plen, IB_ACCESS_REMOTE_READ,
				    MROCE_FROM_MR)) {
			mroce_conn_resp_abort(qp->conn, tx,
					      MROCE_SYN_REM_ACCESS);
			goto free;
		}
	}
	mroce_pkt_seal(buf, hlen + plen, total);
	__skb_queue_tail(&dp->txq, skb);
	return;
free:
	kfree_skb(skb);
}

/* Build what the core wants to send now, then arm its next timer. */
static void mroce_rc_pump(struct mroce_qp *qp, u64 now, struct mroce_dp *dp)
{
	struct mroce_tx tx;
	bool kick;
	int n;

	for (n = 0; n < MROCE_TX_BURST; n++) {
		if (mroce_conn_tx(qp->conn, now, &tx) != 1)
			break;
		mroce_rc_build(qp, &tx, dp);
	}
	/*
	 * A full burst leaves more to send: a batch steps the QP again after
	 * the other QPs of the batch, anyone else kicks the timer.  A stopped
	 * connection has no timers (mroce_conn_next_timer()).
	 */
	kick = n == MROCE_TX_BURST;
	if (kick && dp->batch) {
		mroce_rxbatch_add(qp);
		kick = false;
	}
	mroce_rc_arm(qp, kick ? now : mroce_conn_next_timer(qp->conn));
}

/* The end of every step: error flushes, new WQEs, transmit. */
static void mroce_rc_step(struct mroce_qp *qp, u64 now, struct mroce_dp *dp)
{
	if (mroce_conn_ok(qp->conn) && qp->state != IB_QPS_ERR &&
	    (qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD))
		mroce_rc_sq_ingest(qp, now, dp);
	/* Also when a WQE just failed in the ingest above. */
	if (!mroce_conn_ok(qp->conn) || qp->state == IB_QPS_ERR) {
		mroce_qp_to_error(qp);
		mroce_rc_sq_ingest(qp, now, dp);
		mroce_wq_rq_flush(qp, dp);
	}
	/* A stopped connection still sends its pending NAK. */
	mroce_rc_pump(qp, now, dp);
}

/* ------------------------------------------------------------------ */
/* Entry points.                                                       */

/* The QP's timer fired (softirq, lock held, RCU): the core's timers. */
void mroce_rc_timer(struct mroce_qp *qp, struct mroce_dp *dp)
{
	u64 now;

	if (qp->conn_live) {
		/* The step flushes both queues in the error state. */
		now = mroce_now();
		qp->rc_dp = dp;
		mroce_conn_timer(qp->conn, now);
		mroce_rc_step(qp, now, dp);
		qp->rc_dp = NULL;
	} else if (qp->state == IB_QPS_ERR) {
		/* Never connected (error from RESET or INIT). */
		mroce_rc_sq_ingest(qp, 0, dp);
		mroce_wq_rq_flush(qp, dp);
	}
}

/* Receive one validated packet (softirq, lock held, RCU). */
void mroce_rc_rx(struct mroce_qp *qp, const void *pkt, bool ce,
		 struct mroce_dp *dp)
{
	u64 now = mroce_now();
	int ret;

	qp->rc_dp = dp;
	ret = mroce_conn_rx(qp->conn, pkt, ce, now);
	if (ret && ret != MROCE_E_DUP)
		atomic64_inc(&qp->mdev->stats.rx_rejected);
	/* Completions are in dp already; the step waits for the batch. */
	if (mroce_param_rx_batch())
		mroce_rxbatch_add(qp);
	else
		mroce_rc_step(qp, now, dp);
	qp->rc_dp = NULL;
}

/* The doorbell: new send WQEs (lock held, RCU). */
void mroce_rc_doorbell(struct mroce_qp *qp, struct mroce_dp *dp)
{

	if (!qp->conn_live) {
		if (qp->state == IB_QPS_ERR)
			mroce_rc_sq_ingest(qp, 0, dp);
		return;
	}
	qp->rc_dp = dp;
	mroce_rc_step(qp, mroce_now(), dp);
	qp->rc_dp = NULL;
}

/*
 * The largest RC segment this end sends and accepts (core max_seg): what
 * the netdev's MTU carries after the largest header stack, in whole
 * MROCE_SEG_UNITs; 0 (the path MTU only) when that is no more than the
 * path MTU or the netdev_seg parameter is off.
 */
static u32 mroce_rc_max_seg(const struct mroce_qp *qp, u32 mtu)
{
	int room = (int)READ_ONCE(qp->mdev->ndev->mtu) - MROCE_FRAME_OVERHEAD;
	u32 seg;

	if (!mroce_param_netdev_seg() || room <= (int)mtu)
		return 0;
	seg = min_t(u32, room, MROCE_MAX_PAYLOAD);
	seg -= seg % MROCE_SEG_UNIT;
	return seg > mtu ? seg : 0;
}

/*
 * rts: the QP is going to RTS, its requester attributes (timeout, retry_cnt,
 * rnr_retry) are set.  Before that (RTR) the connection still sends: ACKs
 * and, as a responder, READ and atomic responses; it runs with the core's
 * defaults for those (64 ms, 7 rounds, RNR forever) rather than with
 * attributes nobody set yet (retry_cnt 0 would end a responder-only QP in
 * RETRY_EXC after the first probe round of any outage).
 */
static void mroce_rc_params(struct mroce_qp *qp, struct mroce_params *p,
			    bool rts)
{
	u32 mtu = ib_mtu_enum_to_int(qp->path_mtu);
	u64 to;

	mroce_params_default(p);
	p->num_paths = qp->conn_paths;
	p->max_msgs = qp->conn_msgs;
	p->snd_wnd = qp->conn_snd_wnd;
	p->target_qdelay_ns = mroce_param_cc_target_ns();
	p->rto_min_ns = mroce_param_rto_min_ns();
	mroce_params_set_mtu(p, mtu >= 256 && mtu <= MROCE_MAX_PAYLOAD ?
			     mtu : 1024);
	p->max_seg = mroce_rc_max_seg(qp, p->mtu);
	/* the table sizes of mroce_rc_create() */
	if (p->snd_wnd < p->max_inflight)
		mroce_params_fit_paths(p);
	p->dqpn = qp->dest_qpn;
	/*
	 * The verbs local ACK timeout (4.096 us << timeout, 0: infinite)
	 * bounds how long the QP waits before it gives up: it is the RTO
	 * before the first RTT sample and the probe period of a down path, so
	 * that an outage of every path ends in RETRY_EXC after about
	 * retry_cnt timeouts, as with RoCE.  Clamped to [1 ms, 1 s]; 0 picks
	 * 64 ms.  Once RTT samples exist the RTO follows the measured RTT.
	 */
	to = rts && qp->timeout ? 4096ULL << qp->timeout : 64 * NSEC_PER_MSEC;
	to = clamp_t(u64, to, NSEC_PER_MSEC, NSEC_PER_SEC);
	p->rto_init_ns = max_t(u64, to, p->rto_min_ns);
	p->probe_ns = to;
	p->rto_max_ns = max_t(u64, p->rto_max_ns, p->rto_init_ns);
	if (rts) {
		p->retry_budget = qp->retry_cnt;
		/* RNR as verbs defines it: rnr_retry rounds per message */
		p->rnr_retry = qp->rnr_retry;
	}
	/* min_rnr_timer (an RTR attribute) is the wait our NAKs ask for */
	p->min_rnr_timer = qp->min_rnr_timer;
	p->seed = get_random_u64();
	/*
	 * The CM's PSNs start every sequence space (our sq_psn is the peer's
	 * rq_psn); sq_psn arrives with RTS, the core waits for it.
	 */
	p->isn_rx = qp->rq_psn & MROCE_ISN_MASK;
	p->isn_tx = qp->sq_psn & MROCE_ISN_MASK;
	p->isn_tx_late = !rts;
	/* rd_atomic 0 would hold every READ forever: one at a time */
	p->max_rd_atomic = clamp_t(u32, qp->max_rd_atomic, 1, MROCE_MAX_RESP);
	p->max_dest_rd_atomic = min_t(u32, qp->max_dest_rd_atomic,
				      MROCE_MAX_RESP);
	/* XRC target: every request must name an XRC SRQ (XRCETH) */
	p->xrc_tgt = !!qp->xrc_slot;
}

/*
 * A state transition that modify_qp validated (lock held).  Entering RTR
 * starts the connection; ERR flushes; RESET forgets everything (the
 * caller cancels the timer after dropping the lock).
 */
void mroce_rc_modify(struct mroce_qp *qp, enum ib_qp_state cur,
		     enum ib_qp_state next, struct mroce_dp *dp)
{
	struct mroce_params p;
	u64 now = mroce_now();

	if (next == IB_QPS_RESET) {
		qp->conn_live = false;
		mroce_ccg_leave(qp);
		mroce_wq_reset(qp);
		return;
	}
	if (cur == IB_QPS_INIT && next == IB_QPS_RTR) {
		/* After RESET: keep what the old connection counted. */
		struct mroce_rc_counts old;

		mroce_rc_params(qp, &p, false);
		mroce_hwc_conn_read(qp, &old);
		if (mroce_conn_init(qp->conn, qp->conn_size, &p, &mroce_rc_ops,
				    qp, now)) {
			mroce_dbg(qp->mdev, "QP %u: connection parameters refused\n",
				  qp->ibqp.qp_num);
			mroce_rc_qp_err(qp, MROCE_QPE_INIT, 0);
			mroce_ccg_leave(qp);
			return;
		}
		mroce_ccg_join(qp);
		mroce_dbg(qp->mdev,
			  "QP %u: connection to QPN %u, %u paths, mtu %u, max_seg %u, rq_psn %u, rto_init %llu us\n",
			  qp->ibqp.qp_num, qp->dest_qpn, p.num_paths, p.mtu,
			  p.max_seg, p.isn_rx, p.rto_init_ns / NSEC_PER_USEC);
		mroce_hwc_prev_add(qp, &old);
		qp->rq_base = qp->rq_done;
		qp->conn_live = true;
	}
	/*
	 * timeout, retry_cnt and rnr_retry arrive with RTS (min_rnr_timer may
	 * change in RTS): hand them to the live connection.  modify_qp range
	 * checked them, so the update cannot be refused.
	 */
	if (next == IB_QPS_RTS && qp->conn_live) {
		mroce_rc_params(qp, &p, true);
		WARN_ON_ONCE(mroce_conn_update(qp->conn, &p));
	}
	if (next == IB_QPS_ERR) {
		qp->rc_dp = dp;
		mroce_qp_to_error(qp);
		mroce_rc_sq_ingest(qp, now, dp);
		mroce_wq_rq_flush(qp, dp);
		qp->rc_dp = NULL;
		return;
	}
	if (qp->conn_live) {
		qp->rc_dp = dp;
		mroce_rc_step(qp, now, dp);
		qp->rc_dp = NULL;
	}
}

/*
 * Process context.  kvzalloc() serves a block above two pages from the page
 * allocator, in a power of two of pages: the connection of a default QP
 * (about 120 KiB) would take 128 KiB, one of 130 KiB 256 KiB.  When that
 * wastes more than an eighth, take whole pages from vmalloc instead.  Freed
 * with kvfree() either way.
 */
static void *mroce_rc_conn_alloc(size_t size, gfp_t gfp)
{
	size_t block = PAGE_SIZE << get_order(size);

	if (size > 2 * PAGE_SIZE && block - size > size / 8)
		return __vmalloc(size, gfp | __GFP_ZERO);
	return kvzalloc(size, gfp);
}

/*
 * Process context, at create_qp (RC only), after the SQ ring.  The
 * connection state is sized by what the QP can use (the QP keeps these
 * sizes over every connection it makes): the paths and window module
 * parameters as they are now (window: our DSN window; the peer's is
 * accepted at max_inflight whatever it is), a message table of the SQ's
 * slots (a WR holds its slot until it completes, so more could never be
 * outstanding) and, with a window below the default, PSN windows of twice
 * a path's share of it (mroce_params_fit_paths()).  At the default window
 * the PSN windows stay 256: sized by the 2x share (128 at 16 paths) the
 * quick bench lost goodput under loss (bench/results/qp-memory.md).
 * 151 KiB at 16 paths, window 1024 and 128 SQ slots (was 168; 68 KiB at
 * window 256, 54 KiB with 16 slots; Documentation/mroce-protocol.rst,
 * 4.6).  A user QP's is charged to the creating task's memory cgroup.
 */
int mroce_rc_create(struct mroce_qp *qp)
{
	struct mroce_params p;

	mroce_params_default(&p);
	p.num_paths = mroce_param_paths();
	p.max_msgs = min_t(u32, qp->sq.num_entries, MROCE_MAX_MSGS);
	p.snd_wnd = min_t(u32, mroce_param_window(), p.max_inflight);
	if (p.snd_wnd < p.max_inflight)
		mroce_params_fit_paths(&p);
	qp->conn_size = mroce_conn_size(&p);
	if (WARN_ON_ONCE(!qp->conn_size))
		return -EINVAL;
	qp->conn_paths = p.num_paths;
	qp->conn_msgs = p.max_msgs;
	qp->conn_snd_wnd = p.snd_wnd;
	qp->conn = mroce_rc_conn_alloc(qp->conn_size,
				       qp->user ? GFP_KERNEL_ACCOUNT :
						  GFP_KERNEL);
	return qp->conn ? 0 : -ENOMEM;
}

/*
 * Process context; the QP is unreachable from the receive path and its
 * timer is cancelled.
 */
void mroce_rc_destroy(struct mroce_qp *qp)
{
	kvfree(qp->conn);
	qp->conn = NULL;
}
