// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Per-path SACK scoreboard (receiver and sender) and DSN dedupe.
#include "util.h"

#include "mroce_core.h"

using namespace mroce_test;

namespace {

// A receiver scoreboard expecting PSN `first` (nothing missing before).
mroce_sack_rx fresh(uint32_t first = 0)
{
	mroce_sack_rx s;
	memset(&s, 0xa5, sizeof(s));	/* init must set every field */
	mroce_sack_rx_init(&s, first);
	return s;
}

bool bit(const mroce_sack_rx &s, uint32_t psn)
{
	uint32_t i = s.high - 1 - psn;
	return i < 256 && (s.map[i / 64] >> (i % 64) & 1);
}

mroce_ack ack_of(const mroce_sack_rx &s)
{
	mroce_ack a{};
	mroce_sack_rx_fill(&s, &a);
	return a;
}

}  // namespace

TEST(Scoreboard, InOrder)
{
	mroce_sack_rx s = fresh();
	for (uint32_t i = 0; i < 10; i++)
		EXPECT_FALSE(mroce_sack_rx_mark(&s, i));
	EXPECT_EQ(s.high, 10u);
	EXPECT_EQ(mroce_sack_rx_cum(&s), 10u);
	EXPECT_TRUE(mroce_sack_rx_mark(&s, 9));	/* duplicate */
	EXPECT_TRUE(mroce_sack_rx_mark(&s, 3));
}

TEST(Scoreboard, GapThenFill)
{
	mroce_sack_rx s = fresh();
	for (uint32_t i : {0u, 1u, 3u, 4u, 7u})
		EXPECT_FALSE(mroce_sack_rx_mark(&s, i));
	EXPECT_EQ(s.high, 8u);
	EXPECT_EQ(mroce_sack_rx_cum(&s), 2u);
	EXPECT_TRUE(bit(s, 3));
	EXPECT_FALSE(bit(s, 2));
	EXPECT_FALSE(bit(s, 5));
	EXPECT_FALSE(bit(s, 6));
	EXPECT_FALSE(mroce_sack_rx_mark(&s, 2));
	EXPECT_EQ(mroce_sack_rx_cum(&s), 5u);
	EXPECT_FALSE(mroce_sack_rx_mark(&s, 6));
	EXPECT_EQ(mroce_sack_rx_cum(&s), 5u);
	EXPECT_FALSE(mroce_sack_rx_mark(&s, 5));
	EXPECT_EQ(mroce_sack_rx_cum(&s), 8u);
}

TEST(Scoreboard, ShiftAcrossWords)
{
	mroce_sack_rx s = fresh();
	mroce_sack_rx_mark(&s, 0);
	/* psn 0 must survive shifts of 63, 64, 65 and 100 positions */
	uint32_t psn = 0;
	for (uint32_t step : {63u, 1u, 1u, 100u}) {
		psn += step;
		mroce_sack_rx_mark(&s, psn);
		EXPECT_TRUE(bit(s, 0)) << psn;
		EXPECT_TRUE(bit(s, psn));
		if (step > 1)
			EXPECT_FALSE(bit(s, psn - 1)) << psn;
	}
	EXPECT_EQ(mroce_sack_rx_cum(&s), 1u);
}

TEST(Scoreboard, JumpBeyondWindow)
{
	mroce_sack_rx s = fresh();
	mroce_sack_rx_mark(&s, 0);
	mroce_sack_rx_mark(&s, 300);
	EXPECT_EQ(s.high, 301u);
	/* everything older than the window counts as settled */
	EXPECT_EQ(mroce_sack_rx_cum(&s), 301u - 256u);
	EXPECT_TRUE(mroce_sack_rx_mark(&s, 10));	/* left window */
	EXPECT_FALSE(mroce_sack_rx_mark(&s, 100));
}

TEST(Scoreboard, Wraparound)
{
	mroce_sack_rx s = fresh(0xfffffffeu);
	for (uint32_t i : {0xfffffffeu, 0xffffffffu, 0u, 1u})
		EXPECT_FALSE(mroce_sack_rx_mark(&s, i));
	EXPECT_EQ(s.high, 2u);
	EXPECT_EQ(mroce_sack_rx_cum(&s), 2u);
}

// The sender's reading of an ACK agrees with the receiver's scoreboard.
TEST(Scoreboard, AckReportsExactlyWhatArrived)
{
	for (uint32_t first : {0u, 0x7fffff00u, 0xffffff80u}) {
		mroce_sack_rx s = fresh(first);
		std::set<uint32_t> got;
		for (uint32_t k : {0u, 1u, 2u, 5u, 64u, 65u, 130u, 200u, 250u}) {
			EXPECT_FALSE(mroce_sack_rx_mark(&s, first + k));
			got.insert(first + k);
		}
		mroce_ack a = ack_of(s);
		EXPECT_EQ(a.high_psn, first + 251);
		EXPECT_EQ(a.cum_psn, first + 3);
		for (uint32_t k = 0; k < 260; k++)
			EXPECT_EQ(mroce_sack_has(&a, first + k), got.count(first + k) == 1)
				<< std::hex << first << " + " << std::dec << k;
		/* before the first PSN: settled; at or above high: not reported */
		EXPECT_TRUE(mroce_sack_has(&a, first - 1));
		EXPECT_FALSE(mroce_sack_has(&a, a.high_psn));
		EXPECT_FALSE(mroce_sack_has(&a, a.high_psn + 1000));
	}
}

