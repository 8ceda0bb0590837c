#!/usr/bin/env python3
"""Runs a command with the arguments help2man gives (--help), rewriting a usage that spans lines
into the form help2man reads: a line that names the command again becomes an "  or:  " line
(another synopsis), any other line indented under the usage joins the line before it."""
import subprocess
import sys

command, arguments = sys.argv[1], sys.argv[2:]
lines = subprocess.run([command, *arguments], capture_output=True, text=True,
                       check=True).stdout.splitlines()
if lines and lines[0].startswith("Usage: "):
    name = lines[0].split()[1]
    usage = [lines[0]]
    rest = lines[1:]
    while rest and rest[0].startswith(" " * len("Usage: ")):
        line = rest.pop(0).strip()
        if line.startswith(name + " "):
            usage.append("  or:  " + line)
        else:
            usage[-1] += " " + line
    lines = usage + rest
print("\n".join(lines))
