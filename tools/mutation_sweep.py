#!/usr/bin/env python3
"""Mutation sweep: does a test catch a one-token bug in the code it covers?

Plants one small defect at a time in one source file (a comparison turned
around or made inclusive, `&&` <-> `||`, `+` <-> `-`, `std::max` <->
`std::min`, a `!` dropped, two adjacent call arguments swapped; never inside
a string literal or a comment), rebuilds a target and runs a test command.
A mutant the test does not fail "survived": either the test misses that bug
or the mutant cannot change any result (read it to tell which). The file is
restored after every run, also when the sweep is interrupted.

Usage (from the repository root, on a build tree that is up to date):
  tools/mutation_sweep.py precision/harness/metrics.cpp \\
      --build "cmake --build build -j2 --target precision_harness_test" \\
      --test build/bin/precision_harness_test [--lines 12-105] [--swap-arguments]

Each mutant costs one incremental build and one test run: pick a test binary
that runs in seconds. Not part of ctest (it edits the source tree while it
runs); see README "Testing".
"""
import argparse
import re
import signal
import subprocess
import sys

OPERATORS = [
    (r" > ", " >= "), (r" >= ", " > "), (r" < ", " <= "), (r" <= ", " < "),
    (r" == ", " != "), (r" != ", " == "), (r" \+ ", " - "), (r" - ", " + "),
    (r" \* ", " / "), (r"\|\|", "&&"), (r"&&", "||"),
    (r"\bstd::max\b", "std::min"), (r"\bstd::min\b", "std::max"), (r"!std::", "std::"),
]


def code_mask(line):
    """Per character of `line`: True where it is code, False inside a string
    or character literal or a trailing // comment (mutating text is noise)."""
    mask, quote, escaped, k = [], None, False, 0
    while k < len(line):
        ch = line[k]
        if quote:
            mask.append(False)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif line.startswith("//", k):
            return mask + [False] * (len(line) - k)
        elif ch in "\"'" and not (ch == "'" and k > 0 and line[k - 1].isalnum()):
            quote = ch  # (a ' between digits is a C++14 digit separator)
            mask.append(False)
        else:
            mask.append(True)
        k += 1
    return mask


def split_arguments(text):
    """Top-level comma-separated pieces of `text` (parentheses respected)."""
    pieces, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += ch
    pieces.append(current)
    return pieces


def call_argument_swaps(line):
    """Mutants of `line` with two adjacent arguments of one call swapped."""
    out, code = [], code_mask(line)
    for open_at, ch in enumerate(line):
        if ch != "(" or not code[open_at] or open_at == 0 or not (line[open_at - 1].isalnum() or line[open_at - 1] == "_"):
            continue
        depth, close_at = 0, -1
        for k in range(open_at, len(line)):
            depth += line[k] == "("
            depth -= line[k] == ")"
            if depth == 0:
                close_at = k
                break
        if close_at < 0:
            continue
        args = split_arguments(line[open_at + 1:close_at])
        for i in range(len(args) - 1):
            a, b = args[i].strip(), args[i + 1].strip()
            if not a or not b or a == b:
                continue
            swapped = [x.strip() for x in args]
            swapped[i], swapped[i + 1] = b, a
            out.append(line[:open_at + 1] + ", ".join(swapped) + line[close_at:])
    return out


def mutants(lines, first, last, swap_arguments):
    for index in range(first - 1, min(last, len(lines))):
        line = lines[index]
        stripped = line.strip()
        if not stripped or stripped.startswith(("//", "#", "*", "/*")):
            continue
        code = code_mask(line)
        for pattern, replacement in OPERATORS:
            for m in re.finditer(pattern, line):
                if not code[m.start()]:
                    continue
                yield index, line[:m.start()] + replacement + line[m.end():]
        if swap_arguments:
            for mutated in call_argument_swaps(line):
                yield index, mutated


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("--build", required=True, help="shell command that rebuilds the test")
    parser.add_argument("--test", required=True, help="shell command: exit 0 = mutant survived")
    parser.add_argument("--lines", default="1-1000000", help="first-last line to mutate")
    parser.add_argument("--swap-arguments", action="store_true",
                        help="also swap adjacent arguments of calls")
    parser.add_argument("--timeout", type=float, default=300, help="a test run longer: killed")
    args = parser.parse_args()
    first, last = (int(x) for x in args.lines.split("-"))
    with open(args.source) as f:
        original = f.read()
    lines = original.split("\n")
    planned = list(mutants(lines, first, last, args.swap_arguments))
    print(f"{len(planned)} mutants of {args.source}", flush=True)

    def restore(*_):
        with open(args.source, "w") as f:
            f.write(original)
        sys.exit(130)

    signal.signal(signal.SIGINT, restore)
    signal.signal(signal.SIGTERM, restore)
    survived, not_built = [], 0
    try:
        for index, mutated in planned:
            text = lines[:index] + [mutated] + lines[index + 1:]
            with open(args.source, "w") as f:
                f.write("\n".join(text))
            what = f"{index + 1}: {lines[index].strip()}  =>  {mutated.strip()}"
            if subprocess.run(args.build, shell=True, capture_output=True).returncode != 0:
                not_built += 1
                print("not built (the compiler caught it)", what, flush=True)
                continue
            try:
                caught = subprocess.run(args.test, shell=True, capture_output=True,
                                        timeout=args.timeout).returncode != 0
            except subprocess.TimeoutExpired:
                caught = True
            print("caught  " if caught else "SURVIVED", what, flush=True)
            if not caught:
                survived.append(what)
    finally:
        with open(args.source, "w") as f:
            f.write(original)
        subprocess.run(args.build, shell=True, capture_output=True)
    print(f"# {len(planned)} mutants: {len(planned) - len(survived) - not_built} caught by the test, "
          f"{not_built} by the compiler, {len(survived)} survived")
    for what in survived:
        print("  survived", what)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
