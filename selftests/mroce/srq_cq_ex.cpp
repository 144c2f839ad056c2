// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// srq_cq_ex - completion timestamps, SRQ resize and SRQ limit events end to
// end through the mroce provider: RC QPs on device A send to RC QPs on
// device B (one process, both devices).
//
//   clock      ibv_query_device_ex reports a 64-bit completion_timestamp_mask
//              and hca_core_clock 1000000 kHz; ibv_query_rt_values_ex
//              returns CLOCK_MONOTONIC in ns (read between two reads of it);
//   ts         CQs from ibv_create_cq_ex with both timestamp flags on both
//              sides: every completion's raw stamp lies between the
//              CLOCK_MONOTONIC read before its SEND was posted and the one
//              read after it was polled, the wallclock stamp the same with
//              CLOCK_REALTIME, and the raw stamps never decrease along a CQ;
//              the stamps survive an ibv_resize_cq; unsupported wc_flags
//              still fail;
//   grow       an SRQ of 16 holding receives not yet used grows to 64, more
//              receives are posted, SENDs consume them all: every message
//              arrives once, in order, in the receive posted for it, every
//              byte checked; shrinking below the receives posted fails with
//              EINVAL and changes nothing, a shrink that holds them works;
//   errors     max_wr 0 or above max_srq_wr, a limit above max_wr, a shrink
//              below an armed limit, unknown mask bits: EINVAL;
//   traffic    receives reposted as they complete while one thread resizes
//              the SRQ between random sizes and another posts SENDs: every
//              message once, in order, bytes checked, no resize refused;
//   hostile    a second mapping of the SRQ ring, made by the test: an
//              overrun producer index fails the resize with EINVAL and one
//              ring_bad_index, nothing changed; after a resize the old
//              mapping still reads the WQEs, its offset cannot be mapped
//              again, and garbage written there is never read; raw
//              MODIFY_SRQ and CREATE_CQ commands with a bad driver part
//              fail with EINVAL, EFAULT or EOPNOTSUPP;
//   limit      IBV_EVENT_SRQ_LIMIT_REACHED exactly once, when a message
//              leaves fewer receives than the limit and not before;
//              srq_limit reads 0 afterwards; re-arming works; a limit armed
//              above the receives posted fires at the next message.
//
// Usage: mroce_srq_cq_ex DEV_A GID_INDEX_A DEV_B GID_INDEX_B
// Output is KTAP.  Exit status 0 when every case passed.

#include <infiniband/verbs.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/mroce-abi.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "verbs_test.hpp"

namespace {

using namespace mroce_test;

Ktap ktap;

using Clock = std::chrono::steady_clock;

constexpr size_t kMsg = 256;		// SEND payload
constexpr size_t kSlots = 1024;		// message buffers on each side
constexpr std::chrono::milliseconds kWait(20000);

struct SrqFree { void operator()(ibv_srq *s) const { ibv_destroy_srq(s); } };
using Srq = std::unique_ptr<ibv_srq, SrqFree>;

uint64_t now_ns(clockid_t id)
{
	timespec ts;
	clock_gettime(id, &ts);
	return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t mono() { return now_ns(CLOCK_MONOTONIC); }
uint64_t real() { return now_ns(CLOCK_REALTIME); }

Context open_device(const char *name)
{
	int n = 0;
	std::unique_ptr<ibv_device *, DevListFree> list(ibv_get_device_list(&n));
	for (int i = 0; list && i < n; ++i)
		if (std::strcmp(ibv_get_device_name(list.get()[i]), name) == 0)
			return Context(ibv_open_device(list.get()[i]));
	return nullptr;
}

struct Dev {
	Context ctx;
	Pd pd;
	std::vector<uint8_t> mem = std::vector<uint8_t>(kSlots * kMsg);
	Mr mr;
	ibv_gid gid{};
	int gid_index = 0;
	uint8_t *slot(uint64_t id) { return mem.data() + (id % kSlots) * kMsg; }
	uint64_t addr(uint64_t id) { return uint64_t(uintptr_t(slot(id))); }
};

bool open_dev(Dev &d, const char *name, int gid_index)
{
	d.ctx = open_device(name);
	if (!d.ctx)
		return ktap.result(false, std::string("open ") + name, errstr(errno));
	d.gid_index = gid_index;
	d.pd.reset(ibv_alloc_pd(d.ctx.get()));
	d.mr.reset(ibv_reg_mr(d.pd.get(), d.mem.data(), d.mem.size(), IBV_ACCESS_LOCAL_WRITE));
	if (!d.pd || !d.mr)
		return ktap.result(false, std::string("PD, MR on ") + name, errstr(errno));
	if (ibv_query_gid(d.ctx.get(), 1, gid_index, &d.gid))
		return ktap.result(false, std::string("ibv_query_gid on ") + name, errstr(errno));
	return true;
}

Qp make_qp(Dev &d, ibv_cq *cq, ibv_srq *srq, uint32_t depth)
{
	ibv_qp_init_attr a{};
	a.send_cq = a.recv_cq = cq;
	a.srq = srq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = depth;
	a.cap.max_recv_wr = srq ? 0 : depth;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = srq ? 0 : 1;
	return Qp(ibv_create_qp(d.pd.get(), &a));
}

// qp of s to peer_qp of peer.
int connect_qp(Dev &s, ibv_qp *qp, const Dev &peer, const ibv_qp *peer_qp)
{
	RcConnect c;
	c.access = 0;
	c.rd_atomic = 1;
	c.min_rnr_timer = 1;	// rnr_retry 7: a SEND waits for its receive
	return connect_rc(qp, s.gid_index, peer.gid, peer_qp->qp_num, c);
}

int connect_pair(Dev &a, ibv_qp *qa, Dev &b, ibv_qp *qb)
{
	int rc = connect_qp(a, qa, b, qb);
	return rc ? rc : connect_qp(b, qb, a, qa);
}

// A signaled SEND of kMsg bytes of pattern_byte(id) from A's slot id.
int post_send(Dev &a, ibv_qp *qp, uint64_t id)
{
	uint8_t *p = a.slot(id);
	for (size_t i = 0; i < kMsg; ++i)
		p[i] = pattern_byte(id, i);
	ibv_sge sge{a.addr(id), uint32_t(kMsg), a.mr->lkey};
	ibv_send_wr wr{};
	wr.wr_id = id;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_send_wr *bad;
	return ibv_post_send(qp, &wr, &bad);
}

// A receive of kMsg bytes into B's slot id, the slot cleared first.
int post_srq_recv(Dev &b, ibv_srq *srq, uint64_t id)
{
	std::memset(b.slot(id), 0, kMsg);
	ibv_sge sge{b.addr(id), uint32_t(kMsg), b.mr->lkey};
	ibv_recv_wr wr{};
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_recv_wr *bad;
	return ibv_post_srq_recv(srq, &wr, &bad);
}

int post_recvs(Dev &b, ibv_srq *srq, uint64_t first, uint64_t last)
{
	for (uint64_t id = first; id <= last; ++id)
		if (int rc = post_srq_recv(b, srq, id))
			return rc;
	return 0;
}

int post_sends(Dev &a, ibv_qp *qp, uint64_t first, uint64_t last)
{
	for (uint64_t id = first; id <= last; ++id)
		if (int rc = post_send(a, qp, id))
			return rc;
	return 0;
}

// The next completions of a CQ against an expected, strictly increasing
// series of wr_ids; a receive's bytes are checked against pattern_byte(wr_id)
// (the message of that number landed in the receive of that number).
struct Expect {
	Expect(uint64_t first, ibv_wc_opcode op, Dev *data = nullptr)
		: next(first), opcode(op), rx(data)
	{
	}
	uint64_t next;
	ibv_wc_opcode opcode;
	Dev *rx;			// receives: check the data in this device's slots
	std::string error;
	size_t seen = 0;

	bool take(uint64_t wr_id, ibv_wc_status status, ibv_wc_opcode op, uint32_t byte_len)
	{
		if (!error.empty())
			return false;
		if (wr_id != next || status != IBV_WC_SUCCESS || op != opcode) {
			error = "completion " + std::to_string(seen) + ": wr_id " +
				std::to_string(wr_id) + " (expected " + std::to_string(next) +
				"), status " + ibv_wc_status_str(status) + ", opcode " +
				std::to_string(op);
			return false;
		}
		if (rx) {
			const uint8_t *p = rx->slot(wr_id);
			if (byte_len != kMsg) {
				error = "recv " + std::to_string(wr_id) + " byte_len " +
					std::to_string(byte_len);
				return false;
			}
			for (size_t i = 0; i < kMsg; ++i)
				if (p[i] != pattern_byte(wr_id, i)) {
					error = "recv " + std::to_string(wr_id) + " byte " +
						std::to_string(i) + " differs";
					return false;
				}
		}
		++next;
		++seen;
		return true;
	}
	bool take(const ibv_wc &wc) { return take(wc.wr_id, wc.status, wc.opcode, wc.byte_len); }
};

bool poll_n(ibv_cq *cq, size_t n, Expect &ex)
{
	const auto end = Clock::now() + kWait;
	size_t got = 0;
	while (got < n && Clock::now() < end) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, int(std::min<size_t>(16, n - got)), wc);
		if (k < 0) {
			ex.error = "ibv_poll_cq " + std::to_string(k);
			return false;
		}
		if (k == 0) {
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			continue;
		}
		for (int i = 0; i < k; ++i)
			if (!ex.take(wc[i]))
				return false;
		got += size_t(k);
	}
	if (got < n && ex.error.empty())
		ex.error = std::to_string(got) + " of " + std::to_string(n) + " completions";
	return got == n;
}

