// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Test harness: two protocol-core endpoints joined by an in-test lossy,
// reordering, duplicating, ECN-marking channel, with a simple memory model
// (one registered region per endpoint, receive buffers, per-WR buffers).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mroce_core.h"
#include "mroce_conn_mem.hpp"

namespace mroce_test {

constexpr uint64_t kMemVa = 0x100000;
constexpr uint32_t kRkey = 0x1234;
constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

// One side of a connection: the core plus the embedder's memory.
class Endpoint {
public:
	explicit Endpoint(size_t mem_size = 1 << 20) : mem(mem_size)
	{
		conn = mroce_mem::conn_alloc();
	}

	int init(const mroce_params &p, uint64_t now)
	{
		ops.place = &Endpoint::place_cb;
		ops.read_check = &Endpoint::read_check_cb;
		ops.atomic = &Endpoint::atomic_cb;
		ops.complete = &Endpoint::complete_cb;
		return mroce_mem::conn_init(conn.get(), &p, &ops, this, now);
	}

	// Post a WR whose local data (SEND/WRITE source, READ target) is buf.
	int post(mroce_wr wr, std::vector<uint8_t> buf, uint64_t now)
	{
		wr.cookie = next_cookie;
		int ret = mroce_conn_post(conn.get(), &wr, now);
		if (ret == 0) {
			bufs[next_cookie] = std::move(buf);
			posted.push_back(next_cookie);
			next_cookie++;
		}
		return ret;
	}

	void post_recv(size_t size) { recvs.emplace_back(size, 0); }

	// Build the wire bytes of a transmit descriptor.
	std::vector<uint8_t> build(const mroce_tx &tx)
	{
		std::vector<uint8_t> payload(tx.pkt.payload_len);
		if (tx.src == MROCE_SRC_WR) {
			auto &b = bufs.at(tx.cookie);
			EXPECT_LE(tx.src_offset + payload.size(), b.size());
			memcpy(payload.data(), b.data() + tx.src_offset,
			       payload.size());
		} else if (tx.src == MROCE_SRC_PKT) {
			memcpy(payload.data(), tx.pkt.payload, payload.size());
		} else if (tx.src == MROCE_SRC_LOCAL_MEM) {
			EXPECT_TRUE(in_mem(tx.src_va, payload.size()));
			memcpy(payload.data(), &mem[tx.src_va - kMemVa],
			       payload.size());
		} else {
			EXPECT_EQ(payload.size(), 0u);
		}
		mroce_pkt p = tx.pkt;
		p.payload = payload.data();
		std::vector<uint8_t> out(MROCE_MAX_PKT);
		int n = mroce_pkt_build(out.data(), out.size(), &p);
		EXPECT_GT(n, 0) << mroce_strerror(n);
		out.resize(n > 0 ? n : 0);
		return out;
	}

	bool in_mem(uint64_t va, uint64_t len) const
	{
		return va >= kMemVa && len <= mem.size() &&
		       va - kMemVa <= mem.size() - len;
	}

	mroce_mem::ConnPtr conn;
	mroce_conn_ops ops{};
	std::vector<uint8_t> mem;
	std::map<uint64_t, std::vector<uint8_t>> bufs;
	std::vector<uint64_t> posted;
	std::vector<std::vector<uint8_t>> recvs;
	std::vector<mroce_completion> cqes;
	std::set<std::pair<uint32_t, uint32_t>> placed;  // (msn|kind, offset)
	uint64_t next_cookie = 1;
	bool rnr_when_empty = true;
	int dup_placements = 0;
	int kicks = 0;		/* congestion group kicks (test_cc_group.cpp) */
	size_t seen = 0;	/* cqes a test loop has handled */

private:
	bool note_placed(uint32_t kind, uint32_t msn, uint32_t off)
	{
		auto key = std::make_pair(msn * 4 + kind, off);
		if (!placed.insert(key).second) {
			dup_placements++;
			return false;
		}
		return true;
	}

