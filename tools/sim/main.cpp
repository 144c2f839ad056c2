// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// mroce_sim: scenarios of the fabric simulator (see README.md).
//   mroce_sim <scenario> [--out DIR] [--seed N] [--quick]
// Scenarios: loss plane allreduce incast alltoall ecn scale ccgroup regress all
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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
uint32_t g_qps = 8;		// --qps: QPs per host pair (ccgroup)

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

// 15:1 incast where each sender runs K QPs to the receiver (--qps, 8), the
// same bytes per sender split over them: private windows (every QP its own
// connection-level controller) against one congestion group per host pair
// (spec 9.4), and 1 QP per sender as the reference.  --bytes: per sender
// (4 MiB, 1 MiB with --quick), --loss: end-to-end loss.
int scen_ccgroup(const Opts &o)
{
	Csv c(o.out + "/ccgroup.csv",
	      "case,qps,cc_share,loss_pct,goodput_gbps,fct_p50_us,fct_p99_us,retx_ratio,rtos,"
	      "flows_failed,delivery_ok,wall_s");
	TopoCfg t = leaf_spine(4, 4, 4);
	uint64_t per_sender = o.bytes ? o.bytes : o.quick ? 1u << 20 : 4u << 20;
	double loss = o.loss >= 0 ? o.loss : 0;
	struct Case {
		uint32_t qps;
		bool share;
	};
	int bad = 0;
	for (Case k : {Case{1, false}, Case{1, true}, Case{g_qps, false}, Case{g_qps, true}}) {
		std::vector<BulkApp::Spec> inc;
		for (uint32_t i = 1; i < 16; i++)
			for (uint32_t q = 0; q < k.qps; q++)
				inc.push_back({i, 0, per_sender / k.qps, 64u << 10, 4, 0});
		WorldCfg cfg = make_cfg(Model::Mroce, t, o.seed);
		cfg.cc_share = k.share;
		RunResult r = run_bulk(cfg, inc, loss, 20 * 1000 * kMs);
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

}  // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s loss|plane|allreduce|fct|ecn|scale|ccgroup|regress "
				"[--out DIR] [--seed N] [--quick] [--nodes N] [--bytes B] "
				"[--model mroce|gbn|both] [--loss P] [--cc-share 0|1] "
				"[--qps K]\n", argv[0]);
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
		.bind("--cc-share", cc_share).bind("--qps", g_qps);
	if (!opts.parse(argc, argv, 2))
		return 2;
	g_cc_share = cc_share != 0;
	g_qps = std::max(1u, g_qps);
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
		if (s == "regress")
			return scen_regress(o);
	} catch (const std::exception &e) {
		fprintf(stderr, "error: %s\n", e.what());
		return 1;
	}
	fprintf(stderr, "unknown scenario %s\n", s.c_str());
	return 2;
}
