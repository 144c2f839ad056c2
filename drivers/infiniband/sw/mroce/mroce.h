/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Internal types and interfaces of the rdma_mroce driver.
 *
 * Contexts used throughout the driver:
 *   - verbs entry points (create/destroy/modify/query) run in process
 *     context and may sleep, except create_ah/destroy_ah without
 *     RDMA_CREATE_AH_SLEEPABLE / RDMA_DESTROY_AH_SLEEPABLE and the kernel
 *     post/poll/notify calls, which may run in any context;
 *   - the UDP receive handler runs in softirq context under
 *     rcu_read_lock();
 *   - the netdev notifier runs in process context with RTNL held.
 */
#ifndef MROCE_H
#define MROCE_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/hrtimer.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/mroce-abi.h>

#include "mroce_kcompat.h"

#define MROCE_DRV_NAME		"rdma_mroce"

/*
 * Dynamic debug of the driver's decisions in process context: QP state
 * changes, connection setup and teardown, refused QPs and registrations
 * (Documentation/mroce.7, DEBUGGING):
 *	echo 'module rdma_mroce +p' > /proc/dynamic_debug/control
 */
#define mroce_dbg(mdev, fmt, ...) \
	ibdev_dbg(&(mdev)->ibdev, fmt, ##__VA_ARGS__)

/* Device limits reported by query_device and enforced on create. */
#define MROCE_MAX_QP		4096
#define MROCE_MAX_QP_WR		8192
#define MROCE_MAX_SGE		32
#define MROCE_MAX_INLINE	512
#define MROCE_MAX_CQ		8192
#define MROCE_MAX_CQE		65536
#define MROCE_MAX_MR		65536
#define MROCE_MAX_MR_SIZE	(1ULL << 36)	/* 64 GiB per region */
#define MROCE_MAX_PD		8192
#define MROCE_MAX_AH		65536
#define MROCE_MAX_RD_ATOM	16
#define MROCE_MAX_SRQ		4096
#define MROCE_SRQ_BIND		256	/* = MROCE_MAX_MSGS: receives bound per QP */
#define MROCE_GID_TBL_LEN	64
#define MROCE_PKEY_TBL_LEN	1
#define MROCE_DEFAULT_PKEY	0xffff
#define MROCE_FIRST_QPN		16
#define MROCE_MAX_QPN		0xffffff	/* 24-bit QP numbers */
#define MROCE_GSI_QPN		1
#define MROCE_PSN_MASK		0xffffff

/*
 * Bytes of an IP packet that are not RDMA payload, rounded up: IPv6 (40,
 * the larger of the two) + UDP (8) + the largest header set of a data
 * packet (base, RETH, SETH, IMETH) + ICRC = 112.  The active RDMA MTU is
 * the largest IB MTU that fits the netdev MTU minus this, as with RoCE:
 * 1500 gives 1024.  (Not the core's MROCE_PKT_OVERHEAD, a window charge.)
 */
#define MROCE_FRAME_OVERHEAD	128

#define MROCE_SEND_WQE_HDR	sizeof(struct mroce_send_wqe)
#define MROCE_RECV_WQE_HDR	sizeof(struct mroce_recv_wqe)

/*
 * Kernel-only values in the rings of kernel QPs, which userspace never
 * maps.  A user QP's WQE with a local operation (REG_MR, LOCAL_INV)
 * completes with IB_WC_LOC_QP_OP_ERR (REG_MR) or executes (LOCAL_INV of
 * a type 2 window; MROCE_WR_BIND_MW, which kernel QPs never post).
 *
 * MROCE_WR_KERN_REG_MR (IB_WR_REG_MR): wr.atomic.rkey is the new key,
 * wr.atomic.remote_addr the region's iova, wr.atomic.compare_add its
 * length and wr.atomic.swap the page size, as the MR held them at
 * post_send, wr.atomic.rsvd the access flags.  The page list is read
 * from the MR when the WQE executes.  MROCE_WR_LOCAL_INV carries the key
 * to invalidate in wr.rdma.rkey.
 */
#define MROCE_WR_KERN_REG_MR	0x100
#define MROCE_WC_KERN_REG_MR	IB_WC_REG_MR

/* Live object accounting (mroce_stats.c). */
enum mroce_obj_type {
	MROCE_OBJ_UCONTEXT,
	MROCE_OBJ_PD,
	MROCE_OBJ_CQ,
	MROCE_OBJ_MR,
	MROCE_OBJ_QP,
	MROCE_OBJ_AH,
	MROCE_OBJ_SRQ,
	MROCE_OBJ_RING,
	MROCE_OBJ_MAX
};

/*
 * Counts of live objects, split by owner: created through uverbs (user)
 * or by kernel ULPs such as ib_mad (kern).  Lock-free atomics, updated in
 * whatever context the object is created or freed in.
 */
struct mroce_obj_counts {
	atomic_t user[MROCE_OBJ_MAX];
	atomic_t kern[MROCE_OBJ_MAX];
};

/* Per-device datagram counters; updated in softirq, read by debugfs. */
struct mroce_dev_stats {
	atomic64_t rx_datagrams;	/* every datagram seen for this device */
	atomic64_t rx_dropped;		/* of those, dropped */
	atomic64_t rx_short;		/* of those, too short for a BTH */
	atomic64_t rx_malformed;	/* failed validation (parse, ICRC) */
	atomic64_t rx_no_qp;		/* no such QP, or not from its peer */
	atomic64_t rx_stale_qp;		/* for a QP destroyed moments ago */
	atomic64_t rx_qp_state;		/* QP not in a receiving state */
	atomic64_t rx_packets;		/* handed to a QP */
	atomic64_t rx_rejected;		/* of those, refused by the core */
	atomic64_t rx_ud_no_wqe;	/* datagram without a receive WQE */
	atomic64_t rx_ud_qkey;		/* datagram with the wrong Q_Key */
	atomic64_t rx_uc_msgs;		/* UC messages received whole */
	atomic64_t rx_uc_broken;	/* UC messages dropped: packet lost */
	atomic64_t rx_uc_no_wqe;	/* UC messages dropped: no receive */
	atomic64_t rx_uc_refused;	/* UC messages dropped: length, rkey */
	atomic64_t tx_packets;
	atomic64_t tx_errors;		/* no route, no memory */
	atomic64_t mr_fast_reg;		/* IB_WR_REG_MR executed */
	atomic64_t mr_local_inv;	/* IB_WR_LOCAL_INV executed */
	atomic64_t mr_remote_inv;	/* regions invalidated by SEND_WITH_INV */
	atomic64_t mw_binds;		/* BIND_MW executed */
	atomic64_t ring_bad_index;	/* user producer index out of bounds */
};

/*
 * Transport totals of the device's RC connections, exported through
 * "rdma statistic" (mroce_hw_counters.c, which names each one).  The
 * protocol core counts per connection and per path; these are its sums.
 */
enum mroce_rc_count {
	MROCE_RC_TX_DATA,	/* data packets sent, retransmissions included */
	MROCE_RC_RX_DATA,	/* data packets received, duplicates included */
	MROCE_RC_TX_ACKS,
	MROCE_RC_RX_ACKS,
	MROCE_RC_RETX,		/* data packets retransmitted */
	MROCE_RC_LOST,		/* packets declared lost (RACK or RTO) */
	MROCE_RC_RTOS,
	MROCE_RC_TLPS,
	MROCE_RC_SPURIOUS,	/* losses later proven spurious by a SACK */
	MROCE_RC_STEERS,
	MROCE_RC_PATH_DOWNS,
	MROCE_RC_ECN_CE,	/* CE marks the peer echoed */
	MROCE_RC_RNR_ROUNDS,
	MROCE_RC_NAK_TX,
	MROCE_RC_NAK_RX,
	MROCE_RC_RX_DUP,
	/* ACKs sent, by what made each due (enum mroce_ack_why) */
	MROCE_RC_ACKS_GAP,
	MROCE_RC_ACKS_DUP,
	MROCE_RC_ACKS_REQ,
	MROCE_RC_ACKS_EVERY,
	MROCE_RC_ACKS_OTHER,
	MROCE_RC_ACKS_TIMER,
	MROCE_RC_NUM
};

struct mroce_rc_counts {
	u64 v[MROCE_RC_NUM];
};

/*
 * What the device's destroyed RC QPs counted (mroce_hw_counters.c).
 * lock (a mutex, process context only) makes a reader's walk over qp_xa
 * plus gone one snapshot: destroy_qp moves a QP's counts into gone and
 * erases it from qp_xa under it, so it also keeps the QPs such a walk
 * finds from being freed.  Nesting: lock, then qp->lock.
 */
struct mroce_hwc {
	struct mutex lock;
	struct mroce_rc_counts gone;
	struct list_head counters;	/* struct mroce_hwc_ctr, under lock */
};

/*
 * Per network namespace state (net_generic).  The UDP sockets live in the
 * namespace; they are created with the first mroce device of the namespace
 * and released with the last one.
 */
struct mroce_net {
	struct mutex lock;	/* protects users, sock4, sock6 (process) */
	unsigned int users;	/* mroce devices holding the sockets */
	struct socket *sock4;
	struct socket *sock6;	/* NULL when IPv6 is not available */
	atomic64_t rx_no_device; /* datagrams on no mroce netdev (softirq) */
};

/*
 * The last MROCE_GONE_QPS QPs destroyed on a device, so that the receive
 * path can tell a late packet of a connection that just ended (a
 * retransmission or an ACK still in flight from the peer) from a packet
 * for a QP that never was (mroce_rx.c).  A record is good for
 * MROCE_GONE_QP_SECS after the destroy; QPNs are allocated cyclically over
 * 24 bits, so a recorded QPN is not handed out again meanwhile.
 *
 * lock: the writer is destroy_qp (process context), the reader the
 * receive path (softirq) on its miss path only; both take it with
 * interrupts disabled, never allocate and never nest another lock in it.
 */
#define MROCE_GONE_QPS		128
#define MROCE_GONE_QP_SECS	30

struct mroce_gone_qp {
	struct in6_addr peer;		/* RC: the peer (v4-mapped for IPv4) */
	unsigned long at;		/* jiffies of the destroy */
	u32 qpn;			/* 0: unused slot (QPN 0 is never a QP) */
	bool any_peer;			/* UD/GSI: from any source */
};

struct mroce_gone_qps {
	spinlock_t lock;
	unsigned int next;		/* slot of the next record */
	struct mroce_gone_qp e[MROCE_GONE_QPS];
};

struct mroce_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */

	/*
	 * Entry in mroce_dev_list.  Writers hold mroce_dev_lock (a mutex,
	 * process context); the receive path walks the list under RCU.  The
	 * memory itself is freed by ib_core with kfree_rcu() after
	 * dealloc_driver removed the entry.
	 */
	struct list_head list;
	/* On mroce_dev_list; under mroce_dev_lock. */
	bool listed;
	/*
	 * Registered and no removal queued yet; written under
	 * mroce_dev_lock.  The netdev notifier only acts on registered
	 * devices; the receive path (READ_ONCE, RCU) only delivers to them,
	 * so a device is listed (to claim its netdev) before it is live.
	 */
	bool registered;

	/* Immutable after creation until dealloc_driver. */
	struct net_device *ndev;	/* held with netdev_hold() */
	netdevice_tracker ndev_tracker;
	struct net *net;		/* namespace of ndev at creation */
	struct mroce_net *mnet;		/* we hold one user of its sockets */

	/* Last port state reported by an event; RTNL (notifier) protects. */
	enum ib_port_state port_state;

	/*
	 * Object tables.  Each xarray has its own internal spinlock (taken
	 * with interrupts disabled, XA_FLAGS_LOCK_IRQ), so lookups may run
	 * in any context; loads under RCU.  qp_xa is the exception: a QP
	 * found by its number is only used with a reference taken under
	 * the xarray's lock (mroce_qp_get(), "QP lifetime" in mroce_qp.c).
	 */
	struct xarray qp_xa;		/* qpn -> struct mroce_qp */
	u32 qp_next;			/* xa_alloc_cyclic cursor, xa lock */
	struct xarray mr_xa;		/* key index -> struct mroce_mr */
	u32 mr_next;
	struct xarray ah_xa;		/* ah_num -> struct mroce_ah_entry */
	u32 ah_next;
	/*
	 * XRC SRQ number -> struct mroce_srq (XRC SRQs only; numbers from
	 * 1, so 0 names none).  An SRQ is published once created and
	 * erased by destroy_srq, which then waits for an RCU grace period:
	 * the datapath looks SRQ numbers from the wire up under RCU.
	 */
	struct xarray srq_xa;
	u32 srq_next;

	struct mroce_obj_counts live;
	struct mroce_dev_stats stats;
	struct mroce_gone_qps gone_qps;	/* recently destroyed QPs */
	struct mroce_hwc hwc;		/* RC totals of destroyed QPs */
	struct dentry *debugfs;		/* per-device debugfs directory */
	/*
	 * Congestion groups (mroce_ccg.c): the list, each group's refcount
	 * and ccg_next_id under ccg_lock (interrupts disabled; taken inside
	 * qp->lock, never the other way round).
	 */
	struct list_head ccgs;
	spinlock_t ccg_lock;
	u32 ccg_next_id;
};

