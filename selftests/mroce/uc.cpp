// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// uc - unreliable connected (IBV_QPT_UC) QPs end to end through the mroce
// provider: device A sends, device B receives (one process, both devices).
//
// Phase "basic" (a clean link):
//   create      ibv_create_qp and ibv_create_qp_ex (with and without
//               send_ops_flags) make UC QPs; READ or atomics in
//               send_ops_flags are refused (EOPNOTSUPP);
//   modify      INIT/RTR/RTS with the UC attribute masks; the RC-only
//               attributes (max_dest_rd_atomic, min_rnr_timer, timeout,
//               retry_cnt, rnr_retry, max_rd_atomic) are refused (EINVAL);
//   send        SEND and SEND_WITH_IMM of 0 B .. 64 KiB (multi-packet),
//               inline: bytes, byte_len, opcode, imm, src_qp verified;
//   write       RDMA_WRITE lands (and consumes no receive), WRITE_WITH_IMM
//               completes with IBV_WC_RECV_RDMA_WITH_IMM, imm, byte_len;
//   wr api      ibv_wr_send/_imm, ibv_wr_rdma_write/_imm in one batch;
//   refused     READ, atomics and SEND_WITH_INV fail at post with EINVAL
//               and leave the QP in RTS;
//   drops       a SEND longer than the receive buffer, a SEND without a
//               posted receive, a WRITE with a bad rkey: dropped without
//               completion, the receive WQE kept for the next message,
//               both QPs stay in RTS, requester completions SUCCESS.
// Phase "loss" (the caller put netem loss on A's egress):
//   SEND and WRITE_WITH_IMM messages of 1-4 packets: every completed
//   receive holds exactly its message (length, bytes, order), receive WQEs
//   are consumed only by complete messages, some messages are dropped,
//   every requester completion is SUCCESS and both QPs stay in RTS.
//
// Phase "forge" (run in A's namespace, so a plain UDP socket sends from the
// address B's QP is connected to): packets forged with the protocol core's
// builder at B's UC QP: malformed ones, ones outside the MSN window, of
// the wrong transport, WRITEs with a bad rkey or range, a message without
// its first packet: nothing is completed or written, the QPs stay in RTS.
// An in-window forged SEND is delivered (no authentication, as specified)
// and moves the window, so A's earlier MSNs are dropped until A passes it.
//
// Usage: mroce_uc DEV_A GID_INDEX_A DEV_B GID_INDEX_B basic|loss|forge
// Output is KTAP.  Exit status 0 when every case passed.

#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mroce_core.h"
#include "verbs_test.hpp"

namespace {

using namespace mroce_test;
using Clock = std::chrono::steady_clock;

Ktap ktap;

constexpr uint32_t kDepth = 512;
constexpr size_t kMsgMax = 65536;
constexpr size_t kSlot = 4096;		// loss phase: bytes per message slot
constexpr uint32_t kLossMsgs = 300;
constexpr uint32_t kPsnA = 0x9fc685;	// A's sq_psn = B's rq_psn
constexpr uint32_t kPsnB = 0x0000ab;
constexpr int kRw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

int time_factor()
{
	const char *f = std::getenv("MROCE_TIME_FACTOR");
	int v = f ? std::atoi(f) : 1;
	return v > 0 ? v : 1;
}

std::chrono::milliseconds ms(int n) { return std::chrono::milliseconds(n * time_factor()); }

struct Dev {
	Context ctx;
	Pd pd;
	Cq scq, rcq;
	ibv_gid gid{};
	int gid_index = 0;
	std::vector<uint8_t> buf;	// source (A) or target (B) memory
	Mr mr;
};

bool open_dev(Dev &d, const char *name, int gid_index, size_t bytes)
{
	d.ctx = open_device(name);
	if (!d.ctx)
		return ktap.result(false, std::string("open ") + name, errstr(errno));
	d.gid_index = gid_index;
	d.pd.reset(ibv_alloc_pd(d.ctx.get()));
	d.scq.reset(ibv_create_cq(d.ctx.get(), 2 * kDepth, nullptr, nullptr, 0));
	d.rcq.reset(ibv_create_cq(d.ctx.get(), 2 * kDepth, nullptr, nullptr, 0));
	d.buf.assign(bytes, 0);
	if (d.pd)
		d.mr.reset(ibv_reg_mr(d.pd.get(), d.buf.data(), bytes, kRw));
	if (!d.pd || !d.scq || !d.rcq || !d.mr)
		return ktap.result(false, std::string("PD, CQs, MR on ") + name, errstr(errno));
	if (ibv_query_gid(d.ctx.get(), 1, gid_index, &d.gid))
		return ktap.result(false, std::string("ibv_query_gid on ") + name, errstr(errno));
	return true;
}

Dev g_a, g_b;

ibv_qp_init_attr_ex init_attr(Dev &d, bool ops, uint64_t send_ops)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_UC;
	a.send_cq = d.scq.get();
	a.recv_cq = d.rcq.get();
	a.cap.max_send_wr = a.cap.max_recv_wr = kDepth;
	a.cap.max_send_sge = a.cap.max_recv_sge = 2;
	a.cap.max_inline_data = 64;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = d.pd.get();
	if (ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = send_ops;
	}
	return a;
}

enum class Make { plain, ex, ex_ops };

constexpr uint64_t kUcOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;

Qp make_qp(Dev &d, Make how)
{
	if (how == Make::plain) {
		ibv_qp_init_attr a{};
		a.qp_type = IBV_QPT_UC;
		a.send_cq = d.scq.get();
		a.recv_cq = d.rcq.get();
		a.cap.max_send_wr = a.cap.max_recv_wr = kDepth;
		a.cap.max_send_sge = a.cap.max_recv_sge = 2;
		a.cap.max_inline_data = 64;
		return Qp(ibv_create_qp(d.pd.get(), &a));
	}
	auto a = init_attr(d, how == Make::ex_ops, kUcOps);
	return Qp(ibv_create_qp_ex(d.ctx.get(), &a));
}

