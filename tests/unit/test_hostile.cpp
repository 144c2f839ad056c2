// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// A hostile peer (or any local user with a UDP socket to port 4792):
// forged ACKs/NAKs, forged requests outside the windows derived from the
// ISNs, duplicate offsets, too many READs, and a READ whose source went
// away at the responder (Documentation/mroce-protocol.rst, "Acceptance").
#include "util.h"

using namespace mroce_test;

namespace {

constexpr uint32_t kIsnA = 0x5a17c3;	// a's sq_psn = b's rq_psn
constexpr uint32_t kIsnB = 0x0e44d9;	// b's sq_psn = a's rq_psn

mroce_params isn_params(uint32_t paths = 1)
{
	mroce_params p = one_path_params(paths);
	p.isn_tx = kIsnA;
	p.isn_rx = kIsnB;
	return p;
}

mroce_pkt forged_ack(uint8_t syn)
{
	mroce_pkt ack{};
	ack.version = MROCE_WIRE_VERSION;
	ack.opcode = MROCE_OP_ACK;
	ack.ext = MROCE_EXT_ACKETH;
	ack.ack.syndrome = syn;
	return ack;
}

// Deliver everything from one end to the other until both are quiet.
void exchange(Pair &pr, uint64_t &now)
{
	for (int i = 0; i < 50; i++) {
		auto x = drain(pr.a, now);
		auto y = drain(pr.b, now);
		if (x.empty() && y.empty())
			return;
		now += 10 * kUs;
		for (auto &w : x)
			deliver(pr.b, w, now);
		for (auto &w : y)
			deliver(pr.a, w, now);
	}
}

}  // namespace

TEST(Hostile, SequenceSpacesStartAtTheIsn)
{
	Pair pr(isn_params());
	mroce_conn *a = pr.a.conn.get(), *b = pr.b.conn.get();

	EXPECT_EQ(mroce_isn_start(0, MROCE_ISN_DSN), 0u);
	EXPECT_NE(mroce_isn_start(kIsnA, MROCE_ISN_DSN), 0u);
	EXPECT_NE(mroce_isn_start(kIsnA, MROCE_ISN_DSN),
		  mroce_isn_start(kIsnA, MROCE_ISN_MSN));
	EXPECT_EQ(a->snd_dsn_nxt, mroce_isn_start(kIsnA, MROCE_ISN_DSN));
	EXPECT_EQ(a->msn_nxt, mroce_isn_start(kIsnA, MROCE_ISN_MSN));
	EXPECT_EQ(a->path[0].snd_nxt, mroce_isn_start(kIsnA, MROCE_ISN_PSN));
	/* b expects what a sends */
	EXPECT_EQ(b->rcv_dsn_cum, a->snd_dsn_nxt);
	EXPECT_EQ(b->rcv_msn_cum, a->msn_nxt);
	EXPECT_EQ(b->path[0].rcv_sb.high, a->path[0].snd_nxt);
	EXPECT_EQ(a->rcv_dsn_cum, b->snd_dsn_nxt);
	/* ISNs are 24 bits */
	mroce_params bad = isn_params();
	bad.isn_tx = 1u << 24;
	auto c = mroce_mem::conn_alloc();
	EXPECT_EQ(mroce_mem::conn_init(c.get(), &bad, nullptr, nullptr, 0), MROCE_E_INVAL);
}

// The reported attack: cum_dsn 0, high_psn 0, a fatal syndrome.
TEST(Hostile, ForgedFatalAckWithZeroSequenceIgnored)
{
	Pair pr(isn_params());
	uint64_t now = 0;
	ASSERT_EQ(pr.a.post(write_wr(2048), std::vector<uint8_t>(2048, 5), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 2u);
	for (uint8_t syn : { MROCE_SYN_REM_ACCESS, MROCE_SYN_INV_REQ,
			     MROCE_SYN_REM_OP, MROCE_SYN_ACK }) {
		mroce_pkt ack = forged_ack(syn);
		EXPECT_EQ(mroce_conn_rx(pr.a.conn.get(), &ack, false, 1000),
			  MROCE_E_WINDOW);
	}
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_OK);
	EXPECT_EQ(pr.a.conn->st.rx_ack_invalid, 4u);
	EXPECT_TRUE(pr.a.cqes.empty());
	/* the real peer still completes the WRITE */
	for (auto &w : pk)
		deliver(pr.b, w, 2000);
	now = 3000;
	exchange(pr, now);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS);
}

