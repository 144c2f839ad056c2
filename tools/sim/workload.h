// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Workloads of both simulators, written once for tools/sim (World, C++20)
// and the ns-3 model (tools/ns3 Model, C++17): bulk flows (single, incast,
// all-to-all, permutations, open-ended streams) and the ring all-reduce.
// Header-only and C++17.  A workload drives a world W that offers
//   uint32_t add_flow(uint32_t src, uint32_t dst);
//   void post(uint32_t flow, uint32_t len);
//   void at(uint64_t t_ns, std::function<void()> fn);	// absolute time
//   uint64_t now() const;				// ns
//   flows[i].error, .msgs (a vector), .msgs_cmpl
// and calls start(), on_rx(), on_cmpl() and done() of Base<W>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace sim::workload {

// Reacts to message delivery and completion by posting more.
template <class W> class Base {
public:
	virtual ~Base() = default;
	virtual void start(W &w) = 0;
	virtual void on_rx(W &w, uint32_t flow, uint32_t msg) { (void)w, (void)flow, (void)msg; }
	virtual void on_cmpl(W &w, uint32_t flow, uint32_t msg) { (void)w, (void)flow, (void)msg; }
	virtual bool done(const W &w) const = 0;
};

// Each flow sends `bytes` in messages of msg_bytes, keeping `depth`
// messages outstanding, starting at `start` (ns).  bytes == 0: streams
// forever.
template <class W> class Bulk final : public Base<W> {
public:
	struct Spec {
		uint32_t src, dst;
		uint64_t bytes;
		uint32_t msg_bytes;
		uint32_t depth = 4;
		uint64_t start = 0;
	};
	explicit Bulk(std::vector<Spec> s) : specs_(std::move(s)) {}

	void start(W &w) override
	{
		for (const Spec &s : specs_)
			flow_.push_back(w.add_flow(s.src, s.dst));
		posted_.assign(specs_.size(), 0);
		for (size_t i = 0; i < specs_.size(); i++) {
			if (specs_[i].start == 0)
				more(w, i);
			else
				w.at(specs_[i].start, [this, &w, i] { more(w, i); });
		}
	}
	void on_cmpl(W &w, uint32_t flow, uint32_t) override
	{
		// the flows were added in spec order, one after the other
		if (flow_.empty())
			return;
		size_t i = flow - flow_.front();
		if (i < specs_.size() && flow_[i] == flow)
			more(w, i);
	}
	// Asked after every event: a flow that is done (failed, or all its
	// bytes posted and completed) stays done, so the flows before
	// open_ are not looked at again (10^4..10^5 flows in all-to-all).
	bool done(const W &w) const override
	{
		for (; open_ < specs_.size(); open_++) {
			const auto &f = w.flows[flow_[open_]];
			if (f.error)
				continue;
			if (!specs_[open_].bytes || f.msgs_cmpl != f.msgs.size() ||
			    posted_[open_] < specs_[open_].bytes)
				return false;
		}
		return true;
	}
	const std::vector<Spec> &specs() const { return specs_; }

private:
	void more(W &w, size_t i)
	{
		const Spec &s = specs_[i];
		const auto &f = w.flows[flow_[i]];
		while (!f.error && f.msgs.size() - f.msgs_cmpl < s.depth &&
		       (!s.bytes || posted_[i] < s.bytes)) {
			uint64_t left = s.bytes ? s.bytes - posted_[i] : s.msg_bytes;
			uint32_t len = (uint32_t)std::min<uint64_t>(left, s.msg_bytes);
			w.post(flow_[i], len);
			posted_[i] += len;
		}
	}
	std::vector<Spec> specs_;
	std::vector<uint32_t> flow_;
	std::vector<uint64_t> posted_;
	mutable size_t open_ = 0;	// flows before it are done
};

// Ring all-reduce over n ranks: 2(n-1) steps of one chunk (reduce-scatter,
// then all-gather); rank r sends step s to rank r+1 as soon as it has
// received step s-1 from rank r-1.  rank_host maps ranks to hosts.
template <class W> class RingAllReduce final : public Base<W> {
public:
	RingAllReduce(std::vector<uint32_t> rank_host, uint32_t chunk)
		: host_(std::move(rank_host)), chunk_(chunk)
	{
	}
	void start(W &w) override
	{
		uint32_t n = (uint32_t)host_.size();
		steps_ = 2 * (n - 1);
		rx_.assign(n, 0);
		base_ = (uint32_t)w.flows.size();
		for (uint32_t r = 0; r < n; r++)
			w.add_flow(host_[r], host_[(r + 1) % n]);	// flow base_ + r
		for (uint32_t r = 0; r < n; r++)
			w.post(base_ + r, chunk_);
	}
	void on_rx(W &w, uint32_t flow, uint32_t) override
	{
		uint32_t n = (uint32_t)host_.size();
		uint32_t r = (flow - base_ + 1) % n;	// the receiving rank
		if (++rx_[r] < steps_)
			w.post(base_ + r, chunk_);	// its next step
		else if (++ranks_done_ == n)
			t_done_ = w.now();
	}
	bool done(const W &w) const override
	{
		for (const auto &f : w.flows)
			if (f.error)
				return true;	// failed: stop
		if (ranks_done_ != host_.size())
			return false;
		for (const auto &f : w.flows)
			if (f.msgs_cmpl != f.msgs.size())
				return false;
		return true;
	}
	uint64_t t_done() const { return t_done_; }
	uint32_t steps() const { return steps_; }

private:
	std::vector<uint32_t> host_;
	uint32_t chunk_;
	uint32_t steps_ = 0, base_ = 0, ranks_done_ = 0;
	std::vector<uint32_t> rx_;
	uint64_t t_done_ = 0;
};

}  // namespace sim::workload