ibv_qp_attr rtr_attr(const Dev &s, const Dev &peer, uint32_t dqpn, uint32_t rq_psn)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer.gid;
	a.ah_attr.grh.sgid_index = uint8_t(s.gid_index);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	return a;
}

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_SQ_PSN;

// INIT, RTR, RTS with the masks IB requires for UC.  0 or an errno.
int connect_qp(Dev &s, ibv_qp *qp, const Dev &peer, uint32_t dqpn, uint32_t rq_psn,
	       uint32_t sq_psn)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (int rc = ibv_modify_qp(qp, &a, kInitMask))
		return rc;
	a = rtr_attr(s, peer, dqpn, rq_psn);
	if (int rc = ibv_modify_qp(qp, &a, kRtrMask))
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	return ibv_modify_qp(qp, &a, kRtsMask);
}

int qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

struct Pair {
	Qp qa, qb;
	bool ok() const { return qa && qb; }
};

Pair make_pair(Make how, const std::string &what)
{
	Pair p;
	p.qa = make_qp(g_a, how);
	p.qb = make_qp(g_b, how);
	int rc = (!p.qa || !p.qb) ? errno : 0;
	if (!rc)
		rc = connect_qp(g_a, p.qa.get(), g_b, p.qb->qp_num, kPsnB, kPsnA);
	if (!rc)
		rc = connect_qp(g_b, p.qb.get(), g_a, p.qa->qp_num, kPsnA, kPsnB);
	if (rc) {
		ktap.result(false, what + ": create and connect a UC pair", errstr(rc));
		return Pair{};
	}
	return p;
}

// Up to n completions of cq within wait (fewer when it runs out).
std::vector<ibv_wc> poll_n(ibv_cq *cq, size_t n, std::chrono::milliseconds wait)
{
	std::vector<ibv_wc> out;
	const auto end = Clock::now() + wait;
	while (out.size() < n && Clock::now() < end) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, int(std::min<size_t>(16, n - out.size())), wc);
		if (k < 0)
			break;
		out.insert(out.end(), wc, wc + k);
		if (!k)
			std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	return out;
}

int post_recv(ibv_qp *qp, uint64_t id, uint8_t *p, uint32_t len, uint32_t lkey)
{
	ibv_sge sge{uint64_t(uintptr_t(p)), len, lkey};
	ibv_recv_wr wr{};
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_recv_wr *bad;
	return ibv_post_recv(qp, &wr, &bad);
}

int post_send(ibv_qp *qp, ibv_wr_opcode op, uint64_t id, uint8_t *p, uint32_t len,
	      uint32_t imm = 0, uint64_t raddr = 0, uint32_t rkey = 0, unsigned flags = 0)
{
	ibv_sge sge{uint64_t(uintptr_t(p)), len, g_a.mr->lkey};
	ibv_send_wr wr{};
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED | flags;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	ibv_send_wr *bad;
	return ibv_post_send(qp, &wr, &bad);
}

// The requester's completion of wr_id id: SUCCESS with opcode op.
bool send_done(uint64_t id, ibv_wc_opcode op, std::string &why)
{
	auto wc = poll_n(g_a.scq.get(), 1, ms(10000));
	if (wc.empty()) {
		why = "no send completion";
		return false;
	}
	if (wc[0].wr_id != id || wc[0].status != IBV_WC_SUCCESS || wc[0].opcode != op) {
		why = "send completion wr_id " + std::to_string(wc[0].wr_id) + " status " +
		      ibv_wc_status_str(wc[0].status) + " opcode " + std::to_string(wc[0].opcode);
		return false;
	}
	return true;
}

// ---- basic -------------------------------------------------------------

void test_create_modify()
{
	{
		Qp q = make_qp(g_a, Make::plain);
		ibv_qp_attr a{};
		ibv_qp_init_attr ia{};
		bool ok = q && !ibv_query_qp(q.get(), &a, IBV_QP_STATE, &ia) &&
			  ia.qp_type == IBV_QPT_UC && a.qp_state == IBV_QPS_RESET;
		ktap.result(ok, "create: ibv_create_qp makes a UC QP in RESET", errstr(errno));
		if (!q)
			return;
		a = {};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		int rc_init = ibv_modify_qp(q.get(), &a, kInitMask);
		// RTR with the RC attributes UC does not have
		a = rtr_attr(g_a, g_b, 0x42, kPsnB);
		int rc1 = ibv_modify_qp(q.get(), &a, kRtrMask | IBV_QP_MAX_DEST_RD_ATOMIC);
		int rc2 = ibv_modify_qp(q.get(), &a, kRtrMask | IBV_QP_MIN_RNR_TIMER);
		int rc3 = ibv_modify_qp(q.get(), &a, kRtrMask);
		ktap.result(!rc_init && rc1 == EINVAL && rc2 == EINVAL && !rc3 &&
				    qp_state(q.get()) == IBV_QPS_RTR,
			    "modify: RTR refuses max_dest_rd_atomic, min_rnr_timer (EINVAL), "
			    "takes the UC mask",
			    std::to_string(rc_init) + "/" + std::to_string(rc1) + "/" +
				    std::to_string(rc2) + "/" + std::to_string(rc3));
		a = {};
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = kPsnA;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		int bad = 0;
		for (int extra : {IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY,
				  IBV_QP_MAX_QP_RD_ATOMIC})
			if (ibv_modify_qp(q.get(), &a, kRtsMask | extra) != EINVAL)
				++bad;
		int rc = ibv_modify_qp(q.get(), &a, kRtsMask);
		ktap.result(!bad && !rc && qp_state(q.get()) == IBV_QPS_RTS,
			    "modify: RTS refuses timeout, retry_cnt, rnr_retry, max_rd_atomic "
			    "(EINVAL), takes sq_psn alone",
			    std::to_string(bad) + " accepted, rc " + std::to_string(rc));
	}
	{
		Qp q = make_qp(g_a, Make::ex);
		Qp qo = make_qp(g_a, Make::ex_ops);
		ktap.result(q && qo && ibv_qp_to_qp_ex(qo.get()),
			    "create: ibv_create_qp_ex with and without send_ops_flags",
			    errstr(errno));
	}
	for (uint64_t bad : {uint64_t(IBV_QP_EX_WITH_RDMA_READ),
			     uint64_t(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP),
			     uint64_t(IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)}) {
		auto a = init_attr(g_a, true, kUcOps | bad);
		errno = 0;
		Qp q(ibv_create_qp_ex(g_a.ctx.get(), &a));
		ktap.result(!q && errno == EOPNOTSUPP,
			    "create: ibv_create_qp_ex refuses send op " + std::to_string(bad) +
				    " on UC (EOPNOTSUPP)",
			    q ? "created" : errstr(errno));
	}
}

