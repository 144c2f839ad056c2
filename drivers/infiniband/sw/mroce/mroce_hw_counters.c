// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Port counters for "rdma statistic show link <ibdev>/1" (and
 * /sys/class/infiniband/<ibdev>/ports/1/hw_counters/).
 *
 * Two groups, in this order:
 *   - totals of the RC transport (enum mroce_rc_count): the protocol core
 *     counts per connection and per path, under qp->lock.  A total is the
 *     sum over the live RC QPs of the device, computed when it is read,
 *     plus what destroyed QPs counted (mdev->hwc.gone);
 *   - the device's datagram counters (mdev->stats, also in debugfs
 *     <ibdev>/counters): atomics, read as they are.
 *
 * Why the totals never go backwards:
 *   - a QP's own total is qp->rc_prev plus its connection's counters.
 *     Entering RTR again after RESET re-initialises the connection, which
 *     zeroes the core's counters; mroce_rc_modify() first adds them to
 *     rc_prev (mroce_hwc_conn_read(), mroce_hwc_prev_add(), qp->lock);
 *   - destroy_qp calls mroce_hwc_qp_erase(), which under mdev->hwc.lock
 *     adds the QP's total to hwc.gone and erases the QP from qp_xa.  A
 *     reader walks qp_xa under the same mutex, so it sees every QP either
 *     in qp_xa or in gone, never both and never neither;
 *   - between that erase and the end of destroy_qp, a packet being
 *     received or the QP's timer may still count.  The erase leaves
 *     rc_prev at minus what it moved, so mroce_hwc_qp_final(), called
 *     once the QP is quiet, moves exactly the rest.
 *
 * Context and locking: get_hw_stats is called by ib_core in process
 * context (sysfs or netlink, under the rdma_hw_stats mutex); it takes
 * mdev->hwc.lock, then walks qp_xa taking each QP's lock with interrupts
 * disabled.  The QPs it finds need no reference (mroce_qp_get()):
 * destroy_qp erases a QP under hwc.lock before it lets go of it, so a QP
 * in qp_xa while hwc.lock is held is not being freed.  Nesting is always
 * hwc.lock, then qp->lock; nothing takes hwc.lock under qp->lock.
 *
 * Per-QP counters ("rdma statistic qp", ib_core's counter binding): an
 * rdma counter shows the RC group for the QPs bound to it.  ib_core adds
 * every counter's values to the port's (same indices: the RC group comes
 * first), so what a bound QP counts moves from the port's share to the
 * counter's:
 *   - binding records the QP's total T as qp->hwc_base; while bound, the
 *     counter shows T - hwc_base for it;
 *   - unbinding adds T - hwc_base to the counter's own sum (struct
 *     mroce_hwc_ctr, what QPs no longer bound left there) and to
 *     qp->hwc_moved;
 *   - the port shows, per QP, T - hwc_moved, minus T - hwc_base while
 *     bound; gone receives T - hwc_moved at destroy (ib_core unbinds
 *     before destroy_qp);
 *   - a counter that ib_core releases (no QP bound) adds its last values
 *     to the port's history itself.
 * So the sums ib_core shows never go backwards.  Only RC QPs count; a UD
 * QP may be bound and counts nothing.  Bind, unbind and update run in
 * process context under the counter's mutex, which nests outside
 * hwc.lock.
 */
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include <linux/xarray.h>

#include "mroce.h"
#include "core/mroce_core.h"

/* The datagram counters, in the order they are exported. */
static const size_t mroce_hwc_dev_offs[] = {
	offsetof(struct mroce_dev_stats, rx_datagrams),
	offsetof(struct mroce_dev_stats, rx_dropped),
	offsetof(struct mroce_dev_stats, rx_short),
	offsetof(struct mroce_dev_stats, rx_malformed),
	offsetof(struct mroce_dev_stats, rx_no_qp),
	offsetof(struct mroce_dev_stats, rx_stale_qp),
	offsetof(struct mroce_dev_stats, rx_qp_state),
	offsetof(struct mroce_dev_stats, rx_packets),
	offsetof(struct mroce_dev_stats, rx_rejected),
	offsetof(struct mroce_dev_stats, rx_ud_no_wqe),
	offsetof(struct mroce_dev_stats, rx_ud_qkey),
	offsetof(struct mroce_dev_stats, tx_packets),
	offsetof(struct mroce_dev_stats, tx_errors),
	offsetof(struct mroce_dev_stats, mr_fast_reg),
	offsetof(struct mroce_dev_stats, mr_local_inv),
	offsetof(struct mroce_dev_stats, mr_remote_inv),
	offsetof(struct mroce_dev_stats, ring_bad_index),
	offsetof(struct mroce_dev_stats, rx_uc_msgs),
	offsetof(struct mroce_dev_stats, rx_uc_broken),
	offsetof(struct mroce_dev_stats, rx_uc_no_wqe),
	offsetof(struct mroce_dev_stats, rx_uc_refused),
};

