// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Congestion groups (core/mroce_cc_group.c, spec 9.4): several connections
// sharing one connection-level window, its fairness rule, the kick of
// blocked members and what a leaving or failing member gives back.
#include "util.h"

#include <queue>
#include <tuple>

using namespace mroce_test;

namespace {

constexpr uint32_t kPkt = 1024 + MROCE_PKT_OVERHEAD;

// The embedder's side of a group: a lock that must never nest, and the
// kicks asked for.
struct TestGroup {
	mroce_cc_group g{};
	mroce_cc_group_ops ops{};
	int depth = 0, locks = 0;
	std::vector<void *> kicked;

	TestGroup()
	{
		ops.lock = [](void *x) {
			auto *t = static_cast<TestGroup *>(x);
			EXPECT_EQ(t->depth, 0) << "group lock taken twice";
			t->depth++;
			t->locks++;
		};
		ops.unlock = [](void *x) {
			auto *t = static_cast<TestGroup *>(x);
			EXPECT_EQ(t->depth, 1);
			t->depth--;
		};
		ops.kick = [](void *ctx) {
			auto *e = static_cast<Endpoint *>(ctx);
			e->kicks++;
		};
		mroce_cc_group_init(&g, &ops, this);
	}
};

mroce_params group_params(uint32_t cwnd_pkts)
{
	mroce_params p = one_path_params();
	p.cwnd_init = cwnd_pkts * kPkt;
	return p;
}

mroce_conn_info info(Endpoint &e)
{
	mroce_conn_info i;
	mroce_conn_get_info(e.conn.get(), &i);
	return i;
}

// Deliver every packet of from to to (a hand-wired hop).
void hop(Endpoint &from, Endpoint &to, uint64_t now, uint64_t delay)
{
	for (auto &x : drain(from, now))
		deliver(to, x, now + delay);
}

}  // namespace

TEST(CcGroup, MembersShareOneWindow)
{
	mroce_params p = group_params(8);
	TestGroup tg;
	Pair a(p), b(p);
	ASSERT_EQ(mroce_cc_group_join(a.a.conn.get(), &tg.g), 0);
	ASSERT_EQ(mroce_cc_group_join(b.a.conn.get(), &tg.g), 0);
	EXPECT_TRUE(mroce_cc_group_shared(a.a.conn.get()));
	/* a second join, or a join to nothing, is refused */
	EXPECT_EQ(mroce_cc_group_join(a.a.conn.get(), &tg.g), MROCE_E_STATE);
	std::vector<uint8_t> d(64 * 1024, 7);
	ASSERT_EQ(a.a.post(write_wr(d.size()), d, 0), 0);
	ASSERT_EQ(b.a.post(write_wr(d.size()), d, 0), 0);
	size_t na = drain(a.a, 0).size(), nb = drain(b.a, 0).size();
	/* one window of 8 packets for both, not 8 each */
	EXPECT_EQ(na + nb, 8u);
	EXPECT_EQ(info(a.a).grp_members, 2u);
	EXPECT_EQ(info(a.a).grp_inflight, 8 * kPkt);
	EXPECT_EQ(info(b.a).cwnd, 8 * kPkt);
	EXPECT_TRUE(info(b.a).grp_wait);
	EXPECT_EQ(mroce_conn_check(a.a.conn.get()), nullptr);
	EXPECT_EQ(mroce_conn_check(b.a.conn.get()), nullptr);
	EXPECT_EQ(tg.depth, 0);
	mroce_cc_group_leave(a.a.conn.get());
	mroce_cc_group_leave(b.a.conn.get());
	EXPECT_EQ(tg.g.members, 0u);
	EXPECT_EQ(tg.g.inflight, 0u);
}

