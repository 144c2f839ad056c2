// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mroce_verify - end-to-end integrity and error-path checker for RC verbs.
//
// One process drives both ends of an RC connection between two RDMA devices
// (normally two mroce devices in two network namespaces joined by veth, or
// on any two hosts' devices visible to the process), through unmodified
// libibverbs.  It runs:
//   - a randomized integrity phase: SEND, SEND_WITH_IMM, RDMA_WRITE,
//     RDMA_WRITE_WITH_IMM, RDMA_READ, ATOMIC_FETCH_AND_ADD and
//     ATOMIC_CMP_AND_SWP of random sizes (1 B .. --max-size), random offsets
//     and 1..4 SGEs in both directions; every byte is compared on both ends,
//     and guard bytes around every target must stay untouched;
//   - a pipelined phase: many WRITEs and SENDs in flight, completions must
//     come back in posting order;
//   - error paths: bad rkey, out-of-bounds, missing access right, wrong PD,
//     too-small receive buffer, bad local lkey, RNR then a late receive,
//     flush after an error; each must give the completion status verbs
//     specifies and leave target memory unchanged;
//   - with --group-qps K, a congestion group phase: K more QP pairs to the
//     same peer, WRITEs on all of them at once, every byte checked; with
//     --debugfs DIR the QPs must share one group (DIR/DEV_A/ccgroups);
//     then RESET and re-connect, ERR with WRITEs in flight, and destroy in
//     mixed orders, after which the group holds nothing in flight.
//
// Usage: mroce_verify [--iters N] [--max-size BYTES] [--seed S]
//                     [--skip-errors] [--group-qps K [--debugfs DIR]]
//                     DEV_A GID_A DEV_B GID_B
// Output is KTAP; the exit status is 0 when every check passed.

#include <infiniband/verbs.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>

#include <chrono>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct CtxClose { void operator()(ibv_context *c) const { ibv_close_device(c); } };
struct PdFree { void operator()(ibv_pd *p) const { ibv_dealloc_pd(p); } };
struct CqFree { void operator()(ibv_cq *c) const { ibv_destroy_cq(c); } };
struct MrFree { void operator()(ibv_mr *m) const { ibv_dereg_mr(m); } };
struct QpFree { void operator()(ibv_qp *q) const { ibv_destroy_qp(q); } };
struct DevListFree { void operator()(ibv_device **l) const { ibv_free_device_list(l); } };
struct SrqFree { void operator()(ibv_srq *s) const { ibv_destroy_srq(s); } };

using Context = std::unique_ptr<ibv_context, CtxClose>;
using Pd = std::unique_ptr<ibv_pd, PdFree>;
using Cq = std::unique_ptr<ibv_cq, CqFree>;
using Mr = std::unique_ptr<ibv_mr, MrFree>;
using Qp = std::unique_ptr<ibv_qp, QpFree>;
using Srq = std::unique_ptr<ibv_srq, SrqFree>;

class Mapping {
public:
	explicit Mapping(size_t len)
		: len_(len), addr_(mmap(nullptr, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
	{
		if (addr_ == MAP_FAILED)
			throw std::runtime_error("mmap failed");
	}
	~Mapping() { munmap(addr_, len_); }
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;
	uint8_t *data() const { return static_cast<uint8_t *>(addr_); }
	size_t size() const { return len_; }

private:
	size_t len_;
	void *addr_;
};

class Ktap {
public:
	Ktap() { std::printf("KTAP version 1\n"); }
	void result(bool ok, const std::string &name, const std::string &why = "")
	{
		++n_;
		if (ok) {
			++passed_;
			std::printf("ok %d %s\n", n_, name.c_str());
		} else {
			std::printf("not ok %d %s\n", n_, name.c_str());
			if (!why.empty())
				std::printf("# %s\n", why.c_str());
		}
		std::fflush(stdout);
	}
	int finish()
	{
		std::printf("1..%d\n# %d passed, %d failed\n", n_, passed_, n_ - passed_);
		return passed_ == n_ ? 0 : 1;
	}

private:
	int n_ = 0, passed_ = 0;
};

Ktap ktap;

constexpr int kAccessAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr size_t kGuard = 64;
constexpr int kPollTimeoutMs = 60000;
constexpr uint64_t kSwap = 0x5555aaaa5555aaaaull;

// One end: device, PD, CQ, a large registered buffer and the QP.
struct End {
	std::string name;
	Context ctx;
	Pd pd;
	Cq cq;
	std::unique_ptr<Mapping> mem;
	Mr mr;
	Qp qp;
	ibv_gid gid{};
	int gid_index = 0;
};

Context open_device(const std::string &name)
{
	int n = 0;
	std::unique_ptr<ibv_device *, DevListFree> list(ibv_get_device_list(&n));
	if (!list)
		throw std::runtime_error("ibv_get_device_list failed");
	for (int i = 0; i < n; i++)
		if (name == ibv_get_device_name(list.get()[i]))
			return Context(ibv_open_device(list.get()[i]));
	throw std::runtime_error("no device " + name);
}

void setup_end(End &e, const std::string &dev, int gid_index, size_t mem_size)
{
	e.name = dev;
	e.ctx = open_device(dev);
	if (!e.ctx)
		throw std::runtime_error("cannot open " + dev);
	e.gid_index = gid_index;
	if (ibv_query_gid(e.ctx.get(), 1, gid_index, &e.gid))
		throw std::runtime_error("query_gid failed");
	e.pd.reset(ibv_alloc_pd(e.ctx.get()));
	e.cq.reset(ibv_create_cq(e.ctx.get(), 4096, nullptr, nullptr, 0));
	e.mem = std::make_unique<Mapping>(mem_size);
	e.mr.reset(ibv_reg_mr(e.pd.get(), e.mem->data(), mem_size, kAccessAll));
	if (!e.pd || !e.cq || !e.mr)
		throw std::runtime_error("cannot create PD/CQ/MR on " + dev);
}

Qp make_qp(End &e, ibv_srq *srq = nullptr)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = e.cq.get();
	ia.recv_cq = e.cq.get();
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 1024;
	ia.cap.max_recv_wr = 1024;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 64;
	return Qp(ibv_create_qp(e.pd.get(), &ia));
}

int qp_to_rts(ibv_qp *qp, const End &e, const ibv_gid &peer_gid, uint32_t peer_qpn,
	      uint8_t rnr_retry = 7)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = kAccessAll;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS))
		return errno;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer_gid;
	a.ah_attr.grh.sgid_index = e.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return errno;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.sq_psn = 0;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					       IBV_QP_MAX_QP_RD_ATOMIC))
		return errno;
	return 0;
}

