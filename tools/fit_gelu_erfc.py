#!/usr/bin/env python3
"""Fits Q, the polynomial of the float gelu's erfc (src/ops/cpu/simd/activation.h, gelu_fv).

For |x| in [1, 15], erfc(|x|/√2) = t·e^(Q(t) − x²/2) with t = 1/(1 + |x|/2): Q(t) = ln(erfc(|x|/√2)/t) + x²/2,
a smooth function of t in [1/8.5, 2/3]. Least squares at Chebyshev nodes (mpmath's erfc to 40 digits),
in w = (t − mid)/half ∈ [−1, 1], printed in the power basis of w with mid, half and the largest error
on a fine grid. Needs numpy and mpmath (a virtualenv: pip install numpy mpmath).

  python3 tools/fit_gelu_erfc.py [--degree 9] [--from 1.0]
"""
import argparse

import mpmath as mp
import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--degree", type=int, default=9)
    p.add_argument("--from", dest="x0", type=float, default=1.0, help="smallest |x| of the erfc branch")
    p.add_argument("--to", dest="x1", type=float, default=15.0, help="largest |x| (beyond, Φ is 0 or 1 in float)")
    args = p.parse_args()
    mp.mp.dps = 40
    t_lo, t_hi = 1 / (1 + args.x1 / 2), 1 / (1 + args.x0 / 2)
    mid, half = (t_lo + t_hi) / 2, (t_hi - t_lo) / 2

    def q(t):
        x = 2 * (1 / mp.mpf(t) - 1)
        return mp.log(mp.erfc(x / mp.sqrt(2)) / t) + x * x / 2

    n = 400
    nodes = np.array([mid + half * np.cos(np.pi * (k + 0.5) / n) for k in range(n)])
    values = np.array([float(q(t)) for t in nodes])
    cheb = np.polynomial.chebyshev.chebfit((nodes - mid) / half, values, args.degree)
    power = np.polynomial.chebyshev.cheb2poly(cheb)
    grid = np.linspace(t_lo, t_hi, 2001)
    error = max(abs(float(q(t)) - np.polynomial.polynomial.polyval((t - mid) / half, power)) for t in grid)
    print(f"// degree {args.degree}, |x| in [{args.x0}, {args.x1}]: largest error {error:.2e}")
    print(f"constexpr double kGeluMid = {mid!r}, kGeluHalf = {half!r};")
    print("constexpr float kGeluQ[] = {" + ", ".join(repr(float(c)) for c in power) + "};")


if __name__ == "__main__":
    main()
