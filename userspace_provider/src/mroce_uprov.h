/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * mroce_uprov.h - the C ABI between the provider's rdma-core edge
 * (mroce_edge.c, C) and its datapath (C++).  Thin on purpose: the edge owns
 * the verbs objects, the datapath owns the shared rings.
 */
#ifndef MROCE_UPROV_H
#define MROCE_UPROV_H

#include <infiniband/verbs.h>
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
 * Write the WR list into the send/receive ring; ibv_post_* semantics
 * (0 or an errno, *bad_wr the first WR not queued).  *queued counts the
 * WQEs made visible to the kernel.
 */
int mroce_sq_post(struct mroce_uring *sq, const struct mroce_qp_limits *lim,
		  mroce_ah_num_fn ah_num, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr, unsigned int *queued);
int mroce_rq_post(struct mroce_uring *rq, const struct mroce_qp_limits *lim,
		  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

#ifdef __cplusplus
}
#endif

#endif /* MROCE_UPROV_H */
