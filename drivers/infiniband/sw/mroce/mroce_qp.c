// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Queue pairs: RC, UC, UD and the GSI QP1 (handled like UD), their
 * send/receive rings, the state machine and attribute validation.
 *
 * Posting: for user QPs the provider writes WQEs into the mmap()ed rings
 * and rings the doorbell with a post_send/post_recv write command; the
 * datapath consumes the rings.  Kernel QPs get the same rings: post_recv
 * queues receive WQEs; kernel post_send comes with the datapath.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <rdma/uverbs_ioctl.h>

#include "mroce.h"
#include "mroce_trace.h"

#define MROCE_QP_ACCESS		(IB_ACCESS_LOCAL_WRITE |		\
				 IB_ACCESS_REMOTE_WRITE |		\
				 IB_ACCESS_REMOTE_READ |		\
				 IB_ACCESS_REMOTE_ATOMIC)

/* Attribute mask bits modify_qp implements. */
#define MROCE_QP_ATTR_SUPPORTED	(IB_QP_STATE | IB_QP_CUR_STATE |	\
				 IB_QP_EN_SQD_ASYNC_NOTIFY |		\
				 IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX |\
				 IB_QP_PORT | IB_QP_QKEY | IB_QP_AV |	\
				 IB_QP_PATH_MTU | IB_QP_TIMEOUT |	\
				 IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |	\
				 IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC |\
				 IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN |	\
				 IB_QP_MAX_DEST_RD_ATOMIC |		\
				 IB_QP_DEST_QPN)

static u32 mroce_sq_wqe_size(const struct ib_qp_cap *cap)
{
	u32 body = max_t(u32, cap->max_send_sge * sizeof(struct mroce_sge),
			 cap->max_inline_data);

	body = max_t(u32, body, sizeof(struct mroce_sge));
	return ALIGN(MROCE_SEND_WQE_HDR + body, 64);
}

static u32 mroce_rq_wqe_size(const struct ib_qp_cap *cap)
{
	u32 sge = max_t(u32, cap->max_recv_sge, 1);

	return MROCE_RECV_WQE_HDR + sge * sizeof(struct mroce_sge);
}

static int mroce_qp_check_init(struct mroce_dev *mdev,
			       const struct ib_qp_init_attr *init,
			       struct ib_udata *udata)
{
	const struct ib_qp_cap *cap = &init->cap;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		if (udata || init->port_num != 1)
			return -EINVAL;
		break;
	case IB_QPT_XRC_INI:
		/*
		 * Sends only, from user QPs: a kernel ib_send_wr cannot name
		 * the target's XRC SRQ.  No receive queue of any kind.
		 */
		if (!udata)
			return -EOPNOTSUPP;
		if (init->recv_cq || init->srq || init->cap.max_recv_wr ||
		    init->cap.max_recv_sge)
			return -EINVAL;
		break;
	case IB_QPT_XRC_TGT:
		/*
		 * ib_core creates the target QP itself (no udata) in an XRC
		 * domain and hands out shared handles: no send queue, no CQ,
		 * receives from the XRC SRQs each message names.
		 */
		if (!init->xrcd || init->send_cq || init->recv_cq ||
		    init->srq || init->cap.max_send_wr ||
		    init->cap.max_send_sge || init->cap.max_inline_data ||
		    init->cap.max_recv_wr || init->cap.max_recv_sge)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags || init->rwq_ind_tbl)
		return -EOPNOTSUPP;
	if (init->qp_type != IB_QPT_XRC_TGT &&
	    (!init->send_cq ||
	     (!init->recv_cq && init->qp_type != IB_QPT_XRC_INI)))
		return -EINVAL;
	if (cap->max_send_wr > MROCE_MAX_QP_WR ||
	    cap->max_recv_wr > MROCE_MAX_QP_WR ||
	    cap->max_send_sge > MROCE_MAX_SGE ||
	    cap->max_recv_sge > MROCE_MAX_SGE ||
	    cap->max_inline_data > MROCE_MAX_INLINE)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(struct mroce_create_qp_resp))
		return -EINVAL;
	if (mroce_obj_live(mdev, MROCE_OBJ_QP, true) +
	    mroce_obj_live(mdev, MROCE_OBJ_QP, false) >= MROCE_MAX_QP)
		return -ENOMEM;
	return 0;
}

