// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Unit tests of the extended verbs over rings in plain memory: the ibv_wr_*
// batch (same bytes as ibv_post_send for equivalent WRs, one producer store
// per batch, errors reported by wr_complete), the ibv_create_qp_ex and
// ibv_create_cq_ex attribute checks, and the ibv_cq_ex poll session.

#include "mroce_uprov.h"
#include "ring.hpp"
#include "test_ring.hpp"
#include "wqe.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <endian.h>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

using mroce_test::TestRing;

constexpr uint32_t kSlot = 256;

mroce_qp_limits rc_limits()
{
	return {IBV_QPT_RC, 4, 4, 128};
}

constexpr uint64_t kAllOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_INV |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;

struct SqxFree {
	void operator()(mroce_sqx *s) const { mroce_sqx_free(s); }
};
using Sqx = std::unique_ptr<mroce_sqx, SqxFree>;

struct CqxFree {
	void operator()(mroce_cqx *c) const { mroce_cqx_free(c); }
};
using Cqx = std::unique_ptr<mroce_cqx, CqxFree>;

// An SQ ring with its ibv_wr_* state.
struct TestSqx {
	explicit TestSqx(uint32_t n = 8, uint64_t ops = kAllOps, mroce_qp_limits l = rc_limits())
		: ring(n, kSlot), lim(l), sqx(mroce_sqx_new(&ring.u, &lim, ops))
	{
	}
	TestRing ring;
	mroce_qp_limits lim;
	Sqx sqx;
};

char g_a[] = "0123456789abcdef", g_b[] = "ghijklmnopqrstuvwxyz";
// A type 2 window and a region to bind it to (only type and lkey are read).
ibv_mw g_mw2 = [] { ibv_mw m{}; m.type = IBV_MW_TYPE_2; m.rkey = 0x4201; return m; }();
ibv_mr g_bind_mr = [] { ibv_mr m{}; m.lkey = 0x5302; return m; }();
const ibv_mw_bind_info g_bind_info{&g_bind_mr, 0x9000, 4096,
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE};

// One work request, as an ibv_send_wr and as the equivalent ibv_wr_* calls.
struct Equiv {
	const char *name;
	ibv_send_wr wr;			// sg_list filled from sges
	std::vector<ibv_sge> sges;
	std::function<void(mroce_sqx *, uint64_t, unsigned)> build;	// the WR builder
	enum { sge_one, sge_list, inline_one, inline_list, none } data;
};

ibv_send_wr wr_with(ibv_wr_opcode op, uint64_t id, unsigned flags)
{
	ibv_send_wr w{};
	w.opcode = op;
	w.wr_id = id;
	w.send_flags = flags;
	return w;
}

