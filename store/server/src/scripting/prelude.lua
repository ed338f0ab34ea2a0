-- Cairn's scripting prelude: the `redis` library, the error handler and
-- global protection, over the Rust functions in `impl` (see lua_env.rs).
local impl, getinfo, setfenv = ...
local error, type, tostring, select, setmetatable, rawset = error, type, tostring, select, setmetatable, rawset

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

-- Functions (FUNCTION LOAD, FCALL): every library's code runs in `fenv`, an
-- empty read-only table whose lookups go, while a library loads, to the
-- load-time API (only `redis.register_function`, `redis.log` and the
-- constants) and otherwise to the globals scripts see (as Redis switches
-- the `__index` of its function globals).
local loading = nil -- {functions = {}, count = n} while a library loads
local script_flags = {['no-writes'] = 1, ['allow-oom'] = 2, ['allow-stale'] = 4, ['no-cluster'] = 8,
                      ['allow-cross-slot-keys'] = 16}
local rawget, pairs, next, pcall, lower = rawget, pairs, next, pcall, string.lower

local function missing(name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 3)
end

local function fail(message)
  error({err = 'ERR ' .. message}, 0)
end

local function name_ok(name)
  return #name > 0 and not name:find('[^a-zA-Z0-9_]')
end

local function string_arg(value)
  local t = type(value)
  if t == 'string' then return value end
  if t == 'number' then return tostring(value) end
  return nil
end

local function read_flags(list)
  if type(list) ~= 'table' then
    fail('flags argument to redis.register_function must be a table representing function flags')
  end
  local flags, j = 0, 1
  while true do
    local flag = list[j]
    if flag == nil then break end
    local text = string_arg(flag)
    local bit = text and script_flags[lower(text)]
    if not bit then fail('unknown flag given') end
    if flags % (bit * 2) < bit then flags = flags + bit end
    j = j + 1
  end
  return flags
end

local function named_args(args)
  if type(args) ~= 'table' then
    fail('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
  end
  local name, desc, callback, flags = nil, nil, nil, 0
  for key, value in next, args do
    if not string_arg(key) then fail('named argument key given to redis.register_function is not a string') end
    key = lower(string_arg(key))
    if key == 'function_name' then
      name = string_arg(value)
      if not name then fail('function_name argument given to redis.register_function must be a string') end
    elseif key == 'description' then
      desc = string_arg(value)
      if not desc then fail('description argument given to redis.register_function must be a string') end
    elseif key == 'callback' then
      if type(value) ~= 'function' then fail('callback argument given to redis.register_function must be a function') end
      callback = value
    elseif key == 'flags' then
      flags = read_flags(value)
    else
      fail('unknown argument given to redis.register_function')
    end
  end
  if not name then fail('redis.register_function must get a function name argument') end
  if not callback then fail('redis.register_function must get a callback argument') end
  return name, desc, callback, flags
end

local function register_function(...)
  if not loading then fail('redis.register_function can only be called on FUNCTION LOAD command') end
  local argc = select('#', ...)
  if argc < 1 or argc > 2 then fail('wrong number of arguments to redis.register_function') end
  local name, desc, callback, flags
  if argc == 1 then
    name, desc, callback, flags = named_args((...))
  else
    local first, second = ...
    name = string_arg(first)
    if not name then fail('first argument to redis.register_function must be a string') end
    if type(second) ~= 'function' then fail('second argument to redis.register_function must be a function') end
    callback, flags = second, 0
  end
  if not name_ok(name) then
    fail('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
  end
  local key = lower(name)
  if loading.functions[key] then fail('Function already exists in the library') end
  loading.functions[key] = {name = name, description = desc, callback = callback, flags = flags}
  loading.count = loading.count + 1
end

local load_redis = {
  register_function = register_function,
  log = function(level, ...)
    if select('#', ...) < 1 then error({err = 'ERR redis.log() requires two arguments or more.'}, 0) end
    if type(level) ~= 'number' then error({err = 'ERR First argument must be a number (log level).'}, 0) end
    local parts = {}
    for i = 1, select('#', ...) do parts[#parts + 1] = tostring((select(i, ...))) end
    impl.load_log(level, table.concat(parts, ' '))
  end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = '7.0.15', REDIS_VERSION_NUM = 0x0007000f,
}
local load_api = {
  redis = setmetatable({}, {
    __index = function(_, name)
      local v = load_redis[name]
      if v == nil then missing(name) end
      return v
    end,
    __newindex = readonly,
    __metatable = false,
  }),
}

local fenv = setmetatable({}, {
  __index = function(_, name)
    local v
    if loading then
      v = load_api[name]
    elseif name ~= 'KEYS' and name ~= 'ARGV' then
      v = rawget(_G, name)
    end
    if v == nil then missing(name) end
    return v
  end,
  __newindex = readonly,
  __metatable = false,
})
impl.fenv = fenv

-- Runs a library's compiled code in load mode: true and {lowercase name =
-- {name=, description=, callback=, flags=}}, or false and the error text.
function impl.load_library(chunk)
  loading = {functions = {}, count = 0}
  local ok, err = pcall(chunk)
  local registered = loading
  loading = nil
  if ok then return true, registered.functions, registered.count end
  if type(err) == 'table' then return false, tostring(err.err) end
  if type(err) == 'userdata' then return false, impl.error_message(err) end
  return false, 'ERR ' .. tostring(err)
end

-- Calls a function as FCALL does: its keys and arguments as parameters.
function impl.run_function(f, keys, argv)
  return xpcall(function() return f(keys, argv) end, handler)
end

rawset(_G, 'redis', setmetatable({}, {__index = redis, __newindex = readonly, __metatable = false}))

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
rawset(_G, 'bit', readonly_view(rawget(_G, 'bit')))
-- cjson, cmsgpack and struct are built on first use (impl.load_library_table),
-- so that an interpreter that never uses them stays small.
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
for _, name in ipairs({'cjson', 'cmsgpack', 'struct'}) do
  rawset(_G, name, lazy_readonly_view(name))
end
protected[rawget(_G, 'redis')] = true
protected[fenv] = true

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
