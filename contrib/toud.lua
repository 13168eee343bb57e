-- toud.lua - Wireshark / tshark dissector for the toud wire format
-- (profile version 1, doc/protocol.md).
--
-- Usage:
--   tshark -X lua_script:contrib/toud.lua -r cap.pcap
--   tshark -X lua_script:contrib/toud.lua -o tls.keylog_file:KEYLOG -r cap.pcap -Y tcp
-- or copy it to ~/.local/lib/wireshark/plugins/.  UDP port 6080 is decoded
-- as toud; another port with "Decode As" (-d udp.port==N,toud and, for the
-- decrypted payload, -d dtls.port==N,toud.inner).
--
-- Two protocols:
--   toud        the UDP payload.  With encryption = dtls: the outer GUE
--               word, the private flags and the session ID, then one DTLS
--               record, handed to the DTLS dissector.  With encryption =
--               none (a first word that is not the outer form): the inner
--               framing directly.
--   toud.inner  the inner framing: compact TOU (GUE word + transport
--               segment, given to the "ip.proto" table), direct IP (a
--               whole IPv4 / IPv6 packet) or a control message.  It is
--               registered in "dtls.port", so the DTLS dissector hands it
--               the decrypted application data when it has the keys
--               (-o tls.keylog_file:FILE; toud writes FILE when started
--               with SSLKEYLOGFILE=FILE in its environment).
--
-- A compact segment carries no IP header: its checksum covers the tunnel
-- addresses, which are not on the wire, so a transport checksum check (off
-- by default for TCP and UDP, always on for ICMPv6) reports it as wrong.
--
-- Malformed input is reported as expert info (toud.malformed,
-- toud.refused, toud.inner.malformed, toud.inner.refused), never as a Lua
-- error.

local TOUD_PORT = 6080

local toud = Proto("toud", "toud tunnel (GUE + DTLS)")
local inner = Proto("toud.inner", "toud inner framing")

local OUTER_LEN = 16
local PROTO_NONE = 59
local FLAG_P = 0x0001
local PFLAG_REMCSUM = 0x80000000
local PFLAG_S = 0x40000000
local PFLAG_D = 0x20000000
local DTLS_HDR = 13
local DTLS_MAX_FRAG = 16384 + 2048

local variant_names = {
	[0] = "GUE header",
	[1] = "direct IP",
	[2] = "reserved",
	[3] = "reserved",
}

local ctype_names = {
	[1] = "keepalive",
	[2] = "path challenge",
	[3] = "path response",
	[4] = "close",
}
-- body length of each control message
local ctype_body = { [1] = 0, [2] = 8, [3] = 8, [4] = 0 }

local ipproto_names = {
	[1] = "ICMP",
	[6] = "TCP",
	[17] = "UDP",
	[58] = "ICMPv6",
	[59] = "IPv6-NoNxt",
	[132] = "SCTP",
}

-- IPv6 extension headers: never a compact protocol
local ipv6_ext = { [0] = true, [43] = true, [44] = true, [60] = true,
	[135] = true, [139] = true, [140] = true }

local dtls_ctypes = {
	[20] = "change_cipher_spec",
	[21] = "alert",
	[22] = "handshake",
	[23] = "application_data",
}

-- outer fields
local f_enc = ProtoField.string("toud.encryption", "Encryption")
local f_version = ProtoField.uint8("toud.version", "Variant", base.DEC, variant_names, 0xc0)
local f_c = ProtoField.uint8("toud.c", "Control (C)", base.DEC, nil, 0x20)
local f_hlen = ProtoField.uint8("toud.hlen", "Header length (Hlen, 32-bit words)", base.DEC, nil, 0x1f)
local f_proto = ProtoField.uint8("toud.proto", "Protocol", base.DEC, ipproto_names)
local f_flags = ProtoField.uint16("toud.flags", "Flags", base.HEX)
local f_flag_p = ProtoField.bool("toud.flags.p", "Private flags present (P)", 16, nil, FLAG_P)
local f_pflags = ProtoField.uint32("toud.pflags", "Private flags", base.HEX)
local f_pflag_r = ProtoField.bool("toud.pflags.remcsum", "Remote checksum offload", 32, nil, PFLAG_REMCSUM)
local f_pflag_s = ProtoField.bool("toud.pflags.s", "Session ID (S)", 32, nil, PFLAG_S)
local f_pflag_d = ProtoField.bool("toud.pflags.d", "DTLS record (D)", 32, nil, PFLAG_D)
local f_session = ProtoField.uint64("toud.session_id", "Session ID", base.HEX)
local f_rec_type = ProtoField.uint8("toud.dtls_type", "DTLS content type", base.DEC, dtls_ctypes)