std::vector<Equiv> equivalents()
{
	std::vector<Equiv> v;
	const ibv_sge one{0x1000, 100, 0x11};
	const std::vector<ibv_sge> three{{0x1000, 100, 0x11}, {0x2000, 0, 0x12}, {0x3000, 7, 0x13}};
	const std::vector<ibv_sge> text{{uint64_t(uintptr_t(g_a)), 16, 0},
					{uint64_t(uintptr_t(g_b)), 20, 0}};
	const unsigned sig = IBV_SEND_SIGNALED;

	v.push_back({"send_sge", wr_with(IBV_WR_SEND, 1, sig), {one},
		     [](mroce_sqx *q, uint64_t id, unsigned f) { mroce_sqx_send(q, id, f); },
		     Equiv::sge_one});
	v.push_back({"send_no_data", wr_with(IBV_WR_SEND, 2, sig | IBV_SEND_SOLICITED), {},
		     [](mroce_sqx *q, uint64_t id, unsigned f) { mroce_sqx_send(q, id, f); },
		     Equiv::none});
	{
		auto w = wr_with(IBV_WR_SEND_WITH_IMM, 3, sig | IBV_SEND_INLINE);
		w.imm_data = htobe32(0xfeedbeef);
		v.push_back({"send_imm_inline_list", w, text,
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_send_imm(q, id, f, htobe32(0xfeedbeef));
			     },
			     Equiv::inline_list});
	}
	{
		auto w = wr_with(IBV_WR_SEND_WITH_INV, 4, 0);
		w.invalidate_rkey = 0x12345678;
		v.push_back({"send_inv_sge_list", w, three,
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_send_inv(q, id, f, 0x12345678);
			     },
			     Equiv::sge_list});
	}
	{
		auto w = wr_with(IBV_WR_RDMA_WRITE, 5, sig | IBV_SEND_FENCE);
		w.wr.rdma.remote_addr = 0xabc000;
		w.wr.rdma.rkey = 0x77;
		v.push_back({"write_sge_list", w, three,
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_rdma_write(q, id, f, 0x77, 0xabc000);
			     },
			     Equiv::sge_list});
	}
	{
		auto w = wr_with(IBV_WR_RDMA_WRITE, 6, IBV_SEND_INLINE);
		w.wr.rdma.remote_addr = 0xabc000;
		w.wr.rdma.rkey = 0x77;
		v.push_back({"write_inline_one", w, {text[0]},
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_rdma_write(q, id, f, 0x77, 0xabc000);
			     },
			     Equiv::inline_one});
	}
	{
		auto w = wr_with(IBV_WR_RDMA_WRITE_WITH_IMM, 7, sig);
		w.wr.rdma.remote_addr = 0x5000;
		w.wr.rdma.rkey = 0x88;
		w.imm_data = htobe32(42);
		v.push_back({"write_imm_sge", w, {one},
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_rdma_write_imm(q, id, f, 0x88, 0x5000, htobe32(42));
			     },
			     Equiv::sge_one});
	}
	{
		auto w = wr_with(IBV_WR_RDMA_READ, 8, sig);
		w.wr.rdma.remote_addr = 0x6000;
		w.wr.rdma.rkey = 0x99;
		v.push_back({"read_sge_list", w, three,
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_rdma_read(q, id, f, 0x99, 0x6000);
			     },
			     Equiv::sge_list});
	}
	{
		auto w = wr_with(IBV_WR_ATOMIC_CMP_AND_SWP, 9, sig);
		w.wr.atomic.remote_addr = 0x7000;
		w.wr.atomic.rkey = 0xaa;
		w.wr.atomic.compare_add = 0x1111222233334444;
		w.wr.atomic.swap = 0x5555666677778888;
		v.push_back({"cmp_swp", w, {{0x8000, 8, 0x21}},
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_atomic_cmp_swp(q, id, f, 0xaa, 0x7000,
							      0x1111222233334444,
							      0x5555666677778888);
			     },
			     Equiv::sge_one});
	}
	{
		auto w = wr_with(IBV_WR_ATOMIC_FETCH_AND_ADD, 10, sig);
		w.wr.atomic.remote_addr = 0x7008;
		w.wr.atomic.rkey = 0xbb;
		w.wr.atomic.compare_add = 5;
		v.push_back({"fetch_add", w, {{0x8000, 8, 0x21}},
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_atomic_fetch_add(q, id, f, 0xbb, 0x7008, 5);
			     },
			     Equiv::sge_list});
	}
	{
		auto w = wr_with(IBV_WR_LOCAL_INV, 11, sig | IBV_SEND_FENCE);
		w.invalidate_rkey = 0x4202;
		v.push_back({"local_inv", w, {},
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_local_inv(q, id, f, 0x4202);
			     },
			     Equiv::none});
	}
	{
		auto w = wr_with(IBV_WR_BIND_MW, 12, sig);
		w.bind_mw.mw = &g_mw2;
		w.bind_mw.rkey = 0x4202;
		w.bind_mw.bind_info = g_bind_info;
		v.push_back({"bind_mw", w, {},
			     [](mroce_sqx *q, uint64_t id, unsigned f) {
				     mroce_sqx_bind_mw(q, id, f, &g_mw2, 0x4202, &g_bind_info);
			     },
			     Equiv::none});
	}
	return v;
}

void set_data(mroce_sqx *q, const Equiv &e)
{
	switch (e.data) {
	case Equiv::sge_one:
		mroce_sqx_set_sge(q, e.sges[0].lkey, e.sges[0].addr, e.sges[0].length);
		break;
	case Equiv::sge_list:
		mroce_sqx_set_sge_list(q, e.sges.size(), e.sges.data());
		break;
	case Equiv::inline_one:
		mroce_sqx_set_inline_data(q, reinterpret_cast<void *>(e.sges[0].addr),
					  e.sges[0].length);
		break;
	case Equiv::inline_list: {
		std::vector<ibv_data_buf> bufs;
		for (const auto &s : e.sges)
			bufs.push_back({reinterpret_cast<void *>(s.addr), s.length});
		mroce_sqx_set_inline_data_list(q, bufs.size(), bufs.data());
		break;
	}
	case Equiv::none:
		break;
	}
}

// Every case, posted both ways into two rings: the slots are byte-identical.
TEST(WrApi, SameBytesAsPostSend)
{
	auto cases = equivalents();
	TestRing old_way(16, kSlot);
	TestSqx new_way(16);
	auto lim = rc_limits();

	std::vector<ibv_send_wr> wrs;
	for (auto &c : cases) {
		c.wr.sg_list = c.sges.empty() ? nullptr : c.sges.data();
		c.wr.num_sge = int(c.sges.size());
		wrs.push_back(c.wr);
	}
	for (size_t i = 0; i + 1 < wrs.size(); ++i)
		wrs[i].next = &wrs[i + 1];
	ibv_send_wr *bad = nullptr;
	unsigned queued = 0;
	ASSERT_EQ(mroce_sq_post(&old_way.u, &lim, nullptr, wrs.data(), &bad, &queued), 0);
	ASSERT_EQ(queued, cases.size());

	mroce_sqx_start(new_way.sqx.get());
	for (const auto &c : cases) {
		// wr_flags without INLINE: the data setter decides, as in rdma-core.
		c.build(new_way.sqx.get(), c.wr.wr_id, c.wr.send_flags & ~IBV_SEND_INLINE);
		set_data(new_way.sqx.get(), c);
	}
	unsigned q2 = 0;
	ASSERT_EQ(mroce_sqx_complete(new_way.sqx.get(), &q2), 0);
	EXPECT_EQ(q2, cases.size());
	EXPECT_EQ(new_way.ring.ctl()->producer, old_way.ctl()->producer);

	for (size_t i = 0; i < cases.size(); ++i) {
		SCOPED_TRACE(cases[i].name);
		EXPECT_EQ(std::memcmp(old_way.u.ring->slot(uint32_t(i)),
				      new_way.ring.u.ring->slot(uint32_t(i)), kSlot),
			  0);
	}
	// Spot-check the encoding itself.
	mroce_send_wqe w;
	std::memcpy(&w, new_way.ring.u.ring->slot(2), sizeof(w));
	EXPECT_EQ(w.opcode, unsigned(MROCE_WR_SEND_WITH_IMM));
	EXPECT_EQ(w.send_flags, unsigned(MROCE_SEND_SIGNALED | MROCE_SEND_INLINE));
	EXPECT_EQ(w.inline_len, 36u);
	EXPECT_EQ(w.imm_data, htobe32(0xfeedbeef));
	EXPECT_EQ(std::memcmp(new_way.ring.u.ring->slot(2) + sizeof(w), "0123456789abcdefghij", 20), 0);
	std::memcpy(&w, new_way.ring.u.ring->slot(3), sizeof(w));
	EXPECT_EQ(w.opcode, unsigned(MROCE_WR_SEND_WITH_INV));
	EXPECT_EQ(w.imm_data, htobe32(0x12345678));
	EXPECT_EQ(w.num_sge, 3u);
	std::memcpy(&w, new_way.ring.u.ring->slot(8), sizeof(w));
	EXPECT_EQ(w.wr.atomic.compare_add, 0x1111222233334444u);
	EXPECT_EQ(w.wr.atomic.swap, 0x5555666677778888u);
	EXPECT_EQ(w.wr.atomic.rkey, 0xaau);
}

