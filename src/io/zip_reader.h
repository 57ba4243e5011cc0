// The central directory of a ZIP archive held in memory (an mmapped file), for archives whose entries are
// stored uncompressed, as torch.save writes them. ZIP64 sizes and offsets are read, so archives and entries
// past 4 GiB work. Compressed, encrypted or multi-disk archives are errors. Entry contents are spans into the
// archive, never copies. Every offset and length is checked against the archive before it is used.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace taco {

struct ZipEntry {
    std::string name;
    uint64_t data_offset = 0;  // from the start of the archive; data_offset + size <= archive size
    uint64_t size = 0;
    uint32_t crc32 = 0;  // as the central directory records it
};

class ZipReader {
public:
    // `label` (the file path) prefixes every error. The archive bytes must outlive the reader.
    static Result<ZipReader> parse(const std::string& label, std::span<const uint8_t> archive);

    const std::map<std::string, ZipEntry, std::less<>>& entries() const { return entries_; }
    const ZipEntry* find(std::string_view name) const;
    std::span<const uint8_t> contents(const ZipEntry& entry) const;
    // The contents after checking them against the recorded CRC-32 (for small records; hashing gigabytes of
    // weights on every load would cost seconds).
    Result<std::span<const uint8_t>> verified_contents(const ZipEntry& entry) const;

private:
    std::string label_;
    std::span<const uint8_t> archive_;
    std::map<std::string, ZipEntry, std::less<>> entries_;
};

uint32_t crc32(std::span<const uint8_t> bytes);

}  // namespace taco
