// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Writes seed inputs for the fuzzers: one valid packet per opcode for
// fuzz_parse, and a few short scripts for fuzz_conn.
// Build: c++ -std=c++20 -I core -I include gen_corpus.cpp core/*.c (as C)
#include <cstdio>
#include <string>
#include <vector>

#include "mroce_core.h"

static void put(const std::string &path, const std::vector<uint8_t> &b)
{
	FILE *f = fopen(path.c_str(), "wb");
	if (!f) {
		perror(path.c_str());
		return;
	}
	fwrite(b.data(), 1, b.size(), f);
	fclose(f);
}

int main(int argc, char **argv)
{
	std::string dir = argc > 1 ? argv[1] : ".";
	static const uint8_t pl[64] = { 1, 2, 3 };
	const uint8_t ops[] = {
		MROCE_OP_SEND, MROCE_OP_SEND_IMM, MROCE_OP_SEND_INV,
		MROCE_OP_WRITE, MROCE_OP_WRITE_IMM, MROCE_OP_READ_REQ,
		MROCE_OP_READ_RESP, MROCE_OP_CMP_SWAP, MROCE_OP_FETCH_ADD,
		MROCE_OP_ATOMIC_RESP, MROCE_OP_ACK, MROCE_OP_PROBE,
		MROCE_OP_UD_SEND, MROCE_OP_UD_SEND_IMM,
		MROCE_OP_UC_SEND, MROCE_OP_UC_SEND_IMM, MROCE_OP_UC_WRITE,
		MROCE_OP_UC_WRITE_IMM,
	};
	for (uint8_t op : ops) {
		mroce_pkt p{};
		p.version = MROCE_WIRE_VERSION;
		p.opcode = op;
		p.path = 1;
		p.psn = 3;
		p.dsn = 4;
		p.msn = 5;
		bool data = op == MROCE_OP_SEND || op == MROCE_OP_SEND_IMM ||
			    op == MROCE_OP_SEND_INV || op == MROCE_OP_WRITE ||
			    op == MROCE_OP_WRITE_IMM || op == MROCE_OP_READ_RESP ||
			    mroce_op_is_uc(op);
		if (mroce_op_is_uc(op))
			p.path = p.dsn = 0;	/* one path, no DSN */
		if (op != MROCE_OP_ACK && op != MROCE_OP_PROBE)
			p.flags = MROCE_F_FIRST | MROCE_F_LAST;
		if (data) {
			p.payload_len = 64;
			p.payload = pl;
			p.reth.length = p.seth.length = p.rresp_len = 64;
		}
		if (op == MROCE_OP_ACK) {
			p.ack.high_psn = 10;
			p.ack.cum_psn = 8;
			p.ack.sack[0] = 1;
		}
		std::vector<uint8_t> b(MROCE_MAX_PKT);
		int n = mroce_pkt_build(b.data(), b.size(), &p);
		if (n < 0)
			return 1;
		b.resize(n);
		char name[64];
		snprintf(name, sizeof(name), "/fuzz_parse/op-%02x", op);
		put(dir + name, b);
		if (op != MROCE_OP_ACK)
			continue;
		/* an ACK with two blocks (paths 0 and 2) */
		uint8_t blk[2 * MROCE_ACK_BLK_SIZE];
		mroce_ack_blk_put(blk, 0, &p.ack);
		mroce_ack_blk_put(blk + MROCE_ACK_BLK_SIZE, 2, &p.ack);
		p.payload = blk;
		p.payload_len = sizeof(blk);
		b.resize(MROCE_MAX_PKT);
		n = mroce_pkt_build(b.data(), b.size(), &p);
		if (n < 0)
			return 1;
		b.resize(n);
		put(dir + "/fuzz_parse/op-10-blocks", b);
	}
	/*
	 * fuzz_uc: mtu, isn (4 bytes), then ops: 1 = a message (opcode,
	 * length (2), msn skip, va, rkey, imm), 2 = deliver, 4 = lose /
	 * duplicate / swap, 5 = abort, 0 = a raw packet.
	 */
	const std::vector<std::vector<uint8_t>> uc = {
		{ 2, 0x85, 0xc6, 0x9f, 0, 1, 0, 0x10, 0x0c, 0, 0, 1, 5, 2, 2, 2, 2 },
		{ 0, 1, 0, 0, 0, 1, 1, 0x00, 0x04, 0, 0, 0, 7, 1, 2, 0x00, 0x02, 1, 1, 1, 9,
		  4, 0, 2, 2, 2, 2, 2, 2 },
		{ 1, 0, 0, 0, 0, 1, 3, 0x00, 0x06, 0, 2, 1, 3, 4, 1, 2, 4, 2, 2, 2, 5, 2 },
		{ 4, 7, 7, 7, 0, 1, 0, 0x00, 0x30, 2, 0, 0, 0, 0x80, 0x40, 0, 2, 2, 2 },
	};
	for (size_t i = 0; i < uc.size(); i++)
		put(dir + "/fuzz_uc/script-" + std::to_string(i), uc[i]);
	/* fuzz_conn: params, then post/tx/deliver/ack/timer ops */
	const std::vector<std::vector<uint8_t>> scripts = {
		{ 1, 2, 0, 7, 0, 3, 0x00, 0x10, 0, 0, 1, 4, 0, 0, 1, 5, 0, 0 },
		{ 3, 4, 1, 9, 0, 4, 0x00, 0x04, 0, 0, 1, 4, 0, 0, 1, 5, 0, 0, 6, 0, 5,
		  7, 0, 1, 3, 0, 1, 0, 9, 0, 0 },
		{ 0, 0, 0, 1, 0, 5, 0x08, 0, 0, 0, 0, 1, 3, 0, 0, 5, 0x80, 0, 0,
		  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 6, 0xff, 0xff, 7, 0 },
		{ 2, 1, 2, 3, 0, 6, 0, 0, 0, 0, 0, 1, 4, 0, 0, 1, 5, 0, 0, 1, 5, 1, 0,
		  0, 2, 8, 0x10, 0, 0, 0, 1, 4, 1, 1, 7, 0, 0, 1, 5, 0, 0 },
	};
	for (size_t i = 0; i < scripts.size(); i++)
		put(dir + "/fuzz_conn/script-" + std::to_string(i), scripts[i]);
	return 0;
}
