#!/usr/bin/env python3
"""Regenerate Cairn's command metadata from a real Redis server.

Starts a throwaway `redis-server` (Redis 7.0.x; Debian's /usr/bin/redis-server by
default) on an ephemeral loopback port, speaks RESP3 to it over a raw socket
(standard library only), asks it for `COMMAND INFO` and `COMMAND DOCS` of every
command, and writes

    store/server/src/commands/redis_meta.json

which `store/server/src/commands/meta.rs` embeds with `include_str!`.

The replies are stored as typed reply trees that keep the RESP3 types exactly, so
the server can re-encode them byte for byte as RESP3 or (degrading maps and sets
the way Redis does) RESP2. Encoding of one reply value:

    "text"              bulk string            123        integer
    [v, ...]            array                  null       null
    {"+": "text"}       simple string          {"~": [v, ...]}          set
    {"%": [k, v, ...]}  map (flattened pairs)  {",": "1.5"}             double
    {"#": true}         boolean                {"(": "123"}             big number
    {"~+": ["a", ...]}  set of simple strings (shorthand for the common case:
                        command flags, ACL categories, argument flags)

The file is a JSON object with one line per top-level command, sorted by name:

    {"version":"7.0.15"
    ,"append":[<COMMAND INFO entry>,<COMMAND DOCS value (the docs map)>]
    ...}

Subcommands ("config|get") have no line of their own: they stay inside their
parent's entries exactly where Redis puts them (the 10th element of the INFO
entry, the "subcommands" map of the docs).

Redis iterates its command tables as hash dicts with a random seed, so the order
of subcommands differs between runs; this script sorts them by name (in the
10th element of a COMMAND INFO entry and in the "subcommands" map of a docs
entry) so that the output is deterministic.

With --fixtures DIR it also writes the raw bytes of a few replies (RESP2 and
RESP3) to DIR, for meta.rs's byte-for-byte tests.

Usage: e2e/tools/gen_command_meta.py [--redis-server PATH] [--out FILE] [--fixtures DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ports  # noqa: E402  (e2e/lib/ports.py: ports below the ephemeral range)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "store/server/src/commands/redis_meta.json"

# Replies captured raw for the tests in meta.rs: (file stem, command). Only
# commands whose replies do not contain subcommands (whose order is random in
# Redis) can be compared byte for byte; subcommands are asked for directly.
FIXTURES = [
    ("info_get", ["COMMAND", "INFO", "get"]),
    ("info_set", ["COMMAND", "INFO", "set"]),
    ("info_zunionstore", ["COMMAND", "INFO", "zunionstore"]),
    ("info_config_get", ["COMMAND", "INFO", "config|get"]),
    ("info_keys", ["COMMAND", "INFO", "keys"]),
    ("docs_set", ["COMMAND", "DOCS", "set"]),
    ("docs_xadd", ["COMMAND", "DOCS", "xadd"]),
    ("docs_config_get", ["COMMAND", "DOCS", "config|get"]),
    ("docs_georadius", ["COMMAND", "DOCS", "georadius"]),
]


class RespError(Exception):
    pass


class Conn:
    """A minimal blocking RESP2/RESP3 client that also keeps the raw bytes."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""
        self.pos = 0

    def close(self) -> None:
        self.sock.close()

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise RespError("connection closed by redis-server")
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0

    def _line(self) -> bytes:
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = self.buf[self.pos : end]
                self.pos = end + 2
                self.raw.extend(line + b"\r\n")
                return line
            self._fill()

    def _exact(self, n: int) -> bytes:
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = self.buf[self.pos : self.pos + n]
        if self.buf[self.pos + n : self.pos + n + 2] != b"\r\n":
            raise RespError("bulk string not terminated by CRLF")
        self.pos += n + 2
        self.raw.extend(data + b"\r\n")
        return data

    def send(self, *args: str) -> None:
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(out))

    def reply(self):
        """Reads one reply; returns (typed tree, raw bytes)."""
        self.raw = bytearray()
        tree = self._value()
        return tree, bytes(self.raw)

    def call(self, *args: str):
        self.send(*args)
        return self.reply()

    @staticmethod
    def _text(b: bytes) -> str:
        return b.decode("utf-8")

    def _value(self):
        line = self._line()
        kind, body = line[:1], line[1:]
        if kind == b"$":
            n = int(body)
            if n < 0:
                return None
            return self._text(self._exact(n))
        if kind == b"+":
            return {"+": self._text(body)}
        if kind == b"-":
            raise RespError(self._text(body))
        if kind == b":":
            return int(body)
        if kind == b"_":
            return None
        if kind == b",":
            return {",": self._text(body)}
        if kind == b"#":
            return {"#": body == b"t"}
        if kind == b"(":
            return {"(": self._text(body)}
        if kind == b"=":
            raise RespError("verbatim strings are not supported in command metadata")
        if kind in (b"*", b"~", b"%"):
            n = int(body)
            if n < 0:
                return None
            if kind == b"%":
                flat = []
                for _ in range(n):
                    flat.append(self._value())
                    flat.append(self._value())
                return {"%": flat}
            items = [self._value() for _ in range(n)]
            if kind == b"*":
                return items
            if items and all(isinstance(i, dict) and list(i) == ["+"] for i in items):
                return {"~+": [i["+"] for i in items]}
            return {"~": items}
        raise RespError(f"unexpected RESP type byte {kind!r}")


