// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The work-queue layer shared by RC and UD QPs: the kernel-private
 * shadows of the send and receive queues, reading newly posted WQEs out of
 * the rings, binding receive WQEs (from the RQ or an SRQ) and completing
 * them.
 *
 * Trust.  For user QPs the rings are mapped into the process, which may
 * write any slot or index at any time.  Each WQE is copied once into the
 * shadow and validated there; the datapath reads only the shadow.  The
 * producer index is accepted only within the kernel's own cursors (see
 * mroce_wq_avail()), so the shadow of a WR in flight is never overwritten
 * and every loop over a ring is bounded by its size.
 *
 * Cursors (struct mroce_qp, under qp->lock): sq_done <= sq_next, the SQ
 * slots sq_done..sq_next hold WRs read but not completed; rq_done <=
 * rq_seen, receive WQEs read (or taken from the SRQ) but not completed.
 *
 * XRC target QPs have no receive queue: receive WQE idx (the connection's
 * rq_seq plus rq_base) is taken from the XRC SRQ its message names, when
 * the message's first packet arrives, in whatever order messages arrive
 * (mroce_wq_bind_xrc()); xrc_slot[] says which slots of rq_done..rq_seen
 * are bound and to which SRQ, and the completion goes to that SRQ's CQ.
 * XRC initiator QPs have no receive queue either (rq.num_entries 0).
 *
 * Context: every function here runs with qp->lock held (interrupts
 * disabled) and inside rcu_read_lock(), except mroce_wq_alloc() and
 * mroce_wq_free() (process context, create and destroy).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>

#include "mroce.h"
#include "core/mroce_core.h"

struct mroce_send_wqe *mroce_sq_shadow(struct mroce_qp *qp, u32 idx)
{
	return qp->sq_shadow +
	       (size_t)(idx & (qp->sq.num_entries - 1)) * qp->sq.entry_size;
}

struct mroce_recv_wqe *mroce_rq_shadow(struct mroce_qp *qp, u32 idx)
{
	return qp->rq_shadow +
	       (size_t)(idx & (qp->rq.num_entries - 1)) * qp->rq.entry_size;
}

/*
 * Process context, at create_qp.  A user QP's shadows are charged to the
 * creating task's memory cgroup.
 */
int mroce_wq_alloc(struct mroce_qp *qp)
{
	gfp_t gfp = qp->user ? GFP_KERNEL_ACCOUNT : GFP_KERNEL;

	qp->sq_shadow = kvcalloc(qp->sq.num_entries, qp->sq.entry_size, gfp);
	qp->rq_shadow = kvcalloc(qp->rq.num_entries, qp->rq.entry_size, gfp);
	if (!qp->sq_shadow || !qp->rq_shadow) {
		mroce_wq_free(qp);
		return -ENOMEM;
	}
	return 0;
}

/* Process context; nothing can reach the QP's queues any more. */
void mroce_wq_free(struct mroce_qp *qp)
{
	kvfree(qp->sq_shadow);
	kvfree(qp->rq_shadow);
	qp->sq_shadow = NULL;
	qp->rq_shadow = NULL;
}

/*
 * Entering RESET: forget every WQE read.  The cursors restart where the
 * consumer indices stand (mroce_qp_reset_rings() set them); a value
 * userspace wrote there meanwhile only moves the ring, both cursors alike.
 */
void mroce_wq_reset(struct mroce_qp *qp)
{
	qp->sq_next = qp->sq_done = READ_ONCE(qp->sq.ctl->consumer);
	qp->rq_base = qp->rq_seen = qp->rq_done =
		qp->rq.ctl ? READ_ONCE(qp->rq.ctl->consumer) : 0;
	if (qp->xrc_slot)
		memset(qp->xrc_slot, 0, MROCE_SRQ_BIND * sizeof(u32));
}

/*
 * The producer index of a ring, bounded by the kernel's own cursors:
 * userspace writes it at any time, to any value.  Slots done..next were
 * read already (their WRs live in the shadow); a valid producer lies in
 * [next, done + num_entries], so the reader takes at most the free part
 * of the shadow and never the slot of a WR still in flight.  Anything
 * else (rolled back below what was read, overrun, garbage) is ignored:
 * the reader takes nothing new, and the QP keeps its state.
 */
