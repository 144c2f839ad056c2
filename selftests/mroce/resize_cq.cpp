// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// resize_cq - ibv_resize_cq end to end through the mroce provider: an RC QP
// on device A sends to an RC QP on device B (one process, both devices).
//
//   moves      completions left unpolled survive a grow and a shrink: each
//              arrives exactly once, in order, with its wr_id, and the
//              receiver's data is checked;
//   errors     0, negative, above max_cqe, below the CQEs not yet polled:
//              EINVAL, and the CQ is unchanged and keeps working;
//   cq_ex      the same on an ibv_create_cq_ex CQ read by ibv_start_poll;
//   stale      a second mapping of the old ring, made by the test, stays
//              readable after the resize; the kernel neither writes it nor
//              reads the garbage then written there;
//   traffic    one thread polls while another resizes between random sizes
//              and a third posts RDMA WRITEs: every completion once, in
//              order, every byte written checked.
//
// The number of CQEs waiting in the ring is learnt through the verb itself:
// ibv_resize_cq(cq, k) fails with EINVAL exactly when more than k are
// waiting, so "resize to k fails" means "more than k have arrived".
//
// Usage: mroce_resize_cq DEV_A GID_INDEX_A DEV_B GID_INDEX_B
// Output is KTAP.  Exit status 0 when every case passed.

#include <infiniband/verbs.h>
#include <rdma/mroce-abi.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "verbs_test.hpp"

