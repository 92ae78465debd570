"""The prefix cache on its own: lookups, references, eviction order, and its block accounting."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.sim.reuse.prefix_cache import PrefixCache

B = 16


def chat_tree() -> PrefixCache:
    # node 0: a 100-token system prompt; nodes 1 and 2: two sessions forked from it at 100 tokens
    return PrefixCache([-1, 0, 0], [0, 100, 100], B)


def test_a_cold_cache_hits_nothing() -> None:
    assert chat_tree().lookup(1, 500) == 0


def test_a_released_request_is_hit_up_to_its_full_blocks() -> None:
    cache = chat_tree()
    # a 500-token prompt + 40 output tokens holds 539 tokens of KV: 539 // 16 = 33 full blocks
    cache.release(1, 0, 33, now_s=1.0)
    # the next turn's prompt is 800 tokens: at most (800 - 1) // 16 = 49 blocks could hit
    assert cache.lookup(1, 800) == 33


def test_the_last_token_is_never_a_hit() -> None:
    cache = chat_tree()
    cache.release(1, 0, 33, now_s=1.0)
    # a 528-token prompt (exactly 33 blocks) hits at most (528 - 1) // 16 = 32 blocks
    assert cache.lookup(1, 528) == 32


def test_another_session_hits_only_the_shared_system_prompt() -> None:
    cache = chat_tree()
    cache.release(1, 0, 33, now_s=1.0)
    # the system prompt's blocks are those before block 100 // 16 = 6 (block 6 straddles the fork)
    assert cache.lookup(2, 800) == 6


def test_references_keep_blocks_out_of_the_free_count() -> None:
    cache = chat_tree()
    cache.release(1, 0, 33, now_s=1.0)
    assert (cache.unreferenced, cache.in_use) == (33, 0)
    revived = cache.acquire(2, 6)  # session 2 reuses the 6 system-prompt blocks
    assert revived == 6
    assert (cache.unreferenced, cache.in_use) == (27, 6)


def test_a_second_reference_revives_nothing() -> None:
    cache = chat_tree()
    cache.release(1, 0, 33, now_s=1.0)
    cache.acquire(2, 6)
    assert cache.acquire(1, 20) == 14  # blocks 6 .. 19 of session 1; 0 .. 5 are already in use


def test_eviction_takes_the_least_recently_released_tail_first() -> None:
    cache = PrefixCache([-1, -1], [0, 0], B)
    cache.release(0, 0, 10, now_s=1.0)
    cache.release(1, 0, 10, now_s=2.0)
    assert cache.evict(4) == 4
    # node 0 (released first) lost its last 4 blocks; node 1 is whole
    assert (cache.lookup(0, 1000), cache.lookup(1, 1000)) == (6, 10)


def test_radix_eviction_frees_a_whole_leaf() -> None:
    cache = PrefixCache([-1, -1], [0, 0], 1, whole_tail=True)
    cache.release(0, 0, 300, now_s=1.0)
    assert cache.evict(10) == 300


def test_referenced_blocks_are_never_evicted() -> None:
    cache = PrefixCache([-1], [0], B)
    cache.release(0, 0, 10, now_s=1.0)
    cache.acquire(0, 8)
    assert cache.evict(10) == 2
    assert cache.lookup(0, 1000) == 8


def test_a_session_is_evicted_before_the_prefix_it_extends() -> None:
    cache = chat_tree()
    cache.release(1, 0, 33, now_s=2.0)  # blocks 0 .. 5 in the prompt's node, 6 .. 32 in node 1
    # 27 + 1 blocks: all of session 1's own blocks, then the prompt's last block
    assert cache.evict(28) == 28
    assert cache.lookup(2, 800) == 5


def shared_tokens(parent: list[int], fork: list[int], x: int, y: int) -> float:
    """Tokens two content nodes' sequences have in common (by walking up to where they part)."""

    def path(n: int) -> list[int]:
        out = [n]
        while parent[out[-1]] >= 0:
            out.append(parent[out[-1]])
        return out[::-1]

    px, py = path(x), path(y)
    if px[0] != py[0]:
        return 0
    k = 0
    while k + 1 < min(len(px), len(py)) and px[k + 1] == py[k + 1]:
        k += 1
    limits = [fork[p[k + 1]] for p in (px, py) if k + 1 < len(p)]
    return min(limits, default=float("inf"))


events = st.lists(
    st.tuples(
        st.sampled_from(["admit", "finish", "evict"]), st.integers(0, 5), st.integers(1, 400)
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(events)
def test_cached_plus_in_use_plus_free_equals_the_pool(script: list[tuple[str, int, int]]) -> None:
    """Drive the cache as a replica would, with a 64-block pool, and check the partition of
    blocks after every event; also that a hit never exceeds what the request shares."""
    total = 64
    # nodes: 0 root prefix of 40 tokens; 1, 2 sessions under it; 3 a branch of 1 at 200 tokens;
    # 4, 5 unrelated roots
    parent, fork = [-1, 0, 0, 1, -1, -1], [0, 40, 40, 200, 0, 0]
    cache = PrefixCache(parent, fork, B)
    exclusive = 0  # blocks held by running requests outside the cache
    running: list[tuple[int, int, int]] = []  # (node, hit blocks, blocks held in all)
    free = total
    published: dict[int, int] = {}  # node -> most full blocks a request on it released
    for op, node, tokens in script:
        if op == "admit":
            hit = cache.lookup(node, tokens)
            assert hit <= (tokens - 1) // B
            # a hit never exceeds the prefix shared with something that was published
            assert hit <= max(
                (min(b, shared_tokens(parent, fork, node, n) // B) for n, b in published.items()),
                default=0,
            )
            held = -(-tokens // B)
            need = held - hit
            if need + hit > free:  # hit bounds what reviving takes out of free
                continue
            revived = cache.acquire(node, hit)
            free -= revived + need
            exclusive += need
            running.append((node, hit, held))
        elif op == "finish" and running:
            node, hit, held = running.pop(tokens % len(running))
            dropped = cache.release(node, hit, held - 1, now_s=float(tokens))
            published[node] = max(published.get(node, 0), held - 1)
            exclusive -= held - hit
            free += held - hit + dropped
        elif op == "evict":
            cache.evict(min(tokens, cache.unreferenced))
        if free < cache.unreferenced:
            cache.evict(cache.unreferenced - free)
        assert cache.unreferenced <= free
        assert exclusive + cache.in_use + free == total
        assert min(cache.unreferenced, cache.in_use) >= 0


def test_a_branch_hits_its_sessions_context_not_a_sibling_branch() -> None:
    # session node 1 under prefix 0; branches 2 and 3 fork from it at 320 tokens (block 20)
    cache = PrefixCache([-1, 0, 1, 1], [0, 64, 320, 320], B)
    cache.release(2, 0, 40, now_s=1.0)  # branch 2 ran with 40 full blocks
    assert cache.lookup(3, 1000) == 20  # branch 3 shares blocks 0 .. 19 only
    assert cache.lookup(1, 1000) == 20  # the session line continues without the branch's tokens