// One SEND (or SEND_WITH_IMM) of n bytes A -> B, checked at both ends.
bool one_send(Pair &p, uint64_t id, size_t n, bool imm, unsigned flags, std::string &why)
{
	uint8_t *src = g_a.buf.data();
	uint8_t *dst = g_b.buf.data();
	fill_pattern(src, id, n);
	std::memset(dst, 0, n + 16);
	if (int rc = post_recv(p.qb.get(), id, dst, uint32_t(kMsgMax), g_b.mr->lkey)) {
		why = "post_recv " + errstr(rc);
		return false;
	}
	if (int rc = post_send(p.qa.get(), imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, id, src,
			       uint32_t(n), uint32_t(id * 3), 0, 0, flags)) {
		why = "post_send " + errstr(rc);
		return false;
	}
	if (!send_done(id, IBV_WC_SEND, why))
		return false;
	auto wc = poll_n(g_b.rcq.get(), 1, ms(10000));
	if (wc.empty()) {
		why = "no receive completion";
		return false;
	}
	const ibv_wc &w = wc[0];
	bool ok = w.wr_id == id && w.status == IBV_WC_SUCCESS && w.opcode == IBV_WC_RECV &&
		  w.byte_len == n && w.src_qp == p.qa->qp_num &&
		  bool(w.wc_flags & IBV_WC_WITH_IMM) == imm &&
		  (!imm || be32toh(w.imm_data) == uint32_t(id * 3)) && is_pattern(dst, id, n) &&
		  dst[n] == 0;
	if (!ok)
		why = "wc wr_id " + std::to_string(w.wr_id) + " status " +
		      ibv_wc_status_str(w.status) + " opcode " + std::to_string(w.opcode) +
		      " byte_len " + std::to_string(w.byte_len) + " flags " +
		      std::to_string(w.wc_flags) + " data " +
		      (is_pattern(dst, id, n) ? "ok" : "wrong");
	return ok;
}

void test_send(Pair &p)
{
	std::string why;
	bool ok = true;
	uint64_t id = 100;
	for (size_t n : {size_t(0), size_t(1), size_t(1023), size_t(1024), size_t(1025),
			 size_t(4096), size_t(10000), kMsgMax}) {
		ok = one_send(p, id++, n, false, 0, why);
		if (!ok) {
			why = std::to_string(n) + " B: " + why;
			break;
		}
	}
	ktap.result(ok, "send: SEND of 0 B .. 64 KiB, bytes and completions verified", why);
	ok = one_send(p, id++, 3000, true, 0, why) && one_send(p, id++, 0, true, 0, why);
	ktap.result(ok, "send: SEND_WITH_IMM (3000 B and empty), imm verified", why);
	ok = one_send(p, id++, 64, false, IBV_SEND_INLINE, why);
	ktap.result(ok, "send: inline SEND", why);
}

