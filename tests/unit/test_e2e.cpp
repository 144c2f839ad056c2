// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Property-style randomized runs: two cores exchange a random mix of
// SEND, WRITE(_IMM), READ and atomics in both directions through a lossy,
// reordering, duplicating, ECN-marking channel.  For every seed: every
// byte lands exactly once and intact, completions come in posting order,
// atomics execute exactly once in order, the bounded state stays
// consistent after every event, and the transfer finishes.
#include "util.h"

using namespace mroce_test;

namespace {

struct Expect {
	uint64_t cookie;
	uint32_t op;
	std::vector<uint8_t> data;	/* SEND/WRITE payload, READ expected */
	uint64_t off;			/* WRITE target / READ source offset */
	uint32_t rq_seq;
	uint64_t addend;
};

constexpr uint64_t kReadSrc = 0x80000;	/* read-only area of each memory */
constexpr uint64_t kCounter = 0xf0000;	/* fetch-add counter */
constexpr uint32_t kReadSrcLen = 0x40000;

struct Scenario {
	uint64_t seed;
	ChannelCfg ch;
	uint32_t paths;
	uint32_t max_inflight;
	int wrs;
	uint32_t max_len;
	/* table sizes (mroce_params): 0 keeps the default */
	uint32_t max_msgs = 0;
	uint32_t path_wnd = 0;
	uint32_t snd_wnd_a = 0;	/* side a's DSN window only (b: max_inflight) */
	uint32_t max_seg[2] = { 0, 0 };	/* mroce_params.max_seg of each end */
};

void run_scenario(const Scenario &sc)
{
	std::mt19937_64 rng(sc.seed * 7919 + 1);
	auto pa = World::params(sc.seed, sc.paths);
	pa.max_inflight = sc.max_inflight;
	if (sc.max_msgs)
		pa.max_msgs = sc.max_msgs;
	if (sc.path_wnd) {
		pa.path_wnd = sc.path_wnd;
		mroce_params_set_mtu(&pa, pa.mtu);
	}
	auto pb = pa;
	pb.seed = sc.seed + 1000;
	pa.max_seg = sc.max_seg[0];
	pb.max_seg = sc.max_seg[1];
	pa.snd_wnd = sc.snd_wnd_a;
	World w(sc.seed, pa, pb);
	w.ch.cfg = sc.ch;
	for (auto &e : w.ep)
		for (uint32_t i = 0; i < kReadSrcLen; i++)
			e.mem[kReadSrc + i] = (uint8_t)rng();

	std::vector<Expect> exp[2];
	uint32_t rq_seq[2] = { 0, 0 };
	uint64_t counter_sum[2] = { 0, 0 };
	uint64_t write_off[2] = { 0, 0 };
	int posted = 0;
	auto post_one = [&](int from) {
		Endpoint &e = w.ep[from];
		Endpoint &peer = w.ep[1 - from];
		uint32_t len = (uint32_t)(rng() % (sc.max_len + 1));
		if (rng() % 8 == 0)
			len = 0;
		mroce_wr wr{};
		Expect x{};
		int kind = (int)(rng() % 6);
		switch (kind) {
		case 0:
		case 1:
			wr.op = kind ? MROCE_WOP_SEND_IMM : MROCE_WOP_SEND;
			wr.imm = (uint32_t)rng();
			x.data = random_bytes(rng, len);
			x.rq_seq = rq_seq[from]++;
			peer.post_recv(len);
			break;
		case 2:
		case 3:
			wr.op = kind == 2 ? MROCE_WOP_WRITE : MROCE_WOP_WRITE_IMM;
			if (write_off[from] + len > kReadSrc) {
				/*
				 * Concurrent overlapping WRITEs have no byte
				 * order (packets are placed as they arrive):
				 * let the earlier ones finish before reuse.
				 */
				size_t n = exp[from].size();
				w.run_until([&] {
					size_t req = 0;
					for (auto &c : e.cqes)
						req += c.kind == MROCE_CQE_REQ;
					return req >= n;
				}, w.now + 60000 * kMs);
				write_off[from] = 0;
			}
			x.off = write_off[from];
			write_off[from] += len;
			wr.remote_va = kMemVa + x.off;
			wr.rkey = kRkey;
			x.data = random_bytes(rng, len);
			if (wr.op == MROCE_WOP_WRITE_IMM) {
				x.rq_seq = rq_seq[from]++;
				peer.post_recv(0);
			}
			break;
		case 4:
			wr.op = MROCE_WOP_READ;
			len = std::min(len, kReadSrcLen);
			x.off = kReadSrc + rng() % (kReadSrcLen - len + 1);
			wr.remote_va = kMemVa + x.off;
			wr.rkey = kRkey;
			x.data.assign(peer.mem.begin() + x.off,
				      peer.mem.begin() + x.off + len);
			break;
		default:
			wr.op = MROCE_WOP_FETCH_ADD;
			len = 8;
			wr.remote_va = kMemVa + kCounter;
			wr.rkey = kRkey;
			wr.compare_add = rng() % 1000;
			x.addend = wr.compare_add;
			x.off = counter_sum[from];	/* expected orig */
			counter_sum[from] += wr.compare_add;
			break;
		}
		wr.length = len;
		x.op = wr.op;
		std::vector<uint8_t> buf = x.data;
		if (wr.op == MROCE_WOP_READ)
			buf.assign(len, 0);
		int r = e.post(wr, buf, w.now);
		if (r == MROCE_E_NOSPC) {
			if (wr.op == MROCE_WOP_FETCH_ADD)
				counter_sum[from] -= wr.compare_add;
			if (x.rq_seq + 1 == rq_seq[from] &&
			    (wr.op == MROCE_WOP_SEND || wr.op == MROCE_WOP_SEND_IMM ||
			     wr.op == MROCE_WOP_WRITE_IMM)) {
				rq_seq[from]--;
				peer.recvs.pop_back();
			}
			return false;
		}
		EXPECT_EQ(r, 0);
		x.cookie = e.posted.back();
		exp[from].push_back(std::move(x));
		posted++;
		return true;
	};

	/* post in bursts while the transfer runs */
	int to_post = sc.wrs;
	while (to_post > 0) {
		int from = (int)(rng() % 2);
		if (post_one(from))
			to_post--;
		if (rng() % 4 == 0) {
			uint64_t until = w.now + 20 * kUs;
			w.run_until([&] { return w.now >= until; }, until + 1);
			ASSERT_FALSE(testing::Test::HasFatalFailure());
		}
		if (w.now > 60000 * kMs)
			FAIL() << "posting stalled";
	}
	size_t want0 = exp[0].size(), want1 = exp[1].size();
	bool done = w.run_until([&] {
		return w.ep[0].cqes.size() >= want0 + rq_seq[1] &&
		       w.ep[1].cqes.size() >= want1 + rq_seq[0] &&
		       mroce_conn_idle(w.ep[0].conn.get()) &&
		       mroce_conn_idle(w.ep[1].conn.get());
	}, w.now + 60000 * kMs);
	ASSERT_TRUE(done) << "seed " << sc.seed << " did not finish: cqes "
			  << w.ep[0].cqes.size() << "/" << want0 + rq_seq[1] << " "
			  << w.ep[1].cqes.size() << "/" << want1 + rq_seq[0]
			  << " at " << w.now / kUs << " us";

	for (int s = 0; s < 2; s++) {
		Endpoint &e = w.ep[s];
		Endpoint &peer = w.ep[1 - s];
		SCOPED_TRACE(testing::Message() << "seed " << sc.seed << " side " << s);
		EXPECT_EQ(e.dup_placements, 0);
		EXPECT_EQ(e.conn->state, (uint32_t)MROCE_CONN_OK);
		/* requester completions: all, successful, in posting order */
		std::vector<mroce_completion> req, rcv;
		for (auto &c : e.cqes)
			(c.kind == MROCE_CQE_REQ ? req : rcv).push_back(c);
		ASSERT_EQ(req.size(), exp[s].size());
		for (size_t i = 0; i < req.size(); i++) {
			const Expect &x = exp[s][i];
			ASSERT_EQ(req[i].cookie, x.cookie) << i;
			EXPECT_EQ(req[i].status, 0u) << i;
			if (x.op == MROCE_WOP_READ)
				EXPECT_EQ(e.bufs[x.cookie], x.data) << "READ " << i;
			if (x.op == MROCE_WOP_FETCH_ADD)
				EXPECT_EQ(req[i].atomic_orig, x.off) << "FADD " << i;
		}
		/* the peer's receive completions, in rq_seq order */
		std::vector<mroce_completion> prcv;
		for (auto &c : peer.cqes)
			if (c.kind == MROCE_CQE_RECV)
				prcv.push_back(c);
		ASSERT_EQ(prcv.size(), rq_seq[s]);
		for (size_t i = 0; i < prcv.size(); i++)
			EXPECT_EQ(prcv[i].rq_seq, i);
		/* the data of every SEND and the last WRITE to each byte */
		for (const Expect &x : exp[s]) {
			if (x.op == MROCE_WOP_SEND || x.op == MROCE_WOP_SEND_IMM) {
				EXPECT_EQ(peer.recvs[x.rq_seq], x.data);
				EXPECT_EQ(prcv[x.rq_seq].byte_len, x.data.size());
			}
		}
		std::vector<int> last(kReadSrc, -1);
		for (size_t i = 0; i < exp[s].size(); i++) {
			const Expect &x = exp[s][i];
			if (x.op == MROCE_WOP_WRITE || x.op == MROCE_WOP_WRITE_IMM)
				for (size_t k = 0; k < x.data.size(); k++)
					last[x.off + k] = (int)i;
		}
		size_t bad = 0;
		for (size_t k = 0; k < kReadSrc; k++)
			if (last[k] >= 0 &&
			    peer.mem[k] != exp[s][last[k]].data[k - exp[s][last[k]].off])
				bad++;
		EXPECT_EQ(bad, 0u) << "bytes differ in WRITE targets";
		uint64_t ctr;
		memcpy(&ctr, &peer.mem[kCounter], 8);
		EXPECT_EQ(ctr, counter_sum[s]);
	}
	/* CRC32c catches every single-bit error the channel injected */
	if (w.ch.empty())
		EXPECT_EQ(w.parse_errors, w.ch.corrupted);
	else
		EXPECT_LE(w.parse_errors, w.ch.corrupted);
}

}  // namespace

