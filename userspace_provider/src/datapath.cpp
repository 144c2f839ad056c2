// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// datapath.cpp - the provider's side of the shared rings: mapping, polling
// completions and queueing work requests.

#include "mroce_uprov.h"
#include "ring.hpp"
#include "wqe.hpp"

#include <sys/mman.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

namespace mroce {

static_assert(sizeof(mroce_ring_ctl) == MROCE_RING_CTL_SIZE);
static_assert(sizeof(mroce_cqe) == 64);
static_assert(sizeof(mroce_send_wqe) == 64);
// The WQE's send flags are the verbs values.
static_assert(int(MROCE_SEND_FENCE) == int(IBV_SEND_FENCE) &&
	      int(MROCE_SEND_SIGNALED) == int(IBV_SEND_SIGNALED) &&
	      int(MROCE_SEND_SOLICITED) == int(IBV_SEND_SOLICITED) &&
	      int(MROCE_SEND_INLINE) == int(IBV_SEND_INLINE));
static_assert(sizeof(mroce_recv_wqe) == 16);
static_assert(sizeof(mroce_sge) == 16);

std::unique_ptr<MmapMemory> MmapMemory::map(int fd, uint64_t offset, size_t size)
{
	void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       static_cast<off_t>(offset));
	if (p == MAP_FAILED)
		return nullptr;
	return std::unique_ptr<MmapMemory>(new MmapMemory(p, size));
}

MmapMemory::~MmapMemory()
{
	munmap(addr_, size_);
}

Ring::Ring(std::unique_ptr<RingMemory> mem, uint32_t n, uint32_t size)
	: mem_(std::move(mem)), ctl_(reinterpret_cast<mroce_ring_ctl *>(mem_->bytes().data())),
	  slots_(mem_->bytes().data() + MROCE_RING_CTL_SIZE), num_entries_(n), entry_size_(size)
{
}

std::unique_ptr<Ring> Ring::make(std::unique_ptr<RingMemory> mem, uint32_t num_entries,
				 uint32_t entry_size, RingError *err)
{
	auto fail = [err](RingError e) {
		if (err)
			*err = e;
		return nullptr;
	};
	if (!mem)
		return fail(RingError::too_small);
	if (num_entries == 0 || !std::has_single_bit(num_entries) || entry_size == 0 ||
	    entry_size % 8)
		return fail(RingError::bad_geometry);
	auto bytes = mem->bytes();
	if (bytes.size() < MROCE_RING_CTL_SIZE + static_cast<size_t>(num_entries) * entry_size)
		return fail(RingError::too_small);
	const auto *ctl = reinterpret_cast<const mroce_ring_ctl *>(bytes.data());
	if (ctl->num_entries != num_entries || ctl->entry_size != entry_size)
		return fail(RingError::mismatch);
	if (err)
		*err = RingError::ok;
	return std::unique_ptr<Ring>(new Ring(std::move(mem), num_entries, entry_size));
}

void Ring::swap_memory(Ring &fresh) noexcept
{
	std::swap(mem_, fresh.mem_);
	std::swap(ctl_, fresh.ctl_);
	std::swap(slots_, fresh.slots_);
	std::swap(num_entries_, fresh.num_entries_);
	std::swap(entry_size_, fresh.entry_size_);
}

bool is_local_op(const mroce_send_wqe &w)
{
	return w.opcode == MROCE_WR_BIND_MW || w.opcode == MROCE_WR_LOCAL_INV;
}

// The window part of a BIND_MW WQE: remote rights only (a window has no
// lkey), and ZERO_BASED for a type 2 window (remote addresses are then
// offsets from the bound addr).  A type 1 window cannot be zero based
// (IBA C10-75): EINVAL, as other providers' ibv_bind_mw.  The kernel
// checks the region, range, flags and window again when the WQE executes.
static int encode_bind(uint32_t rkey, const ibv_mw_bind_info &info, mroce_send_wqe &w,
		       bool type1)
{
	const unsigned remote =
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	if ((info.mw_access_flags & IBV_ACCESS_ZERO_BASED) && type1)
		return EINVAL;
	if (info.mw_access_flags & ~(remote | IBV_ACCESS_ZERO_BASED))
		return EINVAL;
	if (!info.mr && (info.addr || info.length))
		return EINVAL;
	w.wr.bind.addr = info.addr;
	w.wr.bind.length = info.length;
	w.wr.bind.rkey = rkey;
	w.wr.bind.mr_lkey = info.mr ? info.mr->lkey : 0;
	w.wr.bind.access = info.mw_access_flags;
	return 0;
}

