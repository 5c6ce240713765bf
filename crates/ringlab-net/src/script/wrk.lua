-- The Lua half of wrk's scripting API, as ringlab provides it. Rust has
-- already filled `wrk` (scheme, host, port, path, method, headers, body,
-- lookup, connect) before this chunk runs; the user's script runs after.
local wrk = ...

-- A request string from the arguments, each defaulting to the wrk table.
function wrk.format(method, path, headers, body)
   method  = method  or wrk.method
   path    = path    or wrk.path
   headers = headers or wrk.headers
   body    = body    or wrk.body

   if not headers["Host"] then
      headers["Host"] = wrk.headers["Host"]
   end
   -- As in wrk: the body's length, or no Content-Length without a body.
   headers["Content-Length"] = body and #body or nil

   local lines = { method .. " " .. path .. " HTTP/1.1" }
   for name, value in pairs(headers) do
      lines[#lines + 1] = name .. ": " .. tostring(value)
   end
   lines[#lines + 1] = ""
   lines[#lines + 1] = body or ""
   return table.concat(lines, "\r\n")
end

-- Setup phase (its own state): the user's setup(thread), once per thread.
function wrk.setup(thread)
   if type(setup) == "function" then
      setup(thread)
   end
end

-- Running phase (one state per thread): Host header, the user's
-- init(args), then the static request every request() of wrk returns.
function wrk.init(args)
   if not wrk.headers["Host"] then
      local host = wrk.host
      if host:find(":", 1, true) then
         host = "[" .. host .. "]"
      end
      if wrk.port then
         host = host .. ":" .. wrk.port
      end
      wrk.headers["Host"] = host
   end
   if type(init) == "function" then
      init(args)
   end
   local req = wrk.format()
   wrk.request = function()
      return req
   end
end
