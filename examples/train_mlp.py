"""Train a small MLP on a synthetic regression task (shipped here: a random teacher network) with
Stacey(p,p), Stacey(p,2), AdamW and Lion; print and plot the loss curves. Runs on CPU in well under
a minute.

    python examples/train_mlp.py [--steps 400] [--p 3] [--out examples_out]
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from lptheory.torch import Lion, StaceyP2, StaceyPP


def task(seed: int = 0, n: int = 2048, d_in: int = 32):
    """Inputs x ~ N(0, I); targets from a fixed random teacher MLP plus a little noise."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    w1 = torch.randn(d_in, 64, generator=g) / d_in**0.5
    w2 = torch.randn(64, 1, generator=g) / 8.0
    y = torch.tanh(x @ w1) @ w2 + 0.05 * torch.randn(n, 1, generator=g)
    return x, y


def model(seed: int = 1, d_in: int = 32):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(d_in, 128), torch.nn.GELU(), torch.nn.Linear(128, 128), torch.nn.GELU(), torch.nn.Linear(128, 1)
    )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--p", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--out", default="examples_out")
    args = ap.parse_args(argv)
    x, y = task()
    makers = {
        "stacey-pp": lambda ps: StaceyPP(ps, lr=1e-2, p=args.p, alpha=1e-2, tau=1e-2, betas=(0.9, 0.99), eps=1e-8),
        "stacey-p2": lambda ps: StaceyP2(ps, lr=1e-2, p=args.p, alpha=1e-2, tau=1e-2, betas=(0.9, 0.99), eps=1e-8),
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=3e-3, weight_decay=0.0),
        "lion": lambda ps: Lion(ps, lr=3e-4, betas=(0.9, 0.99)),
    }
    curves = {}
    for name, make in makers.items():
        net = model()
        opt = make(net.parameters())
        g = torch.Generator().manual_seed(2)
        losses = []
        t0 = time.perf_counter()
        for _ in range(args.steps):
            idx = torch.randint(0, x.shape[0], (args.batch,), generator=g)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        with torch.no_grad():
            full = float(torch.nn.functional.mse_loss(net(x), y))
        curves[name] = losses
        print(f"{name:>10}: final full-data loss {full:.4f}  ({time.perf_counter() - t0:.1f}s)")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        os.makedirs(args.out, exist_ok=True)
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, ls in curves.items():
            k = 20
            sm = [sum(ls[max(0, i - k) : i + 1]) / len(ls[max(0, i - k) : i + 1]) for i in range(len(ls))]
            ax.semilogy(sm, label=name)
        ax.set_xlabel("step")
        ax.set_ylabel("minibatch loss (moving average)")
        ax.legend()
        path = os.path.join(args.out, "losses.png")
        fig.savefig(path, dpi=120, bbox_inches="tight")
        print(f"wrote {path}")
    except ImportError:  # pragma: no cover
        pass


if __name__ == "__main__":
    main()