int encode_send_header(const ibv_send_wr &wr, const mroce_qp_limits &lim,
		       mroce_ah_num_fn ah_num, mroce_send_wqe &w, bool bind_type1)
{
	const bool ud = lim.qp_type == IBV_QPT_UD;

	w = {};
	switch (wr.opcode) {
	case IBV_WR_SEND:
		w.opcode = MROCE_WR_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		w.opcode = MROCE_WR_SEND_WITH_IMM;
		w.imm_data = wr.imm_data;
		break;
	case IBV_WR_RDMA_WRITE:
		w.opcode = MROCE_WR_RDMA_WRITE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		w.opcode = MROCE_WR_RDMA_WRITE_WITH_IMM;
		w.imm_data = wr.imm_data;
		break;
	case IBV_WR_RDMA_READ:
		w.opcode = MROCE_WR_RDMA_READ;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		w.opcode = MROCE_WR_ATOMIC_CMP_AND_SWP;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w.opcode = MROCE_WR_ATOMIC_FETCH_AND_ADD;
		break;
	case IBV_WR_SEND_WITH_INV:
		w.opcode = MROCE_WR_SEND_WITH_INV;
		w.imm_data = htobe32(wr.invalidate_rkey);
		break;
	case IBV_WR_LOCAL_INV:
		w.opcode = MROCE_WR_LOCAL_INV;
		break;
	case IBV_WR_BIND_MW:
		// A work request binds type 2 windows; type 1 go through
		// ibv_bind_mw (bind_type1), which posts the same WQE.
		if (!wr.bind_mw.mw ||
		    wr.bind_mw.mw->type != (bind_type1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2))
			return EINVAL;
		w.opcode = MROCE_WR_BIND_MW;
		break;
	default:
		// TSO, ATOMIC_WRITE, ...: the kernel executes none of them.
		return EOPNOTSUPP;
	}
	if (ud && w.opcode != MROCE_WR_SEND && w.opcode != MROCE_WR_SEND_WITH_IMM)
		return EINVAL;
	// IB allows LOCAL_INV on UC; mroce executes it on RC only (as rxe).
	if (lim.qp_type == IBV_QPT_UC && w.opcode == MROCE_WR_LOCAL_INV)
		return EOPNOTSUPP;
	// UC: SEND, SEND_WITH_IMM, RDMA_WRITE(_WITH_IMM) and BIND_MW; no READ,
	// atomics or SEND_WITH_INV (IBA table 38), refused at post as rxe does.
	if (lim.qp_type == IBV_QPT_UC && w.opcode != MROCE_WR_SEND &&
	    w.opcode != MROCE_WR_SEND_WITH_IMM && w.opcode != MROCE_WR_RDMA_WRITE &&
	    w.opcode != MROCE_WR_RDMA_WRITE_WITH_IMM && w.opcode != MROCE_WR_BIND_MW)
		return EINVAL;
	const unsigned known = IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;
	if (wr.send_flags & ~known)
		return EOPNOTSUPP;
	w.wr_id = wr.wr_id;
	w.send_flags = wr.send_flags & known;
	// Local operations carry no data and solicit nothing.
	if (is_local_op(w))
		w.send_flags &= IBV_SEND_FENCE | IBV_SEND_SIGNALED;

	switch (w.opcode) {
	case MROCE_WR_LOCAL_INV:
		w.wr.rdma.rkey = wr.invalidate_rkey;
		break;
	case MROCE_WR_BIND_MW:
		if (int err = encode_bind(wr.bind_mw.rkey, wr.bind_mw.bind_info, w,
					       bind_type1))
			return err;
		break;
	case MROCE_WR_RDMA_WRITE:
	case MROCE_WR_RDMA_WRITE_WITH_IMM:
	case MROCE_WR_RDMA_READ:
		w.wr.rdma.remote_addr = wr.wr.rdma.remote_addr;
		w.wr.rdma.rkey = wr.wr.rdma.rkey;
		break;
	case MROCE_WR_ATOMIC_CMP_AND_SWP:
	case MROCE_WR_ATOMIC_FETCH_AND_ADD:
		// An 8-byte-aligned 8-byte target (the local buffer: encode_send_sges).
		if (wr.wr.atomic.remote_addr & 7)
			return EINVAL;
		w.wr.atomic.remote_addr = wr.wr.atomic.remote_addr;
		w.wr.atomic.compare_add = wr.wr.atomic.compare_add;
		w.wr.atomic.swap = wr.wr.atomic.swap;
		w.wr.atomic.rkey = wr.wr.atomic.rkey;
		break;
	default:
		break;
	}
	if (lim.qp_type == IBV_QPT_XRC_SEND) {
		// Every request names the target's XRC SRQ; the kernel cannot
		// bind a WRITE_WITH_IMM's receive at an XRC target.
		if (w.opcode == MROCE_WR_RDMA_WRITE_WITH_IMM)
			return EOPNOTSUPP;
		// 0 from ibv_wr_*: ibv_wr_set_xrc_srqn() sets it.
		w.xrc_srqn = wr.qp_type.xrc.remote_srqn;
		if (ah_num && !is_local_op(w) && (!w.xrc_srqn || w.xrc_srqn > 0xffffff))
			return EINVAL;
	}
	if (ud && ah_num) {	// without ah_num: ibv_wr_set_ud_addr() sets it
		if (!wr.wr.ud.ah)
			return EINVAL;
		w.wr.ud.ah_num = ah_num(wr.wr.ud.ah);
		w.wr.ud.remote_qpn = wr.wr.ud.remote_qpn;
		w.wr.ud.remote_qkey = wr.wr.ud.remote_qkey;
	}
	return 0;
}

