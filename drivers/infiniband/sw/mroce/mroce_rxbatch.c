// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The RC step after receive, once per softirq batch instead of once per
 * packet.
 *
 * A NAPI poll hands the UDP stack a burst of datagrams, tens of them for
 * one QP in bulk transfer.  Stepping the QP after each one (ACKs, the
 * sender's pump, the timer) answers the burst piecewise: an ACK after the
 * eighth packet, and the rest of the burst left to the ACK hold timer; an
 * ACK that frees window builds a few packets, the next one a few more.
 * Instead, mroce_rc_rx() only feeds the packet to the protocol core and
 * queues the QP here; the step runs from a tasklet, which the softirq
 * loop runs after NET_RX has polled its whole batch.  One ACK then covers
 * the burst, and the pump fills the window freed by all of its ACKs at
 * once.  Completions are not delayed: they are signalled at receive.
 * A step that builds a full burst (MROCE_TX_BURST packets, the most built
 * under the lock at once) queues its QP again, behind the others: the QPs
 * of a batch take turns, and a busy one needs no timer interrupt to go on.
 *
 * Context and lifetime.  Each CPU has its own list and tasklet; a QP is
 * queued on the CPU that received its packet (softirq, qp->lock held),
 * at most once at a time: MROCE_QPB_QUEUED, set when queued, cleared
 * under qp->lock just before its step, so a packet received while the
 * step runs (another CPU) queues the QP again.  qp->batch_refs counts
 * queued entries not yet finished with; destroy_qp waits for zero
 * (mroce_rxbatch_wait()) after clearing conn_live under qp->lock, after
 * which nothing queues the QP.  RESET does not wait: a step queued before
 * it does nothing unless the connection is live again (RESET, INIT, RTR
 * before the tasklet ran), and stepping a live connection is always
 * allowed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/interrupt.h>
#include <linux/kernel.h>
#include <linux/llist.h>
#include <linux/percpu.h>
#include <linux/wait_bit.h>

#include "mroce.h"

struct mroce_rxbatch {
	struct llist_head qps;
	struct tasklet_struct tasklet;
};

static DEFINE_PER_CPU(struct mroce_rxbatch, mroce_rxbatch);

static void mroce_rxbatch_run(struct tasklet_struct *t)
{
	struct mroce_rxbatch *b = from_tasklet(b, t, tasklet);
	struct mroce_qp *qp, *next;
	struct llist_node *list;
	unsigned long flags;
	struct mroce_dp dp;

	list = llist_reverse_order(llist_del_all(&b->qps));
	rcu_read_lock();
	/* _safe: once its reference is dropped, the QP may be freed */
	llist_for_each_entry_safe(qp, next, list, batch_node) {
		mroce_dp_init(&dp);
		dp.batch = true;
		spin_lock_irqsave(&qp->lock, flags);
		clear_bit(MROCE_QPB_QUEUED, &qp->batch_flags);
		if (qp->conn_live)
			mroce_rc_doorbell(qp, &dp);
		spin_unlock_irqrestore(&qp->lock, flags);
		mroce_dp_finish(qp, &dp);
		if (atomic_dec_and_test(&qp->batch_refs))
			wake_up_var(&qp->batch_refs);
	}
	rcu_read_unlock();
}

/* Step qp at the end of this softirq batch (softirq, qp->lock held). */
void mroce_rxbatch_add(struct mroce_qp *qp)
{
	struct mroce_rxbatch *b;

	lockdep_assert_held(&qp->lock);
	if (test_and_set_bit(MROCE_QPB_QUEUED, &qp->batch_flags))
		return;
	atomic_inc(&qp->batch_refs);
	b = this_cpu_ptr(&mroce_rxbatch);
	llist_add(&qp->batch_node, &b->qps);
	tasklet_schedule(&b->tasklet);
}

/*
 * Wait until no batch refers to qp (process context; the caller cleared
 * conn_live under qp->lock, so no new entry appears).
 */
void mroce_rxbatch_wait(struct mroce_qp *qp)
{
	wait_var_event(&qp->batch_refs, !atomic_read(&qp->batch_refs));
}

void mroce_rxbatch_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct mroce_rxbatch *b = per_cpu_ptr(&mroce_rxbatch, cpu);

		init_llist_head(&b->qps);
		tasklet_setup(&b->tasklet, mroce_rxbatch_run);
	}
}

/* Module exit, after every QP is gone: no tasklet can be scheduled. */
void mroce_rxbatch_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		tasklet_kill(&per_cpu_ptr(&mroce_rxbatch, cpu)->tasklet);
}