u32 mroce_wq_avail(struct mroce_qp *qp, struct mroce_ring *ring, u32 done,
		   u32 next)
{
	u32 prod;

	if (qp->user)	/* WQEs are read after the index that covers them */
		prod = smp_load_acquire(&ring->ctl->producer);
	else
		prod = ring->ctl->producer;
	if (prod - done > ring->num_entries || prod - done < next - done) {
		atomic64_inc(&qp->mdev->stats.ring_bad_index);
		ibdev_warn_ratelimited(&qp->mdev->ibdev,
				       "QP %u: ring producer %u outside [%u, %u]\n",
				       qp->ibqp.qp_num, prod, next,
				       done + ring->num_entries);
		return next;
	}
	return prod;
}

/* Copy newly posted receive WQEs into the shadow (bounded, validated). */
void mroce_wq_rq_ingest(struct mroce_qp *qp)
{
	u32 prod, mask = qp->rq.num_entries - 1;
	struct mroce_recv_wqe *w;

	if (qp->ibqp.srq || !qp->rq.ctl)
		return;		/* SRQ (mroce_wq_bind()), XRC: no ring */
	prod = mroce_wq_avail(qp, &qp->rq, qp->rq_done, qp->rq_seen);

	while (qp->rq_seen != prod) {
		w = mroce_rq_shadow(qp, qp->rq_seen);
		memcpy(w, qp->rq.buf + MROCE_RING_CTL_SIZE +
		       (size_t)(qp->rq_seen & mask) * qp->rq.entry_size,
		       qp->rq.entry_size);
		if (w->num_sge > qp->cap.max_recv_sge)
			w->num_sge = U32_MAX;	/* fails when used */
		qp->rq_seen++;
	}
}

/*
 * Make sure receive WQE idx (rq_done <= idx) is in the shadow: read the
 * ring, or take WQEs from the SRQ in order up to idx.  False when no
 * receive is posted for it yet (RNR for RC, a drop for UD).
 */
bool mroce_wq_bind(struct mroce_qp *qp, u32 idx, struct mroce_dp *dp)
{
	struct mroce_srq *srq;

	if (!qp->ibqp.srq) {
		mroce_wq_rq_ingest(qp);
		return idx - qp->rq_done < qp->rq_seen - qp->rq_done;
	}
	srq = to_msrq(qp->ibqp.srq);
	while (idx - qp->rq_done >= qp->rq_seen - qp->rq_done) {
		if (qp->rq_seen - qp->rq_done >= qp->rq.num_entries)
			return false;
		if (!mroce_srq_take(srq, mroce_rq_shadow(qp, qp->rq_seen),
				    qp->rq.entry_size, dp))
			return false;
		qp->rq_seen++;
	}
	return true;
}

/*
 * XRC target: bind receive WQE idx of the connection to a WQE taken from
 * XRC SRQ srqn (from the wire), unless its slot is bound already (a later
 * segment of the same message).  Returns 0 with the SRQ in *srqp, or the
 * negative syndrome to refuse the segment with: INV_REQ for an SRQ
 * number that names no XRC SRQ of the QP's domain (or a different one
 * than the slot's) and for an index outside the slots, RNR when the SRQ
 * is empty.
 */
int mroce_wq_bind_xrc(struct mroce_qp *qp, u32 idx, u32 srqn,
		      struct mroce_srq **srqp, struct mroce_dp *dp)
{
	u32 slot = idx & (MROCE_SRQ_BIND - 1);
	struct mroce_srq *srq;

	/* Messages in the MSN window are fewer than MROCE_SRQ_BIND. */
	if (idx - qp->rq_done >= MROCE_SRQ_BIND)
		return -MROCE_SYN_INV_REQ;
	srq = mroce_xrc_srq(qp, srqn);
	if (!srq)
		return -MROCE_SYN_INV_REQ;
	if (qp->xrc_slot[slot]) {
		if (qp->xrc_slot[slot] != srqn)
			return -MROCE_SYN_INV_REQ;
		*srqp = srq;
		return 0;
	}
	if (!mroce_srq_take(srq, mroce_rq_shadow(qp, idx), qp->rq.entry_size,
			    dp))
		return -MROCE_SYN_RNR;
	qp->xrc_slot[slot] = srqn;
	if (idx - qp->rq_done >= qp->rq_seen - qp->rq_done)
		qp->rq_seen = idx + 1;
	*srqp = srq;
	return 0;
}

