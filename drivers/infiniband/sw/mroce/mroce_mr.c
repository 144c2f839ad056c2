// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions: user regions pinned with ib_umem_get(), the kernel
 * DMA region and fast-register regions for kernel ULPs (alloc_mr,
 * map_mr_sg; IB_WR_REG_MR and IB_WR_LOCAL_INV execute in the datapath,
 * mroce_mem.c).  Keys are (table index << 8) | 8 bits; lkey == rkey.  The
 * low byte is random at allocation; for a fast-register region the ULP
 * may change it (ib_update_fast_reg_key()) before each REG_MR, which
 * registers the region under the key it carries.  Key 0 is never
 * allocated: it is the local DMA lkey.  rereg_user_mr replaces a user
 * region by a complete new one in the same table slot under a key whose
 * low byte differs, so no key handed out before reaches the new state.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "mroce.h"

#define MROCE_MR_INDEX_MAX	0xffffff

/*
 * Access flags a region may carry; optional flags are ignored.  MW_BIND
 * lets memory windows bind to a user region (mroce_mw.c).
 */
#define MROCE_MR_ACCESS		(IB_ACCESS_LOCAL_WRITE |		\
				 IB_ACCESS_REMOTE_WRITE |		\
				 IB_ACCESS_REMOTE_READ |		\
				 IB_ACCESS_REMOTE_ATOMIC |		\
				 IB_ACCESS_MW_BIND)

int mroce_mr_check_access(int access)
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

/*
 * A region of type with its key; its index is reserved in mr_xa (a NULL
 * entry that lookups do not find) and mroce_mr_publish() makes it
 * visible once it is complete.  A fast-register region is INVALID
 * (refuses everything) until alloc_mr makes it FREE.
 */
struct mroce_mr *mroce_mr_alloc(struct mroce_dev *mdev,
				enum mroce_mr_type type)
{
	struct mroce_mr *mr;
	int err;

	if (mroce_obj_live(mdev, MROCE_OBJ_MR, true) +
	    mroce_obj_live(mdev, MROCE_OBJ_MR, false) >= MROCE_MAX_MR)
		return ERR_PTR(-ENOMEM);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->type = type;
	spin_lock_init(&mr->fr.lock);
	err = xa_alloc_cyclic_irq(&mdev->mr_xa, &mr->index, NULL,
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

/*
 * Make a complete region visible to the datapath (xa_store() orders the
 * initialisation before any lookup that finds it).  Storing into the
 * reserved slot allocates nothing, so it cannot fail.
 */
void mroce_mr_publish(struct mroce_dev *mdev, struct mroce_mr *mr,
		      struct ib_pd *pd)
{
	mr->pd = pd;
	xa_store_irq(&mdev->mr_xa, mr->index, mr, GFP_KERNEL);
}

static void mroce_mr_free_rcu(struct rcu_head *head)
{
	struct mroce_mr *mr = container_of(head, struct mroce_mr, rcu);

	kfree(mr->fr.map);
	kfree(mr->fr.pages);
	kfree(mr);
}

void mroce_mr_release(struct mroce_dev *mdev, struct mroce_mr *mr)
{
	unsigned long flags;

	if (mr->type == MROCE_MR_FAST || mr->type == MROCE_MR_MW) {
		/* Nothing succeeds from here on, even in a racing lookup. */
		spin_lock_irqsave(&mr->fr.lock, flags);
		mr->fr.state = MROCE_MRS_INVALID;
		spin_unlock_irqrestore(&mr->fr.lock, flags);
	}
	/* A replaced region's slot belongs to its successor. */
	if (!mr->replaced)
		xa_erase_irq(&mdev->mr_xa, mr->index);
	if (mr->umem) {
		/* The datapath copies through the pages under RCU. */
		synchronize_rcu();
		if (!mr->gave_pages) {
			ib_umem_release(mr->umem);
			kvfree(mr->pages);
		}
		kfree(mr);
		return;
	}
	/*
	 * The datapath may still hold mr (and read its page arrays) under
	 * RCU.  ULPs free many regions at once: no synchronize_rcu() each;
	 * module exit waits for the callbacks (rcu_barrier()).
	 */
	call_rcu(&mr->rcu, mroce_mr_free_rcu);
}

/* Collect the pinned pages of a user region for the datapath. */
static int mroce_mr_pages(struct mroce_mr *mr, struct ib_umem *umem)
{
	struct sg_page_iter it;
	size_t n = ib_umem_num_pages(umem), i = 0;

	if (n > U32_MAX)
		return -EINVAL;
	mr->pages = kvcalloc(n, sizeof(*mr->pages), GFP_KERNEL_ACCOUNT);
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

	err = mroce_mr_check_access(access);
	if (err)
		return ERR_PTR(err);
	mr = mroce_mr_alloc(mdev, MROCE_MR_DMA);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->access = access;
	mr->length = U64_MAX;
	mroce_mr_publish(mdev, mr, ibpd);
	mroce_obj_inc(mdev, MROCE_OBJ_MR, false);
	return &mr->ibmr;
}

/* The translation [start, start + length) at iova of a user region. */
static int mroce_mr_check_range(u64 start, u64 length, u64 iova)
{
	u64 end;

	if (!length || length > MROCE_MAX_MR_SIZE ||
	    check_add_overflow(start, length, &end) ||
	    check_add_overflow(iova, length, &end))
		return -EINVAL;
	return 0;
}

struct ib_mr *mroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibpd->device);
	struct ib_umem *umem;
	struct mroce_mr *mr;
	int err;

