"""Prints the reference token ids and logits of tests/bert/test_bert_minilm.c.
Never run by `meson test`; its output is committed in the test.

Hugging Face transformers (5.x) loads the all-MiniLM-L6-v2 folder that
scripts/get-model installs as a BertForSequenceClassification with 2 labels,
gets the test's classifier (weight[k][c] = 0.02 * ((k * 384 + c) % 17 - 8)
rounded to float32, bias [0.01, -0.02]), and runs the four sentences as one
padded batch in eval mode. The tokenizer is AutoTokenizer over the folder's
tokenizer.json (transformers 5 builds a fast tokenizer that maps every word
to [UNK] from a bare vocab.txt).

Usage: $(bench/hf_setup_venv.sh) tests/tools/gen_minilm_ref.py [MODEL_DIR]
(MODEL_DIR defaults to checkpoints/all-minilm-l6-v2.)
"""
import sys

import numpy as np
import torch
from transformers import AutoTokenizer, BertForSequenceClassification

SENTENCES = [
    "A gorgeous, witty, seductive movie.",
    "It's not the worst film of the year, but it comes close.",
    "Naïve, UNFUNNY and overlong: a misfire.",
    "the plot is predictable",
]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "checkpoints/all-minilm-l6-v2"
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(path)
    model = BertForSequenceClassification.from_pretrained(path, num_labels=2)
    model.eval()
    C = model.config.hidden_size
    w = np.array([np.float32(0.02 * ((i % 17) - 8)) for i in range(2 * C)], dtype=np.float32)
    with torch.no_grad():
        model.classifier.weight.copy_(torch.from_numpy(w.reshape(2, C)))
        model.classifier.bias.copy_(torch.tensor([0.01, -0.02], dtype=torch.float32))
        enc = tok(SENTENCES, padding=True, truncation=True, max_length=32, return_tensors="pt")
        logits = model(**enc).logits.double().numpy()
    print("/* transformers' input_ids, [CLS] and [SEP] included; -1 ends a row. */")
    print("static const int32_t hf_ids[NS][MAX_LEN] = {")
    for row, m in zip(enc["input_ids"].tolist(), enc["attention_mask"].tolist()):
        ids = [i for i, k in zip(row, m) if k]
        print("    {" + ", ".join(str(i) for i in ids) + ", -1},")
    print("};")
    print("static const double hf_logits[NS][K] = {")
    for r in logits:
        print("    {" + ", ".join("%.9g" % v for v in r) + "},")
    print("};")
    print("/* torch %s, transformers %s */" % (torch.__version__,
                                                __import__("transformers").__version__))


if __name__ == "__main__":
    main()
