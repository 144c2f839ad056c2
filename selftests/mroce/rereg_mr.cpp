// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// rereg_mr - ibv_rereg_mr end to end through the mroce provider.  Device A
// is the requester, device B holds the region that is re-registered (one
// process, both devices, RC QP pairs made afresh whenever a case needs a
// clean pair or an error left one in the error state).
//
//   base         a remote WRITE lands in the registered buffer;
//   translation  CHANGE_TRANSLATION to another buffer: new keys, a WRITE
//                with the new rkey lands in the new buffer and not in the
//                old one, the old rkey fails with IBV_WC_REM_ACCESS_ERR;
//   access       CHANGE_ACCESS without REMOTE_WRITE: a WRITE fails with
//                IBV_WC_REM_ACCESS_ERR, writes nothing, the requester QP is
//                in the error state and flushes the next WR; a READ works;
//   gain write   CHANGE_ACCESS adding write permissions to a region
//                registered read-only: WRITEs then land in it;
//   pd           CHANGE_PD (with CHANGE_ACCESS): a QP of the old PD gets
//                REM_ACCESS_ERR remotely and LOC_PROT_ERR locally, a QP of
//                the new PD uses the region both ways;
//   combined     the three flags at once;
//   errors       unknown flag, no flag, bad access, unsupported access, NULL
//                or unmapped or huge translation, a PD of another device,
//                access without CHANGE_ACCESS: the documented errno, and
//                the region keeps its keys and keeps working;
//   traffic      WRITEs in flight while the region is re-registered (new
//                translation or same access): every completion is a
//                success whose data is in the buffer its rkey named, or a
//                clean REM_ACCESS_ERR / WR_FLUSH_ERR; no WRITE ever lands
//                in a buffer its rkey did not name.
//
// Usage: mroce_rereg_mr DEV_A GID_INDEX_A DEV_B GID_INDEX_B
// Output is KTAP.  Exit status 0 when every case passed.

#include <infiniband/verbs.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "verbs_test.hpp"

