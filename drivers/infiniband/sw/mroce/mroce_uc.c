// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unreliable connected QPs (IB_QPT_UC): SEND, SEND_WITH_IMM, RDMA_WRITE
 * and RDMA_WRITE_WITH_IMM between two connected QPs, without
 * acknowledgement, retransmission or congestion control
 * (Documentation/mroce-protocol.rst, section 3.10).
 *
 * Requester: each send WQE is validated as for RC, segmented into
 * path-MTU packets (UC_* opcodes, core/mroce_uc.c) that all leave from one
 * UDP source port per QP pair, so that an ECMP network keeps them in
 * order, and completes as soon as its last packet is built.  At most
 * MROCE_UC_TX_BURST packets are built per step; the QP's timer continues.
 *
 * Responder: one message at a time (struct mroce_uc_rx).  A packet is
 * placed on arrival, SEND data into the next receive WQE (rq_done), WRITE
 * data through its rkey; a message completes when its packets arrived
 * contiguously up to its length.  A message with a packet missing is
 * abandoned: its receive WQE is not consumed (the next message reuses it)
 * and a partial WRITE stays in memory without a completion, as IB UC.
 * Errors the responder finds (no receive WQE, a message longer than it,
 * a bad rkey) drop the message and are counted; nothing from the network
 * moves the QP out of its state.
 *
 * Locking and context: every function here but create/destroy runs with
 * qp->lock held (interrupts disabled) and inside rcu_read_lock(): from the
 * doorbell (process or any context for kernel QPs), the receive handler
 * (softirq), the QP's timer (softirq) and modify_qp (process).  Packets
 * and completion handlers are left in struct mroce_dp.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jhash.h>
#include <linux/kernel.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "mroce.h"
#include "core/mroce_core.h"
#include "mroce_trace.h"

/* Packets built per step before the QP's timer takes over. */
#define MROCE_UC_TX_BURST	64
#define MROCE_UC_SPORT_BASE	0xc000

/* Per-QP UC state; everything under qp->lock. */
struct mroce_uc {
	struct mroce_uc_rx rx;		/* responder: message being assembled */
	/* Requester. */
	struct mroce_uc_msg msg;	/* WR sq_done, being segmented if busy */
	bool busy;
	u32 off;			/* offset of msg's next packet */
	u32 msn_nxt;			/* MSN of the next WR */
	u32 psn;			/* PSN of the next packet */
	u32 mtu;
	u16 sport;
};