toud.fields = { f_enc, f_version, f_c, f_hlen, f_proto, f_flags, f_flag_p, f_pflags,
	f_pflag_r, f_pflag_s, f_pflag_d, f_session, f_rec_type }

-- inner fields
local f_kind = ProtoField.string("toud.inner.kind", "Kind")
local f_iversion = ProtoField.uint8("toud.inner.version", "Variant", base.DEC, variant_names, 0xc0)
local f_ipver = ProtoField.uint8("toud.inner.ip_version", "IP version", base.DEC, nil, 0xf0)
local f_ic = ProtoField.uint8("toud.inner.c", "Control (C)", base.DEC, nil, 0x20)
local f_ihlen = ProtoField.uint8("toud.inner.hlen", "Header length (Hlen)", base.DEC, nil, 0x1f)
local f_iproto = ProtoField.uint8("toud.inner.proto", "Protocol", base.DEC, ipproto_names)
local f_ctype = ProtoField.uint8("toud.ctrl.type", "Control type", base.DEC, ctype_names)
local f_iflags = ProtoField.uint16("toud.inner.flags", "Flags", base.HEX)
local f_nonce = ProtoField.bytes("toud.ctrl.nonce", "Nonce")

inner.fields = { f_kind, f_iversion, f_ipver, f_ic, f_ihlen, f_iproto, f_ctype, f_iflags,
	f_nonce }

local e_malformed = ProtoExpert.new("toud.malformed", "Malformed toud datagram",
	expert.group.MALFORMED, expert.severity.ERROR)
local e_refused = ProtoExpert.new("toud.refused", "A toud receiver drops this datagram",
	expert.group.PROTOCOL, expert.severity.WARN)
local e_no_dissector = ProtoExpert.new("toud.no_dissector", "No dissector for the payload",
	expert.group.UNDECODED, expert.severity.NOTE)

toud.experts = { e_malformed, e_refused, e_no_dissector }

local e_imalformed = ProtoExpert.new("toud.inner.malformed", "Malformed toud inner packet",
	expert.group.MALFORMED, expert.severity.ERROR)
local e_irefused = ProtoExpert.new("toud.inner.refused", "A toud receiver drops this inner packet",
	expert.group.PROTOCOL, expert.severity.WARN)

inner.experts = { e_imalformed, e_irefused }

-- Other dissectors, looked up on first use (every protocol is registered
-- by then).  A missing one is nil.
local handles = nil

local function get_handles()
	if handles then
		return handles
	end
	handles = {}
	for _, name in ipairs({ "dtls", "ip", "ipv6", "data" }) do
		local ok, d = pcall(Dissector.get, name)
		handles[name] = ok and d or nil
	end
	local ok, dt = pcall(DissectorTable.get, "ip.proto")
	handles.ipproto = ok and dt or nil
	return handles
end

-- tvb from offset to the end, or nil when that is empty (a zero-length
-- sub-tvb is a dissector bug).
local function tail(tvb, offset)
	if tvb:len() <= offset then
		return nil
	end
	return tvb(offset):tvb()
end

local function call_data(tvb, pinfo, tree)
	local h = get_handles()
	if h.data and tvb then
		pcall(h.data.call, h.data, tvb, pinfo, tree)
	end
end

-- "Dissector_call: Malformed frame" -> "malformed frame"
local function lua_error_text(err)
	local s = tostring(err):gsub("^[%w_]+: ", "")
	return s:lower()
end