struct mroce_ucontext {
	struct ib_ucontext ibuc;
};

struct mroce_pd {
	struct ib_pd ibpd;
	bool user;			/* created through uverbs */
};

/*
 * An XRC domain: nothing of its own.  ib_core counts its users and keeps
 * its target QPs; XRC SRQs and target QPs compare their ib_xrcd pointers.
 */
struct mroce_xrcd {
	struct ib_xrcd ibxrcd;
};

/*
 * Resolved address vector: the GIDs of a RoCE v2 path and the IP
 * addresses they stand for.  Written once (create_ah) or under the QP's
 * lock (modify_qp).
 */
struct mroce_av {
	u8 network_type;		/* enum rdma_network_type, IPv4 or v6 */
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;
	u8 sgid_index;
	u8 dmac[ETH_ALEN];
	u32 flow_label;
	union ib_gid dgid;
	union ib_gid sgid;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} saddr, daddr;
};

/*
 * What the UD datapath reads of an address handle.  ah_xa maps ah_num to
 * this, not to struct mroce_ah: ib_core frees the AH as soon as
 * destroy_ah returns, possibly in atomic context where we cannot wait for
 * RCU readers, so the entry lives on its own and is freed after a grace
 * period (kfree_rcu).  Readers: xa_load() under rcu_read_lock(); the entry
 * is immutable once published.
 */
