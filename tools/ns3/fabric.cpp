// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include "fabric.h"

#include <algorithm>
#include <stdexcept>

using namespace ns3;

namespace mroce_ns3 {

// ------------------------------------------------------------ routing

NS_OBJECT_ENSURE_REGISTERED(HashEcmpRouting);

TypeId HashEcmpRouting::GetTypeId()
{
	static TypeId tid = TypeId("mroce::HashEcmpRouting")
				    .SetParent<Ipv4RoutingProtocol>()
				    .SetGroupName("Internet")
				    .AddConstructor<HashEcmpRouting>();
	return tid;
}

namespace {
constexpr uint32_t kHostBase = 0x0a000001;	// host h: 10.0.0.1 + h
constexpr uint32_t kHostLimit = 0x0b000000;
}  // namespace

Ipv4Address HashEcmpRouting::host_addr(uint32_t host) { return Ipv4Address(kHostBase + host); }

uint32_t HashEcmpRouting::host_of(Ipv4Address a)
{
	uint32_t v = a.Get();
	return v >= kHostBase && v < kHostLimit ? v - kHostBase : UINT32_MAX;
}

void HashEcmpRouting::set_routes(std::vector<std::vector<uint32_t>> routes, uint64_t salt)
{
	routes_ = std::move(routes);
	salt_ = salt;
}

Ptr<Ipv4Route> HashEcmpRouting::pick(const Ipv4Header &h, uint32_t l4ports)
{
	uint32_t dst = host_of(h.GetDestination());
	if (dst == UINT32_MAX || routes_.empty()) {
		unroutable++;
		return nullptr;
	}
	// routes_[dst] when present, else the last entry (the default route).
	const std::vector<uint32_t> &nh =
		dst < routes_.size() - 1 && !routes_[dst].empty() ? routes_[dst] : routes_.back();
	if (nh.empty()) {
		unroutable++;
		return nullptr;
	}
	uint32_t ifc = nh[0];
	if (nh.size() > 1) {
		uint64_t k = salt_ ^ ((uint64_t)h.GetSource().Get() << 32) ^ h.GetDestination().Get();
		k = sim::mix64(k) ^ ((uint64_t)l4ports << 8) ^ h.GetProtocol();
		ifc = nh[sim::mix64(k) % nh.size()];
	}
	auto r = Create<Ipv4Route>();
	r->SetDestination(h.GetDestination());
	Ipv4Address src = h.GetSource();
	if (src == Ipv4Address() || src == Ipv4Address::GetAny())
		src = ipv4_->GetAddress(1, 0).GetLocal();	// the node's own address
	r->SetSource(src);
	r->SetGateway(Ipv4Address::GetZero());
	r->SetOutputDevice(ipv4_->GetNetDevice(ifc));
	return r;
}

// First 4 bytes of the L4 header: source and destination port (UDP, TCP).
static uint32_t l4_ports(const Packet *p)
{
	uint8_t b[4] = {0, 0, 0, 0};
	if (p && p->GetSize() >= 4)
		p->CopyData(b, 4);
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

Ptr<Ipv4Route> HashEcmpRouting::RouteOutput(Ptr<Packet> p, const Ipv4Header &header,
					    Ptr<NetDevice>, Socket::SocketErrno &sockerr)
{
	Ptr<Ipv4Route> r = pick(header, l4_ports(PeekPointer(p)));
	sockerr = r ? Socket::ERROR_NOTERROR : Socket::ERROR_NOROUTETOHOST;
	return r;
}

bool HashEcmpRouting::RouteInput(Ptr<const Packet> p, const Ipv4Header &header,
				 Ptr<const NetDevice> idev, UnicastForwardCallback ucb,
				 MulticastForwardCallback, LocalDeliverCallback lcb,
				 ErrorCallback ecb)
{
	uint32_t iif = (uint32_t)ipv4_->GetInterfaceForDevice(idev);
	if (ipv4_->IsDestinationAddress(header.GetDestination(), iif)) {
		lcb(p, header, iif);
		return true;
	}
	Ptr<Ipv4Route> r = pick(header, l4_ports(PeekPointer(p)));
	if (!r) {
		ecb(p, header, Socket::ERROR_NOROUTETOHOST);
		return false;
	}
	ucb(r, p, header);
	return true;
}

void HashEcmpRouting::PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const
{
	std::ostream &os = *stream->GetStream();
	for (size_t d = 0; d < routes_.size(); d++) {
		if (routes_[d].empty())
			continue;
		os << (d + 1 == routes_.size() ? std::string("default") : std::to_string(d)) << ":";
		for (uint32_t i : routes_[d])
			os << " if" << i;
		os << "\n";
	}
}

Ptr<Ipv4RoutingProtocol> HashEcmpRoutingHelper::Create(Ptr<Node>) const
{
	return CreateObject<HashEcmpRouting>();
}

// ------------------------------------------------------------ ECN marking

NS_OBJECT_ENSURE_REGISTERED(StepEcnQueueDisc);

TypeId StepEcnQueueDisc::GetTypeId()
{
	static TypeId tid =
		TypeId("mroce::StepEcnQueueDisc")
			.SetParent<QueueDisc>()
			.SetGroupName("TrafficControl")
			.AddConstructor<StepEcnQueueDisc>()
			.AddAttribute("MaxSize", "Buffer of the port (tail drop beyond it)",
				      QueueSizeValue(QueueSize("512KB")),
				      MakeQueueSizeAccessor(&QueueDisc::SetMaxSize,
							    &QueueDisc::GetMaxSize),
				      MakeQueueSizeChecker())
			.AddAttribute("K", "CE-mark ECT packets arriving when more bytes are queued",
				      UintegerValue(80 * 1024),
				      MakeUintegerAccessor(&StepEcnQueueDisc::k_bytes_),
				      MakeUintegerChecker<uint32_t>())
			.AddAttribute("MarkAll", "CE-mark every ECT packet (tests)",
				      BooleanValue(false),
				      MakeBooleanAccessor(&StepEcnQueueDisc::mark_all_),
				      MakeBooleanChecker());
	return tid;
}

StepEcnQueueDisc::StepEcnQueueDisc() : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE) {}

bool StepEcnQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
	if (GetCurrentSize() + item > GetMaxSize()) {
		DropBeforeEnqueue(item, kDrop);
		return false;
	}
	if (mark_all_ || GetNBytes() > k_bytes_)
		Mark(item, kMark);	// no-op for packets that are not ECT
	return GetInternalQueue(0)->Enqueue(item);
}