int to_rts(End &e, const End &peer, uint8_t rnr_retry = 7)
{
	return qp_to_rts(e.qp.get(), e, peer.gid, peer.qp->qp_num, rnr_retry);
}

// (Re)create and connect the QP pair; CQs are drained first.  a_rnr_retry is
// a's verbs rnr_retry (7: retry forever).
bool connect(End &a, End &b, uint8_t a_rnr_retry = 7)
{
	a.qp.reset();
	b.qp.reset();
	ibv_wc wc[64];
	while (ibv_poll_cq(a.cq.get(), 64, wc) > 0) {
	}
	while (ibv_poll_cq(b.cq.get(), 64, wc) > 0) {
	}
	a.qp = make_qp(a);
	b.qp = make_qp(b);
	return a.qp && b.qp && !to_rts(a, b, a_rnr_retry) && !to_rts(b, a);
}

// Wait for one completion on e's CQ.
bool poll_one(End &e, ibv_wc &wc, int timeout_ms = kPollTimeoutMs)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		int n = ibv_poll_cq(e.cq.get(), 1, &wc);
		if (n == 1)
			return true;
		if (n < 0 || std::chrono::steady_clock::now() > deadline)
			return false;
	}
}

std::string wc_str(const ibv_wc &wc)
{
	return std::string(ibv_wc_status_str(wc.status)) + " opcode " + std::to_string(wc.opcode) +
	       " wr_id " + std::to_string(wc.wr_id) + " len " + std::to_string(wc.byte_len);
}

// Split [addr, addr+len) into n SGEs (n >= 1, pieces may be empty only if len < n).
std::vector<ibv_sge> sges_for(uint8_t *addr, uint32_t len, uint32_t lkey, int n, std::mt19937_64 &rng)
{
	std::vector<ibv_sge> v;
	uint32_t left = len;
	for (int i = 0; i < n; i++) {
		uint32_t piece = i == n - 1 ? left : (left ? uint32_t(rng() % (left + 1)) : 0);
		v.push_back({reinterpret_cast<uintptr_t>(addr), piece, lkey});
		addr += piece;
		left -= piece;
	}
	return v;
}

int post_send(End &e, ibv_wr_opcode op, std::vector<ibv_sge> &sg, uint64_t wr_id,
	      uint64_t raddr = 0, uint32_t rkey = 0, uint32_t imm = 0, uint64_t cmp_add = 0,
	      uint64_t swap = 0)
{
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = sg.data();
	wr.num_sge = int(sg.size());
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(imm);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(e.qp.get(), &wr, &bad);
}

int post_recv(End &e, std::vector<ibv_sge> &sg, uint64_t wr_id)
{
	ibv_recv_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.sg_list = sg.data();
	wr.num_sge = int(sg.size());
	return ibv_post_recv(e.qp.get(), &wr, &bad);
}

void fill_random(uint8_t *p, size_t n, std::mt19937_64 &rng)
{
	for (size_t i = 0; i < n; i++)
		p[i] = uint8_t(rng());
}

// Buffer layout of each end's registered memory:
//   [0, half): source area; [half, size): target area (guards around targets).
struct Layout {
	size_t half;
	size_t size;
};

// ---- integrity phase ---------------------------------------------------------

struct Stats {
	uint64_t ops = 0, bytes = 0, mismatches = 0, guard_hits = 0, errors = 0;
};

uint32_t random_size(std::mt19937_64 &rng, uint32_t max)
{
	// log-uniform: as many tiny as huge transfers
	int bits = 1 + int(rng() % 25);
	uint64_t v = 1 + rng() % (uint64_t(1) << bits);
	return uint32_t(std::min<uint64_t>(v, max));
}

bool guards_clean(const uint8_t *p, size_t off, size_t len, size_t total)
{
	for (size_t i = off >= kGuard ? off - kGuard : 0; i < off; i++)
		if (p[i] != 0xa5)
			return false;
	for (size_t i = off + len; i < std::min(total, off + len + kGuard); i++)
		if (p[i] != 0xa5)
			return false;
	return true;
}

