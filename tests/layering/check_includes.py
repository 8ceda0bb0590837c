#!/usr/bin/env python3
"""Checks that every module includes only the modules it may (modules.json, beside this file).

  check_includes.py SOURCE_DIR

A module is a top-level folder of the repository. Each C++/CUDA source's quoted includes whose
first path component names a module must name the file's own module or one it may include;
tests of a module may also include tests/. Every top-level folder holding sources must be in the
graph, so that a new module cannot escape it. Build trees (folders with a CMakeCache.txt) and
hidden folders are skipped. Prints each violation as PATH:LINE and exits 1 if there is any.
"""
import json
import os
import re
import sys

SOURCE_SUFFIXES = (".cc", ".h", ".cu", ".cuh", ".cpp", ".def", ".inc")
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"/]+)/')


def is_test(relative):
    parts = relative.split("/")
    return parts[-1].split(".")[0].endswith("_test") or "tests" in parts[1:-1]


def sources(root):
    for directory, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not f.startswith(".") and
                      not os.path.exists(os.path.join(directory, f, "CMakeCache.txt"))]
        for name in files:
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(directory, name), root)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "modules.json")) as f:
        graph = json.load(f)
    allowed = {module: set(deps) | {module} for module, deps in graph["modules"].items()}
    problems = []
    checked = 0
    for relative in sorted(sources(root)):
        if "/" not in relative:
            continue
        module = relative.split("/")[0]
        if module not in allowed:
            if module not in graph["without_sources"]:
                problems.append(f"{relative}: the folder {module}/ is not a module of modules.json")
            continue
        may = allowed[module] | ({"tests"} if is_test(relative) else set())
        checked += 1
        with open(os.path.join(root, relative), errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if match and match.group(1) in allowed and match.group(1) not in may:
                    problems.append(f"{relative}:{number}: {module}/ may not include "
                                    f"{match.group(1)}/ ({line.strip()})")
    for problem in problems:
        print(problem)
    print(f"{checked} sources of {len(allowed)} modules checked, {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
