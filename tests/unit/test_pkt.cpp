// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Packet parser/builder: round trips of every opcode, rejection of every
// malformed case with its distinct error code, ICRC coverage.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "mroce_core.h"

namespace {

std::vector<uint8_t> build(const mroce_pkt &p)
{
	std::vector<uint8_t> b(MROCE_MAX_PKT);
	int n = mroce_pkt_build(b.data(), b.size(), &p);
	EXPECT_GT(n, 0) << mroce_strerror(n);
	b.resize(n > 0 ? n : 0);
	return b;
}

void reseal(std::vector<uint8_t> &b)
{
	ASSERT_GE(b.size(), 4u);
	ASSERT_EQ(mroce_pkt_seal(b.data(), b.size() - 4, b.size()),
		  (int)b.size());
}

int parse(const std::vector<uint8_t> &b, mroce_pkt *out = nullptr)
{
	mroce_pkt tmp;
	return mroce_pkt_parse(b.data(), b.size(), out ? out : &tmp);
}

mroce_pkt base(uint8_t op, uint16_t flags = MROCE_F_FIRST | MROCE_F_LAST)
{
	mroce_pkt p{};
	p.version = MROCE_WIRE_VERSION;
	p.opcode = op;
	p.flags = flags;
	p.path = 7;
	p.dqpn = 0x123456;
	p.psn = 0xfffffff0;
	p.dsn = 77;
	p.msn = 5;
	p.tx_ts = 0xdeadbeef;
	return p;
}

const uint8_t kPayload[MROCE_MAX_PAYLOAD] = { 1, 2, 3, 4, 5 };

mroce_pkt write_pkt(uint32_t off, uint16_t len, uint32_t total)
{
	uint16_t f = 0;
	if (off == 0)
		f |= MROCE_F_FIRST;
	if (off + len == total)
		f |= MROCE_F_LAST;
	mroce_pkt p = base(MROCE_OP_WRITE, f);
	p.offset = off;
	p.payload_len = len;
	p.payload = kPayload;
	p.reth.va = 0x1122334455667788ULL;
	p.reth.rkey = 0xabcdef01;
	p.reth.length = total;
	return p;
}

mroce_pkt ack_pkt()
{
	mroce_pkt p = base(MROCE_OP_ACK, 0);
	p.ack.high_psn = 1000;
	p.ack.cum_psn = 990;
	p.ack.ecn_ce = 3;
	p.ack.echo_ts = 42;
	p.ack.ack_delay_us = 0x01000203;
	p.ack.cum_dsn = 500;
	p.ack.cmpl_msn = 9;
	p.ack.sack[0] = 0x1ff;	/* PSNs 991..999 received, 990 missing */
	p.ack.sack[3] = 0x8000000000000000ULL;
	return p;
}

}  // namespace

TEST(Pkt, HeaderSizes)
{
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_SEND), 32u + 8);
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_WRITE_IMM), 32u + 16 + 8 + 4);
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_CMP_SWAP), 32u + 32);
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_ACK), 32u + 64);
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_PROBE), 32u);
	EXPECT_EQ(mroce_op_hdr_len(0x55), 0u);
	EXPECT_LE(mroce_op_hdr_len(MROCE_OP_ACK), (uint32_t)MROCE_MAX_HDRS);
}

TEST(Pkt, Crc32cKnownAnswer)
{
	const uint8_t s[] = "123456789";
	EXPECT_EQ(mroce_crc32c(0, s, 9), 0xe3069283u);
}

// The table-driven CRC against a bit-at-a-time reference: every length
// 0..300 at every alignment 0..7, and split at every point (the ICRC is
// computed in pieces: pseudo-header, header, payload).
TEST(Pkt, Crc32cMatchesBitwiseReference)
{
	auto ref = [](uint32_t crc, const uint8_t *b, size_t n) {
		crc = ~crc;
		for (size_t i = 0; i < n; i++) {
			crc ^= b[i];
			for (int k = 0; k < 8; k++)
				crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
		}
		return ~crc;
	};
	std::vector<uint8_t> buf(320);
	uint32_t x = 0x12345678;
	for (auto &b : buf) {
		x = x * 1103515245u + 12345u;
		b = (uint8_t)(x >> 16);
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n + off <= 308; n++)
			ASSERT_EQ(mroce_crc32c(0, &buf[off], (uint32_t)n),
				  ref(0, &buf[off], n)) << off << " " << n;
	const uint32_t whole = ref(0, buf.data(), 300);
	for (uint32_t cut = 0; cut <= 300; cut++)
		ASSERT_EQ(mroce_crc32c(mroce_crc32c(0, buf.data(), cut),
				       buf.data() + cut, 300 - cut), whole) << cut;
}

