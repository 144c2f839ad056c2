// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions as the datapath sees them: key lookup, the checks of
 * a remote or local access, and copies through the pinned pages of a user
 * region (or kernel virtual addresses for the DMA region and the local DMA
 * lkey of kernel QPs).
 *
 * Context: any (softirq receive, hrtimer, process-context doorbells), with
 * rcu_read_lock() held by the caller: dereg_mr waits for a grace period
 * before it unpins the pages, so a region found here stays usable until the
 * read-side section ends.
 */
#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/mm.h>

#include "mroce.h"

/* Region with this lkey/rkey, or NULL.  RCU read side. */
struct mroce_mr *mroce_mr_lookup(struct mroce_dev *mdev, u32 key)
{
	struct mroce_mr *mr = xa_load(&mdev->mr_xa, key >> 8);

	if (!mr || mr->ibmr.lkey != key)
		return NULL;
	return mr;
}

/*
 * 0 when [va, va + len) lies inside mr, mr belongs to pd and allows access
 * (IB_ACCESS_* bits, 0 for a local read); else -EACCES (wrong PD or
 * permission) or -ERANGE (out of bounds).
 */
int mroce_mr_check(struct mroce_mr *mr, struct ib_pd *pd, u64 va, u64 len,
		   int access)
{
	if (mr->ibmr.pd != pd)
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

/* Copy len bytes between buf and the region at va (already checked). */
void mroce_mr_copy(struct mroce_mr *mr, u64 va, void *buf, u32 len,
		   enum mroce_copy_dir dir)
{
	u64 off;

	if (mr->type == MROCE_MR_DMA) {
		void *p = (void *)(uintptr_t)va;

		if (dir == MROCE_TO_MR)
			memcpy(p, buf, len);
		else
			memcpy(buf, p, len);
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
		if (dir == MROCE_TO_MR)
			memcpy(kaddr + in, buf, n);
		else
			memcpy(buf, kaddr + in, n);
		kunmap_local(kaddr);
		if (dir == MROCE_TO_MR)
			flush_dcache_page(mr->pages[pg]);
		buf += n;
		off += n;
		len -= n;
	}
}

/*
 * The kernel address of the 8-byte aligned word at va (checked); user
 * regions map its page, which the caller unmaps with kunmap_local().
 */
u64 *mroce_mr_atomic_ptr(struct mroce_mr *mr, u64 va, struct page **page)
{
	u64 off;

	*page = NULL;
	if (mr->type == MROCE_MR_DMA)
		return (u64 *)(uintptr_t)va;
	off = va - mr->iova + mr->page_off;
	if (WARN_ON_ONCE((off >> PAGE_SHIFT) >= mr->npages))
		return NULL;
	*page = mr->pages[off >> PAGE_SHIFT];
	return kmap_local_page(*page) + (off & ~PAGE_MASK);
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
			if (dir == MROCE_TO_MR)
				memcpy((void *)(uintptr_t)va, buf, n);
			else
				memcpy(buf, (void *)(uintptr_t)va, n);
		} else {
			mr = mroce_mr_lookup(mdev, sge[i].lkey);
			if (!mr || (mr->type == MROCE_MR_DMA && !kernel))
				return -EACCES;
			err = mroce_mr_check(mr, pd, va, n, access);
			if (err)
				return err;
			mroce_mr_copy(mr, va, buf, n, dir);
		}
		buf += n;
		len -= n;
		offset = 0;
	}
	return len ? -EMSGSIZE : 0;
}
