"""A thin P4Runtime v1 client over the official Python bindings.

Only the modules of PyPI's `p4runtime` package (`p4.v1.p4runtime_pb2`,
`p4.v1.p4runtime_pb2_grpc`, `p4.config.v1.p4info_pb2`), `grpcio` and
`protobuf` are used; this file adds name lookups in the P4Info, value
encoding, the stream channel in a thread and readable errors. The example
controllers here and sluice's tests (crates/sluice/tests/p4runtime) use it.

Install the client with scripts/install-deps (a virtualenv in
/opt/sluice-venv/p4rt) or `pip install -r requirements.txt`.
"""

import queue
import subprocess
import threading
import time

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

Update = p4runtime_pb2.Update


class P4rtError(Exception):
    """A failed RPC: the gRPC code, its message and, for Write, the
    per-update `p4.v1.Error`s from the status details."""

    def __init__(self, rpc_error):
        self.code = rpc_error.code()
        self.details = rpc_error.details()
        self.errors = []
        for key, value in rpc_error.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                st = status_pb2.Status.FromString(value)
                for any_msg in st.details:
                    err = p4runtime_pb2.Error()
                    if any_msg.Unpack(err):
                        self.errors.append(err)
        super().__init__(f"{self.code.name}: {self.details}")

    def canonical_codes(self):
        """Per-update codes as names (OK, ALREADY_EXISTS, ...)."""
        return [code_pb2.Code.Name(e.canonical_code) for e in self.errors]


