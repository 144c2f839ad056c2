// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * mroce_ktest - kernel verbs self-test of an mroce device, the way kernel
 * ULPs (nvme-rdma, iSER, NFS/RDMA) use it: fast-register regions over
 * kmalloc'ed memory (alloc_mr, ib_dma_map_sg, ib_map_mr_sg, IB_WR_REG_MR),
 * remote WRITE and READ through the fast-register rkey, IB_WR_LOCAL_INV,
 * IB_WR_SEND_WITH_INV and the errors that follow invalidation; ib_resize_cq
 * with completions left in the CQ; ib_modify_srq(IB_SRQ_MAX_WR) with
 * receives posted.
 *
 *   insmod mroce_ktest.ko dev=mroce0
 *
 * runs every case at load time, over two RC QPs of the device connected to
 * each other (loopback: same GID), and prints KTAP lines prefixed with
 * "mroce_ktest: " to the kernel log; test_kverbs.sh relays them.  A case
 * that moves a QP to the error state recreates the pair.  Everything is
 * released before init returns; rmmod only unloads.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev = "mroce0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "ib_device to test (an mroce device)");

static unsigned int timeout_ms = 20000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "how long to wait for one completion");

#define KT_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_WRITE)
#define KT_SEND_LEN	64

struct kt_pair {
	struct ib_cq *cq[2];
	struct ib_qp *qp[2];		/* 0: requester, 1: owns the region */
};

struct kt {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	u32 sgid_index;
	union ib_gid gid;
	struct kt_pair p;

	/* The fast-register region: two separate pages, unaligned ends. */
	void *page[2];
	struct scatterlist sg[2];
	int nents;
	struct ib_mr *mr;
	u32 len;

	/* Local buffers (local DMA lkey): source, sink, receive. */
	void *src, *dst, *rbuf;
	u64 src_dma, dst_dma, rbuf_dma;

	int n, failed;
};

static void kt_result(struct kt *t, bool ok, const char *name)
{
	t->n++;
	if (!ok)
		t->failed++;
	pr_info("%sok %d %s\n", ok ? "" : "not ", t->n, name);
}

static int kt_poll(struct kt *t, struct ib_cq *cq, struct ib_wc *wc)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	int n;

	for (;;) {
		n = ib_poll_cq(cq, 1, wc);
		if (n > 0)
			return 0;
		if (n < 0)
			return n;
		if (time_after(jiffies, end)) {
			pr_info("# no completion within %u ms\n", timeout_ms);
			return -ETIMEDOUT;
		}
		usleep_range(200, 1000);
	}
}

/* Poll one completion and check status and opcode. */
static bool kt_expect(struct kt *t, int side, enum ib_wc_status status,
		      enum ib_wc_opcode opcode, struct ib_wc *out)
{
	struct ib_wc wc;

	if (kt_poll(t, t->p.cq[side], &wc))
		return false;
	if (out)
		*out = wc;
	if (wc.status != status ||
	    (status == IB_WC_SUCCESS && wc.opcode != opcode)) {
		pr_info("# QP %d: status %d (%s) opcode %d, want %d opcode %d\n",
			side, wc.status, ib_wc_status_msg(wc.status),
			wc.opcode, status, opcode);
		return false;
	}
	return true;
}

static void kt_pair_destroy(struct kt *t)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (!IS_ERR_OR_NULL(t->p.qp[i]))
			ib_destroy_qp(t->p.qp[i]);
		t->p.qp[i] = NULL;
	}
	for (i = 0; i < 2; i++) {
		if (!IS_ERR_OR_NULL(t->p.cq[i]))
			ib_free_cq(t->p.cq[i]);
		t->p.cq[i] = NULL;
	}
}

