// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Unit tests of the provider's side of ibv_resize_cq (mroce_cq_resize):
// the kernel is played by the command callback, which fills a memfd the
// way mroce_resize_cq() fills the new ring (the unpolled CQEs at the same
// free-running indices, both indices in the new control block); the
// provider maps it through the fd as it maps the uverbs fd.

#include "mroce_uprov.h"
#include "ring.hpp"
#include "test_ring.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace {

using mroce_test::TestRing;

constexpr size_t kPage = 4096;

void put_cqe(mroce::Ring &r, uint32_t index, uint64_t wr_id)
{
	mroce_cqe c{};
	c.wr_id = wr_id;
	c.opcode = MROCE_WC_SEND;
	std::memcpy(r.slot(index), &c, sizeof(c));
}

// The kernel's part: a new ring of n slots in a memfd.
struct FakeKernel {
	FakeKernel() : fd(memfd_create("mroce-resize-test", 0)) {}
	~FakeKernel()
	{
		if (fd >= 0)
			close(fd);
	}
	int fd;
	mroce::Ring *old = nullptr;	// the ring the CQEs move from
	uint32_t n = 8;
	int err = 0;			// the command fails with this
	int32_t consumer_skew = 0;	// a broken kernel: consumer off by this
	int calls = 0;

	static int cmd(void *arg, mroce_resize_cq_resp *resp)
	{
		auto *k = static_cast<FakeKernel *>(arg);
		++k->calls;
		if (k->err)
			return k->err;
		const size_t size = kPage * ((MROCE_RING_CTL_SIZE + k->n * sizeof(mroce_cqe) +
					      kPage - 1) / kPage);
		if (ftruncate(k->fd, off_t(size)))
			return errno;
		void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, 0);
		if (p == MAP_FAILED)
			return errno;
		auto *ctl = static_cast<mroce_ring_ctl *>(p);
		auto *slots = static_cast<std::byte *>(p) + MROCE_RING_CTL_SIZE;
		const uint32_t cons = k->old->load_consumer();
		const uint32_t prod = k->old->load_producer();
		for (uint32_t i = cons; i != prod; ++i)
			std::memcpy(slots + (i & (k->n - 1)) * sizeof(mroce_cqe), k->old->slot(i),
				    sizeof(mroce_cqe));
		ctl->num_entries = k->n;
		ctl->entry_size = sizeof(mroce_cqe);
		ctl->consumer = cons + uint32_t(k->consumer_skew);
		ctl->producer = prod;
		munmap(p, size);
		resp->mmap_offset = 0;
		resp->mmap_size = size;
		resp->num_entries = k->n;
		return 0;
	}
};

std::vector<uint64_t> poll_ids(mroce_uring *u)
{
	std::vector<uint64_t> ids;
	ibv_wc wc[16];
	int n = mroce_cq_poll(u, 16, wc);
	for (int i = 0; i < n; ++i)
		ids.push_back(wc[i].wr_id);
	return ids;
}

// 3 CQEs about to wrap 2^32 in a ring of 4, the first one polled.
void fill(TestRing &cq)
{
	cq.ctl()->producer = cq.ctl()->consumer = 0xfffffffe;
	for (uint32_t i = 0; i < 3; ++i)
		put_cqe(*cq.u.ring, 0xfffffffe + i, 1 + i);
	cq.ctl()->producer = 0xfffffffe + 3;
	ibv_wc wc;
	ASSERT_EQ(mroce_cq_poll(&cq.u, 1, &wc), 1);
	ASSERT_EQ(wc.wr_id, 1u);
}

TEST(CqResize, UnpolledCqesArriveOnceInOrderFromTheNewRing)
{
	TestRing cq(4, sizeof(mroce_cqe));
	fill(cq);
	mroce::Ring *ring = cq.u.ring.get();
	FakeKernel k;
	k.old = ring;
	ASSERT_EQ(mroce_cq_resize(&cq.u, k.fd, FakeKernel::cmd, &k), 0);
	EXPECT_EQ(cq.u.ring.get(), ring);	// same object: lock and pollers stay
	EXPECT_EQ(ring->num_entries(), 8u);
	// The kernel goes on producing into the new ring.
	put_cqe(*ring, 0xfffffffe + 3, 4);
	ring->store_producer(0xfffffffe + 4);
	EXPECT_EQ(poll_ids(&cq.u), (std::vector<uint64_t>{2, 3, 4}));
	EXPECT_EQ(ring->load_consumer(), 2u);	// wrapped through 2^32
	EXPECT_TRUE(poll_ids(&cq.u).empty());
}

