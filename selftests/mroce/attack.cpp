// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// attack - what an unprivileged local user can do to the mroce kernel driver
// through the rings it shares with the kernel and through forged packets
// from a plain UDP socket.  Run by selftests/mroce/test_attack.sh, one
// group per process (so a hang in the kernel takes only its group down).
//
// Usage: mroce_attack [--user UID] [--hold FILE] IBDEV GID_INDEX GROUP
//   GROUP  ring | sq-rollback-rc | rq-rollback-rc | rq-rollback-ud | ah |
//          qp-flood | mr-dereg | read-inval | forge
//   --user UID   drop to UID (and gid UID, no supplementary groups) before
//                opening the device; the kernel then sees an unprivileged
//                caller (/dev/infiniband/uverbs* must be accessible to it)
//   --hold FILE  forge: with the attacked QPs still alive, create FILE.ready
//                and wait up to 60 s for FILE.done (the script reads the
//                per-connection debugfs counters in between)
// KTAP results on stdout ("ok N name" / "not ok N name", diagnostics as
// "# ..."); exit status 0 when every result passed, 1 otherwise, 2 on usage
// errors.
//
// Reaching the rings: the provider maps every ring (SQ, RQ, SRQ) of the uverbs
// command fd, ring control block at offset 0 (include/uapi/rdma/mroce-abi.h).
// Instead of depending on the provider's private object layout, the program
// compares the /dev/infiniband/uverbs* mappings of /proc/self/maps before and
// after creating a QP or SRQ: the new ones are its rings, told apart by the
// control block's entry_size (send WQEs are multiples of 64 bytes and at
// least 128 here, receive WQEs 16 + 16 * max_recv_sge = 32).  Writes there
// are exactly what any process can do to its own mapping.  The SQ doorbell
// without the provider (which would write a WQE first) is rdma-core's
// ibv_cmd_post_send() with no work request, the call the provider makes.

#include <infiniband/verbs.h>

extern "C" {
#include "mroce_core.h"
}
#include <rdma/mroce-abi.h>

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "verbs_test.hpp"

// rdma-core's private command helper (libibverbs, IBVERBS_PRIVATE_34): a
// POST_SEND carrying no work request is the mroce SQ doorbell.
extern "C" int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
				 struct ibv_send_wr **bad_wr);

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kQkey = 0x11111111;
constexpr uint32_t kGrh = 40;		// UD receive buffers start with the GRH
constexpr uint32_t kInline = 64;
constexpr uint8_t kEvil = 0xee;		// bytes only forged packets carry

// ---- KTAP ----------------------------------------------------------------

class Ktap {
public:
	void result(bool ok, const std::string &name, const std::string &why = {})
	{
		if (!ok && !why.empty())
			std::printf("# %s: %s\n", name.c_str(), why.c_str());
		std::printf("%s %d %s\n", ok ? "ok" : "not ok", ++n_, name.c_str());
		std::fflush(stdout);
		failed_ |= !ok;
	}
	bool failed() const { return failed_; }

private:
	int n_ = 0;
	bool failed_ = false;
};

Ktap g_ktap;

__attribute__((format(printf, 1, 2))) void diag(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	std::printf("# %s\n", buf);
	std::fflush(stdout);
}

__attribute__((format(printf, 1, 2))) std::string fmt(const char *f, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, f);
	std::vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	return buf;
}

// A failed setup step: ends the group with a "not ok" for it.
struct SetupError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

template <typename T> T *must(T *p, const char *what)
{
	if (!p)
		throw SetupError(fmt("%s: %s", what, std::strerror(errno)));
	return p;
}

void must0(int rc, const char *what)
{
	if (rc)
		throw SetupError(fmt("%s: %s", what, std::strerror(rc < 0 ? errno : rc)));
}

// ---- verbs objects (RAII) ------------------------------------------------

template <auto Fn> struct Destroy {
	template <typename T> void operator()(T *p) const noexcept
	{
		if (p)
			Fn(p);
	}
};
using Context = std::unique_ptr<ibv_context, Destroy<ibv_close_device>>;
using Pd = std::unique_ptr<ibv_pd, Destroy<ibv_dealloc_pd>>;
using Cq = std::unique_ptr<ibv_cq, Destroy<ibv_destroy_cq>>;
using Qp = std::unique_ptr<ibv_qp, Destroy<ibv_destroy_qp>>;
using Srq = std::unique_ptr<ibv_srq, Destroy<ibv_destroy_srq>>;
using Mr = std::unique_ptr<ibv_mr, Destroy<ibv_dereg_mr>>;
using Ah = std::unique_ptr<ibv_ah, Destroy<ibv_destroy_ah>>;

class Fd {
public:
	explicit Fd(int fd = -1) : fd_(fd) {}
	Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
	Fd &operator=(Fd &&o) noexcept
	{
		std::swap(fd_, o.fd_);
		return *this;
	}
	~Fd()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	int get() const { return fd_; }

private:
	int fd_;
};

constexpr int kAccessAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;

struct Dev {
	Context ctx;
	Pd pd;
	ibv_gid gid{};
	int gidx = 0;
	in_addr ip{};	// the GID's IPv4 address

	Cq cq(int n = 256) const
	{
		return Cq(must(ibv_create_cq(ctx.get(), n, nullptr, nullptr, 0), "create_cq"));
	}
	Mr reg(std::vector<uint8_t> &buf, int access = kAccessAll) const
	{
		return Mr(must(ibv_reg_mr(pd.get(), buf.data(), buf.size(), access), "reg_mr"));
	}
};

Dev open_dev(const char *name, int gidx)
{
	int n = 0;
	std::unique_ptr<ibv_device *, Destroy<ibv_free_device_list>> list(ibv_get_device_list(&n));
	if (!list)
		throw SetupError(fmt("get_device_list: %s", std::strerror(errno)));
	Dev d;
	for (int i = 0; i < n; ++i)
		if (!std::strcmp(ibv_get_device_name(list.get()[i]), name))
			d.ctx.reset(ibv_open_device(list.get()[i]));
	if (!d.ctx)
		throw SetupError(fmt("cannot open %s: %s", name, std::strerror(errno)));
	d.pd.reset(must(ibv_alloc_pd(d.ctx.get()), "alloc_pd"));
	d.gidx = gidx;
	must0(ibv_query_gid(d.ctx.get(), 1, gidx, &d.gid), "query_gid");
	std::memcpy(&d.ip, d.gid.raw + 12, 4);
	return d;
}

// ---- the shared rings, found through /proc/self/maps ---------------------

using mroce_test::uverbs_maps;

// A ring mapped by the provider (valid while its QP/SRQ lives).
struct RingView {
	mroce_ring_ctl *ctl = nullptr;

	uint32_t n() const { return ctl->num_entries; }
	uint32_t esz() const { return ctl->entry_size; }
	uint8_t *slot(uint32_t i) const
	{
		return reinterpret_cast<uint8_t *>(ctl) + MROCE_RING_CTL_SIZE +
		       static_cast<size_t>(i & (n() - 1)) * esz();
	}
	uint32_t producer() const { return std::atomic_ref(ctl->producer).load(std::memory_order_acquire); }
	uint32_t consumer() const { return std::atomic_ref(ctl->consumer).load(std::memory_order_acquire); }
	void set_producer(uint32_t v) { std::atomic_ref(ctl->producer).store(v, std::memory_order_release); }
	mroce_send_wqe *send_wqe(uint32_t i) const { return reinterpret_cast<mroce_send_wqe *>(slot(i)); }
	mroce_sge *send_sge(uint32_t i) const { return reinterpret_cast<mroce_sge *>(send_wqe(i) + 1); }
};

std::vector<RingView> new_rings(const std::set<uintptr_t> &before)
{
	std::vector<RingView> v;
	for (uintptr_t a : uverbs_maps())
		if (!before.count(a))
			v.push_back(RingView{reinterpret_cast<mroce_ring_ctl *>(a)});
	return v;
}

// ---- QPs -----------------------------------------------------------------

struct QpRings {
	RingView sq, rq;	// rq.ctl null with an SRQ
};

struct QpOpts {
	ibv_qp_type type = IBV_QPT_RC;
	ibv_srq *srq = nullptr;
	uint32_t send_wr = 64, recv_wr = 64;
};

