// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues.  An SRQ is one ring of receive WQEs (mmap'd by
 * the provider for user SRQs).  A QP attached to an SRQ takes WQEs from it
 * in order as messages that need a receive buffer arrive, copies each into
 * its own bind table (mroce_rc.c, mroce_ud.c) and so releases the ring slot
 * at once; the consumer index published to the provider counts the WQEs
 * taken.  When a take leaves fewer WQEs than the armed limit, the SRQ
 * raises IB_EVENT_SRQ_LIMIT_REACHED once and disarms (IBA 11.2.5.3); arming
 * a limit above the current count raises nothing until the next take.
 * modify_srq with IB_SRQ_MAX_WR moves the posted WQEs to a new ring.
 *
 * XRC SRQs (IB_SRQT_XRC) are the same ring, in an XRC domain and with a
 * CQ of their own, and have a number (ext.xrc.srq_num, from mdev->srq_xa)
 * that requests to an XRC target QP name on the wire (XRCETH).  No QP is
 * attached to them: mroce_xrc_srq() looks the number up for each message
 * and checks the domain (mroce_wq.c binds the WQE).
 *
 * Context: verbs entry points in process context; mroce_srq_take() and
 * kernel post_srq_recv in any context (srq->lock, interrupts disabled).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/uaccess.h>
#include <rdma/uverbs_ioctl.h>

#include "mroce.h"

static u32 mroce_srq_wqe_size(u32 max_sge)
{
	return MROCE_RECV_WQE_HDR + max_t(u32, max_sge, 1) *
				    sizeof(struct mroce_sge);
}

int mroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibsrq->device);
	struct mroce_srq *srq = to_msrq(ibsrq);
	struct mroce_create_srq_resp resp = { };
	struct mroce_ucontext *uctx;
	struct ib_srq_attr *attr = &init->attr;
	int err;

	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC)
		return -EOPNOTSUPP;
	if (init->srq_type == IB_SRQT_XRC &&
	    (!init->ext.xrc.xrcd || !init->ext.cq))
		return -EINVAL;
	/* XRC is for user QPs (mroce_dp_note_cq(), mroce_srq_take()). */
	if (init->srq_type == IB_SRQT_XRC && !udata)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > MROCE_MAX_QP_WR ||
	    attr->max_sge > MROCE_MAX_SGE || attr->srq_limit > attr->max_wr)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (mroce_obj_live(mdev, MROCE_OBJ_SRQ, true) +
	    mroce_obj_live(mdev, MROCE_OBJ_SRQ, false) >= MROCE_MAX_SRQ)
		return -ENOMEM;

	uctx = rdma_udata_to_drv_context(udata, struct mroce_ucontext, ibuc);
	spin_lock_init(&srq->lock);
	mutex_init(&srq->resize_lock);
	srq->user = !!udata;
	srq->max_sge = max_t(u32, attr->max_sge, 1);
	err = mroce_ring_alloc(mdev, &srq->ring, attr->max_wr,
			       mroce_srq_wqe_size(attr->max_sge),
			       uctx ? &uctx->ibuc : NULL);
	if (err) {
		mutex_destroy(&srq->resize_lock);
		return err;
	}
	attr->max_wr = srq->ring.num_entries;
	attr->max_sge = srq->max_sge;
	if (init->srq_type == IB_SRQT_XRC) {
		/* Reserve the number; published below, once complete. */
		err = xa_alloc_cyclic_irq(&mdev->srq_xa, &srq->srqn, NULL,
					  XA_LIMIT(1, MROCE_MAX_QPN),
					  &mdev->srq_next, GFP_KERNEL);
		if (err < 0) {
			mroce_ring_free(mdev, &srq->ring);
			mutex_destroy(&srq->resize_lock);
			return err == -EBUSY ? -ENOMEM : err;
		}
		ibsrq->ext.xrc.srq_num = srq->srqn;
	}
	if (udata) {
		resp.mmap_offset = mroce_ring_mmap_offset(&srq->ring);
		resp.mmap_size = mroce_ring_mmap_size(&srq->ring);
		resp.num_entries = srq->ring.num_entries;
		resp.wqe_size = srq->ring.entry_size;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err) {
			if (srq->srqn)
				xa_erase_irq(&mdev->srq_xa, srq->srqn);
			mroce_ring_free(mdev, &srq->ring);
			mutex_destroy(&srq->resize_lock);
			return err;
		}
	}
	mroce_obj_inc(mdev, MROCE_OBJ_SRQ, srq->user);
	/* Publish (release: the datapath sees the SRQ initialised). */
	if (srq->srqn)
		xa_store_irq(&mdev->srq_xa, srq->srqn, srq, GFP_KERNEL);
	return 0;
}

