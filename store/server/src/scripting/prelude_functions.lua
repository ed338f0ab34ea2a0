-- The functions API of Cairn's scripting prelude (FUNCTION LOAD, FCALL),
-- loaded in an interpreter on its first use by prelude.lua's
-- `impl.load_functions_part`; its functions share the prelude's chunk name,
-- so the error handler skips their frames as the prelude's.
local impl, handler, readonly, protect, setmetatable = ...
local error, type, tostring, select = error, type, tostring, select

-- Functions (FUNCTION LOAD, FCALL): every library's code runs in `fenv`, an
-- empty read-only table whose lookups go, while a library loads, to the
-- load-time API (only `redis.register_function`, `redis.log` and the
-- constants, also named `server` as in Valkey) and otherwise to the globals
-- scripts see (as Redis switches the `__index` of its function globals).
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
-- Valkey 8+ libraries call `server.register_function`: the same table.
load_api.server = load_api.redis

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
protect(fenv)

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