Qp make_qp(const Dev &d, ibv_cq *scq, ibv_cq *rcq, const QpOpts &o, QpRings *rings = nullptr)
{
	ibv_qp_init_attr a{};
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.srq = o.srq;
	a.qp_type = o.type;
	a.cap.max_send_wr = o.send_wr;
	a.cap.max_recv_wr = o.srq ? 0 : o.recv_wr;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = o.srq ? 0 : 1;
	a.cap.max_inline_data = kInline;
	auto before = uverbs_maps();
	Qp qp(must(ibv_create_qp(d.pd.get(), &a), "create_qp"));
	if (rings) {
		*rings = {};
		for (const RingView &r : new_rings(before)) {
			if (r.esz() >= 128 && r.esz() % 64 == 0)
				rings->sq = r;
			else
				rings->rq = r;
		}
		if (!rings->sq.ctl || (!o.srq && !rings->rq.ctl))
			throw SetupError("the QP's rings are not among the new uverbs mappings");
	}
	return qp;
}

struct RcParams {
	uint8_t timeout = 14, retry = 7, rnr_retry = 7, min_rnr_timer = 12;
};

void to_init(ibv_qp *qp)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = kQkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = kAccessAll;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	must0(ibv_modify_qp(qp, &a, mask), "modify_qp INIT");
}

/*
 * A QP's send PSN is a function of its own QPN, so a pair agrees on both
 * directions (the peer's rq_psn is our sq_psn) without exchanging them, and
 * the ISNs the driver derives from them are nonzero and differ per QP.
 */
uint32_t psn_of(uint32_t qpn)
{
	return (qpn * 0x9e3779b1u + 0x123456u) & 0xffffffu;
}

void to_rts(const Dev &d, ibv_qp *qp, uint32_t dqpn, const RcParams &p = {})
{
	to_init(qp);
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTR;
	int mask = IBV_QP_STATE;
	if (qp->qp_type == IBV_QPT_RC) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = psn_of(dqpn);
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = p.min_rnr_timer;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = d.gid;
		a.ah_attr.grh.sgid_index = d.gidx;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	must0(ibv_modify_qp(qp, &a, mask), "modify_qp RTR");
	a = ibv_qp_attr{};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn_of(qp->qp_num);
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = p.timeout;
		a.retry_cnt = p.retry;
		a.rnr_retry = p.rnr_retry;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	must0(ibv_modify_qp(qp, &a, mask), "modify_qp RTS");
}

int to_err(ibv_qp *qp)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

Ah make_ah(const Dev &d)
{
	ibv_ah_attr a{};
	a.is_global = 1;
	a.grh.dgid = d.gid;
	a.grh.sgid_index = d.gidx;
	a.grh.hop_limit = 64;
	a.port_num = 1;
	return Ah(must(ibv_create_ah(d.pd.get(), &a), "create_ah"));
}

// Two connected QPs of one device (loopback): a requests, b responds.
// Members are destroyed in reverse order: QPs before their CQs and SRQ.
struct Pair {
	Cq cqa, cqb;
	Srq srq;
	Qp a, b;
	QpRings ra, rb;
	Ah ah;		// UD: a's handle to b
};

Pair make_pair(const Dev &d, ibv_qp_type type, bool srq = false, const RcParams &p = {})
{
	Pair x;
	x.cqa = d.cq(1024);
	x.cqb = d.cq(1024);
	RingView srq_ring;
	if (srq) {
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 64;
		sa.attr.max_sge = 1;
		auto before = uverbs_maps();
		x.srq.reset(must(ibv_create_srq(d.pd.get(), &sa), "create_srq"));
		auto rings = new_rings(before);
		if (rings.size() != 1)
			throw SetupError("the SRQ's ring is not among the new uverbs mappings");
		srq_ring = rings[0];
	}
	x.a = make_qp(d, x.cqa.get(), x.cqa.get(), {type}, &x.ra);
	x.b = make_qp(d, x.cqb.get(), x.cqb.get(), {type, x.srq.get()}, &x.rb);
	if (srq)
		x.rb.rq = srq_ring;
	to_rts(d, x.a.get(), x.b->qp_num, p);
	to_rts(d, x.b.get(), x.a->qp_num, p);
	if (type == IBV_QPT_UD)
		x.ah = make_ah(d);
	return x;
}

// ---- posting and polling -------------------------------------------------

void post_recv(const Pair &x, const ibv_mr *mr, uint64_t addr, uint32_t len, uint64_t wr_id)
{
	ibv_sge sge{addr, len, mr->lkey};
	ibv_recv_wr wr{};
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_recv_wr *bad;
	int rc = x.srq ? ibv_post_srq_recv(x.srq.get(), &wr, &bad) : ibv_post_recv(x.b.get(), &wr, &bad);
	must0(rc, "post_recv");
}

struct SendArgs {
	ibv_wr_opcode op = IBV_WR_SEND;
	uint64_t wr_id = 0;
	const ibv_mr *mr = nullptr;	// local buffer (none: inline)
	uint64_t addr = 0;
	uint32_t len = 0;
	uint64_t raddr = 0;
	uint32_t rkey = 0;
	unsigned flags = IBV_SEND_SIGNALED;
};

int post_send(const Pair &x, const SendArgs &s)
{
	ibv_sge sge{s.addr, s.len, s.mr ? s.mr->lkey : 0};
	ibv_send_wr wr{};
	wr.wr_id = s.wr_id;
	wr.opcode = s.op;
	wr.send_flags = s.flags | (s.mr ? 0 : IBV_SEND_INLINE);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (x.ah) {
		wr.wr.ud.ah = x.ah.get();
		wr.wr.ud.remote_qpn = x.b->qp_num;
		wr.wr.ud.remote_qkey = kQkey;
	} else {
		wr.wr.rdma.remote_addr = s.raddr;
		wr.wr.rdma.rkey = s.rkey;
	}
	ibv_send_wr *bad;
	return ibv_post_send(x.a.get(), &wr, &bad);
}

int doorbell(ibv_qp *qp)
{
	ibv_send_wr *bad = nullptr;
	return ibv_cmd_post_send(qp, nullptr, &bad);
}

std::optional<ibv_wc> poll_one(ibv_cq *cq, std::chrono::milliseconds limit)
{
	auto end = Clock::now() + limit;
	ibv_wc wc{};
	do {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			throw SetupError(fmt("poll_cq: %d (corrupt CQ ring?)", n));
		if (n == 1)
			return wc;
		std::this_thread::sleep_for(100us);
	} while (Clock::now() < end);
	return std::nullopt;
}

// Every completion until the CQ stayed empty for `quiet`, at most `limit`.
std::vector<ibv_wc> drain(ibv_cq *cq, std::chrono::milliseconds quiet = 300ms,
			  std::chrono::milliseconds limit = 20000ms)
{
	std::vector<ibv_wc> v;
	auto end = Clock::now() + limit;
	while (Clock::now() < end) {
		auto wc = poll_one(cq, quiet);
		if (!wc)
			break;
		v.push_back(*wc);
	}
	return v;
}

uint8_t pat(uint64_t i, uint32_t seed)
{
	return static_cast<uint8_t>((i * 131 + seed * 7) % 251 + 1);
}

std::vector<uint8_t> pattern(size_t n, uint32_t seed)
{
	std::vector<uint8_t> v(n);
	for (size_t i = 0; i < n; ++i)
		v[i] = pat(i, seed);
	return v;
}

// Index of the first byte where a and b differ over n bytes, or -1.
long first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; ++i)
		if (a[i] != b[i])
			return static_cast<long>(i);
	return -1;
}

// ---- group: ring corruption without a rolled-back consumer ----------------

// What the receiver b saw: every successful receive must carry exactly one
// of the payloads a posted (or, for UD, that behind the GRH), and the rest
// of every receive buffer must still be zero.
struct RecvCheck {
	std::vector<uint8_t> buf;	// b's receive buffers, slot_len each
	Mr mr;
	uint32_t slot_len = 0;
	uint32_t slots = 0;

