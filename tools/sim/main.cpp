// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mroce_sim: scenarios of the fabric simulator (see README.md).
//   mroce_sim <scenario> [--out DIR] [--seed N] [--quick]
// Scenarios: loss plane linkfail allreduce fct ecn scale ccgroup cca2a ccfair window
// regress ccregress
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "apps.h"
#include "scenario.h"
#include "world.h"

using namespace sim;
using namespace sim::scenario;

namespace {

struct Opts {
	std::string out = ".";
	uint64_t seed = 1;
	bool quick = false;
	uint32_t nodes = 64;
	uint64_t bytes = 0;
	std::string model = "both";
	double loss = -1;
};
uint32_t g_nic_pkts = 8;
uint32_t g_paths = 16;
uint32_t g_gbn_wnd = 64;
bool g_cc_share = false;	// --cc-share: congestion groups per host pair
uint32_t g_qps = 8;		// --qps: QPs per host pair (ccgroup, cca2a, ccfair)
uint32_t g_window = 0;		// --window: mroce DSN window (kernel `window`), 0: 1024
std::string g_order = "both";	// --order: cca2a's posting order, stagger|sync|both

double wall_now()
{
	using namespace std::chrono;
	return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void set_loss(World &w, double p_path)
{
	double q = per_link(p_path);
	for (auto &pt : w.fab.ports)
		pt.cfg.loss = q;
}

TopoCfg leaf_spine(uint32_t leaves, uint32_t spines, uint32_t hpl, uint32_t planes = 1,
		   double gbps = 100)
{
	TopoCfg t;
	t.leaves = leaves;
	t.spines = spines;
	t.hosts_per_leaf = hpl;
	t.planes = planes;
	t.host_link.gbps = t.fabric_link.gbps = gbps;
	// Buffer and marking threshold scale with the link rate.
	t.fabric_link.qcap = t.host_link.qcap = (uint64_t)(512 * 1024 * gbps / 100);
	t.fabric_link.ecn_k = t.host_link.ecn_k = (uint64_t)(80 * 1024 * gbps / 100);
	return t;
}

struct RunResult {
	Model model;
	double goodput_gbps = 0, fct_p50 = NAN, fct_p99 = NAN, mfct_p50 = NAN,
	       mfct_p99 = NAN;
	double wall_s = 0, sim_ms = 0;
	Totals tot;
	std::string errors;
	bool finished = false;
	uint64_t events = 0;
};

RunResult summarize(World &w, bool finished, double t0_wall)
{
	RunResult r;
	r.model = w.cfg.model;
	r.finished = finished;
	r.tot = w.totals();
	r.wall_s = wall_now() - t0_wall;
	r.sim_ms = (double)w.now() / 1e6;
	r.events = w.events;
	Time first = kNever, last = 0;
	for (const Flow &f : w.flows)
		for (const MsgRec &m : f.msgs) {
			first = std::min(first, m.t_post);
			if (m.completed)
				last = std::max(last, m.t_cmpl);
		}
	if (last > first && first != kNever)
		r.goodput_gbps = (double)r.tot.bytes_placed * 8 / (double)(last - first);
	auto f = w.flow_fcts_us();
	r.fct_p50 = percentile(f, 50);
	r.fct_p99 = percentile(f, 99);
	auto m = w.msg_fcts_us();
	r.mfct_p50 = percentile(m, 50);
	r.mfct_p99 = percentile(m, 99);
	r.errors = w.delivery_errors();
	if (finished && r.tot.bytes_placed != r.tot.bytes_posted && !r.tot.flows_failed)
		r.errors += (r.errors.empty() ? "" : "; ") + std::string("bytes missing");
	return r;
}

WorldCfg make_cfg(Model m, const TopoCfg &t, uint64_t seed)
{
	WorldCfg c;
	c.model = m;
	c.topo = t;
	c.seed = seed;
	c.nic_pkts = g_nic_pkts;
	c.mroce.num_paths = g_paths;
	c.gbn.wnd_max = g_gbn_wnd;
	c.cc_share = g_cc_share;
	c.mroce.snd_wnd = g_window;
	return c;
}

RunResult run_bulk(const WorldCfg &cfg, std::vector<BulkApp::Spec> specs, double loss,
		   Time t_end, std::function<void(World &)> setup = nullptr,
		   std::function<void(World &, RunResult &)> after = nullptr)
{
	double t0 = wall_now();
	World w(cfg);
	if (loss > 0)
		set_loss(w, loss);
	if (setup)
		setup(w);
	BulkApp app(std::move(specs));
	bool ok = w.run(app, t_end);
	RunResult r = summarize(w, ok, t0);
	if (after)
		after(w, r);
	return r;
}

// Control packets (ACKs, NAKs, probes) per data packet sent.
double ctrl_per_data(const RunResult &r)
{
	return r.tot.tx_data ? (double)r.tot.tx_ctrl / (double)r.tot.tx_data : 0.0;
}

void print(const char *tag, const RunResult &r)
{
	fprintf(stderr,
		"[%s] %s: goodput %.2f Gb/s fct p50 %.1f p99 %.1f us retx %.4f "
		"ctrl/data %.3f "
		"naks %llu rtos %llu steers %llu downs %llu failed %u/%u sim %.2f ms wall "
		"%.2f s events %llu%s%s%s\n",
		tag, model_name(r.model), r.goodput_gbps, r.fct_p50, r.fct_p99,
		r.tot.retx_ratio(),
		ctrl_per_data(r),
		(unsigned long long)r.tot.naks,
		(unsigned long long)r.tot.rtos, (unsigned long long)r.tot.steers,
		(unsigned long long)r.tot.downs, r.tot.flows_failed, r.tot.flows, r.sim_ms,
		r.wall_s, (unsigned long long)r.events, r.finished ? "" : " UNFINISHED",
		r.errors.empty() ? "" : " ERRORS: ", r.errors.c_str());
}

std::vector<Model> models(const Opts &o)
{
	if (o.model == "mroce")
		return {Model::Mroce};
	if (o.model == "gbn")
		return {Model::Gbn};
	return {Model::Mroce, Model::Gbn};
}

// ------------------------------------------------------------ loss sweep

std::vector<BulkApp::Spec> cross_leaf(uint32_t nflows, uint32_t offset, uint64_t bytes,
				      uint32_t msg, uint32_t depth = 4)
{
	std::vector<BulkApp::Spec> s;
	for (uint32_t i = 0; i < nflows; i++)
		s.push_back({i, i + offset, bytes, msg, depth, 0});
	return s;
}

void dump_paths(World &w, const std::string &path)
{
	Csv c(path, "flow,path,state,sport,tx_pkts,retx,lost,rtos,steers,downs,srtt_us,cwnd,ecn_ppm");
	for (uint32_t f = 0; f < w.flows.size(); f++) {
		std::vector<PathRow> rows;
		w.eps[w.flows[f].tx_ep]->paths(rows);
		for (const PathRow &p : rows)
			c.row("%u,%u,%s,%u,%llu,%llu,%llu,%llu,%llu,%llu,%.2f,%llu,%u", f, p.path,
			      p.state ? "down" : "up", p.sport, (unsigned long long)p.tx_pkts,
			      (unsigned long long)p.retx, (unsigned long long)p.lost,
			      (unsigned long long)p.rtos, (unsigned long long)p.steers,
			      (unsigned long long)p.downs, (double)p.srtt_ns / 1e3,
			      (unsigned long long)p.cwnd, p.ecn_ppm);
	}
}

void dump_links(World &w, const std::string &path)
{
	Csv c(path, "link,plane,tx_pkts,tx_data_pkts,tx_bytes,drop_queue,drop_loss,drop_down,ce_marks,max_queue_bytes");
	for (const Port &p : w.fab.ports)
		c.row("%s,%d,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu", p.name.c_str(), p.plane,
		      (unsigned long long)p.tx_pkts, (unsigned long long)p.tx_data_pkts,
		      (unsigned long long)p.tx_bytes, (unsigned long long)p.drop_q,
		      (unsigned long long)p.drop_loss, (unsigned long long)p.drop_down,
		      (unsigned long long)p.ce_marks, (unsigned long long)p.max_q);
}

int scen_loss(const Opts &o)
{
	const double losses[] = {0, 0.001, 0.01, 0.02, 0.05, 0.10};
	Csv c(o.out + "/loss.csv",
	      "model,loss_pct,goodput_gbps,ratio_to_lossless,fct_p50_us,fct_p99_us,"
	      "retx_ratio,naks,rtos,flows_failed,finished,delivery_ok,wall_s");
	uint64_t bytes = o.quick ? (2u << 20) : (32u << 20);
	TopoCfg t = leaf_spine(4, 4, 4);
	int bad = 0;
	for (Model m : models(o)) {
		double base = 0;
		for (double p : losses) {
			auto after = [&](World &w, RunResult &) {
				if (m == Model::Mroce && p == 0.01) {
					dump_paths(w, o.out + "/paths_loss1.csv");
					dump_links(w, o.out + "/links_loss1.csv");
				}
			};
			RunResult r = run_bulk(make_cfg(m, t, o.seed), cross_leaf(8, 8, bytes, 1 << 20),
					       p, 20 * 1000 * kMs, nullptr, after);
			print(("loss " + std::to_string(p * 100) + "%").c_str(), r);
			if (p == 0)
				base = r.goodput_gbps;
			bad += !r.errors.empty();
			c.row("%s,%.1f,%.3f,%.4f,%.1f,%.1f,%.5f,%llu,%llu,%u,%d,%d,%.2f",
			      model_name(m), p * 100, r.goodput_gbps,
			      base > 0 ? r.goodput_gbps / base : 0, r.fct_p50, r.fct_p99,
			      r.tot.retx_ratio(), (unsigned long long)r.tot.naks,
			      (unsigned long long)r.tot.rtos, r.tot.flows_failed, r.finished,
			      r.errors.empty(), r.wall_s);
		}
	}
	return bad ? 1 : 0;
}

// ------------------------------------------------------- plane failure

struct PlaneRun {
	std::vector<double> gbps;	// per bucket
	RunResult r;
	uint64_t late_dead_data = 0, late_total_data = 0;
	uint32_t paths_down_late = 0, paths_total = 0;	// senders, end of outage
};

PlaneRun plane_run(Model m, uint64_t seed, Time t_fail, Time t_up, Time t_end,
		   uint64_t bytes_per_flow, Time bucket, bool link_only = false)
{
	// 4 planes of 4 leaves x 4 spines, 16 hosts, 25 Gb/s links: each host
	// has 4 x 25 Gb/s uplinks.  link_only: one 100 Gb/s leaf-spine plane
	// and the link leaf0-spine1 fails instead of plane 1.
	TopoCfg t = link_only ? leaf_spine(4, 4, 4) : leaf_spine(4, 4, 4, 4, 25);
	WorldCfg cfg = make_cfg(m, t, seed);
	cfg.bucket = bucket;
	PlaneRun pr;
	double t0 = wall_now();
	World w(cfg);
	std::vector<BulkApp::Spec> specs;
	for (uint32_t i = 0; i < 16; i++)
		specs.push_back({i, (i + 4) % 16, bytes_per_flow, 1 << 20, 4, 0});
	auto fail = [&w, link_only](bool up) {
		if (!link_only) {
			w.fab.set_plane_up(1, up);
			return;
		}
		uint32_t l0 = UINT32_MAX, s1 = UINT32_MAX;
		for (uint32_t n = 0; n < w.fab.nodes.size(); n++) {
			if (w.fab.nodes[n].name == "p0l0")
				l0 = n;
			if (w.fab.nodes[n].name == "p0s1")
				s1 = n;
		}
		w.fab.set_link_up(l0, s1, up);
	};
	w.at(t_fail, [fail] { fail(false); });
	w.at(t_up, [fail] { fail(true); });
	// Late in the outage: how much data still goes into the dead plane?
	auto count = [&w](uint64_t &dead, uint64_t &all) {
		dead = all = 0;
		for (uint32_t h = 0; h < w.hosts(); h++)
			for (uint32_t p : w.fab.host_up[h]) {
				const Port &pt = w.fab.ports[p];
				all += pt.tx_data_pkts + pt.drop_down_data;
				if (pt.plane == 1)
					dead += pt.drop_down_data + pt.tx_data_pkts;
			}
	};
	uint64_t d0 = 0, a0 = 0, d1 = 0, a1 = 0;
	Time late = t_fail + (t_up - t_fail) / 2;
	w.at(late, [&] { count(d0, a0); });
	w.at(t_up - 1, [&] {
		count(d1, a1);
		for (const Flow &f : w.flows) {
			std::vector<PathRow> rows;
			w.eps[f.tx_ep]->paths(rows);
			for (const PathRow &r : rows) {
				pr.paths_total++;
				pr.paths_down_late += r.state != 0;
			}
		}
	});
	BulkApp app(specs);
	bool ok = w.run(app, t_end);
	pr.r = summarize(w, ok, t0);
	pr.late_dead_data = d1 - d0;
	pr.late_total_data = a1 - a0;
	size_t nb = (size_t)(std::min(t_end, w.now()) / bucket) + 1;
	for (size_t b = 0; b < nb; b++)
		pr.gbps.push_back(b < w.delivery.timeline.size()
					  ? (double)w.delivery.timeline[b] * 8 / (double)bucket
					  : 0);
	return pr;
}

double avg(const std::vector<double> &v, size_t a, size_t b)
{
	double s = 0;
	size_t n = 0;
	for (size_t i = a; i < b && i < v.size(); i++, n++)
		s += v[i];
	return n ? s / (double)n : 0;
}

int scen_plane(const Opts &o, bool link_only = false)
{
	const std::string tag = link_only ? "linkfail" : "plane";
	Time bucket = 250 * kUs, t_fail = 5 * kMs, t_up = 15 * kMs, t_end = 25 * kMs;
	if (o.quick)
		t_end = 20 * kMs;
	std::map<Model, PlaneRun> runs;
	for (Model m : models(o)) {
		runs[m] = plane_run(m, o.seed, t_fail, t_up, t_end, 0, bucket, link_only);
		print(tag.c_str(), runs[m].r);
	}
	Csv c(o.out + "/" + tag + ".csv", "t_ms,mroce_gbps,gbn_gbps");
	size_t nb = (size_t)(t_end / bucket);
	for (size_t b = 0; b < nb; b++) {
		auto v = [&](Model m) {
			return runs.count(m) && b < runs[m].gbps.size() ? runs[m].gbps[b] : NAN;
		};
		c.row("%.3f,%.3f,%.3f", (double)(b * bucket) / 1e6, v(Model::Mroce), v(Model::Gbn));
	}
	Csv s(o.out + "/" + tag + "_summary.csv",
	      "model,before_gbps,outage_gbps,after_gbps,min_bucket_outage_gbps,"
	      "flows_failed,late_outage_data_into_dead_plane_pct,paths_down_end_of_outage,"
	      "paths,errors");
	size_t bf = t_fail / bucket, bu = t_up / bucket, be = nb;
	for (auto &[m, pr] : runs) {
		double mn = 1e18;
		for (size_t b = bf; b < bu; b++)
			mn = std::min(mn, pr.gbps[b]);
		s.row("%s,%.2f,%.2f,%.2f,%.2f,%u,%.3f,%u,%u,%s", model_name(m), avg(pr.gbps, 4, bf),
		      avg(pr.gbps, bf + 8, bu), avg(pr.gbps, bu + 8, be), mn, pr.r.tot.flows_failed,
		      link_only ? NAN : pr.late_total_data ? 100.0 * (double)pr.late_dead_data / (double)pr.late_total_data : 0,
		      pr.paths_down_late, pr.paths_total, pr.r.errors.empty() ? "none" : pr.r.errors.c_str());
	}
	return 0;
}

// ------------------------------------------------------- all-reduce

struct ArResult {
	RunResult r;
	double t_ms = 0;
	uint32_t steps = 0;
};

ArResult allreduce_run(Model m, uint32_t n, uint64_t bytes, double loss, uint64_t seed)
{
	// n hosts in leaves of 8 (non-blocking: spines = hosts per leaf);
	// ranks are striped over leaves so ring neighbours cross the spines.
	uint32_t hpl = std::min<uint32_t>(8, n / 2);
	uint32_t leaves = n / hpl;
	TopoCfg t = leaf_spine(leaves, hpl, hpl);
	std::vector<uint32_t> rank_host = striped_ranks(n, leaves, hpl);
	uint32_t chunk = (uint32_t)(bytes / n) & ~7u;
	double t0 = wall_now();
	World w(make_cfg(m, t, seed));
	if (loss > 0)
		set_loss(w, loss);
	RingAllReduce app(rank_host, chunk);
	bool ok = w.run(app, 30ull * 1000 * kMs);
	ArResult a;
	a.r = summarize(w, ok, t0);
	a.t_ms = ok && !a.r.tot.flows_failed ? (double)app.t_done() / 1e6 : NAN;
	a.steps = app.steps();
	return a;
}

int scen_allreduce(const Opts &o)
{
	uint32_t n = o.nodes;
	uint64_t bytes = o.bytes ? o.bytes : (o.quick ? (4ull << 20) : (16ull << 20));
	std::vector<double> losses = {0, 0.001, 0.01};
	if (o.loss >= 0)
		losses = {o.loss};
	Csv c(o.out + "/allreduce.csv",
	      "model,nodes,bytes_per_node,loss_pct,completion_ms,step_fct_p50_us,"
	      "step_fct_p99_us,retx_ratio,flows_failed,delivery_ok,wall_s,events");
	int bad = 0;
	for (double p : losses)
		for (Model m : models(o)) {
			ArResult a = allreduce_run(m, n, bytes, p, o.seed);
			print(("allreduce loss " + std::to_string(p * 100) + "%").c_str(), a.r);
			fprintf(stderr, "    completion %.3f ms\n", a.t_ms);
			bad += !a.r.errors.empty();
			c.row("%s,%u,%llu,%.1f,%.3f,%.1f,%.1f,%.5f,%u,%d,%.2f,%llu", model_name(m), n,
			      (unsigned long long)bytes, p * 100, a.t_ms, a.r.mfct_p50, a.r.mfct_p99,
			      a.r.tot.retx_ratio(), a.r.tot.flows_failed, a.r.errors.empty(),
			      a.r.wall_s, (unsigned long long)a.r.events);
		}
	return bad ? 1 : 0;
}

// ------------------------------------------------------- incast, all-to-all

int scen_fct(const Opts &o)
{
	Csv c(o.out + "/fct.csv",
	      "workload,model,loss_pct,flows,goodput_gbps,fct_p50_us,fct_p99_us,retx_ratio,"
	      "flows_failed,delivery_ok,wall_s");
	TopoCfg t = leaf_spine(4, 4, 4);
	int bad = 0;
	for (double p : {0.0, 0.01}) {
		for (Model m : models(o)) {
			std::vector<BulkApp::Spec> inc;
			for (uint32_t i = 1; i < 16; i++)
				inc.push_back({i, 0, 1u << 20, 256u << 10, 4, 0});
			RunResult r = run_bulk(make_cfg(m, t, o.seed), inc, p, 20 * 1000 * kMs);
			print("incast15:1", r);
			bad += !r.errors.empty();
			c.row("incast15to1,%s,%.1f,%u,%.3f,%.1f,%.1f,%.5f,%u,%d,%.2f", model_name(m),
			      p * 100, r.tot.flows, r.goodput_gbps, r.fct_p50, r.fct_p99,
			      r.tot.retx_ratio(), r.tot.flows_failed, r.errors.empty(), r.wall_s);
			if (m == Model::Mroce && p == 0) {
				// incast vs the number of logical paths
				for (uint32_t np : {1u, 4u}) {
					WorldCfg pc = make_cfg(m, t, o.seed);
					pc.mroce.num_paths = np;
					RunResult rp = run_bulk(pc, inc, p, 20 * 1000 * kMs);
					print(("incast15:1 paths=" + std::to_string(np)).c_str(), rp);
					bad += !rp.errors.empty();
					c.row("incast15to1_paths%u,%s,%.1f,%u,%.3f,%.1f,%.1f,%.5f,%u,%d,%.2f", np,
					      model_name(m), p * 100, rp.tot.flows, rp.goodput_gbps, rp.fct_p50,
					      rp.fct_p99, rp.tot.retx_ratio(), rp.tot.flows_failed,
					      rp.errors.empty(), rp.wall_s);
				}
			}
			std::vector<BulkApp::Spec> a2a;
			uint32_t n = o.quick ? 8 : 16;
			for (uint32_t i = 0; i < n; i++)
				for (uint32_t j = 0; j < n; j++)
					if (i != j)
						a2a.push_back({i, j, 256u << 10, 64u << 10, 4, 0});
			r = run_bulk(make_cfg(m, t, o.seed), a2a, p, 20 * 1000 * kMs);
			print("alltoall", r);
			bad += !r.errors.empty();
			c.row("alltoall%u,%s,%.1f,%u,%.3f,%.1f,%.1f,%.5f,%u,%d,%.2f", n, model_name(m),
			      p * 100, r.tot.flows, r.goodput_gbps, r.fct_p50, r.fct_p99,
			      r.tot.retx_ratio(), r.tot.flows_failed, r.errors.empty(), r.wall_s);
		}
	}
	return bad ? 1 : 0;
}

// ------------------------------------------------------- congestion groups

using HostPair = std::pair<uint32_t, uint32_t>;

// k QPs (flows) for every (src, dst) of pairs, the pair's bytes split
// evenly over them (0: each streams), in WRITEs of at most msg bytes,
// depth outstanding per QP.  A world adds them in this order: the QPs of
// pairs[p] are flows p*k .. p*k+k-1.
std::vector<BulkApp::Spec> qp_specs(const std::vector<HostPair> &pairs, uint32_t k,
				    uint64_t pair_bytes, uint32_t msg, uint32_t depth = 4)
{
	std::vector<BulkApp::Spec> s;
	for (auto [src, dst] : pairs)
		for (uint32_t q = 0; q < k; q++)
			s.push_back({src, dst, pair_bytes / k, msg, depth, 0});
	return s;
}

// Completion time of each host pair of qp_specs(), us: from its first
// post to the last completion of its last QP.  Pairs with an unfinished
// QP are left out.
std::vector<double> pair_fcts_us(const World &w, uint32_t k)
{
	std::vector<double> v;
	for (size_t f0 = 0; f0 + k <= w.flows.size(); f0 += k) {
		Time first = kNever, last = 0;
		bool done = true;
		for (size_t f = f0; f < f0 + k && done; f++) {
			const Flow &fl = w.flows[f];
			done = !fl.msgs.empty() && fl.msgs_cmpl == fl.msgs.size();
			for (const MsgRec &m : fl.msgs) {
				first = std::min(first, m.t_post);
				last = std::max(last, m.t_cmpl);
			}
		}
		if (done)
			v.push_back((double)(last - first) / 1e3);
	}
	return v;
}

// Switch ports (not the host NICs' queues): tail drops, CE marks, the
// longest queue seen.
struct FabStats {
	uint64_t drops = 0, marks = 0, max_q = 0;
	uint64_t drops_down = 0;	// of drops: on ports into hosts
};

FabStats fab_stats(const World &w)
{
	FabStats s;
	for (const Port &p : w.fab.ports) {
		if (p.host_nic)
			continue;
		s.drops += p.drop_q;
		if (w.fab.nodes[p.to].is_host)
			s.drops_down += p.drop_q;
		s.marks += p.ce_marks;
		s.max_q = std::max(s.max_q, p.max_q);
	}
	return s;
}

double peak_rss_mib()
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_maxrss / 1024;
}

// 15:1 incast where each sender runs K QPs to the receiver (--qps, 8), the
// same bytes per sender split over them: private windows (every QP its own
// connection-level controller) against one congestion group per host pair
// (spec 9.4), and 1 QP per sender as the reference.  --bytes: per sender
// (4 MiB, 1 MiB with --quick), --loss: end-to-end loss.
RunResult ccgroup_incast(uint32_t qps, bool share, uint64_t per_sender, double loss, uint64_t seed)
{
	std::vector<HostPair> pairs;
	for (uint32_t i = 1; i < 16; i++)
		pairs.push_back({i, 0});
	WorldCfg cfg = make_cfg(Model::Mroce, leaf_spine(4, 4, 4), seed);
	cfg.cc_share = share;
	return run_bulk(cfg, qp_specs(pairs, qps, per_sender, 64u << 10), loss, 20 * 1000 * kMs);
}

int scen_ccgroup(const Opts &o)
{
	Csv c(o.out + "/ccgroup.csv",
	      "case,qps,cc_share,loss_pct,goodput_gbps,fct_p50_us,fct_p99_us,retx_ratio,rtos,"
	      "flows_failed,delivery_ok,wall_s");
	uint64_t per_sender = o.bytes ? o.bytes : o.quick ? 1u << 20 : 4u << 20;
	double loss = o.loss >= 0 ? o.loss : 0;
	struct Case {
		uint32_t qps;
		bool share;
	};
	int bad = 0;
	for (Case k : {Case{1, false}, Case{1, true}, Case{g_qps, false}, Case{g_qps, true}}) {
		RunResult r = ccgroup_incast(k.qps, k.share, per_sender, loss, o.seed);
		std::string tag = "incast15:1 qps=" + std::to_string(k.qps) +
				  (k.share ? " shared" : " private");
		print(tag.c_str(), r);
		bad += !r.errors.empty() || !r.finished;
		c.row("incast15to1,%u,%d,%.1f,%.3f,%.1f,%.1f,%.5f,%llu,%u,%d,%.2f", k.qps, k.share,
		      loss * 100, r.goodput_gbps, r.fct_p50, r.fct_p99, r.tot.retx_ratio(),
		      (unsigned long long)r.tot.rtos, r.tot.flows_failed, r.errors.empty(), r.wall_s);
	}
	return bad ? 1 : 0;
}

// All-to-all of n hosts, every ordered host pair moving pair_bytes over k
// QPs (64 KiB WRITEs, 4 outstanding per QP), in leaves of 8 hosts under 8
// spines (non-blocking, as allreduce).
struct A2aResult {
	RunResult r;
	double pair_p50 = NAN, pair_p99 = NAN, rss_mib = 0;
	FabStats fs;
	// every `step`: goodput, drops into hosts, the host pairs' mean
	// connection window (the group's, or the first QP's) and in flight
	struct Sample {
		double t_us, gbps, cwnd_kib, inflight_kib, srtt_us;
		uint64_t drops_down, marks, waiting;
	};
	std::vector<Sample> tl;
};

A2aResult a2a_run(uint32_t n, uint32_t k, bool share, uint64_t pair_bytes, double loss,
		  uint64_t seed, bool stagger)
{
	uint32_t hpl = std::min<uint32_t>(8, n / 2);
	std::vector<HostPair> pairs;
	// The order in which a host's QPs post, and so the order its NIC
	// serves them in (round robin).  stagger: host i's peers i+1, i+2,
	// ... (a pairwise-exchange order); else every host 0, 1, 2, ...,
	// so that all hosts start on the same peer (a synchronised incast).
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t d = 1; d < n; d++)
			pairs.push_back({i, stagger ? (i + d) % n : d - (d <= i)});
	WorldCfg cfg = make_cfg(Model::Mroce, leaf_spine(n / hpl, hpl, hpl), seed);
	cfg.cc_share = share;
	// 4 WRs outstanding per QP: 16 slots (the kernel's SQ depth sizes
	// them too) keep 10^5 connections in memory; nothing else changes.
	cfg.mroce.max_msgs = 16;
	A2aResult a;
	// the timeline: samples every 25 us for the first 4 ms
	const Time step = 25 * kUs;
	uint64_t last_bytes = 0;
	auto sample = [&a, &last_bytes, k, step](World &w) {
		A2aResult::Sample s{(double)w.now() / 1e3, 0, 0, 0, 0, 0, 0, 0};
		double srtt_sum = 0;
		uint32_t srtt_n = 0;
		uint64_t bytes = 0;
		for (const Flow &fl : w.flows)
			bytes += fl.bytes_placed;
		s.gbps = (double)(bytes - last_bytes) * 8 / (double)step;
		last_bytes = bytes;
		FabStats fs = fab_stats(w);
		s.drops_down = fs.drops_down;
		s.marks = fs.marks;
		uint32_t pairs = 0;
		for (size_t f0 = 0; f0 < w.flows.size(); f0 += k) {
			mroce_conn_info ci;
			if (!w.eps[w.flows[f0].tx_ep]->conn_info(ci))
				return;
			s.cwnd_kib += (double)ci.cwnd / 1024;
			s.inflight_kib +=
				(double)(ci.grp_members > 1 ? ci.grp_inflight : ci.inflight) / 1024;
			pairs++;
			std::vector<PathRow> rows;
			w.eps[w.flows[f0].tx_ep]->paths(rows);
			for (const PathRow &r : rows)
				if (r.srtt_ns) {
					srtt_sum += (double)r.srtt_ns / 1e3;
					srtt_n++;
				}
			for (size_t q = f0; q < f0 + k; q++) {
				mroce_conn_info qi;
				w.eps[w.flows[q].tx_ep]->conn_info(qi);
				s.waiting += qi.grp_wait;
			}
		}
		if (pairs) {
			s.cwnd_kib /= pairs;
			s.inflight_kib /= pairs;
		}
		s.srtt_us = srtt_n ? srtt_sum / srtt_n : 0;
		a.tl.push_back(s);
	};
	auto setup = [&sample, step](World &w) {
		for (Time t = step; t <= 4 * kMs; t += step)
			w.at(t, [&sample, &w] { sample(w); });
	};
	a.r = run_bulk(cfg, qp_specs(pairs, k, pair_bytes, 64u << 10), loss, 20 * 1000 * kMs,
		       setup, [&a, k](World &w, RunResult &) {
			       auto v = pair_fcts_us(w, k);
			       a.pair_p50 = percentile(v, 50);
			       a.pair_p99 = percentile(v, 99);
			       a.fs = fab_stats(w);
		       });
	a.rss_mib = peak_rss_mib();
	return a;
}

