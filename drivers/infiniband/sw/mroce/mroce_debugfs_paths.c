// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * debugfs: per-QP, per-path telemetry of the protocol core.
 *
 * /sys/kernel/debug/mroce/<ibdev>/conns, read-only.  A header line, then
 * one line per live RC connection:
 *
 *   qpn state status tx_data tx_acks tx_probes tx_retx rx_data rx_acks
 *   rx_dup rx_drop nak_tx nak_rx rnr_rounds completions msn_out resp_len
 *   rx_ack_invalid rx_resp_invalid cwnd inflight cc_cuts tx_ack_blks
 *   tx_seg ccg grp_inflight
 *
 * cwnd is the connection window, its congestion group's when shared: ccg
 * names the group (the ccgroups file, mroce_ccg.c; 0: the QP's own
 * window), grp_inflight is what its members have in flight together.
 *
 * tx_acks counts ACK packets; tx_ack_blks the further paths they
 * acknowledged in ACK blocks (spec 3.4.9).
 *
 * /sys/kernel/debug/mroce/<ibdev>/paths, read-only.  A header line, then
 * one line per live RC connection and logical path:
 *
 *   qpn path sport state srtt_us minrtt_us cwnd inflight tx_pkts
 *   tx_bytes delivered lost retx rtos tlps steers downs ecn_ppm loss_ppm
 *   spurious reo_us ecn_ce
 *
 * ecn_ppm is a moving average that steering resets; ecn_ce counts every
 * CE mark the peer echoed on the path since the connection started.
 *
 * QPs are walked one at a time with a reference (mroce_qp_get_next():
 * destroy_qp waits for it before the connection is freed, "QP lifetime"
 * in mroce_qp.c); each path's stats are copied with
 * mroce_conn_path_stats() under the QP lock and printed after it is
 * dropped.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/xarray.h>

#include "mroce.h"
#include "core/mroce_core.h"

static int mroce_paths_show(struct seq_file *s, void *unused)
{
	struct mroce_dev *mdev = s->private;
	struct mroce_path_stats st;
	struct mroce_conn_info info;
	struct mroce_qp *qp;
	unsigned long qpn, flags;
	u32 i, n;
	bool ok;

	seq_puts(s, "qpn path sport state srtt_us minrtt_us cwnd inflight tx_pkts tx_bytes delivered lost retx rtos tlps steers downs ecn_ppm loss_ppm spurious reo_us ecn_ce\n");
	for (qpn = 0; (qp = mroce_qp_get_next(mdev, &qpn)); qpn++) {
		spin_lock_irqsave(&qp->lock, flags);
		n = 0;
		if (qp->conn_live && qp->conn) {
			mroce_conn_get_info(qp->conn, &info);
			n = info.num_paths;
		}
		spin_unlock_irqrestore(&qp->lock, flags);
		for (i = 0; i < n; i++) {
			spin_lock_irqsave(&qp->lock, flags);
			ok = qp->conn_live && qp->conn &&
			     !mroce_conn_path_stats(qp->conn, i, &st);
			spin_unlock_irqrestore(&qp->lock, flags);
			if (!ok)
				break;
			seq_printf(s, "%lu %u %u %s %llu %llu %u %u %llu %llu %llu %llu %llu %llu %llu %llu %llu %u %u %llu %llu %llu\n",
				   qpn, i, st.sport,
				   st.state == MROCE_PATH_UP ? "up" : "down",
				   st.srtt_ns / 1000, st.min_rtt_ns / 1000,
				   st.cwnd, st.inflight, st.tx_pkts,
				   st.tx_bytes, st.delivered_pkts,
				   st.lost_pkts, st.retx_pkts, st.rtos,
				   st.tlps, st.steers, st.downs,
				   st.ecn_frac_ppm, st.loss_frac_ppm,
				   st.spurious, st.reo_wnd_ns / 1000,
				   st.ecn_ce);
		}
		mroce_qp_put(qp);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mroce_paths);

static int mroce_conns_show(struct seq_file *s, void *unused)
{
	struct mroce_dev *mdev = s->private;
	struct mroce_conn_info info;
	struct mroce_qp *qp;
	unsigned long qpn, flags;
	u32 ccg = 0;
	bool ok;

	seq_puts(s, "qpn state status tx_data tx_acks tx_probes tx_retx rx_data rx_acks rx_dup rx_drop nak_tx nak_rx rnr_rounds completions msn_out resp_len rx_ack_invalid rx_resp_invalid cwnd inflight cc_cuts tx_ack_blks tx_seg ccg grp_inflight\n");
	for (qpn = 0; (qp = mroce_qp_get_next(mdev, &qpn)); qpn++) {
		spin_lock_irqsave(&qp->lock, flags);
		ok = qp->conn_live && qp->conn;
		if (ok) {
			mroce_conn_get_info(qp->conn, &info);
			ccg = mroce_ccg_id(qp);
		}
		spin_unlock_irqrestore(&qp->lock, flags);
		mroce_qp_put(qp);
		if (!ok)
			continue;
		seq_printf(s, "%lu %s %u %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %u %u %llu %llu %u %u %llu %llu %u %u %u\n",
			   qpn, info.ok ? "ok" : "error", info.err_status,
			   info.st.tx_data, info.st.tx_acks, info.st.tx_probes,
			   info.st.tx_retx, info.st.rx_data, info.st.rx_acks,
			   info.st.rx_dup, info.st.rx_drop, info.st.nak_tx,
			   info.st.nak_rx, info.st.rnr_rounds,
			   info.st.completions, info.msn_out, info.resp_len,
			   info.st.rx_ack_invalid, info.st.rx_resp_invalid,
			   info.cwnd, info.inflight, info.st.cc_cuts,
			   info.st.tx_ack_blks, info.tx_seg, ccg,
			   info.grp_inflight);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mroce_conns);

void mroce_debugfs_paths_add(struct mroce_dev *mdev, struct dentry *dir)
{
	debugfs_create_file("paths", 0444, dir, mdev, &mroce_paths_fops);
	debugfs_create_file("conns", 0444, dir, mdev, &mroce_conns_fops);
}
