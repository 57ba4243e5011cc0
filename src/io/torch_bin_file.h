// A torch.save archive of a state dict (pytorch_model.bin, torch >= 1.6 "zip" format) over mmap, read without
// running any of its pickle (see pickle_reader.h). Layout: a ZIP of stored entries under one top folder
// <root>/: data.pkl (the pickled dict of name -> tensor), data/<key> (raw little-endian storage bytes),
// version, and maybe byteorder. Tensors are views into the storages at their offsets; several tensors may
// share one storage (tied weights). Every tensor is checked at open: its storage record exists and holds
// numel * element size bytes, the tensor lies inside it, and it is contiguous.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "io/pickle_reader.h"
#include "io/tensor_file.h"

namespace taco {

struct TorchBinEntry {
    const TorchScalarType* type = nullptr;
    std::vector<int64_t> shape;
    uint64_t data_offset = 0;  // from the start of the file
    uint64_t data_bytes = 0;   // numel * element size
};

class TorchBinFile : public TensorFile {
public:
    static Result<std::unique_ptr<TorchBinFile>> open(const std::string& path);

    const std::string& path() const override { return file_->path(); }
    bool contains(const std::string& name) const override { return entries_.count(name) != 0; }
    std::vector<std::string> tensor_names() const override;
    // Errors (naming file and tensor) for dtypes taco lacks (float64, int16, complex) and more than kMaxDims
    // dims; such tensors still open, so a checkpoint carrying an unused one loads.
    Result<TensorView> view(const std::string& name) const override;

    const std::map<std::string, TorchBinEntry>& entries() const { return entries_; }

private:
    TorchBinFile() = default;
    std::unique_ptr<MappedFile> file_;
    std::map<std::string, TorchBinEntry> entries_;
};

}  // namespace taco
