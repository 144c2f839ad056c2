// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Paths (scheduling, down/up with fresh entropy, steering, retry budget),
// per-path congestion control, parameter and WR validation.
#include "util.h"

using namespace mroce_test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed)
{
	std::vector<uint8_t> v(n);
	for (size_t i = 0; i < n; i++)
		v[i] = (uint8_t)(i * 31 + seed);
	return v;
}

bool mem_is(const Endpoint &e, uint64_t off, const std::vector<uint8_t> &v)
{
	return std::equal(v.begin(), v.end(), e.mem.begin() + off);
}

}  // namespace

TEST(Paths, SchedulerSpreadsOverAllPaths)
{
	auto p = World::params(11, 8);
	World w(11, p, p);
	auto data = pattern(512 * 1024, 1);
	ASSERT_EQ(w.ep[0].post(write_wr(data.size()), data, 0), 0);
	ASSERT_TRUE(w.run_until([&] { return !w.ep[0].cqes.empty(); }, 1000 * kMs));
	EXPECT_EQ(w.ep[0].cqes[0].status, 0u);
	EXPECT_TRUE(mem_is(w.ep[1], 0, data));
	uint64_t total = 0;
	for (uint32_t i = 0; i < 8; i++)
		total += pstats(w.ep[0], i).tx_pkts;
	for (uint32_t i = 0; i < 8; i++)
		EXPECT_GE(pstats(w.ep[0], i).tx_pkts * 16, total) << "path " << i;
	std::set<uint16_t> ports;
	for (uint32_t i = 0; i < 8; i++)
		ports.insert(pstats(w.ep[0], i).sport);
	EXPECT_EQ(ports.size(), 8u);	/* distinct entropy per path */
}

TEST(Paths, BrokenPathGoesDownIsRequeuedAndComesBackWithNewPort)
{
	auto p = World::params(5, 4);
	p.steer_ns = 10000 * kMs;	/* no steering: exercise down/up */
	World w(5, p, p);
	uint16_t bad = pstats(w.ep[0], 1).sport;
	w.ch.dead.insert({0, bad});
	auto data = pattern(256 * 1024, 3);
	ASSERT_EQ(w.ep[0].post(write_wr(data.size()), data, 0), 0);
	ASSERT_TRUE(w.run_until([&] { return !w.ep[0].cqes.empty(); }, 1000 * kMs));
	EXPECT_EQ(w.ep[0].cqes[0].status, 0u);
	EXPECT_TRUE(mem_is(w.ep[1], 0, data));
	EXPECT_EQ(w.ep[1].dup_placements, 0);
	auto s = pstats(w.ep[0], 1);
	EXPECT_GE(s.downs + s.rtos, 1u);
	/* keep traffic going until the path is back */
	auto more = pattern(64 * 1024, 4);
	ASSERT_EQ(w.ep[0].post(write_wr(more.size(), 300000), more, w.now), 0);
	ASSERT_TRUE(w.run_until([&] {
		return w.ep[0].cqes.size() == 2 &&
		       pstats(w.ep[0], 1).state == MROCE_PATH_UP &&
		       pstats(w.ep[0], 1).sport != bad;
	}, w.now + 1000 * kMs));
	EXPECT_TRUE(mem_is(w.ep[1], 300000, more));
	EXPECT_GE(pstats(w.ep[0], 1).downs, 1u);
}

TEST(Paths, EcnOutlierIsSteeredToANewPort)
{
	auto p = World::params(9, 4);
	p.steer_ns = 50 * kUs;
	World w(9, p, p);
	uint16_t hot = pstats(w.ep[0], 2).sport;
	w.ch.ce_ports.insert({0, hot});
	std::vector<uint8_t> data = pattern(64 * 1024, 5);
	for (int i = 0; i < 40; i++)
		ASSERT_EQ(w.ep[0].post(write_wr(data.size(), (i % 8) * 65536), data, 0), 0);
	ASSERT_TRUE(w.run_until([&] { return w.ep[0].cqes.size() == 40; }, 2000 * kMs));
	EXPECT_GE(pstats(w.ep[0], 2).steers, 1u);
	EXPECT_NE(pstats(w.ep[0], 2).sport, hot);
	for (uint32_t i : {0u, 1u, 3u})
		EXPECT_EQ(pstats(w.ep[0], i).steers, 0u) << i;
}