struct mroce_ah_entry {
	struct mroce_av av;
	const struct ib_pd *pd;		/* compared, never dereferenced */
	struct rcu_head rcu;
};

struct mroce_ah {
	struct ib_ah ibah;
	u32 ah_num;			/* index in mroce_dev.ah_xa */
	bool user;
	struct mroce_ah_entry *ent;	/* published in ah_xa */
};

struct mroce_mmap_entry;

/*
 * A shared ring: struct mroce_ring_ctl followed by num_entries slots
 * (uAPI).  The buffer comes from vmalloc_user().  For user objects it is
 * owned by the mmap entry (freed by mmap_free once the entry is removed and
 * unreferenced); for kernel objects by the ring itself.
 */
struct mroce_ring {
	void *buf;
	size_t size;			/* bytes, page aligned */
	u32 num_entries;		/* power of two */
	u32 entry_size;
	struct mroce_ring_ctl *ctl;	/* == buf */
	struct mroce_mmap_entry *mentry; /* user rings only */
};

struct mroce_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *buf;
	size_t size;
};

struct mroce_cq {
	struct ib_cq ibcq;
	/*
	 * lock serialises the kernel-side consumers and producers of the
	 * ring and the notify state; taken with interrupts disabled because
	 * kernel ULPs poll and arm from any context.
	 */
	spinlock_t lock;
	/*
	 * resize_lock serialises resizes (uverbs runs RESIZE_CQ under the
	 * CQ's shared lock, so two may race); ring changes under both.
	 */
	struct mutex resize_lock;
	struct mroce_ring ring;
	u32 prod;			/* kernel-private producer index */
	u32 notify;			/* IB_CQ_SOLICITED / NEXT_COMP armed */
	bool overflow;			/* a CQE was lost: CQ in error */
	bool user;
	bool timestamp;			/* stamp CQEs (set at create only) */
};

