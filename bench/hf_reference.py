"""tune's BERT fine-tune against Hugging Face transformers + PyTorch, the
reference implementation, on the pretrained all-MiniLM-L6-v2 (scripts/get-model)
and SST-2.

1. Logits check, after loading and before any step: a seeded
   BertForSequenceClassification (MiniLM plus a classifier initialised by
   transformers) is saved with save_pretrained; tune loads that folder
   (build/bench/bench_bert_logits, the trainer's own loading and tokenizing
   code) and both compute eval-mode logits for the first --logits-examples
   SST-2 dev sentences, in padded batches of 64. Token ids must be equal and
   logits within 1e-4.
2. Fine-tune: for each seed, both start from that same folder and train with
   the same hyperparameters (AdamW, linear warm-up and decay, gradient
   clipping 1.0, weight decay except biases and LayerNorm), the same data
   order (tune's seeded shuffle, transcribed below and checked against the
   golden order of tests/text/test_dataset.c), the same batches (dynamic
   padding) and steps; tune through `tune run` with one trial, transformers
   through a plain PyTorch loop doing what its Trainer does. Dev accuracy
   (the whole dev set) is compared at every evaluation. Dropout masks differ
   between the two (different generators), so single runs differ by noise:
   the goal is the mean over seeds within 1.5 points at every evaluation.

The reference tokenizer is AutoTokenizer over the folder's tokenizer.json
(transformers 5 builds a broken fast tokenizer from a bare vocab.txt).

Usage (from the repository root, after scripts/get-model and a build):
  $(bench/hf_setup_venv.sh) bench/hf_reference.py [--seeds 1,2,3] [--only logits|finetune]
Writes bench/out/hf_reference/results.json and prints a Markdown table.
"""
import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
import torch  # noqa: E402
from transformers import (AutoTokenizer, BertForSequenceClassification,  # noqa: E402
                          get_linear_schedule_with_warmup)

M64 = (1 << 64) - 1


# ---- tune's epoch order (models/text/dataset_tsv.c) -------------------------

def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def tune_order(n, seed, epoch):
    """The permutation tunep_dataset_order(seed, epoch, shuffle=1) gives."""
    order = list(range(n))
    state = mix64((seed ^ mix64((epoch + 0x632BE59BD9B4E019) & M64)) & M64)
    for i in range(n, 1, -1):
        reject_below = ((1 << 64) - i) % i
        while True:
            state = (state + 0x9E3779B97F4A7C15) & M64
            r = mix64(state)
            if r >= reject_below:
                break
        j = r % i
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


# tests/text/test_dataset.c: 500 examples, seed 2024, epoch 3
assert tune_order(500, 2024, 3)[:10] == [22, 275, 498, 148, 417, 262, 255, 177, 453, 287]


# ---- data -------------------------------------------------------------------

def read_tsv(path, limit=0):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        assert header == ["sentence", "label"], f"{path}: header {header}"
        for line in f:
            s, label = line.rstrip("\r\n").split("\t")
            rows.append((s, int(label)))
            if limit and len(rows) == limit:
                break
    return rows


def write_tsv(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        for s, label in rows:
            f.write(f"{s}\t{label}\n")


def make_init(model_dir, out, seed):
    """MiniLM + a classifier that transformers initialises under seed, saved."""
    if os.path.exists(os.path.join(out, "model.safetensors")):
        return
    torch.manual_seed(seed)
    model = BertForSequenceClassification.from_pretrained(model_dir, num_labels=2)
    model.save_pretrained(out)
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(model_dir, f), out)


# ---- 1. logits --------------------------------------------------------------

