#include "io/zip_reader.h"

#include <array>

namespace taco {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint64_t kEndBytes = 22;
constexpr uint64_t kZip64EndBytes = 56;
constexpr uint64_t kZip64LocatorBytes = 20;
constexpr uint64_t kCentralHeaderBytes = 46;
constexpr uint64_t kLocalHeaderBytes = 30;
constexpr uint64_t kMaxCommentBytes = 0xffff;

// Little-endian reads; callers have checked that [pos, pos + N) lies inside `bytes`.
uint16_t u16(std::span<const uint8_t> bytes, uint64_t pos) { return uint16_t(bytes[pos] | (bytes[pos + 1] << 8)); }
uint32_t u32(std::span<const uint8_t> bytes, uint64_t pos) {
    return u16(bytes, pos) | (uint32_t(u16(bytes, pos + 2)) << 16);
}
uint64_t u64(std::span<const uint8_t> bytes, uint64_t pos) {
    return u32(bytes, pos) | (uint64_t(u32(bytes, pos + 4)) << 32);
}

bool fits(uint64_t pos, uint64_t len, uint64_t limit) { return pos <= limit && len <= limit - pos; }

const char* method_name(uint16_t method) {
    switch (method) {
        case 8: return "deflate";
        case 9: return "deflate64";
        case 12: return "bzip2";
        case 14: return "lzma";
        case 93: return "zstd";
        default: return "unknown";
    }
}

struct Directory {
    uint64_t num_entries = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
};

// Finds the end-of-central-directory record (the last 22 + up to 64 KiB of comment) and, when present, the
// ZIP64 record it points to.
Result<Directory> find_directory(std::span<const uint8_t> zip) {
    uint64_t n = zip.size();
    if (n < kEndBytes) return error("not a ZIP archive: {} bytes, shorter than an end-of-directory record", n);
    uint64_t lowest = n - kEndBytes > kMaxCommentBytes ? n - kEndBytes - kMaxCommentBytes : 0;
    uint64_t end_pos = n;  // n means not found
    for (uint64_t pos = n - kEndBytes + 1; pos-- > lowest;) {
        if (u32(zip, pos) == kEndSig && pos + kEndBytes + u16(zip, pos + 20) <= n) {
            end_pos = pos;
            break;
        }
    }
    if (end_pos == n) return error("not a ZIP archive: no end-of-central-directory record");
    if (u16(zip, end_pos + 4) != 0 || u16(zip, end_pos + 6) != 0) {
        return error("multi-disk ZIP archives are not supported");
    }
    Directory dir{u16(zip, end_pos + 10), u32(zip, end_pos + 16), u32(zip, end_pos + 12)};
    uint64_t dir_limit = end_pos;  // the directory lies before the record that describes it

    if (end_pos >= kZip64LocatorBytes && u32(zip, end_pos - kZip64LocatorBytes) == kZip64LocatorSig) {
        uint64_t locator = end_pos - kZip64LocatorBytes;
        uint64_t record = u64(zip, locator + 8);
        if (!fits(record, kZip64EndBytes, locator) || u32(zip, record) != kZip64EndSig) {
            return error("ZIP64 end-of-directory record offset {} is invalid", record);
        }
        if (u32(zip, record + 16) != 0 || u32(zip, record + 20) != 0) {
            return error("multi-disk ZIP archives are not supported");
        }
        dir = Directory{u64(zip, record + 32), u64(zip, record + 48), u64(zip, record + 40)};
        dir_limit = record;
    } else if (dir.num_entries == 0xffff || dir.offset == 0xffffffff || dir.size == 0xffffffff) {
        return error("end-of-directory record needs ZIP64 but no ZIP64 locator precedes it");
    }
    if (!fits(dir.offset, dir.size, dir_limit)) {
        return error("central directory [{}, +{}) lies outside the archive", dir.offset, dir.size);
    }
    if (dir.num_entries > dir.size / kCentralHeaderBytes) {
        return error("central directory claims {} entries in {} bytes", dir.num_entries, dir.size);
    }
    return dir;
}

// Overwrites the fields the 32-bit header marked 0xffffffff with their ZIP64 extra-field values, in the
// order the format fixes: uncompressed size, compressed size, local header offset.
Status read_zip64_extra(std::span<const uint8_t> extra, uint64_t& uncompressed, uint64_t& compressed,
                        uint64_t& local_offset) {
    uint64_t pos = 0;
    while (pos + 4 <= extra.size()) {
        uint16_t id = u16(extra, pos);
        uint16_t len = u16(extra, pos + 2);
        pos += 4;
        if (len > extra.size() - pos) return error("extra field 0x{:04x} runs past the header", id);
        if (id == kZip64ExtraId) {
            std::span<const uint8_t> field = extra.subspan(pos, len);
            uint64_t at = 0;
            for (uint64_t* value : {&uncompressed, &compressed, &local_offset}) {
                if (*value != 0xffffffff) continue;
                if (at + 8 > field.size()) return error("ZIP64 extra field too short");
                *value = u64(field, at);
                at += 8;
            }
            return Status::ok();
        }
        pos += len;
    }
    if (uncompressed == 0xffffffff || compressed == 0xffffffff || local_offset == 0xffffffff) {
        return error("sizes marked ZIP64 but no ZIP64 extra field");
    }
    return Status::ok();
}

}  // namespace