TEST(CcGroup, PrivateWindowsAreIndependent)
{
	mroce_params p = group_params(8);
	Pair a(p), b(p);
	std::vector<uint8_t> d(64 * 1024, 7);
	ASSERT_EQ(a.a.post(write_wr(d.size()), d, 0), 0);
	ASSERT_EQ(b.a.post(write_wr(d.size()), d, 0), 0);
	EXPECT_EQ(drain(a.a, 0).size(), 8u);
	EXPECT_EQ(drain(b.a, 0).size(), 8u);
	EXPECT_FALSE(mroce_cc_group_shared(a.a.conn.get()));
	EXPECT_EQ(info(a.a).grp_members, 1u);
}

// A member with nothing in flight, refused because another filled the
// window, is kicked when the other's ACK frees room, and then sends.
TEST(CcGroup, BlockedMemberIsKicked)
{
	mroce_params p = group_params(4);
	TestGroup tg;
	Pair a(p), b(p);
	ASSERT_EQ(mroce_cc_group_join(a.a.conn.get(), &tg.g), 0);
	ASSERT_EQ(mroce_cc_group_join(b.a.conn.get(), &tg.g), 0);
	std::vector<uint8_t> d(4 * 1024, 1);
	ASSERT_EQ(a.a.post(write_wr(d.size()), d, 0), 0);
	auto first = drain(a.a, 0);
	ASSERT_EQ(first.size(), 4u);
	ASSERT_EQ(b.a.post(write_wr(d.size()), d, 0), 0);
	EXPECT_TRUE(drain(b.a, 0).empty());
	EXPECT_TRUE(info(b.a).grp_wait);
	/* the waiting member polls within an srtt even without a kick */
	EXPECT_LE(mroce_conn_next_timer(b.a.conn.get()), p.rto_min_ns);
	EXPECT_EQ(b.a.kicks, 0);
	for (auto &x : first)
		deliver(a.b, x, 5 * kUs);
	/* the ACK frees the window: b is kicked (a has nothing more to send) */
	hop(a.b, a.a, 5 * kUs, 5 * kUs);
	EXPECT_EQ(a.a.cqes.size(), 1u);
	EXPECT_GE(b.a.kicks, 1);
	EXPECT_EQ(a.a.kicks, 0);
	EXPECT_EQ(drain(b.a, 10 * kUs).size(), 4u);
	EXPECT_FALSE(info(b.a).grp_wait);
	EXPECT_EQ(tg.depth, 0);
	mroce_cc_group_leave(a.a.conn.get());
	mroce_cc_group_leave(b.a.conn.get());
}

// A member that fails or leaves gives its bytes in flight back to the
// group, and the waiting member is kicked.
TEST(CcGroup, FailingOrLeavingMemberReleasesItsWindow)
{
	for (bool fail : {true, false}) {
		mroce_params p = group_params(4);
		TestGroup tg;
		Pair a(p), b(p);
		ASSERT_EQ(mroce_cc_group_join(a.a.conn.get(), &tg.g), 0);
		ASSERT_EQ(mroce_cc_group_join(b.a.conn.get(), &tg.g), 0);
		std::vector<uint8_t> d(4 * 1024, 1);
		ASSERT_EQ(a.a.post(write_wr(d.size()), d, 0), 0);
		ASSERT_EQ(drain(a.a, 0).size(), 4u);
		ASSERT_EQ(b.a.post(write_wr(d.size()), d, 0), 0);
		EXPECT_TRUE(drain(b.a, 0).empty());
		if (fail)
			mroce_conn_set_error(a.a.conn.get(), MROCE_ST_WR_FLUSH);
		else
			mroce_cc_group_leave(a.a.conn.get());
		EXPECT_EQ(tg.g.inflight, 0u) << fail;
		EXPECT_EQ(tg.g.members, fail ? 2u : 1u);
		EXPECT_EQ(b.a.kicks, 1) << fail;
		EXPECT_EQ(drain(b.a, 1 * kUs).size(), 4u) << fail;
		EXPECT_EQ(mroce_conn_check(b.a.conn.get()), nullptr);
		/* a left member is alone again: its own window, nothing shared */
		if (!fail) {
			EXPECT_FALSE(mroce_cc_group_shared(a.a.conn.get()));
			EXPECT_EQ(mroce_conn_check(a.a.conn.get()), nullptr);
		}
		mroce_cc_group_leave(a.a.conn.get());
		mroce_cc_group_leave(b.a.conn.get());
		EXPECT_EQ(tg.g.members, 0u);
		EXPECT_EQ(tg.g.busy, 0u);
		EXPECT_EQ(tg.g.waiting, 0u);
	}
}

