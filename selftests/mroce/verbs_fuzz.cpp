// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// verbs_fuzz - a seeded verbs-level fuzzer for mroce devices.  Random
// sequences of create/modify/post/poll/destroy of PD, CQ, MR, memory window
// (alloc, bind of type 1 and 2, LOCAL_INV, dealloc), QP (RC, UD), SRQ and AH
// with random (also invalid) arguments, and random corruption of
// the rings the provider shares with the kernel, for a fixed time.
//
// Usage: mroce_verbs_fuzz [options] IBDEV GID_INDEX
//   --seed N        seed (default: from the clock; always printed)
//   --seconds S     how long to fuzz (default 60)
//   --watchdog S    a verb that takes longer than S seconds is a hang
//                   (default 60): the process reports it and exits 4
//   --no-rollback   leave out producer indices behind the kernel's or out
//                   of range (also MROCE_VERBS_FUZZ_NO_ROLLBACK=1): before the
//                   ring-index fix (b099b1b on main) the kernel fell back to
//                   the completed index for an out-of-range producer while
//                   reading from the next one, so a forward overrun with
//                   WQEs in flight looped 2^32 times like a rollback did;
//                   on by default
//   --no-corrupt    no ring corruption at all
//   -v              print every operation (for a replay)
//
// Ring corruption reaches the rings through the provider's objects: the
// ibv_qp/ibv_srq/ibv_cq the provider returns is the first member of its
// struct mroce_qp/mroce_srq/mroce_cq (userspace_provider/src/mroce_edge.c),
// followed by its struct mroce_uring pointers; struct mroce_uring and
// mroce::Ring come from the provider's own ring.hpp (inline accessors, the
// same compiler).  The mirrors below must follow mroce_edge.c; every ring
// found that way is checked against its control block (num_entries,
// entry_size) before use, and on a mismatch corruption is switched off
// with a diagnostic instead of writing anywhere.
//
// Corruptions (each followed by a doorbell, a post or a modify to ERR):
//   SQ/RQ/SRQ producer jumped forward past the ring (an overrun), set to
//   any value, rolled back (--no-rollback leaves these three out), random bytes of
//   posted or unposted WQEs rewritten (opcode, num_sge, inline_len, SGEs),
//   CQ consumer index rewritten (then also resized: ibv_resize_cq reads it).
//
// Pass: every verb returns a success value or an errno documented for it
// (the sets are in the table below), no verb hangs, every object is
// destroyed at the end, an RC loopback transfer on a fresh context moves
// verified bytes afterwards, and /sys/kernel/debug/mroce/objects is back to
// its value at the start.  KTAP on stdout; exit status 0 on success, 1 on a
// failure, 2 on usage errors, 4 on a hang.  A failure line names the seed.

#include <infiniband/verbs.h>

#include "ring.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- the provider's objects (mirrors of userspace_provider/src/mroce_edge.c)

// struct verbs_qp of rdma-core's driver.h (private ABI 34; pabi34.h).
struct VerbsQp {
	union {
		ibv_qp qp;
		ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;
};
static_assert(sizeof(VerbsQp) == 368, "verbs_qp layout (pabi34.h)");

struct ProviderQp {	// struct mroce_qp
	VerbsQp vqp;
	mroce_uring *sq;
	mroce_uring *rq;	// NULL with an SRQ
};

struct ProviderSrq {	// struct mroce_srq
	ibv_srq ibsrq;
	mroce_uring *ring;
};

struct ProviderCq {	// struct mroce_cq: struct verbs_cq (288 bytes), then the ring
	alignas(8) unsigned char vcq[288];
	mroce_uring *ring;
};

// ---- run state ---------------------------------------------------------------

using Clock = std::chrono::steady_clock;

uint64_t g_seed;
bool g_verbose;
bool g_rollback = true;
bool g_corrupt = true;
std::mt19937_64 g_rng;
std::string g_dev;
int g_gid_index;
ibv_gid g_gid;
unsigned long g_violations;
std::map<std::string, unsigned long> g_stats;	// "verb result" -> count

// Watchdog: the main thread stamps every verb; a verb that does not
// return within g_watchdog_s is a hang.
std::atomic<int64_t> g_verb_start_ms{0};	// 0: not inside a verb
std::atomic<const char *> g_verb_name{""};
std::atomic<unsigned long> g_opno{0};
int g_watchdog_s = 60;

int64_t now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		       Clock::now().time_since_epoch())
		.count();
}

struct VerbScope {
	explicit VerbScope(const char *name)
	{
		g_verb_name.store(name);
		g_verb_start_ms.store(now_ms());
	}
	~VerbScope() { g_verb_start_ms.store(0); }
	VerbScope(const VerbScope &) = delete;
	VerbScope &operator=(const VerbScope &) = delete;
};

void watchdog(std::stop_token st)
{
	while (!st.stop_requested()) {
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
		int64_t t0 = g_verb_start_ms.load();
		if (t0 && now_ms() - t0 > int64_t(g_watchdog_s) * 1000) {
			std::printf("not ok 1 fuzz: %s hung for more than %d s at op %lu (seed %llu)\n",
				    g_verb_name.load(), g_watchdog_s, g_opno.load(),
				    (unsigned long long)g_seed);
			std::fflush(stdout);
			_exit(4);
		}
	}
}

uint64_t rnd(uint64_t n) { return n ? std::uniform_int_distribution<uint64_t>(0, n - 1)(g_rng) : 0; }
bool chance(unsigned pct) { return rnd(100) < pct; }
uint32_t rnd32() { return uint32_t(g_rng()); }

