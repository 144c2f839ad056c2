// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// qp_scale - many connected RC QPs between two hosts, traffic on every one
// (issue 18, "scale targets, measured"; bench/qp_scale.sh,
// selftests/mroce/test_qp_scale.sh).
//
//   server:  mroce_qp_scale [options] IBDEV GID_INDEX
//   client:  mroce_qp_scale [options] IBDEV GID_INDEX SERVER_IP
//
// Each side creates N RC QPs on one CQ (timed: the create rate), the client
// sends the server its QPNs, GID, rkey and buffer address over a TCP
// control socket (the server answers with its own), and each side takes
// every QP through INIT, RTR and RTS (timed: the connect rate).  Then, for
// each round, on every QP the client posts an RDMA WRITE of a pattern of
// its own to the QP's slot at the server, a SEND with immediate (the QP's
// index) of another pattern, and an RDMA READ of the written slot back.
// The server checks every received SEND (QP, immediate, length, bytes) and
// the written slot of that QP; the client checks every READ.  Every byte of
// every QP is verified.  Last, the client posts --inflight WRITEs on every
// live QP and destroys its QPs in the --destroy order while those WRITEs
// are in flight on the QPs not yet destroyed: a completion of a live QP
// must still succeed.  The server then destroys its (idle) QPs in its own
// --destroy order.
//
// Options (the client's --qps, --size, --rounds and --fail-qp are the
// run's; the server takes them from the client and checks its --qps):
//   --qps N          RC QPs on each side (default 64)
//   --port P         TCP control port (default 18700)
//   --size BYTES     bytes per WRITE, SEND and READ (default 4096)
//   --rounds R       WRITE+SEND+READ rounds on every QP (default 1)
//   --fail-qp K      (client) QP K's first WR is a WRITE to an invalid rkey:
//                    it must fail with a remote access error and the QP's
//                    other WRs flush, while every other QP carries on
//                    (default: none)
//   --destroy ORDER  forward, reverse or interleaved (the even indexes up,
//                    then the odd ones down); default forward
//   --inflight W     WRITEs per QP in flight at teardown (default 2)
//   --max-outstanding M  (client) at most M WRs posted and not completed at
//                    once, over all QPs: paced traffic, still on every QP
//                    (default: as many as the CQ holds, 3 per QP)
//   --timeout S      the whole run's limit, a hang guard (default 300); the
//                    rounds give up after half of it and name the QPs
//                    whose completions are missing
//   --per-qp FILE    one line per QP: index qpn ok_wcs err_wcs first_error
//
// Output: KTAP results, and one "# qpscale key=value ..." line per side
// (rates in QPs per second, goodput in Mb/s of verified payload moved by
// the client's WRITEs, SENDs and READs, kernel memory from /proc/meminfo
// deltas around create+connect, per QP).  Exit status 0 when every check
// passed, 1 otherwise, 2 on usage.  Only libibverbs: any provider (mroce,
// rxe) works, so one run compares them.

#include "verbs_test.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>
#include <vector>

using namespace mroce_test;

namespace {

using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point t0)
{
	return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Opts {
	unsigned qps = 64;
	int port = 18700;
	uint32_t size = 4096;
	unsigned rounds = 1;
	int fail_qp = -1;
	std::string destroy = "forward";
	unsigned inflight = 2;
	unsigned max_out = 0;	// 0: as many as the CQ holds
	unsigned timeout = 300;
	std::string per_qp;
	std::string dev, server;
	int gid_index = 0;
};

// What each side tells the other first; the QPNs follow.
struct Hello {
	uint32_t magic, qps, size, rounds;
	int32_t fail_qp;
	uint32_t rkey;
	uint64_t addr;
	uint8_t gid[16];
};
constexpr uint32_t kMagic = 0x4d515053;	// "MQPS"

// The control socket: whole records or the run fails.
class Ctl {
public:
	explicit Ctl(int fd) : fd_(fd) {}
	~Ctl() { close(fd_); }
	Ctl(const Ctl &) = delete;
	Ctl &operator=(const Ctl &) = delete;
	bool put(const void *p, size_t n)
	{
		return send(fd_, p, n, MSG_NOSIGNAL) == ssize_t(n);
	}
	// Something to read already (without blocking)?
	bool readable()
	{
		pollfd p{ fd_, POLLIN, 0 };
		return ::poll(&p, 1, 0) > 0;
	}
	bool get(void *p, size_t n)
	{
		return recv(fd_, p, n, MSG_WAITALL) == ssize_t(n);
	}
	template <class T> bool put(const T &v) { return put(&v, sizeof(v)); }
	template <class T> bool get(T &v) { return get(&v, sizeof(v)); }

private:
	int fd_;
};

std::unique_ptr<Ctl> ctl_open(const Opts &o)
{
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(uint16_t(o.port));
	int one = 1;
	if (o.server.empty()) {
		int ls = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) || listen(ls, 1)) {
			close(ls);
			return nullptr;
		}
		int fd = accept(ls, nullptr, nullptr);
		close(ls);
		if (fd < 0)
			return nullptr;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		return std::make_unique<Ctl>(fd);
	}
	if (inet_pton(AF_INET, o.server.c_str(), &sa.sin_addr) != 1)
		return nullptr;
	// The server may not listen yet: retry for about 30 s.
	for (int tries = 0; tries < 150; ++tries) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return std::make_unique<Ctl>(fd);
		}
		close(fd);
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
	}
	return nullptr;
}

