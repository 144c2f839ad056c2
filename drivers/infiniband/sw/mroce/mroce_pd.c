// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User contexts, protection domains, address handles and the
 * resolution of RoCE v2 address vectors.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "mroce.h"

int mroce_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(uctx->device);
	struct mroce_alloc_ucontext_resp resp = {
		.abi_version = MROCE_UVERBS_ABI_VERSION,
		.ring_ctl_size = MROCE_RING_CTL_SIZE,
		.cqe_size = sizeof(struct mroce_cqe),
		.max_inline_data = MROCE_MAX_INLINE,
	};
	int err;

	if (udata->outlen < sizeof(resp)) {
		ibdev_dbg(&mdev->ibdev, "ucontext response too small: %zu\n",
			  udata->outlen);
		return -EINVAL;
	}
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		return err;
	mroce_obj_inc(mdev, MROCE_OBJ_UCONTEXT, true);
	return 0;
}

void mroce_dealloc_ucontext(struct ib_ucontext *uctx)
{
	mroce_obj_dec(to_mdev(uctx->device), MROCE_OBJ_UCONTEXT, true);
}

/*
 * The device is being removed while a process still holds the context.
 * ib_core destroys every object of the context through the normal destroy
 * verbs right after this, so there is nothing extra to stop here.
 */
void mroce_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

int mroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct mroce_pd *pd = to_mpd(ibpd);

	pd->user = !!udata;
	mroce_obj_inc(to_mdev(ibpd->device), MROCE_OBJ_PD, pd->user);
	return 0;
}

int mroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	mroce_obj_dec(to_mdev(ibpd->device), MROCE_OBJ_PD,
		      to_mpd(ibpd)->user);
	return 0;
}

/*
 * mroce_av_from_attr - resolve a RoCE v2 address vector.  The source GID
 * entry (attr->grh.sgid_attr, referenced by ib_core for the call) gives
 * the network type and source address; the destination GID the remote IP.
 * Does not sleep.
 */
int mroce_av_from_attr(struct mroce_dev *mdev, struct mroce_av *av,
		       const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	bool v4;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE)
		return -EINVAL;
	if (rdma_ah_get_port_num(attr) != 1)
		return -EINVAL;
	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr || sgid_attr->device != &mdev->ibdev)
		return -EINVAL;
	if (sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	av->network_type = rdma_gid_attr_network_type(sgid_attr);
	v4 = av->network_type == RDMA_NETWORK_IPV4;
	if (!v4 && av->network_type != RDMA_NETWORK_IPV6)
		return -EINVAL;
	/* Both ends must be of the same IP family. */
	if (ipv6_addr_v4mapped((const struct in6_addr *)grh->dgid.raw) != v4)
		return -EINVAL;
	if (rdma_is_multicast_addr((struct in6_addr *)grh->dgid.raw))
		return -EOPNOTSUPP;

	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->flow_label = grh->flow_label;
	av->sgid_index = grh->sgid_index;
	av->sl = rdma_ah_get_sl(attr);
	av->dgid = grh->dgid;
	av->sgid = sgid_attr->gid;
	memcpy(av->dmac, attr->roce.dmac, ETH_ALEN);
	rdma_gid2ip((struct sockaddr *)&av->saddr, &av->sgid);
	rdma_gid2ip((struct sockaddr *)&av->daddr, &av->dgid);
	return 0;
}

/* Rebuild an rdma_ah_attr (without sgid_attr) for query verbs. */
void mroce_av_to_attr(const struct mroce_av *av, struct rdma_ah_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_grh(attr, NULL, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	rdma_ah_retrieve_grh(attr)->dgid = av->dgid;
	memcpy(attr->roce.dmac, av->dmac, ETH_ALEN);
}

/*
 * create_ah: user AHs (create_user_ah, sleepable) and kernel AHs (maybe
 * atomic context: without RDMA_CREATE_AH_SLEEPABLE use GFP_ATOMIC).  The
 * entry is complete before it is published in ah_xa.
 */
int mroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibah->device);
	struct mroce_ah *ah = to_mah(ibah);
	gfp_t gfp = (init->flags & RDMA_CREATE_AH_SLEEPABLE) ? GFP_KERNEL :
							       GFP_ATOMIC;
	struct mroce_create_ah_resp resp = { };
	struct mroce_ah_entry *ent;
	int err;

	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	ent = kzalloc(sizeof(*ent), gfp | __GFP_ACCOUNT);
	if (!ent)
		return -ENOMEM;
	err = mroce_av_from_attr(mdev, &ent->av, init->ah_attr);
	if (err)
		goto err_free;
	ent->pd = ibah->pd;
	ah->user = !!udata;
	ah->ent = ent;
	err = xa_alloc_cyclic_irq(&mdev->ah_xa, &ah->ah_num, ent,
				  XA_LIMIT(1, MROCE_MAX_AH), &mdev->ah_next,
				  gfp);
	if (err < 0) {
		err = err == -EBUSY ? -ENOMEM : err;
		goto err_free;
	}

	if (udata) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err) {
			xa_erase_irq(&mdev->ah_xa, ah->ah_num);
			kfree_rcu(ent, rcu);
			return err;
		}
	}
	mroce_obj_inc(mdev, MROCE_OBJ_AH, ah->user);
	return 0;

err_free:
	kfree(ent);
	return err;
}

/*
 * Any context (RDMA_DESTROY_AH_SLEEPABLE or not).  A UD send may still be
 * reading the entry under RCU: it is freed after a grace period.
 */
int mroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct mroce_dev *mdev = to_mdev(ibah->device);
	struct mroce_ah *ah = to_mah(ibah);
	unsigned long irqflags;

	xa_lock_irqsave(&mdev->ah_xa, irqflags);
	__xa_erase(&mdev->ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&mdev->ah_xa, irqflags);
	kfree_rcu(ah->ent, rcu);
	ah->ent = NULL;
	mroce_obj_dec(mdev, MROCE_OBJ_AH, ah->user);
	return 0;
}