/*
 * The QP's timer (softirq, HRTIMER_MODE_ABS_SOFT): the RC core's timers
 * and deferred transmission; for UC the rest of a long message; for UC,
 * UD and GSI QPs a doorbell rung with interrupts disabled (kernel ULPs)
 * or a flush in the error state.
 */
static enum hrtimer_restart mroce_qp_timer(struct hrtimer *t)
{
	struct mroce_qp *qp = container_of(t, struct mroce_qp, timer);
	struct mroce_dp dp;
	unsigned long flags;

	mroce_dp_init(&dp);
	rcu_read_lock();
	spin_lock_irqsave(&qp->lock, flags);
	if (mroce_qp_is_rc(qp)) {
		mroce_rc_timer(qp, &dp);
	} else if (qp->ibqp.qp_type == IB_QPT_UC) {
		mroce_uc_doorbell(qp, &dp);
	} else {
		mroce_ud_doorbell(qp, &dp);
		if (qp->state == IB_QPS_ERR)
			mroce_wq_rq_flush(qp, &dp);
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	mroce_dp_finish(qp, &dp);
	rcu_read_unlock();
	return HRTIMER_NORESTART;
}

/*
 * QP lifetime.  ib_core allocates struct mroce_qp and frees it with kfree()
 * as soon as destroy_qp returns; the QP is the verbs caller's, and only the
 * contexts that find it by its number (the receive path, for a QPN from
 * the wire; debugfs) need more than that:
 *   - qp_xa holds a reference (qp->ref) from the publication at the end of
 *     create_qp to the erase in destroy_qp (mroce_hwc_qp_erase());
 *   - a lookup takes its reference under the xarray's lock, so it either
 *     finds the QP before the erase, with a reference destroy_qp waits for,
 *     or does not find it.  (Under RCU alone it could find the QP, then
 *     touch freed memory: ib_core does not free it after a grace period.)
 *     While qp_xa holds its reference the count is not zero, so a lookup
 *     never revives a QP;
 *   - destroy_qp, once the QP is erased, drops qp_xa's reference and waits
 *     for the last mroce_qp_put() (qp->unref); only then does it stop the
 *     connection, wait for the receive batch (mroce_rxbatch.c,
 *     qp->batch_refs) and cancel the timer, which nothing else can then
 *     restart.
 * A reference is held for one bounded step (one datagram's processing in
 * softirq, one QP's debugfs lines), never across a sleep that the network
 * could prolong: no packet, forged or not, keeps a QP alive.  Readers that find
 * QPs under mdev->hwc.lock need none: destroy_qp erases under that lock.
 * The datapath's own RCU read sections (MR, MW, AH, SRQ lookups) are
 * unrelated to the QP's lifetime.
 */

/* A QP of mdev by number, with a reference (any context); NULL if none. */
struct mroce_qp *mroce_qp_get(struct mroce_dev *mdev, u32 qpn)
{
	struct mroce_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&mdev->qp_xa, flags);
	qp = xa_load(&mdev->qp_xa, qpn);
	if (qp)
		refcount_inc(&qp->ref);	/* qp_xa's keeps it above zero */
	xa_unlock_irqrestore(&mdev->qp_xa, flags);
	return qp;
}

/*
 * The QP of mdev with the lowest number >= *qpn, with a reference, its
 * number in *qpn (any context, for walks: debugfs); NULL after the last.
 */
struct mroce_qp *mroce_qp_get_next(struct mroce_dev *mdev, unsigned long *qpn)
{
	struct mroce_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&mdev->qp_xa, flags);
	qp = xa_find(&mdev->qp_xa, qpn, ULONG_MAX, XA_PRESENT);
	if (qp)
		refcount_inc(&qp->ref);
	xa_unlock_irqrestore(&mdev->qp_xa, flags);
	return qp;
}

/* Drop a reference of mroce_qp_get() or mroce_qp_get_next() (any context). */
void mroce_qp_put(struct mroce_qp *qp)
{
	/* destroy_qp may free qp as soon as complete() returns */
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->unref);
}

int mroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibqp->device);
	struct mroce_qp *qp = to_mqp(ibqp);
	struct mroce_create_qp_resp resp = { };
	struct ib_ucontext *ibuc = NULL;
	struct mroce_ucontext *uctx;
	u32 sq_wqe, rq_wqe, qpn;
	int err;

	err = mroce_qp_check_init(mdev, init, udata);
	if (err) {
		mroce_dbg(mdev, "create_qp: type %d refused: %d\n",
			  init->qp_type, err);
		return err;
	}
	uctx = rdma_udata_to_drv_context(udata, struct mroce_ucontext, ibuc);
	if (uctx)
		ibuc = &uctx->ibuc;

	spin_lock_init(&qp->lock);
	qp->state = IB_QPS_RESET;
	qp->user = !!udata;
	qp->sq_sig_type = init->sq_sig_type;
	qp->port_num = 1;

	sq_wqe = mroce_sq_wqe_size(&init->cap);
	rq_wqe = mroce_rq_wqe_size(&init->cap);
	err = mroce_ring_alloc(mdev, &qp->sq, init->cap.max_send_wr, sq_wqe,
			       ibuc);
	if (err)
		return err;
	if (init->srq) {
		/* No ring: the shadow binds the SRQ WQEs the QP takes. */
		memset(&qp->rq, 0, sizeof(qp->rq));
		qp->rq.num_entries = MROCE_SRQ_BIND;
		qp->rq.entry_size = to_msrq(init->srq)->ring.entry_size;
		rq_wqe = qp->rq.entry_size;
	} else if (init->qp_type == IB_QPT_XRC_TGT) {
		/*
		 * No ring: the shadow binds WQEs of any XRC SRQ of the
		 * domain, so its slots hold the largest receive WQE.
		 */
		memset(&qp->rq, 0, sizeof(qp->rq));
		qp->rq.num_entries = MROCE_SRQ_BIND;
		qp->rq.entry_size = MROCE_RECV_WQE_HDR +
				    MROCE_MAX_SGE * sizeof(struct mroce_sge);
		rq_wqe = qp->rq.entry_size;
		qp->xrcd = init->xrcd;
		qp->xrc_slot = kcalloc(MROCE_SRQ_BIND, sizeof(u32),
				       qp->user ? GFP_KERNEL_ACCOUNT :
						  GFP_KERNEL);
		if (!qp->xrc_slot) {
			err = -ENOMEM;
			goto err_sq;
		}
	} else if (init->qp_type == IB_QPT_XRC_INI) {
		/* No receive queue: a SEND to it is refused (INV_REQ). */
		memset(&qp->rq, 0, sizeof(qp->rq));
		rq_wqe = MROCE_RECV_WQE_HDR;
	} else {
		err = mroce_ring_alloc(mdev, &qp->rq, init->cap.max_recv_wr,
				       rq_wqe, ibuc);
		if (err)
			goto err_sq;
	}

	/* Grant what the slots can hold, within the device limits. */
	qp->cap.max_send_wr = qp->sq.num_entries;
	qp->cap.max_recv_wr = init->srq || qp->xrc_slot ? 0 :
			      qp->rq.num_entries;
	qp->cap.max_send_sge = min_t(u32, MROCE_MAX_SGE,
				     (sq_wqe - MROCE_SEND_WQE_HDR) /
				     sizeof(struct mroce_sge));
	qp->cap.max_recv_sge = init->srq || !qp->rq.num_entries ||
			       qp->xrc_slot ? 0 :
			       min_t(u32, MROCE_MAX_SGE,
				     (rq_wqe - MROCE_RECV_WQE_HDR) /
				     sizeof(struct mroce_sge));
	qp->cap.max_inline_data = min_t(u32, MROCE_MAX_INLINE,
					sq_wqe - MROCE_SEND_WQE_HDR);
	init->cap = qp->cap;

	/*
	 * Reserve the QPN (a NULL entry: xa_load() finds nothing) and publish
	 * the QP only once it is complete: the receive path looks QPNs up
	 * from softirq, and QPNs are predictable.
	 */
	if (init->qp_type == IB_QPT_GSI) {
		qpn = MROCE_GSI_QPN;
		err = xa_insert_irq(&mdev->qp_xa, qpn, NULL, GFP_KERNEL);
	} else {
		err = xa_alloc_cyclic_irq(&mdev->qp_xa, &qpn, NULL,
					  XA_LIMIT(MROCE_FIRST_QPN,
						   MROCE_MAX_QPN),
					  &mdev->qp_next, GFP_KERNEL);
		if (err > 0)
			err = 0;	/* wrapped around */
		else if (err == -EBUSY)
			err = -ENOMEM;
	}
	if (err)
		goto err_rq;
	ibqp->qp_num = qpn;
	qp->mdev = mdev;
	hrtimer_init(&qp->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	qp->timer.function = mroce_qp_timer;
	err = mroce_wq_alloc(qp);
	if (err)
		goto err_xa;
	if (mroce_qpt_is_rc(init->qp_type))
		err = mroce_rc_create(qp);
	else if (init->qp_type == IB_QPT_UC)
		err = mroce_uc_create(qp);
	if (err)
		goto err_wq;

	if (udata) {
		resp.sq_mmap_offset = mroce_ring_mmap_offset(&qp->sq);
		resp.sq_mmap_size = mroce_ring_mmap_size(&qp->sq);
		resp.rq_mmap_offset = mroce_ring_mmap_offset(&qp->rq);
		resp.rq_mmap_size = mroce_ring_mmap_size(&qp->rq);
		resp.qpn = qpn;
		resp.sq_entries = qp->sq.num_entries;
		resp.sq_wqe_size = qp->sq.entry_size;
		resp.rq_entries = qp->rq.num_entries;
		resp.rq_wqe_size = qp->rq.entry_size;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_rc;
	}
	mroce_obj_inc(mdev, MROCE_OBJ_QP, qp->user);
	/* qp_xa's reference, dropped by destroy_qp ("QP lifetime" above) */
	refcount_set(&qp->ref, 1);
	init_completion(&qp->unref);
	/* Publish (release: readers see the QP initialised). */
	xa_store_irq(&mdev->qp_xa, qpn, qp, GFP_KERNEL);
	trace_mroce_qp_create(qp);
	mroce_dbg(mdev, "QP %u created (type %d, %s)\n", qpn, init->qp_type,
		  qp->user ? "user" : "kernel");
	return 0;

err_rc:
	mroce_rc_destroy(qp);
	mroce_uc_destroy(qp);
err_wq:
	mroce_wq_free(qp);
err_xa:
	xa_erase_irq(&mdev->qp_xa, qpn);
err_rq:
	mroce_ring_free(mdev, &qp->rq);
err_sq:
	kfree(qp->xrc_slot);
	qp->xrc_slot = NULL;
	mroce_ring_free(mdev, &qp->sq);
	mroce_dbg(mdev, "create_qp: type %d failed: %d\n", init->qp_type, err);
	return err;
}

