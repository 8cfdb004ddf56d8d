-- wrk script: every connection is open before the load starts, the way a CDN's keep-alive pool
-- or a browser's connections are. The first request of each of the <connections> connections
-- waits <wait ms>; the requests after them go at once.
-- args: <connections> <wait ms>
-- Why: Node's event loop (libuv) accepts one connection per loop iteration while it serves the
-- open ones, so 128 connections opened at once by wrk take 0.1-0.7 s to be accepted, bare
-- node:http as much as the service; their first requests' waits fill the p99 of a short run.
local connections, wait
local first = 0

function init(args)
  connections = tonumber(args[1])
  wait = tonumber(args[2])
end

function delay()
  if first < connections then
    first = first + 1
    return wait
  end
  return 0
end
