"""Type stubs of the native module (batchcrypt re-exports it)."""

import os
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, TypedDict, Union

import numpy as np
import numpy.typing as npt

__version__: str

_Bytes = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]
_Path = Union[str, "os.PathLike[str]"]
_Points = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint64]]
_PathOrBytes = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
_Curve = Literal["bn254", "bls12_381", "bls12-381"]
_Rows = Union[Sequence[_Bytes], npt.NDArray[np.uint8]]

class AuthenticationError(ValueError): ...

class BlockResult(TypedDict):
    """What Engine.verify_block returns."""

    valid: bool
    reason: Optional[str]
    tx: Optional[int]
    input: Optional[int]
    hash: str
    height: int
    flags: str
    txs: int
    inputs: int
    weight: int
    sigop_cost: int
    fees: int
    unchecked: List[str]
    scripts_checked: bool
    ecdsa_checks: int
    schnorr_checks: int
    ecdsa_backend: Optional[str]
    schnorr_backend: Optional[str]
    replayed_inputs: int
    structure_time: float
    inputs_time: float
    scripts_time: float
    interpreter_time: float
    signatures_time: float
    replay_time: float

class ServedBlockResult(TypedDict):
    """What Client.verify_block returns."""

    valid: bool
    reason: Optional[str]
    hash: str
    height: int
    txs: int
    inputs: int
    weight: int
    sigop_cost: int
    fees: int
    unchecked: List[str]
    flags: str
    ecdsa_checks: int
    schnorr_checks: int
    ecdsa_backend: Optional[str]
    schnorr_backend: Optional[str]
    structure_time: float
    inputs_time: float
    scripts_time: float

class TxResult(TypedDict):
    """One transaction's verdict from Engine.verify_transactions."""

    valid: bool
    input: Optional[int]
    reason: Optional[str]

