// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// wr_api - the extended verbs end to end: an RC QP made by ibv_create_qp_ex
// (ibv_wr_* API, every operation mroce runs) and a CQ made by
// ibv_create_cq_ex on device A, connected to an ordinary QP/CQ on device B
// of the same process.  Checks payloads, remote memory, atomics'
// results, immediates, the cq_ex read_* fields, batches, and that errors
// inside a batch come back from ibv_wr_complete with nothing sent.
//
// Usage: mroce_wr_api DEV_A GID_INDEX_A DEV_B GID_INDEX_B
// Output is KTAP.  Exit status 0 when every case passed.

#include <infiniband/verbs.h>

#include <endian.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "verbs_test.hpp"

namespace {

using namespace mroce_test;

Ktap ktap;

constexpr size_t kBuf = 1 << 16;
constexpr uint32_t kDepth = 64;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr uint64_t kAllOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_INV |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

struct Side {
	Context ctx;
	Pd pd;
	CqEx cqx;	// side A
	Cq cq;		// side B
	std::vector<uint8_t> mem = std::vector<uint8_t>(kBuf);
	Mr mr;
	Qp qp;
	ibv_qp_ex *qpx = nullptr;
	ibv_gid gid{};
	int gid_index = 0;
	uint32_t max_send_sge = 0;	// as granted
	ibv_cq *any_cq() const { return cqx ? ibv_cq_ex_to_cq(cqx.get()) : cq.get(); }
	uint8_t *at(size_t off) { return mem.data() + off; }
	uint64_t addr(size_t off) { return uint64_t(uintptr_t(at(off))); }
};

ibv_qp_init_attr_ex qp_attr(Side &s, uint64_t ops)
{
	ibv_qp_init_attr_ex a{};
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = s.pd.get();
	a.send_cq = a.recv_cq = s.any_cq();
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = kDepth;
	a.cap.max_send_sge = a.cap.max_recv_sge = 2;
	a.cap.max_inline_data = 64;
	a.send_ops_flags = ops;
	return a;
}

bool make_qp(Side &s, bool extended);

bool setup(Side &s, const char *dev, int gid_index, bool extended)
{
	s.ctx = open_device(dev);
	if (!ktap.result(bool(s.ctx), std::string("open ") + dev))
		return false;
	s.gid_index = gid_index;
	s.pd.reset(ibv_alloc_pd(s.ctx.get()));
	if (extended) {
		ibv_cq_init_attr_ex ca{};
		ca.cqe = 2 * kDepth;
		ca.wc_flags = IBV_WC_STANDARD_FLAGS;
		s.cqx.reset(ibv_create_cq_ex(s.ctx.get(), &ca));
		if (!ktap.result(bool(s.cqx), "ibv_create_cq_ex with the standard wc_flags",
				 s.cqx ? "" : errstr(errno)))
			return false;
	} else {
		s.cq.reset(ibv_create_cq(s.ctx.get(), 2 * kDepth, nullptr, nullptr, 0));
	}
	// MW_BIND: test_send binds a window to B's region (a region access
	// flag, not a QP one).
	s.mr.reset(ibv_reg_mr(s.pd.get(), s.mem.data(), kBuf, kAccess | IBV_ACCESS_MW_BIND));
	if (!s.pd || !s.any_cq() || !s.mr || ibv_query_gid(s.ctx.get(), 1, gid_index, &s.gid))
		return ktap.result(false, std::string("objects on ") + dev, errstr(errno));
	return make_qp(s, extended);
}

// (Re)create the side's QP: every test group gets a fresh connection, so one
// failure (a QP in the error state) does not cascade.
bool make_qp(Side &s, bool extended)
{
	s.qp.reset();
	s.qpx = nullptr;
	if (extended) {
		auto a = qp_attr(s, kAllOps);
		s.qp.reset(ibv_create_qp_ex(s.ctx.get(), &a));
		if (!s.qp)
			return ktap.result(false, "ibv_create_qp_ex with every supported send op",
					   errstr(errno));
		s.max_send_sge = a.cap.max_send_sge;
		s.qpx = ibv_qp_to_qp_ex(s.qp.get());
		return s.qpx || ktap.result(false, "ibv_qp_to_qp_ex on it");
	}
	ibv_qp_init_attr a{};
	a.send_cq = a.recv_cq = s.cq.get();
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = kDepth;
	a.cap.max_send_sge = a.cap.max_recv_sge = 2;
	s.qp.reset(ibv_create_qp(s.pd.get(), &a));
	if (!s.qp)
		return ktap.result(false, "ibv_create_qp on B", errstr(errno));
	return ibv_qp_to_qp_ex(s.qp.get()) == nullptr ||
	       ktap.result(false, "ibv_qp_to_qp_ex is NULL for an ibv_create_qp QP");
}

int connect_one(Side &s, const Side &peer)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = kAccess;
	if (int rc = ibv_modify_qp(s.qp.get(), &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						     IBV_QP_ACCESS_FLAGS))
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer.qp->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer.gid;
	a.ah_attr.grh.sgid_index = uint8_t(s.gid_index);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (int rc = ibv_modify_qp(s.qp.get(), &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						     IBV_QP_MAX_DEST_RD_ATOMIC |
						     IBV_QP_MIN_RNR_TIMER))
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(s.qp.get(), &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					       IBV_QP_MAX_QP_RD_ATOMIC);
}