// The per-path CE count the sender keeps is what the receiver echoed:
// never more than the network marked, even when steering (which resets the
// path's ECN average) meets ACKs reordered across it.
TEST(Paths, EcnCountSurvivesSteeringWithoutDoubleCounting)
{
	auto p = World::params(21, 4);
	p.steer_ns = 50 * kUs;
	World w(21, p, p);
	w.ch.ce_ports.insert({0, pstats(w.ep[0], 2).sport});
	w.ch.cfg.ce = 0.02;
	w.ch.cfg.reorder = 0.8;
	w.ch.cfg.reorder_ns = 500 * kUs;
	std::vector<uint8_t> data = pattern(64 * 1024, 6);
	for (int i = 0; i < 40; i++)
		ASSERT_EQ(w.ep[0].post(write_wr(data.size(), (i % 8) * 65536), data, 0), 0);
	ASSERT_TRUE(w.run_until([&] { return w.ep[0].cqes.size() == 40; }, 4000 * kMs));
	uint64_t echoed = 0, steers = 0;
	for (uint32_t i = 0; i < 4; i++) {
		echoed += pstats(w.ep[0], i).ecn_ce;
		steers += pstats(w.ep[0], i).steers;
	}
	EXPECT_GE(steers, 1u);
	EXPECT_GT(echoed, 0u);
	EXPECT_LE(echoed, w.ch.ce_marked[1]);
	EXPECT_GE(pstats(w.ep[0], 2).ecn_ce, 1u);
}

TEST(Paths, AllPathsDeadReportsRetryExceeded)
{
	auto p = World::params(3, 4);
	World w(3, p, p);
	w.ch.all_dead = true;
	ASSERT_EQ(w.ep[0].post(write_wr(10000), pattern(10000, 1), 0), 0);
	ASSERT_EQ(w.ep[0].post(write_wr(10), pattern(10, 1), 0), 0);
	ASSERT_TRUE(w.run_until([&] { return w.ep[0].cqes.size() == 2; }, 10000 * kMs));
	EXPECT_EQ(w.ep[0].cqes[0].status, (uint32_t)MROCE_ST_RETRY_EXC);
	EXPECT_EQ(w.ep[0].cqes[1].status, (uint32_t)MROCE_ST_WR_FLUSH);
	for (uint32_t i = 0; i < 4; i++)
		EXPECT_EQ(pstats(w.ep[0], i).state, (uint32_t)MROCE_PATH_DOWN);
	/* budget 7 rounds of 1 ms after the last path went down */
	EXPECT_LT(w.now, 500 * kMs);
	EXPECT_EQ(mroce_conn_next_timer(w.ep[0].conn.get()), UINT64_MAX);
}

namespace {

struct Windows {
	uint32_t path, conn;
};

// Send 16 packets on one path, deliver them (CE-marked or not) after rtt,
// feed the ACKs back; returns the path's and the connection's windows.
Windows windows_after_round(bool ce, uint64_t rtt2, uint64_t rtt1 = 10 * kUs)
{
	Pair pr(one_path_params());
	uint64_t now = 0;
	/* first round: establishes min_rtt = rtt1 */
	pr.a.post(write_wr(1000), std::vector<uint8_t>(1000, 1), now);
	for (auto &x : drain(pr.a, now))
		deliver(pr.b, x, now + rtt1 / 2);
	for (auto &x : drain(pr.b, now + rtt1 / 2))
		deliver(pr.a, x, now + rtt1);
	now += rtt1;
	pr.a.post(write_wr(16 * 1024), std::vector<uint8_t>(16 * 1024, 1), now);
	for (auto &x : drain(pr.a, now))
		deliver(pr.b, x, now + rtt2 / 2, ce);
	for (auto &x : drain(pr.b, now + rtt2 / 2))
		deliver(pr.a, x, now + rtt2);
	EXPECT_EQ(pr.a.cqes.size(), 2u);
	return {pstats(pr.a, 0).cwnd, pr.a.conn->grp->cwnd};
}

uint32_t cwnd_after_round(bool ce, uint64_t rtt2, uint64_t rtt1 = 10 * kUs)
{
	return windows_after_round(ce, rtt2, rtt1).path;
}

}  // namespace

