// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Every module parameter of rdma_mroce, in one place and with one
 * validation rule: a value that does not parse fails with -EINVAL, a value
 * outside the parameter's range with -ERANGE, and a refused write changes
 * nothing.  `modinfo rdma_mroce` and the README list them.
 *
 * udp_port is fixed at load time (0444).  The transport tunables are
 * writable at run time (0644) and read (READ_ONCE) when a QP enters RTR, so
 * a change applies to QPs connected afterwards.  Any context may read them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>

#include "mroce.h"
#include "core/mroce_core.h"

/* An unsigned int module parameter within [min, max]. */
struct mroce_param {
	unsigned int val;
	unsigned int min, max;
};

static struct mroce_param mroce_udp_port_p = { MROCE_UDP_PORT, 1, 65535 };

static int mroce_param_set(const char *val, const struct kernel_param *kp)
{
	struct mroce_param *t = kp->arg;
	unsigned int n;
	int err = kstrtouint(val, 0, &n);

	if (err) {
		pr_err("%s: '%s' is not a number\n", kp->name, val);
		return err;
	}
	if (n < t->min || n > t->max) {
		pr_err("%s: %u is outside %u..%u\n", kp->name, n, t->min,
		       t->max);
		return -ERANGE;
	}
	if (t == &mroce_udp_port_p && n == 4791)
		pr_info("udp_port 4791 is the RoCE v2 port: rdma_rxe cannot run beside mroce\n");
	WRITE_ONCE(t->val, n);
	return 0;
}

static int mroce_param_get(char *buf, const struct kernel_param *kp)
{
	const struct mroce_param *t = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(t->val));
}

static const struct kernel_param_ops mroce_param_ops = {
	.set = mroce_param_set,
	.get = mroce_param_get,
};

module_param_cb(udp_port, &mroce_param_ops, &mroce_udp_port_p, 0444);
MODULE_PARM_DESC(udp_port,
		 "UDP port of the mroce transport, 1..65535 (4792), fixed at load time");

static struct mroce_param mroce_paths_p = { 16, 1, MROCE_MAX_PATHS };
module_param_cb(paths, &mroce_param_ops, &mroce_paths_p, 0644);
MODULE_PARM_DESC(paths, "logical paths (UDP source ports) per RC QP, 1..64 (16)");

/*
 * The DSN window of an RC QP's sends (mroce_params.snd_wnd): it sizes the
 * connection's DSN records and, with paths, its PSN windows, so memory per
 * QP follows it (bench/results/qp-memory.md).  Read at create_qp like
 * paths.  The window accepted from the peer stays 1024.
 */
static struct mroce_param mroce_window_p = { 1024, 16, 1024 };
module_param_cb(window, &mroce_param_ops, &mroce_window_p, 0644);
MODULE_PARM_DESC(window,
		 "segments an RC QP may have in flight, 16..1024, rounded down to a power of 2 (1024)");

/*
 * Software stacks see RTT noise from scheduling and timer slack far above
 * a NIC's: the delay target and the RTO floor are tunable, with defaults
 * for a host kernel (see Documentation/mroce-protocol.rst, parameters).
 */
static struct mroce_param mroce_cc_target_us_p = { 25, 1, 1000000 };
module_param_cb(cc_target_us, &mroce_param_ops, &mroce_cc_target_us_p, 0644);
MODULE_PARM_DESC(cc_target_us,
		 "congestion control: tolerated queueing delay above a path's min RTT, us (25)");

static struct mroce_param mroce_rto_min_us_p = { 200, 10, 1000000 };
module_param_cb(rto_min_us, &mroce_param_ops, &mroce_rto_min_us_p, 0644);
MODULE_PARM_DESC(rto_min_us, "floor of a path's retransmission timeout, us (200)");

/*
 * RC segments sized to the netdev MTU (spec 5.1a): each end advertises the
 * largest payload its netdev carries in its ACKs, and messages are cut into
 * the smaller of the two ends' sizes instead of the path MTU.  0 keeps the
 * path MTU (for a fabric whose MTU is below the endpoints').
 */
static struct mroce_param mroce_netdev_seg_p = { 1, 0, 1 };
module_param_cb(netdev_seg, &mroce_param_ops, &mroce_netdev_seg_p, 0644);
MODULE_PARM_DESC(netdev_seg,
		 "RC packets as large as the netdev MTU allows once the peer agrees, 0..1 (1)");

/*
 * The RC step after receive (ACKs, the sender's pump) once per softirq
 * batch of packets rather than once per packet (mroce_rxbatch.c).
 */
static struct mroce_param mroce_rx_batch_p = { 1, 0, 1 };
module_param_cb(rx_batch, &mroce_param_ops, &mroce_rx_batch_p, 0644);
MODULE_PARM_DESC(rx_batch,
		 "answer a burst of received RC packets once, after the softirq's batch, 0..1 (1)");

/*
 * Congestion groups (spec 9.4): the RC QPs of a device to one peer share
 * one connection-level congestion controller.  Read when a QP enters RTR.
 * Off by default: with thousands of QPs to one peer a shared window ran
 * 30 times slower than private ones (spec 9.4, "Kernel").
 */
static struct mroce_param mroce_cc_share_p = { 0, 0, 1 };
module_param_cb(cc_share, &mroce_param_ops, &mroce_cc_share_p, 0644);
MODULE_PARM_DESC(cc_share,
		 "RC QPs to the same peer share one congestion window, 0..1 (0)");

u16 mroce_udp_port(void)
{
	return READ_ONCE(mroce_udp_port_p.val);
}

u32 mroce_param_paths(void)
{
	return READ_ONCE(mroce_paths_p.val);
}

u32 mroce_param_window(void)
{
	return rounddown_pow_of_two(READ_ONCE(mroce_window_p.val));
}

u64 mroce_param_cc_target_ns(void)
{
	return (u64)READ_ONCE(mroce_cc_target_us_p.val) * NSEC_PER_USEC;
}

u64 mroce_param_rto_min_ns(void)
{
	return (u64)READ_ONCE(mroce_rto_min_us_p.val) * NSEC_PER_USEC;
}

bool mroce_param_netdev_seg(void)
{
	return READ_ONCE(mroce_netdev_seg_p.val);
}

bool mroce_param_rx_batch(void)
{
	return READ_ONCE(mroce_rx_batch_p.val);
}

bool mroce_param_cc_share(void)
{
	return READ_ONCE(mroce_cc_share_p.val);
}
