/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The kernel API differences between Debian 12's 6.1 kernel, which mroce
 * is written for and tested on, and the newer kernels it is also built
 * against (README, "Kernels": Debian's 6.12 from bookworm-security, built
 * only; tools/kernels.sh build).  The Kbuild file (Makefile) finds each
 * newer API in the headers it builds against and defines MROCE_HAVE_*;
 * only the 6.1 and 6.12 headers are checked.  The protocol core's own
 * environment (kernel or userspace) is core/mroce_compat.h.
 */
#ifndef MROCE_KCOMPAT_H
#define MROCE_KCOMPAT_H

#include <linux/crc32c.h>
#include <linux/mm.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/* 6.3: vma->vm_flags is read-only, changed through vm_flags_*(). */
#ifdef MROCE_HAVE_VM_FLAGS_CLEAR
#define mroce_vm_flags_clear(vma, flags)	vm_flags_clear(vma, flags)
#else
#define mroce_vm_flags_clear(vma, flags)	((vma)->vm_flags &= ~(flags))
#endif

/*
 * 6.10: create_cq gets the uverbs attribute bundle (NULL for a kernel
 * CQ) instead of the driver's udata, which the bundle holds.
 */
#ifdef MROCE_HAVE_CREATE_CQ_BUNDLE
static inline struct ib_udata *
mroce_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#endif

/* 6.10: __assign_str() takes the field only (the source is __string()'s). */
#ifdef MROCE_HAVE_ASSIGN_STR_1
#define mroce_assign_str(dst, src)	__assign_str(dst)
#else
#define mroce_assign_str(dst, src)	__assign_str(dst, src)
#endif

/* crc32c_impl() (which driver crc32c() uses) is gone in 6.12. */
#ifdef MROCE_HAVE_CRC32C_IMPL
#define mroce_crc32c_impl()	crc32c_impl()
#else
#define mroce_crc32c_impl()	"crc32c()"
#endif

#endif /* MROCE_KCOMPAT_H */