/* Process context, create_qp. */
int mroce_uc_create(struct mroce_qp *qp)
{
	qp->uc = kzalloc(sizeof(*qp->uc),
			 qp->user ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	return qp->uc ? 0 : -ENOMEM;
}

/* Process context; the QP is unreachable and its timer cancelled. */
void mroce_uc_destroy(struct mroce_qp *qp)
{
	kfree(qp->uc);
	qp->uc = NULL;
}

static u32 mroce_uc_mtu(const struct mroce_qp *qp)
{
	u32 mtu = ib_mtu_enum_to_int(qp->path_mtu);

	return mtu >= 256 && mtu <= MROCE_MAX_PAYLOAD ? mtu : 1024;
}

/* ------------------------------------------------------------------ */
/* Requester.                                                          */

/* Send WR sq_done completed with status. */
static void mroce_uc_req_done(struct mroce_qp *qp, u32 status,
			      struct mroce_dp *dp)
{
	u32 op = mroce_sq_shadow(qp, qp->sq_done)->opcode;

	u32 wc_op = MROCE_WC_SEND, len = 0;

	if (op == MROCE_WR_RDMA_WRITE || op == MROCE_WR_RDMA_WRITE_WITH_IMM)
		wc_op = MROCE_WC_RDMA_WRITE;
	else if (op == MROCE_WR_BIND_MW)
		wc_op = MROCE_WC_BIND_MW;
	if (!status && op != MROCE_WR_BIND_MW)
		len = qp->uc->msg.length;
	mroce_wq_send_done(qp, status, wc_op, len, dp);
	/* A local error stops the QP, as for RC (IBA 10.8.3.2). */
	if (status && status != IB_WC_WR_FLUSH_ERR)
		qp->state = IB_QPS_ERR;
}

/* Validate a send WQE (in the shadow) into uc->msg; 0 or a WC status. */
static u32 mroce_uc_wqe_to_msg(struct mroce_qp *qp,
			       const struct mroce_send_wqe *w)
{
	struct mroce_uc_msg *m = &qp->uc->msg;
	struct mroce_wr wr;
	u32 status;
	u8 op;

	switch (w->opcode) {
	case MROCE_WR_SEND:
		op = MROCE_OP_UC_SEND;
		break;
	case MROCE_WR_SEND_WITH_IMM:
		op = MROCE_OP_UC_SEND_IMM;
		break;
	case MROCE_WR_RDMA_WRITE:
		op = MROCE_OP_UC_WRITE;
		break;
	case MROCE_WR_RDMA_WRITE_WITH_IMM:
		op = MROCE_OP_UC_WRITE_IMM;
		break;
	default:
		/* READ, atomics, SEND_WITH_INV, LOCAL_INV: not on UC. */
		return IB_WC_LOC_QP_OP_ERR;
	}
	status = mroce_rc_wqe_to_wr(qp, w, qp->sq_done, &wr);
	if (status)
		return status;
	memset(m, 0, sizeof(*m));
	m->opcode = op;
	m->solicited = wr.solicited;
	m->msn = qp->uc->msn_nxt++;
	m->length = wr.length;
	m->va = wr.remote_va;
	m->rkey = wr.rkey;
	m->imm = wr.imm;
	return 0;
}

/*
 * Read the next send WQE into the shadow and start it (or complete it
 * with an error).  False when there is none, or none may start yet.
 */
static bool mroce_uc_next_wr(struct mroce_qp *qp, struct mroce_dp *dp)
{
	u32 prod, mask = qp->sq.num_entries - 1, status;
	struct mroce_send_wqe *w;

	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD &&
	    qp->state != IB_QPS_ERR)
		return false;	/* read when the QP reaches RTS */
	prod = mroce_wq_avail(qp, &qp->sq, qp->sq_done, qp->sq_next);
	if (qp->sq_next == prod)
		return false;
	w = mroce_sq_shadow(qp, qp->sq_next);
	memcpy(w, qp->sq.buf + MROCE_RING_CTL_SIZE +
	       (size_t)(qp->sq_next & mask) * qp->sq.entry_size,
	       qp->sq.entry_size);
	qp->sq_next++;
	if (qp->state == IB_QPS_ERR) {
		mroce_uc_req_done(qp, IB_WC_WR_FLUSH_ERR, dp);
		return true;
	}
	/*
	 * A window bind (user QPs, as on RC): every earlier WR of a UC QP has
	 * completed once it was sent, so it runs here, in order.
	 */
	if (w->opcode == MROCE_WR_BIND_MW) {
		mroce_uc_req_done(qp, qp->user ?
				  mroce_mw_bind(qp->mdev, qp->ibqp.pd,
						qp->ibqp.qp_num, w) :
				  IB_WC_LOC_QP_OP_ERR, dp);
		return true;
	}
	status = mroce_uc_wqe_to_msg(qp, w);
	if (status) {
		mroce_uc_req_done(qp, status, dp);
		return true;
	}
	qp->uc->busy = true;
	qp->uc->off = 0;
	return true;
}

