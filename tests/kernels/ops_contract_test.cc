// Parts of kernels/ops.h's contract beyond the values an op computes: a dry run (workspace sizing) checks every op on
// views without memory, and operands the contract does not allow are refused rather than misread (with CUDA: what
// only its kernels ask, and index operands checked on the device).
#include <vector>

#include <gtest/gtest.h>

#include "kernels/ops.h"
#ifdef TACO_WITH_CUDA
#include <memory>

#include "kernels/cuda/cuda_backend.h"
#endif

namespace taco::ops {
namespace {

TensorView no_memory(DType dtype, std::initializer_list<int64_t> dims) { return TensorView(nullptr, dtype, dims); }

// An unsized Workspace hands out views with no memory; a dry forward pass runs every op on them.
TEST(OpsContract, DryRunChecksEveryOpWithoutTouchingMemory) {
    ExecContext ctx = ExecContext::cpu();
    ctx.dry_run = true;
    const DType f = DType::kF32, i = DType::kI32;
    const TensorView x = no_memory(f, {4, 8}), q = no_memory(f, {4, 2, 8}), cache = no_memory(f, {3, 4, 2, 8});
    matmul(ctx, x, no_memory(DType::kBF16, {6, 8}), nullptr, no_memory(f, {4, 6}));
    embedding(ctx, no_memory(i, {4}), no_memory(DType::kF16, {10, 8}), x);
    gather_rows(ctx, x, no_memory(i, {2}), no_memory(f, {2, 8}));
    copy(ctx, x, no_memory(f, {32}));
    rms_norm(ctx, x, no_memory(f, {8}), 1e-6f, 0, x);
    layer_norm(ctx, x, no_memory(f, {8}), nullptr, 1e-6f, x);
    per_head_layer_norm(ctx, q, no_memory(f, {2, 8}), nullptr, 1e-5f);
    add_inplace(ctx, x, x);
    scale_inplace(ctx, x, 2);
    softcap_inplace(ctx, x, 2);
    gated_activation(ctx, x, x, Activation::kSilu, x);
    const TensorView w = no_memory(f, {8, 8});
    gated_projection(ctx, x, {&w, nullptr, x}, {&w, nullptr, x}, Activation::kSilu, x);
    activation_inplace(ctx, x, Activation::kGeluTanh);
    rotary_embedding(ctx, q, no_memory(i, {4}), no_memory(i, {4}), no_memory(f, {16, 4}), no_memory(f, {16, 4}), 8,
                     true);
    write_kv_cache(ctx, no_memory(f, {4, 2, 8}), no_memory(f, {4, 2, 8}), no_memory(DType::kI64, {4}), cache, cache);
    AttentionMetadata batch;
    batch.query_start = no_memory(i, {2});
    batch.seq_lens = no_memory(i, {1});
    batch.positions = no_memory(i, {4});
    batch.block_tables = no_memory(i, {1, 3});
    paged_attention(ctx, q, cache, cache, batch, AttentionParams{}, q);
    MoeRouteParams route;
    route.top_k = 2;
    moe_route(ctx, no_memory(f, {4, 8}), no_memory(DType::kI64, {4}), route, no_memory(i, {4, 2}),
              no_memory(f, {4, 2}));
    moe_align(ctx, no_memory(i, {4, 2}), 8, no_memory(i, {8}), no_memory(i, {8}), no_memory(i, {9}));
    moe_gather(ctx, x, no_memory(i, {8}), no_memory(i, {9}), 2, no_memory(f, {8, 8}));
    grouped_matmul(ctx, no_memory(f, {8, 8}), no_memory(f, {8, 5, 8}), no_memory(i, {9}), no_memory(f, {8, 5}));
    moe_combine(ctx, no_memory(f, {8, 8}), no_memory(i, {8}), no_memory(i, {4, 2}), no_memory(f, {4, 2}), x);
    add_sigmoid_gated(ctx, x, no_memory(f, {4, 1}), x);
    SUCCEED();  // reaching here is the test: no op read or wrote through a null pointer
}

// A column slice of a wider table is a strided view: embedding refuses it (as every other op refuses a
// non-contiguous operand) instead of reading the wrong elements.
TEST(OpsContractDeathTest, EmbeddingRefusesAStridedTable) {
    std::vector<float> storage = {1, 2, 10, 20, 3, 4, 30, 40, 5, 6, 50, 60};
    const TensorView table = TensorView(storage.data(), DType::kF32, {3, 4}).slice(1, 0, 2);
    std::vector<int32_t> ids = {1, 2};
    std::vector<float> out(4, -1.0f);
    EXPECT_DEATH(embedding(ExecContext::cpu(), TensorView(ids.data(), DType::kI32, {2}), table,
                           TensorView(out.data(), DType::kF32, {2, 2})),
                 "embedding: table .3, 2. is not contiguous");
}

// ops.h: "x += y, elementwise, same shape": operands of another shape with the same element count are refused.
TEST(OpsContractDeathTest, AddInplaceRefusesOperandsOfAnotherShape) {
    std::vector<float> x(12, 1.0f), y(12, 2.0f);
    EXPECT_DEATH(add_inplace(ExecContext::cpu(), TensorView(x.data(), DType::kF32, {2, 6}),
                             TensorView(y.data(), DType::kF32, {3, 4})),
                 "add_inplace: shapes .2, 6. and .3, 4. differ");
}

#ifdef TACO_WITH_CUDA
// The CUDA kernels take one activation dtype per op: a mix is refused before anything is launched (no GPU needed:
// the operands are device views without memory).
TEST(OpsContractDeathTest, CudaRefusesAMixOfActivationDtypes) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ExecContext ctx;
    ctx.device = Device::kCuda;
    const auto view = [](DType dtype, std::initializer_list<int64_t> dims) {
        return TensorView(nullptr, dtype, dims, Device::kCuda);
    };
    EXPECT_DEATH(gated_activation(ctx, view(DType::kBF16, {2, 8}), view(DType::kF16, {2, 8}), Activation::kSilu,
                                  view(DType::kBF16, {2, 8})),
                 "gated_activation: gate is BF16 and up is F16; the CUDA kernel takes one activation dtype");
    EXPECT_DEATH(rms_norm(ctx, view(DType::kBF16, {2, 8}), view(DType::kF32, {8}), 1e-6f, 0, view(DType::kF32, {2, 8})),
                 "rms_norm: x is BF16 and out is F32");
    // moe_align sorts in one block's shared memory: more experts than it holds are refused by name.
    EXPECT_DEATH(moe_align(ctx, view(DType::kI32, {4, 2}), 100000, view(DType::kI32, {8}), view(DType::kI32, {8}),
                           view(DType::kI32, {100001})),
                 "moe_align: 100000 experts are more than the CUDA kernel's shared memory holds");
}

// An index operand outside its range is caught inside the kernel: the kernel stops and the stream's next
// synchronisation aborts, instead of reading past the table.
TEST(OpsContractDeathTest, CudaIndexOutOfRangeStopsTheStream) {
    if (const Status status = cuda::init_backend(0); !status.is_ok()) GTEST_SKIP() << status.message();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const auto out_of_vocabulary = [] {
        std::unique_ptr<cuda::DeviceStream> stream = cuda::DeviceStream::create().value();
        const ExecContext ctx = stream->context(nullptr);
        Tensor ids = Tensor::empty({2}, DType::kI32, Device::kCuda),
               table = Tensor::empty({5, 8}, DType::kF32, Device::kCuda);
        Tensor out = Tensor::empty({2, 8}, DType::kF32, Device::kCuda);
        const std::vector<int32_t> host_ids = {1, 9};
        copy(ctx, TensorView(const_cast<int32_t*>(host_ids.data()), DType::kI32, {2}), ids);
        embedding(ctx, ids, table, out);
        stream->synchronize();
    };
    EXPECT_DEATH(out_of_vocabulary(), "cudaStreamSynchronize");
}
#endif

}  // namespace
}  // namespace taco::ops