	void init(const Dev &d, const Pair &x, uint32_t n, uint32_t len)
	{
		slot_len = len;
		slots = n;
		buf.assign(static_cast<size_t>(n) * len, 0);
		mr = d.reg(buf);
		for (uint32_t i = 0; i < n; ++i)
			post_recv(x, mr.get(), reinterpret_cast<uint64_t>(&buf[size_t(i) * len]), len, 1000 + i);
	}
	// why is empty when every completion and every byte is explained.
	std::string verify(const std::vector<ibv_wc> &wcs, const std::vector<uint8_t> &sent, bool ud) const
	{
		const uint32_t off = ud ? kGrh : 0;
		std::vector<bool> used(slots);
		for (const ibv_wc &wc : wcs) {
			if (wc.wr_id < 1000 || wc.wr_id >= 1000 + slots)
				return fmt("receive completion with unknown wr_id %" PRIu64, wc.wr_id);
			const uint32_t i = wc.wr_id - 1000;
			if (wc.status != IBV_WC_SUCCESS)
				continue;
			used[i] = true;
			const uint8_t *p = &buf[size_t(i) * slot_len];
			if (wc.byte_len != off + sent.size())
				return fmt("receive %u: byte_len %u, %zu bytes were posted", i, wc.byte_len, off + sent.size());
			long k = first_diff(p + off, sent.data(), sent.size());
			if (k >= 0)
				return fmt("receive %u: byte %ld is 0x%02x, the sender posted 0x%02x", i, k, p[off + k], sent[k]);
		}
		for (uint32_t i = 0; i < slots; ++i) {
			const uint8_t *p = &buf[size_t(i) * slot_len];
			const uint32_t from = used[i] ? off + sent.size() : 0;
			for (uint32_t k = from; k < slot_len; ++k)
				if (p[k])
					return fmt("receive buffer %u byte %u is 0x%02x: nothing was sent there", i, k, p[k]);
		}
		return {};
	}
};

// The sender's completions: each known (wr_id below limit) and, after the
// first error, no success.  why empty when sound.
std::string check_send_wcs(const std::vector<ibv_wc> &wcs, uint64_t wr_id_limit)
{
	bool err = false;
	for (const ibv_wc &wc : wcs) {
		if (wc.status == IBV_WC_SUCCESS && wc.wr_id >= wr_id_limit)
			return fmt("a success for wr_id %" PRIu64 ", which was never posted", wc.wr_id);
		if (wc.status == IBV_WC_SUCCESS && err)
			return "a success after an error completion";
		err |= wc.status != IBV_WC_SUCCESS;
	}
	return {};
}

std::string wcs_str(const std::vector<ibv_wc> &wcs)
{
	std::ostringstream o;
	size_t i = 0;
	for (const ibv_wc &wc : wcs) {
		if (i++ == 8) {
			o << " ...";
			break;
		}
		o << " " << wc.wr_id << ":" << ibv_wc_status_str(wc.status);
	}
	return fmt("%zu completions%s", wcs.size(), o.str().c_str());
}

enum class Corrupt { overrun, garbage, rollback };
const char *corrupt_name(Corrupt c)
{
	return c == Corrupt::overrun ? "overrun" : c == Corrupt::garbage ? "garbage" : "rolled back";
}

uint32_t corrupt_value(Corrupt c, const RingView &r, std::mt19937 &rng)
{
	switch (c) {
	case Corrupt::overrun:
		return r.consumer() + r.n() * 1000 + 7;
	case Corrupt::garbage:
		return rng() | 0x80000000u;	// never near the small indices used here
	case Corrupt::rollback:
		break;
	}
	return r.consumer() - 1;	// below what the kernel released
}

// One SQ corruption on a fresh pair: a legit SEND is posted and delivered,
// then the producer index is corrupted, the doorbell rung, the QP moved to
// ERR and destroyed.  The receiver must see the posted bytes only.
void sq_corrupt(const Dev &d, ibv_qp_type type, Corrupt c, std::mt19937 &rng)
{
	const std::string name = fmt("%s SQ producer %s: doorbell, ERR, destroy; peer gets posted bytes only",
				     type == IBV_QPT_RC ? "RC" : "UD", corrupt_name(c));
	Pair x = make_pair(d, type);
	RecvCheck rc;
	rc.init(d, x, 8, 256);
	std::vector<uint8_t> sent = pattern(48, 1);
	std::vector<uint8_t> sbuf = sent;
	Mr smr = d.reg(sbuf);
	must0(post_send(x, {IBV_WR_SEND, 1, smr.get(), reinterpret_cast<uint64_t>(sbuf.data()), 48}), "post_send");
	auto first = poll_one(x.cqa.get(), 10000ms);
	for (int i = 0; i < 3; ++i) {
		x.ra.sq.set_producer(corrupt_value(c, x.ra.sq, rng));
		int db = doorbell(x.a.get());
		if (i == 0)
			diag("%s: doorbell after the corruption returned %d", name.c_str(), db);
	}
	std::this_thread::sleep_for(200ms);
	int e = to_err(x.a.get());
	auto swcs = drain(x.cqa.get());
	if (first)
		swcs.insert(swcs.begin(), *first);
	auto rwcs = drain(x.cqb.get());
	std::string why;
	if (e)
		why = fmt("modify_qp(ERR) failed: %s", std::strerror(e));
	if (why.empty())
		why = check_send_wcs(swcs, 2);
	if (why.empty())
		why = rc.verify(rwcs, sent, type == IBV_QPT_UD);
	const uint32_t slots = x.ra.sq.n();
	if (why.empty() && swcs.size() > slots + 1)
		why = fmt("%zu send completions from a ring of %u", swcs.size(), slots);
	if (!why.empty())
		diag("sender: %s; receiver: %s", wcs_str(swcs).c_str(), wcs_str(rwcs).c_str());
	x.a.reset();	// destroy with the corrupt index in place
	g_ktap.result(why.empty(), name, why);
}

// One RQ (or SRQ) corruption: two receives are posted, the producer is
// corrupted, the sender sends twice; the receiver must have taken at most
// the legit receives, with the posted bytes.
void rq_corrupt(const Dev &d, ibv_qp_type type, bool srq, Corrupt c, std::mt19937 &rng)
{
	const std::string name = fmt("%s %s producer %s: traffic, ERR, destroy; only posted receives used, posted bytes only",
				     type == IBV_QPT_RC ? "RC" : "UD", srq ? "SRQ" : "RQ", corrupt_name(c));
	RcParams p;
	p.rnr_retry = 1;	// a receiver without receives ends the SEND soon
	p.min_rnr_timer = 1;
	p.timeout = 12;
	Pair x = make_pair(d, type, srq, p);
	RecvCheck rc;
	rc.init(d, x, 2, 256);
	std::vector<uint8_t> sent = pattern(48, 2);
	std::vector<uint8_t> sbuf = sent;
	Mr smr = d.reg(sbuf);
	std::vector<ibv_wc> rwcs;
	if (c == Corrupt::rollback) {
		// The kernel takes the first receive, then the index goes back.
		must0(post_send(x, {IBV_WR_SEND, 1, smr.get(), reinterpret_cast<uint64_t>(sbuf.data()), 48}), "post_send");
		if (auto wc = poll_one(x.cqb.get(), 10000ms))
			rwcs.push_back(*wc);
		x.rb.rq.set_producer(x.rb.rq.consumer() - 1);
	} else {
		x.rb.rq.set_producer(corrupt_value(c, x.rb.rq, rng));
	}
	for (uint64_t id = 2; id < 4; ++id)
		post_send(x, {IBV_WR_SEND, id, smr.get(), reinterpret_cast<uint64_t>(sbuf.data()), 48});
	auto swcs = drain(x.cqa.get(), 1500ms);
	int e = to_err(x.b.get());
	auto more = drain(x.cqb.get());
	rwcs.insert(rwcs.end(), more.begin(), more.end());
	std::string why;
	if (e)
		why = fmt("modify_qp(ERR) failed: %s", std::strerror(e));
	if (why.empty())
		why = check_send_wcs(swcs, 4);
	if (why.empty())
		why = rc.verify(rwcs, sent, type == IBV_QPT_UD);
	if (why.empty() && rwcs.size() > 2)
		why = fmt("%zu receive completions, 2 receives were posted", rwcs.size());
	if (!why.empty())
		diag("sender: %s; receiver: %s", wcs_str(swcs).c_str(), wcs_str(rwcs).c_str());
	x.b.reset();
	g_ktap.result(why.empty(), name, why);
}