// A pattern strong enough that no two (QP, round, kind) ids share a slot's
// bytes: splitmix64 of the id and the 8-byte word's index.
uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void fill_id(uint8_t *p, uint64_t id, size_t n)
{
	for (size_t w = 0; w * 8 < n; ++w) {
		uint64_t v = mix(id * 0x100000001b3ULL + w);
		std::memcpy(p + w * 8, &v, std::min<size_t>(8, n - w * 8));
	}
}

bool check_id(const uint8_t *p, uint64_t id, size_t n)
{
	for (size_t w = 0; w * 8 < n; ++w) {
		uint64_t v = mix(id * 0x100000001b3ULL + w);
		if (std::memcmp(p + w * 8, &v, std::min<size_t>(8, n - w * 8)))
			return false;
	}
	return true;
}

enum Kind : uint64_t { kWrite = 0, kSend = 1, kRead = 2, kBad = 3, kTail = 4 };
uint64_t pat_id(unsigned qp, unsigned round, uint64_t kind)
{
	return (uint64_t(round) << 40) | (uint64_t(qp) << 8) | kind;
}
uint64_t wr_id(unsigned qp, uint64_t kind) { return (uint64_t(qp) << 8) | kind; }

// Kernel memory now (Slab + VmallocUsed + Percpu) and MemAvailable, bytes.
struct Mem {
	long long kernel = 0, avail = 0;
};
Mem mem_now()
{
	auto m = meminfo();
	return { m["Slab"] + m["VmallocUsed"] + m["Percpu"], m["MemAvailable"] };
}

std::vector<unsigned> destroy_order(const std::string &how, unsigned n)
{
	std::vector<unsigned> v;
	if (how == "reverse") {
		for (unsigned i = n; i-- > 0;)
			v.push_back(i);
	} else if (how == "interleaved") {
		for (unsigned i = 0; i < n; i += 2)
			v.push_back(i);
		for (unsigned i = n; i-- > 0;)
			if (i % 2)
				v.push_back(i);
	} else {
		for (unsigned i = 0; i < n; ++i)
			v.push_back(i);
	}
	return v;
}

struct PerQp {
	unsigned ok = 0, err = 0;
	int first_err = -1;	// ibv_wc_status of the first error
	bool verified = true;
	bool dead = false;	// destroyed
};

class Run {
public:
	Run(const Opts &o, Ktap &k) : o_(o), k_(k) {}
	int main();

private:
	bool setup();
	bool create();
	bool exchange();
	bool connect();
	bool traffic();
	bool round_client(unsigned r);
	bool round_server(unsigned r);
	bool teardown();
	void report();

	// Completions: polls up to max, counts them per QP; false on a
	// poll error.
	bool drain(unsigned max, std::vector<ibv_wc> &out);
	int index_of(uint32_t qpn) const
	{
		auto it = by_qpn_.find(qpn);
		return it == by_qpn_.end() ? -1 : int(it->second);
	}
	uint8_t *slot(unsigned region, unsigned qp) const
	{
		return buf_->p + (size_t(region) * o_.qps + qp) * o_.size;
	}
	uint64_t peer_slot(unsigned region, unsigned qp) const
	{
		return peer_.addr + (uint64_t(region) * o_.qps + qp) * o_.size;
	}
	bool post(unsigned qp, ibv_wr_opcode op, unsigned region, uint64_t kind,
		  uint64_t remote, uint32_t rkey);
	void note_wc(const ibv_wc &wc);
	void note_stalled(unsigned want_ok);
	void note_errors();

