#!/usr/bin/env python3
"""make_seeds.py: writes the seed inputs of test/fuzz/corpus/<harness>/seed-*
(valid or nearly valid inputs that start the fuzzer on each protocol's
paths). Regression inputs (regress-*) are added by hand when a finding is
fixed and are not touched here. Run from anywhere: python3 make_seeds.py"""
import os
import struct

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(harness, name, data):
    d = os.path.join(here, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# parameter files
put("var_file", "typed", "# all types\nfuzz_x_i = -5\nfuzz_x_u = 0x10\nfuzz_x_z = 64k\n"
    "fuzz_x_b = yes\nfuzz_x_d = 1e-3\nfuzz_x_s = \"quoted text\"\nfuzz_x_e = slow\n")
put("var_file", "odd", "  \t\nno equals sign\n= no name\nfuzz_old_z = 2M\nfuzz_x_str = 'a'\n"
    "fuzz_x_ro = 1\nfuzz_x_e = 3\nfuzz_x_i = 99999999999\nfuzz_x_ii = 1\r\nfuzz_x_d = nan\n")
put("var_file", "dup", "fuzz_x_s=first\nfuzz_x_s=second\nfuzz_x_z=1G\nfuzz_x_z=17179869184G\n")

# typed values: byte 0 = type (bits 0-2) | source (bits 3-4) | round trip (0x20)
for i, (t, v) in enumerate([(0, "-42"), (1, "0x10"), (2, "64k"), (3, "on"), (4, "1e-3"),
                            (5, "text"), (6, "fast"), (7, " 2G "), (2, "18446744073709551615"),
                            (0, "2147483648"), (6, "-2"), (4, "inf")]):
    put("var_value", "%02d" % i, bytes([t | (i % 4) << 3 | 0x20]) + v.encode())

# selection lists of the ptest framework
for i, s in enumerate(["alpha", "^beta,shy", "alpha,^beta", "nosuch,alpah", " , ", "^",
                       "broken,beta"]):
    put("selection", "%02d" % i, s)


# pxrun wire protocol (components/boot/pxrun/pxrun_proto.h)
def frame(op, payload):
    return struct.pack("<II", len(payload), op) + payload


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack("<I", len(b)) + b


REPLY, HELLO, FENCE, GET, ABORT, BYE = 0x80, 1, 2, 3, 4, 5
hello_reply = frame(REPLY, struct.pack("<iii", 0, 0, 2) + s("job1") + s("host") +
                    struct.pack("<ii", 0, 0))
fence_reply = frame(REPLY, struct.pack("<iI", 0, 2) + struct.pack("<i", 0) + s("k") + s("v") +
                    struct.pack("<i", 1) + s("other") + s(b"\x00\x01"))
get_reply = frame(REPLY, struct.pack("<i", 0) + s("value"))
put("pxrun_client", "full", hello_reply + fence_reply + get_reply)
put("pxrun_client", "hello-only", hello_reply)
put("pxrun_client", "refused", frame(REPLY, struct.pack("<i", -4)))
put("pxrun_client", "fence-error", hello_reply + frame(REPLY, struct.pack("<iI", -5, 0)))


def records(conn_frames):
    out = b""
    for c, data in conn_frames:
        for k in range(0, len(data), 255):
            chunk = data[k:k + 255]
            out += bytes([c, len(chunk)]) + chunk
    return out


def hello(rank):
    return frame(HELLO, struct.pack("<iiI", rank, 1234, 1))


fence = frame(FENCE, struct.pack("<I", 1) + s("key") + s("value"))
get = frame(GET, struct.pack("<i", 0) + s("key"))
put("pxrun_server", "one-rank", bytes([0]) + records([(0, hello(0) + fence + get +
                                                        frame(BYE, b""))]))
put("pxrun_server", "two-ranks", bytes([1 | 4]) + records([(0, hello(0)), (1, hello(1)),
                                                            (0, fence), (1, fence), (1, get)]))
put("pxrun_server", "abort", bytes([0]) + records([(0, hello(0) + frame(ABORT, struct.pack(
    "<i", 3) + s("bye")))]))
put("pxrun_server", "bad", bytes([2]) + records([(0, frame(GET, b"")), (0, hello(5)),
                                                 (0, frame(99, b"xx"))]))


# runtime active messages (runtime/runtime.h)
def inject(tag, payload, split=0):
    return bytes([tag - 1]) + struct.pack("<HB", len(payload), split) + payload


def irecv(tag, length, from0=True):
    return bytes([0x81 if from0 else 0x80, tag]) + struct.pack("<H", length)


def isend(tag, length):
    return bytes([0x90, tag]) + struct.pack("<H", length)


def match(src, tag, seq, data=b""):
    return struct.pack("<iiII", src, tag, seq, 0) + data


def rndv(tag, seq, length, sreq, flags=0, nrails=0, blob=b""):
    return match(0, tag, seq, b"")[:12] + struct.pack("<I", flags) + struct.pack(
        "<QQQII", length, sreq, 0, nrails, len(blob)) + blob


put("runtime_am", "eager", irecv(5, 64) + inject(1, match(0, 5, 0, b"hello world")) +
    inject(1, match(0, 6, 1, b"unexpected"), 7))
put("runtime_am", "ooo", irecv(0xff, 8, False) + inject(1, match(0, 1, 2, b"third")) +
    inject(1, match(0, 1, 1, b"second")) + inject(1, match(0, 1, 0, b"first")))
put("runtime_am", "rndv-frags", irecv(7, 300) + inject(2, rndv(7, 0, 300, 0)) +
    inject(4, struct.pack("<QQ", 0, 0) + b"x" * 200) +
    inject(4, struct.pack("<QQ", 0, 200) + b"y" * 100, 5))
put("runtime_am", "send-rndv", isend(3, 600) + inject(3, struct.pack("<QQ", 0, 0)) +
    bytes([0xa0]) + inject(5, struct.pack("<QQ", 0, 0)) + bytes([0xc0]))
put("runtime_am", "putack", isend(3, 600) + inject(6, struct.pack("<QQQQII", 0, 0, 0, 600, 0, 0)) +
    inject(7, struct.pack("<QQ", 0, 0)))
# An RNDV carrying its first 100 bytes (PX_RT_RNDV_FLAG_DATA), the rest by
# fragments from 100; an ACK that asks for fragments from byte 100; RNDVs
# whose carried length lies (beyond the bytes, the whole message, no room).
put("runtime_am", "rndv-data", irecv(7, 300) +
    inject(2, rndv(7, 0, 300, 0, 4) + struct.pack("<Q", 100) + b"d" * 100) +
    inject(4, struct.pack("<QQ", 0, 100) + b"x" * 200, 9))
put("runtime_am", "ack-offset", isend(3, 600) + inject(3, struct.pack("<QQQ", 0, 0, 100)) +
    inject(3, struct.pack("<QQQ", 0, 0, 1 << 40)) + bytes([0xa0, 0xc0]))
put("runtime_am", "rndv-data-bad", irecv(7, 300) +
    inject(2, rndv(7, 0, 300, 0, 4) + struct.pack("<Q", 1 << 20) + b"d" * 100) +
    inject(2, rndv(7, 0, 100, 0, 4) + struct.pack("<Q", 100) + b"d" * 100) +
    inject(2, rndv(7, 0, 100, 0, 4) + b"\x01\x02"))
put("runtime_am", "short", inject(2, b"\x00" * 10) + inject(3, b"\x01") + inject(6, b"") +
    inject(1, match(0, 1, 0)))


# transfer keys (runtime/xfer/key.c): a flags byte (1 fix the checksum, 2 this
# job and rank 0, 4 the harness's own region), then the key.
def fnv64(data, h=1469598103934665603):
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xffffffffffffffff
    return h


def name_id(name):
    h = fnv64(name.encode())
    i = (h ^ (h >> 32)) & 0xffffffff
    return i or 1


def xkey(entries, job=0, owner=0, region=1, addr=0x10000, length=65536, flags=0, version=1):
    body = b"".join(struct.pack("<IHBBI", cid, idx, kind, 0, len(d)) + d
                    for cid, idx, kind, d in entries)
    total = 64 + len(body)
    hdr = struct.pack("<IHHII", 0x314b5850, version, len(entries), total, flags) + b"\0" * 8 + \
        struct.pack("<QiIQQQ", job, owner, 0, region, addr, length)
    k = hdr + body
    csum = fnv64(k[:16] + b"\0" * 8 + k[24:])
    return k[:16] + struct.pack("<Q", csum) + k[24:]


self_id = name_id("self")
put("xfer_key", "own-region", bytes([7]) + xkey([(self_id, 0, 2, b""), (0, 0, 3, struct.pack("<I", 0))]))
put("xfer_key", "own-region-stage", bytes([7]) + xkey([(0x1234, 0, 2, b"\1" * 16)]))
put("xfer_key", "map-entry", bytes([7]) + xkey([(name_id("shm"), 0, 1, b"\0" * 24),
                                                (name_id("ofi"), 0, 2, b"\0" * 16)]))
put("xfer_key", "valid-slot-far", bytes([7]) + xkey([(0, 0, 3, struct.pack("<I", 99999))]))
put("xfer_key", "foreign-job", bytes([1]) + xkey([(self_id, 0, 2, b"")], job=12345))
put("xfer_key", "other-owner", bytes([3]) + xkey([(self_id, 0, 2, b"")], owner=3))
put("xfer_key", "not-own-region", bytes([3]) + xkey([(self_id, 0, 2, b"")], region=77))
put("xfer_key", "bad-checksum", bytes([0]) + xkey([(self_id, 0, 2, b"")])[:-1] + b"x")
put("xfer_key", "truncated", bytes([0]) + xkey([(self_id, 0, 2, b"\0" * 16)])[:70])
put("xfer_key", "bad-kind", bytes([3]) + xkey([(self_id, 0, 9, b"")]))
put("xfer_key", "long-entry", bytes([3]) + xkey([(self_id, 0, 2, b"\0" * 200)]))
put("xfer_key", "version", bytes([3]) + xkey([], version=2))
put("xfer_key", "wrap", bytes([3]) + xkey([], addr=0xffffffffffffff00, length=4096))
put("xfer_key", "empty", b"")

# btl/shm: fast box rings (byte 0: ring 4 KiB << (b & 3), byte 1: start line);
# entry sizes in 32-byte slots
FBV, FBS, FBP = 1 << 63, 1 << 62, 1 << 61


def fbe(tag, payload, lead=0, flags=0):
    slots = (8 + lead + len(payload) + 31) // 32
    h = FBV | flags | lead << 48 | slots << 32 | tag << 24 | len(payload)
    e = struct.pack("<Q", h) + b"\0" * lead + payload
    return e + b"\0" * (slots * 32 - len(e))


first = fbe(1, b"at the start")
put("shm_fbox", "messages", bytes([0, 0]) + fbe(1, b"hello") + fbe(1, b"x" * 200, lead=56) +
    fbe(2, b"") + fbe(0, b"", flags=FBP) + fbe(1, b"y" * 64))
put("shm_fbox", "skip-wrap", bytes([0, 62]) + first + b"\0" * (62 * 64 - len(first)) +
    fbe(1, b"z" * 8) + fbe(1, b"w" * 8) + struct.pack("<Q", FBV | FBS) + b"\0" * 56)
put("shm_fbox", "len-0xffffff", bytes([0, 0]) + struct.pack("<Q", FBV | 1 << 32 | 1 << 24 | 0xffffff))
put("shm_fbox", "entry-past-ring", bytes([0, 63]) + b"\0" * (63 * 64) +
    struct.pack("<Q", FBV | 3 << 32 | 1 << 24 | 8))
put("shm_fbox", "lead-too-long", bytes([1, 0]) + struct.pack("<Q", FBV | 127 << 48 | 2 << 32 | 64))


# btl/shm: queue entries (see fuzz_shm_queue.c for the layout)
def frag(src, length, off=64, flags=0, nxt=(1 << 64) - 1, des=0):
    h = struct.pack("<QQIBBHH", nxt, des, length, 1, flags, src, off)
    return h + b"\0" * (64 - len(h))


def qrec(idx, line, sub=0):
    return bytes([idx, line & 255, line >> 8, sub, 0, 0, 0, 0])


def heaps(*segs):  # each segment's heap: 128 bytes (byte 1+i of the input = 1)
    return b"".join(s + b"\0" * (128 - len(s)) for s in segs)


put("shm_queue", "message", bytes([0, 1, 1, 1, 1, 1]) + qrec(1, 0) +
    heaps(frag(0, 0), frag(1, 32) + b"d" * 32))
put("shm_queue", "returned", bytes([0, 1, 1, 1, 1, 1]) + qrec(0, 0) + heaps(frag(0, 0, flags=1, des=3)))
put("shm_queue", "chain", bytes([1, 1, 1, 1, 1, 1]) + qrec(1, 0) +
    heaps(b"", frag(1, 8, nxt=(2 << 48) | 4096), frag(2, 16, nxt=(1 << 48) | 4096)))
put("shm_queue", "bad-len", bytes([0, 1, 1, 1, 1, 1]) + qrec(1, 0) + heaps(b"", frag(1, 0xffffffff)))
put("shm_queue", "bad-index", bytes([4, 1, 1, 1, 1, 1]) + qrec(1, 0) + qrec(7, 0) +
    bytes([0x80 | 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]) + heaps(b"", frag(1, 8)))
put("shm_queue", "wrong-src", bytes([0, 1, 1, 1, 1, 1]) + qrec(1, 0, 8) + heaps(b"", frag(0, 8)))


# btl/shm: modex blob and segment header (see fuzz_shm_modex.c)
def fnv64(b):
    h = 1469598103934665603
    for c in b:
        h = ((h ^ c) * 1099511628211) & (2**64 - 1)
    return h


def shm_hdr(job, nlocal=2, fbox=4096, size=1 << 20, rank=1, key=7, version=2):
    base = (256 + nlocal * 64 + 4095) & ~4095
    heap = base + nlocal * fbox
    return struct.pack("<QIIQQiiQIIQQ40sBB", 0x706c78736d656d31, version, nlocal, key, size, rank,
                       99, fbox, 0, len(job), fnv64(job), heap, job[:39], 1, 0) + b"\0" * 6


def shm_modex(path, idx=1, size=1 << 20):
    return struct.pack("<QQQii", 7, size, 0x7f0000000000, 99, idx) + path.ljust(256, b"\0")


job = b"4d2-0badcafe"
good = shm_modex(b"/dev/shm/plexus-0-fuzz/seg-1")
put("shm_modex", "good", bytes([0, 1, 1, 1, len(job)]) + job + good + shm_hdr(job))
long_job = b"n" * 255
put("shm_modex", "long-job", bytes([0, 1, 1, 1, 255]) + long_job + good + shm_hdr(long_job))
put("shm_modex", "fbox-differs", bytes([0, 1, 1, 1, len(job)]) + job + good +
    shm_hdr(job, fbox=8192))
put("shm_modex", "too-small", bytes([0, 1, 1, 1, len(job)]) + job + good + shm_hdr(job, size=8192))
put("shm_modex", "path-outside", bytes([0, 1, 1, 1, len(job)]) + job +
    shm_modex(b"/dev/shm/plexus-0-fuzz/../x") + shm_hdr(job, rank=0))
put("shm_modex", "short-blob", bytes([3, 1, 1, 1, len(job)]) + job + good[:285])

# btl/ofi modex blob (components/btl/ofi/ofi_wire.h): byte 0 = own format index
# (0 IN, 1 IN6, 2 SOCKADDR, 3 STR, 4 PSMX3, ...) | 8 provider | 16 format | 32 length,
# byte 1 = own address length, then the blob: provider[64], format, length, address.
FI_SOCKADDR, FI_SOCKADDR_IN, FI_SOCKADDR_IN6, FI_ADDR_STR, FI_ADDR_PSMX3 = 1, 2, 3, 9, 13


def ofi_blob(addr, fmt, prov="tcp;ofi_rxm", addrlen=None):
    return (prov.encode().ljust(64, b"\0") +
            struct.pack("<II", fmt, len(addr) if addrlen is None else addrlen) + addr)


sin = struct.pack("<HH4s8x", 2, 0x1234, bytes([127, 0, 0, 1]))
sin6 = struct.pack("<HHI16sI", 10, 0x1234, 0, b"\0" * 15 + b"\1", 0)
put("ofi_modex", "in", bytes([0, 16]) + ofi_blob(sin, FI_SOCKADDR_IN))
put("ofi_modex", "in6", bytes([1, 28]) + ofi_blob(sin6, FI_SOCKADDR_IN6))
put("ofi_modex", "sockaddr", bytes([2, 16]) + ofi_blob(sin, FI_SOCKADDR))
put("ofi_modex", "str", bytes([3, 30]) + ofi_blob(b"fi_sockaddr_in://127.0.0.1:4660\0", FI_ADDR_STR))
put("ofi_modex", "psmx3", bytes([4, 16]) + ofi_blob(b"\1" * 16, FI_ADDR_PSMX3))
put("ofi_modex", "other-prov", bytes([0, 16]) + ofi_blob(sin, FI_SOCKADDR_IN, prov="shm"))
put("ofi_modex", "short", bytes([0, 16]) + ofi_blob(sin, FI_SOCKADDR_IN)[:60])
put("ofi_modex", "fix-all", bytes([0 | 8 | 16 | 32, 16]) + b"\0" * 72 + sin)


# with a lanes list (btl_ofi_rdma_lanes): magic "olan", count, then per lane 1.. length + address
def ofi_lanes(count, addrs):
    return struct.pack("<II", 0x6e616c6f, count) + b"".join(struct.pack("<I", len(a)) + a
                                                             for a in addrs)


# (flag 64: the lanes list, under its own modex key, follows the blob)
put("ofi_modex", "lanes3", bytes([64, 16]) + ofi_blob(sin, FI_SOCKADDR_IN) + ofi_lanes(3, [sin, sin]))
put("ofi_modex", "lanes-count9", bytes([64, 16]) + ofi_blob(sin, FI_SOCKADDR_IN) +
    ofi_lanes(9, [sin, sin]))
put("ofi_modex", "lanes-str", bytes([64 | 3, 30]) + ofi_blob(b"fi_sockaddr_in://127.0.0.1:4660\0",
    FI_ADDR_STR) + ofi_lanes(2, [b"fi_sockaddr_in://127.0.0.1:4661\0"]))
put("ofi_modex", "lanes1", bytes([64, 16]) + ofi_blob(sin, FI_SOCKADDR_IN) + ofi_lanes(1, []))


# btl/ofi receive headers: per message job size, buffer length (2), message length (2), bytes;
# header = tag, flags, pad[2], src_rank (int32).
def ofi_msg(data, nranks=4, maxlen=4104):
    return struct.pack("<BHH", nranks, maxlen, len(data)) + data


def ofi_hdr(tag, flags, rank):
    return struct.pack("<BBxxi", tag, flags, rank)


put("ofi_recv", "deliver", ofi_msg(ofi_hdr(1, 0, 1) + b"hello") + ofi_msg(ofi_hdr(200, 0, 3)))
put("ofi_recv", "drain", ofi_msg(ofi_hdr(0, 1, 2)))
put("ofi_recv", "odd", ofi_msg(b"\1\0\0") + ofi_msg(ofi_hdr(1, 0, 9)) +
    ofi_msg(ofi_hdr(1, 0, -1)) + ofi_msg(ofi_hdr(1, 0x80, 0)) + ofi_msg(ofi_hdr(1, 0, 0) + b"x" * 40, maxlen=16))


# btl/verbs receive headers: setup (data receives, control receives, buffer length (2)), then
# ops: 0 spend a data credit, 1 spend a control credit, 2 L L bytes receive.
# header = tag, flags, ctl_credits, pad, credits (16), pad2 (16).
def verbs_hdr(tag, flags, credits, ctl):
    return struct.pack("<BBBxHxx", tag, flags, ctl, credits)


def verbs_msg(data):
    return bytes([2]) + struct.pack("<H", len(data)) + data


put("verbs_recv", "credits", bytes([16, 4]) + struct.pack("<H", 4104) + bytes([0, 0, 0, 1]) +
    verbs_msg(verbs_hdr(5, 0, 2, 0) + b"payload") + verbs_msg(verbs_hdr(0, 1, 1, 1)))
put("verbs_recv", "too-many", bytes([16, 4]) + struct.pack("<H", 4104) +
    verbs_msg(verbs_hdr(5, 0, 3, 0)))
put("verbs_recv", "odd", bytes([16, 4]) + struct.pack("<H", 64) + bytes([0]) +
    verbs_msg(b"\1\2") + verbs_msg(verbs_hdr(1, 0x40, 0, 0)) + verbs_msg(verbs_hdr(0, 1, 0, 0) + b"x"))


# btl/verbs modex: index, rank, job size, flags (1 set ranks, 2 set ports), then the blob:
# nmodules, nranks, per port {gid[16], lid, port, link layer, mtu, pad[3], psn, ka_rkey,
# ka_addr, qpn[nranks]} padded to 8 bytes.
def verbs_port(nranks, qpn0=0x11, lid=1, ll=1, mtu=5, psn=0x123456):
    rec = (b"\xfe\x80" + b"\0" * 14 + struct.pack("<HBBB3xIIQ", lid, 1, ll, mtu, psn, 0x55, 0x1000) +
           b"".join(struct.pack("<I", qpn0 + r) for r in range(nranks)))
    return rec + b"\0" * (-len(rec) % 8)


def verbs_blob(ports, nranks):
    return struct.pack("<II", len(ports), nranks) + b"".join(ports)


put("verbs_modex", "one-port", bytes([0, 1, 4, 0]) + verbs_blob([verbs_port(4)], 4))
put("verbs_modex", "two-ports", bytes([1, 2, 3, 0]) + verbs_blob([verbs_port(3), verbs_port(3, ll=2, lid=0)], 3))
put("verbs_modex", "no-such-port", bytes([2, 0, 4, 0]) + verbs_blob([verbs_port(4)], 4))
put("verbs_modex", "other-job", bytes([0, 0, 2, 0]) + verbs_blob([verbs_port(4)], 4))
put("verbs_modex", "truncated", bytes([0, 0, 4, 0]) + verbs_blob([verbs_port(4)], 4)[:40])
put("verbs_modex", "huge-counts", bytes([0, 0, 4, 0]) + struct.pack("<II", 0x40000000, 0xfffffff8) + b"\0" * 40)
put("verbs_modex", "fix-counts", bytes([0, 0, 4, 3]) + b"\0" * 8 + verbs_port(4, mtu=9, ll=5))

# transfer engine messages (runtime/xfer/path_stage.c, stage_target.c, notify.c): tag 16 + op % 7
# (16 NOTIFY, 17 WRITE, 18 WACK, 19 READ, 20 RDATA, 21 REVOKE, 22 RVACK); staged header: token,
# region, offset (u64), len (u32), cookie (u16), status, pad (u8). A region
# id below 4 names the harness's region, a token below 8 the request that
# holds bounce buffer `cookie`.
def xinject(tag, payload, split=0):
    return bytes([tag - 16]) + struct.pack("<HB", len(payload), split) + payload


def shdr(token=0, region=0, offset=0, length=0, cookie=0, status=0):
    return struct.pack("<QQQIHBB", token, region, offset, length, cookie, status, 0)


def xsubmit(read, off, length):
    return bytes([0x80 | (1 if read else 0)]) + struct.pack("<HH", off, length)


def note(payload):
    return struct.pack("<II", len(payload), 0) + payload


XPROG, XRECV = b"\x90", b"\xa0" + struct.pack("<H", 64)
put("xfer_am", "notify", xinject(16, note(b"hello")) + XRECV + xinject(16, note(b"x" * 100), 5) +
    b"\xa0" + struct.pack("<H", 10) + XRECV)
put("xfer_am", "notify-bad", xinject(16, b"\x01") + xinject(16, struct.pack("<II", 2000, 0)) +
    xinject(16, note(b"ab")[:-1]) + b"\xb0" + struct.pack("<H", 7) + XRECV)
put("xfer_am", "write", xinject(17, shdr(0x10, 0, 100, 8) + b"ABCDEFGH", 30) +
    xinject(17, shdr(0x10, 0, 4090, 8) + b"ABCDEFGH") + xinject(17, shdr(0x10, 99, 0, 4) + b"abcd") +
    XPROG)
put("xfer_am", "read", xinject(19, shdr(0x20, 0, 0, 64)) + xinject(19, shdr(0x20, 0, 4000, 200)) +
    xinject(19, shdr(0x20, 1234, 0, 1)) + XPROG + XPROG)
put("xfer_am", "replies", xsubmit(True, 0, 600) + xsubmit(False, 1000, 600) +
    xinject(20, shdr(0, 0, 0, 16, 0) + b"r" * 16) + xinject(18, shdr(0, 0, 1000, 256, 1)) +
    xinject(20, shdr(0, 0, 0, 0, 2, 1)) + XPROG + b"\xd0" + XPROG * 4)
put("xfer_am", "free", xsubmit(False, 0, 300) + b"\xc0" + XPROG * 3 + b"\xc0" +
    xinject(17, shdr(0x10, 0, 0, 4) + b"abcd") + xsubmit(True, 0, 100) + XPROG * 3)
put("xfer_am", "revoke", xinject(21, shdr(0, 0)) + xinject(22, shdr(0, 0)) + xinject(21, b"\x01") +
    XPROG)
put("xfer_am", "short", xinject(17, b"\x00" * 10) + xinject(18, b"") + xinject(20, b"\x01" * 20) +
    xinject(19, shdr(0, 0, 0, 0xffffffff)) + XPROG)


# shareable-memory descriptions (components/btl/shm/shm_xfer.c): a flags byte
# (1 XOR over allocation (bit 1)'s real description, 4 from rank 1, 8 plant a
# file, 16 with a matching header, 32 of the described size), then the
# description: key, size (u64), owner rank (i32), id (u32).
def mdesc(key=0, size=4096, owner=0, ident=0):
    return struct.pack("<QQiI", key, size, owner, ident)


put("xfer_map", "real-0", bytes([1]) + b"\0" * 24)
put("xfer_map", "real-1", bytes([3]) + b"\0" * 24)
put("xfer_map", "real-1-from-rank-1", bytes([7]) + b"\0" * 24)
put("xfer_map", "wrong-key", bytes([1]) + b"\x01" + b"\0" * 23)
put("xfer_map", "wrong-size", bytes([1]) + b"\0" * 9 + b"\x10" + b"\0" * 14)
put("xfer_map", "odd-size", bytes([1]) + b"\0" * 8 + b"\x01" + b"\0" * 15)
put("xfer_map", "short", bytes([1]) + b"\0" * 5)
put("xfer_map", "long", bytes([0]) + mdesc() + b"\0" * 8)
put("xfer_map", "no-file", bytes([0]) + mdesc(ident=999))
put("xfer_map", "planted-forged", bytes([8 | 32]) + mdesc(0x1234, 4096, 0, 77))
put("xfer_map", "planted-matching", bytes([8 | 16 | 32]) + mdesc(0x1234, 4096, 0, 78))
put("xfer_map", "planted-short-file", bytes([8 | 16]) + mdesc(0x1234, 8192, 0, 79))
put("xfer_map", "huge-size", bytes([0]) + mdesc(1, 1 << 62, 0, 1))

# runtime/peer: contact strings (px-peer:<version>:<a.b.c.d>:<port>:<host>:<pid>:<instance>)
for i, c in enumerate(["px-peer:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5",
                       "px-peer:1:10.211.3.2:1:a:1:0000000000000000",
                       "px-peer:1:127.0.0.1:65536:node7:12345:9f3a2c1b7e60d4a5",
                       "px-peer:1:127.0.0.01:40123:node7:12345:9f3a2c1b7e60d4a5",
                       "px-peer:2:127.0.0.1:40123:n:1:9f3a2c1b7e60d4a5\n"]):
    put("peer_contact", "%02d" % i, c)


# runtime/peer's listener: byte 0 flags (1: a right HELLO first, 2: then a right AUTH over
# the rest as payload), then frames: u32 magic "PXPR", u8 version, u8 type, u16 flags, u32 len
def pframe(ptype, body, version=1, flags=0, length=None):
    return struct.pack(">IBBHI", 0x50585052, version, ptype, flags,
                       len(body) if length is None else length) + body


def phello(instance=0, pid=1, host=b"h"):
    return b"\x07" * 32 + struct.pack(">QI", instance, pid) + host.ljust(64, b"\0")


put("peer_accept", "00-hello-stale", b"\x00" + pframe(1, phello(5)))
put("peer_accept", "01-hello-then-bad-auth", b"\x01" + pframe(3, b"\0" * 32 + b"payload"))
put("peer_accept", "02-authed-payload", b"\x03" + b"a payload the BTL would give")
put("peer_accept", "03-auth-too-long", b"\x01" + pframe(3, b"", length=0x7fffffff))
put("peer_accept", "04-version-2", b"\x00" + pframe(1, phello(), version=2))
put("peer_accept", "05-half-hello", b"\x00" + pframe(1, phello())[:40])
put("peer_accept", "06-host-unpadded", b"\x00" + pframe(1, phello(host=b"h\0x")))

# dynamic peer payloads of the BTL base (frameworks/btl/base/base.h): header
# "PXDY", version, kind, part count, connection id, total length; parts of
# name, version, module index, status, length, bytes.
def dpart(name, data=b"", index=0, status=0, ver=(1, 0, 0)):
    return (bytes([len(name)]) + name.encode() + struct.pack("<HHHBBH", *ver, index, status,
                                                             len(data)) + data)


def dyn(kind, parts, conn=0x1122334455667788, nparts=None, total=None, magic=b"PXDY", ver=1):
    body = b"".join(parts)
    n = len(parts) if nparts is None else nparts
    t = 20 + len(body) if total is None else total
    return magic + bytes([ver, kind]) + struct.pack("<HQI", n, conn, t) + body


SELF = struct.pack("<IIQQ", 0x666c6573, 1234, 99, 1)
put("btl_dyn", "offer-self", dyn(1, [dpart("self", SELF)]))
put("btl_dyn", "offer-two", dyn(1, [dpart("self", SELF), dpart("shm", b"\0" * 64)]))
put("btl_dyn", "reply-declined", dyn(2, [dpart("self", b"other process", status=1)]))
put("btl_dyn", "empty", dyn(1, []))
put("btl_dyn", "truncated", dyn(1, [dpart("self", SELF)])[:-3])
put("btl_dyn", "total-lies", dyn(1, [dpart("self", SELF)], total=9999))
put("btl_dyn", "too-many", dyn(1, [], nparts=40))
put("btl_dyn", "bad-name", dyn(1, [dpart("Self", SELF)]))
put("btl_dyn", "dup", dyn(1, [dpart("self", SELF), dpart("self", SELF)]))


# btl/verbs's part (components/btl/verbs/verbs_wire.h): magic "PXVB", version,
# link layer, port, MTU, LID, flags, QP number, PSN, data and control receives,
# receive buffer size, keepalive rkey and address, GID.
def verbs_dyn(ver=1, ll=1, port=1, mtu=5, lid=1, flags=0, qpn=0x1234, psn=0xabcde, recvs=16,
              ctl=4, size=32776, gid=b"\xfe\x80" + b"\0" * 6 + b"\x02\x53\x56\x45\x52\x42\0\x01"):
    return (struct.pack("<IBBBBHHIIHHIIQ", 0x42565850, ver, ll, port, mtu, lid, flags, qpn, psn,
                        recvs, ctl, size, 0x77, 0x7f0000001000) + gid)


put("btl_dyn", "offer-verbs", dyn(1, [dpart("verbs", verbs_dyn())]))
put("btl_dyn", "reply-verbs-roce", dyn(2, [dpart("verbs", verbs_dyn(ll=2, lid=0, mtu=3))]))
put("btl_dyn", "verbs-two-ports", dyn(1, [dpart("verbs", verbs_dyn()),
                                          dpart("verbs", verbs_dyn(port=2, lid=2), index=1)]))
put("btl_dyn", "verbs-bad-qpn", dyn(1, [dpart("verbs", verbs_dyn(qpn=0x1000000))]))
put("btl_dyn", "verbs-short", dyn(1, [dpart("verbs", verbs_dyn()[:-1])]))
put("btl_dyn", "verbs-no-gid", dyn(1, [dpart("verbs", verbs_dyn(lid=0, gid=b"\0" * 16))]))
put("btl_dyn", "bad-kind", dyn(7, [dpart("self", SELF)]))
put("btl_dyn", "version-2", dyn(1, [dpart("self", SELF)], ver=2))


# registry entries (runtime/name/entry.c): JSON written by anyone
ent = ('{"plexus":1,"kind":"region","contact":"tcp://127.0.0.1:4000/ab12","key":"AAECAwQFBgc=",'
       '"length":4096,"host":"node1","pid":1234,"owner":"0123456789abcdef"}')
put("name_entry", "region", ent)
put("name_entry", "contact", '{"plexus":1,"kind":"contact","contact":"tcp://h:1/x","host":"h",'
    '"pid":9,"owner":"00000000000000ff","extra":[1,2,{"a":null}]}')
put("name_entry", "newer", '{"plexus":2,"kind":"region"}')
put("name_entry", "bad-b64", ent.replace("AAECAwQFBgc=", "AAEC=wQF"))
put("name_entry", "types", ent.replace('"length":4096', '"length":"4096"'))
put("name_entry", "huge-int", ent.replace('"pid":1234', '"pid":99999999999999999999999'))
put("name_entry", "nested", "[" * 40 + "]" * 40)
put("name_entry", "trailing", ent + " x")
put("name_entry", "b64", "AAECAwQFBgc=")
put("name_entry", "name", "kv/block-7")

# registry/etcd: etcd gateway answers; byte 0 = the request kind (0 range,
# 1 put, 2 delete, 3 txn, 4 grant, 5 keepalive, 6 revoke)
hdr = '"header":{"cluster_id":"1","member_id":"2","revision":"7","raft_term":"2"}'
for i, (k, v) in enumerate([
        (0, '{%s,"kvs":[{"key":"cGxleHVzL2E=","create_revision":"2","mod_revision":"2",'
            '"version":"1","value":"eHl6","lease":"5"}],"count":"1"}' % hdr),
        (0, '{%s,"kvs":[{"key":"cGxleHVzL2E=","value":"eA=="},{"key":"cGxleHVzL2I="}],'
            '"more":true,"count":"3"}' % hdr),
        (0, '{%s}' % hdr),
        (1, '{%s}' % hdr),
        (2, '{%s,"deleted":"1"}' % hdr),
        (3, '{%s,"succeeded":true,"responses":[{"response_put":{"header":{"revision":"3"}}}]}' % hdr),
        (3, '{%s,"responses":[{"response_txn":{"header":{},"succeeded":true,"responses":'
            '[{"response_put":{}}]}}]}' % hdr),
        (3, '{%s,"responses":[{"response_range":{"kvs":[{"key":"YQ==","value":"Yg=="}],'
            '"count":"1"}}]}' % hdr),
        (3, '{%s,"succeeded":true,"responses":[{"response_delete_range":{"deleted":"1"}}]}' % hdr),
        (4, '{%s,"ID":"4111120269368035334","TTL":"5"}' % hdr),
        (5, '{"result":{%s,"ID":"4111120269368035342","TTL":"5"}}\n' % hdr),
        (5, '{"result":{%s,"ID":"12345"}}' % hdr),
        (5, '{"error":{"grpc_code":5,"http_code":404,"message":"etcdserver: requested lease '
            'not found","http_status":"Not Found"}}'),
        (6, '{"error":"etcdserver: requested lease not found","message":"etcdserver: '
            'requested lease not found","code":5}'),
        (0, '{"kvs":[{"key":1}]}'),
        (0, '{"kvs":[{"key":"AAA=","value":"YQ="}]}'),
        (4, '{"ID":"-1","TTL":"99999999999999999999"}'),
        (0, '[1,2,3]'),
]):
    put("registry_etcd", "%02d" % i, bytes([k]) + v.encode())