// A legitimate ACK overtaken by a newer one: its cum_dsn is old, not fatal.
TEST(Hostile, StaleAckIsNotRejectedWholesale)
{
	Pair pr(isn_params());
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(pr.a.post(write_wr(1024, 1024 * i),
				    std::vector<uint8_t>(1024, 1), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 2u);
	/* WRITE 1 asks for no ACK (WRITE 2 follows): b's delayed ACK */
	ASSERT_EQ(deliver(pr.b, pk[0], 1000), 0);
	EXPECT_TRUE(drain(pr.b, 1000).empty());
	auto ack1 = drain(pr.b, 1000 + pr.b.conn->p.ack_delay_ns);
	ASSERT_EQ(deliver(pr.b, pk[1], 20000), 0);
	auto ack2 = drain(pr.b, 20000);
	ASSERT_EQ(ack1.size(), 1u);
	ASSERT_EQ(ack2.size(), 1u);
	/* the newer ACK overtakes the older one */
	EXPECT_EQ(deliver(pr.a, ack2[0], 2000), 0);
	ASSERT_EQ(pr.a.cqes.size(), 2u);
	EXPECT_EQ(deliver(pr.a, ack1[0], 2100), 0);
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_OK);
	EXPECT_EQ(pr.a.conn->st.rx_ack_invalid, 0u);
	/* older still than max_inflight: dropped, counted, harmless */
	mroce_pkt old = parse1(ack1[0]);
	old.ack.cum_dsn -= 2 * pr.a.conn->p.max_inflight;
	EXPECT_EQ(mroce_conn_rx(pr.a.conn.get(), &old, false, 2200),
		  MROCE_E_WINDOW);
	EXPECT_EQ(pr.a.conn->state, (uint32_t)MROCE_CONN_OK);
	for (auto &c : pr.a.cqes)
		EXPECT_EQ(c.status, (uint32_t)MROCE_ST_SUCCESS);
}

TEST(Hostile, NakForMessageNotOutstandingIgnored)
{
	Pair pr(isn_params());
	mroce_conn *a = pr.a.conn.get();
	ASSERT_EQ(pr.a.post(write_wr(1024), std::vector<uint8_t>(1024, 1), 0), 0);
	ASSERT_EQ(drain(pr.a, 0).size(), 1u);
	/* windows right, MSN not outstanding (one past msn_nxt, one before) */
	for (uint32_t msn : { a->msn_nxt, a->msn_nxt + 5, a->msn_una - 1 }) {
		mroce_pkt nak = forged_ack(MROCE_SYN_REM_ACCESS);
		nak.ack.cum_dsn = a->snd_dsn_una;
		nak.ack.high_psn = a->path[0].snd_una;
		nak.ack.cum_psn = a->path[0].snd_una;
		nak.msn = msn;
		nak.dsn = a->snd_dsn_una;
		EXPECT_EQ(mroce_conn_rx(a, &nak, false, 1000), MROCE_E_WINDOW)
			<< msn;
	}
	/* outstanding MSN, but a DSN that is none of its packets */
	mroce_pkt nak = forged_ack(MROCE_SYN_REM_ACCESS);
	nak.ack.cum_dsn = a->snd_dsn_una;
	nak.ack.high_psn = a->path[0].snd_una;
	nak.ack.cum_psn = a->path[0].snd_una;
	nak.msn = a->msn_una;
	nak.dsn = a->snd_dsn_una + 7;
	EXPECT_EQ(mroce_conn_rx(a, &nak, false, 1000), MROCE_E_WINDOW);
	EXPECT_EQ(a->state, (uint32_t)MROCE_CONN_OK);
	EXPECT_EQ(a->st.rx_ack_invalid, 4u);
	EXPECT_TRUE(pr.a.cqes.empty());
	/* the genuine article is obeyed */
	nak.dsn = a->snd_dsn_una;
	EXPECT_EQ(mroce_conn_rx(a, &nak, false, 1000), 0);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_REM_ACCESS);
}