namespace {

using namespace mroce_test;

Ktap ktap;

using Clock = std::chrono::steady_clock;

constexpr uint32_t kDepth = 128;	// SQ and RQ
constexpr size_t kMsg = 256;		// SEND payload
constexpr size_t kSlots = 512;		// receive buffers on B
constexpr size_t kWrite = 64;		// RDMA WRITE payload (traffic)
constexpr size_t kWrites = 1500;	// RDMA WRITEs (traffic)
constexpr size_t kBuf = kSlots * kMsg + kWrites * kWrite;
constexpr std::chrono::milliseconds kWait(20000);

struct Side {
	Context ctx;
	Pd pd;
	Cq cq;
	std::vector<uint8_t> mem = std::vector<uint8_t>(kBuf);
	Mr mr;
	Qp qp;
	ibv_gid gid{};
	int gid_index = 0;
	uint64_t addr(size_t off) { return uint64_t(uintptr_t(mem.data() + off)); }
};

bool setup(Side &s, const char *dev, int gid_index, int cqe)
{
	s.ctx = open_device(dev);
	if (!s.ctx)
		return ktap.result(false, std::string("open ") + dev, errstr(errno));
	s.gid_index = gid_index;
	s.pd.reset(ibv_alloc_pd(s.ctx.get()));
	s.cq.reset(ibv_create_cq(s.ctx.get(), cqe, nullptr, nullptr, 0));
	s.mr.reset(ibv_reg_mr(s.pd.get(), s.mem.data(), s.mem.size(),
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
	if (!s.pd || !s.cq || !s.mr)
		return ktap.result(false, std::string("PD, CQ, MR on ") + dev, errstr(errno));
	ibv_qp_init_attr a{};
	a.send_cq = a.recv_cq = s.cq.get();
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = kDepth;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	s.qp.reset(ibv_create_qp(s.pd.get(), &a));
	if (!s.qp)
		return ktap.result(false, std::string("ibv_create_qp on ") + dev, errstr(errno));
	if (ibv_query_gid(s.ctx.get(), 1, gid_index, &s.gid))
		return ktap.result(false, std::string("ibv_query_gid on ") + dev, errstr(errno));
	return true;
}

// qp of s to peer_qp of peer.
int connect_qp(Side &s, ibv_qp *qp, const Side &peer, const ibv_qp *peer_qp)
{
	RcConnect c;
	c.access = IBV_ACCESS_REMOTE_WRITE;
	c.rd_atomic = 1;
	return connect_rc(qp, s.gid_index, peer.gid, peer_qp->qp_num, c);
}

int connect_one(Side &s, const Side &peer) { return connect_qp(s, s.qp.get(), peer, peer.qp.get()); }

int post_recv(Side &b, uint64_t wr_id, ibv_qp *qp = nullptr)
{
	ibv_sge sge{b.addr((wr_id % kSlots) * kMsg), uint32_t(kMsg), b.mr->lkey};
	ibv_recv_wr wr{};
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_recv_wr *bad;
	return ibv_post_recv(qp ? qp : b.qp.get(), &wr, &bad);
}

// A signaled SEND of kMsg bytes of pattern_byte(wr_id) from A's slot wr_id.
int post_send(Side &a, uint64_t wr_id, ibv_qp *qp = nullptr)
{
	uint8_t *p = a.mem.data() + (wr_id % kSlots) * kMsg;
	for (size_t i = 0; i < kMsg; ++i)
		p[i] = pattern_byte(wr_id, i);
	ibv_sge sge{a.addr((wr_id % kSlots) * kMsg), uint32_t(kMsg), a.mr->lkey};
	ibv_send_wr wr{};
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_send_wr *bad;
	return ibv_post_send(qp ? qp : a.qp.get(), &wr, &bad);
}

// Checks the next completions of a CQ against an expected, strictly
// increasing series of wr_ids; records the first mismatch.
struct Expect {
	uint64_t next;			// wr_id expected next
	ibv_wc_opcode opcode;
	std::string error;		// first mismatch
	size_t seen = 0;

	bool take(const ibv_wc &wc)
	{
		if (!error.empty())
			return false;
		if (wc.wr_id != next || wc.status != IBV_WC_SUCCESS || wc.opcode != opcode) {
			error = "completion " + std::to_string(seen) + ": wr_id " +
				std::to_string(wc.wr_id) + " (expected " + std::to_string(next) +
				"), status " + ibv_wc_status_str(wc.status) + ", opcode " +
				std::to_string(wc.opcode);
			return false;
		}
		++next;
		++seen;
		return true;
	}
};

// Polls up to n completions into ex, within kWait.  false on a poll error
// or a mismatch (ex.error says which).
bool poll_n(ibv_cq *cq, size_t n, Expect &ex, std::vector<ibv_wc> *out = nullptr)
{
	const auto end = Clock::now() + kWait;
	size_t got = 0;
	while (got < n && Clock::now() < end) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, int(std::min<size_t>(16, n - got)), wc);
		if (k < 0) {
			ex.error = "ibv_poll_cq " + std::to_string(k);
			return false;
		}
		if (k == 0) {
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			continue;
		}
		for (int i = 0; i < k; ++i) {
			if (!ex.take(wc[i]))
				return false;
			if (out)
				out->push_back(wc[i]);
		}
		got += size_t(k);
	}
	if (got < n && ex.error.empty())
		ex.error = std::to_string(got) + " of " + std::to_string(n) + " completions";
	return got == n;
}

// Waits until more than k CQEs wait in the ring (ibv_resize_cq(cq, k) says
// EINVAL).  While fewer are there the probe resizes the CQ to k rounded up:
// the caller picks k so that this still holds every CQE yet to come.  0 once EINVAL was seen (the CQ
// must then still have the cqe it had before: *unchanged), else the last
// result.
int wait_pending_above(ibv_cq *cq, int k, bool *unchanged)
{
	const auto end = Clock::now() + kWait;
	int rc = 0;
	while (Clock::now() < end) {
		const int before = cq->cqe;
		rc = ibv_resize_cq(cq, k);
		if (rc == EINVAL) {
			*unchanged = cq->cqe == before;
			return 0;
		}
		if (rc)
			return rc;
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
	}
	return rc ? rc : ETIMEDOUT;
}

bool check_recv_data(Side &b, const std::vector<ibv_wc> &wcs, std::string &why)
{
	for (const auto &wc : wcs) {
		const uint8_t *p = b.mem.data() + (wc.wr_id % kSlots) * kMsg;
		if (wc.byte_len != kMsg) {
			why = "recv " + std::to_string(wc.wr_id) + " byte_len " +
			      std::to_string(wc.byte_len);
			return false;
		}
		for (size_t i = 0; i < kMsg; ++i)
			if (p[i] != pattern_byte(wc.wr_id, i)) {
				why = "recv " + std::to_string(wc.wr_id) + " byte " +
				      std::to_string(i) + " differs";
				return false;
			}
	}
	return true;
}

// Completions left in the ring across a grow and a shrink.
void test_moves(Side &a, Side &b)
{
	ibv_cq *cq = a.cq.get();
	Expect sends{1, IBV_WC_SEND, {}};
	Expect recvs{1, IBV_WC_RECV, {}};
	std::vector<ibv_wc> rwc;
	const int n1 = 12, n2 = 60;
	bool ok = true;

	ktap.result(cq->cqe == 16, "A's CQ of 16 has cqe 16", "cqe " + std::to_string(cq->cqe));
	for (int i = 1; i <= n1 + n2; ++i)
		ok = ok && post_recv(b, uint64_t(i)) == 0;
	for (int i = 1; i <= n1; ++i)
		ok = ok && post_send(a, uint64_t(i)) == 0;
	if (!ktap.result(ok, "post 72 receives on B and 12 signaled SENDs on A", errstr(errno)))
		return;
	ok = poll_n(cq, 4, sends);
	ktap.result(ok, "poll the first 4 send completions, in order", sends.error);
	// 8 now wait in the ring: resizing to 7 must fail until all are there.
	bool unchanged = false;
	int rc = wait_pending_above(cq, 7, &unchanged);
	ktap.result(rc == 0, "shrink to 7 with 8 completions waiting: EINVAL", errstr(rc));
	ktap.result(unchanged, "the refused shrink left cqe unchanged",
		    "cqe " + std::to_string(cq->cqe));

	rc = ibv_resize_cq(cq, 100);
	ktap.result(rc == 0 && cq->cqe == 128, "grow to 100 with 8 waiting: cqe 128",
		    errstr(rc) + ", cqe " + std::to_string(cq->cqe));
	ok = true;
	for (int i = n1 + 1; i <= n1 + n2; ++i)
		ok = ok && post_send(a, uint64_t(i)) == 0;
	ktap.result(ok, "post 60 more signaled SENDs", errstr(errno));
	ok = poll_n(cq, 20, sends);
	ktap.result(ok && sends.next == 25, "poll 20: wr_id 5..24 in order (8 of them moved)",
		    sends.error);
	// 48 wait (25..72) once everything arrived.
	rc = wait_pending_above(cq, 47, &unchanged);
	ktap.result(rc == 0 && unchanged, "shrink to 47 with 48 waiting: EINVAL, cqe unchanged",
		    errstr(rc) + ", cqe " + std::to_string(cq->cqe));
	const int cqe = cq->cqe;
	rc = ibv_resize_cq(cq, 40);
	ktap.result(rc == EINVAL && cq->cqe == cqe, "shrink to 40 with 48 waiting: EINVAL",
		    errstr(rc) + ", cqe " + std::to_string(cq->cqe));
	rc = ibv_resize_cq(cq, 48);
	ktap.result(rc == 0 && cq->cqe == 64, "shrink to 48 with 48 waiting: cqe 64",
		    errstr(rc) + ", cqe " + std::to_string(cq->cqe));
	ok = poll_n(cq, 48, sends);
	ktap.result(ok && sends.next == 73, "the 48 moved twice arrive, wr_id 25..72 in order",
		    sends.error);
	std::string why;
	ktap.result(quiet(cq, why), "no completion seen twice", why);

	ok = poll_n(b.cq.get(), size_t(n1 + n2), recvs, &rwc);
	ktap.result(ok, "B: 72 receives, wr_id 1..72 in order", recvs.error);
	ktap.result(ok && check_recv_data(b, rwc, why), "B: every received byte as sent", why);
}

void test_errors(Side &a, ibv_device_attr &dattr)
{
	ibv_cq *cq = a.cq.get();
	const int before = cq->cqe;
	int rc = ibv_resize_cq(cq, 0);
	ktap.result(rc == EINVAL, "resize to 0: EINVAL", errstr(rc));
	rc = ibv_resize_cq(cq, -5);
	ktap.result(rc == EINVAL, "resize to -5: EINVAL", errstr(rc));
	rc = ibv_resize_cq(cq, dattr.max_cqe + 1);
	ktap.result(rc == EINVAL, "resize to max_cqe + 1 (" + std::to_string(dattr.max_cqe + 1) +
			"): EINVAL", errstr(rc));
	ktap.result(cq->cqe == before, "the refused resizes left cqe at " + std::to_string(before),
		    "cqe " + std::to_string(cq->cqe));
	rc = ibv_resize_cq(cq, dattr.max_cqe);
	ktap.result(rc == 0 && cq->cqe >= dattr.max_cqe, "resize to max_cqe",
		    errstr(rc) + ", cqe " + std::to_string(cq->cqe));
	rc = ibv_resize_cq(cq, 1);
	ktap.result(rc == 0 && cq->cqe == 1, "an empty CQ shrinks to 1",
		    errstr(rc) + ", cqe " + std::to_string(cq->cqe));
	rc = ibv_resize_cq(cq, 16);
	ktap.result(rc == 0 && cq->cqe == 16, "and grows back to 16",
		    errstr(rc) + ", cqe " + std::to_string(cq->cqe));
}


// Up to n completions through start_poll/next_poll/end_poll, within kWait.
bool poll_ex_n(ibv_cq_ex *cq, size_t n, Expect &ex)
{
	const auto end = Clock::now() + kWait;
	while (ex.seen < n && ex.error.empty() && Clock::now() < end) {
		ibv_poll_cq_attr attr{};
		int rc = ibv_start_poll(cq, &attr);
		if (rc == ENOENT) {
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			continue;
		}
		if (rc) {
			ex.error = "ibv_start_poll " + errstr(rc);
			return false;
		}
		do {
			ibv_wc wc{};
			wc.wr_id = cq->wr_id;
			wc.status = cq->status;
			wc.opcode = ibv_wc_read_opcode(cq);
			if (!ex.take(wc))
				break;
		} while (ex.seen < n && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	if (ex.seen < n && ex.error.empty())
		ex.error = std::to_string(ex.seen) + " of " + std::to_string(n) + " completions";
	return ex.seen == n && ex.error.empty();
}

// The same on a CQ from ibv_create_cq_ex, read through ibv_start_poll.
void test_cq_ex(Side &a, Side &b)
{
	ibv_cq_init_attr_ex ca{};
	ca.cqe = 8;
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	CqEx cqx(ibv_create_cq_ex(a.ctx.get(), &ca));
	if (!ktap.result(bool(cqx), "cq_ex: ibv_create_cq_ex of 8", errstr(errno)))
		return;
	ibv_cq *cq = ibv_cq_ex_to_cq(cqx.get());
	ibv_qp_init_attr qa{};
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	Qp qa2(ibv_create_qp(a.pd.get(), &qa));
	qa.send_cq = qa.recv_cq = b.cq.get();
	Qp qb2(ibv_create_qp(b.pd.get(), &qa));
	int rc = !qa2 || !qb2 ? errno : connect_qp(a, qa2.get(), b, qb2.get());
	if (!rc)
		rc = connect_qp(b, qb2.get(), a, qa2.get());
	if (!ktap.result(rc == 0, "cq_ex: a second QP pair on it", errstr(rc)))
		return;
	bool ok = true;
	for (uint64_t i = 201; i <= 207; ++i)
		ok = ok && post_recv(b, i, qb2.get()) == 0;
	for (uint64_t i = 201; i <= 205; ++i)
		ok = ok && post_send(a, i, qa2.get()) == 0;
	Expect sends{201, IBV_WC_SEND, {}};
	ok = ok && poll_ex_n(cqx.get(), 1, sends);
	ktap.result(ok, "cq_ex: 5 SENDs, the first polled by ibv_start_poll", sends.error);
	// The probe shrinks to 4 while fewer wait: still room for the 4.
	bool unchanged = false;
	rc = wait_pending_above(cq, 3, &unchanged);
	ktap.result(rc == 0 && unchanged, "cq_ex: shrink to 3 with 4 waiting: EINVAL",
		    errstr(rc));
	rc = ibv_resize_cq(cq, 64);
	ktap.result(rc == 0 && cq->cqe == 64, "cq_ex: grow to 64 with 4 waiting",
		    errstr(rc) + ", cqe " + std::to_string(cq->cqe));
	ok = post_send(a, 206, qa2.get()) == 0 && post_send(a, 207, qa2.get()) == 0;
	ok = ok && poll_ex_n(cqx.get(), 7, sends);
	ktap.result(ok && sends.next == 208, "cq_ex: 202..207 arrive once, in order", sends.error);
	std::string why;
	ktap.result(quiet(cq, why), "cq_ex: no completion seen twice", why);
	Expect recvs{201, IBV_WC_RECV, {}};
	std::vector<ibv_wc> rwc;
	ok = poll_n(b.cq.get(), 7, recvs, &rwc);
	ktap.result(ok && check_recv_data(b, rwc, why), "cq_ex: B received 201..207, data as sent",
		    recvs.error + why);
}

// The process's /dev/infiniband/uverbs* mappings: start -> (end, offset).
std::map<uint64_t, std::pair<uint64_t, uint64_t>> uverbs_maps()
{
	std::map<uint64_t, std::pair<uint64_t, uint64_t>> m;
	std::ifstream maps("/proc/self/maps");
	std::string line;
	while (std::getline(maps, line)) {
		unsigned long long start, end, off;
		char perms[8];
		if (line.find("/dev/infiniband/uverbs") != std::string::npos &&
		    std::sscanf(line.c_str(), "%llx-%llx %7s %llx", &start, &end, perms, &off) == 4)
			m[start] = {end, off};
	}
	return m;
}

struct Unmap {
	size_t size;
	void operator()(void *p) const { munmap(p, size); }
};

// A second mapping of a CQ's ring, made by the process itself, outlives a
// resize: it stays readable (stale CQEs), the kernel never writes it again
// nor reads what is written there, and the old offset cannot be mapped anew.
void test_stale_mapping(Side &a, Side &b)
{
	auto before = uverbs_maps();
	Cq cq(ibv_create_cq(a.ctx.get(), 8, nullptr, nullptr, 0));
	auto after = uverbs_maps();
	std::vector<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> fresh;
	for (const auto &m : after)
		if (!before.count(m.first))
			fresh.push_back(m);
	if (!ktap.result(cq && fresh.size() == 1, "stale: a CQ of 8, its ring found in /proc/self/maps",
			 std::to_string(fresh.size()) + " new mappings"))
		return;
	const size_t size = fresh[0].second.first - fresh[0].first;
	const off_t off = off_t(fresh[0].second.second);
	void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, a.ctx->cmd_fd, off);
	if (!ktap.result(p != MAP_FAILED, "stale: the ring mapped a second time by the test",
			 errstr(errno)))
		return;
	std::unique_ptr<void, Unmap> stale(p, Unmap{size});
	auto *ctl = static_cast<mroce_ring_ctl *>(p);
	auto *slots = static_cast<uint8_t *>(p) + MROCE_RING_CTL_SIZE;

	ibv_qp_init_attr qa{};
	qa.send_cq = qa.recv_cq = cq.get();
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	Qp qa3(ibv_create_qp(a.pd.get(), &qa));
	qa.send_cq = qa.recv_cq = b.cq.get();
	Qp qb3(ibv_create_qp(b.pd.get(), &qa));
	int rc = !qa3 || !qb3 ? errno : connect_qp(a, qa3.get(), b, qb3.get());
	if (!rc)
		rc = connect_qp(b, qb3.get(), a, qa3.get());
	if (!ktap.result(rc == 0, "stale: a QP pair on the CQ", errstr(rc)))
		return;
	bool ok = true;
	for (uint64_t i = 301; i <= 308; ++i)
		ok = ok && post_recv(b, i, qb3.get()) == 0;
	for (uint64_t i = 301; i <= 304; ++i)
		ok = ok && post_send(a, i, qa3.get()) == 0;
	// Until the resize our mapping is the live ring: wait there for the 4.
	const auto end = Clock::now() + kWait;
	while (ok && __atomic_load_n(&ctl->producer, __ATOMIC_ACQUIRE) - ctl->consumer < 4 &&
	       Clock::now() < end)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	ok = ok && ctl->producer - ctl->consumer == 4;
	ktap.result(ok, "stale: 4 SENDs, their completions waiting in the ring");
	rc = ibv_resize_cq(cq.get(), 32);
	ktap.result(rc == 0 && cq->cqe == 32, "stale: grow to 32 with 4 waiting", errstr(rc));

	// The old ring as the resize left it: readable, the 4 CQEs still there.
	ok = __atomic_load_n(&ctl->producer, __ATOMIC_ACQUIRE) - ctl->consumer == 4;
	for (uint32_t i = 0; ok && i < 4; ++i) {
		mroce_cqe c;
		std::memcpy(&c, slots + ((ctl->consumer + i) & (ctl->num_entries - 1)) * sizeof(c),
			    sizeof(c));
		ok = c.wr_id == 301 + i;
	}
	ktap.result(ok, "stale: the old mapping still reads the 4 CQEs");
	void *again = mmap(nullptr, size, PROT_READ, MAP_SHARED, a.ctx->cmd_fd, off);
	ktap.result(again == MAP_FAILED, "stale: the old offset cannot be mapped again");
	if (again != MAP_FAILED)
		munmap(again, size);
	// Garbage there, consumer index included, changes nothing.
	std::memset(p, 0xa5, size);
	ok = true;
	for (uint64_t i = 305; i <= 308; ++i)
		ok = ok && post_send(a, i, qa3.get()) == 0;
	Expect sends{301, IBV_WC_SEND, {}};
	ok = ok && poll_n(cq.get(), 8, sends);
	ktap.result(ok && sends.next == 309,
		    "stale: after garbage in the old mapping, 301..308 arrive in order",
		    sends.error);
	std::string why;
	ktap.result(quiet(cq.get(), why), "stale: no completion seen twice", why);
	ok = true;
	for (size_t i = 0; ok && i < size; ++i)
		ok = static_cast<uint8_t *>(p)[i] == 0xa5;
	ktap.result(ok, "stale: the kernel never wrote the old ring again");
	Expect recvs{301, IBV_WC_RECV, {}};
	std::vector<ibv_wc> rwc;
	ok = poll_n(b.cq.get(), 8, recvs, &rwc);
	ktap.result(ok && check_recv_data(b, rwc, why), "stale: B received 301..308, data as sent",
		    recvs.error + why);
}

// Traffic: RDMA WRITEs posted by one thread, polled by another, the CQ
// resized by a third between sizes that hold every WR in flight.
void test_traffic(Side &a, Side &b)
{
	ibv_cq *cq = a.cq.get();
	const size_t base = kSlots * kMsg;	// WRITE area in both buffers
	std::atomic<size_t> polled{0};
	std::atomic<bool> stop{false};
	std::atomic<int> post_err{0};
	const size_t window = 16;		// WRs in flight <= the smallest CQ

	for (size_t i = 0; i < kWrites; ++i)
		for (size_t j = 0; j < kWrite; ++j)
			a.mem[base + i * kWrite + j] = pattern_byte(i + 100000, j);
	std::memset(b.mem.data() + base, 0, kWrites * kWrite);

	std::thread poster([&] {
		for (size_t i = 0; i < kWrites && !stop; ) {
			if (i - polled.load() >= window) {
				std::this_thread::yield();
				continue;
			}
			ibv_sge sge{a.addr(base + i * kWrite), uint32_t(kWrite), a.mr->lkey};
			ibv_send_wr wr{};
			wr.wr_id = 100000 + i;
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.wr.rdma.remote_addr = b.addr(base + i * kWrite);
			wr.wr.rdma.rkey = b.mr->rkey;
			ibv_send_wr *bad;
			if (int rc = ibv_post_send(a.qp.get(), &wr, &bad)) {
				post_err = rc;
				return;
			}
			++i;
		}
	});
	std::atomic<size_t> resizes{0}, refused{0};
	std::atomic<int> resize_err{0};
	std::thread resizer([&] {
		std::mt19937 rng(12345);
		std::uniform_int_distribution<int> size(window, 1024);
		while (!stop) {
			int rc = ibv_resize_cq(cq, size(rng));
			if (rc == 0)
				++resizes;
			else if (rc == EINVAL)
				++refused;	// cannot happen: never more than window wait
			else {
				resize_err = rc;
				return;
			}
			std::this_thread::sleep_for(std::chrono::microseconds(500));
		}
	});
	Expect ex{100000, IBV_WC_RDMA_WRITE, {}};
	const auto end = Clock::now() + 4 * kWait;
	while (ex.seen < kWrites && ex.error.empty() && Clock::now() < end && !post_err &&
	       !resize_err) {
		ibv_wc wc[8];
		int k = ibv_poll_cq(cq, 8, wc);
		if (k < 0) {
			ex.error = "ibv_poll_cq " + std::to_string(k);
			break;
		}
		for (int i = 0; i < k && ex.take(wc[i]); ++i)
			;
		polled = ex.seen;
		if (k == 0)
			std::this_thread::yield();
	}
	stop = true;
	poster.join();
	resizer.join();
	ktap.note(std::to_string(resizes.load()) + " resizes, " + std::to_string(refused.load()) +
		  " refused, " + std::to_string(ex.seen) + " completions");
	ktap.result(post_err == 0, "traffic: every post accepted", errstr(post_err));
	ktap.result(resize_err == 0 && refused == 0 && resizes > 10,
		    "traffic: more than 10 resizes, none failed",
		    errstr(resize_err) + ", " + std::to_string(resizes.load()) + " resizes, " +
			    std::to_string(refused.load()) + " refused");
	ktap.result(ex.seen == kWrites && ex.error.empty(),
		    "traffic: " + std::to_string(kWrites) +
			    " WRITE completions, each once, in order",
		    ex.error.empty() ? std::to_string(ex.seen) + " seen" : ex.error);
	std::string why;
	ktap.result(quiet(cq, why), "traffic: no completion after the last", why);
	ktap.result(std::memcmp(a.mem.data() + base, b.mem.data() + base, kWrites * kWrite) == 0,
		    "traffic: every byte written arrived");
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr, "usage: %s DEV_A GID_INDEX_A DEV_B GID_INDEX_B\n", argv[0]);
		return 2;
	}
	Side a, b;
	if (!setup(a, argv[1], std::atoi(argv[2]), 16) ||
	    !setup(b, argv[3], std::atoi(argv[4]), 1024))
		return ktap.finish();
	int rc = connect_one(a, b);
	if (!rc)
		rc = connect_one(b, a);
	if (!ktap.result(rc == 0, "connect the RC QPs", errstr(rc)))
		return ktap.finish();
	ibv_device_attr dattr{};
	if (!ktap.result(ibv_query_device(a.ctx.get(), &dattr) == 0, "ibv_query_device"))
		return ktap.finish();
	test_moves(a, b);
	test_errors(a, dattr);
	test_cq_ex(a, b);
	test_stale_mapping(a, b);
	test_traffic(a, b);
	return ktap.finish();
}