/*
 * Shared receive queue: a ring of receive WQEs that QPs take from, in
 * order, when a message needs a receive buffer.  lock serialises the
 * takers (datapath, any context, inside a QP's lock), post_srq_recv and
 * modify_srq, and protects ring, seen and limit; the producer index is the
 * provider's (user SRQs) or post_srq_recv's.  resize_lock (process
 * context) serialises modify_srq calls, which uverbs may run in parallel;
 * ring changes under both.
 */
struct mroce_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;
	struct mutex resize_lock;
	struct mroce_ring ring;
	u32 seen;			/* WQEs taken (published consumer) */
	u32 limit;			/* armed limit, 0 when not armed */
	u32 max_sge;
	bool user;
	u32 srqn;			/* XRC SRQs: key in srq_xa; else 0 */
};

enum mroce_mr_type {
	MROCE_MR_DMA,
	MROCE_MR_USER,
	MROCE_MR_FAST,			/* alloc_mr(IB_MR_TYPE_MEM_REG) */
	MROCE_MR_MW,			/* a memory window (alloc_mw) */
};

/*
 * State of a fast-register region (the IBA memory region states; DMA and
 * user regions are VALID from creation until dereg_mr).
 *   FREE:    allocated (alloc_mr) or invalidated (LOCAL_INV, SEND_WITH_INV):
 *            no access through any key; IB_WR_REG_MR may make it VALID;
 *   VALID:   registered by IB_WR_REG_MR: accesses through fr.key with the
 *            registered access, iova and length; a second REG_MR fails;
 *   INVALID: dereg_mr started: nothing succeeds any more.
 * Memory windows (MROCE_MR_MW) use the same states: FREE when allocated,
 * unbound or invalidated, VALID when bound (BIND_MW), INVALID from
 * dealloc_mw on.
 */
enum mroce_mr_state {
	MROCE_MRS_INVALID,
	MROCE_MRS_FREE,
	MROCE_MRS_VALID,
};

/* Entries of a fast-register page list (max_fast_reg_page_list_len). */
#define MROCE_MAX_FRPL		512

/*
 * The fast-register part of a region.
 *
 * map/map_len are the ULP's page list: written by map_mr_sg (process
 * context, ib_sg_to_pages()) and read by IB_WR_REG_MR when it executes;
 * as with hardware, the ULP must not remap while a REG_MR of the region
 * is outstanding, so they need no lock.
 *
 * Everything from state on is the registered translation and is under
 * mr->fr.lock, a spinlock taken with interrupts disabled (REG_MR and
 * LOCAL_INV run in the datapath of the posting QP, remote invalidation in
 * the responder's, in softirq or with a QP lock held).  Accesses look the
 * region up under RCU, then check the key, state, PD, access and bounds
 * and copy with fr.lock held, so a region invalidated by a completed
 * LOCAL_INV is never touched after that completion.  Lock order:
 * qp->lock, then fr.lock, then mroce_atomic_lock.  The arrays are freed
 * after an RCU grace period (call_rcu) by dereg_mr.
 */
struct mroce_fr {
	u64 *map;			/* max_pages page addresses */
	u32 map_len;
	u32 max_pages;
	spinlock_t lock;
	enum mroce_mr_state state;
	u32 key;			/* lkey == rkey of the registration */
	u32 page_shift;
	u32 npages;			/* entries of pages in use */
	u64 *pages;			/* snapshot of map taken by REG_MR */
};

/*
 * The window part of a MROCE_MR_MW (mroce_mw.c), under the window's
 * fr.lock, which has its own lock class: a bind nests the bound region's
 * fr.lock inside it (never the other way round).
 *
 * mr is the user region the window is bound to while it is VALID; the
 * window holds one of the region's mw_binds for it, so the region (and
 * its pinned pages) outlive the binding: dereg_mr and rereg_mr fail with
 * EBUSY meanwhile.  Accesses through the window copy through mr's pages
 * under the window's fr.lock, so an unbind, invalidation or dealloc never
 * overlaps an access.
 */
struct mroce_mwin {
	struct mroce_mr *mr;		/* bound region (VALID only) */
	/*
	 * Region address of the window's first byte: a remote va V (checked
	 * against [iova, iova + length) of the window) is the region's
	 * addr + (V - iova).  A zero-based window (type 2 only) has iova 0;
	 * otherwise iova == addr.  addr + length does not overflow.
	 */
	u64 addr;
	u32 qpn;			/* type 2: the QP it was bound through */
	u8 type;			/* IB_MW_TYPE_1 or IB_MW_TYPE_2 */
	bool zero_based;		/* bound with IB_ZERO_BASED */
};

