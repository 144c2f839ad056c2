// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * mroce_edge.c - the provider's edge with libibverbs: device matching,
 * context and verbs objects through the kernel's uverbs commands.  The rings
 * and everything done with them live in the C++ datapath (mroce_uprov.h).
 */
#include "pabi34.h"
#include "mroce_uprov.h"

#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/mroce-abi.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mroce_device {
	struct verbs_device vdev;
};

struct mroce_context {
	struct verbs_context vctx;	/* first: libibverbs allocates us */
	uint32_t max_inline;
};

struct mroce_cq {
	struct verbs_cq vcq;		/* first: ibv_cq and ibv_cq_ex */
	struct mroce_uring *ring;
	struct mroce_cqx *cqx;		/* ibv_create_cq_ex CQs only */
};

struct mroce_qp {
	struct verbs_qp vqp;		/* first: ibv_qp and ibv_qp_ex */
	struct mroce_uring *sq;		/* NULL for an XRC target */
	struct mroce_uring *rq;		/* NULL with an SRQ, for XRC QPs */
	struct mroce_qp_limits lim;
	struct mroce_sqx *sqx;		/* QPs created with send_ops_flags only */
};

struct mroce_ah {
	struct ibv_ah ibah;
	uint32_t ah_num;
};

struct mroce_srq {
	struct verbs_srq vsrq;		/* first: ibv_srq */
	struct mroce_uring *ring;
	struct mroce_qp_limits lim;
};

/* struct ibv_context is the last member of struct verbs_context. */
#define to_mctx(c)							\
	((struct mroce_context *)((char *)(c) -				\
		offsetof(struct mroce_context, vctx.context)))
#define to_mcq(c) ((struct mroce_cq *)(c))
#define to_mqp(q) ((struct mroce_qp *)(q))
#define to_mah(a) ((struct mroce_ah *)(a))
#define to_msrq(s) ((struct mroce_srq *)(s))
#define to_mqpx(q) ((struct mroce_qp *)(q))	/* ibv_qp_ex is at offset 0 */
#define to_mcqx(c) ((struct mroce_cq *)(c))	/* ibv_cq_ex is at offset 0 */
#define sqx_of(q) (to_mqpx(q)->sqx)
#define cqx_of(c) (to_mcqx(c)->cqx)

/* ---- device ---------------------------------------------------------- */

static bool mroce_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	char buf[16];

	/* Only mroce devices carry this read-only attribute. */
	return ibv_read_ibdev_sysfs_file(buf, sizeof(buf), sysfs_dev, "%s",
					 MROCE_SYSFS_ABI_ATTR) > 0;
}

static struct verbs_device *mroce_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct mroce_device *dev = calloc(1, sizeof(*dev));

	(void)sysfs_dev;
	return dev ? &dev->vdev : NULL;
}

static void mroce_uninit_device(struct verbs_device *vdev)
{
	free((struct mroce_device *)vdev);
}

/* ---- context ----------------------------------------------------------- */

static int mroce_query_device_ex(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp, &resp_size);
	/*
	 * MEM_MGT_EXTENSIONS is the kernel's fast-register support for kernel
	 * ULPs; userspace cannot fast-register, so it is not reported here.
	 * Memory windows (type 1 and 2B) and IBV_WR_LOCAL_INV of type 2
	 * windows are: the kernel's MEM_WINDOW flags pass through.
	 */
	if (!ret)
		attr->orig_attr.device_cap_flags &= ~IBV_DEVICE_MEM_MGT_EXTENSIONS;
	return ret;
}

/*
 * The device's raw clock is CLOCK_MONOTONIC in ns (mroce-abi.h), read here
 * without a system call.  As mlx4 and mlx5 do, the whole count is in
 * tv_nsec and tv_sec is 0, so tv_sec * 10^9 + tv_nsec is the count too.
 */
static int mroce_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values)
{
	struct timespec ts;
	uint32_t filled = 0;

	(void)context;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		if (clock_gettime(CLOCK_MONOTONIC, &ts))
			return errno;
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
		filled |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	values->comp_mask = filled;	/* what was filled in */
	return 0;
}