TEST(Pkt, RoundTripEveryOpcode)
{
	std::vector<mroce_pkt> v;
	v.push_back(write_pkt(0, 100, 100));
	v.push_back(write_pkt(4096, 4096, 10000));
	{
		mroce_pkt p = base(MROCE_OP_SEND);
		p.seth.rq_seq = 17;
		p.seth.length = 5;
		p.payload_len = 5;
		p.payload = kPayload;
		v.push_back(p);
		p.opcode = MROCE_OP_SEND_IMM;
		p.imm = 0xcafef00d;
		p.flags |= MROCE_F_SOLICITED | MROCE_F_ACKREQ;
		v.push_back(p);
		p.opcode = MROCE_OP_SEND_INV;
		v.push_back(p);
		mroce_pkt z = base(MROCE_OP_SEND);	/* zero-length send */
		v.push_back(z);
	}
	{
		mroce_pkt p = write_pkt(0, 3, 3);
		p.opcode = MROCE_OP_WRITE_IMM;
		p.seth.length = 3;
		p.seth.rq_seq = 2;
		p.imm = 99;
		v.push_back(p);
	}
	{
		mroce_pkt p = base(MROCE_OP_READ_REQ);
		p.reth.va = 0x1000;
		p.reth.rkey = 5;
		p.reth.length = 1 << 20;
		v.push_back(p);
		mroce_pkt r = base(MROCE_OP_READ_RESP, MROCE_F_LAST);
		r.offset = 4096;
		r.rresp_len = 4100;
		r.payload_len = 4;
		r.payload = kPayload;
		v.push_back(r);
	}
	{
		mroce_pkt p = base(MROCE_OP_CMP_SWAP);
		p.aeth.va = 0x2000;
		p.aeth.rkey = 9;
		p.aeth.swap = 0x1111;
		p.aeth.compare_add = 0x2222;
		v.push_back(p);
		p.opcode = MROCE_OP_FETCH_ADD;
		p.aeth.swap = 0;
		v.push_back(p);
		mroce_pkt r = base(MROCE_OP_ATOMIC_RESP);
		r.atomic_orig = 0x0123456789abcdefULL;
		v.push_back(r);
	}
	v.push_back(ack_pkt());
	{
		mroce_pkt p = base(MROCE_OP_PROBE, MROCE_F_ACKREQ);
		v.push_back(p);
	}
	for (const auto &p : v) {
		SCOPED_TRACE(testing::Message() << "opcode " << (int)p.opcode);
		auto b = build(p);
		ASSERT_EQ(b.size(), mroce_op_hdr_len(p.opcode) + p.payload_len + 4u);
		mroce_pkt q;
		ASSERT_EQ(parse(b, &q), 0);
		EXPECT_EQ(q.opcode, p.opcode);
		EXPECT_EQ(q.flags, p.flags);
		EXPECT_EQ(q.path, p.path);
		EXPECT_EQ(q.dqpn, p.dqpn);
		EXPECT_EQ(q.psn, p.psn);
		EXPECT_EQ(q.dsn, p.dsn);
		EXPECT_EQ(q.msn, p.msn);
		EXPECT_EQ(q.offset, p.offset);
		EXPECT_EQ(q.tx_ts, p.tx_ts);
		EXPECT_EQ(q.payload_len, p.payload_len);
		EXPECT_EQ(q.ext, mroce_op_ext(p.opcode));
		if (q.ext & MROCE_EXT_RETH) {
			EXPECT_EQ(q.reth.va, p.reth.va);
			EXPECT_EQ(q.reth.rkey, p.reth.rkey);
			EXPECT_EQ(q.reth.length, p.reth.length);
		}
		if (q.ext & MROCE_EXT_SETH) {
			EXPECT_EQ(q.seth.rq_seq, p.seth.rq_seq);
			EXPECT_EQ(q.seth.length, p.seth.length);
		}
		if (q.ext & MROCE_EXT_IMETH)
			EXPECT_EQ(q.imm, p.imm);
		if (q.ext & MROCE_EXT_RRETH)
			EXPECT_EQ(q.rresp_len, p.rresp_len);
		if (q.ext & MROCE_EXT_AETH) {
			EXPECT_EQ(q.aeth.va, p.aeth.va);
			EXPECT_EQ(q.aeth.swap, p.aeth.swap);
			EXPECT_EQ(q.aeth.compare_add, p.aeth.compare_add);
			EXPECT_EQ(q.aeth.rkey, p.aeth.rkey);
		}
		if (q.ext & MROCE_EXT_ATKETH)
			EXPECT_EQ(q.atomic_orig, p.atomic_orig);
		if (q.ext & MROCE_EXT_ACKETH) {
			EXPECT_EQ(q.ack.high_psn, p.ack.high_psn);
			EXPECT_EQ(q.ack.cum_psn, p.ack.cum_psn);
			EXPECT_EQ(q.ack.ecn_ce, p.ack.ecn_ce);
			EXPECT_EQ(q.ack.echo_ts, p.ack.echo_ts);
			EXPECT_EQ(q.ack.ack_delay_us, p.ack.ack_delay_us);
			EXPECT_EQ(q.ack.cum_dsn, p.ack.cum_dsn);
			EXPECT_EQ(q.ack.cmpl_msn, p.ack.cmpl_msn);
			for (int i = 0; i < MROCE_SACK_WORDS; i++)
				EXPECT_EQ(q.ack.sack[i], p.ack.sack[i]);
		}
		if (p.payload_len)
			EXPECT_EQ(0, memcmp(q.payload, p.payload, p.payload_len));
		else
			EXPECT_EQ(q.payload, nullptr);
		// Canonical encoding: rebuilding gives the same bytes.
		EXPECT_EQ(build(q), b);
	}
}

