// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Fuzz targets (see fuzz_harness.h).
#include "fuzz_harness.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "mroce_core.h"
#include "mroce_conn_mem.hpp"

namespace {

[[noreturn]] void fail(const char *what)
{
	fprintf(stderr, "mroce fuzz property violated: %s\n", what);
	abort();
}

bool same_encoding(const uint8_t *data, size_t size)
{
	mroce_pkt p;
	if (mroce_pkt_parse(data, (uint32_t)size, &p))
		return false;
	std::vector<uint8_t> out(MROCE_MAX_PKT);
	int n = mroce_pkt_build(out.data(), (uint32_t)out.size(), &p);
	if (n < 0)
		fail("accepted packet does not rebuild");
	if ((size_t)n != size || memcmp(out.data(), data, size))
		fail("accepted packet is not canonical");
	return true;
}

// Script reader over the fuzz input.
struct Input {
	const uint8_t *p;
	size_t n;
	uint8_t u8() { return n ? (n--, *p++) : 0; }
	uint16_t u16() { return (uint16_t)(u8() | (u8() << 8)); }
	uint32_t u32() { return u16() | ((uint32_t)u16() << 16); }
	uint64_t u64() { return u32() | ((uint64_t)u32() << 32); }
	bool done() const { return n == 0; }
};

constexpr uint64_t kVa = 0x10000;
constexpr uint32_t kMem = 1 << 16;

struct Env {
	mroce_mem::ConnPtr c = mroce_mem::conn_alloc();
	std::vector<uint8_t> mem = std::vector<uint8_t>(kMem);
	mroce_conn_ops ops{};
	uint32_t recvs = 0;
	uint64_t last_msn_done = 0;
	bool any_done = false;
	uint8_t deny = 0;

	static int place(void *ctx, const mroce_place *pl)
	{
		auto *e = static_cast<Env *>(ctx);
		if (pl->len > MROCE_MAX_PAYLOAD || (pl->len && !pl->data))
			fail("placement descriptor out of bounds");
		if (pl->offset + (uint64_t)pl->len > pl->msg_len)
			fail("placement beyond message length");
		if (e->deny & 1)
			return -MROCE_SYN_RNR;
		if (pl->kind == MROCE_PLACE_WRITE) {
			uint64_t va = pl->va + pl->offset;
			if (va < kVa || va - kVa + pl->len > kMem)
				return -MROCE_SYN_REM_ACCESS;
			memcpy(&e->mem[va - kVa], pl->data, pl->len);
		} else if (pl->kind == MROCE_PLACE_SEND) {
			if (pl->rq_seq >= e->recvs)
				return -MROCE_SYN_RNR;
		}
		return 0;
	}

	static int read_check(void *ctx, uint64_t va, uint32_t rkey, uint32_t len)
	{
		auto *e = static_cast<Env *>(ctx);
		if ((e->deny & 2) || va < kVa || va - kVa + len > kMem)
			return -MROCE_SYN_REM_ACCESS;
		return 0;
	}

	static int atomic(void *ctx, uint32_t op, uint64_t va, uint32_t rkey,
			  uint64_t swap, uint64_t cmp_add, uint64_t *orig)
	{
		auto *e = static_cast<Env *>(ctx);
		if (va < kVa || va - kVa + 8 > kMem || (va & 7))
			return -MROCE_SYN_REM_ACCESS;
		uint64_t v;
		memcpy(&v, &e->mem[va - kVa], 8);
		*orig = v;
		v = op == MROCE_WOP_FETCH_ADD ? v + cmp_add :
		    (v == cmp_add ? swap : v);
		memcpy(&e->mem[va - kVa], &v, 8);
		return 0;
	}

	static void complete(void *ctx, const mroce_completion *cq)
	{
		auto *e = static_cast<Env *>(ctx);
		if (cq->kind != MROCE_CQE_REQ)
			return;
		/* requester completions strictly in MSN order */
		if (e->any_done && cq->msn != (uint32_t)(e->last_msn_done + 1))
			fail("requester completion out of order");
		e->last_msn_done = cq->msn;
		e->any_done = true;
	}