static int mroce_query_port(struct ibv_context *context, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

/* ---- PD, MR ---------------------------------------------------------------- */

static struct ibv_pd *mroce_alloc_pd(struct ibv_context *context)
{
	struct ibv_alloc_pd cmd;
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_pd *pd = calloc(1, sizeof(*pd));
	int ret;

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int mroce_dealloc_pd(struct ibv_pd *pd)
{
	int ret = ibv_cmd_dealloc_pd(pd);

	if (!ret)
		free(pd);
	return ret;
}

static struct ibv_mr *mroce_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
				   uint64_t hca_va, int access)
{
	struct ibv_reg_mr cmd;
	struct ib_uverbs_reg_mr_resp resp;
	struct verbs_mr *vmr = calloc(1, sizeof(*vmr));
	int ret;

	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd, sizeof(cmd),
			     &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * ibv_rereg_mr: libibverbs checked the flags and arguments it knows and
 * updates pd, addr and length of the ibv_mr on success; the command
 * updates lkey and rkey (the kernel hands out new keys).  On failure the
 * MR is unchanged and errno says why (libibverbs returns
 * IBV_REREG_MR_ERR_CMD).
 */
static int mroce_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
			  size_t length, int access)
{
	struct ibv_rereg_mr cmd;
	struct ib_uverbs_rereg_mr_resp resp;
	int ret;

	if (!flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != vmr->ibv_mr.context))) {
		errno = EINVAL;
		return EINVAL;
	}
	ret = ibv_cmd_rereg_mr(vmr, (uint32_t)flags, addr, length, (uintptr_t)addr, access, pd,
			       &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		errno = ret;
		return ret;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

static int mroce_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(vmr);
	return ret;
}

/* ---- MW (memory windows: the kernel binds and checks them) ------------------ */

static struct ibv_mw *mroce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_alloc_mw cmd;
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int mroce_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (!ret)
		free(mw);
	return ret;
}

/* ---- CQ -------------------------------------------------------------------- */

/*
 * The kernel CQ and its ring; cq->vcq.cq is set up by the command.  flags:
 * enum mroce_create_cq_flags.
 */
static int mroce_cq_init(struct ibv_context *context, int cqe, struct ibv_comp_channel *channel,
			 int comp_vector, uint32_t flags, struct mroce_cq *cq)
{
	struct {
		struct ibv_create_cq ibv;
		struct mroce_create_cq_cmd drv;
	} cmd;
	struct {
		struct ib_uverbs_create_cq_resp core;
		struct mroce_create_cq_resp drv;
	} resp;
	int ret;

	if (cqe < 1)
		return EINVAL;
	memset(&cmd, 0, sizeof(cmd));
	cmd.drv.flags = flags;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->vcq.cq, &cmd.ibv,
				sizeof(cmd), &resp.core, sizeof(resp));
	if (ret)
		return ret;
	cq->ring = mroce_uring_map(context->cmd_fd, resp.drv.mmap_offset, resp.drv.mmap_size,
				   resp.drv.num_entries, sizeof(struct mroce_cqe));
	if (!cq->ring) {
		ret = errno;
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		return ret;
	}
	return 0;
}

static struct ibv_cq *mroce_create_cq(struct ibv_context *context, int cqe,
				      struct ibv_comp_channel *channel, int comp_vector)
{
	struct mroce_cq *cq = calloc(1, sizeof(*cq));
	int ret;

	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mroce_cq_init(context, cqe, channel, comp_vector, 0, cq);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

/* ibv_cq_ex: thunks into the datapath's poller (mroce_uprov.h). */
static int mroce_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	return mroce_cqx_start_poll(cqx_of(c), attr ? attr->comp_mask : 0, &c->wr_id, &c->status);
}

static int mroce_next_poll(struct ibv_cq_ex *c)
{
	return mroce_cqx_next_poll(cqx_of(c), &c->wr_id, &c->status);
}

static void mroce_end_poll(struct ibv_cq_ex *c)
{
	mroce_cqx_end_poll(cqx_of(c));
}

#define MROCE_WC_READER(_name, _type, _field)				\
	static _type mroce_read_##_name(struct ibv_cq_ex *c)		\
	{								\
		return mroce_cqx_current(cqx_of(c))->_field;		\
	}
MROCE_WC_READER(opcode, enum ibv_wc_opcode, opcode)
MROCE_WC_READER(vendor_err, uint32_t, vendor_err)
MROCE_WC_READER(byte_len, uint32_t, byte_len)
/* The union: imm_data, or the host-order invalidated rkey, as ibv_wc. */
MROCE_WC_READER(imm_data, __be32, imm_data)
MROCE_WC_READER(qp_num, uint32_t, qp_num)
MROCE_WC_READER(src_qp, uint32_t, src_qp)
MROCE_WC_READER(wc_flags, unsigned int, wc_flags)
MROCE_WC_READER(slid, uint32_t, slid)
MROCE_WC_READER(sl, uint8_t, sl)
MROCE_WC_READER(dlid_path_bits, uint8_t, dlid_path_bits)

