// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// What the guest test programs share: KTAP output, RAII owners of
// libibverbs objects, test byte patterns and a quiet-CQ check.
#pragma once

#include <infiniband/verbs.h>

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

namespace mroce_test {

class Ktap {
public:
	Ktap() { std::printf("KTAP version 1\n"); }
	bool result(bool ok, const std::string &name, const std::string &why = "")
	{
		++n_;
		if (!ok)
			++failed_;
		if (!ok && !why.empty())
			std::printf("# %s: %s\n", name.c_str(), why.c_str());
		std::printf("%s %d %s\n", ok ? "ok" : "not ok", n_, name.c_str());
		std::fflush(stdout);
		return ok;
	}
	void note(const std::string &s)
	{
		std::printf("# %s\n", s.c_str());
		std::fflush(stdout);
	}
	int finish()
	{
		std::printf("1..%d\n# %d passed, %d failed\n", n_, n_ - failed_, failed_);
		return failed_ ? 1 : 0;
	}

private:
	int n_ = 0;
	int failed_ = 0;
};

inline std::string errstr(int e)
{
	return std::string(std::strerror(e)) + " (" + std::to_string(e) + ")";
}

// The start addresses of this process's uverbs mappings (its rings).
inline std::set<uintptr_t> uverbs_maps()
{
	std::set<uintptr_t> s;
	std::ifstream maps("/proc/self/maps");
	std::string line;
	while (std::getline(maps, line))
		if (line.find("/dev/infiniband/uverbs") != std::string::npos)
			s.insert(std::stoull(line, nullptr, 16));
	return s;
}

// /proc/meminfo, in bytes.
inline std::map<std::string, long long> meminfo()
{
	std::map<std::string, long long> m;
	std::ifstream f("/proc/meminfo");
	std::string key, unit;
	long long v;
	while (f >> key >> v) {
		std::getline(f, unit);
		key.pop_back();	/* ':' */
		m[key] = unit.find("kB") != std::string::npos ? v * 1024 : v;
	}
	return m;
}

// Byte i of test pattern id: distinct ids give different bytes at most
// offsets, so a message placed at the wrong place or from the wrong
// source shows.
inline uint8_t pattern_byte(uint64_t id, size_t i) { return uint8_t(id * 131 + i * 7 + 1); }

inline void fill_pattern(uint8_t *p, uint64_t id, size_t n)
{
	for (size_t i = 0; i < n; ++i)
		p[i] = pattern_byte(id, i);
}

inline bool is_pattern(const uint8_t *p, uint64_t id, size_t n)
{
	for (size_t i = 0; i < n; ++i)
		if (p[i] != pattern_byte(id, i))
			return false;
	return true;
}

// No completion at all on cq for 300 ms (none duplicated, none late);
// otherwise false, with why.
inline bool quiet(ibv_cq *cq, std::string &why)
{
	const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
	while (std::chrono::steady_clock::now() < end) {
		ibv_wc wc;
		int k = ibv_poll_cq(cq, 1, &wc);
		if (k != 0) {
			why = k < 0 ? "ibv_poll_cq " + std::to_string(k) :
				      "extra completion wr_id " + std::to_string(wc.wr_id);
			return false;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	return true;
}

struct CtxClose { void operator()(ibv_context *c) const { ibv_close_device(c); } };
struct PdFree { void operator()(ibv_pd *p) const { ibv_dealloc_pd(p); } };
struct CqFree { void operator()(ibv_cq *c) const { ibv_destroy_cq(c); } };
struct CqExFree { void operator()(ibv_cq_ex *c) const { ibv_destroy_cq(ibv_cq_ex_to_cq(c)); } };
struct MrFree { void operator()(ibv_mr *m) const { ibv_dereg_mr(m); } };
struct QpFree { void operator()(ibv_qp *q) const { ibv_destroy_qp(q); } };
struct MwFree { void operator()(ibv_mw *m) const { ibv_dealloc_mw(m); } };
struct DevListFree { void operator()(ibv_device **l) const { ibv_free_device_list(l); } };

using Context = std::unique_ptr<ibv_context, CtxClose>;
using Pd = std::unique_ptr<ibv_pd, PdFree>;
using Cq = std::unique_ptr<ibv_cq, CqFree>;
using CqEx = std::unique_ptr<ibv_cq_ex, CqExFree>;
using Mr = std::unique_ptr<ibv_mr, MrFree>;
using Qp = std::unique_ptr<ibv_qp, QpFree>;
using Mw = std::unique_ptr<ibv_mw, MwFree>;

// The device named name, opened (null with errno set if there is none).
inline Context open_device(const char *name)
{
	int n = 0;
	std::unique_ptr<ibv_device *, DevListFree> list(ibv_get_device_list(&n));
	if (!list)
		return nullptr;
	for (int i = 0; i < n; ++i)
		if (std::strcmp(ibv_get_device_name(list.get()[i]), name) == 0)
			return Context(ibv_open_device(list.get()[i]));
	errno = ENODEV;
	return nullptr;
}

// The attribute masks of an RC QP's RESET -> INIT -> RTR -> RTS walk.
constexpr int kRcInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRcRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

// An RC QP's creation attributes, cq for both queues.
inline ibv_qp_init_attr rc_qp_init_attr(ibv_cq *cq, uint32_t send_wr, uint32_t recv_wr,
					uint32_t sge)
{
	ibv_qp_init_attr a{};
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = send_wr;
	a.cap.max_recv_wr = recv_wr;
	a.cap.max_send_sge = sge;
	a.cap.max_recv_sge = sge;
	return a;
}

// How connect_rc() (and rc_*_attr()) set up an RC QP.
struct RcConnect {
	int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	uint8_t rd_atomic = 4;		// max_rd_atomic and max_dest_rd_atomic
	uint8_t min_rnr_timer = 12;
	uint32_t rq_psn = 0, sq_psn = 0;
};

// RESET -> INIT on port 1 (with kRcInitMask).
inline ibv_qp_attr rc_init_attr(const RcConnect &c = {})
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = unsigned(c.access);
	return a;
}

// INIT -> RTR towards QPN dqpn at dgid from GID sgid_index of port 1, path
// MTU 1024 (with kRcRtrMask).
inline ibv_qp_attr rc_rtr_attr(int sgid_index, const ibv_gid &dgid, uint32_t dqpn,
			       const RcConnect &c = {})
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = c.rq_psn;
	a.max_dest_rd_atomic = c.rd_atomic;
	a.min_rnr_timer = c.min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = dgid;
	a.ah_attr.grh.sgid_index = uint8_t(sgid_index);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	return a;
}

// RTR -> RTS: timeout 14, retry_cnt 7, rnr_retry 7 (unlimited) (with
// kRcRtsMask).
inline ibv_qp_attr rc_rts_attr(const RcConnect &c = {})
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = c.sq_psn;
	a.max_rd_atomic = c.rd_atomic;
	return a;
}