static void *mroce_srq_slot(const struct mroce_ring *ring, u32 index)
{
	return ring->buf + MROCE_RING_CTL_SIZE +
	       (size_t)(index & (ring->num_entries - 1)) * ring->entry_size;
}

/*
 * The driver part of a user MODIFY_SRQ (mroce-abi.h): 0 with *cmd (zeroed
 * when absent), -EOPNOTSUPP for a longer request this kernel does not know.
 */
static int mroce_modify_srq_cmd(struct ib_udata *udata,
				struct mroce_modify_srq_cmd *cmd)
{
	size_t len;

	memset(cmd, 0, sizeof(*cmd));
	if (!udata || !udata->inlen)
		return 0;
	if (udata->inlen > sizeof(*cmd) &&
	    !ib_is_udata_cleared(udata, sizeof(*cmd),
				 udata->inlen - sizeof(*cmd)))
		return -EOPNOTSUPP;
	len = min_t(size_t, udata->inlen, sizeof(*cmd));
	if (ib_copy_from_udata(cmd, udata, len))
		return -EFAULT;
	return 0;
}

/*
 * Move the WQEs posted and not yet taken to new (same entry size) and make
 * it the SRQ's ring; the old ring is left in *old for the caller to free.
 * srq->lock held.  The producer index of a user SRQ is read once and only
 * trusted as far as the old ring's size; the WQE bytes are copied verbatim,
 * mroce_srq_take() validates them as it does in any ring.  -EINVAL when the
 * WQEs do not fit in max_wr (the requested size) or the index is bad.
 */
static int mroce_srq_swap_ring(struct mroce_dev *mdev, struct mroce_srq *srq,
			       struct mroce_ring *new, u32 max_wr,
			       struct mroce_ring *old)
{
	u32 prod, used, i;

	/* Pairs with the provider's release: WQEs before the index. */
	prod = srq->user ? smp_load_acquire(&srq->ring.ctl->producer) :
			   srq->ring.ctl->producer;
	used = prod - srq->seen;
	if (used > srq->ring.num_entries) {
		atomic64_inc(&mdev->stats.ring_bad_index);
		ibdev_warn_ratelimited(&mdev->ibdev,
				       "SRQ resize: producer %u outside [%u, %u]\n",
				       prod, srq->seen,
				       srq->seen + srq->ring.num_entries);
		return -EINVAL;
	}
	if (used > max_wr)
		return -EINVAL;
	/* used <= max_wr <= new->num_entries: no slot of new written twice. */
	for (i = 0; i < used; i++)
		memcpy(mroce_srq_slot(new, srq->seen + i),
		       mroce_srq_slot(&srq->ring, srq->seen + i),
		       new->entry_size);
	new->ctl->consumer = srq->seen;
	/* The WQEs are in place before the index that covers them. */
	smp_store_release(&new->ctl->producer, prod);
	*old = srq->ring;
	srq->ring = *new;
	memset(new, 0, sizeof(*new));
	return 0;
}

