// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory windows (ibv_alloc_mw, ibv_bind_mw, IBV_WR_BIND_MW).
 *
 * A window is an entry of the device's key table (mr_xa) like a region:
 * a struct mroce_mr of type MROCE_MR_MW whose key index is fixed at
 * alloc_mw and whose key byte the consumer chooses at every bind.  It is
 * FREE (no access) until a bind makes it VALID over [iova, iova + length)
 * of a user region of its PD that allows MW_BIND, with remote access
 * rights of its own; remote READ, WRITE and atomics through its key are
 * then checked against the window (mroce_mem.c) and copied through the
 * region's pinned pages.  A type 2 window bound with IB_ZERO_BASED is
 * addressed by offsets: remote va V in [0, length) stands for addr + V
 * of the region, addr being the start the bind named (IBA C10-75; type 1
 * windows cannot be zero based).
 *
 * Type 1 windows are bound with ibv_bind_mw (the provider posts a bind
 * WQE), rebound at will, and unbound by a zero-length bind; they cannot
 * be invalidated.  Type 2 windows (IBA type 2B) are bound by a BIND_MW
 * work request of a QP of the window's PD, only when FREE, and serve that
 * QP only; LOCAL_INV by a QP of the PD, or SEND_WITH_INV arriving on the
 * QP they are bound to, make them FREE again (mroce_mr_invalidate()).
 *
 * A bound window holds one of its region's mw_binds: dereg_mr and
 * rereg_mr of the region fail with EBUSY until every window bound to it
 * is unbound, invalidated or deallocated.  dealloc_mw of a bound window
 * unbinds it.
 *
 * Locking: the window's fr.lock (its own lock class, see mroce_alloc_mw())
 * protects its state, key, bounds, access and struct mroce_mwin; the
 * region's fr.lock, taken inside it, protects the region's mw_binds and
 * closed.  Binds run in the datapath of the posting QP (qp->lock held,
 * RCU, any context); alloc and dealloc in process context.
 */
#include <linux/kernel.h>
#include <linux/overflow.h>

#include "mroce.h"

/* Access rights a window may grant. */
#define MROCE_MW_RIGHTS		(IB_ACCESS_REMOTE_READ |		\
				 IB_ACCESS_REMOTE_WRITE |		\
				 IB_ACCESS_REMOTE_ATOMIC)
/* The access bits a bind may carry: rights, and ZERO_BASED (type 2). */
#define MROCE_MW_ACCESS		(MROCE_MW_RIGHTS | IB_ZERO_BASED)

int mroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibmw->device);
	struct mroce_mw *mw = to_mmw(ibmw);
	struct mroce_mr *win;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	win = mroce_mr_alloc(mdev, MROCE_MR_MW);
	if (IS_ERR(win))
		return PTR_ERR(win);
	/*
	 * Its own lock class: mroce_mw_bind() takes the region's fr.lock
	 * inside the window's.
	 */
	spin_lock_init(&win->fr.lock);
	win->mw.type = ibmw->type;
	win->fr.key = win->ibmr.lkey;
	win->fr.state = MROCE_MRS_FREE;
	win->user = true;
	ibmw->rkey = win->fr.key;
	mw->win = win;
	mroce_mr_publish(mdev, win, ibmw->pd);
	mroce_obj_inc(mdev, MROCE_OBJ_MR, true);
	return 0;
}

/* Give back a window's hold on its region (window's fr.lock held). */
void mroce_mw_unhold(struct mroce_mr *mr)
{
	unsigned long flags;

	spin_lock_irqsave(&mr->fr.lock, flags);
	if (!WARN_ON_ONCE(!mr->mw_binds))
		mr->mw_binds--;
	spin_unlock_irqrestore(&mr->fr.lock, flags);
}

/*
 * Process context.  A bound window is unbound first (its region may be
 * deregistered afterwards); nothing succeeds through its key any more,
 * and mroce_mr_release() frees the entry after an RCU grace period.
 */
int mroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct mroce_dev *mdev = to_mdev(ibmw->device);
	struct mroce_mr *win = to_mmw(ibmw)->win;
	unsigned long flags;

	spin_lock_irqsave(&win->fr.lock, flags);
	if (win->fr.state == MROCE_MRS_VALID && win->mw.mr)
		mroce_mw_unhold(win->mw.mr);
	win->mw.mr = NULL;
	win->fr.state = MROCE_MRS_INVALID;
	spin_unlock_irqrestore(&win->fr.lock, flags);
	mroce_mr_release(mdev, win);
	mroce_obj_dec(mdev, MROCE_OBJ_MR, true);
	return 0;
}