struct mroce_mr {
	struct ib_mr ibmr;
	enum mroce_mr_type type;
	u32 index;			/* in mroce_dev.mr_xa */
	/*
	 * The region's PD, set before publication (ib_core sets ibmr.pd only
	 * after the verb returned); compared, never dereferenced.
	 */
	const struct ib_pd *pd;
	/*
	 * DMA and user regions: immutable after creation (rereg_user_mr
	 * publishes a new struct mroce_mr instead of changing one).
	 * Fast-register regions: under fr.lock, set by REG_MR.
	 */
	int access;
	u64 iova;
	u64 length;
	struct ib_umem *umem;		/* MROCE_MR_USER */
	/*
	 * MROCE_MR_USER: the pinned pages, page_off is the offset of iova
	 * in pages[0].  Immutable; released after an RCU grace period, so
	 * the datapath (always under rcu_read_lock()) may copy through them.
	 */
	struct page **pages;
	u32 npages;
	u32 page_off;
	bool user;
	/*
	 * Set by rereg_user_mr (which the uverbs write lock serialises with
	 * dereg_mr) when a successor took this region's mr_xa slot, and with
	 * it umem and pages when gave_pages.  Never read by the datapath.
	 */
	bool replaced;
	bool gave_pages;
	/*
	 * User regions, under fr.lock: windows bound to the region
	 * (struct mroce_mwin), and closed, set by the dereg_mr or rereg_mr
	 * that retires it (no window binds to it any more).
	 */
	u32 mw_binds;
	bool closed;
	struct mroce_fr fr;		/* MROCE_MR_FAST; lock: every type */
	struct mroce_mwin mw;		/* MROCE_MR_MW */
	struct rcu_head rcu;
};

/*
 * A memory window as ib_core sees it.  ib_core frees it as soon as
 * dealloc_mw returns, while the datapath may still hold the window's
 * key-table entry under RCU: that entry (win, a struct mroce_mr of type
 * MROCE_MR_MW) lives on its own and is freed after a grace period.
 */
struct mroce_mw {
	struct ib_mw ibmw;
	struct mroce_mr *win;
};

struct mroce_qp {
	struct ib_qp ibqp;
	/*
	 * lock protects state and every field below it up to the rings'
	 * kernel-side indices; the datapath reads them in softirq, so it is
	 * taken with interrupts disabled (kernel ULPs may post from any
	 * context).
	 */
	spinlock_t lock;
	enum ib_qp_state state;
	bool user;
	enum ib_sig_type sq_sig_type;
	struct ib_qp_cap cap;		/* as granted at create time */

	/* Attributes as set by modify_qp (returned by query_qp). */
	int attr_mask;			/* union of the masks ever applied */
	int access_flags;
	u16 pkey_index;
	u8 port_num;
	u32 qkey;
	u32 dest_qpn;
	u32 rq_psn;
	u32 sq_psn;
	enum ib_mtu path_mtu;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	u8 min_rnr_timer;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u8 sq_draining;
	bool en_sqd_async_notify;
	bool av_valid;
	struct mroce_av av;		/* RC: from IB_QP_AV */

	struct mroce_ring sq;
	struct mroce_ring rq;		/* num_entries 0 with an SRQ */
	u32 rq_producer;		/* kernel QPs: next RQ slot to fill */

	/*
	 * Datapath (mroce_rc.c), under lock.  WQEs are copied out of the
	 * rings into kernel-private shadows before use, so userspace can
	 * never change a WQE the kernel already validated.
	 *   sq_next: next SQ slot to read; sq_done: WRs completed (the
	 *   consumer index published to the provider); sq_shadow holds
	 *   slots sq_done..sq_next.
	 *   rq_base: RQ index of the connection's rq_seq 0; rq_seen: next
	 *   RQ slot to read; rq_done: receive WRs completed (published).
	 */
	struct mroce_dev *mdev;
	/*
	 * Lookups by QPN (mroce_qp_get(), under mdev->qp_xa's lock) hold
	 * ref; qp_xa holds one from the publication in create_qp to the
	 * erase in destroy_qp, which then waits for unref, completed by
	 * the last mroce_qp_put() ("QP lifetime" in mroce_qp.c).
	 */
	refcount_t ref;
	struct completion unref;
	struct mroce_conn *conn;	/* RC: the protocol core; its ctx is qp */
	size_t conn_size;		/* RC: bytes at conn (mroce_conn_size()) */
	u32 conn_paths;			/* RC: its paths, fixed at create_qp */
	u32 conn_msgs;			/* RC: its max_msgs (SQ slots, <= 256) */
	u32 conn_snd_wnd;		/* RC: its snd_wnd (window parameter) */
	bool conn_live;			/* conn initialised (RTR..ERR) */
	/*
	 * RC: the congestion group (mroce_ccg.c) this QP holds a reference
	 * to and, once connected, is a member of; NULL: its own window.
	 */
	struct mroce_ccg *ccg;
	/*
	 * RC: the datapath step in progress, for the core's callbacks: set by
	 * the entry points of mroce_rc.c for the length of one call into the
	 * core (qp->lock held), NULL otherwise.
	 */
	struct mroce_dp *rc_dp;
	struct hrtimer timer;		/* the core's timers and tx kicks */
	/*
	 * RC: the step after receive, deferred to the end of the softirq
	 * batch (mroce_rxbatch.c, which says how these are protected).
	 */
	struct llist_node batch_node;
	unsigned long batch_flags;	/* MROCE_QPB_* bits */
	atomic_t batch_refs;
	u32 sq_next, sq_done;
	void *sq_shadow;
	u32 rq_base, rq_seen, rq_done;
	void *rq_shadow;
	u32 ud_seq;			/* UD: datagrams sent (PSN) */
	struct mroce_uc *uc;		/* UC: datapath state (mroce_uc.c) */
	/*
	 * XRC target QPs (mroce_wq.c): the XRC domain (ib_core sets
	 * ibqp.xrcd only after create_qp), and for each of the
	 * MROCE_SRQ_BIND slots of the receive shadow the number of the XRC
	 * SRQ its WQE was taken from, 0 while unbound.  Under lock.
	 */
	struct ib_xrcd *xrcd;
	u32 *xrc_slot;
	/*
	 * RC, under lock: what the QP's earlier connections counted (a QP
	 * taken back through RESET starts a new one at RTR, which zeroes
	 * the core's counters), so its totals never go backwards.  From the
	 * erase in destroy_qp on, minus what was moved to mdev->hwc.gone
	 * (mroce_hw_counters.c).
	 */
	struct mroce_rc_counts rc_prev;
	/*
	 * RC, under mdev->hwc.lock: the QP's total when it was bound to an
	 * rdma counter (ibqp.counter), and what earlier bindings moved to
	 * counters; the port counters show the rest (mroce_hw_counters.c).
	 */
	struct mroce_rc_counts hwc_base, hwc_moved;
};

