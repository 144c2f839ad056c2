// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Loss detection: RACK (time-based, per path) versus reordering, RTO with
// exponential backoff, tail-loss probes.
#include <deque>

#include "util.h"

using namespace mroce_test;

namespace {

// Establish an RTT sample of rtt on path 0 with one small WRITE.
void warm_up(Pair &pr, uint64_t &now, uint64_t rtt)
{
	ASSERT_EQ(pr.a.post(write_wr(10), std::vector<uint8_t>(10, 1), now), 0);
	auto pk = drain(pr.a, now);
	ASSERT_EQ(pk.size(), 1u);
	deliver(pr.b, pk[0], now + rtt / 2);
	auto acks = drain(pr.b, now + rtt / 2);
	ASSERT_EQ(acks.size(), 1u);
	now += rtt;
	deliver(pr.a, acks[0], now);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
}

}  // namespace

TEST(Rack, ReorderingWithinWindowIsNotLoss)
{
	Pair pr(one_path_params());
	uint64_t now = 0;
	warm_up(pr, now, 100 * kUs);
	ASSERT_EQ(pr.a.post(write_wr(4096), std::vector<uint8_t>(4096, 2), now), 0);
	auto pk = drain(pr.a, now);
	ASSERT_EQ(pk.size(), 4u);
	/* 1, 2, 3 arrive; 0 is late but arrives before srtt + reo_wnd */
	for (int i : {1, 2, 3})
		deliver(pr.b, pk[i], now + 50 * kUs);
	for (auto &w : drain(pr.b, now + 50 * kUs))
		deliver(pr.a, w, now + 100 * kUs);
	EXPECT_EQ(pstats(pr.a, 0).lost_pkts, 0u);
	uint64_t t = mroce_conn_next_timer(pr.a.conn.get());
	/* the RACK deadline: sent + srtt + max(10 us, min_rtt / 4) */
	EXPECT_EQ(t, now + 100 * kUs + 25 * kUs);
	deliver(pr.b, pk[0], now + 110 * kUs);
	for (auto &w : drain(pr.b, now + 110 * kUs))
		deliver(pr.a, w, now + 120 * kUs);
	mroce_conn_timer(pr.a.conn.get(), t);
	EXPECT_TRUE(drain(pr.a, t).empty());
	EXPECT_EQ(pstats(pr.a, 0).lost_pkts, 0u);
	EXPECT_EQ(pstats(pr.a, 0).retx_pkts, 0u);
	EXPECT_EQ(pr.a.cqes.size(), 2u);
	EXPECT_EQ(pr.b.dup_placements, 0);
}

TEST(Rack, LossDetectedAfterReorderWindowOnly)
{
	Pair pr(one_path_params());
	uint64_t now = 0;
	warm_up(pr, now, 100 * kUs);
	ASSERT_EQ(pr.a.post(write_wr(4096), std::vector<uint8_t>(4096, 2), now), 0);
	auto pk = drain(pr.a, now);
	for (int i : {1, 2, 3})
		deliver(pr.b, pk[i], now + 50 * kUs);
	for (auto &w : drain(pr.b, now + 50 * kUs))
		deliver(pr.a, w, now + 100 * kUs);
	/* just before the deadline: nothing */
	mroce_conn_timer(pr.a.conn.get(), now + 124 * kUs);
	EXPECT_TRUE(drain(pr.a, now + 124 * kUs).empty());
	mroce_conn_timer(pr.a.conn.get(), now + 125 * kUs);
	auto re = drain(pr.a, now + 125 * kUs);
	ASSERT_EQ(re.size(), 1u);
	mroce_pkt p = parse1(re[0]);
	EXPECT_EQ(p.offset, 0u);
	EXPECT_EQ(p.dsn, 1u);		/* same DSN, new PSN */
	EXPECT_EQ(p.psn, 5u);
	EXPECT_TRUE(p.flags & MROCE_F_RETX);
	EXPECT_EQ(pstats(pr.a, 0).lost_pkts, 1u);
	/* a loss event cuts the window (once per RTT) */
	EXPECT_LT(pstats(pr.a, 0).cwnd, pr.a.conn->p.cwnd_init);
}

/*
 * A packet declared lost by RACK whose original then shows up in a SACK was
 * only late: the loss is counted spurious and the path's reorder window
 * grows (doubling from a quarter of min RTT, capped at srtt).
 */