TEST(Hostile, ForgedRequestsOutsideWindowDropped)
{
	Pair pr(isn_params());
	pr.b.post_recv(4096);
	uint32_t high = pr.b.conn->path[0].rcv_sb.high;
	std::vector<uint8_t> data(64, 0xee);
	/* what a local attacker sends: every sequence number 0 */
	for (uint8_t op : { MROCE_OP_SEND, MROCE_OP_WRITE }) {
		mroce_pkt p{};
		p.version = MROCE_WIRE_VERSION;
		p.opcode = op;
		p.ext = mroce_op_ext(op);
		p.flags = MROCE_F_FIRST | MROCE_F_LAST;
		p.payload = data.data();
		p.payload_len = (uint16_t)data.size();
		p.seth.length = (uint32_t)data.size();
		p.reth.length = (uint32_t)data.size();
		p.reth.va = kMemVa;
		p.reth.rkey = kRkey;
		EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 1000),
			  MROCE_E_WINDOW);
		/* right DSN and MSN, PSN far off: no scoreboard moves */
		p.dsn = pr.b.conn->rcv_dsn_cum;
		p.msn = pr.b.conn->rcv_msn_cum;
		p.psn = high + (1u << 30);
		EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 1000),
			  MROCE_E_WINDOW);
	}
	EXPECT_TRUE(pr.b.placed.empty());
	EXPECT_TRUE(pr.b.cqes.empty());
	EXPECT_EQ(pr.b.conn->path[0].rcv_sb.high, high);
	EXPECT_TRUE(drain(pr.b, 2000).empty());	/* nothing acknowledged */
	EXPECT_EQ(pr.b.mem[0], 0);
}

// Offset 0 again under the next DSN must not complete a 2-packet SEND.
TEST(Hostile, DuplicateOffsetUnderOtherDsnDoesNotComplete)
{
	Pair pr(isn_params());
	pr.b.post_recv(4096);
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 2048;
	ASSERT_EQ(pr.a.post(wr, std::vector<uint8_t>(2048, 0x42), 0), 0);
	auto pk = drain(pr.a, 0);
	ASSERT_EQ(pk.size(), 2u);
	mroce_pkt first = parse1(pk[0]);
	ASSERT_EQ(first.offset, 0u);
	EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &first, false, 1000), 0);
	mroce_pkt forged = first;
	forged.dsn = first.dsn + 1;	/* the second packet's DSN */
	forged.psn = first.psn + 1;
	EXPECT_LT(mroce_conn_rx(pr.b.conn.get(), &forged, false, 1000), 0);
	EXPECT_TRUE(pr.b.cqes.empty());
	/* the real second packet completes it */
	EXPECT_EQ(deliver(pr.b, pk[1], 2000), 0);
	ASSERT_EQ(pr.b.cqes.size(), 1u);
	EXPECT_EQ(pr.b.cqes[0].byte_len, 2048u);
	EXPECT_EQ(pr.b.recvs[0][2047], 0x42);
}