void drain(ibv_cq *cq)
{
	ibv_wc wc[16];
	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr attr{};
	ibv_qp_init_attr init{};
	return ibv_query_qp(qp, &attr, IBV_QP_STATE, &init) ? IBV_QPS_ERR : attr.qp_state;
}

// Connected QPs for the next test group: the current ones while both are
// in RTS, else new ones (so one failure does not cascade).  Replacing a
// connected pair only then keeps late packets to a destroyed QP (counted
// as rx_stale_qp) out of passing runs.
bool fresh(Side &a, Side &b)
{
	if (a.qp && b.qp && qp_state(a.qp.get()) == IBV_QPS_RTS &&
	    qp_state(b.qp.get()) == IBV_QPS_RTS)
		return true;
	if (!make_qp(a, true) || !make_qp(b, false))
		return false;
	drain(a.any_cq());
	drain(b.any_cq());
	int rc = connect_one(a, b);
	if (!rc)
		rc = connect_one(b, a);
	return rc == 0 || ktap.result(false, "connect A and B", errstr(rc));
}

// A completion as read through ibv_cq_ex's read_* ops (or ibv_poll_cq).
struct Wc {
	uint64_t wr_id;
	ibv_wc_status status;
	ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t imm;		// host order; the invalidated rkey with IBV_WC_WITH_INV
	uint32_t qp_num;
	unsigned flags;
};

using Clock = std::chrono::steady_clock;

// Up to n completions from the cq_ex, within the time limit.
std::vector<Wc> poll_ex(ibv_cq_ex *cq, size_t n, std::chrono::milliseconds limit)
{
	std::vector<Wc> out;
	const auto end = Clock::now() + limit;
	while (out.size() < n && Clock::now() < end) {
		ibv_poll_cq_attr attr{};
		int rc = ibv_start_poll(cq, &attr);
		if (rc == ENOENT) {
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			continue;
		}
		if (rc) {
			ktap.result(false, "ibv_start_poll", errstr(rc));
			return out;
		}
		do {
			Wc w{cq->wr_id, cq->status, ibv_wc_read_opcode(cq), ibv_wc_read_byte_len(cq),
			     0, ibv_wc_read_qp_num(cq), ibv_wc_read_wc_flags(cq)};
			if (w.flags & IBV_WC_WITH_INV)
				w.imm = ibv_wc_read_invalidated_rkey(cq);
			else if (w.flags & IBV_WC_WITH_IMM)
				w.imm = be32toh(ibv_wc_read_imm_data(cq));
			out.push_back(w);
		} while (out.size() < n && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	return out;
}

std::vector<Wc> poll(ibv_cq *cq, size_t n, std::chrono::milliseconds limit)
{
	std::vector<Wc> out;
	const auto end = Clock::now() + limit;
	while (out.size() < n && Clock::now() < end) {
		ibv_wc wc;
		int k = ibv_poll_cq(cq, 1, &wc);
		if (k < 0) {
			ktap.result(false, "ibv_poll_cq", std::to_string(k));
			return out;
		}
		if (k == 0) {
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			continue;
		}
		uint32_t imm = wc.wc_flags & IBV_WC_WITH_INV ? wc.invalidated_rkey :
			       wc.wc_flags & IBV_WC_WITH_IMM ? be32toh(wc.imm_data) : 0;
		out.push_back({wc.wr_id, wc.status, wc.opcode, wc.byte_len, imm, wc.qp_num,
			       wc.wc_flags});
	}
	return out;
}

constexpr std::chrono::milliseconds kWait(10000);

std::string describe(const std::vector<Wc> &v)
{
	std::string s = std::to_string(v.size()) + " completion(s)";
	for (const auto &w : v)
		s += "; wr_id " + std::to_string(w.wr_id) + " status " +
		     ibv_wc_status_str(w.status) + " opcode " + std::to_string(w.opcode) +
		     " len " + std::to_string(w.byte_len) + " imm " + std::to_string(w.imm) +
		     " flags " + std::to_string(w.flags);
	return s;
}

// One successful completion with this wr_id and opcode.
bool one_ok(const std::vector<Wc> &v, uint64_t wr_id, ibv_wc_opcode op)
{
	return v.size() == 1 && v[0].wr_id == wr_id && v[0].status == IBV_WC_SUCCESS &&
	       v[0].opcode == op;
}

int post_recv(Side &b, uint64_t wr_id, size_t off, uint32_t len)
{
	ibv_sge sge{b.addr(off), len, b.mr->lkey};
	ibv_recv_wr wr{};
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_recv_wr *bad;
	return ibv_post_recv(b.qp.get(), &wr, &bad);
}

void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; ++i)
		p[i] = uint8_t(seed + i * 7);
}