Ptr<QueueDiscItem> StepEcnQueueDisc::DoDequeue() { return GetInternalQueue(0)->Dequeue(); }

bool StepEcnQueueDisc::CheckConfig()
{
	if (GetNQueueDiscClasses() || GetNPacketFilters())
		return false;
	if (GetNInternalQueues() == 0)
		AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
			"MaxSize", QueueSizeValue(GetMaxSize())));
	return GetNInternalQueues() == 1;
}

// ------------------------------------------------------------ loss, failure

NS_OBJECT_ENSURE_REGISTERED(FabricErrorModel);

TypeId FabricErrorModel::GetTypeId()
{
	static TypeId tid = TypeId("mroce::FabricErrorModel")
				    .SetParent<ErrorModel>()
				    .SetGroupName("Network")
				    .AddConstructor<FabricErrorModel>();
	return tid;
}

void FabricErrorModel::configure(const LossCfg &c, uint64_t seed)
{
	c_ = c;
	rng_ = sim::Rng(seed);
	bad_ = false;
}

bool FabricErrorModel::DoCorrupt(Ptr<Packet>)
{
	if (down_) {
		dropped_down++;
		return true;
	}
	bool lost = rng_.chance(c_.p);
	if (c_.ge_p_gb > 0) {
		bad_ = bad_ ? !rng_.chance(c_.ge_p_bg) : rng_.chance(c_.ge_p_gb);
		lost = lost || rng_.chance(bad_ ? c_.ge_loss_bad : c_.ge_loss_good);
	}
	dropped_loss += lost;
	return lost;
}