void integrity(End &a, End &b, const Layout &lay, int iters, uint32_t max_size, uint64_t seed)
{
	std::mt19937_64 rng(seed);
	Stats st;
	auto t0 = std::chrono::steady_clock::now();
	std::string first_err;
	for (int it = 0; it < iters; it++) {
		bool a2b = rng() & 1;
		End &src = a2b ? a : b;
		End &dst = a2b ? b : a;
		int kind = int(rng() % 7);
		uint32_t len = random_size(rng, max_size);
		uint32_t room = uint32_t(lay.size - lay.half - 2 * kGuard);
		len = std::min(len, room);
		size_t soff = rng() % (lay.half - len + 1);
		size_t doff = lay.half + kGuard + rng() % (room - len + 1);
		uint8_t *s = src.mem->data(), *d = dst.mem->data();
		int nsge = 1 + int(rng() % 4);
		uint32_t imm = uint32_t(rng());
		bool ok = true;
		std::string why;
		ibv_wc wc{};

		if (kind == 5 || kind == 6) {	// atomics: 8 bytes, aligned
			len = 8;
			doff &= ~size_t(7);
			soff &= ~size_t(7);
		}
		// Prepare: random source, guard-filled target.
		fill_random(s + soff, len, rng);
		std::memset(d + (doff - kGuard), 0xa5, len + 2 * kGuard);
		uint64_t before = 0, cmp = 0;
		if (kind == 5 || kind == 6) {
			before = rng();
			std::memcpy(d + doff, &before, 8);
		}
		uint64_t raddr = reinterpret_cast<uintptr_t>(d + doff);
		std::vector<ibv_sge> sg = sges_for(s + soff, len, src.mr->lkey, kind >= 5 ? 1 : nsge, rng);
		int rc = 0;
		bool recv_side = false;
		switch (kind) {
		case 0:
		case 1: {	// SEND / SEND_IMM into a receive of exactly len
			std::vector<ibv_sge> rs = sges_for(d + doff, len, dst.mr->lkey, 1 + int(rng() % 4), rng);
			rc = post_recv(dst, rs, 1000 + it);
			if (!rc)
				rc = post_send(src, kind ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, sg, it, 0, 0, imm);
			recv_side = true;
			break;
		}
		case 2:
			rc = post_send(src, IBV_WR_RDMA_WRITE, sg, it, raddr, dst.mr->rkey);
			break;
		case 3: {
			std::vector<ibv_sge> none;
			rc = post_recv(dst, none, 1000 + it);
			if (!rc)
				rc = post_send(src, IBV_WR_RDMA_WRITE_WITH_IMM, sg, it, raddr, dst.mr->rkey, imm);
			recv_side = true;
			break;
		}
		case 4: {	// READ dst -> src: the remote target area is the data
			fill_random(d + doff, len, rng);
			std::memset(s + soff, 0, len);
			rc = post_send(src, IBV_WR_RDMA_READ, sg, it, raddr, dst.mr->rkey);
			break;
		}
		case 5:
			rc = post_send(src, IBV_WR_ATOMIC_FETCH_AND_ADD, sg, it, raddr, dst.mr->rkey, 0, 12345);
			break;
		case 6:
			cmp = (rng() & 1) ? before : before + 1;
			rc = post_send(src, IBV_WR_ATOMIC_CMP_AND_SWP, sg, it, raddr, dst.mr->rkey, 0,
				       cmp, kSwap);
			break;
		}
		if (rc) {
			ok = false;
			why = "post failed: " + std::string(std::strerror(rc));
		}
		if (ok && (!poll_one(src, wc) || wc.status != IBV_WC_SUCCESS || wc.wr_id != uint64_t(it))) {
			ok = false;
			why = "requester completion: " + wc_str(wc);
		}
		if (ok && recv_side) {
			if (!poll_one(dst, wc) || wc.status != IBV_WC_SUCCESS ||
			    wc.wr_id != uint64_t(1000 + it)) {
				ok = false;
				why = "receive completion: " + wc_str(wc);
			} else if (kind == 0 || kind == 1) {
				if (wc.byte_len != len || wc.opcode != IBV_WC_RECV ||
				    bool(wc.wc_flags & IBV_WC_WITH_IMM) != (kind == 1) ||
				    (kind == 1 && be32toh(wc.imm_data) != imm)) {
					ok = false;
					why = "receive completion fields: " + wc_str(wc);
				}
			} else if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
				   be32toh(wc.imm_data) != imm) {
				ok = false;
				why = "WRITE_WITH_IMM completion fields: " + wc_str(wc);
			}
		}
		if (ok) {
			bool data_ok;
			if (kind == 4) {
				data_ok = !std::memcmp(s + soff, d + doff, len);
			} else if (kind == 5 || kind == 6) {
				uint64_t orig, now;
				std::memcpy(&orig, s + soff, 8);
				std::memcpy(&now, d + doff, 8);
				uint64_t want = kind == 5 ? before + 12345 :
						cmp == before ? kSwap : before;
				data_ok = orig == before && now == want;
			} else {
				data_ok = !std::memcmp(s + soff, d + doff, len);
			}
			if (!data_ok) {
				st.mismatches++;
				ok = false;
				why = "data mismatch";
			}
			if (kind != 4 && !guards_clean(d, doff, len, lay.size)) {
				st.guard_hits++;
				ok = false;
				why = "bytes written outside the target";
			}
		}
		st.ops++;
		st.bytes += len;
		if (!ok) {
			st.errors++;
			if (first_err.empty())
				first_err = "op " + std::to_string(it) + " kind " + std::to_string(kind) +
					    " len " + std::to_string(len) + ": " + why;
			if (!connect(a, b))
				break;
		}
	}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	std::printf("# integrity: %" PRIu64 " ops, %" PRIu64 " bytes in %.2f s (%.2f Mbit/s), "
		    "%" PRIu64 " errors, %" PRIu64 " mismatches, %" PRIu64 " guard hits\n",
		    st.ops, st.bytes, secs, secs > 0 ? st.bytes * 8 / secs / 1e6 : 0.0, st.errors,
		    st.mismatches, st.guard_hits);
	ktap.result(st.errors == 0 && st.ops == uint64_t(iters),
		    "integrity: " + std::to_string(iters) + " random operations, every byte checked",
		    first_err);
}

