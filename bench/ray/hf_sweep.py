#!/usr/bin/env python3
"""Ray Tune driving Hugging Face transformers' Trainer: the stack tune replaces,
on the sweep that bench/minilm_sweep.json runs in `tune run`.

Each trial fine-tunes all-MiniLM-L6-v2 (scripts/get-model) on SST-2 with
transformers.Trainer (its own training loop: AdamW, linear warm-up and decay,
gradient clipping at 1.0, weight decay except biases and LayerNorm, dynamic
padding through DataCollatorWithPadding), evaluates on the dev set at the end
of every epoch (eval_strategy="epoch") and, from a TrainerCallback's
on_evaluate, calls ray.tune.report with val_accuracy. Ray's ASHAScheduler
(grace 1, reduction factor 2, max_t = the epochs) stops trials early.

What is the same as tune's trainer, so that one iteration is the same work on
both sides:
- the data: every epoch takes the first --max-train-examples of tune's seeded
  shuffle of the whole training file (tunep_dataset_order, transcribed in
  bench/hf_reference.py and imported from there), through a sampler that
  Trainer's set_epoch reaches; every report says whether the examples the
  Trainer fetched in that epoch were exactly those (order_ok);
- the batches (per_device_train_batch_size = the trial's batch_size, the last
  one short), the steps per epoch, the schedule over all --epochs, the
  evaluation (the first --max-eval-examples dev sentences, or all, in batches
  of 128 padded to their longest), max_seq_len;
- the seed of every trial (--seed, as `"seed": 42` in bench/minilm_sweep.json,
  and HF's default): the classifier each side initialises and the order are
  the same for every trial of a side;
- one thread per trial: resources 1 CPU per trial, torch.set_num_threads(1),
  OMP_NUM_THREADS = MKL_NUM_THREADS = 1, --cpus CPUs for Ray.
The classifier's initial weights and the dropout masks come from each side's
own generator.

Ray's own transformers integration (ray.train.huggingface.transformers:
prepare_trainer, RayTrainReportCallback) is for Ray Train's TorchTrainer
workers and reports at checkpoint saves; a Tune function trainable with a
reporting callback is the plain way to let Tune schedule Trainer runs, and
writes no checkpoints (save_strategy="no"; tune's sweep writes none either).
Ray's defaults otherwise: a new worker process per trial (reuse_actors off;
--reuse-actors turns it on), its result files under a temporary storage path.

  hf_sweep.py [--configs TUNE_DIR/results.csv] [--samples 12] [--sample-seed S]
              [--epochs 4] [--max-train-examples 1200] [--max-eval-examples 0]
              [--max-seq-len 64] [--concurrency 2] [--cpus 2] [--threads 1]
              [--reports FILE] [--t0 EPOCH_SECONDS] [--reuse-actors]

--configs runs exactly the configurations of a finished `tune run` (its
results.csv: lr, batch_size, warmup_steps per trial) in tune's trial order (a
grid over the configuration index); without it Ray samples --samples
configurations of the same space (lr loguniform(3e-5, 3e-4), batch_size
choice [16, 32], warmup_steps randint(0, 40)) with --sample-seed.
--reports writes one JSON line per report (trial, configuration, iteration,
val_accuracy, Ray's result timestamp and the reporting worker's time.time(),
the epoch's training seconds and Trainer's eval_runtime);
the last line on stdout is a JSON summary.
"""
import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import time

T_START = time.time()
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def read_tsv(path, limit=0):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        if header != ["sentence", "label"]:
            sys.exit(f"hf_sweep: {path}: expected the header sentence<TAB>label, got {header}")
        for line in f:
            s, label = line.rstrip("\r\n").split("\t")
            rows.append((s, int(label)))
            if limit and len(rows) == limit:
                break
    return rows


def read_tune_configs(path):
    """tune's results.csv -> [{lr, batch_size, warmup_steps}] in trial order."""
    with open(path) as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["trial_id"]))
    if [int(r["trial_id"]) for r in rows] != list(range(len(rows))):
        sys.exit(f"hf_sweep: {path}: trial ids are not 0..{len(rows) - 1}")
    return [{"lr": float(r["config/lr"]), "batch_size": int(float(r["config/batch_size"])),
             "warmup_steps": int(float(r["config/warmup_steps"]))} for r in rows]


