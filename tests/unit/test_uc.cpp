// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Unreliable connected (UC) packets: the parser's rules for the UC_*
// opcodes, segmentation (mroce_uc_seg) and the receiver's assembly rule
// (mroce_uc_rx_pkt): a message is completed only when all of its packets
// arrived, in order, consistent with its first one; loss, duplication,
// reordering and forgery never complete a torn message.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "mroce_core.h"
#include "util.h"

namespace {

constexpr uint32_t kMtu = 1024;
constexpr uint32_t kIsn = 0x9fc685;	// MSN start near 2^32: the space wraps

std::vector<uint8_t> build(const mroce_pkt &p)
{
	std::vector<uint8_t> b(MROCE_MAX_PKT);
	int n = mroce_pkt_build(b.data(), b.size(), &p);
	EXPECT_GT(n, 0) << mroce_strerror(n);
	b.resize(n > 0 ? n : 0);
	return b;
}

int parse(const std::vector<uint8_t> &b, mroce_pkt *out)
{
	return mroce_pkt_parse(b.data(), b.size(), out);
}

void reseal(std::vector<uint8_t> &b)
{
	ASSERT_EQ(mroce_pkt_seal(b.data(), b.size() - 4, b.size()), (int)b.size());
}

const uint8_t kPayload[MROCE_MAX_PAYLOAD] = { 9, 8, 7 };

mroce_uc_msg msg(uint8_t op, uint32_t msn, uint32_t len)
{
	mroce_uc_msg m{};
	m.opcode = op;
	m.msn = msn;
	m.length = len;
	m.va = 0x7f0000001000ULL;
	m.rkey = 0x4321;
	m.imm = 0xc0ffee;
	m.solicited = true;
	return m;
}

// Every packet of m, built and parsed again, as the receiver gets them.
std::vector<std::vector<uint8_t>> wire(const mroce_uc_msg &m, uint32_t mtu = kMtu)
{
	std::vector<std::vector<uint8_t>> out;
	uint32_t off = 0, psn = 0;
	do {
		mroce_pkt p;
		int n = mroce_uc_seg(&m, off, mtu, 0x42, psn++, &p);
		EXPECT_GE(n, 0) << mroce_strerror(n);
		if (n < 0)
			break;
		p.payload = kPayload;
		out.push_back(build(p));
		off += n;
	} while (off < m.length);
	return out;
}

uint32_t msn0() { return mroce_isn_start(kIsn, MROCE_ISN_MSN); }

struct Rx {
	mroce_uc_rx u;
	Rx() { mroce_uc_rx_init(&u, kIsn, kMtu); }
	// Feed one wire packet; returns mroce_uc_rx_pkt()'s result.
	int feed(const std::vector<uint8_t> &b, mroce_uc_step *st = nullptr)
	{
		mroce_pkt p;
		mroce_uc_step tmp;
		EXPECT_EQ(parse(b, &p), 0);
		return mroce_uc_rx_pkt(&u, &p, st ? st : &tmp);
	}
};

TEST(Uc, OpcodesAndRoundTrip)
{
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_UC_SEND), 40u);
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_UC_SEND_IMM), 44u);
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_UC_WRITE), 48u);
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_UC_WRITE_IMM), 60u);
	for (uint8_t op = 0; op < 0xff; op++) {
		bool uc = op >= MROCE_OP_UC_SEND && op <= MROCE_OP_UC_WRITE_IMM;
		EXPECT_EQ(mroce_op_is_uc(op), uc) << int(op);
		if (uc) {
			EXPECT_FALSE(mroce_op_is_data(op));
			EXPECT_FALSE(mroce_op_is_ud(op));
		}
	}
	for (uint8_t op : { MROCE_OP_UC_SEND, MROCE_OP_UC_SEND_IMM, MROCE_OP_UC_WRITE,
			    MROCE_OP_UC_WRITE_IMM }) {
		auto m = msg(op, 0x12345678, 2500);
		auto pkts = wire(m);
		ASSERT_EQ(pkts.size(), 3u);
		for (size_t i = 0; i < pkts.size(); i++) {
			mroce_pkt q;
			ASSERT_EQ(parse(pkts[i], &q), 0) << int(op) << " " << i;
			EXPECT_EQ(q.opcode, op);
			EXPECT_EQ(q.msn, 0x12345678u);
			EXPECT_EQ(q.offset, i * kMtu);
			EXPECT_EQ(q.payload_len, i < 2 ? kMtu : 2500 - 2 * kMtu);
			EXPECT_EQ(q.psn, i);
			EXPECT_EQ(q.path, 0);
			EXPECT_EQ(q.dsn, 0u);
			EXPECT_EQ(q.dqpn, 0x42u);
			uint16_t f = (i == 0 ? MROCE_F_FIRST : 0) |
				     (i == 2 ? MROCE_F_LAST : 0);
			if (i == 2 && op != MROCE_OP_UC_WRITE)
				f |= MROCE_F_SOLICITED;
			EXPECT_EQ(q.flags, f);
			if (q.ext & MROCE_EXT_RETH) {
				EXPECT_EQ(q.reth.va, m.va);
				EXPECT_EQ(q.reth.rkey, m.rkey);
				EXPECT_EQ(q.reth.length, 2500u);
			}
			if (q.ext & MROCE_EXT_SETH) {
				EXPECT_EQ(q.seth.length, 2500u);
				EXPECT_EQ(q.seth.rq_seq, 0u);
			}
			if (q.ext & MROCE_EXT_IMETH)
				EXPECT_EQ(q.imm, 0xc0ffeeu);
		}
	}
	// an empty message: one packet, FIRST and LAST, no payload
	auto e = wire(msg(MROCE_OP_UC_SEND, 1, 0));
	ASSERT_EQ(e.size(), 1u);
	mroce_pkt q;
	ASSERT_EQ(parse(e[0], &q), 0);
	EXPECT_EQ(q.flags, MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_SOLICITED);
	EXPECT_EQ(q.payload_len, 0);
}

