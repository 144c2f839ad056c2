// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// IBV_SEND_FENCE through the mroce provider and kernel (test_fence.sh).
// mroce places WRITEs out of order at the responder and reads a READ's
// source when it sends the response, so an unfenced WRITE posted after a
// READ of the same bytes may change what the READ returns (as verbs
// allow).  A fenced WR must not leave before every earlier READ and
// atomic completed.  Checked from one process that sees both sides'
// memory: at the moment the fenced WRITE's bytes appear at the responder,
// the READ's data must already be complete at the requester, and the
// READ must return the bytes from before the WRITE.  With ibv_post_send,
// with the ibv_wr_* API, behind a fetch-and-add, and a fenced SEND.
//
//   mroce_fence DEV_A GID_INDEX_A DEV_B GID_INDEX_B
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "verbs_test.hpp"

namespace {

using namespace mroce_test;
using Clock = std::chrono::steady_clock;

Ktap ktap;

constexpr size_t kRead = 2 << 20;	// the READ: long enough to stream a while
constexpr size_t kWrite = 4096;		// the fenced WRITE, over the READ's last bytes
constexpr int kRounds = 4;
constexpr std::chrono::milliseconds kWait(60000);
constexpr uint8_t kMark = 0xee;		// the WRITE's bytes; never in the pattern

uint8_t pattern(size_t round, size_t i) { return uint8_t(((round * 37 + i * 7) & 0x7f) + 1); }

struct Dev {
	Context ctx;
	Pd pd;
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
	d.pd.reset(ibv_alloc_pd(d.ctx.get()));
	d.cq.reset(ibv_create_cq(d.ctx.get(), 64, nullptr, nullptr, 0));
	if (!d.pd || !d.cq)
		return ktap.result(false, std::string("PD and CQ on ") + name, errstr(errno));
	if (ibv_query_gid(d.ctx.get(), 1, gid_index, &d.gid))
		return ktap.result(false, std::string("ibv_query_gid on ") + name, errstr(errno));
	return true;
}

// An RC QP, with the ibv_wr_* API when ex.
Qp make_qp(Dev &d, bool ex)
{
	ibv_qp_init_attr_ex a{};
	a.send_cq = a.recv_cq = d.cq.get();
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = d.pd.get();
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE |
				   IBV_QP_EX_WITH_SEND;
	}
	return Qp(ibv_create_qp_ex(d.ctx.get(), &a));
}

int connect_qp(Dev &s, ibv_qp *qp, const Dev &peer, const ibv_qp *peer_qp)
{
	return connect_rc(qp, s.gid_index, peer.gid, peer_qp->qp_num);
}

Dev g_a, g_b;

struct Pair {
	Qp qa, qb;
};

bool make_pair(Pair &p, bool ex, const std::string &what)
{
	p.qa = make_qp(g_a, ex);
	p.qb = make_qp(g_b, false);
	int rc = (!p.qa || !p.qb) ? errno : 0;
	if (!rc)
		rc = connect_qp(g_a, p.qa.get(), g_b, p.qb.get());
	if (!rc)
		rc = connect_qp(g_b, p.qb.get(), g_a, p.qa.get());
	return ktap.result(!rc, what + ": create and connect an RC pair", errstr(rc));
}

// The buffers: B's region (the READ's source and the fenced WRITE's
// target), A's READ destination and A's WRITE/SEND source, B's receive.
struct Bufs {
	PageBuf remote{kRead}, dst{kRead}, src{kWrite}, recv{kWrite};
	Mr remote_mr, dst_mr, src_mr, recv_mr;
	bool ok = false;
	Bufs()
	{
		if (!remote.p || !dst.p || !src.p || !recv.p)
			return;
		constexpr int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		remote_mr.reset(ibv_reg_mr(g_b.pd.get(), remote.p, kRead, rw));
		dst_mr.reset(ibv_reg_mr(g_a.pd.get(), dst.p, kRead, IBV_ACCESS_LOCAL_WRITE));
		src_mr.reset(ibv_reg_mr(g_a.pd.get(), src.p, kWrite, IBV_ACCESS_LOCAL_WRITE));
		recv_mr.reset(ibv_reg_mr(g_b.pd.get(), recv.p, kWrite, IBV_ACCESS_LOCAL_WRITE));
		ok = remote_mr && dst_mr && src_mr && recv_mr;
	}
};