	/* Hostile input never yields an event that names nonsense. */
	static void event(void *ctx, const mroce_event *ev)
	{
		auto *e = static_cast<Env *>(ctx);
		const mroce_params &p = e->c->p;
		if (ev->type > MROCE_EV_ERROR || ev->reason > MROCE_EVR_LOCAL)
			fail("event of unknown type or reason");
		if (ev->path != MROCE_EV_CONN && ev->path >= p.num_paths)
			fail("event for a path out of range");
		if (ev->path == MROCE_EV_CONN && ev->type != MROCE_EV_CWND &&
		    ev->type != MROCE_EV_ERROR)
			fail("path event without a path");
		if (ev->type == MROCE_EV_CWND &&
		    (ev->a == ev->b || ev->b < p.cwnd_min ||
		     (ev->path != MROCE_EV_CONN && ev->b > p.cwnd_max)))
			fail("window event without a change or out of bounds");
		if (ev->type == MROCE_EV_ERROR && !mroce_conn_ok(e->c.get()))
			fail("error event of a connection already failed");
		e->events++;
	}

	uint64_t events = 0;

	int init(const mroce_params &p)
	{
		ops.place = place;
		ops.read_check = read_check;
		ops.atomic = atomic;
		ops.complete = complete;
		ops.event = event;
		return mroce_mem::conn_init(c.get(), &p, &ops, this, 0);
	}

	void check()
	{
		const char *err = mroce_conn_check(c.get());
		if (err)
			fail(err);
	}
};

// Drain an endpoint; keep (bounded) wire copies of what it sent.
void drain(Env &e, uint64_t now, std::vector<std::vector<uint8_t>> *keep)
{
	mroce_tx tx;
	static uint8_t payload[MROCE_MAX_PAYLOAD];
	int guard = 0;
	while (mroce_conn_tx(e.c.get(), now, &tx) == 1) {
		if (++guard > 20000)
			fail("tx does not stop");
		if (tx.pkt.payload_len > e.c->p.mtu)
			fail("tx payload larger than mtu");
		mroce_pkt p = tx.pkt;
		/* the connection's own bytes (ACK blocks) go out as they are */
		if (tx.src != MROCE_SRC_PKT)
			p.payload = payload;
		std::vector<uint8_t> b(MROCE_MAX_PKT);
		int n = mroce_pkt_build(b.data(), (uint32_t)b.size(), &p);
		if (n < 0)
			fail("core produced an unbuildable packet");
		b.resize(n);
		mroce_pkt q;
		if (mroce_pkt_parse(b.data(), (uint32_t)n, &q))
			fail("core produced a packet its parser rejects");
		if (keep && keep->size() < 512)
			keep->push_back(std::move(b));
	}
}

}  // namespace

int mroce_fuzz_parse(const uint8_t *data, size_t size)
{
	if (size > MROCE_MAX_PKT + 64)
		return 0;
	same_encoding(data, size);
	/* with a valid ICRC the fuzzer reaches the field checks */
	if (size >= MROCE_MIN_PKT) {
		std::vector<uint8_t> b(data, data + size);
		mroce_pkt_seal(b.data(), (uint32_t)size - 4, (uint32_t)size);
		same_encoding(b.data(), size);
	}
	return 0;
}

