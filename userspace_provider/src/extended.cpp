// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// extended.cpp - the extended verbs over the same rings: the ibv_wr_* send
// API of ibv_qp_ex (a batch of WQEs published with one producer store and
// one doorbell) and the start_poll/next_poll/end_poll API of ibv_cq_ex.
// WQEs are encoded by the same functions as ibv_post_send's (wqe.hpp).

#include "mroce_uprov.h"
#include "ring.hpp"
#include "wqe.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <span>

namespace mroce {
namespace {

// The send operations the kernel executes on UD QPs.
constexpr uint64_t kUdSendOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

// The send operations the kernel executes on RC QPs, and on UC QPs.
constexpr uint64_t kRcSendOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_INV |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW |
	IBV_QP_EX_WITH_LOCAL_INV;
// XRC initiators: RC's, but WRITE_WITH_IMM (no receive binding at the target).
constexpr uint64_t kXrcSendOps = kRcSendOps & ~uint64_t(IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
constexpr uint64_t kUcSendOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
	IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_BIND_MW;

uint64_t send_op_bit(ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
		return IBV_QP_EX_WITH_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return IBV_QP_EX_WITH_SEND_WITH_IMM;
	case IBV_WR_SEND_WITH_INV:
		return IBV_QP_EX_WITH_SEND_WITH_INV;
	case IBV_WR_RDMA_WRITE:
		return IBV_QP_EX_WITH_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	case IBV_WR_RDMA_READ:
		return IBV_QP_EX_WITH_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	case IBV_WR_BIND_MW:
		return IBV_QP_EX_WITH_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_QP_EX_WITH_LOCAL_INV;
	default:
		return 0;
	}
}

} // namespace

// One QP's ibv_wr_* batch.  Between start() and complete()/abort() it holds
// the SQ lock (ibv_post_send on the same QP waits), writes WQEs into slots
// past the published producer index and publishes them all at once.  A WR
// is complete with its data (one data setter, or none: no data) and, on UD,
// its address (set_ud_addr, before or after the data setter).
class SendBatch {
public:
	SendBatch(Ring &sq, const mroce_qp_limits &lim, uint64_t ops)
		: sq_(sq), lim_(lim), ops_(ops)
	{
	}

	void start()
	{
		// Blocks while another thread's batch or ibv_post_send holds the SQ.
		lock_ = std::unique_lock(sq_.lock());
		first_ = prod_ = sq_.load_producer();
		open_ = false;
		err_ = 0;
	}

	int complete(unsigned *queued)
	{
		*queued = 0;
		if (!lock_.owns_lock())
			return EINVAL;	// no wr_start
		finish();
		const int err = err_;
		if (!err && prod_ != first_) {
			sq_.store_producer(prod_);
			*queued = prod_ - first_;
		}
		lock_.unlock();
		return err;
	}

	void abort()
	{
		if (lock_.owns_lock())
			lock_.unlock();	// the unpublished slots are simply reused
	}

	// A WR builder (wr_send, wr_rdma_write, ...): wr holds everything but the data.
	void begin(const ibv_send_wr &wr)
	{
		if (!usable())
			return;
		finish();
		if (err_)
			return;
		if (!(send_op_bit(wr.opcode) & ops_))
			return fail(EOPNOTSUPP);	// not in send_ops_flags
		if (prod_ - sq_.load_consumer() >= sq_.num_entries())
			return fail(ENOMEM);
		if (int e = encode_send_header(wr, lim_, nullptr, cur_))
			return fail(e);
		open_ = true;
		have_data_ = false;
		// UD: ibv_wr_set_ud_addr, XRC: ibv_wr_set_xrc_srqn complete the WR.
		have_addr_ = lim_.qp_type != IBV_QPT_UD &&
			     (lim_.qp_type != IBV_QPT_XRC_SEND || is_local_op(cur_));
		if (is_local_op(cur_)) {
			// No data setter follows (one would fail with EINVAL).
			cur_.num_sge = 0;
			have_data_ = true;
			close();
		}
	}

	void set_sges(std::span<const ibv_sge> sges)
	{
		if (data_allowed())
			data(encode_send_sges(cur_, sges, lim_, slot()));
	}

	void set_inline(std::span<const ibv_data_buf> bufs)
	{
		if (data_allowed())
			data(encode_send_inline(cur_, bufs, lim_, slot()));
	}

	// The UD destination of the open WR; ah_num of ah, valid only if have_ah.
	void set_ud_addr(bool have_ah, uint32_t ah_num, uint32_t qpn, uint32_t qkey)
	{
		if (!usable())
			return;
		if (!open_ || have_addr_ || lim_.qp_type != IBV_QPT_UD || !have_ah)
			return fail(EINVAL);	// no UD WR open, twice, or no AH
		cur_.wr.ud.ah_num = ah_num;
		cur_.wr.ud.remote_qpn = qpn;
		cur_.wr.ud.remote_qkey = qkey;
		have_addr_ = true;
		if (have_data_)
			close();
	}