void test_create_errors(Side &a)
{
	struct {
		const char *name;
		uint64_t ops;
		ibv_qp_type type;
	} bad[] = {
		{"ibv_create_qp_ex UC with LOCAL_INV is EOPNOTSUPP", IBV_QP_EX_WITH_LOCAL_INV,
		 IBV_QPT_UC},
		{"ibv_create_qp_ex with TSO is EOPNOTSUPP", IBV_QP_EX_WITH_TSO, IBV_QPT_RC},
		{"ibv_create_qp_ex UD with RDMA_WRITE is EOPNOTSUPP",
		 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE, IBV_QPT_UD},
	};
	for (const auto &c : bad) {
		auto attr = qp_attr(a, c.ops);
		attr.qp_type = c.type;
		errno = 0;
		Qp q(ibv_create_qp_ex(a.ctx.get(), &attr));
		ktap.result(!q && errno == EOPNOTSUPP, c.name, q ? "created" : errstr(errno));
	}
	{
		// CREATE_FLAGS with no flag set, and a UD QP without ibv_wr_*, are fine.
		auto attr = qp_attr(a, IBV_QP_EX_WITH_SEND);
		attr.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		Qp q(ibv_create_qp_ex(a.ctx.get(), &attr));
		ktap.result(q && ibv_qp_to_qp_ex(q.get()),
			    "ibv_create_qp_ex with CREATE_FLAGS 0", q ? "" : errstr(errno));
		attr = qp_attr(a, 0);
		attr.comp_mask = IBV_QP_INIT_ATTR_PD;
		attr.qp_type = IBV_QPT_UD;
		Qp u(ibv_create_qp_ex(a.ctx.get(), &attr));
		ktap.result(u && !ibv_qp_to_qp_ex(u.get()),
			    "ibv_create_qp_ex UD without send ops: a plain QP", u ? "" : errstr(errno));
		attr = qp_attr(a, IBV_QP_EX_WITH_SEND);
		attr.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		attr.create_flags = IBV_QP_CREATE_SCATTER_FCS;
		errno = 0;
		Qp f(ibv_create_qp_ex(a.ctx.get(), &attr));
		ktap.result(!f && errno == EOPNOTSUPP, "ibv_create_qp_ex with a create flag is EOPNOTSUPP",
			    f ? "created" : errstr(errno));
	}
	// Timestamps are supported (selftests/mroce/srq_cq_ex.cpp checks their
	// values); each flag brings its reader.
	for (uint64_t f : {uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP),
			   uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)}) {
		ibv_cq_init_attr_ex ca{};
		ca.cqe = 4;
		ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | f;
		errno = 0;
		CqEx c(ibv_create_cq_ex(a.ctx.get(), &ca));
		const bool ts = f == IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
		ktap.result(c && bool(c->read_completion_ts) == ts &&
				    bool(c->read_completion_wallclock_ns) == !ts,
			    "ibv_create_cq_ex with a completion timestamp (" + std::to_string(f) +
				    ") offers its reader",
			    c ? "readers" : errstr(errno));
	}
}

