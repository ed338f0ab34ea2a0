-- Cairn's scripting prelude: the `redis` library, the error handler and
-- global protection, over the Rust functions in `impl` (see lua_env.rs).
local impl, getinfo = ...
local error, type, tostring, select, setmetatable, rawset = error, type, tostring, select, setmetatable, rawset

local function raise(reply)
  error(reply, 0)
end

local redis = {}

-- redis.call and redis.pcall are Rust functions each run installs in this
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
    err = {err = impl.error_message(err)}
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

-- Globals: reading an unknown one or creating one is an error.
setmetatable(_G, {
  __index = function(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __newindex = readonly,
  __metatable = false,
})
