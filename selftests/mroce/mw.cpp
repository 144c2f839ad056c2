// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mw - memory windows and user-space invalidation end to end through the
// mroce provider and kernel (test_mw.sh).  Device B holds the memory, its
// regions and windows; device A is the peer that accesses them through
// the windows' rkeys.  One process sees both sides' memory, so every
// access is checked byte by byte, guard bytes around the window included.
// A pair whose QPs an error moved to the error state is not reused.
//
//   caps        ibv_query_device reports MEM_WINDOW, MEM_WINDOW_TYPE_2B,
//               max_mw, and not MEM_MGT_EXTENSIONS;
//   type 1      ibv_bind_mw (IBV_WC_BIND_MW, the rkey's key byte changes,
//               its index stays); WRITE, READ and fetch-and-add through
//               the window land inside it only; an access past its end
//               fails with IBV_WC_REM_ACCESS_ERR; a rebind to another
//               range with READ only kills the old rkey and refuses
//               WRITEs; a zero-length bind unbinds it;
//   type 2      IBV_WR_BIND_MW by ibv_post_send and ibv_wr_bind_mw; the
//               window serves the QP it was bound through only (another QP
//               of the same PD gets IBV_WC_REM_ACCESS_ERR); IBV_WR_LOCAL_INV
//               (ibv_post_send and ibv_wr_local_inv) and SEND_WITH_INV from
//               the peer (IBV_WC_WITH_INV, invalidated_rkey) kill the rkey;
//   errors      bind on a region without MW_BIND, out of the region's
//               range, of a bound type 2 window: IBV_WC_MW_BIND_ERR;
//               LOCAL_INV of a region from ibv_reg_mr or of a type 1
//               window: IBV_WC_LOC_QP_OP_ERR, of another PD's window:
//               IBV_WC_LOC_PROT_ERR; SEND_WITH_INV of a region's rkey or
//               of a window bound through another QP: the sender gets
//               IBV_WC_REM_INV_REQ_ERR and the target still works; a
//               window's rkey as a local lkey: IBV_WC_LOC_PROT_ERR;
//               ibv_bind_mw of a type 2 and IBV_WR_BIND_MW of a type 1
//               window: EINVAL at the call;
//   zero based  a type 2 window bound with IBV_ACCESS_ZERO_BASED over
//               [addr, addr + length) of a region: WRITE and READ at
//               offset 0 and at the window's end, fetch-and-add on its last
//               word, each landing at addr + offset of the region and
//               nowhere else; an access across or past length, at the
//               region's own address, or at an offset whose addr + offset
//               wraps around 2^64: IBV_WC_REM_ACCESS_ERR, nothing written;
//               after LOCAL_INV a plain rebind uses the region's addresses
//               again; ibv_bind_mw of a type 1 window with ZERO_BASED:
//               EINVAL at the call (rkey unchanged), and the same bind
//               written by hand into the SQ ring: IBV_WC_MW_BIND_ERR from
//               the kernel, the window keeps its previous binding;
//   lifetime    ibv_dereg_mr and ibv_rereg_mr of a region with a bound
//               window: EBUSY, the region keeps working; ibv_dealloc_mw of
//               a bound window: its rkey dies, then the region deregisters;
//   traffic     256 WRITEs of 4 KiB through a type 2 window over 1 MiB
//               in flight while B invalidates it (posted after the first
//               64): each completes with success (its bytes in
//               place), IBV_WC_REM_ACCESS_ERR or a flush, and nothing lands
//               after the LOCAL_INV completed;
//   counters    debugfs mw_binds, mr_local_inv and mr_remote_inv of B
//               grew by exactly the operations that succeeded.
//
// With --exit-bound the program only binds a type 1 and a type 2 window
// to a region and exits without freeing anything: the kernel's cleanup
// must release the region (whose dereg fails while the windows exist)
// after the windows (test_mw.sh checks that nothing is left).
//
// Usage: mroce_mw DEV_A GID_INDEX_A DEV_B GID_INDEX_B [--exit-bound]
// Output is KTAP.  Exit status 0 when every case passed.
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <rdma/mroce-abi.h>

#include <set>

#include "verbs_test.hpp"

// rdma-core's private command helper (IBVERBS_PRIVATE_34): a POST_SEND
// without work requests is the mroce SQ doorbell.
extern "C" int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
				 struct ibv_send_wr **bad_wr);