namespace {

// N connections through one shared bottleneck (rate bytes/ns, no loss,
// base RTT rtt), each keeping WRITEs outstanding; the transmit loop always
// serves member 0 first, so without the fairness rule the first members
// would take every byte the window frees.
struct Incast {
	struct Ev {
		uint64_t t;
		uint64_t seq;
		size_t i;
		bool to_b;
		std::vector<uint8_t> bytes;
		bool operator>(const Ev &o) const
		{
			return std::tie(t, seq) > std::tie(o.t, o.seq);
		}
	};
	std::vector<std::unique_ptr<Pair>> pr;
	std::vector<uint64_t> done_bytes;
	std::priority_queue<Ev, std::vector<Ev>, std::greater<>> q;
	uint64_t seq = 0, link_free = 0, now = 0;
	double rate;
	uint64_t rtt;
	uint32_t msg = 16 * 1024;

	Incast(size_t n, const mroce_params &p, mroce_cc_group *g, double r,
	       uint64_t base_rtt)
		: done_bytes(n), rate(r), rtt(base_rtt)
	{
		for (size_t i = 0; i < n; i++) {
			pr.push_back(std::make_unique<Pair>(p));
			if (g)
				EXPECT_EQ(mroce_cc_group_join(pr[i]->a.conn.get(), g), 0);
			for (int k = 0; k < 4; k++)
				post(i);
		}
	}

	void post(size_t i)
	{
		auto &a = pr[i]->a;
		uint64_t off = (a.posted.size() % 32) * msg;
		EXPECT_EQ(a.post(write_wr(msg, off), std::vector<uint8_t>(msg, (uint8_t)i), now), 0);
	}

	void send(size_t i, bool to_b, std::vector<uint8_t> b)
	{
		uint64_t t = now + rtt / 2;
		if (to_b) {
			/* the shared bottleneck serialises data */
			uint64_t start = std::max(now, link_free);
			link_free = start + (uint64_t)(b.size() / rate);
			t = link_free + rtt / 2;
		}
		q.push({t, seq++, i, to_b, std::move(b)});
	}

	/* window fill of g (inflight / cwnd) summed over the counted steps */
	mroce_cc_group *fill_of = nullptr;
	double fill = 0;
	uint64_t fill_n = 0;

	void run(uint64_t until, uint64_t count_from)
	{
		while (now < until) {
			if (fill_of && now >= count_from) {
				fill += (double)fill_of->inflight / fill_of->cwnd;
				fill_n++;
			}
			while (!q.empty() && q.top().t <= now) {
				Ev e = q.top();
				q.pop();
				mroce_pkt pk = parse1(e.bytes);
				Endpoint &to = e.to_b ? pr[e.i]->b : pr[e.i]->a;
				mroce_conn_rx(to.conn.get(), &pk, false, now);
			}
			for (size_t i = 0; i < pr.size(); i++) {
				for (Endpoint *e : {&pr[i]->a, &pr[i]->b})
					if (mroce_conn_next_timer(e->conn.get()) <= now)
						mroce_conn_timer(e->conn.get(), now);
				auto &a = pr[i]->a;
				while (a.cqes.size() > a.seen) {
					EXPECT_EQ(a.cqes[a.seen].status, 0u);
					a.seen++;
					if (now >= count_from)
						done_bytes[i] += msg;
					post(i);
				}
				for (auto &x : drain(a, now))
					send(i, true, std::move(x));
				for (auto &x : drain(pr[i]->b, now))
					send(i, false, std::move(x));
			}
			now += 1 * kUs;
		}
	}

