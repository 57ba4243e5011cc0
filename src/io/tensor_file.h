// One file of named tensors (a safetensors file, a torch.save archive) as Checkpoint sees it.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace taco {

class TensorFile {
public:
    virtual ~TensorFile() = default;
    virtual const std::string& path() const = 0;
    virtual bool contains(const std::string& name) const = 0;
    virtual std::vector<std::string> tensor_names() const = 0;  // sorted
    // A view of read-only mapped bytes that lives as long as the file; errors name the file and the tensor.
    virtual Result<TensorView> view(const std::string& name) const = 0;
};

}  // namespace taco