namespace {

using namespace mroce_test;
using Clock = std::chrono::steady_clock;

Ktap ktap;

constexpr size_t kBuf = 64 << 10;
constexpr size_t kWinOff = 8192;	// the window inside B's region
constexpr size_t kWinLen = 16384;
constexpr std::chrono::milliseconds kWait(30000);
constexpr int kAllRemote =
	IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
constexpr int kMrAccess = IBV_ACCESS_LOCAL_WRITE | kAllRemote | IBV_ACCESS_MW_BIND;


std::string hex(uint64_t v)
{
	char b[24];
	std::snprintf(b, sizeof(b), "%#llx", static_cast<unsigned long long>(v));
	return b;
}

struct Dev {
	Context ctx;
	ibv_gid gid{};
	int gid_index = 0;
	std::string name;
};

Dev g_a, g_b;

bool open_dev(Dev &d, const char *name, int gid_index)
{
	d.name = name;
	d.ctx = open_device(name);
	if (!d.ctx)
		return ktap.result(false, std::string("open ") + name, errstr(errno));
	d.gid_index = gid_index;
	if (ibv_query_gid(d.ctx.get(), 1, gid_index, &d.gid))
		return ktap.result(false, std::string("ibv_query_gid on ") + name, errstr(errno));
	return true;
}

// A connected RC pair: qa on A, qb on B, each with its own CQ.  With
// qpx, qb is created with ibv_create_qp_ex for the ibv_wr_* API.
struct Pair {
	Cq ca, cb;
	Qp qa, qb;
	ibv_qp_ex *qbx = nullptr;
	bool ok = false;
};

ibv_qp *make_qp(ibv_context *ctx, ibv_pd *pd, ibv_cq *cq, bool qpx)
{
	if (!qpx) {
		ibv_qp_init_attr a{};
		a.send_cq = a.recv_cq = cq;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = a.cap.max_recv_wr = 512;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		return ibv_create_qp(pd, &a);
	}
	ibv_qp_init_attr_ex a{};
	a.send_cq = a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = pd;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			   IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
	return ibv_create_qp_ex(ctx, &a);
}

void make_pair(Pair &p, ibv_pd *apd, ibv_pd *bpd, const std::string &what, bool qpx = false)
{
	p.ca.reset(ibv_create_cq(g_a.ctx.get(), 1024, nullptr, nullptr, 0));
	p.cb.reset(ibv_create_cq(g_b.ctx.get(), 1024, nullptr, nullptr, 0));
	if (p.ca && p.cb) {
		p.qa.reset(make_qp(g_a.ctx.get(), apd, p.ca.get(), false));
		p.qb.reset(make_qp(g_b.ctx.get(), bpd, p.cb.get(), qpx));
	}
	int rc = (!p.qa || !p.qb) ? errno : 0;
	if (!rc)
		rc = connect_rc(p.qa.get(), g_a.gid_index, g_b.gid, p.qb->qp_num);
	if (!rc)
		rc = connect_rc(p.qb.get(), g_b.gid_index, g_a.gid, p.qa->qp_num);
	if (rc) {
		ktap.result(false, what + ": create and connect an RC pair", errstr(rc));
		return;
	}
	if (qpx)
		p.qbx = ibv_qp_to_qp_ex(p.qb.get());
	p.ok = !qpx || p.qbx;
}

// The next completion of cq within kWait (status -1 and opcode 0 if none).
ibv_wc next_wc(ibv_cq *cq)
{
	ibv_wc wc{};
	const auto end = Clock::now() + kWait;
	while (Clock::now() < end) {
		int k = ibv_poll_cq(cq, 1, &wc);
		if (k == 1)
			return wc;
		if (k < 0)
			break;
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	wc = {};
	wc.status = static_cast<ibv_wc_status>(-1);
	return wc;
}

std::string wc_str(const ibv_wc &wc)
{
	if (int(wc.status) == -1)
		return "no completion";
	return std::string("wr_id ") + std::to_string(wc.wr_id) + ", status " +
	       ibv_wc_status_str(wc.status) + ", opcode " + std::to_string(wc.opcode);
}

bool wc_is(const ibv_wc &wc, uint64_t wr_id, ibv_wc_status st, int opcode = -1)
{
	return wc.wr_id == wr_id && wc.status == st && (opcode < 0 || int(wc.opcode) == opcode);
}

// One signaled WR on qp; its completion on cq.
ibv_wc post_one(ibv_qp *qp, ibv_cq *cq, ibv_send_wr &wr)
{
	wr.send_flags |= IBV_SEND_SIGNALED;
	ibv_send_wr *bad;
	if (int rc = ibv_post_send(qp, &wr, &bad)) {
		ibv_wc wc{};
		wc.status = static_cast<ibv_wc_status>(-1);
		ktap.note("ibv_post_send: " + errstr(rc));
		return wc;
	}
	return next_wc(cq);
}

// An RDMA WRITE/READ or atomic of len bytes at laddr (lkey) to raddr/rkey.
ibv_wc rdma(Pair &p, ibv_wr_opcode op, uint64_t id, uint64_t laddr, uint32_t len,
	    uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t add = 0)
{
	ibv_sge sge{laddr, len, lkey};
	ibv_send_wr wr{};
	wr.wr_id = id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return post_one(p.qa.get(), p.ca.get(), wr);
}

// ibv_post_send of IBV_WR_BIND_MW (type 2) on B's QP; rkey the new key.
ibv_wc bind2(Pair &p, ibv_mw *mw, uint32_t rkey, ibv_mr *mr, uint64_t addr, uint64_t len,
	     unsigned access, uint64_t id)
{
	ibv_send_wr wr{};
	wr.wr_id = id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = {mr, addr, len, access};
	return post_one(p.qb.get(), p.cb.get(), wr);
}

// ibv_bind_mw (type 1) on B's QP.
ibv_wc bind1(Pair &p, ibv_mw *mw, ibv_mr *mr, uint64_t addr, uint64_t len, unsigned access,
	     uint64_t id, int *rc_out = nullptr)
{
	ibv_mw_bind b{};
	b.wr_id = id;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info = {mr, addr, len, access};
	int rc = ibv_bind_mw(p.qb.get(), mw, &b);
	if (rc_out)
		*rc_out = rc;
	if (rc) {
		ibv_wc wc{};
		wc.status = static_cast<ibv_wc_status>(-1);
		ktap.note("ibv_bind_mw: " + errstr(rc));
		return wc;
	}
	return next_wc(p.cb.get());
}

ibv_wc local_inv(Pair &p, uint32_t rkey, uint64_t id)
{
	ibv_send_wr wr{};
	wr.wr_id = id;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = rkey;
	return post_one(p.qb.get(), p.cb.get(), wr);
}

// A SEND_WITH_INV of rkey from A (8 bytes at laddr) into a receive B posts
// at raddr; returns A's completion, B's in *recv.
ibv_wc send_inv(Pair &p, uint32_t rkey, uint64_t laddr, uint32_t lkey, uint64_t raddr,
		uint32_t rlkey, uint64_t id, ibv_wc *recv)
{
	ibv_sge rs{raddr, 64, rlkey};
	ibv_recv_wr rw{};
	rw.wr_id = id + 1000;
	rw.sg_list = &rs;
	rw.num_sge = 1;
	ibv_recv_wr *rbad;
	if (ibv_post_recv(p.qb.get(), &rw, &rbad))
		ktap.note("ibv_post_recv failed");
	ibv_sge sge{laddr, 8, lkey};
	ibv_send_wr wr{};
	wr.wr_id = id;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = rkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_wc wc = post_one(p.qa.get(), p.ca.get(), wr);
	*recv = next_wc(p.cb.get());
	return wc;
}

// Device B's debugfs counter name (-1 when unreadable).
long long counter(const std::string &name)
{
	std::ifstream f("/sys/kernel/debug/mroce/" + g_b.name + "/counters");
	std::string k;
	long long v;
	while (f >> k >> v)
		if (k == name)
			return v;
	return -1;
}

bool all(const uint8_t *p, uint8_t v, size_t n)
{
	for (size_t i = 0; i < n; ++i)
		if (p[i] != v)
			return false;
	return true;
}

// Everything both sides use.
struct World {
	Pd apd, bpd, bpd2;
	PageBuf asrc{kBuf}, adst{kBuf}, bbuf{kBuf}, bplain{kBuf}, bmisc{kBuf};
	Mr asrc_mr, adst_mr;
	Mr bmr;		// MW_BIND region over bbuf
	Mr bplain_mr;	// bplain without MW_BIND
	Mr bmisc_mr;	// receive buffers of B
	Mr bpd2_mr;	// bmisc again, in bpd2 (for another PD's window)
	long long binds = 0, linv = 0, rinv = 0;	// successes expected
};

uint64_t win(World &w, size_t off = 0) { return w.bbuf.addr(kWinOff + off); }

void test_caps()
{
	ibv_device_attr_ex attr{};
	int rc = ibv_query_device_ex(g_b.ctx.get(), nullptr, &attr);
	const auto f = attr.orig_attr.device_cap_flags;
	ktap.result(rc == 0 && (f & IBV_DEVICE_MEM_WINDOW) && (f & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
			    !(f & IBV_DEVICE_MEM_MGT_EXTENSIONS) && attr.orig_attr.max_mw > 0,
		    "caps: MEM_WINDOW, MEM_WINDOW_TYPE_2B and max_mw, no MEM_MGT_EXTENSIONS",
		    "rc " + std::to_string(rc) + ", flags " + hex(f) + ", max_mw " +
			    std::to_string(attr.orig_attr.max_mw));
}

void test_type1(World &w)
{
	Pair p;
	make_pair(p, w.apd.get(), w.bpd.get(), "type 1");
	if (!p.ok)
		return;
	Mw mw(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_1));
	if (!ktap.result(mw && mw->type == IBV_MW_TYPE_1, "type 1: ibv_alloc_mw", errstr(errno)))
		return;
	const uint32_t k0 = mw->rkey;
	std::memset(w.bbuf.p, 0, kBuf);
	ibv_wc wc = bind1(p, mw.get(), w.bmr.get(), win(w), kWinLen, kAllRemote, 11);
	const uint32_t k1 = mw->rkey;
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	ktap.result(wc_is(wc, 11, IBV_WC_SUCCESS, IBV_WC_BIND_MW) && k1 != k0 &&
			    (k1 >> 8) == (k0 >> 8),
		    "type 1: ibv_bind_mw completes with IBV_WC_BIND_MW, the rkey's key byte changes",
		    wc_str(wc) + ", rkey " + hex(k0) + " -> " + hex(k1));

	// WRITE into the window: lands there, guards untouched.
	fill_pattern(w.asrc.p, 1, 4096);
	wc = rdma(p, IBV_WR_RDMA_WRITE, 12, w.asrc.addr(), 4096, w.asrc_mr->lkey, win(w, 100), k1);
	ktap.result(wc_is(wc, 12, IBV_WC_SUCCESS) && is_pattern(w.bbuf.p + kWinOff + 100, 1, 4096) &&
			    all(w.bbuf.p, 0, kWinOff + 100) &&
			    all(w.bbuf.p + kWinOff + 4196, 0, kBuf - kWinOff - 4196),
		    "type 1: a WRITE through the window lands at its address, nothing around it",
		    wc_str(wc));
	// READ back through the window, across its whole length.
	fill_pattern(w.bbuf.p + kWinOff, 2, kWinLen);
	std::memset(w.adst.p, 0, kBuf);
	wc = rdma(p, IBV_WR_RDMA_READ, 13, w.adst.addr(), kWinLen, w.adst_mr->lkey, win(w), k1);
	ktap.result(wc_is(wc, 13, IBV_WC_SUCCESS) && is_pattern(w.adst.p, 2, kWinLen),
		    "type 1: a READ of the whole window returns its bytes", wc_str(wc));
	// Fetch-and-add on the window's last word.
	uint64_t v = 0x1000;
	std::memcpy(w.bbuf.p + kWinOff + kWinLen - 8, &v, 8);
	wc = rdma(p, IBV_WR_ATOMIC_FETCH_AND_ADD, 14, w.adst.addr(), 8, w.adst_mr->lkey,
		  win(w, kWinLen - 8), k1, 5);
	uint64_t orig = 0, now = 0;
	std::memcpy(&orig, w.adst.p, 8);
	std::memcpy(&now, w.bbuf.p + kWinOff + kWinLen - 8, 8);
	ktap.result(wc_is(wc, 14, IBV_WC_SUCCESS) && orig == 0x1000 && now == 0x1005,
		    "type 1: fetch-and-add on the window's last word",
		    wc_str(wc) + ", orig " + hex(orig) + ", now " + hex(now));

	// Rebind to another range, READ only: the old key is dead, WRITE refused.
	wc = bind1(p, mw.get(), w.bmr.get(), w.bbuf.addr(0), 4096, IBV_ACCESS_REMOTE_READ, 15);
	const uint32_t k2 = mw->rkey;
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	fill_pattern(w.bbuf.p, 3, 4096);
	ibv_wc rd = rdma(p, IBV_WR_RDMA_READ, 16, w.adst.addr(), 4096, w.adst_mr->lkey,
			 w.bbuf.addr(0), k2);
	ktap.result(wc_is(wc, 15, IBV_WC_SUCCESS, IBV_WC_BIND_MW) && k2 != k1 &&
			    wc_is(rd, 16, IBV_WC_SUCCESS) && is_pattern(w.adst.p, 3, 4096),
		    "type 1: rebind to another range (READ only); a READ through the new key",
		    wc_str(wc) + "; " + wc_str(rd));
	Pair q;
	make_pair(q, w.apd.get(), w.bpd.get(), "type 1 old key");
	if (q.ok) {
		std::memset(w.bbuf.p + kWinOff, 0, kWinLen);
		wc = rdma(q, IBV_WR_RDMA_WRITE, 17, w.asrc.addr(), 64, w.asrc_mr->lkey, win(w), k1);
		ktap.result(wc_is(wc, 17, IBV_WC_REM_ACCESS_ERR) && all(w.bbuf.p + kWinOff, 0, 64),
			    "type 1: the key of the previous bind fails: IBV_WC_REM_ACCESS_ERR",
			    wc_str(wc));
	}
	Pair r;
	make_pair(r, w.apd.get(), w.bpd.get(), "type 1 read only");
	if (r.ok) {
		fill_pattern(w.bbuf.p, 3, 64);
		wc = rdma(r, IBV_WR_RDMA_WRITE, 18, w.asrc.addr(), 64, w.asrc_mr->lkey,
			  w.bbuf.addr(0), k2);
		ktap.result(wc_is(wc, 18, IBV_WC_REM_ACCESS_ERR) && is_pattern(w.bbuf.p, 3, 64),
			    "type 1: a WRITE through a READ-only window: IBV_WC_REM_ACCESS_ERR",
			    wc_str(wc));
	}
	// A bind past the region's end, then a zero-length bind (unbind).
	Pair s;
	make_pair(s, w.apd.get(), w.bpd.get(), "type 1 unbind");
	if (!s.ok)
		return;
	wc = bind1(s, mw.get(), nullptr, 0, 0, 0, 19);
	const uint32_t k3 = mw->rkey;
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	rd = rdma(s, IBV_WR_RDMA_READ, 20, w.adst.addr(), 64, w.adst_mr->lkey, w.bbuf.addr(0), k3);
	ktap.result(wc_is(wc, 19, IBV_WC_SUCCESS, IBV_WC_BIND_MW) &&
			    wc_is(rd, 20, IBV_WC_REM_ACCESS_ERR),
		    "type 1: a zero-length bind unbinds: a READ then fails with IBV_WC_REM_ACCESS_ERR",
		    wc_str(wc) + "; " + wc_str(rd));
	// The window access past its end (a fresh pair).
	Pair t;
	make_pair(t, w.apd.get(), w.bpd.get(), "type 1 bounds");
	if (!t.ok)
		return;
	wc = bind1(t, mw.get(), w.bmr.get(), win(w), kWinLen, kAllRemote, 21);
	const uint32_t k4 = mw->rkey;
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	std::memset(w.bbuf.p, 0, kBuf);
	rd = rdma(t, IBV_WR_RDMA_WRITE, 22, w.asrc.addr(), 64, w.asrc_mr->lkey,
		  win(w, kWinLen - 32), k4);
	ktap.result(wc_is(wc, 21, IBV_WC_SUCCESS) && wc_is(rd, 22, IBV_WC_REM_ACCESS_ERR) &&
			    all(w.bbuf.p, 0, kBuf),
		    "type 1: a WRITE across the window's end: IBV_WC_REM_ACCESS_ERR, nothing written",
		    wc_str(wc) + "; " + wc_str(rd));
	// LOCAL_INV of a type 1 window is not allowed.
	Pair u;
	make_pair(u, w.apd.get(), w.bpd.get(), "type 1 local_inv");
	if (!u.ok)
		return;
	wc = local_inv(u, k4, 23);
	ktap.result(wc_is(wc, 23, IBV_WC_LOC_QP_OP_ERR),
		    "errors: LOCAL_INV of a type 1 window: IBV_WC_LOC_QP_OP_ERR", wc_str(wc));
	// dealloc of the bound window: its rkey dies.
	Pair v2;
	make_pair(v2, w.apd.get(), w.bpd.get(), "type 1 dealloc");
	if (!v2.ok)
		return;
	int drc = ibv_dealloc_mw(mw.release());
	rd = rdma(v2, IBV_WR_RDMA_READ, 24, w.adst.addr(), 64, w.adst_mr->lkey, win(w), k4);
	ktap.result(drc == 0 && wc_is(rd, 24, IBV_WC_REM_ACCESS_ERR),
		    "lifetime: ibv_dealloc_mw of a bound window: 0, its rkey then fails",
		    "dealloc " + std::to_string(drc) + "; " + wc_str(rd));
}

void test_type2(World &w)
{
	Pair p;
	make_pair(p, w.apd.get(), w.bpd.get(), "type 2");
	if (!p.ok)
		return;
	Mw mw(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_2));
	if (!ktap.result(mw && mw->type == IBV_MW_TYPE_2, "type 2: ibv_alloc_mw", errstr(errno)))
		return;
	// A type 2 window cannot be bound with ibv_bind_mw.
	int rc = 0;
	bind1(p, mw.get(), w.bmr.get(), win(w), kWinLen, kAllRemote, 30, &rc);
	ktap.result(rc == EINVAL, "errors: ibv_bind_mw of a type 2 window: EINVAL", errstr(rc));

	const uint32_t k1 = ibv_inc_rkey(mw->rkey);
	ibv_wc wc = bind2(p, mw.get(), k1, w.bmr.get(), win(w), kWinLen,
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 31);
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	ktap.result(wc_is(wc, 31, IBV_WC_SUCCESS, IBV_WC_BIND_MW),
		    "type 2: IBV_WR_BIND_MW by ibv_post_send completes with IBV_WC_BIND_MW",
		    wc_str(wc));
	std::memset(w.bbuf.p, 0, kBuf);
	fill_pattern(w.asrc.p, 4, 1000);
	wc = rdma(p, IBV_WR_RDMA_WRITE, 32, w.asrc.addr(), 1000, w.asrc_mr->lkey, win(w, 5000), k1);
	ktap.result(wc_is(wc, 32, IBV_WC_SUCCESS) && is_pattern(w.bbuf.p + kWinOff + 5000, 4, 1000) &&
			    all(w.bbuf.p, 0, kWinOff + 5000),
		    "type 2: a WRITE from the QP it was bound through lands", wc_str(wc));
	// Bound again while bound.
	Pair q;
	make_pair(q, w.apd.get(), w.bpd.get(), "type 2 rebind");
	if (q.ok) {
		wc = bind2(q, mw.get(), ibv_inc_rkey(k1), w.bmr.get(), win(w), 4096,
			   IBV_ACCESS_REMOTE_READ, 33);
		ktap.result(wc_is(wc, 33, IBV_WC_MW_BIND_ERR),
			    "errors: binding a bound type 2 window: IBV_WC_MW_BIND_ERR", wc_str(wc));
	}
	// Another QP of the same PD does not reach it.
	Pair r;
	make_pair(r, w.apd.get(), w.bpd.get(), "type 2 other QP");
	if (r.ok) {
		std::memset(w.bbuf.p, 0, kBuf);
		wc = rdma(r, IBV_WR_RDMA_WRITE, 34, w.asrc.addr(), 64, w.asrc_mr->lkey, win(w), k1);
		ktap.result(wc_is(wc, 34, IBV_WC_REM_ACCESS_ERR) && all(w.bbuf.p, 0, kBuf),
			    "type 2: another QP of the PD gets IBV_WC_REM_ACCESS_ERR", wc_str(wc));
	}
	// ... nor can it invalidate it remotely.
	Pair s;
	make_pair(s, w.apd.get(), w.bpd.get(), "type 2 foreign SEND_WITH_INV");
	if (s.ok) {
		ibv_wc recv;
		wc = send_inv(s, k1, w.asrc.addr(), w.asrc_mr->lkey, w.bmisc.addr(),
			      w.bmisc_mr->lkey, 35, &recv);
		ktap.result(wc_is(wc, 35, IBV_WC_REM_INV_REQ_ERR),
			    "errors: SEND_WITH_INV of a window bound through another QP: "
			    "IBV_WC_REM_INV_REQ_ERR",
			    wc_str(wc) + "; B: " + wc_str(recv));
	}
	// Still bound and working on its own QP.
	fill_pattern(w.asrc.p, 5, 64);
	wc = rdma(p, IBV_WR_RDMA_WRITE, 36, w.asrc.addr(), 64, w.asrc_mr->lkey, win(w), k1);
	ktap.result(wc_is(wc, 36, IBV_WC_SUCCESS) && is_pattern(w.bbuf.p + kWinOff, 5, 64),
		    "type 2: after those failures the window still serves its QP", wc_str(wc));
	// Lifetime: the region is busy while the window is bound.
	errno = 0;
	rc = ibv_dereg_mr(w.bmr.get());
	const int dereg_rc = rc;
	errno = 0;
	rc = ibv_rereg_mr(w.bmr.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	const int rereg_errno = errno;
	fill_pattern(w.asrc.p, 6, 64);
	wc = rdma(p, IBV_WR_RDMA_WRITE, 37, w.asrc.addr(), 64, w.asrc_mr->lkey,
		  w.bbuf.addr(100), w.bmr->rkey);
	ktap.result(dereg_rc == EBUSY && rc == IBV_REREG_MR_ERR_CMD && rereg_errno == EBUSY &&
			    wc_is(wc, 37, IBV_WC_SUCCESS) && is_pattern(w.bbuf.p + 100, 6, 64),
		    "lifetime: ibv_dereg_mr and ibv_rereg_mr of a region with a bound window: "
		    "EBUSY, the region keeps working",
		    "dereg " + errstr(dereg_rc) + ", rereg " + std::to_string(rc) + " errno " +
			    errstr(rereg_errno) + "; " + wc_str(wc));
	// LOCAL_INV by ibv_post_send.
	wc = local_inv(p, k1, 38);
	if (wc.status == IBV_WC_SUCCESS)
		++w.linv;
	ibv_wc wr = rdma(p, IBV_WR_RDMA_WRITE, 39, w.asrc.addr(), 64, w.asrc_mr->lkey, win(w), k1);
	ktap.result(wc_is(wc, 38, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV) &&
			    wc_is(wr, 39, IBV_WC_REM_ACCESS_ERR),
		    "type 2: IBV_WR_LOCAL_INV, then the rkey fails: IBV_WC_REM_ACCESS_ERR",
		    wc_str(wc) + "; " + wc_str(wr));

	// Bound again (FREE after the invalidation), then SEND_WITH_INV.
	Pair t;
	make_pair(t, w.apd.get(), w.bpd.get(), "type 2 SEND_WITH_INV");
	if (!t.ok)
		return;
	const uint32_t k2 = ibv_inc_rkey(k1);
	wc = bind2(t, mw.get(), k2, w.bmr.get(), win(w), kWinLen, IBV_ACCESS_REMOTE_READ, 40);
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	fill_pattern(w.bbuf.p + kWinOff, 7, 256);
	ibv_wc rd = rdma(t, IBV_WR_RDMA_READ, 41, w.adst.addr(), 256, w.adst_mr->lkey, win(w), k2);
	ktap.result(wc_is(wc, 40, IBV_WC_SUCCESS) && wc_is(rd, 41, IBV_WC_SUCCESS) &&
			    is_pattern(w.adst.p, 7, 256),
		    "type 2: an invalidated window binds again (new key) and serves READs",
		    wc_str(wc) + "; " + wc_str(rd));
	ibv_wc recv;
	std::memcpy(w.asrc.p, "12345678", 8);
	wc = send_inv(t, k2, w.asrc.addr(), w.asrc_mr->lkey, w.bmisc.addr(), w.bmisc_mr->lkey, 42,
		      &recv);
	if (recv.status == IBV_WC_SUCCESS)
		++w.rinv;
	ktap.result(wc_is(wc, 42, IBV_WC_SUCCESS) && wc_is(recv, 1042, IBV_WC_SUCCESS, IBV_WC_RECV) &&
			    (recv.wc_flags & IBV_WC_WITH_INV) && recv.invalidated_rkey == k2 &&
			    recv.byte_len == 8 && !std::memcmp(w.bmisc.p, "12345678", 8),
		    "type 2: SEND_WITH_INV: IBV_WC_WITH_INV with the invalidated rkey",
		    wc_str(wc) + "; B: " + wc_str(recv) + ", flags " + hex(recv.wc_flags) +
			    ", rkey " + hex(recv.invalidated_rkey));
	rd = rdma(t, IBV_WR_RDMA_READ, 43, w.adst.addr(), 64, w.adst_mr->lkey, win(w), k2);
	ktap.result(wc_is(rd, 43, IBV_WC_REM_ACCESS_ERR),
		    "type 2: after SEND_WITH_INV the rkey fails: IBV_WC_REM_ACCESS_ERR", wc_str(rd));
	// The region deregisters once no window is bound (checked on a spare).
	PageBuf spare(8192);
	ibv_mr *smr = ibv_reg_mr(w.bpd.get(), spare.p, 8192, kMrAccess);
	Pair u;
	make_pair(u, w.apd.get(), w.bpd.get(), "type 2 dereg");
	if (!smr || !u.ok)
		return;
	wc = bind2(u, mw.get(), ibv_inc_rkey(k2), smr, spare.addr(), 8192, IBV_ACCESS_REMOTE_READ,
		   44);
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	int busy = ibv_dereg_mr(smr);
	int drc = ibv_dealloc_mw(mw.release());
	int after = ibv_dereg_mr(smr);
	ktap.result(wc_is(wc, 44, IBV_WC_SUCCESS) && busy == EBUSY && drc == 0 && after == 0,
		    "lifetime: dereg EBUSY while bound, 0 after ibv_dealloc_mw of the window",
		    wc_str(wc) + ", dereg " + std::to_string(busy) + ", dealloc " +
			    std::to_string(drc) + ", dereg " + std::to_string(after));
}

// The ibv_wr_* API: ibv_wr_bind_mw and ibv_wr_local_inv.
void test_wr_api(World &w)
{
	Pair p;
	make_pair(p, w.apd.get(), w.bpd.get(), "wr api", true);
	if (!p.ok)
		return;
	Mw mw(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_2));
	if (!mw)
		return (void)ktap.result(false, "wr api: ibv_alloc_mw", errstr(errno));
	const uint32_t k = ibv_inc_rkey(mw->rkey);
	const ibv_mw_bind_info info{w.bmr.get(), win(w), kWinLen, IBV_ACCESS_REMOTE_WRITE};
	ibv_wr_start(p.qbx);
	p.qbx->wr_id = 50;
	p.qbx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(p.qbx, mw.get(), k, &info);
	int rc = ibv_wr_complete(p.qbx);
	ibv_wc wc = next_wc(p.cb.get());
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	std::memset(w.bbuf.p, 0, kBuf);
	fill_pattern(w.asrc.p, 8, 512);
	ibv_wc wr = rdma(p, IBV_WR_RDMA_WRITE, 51, w.asrc.addr(), 512, w.asrc_mr->lkey,
			 win(w, kWinLen - 512), k);
	ktap.result(rc == 0 && wc_is(wc, 50, IBV_WC_SUCCESS, IBV_WC_BIND_MW) &&
			    wc_is(wr, 51, IBV_WC_SUCCESS) &&
			    is_pattern(w.bbuf.p + kWinOff + kWinLen - 512, 8, 512) &&
			    all(w.bbuf.p + kWinOff + kWinLen, 0, kBuf - kWinOff - kWinLen),
		    "wr api: ibv_wr_bind_mw, then a WRITE at the window's end lands",
		    "complete " + std::to_string(rc) + "; " + wc_str(wc) + "; " + wc_str(wr));
	ibv_wr_start(p.qbx);
	p.qbx->wr_id = 52;
	p.qbx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(p.qbx, k);
	rc = ibv_wr_complete(p.qbx);
	wc = next_wc(p.cb.get());
	if (wc.status == IBV_WC_SUCCESS)
		++w.linv;
	wr = rdma(p, IBV_WR_RDMA_WRITE, 53, w.asrc.addr(), 64, w.asrc_mr->lkey, win(w), k);
	ktap.result(rc == 0 && wc_is(wc, 52, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV) &&
			    wc_is(wr, 53, IBV_WC_REM_ACCESS_ERR),
		    "wr api: ibv_wr_local_inv, then the rkey fails: IBV_WC_REM_ACCESS_ERR",
		    "complete " + std::to_string(rc) + "; " + wc_str(wc) + "; " + wc_str(wr));
}

// A zero-based type 2 window over [win(w), win(w) + kWinLen) bound
// through p's B QP under a fresh key (0 if the bind failed).
uint32_t bind_zb(World &w, Pair &p, Mw &mw, uint64_t id)
{
	mw.reset(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_2));
	if (!mw)
		return 0;
	const uint32_t k = ibv_inc_rkey(mw->rkey);
	ibv_wc wc = bind2(p, mw.get(), k, w.bmr.get(), win(w), kWinLen,
			  kAllRemote | IBV_ACCESS_ZERO_BASED, id);
	if (!wc_is(wc, id, IBV_WC_SUCCESS, IBV_WC_BIND_MW))
		return 0;
	++w.binds;
	return k;
}