static bool is_atomic(const mroce_send_wqe &w)
{
	return w.opcode == MROCE_WR_ATOMIC_CMP_AND_SWP || w.opcode == MROCE_WR_ATOMIC_FETCH_AND_ADD;
}

int encode_send_sges(mroce_send_wqe &w, std::span<const ibv_sge> sges, const mroce_qp_limits &lim,
		     std::span<std::byte> slot)
{
	if (sges.size() > lim.max_send_sge)
		return EINVAL;
	// Atomics: one 8-byte local buffer.
	if (is_atomic(w) && (sges.size() != 1 || sges[0].length != 8))
		return EINVAL;
	if (sizeof(w) + sges.size() * sizeof(mroce_sge) > slot.size())
		return EINVAL;
	std::byte *body = slot.data() + sizeof(w);
	for (size_t i = 0; i < sges.size(); ++i) {
		mroce_sge s{sges[i].addr, sges[i].length, sges[i].lkey};
		std::memcpy(body + i * sizeof(s), &s, sizeof(s));
	}
	w.num_sge = static_cast<uint32_t>(sges.size());
	w.inline_len = 0;
	w.send_flags &= ~MROCE_SEND_INLINE;
	return 0;
}

namespace {
const void *buf_addr(const ibv_sge &s) { return reinterpret_cast<const void *>(s.addr); }
size_t buf_len(const ibv_sge &s) { return s.length; }
const void *buf_addr(const ibv_data_buf &b) { return b.addr; }
size_t buf_len(const ibv_data_buf &b) { return b.length; }

template <class Buf>
int encode_inline(mroce_send_wqe &w, std::span<const Buf> bufs, const mroce_qp_limits &lim,
		  std::span<std::byte> slot)
{
	if (w.opcode == MROCE_WR_RDMA_READ || is_atomic(w))
		return EINVAL;
	const size_t room = slot.size() - sizeof(w);
	size_t total = 0;
	for (const Buf &b : bufs) {
		if (buf_len(b) > lim.max_inline)
			return EINVAL;
		total += buf_len(b);
		if (total > lim.max_inline || total > room)
			return EINVAL;
	}
	std::byte *body = slot.data() + sizeof(w);
	for (const Buf &b : bufs) {
		if (buf_len(b))
			std::memcpy(body, buf_addr(b), buf_len(b));
		body += buf_len(b);
	}
	w.inline_len = static_cast<uint32_t>(total);
	w.num_sge = 0;
	w.send_flags |= MROCE_SEND_INLINE;
	return 0;
}
} // namespace

int encode_send_inline(mroce_send_wqe &w, std::span<const ibv_sge> bufs,
		       const mroce_qp_limits &lim, std::span<std::byte> slot)
{
	return encode_inline(w, bufs, lim, slot);
}

int encode_send_inline(mroce_send_wqe &w, std::span<const ibv_data_buf> bufs,
		       const mroce_qp_limits &lim, std::span<std::byte> slot)
{
	return encode_inline(w, bufs, lim, slot);
}