// ---- pipelined phase ---------------------------------------------------------

void pipelined(End &a, End &b, const Layout &lay, uint64_t seed)
{
	std::mt19937_64 rng(seed);
	constexpr uint32_t kLen = 16384;
	/* as many as fit both areas, up to 256 */
	const int kOps = int(std::min<size_t>(256, (lay.size - lay.half) / kLen));
	uint8_t *s = a.mem->data(), *d = b.mem->data();
	fill_random(s, size_t(kOps) * kLen, rng);
	std::memset(d + lay.half, 0, size_t(kOps) * kLen);
	int rc = 0, posted = 0;
	for (int i = 0; i < kOps && !rc; i++, posted++) {
		std::vector<ibv_sge> sg{{reinterpret_cast<uintptr_t>(s + size_t(i) * kLen), kLen, a.mr->lkey}};
		if (i % 2) {
			std::vector<ibv_sge> rs{{reinterpret_cast<uintptr_t>(d + lay.half + size_t(i) * kLen),
						 kLen, b.mr->lkey}};
			rc = post_recv(b, rs, i);
			if (!rc)
				rc = post_send(a, IBV_WR_SEND, sg, i);
		} else {
			rc = post_send(a, IBV_WR_RDMA_WRITE, sg, i,
				       reinterpret_cast<uintptr_t>(d + lay.half + size_t(i) * kLen), b.mr->rkey);
		}
	}
	bool ordered = true;
	std::string why = rc ? "post failed: " + std::string(std::strerror(rc)) : "";
	ibv_wc wc{};
	for (int i = 0; i < posted; i++) {
		if (!poll_one(a, wc) || wc.status != IBV_WC_SUCCESS || wc.wr_id != uint64_t(i)) {
			ordered = false;
			why = "completion " + std::to_string(i) + ": " + wc_str(wc);
			break;
		}
	}
	for (int i = 1; ordered && i < posted; i += 2) {
		if (!poll_one(b, wc) || wc.status != IBV_WC_SUCCESS || wc.wr_id != uint64_t(i)) {
			ordered = false;
			why = "receive completion " + std::to_string(i) + ": " + wc_str(wc);
		}
	}
	bool same = ordered && !std::memcmp(s, d + lay.half, size_t(posted) * kLen);
	ktap.result(!rc && ordered && same,
		    "pipelined: " + std::to_string(kOps) + " WRITE/SEND of 16 KiB in flight, completions in order, data intact",
		    same || !ordered ? why : "data mismatch");
	connect(a, b);
}

// ---- error paths ---------------------------------------------------------------

// Post one WR on a fresh connection and expect status on the requester.
void expect_status(End &a, End &b, const std::string &name, ibv_wr_opcode op,
		   std::vector<ibv_sge> sg, uint64_t raddr, uint32_t rkey, ibv_wc_status want,
		   bool check_flush = true)
{
	if (!connect(a, b)) {
		ktap.result(false, name, "cannot connect");
		return;
	}
	int rc = op == IBV_WR_ATOMIC_FETCH_AND_ADD ?
		 post_send(a, op, sg, 1, raddr, rkey, 0, 1) : post_send(a, op, sg, 1, raddr, rkey);
	ibv_wc wc{};
	bool ok = !rc && poll_one(a, wc) && wc.status == want && wc.wr_id == 1;
	std::string why = rc ? "post: " + std::string(std::strerror(rc)) : "got " + wc_str(wc);
	if (ok && check_flush) {
		// The QP is in error now: what follows is flushed.
		std::vector<ibv_sge> one{{reinterpret_cast<uintptr_t>(a.mem->data()), 8, a.mr->lkey}};
		rc = post_send(a, IBV_WR_RDMA_WRITE, one, 2, reinterpret_cast<uintptr_t>(b.mem->data()),
			       b.mr->rkey);
		if (!rc && (!poll_one(a, wc) || wc.status != IBV_WC_WR_FLUSH_ERR || wc.wr_id != 2)) {
			ok = false;
			why = "next WR not flushed: " + wc_str(wc);
		}
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};
		if (!ibv_query_qp(a.qp.get(), &qa, IBV_QP_STATE, &qi) && qa.qp_state != IBV_QPS_ERR) {
			ok = false;
			why = "QP state " + std::to_string(qa.qp_state) + " after the error, not ERR";
		}
	}
	ktap.result(ok, name, why);
}