-- Call dissector d; its exceptions (a truncated IP header, say) come back
-- as Lua errors and become expert info ei on item t.
local function call_safe(d, name, tvb, pinfo, tree, t, ei)
	local ok, err = pcall(d.call, d, tvb, pinfo, tree)
	if not ok then
		t:add_proto_expert_info(ei, name .. ": " .. lua_error_text(err))
	end
end

-- Direct IP (GUE variant 1): a whole IPv4 / IPv6 packet.
local function dissect_direct(tvb, pinfo, tree, t)
	local ipv = bit.rshift(tvb(0, 1):uint(), 4)
	if ipv ~= 4 and ipv ~= 6 then
		t:add(f_kind, tvb(0, 0), "invalid")
		t:add(f_iversion, tvb(0, 1))
		t:add(f_ipver, tvb(0, 1))
		t:set_text("toud inner: variant 1 with first nibble " .. ipv)
		t:add_proto_expert_info(e_imalformed, "variant 1 with a first nibble of " .. ipv ..
		    " (neither IPv4 nor IPv6)")
		call_data(tvb, pinfo, tree)
		return
	end
	t:add(f_kind, tvb(0, 0), "ip")
	t:add(f_iversion, tvb(0, 1))
	t:add(f_ipver, tvb(0, 1))
	t:set_text("toud inner: direct IPv" .. ipv)
	local h = get_handles()
	local d = ipv == 4 and h.ip or h.ipv6
	if d then
		call_safe(d, ipv == 4 and "ip" or "ipv6", tvb, pinfo, tree, t, e_imalformed)
	else
		call_data(tvb, pinfo, tree)
	end
end

-- Control message (variant 0, C 1).
local function dissect_control(tvb, pinfo, tree, t)
	local len = tvb:len()
	local ct = tvb(1, 1):uint()
	local name = ctype_names[ct]
	local body = len - 4

	t:add(f_kind, tvb(0, 0), "control")
	t:add(f_iversion, tvb(0, 1))
	t:add(f_ic, tvb(0, 1))
	t:add(f_ihlen, tvb(0, 1))
	local ci = t:add(f_ctype, tvb(1, 1))
	t:add(f_iflags, tvb(2, 2))
	t:set_text("toud inner: control, " .. (name or ("type " .. ct)))
	pinfo.cols.protocol = "toud"
	pinfo.cols.info:append(", toud control " .. (name or ("type " .. ct)))
	if not name then
		ci:add_proto_expert_info(e_irefused, "unknown control type " .. ct)
		call_data(tail(tvb, 4), pinfo, tree)
		return
	end
	if body ~= ctype_body[ct] then
		t:add_proto_expert_info(e_imalformed, string.format(
		    "%s body of %d bytes (must be %d)", name, body, ctype_body[ct]))
	end
	if ctype_body[ct] == 8 and body >= 8 then
		t:add(f_nonce, tvb(4, 8))
	end
end

-- The transport check of doc/protocol.md §2 on a compact segment.
local function check_segment(tvb, t, pr)
	local seg = tvb:len() - 4
	if pr == 6 then
		if seg < 20 then
			t:add_proto_expert_info(e_imalformed, "TCP segment of " .. seg .. " bytes")
			return
		end
		local doff = bit.rshift(tvb(4 + 12, 1):uint(), 4) * 4
		if doff < 20 or doff > seg then
			t:add_proto_expert_info(e_imalformed, "TCP data offset " .. doff ..
			    " outside [20, " .. seg .. "]")
		end
	elseif pr == 17 then
		if seg < 8 then
			t:add_proto_expert_info(e_imalformed, "UDP datagram of " .. seg .. " bytes")
			return
		end
		local ulen = tvb(4 + 4, 2):uint()
		if ulen ~= seg then
			t:add_proto_expert_info(e_imalformed, "UDP length " .. ulen ..
			    ", but the segment has " .. seg .. " bytes")
		end
	elseif pr == 1 or pr == 58 then
		if seg < 8 then
			t:add_proto_expert_info(e_imalformed, "ICMP message of " .. seg .. " bytes")
		end
	end
end

