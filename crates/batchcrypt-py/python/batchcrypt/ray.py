"""batchcrypt over a Ray cluster: one actor per GPU (CPU-only actors where there is none), and
calls that cut a job into chunks, spread them over the actors and return the results in order.
A chunk whose actor dies (a killed worker process, a lost node) runs again on another actor; the
dead actor is replaced.

    import ray
    import batchcrypt.ray as bcray

    ray.init(address="auto")            # or ray.init() for a local one
    pool = bcray.Pool()                 # an actor per GPU of the cluster; CPU actors if none
    ok = pool.verify_schnorr(msgs, sigs, keys)               # a bool array, in input order
    digests = pool.sha256(data, msg_len=64, double=True)     # (n, 32) uint8
    proofs = pool.prove("circuit.zkey", ["a.wtns", "b.wtns"])  # [(proof.json, public.json)]
    bases = pool.msm_bases(points)                           # each actor keeps its slice
    total = pool.msm(bases, scalars)                         # the partial sums added here
    reports = pool.verify_blocks([{"block": "b.raw", "spent": "b.undo"}, ...])
    reports = pool.verify_chain_range("~/.bitcoin/blocks", start=800_000, count=1000)
    ds = bcray.verify_dataset(ray.data.read_parquet(...), "schnorr")   # adds a "valid" column

Each actor holds one `batchcrypt.Engine`; a GPU actor sees the one GPU Ray gave it, and its
engine still chooses per chunk between that GPU and the node's CPU cores by its cost model.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import ray
from ray.exceptions import (
    ActorDiedError,
    GetTimeoutError,
    ActorUnavailableError,
    NodeDiedError,
    ObjectLostError,
    RayActorError,
    RayTaskError,
    WorkerCrashedError,
)

from . import BlocksDir, Engine, ProvingKey, hardware

# Failures of the machinery, not of the work: the chunk runs again elsewhere.
_LOST = (ActorDiedError, ActorUnavailableError, RayActorError, WorkerCrashedError, NodeDiedError, ObjectLostError)

DEFAULT_CHUNK = 1 << 18


class _Worker:
    """An actor: one engine, and the proving keys it has been sent (by object id)."""

    def __init__(self, backend: str):
        self._engine = Engine(backend)
        self._keys: dict = {}
        self._bases: dict = {}

    def where(self) -> dict:
        ctx = ray.get_runtime_context()
        return {
            "node": ctx.get_node_id(),
            "pid": os.getpid(),
            "gpus": [str(g) for g in ray.get_gpu_ids()],
            "hardware": hardware(),
        }

    def call(self, method: str, args: tuple, kwargs: dict):
        out = getattr(self._engine, method)(*args, **kwargs)
        return out, self._engine.last_backend, list(self._engine.last_reasons)

    def prove(self, key_id: str, key: list, witness):
        pk = self._keys.get(key_id)
        if pk is None:
            # `key` is [ObjectRef] so the zkey's bytes are fetched once per actor, not per call.
            self._keys.clear()
            pk = self._keys[key_id] = ProvingKey(ray.get(key[0]))
        return self._engine.groth16_prove(pk, witness), self._engine.last_backend, []

    def msm(self, bases_id: str, bases: list, scalars, curve: str, group: str):
        mb = self._bases.get(bases_id)
        if mb is None:
            # `bases` is [ObjectRef]: a slice of a PoolBases, fetched and checked once per
            # actor and kept (in GPU memory on a GPU actor); the oldest of more than four goes.
            if len(self._bases) >= 4:
                self._bases.pop(next(iter(self._bases)))
            mb = self._bases[bases_id] = self._engine.msm_bases(ray.get(bases[0]), curve=curve, group=group)
        return self._engine.msm(mb, scalars, curve=curve, group=group), self._engine.last_backend, []


_RemoteWorker = ray.remote(_Worker)


# Bytes per point in arkworks' uncompressed layout (and as uint64 limbs, x then y), by (curve, group).
_POINT_BYTES = {("bn254", "g1"): 64, ("bn254", "g2"): 128, ("bls12_381", "g1"): 96, ("bls12_381", "g2"): 192}


def _msm_group(curve: str, group: str):
    """(curve, group) as `_POINT_BYTES` names them ("bls12-381" is "bls12_381", as `Engine.msm`
    takes either); an unknown pair is a ValueError."""
    key = (curve.replace("-", "_"), group)
    if key not in _POINT_BYTES:
        raise ValueError(f"no MSM over {curve} {group} (known: {sorted(_POINT_BYTES)})")
    return key


class PoolBases:
    """MSM bases cut into one slice per actor of a pool and put into Ray's object store once
    (`Pool.msm_bases`): each actor checks its slice once and keeps it (in GPU memory on a GPU
    actor) across `Pool.msm` calls, as a prover keeps its key's points."""

    def __init__(self, rows, cuts: list, curve: str, group: str):
        self.curve, self.group, self.cuts = curve, group, cuts
        self._refs = [ray.put(_flat(rows[a:b])) for a, b in zip(cuts, cuts[1:])]
        #: No points, in the form given (the form of an MSM's result).
        self.empty = _flat(rows[:0])

    def __len__(self):
        return self.cuts[-1]