void errors(End &a, End &b, const Layout &lay)
{
	uint8_t *dst = b.mem->data() + lay.half + kGuard;
	uint64_t raddr = reinterpret_cast<uintptr_t>(dst);
	std::vector<ibv_sge> sg{{reinterpret_cast<uintptr_t>(a.mem->data()), 4096, a.mr->lkey}};
	std::memset(dst - kGuard, 0xa5, 4096 + 2 * kGuard);

	expect_status(a, b, "WRITE with a bad rkey: remote access error", IBV_WR_RDMA_WRITE, sg,
		      raddr, b.mr->rkey ^ 0x5a5a00, IBV_WC_REM_ACCESS_ERR);
	expect_status(a, b, "WRITE past the end of the region: remote access error",
		      IBV_WR_RDMA_WRITE, sg,
		      reinterpret_cast<uintptr_t>(b.mem->data()) + lay.size - 2048, b.mr->rkey,
		      IBV_WC_REM_ACCESS_ERR);
	expect_status(a, b, "READ with a bad rkey: remote access error", IBV_WR_RDMA_READ, sg, raddr,
		      b.mr->rkey + 1, IBV_WC_REM_ACCESS_ERR);
	std::vector<ibv_sge> a8{{reinterpret_cast<uintptr_t>(a.mem->data()), 8, a.mr->lkey}};
	expect_status(a, b, "atomic with a bad rkey: remote access error",
		      IBV_WR_ATOMIC_FETCH_AND_ADD, a8, raddr, b.mr->rkey + 1, IBV_WC_REM_ACCESS_ERR);

	{	// a region without remote write access
		Mr ro(ibv_reg_mr(b.pd.get(), dst, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
		if (ro)
			expect_status(a, b, "WRITE to a region without REMOTE_WRITE: remote access error",
				      IBV_WR_RDMA_WRITE, sg, raddr, ro->rkey, IBV_WC_REM_ACCESS_ERR);
		else
			ktap.result(false, "WRITE to a region without REMOTE_WRITE", "reg_mr failed");
	}
	{	// a region of another PD
		Pd pd2(ibv_alloc_pd(b.ctx.get()));
		Mr other(pd2 ? ibv_reg_mr(pd2.get(), dst, 4096, kAccessAll) : nullptr);
		if (other)
			expect_status(a, b, "READ of a region in another PD: remote access error",
				      IBV_WR_RDMA_READ, sg, raddr, other->rkey, IBV_WC_REM_ACCESS_ERR);
		else
			ktap.result(false, "READ of a region in another PD", "alloc_pd/reg_mr failed");
		connect(a, b);	// the QP must go before its region's PD
	}
	std::vector<ibv_sge> bad_lkey{{reinterpret_cast<uintptr_t>(a.mem->data()), 64,
				       a.mr->lkey ^ 0x100}};
	expect_status(a, b, "SEND from a bad lkey: local protection error", IBV_WR_SEND, bad_lkey, 0,
		      0, IBV_WC_LOC_PROT_ERR);
	bool untouched = guards_clean(dst - kGuard, kGuard, 4096, 4096 + 2 * kGuard);
	for (size_t i = 0; i < 4096; i++)
		untouched &= dst[i] == 0xa5;
	ktap.result(untouched, "failed WRITEs left the target region untouched");

	// SEND larger than the posted receive.
	if (connect(a, b)) {
		std::vector<ibv_sge> rs{{raddr, 100, b.mr->lkey}};
		int rc = post_recv(b, rs, 7);
		if (!rc)
			rc = post_send(a, IBV_WR_SEND, sg, 1);
		ibv_wc wc{};
		bool ok = !rc && poll_one(a, wc) && wc.status == IBV_WC_REM_INV_REQ_ERR;
		ktap.result(ok, "SEND larger than the receive buffer: remote invalid request", wc_str(wc));
		bool clean = true;
		for (size_t i = 100; i < 4096; i++)
			clean &= dst[i] == 0xa5;
		ktap.result(clean, "oversized SEND wrote nothing past the receive buffer");
	}
	// RNR: the SEND waits for a receive posted late, then succeeds.
	if (connect(a, b)) {
		std::vector<ibv_sge> s64{{reinterpret_cast<uintptr_t>(a.mem->data()), 64, a.mr->lkey}};
		std::memcpy(a.mem->data(), "receiver not ready, then ready", 31);
		int rc = post_send(a, IBV_WR_SEND, s64, 1);
		ibv_wc wc{};
		bool early = poll_one(a, wc, 300);
		std::vector<ibv_sge> rs{{raddr, 64, b.mr->lkey}};
		if (!rc)
			rc = post_recv(b, rs, 9);
		bool ok = !rc && !early && poll_one(a, wc) && wc.status == IBV_WC_SUCCESS &&
			  poll_one(b, wc) && wc.status == IBV_WC_SUCCESS &&
			  !std::memcmp(dst, "receiver not ready, then ready", 31);
		ktap.result(ok, "SEND before any receive: RNR, retried, delivered once posted",
			    early ? "completed before a receive was posted" : wc_str(wc));
	}
	// RNR with a finite budget: no receive ever comes, the SEND fails.
	if (connect(a, b, 2)) {
		std::vector<ibv_sge> s64{{reinterpret_cast<uintptr_t>(a.mem->data()), 64, a.mr->lkey}};
		int rc = post_send(a, IBV_WR_SEND, s64, 3);
		ibv_wc wc{};
		bool ok = !rc && poll_one(a, wc) && wc.status == IBV_WC_RNR_RETRY_EXC_ERR &&
			  wc.wr_id == 3;
		ktap.result(ok, "SEND with no receive and rnr_retry 2: RNR retry exceeded",
			    rc ? "post: " + std::string(std::strerror(rc)) : wc_str(wc));
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};
		ok = !ibv_query_qp(a.qp.get(), &qa, IBV_QP_STATE, &qi) && qa.qp_state == IBV_QPS_ERR;
		ktap.result(ok, "rnr_retry exceeded: the QP is in error",
			    "state " + std::to_string(qa.qp_state));
	}
	// Provider-side argument checks.
	if (connect(a, b)) {
		std::vector<ibv_sge> odd{{reinterpret_cast<uintptr_t>(a.mem->data()), 8, a.mr->lkey}};
		int rc = post_send(a, IBV_WR_ATOMIC_FETCH_AND_ADD, odd, 1, raddr + 4, b.mr->rkey, 0, 1);
		ktap.result(rc == EINVAL, "misaligned atomic is refused at post with EINVAL",
			    "post returned " + std::to_string(rc));
		std::vector<ibv_sge> many(9, odd[0]);
		rc = post_send(a, IBV_WR_SEND, many, 1);
		ktap.result(rc == EINVAL, "more SGEs than max_send_sge is refused with EINVAL",
			    "post returned " + std::to_string(rc));
	}
}


// ---- shared receive queue ------------------------------------------------------

// Wait up to timeout_ms for an async event of type want on ctx.
bool wait_async(ibv_context *ctx, ibv_event_type want, int timeout_ms)
{
	pollfd p{ctx->async_fd, POLLIN, 0};
	int flags = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
	while (std::chrono::steady_clock::now() < deadline) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		ibv_async_event ev;
		if (ibv_get_async_event(ctx, &ev))
			continue;
		ibv_event_type t = ev.event_type;
		ibv_ack_async_event(&ev);
		if (t == want)
			return true;
	}
	return false;
}

