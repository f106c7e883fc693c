"""Digests (`learn_t`, sent by the `smac` table's default action for an
unknown source MAC), with and without acks, as the spec's digest cache
says: with an ack timeout, a source seen again before the ack sends no
second DigestList; after the ack it does. With ack_timeout_ns 0 (no
cache) every frame gives a list. max_list_size 2 puts two sources in
one list. The members are the source MAC and ingress port."""

from common import Host, check, ether, main, primary, rt

SECOND = 1_000_000_000


def members(info, digest_list):
    out = []
    for d in digest_list.data:
        m = d.struct.members
        out.append((rt.decode(m[0].bitstring), rt.decode(m[1].bitstring)))
    return out


OURS = set()


def next_list(c, timeout=None):
    """The next DigestList about one of this script's source MACs (frames
    the host's kernel sends itself are digested too; they are skipped)."""
    while True:
        dl = c.next_message("digest", timeout=timeout)
        if any(rt.decode(d.struct.members[0].bitstring) in OURS for d in dl.data):
            return dl
        print(f"skipped a list about other sources: {[rt.decode(d.struct.members[0].bitstring) for d in dl.data]}")


def no_list(c, what, timeout=1.0):
    try:
        got = next_list(c, timeout=timeout)
        check(False, f"{what} (got {got})")
    except TimeoutError:
        check(True, what)


def run(args, info):
    h1 = Host(args.host[0])
    c = primary(args)
    src = [bytes.fromhex(f"0200000000d{i}") for i in range(6)]
    OURS.update(int.from_bytes(m, "big") for m in src)

    def send(mac):
        h1.send(ether(bytes.fromhex("ffffffffffff"), mac, 0x88B5, b"digest me"))

    # Acked: max_list_size 1, an ack timeout far beyond the test.
    c.write([("INSERT", rt.digest_entry(info, "learn_t", max_list_size=1, ack_timeout_ns=600 * SECOND))])
    got = c.read([rt.p4runtime_pb2.DigestEntry(digest_id=info.digest("learn_t").preamble.id)])
    check(len(got) == 1 and got[0].digest_entry.config.max_list_size == 1, "the digest entry reads back")
    send(src[0])
    dl = next_list(c)
    check(dl.digest_id == info.digest("learn_t").preamble.id, "a DigestList for learn_t")
    check(members(info, dl) == [(int.from_bytes(src[0], "big"), 1)], f"it carries (source MAC, port 1): {members(info, dl)}")
    send(src[0])
    no_list(c, "the same source before the ack sends no second list (it is in the cache)")
    c.ack_digest(dl)
    # The ack travels on the stream and the frame through the data path:
    # nothing orders the two, so a frame may still meet the cache entry
    # the ack is about to clear. Send again (bounded) until a list comes.
    dl2 = None
    for _ in range(20):
        send(src[0])
        try:
            dl2 = next_list(c, timeout=0.5)
            break
        except TimeoutError:
            pass
    check(dl2 is not None, "after the ack the same source sends a new list (20 tries, 0.5 s each)")
    check(members(info, dl2) == members(info, dl) and dl2.list_id != dl.list_id, "after the ack the same source sends a new list")
    c.ack_digest(dl2)

    # Without acks: ack_timeout_ns 0 keeps no cache.
    c.write([("MODIFY", rt.digest_entry(info, "learn_t", max_list_size=1, ack_timeout_ns=0))])
    send(src[1])
    a = next_list(c)
    send(src[1])
    b = next_list(c)
    check(members(info, a) == members(info, b) and a.list_id != b.list_id, "with no ack timeout every frame sends a list, unacked")

    # Lists of two: max_list_size 2, a timeout far beyond the test.
    c.write([("MODIFY", rt.digest_entry(info, "learn_t", max_list_size=2, max_timeout_ns=600 * SECOND, ack_timeout_ns=0))])
    send(src[2])
    no_list(c, "one digest waits for a second one (max_list_size 2)", timeout=0.5)
    send(src[3])
    dl = next_list(c)
    want = sorted((int.from_bytes(m, "big"), 1) for m in src[2:4])
    check(sorted(members(info, dl)) == want, f"one list carries both sources: {members(info, dl)}")

    # Deleting the entry stops digests.
    c.write([("DELETE", rt.p4runtime_pb2.DigestEntry(digest_id=info.digest("learn_t").preamble.id))])
    send(src[4])
    no_list(c, "after the digest entry is deleted no list comes")
    c.close()


main(run)