Result<ZipReader> ZipReader::parse(const std::string& label, std::span<const uint8_t> archive) {
    ZipReader reader;
    reader.label_ = label;
    reader.archive_ = archive;
    auto dir = find_directory(archive);
    if (!dir) return dir.status().with_context(label);

    const uint64_t dir_end = dir->offset + dir->size;
    uint64_t pos = dir->offset;
    for (uint64_t i = 0; i < dir->num_entries; ++i) {
        if (!fits(pos, kCentralHeaderBytes, dir_end) || u32(archive, pos) != kCentralHeaderSig) {
            return error("{}: central directory entry {} at offset {} is invalid", label, i, pos);
        }
        uint16_t flags = u16(archive, pos + 8);
        uint16_t method = u16(archive, pos + 10);
        uint32_t crc = u32(archive, pos + 16);
        uint64_t compressed = u32(archive, pos + 20);
        uint64_t uncompressed = u32(archive, pos + 24);
        uint64_t name_len = u16(archive, pos + 28);
        uint64_t extra_len = u16(archive, pos + 30);
        uint64_t comment_len = u16(archive, pos + 32);
        uint64_t local = u32(archive, pos + 42);
        uint64_t record_len = kCentralHeaderBytes + name_len + extra_len + comment_len;
        if (!fits(pos, record_len, dir_end)) {
            return error("{}: central directory entry {} runs past the directory", label, i);
        }
        std::string name(reinterpret_cast<const char*>(archive.data() + pos + kCentralHeaderBytes), name_len);
        Status status = read_zip64_extra(archive.subspan(pos + kCentralHeaderBytes + name_len, extra_len), uncompressed,
                                         compressed, local);
        if (!status.is_ok()) return status.with_context(fmt::format("{}: entry '{}'", label, name));
        pos += record_len;

        if ((flags & 1) != 0) return error("{}: entry '{}' is encrypted", label, name);
        if (method != 0) {
            return error("{}: entry '{}' is compressed (method {}, {}); only stored entries are supported", label, name,
                         method, method_name(method));
        }
        if (compressed != uncompressed) {
            return error("{}: stored entry '{}' has compressed size {} != size {}", label, name, compressed,
                         uncompressed);
        }
        if (!fits(local, kLocalHeaderBytes, archive.size()) || u32(archive, local) != kLocalHeaderSig) {
            return error("{}: entry '{}': local header offset {} is invalid", label, name, local);
        }
        uint64_t local_name_len = u16(archive, local + 26);
        uint64_t local_extra_len = u16(archive, local + 28);
        uint64_t data_offset = local + kLocalHeaderBytes + local_name_len + local_extra_len;
        if (local_name_len != name_len || !fits(local + kLocalHeaderBytes, name_len, archive.size()) ||
            std::string_view(reinterpret_cast<const char*>(archive.data() + local + kLocalHeaderBytes), name_len) !=
                name) {
            return error("{}: entry '{}': local header names a different entry", label, name);
        }
        if (!fits(data_offset, uncompressed, archive.size())) {
            return error("{}: entry '{}': data [{}, +{}) past the end of the archive ({} bytes)", label, name,
                         data_offset, uncompressed, archive.size());
        }
        ZipEntry entry{name, data_offset, uncompressed, crc};
        if (!reader.entries_.emplace(name, std::move(entry)).second) {
            return error("{}: entry '{}' appears twice", label, name);
        }
    }
    return reader;
}

const ZipEntry* ZipReader::find(std::string_view name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
}

std::span<const uint8_t> ZipReader::contents(const ZipEntry& entry) const {
    return archive_.subspan(entry.data_offset, entry.size);
}

Result<std::span<const uint8_t>> ZipReader::verified_contents(const ZipEntry& entry) const {
    std::span<const uint8_t> bytes = contents(entry);
    uint32_t actual = crc32(bytes);
    if (actual != entry.crc32) {
        return error("{}: entry '{}' is corrupt: CRC-32 0x{:08x}, expected 0x{:08x}", label_, entry.name, actual,
                     entry.crc32);
    }
    return bytes;
}

uint32_t crc32(std::span<const uint8_t> bytes) {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    uint32_t crc = 0xffffffffu;
    for (uint8_t b : bytes) crc = table[(crc ^ b) & 0xff] ^ (crc >> 8);
    return crc ^ 0xffffffffu;
}

}  // namespace taco