void srq_phase(End &a, End &b, const Layout &lay)
{
	ibv_srq_init_attr si{};
	si.attr.max_wr = 16;
	si.attr.max_sge = 2;
	Srq srq(ibv_create_srq(b.pd.get(), &si));
	ktap.result(bool(srq), "create_srq", srq ? "" : std::strerror(errno));
	if (!srq)
		return;
	ibv_srq_attr sa{};
	sa.srq_limit = 1000;
	ktap.result(ibv_modify_srq(srq.get(), &sa, IBV_SRQ_LIMIT) == EINVAL,
		    "modify_srq: a limit above max_wr is EINVAL");
	sa.max_wr = 64;
	ibv_srq_attr grown{};
	ktap.result(ibv_modify_srq(srq.get(), &sa, IBV_SRQ_MAX_WR) == 0 &&
			    !ibv_query_srq(srq.get(), &grown) && grown.max_wr == 64,
		    "modify_srq: an empty SRQ grows to 64 (test_srq_cq_ex.sh covers resizing)");
	// Two QPs of b share the SRQ; a's two QPs send to them.

	a.qp.reset();
	b.qp.reset();
	Qp bq[2] = {make_qp(b, srq.get()), make_qp(b, srq.get())};
	Qp aq[2] = {make_qp(a), make_qp(a)};
	bool ok = bq[0] && bq[1] && aq[0] && aq[1];
	for (int i = 0; ok && i < 2; i++) {
		a.qp = std::move(aq[i]);
		b.qp = std::move(bq[i]);
		ok = !to_rts(a, b) && !to_rts(b, a);
		aq[i] = std::move(a.qp);
		bq[i] = std::move(b.qp);
	}
	ktap.result(ok, "two RC QPs attached to one SRQ reach RTS");
	if (!ok)
		return;
	uint8_t *dst = b.mem->data() + lay.half;
	for (int i = 0; i < 8; i++) {
		ibv_sge sge{reinterpret_cast<uintptr_t>(dst + i * 4096), 4096, b.mr->lkey};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = 100 + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ok &= !ibv_post_srq_recv(srq.get(), &wr, &bad);
	}
	sa.srq_limit = 4;
	ok &= !ibv_modify_srq(srq.get(), &sa, IBV_SRQ_LIMIT);
	ktap.result(ok, "post 8 receives to the SRQ and arm a limit of 4");
	std::mt19937_64 rng(77);
	fill_random(a.mem->data(), 5 * 4096, rng);
	ibv_wc wc{};
	int sent = 0, recvd = 0;
	std::vector<uint64_t> ids;
	for (int i = 0; i < 5; i++) {
		ibv_sge sge{reinterpret_cast<uintptr_t>(a.mem->data() + i * 4096), 4096, a.mr->lkey};
		ibv_send_wr wr{}, *bad;
		wr.wr_id = i;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_send(aq[i % 2].get(), &wr, &bad))
			break;
		if (poll_one(a, wc) && wc.status == IBV_WC_SUCCESS)
			sent++;
		if (poll_one(b, wc) && wc.status == IBV_WC_SUCCESS && wc.byte_len == 4096) {
			recvd++;
			ids.push_back(wc.wr_id);
		}
	}
	// WQEs are consumed in order, whatever QP the message came to.
	bool in_order = ids.size() == 5;
	for (size_t i = 0; in_order && i < ids.size(); i++)
		in_order = ids[i] == 100 + i;
	bool same = in_order && !std::memcmp(a.mem->data(), dst, 5 * 4096);
	ktap.result(sent == 5 && recvd == 5 && same,
		    "5 SENDs over two QPs land in the SRQ's WQEs in order, bytes intact",
		    "sent " + std::to_string(sent) + " received " + std::to_string(recvd));
	ktap.result(wait_async(b.ctx.get(), IBV_EVENT_SRQ_LIMIT_REACHED, 5000),
		    "SRQ limit reached event after the 5th receive (3 left < 4)");
	ibv_srq_attr q{};
	ktap.result(!ibv_query_srq(srq.get(), &q) && q.srq_limit == 0 && q.max_wr >= 16,
		    "query_srq: the limit disarmed itself",
		    "limit " + std::to_string(q.srq_limit) + " max_wr " + std::to_string(q.max_wr));
	ibv_qp_init_attr qi{};
	ibv_qp_attr qa{};
	ibv_query_qp(bq[0].get(), &qa, IBV_QP_CAP, &qi);
	ibv_recv_wr rwr{}, *rbad;
	ktap.result(ibv_post_recv(bq[0].get(), &rwr, &rbad) != 0,
		    "post_recv on a QP with an SRQ is refused");
	bq[0].reset();
	bq[1].reset();
	aq[0].reset();
	aq[1].reset();

}