// ---- clock: device attributes and the raw clock --------------------------------

void test_clock(Dev &a)
{
	ibv_device_attr_ex attr{};
	int rc = ibv_query_device_ex(a.ctx.get(), nullptr, &attr);
	ktap.result(rc == 0 && attr.completion_timestamp_mask == UINT64_MAX,
		    "clock: completion_timestamp_mask is 64 bits",
		    errstr(rc) + ", mask " + std::to_string(attr.completion_timestamp_mask));
	ktap.result(rc == 0 && attr.hca_core_clock == 1000000,
		    "clock: hca_core_clock 1000000 kHz (1 ns ticks)",
		    "hca_core_clock " + std::to_string(attr.hca_core_clock));

	bool ok = true;
	std::string why;
	uint64_t last = 0;
	for (int i = 0; ok && i < 100; ++i) {
		ibv_values_ex v{};
		v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
		const uint64_t t0 = mono();
		rc = ibv_query_rt_values_ex(a.ctx.get(), &v);
		const uint64_t t1 = mono();
		const uint64_t raw = uint64_t(v.raw_clock.tv_sec) * 1000000000ull +
				     uint64_t(v.raw_clock.tv_nsec);
		if (rc || v.comp_mask != IBV_VALUES_MASK_RAW_CLOCK) {
			ok = false;
			why = errstr(rc) + ", comp_mask " + std::to_string(v.comp_mask);
		} else if (raw < t0 || raw > t1 || raw < last) {
			ok = false;
			why = "raw " + std::to_string(raw) + " outside [" + std::to_string(t0) +
			      ", " + std::to_string(t1) + "] or below " + std::to_string(last);
		}
		last = raw;
	}
	ktap.result(ok, "clock: 100 ibv_query_rt_values_ex RAW_CLOCK reads, each between two "
			"CLOCK_MONOTONIC reads around it", why);
	ibv_values_ex v{};
	v.comp_mask = 0;
	rc = ibv_query_rt_values_ex(a.ctx.get(), &v);
	ktap.result(rc == 0 && v.comp_mask == 0, "clock: an empty comp_mask fills nothing",
		    errstr(rc));
}

// ---- ts: completion timestamps ---------------------------------------------------

constexpr uint64_t kTsFlags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

CqEx make_ts_cq(Dev &d, int cqe, uint64_t extra = kTsFlags)
{
	ibv_cq_init_attr_ex ca{};
	ca.cqe = uint32_t(cqe);
	ca.wc_flags = IBV_WC_STANDARD_FLAGS | extra;
	return CqEx(ibv_create_cq_ex(d.ctx.get(), &ca));
}

struct Bounds {
	uint64_t mono_lo, real_lo;	// read before the SEND was posted
};

