/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * mroce_uprov.h - the C ABI between the provider's rdma-core edge
 * (mroce_edge.c, C) and its datapath (C++).  Thin on purpose: the edge owns
 * the verbs objects, the datapath owns the shared rings.
 */
#ifndef MROCE_UPROV_H
#define MROCE_UPROV_H

#include <infiniband/verbs.h>
#include <rdma/mroce-abi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A mapped shared ring (CQ, SQ or RQ); owned by the datapath. */
struct mroce_uring;

/*
 * Map the ring the kernel exported at (offset, size) of the uverbs cmd_fd
 * and check it against the create response.  NULL with errno on failure.
 */
struct mroce_uring *mroce_uring_map(int cmd_fd, uint64_t offset, uint64_t size,
				    uint32_t num_entries, uint32_t entry_size);
void mroce_uring_unmap(struct mroce_uring *ring);

/* Limits a QP's WQEs are checked against. */
struct mroce_qp_limits {
	enum ibv_qp_type qp_type;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
};

/* Resolves a UD work request's address handle to the kernel's ah_num. */
typedef uint32_t (*mroce_ah_num_fn)(struct ibv_ah *ah);

/* ibv_poll_cq semantics: number of completions, or a negative errno. */
int mroce_cq_poll(struct mroce_uring *cq, int num_entries, struct ibv_wc *wc);

/*
 * Runs the kernel's RESIZE_CQ (the edge's ibv_cmd_resize_cq): 0 with the
 * driver part of the response in *resp, or an errno.
 */
typedef int (*mroce_cq_resize_cmd)(void *arg, struct mroce_resize_cq_resp *resp);

/*
 * ibv_resize_cq on the CQ ring cq: holds the CQ lock (pollers wait; a
 * start_poll session of the same thread must end first), runs cmd(arg),
 * maps the new ring the response names and switches to it, the consumer
 * index carried over; the old ring is unmapped.  0 or an errno: cmd's
 * (nothing changed), or, when the new ring cannot be mapped or does not
 * match, that of the mmap or EIO -- the kernel already switched, so the
 * CQ is lost and polling it fails with EIO.
 */
int mroce_cq_resize(struct mroce_uring *cq, int cmd_fd, mroce_cq_resize_cmd cmd, void *arg);

/*
 * Runs the kernel's MODIFY_SRQ with IBV_SRQ_MAX_WR (the edge's
 * ibv_cmd_modify_srq), the kernel writing the description of the new ring
 * to *resp: 0 or an errno.
 */
typedef int (*mroce_srq_resize_cmd)(void *arg, struct mroce_modify_srq_resp *resp);

/*
 * ibv_modify_srq(IBV_SRQ_MAX_WR) on the SRQ ring srq: holds the ring's lock
 * (posters wait), runs cmd(arg), maps the new ring the kernel describes
 * and switches to it, the producer index carried over; the old ring is
 * unmapped.  0 or an errno: cmd's (nothing changed), or, when the new ring
 * cannot be mapped or does not match, that of the mmap or EIO -- the kernel
 * already switched, so the SRQ is lost and posting to it fails with EIO.
 */
int mroce_srq_resize(struct mroce_uring *srq, int cmd_fd, mroce_srq_resize_cmd cmd, void *arg);

/*
 * Write the WR list into the send/receive ring; ibv_post_* semantics
 * (0 or an errno, *bad_wr the first WR not queued).  *queued counts the
 * WQEs made visible to the kernel.
 */
int mroce_sq_post(struct mroce_uring *sq, const struct mroce_qp_limits *lim,
		  mroce_ah_num_fn ah_num, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr, unsigned int *queued);
/*
 * ibv_bind_mw of a type 1 window: wr (IBV_WR_BIND_MW, its next ignored)
 * queued as ibv_post_send would, but for a type 1 window.
 */
int mroce_sq_post_bind1(struct mroce_uring *sq, const struct mroce_qp_limits *lim,
			struct ibv_send_wr *wr, unsigned int *queued);