TEST(Pkt, WireBytesAreBigEndianAtFixedOffsets)
{
	auto b = build(write_pkt(0, 1, 1));
	EXPECT_EQ(b[0], MROCE_WIRE_VERSION);
	EXPECT_EQ(b[1], MROCE_OP_WRITE);
	EXPECT_EQ(b[5], 7);			/* path */
	EXPECT_EQ(b[9], 0x12);			/* dqpn 0x123456 */
	EXPECT_EQ(b[11], 0x56);
	EXPECT_EQ(b[12], 0xff);			/* psn 0xfffffff0 */
	EXPECT_EQ(b[15], 0xf0);
	EXPECT_EQ(b[32], 0x11);			/* reth.va MSB first */
	EXPECT_EQ(b[39], 0x88);
	EXPECT_EQ(b[47], 1);			/* reth.length */
}

TEST(Pkt, RejectShortAndLengthMismatch)
{
	auto b = build(write_pkt(0, 100, 100));
	mroce_pkt out;
	for (size_t n = 0; n < 36; n++)
		EXPECT_EQ(mroce_pkt_parse(b.data(), n, &out), MROCE_E_SHORT) << n;
	EXPECT_EQ(mroce_pkt_parse(nullptr, 100, &out), MROCE_E_SHORT);
	/* headers cut: WRITE needs 48 bytes of headers + ICRC */
	std::vector<uint8_t> cut(b.begin(), b.begin() + 40);
	reseal(cut);
	EXPECT_EQ(parse(cut), MROCE_E_SHORT);
	/* datagram one byte longer than payload_len says */
	auto longer = b;
	longer.insert(longer.end() - 4, 0);
	reseal(longer);
	EXPECT_EQ(parse(longer), MROCE_E_LEN);
	auto shorter = b;
	shorter.erase(shorter.end() - 5);
	reseal(shorter);
	EXPECT_EQ(parse(shorter), MROCE_E_LEN);
}

TEST(Pkt, IcrcCoversEveryByte)
{
	auto b = build(write_pkt(0, 64, 64));
	for (size_t i = 0; i < b.size(); i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			auto c = b;
			c[i] ^= (uint8_t)(1u << bit);
			int r = parse(c);
			/* length bytes can make the length check fire first */
			EXPECT_TRUE(r == MROCE_E_ICRC || r == MROCE_E_LEN ||
				    r == MROCE_E_VERSION || r == MROCE_E_OPCODE ||
				    r == MROCE_E_SHORT)
				<< "byte " << i << " bit " << bit << " -> " << r;
			EXPECT_NE(r, 0);
		}
	}
}