TEST(E2E, LosslessMixedTraffic)
{
	Scenario sc{ 1, {}, 4, 1024, 120, 20000 };
	run_scenario(sc);
}

TEST(E2E, SinglePathSmallWindow)
{
	ChannelCfg ch;
	ch.loss = 0.02;
	ch.reorder = 0.1;
	Scenario sc{ 2, ch, 1, 16, 60, 6000 };
	run_scenario(sc);
}

class E2ESeeds : public testing::TestWithParam<int> {};

TEST_P(E2ESeeds, LossyReorderingDuplicatingChannel)
{
	int seed = GetParam();
	std::mt19937_64 r(seed);
	ChannelCfg ch;
	ch.loss = (r() % 100) / 1000.0;		/* 0 .. 10% */
	ch.dup = (r() % 50) / 1000.0;		/* 0 .. 5% */
	ch.reorder = (r() % 300) / 1000.0;	/* 0 .. 30% */
	ch.ce = (r() % 50) / 1000.0;
	ch.corrupt = (r() % 3 == 0) ? 0.01 : 0;
	ch.jitter_ns = 1 + r() % (20 * kUs);
	uint32_t paths = 1 + (uint32_t)(r() % 16);
	uint32_t inflight = 16u << (r() % 7);	/* 16 .. 1024 */
	Scenario sc{ (uint64_t)seed, ch, paths, inflight, 40 + (int)(r() % 60),
		     (uint32_t)(r() % 30000) };
	/* segments above the path MTU (1024): both, one end, asymmetric */
	static const uint32_t segs[4][2] = { { 0, 0 }, { 1408, 2048 },
					     { 2048, 0 }, { 1344, 4096 } };
	const uint32_t *sg = segs[r() % 4];
	sc.max_seg[0] = sg[0];
	sc.max_seg[1] = sg[1];
	RecordProperty("paths", (int)paths);
	run_scenario(sc);
}

