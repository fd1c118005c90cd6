"""Does Stacey beat AdamW on my model? A user's own task, in one file, under the practice protocol.

    lptheory check examples/practice_wine.py --quick          # in this process
    lptheory check examples/practice_wine.py --quick --workers 2   # on a local Dask cluster

scikit-learn's wine table (178 x 13, three cultivars, shipped with the package), a small MLP. Every optimizer is
tuned with the same budget, compared over fresh paired seeds with Holm's correction; no claim of the paper speaks
of this task, so the records give the comparison only.
"""

import torch
from sklearn.datasets import load_wine

from proofs_checks.api import PracticeTask, split_arrays


def data(seed):
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return split_arrays(X, y, seed)  # 60/20/20 train/val/test from the seed


def model(seed):
    return torch.nn.Sequential(torch.nn.Linear(13, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))


TASK = PracticeTask(
    "wine",
    data,
    model,
    steps=150,
    quick_steps=60,
    batch_size=16,
    metric=("test accuracy", "accuracy", "max"),
)