namespace {
// Mutate a field of a valid packet, reseal, expect err.
void expect_reject(mroce_pkt p, int err, void (*mut)(std::vector<uint8_t> &),
		   const char *what)
{
	auto b = build(p);
	if (mut) {
		/* the unmutated packet is valid: only mut makes it bad */
		ASSERT_EQ(parse(b), 0) << what;
		mut(b);
	}
	reseal(b);
	EXPECT_EQ(parse(b), err) << what << ": " << mroce_strerror(parse(b));
}
}  // namespace

TEST(Pkt, RejectBaseHeaderFields)
{
	mroce_pkt w = write_pkt(0, 10, 10);
	expect_reject(w, MROCE_E_VERSION, [](auto &b) { b[0] = 2; }, "version");
	expect_reject(w, MROCE_E_OPCODE, [](auto &b) { b[1] = 0x0b; }, "opcode 0x0b");
	expect_reject(w, MROCE_E_OPCODE, [](auto &b) { b[1] = 0; }, "opcode 0");
	expect_reject(w, MROCE_E_OPCODE, [](auto &b) { b[1] = 0xff; }, "opcode 0xff");
	expect_reject(w, MROCE_E_FLAGS, [](auto &b) { b[2] = 0x80; }, "unknown flag");
	expect_reject(w, MROCE_E_FLAGS, [](auto &b) { b[3] |= MROCE_F_SOLICITED; },
		      "solicited on WRITE");
	expect_reject(w, MROCE_E_PATH, [](auto &b) { b[5] = 64; }, "path 64");
	/* byte 4 is the segment size in 64-byte units: 256..4096 bytes */
	expect_reject(w, MROCE_E_FIELD, [](auto &b) { b[4] = 1; }, "seg 64");
	expect_reject(w, MROCE_E_FIELD, [](auto &b) { b[4] = 3; }, "seg 192");
	expect_reject(w, MROCE_E_FIELD, [](auto &b) { b[4] = 65; }, "seg 4160");
	expect_reject(ack_pkt(), MROCE_E_RSVD, [](auto &b) { b[4] = 16; },
		      "seg on an ACK");
	{
		mroce_pkt rr = base(MROCE_OP_READ_REQ, MROCE_F_FIRST | MROCE_F_LAST);
		rr.reth.length = 4096;
		expect_reject(rr, MROCE_E_RSVD, [](auto &b) { b[4] = 16; },
			      "seg on a READ request");
	}
	{
		mroce_pkt d = w;
		d.seg = 1408;
		auto b = build(d);
		EXPECT_EQ(b[4], 22);
		EXPECT_EQ(b[5], d.path);
		mroce_pkt q;
		ASSERT_EQ(parse(b, &q), 0);
		EXPECT_EQ(q.seg, 1408);
		d.seg = 1400;	/* not a multiple of 64: refused by the builder */
		std::vector<uint8_t> buf(2048);
		EXPECT_EQ(mroce_pkt_build(buf.data(), buf.size(), &d),
			  MROCE_E_INVAL);
	}
	/* byte 8 is adl on data packets: 1..16 parse, 17 and up do not */
	expect_reject(w, MROCE_E_FIELD, [](auto &b) { b[8] = MROCE_ADL_MAX + 1; },
		      "adl > 16");
	{
		mroce_pkt d = w;
		d.adl = MROCE_ADL_MAX;
		auto b = build(d);
		mroce_pkt q;
		ASSERT_EQ(parse(b, &q), 0);
		EXPECT_EQ(q.adl, MROCE_ADL_MAX);
		EXPECT_EQ(q.dqpn, w.dqpn);
		d.adl = MROCE_ADL_MAX + 1;
		std::vector<uint8_t> big(4096);
		EXPECT_EQ(mroce_pkt_build_hdr(big.data(), big.size(), &d),
			  MROCE_E_INVAL);
	}
}

