// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Receive: the UDP encapsulation handler of the namespace's sockets.
 *
 * Runs in softirq context under rcu_read_lock() (held by the UDP stack).
 * Every datagram is attributed to the mroce device of its ingress netdev
 * (for a datagram looped back on this host, of the netdev holding its
 * destination address), linearised and validated completely by the
 * protocol core's parser (lengths, reserved fields, ICRC) before any
 * field is used; it then goes to its QP, which must exist, be in a
 * receiving state and, for RC and UC, come from the QP's peer address.  Anything else is counted and dropped.
 * A datagram for a QP destroyed moments ago (a retransmission or ACK the
 * peer sent before it learned) is counted apart from one for no QP at all
 * (rx_stale_qp, rx_no_qp; struct mroce_gone_qps).
 * The QP is held by a reference from its lookup to the end of the step
 * (mroce_qp_get(), "QP lifetime" in mroce_qp.c), not by RCU.
 * Placement and completions happen right here (mroce_rc_rx()), with no
 * hop to a workqueue; the step after it (ACKs, the sender's pump) runs
 * once per softirq batch (mroce_rxbatch.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inetdevice.h>
#include <linux/kernel.h>
#include <linux/skbuff.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/addrconf.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/udp.h>

#include "mroce.h"
#include "core/mroce_core.h"

/*
 * The netdev a datagram that was looped back on this host (ingress lo:
 * the destination is a local address, e.g. two QPs of one device) is for:
 * the one holding its destination address.  RCU, no reference.
 */
static struct net_device *mroce_rx_local_dev(const struct sk_buff *skb)
{
	struct net *net = dev_net(skb->dev);

	if (skb->protocol == htons(ETH_P_IP))
		return __ip_dev_find(net, ip_hdr(skb)->daddr, false);
#if IS_ENABLED(CONFIG_IPV6)
	if (skb->protocol == htons(ETH_P_IPV6) && ipv6_stub->ipv6_dev_find)
		return ipv6_stub->ipv6_dev_find(net, &ipv6_hdr(skb)->daddr,
						NULL);
#endif
	return NULL;
}

static struct mroce_dev *mroce_rx_dev(struct mroce_net *mnet,
				      struct sk_buff *skb)
{
	struct net_device *ndev = skb->dev;
	struct mroce_dev *mdev;

	if (ndev && (ndev->flags & IFF_LOOPBACK))
		ndev = mroce_rx_local_dev(skb);
	if (!ndev)
		return NULL;
	/* Listed but not (yet, or no longer) registered: not receiving. */
	list_for_each_entry_rcu(mdev, &mroce_dev_list, list)
		if (mdev->ndev == ndev && mdev->mnet == mnet &&
		    READ_ONCE(mdev->registered))
			return mdev;
	return NULL;
}

/* The datagram came from the QP's peer (RC, UC). */
static bool mroce_rx_from_peer(const struct mroce_qp *qp,
			       const struct sk_buff *skb)
{
	const struct mroce_av *av = &qp->av;

	if (skb->protocol == htons(ETH_P_IP))
		return av->network_type == RDMA_NETWORK_IPV4 &&
		       ip_hdr(skb)->saddr == av->daddr.v4.sin_addr.s_addr;
	if (skb->protocol == htons(ETH_P_IPV6))
		return av->network_type == RDMA_NETWORK_IPV6 &&
		       ipv6_addr_equal(&ipv6_hdr(skb)->saddr,
				       &av->daddr.v6.sin6_addr);
	return false;
}

/* The source address of a datagram, IPv4 as v4-mapped. */
static void mroce_rx_saddr(const struct sk_buff *skb, struct in6_addr *a)
{
	if (skb->protocol == htons(ETH_P_IP))
		ipv6_addr_set_v4mapped(ip_hdr(skb)->saddr, a);
	else if (skb->protocol == htons(ETH_P_IPV6))
		*a = ipv6_hdr(skb)->saddr;
	else
		memset(a, 0, sizeof(*a));
}

/*
 * Record a QP being destroyed (destroy_qp, before it leaves qp_xa: a
 * datagram that misses it in qp_xa then finds the record; the caller owns
 * the QP, so its AV is stable).  See struct mroce_gone_qps.
 */
void mroce_rx_qp_gone(struct mroce_dev *mdev, const struct mroce_qp *qp)
{
	struct mroce_gone_qps *g = &mdev->gone_qps;
	const struct mroce_av *av = &qp->av;
	struct mroce_gone_qp rec = {
		.at = jiffies,
		.qpn = qp->ibqp.qp_num,
		.any_peer = !mroce_qp_is_rc(qp) &&
			    qp->ibqp.qp_type != IB_QPT_UC,
	};
	unsigned long flags;

	if (!rec.any_peer && !qp->av_valid)
		return;		/* never connected: nothing can be late */
	if (!rec.any_peer && av->network_type == RDMA_NETWORK_IPV4)
		ipv6_addr_set_v4mapped(av->daddr.v4.sin_addr.s_addr,
				       &rec.peer);
	else if (!rec.any_peer)
		rec.peer = av->daddr.v6.sin6_addr;

	spin_lock_irqsave(&g->lock, flags);
	g->e[g->next] = rec;
	g->next = (g->next + 1) % MROCE_GONE_QPS;
	spin_unlock_irqrestore(&g->lock, flags);
}

/*
 * A datagram for QPN qpn, which is not (or no longer) a QP of the device:
 * true when that QP was destroyed less than MROCE_GONE_QP_SECS ago and the
 * datagram comes from its peer.  Softirq, miss path only: a scan of the
 * records under their lock.
 */
static bool mroce_rx_stale(struct mroce_dev *mdev, u32 qpn,
			   const struct sk_buff *skb)
{
	struct mroce_gone_qps *g = &mdev->gone_qps;
	unsigned long flags, now = jiffies;
	struct in6_addr src;
	bool stale = false;
	int i;

	if (!qpn)
		return false;
	mroce_rx_saddr(skb, &src);
	spin_lock_irqsave(&g->lock, flags);
	for (i = 0; i < MROCE_GONE_QPS; i++) {
		const struct mroce_gone_qp *e = &g->e[i];

		if (e->qpn != qpn ||
		    time_after(now, e->at + MROCE_GONE_QP_SECS * HZ))
			continue;
		if (e->any_peer || ipv6_addr_equal(&e->peer, &src)) {
			stale = true;
			break;
		}
	}
	spin_unlock_irqrestore(&g->lock, flags);
	return stale;
}

static bool mroce_rx_ce(const struct sk_buff *skb)
{
	if (skb->protocol == htons(ETH_P_IP))
		return INET_ECN_is_ce(ip_hdr(skb)->tos);
	if (skb->protocol == htons(ETH_P_IPV6))
		return INET_ECN_is_ce(ipv6_get_dsfield(ipv6_hdr(skb)));
	return false;
}

int mroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct mroce_net *mnet = rcu_dereference_sk_user_data(sk);
	struct mroce_pkt pkt;
	struct mroce_dev *mdev;
	struct mroce_qp *qp;
	struct mroce_dp dp;
	unsigned long flags;
	u32 len;
	int err;

	if (!mnet)
		goto free;
	mdev = mroce_rx_dev(mnet, skb);
	if (!mdev) {
		atomic64_inc(&mnet->rx_no_device);
		goto free;
	}
	atomic64_inc(&mdev->stats.rx_datagrams);
	if (skb->len < sizeof(struct udphdr) + MROCE_MIN_PKT) {
		atomic64_inc(&mdev->stats.rx_short);
		goto drop;
	}
	if (skb_linearize(skb))
		goto drop;
	len = ntohs(udp_hdr(skb)->len);
	if (len < sizeof(struct udphdr) || len > skb->len) {
		atomic64_inc(&mdev->stats.rx_malformed);
		goto drop;
	}
	err = mroce_pkt_parse(skb->data + sizeof(struct udphdr),
			      len - sizeof(struct udphdr), &pkt);
	if (err) {
		atomic64_inc(&mdev->stats.rx_malformed);
		goto drop;
	}

	/* a reference until the step is finished ("QP lifetime", mroce_qp.c) */
	qp = mroce_qp_get(mdev, pkt.dqpn);
	if (!qp) {
		if (mroce_rx_stale(mdev, pkt.dqpn, skb)) {
			atomic64_inc(&mdev->stats.rx_stale_qp);
			goto drop;
		}
		goto no_qp;
	}
	mroce_dp_init(&dp);
	if (mroce_op_is_ud(pkt.opcode)) {
		if (qp->ibqp.qp_type != IB_QPT_UD &&
		    qp->ibqp.qp_type != IB_QPT_GSI)
			goto put_no_qp;
		spin_lock_irqsave(&qp->lock, flags);
		mroce_ud_rx(qp, &pkt, skb, &dp);
		spin_unlock_irqrestore(&qp->lock, flags);
		goto done;
	}
	if (mroce_op_is_uc(pkt.opcode)) {
		if (qp->ibqp.qp_type != IB_QPT_UC ||
		    !mroce_rx_from_peer(qp, skb))
			goto put_no_qp;
		spin_lock_irqsave(&qp->lock, flags);
		mroce_uc_recv(qp, &pkt, &dp);
		spin_unlock_irqrestore(&qp->lock, flags);
		goto done;
	}
	if (!mroce_qp_is_rc(qp) || !mroce_rx_from_peer(qp, skb))
		goto put_no_qp;
	spin_lock_irqsave(&qp->lock, flags);
	if (!qp->conn_live || qp->state < IB_QPS_RTR) {
		spin_unlock_irqrestore(&qp->lock, flags);
		mroce_qp_put(qp);
		atomic64_inc(&mdev->stats.rx_qp_state);
		goto drop;
	}
	mroce_rc_rx(qp, &pkt, mroce_rx_ce(skb), &dp);
	spin_unlock_irqrestore(&qp->lock, flags);
done:
	mroce_dp_finish(qp, &dp);
	mroce_qp_put(qp);
	atomic64_inc(&mdev->stats.rx_packets);
	consume_skb(skb);
	return 0;

put_no_qp:
	mroce_qp_put(qp);
no_qp:
	atomic64_inc(&mdev->stats.rx_no_qp);
drop:
	atomic64_inc(&mdev->stats.rx_dropped);
free:
	kfree_skb(skb);
	return 0;
}
