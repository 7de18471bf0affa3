"""The Wireshark view of the control protocol (nanobpf-genctrl --lua, `make wireshark`): a Lua dissector of
control frames and of the data-frame shim, generated from hw/defs/ctrl.toml. Its tables come from the
definitions; the dissector itself (LUA_RUNTIME) is the same for every definition and reads only them."""
from nanobpf.gen.common import DefsError
from nanobpf.gen.ctrl import BANNER, is_array


# Names the dissector's fixed part relies on; the generator refuses definitions without them.
LUA_NEEDS = {"struct": {"ctrl_hdr": ("version", "type", "flags", "status", "seq", "length"),
                        "shim": ("flags", "cid_len")},
             "const": {"limit": ("MAX_BODY", "MAX_ERRMSG", "MAX_CID", "NONCE_LEN", "TAG_LEN"), "msg": (), "status": ("OK",),
                       "flag": ("RESPONSE",), "shim_flag": ("ENCRYPT",)}}
# Field abbreviations the fixed part registers itself (generated ones must not collide with them).
LUA_FIXED = ("nanobpf.body", "nanobpf.nonce", "nanobpf.tag", "nanobpf.encrypted", "nanobpf.errmsg", "nanobpf.padding", "nanobpf.malformed", "nanobpf.invalid",
             "nanobpf.error", "nanobpf_shim.ethertype", "nanobpf_shim.dcid", "nanobpf_shim.malformed")


def lua_str(s):
    """A Lua string literal (bytes above 0x7F and controls as decimal escapes: valid in Lua 5.1 to 5.4)."""
    out = []
    for b in str(s).encode():
        c = chr(b)
        out.append("\\\\" if c == "\\" else '\\"' if c == '"' else c if 0x20 <= b < 0x7F else f"\\{b}")
    return '"' + "".join(out) + '"'


