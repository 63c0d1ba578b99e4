#!/usr/bin/env python3
"""transformers' side of bench/run_sst2_tokens.sh: the training step of
Hugging Face's Trainer on the same real SST-2 batches as
`bench_bert_step --data FILE --checkpoint DIR` (bench/bert_step.c).

The batches: the file's examples in the order of tune's first epoch under
--seed (tunep_dataset_order, transcribed in bench/hf_reference.py), --batch
at a time, tokenized beforehand (as a datasets.map would) by AutoTokenizer
over the checkpoint folder with truncation to --seq, each batch padded to its
longest example by DataCollatorWithPadding (dynamic padding). Trainer runs
--warmup + --steps optimizer steps of its own loop (AdamW as configured by
default, linear schedule, clipping at 1.0, weight decay 0.01, the checkpoint's
dropout) over a sampler that yields exactly that order; a callback takes the
time at the end of every step. Reported over the --steps steps after
--warmup, timed from the end of the last warm-up step to the end of the last
step (so batch collation is inside, as in bench_bert_step): real (non-pad)
tokens/s, padded tokens/s (B x T of each batch), examples/s, the mean real and
padded lengths, median and min ms per step, and order_ok (the Trainer fetched
exactly these examples in this order).

Trainer needs accelerate, which bench/hf_setup_venv.sh's venv lacks: run it
in the venv of `bench/ray/setup_venv.sh --hf` (the same torch 2.15 and
transformers 5.25 from PyPI, plus accelerate and Ray).

Usage: $(bench/ray/setup_venv.sh --hf) bench/sst2_tokens.py --data data/sst2/train.tsv \\
           --checkpoint checkpoints/all-minilm-l6-v2 [--batch 32] [--seq 128] \\
           [--threads 2] [--steps 30] [--warmup 3] [--lr 2e-5] [--seed 42]
Prints one JSON line.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_sample():
    """CPU seconds all CPUs spent busy (steal included) and this process's own,
    as bench_bert_step's cpu_sample(): their difference over the timed steps is
    the work of other processes (foreign_cpu)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    t = os.times()
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK"), t.user + t.system


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128, help="max_seq_len (truncation)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    if a.warmup < 1 or a.steps < 1:
        sys.exit("sst2_tokens: --warmup and --steps must be at least 1 (the timed window "
                 "starts at the end of the last warm-up step)")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    t_setup = time.perf_counter()
    import torch
    import transformers
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                              DataCollatorWithPadding, Trainer, TrainerCallback,
                              TrainingArguments, set_seed)

    sys.path.insert(0, HERE)
    from hf_reference import read_tsv, tune_order

    torch.set_num_threads(a.threads)
    rows = read_tsv(a.data)
    need = (a.warmup + a.steps) * a.batch
    if need > len(rows):
        sys.exit(f"sst2_tokens: {a.data} has {len(rows)} examples, fewer than the {need} needed")
    order = tune_order(len(rows), a.seed, 0)[:need]
    tok = AutoTokenizer.from_pretrained(a.checkpoint)
    enc = tok([rows[i][0] for i in order], truncation=True, max_length=a.seq)
    items = [{"input_ids": ids, "token_type_ids": tt, "attention_mask": am, "labels": rows[i][1]}
             for i, ids, tt, am in zip(order, enc["input_ids"], enc["token_type_ids"],
                                       enc["attention_mask"])]
    fetched = []

    class Items(torch.utils.data.Dataset):
        def __len__(self):
            return len(items)

        def __getitem__(self, k):
            fetched.append(k)
            return items[k]

    class InOrder(torch.utils.data.Sampler):
        def __len__(self):
            return len(items)

        def __iter__(self):
            return iter(range(len(items)))

    class Ordered(Trainer):
        def _get_train_sampler(self, *args, **kwargs):
            return InOrder()

    ends, cpu = [], []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            ends.append(time.perf_counter())
            if len(ends) in (a.warmup, a.warmup + a.steps):
                cpu.append(cpu_sample())

    set_seed(a.seed)
    model = AutoModelForSequenceClassification.from_pretrained(a.checkpoint, num_labels=2)
    with tempfile.TemporaryDirectory(prefix="sst2-tokens-") as out:
        args = TrainingArguments(
            output_dir=out, per_device_train_batch_size=a.batch, learning_rate=a.lr,
            weight_decay=0.01, max_grad_norm=1.0, max_steps=a.warmup + a.steps,
            lr_scheduler_type="linear", eval_strategy="no", save_strategy="no",
            logging_strategy="no", report_to="none", seed=a.seed, use_cpu=True,
            dataloader_num_workers=0, disable_tqdm=True)
        trainer = Ordered(model=model, args=args, train_dataset=Items(),
                          data_collator=DataCollatorWithPadding(tok), callbacks=[Clock()])
        setup_s = time.perf_counter() - t_setup
        trainer.train()
    if len(ends) != a.warmup + a.steps:
        sys.exit(f"sst2_tokens: {len(ends)} steps ran, not {a.warmup + a.steps}")
    t0 = ends[a.warmup - 1]
    wall = ends[-1] - t0
    step_s = [ends[i] - ends[i - 1] for i in range(a.warmup, len(ends))]
    real = padded = 0
    for s in range(a.warmup, a.warmup + a.steps):
        lens = [len(items[k]["input_ids"]) for k in range(s * a.batch, (s + 1) * a.batch)]
        real += sum(lens)
        padded += a.batch * max(lens)
    print(json.dumps({
        "bench": "hf_bert_data_step", "engine": "transformers", "model":
        os.path.basename(os.path.normpath(a.checkpoint)), "data": a.data, "batch": a.batch,
        "max_seq_len": a.seq, "threads": a.threads, "steps": a.steps, "warmup": a.warmup,
        "seed": a.seed, "wall_s": round(wall, 4), "real_tokens": real, "padded_tokens": padded,
        "real_tokens_per_s": round(real / wall, 1), "padded_tokens_per_s": round(padded / wall, 1),
        "examples_per_s": round(a.steps * a.batch / wall, 2),
        "mean_real_len": round(real / (a.steps * a.batch), 2),
        "mean_padded_len": round(padded / (a.steps * a.batch), 2),
        "median_ms_per_step": round(1e3 * statistics.median(step_s), 2),
        "min_ms_per_step": round(1e3 * min(step_s), 2),
        "order_ok": fetched == list(range(len(items))), "optim": str(args.optim),
        "self_cpu": round((cpu[1][1] - cpu[0][1]) / wall, 2),
        "foreign_cpu": round(((cpu[1][0] - cpu[0][0]) - (cpu[1][1] - cpu[0][1])) / wall, 2),
        "setup_s": round(setup_s, 2), "torch": torch.__version__,
        "transformers": transformers.__version__,
        "torch_threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
