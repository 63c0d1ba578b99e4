#!/usr/bin/env bash
# tune.h opens with examples/quickstart.c: the program in its first comment,
# with // for the example's /* */ comments, is the file from its first #include.
# Usage: test_header_example.sh SOURCE_ROOT
set -eu
src=$1
header=$(sed -n '/^ \*     #include <math.h>$/,/^ \* Conventions:$/p' "$src/tune/tune.h.in" |
    sed -e '$d' | sed -e '$d' -e 's/^ \*     //' -e 's/^ \*$//' -e 's|// \(.*\)$|/* \1 */|')
example=$(sed -n '/^#include <math.h>$/,$p' "$src/examples/quickstart.c")
if [ "$header" != "$example" ]; then
    diff <(printf '%s\n' "$header") <(printf '%s\n' "$example") || true
    echo "tune.h's opening example differs from examples/quickstart.c"
    exit 1
fi
echo "tune.h's example is examples/quickstart.c"