// A set_sge after flags with INLINE still sends SGEs (the flag only means
// something to ibv_post_send).
TEST(WrApi, InlineFlagDoesNotTurnSgesInline)
{
	TestSqx t;
	mroce_sqx_start(t.sqx.get());
	mroce_sqx_send(t.sqx.get(), 1, IBV_SEND_INLINE | IBV_SEND_SIGNALED);
	mroce_sqx_set_sge(t.sqx.get(), 5, 0x1000, 64);
	unsigned q;
	ASSERT_EQ(mroce_sqx_complete(t.sqx.get(), &q), 0);
	mroce_send_wqe w;
	std::memcpy(&w, t.ring.u.ring->slot(0), sizeof(w));
	EXPECT_EQ(w.send_flags, unsigned(MROCE_SEND_SIGNALED));
	EXPECT_EQ(w.num_sge, 1u);
	EXPECT_EQ(w.inline_len, 0u);
}

TEST(WrApi, BatchPublishesOnceAtComplete)
{
	TestSqx t;
	t.ring.ctl()->producer = t.ring.ctl()->consumer = 0xffffffff;	// wraps inside the batch
	mroce_sqx_start(t.sqx.get());
	for (uint64_t id = 0; id < 3; ++id) {
		mroce_sqx_rdma_write(t.sqx.get(), id, 0, 1, 0x1000);
		mroce_sqx_set_sge(t.sqx.get(), 2, 0x2000, 8);
		EXPECT_EQ(t.ring.ctl()->producer, 0xffffffffu);	// nothing visible yet
	}
	unsigned q = 0;
	ASSERT_EQ(mroce_sqx_complete(t.sqx.get(), &q), 0);
	EXPECT_EQ(q, 3u);
	EXPECT_EQ(t.ring.ctl()->producer, 2u);
	mroce_send_wqe w;
	std::memcpy(&w, t.ring.u.ring->slot(1), sizeof(w));
	EXPECT_EQ(w.wr_id, 2u);
	// An empty batch publishes nothing and asks for no doorbell.
	mroce_sqx_start(t.sqx.get());
	ASSERT_EQ(mroce_sqx_complete(t.sqx.get(), &q), 0);
	EXPECT_EQ(q, 0u);
	EXPECT_EQ(t.ring.ctl()->producer, 2u);
}

TEST(WrApi, AbortDiscardsAndReleasesTheQueue)
{
	TestSqx t;
	mroce_sqx_start(t.sqx.get());
	mroce_sqx_send(t.sqx.get(), 1, 0);
	mroce_sqx_set_sge(t.sqx.get(), 2, 0x2000, 8);
	mroce_sqx_abort(t.sqx.get());
	EXPECT_EQ(t.ring.ctl()->producer, 0u);
	// The lock is free again: ibv_post_send works.
	ibv_send_wr wr = wr_with(IBV_WR_SEND, 9, 0);
	ibv_send_wr *bad;
	unsigned q;
	EXPECT_EQ(mroce_sq_post(&t.ring.u, &t.lim, nullptr, &wr, &bad, &q), 0);
	EXPECT_EQ(t.ring.ctl()->producer, 1u);
	mroce_send_wqe w;
	std::memcpy(&w, t.ring.u.ring->slot(0), sizeof(w));
	EXPECT_EQ(w.wr_id, 9u);
}

// An error anywhere in the batch: wr_complete returns it, nothing is
// published, the calls after it are ignored, the next batch starts clean.
struct BatchError {
	const char *name;
	uint64_t ops;
	void (*calls)(mroce_sqx *);
	int err;
};

class WrApiError : public testing::TestWithParam<BatchError> {};