def lua_dissector(defs):
    p = defs["protocol"]
    groups = {g["group"]: g for g in defs["const"]}
    structs = {s["name"]: s for s in defs["structs"]}
    for sname, fields in LUA_NEEDS["struct"].items():
        have = {f["name"] for f in structs.get(sname, {}).get("fields", [])}
        if sname not in structs or not set(fields) <= have:
            raise DefsError(f"the Wireshark dissector needs struct {sname} with fields {', '.join(fields)}")
    for gname, names in LUA_NEEDS["const"].items():
        if gname not in groups or not set(names) <= {v["name"] for v in groups[gname]["values"]}:
            raise DefsError(f"the Wireshark dissector needs const group {gname} with {', '.join(names) or 'values'}")
    hdr = {f["name"]: f for f in structs["ctrl_hdr"]["fields"]}
    shim = {f["name"]: f for f in structs["shim"]["fields"]}
    if (hdr["type"].get("enum"), hdr["status"].get("enum"), hdr["flags"].get("bits"), shim["flags"].get("bits")) != \
            ("msg", "status", "flag", "shim_flag"):
        raise DefsError("the Wireshark dissector needs ctrl_hdr type enum = msg, status enum = status, "
                        "flags bits = flag and shim flags bits = shim_flag")
    abbrs = list(LUA_FIXED)

    def abbr(sname, fname=None):
        if sname == "ctrl_hdr":
            return f"nanobpf.{fname}"
        if sname == "shim":
            return f"nanobpf_shim.{fname}"
        return f"nanobpf.{sname}" + (f".{fname}" if fname else "")

    used = {"limit", "msg", "status"}
    used |= {f[k] for s in defs["structs"] for f in s["fields"] for k in ("enum", "bits") if k in f}
    o = [f"-- {BANNER}",
         "-- Wireshark dissector of the NanoBPF control protocol and of the data-frame metadata shim",
         "-- (docs/control.md). `make wireshark` installs it into ~/.local/lib/wireshark/plugins/; or",
         "-- tshark -X lua_script:nanobpf.lua -r FILE.pcap. Display filters: nanobpf, nanobpf_shim.",
         "",
         "-- ---------------------------------------------------------------- from hw/defs/ctrl.toml",
         f"local ETHERTYPE = 0x{p['ethertype']:04X}",
         f"local SHIM_ETHERTYPE = 0x{p['shim_ethertype']:04X}",
         f"local VERSION = {p['version']}",
         f"local MIN_VERSION = {p['min_version']}",
         "",
         "-- const groups: GROUPS[group] = { { value, name, desc }, ... } in definition order",
         "local GROUPS = {"]
    for g in defs["const"]:
        if g["group"] not in used:
            continue
        o.append(f"  {g['group']} = {{")
        for v in g["values"]:
            o.append(f"    {{ value = {v['value']}, name = {lua_str(v['name'])}, desc = {lua_str(v['desc'])} }},")
        o.append("  },")
    o += ["}", "", "-- wire structs (big-endian, packed): offsets and sizes in bytes; kind u8/u16/u32/u64/bytes/str",
          "local STRUCT_ORDER = { " + ", ".join(lua_str(s["name"]) for s in defs["structs"]) + " }", "local STRUCTS = {"]
    for s in defs["structs"]:
        inline = s["name"] in ("ctrl_hdr", "shim")       # their fields sit right under the protocol's tree
        head = f"  {s['name']} = {{ proto = {lua_str('shim' if s['name'] == 'shim' else 'ctrl')}, size = {s['size']}, "
        if not inline:
            head += f"abbr = {lua_str(abbr(s['name']))}, "
            abbrs.append(abbr(s["name"]))
        o.append(head + f"desc = {lua_str(s['desc'])}, fields = {{")
        for f in s["fields"]:
            kind = "str" if f["base"] == "char" else "bytes" if is_array(f) else f["base"]
            a = abbr(s["name"], f["name"])
            abbrs.append(a)
            extra = "".join(f", {k} = {lua_str(f[k])}" for k in ("enum", "bits") if k in f)
            if "bits" in f:
                abbrs += [f"{a}.{v['name'].lower()}" for v in groups[f["bits"]]["values"]]
            o.append(f"    {{ name = {lua_str(f['name'])}, kind = {lua_str(kind)}, off = {f['offset']}, size = {f['size']}, "
                     f"abbr = {lua_str(a)}{extra}, desc = {lua_str(f['desc'])} }},")
        o.append("  } },")
    o.append("}")

    def spec(parts):
        items = []
        for kind, name, field in parts:
            field = f", field = {lua_str(field)}" if field else ""
            items.append(f"{{ kind = {lua_str(kind)}, name = {lua_str(name)}{field} }}")
        return "{ " + ", ".join(items) + " }"

    parts = {}
    o += ["", "-- message bodies: REQUEST[type], RESPONSE[type] (status OK), STATUS_BODY[status] (other statuses",
          "-- without an entry carry the device's UTF-8 error text); parts: struct, array, counted (bytes, as many",
          "-- as the leading struct's field says), rest (the rest of the body)"]
    for table, group, key in (("REQUEST", "msg", "req"), ("RESPONSE", "msg", "resp"), ("STATUS_BODY", "status", "body")):
        o.append(f"local {table} = {{")
        for v in groups[group]["values"]:
            if key + "_parts" in v:
                o.append(f"  [0x{v['value']:02X}] = {spec(v[key + '_parts'])},   -- {v['name']}")
                for kind, name, field in v[key + "_parts"]:
                    if kind in ("counted", "rest"):
                        what = f"{field} bytes" if field else "the rest of the body"
                        side = {"req": "request", "resp": "response", "body": "response"}[key]
                        parts.setdefault(name, {}).setdefault((side, what), []).append(v["name"])
        o.append("}")
    o.append("-- byte strings of bodies (fields nanobpf.body.NAME)")
    o.append("local PARTS = {")
    for name, uses in sorted(parts.items()):
        abbrs.append(f"nanobpf.body.{name}")
        desc = "; ".join(f"{'/'.join(msgs)} {side}: {what}" for (side, what), msgs in uses.items())
        o.append(f"  {{ name = {lua_str(name)}, abbr = {lua_str('nanobpf.body.' + name)}, desc = {lua_str(desc)} }},")
    o.append("}")
    dup = sorted({a for a in abbrs if abbrs.count(a) > 1})
    if dup:
        raise DefsError(f"Wireshark field names used twice: {', '.join(dup)} (rename the struct, field or body part)")
    return "\n".join(o) + "\n" + LUA_RUNTIME