// All-to-all of --nodes hosts (64, 16 with --quick), --bytes per ordered
// host pair (256 KiB) over 1 QP, and over K (--qps, 8) QPs with private
// windows and with one congestion group per host pair.  --window and
// --loss apply.
int scen_cca2a(const Opts &o)
{
	Csv c(o.out + "/cca2a.csv",
	      "nodes,order,qps,cc_share,window,loss_pct,flows,goodput_gbps,pair_fct_p50_us,"
	      "pair_fct_p99_us,qp_fct_p50_us,qp_fct_p99_us,retx_ratio,rtos,queue_drops,ce_marks,"
	      "drops_into_hosts,max_queue_kib,flows_failed,finished,delivery_ok,sim_ms,events,wall_s,"
	      "peak_rss_mib");
	Csv tl(o.out + "/cca2a_timeline.csv",
	       "nodes,order,qps,cc_share,t_us,goodput_gbps,pair_cwnd_kib,pair_inflight_kib,qps_waiting,"
	       "drops_into_hosts,ce_marks,path_srtt_us");
	uint32_t n = o.quick ? 16 : o.nodes;
	uint64_t pair_bytes = o.bytes ? o.bytes : 256u << 10;
	double loss = o.loss >= 0 ? o.loss : 0;
	struct Case {
		uint32_t qps;
		bool share;
	};
	std::vector<bool> orders;
	if (g_order != "sync")
		orders.push_back(true);
	if (g_order != "stagger")
		orders.push_back(false);
	int bad = 0;
	for (bool stagger : orders) {
		for (Case k : {Case{1, false}, Case{1, true}, Case{g_qps, false}, Case{g_qps, true}}) {
			A2aResult a = a2a_run(n, k.qps, k.share, pair_bytes, loss, o.seed, stagger);
			const RunResult &r = a.r;
			const char *ord = stagger ? "stagger" : "sync";
			std::string tag = "alltoall" + std::to_string(n) + " " + ord + " qps=" +
					  std::to_string(k.qps) + (k.share ? " shared" : " private");
			print(tag.c_str(), r);
			fprintf(stderr, "    pair fct p50 %.1f p99 %.1f us, %llu drops (%llu into hosts), %llu marks, peak rss %.0f MiB\n",
				a.pair_p50, a.pair_p99, (unsigned long long)a.fs.drops, (unsigned long long)a.fs.drops_down,
				(unsigned long long)a.fs.marks, a.rss_mib);
			bad += !r.errors.empty() || !r.finished;
			for (const auto &x : a.tl)
				tl.row("%u,%s,%u,%d,%.0f,%.2f,%.2f,%.2f,%llu,%llu,%llu,%.1f", n, ord, k.qps,
				       k.share, x.t_us, x.gbps, x.cwnd_kib, x.inflight_kib,
				       (unsigned long long)x.waiting, (unsigned long long)x.drops_down,
				       (unsigned long long)x.marks, x.srtt_us);
			c.row("%u,%s,%u,%d,%u,%.1f,%u,%.3f,%.1f,%.1f,%.1f,%.1f,%.5f,%llu,%llu,%llu,%llu,%.1f,%u,"
			      "%d,%d,%.3f,%llu,%.2f,%.0f",
			      n, ord, k.qps, k.share, g_window ? g_window : 1024, loss * 100, r.tot.flows,
			      r.goodput_gbps, a.pair_p50, a.pair_p99, r.fct_p50, r.fct_p99,
			      r.tot.retx_ratio(), (unsigned long long)r.tot.rtos,
			      (unsigned long long)a.fs.drops, (unsigned long long)a.fs.marks,
			      (unsigned long long)a.fs.drops_down, (double)a.fs.max_q / 1024,
			      r.tot.flows_failed, r.finished, r.errors.empty(), r.sim_ms,
			      (unsigned long long)r.events, r.wall_s, a.rss_mib);
		}
	}
	return bad ? 1 : 0;
}