void test_zero_based(World &w)
{
	Pair p;
	make_pair(p, w.apd.get(), w.bpd.get(), "zero based");
	if (!p.ok)
		return;
	Mw mw;
	const uint32_t k = bind_zb(w, p, mw, 60);
	if (!ktap.result(k != 0, "zero based: a type 2 window bound with IBV_ACCESS_ZERO_BASED "
				 "completes with IBV_WC_BIND_MW", errstr(errno)))
		return;
	uint8_t *const base = w.bbuf.p + kWinOff;
	// WRITE at offset 0 and at the window's end.
	std::memset(w.bbuf.p, 0, kBuf);
	fill_pattern(w.asrc.p, 60, 256);
	ibv_wc a = rdma(p, IBV_WR_RDMA_WRITE, 61, w.asrc.addr(), 256, w.asrc_mr->lkey, 0, k);
	fill_pattern(w.asrc.p + 256, 61, 256);
	ibv_wc b = rdma(p, IBV_WR_RDMA_WRITE, 62, w.asrc.addr(256), 256, w.asrc_mr->lkey,
			kWinLen - 256, k);
	ktap.result(wc_is(a, 61, IBV_WC_SUCCESS) && wc_is(b, 62, IBV_WC_SUCCESS) &&
			    is_pattern(base, 60, 256) && is_pattern(base + kWinLen - 256, 61, 256) &&
			    all(w.bbuf.p, 0, kWinOff) && all(base + 256, 0, kWinLen - 512) &&
			    all(base + kWinLen, 0, kBuf - kWinOff - kWinLen),
		    "zero based: WRITEs at offset 0 and at the end land at addr + offset, nothing "
		    "around them",
		    wc_str(a) + "; " + wc_str(b));
	// READ from offset 0 (the whole window) and of its last 8 bytes.
	fill_pattern(base, 62, kWinLen);
	std::memset(w.adst.p, 0, kBuf);
	a = rdma(p, IBV_WR_RDMA_READ, 63, w.adst.addr(), kWinLen, w.adst_mr->lkey, 0, k);
	b = rdma(p, IBV_WR_RDMA_READ, 64, w.adst.addr(kWinLen), 8, w.adst_mr->lkey, kWinLen - 8,
		 k);
	ktap.result(wc_is(a, 63, IBV_WC_SUCCESS) && wc_is(b, 64, IBV_WC_SUCCESS) &&
			    is_pattern(w.adst.p, 62, kWinLen) &&
			    !std::memcmp(w.adst.p + kWinLen, base + kWinLen - 8, 8),
		    "zero based: READs at offset 0 (whole window) and at the end return addr + "
		    "offset's bytes",
		    wc_str(a) + "; " + wc_str(b));
	// Fetch-and-add on the last word (offset kWinLen - 8).
	uint64_t v = 0x2000, orig = 0, now = 0;
	std::memcpy(base + kWinLen - 8, &v, 8);
	a = rdma(p, IBV_WR_ATOMIC_FETCH_AND_ADD, 65, w.adst.addr(), 8, w.adst_mr->lkey,
		 kWinLen - 8, k, 7);
	std::memcpy(&orig, w.adst.p, 8);
	std::memcpy(&now, base + kWinLen - 8, 8);
	ktap.result(wc_is(a, 65, IBV_WC_SUCCESS) && orig == 0x2000 && now == 0x2007,
		    "zero based: fetch-and-add at offset length - 8 works on addr + offset",
		    wc_str(a) + ", orig " + hex(orig) + ", now " + hex(now));
	// A WRITE across the end: refused, nothing written (the pair is done).
	std::memset(w.bbuf.p, 0, kBuf);
	a = rdma(p, IBV_WR_RDMA_WRITE, 66, w.asrc.addr(), 64, w.asrc_mr->lkey, kWinLen - 32, k);
	ktap.result(wc_is(a, 66, IBV_WC_REM_ACCESS_ERR) && all(w.bbuf.p, 0, kBuf),
		    "zero based: a WRITE across length: IBV_WC_REM_ACCESS_ERR, nothing written",
		    wc_str(a));

	// Other bad accesses, each on a fresh pair and window.
	struct Bad {
		const char *what;
		ibv_wr_opcode op;
		uint64_t raddr;
		uint32_t len;
	};
	const Bad bad[] = {
		{"a READ at offset length", IBV_WR_RDMA_READ, kWinLen, 8},
		{"a WRITE at the region's address of the window", IBV_WR_RDMA_WRITE, win(w), 64},
		{"a READ at offset 2^64 - 8 (addr + offset wraps)", IBV_WR_RDMA_READ,
		 ~uint64_t(0) - 7, 8},
		{"a WRITE at offset 2^64 - 8 (addr + offset wraps)", IBV_WR_RDMA_WRITE,
		 ~uint64_t(0) - 7, 8},
		{"fetch-and-add at offset length", IBV_WR_ATOMIC_FETCH_AND_ADD, kWinLen, 8},
	};
	uint64_t id = 67;
	for (const Bad &c : bad) {
		Pair q;
		make_pair(q, w.apd.get(), w.bpd.get(), std::string("zero based: ") + c.what);
		if (!q.ok)
			return;
		Mw m;
		const uint32_t kq = bind_zb(w, q, m, id++);
		std::memset(w.bbuf.p, 0, kBuf);
		fill_pattern(w.asrc.p, 63, 64);
		ibv_wc wc = rdma(q, c.op, id, w.asrc.addr(), c.len, w.asrc_mr->lkey, c.raddr, kq, 1);
		ktap.result(kq && wc_is(wc, id, IBV_WC_REM_ACCESS_ERR) && all(w.bbuf.p, 0, kBuf),
			    std::string("zero based: ") + c.what + ": IBV_WC_REM_ACCESS_ERR, "
			    "nothing written", wc_str(wc));
		++id;
	}

	// Invalidation, then a plain rebind: the region's addresses again.
	Pair r;
	make_pair(r, w.apd.get(), w.bpd.get(), "zero based rebind");
	if (!r.ok)
		return;
	Mw m2;
	const uint32_t k1 = bind_zb(w, r, m2, 80);
	fill_pattern(base, 64, 64);
	a = rdma(r, IBV_WR_RDMA_READ, 81, w.adst.addr(), 64, w.adst_mr->lkey, 0, k1);
	b = local_inv(r, k1, 82);
	if (b.status == IBV_WC_SUCCESS)
		++w.linv;
	const uint32_t k2 = ibv_inc_rkey(k1);
	ibv_wc c = m2 ? bind2(r, m2.get(), k2, w.bmr.get(), win(w), kWinLen,
			      IBV_ACCESS_REMOTE_READ, 83) : ibv_wc{};
	if (c.status == IBV_WC_SUCCESS && m2)
		++w.binds;
	std::memset(w.adst.p, 0, kBuf);
	ibv_wc d = rdma(r, IBV_WR_RDMA_READ, 84, w.adst.addr(), 64, w.adst_mr->lkey, win(w), k2);
	const bool got = is_pattern(w.adst.p, 64, 64);
	ibv_wc e = rdma(r, IBV_WR_RDMA_READ, 85, w.adst.addr(), 64, w.adst_mr->lkey, 0, k2);
	ktap.result(k1 && wc_is(a, 81, IBV_WC_SUCCESS) &&
			    wc_is(b, 82, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV) &&
			    wc_is(c, 83, IBV_WC_SUCCESS, IBV_WC_BIND_MW) &&
			    wc_is(d, 84, IBV_WC_SUCCESS) && got &&
			    wc_is(e, 85, IBV_WC_REM_ACCESS_ERR),
		    "zero based: after LOCAL_INV a plain rebind takes the region's addresses "
		    "again (offset 0 then fails)",
		    wc_str(a) + "; " + wc_str(b) + "; " + wc_str(c) + "; " + wc_str(d) + "; " +
			    wc_str(e));

	// Type 1: refused by the provider at the call ...
	Pair t;
	make_pair(t, w.apd.get(), w.bpd.get(), "zero based type 1");
	if (!t.ok)
		return;
	Mw m1(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_1));
	if (!ktap.result(bool(m1), "zero based: ibv_alloc_mw type 1", errstr(errno)))
		return;
	const uint32_t t0 = m1->rkey;
	int rc = 0;
	bind1(t, m1.get(), w.bmr.get(), win(w), kWinLen,
	      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED, 90, &rc);
	ktap.result(rc == EINVAL && m1->rkey == t0,
		    "zero based: ibv_bind_mw of a type 1 window with IBV_ACCESS_ZERO_BASED: "
		    "EINVAL, rkey unchanged",
		    errstr(rc) + ", rkey " + hex(t0) + " -> " + hex(m1->rkey));
	// ... and by the kernel when the WQE is written by hand.  A valid
	// bind first: the SQ whose producer moved is B's.
	auto before = uverbs_maps();
	Pair h;
	make_pair(h, w.apd.get(), w.bpd.get(), "zero based type 1 by hand");
	if (!h.ok)
		return;
	std::vector<mroce_ring_ctl *> sqs;
	for (uintptr_t m : uverbs_maps()) {
		auto *ctl = reinterpret_cast<mroce_ring_ctl *>(m);
		if (!before.count(m) && ctl->entry_size >= 128 && ctl->entry_size % 64 == 0)
			sqs.push_back(ctl);
	}
	ibv_wc ok = bind1(h, m1.get(), w.bmr.get(), win(w), kWinLen, IBV_ACCESS_REMOTE_READ, 91);
	if (ok.status == IBV_WC_SUCCESS)
		++w.binds;
	const uint32_t t1 = m1->rkey;
	mroce_ring_ctl *sq = nullptr;
	for (auto *ctl : sqs)
		if (__atomic_load_n(&ctl->producer, __ATOMIC_ACQUIRE) == 1)
			sq = sq ? nullptr : ctl;
	if (!ktap.result(wc_is(ok, 91, IBV_WC_SUCCESS, IBV_WC_BIND_MW) && sq,
			 "zero based: a type 1 bind, and B's SQ ring found",
			 wc_str(ok) + ", " + std::to_string(sqs.size()) + " candidate rings"))
		return;
	const uint32_t prod = sq->producer;
	auto *wq = reinterpret_cast<mroce_send_wqe *>(
		reinterpret_cast<uint8_t *>(sq) + MROCE_RING_CTL_SIZE +
		size_t(prod & (sq->num_entries - 1)) * sq->entry_size);
	std::memset(wq, 0, sizeof(*wq));
	wq->wr_id = 92;
	wq->opcode = MROCE_WR_BIND_MW;
	wq->send_flags = MROCE_SEND_SIGNALED;
	wq->wr.bind.addr = win(w);
	wq->wr.bind.length = kWinLen;
	wq->wr.bind.rkey = ibv_inc_rkey(t1);
	wq->wr.bind.mr_lkey = w.bmr->lkey;
	wq->wr.bind.access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED;
	__atomic_store_n(&sq->producer, prod + 1, __ATOMIC_RELEASE);
	ibv_send_wr *badwr = nullptr;
	rc = ibv_cmd_post_send(h.qb.get(), nullptr, &badwr);
	ibv_wc hw = rc ? ibv_wc{} : next_wc(h.cb.get());
	// The window keeps its binding: a READ through the previous key at
	// the region's address still works (a fresh pair: h is in error).
	Pair u;
	make_pair(u, w.apd.get(), w.bpd.get(), "zero based type 1 after");
	if (!u.ok)
		return;
	fill_pattern(base, 65, 64);
	std::memset(w.adst.p, 0, kBuf);
	ibv_wc rd = rdma(u, IBV_WR_RDMA_READ, 93, w.adst.addr(), 64, w.adst_mr->lkey, win(w), t1);
	ibv_wc zr = rdma(u, IBV_WR_RDMA_READ, 94, w.adst.addr(), 64, w.adst_mr->lkey, 0,
			 ibv_inc_rkey(t1));
	ktap.result(rc == 0 && wc_is(hw, 92, IBV_WC_MW_BIND_ERR) && wc_is(rd, 93, IBV_WC_SUCCESS) &&
			    is_pattern(w.adst.p, 65, 64) && wc_is(zr, 94, IBV_WC_REM_ACCESS_ERR),
		    "zero based: a type 1 ZERO_BASED bind WQE written by hand: IBV_WC_MW_BIND_ERR, "
		    "the previous binding stays, the new key is dead",
		    "doorbell " + errstr(rc) + "; " + wc_str(hw) + "; " + wc_str(rd) + "; " +
			    wc_str(zr));
}

