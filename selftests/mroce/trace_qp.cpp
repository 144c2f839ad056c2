// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mroce_trace_qp DEV_A GID_A DEV_B GID_B: the QP errors test_trace.sh
// looks for in the trace, each on its own connected pair of RC QPs (A's QP
// on DEV_A, B's on DEV_B), in one process:
//   access: WRITEs that land (bytes checked), then a WRITE with a wrong
//           rkey: REM_ACCESS_ERR at A, both QPs end in the error state;
//   rnr:    a SEND to a QP without receive WQEs, A's rnr_retry 1:
//           RNR_RETRY_EXC_ERR at A after two RNR rounds.
// Each pair's QPNs are printed ("# pair NAME a_qpn N b_qpn M") for the
// script to match the events with.  KTAP on stdout.
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "verbs_test.hpp"

using namespace mroce_test;

namespace {

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ;
constexpr size_t kMem = 1 << 20;

Ktap ktap;

struct End {
	Context ctx;
	Pd pd;
	Cq cq;
	std::vector<uint8_t> mem;
	Mr mr;
	ibv_gid gid{};
	int gid_index = 0;
};

void open_end(End &e, const std::string &dev, int gid_index)
{
	int n = 0;
	std::unique_ptr<ibv_device *, DevListFree> list(ibv_get_device_list(&n));
	for (int i = 0; list && i < n; i++)
		if (dev == ibv_get_device_name(list.get()[i]))
			e.ctx.reset(ibv_open_device(list.get()[i]));
	if (!e.ctx)
		throw std::runtime_error("cannot open " + dev);
	e.gid_index = gid_index;
	if (ibv_query_gid(e.ctx.get(), 1, gid_index, &e.gid))
		throw std::runtime_error("query_gid failed on " + dev);
	e.pd.reset(ibv_alloc_pd(e.ctx.get()));
	e.cq.reset(ibv_create_cq(e.ctx.get(), 256, nullptr, nullptr, 0));
	e.mem.assign(kMem, 0);
	if (e.pd)
		e.mr.reset(ibv_reg_mr(e.pd.get(), e.mem.data(), kMem, kAccess));
	if (!e.pd || !e.cq || !e.mr)
		throw std::runtime_error("cannot create PD/CQ/MR on " + dev);
}

Qp make_qp(End &e)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = e.cq.get();
	ia.recv_cq = e.cq.get();
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	return Qp(ibv_create_qp(e.pd.get(), &ia));
}

int to_rts(ibv_qp *qp, const End &e, const End &peer, uint32_t dqpn,
	   uint8_t rnr_retry)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = kAccess;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return errno;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;	/* 10 us */
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer.gid;
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
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		return errno;
	return 0;
}

struct Pair {
	Qp a, b;
};

bool connect(const std::string &name, Pair &p, End &a, End &b,
	     uint8_t a_rnr_retry)
{
	p.a = make_qp(a);
	p.b = make_qp(b);
	if (!p.a || !p.b)
		return ktap.result(false, name + ": create QPs", errstr(errno));
	int e1 = to_rts(p.a.get(), a, b, p.b->qp_num, a_rnr_retry);
	int e2 = e1 ? 0 : to_rts(p.b.get(), b, a, p.a->qp_num, 7);
	ktap.note("pair " + name + " a_qpn " + std::to_string(p.a->qp_num) +
		  " b_qpn " + std::to_string(p.b->qp_num));
	return ktap.result(!e1 && !e2, name + ": QPs to RTS",
			   errstr(e1 ? e1 : e2));
}

bool poll_one(End &e, ibv_wc &wc)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
	for (;;) {
		int n = ibv_poll_cq(e.cq.get(), 1, &wc);
		if (n == 1)
			return true;
		if (n < 0 || std::chrono::steady_clock::now() > end)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
}

int post(ibv_qp *qp, ibv_wr_opcode op, End &e, size_t off, uint32_t len,
	 uint64_t raddr, uint32_t rkey, uint64_t id)
{
	ibv_sge sge{ (uintptr_t)&e.mem[off], len, e.mr->lkey };
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

// Waits up to 10 s for qp to reach state (the responder fails on its own).
bool wait_state(ibv_qp *qp, ibv_qp_state want)
{
	for (int i = 0; i < 1000; i++) {
		ibv_qp_attr a{};
		ibv_qp_init_attr ia{};
		if (!ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) && a.qp_state == want)
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return false;
}

void access_pair(End &a, End &b)
{
	Pair p;
	if (!connect("access", p, a, b, 7))
		return;
	/* 16 WRITEs of 4 KiB, then the bytes at B */
	for (size_t i = 0; i < kMem; i++)
		a.mem[i] = (uint8_t)(i * 7 + 1);
	int ok = 0;
	for (int k = 0; k < 16; k++) {
		ibv_wc wc{};
		if (post(p.a.get(), IBV_WR_RDMA_WRITE, a, k * 4096, 4096,
			 (uintptr_t)&b.mem[k * 4096], b.mr->rkey, k) ||
		    !poll_one(a, wc) || wc.status != IBV_WC_SUCCESS)
			break;
		ok++;
	}
	bool same = ok == 16 && !memcmp(a.mem.data(), b.mem.data(), 16 * 4096);
	ktap.result(same, "access: 16 WRITEs of 4 KiB land intact",
		    std::to_string(ok) + " completed");
	ibv_wc wc{};
	bool got = !post(p.a.get(), IBV_WR_RDMA_WRITE, a, 0, 512,
			 (uintptr_t)&b.mem[0], b.mr->rkey ^ 0x5a5a00, 99) &&
		   poll_one(a, wc);
	ktap.result(got && wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 99,
		    "access: WRITE with a wrong rkey fails with REM_ACCESS_ERR",
		    got ? ibv_wc_status_str(wc.status) : "no completion");
	ktap.result(wait_state(p.a.get(), IBV_QPS_ERR), "access: A's QP in ERR");
	ktap.result(wait_state(p.b.get(), IBV_QPS_ERR), "access: B's QP in ERR");
}

void rnr_pair(End &a, End &b)
{
	Pair p;
	if (!connect("rnr", p, a, b, 1))
		return;
	ibv_wc wc{};
	bool got = !post(p.a.get(), IBV_WR_SEND, a, 0, 64, 0, 0, 7) &&
		   poll_one(a, wc);
	ktap.result(got && wc.status == IBV_WC_RNR_RETRY_EXC_ERR,
		    "rnr: SEND without a receive WQE fails with RNR_RETRY_EXC_ERR",
		    got ? ibv_wc_status_str(wc.status) : "no completion");
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr, "usage: %s DEV_A GID_A DEV_B GID_B\n", argv[0]);
		return 2;
	}
	try {
		End a, b;
		open_end(a, argv[1], std::atoi(argv[2]));
		open_end(b, argv[3], std::atoi(argv[4]));
		access_pair(a, b);
		rnr_pair(a, b);
	} catch (const std::exception &ex) {
		ktap.result(false, "setup", ex.what());
	}
	return ktap.finish();
}