// Fairness: long-lived QPs (streams of 1 MiB WRITEs, 4 outstanding),
// measured over [warm, end) of simulated time in steps of `step`.
struct QpGroup {
	uint32_t src, dst, k;	// k QPs from host src to host dst
};

struct FairResult {
	std::vector<double> qp_gbps, grp_gbps;		// over the window
	std::vector<std::vector<double>> steps;		// [step][qp] Gb/s
	// Jain's index over the first group's QPs (the window, the worst
	// step), over every QP, over the groups' totals
	double jain_a = 0, jain_a_min = 0, jain_all = 0, jain_grps = 0, total_gbps = 0;
	double q_avg = 0, q_p99 = 0, q_max = 0;		// bottleneck queue, bytes
	uint64_t drops = 0, marks = 0, rtos = 0;
	double retx_ratio = 0;
	RunResult r;
};

double jain(const std::vector<double> &x)
{
	double s = 0, s2 = 0;
	for (double v : x) {
		s += v;
		s2 += v * v;
	}
	return s2 > 0 ? s * s / ((double)x.size() * s2) : 1;
}

// The groups' QPs in topology t; the bottleneck is the port from node
// `from` to node `to` (by name): its queue is sampled every 5 us, its
// drops and CE marks counted over the window.
FairResult fair_run(const TopoCfg &t, const std::vector<QpGroup> &groups, bool share,
		    bool lowest_first, const std::string &from, const std::string &to, Time warm,
		    Time end, Time step, uint64_t seed)
{
	WorldCfg cfg = make_cfg(Model::Mroce, t, seed);
	cfg.cc_share = share;
	cfg.nic_lowest_first = lowest_first;
	double t0 = wall_now();
	World w(cfg);
	uint32_t port = UINT32_MAX;
	for (const Port &p : w.fab.ports)
		if (w.fab.nodes[p.from].name == from && w.fab.nodes[p.to].name == to)
			port = p.id;
	if (port == UINT32_MAX)
		throw std::runtime_error("no port " + from + " -> " + to);
	std::vector<BulkApp::Spec> specs;
	std::vector<uint32_t> grp_of;
	for (uint32_t g = 0; g < groups.size(); g++)
		for (uint32_t q = 0; q < groups[g].k; q++) {
			specs.push_back({groups[g].src, groups[g].dst, 0, 1u << 20, 4, 0});
			grp_of.push_back(g);
		}
	size_t nq = specs.size(), ns = (size_t)((end - warm) / step);
	std::vector<std::vector<uint64_t>> placed(ns + 1, std::vector<uint64_t>(nq));
	for (size_t s = 0; s <= ns; s++)
		w.at(warm + s * step, [&w, &placed, s, nq] {
			for (size_t f = 0; f < nq; f++)
				placed[s][f] = w.flows[f].bytes_placed;
		});
	std::vector<uint64_t> qs;
	for (Time ts = warm; ts < end; ts += 5 * kUs)
		w.at(ts, [&w, &qs, port] { qs.push_back(w.fab.ports[port].q_bytes); });
	Totals tw;
	uint64_t d0 = 0, m0 = 0;
	w.at(warm, [&] {
		tw = w.totals();
		d0 = w.fab.ports[port].drop_q;
		m0 = w.fab.ports[port].ce_marks;
	});
	BulkApp app(specs);
	w.run(app, end);
	FairResult fr;
	fr.r = summarize(w, false, t0);
	double win_ns = (double)(ns * step);
	fr.grp_gbps.assign(groups.size(), 0);
	for (size_t f = 0; f < nq; f++) {
		double g = (double)(placed[ns][f] - placed[0][f]) * 8 / win_ns;
		fr.qp_gbps.push_back(g);
		fr.grp_gbps[grp_of[f]] += g;
		fr.total_gbps += g;
	}
	const uint32_t ka = groups[0].k;
	fr.jain_a = jain(std::vector<double>(fr.qp_gbps.begin(), fr.qp_gbps.begin() + ka));
	fr.jain_all = jain(fr.qp_gbps);
	fr.jain_grps = jain(fr.grp_gbps);
	fr.jain_a_min = 1;
	for (size_t s = 0; s < ns; s++) {
		std::vector<double> v;
		for (size_t f = 0; f < nq; f++)
			v.push_back((double)(placed[s + 1][f] - placed[s][f]) * 8 / (double)step);
		fr.jain_a_min = std::min(fr.jain_a_min, jain(std::vector<double>(v.begin(), v.begin() + ka)));
		fr.steps.push_back(std::move(v));
	}
	std::vector<double> qd(qs.begin(), qs.end());
	for (double q : qd)
		fr.q_avg += q / (double)qd.size();
	fr.q_p99 = percentile(qd, 99);
	fr.q_max = qd.empty() ? 0 : *std::max_element(qd.begin(), qd.end());
	fr.drops = w.fab.ports[port].drop_q - d0;
	fr.marks = w.fab.ports[port].ce_marks - m0;
	Totals te = w.totals();
	uint64_t data = te.tx_data - tw.tx_data;
	fr.retx_ratio = data ? (double)(te.tx_retx - tw.tx_retx) / (double)data : 0;
	fr.rtos = te.rtos - tw.rtos;
	return fr;
}