	err = mroce_mr_check_access(access);
	if (err) {
		mroce_dbg(mdev, "reg_user_mr: access 0x%x refused\n", access);
		return ERR_PTR(err);
	}
	err = mroce_mr_check_range(start, length, iova);
	if (err) {
		mroce_dbg(mdev, "reg_user_mr: 0x%llx bytes at 0x%llx, iova 0x%llx refused\n",
			  length, start, iova);
		return ERR_PTR(err);
	}

	umem = ib_umem_get(&mdev->ibdev, start, length, access);
	if (IS_ERR(umem)) {
		/* -EFAULT for unmapped memory */
		mroce_dbg(mdev, "reg_user_mr: pinning 0x%llx bytes at 0x%llx: %ld\n",
			  length, start, PTR_ERR(umem));
		return ERR_CAST(umem);
	}

	mr = mroce_mr_alloc(mdev, MROCE_MR_USER);
	if (IS_ERR(mr)) {
		mroce_dbg(mdev, "reg_user_mr: no key: %ld\n", PTR_ERR(mr));
		ib_umem_release(umem);
		return ERR_CAST(mr);
	}
	err = mroce_mr_pages(mr, umem);
	if (err) {
		mroce_dbg(mdev, "reg_user_mr: page list: %d\n", err);
		mroce_mr_release(mdev, mr);
		ib_umem_release(umem);
		return ERR_PTR(err);
	}
	mr->user = true;
	mr->access = access;
	mr->iova = iova;
	mr->length = length;
	mr->umem = umem;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mroce_mr_publish(mdev, mr, ibpd);
	mroce_obj_inc(mdev, MROCE_OBJ_MR, true);
	return &mr->ibmr;
}

/* Access that needs the pages pinned for writing (ib_umem_get()). */
static bool mroce_access_writes(int access)
{
	return access & (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			 IB_ACCESS_REMOTE_ATOMIC);
}

/*
 * Retire a user region for dereg_mr or rereg_mr: -EBUSY while memory
 * windows are bound to it (IBA 10.6.7.2: a region with bound windows is
 * neither deregistered nor reregistered), else no window can bind to it
 * any more.  Process context; the binds run in the datapath under fr.lock.
 */
static int mroce_mr_close(struct mroce_mr *mr)
{
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&mr->fr.lock, flags);
	if (mr->mw_binds)
		err = -EBUSY;
	else
		mr->closed = true;
	spin_unlock_irqrestore(&mr->fr.lock, flags);
	return err;
}

/*
 * rereg_user_mr (ibv_rereg_mr): IB_MR_REREG_TRANS, _ACCESS and _PD, alone
 * or together.  The old region is never changed: a complete successor
 * with the new PD, access and translation (a new umem for a new
 * translation, else the old umem and pages, handed over) and a new key
 * (same index, another low byte) replaces it in its mr_xa slot with one
 * store.  An access that found the old region under RCU completes
 * against the old state; a later one finds only the successor, and the
 * old key no longer matches anything.  ib_core then deregisters the old
 * region, which waits for a grace period before it unpins or frees.
 * Every check and allocation comes before the store: on an error the
 * old region is untouched and stays valid.  Returns the successor, NULL
 * when nothing changes, or an ERR_PTR.
 */
