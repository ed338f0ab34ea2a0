-- Cairn's scripting prelude: the `redis` library, the error handler and
-- global protection, over the Rust functions in `impl` (see lua_env.rs).
-- Compiled once per process (prelude_chunk.rs); the functions API is in
-- prelude_functions.lua, loaded in an interpreter when first needed.
local impl, getinfo, setfenv = ...
local error, type, tostring, select, setmetatable, rawset, rawget = error, type, tostring, select, setmetatable, rawset, rawget

local function raise(reply)
  error(reply, 0)
end

local redis = {}

-- redis.call and redis.pcall are Rust functions callbacks.rs installs in this
-- table (impl.redis): as C functions they keep the caller's frame (and line).
impl.redis = redis

local function single_field(field, ...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {[field] = s}
end

function redis.error_reply(...)
  local reply = single_field('err', ...)
  local e = reply.err
  if reply.err and e:sub(1, 1) == '-' then e = e:sub(2) end
  if not e:find(' ', 1, true) then e = 'ERR ' .. e end
  reply.err = e
  return reply
end

function redis.status_reply(...)
  return single_field('ok', ...)
end

function redis.sha1hex(...)
  if select('#', ...) ~= 1 then raise({err = 'ERR wrong number of arguments'}) end
  return impl.sha1hex(tostring((...)))
end

function redis.log(level, ...)
  if select('#', ...) < 1 then raise({err = 'ERR redis.log() requires two arguments or more.'}) end
  if type(level) ~= 'number' then raise({err = 'ERR First argument must be a number (log level).'}) end
  local parts = {}
  for i = 1, select('#', ...) do parts[#parts + 1] = tostring((select(i, ...))) end
  impl.log(level, table.concat(parts, ' '))
end

function redis.setresp(...)
  local v = ...
  if select('#', ...) ~= 1 then raise({err = 'ERR redis.setresp() requires one argument.'}) end
  if v ~= 2 and v ~= 3 then raise({err = 'ERR RESP version must be 2 or 3.'}) end
  impl.setresp(v)
end

function redis.acl_check_cmd(...)
  local ok = impl.acl_check_cmd(...)
  if type(ok) == 'table' then raise(ok) end
  if ok == nil then raise({err = 'ERR Invalid command passed to redis.acl_check_cmd()'}) end
  return ok
end

function redis.set_repl(...)
  if select('#', ...) ~= 1 then raise({err = 'ERR redis.set_repl() requires one argument.'}) end
  local flags = ...
  if type(flags) ~= 'number' or flags < 0 or flags > 3 then raise({err = 'ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.'}) end
end

function redis.replicate_commands() return true end
function redis.breakpoint() return false end
function redis.debug() end

redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.REDIS_VERSION = '7.0.15'
redis.REDIS_VERSION_NUM = 0x0007000f

-- The message handler of every script call: errors become {err=, source=, line=}.
local function handler(err)
  local level = 2
  local i = getinfo(level, 'nSl')
  while i and (i.what == 'C' or i.source == '@cairn_prelude') do
    level = level + 1
    i = getinfo(level, 'nSl')
  end
  if type(err) == 'userdata' then
    local counted = impl.error_counted(err) or nil
    err = {err = impl.error_message(err), ignore_error_stats_update = counted}
  elseif type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err.source = i.source
    err.line = i.currentline
  end
  return err
end

function impl.run(f)
  return xpcall(f, handler)
end

local function readonly()
  error('Attempt to modify a readonly table', 2)
end


rawset(_G, 'redis', setmetatable({}, {__index = redis, __newindex = readonly, __metatable = false}))
-- Valkey 8+ names the same library `server`: one object under both names,
-- protected as `redis` is (see docs/scripting.md, "Valkey scripts").
rawset(_G, 'server', rawget(_G, 'redis'))

-- Lua 5.1's unpack computes its result count in a C int: a range near the
-- int limits overflows it (and crashes). Redis patched that check; so does
-- this wrapper, with Lua's own error text.
local raw_unpack, floor = unpack, math.floor
rawset(_G, 'unpack', function(...)
  local t, i, e = ...
  local first = i == nil and 1 or tonumber(i)
  local last = e == nil and (type(t) == 'table' and #t or 0) or tonumber(e)
  if first and last then
    first, last = floor(first), floor(last)
    if first <= last and last - first >= 2147483647 then
      error('too many results to unpack', 2)
    end
  end
  -- The same arguments: Lua counts them against the stack limit.
  return raw_unpack(...)
end)

-- Tables scripts may not change (as Redis's readonly tables): library
-- tables are read-only views, the globals' metatable and the basic types'
-- metatables are seen through read-only views, and setmetatable refuses them.
local protected = setmetatable({}, {__mode = 'k'})
local function readonly_view(t)
  local view = setmetatable({}, {__index = t, __newindex = readonly, __metatable = false})
  protected[view] = true
  return view
end
-- bit, cjson, cmsgpack and struct are built on first use
-- (impl.load_library_table), so that an interpreter that never uses them
-- stays small.
local function lazy_readonly_view(name)
  local t
  local view = setmetatable({}, {
    __index = function(_, k)
      if not t then t = impl.load_library_table(name) end
      return t[k]
    end,
    __newindex = readonly,
    __metatable = false,
  })
  protected[view] = true
  return view
end
for _, name in ipairs({'bit', 'cjson', 'cmsgpack', 'struct'}) do
  rawset(_G, name, lazy_readonly_view(name))
end
protected[rawget(_G, 'redis')] = true

local globals_mt = {
  __index = function(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __newindex = readonly,
  __metatable = false,
}
local raw_getmetatable, raw_setmetatable = getmetatable, setmetatable
rawset(_G, 'getmetatable', function(v)
  if v == _G or v == impl.script_env then return readonly_view(globals_mt) end
  local mt = raw_getmetatable(v)
  if type(v) ~= 'table' and type(mt) == 'table' then return readonly_view(mt) end
  return mt
end)
rawset(_G, 'setmetatable', function(t, mt)
  if t == _G or protected[t] then error('Attempt to modify a readonly table', 2) end
  return raw_setmetatable(t, mt)
end)

-- The functions API (prelude_functions.lua, FUNCTION LOAD and FCALL) is
-- loaded on an interpreter's first use, with what it shares with this part.
function impl.load_functions_part(chunk)
  return chunk(impl, handler, readonly, function(t) protected[t] = true end, setmetatable)
end

-- EVAL scripts run in `script_env`: an empty read-only table whose lookups
-- go to the globals (and `_G` to itself), so that assigning a global that
-- exists (`redis = ...`, `_G = {}`) fails as creating one does, and
-- `rawset` refuses the protected tables: Redis's read-only globals.
local real_G = _G
local script_env
script_env = raw_setmetatable({}, {
  __index = function(_, name)
    if name == '_G' then return script_env end
    return real_G[name]
  end,
  __newindex = readonly,
  __metatable = false,
})
protected[script_env] = true
protected[real_G] = true
impl.script_env = script_env
local raw_rawset = rawset
rawset(_G, 'rawset', function(t, k, v)
  if protected[t] then error('Attempt to modify a readonly table', 2) end
  return raw_rawset(t, k, v)
end)

-- Code a script compiles (`loadstring`, `load`) runs in the scripts'
-- environment too, so it cannot change the globals either; byte code is
-- refused (Redis 7 does not load it): `loadstring` returns nil.
local raw_loadstring, concat = loadstring, table.concat
local function safe_loadstring(code, name)
  if type(code) == 'string' and code:byte(1) == 27 then
    return nil, 'loading byte code is not allowed'
  end
  local f, message = raw_loadstring(code, name)
  if f then setfenv(f, script_env) end
  return f, message
end
rawset(_G, 'loadstring', safe_loadstring)
rawset(_G, 'load', function(reader, name)
  if type(reader) ~= 'function' then
    error("bad argument #1 to 'load' (function expected, got " .. type(reader) .. ')', 2)
  end
  local parts = {}
  while true do
    local part = reader()
    if part == nil or part == '' then break end
    parts[#parts + 1] = part
  end
  return safe_loadstring(concat(parts), name)
end)

-- Globals: reading an unknown one or creating one is an error.
raw_setmetatable(_G, globals_mt)
