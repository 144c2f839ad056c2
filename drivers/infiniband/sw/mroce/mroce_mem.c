// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions as the datapath sees them: key lookup, the checks of
 * a remote or local access, copies through the pinned pages of a user
 * region, through the registered page list of a fast-register region, or
 * through kernel virtual addresses (the DMA region and the local DMA lkey
 * of kernel QPs), and the local operations on fast-register regions
 * (IB_WR_REG_MR, IB_WR_LOCAL_INV, remote invalidation).  A memory window
 * (MROCE_MR_MW, mroce_mw.c) is an entry of the same key table: checked
 * like a fast-register region (key, state, PD, and for type 2 the QP)
 * against its own bounds and access, then copied through the user region
 * it is bound to.  Windows have no lkey: no local access goes through
 * one.
 *
 * Context: any (softirq receive, hrtimer, process-context doorbells), with
 * rcu_read_lock() held by the caller: dereg_mr waits for a grace period
 * before it unpins or frees anything, so a region found here stays usable
 * until the read-side section ends.  A fast-register region's
 * registration is under its fr.lock (see struct mroce_fr): check and copy
 * happen in one fr.lock section, so an access either completes before an
 * invalidation or fails after it.
 *
 * The device uses ib_core's virtual DMA mapping (no dma_device), so the
 * page addresses ib_sg_to_pages() hands to map_mr_sg are kernel virtual
 * addresses.
 */
#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sizes.h>

#include "mroce.h"

/* Serialises the atomics of every mroce responder on this host. */
static DEFINE_SPINLOCK(mroce_atomic_lock);

#define MROCE_REMOTE_ACCESS	(IB_ACCESS_REMOTE_READ |		\
				 IB_ACCESS_REMOTE_WRITE |		\
				 IB_ACCESS_REMOTE_ATOMIC)

/*
 * Fast-register regions and windows change their key and state at run
 * time: checked and used under their fr.lock.
 */
static bool mroce_mr_locked(const struct mroce_mr *mr)
{
	return mr->type == MROCE_MR_FAST || mr->type == MROCE_MR_MW;
}

/*
 * Region whose key index matches key, or NULL.  For DMA and user regions
 * the whole key is compared here; the key of a fast-register region or
 * window changes with every REG_MR or bind, so it is compared under
 * fr.lock by the check.  RCU read side.
 */
struct mroce_mr *mroce_mr_lookup(struct mroce_dev *mdev, u32 key)
{
	struct mroce_mr *mr = xa_load(&mdev->mr_xa, key >> 8);

	if (!mr)
		return NULL;
	if (mroce_mr_locked(mr))
		return mr;
	return mr->ibmr.lkey == key ? mr : NULL;
}

/* The checks of mroce_mr_check(); fr.lock held for mroce_mr_locked(). */
static int mroce_mr_check_locked(struct mroce_mr *mr, u32 key,
				 struct ib_pd *pd, u32 qpn, u64 va, u64 len,
				 int access)
{
	if (mr->pd != pd)
		return -EACCES;
	if (mroce_mr_locked(mr) &&
	    (mr->fr.state != MROCE_MRS_VALID || mr->fr.key != key))
		return -EACCES;
	/* A window: remote access only, a type 2 window by its QP only. */
	if (mr->type == MROCE_MR_MW &&
	    (!(access & MROCE_REMOTE_ACCESS) ||
	     (mr->mw.type == IB_MW_TYPE_2 && mr->mw.qpn != qpn)))
		return -EACCES;
	if ((mr->access & access) != access)
		return -EACCES;
	if (mr->type == MROCE_MR_DMA)
		return 0;
	if (va < mr->iova || len > mr->length ||
	    va - mr->iova > mr->length - len)
		return -ERANGE;
	return 0;
}

/*
 * 0 when key is valid for mr, [va, va + len) lies inside mr, mr belongs
 * to pd and allows access (IB_ACCESS_* bits, 0 for a local read); else
 * -EACCES (wrong PD, key, state, QP or permission) or -ERANGE (out of
 * bounds).  qpn: the QP the access arrived on (a type 2 window only
 * serves the QP it was bound through); 0 for local accesses.  Advisory
 * for fast regions and windows (the registration may change right
 * after): mroce_mr_xfer() checks again.
 */
