// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// verbs_objects - create, use and destroy every verbs object mroce supports
// at this stage through unmodified libibverbs, walk the QP state machine and
// check that invalid requests fail with the errno verbs specifies.
//
// Usage: mroce_verbs_objects [--hold READY_FILE] IBDEV GID_INDEX
//
// Output is KTAP.  Exit status 0 when every case passed.
//
// --hold: create a set of live objects, create READY_FILE, then wait for
// SIGTERM/SIGINT.  Used by the unload-under-use selftest: the device is
// removed underneath the process, which must then see errors (not crashes)
// and still be able to release everything.

#include <infiniband/verbs.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "verbs_test.hpp"

namespace {

// ---- RAII owners for verbs objects (the rest are verbs_test.hpp's) ---------

using namespace mroce_test;

struct AhFree { void operator()(ibv_ah *a) const { ibv_destroy_ah(a); } };
struct ChanFree { void operator()(ibv_comp_channel *c) const { ibv_destroy_comp_channel(c); } };

using Ah = std::unique_ptr<ibv_ah, AhFree>;
using Channel = std::unique_ptr<ibv_comp_channel, ChanFree>;

// Anonymous memory mapping owned for the life of the object.
class Mapping {
public:
	explicit Mapping(size_t len)
		: len_(len), addr_(mmap(nullptr, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {}
	~Mapping() { if (addr_ != MAP_FAILED) munmap(addr_, len_); }
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;
	bool ok() const { return addr_ != MAP_FAILED; }
	void *get() const { return addr_; }
	size_t size() const { return len_; }
private:
	size_t len_;
	void *addr_;
};

// ---- KTAP reporting (verbs_test.hpp) --------------------------------------

Ktap ktap;

// Record "call must succeed": rc is 0 on success or an errno value.
bool expect_ok(const std::string &name, int rc)
{
	ktap.result(rc == 0, name, rc ? "failed: " + errstr(rc) : "");
	return rc == 0;
}

// Record "call must fail with errno want".
void expect_err(const std::string &name, int rc, int want)
{
	if (rc == want)
		ktap.result(true, name);
	else if (rc == 0)
		ktap.result(false, name, "succeeded, expected " + errstr(want));
	else
		ktap.result(false, name, "got " + errstr(rc) + ", expected " + errstr(want));
}

// libibverbs creators return NULL and set errno.
template <typename T> int creat_rc(const T &p) { return p ? 0 : (errno ? errno : EIO); }

int modify(ibv_qp *qp, ibv_qp_attr attr, int mask) { return ibv_modify_qp(qp, &attr, mask); }

ibv_qp_init_attr rc_init(ibv_cq *cq, uint32_t wr = 16, uint32_t sge = 2)
{
	return rc_qp_init_attr(cq, wr, wr, sge);
}

// The QP state machine walk: no atomics, PSNs of its own.
RcConnect rc_walk()
{
	RcConnect c;
	c.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	c.rq_psn = 0x1234;
	c.sq_psn = 0x4321;
	return c;
}

ibv_qp_attr init_attr() { return rc_init_attr(rc_walk()); }

ibv_qp_attr rtr_attr(uint32_t dqpn, const ibv_gid &dgid, int gid_index)
{
	return rc_rtr_attr(gid_index, dgid, dqpn, rc_walk());
}

ibv_qp_attr rts_attr() { return rc_rts_attr(rc_walk()); }

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return static_cast<ibv_qp_state>(-1);
	return a.qp_state;
}

// ---- test groups ------------------------------------------------------------

void test_device(ibv_context *ctx, ibv_device_attr &dev, int gid_index, ibv_gid &gid)
{
	expect_ok("query_device", ibv_query_device(ctx, &dev));
	ktap.result(dev.max_qp > 0 && dev.max_cqe > 0 && dev.max_qp_wr > 0 && dev.max_sge > 0 &&
			    dev.max_mr_size > 0 && dev.phys_port_cnt == 1,
		    "query_device limits are sane");
	ibv_port_attr port{};
	if (expect_ok("query_port", ibv_query_port(ctx, 1, &port))) {
		ktap.result(port.link_layer == IBV_LINK_LAYER_ETHERNET, "port link layer is Ethernet");
		ktap.result(port.state == IBV_PORT_ACTIVE, "port is active",
			    "state " + std::to_string(port.state));
		ktap.result(port.active_mtu >= IBV_MTU_256 && port.active_mtu <= port.max_mtu,
			    "port active_mtu within max_mtu");
		ktap.result(port.gid_tbl_len > 0 && port.pkey_tbl_len > 0, "port has GID and P_Key tables");
	}
	expect_err("query_port on port 2", ibv_query_port(ctx, 2, &port), EINVAL);
	expect_ok("query_gid", ibv_query_gid(ctx, 1, gid_index, &gid));
	static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	ktap.result(std::memcmp(gid.raw, v4_prefix, sizeof(v4_prefix)) == 0,
		    "GID is the IPv4-mapped address");
	uint16_t pkey = 0;
	if (expect_ok("query_pkey", ibv_query_pkey(ctx, 1, 0, &pkey)))
		ktap.result(pkey == 0xffff, "default P_Key is 0xffff");
}

void test_cq(ibv_context *ctx, const ibv_device_attr &dev)
{
	Channel ch(ibv_create_comp_channel(ctx));
	expect_ok("create_comp_channel", creat_rc(ch));
	Cq cq(ibv_create_cq(ctx, 64, nullptr, ch.get(), 0));
	if (!expect_ok("create_cq with channel", creat_rc(cq)))
		return;
	ktap.result(cq->cqe >= 64, "cq->cqe covers the requested depth");
	ibv_wc wc[4];
	ktap.result(ibv_poll_cq(cq.get(), 4, wc) == 0, "poll_cq on an empty CQ returns 0");
	expect_ok("req_notify_cq", ibv_req_notify_cq(cq.get(), 0));
	cq.reset();
	errno = 0;
	Cq big(ibv_create_cq(ctx, dev.max_cqe + 1, nullptr, nullptr, 0));
	expect_err("create_cq over max_cqe", creat_rc(big), EINVAL);
	errno = 0;
	Cq neg(ibv_create_cq(ctx, -1, nullptr, nullptr, 0));
	expect_err("create_cq with negative depth", creat_rc(neg), EINVAL);
}

void test_mr(ibv_pd *pd, const ibv_device_attr &dev)
{
	Mapping buf(1 << 20);
	if (!buf.ok()) {
		ktap.result(false, "mmap test buffer", errstr(errno));
		return;
	}
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
	{
		Mr mr(ibv_reg_mr(pd, buf.get(), buf.size(), all));
		if (expect_ok("reg_mr 1 MiB all access", creat_rc(mr))) {
			ktap.result(mr->lkey != 0 && mr->rkey != 0 && mr->length == buf.size() &&
					    mr->addr == buf.get(),
				    "reg_mr returns keys, address and length");
			Mr mr2(ibv_reg_mr(pd, static_cast<char *>(buf.get()) + 4096 + 17, 3000,
					  IBV_ACCESS_LOCAL_WRITE));
			if (expect_ok("reg_mr unaligned sub-range", creat_rc(mr2)))
				ktap.result(mr2->lkey != mr->lkey, "two MRs get distinct lkeys");
		}
	}
	errno = 0;
	Mr bad(ibv_reg_mr(pd, buf.get(), 4096, IBV_ACCESS_REMOTE_WRITE));
	expect_err("reg_mr REMOTE_WRITE without LOCAL_WRITE", creat_rc(bad), EINVAL);
	errno = 0;
	Mr bad2(ibv_reg_mr(pd, buf.get(), 4096, IBV_ACCESS_REMOTE_ATOMIC));
	expect_err("reg_mr REMOTE_ATOMIC without LOCAL_WRITE", creat_rc(bad2), EINVAL);

	// Memory that is not mapped: reserve, then unmap, a range.
	void *hole;
	{
		Mapping gap(1 << 16);
		hole = gap.get();
	}
	errno = 0;
	Mr unmapped(ibv_reg_mr(pd, hole, 1 << 16, IBV_ACCESS_LOCAL_WRITE));
	expect_err("reg_mr over unmapped memory", creat_rc(unmapped), EFAULT);
	if (dev.max_mr_size < UINT64_MAX / 2) {
		errno = 0;
		Mr huge(ibv_reg_mr(pd, buf.get(), dev.max_mr_size + 4096, IBV_ACCESS_LOCAL_WRITE));
		expect_err("reg_mr over max_mr_size", creat_rc(huge), EINVAL);
	}
}

void test_rc_qp(ibv_context *ctx, ibv_pd *pd, const ibv_device_attr &dev, const ibv_gid &gid,
		int gid_index)
{
	Cq cq(ibv_create_cq(ctx, 64, nullptr, nullptr, 0));
	if (!expect_ok("create_cq for QPs", creat_rc(cq)))
		return;
	ibv_qp_init_attr ia = rc_init(cq.get());
	Qp qp(ibv_create_qp(pd, &ia));
	if (!expect_ok("create RC QP", creat_rc(qp)))
		return;
	ktap.result(qp->qp_num > 1 && qp_state(qp.get()) == IBV_QPS_RESET, "new RC QP is in RESET");
	ktap.result(ia.cap.max_send_wr >= 16 && ia.cap.max_recv_wr >= 16 && ia.cap.max_send_sge >= 2,
		    "create_qp reports caps at least as requested");

	expect_err("RESET -> RTR is illegal", modify(qp.get(), rtr_attr(qp->qp_num, gid, gid_index), kRcRtrMask),
		   EINVAL);
	expect_err("RESET -> RTS is illegal", modify(qp.get(), rts_attr(), kRcRtsMask), EINVAL);
	expect_err("RESET -> INIT without PORT is illegal",
		   modify(qp.get(), init_attr(), kRcInitMask & ~IBV_QP_PORT), EINVAL);
	ibv_qp_attr badport = init_attr();
	badport.port_num = 2;
	expect_err("RESET -> INIT with port 2", modify(qp.get(), badport, kRcInitMask), EINVAL);
	ktap.result(qp_state(qp.get()) == IBV_QPS_RESET, "failed transitions leave the QP in RESET");

	if (!expect_ok("RESET -> INIT", modify(qp.get(), init_attr(), kRcInitMask)))
		return;
	expect_err("INIT -> RTS is illegal", modify(qp.get(), rts_attr(), kRcRtsMask), EINVAL);
	expect_err("INIT -> RTR without AV is illegal",
		   modify(qp.get(), rtr_attr(qp->qp_num, gid, gid_index), kRcRtrMask & ~IBV_QP_AV), EINVAL);
	ibv_qp_attr badgid = rtr_attr(qp->qp_num, gid, gid_index);
	badgid.ah_attr.grh.sgid_index = 255;
	expect_err("INIT -> RTR with an empty sgid_index", modify(qp.get(), badgid, kRcRtrMask), EINVAL);

	// Receive WQEs may be posted from INIT on.
	Mapping buf(8192);
	Mr mr(ibv_reg_mr(pd, buf.get(), buf.size(), IBV_ACCESS_LOCAL_WRITE));
	if (expect_ok("reg_mr for receive buffers", creat_rc(mr))) {
		ibv_sge sge{reinterpret_cast<uintptr_t>(buf.get()), 4096, mr->lkey};
		ibv_recv_wr wr{};
		ibv_recv_wr *bad = nullptr;
		wr.wr_id = 1;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		expect_ok("post_recv one WQE", ibv_post_recv(qp.get(), &wr, &bad));
		std::vector<ibv_sge> many(ia.cap.max_recv_sge + 1, sge);
		wr.sg_list = many.data();
		wr.num_sge = static_cast<int>(many.size());
		bad = nullptr;
		expect_err("post_recv with too many SGEs", ibv_post_recv(qp.get(), &wr, &bad), EINVAL);
		ktap.result(bad == &wr, "post_recv sets bad_wr to the rejected WR");
	}

	if (!expect_ok("INIT -> RTR", modify(qp.get(), rtr_attr(qp->qp_num, gid, gid_index), kRcRtrMask)))
		return;
	if (!expect_ok("RTR -> RTS", modify(qp.get(), rts_attr(), kRcRtsMask)))
		return;
	ibv_qp_attr a{};
	ibv_qp_init_attr qia{};
	int qrc = ibv_query_qp(qp.get(), &a, kRcInitMask | kRcRtrMask | kRcRtsMask, &qia);
	if (expect_ok("query_qp in RTS", qrc)) {
		ktap.result(a.qp_state == IBV_QPS_RTS, "query_qp: state RTS");
		ktap.result(a.dest_qp_num == qp->qp_num && a.rq_psn == 0x1234 && a.sq_psn == 0x4321,
			    "query_qp: dest QPN and PSNs as set");
		ktap.result(a.path_mtu == IBV_MTU_1024 && a.timeout == 14 && a.retry_cnt == 7 &&
				    a.rnr_retry == 7 && a.min_rnr_timer == 12,
			    "query_qp: MTU, timeout, retry counts as set");
		ktap.result(std::memcmp(a.ah_attr.grh.dgid.raw, gid.raw, 16) == 0 &&
				    a.ah_attr.grh.sgid_index == gid_index,
			    "query_qp: address vector as set");
		ktap.result(qia.cap.max_send_wr >= 16 && qia.qp_type == IBV_QPT_RC && qia.send_cq == cq.get(),
			    "query_qp: init attributes");
	}
	{
		ibv_qp_attr sq{};
		sq.qp_state = IBV_QPS_SQD;
		int rc = ibv_modify_qp(qp.get(), &sq, IBV_QP_STATE);
		ktap.result(rc == 0 || rc == EOPNOTSUPP, "RTS -> SQD is accepted or cleanly unsupported",
			    rc ? errstr(rc) : "");
	}
	ibv_qp_attr err{};
	err.qp_state = IBV_QPS_ERR;
	expect_ok("-> ERR", ibv_modify_qp(qp.get(), &err, IBV_QP_STATE));
	ibv_qp_attr rst{};
	rst.qp_state = IBV_QPS_RESET;
	expect_ok("ERR -> RESET", ibv_modify_qp(qp.get(), &rst, IBV_QP_STATE));
	expect_ok("RESET -> INIT again", modify(qp.get(), init_attr(), kRcInitMask));

	int busy = ibv_destroy_cq(cq.get());
	if (busy == 0)
		cq.release();
	expect_err("destroy_cq while a QP uses it", busy, EBUSY);
	expect_ok("destroy RC QP", ibv_destroy_qp(qp.release()));

	errno = 0;
	ibv_qp_init_attr big = rc_init(cq.get(), dev.max_qp_wr + 1);
	Qp q1(ibv_create_qp(pd, &big));
	expect_err("create_qp over max_qp_wr", creat_rc(q1), EINVAL);
	errno = 0;
	big = rc_init(cq.get(), 16, dev.max_sge + 1);
	Qp q2(ibv_create_qp(pd, &big));
	expect_err("create_qp over max_sge", creat_rc(q2), EINVAL);
	errno = 0;
	big = rc_init(cq.get());
	big.cap.max_inline_data = 1u << 20;
	Qp q3(ibv_create_qp(pd, &big));
	expect_err("create_qp with 1 MiB inline", creat_rc(q3), EINVAL);
	errno = 0;
	big = rc_init(cq.get());
	big.qp_type = IBV_QPT_XRC_SEND;
	Qp q4(ibv_create_qp(pd, &big));
	ktap.result(!q4 && (errno == EOPNOTSUPP || errno == EINVAL), "create_qp XRC is refused",
		    q4 ? "succeeded" : errstr(errno));
}

void test_ud_qp(ibv_context *ctx, ibv_pd *pd, const ibv_gid &gid, int gid_index)
{
	Cq cq(ibv_create_cq(ctx, 16, nullptr, nullptr, 0));
	if (!expect_ok("create_cq for UD", creat_rc(cq)))
		return;
	ibv_qp_init_attr ia = rc_init(cq.get(), 8, 1);
	ia.qp_type = IBV_QPT_UD;
	Qp qp(ibv_create_qp(pd, &ia));
	if (!expect_ok("create UD QP", creat_rc(qp)))
		return;
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = 0x11111111;
	expect_ok("UD RESET -> INIT",
		  ibv_modify_qp(qp.get(), &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
	a = {};
	a.qp_state = IBV_QPS_RTR;
	expect_ok("UD INIT -> RTR", ibv_modify_qp(qp.get(), &a, IBV_QP_STATE));
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	expect_ok("UD RTR -> RTS", ibv_modify_qp(qp.get(), &a, IBV_QP_STATE | IBV_QP_SQ_PSN));

	ibv_ah_attr ah{};
	ah.is_global = 1;
	ah.grh.dgid = gid;
	ah.grh.sgid_index = gid_index;
	ah.grh.hop_limit = 64;
	ah.port_num = 1;
	Ah good(ibv_create_ah(pd, &ah));
	expect_ok("create_ah", creat_rc(good));
	ah.port_num = 2;
	errno = 0;
	Ah bad(ibv_create_ah(pd, &ah));
	ktap.result(!bad, "create_ah on port 2 fails", bad ? "succeeded" : "");
}

void test_pd_busy(ibv_context *ctx)
{
	Pd pd(ibv_alloc_pd(ctx));
	if (!expect_ok("alloc second PD", creat_rc(pd)))
		return;
	Mapping buf(4096);
	Mr mr(ibv_reg_mr(pd.get(), buf.get(), buf.size(), IBV_ACCESS_LOCAL_WRITE));
	expect_ok("reg_mr on second PD", creat_rc(mr));
	int busy = ibv_dealloc_pd(pd.get());
	if (busy == 0)
		pd.release();
	expect_err("dealloc_pd with a live MR", busy, EBUSY);
	expect_ok("dereg_mr", ibv_dereg_mr(mr.release()));
	expect_ok("dealloc_pd", ibv_dealloc_pd(pd.release()));
}

volatile sig_atomic_t stop_flag;
void on_signal(int) { stop_flag = 1; }

int hold(ibv_context *ctx, int gid_index, const char *ready)
{
	ibv_gid gid{};
	expect_ok("hold: query_gid", ibv_query_gid(ctx, 1, gid_index, &gid));
	Pd pd(ibv_alloc_pd(ctx));
	Cq cq(pd ? ibv_create_cq(ctx, 32, nullptr, nullptr, 0) : nullptr);
	Mapping buf(1 << 16);
	Mr mr(pd ? ibv_reg_mr(pd.get(), buf.get(), buf.size(), IBV_ACCESS_LOCAL_WRITE) : nullptr);
	ibv_qp_init_attr ia = rc_init(cq.get());
	Qp qp(cq ? ibv_create_qp(pd.get(), &ia) : nullptr);
	if (!expect_ok("hold: objects created", pd && cq && mr && qp ? 0 : EIO))
		return ktap.finish();
	expect_ok("hold: QP to INIT", modify(qp.get(), init_attr(), kRcInitMask));
	std::ofstream(ready) << "ready\n";
	std::signal(SIGTERM, on_signal);
	std::signal(SIGINT, on_signal);
	while (!stop_flag)
		pause();
	// The device may be gone by now: every call must fail cleanly or work.
	ibv_port_attr port{};
	int rc = ibv_query_port(ctx, 1, &port);
	ktap.note("query_port after removal: " + (rc ? errstr(rc) : std::string("ok")));
	qp.reset();
	mr.reset();
	cq.reset();
	pd.reset();
	ktap.result(true, "hold: released every object after the device went away");
	return ktap.finish();
}

} // namespace

int main(int argc, char **argv)
{
	const char *ready = nullptr;
	int arg = 1;
	if (argc > 2 && std::strcmp(argv[1], "--hold") == 0) {
		ready = argv[2];
		arg = 3;
	}
	if (argc - arg != 2) {
		std::fprintf(stderr, "usage: %s [--hold READY_FILE] IBDEV GID_INDEX\n", argv[0]);
		return 2;
	}
	const char *name = argv[arg];
	const int gid_index = std::atoi(argv[arg + 1]);

	Context ctx = open_device(name);
	if (!expect_ok(std::string("open ") + name, creat_rc(ctx)))
		return ktap.finish();
	if (ready)
		return hold(ctx.get(), gid_index, ready);

	ibv_device_attr dev{};
	ibv_gid gid{};
	test_device(ctx.get(), dev, gid_index, gid);
	test_cq(ctx.get(), dev);
	Pd pd(ibv_alloc_pd(ctx.get()));
	if (expect_ok("alloc_pd", creat_rc(pd))) {
		test_mr(pd.get(), dev);
		test_rc_qp(ctx.get(), pd.get(), dev, gid, gid_index);
		test_ud_qp(ctx.get(), pd.get(), gid, gid_index);
	}
	test_pd_busy(ctx.get());
	return ktap.finish();
}