INSTANTIATE_TEST_SUITE_P(Seeds, E2ESeeds, testing::Range(100, 140));

// Tables sized by use (mroce_params max_msgs, path_wnd): the smallest
// ones still move every byte exactly once through loss and reordering;
// posting waits (E_NOSPC) instead of overrunning the message table, and
// mroce_conn_check() holds every path to its path_wnd.
class E2ESizedSeeds : public testing::TestWithParam<int> {};

TEST_P(E2ESizedSeeds, SmallTablesLossyChannel)
{
	int seed = GetParam();
	std::mt19937_64 r(seed);
	ChannelCfg ch;
	ch.loss = (r() % 60) / 1000.0;		/* 0 .. 6% */
	ch.dup = (r() % 30) / 1000.0;
	ch.reorder = (r() % 300) / 1000.0;
	ch.jitter_ns = 1 + r() % (20 * kUs);
	uint32_t paths = 1 + (uint32_t)(r() % 16);
	uint32_t inflight = 16u << (r() % 7);	/* 16 .. 1024 */
	uint32_t msgs = 1u << (r() % 9);	/* 1 .. 256 */
	uint32_t wnd = 16u << (r() % 5);	/* 16 .. 256 */
	uint32_t snd = std::max(16u, inflight >> (r() % 4));	/* a's window */
	Scenario sc{ (uint64_t)seed, ch, paths, inflight, 40 + (int)(r() % 40),
		     (uint32_t)(r() % 20000), msgs, wnd, snd };
	RecordProperty("max_msgs", (int)msgs);
	RecordProperty("path_wnd", (int)wnd);
	RecordProperty("snd_wnd_a", (int)snd);
	/* and segments above the path MTU on either end */
	static const uint32_t segs[3][2] = { { 0, 0 }, { 1344, 2048 },
					     { 4096, 1408 } };
	const uint32_t *sg = segs[r() % 3];
	sc.max_seg[0] = sg[0];
	sc.max_seg[1] = sg[1];
	run_scenario(sc);
}