#define MROCE_HWC_NUM_DEV	ARRAY_SIZE(mroce_hwc_dev_offs)

/* Names: enum mroce_rc_count (also per QP), then the datagram counters. */
static const struct rdma_stat_desc mroce_hwc_descs[] = {
	[MROCE_RC_TX_DATA] = { .name = "rc_tx_data" },
	[MROCE_RC_RX_DATA] = { .name = "rc_rx_data" },
	[MROCE_RC_TX_ACKS] = { .name = "rc_tx_acks" },
	[MROCE_RC_RX_ACKS] = { .name = "rc_rx_acks" },
	[MROCE_RC_RETX] = { .name = "rc_retx" },
	[MROCE_RC_LOST] = { .name = "rc_lost" },
	[MROCE_RC_RTOS] = { .name = "rc_rtos" },
	[MROCE_RC_TLPS] = { .name = "rc_tlps" },
	[MROCE_RC_SPURIOUS] = { .name = "rc_spurious" },
	[MROCE_RC_STEERS] = { .name = "rc_steers" },
	[MROCE_RC_PATH_DOWNS] = { .name = "rc_path_downs" },
	[MROCE_RC_ECN_CE] = { .name = "rc_ecn_ce" },
	[MROCE_RC_RNR_ROUNDS] = { .name = "rc_rnr_rounds" },
	[MROCE_RC_NAK_TX] = { .name = "rc_nak_tx" },
	[MROCE_RC_NAK_RX] = { .name = "rc_nak_rx" },
	[MROCE_RC_RX_DUP] = { .name = "rc_rx_dup" },
	[MROCE_RC_ACKS_GAP] = { .name = "rc_acks_gap" },
	[MROCE_RC_ACKS_DUP] = { .name = "rc_acks_dup" },
	[MROCE_RC_ACKS_REQ] = { .name = "rc_acks_req" },
	[MROCE_RC_ACKS_EVERY] = { .name = "rc_acks_every" },
	[MROCE_RC_ACKS_OTHER] = { .name = "rc_acks_other" },
	[MROCE_RC_ACKS_TIMER] = { .name = "rc_acks_timer" },
	{ .name = "rx_datagrams" },
	{ .name = "rx_dropped" },
	{ .name = "rx_short" },
	{ .name = "rx_malformed" },
	{ .name = "rx_no_qp" },
	{ .name = "rx_stale_qp" },
	{ .name = "rx_qp_state" },
	{ .name = "rx_packets" },
	{ .name = "rx_rejected" },
	{ .name = "rx_ud_no_wqe" },
	{ .name = "rx_ud_qkey" },
	{ .name = "tx_packets" },
	{ .name = "tx_errors" },
	{ .name = "mr_fast_reg" },
	{ .name = "mr_local_inv" },
	{ .name = "mr_remote_inv" },
	{ .name = "ring_bad_index" },
	{ .name = "rx_uc_msgs" },
	{ .name = "rx_uc_broken" },
	{ .name = "rx_uc_no_wqe" },
	{ .name = "rx_uc_refused" },
};

static_assert(ARRAY_SIZE(mroce_hwc_descs) == MROCE_HWC_NUM_DEV + MROCE_RC_NUM);
static_assert(MROCE_RC_ACKS_TIMER - MROCE_RC_ACKS_GAP ==
	      MROCE_ACKW_TIMER - MROCE_ACKW_GAP);

/*
 * What an rdma counter keeps besides its stats: the counts of QPs that
 * were bound to it and are not any more.  In mdev->hwc.counters, under
 * mdev->hwc.lock.
 */
