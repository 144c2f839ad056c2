// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The simulated world: fabric + hosts + flows (each a pair of endpoints of
// one transport model) + the delivery checker + an application that posts
// messages.  Hosts pull packets from their endpoints whenever their NIC
// has room (line-rate serialisation happens on the uplink ports).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "delivery.h"
#include "net.h"
#include "transport.h"
#include "workload.h"

namespace sim {

enum class Model { Mroce, Gbn };
const char *model_name(Model m);

struct WorldCfg {
	Model model = Model::Mroce;
	TopoCfg topo;
	MroceCfg mroce;
	GbnCfg gbn;
	uint64_t seed = 1;
	Time bucket = 100 * kUs;	// goodput timeline resolution
	uint32_t nic_pkts = 8;		// host pulls while < nic_pkts/uplink queued
	// The NIC serves its active endpoints round robin; nic_lowest_first:
	// always the lowest endpoint id that has something to send (a
	// transmit loop that favours some QPs: fairness must then come from
	// the transport's windows).
	bool nic_lowest_first = false;
	// mroce: the endpoints of a host whose peer is the same host share one
	// congestion group (spec 9.4), as the kernel's cc_share does.
	bool cc_share = false;
};

class World;

// Workload: reacts to message delivery/completion by posting more.
using App = workload::Base<World>;

struct Totals {
	uint64_t bytes_posted = 0, bytes_placed = 0;
	uint64_t tx_data = 0, tx_retx = 0, tx_ctrl = 0, naks = 0, rtos = 0;
	uint64_t steers = 0, downs = 0, parse_err = 0;
	uint32_t flows = 0, flows_failed = 0, msgs = 0, msgs_ok = 0;
	double retx_ratio() const
	{
		return tx_data ? (double)tx_retx / (double)tx_data : 0;
	}
};

class World final : public HostSink, public AppSink {
public:
	explicit World(const WorldCfg &cfg);
	~World() override;

	uint32_t add_flow(uint32_t src, uint32_t dst);
	void post(uint32_t flow, uint32_t len);
	void at(Time t, std::function<void()> fn);
	// Run until the app is done (true) or simulated time t_end (false).
	bool run(App &app, Time t_end);

	Time now() const { return fab.now; }
	uint32_t hosts() const { return (uint32_t)fab.host_node.size(); }
	Totals totals() const;
	std::vector<double> flow_fcts_us() const;	// per completed flow
	std::vector<double> msg_fcts_us() const;	// per completed message

	// Delivery checker verdict: "" when every posted byte of every
	// completed message was placed exactly once with the right content.
	std::string delivery_errors() const;

	Fabric fab;
	WorldCfg cfg;
	std::vector<Flow> flows;
	std::vector<std::unique_ptr<Endpoint>> eps;
	Delivery delivery;			// the checker; goodput timeline
	uint64_t timer_spins = 0;
	uint64_t events = 0;
	bool check_every_call = false;

	// HostSink
	void host_rx(uint32_t host, uint32_t pkt) override;
	void host_nic_idle(uint32_t host) override;
	// AppSink
	void placed(uint32_t flow, uint32_t msg, uint32_t off, uint32_t len,
		    bool pattern_ok) override;
	void completed(uint32_t flow, uint32_t msg, uint32_t status) override;
	void protocol_error(const char *what) override;
	void kick(uint32_t ep) override;

private:
	struct Notice {
		bool rx;
		uint32_t flow, msg;
	};
	void activate(uint32_t ep);
	void pump(uint32_t host);
	void resched(uint32_t ep);
	void drain();

	App *app_ = nullptr;
	std::vector<std::deque<uint32_t>> active_;	// per host
	std::vector<uint8_t> is_active_;
	std::vector<Time> sched_;
	std::vector<std::function<void()>> actions_;
	std::vector<Notice> notices_;
	std::vector<std::pair<uint32_t, uint32_t>> deferred_posts_;
	bool in_drain_ = false;
	uint64_t nic_budget_ = 0;
	// cc_share: the group of (host, peer host)
	std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<mroce_cc_group>> groups_;
};

double percentile(std::vector<double> v, double p);

}  // namespace sim
