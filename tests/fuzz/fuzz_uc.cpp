// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// libFuzzer entry: the UC receiver (mroce_uc_rx_pkt) behind the parser.
#include "fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return mroce_fuzz_uc(data, size);
}