int mroce_mr_check(struct mroce_mr *mr, u32 key, struct ib_pd *pd, u32 qpn,
		   u64 va, u64 len, int access)
{
	unsigned long flags;
	int err;

	if (!mroce_mr_locked(mr))
		return mroce_mr_check_locked(mr, key, pd, qpn, va, len,
					     access);
	spin_lock_irqsave(&mr->fr.lock, flags);
	err = mroce_mr_check_locked(mr, key, pd, qpn, va, len, access);
	spin_unlock_irqrestore(&mr->fr.lock, flags);
	return err;
}

static void mroce_copy(void *p, void *buf, u32 len, enum mroce_copy_dir dir)
{
	if (dir == MROCE_TO_MR)
		memcpy(p, buf, len);
	else
		memcpy(buf, p, len);
}

/* Kernel address of va in a registered fast region (checked, locked). */
static void *mroce_fr_addr(struct mroce_mr *mr, u64 va)
{
	u32 shift = mr->fr.page_shift;
	u64 idx = (va >> shift) - (mr->iova >> shift);

	if (WARN_ON_ONCE(idx >= mr->fr.npages))
		return NULL;
	return (void *)(uintptr_t)(mr->fr.pages[idx] +
				   (va & ((1ULL << shift) - 1)));
}

/* Copy len bytes between buf and the region at va (checked, locked). */
static void mroce_mr_copy(struct mroce_mr *mr, u64 va, void *buf, u32 len,
			  enum mroce_copy_dir dir)
{
	u64 off;

	/*
	 * A window: va (checked inside the window) translated to its
	 * region's address, an identity unless the window is zero based.
	 */
	if (mr->type == MROCE_MR_MW) {
		va = mr->mw.addr + (va - mr->iova);
		mr = mr->mw.mr;
	}
	if (mr->type == MROCE_MR_DMA) {
		mroce_copy((void *)(uintptr_t)va, buf, len, dir);
		return;
	}
	if (mr->type == MROCE_MR_FAST) {
		u64 psz = 1ULL << mr->fr.page_shift;

		while (len) {
			u32 n = min_t(u64, len, psz - (va & (psz - 1)));
			void *p = mroce_fr_addr(mr, va);

			if (!p)
				return;
			mroce_copy(p, buf, n, dir);
			buf += n;
			va += n;
			len -= n;
		}
		return;
	}
	off = va - mr->iova + mr->page_off;
	while (len) {
		u32 pg = off >> PAGE_SHIFT, in = off & ~PAGE_MASK;
		u32 n = min_t(u32, len, PAGE_SIZE - in);
		void *kaddr;

		if (WARN_ON_ONCE(pg >= mr->npages))
			return;
		kaddr = kmap_local_page(mr->pages[pg]);
		mroce_copy(kaddr + in, buf, n, dir);
		kunmap_local(kaddr);
		if (dir == MROCE_TO_MR)
			flush_dcache_page(mr->pages[pg]);
		buf += n;
		off += n;
		len -= n;
	}
}

/*
 * Check (as mroce_mr_check()) and copy len bytes between buf and the
 * region at va, atomically with respect to REG_MR and invalidation.
 */
int mroce_mr_xfer(struct mroce_mr *mr, u32 key, struct ib_pd *pd, u32 qpn,
		  u64 va, void *buf, u32 len, int access,
		  enum mroce_copy_dir dir)
{
	bool locked = mroce_mr_locked(mr);
	unsigned long flags = 0;
	int err;

	if (locked)
		spin_lock_irqsave(&mr->fr.lock, flags);
	err = mroce_mr_check_locked(mr, key, pd, qpn, va, len, access);
	if (!err)
		mroce_mr_copy(mr, va, buf, len, dir);
	if (locked)
		spin_unlock_irqrestore(&mr->fr.lock, flags);
	return err;
}

