// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Discrete-event fabric: time, seeded PRNG, event queue, packets, links
// (ports) with serialisation, propagation, finite queues, ECN marking,
// tail drop, random and Gilbert-Elliott loss, ECMP switches and the
// leaf-spine / multi-plane topology builders.  Fully deterministic: the
// only randomness comes from Rng objects seeded from the scenario seed.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <queue>
#include <string>
#include <vector>

namespace sim {

using Time = uint64_t;	// nanoseconds
constexpr Time kNs = 1;
constexpr Time kUs = 1000;
constexpr Time kMs = 1000 * kUs;
constexpr Time kNever = UINT64_MAX;

// Ethernet preamble+IFG (20) + MAC header (14) + FCS (4) + IPv4 (20) + UDP (8).
constexpr uint32_t kFrameOverhead = 66;

inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

// splitmix64 stream; portable, so results are identical everywhere.
class Rng {
public:
	explicit Rng(uint64_t seed = 1) : s_(seed) {}
	uint64_t next() { return mix64(s_++ * 0x9e3779b97f4a7c15ull + 1); }
	double uniform() { return (double)(next() >> 11) * 0x1.0p-53; }
	bool chance(double p) { return p > 0 && uniform() < p; }
	uint32_t below(uint32_t n) { return (uint32_t)(next() % n); }

private:
	uint64_t s_;
};

// Header of the go-back-N baseline (not mroce bytes; see gbn.h).
struct GbnHdr {
	enum Type : uint8_t { Data, Ack, Nak } type = Data;
	bool ece = false;	// ACK: CE seen since the previous ACK
	uint32_t psn = 0;	// Data: PSN; Ack/Nak: expected PSN
	uint32_t msg = 0, offset = 0, len = 0, msg_len = 0;
	Time tx_ts = 0;
};

struct Packet {
	std::vector<uint8_t> bytes;	// mroce: the real datagram (ICRC incl.)
	GbnHdr gbn;			// go-back-N model header
	bool is_gbn = false;
	uint32_t src_host = 0, dst_host = 0;
	uint32_t dst_ep = 0;		// endpoint id (the QPN)
	uint16_t sport = 0, dport = 0;
	uint32_t wire_len = 0;		// bytes on the wire incl. kFrameOverhead
	uint32_t payload = 0;		// application bytes carried
	bool ect = false, ce = false;
	bool data = false;		// data packet (vs ACK/probe)
	bool retx = false;
};

enum class EvKind : uint8_t { TxDone, Arrive, EpTimer, Action };

struct Event {
	Time t;
	uint64_t seq;
	EvKind kind;
	uint32_t a, b;
	bool operator>(const Event &o) const
	{
		return t != o.t ? t > o.t : seq > o.seq;
	}
};

class EventQueue {
public:
	void push(Time t, EvKind k, uint32_t a, uint32_t b = 0)
	{
		q_.push(Event{t, seq_++, k, a, b});
	}
	bool empty() const { return q_.empty(); }
	Time next_time() const { return q_.empty() ? kNever : q_.top().t; }
	Event pop()
	{
		Event e = q_.top();
		q_.pop();
		return e;
	}
	uint64_t pushed() const { return seq_; }

private:
	std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
	uint64_t seq_ = 0;
};

// Gilbert-Elliott two-state loss, evaluated per packet.
struct GilbertElliott {
	double p_gb = 0;	// good -> bad per packet
	double p_bg = 0;	// bad -> good per packet
	double loss_good = 0, loss_bad = 0;
	bool bad = false;
	bool enabled() const { return p_gb > 0; }
};

struct LinkCfg {
	double gbps = 100;
	Time prop = 1 * kUs;
	uint64_t qcap = 512 * 1024;	// bytes of output queue (tail drop)
	uint64_t ecn_k = 80 * 1024;	// CE-mark ECT packets above this
	double loss = 0;		// independent per-packet loss
	GilbertElliott ge;
};

// One direction of a link: the output port of node `from`.
struct Port {
	uint32_t id = 0, from = 0, to = 0;
	int plane = -1;
	bool host_nic = false;		// host uplink: queue without limit/ECN
	bool fabric = false;		// counts in per-path use tables
	LinkCfg cfg;
	bool up = true;
	bool mark_all = false;		// CE-mark every ECT packet (tests)
	std::deque<uint32_t> q;
	uint64_t q_bytes = 0;
	bool busy = false;
	Rng rng;
	// counters
	uint64_t tx_pkts = 0, tx_bytes = 0, tx_data_pkts = 0;
	uint64_t drop_q = 0, drop_loss = 0, drop_down = 0, ce_marks = 0;
	uint64_t drop_down_data = 0;	// data packets sent into a dead link
	uint64_t max_q = 0;
	std::string name;
};

struct Node {
	bool is_host = false;
	uint32_t host = 0;		// host index when is_host
	uint64_t salt = 0;		// ECMP hash salt
	std::vector<std::vector<uint32_t>> routes;	// dst host -> ports
	std::vector<uint32_t> out;	// all output ports
	std::string name;
};

class Fabric;

// Receives packets that reach hosts and NIC-idle notifications.
class HostSink {
public:
	virtual ~HostSink() = default;
	virtual void host_rx(uint32_t host, uint32_t pkt) = 0;
	virtual void host_nic_idle(uint32_t host) = 0;
};

class Fabric {
public:
	explicit Fabric(uint64_t seed) : seed_(seed) {}

