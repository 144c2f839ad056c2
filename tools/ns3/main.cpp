// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mroce_ns3: scenarios of the ns-3 model of mroce (tools/ns3/README.md).
//   mroce_ns3 <scenario> [--out DIR] [--seed N] [--hosts N] [--bytes B]
//             [--loss PCT] [--transports mroce,gbn,dctcp,cubic,bbr] [--seeds K]
// Scenarios: bulk incast loss burst alltoall allreduce plane linkfail scale
// regress
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "scenario.h"	// tools/sim: options, CSV, loss per link
#include "workloads.h"

using namespace mroce_ns3;
using namespace sim::scenario;

namespace {

constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;

struct Opts {
	std::string out = ".";
	uint64_t seed = 1;
	uint32_t hosts = 0;		// 0: the scenario's default
	uint32_t flows = 8;		// bulk: cross-leaf flows
	uint32_t group = 0;		// alltoall: hosts per all-to-all group (0: all)
	uint32_t seeds = 1;		// bulk, loss: seeds seed..seed+seeds-1
	uint32_t paths = 0;		// mroce paths per connection (0: the scenario's)
	uint64_t bytes = 0;
	double loss = -1;
	std::vector<std::string> transports;
	bool quick = false;
};

ModelCfg model_cfg(const std::string &t, uint64_t seed)
{
	ModelCfg c;
	c.seed = seed;
	if (t == "mroce")
		c.kind = Kind::Mroce;
	else if (t == "gbn")
		c.kind = Kind::Gbn;
	else if (t == "dctcp" || t == "cubic" || t == "bbr" || t == "newreno") {
		c.kind = Kind::Tcp;
		c.tcp_cc = t;
	} else {
		throw std::invalid_argument("unknown transport " + t);
	}
	return c;
}

TopoCfg leaf_spine(uint32_t leaves, uint32_t spines, uint32_t hpl, uint32_t planes = 1,
		   double gbps = 100)
{
	TopoCfg t;
	t.leaves = leaves;
	t.spines = spines;
	t.hosts_per_leaf = hpl;
	t.planes = planes;
	for (LinkCfg *l : {&t.host_link, &t.fabric_link}) {
		l->gbps = gbps;
		// buffer and marking threshold scale with the rate (100G:
		// 512 KiB, K = 80 KiB, as tools/sim)
		l->qcap_bytes = (uint32_t)(512 * 1024 * gbps / 100);
		l->ecn_k_bytes = (uint32_t)(80 * 1024 * gbps / 100);
	}
	return t;
}

// A topology of at least n hosts: leaves of up to 32 hosts, as many
// spines as hosts per leaf (non-blocking).
TopoCfg topo_for(uint32_t n)
{
	uint32_t hpl = n <= 16 ? 4 : n <= 64 ? 8 : n <= 256 ? 16 : 32;
	uint32_t leaves = (n + hpl - 1) / hpl;
	return leaf_spine(leaves, hpl, hpl);
}

struct Result {
	std::string scenario, transport;
	uint32_t hosts = 0, flows = 0;
	double loss_pct = 0;
	uint64_t bytes = 0;
	double completion_us = 0, goodput_gbps = 0, fct_p50_us = 0, fct_p99_us = 0;
	double retx_ratio = 0;
	uint64_t rtos = 0, ce_marks = 0, qdrops = 0, loss_drops = 0;
	uint32_t flows_failed = 0;
	bool finished = false;
	std::string delivery;	// "" = clean
	uint64_t events = 0;
	double wall_s = 0, sim_ms = 0;
	std::vector<uint64_t> timeline;
	uint64_t plane_tx[4] = {0, 0, 0, 0};
	uint64_t steers = 0, downs = 0;
	uint64_t seed = 0;
};

const char *kCsvHeader =
	"scenario,transport,hosts,flows,loss_pct,bytes,completion_us,goodput_gbps,"
	"fct_p50_us,fct_p99_us,retx_ratio,rtos,ce_marks,queue_drops,loss_drops,"
	"flows_failed,finished,delivery_ok,events,wall_s,sim_ms,events_per_s,wall_s_per_sim_ms,seed";

std::string csv_row(const Result &r)
{
	char b[1024];
	snprintf(b, sizeof b,
		 "%s,%s,%u,%u,%.2f,%llu,%.1f,%.2f,%.1f,%.1f,%s,%s,%llu,%llu,%llu,%u,%d,%d,%llu,%.2f,%.3f,%.0f,%.4f,%llu",
		 r.scenario.c_str(), r.transport.c_str(), r.hosts, r.flows, r.loss_pct,
		 (unsigned long long)r.bytes, r.completion_us, r.goodput_gbps, r.fct_p50_us,
		 r.fct_p99_us,
		 r.transport == "mroce" || r.transport == "gbn"
			 ? std::to_string(r.retx_ratio).substr(0, 7).c_str()
			 : "n/a",
		 r.transport == "mroce" || r.transport == "gbn" ? std::to_string(r.rtos).c_str()
								: "n/a",
		 (unsigned long long)r.ce_marks, (unsigned long long)r.qdrops,
		 (unsigned long long)r.loss_drops, r.flows_failed, r.finished,
		 r.delivery.empty(), (unsigned long long)r.events, r.wall_s, r.sim_ms,
		 r.wall_s > 0 ? (double)r.events / r.wall_s : 0.0,
		 r.sim_ms > 0 ? r.wall_s / r.sim_ms : 0.0, (unsigned long long)r.seed);
	return b;
}

// Events during a run: (time, action on the fabric).
using Action = std::pair<uint64_t, std::function<void(Fabric &)>>;

struct RunSpec {
	std::string scenario, transport;
	TopoCfg topo;
	double loss_pct = 0;
	uint64_t seed = 1;
	uint64_t t_end = 1000 * kMs;
	std::vector<Action> actions;
	std::function<std::unique_ptr<Workload>()> workload;
	bool check_every_call = false;
	uint32_t mroce_paths = 16;
};

Result run(const RunSpec &s)
{
	ns3::RngSeedManager::SetSeed((uint32_t)(s.seed % 0xffffffffu) + 1);
	ModelCfg mc = model_cfg(s.transport, s.seed);
	mc.mroce.num_paths = s.mroce_paths;
	if (mc.kind == Kind::Tcp)
		configure_tcp(mc);
	TopoCfg t = s.topo;
	t.seed = s.seed;
	t.loss.p = s.loss_pct > 0 ? per_link(s.loss_pct / 100) : t.loss.p;
	Result r;
	{
		Fabric fab(t);
		Model m(fab, mc);
		m.check_every_call = s.check_every_call;
		for (const Action &a : s.actions) {
			Fabric *fp = &fab;
			auto fn = a.second;
			ns3::Simulator::Schedule(ns3::NanoSeconds((int64_t)a.first), [fp, fn] { fn(*fp); });
		}
		std::unique_ptr<Workload> w = s.workload();
		r.finished = m.run(*w, s.t_end);
		r.scenario = s.scenario;
		r.transport = s.transport;
		r.seed = s.seed;
		r.hosts = fab.hosts();
		r.flows = (uint32_t)m.flows.size();
		r.loss_pct = s.loss_pct;
		Totals tt = m.totals();
		r.bytes = tt.bytes_placed;
		uint64_t t_last = 0;
		for (const FlowRec &f : m.flows)
			for (const MsgRec &msg : f.msgs)
				if (msg.t_rx != kNever)
					t_last = std::max(t_last, msg.t_rx);
		r.completion_us = (double)t_last / 1e3;
		r.goodput_gbps = t_last ? (double)tt.bytes_placed * 8 / (double)t_last : 0;
		std::vector<double> fct = m.flow_fcts_us();
		r.fct_p50_us = percentile(fct, 50);
		r.fct_p99_us = percentile(fct, 99);
		r.retx_ratio = tt.retx_ratio();
		r.rtos = tt.rtos;
		r.steers = tt.steers;
		r.downs = tt.downs;
		r.ce_marks = fab.ce_marks();
		r.qdrops = fab.queue_drops();
		r.loss_drops = fab.loss_drops();
		r.flows_failed = tt.flows_failed;
		r.delivery = m.delivery_errors();
		r.events = m.events;
		r.wall_s = m.wall_s;
		r.sim_ms = (double)m.now() / 1e6;
		r.timeline = m.delivery.timeline;
		for (int p = 0; p < 4 && p < (int)t.planes; p++)
			r.plane_tx[p] = fab.plane_tx_pkts(p);
	}
	ns3::Simulator::Destroy();
	fprintf(stderr, "  %-10s %-7s hosts %u flows %u loss %.1f%%: %.1f us, %.1f Gb/s%s%s, %llu ev, %.1f s wall\n",
		s.scenario.c_str(), s.transport.c_str(), r.hosts, r.flows, r.loss_pct,
		r.completion_us, r.goodput_gbps, r.finished ? "" : " UNFINISHED",
		r.delivery.empty() ? "" : (" DELIVERY: " + r.delivery).c_str(),
		(unsigned long long)r.events, r.wall_s);
	return r;
}

std::vector<std::string> transports(const Opts &o, std::vector<std::string> def)
{
	return o.transports.empty() ? def : o.transports;
}

const std::vector<std::string> kAll = {"mroce", "gbn", "dctcp", "cubic", "bbr"};

// Cross-leaf flows i -> i + hosts/2 of a 16-host leaf-spine.
std::function<std::unique_ptr<Workload>()> bulk_cross(uint32_t hosts, uint32_t nflows, uint64_t bytes)
{
	return [=] {
		std::vector<Bulk::Spec> v;
		for (uint32_t i = 0; i < nflows; i++)
			v.push_back({i, (i + hosts / 2) % hosts, bytes, 1u << 20, 4});
		return std::make_unique<Bulk>(v);
	};
}

// Ring all-reduce over n hosts of topo_for(n), `bytes` per rank; ranks
// striped over the leaves so every ring hop crosses the spines.
RunSpec ring_allreduce(const std::string &scenario, const std::string &transport, uint32_t n,
		       uint64_t bytes, uint64_t seed)
{
	RunSpec s;
	s.scenario = scenario;
	s.transport = transport;
	s.topo = topo_for(n);
	s.seed = seed;
	s.t_end = 5000 * kMs;
	TopoCfg tp = s.topo;
	s.workload = [=] {
		return std::make_unique<RingAllReduce>(striped_ranks(n, tp.leaves, tp.hosts_per_leaf),
						       (uint32_t)(bytes / n) & ~7u);
	};
	return s;
}

// ------------------------------------------------------------ scenarios

void sc_bulk(const Opts &o)
{
	Csv csv(o.out + "/bulk.csv", kCsvHeader);
	uint64_t bytes = o.bytes ? o.bytes : (o.quick ? 4 : 32) << 20;
	// Several seeds: ECMP collisions of single-path transports differ
	// from seed to seed (the salts change).
	for (const std::string &t : transports(o, kAll))
		for (uint64_t seed = o.seed; seed < o.seed + o.seeds; seed++) {
			RunSpec s;
			s.scenario = "bulk";
			s.transport = t;
			s.topo = leaf_spine(4, 4, 4);
			s.loss_pct = std::max(0.0, o.loss);
			s.seed = seed;
			s.workload = bulk_cross(16, o.flows, bytes);
			csv.line(csv_row(run(s)));
		}
}

void sc_loss(const Opts &o)
{
	Csv csv(o.out + "/loss.csv", kCsvHeader);
	uint64_t bytes = o.bytes ? o.bytes : (o.quick ? 4 : 16) << 20;
	std::vector<double> losses = o.loss >= 0 ? std::vector<double>{o.loss}
						 : std::vector<double>{0, 0.1, 1, 2, 5, 10};
	for (const std::string &t : transports(o, {"mroce", "gbn", "dctcp", "cubic"}))
		for (double l : losses)
		for (uint64_t seed = o.seed; seed < o.seed + o.seeds; seed++) {
			RunSpec s;
			s.scenario = "loss";
			s.transport = t;
			s.topo = leaf_spine(4, 4, 4);
			s.loss_pct = l;
			s.seed = seed;
			s.t_end = 500 * kMs;
			s.workload = bulk_cross(16, 8, bytes);
			csv.line(csv_row(run(s)));
		}
}

// N:1 incast, every sender `bytes`, on the smallest leaf-spine with
// N + 1 hosts.
void sc_incast(const Opts &o)
{
	Csv csv(o.out + "/incast.csv", kCsvHeader);
	uint64_t bytes = o.bytes ? o.bytes : 1 << 20;
	for (uint32_t n : {15u, 63u})
		for (const std::string &t : transports(o, kAll)) {
			RunSpec s;
			s.scenario = "incast" + std::to_string(n);
			s.transport = t;
			s.topo = topo_for(n + 1);
			s.loss_pct = std::max(0.0, o.loss);
			s.seed = o.seed;
			s.t_end = 500 * kMs;
			s.workload = [=] {
				std::vector<Bulk::Spec> v;
				// 256 KiB WRITEs, 4 outstanding, as tools/sim's fct
				for (uint32_t i = 1; i <= n; i++)
					v.push_back({i, 0, bytes, 256u << 10, 4});
				return std::make_unique<Bulk>(v);
			};
			csv.line(csv_row(run(s)));
		}
}

// All-to-all (MoE dispatch): every host sends `bytes` to every other host
// of its group (64 KiB WRITEs, 4 outstanding, as tools/sim's fct), all at
// once.  --group G splits the hosts into n/G expert-parallel groups of G,
// group g = {g, g + n/G, g + 2n/G, ...}, so a group spans many leaves and
// its traffic crosses the spines; G = n (default) is one full all-to-all.
void sc_alltoall(const Opts &o)
{
	uint32_t n = o.hosts ? o.hosts : 16;
	uint32_t g = o.group ? o.group : n;
	if (n % g)
		throw std::invalid_argument("--group must divide --hosts");
	Csv csv(o.out + (g == n ? "/alltoall.csv" : "/alltoall_groups.csv"), kCsvHeader);
	uint64_t bytes = o.bytes ? o.bytes : 256 << 10;
	for (const std::string &t : transports(o, {"mroce", "gbn", "dctcp", "cubic"})) {
		RunSpec s;
		s.scenario = g == n ? "alltoall" : "alltoall_g" + std::to_string(g);
		s.transport = t;
		s.topo = topo_for(n);
		s.loss_pct = std::max(0.0, o.loss);
		s.seed = o.seed;
		s.t_end = 1000 * kMs;
		// 10^4 connections and more: 4 paths each keeps memory in bounds
		s.mroce_paths = o.paths ? o.paths : (uint64_t)n * (g - 1) > 4096 ? 4 : 16;
		s.workload = [=] {
			const uint32_t groups = n / g;
			std::vector<Bulk::Spec> v;
			for (uint32_t h = 0; h < n; h++)
				for (uint32_t j = 1; j < g; j++) {
					uint32_t k = (h / groups + j) % g;	// peer's index in the group
					v.push_back({h, h % groups + k * groups, bytes,
						     (uint32_t)std::min<uint64_t>(bytes, 64 << 10), 4});
				}
			return std::make_unique<Bulk>(v);
		};
		csv.line(csv_row(run(s)));
	}
}

// Ring all-reduce over n hosts, `bytes` per rank; ranks striped over the
// leaves so every ring hop crosses the spines.
void sc_allreduce(const Opts &o)
{
	Csv csv(o.out + "/allreduce.csv", kCsvHeader);
	uint32_t n = o.hosts ? o.hosts : 64;
	uint64_t bytes = o.bytes ? o.bytes : 16ull << 20;
	std::vector<double> losses = o.loss >= 0 ? std::vector<double>{o.loss}
						 : std::vector<double>{0, 1};
	for (const std::string &t : transports(o, {"mroce", "gbn", "dctcp", "cubic"}))
		for (double l : losses) {
			RunSpec s = ring_allreduce("allreduce", t, n, bytes, o.seed);
			s.loss_pct = l;
			csv.line(csv_row(run(s)));
		}
}

// A failure during 16 bulk flows i -> i+4: down at 2 ms, back at 8 ms;
// CSV row per transport and the goodput timeline (100 us buckets).
void failure_runs(const Opts &o, const std::string &name, const TopoCfg &topo,
		  std::function<void(Fabric &, bool up)> set_up)
{
	Csv csv(o.out + "/" + name + ".csv", kCsvHeader);
	Csv tl(o.out + "/" + name + "_timeline.csv", "transport,t_ms,goodput_gbps");
	uint64_t bytes = o.bytes ? o.bytes : 96ull << 20;
	for (const std::string &t : transports(o, {"mroce", "gbn", "dctcp", "cubic"})) {
		RunSpec s;
		s.scenario = name;
		s.transport = t;
		s.topo = topo;
		s.seed = o.seed;
		s.t_end = 200 * kMs;
		s.actions.push_back({2 * kMs, [set_up](Fabric &f) { set_up(f, false); }});
		s.actions.push_back({8 * kMs, [set_up](Fabric &f) { set_up(f, true); }});
		s.workload = [=] {
			std::vector<Bulk::Spec> v;
			for (uint32_t i = 0; i < 16; i++)
				v.push_back({i, (i + 4) % 16, bytes, 1u << 20, 4});
			return std::make_unique<Bulk>(v);
		};
		Result r = run(s);
		csv.line(csv_row(r));
		for (size_t b = 0; b < r.timeline.size(); b++) {
			char line[128];
			snprintf(line, sizeof line, "%s,%.1f,%.2f", t.c_str(), (double)b * 0.1,
				 (double)r.timeline[b] * 8 / 100e3);
			tl.line(line);
		}
	}
}

// Four planes (leaf-spine each, 25G links), every host one uplink per
// plane; plane 1 black-holed from 2 ms to 8 ms.
void sc_plane(const Opts &o)
{
	failure_runs(o, "plane", leaf_spine(4, 4, 4, 4, 25),
		     [](Fabric &f, bool up) { f.set_plane_up(1, up); });
}

// One 100G plane; the link leaf0 - spine1 black-holed from 2 ms to 8 ms.
void sc_linkfail(const Opts &o)
{
	failure_runs(o, "linkfail", leaf_spine(4, 4, 4), [](Fabric &f, bool up) {
		f.set_link_up(f.leaf_node[0], f.spine_node[1], up);
	});
}

// Bursty loss: Gilbert-Elliott on every link (good -> bad 0.2% per packet,
// bad -> good 10%, so ~2% of the time bad, bursts of ~10 packets; a bad
// link loses half its packets): ~1% per link, ~3.9% end to end; the bulk
// workload of `loss`.
void sc_burst(const Opts &o)
{
	Csv csv(o.out + "/burst.csv", kCsvHeader);
	uint64_t bytes = o.bytes ? o.bytes : 32ull << 20;
	for (const std::string &t : transports(o, {"mroce", "gbn", "dctcp", "cubic"})) {
		RunSpec s;
		s.scenario = "burst";
		s.transport = t;
		s.topo = leaf_spine(4, 4, 4);
		s.topo.loss.ge_p_gb = 0.002;
		s.topo.loss.ge_p_bg = 0.1;
		s.topo.loss.ge_loss_bad = 0.5;
		s.seed = o.seed;
		s.t_end = 1000 * kMs;
		s.workload = bulk_cross(16, 8, bytes);
		Result r = run(s);
		double link = 0.002 / (0.002 + 0.1) * 0.5;
		r.loss_pct = (1 - std::pow(1 - link, 4)) * 100;	// mean, end to end
		csv.line(csv_row(r));
	}
}

// Wall-clock cost vs hosts (ring all-reduce, 1 MiB per rank, mroce and
// DCTCP): events/s and wall seconds per simulated millisecond.
void sc_scale(const Opts &o)
{
	Csv csv(o.out + "/scale.csv", kCsvHeader);
	std::vector<uint32_t> ns = o.hosts ? std::vector<uint32_t>{o.hosts}
					   : std::vector<uint32_t>{16, 64, 256, 1024};
	uint64_t bytes = o.bytes ? o.bytes : 4ull << 20;
	for (uint32_t n : ns)
		for (const std::string &t : transports(o, {"mroce", "dctcp"}))
			csv.line(csv_row(run(ring_allreduce("scale", t, n, bytes, o.seed))));
}

// ------------------------------------------------------------ regression

int g_fail = 0;
void check(bool ok, const std::string &what)
{
	printf("  %s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
	g_fail += !ok;
}

std::string fmt(const char *f, double a, double b = 0)
{
	char buf[256];
	snprintf(buf, sizeof buf, f, a, b);
	return buf;
}

int sc_regress(const Opts &o)
{
	const uint64_t mib = 1 << 20;
	// 4 cross-leaf flows of `bytes` on 8 hosts, 2 spines
	auto small_spec = [&](const std::string &t, double loss, uint64_t bytes) {
		RunSpec s;
		s.scenario = "regress";
		s.transport = t;
		s.topo = leaf_spine(2, 2, 4);
		s.loss_pct = loss;
		s.seed = o.seed;
		s.t_end = 200 * kMs;
		s.workload = [=] {
			std::vector<Bulk::Spec> v;
			for (uint32_t i = 0; i < 4; i++)
				v.push_back({i, i + 4, bytes, (uint32_t)mib, 4});
			return std::make_unique<Bulk>(v);
		};
		return s;
	};
	auto small = [&](const std::string &t, double loss, uint64_t bytes) {
		return run(small_spec(t, loss, bytes));
	};

	printf("regress 1: mroce over ns-3 UDP/IP, lossless, 4 cross-leaf flows\n");
	Result a = small("mroce", 0, 4 * mib);
	check(a.finished && a.flows_failed == 0, "all flows completed");
	check(a.delivery.empty(), "delivery checker clean (" + a.delivery + ")");
	check(a.bytes == 16 * mib, "bytes placed == bytes posted");
	// 4 flows share 2 x 100G leaf uplinks: at most 200 Gb/s
	check(a.goodput_gbps > 120 && a.goodput_gbps <= 200,
	      fmt("aggregate %.1f Gb/s in (120, 200]", a.goodput_gbps));

	printf("regress 2: mroce, 2%% random loss, invariants checked after every core call\n");
	{
		RunSpec s = small_spec("mroce", 2, 2 * mib);
		s.check_every_call = true;
		Result b = run(s);
		check(b.finished && b.flows_failed == 0, "all flows completed");
		check(b.delivery.empty(), "exactly once, pattern and invariants hold (" + b.delivery + ")");
		check(b.loss_drops > 0 && b.retx_ratio > 0.005,
		      fmt("the fabric dropped packets and mroce retransmitted (%.4f)", b.retx_ratio));
	}

	printf("regress 2b: mroce, Gilbert-Elliott bursty loss, invariants checked\n");
	{
		RunSpec s = small_spec("mroce", 0, 2 * mib);
		s.topo.loss.ge_p_gb = 0.005;
		s.topo.loss.ge_p_bg = 0.2;
		s.topo.loss.ge_loss_bad = 0.5;
		s.check_every_call = true;
		Result b = run(s);
		check(b.finished && b.flows_failed == 0 && b.delivery.empty(),
		      "completes, exactly once, invariants hold (" + b.delivery + ")");
		check(b.loss_drops > 0, fmt("bursts dropped %.0f packets", (double)b.loss_drops));
	}

	printf("regress 3: 1%% loss hurts go-back-N more than mroce\n");
	Result m0 = small("mroce", 0, 4 * mib), m1 = small("mroce", 1, 4 * mib);
	Result g0 = small("gbn", 0, 4 * mib), g1 = small("gbn", 1, 4 * mib);
	check(m1.finished && g1.finished && m1.delivery.empty() && g1.delivery.empty(),
	      "both complete clean at 1% loss");
	double rm = m1.goodput_gbps / m0.goodput_gbps, rg = g1.goodput_gbps / g0.goodput_gbps;
	check(rm > rg, fmt("mroce keeps %.3f of its lossless goodput > go-back-N %.3f", rm, rg));

	printf("regress 4: ECN step marking in the queue discs; incast 7:1\n");
	for (std::string t : {"mroce", "dctcp"}) {
		RunSpec s;
		s.scenario = "regress";
		s.transport = t;
		s.topo = leaf_spine(2, 2, 4);
		s.seed = o.seed;
		s.t_end = 200 * kMs;
		s.workload = [=] {
			std::vector<Bulk::Spec> v;
			for (uint32_t i = 1; i < 8; i++)
				v.push_back({i, 0, 1 * mib, (uint32_t)mib, 1});
			return std::make_unique<Bulk>(v);
		};
		Result r = run(s);
		check(r.finished && r.delivery.empty() && r.bytes == 7 * mib,
		      t + ": incast completes, all bytes delivered");
		check(r.ce_marks > 0, t + ": the congested port CE-marked packets (" +
					      std::to_string(r.ce_marks) + ")");
		// 7 MiB through one 100G host link takes >= 587 us
		check(r.completion_us >= 587 && r.completion_us < 3000,
		      fmt(("%.0f us: not faster than the bottleneck allows, < 3 ms (" + t + ")").c_str(),
			  r.completion_us));
	}

	printf("regress 5: a plane fails: mroce moves off it, flows complete\n");
	{
		RunSpec s;
		s.scenario = "regress";
		s.transport = "mroce";
		s.topo = leaf_spine(2, 2, 4, 2, 100);	// 2 planes
		s.seed = o.seed;
		s.t_end = 200 * kMs;
		s.actions.push_back({300 * kUs, [](Fabric &f) { f.set_plane_up(1, false); }});
		// Late in the outage: packets black-holed vs packets the
		// hosts sent into the live plane, between 1.5 and 2.5 ms.
		auto snap = std::make_shared<std::vector<uint64_t>>();
		for (uint64_t t : {1500 * kUs, 2500 * kUs})
			s.actions.push_back({t, [snap](Fabric &f) {
						     snap->push_back(f.down_drops());
						     snap->push_back(f.plane_tx_pkts(0));
					     }});
		s.workload = [=] {
			std::vector<Bulk::Spec> v;
			for (uint32_t i = 0; i < 4; i++)
				v.push_back({i, i + 4, 16 * mib, (uint32_t)mib, 4});
			return std::make_unique<Bulk>(v);
		};
		Result r = run(s);
		check(r.finished && r.flows_failed == 0 && r.delivery.empty(),
		      "every flow completed clean across the outage");
		check(r.downs > 0 || r.steers > 0, "paths were declared down or steered");
		bool snapped = snap->size() == 4;
		double dead = snapped ? (double)((*snap)[2] - (*snap)[0]) : 1e9;
		double live = snapped ? (double)((*snap)[3] - (*snap)[1]) : 0;
		check(snapped && live > 1000 && dead < 0.01 * live,
		      fmt("1.5..2.5 ms: %.0f packets black-holed < 1%% of %.0f into the live plane",
			  dead, live));
	}

	printf("regress 6: determinism\n");
	Result a2 = small("mroce", 0, 4 * mib);
	check(a2.completion_us == a.completion_us && a2.events == a.events,
	      "same seed: identical completion time and event count");
	Result d1 = small("dctcp", 1, 2 * mib), d2 = small("dctcp", 1, 2 * mib);
	check(d1.finished && d1.completion_us == d2.completion_us && d1.events == d2.events,
	      "DCTCP at 1% loss: completes, identical twice");

	printf("regress: %d failure(s)\n", g_fail);
	return g_fail ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s bulk|loss|burst|incast|alltoall|allreduce|plane|linkfail|scale|regress "
				"[--out DIR] [--seed N] [--hosts N] [--bytes B] [--loss PCT] "
				"[--transports a,b] [--flows N] [--group G] [--seeds K] [--paths P] [--quick]\n", argv[0]);
		return 2;
	}
	std::string sc = argv[1];
	Opts o;
	Options opts;
	opts.bind("--out", o.out).bind("--seed", o.seed).bind("--hosts", o.hosts)
		.bind("--bytes", o.bytes).bind("--loss", o.loss).bind("--transports", o.transports)
		.bind("--paths", o.paths).bind("--seeds", o.seeds).bind("--group", o.group)
		.bind("--flows", o.flows).bind("--quick", o.quick);
	if (!opts.parse(argc, argv, 2))
		return 2;
	std::map<std::string, std::function<void(const Opts &)>> scs = {
		{"bulk", sc_bulk},	   {"loss", sc_loss},	    {"incast", sc_incast},
		{"alltoall", sc_alltoall}, {"allreduce", sc_allreduce}, {"plane", sc_plane},
		{"linkfail", sc_linkfail}, {"burst", sc_burst},
		{"scale", sc_scale},
	};
	if (sc == "regress")
		return sc_regress(o);
	auto it = scs.find(sc);
	if (it == scs.end()) {
		fprintf(stderr, "unknown scenario %s\n", sc.c_str());
		return 2;
	}
	it->second(o);
	return 0;
}