TEST(Cc, GrowsWithoutSignals)
{
	mroce_params p = one_path_params();
	EXPECT_GT(cwnd_after_round(false, 10 * kUs), p.cwnd_init);
}

TEST(Cc, EcnCutsWindow)
{
	mroce_params p = one_path_params();
	uint32_t w = cwnd_after_round(true, 10 * kUs);
	EXPECT_LT(w, p.cwnd_init);
	EXPECT_GE(w, p.cwnd_init / 2);	/* at most one cut per RTT */
}

TEST(Cc, SevereDelayOfARoundCutsTheConnectionWindow)
{
	mroce_params p = one_path_params();
	/*
	 * 10 us base RTT, 200 us measured by every sample of the round: far
	 * above 4 targets (100 us) and 2 base RTTs.  The connection window
	 * is cut, at most by half; the path window only holds.
	 */
	Windows w = windows_after_round(false, 200 * kUs);
	EXPECT_LT(w.conn, p.cwnd_init);
	EXPECT_GE(w.conn, p.cwnd_init / 2);
	EXPECT_GE(w.path, p.cwnd_init);
	/* within the target: no cut */
	EXPECT_GE(windows_after_round(false, 30 * kUs).conn, p.cwnd_init);
}

TEST(Cc, DelayOfASlowHostIsNotSevere)
{
	mroce_params p = one_path_params();
	/*
	 * A VM: 400 us base RTT, 1000 us measured.  Above 4 targets but not
	 * 2 base RTTs above the base: a hold, not a cut.
	 */
	Windows w = windows_after_round(false, 1000 * kUs, 400 * kUs);
	EXPECT_EQ(w.conn, p.cwnd_init);
	EXPECT_GE(w.path, p.cwnd_init);
}

TEST(Cc, DelayBetweenTargetAndSevereHolds)
{
	mroce_params p = one_path_params();
	/* 10 us base, 60 us measured: above min + 25 us, below min + 4 x 25 */
	uint32_t held = cwnd_after_round(false, 60 * kUs);
	EXPECT_GE(held, p.cwnd_init);	/* no cut */
	EXPECT_LT(held, cwnd_after_round(false, 10 * kUs));	/* no growth */
}

TEST(Cc, ConnectionWindowBoundsAllPathsTogether)
{
	/* 16 paths of 8 packets each: the connection still sends 8, not 128 */
	mroce_params p = one_path_params(16);
	const uint32_t pkt = 1024 + MROCE_PKT_OVERHEAD;
	p.cwnd_init = 8 * pkt;
	Pair pr(p);
	ASSERT_EQ(pr.a.post(write_wr(256 * 1024), std::vector<uint8_t>(256 * 1024, 3), 0), 0);
	auto pk = drain(pr.a, 0);
	EXPECT_EQ(pk.size(), 8u);
	EXPECT_EQ(pr.a.conn->grp->cwnd, 8 * pkt);
	/* spread over paths, one each while their windows are equal */
	std::set<uint32_t> paths;
	for (auto &x : pk)
		paths.insert(parse1(x).path);
	EXPECT_EQ(paths.size(), 8u);
}

namespace {

// Eight 128 KiB WRITEs through w's channel; returns the sender's
// connection.
const mroce_conn &transfer(World &w, const std::vector<uint8_t> &data)
{
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(w.ep[0].post(write_wr(data.size(), i * data.size()), data, 0), 0);
	EXPECT_TRUE(w.run_until([&] { return w.ep[0].cqes.size() == 8; }, 5000 * kMs));
	for (auto &c : w.ep[0].cqes)
		EXPECT_EQ(c.status, 0u);
	return *w.ep[0].conn;
}

}  // namespace