// A short middle packet (the rest "made up" by a longer last one) is refused.
TEST(Hostile, MisSegmentedPacketsRefused)
{
	Pair pr(isn_params());
	pr.b.post_recv(4096);
	mroce_wr wr{};
	wr.op = MROCE_WOP_SEND;
	wr.length = 2048;
	ASSERT_EQ(pr.a.post(wr, std::vector<uint8_t>(2048, 1), 0), 0);
	auto pk = drain(pr.a, 0);
	mroce_pkt p = parse1(pk[1]);	/* offset 1024, 1024 bytes */
	p.offset = 1000;		/* not a segment boundary */
	EXPECT_EQ(mroce_conn_rx(pr.b.conn.get(), &p, false, 1000),
		  MROCE_E_BOUNDS);
	EXPECT_TRUE(pr.b.placed.empty());
}

// More READs than max_dest_rd_atomic in flight: NAK INV_REQ (IB 9.7.5.2.8,
// "too many RDMA READ or ATOMIC requests" is an invalid request).
TEST(Hostile, ReadsBeyondMaxDestRdAtomicRefused)
{
	mroce_params pa = isn_params(), pb = isn_params();
	pb.max_dest_rd_atomic = 2;	/* a ignores it (max_rd_atomic 64) */
	Pair pr(pa, pb);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(pr.a.post(read_wr(64, 64 * i),
				    std::vector<uint8_t>(64), 0), 0);
	auto reqs = drain(pr.a, 0);
	ASSERT_EQ(reqs.size(), 4u);
	for (auto &w : reqs)
		deliver(pr.b, w, 1000);	/* b sends nothing in between */
	EXPECT_EQ(pr.b.conn->state, (uint32_t)MROCE_CONN_ERROR);
	auto out = drain(pr.b, 2000);
	ASSERT_GE(out.size(), 1u);
	mroce_pkt nak = parse1(out[0]);
	EXPECT_EQ(nak.opcode, MROCE_OP_ACK);
	EXPECT_EQ(nak.ack.syndrome, MROCE_SYN_INV_REQ);
	EXPECT_EQ(nak.msn, pr.a.conn->msn_una + 2);	/* the third READ */
	EXPECT_EQ(deliver(pr.a, out[0], 3000), 0);
	ASSERT_EQ(pr.a.cqes.size(), 4u);
	EXPECT_EQ(pr.a.cqes[2].status, (uint32_t)MROCE_ST_REM_INV_REQ);
}

// The requester keeps max_rd_atomic: the third READ waits for the first.
TEST(Hostile, RequesterHoldsReadsBeyondMaxRdAtomic)
{
	mroce_params pa = isn_params(), pb = isn_params();
	pa.max_rd_atomic = 2;
	pb.max_dest_rd_atomic = 2;
	Pair pr(pa, pb);
	uint64_t now = 0;
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(pr.a.post(read_wr(64, 64 * i),
				    std::vector<uint8_t>(64), 0), 0);
	mroce_wr w = write_wr(16, 4096);
	ASSERT_EQ(pr.a.post(w, std::vector<uint8_t>(16, 3), 0), 0);
	auto first = drain(pr.a, 0);
	EXPECT_EQ(first.size(), 2u);	/* two READs, nothing more */
	for (auto &x : first)
		deliver(pr.b, x, 500);
	now = 1000;
	exchange(pr, now);
	ASSERT_EQ(pr.a.cqes.size(), 4u);
	for (auto &c : pr.a.cqes)
		EXPECT_EQ(c.status, (uint32_t)MROCE_ST_SUCCESS);
	EXPECT_EQ(pr.b.conn->state, (uint32_t)MROCE_CONN_OK);
}

