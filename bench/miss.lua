-- wrk script: every request asks for a fresh asset id, so every request is a cache MISS.
-- args: <path prefix> <first id number> <id suffix incl. extension>
-- The id is the number in 8 hex digits plus the suffix (bench/media-cases.ts assetId()).
local prefix, counter, suffix

function init(args)
  prefix = args[1]
  counter = tonumber(args[2])
  suffix = args[3]
end

function request()
  local path = prefix .. string.format("%08x", counter) .. suffix
  counter = counter + 1
  return wrk.format("GET", path)
end

-- The first error response is printed (wrk's stdout), so the bench can say what went wrong.
local shown = false
function response(status, headers, body)
  if status >= 400 and not shown then
    shown = true
    io.write("FIRST-ERROR ", status, " ", string.sub(body or "", 1, 300), "\n")
  end
end
