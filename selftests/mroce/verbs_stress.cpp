// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// verbs_stress - verbs object churn for the debug-kernel checkers (KASAN,
// lockdep, kmemleak, DEBUG_OBJECTS): many QPs through their state machine,
// memory registration churn, CQ (and completion channel) create/destroy.
// Several of these run in parallel processes from selftests/mroce/test_stress.sh.
//
// Usage: mroce_verbs_stress [options] IBDEV GID_INDEX MODE
//   MODE            qp | mr | cq | mixed
//   --rounds N      rounds of the mode's churn (default 10)
//   --qps N         QPs alive at once in a qp round (default 64)
//   --live FILE     create a standing set of objects, create FILE, then churn
//                   until SIGTERM or until the device disappears underneath
//                   (link delete, netdev delete, rmmod): then every object is
//                   released and the exit status is 0.  An error while the
//                   device still exists is a failure.
//
// Exit status: 0 on success, 1 on a failed verb (diagnostics on stderr), 2 on
// usage errors.  One summary line on stdout.

#include <infiniband/verbs.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

const char *g_dev;
volatile sig_atomic_t g_stop;
bool g_live;
std::mt19937 g_rng(12345);
unsigned long g_ops;

void on_signal(int) { g_stop = 1; }

bool device_present()
{
	struct stat st;
	return stat((std::string("/sys/class/infiniband/") + g_dev).c_str(), &st) == 0;
}

// A failed verb: in --live mode after the device went away it ends the
// churn (status "gone"); otherwise it is a failure.
struct Failure {
	bool gone;
};

void fail(const char *what, int err)
{
	// A disassociated context answers EIO while ib_core is still removing
	// the device, and a verb racing the removal of the netdev under it
	// fails as the netdev's absence dictates (modify_qp to RTR:
	// ENETUNREACH): in --live mode give the removal 30 s to finish before
	// calling any error a bug.
	if (g_live)
		for (int i = 0; i < 300 && device_present(); ++i)
			usleep(100000);
	if (g_live && !device_present())
		throw Failure{true};
	std::fprintf(stderr, "verbs_stress: %s: %s (%d)\n", what, std::strerror(err), err);
	throw Failure{false};
}

template <typename T> T *must(T *p, const char *what)
{
	if (!p)
		fail(what, errno ? errno : EIO);
	++g_ops;
	return p;
}

// Verbs return an errno value, or -1 with errno set (ibv_query_gid).
void must0(int rc, const char *what)
{
	if (rc)
		fail(what, rc < 0 ? (errno ? errno : EIO) : rc);
	++g_ops;
}

unsigned rnd(unsigned n) { return std::uniform_int_distribution<unsigned>(0, n - 1)(g_rng); }

// Everything one process owns; released in reverse order, errors ignored
// (after a device removal destroy calls may fail, they must not crash).
struct Objects {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	std::vector<ibv_qp *> qps;
	std::vector<ibv_cq *> cqs;
	std::vector<ibv_comp_channel *> chans;
	std::vector<ibv_mr *> mrs;
	void *buf = MAP_FAILED;
	size_t buf_len = 16u << 20;

	void release_qps()
	{
		for (auto *q : qps)
			ibv_destroy_qp(q);
		qps.clear();
	}
	void release()
	{
		release_qps();
		for (auto *m : mrs)
			ibv_dereg_mr(m);
		mrs.clear();
		for (auto *c : cqs)
			ibv_destroy_cq(c);
		cqs.clear();
		for (auto *c : chans)
			ibv_destroy_comp_channel(c);
		chans.clear();
		if (pd)
			ibv_dealloc_pd(pd);
		pd = nullptr;
		if (ctx)
			ibv_close_device(ctx);
		ctx = nullptr;
		if (buf != MAP_FAILED)
			munmap(buf, buf_len);
		buf = MAP_FAILED;
	}
};

Objects g_obj;
int g_gid_index;
unsigned g_qps = 64;

ibv_qp *create_qp(ibv_pd *pd, ibv_cq *scq, ibv_cq *rcq, ibv_qp_type type)
{
	ibv_qp_init_attr a{};
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.qp_type = type;
	a.cap.max_send_wr = 1 + rnd(256);
	a.cap.max_recv_wr = 1 + rnd(256);
	a.cap.max_send_sge = 1 + rnd(4);
	a.cap.max_recv_sge = 1 + rnd(4);
	return must(ibv_create_qp(pd, &a), "create_qp");
}

void qp_to_init(ibv_qp *qp)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	must0(ibv_modify_qp(qp, &a, mask), "modify_qp INIT");
}