TEST_P(WrApiError, CompleteReportsItAndPublishesNothing)
{
	TestSqx t(4, GetParam().ops);
	mroce_sqx_start(t.sqx.get());
	mroce_sqx_send(t.sqx.get(), 1, 0);	// a good WR first
	mroce_sqx_set_sge(t.sqx.get(), 2, 0x2000, 8);
	GetParam().calls(t.sqx.get());
	mroce_sqx_send(t.sqx.get(), 3, 0);	// ignored after the error
	unsigned q = 99;
	EXPECT_EQ(mroce_sqx_complete(t.sqx.get(), &q), GetParam().err);
	EXPECT_EQ(q, 0u);
	EXPECT_EQ(t.ring.ctl()->producer, 0u);

	mroce_sqx_start(t.sqx.get());
	mroce_sqx_send(t.sqx.get(), 4, 0);
	ASSERT_EQ(mroce_sqx_complete(t.sqx.get(), &q), 0);
	EXPECT_EQ(q, 1u);
	mroce_send_wqe w;
	std::memcpy(&w, t.ring.u.ring->slot(0), sizeof(w));
	EXPECT_EQ(w.wr_id, 4u);
}

INSTANTIATE_TEST_SUITE_P(
	Cases, WrApiError,
	testing::Values(
		BatchError{"too_many_sges", kAllOps, [](mroce_sqx *q) {
				   static const ibv_sge s[5]{};
				   mroce_sqx_send(q, 7, 0);
				   mroce_sqx_set_sge_list(q, 5, s);
			   }, EINVAL},
		BatchError{"null_sge_list", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_send(q, 7, 0);
				   mroce_sqx_set_sge_list(q, 2, nullptr);
			   }, EINVAL},
		BatchError{"inline_too_long", kAllOps, [](mroce_sqx *q) {
				   static char big[129];
				   mroce_sqx_send(q, 7, 0);
				   mroce_sqx_set_inline_data(q, big, sizeof(big));
			   }, EINVAL},
		BatchError{"inline_read", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_rdma_read(q, 7, 0, 1, 0x1000);
				   mroce_sqx_set_inline_data(q, g_a, 4);
			   }, EINVAL},
		BatchError{"atomic_without_sge", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_atomic_fetch_add(q, 7, 0, 1, 0x1000, 1);
			   }, EINVAL},
		BatchError{"atomic_4_bytes", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_atomic_cmp_swp(q, 7, 0, 1, 0x1000, 1, 2);
				   mroce_sqx_set_sge(q, 1, 0x2000, 4);
			   }, EINVAL},
		BatchError{"atomic_misaligned", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_atomic_cmp_swp(q, 7, 0, 1, 0x1004, 1, 2);
				   mroce_sqx_set_sge(q, 1, 0x2000, 8);
			   }, EINVAL},
		BatchError{"unknown_flag", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_send(q, 7, IBV_SEND_IP_CSUM);
			   }, EOPNOTSUPP},
		BatchError{"op_not_enabled", IBV_QP_EX_WITH_SEND, [](mroce_sqx *q) {
				   mroce_sqx_rdma_write(q, 7, 0, 1, 0x1000);
			   }, EOPNOTSUPP},
		BatchError{"unsupported_op", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_unsupported(q);	// send_tso, atomic_write
			   }, EOPNOTSUPP},
		BatchError{"xrc_srqn_on_rc", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_send(q, 7, 0);
				   mroce_sqx_set_xrc_srqn(q, 5);	// not an XRC QP
			   }, EINVAL},
		BatchError{"setter_without_builder", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_set_sge(q, 1, 0x2000, 8);
			   }, EINVAL},
		BatchError{"two_setters", kAllOps, [](mroce_sqx *q) {
				   mroce_sqx_send(q, 7, 0);
				   mroce_sqx_set_sge(q, 1, 0x2000, 8);
				   mroce_sqx_set_inline_data(q, g_a, 4);
			   }, EINVAL},
		BatchError{"ring_full", kAllOps, [](mroce_sqx *q) {
				   for (int i = 0; i < 4; ++i)	// 1 + 4 > 4 slots
					   mroce_sqx_send(q, 7, 0);
			   }, ENOMEM}),
	[](const testing::TestParamInfo<BatchError> &i) { return std::string(i.param.name); });

TEST(WrApi, RingSpaceCountsTheKernelsConsumer)
{
	TestSqx t(2);
	t.ring.ctl()->producer = 2;
	t.ring.ctl()->consumer = 1;	// one slot free
	mroce_sqx_start(t.sqx.get());
	mroce_sqx_send(t.sqx.get(), 1, 0);
	unsigned q;
	ASSERT_EQ(mroce_sqx_complete(t.sqx.get(), &q), 0);
	EXPECT_EQ(t.ring.ctl()->producer, 3u);
	mroce_sqx_start(t.sqx.get());
	mroce_sqx_send(t.sqx.get(), 2, 0);
	EXPECT_EQ(mroce_sqx_complete(t.sqx.get(), &q), ENOMEM);
}

TEST(WrApi, CompleteWithoutStartIsEinval)
{
	TestSqx t;
	unsigned q = 5;
	EXPECT_EQ(mroce_sqx_complete(t.sqx.get(), &q), EINVAL);
	EXPECT_EQ(q, 0u);
	mroce_sqx_send(t.sqx.get(), 1, 0);	// outside a batch: ignored
	mroce_sqx_abort(t.sqx.get());		// harmless
	EXPECT_EQ(t.ring.ctl()->producer, 0u);
}

