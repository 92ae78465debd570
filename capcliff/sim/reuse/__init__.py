"""What a replica keeps between requests: the prefix cache (block-granular, LRU), the host and
disk KV tiers that back it, and the per-request reuse records. Below the event loop."""
