# Sourced by the build scripts: which preset a build without one names uses on this machine.
# $TACO_PRESET when set; else cuda (the CPU and CUDA backends, every test) when nvcc is where the cuda preset looks
# for it; else cpu. Both presets build every test and benchmark.
taco_default_preset() {
  if [ -n "${TACO_PRESET:-}" ]; then
    echo "$TACO_PRESET"
  elif [ -x /usr/local/cuda/bin/nvcc ]; then
    echo cuda
  else
    echo cpu
  fi
}
