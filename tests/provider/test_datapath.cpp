// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Unit tests of the provider datapath against rings in plain memory: the
// producer/consumer protocol, WQE encoding and validation (the errnos
// ibv_post_send/recv report), CQE decoding and the uAPI layout.

#include "mroce_uprov.h"
#include "ring.hpp"
#include "wqe.hpp"
#include "test_ring.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <endian.h>
#include <vector>

namespace {

using mroce::Ring;
using mroce::RingError;

using mroce_test::HeapMemory;
using mroce_test::TestRing;

constexpr uint32_t kSendSlot = 256;
constexpr uint32_t kRecvSlot = 128;

mroce_qp_limits rc_limits()
{
	return {IBV_QPT_RC, 4, 4, 128};
}

uint32_t ah_num_of(ibv_ah *ah)
{
	return ah ? 7u : 0u;
}

TEST(Layout, UapiSizesAndOffsets)
{
	EXPECT_EQ(sizeof(mroce_ring_ctl), 256u);
	EXPECT_EQ(offsetof(mroce_ring_ctl, producer), 0u);
	EXPECT_EQ(offsetof(mroce_ring_ctl, consumer), 64u);
	EXPECT_EQ(offsetof(mroce_ring_ctl, num_entries), 128u);
	EXPECT_EQ(sizeof(mroce_cqe), 64u);
	EXPECT_EQ(sizeof(mroce_send_wqe), 64u);
	EXPECT_EQ(offsetof(mroce_send_wqe, wr), 32u);
	EXPECT_EQ(sizeof(mroce_recv_wqe), 16u);
	EXPECT_EQ(sizeof(mroce_sge), 16u);
	// Numeric identity with libibverbs' enums, relied on by decode_cqe.
	EXPECT_EQ(MROCE_WC_RECV, IBV_WC_RECV);
	EXPECT_EQ(MROCE_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(MROCE_WC_WITH_IMM, IBV_WC_WITH_IMM);
	EXPECT_EQ(MROCE_WC_WITH_INV, IBV_WC_WITH_INV);
	EXPECT_EQ(MROCE_SEND_INLINE, IBV_SEND_INLINE);
	EXPECT_EQ(MROCE_SEND_SIGNALED, IBV_SEND_SIGNALED);
}

TEST(Ring, GeometryIsValidated)
{
	RingError e;
	EXPECT_EQ(Ring::make(std::make_unique<HeapMemory>(8, 64), 6, 64, &e), nullptr);
	EXPECT_EQ(e, RingError::bad_geometry);
	EXPECT_EQ(Ring::make(std::make_unique<HeapMemory>(8, 60), 8, 60, &e), nullptr);
	EXPECT_EQ(e, RingError::bad_geometry);
	EXPECT_EQ(Ring::make(std::make_unique<HeapMemory>(8, 64), 16, 64, &e), nullptr);
	EXPECT_EQ(e, RingError::too_small);
	EXPECT_EQ(Ring::make(std::make_unique<HeapMemory>(8, 64, 64 * 8), 16, 64, &e), nullptr);
	EXPECT_EQ(e, RingError::mismatch);	// control block says 8 entries
	EXPECT_EQ(Ring::make(nullptr, 8, 64, &e), nullptr);
	auto r = Ring::make(std::make_unique<HeapMemory>(8, 64), 8, 64, &e);
	ASSERT_NE(r, nullptr);
	EXPECT_EQ(e, RingError::ok);
	EXPECT_EQ(r->slot(9), r->slot(1));	// indices wrap modulo the size
}

TEST(CqPoll, ConsumesInOrderAcrossWrap)
{
	TestRing cq(4, sizeof(mroce_cqe));
	cq.ctl()->producer = cq.ctl()->consumer = 0xfffffffe;	// about to wrap
	uint32_t prod = cq.ctl()->producer;
	for (uint64_t id = 1; id <= 3; id++, prod++) {
		mroce_cqe c{};
		c.wr_id = id;
		c.status = id == 2 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS;
		c.opcode = MROCE_WC_RECV;
		c.byte_len = 100 * id;
		c.imm_data = htobe32(0xabcd);
		c.wc_flags = MROCE_WC_WITH_IMM;
		c.qp_num = 0x11;
		c.src_qp = 0x22;
		std::memcpy(cq.u.ring->slot(prod), &c, sizeof(c));
	}
	cq.ctl()->producer = prod;
	ibv_wc wc[8];
	ASSERT_EQ(mroce_cq_poll(&cq.u, 2, wc), 2);
	EXPECT_EQ(wc[0].wr_id, 1u);
	EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc[0].opcode, IBV_WC_RECV);
	EXPECT_EQ(wc[0].byte_len, 100u);
	EXPECT_EQ(wc[0].imm_data, htobe32(0xabcd));
	EXPECT_EQ(wc[0].wc_flags, unsigned(IBV_WC_WITH_IMM));
	EXPECT_EQ(wc[0].qp_num, 0x11u);
	EXPECT_EQ(wc[0].src_qp, 0x22u);
	EXPECT_EQ(wc[1].status, IBV_WC_REM_ACCESS_ERR);
	EXPECT_EQ(cq.ctl()->consumer, 0u);	// wrapped through 2^32
	ASSERT_EQ(mroce_cq_poll(&cq.u, 8, wc), 1);
	EXPECT_EQ(wc[0].wr_id, 3u);
	EXPECT_EQ(mroce_cq_poll(&cq.u, 8, wc), 0);
	EXPECT_EQ(cq.ctl()->consumer, prod);
}

TEST(CqPoll, CorruptProducerIsAnError)
{
	TestRing cq(4, sizeof(mroce_cqe));
	cq.ctl()->producer = 5;	// more than the ring holds
	ibv_wc wc[8];
	EXPECT_EQ(mroce_cq_poll(&cq.u, 8, wc), -EIO);
	EXPECT_EQ(cq.ctl()->consumer, 0u);
}

TEST(SqPost, EncodesRdmaWriteWithSges)
{
	TestRing sq(8, kSendSlot);
	ibv_sge sge[2] = {{0x1000, 10, 0x55}, {0x2000, 20, 0x66}};
	ibv_send_wr wr{};
	wr.wr_id = 42;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(7);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	wr.sg_list = sge;
	wr.num_sge = 2;
	wr.wr.rdma.remote_addr = 0xdead000;
	wr.wr.rdma.rkey = 0x99;
	ibv_send_wr *bad = nullptr;
	unsigned queued;
	auto lim = rc_limits();
	ASSERT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, &wr, &bad, &queued), 0);
	EXPECT_EQ(queued, 1u);
	EXPECT_EQ(sq.ctl()->producer, 1u);
	mroce_send_wqe w;
	std::memcpy(&w, sq.u.ring->slot(0), sizeof(w));
	EXPECT_EQ(w.wr_id, 42u);
	EXPECT_EQ(w.opcode, unsigned(MROCE_WR_RDMA_WRITE_WITH_IMM));
	EXPECT_EQ(w.send_flags, unsigned(MROCE_SEND_SIGNALED | MROCE_SEND_SOLICITED));
	EXPECT_EQ(w.imm_data, htobe32(7));
	EXPECT_EQ(w.num_sge, 2u);
	EXPECT_EQ(w.wr.rdma.remote_addr, 0xdead000u);
	EXPECT_EQ(w.wr.rdma.rkey, 0x99u);
	mroce_sge s[2];
	std::memcpy(s, sq.u.ring->slot(0) + sizeof(w), sizeof(s));
	EXPECT_EQ(s[1].addr, 0x2000u);
	EXPECT_EQ(s[1].length, 20u);
	EXPECT_EQ(s[1].lkey, 0x66u);
}

