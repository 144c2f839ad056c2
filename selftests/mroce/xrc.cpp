// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// xrc - XRC end to end through the mroce provider: XRC initiator QPs on
// device A, XRC target QPs and XRC SRQs in XRC domains on device B (one
// process, both devices).
//
//   objects    ibv_open_xrcd twice (two domains), XRC SRQs with their own
//              CQs, distinct nonzero ibv_get_srq_num numbers, a basic SRQ
//              has none;
//   refused    an XRC_SEND QP with a receive queue, an XRC_RECV QP with a
//              send queue or without a domain: EINVAL; ibv_post_recv on an
//              initiator, ibv_post_send on a target: EINVAL; WRITE_WITH_IMM
//              on an initiator: EOPNOTSUPP; SRQ number 0: EINVAL;
//   dispatch   two initiators to two targets of one domain, SENDs of 3000
//              bytes (3 packets) alternating between two XRC SRQs, through
//              ibv_post_send (qp_type.xrc.remote_srqn) on one QP and
//              ibv_wr_set_xrc_srqn on the other: every message completes
//              once on the CQ of the SRQ it named, with the target QP's
//              number, in a receive of that SRQ, every byte checked; per
//              target and SRQ in sending order;
//   rdma       WRITE, READ, FETCH_ADD and CMP_SWAP through a target into a
//              region of the PD of the SRQ the request names: bytes and
//              atomic results checked;
//   errors     a SEND naming an XRC SRQ of the other domain, or a number
//              that names no SRQ: IBV_WC_REM_INV_REQ_ERR at the initiator
//              and no receive taken from any SRQ; a WRITE naming an SRQ
//              whose PD does not own the region: IBV_WC_REM_ACCESS_ERR;
//   shared     a file-backed XRC domain opened in two contexts of device
//              B: a target QP created in the first, opened by number
//              (ibv_open_qp) in the second, the creator's handle destroyed;
//              connected and used through the opened handle, a SEND lands
//              in an XRC SRQ of the second context, bytes checked;
//   hostile    WQEs written straight into an initiator's SQ ring (found as
//              the new uverbs mapping), past the provider's checks: an SRQ
//              number above 24 bits, SRQ number 0, a WRITE_WITH_IMM: each
//              completes with IBV_WC_LOC_QP_OP_ERR, nothing reaches the
//              target's SRQs.
//
// Usage: mroce_xrc DEV_A GID_INDEX_A DEV_B GID_INDEX_B
// Output is KTAP.  Exit status 0 when every case passed.

#include <infiniband/verbs.h>

#include <rdma/mroce-abi.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "verbs_test.hpp"

// rdma-core's private command helper (IBVERBS_PRIVATE_34): a POST_SEND
// without work requests is the mroce SQ doorbell.
extern "C" int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
				 struct ibv_send_wr **bad_wr);

namespace {

using namespace mroce_test;

Ktap ktap;

constexpr size_t kMsg = 3000;		// 3 packets at MTU 1024
constexpr int kPerSrq = 16;		// receives posted on each SRQ
constexpr int kPerQp = 16;		// SENDs from each initiator

struct XrcdClose { void operator()(ibv_xrcd *x) const { ibv_close_xrcd(x); } };
struct SrqFree { void operator()(ibv_srq *s) const { ibv_destroy_srq(s); } };
using Xrcd = std::unique_ptr<ibv_xrcd, XrcdClose>;
using Srq = std::unique_ptr<ibv_srq, SrqFree>;

struct Dev {
	Context ctx;
	Pd pd, pd2;
	PageBuf buf{1 << 20};
	Mr mr, mr2;		// mr in pd, mr2 (the second half) in pd2
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
	d.pd2.reset(ibv_alloc_pd(d.ctx.get()));
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (d.pd && d.pd2 && d.buf.p) {
		d.mr.reset(ibv_reg_mr(d.pd.get(), d.buf.p, d.buf.len / 2, acc));
		d.mr2.reset(ibv_reg_mr(d.pd2.get(), d.buf.p + d.buf.len / 2, d.buf.len / 2, acc));
	}
	if (!d.mr || !d.mr2)
		return ktap.result(false, std::string("PDs, MRs on ") + name, errstr(errno));
	if (ibv_query_gid(d.ctx.get(), 1, gid_index, &d.gid))
		return ktap.result(false, std::string("ibv_query_gid on ") + name, errstr(errno));
	return true;
}

Xrcd open_xrcd(Dev &d)
{
	ibv_xrcd_init_attr a{};
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = -1;		// a domain of its own, not shared through a file
	a.oflags = O_CREAT;
	return Xrcd(ibv_open_xrcd(d.ctx.get(), &a));
}

Srq make_xsrq(ibv_context *ctx, ibv_xrcd *x, ibv_cq *cq, ibv_pd *pd)
{
	ibv_srq_init_attr_ex a{};
	a.attr.max_wr = 64;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
		      IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_XRC;
	a.xrcd = x;
	a.cq = cq;
	a.pd = pd;
	return Srq(ibv_create_srq_ex(ctx, &a));
}

Qp make_ini(Dev &d, ibv_cq *cq, bool ex, uint32_t recv_wr = 0)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_XRC_SEND;
	a.send_cq = cq;
	a.cap.max_send_wr = 64;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_wr = recv_wr;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = d.pd.get();
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
				   IBV_QP_EX_WITH_RDMA_READ;
	}
	return Qp(ibv_create_qp_ex(d.ctx.get(), &a));
}