enum class First { read, fetch_add };
enum class Then { write, write_wr_api, send };

// What one round saw.
struct Round {
	std::string error;
	bool early = false;	// the WRITE's bytes at B before the READ's data was all at A
	bool read_ok = false;	// the READ returned the bytes from before the WRITE
};

bool read_complete(const Bufs &b, size_t round)
{
	for (size_t i = 0; i < kRead; i += 512)
		if (b.dst.p[i] != pattern(round, i) || b.dst.p[i + 511] != pattern(round, i + 511))
			return false;
	return true;
}

Round run_round(Pair &p, Bufs &b, size_t round, First first, Then then, bool fence)
{
	Round r;
	for (size_t i = 0; i < kRead; ++i)
		b.remote.p[i] = pattern(round, i);
	std::memset(b.dst.p, 0, kRead);
	std::memset(b.src.p, kMark, kWrite);
	std::memset(b.recv.p, 0, kWrite);
	uint64_t atomic_orig = 0;
	std::memcpy(&atomic_orig, b.remote.p, 8);
	ibv_send_wr *bad = nullptr;
	if (then == Then::send) {
		ibv_sge rs{b.recv.addr(), uint32_t(kWrite), b.recv_mr->lkey};
		ibv_recv_wr rw{};
		rw.wr_id = 3;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		ibv_recv_wr *rbad = nullptr;
		if (int rc = ibv_post_recv(p.qb.get(), &rw, &rbad))
			return r.error = "ibv_post_recv " + errstr(rc), r;
	}

	// The READ (or fetch-and-add) of the first bytes of B's region.
	ibv_sge s1{b.dst.addr(), first == First::read ? uint32_t(kRead) : 8u, b.dst_mr->lkey};
	ibv_send_wr w1{};
	w1.wr_id = 1;
	w1.sg_list = &s1;
	w1.num_sge = 1;
	w1.send_flags = IBV_SEND_SIGNALED;
	if (first == First::read) {
		w1.opcode = IBV_WR_RDMA_READ;
		w1.wr.rdma.remote_addr = b.remote.addr();
		w1.wr.rdma.rkey = b.remote_mr->rkey;
	} else {
		w1.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		w1.wr.atomic.remote_addr = b.remote.addr();
		w1.wr.atomic.rkey = b.remote_mr->rkey;
		w1.wr.atomic.compare_add = 1;
	}
	// The fenced WR: a WRITE of kMark over the READ's last bytes (read
	// last when the response is sent) or the atomic's, or a SEND.
	const size_t woff = first == First::read ? kRead - kWrite : 0;
	ibv_sge s2{b.src.addr(), uint32_t(kWrite), b.src_mr->lkey};
	ibv_send_wr w2{};
	w2.wr_id = 2;
	w2.sg_list = &s2;
	w2.num_sge = 1;
	w2.send_flags = IBV_SEND_SIGNALED | (fence ? IBV_SEND_FENCE : 0);
	w2.opcode = then == Then::send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
	w2.wr.rdma.remote_addr = b.remote.addr(woff);
	w2.wr.rdma.rkey = b.remote_mr->rkey;
	if (then == Then::write_wr_api) {
		ibv_qp_ex *qx = ibv_qp_to_qp_ex(p.qa.get());
		ibv_wr_start(qx);
		qx->wr_id = 1;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_read(qx, b.remote_mr->rkey, b.remote.addr());
		ibv_wr_set_sge(qx, s1.lkey, s1.addr, s1.length);
		qx->wr_id = 2;
		qx->wr_flags = w2.send_flags;
		ibv_wr_rdma_write(qx, b.remote_mr->rkey, b.remote.addr(woff));
		ibv_wr_set_sge(qx, s2.lkey, s2.addr, s2.length);
		if (int rc = ibv_wr_complete(qx))
			return r.error = "ibv_wr_complete " + errstr(rc), r;
	} else {
		w1.next = &w2;
		if (int rc = ibv_post_send(p.qa.get(), &w1, &bad))
			return r.error = "ibv_post_send " + errstr(rc), r;
	}

	// Watch B's memory (or B's receive buffer) and A's CQ.
	volatile const uint8_t *seen = then == Then::send ? b.recv.p : b.remote.p + woff;
	bool first_done = false, second_done = false, recv_done = then != Then::send;
	const auto end = Clock::now() + kWait;
	while (!(first_done && second_done && recv_done) && Clock::now() < end) {
		if (!r.early && seen[kWrite - 1] == kMark) {
			const bool complete = first == First::read ?
				read_complete(b, round) :
				std::memcmp(b.dst.p, &atomic_orig, 8) == 0;
			r.early = !complete;
		}
		ibv_wc wc[4];
		int k = ibv_poll_cq(g_a.cq.get(), 4, wc);
		for (int j = 0; j < k; ++j) {
			if (wc[j].status != IBV_WC_SUCCESS)
				r.error = "wr " + std::to_string(wc[j].wr_id) + ": " +
					  ibv_wc_status_str(wc[j].status);
			first_done |= wc[j].wr_id == 1;
			second_done |= wc[j].wr_id == 2;
		}
		if (!recv_done) {
			k = ibv_poll_cq(g_b.cq.get(), 4, wc);
			for (int j = 0; j < k; ++j)
				recv_done |= wc[j].wr_id == 3 && wc[j].status == IBV_WC_SUCCESS;
		}
		if (!r.error.empty())
			return r;
	}
	if (!(first_done && second_done && recv_done))
		return r.error = "no completion within 60 s", r;
	if (first == First::read) {
		r.read_ok = true;
		for (size_t i = 0; i < kRead && r.read_ok; ++i)
			r.read_ok = b.dst.p[i] == pattern(round, i);
	} else {
		r.read_ok = std::memcmp(b.dst.p, &atomic_orig, 8) == 0;
	}
	return r;
}