/*
 * IB_SRQ_LIMIT arms the limit (0 disarms); IB_SRQ_MAX_WR resizes: a user
 * SRQ as mroce-abi.h describes (struct mroce_modify_srq_cmd), a kernel SRQ
 * the same way without the mmap part.  Both in one call: the limit is
 * checked against the new size and applied with it.  Process context.
 *
 * -EINVAL: an unknown mask bit, max_wr 0 or above MROCE_MAX_QP_WR, a limit
 * above the (new) max_wr, a shrink below the WQEs posted and not taken or
 * below an armed limit, a bad producer index (ring_bad_index), or a user
 * resize without resp_addr; -EFAULT when resp_addr cannot be written.
 * The SRQ is unchanged on error.
 */
int mroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibsrq->device);
	struct mroce_srq *srq = to_msrq(ibsrq);
	struct mroce_modify_srq_resp resp = { };
	struct mroce_modify_srq_cmd cmd;
	struct mroce_ucontext *uctx;
	struct mroce_ring new = { }, old = { };
	bool resize = mask & IB_SRQ_MAX_WR;
	unsigned long flags;
	u32 limit;
	int err;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (!!udata != srq->user)
		return -EINVAL;
	err = mroce_modify_srq_cmd(udata, &cmd);
	if (err)
		return err;
	if (resize) {
		if (!attr->max_wr || attr->max_wr > MROCE_MAX_QP_WR)
			return -EINVAL;
		if (udata && (udata->inlen < sizeof(cmd) || !cmd.resp_addr))
			return -EINVAL;
		if ((mask & IB_SRQ_LIMIT) && attr->srq_limit > attr->max_wr)
			return -EINVAL;
	}
	uctx = rdma_udata_to_drv_context(udata, struct mroce_ucontext, ibuc);

	mutex_lock(&srq->resize_lock);
	if (resize) {
		err = mroce_ring_alloc(mdev, &new, attr->max_wr,
				       srq->ring.entry_size,
				       uctx ? &uctx->ibuc : NULL);
		if (err)
			goto out_unlock;
		if (udata) {
			resp.mmap_offset = mroce_ring_mmap_offset(&new);
			resp.mmap_size = mroce_ring_mmap_size(&new);
			resp.num_entries = new.num_entries;
			resp.wqe_size = new.entry_size;
			if (copy_to_user(u64_to_user_ptr(cmd.resp_addr), &resp,
					 sizeof(resp))) {
				err = -EFAULT;
				goto out_free;
			}
		}
	}

	spin_lock_irqsave(&srq->lock, flags);
	limit = (mask & IB_SRQ_LIMIT) ? attr->srq_limit : srq->limit;
	if (limit > (resize ? attr->max_wr : srq->ring.num_entries)) {
		err = -EINVAL;
		goto out_spin;
	}
	if (resize) {
		err = mroce_srq_swap_ring(mdev, srq, &new, attr->max_wr, &old);
		if (err)
			goto out_spin;
	}
	srq->limit = limit;
out_spin:
	spin_unlock_irqrestore(&srq->lock, flags);
	/* The old ring after a resize, the unused new one on error. */
	mroce_ring_free(mdev, &old);
out_free:
	mroce_ring_free(mdev, &new);
out_unlock:
	mutex_unlock(&srq->resize_lock);
	return err;
}

int mroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct mroce_srq *srq = to_msrq(ibsrq);
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	attr->max_wr = srq->ring.num_entries;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

/* ib_core refuses to destroy an SRQ that a QP still uses. */
int mroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibsrq->device);
	struct mroce_srq *srq = to_msrq(ibsrq);

	if (srq->srqn) {
		/*
		 * XRC: target QPs find the SRQ by number under RCU, from
		 * softirq; ib_core frees it when we return.
		 */
		xa_erase_irq(&mdev->srq_xa, srq->srqn);
		synchronize_rcu();
	}
	mroce_ring_free(mdev, &srq->ring);
	mutex_destroy(&srq->resize_lock);
	mroce_obj_dec(mdev, MROCE_OBJ_SRQ, srq->user);
	return 0;
}