TEST(Cc, RandomLossDoesNotCutTheConnectionButEcnDoes)
{
	auto data = pattern(128 * 1024, 6);
	auto p = World::params(21, 8);
	World lossy(21, p, p);
	lossy.ch.cfg.loss = 0.02;
	const mroce_conn &a = transfer(lossy, data);
	uint64_t lost = 0;
	for (uint32_t i = 0; i < 8; i++)
		lost += pstats(lossy.ep[0], i).lost_pkts;
	EXPECT_GT(lost, 10u);
	EXPECT_EQ(a.st.cc_cuts, 0u);	/* loss without a queue: repaired, not slowed */
	EXPECT_GT(a.grp->cwnd, a.p.cwnd_init);

	World marked(21, p, p);
	marked.ch.cfg.ce = 0.3;
	const mroce_conn &b = transfer(marked, data);
	EXPECT_GT(b.st.cc_cuts, 0u);
}

TEST(Cc, RtoOnOneDeadPathKeepsTheConnectionWindow)
{
	auto data = pattern(128 * 1024, 7);
	auto p = World::params(23, 8);
	p.steer_ns = 10000 * kMs;	/* no steering: let the RTOs happen */
	World w(23, p, p);
	w.ch.dead.insert({0, pstats(w.ep[0], 3).sport});
	const mroce_conn &a = transfer(w, data);
	EXPECT_GE(pstats(w.ep[0], 3).rtos, 1u);
	EXPECT_EQ(a.st.cc_cuts, 0u);	/* the other paths kept delivering */
}

TEST(Params, UpdateChangesOnlyTheRtsFields)
{
	Endpoint e;
	mroce_params ok;
	mroce_params_default(&ok);
	ASSERT_EQ(e.init(ok, 0), 0);
	mroce_params u = ok;
	u.retry_budget = 3;
	u.rnr_retry = 5;
	u.min_rnr_timer = 12;
	u.rto_init_ns = 67 * kMs;
	u.rto_max_ns = 67 * kMs;
	u.probe_ns = 67 * kMs;
	u.num_paths = 3;		/* not an RTS field: ignored */
	EXPECT_EQ(mroce_conn_update(e.conn.get(), &u), 0);
	EXPECT_EQ(e.conn->p.retry_budget, 3u);
	EXPECT_EQ(e.conn->p.rnr_retry, 5);
	EXPECT_EQ(e.conn->p.min_rnr_timer, 12);
	EXPECT_EQ(e.conn->p.rto_init_ns, 67 * kMs);
	EXPECT_EQ(e.conn->p.probe_ns, 67 * kMs);
	EXPECT_EQ(e.conn->p.num_paths, ok.num_paths);
	mroce_params bad = u;
	bad.rnr_retry = 9;
	EXPECT_EQ(mroce_conn_update(e.conn.get(), &bad), MROCE_E_INVAL);
	bad = u;
	bad.rto_init_ns = bad.rto_max_ns + 1;
	EXPECT_EQ(mroce_conn_update(e.conn.get(), &bad), MROCE_E_INVAL);
	EXPECT_EQ(e.conn->p.rnr_retry, 5);	/* unchanged by the refusals */
	EXPECT_EQ(e.conn->p.rto_init_ns, 67 * kMs);
}

TEST(Params, InitRejectsInvalid)
{
	Endpoint e;
	mroce_params ok;
	mroce_params_default(&ok);
	EXPECT_EQ(e.init(ok, 0), 0);
	auto bad = [&](auto mut) {
		mroce_params p = ok;
		mut(p);
		return e.init(p, 0);
	};
	EXPECT_EQ(bad([](auto &p) { p.num_paths = 0; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.num_paths = 65; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.max_inflight = 1000; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.max_inflight = 8192; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.mtu = 100; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.mtu = 8192; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.sport_min = 1000; p.sport_max = 1010; }),
		  MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.rto_min_ns = 0; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.rto_init_ns = p.rto_max_ns + 1; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.cwnd_min = p.cwnd_init + 1; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.dqpn = 1u << 24; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.ack_every = 0; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.rnr_retry = 8; }), MROCE_E_INVAL);
	EXPECT_EQ(bad([](auto &p) { p.min_rnr_timer = 32; }), MROCE_E_INVAL);
	EXPECT_EQ(mroce_mem::conn_init(e.conn.get(), nullptr, nullptr, nullptr, 0),
		  MROCE_E_INVAL);
}