Qp make_tgt(Dev &d, ibv_xrcd *x, uint32_t send_wr = 0)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_XRC_RECV;
	a.cap.max_send_wr = send_wr;
	if (x) {
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = x;
	}
	return Qp(ibv_create_qp_ex(d.ctx.get(), &a));
}

ibv_ah_attr ah_to(const Dev &s, const Dev &peer)
{
	ibv_ah_attr ah{};
	ah.is_global = 1;
	ah.grh.dgid = peer.gid;
	ah.grh.sgid_index = uint8_t(s.gid_index);
	ah.grh.hop_limit = 64;
	ah.port_num = 1;
	return ah;
}

// The attribute masks of ibv_xsrq_pingpong: an initiator takes no
// responder attributes, a target no requester ones.
int connect_ini(Dev &s, ibv_qp *qp, const Dev &peer, uint32_t dqpn)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS))
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.ah_attr = ah_to(s, peer);
	if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int connect_tgt(Dev &s, ibv_qp *qp, const Dev &peer, uint32_t dqpn)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS))
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr = ah_to(s, peer);
	if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN);
}

// Up to n completions of cq within ms milliseconds.
std::vector<ibv_wc> poll(ibv_cq *cq, size_t n, int ms = 5000)
{
	std::vector<ibv_wc> out;
	auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
	while (out.size() < n && std::chrono::steady_clock::now() < end) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, 16, wc);
		if (k < 0)
			break;
		out.insert(out.end(), wc, wc + k);
		if (!k)
			std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	return out;
}

uint8_t pattern(uint32_t tag, size_t i) { return uint8_t(tag * 37 + i * 11 + 3); }

// B's receive buffers: SRQ s, receive k at offset (s * kPerSrq + k) * 4 KiB.
constexpr size_t kRecvSlot = 4096;

int post_recvs(Dev &b, ibv_srq *srq, int s)
{
	for (int k = 0; k < kPerSrq; ++k) {
		size_t off = size_t(s * kPerSrq + k) * kRecvSlot;
		ibv_sge sge{b.buf.addr(off), uint32_t(kRecvSlot), b.mr->lkey};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = uint64_t(s) << 32 | uint64_t(k);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (int rc = ibv_post_srq_recv(srq, &wr, &bad))
			return rc;
	}
	return 0;
}

struct Env {
	Dev &a, &b;
	Xrcd x1, x2;
	Cq cqa, cq1, cq2;
	Srq s1, s2, s3, basic;
	uint32_t n1 = 0, n2 = 0, n3 = 0;
};