// Below the bitmap, only the cumulative point can report a PSN.
TEST(Scoreboard, HasBelowBitmapUsesCumulativePoint)
{
	mroce_ack a{};
	a.high_psn = 1000;
	a.cum_psn = 500;	/* a forged or stale ACK: cum far below high */
	EXPECT_TRUE(mroce_sack_has(&a, 499));
	EXPECT_FALSE(mroce_sack_has(&a, 500));	/* 499 below high - 1: no bit */
	a.sack[0] = 1;				/* bit 0: high - 1 */
	EXPECT_TRUE(mroce_sack_has(&a, 999));
	EXPECT_FALSE(mroce_sack_has(&a, 998));
}

// Sender: deliver a subset, check the ACK marks exactly those.
TEST(SenderSack, SelectiveAckMarksOnlyReceived)
{
	mroce_params prm = one_path_params();
	prm.ack_every = 1000;	/* one ACK for the whole burst */
	Pair pr(prm);
	ASSERT_EQ(pr.a.post(write_wr(8 * 1024), std::vector<uint8_t>(8 * 1024, 7), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 8u);
	for (int i : {0, 2, 3, 5, 7})
		deliver(pr.b, pk[i], 10 * kUs);
	/* gaps make the receiver ACK at once */
	auto acks = drain(pr.b, 10 * kUs);
	ASSERT_FALSE(acks.empty());
	mroce_pkt last = parse1(acks.back());
	EXPECT_EQ(last.ack.high_psn, 8u);
	EXPECT_EQ(last.ack.cum_psn, 1u);
	EXPECT_EQ(last.ack.cum_dsn, 1u);
	for (auto &w : acks)
		EXPECT_EQ(deliver(pr.a, w, 20 * kUs), 0);
	auto s = pstats(pr.a, 0);
	EXPECT_EQ(s.delivered_pkts, 5u);
	EXPECT_EQ(s.lost_pkts, 0u);	/* reorder window not yet over */
	EXPECT_EQ(s.inflight, 3u * (1024 + MROCE_PKT_OVERHEAD));
	/* after srtt + reorder window: exactly 1, 4, 6 are retransmitted */
	uint64_t t = mroce_conn_next_timer(pr.a.conn.get());
	ASSERT_LT(t, 1 * kMs);
	mroce_conn_timer(pr.a.conn.get(), t);
	auto re = drain(pr.a, t);
	std::vector<uint32_t> offs;
	for (auto &w : re) {
		mroce_pkt p = parse1(w);
		EXPECT_TRUE(p.flags & MROCE_F_RETX);
		offs.push_back(p.offset);
	}
	EXPECT_EQ(offs, (std::vector<uint32_t>{1024, 4096, 6144}));
	EXPECT_EQ(pstats(pr.a, 0).lost_pkts, 3u);
	for (auto &w : re)
		deliver(pr.b, w, t + 10 * kUs);
	for (auto &w : drain(pr.b, t + 10 * kUs))
		deliver(pr.a, w, t + 20 * kUs);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS);
	EXPECT_TRUE(mroce_conn_idle(pr.a.conn.get()));
	EXPECT_EQ(std::vector<uint8_t>(pr.b.mem.begin(), pr.b.mem.begin() + 8192),
		  std::vector<uint8_t>(8192, 7));
	EXPECT_EQ(pr.b.dup_placements, 0);
}

TEST(SenderSack, BogusAckOutsideWindowIgnored)
{
	Pair pr(one_path_params());
	ASSERT_EQ(pr.a.post(write_wr(2048), std::vector<uint8_t>(2048, 1), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 2u);
	mroce_pkt ack{};
	ack.version = 1;
	ack.opcode = MROCE_OP_ACK;
	ack.ack.high_psn = 5;	/* beyond snd_nxt = 2 */
	ack.ack.cum_psn = 5;
	EXPECT_EQ(mroce_conn_rx(pr.a.conn.get(), &ack, false, 1000), MROCE_E_WINDOW);
	ack.ack.high_psn = 2;
	ack.ack.cum_psn = 2;
	ack.ack.cum_dsn = 99;	/* beyond snd_dsn_nxt */
	EXPECT_EQ(mroce_conn_rx(pr.a.conn.get(), &ack, false, 1000), MROCE_E_WINDOW);
	ack.path = 3;		/* no such path */
	EXPECT_EQ(mroce_conn_rx(pr.a.conn.get(), &ack, false, 1000), MROCE_E_PATH);
	EXPECT_EQ(pstats(pr.a, 0).delivered_pkts, 0u);
	EXPECT_TRUE(pr.a.cqes.empty());
}

TEST(Dedupe, RetransmissionOnOtherPathPlacedOnce)
{
	Pair pr(one_path_params(2));
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 9), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 1u);
	mroce_pkt p = parse1(pk[0]);
	EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 1000), 0);
	/* the same DSN again, as if retransmitted on the other path */
	p.path ^= 1;
	p.psn = 0;
	p.flags |= MROCE_F_RETX;
	EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 2000), MROCE_E_DUP);
	EXPECT_EQ(pr.b.placed.size(), 1u);
	EXPECT_EQ(pr.b.dup_placements, 0);
	/*
	 * both paths are acknowledged so the sender learns on either, in one
	 * packet (the second path as a block)
	 */
	auto acks = drain(pr.b, 3000);
	ASSERT_EQ(acks.size(), 1u);
	auto v = ack_paths(acks[0]);
	EXPECT_EQ(std::set<uint32_t>(v.begin(), v.end()),
		  (std::set<uint32_t>{0, 1}));
	EXPECT_EQ(v.size(), 2u);
	EXPECT_EQ(pr.b.conn->st.rx_dup, 1u);
}

