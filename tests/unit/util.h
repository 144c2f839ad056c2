// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Helpers for tests that drive one or two endpoints by hand.
#pragma once

#include "harness.h"

namespace mroce_test {

using Wire = std::vector<uint8_t>;

// Everything an endpoint wants to send now, as wire packets.
inline std::vector<Wire> drain(Endpoint &e, uint64_t now,
			       std::vector<uint16_t> *sports = nullptr)
{
	std::vector<Wire> out;
	mroce_tx tx;
	while (mroce_conn_tx(e.conn.get(), now, &tx) == 1) {
		out.push_back(e.build(tx));
		if (sports)
			sports->push_back(tx.sport);
		if (out.size() > 100000) {
			ADD_FAILURE() << "tx never stops";
			break;
		}
	}
	return out;
}

// Parse wire bytes (which must outlive the result's payload pointer).
inline mroce_pkt parse1(const Wire &w)
{
	mroce_pkt p{};
	int r = mroce_pkt_parse(w.data(), w.size(), &p);
	EXPECT_EQ(r, 0) << mroce_strerror(r);
	return p;
}

inline int deliver(Endpoint &to, const Wire &w, uint64_t now, bool ce = false)
{
	mroce_pkt p = parse1(w);
	return mroce_conn_rx(to.conn.get(), &p, ce, now);
}

inline mroce_params one_path_params(uint32_t paths = 1)
{
	mroce_params p;
	mroce_params_default(&p);
	p.num_paths = paths;
	p.mtu = 1024;
	p.cwnd_init = 64 * (1024 + MROCE_PKT_OVERHEAD);
	p.cwnd_min = 1024 + MROCE_PKT_OVERHEAD;
	p.cwnd_max = MROCE_PATH_WND * (1024 + MROCE_PKT_OVERHEAD);
	return p;
}

inline mroce_wr write_wr(uint32_t len, uint64_t va_off = 0)
{
	mroce_wr wr{};
	wr.op = MROCE_WOP_WRITE;
	wr.length = len;
	wr.remote_va = kMemVa + va_off;
	wr.rkey = kRkey;
	return wr;
}

inline mroce_wr read_wr(uint32_t len, uint64_t va_off = 0)
{
	mroce_wr wr{};
	wr.op = MROCE_WOP_READ;
	wr.length = len;
	wr.remote_va = kMemVa + va_off;
	wr.rkey = kRkey;
	return wr;
}

inline mroce_path_stats pstats(Endpoint &e, uint32_t i)
{
	mroce_path_stats s;
	EXPECT_EQ(mroce_conn_path_stats(e.conn.get(), i, &s), 0);
	return s;
}

inline bool is_op(const Wire &w, uint8_t op)
{
	return w.size() > 1 && w[1] == op;
}

// The paths an ACK acknowledges: the base header's, then its blocks'.
inline std::vector<uint32_t> ack_paths(const Wire &w)
{
	mroce_pkt p = parse1(w);
	std::vector<uint32_t> v{p.path};
	mroce_ack a;
	uint16_t path;
	for (uint32_t k = 0; k < p.payload_len / MROCE_ACK_BLK_SIZE; k++) {
		EXPECT_EQ(mroce_ack_blk_get(&p, k, &path, &a), 0);
		v.push_back(path);
	}
	return v;
}

// A pair of endpoints wired by hand (no channel).
struct Pair {
	Endpoint a, b;
	explicit Pair(const mroce_params &p) : Pair(p, p) {}
	/* Each end with its own parameters (b's seed is made distinct). */
	Pair(const mroce_params &pa, mroce_params pb)
	{
		pb.seed = pa.seed + 1;
		EXPECT_EQ(a.init(pa, 0), 0);
		EXPECT_EQ(b.init(mirror_isn(pa, pb), 0), 0);
	}
};

}  // namespace mroce_test