TEST(Rack, SpuriousLossWidensReorderWindow)
{
	Pair pr(one_path_params());
	uint64_t now = 0;
	warm_up(pr, now, 100 * kUs);
	uint64_t base = pstats(pr.a, 0).reo_wnd_ns;
	EXPECT_EQ(base, 25 * kUs);
	ASSERT_EQ(pr.a.post(write_wr(4096), std::vector<uint8_t>(4096, 2), now), 0);
	auto pk = drain(pr.a, now);
	ASSERT_EQ(pk.size(), 4u);
	for (int i : {1, 2, 3})
		deliver(pr.b, pk[i], now + 50 * kUs);
	for (auto &w : drain(pr.b, now + 50 * kUs))
		deliver(pr.a, w, now + 100 * kUs);
	mroce_conn_timer(pr.a.conn.get(), now + 125 * kUs);
	auto re = drain(pr.a, now + 125 * kUs);
	ASSERT_EQ(re.size(), 1u);
	EXPECT_EQ(pstats(pr.a, 0).lost_pkts, 1u);
	EXPECT_EQ(pstats(pr.a, 0).spurious, 0u);
	/* the original arrives after all, before the retransmission */
	deliver(pr.b, pk[0], now + 130 * kUs);
	for (auto &w : drain(pr.b, now + 130 * kUs))
		deliver(pr.a, w, now + 140 * kUs);
	EXPECT_EQ(pstats(pr.a, 0).spurious, 1u);
	EXPECT_EQ(pstats(pr.a, 0).reo_wnd_ns, base + 25 * kUs);
	/* the retransmission is a harmless duplicate; data placed once */
	deliver(pr.b, re[0], now + 150 * kUs);
	EXPECT_EQ(pr.b.dup_placements, 0);
	EXPECT_EQ(pr.a.cqes.size(), 2u);
}

/*
 * An RTO whose packet turns out to have arrived is counted spurious; the
 * window cut stands (see the spec, 7.5).
 */
TEST(Rto, SpuriousRtoIsCounted)
{
	Pair pr(one_path_params());
	uint64_t now = 0;
	warm_up(pr, now, 100 * kUs);
	uint32_t before = pstats(pr.a, 0).cwnd;
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), now), 0);
	auto pk = drain(pr.a, now);
	ASSERT_EQ(pk.size(), 1u);
	/* the tail-loss probe goes first, then the RTO fires */
	uint64_t t = 0;
	for (int k = 0; k < 4 && !pstats(pr.a, 0).rtos; k++) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		mroce_conn_timer(pr.a.conn.get(), t);
		EXPECT_EQ(drain(pr.a, t).size(), 1u);
	}
	EXPECT_EQ(pstats(pr.a, 0).rtos, 1u);
	EXPECT_EQ(pstats(pr.a, 0).cwnd, pr.a.conn->p.cwnd_min);
	deliver(pr.b, pk[0], t + 10 * kUs);	/* the original, late */
	for (auto &w : drain(pr.b, t + 10 * kUs))
		deliver(pr.a, w, t + 20 * kUs);
	EXPECT_EQ(pstats(pr.a, 0).spurious, 1u);
	EXPECT_LT(pstats(pr.a, 0).cwnd, before);
	EXPECT_EQ(pstats(pr.a, 0).reo_wnd_ns, 25 * kUs);	/* RACK's is untouched */
}

