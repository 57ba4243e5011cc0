// On/off switches of the CUDA backend read from the environment (TACO_CUDA_PDL, TACO_CUDA_DECODE_ATTENTION): for
// side-by-side measurements and for bisecting; each changes speed only, except TACO_CUDA_SKINNY_BULK_WIDE (bits of
// down_proj, skinny_gemm.h). Plain C++ header.
#pragma once

namespace taco::cuda {

// A switch's meaning: unset or empty, and "1", on; "0" off; any other value aborts naming the variable, the value
// and what the switch turns on.
bool env_switch(const char* name, const char* env_value, const char* what);
// An opt-in switch (a path still being measured): unset, empty and "0" off; "1" on; any other value aborts.
bool env_opt_in(const char* name, const char* env_value, const char* what);
// An override of a choice the backend makes by itself: unset or empty, -1 (the backend's own choice); "1", 1 (on
// everywhere); "0", 0 (off everywhere); any other value aborts, naming the variable, the value and what it forces.
int env_override(const char* name, const char* env_value, const char* what);

}  // namespace taco::cuda
