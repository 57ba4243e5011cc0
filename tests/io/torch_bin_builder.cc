#include "torch_bin_builder.h"

#include "io/zip_reader.h"

namespace taco::testing {
namespace {

void put16(std::string& out, uint64_t v) {
    for (int i = 0; i < 2; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}
void put32(std::string& out, uint64_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}
void put64(std::string& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

uint32_t crc_of(const std::string& data) {
    return crc32(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

}  // namespace

std::string build_zip(const std::vector<ZipRecord>& records, const ZipOptions& options) {
    std::string out;
    std::string directory;
    const uint64_t kMarked = 0xffffffff;
    for (const ZipRecord& r : records) {
        uint64_t local = out.size();
        std::string zip64_extra;
        if (options.zip64) {
            put16(zip64_extra, 0x0001);
            put16(zip64_extra, 16);
            put64(zip64_extra, r.data.size());
            put64(zip64_extra, r.data.size());
        }
        std::string local_extra = zip64_extra;
        size_t unpadded = out.size() + 30 + r.name.size() + local_extra.size();
        if (options.data_alignment > 1 && unpadded % options.data_alignment != 0) {
            size_t pad = options.data_alignment - unpadded % options.data_alignment;
            if (pad < 4) pad += options.data_alignment;
            put16(local_extra, 0x4246);  // an unknown id: readers skip it
            put16(local_extra, pad - 4);
            local_extra.append(pad - 4, 'Z');
        }
        uint64_t size_field = options.zip64 ? kMarked : r.data.size();
        put32(out, 0x04034b50);
        put16(out, 20);
        put16(out, r.flags);
        put16(out, r.method);
        put32(out, 0);
        put32(out, crc_of(r.data));
        put32(out, size_field);
        put32(out, size_field);
        put16(out, r.name.size());
        put16(out, local_extra.size());
        out += r.name + local_extra + r.data;

        std::string central_extra;
        if (options.zip64) {
            put16(central_extra, 0x0001);
            put16(central_extra, 24);
            put64(central_extra, r.data.size());
            put64(central_extra, r.data.size());
            put64(central_extra, local);
        }
        put32(directory, 0x02014b50);
        put16(directory, 45);
        put16(directory, 45);
        put16(directory, r.flags);
        put16(directory, r.method);
        put32(directory, 0);
        put32(directory, crc_of(r.data));
        put32(directory, size_field);
        put32(directory, size_field);
        put16(directory, r.name.size());
        put16(directory, central_extra.size());
        put16(directory, 0);
        put16(directory, 0);
        put16(directory, 0);
        put32(directory, 0);
        put32(directory, options.zip64 ? kMarked : local);
        directory += r.name + central_extra;
    }
    uint64_t dir_offset = out.size();
    out += directory;
    if (options.zip64) {
        uint64_t record = out.size();
        put32(out, 0x06064b50);
        put64(out, 44);
        put16(out, 45);
        put16(out, 45);
        put32(out, 0);
        put32(out, 0);
        put64(out, records.size());
        put64(out, records.size());
        put64(out, directory.size());
        put64(out, dir_offset);
        put32(out, 0x07064b50);
        put32(out, 0);
        put64(out, record);
        put32(out, 1);
    }
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, options.zip64 ? 0xffff : records.size());
    put16(out, options.zip64 ? 0xffff : records.size());
    put32(out, options.zip64 ? kMarked : directory.size());
    put32(out, options.zip64 ? kMarked : dir_offset);
    put16(out, 0);
    return out;
}

PickleWriter& PickleWriter::op(uint8_t opcode) { return byte(opcode); }

PickleWriter& PickleWriter::byte(uint8_t value) {
    bytes_.push_back(char(value));
    return *this;
}

PickleWriter& PickleWriter::raw(std::string_view bytes) {
    bytes_.append(bytes);
    return *this;
}

PickleWriter& PickleWriter::str(std::string_view text) {
    op('X');
    put32(bytes_, text.size());
    return raw(text);
}

PickleWriter& PickleWriter::integer(int64_t value) {
    if (value >= 0 && value <= 0xff) return op('K').byte(uint8_t(value));
    if (value >= 0 && value <= 0xffff) {
        op('M');
        put16(bytes_, uint64_t(value));
        return *this;
    }
    if (value >= INT32_MIN && value <= INT32_MAX) {
        op('J');
        put32(bytes_, uint64_t(uint32_t(int32_t(value))));
        return *this;
    }
    op(0x8a).byte(8);
    put64(bytes_, uint64_t(value));
    return *this;
}

PickleWriter& PickleWriter::global(std::string_view module, std::string_view name) {
    return op('c').raw(module).raw("\n").raw(name).raw("\n");
}

PickleWriter& PickleWriter::tensor(std::string_view storage_type, std::string_view key, int64_t storage_numel,
                                   int64_t offset, const std::vector<int64_t>& size,
                                   const std::vector<int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    mark().str("storage").global("torch", storage_type).str(key).str("cpu").integer(storage_numel).tuple().op('Q');
    integer(offset);
    mark();
    for (int64_t d : size) integer(d);
    tuple().mark();
    for (int64_t s : stride) integer(s);
    tuple().op(0x89).global("collections", "OrderedDict").op(')').op('R').tuple().op('R');
    return *this;
}

std::string state_dict_pickle(const std::vector<TensorSpec>& tensors) {
    PickleWriter w;
    w.proto().op('}').mark();
    for (const TensorSpec& t : tensors) {
        std::vector<int64_t> stride = t.stride;
        if (stride.empty()) {
            stride.assign(t.size.size(), 1);
            for (size_t d = t.size.size(); d-- > 1;) stride[d - 1] = stride[d] * t.size[d];
        }
        w.str(t.name).tensor(t.storage_type, t.key, t.storage_numel, t.offset, t.size, stride);
    }
    return w.op('u').op('.').bytes();
}

std::string torch_archive(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& storages,
                          const ZipOptions& options) {
    std::vector<ZipRecord> records = {{"archive/data.pkl", pickle}};
    for (const auto& [key, bytes] : storages) records.push_back({"archive/data/" + key, bytes});
    records.push_back({"archive/version", "3\n"});
    return build_zip(records, options);
}

}  // namespace taco::testing