/* Both clocks in ns; the raw one ticks at hca_core_clock (1 GHz). */
static uint64_t mroce_read_completion_ts(struct ibv_cq_ex *c)
{
	return mroce_cqx_completion_ts(cqx_of(c));
}

static uint64_t mroce_read_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	return mroce_cqx_completion_wallclock_ns(cqx_of(c));
}

static struct ibv_cq_ex *mroce_create_cq_ex(struct ibv_context *context,
					    struct ibv_cq_init_attr_ex *attr)
{
	const uint64_t ts_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	struct mroce_cq *cq;
	struct ibv_cq_ex *cx;
	int ret = mroce_cqx_check(attr);

	if (ret) {
		errno = ret;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mroce_cq_init(context, (int)attr->cqe, attr->channel, (int)attr->comp_vector,
			    (attr->wc_flags & ts_flags) ? MROCE_CREATE_CQ_TIMESTAMP : 0, cq);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	cq->cqx = mroce_cqx_new(cq->ring);
	if (!cq->cqx) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		mroce_uring_unmap(cq->ring);
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cx = &cq->vcq.cq_ex;
	cx->start_poll = mroce_start_poll;
	cx->next_poll = mroce_next_poll;
	cx->end_poll = mroce_end_poll;
	cx->read_opcode = mroce_read_opcode;
	cx->read_vendor_err = mroce_read_vendor_err;
	cx->read_byte_len = mroce_read_byte_len;
	cx->read_imm_data = mroce_read_imm_data;
	cx->read_qp_num = mroce_read_qp_num;
	cx->read_src_qp = mroce_read_src_qp;
	cx->read_wc_flags = mroce_read_wc_flags;
	cx->read_slid = mroce_read_slid;
	cx->read_sl = mroce_read_sl;
	cx->read_dlid_path_bits = mroce_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cx->read_completion_ts = mroce_read_completion_ts;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		cx->read_completion_wallclock_ns = mroce_read_completion_wallclock_ns;
	/* read_cvlan and the rest stay NULL: refused by mroce_cqx_check. */
	return cx;
}

static int mroce_destroy_cq(struct ibv_cq *ibcq)
{
	struct mroce_cq *cq = to_mcq(ibcq);
	int ret = ibv_cmd_destroy_cq(ibcq);

	if (ret)
		return ret;
	mroce_cqx_free(cq->cqx);
	mroce_uring_unmap(cq->ring);
	free(cq);
	return 0;
}

struct mroce_resize_args {
	struct ibv_cq *cq;
	int cqe;
};

/* The kernel command, run by mroce_cq_resize() under the CQ lock. */
static int mroce_resize_cmd(void *arg, struct mroce_resize_cq_resp *drv)
{
	struct mroce_resize_args *a = arg;
	struct ibv_resize_cq cmd;
	struct {
		struct ib_uverbs_resize_cq_resp core;
		struct mroce_resize_cq_resp drv;
	} resp;
	int ret;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_resize_cq(a->cq, a->cqe, &cmd, sizeof(cmd), &resp.core, sizeof(resp));
	if (ret)
		return ret;
	*drv = resp.drv;
	return 0;
}

/* ibv_resize_cq: the kernel moves the unpolled CQEs, we switch rings. */
static int mroce_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct mroce_resize_args a = { .cq = ibcq, .cqe = cqe };

	if (cqe < 1)
		return EINVAL;
	return mroce_cq_resize(to_mcq(ibcq)->ring, ibcq->context->cmd_fd, mroce_resize_cmd, &a);
}

static int mroce_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	return mroce_cq_poll(to_mcq(ibcq)->ring, num_entries, wc);
}

static int mroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

/* ---- QP -------------------------------------------------------------------- */