void test_objects(Env &e)
{
	e.x1 = open_xrcd(e.b);
	e.x2 = open_xrcd(e.b);
	ktap.result(e.x1 && e.x2 && e.x1.get() != e.x2.get(), "objects: two XRC domains",
		    errstr(errno));
	e.cqa.reset(ibv_create_cq(e.a.ctx.get(), 256, nullptr, nullptr, 0));
	e.cq1.reset(ibv_create_cq(e.b.ctx.get(), 256, nullptr, nullptr, 0));
	e.cq2.reset(ibv_create_cq(e.b.ctx.get(), 256, nullptr, nullptr, 0));
	if (!e.x1 || !e.x2 || !e.cqa || !e.cq1 || !e.cq2)
		return;
	e.s1 = make_xsrq(e.b.ctx.get(), e.x1.get(), e.cq1.get(), e.b.pd.get());
	e.s2 = make_xsrq(e.b.ctx.get(), e.x1.get(), e.cq2.get(), e.b.pd.get());
	e.s3 = make_xsrq(e.b.ctx.get(), e.x2.get(), e.cq1.get(), e.b.pd.get());
	ktap.result(e.s1 && e.s2 && e.s3, "objects: three XRC SRQs", errstr(errno));
	if (!e.s1 || !e.s2 || !e.s3)
		return;
	int r1 = ibv_get_srq_num(e.s1.get(), &e.n1), r2 = ibv_get_srq_num(e.s2.get(), &e.n2),
	    r3 = ibv_get_srq_num(e.s3.get(), &e.n3);
	ktap.result(!r1 && !r2 && !r3 && e.n1 && e.n2 && e.n3 && e.n1 != e.n2 &&
			    e.n2 != e.n3 && e.n1 != e.n3 && e.n1 <= 0xffffff,
		    "objects: distinct nonzero SRQ numbers",
		    std::to_string(e.n1) + " " + std::to_string(e.n2) + " " + std::to_string(e.n3));
	ibv_srq_init_attr ba{};
	ba.attr.max_wr = 4;
	ba.attr.max_sge = 1;
	e.basic.reset(ibv_create_srq(e.b.pd.get(), &ba));
	uint32_t n = 0;
	ktap.result(e.basic && ibv_get_srq_num(e.basic.get(), &n) != 0,
		    "objects: a basic SRQ has no number");
	// A domain in use cannot be closed (ib_core counts its SRQs).
	ktap.result(ibv_close_xrcd(e.x2.get()) != 0, "objects: closing a domain in use fails");
}

void test_refused(Env &e)
{
	errno = 0;
	Qp q = make_ini(e.a, e.cqa.get(), false, 4);
	ktap.result(!q && errno == EINVAL, "refused: XRC_SEND with a receive queue: EINVAL",
		    errstr(errno));
	errno = 0;
	q = make_tgt(e.b, e.x1.get(), 4);
	ktap.result(!q && errno == EINVAL, "refused: XRC_RECV with a send queue: EINVAL",
		    errstr(errno));
	errno = 0;
	q = make_tgt(e.b, nullptr);
	ktap.result(!q && errno == EINVAL, "refused: XRC_RECV without a domain: EINVAL",
		    errstr(errno));
	Qp ini = make_ini(e.a, e.cqa.get(), false), tgt = make_tgt(e.b, e.x1.get());
	if (!ini || !tgt || connect_ini(e.a, ini.get(), e.b, tgt->qp_num) ||
	    connect_tgt(e.b, tgt.get(), e.a, ini->qp_num)) {
		ktap.result(false, "refused: an XRC pair", errstr(errno));
		return;
	}
	ibv_sge sge{e.a.buf.addr(), 8, e.a.mr->lkey};
	ibv_recv_wr rwr{}, *rbad;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	ktap.result(ibv_post_recv(ini.get(), &rwr, &rbad) == EINVAL,
		    "refused: ibv_post_recv on an initiator: EINVAL");
	ibv_send_wr wr{}, *bad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.qp_type.xrc.remote_srqn = e.n1;
	ktap.result(ibv_post_send(tgt.get(), &wr, &bad) == EINVAL,
		    "refused: ibv_post_send on a target: EINVAL");
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.rdma.remote_addr = e.b.buf.addr();
	wr.wr.rdma.rkey = e.b.mr->rkey;
	ktap.result(ibv_post_send(ini.get(), &wr, &bad) == EOPNOTSUPP,
		    "refused: WRITE_WITH_IMM on an initiator: EOPNOTSUPP");
	wr.opcode = IBV_WR_SEND;
	wr.qp_type.xrc.remote_srqn = 0;
	ktap.result(ibv_post_send(ini.get(), &wr, &bad) == EINVAL,
		    "refused: SRQ number 0: EINVAL");
	ktap.result(poll(e.cqa.get(), 1, 300).empty(), "refused: nothing was sent");
}

