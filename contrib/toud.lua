-- toud.lua - Wireshark / tshark dissector for the toud wire format
-- (profile version 1, doc/protocol.md).
--
-- Usage:
--   tshark -X lua_script:contrib/toud.lua -r cap.pcap
--   tshark -X lua_script:contrib/toud.lua -o tls.keylog_file:KEYLOG -r cap.pcap -Y tcp
--   (with preshared keys also -o toud.keylog_file:KEYLOG)
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
--               with SSLKEYLOGFILE=FILE in its environment), on every path
--               of a session: after an address change too, given the
--               handshake in the capture.
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
	[5] = "PQ_INIT",
	[6] = "PQ_REPLY",
	[7] = "refusal",
	[8] = "PQ_CONFIRM",
}
-- body length of each control message (PQ_INIT's varies: checked apart)
local ctype_body = { [1] = 0, [2] = 8, [3] = 8, [4] = 0, [6] = 1088, [7] = 1, [8] = 0 }

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
	if ct == 5 then
		-- offset (2), then a piece of the 1184-byte encapsulation key
		local off = body >= 2 and tvb(4, 2):uint() or 0
		if body <= 2 or off + body - 2 > 1184 then
			t:add_proto_expert_info(e_imalformed, string.format(
			    "PQ_INIT of %d bytes at offset %d (the key has 1184)", body - 2, off))
		end
	elseif body ~= ctype_body[ct] then
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

-- The frame inner.dissector last ran for: a record the DTLS dissector
-- decrypted (dtls_call() below).
local inner_ran = nil

function inner.dissector(tvb, pinfo, tree)
	if tvb:len() == 0 then
		return 0
	end
	inner_ran = pinfo.number
	return dissect_inner(tvb, pinfo, tree)
end

-- Records of sessions with a preshared key (doc/protocol.md 1.4): their
-- keys are not in the TLS key log, so the DTLS dissector cannot open them.
-- toud writes them to the same key log as
--   TOUD_PSK_DATA_KEYS <client random> <client write key> <server write key>
--       <client write IV> <server write IV>
-- and, with the preference toud.keylog_file naming that file, they are
-- decrypted here (AES-GCM and ChaCha20 in counter mode; the tag is not
-- checked).  Session IDs change with the path and are linked to nothing in
-- the clear, so a record is tried with every key of the log (both
-- directions) and taken by the key whose plaintext is well-formed inner
-- framing of the record's length; that key is tried first for the rest of
-- the ID.
--
-- Sessions whose keys include the ML-KEM-768 exchange (doc/protocol.md
-- 1.5) carry its two messages under the first keys (the TLS key log's, or
-- the preshared key's line) and every record after them under keys toud
-- writes as
--   TOUD_PQ_DATA_KEYS <client random> <client write key> <server write key>
--       <client write IV> <server write IV>
-- which are taken the same way.

toud.prefs.keylog_file = Pref.string("Key log file", "",
	"A key log written by toud (SSLKEYLOGFILE or keylog-file): its TOUD_PSK_DATA_KEYS " ..
	"and TOUD_PQ_DATA_KEYS lines decrypt the data records of sessions with a preshared " ..
	"key or an ML-KEM-768 exchange")

local band, bor, bxor, lshift, rshift = bit.band, bit.bor, bit.bxor, bit.lshift, bit.rshift

local SBOX = {}
do
	local hex = "637c777bf26b6fc53001672bfed7ab76ca82c97dfa5947f0add4a2af9ca472c0b7fd9326363ff7cc34a5e5f171d8311504c723c31896059a071280e2eb27b27509832c1a1b6e5aa0523bd6b329e32f8453d100ed20fcb15b6acbbe394a4c58cfd0efaafb434d338545f9027f503c9fa851a3408f929d38f5bcb6da2110fff3d2cd0c13ec5f974417c4a77e3d645d197360814fdc222a908846eeb814de5e0bdbe0323a0a4906245cc2d3ac629195e479e7c8376d8dd54ea96c56f4ea657aae08ba78252e1ca6b4c6e8dd741f4bbd8b8a703eb5664803f60e613557b986c11d9ee1f8981169d98e949b1e87e9ce5528df8ca1890dbfe6426841992d0fb054bb16"
	for i = 0, 255 do
		SBOX[i] = tonumber(hex:sub(2 * i + 1, 2 * i + 2), 16)
	end
end

-- AES encryption tables: TE[k][x] is column x of a round, rotated k bytes.
local TE = { [0] = {}, {}, {}, {} }
do
	for x = 0, 255 do
		local s = SBOX[x]
		local s2 = band(lshift(s, 1), 0xff)
		if s >= 0x80 then
			s2 = bxor(s2, 0x1b)
		end
		local w = bor(lshift(s2, 24), lshift(s, 16), lshift(s, 8), bxor(s2, s))
		for k = 0, 3 do
			TE[k][x] = w
			w = bor(rshift(w, 8), lshift(band(w, 0xff), 24))
		end
	end
end

local function be32(b, i)
	return bor(lshift(b[i], 24), lshift(b[i + 1], 16), lshift(b[i + 2], 8), b[i + 3])
end

local function sub_word(w)
	return bor(lshift(SBOX[rshift(w, 24)], 24), lshift(SBOX[band(rshift(w, 16), 0xff)], 16),
	    lshift(SBOX[band(rshift(w, 8), 0xff)], 8), SBOX[band(w, 0xff)])
end

-- The round keys of an AES key (a table of 16 or 32 bytes, 1-based).
local function aes_expand(key)
	local nk = #key / 4
	local nr = nk + 6
	local w, rcon = {}, 1
	for i = 0, nk - 1 do
		w[i] = be32(key, 4 * i + 1)
	end
	for i = nk, 4 * (nr + 1) - 1 do
		local t = w[i - 1]
		if i % nk == 0 then
			t = bxor(sub_word(bor(lshift(t, 8), rshift(t, 24))), lshift(rcon, 24))
			rcon = band(lshift(rcon, 1), 0xff)
			if rcon == 0 then
				rcon = 0x1b
			end
		elseif nk > 6 and i % nk == 4 then
			t = sub_word(t)
		end
		w[i] = bxor(w[i - nk], t)
	end
	return { w = w, nr = nr }
end

-- One block: four words in, four words out.
local function aes_block(ks, s0, s1, s2, s3)
	local w, t0, t1, t2, t3 = ks.w, TE[0], TE[1], TE[2], TE[3]
	s0, s1, s2, s3 = bxor(s0, w[0]), bxor(s1, w[1]), bxor(s2, w[2]), bxor(s3, w[3])
	for r = 1, ks.nr - 1 do
		local k = 4 * r
		s0, s1, s2, s3 =
		    bxor(t0[rshift(s0, 24)], t1[band(rshift(s1, 16), 0xff)],
			t2[band(rshift(s2, 8), 0xff)], t3[band(s3, 0xff)], w[k]),
		    bxor(t0[rshift(s1, 24)], t1[band(rshift(s2, 16), 0xff)],
			t2[band(rshift(s3, 8), 0xff)], t3[band(s0, 0xff)], w[k + 1]),
		    bxor(t0[rshift(s2, 24)], t1[band(rshift(s3, 16), 0xff)],
			t2[band(rshift(s0, 8), 0xff)], t3[band(s1, 0xff)], w[k + 2]),
		    bxor(t0[rshift(s3, 24)], t1[band(rshift(s0, 16), 0xff)],
			t2[band(rshift(s1, 8), 0xff)], t3[band(s2, 0xff)], w[k + 3])
	end
	local k = 4 * ks.nr
	local function last(a, b, c, d, rk)
		return bxor(bor(lshift(SBOX[rshift(a, 24)], 24), lshift(SBOX[band(rshift(b, 16), 0xff)], 16),
		    lshift(SBOX[band(rshift(c, 8), 0xff)], 8), SBOX[band(d, 0xff)]), rk)
	end
	return last(s0, s1, s2, s3, w[k]), last(s1, s2, s3, s0, w[k + 1]),
	    last(s2, s3, s0, s1, w[k + 2]), last(s3, s0, s1, s2, w[k + 3])
end

-- AES-GCM's counter mode: n bytes of keystream for the 12-byte nonce
-- (bytes, 1-based), from counter 2 on (1 is the tag's).
local function gcm_stream(ks, nonce, n)
	local out, n0, n1, n2 = {}, be32(nonce, 1), be32(nonce, 5), be32(nonce, 9)
	local ctr = 2
	while #out < n do
		local o = { aes_block(ks, n0, n1, n2, ctr) }
		for j = 1, 4 do
			local v = o[j]
			out[#out + 1] = rshift(v, 24)
			out[#out + 1] = band(rshift(v, 16), 0xff)
			out[#out + 1] = band(rshift(v, 8), 0xff)
			out[#out + 1] = band(v, 0xff)
		end
		ctr = ctr + 1
	end
	return out
end

-- ChaCha20 (RFC 8439): n bytes of keystream from block counter 1 on.
local function add32(a, b)
	return bit.tobit(a + b)
end

local function rotl32(x, n)
	return bor(lshift(x, n), rshift(x, 32 - n))
end

local function le32(b, i)
	return bor(b[i], lshift(b[i + 1], 8), lshift(b[i + 2], 16), lshift(b[i + 3], 24))
end

local function chacha_stream(key, nonce, n)
	local init = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 }
	for i = 0, 7 do
		init[5 + i] = le32(key, 4 * i + 1)
	end
	init[13] = 1
	for i = 0, 2 do
		init[14 + i] = le32(nonce, 4 * i + 1)
	end
	local out = {}
	local function qr(x, a, b, c, d)
		x[a] = add32(x[a], x[b]); x[d] = rotl32(bxor(x[d], x[a]), 16)
		x[c] = add32(x[c], x[d]); x[b] = rotl32(bxor(x[b], x[c]), 12)
		x[a] = add32(x[a], x[b]); x[d] = rotl32(bxor(x[d], x[a]), 8)
		x[c] = add32(x[c], x[d]); x[b] = rotl32(bxor(x[b], x[c]), 7)
	end
	while #out < n do
		local x = {}
		for i = 1, 16 do
			x[i] = init[i]
		end
		for _ = 1, 10 do
			qr(x, 1, 5, 9, 13); qr(x, 2, 6, 10, 14); qr(x, 3, 7, 11, 15); qr(x, 4, 8, 12, 16)
			qr(x, 1, 6, 11, 16); qr(x, 2, 7, 12, 13); qr(x, 3, 8, 9, 14); qr(x, 4, 5, 10, 15)
		end
		for i = 1, 16 do
			local v = add32(x[i], init[i])
			out[#out + 1] = band(v, 0xff)
			out[#out + 1] = band(rshift(v, 8), 0xff)
			out[#out + 1] = band(rshift(v, 16), 0xff)
			out[#out + 1] = band(rshift(v, 24), 0xff)
		end
		init[13] = init[13] + 1
	end
	return out
end

local function hex_bytes(h)
	local b = {}
	for i = 1, #h - 1, 2 do
		b[#b + 1] = tonumber(h:sub(i, i + 1), 16)
	end
	return b
end

-- The directions of the key log's sessions: { gcm, key (expanded for
-- AES), iv } each.
local psk_dirs, psk_file, psk_by_sid = {}, nil, {}

local function psk_load()
	local file = toud.prefs.keylog_file
	if file == psk_file then
		return
	end
	psk_file, psk_dirs, psk_by_sid = file, {}, {}
	local f = file ~= "" and io.open(file, "r")
	if not f then
		return
	end
	for line in f:lines() do
		local kind, cr, ck, sk, civ, siv = line:match(
		    "^TOUD_(%u+)_DATA_KEYS (%x+) (%x+) (%x+) (%x+) (%x+)%s*$")
		local label = ({ PSK = "the preshared key",
		    PQ = "the ML-KEM-768 exchange's keys" })[kind]
		if cr and label then
			for _, d in ipairs({ { ck, civ }, { sk, siv } }) do
				local key, iv = hex_bytes(d[1]), hex_bytes(d[2])
				local gcm = #iv == 4
				psk_dirs[#psk_dirs + 1] = { gcm = gcm, iv = iv, label = label,
				    key = gcm and aes_expand(key) or key }
			end
		end
	end
	f:close()
end

-- Whether p (bytes, 1-based, n of them) is inner framing a toud
-- receiver would take.
local inner_ctl_len = { [1] = 4, [2] = 12, [3] = 12, [4] = 4, [6] = 1092, [7] = 5, [8] = 4 }
local function plausible(p, n)
	if n < 4 then
		return false
	end
	local v = rshift(p[1], 4)
	if v == 4 then
		return n >= 20 and p[3] * 256 + p[4] == n
	elseif v == 6 then
		return n >= 40 and p[5] * 256 + p[6] + 40 == n
	elseif p[3] ~= 0 or p[4] ~= 0 then
		return false
	elseif p[1] == 0x20 and p[2] == 5 then
		return n > 6 and n <= 1190         -- PQ_INIT: offset, a piece of the key
	elseif p[1] == 0x20 then
		return inner_ctl_len[p[2]] == n
	end
	return p[1] == 0 and ipproto_names[p[2]] ~= nil and p[2] ~= 59
end

-- Decrypt record rec (a Tvb: header, [explicit nonce,] ciphertext, tag)
-- with direction d; the plaintext bytes, or nil if they are not inner
-- framing.
local function psk_try(d, raw)
	local pre = d.gcm and DTLS_HDR + 8 or DTLS_HDR
	local n = #raw - pre - 16
	if n < 4 then
		return nil
	end
	local nonce = {}
	for i = 1, #d.iv do
		nonce[i] = d.iv[i]
	end
	if d.gcm then
		for i = 1, 8 do
			nonce[4 + i] = raw:byte(DTLS_HDR + i)
		end
	else
		for i = 1, 8 do
			nonce[4 + i] = bxor(nonce[4 + i], raw:byte(3 + i))
		end
	end
	local stream = d.gcm and gcm_stream or chacha_stream
	local first = stream(d.key, nonce, 16)
	local p = {}
	for i = 1, math.min(16, n) do
		p[i] = bxor(raw:byte(pre + i), first[i])
	end
	if not plausible(p, n) then
		return nil
	end
	local ks = stream(d.key, nonce, n)
	for i = 1, n do
		p[i] = bxor(raw:byte(pre + i), ks[i])
	end
	return p
end

-- The plaintext of an application-data record of session sid, as a hex
-- string, and the keys' name; or nil.
local psk_frames = {}
local function psk_decrypt(number, sid, rec)
	psk_load()
	if #psk_dirs == 0 then
		return nil
	end
	local done = psk_frames[number]
	if done ~= nil then
		if not done then
			return nil
		end
		return done[1], done[2]
	end
	local raw = rec:raw()
	local order, known = {}, psk_by_sid[sid]
	if known then
		order[1] = known
	end
	for i = 1, #psk_dirs do
		if i ~= known then
			order[#order + 1] = i
		end
	end
	for _, i in ipairs(order) do
		local p = psk_try(psk_dirs[i], raw)
		if p then
			psk_by_sid[sid] = i
			local h = {}
			for j = 1, #p do
				h[j] = string.format("%02x", p[j])
			end
			psk_frames[number] = { table.concat(h), psk_dirs[i].label }
			return psk_frames[number][1], psk_dirs[i].label
		end
	end
	psk_frames[number] = false
	return nil
end

-- Records on a path other than the handshake's.  Wireshark's DTLS keeps a
-- session's keys with the UDP conversation its handshake ran on; a node
-- whose address changed sends the same session's records from another
-- address, under another session ID (doc/protocol.md 1.2), in a
-- conversation with no handshake.  So the keys are found by the session,
-- not the conversation: each conversation that carried a handshake is a
-- *home*, and a data record in a conversation that is none is handed to
-- the DTLS dissector as if it came on the home its session belongs to
-- (the addresses and ports of the packet swapped for the home's while it
-- runs).  Which home that is, the clear text does not say: the homes that
-- share an endpoint (the end that did not move) with the record are
-- candidates, and with more than one each is tried, the newest first,
-- until the record decrypts to inner framing (inner.dissector ran); the
-- one found is kept for the record's session ID (none found: the ID is
-- not tried again).  A record tried on another home first also shows
-- that try's DTLS record, undecrypted.
local homes, home_of_conv, home_of_sid = {}, {}, {}

local function endpoint(addr, port)
	return tostring(addr) .. "/" .. port
end

local function conv_key(pinfo)
	local a = endpoint(pinfo.src, pinfo.src_port)
	local b = endpoint(pinfo.dst, pinfo.dst_port)
	return a < b and a .. " " .. b or b .. " " .. a
end

-- A handshake record: its conversation is (or stays) a home.
local function home_add(pinfo)
	local key = conv_key(pinfo)
	if home_of_conv[key] then
		return
	end
	homes[#homes + 1] = {
		{ addr = pinfo.src, port = pinfo.src_port, key = endpoint(pinfo.src, pinfo.src_port) },
		{ addr = pinfo.dst, port = pinfo.dst_port, key = endpoint(pinfo.dst, pinfo.dst_port) },
	}
	home_of_conv[key] = #homes
end

-- How home i maps this packet's endpoints: { src, dst } (the home's
-- endpoints, in the packet's direction), or nil when it shares none.
local function home_map(i, pinfo)
	local h = homes[i]
	local src = endpoint(pinfo.src, pinfo.src_port)
	local dst = endpoint(pinfo.dst, pinfo.dst_port)
	for k = 1, 2 do
		local o = h[3 - k]
		if h[k].key == dst then
			return { o, h[k] }
		elseif h[k].key == src then
			return { h[k], o }
		end
	end
	return nil
end

-- Call the DTLS dissector on rec as if it came on home i.
local function dtls_as_home(d, i, rec, pinfo, tree, t)
	local m = home_map(i, pinfo)
	local src, dst, sp, dp = pinfo.src, pinfo.dst, pinfo.src_port, pinfo.dst_port
	pinfo.src, pinfo.src_port = m[1].addr, m[1].port
	pinfo.dst, pinfo.dst_port = m[2].addr, m[2].port
	call_safe(d, "dtls", rec, pinfo, tree, t, e_malformed)
	pinfo.src, pinfo.dst, pinfo.src_port, pinfo.dst_port = src, dst, sp, dp
end

-- The homes to try for a data record of session sid, in order.
local function home_cands(sid, pinfo)
	local known = home_of_sid[sid]
	if known == false then
		return {}
	elseif known and home_map(known, pinfo) then
		return { known }
	end
	local cands = {}
	for i = #homes, 1, -1 do
		if home_map(i, pinfo) then
			cands[#cands + 1] = i
		end
	end
	return cands
end

-- Hand record rec (session ID sid) to the DTLS dissector d: in its own
-- conversation, or on its session's home (above).  Another pass over the
-- frame makes the same calls as the first (the DTLS dissector finds what
-- it decrypted by the call's place in the frame).
local home_tries = {}
local function dtls_call(d, rec, sid, pinfo, tree, t)
	local rt, epoch = rec(0, 1):uint(), rec(3, 2):uint()
	if rt == 22 and epoch == 0 then
		home_add(pinfo)
	end
	local tries = home_tries[pinfo.number]
	if not tries then
		local cands = {}
		if rt == 23 and epoch ~= 0 and not home_of_conv[conv_key(pinfo)] then
			cands = home_cands(sid, pinfo)
		end
		tries, inner_ran = {}, nil
		for _, i in ipairs(cands) do
			tries[#tries + 1] = i
			dtls_as_home(d, i, rec, pinfo, tree, t)
			if #cands == 1 or inner_ran == pinfo.number then
				home_of_sid[sid] = i
				break
			end
		end
		if #cands > 1 and inner_ran ~= pinfo.number then
			home_of_sid[sid] = false
		end
		home_tries[pinfo.number] = tries
		if #tries > 0 then
			return
		end
	elseif #tries > 0 then
		for _, i in ipairs(tries) do
			dtls_as_home(d, i, rec, pinfo, tree, t)
		end
		return
	end
	call_safe(d, "dtls", rec, pinfo, tree, t, e_malformed)
end

function toud.init()
	psk_file, psk_frames = nil, {}
	homes, home_of_conv, home_of_sid, home_tries, inner_ran = {}, {}, {}, {}, nil
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
		dtls_call(h.dtls, rec, sid, pinfo, tree, t)
	else
		t:add_proto_expert_info(e_no_dissector, "no DTLS dissector")
		call_data(rec, pinfo, tree)
	end
	-- application data of the data epoch: with a preshared key, opened here
	if rec:len() > DTLS_HDR + 16 and rec(0, 1):uint() == 23 and rec(3, 2):uint() == 1 then
		local hex, label = psk_decrypt(pinfo.number, sid, rec)
		if hex then
			dissect_inner(ByteArray.new(hex):tvb("Decrypted with " .. label), pinfo, tree)
		end
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