// The glue cannot read the READ's source any more (MR invalidated): the
// core NAKs the READ, the requester fails it with REM_ACCESS.
TEST(Hostile, AbortedReadSourceFailsReadWithRemAccess)
{
	Pair pr(isn_params());
	ASSERT_EQ(pr.a.post(read_wr(2048), std::vector<uint8_t>(2048), 0), 0);
	auto req = drain(pr.a, 0);
	ASSERT_EQ(req.size(), 1u);
	ASSERT_EQ(deliver(pr.b, req[0], 1000), 0);
	mroce_tx tx;
	std::vector<Wire> out;
	bool aborted = false;
	while (mroce_conn_tx(pr.b.conn.get(), 2000, &tx) == 1) {
		if (tx.pkt.opcode == MROCE_OP_READ_RESP && !aborted) {
			ASSERT_EQ(tx.src, (uint32_t)MROCE_SRC_LOCAL_MEM);
			EXPECT_EQ(mroce_conn_resp_abort(pr.b.conn.get(), &tx,
							MROCE_SYN_REM_ACCESS),
				  0);
			aborted = true;
			continue;	/* not sent */
		}
		out.push_back(pr.b.build(tx));
	}
	ASSERT_TRUE(aborted);
	for (auto &w : out)
		EXPECT_FALSE(is_op(w, MROCE_OP_READ_RESP));
	for (auto &w : out)
		deliver(pr.a, w, 3000);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_REM_ACCESS);
	EXPECT_EQ(pr.a.cqes[0].op, (uint32_t)MROCE_WOP_READ);
	/* not a response of this connection */
	tx.pkt.opcode = MROCE_OP_READ_RESP;
	tx.pkt.msn = 12345;
	EXPECT_EQ(mroce_conn_resp_abort(pr.a.conn.get(), &tx,
					MROCE_SYN_REM_ACCESS), MROCE_E_NOMSG);
}

// Run b's timers until its loss recovery resends a READ_RESP of msn, which
// the glue then finds unreadable (mroce_conn_resp_abort()); everything else
// b sends meanwhile is returned.  Fails the test if no such resend comes.
static std::vector<Wire> abort_resent_resp(Pair &pr, uint32_t msn,
					   uint64_t &now)
{
	mroce_conn *b = pr.b.conn.get();
	std::vector<Wire> out;
	for (int i = 0; i < 64; i++) {
		now = std::max(now, mroce_conn_next_timer(b));
		if (now == UINT64_MAX)
			break;
		mroce_conn_timer(b, now);
		mroce_tx tx;
		bool aborted = false;
		while (mroce_conn_tx(b, now, &tx) == 1) {
			if (!aborted && tx.pkt.opcode == MROCE_OP_READ_RESP &&
			    tx.pkt.msn == msn) {
				EXPECT_TRUE(tx.pkt.flags &
					    (MROCE_F_RETX | MROCE_F_TLP));
				EXPECT_EQ(mroce_conn_resp_abort(b, &tx,
						MROCE_SYN_REM_ACCESS), 0);
				aborted = true;
			} else {
				out.push_back(pr.b.build(tx));
			}
		}
		if (aborted)
			return out;
	}
	ADD_FAILURE() << "no resend of msn " << msn;
	return out;
}