INSTANTIATE_TEST_SUITE_P(Seeds, E2ESizedSeeds, testing::Range(300, 320));

// One message slot, one path of 16 PSNs: everything still arrives, in
// posting order.
TEST(E2E, OneMessageSlotSmallestPathWindow)
{
	ChannelCfg ch;
	ch.loss = 0.03;
	ch.reorder = 0.2;
	Scenario sc{ 3, ch, 1, 64, 50, 40000, 1, 16 };
	run_scenario(sc);
}

// A sender whose DSN window (snd_wnd 16) is far below the window its peer
// accepts (max_inflight 1024) and below the peer's own: both directions
// move everything, and the small side never has more than 16 out.
TEST(E2E, SmallSendWindowAgainstFullPeer)
{
	ChannelCfg ch;
	ch.loss = 0.02;
	ch.reorder = 0.1;
	Scenario sc{ 4, ch, 4, 1024, 60, 30000, 0, 0, 16 };
	run_scenario(sc);
}

// A bulk WRITE spread over 16 paths: the receiver acknowledges every path,
// but with one ACK per ack_every (4) packets of the connection, the other
// paths riding along as ACK blocks, not one ACK per path and packet.  The
// channel's jitter reorders a burst's packets, and a packet out of order
// on its path is acknowledged at once, so the ratio is above 1/4: 207 ACKs
// for 512 packets here, 355 before ACK blocks.
TEST(E2E, AckBlocksCoalesceAcksAcrossPaths)
{
	auto pa = World::params(11, 16);
	auto pb = pa;
	pb.seed = 12;
	World w(11, pa, pb);
	std::mt19937_64 rng(5);
	auto data = random_bytes(rng, 8 * 65536);
	for (int k = 0; k < 8; k++) {
		mroce_wr wr{};
		wr.op = MROCE_WOP_WRITE;
		wr.remote_va = kMemVa + k * 65536;
		wr.rkey = kRkey;
		wr.length = 65536;
		ASSERT_EQ(w.ep[0].post(wr, std::vector<uint8_t>(
				data.begin() + k * 65536,
				data.begin() + (k + 1) * 65536), w.now), 0);
	}
	ASSERT_TRUE(w.run_until([&] { return w.ep[0].cqes.size() == 8; },
				w.now + 10000 * kMs));
	for (auto &c : w.ep[0].cqes)
		EXPECT_EQ(c.status, MROCE_ST_SUCCESS);
	EXPECT_TRUE(std::equal(data.begin(), data.end(), w.ep[1].mem.begin()));
	/* the last ACKs land */
	w.run_until([] { return false; }, w.now + 1 * kMs);

	const mroce_conn_stats &a = w.ep[0].conn->st, &b = w.ep[1].conn->st;
	EXPECT_EQ(a.tx_retx, 0u);
	EXPECT_GE(a.tx_data, 8u * 64);
	EXPECT_EQ(a.rx_acks, b.tx_acks);	/* clean channel */
	EXPECT_GT(b.tx_ack_blks, 0u);
	EXPECT_LE(b.tx_acks * 2, a.tx_data)
		<< b.tx_acks << " ACKs for " << a.tx_data << " data packets";
	/* every ACK counted once by its cause; in a stream most are every-N */
	uint64_t why = 0;
	for (uint32_t i = 0; i < MROCE_ACKW_NUM; i++)
		why += b.tx_ack_why[i];
	EXPECT_EQ(why, b.tx_acks);
	EXPECT_GT(b.tx_ack_why[MROCE_ACKW_EVERY], 0u);
	/*
	 * and through the blocks every path learnt of its packets (the few a
	 * newer cum_dsn covered first are not counted on their path)
	 */
	uint64_t delivered = 0;
	for (uint32_t i = 0; i < 16; i++) {
		mroce_path_stats ps;
		ASSERT_EQ(mroce_conn_path_stats(w.ep[0].conn.get(), i, &ps), 0);
		EXPECT_GT(ps.delivered_pkts, 0u) << "path " << i;
		delivered += ps.delivered_pkts;
	}
	EXPECT_GE(delivered * 10, a.tx_data * 9);
}

