"""Helpers of `edge-runtime bench load` (benchmarks/load_bench.py).

- ``workload``: the seeded, committed request mix (``workload.jsonl``) and its generator;
- ``arrivals``: open-loop arrival schedules (Poisson per user, bursty with the same mean);
- ``client``: the aiohttp open-loop client (latency from the intended send time);
- ``stats``: per-level statistics (percentiles, goodput, refused/errors/lost, cache checks);
- ``procs``: starting, pinning, measuring and stopping edge-cloud, the daemon and redis;
- ``report``: the terminal table, Markdown, JSON and the latency-vs-load plot;
- ``soak``: the soak and fault-injection modes.
"""