	Opts o_;
	Ktap &k_;
	bool client_ = false;
	Context ctx_;
	Pd pd_;
	Cq cq_;
	std::unique_ptr<PageBuf> buf_;
	Mr mr_;
	ibv_gid gid_{};
	unsigned cq_n_ = 0;
	std::vector<Qp> qp_;
	std::vector<PerQp> st_;
	std::unordered_map<uint32_t, unsigned> by_qpn_;
	std::vector<uint32_t> peer_qpn_;
	Hello peer_{};
	std::unique_ptr<Ctl> ctl_;
	unsigned outstanding_ = 0;
	double create_s_ = 0, connect_s_ = 0, traffic_s_ = 0, destroy_s_ = 0;
	uint64_t bytes_ = 0;
	Mem mem0_, mem1_;
	unsigned late_ = 0, tail_ok_ = 0;
	unsigned verified_qps_ = 0;	// client: every WR succeeded, READ data right
	// The rounds give up here (half of --timeout from the start), so
	// that a stall is reported QP by QP and the teardown still runs.
	Clock::time_point deadline_ = Clock::now();
};

bool Run::setup()
{
	ctx_ = open_device(o_.dev.c_str());
	if (!k_.result(bool(ctx_), "open " + o_.dev))
		return false;
	ibv_device_attr da{};
	if (ibv_query_device(ctx_.get(), &da) ||
	    ibv_query_gid(ctx_.get(), 1, o_.gid_index, &gid_))
		return k_.result(false, "query device and GID", errstr(errno));
	if (unsigned(da.max_qp) < o_.qps)
		return k_.result(false, "the device has room for " + std::to_string(o_.qps) +
					 " QPs", "max_qp " + std::to_string(da.max_qp));
	// Room for every QP's WRs of a round (and the server's receives).
	cq_n_ = unsigned(std::min<long long>(da.max_cqe, 4LL * o_.qps + 64));
	pd_.reset(ibv_alloc_pd(ctx_.get()));
	cq_.reset(pd_ ? ibv_create_cq(ctx_.get(), int(cq_n_), nullptr, nullptr, 0) : nullptr);
	// Regions: 0 WRITE target (read back), 1 SEND target or source, 2 the
	// client's WRITE source, 3 READ target.
	buf_ = std::make_unique<PageBuf>(size_t(4) * o_.qps * o_.size);
	if (pd_ && cq_ && buf_->p)
		mr_.reset(ibv_reg_mr(pd_.get(), buf_->p, buf_->len,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ));
	return k_.result(bool(mr_), "PD, CQ of " + std::to_string(cq_n_) + " and MR",
			 errstr(errno));
}

bool Run::create()
{
	mem0_ = mem_now();
	auto t0 = Clock::now();
	qp_.reserve(o_.qps);
	for (unsigned i = 0; i < o_.qps; ++i) {
		ibv_qp_init_attr ia{};
		ia.send_cq = cq_.get();
		ia.recv_cq = cq_.get();
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = std::max(4u, o_.inflight) + 1;
		ia.cap.max_recv_wr = 2;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		Qp q(ibv_create_qp(pd_.get(), &ia));
		if (!q)
			return k_.result(false, "create " + std::to_string(o_.qps) + " RC QPs",
					 "QP " + std::to_string(i) + ": " + errstr(errno));
		by_qpn_[q->qp_num] = i;
		qp_.push_back(std::move(q));
	}
	create_s_ = secs_since(t0);
	st_.assign(o_.qps, PerQp{});
	return k_.result(true, "create " + std::to_string(o_.qps) + " RC QPs");
}