TEST(Pkt, RejectPayloadRules)
{
	mroce_pkt r = base(MROCE_OP_READ_REQ);
	r.reth.length = 10;
	r.payload_len = 4;
	r.payload = kPayload;
	/* build refuses a payload on an opcode without one; hand-craft it */
	std::vector<uint8_t> tmp(MROCE_MAX_PKT);
	EXPECT_EQ(mroce_pkt_build(tmp.data(), tmp.size(), &r), MROCE_E_INVAL);
	r.payload_len = 0;
	auto rb = build(r);
	rb.insert(rb.end() - 4, {1, 2, 3, 4});
	rb[7] = 4;
	reseal(rb);
	EXPECT_EQ(parse(rb), MROCE_E_PAYLOAD) << "payload on READ_REQ";
	mroce_pkt a = base(MROCE_OP_ACK, 0);
	a.payload_len = 1;
	a.payload = kPayload;
	expect_reject(a, MROCE_E_PAYLOAD, nullptr, "ACK payload not whole blocks");
	/* payload > MROCE_MAX_PAYLOAD: build refuses, hand-craft instead */
	std::vector<uint8_t> big(48 + 4097 + 4, 0);
	auto hdr = build(write_pkt(0, 1, 8000));
	memcpy(big.data(), hdr.data(), 48);
	big[6] = 4097 >> 8;
	big[7] = 4097 & 0xff;
	reseal(big);
	EXPECT_EQ(parse(big), MROCE_E_PAYLOAD);
	mroce_pkt z = write_pkt(0, 0, 10);	/* empty packet, not the last */
	z.flags = MROCE_F_FIRST;
	expect_reject(z, MROCE_E_PAYLOAD, nullptr, "empty non-last packet");
}

TEST(Pkt, RejectBoundsAndPositionFlags)
{
	mroce_pkt p = write_pkt(100, 10, 105);
	p.flags = MROCE_F_LAST;
	expect_reject(p, MROCE_E_BOUNDS, nullptr, "offset+len > total");
	p = write_pkt(0xfffffff0u, 100, 0x80000000u);
	expect_reject(p, MROCE_E_BOUNDS, nullptr, "offset overflow");
	p = write_pkt(0, 10, 20);
	p.flags = 0;
	expect_reject(p, MROCE_E_FLAGS, nullptr, "missing FIRST");
	p = write_pkt(10, 10, 30);
	p.flags = MROCE_F_FIRST;
	expect_reject(p, MROCE_E_FLAGS, nullptr, "FIRST at offset 10");
	p = write_pkt(10, 10, 20);
	p.flags = 0;
	expect_reject(p, MROCE_E_FLAGS, nullptr, "missing LAST");
	p = write_pkt(0, 10, 20);
	p.flags = MROCE_F_FIRST | MROCE_F_LAST;
	expect_reject(p, MROCE_E_FLAGS, nullptr, "LAST not at end");
	p = write_pkt(0, 10, 10);
	p.reth.length = 0x80000001u;
	p.flags = MROCE_F_FIRST;
	expect_reject(p, MROCE_E_FIELD, nullptr, "message too long");
	mroce_pkt w = write_pkt(0, 3, 3);
	w.opcode = MROCE_OP_WRITE_IMM;
	w.seth.length = 4;
	expect_reject(w, MROCE_E_FIELD, nullptr, "WRITE_IMM RETH/SETH length");
	mroce_pkt rq = base(MROCE_OP_READ_REQ, MROCE_F_FIRST);
	expect_reject(rq, MROCE_E_FLAGS, nullptr, "READ_REQ without LAST");
	rq = base(MROCE_OP_READ_REQ);
	rq.offset = 8;
	expect_reject(rq, MROCE_E_BOUNDS, nullptr, "READ_REQ offset");
	rq = base(MROCE_OP_READ_REQ);
	rq.reth.length = 0x80000001u;
	expect_reject(rq, MROCE_E_FIELD, nullptr, "READ_REQ too long");
}

TEST(Pkt, RejectExtensionReservedAndValues)
{
	mroce_pkt rr = base(MROCE_OP_READ_RESP);
	rr.rresp_len = 0;
	expect_reject(rr, MROCE_E_RSVD, [](auto &b) { b[39] = 1; }, "RRETH rsvd");
	mroce_pkt cs = base(MROCE_OP_CMP_SWAP);
	cs.aeth.va = 0x1000;
	expect_reject(cs, MROCE_E_RSVD, [](auto &b) { b[44] = 1; }, "AETH rsvd");
	cs.aeth.va = 0x1004;
	expect_reject(cs, MROCE_E_FIELD, nullptr, "unaligned atomic");
	mroce_pkt fa = base(MROCE_OP_FETCH_ADD);
	fa.aeth.va = 0x1000;
	fa.aeth.swap = 1;
	expect_reject(fa, MROCE_E_RSVD, nullptr, "FETCH_ADD swap");
	mroce_pkt pr = base(MROCE_OP_PROBE, MROCE_F_ACKREQ);
	pr.offset = 4;
	expect_reject(pr, MROCE_E_RSVD, nullptr, "PROBE offset");
	pr = base(MROCE_OP_PROBE, MROCE_F_LAST);
	expect_reject(pr, MROCE_E_FLAGS, nullptr, "PROBE flags");
}