struct Hdr {
	uint32_t tag;		// sender qp index << 16 | sequence
	uint32_t srq;		// SRQ index (1, 2) the SEND named
};

void test_dispatch(Env &e)
{
	if (post_recvs(e.b, e.s1.get(), 1) || post_recvs(e.b, e.s2.get(), 2)) {
		ktap.result(false, "dispatch: receives posted", errstr(errno));
		return;
	}
	Qp ini[2] = {make_ini(e.a, e.cqa.get(), false), make_ini(e.a, e.cqa.get(), true)};
	Qp tgt[2] = {make_tgt(e.b, e.x1.get()), make_tgt(e.b, e.x1.get())};
	for (int i = 0; i < 2; ++i)
		if (!ini[i] || !tgt[i] || connect_ini(e.a, ini[i].get(), e.b, tgt[i]->qp_num) ||
		    connect_tgt(e.b, tgt[i].get(), e.a, ini[i]->qp_num)) {
			ktap.result(false, "dispatch: two XRC pairs", errstr(errno));
			return;
		}
	ktap.result(tgt[0]->qp_num != tgt[1]->qp_num, "dispatch: two XRC pairs");
	// SENDs: qp i, sequence k names SRQ 1 for even k, 2 for odd k.
	int posted = 0;
	for (int k = 0; k < kPerQp; ++k) {
		for (int i = 0; i < 2; ++i) {
			size_t off = size_t(i * kPerQp + k) * kRecvSlot;
			uint8_t *p = e.a.buf.p + off;
			Hdr h{uint32_t(i) << 16 | uint32_t(k), uint32_t(k % 2 ? 2 : 1)};
			for (size_t j = 0; j < kMsg; ++j)
				p[j] = pattern(h.tag, j);
			std::memcpy(p, &h, sizeof(h));
			uint32_t srqn = k % 2 ? e.n2 : e.n1;
			int rc;
			if (i == 0) {
				ibv_sge sge{e.a.buf.addr(off), uint32_t(kMsg), e.a.mr->lkey};
				ibv_send_wr wr{}, *bad;
				wr.wr_id = h.tag;
				wr.sg_list = &sge;
				wr.num_sge = 1;
				wr.opcode = IBV_WR_SEND;
				wr.send_flags = IBV_SEND_SIGNALED;
				wr.qp_type.xrc.remote_srqn = srqn;
				rc = ibv_post_send(ini[0].get(), &wr, &bad);
			} else {
				ibv_qp_ex *qx = ibv_qp_to_qp_ex(ini[1].get());
				ibv_wr_start(qx);
				qx->wr_id = h.tag;
				qx->wr_flags = IBV_SEND_SIGNALED;
				ibv_wr_send(qx);
				ibv_wr_set_xrc_srqn(qx, srqn);
				ibv_wr_set_sge(qx, e.a.mr->lkey, e.a.buf.addr(off), uint32_t(kMsg));
				rc = ibv_wr_complete(qx);
			}
			if (rc) {
				ktap.result(false, "dispatch: post", errstr(rc));
				return;
			}
			++posted;
		}
	}
	auto sc = poll(e.cqa.get(), size_t(posted), 20000);
	bool ok = sc.size() == size_t(posted);
	for (auto &w : sc)
		ok &= w.status == IBV_WC_SUCCESS && w.opcode == IBV_WC_SEND;
	ktap.result(ok, "dispatch: " + std::to_string(posted) + " SENDs completed",
		    std::to_string(sc.size()) + " completions");
	ibv_cq *cqs[2] = {e.cq1.get(), e.cq2.get()};
	std::map<uint32_t, int> seen;	// tag -> times
	bool bytes = true, srq_ok = true, order = true, qpn_ok = true, status = true;
	for (int s = 1; s <= 2; ++s) {
		auto rc = poll(cqs[s - 1], kPerQp, 10000);
		ktap.result(rc.size() == size_t(kPerQp),
			    "dispatch: SRQ " + std::to_string(s) + " CQ has " +
				    std::to_string(kPerQp) + " receives",
			    std::to_string(rc.size()));
		int next[2] = {s == 1 ? 0 : 1, s == 1 ? 0 : 1};	// expected k per qp
		for (auto &w : rc) {
			status &= w.status == IBV_WC_SUCCESS && w.opcode == IBV_WC_RECV &&
				  w.byte_len == kMsg;
			int ws = int(w.wr_id >> 32), wk = int(w.wr_id & 0xffffffff);
			srq_ok &= ws == s && wk < kPerSrq;
			if (ws != s || wk >= kPerSrq)
				continue;
			const uint8_t *p = e.b.buf.p + size_t(s * kPerSrq + wk) * kRecvSlot;
			Hdr h;
			std::memcpy(&h, p, sizeof(h));
			srq_ok &= h.srq == uint32_t(s);
			int qi = int(h.tag >> 16), k = int(h.tag & 0xffff);
			if (qi > 1 || k >= kPerQp) {
				bytes = false;
				continue;
			}
			qpn_ok &= w.qp_num == tgt[qi]->qp_num;
			order &= k == next[qi];
			next[qi] = k + 2;
			++seen[h.tag];
			for (size_t j = sizeof(h); j < kMsg; ++j)
				bytes &= p[j] == pattern(h.tag, j);
		}
	}
	bool once = seen.size() == size_t(posted);
	for (auto &kv : seen)
		once &= kv.second == 1;
	ktap.result(status, "dispatch: receive completions successful, 3000 bytes");
	ktap.result(srq_ok, "dispatch: each SEND landed in a receive of the SRQ it named");
	ktap.result(qpn_ok, "dispatch: completions carry the target QP's number");
	ktap.result(once, "dispatch: every SEND received exactly once",
		    std::to_string(seen.size()) + " distinct");
	ktap.result(order, "dispatch: per target and SRQ in sending order");
	ktap.result(bytes, "dispatch: every byte checked");
}