int mroce_rq_post(struct mroce_uring *rq, const struct mroce_qp_limits *lim,
		  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* ---- extended verbs: ibv_qp_ex (ibv_wr_*) and ibv_cq_ex ------------------
 *
 * The edge fills the ibv_qp_ex / ibv_cq_ex function tables with one-line
 * thunks into these.
 */

/*
 * ibv_create_qp_ex attributes mroce can honour: 0, EOPNOTSUPP (a feature the
 * kernel lacks: RSS, TSO, create flags, SRQ, send ops it cannot execute --
 * READ and atomics on UC, any send op on UD, WRITE_WITH_IMM on XRC) or
 * EINVAL (no PD; an XRC initiator with a receive queue, an XRC target
 * without an XRC domain or with a queue or CQ).
 */
int mroce_qpx_check(const struct ibv_qp_init_attr_ex *attr);

/* The ibv_wr_* state of one QP; it refers to the SQ ring, owned elsewhere. */
struct mroce_sqx;
struct mroce_sqx *mroce_sqx_new(struct mroce_uring *sq, const struct mroce_qp_limits *lim,
				uint64_t send_ops_flags);
void mroce_sqx_free(struct mroce_sqx *sqx);

/*
 * wr_start takes the SQ lock, wr_complete/wr_abort release it.  The first
 * error in a batch (EINVAL, ENOMEM for a full ring, EOPNOTSUPP for an
 * operation not enabled) is kept, later calls are ignored, and
 * wr_complete returns it and discards the whole batch.  Otherwise
 * wr_complete publishes the producer index once; *queued says how many
 * WQEs (the caller rings the doorbell when > 0).
 */
void mroce_sqx_start(struct mroce_sqx *sqx);
int mroce_sqx_complete(struct mroce_sqx *sqx, unsigned int *queued);
void mroce_sqx_abort(struct mroce_sqx *sqx);

void mroce_sqx_send(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags);
void mroce_sqx_send_imm(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags, __be32 imm);
void mroce_sqx_send_inv(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			uint32_t invalidate_rkey);
void mroce_sqx_rdma_write(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			  uint32_t rkey, uint64_t remote_addr);
void mroce_sqx_rdma_write_imm(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			      uint32_t rkey, uint64_t remote_addr, __be32 imm);
void mroce_sqx_rdma_read(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			 uint32_t rkey, uint64_t remote_addr);
void mroce_sqx_atomic_cmp_swp(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			      uint32_t rkey, uint64_t remote_addr, uint64_t compare,
			      uint64_t swap);
void mroce_sqx_atomic_fetch_add(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
				uint32_t rkey, uint64_t remote_addr, uint64_t add);
void mroce_sqx_bind_mw(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
		       struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *info);
void mroce_sqx_local_inv(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			 uint32_t invalidate_rkey);
/* XRC initiators: the target's XRC SRQ of the open WR (ibv_wr_set_xrc_srqn). */
void mroce_sqx_set_xrc_srqn(struct mroce_sqx *sqx, uint32_t srqn);
/* send_tso, atomic_write. */
void mroce_sqx_unsupported(struct mroce_sqx *sqx);
/* ibv_wr_set_ud_addr: ah_num is read only when have_ah. */
void mroce_sqx_set_ud_addr(struct mroce_sqx *sqx, int have_ah, uint32_t ah_num, uint32_t qpn,
			   uint32_t qkey);

void mroce_sqx_set_sge(struct mroce_sqx *sqx, uint32_t lkey, uint64_t addr, uint32_t length);
void mroce_sqx_set_sge_list(struct mroce_sqx *sqx, size_t num_sge, const struct ibv_sge *sg_list);
void mroce_sqx_set_inline_data(struct mroce_sqx *sqx, const void *addr, size_t length);
void mroce_sqx_set_inline_data_list(struct mroce_sqx *sqx, size_t num_buf,
				    const struct ibv_data_buf *buf_list);

/*
 * ibv_create_cq_ex attributes mroce can honour: 0 or EOPNOTSUPP (CVLAN,
 * flow tag, TM info, parent domains, IGNORE_OVERRUN, unknown comp_mask
 * bits).  Completion timestamps (raw and wallclock) are honoured.
 */
int mroce_cqx_check(const struct ibv_cq_init_attr_ex *attr);

/* The start_poll/next_poll/end_poll state of one CQ. */
struct mroce_cqx;
struct mroce_cqx *mroce_cqx_new(struct mroce_uring *cq);
void mroce_cqx_free(struct mroce_cqx *cqx);
/*
 * 0 with *wr_id and *status of the current completion, ENOENT when the CQ
 * is empty, EIO on a corrupt ring, EINVAL for attr_comp_mask != 0.
 * start_poll takes the CQ lock and keeps it only when it returns 0;
 * end_poll releases it and returns the consumed slots to the kernel.
 */
int mroce_cqx_start_poll(struct mroce_cqx *cqx, uint32_t attr_comp_mask, uint64_t *wr_id,
			 enum ibv_wc_status *status);
int mroce_cqx_next_poll(struct mroce_cqx *cqx, uint64_t *wr_id, enum ibv_wc_status *status);
void mroce_cqx_end_poll(struct mroce_cqx *cqx);
/* The current completion, decoded as ibv_poll_cq would (for the read_* ops). */
const struct ibv_wc *mroce_cqx_current(const struct mroce_cqx *cqx);
/* Its timestamps (struct mroce_cqe ts_raw, ts_wallclock): ns, 0 when not stamped. */
uint64_t mroce_cqx_completion_ts(const struct mroce_cqx *cqx);
uint64_t mroce_cqx_completion_wallclock_ns(const struct mroce_cqx *cqx);

#ifdef __cplusplus
}
#endif

#endif /* MROCE_UPROV_H */
