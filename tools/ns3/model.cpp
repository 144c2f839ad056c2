// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include "model.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

using namespace ns3;

namespace mroce_ns3 {

namespace {

constexpr uint16_t kGbnPort = 4791;
constexpr uint16_t kTcpPort = 5001;
constexpr uint8_t kTosEct0 = 0x02, kEcnMask = 0x03, kEcnCe = 0x03;

// Go-back-N header on the wire (own layout, big endian):
//  0 type  1 ece  2..3 zero  4 dst endpoint  8 psn  12 msg  16 offset
// 20 len  24 msg_len  28 tx_ts (u64)  = 36 bytes, then zero padding up to
// the size the model accounts for (BTH/RETH/ICRC + payload).
constexpr uint32_t kGbnHdr = 36;

void put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24), b[1] = (uint8_t)(v >> 16), b[2] = (uint8_t)(v >> 8), b[3] = (uint8_t)v;
}
uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

}  // namespace

std::string transport_name(const ModelCfg &c)
{
	switch (c.kind) {
	case Kind::Mroce:
		return "mroce";
	case Kind::Gbn:
		return "gbn";
	default:
		return c.tcp_cc;
	}
}

void configure_tcp(const ModelCfg &c)
{
	std::string type = c.tcp_cc == "dctcp"	 ? "ns3::TcpDctcp"
			   : c.tcp_cc == "cubic" ? "ns3::TcpCubic"
			   : c.tcp_cc == "bbr"	 ? "ns3::TcpBbr"
						 : "ns3::TcpNewReno";
	Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName(type)));
	Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(4096));
	Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
	Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
	Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
	Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
	Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MicroSeconds(10)));
	// Datacenter timers (Linux's 200 ms minimum RTO would dominate):
	// the same 1 ms floor as the go-back-N model's fixed timer.
	Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(1)));
	Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MicroSeconds(1)));
	// SYN timeout 1 ms (ns-3: 3 s, which a lost SYN would add to a
	// flow), and Linux's 15 data retries (tcp_retries2; ns-3: 6) before
	// the connection is given up.
	Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(MilliSeconds(1)));
	Config::SetDefault("ns3::TcpSocket::DataRetries", UintegerValue(15));
	// BBR is rate-based: ns-3 paces only when asked to.
	Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(c.tcp_cc == "bbr"));
	Config::SetDefault("ns3::TcpSocketState::MaxPacingRate", DataRateValue(DataRate("400Gbps")));
	Config::SetDefault("ns3::TcpSocketBase::UseEcn",
			   StringValue(c.tcp_cc == "dctcp" ? "On" : "Off"));
}

Model::Model(Fabric &f, const ModelCfg &c)
	: fab(f), cfg(c), delivery(c.bucket_ns), buf_(MROCE_MAX_PKT + 64)
{
	hosts_.resize(fab.hosts());
	if (cfg.kind == Kind::Tcp)
		return;
	uint16_t port = cfg.kind == Kind::Mroce ? MROCE_UDP_PORT : kGbnPort;
	for (uint32_t h = 0; h < fab.hosts(); h++) {
		Host &ho = hosts_[h];
		Ptr<Node> n = fab.host(h);
		ho.udp = n->GetObject<UdpL4Protocol>();
		ho.rx_sock = Socket::CreateSocket(n, UdpSocketFactory::GetTypeId());
		if (ho.rx_sock->Bind(InetSocketAddress(Ipv4Address::GetAny(), port)))
			throw std::runtime_error("bind failed");
		ho.rx_sock->SetIpRecvTos(true);
		ho.rx_sock->SetAttribute("RcvBufSize", UintegerValue(1u << 30));
		ho.rx_sock->SetRecvCallback(Callback<void, Ptr<Socket>>(
			[this, h](Ptr<Socket> s) { on_udp_rx(h, s); }));
		// One NIC packet leaving the device frees room to pull another.
		for (auto &dev : fab.host_up[h])
			dev->GetQueue()->TraceConnectWithoutContext(
				"Dequeue", Callback<void, Ptr<const Packet>>(
						   [this, h](Ptr<const Packet>) { schedule_pump(h); }));
	}
}

Model::~Model() = default;

uint64_t Model::now() const { return (uint64_t)Simulator::Now().GetNanoSeconds(); }