-- Compact TOU (variant 0, C 0): the transport segment alone.
local function dissect_compact(tvb, pinfo, tree, t)
	local pr = tvb(1, 1):uint()

	t:add(f_kind, tvb(0, 0), "compact")
	t:add(f_iversion, tvb(0, 1))
	t:add(f_ic, tvb(0, 1))
	t:add(f_ihlen, tvb(0, 1))
	local pi = t:add(f_iproto, tvb(1, 1))
	t:add(f_iflags, tvb(2, 2))
	t:set_text("toud inner: compact TOU, " .. (ipproto_names[pr] or ("protocol " .. pr)))
	local rest = tail(tvb, 4)
	if not rest then
		t:add_proto_expert_info(e_imalformed, "compact word without a transport segment")
		return
	end
	if pr == 0 or ipv6_ext[pr] then
		-- an IPv6 extension header without the IPv6 header before it
		pi:add_proto_expert_info(e_irefused, "protocol " .. pr .. " is never sent compact")
		call_data(rest, pinfo, tree)
		return
	end
	check_segment(tvb, t, pr)

	local h = get_handles()
	if not h.ipproto then
		call_data(rest, pinfo, tree)
		return
	end
	-- DissectorTable:try falls back to the data dissector by itself.
	local ok, err = pcall(h.ipproto.try, h.ipproto, pr, rest, pinfo, tree)
	if not ok then
		t:add_proto_expert_info(e_imalformed, "protocol " .. pr .. ": " .. lua_error_text(err))
	end
end

-- Inner framing (doc/protocol.md §2).
local function dissect_inner(tvb, pinfo, tree)
	local len = tvb:len()
	local t = tree:add(inner, tvb(), "toud inner")

	local b0 = tvb(0, 1):uint()
	local variant = bit.rshift(b0, 6)
	if variant == 1 then
		dissect_direct(tvb, pinfo, tree, t)
		return len
	end
	if variant ~= 0 then
		t:add(f_kind, tvb(0, 0), "invalid")
		t:add(f_iversion, tvb(0, 1))
		t:set_text("toud inner: variant " .. variant)
		t:add_proto_expert_info(e_imalformed, "variant " .. variant .. " is reserved")
		call_data(tvb, pinfo, tree)
		return len
	end
	if len < 4 then
		t:add(f_kind, tvb(0, 0), "invalid")
		t:add(f_iversion, tvb(0, 1))
		t:set_text("toud inner: truncated GUE word")
		t:add_proto_expert_info(e_imalformed, "truncated GUE word (" .. len .. " bytes)")
		return len
	end

	if bit.band(b0, 0x20) ~= 0 then
		dissect_control(tvb, pinfo, tree, t)
	else
		dissect_compact(tvb, pinfo, tree, t)
	end
	local hlen = bit.band(b0, 0x1f)
	if hlen ~= 0 then
		t:add_proto_expert_info(e_irefused, "Hlen " .. hlen .. " (must be 0 in the inner framing)")
	end
	local flags = tvb(2, 2):uint()
	if flags ~= 0 then
		t:add_proto_expert_info(e_irefused, string.format("flags 0x%04x (must be 0)", flags))
	end
	return len
end

function inner.dissector(tvb, pinfo, tree)
	if tvb:len() == 0 then
		return 0
	end
	return dissect_inner(tvb, pinfo, tree)
end

-- The DTLS record header after the outer framing: the checks a toud
-- receiver makes before the DTLS library sees a byte.
local function check_record(tvb, t)
	local rlen = tvb:len() - OUTER_LEN
	local rt = tvb(OUTER_LEN, 1):uint()
	local ti = t:add(f_rec_type, tvb(OUTER_LEN, 1))
	if not dtls_ctypes[rt] then
		ti:add_proto_expert_info(e_refused, "DTLS content type " .. rt)
	end
	local ver = tvb(OUTER_LEN + 1, 2):uint()
	if ver ~= 0xfefd and not (ver == 0xfeff and rt == 22) then
		t:add_proto_expert_info(e_refused, string.format("DTLS record version 0x%04x", ver))
	end
	local flen = tvb(OUTER_LEN + 11, 2):uint()
	if flen ~= rlen - DTLS_HDR then
		t:add_proto_expert_info(e_refused, string.format(
		    "DTLS record length %d, but %d bytes follow its header", flen, rlen - DTLS_HDR))
	elseif flen > DTLS_MAX_FRAG then
		t:add_proto_expert_info(e_refused, "DTLS record length " .. flen .. " is too large")
	end
