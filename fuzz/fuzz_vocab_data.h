/*
 * fuzz_vocab_data.h - a small WordPiece vocabulary built into the TSV and
 * tokenizer harnesses, so that they need no file: the four required special
 * tokens first (ids 0-3), [MASK], whole words, "##" continuations, digits,
 * punctuation, accented and non-Latin words and single CJK ideographs, so
 * that every stage of tokenizer.c (cleaning, CJK splitting, lower-casing,
 * accent stripping, punctuation splitting, greedy longest match, [UNK]) has
 * something to match. Included once per harness (a static array).
 */
#ifndef TUNE_FUZZ_VOCAB_DATA_H
#define TUNE_FUZZ_VOCAB_DATA_H

static const char fuzz_vocab[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
    "the\na\nan\nmovie\nfilm\nwas\nis\nnot\nvery\ngood\nbad\ngreat\nawful\nand\nbut\nit\n"
    "i\nyou\nlove\nhate\nplot\nacting\nfun\nboring\nstory\nlong\nshort\nun\nre\nplay\n"
    "cafe\nnaive\ncreme\nbrulee\nresume\nstrasse\nistanbul\nσ\nσοφια\nοδος\nпривет\nмир\n"
    "##s\n##ly\n##ing\n##ed\n##er\n##est\n##able\n##n\n##t\n##a\n##e\n##i\n##o\n##x\n"
    "##1\n##2\n##0\n0\n1\n2\n3\n10\n100\n2024\n"
    "!\n\"\n#\n$\n%\n&\n'\n(\n)\n*\n+\n,\n-\n.\n/\n:\n;\n<\n=\n>\n?\n@\n[\n\\\n]\n^\n_\n"
    "`\n{\n|\n}\n~\n¿\n¡\n«\n»\n—\n…\n"
    "中\n国\n人\n日\n本\n語\n한\n국\nｔｅｓｔ\nx\ny\nz\ne\no\nn\nt\ns\n"
    "CASED\nCafé\nMovie\n##É\n";

#endif /* TUNE_FUZZ_VOCAB_DATA_H */