TEST(Rack, OnlyLaterDeliveryOnSamePathTriggers)
{
	/* a delivery on path 1 says nothing about path 0 */
	Pair pr(one_path_params(2));
	ASSERT_EQ(pr.a.post(write_wr(2048), std::vector<uint8_t>(2048, 2), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 2u);
	ASSERT_NE(parse1(pk[0]).path, parse1(pk[1]).path);
	deliver(pr.b, pk[1], 50 * kUs);
	for (auto &w : drain(pr.b, 50 * kUs))
		deliver(pr.a, w, 100 * kUs);
	mroce_conn_timer(pr.a.conn.get(), 200 * kUs);
	EXPECT_EQ(pstats(pr.a, 0).lost_pkts + pstats(pr.a, 1).lost_pkts, 0u);
	/*
	 * The other one waits for its path's tail-loss probe, which takes
	 * the connection's RTT (100 us) while the path has none of its own:
	 * 2 x srtt + ack_delay, not rto_init (1 ms).
	 */
	EXPECT_EQ(mroce_conn_next_timer(pr.a.conn.get()),
		  200 * kUs + mroce_send_hold_ns(pr.a.conn.get()));
}

TEST(Rto, ExponentialBackoffThenPathDown)
{
	mroce_params prm = one_path_params();
	prm.retry_budget = 2;
	Pair pr(prm);
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), 0), 0);
	ASSERT_EQ(drain(pr.a, 0).size(), 1u);
	uint64_t t = mroce_conn_next_timer(pr.a.conn.get());
	EXPECT_EQ(t, prm.rto_init_ns);
	std::vector<uint64_t> fires;
	for (int k = 0; k < 3; k++) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		fires.push_back(t);
		mroce_conn_timer(pr.a.conn.get(), t);
		auto re = drain(pr.a, t);
		if (k < 2) {
			ASSERT_EQ(re.size(), 1u) << k;
			EXPECT_TRUE(parse1(re[0]).flags & MROCE_F_RETX);
		}
	}
	EXPECT_EQ(fires[1] - fires[0], 2 * prm.rto_init_ns);
	EXPECT_EQ(fires[2] - fires[1], 4 * prm.rto_init_ns);
	auto s = pstats(pr.a, 0);
	EXPECT_EQ(s.rtos, 3u);
	EXPECT_EQ(s.state, (uint32_t)MROCE_PATH_DOWN);
	EXPECT_EQ(s.cwnd, prm.cwnd_min);
	/* the down path is probed; unanswered, the budget runs out */
	uint64_t now = t;
	int probes = 0;
	while (pr.a.cqes.empty() && now < t + 100 * kMs) {
		for (auto &w : drain(pr.a, now))
			probes += is_op(w, MROCE_OP_PROBE);
		now = mroce_conn_next_timer(pr.a.conn.get());
		ASSERT_NE(now, UINT64_MAX);
		mroce_conn_timer(pr.a.conn.get(), now);
	}
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_RETRY_EXC);
	EXPECT_GE(probes, 2);
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_ERROR);
	EXPECT_EQ(mroce_conn_post(pr.a.conn.get(), &pr.a.conn->smsg[0].wr, now),
		  MROCE_E_STATE);
}

/*
 * A host stall while every path is down (the timer runs 50 probe periods
 * late) costs one round of the retry budget, not 50: the next round gets a
 * full probe period, in which an answered probe brings the path back.
 */
TEST(Rto, StallWhileAllDownCountsOneRound)
{
	mroce_params prm = one_path_params();
	prm.retry_budget = 2;
	Pair pr(prm);
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), 0), 0);
	ASSERT_EQ(drain(pr.a, 0).size(), 1u);
	uint64_t t = 0;
	while (pstats(pr.a, 0).state != MROCE_PATH_DOWN) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.a.conn.get(), t);
		drain(pr.a, t);
	}
	uint64_t late = t + 50 * prm.probe_ns;
	/* the late timer, run again as an embedder does for a past deadline */
	for (int k = 0; k < 5; k++)
		mroce_conn_timer(pr.a.conn.get(), late);
	EXPECT_TRUE(pr.a.cqes.empty());
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_OK);
	EXPECT_EQ(pr.a.conn->down_rounds, 1u);
	/* the probe sent now is answered: the path comes back, no error */
	auto out = drain(pr.a, late);
	bool probed = false;
	for (auto &w : out) {
		if (!is_op(w, MROCE_OP_PROBE))
			continue;
		probed = true;
		deliver(pr.b, w, late + 10 * kUs);
	}
	ASSERT_TRUE(probed);
	for (auto &w : drain(pr.b, late + 10 * kUs))
		deliver(pr.a, w, late + 20 * kUs);
	EXPECT_EQ(pstats(pr.a, 0).state, (uint32_t)MROCE_PATH_UP);
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_OK);
}

/*
 * An RTT above the initial RTO: the original arrives after the RTO resent
 * it.  Its ACK covers no live packet, but the echoed timestamp is an RTT
 * sample and the SACK proves the path works: no path down, RTO learnt.
 */
