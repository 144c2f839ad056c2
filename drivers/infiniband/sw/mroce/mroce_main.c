// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Module entry points, the rdma link type and
 * the driver's own device list.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <rdma/rdma_netlink.h>

#include "mroce.h"

MODULE_AUTHOR("mroce developers");
MODULE_DESCRIPTION("MetaRoCE-style software RDMA over lossy multipath Ethernet");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("mroce");

/*
 * Every mroce ib_device, in creation order.  driver_id is
 * RDMA_DRIVER_UNKNOWN, so ib_core's per-driver helpers would act on other
 * drivers' devices too: this list is the only way the driver finds its
 * own.  mroce_dev_lock (process context only) serialises writers; the
 * softirq receive path reads the list under RCU.  Lock order: RTNL, then
 * mroce_dev_lock, then mroce_net.lock.  Never call into ib_core's
 * (un)registration while holding mroce_dev_lock.
 */
LIST_HEAD(mroce_dev_list);
DEFINE_MUTEX(mroce_dev_lock);

static int mroce_newlink(const char *ibdev_name, struct net_device *ndev)
{
	return mroce_dev_add(ibdev_name, ndev);
}

static struct rdma_link_ops mroce_link_ops = {
	.type = "mroce",
	.newlink = mroce_newlink,
};

/*
 * Unregister every mroce device, one at a time: pick a registered device
 * under the lock, pin it, drop the lock, unregister (which calls
 * dealloc_driver, which takes the lock and unlinks the device).
 */
static void mroce_remove_all(void)
{
	struct mroce_dev *mdev;

	for (;;) {
		mutex_lock(&mroce_dev_lock);
		mdev = list_first_entry_or_null(&mroce_dev_list,
						struct mroce_dev, list);
		if (mdev)
			get_device(&mdev->ibdev.dev);
		mutex_unlock(&mroce_dev_lock);
		if (!mdev)
			break;
		ib_unregister_device(&mdev->ibdev);
		put_device(&mdev->ibdev.dev);
	}
}

static int __init mroce_init(void)
{
	int err;

	mroce_stats_init();
	mroce_icrc_init();
	mroce_rxbatch_init();
	err = mroce_net_init();
	if (err) {
		mroce_stats_exit();
		return err;
	}
	rdma_link_register(&mroce_link_ops);
	pr_info("loaded, UDP port %u\n", mroce_udp_port());
	return 0;
}

static void __exit mroce_exit(void)
{
	/* No new links after this (waits for a running newlink). */
	rdma_link_unregister(&mroce_link_ops);
	mroce_remove_all();
	mroce_net_exit();
	mroce_rxbatch_exit();
	/* Memory regions are freed by RCU callbacks in this module. */
	rcu_barrier();
	if (mroce_stats_check_exit())
		pr_err("objects still alive at unload: memory leaked\n");
	mroce_stats_exit();
	pr_info("unloaded\n");
}

module_init(mroce_init);
module_exit(mroce_exit);