// Polls n completions of cq through ibv_start_poll with the timestamps
// checked against the bounds of their wr_id and the clocks read after
// each was polled.  why empty when all held.
void poll_ts(ibv_cq_ex *cq, size_t n, Expect &ex, const std::map<uint64_t, Bounds> &bounds,
	     bool wallclock, uint64_t &last_raw, std::string &why)
{
	const auto end = Clock::now() + kWait;
	while (ex.seen < n && ex.error.empty() && why.empty() && Clock::now() < end) {
		ibv_poll_cq_attr attr{};
		int rc = ibv_start_poll(cq, &attr);
		if (rc == ENOENT) {
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			continue;
		}
		if (rc) {
			ex.error = "ibv_start_poll " + errstr(rc);
			return;
		}
		do {
			const uint64_t mono_hi = mono(), real_hi = real();
			const uint64_t id = cq->wr_id;
			const uint64_t raw = ibv_wc_read_completion_ts(cq);
			const uint64_t wall = wallclock ? ibv_wc_read_completion_wallclock_ns(cq) : 0;
			if (!ex.take(id, cq->status, ibv_wc_read_opcode(cq), ibv_wc_read_byte_len(cq)))
				break;
			auto b = bounds.find(id);
			if (b == bounds.end()) {
				why = "no post time for wr_id " + std::to_string(id);
				break;
			}
			if (raw < b->second.mono_lo || raw > mono_hi)
				why = "wr_id " + std::to_string(id) + ": raw " + std::to_string(raw) +
				      " outside [" + std::to_string(b->second.mono_lo) + ", " +
				      std::to_string(mono_hi) + "]";
			else if (raw < last_raw)
				why = "wr_id " + std::to_string(id) + ": raw " + std::to_string(raw) +
				      " below the previous " + std::to_string(last_raw);
			else if (wallclock && (wall < b->second.real_lo || wall > real_hi))
				why = "wr_id " + std::to_string(id) + ": wallclock " +
				      std::to_string(wall) + " outside [" +
				      std::to_string(b->second.real_lo) + ", " +
				      std::to_string(real_hi) + "]";
			last_raw = raw;
		} while (why.empty() && ex.seen < n && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	if (ex.seen < n && ex.error.empty() && why.empty())
		ex.error = std::to_string(ex.seen) + " of " + std::to_string(n) + " completions";
}

void test_timestamps(Dev &a, Dev &b)
{
	CqEx acq = make_ts_cq(a, 256), bcq = make_ts_cq(b, 256);
	if (!ktap.result(acq && bcq, "ts: ibv_create_cq_ex with both timestamp flags on A and B",
			 errstr(errno)))
		return;
	// B's receives come from an SRQ: the stamps do not depend on the RQ kind.
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 128;
	sa.attr.max_sge = 1;
	Srq srq(ibv_create_srq(b.pd.get(), &sa));
	Qp qa = make_qp(a, ibv_cq_ex_to_cq(acq.get()), nullptr, 128);
	Qp qb = srq ? make_qp(b, ibv_cq_ex_to_cq(bcq.get()), srq.get(), 128) : nullptr;
	int rc = !srq || !qa || !qb ? errno : connect_pair(a, qa.get(), b, qb.get());
	if (!ktap.result(rc == 0, "ts: an RC pair on them, B's receives from an SRQ", errstr(rc)))
		return;

	const uint64_t n = 100;
	std::map<uint64_t, Bounds> bounds;
	rc = post_recvs(b, srq.get(), 1, n);
	for (uint64_t id = 1; !rc && id <= n; ++id) {
		bounds[id] = {mono(), real()};
		rc = post_send(a, qa.get(), id);
		if (id % 10 == 0)	// spread the stamps a little
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	if (!ktap.result(rc == 0, "ts: post 100 receives and 100 SENDs", errstr(rc)))
		return;
	Expect sends{1, IBV_WC_SEND};
	Expect recvs{1, IBV_WC_RECV, &b};
	std::string why_s, why_r;
	uint64_t last_s = 0, last_r = 0;
	poll_ts(acq.get(), n, sends, bounds, true, last_s, why_s);
	poll_ts(bcq.get(), n, recvs, bounds, true, last_r, why_r);
	ktap.result(sends.error.empty() && sends.seen == n, "ts: A: 100 SEND completions in order",
		    sends.error);
	ktap.result(recvs.error.empty() && recvs.seen == n,
		    "ts: B: 100 receives in order, every byte as sent", recvs.error);
	ktap.result(why_s.empty() && sends.seen == n,
		    "ts: A: raw stamps in [post, poll] of CLOCK_MONOTONIC and never decreasing, "
		    "wallclock in [post, poll] of CLOCK_REALTIME", why_s);
	ktap.result(why_r.empty() && recvs.seen == n,
		    "ts: B: raw stamps in [post, poll] of CLOCK_MONOTONIC and never decreasing, "
		    "wallclock in [post, poll] of CLOCK_REALTIME", why_r);
	ktap.result(last_r > 0 && last_s > 0 && last_r != last_s,
		    "ts: stamps are per completion (A's last differs from B's last)");

	// Stamps move with the CQEs in an ibv_resize_cq.
	rc = post_recvs(b, srq.get(), n + 1, n + 8);
	for (uint64_t id = n + 1; !rc && id <= n + 8; ++id) {
		bounds[id] = {mono(), real()};
		rc = post_send(a, qa.get(), id);
	}
	Expect recv8{n + 1, IBV_WC_RECV, &b};
	// Wait until B's 8 receives are all in its ring: a resize to 7 fails.
	const auto end = Clock::now() + kWait;
	while (!rc && Clock::now() < end && ibv_resize_cq(ibv_cq_ex_to_cq(bcq.get()), 7) != EINVAL)
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
	rc = rc ? rc : ibv_resize_cq(ibv_cq_ex_to_cq(bcq.get()), 512);
	std::string why;
	poll_ts(bcq.get(), 8, recv8, bounds, true, last_r, why);
	ktap.result(rc == 0 && recv8.error.empty() && why.empty(),
		    "ts: 8 receives moved by ibv_resize_cq keep stamps in their bounds",
		    errstr(rc) + " " + recv8.error + why);
	Expect send8{n + 1, IBV_WC_SEND};
	why.clear();
	poll_ts(acq.get(), 8, send8, bounds, true, last_s, why);
	ktap.result(send8.error.empty() && why.empty(), "ts: A: their 8 SENDs", send8.error + why);

	// Only the raw stamp: the wallclock reader is not offered.
	CqEx raw_only = make_ts_cq(a, 8, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
	ktap.result(raw_only && raw_only->read_completion_ts &&
			    !raw_only->read_completion_wallclock_ns,
		    "ts: a CQ with only the raw timestamp offers only its reader", errstr(errno));
	for (uint64_t f : {uint64_t(IBV_WC_EX_WITH_CVLAN), uint64_t(IBV_WC_EX_WITH_FLOW_TAG)}) {
		errno = 0;
		CqEx bad = make_ts_cq(a, 8, f);
		ktap.result(!bad && errno == EOPNOTSUPP,
			    "ts: ibv_create_cq_ex with wc_flags " + std::to_string(f) +
				    ": EOPNOTSUPP", errstr(errno));
	}
}

// ---- grow, errors, traffic: SRQ resize ------------------------------------------

struct SrqRig {
	Cq acq, bcq;
	Srq srq;
	Qp qa, qb;
};

// The process's /dev/infiniband/uverbs* mappings: start -> (end, offset).
using Maps = std::map<uint64_t, std::pair<uint64_t, uint64_t>>;

Maps uverbs_maps()
{
	Maps m;
	std::ifstream maps("/proc/self/maps");
	std::string line;
	while (std::getline(maps, line)) {
		unsigned long long start, end, off;
		char perms[8];
		if (line.find("/dev/infiniband/uverbs") != std::string::npos &&
		    std::sscanf(line.c_str(), "%llx-%llx %7s %llx", &start, &end, perms, &off) == 4)
			m[start] = {end, off};
	}
	return m;
}

// srq_ring: the mappings ibv_create_srq added (its ring), when asked for.
bool make_rig(Dev &a, Dev &b, SrqRig &r, uint32_t max_wr, const std::string &name,
	      Maps *srq_ring = nullptr)
{
	r.acq.reset(ibv_create_cq(a.ctx.get(), 1024, nullptr, nullptr, 0));
	r.bcq.reset(ibv_create_cq(b.ctx.get(), 1024, nullptr, nullptr, 0));
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = max_wr;
	sa.attr.max_sge = 1;
	const Maps before = uverbs_maps();
	r.srq.reset(ibv_create_srq(b.pd.get(), &sa));
	if (srq_ring)
		for (const auto &m : uverbs_maps())
			if (!before.count(m.first))
				srq_ring->insert(m);
	if (!r.acq || !r.bcq || !r.srq)
		return ktap.result(false, name + ": CQs and an SRQ of " + std::to_string(max_wr),
				   errstr(errno));
	r.qa = make_qp(a, r.acq.get(), nullptr, 256);
	r.qb = make_qp(b, r.bcq.get(), r.srq.get(), 256);
	int rc = !r.qa || !r.qb ? errno : connect_pair(a, r.qa.get(), b, r.qb.get());
	return ktap.result(rc == 0, name + ": an RC pair, B's receives from an SRQ of " +
					    std::to_string(max_wr), errstr(rc));
}

int srq_resize(ibv_srq *srq, uint32_t max_wr)
{
	ibv_srq_attr a{};
	a.max_wr = max_wr;
	return ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
}

int srq_arm(ibv_srq *srq, uint32_t limit)
{
	ibv_srq_attr a{};
	a.srq_limit = limit;
	return ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT);
}

ibv_srq_attr srq_query(ibv_srq *srq)
{
	ibv_srq_attr a{};
	if (ibv_query_srq(srq, &a))
		a.max_wr = ~0u;
	return a;
}

std::string attr_str(const ibv_srq_attr &a)
{
	return "max_wr " + std::to_string(a.max_wr) + ", srq_limit " + std::to_string(a.srq_limit);
}

// Sends first..last and checks both sides' completions.
bool exchange(Dev &a, Dev &b, SrqRig &r, uint64_t first, uint64_t last, const std::string &name)
{
	const size_t n = size_t(last - first + 1);
	int rc = post_sends(a, r.qa.get(), first, last);
	Expect sends{first, IBV_WC_SEND}, recvs{first, IBV_WC_RECV, &b};
	bool ok = rc == 0 && poll_n(r.acq.get(), n, sends);
	ktap.result(ok, name + ": " + std::to_string(n) + " SENDs " + std::to_string(first) + ".." +
				std::to_string(last) + " complete", errstr(rc) + " " + sends.error);
	bool rok = poll_n(r.bcq.get(), n, recvs);
	return ktap.result(rok, name + ": B receives " + std::to_string(first) + ".." +
				       std::to_string(last) + " once, in order, every byte as sent",
			   recvs.error);
}

void test_grow(Dev &a, Dev &b)
{
	SrqRig r;
	if (!make_rig(a, b, r, 16, "grow"))
		return;
	ibv_srq *srq = r.srq.get();
	ibv_srq_attr q = srq_query(srq);
	ktap.result(q.max_wr == 16, "grow: ibv_query_srq max_wr 16", attr_str(q));
	int rc = post_recvs(b, srq, 1, 16);
	int full = post_srq_recv(b, srq, 17);
	ktap.result(rc == 0 && full == ENOMEM, "grow: 16 receives fill it, a 17th is ENOMEM",
		    errstr(rc) + ", " + errstr(full));
	if (!exchange(a, b, r, 1, 5, "grow"))
		return;

	// 11 receives outstanding (6..16).
	rc = srq_resize(srq, 64);
	q = srq_query(srq);
	ktap.result(rc == 0 && q.max_wr == 64, "grow: to 64 with 11 receives outstanding",
		    errstr(rc) + ", " + attr_str(q));
	rc = post_recvs(b, srq, 17, 56);
	full = post_srq_recv(b, srq, 57);
	// 51 outstanding in 64 slots: 13 more fit.
	int more = full ? full : post_recvs(b, srq, 58, 69);
	int over = post_srq_recv(b, srq, 70);
	ktap.result(rc == 0 && full == 0 && more == 0 && over == ENOMEM,
		    "grow: 53 more receives fit after it (64 outstanding), the next is ENOMEM",
		    errstr(rc) + ", " + errstr(full) + ", " + errstr(more) + ", " + errstr(over));

	// 64 outstanding (6..69): a shrink below that fails and changes nothing.
	rc = srq_resize(srq, 63);
	q = srq_query(srq);
	ktap.result(rc == EINVAL && q.max_wr == 64,
		    "grow: shrink to 63 with 64 outstanding: EINVAL, max_wr still 64",
		    errstr(rc) + ", " + attr_str(q));
	rc = srq_resize(srq, 16);
	ktap.result(rc == EINVAL, "grow: shrink to 16 with 64 outstanding: EINVAL", errstr(rc));
	if (!exchange(a, b, r, 6, 30, "grow"))
		return;
	// 39 outstanding (31..69): 39 holds them (a ring of 64), 32 does not.
	rc = srq_resize(srq, 38);
	ktap.result(rc == EINVAL, "grow: shrink to 38 with 39 outstanding: EINVAL", errstr(rc));
	rc = srq_resize(srq, 39);
	q = srq_query(srq);
	ktap.result(rc == 0 && q.max_wr == 64, "grow: resize to 39 with 39 outstanding: max_wr 64",
		    errstr(rc) + ", " + attr_str(q));
	if (!exchange(a, b, r, 31, 69, "grow"))
		return;
	std::string why;
	ktap.result(quiet(r.bcq.get(), why), "grow: no receive completed twice", why);

	// Empty: shrink to 8 for real.
	rc = srq_resize(srq, 8);
	q = srq_query(srq);
	ktap.result(rc == 0 && q.max_wr == 8, "grow: the empty SRQ shrinks to 8",
		    errstr(rc) + ", " + attr_str(q));
	rc = post_recvs(b, srq, 70, 77);
	full = post_srq_recv(b, srq, 78);
	ktap.result(rc == 0 && full == ENOMEM, "grow: 8 receives fill it, a 9th is ENOMEM",
		    errstr(rc) + ", " + errstr(full));
	exchange(a, b, r, 70, 77, "grow");
}

void test_errors(Dev &a, Dev &b)
{
	SrqRig r;
	if (!make_rig(a, b, r, 16, "errors"))
		return;
	ibv_srq *srq = r.srq.get();
	ibv_device_attr dattr{};
	ibv_query_device(b.ctx.get(), &dattr);

	int rc = srq_resize(srq, 0);
	ktap.result(rc == EINVAL, "errors: max_wr 0: EINVAL", errstr(rc));
	rc = srq_resize(srq, uint32_t(dattr.max_srq_wr) + 1);
	ktap.result(rc == EINVAL, "errors: max_wr max_srq_wr + 1: EINVAL", errstr(rc));
	rc = srq_arm(srq, 17);
	ktap.result(rc == EINVAL, "errors: srq_limit 17 above max_wr 16: EINVAL", errstr(rc));
	ibv_srq_attr at{};
	at.max_wr = 8;
	at.srq_limit = 9;
	rc = ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
	ibv_srq_attr q = srq_query(srq);
	ktap.result(rc == EINVAL && q.max_wr == 16 && q.srq_limit == 0,
		    "errors: max_wr 8 with srq_limit 9 in one call: EINVAL, nothing changed",
		    errstr(rc) + ", " + attr_str(q));
	rc = ibv_modify_srq(srq, &at, 1 << 7);
	ktap.result(rc == EINVAL, "errors: an unknown attr_mask bit: EINVAL", errstr(rc));
	at.max_wr = 32;
	at.srq_limit = 20;
	rc = ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
	q = srq_query(srq);
	ktap.result(rc == 0 && q.max_wr == 32 && q.srq_limit == 20,
		    "errors: max_wr 32 with srq_limit 20 in one call", errstr(rc) + ", " + attr_str(q));
	rc = srq_resize(srq, 16);
	q = srq_query(srq);
	ktap.result(rc == EINVAL && q.max_wr == 32,
		    "errors: shrink to 16 below the armed limit 20: EINVAL", errstr(rc) + ", " +
		    attr_str(q));
	rc = srq_arm(srq, 32);
	q = srq_query(srq);
	ktap.result(rc == 0 && q.srq_limit == 32, "errors: srq_limit equal to max_wr is accepted",
		    errstr(rc) + ", " + attr_str(q));
	rc = srq_arm(srq, 0);
	q = srq_query(srq);
	ktap.result(rc == 0 && q.srq_limit == 0, "errors: srq_limit 0 disarms",
		    errstr(rc) + ", " + attr_str(q));
	rc = srq_resize(srq, 16);
	q = srq_query(srq);
	ktap.result(rc == 0 && q.max_wr == 16, "errors: then the shrink to 16 works",
		    errstr(rc) + ", " + attr_str(q));
	// The SRQ still works after all that.
	rc = post_recvs(b, srq, 1, 4);
	ktap.result(rc == 0, "errors: post 4 receives", errstr(rc));
	exchange(a, b, r, 1, 4, "errors");
}

void test_traffic(Dev &a, Dev &b)
{
	SrqRig r;
	if (!make_rig(a, b, r, 64, "traffic"))
		return;
	ibv_srq *srq = r.srq.get();
	constexpr uint64_t kMsgs = 1000;
	constexpr uint64_t kWindow = 32;	// receives outstanding, SENDs in flight
	std::atomic<bool> stop{false};		// the resizer's
	std::atomic<bool> abort{false};		// the receiver failed: the sender too
	std::atomic<uint64_t> sent_done{0};
	std::atomic<int> post_err{0}, resize_err{0};
	std::atomic<size_t> resizes{0};

	int rc = post_recvs(b, srq, 1, kWindow);
	if (!ktap.result(rc == 0, "traffic: 32 receives posted", errstr(rc)))
		return;
	std::thread sender([&] {
		Expect sends{1, IBV_WC_SEND};
		uint64_t next = 1;
		const auto end = Clock::now() + 8 * kWait;
		while (sends.seen < kMsgs && !abort && Clock::now() < end) {
			while (next <= kMsgs && next - 1 - sends.seen < kWindow) {
				if (int e = post_send(a, r.qa.get(), next)) {
					post_err = e;
					return;
				}
				++next;
			}
			ibv_wc wc[16];
			int k = ibv_poll_cq(r.acq.get(), 16, wc);
			for (int i = 0; i < k; ++i)
				if (!sends.take(wc[i])) {
					post_err = EIO;
					return;
				}
			sent_done = sends.seen;
			if (k == 0)
				std::this_thread::yield();
		}
	});
	std::thread resizer([&] {
		std::mt19937 rng(4242);
		std::uniform_int_distribution<uint32_t> size(kWindow, 512);
		while (!stop) {
			if (int e = srq_resize(srq, size(rng))) {
				resize_err = e;
				return;
			}
			++resizes;
			std::this_thread::sleep_for(std::chrono::microseconds(500));
		}
	});
	Expect recvs{1, IBV_WC_RECV, &b};
	const auto end = Clock::now() + 8 * kWait;
	while (recvs.seen < kMsgs && recvs.error.empty() && Clock::now() < end && !post_err &&
	       !resize_err) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(r.bcq.get(), 16, wc);
		if (k < 0) {
			recvs.error = "ibv_poll_cq " + std::to_string(k);
			break;
		}
		for (int i = 0; i < k && recvs.take(wc[i]); ++i) {
			// The data was checked: its slot may take the next receive.
			const uint64_t id = wc[i].wr_id + kWindow;
			if (id <= kMsgs && (rc = post_srq_recv(b, srq, id))) {
				post_err = rc;
				break;
			}
		}
		if (k == 0)
			std::this_thread::yield();
	}
	// The sender finishes on its own: its last completions (the ACKs)
	// may come after the last receive completed.
	abort = recvs.seen < kMsgs;
	sender.join();
	stop = true;
	resizer.join();
	ktap.note(std::to_string(resizes.load()) + " SRQ resizes, " + std::to_string(recvs.seen) +
		  " messages received, " + std::to_string(sent_done.load()) + " SENDs completed");
	ktap.result(post_err == 0, "traffic: every post accepted", errstr(post_err));
	ktap.result(resize_err == 0 && resizes > 10, "traffic: more than 10 resizes, none failed",
		    errstr(resize_err) + ", " + std::to_string(resizes.load()) + " resizes");
	ktap.result(recvs.seen == kMsgs && recvs.error.empty(),
		    "traffic: 1000 messages received once, in order, every byte as sent",
		    recvs.error.empty() ? std::to_string(recvs.seen) + " seen" : recvs.error);
	ktap.result(sent_done == kMsgs, "traffic: 1000 SENDs completed",
		    std::to_string(sent_done.load()));
	std::string why;
	ktap.result(quiet(r.bcq.get(), why), "traffic: no receive after the last", why);
	const ibv_srq_attr q = srq_query(srq);
	ktap.result(q.max_wr >= kWindow && q.max_wr <= 512, "traffic: ibv_query_srq max_wr in range",
		    attr_str(q));
}

// ---- hostile: the SRQ ring and the driver commands --------------------------------

// A debugfs counter of a device, -1 when unreadable.
long long counter(const char *dev, const std::string &name)
{
	std::ifstream f(std::string("/sys/kernel/debug/mroce/") + dev + "/counters");
	std::string key;
	long long v;
	while (f >> key >> v)
		if (key == name)
			return v;
	return -1;
}

struct Unmap {
	size_t size;
	void operator()(void *p) const { munmap(p, size); }
};

// A write() command on the uverbs fd; 0 or errno.
int raw_write(int fd, const void *buf, size_t len)
{
	ssize_t n = write(fd, buf, len);
	return n == ssize_t(len) ? 0 : n < 0 ? errno : EIO;
}

// A write() command: the header, the core request, then driver data.
template <class Core>
int raw_cmd(int fd, uint32_t command, uint16_t out_words, const Core &core, const void *drv,
	    size_t drv_len)
{
	ib_uverbs_cmd_hdr hdr{};
	std::vector<uint8_t> buf(sizeof(hdr) + sizeof(core) + drv_len);
	hdr.command = command;
	hdr.in_words = uint16_t(buf.size() / 4);
	hdr.out_words = out_words;
	std::memcpy(buf.data(), &hdr, sizeof(hdr));
	std::memcpy(buf.data() + sizeof(hdr), &core, sizeof(core));
	if (drv_len)
		std::memcpy(buf.data() + sizeof(hdr) + sizeof(core), drv, drv_len);
	return raw_write(fd, buf.data(), buf.size());
}

// MODIFY_SRQ with driver data drv (drv_len bytes).
int raw_modify_srq(ibv_srq *srq, uint32_t mask, uint32_t max_wr, const void *drv, size_t drv_len)
{
	ib_uverbs_modify_srq cmd{};
	cmd.srq_handle = srq->handle;
	cmd.attr_mask = mask;
	cmd.max_wr = max_wr;
	return raw_cmd(srq->context->cmd_fd, IB_USER_VERBS_CMD_MODIFY_SRQ, 0, cmd, drv, drv_len);
}

// CREATE_CQ of 8 with the driver request drv; a CQ created is destroyed.
int raw_create_cq(ibv_context *ctx, const void *drv, size_t drv_len)
{
	struct {
		ib_uverbs_create_cq_resp core;
		mroce_create_cq_resp drv;
	} resp{};
	ib_uverbs_create_cq cmd{};
	cmd.response = uint64_t(uintptr_t(&resp));
	cmd.cqe = 8;
	cmd.comp_channel = -1;
	int rc = raw_cmd(ctx->cmd_fd, IB_USER_VERBS_CMD_CREATE_CQ, uint16_t(sizeof(resp) / 4), cmd,
			 drv, drv_len);
	if (rc == 0) {
		ib_uverbs_destroy_cq_resp dresp{};
		ib_uverbs_destroy_cq d{};
		d.response = uint64_t(uintptr_t(&dresp));
		d.cq_handle = resp.core.cq_handle;
		raw_cmd(ctx->cmd_fd, IB_USER_VERBS_CMD_DESTROY_CQ, uint16_t(sizeof(dresp) / 4), d,
			nullptr, 0);
	}
	return rc;
}

void test_hostile(Dev &a, Dev &b, const char *bname)
{
	SrqRig r;
	Maps ring;
	if (!make_rig(a, b, r, 16, "hostile", &ring))
		return;
	ibv_srq *srq = r.srq.get();
	if (!ktap.result(ring.size() == 1, "hostile: the SRQ ring found in /proc/self/maps",
			 std::to_string(ring.size()) + " new mappings"))
		return;
	const size_t size = ring.begin()->second.first - ring.begin()->first;
	const off_t off = off_t(ring.begin()->second.second);
	void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, b.ctx->cmd_fd, off);
	if (!ktap.result(p != MAP_FAILED, "hostile: the SRQ ring mapped a second time by the test",
			 errstr(errno)))
		return;
	std::unique_ptr<void, Unmap> old_map(p, Unmap{size});
	auto *ctl = static_cast<mroce_ring_ctl *>(p);
	auto *slots = static_cast<uint8_t *>(p) + MROCE_RING_CTL_SIZE;

	int rc = post_recvs(b, srq, 1, 10);
	const uint32_t prod = __atomic_load_n(&ctl->producer, __ATOMIC_ACQUIRE);
	ktap.result(rc == 0 && prod - ctl->consumer == 10 && ctl->num_entries == 16,
		    "hostile: 10 receives posted show in the test's mapping", errstr(rc));

	// An overrun producer index: the kernel refuses to copy from it.
	const long long bad0 = counter(bname, "ring_bad_index");
	__atomic_store_n(&ctl->producer, ctl->consumer + 1000, __ATOMIC_RELEASE);
	rc = srq_resize(srq, 64);
	__atomic_store_n(&ctl->producer, prod, __ATOMIC_RELEASE);
	ibv_srq_attr q = srq_query(srq);
	const long long bad1 = counter(bname, "ring_bad_index");
	ktap.result(rc == EINVAL && q.max_wr == 16,
		    "hostile: resize with a producer index 1000 ahead: EINVAL, max_wr still 16",
		    errstr(rc) + ", " + attr_str(q));
	ktap.result(bad0 >= 0 && bad1 == bad0 + 1, "hostile: counted once as ring_bad_index",
		    std::to_string(bad0) + " -> " + std::to_string(bad1));

	// Raw commands with a bad driver part; the SRQ is unchanged by each.
	mroce_modify_srq_cmd mc{};
	rc = raw_modify_srq(srq, IBV_SRQ_MAX_WR, 64, &mc, sizeof(mc));
	ktap.result(rc == EINVAL, "hostile: raw resize with resp_addr 0: EINVAL", errstr(rc));
	rc = raw_modify_srq(srq, IBV_SRQ_MAX_WR, 64, nullptr, 0);
	ktap.result(rc == EINVAL, "hostile: raw resize without driver data: EINVAL", errstr(rc));
	void *guard = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mc.resp_addr = uint64_t(uintptr_t(guard));
	rc = raw_modify_srq(srq, IBV_SRQ_MAX_WR, 64, &mc, sizeof(mc));
	ktap.result(rc == EFAULT, "hostile: raw resize with a read-only resp_addr: EFAULT",
		    errstr(rc));
	munmap(guard, 4096);
	uint8_t longer[16] = {};
	std::memcpy(longer, &mc, sizeof(mc));
	longer[12] = 1;
	rc = raw_modify_srq(srq, IBV_SRQ_MAX_WR, 64, longer, sizeof(longer));
	ktap.result(rc == EOPNOTSUPP, "hostile: raw resize with unknown nonzero driver bytes: "
			"EOPNOTSUPP", errstr(rc));
	q = srq_query(srq);
	ktap.result(q.max_wr == 16 && __atomic_load_n(&ctl->producer, __ATOMIC_ACQUIRE) == prod,
		    "hostile: after the refused commands: max_wr 16, the same ring", attr_str(q));

	mroce_create_cq_cmd cc{};
	cc.flags = 1u << 5;
	rc = raw_create_cq(b.ctx.get(), &cc, sizeof(cc));
	ktap.result(rc == EOPNOTSUPP, "hostile: raw CREATE_CQ with an unknown flag: EOPNOTSUPP",
		    errstr(rc));
	cc.flags = MROCE_CREATE_CQ_TIMESTAMP;
	cc.rsvd = 1;
	rc = raw_create_cq(b.ctx.get(), &cc, sizeof(cc));
	ktap.result(rc == EINVAL, "hostile: raw CREATE_CQ with a nonzero rsvd: EINVAL", errstr(rc));
	cc.rsvd = 0;
	rc = raw_create_cq(b.ctx.get(), &cc, sizeof(cc));
	ktap.result(rc == 0, "hostile: raw CREATE_CQ with MROCE_CREATE_CQ_TIMESTAMP works",
		    errstr(rc));

	// The real resize: the test's mapping is now the old ring.
	rc = srq_resize(srq, 64);
	q = srq_query(srq);
	ktap.result(rc == 0 && q.max_wr == 64, "hostile: resize to 64 with 10 posted",
		    errstr(rc) + ", " + attr_str(q));
	bool ok = __atomic_load_n(&ctl->producer, __ATOMIC_ACQUIRE) - ctl->consumer == 10;
	for (uint32_t i = 0; ok && i < 10; ++i) {
		mroce_recv_wqe w;
		std::memcpy(&w, slots + ((ctl->consumer + i) & 15) * ctl->entry_size, sizeof(w));
		ok = w.wr_id == 1 + i;
	}
	ktap.result(ok, "hostile: the old mapping still reads the 10 WQEs");
	void *again = mmap(nullptr, size, PROT_READ, MAP_SHARED, b.ctx->cmd_fd, off);
	ktap.result(again == MAP_FAILED, "hostile: the old offset cannot be mapped again");
	if (again != MAP_FAILED)
		munmap(again, size);
	// Garbage there, producer index included, changes nothing.
	std::memset(p, 0xa5, size);
	if (!exchange(a, b, r, 1, 10, "hostile"))
		return;
	rc = post_recvs(b, srq, 11, 30);
	ktap.result(rc == 0, "hostile: 20 more receives", errstr(rc));
	exchange(a, b, r, 11, 30, "hostile");
	ok = true;
	for (size_t i = 0; ok && i < size; ++i)
		ok = static_cast<uint8_t *>(p)[i] == 0xa5;
	ktap.result(ok, "hostile: the kernel never wrote the old ring again");
	const long long bad2 = counter(bname, "ring_bad_index");
	ktap.result(bad2 == bad1, "hostile: no further ring_bad_index",
		    std::to_string(bad1) + " -> " + std::to_string(bad2));
}

// ---- limit: IBV_EVENT_SRQ_LIMIT_REACHED -----------------------------------------

// The async events of ctx that arrive within ms milliseconds (acked).
std::vector<ibv_async_event> events(ibv_context *ctx, int ms)
{
	std::vector<ibv_async_event> out;
	const auto end = Clock::now() + std::chrono::milliseconds(ms);
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			end - Clock::now()).count();
		if (left <= 0)
			break;
		pollfd p{ctx->async_fd, POLLIN, 0};
		if (poll(&p, 1, int(left)) <= 0)
			continue;
		ibv_async_event ev;
		if (ibv_get_async_event(ctx, &ev))
			continue;
		out.push_back(ev);
		ibv_ack_async_event(&ev);
	}
	return out;
}