// The fairness cases of ccfair and ccregress, in three topologies:
//  Star    4 leaves x 4 spines, 100G; senders h4 (leaf 1) and h8 (leaf 2),
//          receiver h0 (leaf 0): the bottleneck is h0's downlink.
//  Fabric  2 leaves, 1 spine, 100G; h0 -> h2 and h1 -> h3: two host
//          pairs (different peers) share the link leaf 0 -> spine 0.
//  Slow    as Fabric with a 50G leaf-spine link: one host pair is held
//          by its congestion windows, not by its NIC.
enum class FairTopo { Star, Fabric, Slow };

struct FairCase {
	std::string name;
	FairTopo topo;
	std::vector<QpGroup> groups;
};

std::vector<FairCase> fair_cases(uint32_t k)
{
	std::vector<FairCase> v;
	v.push_back({"one_peer_nic", FairTopo::Star, {{4, 0, k}}});
	for (uint32_t n : {2u, 4u, k, 32u})
		v.push_back({"one_peer_50g", FairTopo::Slow, {{0, 2, n}}});
	v.push_back({"vs_one_qp", FairTopo::Star, {{4, 0, 1}, {8, 0, 1}}});
	v.push_back({"vs_one_qp", FairTopo::Star, {{4, 0, k}, {8, 0, 1}}});
	v.push_back({"two_groups", FairTopo::Star, {{4, 0, k}, {8, 0, k}}});
	v.push_back({"two_peers_fabric", FairTopo::Fabric, {{0, 2, 1}, {1, 3, 1}}});
	v.push_back({"two_peers_fabric", FairTopo::Fabric, {{0, 2, k}, {1, 3, 1}}});
	v.push_back({"two_peers_fabric", FairTopo::Fabric, {{0, 2, k}, {1, 3, k}}});
	return v;
}

