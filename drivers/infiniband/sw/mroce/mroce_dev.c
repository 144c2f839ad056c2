// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The ib_device: creation on "rdma link add", removal,
 * device and port queries, port events and the sysfs ABI attribute.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/if_arp.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>

#include <mroce/mroce_wire.h>

#include "mroce.h"

enum ib_mtu mroce_mtu_from_netdev(unsigned int mtu)
{
	int payload = (int)mtu - MROCE_FRAME_OVERHEAD;

	BUILD_BUG_ON(MROCE_FRAME_OVERHEAD < 40 + 8 + MROCE_BTH_SIZE +
		     MROCE_RETH_SIZE + MROCE_SETH_SIZE + MROCE_IMETH_SIZE +
		     MROCE_ICRC_SIZE);

	if (payload >= 4096)
		return IB_MTU_4096;
	if (payload >= 2048)
		return IB_MTU_2048;
	if (payload >= 1024)
		return IB_MTU_1024;
	if (payload >= 512)
		return IB_MTU_512;
	return IB_MTU_256;
}

static int mroce_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	struct mroce_dev *mdev = to_mdev(ibdev);

	/* No driver-specific query_device extension exists (yet). */
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = 1;
	attr->sys_image_guid = mdev->ibdev.node_guid;
	attr->max_mr_size = MROCE_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = 0xffffff;	/* no IEEE OUI: a software device */
	attr->max_qp = MROCE_MAX_QP;
	attr->max_qp_wr = MROCE_MAX_QP_WR;
	/*
	 * MEM_MGT_EXTENSIONS: fast-register regions, IB_WR_REG_MR,
	 * IB_WR_LOCAL_INV and remote invalidation, for kernel QPs (the
	 * provider masks it: userspace cannot fast-register).  Memory
	 * windows of type 1 and 2B for user QPs (mroce_mw.c).  XRC
	 * domains, SRQs and QPs (mroce_srq.c, mroce_wq.c).
	 */
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_XRC;
	attr->max_fast_reg_page_list_len = MROCE_MAX_FRPL;
	attr->max_pi_fast_reg_page_list_len = 0;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG | IBK_LOCAL_DMA_LKEY;
	attr->max_send_sge = MROCE_MAX_SGE;
	attr->max_recv_sge = MROCE_MAX_SGE;
	attr->max_sge_rd = MROCE_MAX_SGE;
	attr->max_cq = MROCE_MAX_CQ;
	attr->max_cqe = MROCE_MAX_CQE;
	attr->max_mr = MROCE_MAX_MR;
	attr->max_mw = MROCE_MAX_MR;	/* windows share the key table */
	attr->max_pd = MROCE_MAX_PD;
	attr->max_qp_rd_atom = MROCE_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = MROCE_MAX_RD_ATOM;
	attr->max_res_rd_atom = MROCE_MAX_RD_ATOM * MROCE_MAX_QP;
	/*
	 * Atomics are atomic among mroce operations on this host (one lock),
	 * not against CPU accesses: IB_ATOMIC_HCA.  Multicast is absent.
	 */
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->max_srq = MROCE_MAX_SRQ;
	attr->max_srq_wr = MROCE_MAX_QP_WR;
	attr->max_srq_sge = MROCE_MAX_SGE;
	attr->masked_atomic_cap = IB_ATOMIC_NONE;
	attr->max_ah = MROCE_MAX_AH;
	attr->max_pkeys = MROCE_PKEY_TBL_LEN;
	attr->local_ca_ack_delay = 15;
	/* Completion timestamps: CLOCK_MONOTONIC ns, 64 bits (mroce-abi.h). */
	attr->timestamp_mask = U64_MAX;
	attr->hca_core_clock = MROCE_HCA_CORE_CLOCK_KHZ;
	return 0;
}

