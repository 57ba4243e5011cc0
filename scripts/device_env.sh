# Sourced on the GPU machine by the device round trip's scripts (device_tests.sh, gpu_suite.sh), from the repo root:
# unpacks the carried bundle (device_bundle.sh), puts its libraries on the loader path, puts the binaries back where
# they were built (the tests were compiled with the repo at /work/main and binaries in build/<preset>), and sets
# $out (logs, $OUT), $preset and $build.
out=${OUT:-/tmp/taco-out}
mkdir -p "$out"
# The bundle travels compressed.
[ -f .device/bundle.tar.xz ] && tar -C .device -xJf .device/bundle.tar.xz
export LD_LIBRARY_PATH="$PWD/.device/bundle/lib:${LD_LIBRARY_PATH:-}"
mkdir -p /work && ln -sfn "$PWD" /work/main
preset=$(cat .device/bundle/preset 2>/dev/null || echo cuda)
build=build/$preset
mkdir -p "$build" && cp .device/bundle/taco_* "$build/" 2>/dev/null
cp .device/bundle/*_bench "$build/" 2>/dev/null