// Takes qp from RESET to RTS with rc_init_attr(), rc_rtr_attr() and
// rc_rts_attr().  Returns 0 or the error of the ibv_modify_qp that failed.
inline int connect_rc(ibv_qp *qp, int sgid_index, const ibv_gid &dgid, uint32_t dqpn,
		      const RcConnect &c = {})
{
	ibv_qp_attr a = rc_init_attr(c);
	if (int rc = ibv_modify_qp(qp, &a, kRcInitMask))
		return rc;
	a = rc_rtr_attr(sgid_index, dgid, dqpn, c);
	if (int rc = ibv_modify_qp(qp, &a, kRcRtrMask))
		return rc;
	a = rc_rts_attr(c);
	return ibv_modify_qp(qp, &a, kRcRtsMask);
}

// A zeroed, page-aligned buffer of its own pages (p null if mmap failed).
struct PageBuf {
	uint8_t *p = nullptr;
	size_t len = 0;
	explicit PageBuf(size_t n) : len(n)
	{
		void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		p = m == MAP_FAILED ? nullptr : static_cast<uint8_t *>(m);
	}
	~PageBuf()
	{
		if (p)
			munmap(p, len);
	}
	PageBuf(const PageBuf &) = delete;
	PageBuf &operator=(const PageBuf &) = delete;
	uint64_t addr(size_t off = 0) const { return uint64_t(uintptr_t(p + off)); }
};

}  // namespace mroce_test
