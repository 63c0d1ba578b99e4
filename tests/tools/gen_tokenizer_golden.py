#!/usr/bin/env python3
"""Generate the tokenizer goldens in tests/text/data/ with Hugging Face's tokenizer.

The reference is transformers' Python BertTokenizer (BasicTokenizer followed by
WordpieceTokenizer, in v5 kept as tokenization_bert_legacy), built from the
local bert-base-uncased vocabulary with do_lower_case=True (accents stripped,
as for BERT uncased). The model hub is not needed. Never run by the tests:

    python3 -m venv /tmp/venv-tok && /tmp/venv-tok/bin/pip install transformers
    /tmp/venv-tok/bin/python tests/tools/gen_tokenizer_golden.py [SHARED_DATA [OUT_DIR]]

SHARED_DATA defaults to ../shared/data next to the repository, OUT_DIR to
tests/text/data. Use the same Python as scripts/gen_unicode_tables.py (the
Unicode version must match; it is written into every file).

Files (ids are decimal, space-separated; '#' lines are comments):
  tricky.txt          ESCAPED_TEXT<TAB>IDS  hand-written hard cases
  random.txt          ESCAPED_TEXT<TAB>IDS  seeded random strings of hard code points
  sst2_dev.txt        IDS                   first 300 rows of sst2/dev.tsv, sentence only
  trec_test.txt       IDS                   first 300 rows of trec/test.tsv
  rte_dev.txt         N_A<TAB>IDS           all 277 pairs of rte/dev.tsv, [CLS] a [SEP] b [SEP],
                                            untruncated; the first N_A ids have type 0
  rte_dev_trunc.txt   MAX_LEN<TAB>N_A<TAB>IDS  the same, truncated "longest_first" to MAX_LEN
  unicode_blocks.txt  FIRST_CP<TAB>FNV1A64  per 4096 code points c: FNV-1a 64 over the UTF-8 of
                                            " ".join(basic_tokenize(PROBE(c))) + "\\n" in order
IDS never include [CLS]/[SEP] unless stated; "-" stands for no ids.
ESCAPED_TEXT is the UTF-8 bytes of the text with printable ASCII kept
(backslash doubled) and every other byte, and trailing spaces, written as
\\xHH, so that no line ends in whitespace; it may hold invalid UTF-8, which
the reference reads with errors="replace" (U+FFFD, dropped by cleaning).
"""

import os
import random
import sys
import unicodedata

from transformers.models.bert.tokenization_bert_legacy import (BasicTokenizer,
                                                                BertTokenizerLegacy,
                                                                WordpieceTokenizer, load_vocab)

ROWS = 300
BLOCK = 4096
TRUNC_LENGTHS = (64, 13)


def probe(cp):
    """The text tokenized for code point cp in unicode_blocks.txt."""
    c = chr(cp)
    return "A\u03a3" + c + "\u03a3" + c + "b"


def escape(raw):
    out = []
    trailing = len(raw) - len(raw.rstrip(b" "))
    for i, b in enumerate(raw):
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F and not (b == 0x20 and i >= len(raw) - trailing):
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def fnv1a64(data, h=0xCBF29CE484222325):
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


class Reference:
    def __init__(self, vocab_path):
        self.vocab = load_vocab(vocab_path)
        self.basic = BasicTokenizer(do_lower_case=True, strip_accents=None)
        self.wordpiece = WordpieceTokenizer(vocab=self.vocab, unk_token="[UNK]")
        self.full = BertTokenizerLegacy(vocab_file=vocab_path, do_lower_case=True)

    def ids(self, text):
        tokens = []
        for word in self.basic.tokenize(text):
            tokens.extend(self.wordpiece.tokenize(word))
        return [self.vocab[t] for t in tokens]

    def pair(self, a, b, max_len=None):
        kw = {"truncation": "longest_first", "max_length": max_len} if max_len else {}
        enc = self.full(a, b, return_token_type_ids=True, **kw)
        return enc["input_ids"], enc["token_type_ids"]


