#!/usr/bin/env python3
"""A PyTorch training script tuned from the command line by tune.

configs/examples/command_asha.json runs it once per trial with ASHA:

    tune run configs/examples/command_asha.json

tune substitutes the trial's hyperparameters into the arguments
("--lr", "{lr}") and reads metrics from lines this script prints:

    tune-report {"val_accuracy": 0.81, "val_loss": 0.43}

one line per epoch (one training_iteration). Everything else it prints goes
to the trial folder's stdout.log and stderr.log. When ASHA stops the trial,
tune sends SIGTERM (then SIGKILL after kill_grace_s); a script with state
worth keeping would save it on SIGTERM into $TUNE_TRIAL_DIR.

The task is a small MLP classifying points of a fixed synthetic dataset
(a random teacher network labels Gaussian inputs), so it runs anywhere in
seconds; replace make_data() and Net with your own.
"""
import argparse
import json
import os
import sys

import torch
from torch import nn


def make_data(n_train=4000, n_val=1000, dim=20, classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)  # the same data in every trial
    x = torch.randn(n_train + n_val, dim, generator=g)
    teacher = nn.Sequential(nn.Linear(dim, 32), nn.Tanh(), nn.Linear(32, classes))
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 1.5)
        y = teacher(x).argmax(dim=1)
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


class Net(nn.Module):
    def __init__(self, dim, hidden, classes, dropout):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.layers(x)


def report(**metrics):
    # flush: a pipe is block-buffered, and ASHA needs each epoch's result now
    # (tune also sets PYTHONUNBUFFERED=1 for the same reason).
    print("tune-report " + json.dumps(metrics), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--epochs", type=int, default=20)
    args = ap.parse_args()

    torch.set_num_threads(1)  # trials run side by side: one core each
    torch.manual_seed(int(os.environ.get("TUNE_TRIAL_SEED", "0")) % 2**63)
    (xt, yt), (xv, yv) = make_data()
    model = Net(xt.shape[1], args.hidden, int(yt.max()) + 1, args.dropout)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    print(f"trial {os.environ.get('TUNE_TRIAL_ID', '?')}: {vars(args)}")

    for epoch in range(1, args.epochs + 1):
        model.train()
        perm = torch.randperm(len(xt))
        total = 0.0
        for i in range(0, len(xt), args.batch_size):
            idx = perm[i:i + args.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        model.eval()
        with torch.no_grad():
            out = model(xv)
            val_loss = loss_fn(out, yv).item()
            val_acc = (out.argmax(dim=1) == yv).float().mean().item()
        # A diverged run reports NaN: tune fails the attempt with that reason.
        report(val_accuracy=val_acc, val_loss=val_loss, train_loss=total / len(xt), epoch=epoch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