TEST(CqResize, TheExtendedPollerFollows)
{
	TestRing cq(4, sizeof(mroce_cqe));
	fill(cq);
	mroce_cqx *cqx = mroce_cqx_new(&cq.u);
	ASSERT_NE(cqx, nullptr);
	FakeKernel k;
	k.old = cq.u.ring.get();
	ASSERT_EQ(mroce_cq_resize(&cq.u, k.fd, FakeKernel::cmd, &k), 0);
	uint64_t wr_id = 0;
	ibv_wc_status st{};
	ASSERT_EQ(mroce_cqx_start_poll(cqx, 0, &wr_id, &st), 0);
	EXPECT_EQ(wr_id, 2u);
	ASSERT_EQ(mroce_cqx_next_poll(cqx, &wr_id, &st), 0);
	EXPECT_EQ(wr_id, 3u);
	EXPECT_EQ(mroce_cqx_next_poll(cqx, &wr_id, &st), ENOENT);
	mroce_cqx_end_poll(cqx);
	EXPECT_EQ(cq.u.ring->load_consumer(), 1u);
	mroce_cqx_free(cqx);
}

TEST(CqResize, ACommandErrorChangesNothing)
{
	TestRing cq(4, sizeof(mroce_cqe));
	fill(cq);
	FakeKernel k;
	k.old = cq.u.ring.get();
	k.err = EINVAL;
	EXPECT_EQ(mroce_cq_resize(&cq.u, k.fd, FakeKernel::cmd, &k), EINVAL);
	EXPECT_EQ(cq.u.ring->num_entries(), 4u);
	EXPECT_EQ(poll_ids(&cq.u), (std::vector<uint64_t>{2, 3}));
}

TEST(CqResize, AMismatchedConsumerLosesTheCqLoudly)
{
	TestRing cq(4, sizeof(mroce_cqe));
	fill(cq);
	FakeKernel k;
	k.old = cq.u.ring.get();
	k.consumer_skew = 1;
	EXPECT_EQ(mroce_cq_resize(&cq.u, k.fd, FakeKernel::cmd, &k), EIO);
	ibv_wc wc;
	EXPECT_EQ(mroce_cq_poll(&cq.u, 1, &wc), -EIO);
	EXPECT_EQ(mroce_cq_resize(&cq.u, k.fd, FakeKernel::cmd, &k), EIO);
	EXPECT_EQ(k.calls, 1);	// a lost CQ sends no further command
}

TEST(CqResize, AnUnmappableRingLosesTheCq)
{
	TestRing cq(4, sizeof(mroce_cqe));
	fill(cq);
	FakeKernel k;
	k.old = cq.u.ring.get();
	// The command succeeds, mapping its response fails (EBADF).
	EXPECT_EQ(mroce_cq_resize(&cq.u, -1, FakeKernel::cmd, &k), EBADF);
	ibv_wc wc;
	EXPECT_EQ(mroce_cq_poll(&cq.u, 1, &wc), -EIO);
}

// ---- ibv_modify_srq(IBV_SRQ_MAX_WR): mroce_srq_resize ----------------------

constexpr uint32_t kRecvSlot = 32;	// a receive WQE with one SGE

void put_wqe(mroce::Ring &r, uint32_t index, uint64_t wr_id)
{
	mroce_recv_wqe w{};
	w.wr_id = wr_id;
	w.num_sge = 1;
	std::memcpy(r.slot(index), &w, sizeof(w));
}

uint64_t wqe_id(const mroce::Ring &r, uint32_t index)
{
	mroce_recv_wqe w;
	std::memcpy(&w, r.slot(index), sizeof(w));
	return w.wr_id;
}

// The kernel's part of an SRQ resize: the WQEs not yet taken, at the same
// indices, in a memfd; the kernel may have taken `taken` more meanwhile.
struct FakeSrqKernel {
	FakeSrqKernel() : fd(memfd_create("mroce-srq-resize-test", 0)) {}
	~FakeSrqKernel()
	{
		if (fd >= 0)
			close(fd);
	}
	int fd;
	mroce::Ring *old = nullptr;
	uint32_t n = 16;
	uint32_t wqe_size = kRecvSlot;
	uint32_t taken = 0;
	int32_t producer_skew = 0;	// a broken kernel
	int err = 0;
	int calls = 0;

	static int cmd(void *arg, mroce_modify_srq_resp *resp)
	{
		auto *k = static_cast<FakeSrqKernel *>(arg);
		++k->calls;
		if (k->err)
			return k->err;
		const size_t size = kPage * ((MROCE_RING_CTL_SIZE + k->n * k->wqe_size + kPage - 1) /
					     kPage);
		if (ftruncate(k->fd, off_t(size)))
			return errno;
		void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, 0);
		if (p == MAP_FAILED)
			return errno;
		auto *ctl = static_cast<mroce_ring_ctl *>(p);
		auto *slots = static_cast<std::byte *>(p) + MROCE_RING_CTL_SIZE;
		const uint32_t cons = k->old->load_consumer();
		const uint32_t prod = k->old->load_producer();
		for (uint32_t i = cons; i != prod; ++i)
			std::memcpy(slots + (i & (k->n - 1)) * k->wqe_size, k->old->slot(i),
				    k->old->entry_size());
		ctl->num_entries = k->n;
		ctl->entry_size = k->wqe_size;
		ctl->consumer = cons + k->taken;
		ctl->producer = prod + uint32_t(k->producer_skew);
		munmap(p, size);
		resp->mmap_offset = 0;
		resp->mmap_size = size;
		resp->num_entries = k->n;
		resp->wqe_size = k->wqe_size;
		return 0;
	}
};