std::string events_str(const std::vector<ibv_async_event> &evs)
{
	std::string s = std::to_string(evs.size()) + " events:";
	for (const auto &e : evs)
		s += std::string(" ") + ibv_event_type_str(e.event_type);
	return s;
}

bool one_limit_event(const std::vector<ibv_async_event> &evs, ibv_srq *srq)
{
	return evs.size() == 1 && evs[0].event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
	       evs[0].element.srq == srq;
}

void test_limit(Dev &a, Dev &b)
{
	int fl = fcntl(b.ctx->async_fd, F_GETFL);
	if (!ktap.result(fl >= 0 && fcntl(b.ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0,
			 "limit: B's async fd non-blocking", errstr(errno)))
		return;
	events(b.ctx.get(), 50);	// nothing from the earlier tests is pending
	SrqRig r;
	if (!make_rig(a, b, r, 16, "limit"))
		return;
	ibv_srq *srq = r.srq.get();
	ibv_context *ctx = b.ctx.get();

	int rc = post_recvs(b, srq, 1, 10);
	int arm = rc ? rc : srq_arm(srq, 5);
	ibv_srq_attr q = srq_query(srq);
	ktap.result(arm == 0 && q.srq_limit == 5, "limit: 10 receives, limit 5 armed",
		    errstr(arm) + ", " + attr_str(q));
	auto evs = events(ctx, 200);
	ktap.result(evs.empty(), "limit: no event at arming", events_str(evs));

	// 10 -> 5 receives: never below the limit.
	exchange(a, b, r, 1, 5, "limit");
	evs = events(ctx, 300);
	q = srq_query(srq);
	ktap.result(evs.empty() && q.srq_limit == 5,
		    "limit: 5 receives left (not below 5): no event, still armed",
		    events_str(evs) + ", " + attr_str(q));
	// 5 -> 4: below.
	exchange(a, b, r, 6, 6, "limit");
	evs = events(ctx, 2000);
	ktap.result(one_limit_event(evs, srq),
		    "limit: 4 left: exactly one IBV_EVENT_SRQ_LIMIT_REACHED for this SRQ",
		    events_str(evs));
	q = srq_query(srq);
	ktap.result(q.srq_limit == 0, "limit: srq_limit reads 0 after the event", attr_str(q));
	exchange(a, b, r, 7, 10, "limit");
	evs = events(ctx, 300);
	ktap.result(evs.empty(), "limit: down to 0 receives: no second event", events_str(evs));

	// Re-armed, it fires again, once.
	rc = post_recvs(b, srq, 11, 26);
	arm = rc ? rc : srq_arm(srq, 3);
	ktap.result(arm == 0, "limit: 16 receives, limit 3 re-armed", errstr(arm));
	exchange(a, b, r, 11, 23, "limit");
	evs = events(ctx, 300);
	ktap.result(evs.empty(), "limit: 3 left (not below 3): no event", events_str(evs));
	exchange(a, b, r, 24, 26, "limit");
	evs = events(ctx, 2000);
	ktap.result(one_limit_event(evs, srq), "limit: 2, 1, 0 left: exactly one event",
		    events_str(evs));

	// Armed above the receives posted: nothing until the next message.
	rc = post_recvs(b, srq, 27, 28);
	arm = rc ? rc : srq_arm(srq, 8);
	evs = events(ctx, 300);
	ktap.result(arm == 0 && evs.empty(),
		    "limit: limit 8 armed with 2 receives posted: no event at arming",
		    errstr(arm) + ", " + events_str(evs));
	exchange(a, b, r, 27, 27, "limit");
	evs = events(ctx, 2000);
	q = srq_query(srq);
	ktap.result(one_limit_event(evs, srq) && q.srq_limit == 0,
		    "limit: the next message fires it once and disarms",
		    events_str(evs) + ", " + attr_str(q));
	// A resize keeps an armed limit.
	rc = post_recvs(b, srq, 29, 36);
	arm = rc ? rc : srq_arm(srq, 4);
	int rs = arm ? arm : srq_resize(srq, 64);
	q = srq_query(srq);
	ktap.result(rs == 0 && q.max_wr == 64 && q.srq_limit == 4,
		    "limit: limit 4 armed, 9 receives, resized to 64: still armed",
		    errstr(rs) + ", " + attr_str(q));
	exchange(a, b, r, 28, 32, "limit");
	evs = events(ctx, 300);
	ktap.result(evs.empty(), "limit: 4 left after the resize: no event", events_str(evs));
	exchange(a, b, r, 33, 33, "limit");
	evs = events(ctx, 2000);
	ktap.result(one_limit_event(evs, srq), "limit: 3 left: exactly one event", events_str(evs));
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr, "usage: %s DEV_A GID_INDEX_A DEV_B GID_INDEX_B\n", argv[0]);
		return 2;
	}
	Dev a, b;
	if (!open_dev(a, argv[1], std::atoi(argv[2])) || !open_dev(b, argv[3], std::atoi(argv[4])))
		return ktap.finish();
	test_clock(a);
	test_timestamps(a, b);
	test_grow(a, b);
	test_errors(a, b);
	test_traffic(a, b);
	test_hostile(a, b, argv[3]);
	test_limit(a, b);
	return ktap.finish();
}