/*
 * Execute a remote atomic on the 8-byte aligned word at va: check
 * (REMOTE_ATOMIC), then read-modify-write under mroce_atomic_lock.
 */
int mroce_mr_atomic(struct mroce_mr *mr, u32 key, struct ib_pd *pd, u32 qpn,
		    u64 va, bool cmp_swap, u64 swap, u64 compare_add,
		    u64 *orig)
{
	bool locked = mroce_mr_locked(mr);
	struct page *page = NULL;
	unsigned long flags = 0;
	struct mroce_mr *t;
	u64 *p = NULL, off;
	int err;

	if (locked)
		spin_lock_irqsave(&mr->fr.lock, flags);
	err = mroce_mr_check_locked(mr, key, pd, qpn, va, 8,
				    IB_ACCESS_REMOTE_ATOMIC);
	if (err)
		goto out;
	/* The memory: a window's is that of its region (as mroce_mr_copy()). */
	t = mr;
	if (mr->type == MROCE_MR_MW) {
		va = mr->mw.addr + (va - mr->iova);
		t = mr->mw.mr;
	}
	if (t->type == MROCE_MR_DMA) {
		p = (u64 *)(uintptr_t)va;
	} else if (t->type == MROCE_MR_FAST) {
		p = mroce_fr_addr(t, va);
	} else {
		off = va - t->iova + t->page_off;
		if (!WARN_ON_ONCE((off >> PAGE_SHIFT) >= t->npages)) {
			page = t->pages[off >> PAGE_SHIFT];
			p = kmap_local_page(page) + (off & ~PAGE_MASK);
		}
	}
	if (!p) {
		err = -EFAULT;
		goto out;
	}
	spin_lock(&mroce_atomic_lock);
	*orig = READ_ONCE(*p);
	if (cmp_swap) {
		if (*orig == compare_add)
			WRITE_ONCE(*p, swap);
	} else {
		WRITE_ONCE(*p, *orig + compare_add);
	}
	spin_unlock(&mroce_atomic_lock);
	if (page)
		kunmap_local(p);
out:
	if (locked)
		spin_unlock_irqrestore(&mr->fr.lock, flags);
	return err;
}

/*
 * Execute IB_WR_REG_MR for a QP of pd: make the fast-register region
 * named by key's index VALID with key, access and the translation
 * [iova, iova + length) over its current page list.  Returns 0 or the
 * completion status: IB_WC_LOC_PROT_ERR when the region is not of pd,
 * IB_WC_LOC_QP_OP_ERR when there is no such fast region, it is not FREE
 * (a second REG_MR on a valid region), or access, page size or length
 * are invalid.
 */
u32 mroce_mr_fast_reg(struct mroce_dev *mdev, struct ib_pd *pd, u32 key,
		      int access, u64 iova, u64 length, u32 page_size)
{
	struct mroce_mr *mr = xa_load(&mdev->mr_xa, key >> 8);
	u32 shift, n, status = 0;
	unsigned long flags;
	u64 end;

	if (!mr || mr->type != MROCE_MR_FAST)
		return IB_WC_LOC_QP_OP_ERR;
	if (mroce_mr_check_access(access) || !is_power_of_2(page_size) ||
	    page_size < SZ_4K || length > MROCE_MAX_MR_SIZE ||
	    check_add_overflow(iova, length, &end))
		return IB_WC_LOC_QP_OP_ERR;
	shift = ilog2(page_size);

	spin_lock_irqsave(&mr->fr.lock, flags);
	n = READ_ONCE(mr->fr.map_len);
	if (mr->pd != pd) {
		status = IB_WC_LOC_PROT_ERR;
	} else if (mr->fr.state != MROCE_MRS_FREE || n > mr->fr.max_pages ||
		   (length && ((end - 1) >> shift) - (iova >> shift) >= n)) {
		status = IB_WC_LOC_QP_OP_ERR;
	} else {
		memcpy(mr->fr.pages, mr->fr.map, n * sizeof(*mr->fr.pages));
		mr->fr.npages = n;
		mr->fr.page_shift = shift;
		mr->fr.key = key;
		mr->iova = iova;
		mr->length = length;
		mr->access = access;
		mr->fr.state = MROCE_MRS_VALID;
	}
	spin_unlock_irqrestore(&mr->fr.lock, flags);
	return status;
}

