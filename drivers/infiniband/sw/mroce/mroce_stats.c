// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Live object accounting and the debugfs view of it.
 *
 * /sys/kernel/debug/mroce/
 *   objects         live objects created through uverbs (user), global
 *   kernel_objects  live objects created by kernel ULPs (ib_mad, ...)
 *   devices         number of live mroce devices
 *   <ibdev>/counters  per device: datagram counters, then live objects
 *
 * Every file is one "name value" pair per line.  Leak tests assert that
 * "objects" is all zero once user processes exit; at module unload every
 * count must be zero or the driver reports it with pr_err.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/seq_file.h>

#include "mroce.h"

static const char *const mroce_obj_names[MROCE_OBJ_MAX] = {
	[MROCE_OBJ_UCONTEXT] = "ucontexts",
	[MROCE_OBJ_PD] = "pds",
	[MROCE_OBJ_CQ] = "cqs",
	[MROCE_OBJ_MR] = "mrs",
	[MROCE_OBJ_QP] = "qps",
	[MROCE_OBJ_AH] = "ahs",
	[MROCE_OBJ_SRQ] = "srqs",
	[MROCE_OBJ_RING] = "rings",
};

/* Global totals: lock-free atomics, any context. */
static struct mroce_obj_counts mroce_global;
static atomic_t mroce_live_devices = ATOMIC_INIT(0);
static struct dentry *mroce_debugfs_root;

static atomic_t *mroce_slot(struct mroce_obj_counts *c,
			    enum mroce_obj_type type, bool user)
{
	return user ? &c->user[type] : &c->kern[type];
}

/*
 * mdev may be NULL for objects that outlive their device's accounting
 * (none today); the global count is always kept.
 */
void mroce_obj_inc(struct mroce_dev *mdev, enum mroce_obj_type type,
		   bool user)
{
	atomic_inc(mroce_slot(&mroce_global, type, user));
	if (mdev)
		atomic_inc(mroce_slot(&mdev->live, type, user));
}

void mroce_obj_dec(struct mroce_dev *mdev, enum mroce_obj_type type,
		   bool user)
{
	WARN_ON_ONCE(atomic_dec_return(mroce_slot(&mroce_global, type,
						  user)) < 0);
	if (mdev)
		WARN_ON_ONCE(atomic_dec_return(mroce_slot(&mdev->live, type,
							  user)) < 0);
}

int mroce_obj_live(struct mroce_dev *mdev, enum mroce_obj_type type,
		   bool user)
{
	return atomic_read(mroce_slot(mdev ? &mdev->live : &mroce_global,
				      type, user));
}

void mroce_stats_dev_count(int delta)
{
	atomic_add(delta, &mroce_live_devices);
}

static void mroce_show_counts(struct seq_file *s, struct mroce_obj_counts *c,
			      bool user, const char *prefix)
{
	int t;

	for (t = 0; t < MROCE_OBJ_MAX; t++)
		seq_printf(s, "%s%s %d\n", prefix, mroce_obj_names[t],
			   atomic_read(mroce_slot(c, t, user)));
}

static int mroce_objects_show(struct seq_file *s, void *unused)
{
	mroce_show_counts(s, &mroce_global, true, "");
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mroce_objects);

static int mroce_kernel_objects_show(struct seq_file *s, void *unused)
{
	mroce_show_counts(s, &mroce_global, false, "");
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mroce_kernel_objects);

static int mroce_devices_show(struct seq_file *s, void *unused)
{
	seq_printf(s, "devices %d\n", atomic_read(&mroce_live_devices));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mroce_devices);

/*
 * Per-device file.  debugfs removes it (waiting for readers) in
 * dealloc_driver before the device memory can go away.
 */