TEST(Pkt, RejectAckFields)
{
	mroce_pkt a = ack_pkt();
	/* offset 26 is max_seg: 0 or a multiple of 64 in 256..4096 */
	expect_reject(a, MROCE_E_FIELD, [](auto &b) { b[32 + 27] = 1; }, "max_seg 1");
	expect_reject(a, MROCE_E_FIELD, [](auto &b) { b[32 + 27] = 192; },
		      "max_seg 192");
	expect_reject(a, MROCE_E_FIELD, [](auto &b) { b[32 + 26] = 0x10; b[32 + 27] = 0x40; },
		      "max_seg 4160");
	{
		mroce_pkt m = a;
		m.ack.max_seg = 1408;
		auto b = build(m);
		mroce_pkt q;
		ASSERT_EQ(parse(b, &q), 0);
		EXPECT_EQ(q.ack.max_seg, 1408);
	}
	expect_reject(a, MROCE_E_RSVD, [](auto &b) { b[8] = 1; }, "adl on an ACK");
	/* offset 28 is ack_delay: any value parses */
	a.ack.ack_delay_us = 0xffffffff;
	{
		auto b = build(a);
		mroce_pkt q;
		ASSERT_EQ(parse(b, &q), 0);
		EXPECT_EQ(q.ack.ack_delay_us, 0xffffffffu);
	}
	a.ack.syndrome = MROCE_SYN_MAX + 1;
	expect_reject(a, MROCE_E_FIELD, nullptr, "syndrome");
	a = ack_pkt();
	a.ack.rnr_timer = 3;
	expect_reject(a, MROCE_E_FIELD, nullptr, "rnr_timer without RNR");
	a.ack.syndrome = MROCE_SYN_RNR;
	EXPECT_EQ(parse(build(a)), 0);
	a.ack.rnr_timer = MROCE_RNR_TIMER_MAX + 1;
	expect_reject(a, MROCE_E_FIELD, nullptr, "rnr_timer code past 31");
	a = ack_pkt();
	a.ack.cum_psn = 1001;
	expect_reject(a, MROCE_E_FIELD, nullptr, "cum > high");
	a.ack.cum_psn = 1000 - 257;
	expect_reject(a, MROCE_E_FIELD, nullptr, "cum below window");
	a = ack_pkt();
	a.ack.sack[0] |= 1ULL << 9;	/* claims PSN 990 (= cum) received */
	expect_reject(a, MROCE_E_FIELD, nullptr, "cum marked received");
	a = ack_pkt();
	a.flags = MROCE_F_ACKREQ;
	expect_reject(a, MROCE_E_FLAGS, nullptr, "ACK flags");
}

namespace {
// An ACK of path 7 whose payload is blocks for paths 1, 2, 63.
struct AckWithBlocks {
	mroce_pkt p = ack_pkt();
	std::vector<uint8_t> blk;

	explicit AckWithBlocks(std::vector<uint16_t> paths = {1, 2, 63})
	{
		blk.resize(paths.size() * MROCE_ACK_BLK_SIZE);
		for (size_t k = 0; k < paths.size(); k++) {
			mroce_ack a{};
			a.high_psn = 2000 + k;
			a.cum_psn = 1990 + k;
			a.ecn_ce = 10 + k;
			a.echo_ts = 0x01020304 + k;
			a.ack_delay_us = 700 + k;
			a.sack[0] = 0x1ff;
			a.sack[3] = k << 60;
			mroce_ack_blk_put(blk.data() + k * MROCE_ACK_BLK_SIZE,
					  paths[k], &a);
		}
		p.payload = blk.data();
		p.payload_len = blk.size();
	}
};
}  // namespace

