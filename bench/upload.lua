-- wrk script: every request uploads the same file as multipart/form-data (POST /v1/assets/upload).
-- args: <file path> <bearer token>
-- The first error response is printed (wrk's stdout), so the bench can say what went wrong.
local boundary = "----bench-upload-boundary"

function init(args)
  local f = assert(io.open(args[1], "rb"))
  local bytes = f:read("*a")
  f:close()
  wrk.method = "POST"
  wrk.path = "/v1/assets/upload"
  wrk.headers["Authorization"] = "Bearer " .. args[2]
  wrk.headers["Content-Type"] = "multipart/form-data; boundary=" .. boundary
  wrk.body = "--" .. boundary .. "\r\n"
    .. "Content-Disposition: form-data; name=\"file\"; filename=\"photo.jpg\"\r\n"
    .. "Content-Type: image/jpeg\r\n\r\n"
    .. bytes .. "\r\n--" .. boundary .. "--\r\n"
end

local shown = false
function response(status, headers, body)
  if status ~= 201 and not shown then
    shown = true
    io.write("FIRST-ERROR ", status, " ", string.sub(body or "", 1, 300), "\n")
  end
end