// Segments sized by what both ends accept (spec 3.6): a message posted
// before the peer's first ACK is cut into path-MTU segments, later ones
// into min(our max_seg, the peer's advertised), READ responses by the
// responder likewise; an end with max_seg 0 keeps the path MTU both ways.
TEST(E2E, SegmentsFollowTheAdvertisedSize)
{
	struct Case {
		uint32_t a, b;		/* max_seg of each end */
		uint32_t seg_ab;	/* a's segments once it heard b */
		uint32_t seg_ba;	/* b's READ responses to a */
	};
	for (const Case &k : { Case{ 1408, 2048, 1408, 1408 },
			       Case{ 2048, 1408, 1408, 1408 },
			       Case{ 4096, 0, 1024, 1024 },
			       Case{ 0, 4096, 1024, 1024 } }) {
		SCOPED_TRACE(std::to_string(k.a) + "/" + std::to_string(k.b));
		auto pa = World::params(21, 1);
		auto pb = pa;
		pb.seed = 22;
		pa.max_seg = k.a;
		pb.max_seg = k.b;
		World w(21, pa, pb);
		std::mt19937_64 rng(9);
		const uint32_t len = 65536;
		auto data = random_bytes(rng, 2 * len);
		auto write = [&](int n) {
			mroce_wr wr{};
			wr.op = MROCE_WOP_WRITE;
			wr.remote_va = kMemVa + n * len;
			wr.rkey = kRkey;
			wr.length = len;
			ASSERT_EQ(w.ep[0].post(wr, std::vector<uint8_t>(
					data.begin() + n * len,
					data.begin() + (n + 1) * len), w.now), 0);
			size_t want = n + 1;
			ASSERT_TRUE(w.run_until([&] {
				return w.ep[0].cqes.size() == want; },
				w.now + 1000 * kMs));
			EXPECT_EQ(w.ep[0].cqes.back().status, MROCE_ST_SUCCESS);
		};
		const mroce_conn_stats &a = w.ep[0].conn->st;
		const mroce_conn_stats &b = w.ep[1].conn->st;
		write(0);
		EXPECT_EQ(a.tx_data, (len + 1023) / 1024) << "first: path MTU";
		uint64_t before = a.tx_data;
		write(1);
		EXPECT_EQ(a.tx_data - before, (len + k.seg_ab - 1) / k.seg_ab);
		EXPECT_TRUE(std::equal(data.begin(), data.end(),
				       w.ep[1].mem.begin()));
		/*
		 * READs of what b holds: b's segments toward a, in the path
		 * MTU until a's first ACK (of the first response) reached b
		 */
		for (uint32_t n = 0; n < 2; n++) {
			uint32_t seg = n ? k.seg_ba : 1024;
			before = b.tx_data;
			mroce_wr rd{};
			rd.op = MROCE_WOP_READ;
			rd.remote_va = kMemVa + n * len;
			rd.rkey = kRkey;
			rd.length = len;
			ASSERT_EQ(w.ep[0].post(rd, std::vector<uint8_t>(len),
					       w.now), 0);
			size_t want = 3 + n;
			ASSERT_TRUE(w.run_until([&] {
				return w.ep[0].cqes.size() == want; },
				w.now + 1000 * kMs));
			EXPECT_EQ(w.ep[0].cqes.back().status, MROCE_ST_SUCCESS);
			EXPECT_EQ(b.tx_data - before, (len + seg - 1) / seg)
				<< "READ " << n;
			uint64_t ck = w.ep[0].cqes.back().cookie;
			EXPECT_TRUE(std::equal(data.begin() + n * len,
					       data.begin() + (n + 1) * len,
					       w.ep[0].bufs[ck].begin()));
		}
		EXPECT_EQ(a.tx_retx + b.tx_retx, 0u);
	}
}