int encode_send(const ibv_send_wr &wr, const mroce_qp_limits &lim, mroce_ah_num_fn ah_num,
		std::span<std::byte> slot, bool bind_type1)
{
	mroce_send_wqe w;
	int err = encode_send_header(wr, lim, ah_num, w, bind_type1);
	if (err)
		return err;
	if (is_local_op(w)) {	// no data: sg_list and num_sge are not read
		std::memcpy(slot.data(), &w, sizeof(w));
		return 0;
	}
	if (wr.num_sge < 0 || (wr.num_sge > 0 && !wr.sg_list))
		return EINVAL;
	const std::span<const ibv_sge> sges(wr.sg_list, static_cast<size_t>(wr.num_sge));
	err = (wr.send_flags & IBV_SEND_INLINE) ? encode_send_inline(w, sges, lim, slot)
						 : encode_send_sges(w, sges, lim, slot);
	if (err)
		return err;
	std::memcpy(slot.data(), &w, sizeof(w));
	return 0;
}

int encode_recv(const ibv_recv_wr &wr, const mroce_qp_limits &lim, std::span<std::byte> slot)
{
	if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > lim.max_recv_sge ||
	    (wr.num_sge > 0 && !wr.sg_list) || recv_wqe_bytes(wr.num_sge) > slot.size())
		return EINVAL;
	mroce_recv_wqe w{};
	w.wr_id = wr.wr_id;
	w.num_sge = static_cast<uint32_t>(wr.num_sge);
	std::memcpy(slot.data(), &w, sizeof(w));
	for (int i = 0; i < wr.num_sge; ++i) {
		mroce_sge s{wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
		std::memcpy(slot.data() + sizeof(w) + i * sizeof(s), &s, sizeof(s));
	}
	return 0;
}

void decode_cqe(const mroce_cqe &c, ibv_wc &wc)
{
	wc = {};
	wc.wr_id = c.wr_id;
	wc.status = static_cast<ibv_wc_status>(c.status);
	wc.opcode = static_cast<ibv_wc_opcode>(c.opcode);
	wc.vendor_err = c.vendor_err;
	wc.byte_len = c.byte_len;
	if (c.wc_flags & MROCE_WC_WITH_INV)
		wc.invalidated_rkey = be32toh(c.imm_data);	// big-endian in the CQE
	else
		wc.imm_data = c.imm_data;
	wc.qp_num = c.qp_num;
	wc.src_qp = c.src_qp;
	wc.wc_flags = c.wc_flags;
	wc.pkey_index = c.pkey_index;
	wc.slid = c.slid;
	wc.sl = c.sl;
	wc.dlid_path_bits = c.dlid_path_bits;
}

} // namespace mroce

using mroce::Ring;