// ---- congestion group ----------------------------------------------------------

int post_write(ibv_qp *qp, uint8_t *src, uint32_t len, uint32_t lkey, uint64_t wr_id,
	       uint64_t raddr, uint32_t rkey)
{
	ibv_sge sg{reinterpret_cast<uintptr_t>(src), len, lkey};
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

// One line of DIR/DEV/ccgroups: id sgid dgid members busy waiting cwnd
// inflight kicks qpns.
struct GroupLine {
	int members = -1;
	uint64_t inflight = 0;
	std::set<uint32_t> qpns;
};

// The group of dev that holds qpn (members -1: none); the file is echoed
// as diagnostics when show.
GroupLine group_of(const std::string &dir, const std::string &dev, uint32_t qpn, bool show)
{
	std::ifstream in(dir + "/" + dev + "/ccgroups");
	std::string line;
	GroupLine found;
	while (std::getline(in, line)) {
		if (show)
			std::printf("# %s ccgroups: %s\n", dev.c_str(), line.c_str());
		std::istringstream ls(line);
		std::string id, sgid, dgid, members, busy, waiting, cwnd, inflight, kicks, qpns;
		if (!(ls >> id >> sgid >> dgid >> members >> busy >> waiting >> cwnd >> inflight >>
		      kicks >> qpns) || id == "id")
			continue;
		GroupLine g;
		g.members = std::atoi(members.c_str());
		g.inflight = std::strtoull(inflight.c_str(), nullptr, 0);
		std::istringstream qs(qpns);
		for (std::string q; std::getline(qs, q, ',');)
			if (q != "-")
				g.qpns.insert(uint32_t(std::strtoul(q.c_str(), nullptr, 0)));
		if (g.qpns.count(qpn))
			found = g;
	}
	return found;
}

// Poll n completions of e's CQ; false on a timeout or, when ok_only, any
// status but success.
bool poll_n(End &e, int n, bool ok_only, std::string &why)
{
	ibv_wc wc{};
	for (int i = 0; i < n; i++) {
		if (!poll_one(e, wc)) {
			why = "completion " + std::to_string(i) + " of " + std::to_string(n) + " missing";
			return false;
		}
		if (ok_only && wc.status != IBV_WC_SUCCESS) {
			why = "completion " + std::to_string(i) + ": " + wc_str(wc);
			return false;
		}
	}
	return true;
}

void group_phase(End &a, End &b, const Layout &lay, int k, const std::string &dbg, uint64_t seed)
{
	constexpr uint32_t kLen = 16384;
	const int per = int(std::min<size_t>(16, (lay.size - lay.half) / kLen / size_t(k)));
	std::mt19937_64 rng(seed);
	std::vector<Qp> qa, qb;
	bool ok = per > 0;
	std::string why = ok ? "" : "--max-size too small for the group phase";
	for (int i = 0; ok && i < k; i++) {
		qa.push_back(make_qp(a));
		qb.push_back(make_qp(b));
		ok = qa.back() && qb.back() &&
		     !qp_to_rts(qa.back().get(), a, b.gid, qb.back()->qp_num) &&
		     !qp_to_rts(qb.back().get(), b, a.gid, qa.back()->qp_num);
		if (!ok)
			why = "QP pair " + std::to_string(i) + " did not connect";
	}
	ktap.result(ok, "group: " + std::to_string(k) + " more QP pairs to the same peer", why);
	if (!ok)
		return;

	/* every QP writes per 16 KiB messages at once, interleaved */
	uint8_t *s = a.mem->data(), *d = b.mem->data() + lay.half;
	size_t total = size_t(k) * size_t(per) * kLen;
	fill_random(s, total, rng);
	std::memset(d, 0, total);
	int rc = 0;
	for (int j = 0; j < per && !rc; j++)
		for (int i = 0; i < k && !rc; i++) {
			size_t off = (size_t(i) * size_t(per) + size_t(j)) * kLen;
			rc = post_write(qa[size_t(i)].get(), s + off, kLen, a.mr->lkey, off,
					reinterpret_cast<uintptr_t>(d + off), b.mr->rkey);
		}
	why = rc ? "post failed: " + std::string(std::strerror(rc)) : "";
	ok = !rc && poll_n(a, k * per, true, why);
	if (ok && std::memcmp(s, d, total)) {
		ok = false;
		why = "data mismatch";
	}
	ktap.result(ok, "group: " + std::to_string(k) + " QPs x " + std::to_string(per) +
			" WRITEs of 16 KiB at once, every byte checked", why);

	if (!dbg.empty()) {
		GroupLine g = group_of(dbg, a.name, qa[0]->qp_num, true);
		bool all = g.members >= k;
		for (auto &q : qa)
			all = all && g.qpns.count(q->qp_num);
		ktap.result(all, "group: debugfs shows the " + std::to_string(k) +
				 " QPs in one congestion group",
			    "members " + std::to_string(g.members));
	}

	/* RESET leaves the group; connecting again joins it, and works */
	ibv_qp_attr at{};
	at.qp_state = IBV_QPS_RESET;
	ok = !ibv_modify_qp(qa[0].get(), &at, IBV_QP_STATE);
	if (ok && !dbg.empty())
		ok = group_of(dbg, a.name, qa[0]->qp_num, false).members < 0;
	at.qp_state = IBV_QPS_RESET;
	ok = ok && !ibv_modify_qp(qb[0].get(), &at, IBV_QP_STATE) &&
	     !qp_to_rts(qa[0].get(), a, b.gid, qb[0]->qp_num) &&
	     !qp_to_rts(qb[0].get(), b, a.gid, qa[0]->qp_num);
	why = ok ? "" : "RESET and re-connect failed (or the QP stayed in its group)";
	if (ok) {
		std::memset(d, 0, kLen);
		ok = !post_write(qa[0].get(), s, kLen, a.mr->lkey, 0,
				 reinterpret_cast<uintptr_t>(d), b.mr->rkey) &&
		     poll_n(a, 1, true, why) && !std::memcmp(s, d, kLen);
		if (!ok && why.empty())
			why = "data mismatch after re-connect";
	}
	if (ok && !dbg.empty() && group_of(dbg, a.name, qa[0]->qp_num, false).members < k) {
		ok = false;
		why = "the re-connected QP is not back in the group";
	}
	ktap.result(ok, "group: RESET leaves the group, re-connect joins it again", why);

	/* ERR with WRITEs in flight: the member gives its window back */
	int posted = 0;
	if (k > 1) {
		for (int j = 0; j < per; j++, posted++)
			if (post_write(qa[1].get(), s, kLen, a.mr->lkey, 7000 + uint64_t(j),
				       reinterpret_cast<uintptr_t>(d), b.mr->rkey))
				break;
		at.qp_state = IBV_QPS_ERR;
		ok = !ibv_modify_qp(qa[1].get(), &at, IBV_QP_STATE) && poll_n(a, posted, false, why);
		ktap.result(ok, "group: a member moved to ERR with WRITEs in flight completes them", why);
	}

	/* destroy in mixed orders: b's in reverse, then a's odd, then even */
	for (size_t i = qb.size(); i-- > 0;)
		qb[i].reset();
	for (size_t i = 1; i < qa.size(); i += 2)
		qa[i].reset();
	if (!dbg.empty() && qa.size() > 2) {
		GroupLine g = group_of(dbg, a.name, qa[0]->qp_num, false);
		ktap.result(g.members == int((qa.size() + 1) / 2) + 1,
			    "group: destroying members shrinks the group",
			    "members " + std::to_string(g.members));
	}
	for (size_t i = 0; i < qa.size(); i += 2)
		qa[i].reset();
	if (!dbg.empty()) {
		GroupLine g = group_of(dbg, a.name, a.qp->qp_num, true);
		ktap.result(g.members == 1 && g.inflight == 0,
			    "group: after destroy only the first QP is left, nothing in flight",
			    "members " + std::to_string(g.members) + " inflight " +
				    std::to_string(g.inflight));
	}
}

} // namespace