end

-- Outer framing, encryption = dtls (doc/protocol.md §1).
local function dissect_outer(tvb, pinfo, tree)
	local len = tvb:len()
	local t = tree:add(toud, tvb(0, math.min(len, OUTER_LEN)), "toud")
	pinfo.cols.protocol = "toud"

	t:add(f_enc, tvb(0, 0), "dtls")
	t:add(f_version, tvb(0, 1))
	t:add(f_c, tvb(0, 1))
	t:add(f_hlen, tvb(0, 1))
	if len < 4 then
		t:add_proto_expert_info(e_malformed, "truncated GUE word (" .. len .. " bytes)")
		return len
	end
	local pi = t:add(f_proto, tvb(1, 1))
	if tvb(1, 1):uint() ~= PROTO_NONE then
		pi:add_proto_expert_info(e_refused, "protocol " .. tvb(1, 1):uint() .. " (must be 59)")
	end
	local fi = t:add(f_flags, tvb(2, 2))
	fi:add(f_flag_p, tvb(2, 2))
	if tvb(2, 2):uint() ~= FLAG_P then
		fi:add_proto_expert_info(e_refused, string.format("flags 0x%04x (must be 0x0001)",
		    tvb(2, 2):uint()))
	end
	if len < OUTER_LEN then
		t:add_proto_expert_info(e_malformed, "truncated outer header (" .. len ..
		    " bytes, needs " .. OUTER_LEN .. ")")
		call_data(tail(tvb, 4), pinfo, tree)
		return len
	end
	local pfi = t:add(f_pflags, tvb(4, 4))
	pfi:add(f_pflag_r, tvb(4, 4))
	pfi:add(f_pflag_s, tvb(4, 4))
	pfi:add(f_pflag_d, tvb(4, 4))
	if tvb(4, 4):uint() ~= PFLAG_S + PFLAG_D then
		pfi:add_proto_expert_info(e_refused, string.format(
		    "private flags 0x%08x (must be 0x60000000)", tvb(4, 4):uint()))
	end
	local si = t:add(f_session, tvb(8, 8))
	local sid = "0x" .. tvb(8, 8):uint64():tohex()
	if tvb(8, 4):uint() == 0 and tvb(12, 4):uint() == 0 then
		si:add_proto_expert_info(e_refused, "session ID 0")
	end
	t:set_text("toud, session " .. sid)
	pinfo.cols.info = "toud session " .. sid

	local rec = tail(tvb, OUTER_LEN)
	if not rec or rec:len() < DTLS_HDR then
		t:add_proto_expert_info(e_malformed, "no complete DTLS record header (" ..
		    (rec and rec:len() or 0) .. " bytes)")
		call_data(rec, pinfo, tree)
		return len
	end
	check_record(tvb, t)

	local h = get_handles()
	if h.dtls then
		call_safe(h.dtls, "dtls", rec, pinfo, tree, t, e_malformed)
	else
		t:add_proto_expert_info(e_no_dissector, "no DTLS dissector")
		call_data(rec, pinfo, tree)
	end
	return len
end

function toud.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	if len == 0 then
		return 0
	end
	-- The outer form is variant 0, C 0, Hlen 3; the inner framing never
	-- has Hlen 3, so anything else is encryption = none.
	if tvb(0, 1):uint() == 0x03 then
		return dissect_outer(tvb, pinfo, tree)
	end
	pinfo.cols.protocol = "toud"
	local t = tree:add(toud, tvb(0, 0), "toud, encryption none")
	t:add(f_enc, tvb(0, 0), "none")
	return dissect_inner(tvb, pinfo, tree)
end

DissectorTable.get("udp.port"):add(TOUD_PORT, toud)
-- The DTLS dissector hands decrypted application data to the dissector
-- registered for the record's UDP port in "dtls.port".
DissectorTable.get("dtls.port"):add(TOUD_PORT, inner)
