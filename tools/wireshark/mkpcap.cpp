// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mroce_mkpcap OUT.pcap [--corrupt] - write a pcap (Ethernet, IPv4, UDP to
// port 4792) with one valid mroce packet of every opcode, built by the
// protocol core's own builder, plus an ACK with a SACK bitmap and three ACK
// blocks.  --corrupt flips one payload bit of the WRITE (its ICRC no
// longer matches).  tests/wireshark/test_dissector.sh decodes it with
// tools/wireshark/mroce.lua and checks every field it knows.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "mroce_core.h"

namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes &b, uint16_t v)
{
	b.push_back(uint8_t(v >> 8));
	b.push_back(uint8_t(v));
}

// Little-endian pcap record fields.
void le32(std::ofstream &o, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		o.put(char(v >> (8 * i)));
}

uint16_t ip_csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += uint32_t(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return uint16_t(~s);
}

// Ethernet + IPv4 + UDP (zero checksum, as mroce sends) around a packet.
Bytes frame(const Bytes &m, uint16_t sport)
{
	Bytes b = { 0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00 };
	size_t ip = b.size();
	b.insert(b.end(), { 0x45, 0x02 });	/* ECT(0) */
	put16(b, uint16_t(20 + 8 + m.size()));
	b.insert(b.end(), { 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 11, 0, 1, 10, 11,
			    0, 2 });
	uint16_t c = ip_csum(&b[ip], 20);
	b[ip + 10] = uint8_t(c >> 8);
	b[ip + 11] = uint8_t(c);
	put16(b, sport);
	put16(b, MROCE_UDP_PORT);
	put16(b, uint16_t(8 + m.size()));
	put16(b, 0);
	b.insert(b.end(), m.begin(), m.end());
	return b;
}

mroce_pkt base(uint8_t op, uint16_t flags)
{
	mroce_pkt p{};
	p.version = MROCE_WIRE_VERSION;
	p.opcode = op;
	p.flags = flags;
	p.path = 3;
	p.dqpn = 0x000123;
	p.psn = 1000;
	p.dsn = 2000;
	p.msn = 30;
	p.tx_ts = 123456;
	return p;
}