int mroce_fuzz_conn(const uint8_t *data, size_t size)
{
	Input in{ data, size };
	mroce_params prm;
	mroce_params_default(&prm);
	prm.num_paths = 1 + in.u8() % 8;
	prm.max_inflight = 16u << (in.u8() % 5);
	prm.mtu = 256u << (in.u8() % 3);
	prm.cwnd_init = 8 * (prm.mtu + MROCE_PKT_OVERHEAD);
	prm.cwnd_min = prm.mtu + MROCE_PKT_OVERHEAD;
	prm.cwnd_max = MROCE_PATH_WND * (prm.mtu + MROCE_PKT_OVERHEAD);
	prm.seed = in.u8();
	/*
	 * ISNs from the seed (no new input byte: the corpus keeps its
	 * meaning): zero, or ones whose DSN/MSN/PSN starts are just below
	 * 2^32, so that the spaces wrap (tests/unit/harness.h).
	 */
	static const uint32_t isns[] = { 0, 0x9fc685, 0x83496a, 0xade41f };
	prm.isn_tx = isns[prm.seed % 4];
	prm.isn_rx = isns[(prm.seed / 4) % 4];
	/* table sizes from the seed's other bits (mroce_params max_msgs, path_wnd) */
	static const uint32_t msgs[] = { MROCE_MAX_MSGS, 64, 16, 4 };
	static const uint32_t wnds[] = { MROCE_PATH_WND, 128, 32, 16 };
	prm.max_msgs = msgs[(prm.seed / 16) % 4];
	prm.path_wnd = wnds[(prm.seed / 64) % 4];
	prm.cwnd_max = prm.path_wnd * (prm.mtu + MROCE_PKT_OVERHEAD);
	mroce_params prm_b = prm;
	prm_b.isn_tx = prm.isn_rx;
	prm_b.isn_rx = prm.isn_tx;
	Env a, b;
	if (a.init(prm) || b.init(prm_b))
		fail("valid params rejected");
	uint64_t now = 0;
	std::vector<std::vector<uint8_t>> a_out, b_out;
	int ops = 0;

	while (!in.done() && ops++ < 400) {
		uint8_t op = in.u8();
		switch (op % 8) {
		case 0: {	/* post a WR on A */
			mroce_wr wr{};
			wr.op = in.u8() % 8;
			wr.length = in.u16() % 5000;
			wr.remote_va = kVa + (in.u16() & ~7u);
			wr.rkey = 1;
			wr.compare_add = in.u8();
			if (wr.op == MROCE_WOP_CMP_SWAP || wr.op == MROCE_WOP_FETCH_ADD)
				wr.length = 8;
			mroce_conn_post(a.c.get(), &wr, now);
			b.recvs++;
			break;
		}
		case 1:		/* A and B transmit */
			drain(a, now, &a_out);
			drain(b, now, &b_out);
			break;
		case 2: {	/* raw packet into A, ICRC fixed up */
			size_t len = in.u8() + 36;
			std::vector<uint8_t> pk(len);
			for (auto &x : pk)
				x = in.u8();
			pk[0] = MROCE_WIRE_VERSION;
			mroce_pkt_seal(pk.data(), (uint32_t)len - 4, (uint32_t)len);
			mroce_pkt p;
			if (!mroce_pkt_parse(pk.data(), (uint32_t)len, &p))
				mroce_conn_rx(a.c.get(), &p, in.u8() & 1, now);
			break;
		}
		case 3: {	/* synthesized ACK/SACK for one of A's paths */
			mroce_pkt p{};
			p.version = MROCE_WIRE_VERSION;
			p.opcode = MROCE_OP_ACK;
			p.path = in.u8() % prm.num_paths;
			const mroce_path &ph = a.c->path[p.path];
			p.psn = ph.snd_una + in.u8();
			p.dsn = a.c->snd_dsn_una + in.u8();
			p.msn = a.c->msn_una + in.u8() % 4;
			p.ack.high_psn = ph.snd_una + in.u16() % 300;
			p.ack.cum_psn = p.ack.high_psn - in.u16() % 260;
			p.ack.ecn_ce = in.u32();
			p.ack.echo_ts = (uint32_t)(now / 1000) - in.u8();
			p.ack.cum_dsn = a.c->snd_dsn_una + in.u8() % 64;
			p.ack.syndrome = in.u8() % 8;
			p.ack.rnr_timer = p.ack.syndrome == MROCE_SYN_RNR ? in.u8() : 0;
			for (auto &w : p.ack.sack)
				w = in.u64();
			std::vector<uint8_t> bb(MROCE_MAX_PKT);
			int n = mroce_pkt_build(bb.data(), (uint32_t)bb.size(), &p);
			mroce_pkt q;
			if (n > 0 && !mroce_pkt_parse(bb.data(), (uint32_t)n, &q))
				mroce_conn_rx(a.c.get(), &q, false, now);
			break;
		}
		case 4: {	/* deliver one of A's packets to B, maybe mutated */
			if (a_out.empty())
				break;
			auto pk = a_out[in.u8() % a_out.size()];
			if (in.u8() & 1) {
				pk[in.u8() % pk.size()] ^= in.u8();
				mroce_pkt_seal(pk.data(), (uint32_t)pk.size() - 4,
					       (uint32_t)pk.size());
			}
			mroce_pkt p;
			if (!mroce_pkt_parse(pk.data(), (uint32_t)pk.size(), &p))
				mroce_conn_rx(b.c.get(), &p, in.u8() & 1, now);
			break;
		}
		case 5: {	/* deliver one of B's packets to A */
			if (b_out.empty())
				break;
			auto &pk = b_out[in.u8() % b_out.size()];
			mroce_pkt p;
			if (!mroce_pkt_parse(pk.data(), (uint32_t)pk.size(), &p))
				mroce_conn_rx(a.c.get(), &p, in.u8() & 1, now);
			break;
		}
		case 6:		/* time passes, timers run */
			now += (uint64_t)in.u16() * 1000;
			mroce_conn_timer(a.c.get(), now);
			mroce_conn_timer(b.c.get(), now);
			break;
		default: {	/* jump to A's next timer; toggle denials */
			uint64_t t = mroce_conn_next_timer(a.c.get());
			if (t != UINT64_MAX && t > now && t - now < 10000000000ULL)
				now = t;
			mroce_conn_timer(a.c.get(), now);
			b.deny = in.u8() & 3;
			break;
		}
		}
		a.check();
		b.check();
		if (a_out.size() >= 512)
			a_out.erase(a_out.begin(), a_out.begin() + 256);
		if (b_out.size() >= 512)
			b_out.erase(b_out.begin(), b_out.begin() + 256);
	}
	return 0;
}

