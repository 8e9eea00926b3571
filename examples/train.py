"""A small CPU "training job" for trying `mlrig diagnose -- python examples/train.py`.

Each step waits on a slow data loader (sleep), then computes (a numpy matmul), like a job whose input
pipeline cannot keep up. It runs for about --seconds (default 6) and needs only numpy.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=6.0, help="how long to run")
    ap.add_argument("--load-s", type=float, default=0.3, help="seconds each batch waits for data")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    w = rng.standard_normal((512, 512), dtype=np.float32)
    end = time.monotonic() + args.seconds
    step = 0
    while time.monotonic() < end:
        time.sleep(args.load_s)  # the data loader
        x = rng.standard_normal((512, 512), dtype=np.float32)
        for _ in range(5):  # forward + backward stand-in
            x = np.tanh(x @ w)
        step += 1
    print(f"{step} steps")


if __name__ == "__main__":
    main()
