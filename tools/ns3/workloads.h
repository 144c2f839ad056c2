// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Workloads of the ns-3 model, transport-independent: bulk flows (single,
// incast, all-to-all) and the ring all-reduce, from tools/sim's workload.h
// (shared with the fabric simulator).
#pragma once

#include "model.h"
#include "workload.h"

namespace mroce_ns3 {

using Bulk = sim::workload::Bulk<Model>;
using RingAllReduce = sim::workload::RingAllReduce<Model>;

}  // namespace mroce_ns3