/*
 * ib_core frees the QP memory (kfree) right after this returns: every
 * reader must be done with it by then ("QP lifetime" above).
 */
int mroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibqp->device);
	struct mroce_qp *qp = to_mqp(ibqp);

	unsigned long flags;

	trace_mroce_qp_destroy(qp);
	mroce_dbg(mdev, "QP %u destroyed in state %d\n", ibqp->qp_num,
		  qp->state);
	mroce_rx_qp_gone(mdev, qp);
	/* Erases the QP from qp_xa; its counters go to the device's. */
	mroce_hwc_qp_erase(mdev, qp);
	/*
	 * No lookup finds the QP any more: drop qp_xa's reference and wait
	 * for the receive steps and debugfs readers that still hold one.
	 */
	mroce_qp_put(qp);
	wait_for_completion(&qp->unref);
	/* Nothing re-arms the timer of a QP whose connection is not live. */
	spin_lock_irqsave(&qp->lock, flags);
	qp->conn_live = false;
	/* No group member kicks the timer once the QP left its group. */
	mroce_ccg_leave(qp);
	spin_unlock_irqrestore(&qp->lock, flags);
	/* A step queued by the receive path may still be pending. */
	mroce_rxbatch_wait(qp);
	hrtimer_cancel(&qp->timer);
	mroce_hwc_qp_final(mdev, qp);
	mroce_rc_destroy(qp);
	mroce_uc_destroy(qp);
	mroce_wq_free(qp);
	kfree(qp->xrc_slot);
	mroce_ring_free(mdev, &qp->rq);
	mroce_ring_free(mdev, &qp->sq);
	mroce_obj_dec(mdev, MROCE_OBJ_QP, qp->user);
	return 0;
}