def free_port() -> int:
    return ports.free_port("127.0.0.1")


def start_redis(binary: str, workdir: str) -> tuple[subprocess.Popen, int]:
    last_error = "no attempt"
    for _ in range(5):
        port = free_port()
        proc = subprocess.Popen(
            [
                binary,
                "--save", "",
                "--appendonly", "no",
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--daemonize", "no",
                "--dir", workdir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                last_error = f"redis-server exited with status {proc.returncode}"
                break
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc, port
            except OSError as e:
                last_error = str(e)
                time.sleep(0.05)
        else:
            stop_redis(proc)
    raise RuntimeError(f"could not start {binary}: {last_error}")


def stop_redis(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def flat_pairs(m) -> list[tuple[str, object]]:
    if not (isinstance(m, dict) and "%" in m):
        raise RespError(f"expected a map, got {m!r}")
    flat = m["%"]
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


def sort_info(entry):
    """Sorts the subcommands (10th element) of a COMMAND INFO entry by name."""
    if not isinstance(entry, list) or len(entry) < 10:
        raise RespError(f"unexpected COMMAND INFO entry {entry!r}")
    subs = entry[9]
    if isinstance(subs, dict):  # Redis 7.0 sends an empty *set* when there are none
        if subs != {"~": []}:
            raise RespError(f"unexpected subcommands element {subs!r}")
        return entry
    subs = sorted((sort_info(s) for s in subs), key=lambda s: s[0])
    return entry[:9] + [subs] + entry[10:]


def sort_docs(docs):
    """Sorts the "subcommands" map of a COMMAND DOCS value by name."""
    pairs = flat_pairs(docs)
    out = []
    for k, v in pairs:
        if k == "subcommands":
            subs = sorted(((n, sort_docs(d)) for n, d in flat_pairs(v)), key=lambda p: p[0])
            v = {"%": [x for p in subs for x in p]}
        out.append(k)
        out.append(v)
    return {"%": out}


def dumps(v) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def collect(conn: Conn) -> tuple[str, dict]:
    hello, _ = conn.call("HELLO", "3")
    version = dict(flat_pairs(hello)).get("version")
    if not isinstance(version, str) or not version.startswith("7.0."):
        print(f"warning: redis-server {version}, expected 7.0.x", file=sys.stderr)

    names, _ = conn.call("COMMAND", "LIST")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RespError(f"unexpected COMMAND LIST reply {names!r}")
    # COMMAND LIST also names the subcommands ("config|get"); they are kept
    # inside their parents' entries.
    names = sorted(n for n in names if "|" not in n)
    count, _ = conn.call("COMMAND", "COUNT")
    if count != len(names):
        raise RespError(f"COMMAND COUNT is {count} but COMMAND LIST has {len(names)} commands")

    infos, _ = conn.call("COMMAND", "INFO", *names)
    if len(infos) != len(names):
        raise RespError("COMMAND INFO returned the wrong number of entries")
    docs_map, _ = conn.call("COMMAND", "DOCS", *names)
    docs = dict(flat_pairs(docs_map))

    out = {}
    for name, info in zip(names, infos):
        if info is None or info[0] != name:
            raise RespError(f"COMMAND INFO {name} returned {info!r}")
        if name not in docs:
            raise RespError(f"COMMAND DOCS has no entry for {name}")
        entry = [sort_info(info), sort_docs(docs[name])]
        info_subs = [s[0] for s in entry[0][9]] if isinstance(entry[0][9], list) else []
        docs_subs = [k for k, _ in flat_pairs(dict(flat_pairs(entry[1])).get("subcommands", {"%": []}))]
        if info_subs != docs_subs:
            raise RespError(f"{name}: subcommands differ between INFO and DOCS")
        out[name] = entry
    return version, out


def write_fixtures(port: int, fixture_dir: Path) -> None:
    fixture_dir.mkdir(parents=True, exist_ok=True)
    for proto in ("2", "3"):
        conn = Conn(port)
        try:
            conn.call("HELLO", proto)
            for stem, cmd in FIXTURES:
                _, raw = conn.call(*cmd)
                (fixture_dir / f"{stem}.resp{proto}").write_bytes(raw)
        finally:
            conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "/usr/bin/redis-server")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--fixtures", type=Path, help="also write raw reply fixtures to this directory")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="cairn-cmdmeta-") as workdir:
        proc, port = start_redis(args.redis_server, workdir)
        try:
            conn = Conn(port)
            try:
                version, meta = collect(conn)
            finally:
                conn.close()
            if args.fixtures:
                write_fixtures(port, args.fixtures)
        finally:
            stop_redis(proc)

    lines = [f'{{"version":{dumps(version)}']
    lines += [f",{dumps(name)}:{dumps(entry)}" for name, entry in meta.items()]
    text = "\n".join(lines) + "\n}\n"
    json.loads(text)  # sanity check
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {args.out} ({len(meta)} commands, {len(text.encode())} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
