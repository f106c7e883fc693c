"""P4Runtime over mutual TLS with a CRL (`sluice p4 run --tls-ca --tls-cert
--tls-key --tls-crl`): a client whose certificate the CA revoked is refused
(UNAVAILABLE: the handshake fails, no RPC reaches the switch); one with an
unrevoked certificate from the same CA becomes primary, writes and reads."""

import grpc

from common import Failed, check, main, rt


def read(path):
    with open(path, "rb") as f:
        return f.read()


def run(args, info):
    ca = read(args.ca)
    revoked = grpc.ssl_channel_credentials(ca, read(args.revoked_key), read(args.revoked_cert))
    ch = grpc.secure_channel(args.addr, revoked)
    try:
        stub = rt.p4runtime_pb2_grpc.P4RuntimeStub(ch)
        stub.Capabilities(rt.p4runtime_pb2.CapabilitiesRequest(), timeout=5)
        raise Failed("a client with a revoked certificate: Capabilities succeeded")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.UNAVAILABLE,
              f"a client whose certificate is revoked is refused ({e.code().name}: {e.details()})")
    finally:
        ch.close()

    good = grpc.ssl_channel_credentials(ca, read(args.key), read(args.cert))
    c = rt.Client(args.addr, device_id=args.device_id, election=1, credentials=good)
    st = c.arbitrate()
    check(st.status.code == 0, "a client with an unrevoked certificate from the same CA is primary")
    entry = info.table_entry("RtIngress.dmac", {"hdr.eth.dst": "02:00:00:00:ab:01"}, "RtIngress.forward", {"port": 1})
    c.write([("INSERT", entry)])
    check(len(c.read([info.table_entry("RtIngress.dmac")])) == 1, "its Write went in and reads back")
    c.close()


main(run, options=("--ca", "--cert", "--key", "--revoked-cert", "--revoked-key"))