# The dissector itself: the same for every definition; it reads only the tables above.
LUA_RUNTIME = r'''
-- ---------------------------------------------------------------- the dissector (nanobpf-genctrl)
local ctrl_proto = Proto("nanobpf", "NanoBPF control protocol")
local shim_proto = Proto("nanobpf_shim", "NanoBPF data-frame shim")
-- A request's body is encrypted under the device key (docs/control.md "The device key"): shown as bytes,
-- unless the capture is one `nanobpf-ctrl-key decrypt` wrote (its request bodies in clear). Tags are
-- not checked here: the dissector has no key.
ctrl_proto.prefs.decrypted = Pref.bool("Request bodies in clear", false,
  "the capture's control requests were decrypted by nanobpf-ctrl-key decrypt: decode their bodies")

local NAMES, CONST = {}, {}
for group, values in pairs(GROUPS) do
  NAMES[group], CONST[group] = {}, {}
  for _, v in ipairs(values) do
    NAMES[group][v.value] = v.name
    CONST[group][v.name] = v.value
  end
end
local LIMIT = CONST.limit
local F_RESPONSE = CONST.flag.RESPONSE
local ST_OK = CONST.status.OK
local SHIM_ENCRYPT = CONST.shim_flag.ENCRYPT
local TEXT = {}             -- body spec of error responses: the device's UTF-8 error text

-- plain arithmetic: the bit operations differ between the Lua versions Wireshark builds use (5.1 to 5.4)
local function has_bit(v, bit)
  return math.floor(v / bit) % 2 == 1
end

local function unknown_bits(v, group)
  for _, b in ipairs(GROUPS[group]) do
    if has_bit(v, b.value) then v = v - b.value end
  end
  return v
end

local function flag_names(group)
  local names = {}
  for _, b in ipairs(GROUPS[group]) do names[#names + 1] = b.name end
  return table.concat(names, ", ")
end

-- sparse codes (message types) read best in hex, codes counting from 0 in decimal
local function enum_base(group)
  for i, v in ipairs(GROUPS[group]) do
    if v.value ~= i - 1 then return base.HEX end
  end
  return base.DEC
end

-- ---------------------------------------------------------------- fields
local PF, ctrl_fields, shim_fields = {}, {}, {}
local INT = { u8 = ProtoField.uint8, u16 = ProtoField.uint16, u32 = ProtoField.uint32, u64 = ProtoField.uint64 }

for _, sname in ipairs(STRUCT_ORDER) do
  local s = STRUCTS[sname]
  local list = s.proto == "shim" and shim_fields or ctrl_fields
  if s.abbr then
    PF[sname] = ProtoField.none(s.abbr, sname, s.desc)
    list[#list + 1] = PF[sname]
  end
  for _, f in ipairs(s.fields) do
    local key = sname .. "." .. f.name
    if f.kind == "bytes" then
      PF[key] = ProtoField.bytes(f.abbr, f.name, base.NONE, f.desc)
    elseif f.kind == "str" then
      PF[key] = ProtoField.string(f.abbr, f.name, base.ASCII, f.desc)
    else
      local disp = base.DEC
      if f.bits then
        disp = base.HEX
      elseif f.enum then
        disp = enum_base(f.enum)
      elseif f.size >= 4 then
        disp = base.DEC_HEX
      end
      PF[key] = INT[f.kind](f.abbr, f.name, disp, f.enum and NAMES[f.enum] or nil, nil, f.desc)
    end
    list[#list + 1] = PF[key]
    if f.bits then
      for _, b in ipairs(GROUPS[f.bits]) do
        local bf = ProtoField.bool(f.abbr .. "." .. string.lower(b.name), b.name, f.size * 8, nil, b.value, b.desc)
        PF[key .. "/" .. b.name] = bf
        list[#list + 1] = bf
      end
    end
  end
end
for _, p in ipairs(PARTS) do
  PF["part." .. p.name] = ProtoField.bytes(p.abbr, p.name, base.NONE, p.desc)
  ctrl_fields[#ctrl_fields + 1] = PF["part." .. p.name]
end
PF.body = ProtoField.bytes("nanobpf.body", "body", base.NONE, "message body (ctrl_hdr.length bytes)")
PF.nonce = ProtoField.bytes("nanobpf.nonce", "nonce", base.NONE,
  "the request's nonce (a response repeats its request's)")
PF.tag = ProtoField.bytes("nanobpf.tag", "tag", base.NONE,
  "request: AES-128-GCM tag under K_req; response: AES-CMAC under K_resp (not checked here)")
PF.encrypted = ProtoField.bytes("nanobpf.encrypted", "encrypted body", base.NONE,
  "a request's body, encrypted under the device key")
PF.errmsg = ProtoField.string("nanobpf.errmsg", "error text", base.UNICODE, "the device's UTF-8 error text")
PF.padding = ProtoField.bytes("nanobpf.padding", "padding", base.NONE,
  "bytes after the body (the Ethernet minimum frame): ignored")
PF.shim_ethertype = ProtoField.uint16("nanobpf_shim.ethertype", "inner EtherType", base.HEX, nil, nil,
  "the frame's own EtherType, after the shim")
PF.dcid = ProtoField.bytes("nanobpf_shim.dcid", "dcid", base.NONE,
  "destination CID the device seals with: cid_len bytes after the inner QUIC short header's first byte")
for _, f in ipairs({ PF.body, PF.nonce, PF.tag, PF.encrypted, PF.errmsg, PF.padding }) do ctrl_fields[#ctrl_fields + 1] = f end
for _, f in ipairs({ PF.shim_ethertype, PF.dcid }) do shim_fields[#shim_fields + 1] = f end

local EX = {
  malformed = ProtoExpert.new("nanobpf.malformed", "Malformed control frame", expert.group.MALFORMED,
    expert.severity.ERROR),
  invalid = ProtoExpert.new("nanobpf.invalid", "Control field out of range", expert.group.PROTOCOL,
    expert.severity.WARN),
  error = ProtoExpert.new("nanobpf.error", "Error response", expert.group.RESPONSE_CODE, expert.severity.NOTE),
  shim = ProtoExpert.new("nanobpf_shim.malformed", "Malformed shim (dropped by the device or the driver)",
    expert.group.MALFORMED, expert.severity.ERROR),
}
ctrl_proto.fields = ctrl_fields
shim_proto.fields = shim_fields
ctrl_proto.experts = { EX.malformed, EX.invalid, EX.error }
shim_proto.experts = { EX.shim }

-- ---------------------------------------------------------------- structs and bodies
local function value_text(f, v)
  if f.enum then return NAMES[f.enum][v] or tostring(v) end
  if f.kind == "str" then return '"' .. v .. '"' end
  if f.bits then return string.format("0x%02x", v) end
  return tostring(v)
end

-- Adds struct sname at off, as much of it as avail bytes hold (whole fields only), in a subtree of its own
-- (labelled with its values) unless inline. Returns the values by field name, whether it was whole, and
-- the tree.
local function add_struct(parent, tvb, off, sname, avail, inline, index)
  local s = STRUCTS[sname]
  local tree = parent
  if not inline then tree = parent:add(PF[sname], tvb(off, math.min(avail, s.size))) end
  local vals, summary = {}, {}
  for _, f in ipairs(s.fields) do
    if f.off + f.size > avail then break end
    local r = tvb(off + f.off, f.size)
    local key = sname .. "." .. f.name
    local v, item
    if f.kind == "bytes" then
      v = r:bytes()
      item = tree:add(PF[key], r)
    elseif f.kind == "str" then
      local z = string.find(r:raw(), "\0", 1, true)      -- NUL-padded
      local len = z and z - 1 or f.size
      v = len > 0 and r:range(0, len):string(ENC_UTF_8) or ""
      item = tree:add(PF[key], r, v)
    else
      v = f.kind == "u64" and r:uint64() or r:uint()
      item = tree:add(PF[key], r)
      if f.bits then
        for _, b in ipairs(GROUPS[f.bits]) do item:add(PF[key .. "/" .. b.name], r) end
        if unknown_bits(v, f.bits) ~= 0 then
          item:add_proto_expert_info(EX.invalid, string.format("%s.%s 0x%02x: unknown bits (known: %s)", sname,
            f.name, v, flag_names(f.bits)))
        end
      elseif f.enum and NAMES[f.enum][v] == nil then
        item:add_proto_expert_info(EX.invalid, string.format("%s.%s %d: no %s of that value", sname, f.name, v, f.enum))
      end
    end
    vals[f.name] = v
    if f.name == "reserved" then
      if r:raw() ~= string.rep("\0", f.size) then
        item:add_proto_expert_info(EX.invalid, sname .. ".reserved: not zero")
      end
    elseif f.kind ~= "bytes" then
      summary[#summary + 1] = f.name .. "=" .. value_text(f, v)
    end
  end
  if not inline then
    local label = sname .. (index and ("[" .. index .. "]") or "")
    if #summary > 0 then label = label .. ": " .. table.concat(summary, ", ") end
    tree:set_text(label)
  end
  return vals, avail >= s.size, tree
end

-- Decodes a body (len bytes at off) by spec under tree. Returns the error text of an error response, and
-- whether the body was malformed.
local function dissect_body(tvb, off, len, spec, tree, what)
  if spec == TEXT then
    if len == 0 then return nil, false end
    local r = tvb(off, len)
    local text = r:string(ENC_UTF_8)
    local item = tree:add(PF.errmsg, r, text)
    if len > LIMIT.MAX_ERRMSG then
      item:add_proto_expert_info(EX.invalid, string.format("error text of %d bytes, at most %d", len, LIMIT.MAX_ERRMSG))
    end
    return text, false
  end
  local pos, stop, head = off, off + len, nil
  for _, p in ipairs(spec) do
    if p.kind == "struct" then
      local size = STRUCTS[p.name].size
      if stop - pos < size then
        tree:add_proto_expert_info(EX.malformed, string.format("%s: %d bytes, %s needs %d", what, stop - pos, p.name,
          size))
        if stop > pos then add_struct(tree, tvb, pos, p.name, stop - pos) end
        return nil, true
      end
      head = add_struct(tree, tvb, pos, p.name, size)
      pos = pos + size
    elseif p.kind == "array" then
      local size, i = STRUCTS[p.name].size, 0
      while stop - pos >= size do
        add_struct(tree, tvb, pos, p.name, size, false, i)
        pos, i = pos + size, i + 1
      end
    elseif p.kind == "counted" then
      local want = head[p.field]
      if want > stop - pos then
        tree:add_proto_expert_info(EX.malformed, string.format("%s: %s %d, but %d bytes are left", what, p.field, want,
          stop - pos))
        if stop > pos then tree:add(PF["part." .. p.name], tvb(pos, stop - pos)) end
        return nil, true
      end
      if want > 0 then tree:add(PF["part." .. p.name], tvb(pos, want)) end
      pos = pos + want
    elseif stop > pos then        -- rest
      tree:add(PF["part." .. p.name], tvb(pos, stop - pos))
      pos = stop
    end
  end
  if pos < stop then
    tree:add_proto_expert_info(EX.malformed, string.format("%s: %d bytes more than its layout", what, stop - pos))
    return nil, true
  end
  return nil, false
end

-- ---------------------------------------------------------------- control frames
function ctrl_proto.dissector(tvb, pinfo, tree)
  local n = tvb:len()
  local H = STRUCTS.ctrl_hdr
  pinfo.cols.protocol = "NanoBPF"
  local t = n > 0 and tree:add(ctrl_proto, tvb(0, math.min(n, H.size))) or tree:add(ctrl_proto)
  local h, whole = add_struct(t, tvb, 0, "ctrl_hdr", n, true)
  local tname = h.type and (NAMES.msg[h.type] or string.format("type 0x%02x", h.type))
  local dir = (h.flags and has_bit(h.flags, F_RESPONSE)) and "response" or "request"
  if not whole then
    t:add_proto_expert_info(EX.malformed, string.format("%d bytes after the EtherType: ctrl_hdr needs %d", n, H.size))
    pinfo.cols.info = string.format("%s malformed: %d of %d header bytes", tname and (tname .. " " .. dir) or
      "control frame", n, H.size)
    return n
  end
  local resp = dir == "response"
  local info = { tname, dir }
  if resp then info[#info + 1] = NAMES.status[h.status] or ("status " .. h.status) end
  info[#info + 1] = "seq=" .. h.seq
  for _, b in ipairs(GROUPS.flag) do
    if b.value ~= F_RESPONSE and has_bit(h.flags, b.value) then info[#info + 1] = "[" .. b.name .. "]" end
  end
  if h.version == 0 then
    t:add_proto_expert_info(EX.malformed, "version 0")
  elseif h.version > VERSION then
    t:add_proto_expert_info(EX.invalid, string.format("version %d: newer than this dissector's (%d..%d)", h.version,
      MIN_VERSION, VERSION))
  end
  if not resp and h.status ~= 0 then
    t:add_proto_expert_info(EX.invalid, string.format("request with status %d (requests carry 0)", h.status))
  end
  -- the nonce after the header, the tag after the body
  local NONCE, TAG = LIMIT.NONCE_LEN, LIMIT.TAG_LEN
  local boff = H.size + NONCE
  if n < boff + TAG then
    t:add_proto_expert_info(EX.malformed, string.format("%d bytes after the EtherType: header, nonce and tag need %d",
      n, boff + TAG))
    pinfo.cols.info = table.concat(info, " ") .. " (malformed)"
    if n > H.size then t:add(PF.body, tvb(H.size)) end
    return n
  end
  t:add(PF.nonce, tvb(H.size, NONCE))
  local blen, avail, bad = h.length, n - boff - TAG, false
  if blen > LIMIT.MAX_BODY then
    t:add_proto_expert_info(EX.malformed, string.format("length %d: above MAX_BODY %d", blen, LIMIT.MAX_BODY))
    bad = true
  end
  if blen > avail then
    t:add_proto_expert_info(EX.malformed, string.format("length %d: only %d bytes follow the nonce and leave the tag",
      blen, avail))
    blen, bad = avail, true
  end
  t:set_len(boff + blen + TAG)
  local clear = resp or ctrl_proto.prefs.decrypted
  local spec                              -- nil: an unknown type's body stays bytes
  if resp and h.status ~= ST_OK then
    spec = STATUS_BODY[h.status] or TEXT  -- whatever the type (BAD_TYPE answers unknown ones)
    t:add_proto_expert_info(EX.error, string.format("%s response: %s", tname, info[3]))
  elseif NAMES.msg[h.type] ~= nil then
    spec = (resp and RESPONSE or REQUEST)[h.type] or {}
  end
  local text
  if not clear then
    if blen > 0 then t:add(PF.encrypted, tvb(boff, blen)) end
    if blen > 0 then info[#info + 1] = "[encrypted]" end
  else
    local btree = blen > 0 and t:add(PF.body, tvb(boff, blen)) or t
    if spec then
      local body_bad
      text, body_bad = dissect_body(tvb, boff, blen, spec, btree, tname .. " " .. dir .. " body")
      bad = bad or body_bad
    end
  end
  t:add(PF.tag, tvb(boff + blen, TAG))
  local s = table.concat(info, " ")
  if bad then s = s .. " (malformed)" end
  if text then s = s .. ': "' .. text .. '"' end
  pinfo.cols.info = s
  -- Wireshark 4.0's Lua cannot shorten the tvb for Ethernet to show its padding: show it here
  if n > boff + blen + TAG then t:add(PF.padding, tvb(boff + blen + TAG)) end
  return n
end

-- ---------------------------------------------------------------- data-frame shim
local ethertypes = DissectorTable.get("ethertype")
local IPV4, IPV6, UDP = 0x0800, 0x86DD, 17

-- offset of the UDP payload of the IPv4/IPv6 packet at off, nil if it is not one (or a fragment)
local function udp_payload(tvb, off, etype)
  local n = tvb:len()
  if etype == IPV4 and n >= off + 20 then
    local vihl = tvb(off, 1):uint()
    local ihl = (vihl % 16) * 4
    local fragment = tvb(off + 6, 2):uint() % 0x2000 ~= 0
    if math.floor(vihl / 16) ~= 4 or ihl < 20 or tvb(off + 9, 1):uint() ~= UDP or fragment then
      return nil
    end
    return off + ihl + 8
  elseif etype == IPV6 and n >= off + 40 and tvb(off + 6, 1):uint() == UDP then
    return off + 48
  end
  return nil
end

function shim_proto.dissector(tvb, pinfo, tree)
  local n = tvb:len()
  local need = STRUCTS.shim.size + 2       -- the shim, then the frame's own EtherType
  pinfo.cols.protocol = "NanoBPF"
  local t = n > 0 and tree:add(shim_proto, tvb(0, math.min(n, need))) or tree:add(shim_proto)
  local v = add_struct(t, tvb, 0, "shim", n, true)
  if n < need then
    t:add_proto_expert_info(EX.shim, string.format("%d bytes after the EtherType: the shim and the inner EtherType "
      .. "need %d", n, need))
    pinfo.cols.info = "shim malformed: truncated"
    return n
  end
  local er = tvb(need - 2, 2)
  local inner = er:uint()
  t:add(PF.shim_ethertype, er)
  local fname = NAMES.shim_flag[v.flags]
  local problems = {}
  if not fname then
    problems[#problems + 1] = string.format("flags 0x%02x: exactly one of %s", v.flags, flag_names("shim_flag"))
  end
  if v.cid_len > LIMIT.MAX_CID then
    problems[#problems + 1] = string.format("cid_len %d: above MAX_CID %d", v.cid_len, LIMIT.MAX_CID)
  end
  if v.cid_len ~= 0 and v.flags ~= SHIM_ENCRYPT then
    problems[#problems + 1] = string.format("cid_len %d without %s", v.cid_len, NAMES.shim_flag[SHIM_ENCRYPT])
  end
  if inner < 0x600 or inner == ETHERTYPE or inner == SHIM_ETHERTYPE then
    problems[#problems + 1] = string.format("inner EtherType 0x%04x", inner)
  end
  for _, p in ipairs(problems) do t:add_proto_expert_info(EX.shim, p) end
  if v.flags == SHIM_ENCRYPT and v.cid_len > 0 and v.cid_len <= LIMIT.MAX_CID then
    local p = udp_payload(tvb, need, inner)
    if p and n >= p + 1 + v.cid_len and tvb(p, 1):uint() < 0x80 then      -- a short header
      t:add(PF.dcid, tvb(p + 1, v.cid_len))
    end
  end
  local info = "shim " .. (fname or string.format("flags=0x%02x", v.flags)) .. " cid_len=" .. v.cid_len
  if #problems > 0 then info = info .. " (malformed)" end
  pinfo.cols.info = info
  if n > need then
    ethertypes:try(inner, tvb(need):tvb(), pinfo, tree)
    -- the inner dissectors write their own columns: keep the shim in front
    local proto, text = tostring(pinfo.cols.protocol), tostring(pinfo.cols.info)
    if proto ~= "NanoBPF" then pinfo.cols.protocol = "NanoBPF/" .. proto end
    if text ~= info and string.sub(text, 1, #info) ~= info then pinfo.cols.info = info .. " | " .. text end
  end
  return n
end

ethertypes:add(ETHERTYPE, ctrl_proto)
ethertypes:add(SHIM_ETHERTYPE, shim_proto)
'''