/* Build the next packet of WR sq_done; 0 or the status the WR fails with. */
static u32 mroce_uc_send_seg(struct mroce_qp *qp, struct mroce_dp *dp)
{
	const struct mroce_send_wqe *w = mroce_sq_shadow(qp, qp->sq_done);
	struct mroce_uc *uc = qp->uc;
	u32 hlen, total, plen;
	struct mroce_pkt pkt;
	struct sk_buff *skb;
	int n;
	u8 *buf;

	n = mroce_uc_seg(&uc->msg, uc->off, uc->mtu, qp->dest_qpn, uc->psn,
			 &pkt);
	if (WARN_ON_ONCE(n < 0))
		return IB_WC_LOC_QP_OP_ERR;
	plen = n;
	hlen = mroce_op_hdr_len(pkt.opcode);
	total = hlen + plen + MROCE_ICRC_SIZE;
	skb = mroce_xmit_alloc(&qp->av, total, uc->sport);
	if (skb) {
		buf = skb_put(skb, total);
		if (WARN_ON_ONCE(mroce_pkt_build_hdr(buf, total, &pkt) != hlen)) {
			kfree_skb(skb);
			return IB_WC_LOC_QP_OP_ERR;
		}
		if (w->send_flags & MROCE_SEND_INLINE) {
			/* inline_len was validated: uc->off + plen fits */
			memcpy(buf + hlen, (const u8 *)(w + 1) + uc->off, plen);
		} else if (mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user,
					  (const struct mroce_sge *)(w + 1),
					  w->num_sge, uc->off, buf + hlen,
					  plen, MROCE_FROM_MR)) {
			/* The region went away after the WR was posted. */
			kfree_skb(skb);
			return IB_WC_LOC_PROT_ERR;
		}
		mroce_pkt_seal(buf, hlen + plen, total);
		__skb_queue_tail(&dp->txq, skb);
	} else {
		/* Lost like any UC packet: the message breaks remotely. */
		atomic64_inc(&qp->mdev->stats.tx_errors);
	}
	uc->psn++;
	uc->off += plen;
	if (uc->off >= uc->msg.length) {
		uc->busy = false;
		mroce_uc_req_done(qp, IB_WC_SUCCESS, dp);
	}
	return 0;
}

/*
 * New send WQEs, or the rest of a long message (the doorbell, the QP's
 * timer, modify_qp).  In the error state every WR is flushed, the
 * receive queue too.
 */
void mroce_uc_doorbell(struct mroce_qp *qp, struct mroce_dp *dp)
{
	struct mroce_uc *uc = qp->uc;
	u32 budget = MROCE_UC_TX_BURST, status;

	for (;;) {
		if (uc->busy && qp->state == IB_QPS_ERR) {
			uc->busy = false;
			mroce_uc_req_done(qp, IB_WC_WR_FLUSH_ERR, dp);
			continue;
		}
		if (!uc->busy) {
			if (!mroce_uc_next_wr(qp, dp))
				break;
			continue;
		}
		if (!budget--) {
			/* The timer goes on, so no step runs unbounded. */
			hrtimer_start(&qp->timer, 0, HRTIMER_MODE_ABS_SOFT);
			return;
		}
		status = mroce_uc_send_seg(qp, dp);
		if (status) {
			uc->busy = false;
			mroce_uc_req_done(qp, status, dp);
		}
	}
	if (qp->state == IB_QPS_ERR)
		mroce_wq_rq_flush(qp, dp);
}

/* ------------------------------------------------------------------ */
/* Responder.                                                          */

/* Total length of a receive WQE's SGEs, or -EINVAL. */
static s64 mroce_uc_recv_room(const struct mroce_recv_wqe *w)
{
	const struct mroce_sge *sge = (const struct mroce_sge *)(w + 1);
	s64 len = 0;
	u32 i;

	if (w->num_sge == U32_MAX)
		return -EINVAL;
	for (i = 0; i < w->num_sge; i++)
		len += sge[i].length;
	return len;
}

/* Complete receive WQE rq_done with an error (a bad WQE of our own). */
static void mroce_uc_recv_fail(struct mroce_qp *qp, u32 status,
			       struct mroce_dp *dp)
{
	struct mroce_cqe cqe = { };

	cqe.status = status;
	cqe.opcode = MROCE_WC_RECV;
	cqe.src_qp = qp->dest_qpn;
	mroce_wq_recv_done(qp, &cqe, false, dp);
}