/* Map the QP's rings after the create command; 0 or an errno. */
static int mroce_qp_map(struct mroce_qp *qp, int fd, const struct ibv_qp_cap *cap,
			enum ibv_qp_type type, const struct mroce_create_qp_resp *drv)
{
	qp->lim.qp_type = type;
	qp->lim.max_send_sge = cap->max_send_sge;
	qp->lim.max_recv_sge = cap->max_recv_sge;
	qp->lim.max_inline = cap->max_inline_data;
	qp->sq = mroce_uring_map(fd, drv->sq_mmap_offset, drv->sq_mmap_size, drv->sq_entries,
				 drv->sq_wqe_size);
	if (!qp->sq)
		return errno;
	if (drv->rq_mmap_size) {
		qp->rq = mroce_uring_map(fd, drv->rq_mmap_offset, drv->rq_mmap_size,
					 drv->rq_entries, drv->rq_wqe_size);
		if (!qp->rq) {
			int ret = errno;

			mroce_uring_unmap(qp->sq);
			qp->sq = NULL;
			return ret;
		}
	}
	return 0;
}

static struct ibv_qp *mroce_create_qp_ex(struct ibv_context *context,
					 struct ibv_qp_init_attr_ex *attr);

static struct ibv_qp *mroce_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_create_qp cmd;
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct mroce_create_qp_resp drv;
	} resp;
	struct mroce_qp *qp;
	int ret;

	if (attr->qp_type == IBV_QPT_XRC_SEND) {
		/*
		 * ibv_create_qp_ex with comp_mask PD alone comes here: an
		 * XRC initiator is made as ibv_create_qp_ex makes it.
		 */
		struct ibv_qp_init_attr_ex ax;
		struct ibv_qp *q;

		memset(&ax, 0, sizeof(ax));
		ax.qp_context = attr->qp_context;
		ax.send_cq = attr->send_cq;
		ax.recv_cq = attr->recv_cq;
		ax.srq = attr->srq;
		ax.cap = attr->cap;
		ax.qp_type = attr->qp_type;
		ax.sq_sig_all = attr->sq_sig_all;
		ax.comp_mask = IBV_QP_INIT_ATTR_PD;
		ax.pd = pd;
		q = mroce_create_qp_ex(pd->context, &ax);
		if (q)
			attr->cap = ax.cap;
		return q;
	}
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd), &resp.core,
				sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	ret = mroce_qp_map(qp, pd->context->cmd_fd, &attr->cap, attr->qp_type, &resp.drv);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

/* ibv_qp_ex: thunks into the datapath's batch (mroce_uprov.h). */
static void mroce_wr_start(struct ibv_qp_ex *q)
{
	mroce_sqx_start(sqx_of(q));
}

static int mroce_wr_complete(struct ibv_qp_ex *q)
{
	struct ibv_send_wr *dummy;
	unsigned int queued;
	int ret;

	if (q->qp_base.state < IBV_QPS_RTS) {
		mroce_sqx_abort(sqx_of(q));	/* as mroce_post_send */
		return EINVAL;
	}
	ret = mroce_sqx_complete(sqx_of(q), &queued);
	if (ret || !queued)
		return ret;
	/* One doorbell for the batch (see mroce_post_send). */
	return ibv_cmd_post_send(&q->qp_base, NULL, &dummy);
}

static void mroce_wr_abort(struct ibv_qp_ex *q)
{
	mroce_sqx_abort(sqx_of(q));
}

static void mroce_wr_send(struct ibv_qp_ex *q)
{
	mroce_sqx_send(sqx_of(q), q->wr_id, q->wr_flags);
}

static void mroce_wr_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
	mroce_sqx_send_imm(sqx_of(q), q->wr_id, q->wr_flags, imm);
}

static void mroce_wr_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	mroce_sqx_send_inv(sqx_of(q), q->wr_id, q->wr_flags, rkey);
}

static void mroce_wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	mroce_sqx_rdma_write(sqx_of(q), q->wr_id, q->wr_flags, rkey, addr);
}

static void mroce_wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr,
				    __be32 imm)
{
	mroce_sqx_rdma_write_imm(sqx_of(q), q->wr_id, q->wr_flags, rkey, addr, imm);
}

static void mroce_wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	mroce_sqx_rdma_read(sqx_of(q), q->wr_id, q->wr_flags, rkey, addr);
}

static void mroce_wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr,
				    uint64_t compare, uint64_t swap)
{
	mroce_sqx_atomic_cmp_swp(sqx_of(q), q->wr_id, q->wr_flags, rkey, addr, compare, swap);
}

static void mroce_wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr,
				      uint64_t add)
{
	mroce_sqx_atomic_fetch_add(sqx_of(q), q->wr_id, q->wr_flags, rkey, addr, add);
}