/*
 * Take a hold on the user region mr for a window bound to [addr, addr +
 * len) with access (window's fr.lock held): 0, or -EINVAL when the region
 * is of another PD, does not allow MW_BIND (C10-73), lacks LOCAL_WRITE
 * for a window that grants remote write or atomics (C10-74), does not
 * hold the range (C10-75), or is being deregistered.
 */
static int mroce_mw_hold(struct mroce_mr *mr, const struct ib_pd *pd,
			 u64 addr, u64 len, int access)
{
	unsigned long flags;
	int err = 0;

	if (mr->type != MROCE_MR_USER || mr->pd != pd ||
	    !(mr->access & IB_ACCESS_MW_BIND))
		return -EINVAL;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (addr < mr->iova || len > mr->length ||
	    addr - mr->iova > mr->length - len)
		return -EINVAL;
	spin_lock_irqsave(&mr->fr.lock, flags);
	if (mr->closed)
		err = -EINVAL;
	else
		mr->mw_binds++;
	spin_unlock_irqrestore(&mr->fr.lock, flags);
	return err;
}

/*
 * Execute a BIND_MW WQE (in the kernel's shadow, read once) posted to QP
 * qpn of pd; qp->lock and RCU held.  The window is the one whose key
 * index is that of w->wr.bind.rkey; it must be of pd (C10-72).  Returns 0
 * or IB_WC_MW_BIND_ERR: no such window, access other than remote
 * read/write/atomic and ZERO_BASED, ZERO_BASED for a type 1 window
 * (C10-75), a type 2 window not FREE (o10-37.2.30) or bound with length
 * 0 (o10-37.2.40), or a region refused by mroce_mw_hold().  On success
 * the window is VALID under w->wr.bind.rkey (type 1 with length 0: FREE
 * under it), so every earlier key is dead.  A zero-based window's remote
 * addresses are offsets: [0, length) stands for [addr, addr + length) of
 * the region (struct mroce_mwin).
 */
u32 mroce_mw_bind(struct mroce_dev *mdev, struct ib_pd *pd, u32 qpn,
		  const struct mroce_send_wqe *w)
{
	u32 rkey = w->wr.bind.rkey, access = w->wr.bind.access;
	u64 addr = w->wr.bind.addr, len = w->wr.bind.length, end;
	struct mroce_mr *win = xa_load(&mdev->mr_xa, rkey >> 8);
	struct mroce_mr *mr = NULL, *old = NULL;
	unsigned long flags;
	bool zero_based;
	u32 status = 0;

	if (!win || win->type != MROCE_MR_MW || win->pd != pd ||
	    (access & ~MROCE_MW_ACCESS) || check_add_overflow(addr, len, &end))
		return IB_WC_MW_BIND_ERR;
	/* The type is fixed at alloc_mw: no lock needed to read it. */
	zero_based = access & IB_ZERO_BASED;
	if (zero_based && win->mw.type != IB_MW_TYPE_2)
		return IB_WC_MW_BIND_ERR;
	access &= MROCE_MW_RIGHTS;
	if (len) {
		mr = mroce_mr_lookup(mdev, w->wr.bind.mr_lkey);
		if (!mr)
			return IB_WC_MW_BIND_ERR;
	}

	spin_lock_irqsave(&win->fr.lock, flags);
	if (win->fr.state == MROCE_MRS_INVALID ||
	    (win->mw.type == IB_MW_TYPE_2 &&
	     (win->fr.state != MROCE_MRS_FREE || !len)) ||
	    (mr && mroce_mw_hold(mr, pd, addr, len, access))) {
		status = IB_WC_MW_BIND_ERR;
		goto out;
	}
	if (win->fr.state == MROCE_MRS_VALID)
		old = win->mw.mr;	/* type 1 rebind or unbind */
	win->fr.key = rkey;
	win->mw.mr = mr;
	win->mw.qpn = qpn;
	win->mw.addr = addr;
	win->mw.zero_based = zero_based;
	win->iova = zero_based ? 0 : addr;
	win->length = len;
	win->access = access;
	win->fr.state = mr ? MROCE_MRS_VALID : MROCE_MRS_FREE;
	if (old)
		mroce_mw_unhold(old);
	atomic64_inc(&mdev->stats.mw_binds);
out:
	spin_unlock_irqrestore(&win->fr.lock, flags);
	return status;
}