struct mroce_hwc_ctr {
	struct list_head node;
	struct rdma_counter *counter;
	struct mroce_rc_counts left;
};

void mroce_hwc_init(struct mroce_dev *mdev)
{
	mutex_init(&mdev->hwc.lock);
	memset(&mdev->hwc.gone, 0, sizeof(mdev->hwc.gone));
	INIT_LIST_HEAD(&mdev->hwc.counters);
}

static void mroce_rc_counts_add(struct mroce_rc_counts *to,
				const struct mroce_rc_counts *c)
{
	int i;

	for (i = 0; i < MROCE_RC_NUM; i++)
		to->v[i] += c->v[i];
}

static void mroce_rc_counts_sub(struct mroce_rc_counts *to,
				const struct mroce_rc_counts *c)
{
	int i;

	for (i = 0; i < MROCE_RC_NUM; i++)
		to->v[i] -= c->v[i];
}

/*
 * Add to *to what the QP's current connection counted (qp->lock held).
 * The connection's memory lives from create_qp to destroy_qp; before its
 * first RTR it is zeroed (no paths, no counts), after RESET it keeps the
 * counts of the connection that ended until the next RTR.
 */
static void mroce_hwc_conn_add(struct mroce_qp *qp,
			       struct mroce_rc_counts *to)
{
	struct mroce_path_stats ps;
	struct mroce_conn_info info;
	u64 *v = to->v;
	u32 i;

	lockdep_assert_held(&qp->lock);
	if (!qp->conn)
		return;
	mroce_conn_get_info(qp->conn, &info);
	v[MROCE_RC_TX_DATA] += info.st.tx_data;
	v[MROCE_RC_RX_DATA] += info.st.rx_data;
	v[MROCE_RC_TX_ACKS] += info.st.tx_acks;
	v[MROCE_RC_RX_ACKS] += info.st.rx_acks;
	v[MROCE_RC_RETX] += info.st.tx_retx;
	v[MROCE_RC_RNR_ROUNDS] += info.st.rnr_rounds;
	v[MROCE_RC_NAK_TX] += info.st.nak_tx;
	v[MROCE_RC_NAK_RX] += info.st.nak_rx;
	v[MROCE_RC_RX_DUP] += info.st.rx_dup;
	for (i = 0; i < MROCE_ACKW_NUM; i++)
		v[MROCE_RC_ACKS_GAP + i] += info.st.tx_ack_why[i];
	for (i = 0; i < info.num_paths; i++) {
		if (mroce_conn_path_stats(qp->conn, i, &ps))
			break;
		v[MROCE_RC_LOST] += ps.lost_pkts;
		v[MROCE_RC_RTOS] += ps.rtos;
		v[MROCE_RC_TLPS] += ps.tlps;
		v[MROCE_RC_SPURIOUS] += ps.spurious;
		v[MROCE_RC_STEERS] += ps.steers;
		v[MROCE_RC_PATH_DOWNS] += ps.downs;
		v[MROCE_RC_ECN_CE] += ps.ecn_ce;
	}
}

/* The QP's total: rc_prev plus its connection (qp->lock held). */
static void mroce_hwc_qp_add(struct mroce_qp *qp, struct mroce_rc_counts *to)
{
	mroce_rc_counts_add(to, &qp->rc_prev);
	mroce_hwc_conn_add(qp, to);
}

/*
 * Before a connection is re-initialised (qp->lock held, any context):
 * read what it counted.  mroce_hwc_prev_add() keeps it once the new
 * connection is in place (not before: a refused init changes nothing).
 */
void mroce_hwc_conn_read(struct mroce_qp *qp, struct mroce_rc_counts *out)
{
	memset(out, 0, sizeof(*out));
	mroce_hwc_conn_add(qp, out);
}

void mroce_hwc_prev_add(struct mroce_qp *qp,
			const struct mroce_rc_counts *old)
{
	lockdep_assert_held(&qp->lock);
	mroce_rc_counts_add(&qp->rc_prev, old);
}

/*
 * destroy_qp, process context: move the QP's total to the device and
 * erase the QP from qp_xa, as one step for readers.  rc_prev becomes
 * minus the connection's counters, so that rc_prev plus the connection
 * is from now on what is still to be moved (u64 arithmetic wraps).
 */
