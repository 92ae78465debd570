"""The expected value of a length distribution after `sample_lengths` clips it, in tokens.

An online estimate that divides by the mean output length (tokens/s over tokens per request)
needs the workload's mean, not a sample's: a sample of n heavy-tailed lengths is off by about
CV / sqrt(n) (the `reasoning` preset's outputs have a CV near 1.1, so 3.5 % at n = 1,000).
Each branch is the closed form of E[clip(X, 1, max)] for X of that distribution (rounding to
whole tokens moves the mean by less than half a token, and is left out):

- lognormal (mu, sigma), cut at M: E[min(X, M)] = exp(mu + sigma^2 / 2) Phi((ln M - mu - sigma^2)
  / sigma) + M (1 - Phi((ln M - mu) / sigma)) (the partial expectation of a lognormal); the cut
  at 1 token is left out (P(X < 1) is below 1e-9 for every preset);
- normal (m, s) clipped to [a, b]: a Phi(alpha) + m (Phi(beta) - Phi(alpha)) + s (phi(alpha) -
  phi(beta)) + b (1 - Phi(beta)), alpha = (a - m) / s, beta = (b - m) / s;
- uniform integers, fixed lengths and empirical values: the mean of the clipped values.
"""

from __future__ import annotations

import math

import numpy as np

from capcliff.sim.traffic.workload import Empirical, Fixed, LengthDist, LogNormal, Normal, Uniform

UNIFORM_EXACT_SPAN = 1_000_000  # wider uniform ranges use the continuous mean


def _cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _pdf(z: float) -> float:
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def expected_length(dist: LengthDist, *, max_tokens: int) -> float:
    """E[clip(X, 1, max_tokens)] of `dist`, in tokens (see the module docstring)."""
    top = float(max_tokens)
    if isinstance(dist, Fixed):
        return min(max(float(dist.tokens), 1.0), top)
    if isinstance(dist, LogNormal):
        mu, sigma = dist.mu, dist.sigma
        log_top = math.log(top)
        below = math.exp(mu + sigma**2 / 2) * _cdf((log_top - mu - sigma**2) / sigma)
        return below + top * (1 - _cdf((log_top - mu) / sigma))
    if isinstance(dist, Normal):
        if dist.std <= 0:
            return min(max(dist.mean, 1.0), top)
        alpha, beta = (1 - dist.mean) / dist.std, (top - dist.mean) / dist.std
        inside = dist.mean * (_cdf(beta) - _cdf(alpha)) + dist.std * (_pdf(alpha) - _pdf(beta))
        return _cdf(alpha) + inside + top * (1 - _cdf(beta))
    if isinstance(dist, Uniform):
        if dist.high - dist.low > UNIFORM_EXACT_SPAN:
            return min(max((dist.low + dist.high) / 2, 1.0), top)
        values = np.arange(dist.low, dist.high + 1, dtype=np.float64)
        return float(np.clip(values, 1, top).mean())
    assert isinstance(dist, Empirical)
    clipped = np.clip(np.asarray(dist.values, dtype=np.float64), 1, top)
    p = dist.probabilities
    return float(clipped.mean() if p is None else clipped @ p)
