// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// MroceEp drives the unchanged protocol core; GbnEp is the baseline.
#include "transport.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace sim {

namespace {
constexpr uint64_t kVaBase = 0x10000000000ull;	// msg m at kVaBase + m<<32
constexpr uint32_t kRkey = 0x5a5a;
}  // namespace

void pattern_fill(uint8_t *dst, uint32_t flow, uint32_t msg, uint32_t off,
		  uint32_t len)
{
	uint32_t i = 0;
	// offsets are multiples of 8 (MTU-aligned segmentation)
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(flow, msg, off + i);
		memcpy(dst + i, &w, 8);
	}
	if (i < len) {
		uint64_t w = pattern_word(flow, msg, off + i);
		memcpy(dst + i, &w, len - i);
	}
}

// ---------------------------------------------------------------- mroce

static uint32_t sim_isn(uint32_t id)
{
	return (uint32_t)(((id + 1) * 0x9e3779b97f4a7c15ULL) >> 40);
}

static mroce_params ep_params(const EpInfo &i, const MroceCfg &cfg, uint64_t seed)
{
	mroce_params p;
	mroce_params_default(&p);
	p.num_paths = cfg.num_paths;
	if (cfg.max_msgs)
		p.max_msgs = cfg.max_msgs;
	mroce_params_set_mtu(&p, cfg.mtu);
	/* the kernel's window parameter (mroce_rc_create()) */
	if (cfg.snd_wnd && cfg.snd_wnd < p.max_inflight) {
		p.snd_wnd = cfg.snd_wnd;
		mroce_params_fit_paths(&p);
	}
	p.dqpn = i.peer;
	p.seed = seed;
	/*
	 * Nonzero ISNs both ends of a connection agree on: ours is the
	 * endpoint id's, the peer's its own (the CM's sq_psn/rq_psn).
	 */
	p.isn_tx = sim_isn(i.id);
	p.isn_rx = sim_isn(i.peer);
	return p;
}

MroceEp::MroceEp(const EpInfo &i, AppSink &s, const MroceCfg &cfg,
		 uint64_t seed)
	: Endpoint(i, s), cfg_(cfg)
{
	const mroce_params p = ep_params(i, cfg, seed);
	/* the size these parameters need: large runs hold 10^4..10^5 of them */
	const size_t size = mroce_conn_size(&p);
	conn_ = mroce_mem::conn_alloc(size);
	ops_.place = &MroceEp::place_cb;
	ops_.read_check = &MroceEp::read_check_cb;
	ops_.atomic = &MroceEp::atomic_cb;
	ops_.complete = &MroceEp::complete_cb;
	if (mroce_conn_init(conn_.get(), size, &p, &ops_, this, 0))
		throw std::runtime_error("mroce_conn_init failed");
}

namespace {

void group_nolock(void *gctx) { (void)gctx; }

}  // namespace

const mroce_cc_group_ops MroceEp::group_ops = {
	group_nolock,
	group_nolock,
	[](void *ctx) {
		auto *e = static_cast<MroceEp *>(ctx);
		e->sink_.kick(e->info.id);
	},
};

bool MroceEp::join(mroce_cc_group *g)
{
	return mroce_cc_group_join(conn_.get(), g) == 0;
}

void MroceEp::after_call()
{
	if (!cfg_.check_invariants)
		return;
	if (const char *e = mroce_conn_check(conn_.get()))
		sink_.protocol_error(e);
}

int MroceEp::place_cb(void *ctx, const mroce_place *pl)
{
	auto *e = static_cast<MroceEp *>(ctx);
	if (pl->kind != MROCE_PLACE_WRITE || pl->rkey != kRkey ||
	    pl->va < kVaBase) {
		e->sink_.protocol_error("placement of unexpected kind/rkey/va");
		return -MROCE_SYN_REM_ACCESS;
	}
	uint64_t msg = (pl->va - kVaBase) >> 32;
	/* MSNs start at the peer's derived ISN, messages count from 0 */
	uint32_t msn0 = mroce_isn_start(e->conn_->p.isn_rx, MROCE_ISN_MSN);
	if ((pl->va & 0xffffffffull) || msg != (uint32_t)(pl->msn - msn0) ||
	    (uint64_t)pl->offset + pl->len > pl->msg_len) {
		e->sink_.protocol_error("placement va/msn/bounds mismatch");
		return -MROCE_SYN_REM_ACCESS;
	}
	/* one buffer for every endpoint: large runs hold 10^5 of them */
	static thread_local std::vector<uint8_t> scratch(MROCE_MAX_PAYLOAD);
	if (pl->len > scratch.size())
		scratch.resize(pl->len);
	pattern_fill(scratch.data(), e->info.flow, (uint32_t)msg, pl->offset, pl->len);
	bool ok = !pl->len || memcmp(scratch.data(), pl->data, pl->len) == 0;
	e->sink_.placed(e->info.flow, (uint32_t)msg, pl->offset, pl->len, ok);
	return 0;
}

