// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// test_ring.hpp - rings in plain memory for the provider's unit tests.

#pragma once

#include "mroce_uprov.h"
#include "ring.hpp"

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace mroce_test {

class HeapMemory final : public mroce::RingMemory {
public:
	HeapMemory(uint32_t n, uint32_t size, size_t extra = 0)
		: buf_(MROCE_RING_CTL_SIZE + size_t(n) * size + extra)
	{
		auto *ctl = reinterpret_cast<mroce_ring_ctl *>(buf_.data());
		ctl->num_entries = n;
		ctl->entry_size = size;
	}
	std::span<std::byte> bytes() override { return buf_; }
	mroce_ring_ctl *ctl() { return reinterpret_cast<mroce_ring_ctl *>(buf_.data()); }
	// The slots, without the control block.
	std::span<const std::byte> slots() const
	{
		return std::span<const std::byte>(buf_).subspan(MROCE_RING_CTL_SIZE);
	}

private:
	std::vector<std::byte> buf_;
};

struct TestRing {
	TestRing(uint32_t n, uint32_t size)
	{
		auto m = std::make_unique<HeapMemory>(n, size);
		mem = m.get();
		u.ring = mroce::Ring::make(std::move(m), n, size);
	}
	mroce_ring_ctl *ctl() { return mem->ctl(); }
	HeapMemory *mem;
	mroce_uring u;
};

} // namespace mroce_test