// Wait until B's memory at off holds n bytes of pattern_byte(id).
bool landed(size_t off, uint64_t id, size_t n)
{
	const auto end = Clock::now() + ms(10000);
	while (Clock::now() < end) {
		if (is_pattern(g_b.buf.data() + off, id, n))
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return false;
}

void test_write(Pair &p)
{
	std::string why;
	const size_t off = 128 * 1024;
	uint8_t *src = g_a.buf.data();
	uint64_t raddr = uint64_t(uintptr_t(g_b.buf.data() + off));
	// A receive posted first: a plain WRITE must not consume it.
	post_recv(p.qb.get(), 500, g_b.buf.data(), uint32_t(kMsgMax), g_b.mr->lkey);
	fill_pattern(src, 501, 40000);
	int rc = post_send(p.qa.get(), IBV_WR_RDMA_WRITE, 501, src, 40000, 0, raddr,
			   g_b.mr->rkey);
	bool ok = !rc && send_done(501, IBV_WC_RDMA_WRITE, why) && landed(off, 501, 40000);
	ktap.result(ok, "write: RDMA_WRITE of 40000 B lands", rc ? errstr(rc) : why);
	// WRITE_WITH_IMM: the data, then a completion in receive 500
	fill_pattern(src, 502, 5000);
	rc = post_send(p.qa.get(), IBV_WR_RDMA_WRITE_WITH_IMM, 502, src, 5000, 0xabc, raddr + 8,
		       g_b.mr->rkey);
	ok = !rc && send_done(502, IBV_WC_RDMA_WRITE, why);
	auto wc = poll_n(g_b.rcq.get(), 1, ms(10000));
	ok = ok && wc.size() == 1 && wc[0].wr_id == 500 && wc[0].status == IBV_WC_SUCCESS &&
	     wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM && (wc[0].wc_flags & IBV_WC_WITH_IMM) &&
	     be32toh(wc[0].imm_data) == 0xabc && wc[0].byte_len == 5000 &&
	     is_pattern(g_b.buf.data() + off + 8, 502, 5000);
	if (!ok && wc.size() == 1)
		why = "wc wr_id " + std::to_string(wc[0].wr_id) + " opcode " +
		      std::to_string(wc[0].opcode) + " byte_len " + std::to_string(wc[0].byte_len);
	ktap.result(ok, "write: the WRITE consumed no receive; WRITE_WITH_IMM completes it "
			"(RECV_RDMA_WITH_IMM, imm, byte_len, data)", rc ? errstr(rc) : why);
}

void test_wr_api()
{
	Pair p = make_pair(Make::ex_ops, "wr api");
	if (!p.ok())
		return;
	ibv_qp_ex *qx = ibv_qp_to_qp_ex(p.qa.get());
	const size_t off = 256 * 1024;
	uint64_t raddr = uint64_t(uintptr_t(g_b.buf.data() + off));
	uint8_t *src = g_a.buf.data();
	for (int i = 0; i < 4; i++)
		fill_pattern(src + i * 8192, 600 + i, 3000);
	for (int i = 0; i < 3; i++)
		post_recv(p.qb.get(), 700 + i, g_b.buf.data() + i * 8192, 8192, g_b.mr->lkey);
	ibv_wr_start(qx);
	qx->wr_id = 600;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, g_a.mr->lkey, uint64_t(uintptr_t(src)), 3000);
	qx->wr_id = 601;
	ibv_wr_send_imm(qx, htobe32(0x601));
	ibv_wr_set_sge(qx, g_a.mr->lkey, uint64_t(uintptr_t(src + 8192)), 3000);
	qx->wr_id = 602;
	ibv_wr_rdma_write(qx, g_b.mr->rkey, raddr);
	ibv_wr_set_sge(qx, g_a.mr->lkey, uint64_t(uintptr_t(src + 2 * 8192)), 3000);
	qx->wr_id = 603;
	ibv_wr_rdma_write_imm(qx, g_b.mr->rkey, raddr + 8192, htobe32(0x603));
	ibv_wr_set_sge(qx, g_a.mr->lkey, uint64_t(uintptr_t(src + 3 * 8192)), 3000);
	int rc = ibv_wr_complete(qx);
	auto s = poll_n(g_a.scq.get(), 4, ms(10000));
	auto r = poll_n(g_b.rcq.get(), 3, ms(10000));
	bool ok = !rc && s.size() == 4 && r.size() == 3;
	for (size_t i = 0; ok && i < s.size(); i++)
		ok = s[i].wr_id == 600 + i && s[i].status == IBV_WC_SUCCESS;
	ok = ok && r[0].wr_id == 700 && r[0].opcode == IBV_WC_RECV && r[0].byte_len == 3000 &&
	     is_pattern(g_b.buf.data(), 600, 3000);
	ok = ok && r[1].wr_id == 701 && r[1].opcode == IBV_WC_RECV &&
	     be32toh(r[1].imm_data) == 0x601 && is_pattern(g_b.buf.data() + 8192, 601, 3000);
	ok = ok && r[2].wr_id == 702 && r[2].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	     be32toh(r[2].imm_data) == 0x603 && is_pattern(g_b.buf.data() + off, 602, 3000) &&
	     is_pattern(g_b.buf.data() + off + 8192, 603, 3000);
	ktap.result(ok, "wr api: ibv_wr_send/_imm, ibv_wr_rdma_write/_imm in one batch",
		    "rc " + std::to_string(rc) + ", " + std::to_string(s.size()) + " send / " +
			    std::to_string(r.size()) + " recv completions");
	// an operation not in send_ops_flags fails the batch
	ibv_wr_start(qx);
	qx->wr_id = 610;
	ibv_wr_rdma_read(qx, g_b.mr->rkey, raddr);
	ibv_wr_set_sge(qx, g_a.mr->lkey, uint64_t(uintptr_t(src)), 8);
	rc = ibv_wr_complete(qx);
	ktap.result(rc == EOPNOTSUPP && poll_n(g_a.scq.get(), 1, ms(200)).empty(),
		    "wr api: ibv_wr_rdma_read on UC fails the batch (EOPNOTSUPP)",
		    std::to_string(rc));
}

void test_refused(Pair &p)
{
	uint8_t *src = g_a.buf.data();
	int bad = 0;
	std::string which;
	for (ibv_wr_opcode op : {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
				 IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV}) {
		int rc = post_send(p.qa.get(), op, 800, src, 8, 0,
				   uint64_t(uintptr_t(g_b.buf.data())), g_b.mr->rkey);
		if (rc != EINVAL) {
			++bad;
			which += " op " + std::to_string(op) + ": " + std::to_string(rc);
		}
	}
	std::string why;
	bool ok = !bad && poll_n(g_a.scq.get(), 1, ms(200)).empty() &&
		  qp_state(p.qa.get()) == IBV_QPS_RTS && one_send(p, 801, 100, false, 0, why);
	ktap.result(ok, "refused: READ, atomics, SEND_WITH_INV fail at post (EINVAL); "
			"the QP stays in RTS and sends",
		    which + why);
}

