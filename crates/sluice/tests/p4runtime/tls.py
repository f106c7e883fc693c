"""P4Runtime over mutual TLS (`sluice p4 run --tls-ca --tls-cert
--tls-key`): a client whose certificate chains to the switch's CA writes
and reads an entry; a client with a certificate from another CA, one with
no certificate and a plain-text client are refused (UNAVAILABLE: the
handshake fails, no RPC reaches the switch); the entry is still there
afterwards for the verified client."""

import grpc

from common import Failed, check, main, rt


def read(path):
    with open(path, "rb") as f:
        return f.read()


def refused(args, creds, what):
    """A Capabilities call over a channel with `creds` (None: plain TCP)
    must fail with UNAVAILABLE."""
    ch = grpc.insecure_channel(args.addr) if creds is None else grpc.secure_channel(args.addr, creds)
    try:
        stub = rt.p4runtime_pb2_grpc.P4RuntimeStub(ch)
        stub.Capabilities(rt.p4runtime_pb2.CapabilitiesRequest(), timeout=5)
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.UNAVAILABLE, f"{what} is refused ({e.code().name}: {e.details()})")
        return
    finally:
        ch.close()
    raise Failed(f"{what}: Capabilities succeeded over TLS it should not have passed")


def run(args, info):
    ca = read(args.ca)
    good = grpc.ssl_channel_credentials(ca, read(args.key), read(args.cert))
    c = rt.Client(args.addr, device_id=args.device_id, election=1, credentials=good)
    st = c.arbitrate()
    check(st.status.code == 0, "a client with a certificate from the switch's CA is primary over TLS")
    check(c.capabilities().p4runtime_api_version != "", "Capabilities over TLS")
    entry = info.table_entry("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:aa:01"}, "RtIngress.forward", {"port": 1})
    c.write([("INSERT", entry)])
    got = c.read([info.table_entry("RtIngress.dmac")])
    check(len(got) == 1 and got[0].table_entry.action.action.params[0].value == b"\x01",
          "its Write went in and reads back over TLS")

    rogue = grpc.ssl_channel_credentials(ca, read(args.rogue_key), read(args.rogue_cert))
    refused(args, rogue, "a client whose certificate is from another CA")
    refused(args, grpc.ssl_channel_credentials(ca), "a client with no certificate")
    refused(args, None, "a plain-text (non-TLS) client")

    got = c.read([info.table_entry("RtIngress.dmac")])
    check(len(got) == 1, "the verified client still reads its entry")
    c.close()


main(run, options=("--ca", "--cert", "--key", "--rogue-cert", "--rogue-key"))