void Model::at(uint64_t t_ns, std::function<void()> fn)
{
	Simulator::Schedule(NanoSeconds((int64_t)(t_ns - now())), std::move(fn));
}

uint32_t Model::mtu() const
{
	return cfg.kind == Kind::Mroce ? cfg.mroce.mtu : cfg.kind == Kind::Gbn ? cfg.gbn.mtu : 4096;
}

uint32_t Model::add_flow(uint32_t src, uint32_t dst)
{
	if (src >= fab.hosts() || dst >= fab.hosts() || src == dst)
		throw std::invalid_argument("bad flow endpoints");
	uint32_t fid = (uint32_t)flows.size();
	FlowRec f;
	f.src = src;
	f.dst = dst;
	if (cfg.kind != Kind::Tcp) {
		f.tx_ep = (uint32_t)eps_.size();
		f.rx_ep = f.tx_ep + 1;
		for (auto &e : sim::flow_endpoints(fid, f.tx_ep, src, dst, *this, cfg.kind == Kind::Mroce,
						   cfg.mroce, cfg.gbn, cfg.seed, check_every_call)) {
			eps_.push_back(std::move(e));
			is_active_.push_back(0);
			timers_.emplace_back();
		}
		flows.push_back(std::move(f));
		return fid;
	}
	tcp_listen(dst);
	Ptr<Socket> s = Socket::CreateSocket(fab.host(src), TcpSocketFactory::GetTypeId());
	s->Bind();
	Address local;
	s->GetSockName(local);
	uint16_t sport = InetSocketAddress::ConvertFrom(local).GetPort();
	tcp_by_port_[(uint64_t)src << 16 | sport] = fid;
	s->SetConnectCallback(
		Callback<void, Ptr<Socket>>([this, fid](Ptr<Socket>) {
			flows[fid].connected = true;
			tcp_push(fid);
		}),
		Callback<void, Ptr<Socket>>([this, fid](Ptr<Socket>) {
			flows[fid].error = true;
			protocol_error("tcp connect failed");
		}));
	// A connection ns-3 gives up on (retries exhausted) fails its flow.
	s->SetCloseCallbacks(Callback<void, Ptr<Socket>>([](Ptr<Socket>) {}),
			     Callback<void, Ptr<Socket>>([this, fid](Ptr<Socket>) {
				     flows[fid].error = true;
				     protocol_error("tcp connection aborted");
			     }));
	s->SetSendCallback(Callback<void, Ptr<Socket>, uint32_t>(
		[this, fid](Ptr<Socket>, uint32_t) { tcp_push(fid); }));
	s->Connect(InetSocketAddress(HashEcmpRouting::host_addr(dst), kTcpPort));
	f.tx_sock = s;
	flows.push_back(std::move(f));
	tcp_rx_bytes_.push_back(0);
	tcp_rx_msg_.push_back(0);
	tcp_rx_end_.push_back(0);
	return fid;
}

void Model::post(uint32_t flow, uint32_t len)
{
	FlowRec &f = flows.at(flow);
	uint32_t msg = delivery.post(f, len, cfg.kind != Kind::Tcp ? mtu() : 0, now());
	if (cfg.kind == Kind::Tcp) {
		f.unsent += len;
		if (f.msgs.size() == tcp_rx_msg_[flow] + 1)
			tcp_rx_end_[flow] += len;	// first message the receiver waits for
		if (f.connected)
			tcp_push(flow);
		return;
	}
	eps_[f.tx_ep]->post(msg, len, now());
	activate(f.tx_ep);
	resched(f.tx_ep);
	schedule_pump(f.src);
}

// ------------------------------------------------------------ mroce / gbn

void Model::activate(uint32_t ep)
{
	if (is_active_[ep])
		return;
	is_active_[ep] = 1;
	hosts_[eps_[ep]->info.host].active.push_back(ep);
}

void Model::schedule_pump(uint32_t host)
{
	Host &h = hosts_[host];
	if (h.pump_pending)
		return;
	h.pump_pending = true;
	Simulator::ScheduleNow(&Model::pump, this, host);
}

uint64_t Model::nic_queued(uint32_t host) const
{
	uint64_t n = 0;
	for (size_t i = 0; i < fab.host_up[host].size(); i++)
		n += fab.host_qdisc[host][i]->GetNPackets() +
		     fab.host_up[host][i]->GetQueue()->GetNPackets();
	return n;
}