void test_drops(Pair &p)
{
	uint8_t *src = g_a.buf.data();
	std::string why;
	// a SEND longer than the receive: dropped, the WQE kept
	post_recv(p.qb.get(), 900, g_b.buf.data(), 1000, g_b.mr->lkey);
	fill_pattern(src, 901, 2000);
	bool ok = !post_send(p.qa.get(), IBV_WR_SEND, 901, src, 2000) &&
		  send_done(901, IBV_WC_SEND, why);
	ok = ok && poll_n(g_b.rcq.get(), 1, ms(300)).empty();
	fill_pattern(src, 902, 500);
	ok = ok && !post_send(p.qa.get(), IBV_WR_SEND, 902, src, 500) &&
	     send_done(902, IBV_WC_SEND, why);
	auto wc = poll_n(g_b.rcq.get(), 1, ms(10000));
	ok = ok && wc.size() == 1 && wc[0].wr_id == 900 && wc[0].status == IBV_WC_SUCCESS &&
	     wc[0].byte_len == 500 && is_pattern(g_b.buf.data(), 902, 500);
	ktap.result(ok, "drops: a SEND longer than the receive is dropped, the receive "
			"takes the next message", why);
	// no receive posted: dropped (no RNR); the next one after a post lands
	fill_pattern(src, 903, 100);
	ok = !post_send(p.qa.get(), IBV_WR_SEND, 903, src, 100) &&
	     send_done(903, IBV_WC_SEND, why) && poll_n(g_b.rcq.get(), 1, ms(300)).empty();
	ok = ok && one_send(p, 904, 100, false, 0, why);
	ktap.result(ok, "drops: a SEND without a receive is dropped, no RNR, nothing stalls", why);
	// a WRITE_WITH_IMM with a bad rkey (a receive posted): nothing
	// written, no completion, the receive kept
	const size_t off = 512 * 1024;
	std::memset(g_b.buf.data() + off, 0, 4096);
	post_recv(p.qb.get(), 906, g_b.buf.data(), 1000, g_b.mr->lkey);
	fill_pattern(src, 905, 4096);
	ok = !post_send(p.qa.get(), IBV_WR_RDMA_WRITE_WITH_IMM, 905, src, 4096, 1,
			uint64_t(uintptr_t(g_b.buf.data() + off)), g_b.mr->rkey ^ 0x80) &&
	     send_done(905, IBV_WC_RDMA_WRITE, why);
	ok = ok && poll_n(g_b.rcq.get(), 1, ms(300)).empty() &&
	     std::all_of(g_b.buf.data() + off, g_b.buf.data() + off + 4096,
			 [](uint8_t c) { return c == 0; });
	// past the end of the region: refused whole, not written up to its end
	uint8_t *end = g_b.buf.data() + g_b.buf.size();
	std::memset(end - 2048, 0, 2048);
	ok = ok && !post_send(p.qa.get(), IBV_WR_RDMA_WRITE, 907, src, 4096, 0,
			      uint64_t(uintptr_t(end - 2048)), g_b.mr->rkey) &&
	     send_done(907, IBV_WC_RDMA_WRITE, why);
	std::this_thread::sleep_for(ms(300));
	ok = ok && std::all_of(end - 2048, end, [](uint8_t c) { return c == 0; });
	// receive 906 takes the next message
	fill_pattern(src, 908, 10);
	ok = ok && !post_send(p.qa.get(), IBV_WR_SEND, 908, src, 10) &&
	     send_done(908, IBV_WC_SEND, why);
	wc = poll_n(g_b.rcq.get(), 1, ms(10000));
	ok = ok && wc.size() == 1 && wc[0].wr_id == 906 && wc[0].byte_len == 10 &&
	     is_pattern(g_b.buf.data(), 908, 10);
	ktap.result(ok, "drops: WRITEs with a bad rkey or past the region write nothing and "
			"complete nothing; the requester sees SUCCESS", why);
	ok = qp_state(p.qa.get()) == IBV_QPS_RTS && qp_state(p.qb.get()) == IBV_QPS_RTS;
	ktap.result(ok, "drops: both QPs still in RTS");
}

// Memory windows bound through UC QPs (IB allows BIND_MW on UC, as rxe
// does): B binds a type 2 window with ibv_wr_bind_mw on its UC QP and a
// type 1 window with ibv_bind_mw; A's UC WRITEs through their rkeys land
// inside them, a WRITE past a window's end is dropped and writes nothing.
void test_mw()
{
	constexpr size_t kOff = 900 * 1024, kLen = 8192;
	Mr mr(ibv_reg_mr(g_b.pd.get(), g_b.buf.data(), g_b.buf.size(),
			 kRw | IBV_ACCESS_MW_BIND));
	auto qbx_attr = init_attr(g_b, true, kUcOps | IBV_QP_EX_WITH_BIND_MW);
	Qp qb(ibv_create_qp_ex(g_b.ctx.get(), &qbx_attr));
	Qp qa = make_qp(g_a, Make::plain);
	int rc = (!mr || !qb || !qa) ? errno : 0;
	if (!rc)
		rc = connect_qp(g_a, qa.get(), g_b, qb->qp_num, kPsnB, kPsnA);
	if (!rc)
		rc = connect_qp(g_b, qb.get(), g_a, qa->qp_num, kPsnA, kPsnB);
	Mw w2(rc ? nullptr : ibv_alloc_mw(g_b.pd.get(), IBV_MW_TYPE_2));
	Mw w1(rc ? nullptr : ibv_alloc_mw(g_b.pd.get(), IBV_MW_TYPE_1));
	if (!ktap.result(!rc && w2 && w1, "mw: a UC pair with BIND_MW, a type 1 and a type 2 window",
			 errstr(rc ? rc : errno)))
		return;
	uint8_t *win = g_b.buf.data() + kOff;
	std::memset(win, 0, 2 * kLen + 64);
	// type 2, through the work request API of B's UC QP
	ibv_qp_ex *qx = ibv_qp_to_qp_ex(qb.get());
	const uint32_t rkey2 = ibv_inc_rkey(w2->rkey);
	ibv_mw_bind_info bi{mr.get(), uint64_t(uintptr_t(win)), kLen, IBV_ACCESS_REMOTE_WRITE};
	ibv_wr_start(qx);
	qx->wr_id = 970;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qx, w2.get(), rkey2, &bi);
	rc = ibv_wr_complete(qx);
	auto wc = poll_n(g_b.scq.get(), 1, ms(10000));
	bool ok = !rc && wc.size() == 1 && wc[0].wr_id == 970 && wc[0].status == IBV_WC_SUCCESS &&
		  wc[0].opcode == IBV_WC_BIND_MW;
	ktap.result(ok, "mw: ibv_wr_bind_mw of a type 2 window on a UC QP completes (BIND_MW)",
		    rc ? errstr(rc) : wc.empty() ? "no completion" :
		    std::string("status ") + ibv_wc_status_str(wc[0].status));
	uint8_t *src = g_a.buf.data();
	fill_pattern(src, 971, kLen);
	std::string why;
	rc = post_send(qa.get(), IBV_WR_RDMA_WRITE, 971, src, kLen, 0, uint64_t(uintptr_t(win)),
		       rkey2);
	ok = !rc && send_done(971, IBV_WC_RDMA_WRITE, why) && landed(kOff, 971, kLen);
	ktap.result(ok, "mw: a UC WRITE through the type 2 window's rkey fills it", rc ? errstr(rc) : why);
	// past the end: dropped by B, nothing written after the window
	fill_pattern(src, 972, 64);
	rc = post_send(qa.get(), IBV_WR_RDMA_WRITE, 972, src, 64, 0,
		       uint64_t(uintptr_t(win)) + kLen - 32, rkey2);
	ok = !rc && send_done(972, IBV_WC_RDMA_WRITE, why);
	std::this_thread::sleep_for(ms(300));
	bool untouched = is_pattern(win, 971, kLen) &&
			 std::all_of(win + kLen, win + kLen + 64, [](uint8_t c) { return c == 0; });
	ktap.result(ok && untouched, "mw: a UC WRITE past the window's end is dropped, nothing written",
		    rc ? errstr(rc) : !ok ? why : "bytes changed");
	// type 1, through ibv_bind_mw on B's UC QP
	ibv_mw_bind mb{};
	mb.wr_id = 973;
	mb.send_flags = IBV_SEND_SIGNALED;
	mb.bind_info = {mr.get(), uint64_t(uintptr_t(win + kLen)), kLen, IBV_ACCESS_REMOTE_WRITE};
	rc = ibv_bind_mw(qb.get(), w1.get(), &mb);
	wc = poll_n(g_b.scq.get(), 1, ms(10000));
	ok = !rc && wc.size() == 1 && wc[0].wr_id == 973 && wc[0].status == IBV_WC_SUCCESS &&
	     wc[0].opcode == IBV_WC_BIND_MW;
	fill_pattern(src, 974, kLen);
	rc = ok ? post_send(qa.get(), IBV_WR_RDMA_WRITE, 974, src, kLen, 0,
			    uint64_t(uintptr_t(win + kLen)), w1->rkey) : rc;
	ok = ok && !rc && send_done(974, IBV_WC_RDMA_WRITE, why) && landed(kOff + kLen, 974, kLen);
	ktap.result(ok, "mw: ibv_bind_mw of a type 1 window on a UC QP; a UC WRITE through it lands",
		    rc ? errstr(rc) : why);
	// windows before the region (declared after it: destroyed first)
	w1.reset();
	w2.reset();
}

