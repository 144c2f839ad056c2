// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The core's event hook (mroce_conn_ops.event, the kernel's tracepoints):
// events agree with the counters they stand for, carry sane fields, and
// listening changes nothing the connection does.
#include "util.h"

using namespace mroce_test;

namespace {

struct Events {
	std::vector<mroce_event> v;

	static void cb(void *ctx, const mroce_event *ev)
	{
		/* ctx is the Endpoint: its events are kept beside it */
		auto *e = static_cast<Endpoint *>(ctx);
		log_of(e)->v.push_back(*ev);
	}
	static Events *&log_of(Endpoint *e)
	{
		static std::map<Endpoint *, Events *> m;
		return m[e];
	}
	void listen(Endpoint &e)
	{
		log_of(&e) = this;
		e.ops.event = &Events::cb;
	}
	size_t count(uint8_t type, int reason = -1) const
	{
		size_t n = 0;
		for (auto &e : v)
			n += e.type == type && (reason < 0 || e.reason == reason);
		return n;
	}
	uint64_t sum_count(uint8_t type, int reason) const
	{
		uint64_t n = 0;
		for (auto &e : v)
			if (e.type == type && e.reason == reason)
				n += e.count;
		return n;
	}
};

mroce_path_stats total(Endpoint &e)
{
	mroce_path_stats t{};
	for (uint32_t i = 0; i < e.conn->p.num_paths; i++) {
		auto s = pstats(e, i);
		t.rtos += s.rtos;
		t.tlps += s.tlps;
		t.lost_pkts += s.lost_pkts;
		t.spurious += s.spurious;
		t.steers += s.steers;
		t.downs += s.downs;
	}
	return t;
}

// 200 WRITEs of up to 16 KiB from a to b over 4 paths with 3% loss,
// reordering and CE marks; returns when all completed.
void lossy_run(World &w, uint64_t seed)
{
	std::mt19937_64 rng(seed);
	w.ch.cfg.loss = 0.03;
	w.ch.cfg.reorder = 0.05;
	w.ch.cfg.ce = 0.02;
	for (int k = 0; k < 200; k++) {
		uint32_t len = 1 + (uint32_t)(rng() % 16384);
		ASSERT_EQ(w.ep[0].post(write_wr(len, (k % 32) * 16384),
				       random_bytes(rng, len), w.now), 0);
		if (k % 50 == 49)
			ASSERT_TRUE(w.run_until([&] { return w.ep[0].cqes.size() ==
						      (size_t)k + 1; },
						w.now + 60000 * kMs));
	}
	ASSERT_TRUE(w.run_until([&] { return w.ep[0].cqes.size() == 200; },
				w.now + 60000 * kMs));
	for (auto &c : w.ep[0].cqes)
		ASSERT_EQ(c.status, (uint32_t)MROCE_ST_SUCCESS);
}

}  // namespace

TEST(Events, LossVerdictsMatchCounters)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		auto pa = World::params(seed, 4);
		World w(seed, pa, pa);
		Events ev[2];
		ev[0].listen(w.ep[0]);
		ev[1].listen(w.ep[1]);
		lossy_run(w, seed);
		if (::testing::Test::HasFatalFailure())
			return;
		const auto &e = ev[0];
		auto t = total(w.ep[0]);
		SCOPED_TRACE("seed " + std::to_string(seed));
		EXPECT_GT(t.lost_pkts, 0u);
		EXPECT_EQ(e.count(MROCE_EV_LOSS, MROCE_EVR_RTO), t.rtos);
		EXPECT_EQ(e.count(MROCE_EV_LOSS, MROCE_EVR_TLP), t.tlps);
		EXPECT_EQ(e.sum_count(MROCE_EV_LOSS, MROCE_EVR_RACK) +
			  e.sum_count(MROCE_EV_LOSS, MROCE_EVR_RTO), t.lost_pkts);
		EXPECT_EQ(e.count(MROCE_EV_SPURIOUS), t.spurious);
		EXPECT_EQ(e.count(MROCE_EV_STEER, MROCE_EVR_ECN) +
			  e.count(MROCE_EV_STEER, MROCE_EVR_LOSS) +
			  e.count(MROCE_EV_STEER, MROCE_EVR_DELAY), t.steers);
		EXPECT_EQ(e.count(MROCE_EV_PATH_DOWN), t.downs);
		size_t up = 0, down = 0;
		const uint32_t pkt = pa.mtu + MROCE_PKT_OVERHEAD;
		for (auto &x : e.v) {
			if (x.type != MROCE_EV_CWND && x.type != MROCE_EV_ERROR)
				EXPECT_LT(x.path, pa.num_paths);
			if (x.type == MROCE_EV_LOSS && x.reason != MROCE_EVR_TLP)
				EXPECT_GE(x.count, 1u);
			if (x.type == MROCE_EV_LOSS && x.reason == MROCE_EVR_RTO)
				EXPECT_GE(x.a, pa.rto_min_ns);
			if (x.type == MROCE_EV_STEER)
				EXPECT_NE(x.a, x.b);
			if (x.type != MROCE_EV_CWND)
				continue;
			/* only real changes; an increase by whole packets */
			EXPECT_NE(x.a, x.b);
			EXPECT_GE(x.b, pa.cwnd_min);
			if (x.path != MROCE_EV_CONN)
				EXPECT_LE(x.b, pa.cwnd_max);
			if (x.reason == MROCE_EVR_INCREASE) {
				EXPECT_GT(x.b, x.a);
				EXPECT_NE(x.a / pkt, x.b / pkt);
				up++;
			} else if (x.reason != MROCE_EVR_RESET) {
				EXPECT_LT(x.b, x.a) << (int)x.reason;
				down++;
			}
		}
		EXPECT_GT(up, 0u);
		EXPECT_GT(down, 0u);
		EXPECT_EQ(e.count(MROCE_EV_ERROR), 0u);
		/* the receiver never declares anything lost */
		EXPECT_EQ(ev[1].count(MROCE_EV_LOSS), 0u);
	}
}