FairResult fair_case_run(const FairCase &fc, bool share, Time warm, Time end, uint64_t seed,
			 bool lowest_first = false)
{
	if (fc.topo == FairTopo::Star)
		return fair_run(leaf_spine(4, 4, 4), fc.groups, share, lowest_first, "p0l0",
				"h" + std::to_string(fc.groups[0].dst), warm, end, 1 * kMs, seed);
	TopoCfg t = leaf_spine(2, 1, 2);
	if (fc.topo == FairTopo::Slow)
		t.fabric_link = leaf_spine(2, 1, 2, 1, 50).fabric_link;
	return fair_run(t, fc.groups, share, lowest_first, "p0l0", "p0s0", warm, end, 1 * kMs, seed);
}

// Steady-state fairness of long-lived QPs, private windows and shared
// (--cc-share is ignored: both run): fair_cases() with K = --qps; 2 ms
// warm-up, then 10 ms (--quick: 4 ms) in steps of 1 ms.  ccfair.csv:
// per case the groups' shares, Jain's index over the QPs (the whole
// window and the worst 1 ms step) and over the groups, the bottleneck's
// queue, drops and marks; ccfair_steps.csv: every QP's goodput per step.
int scen_ccfair(const Opts &o)
{
	Csv c(o.out + "/ccfair.csv",
	      "case,nic,qps_a,qps_b,cc_share,window,total_gbps,share_a,share_b,jain_groups,jain_qps_a,"
	      "jain_qps_a_min_1ms,jain_all_qps,qp_min_gbps,qp_max_gbps,queue_avg_kib,queue_p99_kib,"
	      "queue_max_kib,drops,ce_marks,retx_ratio,rtos,delivery_ok");
	Csv st(o.out + "/ccfair_steps.csv", "case,nic,qps_a,qps_b,cc_share,step_ms,qp,group,gbps");
	Time warm = 2 * kMs, end = warm + (o.quick ? 4 : 10) * kMs;
	int bad = 0;
	for (bool lowest : {false, true}) {
		for (const FairCase &fc : fair_cases(g_qps))
			for (bool share : {false, true}) {
				FairResult f = fair_case_run(fc, share, warm, end, o.seed, lowest);
				const char *nic = lowest ? "lowest" : "rr";
				uint32_t ka = fc.groups[0].k, kb = fc.groups.size() > 1 ? fc.groups[1].k : 0;
				double sa = f.total_gbps > 0 ? f.grp_gbps[0] / f.total_gbps : 0;
				double sb = kb && f.total_gbps > 0 ? f.grp_gbps[1] / f.total_gbps : 0;
				auto mm = std::minmax_element(f.qp_gbps.begin(), f.qp_gbps.end());
				fprintf(stderr,
					"[%s %s %u+%u %s] total %.2f Gb/s shares %.3f/%.3f jain A's qps %.4f (min 1 ms %.4f) "
					"all %.4f groups %.4f queue avg %.1f p99 %.1f KiB drops %llu marks %llu retx %.5f "
					"rtos %llu wall %.2f s%s%s\n",
					fc.name.c_str(), nic, ka, kb, share ? "shared" : "private", f.total_gbps, sa, sb,
					f.jain_a, f.jain_a_min, f.jain_all, f.jain_grps, f.q_avg / 1024, f.q_p99 / 1024,
					(unsigned long long)f.drops, (unsigned long long)f.marks, f.retx_ratio,
					(unsigned long long)f.rtos, f.r.wall_s, f.r.errors.empty() ? "" : " ERRORS: ",
					f.r.errors.c_str());
				bad += !f.r.errors.empty();
				c.row("%s,%s,%u,%u,%d,%u,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.1f,%.1f,%.1f,"
				      "%llu,%llu,%.5f,%llu,%d",
				      fc.name.c_str(), nic, ka, kb, share, g_window ? g_window : 1024, f.total_gbps, sa,
				      sb, f.jain_grps, f.jain_a, f.jain_a_min, f.jain_all, *mm.first, *mm.second,
				      f.q_avg / 1024, f.q_p99 / 1024, f.q_max / 1024, (unsigned long long)f.drops,
				      (unsigned long long)f.marks, f.retx_ratio, (unsigned long long)f.rtos,
				      f.r.errors.empty());
				for (size_t s = 0; s < f.steps.size(); s++) {
					uint32_t q = 0;
					for (uint32_t g = 0; g < fc.groups.size(); g++)
						for (uint32_t i = 0; i < fc.groups[g].k; i++, q++)
							st.row("%s,%s,%u,%u,%d,%.0f,%u,%u,%.3f", fc.name.c_str(), nic, ka, kb,
							       share, (double)(warm + (s + 1) * kMs) / 1e6, q, g,
							       f.steps[s][q]);
				}
			}
	}
	return bad ? 1 : 0;
}

// ------------------------------------------------------- ECN steering

struct EcnResult {
	RunResult r;
	double share_early = 0, share_late = 0;	// of data via the marked link
	uint64_t marks = 0;
};