TEST(Rto, LateOriginalTeachesRttAndKeepsPathUp)
{
	mroce_params prm = one_path_params();
	Pair pr(prm);
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), 0), 0);
	auto orig = drain(pr.a, 0);
	ASSERT_EQ(orig.size(), 1u);
	uint64_t t = mroce_conn_next_timer(pr.a.conn.get());
	ASSERT_EQ(t, prm.rto_init_ns);
	mroce_conn_timer(pr.a.conn.get(), t);
	ASSERT_EQ(drain(pr.a, t).size(), 1u);	/* the RTO's resend, lost too */
	EXPECT_EQ(pr.a.conn->path[0].consec_rto, 1u);
	uint64_t back = 3 * prm.rto_init_ns / 2;
	deliver(pr.b, orig[0], back - 100 * kUs);
	for (auto &w : drain(pr.b, back - 100 * kUs))
		deliver(pr.a, w, back);
	EXPECT_EQ(pstats(pr.a, 0).spurious, 1u);
	EXPECT_EQ(pr.a.conn->path[0].consec_rto, 0u);
	EXPECT_EQ(pr.a.conn->path[0].backoff, 0u);
	EXPECT_EQ(pstats(pr.a, 0).state, (uint32_t)MROCE_PATH_UP);
	EXPECT_NEAR((double)pstats(pr.a, 0).srtt_ns, (double)back, 2.0 * kUs);
	EXPECT_GT(mroce_conn_next_timer(pr.a.conn.get()), 2 * back);
	EXPECT_EQ(pr.a.cqes.size(), 1u);
}

/* With an RTT above probe_ns, the answer to an earlier probe counts. */
TEST(Probe, AnswerToEarlierProbeBringsPathUp)
{
	mroce_params prm = one_path_params();
	prm.retry_budget = 5;
	Pair pr(prm);
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), 0), 0);
	ASSERT_EQ(drain(pr.a, 0).size(), 1u);
	uint64_t t = 0;
	while (pstats(pr.a, 0).state != MROCE_PATH_DOWN) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.a.conn.get(), t);
		drain(pr.a, t);
	}
	std::vector<std::vector<uint8_t>> probes;
	for (int k = 0; k < 2; k++) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		mroce_conn_timer(pr.a.conn.get(), t);
		for (auto &w : drain(pr.a, t))
			if (is_op(w, MROCE_OP_PROBE))
				probes.push_back(w);
	}
	ASSERT_GE(probes.size(), 2u);
	deliver(pr.b, probes[0], t + 10 * kUs);
	for (auto &w : drain(pr.b, t + 10 * kUs))
		deliver(pr.a, w, t + 20 * kUs);
	EXPECT_EQ(pstats(pr.a, 0).state, (uint32_t)MROCE_PATH_UP);
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_OK);
}

/* rto_max caps the backoff, never the measured RTT (a 150 ms path). */
TEST(Rto, MeasuredRttAboveRtoMaxIsKept)
{
	mroce_params prm = one_path_params();
	prm.rto_init_ns = 1 * kMs;
	prm.rto_max_ns = 64 * kMs;
	Pair pr(prm);
	uint64_t now = 0;
	warm_up(pr, now, 150 * kMs);
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), now), 0);
	ASSERT_EQ(drain(pr.a, now).size(), 1u);
	/* the first timer is the TLP (2 srtt) or the RTO, never < srtt */
	EXPECT_GE(mroce_conn_next_timer(pr.a.conn.get()), now + 150 * kMs);
}

/* An all-down round lasts the paths' measured RTO when that exceeds probe_ns. */
TEST(Rto, AllDownRoundLastsMeasuredRto)
{
	mroce_params prm = one_path_params();
	prm.rto_init_ns = 1 * kMs;
	prm.rto_max_ns = 64 * kMs;
	prm.probe_ns = 1 * kMs;
	prm.retry_budget = 2;
	Pair pr(prm);
	uint64_t now = 0;
	warm_up(pr, now, 150 * kMs);
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), now), 0);
	drain(pr.a, now);
	uint64_t t = now;
	while (pstats(pr.a, 0).state != MROCE_PATH_DOWN) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.a.conn.get(), t);
		drain(pr.a, t);
	}
	uint64_t down = t;
	/* probes every probe_ns, but the budget lasts 3 rounds of >= 150 ms */
	while (pr.a.conn->state == MROCE_CONN_OK && t < down + 10 * 1000 * kMs) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.a.conn.get(), t);
		drain(pr.a, t);
	}
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_ERROR);
	EXPECT_GE(t - down, 3 * 150 * kMs);
}