void test_send(Side &a, Side &b)
{
	// SEND with one SGE.
	std::memset(b.at(0), 0, 4096);
	fill(a.at(0), 4096, 1);
	post_recv(b, 100, 0, 4096);
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 1;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(a.qpx);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, a.addr(0), 4096);
	int rc = ibv_wr_complete(a.qpx);
	auto sa = poll_ex(a.cqx.get(), 1, kWait);
	auto rb = poll(b.cq.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 1, IBV_WC_SEND) && sa[0].qp_num == a.qp->qp_num &&
			    one_ok(rb, 100, IBV_WC_RECV) && rb[0].byte_len == 4096 &&
			    !std::memcmp(a.at(0), b.at(0), 4096),
		    "wr_send + wr_set_sge: 4 KiB payload, cq_ex opcode and qp_num",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));

	// SEND_WITH_IMM, inline.
	char msg[] = "inline hello from ibv_wr_send_imm";
	std::memset(b.at(0), 0, 64);
	post_recv(b, 101, 0, 4096);
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 2;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(a.qpx, htobe32(0xabcd1234));
	ibv_wr_set_inline_data(a.qpx, msg, sizeof(msg));
	rc = ibv_wr_complete(a.qpx);
	sa = poll_ex(a.cqx.get(), 1, kWait);
	rb = poll(b.cq.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 2, IBV_WC_SEND) && one_ok(rb, 101, IBV_WC_RECV) &&
			    rb[0].byte_len == sizeof(msg) && (rb[0].flags & IBV_WC_WITH_IMM) &&
			    rb[0].imm == 0xabcd1234 && !std::memcmp(b.at(0), msg, sizeof(msg)),
		    "wr_send_imm + wr_set_inline_data: payload and immediate",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));

	// SEND_WITH_INV, two SGEs, of a type 2 window B's QP bound (only a
	// window or a fast-register region can be invalidated; mw.cpp has
	// the rest).
	std::unique_ptr<ibv_mw, int (*)(ibv_mw *)> mw(ibv_alloc_mw(b.pd.get(), IBV_MW_TYPE_2),
						      ibv_dealloc_mw);
	const uint32_t inv_rkey = mw ? ibv_inc_rkey(mw->rkey) : 0;
	if (mw) {
		ibv_send_wr bw{};
		bw.wr_id = 900;
		bw.opcode = IBV_WR_BIND_MW;
		bw.send_flags = IBV_SEND_SIGNALED;
		bw.bind_mw.mw = mw.get();
		bw.bind_mw.rkey = inv_rkey;
		bw.bind_mw.bind_info = {b.mr.get(), b.addr(0), 4096, IBV_ACCESS_REMOTE_WRITE};
		ibv_send_wr *bbad;
		rc = ibv_post_send(b.qp.get(), &bw, &bbad);
	}
	rb = poll(b.cq.get(), 1, kWait);
	ktap.result(mw && rc == 0 && one_ok(rb, 900, IBV_WC_BIND_MW),
		    "a type 2 window bound on B (for wr_send_inv)",
		    "rc " + std::to_string(rc) + "; B: " + describe(rb));
	fill(a.at(0), 100, 3);
	fill(a.at(1000), 50, 9);
	std::memset(b.at(0), 0, 200);
	post_recv(b, 102, 0, 4096);
	const ibv_sge sg[2] = {{a.addr(0), 100, a.mr->lkey}, {a.addr(1000), 50, a.mr->lkey}};
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 3;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(a.qpx, inv_rkey);
	ibv_wr_set_sge_list(a.qpx, 2, sg);
	rc = ibv_wr_complete(a.qpx);
	sa = poll_ex(a.cqx.get(), 1, kWait);
	rb = poll(b.cq.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 3, IBV_WC_SEND) && one_ok(rb, 102, IBV_WC_RECV) &&
			    rb[0].byte_len == 150 && (rb[0].flags & IBV_WC_WITH_INV) &&
			    rb[0].imm == inv_rkey && !std::memcmp(b.at(0), a.at(0), 100) &&
			    !std::memcmp(b.at(100), a.at(1000), 50),
		    "wr_send_inv + wr_set_sge_list: gathered payload, invalidated rkey",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));
}

void test_rdma(Side &a, Side &b)
{
	// RDMA WRITE gathering two SGEs.
	fill(a.at(0), 3000, 11);
	fill(a.at(5000), 1000, 13);
	std::memset(b.at(8192), 0, 4096);
	const ibv_sge sg[2] = {{a.addr(0), 3000, a.mr->lkey}, {a.addr(5000), 1000, a.mr->lkey}};
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 10;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(a.qpx, b.mr->rkey, b.addr(8192));
	ibv_wr_set_sge_list(a.qpx, 2, sg);
	int rc = ibv_wr_complete(a.qpx);
	auto sa = poll_ex(a.cqx.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 10, IBV_WC_RDMA_WRITE) &&
			    !std::memcmp(b.at(8192), a.at(0), 3000) &&
			    !std::memcmp(b.at(8192 + 3000), a.at(5000), 1000),
		    "wr_rdma_write + wr_set_sge_list: remote memory written",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa));
}

void test_write_imm(Side &a, Side &b)
{
	// Reference: the same operation through ibv_post_send.
	fill(a.at(0), 256, 5);
	std::memset(b.at(16384), 0, 256);
	post_recv(b, 109, 0, 4096);
	ibv_sge sge{a.addr(0), 256, a.mr->lkey};
	ibv_send_wr wr{};
	wr.wr_id = 9;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(76);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = b.addr(16384);
	wr.wr.rdma.rkey = b.mr->rkey;
	ibv_send_wr *bad;
	int rc = ibv_post_send(a.qp.get(), &wr, &bad);
	auto sa = poll_ex(a.cqx.get(), 1, kWait);
	auto rb = poll(b.cq.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 9, IBV_WC_RDMA_WRITE) &&
			    one_ok(rb, 109, IBV_WC_RECV_RDMA_WITH_IMM) && rb[0].imm == 76 &&
			    !std::memcmp(b.at(16384), a.at(0), 256),
		    "ibv_post_send RDMA_WRITE_WITH_IMM (reference for the next)",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));
	if (!fresh(a, b))
		return;

	// RDMA WRITE_WITH_IMM, inline list.
	char p1[] = "first part, ", p2[] = "second part";
	const ibv_data_buf bufs[2] = {{p1, sizeof(p1) - 1}, {p2, sizeof(p2)}};
	post_recv(b, 110, 0, 4096);
	std::memset(b.at(16384), 0, 64);
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 11;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(a.qpx, b.mr->rkey, b.addr(16384), htobe32(77));
	ibv_wr_set_inline_data_list(a.qpx, 2, bufs);
	rc = ibv_wr_complete(a.qpx);
	sa = poll_ex(a.cqx.get(), 1, kWait);
	rb = poll(b.cq.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 11, IBV_WC_RDMA_WRITE) &&
			    one_ok(rb, 110, IBV_WC_RECV_RDMA_WITH_IMM) && rb[0].imm == 77 &&
			    !std::strcmp(reinterpret_cast<char *>(b.at(16384)),
					 "first part, second part"),
		    "wr_rdma_write_imm + wr_set_inline_data_list: memory and immediate",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));

}