// A "interesting" integer: small, boundary or random.
uint32_t rnd_count(uint32_t typical)
{
	switch (rnd(8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return uint32_t(rnd(typical) + 1);
	case 3: return uint32_t(rnd(typical) + 1);
	case 4: return uint32_t(rnd(typical) + 1);
	case 5: return 1u << rnd(32);
	case 6: return UINT32_MAX - uint32_t(rnd(4));
	default: return rnd32();
	}
}

void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void trace(const char *fmt, ...)
{
	if (!g_verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	std::printf("# [%lu] ", g_opno.load());
	std::vprintf(fmt, ap);
	std::printf("\n");
	va_end(ap);
}

// One verb's result against the errnos documented for it (libibverbs man
// pages, Documentation/uapi.rst).  err 0 is success.
void result(const char *verb, int err, std::initializer_list<int> allowed)
{
	std::string key = std::string(verb) + " " + (err ? strerrorname_np(err) ?: "?" : "ok");
	++g_stats[key];
	trace("%s -> %s", verb, err ? std::strerror(err) : "ok");
	if (!err || std::find(allowed.begin(), allowed.end(), err) != allowed.end())
		return;
	++g_violations;
	std::printf("# VIOLATION seed %llu op %lu: %s returned %s (%d), not documented for it\n",
		    (unsigned long long)g_seed, g_opno.load(), verb, std::strerror(err), err);
}

// ---- RAII handles ------------------------------------------------------------

// Each deleter reports a failed destroy as a violation (teardown must work).
template <auto Destroy, const char *Name> struct Del {
	template <class T> void operator()(T *p) const
	{
		VerbScope v(Name);
		int rc = Destroy(p);
		if (rc)
			result(Name, rc, {});
	}
};
constexpr char kDestroyQp[] = "ibv_destroy_qp";
constexpr char kDestroyAh[] = "ibv_destroy_ah";
constexpr char kDeregMr[] = "ibv_dereg_mr";
constexpr char kDeallocMw[] = "ibv_dealloc_mw";
constexpr char kDestroySrq[] = "ibv_destroy_srq";
constexpr char kDestroyCq[] = "ibv_destroy_cq";
constexpr char kDeallocPd[] = "ibv_dealloc_pd";
constexpr char kCloseDevice[] = "ibv_close_device";

using Ctx = std::unique_ptr<ibv_context, Del<ibv_close_device, kCloseDevice>>;
using Pd = std::unique_ptr<ibv_pd, Del<ibv_dealloc_pd, kDeallocPd>>;
using Cq = std::unique_ptr<ibv_cq, Del<ibv_destroy_cq, kDestroyCq>>;
using Mr = std::unique_ptr<ibv_mr, Del<ibv_dereg_mr, kDeregMr>>;
using Mw = std::unique_ptr<ibv_mw, Del<ibv_dealloc_mw, kDeallocMw>>;
using Srq = std::unique_ptr<ibv_srq, Del<ibv_destroy_srq, kDestroySrq>>;
using Qp = std::unique_ptr<ibv_qp, Del<ibv_destroy_qp, kDestroyQp>>;
using Ah = std::unique_ptr<ibv_ah, Del<ibv_destroy_ah, kDestroyAh>>;

// An anonymous mapping, unmapped on destruction.
class Arena {
public:
	explicit Arena(size_t len, int prot = PROT_READ | PROT_WRITE) : len_(len)
	{
		void *p = mmap(nullptr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		p_ = p == MAP_FAILED ? nullptr : static_cast<std::byte *>(p);
	}
	~Arena()
	{
		if (p_)
			munmap(p_, len_);
	}
	Arena(const Arena &) = delete;
	Arena &operator=(const Arena &) = delete;
	std::byte *data() const { return p_; }
	size_t size() const { return len_; }

private:
	std::byte *p_;
	size_t len_;
};

struct DevListFree {
	void operator()(ibv_device **l) const { ibv_free_device_list(l); }
};

Ctx open_ctx()
{
	int n = 0;
	std::unique_ptr<ibv_device *, DevListFree> list(ibv_get_device_list(&n));
	for (int i = 0; list && i < n; ++i)
		if (g_dev == ibv_get_device_name(list.get()[i]))
			return Ctx(ibv_open_device(list.get()[i]));
	errno = ENODEV;
	return nullptr;
}

// The live-object counts of /sys/kernel/debug/mroce/objects.
std::string live_objects()
{
	std::ifstream f("/sys/kernel/debug/mroce/objects");
	std::string all, line;
	while (std::getline(f, line))
		all += line + "; ";
	return all;
}

// ---- rings ---------------------------------------------------------------------

// The provider's ring behind a handle, checked against its control block.
mroce::Ring *checked(mroce_uring *u)
{
	if (!u || !u->ring)
		return nullptr;
	mroce::Ring *r = u->ring.get();
	const auto *ctl = reinterpret_cast<const mroce_ring_ctl *>(r->slot(0) - MROCE_RING_CTL_SIZE);
	if (r->num_entries() == 0 || (r->num_entries() & (r->num_entries() - 1)) ||
	    ctl->num_entries != r->num_entries() || ctl->entry_size != r->entry_size()) {
		std::printf("# the provider's object layout differs from verbs_fuzz's mirror: "
			    "ring corruption switched off\n");
		g_corrupt = false;
		return nullptr;
	}
	return r;
}

mroce::Ring *sq_ring(ibv_qp *qp) { return checked(reinterpret_cast<ProviderQp *>(qp)->sq); }
mroce::Ring *rq_ring(ibv_qp *qp) { return checked(reinterpret_cast<ProviderQp *>(qp)->rq); }
mroce::Ring *srq_ring(ibv_srq *s) { return checked(reinterpret_cast<ProviderSrq *>(s)->ring); }
mroce::Ring *cq_ring(ibv_cq *c) { return checked(reinterpret_cast<ProviderCq *>(c)->ring); }

// Rewrite a work queue's producer index and WQE bytes.  Returns a name.
const char *corrupt_wq(mroce::Ring &r)
{
	const uint32_t prod = r.load_producer();
	const uint32_t n = r.num_entries();
	const uint32_t room = n - std::min(n, prod - r.load_consumer());
	switch (rnd(6)) {
	case 0:	// overrun: claims more than the ring holds
		if (!g_rollback)
			break;
		r.store_producer(r.load_consumer() + n + 1 + uint32_t(rnd(1000)));
		return "producer overrun";
	case 1:	// anything
		if (!g_rollback)
			break;
		r.store_producer(rnd32());
		return "producer random";
	case 2: {	// a few random bytes of a WQE, covered by the producer
		std::byte *s = r.slot(prod);
		for (int i = 0, k = int(rnd(8)) + 1; i < k; ++i)
			s[rnd(r.entry_size())] = std::byte(rnd(256));
		r.store_producer(prod + (g_rollback ? 1 : std::min(1u, room)));
		return "WQE bytes";
	}
	case 3: {	// a whole WQE of garbage (header fields at the extremes)
		std::byte *s = r.slot(prod);
		for (uint32_t i = 0; i < r.entry_size(); i += 4) {
			uint32_t v = chance(50) ? rnd32() : rnd_count(64);
			std::memcpy(s + i, &v, std::min<uint32_t>(4, r.entry_size() - i));
		}
		uint32_t ahead = 1 + uint32_t(rnd(std::min<uint32_t>(n, 4)));
		r.store_producer(prod + (g_rollback ? ahead : std::min(ahead, room)));
		return "WQE garbage";
	}
	case 4: {	// rewrite an already posted WQE (the kernel may hold a copy)
		std::byte *s = r.slot(prod - 1 - uint32_t(rnd(n)));
		s[rnd(r.entry_size())] = std::byte(rnd(256));
		return "posted WQE bytes";
	}
	default:	// rollback
		if (!g_rollback)
			break;
		r.store_producer(prod - 1 - uint32_t(rnd(chance(50) ? 4 : n * 2)));
		return "producer rollback";
	}
	// --no-rollback: ahead, within what the ring holds.
	r.store_producer(prod + uint32_t(rnd(room + 1)));
	return "producer ahead in range";
}

// ---- the fuzzer's object pools ------------------------------------------------

struct QpRec {
	Qp qp;
	ibv_qp_type type;
	bool srq;
	size_t send_cq, recv_cq;	// indices at creation, informational
};
struct CqRec {
	Cq cq;
	bool corrupted = false;
};

constexpr size_t kArena = 1u << 20;
constexpr size_t kMaxObjs = 12;

struct Fuzz {
	Ctx ctx;
	Arena arena{kArena};
	Arena guard{1u << 16, PROT_NONE};	// an unpinnable range for reg_mr
	// Destroyed in reverse order of declaration: QPs before their CQs,
	// SRQs and PDs.
	std::vector<Pd> pds;
	std::vector<CqRec> cqs;
	std::vector<Mr> mrs;
	std::vector<Srq> srqs;
	std::vector<Ah> ahs;
	std::vector<QpRec> qps;
	std::vector<Mw> mws;	// before the regions they may be bound to

	template <class V> auto *pick(V &v) { return v.empty() ? nullptr : &v[rnd(v.size())]; }
	ibv_pd *any_pd() { auto *p = pick(pds); return p ? p->get() : nullptr; }
	ibv_cq *any_cq() { auto *c = pick(cqs); return c ? c->cq.get() : nullptr; }

	void drain_async();
	void op_alloc_pd();
	void op_dealloc_pd();
	void op_create_cq();
	void op_destroy_cq();
	void op_resize_cq();
	void op_reg_mr();
	void op_dereg_mr();
	void op_rereg_mr();
	void op_create_srq();
	void op_modify_srq();
	void op_destroy_srq();
	void op_create_qp();
	void op_modify_qp();
	void op_connect();
	void op_query_qp();
	void op_destroy_qp();
	void op_create_ah();
	void op_destroy_ah();
	void op_post_send();
	void post_send_to(QpRec *q);
	void op_post_recv();
	void op_poll_cq();
	void op_corrupt();
	void op_pair();
	void op_alloc_mw();
	void op_dealloc_mw();
	void op_bind_mw();
	void doorbell(QpRec &q);
	void corrupt_qp(QpRec *q);
	void step();
	void teardown();
};

// Async events (CQ overflow, QP fatal, SRQ limit) are read and acked as they
// come: libibverbs' destroy calls wait for the events reported for the object.
void Fuzz::drain_async()
{
	ibv_async_event ev;
	while (ibv_get_async_event(ctx.get(), &ev) == 0) {
		++g_stats[std::string("async ") + ibv_event_type_str(ev.event_type)];
		ibv_ack_async_event(&ev);
	}
}

// Destroy one element of a pool by the verb; 0 removes it (the handle lets
// go of the freed object), an error keeps it for the teardown.
template <class V, class Handle, class Fn>
void destroy_one(V &v, Handle handle, Fn destroy, const char *name,
		 std::initializer_list<int> allowed)
{
	if (v.empty())
		return;
	size_t i = rnd(v.size());
	auto &h = handle(v[i]);
	int rc;
	{
		VerbScope s(name);
		rc = destroy(h.get());
	}
	result(name, rc, allowed);
	if (!rc) {
		(void)h.release();
		v.erase(v.begin() + ptrdiff_t(i));
	}
}

void Fuzz::op_alloc_pd()
{
	if (pds.size() >= kMaxObjs)
		return;
	VerbScope s("ibv_alloc_pd");
	Pd pd(ibv_alloc_pd(ctx.get()));
	result("ibv_alloc_pd", pd ? 0 : errno, {ENOMEM});
	if (pd)
		pds.push_back(std::move(pd));
}

void Fuzz::op_dealloc_pd()
{
	destroy_one(pds, [](Pd &p) -> Pd & { return p; }, ibv_dealloc_pd, "ibv_dealloc_pd",
		    {EBUSY});
}

void Fuzz::op_create_cq()
{
	if (cqs.size() >= kMaxObjs)
		return;
	int cqe = chance(10) ? -int(rnd(5)) : int(rnd_count(512));
	int vec = chance(90) ? 0 : int(rnd(4)) - 1;
	VerbScope s("ibv_create_cq");
	Cq cq(ibv_create_cq(ctx.get(), cqe, nullptr, nullptr, vec));
	trace("create_cq cqe %d vector %d", cqe, vec);
	result("ibv_create_cq", cq ? 0 : errno, {EINVAL, ENOMEM});
	if (cq)
		cqs.push_back({std::move(cq)});
}

void Fuzz::op_destroy_cq()
{
	drain_async();
	destroy_one(cqs, [](CqRec &c) -> Cq & { return c.cq; }, ibv_destroy_cq, "ibv_destroy_cq",
		    {EBUSY});
}

// Sizes from 1 to max_cqe and invalid ones, possibly below what waits in
// the CQ, and on CQs whose consumer index op_corrupt rewrote (the kernel
// bounds it by its producer and the old ring: EINVAL).
void Fuzz::op_resize_cq()
{
	auto *c = pick(cqs);
	if (!c)
		return;
	int cqe = chance(10) ? -int(rnd(5)) :
		  chance(5)  ? 65536 + int(rnd(3)) :
			       int(rnd_count(512));
	int rc;
	{
		VerbScope s("ibv_resize_cq");
		rc = ibv_resize_cq(c->cq.get(), cqe);
	}
	trace("resize_cq cqe %d: %d", cqe, rc);
	result("ibv_resize_cq", rc, {EINVAL, ENOMEM});
}

void Fuzz::op_reg_mr()
{
	ibv_pd *pd = any_pd();
	if (!pd || mrs.size() >= kMaxObjs)
		return;
	void *addr;
	size_t len;
	switch (rnd(6)) {
	case 0:	// NULL / unmapped / unpinnable
		addr = chance(50) ? nullptr : guard.data();
		len = 4096;
		break;
	case 1:	// zero or huge length
		addr = arena.data();
		len = chance(50) ? 0 : (size_t(1) << (36 + rnd(8)));
		break;
	case 2:	// past the arena's end
		addr = arena.data() + kArena - 4096;
		len = 8192 + rnd(1 << 20);
		break;
	default: {	// inside the arena, any alignment
		size_t off = rnd(kArena - 1);
		addr = arena.data() + off;
		len = 1 + rnd(kArena - off);
	}
	}
	// rnd(32): MW_BIND (16) half of the time.
	int access = chance(70) ? int(rnd(32)) : int(rnd32());
	VerbScope s("ibv_reg_mr");
	Mr mr(ibv_reg_mr(pd, addr, len, access));
	trace("reg_mr %p len %zu access %#x", addr, len, access);
	result("ibv_reg_mr", mr ? 0 : errno, {EINVAL, ENOMEM, EFAULT, EACCES, EOPNOTSUPP, EPERM});
	if (mr)
		mrs.push_back(std::move(mr));
}

// ibv_rereg_mr with any flags (mostly valid ones), any PD (sometimes none),
// a translation like op_reg_mr's and any access; the region may be in use by
// a pair's traffic.
void Fuzz::op_rereg_mr()
{
	auto *m = pick(mrs);
	if (!m)
		return;
	int flags = chance(85) ? int(1 + rnd(7)) : int(rnd32());
	ibv_pd *pd = chance(90) ? any_pd() : nullptr;
	void *addr = arena.data();
	size_t len = 4096;
	switch (rnd(5)) {
	case 0:	// NULL / unmapped / unpinnable
		addr = chance(50) ? nullptr : guard.data();
		break;
	case 1:	// zero or huge length
		len = chance(50) ? 0 : (size_t(1) << (36 + rnd(8)));
		break;
	case 2:	// past the arena's end
		addr = arena.data() + kArena - 4096;
		len = 8192 + rnd(1 << 20);
		break;
	default: {	// inside the arena, any alignment
		size_t off = rnd(kArena - 1);
		addr = arena.data() + off;
		len = 1 + rnd(kArena - off);
	}
	}
	int access = chance(70) ? int(rnd(16)) : int(rnd32());
	if (chance(50) && !(flags & IBV_REREG_MR_CHANGE_ACCESS))
		access = 0;
	int rc;
	errno = 0;
	{
		VerbScope s("ibv_rereg_mr");
		rc = ibv_rereg_mr(m->get(), flags, pd, addr, len, access);
	}
	trace("rereg_mr flags %#x pd %p %p len %zu access %#x: %d", flags, (void *)pd, addr, len,
	      access, rc);
	// libibverbs' own checks return IBV_REREG_MR_ERR_INPUT, a command error
	// IBV_REREG_MR_ERR_CMD: both with errno set (EIO stands for a missing
	// errno, a violation); the MR stays usable.  The fork-range codes come
	// from madvise() (only with ibv_fork_init()).  EBUSY: a memory window
	// is bound to the region.
	const int e = rc ? (errno ? errno : EIO) : 0;
	if (rc == 0 || rc == IBV_REREG_MR_ERR_INPUT || rc == IBV_REREG_MR_ERR_CMD)
		result("ibv_rereg_mr", e,
		       {EINVAL, ENOMEM, EFAULT, EACCES, EOPNOTSUPP, EPERM, EBUSY});
	else
		result("ibv_rereg_mr (fork range)", e, {EINVAL, ENOMEM, EFAULT});
}

// EBUSY: a memory window is bound to the region.
void Fuzz::op_dereg_mr()
{
	destroy_one(mrs, [](Mr &m) -> Mr & { return m; }, ibv_dereg_mr, "ibv_dereg_mr",
		    {EBUSY});
}

void Fuzz::op_alloc_mw()
{
	ibv_pd *pd = any_pd();
	if (!pd || mws.size() >= kMaxObjs)
		return;
	const int type = chance(90) ? int(rnd(2)) + 1 : int(rnd32());
	VerbScope s("ibv_alloc_mw");
	Mw mw(ibv_alloc_mw(pd, ibv_mw_type(type)));
	trace("alloc_mw type %d", type);
	result("ibv_alloc_mw", mw ? 0 : errno, {EINVAL, ENOMEM});
	if (mw)
		mws.push_back(std::move(mw));
}

void Fuzz::op_dealloc_mw()
{
	destroy_one(mws, [](Mw &m) -> Mw & { return m; }, ibv_dealloc_mw, "ibv_dealloc_mw", {});
}

// A bind of any window on any QP to any region (mostly inside the arena),
// with any access: ibv_bind_mw for type 1, IBV_WR_BIND_MW for type 2 (and
// now and then the wrong one); the kernel's verdict comes as a completion.
void Fuzz::op_bind_mw()
{
	auto *q = pick(qps);
	auto *w = pick(mws);
	if (!q || !w)
		return;
	// Mostly a QP and a region of the window's PD, so binds get through.
	for (auto &x : qps)
		if (x.qp->pd == (*w)->pd && chance(70))
			q = &x;
	auto *m = pick(mrs);
	for (auto &x : mrs)
		if (x->pd == (*w)->pd && chance(70))
			m = &x;
	ibv_mw_bind_info info{};
	info.mr = m && chance(90) ? m->get() : nullptr;
	if (info.mr && chance(85)) {
		const uint64_t base = uintptr_t(info.mr->addr);
		info.addr = base + rnd(info.mr->length + 1);
		info.length = rnd(info.mr->length + 4096);
	} else if (chance(50)) {
		info.addr = g_rng();
		info.length = g_rng();
	}
	// Bits 1 to 5: the remote rights, MW_BIND and ZERO_BASED.
	info.mw_access_flags = chance(80) ? unsigned(rnd(32)) << 1 : rnd32();
	const unsigned flags = chance(90) ? unsigned(rnd(16)) : rnd32();
	if ((*w)->type == IBV_MW_TYPE_1 && chance(85)) {
		ibv_mw_bind b{};
		b.wr_id = g_rng();
		b.send_flags = flags;
		b.bind_info = info;
		VerbScope s("ibv_bind_mw");
		int rc = ibv_bind_mw(q->qp.get(), w->get(), &b);
		trace("bind_mw qp %u rkey %#x", q->qp->qp_num, (*w)->rkey);
		result("ibv_bind_mw", rc, {EINVAL, ENOMEM, EOPNOTSUPP, EPERM});
		return;
	}
	ibv_send_wr wr{};
	wr.wr_id = g_rng();
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = flags;
	wr.bind_mw.mw = w->get();
	wr.bind_mw.rkey = chance(85) ? ibv_inc_rkey((*w)->rkey) : rnd32();
	wr.bind_mw.bind_info = info;
	ibv_send_wr *bad;
	VerbScope s("ibv_post_send");
	int rc = ibv_post_send(q->qp.get(), &wr, &bad);
	trace("post BIND_MW qp %u rkey %#x", q->qp->qp_num, wr.bind_mw.rkey);
	result("ibv_post_send", rc, {EINVAL, ENOMEM, EOPNOTSUPP});
}

void Fuzz::op_create_srq()
{
	ibv_pd *pd = any_pd();
	if (!pd || srqs.size() >= kMaxObjs / 2)
		return;
	ibv_srq_init_attr a{};
	a.attr.max_wr = rnd_count(256);
	a.attr.max_sge = chance(80) ? uint32_t(rnd(8)) : rnd_count(64);
	a.attr.srq_limit = chance(70) ? 0 : rnd_count(64);
	VerbScope s("ibv_create_srq");
	Srq srq(ibv_create_srq(pd, &a));
	trace("create_srq max_wr %u max_sge %u", a.attr.max_wr, a.attr.max_sge);
	result("ibv_create_srq", srq ? 0 : errno, {EINVAL, ENOMEM, EOPNOTSUPP});
	if (srq)
		srqs.push_back(std::move(srq));
}

void Fuzz::op_modify_srq()
{
	auto *srq = pick(srqs);
	if (!srq)
		return;
	ibv_srq_attr a{};
	a.max_wr = rnd_count(256);
	a.srq_limit = rnd_count(64);
	int mask = int(rnd(4));
	VerbScope s("ibv_modify_srq");
	int rc = ibv_modify_srq(srq->get(), &a, mask);
	result("ibv_modify_srq", rc, {EINVAL, EOPNOTSUPP});
}

void Fuzz::op_destroy_srq()
{
	drain_async();
	destroy_one(srqs, [](Srq &q) -> Srq & { return q; }, ibv_destroy_srq, "ibv_destroy_srq",
		    {EBUSY});
}

void Fuzz::op_create_qp()
{
	ibv_pd *pd = any_pd();
	if (!pd || cqs.empty() || qps.size() >= kMaxObjs)
		return;
	ibv_qp_init_attr a{};
	size_t sc = rnd(cqs.size()), rc = rnd(cqs.size());
	a.send_cq = cqs[sc].cq.get();
	a.recv_cq = cqs[rc].cq.get();
	static const ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UD, IBV_QPT_UD,
					    IBV_QPT_UC, IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND};
	a.qp_type = types[rnd(std::size(types))];
	bool use_srq = !srqs.empty() && chance(25);
	if (use_srq)
		a.srq = pick(srqs)->get();
	a.cap.max_send_wr = chance(85) ? uint32_t(rnd(64) + 1) : rnd_count(1024);
	a.cap.max_recv_wr = chance(85) ? uint32_t(rnd(64) + 1) : rnd_count(1024);
	a.cap.max_send_sge = chance(85) ? uint32_t(rnd(4) + 1) : rnd_count(64);
	a.cap.max_recv_sge = chance(85) ? uint32_t(rnd(4) + 1) : rnd_count(64);
	a.cap.max_inline_data = chance(85) ? uint32_t(rnd(256)) : rnd_count(4096);
	a.sq_sig_all = int(rnd(2));
	VerbScope s("ibv_create_qp");
	Qp qp(ibv_create_qp(pd, &a));
	trace("create_qp type %d srq %d wr %u/%u sge %u/%u inline %u", a.qp_type, use_srq,
	      a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge,
	      a.cap.max_inline_data);
	result("ibv_create_qp", qp ? 0 : errno, {EINVAL, ENOMEM, EOPNOTSUPP, ENOSYS});
	if (qp)
		qps.push_back({std::move(qp), a.qp_type, use_srq, sc, rc});
}

// A random transition with random attributes under a random mask.
void Fuzz::op_modify_qp()
{
	auto *q = pick(qps);
	if (!q)
		return;
	ibv_qp_attr a{};
	a.qp_state = ibv_qp_state(rnd(8));
	a.cur_qp_state = ibv_qp_state(rnd(7));
	a.path_mtu = ibv_mtu(rnd(7));
	a.qkey = rnd32();
	a.rq_psn = rnd32();
	a.sq_psn = rnd32();
	a.dest_qp_num = chance(50) && !qps.empty() ? pick(qps)->qp->qp_num : rnd32();
	a.qp_access_flags = int(chance(80) ? rnd(16) : rnd32());
	a.pkey_index = uint16_t(rnd(3));
	a.port_num = uint8_t(chance(90) ? 1 : rnd(4));
	a.timeout = uint8_t(rnd(32));
	a.retry_cnt = uint8_t(rnd(8));
	a.rnr_retry = uint8_t(rnd(8));
	a.min_rnr_timer = uint8_t(rnd(32));
	a.max_rd_atomic = uint8_t(rnd(20));
	a.max_dest_rd_atomic = uint8_t(rnd(20));
	a.ah_attr.is_global = uint8_t(chance(90));
	a.ah_attr.grh.dgid = g_gid;
	if (chance(20))
		for (auto &b : a.ah_attr.grh.dgid.raw)
			b = uint8_t(rnd(256));
	a.ah_attr.grh.sgid_index = uint8_t(chance(90) ? g_gid_index : rnd(256));
	a.ah_attr.grh.hop_limit = uint8_t(rnd(256));
	a.ah_attr.port_num = a.port_num;
	int mask = int(rnd32()) & ((1 << 21) - 1);
	if (chance(70))
		mask |= IBV_QP_STATE;
	VerbScope s("ibv_modify_qp");
	int rc = ibv_modify_qp(q->qp.get(), &a, mask);
	trace("modify_qp %u state %d mask %#x", q->qp->qp_num, a.qp_state, mask);
	result("ibv_modify_qp", rc,
	       {EINVAL, EOPNOTSUPP, ENOMEM, EHOSTUNREACH, ENETUNREACH, EAFNOSUPPORT, ENODATA,
		ENOENT});
}

int to_rts(ibv_qp *qp, ibv_qp_type type, uint32_t dest, bool err_ok)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	int rc;
	if (type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						   IBV_QP_QKEY);
		if (rc)
			return rc;
		a = {};
		a.qp_state = IBV_QPS_RTR;
		if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE)))
			return rc;
		a.qp_state = IBV_QPS_RTS;
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = g_gid;
	a.ah_attr.grh.sgid_index = uint8_t(g_gid_index);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	// Short retry budget while fuzzing: peers vanish all the time.
	a.timeout = err_ok ? 8 : 14;
	a.retry_cnt = err_ok ? 1 : 7;
	a.rnr_retry = err_ok ? 1 : 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					   IBV_QP_MAX_QP_RD_ATOMIC);
}