static int mroce_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct mroce_dev *mdev = to_mdev(ibdev);
	bool active;

	/* ib_core zeroes *attr and validates port. */
	active = mroce_netdev_port_active(mdev->ndev);
	attr->state = active ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = active ? IB_PORT_PHYS_STATE_LINK_UP :
				    IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = mroce_mtu_from_netdev(READ_ONCE(mdev->ndev->mtu));
	attr->gid_tbl_len = MROCE_GID_TBL_LEN;
	attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_DEVICE_MGMT_SUP |
			       IB_PORT_VENDOR_CLASS_SUP;
	attr->max_msg_sz = 1U << 31;
	attr->bad_pkey_cntr = 0;
	attr->qkey_viol_cntr = 0;
	attr->pkey_tbl_len = MROCE_PKEY_TBL_LEN;
	attr->lid = 0;
	attr->sm_lid = 0;
	attr->lmc = 0;
	attr->max_vl_num = 1;
	attr->sm_sl = 0;
	attr->subnet_timeout = 0;
	attr->init_type_reply = 0;
	/* A software port: report 10 Gb/s (4X SDR-equivalent lanes). */
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = IB_SPEED_QDR;
	return 0;
}

static int mroce_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (index >= MROCE_PKEY_TBL_LEN)
		return -EINVAL;
	*pkey = MROCE_DEFAULT_PKEY;
	return 0;
}

static int mroce_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	immutable->pkey_tbl_len = MROCE_PKEY_TBL_LEN;
	immutable->gid_tbl_len = MROCE_GID_TBL_LEN;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer mroce_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static void mroce_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "mroce-abi-%d",
		 MROCE_UVERBS_ABI_VERSION);
}

static ssize_t mroce_abi_version_show(struct device *device,
				      struct device_attribute *attr,
				      char *buf)
{
	return sysfs_emit(buf, "%d\n", MROCE_UVERBS_ABI_VERSION);
}

static struct device_attribute dev_attr_mroce_abi_version =
	__ATTR(mroce_abi_version, 0444, mroce_abi_version_show, NULL);

static struct attribute *mroce_dev_attrs[] = {
	&dev_attr_mroce_abi_version.attr,
	NULL
};

static const struct attribute_group mroce_dev_attr_group = {
	.attrs = mroce_dev_attrs,
};

/*
 * Last step of every removal (rdma link delete, netdev unregister, netns
 * exit, module unload), called by ib_core once the device is unregistered,
 * and on the error path of mroce_dev_add().  Unlinking from the device
 * list comes last: module exit waits for the list to drain.
 */
static void mroce_dealloc_driver(struct ib_device *ibdev)
{
	struct mroce_dev *mdev = to_mdev(ibdev);
	int type;

	for (type = 0; type < MROCE_OBJ_MAX; type++) {
		int u = mroce_obj_live(mdev, type, true);
		int k = mroce_obj_live(mdev, type, false);

		if (u || k)
			ibdev_err(ibdev, "object type %d still alive at removal: %d user, %d kernel\n",
				  type, u, k);
	}
	WARN_ON(!xa_empty(&mdev->qp_xa));
	WARN_ON(!xa_empty(&mdev->mr_xa));
	WARN_ON(!xa_empty(&mdev->ah_xa));
	WARN_ON(!list_empty(&mdev->ccgs));
	xa_destroy(&mdev->qp_xa);
	xa_destroy(&mdev->mr_xa);
	xa_destroy(&mdev->ah_xa);
	xa_destroy(&mdev->srq_xa);
	if (mdev->mnet)
		mroce_net_put(mdev->mnet);
	mdev->mnet = NULL;

	mutex_lock(&mroce_dev_lock);
	if (mdev->listed) {
		mroce_stats_dev_remove(mdev);
		netdev_put(mdev->ndev, &mdev->ndev_tracker);
		list_del_rcu(&mdev->list);
		mdev->listed = false;
		WRITE_ONCE(mdev->registered, false);
		mroce_stats_dev_count(-1);
	}
	mutex_unlock(&mroce_dev_lock);
}

#ifdef MROCE_HAVE_CREATE_CQ_BUNDLE
/* Newer kernels pass the uverbs bundle (mroce_kcompat.h). */
static int mroce_create_cq_attrs(struct ib_cq *ibcq,
				 const struct ib_cq_init_attr *attr,
				 struct uverbs_attr_bundle *attrs)
{
	return mroce_create_cq(ibcq, attr, mroce_cq_udata(attrs));
}
#define MROCE_CREATE_CQ_OP	mroce_create_cq_attrs
#else
#define MROCE_CREATE_CQ_OP	mroce_create_cq
#endif

