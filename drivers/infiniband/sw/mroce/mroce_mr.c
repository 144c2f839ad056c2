// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions: user regions pinned with ib_umem_get() and
 * the kernel DMA region.  Keys are (table index << 8) | 8 random bits;
 * lkey == rkey.  Key 0 is never allocated: it is the local DMA lkey.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "mroce.h"

#define MROCE_MR_INDEX_MAX	0xffffff

/* Access flags a region may carry; optional flags are ignored. */
#define MROCE_MR_ACCESS		(IB_ACCESS_LOCAL_WRITE |		\
				 IB_ACCESS_REMOTE_WRITE |		\
				 IB_ACCESS_REMOTE_READ |		\
				 IB_ACCESS_REMOTE_ATOMIC)

static int mroce_check_access(int access)
{
	access &= ~IB_ACCESS_OPTIONAL;
	if (access & ~MROCE_MR_ACCESS)
		return -EOPNOTSUPP;
	/* Remote writers need a locally writable region (IBA 10.6.3). */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

static struct mroce_mr *mroce_mr_alloc(struct mroce_dev *mdev)
{
	struct mroce_mr *mr;
	int err;

	if (mroce_obj_live(mdev, MROCE_OBJ_MR, true) +
	    mroce_obj_live(mdev, MROCE_OBJ_MR, false) >= MROCE_MAX_MR)
		return ERR_PTR(-ENOMEM);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = xa_alloc_cyclic_irq(&mdev->mr_xa, &mr->index, mr,
				  XA_LIMIT(1, MROCE_MR_INDEX_MAX),
				  &mdev->mr_next, GFP_KERNEL);
	if (err < 0) {
		kfree(mr);
		return ERR_PTR(err == -EBUSY ? -ENOMEM : err);
	}
	mr->ibmr.lkey = (mr->index << 8) | (get_random_u32() & 0xff);
	mr->ibmr.rkey = mr->ibmr.lkey;
	return mr;
}

static void mroce_mr_release(struct mroce_dev *mdev, struct mroce_mr *mr)
{
	xa_erase_irq(&mdev->mr_xa, mr->index);
	if (mr->umem) {
		/* The datapath copies through the pages under RCU. */
		synchronize_rcu();
		ib_umem_release(mr->umem);
		kvfree(mr->pages);
		kfree(mr);
		return;
	}
	kfree_rcu(mr, rcu);
}

/* Collect the pinned pages of a user region for the datapath. */
static int mroce_mr_pages(struct mroce_mr *mr, struct ib_umem *umem)
{
	struct sg_page_iter it;
	size_t n = ib_umem_num_pages(umem), i = 0;

	if (n > U32_MAX)
		return -EINVAL;
	mr->pages = kvcalloc(n, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (i == n)
			break;
		mr->pages[i++] = sg_page_iter_page(&it);
	}
	if (i != n) {
		kvfree(mr->pages);
		mr->pages = NULL;
		return -EFAULT;
	}
	mr->npages = n;
	mr->page_off = ib_umem_offset(umem);
	return 0;
}

struct ib_mr *mroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct mroce_dev *mdev = to_mdev(ibpd->device);
	struct mroce_mr *mr;
	int err;

	err = mroce_check_access(access);
	if (err)
		return ERR_PTR(err);
	mr = mroce_mr_alloc(mdev);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->type = MROCE_MR_DMA;
	mr->access = access;
	mr->length = U64_MAX;
	mroce_obj_inc(mdev, MROCE_OBJ_MR, false);
	return &mr->ibmr;
}

struct ib_mr *mroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibpd->device);
	struct ib_umem *umem;
	struct mroce_mr *mr;
	u64 end;
	int err;

	err = mroce_check_access(access);
	if (err)
		return ERR_PTR(err);
	if (!length || length > MROCE_MAX_MR_SIZE ||
	    check_add_overflow(start, length, &end) ||
	    check_add_overflow(iova, length, &end))
		return ERR_PTR(-EINVAL);

	umem = ib_umem_get(&mdev->ibdev, start, length, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);	/* -EFAULT for unmapped memory */

	mr = mroce_mr_alloc(mdev);
	if (IS_ERR(mr)) {
		ib_umem_release(umem);
		return ERR_CAST(mr);
	}
	err = mroce_mr_pages(mr, umem);
	if (err) {
		mroce_mr_release(mdev, mr);
		ib_umem_release(umem);
		return ERR_PTR(err);
	}
	mr->type = MROCE_MR_USER;
	mr->user = true;
	mr->access = access;
	mr->iova = iova;
	mr->length = length;
	mr->umem = umem;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mroce_obj_inc(mdev, MROCE_OBJ_MR, true);
	return &mr->ibmr;
}

int mroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibmr->device);
	struct mroce_mr *mr = to_mmr(ibmr);
	bool user = mr->user;

	mroce_mr_release(mdev, mr);
	mroce_obj_dec(mdev, MROCE_OBJ_MR, user);
	return 0;
}