bool Run::exchange()
{
	ctl_ = ctl_open(o_);
	if (!ctl_)
		return k_.result(false, "control connection", errstr(errno));
	Hello me{ kMagic, o_.qps, o_.size, o_.rounds, o_.fail_qp, mr_->rkey,
		  uint64_t(uintptr_t(buf_->p)), {} };
	std::memcpy(me.gid, gid_.raw, 16);
	std::vector<uint32_t> mine(o_.qps);
	for (unsigned i = 0; i < o_.qps; ++i)
		mine[i] = qp_[i]->qp_num;
	peer_qpn_.resize(o_.qps);
	bool ok = ctl_->put(me) && ctl_->get(peer_) && peer_.magic == kMagic &&
		  peer_.qps == o_.qps && ctl_->put(mine.data(), mine.size() * 4) &&
		  ctl_->get(peer_qpn_.data(), peer_qpn_.size() * 4);
	if (ok && !client_) {
		// The client's rounds and failing QP are the run's (the
		// buffers are already sized: --size must match).
		o_.rounds = peer_.rounds;
		o_.fail_qp = peer_.fail_qp;
	}
	return k_.result(ok && peer_.size == o_.size, "exchange QPNs, GIDs and rkeys",
			 "peer sent qps " + std::to_string(peer_.qps) + ", size " +
				 std::to_string(peer_.size));
}

bool Run::connect()
{
	ibv_gid dgid;
	std::memcpy(dgid.raw, peer_.gid, 16);
	auto t0 = Clock::now();
	for (unsigned i = 0; i < o_.qps; ++i)
		if (int rc = connect_rc(qp_[i].get(), o_.gid_index, dgid, peer_qpn_[i]))
			return k_.result(false, "connect " + std::to_string(o_.qps) + " QPs to RTS",
					 "QP " + std::to_string(i) + ": " + errstr(rc));
	connect_s_ = secs_since(t0);
	mem1_ = mem_now();
	// Both sides connected before the first packet.
	char c = 'C', d = 0;
	return k_.result(ctl_->put(c) && ctl_->get(d) && d == 'C',
			 "connect " + std::to_string(o_.qps) + " QPs to RTS");
}

void Run::note_wc(const ibv_wc &wc)
{
	int i = index_of(wc.qp_num);
	if (i < 0 || st_[unsigned(i)].dead) {
		++late_;
		return;
	}
	PerQp &s = st_[unsigned(i)];
	if (wc.status == IBV_WC_SUCCESS) {
		++s.ok;
		return;
	}
	++s.err;
	if (s.first_err < 0)
		s.first_err = wc.status;
}

bool Run::drain(unsigned max, std::vector<ibv_wc> &out)
{
	out.resize(std::max(1u, std::min(max, 64u)));
	int n = ibv_poll_cq(cq_.get(), int(out.size()), out.data());
	if (n < 0)
		return false;
	out.resize(unsigned(n));
	return true;
}

bool Run::post(unsigned qp, ibv_wr_opcode op, unsigned region, uint64_t kind,
	       uint64_t remote, uint32_t rkey)
{
	// Keep what is outstanding within the CQ (and --max-outstanding).
	std::vector<ibv_wc> wc;
	unsigned idle = 0;
	const unsigned cap = o_.max_out ? std::min(o_.max_out, cq_n_ - 8) : cq_n_ - 8;
	while (outstanding_ + 1 > cap) {
		if (!drain(64, wc))
			return false;
		for (auto &w : wc)
			note_wc(w);
		outstanding_ -= unsigned(wc.size());
		if (wc.empty() && ++idle > 64)
			std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
	ibv_sge sge{ uint64_t(uintptr_t(slot(region, qp))), o_.size, mr_->lkey };
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_id(qp, kind);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_SEND_WITH_IMM)
		wr.imm_data = htonl(qp);
	else {
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = rkey;
	}
	if (int rc = ibv_post_send(qp_[qp].get(), &wr, &bad)) {
		++st_[qp].err;
		if (st_[qp].first_err < 0)
			st_[qp].first_err = 1000 + rc;
		return true;	// counted against this QP; the others go on
	}
	++outstanding_;
	return true;
}