void test_errors(World &w)
{
	struct Case {
		const char *name;
		ibv_mr *mr;
		uint64_t addr, len;
	} cases[] = {
		{"errors: bind on a region without MW_BIND: IBV_WC_MW_BIND_ERR", w.bplain_mr.get(),
		 w.bplain.addr(0), 4096},
		{"errors: bind past the region's end: IBV_WC_MW_BIND_ERR", w.bmr.get(),
		 w.bbuf.addr(kBuf - 4096), 8192},
		{"errors: bind before the region's start: IBV_WC_MW_BIND_ERR", w.bmr.get(),
		 w.bbuf.addr(0) - 4096, 8192},
	};
	uint64_t id = 60;
	for (const auto &c : cases) {
		Pair p;
		make_pair(p, w.apd.get(), w.bpd.get(), c.name);
		Mw mw(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_1));
		if (!p.ok || !mw)
			continue;
		const uint32_t k0 = mw->rkey;
		ibv_wc wc = bind1(p, mw.get(), c.mr, c.addr, c.len, IBV_ACCESS_REMOTE_READ, id);
		ktap.result(wc_is(wc, id, IBV_WC_MW_BIND_ERR) && mw->rkey == ibv_inc_rkey(k0),
			    c.name, wc_str(wc));
		++id;
	}
	// A type 1 window through IBV_WR_BIND_MW.
	{
		Pair p;
		make_pair(p, w.apd.get(), w.bpd.get(), "type 1 by post_send");
		Mw mw(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_1));
		if (p.ok && mw) {
			ibv_send_wr wr{};
			wr.opcode = IBV_WR_BIND_MW;
			wr.bind_mw.mw = mw.get();
			wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
			wr.bind_mw.bind_info = {w.bmr.get(), win(w), 64, IBV_ACCESS_REMOTE_READ};
			ibv_send_wr *bad;
			int rc = ibv_post_send(p.qb.get(), &wr, &bad);
			ktap.result(rc == EINVAL,
				    "errors: IBV_WR_BIND_MW of a type 1 window: EINVAL", errstr(rc));
		}
	}
	// LOCAL_INV of a region from ibv_reg_mr: not invalidatable.
	{
		Pair p;
		make_pair(p, w.apd.get(), w.bpd.get(), "local_inv of a region");
		if (p.ok) {
			ibv_wc wc = local_inv(p, w.bmr->rkey, 70);
			ktap.result(wc_is(wc, 70, IBV_WC_LOC_QP_OP_ERR),
				    "errors: LOCAL_INV of a region's rkey: IBV_WC_LOC_QP_OP_ERR",
				    wc_str(wc));
		}
	}
	// LOCAL_INV of another PD's window.
	{
		Pair p, o;
		make_pair(p, w.apd.get(), w.bpd.get(), "local_inv of another PD's window");
		make_pair(o, w.apd.get(), w.bpd2.get(), "another PD");
		Mw mw(ibv_alloc_mw(w.bpd2.get(), IBV_MW_TYPE_2));
		if (p.ok && o.ok && mw) {
			const uint32_t k = ibv_inc_rkey(mw->rkey);
			ibv_wc b = bind2(o, mw.get(), k, w.bpd2_mr.get(), w.bmisc.addr(0), 4096,
					 IBV_ACCESS_REMOTE_READ, 71);
			if (b.status == IBV_WC_SUCCESS)
				++w.binds;
			ibv_wc wc = local_inv(p, k, 72);
			ktap.result(wc_is(b, 71, IBV_WC_SUCCESS) && wc_is(wc, 72, IBV_WC_LOC_PROT_ERR),
				    "errors: LOCAL_INV of another PD's window: IBV_WC_LOC_PROT_ERR",
				    wc_str(b) + "; " + wc_str(wc));
		}
	}
	// SEND_WITH_INV of a region's rkey, then the region still works.
	{
		Pair p, q;
		make_pair(p, w.apd.get(), w.bpd.get(), "SEND_WITH_INV of a region");
		make_pair(q, w.apd.get(), w.bpd.get(), "after SEND_WITH_INV of a region");
		if (p.ok && q.ok) {
			ibv_wc recv;
			ibv_wc wc = send_inv(p, w.bmr->rkey, w.asrc.addr(), w.asrc_mr->lkey,
					     w.bmisc.addr(), w.bmisc_mr->lkey, 73, &recv);
			fill_pattern(w.asrc.p, 9, 64);
			ibv_wc wr = rdma(q, IBV_WR_RDMA_WRITE, 74, w.asrc.addr(), 64,
					 w.asrc_mr->lkey, w.bbuf.addr(64), w.bmr->rkey);
			ktap.result(wc_is(wc, 73, IBV_WC_REM_INV_REQ_ERR) &&
					    wc_is(wr, 74, IBV_WC_SUCCESS) &&
					    is_pattern(w.bbuf.p + 64, 9, 64),
				    "errors: SEND_WITH_INV of a region's rkey: "
				    "IBV_WC_REM_INV_REQ_ERR, the region still works",
				    wc_str(wc) + "; B: " + wc_str(recv) + "; " + wc_str(wr));
		}
	}
	// A window's rkey used as a local key.
	{
		Pair p;
		make_pair(p, w.apd.get(), w.bpd.get(), "window as lkey");
		Mw mw(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_1));
		if (p.ok && mw) {
			ibv_wc b = bind1(p, mw.get(), w.bmr.get(), win(w), kWinLen, kAllRemote, 75);
			if (b.status == IBV_WC_SUCCESS)
				++w.binds;
			ibv_sge sge{win(w), 64, mw->rkey};
			ibv_send_wr wr{};
			wr.wr_id = 76;
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.wr.rdma.remote_addr = w.adst.addr();
			wr.wr.rdma.rkey = w.adst_mr->rkey;
			ibv_wc wc = post_one(p.qb.get(), p.cb.get(), wr);
			ktap.result(wc_is(b, 75, IBV_WC_SUCCESS) && wc_is(wc, 76, IBV_WC_LOC_PROT_ERR),
				    "errors: a window's rkey as a local key: IBV_WC_LOC_PROT_ERR",
				    wc_str(b) + "; " + wc_str(wc));
		}
	}
}