	EventQueue ev;
	Time now = 0;
	std::vector<Node> nodes;
	std::vector<Port> ports;
	std::vector<uint32_t> host_node;	// host -> node
	std::vector<std::vector<uint32_t>> host_up;	// host -> uplink ports
	uint32_t planes = 1;
	HostSink *sink = nullptr;

	uint32_t add_node(bool host, std::string name);
	uint32_t add_port(uint32_t from, uint32_t to, const LinkCfg &c,
			  int plane, std::string name);
	// Both directions; returns the port from a to b.
	uint32_t add_link(uint32_t a, uint32_t b, const LinkCfg &c, int plane,
			  const std::string &name);

	// Packet pool.
	uint32_t alloc();
	void release(uint32_t id);
	Packet &pkt(uint32_t id) { return pool_[id]; }

	// Inject a packet at its source host (picks the uplink by hash).
	void host_send(uint32_t host, uint32_t pkt);
	uint64_t host_queued(uint32_t host) const;
	void handle(const Event &e);

	void set_port_up(uint32_t port, bool up) { ports[port].up = up; }
	void set_plane_up(int plane, bool up);
	// Both directions of the link between nodes a and b.
	void set_link_up(uint32_t a, uint32_t b, bool up);

	uint64_t hash5(uint64_t salt, const Packet &p) const;

	// counters
	uint64_t delivered = 0, dropped = 0;

private:
	void enqueue(uint32_t port, uint32_t pkt);
	void start_tx(uint32_t port);
	void drop(uint32_t pkt) { dropped++; release(pkt); }

	uint64_t seed_;
	std::vector<Packet> pool_;
	std::vector<uint32_t> free_;
	std::vector<uint32_t> inflight_pkt_;	// port -> packet in service
};

struct TopoCfg {
	uint32_t planes = 1;
	uint32_t leaves = 2;		// per plane
	uint32_t spines = 2;		// per plane
	uint32_t hosts_per_leaf = 2;
	LinkCfg host_link;		// host <-> leaf
	LinkCfg fabric_link;		// leaf <-> spine
};

// Leaf-spine (planes == 1) or P independent leaf-spine planes; every host
// has one uplink per plane and hashes the 5-tuple over its uplinks.
void build_leaf_spine(Fabric &f, const TopoCfg &t);

}  // namespace sim