	// The XRC SRQ of the open WR (XRC initiators).
	void set_xrc_srqn(uint32_t srqn)
	{
		if (!usable())
			return;
		if (!open_ || have_addr_ || lim_.qp_type != IBV_QPT_XRC_SEND || !srqn ||
		    srqn > 0xffffff)
			return fail(EINVAL);	// no XRC WR open, twice, or a bad number
		cur_.xrc_srqn = srqn;
		have_addr_ = true;
		if (have_data_)
			close();
	}

	void fail(int err)
	{
		if (usable())
			err_ = err;
	}

private:
	bool usable() const { return lock_.owns_lock() && !err_; }

	// A data setter needs a WR builder before it, and at most one per WR.
	bool data_allowed()
	{
		if (!usable())
			return false;
		if (!open_ || have_data_) {
			err_ = EINVAL;
			return false;
		}
		return true;
	}

	std::span<std::byte> slot() const { return {sq_.slot(prod_), sq_.entry_size()}; }

	// The open WR's data is in its slot (or err): close it if it is complete.
	void data(int err)
	{
		if (err) {
			open_ = false;
			return fail(err);
		}
		have_data_ = true;
		if (have_addr_)
			close();
	}

	// The complete open WR: write the header, take the slot.
	void close()
	{
		open_ = false;
		std::memcpy(slot().data(), &cur_, sizeof(cur_));
		++prod_;
	}

	// A WR without a data setter carries no data, as ibv_post_send with
	// num_sge 0; a UD WR without an address is refused.
	void finish()
	{
		if (!open_)
			return;
		if (!have_data_) {
			if (cur_.send_flags & MROCE_SEND_INLINE)
				data(encode_send_inline(cur_, std::span<const ibv_data_buf>{}, lim_,
							slot()));
			else
				data(encode_send_sges(cur_, std::span<const ibv_sge>{}, lim_, slot()));
		}
		if (open_ && !have_addr_) {
			open_ = false;
			fail(EINVAL);	// UD, XRC: no ibv_wr_set_ud_addr / set_xrc_srqn
		}
	}

	Ring &sq_;
	const mroce_qp_limits lim_;
	const uint64_t ops_;
	std::unique_lock<std::mutex> lock_;
	uint32_t first_ = 0;	// producer index at wr_start
	uint32_t prod_ = 0;	// next slot
	bool open_ = false;	// cur_ built, waiting for its data or address
	bool have_data_ = false;	// the open WR's data is in its slot
	bool have_addr_ = false;	// the open WR's UD address is in cur_ (RC: always)
	mroce_send_wqe cur_{};
	int err_ = 0;
};

// One CQ's start_poll/next_poll/end_poll session; holds the CQ lock from a
// successful start_poll to end_poll.
class CqPoller {
public:
	explicit CqPoller(Ring &cq) : cq_(cq) {}

	int start(uint64_t *wr_id, ibv_wc_status *status)
	{
		std::unique_lock lk(cq_.lock());
		if (cq_.lost())
			return EIO;
		cons_ = cq_.load_consumer();
		int err = read(wr_id, status);
		if (!err)
			lock_ = std::move(lk);
		return err;
	}

	int next(uint64_t *wr_id, ibv_wc_status *status)
	{
		if (!lock_.owns_lock())
			return EINVAL;
		if (have_)
			++cons_;
		have_ = false;
		return read(wr_id, status);
	}

	void end()
	{
		if (!lock_.owns_lock())
			return;
		if (have_)
			++cons_;
		have_ = false;
		cq_.store_consumer(cons_);
		lock_.unlock();
	}

	const ibv_wc &current() const { return wc_; }
	uint64_t ts_raw() const { return ts_raw_; }
	uint64_t ts_wallclock() const { return ts_wallclock_; }

private:
	int read(uint64_t *wr_id, ibv_wc_status *status)
	{
		const uint32_t prod = cq_.load_producer();
		if (prod - cons_ > cq_.num_entries())
			return EIO;	// the kernel never publishes more than the ring holds
		if (prod == cons_)
			return ENOENT;
		mroce_cqe c;
		std::memcpy(&c, cq_.slot(cons_), sizeof(c));
		decode_cqe(c, wc_);
		ts_raw_ = c.ts_raw;
		ts_wallclock_ = c.ts_wallclock;
		have_ = true;
		*wr_id = wc_.wr_id;
		*status = wc_.status;
		return 0;
	}

