"""batchcrypt: batch cryptography on NVIDIA GPUs and CPU extensions.

    >>> import batchcrypt, numpy as np
    >>> e = batchcrypt.Engine()            # "auto": the cost model picks CPU or GPU per batch
    >>> d = e.sha256d_64(np.zeros(64 * 1000, dtype=np.uint8))
    >>> d.shape, e.last_backend
    ((1000, 32), '...')

Module-level functions use one shared auto engine.
"""

from ._batchcrypt import AuthenticationError, Engine, __version__, backends, hardware, sha256

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


def verify_ecdsa_batch(hashes, sigs, pubkeys, format="der", require_low_s=False):
    """secp256k1 ECDSA over 32-byte hashes; a bool array (see Engine.last_reasons)."""
    return _engine().verify_ecdsa_batch(hashes, sigs, pubkeys, format, require_low_s)


def verify_schnorr_batch(msgs, sigs, pubkeys):
    """BIP340 Schnorr over messages of any length with x-only keys; a bool array."""
    return _engine().verify_schnorr_batch(msgs, sigs, pubkeys)


def merkle_root(txids):
    """Bitcoin merkle root of concatenated 32-byte txids."""
    return _engine().merkle_root(txids)


__all__ = ["AuthenticationError", "Engine", "backends", "hardware", "sha256", "sha256_batch", "sha256_batch_var", "sha256d_64", "merkle_root", "verify_ecdsa_batch", "verify_schnorr_batch", "__version__"]