// ---- ibv_create_qp_ex / ibv_create_cq_ex attributes -------------------------

ibv_qp_init_attr_ex qp_attr(ibv_qp_type type = IBV_QPT_RC)
{
	ibv_qp_init_attr_ex a{};
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = reinterpret_cast<ibv_pd *>(uintptr_t(0x100));
	a.qp_type = type;
	a.send_ops_flags = kAllOps;
	return a;
}

// UD through ibv_wr_*: the address by wr_set_ud_addr, before or after the
// data setter, gives the bytes ibv_post_send writes; without it, twice, with
// no AH or on RC, wr_complete is EINVAL and nothing is published.
TEST(WrApi, UdAddressSameBytesAsPostSend)
{
	auto ud = rc_limits();
	ud.qp_type = IBV_QPT_UD;
	auto *ah = reinterpret_cast<ibv_ah *>(uintptr_t(0x2a));
	const mroce_ah_num_fn ah_num = [](ibv_ah *a) { return uint32_t(uintptr_t(a)); };
	ibv_sge sge{0x1000, 64, 0x11};
	ibv_send_wr w[3] = {wr_with(IBV_WR_SEND, 1, IBV_SEND_SIGNALED),
			    wr_with(IBV_WR_SEND_WITH_IMM, 2, 0), wr_with(IBV_WR_SEND, 3, 0)};
	for (auto &x : w) {
		x.wr.ud.ah = ah;
		x.wr.ud.remote_qpn = 0x123;
		x.wr.ud.remote_qkey = 0x11111111;
	}
	w[0].sg_list = &sge;
	w[0].num_sge = 1;
	w[1].imm_data = htobe32(7);
	w[1].sg_list = &sge;
	w[1].num_sge = 1;
	w[0].next = &w[1];
	w[1].next = &w[2];	// w[2]: zero length
	TestRing old_way(8, kSlot);
	ibv_send_wr *bad = nullptr;
	unsigned queued = 0;
	ASSERT_EQ(mroce_sq_post(&old_way.u, &ud, ah_num, w, &bad, &queued), 0);
	ASSERT_EQ(queued, 3u);

	TestSqx t(8, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM, ud);
	mroce_sqx_start(t.sqx.get());
	mroce_sqx_send(t.sqx.get(), 1, IBV_SEND_SIGNALED);
	mroce_sqx_set_ud_addr(t.sqx.get(), 1, 0x2a, 0x123, 0x11111111);	// address first
	mroce_sqx_set_sge(t.sqx.get(), 0x11, 0x1000, 64);
	mroce_sqx_send_imm(t.sqx.get(), 2, 0, htobe32(7));
	mroce_sqx_set_sge(t.sqx.get(), 0x11, 0x1000, 64);			// data first
	mroce_sqx_set_ud_addr(t.sqx.get(), 1, 0x2a, 0x123, 0x11111111);
	mroce_sqx_send(t.sqx.get(), 3, 0);					// no data
	mroce_sqx_set_ud_addr(t.sqx.get(), 1, 0x2a, 0x123, 0x11111111);
	ASSERT_EQ(mroce_sqx_complete(t.sqx.get(), &queued), 0);
	ASSERT_EQ(queued, 3u);
	for (uint32_t i = 0; i < 3; ++i) {
		SCOPED_TRACE(i);
		EXPECT_EQ(std::memcmp(old_way.u.ring->slot(i), t.ring.u.ring->slot(i), kSlot), 0);
	}
	mroce_send_wqe q;
	std::memcpy(&q, t.ring.u.ring->slot(1), sizeof(q));
	EXPECT_EQ(q.wr.ud.ah_num, 0x2au);
	EXPECT_EQ(q.wr.ud.remote_qpn, 0x123u);
	EXPECT_EQ(q.wr.ud.remote_qkey, 0x11111111u);

	const std::function<void(mroce_sqx *)> bad_cases[] = {
		[](mroce_sqx *s) { mroce_sqx_send(s, 9, 0); },	// no address
		[](mroce_sqx *s) {
			mroce_sqx_send(s, 9, 0);
			mroce_sqx_set_sge(s, 0x11, 0x1000, 64);	// data, no address
		},
		[](mroce_sqx *s) {
			mroce_sqx_send(s, 9, 0);
			mroce_sqx_set_ud_addr(s, 0, 0, 0x123, 1);	// NULL AH
		},
		[](mroce_sqx *s) {
			mroce_sqx_send(s, 9, 0);
			mroce_sqx_set_ud_addr(s, 1, 0x2a, 0x123, 1);
			mroce_sqx_set_ud_addr(s, 1, 0x2a, 0x123, 1);	// twice
		},
		[](mroce_sqx *s) { mroce_sqx_set_ud_addr(s, 1, 0x2a, 0x123, 1); },	// no WR
	};
	for (size_t k = 0; k < std::size(bad_cases); ++k) {
		SCOPED_TRACE(k);
		TestSqx b(8, IBV_QP_EX_WITH_SEND, ud);
		mroce_sqx_start(b.sqx.get());
		bad_cases[k](b.sqx.get());
		EXPECT_EQ(mroce_sqx_complete(b.sqx.get(), &queued), EINVAL);
		EXPECT_EQ(queued, 0u);
		EXPECT_EQ(b.ring.ctl()->producer, 0u);
	}
	TestSqx rc(8);
	mroce_sqx_start(rc.sqx.get());
	mroce_sqx_send(rc.sqx.get(), 9, 0);
	mroce_sqx_set_ud_addr(rc.sqx.get(), 1, 0x2a, 0x123, 1);	// on RC
	EXPECT_EQ(mroce_sqx_complete(rc.sqx.get(), &queued), EINVAL);
}

