// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// ring.hpp - a ring shared with the kernel (layout and protocol in
// include/uapi/rdma/mroce-abi.h and Documentation/uapi.rst).

#pragma once

#include <rdma/mroce-abi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

namespace mroce {

// Memory a ring lives in: an mmap of the uverbs fd, or plain memory in tests.
class RingMemory {
public:
	virtual ~RingMemory() = default;
	virtual std::span<std::byte> bytes() = 0;
};

// munmap()s on destruction.
class MmapMemory final : public RingMemory {
public:
	static std::unique_ptr<MmapMemory> map(int fd, uint64_t offset, size_t size);
	~MmapMemory() override;
	MmapMemory(const MmapMemory &) = delete;
	MmapMemory &operator=(const MmapMemory &) = delete;
	std::span<std::byte> bytes() override { return {static_cast<std::byte *>(addr_), size_}; }

private:
	MmapMemory(void *addr, size_t size) : addr_(addr), size_(size) {}
	void *addr_;
	size_t size_;
};

// Result of Ring::make.
enum class RingError { ok, too_small, bad_geometry, mismatch };

class Ring {
public:
	// Validates the geometry against the memory and the control block.
	static std::unique_ptr<Ring> make(std::unique_ptr<RingMemory> mem, uint32_t num_entries,
					  uint32_t entry_size, RingError *err = nullptr);

	uint32_t num_entries() const { return num_entries_; }
	uint32_t entry_size() const { return entry_size_; }
	std::byte *slot(uint32_t index) const
	{
		return slots_ + static_cast<size_t>(index & (num_entries_ - 1)) * entry_size_;
	}

	// Indices, with the ordering the protocol requires.
	uint32_t load_producer() const { return producer().load(std::memory_order_acquire); }
	uint32_t load_consumer() const { return consumer().load(std::memory_order_acquire); }
	void store_producer(uint32_t v) { producer().store(v, std::memory_order_release); }
	void store_consumer(uint32_t v) { consumer().store(v, std::memory_order_release); }

	// Serializes posters (or pollers) of this ring within the process.
	std::mutex &lock() { return lock_; }

	// A resized CQ or SRQ: takes fresh's memory and geometry and gives fresh
	// this ring's, so that destroying fresh unmaps the old memory.  The
	// Ring object, its lock and every reference to it stay.  The caller
	// holds lock().
	void swap_memory(Ring &fresh) noexcept;

	// The kernel moved the ring to memory this process could not map:
	// the ring here is stale, polling (CQ) or posting (SRQ) fails with
	// EIO from now on.  Under lock().
	void set_lost() { lost_ = true; }
	bool lost() const { return lost_; }

private:
	Ring(std::unique_ptr<RingMemory> mem, uint32_t n, uint32_t size);
	std::atomic_ref<uint32_t> producer() const { return std::atomic_ref<uint32_t>(ctl_->producer); }
	std::atomic_ref<uint32_t> consumer() const { return std::atomic_ref<uint32_t>(ctl_->consumer); }

	std::unique_ptr<RingMemory> mem_;
	mroce_ring_ctl *ctl_;
	std::byte *slots_;
	uint32_t num_entries_;
	uint32_t entry_size_;
	bool lost_ = false;
	std::mutex lock_;
};

} // namespace mroce

// The opaque handle of mroce_uprov.h: one ring, owned.
struct mroce_uring {
	std::unique_ptr<mroce::Ring> ring;
};