void Model::pump(uint32_t host)
{
	Host &h = hosts_[host];
	h.pump_pending = false;
	const uint64_t budget = (uint64_t)cfg.nic_pkts * fab.host_up[host].size();
	while (!h.active.empty() && nic_queued(host) < budget) {
		uint32_t ep = h.active.front();
		h.active.pop_front();
		sim::Endpoint &e = *eps_[ep];
		txp_.bytes.clear();
		txp_.is_gbn = false;
		txp_.src_host = host;
		txp_.dst_host = e.info.peer_host;
		txp_.dst_ep = e.info.peer;
		if (e.pull(now(), txp_)) {
			h.active.push_back(ep);
			send(host, txp_);
		} else {
			is_active_[ep] = 0;
		}
		resched(ep);
	}
	drain();
}

void Model::send(uint32_t host, const sim::Packet &p)
{
	Ptr<Packet> pkt;
	if (!p.is_gbn) {
		pkt = Create<Packet>(p.bytes.data(), (uint32_t)p.bytes.size());
	} else {
		uint32_t len = std::max(kGbnHdr, p.wire_len - sim::kFrameOverhead);
		std::fill(buf_.begin(), buf_.begin() + kGbnHdr, 0);
		buf_[0] = (uint8_t)p.gbn.type;
		buf_[1] = p.gbn.ece;
		put32(&buf_[4], p.dst_ep);
		put32(&buf_[8], p.gbn.psn);
		put32(&buf_[12], p.gbn.msg);
		put32(&buf_[16], p.gbn.offset);
		put32(&buf_[20], p.gbn.len);
		put32(&buf_[24], p.gbn.msg_len);
		put32(&buf_[28], (uint32_t)(p.gbn.tx_ts >> 32));
		put32(&buf_[32], (uint32_t)p.gbn.tx_ts);
		pkt = Create<Packet>(buf_.data(), kGbnHdr);
		pkt->AddPaddingAtEnd(len - kGbnHdr);
	}
	if (p.ect) {
		SocketIpTosTag tos;
		tos.SetTos(kTosEct0);
		pkt->AddPacketTag(tos);
	}
	hosts_[host].udp->Send(pkt, HashEcmpRouting::host_addr(host),
			       HashEcmpRouting::host_addr(p.dst_host), p.sport, p.dport);
}

void Model::on_udp_rx(uint32_t host, Ptr<Socket> s)
{
	Address from;
	while (Ptr<Packet> pkt = s->RecvFrom(from)) {
		SocketIpTosTag tos;
		bool ce = pkt->PeekPacketTag(tos) && (tos.GetTos() & kEcnMask) == kEcnCe;
		uint32_t n = pkt->GetSize();
		uint32_t ep;
		if (cfg.kind == Kind::Mroce) {
			if (n < sizeof(mroce_bth) || n > buf_.size()) {
				protocol_error("runt or oversized datagram");
				continue;
			}
			rxp_.bytes.resize(n);
			pkt->CopyData(rxp_.bytes.data(), n);
			// dqpn: 24 bits at byte 9 of the base header
			ep = (uint32_t)rxp_.bytes[9] << 16 | (uint32_t)rxp_.bytes[10] << 8 |
			     rxp_.bytes[11];
		} else {
			if (n < kGbnHdr) {
				protocol_error("runt go-back-N datagram");
				continue;
			}
			uint8_t b[kGbnHdr];
			pkt->CopyData(b, kGbnHdr);
			rxp_.is_gbn = true;
			rxp_.gbn.type = (sim::GbnHdr::Type)b[0];
			rxp_.gbn.ece = b[1];
			ep = get32(b + 4);
			rxp_.gbn.psn = get32(b + 8);
			rxp_.gbn.msg = get32(b + 12);
			rxp_.gbn.offset = get32(b + 16);
			rxp_.gbn.len = get32(b + 20);
			rxp_.gbn.msg_len = get32(b + 24);
			rxp_.gbn.tx_ts = (uint64_t)get32(b + 28) << 32 | get32(b + 32);
		}
		rxp_.ce = ce;
		if (ep >= eps_.size() || eps_[ep]->info.host != host) {
			wrong_host++;
			continue;
		}
		eps_[ep]->rx(rxp_, now());
		activate(ep);
		resched(ep);
	}
	schedule_pump(host);
	drain();
}