def encode(value, bitwidth):
    """`value` (int, bytes or a MAC/IPv4 string) as P4Runtime's canonical
    binary string: big-endian, no leading zero bytes, at least one byte.
    Refuses a value wider than `bitwidth`."""
    if isinstance(value, str):
        if ":" in value:
            value = int(value.replace(":", ""), 16)
        elif value.count(".") == 3:
            value = int.from_bytes(bytes(int(x) for x in value.split(".")), "big")
        else:
            value = int(value, 0)
    if isinstance(value, bytes):
        value = int.from_bytes(value, "big")
    if value < 0 or value.bit_length() > bitwidth:
        raise ValueError(f"{value:#x} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode(data):
    return int.from_bytes(data, "big")


def election_id(n):
    return p4runtime_pb2.Uint128(high=n >> 64, low=n & ((1 << 64) - 1))


def sluice_p4info(sluice, program):
    """The P4Info of `program` as `sluice p4 info` prints it."""
    out = subprocess.run(
        [sluice, "p4", "info", program], capture_output=True, text=True, timeout=60
    )
    if out.returncode != 0:
        raise RuntimeError(f"sluice p4 info {program}: {out.stderr.strip()}")
    return text_format.Parse(out.stdout, p4info_pb2.P4Info())


class Info:
    """Name lookups in a P4Info (full names or aliases)."""

    def __init__(self, p4info):
        self.p4info = p4info

    def _find(self, kind, name):
        for obj in getattr(self.p4info, kind):
            if name in (obj.preamble.name, obj.preamble.alias):
                return obj
        raise KeyError(f"no {kind[:-1]} named {name!r} in the P4Info")

    def table(self, name):
        return self._find("tables", name)

    def action(self, name):
        return self._find("actions", name)

    def digest(self, name):
        return self._find("digests", name)

    def controller_header(self, name):
        return self._find("controller_packet_metadata", name)

    def match_field(self, table, name):
        for mf in self.table(table).match_fields:
            if mf.name == name:
                return mf
        raise KeyError(f"table {table!r} has no match field {name!r}")

    def param(self, action, name):
        for p in self.action(action).params:
            if p.name == name:
                return p
        raise KeyError(f"action {action!r} has no parameter {name!r}")

    def action_spec(self, action, params=None):
        a = p4runtime_pb2.Action(action_id=self.action(action).preamble.id)
        for name, value in (params or {}).items():
            p = self.param(action, name)
            a.params.add(param_id=p.id, value=encode(value, p.bitwidth))
        return a

    def table_entry(self, table, match=None, action=None, params=None, priority=0, default=False):
        """A TableEntry. `match` maps field names to a value (exact,
        optional), (value, prefix_len) for lpm, (value, mask) for ternary,
        (low, high) for range, by the field's match kind."""
        t = self.table(table)
        e = p4runtime_pb2.TableEntry(table_id=t.preamble.id, priority=priority)
        e.is_default_action = default
        MF = p4info_pb2.MatchField
        for name, value in (match or {}).items():
            mf = self.match_field(table, name)
            fm = e.match.add(field_id=mf.id)
            w = mf.bitwidth
            if mf.match_type == MF.EXACT:
                fm.exact.value = encode(value, w)
            elif mf.match_type == MF.LPM:
                fm.lpm.value, fm.lpm.prefix_len = encode(value[0], w), value[1]
            elif mf.match_type == MF.TERNARY:
                fm.ternary.value, fm.ternary.mask = encode(value[0], w), encode(value[1], w)
            elif mf.match_type == MF.RANGE:
                fm.range.low, fm.range.high = encode(value[0], w), encode(value[1], w)
            elif mf.match_type == MF.OPTIONAL:
                fm.optional.value = encode(value, w)
            else:
                raise ValueError(f"match kind {mf.match_type} of {table}.{name}")
        if action is not None:
            e.action.action.CopyFrom(self.action_spec(action, params))
        return e

    def packet_metadata(self, header, values):
        """PacketMetadata list for controller header `header` ("packet_out")."""
        ch = self.controller_header(header)
        by_name = {m.name: m for m in ch.metadata}
        out = []
        for name, value in values.items():
            if name not in by_name:
                raise KeyError(f"controller header {header!r} has no field {name!r}")
            m = by_name[name]
            out.append(p4runtime_pb2.PacketMetadata(metadata_id=m.id, value=encode(value, m.bitwidth)))
        return out

    def metadata_values(self, header, metadata):
        """{field name: int} of a PacketIn's metadata."""
        by_id = {m.id: m.name for m in self.controller_header(header).metadata}
        return {by_id.get(m.metadata_id, m.metadata_id): decode(m.value) for m in metadata}


class Client:
    """One controller: a gRPC channel, its stream channel (read by a
    thread into a queue) and the RPCs with its device id and election id."""

    def __init__(self, address, device_id=1, election=1, role=None, timeout=10, credentials=None):
        """`credentials`: grpc.ssl_channel_credentials(ca, key, cert) for a
        switch that serves P4Runtime over TLS (`sluice p4 run --tls-ca ...`);
        None: plain TCP."""
        self.address, self.device_id, self.timeout = address, device_id, timeout
        self.election = election
        self.role = role
        if credentials is None:
            self.channel = grpc.insecure_channel(address)
        else:
            self.channel = grpc.secure_channel(address, credentials)
        grpc.channel_ready_future(self.channel).result(timeout=timeout)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out = queue.Queue()
        self.messages = queue.Queue()
        self.stream_error = None
        self._stream = self.stub.StreamChannel(iter(self._out.get, None))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        try:
            for msg in self._stream:
                self.messages.put(msg)
        except grpc.RpcError as e:
            self.stream_error = e
            self.messages.put(None)

    def send(self, msg):
        self._out.put(msg)

    def next_message(self, kind, timeout=None):
        """The next stream message carrying `kind` ("arbitration", "packet",
        "digest", "idle_timeout_notification", "error"); others are kept
        aside in `self.skipped`. Raises TimeoutError."""
        import time

        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {kind} message on the stream within the time limit")
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                raise RuntimeError(f"stream channel closed while waiting for {kind}: {self.stream_error}")
            if msg.WhichOneof("update") == kind:
                return getattr(msg, kind)
            self.skipped = getattr(self, "skipped", [])
            self.skipped.append(msg)

    def arbitrate(self, timeout=None):
        """Sends MasterArbitrationUpdate; returns the switch's answer
        (status.code is OK for the primary, ALREADY_EXISTS otherwise)."""
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.CopyFrom(election_id(self.election))
        if self.role is not None:
            req.arbitration.role.name = self.role
        self.send(req)
        return self.next_message("arbitration", timeout)

    def _call(self, rpc, req):
        try:
            return rpc(req, timeout=self.timeout)
        except grpc.RpcError as e:
            raise P4rtError(e) from None

    def capabilities(self):
        return self._call(self.stub.Capabilities, p4runtime_pb2.CapabilitiesRequest())

    def set_pipeline(self, p4info, device_config, action="VERIFY_AND_COMMIT", cookie=0):
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.Action.Value(action),
        )
        req.election_id.CopyFrom(election_id(self.election))
        if self.role is not None:
            req.role = self.role
        if p4info is not None:
            req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        return self._call(self.stub.SetForwardingPipelineConfig, req)

    def get_pipeline(self, what="ALL"):
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.ResponseType.Value(what),
        )
        return self._call(self.stub.GetForwardingPipelineConfig, req).config

    def write(self, updates, atomicity="CONTINUE_ON_ERROR"):
        """Write (type, entity) pairs or Updates; entities may be TableEntry,
        PacketReplicationEngineEntry or Entity."""
        req = p4runtime_pb2.WriteRequest(
            device_id=self.device_id,
            atomicity=p4runtime_pb2.WriteRequest.Atomicity.Value(atomicity),
        )
        req.election_id.CopyFrom(election_id(self.election))
        if self.role is not None:
            req.role = self.role
        for u in updates:
            if isinstance(u, Update):
                req.updates.append(u)
                continue
            kind, entity = u
            up = req.updates.add(type=Update.Type.Value(kind) if isinstance(kind, str) else kind)
            put_entity(up.entity, entity)
        return self._call(self.stub.Write, req)

    def read(self, entities):
        """Every entity the Read returns (all response messages)."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        if self.role is not None:
            req.role = self.role
        for entity in entities:
            put_entity(req.entities.add(), entity)
        try:
            return [e for resp in self.stub.Read(req, timeout=self.timeout) for e in resp.entities]
        except grpc.RpcError as e:
            raise P4rtError(e) from None

    def packet_out(self, payload, metadata):
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        req.packet.metadata.extend(metadata)
        self.send(req)

    def ack_digest(self, digest_list):
        req = p4runtime_pb2.StreamMessageRequest()
        req.digest_ack.digest_id = digest_list.digest_id
        req.digest_ack.list_id = digest_list.list_id
        self.send(req)

    def close(self):
        self._out.put(None)
        self.channel.close()


def put_entity(dst, entity):
    if isinstance(entity, p4runtime_pb2.Entity):
        dst.CopyFrom(entity)
    elif isinstance(entity, p4runtime_pb2.TableEntry):
        dst.table_entry.CopyFrom(entity)
    elif isinstance(entity, p4runtime_pb2.PacketReplicationEngineEntry):
        dst.packet_replication_engine_entry.CopyFrom(entity)
    elif isinstance(entity, p4runtime_pb2.DigestEntry):
        dst.digest_entry.CopyFrom(entity)
    else:
        raise TypeError(f"not an entity: {type(entity).__name__}")


def multicast_group(group, ports):
    """A PacketReplicationEngineEntry for multicast group `group` with one
    replica (instance 0) per port, named by the `port` bytes field (the
    uint32 `egress_port` is deprecated since P4Runtime 1.4)."""
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = group
    for port in ports:
        pre.multicast_group_entry.replicas.add(port=encode(port, 32), instance=0)
    return pre


def digest_entry(info, name, max_list_size=1, max_timeout_ns=0, ack_timeout_ns=1_000_000_000):
    d = p4runtime_pb2.DigestEntry(digest_id=info.digest(name).preamble.id)
    d.config.max_list_size = max_list_size
    d.config.max_timeout_ns = max_timeout_ns
    d.config.ack_timeout_ns = ack_timeout_ns
    return d
