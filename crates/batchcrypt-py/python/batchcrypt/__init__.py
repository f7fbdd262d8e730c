"""batchcrypt: batch cryptography on NVIDIA GPUs and CPU extensions.

    >>> import batchcrypt, numpy as np
    >>> e = batchcrypt.Engine()            # "auto": the cost model picks CPU or GPU per batch
    >>> d = e.sha256d_64(np.zeros(64 * 1000, dtype=np.uint8))
    >>> d.shape, e.last_backend
    ((1000, 32), '...')

Zero-knowledge building blocks and Groth16 (snarkjs's files):

    >>> key = batchcrypt.ProvingKey("circuit.zkey")
    >>> proof, public = e.groth16_prove(key, "witness.wtns")
    >>> batchcrypt.groth16_verify("verification_key.json", public, proof)
    True

`batchcrypt.ray` spreads the same calls over a Ray cluster (an actor per GPU).

Module-level functions use one shared auto engine. `Client` calls a running `batchcrypt serve`
instead (many processes sharing one machine's GPUs):

    >>> c = batchcrypt.Client("127.0.0.1:7700")
    >>> c.hash([b"abc"], "sha256d")
"""

from ._batchcrypt import (
    AuthenticationError,
    BlocksDir,
    Client,
    Engine,
    MsmBases,
    ProvingKey,
    SharedMemory,
    __version__,
    backends,
    groth16_verify,
    hardware,
    sha256,
)

_default = None


def _engine():
    global _default
    if _default is None:
        _default = Engine()
    return _default


def sha256_batch(data, msg_len, double=False):
    """SHA-256 of equal-length messages; returns an (n, 32) uint8 array."""
    return _engine().sha256_batch(data, msg_len, double)


def sha256_batch_var(data, offsets, double=False):
    """SHA-256 of messages data[offsets[i]:offsets[i+1]] (offsets: uint64 array of n + 1)."""
    return _engine().sha256_batch_var(data, offsets, double)


def sha256d_64(data):
    """Bitcoin SHA256d of 64-byte messages (merkle nodes)."""
    return _engine().sha256d_64(data)


def verify_ecdsa_batch(hashes, sigs, pubkeys, format="der", require_low_s=False, curve="secp256k1"):
    """ECDSA over 32-byte hashes on secp256k1 or P-256 ("p256"); a bool array (see
    Engine.last_reasons)."""
    return _engine().verify_ecdsa_batch(hashes, sigs, pubkeys, format, require_low_s, curve)


def verify_schnorr_batch(msgs, sigs, pubkeys):
    """BIP340 Schnorr over messages of any length with x-only keys; a bool array."""
    return _engine().verify_schnorr_batch(msgs, sigs, pubkeys)


def sm2_mul_base(scalars):
    """SM2 k*G for 32-byte big-endian scalars; an (n, 64) uint8 array of x || y."""
    return _engine().sm2_mul_base(scalars)


def sm2_mul(k, points):
    """SM2 k*P for one scalar over n x 64 (x || y) or n x 33 (compressed) points; (points, ok)."""
    return _engine().sm2_mul(k, points)


def sm2_hash_to_curve_mul(k, msgs, dst=None):
    """SM2 k*H(m) (RFC 9380, SM2_XMD:SM3_SSWU_RO_); an (n, 33) array of compressed points."""
    e = _engine()
    return e.sm2_hash_to_curve_mul(k, msgs) if dst is None else e.sm2_hash_to_curve_mul(k, msgs, dst)


def sm2_verify_batch(msgs, sigs, pubkeys, id=b"1234567812345678", format="der"):
    """SM2 signatures (GM/T 0003.2) over messages with the signers' identifier; a bool array."""
    return _engine().sm2_verify_batch(msgs, sigs, pubkeys, id, format)


def sm3_batch(data, msg_len):
    """SM3 of equal-length messages; an (n, 32) uint8 array."""
    return _engine().sm3_batch(data, msg_len)


def merkle_root(txids):
    """Bitcoin merkle root of concatenated 32-byte txids."""
    return _engine().merkle_root(txids)


def verify_block(block, spent, *, spent_format=None, height=None, network="main", check_pow=True):
    """Validates a Bitcoin block with the outputs it spends; a dict (see Engine.verify_block)."""
    return _engine().verify_block(block, spent, spent_format=spent_format, height=height,
                                  network=network, check_pow=check_pow)


def verify_transactions(txs):
    """Checks loose Bitcoin transactions in one batch; a list of dicts (see Engine.verify_transactions)."""
    return _engine().verify_transactions(txs)


def aes_xts_encrypt(key, tweak, data, unit=None):
    """XTS-AES encryption of data units of `unit` bytes (default: one unit), unit j under tweak + j."""
    return _engine().aes_xts_encrypt(key, tweak, data, unit)


def aes_xts_decrypt(key, tweak, data, unit=None):
    """XTS-AES decryption, the inverse of aes_xts_encrypt."""
    return _engine().aes_xts_decrypt(key, tweak, data, unit)


def encrypt_file(key, input, output, **kw):
    """Encrypts a file (chunked authenticated GCM, or mode="ctr" with iv); see Engine.encrypt_file."""
    return _engine().encrypt_file(key, input, output, **kw)


def decrypt_file(key, input, output, **kw):
    """Decrypts a file made by encrypt_file; see Engine.decrypt_file."""
    return _engine().decrypt_file(key, input, output, **kw)


def msm(bases, scalars, curve="bn254", group="g1"):
    """sum scalars[i] * bases[i] on BN254 or BLS12-381, G1 or G2; see Engine.msm."""
    return _engine().msm(bases, scalars, curve, group)


def ntt(values, size=None, inverse=False, coset=None, curve="bn254"):
    """Fr NTT (BN254 or BLS12-381) of polynomials of `size` elements; see Engine.ntt."""
    return _engine().ntt(values, size, inverse, coset, curve)


def groth16_prove(key, witness):
    """A Groth16 proof as snarkjs writes it: (proof.json, public.json); see Engine.groth16_prove."""
    return _engine().groth16_prove(key, witness)


__all__ = ["AuthenticationError", "BlocksDir", "Client", "Engine", "MsmBases", "ProvingKey", "SharedMemory", "groth16_verify", "groth16_prove",
           "msm", "ntt", "aes_xts_encrypt", "aes_xts_decrypt", "encrypt_file", "decrypt_file", "backends", "hardware", "sha256", "sha256_batch", "sha256_batch_var", "sha256d_64", "merkle_root", "verify_block", "verify_transactions", "verify_ecdsa_batch", "verify_schnorr_batch", "sm2_mul_base", "sm2_mul", "sm2_hash_to_curve_mul", "sm2_verify_batch", "sm3_batch", "__version__"]