void mroce_hwc_qp_erase(struct mroce_dev *mdev, struct mroce_qp *qp)
{
	struct mroce_rc_counts now;
	unsigned long flags;
	int i;

	mutex_lock(&mdev->hwc.lock);
	if (mroce_qp_is_rc(qp)) {
		memset(&now, 0, sizeof(now));
		spin_lock_irqsave(&qp->lock, flags);
		mroce_hwc_qp_add(qp, &now);
		for (i = 0; i < MROCE_RC_NUM; i++)
			qp->rc_prev.v[i] -= now.v[i];
		spin_unlock_irqrestore(&qp->lock, flags);
		/* what rdma counters took is theirs (ib_core unbound it) */
		mroce_rc_counts_sub(&now, &qp->hwc_moved);
		mroce_rc_counts_add(&mdev->hwc.gone, &now);
	}
	xa_erase_irq(&mdev->qp_xa, qp->ibqp.qp_num);
	mutex_unlock(&mdev->hwc.lock);
}

/*
 * destroy_qp, process context, once nothing can count any more (the QP
 * is unreachable, its connection not live, its timer cancelled) and
 * before the connection is freed: move what was counted since the erase.
 */
void mroce_hwc_qp_final(struct mroce_dev *mdev, struct mroce_qp *qp)
{
	struct mroce_rc_counts rest = {};
	unsigned long flags;

	if (!mroce_qp_is_rc(qp))
		return;
	spin_lock_irqsave(&qp->lock, flags);
	mroce_hwc_qp_add(qp, &rest);
	spin_unlock_irqrestore(&qp->lock, flags);
	mutex_lock(&mdev->hwc.lock);
	mroce_rc_counts_add(&mdev->hwc.gone, &rest);
	mutex_unlock(&mdev->hwc.lock);
}