TEST(QpxCheck, AcceptsWhatTheKernelRuns)
{
	auto a = qp_attr();
	EXPECT_EQ(mroce_qpx_check(&a), 0);
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;	// with no flags
	EXPECT_EQ(mroce_qpx_check(&a), 0);
	a = qp_attr(IBV_QPT_UD);
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	EXPECT_EQ(mroce_qpx_check(&a), 0);		// a UD QP without ibv_wr_*
	a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = 0;
	EXPECT_EQ(mroce_qpx_check(&a), 0);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	EXPECT_EQ(mroce_qpx_check(&a), 0);		// UD ibv_wr_*
	// UC: SEND and WRITE, with and without immediate
	a = qp_attr(IBV_QPT_UC);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			   IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	EXPECT_EQ(mroce_qpx_check(&a), 0);
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	EXPECT_EQ(mroce_qpx_check(&a), 0);
	// XRC: an initiator with a PD and RC's operations but WRITE_WITH_IMM,
	// a target in an XRC domain with nothing else
	a = qp_attr(IBV_QPT_XRC_SEND);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			   IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	EXPECT_EQ(mroce_qpx_check(&a), 0);
	a = ibv_qp_init_attr_ex{};
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = reinterpret_cast<ibv_xrcd *>(uintptr_t(0x300));
	EXPECT_EQ(mroce_qpx_check(&a), 0);
	a.cap.max_send_wr = 1;
	EXPECT_EQ(mroce_qpx_check(&a), EINVAL);		// a target with a send queue
	a.cap.max_send_wr = 0;
	a.comp_mask = 0;
	EXPECT_EQ(mroce_qpx_check(&a), EINVAL);		// a target without a domain
}

struct QpxBad {
	const char *name;
	void (*edit)(ibv_qp_init_attr_ex &);
	int err;
};

class QpxReject : public testing::TestWithParam<QpxBad> {};

TEST_P(QpxReject, Fails)
{
	auto a = qp_attr();
	GetParam().edit(a);
	EXPECT_EQ(mroce_qpx_check(&a), GetParam().err);
}

INSTANTIATE_TEST_SUITE_P(
	Cases, QpxReject,
	testing::Values(
		QpxBad{"uc_local_inv", [](ibv_qp_init_attr_ex &a) {
			       a.qp_type = IBV_QPT_UC;
			       a.send_ops_flags = IBV_QP_EX_WITH_LOCAL_INV; }, EOPNOTSUPP},
		QpxBad{"tso", [](ibv_qp_init_attr_ex &a) {
			       a.send_ops_flags |= IBV_QP_EX_WITH_TSO; }, EOPNOTSUPP},
		QpxBad{"atomic_write", [](ibv_qp_init_attr_ex &a) {
			       a.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_WRITE; }, EOPNOTSUPP},
		QpxBad{"ud_write", [](ibv_qp_init_attr_ex &a) {
			       a.qp_type = IBV_QPT_UD;
			       a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE; },
		       EOPNOTSUPP},
		QpxBad{"uc_read", [](ibv_qp_init_attr_ex &a) {
			       a.qp_type = IBV_QPT_UC;
			       a.send_ops_flags = IBV_QP_EX_WITH_SEND |
						  IBV_QP_EX_WITH_RDMA_READ; }, EOPNOTSUPP},
		QpxBad{"uc_atomics", [](ibv_qp_init_attr_ex &a) {
			       a.qp_type = IBV_QPT_UC;
			       a.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD; }, EOPNOTSUPP},
		QpxBad{"uc_send_inv", [](ibv_qp_init_attr_ex &a) {
			       a.qp_type = IBV_QPT_UC;
			       a.send_ops_flags = IBV_QP_EX_WITH_SEND_WITH_INV; }, EOPNOTSUPP},
		QpxBad{"uc_all", [](ibv_qp_init_attr_ex &a) {
			       a.qp_type = IBV_QPT_UC; }, EOPNOTSUPP},
		QpxBad{"xrc_send_write_imm", [](ibv_qp_init_attr_ex &a) {
			       a.qp_type = IBV_QPT_XRC_SEND;
			       a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM; }, EOPNOTSUPP},
		QpxBad{"xrc_send_recv_wr", [](ibv_qp_init_attr_ex &a) {
			       a.qp_type = IBV_QPT_XRC_SEND;
			       a.send_ops_flags = IBV_QP_EX_WITH_SEND;
			       a.cap.max_recv_wr = 1; }, EINVAL},
		QpxBad{"xrcd_on_rc", [](ibv_qp_init_attr_ex &a) {
			       a.comp_mask |= IBV_QP_INIT_ATTR_XRCD; }, EINVAL},
		QpxBad{"tso_header", [](ibv_qp_init_attr_ex &a) {
			       a.comp_mask |= IBV_QP_INIT_ATTR_MAX_TSO_HEADER; }, EOPNOTSUPP},
		QpxBad{"rss", [](ibv_qp_init_attr_ex &a) {
			       a.comp_mask |= IBV_QP_INIT_ATTR_RX_HASH; }, EOPNOTSUPP},
		QpxBad{"create_flags", [](ibv_qp_init_attr_ex &a) {
			       a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
			       a.create_flags = IBV_QP_CREATE_SCATTER_FCS; }, EOPNOTSUPP},
		QpxBad{"srq", [](ibv_qp_init_attr_ex &a) {
			       a.srq = reinterpret_cast<ibv_srq *>(uintptr_t(0x200)); }, EOPNOTSUPP},
		QpxBad{"no_pd", [](ibv_qp_init_attr_ex &a) {
			       a.comp_mask &= ~IBV_QP_INIT_ATTR_PD; }, EINVAL}),
	[](const testing::TestParamInfo<QpxBad> &i) { return std::string(i.param.name); });

