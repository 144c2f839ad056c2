// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared rings (CQ, SQ, RQ) and their mmap entries.
 *
 * A user ring's buffer belongs to its rdma_user_mmap_entry: destroying the
 * object removes the entry, and ib_core calls mroce_mmap_free() once the
 * last reference to it is gone.  Pages that a process still has mapped
 * stay alive until munmap() through the page references taken by
 * remap_vmalloc_range(), so a late access can never reach freed memory.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "mroce.h"

static_assert(sizeof(struct mroce_ring_ctl) == MROCE_RING_CTL_SIZE);

/*
 * mroce_ring_alloc - allocate a ring of at least min_entries slots of
 * entry_size bytes (process context).  With uctx the ring is exported to
 * that user context through an mmap entry.
 */
int mroce_ring_alloc(struct mroce_dev *mdev, struct mroce_ring *ring,
		     u32 min_entries, u32 entry_size,
		     struct ib_ucontext *uctx)
{
	struct mroce_mmap_entry *me;
	u32 n = roundup_pow_of_two(max_t(u32, min_entries, 1));
	size_t size;
	int err;

	memset(ring, 0, sizeof(*ring));
	if (check_mul_overflow((size_t)n, (size_t)entry_size, &size) ||
	    check_add_overflow(size, (size_t)MROCE_RING_CTL_SIZE, &size))
		return -EINVAL;
	size = PAGE_ALIGN(size);

	ring->buf = vmalloc_user(size);
	if (!ring->buf)
		return -ENOMEM;
	ring->size = size;
	ring->num_entries = n;
	ring->entry_size = entry_size;
	ring->ctl = ring->buf;
	ring->ctl->num_entries = n;
	ring->ctl->entry_size = entry_size;

	if (uctx) {
		/* a user ring's entry: charged to the task's memcg */
		me = kzalloc(sizeof(*me), GFP_KERNEL_ACCOUNT);
		if (!me) {
			err = -ENOMEM;
			goto err_free;
		}
		me->buf = ring->buf;
		me->size = size;
		err = rdma_user_mmap_entry_insert(uctx, &me->rdma, size);
		if (err) {
			kfree(me);
			goto err_free;
		}
		ring->mentry = me;
	}
	mroce_obj_inc(mdev, MROCE_OBJ_RING, !!uctx);
	return 0;

err_free:
	vfree(ring->buf);
	memset(ring, 0, sizeof(*ring));
	return err;
}

/* Process context; a ring that was never allocated is ignored. */
void mroce_ring_free(struct mroce_dev *mdev, struct mroce_ring *ring)
{
	if (!ring->buf)
		return;
	if (ring->mentry) {
		/* mroce_mmap_free() releases the buffer and the count. */
		rdma_user_mmap_entry_remove(&ring->mentry->rdma);
	} else {
		vfree(ring->buf);
		mroce_obj_dec(mdev, MROCE_OBJ_RING, false);
	}
	memset(ring, 0, sizeof(*ring));
}

u64 mroce_ring_mmap_offset(const struct mroce_ring *ring)
{
	return ring->mentry ? rdma_user_mmap_get_offset(&ring->mentry->rdma) :
			      0;
}

u64 mroce_ring_mmap_size(const struct mroce_ring *ring)
{
	return ring->mentry ? ring->size : 0;
}

int mroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	struct mroce_mmap_entry *me;
	int err;

	/* Checks that the length matches the entry exactly. */
	entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!entry)
		return -EINVAL;
	me = to_mmentry(entry);
	if (vma->vm_flags & VM_EXEC) {
		err = -EPERM;
		goto out;
	}
	mroce_vm_flags_clear(vma, VM_MAYEXEC);
	err = remap_vmalloc_range(vma, me->buf, 0);
out:
	rdma_user_mmap_entry_put(entry);
	return err;
}

void mroce_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct mroce_mmap_entry *me = to_mmentry(entry);
	struct mroce_dev *mdev = to_mdev(entry->ucontext->device);

	vfree(me->buf);
	kfree(me);
	mroce_obj_dec(mdev, MROCE_OBJ_RING, true);
}