void test_rdma(Env &e)
{
	Qp ini = make_ini(e.a, e.cqa.get(), false), tgt = make_tgt(e.b, e.x1.get());
	if (!ini || !tgt || connect_ini(e.a, ini.get(), e.b, tgt->qp_num) ||
	    connect_tgt(e.b, tgt.get(), e.a, ini->qp_num)) {
		ktap.result(false, "rdma: an XRC pair", errstr(errno));
		return;
	}
	const size_t src = 256 * 1024, dst = 300 * 1024, len = 5000;
	for (size_t j = 0; j < len; ++j)
		e.a.buf.p[src + j] = uint8_t(j * 13 + 5);
	std::memset(e.b.buf.p + dst, 0, len);
	uint64_t *ctr = reinterpret_cast<uint64_t *>(e.b.buf.p + dst + 8192);
	*ctr = 1000;
	auto post = [&](ibv_wr_opcode op, size_t loff, uint32_t l, uint64_t raddr, uint64_t add,
			uint64_t swap) {
		ibv_sge sge{e.a.buf.addr(loff), l, e.a.mr->lkey};
		ibv_send_wr wr{}, *bad;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.qp_type.xrc.remote_srqn = e.n1;	// its PD owns e.b.mr
		if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
			wr.wr.atomic.remote_addr = raddr;
			wr.wr.atomic.rkey = e.b.mr->rkey;
			wr.wr.atomic.compare_add = add;
			wr.wr.atomic.swap = swap;
		} else {
			wr.wr.rdma.remote_addr = raddr;
			wr.wr.rdma.rkey = e.b.mr->rkey;
		}
		return ibv_post_send(ini.get(), &wr, &bad);
	};
	int rc = post(IBV_WR_RDMA_WRITE, src, len, e.b.buf.addr(dst), 0, 0);
	rc = rc ?: post(IBV_WR_RDMA_READ, 400 * 1024, len, e.b.buf.addr(dst), 0, 0);
	rc = rc ?: post(IBV_WR_ATOMIC_FETCH_AND_ADD, 410 * 1024, 8, e.b.buf.addr(dst + 8192), 7,
			0);
	rc = rc ?: post(IBV_WR_ATOMIC_CMP_AND_SWP, 411 * 1024, 8, e.b.buf.addr(dst + 8192), 1007,
			42);
	auto wc = poll(e.cqa.get(), 4, 10000);
	bool ok = !rc && wc.size() == 4;
	for (auto &w : wc)
		ok &= w.status == IBV_WC_SUCCESS;
	ktap.result(ok, "rdma: WRITE, READ, FETCH_ADD, CMP_SWAP through a target complete",
		    rc ? errstr(rc) : std::to_string(wc.size()) + " completions");
	ktap.result(std::memcmp(e.b.buf.p + dst, e.a.buf.p + src, len) == 0,
		    "rdma: WRITE bytes at the target");
	ktap.result(std::memcmp(e.a.buf.p + 400 * 1024, e.a.buf.p + src, len) == 0,
		    "rdma: READ bytes back");
	uint64_t fa, cs;
	std::memcpy(&fa, e.a.buf.p + 410 * 1024, 8);
	std::memcpy(&cs, e.a.buf.p + 411 * 1024, 8);
	ktap.result(fa == 1000 && cs == 1007 && *ctr == 42,
		    "rdma: atomics: results 1000, 1007, memory 42",
		    std::to_string(fa) + " " + std::to_string(cs) + " " + std::to_string(*ctr));
}