/*
 * A long READ response whose responder's ACKs never come (they wait behind
 * the response data in its transmit queue; here they are lost): the
 * response segments themselves prove the request arrived and that the
 * peer is alive, so the request is neither timed out nor resent and the
 * READ completes.  Before, the request's path timed out three times, went
 * down, and the silent probe rounds ended the QP in RETRY_EXC while the
 * response was still arriving (the CI failure of ib_read_bw between two
 * guests).
 */
TEST(Rto, ReadResponseKeepsTheRequestAlive)
{
	mroce_params prm = one_path_params();
	prm.retry_budget = 1;
	Pair pr(prm);
	const uint32_t len = 128 * 1024;
	for (uint32_t k = 0; k < len; k++)
		pr.b.mem[k] = (uint8_t)(k * 7 + 3);
	ASSERT_EQ(pr.a.post(read_wr(len), std::vector<uint8_t>(len), 0), 0);
	std::deque<Wire> to_a;	/* b's response segments, one per step */
	uint64_t now = 0;
	int resp = 0, acks_lost = 0, req_sent = 0;
	for (; now < 2000 * kMs && pr.a.cqes.empty(); now += 500 * kUs) {
		for (int i = 0; i < 2; i++) {
			Endpoint &e = i ? pr.b : pr.a;
			if (mroce_conn_next_timer(e.conn.get()) <= now)
				mroce_conn_timer(e.conn.get(), now);
		}
		for (auto &w : drain(pr.a, now)) {
			req_sent += is_op(w, MROCE_OP_READ_REQ);
			deliver(pr.b, w, now);
		}
		for (auto &w : drain(pr.b, now)) {
			if (is_op(w, MROCE_OP_ACK))
				acks_lost++;
			else
				to_a.push_back(w);
		}
		if (!to_a.empty()) {
			resp += is_op(to_a.front(), MROCE_OP_READ_RESP);
			deliver(pr.a, to_a.front(), now);
			to_a.pop_front();
		}
	}
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS);
	EXPECT_EQ(pr.a.bufs.at(1), std::vector<uint8_t>(pr.b.mem.begin(),
							 pr.b.mem.begin() + len));
	EXPECT_GE(resp, 128);
	EXPECT_GT(acks_lost, 0);
	EXPECT_EQ(req_sent, 1) << "the request was resent";
	EXPECT_EQ(pstats(pr.a, 0).rtos, 0u);
	EXPECT_EQ(pr.a.conn->down_rounds, 0u);
	/* the response took far longer than the budget of silent rounds */
	EXPECT_GT(now, 50 * kMs);
}

/*
 * A responder whose requester falls silent while a READ response is out
 * (its host stopped, say): the requester owns the timeout, as in RoCE.
 * The responder's paths go down and it probes, ever more slowly after
 * retry_budget rounds, but it does not fail; when the requester answers
 * again the paths come back and the response is delivered.  A WR of the
 * responder's own then gets the whole budget at the full probe rate.
 */