bool Run::round_client(unsigned r)
{
	char c = 0;
	if (!ctl_->get(c) || c != 'R')
		return k_.result(false, "round " + std::to_string(r) + ": server ready");
	for (unsigned i = 0; i < o_.qps; ++i) {
		fill_id(slot(2, i), pat_id(i, r, kWrite), o_.size);
		fill_id(slot(1, i), pat_id(i, r, kSend), o_.size);
		std::memset(slot(3, i), 0, o_.size);
	}
	const bool failing = o_.fail_qp >= 0;
	auto t0 = Clock::now();
	for (unsigned i = 0; i < o_.qps; ++i) {
		if (failing && i == unsigned(o_.fail_qp)) {
			if (r > 0)
				continue;	// in the error state since round 0
			if (!post(i, IBV_WR_RDMA_WRITE, 2, kBad, peer_slot(0, i),
				  peer_.rkey ^ 0x5a5a0000u))
				return false;
		}
		if (!post(i, IBV_WR_RDMA_WRITE, 2, kWrite, peer_slot(0, i), peer_.rkey) ||
		    !post(i, IBV_WR_SEND_WITH_IMM, 1, kSend, 0, 0) ||
		    !post(i, IBV_WR_RDMA_READ, 3, kRead, peer_slot(0, i), peer_.rkey))
			return false;
	}
	std::vector<ibv_wc> wc;
	unsigned idle = 0;
	while (outstanding_ && Clock::now() < deadline_) {
		if (!drain(64, wc))
			return k_.result(false, "round " + std::to_string(r) + ": poll CQ");
		for (auto &w : wc)
			note_wc(w);
		outstanding_ -= unsigned(wc.size());
		idle = wc.empty() ? idle + 1 : 0;
		if (idle > 64)
			std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
	traffic_s_ += secs_since(t0);
	if (outstanding_)
		note_stalled(3 * (r + 1));
	// READ data is checked where the QP's WRs all succeeded; the others
	// count as QPs with errors, not as wrong data.
	for (unsigned i = 0; i < o_.qps; ++i)
		if (!(failing && i == unsigned(o_.fail_qp)) && st_[i].err == 0 &&
		    st_[i].ok == 3 * (r + 1)) {
			if (check_id(slot(3, i), pat_id(i, r, kWrite), o_.size))
				bytes_ += 3ull * o_.size;
			else
				st_[i].verified = false;
		}
	// The server checks the WRITEs and SENDs, then says how many QPs'
	// data it found intact and how many not.
	uint32_t res[2] = { 0, 0 };
	c = 'D';
	if (!ctl_->put(c) || !ctl_->get(res))
		return k_.result(false, "round " + std::to_string(r) + ": server result");
	const unsigned live = o_.qps - (failing ? 1 : 0);
	return k_.result(outstanding_ == 0 && res[0] == live && res[1] == 0,
			 "round " + std::to_string(r) + ": the server verified WRITE and SEND data on " +
				 std::to_string(live) + " QPs",
			 std::to_string(res[0]) + " verified, " + std::to_string(res[1]) +
				 " bad, " + std::to_string(outstanding_) + " WRs not completed");
}

// How many QPs failed with which first error status, as a note.
void Run::note_errors()
{
	std::map<int, unsigned> h;
	for (unsigned i = 0; i < o_.qps; ++i)
		if (int(i) != o_.fail_qp && st_[i].first_err >= 0)
			++h[st_[i].first_err];
	std::string l;
	for (auto [status, n] : h)
		l += " " + std::to_string(n) + " x " +
		     (status < 1000 ? ibv_wc_status_str(ibv_wc_status(status)) :
				      "post_send " + errstr(status - 1000));
	k_.note("first error of the QPs that failed:" + l);
}

// The QPs whose completions are missing after the deadline, as a note.
void Run::note_stalled(unsigned want_ok)
{
	std::string l;
	unsigned n = 0;
	for (unsigned i = 0; i < o_.qps; ++i)
		if (int(i) != o_.fail_qp && st_[i].ok + st_[i].err < want_ok && n++ < 16)
			l += " " + std::to_string(i) + "/qpn " + std::to_string(qp_[i]->qp_num) + "/" +
			     std::to_string(st_[i].ok);
	k_.note(std::to_string(outstanding_) + " WRs not completed by the deadline on " +
		std::to_string(n) + " QPs; the first (index/qpn/completions):" + l);
}

bool Run::round_server(unsigned r)
{
	const bool failing = o_.fail_qp >= 0;
	std::vector<bool> expect(o_.qps, true), got(o_.qps, false);
	unsigned want = 0;
	for (unsigned i = 0; i < o_.qps; ++i) {
		std::memset(slot(0, i), 0, o_.size);
		std::memset(slot(1, i), 0, o_.size);
		if (failing && i == unsigned(o_.fail_qp)) {
			expect[i] = false;
			if (r > 0)
				continue;
		} else {
			++want;
		}
		ibv_sge sge{ uint64_t(uintptr_t(slot(1, i))), o_.size, mr_->lkey };
		ibv_recv_wr wr{}, *bad = nullptr;
		wr.wr_id = wr_id(i, kSend);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(qp_[i].get(), &wr, &bad))
			return k_.result(false, "round " + std::to_string(r) + ": post receives",
					 "QP " + std::to_string(i) + ": " + errstr(errno));
	}
	char c = 'R';
	if (!ctl_->put(c))
		return false;
	uint32_t res[2] = { 0, 0 };	// QPs verified, QPs bad
	std::vector<ibv_wc> wc;
	unsigned done = 0, idle = 0;
	// Once the client says all its WRs completed, an acknowledged SEND's
	// receive is already here: wait 5 s more at most, not until the
	// deadline, for the SENDs of QPs that failed at the client.
	auto end = deadline_;
	bool client_done = false;
	while (done < want && Clock::now() < end) {
		if (!client_done && ctl_->readable()) {
			client_done = true;
			end = std::min(end, Clock::now() + std::chrono::seconds(5));
		}
		if (!drain(64, wc))
			return k_.result(false, "round " + std::to_string(r) + ": poll CQ");
		idle = wc.empty() ? idle + 1 : 0;
		if (idle > 64)
			std::this_thread::sleep_for(std::chrono::microseconds(100));
		for (auto &w : wc) {
			note_wc(w);
			int i = index_of(w.qp_num);
			if (i < 0 || !expect[unsigned(i)]) {
				continue;	// the failed QP's receive (flushed) or stale
			}
			const unsigned q = unsigned(i);
			if (got[q]) {
				++res[1];
				continue;
			}
			got[q] = true;
			++done;
			bool ok = w.status == IBV_WC_SUCCESS && w.opcode == IBV_WC_RECV &&
				  (w.wc_flags & IBV_WC_WITH_IMM) && ntohl(w.imm_data) == q &&
				  w.byte_len == o_.size &&
				  check_id(slot(1, q), pat_id(q, r, kSend), o_.size) &&
				  check_id(slot(0, q), pat_id(q, r, kWrite), o_.size);
			if (ok)
				++res[0];
			else {
				++res[1];
				st_[q].verified = false;
				if (res[1] <= 5)
					k_.note("QP " + std::to_string(q) + ": status " +
						std::to_string(w.status) + ", imm " +
						std::to_string(ntohl(w.imm_data)) + ", len " +
						std::to_string(w.byte_len));
			}
		}
	}
	if (done < want) {
		std::string l;
		unsigned n = 0;
		for (unsigned i = 0; i < o_.qps; ++i)
			if (expect[i] && !got[i] && n++ < 16)
				l += " " + std::to_string(i) + "/qpn " + std::to_string(qp_[i]->qp_num);
		k_.note("round " + std::to_string(r) + ": " + std::to_string(want - done) +
			" QPs without their SEND; the first (index/qpn):" + l);
	}
	// The client's READs of the written slots are done when it says so.
	if (!ctl_->get(c) || c != 'D' || !ctl_->put(res))
		return k_.result(false, "round " + std::to_string(r) + ": client done");
	return k_.result(res[0] == want && res[1] == 0,
			 "round " + std::to_string(r) + ": WRITE and SEND data verified on " +
				 std::to_string(want) + " QPs",
			 std::to_string(res[0]) + " verified, " + std::to_string(res[1]) + " bad, " +
				 std::to_string(want - done) + " missing");
}

