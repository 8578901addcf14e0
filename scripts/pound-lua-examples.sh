#!/usr/bin/env bash
# pound-lua-examples.sh POUND_CHECKOUT [LBD]
#
# Runs Pound's three example Lua modules (its manual's appendix "Example
# Lua modules": jwt.lua, cookie.lua, wwwauth.lua) unchanged through the
# real lbd. They are Pound's code and stay out of lbd's repository: this
# script extracts them from the Texinfo sources of a Pound checkout
# (doc/jwtlua.texi, doc/cookielua.texi, doc/wwwauthlua.texi) into a
# temporary directory. It installs nothing.
#
# What the modules require: cookie.lua and wwwauth.lua nothing; jwt.lua
# 'dkjson' (Debian lua-dkjson), 'base64' (iskolbin's luarocks module) and
# 'openssl' (lua-openssl's hmac.hmac). Debian packages neither of the
# last two (its lua-luaossl is another OpenSSL binding), so this script
# writes stand-ins with the same API: base64 in plain Lua, and openssl's
# hmac.hmac on top of luaossl. A token made here with the openssl command
# line (not with jwt.lua) checks that the signatures are real.
#
# Needs: curl, openssl, basenc, lua-dkjson and lua-luaossl (for jwt.lua).
set -euo pipefail

pound=${1:?usage: $0 POUND_CHECKOUT [LBD]}
lbd=${2:-$(cd "$(dirname "$0")/.." && pwd)/bin/lbd}
[ -x "$lbd" ] || { echo "no lbd binary at $lbd (make build)" >&2; exit 2; }
for f in jwtlua cookielua wwwauthlua; do
	[ -r "$pound/doc/$f.texi" ] || { echo "$pound/doc/$f.texi: not found" >&2; exit 2; }
done
"$lbd" -V | grep -q 'Lua support: *enabled' || { echo "$lbd has no Lua" >&2; exit 2; }

