-- SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
--
-- Wireshark / tshark dissector for the mroce wire format, version 1
-- (Documentation/mroce-protocol.rst, section 3).
--
--   tshark -X lua_script:tools/wireshark/mroce.lua -r capture.pcap -V
--   wireshark -X lua_script:tools/wireshark/mroce.lua
--
-- or copy this file to ~/.local/lib/wireshark/plugins/.  mroce runs on
-- UDP port 4792 by default (the module's udp_port); the port is a
-- preference ("mroce.udp_port").  Every header and flag is decoded, the
-- ACK's SACK bitmap is shown as the PSN ranges it reports, ACK blocks as
-- one subtree per path, and the ICRC is recomputed and checked.  Packets
-- that break the rules of section 3.7 get expert info (filter:
-- _ws.expert), never a Lua error.

local p = Proto("mroce", "mroce transport")

-- Wireshark 4.0 embeds Lua 5.2: bit operations come from bit32.
local band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift

-- Opcodes cut into segments: the base header's seg applies to them.
local SEGMENTED = { [0x01] = true, [0x02] = true, [0x03] = true,
		    [0x04] = true, [0x05] = true, [0x07] = true }

local OP = {
	[0x01] = "SEND", [0x02] = "SEND_IMM", [0x03] = "SEND_INV",
	[0x04] = "WRITE", [0x05] = "WRITE_IMM", [0x06] = "READ_REQ",
	[0x07] = "READ_RESP", [0x08] = "CMP_SWAP", [0x09] = "FETCH_ADD",
	[0x0a] = "ATOMIC_RESP", [0x10] = "ACK", [0x11] = "PROBE",
	[0x12] = "UD_SEND", [0x13] = "UD_SEND_IMM",
	[0x14] = "UC_SEND", [0x15] = "UC_SEND_IMM", [0x16] = "UC_WRITE",
	[0x17] = "UC_WRITE_IMM",
}
-- Extension headers per opcode, in wire order (table 3.3).
local EXT = {
	[0x01] = { "SETH" }, [0x02] = { "SETH", "IMETH" },
	[0x03] = { "SETH", "IMETH" }, [0x04] = { "RETH" },
	[0x05] = { "RETH", "SETH", "IMETH" }, [0x06] = { "RETH" },
	[0x07] = { "RRETH" }, [0x08] = { "AETH" }, [0x09] = { "AETH" },
	[0x0a] = { "ATKETH" }, [0x10] = { "ACKETH" }, [0x11] = {},
	[0x12] = { "DETH" }, [0x13] = { "IMETH", "DETH" },
	[0x14] = { "SETH" }, [0x15] = { "SETH", "IMETH" }, [0x16] = { "RETH" },
	[0x17] = { "RETH", "SETH", "IMETH" },
}
local EXT_LEN = { RETH = 16, SETH = 8, IMETH = 4, RRETH = 8, AETH = 32,
		  ATKETH = 8, ACKETH = 64, DETH = 8, XRCETH = 4 }
-- Requests that may carry an XRCETH (flag XRC, 0x0040), after the others.
local XRC_OK = { [0x01] = true, [0x02] = true, [0x03] = true, [0x04] = true,
		 [0x06] = true, [0x08] = true, [0x09] = true }
local SYN = { [0] = "ACK", [1] = "RNR", [2] = "REM_ACCESS",
	      [3] = "INV_REQ", [4] = "REM_OP" }
local BASE, ICRC, BLK = 32, 4, 56

local f = p.fields
f.version = ProtoField.uint8("mroce.version", "Version")
f.opcode = ProtoField.uint8("mroce.opcode", "Opcode", base.HEX, OP)
f.flags = ProtoField.uint16("mroce.flags", "Flags", base.HEX)
f.f_ackreq = ProtoField.bool("mroce.flags.ackreq", "ACKREQ", 16, nil, 0x0001)
f.f_first = ProtoField.bool("mroce.flags.first", "FIRST", 16, nil, 0x0002)
f.f_last = ProtoField.bool("mroce.flags.last", "LAST", 16, nil, 0x0004)
f.f_solicited = ProtoField.bool("mroce.flags.solicited", "SOLICITED", 16, nil, 0x0008)
f.f_retx = ProtoField.bool("mroce.flags.retx", "RETX", 16, nil, 0x0010)
f.f_tlp = ProtoField.bool("mroce.flags.tlp", "TLP", 16, nil, 0x0020)
f.f_xrc = ProtoField.bool("mroce.flags.xrc", "XRC", 16, nil, 0x0040)
f.xrc_srqn = ProtoField.uint32("mroce.xrceth.srqn", "XRC SRQ number", base.HEX)
f.seg = ProtoField.uint8("mroce.seg", "Segment size (x 64 bytes, 0: path MTU)")
f.path = ProtoField.uint8("mroce.path", "Path")
f.payload_len = ProtoField.uint16("mroce.payload_len", "Payload length")
f.adl = ProtoField.uint8("mroce.adl", "ACK delay limit (code: 2^(code-1) us, 0 default)")
f.dqpn = ProtoField.uint32("mroce.dqpn", "Destination QP", base.HEX, nil, 0x00ffffff)
f.psn = ProtoField.uint32("mroce.psn", "PSN")
f.dsn = ProtoField.uint32("mroce.dsn", "DSN")
f.msn = ProtoField.uint32("mroce.msn", "MSN")
f.offset = ProtoField.uint32("mroce.offset", "Offset")
f.tx_ts = ProtoField.uint32("mroce.tx_ts", "Transmit timestamp (us)")

f.reth_va = ProtoField.uint64("mroce.reth.va", "Virtual address", base.HEX)
f.reth_rkey = ProtoField.uint32("mroce.reth.rkey", "Remote key", base.HEX)
f.reth_len = ProtoField.uint32("mroce.reth.length", "Message length")
f.seth_rq_seq = ProtoField.uint32("mroce.seth.rq_seq", "Receive sequence")
f.seth_len = ProtoField.uint32("mroce.seth.length", "Message length")
f.imm = ProtoField.uint32("mroce.imeth.imm", "Immediate / rkey to invalidate", base.HEX)
f.rreth_len = ProtoField.uint32("mroce.rreth.length", "READ length")
f.aeth_va = ProtoField.uint64("mroce.aeth.va", "Virtual address", base.HEX)
f.aeth_rkey = ProtoField.uint32("mroce.aeth.rkey", "Remote key", base.HEX)
f.aeth_swap = ProtoField.uint64("mroce.aeth.swap", "Swap", base.HEX)
f.aeth_cmp = ProtoField.uint64("mroce.aeth.compare_add", "Compare / add", base.HEX)
f.atk_orig = ProtoField.uint64("mroce.atketh.orig", "Original value", base.HEX)
f.deth_qkey = ProtoField.uint32("mroce.deth.qkey", "Q_Key", base.HEX)
f.deth_src_qpn = ProtoField.uint32("mroce.deth.src_qpn", "Source QP", base.HEX)
f.rsvd = ProtoField.bytes("mroce.rsvd", "Reserved")
f.ack_delay = ProtoField.uint32("mroce.ack.ack_delay", "ACK delay (us)")
f.ack_max_seg = ProtoField.uint16("mroce.ack.max_seg", "Largest segment accepted (bytes, 0: path MTU)")

f.ack_high = ProtoField.uint32("mroce.ack.high_psn", "High PSN")
f.ack_cum = ProtoField.uint32("mroce.ack.cum_psn", "Cumulative PSN")
f.ack_ce = ProtoField.uint32("mroce.ack.ecn_ce", "CE-marked packets")
f.ack_echo = ProtoField.uint32("mroce.ack.echo_ts", "Echoed timestamp (us)")
f.ack_cum_dsn = ProtoField.uint32("mroce.ack.cum_dsn", "Cumulative DSN")
f.ack_cmpl_msn = ProtoField.uint32("mroce.ack.cmpl_msn", "Completed MSN")
f.ack_syn = ProtoField.uint8("mroce.ack.syndrome", "Syndrome", base.DEC, SYN)
f.ack_rnr = ProtoField.uint8("mroce.ack.rnr_timer", "RNR timer code")
f.ack_sack = ProtoField.bytes("mroce.ack.sack", "SACK bitmap")
f.ack_range = ProtoField.string("mroce.ack.sack_range", "Received PSNs")
f.ack_nranges = ProtoField.uint32("mroce.ack.sack_ranges", "Received ranges")
f.blk = ProtoField.bytes("mroce.blk", "ACK block")
f.blk_path = ProtoField.uint16("mroce.blk.path", "Path")
f.blocks = ProtoField.uint32("mroce.ack.blocks", "ACK blocks")
f.payload = ProtoField.bytes("mroce.payload", "Payload")
f.icrc = ProtoField.uint32("mroce.icrc", "ICRC", base.HEX)
f.icrc_ok = ProtoField.bool("mroce.icrc.ok", "ICRC correct")

local e_malformed = ProtoExpert.new("mroce.malformed", "Malformed mroce packet",
				    expert.group.MALFORMED, expert.severity.ERROR)
local e_icrc = ProtoExpert.new("mroce.icrc.bad", "ICRC mismatch",
			       expert.group.CHECKSUM, expert.severity.ERROR)
local e_rsvd = ProtoExpert.new("mroce.rsvd.nonzero", "Reserved field not zero",
			       expert.group.PROTOCOL, expert.severity.WARN)
p.experts = { e_malformed, e_icrc, e_rsvd }

p.prefs.udp_port = Pref.uint("UDP port", 4792, "mroce's UDP destination port")

-- CRC-32C, reflected, table driven.
local crc_tab = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 1) == 1 then
			c = bxor(rshift(c, 1), 0x82f63b78)
		else
			c = rshift(c, 1)
		end
	end
	crc_tab[i] = c