TEST(SqPost, InlineCopiesBytes)
{
	TestRing sq(8, kSendSlot);
	char a[] = "hello ", b[] = "world";
	ibv_sge sge[2] = {{uint64_t(uintptr_t(a)), 6, 0}, {uint64_t(uintptr_t(b)), 5, 0}};
	ibv_send_wr wr{};
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	wr.sg_list = sge;
	wr.num_sge = 2;
	ibv_send_wr *bad;
	unsigned queued;
	auto lim = rc_limits();
	ASSERT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, &wr, &bad, &queued), 0);
	mroce_send_wqe w;
	std::memcpy(&w, sq.u.ring->slot(0), sizeof(w));
	EXPECT_EQ(w.inline_len, 11u);
	EXPECT_EQ(w.num_sge, 0u);
	EXPECT_EQ(std::memcmp(sq.u.ring->slot(0) + sizeof(w), "hello world", 11), 0);
}

// Local operations: the WQE carries the keys and the window, no data.
TEST(SqPost, LocalInvAndBindMw)
{
	TestRing sq(8, kSendSlot);
	ibv_sge sge{0x1000, 8, 1};
	ibv_mw mw{};
	mw.type = IBV_MW_TYPE_2;
	ibv_mr mr{};
	mr.lkey = 0x3301;
	ibv_send_wr w[2]{};
	w[0].opcode = IBV_WR_LOCAL_INV;
	w[0].wr_id = 5;
	w[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;
	w[0].invalidate_rkey = 0xabcd01;
	w[0].sg_list = &sge;	// ignored
	w[0].num_sge = 1;
	w[0].next = &w[1];
	w[1].opcode = IBV_WR_BIND_MW;
	w[1].wr_id = 6;
	w[1].send_flags = IBV_SEND_FENCE;
	w[1].bind_mw.mw = &mw;
	w[1].bind_mw.rkey = 0x770002;
	w[1].bind_mw.bind_info = {&mr, 0x10000, 300, IBV_ACCESS_REMOTE_ATOMIC};
	ibv_send_wr *bad;
	unsigned queued;
	auto lim = rc_limits();
	ASSERT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, w, &bad, &queued), 0);
	EXPECT_EQ(queued, 2u);
	mroce_send_wqe q;
	std::memcpy(&q, sq.u.ring->slot(0), sizeof(q));
	EXPECT_EQ(q.opcode, unsigned(MROCE_WR_LOCAL_INV));
	EXPECT_EQ(q.wr_id, 5u);
	EXPECT_EQ(q.send_flags, unsigned(MROCE_SEND_SIGNALED));
	EXPECT_EQ(q.wr.rdma.rkey, 0xabcd01u);
	EXPECT_EQ(q.num_sge, 0u);
	std::memcpy(&q, sq.u.ring->slot(1), sizeof(q));
	EXPECT_EQ(q.opcode, unsigned(MROCE_WR_BIND_MW));
	EXPECT_EQ(q.send_flags, unsigned(MROCE_SEND_FENCE));
	EXPECT_EQ(q.wr.bind.rkey, 0x770002u);
	EXPECT_EQ(q.wr.bind.mr_lkey, 0x3301u);
	EXPECT_EQ(q.wr.bind.addr, 0x10000u);
	EXPECT_EQ(q.wr.bind.length, 300u);
	EXPECT_EQ(q.wr.bind.access, unsigned(IBV_ACCESS_REMOTE_ATOMIC));
	// A type 1 window goes through ibv_bind_mw's path only.
	mw.type = IBV_MW_TYPE_1;
	EXPECT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, &w[1], &bad, &queued), EINVAL);
	EXPECT_EQ(mroce_sq_post_bind1(&sq.u, &lim, &w[1], &queued), 0);
	EXPECT_EQ(queued, 1u);
	EXPECT_EQ(sq.ctl()->producer, 3u);
	// ZERO_BASED: a type 1 window cannot be zero based (IBA C10-75) ...
	w[1].bind_mw.bind_info.mw_access_flags =
		IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ;
	EXPECT_EQ(mroce_sq_post_bind1(&sq.u, &lim, &w[1], &queued), EINVAL);
	EXPECT_EQ(queued, 0u);
	// ... a type 2 window can: the flag goes to the kernel with the rights.
	mw.type = IBV_MW_TYPE_2;
	w[1].next = nullptr;
	ASSERT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, &w[1], &bad, &queued), 0);
	EXPECT_EQ(queued, 1u);
	std::memcpy(&q, sq.u.ring->slot(3), sizeof(q));
	EXPECT_EQ(q.opcode, unsigned(MROCE_WR_BIND_MW));
	EXPECT_EQ(q.wr.bind.addr, 0x10000u);
	EXPECT_EQ(q.wr.bind.length, 300u);
	EXPECT_EQ(q.wr.bind.access,
		  unsigned(IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ));
	EXPECT_EQ(sq.ctl()->producer, 4u);
}