/*
 * The XRC SRQ number srqn names for XRC target QP qp: an XRC SRQ of the
 * QP's XRC domain, or NULL (none by that number, or another domain's).
 * srqn comes from the wire.  Any context, rcu_read_lock() held; the SRQ
 * stays valid until the caller leaves the read-side section.
 */
struct mroce_srq *mroce_xrc_srq(struct mroce_qp *qp, u32 srqn)
{
	struct mroce_srq *srq;

	if (!srqn || srqn > MROCE_MAX_QPN)
		return NULL;
	srq = xa_load(&qp->mdev->srq_xa, srqn);
	if (!srq || srq->ibsrq.srq_type != IB_SRQT_XRC ||
	    srq->ibsrq.ext.xrc.xrcd != qp->xrcd)
		return NULL;
	return srq;
}

/* XRC domains: nothing to allocate beyond ib_core's object. */
int mroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

int mroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

/* Kernel SRQs: queue receive WQEs (any context). */
int mroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct mroce_srq *srq = to_msrq(ibsrq);
	struct mroce_ring *ring = &srq->ring;
	struct mroce_recv_wqe *wqe;
	struct mroce_sge *sge;
	unsigned long flags;
	u32 prod;
	int i, err = 0;

	if (srq->user)
		return -EOPNOTSUPP;	/* the provider writes the ring */
	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		prod = ring->ctl->producer;
		if (wr->num_sge < 0 || wr->num_sge > srq->max_sge) {
			err = -EINVAL;
			break;
		}
		if (prod - srq->seen >= ring->num_entries) {
			err = -ENOMEM;
			break;
		}
		wqe = ring->buf + MROCE_RING_CTL_SIZE +
		      (size_t)(prod & (ring->num_entries - 1)) *
		      ring->entry_size;
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->rsvd = 0;
		sge = (struct mroce_sge *)(wqe + 1);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
		ring->ctl->producer = prod + 1;
	}
	if (err)
		*bad_wr = wr;
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}

/*
 * Take the next WQE into wqe (size bytes, at least the ring's entry size).
 * Returns false when the SRQ is empty.  Any context, inside a QP's lock.
 */
bool mroce_srq_take(struct mroce_srq *srq, void *wqe, u32 size,
		    struct mroce_dp *dp)
{
	struct mroce_ring *ring = &srq->ring;
	struct mroce_recv_wqe *w = wqe;
	bool ok = false, now = false;
	unsigned long flags;
	struct ib_event ev;
	u32 prod;

	spin_lock_irqsave(&srq->lock, flags);
	/* WQEs are read after the index that covers them. */
	prod = srq->user ? smp_load_acquire(&ring->ctl->producer) :
			   ring->ctl->producer;
	if (prod - srq->seen > ring->num_entries || prod == srq->seen)
		goto out;
	memcpy(wqe, ring->buf + MROCE_RING_CTL_SIZE +
	       (size_t)(srq->seen & (ring->num_entries - 1)) *
	       ring->entry_size, min_t(u32, size, ring->entry_size));
	if (w->num_sge > srq->max_sge)
		w->num_sge = U32_MAX;	/* fails when used */
	srq->seen++;
	/* The slot was copied out before the provider may reuse it. */
	smp_store_release(&ring->ctl->consumer, srq->seen);
	if (srq->limit && prod - srq->seen < srq->limit) {
		srq->limit = 0;
		/*
		 * dp holds one SRQ: the QP's.  An XRC target takes from
		 * many; theirs are user SRQs, whose handler (uverbs') may
		 * run here, under the QP's lock.
		 */
		if (!dp->srq_limit || dp->srq_limit == srq)
			dp->srq_limit = srq;
		else
			now = srq->user;
	}
	ok = true;
out:
	spin_unlock_irqrestore(&srq->lock, flags);
	if (now && srq->ibsrq.event_handler) {
		ev.device = srq->ibsrq.device;
		ev.element.srq = &srq->ibsrq;
		ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return ok;
}
