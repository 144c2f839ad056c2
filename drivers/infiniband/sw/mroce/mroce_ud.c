// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unreliable datagrams: UD QPs and the GSI QP (QP1, through which
 * ib_mad and so rdma_cm and ib_cm talk).  A datagram is one packet
 * (UD_SEND or UD_SEND_IMM with a DETH) of at most the port MTU; it is
 * sent from one UDP source port per (source QP, destination QP) so that
 * the datagrams of a flow keep their order on a multipath network.  A send
 * completes as soon as its packet is built; a received datagram lands in
 * the next receive WQE behind a 40-byte GRH area that carries the IP
 * header, as for RoCE v2.
 *
 * Context: with qp->lock held and inside rcu_read_lock(), from the
 * doorbell (any context), the receive handler (softirq) and modify_qp.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jhash.h>
#include <linux/kernel.h>
#include <linux/skbuff.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_mad.h>

#include "mroce.h"
#include "core/mroce_core.h"
#include "mroce_trace.h"

#define MROCE_GRH_SIZE		40

/*
 * The SL of a UD receive completion.  RoCE has no LRH and so no SL on the
 * wire; like ConnectX hardware (whose completions UCX's UD transport reads)
 * we report the packet type there instead: bit 3 for a UDP-encapsulated
 * (RoCE v2) frame, bits 2:0 the L3 header, 1 for IPv6 and 2 for IPv4.
 * UCX takes the length of the destination address it checks in the GRH
 * area from these bits, and drops every IPv4 datagram when they are 0.
 */
#define MROCE_UD_SL_UDP		0x8
#define MROCE_UD_SL_IPV6	0x1
#define MROCE_UD_SL_IPV4	0x2
#define MROCE_UD_SPORT_BASE	0xc000

static u16 mroce_ud_sport(u32 sqpn, u32 dqpn)
{
	return MROCE_UD_SPORT_BASE | (jhash_2words(sqpn, dqpn, 0) & 0x3fff);
}

static u32 mroce_ud_mtu(struct mroce_qp *qp)
{
	return ib_mtu_enum_to_int(mroce_mtu_from_netdev(qp->mdev->ndev->mtu));
}

/* Build one datagram from a validated WQE; returns a completion status. */
static u32 mroce_ud_send_one(struct mroce_qp *qp,
			     const struct mroce_send_wqe *w,
			     struct mroce_dp *dp)
{
	const struct mroce_sge *sge = (const struct mroce_sge *)(w + 1);
	u32 i, len = 0, hlen, total;
	struct mroce_ah_entry *ah;
	struct sk_buff *skb;
	struct mroce_pkt pkt;
	u8 *buf;
	int ret;

	if (w->opcode != MROCE_WR_SEND && w->opcode != MROCE_WR_SEND_WITH_IMM)
		return IB_WC_LOC_QP_OP_ERR;
	/* RCU (our caller) keeps the entry alive (mroce_destroy_ah()). */
	ah = xa_load(&qp->mdev->ah_xa, w->wr.ud.ah_num);
	if (!ah || ah->pd != qp->ibqp.pd)
		return IB_WC_LOC_QP_OP_ERR;
	if (w->wr.ud.remote_qpn & ~MROCE_QPN_MASK)
		return IB_WC_LOC_QP_OP_ERR;
	if (w->send_flags & MROCE_SEND_INLINE) {
		if (w->inline_len > qp->cap.max_inline_data ||
		    w->inline_len > qp->sq.entry_size - sizeof(*w))
			return IB_WC_LOC_LEN_ERR;
		len = w->inline_len;
	} else {
		if (w->num_sge > qp->cap.max_send_sge)
			return IB_WC_LOC_LEN_ERR;
		for (i = 0; i < w->num_sge; i++) {
			if (sge[i].length > mroce_ud_mtu(qp))
				return IB_WC_LOC_LEN_ERR;
			len += sge[i].length;
		}
	}
	if (len > mroce_ud_mtu(qp))
		return IB_WC_LOC_LEN_ERR;