int MroceEp::read_check_cb(void *, u64, u32, u32) { return -MROCE_SYN_REM_ACCESS; }

int MroceEp::atomic_cb(void *, u32, u64, u32, u64, u64, u64 *)
{
	return -MROCE_SYN_REM_ACCESS;
}

void MroceEp::complete_cb(void *ctx, const mroce_completion *c)
{
	auto *e = static_cast<MroceEp *>(ctx);
	if (c->kind == MROCE_CQE_REQ)
		e->sink_.completed(e->info.flow, (uint32_t)c->cookie, c->status);
	else
		e->sink_.protocol_error("unexpected receive completion");
}

void MroceEp::flush_pending(Time now)
{
	while (!pending_.empty()) {
		auto [msg, len] = pending_.front();
		mroce_wr wr{};
		wr.cookie = msg;
		wr.op = MROCE_WOP_WRITE;
		wr.length = len;
		wr.remote_va = kVaBase + ((uint64_t)msg << 32);
		wr.rkey = kRkey;
		int r = mroce_conn_post(conn_.get(), &wr, now);
		if (r == MROCE_E_NOSPC)
			break;
		if (r) {
			sink_.completed(info.flow, msg, MROCE_ST_WR_FLUSH);
			sink_.protocol_error("mroce_conn_post failed");
		}
		pending_.pop_front();
	}
}

void MroceEp::post(uint32_t msg, uint32_t len, Time now)
{
	pending_.emplace_back(msg, len);
	flush_pending(now);
	after_call();
}

bool MroceEp::pull(Time now, Packet &p)
{
	flush_pending(now);
	mroce_tx tx;
	if (mroce_conn_tx(conn_.get(), now, &tx) != 1)
		return false;
	p.bytes.resize(MROCE_MAX_PKT);
	uint8_t *b = p.bytes.data();
	int h = mroce_pkt_build_hdr(b, MROCE_MAX_PKT, &tx.pkt);
	if (h < 0) {
		sink_.protocol_error("mroce_pkt_build_hdr failed");
		return false;
	}
	uint32_t len = tx.pkt.payload_len;
	if (tx.src == MROCE_SRC_WR)
		pattern_fill(b + h, info.flow, (uint32_t)tx.cookie, tx.src_offset, len);
	else if (tx.src == MROCE_SRC_PKT)
		memcpy(b + h, tx.pkt.payload, len);
	else if (len) {
		sink_.protocol_error("payload from unexpected source");
		memset(b + h, 0, len);
	}
	int n = mroce_pkt_seal(b, (uint32_t)h + len, MROCE_MAX_PKT);
	if (n < 0) {
		sink_.protocol_error("mroce_pkt_seal failed");
		return false;
	}
	p.bytes.resize((size_t)n);
	p.sport = tx.sport;
	p.dport = MROCE_UDP_PORT;
	p.wire_len = (uint32_t)n + kFrameOverhead;
	p.payload = len;
	p.data = mroce_op_is_data(tx.pkt.opcode);
	p.ect = p.data;		// ECT on data packets
	p.retx = tx.pkt.flags & MROCE_F_RETX;
	after_call();
	return true;
}

void MroceEp::rx(const Packet &p, Time now)
{
	mroce_pkt pk;
	int r = mroce_pkt_parse(p.bytes.data(), (uint32_t)p.bytes.size(), &pk);
	if (r) {
		parse_err_++;
		return;
	}
	if (pk.dqpn != info.id) {
		sink_.protocol_error("packet for another QPN");
		return;
	}
	mroce_conn_rx(conn_.get(), &pk, p.ce, now);
	after_call();
}

Time MroceEp::next_timer() const { return mroce_conn_next_timer(conn_.get()); }

void MroceEp::timer(Time now)
{
	mroce_conn_timer(conn_.get(), now);
	after_call();
}

bool MroceEp::failed() const { return conn_->state != MROCE_CONN_OK; }

