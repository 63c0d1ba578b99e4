#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_safetensors (fuzz/corpus/safetensors/).

Run by hand, never by the build or CI (standard library only):

    TUNE_FUZZ_WRITE_SEEDS=/tmp/seeds build-fuzz/fuzz/fuzz_safetensors -runs=0
    fuzz/gen_safetensors_seeds.py /tmp/seeds/state.safetensors fuzz/corpus/safetensors

state.safetensors is the harness's tiny model saved by tunep_bert_state_save()
(see fuzz_safetensors.c). From it come Hugging Face style checkpoints in every
float dtype and naming style that bert_io.c accepts; hand-built files then
cover each dtype, empty and scalar tensors, metadata, and one violation per
rule of the format (offsets, gaps, overlaps, header length, dtype, shape).
"""
import json
import struct
import sys
from pathlib import Path

DTYPE_SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2,
              "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}


def read(path):
    """(metadata, [(name, dtype, shape, bytes)]) of a safetensors file, in header order."""
    blob = Path(path).read_bytes()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    meta = header.pop("__metadata__", None)
    tensors = [(name, t["dtype"], t["shape"], data[t["data_offsets"][0]:t["data_offsets"][1]])
               for name, t in header.items()]
    return meta, tensors


def build(tensors, meta=None, pad=True):
    """The file for tensors [(name, dtype, shape, bytes)], offsets in list order."""
    header, off = {}, 0
    if meta is not None:
        header["__metadata__"] = meta
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors)


def raw_header(text, data=b""):
    text = text.encode()
    return struct.pack("<Q", len(text)) + text + data


def f32_values(raw):
    return struct.unpack("<%df" % (len(raw) // 4), raw)


def convert(raw, dtype):
    vals = f32_values(raw)
    if dtype == "F32":
        return raw
    if dtype == "F64":
        return struct.pack("<%dd" % len(vals), *vals)
    if dtype == "F16":
        return struct.pack("<%de" % len(vals), *vals)
    if dtype == "BF16":  # truncation of the float's top half
        return b"".join(struct.pack("<f", v)[2:] for v in vals)
    raise ValueError(dtype)


def main():
    state, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    meta, tensors = read(state)
    files = {"state.safetensors": Path(state).read_bytes()}

    weights = [t for t in tensors if not t[0].startswith("adamw.")]
    files["hf_weights_f32.safetensors"] = build(weights)

    # BertModel style: no "bert." prefix, no classifier, old gamma/beta names, F16.
    bertmodel = []
    for name, dtype, shape, raw in weights:
        if name.startswith("classifier."):
            continue
        name = name[len("bert."):] if name.startswith("bert.") else name
        name = name.replace("LayerNorm.weight", "LayerNorm.gamma")
        name = name.replace("LayerNorm.bias", "LayerNorm.beta")
        bertmodel.append((name, "F16", shape, convert(raw, "F16")))
    files["hf_bertmodel_f16.safetensors"] = build(bertmodel, {"format": "pt"})

    # Mixed BF16/F64, plus tensors the loader ignores, without the pooler.
    mixed = [(name, ("BF16", "F64")[i % 2], shape, convert(raw, ("BF16", "F64")[i % 2]))
             for i, (name, dtype, shape, raw) in enumerate(weights) if ".pooler." not in name]
    mixed.append(("bert.embeddings.position_ids", "I64", [1, 8], struct.pack("<8q", *range(8))))
    mixed.append(("cls.predictions.bias", "F32", [10], b"\0" * 40))
    files["hf_mixed_bf16_f64.safetensors"] = build(mixed, pad=False)

    every = [("t_" + d.lower(), d, [2], bytes(range(2 * s))) for d, s in DTYPE_SIZE.items()]
    every.append(("scalar", "F32", [], struct.pack("<f", 1.5)))
    every.append(("empty", "F16", [0, 3], b""))
    every.append(("nan_inf", "F16", [3], struct.pack("<3H", 0x7E00, 0x7C00, 0x0001)))
    files["all_dtypes.safetensors"] = build(every, {"k": "v", "\u00e9": "\u4e2d"})

    files["empty_header.safetensors"] = raw_header("{}")
    files["metadata_only.safetensors"] = raw_header('{"__metadata__":{"a":"b"}}')
    one = struct.pack("<f", 1.0)
    files["err_overlap.safetensors"] = raw_header(
        '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        '"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', one)
    files["err_gap.safetensors"] = raw_header(
        '{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', one * 2)
    files["err_shape_mismatch.safetensors"] = raw_header(
        '{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,4]}}', one)
    files["err_bad_dtype.safetensors"] = raw_header(
        '{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,4]}}', one)
    files["err_negative_dim.safetensors"] = raw_header(
        '{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', one)
    files["err_huge_dims.safetensors"] = raw_header(
        '{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}')
    files["err_dup_key.safetensors"] = raw_header(
        '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        '"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', one)
    files["err_meta_not_string.safetensors"] = raw_header('{"__metadata__":{"a":1}}')
    files["err_header_past_end.safetensors"] = struct.pack("<Q", 1 << 40) + b"{}"
    files["err_short.safetensors"] = b"\x02\0\0"
    files["err_state_wrong_version.safetensors"] = build(
        tensors, dict(meta, format_version="2"))
    for name, blob in files.items():
        (out / name).write_bytes(blob)


if __name__ == "__main__":
    main()
