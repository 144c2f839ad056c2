// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Replays every fuzzer input kept in the tree: tests/fuzz/regressions/
// (crashers found so far, named <target>-<id>) and the seed corpora.  A
// property violation aborts the test binary, so a regression fails ctest.
#include <gtest/gtest.h>

#include <dirent.h>

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
	return out;
}

std::vector<uint8_t> slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	return { std::istreambuf_iterator<char>(f), {} };
}

int replay(const std::string &path)
{
	auto b = slurp(path);
	std::string name = path.substr(path.rfind('/') + 1);
	if (name.rfind("fuzz_parse", 0) == 0 || path.find("/fuzz_parse/") != std::string::npos)
		return mroce_fuzz_parse(b.data(), b.size());
	return mroce_fuzz_conn(b.data(), b.size());
}

}  // namespace

TEST(FuzzRegressions, ReplayCrashers)
{
	auto files = list(MROCE_FUZZ_DIR "/regressions");
	for (auto &f : files) {
		SCOPED_TRACE(f);
		EXPECT_EQ(replay(f), 0);
	}
	RecordProperty("files", (int)files.size());
}

TEST(FuzzRegressions, SeedCorpusParses)
{
	auto files = list(MROCE_FUZZ_DIR "/corpus/fuzz_parse");
	ASSERT_GE(files.size(), 12u);
	for (auto &f : files) {
		auto b = slurp(f);
		mroce_pkt p;
		EXPECT_EQ(mroce_pkt_parse(b.data(), b.size(), &p), 0) << f;
		EXPECT_EQ(replay(f), 0);
	}
	for (auto &f : list(MROCE_FUZZ_DIR "/corpus/fuzz_conn"))
		EXPECT_EQ(replay(f), 0) << f;
}
