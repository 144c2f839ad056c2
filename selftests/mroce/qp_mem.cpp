// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// qp_mem - kernel memory per connected, idle RC QP (issue 18, "state sized
// by use"): creates N RC QPs on one device, connects them in pairs (QP 2k
// to QP 2k+1, through the device's own GID) up to RTS, sends nothing, and
// reports what the kernel holds per QP from /proc/meminfo deltas, the
// user-mapped rings (this process's /dev/infiniband/uverbs mappings) and,
// when the process runs in a memory cgroup of its own, that cgroup's
// charge.  Works for any verbs device (mroce, rxe).
//
// Usage: mroce_qp_mem [options] IBDEV GID_INDEX
//   --qps N        QPs (even, default 1000)
//   --send-wr N    max_send_wr (default 128)
//   --recv-wr N    max_recv_wr (default 128)
//   --sge N        max_send_sge and max_recv_sge (default 1)
//   --settle MS    wait before each snapshot (default 500)
//   --timing       also time each phase over all QPs (issue 18, QP
//                  lifecycle rates): create, INIT, RTR, RTS, destroy
//
// One line of key=value pairs on stdout (bytes; per_qp_* are per QP):
//   kernel = Slab + VmallocUsed + Percpu + the pages of large kmallocs not
//   counted in Slab (none on 6.x) deltas, minus the user-mapped rings (they
//   are vmalloc memory too).  Exit status 0, 1 on a failed verb, 2 on usage.
// With --timing, a second line after the QPs are destroyed: the seconds
// each phase took over all QPs and its rate (QPs per second): create_s,
// init_s, rtr_s, rts_s, destroy_s, *_rate (create is ibv_create_qp alone,
// INIT timed apart from it).
//
// Not a timed test: the numbers are what the kernel reports, whatever the
// speed of the machine; the --timing rates are for benchmarks (compare
// drivers within one run).

#include "verbs_test.hpp"

#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using mroce_test::meminfo;

namespace {

using namespace mroce_test;

[[noreturn]] void die(const char *what, int err)
{
	std::fprintf(stderr, "qp_mem: %s: %s (%d)\n", what, std::strerror(err), err);
	std::exit(1);
}

// Bytes of this process's uverbs mappings (the rings a provider mapped).
long long uverbs_mapped()
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	long long sum = 0;
	while (std::getline(maps, line)) {
		if (line.find("/dev/infiniband/uverbs") == std::string::npos)
			continue;
		unsigned long long a, b;
		if (std::sscanf(line.c_str(), "%llx-%llx", &a, &b) == 2)
			sum += (long long)(b - a);
	}
	return sum;
}

// The memory cgroup (v2) of this process: memory.current and memory.stat.
std::string cgroup_dir()
{
	std::ifstream f("/proc/self/cgroup");
	std::string line;
	while (std::getline(f, line))
		if (line.rfind("0::", 0) == 0)
			return "/sys/fs/cgroup" + line.substr(3);
	return "";
}

std::map<std::string, long long> memcg()
{
	std::map<std::string, long long> m;
	std::string dir = cgroup_dir();
	if (dir.empty())
		return m;
	std::ifstream cur(dir + "/memory.current");
	long long v;
	if (!(cur >> v))
		return m;
	m["current"] = v;
	std::ifstream st(dir + "/memory.stat");
	std::string key;
	while (st >> key >> v)
		m[key] = v;
	return m;
}

struct Snap {
	std::map<std::string, long long> mi, cg;
	long long mapped;
};

Snap snap(unsigned settle_ms)
{
	usleep(settle_ms * 1000);
	/* let RCU callbacks and per-CPU caches settle a little */
	sync();
	return Snap{ meminfo(), memcg(), uverbs_mapped() };
}

long long d(const std::map<std::string, long long> &a,
	    const std::map<std::string, long long> &b, const char *k)
{
	auto ia = a.find(k), ib = b.find(k);
	if (ia == a.end() || ib == b.end())
		return 0;
	return ib->second - ia->second;
}

using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point t0)
{
	return std::chrono::duration<double>(Clock::now() - t0).count();
}

void must0(int rc, const char *what)
{
	if (rc)
		die(what, rc < 0 ? (errno ? errno : EIO) : rc);
}

}  // namespace