// The valid path to RTS (RC: to another QP of the pool, or itself), so that
// posts reach a datapath that runs.
void Fuzz::op_connect()
{
	auto *q = pick(qps);
	if (!q)
		return;
	uint32_t dest = pick(qps)->qp->qp_num;
	int rc;
	{
		VerbScope s("ibv_modify_qp");
		rc = to_rts(q->qp.get(), q->type, dest, true);
	}
	trace("connect %u -> %u", q->qp->qp_num, dest);
	// From a state other than RESET the first transition is invalid.
	result("ibv_modify_qp", rc, {EINVAL, EOPNOTSUPP});
}

void Fuzz::op_query_qp()
{
	auto *q = pick(qps);
	if (!q)
		return;
	ibv_qp_attr a{};
	ibv_qp_init_attr init{};
	VerbScope s("ibv_query_qp");
	int rc = ibv_query_qp(q->qp.get(), &a, int(rnd32()) & ((1 << 21) - 1), &init);
	result("ibv_query_qp", rc, {EINVAL, EOPNOTSUPP});
}

void Fuzz::op_destroy_qp()
{
	drain_async();
	destroy_one(qps, [](QpRec &q) -> Qp & { return q.qp; }, ibv_destroy_qp, "ibv_destroy_qp",
		    {});
}

