"""Moving a finished prefill's KV to its decode replica: links, transfer times, queueing on links.

A transfer of `b` bytes over a link takes `latency + overhead + b / bandwidth` seconds (modeled):
- `bandwidth` is the per-GPU one-way bandwidth of the path times the GPUs that send in parallel,
  `min(sending GPUs, receiving GPUs)` (each TP rank of a prefill replica sends its shard over its
  own NVLink port or NIC, as SGLang's and vLLM's connectors do rank by rank);
- inside one scale-up domain (an NVLink/NVSwitch node) the path is NVLink, between domains it is
  RDMA (InfiniBand or RoCE);
- `overhead` is a per-transfer setup cost (handshake, descriptor posting): a named assumption.

Queueing: a prefill replica sends one transfer at a time and a decode replica receives one at a
time; transfers are served in the order their prefills finished, each starting when its data is
ready and both ends are free (FIFO on both ends). O(n log n) for n transfers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Set: per-transfer setup cost (the bootstrap handshake and the transfer engine posting its
# descriptors). Neither SGLang nor vLLM documents a figure; 1 ms is an assumption, overridable.
DEFAULT_TRANSFER_OVERHEAD_S = 1e-3


@dataclass(frozen=True)
class Path:
    """One kind of path between GPUs: one-way bandwidth per GPU and one-way latency."""

    name: str
    bytes_per_s_per_gpu: float
    latency_s: float

    def __post_init__(self) -> None:
        if self.bytes_per_s_per_gpu <= 0 or self.latency_s < 0:
            raise InputError(
                f"kv transfer: {self.name} needs bandwidth > 0 and latency >= 0, got "
                f"{self.bytes_per_s_per_gpu} B/s and {self.latency_s} s"
            )


@dataclass(frozen=True)
class Fabric:
    """The cluster's paths: NVLink inside a scale-up domain of `domain_gpus`, RDMA between."""

    scaleup: Path
    scaleout: Path
    domain_gpus: int
    overhead_s: float = DEFAULT_TRANSFER_OVERHEAD_S

    def path(self, sender_gpus: range, receiver_gpus: range) -> Path:
        """NVLink when both GPU ranges lie in the same scale-up domain, RDMA otherwise."""
        domains = {g // self.domain_gpus for g in (*sender_gpus, *receiver_gpus)}
        return self.scaleup if len(domains) == 1 else self.scaleout

    def route_terms(self, path: Path, lanes: int) -> tuple[float, float]:
        """(latency + overhead in s, lanes x per-GPU bandwidth in bytes/s) of a route:
        a transfer of n bytes takes the first plus n over the second."""
        return path.latency_s + self.overhead_s, lanes * path.bytes_per_s_per_gpu


@dataclass(frozen=True)
class Placement:
    """Where replicas sit: replica r of a pool holds GPUs `gpus[r]` (contiguous ranges)."""

    prefill: tuple[range, ...]
    decode: tuple[range, ...]

    @classmethod
    def packed(
        cls, prefill_replicas: int, prefill_gpus: int, decode_replicas: int, decode_gpus: int
    ) -> Placement:
        """Prefill replicas on GPUs 0.., then decode replicas, each on consecutive GPUs."""
        pre = tuple(
            range(r * prefill_gpus, (r + 1) * prefill_gpus) for r in range(prefill_replicas)
        )
        base = prefill_replicas * prefill_gpus
        dec = tuple(
            range(base + r * decode_gpus, base + (r + 1) * decode_gpus)
            for r in range(decode_replicas)
        )
        return cls(pre, dec)


@dataclass(frozen=True)
class Transfers:
    """Each transfer's timing (seconds from t = 0) and its path, in the order given."""

    ready_s: FloatArray
    start_s: FloatArray
    end_s: FloatArray
    nbytes: FloatArray
    path: tuple[str, ...]

    @property
    def wire_s(self) -> FloatArray:
        """Time on the link (latency, overhead and bytes)."""
        wire: FloatArray = self.end_s - self.start_s
        return wire

    @property
    def wait_s(self) -> FloatArray:
        """Time queued for a busy link."""
        wait: FloatArray = self.start_s - self.ready_s
        return wait


def schedule_transfers(
    ready_s: FloatArray,
    nbytes: FloatArray,
    sender: IntArray,
    receiver: IntArray,
    *,
    fabric: Fabric,
    placement: Placement,
) -> Transfers:
    """Start and end of every transfer: in order of `ready_s` (input order on ties), each starts
    when its data is ready and its prefill replica's send side and its decode replica's receive
    side are both free, and holds both until it ends."""
    n = len(ready_s)
    send_free = [0.0] * len(placement.prefill)
    recv_free = [0.0] * len(placement.decode)
    start, end = [0.0] * n, [0.0] * n
    paths = [""] * n
    ready, size = np.asarray(ready_s).tolist(), np.asarray(nbytes).tolist()
    senders, receivers = np.asarray(sender).tolist(), np.asarray(receiver).tolist()
    # per replica pair: its path's name and `Fabric.route_terms` (transfer_s, term by term)
    routes: dict[tuple[int, int], tuple[str, float, float]] = {}
    for i in np.argsort(ready_s, kind="stable").tolist():
        s, r = senders[i], receivers[i]
        route = routes.get((s, r))
        if route is None:
            src, dst = placement.prefill[s], placement.decode[r]
            path = fabric.path(src, dst)
            route = routes[s, r] = (path.name, *fabric.route_terms(path, min(len(src), len(dst))))
        name, fixed_s, rate = route
        t0 = max(ready[i], send_free[s], recv_free[r])
        t1 = t0 + (fixed_s + size[i] / rate)
        start[i], end[i], paths[i] = t0, t1, name
        send_free[s] = recv_free[r] = t1
    return Transfers(
        np.asarray(ready_s, dtype=np.float64),
        np.array(start, dtype=np.float64),
        np.array(end, dtype=np.float64),
        np.asarray(nbytes, dtype=np.float64),
        tuple(paths),
    )


def link_utilization(transfers: Transfers, *, links: int, horizon_s: float) -> float:
    """Busy time of the links, summed over transfers, over `links` x `horizon_s` (0..1 when each
    transfer holds one link)."""
    if horizon_s <= 0 or links < 1:
        return 0.0
    return float(transfers.wire_s.sum()) / (links * horizon_s)
