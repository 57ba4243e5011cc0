// cuDNN's backend API through dlopen (cudnn_graph.h).
#include "kernels/cuda/cudnn_graph.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>
#include <utility>

namespace taco::cuda {
namespace {

// The graphs here need paged K/V with ragged Q/O (cuDNN 9.7) and no handle on the operation graph (9.8).
constexpr size_t kMinCudnnVersion = 90800;

struct Loaded {
    CudnnApi api{};
    bool ok = false;
    std::string why;
};

template <typename Fn>
bool resolve(void* lib, const char* symbol, Fn& fn, std::string& why) {
    fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
    if (fn == nullptr && why.empty()) why = fmt::format("libcudnn.so.9 has no {}", symbol);
    return fn != nullptr;
}

Loaded load() {
    Loaded l;
    // RTLD_LOCAL: cuDNN's symbols stay out of the global namespace; the library loads its own sub-libraries
    // (libcudnn_graph, the engines) from its folder.
    void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* e = dlerror();
        l.why = fmt::format("libcudnn.so.9 could not be loaded ({}); put cuDNN 9's folder on LD_LIBRARY_PATH",
                            e != nullptr ? e : "not found");
        return l;
    }
    CudnnApi& a = l.api;
    resolve(lib, "cudnnGetVersion", a.get_version, l.why);
    resolve(lib, "cudnnGetErrorString", a.get_error_string, l.why);
    resolve(lib, "cudnnGetLastErrorString", a.get_last_error_string, l.why);
    resolve(lib, "cudnnCreate", a.create, l.why);
    resolve(lib, "cudnnSetStream", a.set_stream, l.why);
    resolve(lib, "cudnnBackendCreateDescriptor", a.create_descriptor, l.why);
    resolve(lib, "cudnnBackendDestroyDescriptor", a.destroy_descriptor, l.why);
    resolve(lib, "cudnnBackendFinalize", a.finalize, l.why);
    resolve(lib, "cudnnBackendSetAttribute", a.set_attribute, l.why);
    resolve(lib, "cudnnBackendGetAttribute", a.get_attribute, l.why);
    resolve(lib, "cudnnBackendExecute", a.execute, l.why);
    if (!l.why.empty()) return l;
    a.version = a.get_version();
    if (a.version < kMinCudnnVersion) {
        l.why = fmt::format("cuDNN {} is loaded; the attention graph needs 9.8 or later", a.version);
        return l;
    }
    l.ok = true;
    return l;
}

}  // namespace

const CudnnApi* cudnn_api(std::string* why) {
    static const Loaded loaded = load();  // thread-safe once
    if (!loaded.ok) {
        if (why != nullptr) *why = loaded.why;
        return nullptr;
    }
    return &loaded.api;
}

std::string cudnn_status_text(const CudnnApi& api, cudnnStatus_t status) {
    char message[512] = {0};
    api.get_last_error_string(message, sizeof(message));
    std::string text = api.get_error_string(status);
    if (message[0] != '\0') text += fmt::format(" ({})", message);
    return text;
}

bool CudnnError::check(const CudnnApi& api, cudnnStatus_t status, const std::string& call) {
    if (status == CUDNN_STATUS_SUCCESS) return true;
    if (what.empty()) what = fmt::format("{}: {}", call, cudnn_status_text(api, status));
    return false;
}

CudnnDesc::CudnnDesc(const CudnnApi& api, cudnnBackendDescriptorType_t type, const char* name, CudnnError& err)
    : api_(&api), name_(name), err_(&err) {
    if (err.failed()) return;
    if (!err.check(api, api.create_descriptor(type, &desc_), fmt::format("create {}", name))) desc_ = nullptr;
}

CudnnDesc::~CudnnDesc() {
    if (desc_ != nullptr) api_->destroy_descriptor(desc_);
}

CudnnDesc::CudnnDesc(CudnnDesc&& other) noexcept
    : api_(other.api_), desc_(std::exchange(other.desc_, nullptr)), name_(other.name_), err_(other.err_) {}

CudnnDesc& CudnnDesc::operator=(CudnnDesc&& other) noexcept {
    if (this != &other) {
        if (desc_ != nullptr) api_->destroy_descriptor(desc_);
        api_ = other.api_;
        desc_ = std::exchange(other.desc_, nullptr);
        name_ = other.name_;
        err_ = other.err_;
    }
    return *this;
}

CudnnDesc& CudnnDesc::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                          const void* values) {
    if (err_ == nullptr || err_->failed() || desc_ == nullptr) return *this;
    err_->check(*api_, api_->set_attribute(desc_, name, type, count, values),
                fmt::format("{}: attribute {}", name_, int(name)));
    return *this;
}

CudnnDesc& CudnnDesc::set_i64(cudnnBackendAttributeName_t name, std::initializer_list<int64_t> values) {
    return set(name, CUDNN_TYPE_INT64, int64_t(values.size()), values.begin());
}

CudnnDesc& CudnnDesc::set_i64(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
    return set(name, CUDNN_TYPE_INT64, int64_t(values.size()), values.data());
}

CudnnDesc& CudnnDesc::set_desc(cudnnBackendAttributeName_t name, const CudnnDesc& value) {
    cudnnBackendDescriptor_t d = value.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
}

CudnnDesc& CudnnDesc::set_dtype(cudnnBackendAttributeName_t name, cudnnDataType_t value) {
    return set(name, CUDNN_TYPE_DATA_TYPE, 1, &value);
}

CudnnDesc& CudnnDesc::set_bool(cudnnBackendAttributeName_t name, bool value) {
    return set(name, CUDNN_TYPE_BOOLEAN, 1, &value);
}

CudnnDesc& CudnnDesc::finalize() {
    if (err_ == nullptr || err_->failed() || desc_ == nullptr) return *this;
    err_->check(*api_, api_->finalize(desc_), fmt::format("finalize {}", name_));
    return *this;
}

}  // namespace taco::cuda