// A field set to a value the parser must refuse, with the code it returns.
struct UcBad {
	const char *name;
	uint8_t op;
	void (*edit)(mroce_pkt &);
	int err;
};

class UcParseReject : public testing::TestWithParam<UcBad> {};

TEST_P(UcParseReject, Refused)
{
	const UcBad &c = GetParam();
	mroce_uc_msg m = msg(c.op, 7, 3000);
	mroce_pkt p;
	ASSERT_EQ(mroce_uc_seg(&m, kMtu, kMtu, 0x42, 1, &p), int(kMtu));
	p.payload = kPayload;
	c.edit(p);
	std::vector<uint8_t> b(MROCE_MAX_PKT);
	int n = mroce_pkt_build(b.data(), b.size(), &p);
	if (n < 0) {
		// the builder refuses it already (adl, flags outside the mask)
		EXPECT_EQ(n, MROCE_E_INVAL);
		return;
	}
	b.resize(n);
	mroce_pkt q;
	EXPECT_EQ(parse(b, &q), c.err);
}

INSTANTIATE_TEST_SUITE_P(
	Cases, UcParseReject,
	testing::Values(
		UcBad{"path", MROCE_OP_UC_SEND, [](mroce_pkt &p) { p.path = 1; }, MROCE_E_RSVD},
		UcBad{"dsn", MROCE_OP_UC_WRITE, [](mroce_pkt &p) { p.dsn = 5; }, MROCE_E_RSVD},
		UcBad{"tx_ts", MROCE_OP_UC_SEND_IMM, [](mroce_pkt &p) { p.tx_ts = 1; },
		      MROCE_E_RSVD},
		UcBad{"rq_seq", MROCE_OP_UC_SEND, [](mroce_pkt &p) { p.seth.rq_seq = 3; },
		      MROCE_E_RSVD},
		UcBad{"rq_seq_write_imm", MROCE_OP_UC_WRITE_IMM,
		      [](mroce_pkt &p) { p.seth.rq_seq = 1; }, MROCE_E_RSVD},
		UcBad{"ackreq", MROCE_OP_UC_SEND, [](mroce_pkt &p) { p.flags |= MROCE_F_ACKREQ; },
		      MROCE_E_FLAGS},
		UcBad{"retx", MROCE_OP_UC_WRITE, [](mroce_pkt &p) { p.flags |= MROCE_F_RETX; },
		      MROCE_E_FLAGS},
		UcBad{"tlp", MROCE_OP_UC_WRITE_IMM, [](mroce_pkt &p) { p.flags |= MROCE_F_TLP; },
		      MROCE_E_FLAGS},
		UcBad{"solicited_write", MROCE_OP_UC_WRITE,
		      [](mroce_pkt &p) { p.flags |= MROCE_F_SOLICITED; }, MROCE_E_FLAGS},
		UcBad{"first_not_at_0", MROCE_OP_UC_SEND,
		      [](mroce_pkt &p) { p.flags |= MROCE_F_FIRST; }, MROCE_E_FLAGS},
		UcBad{"last_early", MROCE_OP_UC_WRITE,
		      [](mroce_pkt &p) { p.flags |= MROCE_F_LAST; }, MROCE_E_FLAGS},
		UcBad{"beyond_length", MROCE_OP_UC_SEND,
		      [](mroce_pkt &p) { p.offset = 2500; }, MROCE_E_BOUNDS},
		UcBad{"offset_wraps", MROCE_OP_UC_WRITE,
		      [](mroce_pkt &p) { p.offset = 0xfffffe00; }, MROCE_E_BOUNDS},
		UcBad{"too_long", MROCE_OP_UC_WRITE,
		      [](mroce_pkt &p) { p.reth.length = 0x80000001u; }, MROCE_E_FIELD},
		UcBad{"write_imm_lengths", MROCE_OP_UC_WRITE_IMM,
		      [](mroce_pkt &p) { p.seth.length = 2999; }, MROCE_E_FIELD},
		UcBad{"empty_middle", MROCE_OP_UC_SEND, [](mroce_pkt &p) { p.payload_len = 0; },
		      MROCE_E_PAYLOAD},
		UcBad{"adl", MROCE_OP_UC_SEND, [](mroce_pkt &p) { p.adl = 3; }, MROCE_E_RSVD}),
	[](const testing::TestParamInfo<UcBad> &i) { return std::string(i.param.name); });