struct ib_mr *mroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibmr->device);
	struct mroce_mr *old = to_mmr(ibmr), *mr;
	struct ib_umem *umem = NULL, *cur;
	int err;

	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);
	if (old->type != MROCE_MR_USER || !old->umem || old->replaced)
		return ERR_PTR(-EINVAL);
	if (!flags)
		return NULL;	/* ib_core dropped a PD change to the same PD */
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;
	if (!(flags & IB_MR_REREG_PD))
		ibpd = ibmr->pd;
	if (!ibpd || ibpd->device != ibmr->device)
		return ERR_PTR(-EINVAL);
	err = mroce_mr_check_access(access);
	if (err)
		return ERR_PTR(err);

	cur = old->umem;
	if (flags & IB_MR_REREG_TRANS) {
		err = mroce_mr_check_range(start, length, iova);
		if (err)
			return ERR_PTR(err);
		umem = ib_umem_get(&mdev->ibdev, start, length, access);
	} else if (mroce_access_writes(access) && !cur->writable) {
		/*
		 * Not a writable umem: pin the same range again as one (it
		 * is then written through and dirtied on release).
		 */
		umem = ib_umem_get(&mdev->ibdev, cur->address, cur->length,
				   access);
	}
	if (IS_ERR(umem))
		return ERR_CAST(umem);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr) {
		err = -ENOMEM;
		goto err_umem;
	}
	mr->type = MROCE_MR_USER;
	spin_lock_init(&mr->fr.lock);
	mr->index = old->index;
	mr->ibmr.lkey = old->ibmr.lkey ^ (1 + get_random_u32() % 0xff);
	mr->ibmr.rkey = mr->ibmr.lkey;
	if (umem) {
		err = mroce_mr_pages(mr, umem);
		if (err) {
			kfree(mr);
			goto err_umem;
		}
		mr->umem = umem;
	} else {
		mr->umem = cur;
		mr->pages = old->pages;
		mr->npages = old->npages;
		mr->page_off = old->page_off;
	}
	if (!(flags & IB_MR_REREG_TRANS)) {
		iova = old->iova;
		length = old->length;
	}
	mr->user = true;
	mr->access = access;
	mr->iova = iova;
	mr->length = length;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;

	/* Last: a region with windows bound stays as it is. */
	err = mroce_mr_close(old);
	if (err) {
		if (umem)
			kvfree(mr->pages);
		kfree(mr);
		goto err_umem;
	}
	old->replaced = true;
	old->gave_pages = !umem;
	mroce_mr_publish(mdev, mr, ibpd);
	mroce_obj_inc(mdev, MROCE_OBJ_MR, true);
	return &mr->ibmr;

err_umem:
	if (umem)
		ib_umem_release(umem);
	return ERR_PTR(err);
}

/*
 * alloc_mr(IB_MR_TYPE_MEM_REG): a fast-register region for kernel ULPs,
 * FREE until an IB_WR_REG_MR makes it valid.  Process context.
 */
struct ib_mr *mroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct mroce_dev *mdev = to_mdev(ibpd->device);
	struct mroce_mr *mr;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > MROCE_MAX_FRPL)
		return ERR_PTR(-EINVAL);
	mr = mroce_mr_alloc(mdev, MROCE_MR_FAST);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->fr.max_pages = max_num_sg;
	mr->fr.map = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
	mr->fr.pages = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
	if (!mr->fr.map || !mr->fr.pages) {
		mroce_mr_release(mdev, mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->fr.key = mr->ibmr.lkey;
	mr->fr.state = MROCE_MRS_FREE;
	mroce_mr_publish(mdev, mr, ibpd);
	mroce_obj_inc(mdev, MROCE_OBJ_MR, false);
	return &mr->ibmr;
}

static int mroce_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct mroce_mr *mr = to_mmr(ibmr);

	if (mr->fr.map_len >= mr->fr.max_pages)
		return -ENOMEM;
	mr->fr.map[mr->fr.map_len++] = addr;
	return 0;
}

/*
 * map_mr_sg: fill the region's page list from a DMA-mapped scatterlist
 * (ib_core set ibmr->page_size; ib_sg_to_pages() sets iova and length).
 * Process or any context the ULP calls it from; it only touches the
 * ULP-side page list (struct mroce_fr), which a later REG_MR snapshots.
 * Returns the number of SG entries mapped.
 */
int mroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct mroce_mr *mr = to_mmr(ibmr);

	if (mr->type != MROCE_MR_FAST || !is_power_of_2(ibmr->page_size) ||
	    ibmr->page_size < SZ_4K)
		return -EINVAL;
	mr->fr.map_len = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, mroce_set_page);
}

int mroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibmr->device);
	struct mroce_mr *mr = to_mmr(ibmr);
	bool user = mr->user;

	if (mroce_mr_close(mr)) {
		mroce_dbg(mdev, "dereg_mr: memory windows bound to key 0x%x\n",
			  mr->ibmr.lkey);
		return -EBUSY;
	}
	mroce_mr_release(mdev, mr);
	mroce_obj_dec(mdev, MROCE_OBJ_MR, user);
	return 0;
}