struct rdma_hw_stats *mroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num)
{
	return rdma_alloc_hw_stats_struct(mroce_hwc_descs,
					  ARRAY_SIZE(mroce_hwc_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* Process context (see the top of this file); fills every counter. */
int mroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct mroce_dev *mdev = to_mdev(ibdev);
	struct mroce_rc_counts sum, t;
	struct mroce_qp *qp;
	unsigned long qpn, flags;
	int i;

	if (port != 1 || stats->num_counters != ARRAY_SIZE(mroce_hwc_descs))
		return -EINVAL;

	for (i = 0; i < MROCE_HWC_NUM_DEV; i++)
		stats->value[MROCE_RC_NUM + i] = atomic64_read((atomic64_t *)
				((char *)&mdev->stats + mroce_hwc_dev_offs[i]));

	mutex_lock(&mdev->hwc.lock);
	sum = mdev->hwc.gone;
	/* hwc.lock keeps the QPs found alive (see the top of this file) */
	xa_for_each(&mdev->qp_xa, qpn, qp) {
		if (!mroce_qp_is_rc(qp))
			continue;
		memset(&t, 0, sizeof(t));
		spin_lock_irqsave(&qp->lock, flags);
		mroce_hwc_qp_add(qp, &t);
		spin_unlock_irqrestore(&qp->lock, flags);
		/* the port's share: not what counters show (see the top) */
		mroce_rc_counts_add(&sum, &t);
		mroce_rc_counts_sub(&sum, &qp->hwc_moved);
		if (qp->ibqp.counter) {
			mroce_rc_counts_sub(&sum, &t);
			mroce_rc_counts_add(&sum, &qp->hwc_base);
		}
	}
	mutex_unlock(&mdev->hwc.lock);

	for (i = 0; i < MROCE_RC_NUM; i++)
		stats->value[i] = sum.v[i];
	return stats->num_counters;
}

/* ---- rdma counters: per-QP RC counts (ib_core's counter binding) ---- */

/* The mroce_hwc_ctr of counter (hwc.lock held), or NULL. */
static struct mroce_hwc_ctr *mroce_hwc_ctr_find(struct mroce_dev *mdev,
						struct rdma_counter *counter)
{
	struct mroce_hwc_ctr *ctr;

	lockdep_assert_held(&mdev->hwc.lock);
	list_for_each_entry(ctr, &mdev->hwc.counters, node)
		if (ctr->counter == counter)
			return ctr;
	return NULL;
}

/* The QP's total now (hwc.lock held; zero for a QP that is not RC). */
static void mroce_hwc_qp_total(struct mroce_qp *qp, struct mroce_rc_counts *t)
{
	unsigned long flags;

	memset(t, 0, sizeof(*t));
	if (!mroce_qp_is_rc(qp))
		return;
	spin_lock_irqsave(&qp->lock, flags);
	mroce_hwc_qp_add(qp, t);
	spin_unlock_irqrestore(&qp->lock, flags);
}

/* The stats of a new counter: the RC group, the port's first indices. */
struct rdma_hw_stats *mroce_counter_alloc_stats(struct rdma_counter *counter)
{
	struct mroce_dev *mdev = to_mdev(counter->device);
	struct rdma_hw_stats *stats;
	struct mroce_hwc_ctr *ctr;

	ctr = kzalloc(sizeof(*ctr), GFP_KERNEL);
	if (!ctr)
		return NULL;
	stats = rdma_alloc_hw_stats_struct(mroce_hwc_descs, MROCE_RC_NUM,
					   RDMA_HW_STATS_DEFAULT_LIFESPAN);
	if (!stats) {
		kfree(ctr);
		return NULL;
	}
	ctr->counter = counter;
	mutex_lock(&mdev->hwc.lock);
	list_add(&ctr->node, &mdev->hwc.counters);
	mutex_unlock(&mdev->hwc.lock);
	return stats;
}

int mroce_counter_dealloc(struct rdma_counter *counter)
{
	struct mroce_dev *mdev = to_mdev(counter->device);
	struct mroce_hwc_ctr *ctr;

	mutex_lock(&mdev->hwc.lock);
	ctr = mroce_hwc_ctr_find(mdev, counter);
	if (ctr)
		list_del(&ctr->node);
	mutex_unlock(&mdev->hwc.lock);
	kfree(ctr);
	return 0;
}

int mroce_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp)
{
	struct mroce_dev *mdev = to_mdev(ibqp->device);
	struct mroce_qp *qp = to_mqp(ibqp);

	mutex_lock(&mdev->hwc.lock);
	mroce_hwc_qp_total(qp, &qp->hwc_base);
	ibqp->counter = counter;
	mutex_unlock(&mdev->hwc.lock);
	return 0;
}

int mroce_counter_unbind_qp(struct ib_qp *ibqp)
{
	struct mroce_dev *mdev = to_mdev(ibqp->device);
	struct mroce_qp *qp = to_mqp(ibqp);
	struct mroce_rc_counts t;
	struct mroce_hwc_ctr *ctr;

	mutex_lock(&mdev->hwc.lock);
	if (ibqp->counter) {
		mroce_hwc_qp_total(qp, &t);
		mroce_rc_counts_sub(&t, &qp->hwc_base);
		ctr = mroce_hwc_ctr_find(mdev, ibqp->counter);
		if (ctr)
			mroce_rc_counts_add(&ctr->left, &t);
		mroce_rc_counts_add(&qp->hwc_moved, &t);
		ibqp->counter = NULL;
	}
	mutex_unlock(&mdev->hwc.lock);
	return 0;
}

/* The counter's values: what unbound QPs left plus its bound QPs now. */
int mroce_counter_update_stats(struct rdma_counter *counter)
{
	struct mroce_dev *mdev = to_mdev(counter->device);
	struct mroce_rc_counts sum = {}, t;
	struct mroce_hwc_ctr *ctr;
	struct mroce_qp *qp;
	unsigned long qpn;
	int i;

	mutex_lock(&mdev->hwc.lock);
	ctr = mroce_hwc_ctr_find(mdev, counter);
	if (ctr)
		sum = ctr->left;
	/* hwc.lock keeps the QPs found alive (see the top of this file) */
	xa_for_each(&mdev->qp_xa, qpn, qp) {
		if (qp->ibqp.counter != counter)
			continue;
		mroce_hwc_qp_total(qp, &t);
		mroce_rc_counts_sub(&t, &qp->hwc_base);
		mroce_rc_counts_add(&sum, &t);
	}
	mutex_unlock(&mdev->hwc.lock);
	for (i = 0; i < MROCE_RC_NUM; i++)
		counter->stats->value[i] = sum.v[i];
	return 0;
}