// ------------------------------------------------------------ topology



Fabric::Fabric(const TopoCfg &t) : cfg(t)
{
	const uint32_t nh = t.leaves * t.hosts_per_leaf;
	const uint32_t nsw = t.planes * (t.leaves + t.spines);
	nodes.Create(nh + nsw);
	for (uint32_t h = 0; h < nh; h++)
		host_node.push_back(h);
	uint32_t n = nh;
	for (uint32_t p = 0; p < t.planes; p++) {
		for (uint32_t l = 0; l < t.leaves; l++)
			leaf_node.push_back(n++);
		for (uint32_t s = 0; s < t.spines; s++)
			spine_node.push_back(n++);
	}
	InternetStackHelper stack;
	HashEcmpRoutingHelper rh;
	stack.SetRoutingHelper(rh);
	stack.SetIpv6StackInstall(false);
	stack.Install(nodes);

	host_up.resize(nh);
	host_qdisc.resize(nh);
	for (uint32_t p = 0; p < t.planes; p++) {
		for (uint32_t h = 0; h < nh; h++)
			link(host_node[h], leaf_node[p * t.leaves + h / t.hosts_per_leaf],
			     t.host_link, (int)p, true);
		for (uint32_t l = 0; l < t.leaves; l++)
			for (uint32_t s = 0; s < t.spines; s++)
				link(leaf_node[p * t.leaves + l], spine_node[p * t.spines + s],
				     t.fabric_link, (int)p, false);
	}

	// Interface index of the device on `from` towards `to`, per end.
	auto ifc = [&](const LinkEnd &e) {
		return (uint32_t)nodes.Get(e.from)->GetObject<Ipv4>()->GetInterfaceForDevice(e.dev);
	};
	std::vector<std::vector<std::vector<uint32_t>>> rt(nodes.GetN());
	auto add = [&](uint32_t node, uint32_t dst, uint32_t i) {
		auto &r = rt[node];
		if (r.empty())
			r.resize(nh + 1);	// [nh]: default route
		r[dst].push_back(i);
	};
	for (const LinkEnd &e : ends) {
		uint32_t i = ifc(e);
		if (e.host_uplink) {
			add(e.from, nh, i);	// hosts: every uplink, any destination
			continue;
		}
		bool from_leaf = std::find(leaf_node.begin(), leaf_node.end(), e.from) != leaf_node.end();
		bool to_host = e.to < nh;
		if (from_leaf && to_host) {
			add(e.from, e.to, i);
		} else if (from_leaf) {
			add(e.from, nh, i);	// up to every spine
		} else {
			// spine -> leaf: the hosts under that leaf
			uint32_t li = (uint32_t)(std::find(leaf_node.begin(), leaf_node.end(), e.to) -
						 leaf_node.begin()) % t.leaves;
			for (uint32_t h = li * t.hosts_per_leaf; h < (li + 1) * t.hosts_per_leaf; h++)
				add(e.from, h, i);
		}
	}
	for (uint32_t node = 0; node < nodes.GetN(); node++) {
		auto r = DynamicCast<HashEcmpRouting>(
			nodes.Get(node)->GetObject<Ipv4>()->GetRoutingProtocol());
		if (!r)
			throw std::runtime_error("HashEcmpRouting not installed");
		r->set_routes(std::move(rt[node]), sim::mix64(t.seed * 7919 + node));
	}
}