static int mroce_dev_counters_show(struct seq_file *s, void *unused)
{
	struct mroce_dev *mdev = s->private;

	const struct {
		const char *name;
		atomic64_t *v;
	} c[] = {
		{ "rx_datagrams", &mdev->stats.rx_datagrams },
		{ "rx_dropped", &mdev->stats.rx_dropped },
		{ "rx_short", &mdev->stats.rx_short },
		{ "rx_malformed", &mdev->stats.rx_malformed },
		{ "rx_no_qp", &mdev->stats.rx_no_qp },
		{ "rx_stale_qp", &mdev->stats.rx_stale_qp },
		{ "rx_qp_state", &mdev->stats.rx_qp_state },
		{ "rx_packets", &mdev->stats.rx_packets },
		{ "rx_rejected", &mdev->stats.rx_rejected },
		{ "rx_ud_no_wqe", &mdev->stats.rx_ud_no_wqe },
		{ "rx_ud_qkey", &mdev->stats.rx_ud_qkey },
		{ "rx_uc_msgs", &mdev->stats.rx_uc_msgs },
		{ "rx_uc_broken", &mdev->stats.rx_uc_broken },
		{ "rx_uc_no_wqe", &mdev->stats.rx_uc_no_wqe },
		{ "rx_uc_refused", &mdev->stats.rx_uc_refused },
		{ "tx_packets", &mdev->stats.tx_packets },
		{ "tx_errors", &mdev->stats.tx_errors },
		{ "mr_fast_reg", &mdev->stats.mr_fast_reg },
		{ "mr_local_inv", &mdev->stats.mr_local_inv },
		{ "mr_remote_inv", &mdev->stats.mr_remote_inv },
		{ "mw_binds", &mdev->stats.mw_binds },
		{ "ring_bad_index", &mdev->stats.ring_bad_index },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(c); i++)
		seq_printf(s, "%s %lld\n", c[i].name,
			   (long long)atomic64_read(c[i].v));
	seq_printf(s, "rx_no_device_netns %lld\n",
		   mdev->mnet ?
		   (long long)atomic64_read(&mdev->mnet->rx_no_device) : 0LL);
	mroce_show_counts(s, &mdev->live, true, "user_");
	mroce_show_counts(s, &mdev->live, false, "kernel_");
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mroce_dev_counters);

/* Called under mroce_dev_lock after registration (the name is final). */
void mroce_stats_dev_add(struct mroce_dev *mdev)
{
	struct dentry *dir;

	if (IS_ERR_OR_NULL(mroce_debugfs_root))
		return;
	dir = debugfs_create_dir(dev_name(&mdev->ibdev.dev),
				 mroce_debugfs_root);
	if (IS_ERR(dir))
		return;
	debugfs_create_file("counters", 0444, dir, mdev,
			    &mroce_dev_counters_fops);
	mroce_debugfs_paths_add(mdev, dir);
	mroce_ccg_debugfs_add(mdev, dir);
	mdev->debugfs = dir;
}

/* Called under mroce_dev_lock from dealloc_driver. */
void mroce_stats_dev_remove(struct mroce_dev *mdev)
{
	debugfs_remove_recursive(mdev->debugfs);
	mdev->debugfs = NULL;
}

void mroce_stats_init(void)
{
	mroce_debugfs_root = debugfs_create_dir("mroce", NULL);
	if (IS_ERR(mroce_debugfs_root))
		return;
	debugfs_create_file("objects", 0444, mroce_debugfs_root, NULL,
			    &mroce_objects_fops);
	debugfs_create_file("kernel_objects", 0444, mroce_debugfs_root, NULL,
			    &mroce_kernel_objects_fops);
	debugfs_create_file("devices", 0444, mroce_debugfs_root, NULL,
			    &mroce_devices_fops);
}

/* Returns the number of object kinds still alive (each pr_err'ed). */
int mroce_stats_check_exit(void)
{
	int t, bad = 0;

	for (t = 0; t < MROCE_OBJ_MAX; t++) {
		int u = atomic_read(&mroce_global.user[t]);
		int k = atomic_read(&mroce_global.kern[t]);

		if (u || k) {
			pr_err("%d user and %d kernel %s still alive\n",
			       u, k, mroce_obj_names[t]);
			bad++;
		}
	}
	if (atomic_read(&mroce_live_devices)) {
		pr_err("%d devices still alive\n",
		       atomic_read(&mroce_live_devices));
		bad++;
	}
	return bad;
}

void mroce_stats_exit(void)
{
	debugfs_remove_recursive(mroce_debugfs_root);
	mroce_debugfs_root = NULL;
}