// A posted SEND's WQE rewritten after the kernel read it (its receive
// completion proves that), then copied to the next slot as a new WQE and the
// doorbell rung: the receiver gets the posted bytes once and nothing else;
// the rewritten copy must fail (or send only the send buffer's bytes).
enum class Field { opcode, num_sge, inline_len, lkey, length };
const char *field_name(Field f)
{
	switch (f) {
	case Field::opcode: return "opcode";
	case Field::num_sge: return "num_sge";
	case Field::inline_len: return "inline_len";
	case Field::lkey: return "lkey";
	case Field::length: return "length";
	}
	return "?";
}

void wqe_rewrite(const Dev &d, ibv_qp_type type, Field f)
{
	const std::string name = fmt("%s WQE %s rewritten after the kernel read it: peer gets posted bytes only",
				     type == IBV_QPT_RC ? "RC" : "UD", field_name(f));
	Pair x = make_pair(d, type);
	RecvCheck rc;
	rc.init(d, x, 4, 4096 + kGrh);
	// A secret next to the send buffer: a rewritten lkey/length must not
	// make the kernel send it.
	std::vector<uint8_t> secret(8192, 0x5a);
	Mr secret_mr = d.reg(secret);
	const bool inl = f == Field::inline_len;
	std::vector<uint8_t> sent = pattern(inl ? 32 : 64, 3);
	std::vector<uint8_t> sbuf = sent;
	Mr smr = d.reg(sbuf);
	const uint32_t idx = x.ra.sq.producer();
	SendArgs s{IBV_WR_SEND, 1, inl ? nullptr : smr.get(), reinterpret_cast<uint64_t>(sbuf.data()),
		   static_cast<uint32_t>(sent.size())};
	must0(post_send(x, s), "post_send");
	// The kernel reads the SQ in its doorbell (deferred to the QP's timer):
	// the receive completion proves the WQE was read.
	std::vector<ibv_wc> rwcs;
	if (auto wc = poll_one(x.cqb.get(), 10000ms))
		rwcs.push_back(*wc);
	mroce_send_wqe *w = x.ra.sq.send_wqe(idx);
	mroce_sge *sge = x.ra.sq.send_sge(idx);
	switch (f) {
	case Field::opcode: w->opcode = 0xff; break;
	case Field::num_sge: w->num_sge = 0xffffffff; break;
	case Field::inline_len: w->inline_len = 0xffffffff; break;
	case Field::lkey: sge->lkey = secret_mr->lkey; break;
	case Field::length: sge->length = 0x7fffffff; break;
	}
	doorbell(x.a.get());
	// Same slot once more as a new WQE: wr_id 2, index moved by one (the
	// kernel reads it now, after the rewrite: it must fail or send only
	// bytes of the send buffer's registration).
	w->wr_id = 2;
	x.ra.sq.set_producer(idx + 2);
	std::memcpy(x.ra.sq.slot(idx + 1), w, x.ra.sq.esz());
	doorbell(x.a.get());
	auto swcs = drain(x.cqa.get(), 1000ms);
	to_err(x.a.get());
	auto more = drain(x.cqa.get());
	swcs.insert(swcs.end(), more.begin(), more.end());
	auto more_r = drain(x.cqb.get());
	rwcs.insert(rwcs.end(), more_r.begin(), more_r.end());
	std::string why = check_send_wcs(swcs, 3);
	if (why.empty())
		why = rc.verify(rwcs, sent, type == IBV_QPT_UD);
	if (why.empty() && (rwcs.empty() || rwcs[0].status != IBV_WC_SUCCESS))
		why = "the SEND posted before the rewrite did not arrive";
	if (!why.empty())
		diag("sender: %s; receiver: %s", wcs_str(swcs).c_str(), wcs_str(rwcs).c_str());
	g_ktap.result(why.empty(), name, why);
}

void group_ring(const Dev &d)
{
	std::mt19937 rng(4792);
	for (ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UD}) {
		for (Corrupt c : {Corrupt::overrun, Corrupt::garbage})
			sq_corrupt(d, t, c, rng);
		for (Corrupt c : {Corrupt::overrun, Corrupt::garbage})
			rq_corrupt(d, t, false, c, rng);
		for (Field f : {Field::opcode, Field::num_sge, Field::inline_len, Field::lkey, Field::length})
			wqe_rewrite(d, t, f);
	}
	// UD completes sends in the doorbell: a rollback only goes below the
	// consumer, the kernel must ignore it.
	sq_corrupt(d, IBV_QPT_UD, Corrupt::rollback, rng);
	for (Corrupt c : {Corrupt::overrun, Corrupt::garbage, Corrupt::rollback})
		rq_corrupt(d, IBV_QPT_RC, true, c, rng);
}

// ---- groups: producer rolled back below what the kernel read --------------
// On a kernel that bounds the index by the completed cursor instead of the
// read one, the next ring read spins ~2^32 times with interrupts off and
// the QP's lock held.  Each group runs alone in its own process, last, under
// the script's watchdog, and the call that may spin runs in a thread with a
// deadline.  When it does not return, the group reports the hang and ends
// at once with _exit(): no destructor may touch the spinning QP (its lock is
// held: a second CPU would spin on it too and wedge the guest), and the
// stuck thread keeps the process, its uverbs file and so the QP alive, so
// nothing else frees it under the spinning CPU.

double time_factor()
{
	const char *f = std::getenv("MROCE_TIME_FACTOR");
	const double v = f ? std::atof(f) : 1;
	return v >= 1 ? v : 1;
}

// op's result, or nothing when it did not return within limit (the thread
// is then left behind, stuck in the kernel).
std::optional<int> bounded(std::function<int()> op, std::chrono::seconds limit)
{
	constexpr int kRunning = -1000000;
	auto res = std::make_shared<std::atomic<int>>(kRunning);
	std::thread t([res, op = std::move(op)] { res->store(op()); });
	const auto end = Clock::now() + limit * time_factor();
	while (res->load() == kRunning && Clock::now() < end)
		std::this_thread::sleep_for(10ms);
	if (res->load() == kRunning) {
		t.detach();
		return std::nullopt;
	}
	t.join();
	return res->load();
}

[[noreturn]] void hang(const std::string &name, const char *call, std::chrono::seconds limit)
{
	g_ktap.result(false, name,
		      fmt("%s did not return within %lld s: the kernel is spinning on the rolled-back index",
			  call, static_cast<long long>(limit.count() * time_factor())));
	std::printf("# HANG: a thread of this process stays stuck in the kernel\n");
	std::fflush(stdout);
	_exit(1);
}

// RC SQ: four SENDs to a QPN nobody owns are read and outstanding (no ACK
// comes), the producer goes back to consumer + 1, then doorbell, ERR,
// destroy.  Expected: the bad index ignored (a ratelimited warning), the
// four flushed, nothing else executed.
void group_sq_rollback_rc(const Dev &d)
{
	const std::string name = "RC SQ producer rolled back below the read WQEs: ignored; doorbell, ERR, destroy finish";
	Cq cq = d.cq(1024);
	QpRings r;
	Qp a = make_qp(d, cq.get(), cq.get(), {IBV_QPT_RC}, &r);
	RcParams p;
	p.timeout = 18;	// about 1 s per retry round: outstanding long enough
	to_rts(d, a.get(), 0xfff000, p);
	std::vector<uint8_t> sbuf = pattern(64, 4);
	Mr smr = d.reg(sbuf);
	for (uint64_t id = 1; id <= 4; ++id) {
		ibv_sge sge{reinterpret_cast<uint64_t>(sbuf.data()), 64, smr->lkey};
		ibv_send_wr wr{};
		wr.wr_id = id;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ibv_send_wr *bad;
		must0(ibv_post_send(a.get(), &wr, &bad), "post_send");
	}
	std::this_thread::sleep_for(100ms);
	const uint32_t slots = r.sq.n();
	diag("producer %u consumer %u; rolling back to %u", r.sq.producer(), r.sq.consumer(),
	     r.sq.consumer() + 1);
	r.sq.set_producer(r.sq.consumer() + 1);
	const auto limit = 20s;
	ibv_qp *qp = a.get();
	auto db = bounded([qp] { return doorbell(qp); }, limit);
	if (!db)
		hang(name, "the doorbell", limit);
	std::this_thread::sleep_for(200ms);	// the doorbell's deferred ring read
	auto e = bounded([qp] { return to_err(qp); }, limit);
	if (!e)
		hang(name, "modify_qp(ERR)", limit);
	auto wcs = drain(cq.get());
	if (!bounded([&a] { a.reset(); return 0; }, limit))
		hang(name, "destroy_qp", limit);
	diag("doorbell %d, modify_qp(ERR) %d, %s", *db, *e, wcs_str(wcs).c_str());
	std::string why = *e ? fmt("modify_qp(ERR) failed: %s", std::strerror(*e)) : check_send_wcs(wcs, 5);
	if (why.empty() && wcs.size() != 4)
		why = fmt("%zu completions for the 4 WRs posted (a ring of %u slots): the kernel executed "
			  "slots beyond the producer index", wcs.size(), slots);
	for (const ibv_wc &wc : wcs)
		if (why.empty() && (wc.wr_id < 1 || wc.wr_id > 4))
			why = fmt("a completion for wr_id %" PRIu64 ": never posted", wc.wr_id);
	g_ktap.result(why.empty(), name, why);
}