def tricky_cases():
    s = [
        "Hello, World!", "Crème Brûlée", "CRÈME BRÛLÉE à la carte", "naïve café résumé",
        "don't", "Don't STOP", "I can't won't shouldn't've", "it 's a does n't",
        "3.14159 1,000,000 $5.00 50% #1 @user 2nd 10:30pm", "e-mail re-enter state-of-the-art",
        "unaffable", "Unaffable!!!", "hello\tworld\nnew\r\nline", "  leading and trailing   ",
        "multiple     spaces", "\u00a0non\u00a0breaking\u2009thin\u3000ideographic",
        "zero\u200bwidth\u200djoiner\ufeffbom", "soft\u00adhyphen", "ctrl\x01\x02\x1f\x7fchars",
        "nul\x00byte", "replacement\ufffdchar", "line\u2028sep\u2029para", "next\u0085line",
        "中文字符测试", "混合English文本", "日本語のテキスト", "한국어 텍스트", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
        "\uf900\uf901 compat ideographs \U0002f800", "CJK ext B \U00020000\U0002a6d6",
        "emoji 😀🎉👍🏽 👨‍👩‍👧", "flags 🇺🇸 🇫🇷", "♥ ★ © ® ™ € £ ¥ § ¶ †",
        "ΑΘΗΝΑ ΕΛΛΑΣ Οδυσσεύς", "ΟΔΟΣ. ΣΟΦΟΣ, Σ ΑΣ", "ὈΔΥΣΣΕΎΣ ᾼ ᾳ ᾠ", "Σ̈ΑΣ̈ ΑΣ̈Α",
        "МОСКВА Россия ЁЛКА ёжик", "Ўзбек Україна Їжак Ґанок", "Straße STRASSE ẞ ß",
        "İstanbul IĞDIR ışık", "Ǆemal ǅemal ǆemal ǈ", "Å Å Å Ω Ω", "ﬁnance ﬂow ﬀ",
        "e\u0301 a\u0300 o\u0308 n\u0303", "A\u030a\u0301 a\u0323\u0302 q\u0307\u0323",
        "\u0301\u0300 lone marks \u0301", "ḈẮỆ ǺȴȺ", "Zoë Brontë Noël coöperate",
        "Ærøskøbing ÆØÅ Łódź Œuvre", "Dvořák Škoda Čapek Žižek", "Việt Nam Tiếng Việt",
        "العربية עברית हिन्दी ภาษาไทย", "देवनागरी क्षत्रिय", "ગુજરાતી ਪੰਜਾਬੀ தமிழ்",
        "Ψυχή ψυχή ΨΥΧΉ", "Ⅻ ⅻ ① ⑩ ²³ ½", "Ａｂｃ ＡＢＣ", "Cherokee ᏣᎳᎩ ꮳꮃꭹ",
        "Deseret \U00010400\U00010428 Adlam \U0001e900\U0001e922",
        "music \U0001d15e\U0001d15f \U0001d165\U0001d16d \U0001d16d\U0001d165",
        "\u302e\u302f hangul tone marks", "a\U0001d16d\U0001d165b a\U0001d16d\u0300\U0001d165b",
        "Greek question mark\u037e ano teleia\u0387 varia\u1fef",
        "brackets [x] (y) {z} <w> quotes \"q\" 'r' «s» “t” ‘u’", "dashes – — ― ‐ ‒ ·",
        "`^_~|\\ backquote caret", "[CLS] [SEP] [MASK] [UNK] [PAD]",
        "##hash ##tag", "a" * 100, "b" * 101, "x" * 99 + "é" + "!", "ab" * 60 + " end",
        "pneumonoultramicroscopicsilicovolcanoconiosis", "supercalifragilisticexpialidocious",
        "Antidisestablishmentarianism HTTPS://EXAMPLE.COM/PATH?Q=1&R=2",
        "user@example.com C++ C# .NET node.js", "COVID-19 H1N1 MP3 iPhone eBay",
        "", " ", "\t\n", "!", "é", "Σ", "ς", "İ", "\u0130\u0307",
        "Mixed\u00a0Case\u2002Spaces\u205fHere", "tab\tseparated\tvalues",
        "'quoted' \"double\" ``ptb'' -lrb- -rrb-", "...ellipsis…", "1st 2nd 3rd 4th 21st",
    ]
    cases = [x.encode("utf-8") for x in s]
    cases += [
        b"bad \xff byte", b"trunc \xe2\x82", b"\xc3\x28 invalid two", b"overlong \xc0\xaf slash",
        b"surrogate \xed\xa0\x80 half", b"too big \xf4\x90\x80\x80", b"cont \x80\x80 only",
        b"caf\xc3\xa9 \xe9 latin1", b"mid\xf0\x9f\x98word",
    ]
    return cases