void Fuzz::op_create_ah()
{
	ibv_pd *pd = any_pd();
	if (!pd || ahs.size() >= kMaxObjs)
		return;
	ibv_ah_attr a{};
	a.is_global = uint8_t(chance(90));
	a.grh.dgid = g_gid;
	if (chance(30))
		for (auto &b : a.grh.dgid.raw)
			b = uint8_t(rnd(256));
	a.grh.sgid_index = uint8_t(chance(90) ? g_gid_index : rnd(256));
	a.grh.hop_limit = uint8_t(rnd(256));
	a.grh.traffic_class = uint8_t(rnd(256));
	a.grh.flow_label = rnd32();
	a.sl = uint8_t(rnd(16));
	a.port_num = uint8_t(chance(90) ? 1 : rnd(4));
	VerbScope s("ibv_create_ah");
	Ah ah(ibv_create_ah(pd, &a));
	result("ibv_create_ah", ah ? 0 : errno,
	       {EINVAL, ENOMEM, EOPNOTSUPP, EHOSTUNREACH, ENETUNREACH, EAFNOSUPPORT, ENODATA,
		ENOENT});
	if (ah)
		ahs.push_back(std::move(ah));
}

void Fuzz::op_destroy_ah()
{
	destroy_one(ahs, [](Ah &a) -> Ah & { return a; }, ibv_destroy_ah, "ibv_destroy_ah", {});
}

