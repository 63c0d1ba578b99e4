#!/usr/bin/env python3
"""Generate models/text/unicode_tables.c for the WordPiece tokenizer.

The tokenizer (models/text/tokenizer.c) must reproduce Hugging Face's
BertTokenizer, whose basic tokenizer is written in Python on top of
`unicodedata` and `str.lower()`. So the tables are taken from the same
source: this script's Python `unicodedata` (Unicode version recorded in the
output). Run it with the Python that generated tests/text/data/*, then
regenerate the goldens when the Unicode version changes:

    python3 scripts/gen_unicode_tables.py > models/text/unicode_tables.c

Only what the tokenizer needs is stored, for all planes (not just the BMP):

* class runs: per code point one of OTHER, DROP (HF `_clean_text` removes it:
  NUL, U+FFFD, categories C*, except TAB/LF/CR), SPACE (HF `_is_whitespace`),
  SPLIT (still whitespace for Python's `str.split()` after cleaning: Zl, Zp),
  PUNCT (HF `_is_punctuation`), MN0 / MN (category Mn with zero / non-zero
  canonical combining class; dropped by accent stripping, MN0 also ends a
  canonical-reordering run);
* lower-case runs: simple one-to-one `str.lower()` mappings as (first, count,
  stride, delta); the only one-to-many mapping (U+0130) and the final sigma
  rule are handled in C, and asserted here to be the only special cases;
* sigma context runs: Case_Ignorable / Cased as seen by Python's final-sigma
  rule (probed through `str.lower()` itself);
* strip table: for each code point that is not Mn, the result of NFD followed
  by dropping Mn, when it differs from the code point itself; a 0 in a
  sequence marks where a dropped Mn with combining class 0 stood (it ends a
  reordering run); Hangul syllables are decomposed arithmetically in C;
* the canonical combining classes of the few code points that are kept by
  accent stripping but have a non-zero combining class (spacing marks such
  as U+1D165), which canonical reordering may move.
"""

import sys
import unicodedata as ud

N = 0x110000
SBASE, SCOUNT = 0xAC00, 11172

C_OTHER, C_DROP, C_SPACE, C_SPLIT, C_PUNCT, C_MN0, C_MN = range(7)
CLASS_NAMES = ["OTHER", "DROP", "SPACE", "SPLIT", "PUNCT", "MN0", "MN"]
S_OTHER, S_IGNORABLE, S_CASED = range(3)


def char_class(cp):
    ch = chr(cp)
    cat = ud.category(ch)
    if ch in " \t\n\r" or cat == "Zs":
        return C_SPACE
    if cp == 0 or cp == 0xFFFD or cat.startswith("C"):
        return C_DROP
    if ch.isspace():
        return C_SPLIT
    if (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
            or cat.startswith("P")):
        return C_PUNCT
    if cat == "Mn":
        return C_MN0 if ud.combining(ch) == 0 else C_MN
    return C_OTHER


def is_cjk(cp):
    """The ranges of HF's _is_chinese_char."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def sigma_class(cp):
    """What Python's final-sigma rule sees in cp (Objects/unicodeobject.c)."""
    x = chr(cp)
    alone = ("A\u03a3" + x).lower()[1]
    before_cased = ("A\u03a3" + x + "B").lower()[1]
    if alone == "\u03c2" and before_cased == "\u03c3":
        return S_IGNORABLE
    if alone == "\u03c3" and before_cased == "\u03c3":
        return S_CASED
    assert alone == "\u03c2" and before_cased == "\u03c2", hex(cp)
    return S_OTHER


def strip_seq(cp):
    """NFD(cp) without Mn; 0 where an Mn of combining class 0 was dropped."""
    out = []
    for ch in ud.normalize("NFD", chr(cp)):
        if ud.category(ch) == "Mn":
            if ud.combining(ch) == 0:
                out.append(0)
        else:
            out.append(ord(ch))
    return out


def runs(values):
    """[(first code point, value)] wherever the value changes."""
    out, prev = [], None
    for cp, v in enumerate(values):
        if v != prev:
            out.append((cp, v))
            prev = v
    return out


def emit_u32(name, vals, per_line=8, fmt="0x%08x"):
    lines = ["const uint32_t %s[] = {" % name]
    for i in range(0, len(vals), per_line):
        lines.append("    " + ", ".join(fmt % v for v in vals[i:i + per_line]) + ",")
    lines.append("};")
    lines.append("const size_t %s_count =" % name)
    lines.append("    sizeof %s / sizeof %s[0];" % (name, name))
    return lines


