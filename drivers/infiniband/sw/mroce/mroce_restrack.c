// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Driver attributes of an RC QP in "rdma resource show qp" (printed with
 * -dd, also in -j): the logical paths of its connection.
 *
 *   num_paths      paths of the connection (0 before RTR)
 *   paths_shown    how many follow (see MROCE_RES_MAX_PATHS)
 *   pN_sport       UDP source port of path N
 *   pN_state       "up" or "down"
 *   pN_srtt_us     smoothed RTT, microseconds
 *   pN_cwnd        congestion window, bytes
 *   pN_inflight    bytes in flight
 *   pN_lost        packets declared lost
 *   pN_retx        packets retransmitted on the path
 *
 * The same values as debugfs <ibdev>/paths.  ib_core calls this in
 * process context holding a reference that destroy_qp waits for, so the
 * QP and its connection stay allocated; each path is copied under
 * qp->lock (interrupts disabled) and put after it is dropped.
 *
 * A reply is one netlink message of about a page, and rdma(8) reads
 * into a 4 KiB buffer: a QP shows at most MROCE_RES_MAX_PATHS paths, the
 * rest are in debugfs.  With 16 (3.3 KB of driver attributes) a QP did
 * not fit the message of a single-QP query (nlmsg_new(NLMSG_DEFAULT_SIZE)
 * after ib_core's own attributes) on some runs, and the query failed.
 */
#include <linux/kernel.h>
#include <linux/skbuff.h>
#include <net/netlink.h>
#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>

#include "mroce.h"
#include "core/mroce_core.h"

#define MROCE_RES_MAX_PATHS	8
/*
 * Upper bounds of what one path and the rest take in the message.  A
 * driver attribute is a name (header and string padded to 4 bytes: at
 * most 20 for "p63_inflight") then its value (u32: 8 bytes, u64: 12
 * plus 4 of alignment padding, "down": 12): 192 bytes for a path's seven.
 */
#define MROCE_RES_PATH_BYTES	200
#define MROCE_RES_HEAD_BYTES	(4 + 2 * 40)

static int mroce_res_put_path(struct sk_buff *msg, u32 i,
			      const struct mroce_path_stats *st)
{
	char name[16];

	snprintf(name, sizeof(name), "p%u_sport", i);
	if (rdma_nl_put_driver_u32(msg, name, st->sport))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "p%u_state", i);
	if (rdma_nl_put_driver_string(msg, name,
				      st->state == MROCE_PATH_UP ? "up" :
								   "down"))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "p%u_srtt_us", i);
	if (rdma_nl_put_driver_u32(msg, name,
				   min_t(u64, st->srtt_ns / 1000, U32_MAX)))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "p%u_cwnd", i);
	if (rdma_nl_put_driver_u32(msg, name, st->cwnd))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "p%u_inflight", i);
	if (rdma_nl_put_driver_u32(msg, name, st->inflight))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "p%u_lost", i);
	if (rdma_nl_put_driver_u64(msg, name, st->lost_pkts))
		return -EMSGSIZE;
	snprintf(name, sizeof(name), "p%u_retx", i);
	if (rdma_nl_put_driver_u64(msg, name, st->retx_pkts))
		return -EMSGSIZE;
	return 0;
}

int mroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct mroce_qp *qp = to_mqp(ibqp);
	struct mroce_conn_info info;
	struct mroce_path_stats st;
	struct nlattr *table;
	unsigned long flags;
	u32 i, n = 0, shown;
	bool ok;

	if (!mroce_qp_is_rc(qp))
		return 0;

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->conn_live && qp->conn) {
		mroce_conn_get_info(qp->conn, &info);
		n = info.num_paths;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	shown = min_t(u32, n, MROCE_RES_MAX_PATHS);

	/* Too little room: ib_core retries in the next message. */
	if (skb_tailroom(msg) < MROCE_RES_HEAD_BYTES +
				shown * MROCE_RES_PATH_BYTES)
		return -EMSGSIZE;

	table = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "num_paths", n))
		goto err;
	for (i = 0; i < shown; i++) {
		spin_lock_irqsave(&qp->lock, flags);
		ok = qp->conn_live && qp->conn &&
		     !mroce_conn_path_stats(qp->conn, i, &st);
		spin_unlock_irqrestore(&qp->lock, flags);
		if (!ok)
			break;	/* the QP was reset meanwhile */
		if (mroce_res_put_path(msg, i, &st))
			goto err;
	}
	if (rdma_nl_put_driver_u32(msg, "paths_shown", i))
		goto err;
	nla_nest_end(msg, table);
	return 0;

err:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}
