// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Fuzz targets shared by the libFuzzer binaries and the unit test that
// replays the corpus, tests/fuzz/corpus/<target>/.  Each returns 0; any
// violated property aborts (a crash for libFuzzer and the unit test).
#pragma once

#include <cstddef>
#include <cstdint>

// Parser: never crashes; accepted packets re-encode to the same bytes.
int mroce_fuzz_parse(const uint8_t *data, size_t size);

// Connection: scripted posts, packet injection (raw, synthesized ACK/SACK,
// replayed peer traffic), time steps; core invariants hold throughout.
int mroce_fuzz_conn(const uint8_t *data, size_t size);

// UC receiver: raw and genuine UC packets, lost, duplicated, reordered;
// every accepted packet extends the message being assembled exactly, and
// a message completes only when fully covered.
int mroce_fuzz_uc(const uint8_t *data, size_t size);