namespace {

using namespace mroce_test;

Ktap ktap;

std::string hex(uint32_t v)
{
	char b[16];
	std::snprintf(b, sizeof(b), "%#x", v);
	return b;
}

using Clock = std::chrono::steady_clock;

constexpr uint32_t kDepth = 64;
constexpr size_t kChunk = 64;		// bytes per WRITE
constexpr size_t kWrites = 1024;	// WRITEs of the traffic case
constexpr size_t kBuf = kWrites * kChunk;
constexpr std::chrono::milliseconds kWait(20000);
constexpr int kRw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
constexpr int kAll = kRw | IBV_ACCESS_REMOTE_READ;

// A page-aligned buffer of its own pages (so a translation change really
// moves to other memory).
struct Buf {
	uint8_t *p = nullptr;
	size_t len = 0;
	explicit Buf(size_t n) : len(n)
	{
		void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		p = m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
		if (p)
			std::memset(p, 0, n);
	}
	~Buf()
	{
		if (p)
			munmap(p, len);
	}
	Buf(const Buf &) = delete;
	Buf &operator=(const Buf &) = delete;
	uint64_t addr(size_t off = 0) const { return uint64_t(uintptr_t(p + off)); }
	bool zero(size_t off, size_t n) const
	{
		return std::all_of(p + off, p + off + n, [](uint8_t c) { return c == 0; });
	}
};

struct Dev {
	Context ctx;
	Cq cq;
	ibv_gid gid{};
	int gid_index = 0;
};

bool open_dev(Dev &d, const char *name, int gid_index)
{
	d.ctx = open_device(name);
	if (!d.ctx)
		return ktap.result(false, std::string("open ") + name, errstr(errno));
	d.gid_index = gid_index;
	d.cq.reset(ibv_create_cq(d.ctx.get(), 4 * int(kDepth), nullptr, nullptr, 0));
	if (!d.cq)
		return ktap.result(false, std::string("CQ on ") + name, errstr(errno));
	if (ibv_query_gid(d.ctx.get(), 1, gid_index, &d.gid))
		return ktap.result(false, std::string("ibv_query_gid on ") + name, errstr(errno));
	return true;
}

Qp make_qp(Dev &d, ibv_pd *pd)
{
	ibv_qp_init_attr a{};
	a.send_cq = a.recv_cq = d.cq.get();
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = kDepth;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	return Qp(ibv_create_qp(pd, &a));
}

int connect_qp(Dev &s, ibv_qp *qp, const Dev &peer, const ibv_qp *peer_qp)
{
	RcConnect c;
	c.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	return connect_rc(qp, s.gid_index, peer.gid, peer_qp->qp_num, c);
}

Dev g_a, g_b;

// A connected pair: qa on A (PD apd) and qb on B (PD bpd).
struct Pair {
	Qp qa, qb;
	bool ok() const { return qa && qb; }
};

Pair make_pair(ibv_pd *apd, ibv_pd *bpd, const std::string &what)
{
	Pair p;
	p.qa = make_qp(g_a, apd);
	p.qb = make_qp(g_b, bpd);
	int rc = (!p.qa || !p.qb) ? errno : 0;
	if (!rc)
		rc = connect_qp(g_a, p.qa.get(), g_b, p.qb.get());
	if (!rc)
		rc = connect_qp(g_b, p.qb.get(), g_a, p.qa.get());
	if (rc) {
		ktap.result(false, what + ": create and connect an RC pair", errstr(rc));
		return Pair{};
	}
	return p;
}

int post_rdma(ibv_qp *qp, ibv_wr_opcode op, uint64_t wr_id, uint64_t laddr, uint32_t len,
	      uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	ibv_sge sge{laddr, len, lkey};
	ibv_send_wr wr{};
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	ibv_send_wr *bad;
	return ibv_post_send(qp, &wr, &bad);
}

// The next completion of cq, within kWait.
bool poll_one(ibv_cq *cq, ibv_wc &wc)
{
	const auto end = Clock::now() + kWait;
	while (Clock::now() < end) {
		int k = ibv_poll_cq(cq, 1, &wc);
		if (k < 0)
			return false;
		if (k == 1)
			return true;
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	return false;
}

// Posts one RDMA op on qp and returns its completion status (-1: none).
int one_op(ibv_qp *qp, ibv_cq *cq, ibv_wr_opcode op, uint64_t laddr, uint32_t len,
	   uint32_t lkey, uint64_t raddr, uint32_t rkey, std::string &why)
{
	static uint64_t id = 1;
	const uint64_t my = id++;
	if (int rc = post_rdma(qp, op, my, laddr, len, lkey, raddr, rkey)) {
		why = "ibv_post_send " + errstr(rc);
		return -1;
	}
	ibv_wc wc{};
	if (!poll_one(cq, wc)) {
		why = "no completion";
		return -1;
	}
	if (wc.wr_id != my) {
		why = "completion of wr_id " + std::to_string(wc.wr_id);
		return -1;
	}
	why = std::string("status ") + ibv_wc_status_str(wc.status);
	return wc.status;
}

int qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

// Objects of device A used by every case: the source of WRITEs, the
// destination of READs, and a region B's QPs write into.
struct ASide {
	Pd pd;
	Buf src{kBuf};
	Buf dst{kBuf};
	Mr src_mr, dst_mr;
};

// Device B: two PDs and the region under test.
struct BSide {
	Pd pd1, pd2;
	Buf b1{kBuf}, b2{kBuf}, b3{kBuf}, local{kBuf};
	Mr mr;			// the region re-registered
	Mr local1, local2;	// a source for B's own WRITEs, on pd1 and pd2
};

// A WRITE of n bytes of pattern_byte(id) from A to raddr/rkey on a fresh pair
// with B's QP on bpd; returns the status.
int remote_write(ASide &a, ibv_pd *bpd, uint64_t id, uint64_t raddr, uint32_t rkey, size_t n,
		 std::string &why, int *state_after = nullptr)
{
	Pair p = make_pair(a.pd.get(), bpd, "remote write");
	if (!p.ok()) {
		why = "no pair";
		return -1;
	}
	fill_pattern(a.src.p, id, n);
	int st = one_op(p.qa.get(), g_a.cq.get(), IBV_WR_RDMA_WRITE, a.src.addr(), uint32_t(n),
			a.src_mr->lkey, raddr, rkey, why);
	if (state_after)
		*state_after = qp_state(p.qa.get());
	return st;
}

void test_base(ASide &a, BSide &b)
{
	std::string why;
	int st = remote_write(a, b.pd1.get(), 1, b.b1.addr(), b.mr->rkey, kChunk, why);
	ktap.result(st == IBV_WC_SUCCESS && is_pattern(b.b1.p, 1, kChunk),
		    "base: a remote WRITE lands in the registered buffer", why);
}

void test_translation(ASide &a, BSide &b)
{
	const uint32_t old_lkey = b.mr->lkey, old_rkey = b.mr->rkey;
	std::memset(b.b1.p, 0, kBuf);
	int rc = ibv_rereg_mr(b.mr.get(), IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, b.b2.p,
			      kBuf / 2, 0);
	if (!ktap.result(rc == 0, "translation: ibv_rereg_mr(CHANGE_TRANSLATION) returns 0",
			 std::to_string(rc) + ", " + errstr(errno)))
		return;
	ktap.result(b.mr->addr == b.b2.p && b.mr->length == kBuf / 2 &&
			    b.mr->pd == b.pd1.get(),
		    "translation: ibv_mr has the new addr and length, the same PD");
	ktap.result(b.mr->rkey != old_rkey && b.mr->lkey != old_lkey && b.mr->lkey == b.mr->rkey &&
			    (b.mr->rkey >> 8) == (old_rkey >> 8),
		    "translation: new lkey/rkey (same index, other low byte)",
		    hex(old_rkey) + " -> " + hex(b.mr->rkey));
	std::string why;
	int st = remote_write(a, b.pd1.get(), 2, b.b2.addr(64), b.mr->rkey, kChunk, why);
	ktap.result(st == IBV_WC_SUCCESS && is_pattern(b.b2.p + 64, 2, kChunk),
		    "translation: a WRITE with the new rkey lands in the new buffer", why);
	ktap.result(b.b1.zero(0, kBuf), "translation: the old buffer is untouched");
	// Same iova as the old buffer's start, with the old rkey: the key is dead.
	int state = -1;
	st = remote_write(a, b.pd1.get(), 3, b.b1.addr(), old_rkey, kChunk, why, &state);
	ktap.result(st == IBV_WC_REM_ACCESS_ERR && b.b1.zero(0, kBuf),
		    "translation: the old rkey fails with REM_ACCESS_ERR", why);
	ktap.result(state == IBV_QPS_ERR, "translation: the requester QP is in the error state",
		    "state " + std::to_string(state));
	st = remote_write(a, b.pd1.get(), 4, b.b2.addr(kBuf / 2 - 8), b.mr->rkey, kChunk, why);
	ktap.result(st == IBV_WC_REM_ACCESS_ERR,
		    "translation: a WRITE past the new length fails with REM_ACCESS_ERR", why);
}

void test_access(ASide &a, BSide &b)
{
	const uint32_t old_rkey = b.mr->rkey;
	int rc = ibv_rereg_mr(b.mr.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!ktap.result(rc == 0, "access: ibv_rereg_mr(CHANGE_ACCESS) without REMOTE_WRITE",
			 std::to_string(rc) + ", " + errstr(errno)))
		return;
	ktap.result(b.mr->addr == b.b2.p && b.mr->length == kBuf / 2 && b.mr->rkey != old_rkey,
		    "access: same translation, new rkey");
	std::memset(b.b2.p, 0, kBuf);
	fill_pattern(b.b2.p + 256, 5, kChunk);
	Pair p = make_pair(a.pd.get(), b.pd1.get(), "access");
	if (!p.ok())
		return;
	fill_pattern(a.src.p, 6, kChunk);
	std::string why;
	int st = one_op(p.qa.get(), g_a.cq.get(), IBV_WR_RDMA_WRITE, a.src.addr(), kChunk,
			a.src_mr->lkey, b.b2.addr(), b.mr->rkey, why);
	ktap.result(st == IBV_WC_REM_ACCESS_ERR && b.b2.zero(0, 256),
		    "access: a remote WRITE fails with REM_ACCESS_ERR and writes nothing", why);
	int state = qp_state(p.qa.get());
	ktap.result(state == IBV_QPS_ERR, "access: the requester QP is in the error state",
		    "state " + std::to_string(state));
	st = one_op(p.qa.get(), g_a.cq.get(), IBV_WR_RDMA_READ, a.dst.addr(), kChunk,
		    a.dst_mr->lkey, b.b2.addr(256), b.mr->rkey, why);
	ktap.result(st == IBV_WC_WR_FLUSH_ERR, "access: the next WR is flushed", why);
	std::memset(a.dst.p, 0, kChunk);
	Pair q = make_pair(a.pd.get(), b.pd1.get(), "access");
	if (!q.ok())
		return;
	st = one_op(q.qa.get(), g_a.cq.get(), IBV_WR_RDMA_READ, a.dst.addr(), kChunk,
		    a.dst_mr->lkey, b.b2.addr(256), b.mr->rkey, why);
	ktap.result(st == IBV_WC_SUCCESS && is_pattern(a.dst.p, 5, kChunk),
		    "access: a remote READ (REMOTE_READ kept) works on a new pair", why);
}

// A region registered without any write permission gains LOCAL_WRITE |
// REMOTE_WRITE (the kernel pins it again as a writable umem), and a remote
// WRITE then lands in the process's buffer.  The buffer is a private
// mapping of a file (a memfd) never written: a pin of its page cache
// pages would let the WRITE change the file, which must stay as it was.
// (Debian's 6.1 ib_umem_get() breaks COW even for a read-only
// registration, so this checks the outcome, not the second pin itself.)
void test_gain_write(ASide &a, BSide &b)
{
	const size_t n = 4 * 4096;
	int fd = memfd_create("mroce_rereg", 0);
	if (fd < 0 || ftruncate(fd, off_t(n)))
		return (void)ktap.result(false, "gain write: memfd", errstr(errno));
	std::vector<uint8_t> file(n, 0xa5);
	void *m = MAP_FAILED;
	if (pwrite(fd, file.data(), n, 0) == ssize_t(n))
		m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return (void)ktap.result(false, "gain write: map the memfd", errstr(errno));
	}
	auto *buf = static_cast<uint8_t *>(m);
	Mr ro(ibv_reg_mr(b.pd1.get(), buf, n, IBV_ACCESS_REMOTE_READ));
	if (ktap.result(bool(ro), "gain write: register a private file mapping read-only",
			errstr(errno))) {
		std::string why;
		const size_t off = 4096 + 64;
		int st = remote_write(a, b.pd1.get(), 21, uint64_t(uintptr_t(buf + off)), ro->rkey,
				      kChunk, why);
		ktap.result(st == IBV_WC_REM_ACCESS_ERR,
			    "gain write: a WRITE into the read-only region fails", why);
		int rc = ibv_rereg_mr(ro.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
				      kAll);
		if (ktap.result(rc == 0, "gain write: rereg to LOCAL_WRITE | REMOTE_WRITE",
				std::to_string(rc) + ", " + errstr(errno))) {
			st = remote_write(a, b.pd1.get(), 22, uint64_t(uintptr_t(buf + off)),
					  ro->rkey, kChunk, why);
			ktap.result(st == IBV_WC_SUCCESS && is_pattern(buf + off, 22, kChunk),
				    "gain write: a WRITE lands in the process's private copy", why);
			std::vector<uint8_t> now(n);
			ktap.result(pread(fd, now.data(), n, 0) == ssize_t(n) && now == file,
				    "gain write: the file itself is unchanged");
		}
	}
	ro.reset();
	munmap(m, n);
	close(fd);
}

void test_pd(ASide &a, BSide &b)
{
	int rc = ibv_rereg_mr(b.mr.get(), IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS,
			      b.pd2.get(), nullptr, 0, kAll);
	if (!ktap.result(rc == 0, "pd: ibv_rereg_mr(CHANGE_PD | CHANGE_ACCESS) to another PD",
			 std::to_string(rc) + ", " + errstr(errno)))
		return;
	ktap.result(b.mr->pd == b.pd2.get() && b.mr->addr == b.b2.p,
		    "pd: ibv_mr has the new PD, the same addr");
	std::memset(b.b2.p, 0, kBuf);
	std::string why;
	int st = remote_write(a, b.pd1.get(), 7, b.b2.addr(), b.mr->rkey, kChunk, why);
	ktap.result(st == IBV_WC_REM_ACCESS_ERR && b.b2.zero(0, kBuf),
		    "pd: a QP of the old PD gets REM_ACCESS_ERR remotely", why);
	st = remote_write(a, b.pd2.get(), 8, b.b2.addr(128), b.mr->rkey, kChunk, why);
	ktap.result(st == IBV_WC_SUCCESS && is_pattern(b.b2.p + 128, 8, kChunk),
		    "pd: a QP of the new PD can WRITE into it", why);

	// B's own QPs use the region as a local source.
	fill_pattern(b.b2.p + 512, 9, kChunk);
	std::memset(a.dst.p, 0, kBuf);
	Pair p1 = make_pair(a.pd.get(), b.pd1.get(), "pd");
	if (!p1.ok())
		return;
	st = one_op(p1.qb.get(), g_b.cq.get(), IBV_WR_RDMA_WRITE, b.b2.addr(512), kChunk,
		    b.mr->lkey, a.dst.addr(), a.dst_mr->rkey, why);
	ktap.result(st == IBV_WC_LOC_PROT_ERR && a.dst.zero(0, kBuf),
		    "pd: a QP of the old PD gets LOC_PROT_ERR with its lkey", why);
	Pair p2 = make_pair(a.pd.get(), b.pd2.get(), "pd");
	if (!p2.ok())
		return;
	st = one_op(p2.qb.get(), g_b.cq.get(), IBV_WR_RDMA_WRITE, b.b2.addr(512), kChunk,
		    b.mr->lkey, a.dst.addr(), a.dst_mr->rkey, why);
	ktap.result(st == IBV_WC_SUCCESS && is_pattern(a.dst.p, 9, kChunk),
		    "pd: a QP of the new PD uses its lkey", why);
}

void test_combined(ASide &a, BSide &b)
{
	const uint32_t old_rkey = b.mr->rkey;
	std::memset(b.b2.p, 0, kBuf);
	std::memset(b.b3.p, 0, kBuf);
	int rc = ibv_rereg_mr(b.mr.get(),
			      IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
				      IBV_REREG_MR_CHANGE_ACCESS,
			      b.pd1.get(), b.b3.p, kBuf, kRw);
	if (!ktap.result(rc == 0, "combined: ibv_rereg_mr with the three flags",
			 std::to_string(rc) + ", " + errstr(errno)))
		return;
	ktap.result(b.mr->pd == b.pd1.get() && b.mr->addr == b.b3.p && b.mr->length == kBuf &&
			    b.mr->rkey != old_rkey,
		    "combined: ibv_mr has the new PD, addr, length and rkey");
	std::string why;
	int st = remote_write(a, b.pd1.get(), 10, b.b3.addr(kBuf - kChunk), b.mr->rkey, kChunk,
			      why);
	ktap.result(st == IBV_WC_SUCCESS && is_pattern(b.b3.p + kBuf - kChunk, 10, kChunk) &&
			    b.b2.zero(0, kBuf),
		    "combined: a WRITE through a QP of the new PD lands in the new buffer", why);
	st = remote_write(a, b.pd2.get(), 11, b.b3.addr(), b.mr->rkey, kChunk, why);
	ktap.result(st == IBV_WC_REM_ACCESS_ERR && b.b3.zero(0, kChunk),
		    "combined: a QP of the previous PD gets REM_ACCESS_ERR", why);
	Pair p = make_pair(a.pd.get(), b.pd1.get(), "combined");
	if (!p.ok())
		return;
	st = one_op(p.qa.get(), g_a.cq.get(), IBV_WR_RDMA_READ, a.dst.addr(), kChunk,
		    a.dst_mr->lkey, b.b3.addr(), b.mr->rkey, why);
	ktap.result(st == IBV_WC_REM_ACCESS_ERR,
		    "combined: REMOTE_READ was dropped: a READ gets REM_ACCESS_ERR", why);
}

// A failed ibv_rereg_mr: its return value and errno, and nothing changed.
void expect_fail(BSide &b, const std::string &name, int flags, ibv_pd *pd, void *addr,
		 size_t len, int access, int want_ret, int want_errno)
{
	const ibv_mr before = *b.mr;
	errno = 0;
	int rc = ibv_rereg_mr(b.mr.get(), flags, pd, addr, len, access);
	int e = errno;
	bool same = b.mr->lkey == before.lkey && b.mr->rkey == before.rkey &&
		    b.mr->addr == before.addr && b.mr->length == before.length &&
		    b.mr->pd == before.pd;
	ktap.result(rc == want_ret && e == want_errno && same, "errors: " + name,
		    "returned " + std::to_string(rc) + " (want " + std::to_string(want_ret) +
			    "), errno " + errstr(e) + " (want " + errstr(want_errno) + ")" +
			    (same ? "" : ", the ibv_mr changed"));
}

void test_errors(ASide &a, BSide &b)
{
	const int in = IBV_REREG_MR_ERR_INPUT, cmd = IBV_REREG_MR_ERR_CMD;
	const int tr = IBV_REREG_MR_CHANGE_TRANSLATION, ac = IBV_REREG_MR_CHANGE_ACCESS;
	expect_fail(b, "an unknown flag: EINVAL", 1 << 3, nullptr, nullptr, 0, 0, in, EINVAL);
	expect_fail(b, "no flag: EINVAL", 0, nullptr, nullptr, 0, 0, cmd, EINVAL);
	expect_fail(b, "access without CHANGE_ACCESS: EINVAL", tr, nullptr, b.b1.p, kBuf, kRw, in,
		    EINVAL);
	expect_fail(b, "REMOTE_WRITE without LOCAL_WRITE: EINVAL", ac, nullptr, nullptr, 0,
		    IBV_ACCESS_REMOTE_WRITE, cmd, EINVAL);
	expect_fail(b, "ZERO_BASED access: EOPNOTSUPP", ac, nullptr, nullptr, 0,
		    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED, cmd, EOPNOTSUPP);
	expect_fail(b, "translation to NULL: EINVAL", tr, nullptr, nullptr, kBuf, 0, in, EINVAL);
	expect_fail(b, "translation of length 0: EINVAL", tr, nullptr, b.b1.p, 0, 0, in, EINVAL);
	expect_fail(b, "translation of 2^60 bytes: EINVAL", tr, nullptr, b.b1.p, size_t(1) << 60,
		    0, cmd, EINVAL);
	// An unmapped range: map, then unmap.
	void *hole = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	if (hole != MAP_FAILED) {
		munmap(hole, 1 << 16);
		expect_fail(b, "translation to unmapped memory: EFAULT", tr, nullptr, hole,
			    1 << 16, 0, cmd, EFAULT);
	}
	expect_fail(b, "a PD of another device: EINVAL", IBV_REREG_MR_CHANGE_PD, a.pd.get(),
		    nullptr, 0, 0, cmd, EINVAL);
	expect_fail(b, "CHANGE_PD to a NULL PD: EINVAL", IBV_REREG_MR_CHANGE_PD, nullptr, nullptr,
		    0, 0, cmd, EINVAL);
	// Still the region of test_combined: pd1, b3, kRw.
	std::memset(b.b3.p, 0, kBuf);
	std::string why;
	int st = remote_write(a, b.pd1.get(), 12, b.b3.addr(1024), b.mr->rkey, kChunk, why);
	ktap.result(st == IBV_WC_SUCCESS && is_pattern(b.b3.p + 1024, 12, kChunk),
		    "errors: after the failures the region still works", why);
}

// Bytes a failed WRITE may have left at its offset: in a buffer its rkey
// named, any mix of its pattern and zeros (verbs leave the target of a
// failed WR undefined); elsewhere only zeros.
bool partial_ok(const uint8_t *p, uint64_t id, size_t n)
{
	for (size_t i = 0; i < n; ++i)
		if (p[i] && p[i] != pattern_byte(id, i))
			return false;
	return true;
}

// WRITEs in flight while another thread re-registers the region (between
// its two traffic buffers, or to a new key only).  Write i goes to offset
// i * kTChunk of whichever buffer the rkey it carries named when posted;
// the poster learns the keys after each rereg returned, so it also posts
// with keys that just died.
void test_traffic(ASide &a, BSide &b)
{
	constexpr size_t kTChunk = 8192, kTWrites = 256, kTBuf = kTChunk * kTWrites;
	// The WRITEs are spread over at least this many reregs: write i is
	// posted only after i * kTReregs / kTWrites of them started, so the
	// interleaving does not depend on how fast either side runs, and the
	// WRITEs of a step run while its rereg does (some with the key it is
	// killing).
	constexpr size_t kTReregs = 16;
	Buf src{kTBuf}, t1{kTBuf}, t2{kTBuf};
	if (!src.p || !t1.p || !t2.p)
		return (void)ktap.result(false, "traffic: buffers", errstr(errno));
	Mr src_mr(ibv_reg_mr(a.pd.get(), src.p, kTBuf, IBV_ACCESS_LOCAL_WRITE));
	int rc = ibv_rereg_mr(b.mr.get(),
			      IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS,
			      nullptr, t1.p, kTBuf, kRw);
	if (!ktap.result(rc == 0 && src_mr, "traffic: rereg to the first buffer", errstr(errno)))
		return;
	std::mutex lock;	// rkey, cur, named
	std::map<uint32_t, std::set<const Buf *>> named;	// rkey -> buffers it named
	uint32_t rkey = b.mr->rkey;
	const Buf *cur = &t1;
	named[rkey].insert(cur);
	std::vector<uint32_t> rkey_of(kTWrites);
	std::vector<int> status(kTWrites, -1);
	for (size_t i = 0; i < kTWrites; ++i)
		fill_pattern(src.p + i * kTChunk, 1000 + i, kTChunk);

	std::atomic<bool> stop{false};
	std::atomic<size_t> rereg_n{0}, rereg_err{0}, rereg_started{0};
	std::atomic<int64_t> rereg_us{0};
	std::thread rereger([&] {
		const Buf *at = &t1;	// only this thread changes b.mr
		while (!stop) {
			const auto t0 = Clock::now();
			++rereg_started;
			const bool move = rereg_n % 2 == 0;
			const Buf *to = move ? (at == &t1 ? &t2 : &t1) : at;
			int r = ibv_rereg_mr(b.mr.get(),
					     move ? IBV_REREG_MR_CHANGE_TRANSLATION :
						    IBV_REREG_MR_CHANGE_ACCESS,
					     nullptr, move ? to->p : nullptr, move ? kTBuf : 0,
					     move ? 0 : kRw);
			rereg_us += std::chrono::duration_cast<std::chrono::microseconds>(
					    Clock::now() - t0).count();
			if (r) {
				++rereg_err;
			} else {
				at = to;
				std::lock_guard<std::mutex> g(lock);
				rkey = b.mr->rkey;
				cur = at;
				named[rkey].insert(cur);
				++rereg_n;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(30));
		}
	});

	// One WRITE in flight by default.  With more, a WRITE that fails at
	// the responder while an earlier one is still incomplete can be
	// reported as a success: its segments are acknowledged before the
	// fatal NAK is sent (Documentation/mroce-protocol.rst, open question
	// 29).  MROCE_REREG_TRAFFIC_DEPTH=8 shows it.
	const char *env = std::getenv("MROCE_REREG_TRAFFIC_DEPTH");
	const size_t depth = std::clamp<size_t>(env ? std::strtoul(env, nullptr, 0) : 1, 1, 32);
	size_t next = 0, done = 0, outstanding = 0, pairs = 0;
	bool broken = true;	// no pair yet, or the pair saw an error
	std::string error;
	Pair p;
	const auto end = Clock::now() + 6 * kWait;
	while (done < kTWrites && error.empty() && Clock::now() < end) {
		if (broken && !outstanding) {
			p = make_pair(a.pd.get(), b.pd1.get(), "traffic");
			++pairs;
			if (!p.ok()) {
				error = "no pair";
				break;
			}
			broken = false;
		}
		while (!broken && outstanding < depth && next < kTWrites &&
		       next * kTReregs <= rereg_started * kTWrites) {
			uint32_t k;
			uint64_t raddr;
			{
				std::lock_guard<std::mutex> g(lock);
				k = rkey;
				raddr = cur->addr(next * kTChunk);
			}
			rkey_of[next] = k;
			if (post_rdma(p.qa.get(), IBV_WR_RDMA_WRITE, next, src.addr(next * kTChunk),
				      kTChunk, src_mr->lkey, raddr, k)) {
				error = "ibv_post_send failed for write " + std::to_string(next);
				break;
			}
			++next;
			++outstanding;
		}
		ibv_wc wc[16];
		int k = ibv_poll_cq(g_a.cq.get(), 16, wc);
		if (k < 0) {
			error = "ibv_poll_cq " + std::to_string(k);
			break;
		}
		for (int j = 0; j < k; ++j) {
			if (wc[j].wr_id >= kTWrites || status[wc[j].wr_id] != -1) {
				error = "bad or repeated wr_id " + std::to_string(wc[j].wr_id);
				break;
			}
			status[wc[j].wr_id] = wc[j].status;
			broken |= wc[j].status != IBV_WC_SUCCESS;
			--outstanding;
			++done;
		}
		if (k == 0)
			std::this_thread::yield();
	}
	stop = true;
	rereger.join();
	p = Pair{};
	size_t ok = 0, acc = 0, flush = 0, other = 0, lost = 0;
	std::string bad;
	for (size_t i = 0; i < next && bad.empty(); ++i) {
		const size_t off = i * kTChunk;
		const auto &set = named[rkey_of[i]];
		bool placed = false;
		for (const Buf *buf : {&t1, &t2}) {
			const bool allowed = set.count(buf) != 0;
			const uint8_t *q = buf->p + off;
			if (!allowed && !buf->zero(off, kTChunk))
				bad = "write " + std::to_string(i) + " (rkey " + hex(rkey_of[i]) +
				      ") wrote into a buffer its rkey never named";
			else if (!partial_ok(q, 1000 + i, kTChunk))
				bad = "write " + std::to_string(i) + ": garbage at its offset";
			placed |= allowed && is_pattern(q, 1000 + i, kTChunk);
		}
		if (status[i] == IBV_WC_SUCCESS) {
			++ok;
			lost += !placed;
			if (!placed && lost <= 3) {
				// Which 1 KiB packets arrived where.
				std::string map;
				for (size_t q = 0; q < kTChunk; q += 1024) {
					char c = '.';
					for (const Buf *buf : {&t1, &t2})
						if (is_pattern(buf->p + off + q, 0, 0) &&
						    buf->p[off + q] == pattern_byte(1000 + i, q))
							c = buf == &t1 ? '1' : '2';
					map += c;
				}
				ktap.note("lost write " + std::to_string(i) + " rkey " +
					  hex(rkey_of[i]) + " named " + std::to_string(set.size()) +
					  " buffer(s), packets " + map + ", status of " +
					  std::to_string(i + 1) + ": " +
					  (i + 1 < next ? std::to_string(status[i + 1]) : "-"));
			}
		} else if (status[i] == IBV_WC_REM_ACCESS_ERR) {
			++acc;
		} else if (status[i] == IBV_WC_WR_FLUSH_ERR) {
			++flush;
		} else {
			++other;
		}
	}
	ktap.note(std::to_string(next) + " writes of " + std::to_string(kTChunk) + " bytes, " +
		  std::to_string(depth) + " in flight, " +
		  std::to_string(rereg_n) + " reregs, " + std::to_string(pairs) + " QP pairs: " +
		  std::to_string(ok) + " ok, " + std::to_string(acc) + " REM_ACCESS_ERR, " +
		  std::to_string(flush) + " WR_FLUSH_ERR, " + std::to_string(other) + " other; " +
		  std::to_string(rereg_us / int64_t(std::max<size_t>(1, rereg_n + rereg_err))) +
		  " us a rereg");
	ktap.result(error.empty() && done == kTWrites,
		    "traffic: every WRITE posted and completed once",
		    error.empty() ? std::to_string(done) + " completed" : error);
	ktap.result(rereg_err == 0 && rereg_n >= kTReregs,
		    "traffic: at least " + std::to_string(kTReregs) + " reregs, none failed",
		    std::to_string(rereg_n) + " done, " + std::to_string(rereg_err) + " failed");
	ktap.result(other == 0, "traffic: every completion SUCCESS, REM_ACCESS_ERR or FLUSH",
		    std::to_string(other) + " others");
	ktap.result(ok > 0 && acc > 0, "traffic: some WRITEs succeeded, some met a dead rkey",
		    std::to_string(ok) + " ok, " + std::to_string(acc) + " REM_ACCESS_ERR");
	ktap.result(lost == 0, "traffic: every successful WRITE is in the buffer its rkey named",
		    std::to_string(lost) + " of " + std::to_string(ok) + " missing");
	ktap.result(bad.empty(), "traffic: no WRITE landed anywhere else", bad);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr, "usage: %s DEV_A GID_INDEX_A DEV_B GID_INDEX_B\n", argv[0]);
		return 2;
	}
	if (!open_dev(g_a, argv[1], std::atoi(argv[2])) ||
	    !open_dev(g_b, argv[3], std::atoi(argv[4])))
		return ktap.finish();
	{
		ASide a;
		BSide b;
		a.pd.reset(ibv_alloc_pd(g_a.ctx.get()));
		b.pd1.reset(ibv_alloc_pd(g_b.ctx.get()));
		b.pd2.reset(ibv_alloc_pd(g_b.ctx.get()));
		if (!a.pd || !b.pd1 || !b.pd2 || !a.src.p || !a.dst.p || !b.b1.p || !b.b2.p ||
		    !b.b3.p)
			return ktap.result(false, "PDs and buffers", errstr(errno)), ktap.finish();
		a.src_mr.reset(ibv_reg_mr(a.pd.get(), a.src.p, kBuf, IBV_ACCESS_LOCAL_WRITE));
		a.dst_mr.reset(ibv_reg_mr(a.pd.get(), a.dst.p, kBuf, kRw));
		b.mr.reset(ibv_reg_mr(b.pd1.get(), b.b1.p, kBuf, kAll));
		if (!ktap.result(a.src_mr && a.dst_mr && b.mr, "register the regions", errstr(errno)))
			return ktap.finish();
		test_base(a, b);
		test_translation(a, b);
		test_access(a, b);
		test_gain_write(a, b);
		test_pd(a, b);
		test_combined(a, b);
		test_errors(a, b);
		test_traffic(a, b);
		b.mr.reset();
	}
	return ktap.finish();
}