static void mroce_wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
	mroce_sqx_set_sge(sqx_of(q), lkey, addr, length);
}

static void mroce_wr_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sge)
{
	mroce_sqx_set_sge_list(sqx_of(q), n, sge);
}

static void mroce_wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
	mroce_sqx_set_inline_data(sqx_of(q), addr, length);
}

static void mroce_wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n,
					  const struct ibv_data_buf *buf)
{
	mroce_sqx_set_inline_data_list(sqx_of(q), n, buf);
}

static void mroce_wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
			     const struct ibv_mw_bind_info *info)
{
	mroce_sqx_bind_mw(sqx_of(q), q->wr_id, q->wr_flags, mw, rkey, info);
}

static void mroce_wr_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	mroce_sqx_local_inv(sqx_of(q), q->wr_id, q->wr_flags, rkey);
}

/* Operations the kernel does not execute: the batch fails with EOPNOTSUPP. */
static void mroce_wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	mroce_sqx_unsupported(sqx_of(q));
}

static void mroce_wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn,
				 uint32_t qkey)
{
	mroce_sqx_set_ud_addr(sqx_of(q), ah != NULL, ah ? to_mah(ah)->ah_num : 0, qpn, qkey);
}

static void mroce_wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{
	mroce_sqx_set_xrc_srqn(sqx_of(q), srqn);
}

static void mroce_wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr,
				  const void *atomic_wr)
{
	(void)rkey, (void)addr, (void)atomic_wr;
	mroce_sqx_unsupported(sqx_of(q));
}

static void mroce_qpx_set_ops(struct ibv_qp_ex *q)
{
	q->wr_start = mroce_wr_start;
	q->wr_complete = mroce_wr_complete;
	q->wr_abort = mroce_wr_abort;
	q->wr_send = mroce_wr_send;
	q->wr_send_imm = mroce_wr_send_imm;
	q->wr_send_inv = mroce_wr_send_inv;
	q->wr_rdma_write = mroce_wr_rdma_write;
	q->wr_rdma_write_imm = mroce_wr_rdma_write_imm;
	q->wr_rdma_read = mroce_wr_rdma_read;
	q->wr_atomic_cmp_swp = mroce_wr_atomic_cmp_swp;
	q->wr_atomic_fetch_add = mroce_wr_atomic_fetch_add;
	q->wr_set_sge = mroce_wr_set_sge;
	q->wr_set_sge_list = mroce_wr_set_sge_list;
	q->wr_set_inline_data = mroce_wr_set_inline_data;
	q->wr_set_inline_data_list = mroce_wr_set_inline_data_list;
	q->wr_bind_mw = mroce_wr_bind_mw;
	q->wr_local_inv = mroce_wr_local_inv;
	q->wr_send_tso = mroce_wr_send_tso;
	q->wr_set_ud_addr = mroce_wr_set_ud_addr;
	q->wr_set_xrc_srqn = mroce_wr_set_xrc_srqn;
	q->wr_atomic_write = mroce_wr_atomic_write;
}

static struct ibv_qp *mroce_create_qp_ex(struct ibv_context *context,
					 struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_create_qp cmd;
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct mroce_create_qp_resp drv;
	} resp;
	struct ibv_qp_init_attr_ex kattr;
	struct mroce_qp *qp;
	int ret = mroce_qpx_check(attr);

	if (ret) {
		errno = ret;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	/* Zero create_flags were accepted above; the command knows no such mask. */
	kattr = *attr;
	kattr.comp_mask &= ~(uint32_t)IBV_QP_INIT_ATTR_CREATE_FLAGS;
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, &kattr, &cmd, sizeof(cmd), &resp.core,
				   sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	attr->cap = kattr.cap;	/* what the kernel granted */
	if (attr->qp_type == IBV_QPT_XRC_RECV) {
		/* The kernel made it (shared): no ring, posting to it fails. */
		qp->lim.qp_type = IBV_QPT_XRC_RECV;
		return &qp->vqp.qp;
	}
	ret = mroce_qp_map(qp, context->cmd_fd, &kattr.cap, attr->qp_type, &resp.drv);
	if (ret)
		goto err_destroy;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp->sqx = mroce_sqx_new(qp->sq, &qp->lim, attr->send_ops_flags);
		if (!qp->sqx) {
			ret = ENOMEM;
			goto err_unmap;
		}
		mroce_qpx_set_ops(&qp->vqp.qp_ex);
		qp->vqp.comp_mask |= MROCE_VERBS_QP_EX;
	}
	return &qp->vqp.qp;