EpStats MroceEp::stats() const
{
	EpStats s;
	const auto &c = conn_->st;
	s.tx_data = c.tx_data;
	s.tx_retx = c.tx_retx;
	s.tx_ctrl = c.tx_acks + c.tx_probes;
	s.rx_data = c.rx_data;
	s.rx_dup = c.rx_dup;
	s.naks = c.nak_rx;
	s.parse_err = parse_err_;
	for (uint32_t i = 0; i < conn_->p.num_paths; i++) {
		s.rtos += conn_->path[i].st.rtos;
		s.steers += conn_->path[i].st.steers;
		s.downs += conn_->path[i].st.downs;
	}
	return s;
}

void MroceEp::paths(std::vector<PathRow> &out) const
{
	for (uint32_t i = 0; i < conn_->p.num_paths; i++) {
		mroce_path_stats st;
		mroce_conn_path_stats(conn_.get(), i, &st);
		out.push_back(PathRow{i, st.state, st.sport, st.tx_pkts,
				      st.retx_pkts, st.lost_pkts, st.rtos,
				      st.steers, st.downs, st.srtt_ns, st.cwnd,
				      st.ecn_frac_ppm});
	}
}

// ---------------------------------------------------------------- GBN

GbnEp::GbnEp(const EpInfo &i, AppSink &s, const GbnCfg &cfg)
	: Endpoint(i, s), cfg_(cfg), cwnd_(cfg.wnd_max)
{
	// One fixed source port per QP, as RoCEv2 NICs do.
	sport_ = (uint16_t)(cfg.sport_min + mix64(i.id * 31 + 7) % (65536 - cfg.sport_min));
}

void GbnEp::post(uint32_t msg, uint32_t len, Time)
{
	if (error_) {
		sink_.completed(info.flow, msg, MROCE_ST_WR_FLUSH);
		return;
	}
	uint32_t psn = seg_base_ + (uint32_t)segs_.size();
	for (uint32_t off = 0; off < len || (len == 0 && off == 0); off += cfg_.mtu) {
		segs_.push_back(Seg{msg, off, std::min(cfg_.mtu, len - off), len});
		if (len == 0)
			break;
	}
	msg_last_.emplace_back(msg, seg_base_ + (uint32_t)segs_.size() - 1);
	(void)psn;
}

bool GbnEp::pull(Time now, Packet &p)
{
	p.is_gbn = true;
	p.sport = sport_;
	p.dport = 4791;
	if (ctrl_pending_) {
		ctrl_pending_ = false;
		ack_due_ = kNever;
		unacked_ = 0;
		p.gbn.type = ctrl_type_;
		p.gbn.psn = epsn_;
		p.gbn.ece = ce_seen_;
		p.gbn.tx_ts = echo_ts_;
		ce_seen_ = false;
		p.wire_len = kFrameOverhead + 12 + 4 + 4;	// BTH AETH ICRC
		st_.tx_ctrl++;
		return true;
	}
	if (error_)
		return false;
	uint32_t end = seg_base_ + (uint32_t)segs_.size();
	uint32_t wnd = std::max<uint32_t>(1, (uint32_t)cwnd_);
	if (snd_nxt_ >= end || snd_nxt_ - snd_una_ >= wnd)
		return false;
	const Seg &s = segs_[snd_nxt_ - seg_base_];
	p.gbn.type = GbnHdr::Data;
	p.gbn.psn = snd_nxt_;
	p.gbn.msg = s.msg;
	p.gbn.offset = s.off;
	p.gbn.len = s.len;
	p.gbn.msg_len = s.msg_len;
	p.gbn.tx_ts = now;
	p.wire_len = kFrameOverhead + 12 + (s.off == 0 ? 16 : 0) + s.len + 4;
	p.payload = s.len;
	p.data = p.ect = true;
	p.retx = snd_nxt_ < snd_high_;
	st_.tx_data++;
	st_.tx_retx += p.retx;
	snd_nxt_++;
	snd_high_ = std::max(snd_high_, snd_nxt_);
	if (rto_at_ == kNever)
		rto_at_ = now + cfg_.rto;
	return true;
}

void GbnEp::fail_all()
{
	error_ = true;
	rto_at_ = kNever;
	for (auto &[msg, last] : msg_last_)
		sink_.completed(info.flow, msg, MROCE_ST_RETRY_EXC);
	msg_last_.clear();
	segs_.clear();
}