// RC: INIT -> RTR (connected to peer) -> RTS.  UD: -> RTR -> RTS.
void qp_to_rts(ibv_qp *qp, uint32_t peer, const ibv_gid &gid)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTR;
	int mask = IBV_QP_STATE;
	if (qp->qp_type == IBV_QPT_RC) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = peer;
		a.rq_psn = rnd(1u << 24);
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 12;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = g_gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	must0(ibv_modify_qp(qp, &a, mask), "modify_qp RTR");
	a = ibv_qp_attr{};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = rnd(1u << 24);
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	must0(ibv_modify_qp(qp, &a, mask), "modify_qp RTS");
}

// Many QPs on a few shared CQs, paired RC QPs connected to each other,
// some to ERR/RESET, destroyed in random order.
void round_qp(Objects &o)
{
	ibv_gid gid{};
	must0(ibv_query_gid(o.ctx, 1, g_gid_index, &gid), "query_gid");
	ibv_cq *cq[2];
	for (auto &c : cq)
		c = must(ibv_create_cq(o.ctx, 256 + rnd(1024), nullptr, nullptr, 0), "create_cq");
	// Objects of a round are left to the kernel's cleanup at exit when a
	// verb fails midway.
	std::vector<ibv_qp *> qps;
	for (unsigned i = 0; i < g_qps && !g_stop; ++i) {
		ibv_qp_type t = rnd(8) == 0 ? IBV_QPT_UD : IBV_QPT_RC;
		qps.push_back(create_qp(o.pd, cq[rnd(2)], cq[rnd(2)], t));
		qp_to_init(qps.back());
	}
	for (size_t i = 0; i < qps.size() && !g_stop; ++i) {
		ibv_qp *q = qps[i];
		if (rnd(4) == 0)
			continue;		// stays in INIT
		qp_to_rts(q, qps[(i ^ 1) < qps.size() ? (i ^ 1) : i]->qp_num, gid);
		ibv_qp_attr a{};
		ibv_qp_init_attr ia{};
		must0(ibv_query_qp(q, &a, IBV_QP_STATE | IBV_QP_CAP, &ia), "query_qp");
		if (rnd(3) == 0) {
			a = ibv_qp_attr{};
			a.qp_state = rnd(2) ? IBV_QPS_ERR : IBV_QPS_RESET;
			must0(ibv_modify_qp(q, &a, IBV_QP_STATE), "modify_qp ERR/RESET");
		}
	}
	while (!qps.empty()) {
		size_t i = rnd(qps.size());
		ibv_qp *q = qps[i];
		qps[i] = qps.back();
		qps.pop_back();
		must0(ibv_destroy_qp(q), "destroy_qp");
	}
	for (auto *c : cq)
		must0(ibv_destroy_cq(c), "destroy_cq");
}

// Registration churn: a window of live MRs over one mapping, random offsets,
// lengths and access flags; the same pages registered many times.
void round_mr(Objects &o)
{
	const int access[] = {IBV_ACCESS_LOCAL_WRITE,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC};
	std::vector<ibv_mr *> win;
	for (int i = 0; i < 200 && !g_stop; ++i) {
		size_t len = 1 + rnd(rnd(4) == 0 ? (4u << 20) : 65536);
		size_t off = rnd(o.buf_len - len);
		win.push_back(must(ibv_reg_mr(o.pd, static_cast<char *>(o.buf) + off, len,
					      access[rnd(4)]), "reg_mr"));
		if (win.size() > 32 || rnd(3) == 0) {
			size_t j = rnd(win.size());
			ibv_mr *m = win[j];
			win[j] = win.back();
			win.pop_back();
			must0(ibv_dereg_mr(m), "dereg_mr");
		}
	}
	for (auto *m : win)
		must0(ibv_dereg_mr(m), "dereg_mr");
}

// CQ churn: sizes from 1 to 64k, with and without a completion channel,
// armed or not, polled empty.
void round_cq(Objects &o)
{
	for (int i = 0; i < 100 && !g_stop; ++i) {
		ibv_comp_channel *ch = rnd(2) ? must(ibv_create_comp_channel(o.ctx), "create_comp_channel") : nullptr;
		int cqe = rnd(4) == 0 ? 65536 : 1 + rnd(4096);
		ibv_cq *cq = must(ibv_create_cq(o.ctx, cqe, nullptr, ch, 0), "create_cq");
		if (ch && rnd(2))
			must0(ibv_req_notify_cq(cq, rnd(2)), "req_notify_cq");
		ibv_wc wc[4];
		if (ibv_poll_cq(cq, 4, wc) != 0)
			fail("poll_cq on an empty CQ", EINVAL);
		must0(ibv_destroy_cq(cq), "destroy_cq");
		if (ch)
			must0(ibv_destroy_comp_channel(ch), "destroy_comp_channel");
	}
}