TEST(Uc, RawFieldsRejected)
{
	auto pkts = wire(msg(MROCE_OP_UC_SEND, 3, 100));
	auto b = pkts[0];
	b[8] = 2;	// adl on a UC packet, bypassing the builder
	reseal(b);
	mroce_pkt q;
	EXPECT_EQ(parse(b, &q), MROCE_E_RSVD);
	b = pkts[0];
	b[3] |= MROCE_F_ACKREQ;
	reseal(b);
	EXPECT_EQ(parse(b, &q), MROCE_E_FLAGS);
	b = pkts[0];
	b[1] = MROCE_OP_UC_WRITE_IMM + 1;	// the first opcode after UC
	reseal(b);
	EXPECT_EQ(parse(b, &q), MROCE_E_OPCODE);
}

TEST(Uc, SegArgumentsChecked)
{
	mroce_pkt p;
	auto m = msg(MROCE_OP_UC_SEND, 0, 3000);
	EXPECT_EQ(mroce_uc_seg(&m, 100, kMtu, 1, 0, &p), MROCE_E_INVAL);	// not aligned
	EXPECT_EQ(mroce_uc_seg(&m, 3072, kMtu, 1, 0, &p), MROCE_E_INVAL);	// past the end
	EXPECT_EQ(mroce_uc_seg(&m, 0, 0, 1, 0, &p), MROCE_E_INVAL);
	EXPECT_EQ(mroce_uc_seg(&m, 0, 8192, 1, 0, &p), MROCE_E_INVAL);
	EXPECT_EQ(mroce_uc_seg(&m, 0, kMtu, 0x1000000, 0, &p), MROCE_E_INVAL);
	m.opcode = MROCE_OP_SEND;
	EXPECT_EQ(mroce_uc_seg(&m, 0, kMtu, 1, 0, &p), MROCE_E_INVAL);
	m = msg(MROCE_OP_UC_WRITE, 0, 0x80000001u);
	EXPECT_EQ(mroce_uc_seg(&m, 0, kMtu, 1, 0, &p), MROCE_E_INVAL);
}

TEST(Uc, WholeMessagesComplete)
{
	Rx rx;
	for (uint32_t i = 0; i < 5; i++) {
		auto pkts = wire(msg(MROCE_OP_UC_WRITE_IMM, msn0() + i, 1000 + 1000 * i));
		for (size_t k = 0; k < pkts.size(); k++) {
			mroce_uc_step st;
			ASSERT_EQ(rx.feed(pkts[k], &st), 0) << i << " " << k;
			EXPECT_EQ(st.first, k == 0);
			EXPECT_EQ(st.last, k + 1 == pkts.size());
			EXPECT_FALSE(st.aborted);
		}
	}
	EXPECT_EQ(rx.u.broken, 0u);
	EXPECT_FALSE(rx.u.live);
	EXPECT_EQ(rx.u.msn_nxt, msn0() + 5);
}

