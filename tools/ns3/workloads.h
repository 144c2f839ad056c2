// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Workloads of the ns-3 model, transport-independent: bulk flows (single,
// incast, all-to-all) and the ring all-reduce.
#pragma once

#include <algorithm>
#include <vector>

#include "model.h"

namespace mroce_ns3 {

// Each flow sends `bytes` in messages of msg_bytes, `depth` outstanding.
class Bulk final : public Workload {
public:
	struct Spec {
		uint32_t src, dst;
		uint64_t bytes;
		uint32_t msg_bytes;
		uint32_t depth = 4;
	};
	explicit Bulk(std::vector<Spec> s) : specs_(std::move(s)) {}

	void start(Model &m) override
	{
		for (const Spec &s : specs_)
			flow_.push_back(m.add_flow(s.src, s.dst));
		posted_.assign(specs_.size(), 0);
		for (size_t i = 0; i < specs_.size(); i++)
			more(m, i);
	}
	void on_cmpl(Model &m, uint32_t flow, uint32_t) override
	{
		// flows are added in spec order from id base_
		size_t i = flow - flow_.front();
		if (i < specs_.size() && flow_[i] == flow)
			more(m, i);
	}
	bool done(const Model &m) const override
	{
		for (size_t i = 0; i < specs_.size(); i++) {
			const FlowRec &f = m.flows[flow_[i]];
			if (f.error)
				continue;
			if (posted_[i] < specs_[i].bytes || f.msgs_cmpl != f.msgs.size())
				return false;
		}
		return true;
	}

private:
	void more(Model &m, size_t i)
	{
		const Spec &s = specs_[i];
		const FlowRec &f = m.flows[flow_[i]];
		while (!f.error && f.msgs.size() - f.msgs_cmpl < s.depth && posted_[i] < s.bytes) {
			uint32_t len = (uint32_t)std::min<uint64_t>(s.bytes - posted_[i], s.msg_bytes);
			m.post(flow_[i], len);
			posted_[i] += len;
		}
	}
	std::vector<Spec> specs_;
	std::vector<uint32_t> flow_;
	std::vector<uint64_t> posted_;
};

// Ring all-reduce over n ranks: 2(n-1) steps of one chunk; rank r sends
// step s to rank r+1 as soon as it has received step s-1 from rank r-1.
class RingAllReduce final : public Workload {
public:
	RingAllReduce(std::vector<uint32_t> rank_host, uint32_t chunk)
		: host_(std::move(rank_host)), chunk_(chunk)
	{
	}
	void start(Model &m) override
	{
		uint32_t n = (uint32_t)host_.size();
		steps_ = 2 * (n - 1);
		rx_.assign(n, 0);
		base_ = (uint32_t)m.flows.size();
		for (uint32_t r = 0; r < n; r++)
			m.add_flow(host_[r], host_[(r + 1) % n]);
		for (uint32_t r = 0; r < n; r++)
			m.post(base_ + r, chunk_);
	}
	void on_rx(Model &m, uint32_t flow, uint32_t) override
	{
		uint32_t n = (uint32_t)host_.size();
		uint32_t r = (flow - base_ + 1) % n;	// the receiving rank
		if (++rx_[r] < steps_)
			m.post(base_ + r, chunk_);
		else if (++ranks_done_ == n)
			t_done_ = m.now();
	}
	bool done(const Model &m) const override
	{
		for (const FlowRec &f : m.flows)
			if (f.error)
				return true;
		if (ranks_done_ != host_.size())
			return false;
		for (const FlowRec &f : m.flows)
			if (f.msgs_cmpl != f.msgs.size())
				return false;
		return true;
	}
	uint64_t t_done() const { return t_done_; }

private:
	std::vector<uint32_t> host_;
	uint32_t chunk_;
	uint32_t steps_ = 0, base_ = 0, ranks_done_ = 0;
	std::vector<uint32_t> rx_;
	uint64_t t_done_ = 0;
};

}  // namespace mroce_ns3
