// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Transport endpoints living on simulated hosts: the real mroce protocol
// core (MroceEp, unchanged C code driven through real packet bytes) and
// the go-back-N RoCEv2 baseline model (GbnEp, own code).  One endpoint is
// one side of one flow; its id is its QPN.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "mroce_core.h"
#include "mroce_conn_mem.hpp"
#include "net.h"

namespace sim {

// What endpoints tell the application/world.
class AppSink {
public:
	virtual ~AppSink() = default;
	// Bytes [off, off+len) of message msg of flow placed at the receiver;
	// pattern_ok: the payload matched the sender's pattern.
	virtual void placed(uint32_t flow, uint32_t msg, uint32_t off,
			    uint32_t len, bool pattern_ok) = 0;
	// The sender's WR for msg completed (status: enum mroce_status).
	virtual void completed(uint32_t flow, uint32_t msg, uint32_t status) = 0;
	virtual void protocol_error(const char *what) = 0;
	// Endpoint ep waits for room in its congestion group's window, which
	// another member just freed: let it transmit soon (no core call here).
	virtual void kick(uint32_t ep) { (void)ep; }
};

// Payload pattern: 8-byte word at byte offset off of message msg of flow.
inline uint64_t pattern_word(uint32_t flow, uint32_t msg, uint32_t off)
{
	return mix64(((uint64_t)flow << 40) ^ ((uint64_t)msg << 20) ^
		     (uint64_t)off * 0x100000001b3ull);
}
void pattern_fill(uint8_t *dst, uint32_t flow, uint32_t msg, uint32_t off,
		  uint32_t len);

struct EpInfo {
	uint32_t id = 0, host = 0, peer = 0, peer_host = 0, flow = 0;
};

struct EpStats {
	uint64_t tx_data = 0, tx_retx = 0, tx_ctrl = 0;
	uint64_t rx_data = 0, rx_dup = 0, naks = 0, rtos = 0, steers = 0,
		 downs = 0;
	uint64_t parse_err = 0;
};

struct PathRow {
	uint32_t path, state, sport;
	uint64_t tx_pkts, retx, lost, rtos, steers, downs, srtt_ns, cwnd;
	uint32_t ecn_ppm;
};

class Endpoint {
public:
	Endpoint(const EpInfo &i, AppSink &s) : info(i), sink_(s) {}
	virtual ~Endpoint() = default;
	Endpoint(const Endpoint &) = delete;
	Endpoint &operator=(const Endpoint &) = delete;

	// Next packet to send; fills p (bytes, sport, wire_len, ...).
	virtual bool pull(Time now, Packet &p) = 0;
	virtual void rx(const Packet &p, Time now) = 0;
	virtual Time next_timer() const = 0;
	virtual void timer(Time now) = 0;
	// Queue a WRITE of len bytes as message msg (msgs numbered 0, 1, ...).
	virtual void post(uint32_t msg, uint32_t len, Time now) = 0;
	virtual bool failed() const = 0;
	virtual EpStats stats() const = 0;
	virtual void paths(std::vector<PathRow> &out) const { (void)out; }
	// mroce_conn_get_info() of an mroce endpoint; false for others.
	virtual bool conn_info(mroce_conn_info &out) const { (void)out; return false; }
	virtual const char *check() const { return nullptr; }