// A receiver takes only the segment sizes it advertises: a segment above
// its max_seg is dropped before it touches any state, and a packet naming
// another size than its message's first packet is dropped too.
TEST(E2E, SegmentAboveWhatTheReceiverTakesIsDropped)
{
	auto pa = World::params(31, 1);
	auto pb = pa;
	pb.seed = 32;
	pa.max_seg = 4096;
	pb.max_seg = 2048;
	World w(31, pa, pb);	/* b takes 1024 (the path MTU) .. 2048 */
	mroce_pkt p{};
	p.version = MROCE_WIRE_VERSION;
	p.opcode = MROCE_OP_WRITE;
	p.ext = mroce_op_ext(MROCE_OP_WRITE);
	p.flags = MROCE_F_FIRST;
	p.dqpn = pb.dqpn;
	p.dsn = w.ep[1].conn->rcv_dsn_cum;
	p.msn = w.ep[1].conn->rcv_msn_cum;
	p.psn = w.ep[1].conn->path[0].rcv_sb.high;
	p.reth.va = kMemVa;
	p.reth.rkey = kRkey;
	p.reth.length = 8192;
	p.seg = 4096;
	p.payload_len = 4096;
	std::vector<uint8_t> pl(4096, 0x5a);
	p.payload = pl.data();
	uint64_t drop = w.ep[1].conn->st.rx_drop;
	EXPECT_LT(mroce_conn_rx(w.ep[1].conn.get(), &p, false, w.now), 0);
	EXPECT_EQ(w.ep[1].conn->st.rx_drop, drop + 1);
	EXPECT_EQ(w.ep[1].mem[0], 0);
	/* 1024 is accepted, then the same message naming 2048 is not */
	p.seg = 0;
	p.payload_len = 1024;
	EXPECT_EQ(mroce_conn_rx(w.ep[1].conn.get(), &p, false, w.now), 0);
	EXPECT_EQ(w.ep[1].mem[0], 0x5a);
	p.flags = 0;
	p.offset = 2048;
	p.dsn += 1;
	p.psn += 1;
	p.seg = 2048;	/* b takes 2048, but not in a 1024 message */
	p.payload_len = 2048;
	EXPECT_LT(mroce_conn_rx(w.ep[1].conn.get(), &p, false, w.now), 0);
	EXPECT_EQ(w.ep[1].mem[2048], 0);
	/* the message goes on in its own size */
	p.seg = 0;
	p.payload_len = 1024;
	p.offset = 1024;
	EXPECT_EQ(mroce_conn_rx(w.ep[1].conn.get(), &p, false, w.now), 0);
	EXPECT_EQ(w.ep[1].mem[1024], 0x5a);
}