	memset(&pkt, 0, sizeof(pkt));
	pkt.version = MROCE_WIRE_VERSION;
	pkt.opcode = w->opcode == MROCE_WR_SEND ? MROCE_OP_UD_SEND :
		     MROCE_OP_UD_SEND_IMM;
	pkt.flags = MROCE_F_FIRST | MROCE_F_LAST;
	if (w->send_flags & MROCE_SEND_SOLICITED)
		pkt.flags |= MROCE_F_SOLICITED;
	pkt.dqpn = w->wr.ud.remote_qpn;
	pkt.psn = qp->ud_seq++;
	pkt.payload_len = len;
	pkt.imm = be32_to_cpu(w->imm_data);
	/*
	 * A Q_Key with the high bit set means "the QP's own" (IBA 10.2.5);
	 * ib_mad sends with IB_QP_SET_QKEY on QP1, whose Q_Key is IB_QP1_QKEY.
	 */
	pkt.deth.qkey = w->wr.ud.remote_qkey & IB_QP_SET_QKEY ?
			qp->qkey : w->wr.ud.remote_qkey;
	pkt.deth.src_qpn = qp->ibqp.qp_num;

	hlen = mroce_op_hdr_len(pkt.opcode);
	total = hlen + len + MROCE_ICRC_SIZE;
	skb = mroce_xmit_alloc(&ah->av, total,
			       mroce_ud_sport(qp->ibqp.qp_num, pkt.dqpn));
	if (!skb)
		return IB_WC_SUCCESS;	/* dropped, as UD may be */
	buf = skb_put(skb, total);
	ret = mroce_pkt_build_hdr(buf, total, &pkt);
	if (WARN_ON_ONCE(ret != hlen)) {
		kfree_skb(skb);
		return IB_WC_LOC_QP_OP_ERR;
	}
	if (w->send_flags & MROCE_SEND_INLINE)
		memcpy(buf + hlen, w + 1, len);
	else if (mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user, sge,
				w->num_sge, 0, buf + hlen, len,
				MROCE_FROM_MR)) {
		kfree_skb(skb);
		return IB_WC_LOC_PROT_ERR;
	}
	mroce_pkt_seal(buf, hlen + len, total);
	__skb_queue_tail(&dp->txq, skb);
	return IB_WC_SUCCESS;
}

/* New send WQEs: each becomes a datagram and completes right away. */
void mroce_ud_doorbell(struct mroce_qp *qp, struct mroce_dp *dp)
{
	u32 prod = mroce_wq_avail(qp, &qp->sq, qp->sq_done, qp->sq_next);
	u32 mask = qp->sq.num_entries - 1, status;
	struct mroce_send_wqe *w;

	while (qp->sq_next != prod) {
		w = mroce_sq_shadow(qp, qp->sq_next);
		memcpy(w, qp->sq.buf + MROCE_RING_CTL_SIZE +
		       (size_t)(qp->sq_next & mask) * qp->sq.entry_size,
		       qp->sq.entry_size);
		qp->sq_next++;
		if (qp->state == IB_QPS_ERR)
			status = IB_WC_WR_FLUSH_ERR;
		else if (qp->state < IB_QPS_RTS)
			status = IB_WC_LOC_QP_OP_ERR;
		else
			status = mroce_ud_send_one(qp, w, dp);
		mroce_wq_send_done(qp, status, MROCE_WC_SEND, 0, dp);
	}
}

/* The GRH area: an IPv6 header, or 20 zero bytes and the IPv4 header. */
static void mroce_ud_grh(const struct sk_buff *skb, u8 *grh)
{
	memset(grh, 0, MROCE_GRH_SIZE);
	if (skb->protocol == htons(ETH_P_IP))
		memcpy(grh + 20, ip_hdr(skb), sizeof(struct iphdr));
	else
		memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
}