	double jain() const
	{
		double s = 0, s2 = 0;
		for (uint64_t x : done_bytes) {
			s += (double)x;
			s2 += (double)x * (double)x;
		}
		return s2 > 0 ? s * s / (done_bytes.size() * s2) : 0;
	}

	uint64_t total() const
	{
		uint64_t t = 0;
		for (uint64_t x : done_bytes)
			t += x;
		return t;
	}
};

}  // namespace

TEST(CcGroup, MembersGetFairSharesOfABottleneck)
{
	mroce_params p = group_params(16);
	TestGroup tg;
	/* 10 Gb/s, 20 us base RTT: a BDP of about 23 packets */
	Incast in(6, p, &tg.g, 1.25, 20 * kUs);
	in.run(30 * kMs, 5 * kMs);
	EXPECT_GE(in.jain(), 0.95) << in.jain() << " " << in.done_bytes[0] << " " << in.done_bytes[5];
	for (uint64_t x : in.done_bytes)
		EXPECT_GT(x, 0u);
	/* the link stays used: at least 70% of 25 ms at 10 Gb/s */
	EXPECT_GE(in.total(), (uint64_t)(0.7 * 25e6 * 1.25 * 1024 / kPkt));
	/* one window for all: never more than it (plus a packet) in flight */
	EXPECT_LE(tg.g.inflight, tg.g.cwnd + kPkt);
	EXPECT_GT(tg.g.kicks, 0u);
	EXPECT_EQ(tg.depth, 0);
	for (auto &x : in.pr)
		EXPECT_EQ(mroce_conn_check(x->a.conn.get()), nullptr);
	for (auto &x : in.pr)
		mroce_cc_group_leave(x->a.conn.get());
	EXPECT_EQ(tg.g.inflight, 0u);
}

// Many members, a share of one or two packets each: the window still
// fills (a member below its share may send a packet past it), and stays
// fair.
TEST(CcGroup, SmallSharesStillFillTheWindow)
{
	mroce_params p = group_params(16);
	TestGroup tg;
	/* 2.5 Gb/s, 100 us base RTT: a BDP of about 230 packets, 24 members */
	Incast in(24, p, &tg.g, 0.3125, 100 * kUs);
	in.fill_of = &tg.g;
	in.run(30 * kMs, 5 * kMs);
	EXPECT_GE(in.fill / in.fill_n, 0.8);
	std::string per;
	for (uint64_t x : in.done_bytes)
		per += " " + std::to_string(x / 1024);
	EXPECT_GE(in.jain(), 0.95) << in.jain() << " KiB:" << per << " cwnd " << tg.g.cwnd
				   << " fill " << in.fill / in.fill_n;
	for (auto &x : in.pr)
		mroce_cc_group_leave(x->a.conn.get());
}

// The same incast with private windows keeps six windows in flight: the
// group keeps the bottleneck's queue (and so the RTT) smaller.
TEST(CcGroup, GroupKeepsLessInFlightThanPrivateWindows)
{
	mroce_params p = group_params(16);
	TestGroup tg;
	Incast shared(6, p, &tg.g, 1.25, 20 * kUs);
	Incast priv(6, p, nullptr, 1.25, 20 * kUs);
	shared.run(2 * kMs, 0);
	priv.run(2 * kMs, 0);
	uint64_t in_priv = 0;
	for (auto &x : priv.pr)
		in_priv += info(x->a).inflight;
	EXPECT_LT(tg.g.inflight * 2, in_priv);
	for (auto &x : shared.pr)
		mroce_cc_group_leave(x->a.conn.get());
}