// Listening changes nothing: the same seed, with and without the hook,
// sends the same packets and ends with the same counters.
TEST(Events, ListeningChangesNothing)
{
	mroce_conn_stats st[2];
	mroce_path_stats ps[2];
	uint64_t now[2];
	for (int listen = 0; listen < 2; listen++) {
		auto pa = World::params(7, 4);
		World w(7, pa, pa);
		Events ev;
		if (listen)
			ev.listen(w.ep[0]);
		lossy_run(w, 7);
		if (::testing::Test::HasFatalFailure())
			return;
		if (listen)
			EXPECT_GT(ev.v.size(), 10u);
		st[listen] = w.ep[0].conn->st;
		ps[listen] = total(w.ep[0]);
		now[listen] = w.now;
	}
	EXPECT_EQ(memcmp(&st[0], &st[1], sizeof(st[0])), 0);
	EXPECT_EQ(ps[0].lost_pkts, ps[1].lost_pkts);
	EXPECT_EQ(ps[0].rtos, ps[1].rtos);
	EXPECT_EQ(now[0], now[1]);
}

// An RTO, the path going down after down_after_rtos of them, and coming
// back up when a probe is answered (its window reset).
TEST(Events, PathDownAndUp)
{
	mroce_params prm = one_path_params();
	prm.retry_budget = 5;
	Pair pr(prm);
	Events ev;
	ev.listen(pr.a);
	ASSERT_EQ(pr.a.post(write_wr(100), std::vector<uint8_t>(100, 2), 0), 0);
	ASSERT_EQ(drain(pr.a, 0).size(), 1u);
	uint64_t t = 0;
	while (pstats(pr.a, 0).state != MROCE_PATH_DOWN) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		ASSERT_NE(t, UINT64_MAX);
		mroce_conn_timer(pr.a.conn.get(), t);
		drain(pr.a, t);
	}
	EXPECT_EQ(ev.count(MROCE_EV_LOSS, MROCE_EVR_RTO), prm.down_after_rtos);
	ASSERT_EQ(ev.count(MROCE_EV_PATH_DOWN), 1u);
	ASSERT_EQ(ev.count(MROCE_EV_STEER, MROCE_EVR_DOWN), 1u);
	uint32_t backoff = 0;
	for (auto &x : ev.v) {
		if (x.type == MROCE_EV_LOSS) {
			EXPECT_EQ(x.count, 1u);	/* the one packet each time */
			EXPECT_EQ(x.b, ++backoff);
		}
		if (x.type == MROCE_EV_PATH_DOWN)
			EXPECT_EQ(x.count, prm.down_after_rtos);
		if (x.type == MROCE_EV_STEER)
			EXPECT_EQ(x.b, pstats(pr.a, 0).sport);
	}
	std::vector<std::vector<uint8_t>> probes;
	while (probes.size() < 2) {
		t = mroce_conn_next_timer(pr.a.conn.get());
		mroce_conn_timer(pr.a.conn.get(), t);
		for (auto &w : drain(pr.a, t))
			if (is_op(w, MROCE_OP_PROBE))
				probes.push_back(w);
	}
	/* a second probe of a down path takes a fresh port */
	EXPECT_GE(ev.count(MROCE_EV_STEER, MROCE_EVR_PROBE), 1u);
	deliver(pr.b, probes[1], t + 10 * kUs);
	for (auto &w : drain(pr.b, t + 10 * kUs))
		deliver(pr.a, w, t + 20 * kUs);
	ASSERT_EQ(pstats(pr.a, 0).state, (uint32_t)MROCE_PATH_UP);
	ASSERT_EQ(ev.count(MROCE_EV_PATH_UP), 1u);
	ASSERT_EQ(ev.count(MROCE_EV_CWND, MROCE_EVR_RESET), 1u);
	for (auto &x : ev.v)
		if (x.type == MROCE_EV_CWND && x.reason == MROCE_EVR_RESET) {
			EXPECT_EQ(x.a, prm.cwnd_min);
			EXPECT_EQ(x.b, prm.cwnd_init);
		}
}