/* A validated datagram for qp (softirq, lock held, RCU). */
void mroce_ud_rx(struct mroce_qp *qp, const void *p, struct sk_buff *skb,
		 struct mroce_dp *dp)
{
	const struct mroce_pkt *pkt = p;
	const struct mroce_recv_wqe *w;
	const struct mroce_sge *sge;
	struct mroce_cqe cqe = { };
	u8 grh[MROCE_GRH_SIZE];
	u32 qkey;
	int err;

	if (qp->state < IB_QPS_RTR || qp->state == IB_QPS_ERR)
		goto drop;
	qkey = qp->ibqp.qp_type == IB_QPT_GSI ? IB_QP1_QKEY : qp->qkey;
	if (pkt->deth.qkey != qkey) {
		atomic64_inc(&qp->mdev->stats.rx_ud_qkey);
		trace_mroce_drop(qp, MROCE_DROP_UD_QKEY, 1, pkt->deth.src_qpn,
				 0);
		return;
	}
	if (skb->protocol == htons(ETH_P_IP) && ip_hdrlen(skb) != 20)
		goto drop;	/* options do not fit the GRH area */
	if (!mroce_wq_bind(qp, qp->rq_done, dp)) {
		atomic64_inc(&qp->mdev->stats.rx_ud_no_wqe);
		trace_mroce_drop(qp, MROCE_DROP_UD_NO_WQE, 1,
				 pkt->deth.src_qpn, 0);
		return;		/* no receive posted: dropped, as UD may be */
	}
	w = mroce_rq_shadow(qp, qp->rq_done);
	sge = (const struct mroce_sge *)(w + 1);
	cqe.opcode = MROCE_WC_RECV;
	if (w->num_sge > qp->cap.max_recv_sge) {
		cqe.status = IB_WC_LOC_LEN_ERR;
		goto done;
	}
	mroce_ud_grh(skb, grh);
	err = mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user, sge,
			     w->num_sge, 0, grh, sizeof(grh), MROCE_TO_MR);
	if (!err)
		err = mroce_sge_copy(qp->mdev, qp->ibqp.pd, !qp->user, sge,
				     w->num_sge, sizeof(grh),
				     (void *)pkt->payload, pkt->payload_len,
				     MROCE_TO_MR);
	if (err) {
		cqe.status = err == -EMSGSIZE ? IB_WC_LOC_LEN_ERR :
			     IB_WC_LOC_PROT_ERR;
		goto done;
	}
	cqe.byte_len = sizeof(grh) + pkt->payload_len;
	cqe.src_qp = pkt->deth.src_qpn;
	cqe.wc_flags = MROCE_WC_GRH;
	if (skb->protocol == htons(ETH_P_IP)) {
		cqe.network_hdr_type = MROCE_NET_IPV4;
		cqe.sl = MROCE_UD_SL_UDP | MROCE_UD_SL_IPV4;
	} else {
		cqe.network_hdr_type = MROCE_NET_IPV6;
		cqe.sl = MROCE_UD_SL_UDP | MROCE_UD_SL_IPV6;
	}
	if (pkt->opcode == MROCE_OP_UD_SEND_IMM) {
		cqe.wc_flags |= MROCE_WC_WITH_IMM;
		cqe.imm_data = cpu_to_be32(pkt->imm);
	}
done:
	mroce_wq_recv_done(qp, &cqe, pkt->flags & MROCE_F_SOLICITED, dp);
	return;
drop:
	atomic64_inc(&qp->mdev->stats.rx_qp_state);
}

/* A transition of a UD or GSI QP (lock held). */
void mroce_ud_modify(struct mroce_qp *qp, enum ib_qp_state next,
		     struct mroce_dp *dp)
{
	if (next == IB_QPS_RESET) {
		mroce_wq_reset(qp);
		return;
	}
	if (next == IB_QPS_ERR) {
		mroce_ud_doorbell(qp, dp);
		mroce_wq_rq_flush(qp, dp);
	}
}