def _points(points, curve: str, group: str):
    """MSM points as rows: an (n, words) uint64 array as given, or arkworks bytes cut into an
    (n, point bytes) uint8 array."""
    size = _POINT_BYTES[_msm_group(curve, group)]
    if isinstance(points, np.ndarray) and points.dtype == np.uint64:
        return points.reshape(-1, size // 8)
    return _rows(points, size)


def _flat(rows):
    """Rows as `Engine.msm` takes them: uint64 limbs as they are, bytes joined."""
    return rows if rows.dtype == np.uint64 else rows.tobytes()


def _rows(x, width: int):
    """Fixed-width items as an (n, width) array when given as one flat buffer."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        return np.frombuffer(x, dtype=np.uint8).reshape(-1, width)
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype == np.uint8:
        return x.reshape(-1, width)
    return x


class Pool:
    """Actors over the cluster Ray is connected to (`ray.init` first; a local cluster is started
    if there is none).

    `gpu_actors`: actors holding one GPU each (default: every GPU of the cluster).
    `cpu_actors`: CPU-only actors (default: none where there are GPUs, else one per live node),
    each reserving `cpus_per_actor` CPUs and spread over the nodes. `max_attempts`: runs of one
    chunk before its failure is raised. `start_timeout`: seconds for every actor to start (an
    actor the cluster cannot place, such as a GPU actor beyond its free GPUs, raises
    RuntimeError instead of waiting for ever). `backend`: the engines' backend ("auto": each engine's
    cost model decides; CPU actors always use "cpu")."""

    def __init__(
        self,
        gpu_actors: Optional[int] = None,
        cpu_actors: Optional[int] = None,
        *,
        cpus_per_actor: float = 1,
        backend: str = "auto",
        max_attempts: int = 3,
        start_timeout: float = 120,
    ):
        if not ray.is_initialized():
            ray.init()
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if gpu_actors is None:
            gpu_actors = gpus
        if cpu_actors is None:
            cpu_actors = 0 if gpu_actors else max(1, len([n for n in ray.nodes() if n["Alive"]]))
        if gpu_actors + cpu_actors == 0:
            raise ValueError("a pool needs at least one actor")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._specs = [("gpu", backend)] * gpu_actors + [("cpu", "cpu")] * cpu_actors
        self._cpus = cpus_per_actor
        self._actors = [self._start(s) for s in self._specs]
        try:
            ray.get([a.where.remote() for a in self._actors], timeout=start_timeout)
        except GetTimeoutError:
            self.shutdown()
            raise RuntimeError(
                f"{gpu_actors} GPU and {cpu_actors} CPU actors did not all start within {start_timeout} s: "
                f"the cluster has {ray.available_resources()} free (another pool may hold the GPUs; "
                "shut it down or ask for fewer actors)"
            ) from None
        self.max_attempts = max_attempts
        #: Chunks run again after their actor was lost, over the pool's life.
        self.retries = 0
        self._lock = threading.Lock()

    def _start(self, spec):
        kind, backend = spec
        if kind == "gpu":
            opts = {"num_gpus": 1, "num_cpus": self._cpus}
        else:
            opts = {"num_gpus": 0, "num_cpus": self._cpus, "scheduling_strategy": "SPREAD"}
        return _RemoteWorker.options(**opts).remote(backend)

    def __len__(self):
        return len(self._actors)

    def where(self) -> list:
        """Each actor's node id, process id, GPU ids and hardware, in actor order."""
        return ray.get([a.where.remote() for a in self._actors])

    def shutdown(self):
        for a in self._actors:
            ray.kill(a)
        self._actors = []

    def run(
        self,
        tasks: Sequence[tuple],
        *,
        progress: Optional[Callable[[int, int], None]] = None,
        in_flight: int = 2,
    ) -> list:
        """Runs `tasks` over the actors and returns their results in order. A task is
        (actor method name, *args): "call" runs an Engine method (`("call", "sha256_batch",
        (data, 64), {})`), "prove" a Groth16 proof. `progress(done, total)` is called after each
        task. Up to `in_flight` tasks wait at each actor, so its next input is already there
        when it finishes one. An error raised by the work itself (bad input) is raised here as
        its own type; a task whose actor was lost runs again on another."""
        total = len(tasks)
        results: list = [None] * total
        attempts = [0] * total
        queue = deque(range(total))
        free = deque(k for k in range(len(self._actors)) for _ in range(max(1, in_flight)))
        pending: dict = {}
        done = 0
        while queue or pending:
            while queue and free:
                i, k = queue.popleft(), free.popleft()
                actor = self._actors[k]
                method, *args = tasks[i]
                pending[getattr(actor, method).remote(*args)] = (i, k, actor)
            [ref], _ = ray.wait(list(pending), num_returns=1)
            i, k, actor = pending.pop(ref)
            try:
                results[i] = ray.get(ref)
            except _LOST:
                attempts[i] += 1
                if attempts[i] >= self.max_attempts:
                    raise
                with self._lock:
                    self.retries += 1
                    if self._actors[k] is actor:  # the first of its lost tasks replaces it
                        self._actors[k] = self._start(self._specs[k])
                queue.appendleft(i)
                free.append(k)
                continue
            except RayTaskError as e:
                for r in pending:
                    ray.cancel(r)
                raise e.as_instanceof_cause() from None
            free.append(k)
            done += 1
            if progress is not None:
                progress(done, total)
        return results

    def _calls(self, tasks, progress, in_flight: int = 2) -> list:
        """`run` of actor tasks that answer (value, backend, reasons): the values, with each
        task's backend in `last_backends` and the items' reasons in `last_reasons`."""
        outs = self.run(tasks, progress=progress, in_flight=in_flight)
        self.last_backends = [b for _, b, _ in outs]
        self.last_reasons = [r for _, _, rs in outs for r in rs]
        return [o for o, _, _ in outs]

    def _verify(self, method: str, columns: list, n: int, chunk: int, kwargs: dict, progress) -> np.ndarray:
        """A verification method over chunks of `chunk` items of the columns: one bool array."""
        if chunk < 1:
            raise ValueError("chunk must be at least 1")
        tasks = [
            ("call", method, tuple(c[s:s + chunk] for c in columns), kwargs)
            for s in range(0, n, chunk)
        ]
        outs = self._calls(tasks, progress)
        return np.concatenate(outs) if outs else np.zeros(0, dtype=bool)

    def verify_ecdsa(self, hashes, sigs, pubkeys, *, format="der", require_low_s=False,
                     curve="secp256k1", chunk=DEFAULT_CHUNK, progress=None) -> np.ndarray:
        """`Engine.verify_ecdsa_batch` over the cluster: a bool array in input order;
        `last_reasons` holds why each failed item failed."""
        hashes = _rows(hashes, 32)
        return self._verify("verify_ecdsa_batch", [hashes, sigs, pubkeys], len(hashes), chunk,
                            {"format": format, "require_low_s": require_low_s, "curve": curve}, progress)

    def verify_schnorr(self, msgs, sigs, pubkeys, *, chunk=DEFAULT_CHUNK, progress=None) -> np.ndarray:
        """`Engine.verify_schnorr_batch` (BIP340) over the cluster: a bool array in input order."""
        sigs, pubkeys = _rows(sigs, 64), _rows(pubkeys, 32)
        return self._verify("verify_schnorr_batch", [msgs, sigs, pubkeys], len(sigs), chunk, {}, progress)

    def sm2_verify(self, msgs, sigs, pubkeys, *, id=b"1234567812345678", format="der",
                   chunk=DEFAULT_CHUNK, progress=None) -> np.ndarray:
        """`Engine.sm2_verify_batch` over the cluster: a bool array in input order."""
        return self._verify("sm2_verify_batch", [msgs, sigs, pubkeys], len(sigs), chunk,
                            {"id": id, "format": format}, progress)

    def sha256(self, data, msg_len: int, *, double=False, chunk=DEFAULT_CHUNK, progress=None) -> np.ndarray:
        """SHA-256 (or SHA256d) of the equal-length messages of `data`: an (n, 32) uint8 array."""
        if msg_len < 1:
            raise ValueError("msg_len must be at least 1")
        rows = np.frombuffer(memoryview(data), dtype=np.uint8)
        if rows.size % msg_len:
            raise ValueError(f"{rows.size} bytes are not a whole number of {msg_len}-byte messages")
        rows = rows.reshape(-1, msg_len)
        tasks = [("call", "sha256_batch", (rows[s:s + chunk].reshape(-1), msg_len, double), {})
                 for s in range(0, len(rows), chunk)]
        outs = self._calls(tasks, progress)
        return np.concatenate(outs) if outs else np.zeros((0, 32), dtype=np.uint8)

    def prove(self, zkey, witnesses: Sequence, *, progress=None) -> list:
        """Groth16 proofs of many witnesses on one key, spread over the actors (each reads the
        key once and keeps it, in GPU memory on a GPU actor). `zkey`: a path or the .zkey's
        bytes; `witnesses`: paths or .wtns bytes. Returns [(proof.json, public.json)] in order."""
        read = lambda f: f if isinstance(f, (bytes, bytearray, memoryview)) else Path(f).read_bytes()
        ref = ray.put(bytes(read(zkey)))
        key_id = ref.hex()
        wits = [read(w) for w in witnesses]
        return self._calls([("prove", key_id, [ref], w) for w in wits], progress)

    def msm_bases(self, points, *, curve: str = "bn254", group: str = "g1") -> PoolBases:
        """MSM bases for this pool's actors (see `PoolBases`): points as `Engine.msm` takes them
        (arkworks bytes or an (n, words) uint64 array), cut evenly among the actors."""
        rows = _points(points, curve, group)
        cuts = [len(rows) * k // len(self._actors) for k in range(len(self._actors) + 1)]
        return PoolBases(rows, cuts, *_msm_group(curve, group))

    def msm(self, bases, scalars, *, curve: str = "bn254", group: str = "g1", progress=None):
        """`Engine.msm` over the actors: each sums its slice of the points (`bases`: a
        `PoolBases` of this pool, or points, cut here for this call) with its slice of the
        scalars (one per base), and the partial sums are added here. The result in the form of
        the points."""
        if not isinstance(bases, PoolBases):
            bases = self.msm_bases(bases, curve=curve, group=group)
        elif (bases.curve, bases.group) != _msm_group(curve, group):
            raise ValueError(f"bases of {bases.curve} {bases.group} for an MSM over {curve} {group}")
        if isinstance(scalars, np.ndarray) and scalars.dtype == np.uint64:
            ks = scalars.reshape(-1, 4)
        else:
            ks = _rows(scalars, 32)
        if len(ks) != len(bases):
            raise ValueError(f"{len(ks)} scalars for {len(bases)} bases")
        cuts = bases.cuts
        # One slice per actor, in actor order (one task in flight each), so that each actor
        # keeps the same slice from call to call.
        tasks = [("msm", ref.hex(), [ref], _flat(ks[a:b]), curve, group)
                 for ref, a, b in zip(bases._refs, cuts, cuts[1:]) if b > a]
        parts = self._calls(tasks, progress, in_flight=1)
        if not parts:  # no points: the point at infinity, in the points' form
            return Engine("cpu").msm(bases.empty, _flat(ks[:0]), curve=curve, group=group)
        ones = np.zeros((len(parts), 4), dtype=np.uint64)
        ones[:, 0] = 1
        if isinstance(parts[0], np.ndarray):
            return Engine("cpu").msm(np.stack(parts), ones, curve=curve, group=group)
        return Engine("cpu").msm(b"".join(parts), ones, curve=curve, group=group)

    def verify_blocks(self, blocks: Sequence[dict], *, progress=None) -> list:
        """Bitcoin blocks validated with the outputs they spend, one task per block, spread over
        the actors: each item a dict of `Engine.verify_block`'s arguments ("block", "spent" as
        bytes or paths readable on every node, and optionally "spent_format", "height",
        "network", "check_pow"). Returns the report dicts in order."""
        tasks = []
        for b in blocks:
            b = dict(b)
            args = (b.pop("block"), b.pop("spent"))
            tasks.append(("call", "verify_block", args, b))
        return self._calls(tasks, progress)

    def verify_chain_range(self, blocks_dir, *, network: str = "main", start: Optional[int] = None,
                           count: Optional[int] = None, window: int = 256, progress=None) -> list:
        """Validates a range of a Bitcoin Core `blocks/` directory's chain, each block with the
        outputs its undo record says it spent (no UTXO set needed), one task per block over the
        actors. `start`: the first height (default: the block after genesis); `count`: how many
        (default: to the tip). The blocks are read here and sent `window` at a time, so memory
        holds a window, not the range. `progress(done, total)` counts blocks. Returns the
        report dicts in chain order (see `Engine.verify_block`)."""
        if window < 1:
            raise ValueError("window must be at least 1")
        chain = BlocksDir(os.path.expanduser(blocks_dir), network=network)
        entries = chain.range(start=start, count=count)
        total, reports, backends, reasons = len(entries), [], [], []
        for s in range(0, total, window):
            done = len(reports)
            step = None if progress is None else (lambda d, _t, done=done: progress(done + d, total))
            reports += self.verify_blocks(chain.load(entries[s:s + window]), progress=step)
            backends += self.last_backends
            reasons += self.last_reasons
        self.last_backends, self.last_reasons = backends, reasons
        return reports


class _DatasetVerifier:
    """A Ray Data callable class: verifies the batches of a dataset's columns."""

    def __init__(self, op: str, backend: str, options: dict):
        self._engine = Engine(backend)
        self._op, self._options = op, options

    def __call__(self, batch: dict) -> dict:
        e, o = self._engine, self._options
        if self._op == "schnorr":
            ok = e.verify_schnorr_batch(list(batch["msg"]), _stack(batch["sig"]), _stack(batch["pubkey"]))
        elif self._op == "ecdsa":
            ok = e.verify_ecdsa_batch(_stack(batch["hash"]), list(batch["sig"]), list(batch["pubkey"]), **o)
        else:
            ok = e.sm2_verify_batch(list(batch["msg"]), list(batch["sig"]), list(batch["pubkey"]), **o)
        batch["valid"] = ok
        return batch


def _stack(col):
    """A column of fixed-width byte strings as one (n, width) uint8 array."""
    if isinstance(col, np.ndarray) and col.dtype == np.uint8 and col.ndim == 2:
        return col
    return np.frombuffer(b"".join(bytes(c) for c in col), dtype=np.uint8).reshape(len(col), -1)


def verify_dataset(ds, op: str, *, gpus: Optional[int] = None, cpu_actors: Optional[int] = None,
                   batch_size: int = DEFAULT_CHUNK, **options):
    """Adds a bool column "valid" to a `ray.data.Dataset` of signatures: `op` "schnorr" (columns
    msg, sig, pubkey), "ecdsa" (hash, sig, pubkey; `options` as `Engine.verify_ecdsa_batch`'s
    format, curve, require_low_s) or "sm2" (msg, sig, pubkey; id, format). The batches run on
    one actor per GPU (default: every GPU of the cluster), or on `cpu_actors` CPU actors
    (default: one per node) where there is none. Lazy, as Ray Data is: the work runs when the
    dataset is consumed."""
    if op not in ("schnorr", "ecdsa", "sm2"):
        raise ValueError(f'op must be "schnorr", "ecdsa" or "sm2", not {op!r}')
    if gpus is None:
        gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus:
        return ds.map_batches(_DatasetVerifier, fn_constructor_args=(op, "auto", options),
                              batch_size=batch_size, batch_format="numpy", num_gpus=1, concurrency=gpus)
    if cpu_actors is None:
        cpu_actors = max(1, len([n for n in ray.nodes() if n["Alive"]]))
    return ds.map_batches(_DatasetVerifier, fn_constructor_args=(op, "cpu", options),
                          batch_size=batch_size, batch_format="numpy", num_cpus=1, concurrency=cpu_actors)


__all__ = ["Pool", "verify_dataset", "DEFAULT_CHUNK"]