// 4 WQEs posted around 2^32 in an SRQ ring of 4, the first one taken.
void fill_srq(TestRing &srq)
{
	srq.ctl()->producer = srq.ctl()->consumer = 0xfffffffe;
	for (uint32_t i = 0; i < 4; ++i)
		put_wqe(*srq.u.ring, 0xfffffffe + i, 1 + i);
	srq.ctl()->producer = 0xfffffffe + 4;
	srq.ctl()->consumer = 0xfffffffe + 1;
}

int post_one(mroce_uring *u, uint64_t wr_id)
{
	static char buf[8];
	ibv_sge sge{uint64_t(uintptr_t(buf)), sizeof(buf), 1};
	ibv_recv_wr wr{};
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ibv_recv_wr *bad = nullptr;
	mroce_qp_limits lim{IBV_QPT_RC, 1, 1, 0};
	return mroce_rq_post(u, &lim, &wr, &bad);
}

TEST(SrqResize, PostedWqesStayAtTheirIndicesAndPostingContinues)
{
	TestRing srq(4, kRecvSlot);
	fill_srq(srq);
	// 3 outstanding in 4 slots: one more fits, a second does not.
	EXPECT_EQ(post_one(&srq.u, 99), 0);
	EXPECT_EQ(post_one(&srq.u, 100), ENOMEM);
	mroce::Ring *ring = srq.u.ring.get();
	FakeSrqKernel k;
	k.old = ring;
	k.taken = 1;	// the kernel took WQE 2 between the copy and the switch
	ASSERT_EQ(mroce_srq_resize(&srq.u, k.fd, FakeSrqKernel::cmd, &k), 0);
	EXPECT_EQ(srq.u.ring.get(), ring);	// same object: lock and posters stay
	EXPECT_EQ(ring->num_entries(), 16u);
	EXPECT_EQ(ring->load_producer(), 0xfffffffe + 5);
	for (uint32_t i = 2; i < 5; ++i)
		EXPECT_EQ(wqe_id(*ring, 0xfffffffe + i), i < 4 ? 1 + i : 99u);
	// Room for 13 more now (16 slots, 3 outstanding), not 14.
	for (uint64_t id = 200; id < 213; ++id)
		ASSERT_EQ(post_one(&srq.u, id), 0) << id;
	EXPECT_EQ(post_one(&srq.u, 213), ENOMEM);
	EXPECT_EQ(wqe_id(*ring, 0xfffffffe + 5), 200u);
	EXPECT_EQ(wqe_id(*ring, 0xfffffffe + 17), 212u);
	EXPECT_EQ(ring->load_producer(), 0xfffffffe + 18);
}

TEST(SrqResize, ACommandErrorChangesNothing)
{
	TestRing srq(4, kRecvSlot);
	fill_srq(srq);
	FakeSrqKernel k;
	k.old = srq.u.ring.get();
	k.err = EINVAL;
	EXPECT_EQ(mroce_srq_resize(&srq.u, k.fd, FakeSrqKernel::cmd, &k), EINVAL);
	EXPECT_EQ(srq.u.ring->num_entries(), 4u);
	EXPECT_EQ(post_one(&srq.u, 5), 0);
	EXPECT_EQ(wqe_id(*srq.u.ring, 0xfffffffe + 4), 5u);
}

TEST(SrqResize, AMismatchedProducerOrSlotSizeLosesTheSrqLoudly)
{
	for (int variant = 0; variant < 2; ++variant) {
		TestRing srq(4, kRecvSlot);
		fill_srq(srq);
		FakeSrqKernel k;
		k.old = srq.u.ring.get();
		if (variant == 0)
			k.producer_skew = -1;
		else
			k.wqe_size = 2 * kRecvSlot;
		EXPECT_EQ(mroce_srq_resize(&srq.u, k.fd, FakeSrqKernel::cmd, &k), EIO) << variant;
		EXPECT_EQ(post_one(&srq.u, 5), EIO) << variant;
		EXPECT_EQ(mroce_srq_resize(&srq.u, k.fd, FakeSrqKernel::cmd, &k), EIO) << variant;
		EXPECT_EQ(k.calls, 1) << variant;	// a lost SRQ sends no further command
	}
}

TEST(SrqResize, AnUnmappableRingLosesTheSrq)
{
	TestRing srq(4, kRecvSlot);
	fill_srq(srq);
	FakeSrqKernel k;
	k.old = srq.u.ring.get();
	EXPECT_EQ(mroce_srq_resize(&srq.u, -1, FakeSrqKernel::cmd, &k), EBADF);
	EXPECT_EQ(post_one(&srq.u, 5), EIO);
}

} // namespace
