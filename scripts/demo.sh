#!/usr/bin/env bash
# The main job. Until the server exists: list the fatbins, PTX and kernel signatures of an
# nvcc-built example program with tally-ptx.
set -euo pipefail
build_dir=$1
echo "placeholder" 