TEST(Pkt, AckBlocksRoundTrip)
{
	AckWithBlocks w;
	auto b = build(w.p);
	ASSERT_EQ(b.size(), 32u + 64 + 3 * 56 + 4);
	mroce_pkt q;
	ASSERT_EQ(parse(b, &q), 0);
	ASSERT_EQ(q.payload_len, 3 * MROCE_ACK_BLK_SIZE);
	const uint16_t want[] = {1, 2, 63};
	for (uint32_t k = 0; k < 3; k++) {
		mroce_ack a;
		uint16_t path;
		ASSERT_EQ(mroce_ack_blk_get(&q, k, &path, &a), 0);
		EXPECT_EQ(path, want[k]);
		EXPECT_EQ(a.high_psn, 2000 + k);
		EXPECT_EQ(a.cum_psn, 1990 + k);
		EXPECT_EQ(a.ecn_ce, 10 + k);
		EXPECT_EQ(a.echo_ts, 0x01020304 + k);
		EXPECT_EQ(a.ack_delay_us, 700 + k);
		EXPECT_EQ(a.sack[0], 0x1ffu);
		EXPECT_EQ(a.sack[3], (uint64_t)k << 60);
		/* connection-wide fields come from the ACKETH */
		EXPECT_EQ(a.cum_dsn, 500u);
		EXPECT_EQ(a.cmpl_msn, 9u);
		EXPECT_EQ(a.syndrome, MROCE_SYN_ACK);
	}
	mroce_ack a;
	uint16_t path;
	EXPECT_EQ(mroce_ack_blk_get(&q, 3, &path, &a), MROCE_E_INVAL);
	/* the block's path is big endian at offset 0 */
	const uint8_t *blk0 = b.data() + 32 + 64;
	EXPECT_EQ(blk0[0], 0);
	EXPECT_EQ(blk0[1], 1);
	EXPECT_EQ(blk0[4 + 3], 2000 & 0xff);
}

TEST(Pkt, RejectMalformedAckBlocks)
{
	const size_t b0 = 32 + 64;	/* first block's offset */
	expect_reject(AckWithBlocks().p, MROCE_E_RSVD,
		      [](auto &b) { b[b0 + 2] = 1; }, "block rsvd0");
	expect_reject(AckWithBlocks().p, MROCE_E_RSVD,
		      [](auto &b) { b[b0 + 0] = 0; b[b0 + 1] = 64; },
		      "block path past the wire's 64");
	expect_reject(AckWithBlocks().p, MROCE_E_PATH,
		      [](auto &b) { b[b0 + 1] = 7; }, "block repeats the base path");
	expect_reject(AckWithBlocks().p, MROCE_E_PATH,
		      [](auto &b) { b[b0 + 56 + 1] = 1; }, "two blocks, one path");
	expect_reject(AckWithBlocks().p, MROCE_E_FIELD,
		      [](auto &b) { b[b0 + 11] = 0xd1; }, "block cum > high");
	expect_reject(AckWithBlocks().p, MROCE_E_FIELD,
		      [](auto &b) { b[b0 + 24 + 1] |= 2; },
		      "block marks its cum received");
	/* only whole blocks */
	AckWithBlocks w;
	w.p.payload_len = MROCE_ACK_BLK_SIZE + 1;
	expect_reject(w.p, MROCE_E_PAYLOAD, nullptr, "partial block");
	/* only on a positive ACK: a NAK names one path */
	for (uint8_t syn : {MROCE_SYN_RNR, MROCE_SYN_REM_ACCESS}) {
		AckWithBlocks n;
		n.p.ack.syndrome = syn;
		if (syn == MROCE_SYN_RNR)
			n.p.ack.rnr_timer = 1;
		expect_reject(n.p, MROCE_E_PAYLOAD, nullptr, "blocks on a NAK");
	}
	/* at most one block per other path */
	std::vector<uint16_t> many;
	for (uint16_t i = 0; i < 64; i++)
		if (i != 7)
			many.push_back(i);
	AckWithBlocks full(many);
	EXPECT_EQ(parse(build(full.p)), 0);
	many.push_back(0);
	AckWithBlocks over(many);
	EXPECT_EQ(parse(build(over.p)), MROCE_E_PAYLOAD);
	/* other opcodes keep their payload rules */
	mroce_pkt pr = base(MROCE_OP_PROBE, 0);
	pr.payload = w.blk.data();
	pr.payload_len = MROCE_ACK_BLK_SIZE;
	std::vector<uint8_t> buf(MROCE_MAX_PKT);
	EXPECT_EQ(mroce_pkt_build(buf.data(), buf.size(), &pr), MROCE_E_INVAL);
}