void test_read(Side &a, Side &b)
{
	// RDMA READ scattering into two SGEs.
	fill(b.at(20000), 2048, 17);
	std::memset(a.at(30000), 0, 4096);
	const ibv_sge rd[2] = {{a.addr(30000), 1024, a.mr->lkey},
			       {a.addr(32000), 1024, a.mr->lkey}};
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 12;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(a.qpx, b.mr->rkey, b.addr(20000));
	ibv_wr_set_sge_list(a.qpx, 2, rd);
	int rc = ibv_wr_complete(a.qpx);
	auto sa = poll_ex(a.cqx.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 12, IBV_WC_RDMA_READ) &&
			    !std::memcmp(a.at(30000), b.at(20000), 1024) &&
			    !std::memcmp(a.at(32000), b.at(21024), 1024),
		    "wr_rdma_read + wr_set_sge_list: scattered local copy",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa));
}

void test_atomics(Side &a, Side &b)
{
	const size_t word = 40000, result = 40008;
	uint64_t v = 100;
	std::memcpy(b.at(word), &v, 8);
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 20;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(a.qpx, b.mr->rkey, b.addr(word), 23);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, a.addr(result), 8);
	int rc = ibv_wr_complete(a.qpx);
	auto sa = poll_ex(a.cqx.get(), 1, kWait);
	uint64_t old = 0, now = 0;
	std::memcpy(&old, a.at(result), 8);
	std::memcpy(&now, b.at(word), 8);
	ktap.result(rc == 0 && one_ok(sa, 20, IBV_WC_FETCH_ADD) && old == 100 && now == 123,
		    "wr_atomic_fetch_add: 100 + 23, old value returned",
		    "rc " + std::to_string(rc) + " old " + std::to_string(old) + " now " +
			    std::to_string(now) + "; A: " + describe(sa));

	// Two compare-and-swaps in one batch: the first matches, the second not.
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 21;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_cmp_swp(a.qpx, b.mr->rkey, b.addr(word), 123, 7);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, a.addr(result), 8);
	a.qpx->wr_id = 22;
	ibv_wr_atomic_cmp_swp(a.qpx, b.mr->rkey, b.addr(word), 999, 1);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, a.addr(result + 8), 8);
	rc = ibv_wr_complete(a.qpx);
	sa = poll_ex(a.cqx.get(), 2, kWait);
	uint64_t r1 = 0, r2 = 0;
	std::memcpy(&r1, a.at(result), 8);
	std::memcpy(&r2, a.at(result + 8), 8);
	std::memcpy(&now, b.at(word), 8);
	ktap.result(rc == 0 && sa.size() == 2 && sa[0].wr_id == 21 && sa[1].wr_id == 22 &&
			    sa[0].status == IBV_WC_SUCCESS && sa[1].status == IBV_WC_SUCCESS &&
			    sa[0].opcode == IBV_WC_COMP_SWAP && r1 == 123 && r2 == 7 && now == 7,
		    "wr_atomic_cmp_swp: swap on match, none on mismatch, in one batch",
		    "rc " + std::to_string(rc) + " r1 " + std::to_string(r1) + " r2 " +
			    std::to_string(r2) + " now " + std::to_string(now) + "; A: " +
			    describe(sa));
}