// SGEs: in a registered region (valid), random keys or addresses (invalid
// for the kernel, harmless for the provider, which copies only descriptors).
void random_sges(Fuzz &f, std::vector<ibv_sge> &sg, int n, bool inline_data)
{
	sg.resize(size_t(n));
	for (auto &s : sg) {
		// Inline data is copied by the provider from our memory: keep it valid.
		size_t off = rnd(kArena - 8);
		s.addr = uintptr_t(f.arena.data() + off);
		s.length = uint32_t(std::min<uint64_t>(rnd(chance(80) ? 512 : 70000), kArena - off));
		auto *m = f.pick(f.mrs);
		s.lkey = m && chance(80) ? (*m)->lkey : rnd32();
		if (!inline_data && chance(10))
			s.addr = g_rng();
		if (!inline_data && chance(5))
			s.length = rnd32();
	}
}

void Fuzz::op_post_send() { post_send_to(pick(qps)); }

void Fuzz::post_send_to(QpRec *q)
{
	if (!q)
		return;
	const int nwr = int(rnd(4)) + 1;
	std::vector<ibv_send_wr> wrs(static_cast<size_t>(nwr));
	std::vector<std::vector<ibv_sge>> sgs(static_cast<size_t>(nwr));
	static const ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV, IBV_WR_LOCAL_INV,
		IBV_WR_BIND_MW, IBV_WR_TSO};
	for (int i = 0; i < nwr; ++i) {
		ibv_send_wr &w = wrs[size_t(i)];
		w.wr_id = g_rng();
		w.opcode = chance(95) ? ops[rnd(std::size(ops))] : ibv_wr_opcode(rnd(32));
		w.send_flags = chance(90) ? unsigned(rnd(16)) : rnd32();
		const bool inl = w.send_flags & IBV_SEND_INLINE;
		int nsge = chance(90) ? int(rnd(3)) : int(rnd(40));
		if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			nsge = 1;
		random_sges(*this, sgs[size_t(i)], nsge, inl);
		if (nsge == 1 && chance(50) &&
		    (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD))
			sgs[size_t(i)][0].length = 8;
		w.sg_list = sgs[size_t(i)].data();
		w.num_sge = chance(97) ? nsge : -1;
		w.imm_data = rnd32();
		auto *m = pick(mrs);
		uint64_t raddr = m && chance(80) ? uintptr_t((*m)->addr) + rnd((*m)->length + 16)
						 : g_rng();
		uint32_t rkey = m && chance(80) ? (*m)->rkey : rnd32();
		if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w.wr.atomic.remote_addr = chance(80) ? raddr & ~7ull : raddr;
			w.wr.atomic.rkey = rkey;
			w.wr.atomic.compare_add = g_rng();
			w.wr.atomic.swap = g_rng();
		} else if (q->type == IBV_QPT_UD) {
			auto *ah = pick(ahs);
			w.wr.ud.ah = ah && chance(95) ? ah->get() : nullptr;
			w.wr.ud.remote_qpn = chance(70) && !qps.empty() ? pick(qps)->qp->qp_num
								       : rnd32();
			w.wr.ud.remote_qkey = chance(70) ? 0x11111111 : rnd32();
		} else {
			w.wr.rdma.remote_addr = raddr;
			w.wr.rdma.rkey = rkey;
		}
		if (w.opcode == IBV_WR_SEND_WITH_INV || w.opcode == IBV_WR_LOCAL_INV) {
			auto *mw = pick(mws);
			w.invalidate_rkey = mw && chance(60) ? (*mw)->rkey : rkey;
		}
		w.next = i + 1 < nwr ? &wrs[size_t(i + 1)] : nullptr;
	}
	ibv_send_wr *bad = nullptr;
	VerbScope s("ibv_post_send");
	int rc = ibv_post_send(q->qp.get(), wrs.data(), &bad);
	trace("post_send qp %u %d WRs", q->qp->qp_num, nwr);
	result("ibv_post_send", rc, {EINVAL, ENOMEM, EOPNOTSUPP});
}

