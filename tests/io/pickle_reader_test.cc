#include "io/pickle_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "torch_bin_builder.h"

namespace taco {
namespace {

using ::testing::HasSubstr;
using testing::PickleWriter;
using testing::state_dict_pickle;
using testing::TensorSpec;

Result<std::vector<TorchTensorRecord>> read(const std::string& pickle) {
    return read_torch_state_dict("model.bin", {reinterpret_cast<const uint8_t*>(pickle.data()), pickle.size()});
}

void expect_error(const std::string& pickle, const std::string& part) {
    auto records = read(pickle);
    ASSERT_FALSE(records.is_ok());
    EXPECT_THAT(records.status().message(), HasSubstr("model.bin: "));
    EXPECT_THAT(records.status().message(), HasSubstr(part));
}

// The classic exploit: REDUCE(os.system, ("touch <file>",)).
std::string system_call_pickle(const std::string& module, const std::string& name, const std::string& marker) {
    return PickleWriter().proto().global(module, name).str("touch " + marker).op(0x85).op('R').op('.').bytes();
}

TEST(PickleReaderTest, PickleReader_ReadsTensorRecordsInOrder) {
    auto records = read(state_dict_pickle({{"w", "HalfStorage", "0", 6, 0, {2, 3}},
                                           {"row", "FloatStorage", "1", 12, 4, {4}},
                                           {"big", "LongStorage", "2", int64_t(1) << 33, 0, {int64_t(1) << 33}}}));
    ASSERT_TRUE(records.is_ok()) << records.status().message();
    ASSERT_EQ(records->size(), 3u);
    const TorchTensorRecord& w = (*records)[0];
    EXPECT_EQ(w.name, "w");
    EXPECT_EQ(w.storage.key, "0");
    EXPECT_EQ(w.storage.location, "cpu");
    EXPECT_EQ(w.storage.numel, 6u);
    EXPECT_EQ(w.type->dtype, DType::kF16);
    EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(w.strides, (std::vector<int64_t>{3, 1}));
    EXPECT_EQ((*records)[1].storage_offset, 4u);
    EXPECT_EQ((*records)[2].storage.numel, uint64_t(1) << 33);  // LONG1
    EXPECT_EQ((*records)[2].type->dtype, DType::kI64);
}

TEST(PickleReaderTest, PickleReader_RefusesForbiddenGlobalsWithoutRunningThem) {
    std::string marker = (std::filesystem::path(::testing::TempDir()) / "taco_pickle_pwned").string();
    std::filesystem::remove(marker);
    for (auto [module, name] : std::vector<std::pair<std::string, std::string>>{{"os", "system"},
                                                                                {"builtins", "eval"},
                                                                                {"posix", "system"},
                                                                                {"subprocess", "Popen"},
                                                                                {"torch", "load"},
                                                                                {"torch._utils", "_rebuild_xla_tensor"},
                                                                                {"collections", "defaultdict"}}) {
        SCOPED_TRACE(module + "." + name);
        expect_error(system_call_pickle(module, name, marker),
                     "refuses to load global '" + module + "." + name + "' (only tensor records are allowed)");
    }
    // STACK_GLOBAL (protocol 4) takes the names from the stack.
    expect_error(PickleWriter().proto(4).str("os").str("system").op(0x93).op('.').bytes(),
                 "refuses to load global 'os.system'");
    EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(PickleReaderTest, PickleReader_RefusesForbiddenGlobalNestedInsideAStateDict) {
    PickleWriter w;
    w.proto().op('}').mark().str("w").global("builtins", "exec").str("print(1)").op(0x85).op('R').op('u').op('.');
    expect_error(w.bytes(), "refuses to load global 'builtins.exec'");
}

TEST(PickleReaderTest, PickleReader_RejectsUnsupportedOpcodes) {
    expect_error(PickleWriter().proto().op('}').op('i').bytes(), "unsupported pickle opcode 0x69 ('i')");  // INST
    expect_error(PickleWriter().proto().op(0x81).bytes(), "unsupported pickle opcode 0x81");               // NEWOBJ
    expect_error(PickleWriter().proto().op(0xff).bytes(), "unsupported pickle opcode 0xff");
    expect_error(PickleWriter().proto(1).op('}').op('.').bytes(), "pickle protocol 1 is not supported");
}

TEST(PickleReaderTest, PickleReader_RejectsMalformedStacks) {
    expect_error(PickleWriter().proto().op(0x86).bytes(), "stack underflow");                       // TUPLE2 on nothing
    expect_error(PickleWriter().proto().op('}').str("k").op('u').bytes(), "no MARK on the stack");  // SETITEMS
    expect_error(PickleWriter().proto().op('h').byte(7).bytes(), "memo entry 7 was never stored");
    expect_error(PickleWriter().proto().op('}').mark().str("k").op('u').op('.').bytes(), "odd number");
    expect_error(PickleWriter().proto().op(']').str("k").op('s').bytes(), "stack underflow");  // SETITEM needs 3
    expect_error(PickleWriter().proto().op('}').mark().op('.').bytes(), "stack underflow");    // STOP below a MARK
    expect_error(PickleWriter().proto().op('}').bytes(), "truncated: no STOP opcode");
    expect_error(PickleWriter().proto().op('X').raw(std::string("\xff\xff\xff\x7f", 4)).raw("ab").bytes(), "truncated");
}

TEST(PickleReaderTest, PickleReader_RejectsObjectsThatAreNotStateDicts) {
    expect_error(PickleWriter().proto().op(']').op('.').bytes(), "holds a list, not a state dict");
    expect_error(PickleWriter().proto().op('}').str("step").integer(3).op('s').op('.').bytes(),
                 "entry 'step' is a int, not a tensor");
    std::string twice =
        state_dict_pickle({{"w", "FloatStorage", "0", 1, 0, {1}}, {"w", "FloatStorage", "0", 1, 0, {1}}});
    expect_error(twice, "names 'w' twice");
}

TEST(PickleReaderTest, PickleReader_RejectsMalformedTensorRecords) {
    // A storage class called like a function.
    expect_error(PickleWriter().proto().global("torch", "FloatStorage").op(')').op('R').bytes(),
                 "global 'torch.FloatStorage' cannot be called");
    // Persistent ids other than storages.
    expect_error(PickleWriter().proto().str("module").op(0x85).op('Q').bytes(), "persistent id is not");
    expect_error(
        PickleWriter().proto().mark().str("storage").str("x").str("0").str("cpu").integer(1).tuple().op('Q').bytes(),
        "not a torch storage type");
    // _rebuild_tensor_v2 with too few arguments.
    expect_error(PickleWriter().proto().global("torch._utils", "_rebuild_tensor_v2").op(')').op('R').bytes(),
                 "called with 0 arguments");
    // Size and stride of different lengths.
    PickleWriter w;
    w.proto().op('}').str("w").tensor("FloatStorage", "0", 4, 0, {2, 2}, {1}).op('s').op('.');
    expect_error(w.bytes(), "size has 2 dims but stride 1");
}

TEST(PickleReaderTest, PickleReader_AcceptsOrderedDictWithMetadataBuildAndParameters) {
    PickleWriter w;
    w.proto().global("collections", "OrderedDict").op(')').op('R').op('q').byte(0).mark();
    w.str("p").global("torch._utils", "_rebuild_parameter");
    w.tensor("BFloat16Storage", "0", 2, 0, {2}, {1}).op(0x88).global("collections", "OrderedDict").op(')').op('R');
    w.op(0x87).op('R');  // (tensor, True, OrderedDict()) -> Parameter
    w.op('u');
    // state: {'_metadata': OrderedDict({'': {'version': 1}})}, applied with BUILD and ignored
    w.op('}').str("_metadata").global("collections", "OrderedDict").op(')').op('R').str("").op('}').str("version");
    w.integer(1).op('s').op('s').op('s').op('b').op('.');
    auto records = read(w.bytes());
    ASSERT_TRUE(records.is_ok()) << records.status().message();
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ((*records)[0].name, "p");
    EXPECT_EQ((*records)[0].type->dtype, DType::kBF16);
}

// Every prefix and every single-byte change of a valid pickle is a Status, never a crash or an out-of-bounds
// read (run under -fsanitize=address to check the reads).
TEST(PickleReaderTest, PickleReader_SurvivesEveryTruncationAndByteCorruption) {
    std::string pickle = state_dict_pickle({{"a", "FloatStorage", "0", 6, 0, {2, 3}},
                                            {"b", "FloatStorage", "0", 6, 3, {3}},
                                            {"c", "LongStorage", "1", 1, 0, {}}});
    ASSERT_TRUE(read(pickle).is_ok());
    for (size_t n = 0; n < pickle.size(); ++n) EXPECT_FALSE(read(pickle.substr(0, n)).is_ok()) << n;
    int num_ok = 0;
    for (size_t pos = 0; pos < pickle.size(); ++pos) {
        for (int value = 0; value < 256; value += 17) {
            std::string bad = pickle;
            bad[pos] = char(value);
            num_ok += read(bad).is_ok() ? 1 : 0;
        }
    }
    EXPECT_GT(num_ok, 0);  // some changes (inside names) are harmless
}

}  // namespace
}  // namespace taco