// RQ of RC or UD: eight receives posted, one SEND arrives (the kernel reads
// all eight into its shadow), the producer goes back to consumer + 1 (below
// the read ones), then modify_qp(ERR) (which reads the ring to flush it) and
// destroy.  Expected: the bad index ignored, at most the 7 remaining
// receives flushed, nothing spins.  The ring read is triggered by our own
// modify_qp, not by a packet: a spinning receive path would hold the lock
// that every later packet (RC retransmissions) needs on the other CPU.
void group_rq_rollback(const Dev &d, ibv_qp_type type)
{
	const std::string name = fmt("%s RQ producer rolled back below the read WQEs: ignored; ERR, destroy finish",
				     type == IBV_QPT_RC ? "RC" : "UD");
	Pair x = make_pair(d, type);
	RecvCheck rc;
	rc.init(d, x, 8, 256);
	std::vector<uint8_t> sent = pattern(48, 5);
	std::vector<uint8_t> sbuf = sent;
	Mr smr = d.reg(sbuf);
	must0(post_send(x, {IBV_WR_SEND, 1, smr.get(), reinterpret_cast<uint64_t>(sbuf.data()), 48}), "post_send");
	std::vector<ibv_wc> rwcs;
	if (auto wc = poll_one(x.cqb.get(), 10000ms))
		rwcs.push_back(*wc);
	auto swcs = drain(x.cqa.get(), 300ms);
	if (rwcs.empty())
		throw SetupError("the first SEND did not arrive");
	std::this_thread::sleep_for(300ms);	// the connection goes idle
	diag("RQ producer %u consumer %u; rolling back to %u", x.rb.rq.producer(), x.rb.rq.consumer(),
	     x.rb.rq.consumer() + 1);
	x.rb.rq.set_producer(x.rb.rq.consumer() + 1);
	const auto limit = 20s;
	ibv_qp *b = x.b.get();
	auto e = bounded([b] { return to_err(b); }, limit);
	if (!e)
		hang(name, "modify_qp(ERR)", limit);
	auto more = drain(x.cqb.get());
	rwcs.insert(rwcs.end(), more.begin(), more.end());
	if (!bounded([&x] { x.b.reset(); return 0; }, limit))
		hang(name, "destroy_qp", limit);
	diag("sender: %s; receiver: %s", wcs_str(swcs).c_str(), wcs_str(rwcs).c_str());
	std::string why = *e ? fmt("modify_qp(ERR) failed: %s", std::strerror(*e)) : check_send_wcs(swcs, 2);
	if (why.empty())
		why = rc.verify(rwcs, sent, type == IBV_QPT_UD);
	if (why.empty() && rwcs.size() > 8)
		why = fmt("%zu receive completions, 8 receives were posted", rwcs.size());
	g_ktap.result(why.empty(), name, why);
}

// ---- group: AH destroyed while a thread sends with it ---------------------

// The provider's AH (userspace_provider/src/mroce_edge.c, struct mroce_ah):
// the ibv_ah followed by the kernel's ah_num.  A copy keeps the number
// usable by ibv_post_send after the real AH is destroyed (the provider
// reads only ah_num at post time), which is what a buggy or malicious
// program can do with a raw WQE anyway.
struct ProviderAh {
	ibv_ah ibah;
	uint32_t ah_num;
};

void group_ah(const Dev &d)
{
	const std::string name = "AH destroyed while a thread sends UD datagrams with it";
	Pair x = make_pair(d, IBV_QPT_UD);
	x.ah.reset();
	std::vector<uint8_t> sent = pattern(64, 6);
	std::vector<uint8_t> sbuf = sent;
	Mr smr = d.reg(sbuf);
	std::vector<uint8_t> rbuf(64 * (64 + kGrh));
	Mr rmr = d.reg(rbuf);
	std::string why;
	unsigned ok = 0, errs = 0, recvs = 0, posted_recv = 0;
	const auto end = Clock::now() + 40s;
	int iters = 0;
	for (; iters < 300 && Clock::now() < end && why.empty(); ++iters) {
		while (posted_recv - recvs < 32) {
			uint32_t slot = posted_recv++ % 64;
			post_recv(x, rmr.get(), reinterpret_cast<uint64_t>(&rbuf[slot * (64 + kGrh)]), 64 + kGrh, slot);
		}
		Ah ah = make_ah(d);
		ProviderAh copy{*ah, reinterpret_cast<const ProviderAh *>(ah.get())->ah_num};
		std::atomic<bool> stop{false};
		std::atomic<unsigned> posted{0};
		std::thread sender([&] {
			while (!stop.load()) {
				ibv_sge sge{reinterpret_cast<uint64_t>(sbuf.data()), 64, smr->lkey};
				ibv_send_wr wr{};
				wr.wr_id = 7;
				wr.opcode = IBV_WR_SEND;
				wr.send_flags = IBV_SEND_SIGNALED;
				wr.sg_list = &sge;
				wr.num_sge = 1;
				wr.wr.ud.ah = &copy.ibah;
				wr.wr.ud.remote_qpn = x.b->qp_num;
				wr.wr.ud.remote_qkey = kQkey;
				ibv_send_wr *bad;
				if (posted.load() < 32 && !ibv_post_send(x.a.get(), &wr, &bad))
					posted.fetch_add(1);
				else
					std::this_thread::yield();
			}
		});
		auto t_end = Clock::now() + std::chrono::microseconds(200 + iters * 37 % 3000);
		unsigned done = 0;
		auto take = [&](const ibv_wc &wc) {
			++done;
			if (wc.status == IBV_WC_SUCCESS)
				++ok;
			else if (wc.status == IBV_WC_LOC_QP_OP_ERR)
				++errs;
			else if (why.empty())
				why = fmt("send completion status %s", ibv_wc_status_str(wc.status));
		};
		while (Clock::now() < t_end)
			if (auto wc = poll_one(x.cqa.get(), 0ms)) {
				take(*wc);
				posted.fetch_sub(1);
			}
		ah.reset();	// while the sender posts with its number
		std::this_thread::sleep_for(1ms);
		stop = true;
		sender.join();
		// Flush what is left; an error status moves a UD QP's WRs to
		// errors, not the QP.
		for (unsigned left = posted.load(); left; --left) {
			auto wc = poll_one(x.cqa.get(), 5000ms);
			if (!wc) {
				why = "a posted UD send never completed";
				break;
			}
			take(*wc);
		}
		for (auto &wc : drain(x.cqb.get(), 0ms)) {
			++recvs;
			const uint8_t *p = &rbuf[wc.wr_id * (64 + kGrh)] + kGrh;
			if (wc.status == IBV_WC_SUCCESS &&
			    (wc.byte_len != 64 + kGrh || first_diff(p, sent.data(), 64) >= 0) && why.empty())
				why = fmt("a datagram of %u bytes that differs from the posted ones", wc.byte_len);
			std::memset(&rbuf[wc.wr_id * (64 + kGrh)], 0, 64 + kGrh);
		}
	}
	diag("%d iterations: %u sends succeeded, %u failed with LOC_QP_OP_ERR, %u datagrams received",
	     iters, ok, errs, recvs);
	if (why.empty() && errs == 0)
		why = "no send ever raced with the destroy (no LOC_QP_OP_ERR): the case did not run";
	g_ktap.result(why.empty(), name, why);
}

