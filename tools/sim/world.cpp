// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include "world.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sim {

const char *model_name(Model m) { return m == Model::Mroce ? "mroce" : "gbn"; }

World::World(const WorldCfg &c) : fab(c.seed), cfg(c), delivery(c.bucket)
{
	build_leaf_spine(fab, cfg.topo);
	fab.sink = this;
	active_.resize(hosts());
	nic_budget_ = (uint64_t)cfg.nic_pkts * cfg.topo.planes * (MROCE_MAX_PKT + kFrameOverhead);
}

World::~World() = default;

uint32_t World::add_flow(uint32_t src, uint32_t dst)
{
	if (src >= hosts() || dst >= hosts() || src == dst)
		throw std::invalid_argument("bad flow endpoints");
	Flow f;
	f.src = src;
	f.dst = dst;
	f.tx_ep = (uint32_t)eps.size();
	f.rx_ep = f.tx_ep + 1;
	uint32_t fid = (uint32_t)flows.size();
	for (auto &e : flow_endpoints(fid, f.tx_ep, src, dst, *this, cfg.model == Model::Mroce,
				      cfg.mroce, cfg.gbn, cfg.seed, check_every_call)) {
		if (cfg.cc_share && cfg.model == Model::Mroce) {
			auto *ep = static_cast<MroceEp *>(e.get());
			auto &g = groups_[{ep->info.host, ep->info.peer_host}];
			if (!g) {
				g = std::make_unique<mroce_cc_group>();
				mroce_cc_group_init(g.get(), &MroceEp::group_ops, nullptr);
			}
			if (!ep->join(g.get()))
				throw std::runtime_error("cc group join failed");
		}
		eps.push_back(std::move(e));
		is_active_.push_back(0);
		sched_.push_back(kNever);
	}
	flows.push_back(std::move(f));
	return fid;
}

void World::post(uint32_t flow, uint32_t len)
{
	Flow &f = flows.at(flow);
	uint32_t mtu = cfg.model == Model::Mroce ? cfg.mroce.mtu : cfg.gbn.mtu;
	uint32_t msg = delivery.post(f, len, mtu, now());
	if (in_drain_ || !app_) {
		// outside endpoint callbacks: post right away
		eps[f.tx_ep]->post(msg, len, now());
		activate(f.tx_ep);
		if (app_) {
			pump(f.src);
			resched(f.tx_ep);
		}
	} else {
		deferred_posts_.emplace_back(flow, msg);
	}
}

void World::at(Time t, std::function<void()> fn)
{
	actions_.push_back(std::move(fn));
	fab.ev.push(t, EvKind::Action, (uint32_t)actions_.size() - 1);
}

void World::kick(uint32_t ep)
{
	/* called inside another endpoint's core call: the host pumps after it */
	activate(ep);
}

void World::activate(uint32_t ep)
{
	if (is_active_[ep])
		return;
	is_active_[ep] = 1;
	active_[eps[ep]->info.host].push_back(ep);
}

void World::pump(uint32_t host)
{
	auto &q = active_[host];
	while (!q.empty() && fab.host_queued(host) < nic_budget_) {
		auto it = cfg.nic_lowest_first ? std::min_element(q.begin(), q.end()) : q.begin();
		uint32_t ep = *it;
		q.erase(it);
		Endpoint &e = *eps[ep];
		uint32_t id = fab.alloc();
		Packet &p = fab.pkt(id);
		p.src_host = host;
		p.dst_host = e.info.peer_host;
		p.dst_ep = e.info.peer;
		if (e.pull(now(), p)) {
			q.push_back(ep);
			fab.host_send(host, id);
		} else {
			fab.release(id);
			is_active_[ep] = 0;
		}
		resched(ep);
	}
	drain();
}

void World::resched(uint32_t ep)
{
	Time t = eps[ep]->next_timer();
	if (t == kNever || t >= sched_[ep])
		return;
	if (t <= now()) {
		// Due but waiting for the NIC (e.g. a probe or a TLP that
		// tx has to send): poll again shortly instead of spinning.
		timer_spins++;
		t = now() + 1 * kUs;
		if (t >= sched_[ep])
			return;
	}
	sched_[ep] = t;
	fab.ev.push(t, EvKind::EpTimer, ep);
}

void World::host_rx(uint32_t host, uint32_t id)
{
	Packet &p = fab.pkt(id);
	uint32_t ep = p.dst_ep;
	if (ep >= eps.size() || eps[ep]->info.host != host) {
		protocol_error("packet delivered to wrong host");
		fab.release(id);
		return;
	}
	eps[ep]->rx(p, now());
	fab.release(id);
	activate(ep);
	resched(ep);
	pump(host);
}

void World::host_nic_idle(uint32_t host) { pump(host); }

void World::placed(uint32_t flow, uint32_t msg, uint32_t off, uint32_t len,
		   bool ok)
{
	uint32_t mtu = cfg.model == Model::Mroce ? cfg.mroce.mtu : cfg.gbn.mtu;
	if (delivery.place(flows.at(flow), msg, off, len, ok, mtu, now()))
		notices_.push_back(Notice{true, flow, msg});
}

void World::completed(uint32_t flow, uint32_t msg, uint32_t status)
{
	if (delivery.complete(flows.at(flow), msg, status, now()))
		notices_.push_back(Notice{false, flow, msg});
}

