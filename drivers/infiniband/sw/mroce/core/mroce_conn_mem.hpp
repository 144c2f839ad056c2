// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Memory for a struct mroce_conn in the userspace harnesses (unit tests,
// fuzzers, simulator); the kernel module uses kvzalloc and never includes
// this.  A connection's size depends on its parameters (mroce_conn_size()):
// ConnMem owns one zeroed block of MROCE_CONN_SIZE_MAX bytes, enough for
// any parameters, so a harness can initialise it again with others.
#pragma once

#include <cstdlib>
#include <memory>
#include <new>

#include "mroce_core.h"

namespace mroce_mem {

struct Free {
	void operator()(mroce_conn *c) const { std::free(c); }
};

using ConnPtr = std::unique_ptr<mroce_conn, Free>;

inline ConnPtr conn_alloc(size_t size = MROCE_CONN_SIZE_MAX)
{
	auto *c = static_cast<mroce_conn *>(std::calloc(1, size));
	if (!c)
		throw std::bad_alloc();
	return ConnPtr(c);
}

// mroce_conn_init() on a block from conn_alloc() of the default size.
inline int conn_init(mroce_conn *c, const mroce_params *p, const mroce_conn_ops *ops,
		     void *ctx, uint64_t now)
{
	return mroce_conn_init(c, MROCE_CONN_SIZE_MAX, p, ops, ctx, now);
}

}  // namespace mroce_mem
