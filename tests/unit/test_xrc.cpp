// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// XRC in the protocol core: the XRCETH (flag MROCE_F_XRC) on the wire,
// its parser rules, the sender putting it on every request of an XRC
// initiator, and the receiver's rule that an XRC target accepts only
// requests carrying one (and every other connection only requests
// without), with the SRQ number handed to the embedder.
#include "util.h"

using namespace mroce_test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed)
{
	std::vector<uint8_t> v(n);
	for (size_t i = 0; i < n; i++)
		v[i] = (uint8_t)(seed * 13 + i * 5);
	return v;
}

std::vector<uint8_t> build_pkt(const mroce_pkt &p)
{
	std::vector<uint8_t> b(MROCE_MAX_PKT);
	int n = mroce_pkt_build(b.data(), b.size(), &p);
	b.resize(n > 0 ? n : 0);
	return b;
}

mroce_pkt send_pkt(uint16_t extra_flags, uint8_t op = MROCE_OP_SEND)
{
	static const uint8_t data[16] = { 9, 8, 7 };
	mroce_pkt p{};
	p.version = MROCE_WIRE_VERSION;
	p.opcode = op;
	p.flags = MROCE_F_FIRST | MROCE_F_LAST | extra_flags;
	p.dqpn = 0x42;
	p.seth.length = 16;
	p.reth.length = 16;
	p.payload_len = 16;
	p.payload = data;
	p.xrc_srqn = 0xabcdef;
	return p;
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

std::vector<mroce_place> g_places;

int xrc_place(void *ctx, const mroce_place *pl)
{
	auto *e = static_cast<Endpoint *>(ctx);
	g_places.push_back(*pl);
	if (pl->kind != MROCE_PLACE_SEND)
		return 0;
	if (pl->rq_seq >= e->recvs.size())
		return -MROCE_SYN_RNR;
	memcpy(e->recvs[pl->rq_seq].data() + pl->offset, pl->data, pl->len);
	return 0;
}

}  // namespace

TEST(Xrc, XrcethRoundTripAndLength)
{
	mroce_pkt p = send_pkt(MROCE_F_XRC), q;
	auto b = build_pkt(p);
	ASSERT_EQ(b.size(), 32u + 8 + 4 + 16 + 4);
	EXPECT_EQ(mroce_pkt_hdr_len(&p), 44u);
	/* the XRCETH follows the SETH, big endian */
	EXPECT_EQ(b[40], 0x00);
	EXPECT_EQ(b[41], 0xab);
	EXPECT_EQ(b[42], 0xcd);
	EXPECT_EQ(b[43], 0xef);
	ASSERT_EQ(mroce_pkt_parse(b.data(), b.size(), &q), 0);
	EXPECT_EQ(q.xrc_srqn, 0xabcdefu);
	EXPECT_TRUE(q.ext & MROCE_EXT_XRCETH);
	EXPECT_EQ(q.payload_len, 16u);
	EXPECT_EQ(q.payload[0], 9);

	/* without the flag: no XRCETH, the same packet is 4 bytes shorter */
	p = send_pkt(0);
	b = build_pkt(p);
	ASSERT_EQ(b.size(), 32u + 8 + 16 + 4);
	ASSERT_EQ(mroce_pkt_parse(b.data(), b.size(), &q), 0);
	EXPECT_FALSE(q.ext & MROCE_EXT_XRCETH);
	EXPECT_EQ(q.xrc_srqn, 0u);

	/* READ_REQ and atomics carry it too */
	p = send_pkt(MROCE_F_XRC, MROCE_OP_READ_REQ);
	p.payload_len = 0;
	p.payload = nullptr;
	b = build_pkt(p);
	ASSERT_EQ(b.size(), 32u + 16 + 4 + 4);
	ASSERT_EQ(mroce_pkt_parse(b.data(), b.size(), &q), 0);
	EXPECT_EQ(q.xrc_srqn, 0xabcdefu);
}

TEST(Xrc, ParserRules)
{
	mroce_pkt p, q;

	/* not on WRITE_IMM, responses, ACKs, UC or UD: the builder refuses */
	for (uint8_t op : { MROCE_OP_WRITE_IMM, MROCE_OP_READ_RESP,
			    MROCE_OP_UC_SEND, MROCE_OP_UD_SEND }) {
		p = send_pkt(MROCE_F_XRC, op);
		std::vector<uint8_t> b(MROCE_MAX_PKT);
		EXPECT_EQ(mroce_pkt_build(b.data(), b.size(), &p),
			  MROCE_E_INVAL) << (int)op;
	}
	/* ... and the parser: the flag alone on a WRITE_IMM is E_FLAGS */
	p = send_pkt(0, MROCE_OP_WRITE_IMM);
	auto b = build_pkt(p);
	ASSERT_FALSE(b.empty());
	b[3] |= MROCE_F_XRC;
	ASSERT_EQ(mroce_pkt_seal(b.data(), b.size() - 4, b.size()),
		  (int)b.size());
	EXPECT_EQ(mroce_pkt_parse(b.data(), b.size(), &q), MROCE_E_FLAGS);

	/* SRQ numbers are 24 bits: the builder refuses, the parser too */
	p = send_pkt(MROCE_F_XRC);
	p.xrc_srqn = 0x1000000;
	std::vector<uint8_t> buf(MROCE_MAX_PKT);
	EXPECT_EQ(mroce_pkt_build(buf.data(), buf.size(), &p), MROCE_E_INVAL);
	p.xrc_srqn = 1;
	b = build_pkt(p);
	b[40] = 0x01;
	ASSERT_EQ(mroce_pkt_seal(b.data(), b.size() - 4, b.size()),
		  (int)b.size());
	EXPECT_EQ(mroce_pkt_parse(b.data(), b.size(), &q), MROCE_E_RSVD);

	/* flag set on a packet built without the XRCETH: lengths disagree */
	p = send_pkt(0);
	b = build_pkt(p);
	b[3] |= MROCE_F_XRC;
	ASSERT_EQ(mroce_pkt_seal(b.data(), b.size() - 4, b.size()),
		  (int)b.size());
	EXPECT_NE(mroce_pkt_parse(b.data(), b.size(), &q), 0);
}