extern "C" {

struct mroce_uring *mroce_uring_map(int cmd_fd, uint64_t offset, uint64_t size,
				    uint32_t num_entries, uint32_t entry_size)
{
	auto mem = mroce::MmapMemory::map(cmd_fd, offset, size);
	if (!mem)
		return nullptr;
	auto ring = Ring::make(std::move(mem), num_entries, entry_size);
	if (!ring) {
		errno = EINVAL;
		return nullptr;
	}
	auto *u = new (std::nothrow) mroce_uring{std::move(ring)};
	if (!u)
		errno = ENOMEM;
	return u;
}

void mroce_uring_unmap(struct mroce_uring *u)
{
	delete u;
}

int mroce_cq_poll(struct mroce_uring *u, int num_entries, struct ibv_wc *wc)
{
	Ring &r = *u->ring;
	std::lock_guard guard(r.lock());
	if (r.lost())
		return -EIO;
	uint32_t cons = r.load_consumer();
	const uint32_t prod = r.load_producer();
	if (prod - cons > r.num_entries())
		return -EIO;	// the kernel never publishes more than the ring holds
	int n = 0;
	for (; n < num_entries && cons != prod; ++n, ++cons) {
		mroce_cqe c;
		std::memcpy(&c, r.slot(cons), sizeof(c));
		mroce::decode_cqe(c, wc[n]);
	}
	if (n)
		r.store_consumer(cons);
	return n;
}

int mroce_cq_resize(struct mroce_uring *u, int cmd_fd, mroce_cq_resize_cmd cmd, void *arg)
{
	Ring &r = *u->ring;
	// Pollers wait until the switch is done; each of them published its
	// consumer index before it released the lock, so the kernel moves
	// exactly the CQEs not yet consumed.
	std::lock_guard guard(r.lock());
	if (r.lost())
		return EIO;
	const uint32_t cons = r.load_consumer();
	mroce_resize_cq_resp resp{};
	if (int err = cmd(arg, &resp))
		return err;	// nothing changed in the kernel
	// From here the kernel writes only the new ring.
	auto mem = mroce::MmapMemory::map(cmd_fd, resp.mmap_offset, resp.mmap_size);
	const int map_err = mem ? 0 : errno;
	auto fresh = Ring::make(std::move(mem), resp.num_entries, sizeof(mroce_cqe));
	// The kernel moved the CQEs to the same indices: the consumer
	// index carries over unchanged, nothing is skipped or seen twice.
	if (!fresh || fresh->load_consumer() != cons ||
	    fresh->load_producer() - cons > fresh->num_entries()) {
		r.set_lost();
		return map_err ? map_err : EIO;
	}
	r.swap_memory(*fresh);
	return 0;	// fresh now holds the old ring: unmapped here
}

int mroce_srq_resize(struct mroce_uring *u, int cmd_fd, mroce_srq_resize_cmd cmd, void *arg)
{
	Ring &r = *u->ring;
	// Posters wait until the switch is done: the producer index the
	// kernel reads once is final, every WQE below it is in the old ring.
	std::lock_guard guard(r.lock());
	if (r.lost())
		return EIO;
	const uint32_t prod = r.load_producer();
	mroce_modify_srq_resp resp{};
	if (int err = cmd(arg, &resp))
		return err;	// nothing changed in the kernel
	// From here the kernel reads only the new ring.
	auto mem = mroce::MmapMemory::map(cmd_fd, resp.mmap_offset, resp.mmap_size);
	const int map_err = mem ? 0 : errno;
	auto fresh = Ring::make(std::move(mem), resp.num_entries, resp.wqe_size);
	// The kernel moved the WQEs not yet taken to the same indices: the
	// producer index carries over, the consumer may have moved on since.
	if (!fresh || resp.wqe_size != r.entry_size() || fresh->load_producer() != prod ||
	    prod - fresh->load_consumer() > fresh->num_entries()) {
		r.set_lost();
		return map_err ? map_err : EIO;
	}
	r.swap_memory(*fresh);
	return 0;	// fresh now holds the old ring: unmapped here
}

static int sq_post(struct mroce_uring *u, const struct mroce_qp_limits *lim,
		   mroce_ah_num_fn ah_num, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr,
		   unsigned int *queued, bool bind_type1)
{
	*queued = 0;
	Ring &r = *u->ring;
	std::lock_guard guard(r.lock());
	uint32_t prod = r.load_producer();
	int err = 0;
	for (; wr; wr = wr->next) {
		if (prod - r.load_consumer() >= r.num_entries()) {
			err = ENOMEM;
			break;
		}
		err = mroce::encode_send(*wr, *lim, ah_num, {r.slot(prod), r.entry_size()},
					 bind_type1);
		if (err)
			break;
		++prod;
		++*queued;
	}
	if (*queued)
		r.store_producer(prod);
	if (err)
		*bad_wr = wr;
	return err;
}

int mroce_sq_post(struct mroce_uring *u, const struct mroce_qp_limits *lim,
		  mroce_ah_num_fn ah_num, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr,
		  unsigned int *queued)
{
	return sq_post(u, lim, ah_num, wr, bad_wr, queued, false);
}

int mroce_sq_post_bind1(struct mroce_uring *u, const struct mroce_qp_limits *lim,
			struct ibv_send_wr *wr, unsigned int *queued)
{
	struct ibv_send_wr *bad;

	wr->next = nullptr;
	return sq_post(u, lim, nullptr, wr, &bad, queued, true);
}

int mroce_rq_post(struct mroce_uring *u, const struct mroce_qp_limits *lim,
		  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	Ring &r = *u->ring;
	std::lock_guard guard(r.lock());
	if (r.lost()) {
		*bad_wr = wr;	// an SRQ whose resize could not be followed
		return EIO;
	}
	uint32_t prod = r.load_producer();
	const uint32_t start = prod;
	int err = 0;
	for (; wr; wr = wr->next) {
		if (prod - r.load_consumer() >= r.num_entries()) {
			err = ENOMEM;
			break;
		}
		err = mroce::encode_recv(*wr, *lim, {r.slot(prod), r.entry_size()});
		if (err)
			break;
		++prod;
	}
	if (prod != start)
		r.store_producer(prod);
	if (err)
		*bad_wr = wr;
	return err;
}

} // extern "C"