// ---- forged packets -------------------------------------------------------

class Forger {
public:
	Forger(in_addr dst, uint16_t port) : sock_(socket(AF_INET, SOCK_DGRAM, 0))
	{
		if (sock_.get() < 0)
			throw SetupError(fmt("socket: %s", std::strerror(errno)));
		dst_.sin_family = AF_INET;
		dst_.sin_port = htons(port);
		dst_.sin_addr = dst;
	}
	// Build, seal and send; false when the packet could not be built.
	bool send(const mroce_pkt &p)
	{
		std::vector<uint8_t> b(MROCE_MAX_PKT);
		int n = mroce_pkt_build(b.data(), b.size(), &p);
		if (n < 0)
			return false;
		sendto(sock_.get(), b.data(), n, 0, reinterpret_cast<const sockaddr *>(&dst_), sizeof(dst_));
		++sent_;
		return true;
	}
	unsigned long sent() const { return sent_; }

private:
	Fd sock_;
	sockaddr_in dst_{};
	unsigned long sent_ = 0;
};

mroce_pkt base_pkt(uint8_t op, uint32_t dqpn)
{
	mroce_pkt p{};
	p.version = MROCE_WIRE_VERSION;
	p.opcode = op;
	p.flags = MROCE_F_FIRST | MROCE_F_LAST;
	p.dqpn = dqpn;
	return p;
}

uint16_t mroce_port()
{
	std::ifstream f("/sys/module/rdma_mroce/parameters/udp_port");
	unsigned v = MROCE_UDP_PORT;
	f >> v;
	return static_cast<uint16_t>(v ? v : MROCE_UDP_PORT);
}

// ---- group: QPs created while forged datagrams hit their QPNs -------------

void group_qp_flood(const Dev &d)
{
	const std::string name = "UD QPs created while forged datagrams flood the next QPNs";
	Cq cq = d.cq(1024);
	Qp probe = make_qp(d, cq.get(), cq.get(), {IBV_QPT_UD});
	std::atomic<uint32_t> last{probe->qp_num};
	probe.reset();
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> flood_sent{0};
	const uint16_t port = mroce_port();
	std::thread flood([&] {
		std::optional<Forger> fo;
		try {
			fo.emplace(d.ip, port);
		} catch (const SetupError &) {
			return;	// flood_sent stays 0: reported below
		}
		Forger &f = *fo;
		std::vector<uint8_t> payload(64, kEvil);
		std::mt19937 rng(7);
		while (!stop.load()) {
			const uint32_t base = last.load();
			for (uint32_t k = 1; k <= 4; ++k) {
				mroce_pkt p = base_pkt(MROCE_OP_UD_SEND, (base + k) & MROCE_QPN_MASK);
				p.deth.qkey = kQkey;
				p.deth.src_qpn = rng() & MROCE_QPN_MASK;
				p.psn = rng();
				p.payload = payload.data();
				p.payload_len = payload.size();
				f.send(p);
			}
		}
		flood_sent = f.sent();
	});
	std::string why;
	unsigned predicted = 0, created = 0, delivered = 0;
	std::vector<uint8_t> rbuf(256);
	Mr rmr = d.reg(rbuf);
	const auto end = Clock::now() + 30s;
	try {
		for (; created < 400 && Clock::now() < end; ++created) {
			Qp q = make_qp(d, cq.get(), cq.get(), {IBV_QPT_UD, nullptr, 4, 4});
			predicted += q->qp_num == ((last.load() + 1) & MROCE_QPN_MASK);
			last = q->qp_num;
			ibv_sge sge{reinterpret_cast<uint64_t>(rbuf.data()), 256, rmr->lkey};
			ibv_recv_wr wr{};
			wr.sg_list = &sge;
			wr.num_sge = 1;
			ibv_recv_wr *bad;
			to_init(q.get());	// receives need INIT (EINVAL in RESET)
			must0(ibv_post_recv(q.get(), &wr, &bad), "post_recv");
			to_rts(d, q.get(), 0);	// INIT again, RTR, RTS
			std::this_thread::sleep_for(200us);
		}
	} catch (const SetupError &e) {
		why = e.what();
	}
	stop = true;
	flood.join();
	delivered = drain(cq.get(), 200ms).size();
	diag("%u QPs created, %u at the predicted QPN, %lu forged datagrams sent, %u delivered "
	     "(a UD QP with the right Q_Key accepts any sender)", created, predicted, flood_sent.load(), delivered);
	if (why.empty() && !flood_sent.load())
		why = "the flood could not send (no UDP socket)";
	if (why.empty() && predicted * 10 < created * 9)
		why = "QPNs were not where predicted: the flood missed (the case did not run)";
	g_ktap.result(why.empty(), name, why);
}

// ---- group: MR deregistered during READ and WRITE traffic -----------------

// a sends `count` WRs of `len` bytes (WRITE into or READ from b's MR), the
// MR is deregistered after the first completion.  Expected: successes, then
// REM_ACCESS_ERR, then flushes; every successful READ brought the exact
// source bytes; b's memory holds only written bytes or its old contents.
void mr_dereg(const Dev &d, ibv_wr_opcode op)
{
	const bool rd = op == IBV_WR_RDMA_READ;
	const std::string name = fmt("MR deregistered during RDMA %s traffic: errors, never wrong data",
				     rd ? "READ" : "WRITE");
	const uint32_t len = 64 << 10, count = 32;
	Pair x = make_pair(d, IBV_QPT_RC);
	std::vector<uint8_t> remote = rd ? pattern(len, 8) : std::vector<uint8_t>(len, 0);
	Mr rmr = d.reg(remote);
	const std::vector<uint8_t> src = rd ? remote : pattern(len, 9);
	std::vector<uint8_t> local(size_t(len) * count, 0);
	if (!rd)
		for (uint32_t i = 0; i < count; ++i)
			std::memcpy(&local[size_t(i) * len], src.data(), len);
	Mr lmr = d.reg(local);
	for (uint32_t i = 0; i < count; ++i)
		must0(post_send(x, {op, i, lmr.get(), reinterpret_cast<uint64_t>(&local[size_t(i) * len]), len,
				    reinterpret_cast<uint64_t>(remote.data()), rmr->rkey}),
		      "post_send");
	std::vector<ibv_wc> wcs;
	if (auto wc = poll_one(x.cqa.get(), 30000ms))
		wcs.push_back(*wc);
	rmr.reset();	// deregistered with WRs in flight
	auto more = drain(x.cqa.get(), 2000ms, 60000ms);
	wcs.insert(wcs.end(), more.begin(), more.end());
	std::string why = check_send_wcs(wcs, count);
	unsigned ok = 0, acc = 0, flush = 0;
	for (const ibv_wc &wc : wcs) {
		if (wc.status == IBV_WC_SUCCESS) {
			++ok;
			if (rd && why.empty()) {
				long k = first_diff(&local[wc.wr_id * len], src.data(), len);
				if (k >= 0)
					why = fmt("READ %" PRIu64 " succeeded but byte %ld is 0x%02x, the source holds 0x%02x",
						  wc.wr_id, k, local[wc.wr_id * len + k], src[k]);
			}
		} else if (wc.status == IBV_WC_REM_ACCESS_ERR) {
			++acc;
		} else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			++flush;
		} else if (why.empty()) {
			why = fmt("completion status %s", ibv_wc_status_str(wc.status));
		}
	}
	if (why.empty() && wcs.size() != count)
		why = fmt("%zu of %u WRs completed", wcs.size(), count);
	if (why.empty() && ok < count && acc == 0)
		why = "WRs failed without a REM_ACCESS_ERR";
	if (why.empty() && !rd) {
		for (size_t k = 0; k < len && why.empty(); ++k)
			if (remote[k] && remote[k] != src[k])
				why = fmt("target byte %zu is 0x%02x: never written", k, remote[k]);
	}
	diag("%u succeeded, %u REM_ACCESS_ERR, %u flushed", ok, acc, flush);
	g_ktap.result(why.empty(), name, why);
}

void group_mr_dereg(const Dev &d)
{
	mr_dereg(d, IBV_WR_RDMA_WRITE);
	mr_dereg(d, IBV_WR_RDMA_READ);
}

