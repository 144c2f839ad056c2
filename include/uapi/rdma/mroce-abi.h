/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * mroce-abi.h - user/kernel ABI of the mroce soft-RDMA driver.
 *
 * Shared by drivers/infiniband/sw/mroce (kernel) and userspace_provider
 * (libmroce-rdmav34.so).  Every structure here has a fixed layout on all
 * architectures: explicit padding, 64-bit fields naturally aligned.
 *
 * Versioning: MROCE_UVERBS_ABI_VERSION is the ib_device's uverbs_abi_ver.
 * Any incompatible change to a structure or to a ring protocol bumps it;
 * the provider refuses kernels outside its supported range.
 *
 * Version 2: completion timestamps in struct mroce_cqe (ts_raw,
 * ts_wallclock, formerly reserved) with struct mroce_create_cq_cmd to ask
 * for them, and SRQ resize (struct mroce_modify_srq_cmd/_resp).
 */
#ifndef MROCE_ABI_USER_H
#define MROCE_ABI_USER_H

#include <linux/types.h>

#define MROCE_UVERBS_ABI_VERSION	2

/*
 * Read-only sysfs attribute of every mroce ib_device:
 * /sys/class/infiniband/<ibdev>/mroce_abi_version holds the decimal
 * MROCE_UVERBS_ABI_VERSION followed by a newline.  The provider's
 * match_device() claims a device only when this file exists.
 */
#define MROCE_SYSFS_ABI_ATTR		"mroce_abi_version"

/*
 * Shared rings (CQ, SQ, RQ, SRQ).
 *
 * A ring is one mmap()ed, page-aligned area: a struct mroce_ring_ctl at
 * offset 0, then num_entries slots of entry_size bytes starting at
 * MROCE_RING_CTL_SIZE.  Indices are free-running 32-bit counters; the slot
 * of index i is i & (num_entries - 1).  num_entries is a power of two.
 *
 * Exactly one side produces and one side consumes:
 *   CQ: kernel produces CQEs, userspace consumes.
 *   SQ, RQ: userspace produces WQEs, kernel consumes.
 * The producer writes the slot, then stores producer with release
 * semantics; the consumer loads producer with acquire semantics, reads the
 * slot, then stores consumer with release semantics.
 *
 * The kernel never trusts what userspace can write: num_entries and
 * entry_size are informational copies of the create response, the kernel
 * keeps its own; a user-written index that claims more than num_entries
 * outstanding slots is an overrun and is treated as such (CQ overflow
 * event, or the WQEs are rejected).
 */
#define MROCE_RING_CTL_SIZE		256

struct mroce_ring_ctl {
	__u32 producer;
	__u32 rsvd0[15];	/* producer and consumer on separate lines */
	__u32 consumer;
	__u32 rsvd1[15];
	__u32 num_entries;
	__u32 entry_size;
	__u32 rsvd2[30];
};

/* Completion opcodes; numerically equal to enum ibv_wc_opcode. */
enum mroce_wc_opcode {
	MROCE_WC_SEND			= 0,
	MROCE_WC_RDMA_WRITE		= 1,
	MROCE_WC_RDMA_READ		= 2,
	MROCE_WC_COMP_SWAP		= 3,
	MROCE_WC_FETCH_ADD		= 4,
	MROCE_WC_BIND_MW		= 5,
	MROCE_WC_LOCAL_INV		= 6,
	MROCE_WC_RECV			= 128,
	MROCE_WC_RECV_RDMA_WITH_IMM	= 129,
};

/* Completion flags; numerically equal to enum ibv_wc_flags. */
enum mroce_wc_flags {
	MROCE_WC_GRH			= 1 << 0,
	MROCE_WC_WITH_IMM		= 1 << 1,
	MROCE_WC_WITH_INV		= 1 << 3,
};

/*
 * One completion, 64 bytes.  status uses the InfiniBand completion status
 * numbering (0 = success, as enum ibv_wc_status and enum ib_wc_status).
 * imm_data is in network byte order, as ibv_wc.imm_data.
 */