TEST(CqxCheck, StandardFieldsOnly)
{
	ibv_cq_init_attr_ex a{};
	a.cqe = 16;
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	EXPECT_EQ(mroce_cqx_check(&a), 0);
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;	// a hint
	EXPECT_EQ(mroce_cqx_check(&a), 0);
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	EXPECT_EQ(mroce_cqx_check(&a), EOPNOTSUPP);
	a.flags = 0;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	EXPECT_EQ(mroce_cqx_check(&a), EOPNOTSUPP);
	a.comp_mask = 0;
	for (uint64_t f : {uint64_t(IBV_WC_EX_WITH_CVLAN), uint64_t(IBV_WC_EX_WITH_FLOW_TAG),
			   uint64_t(IBV_WC_EX_WITH_TM_INFO)}) {
		a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | f;
		EXPECT_EQ(mroce_cqx_check(&a), EOPNOTSUPP) << f;
	}
	// Completion timestamps are in the CQE.
	for (uint64_t f : {uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP),
			   uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK),
			   uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)}) {
		a.wc_flags = IBV_WC_STANDARD_FLAGS | f;
		EXPECT_EQ(mroce_cqx_check(&a), 0) << f;
	}
}

// ---- ibv_cq_ex polling --------------------------------------------------------

struct TestCqx {
	TestCqx() : ring(4, sizeof(mroce_cqe)), cqx(mroce_cqx_new(&ring.u)) {}
	void push(const mroce_cqe &c)
	{
		std::memcpy(ring.u.ring->slot(ring.ctl()->producer), &c, sizeof(c));
		ring.ctl()->producer++;
	}
	TestRing ring;
	Cqx cqx;
};

mroce_cqe cqe(uint64_t id, uint32_t status = IBV_WC_SUCCESS)
{
	mroce_cqe c{};
	c.wr_id = id;
	c.status = status;
	c.opcode = MROCE_WC_RDMA_WRITE;
	return c;
}

TEST(CqEx, EmptyCqIsEnoentAndLeavesNoLock)
{
	TestCqx t;
	uint64_t id = 0;
	ibv_wc_status st{};
	EXPECT_EQ(mroce_cqx_start_poll(t.cqx.get(), 0, &id, &st), ENOENT);
	// No end_poll after ENOENT (as the API says): ibv_poll_cq must not block.
	ibv_wc wc;
	EXPECT_EQ(mroce_cq_poll(&t.ring.u, 1, &wc), 0);
	EXPECT_EQ(mroce_cqx_start_poll(t.cqx.get(), 1, &id, &st), EINVAL);	// comp_mask
}

TEST(CqEx, WalksCompletionsAndReadsFields)
{
	TestCqx t;
	t.ring.ctl()->producer = t.ring.ctl()->consumer = 0xfffffffe;
	mroce_cqe a = cqe(1);
	a.opcode = MROCE_WC_RECV;
	a.byte_len = 4096;
	a.imm_data = htobe32(0xcafe);
	a.wc_flags = MROCE_WC_WITH_IMM | MROCE_WC_GRH;
	a.qp_num = 0x11;
	a.src_qp = 0x22;
	a.slid = 0x33;
	a.sl = 2;
	a.dlid_path_bits = 1;
	t.push(a);
	mroce_cqe b = cqe(2, IBV_WC_REM_ACCESS_ERR);
	b.vendor_err = 0x1234;
	t.push(b);
	mroce_cqe c = cqe(3);
	c.opcode = MROCE_WC_RECV;
	c.imm_data = htobe32(0xdeadbeef);	// the invalidated rkey, big-endian in the CQE
	c.wc_flags = MROCE_WC_WITH_INV;
	t.push(c);

	uint64_t id = 0;
	ibv_wc_status st{};
	ASSERT_EQ(mroce_cqx_start_poll(t.cqx.get(), 0, &id, &st), 0);
	EXPECT_EQ(id, 1u);
	EXPECT_EQ(st, IBV_WC_SUCCESS);
	const ibv_wc *w = mroce_cqx_current(t.cqx.get());
	EXPECT_EQ(w->opcode, IBV_WC_RECV);
	EXPECT_EQ(w->byte_len, 4096u);
	EXPECT_EQ(w->imm_data, htobe32(0xcafe));
	EXPECT_EQ(w->wc_flags, unsigned(IBV_WC_WITH_IMM | IBV_WC_GRH));
	EXPECT_EQ(w->qp_num, 0x11u);
	EXPECT_EQ(w->src_qp, 0x22u);
	EXPECT_EQ(w->slid, 0x33u);
	EXPECT_EQ(w->sl, 2u);
	EXPECT_EQ(w->dlid_path_bits, 1u);
	EXPECT_EQ(t.ring.ctl()->consumer, 0xfffffffeu);	// published at end_poll

	ASSERT_EQ(mroce_cqx_next_poll(t.cqx.get(), &id, &st), 0);
	EXPECT_EQ(id, 2u);
	EXPECT_EQ(st, IBV_WC_REM_ACCESS_ERR);
	EXPECT_EQ(mroce_cqx_current(t.cqx.get())->vendor_err, 0x1234u);

	ASSERT_EQ(mroce_cqx_next_poll(t.cqx.get(), &id, &st), 0);
	EXPECT_EQ(id, 3u);
	// ibv_wc_read_invalidated_rkey() returns read_imm_data() as is: host order.
	EXPECT_EQ(mroce_cqx_current(t.cqx.get())->invalidated_rkey, 0xdeadbeefu);
	EXPECT_EQ(mroce_cqx_current(t.cqx.get())->wc_flags, unsigned(IBV_WC_WITH_INV));

	EXPECT_EQ(mroce_cqx_next_poll(t.cqx.get(), &id, &st), ENOENT);
	mroce_cqx_end_poll(t.cqx.get());
	EXPECT_EQ(t.ring.ctl()->consumer, 1u);	// all three, through the wrap
	EXPECT_EQ(mroce_cqx_start_poll(t.cqx.get(), 0, &id, &st), ENOENT);
}