class Engine:
    last_backend: Optional[str]
    last_reasons: List[Optional[str]]
    def __init__(self, backend: str = "auto", gpus: Optional[List[int]] = None) -> None: ...
    def sha256_batch(self, data: _Bytes, msg_len: int, double: bool = False) -> npt.NDArray[np.uint8]: ...
    def sha256_batch_var(
        self, data: _Bytes, offsets: npt.NDArray[np.uint64], double: bool = False
    ) -> npt.NDArray[np.uint8]: ...
    def sha256d_64(self, data: _Bytes) -> npt.NDArray[np.uint8]: ...
    def verify_ecdsa_batch(
        self,
        hashes: Union[_Bytes, _Rows],
        sigs: _Rows,
        pubkeys: _Rows,
        format: Literal["der", "compact"] = "der",
        require_low_s: bool = False,
        curve: Literal["secp256k1", "p256", "secp256r1", "P-256"] = "secp256k1",
    ) -> npt.NDArray[np.bool_]: ...
    def verify_schnorr_batch(
        self, msgs: _Rows, sigs: Union[_Bytes, _Rows], pubkeys: Union[_Bytes, _Rows]
    ) -> npt.NDArray[np.bool_]: ...
    def aes_ctr(self, key: bytes, iv: bytes, data: _Bytes) -> bytes: ...
    def aes_gcm_encrypt(self, key: bytes, iv: bytes, data: _Bytes, aad: bytes = b"") -> Tuple[bytes, bytes]: ...
    def aes_gcm_decrypt(self, key: bytes, iv: bytes, data: _Bytes, tag: bytes, aad: bytes = b"") -> bytes: ...
    def aes_xts_encrypt(self, key: bytes, tweak: bytes, data: _Bytes, unit: Optional[int] = None) -> bytes: ...
    def aes_xts_decrypt(self, key: bytes, tweak: bytes, data: _Bytes, unit: Optional[int] = None) -> bytes: ...
    def aes_ctr_batch(self, keys: Union[bytes, _Rows], ivs: Union[_Bytes, _Rows], data: _Bytes,
                      offsets: Optional[npt.NDArray[np.uint64]] = None, msg_len: Optional[int] = None) -> bytes: ...
    def aes_gcm_encrypt_batch(self, keys: Union[bytes, _Rows], nonces: Union[_Bytes, _Rows], data: _Bytes,
                              offsets: Optional[npt.NDArray[np.uint64]] = None, msg_len: Optional[int] = None,
                              aads: Optional[_Rows] = None) -> Tuple[bytes, npt.NDArray[np.uint8]]: ...
    def aes_gcm_decrypt_batch(self, keys: Union[bytes, _Rows], nonces: Union[_Bytes, _Rows], data: _Bytes,
                              tags: Union[_Bytes, _Rows], offsets: Optional[npt.NDArray[np.uint64]] = None,
                              msg_len: Optional[int] = None,
                              aads: Optional[_Rows] = None) -> Tuple[bytes, npt.NDArray[np.bool_]]: ...
    def aes_xts_encrypt_batch(self, keys: Union[bytes, _Rows], tweaks: Union[_Bytes, _Rows], data: _Bytes,
                              offsets: Optional[npt.NDArray[np.uint64]] = None, msg_len: Optional[int] = None) -> bytes: ...
    def aes_xts_decrypt_batch(self, keys: Union[bytes, _Rows], tweaks: Union[_Bytes, _Rows], data: _Bytes,
                              offsets: Optional[npt.NDArray[np.uint64]] = None, msg_len: Optional[int] = None) -> bytes: ...
    def encrypt_file(self, key: bytes, input: _Path, output: _Path, *, mode: Literal["gcm", "ctr"] = "gcm",
                     iv: Optional[bytes] = None, chunk_log2: int = 24) -> int: ...
    def decrypt_file(self, key: bytes, input: _Path, output: _Path, *, mode: Literal["gcm", "ctr"] = "gcm",
                     iv: Optional[bytes] = None) -> int: ...
    def msm(self, bases: Union["MsmBases", _Points], scalars: _Points, curve: _Curve = "bn254",
            group: Literal["g1", "g2"] = "g1") -> Union[bytes, npt.NDArray[np.uint64]]:
        """sum scalars[i] * bases[i]; points as arkworks bytes or uint64 limbs (x, then y), the
        result in the same form; scalars 32 bytes little-endian each or (n, 4) uint64, read in
        place (bytes or a contiguous array: no copy, no conversion; the GIL is released)."""
    def msm_bases(self, points: _Points, curve: _Curve = "bn254", group: Literal["g1", "g2"] = "g1",
                  precompute: int = 1) -> "MsmBases": ...
    def ntt(self, values: _Points, size: Optional[int] = None, inverse: bool = False,
            coset: Union[None, bool, int] = None, curve: str = "bn254",
            out: Optional[npt.NDArray[np.uint64]] = None) -> Union[bytes, npt.NDArray[np.uint64]]:
        """Fr NTT of curve ("bn254" or "bls12_381") in natural order on snarkjs's roots, per polynomial of size;
        into out (a C-contiguous uint64 array apart from values) when given."""
    def groth16_prove(self, key: Union["ProvingKey", _PathOrBytes], witness: _PathOrBytes) -> Tuple[str, str]:
        """(proof.json, public.json) as snarkjs writes them."""
    def psi(self, items: _Path, *, listen: Optional[str] = None, connect: Optional[str] = None,
            output: Optional[_Path] = None, chunk: int = 262144, timeout: float = 300.0) -> npt.NDArray[np.uint64]:
        """One party of an ECDH-PSI run; the 0-based line numbers of the common items."""
    def sm2_mul_base(self, scalars: Union[_Bytes, _Rows]) -> npt.NDArray[np.uint8]: ...
    def sm2_mul(
        self, k: bytes, points: _Rows
    ) -> Tuple[npt.NDArray[np.uint8], npt.NDArray[np.bool_]]: ...
    def sm2_hash_to_curve_mul(self, k: bytes, msgs: _Rows, dst: bytes = ...) -> npt.NDArray[np.uint8]: ...
    def sm2_verify_batch(
        self,
        msgs: _Rows,
        sigs: _Rows,
        pubkeys: _Rows,
        id: bytes = b"1234567812345678",
        format: Literal["der", "compact"] = "der",
    ) -> npt.NDArray[np.bool_]: ...
    def sm3_batch(self, data: _Bytes, msg_len: int) -> npt.NDArray[np.uint8]: ...
    def merkle_root(self, txids: _Bytes) -> bytes: ...
    def verify_block(
        self,
        block: _Bytes,
        spent: Union[str, os.PathLike[str], _Bytes],
        *,
        spent_format: Optional[Literal["undo", "spent.json", "rev"]] = None,
        height: Optional[int] = None,
        network: Literal["main", "mainnet", "test", "testnet", "testnet3", "regtest"] = "main",
        check_pow: bool = True,
        median_time_past: Optional[int] = None,
    ) -> BlockResult:
        """Validates one Bitcoin block with the outputs its inputs spend (a path, format by its
        extension: .undo, .spent.json, .rev; or bytes with spent_format). An invalid block gives
        valid=False with reason/tx/input; unusable data raises ValueError (OSError for a file).
        median_time_past: the previous block's, where known (time rules are otherwise listed in
        `unchecked`)."""
    def verify_transactions(self, txs: Sequence[Dict[str, Any]]) -> List[TxResult]:
        """Checks loose transactions, each {"tx": hex|bytes, "spent": [{"value": int,
        "script_pubkey": hex|bytes}, ...], "flags": "P2SH,WITNESS" (optional; default every
        consensus rule)}, all signatures in one batch; one {"valid", "input", "reason"} each."""