TEST(Uc, LostMiddleBreaksTheMessage)
{
	Rx rx;
	auto a = wire(msg(MROCE_OP_UC_SEND, msn0(), 3000));
	mroce_uc_step st;
	ASSERT_EQ(rx.feed(a[0], &st), 0);
	EXPECT_TRUE(st.first);
	// a[1] lost
	EXPECT_EQ(rx.feed(a[2], &st), MROCE_E_BOUNDS);
	EXPECT_TRUE(st.aborted);
	EXPECT_FALSE(st.last);
	EXPECT_EQ(rx.u.broken, 1u);
	// a late copy of the lost one changes nothing
	EXPECT_EQ(rx.feed(a[1], &st), MROCE_E_WINDOW);
	EXPECT_FALSE(st.aborted);
	// the next message is received whole
	auto b = wire(msg(MROCE_OP_UC_SEND, msn0() + 1, 2048));
	ASSERT_EQ(rx.feed(b[0], &st), 0);
	ASSERT_EQ(rx.feed(b[1], &st), 0);
	EXPECT_TRUE(st.last);
	EXPECT_EQ(rx.u.broken, 1u);
}

TEST(Uc, LostFirstLosesTheMessage)
{
	Rx rx;
	auto a = wire(msg(MROCE_OP_UC_WRITE, msn0(), 3000));
	mroce_uc_step st;
	EXPECT_EQ(rx.feed(a[1], &st), MROCE_E_NOMSG);
	EXPECT_EQ(rx.u.broken, 1u);
	EXPECT_EQ(rx.feed(a[2], &st), MROCE_E_WINDOW);	// counted once
	EXPECT_EQ(rx.u.broken, 1u);
	auto b = wire(msg(MROCE_OP_UC_WRITE, msn0() + 1, 10));
	ASSERT_EQ(rx.feed(b[0], &st), 0);
	EXPECT_TRUE(st.first && st.last);
}

TEST(Uc, LostLastIsFoundAtTheNextMessage)
{
	Rx rx;
	auto a = wire(msg(MROCE_OP_UC_SEND_IMM, msn0(), 2048));
	auto b = wire(msg(MROCE_OP_UC_SEND_IMM, msn0() + 1, 100));
	mroce_uc_step st;
	ASSERT_EQ(rx.feed(a[0], &st), 0);
	EXPECT_TRUE(rx.u.live);
	// a[1] lost: b's first packet abandons a and starts b
	ASSERT_EQ(rx.feed(b[0], &st), 0);
	EXPECT_TRUE(st.aborted);
	EXPECT_TRUE(st.first);
	EXPECT_TRUE(st.last);
	EXPECT_EQ(rx.u.broken, 1u);
	// whole messages lost in between are just not seen
	auto c = wire(msg(MROCE_OP_UC_SEND_IMM, msn0() + 40, 100));
	ASSERT_EQ(rx.feed(c[0], &st), 0);
	EXPECT_FALSE(st.aborted);
}

TEST(Uc, DuplicatesAreIgnored)
{
	Rx rx;
	auto a = wire(msg(MROCE_OP_UC_WRITE, msn0(), 3000));
	mroce_uc_step st;
	ASSERT_EQ(rx.feed(a[0], &st), 0);
	EXPECT_EQ(rx.feed(a[0], &st), MROCE_E_DUP);	// a copy of the first
	ASSERT_EQ(rx.feed(a[1], &st), 0);
	EXPECT_EQ(rx.feed(a[1], &st), MROCE_E_DUP);
	ASSERT_EQ(rx.feed(a[2], &st), 0);
	EXPECT_TRUE(st.last);
	EXPECT_EQ(rx.feed(a[2], &st), MROCE_E_WINDOW);	// after completion
	EXPECT_EQ(rx.feed(a[0], &st), MROCE_E_WINDOW);	// not a new message
	EXPECT_EQ(rx.u.broken, 0u);
}