/*
 * What a datapath step leaves for after the QP lock is dropped: packets
 * to transmit and CQs whose completion handler must run.
 */
struct mroce_dp {
	struct sk_buff_head txq;
	struct mroce_cq *notify[2];
	bool cq_err[2];
	struct mroce_srq *srq_limit;	/* SRQ limit reached: raise event */
	bool batch;		/* stepped by mroce_rxbatch.c (softirq) */
};

static inline struct mroce_dev *to_mdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct mroce_dev, ibdev);
}

static inline struct mroce_ucontext *to_muc(struct ib_ucontext *uc)
{
	return container_of(uc, struct mroce_ucontext, ibuc);
}

static inline struct mroce_pd *to_mpd(struct ib_pd *pd)
{
	return container_of(pd, struct mroce_pd, ibpd);
}

static inline struct mroce_ah *to_mah(struct ib_ah *ah)
{
	return container_of(ah, struct mroce_ah, ibah);
}

static inline struct mroce_cq *to_mcq(struct ib_cq *cq)
{
	return container_of(cq, struct mroce_cq, ibcq);
}

static inline struct mroce_mr *to_mmr(struct ib_mr *mr)
{
	return container_of(mr, struct mroce_mr, ibmr);
}

static inline struct mroce_mw *to_mmw(struct ib_mw *mw)
{
	return container_of(mw, struct mroce_mw, ibmw);
}

static inline struct mroce_srq *to_msrq(struct ib_srq *srq)
{
	return container_of(srq, struct mroce_srq, ibsrq);
}

static inline struct mroce_qp *to_mqp(struct ib_qp *qp)
{
	return container_of(qp, struct mroce_qp, ibqp);
}

/*
 * QPs that run the reliable-connection transport: RC, and the two halves
 * of XRC (an initiator sends, a target receives through XRC SRQs).
 */
static inline bool mroce_qpt_is_rc(enum ib_qp_type t)
{
	return t == IB_QPT_RC || t == IB_QPT_XRC_INI || t == IB_QPT_XRC_TGT;
}

static inline bool mroce_qp_is_rc(const struct mroce_qp *qp)
{
	return mroce_qpt_is_rc(qp->ibqp.qp_type);
}

static inline struct mroce_mmap_entry *
to_mmentry(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct mroce_mmap_entry, rdma);
}

/* mroce_main.c: the device list. */
extern struct list_head mroce_dev_list;
extern struct mutex mroce_dev_lock;

/* mroce_params.c: module parameters (any context). */
u16 mroce_udp_port(void);
u32 mroce_param_paths(void);
u32 mroce_param_window(void);
u64 mroce_param_cc_target_ns(void);
u64 mroce_param_rto_min_ns(void);
bool mroce_param_netdev_seg(void);
bool mroce_param_rx_batch(void);
bool mroce_param_cc_share(void);

/* mroce_ccg.c: congestion groups (locking and context there). */
struct mroce_ccg;
void mroce_ccg_dev_init(struct mroce_dev *mdev);
struct mroce_ccg *mroce_ccg_get(struct mroce_dev *mdev,
				const union ib_gid *sgid,
				const union ib_gid *dgid);
void mroce_ccg_put(struct mroce_dev *mdev, struct mroce_ccg *g);
void mroce_ccg_join(struct mroce_qp *qp);
void mroce_ccg_leave(struct mroce_qp *qp);
u32 mroce_ccg_id(const struct mroce_qp *qp);
void mroce_ccg_debugfs_add(struct mroce_dev *mdev, struct dentry *dir);

/* mroce_net.c */
int mroce_net_init(void);
/* mroce_icrc.c: pick the faster CRC32c for the ICRC (module load). */
void mroce_icrc_init(void);
void mroce_net_exit(void);
struct mroce_net *mroce_net_get(struct net *net);
void mroce_net_put(struct mroce_net *mnet);
bool mroce_netdev_port_active(struct net_device *ndev);

/* mroce_dev.c */
int mroce_dev_add(const char *ibdev_name, struct net_device *ndev);
void mroce_dev_remove_net(struct net *net);
void mroce_dev_port_event(struct mroce_dev *mdev);
enum ib_mtu mroce_mtu_from_netdev(unsigned int mtu);