static const struct ib_device_ops mroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = MROCE_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = mroce_alloc_hw_port_stats,
	.alloc_mr = mroce_alloc_mr,
	.alloc_mw = mroce_alloc_mw,
	.alloc_pd = mroce_alloc_pd,
	.alloc_xrcd = mroce_alloc_xrcd,
	.alloc_ucontext = mroce_alloc_ucontext,
	.counter_alloc_stats = mroce_counter_alloc_stats,
	.counter_bind_qp = mroce_counter_bind_qp,
	.counter_dealloc = mroce_counter_dealloc,
	.counter_unbind_qp = mroce_counter_unbind_qp,
	.counter_update_stats = mroce_counter_update_stats,
	.create_ah = mroce_create_ah,
	.create_cq = MROCE_CREATE_CQ_OP,
	.create_qp = mroce_create_qp,
	.create_user_ah = mroce_create_ah,
	.dealloc_driver = mroce_dealloc_driver,
	.dealloc_mw = mroce_dealloc_mw,
	.dealloc_pd = mroce_dealloc_pd,
	.dealloc_xrcd = mroce_dealloc_xrcd,
	.dealloc_ucontext = mroce_dealloc_ucontext,
	.dereg_mr = mroce_dereg_mr,
	.destroy_ah = mroce_destroy_ah,
	.destroy_cq = mroce_destroy_cq,
	.destroy_qp = mroce_destroy_qp,
	.create_srq = mroce_create_srq,
	.modify_srq = mroce_modify_srq,
	.query_srq = mroce_query_srq,
	.destroy_srq = mroce_destroy_srq,
	.post_srq_recv = mroce_post_srq_recv,
	.device_group = &mroce_dev_attr_group,
	.disassociate_ucontext = mroce_disassociate_ucontext,
	.fill_res_qp_entry = mroce_fill_res_qp_entry,
	.get_dev_fw_str = mroce_get_dev_fw_str,
	.get_dma_mr = mroce_get_dma_mr,
	.get_hw_stats = mroce_get_hw_stats,
	.get_link_layer = mroce_get_link_layer,
	.get_port_immutable = mroce_get_port_immutable,
	.map_mr_sg = mroce_map_mr_sg,
	.mmap = mroce_mmap,
	.mmap_free = mroce_mmap_free,
	.modify_qp = mroce_modify_qp,
	.poll_cq = mroce_poll_cq,
	.post_recv = mroce_post_recv,
	.post_send = mroce_post_send,
	.query_device = mroce_query_device,
	.query_pkey = mroce_query_pkey,
	.query_port = mroce_query_port,
	.query_qp = mroce_query_qp,
	.reg_user_mr = mroce_reg_user_mr,
	.req_notify_cq = mroce_req_notify_cq,
	.rereg_user_mr = mroce_rereg_user_mr,
	.resize_cq = mroce_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, mroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, mroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, mroce_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, mroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, mroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, mroce_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, mroce_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, mroce_xrcd, ibxrcd),
};

/*
 * Port event on a change of the netdev's state (notifier, RTNL held,
 * mroce_dev_lock held).  Only transitions are reported.
 */
void mroce_dev_port_event(struct mroce_dev *mdev)
{
	enum ib_port_state now;
	struct ib_event ev = { };

	now = mroce_netdev_port_active(mdev->ndev) ? IB_PORT_ACTIVE :
						      IB_PORT_DOWN;
	if (now == mdev->port_state)
		return;
	mdev->port_state = now;
	ev.device = &mdev->ibdev;
	ev.element.port_num = 1;
	ev.event = now == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
					   IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
}

static bool mroce_ndev_in_use(struct net_device *ndev)
{
	struct mroce_dev *mdev;

	lockdep_assert_held(&mroce_dev_lock);
	list_for_each_entry(mdev, &mroce_dev_list, list)
		if (mdev->ndev == ndev)
			return true;
	return false;
}

/*
 * mroce_dev_add - "rdma link add NAME type mroce netdev NDEV" (process
 * context; the caller holds a reference on ndev for the duration).
 */