void basic()
{
	test_create_modify();
	Pair p = make_pair(Make::plain, "basic");
	if (!p.ok())
		return;
	test_send(p);
	test_write(p);
	test_refused(p);
	test_drops(p);
	test_wr_api();
	test_mw();
	// the other direction, on a pair made with ibv_create_qp_ex
	Pair q = make_pair(Make::ex, "reverse");
	if (!q.ok())
		return;
	fill_pattern(g_b.buf.data(), 950, 2500);
	post_recv(q.qa.get(), 950, g_a.buf.data() + 4096, 4096, g_a.mr->lkey);
	ibv_sge sge{uint64_t(uintptr_t(g_b.buf.data())), 2500, g_b.mr->lkey};
	ibv_send_wr wr{};
	wr.wr_id = 951;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_send_wr *bad;
	int rc = ibv_post_send(q.qb.get(), &wr, &bad);
	auto s = poll_n(g_b.scq.get(), 1, ms(10000));
	auto r = poll_n(g_a.rcq.get(), 1, ms(10000));
	ktap.result(!rc && s.size() == 1 && s[0].status == IBV_WC_SUCCESS && r.size() == 1 &&
			    r[0].wr_id == 950 && r[0].byte_len == 2500 &&
			    is_pattern(g_a.buf.data() + 4096, 950, 2500),
		    "reverse: B to A SEND on ibv_create_qp_ex QPs", errstr(rc));
}

// ---- loss --------------------------------------------------------------

// Receive completions until none came for quiet.
void drain_quiet(ibv_cq *cq, std::vector<ibv_wc> &out, std::chrono::milliseconds quiet)
{
	auto last = Clock::now();
	while (Clock::now() - last < quiet) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, 16, wc);
		if (k > 0) {
			out.insert(out.end(), wc, wc + k);
			last = Clock::now();
		} else {
			std::this_thread::sleep_for(std::chrono::microseconds(500));
		}
	}
}

