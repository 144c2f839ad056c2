// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// The delivery checker of both simulators (tools/sim's World and the ns-3
// model's Model): per flow, the messages posted and what the receiver
// placed of them (each MTU chunk once, with the right content) and when
// the sender saw them complete; the goodput timeline.  C++17, part of the
// library mroce_sim_transport.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net.h"

namespace sim {

struct MsgRec {
	uint32_t len = 0;
	Time t_post = 0, t_rx = kNever, t_cmpl = kNever;
	uint32_t placed = 0;
	uint32_t status = 0;
	bool completed = false;
	std::vector<uint8_t> got;	// per MTU chunk: placed?
};

struct Flow {
	uint32_t src = 0, dst = 0, tx_ep = 0, rx_ep = 0;
	std::vector<MsgRec> msgs;
	uint64_t bytes_posted = 0, bytes_placed = 0;
	uint32_t msgs_rx = 0, msgs_cmpl = 0;
	bool error = false;
};

class Delivery {
public:
	explicit Delivery(Time bucket) : bucket_(bucket) {}

	// A message of len bytes posted on f at now; mtu: its chunk size
	// (0: the transport places whole messages, no chunk record).
	// Returns the message's number.
	uint32_t post(Flow &f, uint32_t len, uint32_t mtu, Time now);
	// Chunk [off, off + len) of message msg placed at now, its content
	// right or not.  True when it was the message's last missing byte
	// (then received() has recorded it).
	bool place(Flow &f, uint32_t msg, uint32_t off, uint32_t len, bool ok, uint32_t mtu,
		   Time now);
	// All of message msg has arrived at now.
	void received(Flow &f, uint32_t msg, Time now);
	// len bytes of f placed at now (the goodput timeline and f's count).
	void count(Flow &f, uint64_t len, Time now);
	// The sender's completion of msg with status at now.  True when it is
	// the message's first and successful.
	bool complete(Flow &f, uint32_t msg, uint32_t status, Time now);
	void protocol_error(const char *what);

	std::vector<uint64_t> timeline;		// bytes placed per bucket
	uint64_t dup_bytes = 0, bad_pattern = 0, bad_chunk = 0, early_cmpl = 0,
		 double_cmpl = 0;
	std::vector<std::string> proto_errors;	// the first 16

private:
	Time bucket_;
};

}  // namespace sim
