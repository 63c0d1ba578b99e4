#!/usr/bin/env python3
"""Rewrites a .cu file for the CUDA emulation: every launch
`kernel<<<config>>>(args)` becomes `tunep_emu_launch(__FILE__, __LINE__,
"kernel", tunep_emu_cfg(config), kernel)(args)`, on the same line, and a
#line directive keeps the original file name, so compiler messages and the
harness's reports point into the source.

usage: emu_launch.py INPUT OUTPUT
"""
import re
import sys

LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*<<<(.*?)>>>")


def rewrite(m):
    name, config = m.group(1), m.group(2)
    return 'tunep_emu_launch(__FILE__, __LINE__, "%s", tunep_emu_cfg(%s), %s)' % (name, config, name)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    out, n = LAUNCH.subn(rewrite, text)
    if "<<<" in out:
        sys.exit("%s: a launch that emu_launch.py cannot rewrite is left" % src)
    with open(dst, "w", encoding="utf-8") as f:
        f.write('#line 1 "%s"\n' % src)
        f.write(out)


if __name__ == "__main__":
    main()