// The responder resends a READ response the requester already has (the ACK
// for it was lost) and finds its source gone.  Its NAK names a READ the
// requester completed: dropped, answered by an ACK that releases the
// responder's slot; nothing fails and the next READ completes.
TEST(Hostile, ResentResponseWithSourceGoneForCompletedRead)
{
	Pair pr(isn_params());
	mroce_conn *a = pr.a.conn.get(), *b = pr.b.conn.get();
	const uint32_t m1 = a->msn_nxt;
	ASSERT_EQ(pr.a.post(read_wr(64), std::vector<uint8_t>(64), 0), 0);
	ASSERT_EQ(pr.a.post(read_wr(64, 64), std::vector<uint8_t>(64), 0), 0);
	auto req = drain(pr.a, 0);
	ASSERT_EQ(req.size(), 2u);
	for (auto &w : req)
		ASSERT_EQ(deliver(pr.b, w, 1000), 0);
	/* only READ 1's response reaches a; a's ACKs never reach b */
	bool got = false;
	for (auto &w : drain(pr.b, 1000))
		if (is_op(w, MROCE_OP_READ_RESP) && parse1(w).msn == m1) {
			EXPECT_EQ(deliver(pr.a, w, 2000), 0);
			got = true;
		}
	ASSERT_TRUE(got);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS);
	drain(pr.a, 2000);

	uint64_t now = 2000;
	auto out = abort_resent_resp(pr, m1, now);
	EXPECT_EQ(b->state, (uint32_t)MROCE_CONN_OK);
	std::vector<Wire> naks;
	for (auto &w : out)
		if (is_op(w, MROCE_OP_ACK) && parse1(w).ack.syndrome ==
		    MROCE_SYN_REM_ACCESS)
			naks.push_back(w);
	ASSERT_EQ(naks.size(), 1u);
	mroce_pkt nak = parse1(naks[0]);
	EXPECT_EQ(nak.msn, m1);

	/* a's delayed ACK of READ 1's response is due by now */
	drain(pr.a, now);
	/* the same NAK naming a DSN that is none of READ 1's: no answer */
	mroce_pkt bad = nak;
	bad.dsn += 5;
	EXPECT_EQ(mroce_conn_rx(a, &bad, false, now), MROCE_E_WINDOW);
	EXPECT_TRUE(drain(pr.a, now).empty());
	/* the real one: dropped, fails nothing, answered by an ACK */
	EXPECT_EQ(deliver(pr.a, naks[0], now), MROCE_E_WINDOW);
	EXPECT_EQ(a->state, (uint32_t)MROCE_CONN_OK);
	EXPECT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(a->st.rx_ack_invalid, 2u);
	auto ack = drain(pr.a, now);
	ASSERT_EQ(ack.size(), 1u);
	ASSERT_TRUE(is_op(ack[0], MROCE_OP_ACK));
	EXPECT_EQ(parse1(ack[0]).ack.syndrome, (uint8_t)MROCE_SYN_ACK);
	const uint32_t slots = b->resp_len;
	EXPECT_EQ(deliver(pr.b, ack[0], now), 0);
	EXPECT_LT(b->resp_len, slots);

	/* the rest of b's traffic (READ 2's response) now gets through */
	for (auto &w : out)
		if (!is_op(w, MROCE_OP_ACK))
			deliver(pr.a, w, now);
	exchange(pr, now);
	ASSERT_EQ(pr.a.cqes.size(), 2u);
	EXPECT_EQ(pr.a.cqes[1].status, (uint32_t)MROCE_ST_SUCCESS);
	EXPECT_EQ(a->state, (uint32_t)MROCE_CONN_OK);
	EXPECT_EQ(b->state, (uint32_t)MROCE_CONN_OK);
	EXPECT_EQ(b->resp_len, 0u);
}

// The requester never got the response whose resend found its source gone:
// it accepts the NAK and fails the READ with REM_ACCESS.  The responder
// stops when the source is found gone a second time.
TEST(Hostile, ResentResponseWithSourceGoneFailsUnfinishedRead)
{
	Pair pr(isn_params());
	mroce_conn *a = pr.a.conn.get(), *b = pr.b.conn.get();
	const uint32_t m1 = a->msn_nxt;
	ASSERT_EQ(pr.a.post(read_wr(64), std::vector<uint8_t>(64), 0), 0);
	auto req = drain(pr.a, 0);
	ASSERT_EQ(req.size(), 1u);
	ASSERT_EQ(deliver(pr.b, req[0], 1000), 0);
	drain(pr.b, 1000);	/* the response is lost */
	uint64_t now = 1000;
	auto out = abort_resent_resp(pr, m1, now);
	EXPECT_EQ(b->state, (uint32_t)MROCE_CONN_OK);
	std::vector<Wire> naks;
	for (auto &w : out)
		if (is_op(w, MROCE_OP_ACK) && parse1(w).ack.syndrome ==
		    MROCE_SYN_REM_ACCESS)
			naks.push_back(w);
	ASSERT_EQ(naks.size(), 1u);
	/* that NAK is lost too: the next resend stops the responder */
	abort_resent_resp(pr, m1, now);
	EXPECT_EQ(b->state, (uint32_t)MROCE_CONN_ERROR);
	/* the first NAK fails the READ */
	EXPECT_EQ(deliver(pr.a, naks[0], now), 0);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_REM_ACCESS);
	EXPECT_EQ(pr.a.cqes[0].op, (uint32_t)MROCE_WOP_READ);
	EXPECT_NE(a->state, (uint32_t)MROCE_CONN_OK);
}