// A connection needs the memory its parameters size (mroce_conn_size()):
// one byte less is refused; the paths and the DSN ring grow with them.
TEST(Params, ConnSizeFollowsPathsAndWindow)
{
	mroce_params p;
	mroce_params_default(&p);
	p.num_paths = 16;
	const size_t s16 = mroce_conn_size(&p);
	p.num_paths = 64;
	const size_t s64 = mroce_conn_size(&p);
	EXPECT_EQ(s64 - s16, 48 * (sizeof(mroce_path) + MROCE_PATH_WND * sizeof(mroce_psn_ent) +
				   MROCE_ACK_BLK_SIZE));
	p.max_inflight *= 2;
	EXPECT_GT(mroce_conn_size(&p), s64);
	EXPECT_LE(mroce_conn_size(&p), MROCE_CONN_SIZE_MAX);
	p.num_paths = 0;
	EXPECT_EQ(mroce_conn_size(&p), 0u);
	p.num_paths = 16;
	p.max_inflight = 1024;
	auto c = mroce_mem::conn_alloc(s16);
	EXPECT_EQ(mroce_conn_init(c.get(), s16 - 1, &p, nullptr, nullptr, 0), MROCE_E_INVAL);
	ASSERT_EQ(mroce_conn_init(c.get(), s16, &p, nullptr, nullptr, 0), 0);
	EXPECT_EQ(c->p.num_paths, 16u);
	EXPECT_EQ((uint8_t *)(c->retxq + p.max_inflight) - (uint8_t *)c.get(), (ptrdiff_t)s16);
}

// Table sizes: powers of two within their bounds, a path window that
// holds cwnd_init; each grows the connection by exactly its entries, and
// the largest of everything is MROCE_CONN_SIZE_MAX.
TEST(Params, TableSizesValidatedAndSized)
{
	mroce_params p;
	mroce_params_default(&p);
	EXPECT_EQ(p.max_msgs, (uint32_t)MROCE_MAX_MSGS);
	EXPECT_EQ(p.path_wnd, (uint32_t)MROCE_PATH_WND);
	auto bad = [](auto f) {
		mroce_params q;
		mroce_params_default(&q);
		f(q);
		return mroce_conn_size(&q);
	};
	EXPECT_EQ(bad([](auto &q) { q.max_msgs = 0; }), 0u);
	EXPECT_EQ(bad([](auto &q) { q.max_msgs = 3; }), 0u);
	EXPECT_EQ(bad([](auto &q) { q.max_msgs = 2 * MROCE_MAX_MSGS; }), 0u);
	EXPECT_EQ(bad([](auto &q) { q.path_wnd = 8; }), 0u);
	EXPECT_EQ(bad([](auto &q) { q.path_wnd = 48; }), 0u);
	EXPECT_EQ(bad([](auto &q) { q.path_wnd = 2 * MROCE_PATH_WND; }), 0u);
	/* cwnd_init (16 packets) must fit a window of 16 */
	EXPECT_EQ(bad([](auto &q) {
		q.path_wnd = 16;
		q.cwnd_init = 17 * (q.mtu + MROCE_PKT_OVERHEAD);
	}), 0u);
	EXPECT_GT(bad([](auto &q) { q.path_wnd = 16; }), 0u);
	EXPECT_GT(bad([](auto &q) { q.max_msgs = 1; }), 0u);

	const size_t base = mroce_conn_size(&p);
	p.max_msgs = 16;
	EXPECT_EQ(base - mroce_conn_size(&p), 240 * sizeof(mroce_smsg));
	p.path_wnd = 64;
	EXPECT_EQ(base - mroce_conn_size(&p),
		  240 * sizeof(mroce_smsg) + p.num_paths * 192 * sizeof(mroce_psn_ent));

	mroce_params_default(&p);
	p.num_paths = MROCE_MAX_PATHS;
	p.max_inflight = MROCE_MAX_INFLIGHT;
	EXPECT_EQ(mroce_conn_size(&p), MROCE_CONN_SIZE_MAX);

	/* the tables are where the layout puts them, inside the block */
	mroce_params_default(&p);
	p.num_paths = 5;
	p.max_msgs = 8;
	p.path_wnd = 32;
	const size_t sz = mroce_conn_size(&p);
	auto c = mroce_mem::conn_alloc(sz);
	ASSERT_EQ(mroce_conn_init(c.get(), sz, &p, nullptr, nullptr, 0), 0);
	auto in = [&](const void *x, size_t n) {
		auto *b = (const uint8_t *)c.get(), *q = (const uint8_t *)x;
		return q >= b + sizeof(mroce_conn) && q + n <= b + sz;
	};
	EXPECT_TRUE(in(c->smsg, 8 * sizeof(mroce_smsg)));
	for (uint32_t i = 0; i < 5; i++)
		EXPECT_TRUE(in(c->path[i].win, 32 * sizeof(mroce_psn_ent))) << i;
	EXPECT_EQ(c->path[1].win - c->path[0].win, 32);
	EXPECT_TRUE(in(c->rcv_dsn_map, p.max_inflight / 8));
	EXPECT_TRUE(in(c->ack_blk, 4 * MROCE_ACK_BLK_SIZE));
	EXPECT_EQ((uint8_t *)(c->retxq + p.max_inflight) - (uint8_t *)c.get(), (ptrdiff_t)sz);
	EXPECT_EQ(mroce_conn_check(c.get()), nullptr);
}