TEST(Xrc, InitiatorToTargetCarriesTheSrqNumber)
{
	mroce_params pa = one_path_params(), pb = one_path_params();
	pb.xrc_tgt = true;
	Pair pr(pa, pb);
	g_places.clear();
	pr.b.ops.place = xrc_place;
	pr.b.post_recv(4096);
	pr.b.post_recv(4096);
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 3000;
	wr.xrc = true;
	wr.xrc_srqn = 77;
	ASSERT_EQ(pr.a.post(wr, pattern(3000, 1), 0), 0);
	wr.length = 100;
	wr.xrc_srqn = 78;
	ASSERT_EQ(pr.a.post(wr, pattern(100, 2), 0), 0);
	uint64_t t = 0;
	exchange(pr, t);
	ASSERT_EQ(pr.b.cqes.size(), 2u);
	EXPECT_TRUE(pr.b.cqes[0].xrc);
	EXPECT_EQ(pr.b.cqes[0].xrc_srqn, 77u);
	EXPECT_EQ(pr.b.cqes[1].xrc_srqn, 78u);
	EXPECT_EQ(pr.b.cqes[0].status, 0u);
	EXPECT_EQ(std::vector<uint8_t>(pr.b.recvs[0].begin(),
				       pr.b.recvs[0].begin() + 3000),
		  pattern(3000, 1));
	ASSERT_GE(g_places.size(), 4u);	/* 3 segments + 1 */
	for (auto &pl : g_places) {
		EXPECT_TRUE(pl.xrc);
		EXPECT_EQ(pl.xrc_srqn, pl.rq_seq ? 78u : 77u);
	}
	ASSERT_EQ(pr.a.cqes.size(), 2u);
	EXPECT_EQ(pr.a.cqes[0].status, 0u);
	EXPECT_EQ(pr.a.cqes[1].status, 0u);
}

TEST(Xrc, TargetRefusesRequestsWithoutXrceth)
{
	mroce_params pa = one_path_params(), pb = one_path_params();
	pb.xrc_tgt = true;
	Pair pr(pa, pb);
	pr.b.post_recv(64);
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 10;
	ASSERT_EQ(pr.a.post(wr, pattern(10, 3), 0), 0);
	uint64_t t = 0;
	exchange(pr, t);
	EXPECT_TRUE(pr.b.cqes.empty());
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_REM_INV_REQ);
}

TEST(Xrc, PlainConnectionRefusesXrceth)
{
	Pair pr(one_path_params());
	pr.b.post_recv(64);
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 10;
	wr.xrc = true;
	wr.xrc_srqn = 5;
	ASSERT_EQ(pr.a.post(wr, pattern(10, 4), 0), 0);
	uint64_t t = 0;
	exchange(pr, t);
	EXPECT_TRUE(pr.b.cqes.empty());
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_REM_INV_REQ);
}

TEST(Xrc, SrqNumberMustNotChangeInsideAMessage)
{
	mroce_params pa = one_path_params(), pb = one_path_params();
	pb.xrc_tgt = true;
	Pair pr(pa, pb);
	pr.b.post_recv(4096);
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 2048;
	wr.xrc = true;
	wr.xrc_srqn = 9;
	ASSERT_EQ(pr.a.post(wr, pattern(2048, 5), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 2u);
	/* forge the second segment's SRQ number (ICRC resealed) */
	mroce_pkt q;
	ASSERT_EQ(mroce_pkt_parse(pk[1].data(), pk[1].size(), &q), 0);
	uint32_t hl = mroce_pkt_hdr_len(&q);
	pk[1][hl - 1] ^= 1;
	ASSERT_EQ(mroce_pkt_seal(pk[1].data(), pk[1].size() - 4,
				 pk[1].size()), (int)pk[1].size());
	uint64_t t = 1000;
	deliver(pr.b, pk[0], t);
	deliver(pr.b, pk[1], t);
	exchange(pr, t);
	EXPECT_TRUE(pr.b.cqes.empty());
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_REM_INV_REQ);
}
