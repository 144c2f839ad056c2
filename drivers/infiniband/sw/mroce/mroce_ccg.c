// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Congestion groups (Documentation/mroce-protocol.rst, 9.4): the RC QPs of
 * one device connected to one peer (same source and destination GID; the
 * network namespace is the device's) share one connection-level congestion
 * controller, the core's struct mroce_cc_group (core/mroce_cc_group.c).
 * Module parameter cc_share (0/1, default 1), read when a QP enters RTR.
 *
 * Lifetime.  modify_qp to RTR looks the group up (or creates it) before
 * taking the QP lock and hands the reference to the QP (qp->ccg); the QP
 * joins the core group right after mroce_conn_init().  It leaves, and
 * drops the reference, on RESET (a re-connect may go to another peer) and
 * in destroy_qp, before its timer is cancelled.  The last reference frees
 * the group.  A QP in error stays a member but holds no window (the core
 * releases its bytes in flight when the connection stops).
 *
 * Locking and context, in this order:
 *   qp->lock (interrupts disabled; softirq or process context)
 *     -> mdev->ccg_lock (spinlock, interrupts disabled): mdev->ccgs, the
 *        groups' refcounts
 *       -> ccg->lock (spinlock, always taken with interrupts already
 *          disabled): the core group's state and member list.  The core
 *          takes it through mroce_ccg_ops with the member's qp->lock held;
 *          debugfs takes it under mdev->ccg_lock.
 * Nothing taken under ccg->lock takes a QP lock: a kick only starts the
 * other QP's hrtimer.  A member is on the core's list only while its QP
 * exists (it leaves under qp->lock and ccg->lock before destroy_qp
 * cancels the timer), so a kick never reaches a freed QP.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "mroce.h"
#include "core/mroce_core.h"

struct mroce_ccg {
	struct list_head node;		/* on mdev->ccgs, under mdev->ccg_lock */
	refcount_t ref;			/* QPs holding it; under mdev->ccg_lock */
	u32 id;				/* immutable: debugfs name */
	union ib_gid sgid, dgid;	/* immutable: the pair it serves */
	spinlock_t lock;		/* grp, see above */
	struct mroce_cc_group grp;
};

static void mroce_ccg_lock(void *gctx)
{
	struct mroce_ccg *g = gctx;

	spin_lock(&g->lock);
}

static void mroce_ccg_unlock(void *gctx)
{
	struct mroce_ccg *g = gctx;

	spin_unlock(&g->lock);
}

/*
 * A member waits for room another member's ACK freed: run its step soon.
 * ccg->lock and the releasing QP's lock are held; the member's QP exists.
 */
static void mroce_ccg_kick(void *ctx)
{
	struct mroce_qp *qp = ctx;

	hrtimer_start(&qp->timer, 0, HRTIMER_MODE_ABS_SOFT);
}

static const struct mroce_cc_group_ops mroce_ccg_ops = {
	.lock = mroce_ccg_lock,
	.unlock = mroce_ccg_unlock,
	.kick = mroce_ccg_kick,
};

void mroce_ccg_dev_init(struct mroce_dev *mdev)
{
	INIT_LIST_HEAD(&mdev->ccgs);
	spin_lock_init(&mdev->ccg_lock);
}

/*
 * Process context, no lock held: the group of (sgid, dgid) with a
 * reference for the caller, created if needed; NULL when memory is short
 * (the QP then keeps its own window).
 */
struct mroce_ccg *mroce_ccg_get(struct mroce_dev *mdev,
				const union ib_gid *sgid,
				const union ib_gid *dgid)
{
	struct mroce_ccg *g, *new;
	unsigned long flags;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return NULL;
	spin_lock_irqsave(&mdev->ccg_lock, flags);
	list_for_each_entry(g, &mdev->ccgs, node) {
		if (!memcmp(&g->sgid, sgid, sizeof(*sgid)) &&
		    !memcmp(&g->dgid, dgid, sizeof(*dgid))) {
			refcount_inc(&g->ref);
			spin_unlock_irqrestore(&mdev->ccg_lock, flags);
			kfree(new);
			return g;
		}
	}
	g = new;
	refcount_set(&g->ref, 1);
	g->id = ++mdev->ccg_next_id;
	g->sgid = *sgid;
	g->dgid = *dgid;
	spin_lock_init(&g->lock);
	mroce_cc_group_init(&g->grp, &mroce_ccg_ops, g);
	list_add_tail(&g->node, &mdev->ccgs);
	spin_unlock_irqrestore(&mdev->ccg_lock, flags);
	return g;
}

/* Any context (qp->lock may be held): drop a reference of mroce_ccg_get(). */
void mroce_ccg_put(struct mroce_dev *mdev, struct mroce_ccg *g)
{
	unsigned long flags;

	if (!g)
		return;
	spin_lock_irqsave(&mdev->ccg_lock, flags);
	if (!refcount_dec_and_test(&g->ref))
		g = NULL;
	else
		list_del(&g->node);
	spin_unlock_irqrestore(&mdev->ccg_lock, flags);
	if (g) {
		WARN_ON_ONCE(g->grp.members);
		kfree(g);
	}
}

/* qp->lock held, right after mroce_conn_init(): share qp->ccg's window. */
void mroce_ccg_join(struct mroce_qp *qp)
{
	if (!qp->ccg)
		return;
	if (mroce_cc_group_join(qp->conn, &qp->ccg->grp)) {
		mroce_ccg_put(qp->mdev, qp->ccg);
		qp->ccg = NULL;
	}
}

/*
 * qp->lock held (RESET, destroy, a refused connection): leave the group
 * and drop the reference.  The connection keeps a private window.
 */
void mroce_ccg_leave(struct mroce_qp *qp)
{
	if (!qp->ccg)
		return;
	if (qp->conn && qp->conn->grp == &qp->ccg->grp)
		mroce_cc_group_leave(qp->conn);
	mroce_ccg_put(qp->mdev, qp->ccg);
	qp->ccg = NULL;
}

/* qp->lock held: the group's number for debugfs, 0 for a private window. */
u32 mroce_ccg_id(const struct mroce_qp *qp)
{
	return qp->ccg ? qp->ccg->id : 0;
}

/*
 * /sys/kernel/debug/mroce/<ibdev>/ccgroups, read-only.  A header line, then
 * one line per group:
 *
 *   id sgid dgid members busy waiting cwnd inflight kicks qpns
 *
 * qpns lists the member QPs, comma separated.  The conns file's ccg column
 * names each QP's group.
 */
static int mroce_ccgroups_show(struct seq_file *s, void *unused)
{
	struct mroce_dev *mdev = s->private;
	struct mroce_conn *m;
	struct mroce_qp *qp;
	struct mroce_ccg *g;
	unsigned long flags;

	seq_puts(s, "id sgid dgid members busy waiting cwnd inflight kicks qpns\n");
	spin_lock_irqsave(&mdev->ccg_lock, flags);
	list_for_each_entry(g, &mdev->ccgs, node) {
		spin_lock(&g->lock);
		seq_printf(s, "%u %pI6 %pI6 %u %u %u %u %u %llu ", g->id,
			   g->sgid.raw, g->dgid.raw, g->grp.members,
			   g->grp.busy, g->grp.waiting, g->grp.cwnd,
			   g->grp.inflight, g->grp.kicks);
		for (m = g->grp.head; m; m = m->grp_next) {
			qp = m->ctx;
			seq_printf(s, "%s%u", m == g->grp.head ? "" : ",",
				   qp->ibqp.qp_num);
		}
		if (!g->grp.head)
			seq_puts(s, "-");
		seq_putc(s, '\n');
		spin_unlock(&g->lock);
	}
	spin_unlock_irqrestore(&mdev->ccg_lock, flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mroce_ccgroups);

void mroce_ccg_debugfs_add(struct mroce_dev *mdev, struct dentry *dir)
{
	debugfs_create_file("ccgroups", 0444, dir, mdev, &mroce_ccgroups_fops);
}
