#!/bin/bash
# One run on a lent GPU machine (run from the repository root, with .gl and .whl carried; see
# ../shared/GPU.md): the set-up, then each named step with its own time limit, outputs under $OUT
# (few files: the device tool brings back a limited number). Steps: peak fusion torch wtests.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
site=$(mktemp -d); python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $site .whl/*.whl
export PYTHONPATH=$site XDG_RUNTIME_DIR=$(mktemp -d) PYTHONUNBUFFERED=1
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target $site . > $OUT/install.txt 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/card.txt
t0=$SECONDS
for step in "$@"; do
  case $step in
    peak) timeout 200 python3 bench/wgsl_peak.py --json $OUT/wgsl_peak.json > $OUT/wgsl_peak.txt 2>&1 ;;
    fusion) timeout 150 python3 bench/gpu.py --only fusion --json $OUT/fusion.json > $OUT/fusion.txt 2>&1 ;;
    torch) timeout 60 python3 bench/gpu.py --torch-backend --json $OUT/torch_backend.json > $OUT/torch_backend.txt 2>&1
           timeout 60 python3 bench/torch_capture_profile.py --profile 0 > $OUT/torch_profile.txt 2>&1 ;;
    wtests) EMBER_REQUIRE_BACKENDS=wgpu,fusion-wgpu timeout 150 python3 -m pytest -q -x tests/accel/test_wgpu.py tests/accel/test_fusion_wgpu.py tests/accel/test_wgpu_conv_grad.py > $OUT/wgpu_tests.txt 2>&1 ;;
  esac
  echo "$step rc=$? at $((SECONDS - t0)) s" | tee -a $OUT/steps.txt
  tail -2 $OUT/*.txt 2>/dev/null | grep -E "passed|failed|mlp_block_vs|best|Error" | tail -3
done