def main():
    classes = [C_DROP if 0xD800 <= cp <= 0xDFFF else char_class(cp) for cp in range(N)]

    # The assumptions tokenizer.c relies on.
    assert [cp for cp in range(N) if classes[cp] == C_SPLIT] == [0x2028, 0x2029]
    lower_multi = [cp for cp in range(N) if len(chr(cp).lower()) != 1]
    assert lower_multi == [0x130] and chr(0x130).lower() == "i\u0307", lower_multi
    for cp in range(N):
        if classes[cp] in (C_DROP, C_SPACE, C_SPLIT):
            continue
        lo = chr(cp).lower()
        for ch in lo + ud.normalize("NFD", lo):
            # lower-casing and decomposing never create what cleaning removes,
            # nor whitespace, nor CJK ideographs (which HF spaces out earlier)
            assert char_class(ord(ch)) not in (C_DROP, C_SPACE, C_SPLIT), hex(cp)
            assert is_cjk(ord(ch)) == is_cjk(cp), hex(cp)
    for cp in range(SBASE, SBASE + SCOUNT):
        s = strip_seq(cp)
        assert len(s) in (2, 3) and all(0x1100 <= x <= 0x11FF for x in s)

    class_runs = runs(classes)

    # U+03A3 itself is Cased; code points that cleaning drops never reach lower()
    sig = [S_CASED if cp == 0x3A3 else S_OTHER if classes[cp] == C_DROP else sigma_class(cp)
           for cp in range(N)]
    sigma_runs = runs(sig)

    # one-to-one lower-case mappings as runs of constant delta and stride
    lower = []
    for cp in range(N):
        lo = chr(cp).lower()
        if len(lo) == 1 and ord(lo) != cp:
            d = ord(lo) - cp
            if lower:
                first, count, stride, delta = lower[-1]
                last = first + (count - 1) * max(stride, 1)
                if delta == d and ((count == 1 and cp - last in (1, 2)) or
                                   (count > 1 and cp - last == stride)):
                    lower[-1] = (first, count + 1, cp - last, delta)
                    continue
            lower.append((cp, 1, 1, d))
    assert all(c < 65536 for _, c, _, _ in lower)

    # strip-accent table (Hangul syllables are done in C)
    keys, vals, pool = [], [], []
    for cp in range(N):
        if classes[cp] in (C_DROP, C_MN0, C_MN) or SBASE <= cp < SBASE + SCOUNT:
            continue
        s = strip_seq(cp)
        if s == [cp]:
            continue
        assert s, hex(cp)
        keys.append(cp)
        if len(s) == 1 and s[0] != 0:
            vals.append(s[0])
        else:
            assert len(s) < 256
            vals.append(0x80000000 | (len(pool) << 8) | len(s))
            pool.extend(s)

    # kept code points with a non-zero combining class
    kept_ccc = [(cp, ud.combining(chr(cp))) for cp in range(N)
                if ud.combining(chr(cp)) and classes[cp] not in (C_MN0, C_MN)]
    for _, ccc in kept_ccc:
        assert 0 < ccc < 256

    out = []
    out.append("/*")
    out.append(" * unicode_tables.c - Unicode data for the WordPiece tokenizer.")
    out.append(" *")
    out.append(" * GENERATED by scripts/gen_unicode_tables.py from Python %d.%d's unicodedata"
               % sys.version_info[:2])
    out.append(" * (Unicode %s); do not edit. The layout of each table is described in"
               % ud.unidata_version)
    out.append(" * unicode_tables.h and in the generator's docstring.")
    out.append(" */")
    out.append('#include "unicode_tables.h"')
    out.append("")
    out.append("/* clang-format off */")
    out.append("")
    out.append('const char tunep_uni_version[] = "%s";' % ud.unidata_version)
    out.append("")
    out.append("/* (first code point << 3) | class; %d runs */" % len(class_runs))
    out += emit_u32("tunep_uni_class_runs", [(cp << 3) | v for cp, v in class_runs])
    out.append("")
    out.append("/* (first code point << 2) | sigma class; %d runs */" % len(sigma_runs))
    out += emit_u32("tunep_uni_sigma_runs", [(cp << 2) | v for cp, v in sigma_runs])
    out.append("")
    out.append("/* one-to-one lower-case mappings, sorted by first code point */")
    out.append("const struct tunep_uni_lower_run tunep_uni_lower_runs[] = {")
    for i in range(0, len(lower), 3):
        out.append("    " + " ".join("{0x%05x, %d, %d, %d}," % r for r in lower[i:i + 3]))
    out.append("};")
    out.append("const size_t tunep_uni_lower_runs_count =")
    out.append("    sizeof tunep_uni_lower_runs / sizeof tunep_uni_lower_runs[0];")
    out.append("")
    out.append("/* code points whose NFD without Mn differs from themselves, sorted */")
    out += emit_u32("tunep_uni_strip_keys", keys, fmt="0x%05x", per_line=10)
    out.append("")
    out.append("/* a code point, or 0x80000000 | pool offset << 8 | length */")
    out += emit_u32("tunep_uni_strip_vals", vals)
    out.append("")
    out.append("/* multi-code-point results; 0 marks a dropped Mn of combining class 0 */")
    out += emit_u32("tunep_uni_strip_pool", pool, fmt="0x%05x", per_line=10)
    out.append("")
    out.append("/* (code point << 8) | canonical combining class, of kept non-starters */")
    out += emit_u32("tunep_uni_kept_ccc", [(cp << 8) | c for cp, c in kept_ccc])
    out.append("")
    out.append("/* clang-format on */")
    sys.stdout.write("\n".join(out) + "\n")

    sys.stderr.write("class runs %d, sigma runs %d, lower runs %d, strip %d (+%d pool), ccc %d\n"
                     % (len(class_runs), len(sigma_runs), len(lower), len(keys), len(pool),
                        len(kept_ccc)))


if __name__ == "__main__":
    main()
