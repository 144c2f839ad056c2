// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Workloads: bulk flows (single flow, incast, all-to-all, permutations,
// open-ended streams) and the ring all-reduce.
#pragma once

#include <vector>

#include "world.h"

namespace sim {

// Each flow sends `bytes` in messages of msg_bytes, keeping `depth`
// messages outstanding, starting at `start`.  bytes == 0: stream forever.
class BulkApp final : public App {
public:
	struct Spec {
		uint32_t src, dst;
		uint64_t bytes;
		uint32_t msg_bytes;
		uint32_t depth = 4;
		Time start = 0;
	};
	explicit BulkApp(std::vector<Spec> s) : specs_(std::move(s)) {}

	void start(World &w) override
	{
		for (const Spec &s : specs_) {
			uint32_t f = w.add_flow(s.src, s.dst);
			st_.push_back(State{f, 0});
		}
		for (size_t i = 0; i < specs_.size(); i++) {
			if (specs_[i].start == 0) {
				kick(w, i);
			} else {
				w.at(specs_[i].start, [this, &w, i] { kick(w, i); });
			}
		}
	}
	void on_cmpl(World &w, uint32_t flow, uint32_t) override
	{
		for (size_t i = 0; i < st_.size(); i++)
			if (st_[i].flow == flow)
				post_more(w, i);
	}
	bool done(const World &w) const override
	{
		for (size_t i = 0; i < st_.size(); i++) {
			const Flow &f = w.flows[st_[i].flow];
			if (f.error)
				continue;
			if (!specs_[i].bytes || f.msgs_cmpl != f.msgs.size() ||
			    st_[i].posted < specs_[i].bytes)
				return false;
		}
		return true;
	}
	const std::vector<Spec> &specs() const { return specs_; }

private:
	struct State {
		uint32_t flow;
		uint64_t posted;
	};
	void kick(World &w, size_t i) { post_more(w, i); }
	void post_more(World &w, size_t i)
	{
		const Spec &s = specs_[i];
		State &st = st_[i];
		const Flow &f = w.flows[st.flow];
		if (f.error)
			return;
		while (f.msgs.size() - f.msgs_cmpl < s.depth &&
		       (!s.bytes || st.posted < s.bytes)) {
			uint64_t left = s.bytes ? s.bytes - st.posted : s.msg_bytes;
			uint32_t len = (uint32_t)std::min<uint64_t>(left, s.msg_bytes);
			w.post(st.flow, len);
			st.posted += len;
		}
	}
	std::vector<Spec> specs_;
	std::vector<State> st_;
};

// Ring all-reduce over n ranks: 2(n-1) steps; rank r sends chunk s to
// rank r+1 once it has received chunk s-1 from rank r-1 (reduce-scatter
// then all-gather, one chunk of bytes/n per step).  rank_host maps ranks
// to hosts.
class RingAllReduce final : public App {
public:
	RingAllReduce(std::vector<uint32_t> rank_host, uint32_t chunk)
		: host_(std::move(rank_host)), chunk_(chunk)
	{
	}
	void start(World &w) override
	{
		uint32_t n = (uint32_t)host_.size();
		steps_ = 2 * (n - 1);
		rx_.assign(n, 0);
		for (uint32_t r = 0; r < n; r++)
			w.add_flow(host_[r], host_[(r + 1) % n]);	// flow r
		for (uint32_t r = 0; r < n; r++)
			w.post(r, chunk_);
	}
	void on_rx(World &w, uint32_t flow, uint32_t) override
	{
		uint32_t n = (uint32_t)host_.size();
		uint32_t r = (flow + 1) % n;	// receiving rank
		if (++rx_[r] < steps_)
			w.post(r, chunk_);	// next step of rank r
		else
			ranks_done_++;
		if (ranks_done_ == n && !t_done_)
			t_done_ = w.now();
	}
	bool done(const World &w) const override
	{
		for (const Flow &f : w.flows)
			if (f.error)
				return true;	// failed: stop
		if (ranks_done_ != host_.size())
			return false;
		for (const Flow &f : w.flows)
			if (f.msgs_cmpl != f.msgs.size())
				return false;
		return true;
	}
	Time t_done() const { return t_done_; }
	uint32_t steps() const { return steps_; }

private:
	std::vector<uint32_t> host_;
	uint32_t chunk_;
	uint32_t steps_ = 0;
	std::vector<uint32_t> rx_;
	uint32_t ranks_done_ = 0;
	Time t_done_ = 0;
};

}  // namespace sim