struct mroce_cqe {
	__aligned_u64 wr_id;
	__u32 status;
	__u32 opcode;		/* enum mroce_wc_opcode */
	__u32 vendor_err;
	__u32 byte_len;
	__be32 imm_data;	/* or invalidated rkey with MROCE_WC_WITH_INV */
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;		/* enum mroce_wc_flags */
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 port_num;
	__u8 network_hdr_type;	/* UD: MROCE_NET_IPV4/6, else 0 */
	/*
	 * When the completion was generated (the kernel wrote the CQE), on a
	 * CQ created with MROCE_CREATE_CQ_TIMESTAMP; 0 on other CQs.
	 * ts_raw: CLOCK_MONOTONIC in ns, the device's raw clock (hca_core_clock
	 * MROCE_HCA_CORE_CLOCK_KHZ); ts_wallclock: CLOCK_REALTIME in ns.  Both
	 * are read under the CQ's lock, so ts_raw never decreases along a CQ.
	 */
	__aligned_u64 ts_raw;
	__aligned_u64 ts_wallclock;
};

/*
 * The device's raw clock (ts_raw, ibv_query_rt_values_ex) is the kernel's
 * CLOCK_MONOTONIC in nanoseconds: a 1 GHz clock, hca_core_clock in kHz.
 */
#define MROCE_HCA_CORE_CLOCK_KHZ	1000000

/* network_hdr_type of a UD receive completion (enum rdma_network_type). */
#define MROCE_NET_IPV4			2
#define MROCE_NET_IPV6			3

/* Work request opcodes in a send WQE. */
enum mroce_wr_opcode {
	MROCE_WR_RDMA_WRITE		= 0,
	MROCE_WR_RDMA_WRITE_WITH_IMM	= 1,
	MROCE_WR_SEND			= 2,
	MROCE_WR_SEND_WITH_IMM		= 3,
	MROCE_WR_RDMA_READ		= 4,
	MROCE_WR_ATOMIC_CMP_AND_SWP	= 5,
	MROCE_WR_ATOMIC_FETCH_AND_ADD	= 6,
	MROCE_WR_SEND_WITH_INV		= 8,
	MROCE_WR_LOCAL_INV		= 9,	/* key in wr.rdma.rkey */
	MROCE_WR_BIND_MW		= 10,	/* wr.bind */
};

/* Send flags in a send WQE; numerically equal to enum ibv_send_flags. */
enum mroce_send_flags {
	MROCE_SEND_FENCE		= 1 << 0,
	MROCE_SEND_SIGNALED		= 1 << 1,
	MROCE_SEND_SOLICITED		= 1 << 2,
	MROCE_SEND_INLINE		= 1 << 3,
};

struct mroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * Send WQE: a 64-byte header followed by num_sge struct mroce_sge, or by
 * inline_len bytes of data when MROCE_SEND_INLINE is set.  The slot size
 * (sq_wqe_size in the create-QP response) bounds both.
 */
struct mroce_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;		/* enum mroce_wr_opcode */
	__u32 send_flags;	/* enum mroce_send_flags */
	__be32 imm_data;	/* or invalidate rkey */
	__u32 num_sge;
	__u32 inline_len;
	__u32 xrc_srqn;		/* XRC_SEND QPs: the target's XRC SRQ */
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 rsvd;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 rsvd;
		} atomic;
		/*
		 * MROCE_WR_BIND_MW: bind the window whose key index is
		 * rkey's (rkey >> 8) under the key rkey to [addr, addr +
		 * length) of the region mr_lkey with access (IB_ACCESS_*
		 * remote bits).  Type 1 windows: length 0 unbinds.
		 */
		struct {
			__aligned_u64 addr;
			__aligned_u64 length;
			__u32 rkey;	/* the window's new key */
			__u32 mr_lkey;
			__u32 access;
			__u32 rsvd;
		} bind;
		struct {
			__u32 ah_num;	/* from the create-AH response */
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 rsvd;
		} ud;
	} wr;
};

/* Receive WQE: a 16-byte header followed by num_sge struct mroce_sge. */
struct mroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 rsvd;
};

/* Response of ibv_get_context (driver part). */
struct mroce_alloc_ucontext_resp {
	__u32 abi_version;	/* MROCE_UVERBS_ABI_VERSION */
	__u32 ring_ctl_size;	/* MROCE_RING_CTL_SIZE */
	__u32 cqe_size;		/* sizeof(struct mroce_cqe) */
	__u32 max_inline_data;
};

/*
 * Request of ibv_create_cq (driver part, optional: a request without it
 * asks for no flag).  Unknown flags fail with EOPNOTSUPP, a nonzero rsvd
 * with EINVAL.  The uverbs flag IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
 * (ioctl CQ creation) is accepted as a synonym of MROCE_CREATE_CQ_TIMESTAMP.
 */