/* A message of pkt's dropped: counted, and traced (mroce_drop). */
static void mroce_uc_drop(struct mroce_qp *qp, const struct mroce_pkt *pkt,
			  u32 why)
{
	struct mroce_dev_stats *stats = &qp->mdev->stats;

	atomic64_inc(why == MROCE_DROP_UC_NO_WQE ? &stats->rx_uc_no_wqe :
		     &stats->rx_uc_refused);
	trace_mroce_drop(qp, why, 1, qp->dest_qpn, pkt->msn);
}

/*
 * The first packet of a message: is there a target for all of it?  False
 * drops the message (counted).
 */
static bool mroce_uc_target(struct mroce_qp *qp, const struct mroce_pkt *pkt,
			    struct mroce_dp *dp)
{
	const struct mroce_uc_rx *u = &qp->uc->rx;
	struct mroce_mr *mr;
	s64 room;

	if (pkt->ext & MROCE_EXT_SETH) {
		/* SEND*, WRITE_IMM: the next receive WQE, left unconsumed */
		if (!mroce_wq_bind(qp, qp->rq_done, dp)) {
			mroce_uc_drop(qp, pkt, MROCE_DROP_UC_NO_WQE);
			return false;
		}
	}
	if (pkt->opcode == MROCE_OP_UC_SEND ||
	    pkt->opcode == MROCE_OP_UC_SEND_IMM) {
		room = mroce_uc_recv_room(mroce_rq_shadow(qp, qp->rq_done));
		if (room < 0) {
			mroce_uc_recv_fail(qp, IB_WC_LOC_LEN_ERR, dp);
			mroce_uc_drop(qp, pkt, MROCE_DROP_UC_REFUSED);
			return false;
		}
		if (u->length > room) {
			mroce_uc_drop(qp, pkt, MROCE_DROP_UC_REFUSED);
			return false;
		}
		return true;
	}
	/* WRITE*: the whole range, so no part of a refused one lands */
	if (!u->length)
		return true;
	mr = mroce_mr_lookup(qp->mdev, u->rkey);
	if (!mr || mr->type == MROCE_MR_DMA ||
	    !(qp->access_flags & IB_ACCESS_REMOTE_WRITE) ||
	    mroce_mr_check(mr, u->rkey, qp->ibqp.pd, qp->ibqp.qp_num, u->va,
			   u->length, IB_ACCESS_REMOTE_WRITE)) {
		mroce_uc_drop(qp, pkt, MROCE_DROP_UC_REFUSED);
		return false;
	}
	return true;
}

/* Place one accepted packet; false drops its message (counted). */
static bool mroce_uc_place(struct mroce_qp *qp, const struct mroce_pkt *pkt,
			   struct mroce_dp *dp)
{
	const struct mroce_recv_wqe *rw;
	struct mroce_mr *mr;

	if (!pkt->payload_len)
		return true;
	if (pkt->opcode == MROCE_OP_UC_SEND ||
	    pkt->opcode == MROCE_OP_UC_SEND_IMM) {
		rw = mroce_rq_shadow(qp, qp->rq_done);
		if (!mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user,
				    (const struct mroce_sge *)(rw + 1),
				    rw->num_sge, pkt->offset,
				    (void *)pkt->payload, pkt->payload_len,
				    MROCE_TO_MR))
			return true;
		/* Our own WQE names memory we cannot write. */
		mroce_uc_recv_fail(qp, IB_WC_LOC_PROT_ERR, dp);
		mroce_uc_drop(qp, pkt, MROCE_DROP_UC_REFUSED);
		return false;
	}
	/* The region may have changed since the first packet: check again. */
	mr = mroce_mr_lookup(qp->mdev, pkt->reth.rkey);
	if (mr && mr->type != MROCE_MR_DMA &&
	    (qp->access_flags & IB_ACCESS_REMOTE_WRITE) &&
	    !mroce_mr_xfer(mr, pkt->reth.rkey, qp->ibqp.pd, qp->ibqp.qp_num,
			   pkt->reth.va + pkt->offset, (void *)pkt->payload,
			   pkt->payload_len, IB_ACCESS_REMOTE_WRITE,
			   MROCE_TO_MR))
		return true;
	mroce_uc_drop(qp, pkt, MROCE_DROP_UC_REFUSED);
	return false;
}