namespace {

// What the harness knows of the message the UC receiver is assembling.
struct UcModel {
	bool live = false;
	mroce_pkt first{};	// its first accepted packet (fields only)
	uint64_t next_off = 0;	// bytes accepted: each exactly once, in order
};

// A UC message to send, built by the script.
struct UcSent {
	mroce_uc_msg m;
	std::vector<std::vector<uint8_t>> pkts;
};

uint8_t uc_byte(uint32_t msn, uint32_t off) { return (uint8_t)(msn * 7 + off * 13 + 1); }

bool uc_same(const mroce_pkt &a, const mroce_pkt &b)
{
	uint32_t la = a.ext & MROCE_EXT_RETH ? a.reth.length : a.seth.length;
	uint32_t lb = b.ext & MROCE_EXT_RETH ? b.reth.length : b.seth.length;
	return a.opcode == b.opcode && a.msn == b.msn && la == lb &&
	       (!(a.ext & MROCE_EXT_RETH) ||
		(a.reth.va == b.reth.va && a.reth.rkey == b.reth.rkey)) &&
	       (!(a.ext & MROCE_EXT_IMETH) || a.imm == b.imm);
}

}  // namespace

int mroce_fuzz_uc(const uint8_t *data, size_t size)
{
	Input in{ data, size };
	const uint32_t mtu = 256u << (in.u8() % 5);	/* 256 .. 4096 */
	const uint32_t isn = in.u32() & MROCE_ISN_MASK;
	mroce_uc_rx u;
	mroce_uc_rx_init(&u, isn, mtu);
	UcModel model;
	std::vector<std::vector<uint8_t>> chan;	/* packets in flight, in order */
	uint32_t msn = mroce_isn_start(isn, MROCE_ISN_MSN);
	uint64_t broken = 0;
	int steps = 0;

	auto deliver = [&](const std::vector<uint8_t> &b) {
		mroce_pkt p;
		if (mroce_pkt_parse(b.data(), (uint32_t)b.size(), &p))
			return;
		mroce_uc_step st;
		const bool was_live = u.live;
		const uint32_t was_nxt = u.msn_nxt;
		int ret = mroce_uc_rx_pkt(&u, &p, &st);
		if (!mroce_op_is_uc(p.opcode)) {
			if (ret != MROCE_E_OPCODE)
				fail("uc: a non-UC packet was taken");
			return;
		}
		if (u.broken < broken)
			fail("uc: broken went backwards");
		broken = u.broken;
		if (st.aborted && !was_live)
			fail("uc: aborted with no message being assembled");
		if (ret == MROCE_E_WINDOW || ret == MROCE_E_DUP) {
			if (u.msn_nxt != was_nxt || st.aborted)
				fail("uc: a refused packet changed the window");
			if (ret == MROCE_E_DUP && !u.live)
				fail("uc: a duplicate ended the message");
		}
		if (st.aborted || (ret && !u.live))
			model.live = false;
		if (ret)
			return;
		if (st.first) {
			if (!(p.flags & MROCE_F_FIRST) || p.offset)
				fail("uc: a message starts without its first packet");
			model.live = true;
			model.first = p;
			model.next_off = 0;
		} else if (!model.live || !uc_same(model.first, p)) {
			fail("uc: a packet of another message was accepted");
		}
		if (p.offset != model.next_off)
			fail("uc: a packet accepted out of place (gap or overlap)");
		if (p.payload_len > mtu)
			fail("uc: a payload larger than mtu was accepted");
		model.next_off += p.payload_len;
		uint32_t len = p.ext & MROCE_EXT_RETH ? p.reth.length : p.seth.length;
		if (model.next_off > len)
			fail("uc: accepted beyond the message length");
		if (st.last != (model.next_off == len && (p.flags & MROCE_F_LAST)))
			fail("uc: completion does not match full coverage");
		if (st.last) {
			model.live = false;
			if (u.live)
				fail("uc: still assembling a completed message");
		}
		if (u.live && u.next_off > u.length)
			fail("uc: receiver state beyond its message");
	};

	while (!in.done() && ++steps < 4000) {
		uint8_t op = in.u8();
		switch (op % 6) {
		case 0: {	/* a raw packet, sealed so it reaches the checks */
			uint16_t n = in.u16() % 200;
			std::vector<uint8_t> b(n + MROCE_MIN_PKT);
			for (auto &c : b)
				c = in.u8();
			b[0] = MROCE_WIRE_VERSION;
			if (op & 0x80)
				b[1] = MROCE_OP_UC_SEND + (b[1] & 3);
			mroce_pkt_seal(b.data(), (uint32_t)b.size() - 4, (uint32_t)b.size());
			deliver(b);
			break;
		}
		case 1: {	/* a genuine message into the channel */
			UcSent s{};
			s.m.opcode = MROCE_OP_UC_SEND + in.u8() % 4;
			s.m.length = in.u16() % (4 * mtu + 1);
			s.m.msn = msn + in.u8() % 3;	/* sometimes skip MSNs */
			msn = s.m.msn + 1;
			s.m.va = 0x1000 * (in.u8() % 4);
			s.m.rkey = in.u8() % 2;
			s.m.imm = in.u8();
			std::vector<uint8_t> pl(s.m.length);
			for (uint32_t k = 0; k < s.m.length; k++)
				pl[k] = uc_byte(s.m.msn, k);
			uint32_t off = 0;
			do {
				mroce_pkt p;
				int n = mroce_uc_seg(&s.m, off, mtu, 1, 0, &p);
				if (n < 0)
					fail("uc: mroce_uc_seg refused a valid message");
				p.payload = pl.data() + off;
				std::vector<uint8_t> b(MROCE_MAX_PKT);
				int len = mroce_pkt_build(b.data(), (uint32_t)b.size(), &p);
				if (len < 0)
					fail("uc: a segment does not build");
				b.resize(len);
				if (chan.size() < 256)
					chan.push_back(std::move(b));
				off += n;
			} while (off < s.m.length);
			break;
		}
		case 2:		/* deliver the oldest packet */
		case 3:
			if (!chan.empty()) {
				deliver(chan.front());
				chan.erase(chan.begin());
			}
			break;
		case 4: {	/* lose, duplicate or swap the oldest */
			if (chan.empty())
				break;
			uint8_t how = in.u8() % 3;
			if (how == 0)
				chan.erase(chan.begin());
			else if (how == 1)
				deliver(chan.front());
			else if (chan.size() > 1)
				std::swap(chan[0], chan[1]);
			break;
		}
		case 5:		/* the embedder refuses the current message */
			mroce_uc_rx_abort(&u);
			if (u.live)
				fail("uc: abort left a message being assembled");
			model.live = false;
			break;
		}
	}
	return 0;
}