// One SEND (or WRITE) naming srqn on a fresh pair: the initiator's status.
ibv_wc_status one_error(Env &e, uint32_t srqn, bool write)
{
	Qp ini = make_ini(e.a, e.cqa.get(), false), tgt = make_tgt(e.b, e.x1.get());
	if (!ini || !tgt || connect_ini(e.a, ini.get(), e.b, tgt->qp_num) ||
	    connect_tgt(e.b, tgt.get(), e.a, ini->qp_num))
		return IBV_WC_GENERAL_ERR;
	ibv_sge sge{e.a.buf.addr(), 64, e.a.mr->lkey};
	ibv_send_wr wr{}, *bad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = srqn;
	wr.wr.rdma.remote_addr = e.b.buf.addr(e.b.buf.len / 2);
	wr.wr.rdma.rkey = e.b.mr2->rkey;	// a region of pd2
	if (ibv_post_send(ini.get(), &wr, &bad))
		return IBV_WC_GENERAL_ERR;
	auto wc = poll(e.cqa.get(), 1, 10000);
	return wc.size() == 1 ? wc[0].status : IBV_WC_GENERAL_ERR;
}

void test_errors(Env &e)
{
	// Receives on every SRQ, so that only the domain check can refuse.
	if (post_recvs(e.b, e.s1.get(), 1) || post_recvs(e.b, e.s3.get(), 3)) {
		ktap.result(false, "errors: receives posted", errstr(errno));
		return;
	}
	ibv_wc_status st = one_error(e, e.n3, false);
	ktap.result(st == IBV_WC_REM_INV_REQ_ERR,
		    "errors: SEND naming an SRQ of another domain: REM_INV_REQ_ERR",
		    ibv_wc_status_str(st));
	uint32_t none = std::max({e.n1, e.n2, e.n3}) + 1000;
	st = one_error(e, none, false);
	ktap.result(st == IBV_WC_REM_INV_REQ_ERR,
		    "errors: SEND naming no SRQ: REM_INV_REQ_ERR", ibv_wc_status_str(st));
	st = one_error(e, e.n1, true);
	ktap.result(st == IBV_WC_REM_ACCESS_ERR,
		    "errors: WRITE into a region outside the named SRQ's PD: REM_ACCESS_ERR",
		    ibv_wc_status_str(st));
	// No receive was taken: every SRQ still holds its kPerSrq.
	ktap.result(poll(e.cq1.get(), 1, 300).empty() && poll(e.cq2.get(), 1, 300).empty(),
		    "errors: no receive completion on any SRQ's CQ");
	ibv_srq_attr sa{};
	// A SEND now to SRQ 1 still finds a receive (the refused ones took none).
	Qp ini = make_ini(e.a, e.cqa.get(), false), tgt = make_tgt(e.b, e.x1.get());
	bool ok = ini && tgt && !connect_ini(e.a, ini.get(), e.b, tgt->qp_num) &&
		  !connect_tgt(e.b, tgt.get(), e.a, ini->qp_num) &&
		  !ibv_query_srq(e.s1.get(), &sa);
	if (ok) {
		ibv_sge sge{e.a.buf.addr(), 64, e.a.mr->lkey};
		ibv_send_wr wr{}, *bad;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.qp_type.xrc.remote_srqn = e.n1;
		ok = !ibv_post_send(ini.get(), &wr, &bad);
		auto wc = poll(e.cqa.get(), 1, 10000);
		auto rc = poll(e.cq1.get(), 1, 10000);
		ok = ok && wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS && rc.size() == 1 &&
		     rc[0].status == IBV_WC_SUCCESS && (rc[0].wr_id >> 32) == 1 &&
		     (rc[0].wr_id & 0xffffffff) == 0 && rc[0].qp_num == tgt->qp_num;
	}
	ktap.result(ok, "errors: the next SEND to SRQ 1 takes its first receive");
}