TEST(Rto, ResponderWithoutWrsDoesNotGiveUp)
{
	mroce_params prm = one_path_params(2);
	prm.retry_budget = 2;
	Pair pr(prm);
	const uint32_t len = 8 * 1024;
	ASSERT_EQ(pr.a.post(read_wr(len), std::vector<uint8_t>(len), 0), 0);
	for (auto &w : drain(pr.a, 0))
		deliver(pr.b, w, 10 * kUs);
	/* b's response and everything after it are lost: a is stopped */
	uint64_t t = 10 * kUs;
	drain(pr.b, t);
	std::vector<uint64_t> probe_at;
	while (t < 5000 * kMs) {
		t = mroce_conn_next_timer(pr.b.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.b.conn.get(), t);
		for (auto &w : drain(pr.b, t))
			if (is_op(w, MROCE_OP_PROBE) && parse1(w).path == 0)
				probe_at.push_back(t);
		ASSERT_EQ(pr.b.conn->state, (uint32_t)MROCE_CONN_OK) << t;
	}
	EXPECT_EQ(pstats(pr.b, 0).state, (uint32_t)MROCE_PATH_DOWN);
	EXPECT_EQ(pstats(pr.b, 1).state, (uint32_t)MROCE_PATH_DOWN);
	ASSERT_GE(probe_at.size(), 10u);
	uint64_t last_gap = probe_at.back() - probe_at[probe_at.size() - 2];
	EXPECT_GE(last_gap, (prm.probe_ns << MROCE_PROBE_SHIFT_MAX) -
			    prm.probe_ns);
	EXPECT_LE(last_gap, (prm.probe_ns << MROCE_PROBE_SHIFT_MAX) +
			    prm.probe_ns);
	/* a is back: it answers b's probes, b resends, the READ completes */
	for (int k = 0; k < 200 && pr.a.cqes.empty(); k++) {
		t += 100 * kUs;
		if (mroce_conn_next_timer(pr.b.conn.get()) <= t)
			mroce_conn_timer(pr.b.conn.get(), t);
		if (mroce_conn_next_timer(pr.a.conn.get()) <= t)
			mroce_conn_timer(pr.a.conn.get(), t);
		for (auto &w : drain(pr.b, t))
			deliver(pr.a, w, t);
		for (auto &w : drain(pr.a, t))
			deliver(pr.b, w, t);
	}
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS);
	EXPECT_EQ(pr.b.conn->probe_shift, 0u);
	/* b's own WR into a silent a: the budget, probes at full rate */
	for (int k = 0; k < 20; k++) {
		t += 100 * kUs;
		mroce_conn_timer(pr.b.conn.get(), t);
		drain(pr.b, t);
	}
	ASSERT_EQ(pr.b.post(write_wr(100), std::vector<uint8_t>(100, 4), t), 0);
	uint64_t posted = t;
	while (pr.b.conn->state == MROCE_CONN_OK && t < posted + 5000 * kMs) {
		drain(pr.b, t);
		t = mroce_conn_next_timer(pr.b.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.b.conn.get(), t);
	}
	EXPECT_EQ(pr.b.conn->err_status, (uint32_t)MROCE_ST_RETRY_EXC);
	EXPECT_LT(t - posted, 100 * kMs);
}

/*
 * Every path down, but ACKs keep proving that our packets arrive (a deep
 * queue, not an outage): those rounds do not count against the budget.
 * When the peer falls silent, the budget runs out as before.
 */
TEST(Rto, RoundsWithAcksFromThePeerDoNotCount)
{
	mroce_params prm = one_path_params();
	prm.retry_budget = 1;
	Pair pr(prm);
	ASSERT_EQ(pr.a.post(write_wr(4096), std::vector<uint8_t>(4096, 2), 0), 0);
	auto orig = drain(pr.a, 0);
	ASSERT_EQ(orig.size(), 4u);
	uint64_t t = 0;
	while (pstats(pr.a, 0).state != MROCE_PATH_DOWN) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.a.conn.get(), t);
		drain(pr.a, t);	/* resends and probes are lost */
	}
	/* four rounds, each with one late original arriving and ACKed */
	for (size_t k = 0; k < orig.size(); k++) {
		deliver(pr.b, orig[k], t + 10 * kUs);
		/* past the receiver's delayed-ACK bound */
		for (auto &w : drain(pr.b, t + 50 * kUs))
			deliver(pr.a, w, t + 60 * kUs);
		/* to the end of this round (probes go out, and are lost) */
		t = pr.a.conn->down_round_due_ns;
		mroce_conn_timer(pr.a.conn.get(), t);
		drain(pr.a, t);
		ASSERT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_OK) << "round " << k;
	}
	EXPECT_EQ(pr.a.conn->down_rounds, 0u);
	/*
	 * The write completed; a new one waits for the paths.  Silence:
	 * budget 1 means the second silent round fails.
	 */
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 3), t), 0);
	drain(pr.a, t);
	for (int k = 0; k < 10 && pr.a.conn->state == MROCE_CONN_OK; k++) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.a.conn.get(), t);
		drain(pr.a, t);
	}
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_ERROR);
	EXPECT_EQ(pr.a.conn->err_status, (uint32_t)MROCE_ST_RETRY_EXC);
}

TEST(Rto, AckResetsBackoff)
{
	Pair pr(one_path_params());
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), 0), 0);
	drain(pr.a, 0);
	uint64_t t = mroce_conn_next_timer(pr.a.conn.get());
	mroce_conn_timer(pr.a.conn.get(), t);
	auto re = drain(pr.a, t);
	ASSERT_EQ(re.size(), 1u);
	deliver(pr.b, re[0], t + 10 * kUs);
	for (auto &w : drain(pr.b, t + 10 * kUs))
		deliver(pr.a, w, t + 20 * kUs);
	EXPECT_EQ(pr.a.conn->path[0].backoff, 0u);
	EXPECT_EQ(pr.a.conn->path[0].consec_rto, 0u);
	EXPECT_EQ(pr.a.cqes.size(), 1u);
}