	Ring &cq_;
	std::unique_lock<std::mutex> lock_;
	uint32_t cons_ = 0;
	bool have_ = false;	// wc_ is slot cons_, not yet consumed
	ibv_wc wc_{};
	uint64_t ts_raw_ = 0;		// of wc_
	uint64_t ts_wallclock_ = 0;
};

} // namespace mroce

struct mroce_sqx {
	mroce::SendBatch batch;
};

struct mroce_cqx {
	mroce::CqPoller poller;
};

namespace {

ibv_send_wr wr_of(uint64_t wr_id, unsigned flags, ibv_wr_opcode op)
{
	ibv_send_wr wr{};
	wr.wr_id = wr_id;
	wr.send_flags = flags;
	wr.opcode = op;
	return wr;
}

} // namespace

extern "C" {

int mroce_qpx_check(const struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_XRCD;
	if (attr->comp_mask & ~known)
		return EOPNOTSUPP;	// TSO header, RSS (ind table, rx hash)
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
		return EOPNOTSUPP;
	if (attr->qp_type == IBV_QPT_XRC_RECV) {
		// An XRC target: in an XRC domain, no PD, no queue, no CQ; its
		// receives come from the XRC SRQs its messages name.
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)
			return EINVAL;
		if (attr->send_cq || attr->recv_cq || attr->srq || attr->cap.max_send_wr ||
		    attr->cap.max_send_sge || attr->cap.max_inline_data ||
		    attr->cap.max_recv_wr || attr->cap.max_recv_sge)
			return EINVAL;
		if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
			return EINVAL;
		return 0;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD)
		return EINVAL;	// only an XRC target lives in an XRC domain
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD && attr->qp_type != IBV_QPT_XRC_SEND)
		return EOPNOTSUPP;
	// An XRC initiator only sends: a receive queue, CQ or SRQ is refused.
	if (attr->qp_type == IBV_QPT_XRC_SEND &&
	    (attr->recv_cq || attr->srq || attr->cap.max_recv_wr || attr->cap.max_recv_sge))
		return EINVAL;
	if (attr->srq)
		return EOPNOTSUPP;	// SRQs: through ibv_create_qp only, for now
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		// UC has no READ or atomics (IBA table 38): asking for them fails.
		const uint64_t ok = attr->qp_type == IBV_QPT_RC	    ? mroce::kRcSendOps
				    : attr->qp_type == IBV_QPT_XRC_SEND ? mroce::kXrcSendOps
				    : attr->qp_type == IBV_QPT_UC	    ? mroce::kUcSendOps
									    : mroce::kUdSendOps;
		if (attr->send_ops_flags & ~ok)
			return EOPNOTSUPP;
	}
	return 0;
}

struct mroce_sqx *mroce_sqx_new(struct mroce_uring *sq, const struct mroce_qp_limits *lim,
				uint64_t send_ops_flags)
{
	auto *s = new (std::nothrow) mroce_sqx{{*sq->ring, *lim, send_ops_flags}};
	if (!s)
		errno = ENOMEM;
	return s;
}

void mroce_sqx_free(struct mroce_sqx *sqx)
{
	delete sqx;
}

void mroce_sqx_start(struct mroce_sqx *sqx)
{
	sqx->batch.start();
}

int mroce_sqx_complete(struct mroce_sqx *sqx, unsigned int *queued)
{
	return sqx->batch.complete(queued);
}

void mroce_sqx_abort(struct mroce_sqx *sqx)
{
	sqx->batch.abort();
}

void mroce_sqx_send(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags)
{
	sqx->batch.begin(wr_of(wr_id, flags, IBV_WR_SEND));
}

void mroce_sqx_send_imm(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags, __be32 imm)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_SEND_WITH_IMM);
	wr.imm_data = imm;
	sqx->batch.begin(wr);
}

void mroce_sqx_send_inv(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			uint32_t invalidate_rkey)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_SEND_WITH_INV);
	wr.invalidate_rkey = invalidate_rkey;
	sqx->batch.begin(wr);
}

void mroce_sqx_rdma_write(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			  uint32_t rkey, uint64_t remote_addr)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_RDMA_WRITE);
	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = remote_addr;
	sqx->batch.begin(wr);
}

void mroce_sqx_rdma_write_imm(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			      uint32_t rkey, uint64_t remote_addr, __be32 imm)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_RDMA_WRITE_WITH_IMM);
	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = remote_addr;
	wr.imm_data = imm;
	sqx->batch.begin(wr);
}

void mroce_sqx_rdma_read(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			 uint32_t rkey, uint64_t remote_addr)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_RDMA_READ);
	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = remote_addr;
	sqx->batch.begin(wr);
}

