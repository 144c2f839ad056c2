// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The ns-3 fabric of the mroce model: leaf-spine and multi-plane
// leaf-spine topologies of point-to-point links running ns-3's IPv4 stack,
// with
//  * HashEcmpRouting: a static IPv4 routing protocol that picks among equal
//    next hops by a hash of the 5-tuple (IP addresses, protocol, the L4
//    ports read from the UDP/TCP header) with a per-node salt;
//  * StepEcnQueueDisc: a byte-limited FIFO that CE-marks ECN-capable
//    packets when the queue holds more than K bytes (DCTCP-style step
//    marking; non-ECT packets are only tail-dropped at the limit);
//  * FabricErrorModel: per-device receive loss (independent or
//    Gilbert-Elliott) and black-holing of failed links/planes.
// All randomness comes from sim::Rng streams seeded from the run's seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>
#include <ns3/traffic-control-module.h>

#include "net.h"	// sim::Rng, sim::mix64 (tools/sim)

namespace mroce_ns3 {

// ------------------------------------------------------------ routing

class HashEcmpRouting final : public ns3::Ipv4RoutingProtocol {
public:
	static ns3::TypeId GetTypeId();

	// Routes of this node: per destination host, the interfaces that lead
	// there (several: ECMP by 5-tuple hash).
	void set_routes(std::vector<std::vector<uint32_t>> routes, uint64_t salt);
	// Destination address -> host index (or UINT32_MAX if not a host).
	static uint32_t host_of(ns3::Ipv4Address a);
	static ns3::Ipv4Address host_addr(uint32_t host);

	ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> p,
					     const ns3::Ipv4Header &header,
					     ns3::Ptr<ns3::NetDevice> oif,
					     ns3::Socket::SocketErrno &sockerr) override;
	bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header &header,
			ns3::Ptr<const ns3::NetDevice> idev, UnicastForwardCallback ucb,
			MulticastForwardCallback mcb, LocalDeliverCallback lcb,
			ErrorCallback ecb) override;
	void NotifyInterfaceUp(uint32_t) override {}
	void NotifyInterfaceDown(uint32_t) override {}
	void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
	void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
	void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
	void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream,
			       ns3::Time::Unit unit) const override;

	uint64_t unroutable = 0;

private:
	ns3::Ptr<ns3::Ipv4Route> pick(const ns3::Ipv4Header &h, uint32_t l4ports);

	ns3::Ptr<ns3::Ipv4> ipv4_;
	std::vector<std::vector<uint32_t>> routes_;
	uint64_t salt_ = 0;
};

class HashEcmpRoutingHelper final : public ns3::Ipv4RoutingHelper {
public:
	HashEcmpRoutingHelper *Copy() const override { return new HashEcmpRoutingHelper(*this); }
	ns3::Ptr<ns3::Ipv4RoutingProtocol> Create(ns3::Ptr<ns3::Node> node) const override;
};

// ------------------------------------------------------------ ECN marking

class StepEcnQueueDisc final : public ns3::QueueDisc {
public:
	static ns3::TypeId GetTypeId();
	StepEcnQueueDisc();

	static constexpr const char *kMark = "Step mark";
	static constexpr const char *kDrop = "Tail drop";

private:
	bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
	ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
	bool CheckConfig() override;
	void InitializeParams() override {}

	uint32_t k_bytes_ = 0;
	bool mark_all_ = false;
};

// ------------------------------------------------------------ loss, failure

struct LossCfg {
	double p = 0;			// independent per-packet loss
	double ge_p_gb = 0, ge_p_bg = 0;	// Gilbert-Elliott transitions
	double ge_loss_good = 0, ge_loss_bad = 0;
};

class FabricErrorModel final : public ns3::ErrorModel {
public:
	static ns3::TypeId GetTypeId();
	void configure(const LossCfg &c, uint64_t seed);
	void set_down(bool d) { down_ = d; }
	bool down() const { return down_; }

	uint64_t dropped_loss = 0, dropped_down = 0;

private:
	bool DoCorrupt(ns3::Ptr<ns3::Packet> p) override;
	void DoReset() override {}

	LossCfg c_;
	sim::Rng rng_;
	bool bad_ = false;
	bool down_ = false;
};

// ------------------------------------------------------------ topology

struct LinkCfg {
	double gbps = 100;
	double prop_us = 1;
	uint32_t qcap_bytes = 512 * 1024;	// switch port buffer
	uint32_t ecn_k_bytes = 80 * 1024;	// step marking threshold
};

struct TopoCfg {
	uint32_t planes = 1;
	uint32_t leaves = 2;		// per plane
	uint32_t spines = 2;		// per plane
	uint32_t hosts_per_leaf = 2;
	LinkCfg host_link, fabric_link;
	LossCfg loss;			// on every link, each direction
	uint32_t mtu = 9000;		// IP MTU of every device (jumbo)
	uint64_t seed = 1;
};

// One direction of a link: the device on node `from` that sends to `to`
// and the error model on the receiving device.
struct LinkEnd {
	ns3::Ptr<ns3::PointToPointNetDevice> dev;
	ns3::Ptr<ns3::QueueDisc> qdisc;
	ns3::Ptr<FabricErrorModel> rx_err;	// on the peer's device
	uint32_t from = 0, to = 0;
	int plane = 0;
	bool host_uplink = false;
};

class Fabric {
public:
	explicit Fabric(const TopoCfg &t);

	uint32_t hosts() const { return (uint32_t)host_node.size(); }
	ns3::Ptr<ns3::Node> host(uint32_t h) const { return nodes.Get(host_node[h]); }

	// Failures: both directions of every link of a plane / one link.
	void set_plane_up(int plane, bool up);
	void set_link_up(uint32_t node_a, uint32_t node_b, bool up);

	uint64_t ce_marks() const;
	uint64_t queue_drops() const;
	uint64_t loss_drops() const;
	uint64_t down_drops() const;
	// Packets (data and control) the hosts sent into plane `plane`.
	uint64_t plane_tx_pkts(int plane) const;

	TopoCfg cfg;
	ns3::NodeContainer nodes;
	std::vector<uint32_t> host_node;	// host index -> node index
	std::vector<uint32_t> leaf_node;	// plane * leaves + leaf -> node
	std::vector<uint32_t> spine_node;	// plane * spines + spine -> node
	std::vector<LinkEnd> ends;
	// host -> its uplink devices (one per plane)
	std::vector<std::vector<ns3::Ptr<ns3::PointToPointNetDevice>>> host_up;
	std::vector<std::vector<ns3::Ptr<ns3::QueueDisc>>> host_qdisc;

private:
	void link(uint32_t a, uint32_t b, const LinkCfg &c, int plane, bool a_is_host);

	uint32_t aux_addr_ = 0x0b000001;	// 11.0.0.1..: addresses of non-host interfaces
};

}  // namespace mroce_ns3