// WRITEs through a type 2 window while B invalidates it.
void test_traffic(World &w)
{
	constexpr size_t kN = 256, kChunk = 4096, kLen = kN * kChunk, kGuard = 8192;
	constexpr size_t kFirst = 64;	// WRITEs posted before the LOCAL_INV
	Pair p;
	make_pair(p, w.apd.get(), w.bpd.get(), "traffic");
	Mw mw(ibv_alloc_mw(w.bpd.get(), IBV_MW_TYPE_2));
	PageBuf src(kLen), dst(kLen + 2 * kGuard);
	Mr src_mr(src.p ? ibv_reg_mr(w.apd.get(), src.p, kLen, IBV_ACCESS_LOCAL_WRITE) : nullptr);
	Mr dst_mr(dst.p ? ibv_reg_mr(w.bpd.get(), dst.p, dst.len, kMrAccess) : nullptr);
	if (!p.ok || !mw || !src_mr || !dst_mr)
		return (void)ktap.result(false, "traffic: pair, window and buffers", errstr(errno));
	const uint32_t k = ibv_inc_rkey(mw->rkey);
	ibv_wc wc = bind2(p, mw.get(), k, dst_mr.get(), dst.addr(kGuard), kLen,
			  IBV_ACCESS_REMOTE_WRITE, 80);
	if (wc.status == IBV_WC_SUCCESS)
		++w.binds;
	for (size_t i = 0; i < kN; ++i)
		fill_pattern(src.p + i * kChunk, 100 + i, kChunk);
	int post_err = 0;
	ibv_wc inv{};
	for (size_t i = 0; i < kN && !post_err; ++i) {
		if (i == kFirst) {
			ibv_send_wr li{};
			li.wr_id = 81;
			li.opcode = IBV_WR_LOCAL_INV;
			li.send_flags = IBV_SEND_SIGNALED;
			li.invalidate_rkey = k;
			ibv_send_wr *lbad;
			post_err = ibv_post_send(p.qb.get(), &li, &lbad);
		}
		ibv_sge sge{src.addr(i * kChunk), uint32_t(kChunk), src_mr->lkey};
		ibv_send_wr wr{};
		wr.wr_id = 1000 + i;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = dst.addr(kGuard + i * kChunk);
		wr.wr.rdma.rkey = k;
		ibv_send_wr *bad;
		if (!post_err)
			post_err = ibv_post_send(p.qa.get(), &wr, &bad);
	}
	inv = next_wc(p.cb.get());
	if (inv.status == IBV_WC_SUCCESS)
		++w.linv;
	// What the window holds when the invalidation completed.
	std::vector<uint8_t> at_inv(dst.p, dst.p + dst.len);
	size_t ok = 0, refused = 0, flushed = 0, other = 0, bad_data = 0;
	for (size_t i = 0; i < kN; ++i) {
		ibv_wc c = next_wc(p.ca.get());
		if (int(c.status) == -1) {
			++other;
			break;
		}
		const size_t n = c.wr_id - 1000;
		if (c.status == IBV_WC_SUCCESS) {
			++ok;
			if (n >= kN || !is_pattern(dst.p + kGuard + n * kChunk, 100 + n, kChunk))
				++bad_data;
		} else if (c.status == IBV_WC_REM_ACCESS_ERR) {
			++refused;
		} else if (c.status == IBV_WC_WR_FLUSH_ERR) {
			++flushed;
		} else {
			++other;
		}
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	const bool same = !std::memcmp(at_inv.data(), dst.p, dst.len);
	const bool guards = all(dst.p, 0, kGuard) && all(dst.p + kGuard + kLen, 0, kGuard);
	ktap.note("traffic: " + std::to_string(ok) + " WRITEs succeeded, " +
		  std::to_string(refused) + " refused, " + std::to_string(flushed) + " flushed");
	ktap.result(wc_is(wc, 80, IBV_WC_SUCCESS) && !post_err &&
			    wc_is(inv, 81, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV) &&
			    ok + refused + flushed == kN && !other && !bad_data && same && guards,
		    "traffic: WRITEs racing a LOCAL_INV: success with the bytes in place or a "
		    "clean error, nothing lands after the invalidation completed",
		    "post " + std::to_string(post_err) + "; " + wc_str(inv) + "; other " +
			    std::to_string(other) + ", bad data " + std::to_string(bad_data) +
			    ", unchanged after invalidation " + std::to_string(same) +
			    ", guards " + std::to_string(guards));
}

void test_counters(World &w, long long b0, long long l0, long long r0)
{
	const long long b = counter("mw_binds") - b0, l = counter("mr_local_inv") - l0,
			r = counter("mr_remote_inv") - r0;
	ktap.result(b0 >= 0 && b == w.binds && l == w.linv && r == w.rinv,
		    "counters: mw_binds, mr_local_inv and mr_remote_inv count the successes",
		    "mw_binds +" + std::to_string(b) + " (want " + std::to_string(w.binds) +
			    "), mr_local_inv +" + std::to_string(l) + " (want " +
			    std::to_string(w.linv) + "), mr_remote_inv +" + std::to_string(r) +
			    " (want " + std::to_string(w.rinv) + ")");
}

// Bind two windows to a region and leave without freeing anything.
[[noreturn]] void exit_bound()
{
	auto *apd = ibv_alloc_pd(g_a.ctx.get());
	auto *bpd = ibv_alloc_pd(g_b.ctx.get());
	auto *buf = new PageBuf(kBuf);
	ibv_mr *mr = bpd && buf->p ? ibv_reg_mr(bpd, buf->p, kBuf, kMrAccess) : nullptr;
	auto *p = new Pair;
	if (apd && bpd && mr)
		make_pair(*p, apd, bpd, "exit-bound");
	ibv_mw *mw1 = ibv_alloc_mw(bpd, IBV_MW_TYPE_1);
	ibv_mw *mw2 = ibv_alloc_mw(bpd, IBV_MW_TYPE_2);
	bool ok = p->ok && mw1 && mw2;
	if (ok) {
		ibv_wc a = bind1(*p, mw1, mr, buf->addr(0), 4096, IBV_ACCESS_REMOTE_READ, 1);
		ibv_wc b = bind2(*p, mw2, ibv_inc_rkey(mw2->rkey), mr, buf->addr(4096), 4096,
				 IBV_ACCESS_REMOTE_READ, 2);
		ok = wc_is(a, 1, IBV_WC_SUCCESS) && wc_is(b, 2, IBV_WC_SUCCESS) &&
		     ibv_dereg_mr(mr) == EBUSY;
	}
	ktap.result(ok, "exit-bound: two windows bound, the region busy; exiting without cleanup");
	ktap.finish();
	std::fflush(stdout);
	_exit(ok ? 0 : 1);
}

} // namespace