void Model::resched(uint32_t ep)
{
	EpTimer &t = timers_[ep];
	uint64_t at = eps_[ep]->next_timer();
	if (at == kNever || at >= t.at)
		return;
	uint64_t n = now();
	if (at <= n) {
		// due, but waiting for the NIC: poll again shortly
		at = n + 1000;
		if (at >= t.at)
			return;
	}
	t.ev.Cancel();
	t.at = at;
	t.ev = Simulator::Schedule(NanoSeconds((int64_t)(at - n)), &Model::on_timer, this, ep);
}

void Model::on_timer(uint32_t ep)
{
	timers_[ep].at = kNever;
	sim::Endpoint &e = *eps_[ep];
	if (e.next_timer() <= now())
		e.timer(now());
	activate(ep);
	resched(ep);
	schedule_pump(e.info.host);
	drain();
}

void Model::placed(uint32_t flow, uint32_t msg, uint32_t off, uint32_t len, bool ok)
{
	if (delivery.place(flows.at(flow), msg, off, len, ok, mtu(), now()))
		notices_.push_back(Notice{true, flow, msg});
}

void Model::msg_rx(uint32_t flow, uint32_t msg)
{
	delivery.received(flows[flow], msg, now());
	notices_.push_back(Notice{true, flow, msg});
}

void Model::completed(uint32_t flow, uint32_t msg, uint32_t status)
{
	if (delivery.complete(flows.at(flow), msg, status, now()))
		notices_.push_back(Notice{false, flow, msg});
}

void Model::protocol_error(const char *what) { delivery.protocol_error(what); }

void Model::drain()
{
	if (in_drain_ || !wl_)
		return;
	in_drain_ = true;
	for (size_t i = 0; i < notices_.size(); i++) {
		Notice n = notices_[i];
		if (n.rx)
			wl_->on_rx(*this, n.flow, n.msg);
		else
			wl_->on_cmpl(*this, n.flow, n.msg);
	}
	notices_.clear();
	in_drain_ = false;
	if (wl_->done(*this))
		Simulator::Stop();
}

// ------------------------------------------------------------ tcp

void Model::tcp_listen(uint32_t host)
{
	Host &h = hosts_[host];
	if (h.listen)
		return;
	h.listen = Socket::CreateSocket(fab.host(host), TcpSocketFactory::GetTypeId());
	h.listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), kTcpPort));
	h.listen->Listen();
	h.listen->SetAcceptCallback(
		Callback<bool, Ptr<Socket>, const Address &>(
			[](Ptr<Socket>, const Address &) { return true; }),
		Callback<void, Ptr<Socket>, const Address &>([this](Ptr<Socket> s, const Address &from) {
			InetSocketAddress a = InetSocketAddress::ConvertFrom(from);
			uint32_t src = HashEcmpRouting::host_of(a.GetIpv4());
			auto it = tcp_by_port_.find((uint64_t)src << 16 | a.GetPort());
			if (it == tcp_by_port_.end()) {
				protocol_error("tcp connection from an unknown flow");
				return;
			}
			uint32_t fid = it->second;
			s->SetRecvCallback(Callback<void, Ptr<Socket>>(
				[this, fid](Ptr<Socket> rs) { tcp_recv(fid, rs); }));
			tcp_recv(fid, s);
		}));
}

void Model::tcp_push(uint32_t flow)
{
	FlowRec &f = flows[flow];
	while (f.unsent) {
		uint32_t room = f.tx_sock->GetTxAvailable();
		if (!room)
			break;
		uint32_t n = (uint32_t)std::min<uint64_t>({f.unsent, room, 1u << 20});
		int r = f.tx_sock->Send(Create<Packet>(n));
		if (r <= 0)
			break;
		f.unsent -= (uint32_t)r;
	}
}

