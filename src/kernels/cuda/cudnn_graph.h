// cuDNN's graph (backend) API, loaded at run time: libcudnn.so.9 is looked up with dlopen the first time an op asks
// for it, so the engine starts and runs without cuDNN (its own kernels then serve every shape) and the binaries do
// not depend on it. Only the handful of entry points the graphs here use are resolved.
//
// CudnnDesc owns one backend descriptor; its setters record the first failure (with the attribute and cuDNN's own
// message) instead of aborting, so a graph cuDNN cannot take is reported as a reason and the caller falls back.
// Plain C++ header (the cuDNN headers are C).
#pragma once

#include <cudnn_graph.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace taco::cuda {

struct CudnnApi {
    size_t (*get_version)();
    const char* (*get_error_string)(cudnnStatus_t);
    void (*get_last_error_string)(char*, size_t);
    cudnnStatus_t (*create)(cudnnHandle_t*);
    cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t);
    cudnnStatus_t (*create_descriptor)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t*);
    cudnnStatus_t (*destroy_descriptor)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*finalize)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*set_attribute)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                                   int64_t, const void*);
    cudnnStatus_t (*get_attribute)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                                   int64_t, int64_t*, void*);
    cudnnStatus_t (*execute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t);
    size_t version = 0;  // e.g. 91900 for 9.19.0
};

// The loaded library, or nullptr with `why` set (not found, too old, a missing symbol). Loaded once per process.
const CudnnApi* cudnn_api(std::string* why);

// cuDNN's name for a status plus its last error message (what the backend says about the failed call).
std::string cudnn_status_text(const CudnnApi& api, cudnnStatus_t status);

// The first failure of a graph's construction: empty while every call succeeded.
struct CudnnError {
    std::string what;
    bool failed() const { return !what.empty(); }
    // Records `status` of `call` unless an earlier failure is already recorded; returns whether it succeeded.
    bool check(const CudnnApi& api, cudnnStatus_t status, const std::string& call);
};

class CudnnDesc {
public:
    CudnnDesc() = default;
    CudnnDesc(const CudnnApi& api, cudnnBackendDescriptorType_t type, const char* name, CudnnError& err);
    ~CudnnDesc();
    CudnnDesc(CudnnDesc&& other) noexcept;
    CudnnDesc& operator=(CudnnDesc&& other) noexcept;
    CudnnDesc(const CudnnDesc&) = delete;
    CudnnDesc& operator=(const CudnnDesc&) = delete;

    cudnnBackendDescriptor_t get() const { return desc_; }
    // Sets an attribute (count values of `type` at `values`); a failure is recorded in err and later calls do nothing.
    CudnnDesc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                   const void* values);
    CudnnDesc& set_i64(cudnnBackendAttributeName_t name, std::initializer_list<int64_t> values);
    CudnnDesc& set_i64(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values);
    CudnnDesc& set_desc(cudnnBackendAttributeName_t name, const CudnnDesc& value);
    CudnnDesc& set_dtype(cudnnBackendAttributeName_t name, cudnnDataType_t value);
    CudnnDesc& set_bool(cudnnBackendAttributeName_t name, bool value);
    CudnnDesc& finalize();

private:
    const CudnnApi* api_ = nullptr;
    cudnnBackendDescriptor_t desc_ = nullptr;
    const char* name_ = "";
    CudnnError* err_ = nullptr;
};

}  // namespace taco::cuda