TEST(SqPost, BadWrStopsTheListAndReportsIt)
{
	TestRing sq(8, kSendSlot);
	ibv_sge sge{0x1000, 8, 1};
	ibv_send_wr w[3]{};
	for (auto &x : w) {
		x.opcode = IBV_WR_SEND;
		x.sg_list = &sge;
		x.num_sge = 1;
	}
	w[0].next = &w[1];
	w[1].next = &w[2];
	w[1].num_sge = 5;	// over max_send_sge
	ibv_send_wr *bad = nullptr;
	unsigned queued;
	auto lim = rc_limits();
	EXPECT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, w, &bad, &queued), EINVAL);
	EXPECT_EQ(bad, &w[1]);
	EXPECT_EQ(queued, 1u);	// the first one is visible to the kernel
	EXPECT_EQ(sq.ctl()->producer, 1u);
}

struct BadCase {
	const char *name;
	void (*edit)(ibv_send_wr &wr, mroce_qp_limits &lim);
	int err;
};

class SqReject : public testing::TestWithParam<BadCase> {};

TEST_P(SqReject, ReturnsErrnoAndQueuesNothing)
{
	TestRing sq(8, kSendSlot);
	static char buf[512];
	ibv_sge sge{uint64_t(uintptr_t(buf)), 8, 1};
	ibv_send_wr wr{};
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	auto lim = rc_limits();
	GetParam().edit(wr, lim);
	ibv_send_wr *bad = nullptr;
	unsigned queued = 99;
	EXPECT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, &wr, &bad, &queued), GetParam().err);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(queued, 0u);
	EXPECT_EQ(sq.ctl()->producer, 0u);
}