void loss_run(bool write_imm)
{
	const std::string name = write_imm ? "loss: WRITE_WITH_IMM" : "loss: SEND";
	Pair p = make_pair(Make::plain, name);
	if (!p.ok())
		return;
	std::mt19937 rng(write_imm ? 7 : 3);
	std::vector<uint32_t> len(kLossMsgs);
	uint8_t *src = g_a.buf.data();
	uint8_t *dst = g_b.buf.data();
	std::memset(dst, 0, kLossMsgs * kSlot);
	for (uint32_t i = 0; i < kLossMsgs; i++) {
		len[i] = 8 + rng() % (kSlot - 8);	// 1 to 4 packets
		fill_pattern(src + i * kSlot, i + 1, len[i]);
		std::memcpy(src + i * kSlot, &i, sizeof(i));	// the message's index
	}
	// one receive per message; SENDs land in receive k's own slot
	for (uint32_t k = 0; k < kLossMsgs; k++)
		post_recv(p.qb.get(), k, dst + k * kSlot, kSlot, g_b.mr->lkey);
	std::vector<ibv_wc> sc, rc;
	int post_err = 0;
	for (uint32_t i = 0; i < kLossMsgs; i++) {
		int e = write_imm
				? post_send(p.qa.get(), IBV_WR_RDMA_WRITE_WITH_IMM, i, src + i * kSlot,
					    len[i], i, uint64_t(uintptr_t(dst + i * kSlot)),
					    g_b.mr->rkey)
				: post_send(p.qa.get(), IBV_WR_SEND, i, src + i * kSlot, len[i]);
		if (e)
			post_err = e;
		if (i % 8 == 7) {	// pace: no congestion control in UC
			auto s = poll_n(g_a.scq.get(), 8, ms(10000));
			sc.insert(sc.end(), s.begin(), s.end());
			drain_quiet(g_b.rcq.get(), rc, ms(30));
		}
	}
	auto s = poll_n(g_a.scq.get(), kLossMsgs - sc.size(), ms(10000));
	sc.insert(sc.end(), s.begin(), s.end());
	drain_quiet(g_b.rcq.get(), rc, ms(300));

	bool sends_ok = !post_err && sc.size() == kLossMsgs;
	for (size_t k = 0; sends_ok && k < sc.size(); k++)
		sends_ok = sc[k].wr_id == k && sc[k].status == IBV_WC_SUCCESS;
	ktap.result(sends_ok, name + ": every requester completion is SUCCESS, in order",
		    "post " + std::to_string(post_err) + ", " + std::to_string(sc.size()) +
			    " completions");

	// Receives complete in order, one per complete message, each exact.
	std::string why;
	int64_t prev = -1;
	for (size_t k = 0; k < rc.size() && why.empty(); k++) {
		const ibv_wc &w = rc[k];
		if (w.status != IBV_WC_SUCCESS || w.wr_id != k) {
			why = "receive " + std::to_string(k) + ": wr_id " + std::to_string(w.wr_id) +
			      " status " + ibv_wc_status_str(w.status);
			break;
		}
		uint32_t i;
		const uint8_t *at;
		if (write_imm) {
			i = be32toh(w.imm_data);
			at = i < kLossMsgs ? dst + size_t(i) * kSlot : nullptr;
			if (w.opcode != IBV_WC_RECV_RDMA_WITH_IMM)
				why = "opcode " + std::to_string(w.opcode);
		} else {
			at = dst + k * kSlot;
			std::memcpy(&i, at, sizeof(i));
			if (w.opcode != IBV_WC_RECV)
				why = "opcode " + std::to_string(w.opcode);
		}
		if (!why.empty())
			break;
		if (i >= kLossMsgs || int64_t(i) <= prev) {
			why = "receive " + std::to_string(k) + " names message " + std::to_string(i) +
			      " after " + std::to_string(prev);
			break;
		}
		uint32_t idx = i;
		std::vector<uint8_t> want(len[i]);
		fill_pattern(want.data(), i + 1, len[i]);
		std::memcpy(want.data(), &idx, sizeof(idx));
		if (w.byte_len != len[i] || std::memcmp(at, want.data(), len[i]))
			why = "message " + std::to_string(i) + ": byte_len " +
			      std::to_string(w.byte_len) + " of " + std::to_string(len[i]) +
			      (std::memcmp(at, want.data(), len[i]) ? ", bytes differ (torn)" : "");
		prev = i;
	}
	ktap.result(why.empty() && !rc.empty(),
		    name + ": every completed receive holds exactly its message, in order, "
			   "receives consumed only by complete messages",
		    why.empty() ? "no receive completed" : why);
	ktap.note(name + ": " + std::to_string(rc.size()) + " of " + std::to_string(kLossMsgs) +
		  " messages completed");
	ktap.result(rc.size() < kLossMsgs && rc.size() > kLossMsgs / 2,
		    name + ": some messages dropped, most delivered",
		    std::to_string(rc.size()) + " of " + std::to_string(kLossMsgs));
	ktap.result(qp_state(p.qa.get()) == IBV_QPS_RTS && qp_state(p.qb.get()) == IBV_QPS_RTS,
		    name + ": both QPs stay in RTS");
}


// ---- forge -------------------------------------------------------------

// A UDP socket sending built packets to B's mroce port.
class Forger {
public:
	explicit Forger(const char *dst) : fd_(socket(AF_INET, SOCK_DGRAM, 0))
	{
		to_.sin_family = AF_INET;
		to_.sin_port = htons(MROCE_UDP_PORT);
		inet_pton(AF_INET, dst, &to_.sin_addr);
	}
	~Forger()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	Forger(const Forger &) = delete;
	Forger &operator=(const Forger &) = delete;
	bool ok() const { return fd_ >= 0; }
	// Build p; edit the bytes (then reseal); send.  False if not sent.
	bool send(const mroce_pkt &p, void (*edit)(std::vector<uint8_t> &) = nullptr)
	{
		std::vector<uint8_t> b(MROCE_MAX_PKT);
		int n = mroce_pkt_build(b.data(), uint32_t(b.size()), &p);
		if (n < 0)
			return false;
		b.resize(size_t(n));
		if (edit) {
			edit(b);
			mroce_pkt_seal(b.data(), uint32_t(b.size() - 4), uint32_t(b.size()));
		}
		++sent;
		return sendto(fd_, b.data(), b.size(), 0, reinterpret_cast<const sockaddr *>(&to_),
			      sizeof(to_)) == ssize_t(b.size());
	}
	unsigned sent = 0;

private:
	int fd_;
	sockaddr_in to_{};
};

const uint8_t kEvil[MROCE_MAX_PAYLOAD] = {0xee, 0xee, 0xee, 0xee};

// The packet at off of a forged message to qpn (mroce_uc_seg, as a sender).
mroce_pkt forged(uint8_t op, uint32_t qpn, uint32_t msn, uint32_t len, uint32_t off = 0,
		 uint64_t va = 0, uint32_t rkey = 0)
{
	mroce_uc_msg m{};
	m.opcode = op;
	m.msn = msn;
	m.length = len;
	m.va = va;
	m.rkey = rkey;
	m.imm = 0x666;
	mroce_pkt p{};
	mroce_uc_seg(&m, off, 1024, qpn, 0, &p);
	p.payload = kEvil;
	return p;
}