dir=$(mktemp -d /tmp/pound-lua-examples.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# untexi turns an @example body back into the Lua it shows.
untexi() {
	sed -e 's/@var{\([^}]*\)}/\1/g' -e 's/@code{\([^}]*\)}/\1/g' \
		-e 's/@{/{/g' -e 's/@}/}/g' -e 's/@@/@/g' "$1"
}
mkdir -p "$dir/lib"
untexi "$pound/doc/jwtlua.texi" >"$dir/lib/jwt.lua"
untexi "$pound/doc/cookielua.texi" >"$dir/lib/cookie.lua"
untexi "$pound/doc/wwwauthlua.texi" >"$dir/lib/wwwauth.lua"
if grep -n '@' "$dir"/lib/*.lua | grep -v -- '--'; then
	echo "Texinfo markup left in the extracted modules" >&2
	exit 1
fi

# --- stand-ins for the luarocks modules jwt.lua requires ---------------
cat >"$dir/lib/base64.lua" <<'EOF'
-- A stand-in for iskolbin's base64 module: makeencoder, makedecoder,
-- encode and decode with the same arguments.
local base64 = {}
local std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

function base64.makeencoder(s62, s63, spad)
   local enc = {}
   local chars = std .. (s62 or "+") .. (s63 or "/")
   for i = 1, 64 do enc[i - 1] = chars:sub(i, i) end
   enc[64] = spad or "="
   return enc
end

function base64.makedecoder(s62, s63, spad)
   local dec = {}
   for i, c in pairs(base64.makeencoder(s62, s63, spad)) do dec[c:byte()] = i end
   return dec
end

local defenc, defdec = base64.makeencoder(), base64.makedecoder()

function base64.encode(s, enc)
   enc = enc or defenc
   local out = {}
   for i = 1, #s, 3 do
      local a, b, c = s:byte(i, i + 2)
      local n = (a << 16) | ((b or 0) << 8) | (c or 0)
      out[#out + 1] = enc[(n >> 18) & 63] .. enc[(n >> 12) & 63] ..
         (b and enc[(n >> 6) & 63] or enc[64]) .. (c and enc[n & 63] or enc[64])
   end
   return table.concat(out)
end

function base64.decode(s, dec)
   dec = dec or defdec
   local out, n, bits = {}, 0, 0
   for i = 1, #s do
      local v = dec[s:byte(i)]
      if v == nil then error("invalid base64 character at " .. i) end
      if v == 64 then break end
      n, bits = (n << 6) | v, bits + 6
      if bits >= 8 then
         bits = bits - 8
         out[#out + 1] = string.char((n >> bits) & 255)
      end
   end
   return table.concat(out)
end

return base64
EOF
cat >"$dir/lib/openssl.lua" <<'EOF'
-- A stand-in for lua-openssl's hmac.hmac(alg, message, key, raw), on
-- luaossl (Debian lua-luaossl).
local luaossl = require "_openssl.hmac"
local hmac = {}
function hmac.hmac(alg, message, key, raw)
   local d = luaossl.new(key, alg):final(message)
   if raw then return d end
   return (d:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end
return {hmac = hmac}
EOF

# --- lbd's own modules using the examples -------------------------------
cat >"$dir/inject.lua" <<'EOF'
-- Cookie injection with cookie.lua: a session cookie for new clients.
local cookie = require "cookie"
local inject = {}
local issued = 0
function inject.run(name, ttl)
   if cookie.get(name) == nil then
      issued = issued + 1
      cookie.set(name, "c" .. issued, ttl)
   end
   http.resp.headers["X-Cookie-Seen"] = cookie.get(name) or "none"
end
return inject
EOF
cat >"$dir/login.lua" <<'EOF'
-- Answer a Basic challenge parsed by wwwauth.lua and resend.
local wwwauth = require "wwwauth"
local base64 = require "base64"
local login = {}
function login.retry(user, pass)
   if http.resp.code ~= 401 or http.resendcount > 0 then return end
   local scheme, params = wwwauth.parse(http.resp.headers["WWW-Authenticate"])
   if scheme == "Basic" and params.realm == "Restricted area" then
      http.req.headers["Authorization"] = "Basic " .. base64.encode(user .. ":" .. pass)
      http.resend = true
   end
end
-- The protected backend itself.
function login.vault(expect)
   if http.req.headers["Authorization"] == "Basic " .. base64.encode(expect) then
      http.resp.code = 200
      http.resp.body = "welcome\n"
   else
      http.resp.code = 401
      http.resp.headers["WWW-Authenticate"] = 'Basic realm="Restricted area", charset="UTF-8"'
   end
end
return login
EOF
cat >"$dir/bearer.lua" <<'EOF'
-- Bearer tokens checked with jwt.lua.
local jwt = require "jwt"
local bearer = {}
function bearer.ok(const)
   local h = http.req.headers["Authorization"]
   local tok = h and h:match("^[Bb]earer%s+(%S+)$")
   if not tok then return false end
   local j, err = jwt.parse(tok)
   if err ~= nil or not j:verify(http:const(const)) then return false end
   if j.payload.exp ~= nil and os.time() >= j.payload.exp then return false end
   stash.jwt = j
   return true
end
function bearer.issue(const, sub)
   http.resp.code = 200
   http.resp.body = jwt.new({sub = sub, exp = os.time() + 60}, http:const(const))
end
function bearer.whoami()
   http.resp.code = 200
   http.resp.body = "hello " .. stash.jwt.payload.sub .. "\n"
end
return bearer
EOF
printf '%s\n' 'top secret' >"$dir/secret.txt"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
front=$(free_port)
back=$(free_port)
cat >"$dir/lbd.cfg" <<EOF
Daemon 0
LogLevel 0
WorkerMaxCount 4
Constant "key" -file "secret.txt" -trim
Lua
	Path "$dir/lib/?.lua"
	Load "inject.lua"
	Load "login.lua"
	Load "bearer.lua"
End
ListenHTTP
	Address 127.0.0.1
	Port $front
	Service "cookie"
		Path "^/cookie"
		Rewrite response
			LuaModify "inject.run" "sid" "300"
		End
		Backend
			Address 127.0.0.1
			Port $back
		End
	End
	Service "login"
		Path "^/login"
		Rewrite response
			LuaModify "login.retry" "ann" "pa55"
		End
		Backend
			Address 127.0.0.1
			Port $back
		End
	End
	Service "issue"
		Path "^/token"
		LuaBackend "bearer.issue" "key" "%[query]"
	End
	Service "denied"
		Not LuaMatch "bearer.ok" "key"
		Error 401
	End
	Service "me"
		LuaBackend "bearer.whoami"
	End
End
ListenHTTP
	Address 127.0.0.1
	Port $back
	Service
		Path "^/login"
		LuaBackend "login.vault" "ann:pa55"
	End
	Service
		Rewrite response
			SetHeader "Set-Cookie: theme=dark"
		End
		Success
	End
End
EOF

"$lbd" -e -f "$dir/lbd.cfg" 2>"$dir/lbd.log" &
pid=$!
for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$front/cookie" && break
	sleep 0.1
done

fails=0
check() { # name expected actual
	if [ "$2" = "$3" ]; then
		echo "ok    $1"
	else
		echo "FAIL  $1: got [$3], want [$2]"
		fails=$((fails + 1))
	fi
}
url=http://127.0.0.1:$front

# cookie.lua: a new client gets sid beside the backend's cookie; one that
# has it gets nothing new and the value is read back.
h=$(curl -s -D - -o /dev/null "$url/cookie")
check "cookie.lua sets the cookie" "sid=c1; Max-Age=300" "$(echo "$h" | tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \(sid=.*\)$/\1/p')"
check "cookie.lua keeps the backend's cookie" "theme=dark" "$(echo "$h" | tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \(theme=.*\)$/\1/p')"
h=$(curl -s -D - -o /dev/null -H 'Cookie: a=1; sid=c1; b=2' "$url/cookie")
check "cookie.lua reads the cookie" "c1" "$(echo "$h" | tr -d '\r' | sed -n 's/^X-Cookie-Seen: //p')"
check "cookie.lua adds none for a known client" "" "$(echo "$h" | tr -d '\r' | grep -i '^set-cookie: sid' || true)"

# wwwauth.lua: the 401's challenge is parsed and the request resent with
# credentials.
check "wwwauth.lua answers the challenge" "200 welcome" "$(curl -s -w '%{http_code} ' -o /tmp/pound-lua-body.$$ "$url/login/x"; cat /tmp/pound-lua-body.$$; rm -f /tmp/pound-lua-body.$$)"

# jwt.lua: a token jwt.new made, one the openssl command line made, and
# a forged one.
tok=$(curl -s "$url/token?ann")
check "jwt.lua issues a three-part token" "3" "$(echo "$tok" | awk -F. '{print NF}')"
check "jwt.lua verifies its token" "hello ann" "$(curl -s -H "Authorization: Bearer $tok" "$url/me")"
b64url() { basenc --base64url -w0 | tr -d '='; }
hdr=$(printf '%s' '{"typ":"JWT","alg":"HS256"}' | b64url)
pay=$(printf '%s' '{"sub":"bob"}' | b64url)
sig=$(printf '%s' "$hdr.$pay" | openssl dgst -sha256 -hmac 'top secret' -binary | b64url)
check "jwt.lua verifies an openssl-made token" "hello bob" "$(curl -s -H "Authorization: Bearer $hdr.$pay.$sig" "$url/me")"
bad=$(printf '%s' "$hdr.$pay" | openssl dgst -sha256 -hmac 'guess' -binary | b64url)
check "jwt.lua refuses a forged token" "401" "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $hdr.$pay.$bad" "$url/me")"
check "no token" "401" "$(curl -s -o /dev/null -w '%{http_code}' "$url/me")"

if grep -q 'error calling Lua' "$dir/lbd.log"; then
	echo "lbd logged Lua errors:"
	cat "$dir/lbd.log"
	fails=$((fails + 1))
fi
echo "$fails failure(s)"
[ "$fails" = 0 ]
