// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// libFuzzer entry: connection engine (ACK/SACK processing and more).
#include "fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return mroce_fuzz_conn(data, size);
}