// A standing set for --live: QPs in every state, MRs, CQs with channels.
void standing_set(Objects &o)
{
	ibv_gid gid{};
	must0(ibv_query_gid(o.ctx, 1, g_gid_index, &gid), "query_gid");
	for (int i = 0; i < 4; ++i) {
		o.chans.push_back(must(ibv_create_comp_channel(o.ctx), "create_comp_channel"));
		o.cqs.push_back(must(ibv_create_cq(o.ctx, 512, nullptr, o.chans.back(), 0), "create_cq"));
		must0(ibv_req_notify_cq(o.cqs.back(), 0), "req_notify_cq");
	}
	for (unsigned i = 0; i < g_qps; ++i) {
		o.qps.push_back(create_qp(o.pd, o.cqs[rnd(4)], o.cqs[rnd(4)],
					  rnd(8) == 0 ? IBV_QPT_UD : IBV_QPT_RC));
		qp_to_init(o.qps.back());
		if (i % 2 == 1)
			qp_to_rts(o.qps.back(), o.qps[i - 1]->qp_num, gid);
	}
	for (int i = 0; i < 32; ++i)
		o.mrs.push_back(must(ibv_reg_mr(o.pd, static_cast<char *>(o.buf) + rnd(o.buf_len / 2),
						o.buf_len / 4, IBV_ACCESS_LOCAL_WRITE), "reg_mr"));
}

int usage(const char *prog)
{
	std::fprintf(stderr, "usage: %s [--rounds N] [--qps N] [--live READY_FILE] IBDEV GID_INDEX qp|mr|cq|mixed\n",
		     prog);
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	int rounds = 10;
	const char *ready = nullptr;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i += 2) {
		if (i + 1 >= argc)
			return usage(argv[0]);
		if (!std::strcmp(argv[i], "--rounds"))
			rounds = std::atoi(argv[i + 1]);
		else if (!std::strcmp(argv[i], "--qps"))
			g_qps = std::atoi(argv[i + 1]);
		else if (!std::strcmp(argv[i], "--live"))
			ready = argv[i + 1];
		else
			return usage(argv[0]);
	}
	if (argc - i != 3 || rounds <= 0 || g_qps == 0 || g_qps > 4096)
		return usage(argv[0]);
	g_dev = argv[i];
	g_gid_index = std::atoi(argv[i + 1]);
	const std::string mode = argv[i + 2];
	if (mode != "qp" && mode != "mr" && mode != "cq" && mode != "mixed")
		return usage(argv[0]);
	g_live = ready != nullptr;
	g_rng.seed(getpid());
	std::signal(SIGTERM, on_signal);
	std::signal(SIGINT, on_signal);

	Objects &o = g_obj;
	int status = 0;
	const char *how = "done";
	try {
		int n = 0;
		ibv_device **list = ibv_get_device_list(&n);
		if (!list)
			fail("get_device_list", errno);
		for (int d = 0; d < n; ++d)
			if (!std::strcmp(ibv_get_device_name(list[d]), g_dev))
				o.ctx = ibv_open_device(list[d]);
		ibv_free_device_list(list);
		must(o.ctx, "open_device");
		o.pd = must(ibv_alloc_pd(o.ctx), "alloc_pd");
		o.buf = mmap(nullptr, o.buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (o.buf == MAP_FAILED)
			fail("mmap", errno);
		std::memset(o.buf, 0x5a, o.buf_len);
		if (g_live) {
			standing_set(o);
			std::ofstream(ready) << "ready\n";
		}
		for (int r = 0; (g_live || r < rounds) && !g_stop; ++r) {
			if (mode == "qp" || mode == "mixed")
				round_qp(o);
			if (mode == "mr" || mode == "mixed")
				round_mr(o);
			if (mode == "cq" || mode == "mixed")
				round_cq(o);
		}
		if (g_stop)
			how = "stopped";
	} catch (const Failure &f) {
		if (f.gone) {
			how = "device went away";
		} else {
			status = 1;
			how = "FAILED";
		}
	}
	o.release();
	std::printf("verbs_stress %s %s: %s after %lu verbs\n", g_dev, mode.c_str(), how, g_ops);
	return status;
}
