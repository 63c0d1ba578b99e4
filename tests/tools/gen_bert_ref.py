#!/usr/bin/python3
"""Regenerates tests/bert/data/bert_tiny_ref.bin, the PyTorch reference for
tests/bert/test_bert_ref.c. Never run by `meson test`; the blob is committed.

A tiny BertForSequenceClassification (L=2, C=32, NH=2, I=64, T=8, B=2, V=128,
K=2) is written in plain torch.nn, mirroring Hugging Face's modeling_bert.py
(post-LN encoder, exact GELU, additive finfo.min padding mask, tanh pooler on
[CLS]), so `transformers` is not needed. Weights come from this script's own
seeded generator and are stored in the blob under their Hugging Face names, in
the (out, in) row-major layout the C model uses, so the C test loads them
as they are. Dropout is off (PyTorch's dropout RNG cannot be reproduced).

The blob holds the inputs, logits, mean cross-entropy, every parameter
gradient, and the loss and gradient norm around 10 AdamW steps (lr 1e-3, weight
decay 0.01 except biases and LayerNorm weights, clip_grad_norm_ 1.0).

Format (little-endian): magic b"TNBERTRF", u32 version (1), u32 n_ints + that
many i32 (L, C, NH, I, P, V, TV, K, B, T, steps), u32 n_doubles + that many f64
(ln_eps, lr, weight_decay, clip_norm, beta1, beta2, adam_eps), u32 n_records,
then records: u32 name length, name bytes, u32 dtype (0 f32, 1 i32), u64
count, count values.

Usage: /usr/bin/python3 tests/tools/gen_bert_ref.py [output path]
(Debian's interpreter, with the python3-torch package.)
"""
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

MAGIC = b"TNBERTRF"
VERSION = 1

CFG = dict(L=2, C=32, NH=2, I=64, P=16, V=128, TV=2, K=2, B=2, T=8, steps=10)
LN_EPS = 1e-12
LR, WD, CLIP, BETA1, BETA2, ADAM_EPS = 1e-3, 0.01, 1.0, 0.9, 0.999, 1e-8


class Layer(nn.Module):
    def __init__(self, C, NH, I):
        super().__init__()
        self.NH, self.HS = NH, C // NH
        self.query = nn.Linear(C, C)
        self.key = nn.Linear(C, C)
        self.value = nn.Linear(C, C)
        self.att_out = nn.Linear(C, C)
        self.att_ln = nn.LayerNorm(C, eps=LN_EPS)
        self.fc = nn.Linear(C, I)
        self.fc_out = nn.Linear(I, C)
        self.out_ln = nn.LayerNorm(C, eps=LN_EPS)

    def heads(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.NH, self.HS).permute(0, 2, 1, 3)

    def forward(self, x, ext_mask):
        B, T, C = x.shape
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.HS) + ext_mask
        probs = F.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, C)
        h = self.att_ln(self.att_out(ctx) + x)
        return self.out_ln(self.fc_out(F.gelu(self.fc(h))) + h)


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        C = c["C"]
        self.word = nn.Embedding(c["V"], C)
        self.pos = nn.Embedding(c["P"], C)
        self.tok_type = nn.Embedding(c["TV"], C)
        self.emb_ln = nn.LayerNorm(C, eps=LN_EPS)
        self.layers = nn.ModuleList(Layer(C, c["NH"], c["I"]) for _ in range(c["L"]))
        self.pool = nn.Linear(C, C)
        self.cls = nn.Linear(C, c["K"])

    def forward(self, ids, types, mask):
        T = ids.shape[1]
        pos = torch.arange(T).unsqueeze(0)
        x = self.emb_ln(self.word(ids) + self.tok_type(types) + self.pos(pos))
        ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, ext)
        return self.cls(torch.tanh(self.pool(x[:, 0])))

    def hf_named_parameters(self):
        """(Hugging Face name, parameter) in the order of bert.h's table."""
        out = [
            ("bert.embeddings.word_embeddings.weight", self.word.weight),
            ("bert.embeddings.position_embeddings.weight", self.pos.weight),
            ("bert.embeddings.token_type_embeddings.weight", self.tok_type.weight),
            ("bert.embeddings.LayerNorm.weight", self.emb_ln.weight),
            ("bert.embeddings.LayerNorm.bias", self.emb_ln.bias),
        ]
        for i, l in enumerate(self.layers):
            p = "bert.encoder.layer.%d." % i
            out += [
                (p + "attention.self.query.weight", l.query.weight),
                (p + "attention.self.query.bias", l.query.bias),
                (p + "attention.self.key.weight", l.key.weight),
                (p + "attention.self.key.bias", l.key.bias),
                (p + "attention.self.value.weight", l.value.weight),
                (p + "attention.self.value.bias", l.value.bias),
                (p + "attention.output.dense.weight", l.att_out.weight),
                (p + "attention.output.dense.bias", l.att_out.bias),
                (p + "attention.output.LayerNorm.weight", l.att_ln.weight),
                (p + "attention.output.LayerNorm.bias", l.att_ln.bias),
                (p + "intermediate.dense.weight", l.fc.weight),
                (p + "intermediate.dense.bias", l.fc.bias),
                (p + "output.dense.weight", l.fc_out.weight),
                (p + "output.dense.bias", l.fc_out.bias),
                (p + "output.LayerNorm.weight", l.out_ln.weight),
                (p + "output.LayerNorm.bias", l.out_ln.bias),
            ]
        out += [
            ("bert.pooler.dense.weight", self.pool.weight),
            ("bert.pooler.dense.bias", self.pool.bias),
            ("classifier.weight", self.cls.weight),
            ("classifier.bias", self.cls.bias),
        ]
        return out