enum mroce_create_cq_flags {
	MROCE_CREATE_CQ_TIMESTAMP	= 1 << 0,	/* fill ts_raw, ts_wallclock */
};

struct mroce_create_cq_cmd {
	__u32 flags;		/* enum mroce_create_cq_flags */
	__u32 rsvd;
};

/* Response of ibv_create_cq (driver part). */
struct mroce_create_cq_resp {
	__aligned_u64 mmap_offset;	/* pass to mmap() on the cmd fd */
	__aligned_u64 mmap_size;
	__u32 num_entries;		/* ring slots (>= requested cqe) */
	__u32 rsvd;
};

/*
 * Response of ibv_resize_cq (driver part); added after ABI version 1 was
 * published, without a version bump: a provider that does not know it
 * never sends RESIZE_CQ (libibverbs refuses the verb itself), and the
 * command carries no driver request data.
 *
 * The kernel allocated a new ring of num_entries slots (the requested
 * cqe rounded up as at create) and moved every CQE the process had not
 * consumed -- those between the consumer index in the old ring's control
 * block and the kernel's producer -- to the same free-running indices in
 * the new ring, whose control block starts with that consumer and
 * producer.  From then on the kernel writes only the new ring.  The old
 * ring's mmap offset is withdrawn (a new mmap() of it fails); pages the
 * process still has mapped stay valid, and frozen, until it unmaps them.
 */
struct mroce_resize_cq_resp {
	__aligned_u64 mmap_offset;	/* of the new ring, for mmap() */
	__aligned_u64 mmap_size;
	__u32 num_entries;		/* new ring slots (>= requested cqe) */
	__u32 rsvd;
};

/* Response of ibv_create_qp (driver part). */
struct mroce_create_qp_resp {
	__aligned_u64 sq_mmap_offset;
	__aligned_u64 sq_mmap_size;
	__aligned_u64 rq_mmap_offset;	/* 0 size when the QP uses an SRQ */
	__aligned_u64 rq_mmap_size;
	__u32 qpn;
	__u32 sq_entries;
	__u32 sq_wqe_size;
	__u32 rq_entries;
	__u32 rq_wqe_size;
	__u32 rsvd;
};

/* Response of ibv_create_srq (driver part): a ring of receive WQEs. */
struct mroce_create_srq_resp {
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
	__u32 num_entries;
	__u32 wqe_size;
};

/*
 * Request of ibv_modify_srq (driver part).  MODIFY_SRQ has no response
 * buffer, so a resize (IB_SRQ_MAX_WR on a user SRQ) names, in resp_addr,
 * process memory the kernel writes struct mroce_modify_srq_resp to; the
 * driver part is required then and resp_addr must be nonzero.  Without
 * IB_SRQ_MAX_WR the driver part may be absent and resp_addr is ignored.
 *
 * A resize allocates a new ring of max_wr slots rounded up to a power of
 * two, with the same wqe_size, writes its description to resp_addr, then
 * -- under the SRQ's lock, so no WQE is taken meanwhile -- moves the WQEs
 * posted and not yet taken (between the kernel's consumer index and the
 * producer index read once from the old ring) to the same free-running
 * indices of the new ring, whose control block starts with both indices.
 * From then on the kernel reads only the new ring; WQEs the process
 * writes to the old ring afterwards are never seen.  The old ring's mmap
 * offset is withdrawn as for ibv_resize_cq.
 *
 * EINVAL: max_wr 0 or above max_srq_wr, max_wr below the number of WQEs
 * posted and not taken, max_wr below an armed limit (or the srq_limit of
 * the same call), a producer index that claims more than the old ring
 * holds, or a missing resp_addr.  EFAULT: resp_addr not writable.  The
 * SRQ is unchanged on error.
 */
struct mroce_modify_srq_cmd {
	__aligned_u64 resp_addr;	/* struct mroce_modify_srq_resp * */
};

struct mroce_modify_srq_resp {
	__aligned_u64 mmap_offset;	/* of the new ring, for mmap() */
	__aligned_u64 mmap_size;
	__u32 num_entries;
	__u32 wqe_size;			/* unchanged */
};

/* Response of ibv_create_ah (driver part). */
struct mroce_create_ah_resp {
	__u32 ah_num;
	__u32 rsvd;
};

#endif /* MROCE_ABI_USER_H */
