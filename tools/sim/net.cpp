// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Fabric implementation: ports, switching, loss, failures, topologies.
#include "net.h"

#include <cassert>
#include <cmath>
#include <stdexcept>

namespace sim {

uint32_t Fabric::add_node(bool host, std::string name)
{
	Node n;
	n.is_host = host;
	n.name = std::move(name);
	n.salt = mix64(seed_ * 7919 + nodes.size());
	if (host) {
		n.host = (uint32_t)host_node.size();
		host_node.push_back((uint32_t)nodes.size());
		host_up.emplace_back();
	}
	nodes.push_back(std::move(n));
	return (uint32_t)nodes.size() - 1;
}

uint32_t Fabric::add_port(uint32_t from, uint32_t to, const LinkCfg &c,
			  int plane, std::string name)
{
	Port p;
	p.id = (uint32_t)ports.size();
	p.from = from;
	p.to = to;
	p.cfg = c;
	p.plane = plane;
	p.name = std::move(name);
	p.rng = Rng(mix64(seed_ ^ (0x5157ull << 32) ^ p.id));
	p.host_nic = nodes[from].is_host;
	p.fabric = !nodes[from].is_host && !nodes[to].is_host;
	ports.push_back(std::move(p));
	inflight_pkt_.push_back(UINT32_MAX);
	nodes[from].out.push_back(ports.back().id);
	if (nodes[from].is_host)
		host_up[nodes[from].host].push_back(ports.back().id);
	return ports.back().id;
}

uint32_t Fabric::add_link(uint32_t a, uint32_t b, const LinkCfg &c, int plane,
			  const std::string &name)
{
	uint32_t ab = add_port(a, b, c, plane, name + ">");
	add_port(b, a, c, plane, name + "<");
	return ab;
}

uint32_t Fabric::alloc()
{
	if (free_.empty()) {
		pool_.emplace_back();
		return (uint32_t)pool_.size() - 1;
	}
	uint32_t id = free_.back();
	free_.pop_back();
	Packet &p = pool_[id];
	p.bytes.clear();	// keeps capacity: no allocation in steady state
	p.gbn = GbnHdr{};
	p.is_gbn = p.ect = p.ce = p.data = p.retx = false;
	p.payload = p.wire_len = 0;
	return id;
}

void Fabric::release(uint32_t id) { free_.push_back(id); }

uint64_t Fabric::hash5(uint64_t salt, const Packet &p) const
{
	uint64_t k = ((uint64_t)p.src_host << 40) ^ ((uint64_t)p.dst_host << 16);
	k ^= ((uint64_t)p.sport << 48) ^ p.dport;
	return mix64(k ^ salt) ^ mix64(salt + p.sport);
}

void Fabric::host_send(uint32_t host, uint32_t id)
{
	const auto &up = host_up[host];
	const Packet &p = pool_[id];
	uint32_t port = up[up.size() == 1 ? 0 : hash5(nodes[host_node[host]].salt, p) % up.size()];
	enqueue(port, id);
}

uint64_t Fabric::host_queued(uint32_t host) const
{
	uint64_t b = 0;
	for (uint32_t port : host_up[host])
		b += ports[port].q_bytes;
	return b;
}

void Fabric::enqueue(uint32_t pid, uint32_t id)
{
	Port &pt = ports[pid];
	Packet &p = pool_[id];
	if (!pt.up) {
		pt.drop_down++;
		pt.drop_down_data += p.data;
		drop(id);
		return;
	}
	if (!pt.host_nic) {
		if (pt.q_bytes + p.wire_len > pt.cfg.qcap) {
			pt.drop_q++;
			drop(id);
			return;
		}
		if (p.ect && (pt.mark_all || pt.q_bytes > pt.cfg.ecn_k)) {
			if (!p.ce)
				pt.ce_marks++;
			p.ce = true;
		}
	}
	pt.q.push_back(id);
	pt.q_bytes += p.wire_len;
	if (pt.q_bytes > pt.max_q)
		pt.max_q = pt.q_bytes;
	if (!pt.busy)
		start_tx(pid);
}

void Fabric::start_tx(uint32_t pid)
{
	Port &pt = ports[pid];
	assert(!pt.q.empty());
	uint32_t id = pt.q.front();
	pt.q.pop_front();
	Packet &p = pool_[id];
	pt.busy = true;
	Time ser = (Time)std::ceil(p.wire_len * 8.0 / pt.cfg.gbps);
	pt.tx_pkts++;
	pt.tx_bytes += p.wire_len;
	pt.tx_data_pkts += p.data;
	bool lost = false;
	if (pt.cfg.ge.enabled()) {
		GilbertElliott &g = pt.cfg.ge;
		g.bad = g.bad ? !pt.rng.chance(g.p_bg) : pt.rng.chance(g.p_gb);
		lost = pt.rng.chance(g.bad ? g.loss_bad : g.loss_good);
	}
	if (!lost && pt.rng.chance(pt.cfg.loss))
		lost = true;
	inflight_pkt_[pid] = id;
	ev.push(now + ser, EvKind::TxDone, pid, lost);
	if (!lost)
		ev.push(now + ser + pt.cfg.prop, EvKind::Arrive, pid, id);
}

void Fabric::handle(const Event &e)
{
	switch (e.kind) {
	case EvKind::TxDone: {
		Port &pt = ports[e.a];
		uint32_t id = inflight_pkt_[e.a];
		pt.q_bytes -= pool_[id].wire_len;
		if (e.b) {
			pt.drop_loss++;
			drop(id);
		}
		inflight_pkt_[e.a] = UINT32_MAX;
		pt.busy = false;
		if (!pt.q.empty())
			start_tx(e.a);
		if (pt.host_nic && sink)
			sink->host_nic_idle(nodes[pt.from].host);
		break;
	}
	case EvKind::Arrive: {
		Port &pt = ports[e.a];
		if (!pt.up) {	// the link died while the packet was on it
			pt.drop_down++;
			drop(e.b);
			break;
		}
		Node &n = nodes[pt.to];
		Packet &p = pool_[e.b];
		if (n.is_host) {
			delivered++;
			if (sink)
				sink->host_rx(n.host, e.b);
			else
				release(e.b);
			break;
		}
		const auto &r = n.routes.at(p.dst_host);
		if (r.empty()) {
			drop(e.b);
			break;
		}
		uint32_t out = r.size() == 1 ? r[0] : r[hash5(n.salt, p) % r.size()];
		enqueue(out, e.b);
		break;
	}
	default:
		throw std::logic_error("fabric: foreign event");
	}
}

void Fabric::set_plane_up(int plane, bool up)
{
	for (auto &p : ports)
		if (p.plane == plane)
			p.up = up;
}

void Fabric::set_link_up(uint32_t a, uint32_t b, bool up)
{
	for (auto &p : ports)
		if ((p.from == a && p.to == b) || (p.from == b && p.to == a))
			p.up = up;
}

void build_leaf_spine(Fabric &f, const TopoCfg &t)
{
	uint32_t nh = t.leaves * t.hosts_per_leaf;
	f.planes = t.planes;
	for (uint32_t h = 0; h < nh; h++)
		f.add_node(true, "h" + std::to_string(h));
	for (uint32_t pl = 0; pl < t.planes; pl++) {
		std::vector<uint32_t> leaf, spine;
		std::string pfx = "p" + std::to_string(pl);
		for (uint32_t l = 0; l < t.leaves; l++)
			leaf.push_back(f.add_node(false, pfx + "l" + std::to_string(l)));
		for (uint32_t s = 0; s < t.spines; s++)
			spine.push_back(f.add_node(false, pfx + "s" + std::to_string(s)));
		for (auto id : leaf)
			f.nodes[id].routes.assign(nh, {});
		for (auto id : spine)
			f.nodes[id].routes.assign(nh, {});
		// host <-> leaf
		std::vector<uint32_t> down(nh);
		for (uint32_t h = 0; h < nh; h++) {
			uint32_t l = leaf[h / t.hosts_per_leaf];
			f.add_link(f.host_node[h], l, t.host_link, (int)pl,
				   pfx + "h" + std::to_string(h));
			down[h] = (uint32_t)f.ports.size() - 1;	// leaf -> host
		}
		// leaf <-> spine
		std::vector<std::vector<uint32_t>> up(t.leaves), sdown(t.spines);
		for (uint32_t l = 0; l < t.leaves; l++)
			for (uint32_t s = 0; s < t.spines; s++) {
				up[l].push_back(f.add_link(leaf[l], spine[s], t.fabric_link,
							   (int)pl, f.nodes[leaf[l]].name + "-" +
							   f.nodes[spine[s]].name));
				sdown[s].push_back((uint32_t)f.ports.size() - 1);
			}
		for (uint32_t h = 0; h < nh; h++) {
			uint32_t hl = h / t.hosts_per_leaf;
			for (uint32_t l = 0; l < t.leaves; l++)
				f.nodes[leaf[l]].routes[h] =
					l == hl ? std::vector<uint32_t>{down[h]} : up[l];
			for (uint32_t s = 0; s < t.spines; s++)
				f.nodes[spine[s]].routes[h] = {sdown[s][hl]};
		}
	}
}

}  // namespace sim