int main(int argc, char **argv)
{
	int iters = 200;
	uint32_t max_size = 16u << 20;
	uint64_t seed = 1;
	bool skip_errors = false;
	int group_qps = 0;
	std::string debugfs;
	std::vector<std::string> pos;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--iters" && i + 1 < argc)
			iters = std::atoi(argv[++i]);
		else if (a == "--max-size" && i + 1 < argc)
			max_size = uint32_t(std::strtoul(argv[++i], nullptr, 0));
		else if (a == "--seed" && i + 1 < argc)
			seed = std::strtoull(argv[++i], nullptr, 0);
		else if (a == "--skip-errors")
			skip_errors = true;
		else if (a == "--group-qps" && i + 1 < argc)
			group_qps = std::atoi(argv[++i]);
		else if (a == "--debugfs" && i + 1 < argc)
			debugfs = argv[++i];
		else
			pos.push_back(a);
	}
	if (pos.size() != 4 || max_size < 8) {
		std::fprintf(stderr, "usage: %s [--iters N] [--max-size BYTES] [--seed S] "
				     "[--skip-errors] [--group-qps K [--debugfs DIR]] "
				     "DEV_A GID_A DEV_B GID_B\n", argv[0]);
		return 2;
	}
	try {
		End a, b;
		Layout lay{size_t(max_size) + 4096, 2 * (size_t(max_size) + 4096)};
		setup_end(a, pos[0], std::atoi(pos[1].c_str()), lay.size);
		setup_end(b, pos[2], std::atoi(pos[3].c_str()), lay.size);
		ktap.result(connect(a, b), "connect an RC QP pair " + pos[0] + " <-> " + pos[2]);
		integrity(a, b, lay, iters, max_size, seed);
		pipelined(a, b, lay, seed + 1);
		if (group_qps > 0)
			group_phase(a, b, lay, group_qps, debugfs, seed + 2);
		if (!skip_errors) {
			errors(a, b, lay);
			srq_phase(a, b, lay);
		}
	} catch (const std::exception &e) {
		ktap.result(false, "setup", e.what());
	}
	return ktap.finish();
}