int main(int argc, char **argv)
{
	const bool bound = argc == 6 && !std::strcmp(argv[5], "--exit-bound");
	if (argc != 5 && !bound) {
		std::fprintf(stderr, "usage: %s DEV_A GID_INDEX_A DEV_B GID_INDEX_B [--exit-bound]\n",
			     argv[0]);
		return 2;
	}
	if (!open_dev(g_a, argv[1], std::atoi(argv[2])) ||
	    !open_dev(g_b, argv[3], std::atoi(argv[4])))
		return ktap.finish();
	if (bound)
		exit_bound();
	{
		World w;
		w.apd.reset(ibv_alloc_pd(g_a.ctx.get()));
		w.bpd.reset(ibv_alloc_pd(g_b.ctx.get()));
		w.bpd2.reset(ibv_alloc_pd(g_b.ctx.get()));
		if (!w.apd || !w.bpd || !w.bpd2 || !w.asrc.p || !w.adst.p || !w.bbuf.p ||
		    !w.bplain.p || !w.bmisc.p)
			return ktap.result(false, "PDs and buffers", errstr(errno)), ktap.finish();
		w.asrc_mr.reset(ibv_reg_mr(w.apd.get(), w.asrc.p, kBuf, IBV_ACCESS_LOCAL_WRITE));
		w.adst_mr.reset(ibv_reg_mr(w.apd.get(), w.adst.p, kBuf,
					   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
		w.bmr.reset(ibv_reg_mr(w.bpd.get(), w.bbuf.p, kBuf, kMrAccess));
		w.bplain_mr.reset(ibv_reg_mr(w.bpd.get(), w.bplain.p, kBuf,
					     IBV_ACCESS_LOCAL_WRITE | kAllRemote));
		w.bmisc_mr.reset(ibv_reg_mr(w.bpd.get(), w.bmisc.p, kBuf, IBV_ACCESS_LOCAL_WRITE));
		w.bpd2_mr.reset(ibv_reg_mr(w.bpd2.get(), w.bmisc.p, kBuf, kMrAccess));
		if (!ktap.result(w.asrc_mr && w.adst_mr && w.bmr && w.bplain_mr && w.bmisc_mr &&
					 w.bpd2_mr,
				 "register the regions (IBV_ACCESS_MW_BIND accepted)", errstr(errno)))
			return ktap.finish();
		const long long b0 = counter("mw_binds"), l0 = counter("mr_local_inv"),
				r0 = counter("mr_remote_inv");
		test_caps();
		test_type1(w);
		test_type2(w);
		test_wr_api(w);
		test_zero_based(w);
		test_errors(w);
		test_traffic(w);
		test_counters(w, b0, l0, r0);
	}
	return ktap.finish();
}
