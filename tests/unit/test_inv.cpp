// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// SEND_INV: the responder's invalidate callback runs once, in MSN order,
// after the message is placed and before its receive completion; a
// refusal fails the message with INV_REQ on both sides.
#include "util.h"

using namespace mroce_test;

namespace {

struct InvLog {
	std::vector<uint32_t> rkeys;
	size_t cqes_before = 0;	/* receive completions when it ran */
	int ret = 0;
	Endpoint *ep = nullptr;
};

InvLog *g_log;

std::vector<uint8_t> pattern(size_t n, uint8_t seed)
{
	std::vector<uint8_t> v(n);
	for (size_t i = 0; i < n; i++)
		v[i] = (uint8_t)(seed * 31 + i * 7);
	return v;
}

int inv_cb(void *ctx, uint32_t rkey)
{
	g_log->rkeys.push_back(rkey);
	g_log->cqes_before = g_log->ep->cqes.size();
	return g_log->ret;
}

mroce_wr send_inv_wr(uint32_t len, uint32_t rkey)
{
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND_INV;
	wr.length = len;
	wr.imm = rkey;
	return wr;
}

void exchange(Pair &pr, uint64_t &t)
{
	for (int i = 0; i < 8; i++) {
		t += 1000;
		for (auto &w : drain(pr.a, t))
			deliver(pr.b, w, t);
		for (auto &w : drain(pr.b, t))
			deliver(pr.a, w, t);
	}
}

}  // namespace

TEST(SendInv, InvalidateRunsOnceBeforeTheReceiveCompletion)
{
	Pair pr(one_path_params());
	InvLog log;
	log.ep = &pr.b;
	g_log = &log;
	pr.b.ops.invalidate = inv_cb;
	pr.b.post_recv(4096);
	pr.b.post_recv(64);
	ASSERT_EQ(pr.a.post(send_inv_wr(3000, 0xabcd12), pattern(3000, 1), 0), 0);
	ASSERT_EQ(pr.a.post(send_inv_wr(10, 0x777701), pattern(10, 2), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_GE(pk.size(), 4u);
	/* the second message first, then the first one's segments backwards */
	uint64_t t = 1000;
	for (size_t i = pk.size(); i-- > 0;)
		deliver(pr.b, pk[i], t);
	/* a retransmitted copy is not invalidated again */
	EXPECT_EQ(deliver(pr.b, pk[0], t), MROCE_E_DUP);
	EXPECT_EQ(log.rkeys, (std::vector<uint32_t>{0xabcd12, 0x777701}));
	EXPECT_EQ(log.cqes_before, 1u);	/* ran before the 2nd completion */
	ASSERT_EQ(pr.b.cqes.size(), 2u);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(pr.b.cqes[i].kind, (uint32_t)MROCE_CQE_RECV);
		EXPECT_TRUE(pr.b.cqes[i].with_inv);
		EXPECT_EQ(pr.b.cqes[i].status, 0u);
	}
	EXPECT_EQ(pr.b.cqes[0].imm, 0xabcd12u);
	EXPECT_EQ(pr.b.cqes[1].imm, 0x777701u);
	EXPECT_EQ(std::vector<uint8_t>(pr.b.recvs[0].begin(),
				       pr.b.recvs[0].begin() + 3000),
		  pattern(3000, 1));
	exchange(pr, t);
	ASSERT_EQ(pr.a.cqes.size(), 2u);
	EXPECT_EQ(pr.a.cqes[0].status, 0u);
	EXPECT_EQ(pr.a.cqes[1].status, 0u);
	g_log = nullptr;
}

TEST(SendInv, RefusedInvalidateFailsTheMessage)
{
	Pair pr(one_path_params());
	InvLog log;
	log.ep = &pr.b;
	log.ret = -MROCE_SYN_INV_REQ;
	g_log = &log;
	pr.b.ops.invalidate = inv_cb;
	pr.b.post_recv(64);
	ASSERT_EQ(pr.a.post(send_inv_wr(10, 0x42), pattern(10, 3), 0), 0);
	uint64_t t = 0;
	exchange(pr, t);
	EXPECT_EQ(log.rkeys, (std::vector<uint32_t>{0x42}));
	EXPECT_TRUE(pr.b.cqes.empty());	/* no successful receive */
	EXPECT_NE(pr.b.conn->state, (uint32_t)MROCE_CONN_OK);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_REM_INV_REQ);
	g_log = nullptr;
}

TEST(SendInv, WithoutCallbackOnlyReportsTheRkey)
{
	Pair pr(one_path_params());
	pr.b.post_recv(64);
	ASSERT_EQ(pr.a.post(send_inv_wr(10, 0x5a5a01), pattern(10, 4), 0), 0);
	uint64_t t = 0;
	exchange(pr, t);
	ASSERT_EQ(pr.b.cqes.size(), 1u);
	EXPECT_TRUE(pr.b.cqes[0].with_inv);
	EXPECT_EQ(pr.b.cqes[0].imm, 0x5a5a01u);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, 0u);
}