int main(int argc, char **argv)
{
	unsigned qps = 1000, send_wr = 128, recv_wr = 128, sge = 1, settle = 500;
	bool timing = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i += 2) {
		if (std::string(argv[i]) == "--timing") {
			timing = true;
			i--;
			continue;
		}
		if (i + 1 >= argc)
			return 2;
		unsigned v = (unsigned)std::strtoul(argv[i + 1], nullptr, 0);
		std::string o = argv[i];
		if (o == "--qps")
			qps = v;
		else if (o == "--send-wr")
			send_wr = v;
		else if (o == "--recv-wr")
			recv_wr = v;
		else if (o == "--sge")
			sge = v;
		else if (o == "--settle")
			settle = v;
		else
			return 2;
	}
	if (argc - i != 2 || !qps || qps % 2) {
		std::fprintf(stderr, "usage: %s [--qps N] [--send-wr N] [--recv-wr N] "
			     "[--sge N] [--settle MS] [--timing] IBDEV GID_INDEX\n", argv[0]);
		return 2;
	}
	const char *ibdev = argv[i];
	int gid_index = std::atoi(argv[i + 1]);

	Context ctx = open_device(ibdev);
	if (!ctx)
		die("open device", ENODEV);
	ibv_pd *pd = ibv_alloc_pd(ctx.get());
	ibv_cq *cq = pd ? ibv_create_cq(ctx.get(), 256, nullptr, nullptr, 0) : nullptr;
	if (!cq)
		die("alloc_pd/create_cq", errno);
	ibv_gid gid;
	must0(ibv_query_gid(ctx.get(), 1, gid_index, &gid), "query_gid");

	/* connected in pairs, each end's sq_psn the other's rq_psn */
	RcConnect conn;
	conn.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	conn.rd_atomic = 16;

	/* the device, PD and CQ are not the QPs': measure from here */
	Snap a = snap(settle);
	std::vector<ibv_qp *> qp(qps);
	/* each phase over all QPs, timed apart (--timing) */
	double create_s, init_s, rtr_s, rts_s;
	auto t0 = Clock::now();
	for (auto &q : qp) {
		ibv_qp_init_attr ia = rc_qp_init_attr(cq, send_wr, recv_wr, sge);
		q = ibv_create_qp(pd, &ia);
		if (!q)
			die("create_qp", errno);
	}
	create_s = secs_since(t0);
	t0 = Clock::now();
	for (auto *q : qp) {
		ibv_qp_attr at = rc_init_attr(conn);
		must0(ibv_modify_qp(q, &at, kRcInitMask), "modify_qp INIT");
	}
	init_s = secs_since(t0);
	Snap b = snap(settle);
	t0 = Clock::now();
	for (unsigned k = 0; k < qps; k++) {
		conn.rq_psn = k;
		conn.sq_psn = k ^ 1;
		ibv_qp_attr at = rc_rtr_attr(gid_index, gid, qp[k ^ 1]->qp_num, conn);
		must0(ibv_modify_qp(qp[k], &at, kRcRtrMask), "modify_qp RTR");
	}
	rtr_s = secs_since(t0);
	t0 = Clock::now();
	for (unsigned k = 0; k < qps; k++) {
		conn.rq_psn = k;
		conn.sq_psn = k ^ 1;
		ibv_qp_attr at = rc_rts_attr(conn);
		must0(ibv_modify_qp(qp[k], &at, kRcRtsMask), "modify_qp RTS");
	}
	rts_s = secs_since(t0);
	Snap c = snap(settle);
	ibv_qp_attr at{};
	ibv_qp_init_attr got{};
	must0(ibv_query_qp(qp[0], &at, IBV_QP_STATE | IBV_QP_CAP, &got), "query_qp");
	if (at.qp_state != IBV_QPS_RTS)
		die("QP 0 not in RTS", EPROTO);

	auto per = [&](long long v) { return v / (long long)qps; };
	long long mapped = c.mapped - a.mapped;
	long long slab = d(a.mi, c.mi, "Slab"), vm = d(a.mi, c.mi, "VmallocUsed"),
		  pcpu = d(a.mi, c.mi, "Percpu");
	std::ostringstream o;
	o << "dev=" << ibdev << " qps=" << qps << " send_wr=" << send_wr
	  << " recv_wr=" << recv_wr << " sge=" << sge
	  << " got_send_wr=" << got.cap.max_send_wr << " got_recv_wr=" << got.cap.max_recv_wr
	  << " per_qp_kernel=" << per(slab + vm + pcpu - mapped)
	  << " per_qp_kernel_created=" << per(d(a.mi, b.mi, "Slab") + d(a.mi, b.mi, "VmallocUsed") +
					       d(a.mi, b.mi, "Percpu") - (b.mapped - a.mapped))
	  << " per_qp_slab=" << per(slab) << " per_qp_sunreclaim=" << per(d(a.mi, c.mi, "SUnreclaim"))
	  << " per_qp_vmalloc=" << per(vm) << " per_qp_percpu=" << per(pcpu)
	  << " per_qp_user_mapped=" << per(mapped)
	  << " per_qp_pagetables=" << per(d(a.mi, c.mi, "PageTables"))
	  << " per_qp_memfree=" << per(-d(a.mi, c.mi, "MemFree"))
	  << " per_qp_memavailable=" << per(-d(a.mi, c.mi, "MemAvailable"));
	/* the memcg's charge, with the memory.stat keys this kernel has */
	if (!c.cg.empty())
		o << " per_qp_memcg=" << per(d(a.cg, c.cg, "current"));
	for (const char *k : { "kernel", "slab", "vmalloc", "percpu" })
		if (c.cg.count(k))
			o << " per_qp_memcg_" << k << "=" << per(d(a.cg, c.cg, k));
	std::printf("%s\n", o.str().c_str());
	std::fflush(stdout);

	t0 = Clock::now();
	for (auto *q : qp)
		must0(ibv_destroy_qp(q), "destroy_qp");
	double destroy_s = secs_since(t0);
	if (timing) {
		auto rate = [&](double s) { return s > 0 ? qps / s : 0.0; };
		std::printf("timing dev=%s qps=%u create_s=%.6f init_s=%.6f rtr_s=%.6f "
			    "rts_s=%.6f destroy_s=%.6f create_rate=%.1f init_rate=%.1f "
			    "rtr_rate=%.1f rts_rate=%.1f connect_rate=%.1f "
			    "destroy_rate=%.1f\n",
			    ibdev, qps, create_s, init_s, rtr_s, rts_s, destroy_s,
			    rate(create_s), rate(init_s), rate(rtr_s), rate(rts_s),
			    rate(init_s + rtr_s + rts_s), rate(destroy_s));
		std::fflush(stdout);
	}
	must0(ibv_destroy_cq(cq), "destroy_cq");
	must0(ibv_dealloc_pd(pd), "dealloc_pd");
	return 0;
}
