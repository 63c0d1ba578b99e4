#!/usr/bin/python3
"""Regenerates tests/bert/data/hf_tiny/, a tiny Hugging Face-style BERT
checkpoint for tests/bert/test_bert_io.c. Never run by `meson test`; the
files are committed.

The folder holds what a BertForSequenceClassification checkpoint on the Hub
holds: config.json (with id2label, as fine-tuned models have), vocab.txt and
model.safetensors, here with L=2, C=32, NH=2, I=64, P=16, V=50, K=3. The
safetensors file is written by hand from the format description (8-byte
little-endian header length, JSON header padded with spaces to a multiple of
8, raw little-endian data; tensors in name order), so neither `safetensors`
nor `transformers` is needed. Some tensors are BF16, some F16, the rest F32;
it also carries the harmless extras real checkpoints have
(bert.embeddings.position_ids as I64, cls.predictions.* and
cls.seq_relationship.* pretraining heads) which a loader must skip.

reference.json holds a padded batch and the logits that the model of
tests/tools/gen_bert_ref.py (plain torch.nn mirroring modeling_bert.py, eval mode)
computes with exactly the weights in the file, i.e. after rounding to
BF16/F16 where they are stored so.

Usage: /usr/bin/python3 tests/tools/gen_hf_fixture.py [output folder]
(Debian's interpreter, with the python3-torch and python3-numpy packages.)
"""
import json
import os
import struct
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # importing gen_bert_ref must leave no __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_bert_ref import Bert  # noqa: E402  (the shared reference model)

CFG = dict(L=2, C=32, NH=2, I=64, P=16, V=50, TV=2, K=3)
LABELS = ["negative", "neutral", "positive"]
B, T = 2, 8

# Stored in reduced precision; everything else is F32.
BF16 = {
    "bert.embeddings.word_embeddings.weight",
    "bert.encoder.layer.0.attention.self.query.weight",
    "bert.encoder.layer.1.output.LayerNorm.weight",
    "classifier.weight",
}
F16 = {
    "bert.embeddings.position_embeddings.weight",
    "bert.encoder.layer.1.intermediate.dense.weight",
    "bert.encoder.layer.0.attention.output.dense.bias",
}

VOCAB = (["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
         ["the", "a", "movie", "film", "was", "is", "good", "bad", "great", "awful", "not",
          "very", "and", "but", "i", "it", "plot", "acting", "fun", "boring", "love", "hate",
          "story", "too", "long", "short", "best", "worst", "ever", "!", ".", ",", "?",
          "##s", "##ly", "##ing", "##ed", "so", "really", "quite", "just", "well", "bit"])
assert len(VOCAB) == CFG["V"], len(VOCAB)


def stored(name, t):
    """(dtype name, raw little-endian bytes, value as float32 after rounding)."""
    t = t.detach().to(torch.float32).contiguous()
    if name in BF16:
        b = t.to(torch.bfloat16)
        return "BF16", b.view(torch.int16).numpy().astype("<i2").tobytes(), b.to(torch.float32)
    if name in F16:
        h = t.numpy().astype("<f2")
        return "F16", h.tobytes(), torch.from_numpy(h.astype(np.float32))
    return "F32", t.numpy().astype("<f4").tobytes(), t


def write_safetensors(path, tensors, metadata):
    """tensors: {name: (dtype, shape, bytes)}, written in name order."""
    header = {"__metadata__": metadata}
    offset, blobs = 0, []
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "tests", "bert", "data", "hf_tiny")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20261203)
    gen = torch.Generator().manual_seed(4321)
    c = CFG
    model = Bert(c)
    named = model.hf_named_parameters()
    tensors = {}
    with torch.no_grad():
        # Scales as in gen_bert_ref.py: far from BERT's 0.02 so that a swapped,
        # transposed or ignored tensor changes the logits visibly.
        for name, p in named:
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
            elif "embeddings" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=gen))
            dtype, data, value = stored(name, p)
            p.copy_(value)  # the reference sees exactly what the file holds
            tensors[name] = (dtype, tuple(p.shape), data)
    assert all(n in tensors for n in BF16 | F16)

    # Extras of real checkpoints that a loader must ignore.
    pos_ids = np.arange(c["P"], dtype="<i8").reshape(1, c["P"])
    tensors["bert.embeddings.position_ids"] = ("I64", pos_ids.shape, pos_ids.tobytes())
    rng = np.random.default_rng(7)
    tensors["cls.predictions.bias"] = ("F32", (c["V"],),
                                       rng.standard_normal(c["V"]).astype("<f4").tobytes())
    tensors["cls.seq_relationship.weight"] = (
        "F32", (2, c["C"]), rng.standard_normal((2, c["C"])).astype("<f4").tobytes())
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})

    ids = torch.randint(7, c["V"], (B, T), generator=gen, dtype=torch.int64)
    ids[:, 0] = VOCAB.index("[CLS]")
    ids[0, T - 1] = VOCAB.index("[SEP]")
    ids[1, 5] = VOCAB.index("[SEP]")
    ids[1, 6:] = VOCAB.index("[PAD]")
    types = torch.zeros(B, T, dtype=torch.int64)
    types[0, 4:] = 1
    mask = torch.ones(B, T, dtype=torch.int64)
    mask[1, 6:] = 0
    model.eval()
    with torch.no_grad():
        logits = model(ids, types, mask)

    config = {
        "architectures": ["BertForSequenceClassification"],
        "attention_probs_dropout_prob": 0.1,
        "classifier_dropout": None,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": c["C"],
        "id2label": {str(i): l for i, l in enumerate(LABELS)},
        "initializer_range": 0.02,
        "intermediate_size": c["I"],
        "label2id": {l: i for i, l in enumerate(LABELS)},
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": c["P"],
        "model_type": "bert",
        "num_attention_heads": c["NH"],
        "num_hidden_layers": c["L"],
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
        "transformers_version": "4.40.0",
        "type_vocab_size": c["TV"],
        "use_cache": True,
        "vocab_size": c["V"],
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    # repr() of a float32 value held in a Python float reads back exactly.
    ref = {
        "input_ids": ids.tolist(),
        "token_type_ids": types.tolist(),
        "attention_mask": mask.tolist(),
        "logits": [[float(x) for x in row] for row in logits.to(torch.float32)],
    }
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))
    print("wrote %s: %d bytes in all; logits %s" % (out, size, ref["logits"]))


if __name__ == "__main__":
    main()