err_unmap:
	mroce_uring_unmap(qp->rq);
	mroce_uring_unmap(qp->sq);
err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
	free(qp);
	errno = ret;
	return NULL;
}

/*
 * ibv_open_qp: another handle of an XRC target QP of a shared XRC domain
 * (ib_core keeps the QP until its last handle is closed).  Like the
 * creator's handle it has no ring.
 */
static struct ibv_qp *mroce_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *attr)
{
	struct ibv_open_qp cmd;
	struct ib_uverbs_create_qp_resp resp;
	struct mroce_qp *qp;
	int ret;

	if ((attr->comp_mask & IBV_QP_OPEN_ATTR_TYPE) && attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_open_qp(context, &qp->vqp, sizeof(qp->vqp), attr, &cmd, sizeof(cmd), &resp,
			      sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	qp->lim.qp_type = IBV_QPT_XRC_RECV;
	return &qp->vqp.qp;
}

static int mroce_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct ibv_modify_qp cmd;

	return ibv_cmd_modify_qp(qp, attr, mask, &cmd, sizeof(cmd));
}

static int mroce_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			  struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init_attr, &cmd, sizeof(cmd));
}

static int mroce_destroy_qp(struct ibv_qp *ibqp)
{
	struct mroce_qp *qp = to_mqp(ibqp);
	int ret = ibv_cmd_destroy_qp(ibqp);

	if (ret)
		return ret;
	mroce_sqx_free(qp->sqx);
	mroce_uring_unmap(qp->sq);
	mroce_uring_unmap(qp->rq);
	free(qp);
	return 0;
}

static uint32_t mroce_ah_num(struct ibv_ah *ah)
{
	return to_mah(ah)->ah_num;
}

static int mroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct mroce_qp *qp = to_mqp(ibqp);
	struct ibv_send_wr *dummy;
	unsigned int queued;
	int ret, db;

	/*
	 * Sends need RTS (or a later state: in the error state they flush);
	 * libibverbs keeps ibqp->state from ibv_modify_qp.
	 */
	if (ibqp->state < IBV_QPS_RTS || !qp->sq) {
		*bad_wr = wr;
		return EINVAL;	/* an XRC target has no send queue */
	}
	ret = mroce_sq_post(qp->sq, &qp->lim, mroce_ah_num, wr, bad_wr, &queued);
	if (!queued)
		return ret;
	/* Doorbell: a POST_SEND without work requests makes the kernel read the SQ. */
	db = ibv_cmd_post_send(ibqp, NULL, &dummy);
	return ret ? ret : db;
}

/*
 * ibv_bind_mw (type 1; libibverbs checked the type, the PD and that a
 * range comes with a region): a BIND_MW WQE under the window's next key
 * (ibv_inc_rkey), which mw->rkey holds once it is queued, as with other
 * providers.  The bind executes when every earlier WR has completed; its
 * completion (IBV_WC_BIND_MW, or IBV_WC_MW_BIND_ERR) says whether it took.
 */
static int mroce_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct mroce_qp *qp = to_mqp(ibqp);
	struct ibv_send_wr wr, *dummy;
	unsigned int queued;
	int ret;

	if (ibqp->state < IBV_QPS_RTS || !qp->sq)
		return EINVAL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = (unsigned int)mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = mroce_sq_post_bind1(qp->sq, &qp->lim, &wr, &queued);
	if (!queued)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return ibv_cmd_post_send(ibqp, NULL, &dummy);
}

static int mroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct mroce_qp *qp = to_mqp(ibqp);

	if (!qp->rq || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;	/* receives go to the SRQ, or need INIT */
	}
	return mroce_rq_post(qp->rq, &qp->lim, wr, bad_wr);
}

/* ---- SRQ ------------------------------------------------------------------- */

static int mroce_srq_map(struct mroce_srq *srq, int fd, uint32_t max_sge,
			 const struct mroce_create_srq_resp *drv)
{
	srq->lim.qp_type = IBV_QPT_RC;
	srq->lim.max_recv_sge = max_sge;
	srq->ring = mroce_uring_map(fd, drv->mmap_offset, drv->mmap_size, drv->num_entries,
				    drv->wqe_size);
	return srq->ring ? 0 : errno;
}

