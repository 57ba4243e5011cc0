// Checkpoint headers: the input is written to a file and opened as safetensors (first byte even) or as a torch .bin
// zip (odd); every tensor it lists is viewed. Offsets, shapes and dtypes come from the file: any error is a Status.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "io/safetensors.h"
#include "io/torch_bin_file.h"

namespace {

std::string scratch_path() { return "/tmp/taco_fuzz_tensor_" + std::to_string(getpid()) + ".bin"; }

// Views every tensor and reads its first and last byte, so a view past the mapping faults here.
template <class File>
void view_all(const File& file) {
    volatile uint8_t sink = 0;
    for (const std::string& name : file.tensor_names()) {
        auto view = file.view(name);
        if (!view.is_ok() || view->nbytes() == 0) continue;
        const auto* bytes = static_cast<const uint8_t*>(view->data);
        sink = sink + bytes[0] + bytes[view->nbytes() - 1];
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string path = scratch_path();
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 0;
    std::fwrite(data + 1, 1, size - 1, f);
    std::fclose(f);
    if (data[0] % 2 == 0) {
        auto file = taco::SafetensorsFile::open(path);
        if (file.is_ok()) view_all(**file);
    } else {
        auto file = taco::TorchBinFile::open(path);
        if (file.is_ok()) view_all(**file);
    }
    std::remove(path.c_str());
    return 0;
}
