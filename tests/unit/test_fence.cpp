// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// verbs FENCE: a fenced WR leaves only after every earlier READ and
// atomic of the connection completed, so a WRITE fenced behind a READ of
// the same bytes can never be placed before the READ read them, whatever
// the channel does; without the flag, nothing waits.
#include "util.h"

using namespace mroce_test;

namespace {

constexpr uint64_t kSrc = 0x1000;	/* the READ's source and the WRITE's target */
constexpr uint32_t kReadLen = 64 * 1024;
constexpr uint32_t kWriteLen = 4096;

mroce_wr fadd_wr(uint64_t off, uint64_t add)
{
	mroce_wr wr{};
	wr.op = MROCE_WOP_FETCH_ADD;
	wr.length = 8;
	wr.remote_va = kMemVa + off;
	wr.rkey = kRkey;
	wr.compare_add = add;
	return wr;
}

// What a run saw: was the WRITE's target changed while the earlier
// READ/atomic of ep[0] had not completed, and what did the READ return.
struct Seen {
	bool early = false;
	bool done = false;
	std::vector<uint8_t> read;
	uint64_t atomic_orig = 0;
};

// ep[0] posts `first` (a READ of kReadLen at kSrc, or a fetch-add at kSrc)
// and then a WRITE of kWriteLen 0xee bytes to kSrc, fenced or not; the
// channel is lossy and reordering.
Seen run(uint64_t seed, bool fence, bool atomic)
{
	auto pa = World::params(seed, 4);
	World w(seed, pa, pa);
	w.ch.cfg.loss = 0.02;
	w.ch.cfg.reorder = 0.3;
	w.ch.cfg.reorder_ns = 200 * kUs;
	Endpoint &a = w.ep[0], &b = w.ep[1];
	for (uint32_t i = 0; i < kReadLen; i++)
		b.mem[kSrc + i] = (uint8_t)((i * 13 + 1) & 0x7f);
	const std::vector<uint8_t> orig(b.mem.begin() + kSrc,
					b.mem.begin() + kSrc + kReadLen);

	const uint64_t c_first = a.next_cookie;
	EXPECT_EQ(a.post(atomic ? fadd_wr(kSrc, 1) : read_wr(kReadLen, kSrc),
			 std::vector<uint8_t>(atomic ? 8 : kReadLen), 0), 0);
	mroce_wr wr = write_wr(kWriteLen, kSrc);
	wr.fence = fence;
	EXPECT_EQ(a.post(wr, std::vector<uint8_t>(kWriteLen, 0xee), 0), 0);

	Seen s;
	auto first_done = [&] {
		for (auto &c : a.cqes)
			if (c.cookie == c_first)
				return true;
		return false;
	};
		// The WRITE's last byte (the source pattern has no 0xee byte).
	s.done = w.run_until([&] {
		if (!first_done() && b.mem[kSrc + kWriteLen - 1] == 0xee)
			s.early = true;
		return a.cqes.size() == 2;
	}, 10 * 1000 * kMs);
	EXPECT_TRUE(s.done) << "seed " << seed;
	EXPECT_EQ(a.cqes.size(), 2u);
	for (auto &c : a.cqes)
		EXPECT_EQ(c.status, MROCE_ST_SUCCESS);
	s.read = a.bufs.at(c_first);
	for (auto &c : a.cqes)
		if (c.cookie == c_first)
			s.atomic_orig = c.atomic_orig;
	if (!atomic)
		EXPECT_EQ(s.read.size(), orig.size());
	return s;
}

TEST(Fence, WriteFencedBehindReadNeverOvertakesIt)
{
	for (uint64_t seed = 1; seed <= 12; seed++) {
		Seen s = run(seed, true, false);
		EXPECT_FALSE(s.early) << "seed " << seed
				      << ": fenced WRITE placed before the READ completed";
		for (uint32_t i = 0; i < kReadLen; i++)
			if (s.read[i] != (uint8_t)((i * 13 + 1) & 0x7f)) {
				ADD_FAILURE() << "seed " << seed << ": READ byte " << i
					      << " is the WRITE's";
				break;
			}
	}
}

TEST(Fence, WriteFencedBehindAtomicWaitsForItsResponse)
{
	for (uint64_t seed = 1; seed <= 12; seed++) {
		Seen s = run(seed, true, true);
		EXPECT_FALSE(s.early) << "seed " << seed;
		uint64_t orig = s.atomic_orig, want = 0;
		for (uint32_t i = 0; i < 8; i++)
			want |= (uint64_t)(uint8_t)((i * 13 + 1) & 0x7f) << (8 * i);
		EXPECT_EQ(orig, want) << "seed " << seed;
	}
}

// The control: without FENCE the WRITE goes out with the READ, and on this
// channel some seed places it first (placement is out of order).  This is
// what makes the fenced test above able to fail.
TEST(Fence, UnfencedWriteCanOvertakeARead)
{
	int early = 0;
	for (uint64_t seed = 1; seed <= 12; seed++)
		early += run(seed, false, false).early;
	EXPECT_GT(early, 0);
}

// FENCE waits for READs and atomics only: behind a WRITE it does not wait.
TEST(Fence, FenceBehindAWriteDoesNotWait)
{
	auto pa = World::params(3, 4);
	World w(3, pa, pa);
	Endpoint &a = w.ep[0];
	ASSERT_EQ(a.post(write_wr(kWriteLen, 0x20000), std::vector<uint8_t>(kWriteLen, 1), 0), 0);
	mroce_wr wr = write_wr(kWriteLen, 0x30000);
	wr.fence = true;
	ASSERT_EQ(a.post(wr, std::vector<uint8_t>(kWriteLen, 2), 0), 0);
	// Both WRITEs leave in the first burst, before any ACK.
	auto out = drain(a, 0);
	std::set<uint32_t> msns;
	for (auto &p : out)
		msns.insert(parse1(p).msn);
	EXPECT_EQ(msns.size(), 2u);
}

} // namespace