	EpInfo info;

protected:
	AppSink &sink_;
};

struct MroceCfg {
	uint32_t num_paths = 16;
	uint32_t mtu = 4096;
	bool check_invariants = false;	// mroce_conn_check() after each call
	// Our DSN window as the kernel's `window` parameter sets it: 0 (or
	// max_inflight, 1024) leaves the core's defaults; below that it is
	// mroce_params.snd_wnd and the PSN windows are fitted to it
	// (mroce_params_fit_paths()), as mroce_rc_create() does.
	uint32_t snd_wnd = 0;
	// Outstanding WRs per connection (mroce_params.max_msgs, the kernel's
	// SQ depth): 0 for MROCE_MAX_MSGS.  Only memory: posts beyond it wait.
	uint32_t max_msgs = 0;
};

class MroceEp final : public Endpoint {
public:
	MroceEp(const EpInfo &i, AppSink &s, const MroceCfg &cfg, uint64_t seed);
	bool pull(Time now, Packet &p) override;
	void rx(const Packet &p, Time now) override;
	Time next_timer() const override;
	void timer(Time now) override;
	void post(uint32_t msg, uint32_t len, Time now) override;
	bool failed() const override;
	EpStats stats() const override;
	void paths(std::vector<PathRow> &out) const override;
	bool conn_info(mroce_conn_info &out) const override
	{
		mroce_conn_get_info(conn_.get(), &out);
		return true;
	}
	const char *check() const override { return mroce_conn_check(conn_.get()); }
	// Share g's connection-level congestion controller (spec 9.4).
	bool join(mroce_cc_group *g);
	// The group ops of the simulator: no lock (one thread), kicks to
	// AppSink::kick().
	static const mroce_cc_group_ops group_ops;

private:
	static int place_cb(void *ctx, const mroce_place *pl);
	static int read_check_cb(void *ctx, u64 va, u32 rkey, u32 len);
	static int atomic_cb(void *ctx, u32 op, u64 va, u32 rkey, u64 swap,
			     u64 cmp, u64 *orig);
	static void complete_cb(void *ctx, const mroce_completion *c);
	void flush_pending(Time now);
	void after_call();

	mroce_mem::ConnPtr conn_;
	mroce_conn_ops ops_{};
	MroceCfg cfg_;
	std::deque<std::pair<uint32_t, uint32_t>> pending_;	// (msg, len)
	uint64_t parse_err_ = 0;
};

struct GbnCfg {
	uint32_t mtu = 4096;
	uint32_t wnd_max = 64;		// packets (cap; also initial window)
	bool dcqcn = true;		// ECN window control (else fixed window)
	double g = 1.0 / 16;		// alpha gain
	Time cut_interval = 50 * kUs;	// at most one decrease per interval
	Time rto = 1 * kMs;		// fixed transport timer, no backoff
	uint32_t retry_cnt = 7;		// timeouts without progress -> error
	uint32_t ack_every = 4;
	Time ack_delay = 10 * kUs;
	uint16_t sport_min = 49152;
};

class GbnEp final : public Endpoint {
public:
	GbnEp(const EpInfo &i, AppSink &s, const GbnCfg &cfg);
	bool pull(Time now, Packet &p) override;
	void rx(const Packet &p, Time now) override;
	Time next_timer() const override;
	void timer(Time now) override;
	void post(uint32_t msg, uint32_t len, Time now) override;
	bool failed() const override { return error_; }
	EpStats stats() const override { return st_; }

private:
	struct Seg {
		uint32_t msg, off, len, msg_len;
	};
	void on_ack(const GbnHdr &h, Time now);
	void fail_all();

	GbnCfg cfg_;
	uint16_t sport_;
	// sender
	std::deque<Seg> segs_;		// segs_[0] has PSN seg_base_
	uint32_t seg_base_ = 0;
	uint32_t snd_una_ = 0, snd_nxt_ = 0, snd_high_ = 0;
	std::deque<std::pair<uint32_t, uint32_t>> msg_last_;	// (msg, last psn)
	Time rto_at_ = kNever;
	uint32_t retries_ = 0;
	bool error_ = false;
	double cwnd_, alpha_ = 0;
	Time last_cut_ = 0;
	// receiver
	uint32_t epsn_ = 0;
	bool nak_sent_ = false;
	uint32_t unacked_ = 0;
	bool ce_seen_ = false;
	bool ctrl_pending_ = false;
	GbnHdr::Type ctrl_type_ = GbnHdr::Ack;
	Time ack_due_ = kNever;
	Time echo_ts_ = 0;
	EpStats st_;
};

// The two endpoints of flow fid from host src to host dst, ids tx (the
// sender) and tx + 1, both reporting to s: the mroce core when use_mroce
// (its invariants checked after every core call with check_invariants,
// each seeded from the run's seed and its id), else go-back-N.
std::array<std::unique_ptr<Endpoint>, 2> flow_endpoints(uint32_t fid, uint32_t tx, uint32_t src,
							uint32_t dst, AppSink &s, bool use_mroce,
							const MroceCfg &mroce, const GbnCfg &gbn,
							uint64_t seed, bool check_invariants);

}  // namespace sim