INSTANTIATE_TEST_SUITE_P(
	Cases, SqReject,
	testing::Values(
		BadCase{"unknown_opcode", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.opcode = IBV_WR_TSO; }, EOPNOTSUPP},
		BadCase{"bind_no_mw", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.opcode = IBV_WR_BIND_MW; }, EINVAL},
		BadCase{"bind_type1_by_post", [](ibv_send_wr &w, mroce_qp_limits &) {
				static ibv_mw mw{};
				mw.type = IBV_MW_TYPE_1;
				w.opcode = IBV_WR_BIND_MW; w.bind_mw.mw = &mw; }, EINVAL},
		BadCase{"bind_zero_based_local_write", [](ibv_send_wr &w, mroce_qp_limits &) {
				static ibv_mw mw{};
				static ibv_mr mr{};
				mw.type = IBV_MW_TYPE_2;
				w.opcode = IBV_WR_BIND_MW; w.bind_mw.mw = &mw;
				w.bind_mw.bind_info = {&mr, 0x1000, 8,
						       IBV_ACCESS_ZERO_BASED |
						       IBV_ACCESS_LOCAL_WRITE}; }, EINVAL},
		BadCase{"bind_local_write", [](ibv_send_wr &w, mroce_qp_limits &) {
				static ibv_mw mw{};
				static ibv_mr mr{};
				mw.type = IBV_MW_TYPE_2;
				w.opcode = IBV_WR_BIND_MW; w.bind_mw.mw = &mw;
				w.bind_mw.bind_info = {&mr, 0x1000, 8,
						       IBV_ACCESS_LOCAL_WRITE}; }, EINVAL},
		BadCase{"ud_local_inv", [](ibv_send_wr &w, mroce_qp_limits &l) {
				l.qp_type = IBV_QPT_UD; w.opcode = IBV_WR_LOCAL_INV; }, EINVAL},
		BadCase{"uc_bind_type1", [](ibv_send_wr &w, mroce_qp_limits &l) {
				static ibv_mw mw{};
				mw.type = IBV_MW_TYPE_1;	// through ibv_bind_mw only
				l.qp_type = IBV_QPT_UC; w.opcode = IBV_WR_BIND_MW;
				w.bind_mw.mw = &mw; }, EINVAL},
		BadCase{"unknown_flag", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.send_flags = IBV_SEND_IP_CSUM; }, EOPNOTSUPP},
		BadCase{"negative_sges", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.num_sge = -1; }, EINVAL},
		BadCase{"null_sg_list", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.sg_list = nullptr; }, EINVAL},
		BadCase{"inline_too_long", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.send_flags = IBV_SEND_INLINE; w.sg_list->length = 129; }, EINVAL},
		BadCase{"inline_read", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.opcode = IBV_WR_RDMA_READ; w.send_flags = IBV_SEND_INLINE; }, EINVAL},
		BadCase{"atomic_length", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; w.sg_list->length = 4; }, EINVAL},
		BadCase{"atomic_misaligned", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
				w.wr.atomic.remote_addr = 0x1004; }, EINVAL},
		BadCase{"uc_local_inv", [](ibv_send_wr &w, mroce_qp_limits &l) {
				l.qp_type = IBV_QPT_UC; w.opcode = IBV_WR_LOCAL_INV; }, EOPNOTSUPP},
		BadCase{"atomic_no_sge", [](ibv_send_wr &w, mroce_qp_limits &) {
				w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; w.num_sge = 0; }, EINVAL},
		BadCase{"ud_write", [](ibv_send_wr &w, mroce_qp_limits &l) {
				l.qp_type = IBV_QPT_UD; w.opcode = IBV_WR_RDMA_WRITE; }, EINVAL},
		BadCase{"uc_read", [](ibv_send_wr &w, mroce_qp_limits &l) {
				l.qp_type = IBV_QPT_UC; w.opcode = IBV_WR_RDMA_READ; }, EINVAL},
		BadCase{"uc_cmp_swap", [](ibv_send_wr &w, mroce_qp_limits &l) {
				l.qp_type = IBV_QPT_UC; w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
				w.sg_list->length = 8; }, EINVAL},
		BadCase{"uc_fetch_add", [](ibv_send_wr &w, mroce_qp_limits &l) {
				l.qp_type = IBV_QPT_UC; w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
				w.sg_list->length = 8; }, EINVAL},
		BadCase{"uc_send_inv", [](ibv_send_wr &w, mroce_qp_limits &l) {
				l.qp_type = IBV_QPT_UC; w.opcode = IBV_WR_SEND_WITH_INV; }, EINVAL}),
	[](const testing::TestParamInfo<BadCase> &i) { return std::string(i.param.name); });

