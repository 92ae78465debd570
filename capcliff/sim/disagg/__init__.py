"""Disaggregated serving: prefill and decode pools on their own GPUs (`pools`) and the KV
transfers between them over the fabric (`kv_transfer`). Above the event loop, which it runs."""