static int kt_qp_connect(struct kt *t, struct ib_qp *qp, u32 dest_qpn)
{
	struct ib_qp_attr a;
	int err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = KT_ACCESS | IB_ACCESS_REMOTE_ATOMIC;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.type = rdma_ah_find_type(t->ibdev, 1);
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &t->gid, 0, t->sgid_index, 64, 0);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* Two RC QPs with their own CQs, connected to each other. */
static int kt_pair_create(struct kt *t)
{
	struct ib_qp_init_attr ia;
	int i, err;

	for (i = 0; i < 2; i++) {
		t->p.cq[i] = ib_alloc_cq(t->ibdev, NULL, 64, 0, IB_POLL_DIRECT);
		if (IS_ERR(t->p.cq[i])) {
			err = PTR_ERR(t->p.cq[i]);
			goto fail;
		}
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IB_QPT_RC;
		ia.send_cq = t->p.cq[i];
		ia.recv_cq = t->p.cq[i];
		ia.sq_sig_type = IB_SIGNAL_ALL_WR;
		ia.cap.max_send_wr = 16;
		ia.cap.max_recv_wr = 16;
		ia.cap.max_send_sge = 2;
		ia.cap.max_recv_sge = 2;
		t->p.qp[i] = ib_create_qp(t->pd, &ia);
		if (IS_ERR(t->p.qp[i])) {
			err = PTR_ERR(t->p.qp[i]);
			goto fail;
		}
	}
	for (i = 0; i < 2; i++) {
		err = kt_qp_connect(t, t->p.qp[i], t->p.qp[1 - i]->qp_num);
		if (err)
			goto fail;
	}
	return 0;
fail:
	pr_info("# creating the QP pair: %d\n", err);
	kt_pair_destroy(t);
	return err;
}

static bool kt_pair_recreate(struct kt *t)
{
	kt_pair_destroy(t);
	return !kt_pair_create(t);
}

/* IB_WR_REG_MR of the region with a new key variant; QP 1 posts it. */
static int kt_post_reg(struct kt *t, int access, bool new_key)
{
	const struct ib_send_wr *bad;
	struct ib_reg_wr wr = { };

	if (new_key)
		ib_update_fast_reg_key(t->mr, ib_inc_rkey(t->mr->rkey));
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.wr_id = 1;
	wr.mr = t->mr;
	wr.key = t->mr->rkey;
	wr.access = access;
	return ib_post_send(t->p.qp[1], &wr.wr, &bad);
}

static bool kt_reg(struct kt *t, int access)
{
	return !kt_post_reg(t, access, true) &&
	       kt_expect(t, 1, IB_WC_SUCCESS, IB_WC_REG_MR, NULL);
}

static int kt_post_local_inv(struct kt *t, u32 key)
{
	const struct ib_send_wr *bad;
	struct ib_send_wr wr = { };

	wr.opcode = IB_WR_LOCAL_INV;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.ex.invalidate_rkey = key;
	return ib_post_send(t->p.qp[1], &wr, &bad);
}

/* RDMA WRITE or READ of len bytes at offset off of the region by QP 0. */
static int kt_post_rdma(struct kt *t, enum ib_wr_opcode op, u32 rkey, u32 off,
			u32 len)
{
	const struct ib_send_wr *bad;
	struct ib_rdma_wr wr = { };
	struct ib_sge sge;

	sge.addr = op == IB_WR_RDMA_READ ? t->dst_dma : t->src_dma;
	sge.length = len;
	sge.lkey = t->pd->local_dma_lkey;
	wr.wr.opcode = op;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.remote_addr = t->mr->iova + off;
	wr.rkey = rkey;
	return ib_post_send(t->p.qp[0], &wr.wr, &bad);
}

static void kt_fill(void *p, u32 len, u8 seed)
{
	u8 *b = p;
	u32 i;

	for (i = 0; i < len; i++)
		b[i] = (u8)(seed + i * 13 + (i >> 8));
}

/* Compare the region's bytes (through the scatterlist) with buf. */
static bool kt_region_equals(struct kt *t, const u8 *buf)
{
	u32 at = 0;
	int i;

	for (i = 0; i < 2; i++) {
		if (memcmp(sg_virt(&t->sg[i]), buf + at, t->sg[i].length))
			return false;
		at += t->sg[i].length;
	}
	return true;
}

static void kt_region_fill(struct kt *t, u8 seed)
{
	int i;

	for (i = 0; i < 2; i++)
		kt_fill(sg_virt(&t->sg[i]), t->sg[i].length, seed + i * 101);
}

static void kt_region_read(struct kt *t, u8 *buf)
{
	u32 at = 0;
	int i;

	for (i = 0; i < 2; i++) {
		memcpy(buf + at, sg_virt(&t->sg[i]), t->sg[i].length);
		at += t->sg[i].length;
	}
}

