/*
 * unicode_tables.h - the Unicode data the WordPiece tokenizer needs, generated
 * into unicode_tables.c by scripts/gen_unicode_tables.py from Python's
 * unicodedata (the module Hugging Face's BertTokenizer itself uses).
 *
 * All tables cover every plane and are sorted by code point, for binary search.
 */
#ifndef TUNE_MODELS_TEXT_UNICODE_TABLES_H
#define TUNE_MODELS_TEXT_UNICODE_TABLES_H

#include <stddef.h>
#include <stdint.h>

/* Character classes of the basic tokenizer (3 bits). */
enum tunep_uni_class {
    TUNEP_UNI_OTHER = 0,
    TUNEP_UNI_DROP = 1,  /* removed by cleaning: NUL, U+FFFD, category C* but TAB LF CR */
    TUNEP_UNI_SPACE = 2, /* cleaned to ' ': TAB LF CR and category Zs */
    TUNEP_UNI_SPLIT = 3, /* kept by cleaning but split on by str.split(): U+2028, U+2029 */
    TUNEP_UNI_PUNCT = 4, /* HF _is_punctuation: ASCII 33-47 58-64 91-96 123-126, P* */
    TUNEP_UNI_MN0 = 5,   /* category Mn with canonical combining class 0 */
    TUNEP_UNI_MN = 6,    /* category Mn with a non-zero canonical combining class */
};

/* What Python's final-sigma rule sees (2 bits). */
enum tunep_uni_sigma {
    TUNEP_UNI_SIGMA_OTHER = 0,
    TUNEP_UNI_SIGMA_IGNORABLE = 1, /* Case_Ignorable: skipped when looking for context */
    TUNEP_UNI_SIGMA_CASED = 2,     /* Cased and not Case_Ignorable */
};

/* first + k * stride (0 <= k < count) lowers to itself + delta */
struct tunep_uni_lower_run {
    uint32_t first;
    uint16_t count;
    uint8_t stride;
    int32_t delta;
};

/* The Unicode version of the data, e.g. "14.0.0". */
extern const char tunep_uni_version[];

/* (first code point << 3) | enum tunep_uni_class, one entry per run. */
extern const uint32_t tunep_uni_class_runs[];
extern const size_t tunep_uni_class_runs_count;

/* (first code point << 2) | enum tunep_uni_sigma, one entry per run. */
extern const uint32_t tunep_uni_sigma_runs[];
extern const size_t tunep_uni_sigma_runs_count;

/* One-to-one lower-case mappings (U+0130 and final sigma are handled by the caller). */
extern const struct tunep_uni_lower_run tunep_uni_lower_runs[];
extern const size_t tunep_uni_lower_runs_count;

/*
 * Accent stripping (NFD, then drop category Mn) of code points that are not
 * Mn, where the result differs from the code point: keys[i] maps to vals[i],
 * either one code point or, with bit 31 set, pool[(v >> 8) & 0x7fffff] and
 * the (v & 0xff) code points after it. In the pool, 0 marks a dropped Mn of
 * combining class 0 (it ends a canonical-reordering run). Hangul syllables
 * are not listed: they decompose arithmetically.
 */
extern const uint32_t tunep_uni_strip_keys[];
extern const size_t tunep_uni_strip_keys_count;
extern const uint32_t tunep_uni_strip_vals[];
extern const size_t tunep_uni_strip_vals_count;
extern const uint32_t tunep_uni_strip_pool[];
extern const size_t tunep_uni_strip_pool_count;

/* (code point << 8) | combining class, for code points accent stripping keeps. */
extern const uint32_t tunep_uni_kept_ccc[];
extern const size_t tunep_uni_kept_ccc_count;

#endif /* TUNE_MODELS_TEXT_UNICODE_TABLES_H */