static struct ibv_srq *mroce_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_create_srq cmd;
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct mroce_create_srq_resp drv;
	} resp;
	struct mroce_srq *srq = calloc(1, sizeof(*srq));
	int ret;

	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd), &resp.core,
				 sizeof(resp));
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	ret = mroce_srq_map(srq, pd->context->cmd_fd, attr->attr.max_sge, &resp.drv);
	if (ret) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		free(srq);
		errno = ret;
		return NULL;
	}
	return &srq->vsrq.srq;
}

/*
 * ibv_create_srq_ex: basic SRQs as ibv_create_srq, and XRC SRQs (in an
 * XRC domain, with a CQ, numbered: ibv_get_srq_num); the same ring.
 */
static struct ibv_srq *mroce_create_srq_ex(struct ibv_context *context,
					   struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct ibv_create_xsrq cmd;
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct mroce_create_srq_resp drv;
	} resp;
	enum ibv_srq_type type = IBV_SRQT_BASIC;
	struct mroce_srq *srq;
	int ret;

	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
		type = attr->srq_type;
	if ((attr->comp_mask & ~known) || (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC)) {
		errno = EOPNOTSUPP;	/* tag matching */
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    (type == IBV_SRQT_XRC &&
	     (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
	      !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq))) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, &cmd, sizeof(cmd), &resp.core,
				    sizeof(resp));
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	ret = mroce_srq_map(srq, context->cmd_fd, attr->attr.max_sge, &resp.drv);
	if (ret) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		free(srq);
		errno = ret;
		return NULL;
	}
	return &srq->vsrq.srq;
}

/* The number a request to an XRC target names (0 for a basic SRQ). */
static int mroce_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct mroce_srq *srq = to_msrq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

/* ---- XRC domains -------------------------------------------------------- */

static struct ibv_xrcd *mroce_open_xrcd(struct ibv_context *context,
					struct ibv_xrcd_init_attr *attr)
{
	struct ibv_open_xrcd cmd;
	struct ib_uverbs_open_xrcd_resp resp;
	struct verbs_xrcd *xrcd = calloc(1, sizeof(*xrcd));
	int ret;

	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_open_xrcd(context, xrcd, sizeof(*xrcd), attr, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

static int mroce_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = (struct verbs_xrcd *)ibxrcd;	/* first member */
	int ret = ibv_cmd_close_xrcd(xrcd);

	if (!ret)
		free(xrcd);
	return ret;
}

struct mroce_srq_modify_args {
	struct ibv_srq *srq;
	struct ibv_srq_attr *attr;
	int mask;
};

/*
 * The kernel command; resp receives the new ring's description when
 * IBV_SRQ_MAX_WR is in the mask (MODIFY_SRQ has no response buffer: the
 * kernel writes to resp_addr).
 */
static int mroce_modify_srq_cmd(void *arg, struct mroce_modify_srq_resp *resp)
{
	struct mroce_srq_modify_args *a = arg;
	struct {
		struct ibv_modify_srq ibv;
		struct mroce_modify_srq_cmd drv;
	} cmd;

	memset(&cmd, 0, sizeof(cmd));
	if (resp)
		cmd.drv.resp_addr = (uintptr_t)resp;
	return ibv_cmd_modify_srq(a->srq, a->attr, a->mask, &cmd.ibv, sizeof(cmd));
}

/*
 * IBV_SRQ_LIMIT arms the limit; IBV_SRQ_MAX_WR resizes: the kernel moves the
 * WQEs not yet taken to a new ring and we switch to it (mroce_srq_resize()).
 */
static int mroce_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct mroce_srq_modify_args a = { .srq = srq, .attr = attr, .mask = mask };

	if (!(mask & IBV_SRQ_MAX_WR))
		return mroce_modify_srq_cmd(&a, NULL);
	return mroce_srq_resize(to_msrq(srq)->ring, srq->context->cmd_fd, mroce_modify_srq_cmd,
				&a);
}

static int mroce_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int mroce_destroy_srq(struct ibv_srq *ibsrq)
{
	struct mroce_srq *srq = to_msrq(ibsrq);
	int ret = ibv_cmd_destroy_srq(&srq->vsrq.srq);

	if (ret)
		return ret;
	mroce_uring_unmap(srq->ring);
	free(srq);
	return 0;
}

/* Receives land in the SRQ ring; the kernel reads it when messages arrive. */
static int mroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	struct mroce_srq *srq = to_msrq(ibsrq);

	return mroce_rq_post(srq->ring, &srq->lim, wr, bad_wr);
}