def logits_check(args, init, workdir):
    rows = read_tsv(args.dev, args.logits_examples)
    tsv = os.path.join(workdir, "logits_dev.tsv")
    write_tsv(tsv, rows)
    out = subprocess.run([args.logits_bin, init, tsv, str(args.max_seq_len)], check=True,
                         capture_output=True, text=True).stdout
    tune = json.loads(out)
    tok = AutoTokenizer.from_pretrained(init)
    model = BertForSequenceClassification.from_pretrained(init).eval()
    hf_ids, hf_logits = [], []
    with torch.inference_mode():
        for start in range(0, len(rows), 64):
            enc = tok([s for s, _ in rows[start:start + 64]], padding=True, truncation=True,
                      max_length=args.max_seq_len, return_tensors="pt")
            for r, m in zip(enc["input_ids"].tolist(), enc["attention_mask"].tolist()):
                hf_ids.append([i for i, k in zip(r, m) if k])
            hf_logits += model(**enc).logits.double().tolist()
    ids_equal = sum(a == b for a, b in zip(tune["ids"], hf_ids))
    diff = max(abs(a - b) for ra, rb in zip(tune["logits"], hf_logits) for a, b in zip(ra, rb))
    scale = max(abs(v) for r in hf_logits for v in r)
    rel = max(abs(a - b) / max(abs(b), 1e-6)
              for ra, rb in zip(tune["logits"], hf_logits) for a, b in zip(ra, rb))
    res = {"examples": len(rows), "ids_equal": ids_equal, "max_abs_diff": diff, "max_rel_diff": rel,
           "max_abs_logit": scale, "ok": ids_equal == len(rows) and diff <= 1e-4}
    print(f"logits check: {len(rows)} dev sentences, token ids equal for {ids_equal}, "
          f"max |logit diff| {diff:.3g}, max relative {rel:.3g} (largest |logit| {scale:.3g}): "
          f"{'OK' if res['ok'] else 'FAILED'}", flush=True)
    return res


# ---- 2. fine-tune -----------------------------------------------------------

