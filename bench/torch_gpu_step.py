#!/usr/bin/env python3
"""torch_gpu_step.py - the PyTorch eager peer of bench_bert_step_gpu on the GPU.

The same BERT classifier in plain torch.nn (no `transformers`, no
torch.compile, no fused attention: eager, as Hugging Face's BertSelfAttention
in its default "eager" mode): token + position + segment embeddings,
LayerNorm (eps 1e-12), dropout 0.1, L post-LN encoder layers (Q, K, V
projections, q k^T / sqrt(d) + padding mask, softmax, dropout, P v, output
projection, dropout, residual, LayerNorm; exact-erf GELU FFN), tanh pooler on
[CLS], dropout, classifier; normal(0.02) initialisation. The step: zero_grad,
forward, cross-entropy, backward, clip_grad_norm_(1.0), AdamW (lr 2e-5,
weight decay 0.01 except biases and LayerNorm weights; PyTorch's default
multi-tensor implementation on CUDA). Random ids with [CLS] = 101 first,
segment 0 then 1, no padding, random labels, vocab 30522, 2 labels: the batch
of bench_bert_step_gpu.

Precision: fp32 turns TF32 off for matmuls (torch.backends.cuda.matmul.allow_tf32
= False, as tune's default cuBLAS math); --tf32 turns it on (tune --tf32).
Each step ends with torch.cuda.synchronize(); reported: median and min
ms/step after --warmup, examples/s, tokens/s, TFLOP/s with the same matmul
FLOP count (train step = 3 x forward, forward = T*L*(8H^2 + 4HI + 4SH) +
B*(2H^2 + 2HC)).

Output: one JSON line per config. Without torch or without CUDA it prints a
line with "skipped" and its reason and exits 0, so scripts/gpu-check can say so.

Run: python3 bench/torch_gpu_step.py --configs tiny,base [--tf32] [--steps 20]
"""
import argparse
import json
import math
import statistics
import sys
import time

CONFIGS = {  # name: (layers, hidden, heads, intermediate)
    "tiny": (2, 128, 2, 512),
    "mini": (4, 256, 4, 1024),
    "small": (4, 512, 8, 2048),
    "medium": (8, 512, 8, 2048),
    "base": (12, 768, 12, 3072),
}
VOCAB, MAX_POS, LABELS = 30522, 512, 2


def skipped(reason):
    print(json.dumps({"bench": "torch_bert_train_step_gpu", "engine": "pytorch",
                      "skipped": reason}))
    sys.exit(0)


try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    skipped("cannot import torch: %s" % e)


class Layer(nn.Module):
    def __init__(self, h, a, i, p):
        super().__init__()
        self.a, self.d = a, h // a
        self.q, self.k, self.v, self.o = (nn.Linear(h, h) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(h, eps=1e-12), nn.LayerNorm(h, eps=1e-12)
        self.up, self.down = nn.Linear(h, i), nn.Linear(i, h)
        self.drop = nn.Dropout(p)

    def forward(self, x, mask_add):
        b, s, h = x.shape

        def heads(t):
            return t.view(b, s, self.a, self.d).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d) + mask_add
        att = self.drop(F.softmax(scores, dim=-1))
        ctx = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.drop(self.o(ctx)))
        return self.ln2(x + self.drop(self.down(F.gelu(self.up(x)))))


class Bert(nn.Module):
    def __init__(self, layers, h, a, i, p=0.1):
        super().__init__()
        self.word = nn.Embedding(VOCAB, h)
        self.pos = nn.Embedding(MAX_POS, h)
        self.segment = nn.Embedding(2, h)
        self.ln = nn.LayerNorm(h, eps=1e-12)
        self.drop = nn.Dropout(p)
        self.layers = nn.ModuleList(Layer(h, a, i, p) for _ in range(layers))
        self.pool = nn.Linear(h, h)
        self.cls = nn.Linear(h, LABELS)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids, types, mask):
        s = ids.shape[1]
        pos = torch.arange(s, device=ids.device)
        x = self.drop(self.ln(self.word(ids) + self.segment(types) + self.pos(pos)))
        mask_add = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, mask_add)
        return self.cls(self.drop(torch.tanh(self.pool(x[:, 0]))))


def flops(layers, h, i, b, s):
    t = b * s
    fwd = t * layers * (8 * h * h + 4 * h * i + 4 * s * h) + b * (2 * h * h + 2 * h * LABELS)
    return 3 * fwd


def bench(name, args, dev):
    layers, h, a, i = CONFIGS[name]
    torch.manual_seed(0)
    model = Bert(layers, h, a, i).to(dev).train()
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or ".ln" in n
                                                             or n.startswith("ln."))]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or ".ln" in n
                or n.startswith("ln.")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=2e-5)
    b, s = args.batch, args.seq
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1000, VOCAB, (b, s), generator=g)
    ids[:, 0] = 101
    types = torch.zeros(b, s, dtype=torch.long)
    types[:, s // 2:] = 1
    labels = torch.randint(0, LABELS, (b,), generator=g)
    ids, types, labels = ids.to(dev), types.to(dev), labels.to(dev)
    mask = torch.ones(b, s, dtype=torch.long, device=dev)
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info(dev)[0]
    times, loss = [], None
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(ids, types, mask), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        torch.cuda.synchronize()
        if step == 0:
            free1 = torch.cuda.mem_get_info(dev)[0]
        if step >= args.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(times)
    print(json.dumps({
        "bench": "torch_bert_train_step_gpu", "engine": "pytorch", "config": name,
        "precision": "tf32" if args.tf32 else "fp32", "batch": b, "seq": s,
        "steps": args.steps, "median_ms": round(med, 3), "min_ms": round(min(times), 3),
        "examples_per_s": round(b / (med * 1e-3), 1),
        "tokens_per_s": round(b * s / (med * 1e-3)),
        "tflops": round(flops(layers, h, i, b, s) / (med * 1e9), 2),
        "model_memory_mib": round((free0 - free1) / 1048576),
        "last_loss": round(loss.item(), 5), "torch": torch.__version__,
        "device": torch.cuda.get_device_name(dev)}), flush=True)
    del model, opt
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="tiny,base")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        skipped("torch %s has no usable CUDA device (a CPU-only build, or no driver)"
                % torch.__version__)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    dev = torch.device("cuda", args.device)
    for name in args.configs.split(","):
        bench(name, args, dev)


if __name__ == "__main__":
    main()
