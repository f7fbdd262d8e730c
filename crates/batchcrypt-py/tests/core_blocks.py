"""Writes a Bitcoin Core `blocks/` directory for tests: blk*.dat records of raw blocks and rev*.dat
undo records built from a UTXO set kept here, in Core's formats (an implementation separate from
the library's, so the library's reader is checked against it)."""

import hashlib
from pathlib import Path

REGTEST_MAGIC = bytes.fromhex("fabfb5da")
REGTEST_GENESIS = bytes.fromhex(
    "0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e"
    "67768f617fc81bc3888a51323a9fb8aa4b1e5e4adae5494dffff7f20020000000101000000010000000000000000000000"
    "000000000000000000000000000000000000000000ffffffff4d04ffff001d0104455468652054696d65732030332f4a61"
    "6e2f32303039204368616e63656c6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f72"
    "2062616e6b73ffffffff0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962"
    "e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000")


def sha256d(b):
    return hashlib.sha256(hashlib.sha256(b).digest()).digest()


def compact_size(b, p):
    """The CompactSize at p, and the position after it."""
    x = b[p]
    if x < 0xfd:
        return x, p + 1
    width = {0xfd: 2, 0xfe: 4, 0xff: 8}[x]
    return int.from_bytes(b[p + 1:p + 1 + width], "little"), p + 1 + width


def parse_tx(b, p):
    """(txid, [(prev txid, vout)], [(value, script)], end) of the transaction at p."""
    start = p
    p += 4
    segwit = b[p] == 0 and b[p + 1] == 1
    if segwit:
        p += 2
    body = p
    n_in, p = compact_size(b, p)
    prevouts = []
    for _ in range(n_in):
        prevouts.append((b[p:p + 32], int.from_bytes(b[p + 32:p + 36], "little")))
        n, p = compact_size(b, p + 36)
        p += n + 4
    n_out, p = compact_size(b, p)
    outputs = []
    for _ in range(n_out):
        value = int.from_bytes(b[p:p + 8], "little")
        n, q = compact_size(b, p + 8)
        outputs.append((value, b[q:q + n]))
        p = q + n
    body_end = p
    if segwit:
        for _ in range(n_in):
            items, p = compact_size(b, p)
            for _ in range(items):
                n, p = compact_size(b, p)
                p += n
    end = p + 4
    txid = sha256d(b[start:start + 4] + b[body:body_end] + b[p:end])
    return txid, prevouts, outputs, end


def parse_block(raw):
    """[(txid, prevouts, outputs)] of a raw block."""
    n, p = compact_size(raw, 80)
    txs = []
    for _ in range(n):
        txid, prevouts, outputs, p = parse_tx(raw, p)
        txs.append((txid, prevouts, outputs))
    assert p == len(raw)
    return txs


def varint(n):
    """Core's VARINT: base 128, most significant group first, each but the last minus one."""
    out = [n & 0x7f]
    while n > 0x7f:
        n = (n >> 7) - 1
        out.append((n & 0x7f) | 0x80)
    return bytes(reversed(out))


def compress_amount(n):
    if n == 0:
        return 0
    e = 0
    while n % 10 == 0 and e < 9:
        n //= 10
        e += 1
    if e < 9:
        d = n % 10
        n //= 10
        return 1 + (n * 9 + d - 1) * 10 + e
    return 1 + (n - 1) * 10 + 9


def coin(value, script, height, coinbase):
    """One spent coin of a CTxUndo: height and coinbase flag, a version byte where the height is
    not zero, the compressed amount, the script in full (size + 6: no special form)."""
    out = varint(height * 2 + int(coinbase))
    if height > 0:
        out += varint(0)
    return out + varint(compress_amount(value)) + varint(len(script) + 6) + script


def compact(n):
    if n < 0xfd:
        return bytes([n])
    for tag, width in ((0xfd, 2), (0xfe, 4), (0xff, 8)):
        if n < 1 << (8 * width):
            return bytes([tag]) + n.to_bytes(width, "little")


def undo_records(raws):
    """The CBlockUndo of every block but the first (which must spend nothing), in order."""
    utxo, undos = {}, []
    for height, raw in enumerate(raws):
        txs = parse_block(raw)
        tx_undos = []
        for t, (txid, prevouts, outputs) in enumerate(txs):
            if t > 0:
                tx_undos.append(b"".join(coin(*utxo.pop(o)) for o in prevouts))
                tx_undos[-1] = compact(len(prevouts)) + tx_undos[-1]
            for v, (value, script) in enumerate(outputs):
                utxo[(txid, v)] = (value, script, height, t == 0)
        if height > 0:
            undos.append(compact(len(tx_undos)) + b"".join(tx_undos))
    return undos


def write_records(path, records, magic, key):
    """Records of (payload, trailer), obfuscated with the 8-byte `key` by file offset."""
    data = bytearray()
    for payload, trailer in records:
        data += magic + len(payload).to_bytes(4, "little") + payload + trailer
    data += bytes(64)  # preallocated space after the last record
    for i in range(len(data)):
        data[i] ^= key[i % 8]
    Path(path).write_bytes(bytes(data))


def write_blocks_dir(dest, raws, *, first=0, drop_undo=(), magic=REGTEST_MAGIC,
                     key=bytes.fromhex("5a110080 07ff3301"), split=120, shuffle=((3, 50), (100, 7))):
    """A blocks/ directory of the chain `raws` (from its genesis block) as of a node that keeps
    the blocks from height `first` on: the blocks in two blk files (the first `split` in the
    first), some out of order as parallel download stores them (`shuffle`: pairs of places
    swapped), and each block's undo record in the rev file of its blk file, in height order, as
    Core connects them; none for the heights in `drop_undo`. Returns `dest`."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "xor.dat").write_bytes(key)
    order = list(range(first, len(raws)))
    for a, b in shuffle:
        order[a], order[b] = order[b], order[a]
    undos = undo_records(raws)
    file_of = {h: int(i >= split) for i, h in enumerate(order)}
    for f, part in enumerate((order[:split], order[split:])):
        write_records(dest / f"blk{f:05}.dat", [(raws[h], b"") for h in part], magic, key)
        revs = [(undos[h - 1], sha256d(raws[h][4:36] + undos[h - 1]))
                for h in range(max(first, 1), len(raws)) if file_of[h] == f and h not in drop_undo]
        write_records(dest / f"rev{f:05}.dat", revs, magic, key)
    return dest


def regtest_chain(shared):
    """The regtest genesis block and the 206 blocks of the shared regtest chain after it."""
    text = (Path(shared) / "bitcoin" / "blocks" / "regtest-chain-206.hex").read_text()
    return [REGTEST_GENESIS] + [bytes.fromhex(l.strip()) for l in text.splitlines() if l.strip()]