// One large READ whose source MR is deregistered once the first bytes have
// landed: REM_ACCESS_ERR at the requester, or (if the responder had read it
// all already) success with the exact bytes; never success with other bytes.
void group_read_inval(const Dev &d)
{
	const std::string name = "READ whose source MR is deregistered mid-transfer ends in REM_ACCESS_ERR";
	const uint32_t len = 8 << 20;
	std::string why;
	unsigned mid = 0, errors = 0;
	for (int it = 0; it < 3 && why.empty(); ++it) {
		Pair x = make_pair(d, IBV_QPT_RC);
		std::vector<uint8_t> remote = pattern(len, 10 + it);
		Mr rmr = d.reg(remote);
		std::vector<uint8_t> local(len, 0);	// the pattern has no zero byte
		Mr lmr = d.reg(local);
		must0(post_send(x, {IBV_WR_RDMA_READ, 1, lmr.get(), reinterpret_cast<uint64_t>(local.data()), len,
				    reinterpret_cast<uint64_t>(remote.data()), rmr->rkey}),
		      "post_send");
		volatile uint8_t *first = local.data();
		volatile uint8_t *last = &local[len - 1];
		auto end = Clock::now() + 30s;
		while (*first == 0 && Clock::now() < end)
			std::this_thread::sleep_for(50us);
		const bool in_flight = *last == 0;
		rmr.reset();
		mid += in_flight;
		auto wc = poll_one(x.cqa.get(), 60000ms);
		if (!wc) {
			why = "the READ never completed";
			break;
		}
		diag("iteration %d: deregistered %s, completion %s", it,
		     in_flight ? "mid-transfer" : "after the last byte landed", ibv_wc_status_str(wc->status));
		if (wc->status == IBV_WC_SUCCESS) {
			long k = first_diff(local.data(), remote.data(), len);
			if (k >= 0)
				why = fmt("READ succeeded but byte %ld is 0x%02x, the source holds 0x%02x", k,
					  local[k], remote[k]);
		} else if (wc->status == IBV_WC_REM_ACCESS_ERR) {
			++errors;
		} else {
			why = fmt("completion status %s, not REM_ACCESS_ERR", ibv_wc_status_str(wc->status));
		}
	}
	if (why.empty() && mid && !errors)
		why = fmt("deregistered mid-transfer %u times, never a REM_ACCESS_ERR", mid);
	if (why.empty() && !mid)
		diag("the deregistration never landed mid-transfer: only the data was checked");
	g_ktap.result(why.empty(), name, why);
}

// ---- group: forged packets against a live RC connection -------------------

struct Forge {
	const Dev &d;
	Pair x;
	static constexpr uint32_t kMsg = 4096, kRecvs = 60;	// the RQ has 64
	static constexpr uint32_t kWin = 1 << 20;		// b's WRITE target
	static constexpr uint32_t kUntouched = 512 << 10;	// never legitimately written
	std::vector<uint8_t> recv_buf, target, source, lbuf;
	Mr recv_mr, target_mr, source_mr, lmr;
	std::vector<uint8_t> expect_target;			// what legit WRITEs put there
	std::vector<std::vector<uint8_t>> sends;		// legit SEND payloads, in order
	uint32_t recvs_seen = 0;
	uint64_t wr_id = 100;
	uint32_t round = 0;

	explicit Forge(const Dev &dev) : d(dev), x(make_pair(dev, IBV_QPT_RC))
	{
		recv_buf.assign(size_t(kRecvs) * kMsg, 0);
		recv_mr = d.reg(recv_buf);
		for (uint32_t i = 0; i < kRecvs; ++i)
			post_recv(x, recv_mr.get(), reinterpret_cast<uint64_t>(&recv_buf[size_t(i) * kMsg]), kMsg, i);
		target.assign(kWin, 0);
		target_mr = d.reg(target);
		expect_target.assign(kWin, 0);
		source = pattern(kWin, 11);
		source_mr = d.reg(source);
		lbuf.assign(kUntouched, 0);
		lmr = d.reg(lbuf);
	}

	// Legit traffic, verified: a SEND, a WRITE of `wlen` bytes and a READ.
	// why empty on success.
	std::string traffic(uint32_t wlen)
	{
		++round;
		std::vector<uint8_t> msg = pattern(1000 + round, 20 + round);
		std::memcpy(lbuf.data(), msg.data(), msg.size());
		sends.push_back(msg);
		const uint64_t base = reinterpret_cast<uint64_t>(lbuf.data());
		if (post_send(x, {IBV_WR_SEND, ++wr_id, lmr.get(), base, uint32_t(msg.size())}))
			return "post SEND failed";
		if (auto why = wait_send("SEND"); !why.empty())
			return why;
		std::vector<uint8_t> w = pattern(wlen, 40 + round);
		std::memcpy(lbuf.data(), w.data(), wlen);
		const uint32_t woff = (round * 4096) % (kUntouched - wlen);
		if (post_send(x, {IBV_WR_RDMA_WRITE, ++wr_id, lmr.get(), base, wlen,
				  reinterpret_cast<uint64_t>(&target[woff]), target_mr->rkey}))
			return "post WRITE failed";
		if (auto why = wait_send("WRITE"); !why.empty())
			return why;
		std::memcpy(&expect_target[woff], w.data(), wlen);
		std::memset(lbuf.data(), 0, kMsg);
		const uint32_t roff = round * 977 % (kWin - kMsg);
		if (post_send(x, {IBV_WR_RDMA_READ, ++wr_id, lmr.get(), base, kMsg,
				  reinterpret_cast<uint64_t>(&source[roff]), source_mr->rkey}))
			return "post READ failed";
		if (auto why = wait_send("READ"); !why.empty())
			return why;
		if (long k = first_diff(lbuf.data(), &source[roff], kMsg); k >= 0)
			return fmt("READ data differs at byte %ld", k);
		return check_memory();
	}

	std::string wait_send(const char *what)
	{
		auto wc = poll_one(x.cqa.get(), 20000ms);
		if (!wc)
			return fmt("%s did not complete in 20 s", what);
		if (wc->status != IBV_WC_SUCCESS || wc->wr_id != wr_id)
			return fmt("%s completed with %s (wr_id %" PRIu64 ")", what, ibv_wc_status_str(wc->status),
				   wc->wr_id);
		return {};
	}

	// b's memory holds only what the legit side wrote or sent.
	std::string check_memory()
	{
		if (long k = first_diff(target.data(), expect_target.data(), kWin); k >= 0)
			return fmt("WRITE target byte %ld is 0x%02x, legitimately 0x%02x", k, target[k],
				   expect_target[k]);
		for (auto &wc : drain(x.cqb.get(), 50ms)) {
			if (wc.status != IBV_WC_SUCCESS)
				return fmt("receive completion %s", ibv_wc_status_str(wc.status));
			if (recvs_seen >= sends.size())
				return fmt("receive %" PRIu64 " of %u bytes: more receives than legit SENDs",
					   wc.wr_id, wc.byte_len);
			const auto &m = sends[recvs_seen];
			if (wc.wr_id != recvs_seen || wc.byte_len != m.size() ||
			    first_diff(&recv_buf[size_t(wc.wr_id) * kMsg], m.data(), m.size()) >= 0)
				return fmt("receive %" PRIu64 " (%u bytes) is not legit SEND %u", wc.wr_id,
					   wc.byte_len, recvs_seen);
			++recvs_seen;
		}
		for (size_t i = recvs_seen; i < kRecvs; ++i)
			for (size_t k = 0; k < kMsg; ++k)
				if (recv_buf[i * kMsg + k])
					return fmt("receive buffer %zu (not yet used) byte %zu is 0x%02x", i, k,
						   recv_buf[i * kMsg + k]);
		return {};
	}
};

std::vector<uint32_t> guesses()
{
	std::vector<uint32_t> g;
	for (uint32_t v = 0; v < 24; ++v)
		g.push_back(v);
	std::mt19937 rng(99);
	for (int i = 0; i < 16; ++i)
		g.push_back(rng());
	return g;
}

// Sequence numbers one field of a forged packet takes: the fixed guesses,
// then replays: the first kReplay numbers of the real space of a's
// connection, which the legit traffic has already used (an attacker that
// knows the CM's PSNs, so the ISN, and resends what it once saw).
constexpr uint32_t kReplay = 24;