void World::protocol_error(const char *what) { delivery.protocol_error(what); }

void World::drain()
{
	if (in_drain_)
		return;
	in_drain_ = true;
	while (!deferred_posts_.empty() || !notices_.empty()) {
		auto posts = std::move(deferred_posts_);
		deferred_posts_.clear();
		for (auto [flow, msg] : posts) {
			Flow &f = flows[flow];
			eps[f.tx_ep]->post(msg, f.msgs[msg].len, now());
			activate(f.tx_ep);
			resched(f.tx_ep);
		}
		auto ns = std::move(notices_);
		notices_.clear();
		for (const Notice &n : ns) {
			if (n.rx)
				app_->on_rx(*this, n.flow, n.msg);
			else
				app_->on_cmpl(*this, n.flow, n.msg);
		}
		for (auto [flow, msg] : posts)
			pump(flows[flow].src);
	}
	in_drain_ = false;
}

bool World::run(App &app, Time t_end)
{
	app_ = &app;
	in_drain_ = true;
	app.start(*this);
	in_drain_ = false;
	for (uint32_t h = 0; h < hosts(); h++)
		pump(h);
	for (uint32_t e = 0; e < eps.size(); e++)
		resched(e);
	while (!fab.ev.empty() && !app.done(*this)) {
		if (fab.ev.next_time() > t_end)
			break;
		Event e = fab.ev.pop();
		fab.now = e.t;
		events++;
		switch (e.kind) {
		case EvKind::TxDone:
		case EvKind::Arrive:
			fab.handle(e);
			break;
		case EvKind::EpTimer: {
			uint32_t ep = e.a;
			if (sched_[ep] == e.t)
				sched_[ep] = kNever;
			if (eps[ep]->next_timer() <= now()) {
				eps[ep]->timer(now());
				activate(ep);
				pump(eps[ep]->info.host);
			}
			resched(ep);
			break;
		}
		case EvKind::Action:
			actions_[e.a]();
			for (uint32_t h = 0; h < hosts(); h++)
				pump(h);
			break;
		}
		drain();
	}
	bool ok = app.done(*this);
	app_ = nullptr;
	return ok;
}

Totals World::totals() const
{
	Totals t;
	for (const Flow &f : flows) {
		t.flows++;
		t.bytes_posted += f.bytes_posted;
		t.bytes_placed += f.bytes_placed;
		bool failed = f.error || eps[f.tx_ep]->failed() || eps[f.rx_ep]->failed();
		t.flows_failed += failed;
		t.msgs += (uint32_t)f.msgs.size();
		t.msgs_ok += f.msgs_cmpl;
		for (uint32_t e : {f.tx_ep, f.rx_ep}) {
			EpStats s = eps[e]->stats();
			t.tx_data += s.tx_data;
			t.tx_retx += s.tx_retx;
			t.tx_ctrl += s.tx_ctrl;
			t.naks += s.naks;
			t.rtos += s.rtos;
			t.steers += s.steers;
			t.downs += s.downs;
			t.parse_err += s.parse_err;
		}
	}
	return t;
}

std::vector<double> World::flow_fcts_us() const
{
	std::vector<double> v;
	for (const Flow &f : flows) {
		if (f.msgs.empty() || f.msgs_cmpl != f.msgs.size())
			continue;
		Time last = 0;
		for (const MsgRec &m : f.msgs)
			last = std::max(last, m.t_cmpl);
		v.push_back((double)(last - f.msgs.front().t_post) / 1e3);
	}
	return v;
}

std::vector<double> World::msg_fcts_us() const
{
	std::vector<double> v;
	for (const Flow &f : flows)
		for (const MsgRec &m : f.msgs)
			if (m.completed && !m.status)
				v.push_back((double)(m.t_cmpl - m.t_post) / 1e3);
	return v;
}

std::string World::delivery_errors() const
{
	std::string s;
	auto add = [&](const std::string &x) { s += (s.empty() ? "" : "; ") + x; };
	const Delivery &d = delivery;
	if (d.dup_bytes)
		add(std::to_string(d.dup_bytes) + " bytes placed twice");
	if (d.bad_pattern)
		add(std::to_string(d.bad_pattern) + " packets with wrong content");
	if (d.bad_chunk)
		add(std::to_string(d.bad_chunk) + " misaligned placements");
	if (d.early_cmpl)
		add(std::to_string(d.early_cmpl) + " completions before full placement");
	if (d.double_cmpl)
		add(std::to_string(d.double_cmpl) + " double completions");
	for (const Flow &f : flows)
		for (const MsgRec &m : f.msgs)
			if (m.completed && !m.status && m.placed != m.len) {
				add("completed message missing bytes");
				goto out;
			}
out:
	for (const auto &e : d.proto_errors)
		add("protocol: " + e);
	return s;
}

double percentile(std::vector<double> v, double p)
{
	if (v.empty())
		return NAN;
	std::sort(v.begin(), v.end());
	double idx = p / 100.0 * (double)(v.size() - 1);
	size_t lo = (size_t)std::floor(idx), hi = (size_t)std::ceil(idx);
	return v[lo] + (v[hi] - v[lo]) * (idx - (double)lo);
}

}  // namespace sim