	static int place_cb(void *ctx, const mroce_place *pl)
	{
		auto *e = static_cast<Endpoint *>(ctx);
		switch (pl->kind) {
		case MROCE_PLACE_SEND: {
			if (pl->rq_seq >= e->recvs.size())
				return e->rnr_when_empty ? -MROCE_SYN_RNR
							 : -MROCE_SYN_REM_OP;
			auto &r = e->recvs[pl->rq_seq];
			if (pl->msg_len > r.size())
				return -MROCE_SYN_INV_REQ;
			e->note_placed(pl->kind, pl->msn, pl->offset);
			if (pl->len)
				memcpy(r.data() + pl->offset, pl->data, pl->len);
			return 0;
		}
		case MROCE_PLACE_WRITE:
			if (pl->rkey != kRkey ||
			    !e->in_mem(pl->va + pl->offset, pl->len))
				return -MROCE_SYN_REM_ACCESS;
			e->note_placed(pl->kind, pl->msn, pl->offset);
			memcpy(&e->mem[pl->va + pl->offset - kMemVa], pl->data,
			       pl->len);
			return 0;
		case MROCE_PLACE_READ_RESP: {
			auto it = e->bufs.find(pl->cookie);
			if (it == e->bufs.end() ||
			    pl->offset + pl->len > it->second.size())
				return -MROCE_SYN_REM_OP;
			e->note_placed(pl->kind, pl->msn, pl->offset);
			memcpy(it->second.data() + pl->offset, pl->data, pl->len);
			return 0;
		}
		}
		return -MROCE_SYN_INV_REQ;
	}

	static int read_check_cb(void *ctx, uint64_t va, uint32_t rkey,
				 uint32_t len)
	{
		auto *e = static_cast<Endpoint *>(ctx);
		if (rkey != kRkey || !e->in_mem(va, len))
			return -MROCE_SYN_REM_ACCESS;
		return 0;
	}

	static int atomic_cb(void *ctx, uint32_t op, uint64_t va, uint32_t rkey,
			     uint64_t swap, uint64_t cmp_add, uint64_t *orig)
	{
		auto *e = static_cast<Endpoint *>(ctx);
		if (rkey != kRkey || !e->in_mem(va, 8))
			return -MROCE_SYN_REM_ACCESS;
		uint64_t v;
		memcpy(&v, &e->mem[va - kMemVa], 8);
		*orig = v;
		if (op == MROCE_WOP_FETCH_ADD)
			v += cmp_add;
		else if (v == cmp_add)
			v = swap;
		memcpy(&e->mem[va - kMemVa], &v, 8);
		return 0;
	}

	static void complete_cb(void *ctx, const mroce_completion *c)
	{
		static_cast<Endpoint *>(ctx)->cqes.push_back(*c);
	}
};

struct ChannelCfg {
	double loss = 0, dup = 0, reorder = 0, ce = 0, corrupt = 0;
	uint64_t delay_ns = 5 * kUs;
	uint64_t jitter_ns = 1 * kUs;
	uint64_t reorder_ns = 30 * kUs;
};

// Packets in flight between two endpoints.
class Channel {
public:
	explicit Channel(uint64_t seed) : rng(seed) {}

	struct Pkt {
		uint64_t due;
		uint64_t seq;
		int to;
		bool ce;
		std::vector<uint8_t> bytes;
		bool operator>(const Pkt &o) const
		{
			return due != o.due ? due > o.due : seq > o.seq;
		}
	};

	// A black-holed (from, sport) pair models a broken ECMP path.
	std::set<std::pair<int, uint16_t>> dead;
	std::set<std::pair<int, uint16_t>> ce_ports;  // always CE-marked
	bool all_dead = false;
	ChannelCfg cfg;
	uint64_t sent = 0, dropped = 0, corrupted = 0;
	uint64_t ce_marked[2] = {0, 0};	// CE-marked packets, by receiver

	void send(int from, uint16_t sport, std::vector<uint8_t> b, uint64_t now)
	{
		sent++;
		if (all_dead || dead.count({from, sport}) || chance(cfg.loss)) {
			dropped++;
			return;
		}
		bool ce = ce_ports.count({from, sport}) || chance(cfg.ce);
		int copies = chance(cfg.dup) ? 2 : 1;
		if (ce)
			ce_marked[1 - from] += copies;
		for (int i = 0; i < copies; i++) {
			Pkt p{now + delay(), seq++, 1 - from, ce, b};
			if (chance(cfg.corrupt) && !p.bytes.empty()) {
				p.bytes[rng() % p.bytes.size()] ^=
					(uint8_t)(1u << (rng() % 8));
				corrupted++;
			}
			q.push(std::move(p));
		}
	}

	bool empty() const { return q.empty(); }
	uint64_t next_due() const { return q.empty() ? UINT64_MAX : q.top().due; }
	Pkt pop()
	{
		Pkt p = q.top();
		q.pop();
		return p;
	}

	bool chance(double p)
	{
		return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < p;
	}

	std::mt19937_64 rng;

private:
	uint64_t delay()
	{
		uint64_t d = cfg.delay_ns;
		if (cfg.jitter_ns)
			d += rng() % cfg.jitter_ns;
		if (chance(cfg.reorder))
			d += rng() % cfg.reorder_ns;
		return d;
	}