TEST(SqPost, FullRingReportsEnomem)
{
	TestRing sq(2, kSendSlot);
	ibv_send_wr w[3]{};
	for (auto &x : w)
		x.opcode = IBV_WR_SEND;
	w[0].next = &w[1];
	w[1].next = &w[2];
	ibv_send_wr *bad;
	unsigned queued;
	auto lim = rc_limits();
	EXPECT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, w, &bad, &queued), ENOMEM);
	EXPECT_EQ(queued, 2u);
	EXPECT_EQ(bad, &w[2]);
	sq.ctl()->consumer = 1;	// the kernel consumed one
	EXPECT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, &w[2], &bad, &queued), 0);
	EXPECT_EQ(sq.ctl()->producer, 3u);
}

// UD WQEs are encoded (the ABI has them) though the kernel does not run them yet.
TEST(EncodeSend, UdCarriesAddressHandle)
{
	std::vector<std::byte> slot(kSendSlot);
	ibv_send_wr wr{};
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.wr.ud.ah = reinterpret_cast<ibv_ah *>(uintptr_t(0x10));
	wr.wr.ud.remote_qpn = 0x123;
	wr.wr.ud.remote_qkey = 0x11111111;
	mroce_qp_limits lim{IBV_QPT_UD, 1, 1, 0};
	ASSERT_EQ(mroce::encode_send(wr, lim, ah_num_of, slot), 0);
	mroce_send_wqe w;
	std::memcpy(&w, slot.data(), sizeof(w));
	EXPECT_EQ(w.wr.ud.ah_num, 7u);
	EXPECT_EQ(w.wr.ud.remote_qpn, 0x123u);
	EXPECT_EQ(w.wr.ud.remote_qkey, 0x11111111u);
	wr.opcode = IBV_WR_RDMA_WRITE;
	EXPECT_EQ(mroce::encode_send(wr, lim, ah_num_of, slot), EINVAL);
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = nullptr;
	EXPECT_EQ(mroce::encode_send(wr, lim, ah_num_of, slot), EINVAL);
}