void Fuzz::op_post_recv()
{
	const bool to_srq = !srqs.empty() && chance(30);
	auto *q = pick(qps);
	if (!to_srq && !q)
		return;
	const int nwr = int(rnd(4)) + 1;
	std::vector<ibv_recv_wr> wrs(static_cast<size_t>(nwr));
	std::vector<std::vector<ibv_sge>> sgs(static_cast<size_t>(nwr));
	for (int i = 0; i < nwr; ++i) {
		int nsge = chance(90) ? int(rnd(3)) : int(rnd(40));
		random_sges(*this, sgs[size_t(i)], nsge, false);
		wrs[size_t(i)].wr_id = g_rng();
		wrs[size_t(i)].sg_list = sgs[size_t(i)].data();
		wrs[size_t(i)].num_sge = chance(97) ? nsge : -1;
		wrs[size_t(i)].next = i + 1 < nwr ? &wrs[size_t(i + 1)] : nullptr;
	}
	ibv_recv_wr *bad = nullptr;
	int rc;
	if (to_srq) {
		VerbScope s("ibv_post_srq_recv");
		rc = ibv_post_srq_recv(pick(srqs)->get(), wrs.data(), &bad);
		result("ibv_post_srq_recv", rc, {EINVAL, ENOMEM});
	} else {
		VerbScope s("ibv_post_recv");
		rc = ibv_post_recv(q->qp.get(), wrs.data(), &bad);
		result("ibv_post_recv", rc, {EINVAL, ENOMEM});
	}
}

void Fuzz::op_poll_cq()
{
	auto *c = pick(cqs);
	if (!c)
		return;
	ibv_wc wc[16];
	int n = int(rnd(17));
	int rc;
	{
		VerbScope s("ibv_poll_cq");
		rc = ibv_poll_cq(c->cq.get(), n, wc);
	}
	if (rc >= 0 && rc <= n) {
		result("ibv_poll_cq", 0, {});
	} else if (rc == -EIO && c->corrupted) {
		// A CQ whose consumer index we rewrote: the provider refuses it.
		result("ibv_poll_cq", EIO, {EIO});
	} else {
		result("ibv_poll_cq", rc < 0 ? -rc : ERANGE, {});
	}
	if (chance(20)) {
		VerbScope s("ibv_req_notify_cq");
		result("ibv_req_notify_cq", ibv_req_notify_cq(c->cq.get(), int(rnd(2))), {});
	}
}

// Corrupt a ring, then make the kernel read it: a doorbell (a post through
// the provider, which writes at the index we left), or a modify to ERR
// (flush), or nothing (the next message or poll reads it).
// A doorbell: a SEND without SGEs (UD: to an AH of the pool), which the
// provider writes at whatever producer index it finds.
void Fuzz::doorbell(QpRec &q)
{
	ibv_send_wr w{};
	w.wr_id = g_rng();
	w.opcode = IBV_WR_SEND;
	if (q.type == IBV_QPT_UD) {
		auto *ah = pick(ahs);
		if (!ah)
			return;
		w.wr.ud.ah = ah->get();
		w.wr.ud.remote_qpn = q.qp->qp_num;
		w.wr.ud.remote_qkey = 0x11111111;
	}
	ibv_send_wr *bad;
	VerbScope s("ibv_post_send");
	result("ibv_post_send", ibv_post_send(q.qp.get(), &w, &bad), {EINVAL, ENOMEM});
}

// Corrupt the SQ or RQ of a QP, then make the kernel read it: a doorbell,
// a modify to ERR (the flush reads both rings), or nothing (the next
// message or post reads it).
void Fuzz::corrupt_qp(QpRec *q)
{
	if (!q || !g_corrupt)
		return;
	const bool sq = q->srq || chance(60);
	mroce::Ring *r = sq ? sq_ring(q->qp.get()) : rq_ring(q->qp.get());
	if (!r)
		return;
	const char *what = corrupt_wq(*r);
	trace("corrupt qp %u %s: %s", q->qp->qp_num, sq ? "SQ" : "RQ", what);
	++g_stats[std::string("corrupt ") + (sq ? "SQ " : "RQ ") + what];
	switch (rnd(4)) {
	case 0:
		post_send_to(q);
		break;
	case 1:
		doorbell(*q);
		break;
	case 2: {
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_ERR;
		VerbScope s("ibv_modify_qp");
		result("ibv_modify_qp", ibv_modify_qp(q->qp.get(), &a, IBV_QP_STATE), {EINVAL});
		break;
	}
	default:
		break;
	}
}