struct Numbers {
	uint32_t psn, dsn, msn, rq_seq;	// rq_seq counts SENDs from 0
};

std::vector<Numbers> forged_numbers(uint32_t isn, uint32_t path)
{
	std::vector<Numbers> v;
	for (uint32_t g : guesses())
		v.push_back({g, g, g, g});
	const uint32_t psn0 = mroce_isn_start(isn, MROCE_ISN_PSN + path);
	const uint32_t dsn0 = mroce_isn_start(isn, MROCE_ISN_DSN);
	const uint32_t msn0 = mroce_isn_start(isn, MROCE_ISN_MSN);
	for (uint32_t i = 0; i < kReplay; ++i)
		v.push_back({psn0 + i, dsn0 + i, msn0 + i, i});
	return v;
}

void forge_burst(Forger &f, Forge &s, uint8_t op)
{
	std::vector<uint8_t> evil(1024, kEvil);
	const uint32_t aq = s.x.a->qp_num, bq = s.x.b->qp_num;
	for (uint32_t path = 0; path < 16; ++path) {
		for (const Numbers &n : forged_numbers(psn_of(aq), path)) {
			mroce_pkt p = base_pkt(op, op == MROCE_OP_ACK ? aq : bq);
			p.path = path;
			p.psn = n.psn;
			p.dsn = n.dsn;
			p.msn = n.msn;
			switch (op) {
			case MROCE_OP_ACK:
				// A NAK when round is odd (see the caller), else an ACK
				// of everything up to the number.  ACKs carry no flags.
				p.flags = 0;
				p.ack.high_psn = n.psn + 1;
				p.ack.cum_psn = n.psn + 1;
				p.ack.cum_dsn = n.dsn + 1;
				p.ack.cmpl_msn = n.msn + 1;
				p.ack.syndrome = s.round % 2 ? MROCE_SYN_REM_ACCESS : MROCE_SYN_ACK;
				p.ack.sack[0] = ~0ull;
				// A hold time that would erase any RTT sample, or
				// a plausible one (spec 6.3 step 4).
				p.ack.ack_delay_us = n.psn % 2 ? 0xffffffffu : n.psn % 5000;
				break;
			case MROCE_OP_SEND:
				// Data packets ask for any ACK hold (adl 0..16, the
				// longest 32 ms, capped by the receiver).
				p.adl = uint8_t(n.psn % (MROCE_ADL_MAX + 1));
				p.seth.rq_seq = n.rq_seq;
				p.seth.length = evil.size();
				p.payload = evil.data();
				p.payload_len = evil.size();
				break;
			case MROCE_OP_WRITE:
				p.adl = uint8_t(n.dsn % (MROCE_ADL_MAX + 1));
				// The attacker knows rkey and address (worst case):
				// the untouched half, and the start of the legit one.
				p.reth.va = reinterpret_cast<uint64_t>(&s.target[n.dsn % 2 ? Forge::kUntouched : 0]);
				p.reth.rkey = s.target_mr->rkey;
				p.reth.length = evil.size();
				p.payload = evil.data();
				p.payload_len = evil.size();
				break;
			case MROCE_OP_READ_REQ:
				p.reth.va = reinterpret_cast<uint64_t>(s.source.data());
				p.reth.rkey = s.source_mr->rkey;
				p.reth.length = 4096;
				break;
			}
			f.send(p);
		}
	}
}

void group_forge(const Dev &d, const char *hold)
{
	Forge s(d);
	Forger f(d.ip, mroce_port());
	std::string why = s.traffic(4096);
	g_ktap.result(why.empty(), "legit traffic before the attack verifies", why);
	if (!why.empty())
		return;
	struct Kind {
		const char *name;
		uint8_t op;
		bool nak;
	};
	const Kind kinds[] = {
		{"ACK", MROCE_OP_ACK, false},
		{"NAK (REM_ACCESS)", MROCE_OP_ACK, true},
		{"SEND", MROCE_OP_SEND, false},
		{"WRITE", MROCE_OP_WRITE, false},
		{"READ request", MROCE_OP_READ_REQ, false},
	};
	for (const Kind &k : kinds) {
		// s.round's parity picks ACK or NAK for MROCE_OP_ACK.
		if (k.op == MROCE_OP_ACK && (s.round % 2 == 1) != k.nak)
			why = s.traffic(2048);	// one more legit round: parity
		// A legit WRITE in flight during the burst: a forged ACK/NAK
		// with a matching number would complete or kill it.
		const uint32_t wlen = 256 << 10;
		std::vector<uint8_t> w = pattern(wlen, 77 + s.round);
		std::memcpy(s.lbuf.data(), w.data(), wlen);
		const uint32_t woff = Forge::kUntouched - wlen;
		if (why.empty() &&
		    post_send(s.x, {IBV_WR_RDMA_WRITE, ++s.wr_id, s.lmr.get(), reinterpret_cast<uint64_t>(s.lbuf.data()),
				    wlen, reinterpret_cast<uint64_t>(&s.target[woff]), s.target_mr->rkey}))
			why = "post WRITE failed";
		if (why.empty()) {
			forge_burst(f, s, k.op);
			why = s.wait_send("WRITE in flight during the burst");
		}
		if (why.empty()) {
			std::memcpy(&s.expect_target[woff], w.data(), wlen);
			std::this_thread::sleep_for(200ms);	// late effects of the burst
			why = s.traffic(4096);
		}
		g_ktap.result(why.empty(),
			      fmt("forged %s (wrong, 0, guessed and replayed numbers) from a UDP socket: connection up, data intact",
				  k.name), why);
		if (!why.empty()) {
			diag("after the failure the attacked QPs are left as they are");
			break;
		}
	}
	diag("%lu forged packets sent", f.sent());
	if (hold) {
		std::ofstream(std::string(hold) + ".ready") << s.x.a->qp_num << " " << s.x.b->qp_num << "\n";
		const std::string done = std::string(hold) + ".done";
		struct stat st;
		for (int i = 0; i < 600 && stat(done.c_str(), &st); ++i)
			std::this_thread::sleep_for(100ms);
	}
}

// ---- main ----------------------------------------------------------------

void drop_privileges(uid_t uid)
{
	if (setgroups(0, nullptr) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		throw SetupError(fmt("dropping to uid %u: %s", uid, std::strerror(errno)));
	if (geteuid() == 0 || setresuid(0, 0, 0) == 0)
		throw SetupError("still privileged after dropping");
	diag("running as uid %u gid %u, no supplementary groups", getuid(), getgid());
}

int usage()
{
	std::fprintf(stderr, "usage: mroce_attack [--user UID] [--hold FILE] IBDEV GID_INDEX GROUP\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	std::optional<uid_t> user;
	const char *hold = nullptr;
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!std::strcmp(argv[i], "--user"))
			user = static_cast<uid_t>(std::strtoul(argv[i + 1], nullptr, 0));
		else if (!std::strcmp(argv[i], "--hold"))
			hold = argv[i + 1];
		else
			return usage();
	}
	if (argc - i != 3)
		return usage();
	const char *dev = argv[i];
	const int gidx = std::atoi(argv[i + 1]);
	const std::string group = argv[i + 2];
	const std::vector<std::pair<std::string, std::function<void(const Dev &)>>> groups = {
		{"ring", group_ring},
		{"sq-rollback-rc", group_sq_rollback_rc},
		{"rq-rollback-rc", [](const Dev &d) { group_rq_rollback(d, IBV_QPT_RC); }},
		{"rq-rollback-ud", [](const Dev &d) { group_rq_rollback(d, IBV_QPT_UD); }},
		{"ah", group_ah},
		{"qp-flood", group_qp_flood},
		{"mr-dereg", group_mr_dereg},
		{"read-inval", group_read_inval},
		{"forge", [hold](const Dev &d) { group_forge(d, hold); }},
	};
	auto it = std::find_if(groups.begin(), groups.end(), [&](const auto &g) { return g.first == group; });
	if (it == groups.end())
		return usage();
	try {
		if (user)
			drop_privileges(*user);
		Dev d = open_dev(dev, gidx);
		it->second(d);
	} catch (const SetupError &e) {
		g_ktap.result(false, "setup", e.what());
	}
	return g_ktap.failed() ? 1 : 0;
}