// RNR: the responder NAKs (TX), the requester counts its rounds (RX) and
// fails the WR after rnr_retry of them (an ERROR event with the status).
TEST(Events, RnrRoundsAndRetryExceeded)
{
	mroce_params prm = one_path_params();
	prm.rnr_retry = 2;
	Pair pr(prm);
	Events ea, eb;
	ea.listen(pr.a);
	eb.listen(pr.b);
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 64;
	ASSERT_EQ(pr.a.post(wr, std::vector<uint8_t>(64, 3), 0), 0);
	uint64_t now = 0;
	for (int k = 0; k < 50 && pr.a.cqes.empty(); k++) {
		for (auto &w : drain(pr.a, now))
			deliver(pr.b, w, now + 5 * kUs);
		for (auto &w : drain(pr.b, now + 5 * kUs))
			deliver(pr.a, w, now + 10 * kUs);
		now = mroce_conn_next_timer(pr.a.conn.get());
		if (now == UINT64_MAX)
			break;
		mroce_conn_timer(pr.a.conn.get(), now);
	}
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_RNR_RETRY_EXC);
	EXPECT_EQ(eb.count(MROCE_EV_RNR, MROCE_EVR_TX), 3u);
	ASSERT_EQ(ea.count(MROCE_EV_RNR, MROCE_EVR_RX), 3u);
	uint32_t round = 0;
	for (auto &x : ea.v)
		if (x.type == MROCE_EV_RNR) {
			EXPECT_EQ(x.b, 1u);
			EXPECT_EQ(x.count, ++round);
			EXPECT_EQ(x.a, prm.min_rnr_timer);
		}
	EXPECT_EQ(pr.a.conn->st.rnr_rounds, 3u);
	ASSERT_EQ(ea.count(MROCE_EV_ERROR), 1u);
	auto &err = ea.v.back();
	EXPECT_EQ(err.type, MROCE_EV_ERROR);
	EXPECT_EQ(err.reason, MROCE_EVR_RNR_RETRY);
	EXPECT_EQ(err.a, (uint64_t)MROCE_ST_RNR_RETRY_EXC);
	EXPECT_EQ(err.b, (uint64_t)MROCE_SYN_RNR);
	EXPECT_EQ(eb.count(MROCE_EV_ERROR), 0u);
}

// A WRITE with a bad rkey: the responder fails with a NAK it sends, the
// requester with the NAK it receives; each reports it once.  An embedder's
// mroce_conn_set_error() is reported as LOCAL, and only once.
TEST(Events, AccessErrorOnBothEnds)
{
	mroce_params prm = one_path_params();
	Pair pr(prm);
	Events ea, eb;
	ea.listen(pr.a);
	eb.listen(pr.b);
	mroce_wr wr = write_wr(100);
	wr.rkey = kRkey + 1;
	ASSERT_EQ(pr.a.post(wr, std::vector<uint8_t>(100, 4), 0), 0);
	for (auto &w : drain(pr.a, 0))
		deliver(pr.b, w, 5 * kUs);
	for (auto &w : drain(pr.b, 5 * kUs))
		deliver(pr.a, w, 10 * kUs);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_REM_ACCESS);
	ASSERT_EQ(eb.count(MROCE_EV_ERROR), 1u);
	EXPECT_EQ(eb.v.back().reason, MROCE_EVR_NAK_TX);
	EXPECT_EQ(eb.v.back().a, (uint64_t)MROCE_ST_REM_ACCESS);
	EXPECT_EQ(eb.v.back().b, (uint64_t)MROCE_SYN_REM_ACCESS);
	ASSERT_EQ(ea.count(MROCE_EV_ERROR), 1u);
	EXPECT_EQ(ea.v.back().reason, MROCE_EVR_NAK_RX);
	EXPECT_EQ(ea.v.back().a, (uint64_t)MROCE_ST_REM_ACCESS);
	EXPECT_EQ(ea.v.back().b, (uint64_t)MROCE_SYN_REM_ACCESS);
	/* already failed: no second report */
	mroce_conn_set_error(pr.a.conn.get(), MROCE_ST_WR_FLUSH);
	EXPECT_EQ(ea.count(MROCE_EV_ERROR), 1u);

	Pair p2(prm);
	Events e2;
	e2.listen(p2.a);
	mroce_conn_set_error(p2.a.conn.get(), 0);
	mroce_conn_set_error(p2.a.conn.get(), MROCE_ST_LOC_PROT);
	ASSERT_EQ(e2.count(MROCE_EV_ERROR), 1u);
	EXPECT_EQ(e2.v[0].reason, MROCE_EVR_LOCAL);
	EXPECT_EQ(e2.v[0].a, (uint64_t)MROCE_ST_WR_FLUSH);
	EXPECT_EQ(e2.v[0].path, MROCE_EV_CONN);
}