// Valid traffic: two RC QPs of one PD connected to each other (or one QP
// to itself), a region of that PD, receives and SENDs posted, so that
// WQEs are in flight (taken by the kernel, not completed) when a ring is
// corrupted right after.
void Fuzz::op_pair()
{
	ibv_pd *pd = any_pd();
	if (!pd || cqs.empty() || qps.size() + 2 > kMaxObjs || mrs.size() >= kMaxObjs)
		return;
	Mr mr;
	{
		VerbScope s("ibv_reg_mr");
		mr.reset(ibv_reg_mr(pd, arena.data(), kArena,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ));
		result("ibv_reg_mr", mr ? 0 : errno, {ENOMEM});
	}
	if (!mr)
		return;
	const uint32_t lkey = mr->lkey;
	mrs.push_back(std::move(mr));
	const int n = chance(30) ? 1 : 2;
	std::vector<QpRec *> made;
	for (int i = 0; i < n; ++i) {
		ibv_qp_init_attr a{};
		a.send_cq = pick(cqs)->cq.get();
		a.recv_cq = pick(cqs)->cq.get();
		a.qp_type = IBV_QPT_RC;
		a.cap = {16, 16, 2, 2, 64};
		VerbScope s("ibv_create_qp");
		Qp qp(ibv_create_qp(pd, &a));
		result("ibv_create_qp", qp ? 0 : errno, {ENOMEM});
		if (!qp)
			return;
		qps.push_back({std::move(qp), IBV_QPT_RC, false, 0, 0});
	}
	QpRec &a = qps[qps.size() - size_t(n)], &b = qps.back();
	{
		VerbScope s("ibv_modify_qp");
		int rc = to_rts(a.qp.get(), IBV_QPT_RC, b.qp->qp_num, true);
		if (!rc && n == 2)
			rc = to_rts(b.qp.get(), IBV_QPT_RC, a.qp->qp_num, true);
		result("ibv_modify_qp", rc, {});
	}
	for (QpRec *q : {&a, &b}) {
		for (int i = 0, k = int(rnd(12)) + 1; i < k; ++i) {
			ibv_sge sg{uintptr_t(arena.data() + rnd(kArena / 2)), 4096, lkey};
			ibv_recv_wr rw{};
			rw.sg_list = &sg;
			rw.num_sge = 1;
			ibv_recv_wr *rbad;
			VerbScope s("ibv_post_recv");
			result("ibv_post_recv", ibv_post_recv(q->qp.get(), &rw, &rbad), {ENOMEM});
		}
	}
	for (QpRec *q : {&a, &b}) {
		for (int i = 0, k = int(rnd(8)) + 1; i < k; ++i) {
			ibv_sge sg{uintptr_t(arena.data() + kArena / 2 + rnd(kArena / 4)),
				   uint32_t(rnd(4097)), lkey};
			ibv_send_wr sw{};
			sw.opcode = IBV_WR_SEND;
			sw.send_flags = IBV_SEND_SIGNALED;
			sw.sg_list = &sg;
			sw.num_sge = 1;
			ibv_send_wr *sbad;
			VerbScope s("ibv_post_send");
			result("ibv_post_send", ibv_post_send(q->qp.get(), &sw, &sbad), {ENOMEM});
		}
	}
	if (chance(60))
		corrupt_qp(chance(50) ? &a : &b);
}

void Fuzz::op_corrupt()
{
	if (!g_corrupt)
		return;
	switch (rnd(4)) {
	case 0:
	case 1:	// SQ or RQ of a QP
		corrupt_qp(pick(qps));
		return;
	case 2: {	// SRQ
		auto *s = pick(srqs);
		if (!s)
			return;
		mroce::Ring *r = srq_ring(s->get());
		if (!r)
			return;
		const char *what = corrupt_wq(*r);
		trace("corrupt SRQ: %s", what);
		++g_stats[std::string("corrupt SRQ ") + what];
		return;
	}
	default: {	// CQ consumer
		auto *c = pick(cqs);
		if (!c)
			return;
		mroce::Ring *r = cq_ring(c->cq.get());
		if (!r)
			return;
		r->store_consumer(chance(50) ? rnd32() : r->load_producer() + uint32_t(rnd(3)) - 1);
		c->corrupted = true;
		++g_stats["corrupt CQ consumer"];
		return;
	}
	}
}

void Fuzz::step()
{
	using Op = void (Fuzz::*)();
	static const struct {
		Op op;
		unsigned weight;
	} table[] = {
		{&Fuzz::op_alloc_pd, 3},    {&Fuzz::op_dealloc_pd, 1},  {&Fuzz::op_create_cq, 4},
		{&Fuzz::op_destroy_cq, 1},  {&Fuzz::op_reg_mr, 5},      {&Fuzz::op_dereg_mr, 2},
		{&Fuzz::op_create_srq, 2},  {&Fuzz::op_modify_srq, 1},  {&Fuzz::op_destroy_srq, 1},
		{&Fuzz::op_create_qp, 6},   {&Fuzz::op_modify_qp, 6},   {&Fuzz::op_connect, 6},
		{&Fuzz::op_query_qp, 1},    {&Fuzz::op_destroy_qp, 3},  {&Fuzz::op_create_ah, 2},
		{&Fuzz::op_destroy_ah, 1},  {&Fuzz::op_post_send, 14},  {&Fuzz::op_post_recv, 10},
		{&Fuzz::op_poll_cq, 12},    {&Fuzz::op_corrupt, 5},     {&Fuzz::op_pair, 3},
		{&Fuzz::op_resize_cq, 2},   {&Fuzz::op_rereg_mr, 3},    {&Fuzz::op_alloc_mw, 2},
		{&Fuzz::op_dealloc_mw, 1},  {&Fuzz::op_bind_mw, 4},
	};
	static const unsigned total = [] {
		unsigned t = 0;
		for (auto &e : table)
			t += e.weight;
		return t;
	}();
	unsigned x = unsigned(rnd(total));
	for (auto &e : table) {
		if (x < e.weight) {
			g_opno.fetch_add(1);
			(this->*e.op)();
			return;
		}
		x -= e.weight;
	}
}

void Fuzz::teardown()
{
	drain_async();
	qps.clear();
	mws.clear();
	ahs.clear();
	drain_async();
	srqs.clear();
	mrs.clear();
	cqs.clear();
	pds.clear();
	drain_async();
	ctx.reset();
}

// ---- the clean transfer afterwards ------------------------------------------------

