#!/usr/bin/env python3
"""Every relative link in the repository's Markdown files resolves to a file or folder inside
the repository, and no file of the repository refers to the design notes kept in a folder
beside a developer's checkout (`shared/` one level up), which a clone does not have.

  check_links.py REPOSITORY_ROOT
Prints each broken link as FILE:LINE: message and exits 1 if there is any.
"""
import os
import re
import sys

# [text](target) and [text]: target, skipping images' and links' titles.
INLINE = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
# A path out of the repository that the project's own files must not name.
OUTSIDE = re.compile(r"\.\./shared/|\.\./\.\./shared/")
SKIPPED_DIRS = {".git", "node_modules"}
TEXT_SUFFIXES = (".md", ".h", ".cc", ".cu", ".cuh", ".py", ".sh", ".txt", ".cmake", ".toml",
                 ".def", ".map", ".c")


def repository_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs
                   if d not in SKIPPED_DIRS and not d.startswith((".", "build"))]
        for name in files:
            yield os.path.join(folder, name)


def check_markdown(root, path, text, problems):
    for pattern in (INLINE, REFERENCE):
        for match in pattern.finditer(text):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL (http:, mailto:) or an anchor in the same file
            line = text.count("\n", 0, match.start()) + 1
            resolved = os.path.normpath(os.path.join(os.path.dirname(path),
                                                     target.split("#", 1)[0]))
            where = f"{os.path.relpath(path, root)}:{line}"
            if os.path.relpath(resolved, root).startswith(".."):
                problems.append(f"{where}: {target} leaves the repository")
            elif not os.path.exists(resolved):
                problems.append(f"{where}: {target} does not exist")


def main():
    root = os.path.abspath(sys.argv[1])
    problems = []
    checked = 0
    for path in repository_files(root):
        if not path.endswith(TEXT_SUFFIXES) and os.path.basename(path) != "CMakeLists.txt":
            continue
        text = open(path, encoding="utf-8", errors="replace").read()
        for match in OUTSIDE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            problems.append(f"{os.path.relpath(path, root)}:{line}: refers to {match.group(0)}, "
                            "outside the repository")
        if path.endswith(".md"):
            check_markdown(root, path, text, problems)
            checked += 1
    for problem in problems:
        print(problem)
    print(f"{checked} Markdown files checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
