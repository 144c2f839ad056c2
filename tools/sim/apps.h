// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Workloads on the World: bulk flows (single flow, incast, all-to-all,
// permutations, endless streams) and the ring all-reduce, from workload.h
// (shared with the ns-3 model).
#pragma once

#include "workload.h"
#include "world.h"

namespace sim {

using BulkApp = workload::Bulk<World>;
using RingAllReduce = workload::RingAllReduce<World>;

}  // namespace sim