void forge(const char *peer_ip)
{
	Pair p = make_pair(Make::plain, "forge");
	if (!p.ok())
		return;
	Qp rc;	// an RC QP of B, connected to A's address
	{
		ibv_qp_init_attr a{};
		a.qp_type = IBV_QPT_RC;
		a.send_cq = g_b.scq.get();
		a.recv_cq = g_b.rcq.get();
		a.cap.max_send_wr = a.cap.max_recv_wr = 16;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		rc.reset(ibv_create_qp(g_b.pd.get(), &a));
	}
	Forger f(peer_ip);
	if (!ktap.result(f.ok() && rc, "forge: a UDP socket and an RC QP on B", errstr(errno)))
		return;
	const uint32_t qpn = p.qb->qp_num;
	const uint32_t msn0 = mroce_isn_start(kPsnA, MROCE_ISN_MSN);
	uint8_t *mem = g_b.buf.data();
	const uint64_t va = uint64_t(uintptr_t(mem));
	const uint32_t rkey = g_b.mr->rkey;
	std::memset(mem, 0, g_b.buf.size());
	for (uint32_t k = 0; k < 8; k++)
		post_recv(p.qb.get(), 1000 + k, mem + k * kSlot, kSlot, g_b.mr->lkey);

	// malformed: every one fails the parser
	using Edit = void (*)(std::vector<uint8_t> &);
	const Edit malformed[] = {
		[](std::vector<uint8_t> &b) { b[5] = 1; },		// path
		[](std::vector<uint8_t> &b) { b[19] = 1; },		// dsn
		[](std::vector<uint8_t> &b) { b[31] = 1; },		// tx_ts
		[](std::vector<uint8_t> &b) { b[35] = 1; },		// SETH.rq_seq
		[](std::vector<uint8_t> &b) { b[3] |= MROCE_F_ACKREQ; },
		[](std::vector<uint8_t> &b) { b[3] |= MROCE_F_RETX; },
		[](std::vector<uint8_t> &b) { b[8] = 3; },		// adl
		[](std::vector<uint8_t> &b) { b[39] += 1; },		// length: LAST wrong
		[](std::vector<uint8_t> &b) { b[36] = 0x80; b[37] = 1; },	// length > 2^31
		[](std::vector<uint8_t> &b) { b[6] = 0x10; },		// payload_len
		[](std::vector<uint8_t> &b) { b.resize(30); },		// short
	};
	unsigned sent_bad = 0;
	for (Edit e : malformed)
		sent_bad += f.send(forged(MROCE_OP_UC_SEND, qpn, msn0, 100), e);
	// outside the MSN window
	for (uint32_t m : {msn0 - 1, msn0 + MROCE_UC_MSN_WND + 1, msn0 + 0x80000000u})
		f.send(forged(MROCE_OP_UC_SEND, qpn, m, 100));
	// the wrong transport: a UC packet at the RC QP, an RC SEND at the UC QP
	f.send(forged(MROCE_OP_UC_SEND, rc->qp_num, msn0, 100));
	{
		mroce_pkt q{};
		q.version = MROCE_WIRE_VERSION;
		q.opcode = MROCE_OP_SEND;
		q.flags = MROCE_F_FIRST | MROCE_F_LAST;
		q.dqpn = qpn;
		q.msn = msn0;
		q.seth.length = 100;
		q.payload = kEvil;
		q.payload_len = 100;
		f.send(q);
	}
	// in the window, but refused by the responder: a bad rkey, a range past
	// the region, a message without its first packet
	f.send(forged(MROCE_OP_UC_WRITE, qpn, msn0 + 1, 100, 0, va, rkey ^ 0x100));
	f.send(forged(MROCE_OP_UC_WRITE_IMM, qpn, msn0 + 2, 3000, 0, va + g_b.buf.size() - 1000,
		      rkey));
	f.send(forged(MROCE_OP_UC_WRITE_IMM, qpn, msn0 + 3, 3000, 1024, va, rkey));
	f.send(forged(MROCE_OP_UC_WRITE_IMM, qpn, msn0 + 3, 3000, 2048, va, rkey));
	auto wc = poll_n(g_b.rcq.get(), 1, ms(500));
	bool clean = std::all_of(g_b.buf.begin(), g_b.buf.end(), [](uint8_t c) { return !c; });
	ktap.result(sent_bad == std::size(malformed) && wc.empty() && clean,
		    "forge: malformed, out-of-window, wrong-transport, bad-rkey, past-the-region "
		    "and headless packets complete nothing and write nothing",
		    std::to_string(sent_bad) + " malformed sent, " + std::to_string(wc.size()) +
			    " completions, memory " + (clean ? "clean" : "written"));
	ktap.result(qp_state(p.qa.get()) == IBV_QPS_RTS && qp_state(p.qb.get()) == IBV_QPS_RTS &&
			    qp_state(rc.get()) == IBV_QPS_RESET,
		    "forge: the QPs keep their states");
	ktap.note("forge: " + std::to_string(f.sent) + " packets forged");

	// In the window: delivered, as the real peer's would be (3.10).
	f.send(forged(MROCE_OP_UC_SEND, qpn, msn0 + 4, 100));
	wc = poll_n(g_b.rcq.get(), 1, ms(10000));
	ktap.result(wc.size() == 1 && wc[0].wr_id == 1000 && wc[0].byte_len == 100 &&
			    mem[0] == 0xee && mem[4] == 0,
		    "forge: an in-window SEND from the peer's address is delivered (no "
		    "authentication, as specified)");
	// ... and moved the window: A's MSNs up to msn0 + 4 are dropped now.
	uint8_t *src = g_a.buf.data();
	for (uint32_t k = 0; k < 6; k++) {
		fill_pattern(src + k * 256, 1100 + k, 200);
		post_send(p.qa.get(), IBV_WR_SEND, 1100 + k, src + k * 256, 200);
	}
	auto s = poll_n(g_a.scq.get(), 6, ms(10000));
	wc = poll_n(g_b.rcq.get(), 2, ms(1000));
	bool ok = s.size() == 6 && wc.size() == 1 && wc[0].wr_id == 1001 &&
		  wc[0].byte_len == 200 && is_pattern(mem + kSlot, 1105, 200);
	ktap.result(ok, "forge: the genuine sender's MSNs behind the forged one are dropped, "
			"the next one is delivered",
		    std::to_string(s.size()) + " sent, " + std::to_string(wc.size()) + " received");
}
} // namespace

int main(int argc, char **argv)
{
	if (argc < 6 || (std::strcmp(argv[5], "basic") && std::strcmp(argv[5], "loss") &&
			 std::strcmp(argv[5], "forge"))) {
		std::fprintf(stderr,
			     "usage: %s DEV_A GID_INDEX_A DEV_B GID_INDEX_B basic|loss|forge [B_IP]\n",
			     argv[0]);
		return 2;
	}
	const size_t bytes = std::max<size_t>(kLossMsgs * kSlot, 1 << 20);
	if (!open_dev(g_a, argv[1], std::atoi(argv[2]), bytes) ||
	    !open_dev(g_b, argv[3], std::atoi(argv[4]), bytes))
		return ktap.finish();
	if (!std::strcmp(argv[5], "basic")) {
		basic();
	} else if (!std::strcmp(argv[5], "forge")) {
		forge(argc > 6 ? argv[6] : "10.12.0.2");
	} else {
		loss_run(false);
		loss_run(true);
	}
	return ktap.finish();
}