class ChainEntry(TypedDict):
    """A block of a BlocksDir's best chain (BlocksDir.range)."""

    hash: str
    height: Optional[int]
    position: int

class BlockItem(TypedDict):
    """Engine.verify_block's arguments for one block of a BlocksDir (BlocksDir.load)."""

    block: bytes
    spent: bytes
    spent_format: Literal["rev"]
    height: Optional[int]
    network: str

class BlocksDir:
    """A Bitcoin Core blocks/ directory (blk*.dat, rev*.dat, xor.dat), read-only: its best
    chain, and each block with its undo record as Engine.verify_block takes them."""

    path: str
    network: str
    def __init__(self, path: Union[str, "os.PathLike[str]"], network: str = "main") -> None: ...
    def __len__(self) -> int: ...
    def range(self, start: Optional[int] = None, count: Optional[int] = None) -> List[ChainEntry]:
        """The chain's blocks from height `start` (default: all but genesis), at most `count`."""
    def load(self, blocks: Sequence[Union[ChainEntry, int]]) -> List[BlockItem]:
        """Each block's raw bytes and Core undo record, for Engine.verify_block(**item)."""

class MsmBases:
    """Fixed MSM bases, checked once and kept in GPU memory across calls (Engine.msm_bases)."""

    curve: str
    group: str
    def __len__(self) -> int: ...
    def release_device(self) -> None: ...

class ProvingKey:
    """A Groth16 proving key from snarkjs's .zkey (BN254 or BLS12-381), kept for many proofs."""

    curve: str  # "bn128" or "bls12381", as snarkjs names them
    n_vars: int
    n_public: int
    domain_size: int
    device_bytes: int
    def __init__(self, zkey: _PathOrBytes, precompute: int = 1) -> None: ...
    def release_device(self) -> None: ...

def groth16_verify(key: Union[ProvingKey, str, "os.PathLike[str]"], public: Union[str, "os.PathLike[str]"],
                   proof: Union[str, "os.PathLike[str]"]) -> bool:
    """snarkjs's verification_key.json (or a ProvingKey), public.json and proof.json, as text or paths."""
def sha256(data: bytes, double: bool = False) -> bytes: ...
def backends(primitive: Optional[str] = None) -> List[Tuple[str, Optional[str]]]: ...
def hardware() -> str: ...


class JobInfo(TypedDict):
    """A proof job's state (Client.job, Client.cancel)."""

    job_id: str
    circuit_id: str
    state: Literal["queued", "running", "done", "failed", "cancelled", "expired"]
    error: Optional[str]
    priority: int
    attempts: int

class CircuitInfo(TypedDict):
    """What Client.register returns."""

    circuit_id: str
    domain: int
    signals: int
    key_bytes: int
    proof_bytes: int

class SharedMemory:
    """A shared-memory region registered with a server on this machine (Client.shared_memory):
    write items into it, name its spans in requests, read results from it. Its file is removed
    when it is released or garbage-collected."""

    @property
    def id(self) -> int: ...
    def write(self, data: _Bytes, offset: int = 0) -> None: ...
    def read(self, length: int, offset: int = 0) -> bytes: ...
    def fileno(self) -> int:
        """The file's descriptor, to map it (mmap.mmap(region.fileno(), size)) and fill it in place."""
        ...

