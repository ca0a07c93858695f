#!/usr/bin/env bash
# surfbench-diff.sh: gate a change to a tool catalog in any CI (docs/ci.md; issue 54).
#
#   surfbench-diff.sh [-o FILE] [-s SUITE] BASE CATALOG [-- MORE surfbench diff ARGUMENTS]
#
# Runs `surfbench diff BASE:CATALOG CATALOG --format markdown --out FILE` in the git repository around CATALOG:
# the catalog as it is at the revision BASE (e.g. origin/main) against the file as it is checked out. The markdown
# is printed and written to FILE (default surfbench-diff.md), ready to post as a pull request's comment, and the
# script exits with the static gate's code: 0 ship, 1 revise, 2 close or error (bad usage too). A catalog that does
# not exist at BASE (added on this branch) has nothing to compare: a note, exit 0.
#
#   -o FILE   where the markdown goes (default: surfbench-diff.md); an error writes its message there too
#   -s SUITE  also check a suite's tasks and retrieval funnel (surfbench diff --suite SUITE)
#   -- ...    passed to surfbench diff as they are, e.g. -- --retriever bm25 --criteria gate.yaml
#
# Environment: SURFBENCH, the command to run (default: surfbench, from PATH).
set -u

usage() {  # on stderr, exit 2; -h: on stdout, exit 0
    local code="${1:-2}"
    [ "$code" = 0 ] || exec >&2
    cat <<'EOF'
usage: surfbench-diff.sh [-o FILE] [-s SUITE] BASE CATALOG [-- MORE surfbench diff ARGUMENTS]

  BASE     a git revision to compare with, e.g. origin/main (a CI checkout needs the history: fetch-depth: 0)
  CATALOG  the catalog file, as checked out (a path in the git repository: tools.json, api/openapi.yaml ...)
  -o FILE  write the markdown here too (default: surfbench-diff.md)
  -s SUITE a suite over the catalog: its tasks' expected calls and retrieval, before and after

Runs `surfbench diff BASE:CATALOG CATALOG --format markdown --out FILE`, prints the markdown and exits with the
gate's code: 0 ship, 1 revise, 2 close or error.
EOF
    exit "$code"
}

fail() {  # one line on stderr and in the markdown file, exit 2
    echo "surfbench-diff.sh: $1" >&2
    printf '## surfbench diff: error\n\n%s\n' "$1" >"$out" 2>/dev/null || true
    exit 2
}

out="surfbench-diff.md"
suite=""
while getopts ":o:s:h" opt; do
    case "$opt" in
        o) out="$OPTARG" ;;
        s) suite="$OPTARG" ;;
        h) usage 0 ;;
        :) echo "surfbench-diff.sh: -$OPTARG needs a value" >&2; usage ;;
        *) echo "surfbench-diff.sh: unknown option -$OPTARG" >&2; usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "surfbench-diff.sh: give BASE and CATALOG" >&2; usage; }
base="$1"
catalog="$2"
shift 2
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || { echo "surfbench-diff.sh: unexpected argument '$1' (surfbench diff options go after --)" >&2; usage; }
    shift
fi
[ -n "$base" ] && [ -n "$catalog" ] && [ -n "$out" ] || usage
rm -f -- "$out"  # never post a stale comment

surfbench="${SURFBENCH:-surfbench}"
command -v "$surfbench" >/dev/null 2>&1 || fail "'$surfbench' is not on PATH (install surfbench, or set SURFBENCH)"
top="$(git rev-parse --show-toplevel 2>/dev/null)" || fail "$(pwd) is not inside a git repository"
[ -f "$catalog" ] || fail "$catalog: no such file"
git rev-parse --verify --quiet "$base^{commit}" >/dev/null ||
    fail "$base is not a revision of this repository (fetch it, with history: e.g. fetch-depth: 0 on GitHub Actions)"

# The catalog at BASE: `git show REV:path` takes the path from the repository's root.
dir="$(cd -P -- "$(dirname -- "$catalog")" && pwd -P)" || fail "$catalog: cannot read its folder"
path="$dir/$(basename -- "$catalog")"
path="${path#"$top"/}"
case "$path" in /*) fail "$catalog is outside the git repository $top" ;; esac
if ! git cat-file -e "$base:$path" 2>/dev/null; then
    note="$path does not exist at $base (a new catalog): nothing to compare, nothing to gate."
    echo "$note"
    printf '## surfbench diff\n\n%s\n' "$note" >"$out"
    exit 0
fi

args=(diff "$base:$path" "$catalog" --format markdown --out "$out")
[ -z "$suite" ] || args+=(--suite "$suite")
errors="$(mktemp)"
trap 'rm -f -- "$errors"' EXIT
"$surfbench" "${args[@]}" "$@" 2>"$errors"
code=$?
cat "$errors" >&2
case "$code" in
    0) verdict="ship" ;;
    1) verdict="revise" ;;
    *) code=2; verdict="close or error" ;;
esac
if [ ! -s "$out" ]; then  # an error before any report: the comment says why
    printf '## surfbench diff: error\n\n```text\n%s\n```\n' "$(tail -n 20 "$errors")" >"$out" 2>/dev/null || true
fi
echo "surfbench-diff.sh: exit $code ($verdict); markdown in $out" >&2
exit "$code"