bool Run::traffic()
{
	bool ok = true;
	for (unsigned r = 0; r < o_.rounds; ++r)
		ok = (client_ ? round_client(r) : round_server(r)) && ok;
	if (!client_)
		return ok;
	const bool failing = o_.fail_qp >= 0;
	unsigned bad_qps = 0, unverified = 0;
	for (unsigned i = 0; i < o_.qps; ++i) {
		if (failing && i == unsigned(o_.fail_qp))
			continue;
		const bool complete = st_[i].err == 0 && st_[i].ok == 3 * o_.rounds;
		bad_qps += !complete;
		unverified += !st_[i].verified;
		verified_qps_ += complete && st_[i].verified;
	}
	const unsigned live = o_.qps - (failing ? 1 : 0);
	if (bad_qps)
		note_errors();
	ok = k_.result(bad_qps == 0, "every completion successful on " + std::to_string(live) + " QPs",
		       std::to_string(bad_qps) + " QPs with errors or missing completions") && ok;
	ok = k_.result(unverified == 0 && bad_qps == 0,
		       "READ back verified on " + std::to_string(live) + " QPs",
		       std::to_string(unverified) + " QPs read back other bytes, " +
			       std::to_string(bad_qps) + " QPs not checked (errors)") && ok;
	if (failing) {
		const PerQp &f = st_[unsigned(o_.fail_qp)];
		ok = k_.result(f.first_err == IBV_WC_REM_ACCESS_ERR && f.ok == 0,
			       "QP " + std::to_string(o_.fail_qp) +
				       ": WRITE to an invalid rkey fails with a remote access error",
			       "first error " + std::to_string(f.first_err) + ", " +
				       std::to_string(f.ok) + " successes") && ok;
	}
	return ok;
}