/* XRC target: receive WQE idx (rq_done <= idx) is bound. */
bool mroce_wq_xrc_bound(struct mroce_qp *qp, u32 idx)
{
	return idx - qp->rq_done < MROCE_SRQ_BIND &&
	       qp->xrc_slot[idx & (MROCE_SRQ_BIND - 1)];
}

/*
 * XRC target: receive WQE rq_done completed.  Its SRQ's CQ gets the
 * completion; an unbound slot (flushing a QP whose messages arrived out
 * of order) or an SRQ destroyed meanwhile gets none.
 */
static void mroce_wq_xrc_done(struct mroce_qp *qp, struct mroce_cqe *cqe,
			      bool solicited, struct mroce_dp *dp)
{
	u32 *slot = &qp->xrc_slot[qp->rq_done & (MROCE_SRQ_BIND - 1)];
	struct mroce_srq *srq = *slot ? mroce_xrc_srq(qp, *slot) : NULL;

	*slot = 0;
	cqe->wr_id = mroce_rq_shadow(qp, qp->rq_done)->wr_id;
	cqe->qp_num = qp->ibqp.qp_num;
	cqe->port_num = 1;
	qp->rq_done++;
	if (srq)
		mroce_cq_push(to_mcq(srq->ibsrq.ext.cq), cqe, solicited, dp);
}

/*
 * Receive WR rq_done completed: cqe carries everything but wr_id, which
 * comes from the shadow.  Shared by RC and UD.
 */
void mroce_wq_recv_done(struct mroce_qp *qp, struct mroce_cqe *cqe,
			bool solicited, struct mroce_dp *dp)
{
	if (qp->xrc_slot) {
		mroce_wq_xrc_done(qp, cqe, solicited, dp);
		return;
	}
	cqe->wr_id = mroce_rq_shadow(qp, qp->rq_done)->wr_id;
	cqe->qp_num = qp->ibqp.qp_num;
	cqe->port_num = 1;
	qp->rq_done++;
	/*
	 * SRQ WQEs were released when taken (mroce_srq_take()).  Otherwise:
	 * the WQE was copied out, so its slot is free; publish that before the
	 * CQE so a consumer that reposts from its poll loop finds room.
	 */
	if (!qp->ibqp.srq) {
		/* Release: the WQE was read before the slot is reused. */
		smp_store_release(&qp->rq.ctl->consumer, qp->rq_done);
	}
	mroce_cq_push(to_mcq(qp->ibqp.recv_cq), cqe, solicited, dp);
}

/*
 * Send WR sq_done completed with status: a CQE (wc_opcode, byte_len) when
 * it was signaled or failed.  Shared by RC, UC and UD.
 */
void mroce_wq_send_done(struct mroce_qp *qp, u32 status, u32 wc_opcode,
			u32 byte_len, struct mroce_dp *dp)
{
	const struct mroce_send_wqe *w = mroce_sq_shadow(qp, qp->sq_done);
	struct mroce_cqe cqe = { };
	bool signal = status || qp->sq_sig_type == IB_SIGNAL_ALL_WR ||
		      (w->send_flags & MROCE_SEND_SIGNALED);

	if (signal) {
		cqe.wr_id = w->wr_id;
		cqe.status = status;
		cqe.opcode = wc_opcode;
		cqe.byte_len = byte_len;
		cqe.qp_num = qp->ibqp.qp_num;
		cqe.port_num = 1;
	}
	qp->sq_done++;
	/*
	 * The slot's WQE was read before the provider may reuse it.  Publish
	 * the free slot before the CQE: a consumer that polls the completion
	 * and posts again at once must find room in the ring.
	 */
	smp_store_release(&qp->sq.ctl->consumer, qp->sq_done);
	if (signal)
		mroce_cq_push(to_mcq(qp->ibqp.send_cq), &cqe, false, dp);
}

/* Complete every posted receive WQE with a flush error. */
void mroce_wq_rq_flush(struct mroce_qp *qp, struct mroce_dp *dp)
{
	struct mroce_cqe cqe;

	mroce_wq_rq_ingest(qp);
	while (qp->rq_done != qp->rq_seen) {
		memset(&cqe, 0, sizeof(cqe));
		cqe.status = IB_WC_WR_FLUSH_ERR;
		cqe.opcode = MROCE_WC_RECV;
		mroce_wq_recv_done(qp, &cqe, false, dp);
	}
}