TEST(Tlp, ProbeResendsNewestPacketBeforeRto)
{
	mroce_params prm = one_path_params();
	prm.rto_min_ns = 1 * kMs;
	Pair pr(prm);
	uint64_t now = 0;
	warm_up(pr, now, 20 * kUs);
	ASSERT_EQ(pr.a.post(write_wr(3072), std::vector<uint8_t>(3072, 2), now), 0);
	auto pk = drain(pr.a, now);
	ASSERT_EQ(pk.size(), 3u);
	/* the whole tail is lost: no ACK comes */
	uint64_t t = mroce_conn_next_timer(pr.a.conn.get());
	/* the hold this sender allows: srtt / 4 = 5 us, rounded down to 4 */
	EXPECT_EQ(mroce_send_hold_ns(pr.a.conn.get()), 4 * kUs);
	EXPECT_EQ(t, now + 2 * 20 * kUs + 4 * kUs);
	mroce_conn_timer(pr.a.conn.get(), t);
	auto probe = drain(pr.a, t);
	ASSERT_EQ(probe.size(), 1u);
	mroce_pkt p = parse1(probe[0]);
	EXPECT_TRUE(p.flags & MROCE_F_TLP);
	EXPECT_TRUE(p.flags & MROCE_F_ACKREQ);
	EXPECT_EQ(p.offset, 2048u);	/* the newest one */
	EXPECT_EQ(pstats(pr.a, 0).tlps, 1u);
	/* its ACK reveals the holes; RACK then recovers them, no RTO */
	deliver(pr.b, probe[0], t + 10 * kUs);
	for (auto &w : drain(pr.b, t + 10 * kUs))
		deliver(pr.a, w, t + 20 * kUs);
	uint64_t t2 = t + 20 * kUs;
	auto re = drain(pr.a, t2);
	ASSERT_EQ(re.size(), 2u);
	EXPECT_EQ(parse1(re[0]).offset, 0u);
	EXPECT_EQ(parse1(re[1]).offset, 1024u);
	for (auto &w : re) {
		EXPECT_TRUE(parse1(w).flags & MROCE_F_ACKREQ);
		deliver(pr.b, w, t2 + 10 * kUs);
	}
	for (auto &w : drain(pr.b, t2 + 10 * kUs))
		deliver(pr.a, w, t2 + 20 * kUs);
	EXPECT_EQ(pr.a.cqes.size(), 2u);
	EXPECT_EQ(pstats(pr.a, 0).rtos, 0u);
	EXPECT_EQ(pr.b.dup_placements, 0);
}

/*
 * A delayed ACK says how long the receiver held its trigger (ack_delay):
 * the sender's smoothed RTT leaves the hold out, its minimum does not, and
 * a delay that would take the sample below the path's minimum is ignored.
 */
TEST(Rtt, AckDelayIsLeftOutOfTheSample)
{
	mroce_params prm = one_path_params();
	const uint64_t rtt = 20 * kUs, hold = 300 * kUs;
	for (bool lie : {false, true}) {
		Pair pr(prm);
		uint64_t now = 0;
		warm_up(pr, now, rtt);
		ASSERT_EQ(pstats(pr.a, 0).min_rtt_ns, rtt);
		ASSERT_EQ(pr.a.post(write_wr(2048), std::vector<uint8_t>(2048, 3),
				    now), 0);
		auto pk = drain(pr.a, now);
		ASSERT_EQ(pk.size(), 2u);
		/* only the first arrives: not LAST, so its ACK is delayed */
		ASSERT_EQ(deliver(pr.b, pk[0], now + rtt / 2), 0);
		ASSERT_TRUE(drain(pr.b, now + rtt / 2).empty());
		auto acks = drain(pr.b, now + rtt / 2 + hold);
		ASSERT_EQ(acks.size(), 1u);
		mroce_pkt ack = parse1(acks[0]);
		EXPECT_EQ(ack.ack.ack_delay_us, hold / kUs);
		if (lie)	/* more than the sample: the path's floor holds */
			ack.ack.ack_delay_us = (rtt + hold) / kUs;
		ASSERT_EQ(mroce_conn_rx(pr.a.conn.get(), &ack, false,
					now + rtt + hold), 0);
		EXPECT_EQ(pstats(pr.a, 0).min_rtt_ns, rtt);
		if (!lie)
			EXPECT_EQ(pstats(pr.a, 0).srtt_ns, rtt);
		else	/* srtt + (raw - srtt) / 8 */
			EXPECT_EQ(pstats(pr.a, 0).srtt_ns, rtt + hold / 8);
	}
}

