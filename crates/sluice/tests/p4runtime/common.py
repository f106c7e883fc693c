"""Shared by the P4Runtime test scripts that crates/sluice/tests/p4runtime_python.rs
runs with the official Python client (/opt/sluice-venv/p4rt). Each script
gets `--addr` (the switch's P4Runtime address), `--sluice` (the binary; or `--p4info FILE`, the P4Info as text),
`--program` (the P4 source it runs), `--device-id` (default 1) and `--host NETNS:IF:MAC` per host
port (port 1, 2, ...); it prints what it checked and exits 1 with the
reason on the first failure."""

import argparse
import ctypes
import os
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "examples", "p4runtime"))

import p4rt_client as rt  # noqa: E402
from p4rt_client import P4rtError  # noqa: E402,F401


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)
    print(f"ok: {what}", flush=True)


def expect_error(fn, code, what, update_codes=None):
    """Runs `fn`, which must raise P4rtError with gRPC `code` (a name) and,
    if given, these per-update canonical codes (names, in order)."""
    try:
        fn()
    except P4rtError as e:
        if e.code.name != code:
            raise Failed(f"{what}: wanted {code}, got {e}") from None
        if update_codes is not None and e.canonical_codes() != update_codes:
            raise Failed(
                f"{what}: wanted per-update errors {update_codes}, got {e.canonical_codes()} "
                f"({[er.message for er in e.errors]})"
            ) from None
        print(f"ok: {what}: {e.code.name} {e.canonical_codes()} {[er.message for er in e.errors]}", flush=True)
        return e
    raise Failed(f"{what}: succeeded, wanted {code}")


class Host:
    """A host port: an AF_PACKET socket on the host's end of the veth, opened
    from a thread that entered the host's network namespace (setns(2) only
    moves that thread; the socket stays in the namespace)."""

    def __init__(self, spec):
        self.netns, self.ifname, mac = spec.split(":", 2)
        self.mac = bytes(int(x, 16) for x in mac.split(":"))
        box = {}

        def opener():
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                with open(f"/run/netns/{self.netns}") as f:
                    if libc.setns(f.fileno(), 0x40000000) != 0:  # CLONE_NEWNET
                        raise OSError(ctypes.get_errno(), f"setns into {self.netns}")
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
                s.bind((self.ifname, 0))
                box["sock"] = s
            except Exception as e:  # reported below
                box["error"] = e

        t = threading.Thread(target=opener)
        t.start()
        t.join()
        if "error" in box:
            raise Failed(f"raw socket on {self.ifname} in {self.netns}: {box['error']}")
        self.sock = box["sock"]

    def send(self, frame):
        self.sock.send(frame)

    def drain(self):
        self.sock.setblocking(False)
        try:
            while True:
                self.sock.recv(4096)
        except BlockingIOError:
            pass
        finally:
            self.sock.setblocking(True)

    def receive(self, pred, timeout=5.0):
        """The first incoming frame for which pred(frame) holds, or None
        when `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data, addr = self.sock.recvfrom(4096)
            except socket.timeout:
                return None
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            if pred(data):
                return data


def ether(dst, src, ethertype, payload=b""):
    frame = dst + src + ethertype.to_bytes(2, "big") + payload
    return frame + bytes(max(0, 60 - len(frame)))


def ipv4(src, dst, ttl=64, protocol=17, tos=0, payload=b"sluice-p4rt"):
    hdr = bytearray(20)
    hdr[0], hdr[1] = 0x45, tos
    hdr[2:4] = (20 + len(payload)).to_bytes(2, "big")
    hdr[8], hdr[9] = ttl, protocol
    hdr[12:16], hdr[16:20] = socket.inet_aton(src), socket.inet_aton(dst)
    s = sum(int.from_bytes(hdr[i:i + 2], "big") for i in range(0, 20, 2))
    s = (s & 0xFFFF) + (s >> 16)
    hdr[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
    return bytes(hdr) + payload


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def main(run, options=()):
    """Parses the arguments (and the script's own `options`, flags taking
    one value) and calls run(args, info) with the program's P4Info (from
    `sluice p4 info`); exit status 1 with the reason on a failure."""
    p = argparse.ArgumentParser()
    for o in options:
        p.add_argument(o, required=True)
    p.add_argument("--addr", required=True)
    p.add_argument("--sluice", help="the sluice binary: the P4Info is `sluice p4 info PROGRAM`")
    p.add_argument("--p4info", help="or a file with the P4Info as text protobuf")
    p.add_argument("--program", required=True)
    p.add_argument("--host", action="append", default=[])
    p.add_argument("--device-id", type=int, default=1)
    args = p.parse_args()
    try:
        if args.p4info:
            with open(args.p4info) as f:
                info = rt.Info(rt.text_format.Parse(f.read(), rt.p4info_pb2.P4Info()))
        elif args.sluice:
            info = rt.Info(rt.sluice_p4info(args.sluice, args.program))
        else:
            raise Failed("give --sluice or --p4info")
        run(args, info)
    except (Failed, P4rtError, TimeoutError, RuntimeError, KeyError, ValueError) as e:
        print(f"FAILED: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)
    print("PASSED", flush=True)


def client(args, election):
    return rt.Client(args.addr, device_id=args.device_id, election=election)


def primary(args, election=1):
    c = client(args, election)
    st = c.arbitrate()
    check(st.status.code == 0, f"controller with election id {election} is primary (status {st.status.code})")
    return c