/* mroce_ring.c */
int mroce_ring_alloc(struct mroce_dev *mdev, struct mroce_ring *ring,
		     u32 min_entries, u32 entry_size,
		     struct ib_ucontext *uctx);
void mroce_ring_free(struct mroce_dev *mdev, struct mroce_ring *ring);
u64 mroce_ring_mmap_offset(const struct mroce_ring *ring);
u64 mroce_ring_mmap_size(const struct mroce_ring *ring);
int mroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void mroce_mmap_free(struct rdma_user_mmap_entry *entry);

/* mroce_pd.c: ucontexts, PDs, AHs, address vectors. */
int mroce_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata);
void mroce_dealloc_ucontext(struct ib_ucontext *uctx);
void mroce_disassociate_ucontext(struct ib_ucontext *uctx);
int mroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int mroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int mroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int mroce_destroy_ah(struct ib_ah *ibah, u32 flags);
int mroce_av_from_attr(struct mroce_dev *mdev, struct mroce_av *av,
		       const struct rdma_ah_attr *attr);
void mroce_av_to_attr(const struct mroce_av *av, struct rdma_ah_attr *attr);

/* mroce_cq.c */
int mroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata);
int mroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int mroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int mroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int mroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);

/* mroce_mr.c */
struct ib_mr *mroce_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *mroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *mroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int mroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int mroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *mroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
int mroce_mr_check_access(int access);
struct mroce_mr *mroce_mr_alloc(struct mroce_dev *mdev,
				enum mroce_mr_type type);
void mroce_mr_publish(struct mroce_dev *mdev, struct mroce_mr *mr,
		      struct ib_pd *pd);
void mroce_mr_release(struct mroce_dev *mdev, struct mroce_mr *mr);

/* mroce_mw.c: memory windows (process context, but mroce_mw_bind()). */
int mroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int mroce_dealloc_mw(struct ib_mw *ibmw);
u32 mroce_mw_bind(struct mroce_dev *mdev, struct ib_pd *pd, u32 qpn,
		  const struct mroce_send_wqe *w);
void mroce_mw_unhold(struct mroce_mr *mr);

/* mroce_qp.c */
int mroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int mroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int mask, struct ib_udata *udata);
int mroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int mask, struct ib_qp_init_attr *init);
int mroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
struct mroce_qp *mroce_qp_get(struct mroce_dev *mdev, u32 qpn);
struct mroce_qp *mroce_qp_get_next(struct mroce_dev *mdev,
				   unsigned long *qpn);
void mroce_qp_put(struct mroce_qp *qp);
int mroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int mroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);

/* mroce_srq.c */
int mroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int mroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int mroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int mroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int mroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
bool mroce_srq_take(struct mroce_srq *srq, void *wqe, u32 size,
		    struct mroce_dp *dp);
struct mroce_srq *mroce_xrc_srq(struct mroce_qp *qp, u32 srqn);
int mroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int mroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);

/* mroce_mem.c: memory regions as the datapath sees them (RCU held). */
enum mroce_copy_dir {
	MROCE_TO_MR,			/* write into the region */
	MROCE_FROM_MR,			/* read from the region */
};

struct mroce_mr *mroce_mr_lookup(struct mroce_dev *mdev, u32 key);
int mroce_mr_check(struct mroce_mr *mr, u32 key, struct ib_pd *pd, u32 qpn,
		   u64 va, u64 len, int access);
int mroce_mr_xfer(struct mroce_mr *mr, u32 key, struct ib_pd *pd, u32 qpn,
		  u64 va, void *buf, u32 len, int access,
		  enum mroce_copy_dir dir);
int mroce_mr_atomic(struct mroce_mr *mr, u32 key, struct ib_pd *pd, u32 qpn,
		    u64 va, bool cmp_swap, u64 swap, u64 compare_add,
		    u64 *orig);
u32 mroce_mr_fast_reg(struct mroce_dev *mdev, struct ib_pd *pd, u32 key,
		      int access, u64 iova, u64 length, u32 page_size);
int mroce_mr_invalidate(struct mroce_dev *mdev, struct ib_pd *pd, u32 qpn,
			u32 key);
int mroce_sge_copy(struct mroce_dev *mdev, struct ib_pd *pd, bool kernel,
		   const struct mroce_sge *sge, u32 nsge, u32 offset,
		   void *buf, u32 len, enum mroce_copy_dir dir);

/* mroce_cq.c: the datapath's producer side. */
void mroce_cq_push(struct mroce_cq *cq, const struct mroce_cqe *cqe,
		   bool solicited, struct mroce_dp *dp);
void mroce_dp_init(struct mroce_dp *dp);
void mroce_dp_finish(struct mroce_qp *qp, struct mroce_dp *dp);

/* mroce_xmit.c */
struct sk_buff *mroce_xmit_alloc(const struct mroce_av *av, u32 len,
				 u16 sport);
void mroce_xmit(struct mroce_qp *qp, struct sk_buff *skb);

/* mroce_rc.c: RC datapath around the protocol core. */
int mroce_rc_create(struct mroce_qp *qp);
void mroce_rc_destroy(struct mroce_qp *qp);
void mroce_rc_timer(struct mroce_qp *qp, struct mroce_dp *dp);
void mroce_rc_modify(struct mroce_qp *qp, enum ib_qp_state cur,
		     enum ib_qp_state next, struct mroce_dp *dp);