end

local function crc32c(tvb, off, len)
	local crc = 0xffffffff
	local bytes = tvb:raw(off, len)
	for i = 1, #bytes do
		crc = bxor(rshift(crc, 8), crc_tab[band(bxor(crc, bytes:byte(i)), 0xff)])
	end
	return bxor(crc, 0xffffffff)
end

local function u32(tvb, off)
	return tvb(off, 4):uint()
end

-- Reserved bytes must be zero.
local function rsvd(tree, tvb, off, len)
	local it = tree:add(f.rsvd, tvb(off, len))
	for i = 0, len - 1 do
		if tvb(off + i, 1):uint() ~= 0 then
			it:add_proto_expert_info(e_rsvd)
			break
		end
	end
end

-- SACK: bit i (bit i % 8 of byte i / 8) set = PSN high - 1 - i received.
-- Returns the received PSN ranges, oldest first, as "a-b" strings.
local function sack_ranges(tvb, off, high)
	local got = {}
	for i = 0, 255 do
		local b = tvb(off + math.floor(i / 8), 1):uint()
		got[i] = band(rshift(b, i % 8), 1) == 1
	end
	local ranges = {}
	local i = 255
	while i >= 0 do
		if got[i] then
			local j = i
			while j - 1 >= 0 and got[j - 1] do
				j = j - 1
			end
			local lo = (high - 1 - i) % 0x100000000
			local hi = (high - 1 - j) % 0x100000000
			ranges[#ranges + 1] = lo == hi and tostring(lo) or
					      (lo .. "-" .. hi)
			i = j - 1
		else
			i = i - 1
		end
	end
	return ranges
end

-- high_psn, cum_psn, ecn_ce, echo_ts at off..off+15 (ACKETH and blocks);
-- the SACK bitmap at sack_off.
local function path_fields(tree, tvb, off, sack_off)
	local high, cum = u32(tvb, off), u32(tvb, off + 4)
	tree:add(f.ack_high, tvb(off, 4))
	tree:add(f.ack_cum, tvb(off + 4, 4))
	tree:add(f.ack_ce, tvb(off + 8, 4))
	tree:add(f.ack_echo, tvb(off + 12, 4))
	local st = tree:add(f.ack_sack, tvb(sack_off, 32))
	local ranges = sack_ranges(tvb, sack_off, high)
	st:add(f.ack_nranges, tvb(sack_off, 32), #ranges)
	for _, r in ipairs(ranges) do
		st:add(f.ack_range, tvb(sack_off, 32), r)
	end
	local dist = (high - cum) % 0x100000000
	if dist > 256 then
		tree:add_proto_expert_info(e_malformed, "cum_psn more than 256 before high_psn")
	end
	return high, cum, #ranges
end

local function ext(tree, tvb, name, off)
	local t = tree:add(p, tvb(off, EXT_LEN[name]), name)
	if name == "RETH" then
		t:add(f.reth_va, tvb(off, 8))
		t:add(f.reth_rkey, tvb(off + 8, 4))
		t:add(f.reth_len, tvb(off + 12, 4))
	elseif name == "SETH" then
		t:add(f.seth_rq_seq, tvb(off, 4))
		t:add(f.seth_len, tvb(off + 4, 4))
	elseif name == "IMETH" then
		t:add(f.imm, tvb(off, 4))
	elseif name == "RRETH" then
		t:add(f.rreth_len, tvb(off, 4))
		rsvd(t, tvb, off + 4, 4)
	elseif name == "AETH" then
		t:add(f.aeth_va, tvb(off, 8))
		t:add(f.aeth_rkey, tvb(off + 8, 4))
		rsvd(t, tvb, off + 12, 4)
		t:add(f.aeth_swap, tvb(off + 16, 8))
		t:add(f.aeth_cmp, tvb(off + 24, 8))
	elseif name == "ATKETH" then
		t:add(f.atk_orig, tvb(off, 8))
	elseif name == "ACKETH" then
		path_fields(t, tvb, off, off + 32)
		t:add(f.ack_cum_dsn, tvb(off + 16, 4))
		t:add(f.ack_cmpl_msn, tvb(off + 20, 4))
		t:add(f.ack_syn, tvb(off + 24, 1))
		t:add(f.ack_rnr, tvb(off + 25, 1))
		t:add(f.ack_max_seg, tvb(off + 26, 2))
		local ms = tvb(off + 26, 2):uint()
		if ms ~= 0 and (ms % 64 ~= 0 or ms < 256 or ms > 4096) then
			t:add_proto_expert_info(e_malformed, "max_seg not 0 or a multiple of 64 in 256..4096")
		end
		t:add(f.ack_delay, tvb(off + 28, 4))
		if tvb(off + 24, 1):uint() > 4 then
			t:add_proto_expert_info(e_malformed, "syndrome above 4")
		end
	elseif name == "DETH" then
		t:add(f.deth_qkey, tvb(off, 4))
		t:add(f.deth_src_qpn, tvb(off + 4, 4))
	elseif name == "XRCETH" then
		t:add(f.xrc_srqn, tvb(off, 4))
		if tvb(off, 1):uint() ~= 0 then
			t:add_proto_expert_info(e_malformed, "XRCETH: top 8 bits not zero")
		end
	end
	return t
end

function p.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	pinfo.cols.protocol = "mroce"
	local t = tree:add(p, tvb(), "mroce")
	if len < BASE + ICRC then
		t:add_proto_expert_info(e_malformed, "shorter than 36 bytes")
		return len
	end
	local op = tvb(1, 1):uint()
	t:add(f.version, tvb(0, 1))
	t:add(f.opcode, tvb(1, 1))
	local fl = t:add(f.flags, tvb(2, 2))
	fl:add(f.f_ackreq, tvb(2, 2))
	fl:add(f.f_first, tvb(2, 2))
	fl:add(f.f_last, tvb(2, 2))
	fl:add(f.f_solicited, tvb(2, 2))
	fl:add(f.f_retx, tvb(2, 2))
	fl:add(f.f_tlp, tvb(2, 2))
	fl:add(f.f_xrc, tvb(2, 2))
	t:add(f.seg, tvb(4, 1))
	t:add(f.path, tvb(5, 1))
	t:add(f.payload_len, tvb(6, 2))
	t:add(f.adl, tvb(8, 1))
	t:add(f.dqpn, tvb(8, 4))
	t:add(f.psn, tvb(12, 4))
	t:add(f.dsn, tvb(16, 4))
	t:add(f.msn, tvb(20, 4))
	t:add(f.offset, tvb(24, 4))
	t:add(f.tx_ts, tvb(28, 4))

	local name = OP[op]
	local seg, path, plen = tvb(4, 1):uint(), tvb(5, 1):uint(), tvb(6, 2):uint()
	pinfo.cols.info = string.format("%s path %d psn %u dsn %u msn %u qp 0x%06x",
					name or string.format("opcode 0x%02x", op),
					path, u32(tvb, 12), u32(tvb, 16), u32(tvb, 20),
					band(u32(tvb, 8), 0xffffff))
	if tvb(0, 1):uint() ~= 1 or not name then
		t:add_proto_expert_info(e_malformed, "unknown version or opcode")
		return len
	end
	local exts = {}
	for _, e in ipairs(EXT[op]) do
		exts[#exts + 1] = e
	end
	if band(tvb(2, 2):uint(), 0x0040) ~= 0 then
		if XRC_OK[op] then
			exts[#exts + 1] = "XRCETH"
		else
			t:add_proto_expert_info(e_malformed, "XRC flag on an opcode without an XRCETH")
		end
	end
	local off = BASE
	for _, e in ipairs(exts) do
		off = off + EXT_LEN[e]
	end
	if off + plen + ICRC ~= len then
		t:add_proto_expert_info(e_malformed, "payload_len does not match the datagram")
		return len
	end
	if seg ~= 0 and (not SEGMENTED[op] or seg < 4 or seg > 64) then
		t:add_proto_expert_info(e_malformed, "seg on an opcode without segments, or outside 4..64")
	end
	if path >= 64 then
		t:add_proto_expert_info(e_malformed, "path >= 64")
	end
	local adl = tvb(8, 1):uint()
	if adl > 16 or (adl ~= 0 and (op == 0x10 or op == 0x11)) then
		t:add_proto_expert_info(e_malformed, "adl above 16, or on an ACK or PROBE")
	end
	off = BASE
	for _, e in ipairs(exts) do
		ext(t, tvb, e, off)
		off = off + EXT_LEN[e]
	end
	if exts[#exts] == "XRCETH" then
		pinfo.cols.info:append(string.format(" srq 0x%06x", u32(tvb, off - 4)))
	end
	if op == 0x10 then
		local syn = tvb(BASE + 24, 1):uint()
		pinfo.cols.info:append(string.format(" %s cum_dsn %u", SYN[syn] or "?",
						     u32(tvb, BASE + 16)))
		if plen % BLK ~= 0 or (plen > 0 and syn ~= 0) then
			t:add_proto_expert_info(e_malformed, "ACK payload is not blocks of a positive ACK")
		elseif plen > 0 then
			local n = plen / BLK
			t:add(f.blocks, tvb(off, plen), n)
			local paths = { [path] = true }
			for k = 0, n - 1 do
				local b = off + k * BLK
				local bp = tvb(b, 2):uint()
				local bt = t:add(f.blk, tvb(b, BLK))
				bt:set_text(string.format("ACK block: path %d", bp))
				bt:add(f.blk_path, tvb(b, 2))
				rsvd(bt, tvb, b + 2, 2)
				path_fields(bt, tvb, b + 4, b + 24)
				bt:add(f.ack_delay, tvb(b + 20, 4))
				if paths[bp] or bp >= 64 then
					bt:add_proto_expert_info(e_malformed, "path repeated or >= 64")
				end
				paths[bp] = true
			end
			pinfo.cols.info:append(string.format(" +%d blocks", n))
		end
	elseif plen > 0 then
		t:add(f.payload, tvb(off, plen))
	end
	local icrc = u32(tvb, len - ICRC)
	local it = t:add(f.icrc, tvb(len - ICRC, ICRC))
	local ok = crc32c(tvb, 0, len - ICRC) == icrc
	it:add(f.icrc_ok, tvb(len - ICRC, ICRC), ok)
	if not ok then
		it:add_proto_expert_info(e_icrc)
	end
	return len
end

local registered
local function register()
	local udp = DissectorTable.get("udp.port")
	if registered then
		udp:remove(registered, p)
	end
	registered = p.prefs.udp_port
	udp:add(registered, p)
end
p.prefs_changed = register
register()