void GbnEp::on_ack(const GbnHdr &h, Time now)
{
	if (error_)
		return;
	uint32_t a = h.psn;
	if (a > snd_high_)
		return;		// acks something never sent: ignore
	uint32_t acked = a > snd_una_ ? a - snd_una_ : 0;
	if (acked) {
		snd_una_ = a;
		retries_ = 0;
		rto_at_ = snd_una_ < snd_high_ ? now + cfg_.rto : kNever;
		while (!msg_last_.empty() && msg_last_.front().second < snd_una_) {
			sink_.completed(info.flow, msg_last_.front().first, 0);
			msg_last_.pop_front();
		}
		while (seg_base_ < snd_una_ && !segs_.empty()) {
			segs_.pop_front();
			seg_base_++;
		}
	}
	if (snd_nxt_ < snd_una_)
		snd_nxt_ = snd_una_;
	if (h.type == GbnHdr::Nak && a >= snd_una_) {
		st_.naks++;
		snd_nxt_ = a;	// go back N
	}
	if (!cfg_.dcqcn)
		return;
	if (h.ece) {
		alpha_ = (1 - cfg_.g) * alpha_ + cfg_.g;
		if (now - last_cut_ >= cfg_.cut_interval) {
			cwnd_ = std::max(1.0, cwnd_ * (1 - alpha_ / 2));
			last_cut_ = now;
		}
	} else {
		alpha_ = (1 - cfg_.g) * alpha_;
		if (acked)
			cwnd_ = std::min<double>(cfg_.wnd_max, cwnd_ + (double)acked / cwnd_);
	}
}

void GbnEp::rx(const Packet &p, Time now)
{
	const GbnHdr &h = p.gbn;
	if (h.type != GbnHdr::Data) {
		on_ack(h, now);
		return;
	}
	st_.rx_data++;
	if (p.ce)
		ce_seen_ = true;
	if (h.psn == epsn_) {
		sink_.placed(info.flow, h.msg, h.offset, h.len, true);
		epsn_++;
		nak_sent_ = false;
		unacked_++;
		echo_ts_ = h.tx_ts;
		if (unacked_ >= cfg_.ack_every || h.offset + h.len >= h.msg_len) {
			ctrl_pending_ = true;
			ctrl_type_ = GbnHdr::Ack;	// in order again: plain ACK
		} else if (ack_due_ == kNever) {
			ack_due_ = now + cfg_.ack_delay;
		}
	} else if (h.psn > epsn_) {
		if (!nak_sent_) {	// out of order: drop, NAK once
			nak_sent_ = true;
			ctrl_pending_ = true;
			ctrl_type_ = GbnHdr::Nak;
		}
	} else {
		st_.rx_dup++;	// duplicate: re-ACK so the sender moves on
		ctrl_pending_ = true;
		if (ctrl_type_ != GbnHdr::Nak)
			ctrl_type_ = GbnHdr::Ack;
	}
}

Time GbnEp::next_timer() const { return std::min(rto_at_, ack_due_); }

void GbnEp::timer(Time now)
{
	if (ack_due_ <= now) {
		ack_due_ = kNever;
		if (unacked_) {
			ctrl_pending_ = true;
			if (ctrl_type_ != GbnHdr::Nak)
				ctrl_type_ = GbnHdr::Ack;
		}
	}
	if (rto_at_ <= now) {
		if (snd_una_ >= snd_high_) {
			rto_at_ = kNever;
			return;
		}
		st_.rtos++;
		if (++retries_ > cfg_.retry_cnt) {
			fail_all();
			return;
		}
		snd_nxt_ = snd_una_;	// retransmit everything outstanding
		rto_at_ = now + cfg_.rto;
	}
}

std::array<std::unique_ptr<Endpoint>, 2> flow_endpoints(uint32_t fid, uint32_t tx, uint32_t src,
							uint32_t dst, AppSink &s, bool use_mroce,
							const MroceCfg &mroce, const GbnCfg &gbn,
							uint64_t seed, bool check_invariants)
{
	std::array<std::unique_ptr<Endpoint>, 2> eps;
	const EpInfo info[2] = {{tx, src, tx + 1, dst, fid}, {tx + 1, dst, tx, src, fid}};
	for (int k = 0; k < 2; k++) {
		const EpInfo &i = info[k];
		if (use_mroce) {
			MroceCfg mc = mroce;
			mc.check_invariants = check_invariants;
			eps[k] = std::make_unique<MroceEp>(i, s, mc, mix64(seed * 1000003 + i.id));
		} else {
			eps[k] = std::make_unique<GbnEp>(i, s, gbn);
		}
	}
	return eps;
}

}  // namespace sim