/* Range checks of the attributes in mask (no state is changed). */
static int mroce_qp_check_attr(struct mroce_qp *qp,
			       const struct ib_qp_attr *attr, int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= MROCE_PKEY_TBL_LEN)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~MROCE_QP_ACCESS))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > MROCE_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > MROCE_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_RQ_PSN) && (attr->rq_psn & ~MROCE_PSN_MASK))
		return -EINVAL;
	if ((mask & IB_QP_SQ_PSN) && (attr->sq_psn & ~MROCE_PSN_MASK))
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && (attr->dest_qp_num & ~MROCE_MAX_QPN))
		return -EINVAL;
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != qp->state)
		return -EINVAL;
	return 0;
}

/* Entering RESET discards whatever was queued (qp->lock held). */
static void mroce_qp_reset_rings(struct mroce_qp *qp)
{
	struct mroce_ring *rings[] = { &qp->sq, &qp->rq };
	int i;

	for (i = 0; i < ARRAY_SIZE(rings); i++) {
		struct mroce_ring_ctl *ctl = rings[i]->ctl;

		if (!ctl)
			continue;
		if (qp->user) {
			/*
			 * The kernel owns only the consumer index; release
			 * orders it after any earlier slot reads.
			 */
			smp_store_release(&ctl->consumer,
					  READ_ONCE(ctl->producer));
		} else {
			ctl->producer = 0;
			ctl->consumer = 0;
		}
	}
	qp->rq_producer = 0;
}

/*
 * Process context, before modify_qp takes the QP lock: the congestion
 * group of the pair the QP is about to connect, by the AV modify_qp
 * brings (av) or the one set before; NULL when there is none.
 */
static struct mroce_ccg *mroce_qp_ccg_get(struct mroce_qp *qp,
					  const struct mroce_av *av)
{
	union ib_gid sgid, dgid;
	unsigned long flags;
	bool valid = true;

	if (av) {
		sgid = av->sgid;
		dgid = av->dgid;
	} else {
		spin_lock_irqsave(&qp->lock, flags);
		valid = qp->av_valid;
		sgid = qp->av.sgid;
		dgid = qp->av.dgid;
		spin_unlock_irqrestore(&qp->lock, flags);
	}
	return valid ? mroce_ccg_get(qp->mdev, &sgid, &dgid) : NULL;
}

int mroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int mask, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibqp->device);
	struct mroce_qp *qp = to_mqp(ibqp);
	enum ib_qp_state cur, next;
	struct mroce_ccg *ccg = NULL;
	struct mroce_av av;
	struct mroce_dp dp;
	unsigned long flags;
	int err = 0;

	mroce_dp_init(&dp);
	if (udata && udata->inlen)
		return -EOPNOTSUPP;	/* no driver-specific modify data */

	/* Resolve the AV before taking the lock; it does not sleep either. */
	if ((mask & IB_QP_AV) && (mroce_qpt_is_rc(ibqp->qp_type) ||
				  ibqp->qp_type == IB_QPT_UC)) {
		err = mroce_av_from_attr(mdev, &av, &attr->ah_attr);
		if (err)
			return err;
	}
	/* An RC QP connecting: its peer's congestion group (may allocate). */
	if (mroce_qpt_is_rc(ibqp->qp_type) && (mask & IB_QP_STATE) &&
	    attr->qp_state == IB_QPS_RTR && mroce_param_cc_share())
		ccg = mroce_qp_ccg_get(qp, mask & IB_QP_AV ? &av : NULL);

	spin_lock_irqsave(&qp->lock, flags);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		mroce_dbg(mdev, "QP %u: %d -> %d with mask 0x%x refused\n",
			  ibqp->qp_num, cur, next, mask);
		err = -EINVAL;
		goto out;
	}
	if (mask & ~MROCE_QP_ATTR_SUPPORTED) {
		err = -EOPNOTSUPP;
		goto out;
	}
	err = mroce_qp_check_attr(qp, attr, mask);
	if (err) {
		mroce_dbg(mdev, "QP %u: attributes out of range (mask 0x%x)\n",
			  ibqp->qp_num, mask);
		goto out;
	}

	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		qp->port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_AV) {
		if (mroce_qpt_is_rc(ibqp->qp_type) ||
		    ibqp->qp_type == IB_QPT_UC) {
			qp->av = av;
			qp->av_valid = true;
		}
	}
	if (mask & IB_QP_PATH_MTU)
		qp->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		qp->en_sqd_async_notify = attr->en_sqd_async_notify;
	qp->attr_mask |= mask;

	if (mask & IB_QP_STATE) {
		if (next == IB_QPS_RESET && cur != IB_QPS_RESET)
			mroce_qp_reset_rings(qp);
		qp->sq_draining = 0;
		qp->state = next;
		if (next != cur) {
			trace_mroce_qp_state(qp, cur, next);
			mroce_dbg(mdev, "QP %u: state %d -> %d\n", ibqp->qp_num,
				  cur, next);
			rcu_read_lock();
			/* the reference goes to the QP (mroce_ccg.c) */
			if (ccg && cur == IB_QPS_INIT && next == IB_QPS_RTR &&
			    !qp->ccg) {
				qp->ccg = ccg;
				ccg = NULL;
			}
			if (mroce_qpt_is_rc(ibqp->qp_type))
				mroce_rc_modify(qp, cur, next, &dp);
			else if (ibqp->qp_type == IB_QPT_UC)
				mroce_uc_modify(qp, cur, next, &dp);
			else
				mroce_ud_modify(qp, next, &dp);
			rcu_read_unlock();
		}
	}
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	mroce_ccg_put(mdev, ccg);	/* not taken: refused, or no transition */
	if (next == IB_QPS_RESET)
		hrtimer_cancel(&qp->timer);
	rcu_read_lock();
	mroce_dp_finish(qp, &dp);
	rcu_read_unlock();
	return err;
}

int mroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int mask, struct ib_qp_init_attr *init)
{
	struct mroce_qp *qp = to_mqp(ibqp);
	unsigned long flags;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	spin_lock_irqsave(&qp->lock, flags);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = qp->path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = qp->qkey;
	attr->rq_psn = qp->rq_psn;
	attr->sq_psn = qp->sq_psn;
	attr->dest_qp_num = qp->dest_qpn;
	attr->qp_access_flags = qp->access_flags;
	attr->cap = qp->cap;
	if (qp->av_valid)
		mroce_av_to_attr(&qp->av, &attr->ah_attr);
	attr->pkey_index = qp->pkey_index;
	attr->en_sqd_async_notify = qp->en_sqd_async_notify;
	attr->sq_draining = qp->sq_draining;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->port_num = qp->port_num;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;

	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->port_num = qp->port_num;
	spin_unlock_irqrestore(&qp->lock, flags);
	return 0;
}