def no_decay(name):
    return name.endswith("bias") or "LayerNorm.weight" in name


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "tests", "bert", "data", "bert_tiny_ref.bin")
    torch.manual_seed(20261202)
    gen = torch.Generator().manual_seed(1234)
    c = CFG
    model = Bert(c)
    named = model.hf_named_parameters()
    assert len(named) == len(list(model.parameters()))
    # Weights larger than BERT's 0.02 init, LayerNorm weights away from 1 and
    # non-zero biases, so attention is far from uniform and a swapped or
    # ignored tensor cannot go unnoticed.
    with torch.no_grad():
        for name, p in named:
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
            elif "embeddings" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=gen))

    B, T = c["B"], c["T"]
    ids = torch.randint(0, c["V"], (B, T), generator=gen, dtype=torch.int64)
    types = torch.zeros(B, T, dtype=torch.int64)
    types[0, 4:] = 1
    types[1, 3:5] = 1
    mask = torch.ones(B, T, dtype=torch.int64)
    mask[1, 5:] = 0  # example 1: 5 tokens + 3 padding
    ids[1, 5:] = 0   # [PAD]
    labels = torch.tensor([1, 0], dtype=torch.int64)

    init_params = [(n, p.detach().clone()) for n, p in named]
    logits = model(ids, types, mask)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    grads = [(n, p.grad.detach().clone()) for n, p in named]

    groups = [
        {"params": [p for n, p in named if not no_decay(n)], "weight_decay": WD},
        {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=LR, betas=(BETA1, BETA2), eps=ADAM_EPS)
    losses, norms = [], []
    for _ in range(c["steps"]):
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        opt.step()
        opt.zero_grad()
        step_loss = F.cross_entropy(model(ids, types, mask), labels)
        step_loss.backward()
        losses.append(float(step_loss))

    records = [
        ("input_ids", 1, ids.flatten().tolist()),
        ("token_type_ids", 1, types.flatten().tolist()),
        ("attention_mask", 1, mask.flatten().tolist()),
        ("labels", 1, labels.tolist()),
        ("logits", 0, logits.detach().flatten().tolist()),
        ("loss", 0, [float(loss)]),
        ("losses_after_steps", 0, losses),
        ("grad_norms", 0, norms),
    ]
    records += [("param/" + n, 0, p.flatten().tolist()) for n, p in init_params]
    records += [("grad/" + n, 0, g.flatten().tolist()) for n, g in grads]

    ints = [c[k] for k in ("L", "C", "NH", "I", "P", "V", "TV", "K", "B", "T", "steps")]
    dbls = [LN_EPS, LR, WD, CLIP, BETA1, BETA2, ADAM_EPS]
    out = bytearray(MAGIC)
    out += struct.pack("<I", VERSION)
    out += struct.pack("<I%di" % len(ints), len(ints), *ints)
    out += struct.pack("<I%dd" % len(dbls), len(dbls), *dbls)
    out += struct.pack("<I", len(records))
    for name, dtype, vals in records:
        nb = name.encode()
        out += struct.pack("<I", len(nb)) + nb + struct.pack("<IQ", dtype, len(vals))
        out += struct.pack("<%d%s" % (len(vals), "f" if dtype == 0 else "i"), *vals)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(out)
    print("wrote %s: %d bytes, loss %.6f, losses after steps %s, grad norms %s"
          % (path, len(out), float(loss), ["%.6f" % x for x in losses],
             ["%.4f" % x for x in norms]))


if __name__ == "__main__":
    main()