/* ---- AH -------------------------------------------------------------------- */

static struct ibv_ah *mroce_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct {
		struct ib_uverbs_create_ah_resp core;
		struct mroce_create_ah_resp drv;
	} resp;
	struct mroce_ah *ah = calloc(1, sizeof(*ah));
	int ret;

	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_ah(pd, &ah->ibah, attr, &resp.core, sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_num = resp.drv.ah_num;
	return &ah->ibah;
}

static int mroce_destroy_ah(struct ibv_ah *ah)
{
	int ret = ibv_cmd_destroy_ah(ah);

	if (!ret)
		free(to_mah(ah));
	return ret;
}

/* ---- context setup ------------------------------------------------------- */

static void mroce_free_context(struct ibv_context *ibctx)
{
	struct mroce_context *ctx = to_mctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops mroce_ctx_ops = {
	.query_device_ex = mroce_query_device_ex,
	.query_rt_values = mroce_query_rt_values,
	.query_port = mroce_query_port,
	.alloc_pd = mroce_alloc_pd,
	.dealloc_pd = mroce_dealloc_pd,
	.reg_mr = mroce_reg_mr,
	.dereg_mr = mroce_dereg_mr,
	.rereg_mr = mroce_rereg_mr,
	.alloc_mw = mroce_alloc_mw,
	.dealloc_mw = mroce_dealloc_mw,
	.bind_mw = mroce_bind_mw,
	.create_cq = mroce_create_cq,
	.create_cq_ex = mroce_create_cq_ex,
	.destroy_cq = mroce_destroy_cq,
	.poll_cq = mroce_poll_cq,
	.req_notify_cq = mroce_req_notify_cq,
	.resize_cq = mroce_resize_cq,
	.create_qp = mroce_create_qp,
	.create_qp_ex = mroce_create_qp_ex,
	.modify_qp = mroce_modify_qp,
	.query_qp = mroce_query_qp,
	.destroy_qp = mroce_destroy_qp,
	.post_send = mroce_post_send,
	.post_recv = mroce_post_recv,
	.create_srq = mroce_create_srq,
	.create_srq_ex = mroce_create_srq_ex,
	.get_srq_num = mroce_get_srq_num,
	.open_xrcd = mroce_open_xrcd,
	.open_qp = mroce_open_qp,
	.close_xrcd = mroce_close_xrcd,
	.modify_srq = mroce_modify_srq,
	.query_srq = mroce_query_srq,
	.destroy_srq = mroce_destroy_srq,
	.post_srq_recv = mroce_post_srq_recv,
	.create_ah = mroce_create_ah,
	.destroy_ah = mroce_destroy_ah,
	.free_context = mroce_free_context,
};

static struct verbs_context *mroce_alloc_context(struct ibv_device *ibdev, int cmd_fd,
						 void *private_data)
{
	struct ibv_get_context cmd;
	struct {
		struct ib_uverbs_get_context_resp core;
		struct mroce_alloc_ucontext_resp drv;
	} resp;
	struct mroce_context *ctx;

	(void)private_data;
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    (struct verbs_context *)offsetof(struct mroce_context, vctx),
					    RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	memset(&resp, 0, sizeof(resp));
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp.core, sizeof(resp)))
		goto err;
	if (resp.drv.abi_version != MROCE_UVERBS_ABI_VERSION ||
	    resp.drv.ring_ctl_size != MROCE_RING_CTL_SIZE ||
	    resp.drv.cqe_size != sizeof(struct mroce_cqe)) {
		errno = EPROTO;
		goto err;
	}
	ctx->max_inline = resp.drv.max_inline_data;
	verbs_set_ops(&ctx->vctx, &mroce_ctx_ops);
	return &ctx->vctx;
err:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	return NULL;
}

static const struct verbs_match_ent mroce_match_table[] = {
	{ .kind = 0 },		/* sentinel only: match_device() decides */
};

static const struct verbs_device_ops mroce_dev_ops = {
	.name = "mroce",
	.match_table = mroce_match_table,
	.match_min_abi_version = MROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = MROCE_UVERBS_ABI_VERSION,
	.match_device = mroce_match_device,
	.alloc_context = mroce_alloc_context,
	.alloc_device = mroce_alloc_device,
	.uninit_device = mroce_uninit_device,
};

static void __attribute__((constructor)) mroce_register_driver(void)
{
	verbs_register_driver_34(&mroce_dev_ops);
}
