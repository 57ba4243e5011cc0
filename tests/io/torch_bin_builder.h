// Test helpers that write torch.save-shaped bytes by hand: a ZIP of stored entries and pickle opcodes, so
// that tests can craft any malformed archive or pickle they need.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taco::testing {

struct ZipRecord {
    std::string name;
    std::string data;
    uint16_t method = 0;  // 0 stored; anything else is only written into the headers (data stays as given)
    uint16_t flags = 0;
};

struct ZipOptions {
    bool zip64 = false;          // sizes and offsets as 0xffffffff in the headers, real values in ZIP64 fields
    size_t data_alignment = 64;  // pads the local extra field so data starts aligned, as torch's writer does
};

std::string build_zip(const std::vector<ZipRecord>& records, const ZipOptions& options = {});

// Pickle opcodes, appended in order. Strings are BINUNICODE, ints the smallest form Python's pickler picks.
class PickleWriter {
public:
    PickleWriter& op(uint8_t opcode);
    PickleWriter& proto(int version = 2) { return op(0x80).byte(uint8_t(version)); }
    PickleWriter& str(std::string_view text);
    PickleWriter& integer(int64_t value);
    PickleWriter& global(std::string_view module, std::string_view name);
    PickleWriter& mark() { return op('('); }
    PickleWriter& tuple() { return op('t'); }
    PickleWriter& byte(uint8_t value);
    PickleWriter& raw(std::string_view bytes);
    // REDUCE(_rebuild_tensor_v2, (BINPERSID(('storage', torch.<storage_type>, key, 'cpu', storage_numel)),
    // offset, size, stride, False, OrderedDict())).
    PickleWriter& tensor(std::string_view storage_type, std::string_view key, int64_t storage_numel, int64_t offset,
                         const std::vector<int64_t>& size, const std::vector<int64_t>& stride);
    const std::string& bytes() const { return bytes_; }

private:
    std::string bytes_;
};

struct TensorSpec {
    TensorSpec(std::string name, std::string storage_type, std::string key, int64_t storage_numel, int64_t offset,
               std::vector<int64_t> size, std::vector<int64_t> stride = {})
        : name(std::move(name)),
          storage_type(std::move(storage_type)),
          key(std::move(key)),
          storage_numel(storage_numel),
          offset(offset),
          size(std::move(size)),
          stride(std::move(stride)) {}
    std::string name;
    std::string storage_type;  // "FloatStorage"
    std::string key;
    int64_t storage_numel = 0;
    int64_t offset = 0;
    std::vector<int64_t> size;
    std::vector<int64_t> stride;  // empty: row-major
};

// PROTO 2, EMPTY_DICT, MARK, (name, tensor)..., SETITEMS, STOP.
std::string state_dict_pickle(const std::vector<TensorSpec>& tensors);

// An archive "archive/..." with data.pkl = `pickle`, a version record and `storages` as archive/data/<key>.
std::string torch_archive(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& storages,
                          const ZipOptions& options = {});

}  // namespace taco::testing