void Model::tcp_recv(uint32_t flow, Ptr<Socket> s)
{
	FlowRec &f = flows[flow];
	uint64_t got = 0;
	while (Ptr<Packet> p = s->Recv())
		got += p->GetSize();
	if (!got)
		return;
	tcp_rx_bytes_[flow] += got;
	delivery.count(f, got, now());
	uint32_t &next = tcp_rx_msg_[flow];
	while (next < f.msgs.size() && tcp_rx_bytes_[flow] >= tcp_rx_end_[flow]) {
		MsgRec &m = f.msgs[next];
		m.placed = m.len;
		msg_rx(flow, next);
		// the stream has no sender-side completion: the message is
		// complete when its last byte arrived
		completed(flow, next, 0);
		next++;
		if (next < f.msgs.size())
			tcp_rx_end_[flow] += f.msgs[next].len;
	}
	drain();
}

// ------------------------------------------------------------ run, results

bool Model::run(Workload &w, uint64_t t_end_ns)
{
	wl_ = &w;
	auto t0 = std::chrono::steady_clock::now();
	uint64_t ev0 = Simulator::GetEventCount();
	// Started from an event: ns-3 initialises the nodes (queue discs,
	// sockets) when the simulation starts.
	Simulator::ScheduleNow([this, &w] {
		in_drain_ = true;
		w.start(*this);
		in_drain_ = false;
		drain();
	});
	Simulator::Stop(NanoSeconds((int64_t)(t_end_ns - now())));
	Simulator::Run();
	bool done = w.done(*this);
	events = Simulator::GetEventCount() - ev0;
	wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	wl_ = nullptr;
	return done;
}

Totals Model::totals() const
{
	Totals t;
	for (const FlowRec &f : flows) {
		t.bytes_posted += f.bytes_posted;
		t.bytes_placed += f.bytes_placed;
		t.flows++;
		t.flows_failed += f.error;
	}
	for (const auto &e : eps_) {
		if (e->info.id % 2)
			continue;	// sender side of each flow
		sim::EpStats s = e->stats();
		t.tx_data += s.tx_data;
		t.tx_retx += s.tx_retx;
		t.naks += s.naks;
		t.rtos += s.rtos;
		t.steers += s.steers;
		t.downs += s.downs;
	}
	for (const auto &e : eps_) {
		sim::EpStats s = e->stats();
		t.tx_ctrl += s.tx_ctrl;
		t.parse_err += s.parse_err;
	}
	return t;
}

std::vector<double> Model::flow_fcts_us() const
{
	std::vector<double> v;
	for (const FlowRec &f : flows) {
		if (f.error || f.msgs.empty() || f.msgs_cmpl != f.msgs.size())
			continue;
		uint64_t t0 = f.msgs.front().t_post, t1 = 0;
		for (const MsgRec &m : f.msgs)
			t1 = std::max(t1, m.t_rx);
		v.push_back((double)(t1 - t0) / 1e3);
	}
	return v;
}

std::vector<double> Model::msg_fcts_us() const
{
	std::vector<double> v;
	for (const FlowRec &f : flows)
		for (const MsgRec &m : f.msgs)
			if (m.t_rx != kNever)
				v.push_back((double)(m.t_rx - m.t_post) / 1e3);
	return v;
}

std::string Model::delivery_errors() const
{
	std::string e;
	auto add = [&](const char *what, uint64_t n) {
		if (n)
			e += std::string(e.empty() ? "" : " ") + what + "=" + std::to_string(n);
	};
	add("dup_bytes", delivery.dup_bytes);
	add("bad_pattern", delivery.bad_pattern);
	add("bad_chunk", delivery.bad_chunk);
	add("double_cmpl", delivery.double_cmpl);
	add("wrong_host", wrong_host);
	uint64_t early = 0, missing = 0;
	for (const FlowRec &f : flows)
		for (const MsgRec &m : f.msgs) {
			if (m.completed && !m.status && m.placed != m.len)
				missing++;
			if (m.completed && !m.status && m.t_rx != kNever && m.t_cmpl < m.t_rx)
				early++;
		}
	add("cmpl_with_missing_bytes", missing);
	add("cmpl_before_placed", early);
	add("parse_err", totals().parse_err);
	for (const std::string &p : delivery.proto_errors)
		e += (e.empty() ? "" : " ") + p;
	return e;
}

double percentile(std::vector<double> v, double p)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	size_t i = (size_t)(p / 100.0 * (double)(v.size() - 1) + 0.5);
	return v[std::min(i, v.size() - 1)];
}

}  // namespace mroce_ns3