void test_shared(Env &e, const char *bname)
{
	char path[] = "/tmp/mroce_xrc_XXXXXX";
	int fd = mkstemp(path);
	Context ctx2 = open_device(bname);
	if (fd < 0 || !ctx2) {
		ktap.result(false, "shared: a file and a second context", errstr(errno));
		return;
	}
	unlink(path);
	ibv_xrcd_init_attr xa{};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = fd;
	xa.oflags = O_CREAT;
	Xrcd x1(ibv_open_xrcd(e.b.ctx.get(), &xa)), x2(ibv_open_xrcd(ctx2.get(), &xa));
	Pd pd2(ibv_alloc_pd(ctx2.get()));
	PageBuf rbuf(4096);
	Mr mr2(pd2 && rbuf.p ? ibv_reg_mr(pd2.get(), rbuf.p, rbuf.len, IBV_ACCESS_LOCAL_WRITE)
			      : nullptr);
	Cq cq2(ibv_create_cq(ctx2.get(), 16, nullptr, nullptr, 0));
	if (!x1 || !x2 || !mr2 || !cq2) {
		ktap.result(false, "shared: one domain in two contexts", errstr(errno));
		close(fd);
		return;
	}
	Srq srq2 = make_xsrq(ctx2.get(), x2.get(), cq2.get(), pd2.get());
	uint32_t n2 = 0;
	ktap.result(srq2 && !ibv_get_srq_num(srq2.get(), &n2),
		    "shared: an XRC SRQ of the second context", errstr(errno));
	Qp tgt = make_tgt(e.b, x1.get());
	ibv_qp_open_attr oa{};
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = tgt ? tgt->qp_num : 0;
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.xrcd = x2.get();
	Qp opened(tgt ? ibv_open_qp(ctx2.get(), &oa) : nullptr);
	ktap.result(opened && opened->qp_num == tgt->qp_num,
		    "shared: ibv_open_qp of the target in a second context", errstr(errno));
	if (!srq2 || !opened) {
		close(fd);
		return;
	}
	uint32_t qpn = tgt->qp_num;
	tgt.reset();	// the opened handle keeps the QP
	ibv_sge rs{rbuf.addr(), 4096, mr2->lkey};
	ibv_recv_wr rwr{}, *rbad;
	rwr.wr_id = 99;
	rwr.sg_list = &rs;
	rwr.num_sge = 1;
	Qp ini = make_ini(e.a, e.cqa.get(), false);
	bool ok = !ibv_post_srq_recv(srq2.get(), &rwr, &rbad) && ini &&
		  !connect_ini(e.a, ini.get(), e.b, qpn) &&
		  !connect_tgt(e.b, opened.get(), e.a, ini->qp_num);
	ktap.result(ok, "shared: connected through the opened handle", errstr(errno));
	if (!ok) {
		close(fd);
		return;
	}
	uint8_t *p = e.a.buf.p + 500 * 1024;
	for (size_t j = 0; j < 2000; ++j)
		p[j] = pattern(4242, j);
	ibv_sge sge{e.a.buf.addr(500 * 1024), 2000, e.a.mr->lkey};
	ibv_send_wr wr{}, *bad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = n2;
	ok = !ibv_post_send(ini.get(), &wr, &bad);
	auto sc = poll(e.cqa.get(), 1, 10000);
	auto rc = poll(cq2.get(), 1, 10000);
	ok = ok && sc.size() == 1 && sc[0].status == IBV_WC_SUCCESS && rc.size() == 1 &&
	     rc[0].status == IBV_WC_SUCCESS && rc[0].wr_id == 99 && rc[0].byte_len == 2000 &&
	     rc[0].qp_num == qpn && std::memcmp(rbuf.p, p, 2000) == 0;
	ktap.result(ok, "shared: a SEND to the second context's SRQ through the opened target");
	opened.reset();
	ini.reset();
	srq2.reset();
	x2.reset();
	x1.reset();
	close(fd);
}