void mroce_rc_doorbell(struct mroce_qp *qp, struct mroce_dp *dp);
void mroce_rc_rx(struct mroce_qp *qp, const void *pkt, bool ce,
		 struct mroce_dp *dp);

/* mroce_rxbatch.c: the RC step after receive, once per softirq batch. */
#define MROCE_QPB_QUEUED	0	/* bit of batch_flags: on a CPU's list */
void mroce_rxbatch_init(void);
void mroce_rxbatch_exit(void);
void mroce_rxbatch_add(struct mroce_qp *qp);
void mroce_rxbatch_wait(struct mroce_qp *qp);

/* mroce_rc.c: send WQE validation, shared with UC. */
struct mroce_wr;
u32 mroce_rc_wqe_to_wr(struct mroce_qp *qp, const struct mroce_send_wqe *w,
		       u32 idx, struct mroce_wr *wr);

/* mroce_uc.c: UC QPs (lock held and RCU, but create and destroy). */
int mroce_uc_create(struct mroce_qp *qp);
void mroce_uc_destroy(struct mroce_qp *qp);
void mroce_uc_doorbell(struct mroce_qp *qp, struct mroce_dp *dp);
void mroce_uc_recv(struct mroce_qp *qp, const void *pkt, struct mroce_dp *dp);
void mroce_uc_modify(struct mroce_qp *qp, enum ib_qp_state cur,
		     enum ib_qp_state next, struct mroce_dp *dp);

/* mroce_wq.c: the work-queue shadows, shared by RC and UD (lock held). */
int mroce_wq_alloc(struct mroce_qp *qp);
void mroce_wq_free(struct mroce_qp *qp);
void mroce_wq_reset(struct mroce_qp *qp);
struct mroce_send_wqe *mroce_sq_shadow(struct mroce_qp *qp, u32 idx);
struct mroce_recv_wqe *mroce_rq_shadow(struct mroce_qp *qp, u32 idx);
u32 mroce_wq_avail(struct mroce_qp *qp, struct mroce_ring *ring, u32 done,
		   u32 next);
void mroce_wq_rq_ingest(struct mroce_qp *qp);
bool mroce_wq_bind(struct mroce_qp *qp, u32 idx, struct mroce_dp *dp);
int mroce_wq_bind_xrc(struct mroce_qp *qp, u32 idx, u32 srqn,
		      struct mroce_srq **srqp, struct mroce_dp *dp);
bool mroce_wq_xrc_bound(struct mroce_qp *qp, u32 idx);
void mroce_wq_rq_flush(struct mroce_qp *qp, struct mroce_dp *dp);
void mroce_wq_recv_done(struct mroce_qp *qp, struct mroce_cqe *cqe,
			bool solicited, struct mroce_dp *dp);
void mroce_wq_send_done(struct mroce_qp *qp, u32 status, u32 wc_opcode,
			u32 byte_len, struct mroce_dp *dp);

/* mroce_ud.c: UD and GSI datagrams. */
void mroce_ud_doorbell(struct mroce_qp *qp, struct mroce_dp *dp);
void mroce_ud_rx(struct mroce_qp *qp, const void *pkt, struct sk_buff *skb,
		 struct mroce_dp *dp);
void mroce_ud_modify(struct mroce_qp *qp, enum ib_qp_state next,
		     struct mroce_dp *dp);

/* mroce_rx.c */
int mroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb);
void mroce_rx_qp_gone(struct mroce_dev *mdev, const struct mroce_qp *qp);

/* mroce_stats.c: live object counters, datagram counters, debugfs. */
void mroce_obj_inc(struct mroce_dev *mdev, enum mroce_obj_type type,
		   bool user);
void mroce_obj_dec(struct mroce_dev *mdev, enum mroce_obj_type type,
		   bool user);
int mroce_obj_live(struct mroce_dev *mdev, enum mroce_obj_type type,
		   bool user);
void mroce_stats_init(void);
int mroce_stats_check_exit(void);
void mroce_stats_exit(void);
void mroce_stats_dev_add(struct mroce_dev *mdev);
void mroce_stats_dev_remove(struct mroce_dev *mdev);
void mroce_stats_dev_count(int delta);

/* mroce_debugfs_paths.c: <ibdev>/paths, per-QP per-path core stats. */
void mroce_debugfs_paths_add(struct mroce_dev *mdev, struct dentry *dir);

/* mroce_hw_counters.c: "rdma statistic" (hw_stats) of the port. */
struct rdma_hw_stats *mroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num);
int mroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);
void mroce_hwc_init(struct mroce_dev *mdev);
void mroce_hwc_conn_read(struct mroce_qp *qp, struct mroce_rc_counts *out);
void mroce_hwc_prev_add(struct mroce_qp *qp,
			const struct mroce_rc_counts *old);
void mroce_hwc_qp_erase(struct mroce_dev *mdev, struct mroce_qp *qp);
void mroce_hwc_qp_final(struct mroce_dev *mdev, struct mroce_qp *qp);
struct rdma_hw_stats *mroce_counter_alloc_stats(struct rdma_counter *counter);
int mroce_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp);
int mroce_counter_unbind_qp(struct ib_qp *ibqp);
int mroce_counter_update_stats(struct rdma_counter *counter);
int mroce_counter_dealloc(struct rdma_counter *counter);

/* mroce_restrack.c: driver attributes of "rdma resource show qp". */
int mroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);

#endif /* MROCE_H */