// UC: the RC encoding of SEND/WRITE (no address handle), nothing else.
TEST(EncodeSend, UcSendAndWrite)
{
	std::vector<std::byte> slot(kSendSlot);
	ibv_sge sge{0x1000, 64, 0x42};
	ibv_send_wr wr{};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(0xabcd);
	wr.wr.rdma.remote_addr = 0x2000;
	wr.wr.rdma.rkey = 0x77;
	mroce_qp_limits lim{IBV_QPT_UC, 1, 1, 0};
	ASSERT_EQ(mroce::encode_send(wr, lim, nullptr, slot), 0);
	mroce_send_wqe w;
	std::memcpy(&w, slot.data(), sizeof(w));
	EXPECT_EQ(w.opcode, uint32_t(MROCE_WR_RDMA_WRITE_WITH_IMM));
	EXPECT_EQ(w.wr.rdma.remote_addr, 0x2000u);
	EXPECT_EQ(w.wr.rdma.rkey, 0x77u);
	EXPECT_EQ(w.imm_data, htobe32(0xabcd));
	EXPECT_EQ(w.num_sge, 1u);
	for (ibv_wr_opcode op : {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE}) {
		wr.opcode = op;
		EXPECT_EQ(mroce::encode_send(wr, lim, nullptr, slot), 0) << op;
	}
}

TEST(SqPost, UdSendIsQueued)
{
	TestRing sq(4, kSendSlot);
	ibv_send_wr wr{};
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = reinterpret_cast<ibv_ah *>(uintptr_t(0x10));
	wr.wr.ud.remote_qpn = 5;
	ibv_send_wr *bad = nullptr;
	unsigned queued = 9;
	mroce_qp_limits lim{IBV_QPT_UD, 1, 1, 0};
	EXPECT_EQ(mroce_sq_post(&sq.u, &lim, ah_num_of, &wr, &bad, &queued), 0);
	EXPECT_EQ(queued, 1u);
	EXPECT_EQ(sq.ctl()->producer, 1u);
}

TEST(RqPost, EncodesAndValidates)
{
	TestRing rq(4, kRecvSlot);
	ibv_sge sge[2] = {{0x1000, 100, 3}, {0x3000, 50, 4}};
	ibv_recv_wr wr{};
	wr.wr_id = 9;
	wr.sg_list = sge;
	wr.num_sge = 2;
	ibv_recv_wr *bad = nullptr;
	auto lim = rc_limits();
	ASSERT_EQ(mroce_rq_post(&rq.u, &lim, &wr, &bad), 0);
	mroce_recv_wqe w;
	std::memcpy(&w, rq.u.ring->slot(0), sizeof(w));
	EXPECT_EQ(w.wr_id, 9u);
	EXPECT_EQ(w.num_sge, 2u);
	mroce_sge s;
	std::memcpy(&s, rq.u.ring->slot(0) + sizeof(w) + sizeof(s), sizeof(s));
	EXPECT_EQ(s.addr, 0x3000u);
	EXPECT_EQ(s.lkey, 4u);
	wr.num_sge = 5;
	EXPECT_EQ(mroce_rq_post(&rq.u, &lim, &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(rq.ctl()->producer, 1u);
}

TEST(RqPost, FullRingReportsEnomem)
{
	TestRing rq(2, kRecvSlot);
	ibv_recv_wr w[3]{};
	w[0].next = &w[1];
	w[1].next = &w[2];
	ibv_recv_wr *bad = nullptr;
	auto lim = rc_limits();
	EXPECT_EQ(mroce_rq_post(&rq.u, &lim, w, &bad), ENOMEM);
	EXPECT_EQ(bad, &w[2]);
	EXPECT_EQ(rq.ctl()->producer, 2u);
}

} // namespace