bool Run::teardown()
{
	auto order = destroy_order(o_.destroy, o_.qps);
	const bool failing = o_.fail_qp >= 0;
	unsigned bad = 0, destroy_err = 0;
	std::vector<unsigned> ok_before(o_.qps), err_before(o_.qps);
	for (unsigned i = 0; i < o_.qps; ++i) {
		ok_before[i] = st_[i].ok;
		err_before[i] = st_[i].err;
	}
	auto t0 = Clock::now();
	if (client_) {
		// WRITEs in flight on every live QP, as many as the CQ holds.
		unsigned w = std::min(o_.inflight, (cq_n_ - 8) / std::max(1u, o_.qps));
		for (unsigned k = 0; k < w; ++k)
			for (unsigned i = 0; i < o_.qps; ++i)
				if (!(failing && i == unsigned(o_.fail_qp)))
					post(i, IBV_WR_RDMA_WRITE, 2, kTail, peer_slot(0, i), peer_.rkey);
	} else {
		char c = 0;
		if (!ctl_->get(c) || c != 'B')
			return k_.result(false, "teardown: client finished");
	}
	std::vector<ibv_wc> wc;
	for (unsigned i : order) {
		// What completed so far, before this QP goes.
		while (drain(64, wc) && !wc.empty())
			for (auto &x : wc)
				note_wc(x);
		st_[i].dead = true;
		if (ibv_destroy_qp(qp_[i].release()))
			++destroy_err;
	}
	destroy_s_ = secs_since(t0);
	while (drain(64, wc) && !wc.empty())
		for (auto &x : wc)
			note_wc(x);
	for (unsigned i = 0; i < o_.qps; ++i) {
		if (failing && i == unsigned(o_.fail_qp))
			continue;
		bad += st_[i].err != err_before[i];
		tail_ok_ += st_[i].ok - ok_before[i];
	}
	char c = 'B', d = 0;
	if (client_)
		(void)(ctl_->put(c) && ctl_->get(d));
	else
		(void)ctl_->put(c);
	return k_.result(bad == 0 && destroy_err == 0,
			 "destroy " + std::to_string(o_.qps) + " QPs " + o_.destroy +
				 (client_ ? " with WRITEs in flight on the others" : ""),
			 std::to_string(bad) + " live QPs with errors, " +
				 std::to_string(destroy_err) + " destroy errors");
}