EcnResult ecn_run(uint64_t seed, bool mark, uint64_t bytes)
{
	// 2 leaves x 4 spines, 1 host per leaf; link spine0 -> leaf1 CE-marks
	// every ECT packet (a persistently congested link).
	// Fabric links are 25 Gb/s so that every path is needed (a 100 Gb/s
	// host over 4 x 25 Gb/s spines) and a marked path keeps sending.
	TopoCfg t = leaf_spine(2, 4, 1);
	t.fabric_link.gbps = 25;
	t.fabric_link.qcap = 128 * 1024;
	t.fabric_link.ecn_k = t.fabric_link.qcap;	// only the bad link marks
	World w(make_cfg(Model::Mroce, t, seed));
	uint32_t marked = UINT32_MAX;
	std::vector<uint32_t> spine_down;
	for (const Port &p : w.fab.ports)
		if (w.fab.nodes[p.from].name.find('s') != std::string::npos &&
		    w.fab.nodes[p.to].name == "p0l1")
			spine_down.push_back(p.id);
	marked = spine_down.at(0);
	w.fab.ports[marked].mark_all = mark;
	auto snap = [&w, spine_down](uint64_t &m, uint64_t &all) {
		m = w.fab.ports[spine_down[0]].tx_data_pkts;
		all = 0;
		for (uint32_t p : spine_down)
			all += w.fab.ports[p].tx_data_pkts;
	};
	uint64_t m1 = 0, a1 = 0, m2 = 0, a2 = 0;
	w.at(2 * kMs, [&] { snap(m1, a1); });
	w.at(30 * kMs, [&] { snap(m2, a2); });
	double t0 = wall_now();
	BulkApp app({{0, 1, bytes, 1 << 20, 4, 0}});
	bool ok = w.run(app, 10 * 1000 * kMs);
	EcnResult e;
	e.r = summarize(w, ok, t0);
	uint64_t mf = w.fab.ports[marked].tx_data_pkts, af = 0;
	for (uint32_t p : spine_down)
		af += w.fab.ports[p].tx_data_pkts;
	if (!a2) {	// finished before 30 ms: late window = 2 ms .. end
		m2 = mf;
		a2 = af;
	}
	e.share_early = a1 ? (double)m1 / (double)a1 : 0;
	e.share_late = a2 > a1 ? (double)(m2 - m1) / (double)(a2 - a1) : 0;
	e.marks = w.fab.ports[marked].ce_marks;
	return e;
}

int scen_ecn(const Opts &o)
{
	Csv c(o.out + "/ecn.csv",
	      "marked,share_first_2ms,share_after_2ms,steers,ce_marks,goodput_gbps,delivery_ok");
	for (bool mark : {false, true}) {
		EcnResult e = ecn_run(o.seed, mark, 64u << 20);
		print(mark ? "ecn marked" : "ecn unmarked", e.r);
		c.row("%d,%.4f,%.4f,%llu,%llu,%.2f,%d", mark, e.share_early, e.share_late,
		      (unsigned long long)e.r.tot.steers, (unsigned long long)e.marks,
		      e.r.goodput_gbps, e.r.errors.empty());
	}
	return 0;
}

// ------------------------------------------------------- scaling

int scen_scale(const Opts &o)
{
	Csv c(o.out + "/scale.csv",
	      "kind,nodes,sim_ms,bytes_moved,events,wall_s,events_per_s,sim_ms_per_wall_s");
	for (uint32_t n : {8u, 16u, 32u, 64u}) {
		uint64_t bytes = 4ull << 20;
		ArResult a = allreduce_run(Model::Mroce, n, bytes, 0, o.seed);
		print(("scale allreduce n=" + std::to_string(n)).c_str(), a.r);
		c.row("allreduce_4MB,%u,%.3f,%llu,%llu,%.2f,%.0f,%.3f", n, a.r.sim_ms,
		      (unsigned long long)a.r.tot.bytes_placed, (unsigned long long)a.r.events,
		      a.r.wall_s, (double)a.r.events / a.r.wall_s, a.r.sim_ms / a.r.wall_s);
	}
	for (Time ms : {2ull, 4ull, 8ull, 16ull}) {
		double t0 = wall_now();
		TopoCfg t = leaf_spine(4, 4, 4);
		World w(make_cfg(Model::Mroce, t, o.seed));
		BulkApp app(cross_leaf(8, 8, 0, 1 << 20));
		w.run(app, ms * kMs);
		RunResult r = summarize(w, false, t0);
		print(("scale stream " + std::to_string(ms) + "ms").c_str(), r);
		c.row("stream_8flows,16,%.3f,%llu,%llu,%.2f,%.0f,%.3f", r.sim_ms,
		      (unsigned long long)r.tot.bytes_placed, (unsigned long long)r.events, r.wall_s,
		      (double)r.events / r.wall_s, r.sim_ms / r.wall_s);
	}
	return 0;
}

// ------------------------------------------------------- window size

// What one run of a window case gives: named figures, retransmission
// ratio, RTOs, whether it was clean.
struct WinOut {
	std::vector<std::pair<std::string, double>> metrics;
	double retx = 0;
	uint64_t rtos = 0;
	bool ok = true;
};

WinOut win_bulk(const RunResult &r)
{
	WinOut o;
	o.metrics = {{"goodput_gbps", r.goodput_gbps}, {"fct_p99_us", r.fct_p99}};
	o.retx = r.tot.retx_ratio();
	o.rtos = r.tot.rtos;
	o.ok = r.finished && r.errors.empty() && !r.tot.flows_failed;
	return o;
}

// The existing scenarios' setups with the sender's DSN window at 1024 (the
// kernel default, max_inflight) and at 256 (the kernel's window=256: DSN
// records and PSN windows fitted, 32 PSNs per path at 16 paths).  One
// row per figure: both values and their ratio.
int scen_window(const Opts &o)
{
	Csv c(o.out + "/window.csv",
	      "case,loss_pct,metric,w1024,w256,ratio_256_to_1024,retx_1024,retx_256,rtos_1024,"
	      "rtos_256,clean");
	const uint32_t wins[2] = {1024, 256};
	const uint32_t saved = g_window;
	auto both = [&](const std::string &name, double loss, const std::function<WinOut()> &run) {
		WinOut r[2];
		for (int i = 0; i < 2; i++) {
			g_window = wins[i];
			double t0 = wall_now();
			r[i] = run();
			fprintf(stderr, "[window %s %.1f%% w=%u] %s %.3f retx %.5f rtos %llu%s (%.1f s)\n",
				name.c_str(), loss * 100, wins[i], r[i].metrics[0].first.c_str(),
				r[i].metrics[0].second, r[i].retx, (unsigned long long)r[i].rtos,
				r[i].ok ? "" : " NOT CLEAN", wall_now() - t0);
		}
		g_window = saved;
		for (size_t m = 0; m < r[0].metrics.size(); m++) {
			double a = r[0].metrics[m].second, b = r[1].metrics[m].second;
			c.row("%s,%.1f,%s,%.3f,%.3f,%.4f,%.5f,%.5f,%llu,%llu,%d", name.c_str(), loss * 100,
			      r[0].metrics[m].first.c_str(), a, b, a ? b / a : NAN, r[0].retx, r[1].retx,
			      (unsigned long long)r[0].rtos, (unsigned long long)r[1].rtos,
			      r[0].ok && r[1].ok);
		}
		return r[0].ok && r[1].ok;
	};
	int bad = 0;
	TopoCfg t = leaf_spine(4, 4, 4);
	uint64_t big = o.quick ? (4u << 20) : (32u << 20);
	for (double p : {0.0, 0.01, 0.10}) {
		bad += !both("flow1", p, [&] {
			return win_bulk(run_bulk(make_cfg(Model::Mroce, t, o.seed),
						 cross_leaf(1, 8, big, 1 << 20), p, 20 * 1000 * kMs));
		});
		bad += !both("flows8", p, [&] {
			return win_bulk(run_bulk(make_cfg(Model::Mroce, t, o.seed),
						 cross_leaf(8, 8, big, 1 << 20), p, 20 * 1000 * kMs));
		});
	}
	// One flow over a long fabric: 25 us per leaf-spine hop (a 100 us
	// base RTT, a bandwidth-delay product of ~300 packets at 100 Gb/s).
	TopoCfg tl = t;
	tl.fabric_link.prop = 25 * kUs;
	for (double p : {0.0, 0.01})
		bad += !both("flow1_rtt100us", p, [&] {
			return win_bulk(run_bulk(make_cfg(Model::Mroce, tl, o.seed),
						 cross_leaf(1, 8, big, 1 << 20), p, 20 * 1000 * kMs));
		});
	for (double p : {0.0, 0.01}) {
		bad += !both("incast15to1", p, [&] {
			std::vector<BulkApp::Spec> inc;
			for (uint32_t i = 1; i < 16; i++)
				inc.push_back({i, 0, 1u << 20, 256u << 10, 4, 0});
			return win_bulk(run_bulk(make_cfg(Model::Mroce, t, o.seed), inc, p, 20 * 1000 * kMs));
		});
		bad += !both("incast15to1_8qps_shared", p, [&] {
			return win_bulk(ccgroup_incast(8, true, o.quick ? 1u << 20 : 4u << 20, p, o.seed));
		});
		bad += !both("alltoall16", p, [&] {
			std::vector<BulkApp::Spec> a2a;
			for (uint32_t i = 0; i < 16; i++)
				for (uint32_t j = 0; j < 16; j++)
					if (i != j)
						a2a.push_back({i, j, 256u << 10, 64u << 10, 4, 0});
			return win_bulk(run_bulk(make_cfg(Model::Mroce, t, o.seed), a2a, p, 20 * 1000 * kMs));
		});
		bad += !both("alltoall16_8qps_shared", p, [&] {
			A2aResult a = a2a_run(16, 8, true, 256u << 10, p, o.seed, true);
			WinOut w = win_bulk(a.r);
			w.metrics[1] = {"pair_fct_p99_us", a.pair_p99};
			return w;
		});
		bad += !both("allreduce64", p, [&] {
			ArResult a = allreduce_run(Model::Mroce, 64, o.quick ? 4ull << 20 : 16ull << 20, p,
						   o.seed);
			WinOut w = win_bulk(a.r);
			w.metrics = {{"completion_ms", a.t_ms}, {"step_fct_p99_us", a.r.mfct_p99}};
			return w;
		});
	}
	for (bool link : {false, true})
		bad += !both(link ? "linkfail" : "plane", 0, [&] {
			Time bucket = 250 * kUs, t_fail = 5 * kMs, t_up = 15 * kMs;
			Time t_end = o.quick ? 20 * kMs : 25 * kMs;
			PlaneRun pr = plane_run(Model::Mroce, o.seed, t_fail, t_up, t_end, 0, bucket, link);
			size_t bf = t_fail / bucket, bu = t_up / bucket, be = t_end / bucket;
			WinOut w;
			w.metrics = {{"before_gbps", avg(pr.gbps, 4, bf)},
				     {"outage_gbps", avg(pr.gbps, bf + 8, bu)},
				     {"after_gbps", avg(pr.gbps, bu + 8, be)}};
			w.retx = pr.r.tot.retx_ratio();
			w.rtos = pr.r.tot.rtos;
			w.ok = pr.r.errors.empty() && !pr.r.tot.flows_failed;
			return w;
		});
	return bad ? 1 : 0;
}

