"""Medians across several `bench load` sweeps (one ``--out`` folder each), per level and
configuration, plus the text-only p99 of skill answers and cache hits from
``requests-*.jsonl``:  ``python -m benchmarks.load.medians DIR1 DIR2 DIR3``."""
import glob
import json
import statistics
import sys

runs = sorted(f"{d.rstrip('/')}/load.json" for d in sys.argv[1:]) or \
    sorted(glob.glob("run*/load.json"))
data = [json.load(open(p)) for p in runs]
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100 * len(xs) + 0.5)) - 1))] if xs else None
def med(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 1) if xs else None
print(f"runs: {len(data)}")
print("| users | config | rps | avg ms | p50 ms | p99 ms | max ms | ttft p99 ms | goodput | cache hit | answered | refused (max ms) | lost | skill p99 | cache-hit p99 (text) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for i, users in enumerate(l['users'] for l in data[0]['levels']):
    for cfg in ('levels', 'baseline'):
        ls = [d[cfg][i] for d in data if len(d[cfg]) > i]
        if not ls: continue
        tag = 'edge' if cfg == 'levels' else 'baseline'
        sk, ch = [], []
        for r in range(len(data)):
            try:
                rows = [json.loads(x) for x in open(runs[r].replace('load.json', f'requests-{tag}-{users}.jsonl'))]
            except OSError:
                continue
            sk.append(pct([x['latency_ms'] for x in rows if x['route'] == 'skill' and x['kind'] != 'audio'], 99))
            ch.append(pct([x['latency_ms'] for x in rows if x['route'] == 'cache' and x['kind'] != 'audio'], 99))
        answered = med([l['answered'] / l['sent'] * 100 for l in ls])
        print(f"| {users} | {tag} | {med([l['rps'] for l in ls])} | {med([l['avg_ms'] for l in ls])} | {med([l['p50_ms'] for l in ls])} | "
              f"{med([l['p99_ms'] for l in ls])} | {med([l['max_ms'] for l in ls])} | {med([l['ttft_p99_ms'] for l in ls])} | "
              f"{med([l['goodput'] * 100 for l in ls])} % | {med([(l['cache_hit_rate'] or 0) * 100 for l in ls])} % | {answered} % | "
              f"{med([l['refused'] for l in ls])} ({med([l['refused_max_ms'] for l in ls])}) | {sum(l['lost'] for l in ls)} | {med(sk)} | {med(ch)} |")
wrong = sum(l['cache_check']['wrong'] for d in data for l in d['levels'])
hits = sum(l['cache_check']['hits'] for d in data for l in d['levels'])
print(f"cache hits checked: {hits}, wrong: {wrong}")
agree = all(l['daemon']['agree'] for d in data for l in d['levels'] + d['baseline'])
gaps = [l['timing']['gap_p50_ms'] for d in data for l in d['levels']]
print(f"daemon/client agree in every level: {agree}; client-daemon gap p50 {min(gaps)}-{max(gaps)} ms")
for i, users in enumerate(l['users'] for l in data[0]['levels']):
    r = [d['levels'][i]['p99_ms'] / d['baseline'][i]['p99_ms'] for d in data if d['baseline']]
    print(users, 'p99 baseline/edge', round(statistics.median([1 / x for x in r]), 2), [round(1 / x, 2) for x in r])