// Two RC QPs of one fresh context, connected to each other through the
// device's own GID: a SEND and an RDMA WRITE of 64 KiB, bytes compared.
bool loopback(std::string &why)
{
	constexpr size_t kLen = 65536;
	Ctx ctx = open_ctx();
	if (!ctx)
		return why = "open: " + std::string(std::strerror(errno)), false;
	Pd pd(ibv_alloc_pd(ctx.get()));
	Cq cq(pd ? ibv_create_cq(ctx.get(), 64, nullptr, nullptr, 0) : nullptr);
	Arena mem(4 * kLen);
	Mr mr(cq && mem.data() ? ibv_reg_mr(pd.get(), mem.data(), mem.size(),
					     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ)
			       : nullptr);
	if (!mr)
		return why = "pd/cq/mr: " + std::string(std::strerror(errno)), false;
	ibv_qp_init_attr ia{};
	ia.send_cq = ia.recv_cq = cq.get();
	ia.qp_type = IBV_QPT_RC;
	ia.cap = {16, 16, 1, 1, 0};
	Qp a(ibv_create_qp(pd.get(), &ia));
	Qp b(a ? ibv_create_qp(pd.get(), &ia) : nullptr);
	if (!b)
		return why = "create_qp: " + std::string(std::strerror(errno)), false;
	if (int rc = to_rts(a.get(), IBV_QPT_RC, b->qp_num, false) ?:
		     to_rts(b.get(), IBV_QPT_RC, a->qp_num, false))
		return why = "connect: " + std::string(std::strerror(rc)), false;
	std::byte *src = mem.data(), *dst = src + kLen, *wdst = src + 2 * kLen;
	for (size_t i = 0; i < kLen; ++i)
		src[i] = std::byte(rnd(256));
	ibv_sge rs{uintptr_t(dst), uint32_t(kLen), mr->lkey};
	ibv_recv_wr rw{};
	rw.wr_id = 1;
	rw.sg_list = &rs;
	rw.num_sge = 1;
	ibv_recv_wr *rbad;
	ibv_sge ss{uintptr_t(src), uint32_t(kLen), mr->lkey};
	ibv_send_wr sw[2]{};
	sw[0].wr_id = 2;
	sw[0].opcode = IBV_WR_SEND;
	sw[0].send_flags = IBV_SEND_SIGNALED;
	sw[0].sg_list = &ss;
	sw[0].num_sge = 1;
	sw[0].next = &sw[1];
	sw[1] = sw[0];
	sw[1].wr_id = 3;
	sw[1].opcode = IBV_WR_RDMA_WRITE;
	sw[1].wr.rdma.remote_addr = uintptr_t(wdst);
	sw[1].wr.rdma.rkey = mr->rkey;
	sw[1].next = nullptr;
	ibv_send_wr *sbad;
	if (int rc = ibv_post_recv(b.get(), &rw, &rbad) ?: ibv_post_send(a.get(), sw, &sbad))
		return why = "post: " + std::string(std::strerror(rc)), false;
	int got = 0;
	auto t_end = Clock::now() + std::chrono::seconds(g_watchdog_s);
	while (got < 3 && Clock::now() < t_end) {
		ibv_wc wc[4];
		int n = ibv_poll_cq(cq.get(), 4, wc);
		if (n < 0)
			return why = "poll_cq " + std::to_string(n), false;
		for (int i = 0; i < n; ++i) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return why = "wr " + std::to_string(wc[i].wr_id) + " status " +
					     ibv_wc_status_str(wc[i].status),
				       false;
			++got;
		}
		if (!n)
			usleep(1000);
	}
	if (got < 3)
		return why = "timeout: " + std::to_string(got) + " of 3 completions", false;
	if (std::memcmp(src, dst, kLen) || std::memcmp(src, wdst, kLen))
		return why = "payload differs", false;
	return true;
}

void usage()
{
	std::fprintf(stderr, "usage: mroce_verbs_fuzz [--seed N] [--seconds S] [--watchdog S] "
			     "[--no-rollback] [--no-corrupt] [-v] IBDEV GID_INDEX\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	int seconds = 60;
	bool have_seed = false;
	std::vector<std::string> pos;
	for (int i = 1; i < argc; ++i) {
		std::string a = argv[i];
		auto val = [&]() -> const char * {
			if (i + 1 >= argc)
				usage();
			return argv[++i];
		};
		if (a == "--seed") {
			g_seed = std::strtoull(val(), nullptr, 0);
			have_seed = true;
		} else if (a == "--seconds") {
			seconds = std::atoi(val());
		} else if (a == "--watchdog") {
			g_watchdog_s = std::max(1, std::atoi(val()));
		} else if (a == "--no-rollback") {
			g_rollback = false;
		} else if (a == "--no-corrupt") {
			g_corrupt = false;
		} else if (a == "-v") {
			g_verbose = true;
		} else if (!a.empty() && a[0] == '-') {
			usage();
		} else {
			pos.push_back(a);
		}
	}
	if (pos.size() != 2)
		usage();
	if (const char *e = std::getenv("MROCE_VERBS_FUZZ_NO_ROLLBACK"); e && *e && std::strcmp(e, "0"))
		g_rollback = false;
	if (!have_seed)
		g_seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
	g_rng.seed(g_seed);
	g_dev = pos[0];
	g_gid_index = std::atoi(pos[1].c_str());
	std::setvbuf(stdout, nullptr, _IOLBF, 0);

	std::printf("KTAP version 1\n1..4\n");
	std::printf("# seed %llu (replay: mroce_verbs_fuzz --seed %llu --seconds %d%s%s %s %d)\n",
		    (unsigned long long)g_seed, (unsigned long long)g_seed, seconds,
		    g_rollback ? "" : " --no-rollback", g_corrupt ? "" : " --no-corrupt",
		    g_dev.c_str(), g_gid_index);
	std::printf("# corruption %s, producer rollback %s\n", g_corrupt ? "on" : "off",
		    g_corrupt && g_rollback ? "on" : "off");
	const std::string objects0 = live_objects();
	std::jthread dog(watchdog);

	unsigned long ops = 0, v_fuzz = 0;
	{
		Fuzz f;
		f.ctx = open_ctx();
		if (!f.ctx || !f.arena.data() || !f.guard.data()) {
			std::printf("not ok 1 fuzz: cannot open %s: %s (seed %llu)\n", g_dev.c_str(),
				    std::strerror(errno), (unsigned long long)g_seed);
			return 1;
		}
		if (ibv_query_gid(f.ctx.get(), 1, g_gid_index, &g_gid)) {
			std::printf("not ok 1 fuzz: no GID %d on %s\n", g_gid_index, g_dev.c_str());
			return 1;
		}
		int fl = fcntl(f.ctx->async_fd, F_GETFL);
		fcntl(f.ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
		const auto end = Clock::now() + std::chrono::seconds(seconds);
		while (Clock::now() < end) {
			for (int i = 0; i < 64; ++i)
				f.step();
			f.drain_async();
		}
		ops = g_opno.load();
		v_fuzz = g_violations;
		f.teardown();
	}
	for (auto &[k, v] : g_stats)
		std::printf("# %-40s %lu\n", k.c_str(), v);
	bool ok = true;
	if (v_fuzz == 0) {
		std::printf("ok 1 fuzz: %lu ops in %d s, every result documented\n", ops, seconds);
	} else {
		std::printf("not ok 1 fuzz: %lu undocumented results in %lu ops (seed %llu)\n",
			    v_fuzz, ops, (unsigned long long)g_seed);
		ok = false;
	}
	if (g_violations == v_fuzz) {
		std::printf("ok 2 fuzz: every object destroyed\n");
	} else {
		std::printf("not ok 2 fuzz: %lu destroy calls failed at the end (seed %llu)\n",
			    g_violations - v_fuzz, (unsigned long long)g_seed);
		ok = false;
	}

	std::string why;
	if (loopback(why)) {
		std::printf("ok 3 device usable: RC loopback SEND + WRITE 64 KiB, bytes verified\n");
	} else {
		std::printf("not ok 3 device usable: RC loopback: %s (seed %llu)\n", why.c_str(),
			    (unsigned long long)g_seed);
		ok = false;
	}
	const std::string objects1 = live_objects();
	if (objects0 == objects1) {
		std::printf("ok 4 live objects back to the start: %s\n", objects1.c_str());
	} else {
		std::printf("# at start: %s\n# at end:   %s\n", objects0.c_str(), objects1.c_str());
		std::printf("not ok 4 live objects back to the start (seed %llu)\n",
			    (unsigned long long)g_seed);
		ok = false;
	}
	dog.request_stop();
	return ok ? 0 : 1;
}