def random_cases(n, seed=20240521):
    rng = random.Random(seed)
    pool = list("aAbBzZ09 .,'-!?#$") + [
        "\t", "\n", "\u00a0", "\u2028", "\u200b", "\ufeff", "\x01", "\ufffd", "\u3000",
        "\u03a3", "\u03c3", "\u03c2", "\u0391", "\u0386", "\u03aa", "\u0345", "\u1fbc",
        "\u0300", "\u0301", "\u0307", "\u0308", "\u0323", "\u0327", "\u0941", "\u0f71",
        "\u0f72", "\u0f80", "\u093c", "\u05b0", "\u0e48", "\u0e38",
        "\U0001d165", "\U0001d16d", "\U0001d16e", "\u302e", "\u1b44", "\U0001d15f",
        "\u0130", "\u0131", "\u00df", "\u1e9e", "\u01c5", "\u212b", "\u2126", "\u00c5",
        "\u00e9", "\u00c9", "\u0419", "\u0451", "\u0401", "\u00c6", "\u0141",
        "\uac00", "\ud55c", "\u1100", "\u1161", "\u11a8", "\u4e2d", "\uf900", "\U0002f800",
        "\U0001f600", "\U0001f3fd", "\u200d", "\u037e", "\u0387", "\u1fef", "\u2019",
        "\u00ab", "\uff21", "\u2160", "\U00010400", "\U0001e900", "\u13a0", "\uab70",
        "\u0f43", "\u0f73", "\u0b48", "\u0cc0", "\u1026", "\U0001112e",
    ]
    words = ["the", "running", "unaffable", "Crème", "ΟΔΟΣ", "don't", "Straße", "İzmir"]
    out = []
    for _ in range(n):
        k = rng.randint(1, 10)
        parts = [rng.choice(words) if rng.random() < 0.15 else rng.choice(pool)
                 for _ in range(k)]
        raw = "".join(parts).encode("utf-8")
        if rng.random() < 0.03:
            i = rng.randint(0, len(raw))
            raw = raw[:i] + bytes([rng.choice([0x80, 0xC3, 0xE2, 0xF0, 0xFF])]) + raw[i:]
        out.append(raw)
    return out


def read_tsv(path, rows):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    header, body = lines[0].split("\t"), [x for x in lines[1:] if x]
    return header, [x.split("\t") for x in body[:rows]]


def write(path, comment, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for c in comment:
            f.write("# " + c + "\n")
        for line in lines:
            f.write(line + "\n")
    sys.stderr.write("%s: %d lines, %d bytes\n" % (path, len(lines), os.path.getsize(path)))


def ids_str(ids):
    return " ".join(str(i) for i in ids)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, ".."))
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "..", "shared", "data")
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "tests", "text", "data")
    os.makedirs(out_dir, exist_ok=True)
    ref = Reference(os.path.join(shared, "vocab", "bert-base-uncased-vocab.txt"))
    import transformers
    common = ["generated by tests/tools/gen_tokenizer_golden.py with transformers %s, Python %d.%d,"
              % ((transformers.__version__,) + sys.version_info[:2]),
              "Unicode %s, vocab bert-base-uncased-vocab.txt, do_lower_case=True"
              % unicodedata.unidata_version]

    def text_lines(cases):
        return [escape(raw) + "\t" + (ids_str(ref.ids(raw.decode("utf-8", "replace"))) or "-")
                for raw in cases]

    write(os.path.join(out_dir, "tricky.txt"), common + ["ESCAPED_TEXT<TAB>IDS"],
          text_lines(tricky_cases()))
    write(os.path.join(out_dir, "random.txt"), common + ["ESCAPED_TEXT<TAB>IDS"],
          text_lines(random_cases(1500)))

    for name, rel in (("sst2_dev.txt", "sst2/dev.tsv"), ("trec_test.txt", "trec/test.tsv")):
        header, rows = read_tsv(os.path.join(shared, rel), ROWS)
        assert header == ["sentence", "label"]
        write(os.path.join(out_dir, name),
              common + ["first %d rows of %s: IDS of the sentence" % (len(rows), rel)],
              [ids_str(ref.ids(r[0])) for r in rows])

    header, rows = read_tsv(os.path.join(shared, "rte/dev.tsv"), ROWS)
    assert header == ["sentence1", "sentence2", "label"]
    lines = []
    for r in rows:
        ids, types = ref.pair(r[0], r[1])
        assert ids == [101] + ref.ids(r[0]) + [102] + ref.ids(r[1]) + [102]
        lines.append("%d\t%s" % (types.count(0), ids_str(ids)))
    write(os.path.join(out_dir, "rte_dev.txt"),
          common + ["rows of rte/dev.tsv: N_A<TAB>IDS, untruncated"], lines)
    lines = []
    for max_len in TRUNC_LENGTHS:
        for r in rows:
            ids, types = ref.pair(r[0], r[1], max_len)
            lines.append("%d\t%d\t%s" % (max_len, types.count(0), ids_str(ids)))
    write(os.path.join(out_dir, "rte_dev_trunc.txt"),
          common + ["rows of rte/dev.tsv: MAX_LEN<TAB>N_A<TAB>IDS, truncation longest_first"],
          lines)

    lines = []
    for first in range(0, 0x110000, BLOCK):
        h = 0xCBF29CE484222325
        for cp in range(first, first + BLOCK):
            words = ref.basic.tokenize(probe(cp))
            h = fnv1a64((" ".join(words) + "\n").encode("utf-8"), h)
        lines.append("%06x\t%016x" % (first, h))
    write(os.path.join(out_dir, "unicode_blocks.txt"),
          common + ["FIRST_CP<TAB>FNV1A64 of basic tokens of 'A\\u03a3' c '\\u03a3' c 'b'"],
          lines)


if __name__ == "__main__":
    main()