TEST(Dedupe, DsnOutsideWindowDropped)
{
	Pair pr(one_path_params());
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 9), 0), 0);
	auto pk = drain(pr.a, 0);
	mroce_pkt p = parse1(pk[0]);
	p.dsn += pr.b.conn->p.max_inflight;
	EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 1000), MROCE_E_WINDOW);
	EXPECT_TRUE(pr.b.placed.empty());
	p.dsn = 0;
	p.msn = 1000;		/* MSN far outside the message window */
	EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 1000), MROCE_E_WINDOW);
	EXPECT_TRUE(pr.b.placed.empty());
	p.msn = 0;
	EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 1000), 0);
	EXPECT_EQ(pr.b.placed.size(), 1u);
}

TEST(Dedupe, RnrIsNotAcknowledged)
{
	Pair pr(one_path_params());
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 10;
	ASSERT_EQ(pr.a.post(wr, std::vector<uint8_t>(10, 3), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 1u);
	EXPECT_EQ(deliver(pr.b, pk[0], 1000), 0);	/* no receive buffer */
	auto acks = drain(pr.b, 1000);
	ASSERT_GE(acks.size(), 1u);
	mroce_pkt nak = parse1(acks[0]);
	EXPECT_EQ(nak.ack.syndrome, MROCE_SYN_RNR);
	EXPECT_EQ(nak.ack.cum_dsn, 0u);		/* not accepted */
	EXPECT_EQ(nak.ack.high_psn, 0u);	/* nor SACKed */
	for (auto &w : acks)
		deliver(pr.a, w, 2000);
	EXPECT_TRUE(drain(pr.a, 3000).empty());	/* waits for the RNR timer */
	pr.b.post_recv(64);
	uint64_t t = mroce_conn_next_timer(pr.a.conn.get());
	ASSERT_LE(t, 2000 + 60 * kUs);
	auto re = drain(pr.a, t);
	ASSERT_EQ(re.size(), 1u);
	EXPECT_EQ(deliver(pr.b, re[0], t + 1000), 0);
	for (auto &w : drain(pr.b, t + 1000))
		deliver(pr.a, w, t + 2000);
	ASSERT_EQ(pr.b.cqes.size(), 1u);
	EXPECT_EQ(pr.b.cqes[0].kind, (uint32_t)MROCE_CQE_RECV);
	EXPECT_EQ(pr.b.cqes[0].byte_len, 10u);
	EXPECT_EQ(pr.b.recvs[0][9], 3);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, 0u);
}

/*
 * rnr_retry 2: the message survives two RNR rounds and fails with
 * RNR_RETRY_EXC on the third; the wait follows the peer's timer code.
 */
TEST(Dedupe, RnrRetryExceeded)
{
	mroce_params pa = one_path_params();
	pa.rnr_retry = 2;
	mroce_params pb = one_path_params();
	pb.min_rnr_timer = 14;		/* 1.28 ms */
	Pair pr(pa, pb);
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 10;
	ASSERT_EQ(pr.a.post(wr, std::vector<uint8_t>(10, 3), 0), 0);
	uint64_t now = 0;
	for (int round = 0; round < 3; round++) {
		auto pk = drain(pr.a, now);
		ASSERT_EQ(pk.size(), 1u) << "round " << round;
		EXPECT_EQ(deliver(pr.b, pk[0], now + 1000), 0);
		auto acks = drain(pr.b, now + 1000);
		ASSERT_GE(acks.size(), 1u);
		mroce_pkt nak = parse1(acks[0]);
		EXPECT_EQ(nak.ack.syndrome, MROCE_SYN_RNR);
		EXPECT_EQ(nak.ack.rnr_timer, 14);
		for (auto &w : acks)
			deliver(pr.a, w, now + 2000);
		if (round < 2) {
			EXPECT_TRUE(pr.a.cqes.empty()) << "round " << round;
			EXPECT_TRUE(drain(pr.a, now + 2000 + kMs).empty());
			now = mroce_conn_next_timer(pr.a.conn.get());
			EXPECT_GE(now, 2000 + 1280 * kUs);
		}
	}
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_RNR_RETRY_EXC);
	EXPECT_EQ(pr.a.conn->st.rnr_rounds, 3u);
}