/* Encode a kernel ULP's send WR into the next SQ slot (qp->lock held). */
static int mroce_post_one_send(struct mroce_qp *qp,
			       const struct ib_send_wr *wr)
{
	struct mroce_ring *sq = &qp->sq;
	struct mroce_send_wqe *wqe;
	struct mroce_sge *sge;
	struct mroce_mr *mr;
	u32 prod = sq->ctl->producer;
	u8 *body;
	int i;

	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge)
		return -EINVAL;
	if (prod - READ_ONCE(sq->ctl->consumer) >= sq->num_entries)
		return -ENOMEM;
	wqe = sq->buf + MROCE_RING_CTL_SIZE +
	      (size_t)(prod & (sq->num_entries - 1)) * sq->entry_size;
	memset(wqe, 0, sizeof(*wqe));
	switch (wr->opcode) {
	case IB_WR_SEND:
		wqe->opcode = MROCE_WR_SEND;
		break;
	case IB_WR_SEND_WITH_IMM:
		wqe->opcode = MROCE_WR_SEND_WITH_IMM;
		wqe->imm_data = wr->ex.imm_data;
		break;
	case IB_WR_SEND_WITH_INV:
		wqe->opcode = MROCE_WR_SEND_WITH_INV;
		wqe->imm_data = cpu_to_be32(wr->ex.invalidate_rkey);
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->opcode = wr->opcode == IB_WR_RDMA_WRITE ?
			      MROCE_WR_RDMA_WRITE :
			      wr->opcode == IB_WR_RDMA_READ ?
			      MROCE_WR_RDMA_READ :
			      MROCE_WR_RDMA_WRITE_WITH_IMM;
		wqe->imm_data = wr->ex.imm_data;
		wqe->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		wqe->wr.rdma.rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->opcode = wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ?
			      MROCE_WR_ATOMIC_CMP_AND_SWP :
			      MROCE_WR_ATOMIC_FETCH_AND_ADD;
		wqe->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
		wqe->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
		wqe->wr.atomic.swap = atomic_wr(wr)->swap;
		wqe->wr.atomic.rkey = atomic_wr(wr)->rkey;
		break;
	case IB_WR_REG_MR:
		/*
		 * The key may differ from the region's in its low byte only
		 * (ib_update_fast_reg_key()): its index names the region.
		 */
		mr = to_mmr(reg_wr(wr)->mr);
		if (mr->type != MROCE_MR_FAST ||
		    reg_wr(wr)->key >> 8 != mr->index)
			return -EINVAL;
		wqe->opcode = MROCE_WR_KERN_REG_MR;
		wqe->wr.atomic.rkey = reg_wr(wr)->key;
		wqe->wr.atomic.rsvd = reg_wr(wr)->access;
		wqe->wr.atomic.remote_addr = mr->ibmr.iova;
		wqe->wr.atomic.compare_add = mr->ibmr.length;
		wqe->wr.atomic.swap = mr->ibmr.page_size;
		break;
	case IB_WR_LOCAL_INV:
		wqe->opcode = MROCE_WR_LOCAL_INV;
		wqe->wr.rdma.rkey = wr->ex.invalidate_rkey;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (wqe->opcode == MROCE_WR_KERN_REG_MR ||
	    wqe->opcode == MROCE_WR_LOCAL_INV) {
		if (qp->ibqp.qp_type != IB_QPT_RC)
			return -EINVAL;
		/* Local operations carry no data. */
		wqe->wr_id = wr->wr_id;
		wqe->send_flags = wr->send_flags & (IB_SEND_FENCE |
						    IB_SEND_SIGNALED);
		sq->ctl->producer = prod + 1;
		return 0;
	}
	/* UC: SEND, SEND_WITH_IMM, RDMA_WRITE(_WITH_IMM) (IBA table 38) */
	if (qp->ibqp.qp_type == IB_QPT_UC &&
	    wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM &&
	    wr->opcode != IB_WR_RDMA_WRITE &&
	    wr->opcode != IB_WR_RDMA_WRITE_WITH_IMM)
		return -EINVAL;
	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI) {
		if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
			return -EINVAL;
		wqe->wr.ud.ah_num = to_mah(ud_wr(wr)->ah)->ah_num;
		wqe->wr.ud.remote_qpn = ud_wr(wr)->remote_qpn;
		wqe->wr.ud.remote_qkey = ud_wr(wr)->remote_qkey;
	}
	wqe->wr_id = wr->wr_id;
	/* the WQE's flags are the verbs values (mroce-abi.h) */
	BUILD_BUG_ON((int)IB_SEND_FENCE != (int)MROCE_SEND_FENCE ||
		     (int)IB_SEND_SIGNALED != (int)MROCE_SEND_SIGNALED ||
		     (int)IB_SEND_SOLICITED != (int)MROCE_SEND_SOLICITED);
	wqe->send_flags = wr->send_flags & (IB_SEND_FENCE | IB_SEND_SIGNALED |
					    IB_SEND_SOLICITED);
	body = (u8 *)(wqe + 1);
	if (wr->send_flags & IB_SEND_INLINE) {
		u32 at = 0;

		for (i = 0; i < wr->num_sge; i++) {
			u32 n = wr->sg_list[i].length;

			if (n > qp->cap.max_inline_data - at)
				return -EINVAL;
			memcpy(body + at, (void *)(uintptr_t)wr->sg_list[i].addr,
			       n);
			at += n;
		}
		wqe->send_flags |= MROCE_SEND_INLINE;
		wqe->inline_len = at;
	} else {
		sge = (struct mroce_sge *)body;
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
		wqe->num_sge = wr->num_sge;
	}
	sq->ctl->producer = prod + 1;
	return 0;
}