/*
 * Which packets ask for an immediate ACK (spec 3.5, 6.2): in a stream of
 * small messages one per ack_every new packets, not every message end; the
 * end of the last queued message; never a READ request (its response
 * answers it); a response's end only when nothing else waits.
 */
TEST(AckReq, StreamOfSmallMessagesAsksOncePerAckEvery)
{
	Pair pr(one_path_params());
	const uint32_t every = pr.a.conn->p.ack_every;
	const uint32_t msgs = 10;	/* of 2 packets: 20 packets */

	for (uint32_t i = 0; i < msgs; i++)
		ASSERT_EQ(pr.a.post(write_wr(2048, 2048 * i),
				    std::vector<uint8_t>(2048, (uint8_t)i), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 2 * msgs);
	std::vector<uint32_t> asked;
	for (uint32_t k = 0; k < pk.size(); k++)
		if (parse1(pk[k]).flags & MROCE_F_ACKREQ)
			asked.push_back(k);
	/* packets 8 and 16 (every 8th new one, each a message end), and the
	 * last message's end */
	ASSERT_EQ(every, 8u);
	EXPECT_EQ(asked, (std::vector<uint32_t>{ 7, 15, 19 }));
	for (uint32_t k : asked)
		EXPECT_TRUE(parse1(pk[k]).flags & MROCE_F_LAST);
	/* the receiver's count covers the rest: one ACK per 8 packets */
	uint32_t acks = 0;
	for (uint32_t k = 0; k < pk.size(); k++) {
		ASSERT_EQ(deliver(pr.b, pk[k], 1000 + k), 0);
		acks += drain(pr.b, 1000 + k).size();
	}
	EXPECT_EQ(acks, 3u);
	EXPECT_EQ(pr.b.conn->st.tx_acks, 3u);
	/* each counted once, by the packet's ACKREQ (it also made 8) */
	EXPECT_EQ(pr.b.conn->st.tx_ack_why[MROCE_ACKW_REQ], 3u);
}

TEST(AckReq, ReadRequestsNeverAskAndTheLastResponseDoes)
{
	Pair pr(one_path_params());
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(pr.a.post(read_wr(2048, 2048 * i),
				    std::vector<uint8_t>(2048), 0), 0);
	auto req = drain(pr.a, 0);
	ASSERT_EQ(req.size(), 4u);
	for (auto &w : req) {
		EXPECT_FALSE(parse1(w).flags & MROCE_F_ACKREQ);
		ASSERT_EQ(deliver(pr.b, w, 1000), 0);
	}
	/* b answers with 8 response packets and no separate ACK yet */
	auto out = drain(pr.b, 1000);
	std::vector<Wire> resp;
	for (auto &w : out)
		if (is_op(w, MROCE_OP_READ_RESP))
			resp.push_back(w);
	EXPECT_EQ(resp.size(), out.size());
	ASSERT_EQ(resp.size(), 8u);
	for (uint32_t k = 0; k < resp.size(); k++)
		EXPECT_EQ((bool)(parse1(resp[k]).flags & MROCE_F_ACKREQ),
			  k == 7u) << k;
	for (auto &w : resp)
		ASSERT_EQ(deliver(pr.a, w, 2000), 0);
	ASSERT_EQ(pr.a.cqes.size(), 4u);
	for (auto &c : pr.a.cqes)
		EXPECT_EQ(c.status, (uint32_t)MROCE_ST_SUCCESS);
	/* a acknowledges the 8 responses at once; b's delayed ACK of the
	 * requests comes when its hold expires */
	EXPECT_EQ(drain(pr.a, 2000).size(), 1u);
	EXPECT_EQ(drain(pr.b, 1000 + pr.b.conn->p.ack_delay_ns).size(), 1u);
}