// One WQE written by hand into a fresh initiator's SQ ring: its status.
ibv_wc_status raw_wqe(Env &e, uint32_t opcode, uint32_t srqn)
{
	auto before = uverbs_maps();
	Qp ini = make_ini(e.a, e.cqa.get(), false), tgt = make_tgt(e.b, e.x1.get());
	if (!ini || !tgt || connect_ini(e.a, ini.get(), e.b, tgt->qp_num) ||
	    connect_tgt(e.b, tgt.get(), e.a, ini->qp_num))
		return IBV_WC_GENERAL_ERR;
	mroce_ring_ctl *sq = nullptr;
	for (uintptr_t m : uverbs_maps()) {
		auto *c = reinterpret_cast<mroce_ring_ctl *>(m);
		if (!before.count(m) && c->entry_size >= 128 && c->entry_size % 64 == 0)
			sq = c;
	}
	if (!sq)
		return IBV_WC_GENERAL_ERR;
	uint32_t prod = sq->producer;
	auto *w = reinterpret_cast<mroce_send_wqe *>(
		reinterpret_cast<uint8_t *>(sq) + MROCE_RING_CTL_SIZE +
		size_t(prod & (sq->num_entries - 1)) * sq->entry_size);
	std::memset(w, 0, sizeof(*w));
	w->wr_id = 77;
	w->opcode = opcode;
	w->send_flags = MROCE_SEND_SIGNALED;
	w->num_sge = 1;
	w->xrc_srqn = srqn;
	w->wr.rdma.remote_addr = e.b.buf.addr();
	w->wr.rdma.rkey = e.b.mr->rkey;
	auto *sge = reinterpret_cast<mroce_sge *>(w + 1);
	sge->addr = e.a.buf.addr();
	sge->length = 8;
	sge->lkey = e.a.mr->lkey;
	__atomic_store_n(&sq->producer, prod + 1, __ATOMIC_RELEASE);
	ibv_send_wr *bad = nullptr;
	if (ibv_cmd_post_send(ini.get(), nullptr, &bad))
		return IBV_WC_GENERAL_ERR;
	auto wc = poll(e.cqa.get(), 1, 10000);
	return wc.size() == 1 && wc[0].wr_id == 77 ? wc[0].status : IBV_WC_GENERAL_ERR;
}

void test_hostile(Env &e)
{
	ibv_wc_status st = raw_wqe(e, MROCE_WR_SEND, 0x1000000 | e.n1);
	ktap.result(st == IBV_WC_LOC_QP_OP_ERR,
		    "hostile: SRQ number above 24 bits in the WQE: LOC_QP_OP_ERR",
		    ibv_wc_status_str(st));
	st = raw_wqe(e, MROCE_WR_SEND, 0);
	ktap.result(st == IBV_WC_LOC_QP_OP_ERR, "hostile: SRQ number 0 in the WQE: LOC_QP_OP_ERR",
		    ibv_wc_status_str(st));
	st = raw_wqe(e, MROCE_WR_RDMA_WRITE_WITH_IMM, e.n1);
	ktap.result(st == IBV_WC_LOC_QP_OP_ERR,
		    "hostile: WRITE_WITH_IMM WQE on an initiator: LOC_QP_OP_ERR",
		    ibv_wc_status_str(st));
	ktap.result(poll(e.cq1.get(), 1, 300).empty() && poll(e.cq2.get(), 1, 300).empty(),
		    "hostile: no receive completion on any SRQ's CQ");
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr, "usage: %s DEV_A GID_INDEX_A DEV_B GID_INDEX_B\n", argv[0]);
		return 2;
	}
	Dev a, b;
	if (!open_dev(a, argv[1], std::atoi(argv[2])) || !open_dev(b, argv[3], std::atoi(argv[4])))
		return ktap.finish();
	Env e{a, b, {}, {}, {}, {}, {}, {}, {}, {}, {}, 0, 0, 0};
	test_objects(e);
	if (!e.s1 || !e.s2 || !e.s3)
		return ktap.finish();
	test_refused(e);
	test_dispatch(e);
	test_rdma(e);
	test_errors(e);
	test_shared(e, argv[3]);
	test_hostile(e);
	return ktap.finish();
}
