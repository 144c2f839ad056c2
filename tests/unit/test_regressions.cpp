// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Replays every fuzzer input kept in the tree, tests/fuzz/corpus/<target>/,
// through the same targets the fuzzers run: the hand-made seeds (op-*,
// script-*), the inputs the fuzzers reached new coverage with (kept from
// fuzzing runs, named by their SHA-1 as libFuzzer writes them) and any
// crasher (crash-<name>, tests/fuzz/run.sh says how to add one).  A
// property violation aborts the test binary, so a regression fails ctest;
// a missing or empty corpus folder fails too, so the replay cannot pass by
// testing nothing.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_harness.h"
#include "mroce_core.h"

namespace {

std::vector<std::string> list(const std::string &dir)
{
	std::vector<std::string> out;
	DIR *d = opendir(dir.c_str());
	if (!d)
		return out;
	while (dirent *e = readdir(d))
		if (e->d_name[0] != '.')
			out.push_back(dir + "/" + e->d_name);
	closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

std::vector<uint8_t> slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	return { std::istreambuf_iterator<char>(f), {} };
}

bool is_seed(const std::string &path)
{
	std::string name = path.substr(path.rfind('/') + 1);
	return name.rfind("op-", 0) == 0;
}

// replay_corpus TARGET FN: every input of corpus/TARGET through FN.
void replay_corpus(const char *target, int (*fn)(const uint8_t *, size_t))
{
	std::string dir = std::string(MROCE_FUZZ_DIR "/corpus/") + target;
	auto files = list(dir);
	ASSERT_FALSE(files.empty()) << dir << " is missing or empty: nothing to replay";
	for (auto &f : files) {
		SCOPED_TRACE(f);
		auto b = slurp(f);
		EXPECT_EQ(fn(b.data(), b.size()), 0);
	}
	::testing::Test::RecordProperty("files", (int)files.size());
}

}  // namespace

TEST(FuzzRegressions, ReplayParseCorpus)
{
	replay_corpus("fuzz_parse", mroce_fuzz_parse);
}

TEST(FuzzRegressions, ReplayConnCorpus)
{
	replay_corpus("fuzz_conn", mroce_fuzz_conn);
}

TEST(FuzzRegressions, ReplayUcCorpus)
{
	replay_corpus("fuzz_uc", mroce_fuzz_uc);
}

// The hand-made seeds (gen_corpus.cpp, one valid packet per opcode) must
// stay valid packets: the parser accepts each of them.
TEST(FuzzRegressions, SeedCorpusParses)
{
	std::vector<std::string> seeds;
	for (auto &f : list(MROCE_FUZZ_DIR "/corpus/fuzz_parse"))
		if (is_seed(f))
			seeds.push_back(f);
	ASSERT_GE(seeds.size(), 12u);
	for (auto &f : seeds) {
		auto b = slurp(f);
		mroce_pkt p;
		EXPECT_EQ(mroce_pkt_parse(b.data(), b.size(), &p), 0) << f;
	}
}