// mroce_params_fit_paths(): twice a path's share of the DSN window, a
// power of two in [16, MROCE_PATH_WND], cwnd_max following it.
TEST(Params, FitPathsSizesWindowsByShare)
{
	struct {
		uint32_t paths, inflight, wnd;
	} cases[] = {
		{ 1, 1024, 256 }, { 8, 1024, 256 }, { 16, 1024, 128 },
		{ 64, 1024, 32 }, { 64, 16, 16 }, { 3, 1024, 256 },
		{ 12, 1024, 256 }, { 24, 256, 32 }, { 1, 16, 32 },
	};
	for (auto &k : cases) {
		mroce_params p;
		mroce_params_default(&p);
		mroce_params_set_mtu(&p, 1024);
		p.num_paths = k.paths;
		p.max_inflight = k.inflight;
		mroce_params_fit_paths(&p);
		EXPECT_EQ(p.path_wnd, k.wnd) << k.paths << " " << k.inflight;
		EXPECT_EQ(p.cwnd_max, k.wnd * (1024 + MROCE_PKT_OVERHEAD));
		EXPECT_LE(p.cwnd_init, p.cwnd_max);
		EXPECT_GT(mroce_conn_size(&p), 0u);
		/* set_mtu keeps the window's cwnd_max */
		mroce_params_set_mtu(&p, 4096);
		EXPECT_EQ(p.cwnd_max, k.wnd * (4096 + MROCE_PKT_OVERHEAD));
	}
}

// snd_wnd: our DSN window, 0 for max_inflight, else a power of 2 in
// [16, max_inflight]; it alone sizes the DSN records and the retransmit
// queue (the receive map follows max_inflight), and the paths' fit.
TEST(Params, SendWindowSizesDsnRecords)
{
	mroce_params p;
	mroce_params_default(&p);
	EXPECT_EQ(p.snd_wnd, 0u);
	auto bad = [](auto f) {
		mroce_params q;
		mroce_params_default(&q);
		f(q);
		return mroce_conn_size(&q);
	};
	EXPECT_EQ(bad([](auto &q) { q.snd_wnd = 8; }), 0u);
	EXPECT_EQ(bad([](auto &q) { q.snd_wnd = 48; }), 0u);
	EXPECT_EQ(bad([](auto &q) { q.snd_wnd = 2048; }), 0u);	/* > max_inflight */
	const size_t full = mroce_conn_size(&p);
	p.snd_wnd = p.max_inflight;
	EXPECT_EQ(mroce_conn_size(&p), full);
	p.snd_wnd = 256;
	EXPECT_EQ(full - mroce_conn_size(&p),
		  768 * (sizeof(mroce_dsn_ent) + sizeof(uint32_t)));
	mroce_params_fit_paths(&p);
	EXPECT_EQ(p.path_wnd, 32u);	/* 2 * 256 / 16 paths */
	const size_t sz = mroce_conn_size(&p);
	auto c = mroce_mem::conn_alloc(sz);
	ASSERT_EQ(mroce_conn_init(c.get(), sz, &p, nullptr, nullptr, 0), 0);
	EXPECT_EQ(c->p.snd_wnd, 256u);
	EXPECT_EQ((uint8_t *)(c->retxq + 256) - (uint8_t *)c.get(), (ptrdiff_t)sz);
	EXPECT_EQ(mroce_conn_check(c.get()), nullptr);
	/* 0 is stored as the window in use */
	mroce_params_default(&p);
	auto d = mroce_mem::conn_alloc();
	ASSERT_EQ(mroce_mem::conn_init(d.get(), &p, nullptr, nullptr, 0), 0);
	EXPECT_EQ(d->p.snd_wnd, p.max_inflight);
}

