"""Open-loop arrival schedules: when each request is *meant* to be sent.

- ``poisson``: every user is its own Poisson process (mean ``rate_per_user`` requests/s,
  default one per 10 s); user ``u``'s arrivals depend only on (seed, u), so a level with
  more users adds users without moving the others' requests.
- ``bursty``: the same mean rate, in bursts: burst starts are a Poisson process at
  ``users * rate_per_user / burst_size``; a burst holds a geometric number of requests
  (mean ``burst_size``) spread uniformly over ``burst_spread_s``, each from a user drawn
  at random (a TV advert saying the wake word, everyone home at six).

The schedule never waits for answers (open loop): a slow answer cannot delay the next
request, and latency is measured from these intended times.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

RATE_PER_USER = 0.1


@dataclass(frozen=True)
class Arrival:
    t: float          # seconds after the level starts
    user: int
    k: int            # this user's k-th request in the level (0, 1, ...)


def user_times(seed: int, user: int, duration_s: float,
               rate: float = RATE_PER_USER) -> list[float]:
    """One user's Poisson arrival times in [0, duration_s)."""
    return _poisson(random.Random(f"{seed}:user:{user}"), rate, duration_s)


def _poisson(rng: random.Random, rate: float, duration_s: float) -> list[float]:
    """Arrival times of a Poisson process at ``rate`` per second in [0, duration_s)."""
    out, t = [], 0.0
    while True:
        t += rng.expovariate(rate)
        if t >= duration_s:
            return out
        out.append(t)


def poisson(users: int, duration_s: float, seed: int,
            rate_per_user: float = RATE_PER_USER) -> list[Arrival]:
    out = [Arrival(t, u, k) for u in range(users)
           for k, t in enumerate(user_times(seed, u, duration_s, rate_per_user))]
    return sorted(out, key=lambda a: (a.t, a.user))


def bursty(users: int, duration_s: float, seed: int, rate_per_user: float = RATE_PER_USER,
           burst_size: float = 5.0, burst_spread_s: float = 1.0) -> list[Arrival]:
    if burst_size < 1:
        raise ValueError("burst_size must be >= 1")
    rng = random.Random(f"{seed}:bursty:{users}")
    rate = users * rate_per_user / burst_size
    times: list[tuple[float, int]] = []
    t = 0.0
    while True:
        t += rng.expovariate(rate)
        if t >= duration_s:
            break
        n = 1
        while rng.random() >= 1.0 / burst_size:     # geometric, mean burst_size
            n += 1
        for _ in range(n):
            at = t + rng.uniform(0.0, burst_spread_s)
            if at < duration_s:
                times.append((at, rng.randrange(users)))
    times.sort()
    seen: dict[int, int] = {}
    out = []
    for at, u in times:
        out.append(Arrival(at, u, seen.get(u, 0)))
        seen[u] = seen.get(u, 0) + 1
    return out


def schedule(users: int, duration_s: float, seed: int, *, is_bursty: bool = False,
             rate_per_user: float = RATE_PER_USER, burst_size: float = 5.0,
             burst_spread_s: float = 1.0) -> list[Arrival]:
    if is_bursty:
        return bursty(users, duration_s, seed, rate_per_user, burst_size, burst_spread_s)
    return poisson(users, duration_s, seed, rate_per_user)


def fixed_rate(rate: float, duration_s: float, seed: int) -> list[float]:
    """Poisson arrival times at ``rate`` requests/s overall (soak and fault modes)."""
    return _poisson(random.Random(f"{seed}:rate:{rate}"), rate, duration_s)
