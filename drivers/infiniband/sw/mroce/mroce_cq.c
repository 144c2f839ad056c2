// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Completion queues: one ring of struct mroce_cqe, mmap()ed
 * by user CQs, polled in the kernel for kernel CQs.  Only the kernel
 * produces completions (mroce_cq_push(), from the datapath).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ktime.h>
#include <rdma/uverbs_ioctl.h>

#include "mroce.h"

static_assert(sizeof(struct mroce_cqe) == 64);

/*
 * The optional driver part of a user CREATE_CQ: 0 with *flags, or
 * -EOPNOTSUPP for flags (or a longer request) this kernel does not know,
 * -EINVAL for a nonzero reserved field.
 */
static int mroce_create_cq_flags(struct ib_udata *udata, u32 *flags)
{
	struct mroce_create_cq_cmd cmd = { };
	size_t len;

	*flags = 0;
	if (!udata || !udata->inlen)
		return 0;
	len = min_t(size_t, udata->inlen, sizeof(cmd));
	if (udata->inlen > sizeof(cmd) &&
	    !ib_is_udata_cleared(udata, sizeof(cmd),
				 udata->inlen - sizeof(cmd)))
		return -EOPNOTSUPP;
	if (ib_copy_from_udata(&cmd, udata, len))
		return -EFAULT;
	if (cmd.flags & ~MROCE_CREATE_CQ_TIMESTAMP)
		return -EOPNOTSUPP;
	if (cmd.rsvd)
		return -EINVAL;
	*flags = cmd.flags;
	return 0;
}

int mroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibcq->device);
	struct mroce_cq *cq = to_mcq(ibcq);
	struct mroce_create_cq_resp resp = { };
	struct mroce_ucontext *uctx;
	u32 flags;
	int err;

	/*
	 * Completion timestamps reach only user CQs (struct ib_wc has no
	 * field for them); the uverbs flag and ours are the same request.
	 */
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION ||
	    (attr->flags && !udata))
		return -EOPNOTSUPP;
	err = mroce_create_cq_flags(udata, &flags);
	if (err)
		return err;
	if (attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION)
		flags |= MROCE_CREATE_CQ_TIMESTAMP;
	if (attr->cqe < 1 || attr->cqe > MROCE_MAX_CQE)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (mroce_obj_live(mdev, MROCE_OBJ_CQ, true) +
	    mroce_obj_live(mdev, MROCE_OBJ_CQ, false) >= MROCE_MAX_CQ)
		return -ENOMEM;

	uctx = rdma_udata_to_drv_context(udata, struct mroce_ucontext, ibuc);
	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_lock);
	cq->user = !!udata;
	cq->timestamp = !!(flags & MROCE_CREATE_CQ_TIMESTAMP);
	err = mroce_ring_alloc(mdev, &cq->ring, attr->cqe,
			       sizeof(struct mroce_cqe),
			       uctx ? &uctx->ibuc : NULL);
	if (err)
		return err;
	ibcq->cqe = cq->ring.num_entries;

	if (udata) {
		resp.mmap_offset = mroce_ring_mmap_offset(&cq->ring);
		resp.mmap_size = mroce_ring_mmap_size(&cq->ring);
		resp.num_entries = cq->ring.num_entries;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err) {
			mroce_ring_free(mdev, &cq->ring);
			return err;
		}
	}
	mroce_obj_inc(mdev, MROCE_OBJ_CQ, cq->user);
	return 0;
}

/* ib_core refuses to destroy a CQ that a QP still uses (-EBUSY). */
int mroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibcq->device);
	struct mroce_cq *cq = to_mcq(ibcq);

	mroce_ring_free(mdev, &cq->ring);
	mutex_destroy(&cq->resize_lock);
	mroce_obj_dec(mdev, MROCE_OBJ_CQ, cq->user);
	return 0;
}

static void *mroce_cq_slot(const struct mroce_ring *ring, u32 index)
{
	return ring->buf + MROCE_RING_CTL_SIZE +
	       (size_t)(index & (ring->num_entries - 1)) * ring->entry_size;
}

/*
 * Resize: user CQs (RESIZE_CQ, udata set) and kernel CQs (ib_resize_cq).
 * Process context.
 *
 * A new ring of at least cqe slots (rounded up as at create) is allocated
 * and, for a user CQ, exported and described to the process before
 * anything changes.  Then, under the CQ lock, so no completion is added
 * meanwhile, the outstanding CQEs -- from the consumer index, read once,
 * to the kernel's producer -- are copied to the same free-running indices
 * of the new ring, whose control block takes both indices, and only then
 * does cq->ring point to it.  The count is bounded by the kernel's
 * producer and by both rings' sizes; the CQE bytes are copied verbatim,
 * never interpreted (userspace could have rewritten them, but they only
 * go back to it).
 *
 * The old ring is freed after the switch like a destroyed CQ's: its mmap
 * offset is withdrawn, and pages still mapped by the process stay alive
 * until it unmaps them (mroce_ring.c), so reading them is never a
 * use-after-free; the kernel does not write them again.
 *
 * -EINVAL: cqe outside [1, MROCE_MAX_CQE], cqe below the number of CQEs
 * not yet consumed, or a consumer index that claims more than the old
 * ring holds (counted as ring_bad_index).  The CQ is unchanged on error.
 */
int mroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibcq->device);
	struct mroce_cq *cq = to_mcq(ibcq);
	struct mroce_resize_cq_resp resp = { };
	struct mroce_ucontext *uctx;
	struct mroce_ring new, old;
	unsigned long flags;
	u32 cons, used, i;
	int err;

	if (cqe < 1 || cqe > MROCE_MAX_CQE)
		return -EINVAL;
	if (!!udata != cq->user)
		return -EINVAL;
	if (udata) {
		if (udata->outlen < sizeof(resp))
			return -EINVAL;
		/* No request data is defined yet. */
		if (udata->inlen &&
		    !ib_is_udata_cleared(udata, 0, udata->inlen))
			return -EOPNOTSUPP;
	}
	uctx = rdma_udata_to_drv_context(udata, struct mroce_ucontext, ibuc);

	mutex_lock(&cq->resize_lock);
	err = mroce_ring_alloc(mdev, &new, cqe, sizeof(struct mroce_cqe),
			       uctx ? &uctx->ibuc : NULL);
	if (err)
		goto out_unlock;
	if (udata) {
		resp.mmap_offset = mroce_ring_mmap_offset(&new);
		resp.mmap_size = mroce_ring_mmap_size(&new);
		resp.num_entries = new.num_entries;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_free;
	}

	spin_lock_irqsave(&cq->lock, flags);
	/* Pairs with the poller's release: the slots it freed are read. */
	cons = smp_load_acquire(&cq->ring.ctl->consumer);
	used = cq->prod - cons;
	if (used > cq->ring.num_entries) {
		spin_unlock_irqrestore(&cq->lock, flags);
		atomic64_inc(&mdev->stats.ring_bad_index);
		ibdev_warn_ratelimited(&mdev->ibdev,
				       "CQ resize: consumer %u outside [%u, %u]\n",
				       cons, cq->prod - cq->ring.num_entries,
				       cq->prod);
		err = -EINVAL;
		goto err_free;
	}
	if (used > (u32)cqe) {
		spin_unlock_irqrestore(&cq->lock, flags);
		err = -EINVAL;
		goto err_free;
	}
	/* used <= cqe <= new.num_entries: no slot of new is written twice. */
	for (i = 0; i < used; i++)
		memcpy(mroce_cq_slot(&new, cons + i),
		       mroce_cq_slot(&cq->ring, cons + i), new.entry_size);
	new.ctl->consumer = cons;
	new.ctl->producer = cq->prod;
	old = cq->ring;
	cq->ring = new;
	ibcq->cqe = new.num_entries;
	spin_unlock_irqrestore(&cq->lock, flags);

	mroce_ring_free(mdev, &old);
	mutex_unlock(&cq->resize_lock);
	return 0;

err_free:
	mroce_ring_free(mdev, &new);
out_unlock:
	mutex_unlock(&cq->resize_lock);
	return err;
}

static u32 mroce_wc_flags(u32 f)
{
	u32 out = 0;

	if (f & MROCE_WC_GRH)
		out |= IB_WC_GRH;
	if (f & MROCE_WC_WITH_IMM)
		out |= IB_WC_WITH_IMM;
	if (f & MROCE_WC_WITH_INV)
		out |= IB_WC_WITH_INVALIDATE;
	return out;
}

static void mroce_cqe_to_wc(struct mroce_dev *mdev,
			    const struct mroce_cqe *cqe, struct ib_wc *wc)
{
	struct mroce_qp *qp;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;	/* same numbering as ib_wc_opcode */
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->wc_flags = mroce_wc_flags(cqe->wc_flags);
	if (cqe->wc_flags & MROCE_WC_WITH_INV)
		wc->ex.invalidate_rkey = be32_to_cpu(cqe->imm_data);
	else
		wc->ex.imm_data = cqe->imm_data;
	wc->src_qp = cqe->src_qp;
	wc->pkey_index = cqe->pkey_index;
	wc->slid = cqe->slid;
	wc->sl = cqe->sl;
	wc->dlid_path_bits = cqe->dlid_path_bits;
	wc->port_num = 1;
	if (cqe->network_hdr_type == MROCE_NET_IPV4 ||
	    cqe->network_hdr_type == MROCE_NET_IPV6) {
		wc->network_hdr_type = cqe->network_hdr_type;
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	}
	/*
	 * A QP outlives the completions it generated on a kernel CQ (the ULP
	 * polls them before it destroys the QP).  Only the address is taken
	 * here, the QP is not touched: no reference ("QP lifetime",
	 * mroce_qp.c).
	 */
	qp = xa_load(&mdev->qp_xa, cqe->qp_num);
	wc->qp = qp ? &qp->ibqp : NULL;
}

