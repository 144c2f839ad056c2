// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// wqe.hpp - encoding of work requests into ring slots and decoding of
// completions, independent of any device (unit-tested on the host).

#pragma once

#include "mroce_uprov.h"

#include <rdma/mroce-abi.h>

#include <cstddef>
#include <span>

namespace mroce {

// Write one send WR into a slot.  Returns 0 or the errno ibv_post_send
// reports for it (EINVAL, EOPNOTSUPP).  The composition of the three steps
// below, which the ibv_wr_* API (extended.cpp) uses one by one: both paths put
// the same bytes in the ring for equivalent work requests.
// IBV_WR_BIND_MW binds a type 2 window; with bind_type1 (ibv_bind_mw) a
// type 1 window instead.  IBV_WR_LOCAL_INV and IBV_WR_BIND_MW (RC only)
// carry no data.
int encode_send(const ibv_send_wr &wr, const mroce_qp_limits &lim, mroce_ah_num_fn ah_num,
		std::span<std::byte> slot, bool bind_type1 = false);

// The header from everything but the data (sg_list, num_sge are not read);
// num_sge and inline_len 0.  ah_num may be null for RC, and for UD when the
// address is set afterwards (ibv_wr_set_ud_addr: w.wr.ud left zero).
int encode_send_header(const ibv_send_wr &wr, const mroce_qp_limits &lim,
		       mroce_ah_num_fn ah_num, mroce_send_wqe &w, bool bind_type1 = false);
// BIND_MW and LOCAL_INV: complete after the header, no data setter.
bool is_local_op(const mroce_send_wqe &w);
// Complete w with SGEs, written after the header in the slot.  Clears
// MROCE_SEND_INLINE.  The caller writes w at the start of the slot.
int encode_send_sges(mroce_send_wqe &w, std::span<const ibv_sge> sges, const mroce_qp_limits &lim,
		     std::span<std::byte> slot);
// Complete w with inline data copied from the buffers.  Sets MROCE_SEND_INLINE.
int encode_send_inline(mroce_send_wqe &w, std::span<const ibv_sge> bufs,
		       const mroce_qp_limits &lim, std::span<std::byte> slot);
int encode_send_inline(mroce_send_wqe &w, std::span<const ibv_data_buf> bufs,
		       const mroce_qp_limits &lim, std::span<std::byte> slot);

// Write one receive WR into a slot.  Returns 0 or EINVAL.
int encode_recv(const ibv_recv_wr &wr, const mroce_qp_limits &lim, std::span<std::byte> slot);

// Fill an ibv_wc from a CQE.
void decode_cqe(const mroce_cqe &cqe, ibv_wc &wc);

// Slot size needed for a send WQE with n SGEs / inline bytes.
constexpr size_t send_wqe_bytes(size_t sges, size_t inline_bytes)
{
	size_t s = sizeof(mroce_send_wqe) + sges * sizeof(mroce_sge);
	size_t i = sizeof(mroce_send_wqe) + inline_bytes;
	return s > i ? s : i;
}

constexpr size_t recv_wqe_bytes(size_t sges)
{
	return sizeof(mroce_recv_wqe) + sges * sizeof(mroce_sge);
}

} // namespace mroce