void test_case(Bufs &b, First first, Then then, bool fence, const std::string &name)
{
	Pair p;
	if (!make_pair(p, then == Then::write_wr_api, name))
		return;
	int early = 0, wrong = 0;
	std::string error;
	for (int round = 0; round < kRounds && error.empty(); ++round) {
		Round r = run_round(p, b, size_t(round), first, then, fence);
		error = r.error;
		early += r.early;
		wrong += !r.read_ok;
	}
	if (!fence) {
		// Without FENCE nothing waits: how often the WRITE overtook
		// the READ is information (it depends on timing), not a result.
		ktap.note(name + ": the WRITE landed before the READ's data in " +
			  std::to_string(early) + " of " + std::to_string(kRounds) +
			  " rounds; the READ returned the WRITE's bytes in " +
			  std::to_string(wrong));
		ktap.result(error.empty(), name + ": every WR completes", error);
		return;
	}
	if (!ktap.result(error.empty(), name + ": every WR completes", error))
		return;
	ktap.result(early == 0, name + ": the fenced WR arrives after the " +
		    (first == First::read ? "READ's data" : "atomic's result"),
		    std::to_string(early) + " of " + std::to_string(kRounds) + " rounds early");
	ktap.result(wrong == 0, name + ": the " +
		    (first == First::read ? "READ returns" : "atomic returns") +
		    " the bytes from before the fenced WR",
		    std::to_string(wrong) + " of " + std::to_string(kRounds) + " rounds wrong");
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
		Bufs b;
		if (!ktap.result(b.ok, "buffers and regions", errstr(errno)))
			return ktap.finish();
		test_case(b, First::read, Then::write, true, "READ then fenced WRITE");
		test_case(b, First::read, Then::write_wr_api, true,
			  "READ then fenced WRITE (ibv_wr_*)");
		test_case(b, First::fetch_add, Then::write, true, "fetch-and-add then fenced WRITE");
		test_case(b, First::read, Then::send, true, "READ then fenced SEND");
		test_case(b, First::read, Then::write, false, "READ then unfenced WRITE");
	}
	return ktap.finish();
}