TEST(Uc, ReorderBreaksTheMessage)
{
	Rx rx;
	auto a = wire(msg(MROCE_OP_UC_SEND, msn0(), 3000));
	mroce_uc_step st;
	ASSERT_EQ(rx.feed(a[0], &st), 0);
	EXPECT_EQ(rx.feed(a[2], &st), MROCE_E_BOUNDS);
	EXPECT_EQ(rx.feed(a[1], &st), MROCE_E_WINDOW);
	EXPECT_EQ(rx.u.broken, 1u);
}

TEST(Uc, InconsistentPacketsBreakTheMessage)
{
	struct Edit {
		const char *name;
		void (*f)(mroce_uc_msg &);
	};
	const Edit edits[] = {
		{ "rkey", [](mroce_uc_msg &m) { m.rkey ^= 1; } },
		{ "va", [](mroce_uc_msg &m) { m.va += 4096; } },
		{ "imm", [](mroce_uc_msg &m) { m.imm ^= 1; } },
		{ "length", [](mroce_uc_msg &m) { m.length += kMtu; } },
		{ "opcode", [](mroce_uc_msg &m) { m.opcode = MROCE_OP_UC_WRITE; } },
	};
	for (const Edit &e : edits) {
		Rx rx;
		auto m = msg(MROCE_OP_UC_WRITE_IMM, msn0(), 3000);
		auto a = wire(m);
		e.f(m);
		auto forged = wire(m);
		mroce_uc_step st;
		ASSERT_EQ(rx.feed(a[0], &st), 0) << e.name;
		EXPECT_EQ(rx.feed(forged[1], &st), MROCE_E_FIELD) << e.name;
		EXPECT_TRUE(st.aborted) << e.name;
		EXPECT_NE(rx.feed(a[1], &st), 0) << e.name;
		EXPECT_NE(rx.feed(a[2], &st), 0) << e.name;
		EXPECT_FALSE(st.last) << e.name;
	}
}

TEST(Uc, MsnWindow)
{
	Rx rx;
	mroce_uc_step st;
	auto a = wire(msg(MROCE_OP_UC_SEND, msn0(), 3000));
	ASSERT_EQ(rx.feed(a[0], &st), 0);
	// forged or stale: outside [msn_nxt, msn_nxt + window) changes nothing
	for (uint32_t msn : { msn0() - 1, msn0() + 1 + MROCE_UC_MSN_WND, msn0() + 0x80000000u,
			      0u }) {
		auto f = wire(msg(MROCE_OP_UC_SEND, msn, 10));
		EXPECT_EQ(rx.feed(f[0], &st), MROCE_E_WINDOW) << msn;
		EXPECT_FALSE(st.aborted);
	}
	ASSERT_EQ(rx.feed(a[1], &st), 0);
	ASSERT_EQ(rx.feed(a[2], &st), 0);
	EXPECT_TRUE(st.last);
	// the far edge of the window is still in it
	auto far = wire(msg(MROCE_OP_UC_SEND, msn0() + MROCE_UC_MSN_WND, 10));
	ASSERT_EQ(rx.feed(far[0], &st), 0);
	EXPECT_TRUE(st.last);
}

TEST(Uc, OversizedPayloadRefused)
{
	mroce_uc_rx u;
	mroce_uc_rx_init(&u, kIsn, 512);
	auto a = wire(msg(MROCE_OP_UC_SEND, msn0(), 3000));	// 1024-byte packets
	mroce_pkt p;
	mroce_uc_step st;
	ASSERT_EQ(parse(a[0], &p), 0);
	EXPECT_EQ(mroce_uc_rx_pkt(&u, &p, &st), MROCE_E_PAYLOAD);
	EXPECT_EQ(u.broken, 1u);
	EXPECT_FALSE(u.live);
	// a smaller MTU at the sender is fine (contiguity is what counts)
	auto b = wire(msg(MROCE_OP_UC_SEND, msn0() + 1, 1000), 256);
	for (size_t k = 0; k < b.size(); k++) {
		ASSERT_EQ(parse(b[k], &p), 0);
		ASSERT_EQ(mroce_uc_rx_pkt(&u, &p, &st), 0);
	}
	EXPECT_TRUE(st.last);
}

