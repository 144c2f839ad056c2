// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// What the scenario programs of both simulators share (tools/sim's
// mroce_sim, C++20, and the ns-3 model's mroce_ns3, C++17): the command
// line's options, CSV files, the per-link loss of an end-to-end loss and
// the ranks of a ring striped over the leaves.  Header-only and C++17.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace sim::scenario {

// Per-link loss q such that a path of `hops` links loses p end to end.
inline double per_link(double p, int hops = 4) { return 1 - std::pow(1 - p, 1.0 / hops); }

// Rank r of a ring of n on `leaves` leaves of hpl hosts: striped over the
// leaves, so that every ring hop crosses the spines.
inline std::vector<uint32_t> striped_ranks(uint32_t n, uint32_t leaves, uint32_t hpl)
{
	std::vector<uint32_t> host(n);
	for (uint32_t r = 0; r < n; r++)
		host[r] = (r % leaves) * hpl + r / leaves;
	return host;
}

// s split at commas, empty parts dropped.
inline std::vector<std::string> split(const std::string &s)
{
	std::vector<std::string> v;
	std::stringstream ss(s);
	for (std::string t; std::getline(ss, t, ',');)
		if (!t.empty())
			v.push_back(t);
	return v;
}

// A CSV file: its header line, then rows, each flushed as it is written.
class Csv {
public:
	Csv(const std::string &path, const std::string &header) : f_(path)
	{
		if (!f_)
			throw std::runtime_error("cannot write " + path);
		f_ << header << "\n";
	}
	void line(const std::string &s)
	{
		f_ << s << "\n";
		f_.flush();
	}
	template <class... A> void row(const char *fmt, A... a)
	{
		char buf[1024];
		std::snprintf(buf, sizeof(buf), fmt, a...);
		line(buf);
	}

private:
	std::ofstream f_;
};

// Options after the scenario name: "--name value", or "--name" alone for
// a bool.  Each is bound to the variable it sets.
class Options {
public:
	template <class T> Options &bind(const std::string &name, T &dst)
	{
		if constexpr (std::is_same_v<T, bool>)
			set_[name] = {false, [&dst](const std::string &) { dst = true; }};
		else
			set_[name] = {true, [&dst](const std::string &v) { dst = parse<T>(v); }};
		return *this;
	}
	// Sets what argv[first..argc) names.  False, said on stderr, for an
	// unknown option, a missing value or one that is not a number.
	bool parse(int argc, char **argv, int first) const
	{
		for (int i = first; i < argc; i++) {
			std::string a = argv[i];
			auto it = set_.find(a);
			if (it == set_.end()) {
				std::fprintf(stderr, "unknown option %s\n", a.c_str());
				return false;
			}
			if (it->second.takes_value && i + 1 >= argc) {
				std::fprintf(stderr, "missing value for %s\n", a.c_str());
				return false;
			}
			try {
				it->second.set(it->second.takes_value ? argv[++i] : "");
			} catch (const std::logic_error &e) {	// std::sto*
				std::fprintf(stderr, "bad value for %s\n", a.c_str());
				return false;
			}
		}
		return true;
	}

private:
	template <class T> static T parse(const std::string &v)
	{
		if constexpr (std::is_same_v<T, std::string>)
			return v;
		else if constexpr (std::is_same_v<T, std::vector<std::string>>)
			return split(v);
		else if constexpr (std::is_same_v<T, double>)
			return std::stod(v);
		else if constexpr (std::is_same_v<T, uint64_t>)
			return std::stoull(v);
		else {
			static_assert(std::is_same_v<T, uint32_t>, "an option of another type");
			return (T)std::stoul(v);
		}
	}
	struct Setter {
		bool takes_value;
		std::function<void(const std::string &)> set;
	};
	std::map<std::string, Setter> set_;
};

}  // namespace sim::scenario