// Embedders read a connection's counters before its first init (the
// kernel at RTR): zeroed memory must report nothing, not crash.
TEST(CcGroup, InfoOfZeroedMemoryIsEmpty)
{
	auto c = mroce_mem::conn_alloc();
	mroce_conn_info i;
	mroce_conn_get_info(c.get(), &i);
	EXPECT_EQ(i.cwnd, 0u);
	EXPECT_EQ(i.grp_members, 0u);
	EXPECT_EQ(i.inflight, 0u);
}

/*
 * Probes of down paths are paced per group: N members whose every path is
 * down probe no faster than one connection (num_paths per probe_ns), a
 * member held back is not failed for it, and once the peer answers every
 * member's paths come back and its WR completes.
 */
TEST(CcGroup, ProbesArePacedPerGroup)
{
	mroce_params p = one_path_params(2);
	p.retry_budget = 7;
	constexpr int kN = 6;
	TestGroup tg;
	std::vector<std::unique_ptr<Pair>> prs;
	for (int i = 0; i < kN; i++) {
		prs.push_back(std::make_unique<Pair>(p));
		ASSERT_EQ(mroce_cc_group_join(prs[i]->a.conn.get(), &tg.g), 0);
	}
	/* every member sends a WRITE that is lost, until its paths are down */
	uint64_t t = 0;
	for (auto &pr : prs) {
		ASSERT_EQ(pr->a.post(write_wr(100), std::vector<uint8_t>(100, 1), 0), 0);
		drain(pr->a, 0);
	}
	auto all_down = [&] {
		for (auto &pr : prs)
			for (uint32_t k = 0; k < p.num_paths; k++)
				if (pstats(pr->a, k).state != MROCE_PATH_DOWN)
					return false;
		return true;
	};
	while (!all_down()) {
		uint64_t n = UINT64_MAX;
		for (auto &pr : prs)
			n = std::min(n, mroce_conn_next_timer(pr->a.conn.get()));
		ASSERT_NE(n, UINT64_MAX);
		t = n;
		for (auto &pr : prs) {
			if (mroce_conn_next_timer(pr->a.conn.get()) <= t)
				mroce_conn_timer(pr->a.conn.get(), t);
			drain(pr->a, t);
		}
	}
	/* 5 probe periods of silence: num_paths probes per period, not kN x */
	uint64_t start = t;
	std::vector<int> per_window(6);
	int total = 0;
	for (t = start; t < start + 5 * p.probe_ns; t += p.probe_ns / 10) {
		for (int i = 0; i < kN; i++) {
			Endpoint &e = prs[i]->a;
			if (mroce_conn_next_timer(e.conn.get()) <= t)
				mroce_conn_timer(e.conn.get(), t);
			for (auto &w : drain(e, t)) {
				if (!is_op(w, MROCE_OP_PROBE))
					continue;
				total++;
				per_window[(t - start) / p.probe_ns]++;
			}
			ASSERT_EQ(e.conn->state, (uint32_t)MROCE_CONN_OK) << i;
		}
	}
	for (int w = 0; w < 5; w++)
		EXPECT_LE(per_window[w], 2 * (int)p.num_paths) << w;
	EXPECT_LE(total, 6 * (int)p.num_paths);
	EXPECT_GT(total, 0);
	/* the peer answers again: every member recovers and completes */
	for (int k = 0; k < 20000; k++) {
		t += p.probe_ns / 10;
		bool done = true;
		for (auto &pr : prs) {
			if (mroce_conn_next_timer(pr->a.conn.get()) <= t)
				mroce_conn_timer(pr->a.conn.get(), t);
			if (mroce_conn_next_timer(pr->b.conn.get()) <= t)
				mroce_conn_timer(pr->b.conn.get(), t);
			hop(pr->a, pr->b, t, 0);
			hop(pr->b, pr->a, t, 0);
			done = done && !pr->a.cqes.empty();
		}
		if (done)
			break;
	}
	for (int i = 0; i < kN; i++) {
		ASSERT_EQ(prs[i]->a.cqes.size(), 1u) << i;
		EXPECT_EQ(prs[i]->a.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS) << i;
	}
}