void test_batches(Side &a, Side &b)
{
	// Eight unsignaled writes and a signaled send: one wr_complete, one doorbell.
	fill(a.at(0), 8 * 512, 23);
	std::memset(b.at(45000), 0, 8 * 512);
	post_recv(b, 120, 0, 4096);
	ibv_wr_start(a.qpx);
	a.qpx->wr_flags = 0;
	for (int i = 0; i < 8; ++i) {
		a.qpx->wr_id = 30 + i;
		ibv_wr_rdma_write(a.qpx, b.mr->rkey, b.addr(45000 + 512 * i));
		ibv_wr_set_sge(a.qpx, a.mr->lkey, a.addr(512 * i), 512);
	}
	a.qpx->wr_id = 38;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(a.qpx);
	ibv_wr_set_inline_data(a.qpx, a.at(0), 16);
	int rc = ibv_wr_complete(a.qpx);
	auto sa = poll_ex(a.cqx.get(), 1, kWait);
	auto rb = poll(b.cq.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 38, IBV_WC_SEND) && one_ok(rb, 120, IBV_WC_RECV) &&
			    !std::memcmp(b.at(45000), a.at(0), 8 * 512),
		    "a batch of 8 unsignaled writes and a signaled send",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));

	// An error in the middle: wr_complete returns it and nothing is sent.
	post_recv(b, 121, 0, 4096);
	std::vector<ibv_sge> many;
	for (uint32_t i = 0; i <= a.max_send_sge; ++i)
		many.push_back({a.addr(8 * i), 8, a.mr->lkey});
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 40;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(a.qpx);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, a.addr(0), 8);
	a.qpx->wr_id = 41;
	ibv_wr_rdma_write(a.qpx, b.mr->rkey, b.addr(45000));
	ibv_wr_set_sge_list(a.qpx, many.size(), many.data());	// one over max_send_sge
	rc = ibv_wr_complete(a.qpx);
	sa = poll_ex(a.cqx.get(), 1, std::chrono::milliseconds(500));
	rb = poll(b.cq.get(), 1, std::chrono::milliseconds(10));
	ktap.result(rc == EINVAL && sa.empty() && rb.empty(),
		    "too many SGEs mid-batch: wr_complete is EINVAL, nothing sent",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));

	// Operations not in the QP's send_ops_flags fail the batch with EOPNOTSUPP
	// (LOCAL_INV and BIND_MW work when enabled: mw.cpp).
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 42;
	ibv_wr_local_inv(a.qpx, 0x1234);
	rc = ibv_wr_complete(a.qpx);
	ktap.result(rc == EOPNOTSUPP, "wr_local_inv not enabled: wr_complete is EOPNOTSUPP",
		    errstr(rc));
	ibv_wr_start(a.qpx);
	ibv_wr_bind_mw(a.qpx, nullptr, 0, nullptr);
	rc = ibv_wr_complete(a.qpx);
	ktap.result(rc == EOPNOTSUPP, "wr_bind_mw not enabled: wr_complete is EOPNOTSUPP",
		    errstr(rc));

	// wr_abort discards.
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 43;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(a.qpx);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, a.addr(0), 8);
	ibv_wr_abort(a.qpx);
	sa = poll_ex(a.cqx.get(), 1, std::chrono::milliseconds(500));
	rb = poll(b.cq.get(), 1, std::chrono::milliseconds(10));
	ktap.result(sa.empty() && rb.empty(), "wr_abort: nothing sent",
		    "A: " + describe(sa) + "; B: " + describe(rb));

	// The QP is still healthy: the receive posted above takes this send,
	// completed through ibv_poll_cq on the cq_ex's CQ.
	fill(a.at(0), 64, 29);
	ibv_wr_start(a.qpx);
	a.qpx->wr_id = 44;
	a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(a.qpx);
	ibv_wr_set_sge(a.qpx, a.mr->lkey, a.addr(0), 64);
	rc = ibv_wr_complete(a.qpx);
	sa = poll(ibv_cq_ex_to_cq(a.cqx.get()), 1, kWait);
	rb = poll(b.cq.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 44, IBV_WC_SEND) && one_ok(rb, 121, IBV_WC_RECV) &&
			    rb[0].byte_len == 64 && !std::memcmp(b.at(0), a.at(0), 64),
		    "after the failed batches the QP works; ibv_poll_cq on a cq_ex CQ",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));

	// Mixed with ibv_post_send on the same QP.
	post_recv(b, 122, 0, 4096);
	ibv_sge sge{a.addr(0), 32, a.mr->lkey};
	ibv_send_wr wr{};
	wr.wr_id = 45;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_send_wr *bad;
	rc = ibv_post_send(a.qp.get(), &wr, &bad);
	sa = poll_ex(a.cqx.get(), 1, kWait);
	rb = poll(b.cq.get(), 1, kWait);
	ktap.result(rc == 0 && one_ok(sa, 45, IBV_WC_SEND) && one_ok(rb, 122, IBV_WC_RECV),
		    "ibv_post_send on the same QP, completion read through the cq_ex",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));
}

struct AhFree { void operator()(ibv_ah *h) const { ibv_destroy_ah(h); } };