TEST(CqEx, EndPollConsumesTheCurrentOneAndPollCqContinues)
{
	TestCqx t;
	t.push(cqe(1));
	t.push(cqe(2));
	uint64_t id;
	ibv_wc_status st;
	ASSERT_EQ(mroce_cqx_start_poll(t.cqx.get(), 0, &id, &st), 0);
	mroce_cqx_end_poll(t.cqx.get());
	EXPECT_EQ(t.ring.ctl()->consumer, 1u);
	ibv_wc wc[4];
	ASSERT_EQ(mroce_cq_poll(&t.ring.u, 4, wc), 1);	// ibv_poll_cq on the same CQ
	EXPECT_EQ(wc[0].wr_id, 2u);
	t.push(cqe(3));
	ASSERT_EQ(mroce_cqx_start_poll(t.cqx.get(), 0, &id, &st), 0);
	EXPECT_EQ(id, 3u);
	// A completion arriving during the session is seen by next_poll.
	t.push(cqe(4));
	ASSERT_EQ(mroce_cqx_next_poll(t.cqx.get(), &id, &st), 0);
	EXPECT_EQ(id, 4u);
	mroce_cqx_end_poll(t.cqx.get());
	EXPECT_EQ(t.ring.ctl()->consumer, 4u);
}

TEST(CqEx, ReadsTheTimestampsOfTheCurrentCompletion)
{
	TestCqx t;
	for (uint64_t i = 1; i <= 3; ++i) {
		mroce_cqe c = cqe(i);
		c.ts_raw = 1000 * i + 7;
		c.ts_wallclock = 1700000000000000000ull + i;
		t.push(c);
	}
	uint64_t id = 0;
	ibv_wc_status st{};
	ASSERT_EQ(mroce_cqx_start_poll(t.cqx.get(), 0, &id, &st), 0);
	for (uint64_t i = 1; i <= 3; ++i) {
		EXPECT_EQ(id, i);
		EXPECT_EQ(mroce_cqx_completion_ts(t.cqx.get()), 1000 * i + 7);
		EXPECT_EQ(mroce_cqx_completion_wallclock_ns(t.cqx.get()),
			  1700000000000000000ull + i);
		EXPECT_EQ(mroce_cqx_next_poll(t.cqx.get(), &id, &st), i < 3 ? 0 : ENOENT);
	}
	mroce_cqx_end_poll(t.cqx.get());
}

TEST(CqEx, CorruptProducerIsEio)
{
	TestCqx t;
	t.ring.ctl()->producer = 9;
	uint64_t id;
	ibv_wc_status st;
	EXPECT_EQ(mroce_cqx_start_poll(t.cqx.get(), 0, &id, &st), EIO);
	EXPECT_EQ(t.ring.ctl()->consumer, 0u);
	ibv_wc wc;
	EXPECT_EQ(mroce_cq_poll(&t.ring.u, 1, &wc), -EIO);	// and the lock is free
}

TEST(CqPoll, InvalidatedRkeyInHostOrder)
{
	TestRing cq(4, sizeof(mroce_cqe));
	mroce_cqe c = cqe(1);
	c.opcode = MROCE_WC_RECV;
	c.wc_flags = MROCE_WC_WITH_INV;
	c.imm_data = htobe32(0x01020304);
	std::memcpy(cq.u.ring->slot(0), &c, sizeof(c));
	cq.ctl()->producer = 1;
	ibv_wc wc;
	ASSERT_EQ(mroce_cq_poll(&cq.u, 1, &wc), 1);
	EXPECT_EQ(wc.invalidated_rkey, 0x01020304u);
	EXPECT_EQ(wc.wc_flags, unsigned(IBV_WC_WITH_INV));
}

} // namespace