/* A remote WRITE of the whole region through rkey must land. */
static bool kt_write_lands(struct kt *t, u32 rkey, u8 seed)
{
	kt_fill(t->src, t->len, seed);
	kt_region_fill(t, 0);
	if (kt_post_rdma(t, IB_WR_RDMA_WRITE, rkey, 0, t->len) ||
	    !kt_expect(t, 0, IB_WC_SUCCESS, IB_WC_RDMA_WRITE, NULL))
		return false;
	return kt_region_equals(t, t->src);
}

/* A remote WRITE through rkey must fail, leaving the region untouched. */
static bool kt_write_refused(struct kt *t, u32 rkey, u32 off, u32 len)
{
	bool ok;

	kt_region_fill(t, 7);
	kt_region_read(t, t->dst);
	kt_fill(t->src, t->len, 99);
	ok = !kt_post_rdma(t, IB_WR_RDMA_WRITE, rkey, off, len) &&
	     kt_expect(t, 0, IB_WC_REM_ACCESS_ERR, IB_WC_RDMA_WRITE, NULL);
	return ok && kt_region_equals(t, t->dst);
}

/* SEND_WITH_INV of rkey from QP 0 into a receive posted on QP 1. */
static int kt_post_send_inv(struct kt *t, u32 rkey)
{
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *bad;
	struct ib_recv_wr rwr = { };
	struct ib_send_wr wr = { };
	struct ib_sge rsge, sge;
	int err;

	memset(t->rbuf, 0, KT_SEND_LEN);
	rsge.addr = t->rbuf_dma;
	rsge.length = KT_SEND_LEN;
	rsge.lkey = t->pd->local_dma_lkey;
	rwr.wr_id = 2;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	err = ib_post_recv(t->p.qp[1], &rwr, &rbad);
	if (err)
		return err;
	kt_fill(t->src, KT_SEND_LEN, 42);
	sge.addr = t->src_dma;
	sge.length = KT_SEND_LEN;
	sge.lkey = t->pd->local_dma_lkey;
	wr.opcode = IB_WR_SEND_WITH_INV;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.ex.invalidate_rkey = rkey;
	return ib_post_send(t->p.qp[0], &wr, &bad);
}