TEST(Pkt, BuilderBounds)
{
	mroce_pkt p = write_pkt(0, 100, 100);
	std::vector<uint8_t> b(MROCE_MAX_PKT);
	EXPECT_EQ(mroce_pkt_build(b.data(), 47, &p), MROCE_E_NOSPC);
	EXPECT_EQ(mroce_pkt_build(b.data(), 48 + 100 + 3, &p), MROCE_E_NOSPC);
	EXPECT_EQ(mroce_pkt_build(b.data(), 48 + 100 + 4, &p), 152);
	EXPECT_EQ(mroce_pkt_seal(b.data(), 10, 13), MROCE_E_NOSPC);
	EXPECT_EQ(mroce_pkt_seal(b.data(), 14, 13), MROCE_E_NOSPC);
	p.opcode = 0x42;
	EXPECT_EQ(mroce_pkt_build(b.data(), b.size(), &p), MROCE_E_OPCODE);
	p = write_pkt(0, 100, 100);
	p.path = 64;
	EXPECT_EQ(mroce_pkt_build(b.data(), b.size(), &p), MROCE_E_INVAL);
	p = write_pkt(0, 100, 100);
	p.payload = nullptr;
	EXPECT_EQ(mroce_pkt_build(b.data(), b.size(), &p), MROCE_E_INVAL);
	p.payload_len = 4097;
	EXPECT_EQ(mroce_pkt_build(b.data(), b.size(), &p), MROCE_E_INVAL);
	EXPECT_STREQ(mroce_strerror(MROCE_E_ICRC), "ICRC mismatch");
	EXPECT_STREQ(mroce_strerror(5), "unknown error");
	EXPECT_STREQ(mroce_strerror(-1000), "unknown error");
}

TEST(Pkt, RandomBytesNeverCrashAndRarelyParse)
{
	std::mt19937_64 rng(7);
	int ok = 0;
	for (int i = 0; i < 20000; i++) {
		std::vector<uint8_t> b(rng() % 200);
		for (auto &x : b)
			x = (uint8_t)rng();
		if (b.size() >= 36 && (i & 1)) {
			b[0] = 1;
			b[1] = (uint8_t)(rng() % 0x12);
			reseal(b);
		}
		mroce_pkt p;
		ok += mroce_pkt_parse(b.data(), b.size(), &p) == 0;
	}
	EXPECT_LT(ok, 200);
}

TEST(Pkt, UdDatagramRoundTripAndRules)
{
	mroce_pkt p{};
	p.version = MROCE_WIRE_VERSION;
	p.opcode = MROCE_OP_UD_SEND_IMM;
	p.flags = MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_SOLICITED;
	p.dqpn = 1;
	p.psn = 42;
	p.imm = 0xa1b2c3d4;
	p.deth.qkey = 0x80010000;
	p.deth.src_qpn = 0x000011;
	p.payload = kPayload;
	p.payload_len = 256;
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_UD_SEND), 40u);
	EXPECT_EQ(mroce_op_hdr_len(MROCE_OP_UD_SEND_IMM), 44u);
	EXPECT_TRUE(mroce_op_is_ud(MROCE_OP_UD_SEND));
	EXPECT_FALSE(mroce_op_is_data(MROCE_OP_UD_SEND));
	auto b = build(p);
	ASSERT_EQ(b.size(), 44u + 256 + 4);
	/* IMETH then DETH, big endian */
	EXPECT_EQ(b[32], 0xa1);
	EXPECT_EQ(b[36], 0x80);
	EXPECT_EQ(b[39], 0x00);
	EXPECT_EQ(b[43], 0x11);
	mroce_pkt q;
	ASSERT_EQ(parse(b, &q), 0);
	EXPECT_EQ(q.deth.qkey, 0x80010000u);
	EXPECT_EQ(q.deth.src_qpn, 0x11u);
	EXPECT_EQ(q.imm, 0xa1b2c3d4u);
	EXPECT_EQ(q.payload_len, 256);
	EXPECT_EQ(memcmp(q.payload, kPayload, 256), 0);

	/* a datagram is exactly one packet on path 0 */
	auto bad = b;
	bad[27] = 1;	/* offset */
	reseal(bad);
	EXPECT_EQ(parse(bad), MROCE_E_RSVD);
	bad = b;
	bad[5] = 1;	/* path */
	reseal(bad);
	EXPECT_EQ(parse(bad), MROCE_E_RSVD);
	bad = b;
	bad[3] &= ~MROCE_F_LAST;
	reseal(bad);
	EXPECT_EQ(parse(bad), MROCE_E_FLAGS);
	bad = b;
	bad[40] = 1;	/* src_qpn above 24 bits */
	reseal(bad);
	EXPECT_EQ(parse(bad), MROCE_E_FIELD);
	bad = b;
	bad[3] |= MROCE_F_ACKREQ;
	reseal(bad);
	EXPECT_EQ(parse(bad), MROCE_E_FLAGS);
}