Bytes build(const mroce_pkt &p)
{
	Bytes b(MROCE_MAX_PKT);
	int n = mroce_pkt_build(b.data(), uint32_t(b.size()), &p);
	if (n < 0) {
		fprintf(stderr, "mkpcap: opcode 0x%02x: %s\n", p.opcode,
			mroce_strerror(n));
		exit(1);
	}
	b.resize(size_t(n));
	mroce_pkt chk;
	if (mroce_pkt_parse(b.data(), uint32_t(n), &chk)) {
		fprintf(stderr, "mkpcap: opcode 0x%02x does not parse\n", p.opcode);
		exit(1);
	}
	return b;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s OUT.pcap [--corrupt]\n", argv[0]);
		return 2;
	}
	bool corrupt = argc > 2 && std::string(argv[2]) == "--corrupt";
	static const uint8_t pl[100] = { 0xab, 0xcd };
	const uint16_t FL = MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_ACKREQ;
	std::vector<Bytes> pkts;

	mroce_pkt p = base(MROCE_OP_SEND, FL | MROCE_F_SOLICITED);
	p.payload = pl;
	p.payload_len = 100;
	p.seth = { 7, 100 };
	pkts.push_back(build(p));
	p.opcode = MROCE_OP_SEND_IMM;
	p.imm = 0xcafef00d;
	pkts.push_back(build(p));
	p.opcode = MROCE_OP_SEND_INV;
	pkts.push_back(build(p));

	p = base(MROCE_OP_WRITE, MROCE_F_FIRST);	/* first of 300 bytes */
	p.payload = pl;
	p.payload_len = 100;
	p.reth = { 0x7f0000001000ULL, 0x1234, 300 };
	p.seg = 1344;		/* a segment size above the path MTU */
	pkts.push_back(build(p));
	p.seg = 0;
	p.opcode = MROCE_OP_WRITE_IMM;
	p.flags = FL;
	p.reth.length = 100;
	p.seth = { 8, 100 };
	p.imm = 0x11;
	pkts.push_back(build(p));

	p = base(MROCE_OP_READ_REQ, FL);
	p.reth = { 0x7f0000002000ULL, 0x5678, 8192 };
	pkts.push_back(build(p));
	p = base(MROCE_OP_READ_RESP, MROCE_F_RETX | MROCE_F_ACKREQ);
	p.offset = 1024;
	p.payload = pl;
	p.payload_len = 100;
	p.rresp_len = 8192;
	pkts.push_back(build(p));

	p = base(MROCE_OP_CMP_SWAP, FL);
	p.aeth = { 0x7f0000003000ULL, 0x9abc, 5, 6 };
	pkts.push_back(build(p));
	p.opcode = MROCE_OP_FETCH_ADD;
	p.aeth.swap = 0;
	pkts.push_back(build(p));
	p = base(MROCE_OP_ATOMIC_RESP, FL);
	p.atomic_orig = 0x1122334455667788ULL;
	pkts.push_back(build(p));

	/* ACK of path 3: PSNs 990..999 and 1001..1004 of 1005 received, 1000
	 * missing (cum), plus blocks for paths 0, 5 and 63 */
	p = base(MROCE_OP_ACK, 0);
	p.ack.high_psn = 1005;
	p.ack.cum_psn = 1000;
	p.ack.sack[0] = 0xf | (0x3ffULL << 5);
	p.ack.ecn_ce = 2;
	p.ack.echo_ts = 123000;
	p.ack.cum_dsn = 1990;
	p.ack.cmpl_msn = 29;
	p.ack.max_seg = 1344;
	uint8_t blk[3 * MROCE_ACK_BLK_SIZE];
	const uint16_t bpath[3] = { 0, 5, 63 };
	for (int k = 0; k < 3; k++) {
		mroce_ack a{};
		a.high_psn = 500 + k;
		a.cum_psn = 500 + k;	/* nothing missing */
		a.sack[0] = 0x7;	/* its 3 newest PSNs */
		mroce_ack_blk_put(blk + k * MROCE_ACK_BLK_SIZE, bpath[k], &a);
	}
	p.payload = blk;
	p.payload_len = sizeof(blk);
	pkts.push_back(build(p));
	/* an RNR NAK */
	p = base(MROCE_OP_ACK, 0);
	p.ack.high_psn = p.ack.cum_psn = 1001;
	p.ack.syndrome = MROCE_SYN_RNR;
	p.ack.rnr_timer = 14;
	pkts.push_back(build(p));

	p = base(MROCE_OP_PROBE, MROCE_F_ACKREQ);
	p.psn = p.dsn = p.msn = 0;
	pkts.push_back(build(p));
	p = base(MROCE_OP_UD_SEND, MROCE_F_FIRST | MROCE_F_LAST);
	p.path = 0;
	p.dsn = p.msn = 0;
	p.payload = pl;
	p.payload_len = 100;
	p.deth = { 0x80010000, 0x000456 };
	pkts.push_back(build(p));
	p.opcode = MROCE_OP_UD_SEND_IMM;
	p.imm = 0x22;
	pkts.push_back(build(p));
	/* UC: one packet of each opcode, as mroce_uc_seg() makes them */
	for (uint8_t op : { MROCE_OP_UC_SEND, MROCE_OP_UC_SEND_IMM, MROCE_OP_UC_WRITE,
			    MROCE_OP_UC_WRITE_IMM }) {
		mroce_uc_msg m{};
		m.opcode = op;
		m.msn = 77;
		m.length = 100;
		m.va = 0x7f0000002000ULL;
		m.rkey = 0x4321;
		m.imm = 0x33;
		if (mroce_uc_seg(&m, 0, 1024, 0x123, 5, &p) != 100)
			return 1;
		p.payload = pl;
		pkts.push_back(build(p));
	}
	/* XRC: a SEND and a READ_REQ of an initiator, with their XRCETH */
	p = base(MROCE_OP_SEND, FL | MROCE_F_XRC);
	p.payload = pl;
	p.payload_len = 100;
	p.seth = { 8, 100 };
	p.xrc_srqn = 0xabcdef;
	pkts.push_back(build(p));
	p = base(MROCE_OP_READ_REQ, FL | MROCE_F_XRC);
	p.reth = { 0x7f0000003000ULL, 0x5678, 4096 };
	p.xrc_srqn = 0x000042;
	pkts.push_back(build(p));

	if (corrupt)
		pkts[3][48 + 10] ^= 0x01;	/* the WRITE's payload */

	std::ofstream o(argv[1], std::ios::binary);
	le32(o, 0xa1b2c3d4);
	o.put(2), o.put(0), o.put(4), o.put(0);	/* version 2.4 */
	le32(o, 0);
	le32(o, 0);
	le32(o, 65535);
	le32(o, 1);				/* Ethernet */
	uint32_t t = 0;
	for (auto &m : pkts) {
		Bytes fr = frame(m, uint16_t(49152 + t));
		le32(o, 1700000000 + t);
		le32(o, 0);
		le32(o, uint32_t(fr.size()));
		le32(o, uint32_t(fr.size()));
		o.write(reinterpret_cast<const char *>(fr.data()),
			std::streamsize(fr.size()));
		t++;
	}
	if (!o) {
		fprintf(stderr, "mkpcap: writing %s failed\n", argv[1]);
		return 1;
	}
	printf("%zu packets\n", pkts.size());
	return 0;
}