/*
 * Append one completion.  Any context; the caller holds the QP lock (lock
 * order: QP, then CQ).  The producer index is kernel-private, the
 * consumer index of a user CQ is read from the shared page and only
 * trusted as far as the ring size.  A full ring loses the CQE and puts
 * the CQ in error (IB_EVENT_CQ_ERR, raised by mroce_dp_finish()).  When
 * the CQ is armed for this completion, its handler is left in dp.
 *
 * The timestamps are this function's, not the caller's: the clocks are
 * read under the CQ lock, so ts_raw follows the ring order, and a CQ
 * without timestamps gets zeroes.
 */
/*
 * Leave cq's completion handler (or, with err, its CQ_ERR event) for
 * mroce_dp_finish().  A step of a QP touches its send and receive CQs,
 * which dp holds; an XRC target completes into the CQs of any number of
 * XRC SRQs.  Those are always user CQs (kernel XRC SRQs are refused),
 * whose handlers are uverbs' (a spinlock and a wakeup, no call back into
 * the driver), so once dp is full they are called here, under the QP's
 * lock.
 */
static void mroce_dp_note_cq(struct mroce_dp *dp, struct mroce_cq *cq,
			     bool err)
{
	struct ib_event ev;
	int i;

	for (i = 0; i < ARRAY_SIZE(dp->notify); i++)
		if (!dp->notify[i] || dp->notify[i] == cq) {
			dp->notify[i] = cq;
			dp->cq_err[i] |= err;
			return;
		}
	if (WARN_ON_ONCE(!cq->user))
		return;
	if (!err) {
		if (cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	} else if (cq->ibcq.event_handler) {
		ev.device = cq->ibcq.device;
		ev.element.cq = &cq->ibcq;
		ev.event = IB_EVENT_CQ_ERR;
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
}

void mroce_cq_push(struct mroce_cq *cq, const struct mroce_cqe *cqe,
		   bool solicited, struct mroce_dp *dp)
{
	struct mroce_ring *ring = &cq->ring;
	struct mroce_cqe *slot;
	unsigned long flags;
	bool fire = false, err = false;
	u32 cons;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflow)
		goto out;
	/* Pairs with the poller's release: the slots it freed are read. */
	cons = smp_load_acquire(&ring->ctl->consumer);
	if (cq->prod - cons >= ring->num_entries) {
		cq->overflow = true;
		err = true;
		goto out;
	}
	slot = mroce_cq_slot(ring, cq->prod);
	memcpy(slot, cqe, sizeof(*cqe));
	if (cq->timestamp) {
		slot->ts_raw = ktime_get_ns();
		slot->ts_wallclock = ktime_get_real_ns();
	} else {
		slot->ts_raw = 0;
		slot->ts_wallclock = 0;
	}
	cq->prod++;
	/* The CQE is visible before the index that publishes it. */
	smp_store_release(&ring->ctl->producer, cq->prod);
	if (cq->notify & IB_CQ_NEXT_COMP ||
	    (solicited && cq->notify & IB_CQ_SOLICITED)) {
		cq->notify = 0;
		fire = true;
	}
out:
	spin_unlock_irqrestore(&cq->lock, flags);
	if (fire || err)
		mroce_dp_note_cq(dp, cq, err);
}

/* Kernel CQs only (uverbs POLL_CQ is not enabled). Any context. */
int mroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct mroce_dev *mdev = to_mdev(ibcq->device);
	struct mroce_cq *cq = to_mcq(ibcq);
	struct mroce_ring *ring = &cq->ring;
	unsigned long flags;
	u32 prod, cons;
	int n = 0;

	if (cq->user)
		return -EOPNOTSUPP;

	spin_lock_irqsave(&cq->lock, flags);
	/* Pairs with the producer's release: CQEs before the index. */
	prod = smp_load_acquire(&ring->ctl->producer);
	cons = ring->ctl->consumer;
	if (prod - cons > ring->num_entries) {
		spin_unlock_irqrestore(&cq->lock, flags);
		ibdev_err_ratelimited(&mdev->ibdev, "CQ %u ring overrun\n",
				      cq->ring.num_entries);
		return -EIO;
	}
	while (n < num_entries && cons != prod) {
		const struct mroce_cqe *cqe;

		cqe = ring->buf + MROCE_RING_CTL_SIZE +
		      (size_t)(cons & (ring->num_entries - 1)) *
		      ring->entry_size;
		mroce_cqe_to_wc(mdev, cqe, &wc[n++]);
		cons++;
	}
	/* Slots are read before the producer may reuse them. */
	smp_store_release(&ring->ctl->consumer, cons);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/*
 * Arm the CQ.  The datapath raises the completion event when it adds a
 * CQE to an armed CQ.  Any context.
 */
int mroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct mroce_cq *cq = to_mcq(ibcq);
	unsigned long irqflags;
	int ret = 0;
	u32 prod;

	spin_lock_irqsave(&cq->lock, irqflags);
	cq->notify |= flags & IB_CQ_SOLICITED_MASK;
	prod = cq->prod;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    READ_ONCE(cq->ring.ctl->consumer) != prod)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}