/* n receives on QP 1 (wr_id 101...) and n SENDs from QP 0 (wr_id 1...). */
static int kt_send_n(struct kt *t, int n)
{
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *bad;
	struct ib_recv_wr rwr = { };
	struct ib_send_wr wr = { };
	struct ib_sge rsge, sge;
	int i, err;

	rsge.addr = t->rbuf_dma;
	rsge.length = KT_SEND_LEN;
	rsge.lkey = t->pd->local_dma_lkey;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	kt_fill(t->src, KT_SEND_LEN, 5);
	sge.addr = t->src_dma;
	sge.length = KT_SEND_LEN;
	sge.lkey = t->pd->local_dma_lkey;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	for (i = 1; i <= n; i++) {
		rwr.wr_id = 100 + i;
		err = ib_post_recv(t->p.qp[1], &rwr, &rbad);
		if (err)
			return err;
	}
	for (i = 1; i <= n; i++) {
		wr.wr_id = i;
		err = ib_post_send(t->p.qp[0], &wr, &bad);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Wait until more than k CQEs wait in the CQ: ib_resize_cq(cq, k) fails
 * with -EINVAL exactly then (while fewer wait it resizes to k, which still
 * holds them).  0 once it failed so.
 */
static int kt_resize_until_refused(struct ib_cq *cq, int k)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	int err;

	do {
		err = ib_resize_cq(cq, k);
		if (err == -EINVAL)
			return 0;
		if (err)
			return err;
		usleep_range(200, 1000);
	} while (!time_after(jiffies, end));
	return -ETIMEDOUT;
}

/*
 * ib_resize_cq on a kernel CQ: 8 SENDs, 2 of their completions polled, the
 * other 6 left in the ring across a shrink and a grow, then polled: each
 * once, in order.
 */
static void kt_resize(struct kt *t)
{
	struct ib_wc wc;
	struct ib_cq *cq;
	bool ok;
	int i;

	ok = kt_pair_recreate(t) && !kt_send_n(t, 8);
	cq = t->p.cq[0];
	for (i = 1; ok && i <= 2; i++)
		ok = kt_expect(t, 0, IB_WC_SUCCESS, IB_WC_SEND, &wc) &&
		     wc.wr_id == i;
	kt_result(t, ok, "ib_resize_cq: 8 SENDs posted, 2 completions polled");
	ok = ok && !kt_resize_until_refused(cq, 5);
	kt_result(t, ok, "ib_resize_cq to 5 with 6 CQEs unpolled: -EINVAL");
	ok = ok && !ib_resize_cq(cq, 6) && cq->cqe == 8;
	kt_result(t, ok, "ib_resize_cq to 6 with 6 CQEs unpolled: cqe 8");
	ok = ok && !ib_resize_cq(cq, 200) && cq->cqe == 256;
	kt_result(t, ok, "ib_resize_cq to 200: cqe 256");
	for (i = 3; ok && i <= 8; i++)
		ok = kt_expect(t, 0, IB_WC_SUCCESS, IB_WC_SEND, &wc) &&
		     wc.wr_id == i;
	ok = ok && ib_poll_cq(cq, 1, &wc) == 0;
	kt_result(t, ok, "the 6 moved completions arrive once, in order");
	for (i = 1; ok && i <= 8; i++)
		ok = kt_expect(t, 1, IB_WC_SUCCESS, IB_WC_RECV, &wc) &&
		     wc.wr_id == 100 + i;
	kt_result(t, ok, "and the 8 receives on the peer");
	ok = ib_resize_cq(cq, 0) == -EINVAL &&
	     ib_resize_cq(cq, t->ibdev->attrs.max_cqe + 1) == -EINVAL &&
	     cq->cqe == 256;
	kt_result(t, ok, "ib_resize_cq to 0 or max_cqe + 1: -EINVAL, CQ unchanged");
}

/* One receive of KT_SEND_LEN bytes into rbuf posted to an SRQ. */
static int kt_post_srq_recv(struct kt *t, struct ib_srq *srq, u64 wr_id)
{
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = { };
	struct ib_sge sge;

	sge.addr = t->rbuf_dma;
	sge.length = KT_SEND_LEN;
	sge.lkey = t->pd->local_dma_lkey;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ib_post_srq_recv(srq, &wr, &bad);
}

/* SENDs wr_id first..last from qp; their completions on cq. */
static bool kt_srq_send(struct kt *t, struct ib_qp *qp, struct ib_cq *cq,
			int first, int last)
{
	const struct ib_send_wr *bad;
	struct ib_send_wr wr = { };
	struct ib_sge sge;
	struct ib_wc wc;
	int i;

	sge.addr = t->src_dma;
	sge.length = KT_SEND_LEN;
	sge.lkey = t->pd->local_dma_lkey;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	for (i = first; i <= last; i++) {
		wr.wr_id = i;
		if (ib_post_send(qp, &wr, &bad))
			return false;
	}
	for (i = first; i <= last; i++)
		if (kt_poll(t, cq, &wc) || wc.status != IB_WC_SUCCESS ||
		    wc.wr_id != i)
			return false;
	return true;
}

/* Receive completions wr_id first..last, in order, on cq. */
static bool kt_srq_recvs(struct kt *t, struct ib_cq *cq, int first, int last)
{
	struct ib_wc wc = { };
	int i;

	for (i = first; i <= last; i++)
		if (kt_poll(t, cq, &wc) || wc.status != IB_WC_SUCCESS ||
		    wc.opcode != IB_WC_RECV || wc.wr_id != i) {
			pr_info("# SRQ receive %d: wr_id %llu status %d\n", i,
				wc.wr_id, wc.status);
			return false;
		}
	return ib_poll_cq(cq, 1, &wc) == 0;
}

/*
 * ib_modify_srq(IB_SRQ_MAX_WR) on a kernel SRQ: grown with receives
 * posted, refused below them, the receives then consumed in order.
 */
static void kt_srq_resize(struct kt *t)
{
	struct ib_srq_init_attr si = { };
	struct ib_qp_init_attr ia = { };
	struct ib_srq_attr sa = { };
	struct ib_cq *cq[2] = { };
	struct ib_qp *qp[2] = { };
	struct ib_srq *srq;
	bool ok;
	int i;

	si.srq_type = IB_SRQT_BASIC;
	si.attr.max_wr = 8;
	si.attr.max_sge = 1;
	srq = ib_create_srq(t->pd, &si);
	ok = !IS_ERR(srq);
	for (i = 0; ok && i < 2; i++) {
		cq[i] = ib_alloc_cq(t->ibdev, NULL, 64, 0, IB_POLL_DIRECT);
		ok = !IS_ERR(cq[i]);
		if (!ok)
			cq[i] = NULL;
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IB_QPT_RC;
		ia.send_cq = cq[i];
		ia.recv_cq = cq[i];
		ia.srq = i ? srq : NULL;
		ia.sq_sig_type = IB_SIGNAL_ALL_WR;
		ia.cap.max_send_wr = 32;
		ia.cap.max_recv_wr = i ? 0 : 4;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = i ? 0 : 1;
		if (ok) {
			qp[i] = ib_create_qp(t->pd, &ia);
			ok = !IS_ERR(qp[i]);
			if (!ok)
				qp[i] = NULL;
		}
	}
	ok = ok && !kt_qp_connect(t, qp[0], qp[1]->qp_num) &&
	     !kt_qp_connect(t, qp[1], qp[0]->qp_num);
	kt_result(t, ok, "ib_create_srq of 8, an RC QP on it, connected");
	for (i = 1; ok && i <= 8; i++)
		ok = !kt_post_srq_recv(t, srq, 100 + i);
	ok = ok && kt_post_srq_recv(t, srq, 109) == -ENOMEM;
	kt_result(t, ok, "8 receives fill the SRQ, a 9th is -ENOMEM");
	ok = ok && kt_srq_send(t, qp[0], cq[0], 1, 3) &&
	     kt_srq_recvs(t, cq[1], 101, 103);
	kt_result(t, ok, "3 SENDs take receives 101..103");
	sa.max_wr = 32;
	ok = ok && !ib_modify_srq(srq, &sa, IB_SRQ_MAX_WR) &&
	     !ib_query_srq(srq, &sa) && sa.max_wr == 32;
	kt_result(t, ok, "ib_modify_srq to 32 with 5 receives posted");
	for (i = 9; ok && i <= 20; i++)
		ok = !kt_post_srq_recv(t, srq, 100 + i);
	kt_result(t, ok, "12 more receives posted after it");
	sa.max_wr = 16;
	ok = ok && ib_modify_srq(srq, &sa, IB_SRQ_MAX_WR) == -EINVAL &&
	     !ib_query_srq(srq, &sa) && sa.max_wr == 32;
	sa.max_wr = 0;
	ok = ok && ib_modify_srq(srq, &sa, IB_SRQ_MAX_WR) == -EINVAL;
	kt_result(t, ok, "ib_modify_srq to 16 with 17 posted, or to 0: -EINVAL");
	sa.max_wr = 17;
	ok = ok && !ib_modify_srq(srq, &sa, IB_SRQ_MAX_WR) &&
	     !ib_query_srq(srq, &sa) && sa.max_wr == 32;
	kt_result(t, ok, "ib_modify_srq to 17 with 17 posted: max_wr 32");
	ok = ok && kt_srq_send(t, qp[0], cq[0], 4, 20) &&
	     kt_srq_recvs(t, cq[1], 104, 120);
	kt_result(t, ok, "17 SENDs take receives 104..120 once, in order");

	for (i = 0; i < 2; i++)
		if (qp[i])
			ib_destroy_qp(qp[i]);
	for (i = 0; i < 2; i++)
		if (cq[i])
			ib_free_cq(cq[i]);
	if (!IS_ERR(srq))
		ib_destroy_srq(srq);
}

static int kt_find_gid(struct kt *t)
{
	union ib_gid gid;
	u32 i, first = U32_MAX;

	for (i = 0; i < t->ibdev->port_data[1].immutable.gid_tbl_len; i++) {
		if (rdma_query_gid(t->ibdev, 1, i, &gid))
			continue;
		if (first == U32_MAX)
			first = i;
		if (ipv6_addr_v4mapped((struct in6_addr *)gid.raw)) {
			t->sgid_index = i;
			t->gid = gid;
			return 0;
		}
	}
	if (first == U32_MAX)
		return -ENOENT;
	t->sgid_index = first;
	return rdma_query_gid(t->ibdev, 1, first, &t->gid);
}

static int kt_setup(struct kt *t)
{
	int i, n;

	t->pd = ib_alloc_pd(t->ibdev, 0);
	if (IS_ERR(t->pd)) {
		int err = PTR_ERR(t->pd);

		t->pd = NULL;
		return err;
	}
	for (i = 0; i < 2; i++) {
		t->page[i] = (void *)__get_free_page(GFP_KERNEL);
		if (!t->page[i])
			return -ENOMEM;
	}
	/* 512 bytes into the first page, up to 1000 bytes before the end. */
	sg_init_table(t->sg, 2);
	sg_set_buf(&t->sg[0], t->page[0] + 512, PAGE_SIZE - 512);
	sg_set_buf(&t->sg[1], t->page[1], PAGE_SIZE - 1000);
	t->len = 2 * PAGE_SIZE - 1512;

	t->src = kmalloc(2 * PAGE_SIZE, GFP_KERNEL);
	t->dst = kmalloc(2 * PAGE_SIZE, GFP_KERNEL);
	t->rbuf = kmalloc(KT_SEND_LEN, GFP_KERNEL);
	if (!t->src || !t->dst || !t->rbuf)
		return -ENOMEM;
	t->src_dma = ib_dma_map_single(t->ibdev, t->src, 2 * PAGE_SIZE,
				       DMA_TO_DEVICE);
	t->dst_dma = ib_dma_map_single(t->ibdev, t->dst, 2 * PAGE_SIZE,
				       DMA_FROM_DEVICE);
	t->rbuf_dma = ib_dma_map_single(t->ibdev, t->rbuf, KT_SEND_LEN,
					DMA_FROM_DEVICE);
	n = ib_dma_map_sg(t->ibdev, t->sg, 2, DMA_BIDIRECTIONAL);
	if (n <= 0)
		return -EIO;
	t->nents = n;
	return kt_pair_create(t);
}

static void kt_teardown(struct kt *t)
{
	int i;

	kt_pair_destroy(t);
	if (!IS_ERR_OR_NULL(t->mr))
		ib_dereg_mr(t->mr);
	if (t->nents)
		ib_dma_unmap_sg(t->ibdev, t->sg, 2, DMA_BIDIRECTIONAL);
	if (t->src_dma)
		ib_dma_unmap_single(t->ibdev, t->src_dma, 2 * PAGE_SIZE,
				    DMA_TO_DEVICE);
	if (t->dst_dma)
		ib_dma_unmap_single(t->ibdev, t->dst_dma, 2 * PAGE_SIZE,
				    DMA_FROM_DEVICE);
	if (t->rbuf_dma)
		ib_dma_unmap_single(t->ibdev, t->rbuf_dma, KT_SEND_LEN,
				    DMA_FROM_DEVICE);
	kfree(t->src);
	kfree(t->dst);
	kfree(t->rbuf);
	for (i = 0; i < 2; i++)
		free_page((unsigned long)t->page[i]);
	if (t->pd)
		ib_dealloc_pd(t->pd);
}

static void kt_run(struct kt *t)
{
	const struct ib_device_attr *attr = &t->ibdev->attrs;
	u32 key1, key2, stale;
	struct ib_wc wc;
	bool ok;
	int n;

	kt_result(t, (attr->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) &&
		  attr->max_fast_reg_page_list_len >= 2,
		  "device advertises MEM_MGT_EXTENSIONS and a page list");

	t->mr = ib_alloc_mr(t->pd, IB_MR_TYPE_MEM_REG, 2);
	ok = !IS_ERR(t->mr);
	if (!ok) {
		pr_info("# ib_alloc_mr: %ld\n", PTR_ERR(t->mr));
		t->mr = NULL;
	}
	n = ok ? ib_map_mr_sg(t->mr, t->sg, t->nents, NULL, PAGE_SIZE) : -1;
	ok = ok && n == t->nents && t->mr->length == t->len &&
	     t->mr->iova == sg_dma_address(&t->sg[0]);
	kt_result(t, ok, "alloc_mr + ib_map_mr_sg over two pages, unaligned ends");
	if (!ok) {
		pr_info("# map_mr_sg: %d\n", n);
		return;
	}
	kt_result(t, ib_map_mr_sg(t->mr, t->sg, t->nents, NULL, 4096 + 1) < 0,
		  "ib_map_mr_sg refuses a page size that is not a power of 2");
	/* map again: ib_core kept the refused page size in the MR */
	ok = ib_map_mr_sg(t->mr, t->sg, t->nents, NULL, PAGE_SIZE) == t->nents;
	kt_result(t, ok, "ib_map_mr_sg again with PAGE_SIZE");

	kt_result(t, kt_reg(t, KT_ACCESS),
		  "IB_WR_REG_MR with an updated key completes (IB_WC_REG_MR)");
	key1 = t->mr->rkey;
	kt_result(t, kt_write_lands(t, key1, 1),
		  "remote WRITE through the fast-reg rkey: bytes land in both pages");

	kt_region_fill(t, 55);
	memset(t->dst, 0, t->len);
	ok = !kt_post_rdma(t, IB_WR_RDMA_READ, key1, 0, t->len) &&
	     kt_expect(t, 0, IB_WC_SUCCESS, IB_WC_RDMA_READ, NULL) &&
	     kt_region_equals(t, t->dst);
	kt_result(t, ok, "remote READ through the fast-reg rkey returns the bytes");

	kt_fill(t->src, 100, 3);
	kt_region_fill(t, 0);
	kt_region_read(t, t->dst);
	memcpy(t->dst + PAGE_SIZE - 512 - 50, t->src, 100);
	ok = !kt_post_rdma(t, IB_WR_RDMA_WRITE, key1, PAGE_SIZE - 512 - 50, 100) &&
	     kt_expect(t, 0, IB_WC_SUCCESS, IB_WC_RDMA_WRITE, NULL) &&
	     kt_region_equals(t, t->dst);
	kt_result(t, ok, "a WRITE across the page boundary at an offset");

	/*
	 * One packet across the end: refused whole.  (The segments of a
	 * longer WRITE that lie inside the region may land before the one
	 * that does not fails; IBA leaves the target undefined then.)
	 */
	ok = kt_write_refused(t, key1, t->len - 8, 16);
	kt_result(t, ok, "a WRITE past the registered length fails with IB_WC_REM_ACCESS_ERR");
	kt_result(t, kt_pair_recreate(t), "QP pair recreated after the error");

	ok = !kt_post_reg(t, KT_ACCESS, true) &&
	     kt_expect(t, 1, IB_WC_LOC_QP_OP_ERR, IB_WC_REG_MR, NULL);
	kt_result(t, ok, "IB_WR_REG_MR on a valid region fails (IB_WC_LOC_QP_OP_ERR)");
	/* the failed REG_MR left the registration (key1) as it was */
	t->mr->lkey = key1;
	t->mr->rkey = key1;
	ok = kt_pair_recreate(t) && kt_write_lands(t, key1, 2);
	kt_result(t, ok, "the registration survives the refused REG_MR");

	ok = !kt_post_local_inv(t, key1) &&
	     kt_expect(t, 1, IB_WC_SUCCESS, IB_WC_LOCAL_INV, NULL);
	kt_result(t, ok, "IB_WR_LOCAL_INV completes (IB_WC_LOCAL_INV)");
	ok = kt_write_refused(t, key1, 0, t->len);
	kt_result(t, ok, "a WRITE to the invalidated rkey fails with IB_WC_REM_ACCESS_ERR");

	ok = kt_pair_recreate(t);
	if (ok) {
		const struct ib_send_wr *bad;
		struct ib_send_wr wr = { };
		struct ib_sge sge;

		sge.addr = t->mr->iova;
		sge.length = 16;
		sge.lkey = key1;
		wr.opcode = IB_WR_SEND;
		wr.send_flags = IB_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ok = !ib_post_send(t->p.qp[1], &wr, &bad) &&
		     kt_expect(t, 1, IB_WC_LOC_PROT_ERR, IB_WC_SEND, NULL);
	}
	kt_result(t, ok, "a local SGE with the invalidated lkey fails with IB_WC_LOC_PROT_ERR");

	ok = kt_pair_recreate(t) && kt_reg(t, KT_ACCESS);
	key2 = t->mr->rkey;
	ok = ok && key2 != key1 && (key2 & ~0xffU) == (key1 & ~0xffU) &&
	     kt_write_lands(t, key2, 3);
	kt_result(t, ok, "re-REG with an updated key: WRITE through the new rkey lands");
	ok = kt_write_refused(t, key1, 0, 16);
	kt_result(t, ok, "the previous key variant is refused (IB_WC_REM_ACCESS_ERR)");

	ok = kt_pair_recreate(t) && !kt_post_send_inv(t, key2) &&
	     kt_expect(t, 0, IB_WC_SUCCESS, IB_WC_SEND, NULL) &&
	     kt_expect(t, 1, IB_WC_SUCCESS, IB_WC_RECV, &wc);
	ok = ok && (wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
	     wc.ex.invalidate_rkey == key2 && wc.byte_len == KT_SEND_LEN &&
	     !memcmp(t->rbuf, t->src, KT_SEND_LEN);
	if (!ok)
		pr_info("# recv wc_flags %#x rkey %#x (want %#x) len %u\n",
			wc.wc_flags, wc.ex.invalidate_rkey, key2, wc.byte_len);
	kt_result(t, ok, "SEND_WITH_INV: receive WC has IB_WC_WITH_INVALIDATE and the rkey");
	ok = kt_write_refused(t, key2, 0, t->len);
	kt_result(t, ok, "a WRITE after remote invalidation fails with IB_WC_REM_ACCESS_ERR");

	/* The region is FREE again: register it read-only for the peer. */
	ok = kt_pair_recreate(t) &&
	     kt_reg(t, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ);
	kt_region_fill(t, 77);
	memset(t->dst, 0, t->len);
	ok = ok && !kt_post_rdma(t, IB_WR_RDMA_READ, t->mr->rkey, 0, t->len) &&
	     kt_expect(t, 0, IB_WC_SUCCESS, IB_WC_RDMA_READ, NULL) &&
	     kt_region_equals(t, t->dst);
	ok = ok && kt_write_refused(t, t->mr->rkey, 0, 16);
	kt_result(t, ok, "a READ-only registration serves READ and refuses WRITE");

	stale = t->mr->rkey;
	ok = kt_pair_recreate(t) && !kt_post_local_inv(t, stale) &&
	     kt_expect(t, 1, IB_WC_SUCCESS, IB_WC_LOCAL_INV, NULL);
	ok = ok && !kt_post_reg(t, IB_ACCESS_REMOTE_WRITE, true) &&
	     kt_expect(t, 1, IB_WC_LOC_QP_OP_ERR, IB_WC_REG_MR, NULL);
	kt_result(t, ok, "IB_WR_REG_MR with REMOTE_WRITE but no LOCAL_WRITE fails");

	ok = kt_pair_recreate(t) && !kt_post_send_inv(t, stale ^ 0x80) &&
	     kt_expect(t, 0, IB_WC_REM_INV_REQ_ERR, IB_WC_SEND, NULL);
	kt_result(t, ok, "SEND_WITH_INV of an unknown key variant fails (IB_WC_REM_INV_REQ_ERR)");

	kt_resize(t);
	kt_srq_resize(t);

	/*
	 * ib_drain_qp(), as every ULP does at teardown: error state, then a
	 * send and a receive that must complete with a flush error.  The
	 * CQs must be empty (ib_process_cq_direct() calls wr_cqe->done).
	 */
	ok = kt_pair_recreate(t);
	if (ok) {
		ib_drain_qp(t->p.qp[0]);
		ib_drain_qp(t->p.qp[1]);
	}
	kt_result(t, ok, "ib_drain_qp on both QPs of a connected pair returns");
}

static int __init kt_init(void)
{
	struct kt *t;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	pr_info("KTAP version 1\n");
	t->ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!t->ibdev) {
		pr_info("not ok 1 device %s # no such ib_device\n", dev);
		pr_info("1..1\n");
		kfree(t);
		return 0;
	}
	if (kt_find_gid(t) || kt_setup(t)) {
		kt_result(t, false, "setup: PD, buffers, QP pair");
	} else {
		kt_result(t, true, "setup: PD, buffers, QP pair");
		kt_run(t);
	}
	kt_teardown(t);
	ib_device_put(t->ibdev);
	pr_info("1..%d\n", t->n);
	pr_info("# done: %d passed, %d failed\n", t->n - t->failed, t->failed);
	kfree(t);
	return 0;
}

static void __exit kt_exit(void)
{
}

module_init(kt_init);
module_exit(kt_exit);
MODULE_DESCRIPTION("mroce kernel verbs self-test (fast-register regions, CQ and SRQ resize)");
MODULE_LICENSE("Dual BSD/GPL");
