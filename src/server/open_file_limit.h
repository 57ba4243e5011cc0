// Every open connection is a file descriptor; the common soft limit of 1024 would cap a server (or a load
// generator) near a thousand streams. Raising the soft limit to the hard one needs no privilege, as vLLM does at start.
#pragma once

#include <cstdint>

namespace taco::server {

// Raises RLIMIT_NOFILE's soft limit to its hard limit; returns the soft limit in force afterwards (-1: unknown).
int64_t raise_open_file_limit();

}  // namespace taco::server
