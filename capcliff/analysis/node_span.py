"""Engine lines whose GPUs take more than one node: what each engine needs to run them.

A line runs `dp` replicas (DP ranks) of TP x PP GPUs each. Where those GPUs pass a node:

- independent replicas that each fit a node (not attention DP) are served one node at a time:
  the line is one node's replicas (`NodeSpan.local_dp`), run on each node behind a load
  balancer, as the engines' single-node DP is;
- attention DP (its ranks step together) and replicas wider than a node need the engine's
  multi-node launch: SGLang's `--nnodes N --node-rank R --dist-init-addr HOST:PORT`
  (python/sglang/srt/server_args.py; docs "Multi-Node Deployment"), vLLM's multi-node data
  parallel (`--data-parallel-size-local`, `--data-parallel-address`, `--data-parallel-rpc-port`
  on the head node, `--headless --data-parallel-start-rank` on the others:
  docs/serving/data_parallel_deployment.md) or, for TP x PP past a node, a Ray cluster
  (`--distributed-executor-backend ray`: docs/serving/parallelism_scaling.md), and
  TensorRT-LLM's launch under MPI (`trtllm-llmapi-launch` under mpirun or srun).
"""

from __future__ import annotations

from dataclasses import dataclass

from capcliff.units import counted

HEAD_NODE = "HEAD_NODE_IP"  # stands in for the first node's address in the printed lines
SGLANG_DIST_PORT = 20000  # SGLang's multi-node example's --dist-init-addr port (any free port)
VLLM_DP_RPC_PORT = 13345  # vLLM's multi-node data-parallel example's --data-parallel-rpc-port


@dataclass(frozen=True)
class NodeSpan:
    """How a line's GPUs lie over nodes of `gpus_per_node` GPUs."""

    nodes: int  # nodes the line's GPUs take
    dp: int  # the replicas (DP ranks) of the whole line
    gpus_per_node: int
    replica_gpus: int  # GPUs of one replica (TP x PP), or of the attention-DP group
    local_dp: int | None  # independent replicas: the replicas one node's line runs; else None


def node_span(
    *, dp: int, tp: int, pp: int, attention_dp: bool, gpus_per_node: int | None
) -> NodeSpan | None:
    """The nodes a line of `dp` replicas of TP x PP GPUs takes; None where it fits one node
    (or the node's size is not known)."""
    gpus = dp * tp * pp
    if gpus_per_node is None or gpus <= gpus_per_node:
        return None
    nodes = -(-gpus // gpus_per_node)
    replica = gpus if attention_dp else tp * pp
    local = gpus_per_node // replica if replica <= gpus_per_node else None
    return NodeSpan(nodes, dp, gpus_per_node, replica, local)


def vllm_node_flags(span: NodeSpan | None, tp: int, pp: int) -> list[str]:
    """vLLM's flags for the head node of a line past one node (none where the line is one
    node's independent replicas)."""
    if span is None or span.local_dp is not None:
        return []
    if tp * pp > span.gpus_per_node:
        return ["--distributed-executor-backend", "ray"]
    return [
        "--data-parallel-size-local", str(span.gpus_per_node // (tp * pp)),
        "--data-parallel-address", HEAD_NODE,
        "--data-parallel-rpc-port", str(VLLM_DP_RPC_PORT),
    ]  # fmt: skip


def sglang_node_flags(span: NodeSpan | None) -> list[str]:
    """SGLang's flags for the first node of a line past one node."""
    if span is None or span.local_dp is not None:
        return []
    return [
        "--nnodes", str(span.nodes), "--node-rank", "0",
        "--dist-init-addr", f"{HEAD_NODE}:{SGLANG_DIST_PORT}",
    ]  # fmt: skip


def node_warning(engine: str, span: NodeSpan | None, tp: int, pp: int) -> str | None:
    """What to run on each node for `engine`'s (vllm, sglang, trtllm) line; None for one node."""
    if span is None:
        return None
    n = span.nodes
    if span.local_dp is not None:
        full, rest = divmod(span.dp, span.local_dp)
        flag = "--dp" if engine == "sglang" else "--data-parallel-size"
        where = f"each of the {n} nodes"
        if rest:
            where = f"{counted(full, 'node')} and, with {flag} {rest}, on one more"
        return (
            f"{engine}: the line is one node's {span.local_dp} replicas: run it on {where}, "
            "behind a load balancer"
        )
    if engine == "trtllm":
        return (
            f"trtllm: one replica spans {n} nodes: launch the line on them under mpirun or srun "
            "(trtllm-llmapi-launch)"
        )
    if engine == "sglang":
        return (
            f"sglang: the line spans {n} nodes: run it on each, with --node-rank 0 to {n - 1} "
            f"({HEAD_NODE}: the first node's address)"
        )
    if tp * pp > span.gpus_per_node:
        return (
            f"vllm: one replica spans {-(-tp * pp // span.gpus_per_node)} nodes: start a Ray "
            "cluster over them and run the line on its head node"
        )
    local = span.gpus_per_node // (tp * pp)
    return (
        f"vllm: the line runs the first {local} DP ranks on the head node ({HEAD_NODE}); on node "
        f"i of the {n} run it with --headless --data-parallel-start-rank i x {local} instead"
    )