void mroce_sqx_atomic_cmp_swp(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			      uint32_t rkey, uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_ATOMIC_CMP_AND_SWP);
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.remote_addr = remote_addr;
	wr.wr.atomic.compare_add = compare;
	wr.wr.atomic.swap = swap;
	sqx->batch.begin(wr);
}

void mroce_sqx_atomic_fetch_add(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
				uint32_t rkey, uint64_t remote_addr, uint64_t add)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_ATOMIC_FETCH_AND_ADD);
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.remote_addr = remote_addr;
	wr.wr.atomic.compare_add = add;
	sqx->batch.begin(wr);
}

void mroce_sqx_set_xrc_srqn(struct mroce_sqx *sqx, uint32_t srqn)
{
	sqx->batch.set_xrc_srqn(srqn);
}

void mroce_sqx_set_ud_addr(struct mroce_sqx *sqx, int have_ah, uint32_t ah_num, uint32_t qpn,
			   uint32_t qkey)
{
	sqx->batch.set_ud_addr(have_ah != 0, ah_num, qpn, qkey);
}

void mroce_sqx_bind_mw(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
		       struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_BIND_MW);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	if (info)
		wr.bind_mw.bind_info = *info;
	sqx->batch.begin(wr);	// EOPNOTSUPP first when BIND_MW is not enabled
	if (!info)
		sqx->batch.fail(EINVAL);
}

void mroce_sqx_local_inv(struct mroce_sqx *sqx, uint64_t wr_id, unsigned int flags,
			 uint32_t invalidate_rkey)
{
	ibv_send_wr wr = wr_of(wr_id, flags, IBV_WR_LOCAL_INV);
	wr.invalidate_rkey = invalidate_rkey;
	sqx->batch.begin(wr);
}

void mroce_sqx_unsupported(struct mroce_sqx *sqx)
{
	sqx->batch.fail(EOPNOTSUPP);
}

void mroce_sqx_set_sge(struct mroce_sqx *sqx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	const ibv_sge sge{addr, length, lkey};
	sqx->batch.set_sges({&sge, 1});
}

void mroce_sqx_set_sge_list(struct mroce_sqx *sqx, size_t num_sge, const struct ibv_sge *sg_list)
{
	if (num_sge && !sg_list)
		return sqx->batch.fail(EINVAL);
	sqx->batch.set_sges({sg_list, num_sge});
}

void mroce_sqx_set_inline_data(struct mroce_sqx *sqx, const void *addr, size_t length)
{
	const ibv_data_buf buf{const_cast<void *>(addr), length};
	sqx->batch.set_inline({&buf, 1});
}

void mroce_sqx_set_inline_data_list(struct mroce_sqx *sqx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	if (num_buf && !buf_list)
		return sqx->batch.fail(EINVAL);
	sqx->batch.set_inline({buf_list, num_buf});
}

int mroce_cqx_check(const struct ibv_cq_init_attr_ex *attr)
{
	if (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS))
		return EOPNOTSUPP;	// parent domains and anything newer
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)))
		return EOPNOTSUPP;	// IGNORE_OVERRUN: the kernel reports overruns
	// Timestamps are in the CQE (when the CQ asked for them); no CVLAN,
	// flow tag, TM.
	const uint64_t known = uint64_t(IBV_WC_STANDARD_FLAGS) |
			       uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) |
			       uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);
	if (attr->wc_flags & ~known)
		return EOPNOTSUPP;
	return 0;
}

struct mroce_cqx *mroce_cqx_new(struct mroce_uring *cq)
{
	auto *c = new (std::nothrow) mroce_cqx{mroce::CqPoller(*cq->ring)};
	if (!c)
		errno = ENOMEM;
	return c;
}

void mroce_cqx_free(struct mroce_cqx *cqx)
{
	delete cqx;
}

int mroce_cqx_start_poll(struct mroce_cqx *cqx, uint32_t attr_comp_mask, uint64_t *wr_id,
			 enum ibv_wc_status *status)
{
	if (attr_comp_mask)
		return EINVAL;
	return cqx->poller.start(wr_id, status);
}

int mroce_cqx_next_poll(struct mroce_cqx *cqx, uint64_t *wr_id, enum ibv_wc_status *status)
{
	return cqx->poller.next(wr_id, status);
}

void mroce_cqx_end_poll(struct mroce_cqx *cqx)
{
	cqx->poller.end();
}

const struct ibv_wc *mroce_cqx_current(const struct mroce_cqx *cqx)
{
	return &cqx->poller.current();
}

uint64_t mroce_cqx_completion_ts(const struct mroce_cqx *cqx)
{
	return cqx->poller.ts_raw();
}

uint64_t mroce_cqx_completion_wallclock_ns(const struct mroce_cqx *cqx)
{
	return cqx->poller.ts_wallclock();
}

} // extern "C"