class Client:
    """A connection to a running `batchcrypt serve` (see docs/service.md). Verification calls
    return one entry per item: None where it is valid, else the reason it is not. Calls release
    the GIL while they wait; errors from the server raise RuntimeError("Code: message")."""

    def __init__(self, address: str = "127.0.0.1:7700", token: Optional[str] = None,
                 tls_ca: Optional[_PathOrBytes] = None, frames: Optional[str] = None) -> None:
        """`frames`: the server's frames socket (`batchcrypt serve --frames-socket PATH`, on this
        machine): the verification and hash calls then go over it, everything else over gRPC."""
        ...
    def ready(self) -> bool: ...
    def verify_ecdsa(self, hashes: _Rows, sigs: _Rows, pubkeys: _Rows, format: Literal["der", "compact"] = "der",
                     require_low_s: bool = False,
                     curve: Literal["secp256k1", "p256", "secp256r1", "P-256"] = "secp256k1",
                     shared: Optional[Tuple[SharedMemory, int]] = None) -> List[Optional[str]]:
        """Per item None (valid) or the reason it is not. With shared=(region, offset) the items
        go through the shared-memory region from `offset` on (as many bytes as they hold), not the
        message."""
        ...
    def verify_schnorr(self, msgs: _Rows, sigs: _Rows, pubkeys: _Rows,
                       shared: Optional[Tuple[SharedMemory, int]] = None) -> List[Optional[str]]: ...
    def verify_schnorr_many(self, batches: Sequence[Tuple[_Rows, _Rows, _Rows]]) -> List[List[Optional[str]]]:
        """Many (msgs, sigs, pubkeys) BIP340 batches over one stream to the server: per batch, per
        item None (valid) or the reason."""
        ...
    def verify_sm2(self, msgs: _Rows, sigs: _Rows, pubkeys: _Rows, id: Optional[bytes] = None,
                   format: Literal["der", "compact"] = "der",
                   shared: Optional[Tuple[SharedMemory, int]] = None) -> List[Optional[str]]: ...
    def hash(self, messages: _Rows, algorithm: Literal["sha256", "sha256d", "sm3"] = "sha256") -> List[bytes]: ...
    def hash_packed(self, data: _Bytes, message_len: int,
                    algorithm: Literal["sha256", "sha256d", "sm3"] = "sha256") -> bytes: ...
    def shared_memory(self, name: str, size: int, dir: Optional[str] = None) -> SharedMemory:
        """Creates the file batchcrypt-<name> of `size` bytes in `dir` (the server's --shared-memory
        directory, /dev/shm by default) and registers it with the server, which must run on this
        machine and as this user."""
        ...
    def release_shared_memory(self, region: SharedMemory) -> None:
        """Unregisters the region and removes its file."""
        ...
    def hash_shared(self, region: SharedMemory, offset: int, count: int, message_len: int,
                    digests_offset: int, algorithm: Literal["sha256", "sha256d", "sm3"] = "sha256") -> int:
        """Hashes `count` messages of `message_len` bytes at `offset` of the region into it (32
        bytes each from `digests_offset`); only the spans cross the connection. Returns the size
        of the batch they ran in."""
        ...
    def hash_packed_many(self, batches: Sequence[_Bytes], message_len: int,
                         algorithm: Literal["sha256", "sha256d", "sm3"] = "sha256") -> List[bytes]:
        """Many packed batches over one stream to the server: per batch its digests, back to back."""
        ...
    def verify_ecdsa_many(self, batches: Sequence[Tuple[_Rows, _Rows, _Rows]],
                          format: Literal["der", "compact"] = "der", require_low_s: bool = False,
                          curve: Literal["secp256k1", "p256"] = "secp256k1") -> List[List[Optional[str]]]:
        """Many (hashes, sigs, pubkeys) batches over one stream to the server (a message each way
        per batch rather than a call): per batch, per item None (valid) or the reason."""
        ...
    def register(self, zkey: _PathOrBytes, name: str = "") -> CircuitInfo: ...
    def prove(
        self, circuit_id: str, witness: _PathOrBytes, priority: int = 0, deadline: Optional[float] = None
    ) -> Tuple[str, str]: ...
    def submit(
        self,
        circuit_id: str,
        witness: _PathOrBytes,
        request_id: str = "",
        priority: int = 0,
        deadline: Optional[float] = None,
    ) -> str: ...
    def wait(self, job_id: str) -> Tuple[str, str]: ...
    def job(self, job_id: str) -> JobInfo: ...
    def cancel(self, job_id: str) -> JobInfo: ...
    def verify_block(
        self,
        block: _Bytes,
        spent: Union[str, os.PathLike[str], _Bytes],
        *,
        spent_format: Optional[Literal["undo", "spent.json", "rev"]] = None,
        height: Optional[int] = None,
        network: Literal["main", "mainnet", "test", "testnet", "testnet3", "regtest"] = "main",
        check_pow: bool = True,
        median_time_past: Optional[int] = None,
    ) -> ServedBlockResult:
        """Engine.verify_block on the server (the spent outputs read here, sent with the block)."""
    def verify_transactions(self, txs: Sequence[Dict[str, Any]]) -> List[TxResult]:
        """Engine.verify_transactions on the server, batched with other clients' transactions."""
    def sm2_hash_to_curve_mul(self, k: bytes, msgs: _Rows, dst: bytes = ...) -> npt.NDArray[np.uint8]:
        """Engine.sm2_hash_to_curve_mul on the server: (n, 33) compressed points."""
    def sm2_mul_compressed(self, k: bytes, points: _Rows) -> Tuple[npt.NDArray[np.uint8], npt.NDArray[np.bool_]]:
        """Engine.sm2_mul on the server for compressed points: (points, ok)."""
    def encrypt_file(self, key: bytes, input: _Path, output: _Path, *, mode: Literal["gcm", "ctr"] = "gcm",
                     iv: Optional[bytes] = None, chunk_log2: int = 24) -> int:
        """Engine.encrypt_file on the server (GCM chunks of at most 2^26 bytes there)."""
    def decrypt_file(self, key: bytes, input: _Path, output: _Path, *, mode: Literal["gcm", "ctr"] = "gcm",
                     iv: Optional[bytes] = None) -> int:
        """Engine.decrypt_file on the server; the output appears only once every chunk
        authenticated (RuntimeError "DataLoss" otherwise)."""
