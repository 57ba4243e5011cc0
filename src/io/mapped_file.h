// A whole file mapped read-only. The bytes live as long as the MappedFile; writing through them faults.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"

namespace taco {

class MappedFile {
public:
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    // Errors name the path: missing, not a regular file, or mmap failure. An empty file maps to no bytes.
    static Result<std::unique_ptr<MappedFile>> open(const std::string& path);

    const std::string& path() const { return path_; }
    std::span<const uint8_t> bytes() const { return {data_, size_}; }

private:
    MappedFile() = default;
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace taco
