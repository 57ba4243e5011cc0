// A torch.save file of a state dict (pytorch_model.bin) over mmap, read without running any of its pickle (see
// pickle_reader.h). The format of torch >= 1.6 is a ZIP of stored entries under one top folder <root>/:
// data.pkl (the pickled dict of name -> tensor), data/<key> (raw little-endian storage bytes), version, and
// maybe byteorder; tensors are views into the mapping. The legacy format (older torch, or
// _use_new_zipfile_serialization=False) is a stream of pickles followed by the storages, which are copied to
// aligned memory. Several tensors may share one storage (tied weights). Every tensor is checked at open: its
// storage exists and holds numel * element size bytes, the tensor lies inside it, and it is contiguous.
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
    const uint8_t* data = nullptr;  // into the mapping (ZIP format) or an aligned copy (legacy format)
    uint64_t data_bytes = 0;        // numel * element size
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
    std::vector<Tensor> copies_;  // legacy format only: its storages, copied to aligned memory
    std::map<std::string, TorchBinEntry> entries_;
};

}  // namespace taco