/* The message of pkt (its last packet) is complete. */
static void mroce_uc_complete(struct mroce_qp *qp, const struct mroce_pkt *pkt,
			      struct mroce_dp *dp)
{
	struct mroce_cqe cqe = { };

	atomic64_inc(&qp->mdev->stats.rx_uc_msgs);
	if (pkt->opcode == MROCE_OP_UC_WRITE)
		return;		/* no completion */
	cqe.opcode = pkt->opcode == MROCE_OP_UC_WRITE_IMM ?
		     MROCE_WC_RECV_RDMA_WITH_IMM : MROCE_WC_RECV;
	/* The message length, WRITE_WITH_IMM included (as rxe reports). */
	cqe.byte_len = qp->uc->rx.length;
	cqe.src_qp = qp->dest_qpn;
	if (pkt->ext & MROCE_EXT_IMETH) {
		cqe.wc_flags = MROCE_WC_WITH_IMM;
		cqe.imm_data = cpu_to_be32(pkt->imm);
	}
	mroce_wq_recv_done(qp, &cqe, pkt->flags & MROCE_F_SOLICITED, dp);
}

/* A validated UC packet for qp, from its peer (softirq, lock held, RCU). */
void mroce_uc_recv(struct mroce_qp *qp, const void *p, struct mroce_dp *dp)
{
	const struct mroce_pkt *pkt = p;
	struct mroce_uc_rx *u = &qp->uc->rx;
	struct mroce_uc_step st;
	u64 broken = u->broken;
	int ret;

	if (qp->state < IB_QPS_RTR || qp->state == IB_QPS_ERR) {
		atomic64_inc(&qp->mdev->stats.rx_qp_state);
		return;
	}
	ret = mroce_uc_rx_pkt(u, pkt, &st);
	if (u->broken != broken) {
		atomic64_add(u->broken - broken, &qp->mdev->stats.rx_uc_broken);
		trace_mroce_drop(qp, MROCE_DROP_UC_BROKEN,
				 (u32)(u->broken - broken), qp->dest_qpn,
				 pkt->msn);
	}
	if (ret) {
		if (ret != MROCE_E_DUP)
			atomic64_inc(&qp->mdev->stats.rx_rejected);
		return;
	}
	if ((st.first && !mroce_uc_target(qp, pkt, dp)) ||
	    !mroce_uc_place(qp, pkt, dp)) {
		/* Refused by us, not broken by the network. */
		mroce_uc_rx_abort(u);
		return;
	}
	if (st.last)
		mroce_uc_complete(qp, pkt, dp);
}

/* A state transition modify_qp validated (lock held, RCU). */
void mroce_uc_modify(struct mroce_qp *qp, enum ib_qp_state cur,
		     enum ib_qp_state next, struct mroce_dp *dp)
{
	struct mroce_uc *uc = qp->uc;

	if (next == IB_QPS_RESET) {
		mroce_wq_reset(qp);
		memset(uc, 0, sizeof(*uc));
		return;
	}
	if (cur == IB_QPS_INIT && next == IB_QPS_RTR)
		mroce_uc_rx_init(&uc->rx, qp->rq_psn, mroce_uc_mtu(qp));
	if (cur == IB_QPS_RTR && next == IB_QPS_RTS) {
		uc->msn_nxt = mroce_isn_start(qp->sq_psn & MROCE_ISN_MASK,
					      MROCE_ISN_MSN);
		uc->psn = 0;
		uc->mtu = mroce_uc_mtu(qp);
		uc->sport = MROCE_UC_SPORT_BASE |
			    (jhash_2words(qp->ibqp.qp_num, qp->dest_qpn, 1) &
			     0x3fff);
		uc->busy = false;
	}
	/* WQEs posted before RTS leave now; ERR flushes both queues. */
	mroce_uc_doorbell(qp, dp);
}