// UD through ibv_wr_*: a UD QP of A created by ibv_create_qp_ex with SEND
// and SEND_WITH_IMM sends to a UD QP of B with wr_set_ud_addr (before or
// after the data), inline data and no data; a WR without an address fails.
void test_ud(Side &a, Side &b)
{
	constexpr uint32_t kQkey = 0x11112222, kGrh = 40;
	auto attr = qp_attr(a, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	attr.qp_type = IBV_QPT_UD;
	Qp ua(ibv_create_qp_ex(a.ctx.get(), &attr));
	ibv_qp_init_attr ib{};
	ib.send_cq = ib.recv_cq = b.cq.get();
	ib.qp_type = IBV_QPT_UD;
	ib.cap.max_send_wr = ib.cap.max_recv_wr = kDepth;
	ib.cap.max_send_sge = ib.cap.max_recv_sge = 1;
	Qp ub(ibv_create_qp(b.pd.get(), &ib));
	ibv_qp_ex *qx = ua ? ibv_qp_to_qp_ex(ua.get()) : nullptr;
	if (!ktap.result(ua && ub && qx, "UD: ibv_create_qp_ex with SEND and SEND_WITH_IMM",
			 errstr(errno)))
		return;
	// In RESET: sends and receives are refused, nothing is queued.
	{
		ibv_wr_start(qx);
		qx->wr_id = 60;
		ibv_wr_send(qx);
		ibv_wr_set_ud_addr(qx, nullptr, 1, kQkey);
		int rc = ibv_wr_complete(qx);
		ibv_sge sge{b.addr(0x8000), 64, b.mr->lkey};
		ibv_recv_wr rw{};
		rw.sg_list = &sge;
		rw.num_sge = 1;
		ibv_recv_wr *rbad = nullptr;
		int rr = ibv_post_recv(ub.get(), &rw, &rbad);
		ktap.result(rc == EINVAL && rr == EINVAL && rbad == &rw,
			    "UD in RESET: wr_complete and ibv_post_recv are EINVAL",
			    "wr_complete " + errstr(rc) + ", ibv_post_recv " + errstr(rr));
	}
	for (ibv_qp *q : {ua.get(), ub.get()}) {
		ibv_qp_attr m{};
		m.qp_state = IBV_QPS_INIT;
		m.port_num = 1;
		m.qkey = kQkey;
		int rc = ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_QKEY);
		m = {};
		m.qp_state = IBV_QPS_RTR;
		rc = rc ? rc : ibv_modify_qp(q, &m, IBV_QP_STATE);
		m.qp_state = IBV_QPS_RTS;
		rc = rc ? rc : ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_SQ_PSN);
		if (!ktap.result(rc == 0, "UD: INIT, RTR, RTS", errstr(rc)))
			return;
	}
	ibv_ah_attr ah_attr{};
	ah_attr.is_global = 1;
	ah_attr.grh.dgid = b.gid;
	ah_attr.grh.sgid_index = uint8_t(a.gid_index);
	ah_attr.grh.hop_limit = 64;
	ah_attr.port_num = 1;
	std::unique_ptr<ibv_ah, AhFree> ah(ibv_create_ah(a.pd.get(), &ah_attr));
	if (!ktap.result(bool(ah), "UD: ibv_create_ah", errstr(errno)))
		return;
	drain(a.any_cq());
	drain(b.cq.get());
	constexpr size_t kRecv = 0x8000, kSlot = 512;
	std::memset(b.at(kRecv), 0, 3 * kSlot);
	for (uint64_t i = 0; i < 3; ++i) {
		ibv_sge sge{b.addr(kRecv + i * kSlot), kSlot, b.mr->lkey};
		ibv_recv_wr wr{};
		wr.wr_id = 200 + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ibv_recv_wr *bad;
		if (!ktap.result(ibv_post_recv(ub.get(), &wr, &bad) == 0, "UD: ibv_post_recv"))
			return;
	}
	fill(a.at(0x100), 300, 91);
	char text[] = "UD inline through ibv_wr_set_inline_data";
	ibv_wr_start(qx);
	qx->wr_id = 61;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_ud_addr(qx, ah.get(), ub->qp_num, kQkey);		// address, then data
	ibv_wr_set_sge(qx, a.mr->lkey, a.addr(0x100), 300);
	qx->wr_id = 62;
	ibv_wr_send_imm(qx, htobe32(0x5eed));
	ibv_wr_set_inline_data(qx, text, sizeof(text));			// data, then address
	ibv_wr_set_ud_addr(qx, ah.get(), ub->qp_num, kQkey);
	qx->wr_id = 63;
	ibv_wr_send(qx);						// no data
	ibv_wr_set_ud_addr(qx, ah.get(), ub->qp_num, kQkey);
	int rc = ibv_wr_complete(qx);
	auto sa = poll_ex(a.cqx.get(), 3, kWait);
	auto rb = poll(b.cq.get(), 3, kWait);
	bool ok = rc == 0 && sa.size() == 3 && rb.size() == 3;
	for (size_t i = 0; ok && i < 3; ++i)
		ok = sa[i].wr_id == 61 + i && sa[i].status == IBV_WC_SUCCESS &&
		     sa[i].opcode == IBV_WC_SEND && rb[i].wr_id == 200 + i &&
		     rb[i].status == IBV_WC_SUCCESS && rb[i].opcode == IBV_WC_RECV;
	ok = ok && rb[0].byte_len == kGrh + 300 && rb[1].byte_len == kGrh + sizeof(text) &&
	     rb[2].byte_len == kGrh && (rb[1].flags & IBV_WC_WITH_IMM) && rb[1].imm == 0x5eed &&
	     !(rb[0].flags & IBV_WC_WITH_IMM) && std::memcmp(b.at(kRecv + kGrh), a.at(0x100), 300) == 0 &&
	     std::memcmp(b.at(kRecv + kSlot + kGrh), text, sizeof(text)) == 0;
	ktap.result(ok, "UD: wr_send (SGE), wr_send_imm (inline), wr_send (no data) with "
			"wr_set_ud_addr before or after the data: bytes, imm and lengths",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));

	// Datagrams B drops (rx_ud_qkey, rx_ud_no_wqe; the mroce_drop
	// tracepoint, test_trace.sh): a wrong Q_Key, then no receive posted.
	// Both complete at A, as UD sends do; nothing completes at B.
	ibv_wr_start(qx);
	qx->wr_id = 66;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_ud_addr(qx, ah.get(), ub->qp_num, kQkey + 1);
	ibv_wr_set_sge(qx, a.mr->lkey, a.addr(0x100), 16);
	qx->wr_id = 67;
	ibv_wr_send(qx);
	ibv_wr_set_ud_addr(qx, ah.get(), ub->qp_num, kQkey);
	ibv_wr_set_sge(qx, a.mr->lkey, a.addr(0x100), 16);
	rc = ibv_wr_complete(qx);
	sa = poll_ex(a.cqx.get(), 2, kWait);
	rb = poll(b.cq.get(), 1, std::chrono::milliseconds(300));
	ktap.result(rc == 0 && sa.size() == 2 && sa[0].status == IBV_WC_SUCCESS &&
		    sa[1].status == IBV_WC_SUCCESS && rb.empty(),
		    "UD: a wrong Q_Key and a datagram with no receive posted are dropped at B",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa) + "; B: " + describe(rb));

	ibv_wr_start(qx);
	qx->wr_id = 64;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, a.mr->lkey, a.addr(0x100), 16);		// no address
	rc = ibv_wr_complete(qx);
	sa = poll_ex(a.cqx.get(), 1, std::chrono::milliseconds(300));
	ktap.result(rc == EINVAL && sa.empty(), "UD: a WR without wr_set_ud_addr is EINVAL, nothing sent",
		    "rc " + std::to_string(rc) + "; A: " + describe(sa));
	ibv_wr_start(qx);
	qx->wr_id = 65;
	ibv_wr_send(qx);
	ibv_wr_set_ud_addr(qx, nullptr, ub->qp_num, kQkey);
	rc = ibv_wr_complete(qx);
	ktap.result(rc == EINVAL, "UD: wr_set_ud_addr with no AH is EINVAL", errstr(rc));

	// The receive queue: more SGEs than granted is EINVAL; once full, ENOMEM.
	{
		ibv_sge sges[2] = {{b.addr(0x8000), 64, b.mr->lkey}, {b.addr(0x8040), 64, b.mr->lkey}};
		ibv_recv_wr rw{};
		rw.sg_list = sges;
		rw.num_sge = 2;	// max_recv_sge 1
		ibv_recv_wr *rbad = nullptr;
		int r1 = ibv_post_recv(ub.get(), &rw, &rbad);
		rw.num_sge = 1;
		int r2 = 0;
		uint32_t posted = 0;
		while (posted < 4 * kDepth && (r2 = ibv_post_recv(ub.get(), &rw, &rbad)) == 0)
			++posted;
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};
		ibv_query_qp(ub.get(), &qa, IBV_QP_CAP, &qi);
		ktap.result(r1 == EINVAL && r2 == ENOMEM && posted == qi.cap.max_recv_wr,
			    "UD: a receive with too many SGEs is EINVAL; a full RQ is ENOMEM",
			    "too many SGEs " + errstr(r1) + ", after " + std::to_string(posted) +
				    " of " + std::to_string(qi.cap.max_recv_wr) + ": " + errstr(r2));
	}
	// In ERR: a send is accepted and completes with WR_FLUSH_ERR.
	{
		ibv_qp_attr m{};
		m.qp_state = IBV_QPS_ERR;
		int rc = ibv_modify_qp(ua.get(), &m, IBV_QP_STATE);
		drain(a.any_cq());
		ibv_wr_start(qx);
		qx->wr_id = 66;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qx);
		ibv_wr_set_ud_addr(qx, ah.get(), ub->qp_num, kQkey);
		ibv_wr_set_sge(qx, a.mr->lkey, a.addr(0x100), 16);
		int rc2 = rc ? rc : ibv_wr_complete(qx);
		auto fl = poll_ex(a.cqx.get(), 1, kWait);
		ktap.result(rc2 == 0 && fl.size() == 1 && fl[0].wr_id == 66 &&
				    fl[0].status == IBV_WC_WR_FLUSH_ERR,
			    "UD in ERR: a send through ibv_wr_* completes with WR_FLUSH_ERR",
			    "rc " + std::to_string(rc2) + "; A: " + describe(fl));
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr, "usage: %s DEV_A GID_INDEX_A DEV_B GID_INDEX_B\n", argv[0]);
		return 2;
	}
	Side a, b;
	if (!setup(a, argv[1], std::atoi(argv[2]), true) ||
	    !setup(b, argv[3], std::atoi(argv[4]), false))
		return ktap.finish();
	ktap.result(a.qpx != nullptr, "ibv_create_qp_ex with every send op, ibv_qp_to_qp_ex");
	ktap.result(ibv_qp_to_qp_ex(b.qp.get()) == nullptr,
		    "ibv_qp_to_qp_ex is NULL for an ibv_create_qp QP");
	test_create_errors(a);
	for (auto *t : {test_send, test_rdma, test_write_imm, test_read, test_atomics,
			test_batches})
		if (fresh(a, b))
			t(a, b);
	test_ud(a, b);
	return ktap.finish();
}