	std::priority_queue<Pkt, std::vector<Pkt>, std::greater<Pkt>> q;
	uint64_t seq = 0;
};

// ISNs (24-bit CM PSNs) whose derived starts are a few hundred below 2^32,
// so that the sequence spaces wrap during a test.
constexpr uint32_t kIsnDsnWrap = 0x9fc685;	// DSN start 2^32 - 349
constexpr uint32_t kIsnMsnWrap = 0x83496a;	// MSN start 2^32 - 246
constexpr uint32_t kIsnPsn0Wrap = 0xade41f;	// path 0 PSN start 2^32 - 230

// A nonzero ISN per seed: the wrapping ones above, or a pseudo-random one.
inline uint32_t test_isn(uint64_t seed)
{
	static const uint32_t wrap[] = { kIsnDsnWrap, kIsnMsnWrap,
					 kIsnPsn0Wrap };
	if (seed % 4 < 3)
		return wrap[seed % 4];
	return (uint32_t)((seed * 0x9e3779b97f4a7c15ULL) >> 40) | 1;
}

// b's ISNs mirror a's: a's tx is b's rx (the CM's sq_psn/rq_psn).
inline mroce_params mirror_isn(const mroce_params &pa, mroce_params pb)
{
	pb.isn_tx = pa.isn_rx;
	pb.isn_rx = pa.isn_tx;
	return pb;
}

// Two endpoints and the channel, driven by discrete events.
class World {
public:
	explicit World(uint64_t seed, const mroce_params &pa,
		       const mroce_params &pb)
		: ch(seed)
	{
		EXPECT_EQ(ep[0].init(pa, 0), 0);
		EXPECT_EQ(ep[1].init(mirror_isn(pa, pb), 0), 0);
	}

	static mroce_params params(uint64_t seed, uint32_t paths = 4)
	{
		mroce_params p;
		mroce_params_default(&p);
		p.num_paths = paths;
		p.seed = seed;
		mroce_params_set_mtu(&p, 1024);
		p.isn_tx = test_isn(seed);
		p.isn_rx = test_isn(seed + 1);
		return p;
	}

	void pump(int i)
	{
		mroce_tx tx;
		int guard = 0;
		while (mroce_conn_tx(ep[i].conn.get(), now, &tx) == 1) {
			ch.send(i, tx.sport, ep[i].build(tx), now);
			ASSERT_LT(++guard, 100000) << "tx never stops";
		}
	}

	void check_invariants()
	{
		for (auto &e : ep) {
			const char *err = mroce_conn_check(e.conn.get());
			ASSERT_EQ(err, nullptr) << err;
		}
	}

	// One event: deliver due packets, fire due timers, transmit.
	bool step()
	{
		uint64_t t = ch.next_due();
		for (auto &e : ep)
			t = std::min(t, mroce_conn_next_timer(e.conn.get()));
		if (t == UINT64_MAX)
			return false;
		if (t > now)
			now = t;
		while (!ch.empty() && ch.next_due() <= now) {
			Channel::Pkt p = ch.pop();
			mroce_pkt pkt;
			int r = mroce_pkt_parse(p.bytes.data(), p.bytes.size(), &pkt);
			if (r) {
				parse_errors++;
				continue;
			}
			mroce_conn_rx(ep[p.to].conn.get(), &pkt, p.ce, now);
		}
		for (auto &e : ep)
			if (mroce_conn_next_timer(e.conn.get()) <= now)
				mroce_conn_timer(e.conn.get(), now);
		pump(0);
		pump(1);
		steps++;
		return true;
	}

	// Run until pred() or the simulated deadline; returns pred().
	template <class F> bool run_until(F pred, uint64_t deadline,
					  uint64_t max_steps = 5000000)
	{
		pump(0);
		pump(1);
		while (!pred()) {
			if (now > deadline)
				return false;
			if (steps > max_steps) {
				/* time stopped advancing: a timer livelock */
				ADD_FAILURE() << "no progress after " << steps
					      << " events at " << now << " ns";
				return false;
			}
			if (!step())
				return pred();
			check_invariants();
			if (::testing::Test::HasFatalFailure())
				return false;
		}
		return true;
	}

	Channel ch;
	Endpoint ep[2];
	uint64_t now = 0;
	uint64_t steps = 0;
	uint64_t parse_errors = 0;
};

inline std::vector<uint8_t> random_bytes(std::mt19937_64 &rng, size_t n)
{
	std::vector<uint8_t> v(n);
	for (auto &b : v)
		b = (uint8_t)rng();
	return v;
}

}  // namespace mroce_test
