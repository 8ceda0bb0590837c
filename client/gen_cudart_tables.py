#!/usr/bin/env python3
"""Writes the X-macro tables the client shim is built from, out of the installed CUDA toolkit.

  gen_cudart_tables.py errors <driver_types.h> <out.def>
      TALLY_CUDA_ERROR(cudaErrorX, "description") for every cudaError_t, the description being
      the first sentence of NVIDIA's doc comment above the enumerator.
  gen_cudart_tables.py exports <nm> <library> <include dir> <out.def>
      TALLY_LIBRARY_EXPORT(name) for every function the library exports (libcudart.so.N,
      libcuda.so's stub for the driver API, libcublas.so.N, libcublasLt.so.N, libcudnn.so.N) that
      returns an error code (cudaError_t, CUresult, cublasStatus_t, cudnnStatus_t, as its
      declaration in the toolkit's headers says), so that the shim can answer each one
      (unsupported ones with the library's NOT_SUPPORTED code) instead of
      leaving the application with an unresolved symbol; TALLY_LIBRARY_VALUE_EXPORT(name) for
      one that returns anything else (a struct, a pointer, a string), which no error-code stub
      may stand in for: the shim must implement it (client/abi_test.cc checks). Functions the
      headers do not declare (the runtime's undocumented internals) count as error-code ones.
  gen_cudart_tables.py cudnn-statuses <cudnn_graph.h> <out.def>
      TALLY_CUDNN_STATUS(name) for every cudnnStatus_t that is not a deprecated alias.
"""
import glob
import os
import re
import subprocess
import sys


def errors(header: str) -> list:
    text = open(header, encoding="utf-8").read()
    body = re.search(r"enum __device_builtin__ cudaError\s*\{(.*?)\};", text, re.S).group(1)
    lines = ["#ifndef TALLY_CUDA_ERROR", "#define TALLY_CUDA_ERROR(name, description)", "#endif"]
    for comment, name in re.findall(r"/\*\*(.*?)\*/\s*(cuda\w+)\s*=\s*\d+", body, re.S):
        words = " ".join(line.strip().lstrip("*").strip() for line in comment.splitlines())
        words = re.sub(r"\s+", " ", words.replace("::", "").replace("\\deprecated", "Deprecated:"))
        sentence = re.split(r"(?<=\.)\s", words.strip(), maxsplit=1)[0].rstrip(".")
        sentence = sentence.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'TALLY_CUDA_ERROR({name}, "{sentence}")')
    lines.append("#undef TALLY_CUDA_ERROR")
    return lines


# The words of a declaration before its name that are not its return type.
QUALIFIERS = {"extern", '"C"', "static", "inline", "__host__", "__device__", "__cudart_builtin__",
              "CUDARTAPI", "CUDAAPI", "__CUDA_DEPRECATED", "CUDART_DEPRECATED", "__dv",
              "CUBLASAPI", "CUBLASWINAPI", "CUDNNWINAPI", "CUDNN_DEPRECATED"}
# The status types of the libraries whose exports get stubs: the runtime's and the driver's
# error codes, cuBLAS's (and cuBLASLt's; cublasStatus in the legacy API) and cuDNN's statuses.
ERROR_CODE_TYPES = r"\b(cudaError_t|CUresult|cublasStatus_t|cublasStatus|cudnnStatus_t)\b"


def return_types(include: str) -> dict:
    """name -> the return types of its declarations in the toolkit's top-level and crt/ headers
    (comments and preprocessor lines skipped; C++ overloads and templates included)."""
    found = {}
    headers = sorted(glob.glob(os.path.join(include, "*.h")) +
                     glob.glob(os.path.join(include, "crt", "*.h")))
    for header in headers:
        text = open(header, encoding="utf-8", errors="replace").read()
        text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
        text = re.sub(r"^\s*#.*?(?<!\\)$", " ", text, flags=re.M | re.S)
        # A declaration: the words between the previous ';', '{' or '}' and the first name
        # followed by '('.
        for statement in re.split(r"[;{}]", text):
            match = re.match(r"([^()]*?)\b(\w+)\s*\(", statement)
            if match is None:
                continue
            words = [w for w in match.group(1).split() if w not in QUALIFIERS]
            # A call in an inline function's body (`return f(`, `x = f(`) declares nothing.
            if words and words[0] not in ("return", "else") and "=" not in match.group(1):
                found.setdefault(match.group(2), set()).add(" ".join(words))
    return found


def returns_error_code(name: str, types: dict) -> bool:
    """Whether a declaration of `name` (or of the function its _ptsz/_ptds form stands for)
    returns cudaError_t or CUresult; true too for a name the headers do not declare."""
    base = re.sub(r"_(ptsz|ptds)$", "", name)
    kinds = types.get(name) or types.get(base)
    return not kinds or any(re.search(ERROR_CODE_TYPES, k) for k in kinds)


def exports(nm: str, library: str, include: str) -> list:
    listing = subprocess.run([nm, "-D", "--defined-only", library], check=True,
                             capture_output=True, text=True).stdout
    names = sorted({m.group(1) for m in re.finditer(r"^\S+ T (\w+)(@\S*)?$", listing, re.M)})
    types = return_types(include)
    lines = ["#ifndef TALLY_LIBRARY_EXPORT", "#define TALLY_LIBRARY_EXPORT(name)", "#endif",
             "#ifndef TALLY_LIBRARY_VALUE_EXPORT", "#define TALLY_LIBRARY_VALUE_EXPORT(name)",
             "#endif"]
    for name in names:
        macro = "EXPORT" if returns_error_code(name, types) else "VALUE_EXPORT"
        lines.append(f"TALLY_LIBRARY_{macro}({name})")
    lines += ["#undef TALLY_LIBRARY_EXPORT", "#undef TALLY_LIBRARY_VALUE_EXPORT"]
    return lines


def statuses(header: str) -> list:
    """TALLY_CUDNN_STATUS(name) for every value of cuDNN's cudnnStatus_t but the deprecated
    aliases (which share their values with others)."""
    text = open(header, encoding="utf-8").read()
    body = re.search(r"typedef enum\s*\{([^}]*)\}\s*cudnnStatus_t;", text, re.S).group(1)
    lines = ["#ifndef TALLY_CUDNN_STATUS", "#define TALLY_CUDNN_STATUS(name)", "#endif"]
    lines += [f"TALLY_CUDNN_STATUS({name})"
              for name in re.findall(r"^\s*(CUDNN_STATUS_\w+)\s*=", body, re.M)]
    lines.append("#undef TALLY_CUDNN_STATUS")
    return lines


MODES = {"errors": errors, "exports": exports, "cudnn-statuses": statuses}


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    lines = MODES[mode](*args[:-1])
    header = f"// Generated by: gen_cudart_tables.py {mode} {' '.join(args)}. Do not edit."
    with open(args[-1], "w", encoding="utf-8") as f:
        f.write("\n".join([header] + lines) + "\n")


if __name__ == "__main__":
    main()