// A responder still at RTR (no sq_psn yet) answers READs in the LATE
// spaces of its rq_psn; the requester follows; RTS does not move them.
TEST(Hostile, ResponderAtRtrAnswersInLateSpaces)
{
	mroce_params pa = isn_params(), pb = isn_params();
	pb.isn_tx_late = true;
	Pair pr(pa, pb);
	uint64_t now = 0;
	for (uint32_t i = 0; i < 4096; i++)
		pr.b.mem[i] = (uint8_t)(i * 7);
	ASSERT_EQ(pr.a.post(read_wr(3000), std::vector<uint8_t>(3000), 0), 0);
	exchange(pr, now);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS);
	EXPECT_EQ(pr.a.bufs[1][2999], pr.b.mem[2999]);
	/* b reaches RTS: its sq_psn becomes known */
	mroce_params rts = pr.b.conn->p;
	rts.isn_tx = kIsnB;
	rts.isn_tx_late = false;
	ASSERT_EQ(mroce_conn_update(pr.b.conn.get(), &rts), 0);
	EXPECT_EQ(pr.b.conn->msn_nxt, mroce_isn_start(kIsnB, MROCE_ISN_MSN));
	ASSERT_EQ(pr.b.post(write_wr(1500), std::vector<uint8_t>(1500, 9), now),
		  0);
	ASSERT_EQ(pr.a.post(read_wr(100), std::vector<uint8_t>(100), now), 0);
	exchange(pr, now);
	ASSERT_EQ(pr.b.cqes.size(), 1u);
	EXPECT_EQ(pr.b.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS);
	ASSERT_EQ(pr.a.cqes.size(), 2u);
	EXPECT_EQ(pr.a.cqes[1].status, (uint32_t)MROCE_ST_SUCCESS);
	EXPECT_EQ(pr.a.mem[1499], 9);
	EXPECT_EQ(pr.a.conn->st.rx_ack_invalid + pr.b.conn->st.rx_ack_invalid,
		  0u);
}

// Both ends at RTR first, then RTS before any traffic (the usual case):
// the ordinary spaces of the sq_psn are used.
TEST(Hostile, RtsBeforeTrafficUsesSqPsnSpaces)
{
	mroce_params pa = isn_params(), pb = isn_params();
	pa.isn_tx_late = pb.isn_tx_late = true;
	Pair pr(pa, pb);
	mroce_params ra = pr.a.conn->p, rb = pr.b.conn->p;
	ra.isn_tx = kIsnA;
	rb.isn_tx = kIsnB;
	ra.isn_tx_late = rb.isn_tx_late = false;
	ASSERT_EQ(mroce_conn_update(pr.a.conn.get(), &ra), 0);
	ASSERT_EQ(mroce_conn_update(pr.b.conn.get(), &rb), 0);
	EXPECT_EQ(pr.a.conn->snd_dsn_nxt, mroce_isn_start(kIsnA, MROCE_ISN_DSN));
	EXPECT_EQ(pr.a.conn->snd_dsn_nxt, pr.b.conn->rcv_dsn_cum);
	uint64_t now = 0;
	ASSERT_EQ(pr.a.post(write_wr(5000), std::vector<uint8_t>(5000, 4), 0), 0);
	exchange(pr, now);
	ASSERT_EQ(pr.a.cqes.size(), 1u);
	EXPECT_EQ(pr.a.cqes[0].status, (uint32_t)MROCE_ST_SUCCESS);
	EXPECT_EQ(pr.b.mem[4999], 4);
}
