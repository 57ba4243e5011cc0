// DeviceBatchSampler's host side: packing a step's draws for the kernels (kernels/cuda/sampling.cu) and reading
// their results back. Empty in the CPU build.
#if defined(TACO_WITH_CUDA)

#include "exec/device_batch_sampler.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "exec/logit_order.h"
#include "exec/token_filter.h"

namespace taco {

namespace {

constexpr float kMaxLogitBias = 100.0f;  // as BatchSampler: vLLM clamps logit_bias values into [-100, 100]
constexpr double kMinExponent = -746.0;  // as TokenFilter: exp() of anything lower is 0 in double

bool has_penalties(const SamplingParams& p) {
    return p.repetition_penalty != 1.0 || p.frequency_penalty != 0.0 || p.presence_penalty != 0.0;
}

size_t align8(size_t bytes) { return (bytes + 7) / 8 * 8; }

void* data_of(const Tensor& t) { return t.defined() ? t.view().data : nullptr; }

}  // namespace

void DeviceBatchSampler::grow(Tensor& buffer, size_t bytes, MemoryKind memory) {
    const size_t capacity = buffer.defined() ? size_t(buffer.numel()) : 0;
    if (bytes <= capacity) return;
    buffer = Tensor();  // free before allocating: nothing is in flight between calls
    const int64_t grown = int64_t(std::max(bytes, capacity + capacity / 2));
    buffer = Tensor::empty(std::span<const int64_t>(&grown, 1), DType::kU8, memory);
}

size_t DeviceBatchSampler::device_bytes() const {
    size_t bytes = 0;
    for (const Tensor* t : {&upload_device_, &results_device_, &processed_, &masked_, &state_, &sort_keys_[0],
                            &sort_keys_[1], &sort_ids_[0], &sort_ids_[1], &segment_begin_, &segment_end_, &sort_temp_})
        if (t->defined()) bytes += t->view().nbytes();
    return bytes;
}

void DeviceBatchSampler::grow_scratch(int64_t num_draws, int64_t num_edit_slots, int64_t num_sort_slots,
                                      int64_t num_masks, int64_t vocab, size_t results_bytes) {
    grow(results_host_, results_bytes, MemoryKind::kPinnedHost);
    grow(results_device_, results_bytes, MemoryKind::kDevice);
    grow(state_, cuda::sampling_state_bytes(num_draws), MemoryKind::kDevice);
    grow(processed_, size_t(num_edit_slots) * size_t(vocab) * sizeof(float), MemoryKind::kDevice);
    grow(masked_, size_t(num_masks) * size_t(vocab) * sizeof(float), MemoryKind::kDevice);
    const size_t sort_items = size_t(num_sort_slots) * size_t(vocab);
    for (int b = 0; b < 2; ++b) {
        grow(sort_keys_[b], sort_items * sizeof(uint32_t), MemoryKind::kDevice);
        grow(sort_ids_[b], sort_items * sizeof(int32_t), MemoryKind::kDevice);
    }
    grow(segment_begin_, size_t(num_sort_slots) * sizeof(int32_t), MemoryKind::kDevice);
    grow(segment_end_, size_t(num_sort_slots) * sizeof(int32_t), MemoryKind::kDevice);
    if (num_sort_slots > 0 && (num_sort_slots != sort_temp_slots_ || vocab != sort_temp_vocab_)) {
        sort_temp_bytes_ = cuda::sort_temp_bytes(num_sort_slots, vocab);
        sort_temp_slots_ = num_sort_slots;
        sort_temp_vocab_ = vocab;
        grow(sort_temp_, sort_temp_bytes_, MemoryKind::kDevice);
    }
}

void DeviceBatchSampler::reserve(int64_t max_draws, int64_t vocab) {
    TACO_CHECK_MSG(max_draws >= 0 && vocab > 0 && max_draws * vocab <= INT_MAX,
                   "cannot reserve the device sampler for {} draws of a {}-token vocabulary", max_draws, vocab);
    const size_t record_bytes = sizeof(cuda::LogprobRecord) + cuda::kMaxTopLogprobs * sizeof(cuda::TopLogprob);
    grow_scratch(max_draws, max_draws, max_draws, max_draws, vocab,
                 align8(size_t(max_draws) * sizeof(int32_t)) + size_t(max_draws) * record_bytes);
}

void DeviceBatchSampler::pack_draw(const SamplingRow& row, int32_t vocab) {
    const SamplingParams& p = *row.params;
    cuda::DrawParams d{};
    d.logits_row = row.logits_row;
    d.seed = row.seed;
    d.draw_index = row.draw_index;
    d.repetition_penalty = p.repetition_penalty;
    d.frequency_penalty = p.frequency_penalty;
    d.presence_penalty = p.presence_penalty;
    // TokenFilter::select's and BatchSampler's derived values, computed as they compute them.
    d.filter_temperature = std::max(p.temperature, kMinTemperature);
    d.min_p = p.min_p;
    d.min_scaled = p.min_p > 0 ? std::log(p.min_p) - 1e-6 : kMinExponent;
    d.top_p = p.top_p;
    d.one_minus_top_p = 1.0 - p.top_p;
    d.gumbel_temperature = float(std::clamp<double>(p.temperature, kMinTemperature, FLT_MAX));
    d.edit_slot = -1;
    d.sort_slot = -1;
    d.logprob_offset = -1;
    d.mask_slot = -1;
    if (!row.allowed_tokens.empty()) {
        TACO_CHECK_MSG(row.allowed_tokens.size() == size_t(vocab + 31) / 32,
                       "token mask of {} words for a vocabulary of {}", row.allowed_tokens.size(), vocab);
        d.mask_slot = num_masks_++;
        masks_.insert(masks_.end(), row.allowed_tokens.begin(), row.allowed_tokens.end());
    }
    if (p.greedy()) {
        d.flags |= cuda::kDrawGreedy;
    } else if (TokenFilter::restricts(p, size_t(vocab))) {
        d.flags |= cuda::kDrawRestricts;
        if (p.top_k > 0 && p.top_k < vocab) d.top_k = int32_t(p.top_k);
        if (p.top_p < 1.0) {
            d.flags |= cuda::kDrawTopP;
            d.sort_slot = num_sort_slots_++;
        }
    }

    // The edits of process_in_place, one entry per distinct valid token (invalid ids are ignored, as there).
    d.edit_begin = int32_t(edits_.size());
    auto entry = [&](int32_t token) -> cuda::EditEntry& {
        int32_t& at = edit_of_token_[size_t(token)];
        if (at < 0) {
            at = int32_t(edits_.size());
            edits_.push_back({token, 0, 0.0f, 0});
        }
        return edits_[size_t(at)];
    };
    for (int32_t id : row.suppressed_ids)
        if (valid_token_id(id, size_t(vocab))) entry(id).flags |= cuda::kEditSuppress;
    for (const auto& [id, bias] : p.logit_bias) {
        if (!valid_token_id(id, size_t(vocab))) continue;
        cuda::EditEntry& e = entry(id);
        e.flags |= cuda::kEditBias;
        e.bias = std::clamp(bias, -kMaxLogitBias, kMaxLogitBias);
    }
    if (has_penalties(p)) {
        for (int32_t id : row.output_ids) {
            if (!valid_token_id(id, size_t(vocab))) continue;
            cuda::EditEntry& e = entry(id);
            e.flags |= cuda::kEditPenalise;
            e.count++;
        }
        if (p.repetition_penalty != 1.0) {
            d.flags |= cuda::kDrawUsePrompt;
            for (int32_t id : row.prompt_ids)
                if (valid_token_id(id, size_t(vocab))) entry(id).flags |= cuda::kEditPenalise;
        }
    }
    d.num_edits = int32_t(edits_.size()) - d.edit_begin;
    for (size_t i = size_t(d.edit_begin); i < edits_.size(); ++i) edit_of_token_[size_t(edits_[i].token)] = -1;
    if (d.num_edits > 0) d.edit_slot = num_edit_slots_++;

    if (p.logprobs || row.sampled_logprob) {
        const int64_t k = std::clamp<int64_t>(p.logprobs.value_or(0), 0, vocab);  // as logprobs_of clamps it
        TACO_CHECK_MSG(k <= cuda::kMaxTopLogprobs,
                       "logprobs {} is above the device sampler's {} (SamplingParams::validate rejects it)", k,
                       cuda::kMaxTopLogprobs);
        d.flags |= cuda::kDrawLogprobs;
        d.num_top_logprobs = int32_t(k);
        d.logprob_offset = int32_t(results_bytes_);
        results_bytes_ += sizeof(cuda::LogprobRecord) + size_t(k) * sizeof(cuda::TopLogprob);
    }
    draws_.push_back(d);
}

void DeviceBatchSampler::sample(const ExecContext& ctx, const TensorView& logits, std::span<const SamplingRow> rows,
                                std::span<SampledToken> out) {
    TACO_CHECK_EQ(rows.size(), out.size());
    if (rows.empty()) return;
    TACO_CHECK_MSG(ctx.device == Device::kCuda, "DeviceBatchSampler needs a CUDA ExecContext");
    TACO_CHECK_MSG(
        logits.ndim == 2 && logits.dtype == DType::kF32 && logits.device == Device::kCuda && logits.strides[1] == 1,
        "logits must be a [rows, vocab] f32 device tensor with contiguous rows, got {}", logits.shape_string());
    const int64_t num_rows = logits.size(0);
    const int64_t vocab = logits.size(1);
    TACO_CHECK_MSG(vocab > 0 && vocab <= INT32_MAX, "vocab {} out of the device sampler's range", vocab);
    TACO_CHECK_MSG(rows.size() <= size_t(INT32_MAX / 2), "{} draws in one step", rows.size());
    for (const SamplingRow& row : rows) {
        TACO_CHECK(row.params != nullptr);
        TACO_CHECK_MSG(row.logits_row >= 0 && row.logits_row < num_rows, "logits row {} of {}", row.logits_row,
                       num_rows);
    }

    draws_.clear();
    edits_.clear();
    num_edit_slots_ = 0;
    num_sort_slots_ = 0;
    masks_.clear();
    num_masks_ = 0;
    if (edit_of_token_.size() != size_t(vocab)) edit_of_token_.assign(size_t(vocab), -1);
    const size_t num_draws = rows.size();
    results_bytes_ = align8(num_draws * sizeof(int32_t));  // the tokens, then the logprob records
    for (const SamplingRow& row : rows) pack_draw(row, int32_t(vocab));
    TACO_CHECK_MSG(int64_t(num_sort_slots_) * vocab <= INT_MAX,
                   "{} top-p draws of a {}-token vocabulary exceed the device sort's 2^31 candidates", num_sort_slots_,
                   vocab);
    TACO_CHECK_MSG(results_bytes_ <= size_t(INT32_MAX), "logprob results of {} bytes", results_bytes_);

    // Scratch, grown to this step (no allocation once the largest step has been seen).
    const size_t params_bytes = num_draws * sizeof(cuda::DrawParams);
    const size_t edits_bytes = edits_.size() * sizeof(cuda::EditEntry);
    const size_t upload_bytes = params_bytes + edits_bytes + masks_.size() * sizeof(uint32_t);
    grow(upload_host_, upload_bytes, MemoryKind::kPinnedHost);
    grow(upload_device_, upload_bytes, MemoryKind::kDevice);
    grow_scratch(int64_t(num_draws), num_edit_slots_, num_sort_slots_, num_masks_, vocab, results_bytes_);

    // The one upload: DrawParams[num_draws], then EditEntry[num_edits], then the masks.
    auto* upload = static_cast<unsigned char*>(upload_host_.view().data);
    std::memcpy(upload, draws_.data(), params_bytes);
    if (!edits_.empty()) std::memcpy(upload + params_bytes, edits_.data(), edits_bytes);
    if (!masks_.empty())
        std::memcpy(upload + params_bytes + edits_bytes, masks_.data(), masks_.size() * sizeof(uint32_t));

    cuda::SamplingStep step;
    step.logits = static_cast<const float*>(logits.data);
    step.num_logits_rows = num_rows;
    step.logits_row_stride = logits.strides[0];
    step.vocab = int32_t(vocab);
    step.num_draws = int32_t(num_draws);
    step.num_edits = int32_t(edits_.size());
    step.num_sort_slots = num_sort_slots_;
    step.upload_host = upload;
    step.upload_device = data_of(upload_device_);
    step.upload_bytes = upload_bytes;
    step.num_masks = num_masks_;
    step.mask_words = int32_t((vocab + 31) / 32);
    step.masked = static_cast<float*>(data_of(masked_));
    step.processed = static_cast<float*>(data_of(processed_));
    step.state = data_of(state_);
    for (int b = 0; b < 2; ++b) {
        step.sort_keys[b] = static_cast<uint32_t*>(data_of(sort_keys_[b]));
        step.sort_ids[b] = static_cast<int32_t*>(data_of(sort_ids_[b]));
    }
    step.segment_begin = static_cast<int32_t*>(data_of(segment_begin_));
    step.segment_end = static_cast<int32_t*>(data_of(segment_end_));
    step.sort_temp = data_of(sort_temp_);
    step.sort_temp_bytes = sort_temp_.defined() ? size_t(sort_temp_.numel()) : 0;
    step.results_device = data_of(results_device_);
    step.results_host = data_of(results_host_);
    step.results_bytes = results_bytes_;
    cuda::sample_on_device(step, ctx.stream);

    const auto* results = static_cast<const unsigned char*>(results_host_.view().data);
    const auto* tokens = reinterpret_cast<const int32_t*>(results);
    for (size_t i = 0; i < num_draws; ++i) {
        const cuda::DrawParams& d = draws_[i];
        SampledToken& o = out[i];
        o.token = tokens[i];
        TACO_CHECK_MSG(valid_token_id(o.token, size_t(vocab)), "device sampler drew token {} of {}", o.token, vocab);
        o.logprobs.reset();
        if (!(d.flags & cuda::kDrawLogprobs)) continue;
        cuda::LogprobRecord record;
        std::memcpy(&record, results + d.logprob_offset, sizeof record);
        TACO_CHECK_EQ(record.num_top, d.num_top_logprobs);
        SampleLogprobs& lp = o.logprobs.emplace();
        lp.sampled = {o.token, record.sampled_logprob};
        lp.sampled_rank = record.sampled_rank;
        lp.top.resize(size_t(record.num_top));
        for (int32_t k = 0; k < record.num_top; ++k) {
            cuda::TopLogprob top;
            std::memcpy(&top, results + d.logprob_offset + sizeof(cuda::LogprobRecord) + size_t(k) * sizeof top,
                        sizeof top);
            lp.top[size_t(k)] = {top.token, top.logprob};
        }
    }
}

}  // namespace taco

#endif  // TACO_WITH_CUDA