def train_trial(config, a, configs, train_rows, dev_rows):
    """One trial: transformers.Trainer over tune's data order, reporting to Ray."""
    import torch
    from ray import tune
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                              DataCollatorWithPadding, Trainer, TrainerCallback,
                              TrainingArguments, set_seed)

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from hf_reference import tune_order

    torch.set_num_threads(a.threads)
    hp = configs[config["i"]] if configs is not None else config
    lr, bs, warm = float(hp["lr"]), int(hp["batch_size"]), int(hp["warmup_steps"])
    n_take = min(a.max_train_examples or len(train_rows), len(train_rows))
    tok = AutoTokenizer.from_pretrained(a.model)

    class Encoded(torch.utils.data.Dataset):
        """Rows tokenized on first use ([CLS] a [SEP], truncated); records what is fetched."""

        def __init__(self, rows):
            self.rows, self.cache, self.fetched = rows, {}, []

        def __len__(self):
            return len(self.rows)

        def __getitem__(self, i):
            self.fetched.append(i)
            if i not in self.cache:
                s, y = self.rows[i]
                enc = tok(s, truncation=True, max_length=a.max_seq_len)
                self.cache[i] = dict(enc, labels=y)
            return self.cache[i]

    class TuneOrder(torch.utils.data.Sampler):
        """Each epoch the first n_take examples of tune's shuffle of the whole file."""

        def __init__(self):
            self.epoch = 0

        def set_epoch(self, epoch):
            self.epoch = epoch

        def __len__(self):
            return n_take

        def __iter__(self):
            return iter(tune_order(len(train_rows), a.seed, self.epoch)[:n_take])

    train_ds, dev_ds, sampler = Encoded(train_rows), Encoded(dev_rows), TuneOrder()

    class SweepTrainer(Trainer):
        def _get_train_sampler(self, *args, **kwargs):
            return sampler

    def accuracy(pred):
        return {"accuracy": float((pred.predictions.argmax(-1) == pred.label_ids).mean())}

    class ReportToRay(TrainerCallback):
        """After each evaluation: ray.tune.report (ASHA may stop the trial there),
        with the epoch's training time (on_epoch_begin to on_epoch_end, which
        Trainer calls before it evaluates) and Trainer's eval_runtime."""

        def on_epoch_begin(self, args, state, control, **kwargs):
            self.t_epoch = time.perf_counter()

        def on_epoch_end(self, args, state, control, **kwargs):
            self.train_s = time.perf_counter() - self.t_epoch

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            epoch = round(state.epoch) - 1  # Trainer's count, not the sampler's
            want = tune_order(len(train_rows), a.seed, epoch)[:n_take]
            order_ok = train_ds.fetched == want
            train_ds.fetched = []
            tune.report({"val_accuracy": metrics["eval_accuracy"],
                         "val_loss": metrics["eval_loss"], "epoch": epoch + 1,
                         "step": state.global_step, "order_ok": int(order_ok),
                         "train_s": self.train_s, "eval_s": metrics["eval_runtime"],
                         "report_time": time.time()})

    set_seed(a.seed)
    model = AutoModelForSequenceClassification.from_pretrained(a.model, num_labels=2)
    out = tempfile.mkdtemp(prefix="hf-sweep-trial-")
    try:
        args = TrainingArguments(
            output_dir=out, per_device_train_batch_size=bs, per_device_eval_batch_size=128,
            learning_rate=lr, warmup_steps=warm, weight_decay=0.01, max_grad_norm=1.0,
            num_train_epochs=a.epochs, lr_scheduler_type="linear", eval_strategy="epoch",
            save_strategy="no", logging_strategy="no", report_to="none", seed=a.seed,
            use_cpu=True, dataloader_num_workers=0, disable_tqdm=True)
        trainer = SweepTrainer(model=model, args=args, train_dataset=train_ds,
                               eval_dataset=dev_ds, data_collator=DataCollatorWithPadding(tok),
                               compute_metrics=accuracy, callbacks=[ReportToRay()])
        trainer.train()
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", help="a finished tune run's results.csv: run its configurations")
    ap.add_argument("--samples", type=int, default=12, help="without --configs")
    ap.add_argument("--sample-seed", type=int, default=2026)
    ap.add_argument("--model", default=os.path.join(ROOT, "checkpoints/all-minilm-l6-v2"))
    ap.add_argument("--train", default=os.path.join(ROOT, "data/sst2/train.tsv"))
    ap.add_argument("--dev", default=os.path.join(ROOT, "data/sst2/dev.tsv"))
    ap.add_argument("--epochs", type=int, default=4, help="also ASHA's max_t")
    ap.add_argument("--max-train-examples", type=int, default=1200, help="0: all")
    ap.add_argument("--max-eval-examples", type=int, default=0, help="0: all")
    ap.add_argument("--max-seq-len", type=int, default=64)
    ap.add_argument("--grace-period", type=int, default=1)
    ap.add_argument("--reduction-factor", type=float, default=2)
    ap.add_argument("--seed", type=int, default=42, help="every trial's seed (order, init)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=2, help="ray.init(num_cpus=)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per trial")
    ap.add_argument("--reports", help="write one JSON line per report here")
    ap.add_argument("--t0", type=float, default=T_START,
                    help="the sweep's start (time.time()); default: this process's start")
    ap.add_argument("--reuse-actors", action="store_true",
                    help="reuse trial processes (Ray's default: a new one per trial)")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.model, "model.safetensors")):
        sys.exit(f"hf_sweep: no model in {a.model}: run scripts/get-model")

    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[k] = str(a.threads)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import numpy as np
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.basic_variant import BasicVariantGenerator

    configs = read_tune_configs(a.configs) if a.configs else None
    train_rows, dev_rows = read_tsv(a.train), read_tsv(a.dev, a.max_eval_examples)

    reports = []
    names = {}

    class Collect(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            n = trial.config["i"] if configs is not None else names.setdefault(
                trial.trial_id, len(names))
            hp = configs[n] if configs is not None else {
                k: trial.config[k] for k in ("lr", "batch_size", "warmup_steps")}
            reports.append({"engine": "ray", "trial": n, "config": hp,
                            "iteration": int(result["training_iteration"]),
                            "val_accuracy": float(result["val_accuracy"]),
                            "step": int(result["step"]), "order_ok": int(result["order_ok"]),
                            "train_s": float(result["train_s"]),
                            "eval_s": float(result["eval_s"]),
                            "timestamp": int(result["timestamp"]),
                            "report_time": float(result["report_time"])})

    if configs is not None:
        space = {"i": tune.grid_search(list(range(len(configs))))}
        num_samples = 1
    else:
        space = {"lr": tune.loguniform(3e-5, 3e-4), "batch_size": tune.choice([16, 32]),
                 "warmup_steps": tune.randint(0, 40)}
        num_samples = a.samples
    np.random.seed(a.sample_seed)  # ASHA's bracket draw uses numpy's global state
    scheduler = ASHAScheduler(time_attr="training_iteration", max_t=a.epochs,
                              grace_period=a.grace_period, reduction_factor=a.reduction_factor,
                              brackets=1)
    env = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                      "OPENBLAS_NUM_THREADS", "TRANSFORMERS_VERBOSITY",
                                      "HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM")}
    t_init = time.time()
    ray.init(num_cpus=a.cpus, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, configure_logging=True, runtime_env={"env_vars": env})
    init_s = time.time() - t_init
    storage = tempfile.mkdtemp(prefix="ray-hf-sweep-")
    trainable = tune.with_resources(
        tune.with_parameters(train_trial, a=a, configs=configs, train_rows=train_rows,
                             dev_rows=dev_rows), {"cpu": 1})
    try:
        tuner = tune.Tuner(
            trainable, param_space=space,
            tune_config=tune.TuneConfig(
                metric="val_accuracy", mode="max", scheduler=scheduler, num_samples=num_samples,
                reuse_actors=a.reuse_actors,
                # max_concurrent_trials on a generator that also takes a seed (Ray ignores
                # max_concurrent_trials when given a generator).
                search_alg=BasicVariantGenerator(max_concurrent=a.concurrency,
                                                 random_state=a.sample_seed)),
            run_config=tune.RunConfig(name="hf_sweep", storage_path=storage, verbose=0,
                                      callbacks=[Collect()]))
        t_fit = time.time()
        grid = tuner.fit()
        t_end = time.time()
        errors = [str(r.error).splitlines()[-1] for r in grid if r.error]
    finally:
        shutil.rmtree(storage, ignore_errors=True)
        ray.shutdown()

    if a.reports:
        with open(a.reports, "w") as f:
            for r in reports:
                f.write(json.dumps(r) + "\n")
    import torch
    import transformers
    best = max((r["val_accuracy"] for r in reports), default=None)
    print(json.dumps({
        "bench": "hf_sweep", "engine": "ray", "ray": ray.__version__, "torch": torch.__version__,
        "transformers": transformers.__version__, "python": sys.version.split()[0],
        "same_configs_as_tune": configs is not None, "trials": len(grid),
        "reports": len(reports), "errors": len(errors), "first_error": errors[:1],
        "order_mismatches": sum(1 for r in reports if not r["order_ok"]),
        "best_val_accuracy": best, "reuse_actors": a.reuse_actors,
        "startup_s": round(t_init - a.t0, 3), "init_s": round(init_s, 3),
        "fit_s": round(t_end - t_fit, 3), "wall_s": round(t_end - a.t0, 3)}), flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
