# Sourced on the GPU machine by the device round trip's scripts (device_tests.sh, gpu_suite.sh), from the repo root:
# unpacks the carried bundle (device_bundle.sh), puts its libraries on the loader path, puts the binaries back where
# they were built (the tests were compiled with the repo at /work/main and binaries in build/<preset>), and sets
# $out (logs, $OUT), $preset and $build.
out=${OUT:-/tmp/taco-out}
mkdir -p "$out"
# The bundle travels compressed. Unpacked once per carried archive (a stamp newer than it), under a lock: two scripts
# of one call (gpu_llama_cpp.sh build beside the suites) must not rewrite libraries the other has loaded.
if [ -f .device/bundle.tar.xz ]; then
  (
    flock 9
    [ .device/bundle/.unpacked -nt .device/bundle.tar.xz ] ||
      { tar -C .device -xJf .device/bundle.tar.xz && touch .device/bundle/.unpacked; }
  ) 9>.device/.unpack.lock
fi
export LD_LIBRARY_PATH="$PWD/.device/bundle/lib:${LD_LIBRARY_PATH:-}"
mkdir -p /work && ln -sfn "$PWD" /work/main
preset=$(cat .device/bundle/preset 2>/dev/null || echo cuda)
build=build/$preset
mkdir -p "$build" && cp .device/bundle/taco_* "$build/" 2>/dev/null
cp .device/bundle/*_bench "$build/" 2>/dev/null
# cuDNN (loaded at run time by cudnn_graph.cc): the toolkit's, else the one PyTorch's wheels bring. Where one is
# found the cuDNN attention test must run (TACO_REQUIRE_CUDNN=1) rather than skip.
if ! ls /usr/local/cuda/lib64/libcudnn.so.9 >/dev/null 2>&1; then
  cudnn_dir=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' \
    2>/dev/null || true)
  [ -n "$cudnn_dir" ] && [ -f "$cudnn_dir/libcudnn.so.9" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cudnn_dir"
else
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"
fi
if ldconfig -p 2>/dev/null | grep -q libcudnn.so.9 || [[ "$LD_LIBRARY_PATH" == *cudnn* ]] ||
  ls /usr/local/cuda/lib64/libcudnn.so.9 >/dev/null 2>&1; then
  export TACO_REQUIRE_CUDNN=1
fi
# One step of a round trip (gpu_quick.sh, gpu_llama_cpp.sh): runs COMMAND with a limit, its output in $out/NAME.log, a
# line "NAME rc=RC SECONDSs" in $out/summary.txt; a failing step sets status=1 (the script's exit status).
# TACO_DEVICE_BUDGET_S (seconds since the script started): a step gets at most what is left of it, and once it is
# spent the steps are skipped ("NAME skipped"), so the script still reaches its end (gpu_quick.sh's packing) inside
# the run tool's limit.
status=0
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2 start=$SECONDS
  shift 2
  if [ -n "${TACO_DEVICE_BUDGET_S:-}" ]; then
    local left=$((TACO_DEVICE_BUDGET_S - SECONDS))
    if [ "$left" -lt 5 ]; then
      echo "$name skipped (TACO_DEVICE_BUDGET_S spent)" | tee -a "$out/summary.txt"
      return
    fi
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - start))s" | tee -a "$out/summary.txt"
  [ $rc = 0 ] || status=1
}