void Run::report()
{
	unsigned ok_wcs = 0, err_wcs = 0, qps_err = 0, qps_unverified = 0;
	for (auto &s : st_) {
		ok_wcs += s.ok;
		err_wcs += s.err;
		qps_err += s.err != 0;
		qps_unverified += !s.verified;
	}
	auto rate = [](unsigned n, double s) { return s > 0 ? n / s : 0.0; };
	const long long n = o_.qps;
	std::ostringstream l;
	l.setf(std::ios::fixed);
	l.precision(3);
	l << "qpscale dev=" << o_.dev << " role=" << (client_ ? "client" : "server")
	  << " qps=" << o_.qps << " size=" << o_.size << " rounds=" << o_.rounds
	  << " fail_qp=" << o_.fail_qp << " destroy=" << o_.destroy
	  << " max_outstanding=" << o_.max_out
	  << " create_s=" << create_s_ << " connect_s=" << connect_s_
	  << " create_rate=" << rate(o_.qps, create_s_) << " connect_rate=" << rate(o_.qps, connect_s_)
	  << " create_connect_rate=" << rate(o_.qps, create_s_ + connect_s_)
	  << " destroy_rate=" << rate(o_.qps, destroy_s_)
	  << " traffic_s=" << traffic_s_ << " verified_bytes=" << bytes_
	  << " goodput_mbps=" << (traffic_s_ > 0 ? bytes_ * 8 / traffic_s_ / 1e6 : 0.0)
	  << " ok_wcs=" << ok_wcs << " err_wcs=" << err_wcs << " qps_with_errors=" << qps_err
	  << " qps_unverified=" << qps_unverified << " qps_verified=" << verified_qps_
	  << " tail_ok_wcs=" << tail_ok_
	  << " late_wcs=" << late_
	  << " per_qp_kernel=" << (mem1_.kernel - mem0_.kernel) / n
	  << " per_qp_memavailable=" << (mem0_.avail - mem1_.avail) / n;
	k_.note(l.str());
	if (o_.per_qp.empty())
		return;
	std::ofstream f(o_.per_qp);
	f << "# qp qpn ok_wcs err_wcs first_error verified\n";
	for (unsigned i = 0; i < o_.qps; ++i)
		f << i << ' ' << (i < peer_qpn_.size() ? peer_qpn_[i] : 0) << ' ' << st_[i].ok << ' '
		  << st_[i].err << ' ' << st_[i].first_err << ' ' << st_[i].verified << '\n';
}

int Run::main()
{
	client_ = !o_.server.empty();
	deadline_ = Clock::now() + std::chrono::milliseconds(o_.timeout * 500ull);
	if (setup() && create() && exchange() && connect()) {
		traffic();
		teardown();
		report();
	}
	return k_.finish();
}

void usage(const char *me)
{
	std::fprintf(stderr,
		     "usage: %s [--qps N] [--port P] [--size BYTES] [--rounds R] [--fail-qp K]\n"
		     "          [--destroy forward|reverse|interleaved] [--inflight W]\n"
		     "          [--max-outstanding M]\n"
		     "          [--timeout S] [--per-qp FILE] IBDEV GID_INDEX [SERVER_IP]\n"
		     "N RC QPs to the peer, traffic verified on every one (server without\n"
		     "SERVER_IP; the client's --qps/--size/--rounds/--fail-qp are the run's)\n",
		     me);
	std::exit(2);
}

}  // namespace

int main(int argc, char **argv)
{
	Opts o;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
		if (i + 1 >= argc)
			usage(argv[0]);
		std::string opt = argv[i], v = argv[i + 1];
		unsigned long n = std::strtoul(v.c_str(), nullptr, 0);
		if (opt == "--qps")
			o.qps = unsigned(n);
		else if (opt == "--port")
			o.port = int(n);
		else if (opt == "--size")
			o.size = uint32_t(n);
		else if (opt == "--rounds")
			o.rounds = unsigned(n);
		else if (opt == "--fail-qp")
			o.fail_qp = int(n);
		else if (opt == "--destroy")
			o.destroy = v;
		else if (opt == "--inflight")
			o.inflight = unsigned(n);
		else if (opt == "--max-outstanding")
			o.max_out = unsigned(n);
		else if (opt == "--timeout")
			o.timeout = unsigned(n);
		else if (opt == "--per-qp")
			o.per_qp = v;
		else
			usage(argv[0]);
	}
	if (argc - i < 2 || argc - i > 3 || !o.qps || o.qps > (1u << 24) || !o.size ||
	    !o.rounds || (o.fail_qp >= 0 && unsigned(o.fail_qp) >= o.qps) ||
	    (o.destroy != "forward" && o.destroy != "reverse" && o.destroy != "interleaved"))
		usage(argv[0]);
	o.dev = argv[i];
	o.gid_index = std::atoi(argv[i + 1]);
	if (argc - i == 3)
		o.server = argv[i + 2];
	std::signal(SIGALRM, [](int) {
		static const char m[] = "# qp_scale: the run's time limit passed (a hang)\n"
					"not ok 99 finished within the time limit\n";
		(void)!::write(1, m, sizeof(m) - 1);
		_exit(1);
	});
	alarm(o.timeout);
	Ktap k;
	Run run(o, k);
	return run.main();
}