/*
 * IB_WR_LOCAL_INV (qpn 0) or a remote invalidation (SEND_WITH_INV
 * received by QP qpn) by a QP of pd: a VALID or FREE fast-register region
 * or type 2 window whose current key is key becomes FREE; a window bound
 * to a region releases it.  A type 2 window is invalidated remotely only
 * through the QP it was bound through.  Nothing else can be invalidated:
 * not a region from reg_mr (nor the DMA region), not a type 1 window
 * (IBA 10.6.7.2.4: unbound by a zero-length bind only).  Returns 0,
 * -EACCES (another PD) or -EINVAL (no such region or window, another
 * key, another QP, not invalidatable, being destroyed).
 */
int mroce_mr_invalidate(struct mroce_dev *mdev, struct ib_pd *pd, u32 qpn,
			u32 key)
{
	struct mroce_mr *mr = xa_load(&mdev->mr_xa, key >> 8), *bound = NULL;
	unsigned long flags;
	int err = 0;

	if (!mr || !(mr->type == MROCE_MR_FAST ||
		     (mr->type == MROCE_MR_MW && mr->mw.type == IB_MW_TYPE_2)))
		return -EINVAL;
	spin_lock_irqsave(&mr->fr.lock, flags);
	if (mr->pd != pd) {
		err = -EACCES;
	} else if (mr->fr.key != key || mr->fr.state == MROCE_MRS_INVALID ||
		   (qpn && mr->type == MROCE_MR_MW &&
		    mr->fr.state == MROCE_MRS_VALID && mr->mw.qpn != qpn)) {
		err = -EINVAL;
	} else {
		if (mr->type == MROCE_MR_MW && mr->fr.state == MROCE_MRS_VALID) {
			bound = mr->mw.mr;
			mr->mw.mr = NULL;
		}
		mr->fr.state = MROCE_MRS_FREE;
	}
	if (bound)
		mroce_mw_unhold(bound);
	spin_unlock_irqrestore(&mr->fr.lock, flags);
	return err;
}

/*
 * Scatter (MROCE_TO_MR) or gather (MROCE_FROM_MR) len bytes at byte
 * offset of the buffer an SGE list describes.  Every SGE's region is
 * looked up and checked (LOCAL_WRITE for a scatter).  kernel: the QP is a
 * kernel QP and lkey 0 means kernel virtual addresses.  Returns 0,
 * -EACCES/-ERANGE (local protection) or -EMSGSIZE (past the SGEs).
 */
int mroce_sge_copy(struct mroce_dev *mdev, struct ib_pd *pd, bool kernel,
		   const struct mroce_sge *sge, u32 nsge, u32 offset,
		   void *buf, u32 len, enum mroce_copy_dir dir)
{
	int access = dir == MROCE_TO_MR ? IB_ACCESS_LOCAL_WRITE : 0;
	u32 i;

	for (i = 0; i < nsge && len; i++) {
		u32 n, slen = sge[i].length;
		struct mroce_mr *mr;
		u64 va;
		int err;

		if (offset >= slen) {
			offset -= slen;
			continue;
		}
		n = min_t(u32, len, slen - offset);
		va = sge[i].addr + offset;
		if (kernel && !sge[i].lkey) {
			mroce_copy((void *)(uintptr_t)va, buf, n, dir);
		} else {
			mr = mroce_mr_lookup(mdev, sge[i].lkey);
			if (!mr || (mr->type == MROCE_MR_DMA && !kernel))
				return -EACCES;
			err = mroce_mr_xfer(mr, sge[i].lkey, pd, 0, va, buf,
					    n, access, dir);
			if (err)
				return err;
		}
		buf += n;
		len -= n;
		offset = 0;
	}
	return len ? -EMSGSIZE : 0;
}
