// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Transports on the hosts of an ns-3 Fabric, behind one flow/message
// interface the workloads use:
//  * mroce: sim::MroceEp (the unchanged protocol core; packets are the
//    core's real bytes, ICRC included) sent with ns-3's UdpL4Protocol from
//    the core's per-path UDP source port to port 4792;
//  * gbn: sim::GbnEp, the go-back-N RoCEv2 model of tools/sim, its header
//    serialised into the UDP payload (port 4791);
//  * tcp: ns-3's own TCP sockets (DCTCP, Cubic, BBR, NewReno), one
//    connection per flow, messages as byte ranges of the stream.
// mroce and gbn hosts pull packets from their endpoints while their NIC
// (queue disc + device queue) holds fewer than nic_pkts packets per uplink.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "delivery.h"	// tools/sim: the delivery checker
#include "fabric.h"
#include "transport.h"	// tools/sim: MroceEp, GbnEp
#include "workload.h"	// tools/sim: workloads of both simulators

namespace mroce_ns3 {

enum class Kind { Mroce, Gbn, Tcp };

struct ModelCfg {
	Kind kind = Kind::Mroce;
	std::string tcp_cc = "dctcp";	// dctcp cubic bbr newreno
	sim::MroceCfg mroce;
	sim::GbnCfg gbn;
	uint32_t nic_pkts = 8;
	uint64_t seed = 1;
	uint64_t bucket_ns = 100000;	// goodput timeline resolution
};

// The transport's name as in the CSV files ("mroce", "gbn", "dctcp", ...).
std::string transport_name(const ModelCfg &c);
// TCP defaults (socket type, segment size, buffers, RTO); call before the
// Fabric is built.
void configure_tcp(const ModelCfg &c);

using sim::kNever;
using sim::MsgRec;

// A flow: its messages (sim::Flow, the delivery checker's record) and,
// for tcp, its socket.
struct FlowRec : sim::Flow {
	ns3::Ptr<ns3::Socket> tx_sock;
	uint64_t unsent = 0;
	bool connected = false;
};

class Model;

// Workload: reacts to message delivery/completion by posting more
// (workload.h of tools/sim).
using Workload = sim::workload::Base<Model>;

struct Totals {
	uint64_t bytes_posted = 0, bytes_placed = 0;
	uint64_t tx_data = 0, tx_retx = 0, tx_ctrl = 0, naks = 0, rtos = 0, steers = 0, downs = 0;
	uint64_t parse_err = 0;
	uint32_t flows = 0, flows_failed = 0;
	double retx_ratio() const { return tx_data ? (double)tx_retx / (double)tx_data : 0; }
};

class Model final : public sim::AppSink {
public:
	Model(Fabric &f, const ModelCfg &c);
	~Model() override;
	Model(const Model &) = delete;
	Model &operator=(const Model &) = delete;

	uint32_t add_flow(uint32_t src, uint32_t dst);
	void post(uint32_t flow, uint32_t len);
	// Run until the workload is done (true) or until simulated t_end_ns.
	bool run(Workload &w, uint64_t t_end_ns);
	uint64_t now() const;
	// fn at simulated time t_ns (>= now()).
	void at(uint64_t t_ns, std::function<void()> fn);

	Totals totals() const;
	std::vector<double> flow_fcts_us() const;
	std::vector<double> msg_fcts_us() const;
	// "" when every byte of every completed message arrived exactly once
	// with the right content (mroce: payload compared to the pattern).
	std::string delivery_errors() const;
	void mroce_paths(uint32_t ep, std::vector<sim::PathRow> &out) const
	{
		eps_.at(ep)->paths(out);
	}

	Fabric &fab;
	ModelCfg cfg;
	std::vector<FlowRec> flows;
	sim::Delivery delivery;		// the checker; goodput timeline
	uint64_t wrong_host = 0;
	uint64_t events = 0;		// ns-3 events executed by run()
	double wall_s = 0;
	bool check_every_call = false;

	// sim::AppSink
	void placed(uint32_t flow, uint32_t msg, uint32_t off, uint32_t len, bool ok) override;
	void completed(uint32_t flow, uint32_t msg, uint32_t status) override;
	void protocol_error(const char *what) override;

private:
	struct Host {
		ns3::Ptr<ns3::UdpL4Protocol> udp;
		ns3::Ptr<ns3::Socket> rx_sock;	// mroce 4792 / gbn 4791
		ns3::Ptr<ns3::Socket> listen;	// tcp
		std::deque<uint32_t> active;
		bool pump_pending = false;
	};
	struct EpTimer {
		uint64_t at = kNever;
		ns3::EventId ev;
	};
	struct Notice {
		bool rx;
		uint32_t flow, msg;
	};

	uint32_t mtu() const;
	void activate(uint32_t ep);
	void schedule_pump(uint32_t host);
	void pump(uint32_t host);
	void resched(uint32_t ep);
	void on_timer(uint32_t ep);
	void on_udp_rx(uint32_t host, ns3::Ptr<ns3::Socket> s);
	void send(uint32_t host, const sim::Packet &p);
	uint64_t nic_queued(uint32_t host) const;
	void msg_rx(uint32_t flow, uint32_t msg);	// tcp: a whole message arrived
	void drain();
	// tcp
	void tcp_listen(uint32_t host);
	void tcp_push(uint32_t flow);
	void tcp_recv(uint32_t flow, ns3::Ptr<ns3::Socket> s);

	std::vector<Host> hosts_;
	std::vector<std::unique_ptr<sim::Endpoint>> eps_;
	std::vector<uint8_t> is_active_;
	std::vector<EpTimer> timers_;
	std::vector<Notice> notices_;
	sim::Packet txp_, rxp_;
	std::vector<uint8_t> buf_;
	Workload *wl_ = nullptr;
	bool in_drain_ = false;
	// tcp: (src host, src port) -> flow; per flow received stream bytes
	std::unordered_map<uint64_t, uint32_t> tcp_by_port_;
	std::vector<uint64_t> tcp_rx_bytes_;
	std::vector<uint32_t> tcp_rx_msg_;
	std::vector<uint64_t> tcp_rx_end_;	// end offset of that message
};

double percentile(std::vector<double> v, double p);

}  // namespace mroce_ns3
