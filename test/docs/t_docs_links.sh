#!/usr/bin/env bash
# px-test: source-only (reads the source tree, never the build under test)
# px-test: background (compiles and reads files; nothing waits on a clock)
# The documentation's links and installation:
# - every relative link of README.md and docs/**/*.md ([text](page.md),
#   [text](page.md#section), [text](#section)) names a file that exists and,
#   with a #section, a heading of that page (GitHub's anchors: lower case,
#   punctuation dropped, spaces as hyphens); pages moved or sections moved to
#   docs/measurements/ leave no link behind;
# - every page under docs/ (docs/measurements/ too) is installed: named in
#   docs/Makefile.inc.
. "$PX_SRC/test/lib/tap.sh"
cd "$PX_SRC" || exit 1

out=$(python3 - <<'PY'
import os, re, sys
def anchors(path):
    seen, out, fence = {}, set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        m = re.match(r"#+\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        a = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else "%s-%d" % (a, n))
    return out
pages = ["README.md"] + sorted(os.path.join(d, f) for d, _, fs in os.walk("docs") for f in fs if f.endswith(".md"))
nlinks, bad = 0, []
for p in pages:
    fence = False
    for no, line in enumerate(open(p, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for t in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", t):
                continue
            nlinks += 1
            f, _, a = t.partition("#")
            target = os.path.normpath(os.path.join(os.path.dirname(p), f)) if f else p
            if not os.path.exists(target):
                bad.append("%s:%d: %s: no file %s" % (p, no, t, target))
            elif a and target.endswith(".md") and a not in anchors(target):
                bad.append("%s:%d: %s: %s has no section #%s" % (p, no, t, target, a))
print("links %d" % nlinks)
for b in bad:
    print("bad " + b)
PY
)
n=$(sed -n 's/^links //p' <<<"$out")
bad=$(sed -n 's/^bad //p' <<<"$out")
check "README.md and docs/ have relative links to check (${n:-none})" test "${n:-0}" -gt 20
check "every relative link names an existing page and section" test -z "$bad"
[ -z "$bad" ] || sed 's/^/#   /' <<<"$bad"

missing=""
for f in $(find docs -name '*.md' | sort); do
    grep -q "$f\b" docs/Makefile.inc || missing="$missing $f"
done
check "every page under docs/ is installed by docs/Makefile.inc (missing:${missing:- none})" \
    test -z "$missing"
tap_done