// max_msgs bounds our outstanding WRs: the next waits with E_NOSPC.
TEST(Params, MaxMsgsBoundsPosting)
{
	Endpoint e;
	mroce_params p;
	mroce_params_default(&p);
	p.max_msgs = 4;
	ASSERT_EQ(e.init(p, 0), 0);
	mroce_wr wr{};
	wr.op = MROCE_WOP_WRITE;
	wr.length = 10;
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), 0);
	EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), MROCE_E_NOSPC);
	EXPECT_EQ(mroce_conn_check(e.conn.get()), nullptr);
}

TEST(Params, PostRejectsInvalidAndBoundsQueues)
{
	Endpoint e;
	mroce_params p;
	mroce_params_default(&p);
	ASSERT_EQ(e.init(p, 0), 0);
	mroce_wr wr{};
	wr.op = 42;
	EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), MROCE_E_INVAL);
	EXPECT_EQ(mroce_conn_post(e.conn.get(), nullptr, 0), MROCE_E_INVAL);
	wr.op = MROCE_WOP_FETCH_ADD;
	wr.length = 8;
	wr.remote_va = 0x1004;
	EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), MROCE_E_INVAL);
	wr.remote_va = 0x1000;
	wr.length = 4;
	EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), MROCE_E_INVAL);
	wr.op = MROCE_WOP_WRITE;
	wr.length = 0x80000001u;
	EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), MROCE_E_INVAL);
	wr.op = MROCE_WOP_READ;
	wr.length = 10;
	for (int i = 0; i < MROCE_MAX_RESP; i++)
		EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), 0);
	EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), MROCE_E_NOSPC);
	wr.op = MROCE_WOP_WRITE;
	for (int i = MROCE_MAX_RESP; i < MROCE_MAX_MSGS; i++)
		EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), 0);
	EXPECT_EQ(mroce_conn_post(e.conn.get(), &wr, 0), MROCE_E_NOSPC);
	EXPECT_EQ(mroce_conn_check(e.conn.get()), nullptr);
}

// Found by mroce_verify in the kernel: a responder that stopped with a
// delayed ACK pending reported that ACK's deadline forever, so its timer
// fired in a loop (soft lockup).
TEST(Conn, StoppedConnectionHasNoDueTimer)
{
	auto p = World::params(21, 4);
	p.ack_every = 64;		/* leave the ACK to the delay timer */
	World w(21, p, p);
	auto data = pattern(3000, 9);
	ASSERT_EQ(w.ep[0].post(write_wr(data.size()), data, 0), 0);
	w.pump(0);
	/* deliver the data packets, but run no timer */
	while (!w.ch.empty()) {
		Channel::Pkt pk = w.ch.pop();
		mroce_pkt pkt;
		ASSERT_EQ(mroce_pkt_parse(pk.bytes.data(), pk.bytes.size(), &pkt), 0);
		mroce_conn_rx(w.ep[pk.to].conn.get(), &pkt, false, w.now);
	}
	ASSERT_NE(mroce_conn_next_timer(w.ep[1].conn.get()), UINT64_MAX);
	mroce_conn_set_error(w.ep[1].conn.get(), 0);
	EXPECT_EQ(mroce_conn_next_timer(w.ep[1].conn.get()), UINT64_MAX);
	mroce_tx tx;
	EXPECT_EQ(mroce_conn_tx(w.ep[1].conn.get(), w.now + kMs, &tx), 0);
}