def run_tune(args, init, train_tsv, seed, workdir):
    storage = os.path.join(workdir, f"tune-seed{seed}")
    shutil.rmtree(storage, ignore_errors=True)
    cfg = {
        "name": f"hf_reference_seed{seed}", "metric": "val_accuracy", "mode": "max",
        "num_samples": 1, "seed": seed, "max_concurrent_trials": 1,
        "param_space": {"lr": args.lr, "batch_size": args.batch_size,
                        "warmup_steps": args.warmup_steps, "weight_decay": args.weight_decay,
                        "dropout": args.dropout, "seed": seed},
        "trainer": {"type": "bert", "train": train_tsv, "dev": args.dev, "checkpoint": init,
                    "epochs": args.epochs, "eval_every": args.eval_every,
                    "max_seq_len": args.max_seq_len, "eval_batch_size": 128,
                    "threads": args.threads},
    }
    path = os.path.join(workdir, f"tune-seed{seed}.json")
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)
    t0 = time.monotonic()
    subprocess.run([args.tune_bin, "run", path, "--storage", storage], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    with open(os.path.join(storage, "progress.csv")) as f:
        rows = list(csv.DictReader(f))
    return {str(int(float(r["step"]))): float(r["val_accuracy"]) for r in rows}, wall


def evaluate(model, tok, dev, max_seq_len):
    model.eval()
    correct = 0
    with torch.inference_mode():
        for start in range(0, len(dev), 128):
            chunk = dev[start:start + 128]
            enc = tok([s for s, _ in chunk], padding=True, truncation=True,
                      max_length=max_seq_len, return_tensors="pt")
            pred = model(**enc).logits.argmax(-1).tolist()
            correct += sum(p == y for p, (_, y) in zip(pred, chunk))
    model.train()
    return correct / len(dev)


def run_hf(args, init, train, dev, seed):
    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(init)
    model = BertForSequenceClassification.from_pretrained(
        init, hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)
    model.train()
    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)],
         "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    steps_per_epoch = math.ceil(len(train) / args.batch_size)
    total = steps_per_epoch * args.epochs
    sched = get_linear_schedule_with_warmup(opt, args.warmup_steps, total)
    acc = {}
    step = 0
    t0 = time.monotonic()
    for epoch in range(args.epochs):
        order = tune_order(len(train), seed, epoch)
        for start in range(0, len(train), args.batch_size):
            chunk = [train[i] for i in order[start:start + args.batch_size]]
            enc = tok([s for s, _ in chunk], padding=True, truncation=True,
                      max_length=args.max_seq_len, return_tensors="pt")
            out = model(**enc, labels=torch.tensor([y for _, y in chunk]))
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % args.eval_every == 0 or step == total:
                acc[str(step)] = evaluate(model, tok, dev, args.max_seq_len)
    return acc, time.monotonic() - t0


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=os.path.join(root, "checkpoints/all-minilm-l6-v2"))
    p.add_argument("--train", default=os.path.join(root, "data/sst2/train.tsv"))
    p.add_argument("--dev", default=os.path.join(root, "data/sst2/dev.tsv"))
    p.add_argument("--build", default=os.path.join(root, "build"))
    p.add_argument("--out", default=os.path.join(root, "bench/out/hf_reference"))
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--train-examples", type=int, default=1600,
                   help="the first N examples of SST-2 train")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--max-seq-len", type=int, default=128)
    p.add_argument("--threads", type=int, default=1, help="threads of each side")
    p.add_argument("--logits-examples", type=int, default=128)
    p.add_argument("--only", choices=["logits", "finetune"])
    args = p.parse_args()
    args.tune_bin = os.path.join(args.build, "tune/tune")
    args.logits_bin = os.path.join(args.build, "bench/bench_bert_logits")
    for f in (args.tune_bin, args.logits_bin):
        if not os.access(f, os.X_OK):
            sys.exit(f"hf_reference: {f} not found: build first (scripts/setup), or --build DIR")
    if not os.path.exists(os.path.join(args.model, "model.safetensors")):
        sys.exit(f"hf_reference: no model in {args.model}: run scripts/get-model")
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    results = {"torch": torch.__version__,
               "transformers": __import__("transformers").__version__,
               "settings": {k: v for k, v in vars(args).items()
                            if k not in ("tune_bin", "logits_bin")}}
    path = os.path.join(args.out, "results.json")
    if os.path.exists(path):  # keep what earlier invocations measured
        with open(path) as f:
            old = json.load(f)
        results["logits"] = old.get("logits")
        results["seeds"] = old.get("seeds", {})
    results.setdefault("seeds", {})

    def save():
        with open(path, "w") as f:
            json.dump(results, f, indent=1)

    if args.only != "finetune":
        init = os.path.join(args.out, f"init-seed{seeds[0]}")
        make_init(args.model, init, seeds[0])
        results["logits"] = logits_check(args, init, args.out)
        save()
    if args.only == "logits":
        sys.exit(0 if results["logits"]["ok"] else 1)

    train = read_tsv(args.train, args.train_examples)
    dev = read_tsv(args.dev)
    train_tsv = os.path.join(args.out, "train_subset.tsv")
    write_tsv(train_tsv, train)
    for seed in seeds:
        init = os.path.join(args.out, f"init-seed{seed}")
        make_init(args.model, init, seed)
        tune_acc, tune_s = run_tune(args, init, train_tsv, seed, args.out)
        print(f"seed {seed}: tune {tune_s:.0f} s: " +
              ", ".join(f"{s}: {a:.4f}" for s, a in tune_acc.items()), flush=True)
        hf_acc, hf_s = run_hf(args, init, train, dev, seed)
        print(f"seed {seed}: transformers {hf_s:.0f} s: " +
              ", ".join(f"{s}: {a:.4f}" for s, a in hf_acc.items()), flush=True)
        results["seeds"][str(seed)] = {"tune": tune_acc, "hf": hf_acc,
                                       "tune_s": tune_s, "hf_s": hf_s}
        save()

    done = sorted(results["seeds"], key=int)
    steps = sorted({int(s) for r in results["seeds"].values() for s in r["hf"]})
    print(f"\n| step | tune (mean of {len(done)}) | transformers | difference (points) |")
    print("| ---: | ---: | ---: | ---: |")
    worst = 0.0
    for s in steps:
        t = [results["seeds"][k]["tune"][str(s)] for k in done]
        h = [results["seeds"][k]["hf"][str(s)] for k in done]
        d = 100 * (sum(t) / len(t) - sum(h) / len(h))
        worst = max(worst, abs(d))
        print(f"| {s} | {sum(t) / len(t):.4f} | {sum(h) / len(h):.4f} | {d:+.2f} |")
    print(f"\nseeds {', '.join(done)}; largest |difference| {worst:.2f} points "
          f"({'within' if worst <= 1.5 else 'NOT within'} 1.5)")


if __name__ == "__main__":
    main()