/*
 * User QPs: the provider's doorbell (a post_send write command, possibly
 * with zero WRs: wr == NULL); the WQEs are already in the ring.  Kernel
 * QPs: the WRs are encoded into the ring first.  Either way the datapath
 * then reads the new WQEs.  Process context for user QPs; any context
 * for kernel QPs (transmission is left to the QP's timer when called
 * with interrupts disabled).
 */
int mroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct mroce_qp *qp = to_mqp(ibqp);
	struct mroce_dp dp;
	unsigned long flags;
	int err = 0;

	if (qp->xrc_slot) {
		*bad_wr = wr;
		return -EINVAL;		/* an XRC target has no send queue */
	}
	mroce_dp_init(&dp);
	rcu_read_lock();
	spin_lock_irqsave(&qp->lock, flags);
	if (!qp->user) {
		if (qp->state < IB_QPS_RTS) {
			err = -EINVAL;
			*bad_wr = wr;
			goto out;
		}
		for (; wr; wr = wr->next) {
			err = mroce_post_one_send(qp, wr);
			if (err) {
				*bad_wr = wr;
				break;
			}
		}
	}
	if (irqs_disabled_flags(flags)) {
		/*
		 * The caller has interrupts disabled (ib_mad posts so): we
		 * cannot transmit from here, the timer will.  (Not
		 * irqs_disabled(): under our own lock that is always true,
		 * and every doorbell went through the timer.)  On
		 * PREEMPT_RT flags are always 0: spin_lock_irqsave() leaves
		 * interrupts on and no caller can have them off (it could not
		 * take our sleeping lock), so every caller is one with
		 * interrupts on: we transmit, and completion handlers may
		 * run, inside the call.
		 */
		hrtimer_start(&qp->timer, 0, HRTIMER_MODE_ABS_SOFT);
		goto out;
	}
	if (mroce_qpt_is_rc(ibqp->qp_type))
		mroce_rc_doorbell(qp, &dp);
	else if (ibqp->qp_type == IB_QPT_UC)
		mroce_uc_doorbell(qp, &dp);
	else
		mroce_ud_doorbell(qp, &dp);
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	mroce_dp_finish(qp, &dp);
	rcu_read_unlock();
	return err;
}

static int mroce_post_one_recv(struct mroce_qp *qp,
			       const struct ib_recv_wr *wr)
{
	struct mroce_ring *rq = &qp->rq;
	struct mroce_recv_wqe *wqe;
	struct mroce_sge *sge;
	u32 cons;
	int i;

	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_recv_sge)
		return -EINVAL;
	/* Pairs with the consumer's release: its slots are free. */
	cons = smp_load_acquire(&rq->ctl->consumer);
	if (qp->rq_producer - cons >= rq->num_entries)
		return -ENOMEM;

	wqe = rq->buf + MROCE_RING_CTL_SIZE +
	      (size_t)(qp->rq_producer & (rq->num_entries - 1)) *
	      rq->entry_size;
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->rsvd = 0;
	sge = (struct mroce_sge *)(wqe + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	qp->rq_producer++;
	/* The WQE is visible before the index that publishes it. */
	smp_store_release(&rq->ctl->producer, qp->rq_producer);
	return 0;
}

/*
 * User QPs: doorbell, as post_send.  Kernel QPs: the WQEs are queued in
 * the receive ring (any context) for the datapath to consume.
 */
int mroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct mroce_qp *qp = to_mqp(ibqp);
	unsigned long flags;
	int err = 0;

	if (qp->user)
		return 0;
	if (ibqp->srq || qp->xrc_slot) {
		*bad_wr = wr;
		return -EINVAL;	/* receives go to the (XRC) SRQ */
	}

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state == IB_QPS_RESET) {
		err = -EINVAL;
		*bad_wr = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		err = mroce_post_one_recv(qp, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	/*
	 * In the error state the receives complete at once with a flush
	 * error (ib_drain_rq() waits for that).  The QP's timer does it, so
	 * no completion handler runs inside the caller's context.
	 */
	if (qp->state == IB_QPS_ERR)
		hrtimer_start(&qp->timer, 0, HRTIMER_MODE_ABS_SOFT);
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	return err;
}