TEST(Uc, AbortByTheEmbedder)
{
	Rx rx;
	mroce_uc_step st;
	auto a = wire(msg(MROCE_OP_UC_SEND, msn0(), 3000));
	ASSERT_EQ(rx.feed(a[0], &st), 0);
	mroce_uc_rx_abort(&rx.u);	// e.g. no receive WQE
	EXPECT_EQ(rx.feed(a[1], &st), MROCE_E_WINDOW);
	EXPECT_EQ(rx.feed(a[2], &st), MROCE_E_WINDOW);
	EXPECT_EQ(rx.u.broken, 0u);	// refused, not broken
	auto b = wire(msg(MROCE_OP_UC_SEND, msn0() + 1, 5));
	ASSERT_EQ(rx.feed(b[0], &st), 0);
	EXPECT_TRUE(st.last);
}

TEST(Uc, NotUcRefused)
{
	Rx rx;
	mroce_pkt p{};
	p.opcode = MROCE_OP_SEND;
	mroce_uc_step st;
	EXPECT_EQ(mroce_uc_rx_pkt(&rx.u, &p, &st), MROCE_E_OPCODE);
}

// Many messages through a channel that drops, duplicates and (rarely)
// reorders packets: the receiver places each accepted payload at its
// offset; every message it completes holds exactly the sent bytes, every
// message sent whole in order completes, and broken counts the others.
TEST(Uc, RandomLossNeverCompletesATornMessage)
{
	std::mt19937 rng(1234);
	for (int round = 0; round < 20; round++) {
		Rx rx;
		std::map<uint32_t, std::vector<uint8_t>> placed;	// msn -> bytes
		std::map<uint32_t, uint32_t> lengths;
		std::vector<uint32_t> completed;
		std::vector<std::pair<uint32_t, std::vector<uint8_t>>> chan;
		const int loss = 1 + round % 10;	// percent
		for (uint32_t i = 0; i < 200; i++) {
			uint32_t len = rng() % (5 * kMtu);
			uint8_t op = MROCE_OP_UC_SEND + rng() % 4;
			auto m = msg(op, msn0() + i, len);
			lengths[m.msn] = len;
			uint32_t off = 0, psn = 0;
			std::vector<uint8_t> data(len);
			for (uint32_t k = 0; k < len; k++)
				data[k] = uint8_t(m.msn * 31 + k);
			do {
				mroce_pkt p;
				int n = mroce_uc_seg(&m, off, kMtu, 1, psn++, &p);
				ASSERT_GE(n, 0);
				p.payload = data.data() + off;
				auto b = build(p);
				if (int(rng() % 100) >= loss)
					chan.emplace_back(m.msn, b);
				if (rng() % 100 < 2)
					chan.emplace_back(m.msn, b);	// duplicated
				off += n;
			} while (off < len);
		}
		for (size_t k = 0; k + 1 < chan.size(); k++)
			if (rng() % 1000 < 5)
				std::swap(chan[k], chan[k + 1]);	// reordered
		for (auto &[msn, b] : chan) {
			mroce_pkt p;
			mroce_uc_step st;
			ASSERT_EQ(parse(b, &p), 0);
			if (mroce_uc_rx_pkt(&rx.u, &p, &st))
				continue;
			auto &buf = placed[p.msn];
			if (st.first)
				buf.assign(lengths[p.msn], 0);
			ASSERT_EQ(buf.size(), lengths[p.msn]);
			ASSERT_LE(p.offset + p.payload_len, buf.size());
			std::copy(p.payload, p.payload + p.payload_len, buf.begin() + p.offset);
			if (st.last)
				completed.push_back(p.msn);
		}
		ASSERT_FALSE(completed.empty());
		EXPECT_LT(completed.size(), 200u);
		for (uint32_t msn : completed) {
			const auto &buf = placed[msn];
			for (uint32_t k = 0; k < buf.size(); k++)
				ASSERT_EQ(buf[k], uint8_t(msn * 31 + k))
					<< "torn message " << msn << " byte " << k;
		}
		EXPECT_GT(rx.u.broken, 0u);
		EXPECT_LE(completed.size() + rx.u.broken, 200u);
	}
}

// A UC packet handed to an RC connection is refused (the embedder
// demultiplexes by QP type; the core does not accept them either).
TEST(Uc, RcConnectionRefusesUcPackets)
{
	mroce_params prm;
	mroce_params_default(&prm);
	mroce_test::Pair pr(prm);
	auto a = wire(msg(MROCE_OP_UC_SEND, 0, 100));
	mroce_pkt p;
	ASSERT_EQ(parse(a[0], &p), 0);
	EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 1000), MROCE_E_OPCODE);
	EXPECT_TRUE(pr.b.placed.empty());
}

} // namespace
