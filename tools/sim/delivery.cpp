// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include "delivery.h"

#include <algorithm>
#include <utility>

namespace sim {

uint32_t Delivery::post(Flow &f, uint32_t len, uint32_t mtu, Time now)
{
	MsgRec m;
	m.len = len;
	m.t_post = now;
	if (mtu)
		m.got.assign(len ? (len - 1) / mtu + 1 : 1, 0);
	f.msgs.push_back(std::move(m));
	f.bytes_posted += len;
	return (uint32_t)f.msgs.size() - 1;
}

bool Delivery::place(Flow &f, uint32_t msg, uint32_t off, uint32_t len, bool ok, uint32_t mtu,
		     Time now)
{
	if (msg >= f.msgs.size()) {
		protocol_error("placement for a message never posted");
		return false;
	}
	MsgRec &m = f.msgs[msg];
	if (off % mtu || off >= std::max<uint32_t>(m.len, 1) || len != std::min(mtu, m.len - off)) {
		bad_chunk++;
		return false;
	}
	uint8_t &g = m.got[off / mtu];
	if (g) {
		dup_bytes += len;
		return false;
	}
	g = 1;
	bad_pattern += !ok;
	m.placed += len;
	count(f, len, now);
	if (m.placed != m.len)
		return false;
	received(f, msg, now);
	return true;
}

void Delivery::received(Flow &f, uint32_t msg, Time now)
{
	f.msgs[msg].t_rx = now;
	f.msgs_rx++;
}

void Delivery::count(Flow &f, uint64_t len, Time now)
{
	f.bytes_placed += len;
	size_t b = now / bucket_;
	if (b >= timeline.size())
		timeline.resize(b + 1, 0);
	timeline[b] += len;
}

bool Delivery::complete(Flow &f, uint32_t msg, uint32_t status, Time now)
{
	if (msg >= f.msgs.size()) {
		protocol_error("completion for a message never posted");
		return false;
	}
	MsgRec &m = f.msgs[msg];
	if (m.completed) {
		double_cmpl++;
		return false;
	}
	m.completed = true;
	m.status = status;
	m.t_cmpl = now;
	if (status) {
		f.error = true;
		return false;
	}
	if (m.placed != m.len)
		early_cmpl++;
	f.msgs_cmpl++;
	return true;
}

void Delivery::protocol_error(const char *what)
{
	if (proto_errors.size() < 16)
		proto_errors.emplace_back(what);
}

}  // namespace sim