int mroce_dev_add(const char *ibdev_name, struct net_device *ndev)
{
	struct mroce_dev *mdev;
	struct ib_device *ibdev;
	struct mroce_net *mnet;
	int err;

	if (ndev->type != ARPHRD_ETHER || (ndev->flags & IFF_LOOPBACK)) {
		pr_err("%s: netdev %s is not Ethernet\n", ibdev_name,
		       ndev->name);
		return -EINVAL;
	}

	mdev = ib_alloc_device(mroce_dev, ibdev);
	if (!mdev)
		return -ENOMEM;
	ibdev = &mdev->ibdev;
	INIT_LIST_HEAD(&mdev->list);
	xa_init_flags(&mdev->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&mdev->mr_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&mdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&mdev->srq_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	spin_lock_init(&mdev->gone_qps.lock);
	mroce_hwc_init(mdev);
	mroce_ccg_dev_init(mdev);
	mdev->ndev = ndev;
	mdev->net = dev_net(ndev);
	ib_set_device_ops(ibdev, &mroce_dev_ops);

	/* Claim the netdev: a second link on it is refused. */
	mutex_lock(&mroce_dev_lock);
	if (mroce_ndev_in_use(ndev)) {
		mutex_unlock(&mroce_dev_lock);
		pr_err("%s: netdev %s already has an mroce device\n",
		       ibdev_name, ndev->name);
		err = -EEXIST;
		goto err_dealloc;
	}
	netdev_hold(ndev, &mdev->ndev_tracker, GFP_KERNEL);
	list_add_tail_rcu(&mdev->list, &mroce_dev_list);
	mdev->listed = true;
	mroce_stats_dev_count(1);
	mutex_unlock(&mroce_dev_lock);

	mnet = mroce_net_get(mdev->net);
	if (IS_ERR(mnet)) {
		err = PTR_ERR(mnet);
		goto err_dealloc;
	}
	mdev->mnet = mnet;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->local_dma_lkey = 0;
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    ndev->dev_addr);
	strscpy(ibdev->node_desc, "mroce", sizeof(ibdev->node_desc));
	/*
	 * POST_SEND/POST_RECV are the provider's doorbells; REQ_NOTIFY_CQ
	 * lets the provider arm a CQ through the kernel.
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);

	err = ib_device_set_netdev(ibdev, ndev, 1);
	if (err)
		goto err_dealloc;

	mdev->port_state = mroce_netdev_port_active(ndev) ? IB_PORT_ACTIVE :
							    IB_PORT_DOWN;
	/*
	 * Once registered, the device can be deleted (and freed) by another
	 * thread at any time: pin its memory until we are done with it.
	 */
	get_device(&ibdev->dev);
	err = ib_register_device(ibdev, ibdev_name, NULL);
	if (err) {
		pr_err("%s: registration failed: %d\n", ibdev_name, err);
		ib_dealloc_device(ibdev);	/* calls dealloc_driver */
		put_device(&ibdev->dev);
		return err;
	}

	mutex_lock(&mroce_dev_lock);
	if (mdev->listed) {
		WRITE_ONCE(mdev->registered, true);
		mroce_stats_dev_add(mdev);
		/* The netdev may have started to go away meanwhile. */
		if (ndev->reg_state != NETREG_REGISTERED ||
		    !net_eq(dev_net(ndev), mdev->net)) {
			WRITE_ONCE(mdev->registered, false);
			ib_unregister_device_queued(ibdev);
		} else {
			ibdev_info(ibdev, "added on %s, UDP port %u\n",
				   ndev->name, mroce_udp_port());
		}
	}
	mutex_unlock(&mroce_dev_lock);
	put_device(&ibdev->dev);
	return 0;

err_dealloc:
	/* Calls mroce_dealloc_driver(), which undoes what was done. */
	ib_dealloc_device(ibdev);
	return err;
}

/*
 * mroce_dev_remove_net - unregister, synchronously, every mroce device of
 * a namespace that is being destroyed (process context).
 */
void mroce_dev_remove_net(struct net *net)
{
	struct mroce_dev *mdev, *found;

	for (;;) {
		found = NULL;
		mutex_lock(&mroce_dev_lock);
		list_for_each_entry(mdev, &mroce_dev_list, list) {
			if (net_eq(mdev->net, net)) {
				found = mdev;
				get_device(&found->ibdev.dev);
				break;
			}
		}
		mutex_unlock(&mroce_dev_lock);
		if (!found)
			break;
		ib_unregister_device(&found->ibdev);
		put_device(&found->ibdev.dev);
	}
}