void Fabric::link(uint32_t a, uint32_t b, const LinkCfg &c, int plane, bool a_is_host)
{
	PointToPointHelper p2p;
	p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate((uint64_t)(c.gbps * 1e9))));
	p2p.SetDeviceAttribute("Mtu", UintegerValue(cfg.mtu));
	p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds((int64_t)(c.prop_us * 1000))));
	// A short device queue: the queue disc above it is the port buffer.
	p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("2p")));
	NetDeviceContainer d = p2p.Install(nodes.Get(a), nodes.Get(b));
	Ptr<FabricErrorModel> rx_err[2];	// the receive error model of each device
	for (uint32_t k = 0; k < 2; k++) {
		uint32_t node = k ? b : a;
		Ptr<Ipv4> ip = nodes.Get(node)->GetObject<Ipv4>();
		int32_t i = ip->AddInterface(d.Get(k));
		bool is_host = k == 0 && a_is_host;
		Ipv4Address addr = is_host && plane == 0 ? HashEcmpRouting::host_addr(a) : Ipv4Address(aux_addr_++);
		ip->AddAddress(i, Ipv4InterfaceAddress(addr, Ipv4Mask("255.255.255.255")));
		ip->SetUp(i);
		TrafficControlHelper tch;
		if (is_host) {
			// The host's NIC queue: the transports keep it short
			// themselves (mroce/go-back-N pull; TCP's window).
			tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
					     QueueSizeValue(QueueSize("100000p")));
		} else {
			tch.SetRootQueueDisc("mroce::StepEcnQueueDisc", "MaxSize",
					     QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, c.qcap_bytes)),
					     "K", UintegerValue(c.ecn_k_bytes));
		}
		QueueDiscContainer q = tch.Install(d.Get(k));
		rx_err[k] = CreateObject<FabricErrorModel>();
		rx_err[k]->configure(cfg.loss, sim::mix64(cfg.seed * 1000003 + ends.size() * 2 + k));
		d.Get(k)->SetAttribute("ReceiveErrorModel", PointerValue(rx_err[k]));
		LinkEnd e;
		e.dev = DynamicCast<PointToPointNetDevice>(d.Get(k));
		e.qdisc = q.Get(0);
		e.from = node;
		e.to = k ? a : b;
		e.plane = plane;
		e.host_uplink = is_host;
		ends.push_back(e);
		if (is_host) {
			host_up[a].push_back(e.dev);
			host_qdisc[a].push_back(e.qdisc);
		}
	}
	// What an end sends is lost (or black-holed) at the peer's device.
	size_t n = ends.size();
	ends[n - 2].rx_err = rx_err[1];
	ends[n - 1].rx_err = rx_err[0];
}

void Fabric::set_plane_up(int plane, bool up)
{
	for (LinkEnd &e : ends)
		if (e.plane == plane)
			e.rx_err->set_down(!up);
}

void Fabric::set_link_up(uint32_t a, uint32_t b, bool up)
{
	for (LinkEnd &e : ends)
		if ((e.from == a && e.to == b) || (e.from == b && e.to == a))
			e.rx_err->set_down(!up);
}

uint64_t Fabric::ce_marks() const
{
	uint64_t n = 0;
	for (const LinkEnd &e : ends)
		n += e.qdisc->GetStats().GetNMarkedPackets(StepEcnQueueDisc::kMark);
	return n;
}

uint64_t Fabric::queue_drops() const
{
	uint64_t n = 0;
	for (const LinkEnd &e : ends)
		n += e.qdisc->GetStats().nTotalDroppedPackets;
	return n;
}

uint64_t Fabric::loss_drops() const
{
	uint64_t n = 0;
	for (const LinkEnd &e : ends)
		n += e.rx_err->dropped_loss;
	return n;
}

uint64_t Fabric::down_drops() const
{
	uint64_t n = 0;
	for (const LinkEnd &e : ends)
		n += e.rx_err->dropped_down;
	return n;
}

uint64_t Fabric::plane_tx_pkts(int plane) const
{
	uint64_t n = 0;
	for (const LinkEnd &e : ends)
		if (e.plane == plane && e.host_uplink)
			n += e.qdisc->GetStats().nTotalSentPackets;
	return n;
}

}  // namespace mroce_ns3