// ------------------------------------------------------- regression

int failures = 0;
void expect(bool cond, const std::string &what)
{
	fprintf(stderr, "  %s: %s\n", cond ? "PASS" : "FAIL", what.c_str());
	failures += !cond;
}

int scen_regress(const Opts &o)
{
	uint64_t seed = o.seed;
	TopoCfg t = leaf_spine(4, 4, 4);
	fprintf(stderr, "regress 1: every byte exactly once under 5%% random loss\n");
	{
		RunResult r = run_bulk(make_cfg(Model::Mroce, t, seed), cross_leaf(4, 8, 2u << 20, 256u << 10),
				       0.05, 5 * 1000 * kMs, [](World &w) { w.check_every_call = false; });
		print("5% loss", r);
		expect(r.finished, "all flows completed");
		expect(r.errors.empty(), "delivery checker clean (" + r.errors + ")");
		expect(r.tot.bytes_placed == r.tot.bytes_posted && r.tot.bytes_posted == 4ull * (2u << 20),
		       "bytes placed == bytes posted");
		expect(r.tot.tx_retx > 0, "loss actually happened (retransmissions)");
	}
	fprintf(stderr, "regress 2: bursty Gilbert-Elliott loss + core invariant check on every call\n");
	{
		auto setup = [](World &w) {
			for (auto &p : w.fab.ports) {
				p.cfg.ge.p_gb = 0.002;
				p.cfg.ge.p_bg = 0.2;
				p.cfg.ge.loss_bad = 0.5;
			}
		};
		WorldCfg cfg = make_cfg(Model::Mroce, t, seed + 1);
		double t0 = wall_now();
		World w(cfg);
		w.check_every_call = true;
		setup(w);
		BulkApp app(cross_leaf(2, 8, 1u << 20, 256u << 10));
		bool ok = w.run(app, 5 * 1000 * kMs);
		RunResult r = summarize(w, ok, t0);
		print("GE loss", r);
		expect(ok && r.errors.empty() && r.tot.bytes_placed == r.tot.bytes_posted,
		       "completed, exactly once, invariants hold (" + r.errors + ")");
	}
	fprintf(stderr, "regress 3: goodput ratio at 1%% loss, mroce vs go-back-N\n");
	{
		double ratio[2];
		for (Model m : {Model::Mroce, Model::Gbn}) {
			RunResult r0 = run_bulk(make_cfg(m, t, seed), cross_leaf(4, 8, 8u << 20, 1u << 20), 0, 5 * 1000 * kMs);
			RunResult r1 = run_bulk(make_cfg(m, t, seed), cross_leaf(4, 8, 8u << 20, 1u << 20), 0.01, 5 * 1000 * kMs);
			print("lossless", r0);
			print("1% loss", r1);
			expect(r0.errors.empty() && r1.errors.empty() && r0.finished && r1.finished,
			       std::string(model_name(m)) + " runs complete and clean");
			if (m == Model::Mroce) {
				// One ACK per ack_every (4) packets of the connection,
				// the other paths as ACK blocks (spec 6.2).
				char b[128];
				snprintf(b, sizeof(b), "lossless bulk: %.3f control packets per data packet <= 0.2",
					 ctrl_per_data(r0));
				expect(ctrl_per_data(r0) <= 0.2, b);
			}
			ratio[m == Model::Mroce ? 0 : 1] = r1.goodput_gbps / r0.goodput_gbps;
		}
		char b[128];
		snprintf(b, sizeof(b), "mroce ratio %.3f > gbn ratio %.3f", ratio[0], ratio[1]);
		expect(ratio[0] > ratio[1], b);
	}
	fprintf(stderr, "regress 4: plane failure: traffic leaves the plane, flows complete\n");
	{
		PlaneRun pr = plane_run(Model::Mroce, seed, 2 * kMs, 8 * kMs, 200 * kMs, 48u << 20, 250 * kUs);
		print("plane", pr.r);
		double pct = pr.late_total_data ? 100.0 * (double)pr.late_dead_data / (double)pr.late_total_data : 100;
		char b[160];
		snprintf(b, sizeof(b), "late in the outage %.3f%% of data goes into the dead plane (< 1%%)", pct);
		expect(pct < 1.0, b);
		expect(pr.r.finished && pr.r.tot.flows_failed == 0, "every flow completed without error");
		expect(pr.r.errors.empty(), "delivery checker clean (" + pr.r.errors + ")");
		expect(pr.r.tot.downs > 0, "paths went down");
	}
	fprintf(stderr, "regress 5: ECN-marked path is steered away\n");
	{
		EcnResult e = ecn_run(seed, true, 48u << 20);
		print("ecn", e.r);
		char b[160];
		// Fair share of one of 4 spines is 0.25 (measured unmarked: ~0.25).
		snprintf(b, sizeof(b), "share via marked link after 2 ms %.4f < 0.0625 (first 2 ms %.4f)",
			 e.share_late, e.share_early);
		// Not "steers > 0": the marked paths' windows are cut to the
		// floor within a few RTTs, so they carry too few packets (13
		// each at seed 1) for steering to judge them (16 samples), and
		// a steer elsewhere would make such a check pass by accident
		// (it did before ack_every 8: path 3, unmarked, for its RTT).
		// The outcome is what is asserted; test_fabric asserts the
		// steering mechanism between guests.
		fprintf(stderr, "  info: %llu steers\n",
			(unsigned long long)e.r.tot.steers);
		expect(e.share_late < 0.0625, b);
		EcnResult u = ecn_run(seed, false, 48u << 20);
		snprintf(b, sizeof(b), "unmarked control: share of that link %.4f > 0.2", u.share_late);
		expect(u.share_late > 0.2, b);
		expect(e.r.errors.empty() && e.r.finished, "flow completed clean");
	}
	fprintf(stderr, "regress 6: determinism (same seed, same run)\n");
	{
		auto once = [&] {
			World w(make_cfg(Model::Mroce, t, seed + 7));
			set_loss(w, 0.02);
			BulkApp app(cross_leaf(3, 8, 1u << 20, 256u << 10));
			w.run(app, 5 * 1000 * kMs);
			uint64_t h = w.events;
			for (uint64_t b : w.delivery.timeline)
				h = mix64(h ^ b);
			return std::make_pair(h, w.now());
		};
		auto a = once(), b = once();
		expect(a == b, "identical event count, timeline and end time");
	}
	fprintf(stderr, "regress 7: 15:1 incast with 16 paths per QP does not collapse\n");
	{
		// Issue 12's target, met by the connection window (spec 9.1);
		// 41.7 Gb/s with 56% retransmitted under per-path windows only.
		std::vector<BulkApp::Spec> inc;
		for (uint32_t i = 1; i < 16; i++)
			inc.push_back({i, 0, 1u << 20, 256u << 10, 4, 0});
		RunResult r = run_bulk(make_cfg(Model::Mroce, t, seed), inc, 0, 20 * 1000 * kMs);
		print("incast15:1", r);
		char b[160];
		snprintf(b, sizeof(b), "aggregate %.1f Gb/s >= 90", r.goodput_gbps);
		expect(r.goodput_gbps >= 90, b);
		snprintf(b, sizeof(b), "retransmitted %.4f <= 0.02", r.tot.retx_ratio());
		expect(r.tot.retx_ratio() <= 0.02, b);
		// 0.96 with one ACK per path and packet, before ACK blocks.
		snprintf(b, sizeof(b), "%.3f control packets per data packet <= 0.4", ctrl_per_data(r));
		expect(ctrl_per_data(r) <= 0.4, b);
		expect(r.finished && r.errors.empty(), "flows completed clean");
	}
	fprintf(stderr, "regress 8: all-to-all of 16 hosts at 1%% loss keeps its speed and tail\n");
	{
		// Issue 12's target, met with ACK blocks (spec 6.1): 0.87 of
		// lossless, p99/p50 1.19 (0.79 and 1.24 before them).
		std::vector<BulkApp::Spec> a2a;
		for (uint32_t i = 0; i < 16; i++)
			for (uint32_t j = 0; j < 16; j++)
				if (i != j)
					a2a.push_back({i, j, 256u << 10, 64u << 10, 4, 0});
		RunResult r0 = run_bulk(make_cfg(Model::Mroce, t, seed), a2a, 0, 20 * 1000 * kMs);
		RunResult r1 = run_bulk(make_cfg(Model::Mroce, t, seed), a2a, 0.01, 20 * 1000 * kMs);
		print("alltoall lossless", r0);
		print("alltoall 1% loss", r1);
		char b[160];
		double ratio = r1.goodput_gbps / r0.goodput_gbps;
		snprintf(b, sizeof(b), "1%% loss keeps %.3f of lossless goodput >= 0.85", ratio);
		expect(ratio >= 0.85, b);
		snprintf(b, sizeof(b), "p99 FCT %.1f us <= 1.5 x median %.1f us", r1.fct_p99, r1.fct_p50);
		expect(r1.fct_p99 <= 1.5 * r1.fct_p50, b);
		expect(r0.finished && r1.finished && r0.errors.empty() && r1.errors.empty(),
		       "flows completed clean");
	}
	fprintf(stderr, "regress: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}

// ------------------------------------------------------- congestion-group regression

// Issue 18's congestion-group targets that the simulator meets, asserted
// on simulated outcomes (tools/sim/README.md, "Regression"); ctest
// mroce_sim_ccgroup.
int scen_ccregress(const Opts &o)
{
	uint64_t seed = o.seed;
	char b[200];
	fprintf(stderr, "ccregress 1: N shared QPs to one peer behind a 50G link share it fairly (Jain >= 0.95, 2 ms warm-up, 6 ms)\n");
	// With the NIC serving the lowest QP first, fairness comes from the
	// group's share rule alone (without it, Jain = 1/N); 2 QPs are not
	// asserted there: 0.874 (README, "Congestion groups").
	for (bool lowest : {false, true})
		for (uint32_t n : {2u, 4u, 8u, 32u}) {
			if (lowest && n == 2)
				continue;
			FairResult f = fair_case_run({"one_peer_50g", FairTopo::Slow, {{0, 2, n}}}, true,
						     2 * kMs, 8 * kMs, seed, lowest);
			snprintf(b, sizeof(b),
				 "%u QPs, NIC %s: Jain %.4f >= 0.95 (worst 1 ms step %.4f), %.1f Gb/s >= 45", n,
				 lowest ? "lowest first" : "round robin", f.jain_a, f.jain_a_min, f.total_gbps);
			expect(f.jain_a >= 0.95 && f.total_gbps >= 45 && f.r.errors.empty(), b);
		}
	fprintf(stderr, "ccregress 2: 8 shared QPs are no more aggressive than 1 QP\n");
	{
		FairResult one = fair_case_run({"vs_one_qp", FairTopo::Star, {{4, 0, 1}, {8, 0, 1}}}, true,
					       2 * kMs, 8 * kMs, seed);
		FairResult eight = fair_case_run({"vs_one_qp", FairTopo::Star, {{4, 0, 8}, {8, 0, 1}}}, true,
						 2 * kMs, 8 * kMs, seed);
		double s1 = one.grp_gbps[0] / one.total_gbps, s8 = eight.grp_gbps[0] / eight.total_gbps;
		snprintf(b, sizeof(b), "share of the host with 8 QPs %.3f <= that of 1 QP %.3f + 0.05",
			 s8, s1);
		expect(s8 <= s1 + 0.05, b);
		snprintf(b, sizeof(b), "and still about half: Jain over the 2 hosts %.4f >= 0.95",
			 eight.jain_grps);
		expect(eight.jain_grps >= 0.95, b);
		snprintf(b, sizeof(b), "bottleneck queue avg %.1f KiB <= 1.25 x 1 QP's %.1f + 8 KiB",
			 eight.q_avg / 1024, one.q_avg / 1024);
		expect(eight.q_avg <= 1.25 * one.q_avg + 8192, b);
		snprintf(b, sizeof(b), "bottleneck drops %llu <= 1 QP's %llu + 16",
			 (unsigned long long)eight.drops, (unsigned long long)one.drops);
		expect(eight.drops <= one.drops + 16, b);
		// and it is not vacuous: private windows take ~8/9
		FairResult priv = fair_case_run({"vs_one_qp", FairTopo::Star, {{4, 0, 8}, {8, 0, 1}}}, false,
						2 * kMs, 8 * kMs, seed);
		double sp = priv.grp_gbps[0] / priv.total_gbps;
		snprintf(b, sizeof(b), "control: with private windows the 8 QPs take %.3f > 0.7", sp);
		expect(sp > 0.7, b);
	}
	fprintf(stderr, "ccregress 3: groups to different peers compete as separate connections\n");
	{
		FairResult f = fair_case_run({"two_groups", FairTopo::Star, {{4, 0, 8}, {8, 0, 8}}}, true,
					     2 * kMs, 8 * kMs, seed);
		snprintf(b, sizeof(b), "2 hosts x 8 shared QPs into one port: shares %.3f/%.3f, Jain %.4f >= 0.95",
			 f.grp_gbps[0] / f.total_gbps, f.grp_gbps[1] / f.total_gbps, f.jain_grps);
		expect(f.jain_grps >= 0.95, b);
		FairResult g = fair_case_run({"two_peers_fabric", FairTopo::Fabric, {{0, 2, 8}, {1, 3, 8}}}, true,
					     2 * kMs, 8 * kMs, seed);
		snprintf(b, sizeof(b), "2 host pairs x 8 shared QPs over one fabric link: shares %.3f/%.3f, Jain %.4f >= 0.95",
			 g.grp_gbps[0] / g.total_gbps, g.grp_gbps[1] / g.total_gbps, g.jain_grps);
		expect(g.jain_grps >= 0.95, b);
	}
	fprintf(stderr, "ccregress 4: 15:1 incast with 8 shared QPs per sender no worse than with 1\n");
	{
		RunResult r1 = ccgroup_incast(1, true, 4u << 20, 0, seed);
		RunResult r8 = ccgroup_incast(8, true, 4u << 20, 0, seed);
		print("incast 1 QP", r1);
		print("incast 8 QPs shared", r8);
		snprintf(b, sizeof(b), "goodput %.2f >= 0.97 x %.2f Gb/s", r8.goodput_gbps, r1.goodput_gbps);
		expect(r8.goodput_gbps >= 0.97 * r1.goodput_gbps, b);
		snprintf(b, sizeof(b), "p99 FCT %.1f <= 1.05 x %.1f us", r8.fct_p99, r1.fct_p99);
		expect(r8.fct_p99 <= 1.05 * r1.fct_p99, b);
		snprintf(b, sizeof(b), "retransmitted %.5f <= %.5f + 0.005", r8.tot.retx_ratio(),
			 r1.tot.retx_ratio());
		expect(r8.tot.retx_ratio() <= r1.tot.retx_ratio() + 0.005, b);
		expect(r1.finished && r8.finished && r1.errors.empty() && r8.errors.empty(),
		       "flows completed clean");
	}
	fprintf(stderr, "ccregress: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s loss|plane|linkfail|allreduce|fct|ecn|scale|ccgroup|"
				"cca2a|ccfair|window|regress|ccregress "
				"[--out DIR] [--seed N] [--quick] [--nodes N] [--bytes B] "
				"[--model mroce|gbn|both] [--loss P] [--cc-share 0|1] "
				"[--qps K] [--window W]\n", argv[0]);
		return 2;
	}
	std::string s = argv[1];
	Opts o;
	Options opts;
	uint32_t cc_share = 0;
	opts.bind("--out", o.out).bind("--seed", o.seed).bind("--quick", o.quick)
		.bind("--nodes", o.nodes).bind("--bytes", o.bytes).bind("--model", o.model)
		.bind("--gbn-wnd", g_gbn_wnd).bind("--paths", g_paths)
		.bind("--nic-pkts", g_nic_pkts).bind("--loss", o.loss)
		.bind("--cc-share", cc_share).bind("--qps", g_qps).bind("--window", g_window)
		.bind("--order", g_order);
	if (!opts.parse(argc, argv, 2))
		return 2;
	g_cc_share = cc_share != 0;
	g_qps = std::max(1u, g_qps);
	if (g_window && (g_window < 16 || g_window > 1024 || (g_window & (g_window - 1)))) {
		fprintf(stderr, "--window: a power of 2 in 16..1024\n");
		return 2;
	}
	try {
		if (s == "loss")
			return scen_loss(o);
		if (s == "plane")
			return scen_plane(o);
		if (s == "linkfail")
			return scen_plane(o, true);
		if (s == "allreduce")
			return scen_allreduce(o);
		if (s == "fct")
			return scen_fct(o);
		if (s == "ecn")
			return scen_ecn(o);
		if (s == "scale")
			return scen_scale(o);
		if (s == "ccgroup")
			return scen_ccgroup(o);
		if (s == "cca2a")
			return scen_cca2a(o);
		if (s == "ccfair")
			return scen_ccfair(o);
		if (s == "window")
			return scen_window(o);
		if (s == "regress")
			return scen_regress(o);
		if (s == "ccregress")
			return scen_ccregress(o);
	} catch (const std::exception &e) {
		fprintf(stderr, "error: %s\n", e.what());
		return 1;
	}
	fprintf(stderr, "unknown scenario %s\n", s.c_str());
	return 2;
}
